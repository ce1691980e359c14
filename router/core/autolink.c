/*
 * autolink.c — auto-links (router.config.autoLink): a link the router
 * attaches itself, on each connection of the container an auto-link names
 * (or each its named listener or connector made), for the address and
 * direction it gives; retried when refused or lost, as 1.19 retries
 * (docs/design.md, "Link routes and auto-links"). Its state per
 * connection is a jn_al_conn_t; management sees the best of them.
 */
#include "address_config.h"
#include "delivery.h"
#include <junction/core_view.h>
#include <junction/iterator.h>
#include <junction/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "linkroute_private.h"

/* ---- auto-links ------------------------------------------------------------------ */

/* lastError: the error's description, as 1.19 shows it (its condition
 * when it has none); NULL: clear it. */
static void set_error(jn_autolink_t *al, const char *cond, const char *desc)
{
    free(al->last_error);
    al->last_error = NULL;
    const char *text = desc && *desc ? desc : cond;
    if (text)
        al->last_error = strdup(text);
}

/* al's state on the connection conn_id; created (inactive) when create is
 * set and it has none; NULL when it has none (or out of memory). */
static jn_al_conn_t *al_conn(jn_autolink_t *al, uint64_t conn_id, bool create)
{
    for (jn_al_conn_t *ac = al->conns; ac; ac = ac->next)
        if (ac->conn_id == conn_id)
            return ac;
    jn_al_conn_t *ac = create ? calloc(1, sizeof *ac) : NULL;
    if (ac) {
        ac->conn_id = conn_id;
        ac->next = al->conns;
        al->conns = ac;
    }
    return ac;
}

/* Whether c is one of al's (route-container connections only: see
 * jn_lr_conn_serves). */
static bool autolink_serves(const jn_autolink_t *al, const jn_core_conn_t *c)
{
    return jn_lr_conn_serves(c, al->container_id, al->connection);
}

/* The connection conn_id when it is open and still serves al, else NULL. */
static jn_core_conn_t *serving_conn_CT(jn_core_t *core, const jn_autolink_t *al, uint64_t conn_id)
{
    JN_ASSERT_CT(core);
    for (jn_core_conn_t *c = core->ct.conns; c; c = c->ct.next)
        if (c->conn_id == conn_id)
            return autolink_serves(al, c) ? c : NULL;
    return NULL;
}

/* Attach al on conn (ac: its state there). */
static void autolink_try_CT(jn_core_t *core, jn_autolink_t *al, jn_al_conn_t *ac,
                            jn_core_conn_t *conn)
{
    JN_ASSERT_CT(core);
    lr_request_t *rq = jn_lr_request_new_CT(core, conn);
    if (!rq)
        return;
    rq->autolink = al;
    char name[300];
    snprintf(name, sizeof name, "qdlink.autolink.%s", al->name);
    if (jn_lr_push_attach_CT(conn, al->dir, name, al->external ? al->external : al->address, false, NULL,
                       rq->id) != 0) {
        free(jn_lr_request_take_CT(core, rq->id));
        return;
    }
    ac->pending = rq->id;
    ac->state = AL_ATTACHING;
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO, "[C%" PRIu64 "] Auto-link %s: attaching %s %s",
           conn->conn_id, al->name, al->dir == JN_LINK_INCOMING ? "from" : "to",
           al->external ? al->external : al->address);
}

bool jn_lr_autolink_attached_CT(jn_autolink_t *al, uint64_t rq_id, jn_core_link_t *link)
{
    JN_ASSERT_CT(link->conn->core);
    jn_al_conn_t *ac = al_conn(al, link->conn->conn_id, false);
    if (!ac || ac->pending != rq_id)
        return false;
    ac->pending = 0;
    ac->link = link;
    link->ct.autolink = al;
    link->ct.state = JN_LINK_ST_ROUTING;
    /* the link is the router's address (the I/O layer gave the
     * container's): its deliveries cross the mesh to that address, with
     * the auto-link's phase; no copy exists yet */
    char *address = strdup(al->address);
    if (address) {
        free(link->address);
        link->address = address;
    }
    link->phase = al->phase >= '1' && al->phase <= '9' ? (uint8_t)(al->phase - '0') : 0;
    return true;
}

