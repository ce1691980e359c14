/*
 * entity.h — the one path from a configured entity to the running router
 * (docs/design.md, "The entity path"). Private to router/mgmt.
 *
 * Every configured entity, whether it comes from the config file or a
 * policyDir file at start, from a management CREATE/UPDATE/DELETE, or from
 * a reload, is a jn_mgmt_entity_t (store.h: one value per schema
 * attribute) and goes through the same two steps:
 *
 *   check  (entity_check.c) what the router implements (the schema's
 *          implemented flags) and the value rules the schema cannot
 *          express. Pure: no side effect, so a reload can check a whole
 *          file before it changes anything.
 *   act    (entity_act.c) the change of the running router: listen,
 *          connect, add an address rule, set a log module; and its undo
 *          for DELETE and reload.
 *
 * The config file's side (entity_file.c) turns the file into entities,
 * reads the router-wide settings, loads the file as a sequence of CREATEs
 * and computes a reload's difference. store_act.c is management's side:
 * it reads a CREATE body into an entity and answers. A vhost (entity_vhost.c)
 * takes the same check and its own apply, from the file, a policyDir file
 * or management (vhost_ops.c) alike.
 *
 * A refusal is a jn_entity_err_t: the attribute it is about (or NULL) and
 * one text, the same whichever way the entity came. The file prints it as
 * "FILE:LINE: text" (the line of that attribute), management answers 400
 * with the text as the status description.
 *
 * Threads: checks on any thread (they read only the entity and the
 * schema); acting on the core thread (management requests, core calls).
 */
#ifndef JN_MGMT_ENTITY_H
#define JN_MGMT_ENTITY_H 1

#include "store.h"

#include <junction/config.h>

/* Where an entity came from. Reload replaces only JN_ORIGIN_FILE ones. */
typedef enum jn_entity_origin { JN_ORIGIN_MGMT = 0, JN_ORIGIN_FILE = 1 } jn_entity_origin_t;

#define JN_ENTITY_ERR_MAX 512

/* A refusal: attr is a schema attribute name (static) or NULL for the
 * entity as a whole; status the management status (400 for a bad value,
 * 500 when memory ran out). text is what any management client is told;
 * detail, when not empty, the precise reason (paths, whether a file is
 * there and what it holds, what the system said) that only the operator
 * sees: the config file's FILE:LINE errors, and the router's log when a
 * management request is refused (jn_entity_err_log). */
typedef struct jn_entity_err {
    const char *attr;
    int status;
    char text[JN_ENTITY_ERR_MAX];
    char detail[JN_ENTITY_ERR_MAX];
    /* a refusal inside a vhost's groups map (attr "groups"): the group's
     * name and the key within it ("" when about the group as a whole), so
     * that a file points at their line; both "" otherwise */
    char group[128];
    char key[64];
    bool said; /* already said through jn_entity_ctx_t.each */
} jn_entity_err_t;

/* jn_entity_fail: fill err (printf-style text, no detail) and return its
 * status. */
