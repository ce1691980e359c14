/*
 * io_own.h — connections on Junction's own AMQP engine (docs/engine.md,
 * stage 2b(ii) round 1), shared by io_own.c (the switch, the connection:
 * socket, pass, open and close), io_own_link.c (links, deliveries and the
 * core's work) and the files that hand such a connection over
 * (io_endpoint.c at accept, io_loop.c for its pass, io_conn.c when it is
 * freed). Nothing else in router/io sees these structs.
 *
 * A connection the switch selects keeps its jn_io_conn_t (loop, refcount,
 * registry, timers, socket) and with it a proton driver that is never fed:
 * its stream runs through a jn_amqp_transport_t (junction/amqp_transport.h)
 * instead, and its links and deliveries are jn_io_own_link_t and
 * jn_io_own_dlv_t. Everything here belongs to the connection's loop thread.
 */
#ifndef JN_IO_OWN_H
#define JN_IO_OWN_H 1

#include "io_private.h"

#include <junction/amqp_delivery.h>
#include <junction/amqp_trace.h>
#include <junction/amqp_transport.h>

typedef struct jn_io_own jn_io_own_t;
typedef struct jn_io_own_link jn_io_own_link_t;
typedef struct jn_io_own_dlv jn_io_own_dlv_t;
typedef struct jn_io_own_tx jn_io_own_tx_t;

/* One delivery the router holds unsettled on an own link, incoming (the
 * peer's, until the router's outcome is settled or the peer settles) or
 * outgoing (a copy, until the consumer or the sender settles). */
struct jn_io_own_dlv {
    jn_io_own_dlv_t *prev, *next; /* the link's list */
    jn_io_own_link_t *link;
    jn_delivery_t *dlv;    /* a reference */
    jn_amqp_delivery_t *d; /* the engine's (its user pointer is this) */
};

/* A copy waiting on an outgoing link for the one being sent. */
struct jn_io_own_tx {
    jn_io_own_tx_t *next;
    jn_delivery_t *dlv; /* the work item's reference */
    bool settled;       /* the sender settled meanwhile */
};

/* One link on an own connection. */
struct jn_io_own_link {
    jn_io_own_link_t *prev, *next; /* the connection's list */
    jn_io_own_t *own;
    uint64_t id;          /* [L<id>] */
    jn_amqp_link_t *l;    /* the engine's, NULL once it freed it */
    jn_core_link_t *core; /* NULL once its detach was reported */
    bool incoming;        /* the peer sends (the router receives) */
    bool presettled;      /* the peer's snd-settle-mode settled (incoming) */
    bool released;        /* JN_WORK_LINK_RELEASED came */
    uint8_t *attach;      /* the peer's attach, encoded (owned), for our answer */
    size_t attach_len;
    jn_io_own_dlv_t *dlvs; /* unsettled deliveries */
    /* incoming: the delivery being received */
    jn_message_t *rx_msg;
    jn_amqp_delivery_t *rx_d;
    bool rx_settled;
    uint8_t rx_tag[JN_AMQP_TAG_MAX];
    size_t rx_tag_len;
    /* outgoing: credit used (deliveries begun, and credit drained) */
    uint64_t sent;
    /* outgoing: the copy being sent, its octets composed and not yet
     * framed (pend, from pend_off), and the copies waiting */
    jn_delivery_t *tx_dlv;
    jn_io_own_dlv_t *tx_od; /* its record, NULL for a pre-settled copy */
    jn_amqp_delivery_t *tx_d;
    jn_message_out_t tx_out;
    int tx_slot;
    bool tx_ended; /* tx_out produced all its octets */
    bool tx_settle_when_done;
    jn_buffer_list_t pend;
    size_t pend_off, pend_len;
    jn_io_own_tx_t *txq, *txq_tail;
};

