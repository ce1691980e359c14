/*
 * test_message_ways.c — the parser's two ways agree (junction/message.h,
 * router/message/message_parse_fast.c): a message whose sections lie in one
 * buffer is read by the one-buffer way, the same octets in buffers of one
 * octet by the general way only, and both must leave the same results
 * (message_snapshot.h: result, error, header, to, reply-to, every section,
 * the router annotations and both outgoing copies) for every prefix of the
 * message as it arrives, and once it is complete. The messages are the
 * shapes the one-buffer way stops at (other encodings, values out of
 * range, malformations, sections across buffers) and the ones it takes;
 * the router annotations' keys and values likewise (read in place in one
 * buffer, by the decoder across buffers: router/message/annotations.c).
 * Also: a header or properties list with octets after its last field is a
 * decode error, in one buffer as in tiny ones.
 */
#include "message_snapshot.h"
#include "test_message_util.h"

#include <junction/amqp.h>

#define SNAP_MAX 4096

/* One message, fed as it arrives: the first len octets, complete or not. */
static jn_message_t *arrived(const uint8_t *data, size_t len, size_t chunk, bool complete,
                             bool honour)
{
    jn_message_t *m = jn_message_new();
    assert_non_null(m);
    jn_message_set_annotation_policy(m, honour);
    if (len > 0)
        feed_octets(m, data, len, chunk);
    if (complete)
        jn_message_set_complete(m);
    return m;
}

/* Parse to depth in one buffer (chunk 0) and in one-octet buffers: the
 * same summary. */
static void agree_at(const uint8_t *data, size_t len, bool complete, bool honour,
                     jn_message_depth_t depth)
{
    static char one[SNAP_MAX], tiny[SNAP_MAX];
    jn_message_t *a = arrived(data, len, 0, complete, honour);
    jn_message_t *b = arrived(data, len, 1, complete, honour);
    jn_test_message_snapshot(a, jn_message_parse(a, depth), one, sizeof one);
    jn_test_message_snapshot(b, jn_message_parse(b, depth), tiny, sizeof tiny);
    assert_string_equal(one, tiny);
    jn_message_unref(a);
    jn_message_unref(b);
}

/* Every prefix, not complete, to the depths the receiver and the core ask
 * for; then the whole message complete, to every depth. */
static void agree(const uint8_t *data, size_t len)
{
    for (int honour = 0; honour <= 1; honour++) {
        for (size_t k = 0; k <= len; k++)
            agree_at(data, k, false, honour, JN_DEPTH_PROPERTIES);
        for (int d = JN_DEPTH_HEADER; d <= JN_DEPTH_ALL; d++)
            agree_at(data, len, true, honour, (jn_message_depth_t)d);
    }
}

#define AGREE(...)                                                                                 \
    do {                                                                                           \
        const uint8_t octets_[] = {__VA_ARGS__};                                                   \
        agree(octets_, sizeof octets_);                                                            \
    } while (0)

/* The sections after a header, for the header cases. */
#define PROPS_AND_BODY                                                                             \
    0x00, 0x53, 0x73, 0xc0, 0x06, 0x03, 0x40, 0x40, 0xa1, 0x01, 'q', 0x00, 0x53, 0x75, 0xa0, 0x01, \
        'x'

