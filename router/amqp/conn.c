/*
 * conn.c — the connection engine's connection layer (AMQP 1.0 part 2:
 * 2.2 the protocol header, 2.3 frames, 2.4 open, close and idle-time-out,
 * 2.7.1 open, 2.7.9 close). It reads the peer's octets in place with
 * stage 1's frame reader and decoder, keeps the connection's state, and
 * hands every other performative (with a transfer's payload view) to
 * session.c; output.c composes what it sends. The contract is in
 * junction/amqp_engine.h; the structs in engine_private.h.
 */
#include "engine_private.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ILLEGAL "amqp:illegal-state"

/* ---- small tables -------------------------------------------------------- */

int jn_amqp_slots_set(jn_amqp_slots_t *t, uint32_t i, void *v)
{
    if (i >= t->cap) {
        if (!v)
            return 0;
        uint32_t cap = t->cap ? t->cap : 4;
        while (cap <= i)
            cap *= 2;
        void **at = realloc(t->at, cap * sizeof *at);
        if (!at)
            return JN_ENOMEM;
        memset(at + t->cap, 0, (cap - t->cap) * sizeof *at);
        t->at = at;
        t->cap = cap;
    }
    t->at[i] = v;
    return 0;
}

int64_t jn_amqp_slots_free_index(const jn_amqp_slots_t *t, uint32_t max)
{
    for (uint64_t i = 0; i <= max; i++)
        if (i >= t->cap || !t->at[i])
            return (int64_t)i;
    return -1;
}

void jn_amqp_error_set(jn_amqp_error_t *err, const char *condition, const char *description)
{
    err->present = JN_AMQP_FIELD(0);
    jn_iter_init_string(&err->condition, condition, JN_VIEW_RAW);
    if (description) {
        err->present |= JN_AMQP_FIELD(1);
        jn_iter_init_string(&err->description, description, JN_VIEW_RAW);
    }
}

/* ---- life ---------------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* A copy of an encoded field of our open (NULL stays NULL). Returns false
 * when memory runs out. */
static bool dup_field(const uint8_t **field, size_t len)
{
    if (!*field || len == 0) {
        *field = NULL;
        return true;
    }
    uint8_t *copy = malloc(len);
    if (copy)
        memcpy(copy, *field, len);
    *field = copy;
    return copy != NULL;
}

jn_amqp_conn_t *jn_amqp_conn_new(const jn_amqp_conn_config_t *config,
                                 const jn_amqp_handler_t *handler)
{
    if (!config->container_id || config->max_frame_size < JN_AMQP_MIN_MAX_FRAME_SIZE)
        return NULL;
    jn_amqp_conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cfg = *config;
    c->cfg.container_id = strdup(config->container_id);
    c->cfg.hostname = dup_or_null(config->hostname);
    /* every field copied (or set to NULL) before any failure is acted on,
     * so that jn_amqp_conn_free never frees the caller's octets */
    bool offered = dup_field(&c->cfg.offered_capabilities, config->offered_capabilities_len);
    bool desired = dup_field(&c->cfg.desired_capabilities, config->desired_capabilities_len);
    bool props = dup_field(&c->cfg.properties, config->properties_len);
    bool fields = offered && desired && props;
    if (!c->cfg.container_id || (config->hostname && !c->cfg.hostname) || !fields) {
        jn_amqp_conn_free(c);
        return NULL;
    }
    if (handler)
        c->h = *handler;
    c->remote_max_frame = JN_AMQP_MIN_MAX_FRAME_SIZE; /* until the peer's open, 2.4.1 */
    c->remote_channel_max = 65535;
    jn_encoder_init(&c->out);
    return c;
}

void jn_amqp_conn_free(jn_amqp_conn_t *c)
{
    if (!c)
        return;
    jn_amqp_sessions_free(c);
    jn_amqp_out_free(c);
    free(c->sessions.at);
    free(c->remote_sessions.at);
    free((char *)c->cfg.container_id);
    free((char *)c->cfg.hostname);
    free((void *)c->cfg.offered_capabilities);
    free((void *)c->cfg.desired_capabilities);
    free((void *)c->cfg.properties);
    free(c);
}

