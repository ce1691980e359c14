/*
 * junction/amqp_sasl.h — the AMQP 1.0 engine's SASL layer, server end
 * (AMQP 1.0 part 5, 5.3: the SASL header, 5.3.1 its frames, 5.3.2 the
 * negotiation, 5.3.3 the frame bodies). Part of router/amqp
 * (docs/engine.md, stages 2b(ii) and 4). No sockets, no threads, no
 * knowledge of the core, and no SASL library: ANONYMOUS (RFC 4505) is built
 * in, every other mechanism is a backend's (jn_amqp_sasl_mech_ops_t; the
 * router's is Cyrus, router/io/sasl_own.c).
 *
 * It runs before the AMQP layer on an incoming connection whose first
 * header the caller read as SASL (protocol id 3, junction/amqp_frame.h):
 *
 *   peer: SASL header      ->  we: SASL header, sasl-mechanisms [offered]
 *   peer: sasl-init         ->  we: sasl-challenge (the backend's), or
 *                                   sasl-outcome (ok, or the refusal's code)
 *   peer: sasl-response     ->  we: the same, as long as the backend asks
 *
 * after which the peer's AMQP header (id 0) and frames belong to the AMQP
 * layer (jn_amqp_conn_input, junction/amqp_engine.h): the SASL layer says
 * exactly how many octets were its own, so octets the peer sent ahead
 * (pipelined) are handed on, not lost. Input is read in place, as a raw
 * view of the caller's buffers, the way the AMQP layer reads it; output is
 * one area the caller drains.
 *
 * Frame size: 5.3.1 holds SASL frames to MIN-MAX-FRAME-SIZE (512 octets);
 * proton's SASL layer, which qdrouterd 1.19's users come from, takes and
 * sends frames up to its transport's max-frame-size (the listener's or
 * connector's maxFrameSize) instead, and a mechanism's data (a GSSAPI
 * token, an auth service's challenge) may need it. So the bound is the
 * caller's (jn_amqp_sasl_server_set_max_frame, the client config's
 * max_frame), 512 by default, for the frames we take and those we send.
 *
 * Faults: a protocol header other than SASL 1.0.0 id 3 is answered with
 * ours and nothing more (2.2); a SASL frame that is not a valid frame
 * within the bound (amqp:connection:framing-error, 5.3.1) or not a valid
 * body (5.3.3), any body but
 * sasl-init first, and any but sasl-response after a challenge (5.3.2), end
 * the exchange with no outcome (the SASL layer has no error frame: the
 * caller closes the transport); a sasl-init naming a mechanism we did not
 * offer gets sasl-outcome auth (code 1, 5.3.3.6), and a backend's refusal
 * its own code. Each leaves the reason in jn_amqp_sasl_server_fault.
 *
 * Threads: a SASL layer belongs to the thread that owns its connection; no
 * locks, no global state.
 */
#ifndef JUNCTION_AMQP_SASL_H
#define JUNCTION_AMQP_SASL_H 1

#include <junction/amqp_perf.h>

typedef struct jn_amqp_sasl_server jn_amqp_sasl_server_t;

/* The sasl-outcome codes (5.3.3.6), and what a backend's step may say
 * besides: JN_AMQP_SASL_STEP_CHALLENGE, the exchange goes on with a
 * challenge; JN_AMQP_SASL_STEP_PENDING, the answer is not known yet (it
 * comes later by jn_amqp_sasl_server_resume: an auth service's). */
typedef enum jn_amqp_sasl_code {
    JN_AMQP_SASL_OUTCOME_OK = 0,       /* authenticated */
    JN_AMQP_SASL_OUTCOME_AUTH = 1,     /* the credentials were refused */
    JN_AMQP_SASL_OUTCOME_SYS = 2,      /* a system error, not known to last */
    JN_AMQP_SASL_OUTCOME_SYS_PERM = 3, /* a system error that will last */
    JN_AMQP_SASL_OUTCOME_SYS_TEMP = 4, /* a system error that will pass */
    JN_AMQP_SASL_STEP_CHALLENGE = 5,   /* a step only: send the challenge */
    JN_AMQP_SASL_STEP_PENDING = 6,     /* a step only: the answer comes later */
} jn_amqp_sasl_code_t;

