/*
 * test_amqp_perf.c — the engine's performative codec (junction/amqp_perf.h):
 * every performative and SASL body round-trips with every field set, field
 * values read back in place; descriptors by code and by symbol; short lists
 * read as nulls with the spec's defaults; every delivery state, including
 * unknown and symbolic ones passed through byte for byte; and each
 * validation rule with its condition (mandatory fields, wrong types,
 * described values where plain ones belong, choices, truncated input).
 * Each decode runs over plain bytes and buffers of 1, 2, 3 and 7 octets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/amqp_perf.h>
#include <junction/pool.h>

#include <stdio.h>
#include <string.h>

static const size_t splits[] = {0, 1, 2, 3, 7, JN_BUFFER_CAPACITY};
#define NSPLITS (sizeof splits / sizeof splits[0])

typedef struct blob {
    uint8_t data[4096];
    size_t len;
} blob_t;

static void make_iter(jn_buffer_list_t *list, jn_iter_t *it, const uint8_t *data, size_t len,
                      size_t chunk)
{
    jn_buffer_list_init(list);
    if (chunk == 0 || len == 0) {
        jn_iter_init_bytes(it, len ? data : (const uint8_t *)"", len, JN_VIEW_RAW);
        return;
    }
    assert_int_equal(jn_buffer_list_append_split(list, data, len, chunk), 0);
    assert_int_equal(jn_iter_init(it, list->head, 0, len, JN_VIEW_RAW), 0);
}

static void take(jn_encoder_t *e, blob_t *b)
{
    size_t n;
    const uint8_t *p = jn_encoder_data(e, &n);
    assert_int_equal(jn_encoder_error(e), 0);
    assert_true(n <= sizeof b->data);
    memcpy(b->data, p, n);
    b->len = n;
    jn_encoder_free(e);
}

static void encode(const jn_amqp_perf_t *p, blob_t *b)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    assert_int_equal(jn_amqp_perf_encode(&e, p), 0);
    take(&e, b);
}

static jn_iter_t str(const char *s)
{
    jn_iter_t it;
    jn_iter_init_string(&it, s, JN_VIEW_RAW);
    return it;
}

static void assert_iter_str(const jn_iter_t *it, const char *s)
{
    char buf[512];
    size_t n = jn_iter_copy_string(it, buf, sizeof buf);
    assert_true(n < sizeof buf);
    assert_string_equal(buf, s);
}

/* jn_amqp_perf_decode_frame of the AMQP frame body it (len octets) gives
 * what jn_amqp_perf_decode gave (rc, its fault's condition): for a
 * success, a performative that re-encodes to the same octets (its views
 * may lie in the scratch, the performative copied there when the split
 * cuts it) and the same payload. */
static void frame_same(const jn_iter_t *it, size_t len, int rc, const jn_amqp_fault_t *fault)
{
    uint8_t scratch[JN_AMQP_PERF_HEAD];
    jn_amqp_perf_t p;
    jn_iter_t payload;
    jn_amqp_fault_t fl = {0};
    assert_int_equal(jn_amqp_perf_decode_frame(it, &p, &payload, scratch, &fl), rc);
    if (rc != 0) {
        assert_string_equal(fl.condition, fault->condition);
        return;
    }
    blob_t again;
    jn_encoder_t e;
    jn_encoder_init(&e);
    assert_int_equal(jn_amqp_perf_encode(&e, &p), 0);
    take(&e, &again);
    size_t rest = jn_iter_length(&payload);
    assert_int_equal(again.len + rest, len);
    jn_iter_t whole = *it;
    static uint8_t all[4096];
    assert_true(len <= sizeof all);
    assert_int_equal(jn_iter_copy(&whole, all, len), len);
    assert_memory_equal(again.data, all, again.len);
    static uint8_t tail[4096];
    assert_int_equal(jn_iter_copy(&payload, tail, rest), rest);
    assert_memory_equal(tail, all + again.len, rest);
}

/* Decode octets under every split: every split must give rc, and for a
 * success re-encode to exactly the same octets. out gets the plain-bytes
 * decode (it borrows data). */
static int decode_all(const uint8_t *data, size_t len, uint8_t type, jn_amqp_perf_t *out,
                      jn_amqp_fault_t *fault)
{
    int first = 0;
    for (size_t s = 0; s < NSPLITS; s++) {
        jn_buffer_list_t list;
        jn_iter_t it, payload;
        jn_amqp_perf_t p;
        jn_amqp_fault_t fl = {0};
        make_iter(&list, &it, data, len, splits[s]);
        int rc = jn_amqp_perf_decode(&it, type, &p, &payload, &fl);
        if (s == 0) {
            first = rc;
            *fault = fl;
            if (rc == 0)
                *out = p;
        }
        assert_int_equal(rc, first);
        if (rc == 0) {
            blob_t again;
            jn_encoder_t e;
            jn_encoder_init(&e);
            assert_int_equal(jn_amqp_perf_encode(&e, &p), 0);
            take(&e, &again);
            assert_int_equal(again.len + jn_iter_length(&payload), len);
            assert_memory_equal(again.data, data, again.len);
        } else {
            assert_string_equal(fl.condition, fault->condition);
        }
        if (type == JN_AMQP_FRAME_AMQP)
            frame_same(&it, len, rc, &fl);
        jn_buffer_list_free(&list);
    }
    return first;
}

/* Encode p, decode it back under every split into *back. */
static void round_trip(const jn_amqp_perf_t *p, blob_t *b, jn_amqp_perf_t *back)
{
    jn_amqp_fault_t fault = {0};
    encode(p, b);
    uint8_t type = p->code >= JN_AMQP_SASL_MECHANISMS ? JN_AMQP_FRAME_SASL : JN_AMQP_FRAME_AMQP;
    int rc = decode_all(b->data, b->len, type, back, &fault);
    if (rc != 0)
        fail_msg("%s: %s", fault.condition, fault.description);
    assert_int_equal(back->code, p->code);
}

/* Encoded helper values, kept in static blobs so views stay valid. */
static blob_t sym_array, one_sym, a_map, described_outcome;

