/*
 * address.c — the address table: one entry per address some link refers to,
 * keyed by the address-hash view of junction/iterator.h ("M0q1" for the
 * mobile address q1, "Lx" for _local/x and for _topo/0/<this router>/x).
 *
 * An entry is created when the first link attaches to its address (the
 * `address` configuration decides its distribution then, once) and freed
 * when the last link referring to it detaches. Deliveries never create
 * entries: an anonymous delivery to an address nobody consumes finds none.
 *
 * Consumers (outgoing links) and producers (incoming links with that
 * target) are kept in arrays; a link knows its index, so removal is O(1)
 * (the last entry moves into the gap).
 */
#include "delivery.h"

#include <junction/iterator.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* The hash-view key of a C-string address (heap copy). */
static uint8_t *key_of(const char *address, size_t *len)
{
    jn_iter_t it;
    jn_iter_init_string(&it, address, JN_VIEW_ADDRESS_HASH);
    size_t n = jn_iter_length(&it);
    uint8_t *key = malloc(n ? n : 1);
    if (key)
        *len = jn_iter_copy(&it, key, n);
    return key;
}

static const char *dist_name(jn_distribution_t d)
{
    static const char *const names[] = {"multicast", "closest", "balanced", "unavailable"};
    return (unsigned)d <= JN_DIST_UNAVAILABLE ? names[d] : "?";
}

/* The distribution of a new address: the address configuration for mobile
 * addresses (matched on the address without class and phase), closest for
 * local and topological ones (dynamic addresses among them). */
static jn_distribution_t distribution_for_CT(jn_core_t *core, const uint8_t *key, size_t len,
                                             jn_distribution_t other,
                                             const jn_addr_config_entry_t **entry)
{
    JN_ASSERT_CT(core);
    *entry = NULL;
    if (len < 2 || key[0] != JN_ADDR_CLASS_MOBILE)
        return JN_DIST_CLOSEST;
    int i = jn_addr_config_match(&core->config, (const char *)key + 2, len - 2);
    if (i < 0)
        return other;
    *entry = &core->config.entries[i];
    jn_distribution_t d = core->config.entries[i].distribution;
    if (key[1] == 'F' && d == JN_DIST_MULTICAST)
        d = JN_DIST_BALANCED; /* a fallback destination is anycast (1.19) */
    return d;
}

/* Find or create the entry for key (heap, taken over). */
static int addr_get_CT(jn_core_t *core, uint8_t *key, size_t len, jn_distribution_t other,
                       jn_addr_t **out)
{
    JN_ASSERT_CT(core);
    jn_addr_t *addr = jn_hash_lookup(core->ct.addrs, key, len);
    if (addr) {
        free(key);
        *out = addr;
        return 0;
    }
    const jn_addr_config_entry_t *cfg = NULL;
    jn_distribution_t dist = distribution_for_CT(core, key, len, other, &cfg);
    if (dist == JN_DIST_UNAVAILABLE) {
        free(key);
        *out = NULL;
        return 0;
    }
    addr = calloc(1, sizeof *addr);
    if (!addr || jn_hash_insert(core->ct.addrs, key, len, addr) != 0) {
        free(addr);
        free(key);
        return JN_ENOMEM;
    }
    addr->key = key;
    addr->key_len = len;
    addr->distribution = dist;
    addr->mc_backpressure = cfg && cfg->mc_backpressure;
    addr->fallback = cfg && cfg->fallback && key[1] != 'F';
    addr->priority = cfg ? cfg->priority : -1;
    jn_stat_add(&core->stats.addresses, 1);
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_DEBUG, "Address added: %.*s (%s)", (int)len,
           (const char *)key, dist_name(dist));
    *out = addr;
    return 0;
}