static void test_header_encodings_agree(void **state)
{
    (void)state;
    /* a message as proton sends it: empty header, properties with to,
     * application properties, data */
    AGREE(0x00, 0x53, 0x70, 0x45, 0x00, 0x53, 0x73, 0xc0, 0x0a, 0x03, 0x40, 0x40, 0xa1, 0x05, 'b',
          'e', 'n', 'c', 'h', 0x00, 0x53, 0x74, 0xc1, 0x06, 0x02, 0xa1, 0x01, 'k', 0x43, 0x43, 0x00,
          0x53, 0x75, 0xa0, 0x02, 'x', 'y');
    /* every field, the common encodings */
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x0c, 0x05, 0x41, 0x50, 0x07, 0x70, 0x00, 0x00, 0x03, 0xe8, 0x42,
          0x52, 0x02, PROPS_AND_BODY);
    /* boolean 0x56, ushort, ulong, ulong0, smallulong */
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x12, 0x05, 0x56, 0x01, 0x60, 0x00, 0x09, 0x80, 0, 0, 0, 0, 0, 0,
          0, 5, 0x56, 0x00, 0x44, PROPS_AND_BODY);
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x05, 0x03, 0x40, 0x53, 0x08, 0x43, PROPS_AND_BODY);
    /* a boolean octet that is neither 0 nor 1 */
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x03, 0x01, 0x56, 0x02, PROPS_AND_BODY);
    /* priority above 255; ttl above 2^32 - 1; delivery-count a long */
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x07, 0x02, 0x40, 0x70, 0x00, 0x00, 0x01, 0x00, PROPS_AND_BODY);
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x0c, 0x03, 0x40, 0x40, 0x80, 0, 0, 0, 1, 0, 0, 0, 0,
          PROPS_AND_BODY);
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x07, 0x05, 0x40, 0x40, 0x40, 0x40, 0x55, 0x03, PROPS_AND_BODY);
    /* durable a uint; a described priority */
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x02, 0x01, 0x43, PROPS_AND_BODY);
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x07, 0x02, 0x40, 0x00, 0x53, 0x01, 0x50, 0x05, PROPS_AND_BODY);
    /* six fields; a count its fields do not fill; a count its size
     * cannot hold; a size past the section; a field cut by the list */
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x07, 0x06, 0x41, 0x40, 0x40, 0x40, 0x40, 0x40, PROPS_AND_BODY);
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x03, 0x05, 0x40, 0x40, PROPS_AND_BODY);
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x01, 0x02, PROPS_AND_BODY);
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x40, 0x01, 0x41);
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x03, 0x03, 0x40, 0x70, 0x00, PROPS_AND_BODY);
    /* list32; list32 too small for its count */
    AGREE(0x00, 0x53, 0x70, 0xd0, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x02, 0x41, 0x50, 0x05,
          PROPS_AND_BODY);
    AGREE(0x00, 0x53, 0x70, 0xd0, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, PROPS_AND_BODY);
    /* octets after the last field */
    AGREE(0x00, 0x53, 0x70, 0xc0, 0x04, 0x01, 0x41, 0x40, 0x40, PROPS_AND_BODY);
}

static void test_properties_encodings_agree(void **state)
{
    (void)state;
    /* message-id a uuid, user-id a binary, to a str32, subject a str8,
     * reply-to a str8 */
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x27, 0x05, 0x98, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
          15, 16, 0xa0, 0x01, 'u', 0xb1, 0x00, 0x00, 0x00, 0x02, 'q', '1', 0xa1, 0x01, 's', 0xa1,
          0x02, 'r', 'q', 0x00, 0x53, 0x77, 0x40);
    /* message-id a ulong, a smallulong, a str32, a sym8, a timestamp */
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x0c, 0x03, 0x80, 0, 0, 0, 0, 0, 0, 0, 9, 0x40, 0x40, 0x00, 0x53,
          0x77, 0x40);
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x07, 0x03, 0x53, 0x09, 0x40, 0xa1, 0x01, 'q', 0x00, 0x53, 0x77,
          0x40);
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x09, 0x01, 0xb1, 0x00, 0x00, 0x00, 0x03, 'i', 'd', '1', 0x00,
          0x53, 0x77, 0x40);
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x06, 0x03, 0xa3, 0x01, 'i', 0x40, 0x40, 0x00, 0x53, 0x77, 0x40);
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x0b, 0x02, 0x83, 0, 0, 0, 0, 0, 0, 0, 1, 0x40, 0x00, 0x53, 0x77,
          0x40);
    /* message-id described; an array; a list */
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x09, 0x03, 0x00, 0x53, 0x01, 0x44, 0x40, 0xa1, 0x01, 'q', 0x00,
          0x53, 0x77, 0x40);
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x08, 0x03, 0xe0, 0x02, 0x01, 0x43, 0x40, 0xa1, 0x00);
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x05, 0x03, 0x45, 0x40, 0xa1, 0x00);
    /* to a symbol, a ulong, a described string; reply-to a binary */
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x06, 0x03, 0x40, 0x40, 0xa3, 0x01, 'q');
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x05, 0x03, 0x40, 0x40, 0x53, 0x01, 0x00, 0x53, 0x77, 0x40);
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x09, 0x03, 0x40, 0x40, 0x00, 0x53, 0x01, 0xa1, 0x01, 'q');
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x08, 0x05, 0x40, 0x40, 0x40, 0x40, 0xa0, 0x01, 'r');
    /* a string cut by the list; a user-id cut by the list; trailing
     * octets; a count the size cannot hold */
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x05, 0x03, 0x40, 0x40, 0xa1, 0x05, 'q');
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x04, 0x02, 0x40, 0xa0, 0x09, 0x00, 0x53, 0x77, 0x40);
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x06, 0x03, 0x40, 0x40, 0xa1, 0x00, 0x40, 0x00, 0x53, 0x77, 0x40);
    AGREE(0x00, 0x53, 0x73, 0xc0, 0x02, 0x03, 0x40, 0x00, 0x53, 0x77, 0x40);
    /* list0, list32 */
    AGREE(0x00, 0x53, 0x73, 0x45, 0x00, 0x53, 0x75, 0xa0, 0x00);
    AGREE(0x00, 0x53, 0x73, 0xd0, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00, 0x03, 0x40, 0x40, 0xa1,
          0x01, 'q', 0x00, 0x53, 0x75, 0xb0, 0x00, 0x00, 0x00, 0x01, 'x');
}

