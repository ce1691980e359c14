/*
 * io_mesh.c — what the I/O layer does differently on an inter-router
 * connection (docs/protocol.md, "The mesh": "Inter-router connections"): read the peer's
 * cost, attach the standard links on the connector side, and classify the
 * links the peer attaches. Everything else (HELLO, routing) is the core's.
 *
 * Link names are "qdlink." followed by 15 characters from [a-zA-Z0-9+_], as
 * 1.19 names them; they only need to be unique per connection.
 */
#include "io_private.h"

#include <proton/codec.h>

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define CAP_CONTROL "qd.router"
#define CAP_DATA    "qd.router-data"

uint32_t jn_io_ir_remote_cost(pn_connection_t *pc)
{
    return jn_io_ir_props_cost(pn_connection_remote_properties(pc));
}

uint32_t jn_io_ir_props_cost(pn_data_t *props)
{
    if (!props)
        return 0;
    pn_data_rewind(props);
    if (!pn_data_next(props) || pn_data_type(props) != PN_MAP)
        return 0;
    size_t n = pn_data_get_map(props);
    pn_data_enter(props);
    uint32_t cost = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        if (!pn_data_next(props) || pn_data_type(props) != PN_SYMBOL)
            break; /* 1.19 stops at the first key that is not a symbol */
        pn_bytes_t key = pn_data_get_symbol(props);
        if (!pn_data_next(props))
            break;
        if (key.size == strlen("qd.inter-router-cost") &&
            memcmp(key.start, "qd.inter-router-cost", key.size) == 0 &&
            pn_data_type(props) == PN_INT && pn_data_get_int(props) > 0)
            cost = (uint32_t)pn_data_get_int(props);
    }
    pn_data_exit(props);
    return cost;
}

void jn_io_ir_log_annotations_version_IO(jn_io_conn_t *conn, pn_connection_t *pc)
{
    JN_ASSERT_IO(conn);
    jn_io_ir_props_log_version_IO(conn, pn_connection_remote_properties(pc));
}

void jn_io_ir_props_log_version_IO(jn_io_conn_t *conn, pn_data_t *props)
{
    JN_ASSERT_IO(conn);
    if (!props)
        return;
    pn_data_rewind(props);
    if (!pn_data_next(props) || pn_data_type(props) != PN_MAP)
        return;
    pn_data_enter(props);
    while (pn_data_next(props)) {
        bool sym = pn_data_type(props) == PN_SYMBOL;
        pn_bytes_t key = sym ? pn_data_get_symbol(props) : pn_bytes(0, NULL);
        if (!pn_data_next(props))
            break;
        if (sym && key.size == strlen("qd.annotations-version") &&
            memcmp(key.start, "qd.annotations-version", key.size) == 0 &&
            pn_data_type(props) == PN_INT) {
            /* not the [C12] prefix first: 1.19's line starts with its text */
            JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_DEBUG,
                   "Remote router annotations version: %d (connection " JN_IO_CONN_FMT ")",
                   (int)pn_data_get_int(props), conn->id);
            break;
        }
    }
    pn_data_exit(props);
    pn_data_rewind(props);
}

void jn_io_ir_link_name(char out[23])
{
    static const char chars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+_";
    uint8_t rnd[15];
    if (getrandom(rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd) {
        uint64_t x = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)out;
        for (size_t i = 0; i < sizeof rnd; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            rnd[i] = (uint8_t)(x >> 56);
        }
    }
    memcpy(out, "qdlink.", 7);
    for (int i = 0; i < 15; i++)
        out[7 + i] = chars[rnd[i] % 64];
    out[22] = '\0';
}

/* Set a terminus's capability to the single symbol cap (not an array: 1.19
 * recognises only a plain symbol). */
static void set_capability(pn_terminus_t *t, const char *cap)
{
    pn_data_t *d = pn_terminus_capabilities(t);
    pn_data_clear(d);
    pn_data_put_symbol(d, pn_bytes(strlen(cap), cap));
    pn_terminus_set_expiry_policy(t, PN_EXPIRE_WITH_LINK);
}

void jn_io_set_capability(pn_link_t *pl, const char *cap)
{
    set_capability(pn_link_source(pl), cap);
    set_capability(pn_link_target(pl), cap);
}

