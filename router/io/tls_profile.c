/*
 * tls_profile.c — an `sslProfile` turned into an OpenSSL context
 * (junction/tls.h), and 1.19's password forms.
 *
 * What it does: checks each file first (so that a missing or unreadable
 * file is reported as such, not as OpenSSL's decoding error), then hands
 * the files to OpenSSL: certificate chain, private key (unlocked with the
 * resolved password through OpenSSL's password callback), the
 * key-matches-certificate check, trusted CAs (also sent to clients as the
 * acceptable issuers when a client certificate is asked for), cipher list
 * and protocol versions. Nothing cryptographic is ours.
 *
 * The uid mapping file (uidNameMappingFile) is a flat JSON object of
 * strings, {"uid": "display name", ...}: it is read once here, with the
 * configuration's JSON reader (jn_config_load_string_map), into a
 * small array, looked up when a peer's certificate names a uid.
 *
 * Threads: any; a profile is immutable after jn_tls_profile_create, its
 * refcount atomic.
 */
#include <junction/config.h>
#include <junction/tls.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jn_tls_profile {
    atomic_uint refs;
    /* immutable after create */
    char *name;
    SSL_CTX *ctx;
    bool has_cert, has_ca;
    char *uid_format; /* NULL: the subject */
    size_t n_map;     /* uidNameMappingFile entries */
    char **map_uid, **map_name;
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* The reason of OpenSSL's latest error (its queue is cleared), or dflt. */
static const char *ssl_reason(char *buf, size_t len, const char *dflt)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    snprintf(buf, len, "%s", r ? r : dflt);
    ERR_clear_error();
    return buf;
}

int jn_tls_password_resolve(const char *spec, char *out, size_t outlen, char *err, size_t errlen)
{
    if (!spec || !out || outlen == 0)
        return JN_EINVAL;
    const char *text = spec;
    if (strncmp(spec, "env:", 4) == 0) {
        const char *var = spec + 4;
        while (*var == ' ' || *var == '\t')
            var++;
        text = getenv(var);
        if (!text) {
            set_err(err, errlen, "environment variable '%s' is not set", var);
            return JN_ENOENT;
        }
    } else if (strncmp(spec, "pass:", 5) == 0) {
        text = spec + 5;
    } else if (strncmp(spec, "literal:", 8) == 0) {
        text = spec + 8;
    } else if (strncmp(spec, "file:", 5) == 0) {
        const char *path = spec + 5;
        FILE *f = fopen(path, "r");
        if (!f) {
            set_err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
            return JN_ENOENT;
        }
        char line[JN_TLS_PASSWORD_MAX + 1];
        size_t n = fread(line, 1, JN_TLS_PASSWORD_MAX, f);
        bool bad = ferror(f) != 0;
        fclose(f);
        if (bad) {
            set_err(err, errlen, "cannot read '%s'", path);
            return JN_ENOENT;
        }
        line[n] = '\0';
        line[strcspn(line, "\r\n")] = '\0';
        if (strlen(line) + 1 > outlen)
            return JN_EINVAL;
        memcpy(out, line, strlen(line) + 1);
        return 0;
    }
    size_t n = strlen(text);
    if (n > JN_TLS_PASSWORD_MAX)
        n = JN_TLS_PASSWORD_MAX;
    if (n + 1 > outlen)
        return JN_EINVAL;
    memcpy(out, text, n);
    out[n] = '\0';
    return 0;
}

/* OpenSSL's password callback: the resolved password (userdata). */
static int password_cb(char *buf, int size, int rwflag, void *userdata)
{
    (void)rwflag;
    const char *pw = userdata;
    int n = (int)strlen(pw);
    if (n > size)
        n = size;
    memcpy(buf, pw, (size_t)n);
    return n;
}

/* A file the profile needs: readable? */
static bool file_ok(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        set_err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        return false;
    }
    fclose(f);
    return true;
}

static bool set(const char *s)
{
    return s && s[0];
}