static void test_section_sequences_agree(void **state)
{
    (void)state;
    /* delivery annotations, message annotations with router keys (an
     * x-opt-qd.to and a trace), a user annotation; then properties */
    AGREE(0x00, 0x53, 0x71, 0xc1, 0x05, 0x02, 0xa3, 0x01, 'd', 0x41, 0x00, 0x53, 0x72, 0xc1, 0x2d,
          0x06, 0xa3, 0x0b, 'x', '-', 'o', 'p', 't', '-', 'q', 'd', '.', 't', 'o', 0xa1, 0x02, 'o',
          'v', 0xa3, 0x0e, 'x', '-', 'o', 'p', 't', '-', 'q', 'd', '.', 't', 'r', 'a', 'c', 'e',
          0xc0, 0x05, 0x01, 0xa1, 0x02, '0', 'A', 0xa3, 0x01, 'u', 0x43, PROPS_AND_BODY);
    /* message annotations: an odd count; a router key of the wrong type */
    AGREE(0x00, 0x53, 0x72, 0xc1, 0x04, 0x01, 0xa3, 0x01, 'u', PROPS_AND_BODY);
    AGREE(0x00, 0x53, 0x72, 0xc1, 0x0f, 0x02, 0xa3, 0x0b, 'x', '-', 'o', 'p', 't', '-', 'q', 'd',
          '.', 't', 'o', 0x43, PROPS_AND_BODY);
    /* map32 annotations; application properties; amqp-value, sequence,
     * two data sections, a footer */
    AGREE(0x00, 0x53, 0x72, 0xd1, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x53, 0x74,
          0xc1, 0x01, 0x00, 0x00, 0x53, 0x77, 0xa1, 0x01, 'v', 0x00, 0x53, 0x78, 0xc1, 0x01, 0x00);
    AGREE(0x00, 0x53, 0x76, 0xc0, 0x02, 0x01, 0x40, 0x00, 0x53, 0x75, 0xa0, 0x00, 0x00, 0x53, 0x75,
          0xa0, 0x01, 'x', 0x00, 0x53, 0x75, 0xa0, 0x01, 'y', 0x00, 0x53, 0x78, 0xc1, 0x01, 0x00);
    /* out of order; two headers; a section of the wrong shape; an
     * unknown descriptor; a symbol descriptor; octets after the last
     * section; a body that runs past the end */
    AGREE(0x00, 0x53, 0x73, 0x45, 0x00, 0x53, 0x70, 0x45);
    AGREE(0x00, 0x53, 0x70, 0x45, 0x00, 0x53, 0x70, 0x45);
    AGREE(0x00, 0x53, 0x70, 0xc1, 0x01, 0x00, PROPS_AND_BODY);
    AGREE(0x00, 0x53, 0x79, 0x45);
    AGREE(0x00, 0xa3, 0x10, 'a', 'm', 'q', 'p', ':', 'h', 'e', 'a', 'd', 'e', 'r', ':', 'l', 'i',
          's', 't', 0x45, PROPS_AND_BODY);
    AGREE(0x00, 0x53, 0x77, 0x40, 0x40);
    AGREE(0x00, 0x53, 0x75, 0xa0, 0x09, 'x');
    AGREE(0x00, 0x53, 0x75, 0xb0, 0x00, 0x00, 0x00, 0x09, 'x');
}

