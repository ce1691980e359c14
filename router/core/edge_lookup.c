/*
 * edge_lookup.c — link routes and edge routers (mesh-protocol section 11;
 * docs/design.md, "Edge routers"; the wire in docs/protocol.md).
 *
 * An edge router knows only its own link routes. So that its clients can
 * reach a broker behind the mesh, it asks its interior, for every endpoint
 * attach with an address that no local link route serves, whether the
 * address is link-routed: a pre-settled request to _$qd.addr_lookup,
 * answered to the edge's dynamic reply address with [is-link-route,
 * has-destinations]. The attach waits (JN_LINK_ST_ROUTING) for the answer:
 * a link route with a container somewhere sends the attach up the uplink
 * with the client's name and termini (the interior routes it on), one
 * without is refused, anything else (not a link route, no answer within
 * JN_EDGE_LOOKUP_TIMEOUT_MS, the uplink lost) binds the link to its address
 * as if no lookup had been made.
 *
 * So that clients of the mesh reach a broker behind the edge, each link
 * route configured on the edge whose container is connected there gets a
 * proxy on the interior: a router.connection.linkRoute CREATE on the
 * interior's $management over the uplink, DELETE when the container goes.
 * The interior's attaches for it arrive on the uplink and the edge routes
 * them by its own link route.
 *
 * The interior's side is the lookup service: a link of an edge connection
 * with target _$qd.addr_lookup (JN_LINK_EDGE_LOOKUP), each request
 * answered from the link-route table (linkroute_table.c).
 *
 * Core thread only.
 */
#include "delivery.h"

#include <junction/compose.h>
#include <junction/decoder.h>
#include <junction/time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOOKUP_ADDRESS   "_$qd.addr_lookup"
#define LOOKUP_VERSION   1u
#define LOOKUP_OPCODE    1u /* link-route lookup */
#define LOOKUP_OK        0u
#define LOOKUP_NOT_FOUND 3u
#define PROXY_TYPE       "org.apache.qpid.dispatch.router.connection.linkRoute"
#define MGMT_TIMEOUT_MS  10000

typedef enum {
    PX_NEW = 0,
    PX_CREATING,
    PX_CREATED,
    PX_CANCELLED,
    PX_DELETED,
    PX_DELETING
} px_state_t;

/* A link route of the edge's with its container here, and its proxy on
 * the interior. */
typedef struct proxy {
    struct proxy *next;
    char *key;      /* C/D/E/F + text */
    char *name;     /* <edge-id>/proxyLinkRoute/<key> */
    char *identity; /* the interior's, once created */
    px_state_t state;
    bool seen; /* still served (sync) */
} proxy_t;

typedef enum { RQ_LOOKUP = 0, RQ_CREATE, RQ_DELETE } rq_kind_t;

typedef struct edge_rq {
    struct edge_rq *next;
    char cid[40]; /* correlation-id */
    rq_kind_t kind;
    jn_core_link_t *link; /* lookup: the waiting link (referenced) */
    bool sent;            /* lookup: the request went (else it waits for credit) */
    proxy_t *proxy;       /* create / delete */
    int64_t deadline_ms;
} edge_rq_t;

/* The edge's two clients on its uplink: lookups and management. */
typedef struct jn_edge_clients {
    jn_core_link_t *lookup_out, *mgmt_out;     /* senders */
    jn_core_link_t *lookup_reply, *mgmt_reply; /* dynamic receivers */
    char *lookup_reply_to, *mgmt_reply_to;     /* their addresses (heap) */
    edge_rq_t *rqs;
    uint32_t next_cid;
    proxy_t *proxies;
    bool proxies_dirty;
} jn_edge_clients_t;

/* ---- small decoding helpers ----------------------------------------------- */

/* The value of key (a str or sym) in the map at the start of raw. */
static bool map_get(const jn_iter_t *raw, const char *key, jn_field_t *out)
{
    jn_decoder_t d, m;
    jn_field_t f, k;
    jn_decoder_init(&d, raw, true);
    if (jn_decoder_next(&d, &f) != 1 || f.type != JN_TYPE_MAP || jn_decoder_enter(&d, &f, &m) != 0)
        return false;
    while (jn_decoder_next(&m, &k) == 1) {
        if (jn_decoder_next(&m, out) != 1)
            return false;
        if ((k.type == JN_TYPE_STRING || k.type == JN_TYPE_SYMBOL) &&
            jn_field_equal_string(&k, key))
            return true;
    }
    return false;
}

