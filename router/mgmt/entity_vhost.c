/*
 * entity_vhost.c — the vhost entity on the entity path (entity.h,
 * docs/design.md "Policy"), whichever way it came: a config file section
 * or a policyDir file's (jn_entity_from_config: the groups map kept as its
 * AMQP encoding), or a management CREATE or UPDATE (the body's values, the
 * groups map as the client encoded it).
 *
 *   jn_entity_check_vhost    the vhost's maxMessageSize and its groups:
 *                            each a map of known attributes of the right
 *                            kinds, address lists and patterns sound;
 *   jn_entity_apply_vhost_CT the checked vhost into the policy layer's
 *                            vhost table (junction/policy.h) and the
 *                            agent's vhost rows.
 *
 * A group's values are taken as 1.19 takes them: an integer or a string of
 * decimal digits ("10"); a boolean or "true"/"false" in any case.
 */
#include "entity.h"

#include <junction/decoder.h>
#include <junction/policy.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- a group's values ------------------------------------------------------ */

/* Most connections a vhost's (or a group's per-user or per-host) limit
 * may name: 1.19's bound. */
#define JN_VHOST_CONNECTIONS_MAX 65535

/* The groups map of e's `groups` value: *groups the map field of d (which
 * walks the stored encoding). False when e has no groups map. */
static bool groups_of(jn_mgmt_entity_t *e, jn_decoder_t *d, jn_field_t *groups)
{
    const jn_mv_t *v = jn_mgmt_entity_get(e, "groups");
    if (!v || v->kind != JN_MV_RAW)
        return false;
    jn_iter_t raw;
    jn_iter_raw_run(&raw, NULL, v->v.raw, v->len);
    jn_decoder_init(d, &raw, true);
    return jn_decoder_next(d, groups) == 1 && groups->type == JN_TYPE_MAP;
}

/* A group attribute the router acts on, its kind into *kind: those of the
 * schema's vhostUserGroupSettings type (router/config/schema.json, 1.19's
 * list) but the entity's own name, identity and type, and the group's
 * maxConnections, which 1.19's policy files carry in groups though its
 * schema does not list it. False for any other key: it is refused by
 * name. */
static bool group_attr_kind(const char *key, jn_schema_kind_t *kind)
{
    *kind = JN_SCHEMA_INTEGER;
    if (strcmp(key, "maxConnections") == 0)
        return true;
    if (strcmp(key, "name") == 0 || strcmp(key, "identity") == 0 || strcmp(key, "type") == 0)
        return false;
    const jn_schema_type_t *t = jn_schema_type_find("vhostUserGroupSettings");
    const jn_schema_attr_t *a = t ? jn_schema_attr_find(t, key) : NULL;
    if (!a || strcmp(jn_schema_attr_name(a), key) != 0) /* an old name is none */
        return false;
    *kind = jn_schema_attr_kind(a);
    return true;
}

/* A group's integer: any AMQP integer, or a string of decimal digits as
 * 1.19 takes it ("10"); false when f is neither. */
static bool group_int_of(const jn_field_t *f, int64_t *out)
{
    if (jn_field_is_integer(f))
        return jn_field_to_int64(f, out) == 0;
    char s[24];
    if (jn_mgmt_field_string(f, s, sizeof s) != 0 || !s[0] || strlen(s) > 18 ||
        strspn(s, "0123456789") != strlen(s))
        return false;
    *out = strtoll(s, NULL, 10);
    return true;
}

/* A group's boolean: an AMQP boolean, or the string "true" or "false" in
 * any case, as 1.19 takes it; false when f is neither. */
static bool group_bool_of(const jn_field_t *f, bool *out)
{
    if (f->type == JN_TYPE_BOOLEAN) {
        *out = f->value.b;
        return true;
    }
    char s[8];
    if (jn_mgmt_field_string(f, s, sizeof s) != 0 ||
        (strcasecmp(s, "true") != 0 && strcasecmp(s, "false") != 0))
        return false;
    *out = strcasecmp(s, "true") == 0;
    return true;
}

/* A heap copy of string field f ("" when f is absent or not a string). */
static char *field_dup(const jn_field_t *f)
{
    bool text = f && (f->type == JN_TYPE_STRING || f->type == JN_TYPE_SYMBOL);
    char *s = malloc(text ? (size_t)f->size + 1 : 1);
    if (s && text) {
        jn_iter_t it = f->payload;
        s[jn_iter_copy(&it, s, f->size)] = '\0';
    } else if (s) {
        s[0] = '\0';
    }
    return s;
}

