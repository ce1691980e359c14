/*
 * io_state.c — what is left of proton's delivery states in the router
 * since stage 5 of issue 27 (docs/engine.md): jn_io_data_encode, which the
 * own path still uses to encode a pn_data_t (open properties). It goes
 * when the own codec's replacement lands (stage 5: goes when h-codec
 * lands); the own engine carries every delivery state itself
 * (io_own_state.c).
 */
#include "io_private.h"

#include <proton/codec.h>

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