static bool map_uint(const jn_iter_t *raw, const char *key, uint64_t *out)
{
    jn_field_t v;
    return map_get(raw, key, &v) && jn_field_is_integer(&v) && jn_field_to_uint64(&v, out) == 0;
}

static bool field_cstring(const jn_field_t *f, char *buf, size_t cap)
{
    if ((f->type != JN_TYPE_STRING && f->type != JN_TYPE_SYMBOL) || f->size >= cap)
        return false;
    size_t n = jn_iter_copy_string(&f->payload, buf, cap);
    return n == f->size && strlen(buf) == n;
}

/* A str or sym field of any length as a heap string (NUL-free), or NULL
 * (not a string, a NUL inside, out of memory). The caller frees it. */
static char *field_strdup(const jn_field_t *f)
{
    if (f->type != JN_TYPE_STRING && f->type != JN_TYPE_SYMBOL)
        return NULL;
    char *s = malloc((size_t)f->size + 1);
    if (s && !field_cstring(f, s, (size_t)f->size + 1)) {
        free(s);
        s = NULL;
    }
    return s;
}

/* reply-to (into buf, "" when none) and correlation-id (encoded; *has). */
static void props_get(const jn_message_t *msg, char *reply_to, size_t cap, jn_iter_t *cid,
                      bool *has_cid)
{
    reply_to[0] = '\0';
    *has_cid = false;
    jn_iter_t raw;
    if (jn_message_section(msg, JN_SEC_PROPERTIES, &raw) != 0)
        return;
    jn_decoder_t d, items;
    jn_field_t f;
    jn_decoder_init(&d, &raw, true);
    if (jn_decoder_next(&d, &f) != 1 || f.type != JN_TYPE_LIST || jn_decoder_enter(&d, &f, &items))
        return;
    for (unsigned i = 0; i < 6 && jn_decoder_next(&items, &f) == 1; i++) {
        if (i == 4 && !field_cstring(&f, reply_to, cap))
            reply_to[0] = '\0';
        if (i == 5 && f.type != JN_TYPE_NULL) {
            *cid = f.encoded;
            *has_cid = true;
        }
    }
}

/* The body's amqp-value list, entered (d: the outer decoder's storage). */
static bool body_list(jn_message_t *msg, jn_decoder_t *d, jn_decoder_t *list)
{
    jn_iter_t body;
    if (jn_message_parse(msg, JN_DEPTH_ALL) != 0 || jn_message_section(msg, JN_SEC_BODY, &body))
        return false;
    jn_field_t f;
    jn_decoder_init(d, &body, true);
    if (jn_decoder_next(d, &f) != 1 || f.type != JN_TYPE_LIST)
        return false;
    return jn_decoder_enter(d, &f, list) == 0;
}

/* A served delivery is consumed: settled accepted (ok) or rejected. */
static void consume_CT(jn_delivery_t *dlv, bool ok)
{
    dlv->ct.served = ok;
    jn_forward_to_links_CT(dlv, NULL, 0, false);
}

/* Start a lookup request or answer in e (initialised here): the header and
 * properties from props, the application properties (version, opcode and,
 * for an answer, *status), then the amqp-value list, left open for the
 * caller's fields. Core thread (any: it only encodes). */
static void lookup_head(jn_encoder_t *e, const jn_compose_props_t *props, const uint32_t *status)
{
    jn_encoder_init(e);
    jn_compose_head(e, props);
    jn_enc_descriptor_ulong(e, JN_SECTION_APPLICATION_PROPERTIES);
    jn_enc_map_begin(e);
    jn_enc_cstring(e, "version");
    jn_enc_uint(e, LOOKUP_VERSION);
    jn_enc_cstring(e, "opcode");
    jn_enc_uint(e, LOOKUP_OPCODE);
    if (status) {
        jn_enc_cstring(e, "status");
        jn_enc_uint(e, *status);
    }
    jn_enc_map_end(e);
    jn_enc_descriptor_ulong(e, JN_SECTION_AMQP_VALUE);
    jn_enc_list_begin(e);
}

/* ---- the interior: the lookup service ---------------------------------------- */