/* The parts of a router-annotations reading that compose and routing use:
 * flags, counts and the views' octets. */
static void ra_summary(const jn_ra_t *ra, char *out, size_t cap)
{
    snap_out_t o = {.p = out, .left = cap};
    snap_add(&o, "%d %d %d %d %d %d %u %u %u %u %u", ra->section_present, ra->has_to,
             ra->has_ingress, ra->has_trace, ra->stream, (int)ra->phase, ra->trace_count,
             ra->trace_size, ra->user_count, ra->user_size, ra->user_run_count);
    if (ra->has_to)
        snap_view(&o, "to", &ra->to);
    if (ra->has_ingress)
        snap_view(&o, "ingress", &ra->ingress);
    if (ra->has_trace)
        snap_view(&o, "trace", &ra->trace);
    for (uint32_t i = 0; i < ra->user_run_count && i < JN_RA_MAX_USER_RUNS; i++)
        snap_view(&o, "run", &ra->user_runs[i]);
}

/* jn_ra_parse_in_place over a section in one buffer: what it takes it
 * reads as jn_ra_parse does, and it takes nothing jn_ra_parse refuses. */
static void in_place_agrees(const uint8_t *section, size_t len, bool honour)
{
    jn_buffer_list_t list;
    jn_buffer_list_init(&list);
    assert_int_equal(jn_buffer_list_append_bytes(&list, section, len), 0);
    assert_non_null(list.head);
    assert_true(list.head == list.tail);
    jn_ra_t a, b;
    jn_iter_t it;
    jn_iter_raw_run(&it, list.head, list.head->data, len);
    int rc = jn_ra_parse(&it, honour, &b, NULL);
    int in_place = jn_ra_parse_in_place(list.head, list.head->data, len, honour, &a);
    assert_true(in_place == 0 || in_place == 1);
    if (rc != 0)
        assert_int_equal(in_place, 1);
    char got[SNAP_MAX], want[SNAP_MAX];
    if (in_place == 0) {
        ra_summary(&a, got, sizeof got);
        ra_summary(&b, want, sizeof want);
        assert_string_equal(got, want);
    } else {
        jn_ra_t absent;
        jn_ra_set_absent(&absent);
        ra_summary(&a, got, sizeof got);
        ra_summary(&absent, want, sizeof want);
        assert_string_equal(got, want);
    }
    jn_buffer_list_free(&list);
}

/* An annotations map of n entries (their octets given) in front of
 * PROPS_AND_BODY, in both ways and both policies; its section read in
 * place agrees with jn_ra_parse too. */
static void agree_annotations(unsigned entries, const uint8_t *octets, size_t len)
{
    uint8_t msg[512];
    const uint8_t head[] = {0x00, 0x53, 0x72, 0xc1, (uint8_t)(len + 1), (uint8_t)(2 * entries)};
    const uint8_t tail[] = {PROPS_AND_BODY};
    assert_true(sizeof head + len + sizeof tail <= sizeof msg && len + 1 <= UINT8_MAX);
    memcpy(msg, head, sizeof head);
    memcpy(msg + sizeof head, octets, len);
    memcpy(msg + sizeof head + len, tail, sizeof tail);
    agree(msg, sizeof head + len + sizeof tail);
    in_place_agrees(msg, sizeof head + len, false);
    in_place_agrees(msg, sizeof head + len, true);
}

#define AGREE_ANNOTATIONS(entries, ...)                                                            \
    do {                                                                                           \
        const uint8_t octets_[] = {__VA_ARGS__};                                                   \
        agree_annotations(entries, octets_, sizeof octets_);                                       \
    } while (0)