/* The mobile address key of the auto-link's address with its phase. */
static int autolink_addr_CT(jn_core_t *core, const jn_autolink_t *al, jn_addr_t **out)
{
    JN_ASSERT_CT(core);
    jn_iter_t it;
    jn_iter_init_string(&it, al->address, JN_VIEW_ADDRESS_HASH);
    jn_iter_set_phase(&it, al->phase);
    size_t n = jn_iter_length(&it);
    uint8_t *key = malloc(n ? n : 1);
    if (!key)
        return JN_ENOMEM;
    n = jn_iter_copy(&it, key, n);
    int rc = jn_addr_get_key_CT(core, key, n, core->default_distribution, out);
    free(key);
    return rc;
}

void jn_lr_autolink_answered_CT(jn_core_link_t *link)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    jn_autolink_t *al = link->ct.autolink;
    jn_al_conn_t *ac = al_conn(al, link->conn->conn_id, false);
    if (link->answer_unaddressed) {
        /* the container named no node for it (a null address in the
         * terminus it answered for): not a destination nor a source of the
         * address; the link stays up, the auto-link attaching, as 1.19 */
        JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO,
               "[C%" PRIu64 "][L%" PRIu64 "] Auto-link %s: the container answered with no address",
               link->conn->conn_id, link->ct.id, al->name);
        return;
    }
    jn_addr_t *addr = NULL;
    int rc = autolink_addr_CT(core, al, &addr);
    if (rc == 0 && addr)
        rc = link->dir == JN_LINK_INCOMING ? jn_addr_add_producer_CT(addr, link)
                                           : jn_addr_add_consumer_CT(addr, link);
    if (rc != 0 || !addr) {
        if (addr)
            jn_addr_release_if_unused_CT(core, addr);
        set_error(al, "amqp:not-found", rc ? "out of memory" : "the address is unavailable");
        if (ac)
            ac->state = AL_FAILED;
        link->ct.state = JN_LINK_ST_REFUSED;
        jn_work_link_CT(link, JN_WORK_LINK_CLOSE, NULL, NULL, NULL, 0);
        return;
    }
    link->ct.state = JN_LINK_ST_ATTACHED;
    uint64_t word = atomic_load_explicit(&link->flow, memory_order_acquire);
    link->ct.credit_limit = word >> 1; /* a flow that came while it waited */
    link->ct.drain = (word & 1u) != 0;
    if (ac) {
        ac->state = AL_ACTIVE;
        ac->timed = 0;
    }
    set_error(al, NULL, NULL);
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO, "[C%" PRIu64 "][L%" PRIu64 "] Auto-link %s active",
           link->conn->conn_id, link->ct.id, al->name);
    if (link->dir == JN_LINK_INCOMING)
        jn_link_mark_dirty_CT(link);
    else if (addr->n_consumers == 1)
        jn_link_producers_dirty_CT(addr); /* first consumer: senders get credit */
}

/* ac's link ended on purpose or failed: attach again at once (a detach
 * without error, a few times) or on the core timer. */
static void autolink_retry_CT(jn_core_link_t *link, jn_autolink_t *al, jn_al_conn_t *ac)
{
    jn_core_t *core = link->conn->core;
    JN_ASSERT_CT(core);
    if (!link->detach_condition && ac->retries < AUTOLINK_RETRIES) {
        ac->retries++;
        autolink_try_CT(core, al, ac, link->conn);
        return;
    }
    /* refused (or ended once too often): failed, and tried again later */
    if (ac->state != AL_FAILED) {
        ac->state = AL_FAILED;
        if (!al->last_error)
            set_error(al, NULL, "the container ended the link's session repeatedly");
    }
    ac->retry_at =
        (int64_t)jn_time_mono_ms() + (ac->timed == 0 ? AUTOLINK_FIRST_RETRY_MS : AUTOLINK_RETRY_MS);
    ac->timed++;
    jn_core_timer_at_CT(core, ac->retry_at);
}

