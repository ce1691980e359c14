/*
 * junction/amqp_transport.h — one incoming connection's stream through the
 * AMQP 1.0 engine: the peer's octets received into pooled buffers, the
 * layer chosen by its first protocol header (AMQP 1.0 part 2, 2.2; part 5,
 * 5.3.1), its SASL layer (junction/amqp_sasl.h) then its AMQP layer
 * (junction/amqp_engine.h), and both layers' output gathered for one
 * writev/sendmsg. Part of router/amqp (docs/engine.md, stage 2b(ii) round
 * 1): no sockets, no threads, no knowledge of the core. It is what
 * router/io drives for a connection on Junction's own engine.
 *
 * Input (zero copy): the caller asks for space (jn_amqp_transport_
 * read_space: the free end of the last buffer and fresh pooled jn_buffer_t
 * buffers, as iovecs for one readv/recvmsg), reports how many octets it
 * put there (_read_done), and runs the layers (_process). The layers read
 * the octets where they lie: a transfer's payload reaches on_transfer as a
 * raw view of these buffers, so the user keeps it by taking a reference on
 * each buffer it spans (jn_buffer_ref), never by copying. The transport
 * drops its own reference on a buffer once every octet of it was consumed
 * and no more will be written to it; a buffer's published octets never
 * change (junction/buffer.h), so what a user holds stays valid. A user
 * that keeps a large payload in a chain of its own (a message's) takes
 * the whole buffers inside it out of the input (jn_amqp_transport_take):
 * they are linked into its chain as they are, and only the octets around
 * them are copied.
 *
 * Layers, by the peer's first header: SASL (id 3) runs the SASL server
 * layer (ANONYMOUS, and a mechanism backend's mechanisms when one was
 * given) and then the AMQP layer over the octets that follow, sent ahead or
 * not; AMQP (id 0) runs the AMQP layer at once, unless SASL is required
 * (then the SASL layer answers with its header and refuses); any other
 * header goes to the AMQP layer, which answers with its own header and
 * refuses (2.2). The SASL layer of either role takes and sends SASL
 * frames up to the AMQP layer's configured max_frame_size, as proton's
 * SASL layer does with its transport's (junction/amqp_sasl.h, the top).
 *
 * Threads: the thread that owns the connection; no locks, no global state.
 */
#ifndef JUNCTION_AMQP_TRANSPORT_H
#define JUNCTION_AMQP_TRANSPORT_H 1

#include <junction/amqp_engine.h>
#include <junction/amqp_sasl.h>

typedef struct jn_amqp_transport jn_amqp_transport_t;

/* jn_amqp_transport_new: a transport for an incoming connection whose AMQP
 * layer has config and handler (as jn_amqp_conn_new: copied; ctx
 * borrowed). Returns NULL when memory runs out or config is invalid. Freed
 * with jn_amqp_transport_free. Any thread; it then belongs to the
 * caller's. */
jn_amqp_transport_t *jn_amqp_transport_new(const jn_amqp_conn_config_t *config,
                                           const jn_amqp_handler_t *handler);

/* jn_amqp_transport_new_client: a transport for a connection we made (the
 * client role, 5.3.1): with sasl (copied; NULL: no SASL layer), our SASL
 * header goes first and the SASL client layer (junction/amqp_sasl.h)
 * authenticates before the AMQP layer's output is offered; without, the
 * AMQP layer's header goes first, with our open (jn_amqp_conn_open, which
 * the user calls at once in either case: its frames wait for the SASL
 * outcome). config and handler as jn_amqp_transport_new; sasl's backend
 * context, if any, is the transport's from the call on (freed with it, or
 * at once on failure). Returns NULL when memory runs out or config is
 * invalid. Any thread; it then belongs to the caller's. */
jn_amqp_transport_t *jn_amqp_transport_new_client(const jn_amqp_conn_config_t *config,
                                                  const jn_amqp_handler_t *handler,
                                                  const jn_amqp_sasl_client_config_t *sasl);

/* jn_amqp_transport_set_sasl: the SASL layer's mechanisms (ops and ctx as
 * jn_amqp_sasl_server_new_with: ops borrowed, ctx owned from now on, freed
 * with ops->free even when this fails; ops NULL: ANONYMOUS only, the
 * default) and whether a peer must authenticate with SASL (required: a
 * peer whose first header is AMQP's is refused). Before the first
 * jn_amqp_transport_process, on a transport of jn_amqp_transport_new; a
 * second call, or one on a client's, replaces nothing and returns
 * JN_EINVAL (ctx is then freed). Returns 0 or JN_EINVAL. Owning thread. */