/* protocols: "TLSv1 TLSv1.1 TLSv1.2 TLSv1.3" (any subset, any order):
 * the lowest and highest named bound the versions, and a version between
 * them that is not named is switched off. The SSL names (SSLv2, SSLv3,
 * SSLv23) are accepted, as 1.19 accepts them in a profile, but allow
 * nothing (no SSL protocol is ever spoken): a list of only those switches
 * every version off, so each handshake with the profile fails. */
static int set_protocols(SSL_CTX *ctx, const char *list, char *err, size_t errlen)
{
    static const struct {
        const char *name;
        int version;
        uint64_t off;
    } known[] = {{"TLSv1", TLS1_VERSION, SSL_OP_NO_TLSv1},
                 {"TLSv1.1", TLS1_1_VERSION, SSL_OP_NO_TLSv1_1},
                 {"TLSv1.2", TLS1_2_VERSION, SSL_OP_NO_TLSv1_2},
                 {"TLSv1.3", TLS1_3_VERSION, SSL_OP_NO_TLSv1_3}};
    static const char *const ssl_names[] = {"SSLv2", "SSLv3", "SSLv23"};
    bool on[4] = {false, false, false, false};
    bool ssl_only = false;
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        size_t n = strcspn(p, " ,\t");
        if (n == 0)
            break;
        size_t k;
        for (k = 0; k < 4; k++)
            if (strlen(known[k].name) == n && strncmp(p, known[k].name, n) == 0)
                break;
        for (size_t s = 0; k == 4 && s < 3; s++)
            if (strlen(ssl_names[s]) == n && strncmp(p, ssl_names[s], n) == 0)
                k = 5;
        if (k == 5) {
            ssl_only = true;
            p += n;
            continue;
        }
        if (k == 4) {
            set_err(err, errlen, "unknown protocol '%.*s' (TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)",
                    (int)n, p);
            return JN_EINVAL;
        }
        on[k] = true;
        p += n;
    }
    int lo = -1, hi = -1;
    for (int k = 0; k < 4; k++) {
        if (on[k]) {
            if (lo < 0)
                lo = k;
            hi = k;
        }
    }
    if (lo < 0 && ssl_only) {
        SSL_CTX_set_options(ctx, SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1 | SSL_OP_NO_TLSv1_2 |
                                     SSL_OP_NO_TLSv1_3);
        return 0;
    }
    if (lo < 0) {
        set_err(err, errlen, "no protocol named");
        return JN_EINVAL;
    }
    SSL_CTX_set_min_proto_version(ctx, known[lo].version);
    SSL_CTX_set_max_proto_version(ctx, known[hi].version);
    /* OpenSSL 3 speaks TLSv1 and TLSv1.1 only at security level 0: a
     * profile that names them asks for them, as 1.19's did (and got) */
    if (lo <= 1 && SSL_CTX_get_security_level(ctx) > 0)
        SSL_CTX_set_security_level(ctx, 0);
    for (int k = lo; k <= hi; k++)
        if (!on[k])
            SSL_CTX_set_options(ctx, known[k].off);
    return 0;
}

/* ---- uidNameMappingFile: a flat JSON object of strings ----------------- */

/* Read the uid map with the configuration's JSON reader (junction/config.h):
 * err gets "PATH:LINE: reason". The map's arrays become the profile's. */
static int read_uid_map(jn_tls_profile_t *prof, const char *path, char *err, size_t errlen)
{
    jn_config_strmap_t map;
    int rc = jn_config_load_string_map(path, "uidNameMappingFile", &map, err, errlen);
    if (rc != 0)
        return rc;
    prof->n_map = map.count;
    prof->map_uid = map.keys;
    prof->map_name = map.values;
    return 0;
}

/* ---- the profile --------------------------------------------------------- */

