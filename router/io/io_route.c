/*
 * io_route.c — links the router attaches on the core's request
 * (JN_WORK_LINK_ATTACH: link routes and auto-links, router/core/linkroute.c),
 * and the termini they copy.
 *
 * Termini. When a peer attaches an endpoint link, its source and target
 * are encoded (jn_io_termini_encode_IO) and handed to the core with the
 * attach; a link route gives them back with its JN_WORK_LINK_ATTACH so that
 * the link to the container carries the same termini (durability, expiry,
 * timeout, dynamic, distribution mode, node properties, capabilities,
 * outcomes, filter), only the address changed: for a dynamic terminus,
 * which has none, the address its node properties name
 * (x-opt-qd.address), since that is what the next router routes it by. The encoding is private to
 * this file: per terminus, a type octet, the address (length + octets,
 * 0xffffffff for none), four 32-bit fields, two octets, and the four
 * pn_data fields each as their AMQP encoding (length + octets).
 *
 * Session: each such link goes on a session of its own, so that a broker
 * that ends a session over one link's trouble (RabbitMQ 3.10 does) takes
 * no other link with it. When the link is released its session is kept
 * for the next such link (conn->route_idle) rather than ended: proton
 * 0.37 reuses a channel as soon as the router ends its session, before
 * the peer's end arrives, and the peer's answer to a new begin there
 * would meet the frame screen's rule against two answers for one
 * channel. A session the peer ends is freed (io_link.c) and the next
 * begin may then reuse its channel (jn_screen_sessions_begun).
 *
 * Thread: the connection's I/O thread.
 */
#include "io_private.h"

#include <proton/codec.h>

#include <stdlib.h>
#include <string.h>

typedef struct buf {
    uint8_t *p;
    size_t len, cap;
    bool failed;
} buf_t;

