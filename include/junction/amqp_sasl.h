/*
 * junction/amqp_sasl.h — the AMQP 1.0 engine's SASL layer, server end, first
 * mechanism: ANONYMOUS (AMQP 1.0 part 5, 5.3: the SASL header, 5.3.1 its
 * frames, 5.3.2 the negotiation, 5.3.3 the frame bodies; RFC 4505 for the
 * mechanism). Part of router/amqp (docs/engine.md, stage 2b(ii) round 1;
 * stage 4 grows it with EXTERNAL and Cyrus's mechanisms, and a client end).
 * No sockets, no threads, no knowledge of the core.
 *
 * It runs before the AMQP layer on an incoming connection whose first
 * header the caller read as SASL (protocol id 3, junction/amqp_frame.h):
 *
 *   peer: SASL header      ->  we: SASL header, sasl-mechanisms [ANONYMOUS]
 *   peer: sasl-init         ->  we: sasl-outcome ok (mechanism ANONYMOUS)
 *                               or  sasl-outcome auth (any other mechanism)
 *
 * after which the peer's AMQP header (id 0) and frames belong to the AMQP
 * layer (jn_amqp_conn_input, junction/amqp_engine.h): the SASL layer says
 * exactly how many octets were its own, so octets the peer sent ahead
 * (pipelined) are handed on, not lost. Input is read in place, as a raw
 * view of the caller's buffers, the way the AMQP layer reads it; output is
 * one area the caller drains.
 *
 * Faults: a protocol header other than SASL 1.0.0 id 3 is answered with
 * ours and nothing more (2.2); a SASL frame that is not a valid frame of
 * at most 512 octets (5.3.1) or not a valid body (5.3.3), and any body but
 * sasl-init from the client (5.3.2), end the exchange with no outcome (the
 * SASL layer has no error frame: the caller closes the transport); a
 * sasl-init naming a mechanism we did not offer gets sasl-outcome auth
 * (code 1, 5.3.3.6). Each leaves the reason in jn_amqp_sasl_server_fault.
 *
 * Threads: a SASL layer belongs to the thread that owns its connection; no
 * locks, no global state.
 */
#ifndef JUNCTION_AMQP_SASL_H
#define JUNCTION_AMQP_SASL_H 1

#include <junction/amqp_perf.h>

typedef struct jn_amqp_sasl_server jn_amqp_sasl_server_t;

/* The user name an ANONYMOUS exchange authenticates (the name proton's
 * server end gives it, so management and logs show the same user on
 * either engine). */
#define JN_AMQP_SASL_ANONYMOUS_USER "anonymous"

/* jn_amqp_sasl_server_new: a SASL server layer offering ANONYMOUS. Nothing
 * is sent until jn_amqp_sasl_server_start or the peer's header. Returns
 * NULL when memory runs out. The caller frees it with
 * jn_amqp_sasl_server_free. Any thread; it then belongs to the caller's. */
jn_amqp_sasl_server_t *jn_amqp_sasl_server_new(void);

/* jn_amqp_sasl_server_free: free s and its output. NULL is ignored.
 * Owning thread. */
void jn_amqp_sasl_server_free(jn_amqp_sasl_server_t *s);

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

/* jn_amqp_sasl_server_user: the user the exchange authenticated (static;
 * JN_AMQP_SASL_ANONYMOUS_USER), or NULL before it is done. Owning
 * thread. */
const char *jn_amqp_sasl_server_user(const jn_amqp_sasl_server_t *s);

/* jn_amqp_sasl_server_fault: why the peer's input was refused (condition
 * NULL while it was not): "amqp:connection:framing-error",
 * "amqp:decode-error", "amqp:invalid-field", "amqp:illegal-state" or
 * "amqp:unauthorized-access" (a mechanism not offered), with a sentence a
 * person can act on. Borrowed from s. Owning thread. */
const jn_amqp_fault_t *jn_amqp_sasl_server_fault(const jn_amqp_sasl_server_t *s);

#endif /* JUNCTION_AMQP_SASL_H */
