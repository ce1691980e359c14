/*
 * transport.c — one connection's stream through the engine: the peer's
 * octets in pooled buffers, read in place by the layer its first header
 * chose (the SASL server layer, sasl.c, then the AMQP layer, conn.c) or, in
 * the client role, by the SASL client layer (sasl_client.c) and then the
 * AMQP layer, and both layers' output as one list of runs. The contract is in
 * junction/amqp_transport.h.
 *
 * The input chain: t->in holds the buffers received and not yet consumed
 * whole (one reference each); head_off octets of the head were consumed;
 * held octets follow. Space for the next read is the free end of the tail
 * and spare buffers (t->spare, allocated ahead, linked into the chain only
 * once octets land in them, so the chain never holds an empty buffer the
 * iterator would have to cross). How many spares a read is offered
 * follows the reads (spare_want): it starts at SPARE_MIN, doubles up to
 * SPARE_MAX while reads fill all they were offered, and halves, giving the
 * spares past it back to the pool, when a read takes under a quarter. So a
 * busy connection reads up to 32 KiB per call as before, and an idle one
 * holds SPARE_MIN spares (1 KiB), not 64 (32 KiB: docs/performance.md,
 * "Memory per connection, link and delivery on both engines").
 */
#include "amqp_private.h"

#include <junction/amqp_transport.h>

#include <stdlib.h>

/* Spare buffers offered for one read at most: JN_BUFFER_CAPACITY x this is
 * the most one readv takes (32 KiB with 512-octet buffers). */
#define SPARE_MAX 64
/* Spares offered to a connection's first reads, and kept while it is idle. */
#define SPARE_MIN 2

enum { LAYER_HEADER = 0, LAYER_SASL, LAYER_SASL_CLIENT, LAYER_AMQP };

struct jn_amqp_transport {
    jn_amqp_conn_t *conn;
    jn_amqp_sasl_server_t *sasl;             /* NULL: the peer went without SASL (yet) */
    jn_amqp_sasl_client_t *sasl_client;      /* the client role's SASL layer */
    const jn_amqp_sasl_mech_ops_t *sasl_ops; /* the SASL layer's backend, */
    void *sasl_ctx;                          /* until the layer takes it */
    bool sasl_set, sasl_required;
    uint32_t sasl_max_frame; /* the SASL layers' bound: the AMQP layer's max-frame-size */
    int layer;
    jn_buffer_list_t in;
    size_t head_off, held;
    jn_buffer_t *spare[SPARE_MAX];
    unsigned nspare;
    unsigned spare_want;    /* spares offered to the next read: SPARE_MIN..SPARE_MAX */
    unsigned spare_offered; /* spares offered to the last read */
    size_t tail_offered;    /* octets of the tail's free end offered to the last read */
    size_t sasl_offered;    /* octets of the SASL layer's output in the last iovecs */
    bool in_amqp;           /* inside the AMQP layer's input: buffers may be taken */
    size_t taken;           /* octets taken (spliced out of in) during that input */
};

jn_amqp_transport_t *jn_amqp_transport_new(const jn_amqp_conn_config_t *config,
                                           const jn_amqp_handler_t *handler)
{
    jn_amqp_transport_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->conn = jn_amqp_conn_new(config, handler);
    if (!t->conn) {
        free(t);
        return NULL;
    }
    jn_buffer_list_init(&t->in);
    t->spare_want = SPARE_MIN;
    t->sasl_max_frame = config->max_frame_size;
    return t;
}

int jn_amqp_transport_set_sasl(jn_amqp_transport_t *t, const jn_amqp_sasl_mech_ops_t *ops,
                               void *ctx, bool required)
{
    if (t->sasl_set || t->layer != LAYER_HEADER) {
        if (ops && ops->free)
            ops->free(ctx);
        return JN_EINVAL;
    }
    t->sasl_set = true;
    t->sasl_ops = ops;
    t->sasl_ctx = ctx;
    t->sasl_required = required;
    return 0;
}

jn_amqp_transport_t *jn_amqp_transport_new_client(const jn_amqp_conn_config_t *config,
                                                  const jn_amqp_handler_t *handler,
                                                  const jn_amqp_sasl_client_config_t *sasl)
{
    jn_amqp_transport_t *t = jn_amqp_transport_new(config, handler);
    if (!t) {
        if (sasl && sasl->ops && sasl->ops->free)
            sasl->ops->free(sasl->ctx); /* the layer's to free, had it been made */
        return NULL;
    }
    t->sasl_set = true; /* no server layer on a client's */
    t->layer = LAYER_AMQP;
    if (sasl) {
        jn_amqp_sasl_client_config_t cfg = *sasl;
        if (!cfg.max_frame)
            cfg.max_frame = t->sasl_max_frame;
        t->sasl_client = jn_amqp_sasl_client_new(&cfg);
        if (!t->sasl_client) {
            jn_amqp_transport_free(t);
            return NULL;
        }
        t->layer = LAYER_SASL_CLIENT;
    }
    return t;
}

