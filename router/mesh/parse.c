/*
 * parse.c — reading the six control messages of the routing protocol
 * (docs/protocol.md, "The mesh": "Control messages") into a jn_mesh_msg_t.
 *
 * Tolerant where 1.19 is: map keys may be str or sym, integers may come in
 * any AMQP integer type and width, lists and maps in any of their forms
 * (list0/list8/list32, map8/map32), string values as str or sym, unknown
 * keys are skipped and `area` is ignored. Strict where 1.19's Python engine
 * is: an array where a list is required, a boolean (or any non-integer)
 * where an integer is required, or a missing required field makes the
 * message malformed (JN_EPROTO, with a reason for the log).
 *
 * The opcode comes from application-properties key `opcode`; the body is
 * the first amqp-value section, which must hold a map. Core thread.
 */
#include "mesh_private.h"

#include <junction/decoder.h>

#include <stdlib.h>
#include <string.h>

/* Fields seen, for the required-field checks. */
enum {
    HAVE_ID = 1 << 0,
    HAVE_SEEN = 1 << 1,
    HAVE_LS_SEQ = 1 << 2,
    HAVE_MOBILE_SEQ = 1 << 3,
    HAVE_LS = 1 << 4,
    HAVE_HAVE_SEQ = 1 << 5,
    HAVE_HINTS = 1 << 6
};

typedef struct parse {
    jn_mesh_msg_t *m;
    unsigned have;
    const char *reason;
} parse_t;

static int fail(parse_t *p, const char *reason)
{
    if (!p->reason)
        p->reason = reason;
    return JN_EPROTO;
}

static bool is_string(const jn_field_t *f)
{
    return f->type == JN_TYPE_STRING || f->type == JN_TYPE_SYMBOL;
}

/* Copy a str/sym value into a list (val as given). */
static int add_string(parse_t *p, jn_mesh_strs_t *l, const jn_field_t *f, int64_t val)
{
    char small[256];
    char *buf = f->size <= sizeof small ? small : malloc(f->size);
    if (!buf)
        return JN_ENOMEM;
    jn_iter_t it = f->payload;
    size_t n = jn_iter_copy(&it, buf, f->size);
    int rc = jn_mesh_strs_add(l, buf, n, val);
    if (buf != small)
        free(buf);
    return rc;
}

/* A router id value: str/sym, 1..127 octets. */
static int read_id(parse_t *p, const jn_field_t *f, char *dst, size_t *len)
{
    if (!is_string(f))
        return fail(p, "id is not a string");
    if (f->size == 0 || f->size > JN_MESH_ID_MAX)
        return fail(p, "id is empty or longer than 127 octets");
    jn_iter_t it = f->payload;
    *len = jn_iter_copy(&it, dst, f->size);
    dst[*len] = '\0';
    return 0;
}

static int read_int(parse_t *p, const jn_field_t *f, int64_t *out, const char *what)
{
    if (!jn_field_is_integer(f) || jn_field_to_int64(f, out) != 0)
        return fail(p, what);
    return 0;
}

static int read_seq(parse_t *p, const jn_field_t *f, uint64_t *out, const char *what)
{
    if (!jn_field_is_integer(f) || jn_field_to_uint64(f, out) != 0)
        return fail(p, what);
    return 0;
}

/* Enter a list (not an array) value. */
static int enter_list(parse_t *p, const jn_decoder_t *d, const jn_field_t *f, jn_decoder_t *child,
                      const char *what)
{
    if (f->type != JN_TYPE_LIST || jn_decoder_enter(d, f, child) != 0)
        return fail(p, what);
    return 0;
}

/* A list of str/sym into l (val -1). */
static int read_string_list(parse_t *p, const jn_decoder_t *d, const jn_field_t *f,
                            jn_mesh_strs_t *l, const char *what)
{
    jn_decoder_t c;
    int rc = enter_list(p, d, f, &c, what);
    jn_field_t e;
    while (rc == 0 && (rc = jn_decoder_next(&c, &e)) == 1) {
        rc = is_string(&e) ? add_string(p, l, &e, -1) : fail(p, what);
    }
    return rc < 0 ? (rc == JN_ENOMEM ? rc : fail(p, what)) : 0;
}