/* A mechanism backend: the mechanisms beyond the built-in ANONYMOUS, their
 * checks and their user. ctx is the backend's, handed to every call; the
 * SASL layer owns it once given (free is called with it). Each function
 * runs on the connection's owning thread, inside jn_amqp_sasl_server_input
 * (or _new for mechanisms), and must not block for long (a sasldb or a file
 * read is fine; a network call is not).
 *
 * - mechanisms: the mechanisms offered, separated by spaces ("PLAIN
 *   SCRAM-SHA-256"; may name ANONYMOUS, which the layer then serves
 *   itself); borrowed, valid until free. Called by
 *   jn_amqp_sasl_server_new_with; NULL there means the offer is not known
 *   yet (a remote service's): our header and sasl-mechanisms then wait,
 *   and the peer's frames are held, until jn_amqp_sasl_server_offer_ready,
 *   when it is called again and must not answer NULL.
 * - start: the client's sasl-init for mech (one of those offered, not
 *   ANONYMOUS), its initial-response in response/len (response NULL: the
 *   field was absent; not NULL with len 0: present and empty). step: the
 *   client's sasl-response to the last challenge. Both return a
 *   jn_amqp_sasl_code_t: JN_AMQP_SASL_STEP_CHALLENGE with the challenge in
 *   *out and *out_len (may be empty), JN_AMQP_SASL_OUTCOME_OK with the outcome's
 *   additional-data in *out and *out_len (len 0: none; SCRAM's server
 *   signature), or a refusal's code (*out ignored); or JN_ENOMEM; or
 *   JN_AMQP_SASL_STEP_PENDING: nothing is sent, the peer's further frames
 *   are held, and the backend later hands its answer (any of the others)
 *   to jn_amqp_sasl_server_resume. *out is borrowed from the backend until
 *   its next call.
 * - user: the authenticated user after JN_AMQP_SASL_OUTCOME_OK (borrowed, valid
 *   until free; NULL or "" when the mechanism names none).
 * - free: release ctx (may be NULL). */
typedef struct jn_amqp_sasl_mech_ops {
    const char *(*mechanisms)(void *ctx);
    int (*start)(void *ctx, const char *mech, const uint8_t *response, size_t len,
                 const uint8_t **out, size_t *out_len);
    int (*step)(void *ctx, const uint8_t *response, size_t len, const uint8_t **out,
                size_t *out_len);
    const char *(*user)(void *ctx);
    void (*free)(void *ctx);
} jn_amqp_sasl_mech_ops_t;

/* The user name an ANONYMOUS exchange authenticates (the name proton's
 * server end gives it, so management and logs show the same user on
 * either engine). */
#define JN_AMQP_SASL_ANONYMOUS_USER "anonymous"

/* jn_amqp_sasl_server_new: a SASL server layer offering ANONYMOUS only.
 * Nothing is sent until jn_amqp_sasl_server_start or the peer's header.
 * Returns NULL when memory runs out. The caller frees it with
 * jn_amqp_sasl_server_free. Any thread; it then belongs to the caller's. */
jn_amqp_sasl_server_t *jn_amqp_sasl_server_new(void);

/* jn_amqp_sasl_server_new_with: a SASL server layer offering the
 * mechanisms ops lists (ops borrowed: static, or outliving the layer; ctx
 * owned from now on, freed with ops->free even when this fails). ops NULL:
 * as jn_amqp_sasl_server_new. An offer with no mechanism at all is
 * allowed: every sasl-init then gets outcome auth. Returns NULL when
 * memory runs out. Any thread; it then belongs to the caller's. */
jn_amqp_sasl_server_t *jn_amqp_sasl_server_new_with(const jn_amqp_sasl_mech_ops_t *ops, void *ctx);

/* jn_amqp_sasl_server_free: free s and its output. NULL is ignored.
 * Owning thread. */
void jn_amqp_sasl_server_free(jn_amqp_sasl_server_t *s);

/* jn_amqp_sasl_server_set_max_frame: the largest SASL frame s takes from
 * the peer and composes, in octets (the connection's max-frame-size, as
 * proton's SASL layer uses its transport's; below 512, 0 included, means
 * 512, 5.3.1's MIN-MAX-FRAME-SIZE, the default). A larger frame from the
 * peer ends the exchange (amqp:connection:framing-error); a challenge of
 * the backend's that does not fit refuses it (amqp:internal-error). Call
 * before the first input. Owning thread. */
void jn_amqp_sasl_server_set_max_frame(jn_amqp_sasl_server_t *s, uint32_t max_frame);

/* jn_amqp_sasl_server_start: send our SASL header and sasl-mechanisms now,
 * before the peer's header (5.3.2 lets the server speak first; a client
 * that waits for them then need not). Idempotent. Returns 0 or JN_ENOMEM.
 * Owning thread. */
int jn_amqp_sasl_server_start(jn_amqp_sasl_server_t *s);

