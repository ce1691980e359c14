/*
 * input_path_known.h — for fuzz_input_path.c built with JN_FUZZ_SKIP_KNOWN
 * only: recognise the inputs that reach an abort we already know (listed in
 * tests/fuzz/input_path-findings.md), so that a fuzzing session
 * skips them and goes on to find the next, different abort. It is not the
 * frame screen (junction/screen.h, which refuses all of them in junctiond
 * and in this harness); it is deliberately rough: a
 * walk over the peer's octets, frame by frame, that understands only the
 * few fields the known classes depend on.
 *
 * Known classes:
 *   JN_KNOWN_TRANSFER_NO_ID: a transfer that starts a new delivery on its
 *     link (no multi-frame delivery in progress there: none begun, or the
 *     last one ended by more=false or aborted=true) with more=true and no
 *     delivery-id: proton 0.37 asserts 'id_present' in pn_do_transfer.
 *   JN_KNOWN_SASL_MECH_NOT_SYMBOL: on an incoming connection whose
 *     listener does not restrict the mechanisms (control bit 5 clear), a
 *     sasl-init in a SASL frame (also after a plain AMQP header) whose
 *     mechanism is not a symbol that fits in the frame (absent, null,
 *     another type, cut short): proton 0.37's SASL server compares a NULL
 *     mechanism name (strcmp, SEGV).
 *   JN_KNOWN_OPEN_TWICE: a second open frame (in a later read than the
 *     first): proton raises PN_CONNECTION_REMOTE_OPEN again, and
 *     io_conn.c's on_remote_open reports the connection to the core a
 *     second time; the first core connection is never closed, so the
 *     io_conn (and its links) are never freed — the harness's "not freed
 *     after it closed" check.
 *   JN_KNOWN_SASL_INIT_TWICE: on an incoming connection a second
 *     sasl-init, on an outgoing one a second sasl-mechanisms, in a SASL
 *     frame (seen: after the peer's AMQP header): proton 0.37 sets the
 *     selected mechanism again (pnx_sasl_set_selected_mechanism) and leaks
 *     the first name (10 octets for "ANONYMOUS"), which the leak check
 *     reports.
 *
 * Single-threaded, no allocation: state lives in a jn_known_t on the
 * caller's stack.
 */
#ifndef JN_FUZZ_INPUT_PATH_KNOWN_H
#define JN_FUZZ_INPUT_PATH_KNOWN_H 1

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum {
    JN_KNOWN_NONE = 0,
    JN_KNOWN_TRANSFER_NO_ID,
    JN_KNOWN_SASL_MECH_NOT_SYMBOL,
    JN_KNOWN_SASL_INIT_TWICE,
    JN_KNOWN_OPEN_TWICE
} jn_known_class_t;

/* Links (channel, handle) whose multi-frame delivery is in progress. */
#define JN_KNOWN_LINKS 64

typedef struct {
    struct {
        uint16_t channel;
        uint32_t handle;
        bool used, more_pending;
    } links[JN_KNOWN_LINKS];
    unsigned opens;
} jn_known_t;

/* A cursor over one frame body. */
typedef struct {
    const uint8_t *p, *end;
    bool bad;
} jn_known_cur_t;

static inline uint32_t jn_known_be(const uint8_t *p, size_t n)
{
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

static inline bool jn_known_take(jn_known_cur_t *c, size_t n, const uint8_t **out)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = true;
        return false;
    }
    if (out)
        *out = c->p;
    c->p += n;
    return true;
}