/* The value of key in group map g (of d) into *out; false when absent. */
static bool group_find(const jn_decoder_t *d, const jn_field_t *g, const char *key, jn_field_t *out)
{
    jn_decoder_t in;
    jn_field_t k;
    char text[64];
    if (jn_decoder_enter(d, g, &in) != 0)
        return false;
    while (jn_decoder_next(&in, &k) == 1 && jn_decoder_next(&in, out) == 1)
        if (jn_mgmt_field_string(&k, text, sizeof text) == 0 && strcmp(text, key) == 0)
            return true;
    return false;
}

/* ---- check ------------------------------------------------------------------- */

/* A vhost's check under way: where its refusals go. */
typedef struct vcheck {
    const jn_entity_ctx_t *ctx; /* ctx->each: every refusal said there */
    jn_entity_err_t *err;
    int status; /* of the last refusal */
} vcheck_t;

/* A refusal (err filled): said through ctx->each and 0 (go on: the file
 * lists every one), or, without each, its status (stop at the first). */
static int refusal(vcheck_t *vc)
{
    vc->status = vc->err->status;
    if (!vc->ctx->each)
        return vc->status;
    vc->ctx->each(vc->ctx->each_arg, vc->err);
    vc->err->said = true;
    return 0;
}

/* A refusal about group gname's attribute key (NULL: the group) of vhost
 * host: err names `groups`, and the group and key, so that a file points
 * at their line (jn_entity_file_error). As refusal(). */
static int group_fail(vcheck_t *vc, const char *gname, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int group_fail(vcheck_t *vc, const char *gname, const char *key, const char *fmt, ...)
{
    jn_entity_err_t *err = vc->err;
    va_list ap;
    va_start(ap, fmt);
    jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "groups", "%s", "");
    vsnprintf(err->text, sizeof err->text, fmt, ap);
    va_end(ap);
    snprintf(err->group, sizeof err->group, "%s", gname);
    snprintf(err->key, sizeof err->key, "%s", key ? key : "");
    return refusal(vc);
}

/* Each attribute of group g: known, of its kind. */
static int check_group_values(const char *host, const char *gname, const jn_decoder_t *d,
                              const jn_field_t *g, vcheck_t *vc)
{
    jn_decoder_t in;
    jn_field_t k, v;
    int st = 0;
    if (jn_decoder_enter(d, g, &in) != 0)
        return group_fail(vc, gname, NULL, "vhost '%s' group '%s' must be a map", host, gname);
    while (st == 0 && jn_decoder_next(&in, &k) == 1 && jn_decoder_next(&in, &v) == 1) {
        char key[128];
        if (jn_mgmt_field_string(&k, key, sizeof key) != 0)
            snprintf(key, sizeof key, "?");
        int64_t n = 0;
        bool b = false;
        jn_schema_kind_t want;
        if (!group_attr_kind(key, &want)) {
            st = group_fail(vc, gname, key,
                              "vhost '%s' group '%s' attribute '%s' is not supported by this "
                            "version of junctiond",
                            host, gname, key);
            continue;
        }
        /* a group's per-user and per-host limits have 1.19's vhost bound */
        bool per = strncmp(key, "maxConnectionsPer", 17) == 0;
        const char *must = "a comma-separated string";
        bool bad = v.type != JN_TYPE_STRING && v.type != JN_TYPE_SYMBOL;
        if (want == JN_SCHEMA_INTEGER) {
            must = per ? "an integer from 0 to 65535" : "an integer from 0";
            bad = !group_int_of(&v, &n) || n < 0 || (per && n > JN_VHOST_CONNECTIONS_MAX);
        } else if (want == JN_SCHEMA_BOOLEAN) {
            must = "true or false";
            bad = !group_bool_of(&v, &b);
        }
        if (bad)
            st = group_fail(vc, gname, key, "vhost '%s' group '%s' attribute '%s' must be %s", host,
                            gname, key, must);
    }
    return st;
}

/* A list or pattern that allows something: not only commas and spaces. */
static bool non_empty(const char *text)
{
    return text[strspn(text, " ,")] != '\0';
}

/* A group's address rules: a list and a pattern of the same kind are not
 * both given (1.19 refuses them: which one rules would be a guess; an
 * empty one allows nothing and is no rival), and each pattern is well
 * formed (jn_policy_pattern_list_check). Values were checked to be
 * strings. */