int jn_addr_get_CT(jn_core_t *core, const char *address, jn_link_dir_t dir, bool fallback,
                   uint8_t waypoint, jn_addr_t **out)
{
    JN_ASSERT_CT(core);
    size_t len = 0;
    uint8_t *key = key_of(address, &len);
    if (!key)
        return JN_ENOMEM;
    if (len >= 2 && key[0] == JN_ADDR_CLASS_MOBILE && core->config.count) {
        /* a configured phase (waypoint): senders use the ingress phase,
         * receivers the egress phase */
        int i = jn_addr_config_match(&core->config, (const char *)key + 2, len - 2);
        if (i >= 0) {
            const jn_addr_config_entry_t *e = &core->config.entries[i];
            key[1] =
                (uint8_t)('0' + (dir == JN_LINK_INCOMING ? e->ingress_phase : e->egress_phase));
        }
    }
    if (waypoint && len >= 2 && key[0] == JN_ADDR_CLASS_MOBILE)
        key[1] = (uint8_t)('0' + (dir == JN_LINK_INCOMING ? waypoint : waypoint - 1));
    if (fallback && len >= 2 && key[0] == JN_ADDR_CLASS_MOBILE)
        key[1] = 'F';
    return addr_get_CT(core, key, len, core->default_distribution, out);
}

int jn_addr_get_key_CT(jn_core_t *core, const uint8_t *key, size_t len, jn_distribution_t dist,
                       jn_addr_t **out)
{
    JN_ASSERT_CT(core);
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return JN_ENOMEM;
    memcpy(copy, key, len);
    return addr_get_CT(core, copy, len, dist, out);
}

/* The address with addr's key in phase `phase`, if it exists. */
static jn_addr_t *in_phase_CT(jn_core_t *core, const jn_addr_t *addr, char phase)
{
    JN_ASSERT_CT(core);
    if (addr->key_len < 2 || addr->key[0] != JN_ADDR_CLASS_MOBILE)
        return NULL;
    uint8_t small[256];
    uint8_t *key = addr->key_len <= sizeof small ? small : malloc(addr->key_len);
    if (!key)
        return NULL;
    memcpy(key, addr->key, addr->key_len);
    key[1] = (uint8_t)phase;
    jn_addr_t *found = jn_hash_lookup(core->ct.addrs, key, addr->key_len);
    if (key != small)
        free(key);
    return found;
}

jn_addr_t *jn_addr_fallback_CT(jn_core_t *core, const jn_addr_t *addr)
{
    return addr->fallback ? in_phase_CT(core, addr, 'F') : NULL;
}

jn_addr_t *jn_addr_primary_CT(jn_core_t *core, const jn_addr_t *fallback)
{
    if (fallback->key_len < 2 || fallback->key[1] != 'F')
        return NULL;
    return in_phase_CT(core, fallback, '0');
}

bool jn_addr_fallback_has_destination_CT(jn_core_t *core, const jn_addr_t *addr)
{
    const jn_addr_t *fb = jn_addr_fallback_CT(core, addr);
    return fb && jn_addr_has_destination(fb);
}

void jn_addr_add_remote_CT(jn_core_t *core, jn_addr_t *addr, int router)
{
    JN_ASSERT_CT(core);
    if (jn_mesh_bits_has(&addr->remote, (unsigned)router))
        return;
    bool had = jn_addr_has_destination(addr);
    jn_mesh_bits_set(&addr->remote, (unsigned)router);
    addr->n_remote++;
    if (addr->key[0] == JN_ADDR_CLASS_LINK_IN_PATTERN || addr->key[0] == JN_ADDR_CLASS_LINK_OUT_PATTERN)
        core->ct.remote_lr_patterns++;
    const jn_router_node_t *n = core->ct.routers[router];
    if (n && n->reachable)
        addr->n_reachable++;
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_DEBUG, "Address %.*s: remote destination %s added",
           (int)addr->key_len, (const char *)addr->key, n ? n->id : "?");
    if (!had)
        jn_link_producers_dirty_CT(addr); /* its first destination: senders get credit */
}

