/*
 * test_amqp_transport.c — one connection's stream through the engine
 * (junction/amqp_transport.h), against the client most of the router's users
 * run: proton's own connection driver (linked into this test only), with
 * SASL ANONYMOUS and without SASL. Proven here: the layer chosen by the
 * first header; the SASL exchange then open, begin, attach both ways, a
 * multi-frame transfer in each direction, dispositions and settlement; the
 * payload of each incoming frame read where it lies, in the transport's
 * pooled buffers (zero copy: a reference taken in on_transfer keeps the
 * octets after the transport let them go); a client with no mechanism in
 * common gets nothing; a TLS header is answered with AMQP's and refused; every buffer given back
 * (the pool's leak report). The client's octets reach the transport through reads of 1, 7, 100 and
 * 65536 octets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/amqp_delivery.h>
#include <junction/amqp_transport.h>
#include <junction/pool.h>

#include <proton/connection.h>
#include <proton/connection_driver.h>
#include <proton/delivery.h>
#include <proton/disposition.h>
#include <proton/event.h>
#include <proton/link.h>
#include <proton/sasl.h>
#include <proton/session.h>
#include <proton/terminus.h>
#include <proton/transport.h>

#include <stdio.h>
#include <string.h>

#define BIG 5000 /* octets: several of the router's 1024-octet frames */

static uint8_t big_out[BIG], big_in[BIG];

/* ---- the router's side: an engine user that answers everything ---------- */

typedef struct srv {
    jn_amqp_transport_t *t;
    jn_amqp_link_t *out_link; /* our sender (the client's receiver) */
    bool sent;
    uint8_t payload[2 * BIG];
    size_t npayload;
    int transfers, deliveries, in_buffers, dispositions;
    uint64_t out_state; /* the client's outcome of our delivery */
    bool out_settled;
    jn_buffer_t *kept; /* a buffer of a payload, referenced (zero copy) */
    const uint8_t *kept_at;
    uint8_t kept_octet;
} srv_t;

static void srv_open(void *ctx, jn_amqp_conn_t *c, const jn_amqp_open_t *o)
{
    (void)ctx;
    (void)o;
    assert_int_equal(jn_amqp_conn_open(c), 0);
}

static void srv_begin(void *ctx, jn_amqp_session_t *s, const jn_amqp_begin_t *b)
{
    (void)ctx;
    if (!(b->present & JN_AMQP_FIELD(0)))
        assert_int_equal(jn_amqp_session_begin(s, 0, 1000, 1000), 0);
}

static void srv_attach(void *ctx, jn_amqp_link_t *l, const jn_amqp_attach_t *a)
{
    srv_t *s = ctx;
    jn_amqp_attach_t answer = *a; /* the same termini back */
    answer.present &= JN_AMQP_FIELD(5) | JN_AMQP_FIELD(6);
    assert_int_equal(jn_amqp_link_attach(l, &answer, 0), 0);
    if (a->role == JN_AMQP_SENDER)
        assert_int_equal(jn_amqp_link_flow(l, 10, false, false), 0);
    else
        s->out_link = l;
}

static void srv_flow(void *ctx, jn_amqp_session_t *ss, jn_amqp_link_t *l, const jn_amqp_flow_t *f)
{
    srv_t *s = ctx;
    (void)ss;
    (void)f;
    if (!l || l != s->out_link || s->sent || jn_amqp_link_state(l).credit == 0)
        return;
    jn_amqp_delivery_t *d;
    assert_int_equal(jn_amqp_delivery_new(l, "r1", 2, 0, false, &d), 0);
    jn_iter_t piece;
    jn_iter_init_bytes(&piece, big_out, BIG, JN_VIEW_RAW);
    size_t taken = 0;
    assert_int_equal(jn_amqp_delivery_send(d, &piece, 1, false, &taken), 1);
    assert_int_equal(taken, BIG);
    s->sent = true;
}