static void put(buf_t *b, const void *src, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void put_u32(buf_t *b, uint32_t v)
{
    uint8_t o[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    put(b, o, 4);
}

static void put_data(buf_t *b, pn_data_t *d)
{
    if (!d || pn_data_size(d) == 0) {
        put_u32(b, 0);
        return;
    }
    pn_data_rewind(d);
    char tmp[1024];
    ssize_t n = pn_data_encode(d, tmp, sizeof tmp);
    char *big = NULL;
    if (n == PN_OVERFLOW) {
        size_t need = pn_data_encoded_size(d);
        big = malloc(need);
        n = big ? pn_data_encode(d, big, need) : -1;
    }
    if (n < 0) {
        put_u32(b, 0);
    } else {
        put_u32(b, (uint32_t)n);
        put(b, big ? big : tmp, (size_t)n);
    }
    free(big);
}

static void put_terminus(buf_t *b, pn_terminus_t *t)
{
    uint8_t type = (uint8_t)pn_terminus_get_type(t);
    put(b, &type, 1);
    const char *addr = pn_terminus_get_address(t);
    if (addr) {
        put_u32(b, (uint32_t)strlen(addr));
        put(b, addr, strlen(addr));
    } else {
        put_u32(b, 0xffffffffu);
    }
    put_u32(b, (uint32_t)pn_terminus_get_durability(t));
    put_u32(b, (uint32_t)pn_terminus_get_expiry_policy(t));
    put_u32(b, (uint32_t)pn_terminus_get_timeout(t));
    put_u32(b, 0); /* reserved */
    uint8_t o[2] = {(uint8_t)pn_terminus_is_dynamic(t),
                    (uint8_t)pn_terminus_get_distribution_mode(t)};
    put(b, o, 2);
    put_data(b, pn_terminus_properties(t));
    put_data(b, pn_terminus_capabilities(t));
    put_data(b, pn_terminus_outcomes(t));
    put_data(b, pn_terminus_filter(t));
}

void jn_io_termini_encode_IO(pn_link_t *pl, uint8_t **out, size_t *len)
{
    JN_ASSERT_SOME_IO();
    buf_t b = {0};
    put_terminus(&b, pn_link_remote_source(pl));
    put_terminus(&b, pn_link_remote_target(pl));
    if (b.failed) {
        free(b.p);
        b.p = NULL;
        b.len = 0;
    }
    *out = b.p;
    *len = b.len;
}

typedef struct rd {
    const uint8_t *p;
    size_t len, at;
    bool failed;
} rd_t;

static const uint8_t *take(rd_t *r, size_t n)
{
    if (r->failed || r->len - r->at < n) {
        r->failed = true;
        return NULL;
    }
    const uint8_t *p = r->p + r->at;
    r->at += n;
    return p;
}

static uint32_t take_u32(rd_t *r)
{
    const uint8_t *p = take(r, 4);
    return p ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3] : 0;
}

static void take_data(rd_t *r, pn_data_t *d)
{
    uint32_t n = take_u32(r);
    const uint8_t *p = n ? take(r, n) : NULL;
    pn_data_clear(d);
    if (p)
        pn_data_decode(d, (const char *)p, n);
}

static void take_terminus(rd_t *r, pn_terminus_t *t)
{
    const uint8_t *type = take(r, 1);
    if (type)
        pn_terminus_set_type(t, (pn_terminus_type_t)*type);
    uint32_t alen = take_u32(r);
    if (alen != 0xffffffffu) {
        const uint8_t *a = take(r, alen);
        char *s = a ? strndup((const char *)a, alen) : NULL;
        if (s)
            pn_terminus_set_address(t, s);
        free(s);
    }
    pn_terminus_set_durability(t, (pn_durability_t)take_u32(r));
    pn_terminus_set_expiry_policy(t, (pn_expiry_policy_t)take_u32(r));
    pn_terminus_set_timeout(t, take_u32(r));
    (void)take_u32(r);
    const uint8_t *o = take(r, 2);
    if (o) {
        pn_terminus_set_dynamic(t, o[0] != 0);
        pn_terminus_set_distribution_mode(t, (pn_distribution_mode_t)o[1]);
    }
    take_data(r, pn_terminus_properties(t));
    take_data(r, pn_terminus_capabilities(t));
    take_data(r, pn_terminus_outcomes(t));
    take_data(r, pn_terminus_filter(t));
}

char *jn_io_dnp_address_IO(pn_terminus_t *t)
{
    JN_ASSERT_SOME_IO();
    pn_data_t *d = pn_terminus_properties(t);
    char *out = NULL;
    pn_data_rewind(d);
    if (!pn_data_next(d) || pn_data_type(d) != PN_MAP || !pn_data_enter(d)) {
        pn_data_rewind(d);
        return NULL;
    }
    static const char key[] = "x-opt-qd.address";
    while (!out && pn_data_next(d)) { /* key, then its value */
        pn_type_t kt = pn_data_type(d);
        pn_bytes_t k = kt == PN_SYMBOL   ? pn_data_get_symbol(d)
                       : kt == PN_STRING ? pn_data_get_string(d)
                                         : (pn_bytes_t){0, NULL};
        bool match = k.size == sizeof key - 1 && memcmp(k.start, key, k.size) == 0;
        if (!pn_data_next(d))
            break;
        pn_type_t vt = pn_data_type(d);
        if (match && (vt == PN_STRING || vt == PN_SYMBOL)) {
            pn_bytes_t v = vt == PN_STRING ? pn_data_get_string(d) : pn_data_get_symbol(d);
            out = v.size ? strndup(v.start, v.size) : NULL;
        }
    }
    pn_data_rewind(d);
    return out;
}

int jn_io_dnp_set_address_IO(pn_terminus_t *t, const char *address)
{
    JN_ASSERT_SOME_IO();
    static const char key[] = "x-opt-qd.address";
    pn_data_t *d = pn_terminus_properties(t);
    pn_data_t *nd = pn_data(0);
    if (!nd)
        return JN_ENOMEM;
    pn_data_put_map(nd);
    pn_data_enter(nd);
    pn_data_put_symbol(nd, pn_bytes(sizeof key - 1, key));
    pn_data_put_string(nd, pn_bytes(strlen(address), address));
    pn_data_rewind(d);
    if (pn_data_next(d) && pn_data_type(d) == PN_MAP && pn_data_enter(d)) {
        while (pn_data_next(d)) { /* key, then its value */
            pn_type_t kt = pn_data_type(d);
            pn_bytes_t k = kt == PN_SYMBOL   ? pn_data_get_symbol(d)
                           : kt == PN_STRING ? pn_data_get_string(d)
                                             : (pn_bytes_t){0, NULL};
            bool ours = k.size == sizeof key - 1 && memcmp(k.start, key, k.size) == 0;
            /* fields have symbol keys (AMQP 1.0 3.2, fields): a pair
             * with another key is malformed, and not passed on */
            if (!ours && k.start) {
                if (kt == PN_SYMBOL)
                    pn_data_put_symbol(nd, k);
                else
                    pn_data_put_string(nd, k);
                /* narrowed at the key, the value is the first to append */
                pn_data_narrow(d);
                int rc = pn_data_appendn(nd, d, 1);
                pn_data_widen(d);
                if (rc != 0) {
                    pn_data_free(nd);
                    pn_data_rewind(d);
                    return JN_ENOMEM;
                }
            }
            if (!pn_data_next(d))
                break;
        }
    }
    pn_data_exit(nd);
    int rc = pn_data_copy(d, nd) == 0 ? 0 : JN_ENOMEM;
    pn_data_free(nd);
    pn_data_rewind(d);
    return rc;
}

bool jn_io_coordinator_IO(pn_link_t *pl)
{
    JN_ASSERT_SOME_IO();
    return pn_link_is_receiver(pl) &&
           pn_terminus_get_type(pn_link_remote_target(pl)) == PN_COORDINATOR;
}

/* The link's termini: a copy of the client's (when given) with the
 * address at the container's end replaced, else a plain source and
 * target with it. */
static void set_termini(jn_io_conn_t *conn, pn_link_t *pl, jn_work_t *w)
{
    size_t len = 0;
    const uint8_t *t = w->link ? jn_core_link_termini(w->link, &len) : NULL;
    if (t && len) {
        rd_t r = {.p = t, .len = len};
        take_terminus(&r, pn_link_source(pl));
        take_terminus(&r, pn_link_target(pl));
    } else {
        pn_terminus_set_type(pn_link_source(pl), PN_SOURCE);
        pn_terminus_set_type(pn_link_target(pl), PN_TARGET);
    }
    /* the container's end: the target when the router sends */
    pn_terminus_t *far =
        w->attach.dir == JN_LINK_OUTGOING ? pn_link_target(pl) : pn_link_source(pl);
    if (pn_terminus_is_dynamic(far)) {
        /* the container makes the node (3.5.4): the address the route
         * matched goes in its node properties, which the next router
         * routes it by (a tenant's, in its space: tenant.c); the client's
         * pair is left as it came when it names that address already */
        char *asked = jn_io_dnp_address_IO(far);
        bool same = !w->address || (asked && strcmp(asked, w->address) == 0);
        free(asked);
        if (!same && jn_io_dnp_set_address_IO(far, w->address) != 0)
            JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR,
                   JN_IO_CONN_FMT " Out of memory for a dynamic terminus's node properties: "
                                  "link %s attached with the client's",
                   conn->id, w->attach.name);
        return;
    }
    /* a coordinator has no address (AMQP 1.0 4.5.1) */
    if (pn_terminus_get_type(far) != PN_COORDINATOR)
        pn_terminus_set_address(far, w->address);
}

