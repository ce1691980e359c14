/*
 * io_state.c — a delivery state between proton's pn_disposition_t and the
 * core's jn_disposition_t, with every field (AMQP 1.0 part 3, 3.4): the
 * rejected error's info map, the modified message-annotations, received's
 * section number and offset, and the value of a state of any other type
 * (a descriptor code the spec does not define). The structured parts
 * travel as encoded AMQP, so what one peer sent reaches the other unchanged
 * across any number of routers.
 *
 * Accepted and released have no fields: they cost nothing here (the hot
 * path's dispositions are those).
 */
#include "io_private.h"

#include <proton/codec.h>
#include <proton/condition.h>
#include <proton/disposition.h>

#include <stdlib.h>
#include <string.h>

/* jn_io_data_encode: the encoding of data's content into *out (heap, the
 * caller's) and *len; NULL/0 when empty or unencodable. Any thread using
 * data. */
void jn_io_data_encode(pn_data_t *data, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (!data || pn_data_size(data) == 0)
        return;
    pn_data_rewind(data);
    ssize_t size = pn_data_encoded_size(data);
    uint8_t *buf = size > 0 ? malloc((size_t)size) : NULL;
    if (buf && pn_data_encode(data, (char *)buf, (size_t)size) == size) {
        *out = buf;
        *len = (size_t)size;
    } else {
        free(buf);
    }
    pn_data_rewind(data);
}

/* Replace data's content with the decoding of octets (none: left empty). */
static void decode_data(pn_data_t *data, const uint8_t *octets, size_t len)
{
    if (!data)
        return;
    pn_data_clear(data);
    if (octets && len)
        pn_data_decode(data, (const char *)octets, len);
    pn_data_rewind(data);
}

/* d's extra fields, allocated when first needed (NULL: out of memory). */
static jn_disposition_extra_t *extra_of(jn_disposition_t *d)
{
    if (!d->extra)
        d->extra = calloc(1, sizeof *d->extra);
    return d->extra;
}

/* A received state that came on a transfer: proton 0.37 keeps its fields
 * as the raw list [section-number, section-offset] in the disposition's
 * data, not in its section getters (those are filled from dispositions
 * only). Read them from there when present. */
static void received_from_data(pn_data_t *data, jn_disposition_extra_t *x)
{
    if (!data || pn_data_size(data) == 0)
        return;
    pn_data_rewind(data);
    if (pn_data_next(data) && pn_data_type(data) == PN_LIST) {
        pn_data_enter(data);
        if (pn_data_next(data) && pn_data_type(data) == PN_UINT)
            x->section_number = pn_data_get_uint(data);
        if (pn_data_next(data) && pn_data_type(data) == PN_ULONG)
            x->section_offset = pn_data_get_ulong(data);
        pn_data_exit(data);
    }
    pn_data_rewind(data);
}

/* A state that came with the ulong descriptor JN_DISP_RAW stands for
 * (all ones): the core takes that type as "carried as it came", so its
 * value (x->data) becomes its whole encoding, descriptor first (none when
 * out of memory). */