static void make_values(void)
{
    jn_encoder_t e;
    jn_encoder_init(&e);
    jn_enc_array_begin(&e, JN_AMQP_SYM8);
    jn_enc_csymbol(&e, "ANONYMOUS");
    jn_enc_csymbol(&e, "PLAIN");
    jn_enc_array_end(&e);
    take(&e, &sym_array);
    jn_encoder_init(&e);
    jn_enc_csymbol(&e, "ANONYMOUS");
    take(&e, &one_sym);
    jn_encoder_init(&e);
    jn_enc_map_begin(&e);
    jn_enc_csymbol(&e, "product");
    jn_enc_cstring(&e, "junction");
    jn_enc_csymbol(&e, "n");
    jn_enc_list_begin(&e);
    jn_enc_uint(&e, 7);
    jn_enc_list_end(&e);
    jn_enc_map_end(&e);
    take(&e, &a_map);
    jn_encoder_init(&e);
    jn_enc_descriptor_ulong(&e, JN_AMQP_ACCEPTED);
    jn_enc_list_begin(&e);
    jn_enc_list_end(&e);
    take(&e, &described_outcome);
}

static jn_iter_t view(const blob_t *b)
{
    jn_iter_t it;
    jn_iter_init_bytes(&it, b->data, b->len, JN_VIEW_RAW);
    return it;
}

#define ALL(n) ((1u << (n)) - 1)

static void set_error(jn_amqp_error_t *err)
{
    err->present = ALL(3);
    err->condition = str("amqp:internal-error");
    err->description = str("it broke");
    err->info = view(&a_map);
}

static void check_error(const jn_amqp_error_t *err)
{
    assert_int_equal(err->present, ALL(3));
    assert_iter_str(&err->condition, "amqp:internal-error");
    assert_iter_str(&err->description, "it broke");
    assert_int_equal(jn_iter_length(&err->info), a_map.len);
}

static void test_open_every_field(void **state)
{
    jn_amqp_perf_t p, b;
    blob_t enc;
    jn_amqp_perf_init(&p, JN_AMQP_OPEN);
    jn_amqp_open_t *o = &p.u.open;
    o->present = ALL(10);
    o->container_id = str("c1");
    o->hostname = str("host.example");
    o->max_frame_size = 16384;
    o->channel_max = 31;
    o->idle_time_out = 60000;
    o->outgoing_locales = view(&one_sym);
    o->incoming_locales = view(&sym_array);
    o->offered_capabilities = view(&sym_array);
    o->desired_capabilities = view(&one_sym);
    o->properties = view(&a_map);
    round_trip(&p, &enc, &b);
    const jn_amqp_open_t *r = &b.u.open;
    assert_int_equal(r->present, ALL(10));
    assert_iter_str(&r->container_id, "c1");
    assert_iter_str(&r->hostname, "host.example");
    assert_int_equal(r->max_frame_size, 16384);
    assert_int_equal(r->channel_max, 31);
    assert_int_equal(r->idle_time_out, 60000);
    assert_int_equal(jn_iter_length(&r->incoming_locales), sym_array.len);
    assert_int_equal(jn_iter_length(&r->outgoing_locales), one_sym.len);
    assert_int_equal(jn_iter_length(&r->properties), a_map.len);
    /* in place: the container-id view points into the encoded octets */
    jn_iter_t it = view(&enc);
    jn_amqp_fault_t fault;
    assert_int_equal(jn_amqp_perf_decode(&it, 0, &b, NULL, &fault), 0);
    assert_true(b.u.open.container_id.cursor > enc.data &&
                b.u.open.container_id.cursor < enc.data + enc.len);
}

static void test_open_short_list_reads_defaults(void **state)
{
    /* open with only container-id, then one with a null hostname in the middle */
    const uint8_t only_id[] = {0x00, 0x53, 0x10, 0xc0, 0x05, 0x01, 0xa1, 0x02, 'c', '1'};
    jn_amqp_perf_t b;
    jn_amqp_fault_t fault;
    assert_int_equal(decode_all(only_id, sizeof only_id, 0, &b, &fault), 0);
    assert_int_equal(b.u.open.present, 1);
    assert_int_equal(b.u.open.max_frame_size, UINT32_MAX);
    assert_int_equal(b.u.open.channel_max, 65535);
    assert_int_equal(b.u.open.idle_time_out, 0);
    assert_int_equal(jn_iter_length(&b.u.open.hostname), 0);
    const uint8_t gap[] = {0x00, 0x53, 0x10, 0xc0, 0x08, 0x03, 0xa1,
                           0x02, 'c',  '1',  0x40, 0x52, 0xff};
    assert_int_equal(decode_all(gap, sizeof gap, 0, &b, &fault), 0);
    assert_int_equal(b.u.open.present, JN_AMQP_FIELD(0) | JN_AMQP_FIELD(2));
    assert_int_equal(b.u.open.max_frame_size, 255);
}

static void test_begin_every_field(void **state)
{
    jn_amqp_perf_t p, b;
    blob_t enc;
    jn_amqp_perf_init(&p, JN_AMQP_BEGIN);
    jn_amqp_begin_t *g = &p.u.begin;
    g->present = ALL(8);
    g->remote_channel = 7;
    g->next_outgoing_id = 0xfffffffe;
    g->incoming_window = 2147483647;
    g->outgoing_window = 100;
    g->handle_max = 1023;
    g->offered_capabilities = view(&one_sym);
    g->desired_capabilities = view(&sym_array);
    g->properties = view(&a_map);
    round_trip(&p, &enc, &b);
    const jn_amqp_begin_t *r = &b.u.begin;
    assert_int_equal(r->present, ALL(8));
    assert_int_equal(r->remote_channel, 7);
    assert_int_equal(r->next_outgoing_id, 0xfffffffe);
    assert_int_equal(r->incoming_window, 2147483647);
    assert_int_equal(r->outgoing_window, 100);
    assert_int_equal(r->handle_max, 1023);
}

static void set_source(jn_amqp_terminus_t *s)
{
    s->code = JN_AMQP_SOURCE;
    s->present = ALL(11);
    s->address = str("queue/a");
    s->durable = 2;
    s->expiry_policy = str("never");
    s->timeout = 30;
    s->dynamic = true;
    s->dynamic_node_properties = view(&a_map);
    s->distribution_mode = str("copy");
    s->filter = view(&a_map);
    s->default_outcome.code = JN_AMQP_MODIFIED;
    s->default_outcome.present = ALL(3);
    s->default_outcome.delivery_failed = true;
    s->default_outcome.undeliverable_here = true;
    s->default_outcome.message_annotations = view(&a_map);
    s->outcomes = view(&sym_array);
    s->capabilities = view(&one_sym);
}