static void attach_one(jn_io_conn_t *conn, pn_session_t *ssn, bool sender, bool control,
                       int priority)
{
    char name[23];
    jn_io_ir_link_name(name);
    pn_link_t *pl = sender ? pn_sender(ssn, name) : pn_receiver(ssn, name);
    const char *cap = control ? CAP_CONTROL : CAP_DATA;
    pn_terminus_set_type(pn_link_source(pl), PN_SOURCE);
    pn_terminus_set_type(pn_link_target(pl), PN_TARGET);
    set_capability(pn_link_source(pl), cap);
    set_capability(pn_link_target(pl), cap);
    jn_io_link_t *link = jn_io_link_new_IO(conn, pl);
    if (!link) {
        pn_link_close(pl);
        return;
    }
    link->local = true;
    if (control)
        jn_io_ir_cap_control_IO(link);
    jn_link_info_t info = {
        .dir = link->dir,
        .name = name,
        .capacity = conn->endpoint->cfg.link_capacity,
        .type = control ? JN_LINK_CONTROL : JN_LINK_DATA,
        .priority = control ? -1 : priority,
        .local = true,
    };
    link->core = jn_core_link_attached_IO(conn->core, link, &info);
    if (!link->core)
        link->detached = true;
    pn_link_open(pl);
}

void jn_io_ir_attach_links_IO(jn_io_conn_t *conn)
{
    JN_ASSERT_IO(conn);
    pn_connection_t *pc = conn->pn_io;
    if (!pc || !conn->core)
        return;
    /* all eleven begins first, then the attaches, as 1.19 does */
    pn_session_t *ssn[11];
    for (int i = 0; i < 11; i++) {
        ssn[i] = pn_session(pc);
        if (!ssn[i])
            return;
        size_t frame = conn->endpoint->cfg.max_frame_size;
        size_t cap = frame * JN_IO_SESSION_FRAMES;
        pn_session_set_incoming_capacity(
            ssn[i], cap > JN_IO_SESSION_CAPACITY_MAX ? JN_IO_SESSION_CAPACITY_MAX : cap);
        pn_session_open(ssn[i]);
    }
    attach_one(conn, ssn[0], false, true, -1);
    attach_one(conn, ssn[0], true, true, -1);
    for (int p = 0; p < 10; p++) {
        attach_one(conn, ssn[p + 1], false, false, p);
        attach_one(conn, ssn[p + 1], true, false, p);
    }
    conn->data_in = conn->data_out = 10;
}

/* The first capability of t when it is a symbol (or an array's first
 * symbol: accepted here, though 1.19 would not), compared with cap. */
static bool has_capability(pn_terminus_t *t, const char *cap)
{
    pn_data_t *d = pn_terminus_capabilities(t);
    if (!d)
        return false;
    pn_data_rewind(d);
    if (!pn_data_next(d))
        return false;
    bool in_array = false;
    if (pn_data_type(d) == PN_ARRAY) {
        if (pn_data_get_array(d) == 0 || pn_data_get_array_type(d) != PN_SYMBOL)
            return false;
        pn_data_enter(d);
        in_array = pn_data_next(d);
        if (!in_array)
            return false;
    }
    bool match = false;
    if (pn_data_type(d) == PN_SYMBOL) {
        pn_bytes_t b = pn_data_get_symbol(d);
        match = b.size == strlen(cap) && memcmp(b.start, cap, b.size) == 0;
    }
    if (in_array)
        pn_data_exit(d);
    pn_data_rewind(d);
    return match;
}

bool jn_io_ir_offers_streaming_IO(pn_connection_t *pc)
{
    JN_ASSERT_SOME_IO();
    return jn_io_ir_caps_streaming(pn_connection_remote_offered_capabilities(pc));
}

bool jn_io_ir_caps_streaming(pn_data_t *d)
{
    if (!d)
        return false;
    static const char cap[] = "qd.streaming-links";
    bool found = false;
    pn_data_rewind(d);
    if (!pn_data_next(d))
        return false;
    bool array = pn_data_type(d) == PN_ARRAY;
    if (array && (pn_data_get_array_type(d) != PN_SYMBOL || !pn_data_enter(d)))
        array = false;
    while (!found && (!array || pn_data_next(d))) {
        if (pn_data_type(d) == PN_SYMBOL) {
            pn_bytes_t b = pn_data_get_symbol(d);
            found = b.size == sizeof cap - 1 && memcmp(b.start, cap, b.size) == 0;
        }
        if (!array)
            break;
    }
    pn_data_rewind(d);
    return found;
}