int jn_amqp_transport_set_sasl(jn_amqp_transport_t *t, const jn_amqp_sasl_mech_ops_t *ops,
                               void *ctx, bool required);

/* jn_amqp_transport_sasl_offer_ready / _sasl_resume: a deferring SASL
 * backend (one whose mechanisms answered NULL, or whose start or step
 * answered JN_AMQP_SASL_STEP_PENDING: an auth service's relay) has its
 * offer, or its answer (rc, out and len as start and step return them; out
 * borrowed for the call): they go to the SASL layer as
 * jn_amqp_sasl_server_offer_ready and _resume (junction/amqp_sasl.h).
 * Before the peer's SASL header the layer is not made yet, and an offer
 * ready then is nothing to do (the layer asks the backend when it is
 * made). The caller then calls jn_amqp_transport_process, which reads the
 * octets held meanwhile and reports a refusal (JN_EPROTO), and writes the
 * output. Returns 0; JN_EINVAL (offer: mechanisms still answers NULL;
 * resume: nothing was pending); JN_ENOMEM (the connection is unusable).
 * Owning thread: a backend answered on another thread has the connection
 * woken and calls these in its pass. */
int jn_amqp_transport_sasl_offer_ready(jn_amqp_transport_t *t);
int jn_amqp_transport_sasl_resume(jn_amqp_transport_t *t, int rc, const uint8_t *out, size_t len);

/* jn_amqp_transport_sasl_client_resume: the client role's deferring
 * backend (its start or step answered JN_AMQP_SASL_STEP_PENDING: the
 * relay's connection to an auth service) has its answer: it goes to the
 * SASL client layer as jn_amqp_sasl_client_resume (rc, mech, out and len
 * as there; borrowed for the call). The caller then calls
 * jn_amqp_transport_process (the octets held meanwhile are read) and
 * writes the output. Returns as that function; JN_EINVAL also on a
 * transport without a SASL client layer, or past it. Owning thread. */
int jn_amqp_transport_sasl_client_resume(jn_amqp_transport_t *t, int rc, const char *mech,
                                         const uint8_t *out, size_t len);

/* jn_amqp_transport_sasl_refuse: the deferring backend refuses while
 * nothing of its is pending (jn_amqp_sasl_server_refuse: our mechanisms
 * if not yet sent, then the outcome with code, unasked). Returns as that
 * function, or JN_AGAIN before the peer's first header (the SASL layer is
 * not made yet: call again after the next jn_amqp_transport_process), or
 * JN_EINVAL when the peer went without SASL. The caller writes the output.
 * Owning thread. */
int jn_amqp_transport_sasl_refuse(jn_amqp_transport_t *t, int code);

/* jn_amqp_transport_free: free t, its layers and its buffers (its
 * references on them: buffers a user still references live on). NULL is
 * ignored. Not from inside a callback of its AMQP layer. Owning thread. */
void jn_amqp_transport_free(jn_amqp_transport_t *t);

/* jn_amqp_transport_conn: t's AMQP layer (owned by t), for the user's calls
 * (jn_amqp_conn_open, sessions, links, deliveries). Owning thread. */
jn_amqp_conn_t *jn_amqp_transport_conn(jn_amqp_transport_t *t);

/* jn_amqp_transport_read_space: where the next octets received may go: up
 * to max iovecs (max >= 1): the free end of the last buffer, then fresh
 * pooled buffers of JN_BUFFER_CAPACITY octets held by t until filled or
 * given back, enough to cover want octets when memory allows and the
 * connection's recent reads asked for it (t offers 2 fresh buffers at
 * first and while reads are small, twice as many after each read that
 * filled all it was offered, up to 64, and half as many, giving the rest
 * back, after one that took under a quarter). Returns the iovecs filled
 * (>= 1), or JN_ENOMEM when not even one buffer could be had. Valid until
 * the next call on t. Owning thread. */
int jn_amqp_transport_read_space(jn_amqp_transport_t *t, struct iovec *iov, int max, size_t want);