static void test_attach_every_field_with_source_and_target(void **state)
{
    jn_amqp_perf_t p, b;
    blob_t enc;
    jn_amqp_perf_init(&p, JN_AMQP_ATTACH);
    jn_amqp_attach_t *a = &p.u.attach;
    a->present = ALL(14);
    a->name = str("link-1");
    a->handle = 3;
    a->role = false;
    a->snd_settle_mode = 1;
    a->rcv_settle_mode = 1;
    set_source(&a->source);
    a->target.code = JN_AMQP_TARGET;
    a->target.present = ALL(7);
    a->target.address = str("sym-address");
    a->target.address_is_symbol = true;
    a->target.durable = 1;
    a->target.expiry_policy = str("link-detach");
    a->target.timeout = 5;
    a->target.dynamic = false;
    a->target.dynamic_node_properties = view(&a_map);
    a->target.capabilities = view(&sym_array);
    a->unsettled = view(&a_map);
    a->incomplete_unsettled = true;
    a->initial_delivery_count = 42;
    a->max_message_size = 1ull << 40;
    a->offered_capabilities = view(&one_sym);
    a->desired_capabilities = view(&one_sym);
    a->properties = view(&a_map);
    round_trip(&p, &enc, &b);
    const jn_amqp_attach_t *r = &b.u.attach;
    assert_int_equal(r->present, ALL(14));
    assert_iter_str(&r->name, "link-1");
    assert_int_equal(r->handle, 3);
    assert_false(r->role);
    assert_int_equal(r->snd_settle_mode, 1);
    assert_int_equal(r->rcv_settle_mode, 1);
    assert_int_equal(r->source.code, JN_AMQP_SOURCE);
    assert_int_equal(r->source.present, ALL(11));
    assert_iter_str(&r->source.address, "queue/a");
    assert_false(r->source.address_is_symbol);
    assert_int_equal(r->source.durable, 2);
    assert_iter_str(&r->source.expiry_policy, "never");
    assert_int_equal(r->source.timeout, 30);
    assert_true(r->source.dynamic);
    assert_iter_str(&r->source.distribution_mode, "copy");
    assert_int_equal(r->source.default_outcome.code, JN_AMQP_MODIFIED);
    assert_true(r->source.default_outcome.delivery_failed);
    assert_true(r->source.default_outcome.undeliverable_here);
    assert_int_equal(r->target.code, JN_AMQP_TARGET);
    assert_int_equal(r->target.present, ALL(7));
    assert_true(r->target.address_is_symbol);
    assert_iter_str(&r->target.address, "sym-address");
    assert_iter_str(&r->target.expiry_policy, "link-detach");
    assert_true(r->incomplete_unsettled);
    assert_int_equal(r->initial_delivery_count, 42);
    assert_int_equal(r->max_message_size, 1ull << 40);
}

static void test_attach_coordinator_target_passes_through(void **state)
{
    /* a transaction coordinator target (part 4, 4.5.1), by symbol */
    jn_encoder_t e;
    blob_t coord, enc;
    jn_encoder_init(&e);
    jn_enc_descriptor_symbol(&e, "amqp:coordinator:list");
    jn_enc_list_begin(&e);
    jn_enc_csymbol(&e, "amqp:local-transactions");
    jn_enc_list_end(&e);
    take(&e, &coord);
    jn_amqp_perf_t p, b;
    jn_amqp_perf_init(&p, JN_AMQP_ATTACH);
    p.u.attach.present = ALL(3) | JN_AMQP_FIELD(6) | JN_AMQP_FIELD(9);
    p.u.attach.name = str("txn");
    p.u.attach.target.code = JN_AMQP_COORDINATOR;
    p.u.attach.target.encoded = view(&coord);
    round_trip(&p, &enc, &b);
    assert_int_equal(b.u.attach.target.code, JN_AMQP_COORDINATOR);
    assert_int_equal(jn_iter_length(&b.u.attach.target.encoded), coord.len);
    assert_int_equal(b.u.attach.target.present, 0);
}

static void test_flow_every_field(void **state)
{
    jn_amqp_perf_t p, b;
    blob_t enc;
    jn_amqp_perf_init(&p, JN_AMQP_FLOW);
    jn_amqp_flow_t *f = &p.u.flow;
    f->present = ALL(11);
    f->next_incoming_id = 1;
    f->incoming_window = 2;
    f->next_outgoing_id = 3;
    f->outgoing_window = 4;
    f->handle = 5;
    f->delivery_count = 6;
    f->link_credit = 7;
    f->available = 8;
    f->drain = true;
    f->echo = true;
    f->properties = view(&a_map);
    round_trip(&p, &enc, &b);
    const jn_amqp_flow_t *r = &b.u.flow;
    assert_int_equal(r->present, ALL(11));
    assert_int_equal(r->next_incoming_id + r->incoming_window + r->next_outgoing_id +
                         r->outgoing_window + r->handle + r->delivery_count + r->link_credit +
                         r->available,
                     36);
    assert_true(r->drain && r->echo);
}

static void test_transfer_every_field_and_payload(void **state)
{
    jn_amqp_perf_t p, b;
    blob_t enc;
    jn_amqp_perf_init(&p, JN_AMQP_TRANSFER);
    jn_amqp_transfer_t *t = &p.u.transfer;
    t->present = ALL(11);
    t->handle = 1;
    t->delivery_id = 0xffffffff;
    t->delivery_tag = str("tag\x01");
    t->message_format = 0x1234;
    t->settled = true;
    t->more = true;
    t->rcv_settle_mode = 1;
    t->state.code = JN_AMQP_RECEIVED;
    t->state.present = ALL(2);
    t->state.section_number = 2;
    t->state.section_offset = 1ull << 33;
    t->resume = true;
    t->aborted = true;
    t->batchable = true;
    round_trip(&p, &enc, &b);
    const jn_amqp_transfer_t *r = &b.u.transfer;
    assert_int_equal(r->present, ALL(11));
    assert_int_equal(r->delivery_id, 0xffffffff);
    assert_iter_str(&r->delivery_tag, "tag\x01");
    assert_int_equal(r->message_format, 0x1234);
    assert_true(r->settled && r->more && r->resume && r->aborted && r->batchable);
    assert_int_equal(r->state.code, JN_AMQP_RECEIVED);
    assert_int_equal(r->state.section_number, 2);
    assert_int_equal(r->state.section_offset, 1ull << 33);
    /* the payload after the performative is a view of what follows */
    memcpy(enc.data + enc.len, "PAYLOAD", 7);
    jn_iter_t it, payload;
    jn_amqp_fault_t fault;
    jn_iter_init_bytes(&it, enc.data, enc.len + 7, JN_VIEW_RAW);
    assert_int_equal(jn_amqp_perf_decode(&it, 0, &b, &payload, &fault), 0);
    assert_int_equal(jn_iter_length(&payload), 7);
    assert_ptr_equal(payload.cursor, enc.data + enc.len);
}

