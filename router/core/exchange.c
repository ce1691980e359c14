/*
 * exchange.c — exchanges and bindings (router.config.exchange and
 * router.config.binding, docs/design.md "Exchanges and bindings"). Core
 * thread only.
 *
 * An exchange owns an address (M<phase><address>) in the address table,
 * marked in-process (JN_INPROC_EXCHANGE) and permanent while the exchange
 * lives, so senders get credit and the mesh is told this router has a
 * destination for it. A delivery that reaches that address here is not
 * routed by the address: forward.c hands it to jn_exchange_forward_CT,
 * which reads the message's subject, matches it against every binding
 * key (amqp: words split at '.', '*' one word, '#' zero or more; mqtt:
 * split at '/', '+' one, '#' zero or more at the end) and routes one
 * pre-settled copy set to each distinct next hop (address and phase) that
 * matched, as an arrival for that address would be routed (anycast or
 * multicast, local consumers and other routers). Nothing matched, or no
 * next hop had a destination: the alternate address, if any. A copy toward
 * another router carries the next hop as x-opt-qd.to and x-opt-qd.phase
 * and a new trace (delivery.c, router/io). The incoming delivery is then
 * accepted, or, when no copy was made, released (dropped if pre-settled)
 * and counted in droppedCount. Consumers of the exchange's own address on
 * this router get a copy first (one for anycast, each for multicast), as
 * in 1.19, and then the alternate is not used. This is qdrouterd 1.19's
 * exchange, except that 1.19 also passes the message to other routers
 * that advertise the exchange's address (in a mesh where every router has
 * the same exchange, every message would be matched twice and its copies
 * duplicated): here the exchange is the address's destination in the
 * mesh; and that 1.19 holds an unsettled delivery that matched nothing
 * (on an anycast address) without an answer, where here it is released
 * at once.
 *
 * Bindings are few (configured); they are kept in a list per exchange and
 * matched one by one. Ordinary addresses never come here: forward.c looks
 * at the exchange only for an address whose inproc says so.
 */
#include "delivery.h"

#include <junction/decoder.h>
#include <junction/iterator.h>
#include <junction/core_view.h>
#include <junction/message.h>
#include <junction/wildcard.h>

#include <stdlib.h>
#include <string.h>

/* A next hop: an address and phase, shared by the bindings that name it,
 * so a delivery goes to it once however many of them match. */
typedef struct jn_next_hop {
    struct jn_next_hop *next;
    char *address;   /* heap */
    uint8_t *key;    /* M<phase><address> in the address-hash view (heap) */
    size_t key_len;
    int phase;
    unsigned refs;   /* bindings (and the alternate) naming it */
    uint64_t mark;   /* the delivery serial it was last chosen for */
} jn_next_hop_t;

typedef struct jn_binding {
    struct jn_binding *next;
    char *name;      /* heap */
    char *key;       /* heap */
    jn_next_hop_t *hop;
    uint64_t matched;
} jn_binding_t;

typedef struct jn_exchange {
    struct jn_exchange *next;
    char *name, *address; /* heap */
    int phase;
    bool mqtt;
    jn_addr_t *addr;      /* permanent while the exchange lives */
    jn_next_hop_t *alternate;
    jn_next_hop_t *hops;
    jn_binding_t *bindings;
    uint64_t n_bindings;
    uint64_t serial;      /* deliveries seen: marks next hops chosen */
    uint64_t received, dropped, forwarded, diverted;
} jn_exchange_t;

/* ---- matching ------------------------------------------------------------ */

/* Does binding key `key` match subject s (n octets) by ex's method? */
static bool key_matches(const jn_exchange_t *ex, const char *key, const char *s, size_t n)
{
    return jn_wildcard_match(key, strlen(key), s, n, ex->mqtt ? "/" : ".", ex->mqtt ? '+' : '*');
}

/* An mqtt key: '+' and '#' only as whole tokens, '#' only last (1.19
 * refuses the others). Every amqp key is valid. */
