/*
 * query.c — QUERY (docs/protocol.md, "Management requests") and READ of one row.
 *
 * QUERY answers {"attributeNames": [...], "results": [[...], ...]}: the
 * requested attribute names in order (all of the type's columns, in the
 * order of 1.19's columns, when the list is empty or absent), one inner list per
 * entity. `offset` skips rows, `count` bounds them (absent: all, as 1.19's
 * C agent; the tools page with count 500), so a client can walk any number
 * of connections page by page while each request costs the core thread
 * only one walk of the list and the rows it returns.
 *
 * Without an entityType every served type is listed in turn (configuration
 * first), with the union of their column names when none are requested;
 * paging counts rows across the types. An attribute name no requested type
 * has is refused (404, as the Python agent), not echoed as `name` (1.19's
 * C agent quirk).
 */
#include "mgmt_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NAMES 256

typedef struct names {
    const char *v[MAX_NAMES]; /* borrowed: class tables or `text` */
    size_t n;
    char *text; /* requested names, NUL-separated (heap) */
} names_t;

static bool names_has(const names_t *ns, const char *name)
{
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i], name) == 0)
            return true;
    return false;
}

/* The attributeNames of the body (none: ns->n 0). Returns 0 or a status. */
static int requested_names(const jn_mgmt_request_t *req, names_t *ns, jn_mgmt_reply_t *reply)
{
    jn_decoder_t map, list;
    jn_field_t k, v;
    if (!req->has_body)
        return 0;
    if (req->body.type != JN_TYPE_MAP || jn_decoder_enter(&req->body_dec, &req->body, &map) != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Body of request must be a map");
    while (jn_decoder_next(&map, &k) == 1 && jn_decoder_next(&map, &v) == 1) {
        if (!jn_field_equal_string(&k, "attributeNames") || v.type == JN_TYPE_NULL)
            continue;
        if ((v.type != JN_TYPE_LIST && v.type != JN_TYPE_ARRAY) ||
            jn_decoder_enter(&map, &v, &list) != 0)
            return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                     "attributeNames must be a list of strings");
        if (ns->text) /* the key twice: a map key must be unique */
            return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                     "attributeNames is given more than once");
        ns->text = malloc(v.size + v.count + 1);
        if (!ns->text)
            return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
        char *p = ns->text;
        jn_field_t f;
        while (jn_decoder_next(&list, &f) == 1) {
            if (ns->n == MAX_NAMES || jn_mgmt_field_string(&f, p, f.size + 1) != 0)
                return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                         "attributeNames must be a list of at most %d strings",
                                         MAX_NAMES);
            ns->v[ns->n++] = p;
            p += f.size + 1;
        }
    }
    return 0;
}

typedef struct query_ctx {
    jn_encoder_t *e;
    int cols[MAX_NAMES]; /* column of the current class per name, -1: null */
    size_t n;
    size_t emitted;
    const jn_mgmt_class_t *all; /* a QUERY of every type: the current class */
} query_ctx_t;

/* A row's identity and name in a QUERY of every type, as 1.19's Python
 * agent (which answers it) gives them: every identity is "<type>/<key>"
 * (the prefix-less type name; the router's key is its id), and a name
 * defaults to that identity. A connection keeps its decimal identity, the
 * management node its "self". READ takes these identities too
 * (jn_mgmt_read_row). pid (cap octets) receives the identity; *name the
 * name to show. */