/* MAU hints: a list of integers (anything else in it counts as no hint). */
static int read_hints(parse_t *p, const jn_decoder_t *d, const jn_field_t *f)
{
    jn_decoder_t c;
    int rc = enter_list(p, d, f, &c, "hints is not a list");
    if (rc != 0)
        return rc;
    jn_mesh_msg_t *m = p->m;
    free(m->hints);
    m->hints = f->count ? calloc(f->count, sizeof *m->hints) : NULL;
    m->n_hints = 0;
    if (f->count && !m->hints)
        return JN_ENOMEM;
    jn_field_t e;
    while ((rc = jn_decoder_next(&c, &e)) == 1 && m->n_hints < f->count) {
        int64_t h = -1;
        if (!jn_field_is_integer(&e) || jn_field_to_int64(&e, &h) != 0 || h < 0 ||
            h > JN_MESH_HINT_UNAVAILABLE)
            h = -1;
        m->hints[m->n_hints++] = h;
    }
    if (rc < 0)
        return fail(p, "hints list is malformed");
    p->have |= HAVE_HINTS;
    return 0;
}

/* LSU ls.peers: map of id -> integer cost. */
static int read_peers(parse_t *p, const jn_decoder_t *d, const jn_field_t *f)
{
    jn_decoder_t c;
    if (f->type != JN_TYPE_MAP || jn_decoder_enter(d, f, &c) != 0)
        return fail(p, "ls.peers is not a map");
    jn_field_t k, v;
    int rc;
    while ((rc = jn_decoder_next(&c, &k)) == 1) {
        if (jn_decoder_next(&c, &v) != 1)
            return fail(p, "ls.peers is malformed");
        int64_t cost;
        if (!is_string(&k) || k.size == 0 || k.size > JN_MESH_ID_MAX)
            return fail(p, "ls.peers has a key that is not a router id");
        if (read_int(p, &v, &cost, "ls.peers has a cost that is not an integer") != 0)
            return JN_EPROTO;
        if (cost < 0 || cost > INT32_MAX)
            return fail(p, "ls.peers has a cost out of range");
        if ((rc = add_string(p, &p->m->peers, &k, cost)) != 0)
            return rc;
    }
    return rc < 0 ? fail(p, "ls.peers is malformed") : 0;
}

/* Copy a key (str/sym, short) as a C string; "" for anything else. */
static void key_name(const jn_field_t *k, char *dst, size_t cap)
{
    dst[0] = '\0';
    if (!is_string(k) || k->size >= cap)
        return;
    jn_iter_t it = k->payload;
    size_t n = jn_iter_copy(&it, dst, k->size);
    dst[n] = '\0';
}

/* LSU's inner ls map. */
static int read_ls(parse_t *p, const jn_decoder_t *d, const jn_field_t *f)
{
    jn_decoder_t c;
    if (f->type != JN_TYPE_MAP || jn_decoder_enter(d, f, &c) != 0)
        return fail(p, "ls is not a map");
    unsigned have = 0;
    jn_field_t k, v;
    int rc;
    while ((rc = jn_decoder_next(&c, &k)) == 1) {
        if (jn_decoder_next(&c, &v) != 1)
            return fail(p, "ls is malformed");
        char name[16], idbuf[JN_MESH_ID_MAX + 1];
        size_t idlen;
        key_name(&k, name, sizeof name);
        rc = 0;
        if (strcmp(name, "id") == 0) {
            have |= 1;
            rc = read_id(p, &v, idbuf, &idlen);
        } else if (strcmp(name, "ls_seq") == 0) {
            have |= 2;
            rc = read_seq(p, &v, &p->m->ls_inner_seq, "ls.ls_seq is not an integer");
        } else if (strcmp(name, "peers") == 0) {
            have |= 4;
            rc = read_peers(p, &c, &v);
        }
        if (rc != 0)
            return rc;
    }
    if (rc < 0)
        return fail(p, "ls is malformed");
    if (have != 7)
        return fail(p, "ls lacks id, ls_seq or peers");
    p->have |= HAVE_LS;
    return 0;
}

