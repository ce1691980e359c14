/*
 * vhost_ops.c — CREATE, UPDATE and DELETE of vhost entities on a running
 * router (docs/design.md "Policy"), on the entity path (entity.h) as the
 * config file's and policyDir's vhosts are: the request's attributes are
 * read into a vhost entity (a CREATE's over the schema defaults, an
 * UPDATE's over a copy of the vhost's own), which passes the one check
 * (jn_entity_check) and the one apply (jn_entity_apply_vhost_CT: the
 * policy layer's vhost table, junction/policy.h, and the vhost rows).
 * Connections open already keep the rules they were admitted with (1.19's
 * rule: a connection's settings are fetched once, at its Open); new ones
 * take the new vhost. Also `junctiond --check`'s hostname conflicts.
 */
#include "mgmt_private.h"
#include "entity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <junction/config.h>
#include <junction/decoder.h>
#include <junction/encoder.h>
#include <junction/log.h>
#include <junction/policy.h>

/* The vhost row whose identity, name or hostname (a vhost's name in 1.19)
 * the request names, with its link in agent->vhosts. */
static jn_mgmt_entity_t **find_vhost(jn_mgmt_t *agent, const jn_mgmt_request_t *req)
{
    for (jn_mgmt_entity_t **pp = &agent->vhosts; *pp; pp = &(*pp)->next) {
        jn_mgmt_entity_t *e = *pp;
        const char *host = jn_mgmt_entity_str(e, "hostname");
        if ((req->has_identity && e->identity && strcmp(e->identity, req->identity) == 0) ||
            (!req->has_identity && req->has_name &&
             ((e->name && strcmp(e->name, req->name) == 0) ||
              (host && strcmp(host, req->name) == 0))))
            return pp;
    }
    return NULL;
}

/* The hostnames met so far by jn_mgmt_vhost_conflicts_in, and the
 * conflicts found. */
typedef struct hostnames {
    char **v;     /* the hostnames */
    char **where; /* "FILE:LINE" of each */
    size_t n, cap;
    bool patterns; /* policy.enableVhostNamePatterns */
    FILE *out;
    int found;
    bool nomem;
} hostnames_t;

/* Note section ce's hostname host (of cfg); a hostname met before, or
 * with name patterns one whose pattern conflicts, is written as
 * FILE:LINE: (the hostname's line) and the reason, as a start refuses it. */
static int note_hostname(hostnames_t *h, const jn_config_t *cfg, const jn_config_entity_t *ce,
                         const char *host)
{
    jn_entity_err_t err = {.attr = "hostname"};
    char line[JN_ENTITY_ERR_MAX + 256];
    for (size_t i = 0; i < h->n; i++) {
        if (strcmp(h->v[i], host) == 0)
            jn_entity_vhost_duplicate_text(err.text, sizeof err.text, host, h->where[i]);
        else if (h->patterns && jn_policy_host_patterns_conflict(h->v[i], host))
            jn_entity_vhost_conflict_text(err.text, sizeof err.text, host, h->v[i]);
        else
            continue;
        jn_entity_file_error(cfg, ce, &err, line, sizeof line);
        fprintf(h->out, "%s\n", line);
        h->found++;
        return 0;
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 16;
        char **v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return JN_ENOMEM;
        h->v = v;
        char **w = realloc(h->where, cap * sizeof *w);
        if (!w)
            return JN_ENOMEM;
        h->where = w;
        h->cap = cap;
    }
    /* where: the line jn_entity_file_error names, without its text */
    jn_entity_file_error(cfg, ce, &err, line, sizeof line);
    char *colon = strrchr(line, ':');
    if (colon)
        *colon = '\0';
    h->where[h->n] = strdup(line);
    if (!(h->v[h->n] = strdup(host)) || !h->where[h->n]) {
        free(h->v[h->n]);
        free(h->where[h->n]);
        return JN_ENOMEM;
    }
    h->n++;
    return 0;
}

/* The hostnames of cfg's vhost sections (a jn_mgmt_policy_dir callback). */
static int note_hostnames(void *arg, const jn_config_t *cfg)
{
    hostnames_t *h = arg;
    const jn_schema_type_t *vhost = jn_schema_type_find("vhost");
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++) {
        const jn_config_entity_t *ce = jn_config_entity_at(cfg, i);
        const char *host = jn_config_entity_string(ce, "hostname");
        if (jn_config_entity_type(ce) == vhost && note_hostname(h, cfg, ce, host ? host : "") != 0) {
            h->nomem = true;
            return JN_ENOMEM;
        }
    }
    return 0;
}