static void test_disposition_detach_end_close_every_field(void **state)
{
    jn_amqp_perf_t p, b;
    blob_t enc;
    jn_amqp_perf_init(&p, JN_AMQP_DISPOSITION);
    jn_amqp_disposition_t *d = &p.u.disposition;
    d->present = ALL(6);
    d->role = true;
    d->first = 10;
    d->last = 20;
    d->settled = true;
    d->state.code = JN_AMQP_REJECTED;
    d->state.present = 1;
    set_error(&d->state.error);
    d->batchable = true;
    round_trip(&p, &enc, &b);
    assert_int_equal(b.u.disposition.present, ALL(6));
    assert_true(b.u.disposition.role);
    assert_int_equal(b.u.disposition.first, 10);
    assert_int_equal(b.u.disposition.last, 20);
    check_error(&b.u.disposition.state.error);

    jn_amqp_perf_init(&p, JN_AMQP_DETACH);
    p.u.detach.present = ALL(3);
    p.u.detach.handle = 9;
    p.u.detach.closed = true;
    set_error(&p.u.detach.error);
    round_trip(&p, &enc, &b);
    assert_int_equal(b.u.detach.handle, 9);
    assert_true(b.u.detach.closed);
    check_error(&b.u.detach.error);

    const uint64_t codes[] = {JN_AMQP_END, JN_AMQP_CLOSE};
    for (int i = 0; i < 2; i++) {
        jn_amqp_perf_init(&p, codes[i]);
        p.u.end.present = 1;
        set_error(&p.u.end.error);
        round_trip(&p, &enc, &b);
        check_error(&b.u.close.error);
        jn_amqp_perf_init(&p, codes[i]); /* and empty */
        round_trip(&p, &enc, &b);
        assert_int_equal(b.u.end.present, 0);
        assert_int_equal(enc.len, 4); /* 00 53 code 45 */
    }
}

static void test_sasl_bodies_every_field(void **state)
{
    jn_amqp_perf_t p, b;
    blob_t enc;
    jn_amqp_perf_init(&p, JN_AMQP_SASL_MECHANISMS);
    p.u.sasl.present = 1;
    p.u.sasl.mechanisms = view(&sym_array);
    round_trip(&p, &enc, &b);
    assert_int_equal(jn_iter_length(&b.u.sasl.mechanisms), sym_array.len);
    p.u.sasl.mechanisms = view(&one_sym); /* one symbol, not an array */
    round_trip(&p, &enc, &b);

    jn_amqp_perf_init(&p, JN_AMQP_SASL_INIT);
    p.u.sasl.present = ALL(3);
    p.u.sasl.mechanism = str("PLAIN");
    jn_iter_init_bytes(&p.u.sasl.initial_response, "\0user\0pass", 10, JN_VIEW_RAW);
    p.u.sasl.hostname = str("h");
    round_trip(&p, &enc, &b);
    assert_iter_str(&b.u.sasl.mechanism, "PLAIN");
    assert_iter_str(&b.u.sasl.hostname, "h");
    assert_int_equal(jn_iter_length(&b.u.sasl.initial_response), 10);

    jn_amqp_perf_init(&p, JN_AMQP_SASL_CHALLENGE);
    p.u.sasl.present = 1;
    p.u.sasl.challenge = str("nonce");
    round_trip(&p, &enc, &b);
    assert_iter_str(&b.u.sasl.challenge, "nonce");

    jn_amqp_perf_init(&p, JN_AMQP_SASL_RESPONSE);
    p.u.sasl.present = 1;
    p.u.sasl.response = str("answer");
    round_trip(&p, &enc, &b);
    assert_iter_str(&b.u.sasl.response, "answer");

    jn_amqp_perf_init(&p, JN_AMQP_SASL_OUTCOME);
    p.u.sasl.present = ALL(2);
    p.u.sasl.code = 4;
    p.u.sasl.additional_data = str("more");
    round_trip(&p, &enc, &b);
    assert_int_equal(b.u.sasl.code, 4);
    assert_iter_str(&b.u.sasl.additional_data, "more");
}

/* A disposition carrying state (encoded as given), decoded back. */
static void disposition_with_state(const blob_t *state_enc, jn_amqp_perf_t *b, blob_t *enc)
{
    jn_amqp_perf_t p;
    jn_amqp_perf_init(&p, JN_AMQP_DISPOSITION);
    p.u.disposition.present = ALL(2) | JN_AMQP_FIELD(4);
    p.u.disposition.state.code = 0xdead; /* unknown: written as encoded */
    p.u.disposition.state.encoded = view(state_enc);
    round_trip(&p, enc, b);
}

static void test_every_delivery_state(void **state)
{
    jn_amqp_perf_t p, b;
    blob_t enc;
    const uint64_t empty[] = {JN_AMQP_ACCEPTED, JN_AMQP_RELEASED};
    for (int i = 0; i < 2; i++) {
        jn_amqp_perf_init(&p, JN_AMQP_DISPOSITION);
        p.u.disposition.present = ALL(2) | JN_AMQP_FIELD(4);
        p.u.disposition.state.code = empty[i];
        round_trip(&p, &enc, &b);
        assert_int_equal(b.u.disposition.state.code, empty[i]);
    }
    jn_amqp_perf_init(&p, JN_AMQP_DISPOSITION);
    p.u.disposition.present = ALL(2) | JN_AMQP_FIELD(4);
    jn_amqp_state_t *s = &p.u.disposition.state;
    s->code = JN_AMQP_DECLARED;
    s->present = 1;
    s->txn_id = str("txn-1");
    round_trip(&p, &enc, &b);
    assert_iter_str(&b.u.disposition.state.txn_id, "txn-1");
    s->code = JN_AMQP_TRANSACTIONAL_STATE;
    s->present = ALL(2);
    s->outcome = view(&described_outcome);
    round_trip(&p, &enc, &b);
    assert_int_equal(b.u.disposition.state.code, JN_AMQP_TRANSACTIONAL_STATE);
    assert_int_equal(jn_iter_length(&b.u.disposition.state.outcome), described_outcome.len);
}