/* Compose and route the answer to a lookup. */
static void lookup_answer_CT(jn_core_t *core, const char *reply_to, const jn_iter_t *cid,
                             uint32_t status, bool is_lr, bool has_dest)
{
    JN_ASSERT_CT(core);
    jn_encoder_t e;
    jn_compose_props_t props = {.to = reply_to, .correlation = cid, .fields = 6};
    lookup_head(&e, &props, &status);
    jn_enc_bool(&e, is_lr);
    jn_enc_bool(&e, has_dest);
    jn_enc_list_end(&e);
    int rc = 0;
    jn_message_t *msg = jn_compose_message(&e, JN_DEPTH_PROPERTIES, &rc);
    if (!msg || (rc = jn_core_send_CT(core, msg)) != 0)
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_ERROR, "Cannot answer a link-route lookup: %s",
               jn_strerror(rc));
}

void jn_edge_lookup_arrived_CT(jn_delivery_t *dlv)
{
    jn_core_conn_t *conn = dlv->link->conn;
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    jn_message_t *msg = dlv->message;
    if (jn_message_is_aborted(msg)) {
        consume_CT(dlv, false);
        return;
    }
    const char *bad = NULL;
    char reply_to[256], *address = NULL; /* any length: an edge asks about every address */
    jn_iter_t cid, ap;
    bool has_cid = false, in = false;
    uint64_t version = 0, opcode = 0;
    jn_decoder_t outer, list;
    jn_field_t a, b;
    if (jn_message_parse(msg, JN_DEPTH_ALL) != 0 ||
        jn_message_section(msg, JN_SEC_APPLICATION_PROPERTIES, &ap) != 0)
        bad = "no application properties";
    else if (!map_uint(&ap, "version", &version) || version != LOOKUP_VERSION)
        bad = "no version or not version 1";
    else if (!map_uint(&ap, "opcode", &opcode) || opcode != LOOKUP_OPCODE)
        bad = "no opcode or not a link-route lookup";
    if (!bad) {
        props_get(msg, reply_to, sizeof reply_to, &cid, &has_cid);
        if (!reply_to[0] || !has_cid)
            bad = "no reply-to or correlation-id";
        else if (!body_list(msg, &outer, &list) || jn_decoder_next(&list, &a) != 1 ||
                 !(address = field_strdup(&a)) || jn_decoder_next(&list, &b) != 1 ||
                 b.type != JN_TYPE_BOOLEAN)
            bad = "the body is not [address, direction]";
        else
            in = b.value.b; /* true: the link comes in to the router */
    }
    if (bad) {
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_ERROR,
               "[C%" PRIu64 "] Invalid link-route lookup from edge '%s': %s", conn->conn_id,
               conn->container_id ? conn->container_id : "", bad);
        free(address);
        jn_forward_reject_CT(dlv, "amqp:invalid-field", bad); /* as 1.19: rejected */
        consume_CT(dlv, false);
        return;
    }
    bool has_dest = false;
    bool is_lr =
        jn_lr_lookup_CT(core, address, in ? JN_LINK_INCOMING : JN_LINK_OUTGOING, conn, &has_dest);
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_DEBUG,
           "[C%" PRIu64 "] Link-route lookup of %s (%s): link route %s, destinations %s",
           conn->conn_id, address, in ? "in" : "out", is_lr ? "yes" : "no",
           has_dest ? "yes" : "no");
    lookup_answer_CT(core, reply_to, &cid, is_lr ? LOOKUP_OK : LOOKUP_NOT_FOUND, is_lr, has_dest);
    free(address);
    consume_CT(dlv, true);
}

/* ---- the edge: requests --------------------------------------------------------- */

static jn_edge_clients_t *clients_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    if (!core->ct.edge_clients)
        core->ct.edge_clients = calloc(1, sizeof(jn_edge_clients_t));
    return core->ct.edge_clients;
}

/* Send a request message on link (pre-settled): application properties
 * and body already encoded in e after the head is written here. */
static bool send_rq_CT(jn_core_t *core, jn_core_link_t *link, jn_encoder_t *e)
{
    JN_ASSERT_CT(core);
    int rc = 0;
    jn_message_t *msg = jn_compose_message(e, JN_DEPTH_PROPERTIES, &rc);
    if (!msg)
        return false;
    jn_delivery_t *dlv = jn_delivery_internal_CT(core, msg);
    if (!dlv) {
        jn_message_unref(msg);
        return false;
    }
    jn_forward_to_links_CT(dlv, &link, 1, true);
    return true;
}