static int check_group_addresses(const char *host, const char *gname, const jn_decoder_t *d,
                                 const jn_field_t *g, vcheck_t *vc)
{
    static const char *const kinds[][2] = {{"sources", "sourcePattern"},
                                           {"targets", "targetPattern"}};
    int st = 0;
    for (size_t i = 0; i < 2 && st == 0; i++) {
        jn_field_t lf, pf;
        char *list = field_dup(group_find(d, g, kinds[i][0], &lf) ? &lf : NULL);
        char *pat = field_dup(group_find(d, g, kinds[i][1], &pf) ? &pf : NULL);
        char why[320];
        if (!list || !pat)
            st = jn_entity_fail(vc->err, JN_MGMT_INTERNAL, NULL, "out of memory");
        else if (non_empty(list) && non_empty(pat))
            st = group_fail(vc, gname, kinds[i][1],
                            "vhost '%s' group '%s': give '%s' or '%s', not both", host, gname,
                            kinds[i][0], kinds[i][1]);
        else if (jn_policy_pattern_list_check(pat, why, sizeof why) != 0)
            st = group_fail(vc, gname, kinds[i][1], "vhost '%s' group '%s' attribute '%s': %s",
                            host, gname, kinds[i][1], why);
        free(list);
        free(pat);
    }
    return st;
}

int jn_entity_check_vhost(const jn_entity_ctx_t *ctx, jn_mgmt_entity_t *e, jn_entity_err_t *err)
{
    vcheck_t vc = {.ctx = ctx, .err = err};
    const char *host = jn_mgmt_entity_str(e, "hostname");
    host = host ? host : "";
    int st = 0;
    if (jn_mgmt_entity_int(e, "maxMessageSize", 0) < 0) {
        jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "maxMessageSize",
                       "vhost '%s' attribute 'maxMessageSize' must be an integer from 0", host);
        st = refusal(&vc);
    }
    /* 1.19's range (0: no connection is admitted) */
    static const char *const limits[] = {"maxConnections", "maxConnectionsPerUser",
                                         "maxConnectionsPerHost"};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0] && st == 0; i++) {
        int64_t n = jn_mgmt_entity_int(e, limits[i], 0);
        if (n < 0 || n > JN_VHOST_CONNECTIONS_MAX) {
            jn_entity_fail(err, JN_MGMT_BAD_REQUEST, limits[i],
                           "vhost '%s' attribute '%s' must be an integer from 0 to %d", host,
                           limits[i], JN_VHOST_CONNECTIONS_MAX);
            st = refusal(&vc);
        }
    }
    jn_decoder_t d, in;
    jn_field_t groups, k, g;
    if (!groups_of(e, &d, &groups) || jn_decoder_enter(&d, &groups, &in) != 0)
        return vc.status; /* no groups; a value not a map is refused by its type */
    while (st == 0 && jn_decoder_next(&in, &k) == 1 && jn_decoder_next(&in, &g) == 1) {
        char gname[128];
        if (jn_mgmt_field_string(&k, gname, sizeof gname) != 0) {
            jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "groups",
                           "vhost '%s' groups: a group's name must be a string of at most 127 "
                           "octets",
                           host);
            st = refusal(&vc);
            continue;
        }
        int before = vc.status;
        vc.status = 0;
        st = check_group_values(host, gname, &in, &g, &vc);
        if (!st && !vc.status) /* its addresses once its values are sound */
            st = check_group_addresses(host, gname, &in, &g, &vc);
        vc.status = vc.status ? vc.status : before;
    }
    return st ? st : vc.status;
}

/* ---- the policy layer's vhost ---------------------------------------------- */

/* The strings of one group, owned (freed by vhost_build_free): its name
 * and the values of group_str_keys. */
enum { G_NAME, G_USERS, G_HOSTS, G_SOURCES, G_TARGETS, G_SOURCE_PATTERN, G_TARGET_PATTERN, G_STRS };
static const char *const group_str_keys[G_STRS] = {
    NULL, "users", "remoteHosts", "sources", "targets", "sourcePattern", "targetPattern"};

typedef struct vhost_build {
    jn_policy_vhost_t vh;
    jn_policy_group_t *groups;
    char **strs; /* G_STRS per group */
    size_t n;
} vhost_build_t;

static void vhost_build_free(vhost_build_t *b)
{
    for (size_t i = 0; b->strs && i < b->n * G_STRS; i++)
        free(b->strs[i]);
    free(b->strs);
    free(b->groups);
}

/* A group's limit, or dflt when absent. */
static uint32_t group_limit(const jn_decoder_t *d, const jn_field_t *g, const char *key,
                            uint32_t dflt)
{
    jn_field_t f;
    int64_t n = 0;
    if (!group_find(d, g, key, &f) || !group_int_of(&f, &n))
        return dflt;
    return n < 0 ? 0 : n >= UINT32_MAX ? UINT32_MAX - 1 : (uint32_t)n;
}

