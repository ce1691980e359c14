/* TEMPORARY until the schema carries `implemented` flags (merge of h-tables). */
#include <junction/schema.h>
#include <stdio.h>
#include <string.h>

static bool in(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return true;
    return false;
}

bool jn_schema_type_implemented(const jn_schema_type_t *t)
{
    static const char *const no[] = {"sslProfile", "authServicePlugin",
                                     "exchange", "binding", "vhost", "vhostUserGroupSettings",
                                     "console", "dummy", "router.connection.linkRoute", NULL};
    return !in(jn_schema_type_short_name(t), no);
}

static const char *type_of_attr(const jn_schema_attr_t *a, const char **name);
bool jn_schema_attr_implemented(const jn_schema_attr_t *a)
{
    static const char *const no[] = {
        "listener.requireSsl", "listener.requireEncryption", "listener.saslPlugin",
        "listener.multiTenant", "listener.openProperties", "listener.policyVhost",
        "listener.failoverUrls", "listener.initialHandshakeTimeoutSeconds",
        "listener.messageLoggingComponents", "listener.trustedCertsFile", "listener.websockets",
        "listener.socketAddressFamily", "listener.sslProfile", "listener.http",
        "connector.sslProfile", "connector.http",
        "connector.saslUsername", "connector.saslPassword", "connector.openProperties",
        "connector.policyVhost", "connector.failoverUrls", "connector.protocolFamily",
        "connector.messageLoggingComponents", "router.saslConfigDir", "router.saslConfigName",
 "address.priority", "policy.maxConnections",
        "policy.enableVhostPolicy", "policy.enableVhostNamePatterns", "policy.policyDir",
        "policy.defaultVhost", NULL};
    const char *name;
    const char *type = type_of_attr(a, &name);
    char key[128];
    snprintf(key, sizeof key, "%s.%s", type, name);
    return !in(key, no);
}

bool jn_schema_attr_value_implemented(const jn_schema_attr_t *a, const char *value)
{
    const char *name;
    const char *type = type_of_attr(a, &name);
    if (strcmp(name, "role") == 0 && (!strcmp(type, "listener") || !strcmp(type, "connector")))
        return strcmp(value, "normal") == 0 || strcmp(value, "inter-router") == 0 ||
               strcmp(value, "route-container") == 0;
    if (strcmp(name, "mode") == 0 && strcmp(type, "router") == 0)
        return strcmp(value, "standalone") == 0 || strcmp(value, "interior") == 0;
    return true;
}

static const char *type_of_attr(const jn_schema_attr_t *a, const char **name)
{
    *name = jn_schema_attr_name(a);
    for (size_t i = 0; i < jn_schema_type_count(); i++) {
        const jn_schema_type_t *t = jn_schema_type_at(i);
        for (size_t k = 0; k < jn_schema_type_attr_count(t); k++)
            if (jn_schema_type_attr_at(t, k) == a)
                return jn_schema_type_short_name(t);
    }
    return "";
}