/* jn_amqp_sasl_server_input: read the octets left in in (a raw view of the
 * caller's buffers; not advanced): the peer's SASL header, then SASL
 * frames, each whole frame read where it lies. *consumed is set to the
 * octets that were the SASL layer's: the caller drops them and hands the
 * rest again with more; once the exchange is done, the octets after
 * *consumed are the AMQP layer's. Returns 0 while the exchange goes on
 * (more input needed); 1 once sasl-outcome ok is in the output (then and on
 * every later call nothing more is consumed); JN_EPROTO once the peer's
 * input was refused (see the top; input is then consumed and ignored, and
 * the caller writes the output and closes); JN_ENOMEM when the output could
 * not grow (the connection is then unusable). Owning thread. */
int jn_amqp_sasl_server_input(jn_amqp_sasl_server_t *s, const jn_iter_t *in, size_t *consumed);

/* jn_amqp_sasl_server_offer_ready: the backend's offer is known now (its
 * mechanisms no longer answers NULL): our SASL header and sasl-mechanisms
 * are composed if the peer's header came or _start was called (else they
 * go as usual). Nothing when the offer was never pending. The caller then
 * writes the output and hands the octets held again to
 * jn_amqp_sasl_server_input. Returns 0, JN_EINVAL (mechanisms still
 * answers NULL; nothing changed) or JN_ENOMEM (the connection is
 * unusable). Owning thread (a backend told on another thread has the
 * connection woken first). */
int jn_amqp_sasl_server_offer_ready(jn_amqp_sasl_server_t *s);

/* jn_amqp_sasl_server_resume: the answer to the start or step that said
 * JN_AMQP_SASL_STEP_PENDING: rc, out and len exactly as start and step
 * return them (a challenge, ok with additional-data, a refusal's code, or
 * JN_ENOMEM; *out borrowed for the call). The frame is composed as it
 * would have been at once; the caller then writes the output and hands
 * the octets held again to jn_amqp_sasl_server_input. Returns as
 * jn_amqp_sasl_server_input: 0 (a challenge went), 1 (outcome ok),
 * JN_EPROTO (refused: fault says why), JN_ENOMEM; or JN_EINVAL when
 * nothing was pending or rc is PENDING again (nothing changed). Owning
 * thread (see _offer_ready). */
int jn_amqp_sasl_server_resume(jn_amqp_sasl_server_t *s, int rc, const uint8_t *out, size_t len);

/* jn_amqp_sasl_server_refuse: the backend refuses the exchange while no
 * answer of its is pending (before the client's sasl-init, or while a
 * challenge waits for its response: an auth service that failed). Our
 * header and sasl-mechanisms go first if they have not, then sasl-outcome
 * with code (AUTH to SYS_TEMP), unasked, as proton's server sends it; the
 * exchange is then refused (fault amqp:unauthorized-access; later input is
 * consumed and ignored). Returns JN_EPROTO (done as said), JN_ENOMEM, or
 * JN_EINVAL (the exchange is over, the offer or an answer is pending, or
 * code is not a refusal's; nothing changed). Owning thread. */
int jn_amqp_sasl_server_refuse(jn_amqp_sasl_server_t *s, int code);

/* jn_amqp_sasl_server_pending: true while the offer or a backend's answer
 * is pending (the peer's frames are held). Owning thread. */
bool jn_amqp_sasl_server_pending(const jn_amqp_sasl_server_t *s);

/* jn_amqp_sasl_server_output: the octets composed and not yet taken
 * (borrowed; valid until the next call on s), their number in *len (0:
 * none). Owning thread. */
const uint8_t *jn_amqp_sasl_server_output(jn_amqp_sasl_server_t *s, size_t *len);

/* jn_amqp_sasl_server_output_done: n octets of the output were written;
 * they are dropped (n at most what was offered). Owning thread. */
void jn_amqp_sasl_server_output_done(jn_amqp_sasl_server_t *s, size_t n);

/* jn_amqp_sasl_server_done: true once the outcome ok was composed (the
 * peer is authenticated; its AMQP header comes next). Owning thread. */
bool jn_amqp_sasl_server_done(const jn_amqp_sasl_server_t *s);

/* jn_amqp_sasl_server_user: the user the exchange authenticated
 * (JN_AMQP_SASL_ANONYMOUS_USER for ANONYMOUS; the backend's, copied, for
 * another mechanism: "" when it named none), or NULL before it is done.
 * Borrowed from s. Owning thread. */
const char *jn_amqp_sasl_server_user(const jn_amqp_sasl_server_t *s);

/* jn_amqp_sasl_server_mechanism: the mechanism that succeeded ("ANONYMOUS",
 * "PLAIN", ...), or NULL before the exchange is done. Borrowed from s.
 * Owning thread. */