static bool key_valid(bool mqtt, const char *key)
{
    if (!mqtt)
        return true;
    size_t n = strlen(key);
    for (size_t i = 0; i < n; i++) {
        if (key[i] != '+' && key[i] != '#')
            continue;
        bool whole = (i == 0 || key[i - 1] == '/') && (i + 1 == n || key[i + 1] == '/');
        if (!whole || (key[i] == '#' && i + 1 != n))
            return false;
    }
    return true;
}

/* The subject of msg (properties field 3) as a raw view: false when it has
 * none (no properties, null or not a string). Parsed here, not by the
 * message layer: only deliveries to an exchange need it. */
static bool message_subject(const jn_message_t *msg, jn_iter_t *out)
{
    jn_iter_t sec;
    if (jn_message_section(msg, JN_SEC_PROPERTIES, &sec) != 0)
        return false;
    jn_decoder_t d, fields;
    jn_value_t list, f;
    jn_decoder_init(&d, &sec, true);
    if (jn_decoder_skip(&d, &list) != 1 || jn_decoder_enter_value(&d, &list, &fields) != 0)
        return false;
    for (int i = 0; i <= 3; i++)
        if (jn_decoder_skip(&fields, &f) != 1)
            return false;
    if (f.type != JN_TYPE_STRING)
        return false;
    jn_value_payload(&f, out);
    return true;
}

/* ---- tables ----------------------------------------------------------------- */

static jn_exchange_t *find_exchange(jn_core_t *core, const char *name)
{
    for (jn_exchange_t *ex = core->exchanges; ex; ex = ex->next)
        if (strcmp(ex->name, name) == 0)
            return ex;
    return NULL;
}

static jn_binding_t *find_binding(jn_core_t *core, const char *name, jn_exchange_t **owner)
{
    for (jn_exchange_t *ex = core->exchanges; ex; ex = ex->next)
        for (jn_binding_t *b = ex->bindings; b; b = b->next)
            if (strcmp(b->name, name) == 0) {
                if (owner)
                    *owner = ex;
                return b;
            }
    return NULL;
}

/* The address-hash key of address in phase (heap). */
static uint8_t *phase_key(const char *address, int phase, size_t *len)
{
    jn_iter_t it;
    jn_iter_init_string(&it, address, JN_VIEW_ADDRESS_HASH);
    jn_iter_set_phase(&it, (char)('0' + phase));
    size_t n = jn_iter_length(&it);
    uint8_t *key = malloc(n ? n : 1);
    if (key)
        *len = jn_iter_copy(&it, key, n);
    return key;
}

/* The exchange's next hop for (address, phase), made if new; a reference
 * for the caller. NULL on ENOMEM. */
static jn_next_hop_t *hop_get(jn_exchange_t *ex, const char *address, int phase)
{
    for (jn_next_hop_t *h = ex->hops; h; h = h->next)
        if (h->phase == phase && strcmp(h->address, address) == 0) {
            h->refs++;
            return h;
        }
    jn_next_hop_t *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->address = strdup(address);
    h->key = phase_key(address, phase, &h->key_len);
    if (!h->address || !h->key) {
        free(h->address);
        free(h->key);
        free(h);
        return NULL;
    }
    h->phase = phase;
    h->refs = 1;
    h->next = ex->hops;
    ex->hops = h;
    return h;
}

static void hop_put(jn_exchange_t *ex, jn_next_hop_t *h)
{
    if (!h || --h->refs > 0)
        return;
    for (jn_next_hop_t **pp = &ex->hops; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            *pp = h->next;
            break;
        }
    free(h->address);
    free(h->key);
    free(h);
}

static void binding_free(jn_exchange_t *ex, jn_binding_t *b)
{
    hop_put(ex, b->hop);
    free(b->name);
    free(b->key);
    free(b);
}

