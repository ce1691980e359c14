/*
 * screen.c — the frame screen (junction/screen.h): follows a peer's octet
 * stream through protocol headers, the SASL layer and AMQP frames, and stops
 * it at the first frame that breaks a rule proton would assert on (or that
 * the spec forbids and proton lets through to do harm).
 *
 * The stream is a state machine fed in arbitrary pieces:
 *
 *   HEADER   8 octets "AMQP" id 1 0 0; id 3 starts the SASL layer, id 0 the
 *            AMQP layer. Anything else goes to proton, which answers with
 *            its own header and closes (2.2); the screen then passes nothing.
 *   HEAD     the 8-octet frame header: size, doff, type, channel (2.3.1).
 *            In the SASL layer an "AMQP" where a frame would start is the
 *            next protocol header (its size would be over 1 GB).
 *   EXT      the extended header: skipped.
 *   PERF     the performative: read in place when it lies in this piece,
 *            else gathered in the carry buffer (bounded by max_frame).
 *   PAYLOAD  the rest of the frame (a transfer's message octets): skipped.
 *
 * Each performative is checked against the channel, link and delivery
 * state the screen keeps: sessions by remote channel, links by (channel,
 * handle) with the peer's role and the delivery in progress. Both live in
 * one small open-addressing table; a one-entry cache serves a flow of
 * transfers on one link.
 *
 * The checks (AMQP 1.0 part 2 sections; docs/protocol.md lists them):
 *   framing-error   size < 8, doff < 2, doff*4 > size, size > max_frame,
 *                   a frame type other than the layer's, channel > max
 *   decode-error    a performative that is not a described list of the
 *                   layer's codes, or whose fields cannot be decoded
 *   illegal-state   a frame before open or after close, a second open, a
 *                   begin on a channel that has a session, a begin that
 *                   answers one of our sessions a second time, a frame on
 *                   a channel that has none, a transfer on a link the peer
 *                   attached as receiver, SASL frames out of order
 *   handle-in-use   attach on a handle already attached (2.7.3)
 *   unattached-handle  transfer, flow or detach on a handle not attached
 *   invalid-field   a delivery's first transfer without a delivery-id or
 *                   delivery-tag, a continuation with another delivery-id
 *                   (2.7.5), a handle, delivery-id or remote-channel of the
 *                   wrong type, a boolean (more, aborted, role) that is
 *                   described (proton's scanner reads it as false)
 *   decode-error    (SASL) a performative without its mandatory first
 *                   field of its type (5.3.3)
 */
#include <junction/decoder.h>
#include <junction/screen.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "screen_private.h" /* struct jn_screen, entry_t and the table */

/* ---- errors -------------------------------------------------------------------- */

JN_PRINTF(3, 4) static int fail(jn_screen_t *s, const char *condition, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->description, sizeof s->description, fmt, ap);
    va_end(ap);
    s->condition = condition;
    s->failed_in_sasl = s->layer != LAYER_AMQP;
    s->stage = ST_FAILED;
    return JN_EPROTO;
}

#define FRAMING "amqp:connection:framing-error"
#define DECODE "amqp:decode-error"
#define ILLEGAL "amqp:illegal-state"
#define INVALID "amqp:invalid-field"

/* ---- reading a performative ------------------------------------------------------ */

/* A cursor over the fields of a performative's list. */
typedef struct fields {
    const uint8_t *p, *end;
    uint32_t left; /* fields not yet read */
} fields_t;

/* The octets the value at p takes when it is one of the plain encodings
 * performatives use (null, booleans, the small and 4-octet integers, short
 * binaries and strings), or 0 to leave it to the decoder. Hot path: a
 * transfer's fields are all of these, so each costs a jump and a compare. */
static inline size_t quick_width(const uint8_t *p, const uint8_t *end)
{
    size_t left = (size_t)(end - p);
    switch (*p) {
    case 0x40: case 0x41: case 0x42: case 0x43: case 0x44: case 0x45:
        return 1;
    case 0x50: case 0x51: case 0x52: case 0x53: case 0x54: case 0x55:
        return left >= 2 ? 2 : 0;
    case 0x56:
        return left >= 2 && p[1] <= 1 ? 2 : 0;
    case 0x70: case 0x71:
        return left >= 5 ? 5 : 0;
    case 0xa0: case 0xa1: case 0xa3:
        return left >= 2 && left - 2 >= p[1] ? 2u + p[1] : 0;
    default:
        return 0;
    }
}

/* The next field into *v (absent trailing fields read as null). Returns
 * JN_EPROTO when the field cannot be decoded. */
