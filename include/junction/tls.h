/*
 * junction/tls.h — TLS profiles (the `sslProfile` entity) and the password
 * forms of qdrouterd 1.19's configuration.
 *
 * A profile is the configuration of one `sslProfile` turned into an
 * OpenSSL context (SSL_CTX) that serves both ends: accepted connections
 * (server) and connectors (client). It is immutable once created and
 * refcounted: each TLS connection holds a reference for its whole life, so
 * replacing a profile (certificate rotation: jn_io_set_tls_profile) changes
 * only the connections made afterwards.
 *
 * TLS itself runs in the I/O layer (router/io/io_tls.c: OpenSSL over
 * memory BIOs, so every plaintext octet still passes the frame screen);
 * this header is only the profile and the helpers configuration needs.
 *
 * Threads: every function may run on any thread. A profile may be shared
 * between threads once created (its SSL_CTX is only read afterwards, which
 * OpenSSL allows concurrently; the refcount is atomic).
 */
#ifndef JUNCTION_TLS_H
#define JUNCTION_TLS_H 1

#include <junction/common.h>

#include <stdbool.h>
#include <stddef.h>

typedef struct jn_tls_profile jn_tls_profile_t;

/* The attributes of an `sslProfile` entity, as configured (strings are
 * read during jn_tls_profile_create only; NULL or "" = not set). Paths are
 * file names (1.19 says absolute; relative ones are taken as given, from
 * the router's working directory). */
typedef struct jn_tls_profile_config {
    const char *name;                  /* entity name, for logs and errors */
    const char *cert_file;             /* certFile: PEM certificate (chain) */
    const char *private_key_file;      /* privateKeyFile: PEM key, maybe encrypted */
    const char *ca_cert_file;          /* caCertFile: PEM CAs trusted for peers */
    const char *password;              /* password, 1.19's forms (jn_tls_password_resolve) */
    const char *password_file;         /* passwordFile (deprecated): used when password is
                                        * not set */
    const char *ciphers;               /* OpenSSL cipher list (TLS 1.2 and below) */
    const char *protocols;             /* e.g. "TLSv1.2 TLSv1.3"; NULL = OpenSSL's defaults */
    const char *uid_format;            /* uidFormat: certificate fields for the peer's id */
    const char *uid_name_mapping_file; /* uidNameMappingFile: JSON {"uid": "name"} */
} jn_tls_profile_config_t;

/* jn_tls_profile_config_fill: fill cfg from an sslProfile entity through
 * get (returns the attribute's string value, or NULL when not set; the
 * strings must outlive the use of cfg), with ctx passed through; name is
 * the entity's name. So the config file's and management's entities (two
 * different entity types) fill a profile the same way. Any thread. */
void jn_tls_profile_config_fill(jn_tls_profile_config_t *cfg, const char *name,
                                const char *(*get)(void *ctx, const char *attr), void *ctx);

/* Longest password jn_tls_password_resolve returns (octets, without the
 * NUL); a file's first line is cut there, as 1.19 does (199). */
#define JN_TLS_PASSWORD_MAX 199

/* jn_tls_password_resolve: the password that spec names, in 1.19's forms:
 * "env:NAME" (the variable NAME; blanks after "env:" skipped), "pass:TEXT"
 * and "literal:TEXT" (TEXT), "file:PATH" (the file's first line without
 * its line end, at most JN_TLS_PASSWORD_MAX octets); anything else is the
 * password itself. Writes it, NUL-terminated, into out (outlen octets;
 * JN_TLS_PASSWORD_MAX + 1 is always enough). Returns 0; JN_ENOENT when the
 * variable is not set or the file cannot be read (err says which and
 * why); JN_EINVAL when spec is NULL or out too small. err: errlen octets,
 * NUL-terminated, may be NULL. Any thread (reads the environment: do not
 * race setenv). */
int jn_tls_password_resolve(const char *spec, char *out, size_t outlen, char *err, size_t errlen);

/* jn_tls_profile_create: build a profile from cfg: load the certificate
 * and its key (the key unlocked with the password), check that they
 * match, load the trusted CAs, set the cipher list and the protocol
 * versions, read the uid mapping file. On success *out holds the new
 * profile (reference 1, the caller's) and 0 is returned. On failure *out
 * is NULL, err (errlen octets, may be NULL) says why, in words a person
 * can act on ("cannot read '/x/key.pem': No such file or directory",
 * "wrong password or not a PEM private key", "the private key does not
 * match the certificate", "no cipher matches 'FOO'"), *bad_attr (when
 * bad_attr is not NULL) names the attribute at fault ("certFile",
 * "privateKeyFile", "caCertFile", "password", "ciphers", "protocols",
 * "uidFormat", "uidNameMappingFile"), and the result is JN_EINVAL (bad
 * value or file) or JN_ENOMEM. A profile without certFile serves only as
 * a client (a connector's CA list); a listener that uses it fails each
 * handshake. Any thread; may block reading files. */
int jn_tls_profile_create(const jn_tls_profile_config_t *cfg, jn_tls_profile_t **out, char *err,
                          size_t errlen, const char **bad_attr);

/* jn_tls_profile_ref: take another reference to p (not NULL); returns p. */
jn_tls_profile_t *jn_tls_profile_ref(jn_tls_profile_t *p);

/* jn_tls_profile_unref: drop a reference; the last one frees the profile
 * and its SSL_CTX. NULL is ignored. */
void jn_tls_profile_unref(jn_tls_profile_t *p);

/* jn_tls_profile_name: the entity name given at creation ("" if none);
 * valid while a reference is held. */
const char *jn_tls_profile_name(const jn_tls_profile_t *p);

/* jn_tls_profile_has_cert: the profile has a certificate (may serve). */
bool jn_tls_profile_has_cert(const jn_tls_profile_t *p);

/* jn_tls_profile_has_ca: caCertFile was set (peers' certificates can be
 * verified against it). */
bool jn_tls_profile_has_ca(const jn_tls_profile_t *p);

/* jn_tls_profile_ctx: the profile's OpenSSL context (an SSL_CTX *, typed
 * void * so that this header needs no OpenSSL include). Read-only: use it
 * only for SSL_new. Valid while a reference is held. */
void *jn_tls_profile_ctx(const jn_tls_profile_t *p);

/* jn_tls_profile_peer_uid: the peer's identity as uidFormat builds it from
 * its certificate cert (an X509 *, typed void *), mapped through
 * uidNameMappingFile when it names it, into out (outlen octets,
 * NUL-terminated). Without uidFormat: the certificate's subject in RFC
 * 2253 form. uidFormat letters (1.19): c country, s state, l locality,
 * o organization, u organizational unit, n common name, 1 SHA-1, 2
 * SHA-256, 5 SHA-512 fingerprint (hex); the fields found are joined with
 * ';'. Returns 0, or JN_EINVAL when cert is NULL or the result is empty
 * or does not fit. */
int jn_tls_profile_peer_uid(const jn_tls_profile_t *p, void *cert, char *out, size_t outlen);

#endif /* JUNCTION_TLS_H */