/* The dispositions receivers write are read in place on a fast path when
 * they lie in one run; split octet by octet they go to the tables. Both
 * must give the same performative, and the shapes the fast path hands on
 * (another state, a list8 state, a null role) the same as the tables. */
static void test_fast_disposition_agrees_with_the_tables(void **state)
{
    (void)state;
    static const uint8_t shapes[][24] = {
        /* role, first, null last, settled, accepted */
        {0x00, 0x53, 0x15, 0xc0, 0x0a, 0x05, 0x41, 0x43, 0x40, 0x41, 0x00, 0x53, 0x24, 0x45},
        /* role, smalluint first, uint last, boolean settled, released, batchable */
        {0x00, 0x53, 0x15, 0xc0, 0x12, 0x06, 0x41, 0x52, 0x07, 0x70, 0x00, 0x00, 0x01, 0x00,
         0x56, 0x01, 0x00, 0x53, 0x26, 0x45, 0x42},
        /* rejected: the tables' */
        {0x00, 0x53, 0x15, 0xc0, 0x0a, 0x05, 0x41, 0x43, 0x40, 0x41, 0x00, 0x53, 0x25, 0x45},
        /* accepted as a list8: the tables' */
        {0x00, 0x53, 0x15, 0xc0, 0x0c, 0x05, 0x41, 0x43, 0x40, 0x41, 0x00, 0x53, 0x24, 0xc0,
         0x01, 0x00},
        /* a null role: refused by the tables */
        {0x00, 0x53, 0x15, 0xc0, 0x03, 0x02, 0x40, 0x43},
    };
    static const size_t lens[] = {14, 21, 14, 16, 8};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        jn_amqp_perf_t fast, slow;
        jn_amqp_fault_t ff = {0}, fs = {0};
        jn_buffer_list_t list;
        jn_iter_t it, pf, ps;
        make_iter(&list, &it, shapes[i], lens[i], 0);
        int rf = jn_amqp_perf_decode(&it, JN_AMQP_FRAME_AMQP, &fast, &pf, &ff);
        make_iter(&list, &it, shapes[i], lens[i], 1);
        int rs = jn_amqp_perf_decode(&it, JN_AMQP_FRAME_AMQP, &slow, &ps, &fs);
        assert_int_equal(rf, rs);
        if (rf != 0) {
            assert_string_equal(ff.condition, fs.condition);
            jn_buffer_list_free(&list);
            continue;
        }
        const jn_amqp_disposition_t *a = &fast.u.disposition, *b = &slow.u.disposition;
        assert_int_equal(fast.code, JN_AMQP_DISPOSITION);
        assert_int_equal(slow.code, JN_AMQP_DISPOSITION);
        assert_int_equal(fast.symbolic, slow.symbolic);
        assert_int_equal(a->present, b->present);
        assert_int_equal(a->role, b->role);
        assert_int_equal(a->first, b->first);
        assert_int_equal(a->last, b->last);
        assert_int_equal(a->settled, b->settled);
        assert_int_equal(a->batchable, b->batchable);
        assert_int_equal(a->state.code, b->state.code);
        assert_int_equal(a->state.present, b->state.present);
        assert_int_equal(a->state.symbolic, b->state.symbolic);
        assert_int_equal(jn_iter_length(&a->state.encoded), jn_iter_length(&b->state.encoded));
        assert_int_equal(jn_iter_length(&pf), 0);
        assert_int_equal(jn_iter_length(&ps), 0);
        jn_buffer_list_free(&list);
    }
}

/* A transfer in the usual shape whose performative the input's runs cut
 * anywhere (buffers of every size up to the whole frame):
 * jn_amqp_perf_decode_frame reads it from the scratch (its tag a view
 * there) with the fields the unsplit decode gives, and the payload where
 * it lies. */
static void test_split_transfer_read_from_the_scratch(void **state)
{
    (void)state;
    static const uint8_t frame[] = {
        0x00, 0x53, 0x14, 0xc0, 0x11, 0x06, 0x52, 0x03, 0x70, 0x00, 0x01, 0x00, 0x02, 0xa0,
        0x04, 'a',  'b',  'c',  'd',  0x43, 0x42, 0x41, 'P',  'A',  'Y',  'L',  'O',  'A',
        'D',  '-',  'O',  'C',  'T',  'E',  'T',  'S'};
    const size_t head = 22, len = sizeof frame; /* the list8: 5 + its size */
    jn_amqp_perf_t whole;
    jn_iter_t it, payload;
    jn_amqp_fault_t fault = {0};
    jn_iter_init_bytes(&it, frame, len, JN_VIEW_RAW);
    assert_int_equal(jn_amqp_perf_decode(&it, JN_AMQP_FRAME_AMQP, &whole, &payload, &fault), 0);
    const jn_amqp_transfer_t *w = &whole.u.transfer;
    assert_int_equal(w->present, ALL(6));
    for (size_t chunk = 1; chunk <= len; chunk++) {
        jn_buffer_list_t list;
        uint8_t scratch[JN_AMQP_PERF_HEAD];
        jn_amqp_perf_t p;
        make_iter(&list, &it, frame, len, chunk < JN_BUFFER_CAPACITY ? chunk : 0);
        assert_int_equal(jn_amqp_perf_decode_frame(&it, &p, &payload, scratch, &fault), 0);
        const jn_amqp_transfer_t *t = &p.u.transfer;
        assert_int_equal(p.code, JN_AMQP_TRANSFER);
        assert_int_equal(t->present, w->present);
        assert_int_equal(t->handle, 3);
        assert_int_equal(t->delivery_id, 0x10002);
        assert_iter_str(&t->delivery_tag, "abcd");
        assert_int_equal(t->message_format, 0);
        assert_true(!t->settled && t->more);
        if (chunk < head) /* cut: read from the scratch */
            assert_true(t->delivery_tag.cursor >= scratch &&
                        t->delivery_tag.cursor < scratch + sizeof scratch);
        uint8_t rest[64];
        assert_int_equal(jn_iter_length(&payload), len - head);
        assert_int_equal(jn_iter_copy(&payload, rest, sizeof rest), len - head);
        assert_memory_equal(rest, frame + head, len - head);
        jn_buffer_list_free(&list);
    }
}