void jn_amqp_transport_free(jn_amqp_transport_t *t)
{
    if (!t)
        return;
    if (!t->sasl && t->sasl_ops && t->sasl_ops->free)
        t->sasl_ops->free(t->sasl_ctx); /* never handed to a SASL layer */
    jn_amqp_conn_free(t->conn);
    jn_amqp_sasl_server_free(t->sasl);
    jn_amqp_sasl_client_free(t->sasl_client);
    jn_buffer_list_free(&t->in);
    for (unsigned i = 0; i < t->nspare; i++)
        jn_buffer_unref(t->spare[i]);
    free(t);
}

jn_amqp_conn_t *jn_amqp_transport_conn(jn_amqp_transport_t *t)
{
    return t->conn;
}

/* ---- input --------------------------------------------------------------- */

int jn_amqp_transport_read_space(jn_amqp_transport_t *t, struct iovec *iov, int max, size_t want)
{
    int n = 0;
    size_t got = 0;
    t->tail_offered = 0;
    jn_buffer_t *tail = t->in.tail;
    if (tail && jn_buffer_space(tail) > 0 && n < max) {
        uint32_t size = jn_buffer_size(tail);
        t->tail_offered = jn_buffer_space(tail);
        iov[n++] = (struct iovec){.iov_base = tail->data + size, .iov_len = t->tail_offered};
        got += t->tail_offered;
    }
    unsigned i = 0;
    for (; n < max && i < t->spare_want && (got < want || n == 0); i++) {
        if (i == t->nspare) {
            jn_buffer_t *b = jn_buffer_new();
            if (!b)
                break;
            t->spare[t->nspare++] = b;
        }
        iov[n++] = (struct iovec){.iov_base = t->spare[i]->data, .iov_len = JN_BUFFER_CAPACITY};
        got += JN_BUFFER_CAPACITY;
    }
    t->spare_offered = i;
    return n > 0 ? n : JN_ENOMEM;
}

/* The spares to offer next, after a read that filled `used` of the
 * spare_offered: double when it filled all the connection may want now,
 * halve (giving the spares past it back) when it took under a quarter. */
static void spare_adapt(jn_amqp_transport_t *t, unsigned used, bool filled)
{
    if (filled && t->spare_offered == t->spare_want && t->spare_want < SPARE_MAX) {
        t->spare_want = t->spare_want * 2 < SPARE_MAX ? t->spare_want * 2 : SPARE_MAX;
    } else if (!filled && used * 4 < t->spare_want && t->spare_want > SPARE_MIN) {
        t->spare_want /= 2;
        while (t->nspare > t->spare_want)
            jn_buffer_unref(t->spare[--t->nspare]);
    }
}

void jn_amqp_transport_read_done(jn_amqp_transport_t *t, size_t n)
{
    bool filled = n == t->tail_offered + (size_t)t->spare_offered * JN_BUFFER_CAPACITY;
    t->held += n;
    size_t k = n < t->tail_offered ? n : t->tail_offered;
    if (k > 0)
        jn_buffer_publish(t->in.tail, (uint32_t)k);
    n -= k;
    t->tail_offered = 0;
    unsigned used = 0;
    while (n > 0 && used < t->nspare) {
        jn_buffer_t *b = t->spare[used++];
        k = n < JN_BUFFER_CAPACITY ? n : JN_BUFFER_CAPACITY;
        jn_buffer_publish(b, (uint32_t)k);
        jn_buffer_list_append(&t->in, b);
        n -= k;
    }
    for (unsigned i = used; i < t->nspare; i++)
        t->spare[i - used] = t->spare[i];
    t->nspare -= used;
    spare_adapt(t, used, filled);
}

size_t jn_amqp_transport_held(const jn_amqp_transport_t *t)
{
    return t->held;
}

/* n octets were consumed: drop the buffers passed whole (the tail too
 * once full: no more octets go to it). */
static void consume(jn_amqp_transport_t *t, size_t n)
{
    t->head_off += n;
    t->held -= n;
    jn_buffer_t *head;
    while ((head = t->in.head) != NULL && t->head_off >= jn_buffer_size(head) &&
           (head != t->in.tail || jn_buffer_space(head) == 0)) {
        t->head_off -= jn_buffer_size(head);
        t->in.head = jn_buffer_next(head);
        if (!t->in.head)
            t->in.tail = NULL;
        jn_buffer_unref(head);
    }
    if (!t->in.head)
        t->head_off = 0;
}

