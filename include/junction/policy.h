/*
 * junction/policy.h — the vhost policy's pure decisions (docs/design.md
 * "Policy"): functions of the facts their callers pass in, with no
 * sockets, no connections and no core structures, so they can be unit
 * tested alone. Today: whether a vhost's source/target patterns are
 * well formed, and whether two vhost hostname patterns would match the
 * same names. Every function here may be called from any thread; none
 * allocates or keeps its arguments.
 */
#ifndef JUNCTION_POLICY_H
#define JUNCTION_POLICY_H 1

#include <junction/common.h>

/* jn_policy_pattern_list_check: is list (a user group's sourcePattern or
 * targetPattern: items separated by commas or spaces, each a pattern of
 * tokens between '.' or '/') well formed? The one rule is 1.19's on the
 * user's name: each "${user}" in an item must be a whole token (nothing
 * else between its separators) and the item's first or last token. On a
 * bad item returns JN_EINVAL and writes into why (cap octets, always
 * NUL-terminated when cap > 0) the item and what is wrong with it, e.g.
 * "'abc/${user}.xyz': ${user} must be the first or the last token";
 * else returns 0 and leaves why alone. list is borrowed (NULL is an
 * empty list). */
int jn_policy_pattern_list_check(const char *list, char *why, size_t cap);

/* jn_policy_host_patterns_conflict: do vhost hostname patterns a and b
 * (tokens between '.' or '/'; '*' one token, '#' any number, as
 * policy.enableVhostNamePatterns reads them) match exactly the same
 * names while being written differently ("#.#.0.0" and "#.0.0",
 * "#.*.x" and "*.#.x", "a.b" and "a/b")? Then a router could not say
 * which vhost a name belongs to. The same text is no conflict here (the
 * callers refuse a second vhost of a hostname by name). Borrowed
 * arguments; a pattern of more than JN_POLICY_PATTERN_MAX octets is
 * never found in conflict. */
#define JN_POLICY_PATTERN_MAX 1024
bool jn_policy_host_patterns_conflict(const char *a, const char *b);

#endif /* JUNCTION_POLICY_H */
