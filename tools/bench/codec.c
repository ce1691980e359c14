/*
 * codec.c — the bench message template and its stamp (codec.h).
 *
 * The template is built with proton's own encoder (pn_message_encode), once
 * per run, with a placeholder in the stamp's place; the placeholder is then
 * located in the encoded octets so that senders can patch it in place. The
 * reading side is a small walker over AMQP type encodings: it only needs the
 * encoded size of each value to hop from section to section and from map
 * entry to map entry, which the constructor byte's high nibble gives.
 */
#include "codec.h"

#include <proton/codec.h>
#include <proton/message.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Placeholder for the stamp while encoding; must not occur elsewhere. */
static const char stamp_placeholder[JN_BENCH_STAMP_SIZE] = "<jn-bench-stamp-20o>";

/* Encode msg into a malloc'd buffer; returns its size or 0. */
static size_t encode_message(pn_message_t *msg, size_t body_size, uint8_t **out)
{
    size_t cap = body_size + 256;
    for (int tries = 0; tries < 8; tries++, cap *= 2) {
        uint8_t *buf = malloc(cap);
        if (!buf)
            return 0;
        size_t size = cap;
        int rc = pn_message_encode(msg, (char *)buf, &size);
        if (rc == 0) {
            *out = buf;
            return size;
        }
        free(buf);
        if (rc != PN_OVERFLOW)
            return 0;
    }
    return 0;
}

int jn_bench_template_init(jn_bench_template_t *tmpl, size_t body_size, const char *to)
{
    memset(tmpl, 0, sizeof(*tmpl));
    char *body = malloc(body_size ? body_size : 1);
    pn_message_t *msg = pn_message();
    if (!body || !msg) {
        free(body);
        pn_message_free(msg);
        return -1;
    }
    memset(body, 'x', body_size);
    if (to)
        pn_message_set_address(msg, to);
    pn_data_t *props = pn_message_properties(msg);
    pn_data_put_map(props);
    pn_data_enter(props);
    pn_data_put_string(props, pn_bytes(strlen(JN_BENCH_STAMP_KEY), JN_BENCH_STAMP_KEY));
    pn_data_put_binary(props, pn_bytes(JN_BENCH_STAMP_SIZE, stamp_placeholder));
    pn_data_exit(props);
    /* An inferred binary body is encoded as a data section. */
    pn_message_set_inferred(msg, true);
    pn_data_put_binary(pn_message_body(msg), pn_bytes(body_size, body));
    uint8_t *bytes = NULL;
    size_t size = encode_message(msg, body_size, &bytes);
    pn_message_free(msg);
    free(body);
    if (size == 0)
        return -1;
    const uint8_t *at = memmem(bytes, size, stamp_placeholder, JN_BENCH_STAMP_SIZE);
    if (!at) {
        free(bytes);
        return -1;
    }
    tmpl->bytes = bytes;
    tmpl->size = size;
    tmpl->stamp_offset = (size_t)(at - bytes);
    return 0;
}

void jn_bench_template_fini(jn_bench_template_t *tmpl)
{
    free(tmpl->bytes);
    memset(tmpl, 0, sizeof(*tmpl));
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_be64(const uint8_t *p)
{
    return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/*
 * Encoded size of the value at p (constructor included), or 0 when it is
 * malformed or runs past avail octets.
 */
static size_t value_size(const uint8_t *p, size_t avail, int depth)
{
    if (avail < 1 || depth > 4)
        return 0;
    uint8_t c = p[0];
    if (c == 0x00) { /* described: descriptor, then the value */
        size_t d = value_size(p + 1, avail - 1, depth + 1);
        if (d == 0)
            return 0;
        size_t v = value_size(p + 1 + d, avail - 1 - d, depth + 1);
        return v == 0 ? 0 : 1 + d + v;
    }
    static const uint8_t fixed[] = {0, 1, 2, 4, 8, 16}; /* nibbles 0x4 .. 0x9 */
    uint8_t hi = c >> 4;
    size_t size;
    if (hi >= 0x4 && hi <= 0x9) {
        size = 1 + (size_t)fixed[hi - 4];
    } else if (hi == 0xa || hi == 0xc || hi == 0xe) { /* one-octet size */
        if (avail < 2)
            return 0;
        size = 2 + (size_t)p[1];
    } else if (hi == 0xb || hi == 0xd || hi == 0xf) { /* four-octet size */
        if (avail < 5)
            return 0;
        size = 5 + (size_t)get_be32(p + 1);
    } else {
        return 0;
    }
    return size <= avail ? size : 0;
}

/* Is the value at p (size octets) a string or symbol equal to key? */
static int key_matches(const uint8_t *p, size_t size, const char *key, size_t keylen)
{
    if ((p[0] == 0xa1 || p[0] == 0xa3) && size == 2 + keylen)
        return memcmp(p + 2, key, keylen) == 0;
    if ((p[0] == 0xb1 || p[0] == 0xb3) && size == 5 + keylen)
        return memcmp(p + 5, key, keylen) == 0;
    return 0;
}

/* Look for the stamp in an application-properties map. */
static int read_properties(const uint8_t *p, size_t size, jn_bench_stamp_t *stamp)
{
    uint32_t count;
    size_t pos;
    if (p[0] == 0xc1 && size >= 3) {
        count = p[2];
        pos = 3;
    } else if (p[0] == 0xd1 && size >= 9) {
        count = get_be32(p + 5);
        pos = 9;
    } else {
        return -1;
    }
    const size_t keylen = sizeof(JN_BENCH_STAMP_KEY) - 1;
    for (uint32_t i = 0; i + 1 < count; i += 2) {
        size_t k = value_size(p + pos, size - pos, 0);
        if (k == 0)
            return -1;
        size_t v = value_size(p + pos + k, size - pos - k, 0);
        if (v == 0)
            return -1;
        const uint8_t *val = p + pos + k;
        if (key_matches(p + pos, k, JN_BENCH_STAMP_KEY, keylen)) {
            if (val[0] != 0xa0 || val[1] != JN_BENCH_STAMP_SIZE)
                return -1;
            stamp->sender = get_be32(val + 2);
            stamp->seq = get_be64(val + 6);
            stamp->send_ns = (int64_t)get_be64(val + 14);
            return 0;
        }
        pos += k + v;
    }
    return -1;
}

int jn_bench_stamp_read(const uint8_t *msg, size_t size, jn_bench_stamp_t *stamp)
{
    size_t pos = 0;
    while (pos < size) {
        /* Each section is a described value: 0x00, descriptor, value. */
        if (msg[pos] != 0x00 || size - pos < 3)
            return -1;
        size_t d = value_size(msg + pos + 1, size - pos - 1, 1);
        if (d == 0)
            return -1;
        const uint8_t *desc = msg + pos + 1;
        uint64_t code = UINT64_MAX;
        if (desc[0] == 0x53)
            code = desc[1];
        else if (desc[0] == 0x80)
            code = get_be64(desc + 1);
        size_t vpos = pos + 1 + d;
        size_t v = value_size(msg + vpos, size - vpos, 1);
        if (v == 0)
            return -1;
        if (code == 0x74) /* application-properties */
            return read_properties(msg + vpos, v, stamp);
        if (code == 0x75 || code == 0x76 || code == 0x77)
            return -1; /* the body: application-properties come before it */
        pos = vpos + v;
    }
    return -1;
}