static void srv_transfer(void *ctx, jn_amqp_link_t *l, jn_amqp_delivery_t *d,
                         const jn_amqp_transfer_t *t, const jn_iter_t *payload)
{
    srv_t *s = ctx;
    (void)l;
    s->transfers++;
    if (jn_iter_length(payload) > 0) {
        /* read where it lies: in one of the transport's pooled buffers */
        assert_non_null(payload->buffer);
        assert_true(payload->cursor >= payload->buffer->data &&
                    payload->cursor < payload->buffer->data + JN_BUFFER_CAPACITY);
        s->in_buffers++;
        if (!s->kept) {
            s->kept = jn_buffer_ref((jn_buffer_t *)payload->buffer);
            s->kept_at = payload->cursor;
            s->kept_octet = *payload->cursor;
        }
    }
    jn_iter_t it = *payload;
    s->npayload += jn_iter_copy(&it, s->payload + s->npayload, sizeof s->payload - s->npayload);
    if (!t->more) {
        s->deliveries++;
        jn_amqp_state_t accepted = {.code = JN_AMQP_ACCEPTED};
        assert_int_equal(jn_amqp_delivery_update(d, &accepted, true), 0);
    }
}

static void srv_disposition(void *ctx, jn_amqp_delivery_t *d, const jn_amqp_disposition_t *disp)
{
    srv_t *s = ctx;
    s->dispositions++;
    if (disp->present & JN_AMQP_FIELD(4))
        s->out_state = disp->state.code;
    s->out_settled = jn_amqp_delivery_remote_settled(d);
}

/* A PLAIN backend (RFC 4616) for the transport's SASL layer: user "carol",
 * password "secret"; it also offers ANONYMOUS (served by the layer). */
static const char *plain_mechanisms(void *ctx)
{
    (void)ctx;
    return "PLAIN ANONYMOUS";
}

static int plain_start(void *ctx, const char *mech, const uint8_t *resp, size_t len,
                       const uint8_t **out, size_t *out_len)
{
    (void)ctx;
    *out = NULL;
    *out_len = 0;
    if (strcmp(mech, "PLAIN") != 0 || !resp)
        return JN_AMQP_SASL_OUTCOME_AUTH;
    return len == 13 && memcmp(resp, "\0carol\0secret", 13) == 0 ? JN_AMQP_SASL_OUTCOME_OK
                                                                 : JN_AMQP_SASL_OUTCOME_AUTH;
}

static int plain_step(void *ctx, const uint8_t *resp, size_t len, const uint8_t **out,
                      size_t *out_len)
{
    (void)ctx;
    (void)resp;
    (void)len;
    (void)out;
    (void)out_len;
    return JN_AMQP_SASL_OUTCOME_AUTH; /* PLAIN has no second step */
}

static const char *plain_user(void *ctx)
{
    (void)ctx;
    return "carol";
}

static const jn_amqp_sasl_mech_ops_t plain_ops = {
    .mechanisms = plain_mechanisms,
    .start = plain_start,
    .step = plain_step,
    .user = plain_user,
};

static void srv_init(srv_t *s)
{
    memset(s, 0, sizeof *s);
    jn_amqp_conn_config_t cfg = {
        .container_id = "router", .max_frame_size = 1024, .channel_max = 31};
    jn_amqp_handler_t h = {.ctx = s,
                           .on_open = srv_open,
                           .on_begin = srv_begin,
                           .on_attach = srv_attach,
                           .on_flow = srv_flow,
                           .on_transfer = srv_transfer,
                           .on_disposition = srv_disposition};
    s->t = jn_amqp_transport_new(&cfg, &h);
    assert_non_null(s->t);
}

static void srv_fini(srv_t *s)
{
    jn_amqp_transport_free(s->t);
    if (s->kept)
        jn_buffer_unref(s->kept);
}

/* ---- the client: proton's connection driver ----------------------------- */

typedef struct client {
    pn_connection_driver_t d;
    pn_link_t *snd, *rcv;
    bool sent;
    uint64_t snd_state; /* the router's outcome of our delivery */
    bool snd_settled;
    size_t received;
    int deliveries;
    char error[128]; /* the transport's error condition, if any */
} client_t;

