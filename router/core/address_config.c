/*
 * address_config.c — prefixes and patterns of the `address` entities and the
 * most-specific-match rule (address_config.h).
 *
 * Each candidate match is described by a signature: one grade per address
 * token saying how that token was matched (literal, '*' or '#'). The winner
 * is the candidate whose signature is greatest, compared token by token.
 *
 * A pattern is matched by a depth-first search that tries, at each step,
 * the choice giving the best grade to the current address token first:
 * a literal or '*' token consumes the address token; a '#' first tries to
 * match nothing (the next pattern token, never '#' after collapsing, then
 * grades this address token literal or '*'), then to swallow the address
 * token (grade '#'). Because the options at each step give distinct grades
 * to the current token in decreasing order, the first complete match found
 * has the greatest signature. Failed (pattern token, address token) pairs
 * are remembered, so the search is O(pattern tokens x address tokens).
 */
#include "address_config.h"

#include <stdlib.h>
#include <string.h>

/* Grades of one address token, best last: swallowed by '#'; matched by
 * '*' or a literal right after a '#' that matched nothing; by '*'; by a
 * literal. (1.19 tries a literal, then '*', then '#' at each step, so at
 * equal grades so far a '#' that matches nothing loses to the literal or
 * '*' the other pattern has there: `a.*.d` beats `a.*.#.d` for a.c.d.) */
enum {
    GRADE_HASH = 1,
    GRADE_HASH_STAR = 2,
    GRADE_HASH_LITERAL = 3,
    GRADE_STAR = 4,
    GRADE_LITERAL = 5
};

typedef struct token {
    const char *p;
    size_t len;
} token_t;

static bool is_separator(char c)
{
    return c == '.' || c == '/';
}

/* Split len octets at s into tokens (out may be NULL to count). Returns the
 * number of tokens (always >= 1), or max + 1 when there are more than max. */
static size_t tokenize(const char *s, size_t len, token_t *out, size_t max)
{
    size_t n = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && !is_separator(s[i]))
            continue;
        if (n == max)
            return max + 1;
        if (out) {
            out[n].p = s + start;
            out[n].len = i - start;
        }
        n++;
        start = i + 1;
    }
    return n;
}

static bool token_is(const token_t *t, char c)
{
    return t->len == 1 && t->p[0] == c;
}

void jn_addr_config_init(jn_addr_config_t *cfg)
{
    cfg->entries = NULL;
    cfg->count = cfg->capacity = 0;
}

void jn_addr_config_fini(jn_addr_config_t *cfg)
{
    for (size_t i = 0; i < cfg->count; i++)
        free(cfg->entries[i].text);
    free(cfg->entries);
    jn_addr_config_init(cfg);
}

/* Copy a pattern, collapsing each run of '#' tokens into one. Returns a heap
 * string or NULL on ENOMEM. */
static char *collapse_pattern(const char *text, size_t len, size_t *out_len)
{
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t o = 0, start = 0;
    bool prev_hash = false;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && !is_separator(text[i]))
            continue;
        bool hash = (i - start == 1 && text[start] == '#');
        if (!(hash && prev_hash)) {
            /* keep the separator that preceded this token */
            size_t from = start > 0 ? start - 1 : 0;
            memcpy(out + o, text + from, i - from);
            o += i - from;
        }
        prev_hash = hash;
        start = i + 1;
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}

size_t jn_addr_config_text_len(const char *text)
{
    size_t len = strlen(text);
    while (len > 0 && is_separator(text[len - 1]))
        len--;
    return len;
}

int jn_addr_config_add(jn_addr_config_t *cfg, const char *text, bool pattern,
                       jn_distribution_t distribution)
{
    if (!text || (unsigned)distribution > JN_DIST_UNAVAILABLE)
        return JN_EINVAL;
    size_t len = jn_addr_config_text_len(text);
    if (len == 0)
        return JN_EINVAL;
    char *copy;
    if (pattern) {
        copy = collapse_pattern(text, len, &len);
    } else {
        copy = malloc(len + 1);
        if (copy) {
            memcpy(copy, text, len);
            copy[len] = '\0';
        }
    }
    if (!copy)
        return JN_ENOMEM;
    for (size_t i = 0; i < cfg->count; i++) {
        const jn_addr_config_entry_t *e = &cfg->entries[i];
        if (e->pattern == pattern && e->len == len && memcmp(e->text, copy, len) == 0) {
            free(copy);
            return JN_EEXIST;
        }
    }
    if (cfg->count == cfg->capacity) {
        size_t cap = cfg->capacity ? cfg->capacity * 2 : 8;
        jn_addr_config_entry_t *grown = realloc(cfg->entries, cap * sizeof *grown);
        if (!grown) {
            free(copy);
            return JN_ENOMEM;
        }
        cfg->entries = grown;
        cfg->capacity = cap;
    }
    cfg->entries[cfg->count++] = (jn_addr_config_entry_t){
        .text = copy, .len = len, .pattern = pattern, .distribution = distribution,
        .priority = -1};
    return 0;
}