static void exchange_free(jn_exchange_t *ex)
{
    while (ex->bindings) {
        jn_binding_t *b = ex->bindings;
        ex->bindings = b->next;
        binding_free(ex, b);
    }
    hop_put(ex, ex->alternate);
    free(ex->name);
    free(ex->address);
    free(ex);
}

/* ---- forwarding ------------------------------------------------------------- */

/* Route dlv to next hop h; the copies made (handed out or waiting). */
static uint32_t send_to_hop_CT(jn_core_t *core, jn_delivery_t *dlv, jn_next_hop_t *h,
                               jn_route_ctx_t *rc)
{
    JN_ASSERT_CT(core);
    jn_addr_t *to = jn_hash_lookup(core->ct.addrs, h->key, h->key_len);
    if (!to || to->inproc)
        return 0; /* no destination; or an exchange or in-process (no chains) */
    jn_reroute_t rr = {.address = h->address, .phase = (uint8_t)h->phase};
    uint32_t before = dlv->ct.pending + dlv->ct.handed;
    dlv->ct.reroute = &rr;
    jn_forward_route_CT(dlv, to, rc);
    dlv->ct.reroute = NULL;
    return dlv->ct.pending + dlv->ct.handed - before;
}

void jn_exchange_forward_CT(jn_delivery_t *dlv, jn_addr_t *addr, const jn_route_ctx_t *rc_in)
{
    jn_core_t *core = jn_delivery_core(dlv);
    JN_ASSERT_CT(core);
    jn_exchange_t *ex = addr->exchange;
    ex->received++;
    ex->serial++;
    /* a new destination: the message starts afresh from this router (its
     * way back toward where it came from is open again) */
    jn_route_ctx_t rc = {.priority = rc_in->priority, .full = true};
    bool presettled = dlv->presettled;
    dlv->presettled = true; /* every copy pre-settled, as 1.19's exchange */
    dlv->ct.pending++;      /* held until every next hop has its copies */
    /* the address's own consumers here first, as 1.19 (its old forwarder):
     * one of them (anycast) or each (multicast) */
    uint32_t made = 0;
    if (JN_UNLIKELY(addr->n_consumers > 0)) {
        uint32_t before = dlv->ct.pending + dlv->ct.handed;
        if (addr->distribution == JN_DIST_MULTICAST) {
            jn_forward_copies_CT(dlv, addr->consumers, addr->n_consumers);
        } else {
            jn_core_link_t *one = jn_addr_pick_consumer_CT(addr);
            jn_forward_copies_CT(dlv, &one, 1);
        }
        made = dlv->ct.pending + dlv->ct.handed - before;
        addr->egress += made;
    }
    jn_iter_t subject;
    if (message_subject(dlv->message, &subject)) {
        size_t n = jn_iter_length(&subject);
        char small[256];
        char *s = n < sizeof small ? small : malloc(n + 1);
        if (s) {
            jn_iter_copy(&subject, (uint8_t *)s, n);
            s[n] = '\0';
            for (jn_binding_t *b = ex->bindings; b; b = b->next) {
                if (!key_matches(ex, b->key, s, n))
                    continue;
                b->matched++;
                if (b->hop->mark == ex->serial)
                    continue; /* that next hop has its copy already */
                b->hop->mark = ex->serial;
                made += send_to_hop_CT(core, dlv, b->hop, &rc);
            }
            if (s != small)
                free(s);
        }
    }
    if (made == 0 && ex->alternate) {
        made = send_to_hop_CT(core, dlv, ex->alternate, &rc);
        if (made)
            ex->diverted++;
    }
    dlv->presettled = presettled;
    if (made) {
        ex->forwarded++;
        dlv->ct.served = true; /* accepted once every copy is handed out */
    } else {
        ex->dropped++;
    }
    dlv->ct.pending--; /* the caller settles it when this was the last */
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_TRACE, "Exchange %s: %" PRIu32 " copies", ex->name,
           made);
}