/* A client allowing mechs (NULL: no SASL); password not NULL: user
 * "carol" with that password, PLAIN allowed without TLS (set before the
 * driver binds: proton takes them then). */
static void client_init(client_t *c, const char *mechs, const char *password)
{
    memset(c, 0, sizeof *c);
    assert_int_equal(pn_connection_driver_init(&c->d, NULL, NULL), 0);
    if (mechs)
        pn_sasl_allowed_mechs(pn_sasl(c->d.transport), mechs);
    pn_connection_t *conn = c->d.connection;
    pn_connection_set_container(conn, "client");
    pn_connection_set_hostname(conn, "localhost");
    if (password) {
        pn_sasl_set_allow_insecure_mechs(pn_sasl(c->d.transport), true);
        pn_connection_set_user(conn, "carol");
        pn_connection_set_password(conn, password);
    }
    pn_connection_open(conn);
    pn_session_t *ssn = pn_session(conn);
    pn_session_open(ssn);
    c->snd = pn_sender(ssn, "to-router");
    pn_terminus_set_address(pn_link_target(c->snd), "q1");
    pn_link_open(c->snd);
    c->rcv = pn_receiver(ssn, "from-router");
    pn_terminus_set_address(pn_link_source(c->rcv), "q2");
    pn_link_open(c->rcv);
    pn_link_flow(c->rcv, 5);
    pn_connection_driver_bind(&c->d);
}

static void client_delivery(client_t *c, pn_delivery_t *dlv)
{
    pn_link_t *l = pn_delivery_link(dlv);
    if (l == c->snd) {
        c->snd_state = pn_delivery_remote_state(dlv);
        c->snd_settled = pn_delivery_settled(dlv);
        return;
    }
    ssize_t n;
    while ((n = pn_link_recv(l, (char *)big_in + c->received, BIG - c->received)) > 0)
        c->received += (size_t)n;
    if (!pn_delivery_partial(dlv)) {
        c->deliveries++;
        pn_delivery_update(dlv, PN_ACCEPTED);
        pn_delivery_settle(dlv);
    }
}

static void client_event(client_t *c, pn_event_t *e)
{
    switch (pn_event_type(e)) {
    case PN_LINK_FLOW:
        if (pn_event_link(e) == c->snd && !c->sent && pn_link_credit(c->snd) > 0) {
            (void)pn_delivery(c->snd, pn_dtag("c1", 2));
            assert_int_equal(pn_link_send(c->snd, (const char *)big_out, BIG), BIG);
            pn_link_advance(c->snd);
            c->sent = true;
        }
        break;
    case PN_DELIVERY:
        client_delivery(c, pn_event_delivery(e));
        break;
    case PN_TRANSPORT_ERROR: {
        const char *name = pn_condition_get_name(pn_transport_condition(c->d.transport));
        snprintf(c->error, sizeof c->error, "%s", name ? name : "?");
        break;
    }
    default:
        break;
    }
}

/* Carry octets both ways until neither side has any: the client's reach
 * the transport in reads of at most chunk octets, scattered over the
 * iovecs it offers, as readv would. */