/* A new request record with a fresh correlation-id (1.19's form). */
static edge_rq_t *rq_new_CT(jn_core_t *core, jn_edge_clients_t *c, rq_kind_t kind, int64_t ms)
{
    JN_ASSERT_CT(core);
    edge_rq_t *rq = calloc(1, sizeof *rq);
    if (!rq)
        return NULL;
    rq->kind = kind;
    snprintf(rq->cid, sizeof rq->cid, "client-%016" PRIx64 "%08" PRIx32, (uint64_t)time(NULL),
             c->next_cid++);
    rq->deadline_ms = (int64_t)jn_time_mono_ms() + ms;
    rq->next = c->rqs;
    c->rqs = rq;
    return rq;
}

static void rq_unlink(jn_edge_clients_t *c, edge_rq_t *rq)
{
    for (edge_rq_t **p = &c->rqs; *p; p = &(*p)->next)
        if (*p == rq) {
            *p = rq->next;
            return;
        }
}

/* The waiting link goes on as if no link route existed (or is refused,
 * or routed up), then the request is freed. */
static void lookup_done_CT(jn_core_t *core, edge_rq_t *rq, int answer)
{
    JN_ASSERT_CT(core);
    jn_core_link_t *link = rq->link;
    if (link)
        JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_DEBUG,
               "[C%" PRIu64 "][L%" PRIu64 "] Link-route lookup answered: %s", link->conn->conn_id,
               link->ct.id,
               answer == 2   ? "link route"
               : answer == 1 ? "link route without a container"
                             : "not a link route");
    if (link && link->ct.state == JN_LINK_ST_ROUTING && !link->ct.routed) {
        if (answer == 2 && core->ct.uplink && !core->ct.uplink->ct.closed) {
            jn_lr_attach_via_CT(link, core->ct.uplink);
        } else if (answer == 1) {
            jn_link_refuse_CT(link, JN_LR_NO_ROUTE_CONDITION, JN_LR_NO_ROUTE_DESCRIPTION);
        } else {
            link->ct.state = JN_LINK_ST_NEW;
            jn_link_attach_route_CT(link);
            if (link->dir == JN_LINK_OUTGOING && link->ct.state == JN_LINK_ST_ATTACHED) {
                /* a flow that came while it waited was not applied (link.c) */
                uint64_t word = atomic_load_explicit(&link->flow, memory_order_acquire);
                link->ct.credit_limit = word >> 1;
                link->ct.drain = (word & 1u) != 0;
                jn_link_pump_CT(link);
            }
        }
    }
    if (link)
        jn_link_unref(link);
    free(rq);
}

/* Send the waiting lookups, oldest first, while the lookup link has credit
 * (the interior grants 1 at a time: a request is composed only when it can
 * go, so a burst of attaches costs a record each, not a message each). */
static void lookups_send_CT(jn_core_t *core, jn_edge_clients_t *c)
{
    JN_ASSERT_CT(core);
    jn_core_link_t *out = c->lookup_out;
    while (out && out->ct.state == JN_LINK_ST_ATTACHED && c->lookup_reply_to &&
           out->ct.undelivered.count == 0 && out->ct.handed < out->ct.credit_limit) {
        edge_rq_t *rq = NULL;
        for (edge_rq_t *r = c->rqs; r; r = r->next) /* newest first: take the last */
            if (r->kind == RQ_LOOKUP && !r->sent)
                rq = r;
        if (!rq)
            return;
        rq->sent = true;
        jn_core_link_t *link = rq->link;
        if (link->ct.state != JN_LINK_ST_ROUTING)
            continue; /* detached meanwhile: its answer would find nothing */
        jn_encoder_t e;
        jn_compose_props_t props = {
            .reply_to = c->lookup_reply_to, .correlation_str = rq->cid, .fields = 6};
        lookup_head(&e, &props, NULL);
        jn_enc_cstring(&e, link->address);
        jn_enc_bool(&e, link->dir == JN_LINK_INCOMING);
        jn_enc_list_end(&e);
        if (!send_rq_CT(core, out, &e)) {
            rq_unlink(c, rq);
            lookup_done_CT(core, rq, 0); /* out of memory: as if not link-routed */
        }
    }
}

