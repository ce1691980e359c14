/*
 * session.c — the connection engine's sessions (AMQP 1.0 part 2: 2.5
 * sessions, 2.7.2 begin, 2.7.4 flow, 2.7.8 end): our channels and the
 * peer's mapped to one session each, begin and end both ways, session
 * errors, and the session windows of 2.5.6 (next-incoming-id,
 * next-outgoing-id and the four windows, all wrapping serial arithmetic).
 * Frames on a begun session that concern links go to link.c. The contract
 * is in junction/amqp_engine.h.
 */
#include "engine_private.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define ILLEGAL "amqp:illegal-state"

static jn_amqp_session_t *session_alloc(jn_amqp_conn_t *c, uint32_t max_channel)
{
    int64_t ch = jn_amqp_slots_free_index(&c->sessions, max_channel);
    if (ch < 0)
        return NULL;
    jn_amqp_session_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (jn_amqp_slots_set(&c->sessions, (uint32_t)ch, s) != 0) {
        free(s);
        return NULL;
    }
    s->conn = c;
    s->channel = (uint16_t)ch;
    s->remote_channel = -1;
    s->remote_handle_max = UINT32_MAX;
    return s;
}

jn_amqp_session_t *jn_amqp_session_new(jn_amqp_conn_t *c)
{
    if (c->close_sent || c->refused)
        return NULL;
    return session_alloc(c, c->remote_channel_max);
}

static void session_free(jn_amqp_session_t *s)
{
    jn_amqp_conn_t *c = s->conn;
    for (uint32_t i = 0; i < s->links.cap; i++)
        if (s->links.at[i])
            jn_amqp_link_free(s->links.at[i]);
    jn_amqp_deliveries_free(s, NULL);
    free(s->links.at);
    free(s->remote_links.at);
    (void)jn_amqp_slots_set(&c->sessions, s->channel, NULL);
    if (s->remote_channel >= 0)
        (void)jn_amqp_slots_set(&c->remote_sessions, (uint32_t)s->remote_channel, NULL);
    free(s);
}

void jn_amqp_sessions_free(jn_amqp_conn_t *c)
{
    for (uint32_t i = 0; i < c->sessions.cap; i++)
        if (c->sessions.at[i])
            session_free(c->sessions.at[i]);
}

int jn_amqp_session_begin(jn_amqp_session_t *s, uint32_t next_outgoing_id, uint32_t incoming_window,
                          uint32_t outgoing_window)
{
    jn_amqp_conn_t *c = s->conn;
    if (s->begin_sent || c->close_sent || c->refused)
        return JN_EPERM;
    if (!c->open_sent) { /* begin comes after open (2.4.1): pipelined */
        int rc = jn_amqp_conn_open(c);
        if (rc != 0)
            return rc;
    }
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_BEGIN);
    jn_amqp_begin_t *b = &p.u.begin;
    b->present = JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2) | JN_AMQP_FIELD(3) | JN_AMQP_FIELD(4);
    if (s->remote_channel >= 0) {
        b->present |= JN_AMQP_FIELD(0);
        b->remote_channel = (uint16_t)s->remote_channel;
    }
    b->next_outgoing_id = next_outgoing_id;
    b->incoming_window = incoming_window;
    b->outgoing_window = outgoing_window;
    b->handle_max = JN_AMQP_HANDLE_MAX;
    int rc = jn_amqp_conn_send(c, s->channel, &p);
    if (rc != 0)
        return rc;
    s->begin_sent = true;
    s->initial_outgoing_id = next_outgoing_id;
    s->w.next_outgoing_id = next_outgoing_id;
    s->w.incoming_window = incoming_window;
    s->w.outgoing_window = outgoing_window;
    return 0;
}