static void pump(client_t *c, srv_t *s, size_t chunk)
{
    for (int round = 0; round < 10000; round++) {
        bool moved = false;
        pn_event_t *e;
        while ((e = pn_connection_driver_next_event(&c->d)) != NULL)
            client_event(c, e);
        pn_bytes_t out = pn_connection_driver_write_buffer(&c->d);
        if (out.size > 0 && !jn_amqp_transport_finished(s->t)) {
            size_t n = out.size < chunk ? out.size : chunk, done = 0;
            struct iovec iov[8];
            int k = jn_amqp_transport_read_space(s->t, iov, 8, n);
            assert_true(k >= 1);
            for (int i = 0; i < k && done < n; i++) {
                size_t m = n - done < iov[i].iov_len ? n - done : iov[i].iov_len;
                memcpy(iov[i].iov_base, out.start + done, m);
                done += m;
            }
            jn_amqp_transport_read_done(s->t, done);
            pn_connection_driver_write_done(&c->d, done);
            int rc = jn_amqp_transport_process(s->t, 0);
            assert_true(rc == 0 || rc == JN_EPROTO);
            moved = true;
        }
        struct iovec iov[16];
        int k = jn_amqp_transport_output_iov(s->t, iov, 16);
        size_t written = 0;
        for (int i = 0; i < k; i++) {
            pn_rwbytes_t in = pn_connection_driver_read_buffer(&c->d);
            if (in.size == 0)
                break;
            size_t m = iov[i].iov_len < in.size ? iov[i].iov_len : in.size;
            memcpy(in.start, iov[i].iov_base, m);
            pn_connection_driver_read_done(&c->d, m);
            written += m;
            if (m < iov[i].iov_len)
                break;
        }
        if (k > 0) {
            jn_amqp_transport_output_done(s->t, written);
            moved |= written > 0;
        }
        if (!moved && !pn_connection_driver_has_event(&c->d)) {
            if (jn_amqp_transport_finished(s->t) && !pn_connection_driver_read_closed(&c->d))
                pn_connection_driver_read_close(&c->d); /* the router closed the socket */
            else
                return;
        }
    }
    fail_msg("the pump did not settle");
}

static void exchange(const char *mechs, size_t chunk)
{
    for (size_t i = 0; i < BIG; i++)
        big_out[i] = (uint8_t)(i * 7 + 3);
    memset(big_in, 0, sizeof big_in);
    srv_t s;
    client_t c;
    srv_init(&s);
    bool plain = mechs && strcmp(mechs, "PLAIN") == 0;
    client_init(&c, mechs, plain ? "secret" : NULL);
    if (plain)
        assert_int_equal(jn_amqp_transport_set_sasl(s.t, &plain_ops, NULL, true), 0);
    pump(&c, &s, chunk);
    assert_string_equal(c.error, "");
    assert_null(jn_amqp_transport_fault(s.t)->condition);
    if (plain) {
        assert_string_equal(jn_amqp_transport_user(s.t), "carol");
        assert_string_equal(jn_amqp_transport_sasl_mechanism(s.t), "PLAIN");
    } else if (mechs) {
        assert_string_equal(jn_amqp_transport_user(s.t), "anonymous");
        assert_string_equal(jn_amqp_transport_sasl_mechanism(s.t), "ANONYMOUS");
    } else {
        assert_null(jn_amqp_transport_user(s.t));
    }
    /* client -> router: one delivery over several frames, accepted */
    assert_int_equal(s.deliveries, 1);
    assert_true(s.transfers >= BIG / 1024);
    assert_int_equal(s.in_buffers, s.transfers);
    assert_int_equal(s.npayload, BIG);
    assert_memory_equal(s.payload, big_out, BIG);
    assert_int_equal(c.snd_state, PN_ACCEPTED);
    assert_true(c.snd_settled);
    /* router -> client: one delivery, accepted and settled by the client */
    assert_int_equal(c.deliveries, 1);
    assert_int_equal(c.received, BIG);
    assert_memory_equal(big_in, big_out, BIG);
    assert_int_equal(s.out_state, JN_AMQP_ACCEPTED);
    assert_true(s.out_settled);
    assert_int_equal(jn_amqp_transport_held(s.t), 0);
    /* zero copy: the octet referenced in on_transfer is still there */
    assert_non_null(s.kept);
    assert_int_equal(*s.kept_at, s.kept_octet);
    /* close both ways */
    pn_connection_close(c.d.connection);
    pump(&c, &s, chunk);
    assert_true(jn_amqp_transport_finished(s.t));
    pn_connection_driver_destroy(&c.d);
    srv_fini(&s);
}

static void test_transport_proton_client_sasl_anonymous(void **state)
{
    (void)state;
    const size_t chunks[] = {1, 7, 100, 65536};
    for (size_t i = 0; i < 4; i++)
        exchange("ANONYMOUS", chunks[i]);
}