/* A group's boolean, dflt when absent (the schema's defaults). */
static bool group_bool(const jn_decoder_t *d, const jn_field_t *g, const char *key, bool dflt)
{
    jn_field_t f;
    bool b = dflt;
    return group_find(d, g, key, &f) && group_bool_of(&f, &b) ? b : dflt;
}

/* One group (map g of d, named strs[G_NAME]) into *out, its strings
 * into strs. */
static int build_group(const jn_decoder_t *d, const jn_field_t *g, char **strs,
                       jn_policy_group_t *out)
{
    for (size_t s = G_USERS; s < G_STRS; s++) {
        jn_field_t f;
        bool has = group_find(d, g, group_str_keys[s], &f);
        if (!(strs[s] = field_dup(has ? &f : NULL)))
            return JN_ENOMEM;
    }
    int64_t mms = 0;
    jn_field_t f;
    bool has_mms = group_find(d, g, "maxMessageSize", &f) && group_int_of(&f, &mms);
    *out = (jn_policy_group_t){
        .name = strs[G_NAME],
        .users = strs[G_USERS],
        .remote_hosts = strs[G_HOSTS],
        .max_per_user = group_limit(d, g, "maxConnectionsPerUser", UINT32_MAX),
        .max_per_host = group_limit(d, g, "maxConnectionsPerHost", UINT32_MAX),
        .max_connections = group_limit(d, g, "maxConnections", UINT32_MAX),
        .sources = strs[G_SOURCES],
        .targets = strs[G_TARGETS],
        .source_pattern = strs[G_SOURCE_PATTERN],
        .target_pattern = strs[G_TARGET_PATTERN],
        .allow_anonymous_sender = group_bool(d, g, "allowAnonymousSender", false),
        .allow_dynamic_source = group_bool(d, g, "allowDynamicSource", false),
        .allow_user_id_proxy = group_bool(d, g, "allowUserIdProxy", false),
        .max_frame_size = group_limit(d, g, "maxFrameSize", 0),
        .max_sessions = group_limit(d, g, "maxSessions", 0),
        .max_session_window = group_limit(d, g, "maxSessionWindow", 0),
        /* the schema's defaults: 2147483647 links, every right */
        .max_senders = group_limit(d, g, "maxSenders", INT32_MAX),
        .max_receivers = group_limit(d, g, "maxReceivers", INT32_MAX),
        .allow_waypoint_links = group_bool(d, g, "allowWaypointLinks", true),
        .allow_fallback_links = group_bool(d, g, "allowFallbackLinks", true),
        .allow_dynamic_link_routes = group_bool(d, g, "allowDynamicLinkRoutes", true),
        .allow_admin_status_update = group_bool(d, g, "allowAdminStatusUpdate", true),
        .has_max_message_size = has_mms,
        .max_message_size = mms > 0 ? (uint64_t)mms : 0};
    return 0;
}

static uint32_t limit(int64_t x)
{
    return x < 0 ? 0u : x >= UINT32_MAX ? UINT32_MAX - 1 : (uint32_t)x;
}

/* The policy layer's form of checked vhost e into b (its strings: e's or
 * b's own; free with vhost_build_free, also on failure). 0 or JN_ENOMEM. */
static int vhost_build(jn_mgmt_entity_t *e, vhost_build_t *b)
{
    memset(b, 0, sizeof *b);
    jn_decoder_t d, in;
    jn_field_t groups, k, g;
    size_t n = 0;
    if (groups_of(e, &d, &groups) && jn_decoder_enter(&d, &groups, &in) == 0)
        n = groups.count / 2;
    b->groups = n ? calloc(n, sizeof *b->groups) : NULL;
    b->strs = n ? calloc(n * G_STRS, sizeof *b->strs) : NULL;
    if (n && (!b->groups || !b->strs))
        return JN_ENOMEM;
    b->n = n;
    for (size_t i = 0; i < n; i++) {
        char **strs = b->strs + i * G_STRS;
        if (jn_decoder_next(&in, &k) != 1 || jn_decoder_next(&in, &g) != 1)
            return JN_ENOMEM; /* checked before: cannot be cut short */
        if (!(strs[G_NAME] = field_dup(&k)) || build_group(&in, &g, strs, &b->groups[i]) != 0)
            return JN_ENOMEM;
    }
    const jn_mv_t *mms = jn_mgmt_entity_get(e, "maxMessageSize");
    int64_t max = jn_mgmt_entity_int(e, "maxMessageSize", 0);
    b->vh = (jn_policy_vhost_t){
        .hostname = jn_mgmt_entity_str(e, "hostname"),
        .aliases = jn_mgmt_entity_str(e, "aliases"),
        .max_connections = limit(jn_mgmt_entity_int(e, "maxConnections", 65535)),
        .max_per_user = limit(jn_mgmt_entity_int(e, "maxConnectionsPerUser", 65535)),
        .max_per_host = limit(jn_mgmt_entity_int(e, "maxConnectionsPerHost", 65535)),
        .allow_unknown_user = jn_mgmt_entity_bool(e, "allowUnknownUser", false),
        /* no schema default: set only when the vhost says */
        .has_max_message_size = mms && mms->kind != JN_MV_NULL,
        .max_message_size = max > 0 ? (uint64_t)max : 0,
        .groups = b->groups,
        .group_count = n};
    return 0;
}