int jn_amqp_session_end(jn_amqp_session_t *s, const char *condition, const char *description)
{
    if (!s->begin_sent || s->end_sent || s->conn->close_sent)
        return JN_EPERM;
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_END);
    if (condition) {
        p.u.end.present = JN_AMQP_FIELD(0);
        jn_amqp_error_set(&p.u.end.error, condition, description);
    }
    int rc = jn_amqp_conn_send(s->conn, s->channel, &p);
    if (rc == JN_EOVERFLOW && description)
        return jn_amqp_session_end(s, condition, NULL);
    if (rc == 0)
        s->end_sent = true;
    return rc;
}

int jn_amqp_session_fail(jn_amqp_session_t *s, const char *condition, const char *fmt, ...)
{
    char description[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(description, sizeof description, fmt, ap);
    va_end(ap);
    if (!s->begin_sent) { /* a session the peer began and we did not answer yet */
        int rc = jn_amqp_session_begin(s, 0, 0, 0);
        if (rc != 0)
            return rc;
    }
    int rc = jn_amqp_session_end(s, condition, description);
    return rc == JN_EPERM ? 0 : rc;
}

void jn_amqp_session_flow_fields(const jn_amqp_session_t *s, jn_amqp_perf_t *p)
{
    jn_amqp_perf_init(p, JN_AMQP_FLOW);
    jn_amqp_flow_t *f = &p->u.flow;
    f->present = JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2) | JN_AMQP_FIELD(3);
    if (s->begin_rcvd) { /* next-incoming-id is known once the peer began (2.7.4) */
        f->present |= JN_AMQP_FIELD(0);
        f->next_incoming_id = s->w.next_incoming_id;
    }
    f->incoming_window = s->w.incoming_window;
    f->next_outgoing_id = s->w.next_outgoing_id;
    f->outgoing_window = s->w.outgoing_window;
}

int jn_amqp_session_flow(jn_amqp_session_t *s, bool echo)
{
    if (!s->begin_sent || s->end_sent || s->conn->close_sent)
        return JN_EPERM;
    jn_amqp_perf_t p;
    jn_amqp_session_flow_fields(s, &p);
    if (echo) {
        p.u.flow.present |= JN_AMQP_FIELD(9);
        p.u.flow.echo = true;
    }
    return jn_amqp_conn_send(s->conn, s->channel, &p);
}

/* ---- input --------------------------------------------------------------- */

/* The peer's begin (2.5.1, 2.7.2): a new session, or the answer to ours. */
static int begin_input(jn_amqp_conn_t *c, uint16_t channel, const jn_amqp_begin_t *b)
{
    if (jn_amqp_slots_get(&c->remote_sessions, channel))
        return jn_amqp_conn_refuse(c, ILLEGAL, "begin on channel %u, which has a session", channel);
    jn_amqp_session_t *s;
    if (b->present & JN_AMQP_FIELD(0)) {
        s = jn_amqp_slots_get(&c->sessions, b->remote_channel);
        if (!s || !s->begin_sent || s->remote_channel >= 0)
            return jn_amqp_conn_refuse(c, ILLEGAL,
                                       "begin answers channel %u, where no begin of ours waits",
                                       b->remote_channel);
    } else {
        s = session_alloc(c, c->remote_channel_max);
        if (!s)
            return jn_amqp_conn_refuse(c, "amqp:resource-limit-exceeded",
                                       "no channel of ours is free for the peer's session");
    }
    if (jn_amqp_slots_set(&c->remote_sessions, channel, s) != 0)
        return JN_ENOMEM;
    s->remote_channel = channel;
    s->begin_rcvd = true;
    s->w.next_incoming_id = b->next_outgoing_id;
    s->w.remote_incoming_window = b->incoming_window;
    s->w.remote_outgoing_window = b->outgoing_window;
    s->remote_handle_max = b->handle_max;
    if (c->h.on_begin)
        c->h.on_begin(c->h.ctx, s, b);
    return 0;
}