static void test_unknown_and_symbolic_states_pass_through(void **state)
{
    jn_amqp_perf_t b;
    blob_t st, enc;
    jn_encoder_t e;
    /* a symbolic descriptor no one here knows, with any value */
    jn_encoder_init(&e);
    jn_enc_descriptor_symbol(&e, "com.example:state");
    jn_enc_map_begin(&e);
    jn_enc_csymbol(&e, "k");
    jn_enc_int(&e, -1);
    jn_enc_map_end(&e);
    take(&e, &st);
    disposition_with_state(&st, &b, &enc);
    assert_int_equal(b.u.disposition.state.code, 0);
    assert_true(b.u.disposition.state.symbolic);
    assert_iter_str(&b.u.disposition.state.descriptor_symbol, "com.example:state");
    assert_int_equal(jn_iter_length(&b.u.disposition.state.encoded), st.len);
    /* an unknown numeric descriptor */
    jn_encoder_init(&e);
    jn_enc_descriptor_ulong(&e, 0x0000468C00000004ull);
    jn_enc_list_begin(&e);
    jn_enc_cstring(&e, "x");
    jn_enc_list_end(&e);
    take(&e, &st);
    disposition_with_state(&st, &b, &enc);
    assert_int_equal(b.u.disposition.state.code, 0x0000468C00000004ull);
    /* a known state by symbol: decoded, and passed through as it came */
    jn_encoder_init(&e);
    jn_enc_descriptor_symbol(&e, "amqp:modified:list");
    jn_enc_list_begin(&e);
    jn_enc_bool(&e, true);
    jn_enc_list_end(&e);
    take(&e, &st);
    disposition_with_state(&st, &b, &enc);
    assert_int_equal(b.u.disposition.state.code, JN_AMQP_MODIFIED);
    assert_true(b.u.disposition.state.symbolic);
    assert_true(b.u.disposition.state.delivery_failed);
    assert_int_equal(b.u.disposition.state.present, 1);
}

/* A transaction's state whose fields are not of their types (python
 * qpid-proton sends a string txn-id) is taken, not refused: fields unread,
 * written back octet for octet, as 1.19 carries it. */
static void test_transaction_states_of_wrong_types_pass_through(void **state)
{
    for (int i = 0; i < 2; i++) {
        jn_amqp_perf_t b;
        blob_t st, enc, again;
        jn_encoder_t e;
        jn_encoder_init(&e);
        jn_enc_descriptor_ulong(&e, i ? JN_AMQP_TRANSACTIONAL_STATE : JN_AMQP_DECLARED);
        jn_enc_list_begin(&e);
        if (i) {
            jn_enc_cstring(&e, "MyTxnID");
            jn_enc_descriptor_ulong(&e, JN_AMQP_ACCEPTED);
            jn_enc_list_begin(&e);
            jn_enc_list_end(&e);
        } else {
            jn_enc_int(&e, 7);
        }
        jn_enc_list_end(&e);
        take(&e, &st);
        disposition_with_state(&st, &b, &enc);
        const jn_amqp_state_t *s = &b.u.disposition.state;
        assert_int_equal(s->code, i ? JN_AMQP_TRANSACTIONAL_STATE : JN_AMQP_DECLARED);
        assert_true(s->loose);
        assert_false(s->symbolic);
        assert_int_equal(s->present, 0);
        assert_int_equal(jn_iter_length(&s->encoded), st.len);
        encode(&b, &again);
        assert_int_equal(again.len, enc.len);
        assert_memory_equal(again.data, enc.data, enc.len);
    }
    /* of the right types: read field by field, as before */
    jn_amqp_perf_t p, b;
    blob_t enc;
    jn_amqp_perf_init(&p, JN_AMQP_DISPOSITION);
    p.u.disposition.present = ALL(2) | JN_AMQP_FIELD(4);
    p.u.disposition.state.code = JN_AMQP_DECLARED;
    p.u.disposition.state.present = 1;
    p.u.disposition.state.txn_id = str("txn-1");
    round_trip(&p, &enc, &b);
    assert_false(b.u.disposition.state.loose);
    assert_int_equal(b.u.disposition.state.present, 1);
}

static void test_descriptor_by_symbol(void **state)
{
    jn_encoder_t e;
    blob_t enc;
    jn_encoder_init(&e);
    jn_enc_descriptor_symbol(&e, "amqp:begin:list");
    jn_enc_list_begin(&e);
    jn_enc_null(&e);
    jn_enc_uint(&e, 1);
    jn_enc_uint(&e, 2);
    jn_enc_uint(&e, 3);
    jn_enc_list_end(&e);
    take(&e, &enc);
    jn_iter_t it = view(&enc);
    jn_amqp_perf_t b;
    jn_amqp_fault_t fault;
    assert_int_equal(jn_amqp_perf_decode(&it, 0, &b, NULL, &fault), 0);
    assert_int_equal(b.code, JN_AMQP_BEGIN);
    assert_true(b.symbolic);
    assert_int_equal(b.u.begin.outgoing_window, 3);
    assert_string_equal(jn_amqp_perf_name(b.code), "begin");
}

/* Decoding octets fails under every split with condition, the fault
 * naming words. */
static void expect_fault(const uint8_t *data, size_t len, uint8_t type, const char *condition,
                         const char *words)
{
    jn_amqp_perf_t b;
    jn_amqp_fault_t fault = {0};
    assert_int_equal(decode_all(data, len, type, &b, &fault), JN_EPROTO);
    if (strcmp(fault.condition, condition) != 0)
        fail_msg("%s (%s), not %s", fault.condition, fault.description, condition);
    if (!strstr(fault.description, words))
        fail_msg("'%s' does not say '%s'", fault.description, words);
}

#define INVALID "amqp:invalid-field"
#define DECODE  "amqp:decode-error"

