/*
 * message_snapshot.h — a printable summary of everything a parse left
 * readable through junction/message.h: the result and error, the header,
 * `to` and `reply-to`, each section's octets, the router annotations and
 * the octets of an outgoing copy toward a router and toward an endpoint.
 * Two parses agree when their summaries are the same string: the
 * one-buffer and the general way of the parser (test_message_content.c,
 * fuzz_message.c). Plain C (no cmocka), static functions only.
 */
#ifndef JN_TEST_MESSAGE_SNAPSHOT_H
#define JN_TEST_MESSAGE_SNAPSHOT_H 1

#include <junction/message.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

typedef struct snap_out {
    char *p;
    size_t left;
} snap_out_t;

__attribute__((format(printf, 2, 3))) static void snap_add(snap_out_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->p, o->left, fmt, ap);
    va_end(ap);
    size_t k = n < 0 ? 0 : (size_t)n < o->left ? (size_t)n : o->left ? o->left - 1 : 0;
    o->p += k;
    o->left -= k;
}

/* FNV-1a of n octets, continuing from h. */
static uint64_t snap_fnv(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* The length and hash of the octets left in a view. */
static void snap_view(snap_out_t *o, const char *name, const jn_iter_t *view)
{
    jn_iter_t it = *view;
    uint8_t block[256];
    uint64_t h = 0xcbf29ce484222325ull;
    size_t len = 0, n;
    while ((n = jn_iter_copy(&it, block, sizeof block)) > 0) {
        h = snap_fnv(h, block, n);
        len += n;
    }
    snap_add(o, " %s=%zu/%016llx", name, len, (unsigned long long)h);
}

/* An outgoing copy of m composed for hop: its octets' length and hash and
 * how the cursor ended. */
static void snap_copy(snap_out_t *o, jn_message_t *m, const jn_ra_hop_t *hop)
{
    jn_buffer_list_t ma;
    jn_buffer_list_init(&ma);
    if (jn_ra_compose(jn_message_annotations(m), hop, &ma) != 0) {
        snap_add(o, " copy=compose-failed");
        jn_buffer_list_free(&ma);
        return;
    }
    jn_message_out_t out;
    int rc = jn_message_out_init(&out, m, &ma);
    if (rc != 0) {
        snap_add(o, " copy=%d", rc);
        jn_buffer_list_free(&ma);
        return;
    }
    const uint8_t *p;
    size_t n, len = 0;
    uint64_t h = 0xcbf29ce484222325ull;
    while ((rc = jn_message_out_next(&out, &p, &n)) == 1) {
        h = snap_fnv(h, p, n);
        len += n;
    }
    jn_message_out_fini(&out);
    snap_add(o, " copy=%zu/%016llx/%d", len, (unsigned long long)h, rc);
}

/* Write the summary of m, whose last parse returned rc, to out (cap
 * octets, NUL-terminated, cut if longer). */
static void jn_test_message_snapshot(jn_message_t *m, int rc, char *out, size_t cap)
{
    snap_out_t o = {.p = out, .left = cap};
    const char *err = jn_message_error(m), *cond = jn_message_error_condition(m);
    snap_add(&o, "rc=%d error=%s condition=%s", rc, err ? err : "-", cond ? cond : "-");
    jn_message_header_t h;
    int hr = jn_message_get_header(m, &h);
    snap_add(&o, "\nheader=%d", hr);
    if (hr == 0)
        snap_add(&o, " %d/%u/%d:%u/%d/%u", h.durable, h.priority, h.has_ttl, h.ttl,
                 h.first_acquirer, h.delivery_count);
    jn_iter_t it;
    int tr = jn_message_to_field(m, &it);
    snap_add(&o, "\nto=%d", tr);
    if (tr == 0)
        snap_view(&o, "octets", &it);
    tr = jn_message_reply_to(m, &it);
    snap_add(&o, "\nreply-to=%d", tr);
    if (tr == 0)
        snap_view(&o, "octets", &it);
    for (int s = 0; s < JN_SEC_COUNT; s++) {
        int sr = jn_message_section(m, (jn_section_t)s, &it);
        snap_add(&o, "\nsection %d=%d", s, sr);
        if (sr == 0)
            snap_view(&o, "octets", &it);
    }
    const jn_ra_t *ra = jn_message_annotations(m);
    snap_add(&o, "\nannotations=%s", ra ? "read" : "-");
    if (!ra)
        return;
    snap_add(&o, " present=%d to=%d ingress=%d trace=%d/%u/%u stream=%d phase=%d user=%u/%u/%u",
             ra->section_present, ra->has_to, ra->has_ingress, ra->has_trace, ra->trace_count,
             ra->trace_size, ra->stream, (int)ra->phase, ra->user_count, ra->user_size,
             ra->user_run_count);
    if (ra->has_to)
        snap_view(&o, "ra-to", &ra->to);
    if (ra->has_ingress)
        snap_view(&o, "ra-ingress", &ra->ingress);
    if (ra->has_trace)
        snap_view(&o, "ra-trace", &ra->trace);
    if (err)
        return;
    jn_ra_hop_t to_router = {.to_router = true, .node_id = "0/Snap"};
    jn_ra_hop_t to_endpoint = {.to_router = false, .node_id = "0/Snap"};
    snap_add(&o, "\nrouter");
    snap_copy(&o, m, &to_router);
    snap_add(&o, "\nendpoint");
    snap_copy(&o, m, &to_endpoint);
}

#endif /* JN_TEST_MESSAGE_SNAPSHOT_H */