/* ---- management ----------------------------------------------------------- */

int jn_core_exchange_add_CT(jn_core_t *core, const jn_exchange_config_t *cfg, const char **why)
{
    JN_ASSERT_CT(core);
    static const char *none = "";
    *why = none;
    if (!cfg->name || !cfg->name[0]) {
        *why = "exchange requires a unique name";
        return JN_EINVAL;
    }
    if (!cfg->address) {
        *why = "exchange address is mandatory";
        return JN_EINVAL;
    }
    for (jn_exchange_t *e = core->exchanges; e; e = e->next) {
        if (strcmp(e->address, cfg->address) == 0) {
            *why = "duplicate exchange address";
            return JN_EEXIST;
        }
        if (strcmp(e->name, cfg->name) == 0) {
            *why = "duplicate exchange name";
            return JN_EEXIST;
        }
    }
    if (cfg->phase < 0 || cfg->phase > 9 ||
        (cfg->alternate && (cfg->alternate_phase < 0 || cfg->alternate_phase > 9))) {
        *why = "phase must be in the range 0-9";
        return JN_EINVAL;
    }
    *why = "failed to allocate exchange";
    jn_exchange_t *ex = calloc(1, sizeof *ex);
    if (!ex)
        return JN_ENOMEM;
    ex->name = strdup(cfg->name);
    ex->address = strdup(cfg->address);
    ex->phase = cfg->phase;
    ex->mqtt = cfg->mqtt;
    if (!ex->name || !ex->address ||
        (cfg->alternate && !(ex->alternate = hop_get(ex, cfg->alternate, cfg->alternate_phase)))) {
        exchange_free(ex);
        return JN_ENOMEM;
    }
    size_t len = 0;
    uint8_t *key = phase_key(cfg->address, cfg->phase, &len);
    jn_addr_t *addr = NULL;
    int rc = key ? jn_addr_get_key_CT(core, key, len, JN_DIST_BALANCED, &addr) : JN_ENOMEM;
    free(key);
    if (rc == 0 && !addr) {
        *why = "the exchange's address is configured unavailable";
        rc = JN_EINVAL;
    } else if (rc == 0 && addr->inproc) {
        *why = "the exchange's address is served by the router";
        rc = JN_EINVAL;
    }
    if (rc != 0) {
        exchange_free(ex);
        return rc;
    }
    ex->addr = addr;
    addr->permanent = true;
    addr->inproc = JN_INPROC_EXCHANGE;
    addr->exchange = ex;
    ex->next = core->exchanges;
    core->exchanges = ex;
    jn_addr_advertise_CT(core, addr);
    jn_link_producers_dirty_CT(addr); /* its senders get credit */
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO, "Exchange %s added on %.*s (%s)", ex->name,
           (int)addr->key_len, (const char *)addr->key, ex->mqtt ? "mqtt" : "amqp");
    *why = none;
    return 0;
}

int jn_core_exchange_remove_CT(jn_core_t *core, const char *name,
                               void (*gone)(void *ctx, const char *binding), void *ctx)
{
    JN_ASSERT_CT(core);
    jn_exchange_t **pp = &core->exchanges;
    while (*pp && strcmp((*pp)->name, name) != 0)
        pp = &(*pp)->next;
    jn_exchange_t *ex = *pp;
    if (!ex)
        return JN_ENOENT;
    *pp = ex->next;
    if (gone)
        for (jn_binding_t *b = ex->bindings; b; b = b->next)
            gone(ctx, b->name);
    jn_addr_t *addr = ex->addr;
    addr->exchange = NULL;
    addr->inproc = JN_INPROC_NONE;
    addr->permanent = false;
    jn_addr_advertise_CT(core, addr);
    if (!jn_addr_has_destination(addr))
        jn_link_producers_dirty_CT(addr); /* its senders lose their credit */
    jn_addr_release_if_unused_CT(core, addr);
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO, "Exchange %s removed", ex->name);
    exchange_free(ex);
    return 0;
}

