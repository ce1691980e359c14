/*
 * io_own_peer.c — what the own path reads in a peer's open (AMQP 1.0 part
 * 2, 2.7.1) beyond its performative fields, with the message layer's
 * decoder (docs/engine.md, stage 5; docs/protocol.md, "Open properties"
 * and "Inter-router connections"):
 *
 * - failover-server-list (a connector's backup hosts): the connector's
 *   list keeps its own host and the one connected to now, and takes the
 *   peer's entries after them, as qdrouterd 1.19 does;
 * - qd.inter-router-cost and qd.annotations-version of a router peer;
 * - the qd.streaming-links capability among its offered capabilities;
 * - and the names this router gives the links it attaches to another
 *   router (1.19's "qdlink." form).
 *
 * The peer's properties are read only when the whole value decodes
 * (jn_io_own_props_first); each reading keeps 1.19's quirks, listed at
 * its function. Threads: each function says.
 */
#include "io_own.h"

#include <junction/decoder.h>

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* At most this many backups are taken from one peer's list, and a field
 * longer than FAILOVER_FIELD_MAX octets makes its entry ignored: a peer
 * cannot make the connector hold an unbounded list. */
#define FAILOVER_MAX       32u
#define FAILOVER_FIELD_MAX (JN_IO_FAILOVER_HOST_MAX - 1u)

/* The value of the first entry of the peer's properties map (props, an
 * encoded value) whose key is the symbol key, into *val with d the
 * decoder over its map; false when there is none, or props is not a
 * well-formed map. stop_at_other: a key that is not a symbol ends the
 * search (the cost's quirk). */
static bool props_find(const jn_iter_t *props, const char *key, bool stop_at_other,
                       jn_decoder_t *in, jn_field_t *val)
{
    jn_decoder_t d;
    jn_field_t f, k;
    if (!jn_io_own_props_first(props, &d, &f) || f.type != JN_TYPE_MAP || f.described ||
        jn_decoder_enter(&d, &f, in) != 0)
        return false;
    while (jn_decoder_next(in, &k) == 1 && jn_decoder_next(in, val) == 1) {
        bool sym = k.type == JN_TYPE_SYMBOL && !k.described;
        if (!sym && stop_at_other)
            return false;
        if (sym && jn_field_equal_string(&k, key))
            return true;
    }
    return false;
}

/* f's octets (a string or symbol, not described) copied and
 * NUL-terminated; NULL when f is another type, empty, longer than
 * FAILOVER_FIELD_MAX, holds a NUL, or memory ran out. */
static char *failover_text(const jn_field_t *f)
{
    if (f->described || (f->type != JN_TYPE_STRING && f->type != JN_TYPE_SYMBOL) ||
        f->size == 0 || f->size > FAILOVER_FIELD_MAX)
        return NULL;
    char *s = malloc((size_t)f->size + 1);
    if (!s)
        return NULL;
    jn_iter_t it = f->payload;
    size_t n = jn_iter_copy(&it, s, f->size);
    s[n] = '\0';
    if (n != f->size || strlen(s) != n) {
        free(s);
        return NULL;
    }
    return s;
}

/* One entry of the peer's list (f, decoded by d): a map whose keys
 * network-host, port and scheme (symbols or strings; the last of a
 * repeated key counts) give u's fields; other keys are ignored. False
 * when it has no usable network-host (the entry is skipped, as 1.19
 * does). */
static bool failover_url_of(const jn_decoder_t *d, const jn_field_t *f, jn_io_failover_url_t *u)
{
    static const char *const keys[3] = {"network-host", "port", "scheme"};
    memset(u, 0, sizeof *u);
    jn_decoder_t in;
    jn_field_t k, v;
    if (f->type != JN_TYPE_MAP || f->described || jn_decoder_enter(d, f, &in) != 0)
        return false;
    while (jn_decoder_next(&in, &k) == 1 && jn_decoder_next(&in, &v) == 1) {
        char **slots[3] = {&u->host, &u->port, &u->scheme};
        for (int i = 0; i < 3; i++) {
            if (k.described || !jn_field_equal_string(&k, keys[i]))
                continue;
            free(*slots[i]);
            *slots[i] = failover_text(&v);
        }
    }
    if (!u->host) {
        jn_io_failover_url_free(u);
        return false;
    }
    return true;
}

unsigned jn_io_own_failover_read(const jn_iter_t *props, jn_io_failover_url_t *add,
                                 unsigned cap, bool *found)
{
    jn_decoder_t in, list;
    jn_field_t v, e;
    *found = props_find(props, "failover-server-list", false, &in, &v) &&
             v.type == JN_TYPE_LIST && !v.described && jn_decoder_enter(&in, &v, &list) == 0;
    unsigned n = 0;
    while (*found && n < cap && jn_decoder_next(&list, &e) == 1)
        if (failover_url_of(&list, &e, &add[n]))
            n++;
    return n;
}

