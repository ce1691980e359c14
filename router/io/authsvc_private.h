/*
 * authsvc_private.h — the auth-service relay (authsvc.c; docs/design.md
 * "The auth service") shared with its own-engine side (authsvc_own.c):
 * the relay's record and the steps the own engine's ends call. Nothing else
 * in router/io includes it. Every function here runs on the client's loop
 * thread, which is the service connection's too (authsvc.c, "Threads").
 */
#ifndef JN_IO_AUTHSVC_PRIVATE_H
#define JN_IO_AUTHSVC_PRIVATE_H 1

#include "io_private.h"
#include "io_own.h"
#include "sasl_own.h"

typedef struct {
    char *start;
    size_t size;
    bool present; /* an empty field differs from an absent one */
} owned_bytes_t;

/* One client's relay. The client's loop thread (authsvc.c's comment). */
typedef struct jn_io_relay {
    jn_io_conn_t *client; /* NULL once the client's transport closed */
    jn_io_conn_t *svc;    /* NULL once detached */
    char *svc_mechs;         /* the service's offer, space-separated */
    char *mech;              /* the client's choice */
    owned_bytes_t to_svc;    /* the client's init or response (sent from here) */
    owned_bytes_t to_client; /* the service's challenge */
    char *user;              /* the identity the service reported */
    bool started, svc_sasl_ok, done;
    /* what the client's next pass hands the engine's SASL layer
     * (jn_io_authsvc_own_pass_IO) */
    bool own_offer, own_waiting, own_refuse;
    int own_answer; /* 0: none; else a jn_amqp_sasl_code_t + 1 */
    /* to_svc waits for the service connection's next pass
     * (jn_io_authsvc_own_svc_pass_IO) */
    bool svc_post;
} jn_io_relay_t;

/* What becomes of the service's connection when the relay lets it go:
 * nothing (it is closing already), an AMQP close after its Open, or cut
 * mid-SASL. */
typedef enum { DETACH_ONLY, DETACH_CLOSE, DETACH_FORCE } detach_t;

/* authsvc.c (each on the client's loop thread):
 * jn_io_relay_svc_shown: the service's host:port for log lines (borrowed).
 * jn_io_relay_own_post: hand the own-engine client the service's offer
 * (offer true) or the answer code to its pending step, in its next pass.
 * jn_io_relay_fail: the client's exchange fails, one log line saying why
 * (printf-formatted), the service's connection detached as how says.
 * jn_io_relay_start_svc: make and start the service's connection; 0, or a
 * negative code with why (whylen octets) filled.
 * jn_io_relay_mechanisms: the service's offer (space-separated), to the
 * client; false when the relay is over or out of memory (failed then).
 * jn_io_relay_outcome: the service's outcome (ok or not): a refusal fails
 * the client, a success waits for the service's Open.
 * jn_io_relay_end: the client's side is gone: r ends and is freed. */
const char *jn_io_relay_svc_shown(const jn_io_relay_t *r);
void jn_io_relay_own_post(jn_io_relay_t *r, bool offer, int code);
void jn_io_relay_fail(jn_io_relay_t *r, detach_t how, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int jn_io_relay_start_svc(jn_io_relay_t *r, char *why, size_t whylen);
bool jn_io_relay_mechanisms(jn_io_relay_t *r, const char *mechs);
void jn_io_relay_outcome(jn_io_relay_t *r, bool ok);
void jn_io_relay_end(jn_io_relay_t *r);

#endif /* JN_IO_AUTHSVC_PRIVATE_H */
