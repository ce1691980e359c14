/*
 * policy_private.h — what the policy layer's files share (router/policy;
 * docs/design.md "Policy"). Private to router/policy.
 */
#ifndef JN_POLICY_PRIVATE_H
#define JN_POLICY_PRIVATE_H 1

/* jn_policy_next_item: the next item of a list whose items are separated
 * by commas or spaces (1.19's sources, targets, patterns and aliases),
 * from p: returns its first octet, or the list's terminating NUL when no
 * item is left, and sets *end just past the item (where the next search
 * starts). An item returned is never empty. Any thread. Usage:
 *
 *   for (const char *e, *p = jn_policy_next_item(list, &e); *p;
 *        p = jn_policy_next_item(e, &e))
 *       use p .. e
 */
static inline const char *jn_policy_next_item(const char *p, const char **end)
{
    while (*p == ' ' || *p == ',')
        p++;
    const char *e = p;
    while (*e && *e != ',' && *e != ' ')
        e++;
    *end = e;
    return p;
}

#endif /* JN_POLICY_PRIVATE_H */