bool jn_edge_lookup_CT(jn_core_link_t *link)
{
    jn_core_conn_t *conn = link->conn;
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    jn_edge_clients_t *c = core->ct.edge_clients;
    jn_core_conn_t *up = core->ct.uplink;
    if (!c || !up || conn == up || conn->internal || link->type != JN_LINK_ENDPOINT ||
        !link->address || link->dynamic || !c->lookup_out || !c->lookup_reply_to ||
        c->lookup_out->ct.state != JN_LINK_ST_ATTACHED ||
        jn_lr_local_route_CT(core, link->address, link->dir))
        return false;
    edge_rq_t *rq = rq_new_CT(core, c, RQ_LOOKUP, JN_EDGE_LOOKUP_TIMEOUT_MS);
    if (!rq)
        return false;
    rq->link = jn_link_ref(link);
    link->ct.state = JN_LINK_ST_ROUTING; /* no credit, no deliveries meanwhile */
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_DEBUG,
           "[C%" PRIu64 "][L%" PRIu64 "] Asking the interior whether %s is link-routed",
           conn->conn_id, link->ct.id, link->address);
    lookups_send_CT(core, c);
    return true;
}

/* ---- the edge: link-route proxies ------------------------------------------------ */

static void proxy_free(proxy_t *p)
{
    free(p->key);
    free(p->name);
    free(p->identity);
    free(p);
}

/* Send a CREATE or DELETE for p (management request, 1.19's layout). */
static void proxy_send_CT(jn_core_t *core, jn_edge_clients_t *c, proxy_t *p, bool create)
{
    JN_ASSERT_CT(core);
    edge_rq_t *rq = rq_new_CT(core, c, create ? RQ_CREATE : RQ_DELETE, MGMT_TIMEOUT_MS);
    if (!rq)
        return;
    rq->proxy = p;
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_compose_props_t props = {
        .reply_to = c->mgmt_reply_to, .correlation_str = rq->cid, .fields = 6};
    jn_compose_head(&e, &props);
    jn_enc_descriptor_ulong(&e, JN_SECTION_APPLICATION_PROPERTIES);
    jn_enc_map_begin(&e);
    jn_enc_cstring(&e, "operation");
    jn_enc_cstring(&e, create ? "CREATE" : "DELETE");
    jn_enc_cstring(&e, "type");
    jn_enc_cstring(&e, PROXY_TYPE);
    if (!create && p->identity) {
        jn_enc_cstring(&e, "identity");
        jn_enc_cstring(&e, p->identity);
    }
    jn_enc_cstring(&e, "name");
    jn_enc_cstring(&e, p->name);
    jn_enc_map_end(&e);
    jn_enc_descriptor_ulong(&e, JN_SECTION_AMQP_VALUE);
    jn_enc_map_begin(&e);
    if (create) {
        bool prefix = p->key[0] == JN_ADDR_CLASS_LINK_IN || p->key[0] == JN_ADDR_CLASS_LINK_OUT;
        bool in = p->key[0] == JN_ADDR_CLASS_LINK_IN || p->key[0] == JN_ADDR_CLASS_LINK_IN_PATTERN;
        /* the prefix of any length (a fixed buffer cut a long one short:
         * a shorter pattern on the interior, matching more than it should) */
        size_t n = strlen(p->key + 1) + 3;
        char *pattern = malloc(n);
        if (!pattern) {
            rq_unlink(c, rq);
            free(rq);
            jn_encoder_free(&e);
            return;
        }
        snprintf(pattern, n, "%s%s", p->key + 1, prefix ? "/#" : "");
        jn_enc_cstring(&e, "type");
        jn_enc_cstring(&e, PROXY_TYPE);
        jn_enc_cstring(&e, "pattern");
        jn_enc_cstring(&e, pattern);
        free(pattern);
        jn_enc_cstring(&e, "direction");
        jn_enc_cstring(&e, in ? "in" : "out");
        jn_enc_cstring(&e, "name");
        jn_enc_cstring(&e, p->name);
    }
    jn_enc_map_end(&e);
    if (!send_rq_CT(core, c->mgmt_out, &e)) {
        rq_unlink(c, rq);
        free(rq);
        return;
    }
    p->state = create ? PX_CREATING : PX_DELETING;
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO, "%s link-route proxy %s on the interior",
           create ? "Creating" : "Deleting", p->name);
}