/* Scratch state of one pattern search. */
typedef struct search {
    const token_t *pat;
    size_t np;
    const token_t *addr;
    size_t na;
    uint8_t *grade;  /* na grades, written along the current path */
    uint8_t *failed; /* (np + 1) * (na + 1) flags */
} search_t;

/* Does pat[j..] match addr[i..]? On success grade[i..] holds the best
 * signature for this suffix (see the file comment). after_hash: pat[j]
 * follows a '#' that matched nothing (its grade is one of GRADE_HASH_*). */
static bool search_from(search_t *s, size_t j, size_t i, bool after_hash)
{
    uint8_t *failed = &s->failed[j * (s->na + 1) + i];
    if (*failed)
        return false;
    if (j == s->np) {
        if (i == s->na)
            return true;
    } else if (token_is(&s->pat[j], '#')) {
        if (search_from(s, j + 1, i, true))
            return true;
        if (i < s->na) {
            s->grade[i] = GRADE_HASH;
            if (search_from(s, j, i + 1, false))
                return true;
        }
    } else if (i < s->na) {
        const token_t *p = &s->pat[j], *a = &s->addr[i];
        uint8_t g = 0;
        if (token_is(p, '*'))
            g = after_hash ? GRADE_HASH_STAR : GRADE_STAR;
        else if (p->len == a->len && memcmp(p->p, a->p, a->len) == 0)
            g = after_hash ? GRADE_HASH_LITERAL : GRADE_LITERAL;
        if (g) {
            s->grade[i] = g;
            if (search_from(s, j + 1, i + 1, false))
                return true;
        }
    }
    *failed = 1;
    return false;
}

/* Match a pattern; on success fill grade[0..na). */
static bool match_pattern(const jn_addr_config_entry_t *e, const token_t *addr, size_t na,
                          uint8_t *grade)
{
    token_t pat[JN_ADDR_CONFIG_MAX_TOKENS];
    size_t np = tokenize(e->text, e->len, pat, JN_ADDR_CONFIG_MAX_TOKENS);
    if (np > JN_ADDR_CONFIG_MAX_TOKENS)
        return false;
    uint8_t *failed = calloc((np + 1) * (na + 1), 1);
    if (!failed)
        return false;
    search_t s = {.pat = pat, .np = np, .addr = addr, .na = na, .grade = grade, .failed = failed};
    bool ok = search_from(&s, 0, 0, false);

    free(failed);
    return ok;
}

/* Match a prefix; on success fill grade[0..na) when grade is not NULL. */
static bool match_prefix(const jn_addr_config_entry_t *e, const char *a, size_t len, uint8_t *grade,
                         size_t na)
{
    if (len < e->len || memcmp(a, e->text, e->len) != 0)
        return false;
    if (len > e->len && !is_separator(a[e->len]))
        return false;
    if (grade) {
        size_t k = tokenize(e->text, e->len, NULL, SIZE_MAX - 1);
        for (size_t i = 0; i < na; i++)
            grade[i] = i < k ? GRADE_LITERAL : GRADE_HASH;
    }
    return true;
}

int jn_addr_config_match(const jn_addr_config_t *cfg, const char *addr, size_t len)
{
    if (cfg->count == 0)
        return -1;
    token_t *tokens = malloc(sizeof(token_t) * JN_ADDR_CONFIG_MAX_TOKENS);
    uint8_t *grades = malloc(2 * JN_ADDR_CONFIG_MAX_TOKENS);
    if (!tokens || !grades) {
        free(tokens);
        free(grades);
        return -1;
    }
    size_t na = tokenize(addr, len, tokens, JN_ADDR_CONFIG_MAX_TOKENS);
    bool patterns_ok = na <= JN_ADDR_CONFIG_MAX_TOKENS;
    if (!patterns_ok)
        na = JN_ADDR_CONFIG_MAX_TOKENS; /* prefixes: grade the first tokens only */
    uint8_t *best = grades, *cand = grades + JN_ADDR_CONFIG_MAX_TOKENS;
    int winner = -1;
    for (size_t i = 0; i < cfg->count; i++) {
        const jn_addr_config_entry_t *e = &cfg->entries[i];
        bool ok = e->pattern ? (patterns_ok && match_pattern(e, tokens, na, cand))
                             : match_prefix(e, addr, len, cand, na);
        if (!ok)
            continue;
        int cmp = winner < 0 ? 1 : memcmp(cand, best, na);
        /* equal: a prefix beats a pattern; otherwise the earlier entry */
        if (cmp == 0 && !e->pattern && cfg->entries[winner].pattern)
            cmp = 1;
        if (cmp > 0) {
            winner = (int)i;
            uint8_t *t = best;
            best = cand;
            cand = t;
        }
    }
    free(tokens);
    free(grades);
    return winner;
}