void jn_addr_remove_remote_CT(jn_core_t *core, jn_addr_t *addr, int router)
{
    JN_ASSERT_CT(core);
    if (!jn_mesh_bits_has(&addr->remote, (unsigned)router))
        return;
    jn_mesh_bits_clear(&addr->remote, (unsigned)router);
    addr->n_remote--;
    if (addr->key[0] == JN_ADDR_CLASS_LINK_IN_PATTERN || addr->key[0] == JN_ADDR_CLASS_LINK_OUT_PATTERN)
        core->ct.remote_lr_patterns--;
    const jn_router_node_t *n = core->ct.routers[router];
    if (n && n->reachable && addr->n_reachable > 0)
        addr->n_reachable--;
    if (!jn_addr_has_destination(addr))
        jn_link_producers_dirty_CT(addr); /* senders lose their credit */
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_DEBUG, "Address %.*s: remote destination %s removed",
           (int)addr->key_len, (const char *)addr->key, n ? n->id : "?");
    jn_addr_release_if_unused_CT(core, addr);
}

void jn_addr_remote_reach_CT(jn_core_t *core, int router, bool reachable)
{
    JN_ASSERT_CT(core);
    jn_hash_iter_t it;
    void *value;
    jn_hash_iter_init(core->ct.addrs, &it);
    while (jn_hash_iter_next(&it, NULL, NULL, &value)) {
        jn_addr_t *addr = value;
        if (!jn_mesh_bits_has(&addr->remote, (unsigned)router))
            continue;
        bool had = jn_addr_has_destination(addr);
        if (reachable)
            addr->n_reachable++;
        else if (addr->n_reachable > 0)
            addr->n_reachable--;
        if (addr->n_producers && had != jn_addr_has_destination(addr))
            jn_link_producers_dirty_CT(addr); /* credit granted, or withdrawn */
    }
}

/* The mesh's treatment hint for a distribution (docs/protocol.md, "Control messages"). */
static int hint_of(jn_distribution_t d)
{
    return d == JN_DIST_MULTICAST ? JN_MESH_HINT_MULTICAST
           : d == JN_DIST_CLOSEST ? JN_MESH_HINT_CLOSEST
                                  : JN_MESH_HINT_BALANCED;
}

/* A mobile address gained its first / lost its last local consumer (or
 * exchange): the mesh advertises it (section 8.1). */
void jn_addr_advertise_CT(jn_core_t *core, jn_addr_t *addr)
{
    JN_ASSERT_CT(core);
    if (!core->mesh || addr->key_len < 2 ||
        (addr->key[0] != JN_ADDR_CLASS_MOBILE && addr->key[0] != JN_ADDR_CLASS_EDGE_SUMMARY))
        return; /* H<edge-id>: an attached edge's, advertised like mobile ones */
    bool want = addr->n_consumers > 0 || addr->inproc == JN_INPROC_EXCHANGE;
    if (want == addr->advertised)
        return;
    addr->advertised = want;
    jn_mesh_local_mobile_CT(core->mesh, addr->key, addr->key_len, want,
                            hint_of(addr->distribution));
}

static void addr_free(jn_addr_t *addr)
{
    free(addr->consumers);
    free(addr->producers);
    free(addr->key);
    free(addr);
}

void jn_addr_release_if_unused_CT(jn_core_t *core, jn_addr_t *addr)
{
    JN_ASSERT_CT(core);
    if (addr->n_consumers > 0 || addr->n_producers > 0 || addr->n_remote > 0 || addr->permanent ||
        addr->edge_hold)
        return;
    JN_CHECK(jn_hash_remove(core->ct.addrs, addr->key, addr->key_len, NULL) == 0);
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_DEBUG, "Address removed: %.*s", (int)addr->key_len,
           (const char *)addr->key);
    jn_stat_add(&core->stats.addresses, -1);
    core->ct.addr_epoch++; /* links' memos of it are stale */
    addr_free(addr);
}