/* One served link route's key (jn_lr_each_served_CT). */
static void proxy_seen_CT(void *arg, const char *key)
{
    jn_core_t *core = arg;
    JN_ASSERT_CT(core);
    jn_edge_clients_t *c = core->ct.edge_clients;
    for (proxy_t *p = c->proxies; p; p = p->next) {
        if (strcmp(p->key, key) != 0 || p->state == PX_DELETING)
            continue; /* a DELETE on its way goes before a new CREATE */
        /* served again before its DELETE went: the one on the interior (or
         * its CREATE on the way) is kept. A second proxy of the same name
         * would have its CREATE refused as a duplicate, and the first one's
         * DELETE would then leave the interior with none. */
        if (p->state == PX_CANCELLED)
            p->state = PX_CREATING;
        else if (p->state == PX_DELETED)
            p->state = PX_CREATED;
        p->seen = true;
        return;
    }
    proxy_t *p = calloc(1, sizeof *p);
    size_t n = strlen(core->router_id) + strlen(key) + 20;
    if (!p || !(p->key = strdup(key)) || !(p->name = malloc(n))) {
        if (p)
            proxy_free(p);
        return;
    }
    snprintf(p->name, n, "%s/proxyLinkRoute/%s", core->router_id, key);
    p->seen = true;
    p->next = c->proxies;
    c->proxies = p;
}

/* Bring the proxies in line with the served link routes, and send what
 * the management client can send now. */
static void proxies_sync_CT(jn_core_t *core, jn_edge_clients_t *c)
{
    JN_ASSERT_CT(core);
    if (c->proxies_dirty) {
        c->proxies_dirty = false;
        for (proxy_t *p = c->proxies; p; p = p->next)
            p->seen = false;
        jn_lr_each_served_CT(core, proxy_seen_CT, core);
        for (proxy_t **pp = &c->proxies; *pp;) {
            proxy_t *p = *pp;
            if (!p->seen && (p->state == PX_NEW || (p->state == PX_CREATED && !p->identity))) {
                *pp = p->next;
                proxy_free(p);
                continue;
            }
            if (!p->seen && p->state == PX_CREATED)
                p->state = PX_DELETED;
            else if (!p->seen && p->state == PX_CREATING)
                p->state = PX_CANCELLED;
            pp = &p->next;
        }
    }
    if (!c->mgmt_out || c->mgmt_out->ct.state != JN_LINK_ST_ATTACHED || !c->mgmt_reply_to)
        return;
    for (proxy_t *p = c->proxies; p; p = p->next) {
        if (p->state == PX_NEW)
            proxy_send_CT(core, c, p, true);
        else if (p->state == PX_DELETED && p->identity)
            proxy_send_CT(core, c, p, false);
    }
}

/* The answer to a CREATE or DELETE. */
static void proxy_answered_CT(jn_core_t *core, jn_edge_clients_t *c, edge_rq_t *rq,
                              jn_message_t *msg)
{
    JN_ASSERT_CT(core);
    proxy_t *p = rq->proxy;
    jn_iter_t ap, body;
    uint64_t status = 500;
    if (jn_message_section(msg, JN_SEC_APPLICATION_PROPERTIES, &ap) == 0) {
        jn_field_t v;
        int64_t s;
        if (map_get(&ap, "statusCode", &v) && jn_field_is_integer(&v) &&
            jn_field_to_int64(&v, &s) == 0 && s >= 0)
            status = (uint64_t)s;
    }
    if (rq->kind == RQ_CREATE && status == 201) {
        jn_field_t id;
        char buf[128];
        if (jn_message_section(msg, JN_SEC_BODY, &body) == 0 && map_get(&body, "identity", &id)) {
            if (field_cstring(&id, buf, sizeof buf) ||
                (jn_field_is_integer(&id) &&
                 snprintf(buf, sizeof buf, "%" PRId64, id.value.i) > 0)) {
                free(p->identity);
                p->identity = strdup(buf);
            }
        }
        p->state = p->state == PX_CANCELLED ? PX_DELETED : PX_CREATED;
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO, "Link-route proxy %s created on the interior (%s)",
               p->name, p->identity ? p->identity : "no identity");
    } else if (rq->kind == RQ_CREATE) {
        /* not retried (as 1.19); kept without an identity so that it is
         * not created again, and forgotten without a DELETE */
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_ERROR,
               "Link-route proxy %s: the interior refused its CREATE (status %" PRIu64 ")", p->name,
               status);
        free(p->identity);
        p->identity = NULL;
        p->state = p->state == PX_CANCELLED ? PX_DELETED : PX_CREATED;
    } else {
        /* deleted (204, or 404: gone already) or not: forgotten either way */
        for (proxy_t **pp = &c->proxies; *pp; pp = &(*pp)->next)
            if (*pp == p) {
                *pp = p->next;
                proxy_free(p);
                break;
            }
    }
}