bool jn_io_fallback_receiver_IO(pn_link_t *pl)
{
    JN_ASSERT_SOME_IO();
    if (pn_link_is_sender(pl))
        return has_capability(pn_link_remote_source(pl), "qd.fallback");
    /* an edge router's sender to a fallback: the core honours it only on
     * an edge connection (jn_link_info_t.fallback) */
    return has_capability(pn_link_remote_target(pl), "qd.fallback");
}

uint8_t jn_io_waypoint_IO(pn_link_t *pl)
{
    JN_ASSERT_SOME_IO();
    pn_data_t *d = pn_terminus_capabilities(pn_link_is_sender(pl) ? pn_link_remote_source(pl)
                                                                  : pn_link_remote_target(pl));
    if (!d)
        return 0;
    uint8_t found = 0;
    pn_data_rewind(d);
    if (!pn_data_next(d))
        return 0;
    bool array = pn_data_type(d) == PN_ARRAY;
    if (array && (pn_data_get_array_type(d) != PN_SYMBOL || !pn_data_enter(d)))
        array = false;
    while (!found && (!array || pn_data_next(d))) {
        if (pn_data_type(d) == PN_SYMBOL) {
            pn_bytes_t b = pn_data_get_symbol(d);
            if (b.size == 11 && memcmp(b.start, "qd.waypoint", 11) == 0)
                found = 1;
            else if (b.size == 13 && memcmp(b.start, "qd.waypoint.", 12) == 0 &&
                     b.start[12] >= '1' && b.start[12] <= '9')
                found = (uint8_t)(b.start[12] - '0');
        }
        if (!array)
            break;
    }
    pn_data_rewind(d);
    return found;
}

void jn_io_ir_cap_control_IO(jn_io_link_t *link)
{
    JN_ASSERT_IO(link->conn);
    if (link->max_message_size == 0 || link->max_message_size > JN_IO_CONTROL_MAX_MESSAGE)
        link->max_message_size = JN_IO_CONTROL_MAX_MESSAGE;
}

void jn_io_ir_classify_IO(jn_io_link_t *link, jn_link_info_t *info)
{
    JN_ASSERT_IO(link->conn);
    pn_link_t *pl = link->pn;
    /* the terminus at our end: the peer's target when it sends to us */
    pn_terminus_t *t =
        link->dir == JN_LINK_INCOMING ? pn_link_remote_target(pl) : pn_link_remote_source(pl);
    const char *hb = pn_terminus_get_address(t);
    if (!link->conn->inter_router && hb && strcmp(hb, "_$qd.addr_lookup") == 0) {
        /* the link-route lookup service: an edge's sender; anything else
         * on it is refused by the core (edge.c), as 1.19 */
        info->type = JN_LINK_EDGE_LOOKUP;
        return;
    }
    if (!link->conn->inter_router && hb && strcmp(hb, "_$qd.edge_heartbeat") == 0) {
        /* the heartbeat endpoint: on every connection, as 1.19 (a sender
         * to it is watched for silence; a receiver is refused) */
        info->type = JN_LINK_EDGE_HEARTBEAT;
        return;
    }
    if (link->conn->edge) {
        /* an edge router's links (docs/protocol.md, "Edge routers") */
        const char *addr = pn_terminus_get_address(t);
        if (link->dir == JN_LINK_OUTGOING && has_capability(t, "qd.router-edge-downlink"))
            info->type = JN_LINK_EDGE_DOWNLINK;
        else if (link->dir == JN_LINK_OUTGOING && addr &&
                 strcmp(addr, "_$qd.edge_addr_tracking") == 0)
            info->type = JN_LINK_EDGE_TRACKING;
        else if (link->dir == JN_LINK_INCOMING && addr && strcmp(addr, "_$qd.edge_heartbeat") == 0)
            info->type = JN_LINK_EDGE_HEARTBEAT;
        else if (link->dir == JN_LINK_INCOMING && addr && strcmp(addr, "_$qd.addr_lookup") == 0)
            info->type = JN_LINK_EDGE_LOOKUP;
        if (info->type != JN_LINK_ENDPOINT)
            return;
        /* control and data links are classified as such: the core refuses
         * them on a connection that is not inter-router */
    }
    if (has_capability(t, CAP_CONTROL)) {
        info->type = JN_LINK_CONTROL;
    } else if (has_capability(t, CAP_DATA)) {
        info->type = JN_LINK_DATA;
        uint32_t *count =
            link->dir == JN_LINK_INCOMING ? &link->conn->data_in : &link->conn->data_out;
        info->priority = *count < 10 ? (int)*count : -1;
        (*count)++;
    }
}