static void python_view(const jn_mgmt_class_t *cls, const jn_mv_t *row, char *pid, size_t cap,
                        jn_mv_t *id, jn_mv_t *name)
{
    *id = row[1];
    *name = row[0];
    if (strcmp(cls->name, "connection") == 0 || strcmp(cls->name, "management") == 0)
        return;
    bool router = strcmp(cls->name, "router") == 0;
    int k = router ? jn_mgmt_class_col_index(cls, "id") : 1;
    const jn_mv_t *key = k >= 0 ? &row[k] : NULL;
    size_t plen = strlen(cls->name);
    if (!key || key->kind != JN_MV_STR)
        return;
    if (!router && key->len > plen && strncmp(key->v.s, cls->name, plen) == 0 &&
        key->v.s[plen] == '/') {
        snprintf(pid, cap, "%.*s", (int)key->len, key->v.s);
    } else {
        snprintf(pid, cap, "%s/%.*s", cls->name, (int)key->len, key->v.s);
    }
    *id = jn_mv_strn(pid, strlen(pid));
    if (router || name->kind == JN_MV_NULL)
        *name = *id;
}

static bool query_row(void *arg, const jn_mv_t *row)
{
    query_ctx_t *q = arg;
    char pid[2 * JN_MGMT_STR_MAX];
    jn_mv_t id = row[1], name = row[0];
    if (q->all)
        python_view(q->all, row, pid, sizeof pid, &id, &name);
    jn_enc_list_begin(q->e);
    for (size_t i = 0; i < q->n; i++) {
        if (q->cols[i] < 0)
            jn_enc_null(q->e);
        else if (q->cols[i] <= 1)
            jn_mv_encode(q->e, q->cols[i] == 0 ? &name : &id);
        else
            jn_mv_encode(q->e, &row[q->cols[i]]);
    }
    jn_enc_list_end(q->e);
    q->emitted++;
    return jn_encoder_error(q->e) == 0;
}

/* Columns of cls for the names; unknown names are appended to bad. */
static void map_columns(const jn_mgmt_class_t *cls, const names_t *ns, query_ctx_t *q, char *bad,
                        size_t bad_cap)
{
    q->n = ns->n;
    for (size_t i = 0; i < ns->n; i++) {
        q->cols[i] = cls ? jn_mgmt_class_col_index(cls, ns->v[i]) : -1;
        if (q->cols[i] < 0 && bad) {
            size_t used = strlen(bad);
            snprintf(bad + used, bad_cap - used, "%s'%s'", used ? ", " : "", ns->v[i]);
        }
    }
}

static void encode_names(jn_encoder_t *e, const names_t *ns)
{
    jn_enc_cstring(e, "attributeNames");
    jn_enc_list_begin(e);
    for (size_t i = 0; i < ns->n; i++)
        jn_enc_cstring(e, ns->v[i]);
    jn_enc_list_end(e);
}

/* The types 1.19's C agent answers a QUERY of when the request's `type`
 * (its full name) names them and no entityType is given. */
static const char *const c_agent_types[] = {
    "router",
    "connection",
    "router.link",
    "router.address",
    "router.config.address",
    "router.config.linkRoute",
    "router.config.autoLink",
    "router.config.exchange",
    "router.config.binding",
    "router.connection.linkRoute",
};

bool jn_mgmt_is_c_agent_type(const char *t)
{
    static const char prefix[] = "org.apache.qpid.dispatch.";
    if (strncmp(t, prefix, sizeof prefix - 1) != 0)
        return false;
    for (size_t i = 0; i < sizeof c_agent_types / sizeof c_agent_types[0]; i++)
        if (strcmp(t + sizeof prefix - 1, c_agent_types[i]) == 0)
            return true;
    return false;
}

/* The type a QUERY lists into *out ("" for every type), as 1.19 decides:
 * entityType; else, when the target `type` is given and is not the
 * management node's, that type if 1.19's C agent owns it (its full name:
 * 1.19's own tests query so); anything else is a request for the entities
 * of one type addressed to an entity with no name or identity: 400, as
 * 1.19's Python agent answers (never every entity of every type). */