/* Skip one encoded value; *code gets its constructor (0x00: described). */
static inline void jn_known_skip(jn_known_cur_t *c, uint8_t *code, int depth)
{
    const uint8_t *b;
    if (depth > 8 || !jn_known_take(c, 1, &b)) {
        c->bad = true;
        return;
    }
    *code = b[0];
    if (b[0] == 0x00) { /* descriptor, then the value */
        uint8_t ignored;
        jn_known_skip(c, &ignored, depth + 1);
        jn_known_skip(c, &ignored, depth + 1);
        return;
    }
    static const size_t fixed[6] = {0, 1, 2, 4, 8, 16}; /* 0x4_ .. 0x9_ */
    unsigned hi = b[0] >> 4;
    if (hi >= 4 && hi <= 9) {
        jn_known_take(c, fixed[hi - 4], NULL);
        return;
    }
    size_t width = (hi == 0xa || hi == 0xc || hi == 0xe) ? 1 : 4;
    if (hi < 0xa || !jn_known_take(c, width, &b)) {
        c->bad = true;
        return;
    }
    jn_known_take(c, jn_known_be(b, width), NULL);
}

/* Read a uint field: true when present, value in *v. As proton's
 * decoder, a value of another type (or null) counts as absent. */
static inline bool jn_known_uint(jn_known_cur_t *c, uint32_t *v)
{
    const uint8_t *at = c->p;
    uint8_t code;
    jn_known_skip(c, &code, 0);
    if (c->bad || (code != 0x43 && code != 0x52 && code != 0x70))
        return false;
    *v = code == 0x52 ? at[1] : code == 0x70 ? jn_known_be(at + 1, 4) : 0;
    return true;
}

/* Read a boolean field (null: false). */
static inline bool jn_known_bool(jn_known_cur_t *c)
{
    const uint8_t *at = c->p;
    uint8_t code;
    jn_known_skip(c, &code, 0);
    return !c->bad && (code == 0x41 || (code == 0x56 && at[1] != 0));
}

static inline bool *jn_known_link(jn_known_t *k, uint16_t channel, uint32_t handle)
{
    for (size_t i = 0; i < JN_KNOWN_LINKS; i++) {
        if (!k->links[i].used) {
            k->links[i].used = true;
            k->links[i].channel = channel;
            k->links[i].handle = handle;
            return &k->links[i].more_pending;
        }
        if (k->links[i].channel == channel && k->links[i].handle == handle)
            return &k->links[i].more_pending;
    }
    static bool spare;
    spare = false;
    return &spare;
}

/* One AMQP frame body on channel: the class it falls in, if any. */
static inline jn_known_class_t jn_known_frame(jn_known_t *k, uint16_t channel, const uint8_t *body,
                                              size_t len)
{
    jn_known_cur_t c = {body, body + len, false};
    const uint8_t *b;
    /* a described list whose descriptor is the ulong 0x14 (transfer) */
    if (!jn_known_take(&c, 2, &b) || b[0] != 0x00)
        return JN_KNOWN_NONE;
    uint64_t code = UINT64_MAX;
    if (b[1] == 0x53 && jn_known_take(&c, 1, &b))
        code = b[0];
    else if (b[1] == 0x80 && jn_known_take(&c, 8, &b))
        code = ((uint64_t)jn_known_be(b, 4) << 32) | jn_known_be(b + 4, 4);
    if (code == 0x10 && ++k->opens == 2)
        return JN_KNOWN_OPEN_TWICE;
    if (code != 0x14)
        return JN_KNOWN_NONE;
    uint8_t list;
    if (!jn_known_take(&c, 1, &b))
        return JN_KNOWN_NONE;
    list = b[0];
    size_t head = list == 0xc0 ? 2 : list == 0xd0 ? 8 : 0;
    if (head == 0 || !jn_known_take(&c, head, NULL))
        return JN_KNOWN_NONE;
    uint32_t handle = 0, id = 0;
    jn_known_uint(&c, &handle);
    bool id_present = jn_known_uint(&c, &id);
    uint8_t ignored;
    for (int i = 0; i < 3; i++) /* tag, message-format, settled */
        jn_known_skip(&c, &ignored, 0);
    bool more = jn_known_bool(&c);
    for (int i = 0; i < 3; i++) /* rcv-settle-mode, state, resume */
        jn_known_skip(&c, &ignored, 0);
    bool aborted = jn_known_bool(&c);
    bool *pending = jn_known_link(k, channel, handle);
    if (!*pending && more && !id_present)
        return JN_KNOWN_TRANSFER_NO_ID;
    *pending = more && !aborted;
    return JN_KNOWN_NONE;
}