void jn_lr_autolink_detached_CT(jn_core_link_t *link, bool from_conn_close)
{
    JN_ASSERT_CT(link->conn->core);
    jn_autolink_t *al = link->ct.autolink;
    link->ct.autolink = NULL;
    jn_al_conn_t *ac = al_conn(al, link->conn->conn_id, false);
    if (!ac || ac->link != link)
        return;
    ac->link = NULL;
    if (link->detach_condition) {
        set_error(al, link->detach_condition, link->detach_description);
        ac->state = AL_FAILED;
    } else {
        ac->state = from_conn_close || ac->state != AL_FAILED ? AL_INACTIVE : ac->state;
    }
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO, "[C%" PRIu64 "][L%" PRIu64 "] Auto-link %s %s%s%s",
           link->conn->conn_id, link->ct.id, al->name,
           ac->state == AL_FAILED ? "failed: " : "detached",
           ac->state == AL_FAILED && al->last_error ? al->last_error : "",
           from_conn_close ? " (connection closed)" : "");
    if (from_conn_close || link->conn->ct.closed)
        return; /* it attaches again when a connection that serves it opens */
    autolink_retry_CT(link, al, ac);
}

void jn_lr_tick_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    int64_t now = (int64_t)jn_time_mono_ms(), next = 0;
    for (jn_autolink_t *al = core->lr->autolinks; al; al = al->next)
        for (jn_al_conn_t *ac = al->conns; ac; ac = ac->next) {
            if (ac->retry_at == 0)
                continue;
            if (ac->retry_at > now) {
                next = next == 0 || ac->retry_at < next ? ac->retry_at : next;
                continue;
            }
            ac->retry_at = 0;
            jn_core_conn_t *conn = serving_conn_CT(core, al, ac->conn_id);
            if (ac->link || ac->pending || !conn)
                continue;
            JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO,
                   "[C%" PRIu64 "] Auto-link %s: retry %u after %s", conn->conn_id, al->name,
                   ac->timed, al->last_error ? al->last_error : "a failure");
            autolink_try_CT(core, al, ac, conn);
        }
    if (next)
        jn_core_timer_at_CT(core, next);
}

/* Attach al on conn, which serves it, unless it is there already. */
static void autolink_start_CT(jn_core_t *core, jn_autolink_t *al, jn_core_conn_t *conn)
{
    JN_ASSERT_CT(core);
    jn_al_conn_t *ac = al_conn(al, conn->conn_id, true);
    if (!ac) {
        JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_ERROR,
               "[C%" PRIu64 "] Auto-link %s: out of memory", conn->conn_id, al->name);
        return;
    }
    if (ac->link || ac->pending)
        return;
    ac->retries = 0;
    ac->timed = 0;
    ac->retry_at = 0;
    autolink_try_CT(core, al, ac, conn);
}

void jn_lr_autolinks_conn_opened_CT(jn_core_conn_t *conn)
{
    jn_core_t *core = conn->core;
    JN_ASSERT_CT(core);
    for (jn_autolink_t *al = core->lr->autolinks; al; al = al->next)
        if (autolink_serves(al, conn))
            autolink_start_CT(core, al, conn);
}

void jn_lr_autolinks_conn_closed_CT(jn_core_conn_t *conn)
{
    JN_ASSERT_CT(conn->core);
    for (jn_autolink_t *al = conn->core->lr->autolinks; al; al = al->next)
        for (jn_al_conn_t **p = &al->conns; *p; p = &(*p)->next)
            if ((*p)->conn_id == conn->conn_id) {
                jn_al_conn_t *ac = *p;
                *p = ac->next;
                if (ac->link) /* not detached yet: it finds no state */
                    ac->link->ct.autolink = NULL;
                free(ac);
                break;
            }
}

static jn_autolink_t *autolink_find(jn_lr_table_t *t, const char *name)
{
    for (jn_autolink_t *al = t->autolinks; al; al = al->next)
        if (strcmp(al->name, name) == 0)
            return al;
    return NULL;
}