static void test_mandatory_fields_with_invalid_field(void **state)
{
    static const struct {
        uint8_t code;
        const char *field;
    } cases[] = {
        {JN_AMQP_OPEN, "container-id"},
        {JN_AMQP_BEGIN, "next-outgoing-id"},
        {JN_AMQP_ATTACH, "name"},
        {JN_AMQP_FLOW, "incoming-window"},
        {JN_AMQP_TRANSFER, "handle"},
        {JN_AMQP_DISPOSITION, "role"},
        {JN_AMQP_DETACH, "handle"},
        {JN_AMQP_SASL_MECHANISMS, "sasl-server-mechanisms"},
        {JN_AMQP_SASL_INIT, "mechanism"},
        {JN_AMQP_SASL_CHALLENGE, "challenge"},
        {JN_AMQP_SASL_RESPONSE, "response"},
        {JN_AMQP_SASL_OUTCOME, "code"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const uint8_t body[] = {0x00, 0x53, cases[i].code, 0x45};
        uint8_t type = cases[i].code >= 0x40;
        expect_fault(body, sizeof body, type, INVALID, cases[i].field);
        jn_amqp_perf_t p;
        jn_amqp_perf_init(&p, cases[i].code);
        jn_encoder_t e;
        jn_encoder_init(&e);
        assert_int_equal(jn_amqp_perf_encode(&e, &p), JN_EINVAL);
        jn_encoder_free(&e);
    }
    /* begin with next-outgoing-id but a null outgoing-window */
    const uint8_t begin[] = {0x00, 0x53, 0x11, 0xc0, 0x05, 0x04, 0x40, 0x43, 0x43, 0x40};
    expect_fault(begin, sizeof begin, 0, INVALID, "outgoing-window");
    /* an error without a condition, inside close */
    const uint8_t close[] = {0x00, 0x53, 0x18, 0xc0, 0x05, 0x01, 0x00, 0x53, 0x1d, 0x45};
    expect_fault(close, sizeof close, 0, INVALID, "condition");
    /* a received state without its section-offset */
    const uint8_t disp[] = {0x00, 0x53, 0x15, 0xc0, 0x0c, 0x05, 0x41, 0x43, 0x40,
                            0x40, 0x00, 0x53, 0x23, 0xc0, 0x02, 0x01, 0x43};
    expect_fault(disp, sizeof disp, 0, INVALID, "section-offset");
}

/* A sender's attach without initial-delivery-count (2.7.3 says a sender
 * sets it): taken, as 1.19 takes it, with the field absent and 0; a
 * receiver's may be null by the spec. */
static void test_sender_attach_without_initial_count_is_taken(void **state)
{
    (void)state;
    const uint8_t attach[] = {0x00, 0x53, 0x12, 0xc0, 0x06, 0x03, 0xa1, 0x01, 'l', 0x43, 0x42};
    for (int role = 0; role < 2; role++) {
        uint8_t raw[sizeof attach];
        memcpy(raw, attach, sizeof attach);
        raw[sizeof raw - 1] = role ? 0x41 : 0x42;
        jn_amqp_perf_t b;
        jn_amqp_fault_t fault;
        assert_int_equal(decode_all(raw, sizeof raw, 0, &b, &fault), 0);
        assert_int_equal(b.code, JN_AMQP_ATTACH);
        assert_int_equal(b.u.attach.role, role);
        assert_int_equal(b.u.attach.present, JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1) | JN_AMQP_FIELD(2));
        assert_int_equal(b.u.attach.initial_delivery_count, 0);
    }
    /* the other mandatory fields stay mandatory: a null role */
    const uint8_t norole[] = {0x00, 0x53, 0x12, 0xc0, 0x06, 0x03, 0xa1, 0x01, 'l', 0x43, 0x40};
    expect_fault(norole, sizeof norole, 0, INVALID, "role");
}

static void test_wrong_types_with_invalid_field(void **state)
{
    /* transfer handle as a string */
    const uint8_t t1[] = {0x00, 0x53, 0x14, 0xc0, 0x04, 0x01, 0xa1, 0x01, 'x'};
    expect_fault(t1, sizeof t1, 0, INVALID, "handle is string, not uint");
    /* transfer handle as a ulong */
    const uint8_t t2[] = {0x00, 0x53, 0x14, 0xc0, 0x03, 0x01, 0x53, 0x01};
    expect_fault(t2, sizeof t2, 0, INVALID, "handle is ulong");
    /* more as a described true (the frame screen's rule) */
    const uint8_t t3[] = {0x00, 0x53, 0x14, 0xc0, 0x0b, 0x06, 0x43, 0x43,
                          0x40, 0x40, 0x40, 0x00, 0xa3, 0x01, 'x',  0x41};
    expect_fault(t3, sizeof t3, 0, INVALID, "more is a described boolean");
    /* a described null is not null */
    const uint8_t t4[] = {0x00, 0x53, 0x14, 0xc0, 0x05, 0x01, 0x00, 0x53, 0x01, 0x40};
    expect_fault(t4, sizeof t4, 0, INVALID, "handle is a described null");
    /* begin remote-channel as a uint */
    const uint8_t b1[] = {0x00, 0x53, 0x11, 0xc0, 0x05, 0x04, 0x43, 0x43, 0x43, 0x43};
    expect_fault(b1, sizeof b1, 0, INVALID, "remote-channel is uint, not ushort");
    /* attach snd-settle-mode 3, rcv-settle-mode 2 */
    const uint8_t a1[] = {0x00, 0x53, 0x12, 0xc0, 0x08, 0x04, 0xa1, 0x01, 'l', 0x43, 0x41, 0x50, 3};
    expect_fault(a1, sizeof a1, 0, INVALID, "snd-settle-mode is 3");
    const uint8_t a2[] = {0x00, 0x53, 0x12, 0xc0, 0x09, 0x05, 0xa1,
                          0x01, 'l',  0x43, 0x41, 0x40, 0x50, 2};
    expect_fault(a2, sizeof a2, 0, INVALID, "rcv-settle-mode is 2");
    /* attach source as a plain string */
    const uint8_t a3[] = {0x00, 0x53, 0x12, 0xc0, 0x0a, 0x06, 0xa1, 0x01,
                          'l',  0x43, 0x41, 0x40, 0x40, 0xa1, 0x00};
    expect_fault(a3, sizeof a3, 0, INVALID, "source is a plain string");
    /* open offered-capabilities as a string, properties as a list */
    const uint8_t o1[] = {0x00, 0x53, 0x10, 0xc0, 0x0c, 0x08, 0xa1, 0x01, 'c',
                          0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0xa1, 0x00};
    expect_fault(o1, sizeof o1, 0, INVALID, "offered-capabilities is string");
    const uint8_t o2[] = {0x00, 0x53, 0x10, 0xc0, 0x0d, 0x0a, 0xa1, 0x01, 'c',
                          0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x45};
    expect_fault(o2, sizeof o2, 0, INVALID, "properties is list, not a map");
    /* an array of strings where symbols belong */
    const uint8_t o3[] = {0x00, 0x53, 0x10, 0xc0, 0x0e, 0x08, 0xa1, 0x01, 'c', 0x40,
                          0x40, 0x40, 0x40, 0x40, 0x40, 0xe0, 0x02, 0x00, 0xa1};
    expect_fault(o3, sizeof o3, 0, INVALID, "offered-capabilities is array");
    /* sasl-outcome code 5 */
    const uint8_t s1[] = {0x00, 0x53, 0x44, 0xc0, 0x03, 0x01, 0x50, 5};
    expect_fault(s1, sizeof s1, 1, INVALID, "code is 5");
    /* detach error that is not an error; disposition state that is plain */
    const uint8_t d1[] = {0x00, 0x53, 0x16, 0xc0, 0x07, 0x03, 0x43, 0x40, 0x00, 0x53, 0x24, 0x45};
    expect_fault(d1, sizeof d1, 0, INVALID, "error is not an error");
    const uint8_t d2[] = {0x00, 0x53, 0x15, 0xc0, 0x06, 0x05, 0x41, 0x43, 0x40, 0x40, 0x43};
    expect_fault(d2, sizeof d2, 0, INVALID, "not a delivery state");
}