static void profile_free(jn_tls_profile_t *p)
{
    if (!p)
        return;
    SSL_CTX_free(p->ctx);
    for (size_t i = 0; i < p->n_map; i++) {
        free(p->map_uid[i]);
        free(p->map_name[i]);
    }
    free(p->map_uid);
    free(p->map_name);
    free(p->uid_format);
    free(p->name);
    free(p);
}

/* Certificate, key (with its password) and their match. */
static int load_identity(jn_tls_profile_t *prof, const jn_tls_profile_config_t *cfg, char *err,
                         size_t errlen, const char **bad_attr)
{
    char why[200];
    if (!file_ok(cfg->cert_file, err, errlen)) {
        *bad_attr = "certFile";
        return JN_EINVAL;
    }
    if (SSL_CTX_use_certificate_chain_file(prof->ctx, cfg->cert_file) != 1) {
        set_err(err, errlen, "'%s' is not a PEM certificate: %s", cfg->cert_file,
                ssl_reason(why, sizeof why, "unreadable"));
        *bad_attr = "certFile";
        return JN_EINVAL;
    }
    const char *key = set(cfg->private_key_file) ? cfg->private_key_file : cfg->cert_file;
    *bad_attr = set(cfg->private_key_file) ? "privateKeyFile" : "certFile";
    if (!file_ok(key, err, errlen))
        return JN_EINVAL;
    char pw[JN_TLS_PASSWORD_MAX + 1] = "";
    const char *spec = set(cfg->password) ? cfg->password : NULL;
    char file_spec[1100];
    if (!spec && set(cfg->password_file)) {
        snprintf(file_spec, sizeof file_spec, "file:%s", cfg->password_file);
        spec = file_spec;
    }
    if (spec && jn_tls_password_resolve(spec, pw, sizeof pw, err, errlen) != 0) {
        *bad_attr = set(cfg->password) ? "password" : "passwordFile";
        return JN_EINVAL;
    }
    FILE *kf = fopen(key, "r");
    EVP_PKEY *pkey = kf ? PEM_read_PrivateKey(kf, NULL, password_cb, pw) : NULL;
    if (kf)
        fclose(kf);
    OPENSSL_cleanse(pw, sizeof pw);
    if (!pkey) {
        ssl_reason(why, sizeof why, "unreadable");
        if (spec) {
            set_err(err, errlen, "cannot unlock the private key in '%s' (wrong password?): %s", key,
                    why);
            *bad_attr = set(cfg->password) ? "password" : "passwordFile";
        } else {
            set_err(err, errlen,
                    "'%s' is not a PEM private key, or it is encrypted and no password is "
                    "set: %s",
                    key, why);
        }
        return JN_EINVAL;
    }
    int ok = SSL_CTX_use_PrivateKey(prof->ctx, pkey);
    EVP_PKEY_free(pkey);
    if (ok != 1 || SSL_CTX_check_private_key(prof->ctx) != 1) {
        ERR_clear_error();
        set_err(err, errlen, "the private key in '%s' does not match the certificate in '%s'", key,
                cfg->cert_file);
        return JN_EINVAL;
    }
    prof->has_cert = true;
    return 0;
}

static int load_ca(jn_tls_profile_t *prof, const char *ca, char *err, size_t errlen)
{
    char why[200];
    if (!file_ok(ca, err, errlen))
        return JN_EINVAL;
    if (SSL_CTX_load_verify_locations(prof->ctx, ca, NULL) != 1) {
        set_err(err, errlen, "'%s' holds no PEM certificate: %s", ca,
                ssl_reason(why, sizeof why, "unreadable"));
        return JN_EINVAL;
    }
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ca);
    if (names)
        SSL_CTX_set_client_CA_list(prof->ctx, names); /* taken */
    ERR_clear_error();
    prof->has_ca = true;
    return 0;
}

static int set_ciphers(SSL_CTX *ctx, const char *list, char *err, size_t errlen)
{
    /* a TLS 1.2 cipher list, or else TLS 1.3 cipher suites */
    if (SSL_CTX_set_cipher_list(ctx, list) == 1 || SSL_CTX_set_ciphersuites(ctx, list) == 1) {
        ERR_clear_error();
        return 0;
    }
    ERR_clear_error();
    set_err(err, errlen, "no cipher matches '%s'", list);
    return JN_EINVAL;
}