static inline int next_field(fields_t *f, jn_value_t *v)
{
    if (f->left == 0) {
        v->code = 0x40;
        v->described = false;
        return 0;
    }
    size_t n = f->p < f->end ? quick_width(f->p, f->end) : 0;
    if (JN_LIKELY(n)) {
        v->code = f->p[0];
        v->described = false;
        v->data = f->p + (f->p[0] >= 0xa0 ? 2 : 1);
    } else if (f->p >= f->end) {
        return JN_EPROTO; /* the list holds fewer fields than its count */
    } else if ((n = jn_decode_peek(f->p, (size_t)(f->end - f->p), 1, v)) == 0) {
        /* the decoder's fast reader leaves arrays, nested descriptors and
         * long descriptor symbols to the decoder proper, which also says
         * what is malformed */
        jn_iter_t it;
        jn_decoder_t d;
        jn_iter_init_bytes(&it, f->p, (size_t)(f->end - f->p), JN_VIEW_RAW);
        jn_decoder_init(&d, &it, true);
        if (jn_decoder_skip(&d, v) != 1)
            return JN_EPROTO;
        n = (size_t)(f->end - f->p) - jn_iter_length(&d.it);
    }
    f->p += n;
    f->left--;
    return 0;
}

/* A uint field (handle, delivery-id): 0 with *out and *present, or
 * JN_EPROTO when it is of another type. */
static inline int field_uint(const jn_value_t *v, uint32_t *out, bool *present)
{
    *present = true;
    switch (v->code) {
    case 0x40: *present = false; *out = 0; return v->described ? JN_EPROTO : 0;
    case 0x43: *out = 0; break;
    case 0x52: *out = v->data[0]; break;
    case 0x70:
        *out = (uint32_t)v->data[0] << 24 | (uint32_t)v->data[1] << 16 |
               (uint32_t)v->data[2] << 8 | v->data[3];
        break;
    default: return JN_EPROTO;
    }
    return v->described ? JN_EPROTO : 0;
}

/* A boolean field: null reads as false. A described value is refused:
 * proton's scanner reads it as false whatever it holds, so a described
 * true would make the screen and proton disagree on `more` (the screen
 * would let a continuation without a delivery-id through to a link that
 * proton sees starting a new delivery: assertion `id_present'). */
static inline int field_bool(const jn_value_t *v, bool *out)
{
    if (v->described)
        return JN_EPROTO;
    switch (v->code) {
    case 0x40: case 0x42: *out = false; break;
    case 0x41: *out = true; break;
    case 0x56: *out = v->data[0] != 0; break;
    default: return JN_EPROTO;
    }
    return 0;
}

/* The performative code of a descriptor given as a symbol (1.5), or 0. */
static uint64_t symbol_code(const uint8_t *p, size_t n)
{
    static const char *const names[] = {
        "amqp:open:list",     "amqp:begin:list",          "amqp:attach:list",
        "amqp:flow:list",     "amqp:transfer:list",       "amqp:disposition:list",
        "amqp:detach:list",   "amqp:end:list",            "amqp:close:list"};
    static const char *const sasl[] = {"amqp:sasl-mechanisms:list", "amqp:sasl-init:list",
                                       "amqp:sasl-challenge:list", "amqp:sasl-response:list",
                                       "amqp:sasl-outcome:list"};
    for (unsigned i = 0; i < 9; i++)
        if (strlen(names[i]) == n && memcmp(names[i], p, n) == 0)
            return 0x10 + i;
    for (unsigned i = 0; i < 5; i++)
        if (strlen(sasl[i]) == n && memcmp(sasl[i], p, n) == 0)
            return 0x40 + i;
    return 0;
}

/* The length of the performative at p (avail octets present, at most body
 * in the frame): > 0 the octets it takes, 0 when more octets are needed to
 * tell, JN_EPROTO (with s failed) when it is not a described list. Sets
 * *code and *fields_at (offset of the list's first field) and *count. */
