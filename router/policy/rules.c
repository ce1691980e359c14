/*
 * rules.c — a user group's link rules (junction/policy.h, docs/design.md
 * "Policy"): may a client attach this sender or receiver, and may an
 * anonymous sender's message go to this address. Pure functions of the
 * rules and the facts the I/O layer gathers from the attach (address,
 * role, dynamic, capabilities, links open); no lock, no allocation.
 */
#include "policy_private.h"

#include <junction/policy.h>
#include <junction/wildcard.h>

#include <string.h>

/* item (len octets) with each "${user}" replaced by user, into buf (cap
 * octets, NUL-terminated); false when it does not fit (the item then
 * allows nothing: a cut item could allow more than the whole one). */
static bool expand_user(const char *item, size_t len, const char *user, char *buf, size_t cap,
                        size_t *out)
{
    size_t n = 0, ul = strlen(user);
    for (size_t i = 0; i < len; i++) {
        if (len - i >= 7 && memcmp(item + i, "${user}", 7) == 0) {
            if (n + ul >= cap)
                return false;
            memcpy(buf + n, user, ul);
            n += ul;
            i += 6;
        } else {
            if (n + 1 >= cap)
                return false;
            buf[n++] = item[i];
        }
    }
    buf[n] = '\0';
    *out = n;
    return true;
}

/* One item of a sources/targets list against address: "*" any, "abc*" a
 * prefix, "${user}" replaced by user, else equal. The user's name is
 * literal, as in 1.19: a '*' in it is no wildcard (the item's own last
 * octet says whether it is a prefix). */
static bool item_matches(const char *item, size_t len, const char *address, const char *user)
{
    if (len == 1 && item[0] == '*')
        return true;
    bool prefix = item[len - 1] == '*';
    char buf[1024];
    size_t n;
    if (!expand_user(item, prefix ? len - 1 : len, user, buf, sizeof buf, &n))
        return false;
    return prefix ? strncmp(address, buf, n) == 0 : strcmp(address, buf) == 0;
}

static bool list_allows(const char *list, const char *address, const char *user)
{
    for (const char *e, *p = jn_policy_next_item(list, &e); *p; p = jn_policy_next_item(e, &e))
        if (item_matches(p, (size_t)(e - p), address, user))
            return true;
    return false;
}

/* Some token of user (between '.' or '/') is a pattern wildcard ("*" or
 * "#"): put into a pattern it would match more than the name itself. */
static bool user_has_wildcard_token(const char *user)
{
    const char *t = user;
    for (const char *q = user;; q++) {
        if (*q == '.' || *q == '/' || *q == '\0') {
            if (q - t == 1 && (*t == '*' || *t == '#'))
                return true;
            if (*q == '\0')
                return false;
            t = q + 1;
        }
    }
}

static bool patterns_allow(const char *list, const char *address, const char *user)
{
    bool wild_user = user_has_wildcard_token(user);
    for (const char *e, *p = jn_policy_next_item(list, &e); *p; p = jn_policy_next_item(e, &e)) {
        size_t len = (size_t)(e - p);
        char buf[1024];
        size_t n;
        /* ${user} as in the lists; a user whose name holds a wildcard
         * token gets nothing from a pattern naming ${user} (1.19 matched
         * the name literally; a pattern cannot) */
        bool names_user = len >= 7 && memmem(p, len, "${user}", 7) != NULL;
        if (!(names_user && wild_user) && expand_user(p, len, user, buf, sizeof buf, &n) &&
            jn_wildcard_match(buf, n, address, strlen(address), "./", '*'))
            return true;
    }
    return false;
}

bool jn_policy_target_allowed(const jn_policy_rules_t *r, const char *address, const char *user)
{
    return list_allows(r->targets, address, user) ||
           patterns_allow(r->target_pattern, address, user);
}

const char *jn_policy_link_denial(const jn_policy_rules_t *r, const jn_policy_link_facts_t *f,
                                  bool *limit)
{
    *limit = false;
    if (f->sender ? f->senders >= r->max_senders : f->receivers >= r->max_receivers) {
        *limit = true;
        return f->sender ? "maxSenders limit reached" : "maxReceivers limit reached";
    }
    bool named = f->address && f->address[0];
    if (f->sender && !named)
        return r->allow_anonymous_sender ? NULL : "anonymous sender not allowed";
    if (!f->sender && f->dynamic)
        return r->allow_dynamic_source ? NULL : "dynamic source not allowed";
    if (!r->allow_waypoint_links && f->waypoint)
        return "waypoint capability not permitted (allowWaypointLinks)";
    if (!r->allow_fallback_links && f->fallback)
        return "fallback capability not permitted (allowFallbackLinks)";
    if (f->sender)
        return jn_policy_target_allowed(r, f->address, f->user)
                   ? NULL
                   : "target not allowed by the group's targets/targetPattern";
    return named && (list_allows(r->sources, f->address, f->user) ||
                     patterns_allow(r->source_pattern, f->address, f->user))
               ? NULL
               : "source not allowed by the group's sources/sourcePattern";
}
