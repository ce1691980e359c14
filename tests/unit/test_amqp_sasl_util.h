/*
 * test_amqp_sasl_util.h — shared by the SASL layer's unit tests
 * (test_amqp_sasl_client.c, test_amqp_sasl_large.c): an inbox of octets
 * one end wrote for the other, handed to a layer as a view over buffers of
 * a chosen size (deliver), and filled from an end's output a piece at a
 * time (move), so that every exchange is also read in small pieces.
 */
#ifndef TEST_AMQP_SASL_UTIL_H
#define TEST_AMQP_SASL_UTIL_H 1

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/amqp_sasl.h>
#include <junction/iterator.h>

#include <string.h>

typedef struct inbox {
    uint8_t data[16384];
    size_t len;
} inbox_t;

typedef int (*input_fn)(void *layer, const jn_iter_t *in, size_t *consumed);

/* Hand the layer the inbox as a view over buffers of piece octets; drop
 * what it consumed. Returns the layer's result. */
static inline int deliver(inbox_t *box, void *layer, input_fn input, size_t piece)
{
    jn_buffer_list_t list;
    jn_iter_t it;
    jn_buffer_list_init(&list);
    if (box->len == 0) {
        jn_iter_init_bytes(&it, "", 0, JN_VIEW_RAW);
    } else {
        assert_int_equal(jn_buffer_list_append_split(&list, box->data, box->len, piece), 0);
        assert_int_equal(jn_iter_init(&it, list.head, 0, box->len, JN_VIEW_RAW), 0);
    }
    size_t consumed = 0;
    int rc = input(layer, &it, &consumed);
    jn_buffer_list_free(&list);
    assert_true(consumed <= box->len);
    memmove(box->data, box->data + consumed, box->len - consumed);
    box->len -= consumed;
    return rc;
}

static inline int client_input(void *layer, const jn_iter_t *in, size_t *consumed)
{
    return jn_amqp_sasl_client_input(layer, in, consumed);
}

static inline int server_input(void *layer, const jn_iter_t *in, size_t *consumed)
{
    return jn_amqp_sasl_server_input(layer, in, consumed);
}

/* Up to piece octets of out into box. Returns the octets moved. */
static inline size_t move(const uint8_t *out, size_t len, inbox_t *box, size_t piece)
{
    size_t n = len < piece ? len : piece;
    assert_true(box->len + n <= sizeof box->data);
    memcpy(box->data + box->len, out, n);
    box->len += n;
    return n;
}

#endif /* TEST_AMQP_SASL_UTIL_H */