void jn_io_own_failover_take_IO(jn_io_conn_t *conn, const jn_iter_t *props)
{
    JN_ASSERT_IO(conn);
    jn_io_endpoint_t *ep = conn->endpoint;
    if (conn->incoming || !ep || ep->is_listener)
        return;
    jn_io_failover_url_t add[FAILOVER_MAX];
    bool found;
    unsigned n = jn_io_own_failover_read(props, add, FAILOVER_MAX, &found);
    if (!found)
        return; /* no list: the connector's list stays as it is (1.19) */
    pthread_mutex_lock(&conn->io->lock);
    int rc = jn_io_failover_replace_locked(&ep->failover, add, n);
    pthread_mutex_unlock(&conn->io->lock);
    if (rc != 0)
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_ERROR,
               JN_IO_CONN_FMT " Out of memory keeping the peer's failover list", conn->id);
    else
        JN_LOG(JN_LOG_MOD_SERVER, JN_LOG_DEBUG,
               JN_IO_CONN_FMT " Connector %s: %u backup host(s) from the peer's failover list",
               conn->id, ep->shown, n);
}

uint32_t jn_io_own_props_cost(const jn_iter_t *props)
{
    jn_decoder_t in;
    jn_field_t v, k;
    uint32_t cost = 0;
    bool more = props_find(props, "qd.inter-router-cost", true, &in, &v);
    while (more) { /* the last positive int wins */
        if (v.type == JN_TYPE_INT && !v.described && v.value.i > 0)
            cost = (uint32_t)v.value.i;
        more = false;
        while (!more && jn_decoder_next(&in, &k) == 1 && jn_decoder_next(&in, &v) == 1) {
            if (k.type != JN_TYPE_SYMBOL || k.described)
                return cost; /* 1.19 stops at the first key that is not a symbol */
            more = jn_field_equal_string(&k, "qd.inter-router-cost");
        }
    }
    return cost;
}

bool jn_io_own_props_version(const jn_iter_t *props, int32_t *version)
{
    jn_decoder_t in;
    jn_field_t v, k;
    bool more = props_find(props, "qd.annotations-version", false, &in, &v);
    while (more) { /* the first int value counts */
        if (v.type == JN_TYPE_INT && !v.described) {
            *version = (int32_t)v.value.i;
            return true;
        }
        more = false;
        while (!more && jn_decoder_next(&in, &k) == 1 && jn_decoder_next(&in, &v) == 1)
            more = k.type == JN_TYPE_SYMBOL && !k.described &&
                   jn_field_equal_string(&k, "qd.annotations-version");
    }
    return false;
}

void jn_io_own_props_log_version_IO(jn_io_conn_t *conn, const jn_iter_t *props)
{
    JN_ASSERT_IO(conn);
    int32_t version;
    if (jn_io_own_props_version(props, &version))
        /* not the [C12] prefix first: 1.19's line starts with its text */
        JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_DEBUG,
               "Remote router annotations version: %d (connection " JN_IO_CONN_FMT ")",
               (int)version, conn->id);
}

bool jn_io_own_caps_streaming(const jn_iter_t *caps)
{
    static const char cap[] = "qd.streaming-links";
    jn_decoder_t d, in;
    jn_field_t f;
    if (!jn_io_own_props_first(caps, &d, &f) || f.described)
        return false;
    if (f.type != JN_TYPE_ARRAY)
        return f.type == JN_TYPE_SYMBOL && jn_field_equal_string(&f, cap);
    if (jn_decoder_enter(&d, &f, &in) != 0 ||
        (in.elem_code != JN_AMQP_SYM8 && in.elem_code != JN_AMQP_SYM32))
        return false;
    /* an array of symbols: any element (a described array's symbol
     * descriptor counts as one more, as 1.19 reads it) */
    if (in.elem_described && in.elem_descriptor_is_symbol &&
        jn_iter_equal(&in.elem_descriptor_symbol, cap))
        return true;
    while (jn_decoder_next(&in, &f) == 1)
        if (jn_field_equal_string(&f, cap))
            return true;
    return false;
}

void jn_io_own_link_name(char out[23])
{
    static const char chars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+_";
    uint8_t rnd[15];
    if (getrandom(rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) {
        uint64_t x = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)out; /* no entropy yet */
        for (size_t i = 0; i < sizeof rnd; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            rnd[i] = (uint8_t)(x >> 56);
        }
    }
    memcpy(out, "qdlink.", 7);
    for (int i = 0; i < 15; i++)
        out[7 + i] = chars[rnd[i] % 64];
    out[22] = '\0';
}
