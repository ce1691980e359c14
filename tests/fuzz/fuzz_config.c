/*
 * fuzz_config.c — libFuzzer target for the configuration readers and the
 * checks the loader runs after them.
 *
 * Input: a control octet, then the text of a configuration file. The
 * control octet's low bit picks the form: 0 the conf form ("fuzz.conf"),
 * 1 the JSON form ("fuzz.json"). The text goes through jn_config_load_string,
 * which is what `junctiond -c FILE` runs before it starts anything: read the
 * form into raw sections, turn them into entities against the schema, run
 * the cross-entity checks. The properties checked: the load ends with 0,
 * JN_EINVAL or JN_ENOMEM (never anything else, never a crash); a failure
 * always leaves a message that starts with the display name and ":", and
 * an error in the text (JN_EINVAL) always names its line ("FILE:LINE: ");
 * a success yields entities whose every attribute value can be read back.
 * A file that loads then goes through the entity path's checks
 * (jn_mgmt_plan_config, what `junctiond -c FILE` runs next): each refusal
 * it reports is a line "FILE:LINE: ...", and the count matches the lines.
 */
#include <junction/config.h>
#include <junction/log.h>
#include <junction/mgmt.h>
#include <stdlib.h>
#include <string.h>

/* Read everything a loaded configuration holds, as the daemon would. */
static void touch_value(const jn_config_value_t *v, int depth)
{
    if (!v || depth > 100)
        return;
    (void)jn_config_value_line(v);
    (void)jn_config_value_is_default(v);
    (void)jn_config_value_int(v);
    (void)jn_config_value_bool(v);
    (void)jn_config_value_double(v);
    const char *s = jn_config_value_string(v);
    if (s)
        (void)strlen(s);
    size_t n = jn_config_value_count(v);
    for (size_t i = 0; i < n; i++) {
        const char *key = jn_config_value_key(v, i);
        if (key && jn_config_value_lookup(v, key) == NULL)
            abort(); /* a key listed must be found */
        touch_value(jn_config_value_item(v, i), depth + 1);
    }
}

static void touch_config(const jn_config_t *cfg)
{
    for (size_t i = 0; i < jn_config_warning_count(cfg); i++)
        if (strlen(jn_config_warning_at(cfg, i)) == 0)
            abort();
    for (size_t i = 0; i < jn_config_entity_count(cfg); i++) {
        const jn_config_entity_t *e = jn_config_entity_at(cfg, i);
        const jn_schema_type_t *type = jn_config_entity_type(e);
        if (!type || !jn_config_entity_identity(e) || !jn_config_entity_name(e) ||
            !jn_config_entity_section(e))
            abort();
        (void)jn_config_entity_line(e);
        size_t count = jn_schema_type_attr_count(type);
        for (size_t a = 0; a < count; a++)
            touch_value(jn_config_entity_value(e, jn_schema_type_attr_at(type, a)), 0);
    }
}

/* "FILE:LINE: " at line. */
static bool names_line(const char *line, const char *name)
{
    size_t nl = strlen(name);
    if (strncmp(line, name, nl) != 0 || line[nl] != ':')
        return false;
    const char *p = line + nl + 1;
    if (*p < '1' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9')
        p++;
    return p[0] == ':' && p[1] == ' ';
}

/* The entity checks of a loaded file. */
static void check_entities(const jn_config_t *cfg, const char *name)
{
    static char errors[1 << 16];
    jn_router_settings_t settings;
    static bool quiet;
    if (!quiet) { /* the cosmetic-attribute warnings */
        jn_log_set_enable(JN_LOG_MOD_DEFAULT, "none", NULL, 0);
        quiet = true;
    }
    int n = jn_mgmt_plan_config(cfg, &settings, errors, sizeof errors);
    if (n < 0 || (n == 0) != (errors[0] == '\0'))
        abort();
    if (settings.workers < 1 || !settings.id[0] || !settings.mode[0])
        abort();
    int lines = 0;
    for (char *line = errors; n > 0 && line && *line; lines++) {
        if (!names_line(line, name))
            abort(); /* every refusal names FILE:LINE */
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    if (strlen(errors) + 1 < sizeof errors && lines != n)
        abort(); /* one line per refusal (when nothing was cut) */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *name = (data[0] & 1) ? "fuzz.json" : "fuzz.conf";
    char err[JN_CONFIG_ERROR_MAX];
    jn_config_t *cfg = NULL;
    int rc = jn_config_load_string(name, (const char *)data + 1, size - 1, &cfg, err, sizeof err);
    if (rc == 0) {
        if (!cfg)
            abort();
        touch_config(cfg);
        check_entities(cfg, name);
        jn_config_free(cfg);
        return 0;
    }
    if (cfg)
        abort();
    if (rc != JN_EINVAL && rc != JN_ENOMEM && !(rc == JN_ENOENT && size == 1))
        abort(); /* an undocumented result is a bug */
    size_t nl = strlen(name);
    if (strncmp(err, name, nl) != 0 || err[nl] != ':')
        abort();           /* every message is "FILE:..." */
    if (rc == JN_EINVAL) { /* and every error in the text names a line: "FILE:LINE: ..." */
        const char *p = err + nl + 1;
        if (*p < '1' || *p > '9')
            abort();
        while (*p >= '0' && *p <= '9')
            p++;
        if (p[0] != ':' || p[1] != ' ')
            abort();
    }
    return 0;
}