void jn_addr_free_all_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    jn_hash_iter_t it;
    void *value;
    jn_hash_iter_init(core->ct.addrs, &it);
    while (jn_hash_iter_next(&it, NULL, NULL, &value)) {
        jn_addr_t *addr = value;
        jn_hash_remove(core->ct.addrs, addr->key, addr->key_len, NULL);
        if (addr->advertised && core->mesh)
            addr->advertised = false; /* teardown: nobody to tell */
        addr_free(addr);
    }
    core->ct.addr_epoch++;
    atomic_store_explicit(&core->stats.addresses, 0, memory_order_relaxed);
}

static int add_link_CT(jn_core_link_t ***arr, uint32_t *n, uint32_t *cap, jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    if (*n == *cap) {
        uint32_t grown = *cap ? *cap * 2 : 4;
        jn_core_link_t **a = realloc(*arr, grown * sizeof *a);
        if (!a)
            return JN_ENOMEM;
        *arr = a;
        *cap = grown;
    }
    link->ct.addr_index = *n;
    (*arr)[(*n)++] = link;
    return 0;
}

int jn_addr_add_consumer_CT(jn_addr_t *addr, jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    int rc = add_link_CT(&addr->consumers, &addr->n_consumers, &addr->cap_consumers, link);
    if (rc == 0) {
        link->ct.addr = addr;
        jn_addr_advertise_CT(link->conn->core, addr);
    }
    return rc;
}

int jn_addr_add_producer_CT(jn_addr_t *addr, jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    int rc = add_link_CT(&addr->producers, &addr->n_producers, &addr->cap_producers, link);
    if (rc == 0)
        link->ct.addr = addr;
    return rc;
}

jn_addr_t *jn_addr_remove_link_CT(jn_core_t *core, jn_core_link_t *link)
{
    JN_ASSERT_CT(core);
    jn_addr_t *addr = link->ct.addr;
    if (!addr)
        return NULL;
    bool consumer = link->dir == JN_LINK_OUTGOING;
    jn_core_link_t **arr = consumer ? addr->consumers : addr->producers;
    uint32_t *n = consumer ? &addr->n_consumers : &addr->n_producers;
    uint32_t i = link->ct.addr_index;
    JN_CHECK(i < *n && arr[i] == link);
    arr[i] = arr[--*n];
    arr[i]->ct.addr_index = i;
    link->ct.addr = NULL;
    if (consumer && addr->next >= addr->n_consumers)
        addr->next = 0;
    if (consumer) {
        jn_addr_advertise_CT(core, addr);
        if (!jn_addr_has_destination(addr))
            jn_link_producers_dirty_CT(addr); /* senders lose their credit */
        if (JN_UNLIKELY(core->ct.edge_conns > 0))
            jn_edge_consumers_changed_CT(core, addr);
    }
    return addr;
}

jn_core_link_t *jn_addr_pick_consumer_CT(jn_addr_t *addr)
{
    JN_ASSERT_SOME_CT();
    uint32_t n = addr->n_consumers;
    if (n == 0)
        return NULL;
    uint32_t start = addr->next < n ? addr->next : 0;
    uint32_t best = start;
    if (addr->distribution == JN_DIST_BALANCED) {
        /* fewest undelivered + unsettled; ties go round from `next` */
        uint64_t best_load = UINT64_MAX;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t i = (start + k) % n;
            const jn_core_link_t *l = addr->consumers[i];
            uint64_t load = (uint64_t)l->ct.undelivered.count + l->ct.unsettled;
            if (load < best_load) {
                best_load = load;
                best = i;
            }
        }
    } else if (JN_UNLIKELY(jn_link_full_CT(addr->consumers[best]))) {
        /* closest: past one at its unsettled bound, to one with room (none:
         * the first, its copy waits; link.c "Unsettled bound") */
        for (uint32_t k = 1; k < n; k++) {
            uint32_t i = (start + k) % n;
            if (!jn_link_full_CT(addr->consumers[i])) {
                best = i;
                break;
            }
        }
    }
    addr->next = (best + 1) % n;
    return addr->consumers[best];
}