int jn_mgmt_vhost_conflicts_in(const jn_config_t *cfg, const char *policy_dir, bool patterns,
                               FILE *out)
{
    hostnames_t h = {.out = out, .patterns = patterns};
    char errors[256];
    if (note_hostnames(&h, cfg) == 0)
        (void)jn_mgmt_policy_dir(policy_dir, note_hostnames, &h, errors, sizeof errors);
    for (size_t i = 0; i < h.n; i++) {
        free(h.v[i]);
        free(h.where[i]);
    }
    free(h.v);
    free(h.where);
    return h.nomem ? JN_ENOMEM : h.found;
}

/* Does value f (of d) hold, at any depth, a type no vhost attribute takes
 * (a float, a UUID, binary...)? */
static bool foreign_type(const jn_decoder_t *d, const jn_field_t *f)
{
    if (f->type == JN_TYPE_MAP || f->type == JN_TYPE_LIST || f->type == JN_TYPE_ARRAY) {
        jn_decoder_t in;
        jn_field_t item;
        if (jn_decoder_enter(d, f, &in) != 0)
            return true;
        int rc;
        while ((rc = jn_decoder_next(&in, &item)) == 1)
            if (foreign_type(&in, &item))
                return true;
        return rc < 0;
    }
    return f->type != JN_TYPE_NULL && f->type != JN_TYPE_BOOLEAN && f->type != JN_TYPE_STRING &&
           f->type != JN_TYPE_SYMBOL && !jn_field_is_integer(f);
}

/* One body entry, key (a string) and value v (of d), into e; host: an
 * UPDATE's hostname, which the body may not change (NULL for a CREATE). */
static int body_entry(jn_mgmt_entity_t *e, const char *key, const jn_decoder_t *d,
                      const jn_field_t *v, const char *host, jn_mgmt_reply_t *reply)
{
    if (strcmp(key, "name") == 0 || strcmp(key, "identity") == 0 || strcmp(key, "type") == 0 ||
        v->type == JN_TYPE_NULL)
        return 0; /* a vhost is named by its hostname */
    if (foreign_type(d, v))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "vhost attribute '%s': a value of a type no vhost attribute takes "
                                 "(a float, UUID, binary...); give integers, strings, booleans, "
                                 "maps",
                                 key);
    const jn_schema_attr_t *a = jn_schema_attr_find(e->type, key);
    if (!a) /* the config file's words */
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "unknown attribute '%s' in section 'vhost'", key);
    int rc = jn_mgmt_entity_set_field(e, a, v, reply);
    if (rc == JN_MGMT_INTERNAL)
        return rc;
    if (rc != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "vhost attribute '%s': expected %s",
                                 key, jn_schema_kind_name(jn_schema_attr_kind(a)));
    const char *now = jn_mgmt_entity_str(e, "hostname");
    if (host && now && strcmp(now, host) != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Cannot change attribute 'hostname' of vhost '%s'", host);
    return 0;
}

/* The request's body (a map, or none for an UPDATE) over e's values,
 * then e through the entity path's check and apply (how). On success e
 * belongs to the agent. Returns 0 or the status, reply set. */
static int vhost_apply(jn_mgmt_t *agent, jn_mgmt_entity_t *e, const jn_mgmt_request_t *req,
                       jn_entity_vhost_how_t how, const char *host, jn_mgmt_reply_t *reply)
{
    jn_decoder_t map;
    jn_field_t k, v;
    int rc = 0;
    if (req->has_body && (req->body.type != JN_TYPE_MAP ||
                          jn_decoder_enter(&req->body_dec, &req->body, &map) != 0))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Body of request must be a map");
    while (req->has_body && (rc = jn_decoder_next(&map, &k)) == 1 &&
           jn_decoder_next(&map, &v) == 1) {
        char key[128];
        if (jn_mgmt_field_string(&k, key, sizeof key) != 0)
            return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Attribute names must be strings");
        int st = body_entry(e, key, &map, &v, host, reply);
        if (st)
            return st;
    }
    if (rc < 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Malformed body: %s",
                                 jn_decoder_reason(&map));
    const char *h = jn_mgmt_entity_str(e, "hostname");
    if (!h) /* the config file's words */
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "section 'vhost' is missing required attribute 'hostname'");
    jn_entity_ctx_t ctx = {.mode = agent->cfg.mode};
    jn_entity_err_t err;
    if (jn_entity_check(&ctx, e, &err) != 0 || jn_entity_apply_vhost_CT(agent, e, how, &err) != 0) {
        jn_entity_err_log(&err);
        return jn_mgmt_reply_set(reply, err.status, "%s", err.text);
    }
    return 0;
}

