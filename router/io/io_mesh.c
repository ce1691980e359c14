/*
 * io_mesh.c — what is left here of the I/O layer's inter-router helpers
 * since proton's path went (stage 5 of issue 27, docs/engine.md): the
 * standard links' names (jn_io_ir_link_name), and three readers of the
 * peer's open (its qd.inter-router-cost and qd.annotations-version
 * properties, its qd.streaming-links capability) over proton's pn_data_t,
 * which io_own_mesh.c still calls (stage 5: they go when h-codec lands,
 * replaced by the own codec's). The own engine's side of inter-router
 * connections is io_own_mesh.c (docs/protocol.md, "The mesh":
 * "Inter-router connections").
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