/* ---- open and close (2.4.1, 2.4.3) --------------------------------------- */

static void open_fields(const jn_amqp_conn_t *c, jn_amqp_open_t *o)
{
    o->present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(2) | JN_AMQP_FIELD(3);
    jn_iter_init_string(&o->container_id, c->cfg.container_id, JN_VIEW_RAW);
    if (c->cfg.hostname) {
        o->present |= JN_AMQP_FIELD(1);
        jn_iter_init_string(&o->hostname, c->cfg.hostname, JN_VIEW_RAW);
    }
    o->max_frame_size = c->cfg.max_frame_size;
    o->channel_max = c->cfg.channel_max;
    if (c->cfg.idle_time_out) {
        o->present |= JN_AMQP_FIELD(4);
        o->idle_time_out = c->cfg.idle_time_out_announced ? c->cfg.idle_time_out_announced
                                                          : c->cfg.idle_time_out;
    }
    const struct {
        const uint8_t *data;
        size_t len;
        jn_iter_t *field;
        unsigned bit;
    } enc[3] = {
        {c->cfg.offered_capabilities, c->cfg.offered_capabilities_len, &o->offered_capabilities, 7},
        {c->cfg.desired_capabilities, c->cfg.desired_capabilities_len, &o->desired_capabilities, 8},
        {c->cfg.properties, c->cfg.properties_len, &o->properties, 9},
    };
    for (int i = 0; i < 3; i++) {
        if (enc[i].data) {
            o->present |= JN_AMQP_FIELD(enc[i].bit);
            jn_iter_init_bytes(enc[i].field, enc[i].data, enc[i].len, JN_VIEW_RAW);
        }
    }
}

int jn_amqp_conn_open(jn_amqp_conn_t *c)
{
    if (c->open_sent || c->close_sent || c->refused)
        return JN_EPERM;
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_OPEN);
    open_fields(c, &p.u.open);
    int rc = jn_amqp_conn_send(c, 0, &p);
    if (rc == 0) {
        c->open_sent = true;
        c->last_in = c->now > c->last_in ? c->now : c->last_in; /* the idle clock starts */
    }
    return rc;
}

int jn_amqp_conn_set_limits(jn_amqp_conn_t *c, uint32_t max_frame_size, int32_t channel_max)
{
    if (c->open_sent)
        return JN_EPERM;
    if (max_frame_size)
        c->cfg.max_frame_size = max_frame_size < JN_AMQP_MIN_MAX_FRAME_SIZE
                                    ? JN_AMQP_MIN_MAX_FRAME_SIZE
                                    : max_frame_size;
    if (channel_max >= 0)
        c->cfg.channel_max = (uint16_t)(channel_max > 65535 ? 65535 : channel_max);
    return 0;
}

int jn_amqp_conn_close(jn_amqp_conn_t *c, const char *condition, const char *description)
{
    if (c->close_sent || (c->refused && !c->header_rcvd))
        return JN_EPERM;
    if (!c->open_sent) { /* close comes after an open (2.4.3) */
        int rc = jn_amqp_conn_open(c);
        if (rc != 0)
            return rc;
    }
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_CLOSE);
    if (condition) {
        p.u.close.present = JN_AMQP_FIELD(0);
        jn_amqp_error_set(&p.u.close.error, condition, description);
    }
    int rc = jn_amqp_conn_send(c, 0, &p);
    if (rc == JN_EOVERFLOW && description) /* the peer's max-frame-size: no description */
        return jn_amqp_conn_close(c, condition, NULL);
    if (rc == 0)
        c->close_sent = true;
    return rc;
}

int jn_amqp_conn_refuse(jn_amqp_conn_t *c, const char *condition, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->fault.description, sizeof c->fault.description, fmt, ap);
    va_end(ap);
    c->fault.condition = condition;
    int rc = c->close_sent ? 0 : jn_amqp_conn_close(c, condition, c->fault.description);
    c->refused = true;
    if (c->h.on_closed)
        c->h.on_closed(c->h.ctx, c, &c->fault);
    return rc == JN_ENOMEM ? JN_ENOMEM : JN_EPROTO;
}