static int query_type(const jn_mgmt_request_t *req, const char **out, jn_mgmt_reply_t *reply)
{
    *out = req->has_entity_type ? req->entity_type : "";
    if (!req->has_type || !req->type[0])
        return 0;
    const jn_schema_type_t *st = jn_schema_type_find(req->type);
    if (st && (strcmp(jn_schema_type_name(st), "org.amqp.management") == 0 ||
               strcmp(jn_schema_type_name(st), "management") == 0))
        return 0; /* the node: entityType says what to list */
    if (req->has_entity_type && jn_mgmt_is_c_agent_type(req->entity_type))
        return 0;
    if (!req->has_entity_type && jn_mgmt_is_c_agent_type(req->type)) {
        *out = req->type;
        return 0;
    }
    return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                             "%s: No name or identity provided (a QUERY names the type to list in "
                             "'entityType'; 'type' is the management node's, "
                             "org.amqp.management)",
                             req->type);
}

/* The classes to list (of type t, "" for all) and the names to show. */
static int query_plan(const jn_mgmt_request_t *req, const char *t, const jn_mgmt_class_t **only,
                      bool *unserved, names_t *ns, jn_mgmt_reply_t *reply)
{
    const jn_schema_type_t *st = NULL;
    *only = t[0] ? jn_mgmt_class_find(t, &st) : NULL;
    if (t[0] && !st)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "No such entity type '%s'", t);
    *unserved = t[0] && !*only;
    int status = requested_names(req, ns, reply);
    if (status || ns->n)
        return status;
    if (*unserved) {
        for (size_t i = 0; i < jn_schema_type_attr_count(st) && ns->n < MAX_NAMES; i++)
            ns->v[ns->n++] = jn_schema_attr_name(jn_schema_type_attr_at(st, i));
        return 0;
    }
    for (size_t c = 0; c < jn_mgmt_class_count(); c++) {
        const jn_mgmt_class_t *cls = jn_mgmt_class_at(c);
        if (*only && cls != *only)
            continue;
        for (size_t i = 0; i < jn_mgmt_class_ncols(cls) && ns->n < MAX_NAMES; i++)
            if (!names_has(ns, jn_mgmt_class_col(cls, i)))
                ns->v[ns->n++] = jn_mgmt_class_col(cls, i);
    }
    return 0;
}

/* Unknown requested names: for one type, those it lacks; for all types,
 * those no type has. */
static int check_names(const jn_mgmt_class_t *only, bool unserved, const char *t, const names_t *ns,
                       query_ctx_t *q, jn_mgmt_reply_t *reply)
{
    char bad[512] = "";
    if (unserved) {
        const jn_schema_type_t *st = jn_schema_type_find(t);
        for (size_t i = 0; i < ns->n; i++) {
            const jn_schema_attr_t *a = jn_schema_attr_find(st, ns->v[i]);
            if (!a || strcmp(jn_schema_attr_name(a), ns->v[i]) != 0) {
                size_t used = strlen(bad);
                snprintf(bad + used, sizeof bad - used, "%s'%s'", used ? ", " : "", ns->v[i]);
            }
        }
    } else if (only) {
        map_columns(only, ns, q, bad, sizeof bad);
    } else {
        for (size_t i = 0; i < ns->n; i++) {
            bool known = false;
            for (size_t c = 0; c < jn_mgmt_class_count() && !known; c++)
                known = jn_mgmt_class_col_index(jn_mgmt_class_at(c), ns->v[i]) >= 0;
            if (!known) {
                size_t used = strlen(bad);
                snprintf(bad + used, sizeof bad - used, "%s'%s'", used ? ", " : "", ns->v[i]);
            }
        }
    }
    if (bad[0])
        return jn_mgmt_reply_set(reply, JN_MGMT_NOT_FOUND, "Unknown attributes [%s] for type %s.",
                                 bad, t[0] ? t : "(any)");
    return 0;
}