static long perf_extent(jn_screen_t *s, const uint8_t *p, size_t avail, uint32_t body,
                        uint64_t *code, uint32_t *fields_at, uint32_t *count)
{
    size_t i = 2;
    if (avail < 2)
        return 0;
    if (p[0] != 0x00)
        return fail(s, DECODE, "frame body on channel %u is not a described performative",
                    s->channel);
    switch (p[1]) {
    case 0x53:
        if (avail < 3)
            return 0;
        *code = p[2];
        i = 3;
        break;
    case 0x80:
        if (avail < 10)
            return 0;
        *code = 0;
        for (int k = 0; k < 8; k++)
            *code = *code << 8 | p[2 + k];
        i = 10;
        break;
    case 0xa3: {
        if (avail < 3)
            return 0;
        size_t n = p[2];
        if (avail < 3 + n)
            return 3 + n > body ? fail(s, DECODE, "performative descriptor overruns its frame") : 0;
        *code = symbol_code(p + 3, n);
        i = 3 + n;
        break;
    }
    default:
        return fail(s, DECODE, "performative descriptor on channel %u is not a ulong or symbol",
                    s->channel);
    }
    if (avail < i + 1)
        return i + 1 > body ? fail(s, DECODE, "performative overruns its frame") : 0;
    uint64_t len;
    switch (p[i]) {
    case 0x45:
        len = i + 1, *fields_at = (uint32_t)len, *count = 0;
        break;
    case 0xc0:
        if (avail < i + 3)
            return i + 3 > body ? fail(s, DECODE, "performative overruns its frame") : 0;
        len = i + 2 + p[i + 1], *fields_at = (uint32_t)(i + 3), *count = p[i + 2];
        if (p[i + 1] < 1)
            return fail(s, DECODE, "performative list has no room for its count");
        break;
    case 0xd0:
        if (avail < i + 9)
            return i + 9 > body ? fail(s, DECODE, "performative overruns its frame") : 0;
        len = i + 5 + ((uint64_t)p[i + 1] << 24 | (uint64_t)p[i + 2] << 16 |
                       (uint64_t)p[i + 3] << 8 | p[i + 4]);
        *fields_at = (uint32_t)(i + 9);
        *count = (uint32_t)p[i + 5] << 24 | (uint32_t)p[i + 6] << 16 |
                 (uint32_t)p[i + 7] << 8 | p[i + 8];
        if (len < i + 9)
            return fail(s, DECODE, "performative list has no room for its count");
        break;
    default:
        return fail(s, DECODE, "performative on channel %u is not a list", s->channel);
    }
    if (len > body)
        return fail(s, DECODE, "performative on channel %u overruns its frame", s->channel);
    return (long)len;
}

/* ---- the rules, per performative --------------------------------------------------- */

/* The session of the current frame's channel, or a failure. */
static int need_session(jn_screen_t *s, const char *what)
{
    if (lookup(s, KEY_SESSION | s->channel))
        return 0;
    return fail(s, ILLEGAL, "%s on channel %u, which has no session", what, s->channel);
}

/* The attached link of (channel, handle), or NULL (with s failed). */
static entry_t *need_link(jn_screen_t *s, uint32_t handle, const char *what)
{
    uint64_t key = LINK_KEY(s->channel, handle);
    entry_t *e = s->cached;
    if (!e || e->key != key) {
        e = lookup(s, key);
        s->cached = e;
    }
    if (!e)
        fail(s, "amqp:session:unattached-handle", "%s on channel %u names handle %u, which is not attached",
             what, s->channel, handle);
    return e;
}

/* Read fields until index n (0-based) is in *v. */
static inline int field_at(fields_t *f, uint32_t *at, uint32_t n, jn_value_t *v)
{
    while (*at <= n) {
        if (next_field(f, v) != 0)
            return JN_EPROTO;
        (*at)++;
    }
    return 0;
}

/* Read a uint in one of its plain encodings at *q, before end (null:
 * absent); false to leave the field to the general reader. */
static inline bool quick_uint(const uint8_t **q, const uint8_t *end, uint32_t *out, bool *present)
{
    const uint8_t *p = *q;
    size_t left = (size_t)(end - p);
    *present = true;
    if (left < 1)
        return false;
    switch (p[0]) {
    case 0x40: *present = false; *out = 0; *q = p + 1; return true;
    case 0x43: *out = 0; *q = p + 1; return true;
    case 0x52:
        if (left < 2)
            return false;
        *out = p[1];
        *q = p + 2;
        return true;
    case 0x70:
        if (left < 5)
            return false;
        *out = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
        *q = p + 5;
        return true;
    default: return false;
    }
}

/* Hot path: the transfer that starts and ends a delivery in one frame, as
 * clients encode it (plain encodings for handle, delivery-id, delivery-tag,
 * message-format, settled and more), checked without the general reader:
 * 1 checked (0 fails were found), 0 to leave it to check_transfer(), or
 * JN_EPROTO from a rule. */