int jn_core_autolink_add_CT(jn_core_t *core, const jn_autolink_config_t *cfg)
{
    JN_ASSERT_CT(core);
    if (!cfg->name || !cfg->address || !*cfg->address)
        return JN_EINVAL;
    if (autolink_find(core->lr, cfg->name))
        return JN_EEXIST;
    bool failed = false;
    jn_autolink_t *al = calloc(1, sizeof *al);
    if (!al)
        return JN_ENOMEM;
    al->name = jn_strdup_opt(cfg->name, &failed);
    al->address = jn_strdup_opt(cfg->address, &failed);
    al->external = jn_strdup_opt(cfg->external_address, &failed);
    al->container_id = jn_strdup_opt(cfg->container_id, &failed);
    al->connection = jn_strdup_opt(cfg->connection, &failed);
    if (failed) {
        jn_lr_autolink_free(al);
        return JN_ENOMEM;
    }
    al->dir = cfg->dir;
    int phase = cfg->phase >= 0 ? cfg->phase : cfg->dir == JN_LINK_INCOMING ? 1 : 0;
    /* a fallback auto-link out is a fallback destination (phase F); one in
     * brings the fallback queue back to the address (its own phase) */
    al->phase =
        cfg->fallback && cfg->dir == JN_LINK_OUTGOING ? 'F' : (char)('0' + (phase > 9 ? 9 : phase));
    al->fallback = cfg->fallback;
    al->next = core->lr->autolinks;
    core->lr->autolinks = al;
    for (jn_core_conn_t *c = core->ct.conns; c; c = c->ct.next)
        if (autolink_serves(al, c))
            autolink_start_CT(core, al, c);
    return 0;
}

/* Close link, an auto-link's that is going (its address forgets it). */
static void autolink_unlink_CT(jn_core_t *core, jn_core_link_t *link)
{
    JN_ASSERT_CT(core);
    link->ct.autolink = NULL;
    if (link->ct.state != JN_LINK_ST_ATTACHED && link->ct.state != JN_LINK_ST_ROUTING)
        return;
    if (link->ct.state == JN_LINK_ST_ATTACHED) {
        jn_addr_t *addr = jn_addr_remove_link_CT(core, link);
        if (link->dir == JN_LINK_OUTGOING)
            jn_forward_consumer_gone_CT(link, addr);
        if (addr)
            jn_addr_release_if_unused_CT(core, addr);
    }
    link->ct.state = JN_LINK_ST_REFUSED;
    jn_work_link_CT(link, JN_WORK_LINK_CLOSE, NULL, NULL, NULL, 0);
}

int jn_core_autolink_remove_CT(jn_core_t *core, const char *name)
{
    JN_ASSERT_CT(core);
    jn_lr_table_t *t = core->lr;
    jn_autolink_t **p = &t->autolinks;
    while (*p && strcmp((*p)->name, name ? name : "") != 0)
        p = &(*p)->next;
    jn_autolink_t *al = *p;
    if (!al)
        return JN_ENOENT;
    *p = al->next;
    for (jn_al_conn_t *ac = al->conns; ac; ac = ac->next) {
        if (ac->pending) {
            lr_request_t *rq = jn_lr_request_take_CT(core, ac->pending);
            free(rq); /* its link, if it comes, finds no request and is closed */
        }
        if (ac->link)
            autolink_unlink_CT(core, ac->link);
    }
    jn_lr_autolink_free(al);
    return 0;
}

int jn_core_autolink_status_CT(jn_core_t *core, const char *name, const char **oper_status,
                               const char **last_error, uint64_t *link_id)
{
    JN_ASSERT_CT(core);
    jn_autolink_t *al = name ? autolink_find(core->lr, name) : NULL;
    if (!al)
        return JN_ENOENT;
    static const char *const names[] = {"inactive", "attaching", "failed", "active"};
    /* the best of its connections: active, else attaching, else failed */
    static const int rank[] = {[AL_INACTIVE] = 0, [AL_FAILED] = 1, [AL_ATTACHING] = 2, [AL_ACTIVE] = 3};
    al_state_t best = AL_INACTIVE;
    *link_id = 0;
    for (const jn_al_conn_t *ac = al->conns; ac; ac = ac->next) {
        if (rank[ac->state] > rank[best] || (ac->state == best && !*link_id)) {
            best = ac->state;
            *link_id = ac->link ? ac->link->ct.id : 0;
        }
    }
    *oper_status = names[best];
    *last_error = al->last_error;
    return 0;
}