/* base64url (RFC 4648 section 5): every character is safe in an address */
static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void jn_addr_temp_name(const uint8_t rnd[JN_ADDR_TEMP_RANDOM], char out[JN_ADDR_TEMP_CHARS + 1])
{
    size_t o = 0;
    uint32_t acc = 0;
    unsigned bits = 0;
    for (size_t i = 0; i < JN_ADDR_TEMP_RANDOM; i++) {
        acc = (acc << 8) | rnd[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out[o++] = b64url[(acc >> bits) & 0x3f];
        }
    }
    if (bits)
        out[o++] = b64url[(acc << (6 - bits)) & 0x3f];
    out[o] = '\0';
}

/* The random part of a dynamic address into name. Returns 0, or JN_AGAIN
 * when the kernel gave no random octets. */
static int dynamic_name(char name[JN_ADDR_TEMP_CHARS + 1])
{
    uint8_t rnd[JN_ADDR_TEMP_RANDOM];
    size_t got = 0;
    int tries = 0;
    /* non-blocking: before the kernel's pool is ready the attach is
     * refused rather than the core thread stalled; never a guessable name */
    while (got < sizeof rnd && tries++ < 8) {
        ssize_t n = getrandom(rnd + got, sizeof rnd - got, GRND_NONBLOCK);
        if (n > 0)
            got += (size_t)n;
        else if (n < 0 && errno != EINTR)
            break;
    }
    if (got < sizeof rnd)
        return JN_AGAIN;
    jn_addr_temp_name(rnd, name);
    return 0;
}

/* form with the router id (when with_id) and the random name, on the heap. */
static int dynamic_format(jn_core_t *core, const char *form, bool with_id, char **out)
{
    char name[JN_ADDR_TEMP_CHARS + 1];
    *out = NULL;
    int rc = dynamic_name(name);
    if (rc != 0)
        return rc;
    int n =
        with_id ? snprintf(NULL, 0, form, core->router_id, name) : snprintf(NULL, 0, form, name);
    char *s = n > 0 ? malloc((size_t)n + 1) : NULL;
    if (!s)
        return JN_ENOMEM;
    if (with_id)
        snprintf(s, (size_t)n + 1, form, core->router_id, name);
    else
        snprintf(s, (size_t)n + 1, form, name);
    *out = s;
    return 0;
}

int jn_addr_make_dynamic_CT(jn_core_t *core, char **out)
{
    JN_ASSERT_CT(core);
    /* an edge router's are _edge/<id>/...: the interiors reach it by its
     * H<id> (docs/design.md, "Edge routers") */
    const char *form = core->edge_mode ? "amqp:/_edge/%s/" JN_ADDR_TEMP_PREFIX "%s"
                                       : "amqp:/_topo/0/%s/" JN_ADDR_TEMP_PREFIX "%s";
    return dynamic_format(core, form, true, out);
}

int jn_addr_make_dynamic_target_CT(jn_core_t *core, char **out)
{
    JN_ASSERT_CT(core);
    return dynamic_format(core, "amqp:/" JN_ADDR_DYN_TARGET_PREFIX "%s", false, out);
}

/* Whether the rest of the view `it` is exactly (whole) or starts with s. */
static bool view_has(jn_iter_t *it, const char *s, bool whole)
{
    for (; *s; s++)
        if (jn_iter_octet(it) != (int)(uint8_t)*s)
            return false;
    return !whole || jn_iter_octet(it) == JN_ITER_END;
}

const char *jn_addr_consumer_refusal_CT(jn_core_t *core, const char *address)
{
    JN_ASSERT_CT(core);
    jn_iter_t it;
    jn_iter_init_string(&it, address, JN_VIEW_ADDRESS_HASH);
    switch (jn_iter_octet(&it)) {
    case JN_ADDR_CLASS_ROUTER:
    case JN_ADDR_CLASS_AREA:
    case JN_ADDR_CLASS_EDGE_SUMMARY:
        /* a consumer here would take what this router forwards to that
         * router, its dynamic addresses and $management included */
        return "another router's addresses can only be reached through the mesh";
    case JN_ADDR_CLASS_LOCAL: {
        jn_iter_t rest = it;
        if (view_has(&rest, JN_ADDR_TEMP_PREFIX, false))
            return "a dynamic address can only be had through a dynamic attach";
        if (core->edge_mode && view_has(&it, "_edge", true))
            return "another router's addresses can only be reached through the mesh";
        return NULL;
    }
    default:
        return NULL;
    }
}