/* ---- the edge: answers and the clients' links ----------------------------------- */

void jn_edge_reply_arrived_CT(jn_delivery_t *dlv)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    jn_edge_clients_t *c = core->ct.edge_clients;
    jn_message_t *msg = dlv->message;
    if (!c || jn_message_is_aborted(msg) || jn_message_parse(msg, JN_DEPTH_ALL) != 0) {
        consume_CT(dlv, false);
        return;
    }
    char reply_to[8];
    jn_iter_t cid;
    bool has_cid = false;
    props_get(msg, reply_to, sizeof reply_to, &cid, &has_cid);
    jn_decoder_t d;
    jn_field_t f;
    char id[40];
    edge_rq_t *rq = NULL;
    if (has_cid) {
        jn_decoder_init(&d, &cid, true);
        if (jn_decoder_next(&d, &f) == 1 && field_cstring(&f, id, sizeof id))
            for (rq = c->rqs; rq && strcmp(rq->cid, id) != 0; rq = rq->next)
                ;
    }
    if (!rq) {
        consume_CT(dlv, has_cid); /* an old request's: dropped */
        return;
    }
    rq_unlink(c, rq);
    if (rq->kind != RQ_LOOKUP) {
        proxy_answered_CT(core, c, rq, msg);
        free(rq);
        proxies_sync_CT(core, c);
        consume_CT(dlv, true);
        return;
    }
    jn_iter_t ap;
    uint64_t status = LOOKUP_NOT_FOUND;
    jn_decoder_t outer, list;
    jn_field_t a, b;
    int answer = 0; /* not link-routed */
    if (jn_message_section(msg, JN_SEC_APPLICATION_PROPERTIES, &ap) == 0 &&
        map_uint(&ap, "status", &status) && status == LOOKUP_OK && body_list(msg, &outer, &list) &&
        jn_decoder_next(&list, &a) == 1 && a.type == JN_TYPE_BOOLEAN &&
        jn_decoder_next(&list, &b) == 1 && b.type == JN_TYPE_BOOLEAN && a.value.b)
        answer = b.value.b ? 2 : 1;
    lookup_done_CT(core, rq, answer);
    consume_CT(dlv, true);
}

void jn_edge_reply_answered_CT(jn_core_link_t *link)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    jn_edge_clients_t *c = core->ct.edge_clients;
    if (!c || !link->answer_address)
        return;
    char **to = link == c->lookup_reply ? &c->lookup_reply_to
                : link == c->mgmt_reply ? &c->mgmt_reply_to
                                        : NULL;
    if (!to || *to)
        return;
    *to = strdup(link->answer_address);
    if (to == &c->mgmt_reply_to)
        proxies_sync_CT(core, c);
}

void jn_edge_clients_activate_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    jn_edge_clients_t *c = clients_CT(core);
    if (!c || !core->ct.uplink)
        return;
    c->proxies_dirty = true;
    /* the management client, then the lookup client, as 1.19 starts them */
    jn_edge_ask_attach_CT(core, JN_LINK_OUTGOING, "$management", JN_LINK_EDGE_MGMT);
    jn_edge_ask_attach_CT(core, JN_LINK_INCOMING, NULL, JN_LINK_EDGE_REPLY);
    jn_edge_ask_attach_CT(core, JN_LINK_OUTGOING, LOOKUP_ADDRESS, JN_LINK_EDGE_LOOKUP);
    jn_edge_ask_attach_CT(core, JN_LINK_INCOMING, NULL, JN_LINK_EDGE_REPLY);
}

