/*
 * fuzz_input.h — shared by the fuzz targets: turn a fuzzer input into a
 * buffer chain. The first input octet is a control octet: its low three bits
 * pick how many octets each buffer holds (1, 2, 3, 7, 16, 64, 200 or a full
 * buffer), so every field gets split at every boundary; its top bit is a flag
 * the target may use. The rest of the input is the data.
 */
#ifndef JN_FUZZ_INPUT_H
#define JN_FUZZ_INPUT_H 1

#include <junction/buffer.h>

static inline size_t jn_fuzz_chunk(uint8_t control)
{
    static const size_t chunks[8] = {1, 2, 3, 7, 16, 64, 200, JN_BUFFER_CAPACITY};
    return chunks[control & 7];
}

static inline bool jn_fuzz_flag(uint8_t control)
{
    return (control & 0x80) != 0;
}

#endif