/* ---- apply ------------------------------------------------------------------- */

/* The words of a hostname pattern conflict, into why (cap octets). */
void jn_entity_vhost_conflict_text(char *why, size_t cap, const char *host, const char *other)
{
    snprintf(why, cap,
             "vhost hostname '%.100s': the pattern conflicts with vhost '%.100s' (both match "
             "the same names)",
             host, other);
}

void jn_entity_vhost_duplicate_text(char *why, size_t cap, const char *host, const char *first)
{
    snprintf(why, cap, "vhost hostname '%.100s' is defined twice (first at %.300s)", host,
             first ? first : "an earlier section");
}

/* The agent's vhost row of hostname host, with its link. */
static jn_mgmt_entity_t **row_of(jn_mgmt_t *agent, const char *host)
{
    jn_mgmt_entity_t **pp = &agent->vhosts;
    for (; *pp; pp = &(*pp)->next) {
        const char *h = jn_mgmt_entity_str(*pp, "hostname");
        if (h && strcmp(h, host) == 0)
            break;
    }
    return pp;
}

/* Refuse host when it is there already (how) or, with name patterns,
 * when its pattern matches the names another's does. */
static int refuse_hostname(jn_mgmt_t *agent, const char *host, jn_entity_vhost_how_t how,
                           jn_entity_err_t *err)
{
    jn_mgmt_entity_t *row = *row_of(agent, host);
    if (how == JN_VHOST_CREATE && row)
        return jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "hostname",
                              "Name conflicts with an existing entity");
    if (how == JN_VHOST_FILE && row) {
        jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "hostname", "%s", "");
        jn_entity_vhost_duplicate_text(err->text, sizeof err->text, host, row->where);
        return err->status;
    }
    if (how == JN_VHOST_UPDATE || !agent->cfg.enable_vhost_name_patterns)
        return 0;
    for (jn_mgmt_entity_t *o = agent->vhosts; o; o = o->next) {
        const char *h = jn_mgmt_entity_str(o, "hostname");
        if (h && jn_policy_host_patterns_conflict(h, host)) {
            jn_entity_fail(err, JN_MGMT_BAD_REQUEST, "hostname", "%s", "");
            jn_entity_vhost_conflict_text(err->text, sizeof err->text, host, h);
            return err->status;
        }
    }
    return 0;
}

int jn_entity_apply_vhost_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_entity_vhost_how_t how,
                             jn_entity_err_t *err)
{
    const char *host = jn_mgmt_entity_str(e, "hostname");
    host = host ? host : "";
    int st = refuse_hostname(agent, host, how, err);
    if (st)
        return st;
    char id[JN_MGMT_STR_MAX + 16];
    snprintf(id, sizeof id, "vhost/%s", host);
    free(e->identity); /* an UPDATE's copy of the row has one */
    e->identity = NULL;
    /* unnamed: named by its identity, as the config file names it */
    if (jn_mgmt_entity_set_identity(agent, e, id) != 0)
        return jn_entity_fail(err, JN_MGMT_INTERNAL, NULL, "out of memory");
    vhost_build_t b;
    int rc = vhost_build(e, &b);
    if (rc == 0 && (!agent->cfg.policy || jn_policy_vhost_add(agent->cfg.policy, &b.vh) != 0))
        rc = JN_ENOMEM;
    vhost_build_free(&b);
    if (rc)
        return jn_entity_fail(err, JN_MGMT_INTERNAL, NULL, "out of memory");
    /* the row: in place of the one of the same hostname (an UPDATE), else
     * appended */
    jn_mgmt_entity_t **pp = row_of(agent, host);
    if (*pp) {
        e->next = (*pp)->next;
        jn_mgmt_entity_free(*pp);
    } else {
        e->next = NULL;
    }
    *pp = e;
    return 0;
}
