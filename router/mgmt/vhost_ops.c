/*
 * vhost_ops.c — CREATE, UPDATE and DELETE of vhost entities on a running
 * router (docs/design.md "Policy"), by the path a policyDir file takes: the
 * request's attributes (an UPDATE's over the vhost's own) are written as
 * one JSON vhost section, loaded and checked by the configuration code
 * (jn_mgmt_vhost_text: the same checks and messages as at start), then
 * handed to the policy layer's vhost table (jn_mgmt_config_t.policy,
 * junction/policy.h) and to the vhost rows. Connections open already keep
 * the rules they were admitted with (1.19's rule: a connection's settings
 * are fetched once, at its Open); new ones take the new vhost.
 */
#include "mgmt_private.h"
#include "entity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <junction/config.h>
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

typedef struct apply {
    jn_mgmt_t *agent;
    const char *expect_host; /* UPDATE: the body may not rename the vhost */
    char host[JN_MGMT_STR_MAX];
    int status;
    char why[256];
} apply_t;

/* The words of a hostname pattern conflict, into why (cap octets). */
static void conflict_text(char *why, size_t cap, const char *host, const char *other)
{
    snprintf(why, cap,
             "vhost hostname '%.100s': the pattern conflicts with vhost '%.100s' (both match "
             "the same names)",
             host, other);
}

int jn_mgmt_vhost_conflict(const jn_mgmt_t *agent, const char *host, char *why, size_t cap)
{
    if (!agent->cfg.enable_vhost_name_patterns || !host)
        return 0;
    for (const jn_mgmt_entity_t *e = agent->vhosts; e; e = e->next) {
        const char *h = jn_mgmt_entity_str((jn_mgmt_entity_t *)e, "hostname");
        if (h && jn_policy_host_patterns_conflict(h, host)) {
            conflict_text(why, cap, host, h);
            return JN_EEXIST;
        }
    }
    return 0;
}

/* The hostnames met so far by jn_mgmt_vhost_conflicts_in, and the
 * conflicts found. */
typedef struct hostnames {
    char **v;
    size_t n, cap;
    FILE *out;
    int found;
    bool nomem;
} hostnames_t;

static int note_hostname(void *arg, const jn_policy_vhost_t *vh, const jn_config_entity_t *ce)
{
    (void)ce;
    hostnames_t *h = arg;
    const char *host = vh->hostname ? vh->hostname : "";
    for (size_t i = 0; i < h->n; i++) {
        if (jn_policy_host_patterns_conflict(h->v[i], host)) {
            char why[320];
            conflict_text(why, sizeof why, host, h->v[i]);
            fprintf(h->out, "%s\n", why);
            h->found++;
            return 0;
        }
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 16;
        char **v = realloc(h->v, cap * sizeof *v);
        if (!v) {
            h->nomem = true;
            return JN_ENOMEM;
        }
        h->v = v;
        h->cap = cap;
    }
    if (!(h->v[h->n] = strdup(host))) {
        h->nomem = true;
        return JN_ENOMEM;
    }
    h->n++;
    return 0;
}

int jn_mgmt_vhost_conflicts_in(const jn_config_t *cfg, const char *policy_dir, FILE *out)
{
    hostnames_t h = {.out = out};
    char errors[256];
    if (jn_mgmt_each_vhost(cfg, note_hostname, &h) == 0)
        (void)jn_mgmt_policy_dir(policy_dir, note_hostname, &h, errors, sizeof errors);
    for (size_t i = 0; i < h.n; i++)
        free(h.v[i]);
    free(h.v);
    return h.nomem ? JN_ENOMEM : h.found;
}

/* For the one vhost section of the loaded text: into the I/O layer, then
 * its row replaces the one of the same hostname (or is appended). */
static int apply_one(void *arg, const jn_policy_vhost_t *vh, const jn_config_entity_t *ce)
{
    apply_t *a = arg;
    jn_mgmt_t *agent = a->agent;
    snprintf(a->host, sizeof a->host, "%s", vh->hostname ? vh->hostname : "");
    if (a->expect_host && strcmp(a->expect_host, a->host) != 0) {
        a->status = JN_MGMT_BAD_REQUEST;
        snprintf(a->why, sizeof a->why, "Cannot change attribute 'hostname' of vhost '%s'",
                 a->expect_host);
        return 0;
    }
    if (!a->expect_host) {
        for (jn_mgmt_entity_t *e = agent->vhosts; e; e = e->next) {
            const char *h = jn_mgmt_entity_str(e, "hostname");
            if (h && strcmp(h, a->host) == 0) {
                a->status = JN_MGMT_BAD_REQUEST;
                snprintf(a->why, sizeof a->why, "Name conflicts with an existing entity");
                return 0;
            }
        }
        if (jn_mgmt_vhost_conflict(agent, a->host, a->why, sizeof a->why) != 0) {
            a->status = JN_MGMT_BAD_REQUEST;
            return 0;
        }
    }
    if (!agent->cfg.policy || jn_policy_vhost_add(agent->cfg.policy, vh) != 0)
        return JN_ENOMEM;
    return jn_mgmt_show_vhost(agent, ce);
}