void jn_io_route_attach_IO(jn_io_conn_t *conn, jn_work_t *w)
{
    JN_ASSERT_IO(conn);
    pn_connection_t *pc = conn->pn_io;
    if (!pc || conn->closing || !conn->core || !w->attach.name)
        return; /* the connection is going: the core learns it from the close */
    pn_session_t *ssn = conn->n_route_idle ? conn->route_idle[--conn->n_route_idle] : NULL;
    if (!ssn) {
        jn_screen_sessions_begun(conn->screen); /* proton may reuse a channel */
        ssn = pn_session(pc);
        if (!ssn)
            return;
        size_t cap = (size_t)conn->endpoint->cfg.max_frame_size * JN_IO_SESSION_FRAMES;
        pn_session_set_incoming_capacity(
            ssn, cap > JN_IO_SESSION_CAPACITY_MAX ? JN_IO_SESSION_CAPACITY_MAX : cap);
        pn_session_open(ssn);
    }
    bool send = w->attach.dir == JN_LINK_OUTGOING;
    char stream_name[23];
    const char *name = w->attach.name;
    if (w->attach.stream) { /* unique on the connection, as 1.19 names its own */
        jn_io_ir_link_name(stream_name);
        name = stream_name;
    }
    pn_link_t *pl = send ? pn_sender(ssn, name) : pn_receiver(ssn, name);
    if (!pl) {
        pn_session_close(ssn);
        return;
    }
    set_termini(conn, pl, w);
    if (w->attach.stream == JN_STREAM_ATTACH_DATA) /* router/core/stream.c */
        jn_io_set_capability(pl, "qd.router-data");
    /* a dynamic node has no address until the container names it */
    bool dynamic = pn_terminus_is_dynamic(send ? pn_link_target(pl) : pn_link_source(pl));
    pn_link_set_snd_settle_mode(pl, w->attach.presettled ? PN_SND_SETTLED : PN_SND_UNSETTLED);
    if (w->attach.edge) {
        /* an edge router's uplink link (docs/protocol.md, "Edge routers") */
        pn_link_set_snd_settle_mode(pl, PN_SND_MIXED);
        if (w->attach.edge == JN_LINK_EDGE_DOWNLINK)
            jn_io_set_capability(pl, "qd.router-edge-downlink");
        char wp[] = "qd.waypoint.0";
        wp[12] = (char)('0' + w->attach.waypoint); /* the phase, for the interior */
        if ((w->attach.waypoint >= 1 && w->attach.waypoint <= 9) || w->attach.fallback)
            jn_io_set_capability(pl, w->attach.fallback ? "qd.fallback" : wp);
        if (w->attach.edge == JN_LINK_EDGE_REPLY)
            pn_terminus_set_dynamic(pn_link_source(pl), true); /* the answers' address */
    }
    pn_link_set_rcv_settle_mode(pl, PN_RCV_FIRST);
    jn_io_link_t *link = jn_io_link_new_IO(conn, pl);
    if (!link) {
        pn_link_close(pl);
        return;
    }
    link->local = true;
    link->routed = !w->attach.edge && !w->attach.stream;
    link->streaming = w->attach.stream;
    link->passthrough = w->passthrough;
    link->edge_reply = w->attach.edge == JN_LINK_EDGE_REPLY;
    jn_link_info_t info = {
        .dir = link->dir,
        .name = name,
        .address = dynamic ? NULL : w->address,
        .presettled = w->attach.presettled,
        .capacity = conn->endpoint->cfg.link_capacity,
        .type = w->attach.edge     ? (jn_link_type_t)w->attach.edge
                : w->attach.stream == JN_STREAM_ATTACH_DATA ? JN_LINK_DATA
                                                            : JN_LINK_ENDPOINT,
        .priority = -1,
        .local = true,
        .attach_ref = w->attach.edge ? NULL : w->attach.ref,
        .fallback = w->attach.edge && w->attach.fallback,
    };
    link->core = jn_core_link_attached_IO(conn->core, link, &info);
    if (!link->core)
        link->detached = true;
    pn_link_open(pl);
    JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_DEBUG, JN_IO_LINK_FMT " Attaching %s link %s to %s", conn->id,
           link->id, send ? "sending" : "receiving", name, w->address ? w->address : "");
}

void jn_io_route_session_idle_IO(jn_io_conn_t *conn, pn_session_t *ssn)
{
    JN_ASSERT_IO(conn);
    pn_state_t st = pn_session_state(ssn);
    if ((st & PN_LOCAL_CLOSED) || (st & PN_REMOTE_CLOSED))
        return;
    for (unsigned i = 0; i < conn->n_route_idle; i++)
        if (conn->route_idle[i] == ssn)
            return;
    if (conn->n_route_idle < sizeof conn->route_idle / sizeof conn->route_idle[0]) {
        conn->route_idle[conn->n_route_idle++] = ssn;
        return;
    }
    pn_session_close(ssn); /* enough kept: the peer's end frees it */
}

void jn_io_route_session_gone_IO(jn_io_conn_t *conn, pn_session_t *ssn)
{
    JN_ASSERT_IO(conn);
    for (unsigned i = 0; i < conn->n_route_idle; i++) {
        if (conn->route_idle[i] == ssn) {
            conn->route_idle[i] = conn->route_idle[--conn->n_route_idle];
            return;
        }
    }
}
