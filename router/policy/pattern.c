/*
 * pattern.c — checks on the vhost policy's patterns (junction/policy.h):
 * the user groups' sourcePattern/targetPattern items and the vhost
 * hostnames read as patterns (policy.enableVhostNamePatterns). Pure
 * functions of their arguments; the configuration checks
 * (router/mgmt/entity_file.c) and management's vhost CREATE
 * (router/mgmt/vhost_ops.c) call them, so a file and a request are
 * refused with the same words.
 */
#include "policy_private.h"

#include <junction/policy.h>

#include <stdio.h>
#include <string.h>

static bool is_sep(char c)
{
    return c == '.' || c == '/';
}

/* One item (len octets) of a pattern list: 0, or JN_EINVAL with why. */
static int item_check(const char *item, size_t len, char *why, size_t cap)
{
    static const char user[] = "${user}";
    const size_t ul = sizeof user - 1;
    for (size_t i = 0; i + ul <= len; i++) {
        if (memcmp(item + i, user, ul) != 0)
            continue;
        bool starts = i == 0 || is_sep(item[i - 1]);
        bool ends = i + ul == len || is_sep(item[i + ul]);
        const char *rule = NULL;
        if (!starts || !ends)
            rule = "${user} must be a whole token (nothing else between its '.' or '/')";
        else if (i != 0 && i + ul != len)
            rule = "${user} must be the first or the last token";
        if (rule) {
            if (cap > 0)
                snprintf(why, cap, "'%.*s': %s", (int)(len > 200 ? 200 : len), item, rule);
            return JN_EINVAL;
        }
        i += ul - 1;
    }
    return 0;
}

int jn_policy_pattern_list_check(const char *list, char *why, size_t cap)
{
    for (const char *e, *p = jn_policy_next_item(list ? list : "", &e); *p;
         p = jn_policy_next_item(e, &e))
        if (item_check(p, (size_t)(e - p), why, cap) != 0)
            return JN_EINVAL;
    return 0;
}

/* The canonical form of pattern p into out (JN_POLICY_PATTERN_MAX + 1
 * octets): tokens joined by '.', and each run of wildcard tokens written
 * as its '*' tokens then one '#' if the run had any (a run matches at
 * least as many tokens as it has '*', and any number more when it has a
 * '#': its order and repeated '#' change nothing). False when p is too
 * long. */
static bool canonical(const char *p, char *out)
{
    size_t plen = strlen(p), n = 0;
    if (plen > JN_POLICY_PATTERN_MAX)
        return false;
    unsigned stars = 0;
    bool hash = false, run = false;
    for (size_t i = 0; i <= plen;) {
        size_t e = i;
        while (e < plen && !is_sep(p[e]))
            e++;
        size_t tl = e - i;
        bool wild = tl == 1 && (p[i] == '*' || p[i] == '#');
        if (wild) {
            stars += p[i] == '*';
            hash |= p[i] == '#';
            run = true;
        }
        bool last = e >= plen;
        if (run && (!wild || last)) { /* the run ends: write it */
            for (unsigned k = 0; k < stars; k++) {
                out[n++] = '*';
                out[n++] = '.';
            }
            if (hash) {
                out[n++] = '#';
                out[n++] = '.';
            }
            stars = 0;
            hash = false;
            run = false;
        }
        if (!wild) {
            memcpy(out + n, p + i, tl);
            n += tl;
            out[n++] = '.';
        }
        i = e + 1;
    }
    out[n ? n - 1 : 0] = '\0'; /* never longer than p: the last '.' goes */
    return true;
}

bool jn_policy_host_patterns_conflict(const char *a, const char *b)
{
    if (!a || !b || strcmp(a, b) == 0)
        return false;
    char ca[JN_POLICY_PATTERN_MAX + 2], cb[JN_POLICY_PATTERN_MAX + 2];
    if (!canonical(a, ca) || !canonical(b, cb))
        return false;
    return strcmp(ca, cb) == 0;
}