static void test_not_a_performative_with_decode_error(void **state)
{
    expect_fault((const uint8_t *)"", 0, 0, DECODE, "no performative");
    const uint8_t plain[] = {0x45};
    expect_fault(plain, 1, 0, DECODE, "not a described performative");
    const uint8_t str_body[] = {0x00, 0x53, 0x10, 0xa1, 0x00};
    expect_fault(str_body, sizeof str_body, 0, DECODE, "not a list");
    const uint8_t unknown[] = {0x00, 0x53, 0x19, 0x45};
    expect_fault(unknown, sizeof unknown, 0, DECODE, "names no AMQP performative");
    const uint8_t sasl_on_amqp[] = {0x00, 0x53, 0x41, 0x45};
    expect_fault(sasl_on_amqp, sizeof sasl_on_amqp, 0, DECODE, "no AMQP");
    const uint8_t amqp_on_sasl[] = {0x00, 0x53, 0x10, 0x45};
    expect_fault(amqp_on_sasl, sizeof amqp_on_sasl, 1, DECODE, "no SASL");
    const uint8_t bad_sym[] = {0x00, 0xa3, 0x03, 'f', 'o', 'o', 0x45};
    expect_fault(bad_sym, sizeof bad_sym, 0, DECODE, "names no AMQP");
    /* a performative whose value is itself described (stacked descriptors,
     * 1.5): not the performative's list */
    const uint8_t stacked[] = {0x00, 0x53, 0x16, 0x00, 0x53, 0x01, 0xc0, 0x02, 0x01, 0x43};
    expect_fault(stacked, sizeof stacked, 0, DECODE, "described described list");
    const uint8_t stacked_err[] = {0x00, 0x53, 0x17, 0xc0, 0x0c, 0x01, 0x00, 0x53, 0x1d,
                                   0x00, 0xa3, 0x01, 'x',  0xc0, 0x02, 0x01, 0x43};
    expect_fault(stacked_err, sizeof stacked_err, 0, DECODE, "error is a described described");
    /* a list whose count claims more fields than its size holds */
    const uint8_t count[] = {0x00, 0x53, 0x17, 0xc0, 0x01, 0x05};
    expect_fault(count, sizeof count, 0, DECODE, "cannot be decoded");
    /* a malformed map inside properties (odd count) */
    const uint8_t map[] = {0x00, 0x53, 0x13, 0xc0, 0x0f, 0x0b, 0x40, 0x43, 0x43, 0x43,
                           0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0xc1, 0x02, 0x01, 0x40};
    expect_fault(map, sizeof map, 0, DECODE, "cannot be decoded");
}

static void test_truncated_at_every_octet(void **state)
{
    jn_amqp_perf_t p, b;
    blob_t enc;
    jn_amqp_perf_init(&p, JN_AMQP_ATTACH);
    p.u.attach.present = ALL(10);
    p.u.attach.name = str("n");
    set_source(&p.u.attach.source);
    p.u.attach.target.code = JN_AMQP_TARGET;
    p.u.attach.target.address = str("t");
    p.u.attach.target.present = 1;
    p.u.attach.unsettled = view(&a_map);
    round_trip(&p, &enc, &b);
    for (size_t n = 0; n < enc.len; n++) {
        jn_amqp_fault_t fault = {0};
        assert_int_equal(decode_all(enc.data, n, 0, &b, &fault), JN_EPROTO);
        assert_string_equal(fault.condition, DECODE);
    }
}

static void test_extra_fields_are_ignored(void **state)
{
    /* end with a second field no version defines yet */
    const uint8_t body[] = {0x00, 0x53, 0x17, 0xc0, 0x03, 0x02, 0x40, 0x43};
    jn_amqp_perf_t b;
    jn_iter_t it;
    jn_amqp_fault_t fault;
    jn_iter_init_bytes(&it, body, sizeof body, JN_VIEW_RAW);
    assert_int_equal(jn_amqp_perf_decode(&it, 0, &b, NULL, &fault), 0);
    assert_int_equal(b.u.end.present, 0);
    assert_string_equal(jn_amqp_perf_name(0x99), "unknown");
}

static void test_no_leak(void **state)
{
    jn_pool_thread_exit();
    assert_int_equal(jn_pool_leak_report(stderr), 0);
}

int main(void)
{
    make_values();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_every_field),
        cmocka_unit_test(test_open_short_list_reads_defaults),
        cmocka_unit_test(test_begin_every_field),
        cmocka_unit_test(test_attach_every_field_with_source_and_target),
        cmocka_unit_test(test_attach_coordinator_target_passes_through),
        cmocka_unit_test(test_flow_every_field),
        cmocka_unit_test(test_transfer_every_field_and_payload),
        cmocka_unit_test(test_disposition_detach_end_close_every_field),
        cmocka_unit_test(test_sasl_bodies_every_field),
        cmocka_unit_test(test_every_delivery_state),
        cmocka_unit_test(test_fast_disposition_agrees_with_the_tables),
        cmocka_unit_test(test_split_transfer_read_from_the_scratch),
        cmocka_unit_test(test_unknown_and_symbolic_states_pass_through),
        cmocka_unit_test(test_transaction_states_of_wrong_types_pass_through),
        cmocka_unit_test(test_descriptor_by_symbol),
        cmocka_unit_test(test_mandatory_fields_with_invalid_field),
        cmocka_unit_test(test_sender_attach_without_initial_count_is_taken),
        cmocka_unit_test(test_wrong_types_with_invalid_field),
        cmocka_unit_test(test_not_a_performative_with_decode_error),
        cmocka_unit_test(test_truncated_at_every_octet),
        cmocka_unit_test(test_extra_fields_are_ignored),
        cmocka_unit_test(test_no_leak),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    jn_pool_shutdown();
    return failed;
}