/* The octets held, as one raw view of the chain. */
static void held_view(const jn_amqp_transport_t *t, jn_iter_t *it)
{
    if (t->held == 0 || jn_iter_init(it, t->in.head, t->head_off, t->held, JN_VIEW_RAW) != 0)
        jn_iter_init_bytes(it, "", 0, JN_VIEW_RAW);
}

/* ---- input by reference ------------------------------------------------- */

size_t jn_amqp_transport_take(jn_amqp_transport_t *t, jn_iter_t *payload, jn_buffer_list_t *whole,
                              jn_iter_t *rest)
{
    jn_buffer_list_init(whole);
    jn_iter_init_bytes(rest, NULL, 0, JN_VIEW_RAW);
    size_t total = jn_iter_length(payload);
    if (!t->in_amqp || total < JN_BUFFER_CAPACITY + 2 || payload->prefix_len != 0)
        return 0; /* outside the input, or too short to hold a buffer between two runs */
    /* Walk the runs: the first range of whole buffers that are neither the
     * first run nor the last (where the engine's reading may rest). */
    jn_iter_t w = *payload;
    size_t off = 0, head = 0, taken = 0, run;
    const jn_buffer_t *b, *before = NULL, *first = NULL, *last = NULL;
    const uint8_t *p;
    while ((run = jn_iter_run(&w, &p, &b)) > 0 && off + run < total) {
        if (off > 0 && b && p == b->data && run == JN_BUFFER_CAPACITY) {
            if (!first) {
                first = b;
                head = off;
            }
            last = b;
            taken += run;
        } else if (first) {
            break;
        } else {
            before = b;
        }
        off += run;
        w.cursor = w.limit;
    }
    if (!first)
        return 0;
    jn_buffer_t *after = jn_buffer_next(last);
    JN_CHECK(before && after && jn_buffer_next(before) == first);
    jn_iter_sub(payload, head, payload);
    int rc = jn_iter_init(rest, after, 0, total - head - taken, JN_VIEW_RAW);
    JN_CHECK(rc == 0); /* the payload's octets are published */
    /* Splice [first, last] out of the chain: t's buffers until now, read
     * by nobody else (the engine's reading position is past them, in the
     * last run's buffer or later), full, so no read tops them up. */
    atomic_store_explicit(&((jn_buffer_t *)before)->next, after, memory_order_relaxed);
    atomic_store_explicit(&((jn_buffer_t *)last)->next, NULL, memory_order_relaxed);
    whole->head = (jn_buffer_t *)first;
    whole->tail = (jn_buffer_t *)last;
    t->taken += taken;
    t->held -= taken;
    return taken;
}

/* The peer's first header chooses the layers; nothing is consumed. */
static int choose_layer(jn_amqp_transport_t *t, const jn_iter_t *it)
{
    jn_amqp_proto_t proto = JN_AMQP_PROTO_AMQP;
    jn_amqp_fault_t fault;
    int rc = jn_amqp_header_read(it, &proto, &fault);
    if (rc == JN_AGAIN)
        return JN_AGAIN;
    if ((rc == JN_AMQP_HEADER_SIZE && proto == JN_AMQP_PROTO_SASL) ||
        (t->sasl_required && proto == JN_AMQP_PROTO_AMQP)) {
        /* the SASL layer; when SASL is required, it answers a peer that
         * went without with the SASL header and refuses it (2.2) */
        t->sasl = jn_amqp_sasl_server_new_with(t->sasl_ops, t->sasl_ctx);
        if (!t->sasl) {
            t->sasl_ops = NULL; /* ctx was freed */
            return JN_ENOMEM;
        }
        jn_amqp_sasl_server_set_max_frame(t->sasl, t->sasl_max_frame);
        t->layer = LAYER_SASL;
    } else {
        t->layer = LAYER_AMQP; /* it answers and refuses any other header */
    }
    return 0;
}

int jn_amqp_transport_process(jn_amqp_transport_t *t, uint64_t now_ms)
{
    for (;;) {
        jn_iter_t it;
        held_view(t, &it);
        size_t consumed = 0;
        int rc;
        switch (t->layer) {
        case LAYER_HEADER:
            rc = choose_layer(t, &it);
            if (rc != 0)
                return rc == JN_AGAIN ? 0 : rc;
            continue;
        case LAYER_SASL:
            rc = jn_amqp_sasl_server_input(t->sasl, &it, &consumed);
            consume(t, consumed);
            if (rc != 1)
                return rc;
            t->layer = LAYER_AMQP;
            continue;
        case LAYER_SASL_CLIENT:
            rc = jn_amqp_sasl_client_input(t->sasl_client, &it, &consumed);
            consume(t, consumed);
            if (rc != 1)
                return rc;
            t->layer = LAYER_AMQP;
            continue;
        default:
            t->in_amqp = true;
            t->taken = 0;
            rc = jn_amqp_conn_input(t->conn, &it, now_ms, &consumed);
            t->in_amqp = false;
            consume(t, consumed - t->taken); /* taken octets left the chain */
            return rc;
        }
    }
}

