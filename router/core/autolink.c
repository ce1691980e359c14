/*
 * autolink.c — auto-links (router.config.autoLink): a link the router
 * attaches itself, on the connection of the container an auto-link names,
 * for the address and direction it gives; retried when refused or lost,
 * as 1.19 retries (docs/design.md, "Link routes and auto-links").
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

void jn_lr_autolink_try_CT(jn_core_t *core, jn_autolink_t *al, jn_core_conn_t *conn)
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
    al->pending = rq->id;
    al->conn_id = conn->conn_id;
    al->state = AL_ATTACHING;
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO, "[C%" PRIu64 "] Auto-link %s: attaching %s %s",
           conn->conn_id, al->name, al->dir == JN_LINK_INCOMING ? "from" : "to",
           al->external ? al->external : al->address);
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
    jn_addr_t *addr = NULL;
    int rc = autolink_addr_CT(core, al, &addr);
    if (rc == 0 && addr)
        rc = link->dir == JN_LINK_INCOMING ? jn_addr_add_producer_CT(addr, link)
                                           : jn_addr_add_consumer_CT(addr, link);
    if (rc != 0 || !addr) {
        if (addr)
            jn_addr_release_if_unused_CT(core, addr);
        set_error(al, "amqp:not-found", rc ? "out of memory" : "the address is unavailable");
        al->state = AL_FAILED;
        link->ct.state = JN_LINK_ST_REFUSED;
        jn_work_link_CT(link, JN_WORK_LINK_CLOSE, NULL, NULL, NULL, 0);
        return;
    }
    link->ct.state = JN_LINK_ST_ATTACHED;
    uint64_t word = atomic_load_explicit(&link->flow, memory_order_acquire);
    link->ct.credit_limit = word >> 1; /* a flow that came while it waited */
    link->ct.drain = (word & 1u) != 0;
    al->state = AL_ACTIVE;
    al->timed = 0;
    set_error(al, NULL, NULL);
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO, "[C%" PRIu64 "][L%" PRIu64 "] Auto-link %s active",
           link->conn->conn_id, link->ct.id, al->name);
    if (link->dir == JN_LINK_INCOMING)
        jn_link_mark_dirty_CT(link);
    else if (addr->n_consumers == 1)
        jn_link_producers_dirty_CT(addr); /* first consumer: senders get credit */
}

void jn_lr_autolink_detached_CT(jn_core_link_t *link, bool from_conn_close)
{
    JN_ASSERT_CT(link->conn->core);
    jn_autolink_t *al = link->ct.autolink;
    link->ct.autolink = NULL;
    al->link = NULL;
    if (link->detach_condition) {
        set_error(al, link->detach_condition, link->detach_description);
        al->state = AL_FAILED;
    } else {
        al->state = from_conn_close || al->state != AL_FAILED ? AL_INACTIVE : al->state;
    }
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO, "[C%" PRIu64 "][L%" PRIu64 "] Auto-link %s %s%s%s",
           link->conn->conn_id, link->ct.id, al->name,
           al->state == AL_FAILED ? "failed: " : "detached",
           al->state == AL_FAILED && al->last_error ? al->last_error : "",
           from_conn_close ? " (connection closed)" : "");
    if (from_conn_close || link->conn->ct.closed)
        return; /* it attaches again when a connection to its container opens */
    if (!link->detach_condition && al->retries < AUTOLINK_RETRIES) {
        al->retries++;
        jn_lr_autolink_try_CT(link->conn->core, al, link->conn);
        return;
    }
    /* refused (or ended once too often): failed, and tried again later */
    if (al->state != AL_FAILED) {
        al->state = AL_FAILED;
        if (!al->last_error)
            set_error(al, NULL, "the container ended the link's session repeatedly");
    }
    jn_core_t *core = link->conn->core;
    al->retry_at =
        (int64_t)jn_time_mono_ms() + (al->timed == 0 ? AUTOLINK_FIRST_RETRY_MS : AUTOLINK_RETRY_MS);
    al->timed++;
    jn_core_timer_at_CT(core, al->retry_at);
}

void jn_lr_tick_CT(jn_core_t *core)
{
    JN_ASSERT_CT(core);
    int64_t now = (int64_t)jn_time_mono_ms(), next = 0;
    for (jn_autolink_t *al = core->lr->autolinks; al; al = al->next) {
        if (al->retry_at == 0)
            continue;
        if (al->retry_at > now) {
            next = next == 0 || al->retry_at < next ? al->retry_at : next;
            continue;
        }
        al->retry_at = 0;
        if (al->link || al->pending)
            continue;
        /* the connection it failed on, else another to its container */
        jn_core_conn_t *conn = NULL;
        for (jn_core_conn_t *c = core->ct.conns; c && !conn; c = c->ct.next)
            if (c->conn_id == al->conn_id && jn_lr_conn_serves(c, al->container_id, al->connection))
                conn = c;
        if (!conn)
            conn = jn_lr_find_conn_CT(core, al->container_id, al->connection, NULL);
        if (conn) {
            JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO,
                   "[C%" PRIu64 "] Auto-link %s: retry %u after %s", conn->conn_id, al->name,
                   al->timed, al->last_error ? al->last_error : "a failure");
            jn_lr_autolink_try_CT(core, al, conn);
        }
    }
    if (next)
        jn_core_timer_at_CT(core, next);
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
    jn_core_conn_t *conn = jn_lr_find_conn_CT(core, al->container_id, al->connection, NULL);
    if (conn)
        jn_lr_autolink_try_CT(core, al, conn);
    return 0;
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
    if (al->pending) {
        lr_request_t *rq = jn_lr_request_take_CT(core, al->pending);
        free(rq); /* its link, if it comes, finds no request and is closed */
    }
    if (al->link) {
        jn_core_link_t *link = al->link;
        link->ct.autolink = NULL;
        if (link->ct.state == JN_LINK_ST_ATTACHED || link->ct.state == JN_LINK_ST_ROUTING) {
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
    *oper_status = names[al->state];
    *last_error = al->last_error;
    *link_id = al->link ? al->link->ct.id : 0;
    return 0;
}