/* The peer's end (2.5.3, 2.7.8): reported, answered, and s freed. */
static int end_input(jn_amqp_session_t *s, const jn_amqp_end_close_t *e)
{
    jn_amqp_conn_t *c = s->conn;
    s->end_rcvd = true;
    if (c->h.on_end)
        c->h.on_end(c->h.ctx, s, e);
    int rc = 0;
    if (!s->end_sent && !c->close_sent) {
        if (!s->begin_sent) /* the peer ended before we answered its begin */
            rc = jn_amqp_session_begin(s, 0, 0, 0);
        if (rc == 0)
            rc = jn_amqp_session_end(s, NULL, NULL);
    }
    session_free(s);
    return rc == JN_ENOMEM ? JN_ENOMEM : 0;
}

/* The window fields of the peer's flow (2.5.6): what it may still take
 * from us, counted from its next-incoming-id (or our first id when it has
 * none yet), and what it may send. */
static void window_input(jn_amqp_session_t *s, const jn_amqp_flow_t *f)
{
    uint32_t from = (f->present & JN_AMQP_FIELD(0)) ? f->next_incoming_id : s->initial_outgoing_id;
    s->w.remote_incoming_window = from + f->incoming_window - s->w.next_outgoing_id;
    s->w.remote_outgoing_window = f->outgoing_window;
}

int jn_amqp_session_input(jn_amqp_conn_t *c, uint16_t channel, const jn_amqp_perf_t *p,
                          const jn_iter_t *payload)
{
    if (p->code == JN_AMQP_BEGIN)
        return begin_input(c, channel, &p->u.begin);
    jn_amqp_session_t *s = jn_amqp_slots_get(&c->remote_sessions, channel);
    if (!s)
        return jn_amqp_conn_refuse(c, ILLEGAL, "a %s frame on channel %u, which has no session",
                                   jn_amqp_perf_name(p->code), channel);
    if (p->code == JN_AMQP_END)
        return end_input(s, &p->u.end);
    if (s->end_sent)
        return 0; /* we ended: its frames until the peer's end are dropped (2.5.3) */
    if (p->code == JN_AMQP_TRANSFER)
        return jn_amqp_transfer_input(s, &p->u.transfer, payload);
    if (p->code == JN_AMQP_DISPOSITION)
        return jn_amqp_disposition_input(s, &p->u.disposition);
    if (p->code == JN_AMQP_FLOW) {
        window_input(s, &p->u.flow);
        if (!(p->u.flow.present & JN_AMQP_FIELD(4))) {
            int rc = 0;
            if (c->h.on_flow)
                c->h.on_flow(c->h.ctx, s, NULL, &p->u.flow);
            if (p->u.flow.echo && !s->end_sent && s->begin_sent)
                rc = jn_amqp_session_flow(s, false);
            return rc == JN_ENOMEM ? JN_ENOMEM : 0;
        }
    }
    return jn_amqp_link_input(s, p);
}

int jn_amqp_session_set_incoming_window(jn_amqp_session_t *s, uint32_t window)
{
    if (!s->begin_sent || s->end_sent)
        return JN_EPERM;
    s->w.incoming_window = window;
    return jn_amqp_session_flow(s, false);
}

/* ---- accessors ----------------------------------------------------------- */

jn_amqp_window_t jn_amqp_session_window(const jn_amqp_session_t *s)
{
    return s->w;
}

uint16_t jn_amqp_session_channel(const jn_amqp_session_t *s)
{
    return s->channel;
}

int jn_amqp_session_remote_channel(const jn_amqp_session_t *s)
{
    return s->remote_channel;
}

jn_amqp_conn_t *jn_amqp_session_conn(const jn_amqp_session_t *s)
{
    return s->conn;
}

void jn_amqp_session_set_user(jn_amqp_session_t *s, void *user)
{
    s->user = user;
}

void *jn_amqp_session_user(const jn_amqp_session_t *s)
{
    return s->user;
}