int jn_mgmt_query(jn_mgmt_t *agent, const jn_mgmt_request_t *req, jn_mgmt_reply_t *reply)
{
    names_t ns = {.n = 0, .text = NULL};
    query_ctx_t *q = calloc(1, sizeof *q);
    const jn_mgmt_class_t *only = NULL;
    bool unserved = false;
    const char *t = "";
    int status = q ? query_type(req, &t, reply)
                   : jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    if (!status)
        status = query_plan(req, t, &only, &unserved, &ns, reply);
    if (!status)
        status = check_names(only, unserved, t, &ns, q, reply);
    if (!status) {
        q->e = &reply->body;
        jn_enc_map_begin(q->e);
        encode_names(q->e, &ns);
        jn_enc_cstring(q->e, "results");
        jn_enc_list_begin(q->e);
        size_t offset = req->has_offset ? (size_t)req->offset : 0;
        size_t max = req->has_count ? (size_t)req->count : SIZE_MAX;
        for (size_t c = 0; c < jn_mgmt_class_count() && !unserved; c++) {
            const jn_mgmt_class_t *cls = jn_mgmt_class_at(c);
            if (only && cls != only)
                continue;
            map_columns(cls, &ns, q, NULL, 0);
            q->all = only ? NULL : cls;
            size_t before = q->emitted;
            size_t total = cls->rows(agent, cls, offset, max, query_row, q);
            max -= q->emitted - before;
            offset = offset > total ? offset - total : 0;
        }
        jn_enc_list_end(q->e);
        jn_enc_map_end(q->e);
        status = jn_mgmt_reply_set(reply, JN_MGMT_OK, "OK");
    }
    free(ns.text);
    free(q);
    return status;
}

/* ---- rows as maps, READ ------------------------------------------------------- */

void jn_mgmt_encode_row_map(jn_encoder_t *e, const jn_mgmt_class_t *cls, const jn_mv_t *row)
{
    jn_enc_map_begin(e);
    for (size_t i = 0; i < jn_mgmt_class_ncols(cls); i++) {
        if (cls->held_only && row[i].kind == JN_MV_NULL)
            continue;
        jn_enc_cstring(e, jn_mgmt_class_col(cls, i));
        jn_mv_encode(e, &row[i]);
    }
    jn_enc_map_end(e);
}

typedef struct read_ctx {
    const jn_mgmt_class_t *cls;
    const char *name, *identity; /* NULL: not given */
    bool any;                    /* singleton asked without name or identity */
    jn_encoder_t *out;
    bool found;
} read_ctx_t;

static bool read_match(void *arg, const jn_mv_t *row)
{
    read_ctx_t *r = arg;
    if (!r->any && !(r->identity && jn_mv_equal_str(&row[1], r->identity)) &&
        !(r->name && jn_mv_equal_str(&row[0], r->name)))
        return true;
    jn_mgmt_encode_row_map(r->out, r->cls, row);
    r->found = true;
    return false;
}

int jn_mgmt_read_row(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                     jn_encoder_t *out)
{
    char alt[JN_MGMT_STR_MAX + 8];
    read_ctx_t r = {.cls = cls,
                    .name = req->has_name ? req->name : NULL,
                    .identity = req->has_identity ? req->identity : NULL,
                    .out = out};
    r.any = !r.name && !r.identity;
    /* a log module may be named by itself ("DEFAULT") or as 1.19 names it */
    const char *key = r.identity ? r.identity : r.name;
    if (strcmp(cls->name, "log") == 0 && key && strncmp(key, "log/", 4) != 0) {
        snprintf(alt, sizeof alt, "log/%s", key);
        r.name = r.identity = alt;
    }
    cls->rows(agent, cls, 0, SIZE_MAX, read_match, &r);
    /* an identity as a QUERY of every type shows it ("router.link/3",
     * "router/<id>": query_row) names the entity whose key follows */
    size_t plen = strlen(cls->name);
    if (!r.found && key && strncmp(key, cls->name, plen) == 0 && key[plen] == '/') {
        r.name = r.identity = key + plen + 1;
        cls->rows(agent, cls, 0, SIZE_MAX, read_match, &r);
    }
    return r.found ? 0 : JN_ENOENT;
}