const char *jn_amqp_sasl_server_mechanism(const jn_amqp_sasl_server_t *s);

/* jn_amqp_sasl_server_fault: why the peer's input was refused (condition
 * NULL while it was not): "amqp:connection:framing-error",
 * "amqp:decode-error", "amqp:invalid-field", "amqp:illegal-state" or
 * "amqp:unauthorized-access" (a mechanism not offered, or the backend's
 * refusal), with a sentence a person can act on. Borrowed from s. Owning thread. */
const jn_amqp_fault_t *jn_amqp_sasl_server_fault(const jn_amqp_sasl_server_t *s);

/* ---- the client end -------------------------------------------------------
 *
 * For connections the router makes (connectors; docs/engine.md, stage 3):
 *
 *   we: SASL header (first)          peer: SASL header, sasl-mechanisms
 *   we: sasl-init (our choice)       peer: sasl-outcome (or a challenge:
 *   we: sasl-response                       answered while the mechanism
 *                                           has something to say)
 *
 * Built in: ANONYMOUS (RFC 4505; trace information: the user, if any),
 * PLAIN (RFC 4616; authzid empty, the user and password) and EXTERNAL (RFC
 * 4422 appendix A; an empty authorization identity: the identity is the
 * TLS client certificate the caller presented). The mechanism is the first
 * of ours, in our order, that the server offers: the configured list when
 * there is one (names we do not have are skipped), else PLAIN when a user
 * and password are set, then ANONYMOUS; EXTERNAL only when the list names
 * it. An empty challenge asks again for the initial response (RFC 4422
 * 3.3); any other challenge is refused, as none of these mechanisms has a
 * second step.
 *
 * Faults (each ends the exchange; jn_amqp_sasl_client_fault says why): a
 * header other than SASL 1.0.0 (amqp:connection:framing-error); a frame
 * that is not a valid SASL frame within the bound (the config's
 * max_frame, see the top: 512 by default), or out of order
 * (5.3.2: mechanisms first, an outcome only after our init;
 * amqp:illegal-state); no mechanism in common, or an outcome other than ok
 * (amqp:unauthorized-access, naming the code). */

typedef struct jn_amqp_sasl_client jn_amqp_sasl_client_t;

/* A client mechanism backend (the router's is Cyrus's client,
 * router/io/sasl_own.c): with one, the backend chooses the mechanism and
 * computes every response; the layer frames them. ctx is the backend's,
 * handed to every call; the layer owns it once given (free is called with
 * it, also when jn_amqp_sasl_client_new fails). Each function runs on the
 * connection's owning thread inside jn_amqp_sasl_client_input and must not
 * block for long.
 * - start: the server's offer (its sasl-server-mechanisms, separated by
 *   spaces; borrowed for the call). Returns 0 with the chosen mechanism in
 *   *mech (borrowed until free) and the initial response in *out and
 *   *out_len (*out NULL: the field is absent; not NULL with len 0: present
 *   and empty), or JN_EPROTO when no mechanism can be used.
 * - step: the server's challenge (len may be 0). Returns 0 with the
 *   response in *out and *out_len, or JN_EPROTO (the challenge is wrong).
 * - start and step may also return JN_AMQP_SASL_STEP_PENDING (a relay's
 *   backend: the answer is not known yet): nothing is sent, and the
 *   answer comes by jn_amqp_sasl_client_resume. While start's is pending
 *   a sasl-challenge or sasl-outcome from the server ends the exchange
 *   (amqp:illegal-state, "the server's sasl-outcome came before our
 *   sasl-init", or sasl-challenge); while step's is, the server's frames
 *   are held, not read.
 * - outcome: the server's sasl-outcome, its code (jn_amqp_sasl_code_t)
 *   and additional-data (len 0: none; SCRAM's server signature). For ok,
 *   returns 0 when the mechanism accepts it, JN_EPROTO when not (the
 *   server's proof is wrong); for a refusal the result is ignored (the
 *   backend may log it: the exchange fails either way).
 * - reason: why the last call failed (borrowed until the next call; NULL:
 *   no detail).
 * - free: release ctx (may be NULL).
 * *out is borrowed from the backend until its next call. */
typedef struct jn_amqp_sasl_client_mech_ops {
    int (*start)(void *ctx, const char *offer, const char **mech, const uint8_t **out,
                 size_t *out_len);
    int (*step)(void *ctx, const uint8_t *challenge, size_t len, const uint8_t **out,
                size_t *out_len);
    int (*outcome)(void *ctx, int code, const uint8_t *data, size_t len);
    const char *(*reason)(void *ctx);
    void (*free)(void *ctx);
} jn_amqp_sasl_client_mech_ops_t;