static void test_transport_proton_client_without_sasl(void **state)
{
    (void)state;
    exchange(NULL, 7);
    exchange(NULL, 65536);
}

/* A client that will only use PLAIN finds no mechanism it may use in our
 * offer and gives up (proton chooses from the offer: it never sends a
 * sasl-init we would refuse; that refusal is test_amqp_sasl.c's): nothing
 * reaches the AMQP layer. */
static void test_transport_client_without_a_common_mechanism_gets_nothing(void **state)
{
    (void)state;
    srv_t s;
    client_t c;
    srv_init(&s);
    client_init(&c, "PLAIN", NULL);
    pump(&c, &s, 100);
    assert_string_not_equal(c.error, ""); /* proton saw no mechanism it may use */
    assert_null(jn_amqp_transport_user(s.t));
    assert_int_equal(s.transfers, 0);
    pn_connection_driver_destroy(&c.d);
    srv_fini(&s);
}

/* PLAIN through a mechanism backend, proton's client sending its
 * credentials in the initial response: the backend's user and mechanism
 * reported, then the same traffic as with ANONYMOUS. */
static void test_transport_proton_client_sasl_plain_through_a_backend(void **state)
{
    (void)state;
    exchange("PLAIN", 7);
    exchange("PLAIN", 65536);
}

/* A wrong password: outcome auth, proton's client reports it, nothing
 * reaches the AMQP layer. */
static void test_transport_proton_client_sasl_plain_wrong_password(void **state)
{
    (void)state;
    srv_t s;
    client_t c;
    srv_init(&s);
    assert_int_equal(jn_amqp_transport_set_sasl(s.t, &plain_ops, NULL, true), 0);
    assert_int_equal(jn_amqp_transport_set_sasl(s.t, &plain_ops, NULL, true), JN_EINVAL);
    client_init(&c, "PLAIN", "wrong");
    pump(&c, &s, 100);
    assert_string_not_equal(c.error, "");
    assert_true(jn_amqp_transport_finished(s.t));
    assert_string_equal(jn_amqp_transport_fault(s.t)->condition, "amqp:unauthorized-access");
    assert_null(jn_amqp_transport_user(s.t));
    assert_int_equal(s.transfers, 0);
    pn_connection_driver_destroy(&c.d);
    srv_fini(&s);
}

/* A backend that defers as the auth-service relay does: no offer until
 * the test says (the service's mechanisms), and its start answers PENDING;
 * the answer (plain_start's) is handed to the transport later. */
typedef struct later {
    bool ready;
    int pendings;
    uint8_t resp[64];
    size_t len;
} later_t;

static const char *later_mechanisms(void *ctx)
{
    return ((later_t *)ctx)->ready ? "PLAIN" : NULL;
}

static int later_start(void *ctx, const char *mech, const uint8_t *resp, size_t len,
                       const uint8_t **out, size_t *out_len)
{
    later_t *l = ctx;
    assert_string_equal(mech, "PLAIN");
    assert_true(resp && len <= sizeof l->resp);
    memcpy(l->resp, resp, len);
    l->len = len;
    l->pendings++;
    *out = NULL;
    *out_len = 0;
    return JN_AMQP_SASL_STEP_PENDING;
}

static const jn_amqp_sasl_mech_ops_t later_ops = {
    .mechanisms = later_mechanisms,
    .start = later_start,
    .step = plain_step,
    .user = plain_user,
};

/* Proton's client against a deferred offer and a pending start, over
 * reads of chunk octets: nothing of the SASL layer's goes out before the
 * offer, the client's init waits for the answer, and a wrong password's
 * answer refuses it. */