/* MAU add, del or exist (other names are skipped). */
static int read_key_list(parse_t *p, const jn_decoder_t *d, const char *name, const jn_field_t *v)
{
    jn_mesh_msg_t *m = p->m;
    if (strcmp(name, "add") == 0) {
        m->has_add = true;
        return read_string_list(p, d, v, &m->add, "add is not a list of strings");
    }
    if (strcmp(name, "del") == 0) {
        m->has_del = true;
        return read_string_list(p, d, v, &m->del, "del is not a list of strings");
    }
    if (strcmp(name, "exist") == 0) {
        m->has_exist = true;
        return read_string_list(p, d, v, &m->exist, "exist is not a list of strings");
    }
    return 0;
}

/* One body entry; unknown keys (and keys of other opcodes) are skipped. */
static int read_entry(parse_t *p, const jn_decoder_t *d, const jn_field_t *k, const jn_field_t *v)
{
    jn_mesh_msg_t *m = p->m;
    char name[16];
    key_name(k, name, sizeof name);
    if (v->type == JN_TYPE_NULL && strcmp(name, "id") != 0)
        return 0; /* a null optional field is absent; required ones fail below */
    if (strcmp(name, "id") == 0) {
        p->have |= HAVE_ID;
        return read_id(p, v, m->id, &m->id_len);
    }
    if (strcmp(name, "pv") == 0)
        return read_int(p, v, &m->pv, "pv is not an integer");
    if (strcmp(name, "instance") == 0)
        return read_int(p, v, &m->instance, "instance is not an integer");
    switch (m->op) {
    case JN_MESH_OP_HELLO:
        if (strcmp(name, "seen") == 0) {
            p->have |= HAVE_SEEN;
            return read_string_list(p, d, v, &m->seen, "seen is not a list of strings");
        }
        break;
    case JN_MESH_OP_RA:
    case JN_MESH_OP_LSU:
    case JN_MESH_OP_MAU:
        if (strcmp(name, "ls_seq") == 0 && m->op != JN_MESH_OP_MAU) {
            p->have |= HAVE_LS_SEQ;
            return read_seq(p, v, &m->ls_seq, "ls_seq is not an integer");
        }
        if (strcmp(name, "mobile_seq") == 0 && m->op != JN_MESH_OP_LSU) {
            p->have |= HAVE_MOBILE_SEQ;
            return read_seq(p, v, &m->mobile_seq, "mobile_seq is not an integer");
        }
        if (strcmp(name, "ls") == 0 && m->op == JN_MESH_OP_LSU)
            return read_ls(p, d, v);
        if (m->op != JN_MESH_OP_MAU)
            break;
        if (strcmp(name, "hints") == 0)
            return read_hints(p, d, v);
        return read_key_list(p, d, name, v);
    case JN_MESH_OP_MAR:
        if (strcmp(name, "have_seq") == 0) {
            p->have |= HAVE_HAVE_SEQ;
            return read_seq(p, v, &m->have_seq, "have_seq is not an integer");
        }
        break;
    default:
        break;
    }
    return 0;
}

/* The first value of a section: a described value with the given
 * descriptor that is a map; *child enters it. */
static int enter_section_map(parse_t *p, const jn_iter_t *section, uint64_t descriptor,
                             jn_decoder_t *child, const char *what)
{
    jn_decoder_t d;
    jn_field_t f;
    jn_decoder_init(&d, section, true);
    if (jn_decoder_next(&d, &f) != 1 || !f.described || f.descriptor_is_symbol ||
        f.descriptor_code != descriptor || f.type != JN_TYPE_MAP ||
        jn_decoder_enter(&d, &f, child) != 0)
        return fail(p, what);
    return 0;
}

static int read_opcode(parse_t *p, jn_message_t *msg)
{
    static const char *const names[] = {"", "HELLO", "RA", "LSR", "LSU", "MAU", "MAR"};
    jn_iter_t sec;
    jn_decoder_t c;
    if (jn_message_section(msg, JN_SEC_APPLICATION_PROPERTIES, &sec) != 0)
        return fail(p, "no application-properties (opcode)");
    if (enter_section_map(p, &sec, JN_SECTION_APPLICATION_PROPERTIES, &c,
                          "application-properties is not a map") != 0)
        return JN_EPROTO;
    jn_field_t k, v;
    int rc;
    while ((rc = jn_decoder_next(&c, &k)) == 1) {
        if (jn_decoder_next(&c, &v) != 1)
            return fail(p, "application-properties is malformed");
        if (!jn_field_equal_string(&k, "opcode"))
            continue;
        if (!is_string(&v))
            return fail(p, "opcode is not a string");
        for (size_t i = 1; i < sizeof names / sizeof names[0]; i++)
            if (jn_field_equal_string(&v, names[i]))
                p->m->op = (jn_mesh_op_t)i;
        return 0;
    }
    return fail(p, rc < 0 ? "application-properties is malformed" : "no opcode");
}