static inline int quick_transfer(jn_screen_t *s, const fields_t *f)
{
    const uint8_t *q = f->p, *end = f->end;
    uint32_t handle, id, ignored;
    bool has, has_id;
    uint32_t n = f->left; /* fields present; absent ones are null */
    if (n < 3 || !quick_uint(&q, end, &handle, &has) || !has)
        return 0;
    if (!quick_uint(&q, end, &id, &has_id) || !has_id)
        return 0;
    if (end - q < 2 || q[0] != 0xa0 || (size_t)(end - q) - 2 < q[1])
        return 0; /* the tag: vbin8 */
    q += 2u + q[1];
    if (n > 3 && !quick_uint(&q, end, &ignored, &has)) /* message-format */
        return 0;
    if (n > 4) {
        if (end - q < 1 || (q[0] != 0x40 && q[0] != 0x41 && q[0] != 0x42)) /* settled */
            return 0;
        q++;
    }
    if (n > 5 && (end - q < 1 || (q[0] != 0x40 && q[0] != 0x42))) /* more: aborted matters */
        return 0;
    uint64_t key = LINK_KEY(s->channel, handle);
    entry_t *link = s->cached;
    if (JN_UNLIKELY(!link || link->key != key || link->in_delivery || link->receiver))
        return 0;
    return 1;
}

static int check_transfer(jn_screen_t *s, fields_t *f)
{
    jn_value_t v;
    uint32_t at = 0, handle, id;
    bool has_handle, has_id, more = false, aborted = false;
    if (field_at(f, &at, 0, &v) || field_uint(&v, &handle, &has_handle) || !has_handle)
        return fail(s, INVALID, "transfer on channel %u has no valid handle", s->channel);
    entry_t *link = need_link(s, handle, "transfer");
    if (!link)
        return JN_EPROTO;
    if (link->receiver)
        return fail(s, ILLEGAL, "transfer on channel %u handle %u, a link the peer attached as receiver",
                    s->channel, handle);
    if (field_at(f, &at, 1, &v) || field_uint(&v, &id, &has_id))
        return fail(s, INVALID, "transfer on channel %u handle %u: delivery-id is not a uint",
                    s->channel, handle);
    if (field_at(f, &at, 2, &v))
        return fail(s, DECODE, "transfer on channel %u: undecodable delivery-tag", s->channel);
    bool has_tag = v.code != 0x40;
    if (field_at(f, &at, 5, &v) || field_bool(&v, &more))
        return fail(s, INVALID, "transfer on channel %u: undecodable fields", s->channel);
    if (link->in_delivery || more) {
        if (field_at(f, &at, 9, &v) || field_bool(&v, &aborted))
            return fail(s, INVALID, "transfer on channel %u: undecodable aborted field", s->channel);
    }
    if (!link->in_delivery) {
        if (!has_id)
            return fail(s, INVALID,
                        "transfer on channel %u handle %u starts a delivery without a delivery-id",
                        s->channel, handle);
        if (!has_tag)
            return fail(s, INVALID,
                        "transfer on channel %u handle %u starts a delivery without a delivery-tag",
                        s->channel, handle);
        if (more && !aborted) {
            link->in_delivery = true;
            link->delivery_id = id;
        }
        return 0;
    }
    if (has_id && id != link->delivery_id)
        return fail(s, INVALID,
                    "transfer on channel %u handle %u continues delivery %u with delivery-id %u",
                    s->channel, handle, link->delivery_id, id);
    if (!more || aborted)
        link->in_delivery = false;
    return 0;
}

static int check_attach(jn_screen_t *s, fields_t *f)
{
    jn_value_t v;
    uint32_t at = 0, handle;
    bool has_handle, receiver;
    if (need_session(s, "attach"))
        return JN_EPROTO;
    if (field_at(f, &at, 1, &v) || field_uint(&v, &handle, &has_handle) || !has_handle)
        return fail(s, INVALID, "attach on channel %u has no valid handle", s->channel);
    if (field_at(f, &at, 2, &v) || field_bool(&v, &receiver))
        return fail(s, INVALID, "attach on channel %u handle %u has no valid role", s->channel, handle);
    if (lookup(s, LINK_KEY(s->channel, handle)))
        return fail(s, "amqp:session:handle-in-use",
                    "attach on channel %u uses handle %u, which is already attached", s->channel,
                    handle);
    entry_t *e = insert(s, LINK_KEY(s->channel, handle));
    if (!e)
        return fail(s, "amqp:resource-limit-exceeded", "out of memory for link state");
    e->receiver = receiver;
    return 0;
}