/* What a client may use. Strings borrowed for the call (copied). With ops
 * set, the backend serves every mechanism (mechanisms, user and password
 * are then the backend's business, not the layer's). */
typedef struct jn_amqp_sasl_client_config {
    const char *mechanisms; /* allowed, in our order, spaces or commas; NULL: see above */
    const char *user;       /* PLAIN's authentication identity (NULL: no PLAIN) */
    const char *password;   /* PLAIN's password (NULL: no PLAIN) */
    const char *hostname;   /* sasl-init hostname (5.3.3.2; NULL: none) */
    uint32_t max_frame;     /* the largest SASL frame taken and sent, octets (<512: 512) */
    const jn_amqp_sasl_client_mech_ops_t *ops; /* NULL: the built-in mechanisms */
    void *ctx;                                 /* ops's (owned by the layer) */
} jn_amqp_sasl_client_config_t;

/* jn_amqp_sasl_client_new: a SASL client layer with cfg (copied), its SASL
 * header already in the output (the client speaks first, 5.3.1). Returns
 * NULL when memory runs out. Freed with jn_amqp_sasl_client_free (the
 * password is wiped). Any thread; it then belongs to the caller's. */
jn_amqp_sasl_client_t *jn_amqp_sasl_client_new(const jn_amqp_sasl_client_config_t *cfg);

/* jn_amqp_sasl_client_free: free c and its output. NULL is ignored. Owning
 * thread. */
void jn_amqp_sasl_client_free(jn_amqp_sasl_client_t *c);

/* jn_amqp_sasl_client_input: read the server's octets left in in (a raw
 * view of the caller's buffers; not advanced), as
 * jn_amqp_sasl_server_input: *consumed is what was the SASL layer's (the
 * octets after it, once done, are the AMQP layer's: the server's AMQP
 * header). Returns 0 while the exchange goes on; 1 once the outcome ok was
 * read (and on every later call, consuming nothing); JN_EPROTO once the
 * exchange failed (see the faults above; input is then consumed and
 * ignored; the caller closes); JN_ENOMEM when the output could not grow.
 * Owning thread. */
int jn_amqp_sasl_client_input(jn_amqp_sasl_client_t *c, const jn_iter_t *in, size_t *consumed);

/* jn_amqp_sasl_client_resume: the answer to the backend's start or step
 * that said JN_AMQP_SASL_STEP_PENDING: rc 0 with the mechanism chosen (for
 * start; mech borrowed for the call, ignored for step) and the response in
 * out and len (out NULL: for start, the initial response is absent), or rc
 * JN_EPROTO (the backend failed: the exchange ends, its reason in the
 * fault). The frame is composed as it would have been at once; the caller
 * then writes the output and hands the octets held again to
 * jn_amqp_sasl_client_input. Returns 0, JN_EPROTO (the exchange ended:
 * the fault says why), JN_ENOMEM, or JN_EINVAL (nothing was pending, or a
 * start's answer without mech; nothing changed). Owning thread. */
int jn_amqp_sasl_client_resume(jn_amqp_sasl_client_t *c, int rc, const char *mech,
                               const uint8_t *out, size_t len);

/* jn_amqp_sasl_client_pending: true while the backend's start or step
 * answer is pending. Owning thread. */
bool jn_amqp_sasl_client_pending(const jn_amqp_sasl_client_t *c);

/* jn_amqp_sasl_client_output / _output_done: as the server's: the octets
 * composed and not yet taken (borrowed until the next call on c; *len 0:
 * none), and n of them written. Owning thread. */
const uint8_t *jn_amqp_sasl_client_output(jn_amqp_sasl_client_t *c, size_t *len);
void jn_amqp_sasl_client_output_done(jn_amqp_sasl_client_t *c, size_t n);

/* jn_amqp_sasl_client_done: true once the server's outcome ok was read.
 * Owning thread. */
bool jn_amqp_sasl_client_done(const jn_amqp_sasl_client_t *c);

/* jn_amqp_sasl_client_mechanism: the mechanism chosen (borrowed from c), or
 * NULL before the server's mechanisms were read or when none was in
 * common. Owning thread. */
const char *jn_amqp_sasl_client_mechanism(const jn_amqp_sasl_client_t *c);

/* jn_amqp_sasl_client_fault: why the exchange failed (condition NULL while
 * it did not). Borrowed from c. Owning thread. */
const jn_amqp_fault_t *jn_amqp_sasl_client_fault(const jn_amqp_sasl_client_t *c);

#endif /* JUNCTION_AMQP_SASL_H */