/* jn_amqp_transport_read_done: n octets (at most the space last offered)
 * were written there, in order: they are published and held for
 * jn_amqp_transport_process. Owning thread. */
void jn_amqp_transport_read_done(jn_amqp_transport_t *t, size_t n);

/* jn_amqp_transport_process: run the layers over the octets held, at time
 * now_ms (the engine's clock, as jn_amqp_conn_input): the first header
 * chooses the layers (see the top), and whole SASL and AMQP frames are
 * read and reported through the handler; a partial frame stays held for
 * the next call. Returns 0; JN_EPROTO once the peer's input was refused by
 * either layer (jn_amqp_transport_fault says why; write the output and
 * close); JN_ENOMEM when an output could not grow (drop the connection).
 * Owning thread. */
int jn_amqp_transport_process(jn_amqp_transport_t *t, uint64_t now_ms);

/* jn_amqp_transport_take: input by reference. Inside the AMQP layer's
 * on_transfer, during jn_amqp_transport_process on t, payload (the view
 * on_transfer gave, copied; it may have been advanced, not widened) is cut
 * in three: the buffers wholly inside it, spliced out of t's input into
 * *whole (t's reference on each passes to the list; the last one's next
 * is NULL, so the list may be linked into another chain, e.g. with
 * jn_message_append_buffers), *payload the octets before them and *rest
 * (a raw view) the octets after them; both views stay valid for the rest
 * of the callback. A buffer is taken only when it is full (no read tops it
 * up), holds octets of the payload only, and holds neither the payload's
 * first octet nor its last (the engine reads on from that one); the first
 * run of such buffers is taken. So a payload of at most
 * JN_BUFFER_CAPACITY + 1 octets is never cut, and a longer one leaves at
 * most two buffers' worth of octets around what is taken (its first run
 * and its last). Returns the octets
 * taken; 0 when none were (outside on_transfer, a payload too short, or a
 * hash view): *whole and *rest are then empty and *payload unchanged.
 * AMQP 1.0 part 2, 2.7.5 (a transfer's payload: the message's octets).
 * Owning thread. */
size_t jn_amqp_transport_take(jn_amqp_transport_t *t, jn_iter_t *payload, jn_buffer_list_t *whole,
                              jn_iter_t *rest);

/* jn_amqp_transport_held: octets received and not yet consumed by the
 * layers (a partial frame). Owning thread. */
size_t jn_amqp_transport_held(const jn_amqp_transport_t *t);

/* jn_amqp_transport_output_iov: up to max runs of the output, in order (the
 * SASL layer's first, then the AMQP layer's), into iov for one
 * writev/sendmsg; returns how many were filled (0: nothing to send).
 * Borrowed until the next call on t or its AMQP layer. Owning thread. */
int jn_amqp_transport_output_iov(jn_amqp_transport_t *t, struct iovec *iov, int max);

/* jn_amqp_transport_output_done: n octets of the output (at most what was
 * offered) were written; they are dropped. Owning thread. */
void jn_amqp_transport_output_done(jn_amqp_transport_t *t, size_t n);

/* jn_amqp_transport_finished: true when nothing more will happen on t: a
 * layer refused the peer's input, or close went both ways. The caller
 * writes the output left and closes the socket. Owning thread. */
bool jn_amqp_transport_finished(const jn_amqp_transport_t *t);

/* jn_amqp_transport_fault: why the peer's input was refused, by the SASL
 * layer or the AMQP layer (condition NULL while it was not). Borrowed from
 * t. Owning thread. */
const jn_amqp_fault_t *jn_amqp_transport_fault(const jn_amqp_transport_t *t);

/* jn_amqp_transport_user / _sasl_mechanism: the user the SASL layer
 * authenticated and its mechanism ("ANONYMOUS", "PLAIN", ...), or NULL for
 * a peer that went without SASL (the router shows such a peer as user
 * "anonymous", as 1.19 does) and before the SASL exchange is done. In the
 * client role: the user is NULL (the server authenticated us), the
 * mechanism the one we chose, once the outcome ok came. Borrowed from t,
 * valid while it lives. Owning thread. */
const char *jn_amqp_transport_user(const jn_amqp_transport_t *t);
const char *jn_amqp_transport_sasl_mechanism(const jn_amqp_transport_t *t);

#endif /* JUNCTION_AMQP_TRANSPORT_H */
