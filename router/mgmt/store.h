/*
 * store.h — the agent's configured entities (store.c) and what creating or
 * deleting one does (store_act.c). Private to router/mgmt.
 */
#ifndef JN_MGMT_STORE_H
#define JN_MGMT_STORE_H 1

#include "mgmt_private.h"

/* One configured entity. Owned by the agent's list; core thread. */
struct jn_mgmt_entity {
    jn_mgmt_entity_t *next;
    const jn_mgmt_class_t *cls;
    const jn_schema_type_t *type;
    char *identity; /* heap */
    char *name;     /* heap; NULL for an unnamed router.config.* entity */
    uint8_t origin; /* jn_entity_origin_t (entity.h): file or management */
    bool matched;   /* scratch of a reload (entity_reload.c) */
    bool port_any;  /* a listener configured with port 0: `port` shows the one it got */
    /* name is 1.19's default for an unnamed router.config.* section of the
     * file ("address/0": its place among the file's sections of its type),
     * so a reload compares such entities without it */
    bool name_by_place;
    /* a vhost from the config file or a policyDir file: "FILE:LINE" of its
     * hostname (heap; NULL otherwise), named when another file's vhost has
     * the same hostname (jn_entity_apply_vhost_CT) */
    char *where;
    size_t n_values;
    jn_mv_t values[]; /* owned, one per schema attribute (by index) */
};

jn_mgmt_entity_t *jn_mgmt_entity_new(const jn_mgmt_class_t *cls);
/* An entity of schema type (its class, when the agent serves one, else
 * cls NULL: router-wide types such as policy). NULL on ENOMEM. */
jn_mgmt_entity_t *jn_mgmt_entity_new_type(const jn_schema_type_t *type);
/* A copy of e (values, name, identity; not its place in the store),
 * owned by the caller; NULL on ENOMEM. */
jn_mgmt_entity_t *jn_mgmt_entity_clone(const jn_mgmt_entity_t *e);
/* An entity of type with every attribute at its schema default (owned by
 * the caller). 0 or JN_ENOMEM. */
int jn_mgmt_entity_defaults(const jn_schema_type_t *type, jn_mgmt_entity_t **out);
void jn_mgmt_entity_free(jn_mgmt_entity_t *e);
/* The value of attribute attr (or its deprecated name); NULL if the type
 * has no such attribute. */
jn_mv_t *jn_mgmt_entity_get(jn_mgmt_entity_t *e, const char *attr);
const char *jn_mgmt_entity_str(jn_mgmt_entity_t *e, const char *attr);
int64_t jn_mgmt_entity_int(jn_mgmt_entity_t *e, const char *attr, int64_t dflt);
bool jn_mgmt_entity_bool(jn_mgmt_entity_t *e, const char *attr, bool dflt);
/* jn_mgmt_entity_set_field: attribute a of e takes the value of request
 * field v (jn_mgmt_value_from_field's conversions; a null field makes it
 * null), in place of the one it had. Returns 0; JN_EINVAL when v is of the
 * wrong type or value (the caller words the 400; the attribute is then
 * null); JN_MGMT_INTERNAL with reply set when memory ran out. Core
 * thread (the agent's). */
int jn_mgmt_entity_set_field(jn_mgmt_entity_t *e, const jn_schema_attr_t *a, const jn_field_t *v,
                             jn_mgmt_reply_t *reply);
/* jn_mgmt_answer_entity: answer with e's row (cls's columns, as READ
 * shows it) as the body, and status and its description desc (static).
 * Returns status, or JN_MGMT_INTERNAL (reply said so) when memory ran
 * out. Core thread (the agent's). */
int jn_mgmt_answer_entity(jn_mgmt_reply_t *reply, const jn_mgmt_class_t *cls, jn_mgmt_entity_t *e,
                          int status, const char *desc);
/* Fill row (one value per class column; borrowed from e). */
void jn_mgmt_entity_row(jn_mgmt_entity_t *e, jn_mv_t *row);
/* Give e its identity (given, or the type's rule) and default name.
 * 0 or JN_ENOMEM. */
int jn_mgmt_entity_set_identity(jn_mgmt_t *agent, jn_mgmt_entity_t *e, const char *given);

void jn_mgmt_store_append(jn_mgmt_t *agent, jn_mgmt_entity_t *e);
void jn_mgmt_store_unlink(jn_mgmt_t *agent, jn_mgmt_entity_t *e);
/* The entity of cls (NULL: any) with identity, else with name (either may
 * be NULL). */
jn_mgmt_entity_t *jn_mgmt_store_find(jn_mgmt_t *agent, const jn_mgmt_class_t *cls, const char *name,
                                     const char *identity);

#endif /* JN_MGMT_STORE_H */
