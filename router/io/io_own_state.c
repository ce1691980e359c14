/*
 * io_own_state.c — delivery states on Junction's own engine (AMQP 1.0
 * part 3, 3.4; transactions' 4.5.5 and 4.5.6): the engine's decoded state
 * (views of the frame, junction/amqp_delivery.h) into the core's
 * jn_disposition_t with every field, and back. A state of a type the core does not know
 * travels as its encoded value; one named by a symbolic descriptor as its
 * whole encoding (JN_DISP_RAW), octet for octet. Any thread: no
 * connection state is touched.
 */
#include "io_own.h"

#include <stdlib.h>
#include <string.h>

/* A heap copy of the view's octets in *out, *len (none: NULL, 0). */
static void copy_octets(const jn_iter_t *v, uint8_t **out, size_t *len)
{
    jn_iter_t it = *v;
    size_t n = jn_iter_length(&it);
    *out = n ? malloc(n) : NULL;
    *len = *out ? jn_iter_copy(&it, *out, n) : 0;
}

/* d's extra fields, allocated when first needed (NULL: out of memory). */
static jn_disposition_extra_t *extra_of(jn_disposition_t *d)
{
    if (!d->extra)
        d->extra = calloc(1, sizeof *d->extra);
    return d->extra;
}

/* The value of a state the spec does not define, as the core carries it
 * (what follows its numeric descriptor): *out, *len on the
 * heap; none when the encoding is not a described value with a ulong
 * descriptor. */
static void unknown_value(const jn_iter_t *encoded, uint8_t **out, size_t *len)
{
    uint8_t *all;
    size_t n;
    copy_octets(encoded, &all, &n);
    size_t skip = n >= 2 && all[0] == 0x00 ? (all[1] == 0x53 ? 3 : all[1] == 0x80 ? 10 : 0) : 0;
    *out = NULL;
    *len = 0;
    if (skip && n > skip && (*out = malloc(n - skip)) != NULL) {
        memcpy(*out, all + skip, n - skip);
        *len = n - skip;
    }
    free(all);
}

bool jn_io_own_state_known(uint64_t code)
{
    return code == JN_DISP_ACCEPTED || code == JN_DISP_REJECTED || code == JN_DISP_RELEASED ||
           code == JN_DISP_MODIFIED || code == JN_DISP_RECEIVED;
}

bool jn_io_own_state_in(const jn_amqp_state_t *st, jn_disposition_t *d)
{
    if (JN_LIKELY(!st->symbolic && !st->loose &&
                  (st->code == JN_AMQP_ACCEPTED || st->code == JN_AMQP_RELEASED))) {
        /* the outcomes of almost every delivery: no fields (3.4.2, 3.4.4) */
        *d = (jn_disposition_t){.type = st->code};
        return true;
    }
    memset(d, 0, sizeof *d);
    jn_disposition_extra_t *x;
    /* one compare for both ends: code 0 (none) and JN_DISP_RAW */
    if (JN_UNLIKELY(st->symbolic || st->loose || st->code + 1 <= 1)) {
        if (!st->symbolic && st->code == 0)
            return false; /* not carried by the core */
        /* one the router does not interpret: its whole encoding */
        if (!(x = extra_of(d)))
            return false;
        d->type = JN_DISP_RAW;
        copy_octets(&st->encoded, &x->data, &x->data_len);
        return x->data_len > 0;
    }
    d->type = st->code;
    if (st->code == JN_AMQP_REJECTED && (st->present & JN_AMQP_FIELD(0))) {
        char buf[256];
        jn_iter_copy_string(&st->error.condition, buf, sizeof buf);
        d->condition = strdup(buf);
        if (st->error.present & JN_AMQP_FIELD(1)) {
            jn_iter_copy_string(&st->error.description, buf, sizeof buf);
            d->description = strdup(buf);
        }
        if ((st->error.present & JN_AMQP_FIELD(2)) && (x = extra_of(d)))
            copy_octets(&st->error.info, &x->info, &x->info_len);
    } else if (st->code == JN_AMQP_MODIFIED) {
        d->delivery_failed = st->delivery_failed;
        d->undeliverable_here = st->undeliverable_here;
        if ((st->present & JN_AMQP_FIELD(2)) && (x = extra_of(d)))
            copy_octets(&st->message_annotations, &x->annotations, &x->annotations_len);
    } else if (st->code == JN_AMQP_RECEIVED) {
        if ((x = extra_of(d))) {
            x->has_section = true;
            x->section_number = st->section_number;
            x->section_offset = st->section_offset;
        }
    } else if (!jn_io_own_state_known(st->code) && (x = extra_of(d))) {
        unknown_value(&st->encoded, &x->data, &x->data_len);
    }
    return true;
}