int jn_entity_fail(jn_entity_err_t *err, int status, const char *attr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* What a client is told of a log's outputFile that cannot be used,
 * whatever the reason (a missing folder, a directory, a device, no
 * permission): nothing of the file system. */
#define JN_ENTITY_LOG_OUTPUT_PROBLEM                                                               \
    "cannot be used: it must be a regular file the router can append to"

/* jn_entity_err_log: a management request was refused with err: its
 * detail (if any) goes to the router's log (AGENT, warning), never to the
 * client. Any thread. */
void jn_entity_err_log(const jn_entity_err_t *err);

/* What the checks need to know of the router the entity is for. */
typedef struct jn_entity_ctx {
    const char *mode; /* router mode: "standalone", "interior" */
    /* profile: whether an sslProfile called name is there for the entity
     * (0 no, 1 yes, 2 yes and it has a caCertFile): in the same file, or
     * among the running entities. NULL: every name is. */
    int (*profile)(void *arg, const char *name);
    void *profile_arg;
    /* each: NULL, or where a check that can find several refusals in one
     * entity (a vhost's groups: a file lists every one) says each, with
     * err->said set; the check then returns the last one's status. */
    void (*each)(void *arg, const jn_entity_err_t *err);
    void *each_arg;
} jn_entity_ctx_t;

/* jn_entity_profile_in_store: a jn_entity_ctx_t.profile over the agent's
 * entities (arg: the jn_mgmt_t). */
int jn_entity_profile_in_store(void *agent, const char *name);

/* jn_entity_profile_in_file: the same over a config file's sslProfile
 * sections (arg: the jn_config_t). */
int jn_entity_profile_in_file(void *cfg, const char *name);

/* jn_entity_validate_CT: the checks of jn_entity_create_CT that ask the
 * system (an sslProfile's files and password, a listener's SASL
 * mechanisms against Cyrus) without changing anything, so that a reload
 * can refuse a file before it applies any of it. ctx as for
 * jn_entity_check. Returns 0 or the status with err filled. Core thread. */
int jn_entity_validate_CT(jn_mgmt_t *agent, const jn_entity_ctx_t *ctx, jn_mgmt_entity_t *e,
                          jn_entity_err_t *err);

/* jn_entity_check: refuse e when its type is not implemented, when an
 * attribute the router does not act on is set to other than its default,
 * when an enum attribute has a value the router does not implement, or
 * when a value breaks a rule of its type (router id characters, ports,
 * costs, prefix/pattern, phases, log modules...). e is only read.
 * Returns 0, or the status with err filled. Any thread. */
int jn_entity_check(const jn_entity_ctx_t *ctx, jn_mgmt_entity_t *e, jn_entity_err_t *err);

/* jn_entity_check_vhost: the value rules of a vhost entity (part of
 * jn_entity_check): maxMessageSize from 0; each group of its groups map a
 * map of attributes the router acts on (vhostUserGroupSettings in
 * router/config/schema.json, and maxConnections), integers from 0 (or
 * decimal strings), booleans (or "true"/"false"), strings; a group gives
 * an address list or a pattern of one kind, not both, and its patterns
 * are well formed. e is only read. Returns 0, or the status with err
 * filled (a group's refusal names the group and key; with ctx->each,
 * every refusal is said there). Any thread. */
int jn_entity_check_vhost(const jn_entity_ctx_t *ctx, jn_mgmt_entity_t *e, jn_entity_err_t *err);

/* How a checked vhost comes to jn_entity_apply_vhost_CT. */
typedef enum jn_entity_vhost_how {
    JN_VHOST_FILE,   /* the config file or a policyDir file: the hostname must
                      * be new (a second one names the first's e->where) */
    JN_VHOST_CREATE, /* a management CREATE: the hostname must be new */
    JN_VHOST_UPDATE  /* a management UPDATE of the vhost of e's hostname */
} jn_entity_vhost_how_t;

/* jn_entity_apply_vhost_CT: make checked vhost e (owned by the caller
 * until it succeeds, then by the agent) one of the policy layer's vhosts
 * (agent->cfg.policy, junction/policy.h; new connections take it, open
 * ones keep theirs) and one of the agent's vhost rows, named (when it has
 * no name) and identified "vhost/HOSTNAME", in place of the row of the
 * same hostname. Refused (400 naming hostname) when how is
 * JN_VHOST_CREATE or JN_VHOST_FILE and the hostname is there, or, with
 * policy.enableVhostNamePatterns and other than an UPDATE, when its
 * pattern matches the names another vhost's does. Returns 0 or the status
 * with err filled (nothing changed). Main thread before the agent serves
 * requests, then the core thread. */
int jn_entity_apply_vhost_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_entity_vhost_how_t how,
                             jn_entity_err_t *err);