/* One SASL frame body: a sasl-init (0x41) whose mechanism is not a
 * symbol? */
/* Is the frame body the SASL performative with descriptor code? */
static inline bool jn_known_is_sasl(const uint8_t *body, size_t len, uint8_t code)
{
    return len >= 3 && body[0] == 0x00 && body[1] == 0x53 && body[2] == code;
}

static inline bool jn_known_is_sasl_init(const uint8_t *body, size_t len)
{
    return jn_known_is_sasl(body, len, 0x41);
}

static inline bool jn_known_sasl_init_bad(const uint8_t *body, size_t len)
{
    jn_known_cur_t c = {body, body + len, false};
    const uint8_t *b;
    if (!jn_known_is_sasl_init(body, len) || !jn_known_take(&c, 3, &b))
        return false;
    if (!jn_known_take(&c, 1, &b))
        return false;
    if (b[0] == 0x45)
        return true; /* an empty list: no mechanism */
    size_t head = b[0] == 0xc0 ? 2 : b[0] == 0xd0 ? 8 : 0;
    if (head == 0 || !jn_known_take(&c, head, &b))
        return true; /* not a list proton can read: no mechanism */
    if (jn_known_be(b + head / 2, head / 2) == 0)
        return true;                          /* no fields */
    size_t inside = jn_known_be(b, head / 2); /* the count and the fields */
    if (inside < head / 2 || inside - head / 2 > (size_t)(c.end - c.p))
        return true;                   /* a list longer than its frame */
    c.end = c.p + (inside - head / 2); /* the mechanism must fit in the list */
    /* a symbol, whole inside the frame */
    uint8_t code;
    jn_known_skip(&c, &code, 0);
    return c.bad || (code != 0xa3 && code != 0xb3);
}

/* The known class the peer's octets fall in, or JN_KNOWN_NONE; control is
 * the input's control octet (fuzz_input_path.c). */
static inline jn_known_class_t jn_known_input(uint8_t control, const uint8_t *data, size_t len)
{
    bool incoming = !(control & 0x08);
    bool unrestricted_listener = incoming && !(control & 0x20);
    unsigned sasl_inits = 0;
    jn_known_t k;
    memset(&k, 0, sizeof k);
    size_t at = 0;
    while (at < len) {
        if (len - at >= 8 && memcmp(data + at, "AMQP", 4) == 0) {
            at += 8; /* a protocol header (AMQP or SASL) */
            continue;
        }
        if (len - at < 8)
            break;
        uint32_t size = jn_known_be(data + at, 4);
        size_t doff = (size_t)data[at + 4] * 4;
        if (size < 8 || size > len - at || doff < 8 || doff > size)
            break;
        if (unrestricted_listener && data[at + 5] == 1 &&
            jn_known_sasl_init_bad(data + at + doff, size - doff))
            return JN_KNOWN_SASL_MECH_NOT_SYMBOL;
        /* the client's sasl-init, or the server's sasl-mechanisms */
        if (data[at + 5] == 1 &&
            jn_known_is_sasl(data + at + doff, size - doff, incoming ? 0x41 : 0x40) &&
            ++sasl_inits == 2)
            return JN_KNOWN_SASL_INIT_TWICE;
        if (data[at + 5] == 0 && size > doff) { /* an AMQP frame (not a heartbeat) */
            jn_known_class_t kc = jn_known_frame(&k, (uint16_t)jn_known_be(data + at + 6, 2),
                                                 data + at + doff, size - doff);
            if (kc != JN_KNOWN_NONE)
                return kc;
        }
        at += size;
    }
    return JN_KNOWN_NONE;
}

#endif