/* flow and detach: a handle, when given, must be attached. */
static int check_handle(jn_screen_t *s, fields_t *f, uint32_t index, const char *what, bool erase_it)
{
    jn_value_t v;
    uint32_t at = 0, handle;
    bool has_handle;
    if (need_session(s, what))
        return JN_EPROTO;
    if (field_at(f, &at, index, &v) || field_uint(&v, &handle, &has_handle))
        return fail(s, INVALID, "%s on channel %u has an invalid handle", what, s->channel);
    if (!has_handle) {
        if (erase_it)
            return fail(s, INVALID, "%s on channel %u has no handle", what, s->channel);
        return 0;
    }
    entry_t *e = need_link(s, handle, what);
    if (!e)
        return JN_EPROTO;
    if (erase_it)
        erase(s, e);
    return 0;
}

/* A begin (channel checked): when it answers a session we began (its
 * remote-channel field, 2.7.2), that channel of ours must not have been
 * answered before on this connection. Proton maps every answer to the one
 * session: two answers give it two remote channels, and the peer's end on
 * one leaves the other pointing at a session the router then frees (the
 * next frame there is a use after free). The router begins sessions only
 * on the connector side of an inter-router connection, once each, when
 * the connection opens (io_mesh.c), so a second answer is never legal
 * here. An answer stays on record after the peer's end too: until the
 * router has handled that end (after the read that brought it), proton
 * still holds our channel and would map a new answer to the session the
 * router is about to free. The router begins sessions later in a
 * connection's life for link routes and auto-links (io_route.c): it calls
 * jn_screen_sessions_begun first, which forgets the answers whose session
 * the peer has ended, since the router has handled those ends by then. */
static int check_begin_reply(jn_screen_t *s, fields_t *f)
{
    jn_value_t v;
    uint32_t at = 0;
    if (field_at(f, &at, 0, &v) || v.described || (v.code != 0x40 && v.code != 0x60))
        return fail(s, INVALID, "begin on channel %u: remote-channel is not a ushort", s->channel);
    uint32_t answered = 0;
    if (v.code == 0x60) {
        uint16_t ours = (uint16_t)(v.data[0] << 8 | v.data[1]);
        if (lookup(s, KEY_REPLY | ours))
            return fail(s, ILLEGAL,
                        "begin on channel %u answers our channel %u, which an earlier begin answered",
                        s->channel, ours);
        if (!insert(s, KEY_REPLY | ours))
            return fail(s, "amqp:resource-limit-exceeded", "out of memory for session state");
        answered = 1u + ours;
    }
    entry_t *e = insert(s, KEY_SESSION | s->channel);
    if (!e)
        return fail(s, "amqp:resource-limit-exceeded", "out of memory for session state");
    e->delivery_id = answered;
    return 0;
}

void jn_screen_sessions_begun(jn_screen_t *s)
{
    for (uint32_t i = 0; i < s->cap; i++) {
        entry_t *e = &s->table[i];
        if ((e->key & KEY_REPLY) && e->delivery_id == 1) {
            erase(s, e);
            i = (uint32_t)-1; /* the shift may move an entry before i: again */
        }
    }
}

static int check_amqp(jn_screen_t *s, uint64_t code, fields_t *f)
{
    if (!s->open_seen && code != 0x10)
        return fail(s, ILLEGAL, "the first frame is not an open");
    switch (code) {
    case 0x14: return check_transfer(s, f);
    case 0x13: return check_handle(s, f, 4, "flow", false);
    case 0x15: return need_session(s, "disposition");
    case 0x10:
        if (s->open_seen)
            return fail(s, ILLEGAL, "a second open");
        s->open_seen = true;
        return 0;
    case 0x11:
        if (s->channel > s->channel_max)
            return fail(s, FRAMING, "begin on channel %u, above channel-max %u", s->channel,
                        s->channel_max);
        if (lookup(s, KEY_SESSION | s->channel))
            return fail(s, ILLEGAL, "begin on channel %u, which already has a session", s->channel);
        return check_begin_reply(s, f);
    case 0x12: return check_attach(s, f);
    case 0x16: return check_handle(s, f, 0, "detach", true);
    case 0x17: {
        entry_t *e = lookup(s, KEY_SESSION | s->channel);
        if (!e)
            return need_session(s, "end");
        uint32_t answered = e->delivery_id;
        erase(s, e);
        entry_t *r = answered ? lookup(s, KEY_REPLY | (answered - 1u)) : NULL;
        if (r)
            r->delivery_id = 1; /* ended: jn_screen_sessions_begun may forget it */
        if (rebuild(s, s->cap, s->channel) != 0)
            return fail(s, "amqp:resource-limit-exceeded", "out of memory for session state");
        return 0;
    }
    case 0x18:
        s->close_seen = true;
        return 0;
    default:
        return fail(s, DECODE, "unknown performative 0x%llx on channel %u",
                    (unsigned long long)code, s->channel);
    }
}