/* jn_entity_vhost_duplicate_text: the words of a second file vhost of
 * hostname host, into why (cap octets); first: "FILE:LINE" of the first
 * one's hostname (NULL: not known). */
void jn_entity_vhost_duplicate_text(char *why, size_t cap, const char *host, const char *first);

/* jn_entity_vhost_conflict_text: the words of a hostname pattern conflict
 * between host and other's hostname, into why (cap octets). */
void jn_entity_vhost_conflict_text(char *why, size_t cap, const char *host, const char *other);

/* jn_entity_create_CT: act on a checked entity of a stored type (listener,
 * connector, router.config.address): listen (binding at once on a running
 * I/O layer; a listener on port 0 records the port it got in e's `port`),
 * connect, add the address rule. Returns 0, or the status with err filled
 * (nothing changed). Core thread. */
int jn_entity_create_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_entity_err_t *err);

/* jn_entity_delete_CT: undo jn_entity_create_CT: stop listening (open
 * connections stay), stop connecting and close the connector's connection,
 * remove the address rule (addresses already in the table keep their
 * distribution). Core thread. */
void jn_entity_delete_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e);

/* jn_entity_apply_log: make a `log` entity's values the settings of its
 * module; an attribute left null follows DEFAULT again. e must have passed
 * jn_entity_check. Returns 0 or the status with err filled (an outputFile
 * that cannot be opened; the module is then unchanged). Main thread
 * before start, then the core thread. */
int jn_entity_apply_log(jn_mgmt_entity_t *e, jn_entity_err_t *err);

/* jn_entity_reset_log: the module named by a `log` entity back to its
 * built-in settings (follow DEFAULT; DEFAULT: info+ to stderr). */
void jn_entity_reset_log(jn_mgmt_entity_t *e);

/* jn_entity_from_config: a new entity (owned by the caller, free with
 * jn_mgmt_entity_free) holding the values of file section ce: every
 * attribute as the file gives it, schema defaults included unless
 * skip_defaults; the name as junctiond names it (for endpoints: the
 * configured name, else the identity). Not yet given an identity. Returns
 * 0 or JN_ENOMEM. Any thread. */
int jn_entity_from_config(const jn_config_entity_t *ce, bool skip_defaults, jn_mgmt_entity_t **out);

/* jn_entity_equal: a and b are of the same type, have the same name and
 * the same value for every attribute (a reload keeps such an entity
 * running untouched). */
bool jn_entity_equal(jn_mgmt_entity_t *a, jn_mgmt_entity_t *b);

/* jn_entity_same_names: entities of classes a and b share one name space
 * (the same class; listeners and connectors share the I/O layer's). */
bool jn_entity_same_names(const jn_mgmt_class_t *a, const jn_mgmt_class_t *b);

/* jn_entity_record_port_CT: a listener entity configured with port 0
 * takes the port the I/O layer got for it as its `port` value (unchanged
 * when it does not listen yet). Core thread. */
void jn_entity_record_port_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e);

/* jn_entity_name_taken: an entity of cls's name space (listeners and
 * connectors share one) is called name. Core thread. */
bool jn_entity_name_taken(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const char *name);

/* jn_entity_file_error: format err for file section ce of cfg as
 * "FILE:LINE: text" into out (the line of err->attr when the file gives
 * it, else the section's). */
void jn_entity_file_error(const jn_config_t *cfg, const jn_config_entity_t *ce,
                          const jn_entity_err_t *err, char *out, size_t cap);

/* jn_entity_status_CT: the run-time columns of a linkRoute or autoLink
 * row (operStatus; an auto-link's lastError) from the core, over what
 * jn_mgmt_entity_row put in row (strings borrowed until the next core
 * change). Other types: nothing. Core thread. */
void jn_entity_status_CT(jn_mgmt_t *agent, jn_mgmt_entity_t *e, jn_mv_t *row);

#endif /* JN_MGMT_ENTITY_H */