static void raw_from_value(jn_disposition_t *d)
{
    jn_disposition_extra_t *x = extra_of(d);
    size_t vlen = x && x->data_len ? x->data_len : 1;
    uint8_t *all = x ? malloc(10 + vlen) : NULL;
    if (!all) {
        d->type = JN_DISP_NONE;
        return;
    }
    const uint8_t head[] = {0x00, 0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    memcpy(all, head, sizeof head);
    if (x->data_len)
        memcpy(all + 10, x->data, x->data_len);
    else
        all[10] = 0x40; /* null */
    free(x->data);
    x->data = all;
    x->data_len = 10 + vlen;
}

/* jn_io_state_read_IO: fill d (type already set) from the remote state of
 * a delivery: the condition strings point into proton (valid until the
 * next proton call on it); d->extra is a heap copy of the other fields
 * (when there are any) that the caller frees with jn_io_state_release_IO
 * once the core has copied d. Out of memory: the extra fields are left
 * out. The connection's loop thread. */
void jn_io_state_read_IO(pn_disposition_t *remote, jn_disposition_t *d)
{
    JN_ASSERT_SOME_IO();
    jn_disposition_extra_t *x;
    switch (d->type) {
    case JN_DISP_ACCEPTED:
    case JN_DISP_RELEASED:
    case JN_DISP_NONE:
        return;
    case JN_DISP_REJECTED: {
        pn_condition_t *c = pn_disposition_condition(remote);
        if (pn_condition_is_set(c)) {
            d->condition = (char *)pn_condition_get_name(c);
            d->description = (char *)pn_condition_get_description(c);
            pn_data_t *info = pn_condition_info(c);
            if (info && pn_data_size(info) && (x = extra_of(d)))
                jn_io_data_encode(info, &x->info, &x->info_len);
        }
        return;
    }
    case JN_DISP_MODIFIED: {
        d->delivery_failed = pn_disposition_is_failed(remote);
        d->undeliverable_here = pn_disposition_is_undeliverable(remote);
        pn_data_t *ann = pn_disposition_annotations(remote);
        if (ann && pn_data_size(ann) && (x = extra_of(d)))
            jn_io_data_encode(ann, &x->annotations, &x->annotations_len);
        return;
    }
    case JN_DISP_RECEIVED:
        if ((x = extra_of(d))) {
            x->has_section = true;
            x->section_number = pn_disposition_get_section_number(remote);
            x->section_offset = pn_disposition_get_section_offset(remote);
            received_from_data(pn_disposition_data(remote), x);
        }
        return;
    default: {
        pn_data_t *data = pn_disposition_data(remote);
        if (data && pn_data_size(data) && (x = extra_of(d)))
            jn_io_data_encode(data, &x->data, &x->data_len);
        if (JN_UNLIKELY(d->type == JN_DISP_RAW))
            raw_from_value(d);
        return;
    }
    }
}

/* jn_io_state_release_IO: free what jn_io_state_read_IO allocated. */
void jn_io_state_release_IO(jn_disposition_t *d)
{
    JN_ASSERT_SOME_IO();
    if (!d->extra)
        return;
    free(d->extra->info);
    free(d->extra->annotations);
    free(d->extra->data);
    free(d->extra);
    d->extra = NULL;
}

/* jn_io_state_apply_IO: set local (a delivery's local disposition) to d's
 * state, every field; the caller then calls pn_delivery_update with
 * d->type. The connection's loop thread. */
void jn_io_state_apply_IO(pn_disposition_t *local, const jn_disposition_t *d)
{
    JN_ASSERT_SOME_IO();
    const jn_disposition_extra_t *x = d->extra;
    switch (d->type) {
    case JN_DISP_ACCEPTED:
    case JN_DISP_RELEASED:
    case JN_DISP_NONE:
        return;
    case JN_DISP_REJECTED:
        if (d->condition) {
            pn_condition_t *c = pn_disposition_condition(local);
            pn_condition_set_name(c, d->condition);
            if (d->description)
                pn_condition_set_description(c, d->description);
            if (x)
                decode_data(pn_condition_info(c), x->info, x->info_len);
        }
        return;
    case JN_DISP_MODIFIED:
        pn_disposition_set_failed(local, d->delivery_failed);
        pn_disposition_set_undeliverable(local, d->undeliverable_here);
        if (x)
            decode_data(pn_disposition_annotations(local), x->annotations, x->annotations_len);
        return;
    case JN_DISP_RECEIVED:
        if (x && x->has_section) {
            pn_disposition_set_section_number(local, x->section_number);
            pn_disposition_set_section_offset(local, x->section_offset);
        }
        return;
    default: /* JN_DISP_RAW never comes here: proton sends none for it */
        if (x)
            decode_data(pn_disposition_data(local), x->data, x->data_len);
        return;
    }
}