/* Required fields per opcode, and the MAU shape ("Control messages"). */
static int check_complete(parse_t *p)
{
    static const unsigned need[] = {
        [JN_MESH_OP_HELLO] = HAVE_ID | HAVE_SEEN,
        [JN_MESH_OP_RA] = HAVE_ID | HAVE_LS_SEQ | HAVE_MOBILE_SEQ,
        [JN_MESH_OP_LSR] = HAVE_ID,
        [JN_MESH_OP_LSU] = HAVE_ID | HAVE_LS_SEQ | HAVE_LS,
        [JN_MESH_OP_MAU] = HAVE_ID | HAVE_MOBILE_SEQ,
        [JN_MESH_OP_MAR] = HAVE_ID | HAVE_HAVE_SEQ,
    };
    jn_mesh_msg_t *m = p->m;
    if ((p->have & need[m->op]) != need[m->op])
        return fail(p, (p->have & HAVE_ID) ? "a required field is missing" : "id is missing");
    if (m->op != JN_MESH_OP_MAU)
        return 0;
    bool absolute = m->has_exist && !m->has_add && !m->has_del;
    bool differential = !m->has_exist && m->has_add && m->has_del;
    if (!absolute && !differential)
        return fail(p, "MAU must have either exist, or both add and del");
    jn_mesh_strs_t *keys = absolute ? &m->exist : &m->add;
    bool use = (p->have & HAVE_HINTS) && m->n_hints == keys->n;
    for (size_t i = 0; i < keys->n; i++)
        keys->val[i] = use ? m->hints[i] : -1;
    return 0;
}

int jn_mesh_parse(jn_message_t *msg, jn_mesh_msg_t *out, const char **reason)
{
    memset(out, 0, sizeof *out);
    parse_t p = {.m = out};
    *reason = NULL;
    int rc = jn_message_parse(msg, JN_DEPTH_ALL);
    if (rc != 0) {
        const char *why = jn_message_error(msg);
        *reason = why ? why : "message is incomplete";
        return JN_EPROTO;
    }
    if (read_opcode(&p, msg) != 0) {
        *reason = p.reason;
        return JN_EPROTO;
    }
    if (out->op == JN_MESH_OP_UNKNOWN)
        return 0;
    jn_iter_t sec;
    jn_decoder_t body;
    if (jn_message_section(msg, JN_SEC_BODY, &sec) != 0) {
        *reason = "no body";
        return JN_EPROTO;
    }
    if (enter_section_map(&p, &sec, JN_SECTION_AMQP_VALUE, &body, "body is not an amqp-value map"))
        rc = JN_EPROTO;
    jn_field_t k, v;
    while (rc == 0 && (rc = jn_decoder_next(&body, &k)) == 1) {
        if (jn_decoder_next(&body, &v) != 1)
            rc = fail(&p, "body map is malformed");
        else
            rc = read_entry(&p, &body, &k, &v);
    }
    if (rc < 0 && rc != JN_ENOMEM)
        rc = fail(&p, "body map is malformed");
    if (rc == 0)
        rc = check_complete(&p);
    *reason = p.reason ? p.reason : (rc == JN_ENOMEM ? "out of memory" : NULL);
    return rc;
}

void jn_mesh_msg_fini(jn_mesh_msg_t *m)
{
    jn_mesh_strs_free(&m->seen);
    jn_mesh_strs_free(&m->peers);
    jn_mesh_strs_free(&m->add);
    jn_mesh_strs_free(&m->del);
    jn_mesh_strs_free(&m->exist);
    free(m->hints);
    m->hints = NULL;
    m->n_hints = 0;
}