/* ---- output -------------------------------------------------------------- */

/* The SASL layer's output not yet taken (either role's). */
static const uint8_t *sasl_output(jn_amqp_transport_t *t, size_t *len)
{
    *len = 0;
    if (t->sasl)
        return jn_amqp_sasl_server_output(t->sasl, len);
    if (t->sasl_client)
        return jn_amqp_sasl_client_output(t->sasl_client, len);
    return NULL;
}

int jn_amqp_transport_output_iov(jn_amqp_transport_t *t, struct iovec *iov, int max)
{
    int n = 0;
    t->sasl_offered = 0;
    if (max > 0) {
        size_t len;
        const uint8_t *p = sasl_output(t, &len);
        if (len > 0) {
            iov[n++] = (struct iovec){.iov_base = (void *)p, .iov_len = len};
            t->sasl_offered = len;
        }
    }
    if (t->layer == LAYER_AMQP && n < max)
        n += jn_amqp_conn_output_iov(t->conn, iov + n, max - n);
    return n;
}

void jn_amqp_transport_output_done(jn_amqp_transport_t *t, size_t n)
{
    size_t k = n < t->sasl_offered ? n : t->sasl_offered;
    if (k > 0 && t->sasl)
        jn_amqp_sasl_server_output_done(t->sasl, k);
    else if (k > 0)
        jn_amqp_sasl_client_output_done(t->sasl_client, k);
    t->sasl_offered = 0;
    if (n > k)
        jn_amqp_conn_output_done(t->conn, n - k);
}

/* ---- state --------------------------------------------------------------- */

/* The SASL layer's fault, either role's (NULL: none). */
static const jn_amqp_fault_t *sasl_fault(const jn_amqp_transport_t *t)
{
    const jn_amqp_fault_t *f = NULL;
    if (t->sasl)
        f = jn_amqp_sasl_server_fault(t->sasl);
    else if (t->sasl_client)
        f = jn_amqp_sasl_client_fault(t->sasl_client);
    return f && f->condition ? f : NULL;
}

static bool sasl_refused(const jn_amqp_transport_t *t)
{
    return sasl_fault(t) != NULL;
}

int jn_amqp_transport_sasl_offer_ready(jn_amqp_transport_t *t)
{
    return t->sasl ? jn_amqp_sasl_server_offer_ready(t->sasl) : 0;
}

int jn_amqp_transport_sasl_resume(jn_amqp_transport_t *t, int rc, const uint8_t *out, size_t len)
{
    if (!t->sasl)
        return JN_EINVAL;
    int r = jn_amqp_sasl_server_resume(t->sasl, rc, out, len);
    return r == JN_EINVAL || r == JN_ENOMEM ? r : 0;
}

int jn_amqp_transport_sasl_client_resume(jn_amqp_transport_t *t, int rc, const char *mech,
                                         const uint8_t *out, size_t len)
{
    if (!t->sasl_client || t->layer != LAYER_SASL_CLIENT)
        return JN_EINVAL;
    return jn_amqp_sasl_client_resume(t->sasl_client, rc, mech, out, len);
}

int jn_amqp_transport_sasl_refuse(jn_amqp_transport_t *t, int code)
{
    if (!t->sasl)
        return t->layer == LAYER_HEADER ? JN_AGAIN : JN_EINVAL;
    return jn_amqp_sasl_server_refuse(t->sasl, code);
}

bool jn_amqp_transport_finished(const jn_amqp_transport_t *t)
{
    return sasl_refused(t) || jn_amqp_conn_finished(t->conn);
}

const jn_amqp_fault_t *jn_amqp_transport_fault(const jn_amqp_transport_t *t)
{
    return sasl_refused(t) ? sasl_fault(t) : jn_amqp_conn_fault(t->conn);
}

const char *jn_amqp_transport_user(const jn_amqp_transport_t *t)
{
    return t->sasl ? jn_amqp_sasl_server_user(t->sasl) : NULL;
}

const char *jn_amqp_transport_sasl_mechanism(const jn_amqp_transport_t *t)
{
    if (t->sasl_client)
        return jn_amqp_sasl_client_done(t->sasl_client)
                   ? jn_amqp_sasl_client_mechanism(t->sasl_client)
                   : NULL;
    return t->sasl ? jn_amqp_sasl_server_mechanism(t->sasl) : NULL;
}