bool jn_amqp_conn_finished(const jn_amqp_conn_t *c)
{
    return c->refused || (c->close_sent && c->close_rcvd);
}

const jn_amqp_fault_t *jn_amqp_conn_fault(const jn_amqp_conn_t *c)
{
    return &c->fault;
}

uint32_t jn_amqp_conn_remote_max_frame(const jn_amqp_conn_t *c)
{
    return c->remote_max_frame;
}

uint16_t jn_amqp_conn_remote_channel_max(const jn_amqp_conn_t *c)
{
    return c->remote_channel_max;
}

uint32_t jn_amqp_conn_remote_idle_time_out(const jn_amqp_conn_t *c)
{
    return c->remote_idle_time_out;
}

/* ---- input --------------------------------------------------------------- */

/* The peer's open (2.4.1, 2.7.1): its limits on what we send. */
static int open_input(jn_amqp_conn_t *c, const jn_amqp_open_t *o)
{
    if (c->open_rcvd)
        return jn_amqp_conn_refuse(c, ILLEGAL, "a second open");
    c->open_rcvd = true;
    if (o->max_frame_size < JN_AMQP_MIN_MAX_FRAME_SIZE) /* our close goes within 512 */
        return jn_amqp_conn_refuse(c, "amqp:invalid-field", "open's max-frame-size %u is below 512",
                                   o->max_frame_size);
    uint32_t floor = c->cfg.min_peer_idle_time_out;
    c->remote_idle_time_out = o->idle_time_out; /* known also when refused below */
    if (o->idle_time_out && o->idle_time_out < floor) /* 2.4.5: one we will not meet */
        return jn_amqp_conn_refuse(c, "amqp:resource-limit-exceeded",
                                   "idle-time-out of %u ms is below this router's minimum of %u ms",
                                   o->idle_time_out, floor);
    c->remote_max_frame = o->max_frame_size; /* the decoder gives the default */
    c->remote_channel_max = o->channel_max;
    if (c->h.on_open)
        c->h.on_open(c->h.ctx, c, o);
    return 0;
}

/* The peer's close (2.4.3, 2.7.9): reported, then answered. */
static int close_input(jn_amqp_conn_t *c, const jn_amqp_end_close_t *cl)
{
    c->close_rcvd = true;
    if (c->h.on_close)
        c->h.on_close(c->h.ctx, c, cl);
    if (c->close_sent)
        return 0;
    int rc = jn_amqp_conn_close(c, NULL, NULL);
    return rc == JN_EPERM ? 0 : rc;
}

/* One whole frame (2.3.2, 2.4): an empty one is a heartbeat (2.4.5). */
static int frame_input(jn_amqp_conn_t *c, const jn_amqp_frame_t *f)
{
    if (f->body_size == 0)
        return 0;
    jn_amqp_perf_t p;
    jn_amqp_fault_t fault;
    jn_iter_t payload;
    /* p's views may borrow it: it outlives the frame's handling */
    uint8_t scratch[JN_AMQP_PERF_HEAD];
    if (jn_amqp_perf_decode_frame(&f->body, &p, &payload, scratch, &fault) != 0)
        return jn_amqp_conn_refuse(c, fault.condition, "%s", fault.description);
    if (!c->open_rcvd && p.code != JN_AMQP_OPEN)
        return jn_amqp_conn_refuse(c, ILLEGAL, "a %s frame before open", jn_amqp_perf_name(p.code));
    if (c->close_sent && p.code != JN_AMQP_CLOSE)
        return 0; /* we closed: the peer's frames until its close are dropped (2.4.3) */
    switch (p.code) {
    case JN_AMQP_OPEN:
        return open_input(c, &p.u.open);
    case JN_AMQP_CLOSE:
        return close_input(c, &p.u.close);
    default:
        return jn_amqp_session_input(c, f->channel, &p, &payload);
    }
}

/* The peer's protocol header (2.2): AMQP 1.0.0 id 0 only; anything else is
 * answered with ours and nothing more. */