void jn_edge_clients_lost_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    jn_edge_clients_t *c = core->ct.edge_clients;
    if (!c)
        return;
    c->lookup_out = c->mgmt_out = c->lookup_reply = c->mgmt_reply = NULL;
    free(c->lookup_reply_to);
    free(c->mgmt_reply_to);
    c->lookup_reply_to = c->mgmt_reply_to = NULL;
    while (c->rqs) {
        edge_rq_t *rq = c->rqs;
        c->rqs = rq->next;
        if (rq->kind == RQ_LOOKUP)
            lookup_done_CT(core, rq, 0);
        else
            free(rq);
    }
    /* the interior drops a connection's routes with it */
    for (proxy_t **pp = &c->proxies; *pp;) {
        proxy_t *p = *pp;
        if (p->state == PX_CREATING || p->state == PX_CREATED) {
            p->state = PX_NEW;
            free(p->identity);
            p->identity = NULL;
        } else if (p->state != PX_NEW) {
            *pp = p->next;
            proxy_free(p);
            continue;
        }
        pp = &p->next;
    }
}

void jn_edge_client_link_attached_CT(jn_core_link_t *link)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    jn_edge_clients_t *c = core->ct.edge_clients;
    if (!c) {
        jn_work_link_CT(link, JN_WORK_LINK_CLOSE, NULL, NULL, NULL, 0);
        return;
    }
    link->ct.anonymous = true; /* bound to no address: served here */
    switch (link->type) {
    case JN_LINK_EDGE_MGMT:
        c->mgmt_out = link;
        break;
    case JN_LINK_EDGE_LOOKUP:
        c->lookup_out = link;
        break;
    default: /* the replies: the management client's first */
        if (!c->mgmt_reply)
            c->mgmt_reply = link;
        else
            c->lookup_reply = link;
        jn_link_mark_dirty_CT(link); /* credit for the answers */
        break;
    }
}

void jn_edge_client_link_detached_CT(jn_core_link_t *link)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    jn_edge_clients_t *c = core->ct.edge_clients;
    if (!c)
        return;
    if (c->mgmt_out == link)
        c->mgmt_out = NULL;
    if (c->lookup_out == link)
        c->lookup_out = NULL;
    if (c->mgmt_reply == link) {
        c->mgmt_reply = NULL;
        free(c->mgmt_reply_to);
        c->mgmt_reply_to = NULL;
    }
    if (c->lookup_reply == link) {
        c->lookup_reply = NULL;
        free(c->lookup_reply_to);
        c->lookup_reply_to = NULL;
    }
}

void jn_edge_clients_tick_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    jn_edge_clients_t *c = core->ct.edge_clients;
    if (!c)
        return;
    if (c->rqs) {
        int64_t now = (int64_t)jn_time_mono_ms();
        for (edge_rq_t **pp = &c->rqs; *pp;) {
            edge_rq_t *rq = *pp;
            if (rq->deadline_ms > now) {
                pp = &rq->next;
                continue;
            }
            *pp = rq->next;
            if (rq->kind == RQ_LOOKUP) {
                JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_WARNING,
                       "Link-route lookup unanswered after %d ms: the link is routed by its "
                       "address",
                       JN_EDGE_LOOKUP_TIMEOUT_MS);
                lookup_done_CT(core, rq, 0);
            } else {
                JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_WARNING,
                       "Link-route proxy %s: no answer from the interior in %d ms", rq->proxy->name,
                       MGMT_TIMEOUT_MS);
                rq->proxy->state = rq->kind == RQ_CREATE ? PX_NEW : PX_DELETED;
                c->proxies_dirty = true; /* sent again */
                free(rq);
            }
        }
    }
    if (c->rqs)
        lookups_send_CT(core, c); /* the lookup link's credit may have come */
    if (c->proxies_dirty)
        proxies_sync_CT(core, c);
}

void jn_edge_proxies_changed_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    jn_edge_clients_t *c = core->ct.edge_clients;
    if (c)
        c->proxies_dirty = true;
}

void jn_edge_clients_fini(jn_core_t *core)
{
    jn_edge_clients_t *c = core->ct.edge_clients;
    if (!c)
        return;
    free(c->lookup_reply_to);
    free(c->mgmt_reply_to);
    while (c->rqs) {
        edge_rq_t *rq = c->rqs;
        c->rqs = rq->next;
        if (rq->link)
            jn_link_unref(rq->link);
        free(rq);
    }
    while (c->proxies) {
        proxy_t *p = c->proxies;
        c->proxies = p->next;
        proxy_free(p);
    }
    free(c);
    core->ct.edge_clients = NULL;
}
