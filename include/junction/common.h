/*
 * junction/common.h — definitions every Junction module shares: result codes,
 * branch hints, and the invariant check that stays on in release builds.
 *
 * Result convention (as libuv and nginx): a function returns int, 0 for
 * success, a negative JN_E* code for failure. Functions that produce a stream
 * of items (the decoder, the outgoing-message cursor) return 1 when they
 * produced an item, 0 at the end, and a negative code on failure.
 */
#ifndef JUNCTION_COMMON_H
#define JUNCTION_COMMON_H 1

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Result codes. Values are negated errno numbers where one fits, so that they
 * read naturally in a debugger; they are not meant to be mixed with errno. */
enum {
    JN_OK = 0,
    JN_EPERM = -1,     /* the operation is not allowed on this item */
    JN_ENOENT = -2,    /* no such item (absent section, unknown key) */
    JN_AGAIN = -11,    /* not enough octets yet: call again when more arrive */
    JN_ENOMEM = -12,   /* a pool or the heap is exhausted */
    JN_EEXIST = -17,   /* the item already exists */
    JN_EINVAL = -22,   /* an argument is outside what the function accepts */
    JN_ERANGE = -34,   /* a value does not fit the destination */
    JN_EPROTO = -71,   /* the input violates the AMQP encoding or protocol */
    JN_EOVERFLOW = -75 /* a size, count or nesting depth exceeds a limit */
};

/* jn_strerror: a short English description of a JN_* result code.
 * Returns a static string (never NULL; "unknown error" for unknown codes).
 * Any thread. */
const char *jn_strerror(int code);

/* jn_strdup_opt: a heap copy of s (the caller's, free()), or NULL when s is
 * NULL; when the copy fails for want of memory, sets *failed (left alone
 * otherwise) and returns NULL. For copying optional configuration strings
 * and checking once at the end. Any thread. */
char *jn_strdup_opt(const char *s, bool *failed);

/* jn_utf8_put: writes the UTF-8 form of the Unicode scalar value cp into
 * out (the caller's, room for 4 octets, not NUL-terminated). Returns the
 * octets written, 1 to 4, or 0 (nothing written) when cp is not a scalar
 * value: a surrogate (0xD800-0xDFFF) or above 0x10FFFF (Unicode 15, 3.9;
 * RFC 3629 section 3). Any thread. */
size_t jn_utf8_put(char *out, uint32_t cp);

#if defined(__GNUC__) || defined(__clang__)
#define JN_LIKELY(x)   __builtin_expect(!!(x), 1)
#define JN_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define JN_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#define JN_NORETURN __attribute__((noreturn))
#else
#define JN_LIKELY(x)   (x)
#define JN_UNLIKELY(x) (x)
#define JN_PRINTF(fmt_index, first_arg)
#define JN_NORETURN
#endif

/* jn_panic: print "junction: invariant failed: <what> at file:line" to stderr
 * and abort. Used by JN_CHECK. Any thread. Never returns. */
JN_NORETURN void jn_panic(const char *what, const char *file, int line);

/* JN_CHECK: a cheap invariant that stays on in release builds. */
#define JN_CHECK(cond)                                                         \
    do {                                                                       \
        if (JN_UNLIKELY(!(cond)))                                              \
            jn_panic(#cond, __FILE__, __LINE__);                               \
    } while (0)

/* jn_ct_role_: the core role the calling thread holds — the core it runs
 * as "the core thread" while it holds that core's token (router/core sets
 * it on taking the token and clears it on giving it back) — or NULL. The
 * layers the core calls into that run only in its role (router/mesh) check
 * their calls against it (JN_ASSERT_CT); read through those macros only. */
extern _Thread_local const void *jn_ct_role_;

/* jn_io_role_: the I/O loop the calling thread runs as (router/io sets it
 * when a worker starts, for each pass of a test's loop, and while a thread
 * adopts a connection, jn_io_adopt) or NULL. The layers that take calls
 * from the I/O side (the core's _IO entry points) check them against it
 * with JN_ASSERT_IO_CALLER; read through that macro only. */
extern _Thread_local const void *jn_io_role_;

/* JN_DEBUG_CHECK: an invariant too costly for release builds (JN_DEBUG set
 * by the Debug build type and the sanitizer builds). */
#ifdef JN_DEBUG
#define JN_DEBUG_CHECK(cond) JN_CHECK(cond)
#else
#define JN_DEBUG_CHECK(cond) ((void)0)
#endif

/* JN_ASSERT_IO_CALLER: the calling thread is an I/O loop (or adopts a
 * connection): at the top of the _IO entry points of the layers below io,
 * which cannot see which loop owns the connection they are given. */
#define JN_ASSERT_IO_CALLER() JN_DEBUG_CHECK(jn_io_role_ != NULL)

#endif /* JUNCTION_COMMON_H */