static int header_input(jn_amqp_conn_t *c, jn_iter_t *it)
{
    jn_amqp_proto_t proto = JN_AMQP_PROTO_AMQP;
    int rc = jn_amqp_header_read(it, &proto, &c->fault);
    if (rc == JN_AGAIN)
        return JN_AGAIN;
    if (rc == JN_AMQP_HEADER_SIZE && proto != JN_AMQP_PROTO_AMQP)
        rc = jn_amqp_fail(&c->fault, "amqp:connection:framing-error",
                          "protocol header with protocol id %d where AMQP (0) belongs", proto);
    if (rc < 0) {
        rc = jn_amqp_out_header(c);
        c->refused = true;
        if (c->h.on_closed)
            c->h.on_closed(c->h.ctx, c, &c->fault);
        return rc == JN_ENOMEM ? JN_ENOMEM : JN_EPROTO;
    }
    jn_iter_advance(it, JN_AMQP_HEADER_SIZE);
    c->header_rcvd = true;
    return jn_amqp_out_header(c);
}

static int frames_input(jn_amqp_conn_t *c, jn_iter_t *it)
{
    while (!c->refused && !c->close_rcvd) {
        jn_amqp_frame_t f;
        jn_amqp_fault_t fault;
        int rc = jn_amqp_frame_next(it, JN_AMQP_FRAME_AMQP, c->cfg.max_frame_size,
                                    c->cfg.channel_max, &f, &fault);
        if (rc == JN_AGAIN)
            return 0;
        if (rc < 0)
            return jn_amqp_conn_refuse(c, fault.condition, "%s", fault.description);
        rc = frame_input(c, &f); /* it is past the frame */
        if (rc != 0)
            return rc;
    }
    return 0;
}

int jn_amqp_conn_input(jn_amqp_conn_t *c, const jn_iter_t *in, uint64_t now_ms, size_t *consumed)
{
    size_t len = jn_iter_length(in);
    c->now = now_ms;
    *consumed = 0;
    if (c->refused || c->close_rcvd) {
        *consumed = len; /* nothing more is read (2.4.3) */
        return c->refused ? JN_EPROTO : 0;
    }
    if (len > 0 || !c->clock_set)
        c->last_in = now_ms;
    c->clock_set = true;
    jn_iter_t it = *in;
    int rc = 0;
    if (!c->header_rcvd)
        rc = header_input(c, &it);
    if (rc == 0)
        rc = frames_input(c, &it);
    if (rc == JN_AGAIN)
        rc = 0;
    *consumed = c->refused || c->close_rcvd ? len : len - jn_iter_length(&it);
    return rc;
}

/* ---- idle-time-out (2.4.5) ----------------------------------------------- */

uint64_t jn_amqp_conn_tick(jn_amqp_conn_t *c, uint64_t now_ms)
{
    c->now = now_ms;
    if (!c->clock_set) {
        c->last_in = c->last_out = now_ms;
        c->clock_set = true;
    }
    if (c->refused || c->close_sent)
        return UINT64_MAX;
    uint64_t next = UINT64_MAX;
    if (c->cfg.idle_time_out && c->open_sent) {
        uint64_t deadline = c->last_in + c->cfg.idle_time_out;
        if (now_ms >= deadline) {
            (void)jn_amqp_conn_refuse(c, "amqp:resource-limit-exceeded",
                                      "no frame from the peer for %u ms (idle-time-out)",
                                      c->cfg.idle_time_out);
            return UINT64_MAX;
        }
        next = deadline;
    }
    if (c->open_rcvd && c->remote_idle_time_out && c->header_sent) {
        uint64_t half = c->remote_idle_time_out / 2 ? c->remote_idle_time_out / 2 : 1;
        if (now_ms >= c->last_out + half) {
            uint8_t h[JN_AMQP_FRAME_HEADER_SIZE];
            jn_amqp_heartbeat_write(h);
            jn_enc_raw(&c->out, h, sizeof h);
            c->last_out = now_ms;
        }
        if (c->last_out + half < next)
            next = c->last_out + half;
    }
    return next;
}
