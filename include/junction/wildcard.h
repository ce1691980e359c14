/*
 * junction/wildcard.h — token wildcard matching, shared by the exchange's
 * binding keys (router/core/exchange.c) and the vhost policy's source and
 * target patterns (router/io/io_policy.c).
 */
#ifndef JUNCTION_WILDCARD_H
#define JUNCTION_WILDCARD_H 1

#include <junction/common.h>

/* At most this many tokens in a pattern or a subject: a longer one matches
 * nothing, which keeps a match with several '#' bounded in time. */
#define JN_WILDCARD_MAX_TOKENS 64

/* jn_wildcard_match: does pattern (plen octets) match subject (slen
 * octets)? Both are split into tokens at every octet listed in seps (a C
 * string, e.g. "." or "./"); an empty text is one empty token. In the
 * pattern a token that is the single octet `one` ('*' for AMQP-style
 * keys, '+' for MQTT) matches exactly one token, a token "#" zero or more,
 * any other token only itself. Borrowed arguments; no allocation. Any
 * thread. (Binding keys: docs/design.md, "Link routes and auto-links",
 * exchanges; policy patterns: docs/design.md, "Policy".) */
bool jn_wildcard_match(const char *pattern, size_t plen, const char *subject, size_t slen,
                       const char *seps, char one);

#endif /* JUNCTION_WILDCARD_H */
