/*
 * log_components.c — the names of a message's properties (AMQP 1.0 part
 * 3, 3.2.4, in their list order) and messageLoggingComponents, the
 * listener and connector attribute that names which of them (and the
 * application properties) a message's log line shows (1.19's words:
 * "all", "none", or a comma list). Pure; any thread.
 */
#include <junction/message.h>

#include <string.h>

static const char *const property_names[JN_MESSAGE_PROPERTY_COUNT] = {
    "message-id",        "user-id",          "to",
    "subject",           "reply-to",         "correlation-id",
    "content-type",      "content-encoding", "absolute-expiry-time",
    "creation-time",     "group-id",         "group-sequence",
    "reply-to-group-id",
};

const char *jn_message_property_name(size_t index)
{
    return index < JN_MESSAGE_PROPERTY_COUNT ? property_names[index] : NULL;
}

/* One name of the list into *out. */
static int component(const char *word, uint32_t *out)
{
    if (strcmp(word, "all") == 0) {
        *out |= (JN_MESSAGE_LOG_APP_PROPERTIES << 1) - 1;
        return 0;
    }
    if (strcmp(word, "none") == 0)
        return 0;
    if (strcmp(word, "app-properties") == 0) {
        *out |= JN_MESSAGE_LOG_APP_PROPERTIES;
        return 0;
    }
    for (size_t i = 0; i < JN_MESSAGE_PROPERTY_COUNT; i++)
        if (strcmp(word, property_names[i]) == 0) {
            *out |= 1u << i;
            return 0;
        }
    return JN_EINVAL;
}

int jn_message_log_components(const char *spec, uint32_t *out, const char **bad, size_t *bad_len)
{
    *out = 0;
    char word[32];
    for (const char *p = spec ? spec : ""; *p;) {
        p += strspn(p, ", ");
        size_t n = strcspn(p, ", ");
        if (n == 0)
            break;
        memcpy(word, p, n < sizeof word ? n : sizeof word - 1);
        word[n < sizeof word ? n : sizeof word - 1] = '\0';
        if (n >= sizeof word || component(word, out) != 0) {
            if (bad) {
                *bad = p;
                *bad_len = n;
            }
            return JN_EINVAL;
        }
        p += n;
    }
    return 0;
}
