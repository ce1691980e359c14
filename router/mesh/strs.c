/*
 * strs.c — a small growable list of owned strings, each with an integer
 * (a cost, a time or a hint), for router ids and mobile keys in link
 * states, the HELLO seen list and parsed control messages. Lists are short
 * (a router's neighbours, one message's keys), so lookups are linear.
 * Core thread (or whoever owns the list).
 */
#include "mesh_private.h"

#include <stdlib.h>
#include <string.h>

int jn_mesh_strs_add(jn_mesh_strs_t *l, const void *p, size_t len, int64_t val)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char **s = realloc(l->s, cap * sizeof *s);
        if (!s)
            return JN_ENOMEM;
        l->s = s;
        size_t *lens = realloc(l->len, cap * sizeof *lens);
        if (!lens)
            return JN_ENOMEM;
        l->len = lens;
        int64_t *vals = realloc(l->val, cap * sizeof *vals);
        if (!vals)
            return JN_ENOMEM;
        l->val = vals;
        l->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return JN_ENOMEM;
    if (len)
        memcpy(copy, p, len);
    copy[len] = '\0';
    l->s[l->n] = copy;
    l->len[l->n] = len;
    l->val[l->n] = val;
    l->n++;
    return 0;
}

long jn_mesh_strs_find(const jn_mesh_strs_t *l, const void *p, size_t len)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->len[i] == len && memcmp(l->s[i], p, len) == 0)
            return (long)i;
    return -1;
}

void jn_mesh_strs_remove(jn_mesh_strs_t *l, size_t i)
{
    if (i >= l->n)
        return;
    free(l->s[i]);
    l->n--;
    l->s[i] = l->s[l->n];
    l->len[i] = l->len[l->n];
    l->val[i] = l->val[l->n];
}

void jn_mesh_strs_clear(jn_mesh_strs_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->s[i]);
    l->n = 0;
}

void jn_mesh_strs_free(jn_mesh_strs_t *l)
{
    jn_mesh_strs_clear(l);
    free(l->s);
    free(l->len);
    free(l->val);
    memset(l, 0, sizeof *l);
}