int jn_core_binding_add_CT(jn_core_t *core, const jn_binding_config_t *cfg, const char **why)
{
    JN_ASSERT_CT(core);
    jn_exchange_t *ex = cfg->exchange ? find_exchange(core, cfg->exchange) : NULL;
    if (!cfg->exchange) {
        *why = "Binding configuration requires an exchange";
        return JN_EINVAL;
    }
    if (!ex) {
        *why = "Named exchange does not exist";
        return JN_ENOENT;
    }
    if (!cfg->next_hop) {
        *why = "No next hop specified";
        return JN_EINVAL;
    }
    const char *key = cfg->key ? cfg->key : "#";
    if (!key_valid(ex->mqtt, key)) {
        *why = "The binding key pattern is invalid";
        return JN_EINVAL;
    }
    if (cfg->next_hop_phase < 0 || cfg->next_hop_phase > 9) {
        *why = "phase must be in the range 0-9";
        return JN_EINVAL;
    }
    if (cfg->name && find_binding(core, cfg->name, NULL)) {
        *why = "Duplicate next hop name";
        return JN_EEXIST;
    }
    for (jn_binding_t *b = ex->bindings; b; b = b->next)
        if (strcmp(b->key, key) == 0 && strcmp(b->hop->address, cfg->next_hop) == 0 &&
            b->hop->phase == cfg->next_hop_phase) {
            *why = "Next hop for key already exists";
            return JN_EEXIST;
        }
    *why = "Failed to allocate next hop";
    jn_binding_t *b = calloc(1, sizeof *b);
    if (!b)
        return JN_ENOMEM;
    b->name = strdup(cfg->name ? cfg->name : "");
    b->key = strdup(key);
    b->hop = hop_get(ex, cfg->next_hop, cfg->next_hop_phase);
    if (!b->name || !b->key || !b->hop) {
        binding_free(ex, b);
        return JN_ENOMEM;
    }
    /* in creation order, as 1.19 lists them */
    jn_binding_t **pp = &ex->bindings;
    while (*pp)
        pp = &(*pp)->next;
    *pp = b;
    ex->n_bindings++;
    return 0;
}

int jn_core_binding_remove_CT(jn_core_t *core, const char *name)
{
    JN_ASSERT_CT(core);
    jn_exchange_t *ex = NULL;
    jn_binding_t *b = find_binding(core, name, &ex);
    if (!b)
        return JN_ENOENT;
    for (jn_binding_t **pp = &ex->bindings; *pp; pp = &(*pp)->next)
        if (*pp == b) {
            *pp = b->next;
            break;
        }
    ex->n_bindings--;
    binding_free(ex, b);
    return 0;
}

int jn_core_exchange_stats_CT(jn_core_t *core, const char *name, jn_exchange_stats_t *out)
{
    JN_ASSERT_CT(core);
    jn_exchange_t *ex = find_exchange(core, name);
    if (!ex)
        return JN_ENOENT;
    *out = (jn_exchange_stats_t){
        .phase = ex->phase,
        .alternate = ex->alternate ? ex->alternate->address : NULL,
        .alternate_phase = ex->alternate ? ex->alternate->phase : 0,
        .bindings = ex->n_bindings,
        .received = ex->received,
        .dropped = ex->dropped,
        .forwarded = ex->forwarded,
        .diverted = ex->diverted,
    };
    return 0;
}

int jn_core_binding_matched_CT(jn_core_t *core, const char *name, uint64_t *out)
{
    JN_ASSERT_CT(core);
    jn_binding_t *b = find_binding(core, name, NULL);
    if (!b)
        return JN_ENOENT;
    *out = b->matched;
    return 0;
}

void jn_exchange_fini(jn_core_t *core)
{
    while (core->exchanges) {
        jn_exchange_t *ex = core->exchanges;
        core->exchanges = ex->next;
        exchange_free(ex);
    }
}