static void deferred_exchange(const char *password, size_t chunk)
{
    srv_t s;
    client_t c;
    later_t l = {0};
    srv_init(&s);
    assert_int_equal(jn_amqp_transport_set_sasl(s.t, &later_ops, &l, true), 0);
    client_init(&c, "PLAIN", password);
    pump(&c, &s, chunk);
    struct iovec iov[4];
    assert_int_equal(jn_amqp_transport_output_iov(s.t, iov, 4), 0); /* the offer waits */
    assert_int_equal(jn_amqp_transport_sasl_resume(s.t, 0, NULL, 0), JN_EINVAL);
    l.ready = true;
    assert_int_equal(jn_amqp_transport_sasl_offer_ready(s.t), 0);
    assert_int_equal(jn_amqp_transport_process(s.t, 0), 0);
    pump(&c, &s, chunk);
    assert_int_equal(l.pendings, 1); /* the init came, and waits */
    assert_null(jn_amqp_transport_user(s.t));
    assert_int_equal(jn_amqp_transport_output_iov(s.t, iov, 4), 0);
    const uint8_t *out;
    size_t n;
    int code = plain_start(NULL, "PLAIN", l.resp, l.len, &out, &n);
    assert_int_equal(jn_amqp_transport_sasl_resume(s.t, code, out, n), 0);
    int rc = jn_amqp_transport_process(s.t, 0);
    pump(&c, &s, chunk);
    if (strcmp(password, "secret") == 0) {
        assert_int_equal(rc, 0);
        assert_string_equal(c.error, "");
        assert_string_equal(jn_amqp_transport_user(s.t), "carol");
        assert_int_equal(s.deliveries, 1); /* the client's traffic followed */
        pn_connection_close(c.d.connection);
        pump(&c, &s, chunk);
    } else {
        assert_int_equal(rc, JN_EPROTO);
        assert_string_not_equal(c.error, "");
        assert_string_equal(jn_amqp_transport_fault(s.t)->condition, "amqp:unauthorized-access");
        assert_int_equal(s.transfers, 0);
    }
    assert_true(jn_amqp_transport_finished(s.t));
    pn_connection_driver_destroy(&c.d);
    srv_fini(&s);
}

static void test_transport_sasl_deferred_offer_and_pending_start(void **state)
{
    (void)state;
    const size_t chunks[] = {1, 2, 3, 7, 65536};
    for (size_t i = 0; i < 5; i++) {
        deferred_exchange("secret", chunks[i]);
        deferred_exchange("wrong", chunks[i]);
    }
}

/* SASL required: a client that goes without it gets the SASL header and
 * nothing more; its AMQP never reaches the AMQP layer. */
static void test_transport_sasl_required_refuses_a_client_without_sasl(void **state)
{
    (void)state;
    srv_t s;
    client_t c;
    srv_init(&s);
    assert_int_equal(jn_amqp_transport_set_sasl(s.t, &plain_ops, NULL, true), 0);
    client_init(&c, NULL, NULL);
    pump(&c, &s, 100);
    assert_true(jn_amqp_transport_finished(s.t));
    assert_string_equal(jn_amqp_transport_fault(s.t)->condition, "amqp:connection:framing-error");
    assert_int_equal(s.transfers, 0);
    assert_null(jn_amqp_transport_user(s.t));
    pn_connection_driver_destroy(&c.d);
    srv_fini(&s);
}

static void test_transport_answers_a_tls_header_with_amqp(void **state)
{
    (void)state;
    srv_t s;
    srv_init(&s);
    const uint8_t tls[8] = {'A', 'M', 'Q', 'P', 2, 1, 0, 0};
    struct iovec iov[2];
    assert_true(jn_amqp_transport_read_space(s.t, iov, 2, 8) >= 1);
    memcpy(iov[0].iov_base, tls, 8);
    jn_amqp_transport_read_done(s.t, 8);
    assert_int_equal(jn_amqp_transport_process(s.t, 0), JN_EPROTO);
    assert_true(jn_amqp_transport_finished(s.t));
    assert_string_equal(jn_amqp_transport_fault(s.t)->condition, "amqp:connection:framing-error");
    int k = jn_amqp_transport_output_iov(s.t, iov, 2);
    assert_int_equal(k, 1);
    assert_int_equal(iov[0].iov_len, 8);
    assert_memory_equal(iov[0].iov_base, "AMQP\0\1\0\0", 8);
    jn_amqp_transport_output_done(s.t, 8);
    srv_fini(&s);
}