int jn_tls_profile_create(const jn_tls_profile_config_t *cfg, jn_tls_profile_t **out, char *err,
                          size_t errlen, const char **bad_attr)
{
    const char *attr_dummy = NULL;
    if (!bad_attr)
        bad_attr = &attr_dummy;
    *bad_attr = NULL;
    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    ERR_clear_error();
    jn_tls_profile_t *prof = calloc(1, sizeof *prof);
    if (!prof)
        return JN_ENOMEM;
    atomic_init(&prof->refs, 1);
    prof->name = strdup(cfg->name ? cfg->name : "");
    prof->ctx = SSL_CTX_new(TLS_method());
    if (!prof->name || !prof->ctx) {
        profile_free(prof);
        return JN_ENOMEM;
    }
    SSL_CTX_set_mode(prof->ctx,
                     SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* peers are verified per connection (io_tls.c): none by default */
    SSL_CTX_set_verify(prof->ctx, SSL_VERIFY_NONE, NULL);
    int rc = 0;
    if (set(cfg->cert_file)) {
        rc = load_identity(prof, cfg, err, errlen, bad_attr);
    } else if (set(cfg->private_key_file)) {
        set_err(err, errlen, "privateKeyFile is set without certFile");
        *bad_attr = "certFile";
        rc = JN_EINVAL;
    }
    if (rc == 0 && set(cfg->ca_cert_file) && (rc = load_ca(prof, cfg->ca_cert_file, err, errlen)))
        *bad_attr = "caCertFile";
    if (rc == 0 && !set(cfg->ca_cert_file))
        SSL_CTX_set_default_verify_paths(prof->ctx); /* a connector's server check */
    if (rc == 0 && set(cfg->ciphers) && (rc = set_ciphers(prof->ctx, cfg->ciphers, err, errlen)))
        *bad_attr = "ciphers";
    if (rc == 0 && set(cfg->protocols) &&
        (rc = set_protocols(prof->ctx, cfg->protocols, err, errlen)))
        *bad_attr = "protocols";
    if (rc == 0 && set(cfg->uid_format)) {
        if (strspn(cfg->uid_format, "csloun125") != strlen(cfg->uid_format)) {
            set_err(err, errlen, "'%s': uidFormat letters are c s l o u n 1 2 5", cfg->uid_format);
            *bad_attr = "uidFormat";
            rc = JN_EINVAL;
        } else if (!(prof->uid_format = strdup(cfg->uid_format))) {
            rc = JN_ENOMEM;
        }
    }
    if (rc == 0 && set(cfg->uid_name_mapping_file) &&
        (rc = read_uid_map(prof, cfg->uid_name_mapping_file, err, errlen)))
        *bad_attr = "uidNameMappingFile";
    if (rc != 0) {
        profile_free(prof);
        ERR_clear_error();
        return rc;
    }
    *out = prof;
    return 0;
}

void jn_tls_profile_config_fill(jn_tls_profile_config_t *cfg, const char *name,
                                const char *(*get)(void *ctx, const char *attr), void *ctx)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->name = name;
    cfg->cert_file = get(ctx, "certFile");
    cfg->private_key_file = get(ctx, "privateKeyFile");
    cfg->ca_cert_file = get(ctx, "caCertFile");
    cfg->password = get(ctx, "password");
    cfg->password_file = get(ctx, "passwordFile");
    cfg->ciphers = get(ctx, "ciphers");
    cfg->protocols = get(ctx, "protocols");
    cfg->uid_format = get(ctx, "uidFormat");
    cfg->uid_name_mapping_file = get(ctx, "uidNameMappingFile");
}

jn_tls_profile_t *jn_tls_profile_ref(jn_tls_profile_t *p)
{
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    return p;
}