/* Load json (one vhost's attributes) as a vhost section and apply it. */
static int load_and_apply(jn_mgmt_t *agent, const char *json, const char *expect_host,
                          jn_mgmt_reply_t *reply, char *host_out)
{
    size_t n = strlen(json) + 32;
    char *text = malloc(n);
    char *errors = malloc(2048);
    if (!text || !errors) {
        free(text);
        free(errors);
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    }
    snprintf(text, n, "[[\"vhost\", %s]]\n", json);
    errors[0] = '\0';
    apply_t a = {.agent = agent, .expect_host = expect_host};
    int rc = jn_mgmt_vhost_text("vhost.json", text, strlen(text), apply_one, &a, errors, 2048);
    free(text);
    int st;
    if (rc < 0)
        st = jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    else if (rc > 0) /* "vhost.json:1: what is wrong": the attribute is named */
        st = jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "%s",
                               strncmp(errors, "vhost.json:1: ", 14) == 0 ? errors + 14 : errors);
    else if (a.status)
        st = jn_mgmt_reply_set(reply, a.status, "%s", a.why);
    else
        st = 0;
    free(errors);
    snprintf(host_out, JN_MGMT_STR_MAX, "%s", a.host);
    return st;
}

/* Answer with the row of the vhost named host. */
static int answer_row(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const char *host, int status,
                      const char *desc, jn_mgmt_reply_t *reply)
{
    for (jn_mgmt_entity_t *e = agent->vhosts; e; e = e->next) {
        const char *h = jn_mgmt_entity_str(e, "hostname");
        if (!h || strcmp(h, host) != 0)
            continue;
        jn_mv_t *row = calloc(jn_mgmt_class_ncols(cls), sizeof *row);
        if (!row)
            return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
        jn_mgmt_entity_row(e, row);
        jn_mgmt_encode_row_map(&reply->body, cls, row);
        free(row);
        break;
    }
    return jn_mgmt_reply_set(reply, status, "%s", desc);
}

/* The answer when jn_mgmt_json_merge gave no text: bad names the attribute
 * whose value has a type no vhost attribute takes, or is "" (out of
 * memory). */
static int bad_value(const char *bad, jn_mgmt_reply_t *reply)
{
    if (!bad[0])
        return jn_mgmt_reply_set(reply, JN_MGMT_INTERNAL, "Out of memory");
    return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST,
                             "vhost attribute '%s': a value of a type no vhost attribute takes "
                             "(a float, UUID, binary...); give integers, strings, booleans, maps",
                             bad);
}

static const char *const not_attributes[] = {"name", "identity", "type", NULL};

static int vhost_create(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                        jn_mgmt_reply_t *reply)
{
    if (!req->has_body || req->body.type != JN_TYPE_MAP)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Body of request must be a map");
    char bad[JN_MGMT_STR_MAX];
    char *json =
        jn_mgmt_json_merge(NULL, NULL, &req->body_dec, &req->body, not_attributes, bad, sizeof bad);
    if (!json)
        return bad_value(bad, reply);
    char host[JN_MGMT_STR_MAX];
    int st = load_and_apply(agent, json, NULL, reply, host);
    free(json);
    if (st)
        return st;
    JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_INFO, "Created vhost %s (identity vhost/%s)", host, host);
    return answer_row(agent, cls, host, JN_MGMT_CREATED, "Created", reply);
}

static int vhost_update(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const jn_mgmt_request_t *req,
                        jn_mgmt_reply_t *reply, jn_mgmt_entity_t *e)
{
    if (req->has_body && req->body.type != JN_TYPE_MAP)
        return jn_mgmt_reply_set(reply, JN_MGMT_BAD_REQUEST, "Body of request must be a map");
    /* the vhost's own attributes, as READ shows them, under the body's */
    jn_encoder_t enc;
    jn_encoder_init(&enc);
    jn_mv_t *row = calloc(jn_mgmt_class_ncols(cls), sizeof *row);
    if (row) {
        jn_mgmt_entity_row(e, row);
        jn_mgmt_encode_row_map(&enc, cls, row);
        free(row);
    }
    size_t len = 0;
    const uint8_t *data = row ? jn_encoder_data(&enc, &len) : NULL;
    jn_iter_t it;
    jn_iter_init_bytes(&it, data, len, JN_VIEW_RAW);
    jn_decoder_t bd;
    jn_decoder_init(&bd, &it, true);
    jn_field_t base;
    char *json = NULL;
    char bad[JN_MGMT_STR_MAX] = "";
    if (data && jn_decoder_next(&bd, &base) == 1 && base.type == JN_TYPE_MAP)
        json = jn_mgmt_json_merge(&bd, &base, &req->body_dec, req->has_body ? &req->body : NULL,
                                  not_attributes, bad, sizeof bad);
    char host[JN_MGMT_STR_MAX];
    snprintf(host, sizeof host, "%s", jn_mgmt_entity_str(e, "hostname"));
    int st = json ? load_and_apply(agent, json, host, reply, host) : bad_value(bad, reply);
    free(json);
    jn_encoder_free(&enc);
    if (st)
        return st;
    JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_INFO, "Updated vhost %s: new connections take it", host);
    return answer_row(agent, cls, host, JN_MGMT_OK, "OK", reply);
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