/* A transaction's state (declared, transactional-state: AMQP 1.0 4.5.5,
 * 4.5.7), which the core carries as its value (the list after the
 * descriptor, x->data), as the engine's fields: views of x's octets.
 * False when the value is not such a list (it does not go). */
static bool txn_state_out(const jn_disposition_extra_t *x, jn_amqp_state_t *st)
{
    if (!x || !x->data_len)
        return false;
    jn_iter_t v;
    jn_iter_init_bytes(&v, x->data, x->data_len, JN_VIEW_RAW);
    jn_decoder_t d, in;
    jn_field_t f;
    jn_decoder_init(&d, &v, true);
    if (jn_decoder_next(&d, &f) != 1 || f.type != JN_TYPE_LIST ||
        jn_decoder_enter(&d, &f, &in) != 0 || jn_decoder_next(&in, &f) != 1 ||
        f.type != JN_TYPE_BINARY)
        return false;
    st->present = JN_AMQP_FIELD(0);
    st->txn_id = f.payload;
    if (st->code == JN_AMQP_TRANSACTIONAL_STATE && jn_decoder_next(&in, &f) == 1 &&
        f.type != JN_TYPE_NULL) {
        st->present |= JN_AMQP_FIELD(1);
        st->outcome = f.encoded;
    }
    return true;
}

bool jn_io_own_state_out(const jn_disposition_t *d, jn_amqp_state_t *st, uint8_t **heap)
{
    *heap = NULL;
    if (d->type == JN_DISP_NONE)
        return false; /* st unused */
    if (JN_LIKELY(d->type == JN_DISP_ACCEPTED || d->type == JN_DISP_RELEASED)) {
        /* the outcomes of almost every delivery have no field: the engine
         * reads only these of them (their encoding is fixed), so the rest
         * of st is not cleared (an accepted outcome cost ~240 instructions
         * here) */
        st->code = d->type;
        st->symbolic = false;
        st->loose = false;
        st->present = 0;
        return true;
    }
    memset(st, 0, sizeof *st);
    st->code = d->type;
    const jn_disposition_extra_t *x = d->extra;
    if (d->type == JN_AMQP_DECLARED || d->type == JN_AMQP_TRANSACTIONAL_STATE)
        return txn_state_out(x, st);
    if (JN_UNLIKELY(d->type == JN_DISP_RAW)) {
        /* as it came: the engine writes a symbolic one's encoding as is */
        if (!x || !x->data_len)
            return false;
        st->symbolic = true;
        jn_iter_init_bytes(&st->encoded, x->data, x->data_len, JN_VIEW_RAW);
        return true;
    }
    if (d->type == JN_DISP_REJECTED && d->condition) {
        st->present = JN_AMQP_FIELD(0);
        st->error.present = JN_AMQP_FIELD(0);
        jn_iter_init_string(&st->error.condition, d->condition, JN_VIEW_RAW);
        if (d->description) {
            st->error.present |= JN_AMQP_FIELD(1);
            jn_iter_init_string(&st->error.description, d->description, JN_VIEW_RAW);
        }
        if (x && x->info_len) {
            st->error.present |= JN_AMQP_FIELD(2);
            jn_iter_init_bytes(&st->error.info, x->info, x->info_len, JN_VIEW_RAW);
        }
    } else if (d->type == JN_DISP_MODIFIED) {
        st->present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1);
        st->delivery_failed = d->delivery_failed;
        st->undeliverable_here = d->undeliverable_here;
        if (x && x->annotations_len) {
            st->present |= JN_AMQP_FIELD(2);
            jn_iter_init_bytes(&st->message_annotations, x->annotations, x->annotations_len,
                               JN_VIEW_RAW);
        }
    } else if (d->type == JN_DISP_RECEIVED && x && x->has_section) {
        st->present = JN_AMQP_FIELD(0) | JN_AMQP_FIELD(1);
        st->section_number = x->section_number;
        st->section_offset = x->section_offset;
    } else if (!jn_io_own_state_known(d->type)) {
        /* another state: its numeric descriptor and value, as it came */
        size_t vlen = x && x->data_len ? x->data_len : 1;
        uint8_t *o = malloc(10 + vlen);
        if (!o)
            return false;
        o[0] = 0x00;
        o[1] = 0x80; /* ulong */
        for (int i = 0; i < 8; i++)
            o[2 + i] = (uint8_t)(d->type >> (56 - 8 * i));
        if (x && x->data_len)
            memcpy(o + 10, x->data, x->data_len);
        else
            o[10] = 0x40; /* null */
        jn_iter_init_bytes(&st->encoded, o, 10 + vlen, JN_VIEW_RAW);
        *heap = o;
    }
    return true;
}