/* The first field of a SASL performative, which each of them requires
 * (5.3.3): its format code must be one of codes (0-terminated), and it
 * must decode within the frame. An array must hold symbols. */
static int sasl_first_field(jn_screen_t *s, fields_t *f, const uint8_t *codes, const char *what)
{
    jn_value_t v;
    if (f->left == 0 || f->p >= f->end)
        return fail(s, DECODE, "%s without its mandatory first field", what);
    uint8_t code = f->p[0];
    bool ok = false;
    for (const uint8_t *c = codes; *c; c++)
        ok = ok || code == *c;
    if (!ok)
        return fail(s, DECODE, "%s: first field has format code 0x%02x", what, code);
    if ((code == 0xe0 || code == 0xf0)) { /* an array: of symbols */
        size_t ctor = code == 0xe0 ? 3 : 9;
        if ((size_t)(f->end - f->p) <= ctor || (f->p[ctor] != 0xa3 && f->p[ctor] != 0xb3))
            return fail(s, DECODE, "%s: first field is not an array of symbols", what);
    }
    if (next_field(f, &v) != 0)
        return fail(s, DECODE, "%s: first field cannot be decoded", what);
    return 0;
}

static int check_sasl(jn_screen_t *s, uint64_t code, fields_t *f)
{
    static const uint8_t symbol[] = {0xa3, 0xb3, 0};
    static const uint8_t symbols[] = {0xa3, 0xb3, 0xe0, 0xf0, 0};
    static const uint8_t binary[] = {0xa0, 0xb0, 0};
    static const uint8_t ubyte[] = {0x50, 0};
    switch (s->sasl) {
    case SASL_START:
        if (code == 0x40) {
            s->sasl = SASL_MECHS_SEEN; /* the peer is the server */
            return sasl_first_field(s, f, symbols, "sasl-mechanisms");
        }
        if (code == 0x41) {
            s->sasl = SASL_INIT_SEEN; /* the peer is the client */
            return sasl_first_field(s, f, symbol, "sasl-init");
        }
        break;
    case SASL_INIT_SEEN:
        if (code == 0x43)
            return sasl_first_field(s, f, binary, "sasl-response");
        break;
    case SASL_MECHS_SEEN:
        if (code == 0x42)
            return sasl_first_field(s, f, binary, "sasl-challenge");
        if (code == 0x44) {
            s->sasl = SASL_DONE;
            return sasl_first_field(s, f, ubyte, "sasl-outcome");
        }
        break;
    default:
        break;
    }
    if (code < 0x40 || code > 0x44)
        return fail(s, DECODE, "unknown SASL performative 0x%llx", (unsigned long long)code);
    return fail(s, ILLEGAL, "SASL frame 0x%llx out of order", (unsigned long long)code);
}

/* Check the whole performative at p (len octets, fields from fields_at). */
static int check_perf(jn_screen_t *s, const uint8_t *p, uint32_t len, uint64_t code,
                      uint32_t fields_at, uint32_t count)
{
    fields_t f = {.p = p + fields_at, .end = p + len, .left = count};
    if (s->layer == LAYER_SASL)
        return check_sasl(s, code, &f);
    if (code == 0x14 && s->open_seen && quick_transfer(s, &f) == 1)
        return 0;
    return check_amqp(s, code, &f);
}

/* ---- the stream ------------------------------------------------------------------ */

/* A whole protocol header in s->head (2.2, 5.1). */
static int on_header(jn_screen_t *s)
{
    const uint8_t *h = s->head;
    s->head_len = 0;
    if (memcmp(h, "AMQP", 4) != 0 || h[5] != 1 || h[6] != 0 || h[7] != 0 ||
        (h[4] != 0 && h[4] != 3)) {
        /* not a header we speak: proton answers with its own and closes */
        s->stage = ST_PASS_NONE;
        return 0;
    }
    if (h[4] == 3) {
        if (s->layer != LAYER_NONE)
            return fail(s, ILLEGAL, "a second SASL protocol header");
        s->layer = LAYER_SASL;
    } else {
        if (s->layer == LAYER_SASL && s->sasl == SASL_START)
            return fail(s, ILLEGAL, "AMQP protocol header before any SASL frame");
        s->layer = LAYER_AMQP;
    }
    s->stage = ST_HEAD;
    return 0;
}

/* A whole frame header at h (8 octets: s->head, or the piece itself)
 * (2.3.1): check it and set up the frame. */