#define KEY(suffix_len, ...)                                                                       \
    0xa3, (uint8_t)(9 + (suffix_len)), 'x', '-', 'o', 'p', 't', '-', 'q', 'd', '.', __VA_ARGS__

/* The entries an ingress router sends: to, ingress and a trace. */
#define INGRESS_ENTRIES                                                                            \
    KEY(2, 't', 'o'), 0xa1, 0x01, 'q', KEY(7, 'i', 'n', 'g', 'r', 'e', 's', 's'), 0xa1, 0x02, '0', \
        'A', KEY(5, 't', 'r', 'a', 'c', 'e'), 0xc0, 0x05, 0x01, 0xa1, 0x02, '0', 'A'

/* Router keys read in place and the shapes left to the decoder agree. */
static void test_annotation_keys_agree(void **state)
{
    (void)state;
    /* what an ingress router sends: to, ingress and a trace, read in place */
    const uint8_t entries[] = {INGRESS_ENTRIES};
    uint8_t common[256];
    const uint8_t head[] = {0x00, 0x53, 0x72, 0xc1, (uint8_t)(sizeof entries + 1), 6};
    memcpy(common, head, sizeof head);
    memcpy(common + sizeof head, entries, sizeof entries);
    jn_ra_t ra;
    assert_int_equal(jn_ra_parse_in_place(NULL, common, sizeof head + sizeof entries, true, &ra),
                     0);
    assert_true(ra.has_to && ra.has_ingress && ra.has_trace && ra.trace_plain);
    assert_int_equal(ra.trace_count, 1);
    AGREE_ANNOTATIONS(3, INGRESS_ENTRIES);
    /* phase (a smallint, an int), stream, ingress as a str32, a trace
     * with a str32 entry */
    AGREE_ANNOTATIONS(2, KEY(5, 'p', 'h', 'a', 's', 'e'), 0x54, 0x02,
                      KEY(6, 's', 't', 'r', 'e', 'a', 'm'), 0x54, 0x01);
    AGREE_ANNOTATIONS(1, KEY(5, 'p', 'h', 'a', 's', 'e'), 0x71, 0x00, 0x01, 0x00, 0x00);
    AGREE_ANNOTATIONS(2, KEY(7, 'i', 'n', 'g', 'r', 'e', 's', 's'), 0xb1, 0, 0, 0, 2, '0', 'A',
                      KEY(5, 't', 'r', 'a', 'c', 'e'), 0xc0, 0x0a, 0x02, 0xb1, 0, 0, 0, 1, 'B',
                      0xa1, 0x01, 'C');
    /* a trace that is a list32, one holding a symbol, one with octets
     * after its last entry; an ingress that is a symbol */
    AGREE_ANNOTATIONS(1, KEY(5, 't', 'r', 'a', 'c', 'e'), 0xd0, 0, 0, 0, 7, 0, 0, 0, 1, 0xa1, 0x01,
                      'A');
    AGREE_ANNOTATIONS(1, KEY(5, 't', 'r', 'a', 'c', 'e'), 0xc0, 0x04, 0x01, 0xa3, 0x01, 'A');
    AGREE_ANNOTATIONS(1, KEY(5, 't', 'r', 'a', 'c', 'e'), 0xc0, 0x05, 0x01, 0xa1, 0x01, 'A', 0x40);
    AGREE_ANNOTATIONS(1, KEY(7, 'i', 'n', 'g', 'r', 'e', 's', 's'), 0xa3, 0x01, 'A');
    /* x-opt-qd.class, the bare prefix, an unknown router key, a key of
     * 24 octets, a key like a router key but for one octet, the same
     * spelled as a string, user keys as ulong and str32 */
    AGREE_ANNOTATIONS(3, KEY(5, 'c', 'l', 'a', 's', 's'), 0x43, 0xa3, 0x09, 'x', '-', 'o', 'p', 't',
                      '-', 'q', 'd', '.', 0x43, KEY(3, 'f', 'o', 'o'), 0x43);
    AGREE_ANNOTATIONS(
        2, KEY(15, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o'), 0x43,
        KEY(2, 't', 'p'), 0x43);
    AGREE_ANNOTATIONS(3, 0xa1, 0x0b, 'x', '-', 'o', 'p', 't', '-', 'q', 'd', '.', 't', 'o', 0x43,
                      0x53, 0x07, 0x41, 0xb1, 0, 0, 0, 1, 'k', 0xa0, 0x01, 'v');
    /* a key that is neither a symbol, a string nor a ulong; a described
     * key; a user value that is a described list */
    AGREE_ANNOTATIONS(1, 0x54, 0x01, 0x43);
    AGREE_ANNOTATIONS(1, 0x00, 0x53, 0x01, 0xa3, 0x01, 'k', 0x43);
    AGREE_ANNOTATIONS(1, 0xa3, 0x01, 'k', 0x00, 0x53, 0x01, 0xc0, 0x01, 0x00);
}

/* A message longer than one buffer: the one-buffer way stops where a
 * section crosses into the next buffer, and the general way goes on. The
 * properties start at every offset around the end of the first buffer. */
static void test_sections_across_buffers_agree(void **state)
{
    (void)state;
    static uint8_t msg[3 * JN_BUFFER_CAPACITY];
    for (size_t cut = JN_BUFFER_CAPACITY - 24; cut <= JN_BUFFER_CAPACITY + 8; cut++) {
        /* an empty header (4 octets), then delivery annotations: a map32
         * (12 octets of head) whose pad octets are never read */
        size_t pad = cut - 4 - 12, n = 0;
        const uint8_t head[] = {0x00, 0x53, 0x70, 0x45, 0x00, 0x53, 0x71, 0xd1};
        memcpy(msg, head, sizeof head);
        n = sizeof head;
        size_t size = 4 + pad; /* the count's octets and the pad */
        for (int shift = 24; shift >= 0; shift -= 8)
            msg[n++] = (uint8_t)(size >> shift);
        memset(msg + n, 0, 4); /* count 0 */
        n += 4;
        memset(msg + n, 'p', pad);
        n += pad;
        const uint8_t tail[] = {PROPS_AND_BODY};
        memcpy(msg + n, tail, sizeof tail);
        n += sizeof tail;
        for (int d = JN_DEPTH_HEADER; d <= JN_DEPTH_ALL; d++)
            agree_at(msg, n, true, true, (jn_message_depth_t)d);
        for (size_t k = cut - 2; k < n; k++)
            agree_at(msg, k, false, true, JN_DEPTH_PROPERTIES);
    }
}

static void test_list_with_octets_after_its_last_field_is_decode_error(void **state)
{
    (void)state;
    const uint8_t header[] = {0x00, 0x53, 0x70, 0xc0, 0x04, 0x01, 0x41, 0x40, 0x40, PROPS_AND_BODY};
    const uint8_t props[] = {0x00, 0x53, 0x73, 0xc0, 0x07, 0x03, 0x40, 0x40, 0xa1,
                             0x01, 'q',  0xab, 0x00, 0x53, 0x75, 0xa0, 0x01, 'x'};
    for (size_t c = 0; c < N_TINY_CHUNKS; c++) {
        jn_message_t *m = message_from(header, sizeof header, tiny_chunks[c], false);
        assert_int_equal(jn_message_parse(m, JN_DEPTH_PROPERTIES), JN_EPROTO);
        assert_string_equal(jn_message_error_condition(m), "amqp:decode-error");
        assert_non_null(strstr(jn_message_error(m), "header section"));
        jn_message_unref(m);
        m = message_from(props, sizeof props, tiny_chunks[c], false);
        assert_int_equal(jn_message_parse(m, JN_DEPTH_PROPERTIES), JN_EPROTO);
        assert_string_equal(jn_message_error_condition(m), "amqp:decode-error");
        assert_non_null(strstr(jn_message_error(m), "properties section"));
        jn_message_unref(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_encodings_agree),
        cmocka_unit_test(test_properties_encodings_agree),
        cmocka_unit_test(test_section_sequences_agree),
        cmocka_unit_test(test_annotation_keys_agree),
        cmocka_unit_test(test_sections_across_buffers_agree),
        cmocka_unit_test(test_list_with_octets_after_its_last_field_is_decode_error),
    };
    return finish_tests(cmocka_run_group_tests(tests, NULL, NULL));
}