/* jn_hash_key_equal_fn over an iterator (ctx). */
static bool key_equals_iter(const uint8_t *key, size_t len, void *ctx)
{
    return jn_iter_equal_bytes((const jn_iter_t *)ctx, key, len);
}

/* The address msg is sent to (its to-override when honoured, else
 * properties.to), through the address-hash view: false when it has none. */
static bool message_address(const jn_message_t *msg, bool honour_to_override, jn_iter_t *it)
{
    const jn_ra_t *ra = honour_to_override ? jn_message_annotations(msg) : NULL;
    if (ra && ra->has_to)
        *it = ra->to;
    else if (jn_message_to(msg, it) != 0)
        return false;
    jn_iter_set_view(it, JN_VIEW_ADDRESS_HASH);
    if (ra && JN_UNLIKELY(ra->phase > 0 && ra->phase <= 9))
        jn_iter_set_phase(it, (char)('0' + ra->phase)); /* a waypoint's phase */
    return true;
}

jn_addr_t *jn_addr_for_message_CT(jn_core_t *core, const jn_message_t *msg, bool honour_to_override)
{
    JN_ASSERT_CT(core);
    jn_iter_t it;
    if (!message_address(msg, honour_to_override, &it))
        return NULL;
    return jn_hash_lookup_with(core->ct.addrs, jn_iter_hash(&it), key_equals_iter, &it);
}

jn_addr_t *jn_addr_for_message_memo_CT(jn_core_t *core, const jn_message_t *msg,
                                       bool honour_to_override, jn_addr_memo_t *memo)
{
    JN_ASSERT_CT(core);
    const jn_ra_t *ra = honour_to_override ? jn_message_annotations(msg) : NULL;
    jn_iter_t field;
    if (ra && ra->has_to)
        field = ra->to;
    else if (jn_message_to_field(msg, &field) != 0)
        return NULL;
    uint8_t phase = ra && ra->phase > 0 && ra->phase <= 9 ? (uint8_t)ra->phase : 0;
    size_t len = (size_t)(field.limit - field.cursor);
    bool keepable = jn_iter_contiguous(&field) && len <= JN_ADDR_MEMO_MAX;
    if (keepable && memo->addr && memo->epoch == core->ct.addr_epoch && memo->len == len &&
        memo->phase == phase && memcmp(memo->raw, field.cursor, len) == 0)
        return memo->addr;
    jn_addr_t *addr = jn_addr_for_message_CT(core, msg, honour_to_override);
    if (addr && keepable) {
        memo->addr = addr;
        memo->epoch = core->ct.addr_epoch;
        memo->phase = phase;
        memo->len = (uint8_t)len;
        memcpy(memo->raw, field.cursor, len);
    }
    return addr;
}

bool jn_addr_unavailable_for_delivery_CT(jn_core_t *core, const jn_delivery_t *dlv)
{
    JN_ASSERT_CT(core);
    const jn_core_conn_t *c = dlv->link->conn;
    jn_iter_t it;
    if (JN_UNLIKELY(dlv->owns_to)) /* in a tenant space (tenant.c) */
        jn_iter_init_string(&it, dlv->to_override, JN_VIEW_ADDRESS_HASH);
    else if (!message_address(dlv->message, c->inter_router || (!c->internal && !c->strip_inbound),
                              &it))
        return false;
    uint8_t key[1024];
    size_t len = jn_iter_copy(&it, key, sizeof key);
    if (len == sizeof key)
        return false; /* longer than any configured prefix could decide here */
    const jn_addr_config_entry_t *cfg;
    return distribution_for_CT(core, key, len, core->default_distribution, &cfg) ==
           JN_DIST_UNAVAILABLE;
}