static inline int on_frame_head(jn_screen_t *s, const uint8_t *h)
{
    s->head_len = 0;
    if (s->layer == LAYER_SASL && memcmp(h, "AMQP", 4) == 0) {
        memcpy(s->head, h, 8);
        return on_header(s); /* the AMQP header after the SASL layer */
    }
    uint32_t size = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
    uint32_t doff = h[4];
    s->type = h[5];
    s->channel = (uint16_t)(h[6] << 8 | h[7]);
    if (size < 8)
        return fail(s, FRAMING, "frame size %u is below the minimum of 8", size);
    if (size > s->max_frame)
        return fail(s, FRAMING, "frame size %u is above max-frame-size %u", size, s->max_frame);
    if (doff < 2 || doff * 4 > size)
        return fail(s, FRAMING, "frame data offset %u does not fit frame size %u", doff, size);
    uint8_t want = s->layer == LAYER_SASL ? 1 : 0;
    if (s->type != want)
        return fail(s, FRAMING, "frame type %u in the %s layer", s->type,
                    want ? "SASL" : "AMQP");
    if (want == 0 && s->channel > s->channel_max)
        return fail(s, FRAMING, "frame on channel %u, above channel-max %u", s->channel,
                    s->channel_max);
    s->left = doff * 4 - 8;
    s->body = size - doff * 4;
    s->carry_len = 0;
    s->stage = s->left ? ST_EXT : s->body ? ST_PERF : ST_HEAD;
    return 0;
}

/* Gather up to n octets of a performative split between reads. */
static int carry_append(jn_screen_t *s, const uint8_t *p, uint32_t n)
{
    if (s->carry_len + n > s->carry_cap) {
        uint32_t cap = s->carry_cap ? s->carry_cap : 256;
        while (cap < s->carry_len + n)
            cap *= 2;
        uint8_t *c = realloc(s->carry, cap);
        if (!c)
            return fail(s, "amqp:resource-limit-exceeded", "out of memory for a performative");
        s->carry = c;
        s->carry_cap = cap;
    }
    memcpy(s->carry + s->carry_len, p, n);
    s->carry_len += n;
    return 0;
}

/* After a performative: on to the payload, the next frame, or the end. */
static void perf_done(jn_screen_t *s)
{
    s->carry_len = 0;
    if (s->body)
        s->stage = ST_PAYLOAD;
    else
        s->stage = s->close_seen ? ST_PASS_NONE : ST_HEAD;
}

/* The performative stage over [*pp, end). Returns 0 or JN_EPROTO. */
static int perf_stage(jn_screen_t *s, const uint8_t **pp, const uint8_t *end)
{
    const uint8_t *p = *pp;
    uint32_t avail = (uint32_t)(end - p) < s->body ? (uint32_t)(end - p) : s->body;
    uint64_t code = 0;
    uint32_t fields_at = 0, count = 0;
    if (s->carry_len == 0) {
        long len = perf_extent(s, p, avail, s->body, &code, &fields_at, &count);
        if (len < 0)
            return JN_EPROTO;
        if (len > 0 && (uint32_t)len <= avail) { /* in place: the common case */
            if (check_perf(s, p, (uint32_t)len, code, fields_at, count) != 0)
                return JN_EPROTO;
            s->body -= (uint32_t)len;
            *pp = p + len;
            perf_done(s);
            return 0;
        }
    }
    /* split: gather what is known to belong to it (or its first octets) */
    uint32_t total = s->carry_len + s->body;
    long len = s->carry_len ? perf_extent(s, s->carry, s->carry_len, total, &code, &fields_at,
                                          &count)
                            : 0;
    if (len < 0)
        return JN_EPROTO;
    uint32_t want = len > 0 ? (uint32_t)len - s->carry_len
                            : (s->body < 16 ? s->body : 16);
    uint32_t n = avail < want ? avail : want;
    if (carry_append(s, p, n) != 0)
        return JN_EPROTO;
    s->body -= n;
    *pp = p + n;
    len = perf_extent(s, s->carry, s->carry_len, total, &code, &fields_at, &count);
    if (len < 0)
        return JN_EPROTO;
    if (len > 0 && (uint32_t)len <= s->carry_len) {
        if (check_perf(s, s->carry, (uint32_t)len, code, fields_at, count) != 0)
            return JN_EPROTO;
        perf_done(s);
    } else if (s->body == 0) {
        return fail(s, DECODE, "performative on channel %u overruns its frame", s->channel);
    }
    return 0;
}

/* Gather the 8 octets of a header into s->head; true when whole. */
static bool gather_head(jn_screen_t *s, const uint8_t **pp, const uint8_t *end)
{
    uint32_t n = 8u - s->head_len;
    if ((uint32_t)(end - *pp) < n)
        n = (uint32_t)(end - *pp);
    memcpy(s->head + s->head_len, *pp, n);
    s->head_len = (uint8_t)(s->head_len + n);
    *pp += n;
    return s->head_len == 8;
}

