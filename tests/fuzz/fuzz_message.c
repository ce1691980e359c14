/*
 * fuzz_message.c — libFuzzer target for message content parsing and the
 * router-annotation rewrite.
 *
 * Input: a control octet (fuzz_input.h: how many octets arrive at a time;
 * top bit = router keys are honoured, as on an inter-router connection) then
 * the octets of one AMQP message. The message is fed in pieces, parsed after
 * each piece, then completed and parsed to the end. When it parses, the
 * routing fields are read, the annotations are composed for a router hop and
 * for an endpoint, each outgoing copy is produced through the out-cursor,
 * and — the property checked — every copy we produce must itself parse, with
 * the same `to`, the same number of user annotations, and (toward a router)
 * a trace one entry longer that holds our own node id. Then the same
 * octets are parsed again twice, in one buffer and in buffers of one octet,
 * and — the second property — the two parses leave the same results
 * (message_snapshot.h): the parser's one-buffer way agrees with its
 * general way.
 */
#include "fuzz_input.h"
#include "message_snapshot.h"

#include <junction/message.h>
#include <stdlib.h>
#include <string.h>

#define NODE_ID "0/Fuzz"
#define OUT_MAX (1u << 20)

static jn_message_t *feed(const uint8_t *data, size_t size, size_t chunk, bool honour)
{
    jn_message_t *m = jn_message_new();
    if (!m)
        abort();
    jn_message_set_annotation_policy(m, honour);
    for (size_t done = 0; done < size;) {
        size_t n = size - done < chunk ? size - done : chunk;
        if (jn_message_append(m, data + done, n) != 0)
            abort();
        done += n;
        int rc = jn_message_parse(m, JN_DEPTH_PROPERTIES);
        if (rc != 0 && rc != JN_AGAIN && rc != JN_EPROTO)
            abort();
    }
    jn_message_set_complete(m);
    return m;
}

/* Produce one outgoing copy of m into out (at most OUT_MAX octets). */
static size_t produce(jn_message_t *m, const jn_ra_hop_t *hop, uint8_t *out)
{
    jn_buffer_list_t ma;
    jn_buffer_list_init(&ma);
    if (jn_ra_compose(jn_message_annotations(m), hop, &ma) != 0)
        abort();
    jn_message_out_t o;
    if (jn_message_out_init(&o, m, &ma) != 0)
        abort();
    size_t total = 0;
    const uint8_t *ptr;
    size_t len;
    int rc;
    while ((rc = jn_message_out_next(&o, &ptr, &len)) == 1) {
        if (total + len > OUT_MAX)
            abort();
        memcpy(out + total, ptr, len);
        total += len;
    }
    if (rc != 0) /* the message is complete: the copy must end */
        abort();
    jn_message_out_fini(&o);
    return total;
}

static void check_copy(jn_message_t *orig, const uint8_t *bytes, size_t size, bool to_router)
{
    jn_message_t *copy = feed(bytes, size, size ? size : 1, true);
    if (jn_message_parse(copy, JN_DEPTH_ALL) != 0)
        abort(); /* we produced a message we cannot read */
    const jn_ra_t *a = jn_message_annotations(orig);
    const jn_ra_t *b = jn_message_annotations(copy);
    if (a->user_count != b->user_count)
        abort();
    if (to_router && (!b->has_trace || b->trace_count != (a->has_trace ? a->trace_count : 0) + 1 ||
                      !jn_ra_trace_contains(b, NODE_ID)))
        abort();
    if (!to_router && (b->has_trace || b->has_ingress || b->has_to))
        abort();
    jn_iter_t t1, t2;
    int r1 = jn_message_to(orig, &t1), r2 = jn_message_to(copy, &t2);
    if (r1 != r2 || (r1 == 0 && !jn_iter_equal_iter(&t1, &t2)))
        abort();
    jn_message_unref(copy);
}

/* data in one message: whole (buffers filled up) or in one-octet buffers. */
static jn_message_t *whole_or_split(const uint8_t *data, size_t size, bool split, bool honour)
{
    jn_message_t *m = jn_message_new();
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    if (!m || (!split && jn_message_append(m, data, size) != 0) ||
        (split && (jn_buffer_list_append_split(&list, data, size, 1) != 0 ||
                   jn_message_append_buffers(m, &list) != 0)))
        abort();
    jn_message_set_annotation_policy(m, honour);
    return m;
}

/* Parse data to depth (complete or not) in one buffer and in one-octet
 * buffers: the summaries must be the same. */
static void check_ways_agree(const uint8_t *data, size_t size, bool honour)
{
    static char a[4096], b[4096];
    jn_message_t *one = whole_or_split(data, size, false, honour);
    jn_message_t *split = whole_or_split(data, size, true, honour);
    static const jn_message_depth_t depths[] = {JN_DEPTH_HEADER, JN_DEPTH_PROPERTIES, JN_DEPTH_ALL};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        if (depths[i] == JN_DEPTH_ALL) {
            jn_message_set_complete(one);
            jn_message_set_complete(split);
        }
        jn_test_message_snapshot(one, jn_message_parse(one, depths[i]), a, sizeof a);
        jn_test_message_snapshot(split, jn_message_parse(split, depths[i]), b, sizeof b);
        if (strcmp(a, b) != 0) {
            fprintf(stderr, "one buffer:\n%s\none-octet buffers:\n%s\n", a, b);
            abort();
        }
    }
    jn_message_unref(one);
    jn_message_unref(split);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > OUT_MAX / 2)
        return 0;
    static uint8_t out[OUT_MAX];
    jn_message_t *m = feed(data + 1, size - 1, jn_fuzz_chunk(data[0]), jn_fuzz_flag(data[0]));
    if (jn_message_parse(m, JN_DEPTH_ALL) == 0) {
        jn_message_header_t h;
        jn_iter_t it;
        (void)jn_message_get_header(m, &h);
        if (jn_message_reply_to(m, &it) == 0)
            (void)jn_iter_hash(&it);
        if (jn_message_to(m, &it) == 0) {
            jn_iter_set_view(&it, JN_VIEW_ADDRESS_HASH);
            (void)jn_iter_hash(&it);
        }
        jn_ra_hop_t to_router = {.to_router = true, .node_id = NODE_ID};
        size_t n = produce(m, &to_router, out);
        check_copy(m, out, n, true);
        jn_ra_hop_t to_endpoint = {.to_router = false, .node_id = NODE_ID};
        n = produce(m, &to_endpoint, out);
        check_copy(m, out, n, false);
    } else if (jn_message_error(m) == NULL || jn_message_error_condition(m) == NULL) {
        abort(); /* a failure must say why */
    }
    jn_message_unref(m);
    if (size - 1 <= 65536)
        check_ways_agree(data + 1, size - 1, jn_fuzz_flag(data[0]));
    return 0;
}