/* The own side of a connection. */
struct jn_io_own {
    jn_io_conn_t *conn;
    jn_amqp_transport_t *t;
    jn_io_own_link_t *links; /* every link not yet freed */
    uint64_t next_link_id;
    uint32_t session_window; /* our incoming window per session, frames */
    bool close_sent;         /* our close is in the output */
    bool cut;                /* end the transport once the output is out */
    bool refused_logged;
    /* the protocol trace (io_own.c), each way, while conn->tracing;
     * trace_out_ahead: octets at the front of the output traced already
     * (our frames are traced as they go to the socket, not once taken) */
    jn_amqp_tracer_t trace_in, trace_out;
    size_t trace_out_ahead;
};

/* jn_io_engine_own_default: whether connections the switch may take run on
 * the own engine: the environment variable JUNCTION_ENGINE ("own" or
 * "proton"), read once by jn_io_create, else the build's JN_ENGINE. Logs
 * the choice when it is own. Main thread, at start. */
bool jn_io_engine_own_default(void);

/* jn_io_own_eligible: whether a connection accepted on listener ep runs on
 * the own engine (docs/engine.md, "Which connections"): the switch is on,
 * and ep is a plain-TCP listener of role normal with no SASL requirement,
 * no SASL plugin or auth service, no vhost policy, no multi-tenancy, no
 * message logging and no initial handshake timeout. Loop 0's thread (at
 * accept). */
bool jn_io_own_eligible(const jn_io_t *io, const jn_io_endpoint_t *ep);

/* jn_io_own_attach: give conn (new, not started) its own-engine side.
 * Returns 0 or JN_ENOMEM. The accepting thread, before jn_io_conn_start. */
int jn_io_own_attach(jn_io_conn_t *conn);

/* jn_io_own_free: free conn's own side (its links, deliveries, transport
 * and buffers), if any. When conn is freed (any thread: nothing else
 * refers to it then). */
void jn_io_own_free(jn_io_conn_t *conn);

/* jn_io_own_pass_IO: one pass of conn on the own engine (as io_loop.c's
 * conn_pass for proton's): read into pooled buffers, run the engine, the
 * core's work, the copies to send, the engine's clock, write. Returns true
 * when the socket may hold more (run again in the next pass). When the
 * transport ended, conn->transport_closed is set (the caller destroys it).
 * The loop's thread. */
bool jn_io_own_pass_IO(jn_io_loop_t *loop, jn_io_conn_t *conn);

/* io_own_link.c, the engine's link and delivery events and the core's
 * work on an own connection (the loop's thread): */
void jn_io_own_on_attach(void *ctx, jn_amqp_link_t *l, const jn_amqp_attach_t *a);
void jn_io_own_on_detach(void *ctx, jn_amqp_link_t *l, const jn_amqp_detach_t *d);
void jn_io_own_on_flow(void *ctx, jn_amqp_session_t *s, jn_amqp_link_t *l, const jn_amqp_flow_t *f);
void jn_io_own_on_transfer(void *ctx, jn_amqp_link_t *l, jn_amqp_delivery_t *d,
                           const jn_amqp_transfer_t *t, const jn_iter_t *payload);
void jn_io_own_on_disposition(void *ctx, jn_amqp_delivery_t *d, const jn_amqp_disposition_t *disp);

/* jn_io_own_session_gone_IO: session s ended: its links went with it
 * (the engine frees them without a detach): each counts as detached. */
void jn_io_own_session_gone_IO(jn_io_own_t *own, jn_amqp_session_t *s);

/* jn_io_own_work_IO: carry out one work item of the core on an own
 * connection; frees it (or keeps its delivery). */
void jn_io_own_work_IO(jn_io_own_t *own, jn_work_t *w);

/* jn_io_own_links_free: the transport ended, or the connection is freed:
 * every link's deliveries and copies are let go (the core releases what it
 * must on jn_core_conn_closed_IO, and hears of no link again) and the
 * links freed. The loop's thread, or the thread freeing the connection. */
void jn_io_own_links_free(jn_io_own_t *own);

/* jn_io_own_tx_resume_IO: send more of the copies in progress (after the
 * peer's flow opened its window). */
void jn_io_own_tx_resume_IO(jn_io_own_t *own);

#endif /* JN_IO_OWN_H */
