/*
 * wildcard.c — token wildcard matching (junction/wildcard.h).
 */
#include <junction/wildcard.h>

#include <string.h>

/* A token: where it starts, how long it is. */
typedef struct {
    const char *p;
    size_t n;
} tok_t;

/* Split s (n octets) at any octet of seps into t; the count, or 0 past
 * JN_WILDCARD_MAX_TOKENS. */
static size_t split(const char *s, size_t n, const char *seps, tok_t *t)
{
    size_t count = 0, start = 0, nseps = strlen(seps);
    for (size_t i = 0; i <= n; i++) {
        if (i < n && !memchr(seps, s[i], nseps))
            continue;
        if (count == JN_WILDCARD_MAX_TOKENS)
            return 0;
        t[count++] = (tok_t){s + start, i - start};
        start = i + 1;
    }
    return count;
}

static bool is_tok(const tok_t *t, char c)
{
    return t->n == 1 && t->p[0] == c;
}

/* Pattern tokens k (nk) against subject tokens s (ns). */
static bool match_toks(const tok_t *k, size_t nk, const tok_t *s, size_t ns, char one)
{
    while (nk > 0) {
        if (is_tok(k, '#')) {
            while (nk > 1 && is_tok(k + 1, '#')) { /* "#.#" is "#" */
                k++;
                nk--;
            }
            if (nk == 1)
                return true;
            for (size_t skip = 0; skip <= ns; skip++)
                if (match_toks(k + 1, nk - 1, s + skip, ns - skip, one))
                    return true;
            return false;
        }
        if (ns == 0)
            return false;
        if (!is_tok(k, one) && (k->n != s->n || memcmp(k->p, s->p, k->n) != 0))
            return false;
        k++, nk--, s++, ns--;
    }
    return ns == 0;
}

bool jn_wildcard_match(const char *pattern, size_t plen, const char *subject, size_t slen,
                       const char *seps, char one)
{
    tok_t kt[JN_WILDCARD_MAX_TOKENS], st[JN_WILDCARD_MAX_TOKENS];
    size_t nk = split(pattern, plen, seps, kt);
    size_t ns = split(subject, slen, seps, st);
    return nk > 0 && ns > 0 && match_toks(kt, nk, st, ns, one);
}
