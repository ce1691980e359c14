/*
 * config_ct.c — run-time changes management makes to the core
 * (junction/core_view.h): `address` entities created or deleted while the
 * router runs, and closing a connection (DELETE connector, UPDATE
 * connection adminStatus=deleted).
 *
 * The address-configuration table is filled by the main thread before the
 * core starts and read by the core thread afterwards (address_config.h);
 * from then on only the core thread changes it, here. An entry applies to
 * addresses created after it: the distribution of an address is decided
 * when it is first attached to.
 */
#include <junction/core_view.h>

#include "core_private.h"

#include <stdlib.h>
#include <string.h>

int jn_core_address_config_add_CT(jn_core_t *core, const char *prefix_or_pattern, bool pattern,
                                  jn_distribution_t distribution, bool mc_backpressure)
{
    JN_ASSERT_CT(core);
    int rc = jn_addr_config_add(&core->config, prefix_or_pattern, pattern, distribution);
    if (rc == 0) /* the new entry is the last one (address_config.h) */
        core->config.entries[core->config.count - 1].mc_backpressure = mc_backpressure;
    return rc;
}

int jn_core_address_config_set_phases_CT(jn_core_t *core, int ingress, int egress)
{
    JN_ASSERT_CT(core);
    if (core->config.count == 0 || ingress < 0 || ingress > 9 || egress < 0 || egress > 9)
        return JN_EINVAL;
    jn_addr_config_entry_t *e = &core->config.entries[core->config.count - 1];
    e->ingress_phase = (uint8_t)ingress;
    e->egress_phase = (uint8_t)egress;
    return 0;
}

int jn_core_address_config_set_fallback_CT(jn_core_t *core, bool on)
{
    JN_ASSERT_CT(core);
    if (core->config.count == 0)
        return JN_EINVAL;
    core->config.entries[core->config.count - 1].fallback = on;
    return 0;
}

int jn_core_address_config_set_priority_CT(jn_core_t *core, int priority)
{
    JN_ASSERT_CT(core);
    if (core->config.count == 0 || priority < -1 || priority > 9)
        return JN_EINVAL;
    core->config.entries[core->config.count - 1].priority = (int8_t)priority;
    return 0;
}

/* The text as jn_addr_config_add stores it (separators at the end dropped,
 * a pattern's runs of '#' tokens collapsed), by adding it to a scratch
 * table (which does exactly that). */
static char *stored_form(const char *text, bool pattern)
{
    jn_addr_config_t tmp;
    jn_addr_config_init(&tmp);
    char *out = NULL;
    if (jn_addr_config_add(&tmp, text, pattern, JN_DIST_BALANCED) == 0)
        out = strdup(tmp.entries[0].text);
    jn_addr_config_fini(&tmp);
    return out;
}

int jn_core_address_config_remove_CT(jn_core_t *core, const char *prefix_or_pattern, bool pattern)
{
    JN_ASSERT_CT(core);
    if (!prefix_or_pattern)
        return JN_ENOENT;
    char *want = stored_form(prefix_or_pattern, pattern);
    if (!want)
        return JN_ENOMEM;
    jn_addr_config_t *cfg = &core->config;
    int rc = JN_ENOENT;
    for (size_t i = 0; i < cfg->count; i++) {
        jn_addr_config_entry_t *e = &cfg->entries[i];
        if (e->pattern != pattern || strcmp(e->text, want) != 0)
            continue;
        free(e->text);
        memmove(e, e + 1, (cfg->count - i - 1) * sizeof *e);
        cfg->count--;
        rc = 0;
        break;
    }
    free(want);
    return rc;
}

int jn_core_conn_close_CT(jn_core_t *core, uint64_t id, const char *condition,
                          const char *description)
{
    JN_ASSERT_CT(core);
    jn_core_conn_t *conn = NULL;
    for (jn_core_conn_t *c = core->ct.conns; c && !conn; c = c->ct.next)
        if (c->conn_id == id && !c->ct.closed)
            conn = c;
    if (!conn)
        return JN_ENOENT;
    if (conn->inter_router || conn->edge)
        return JN_EPERM; /* the mesh's own: its connector would only open it again */
    if (conn->ct.admin_deleted)
        return 0; /* closing already */
    jn_work_t *w = jn_work_new_CT(core, JN_WORK_CONN_CLOSE);
    if (!w)
        return JN_ENOMEM;
    w->condition = condition ? strdup(condition) : NULL;
    w->description = description ? strdup(description) : NULL;
    if ((condition && !w->condition) || (description && !w->description)) {
        jn_work_free(w);
        return JN_ENOMEM;
    }
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO, "[C%" PRIu64 "] Closing connection (management)",
           id);
    w->forced = true; /* a peer that does not answer cannot keep it */
    jn_work_push_CT(conn, w);
    conn->ct.admin_deleted = true;
    return 0;
}