/* ---- spare buffers follow the reads -------------------------------------- */

static void count_buffers(const jn_pool_stats_t *st, void *ctx)
{
    if (strcmp(st->type_name, "jn_buffer") == 0)
        *(uint64_t *)ctx = st->in_use;
}

static uint64_t buffers_in_use(void)
{
    uint64_t n = 0;
    jn_pool_foreach(count_buffers, &n);
    return n;
}

/* A read of n octets into the space offered for one of up to 64 KiB;
 * returns the fresh buffers (iovecs past the tail's free end) offered. */
static int read_n(jn_amqp_transport_t *t, size_t n)
{
    struct iovec iov[64];
    int k = jn_amqp_transport_read_space(t, iov, 64, 64 * 1024);
    assert_true(k >= 1);
    size_t space = 0;
    for (int i = 0; i < k; i++) {
        memset(iov[i].iov_base, 0, iov[i].iov_len);
        space += iov[i].iov_len;
    }
    if (n == SIZE_MAX)
        n = space;
    jn_amqp_transport_read_done(t, n);
    return iov[0].iov_len == JN_BUFFER_CAPACITY ? k : k - 1;
}

/* The transport offers 2 fresh buffers to a connection's first reads, twice
 * as many after each read that filled them (up to 64: 32 KiB), and half as
 * many after one that took under a quarter, giving the rest back to the
 * pool: an idle connection holds 2 spare buffers, not 64
 * (docs/performance.md, "Memory per connection, link and delivery on both
 * engines"). */
static void test_transport_spare_buffers_follow_the_reads(void **state)
{
    (void)state;
    srv_t s;
    srv_init(&s);
    uint64_t base = buffers_in_use();
    size_t chain = 0; /* buffers the reads filled: held by the input chain */
    for (int want = 2; want <= 64; want *= 2) {
        assert_int_equal(read_n(s.t, SIZE_MAX), want); /* filled: doubles */
        chain += (size_t)want;
    }
    assert_int_equal(read_n(s.t, SIZE_MAX), 64); /* at most 64 */
    chain += 64;
    assert_int_equal(buffers_in_use(), base + chain);
    /* small reads: 64 spares were offered and kept; each small read halves */
    assert_int_equal(read_n(s.t, 100), 64);
    chain += 1;
    assert_int_equal(buffers_in_use(), base + chain + 32);
    for (int want = 32; want > 2; want /= 2) {
        read_n(s.t, 10);
        assert_int_equal(buffers_in_use(), base + chain + (size_t)want / 2);
    }
    read_n(s.t, 10); /* never below 2 */
    assert_int_equal(buffers_in_use(), base + chain + 2);
    /* a filled read grows it again */
    assert_int_equal(read_n(s.t, SIZE_MAX), 2);
    chain += 2;
    assert_int_equal(read_n(s.t, SIZE_MAX), 4);
    srv_fini(&s);
    assert_int_equal(buffers_in_use(), base);
}

static void test_no_leak(void **state)
{
    (void)state;
    jn_pool_thread_exit();
    assert_int_equal(jn_pool_leak_report(stderr), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transport_proton_client_sasl_anonymous),
        cmocka_unit_test(test_transport_proton_client_without_sasl),
        cmocka_unit_test(test_transport_client_without_a_common_mechanism_gets_nothing),
        cmocka_unit_test(test_transport_proton_client_sasl_plain_through_a_backend),
        cmocka_unit_test(test_transport_proton_client_sasl_plain_wrong_password),
        cmocka_unit_test(test_transport_sasl_required_refuses_a_client_without_sasl),
        cmocka_unit_test(test_transport_answers_a_tls_header_with_amqp),
        cmocka_unit_test(test_transport_spare_buffers_follow_the_reads),
        cmocka_unit_test(test_transport_sasl_deferred_offer_and_pending_start),
        cmocka_unit_test(test_no_leak),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    jn_pool_shutdown();
    return failed;
}