void jn_tls_profile_unref(jn_tls_profile_t *p)
{
    if (p && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1)
        profile_free(p);
}

const char *jn_tls_profile_name(const jn_tls_profile_t *p)
{
    return p->name;
}

bool jn_tls_profile_has_cert(const jn_tls_profile_t *p)
{
    return p->has_cert;
}

bool jn_tls_profile_has_ca(const jn_tls_profile_t *p)
{
    return p->has_ca;
}

void *jn_tls_profile_ctx(const jn_tls_profile_t *p)
{
    return p->ctx;
}

/* Append "sep value" to out at *len (false when it does not fit). */
static bool uid_append(char *out, size_t outlen, size_t *len, const char *value)
{
    int n = snprintf(out + *len, outlen - *len, "%s%s", *len ? ";" : "", value);
    if (n < 0 || (size_t)n >= outlen - *len)
        return false;
    *len += (size_t)n;
    return true;
}

static bool uid_fingerprint(X509 *cert, const EVP_MD *md, char *out, size_t outlen, size_t *len)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (X509_digest(cert, md, digest, &n) != 1)
        return false;
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    for (unsigned i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return uid_append(out, outlen, len, hex);
}

/* uidFormat's letters (1.19): a subject field, or a fingerprint. */
typedef struct uid_field {
    char letter;
    int nid;                   /* subject field, when md is NULL */
    const EVP_MD *(*md)(void); /* fingerprint digest */
} uid_field_t;

static const uid_field_t uid_fields[] = {
    {'c', NID_countryName, NULL},
    {'s', NID_stateOrProvinceName, NULL},
    {'l', NID_localityName, NULL},
    {'o', NID_organizationName, NULL},
    {'u', NID_organizationalUnitName, NULL},
    {'n', NID_commonName, NULL},
    {'1', NID_undef, EVP_sha1},
    {'2', NID_undef, EVP_sha256},
    {'5', NID_undef, EVP_sha512},
};

int jn_tls_profile_peer_uid(const jn_tls_profile_t *p, void *cert_v, char *out, size_t outlen)
{
    X509 *cert = cert_v;
    if (!cert || !out || outlen == 0)
        return JN_EINVAL;
    out[0] = '\0';
    size_t len = 0;
    X509_NAME *subject = X509_get_subject_name(cert);
    if (!p || !p->uid_format) {
        BIO *b = BIO_new(BIO_s_mem());
        if (!b)
            return JN_ENOMEM;
        X509_NAME_print_ex(b, subject, 0, XN_FLAG_RFC2253);
        char *data = NULL;
        long n = BIO_get_mem_data(b, &data);
        if (n <= 0 || (size_t)n >= outlen) {
            BIO_free(b);
            return JN_EINVAL;
        }
        memcpy(out, data, (size_t)n);
        out[n] = '\0';
        BIO_free(b);
        len = (size_t)n;
    } else {
        for (const char *f = p->uid_format; *f; f++) {
            const uid_field_t *u = NULL;
            for (size_t k = 0; k < sizeof uid_fields / sizeof uid_fields[0]; k++)
                if (uid_fields[k].letter == *f)
                    u = &uid_fields[k];
            if (!u)
                continue; /* checked at create: not reached */
            if (u->md) {
                if (!uid_fingerprint(cert, u->md(), out, outlen, &len))
                    return JN_EINVAL;
                continue;
            }
            char value[256];
            if (X509_NAME_get_text_by_NID(subject, u->nid, value, sizeof value) > 0 &&
                !uid_append(out, outlen, &len, value))
                return JN_EINVAL;
        }
    }
    if (len == 0)
        return JN_EINVAL;
    for (size_t i = 0; p && i < p->n_map; i++) {
        if (strcmp(p->map_uid[i], out) == 0) {
            if (strlen(p->map_name[i]) >= outlen)
                return JN_EINVAL;
            strcpy(out, p->map_name[i]);
            break;
        }
    }
    return 0;
}