/* Hot path: a whole transfer frame header and performative at *pp, in the
 * AMQP layer, with doff 2 and a list8 performative, as every client sends
 * them: checked in one sequence, its payload skipped. Returns false, with
 * nothing changed, to leave the frame to the general stages. */
static inline bool quick_frame(jn_screen_t *s, const uint8_t **pp, const uint8_t *end)
{
    const uint8_t *p = *pp;
    size_t avail = (size_t)(end - p);
    if (avail < 14 || p[4] != 2 || p[5] != 0 || p[8] != 0x00 || p[9] != 0x53 || p[10] != 0x14 ||
        p[11] != 0xc0 || p[12] < 1)
        return false;
    uint32_t size = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    uint32_t perf_end = 13u + p[12]; /* octets from the frame's start */
    uint16_t channel = (uint16_t)(p[6] << 8 | p[7]);
    if (size > s->max_frame || perf_end > size || perf_end > avail || channel > s->channel_max ||
        !s->open_seen)
        return false;
    fields_t f = {.p = p + 14, .end = p + perf_end, .left = p[13]};
    s->channel = channel;
    if (quick_transfer(s, &f) != 1)
        return false;
    if (size <= avail) {
        *pp = p + size; /* the next frame */
        return true;
    }
    s->body = size - (uint32_t)avail; /* payload continues in the next piece */
    s->stage = ST_PAYLOAD;
    *pp = end;
    return true;
}

int jn_screen_feed(jn_screen_t *s, const uint8_t *data, size_t len, size_t *passed)
{
    const uint8_t *p = data, *end = data + len;
    const uint8_t *frame = data; /* where the current frame began in this piece */
    int rc = 0;
    while (p < end && rc == 0) {
        /* Hot path: a whole frame header in this piece (the usual case in a
         * flow of transfers) is read where it lies. */
        if (s->stage == ST_HEAD && s->head_len == 0 && end - p >= 8) {
            frame = p;
            if (s->layer == LAYER_AMQP && quick_frame(s, &p, end))
                continue;
            p += 8;
            rc = on_frame_head(s, frame);
            continue;
        }
        switch (s->stage) {
        case ST_HEAD:
        case ST_HEADER:
            if (s->head_len == 0)
                frame = p; /* a frame (or header) starts in this piece */
            if (gather_head(s, &p, end))
                rc = s->stage == ST_HEAD ? on_frame_head(s, s->head) : on_header(s);
            break;
        case ST_EXT:
        case ST_PAYLOAD: {
            uint32_t *left = s->stage == ST_EXT ? &s->left : &s->body;
            uint32_t n = (uint32_t)(end - p) < *left ? (uint32_t)(end - p) : *left;
            p += n;
            *left -= n;
            if (*left == 0) {
                if (s->stage == ST_EXT)
                    s->stage = s->body ? ST_PERF : ST_HEAD;
                else
                    s->stage = s->close_seen ? ST_PASS_NONE : ST_HEAD;
            }
            break;
        }
        case ST_PERF:
            rc = perf_stage(s, &p, end);
            break;
        case ST_PASS_NONE:
            *passed = (size_t)(p - data);
            return 0;
        default: /* ST_FAILED */
            *passed = 0;
            return JN_EPROTO;
        }
    }
    if (rc != 0) {
        *passed = (size_t)(frame - data);
        return rc;
    }
    if (s->stage == ST_PASS_NONE && p < end) {
        *passed = (size_t)(p - data);
        return 0;
    }
    *passed = len;
    return 0;
}

jn_screen_t *jn_screen_new(uint32_t max_frame, uint16_t channel_max)
{
    jn_screen_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cap = 16;
    s->table = calloc(s->cap, sizeof *s->table);
    if (!s->table) {
        free(s);
        return NULL;
    }
    s->max_frame = max_frame < 512 ? 512 : max_frame;
    s->channel_max = channel_max;
    s->stage = ST_HEADER;
    return s;
}

void jn_screen_free(jn_screen_t *s)
{
    if (!s)
        return;
    free(s->table);
    free(s->carry);
    free(s);
}

const char *jn_screen_condition(const jn_screen_t *s)
{
    return s->condition;
}

const char *jn_screen_description(const jn_screen_t *s)
{
    return s->condition ? s->description : "";
}

bool jn_screen_in_sasl(const jn_screen_t *s)
{
    return s->failed_in_sasl;
}
