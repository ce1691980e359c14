/*
 * common.c — the few definitions behind junction/common.h: the text of result
 * codes and the release-build invariant failure.
 */
#include <junction/common.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Thread_local const void *jn_ct_role_;
_Thread_local const void *jn_io_role_;

const char *jn_strerror(int code)
{
    switch (code) {
    case JN_OK:
        return "success";
    case JN_ENOENT:
        return "no such item";
    case JN_AGAIN:
        return "not enough octets yet";
    case JN_ENOMEM:
        return "out of memory";
    case JN_EEXIST:
        return "item already exists";
    case JN_EINVAL:
        return "invalid argument";
    case JN_ERANGE:
        return "value out of range";
    case JN_EPROTO:
        return "protocol or encoding violation";
    case JN_EOVERFLOW:
        return "size, count or depth exceeds a limit";
    default:
        return "unknown error";
    }
}

void jn_panic(const char *what, const char *file, int line)
{
    /* One fprintf: stderr is unbuffered, so the line is one write as long as
     * it fits glibc's stack buffer, and it does not interleave with others. */
    fprintf(stderr, "junction: invariant failed: %s at %s:%d\n", what ? what : "?",
            file ? file : "?", line);
    abort();
}

char *jn_strdup_opt(const char *s, bool *failed)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *failed = true;
    return d;
}

size_t jn_utf8_put(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp >= 0xd800 && cp <= 0xdfff)
        return 0;
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    if (cp > 0x10ffff)
        return 0;
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}