/* Whether a vhost row is named name. */
static bool vhost_name_taken(const jn_mgmt_t *agent, const char *name)
{
    for (const jn_mgmt_entity_t *e = agent->vhosts; e; e = e->next)
        if (e->name && strcmp(e->name, name) == 0)
            return true;
    return false;
}

/* A CREATE's name (request property `name`) is the vhost's name, as in
 * 1.19, so that READ, UPDATE and DELETE find it by that name too; without
 * one its name is its identity, vhost/HOSTNAME. */
static int vhost_create(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                        jn_mgmt_reply_t *reply)
{
    if (!req->has_body || req->body.type != JN_TYPE_MAP)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Body of request must be a map");
    bool named = req->has_name && req->name[0];
    if (named && vhost_name_taken(agent, req->name))
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                                 "Name conflicts with an existing entity");
    jn_mgmt_entity_t *e = NULL;
    if (jn_mgmt_entity_defaults(jn_schema_type_find("vhost"), &e) != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    if (named && !(e->name = strdup(req->name))) {
        jn_mgmt_entity_free(e);
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    }
    int st = vhost_apply(agent, e, req, JN_VHOST_CREATE, NULL, reply);
    if (st) {
        jn_mgmt_entity_free(e);
        return st;
    }
    const char *host = jn_mgmt_entity_str(e, "hostname");
    JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_INFO, "Created vhost %s (identity vhost/%s)", host, host);
    return jn_mgmt_answer_entity(reply, cls, e, JN_MGMT_CREATED, "Created");
}

static int vhost_update(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                        jn_mgmt_reply_t *reply, jn_mgmt_entity_t *row)
{
    if (req->has_body && req->body.type != JN_TYPE_MAP)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Body of request must be a map");
    char host[JN_MGMT_STR_MAX];
    snprintf(host, sizeof host, "%s", jn_mgmt_entity_str(row, "hostname"));
    jn_mgmt_entity_t *e = jn_mgmt_entity_clone(row); /* the row goes when e applies */
    if (!e)
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    int st = vhost_apply(agent, e, req, JN_VHOST_UPDATE, host, reply);
    if (st) {
        jn_mgmt_entity_free(e);
        return st;
    }
    JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_INFO, "Updated vhost %s: new connections take it", host);
    return jn_mgmt_answer_entity(reply, cls, e, JN_MGMT_OK, "OK");
}
int jn_mgmt_vhost_op(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                     jn_mgmt_reply_t *reply)
{
    if (strcmp(req->operation, "CREATE") == 0)
        return vhost_create(agent, cls, req, reply);
    jn_mgmt_entity_t **pp = find_vhost(agent, req);
    if (!pp)
        return jn_mgmt_reply_set(reply, JN_MGMT_NOT_FOUND, "No entity with %s=%s",
                                 req->has_identity ? "identity" : "name",
                                 req->has_identity ? req->identity : req->name);
    if (strcmp(req->operation, "UPDATE") == 0)
        return vhost_update(agent, cls, req, reply, *pp);
    jn_mgmt_entity_t *e = *pp;
    const char *host = jn_mgmt_entity_str(e, "hostname");
    if (!agent->cfg.policy || jn_policy_vhost_remove(agent->cfg.policy, host) != 0)
        return jn_mgmt_reply_set(reply, JN_MGMT_NOT_FOUND, "No entity with %s=%s",
                                 req->has_identity ? "identity" : "name",
                                 req->has_identity ? req->identity : req->name);
    JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_INFO,
           "Deleted vhost %s: its open connections keep their settings", host ? host : "");
    *pp = e->next;
    jn_mgmt_entity_free(e);
    jn_enc_map_begin(&reply->body);
    jn_enc_map_end(&reply->body);
    return jn_mgmt_reply_set(reply, JN_MGMT_NO_CONTENT, "No Content");
}
