/*
 * test_mesh_mobile.c — mobile-address synchronisation of the routing
 * protocol engine (docs/protocol.md, "The mesh": "Mobile addresses"): differential
 * MAU, cancel-out, out-of-sequence MAU -> MAR -> absolute MAU, RA
 * catch-up, and removal of a deleted router's addresses.
 */
#include "test_mesh_util.h"

static net_t *two_routers(void)
{
    net_t *net = net_new();
    int a = net_add(net, "A"), b = net_add(net, "B");
    net_connect(net, a, b, 1);
    net_run(net, 5);
    assert_true(route(net, "A", "B")->reachable);
    return net;
}

static size_t count_op(const frouter_t *r, const char *op)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_sent; i++)
        if (strcmp(msg_opname(r->sent[i].msg), op) == 0)
            n++;
    return n;
}

/* A differential MAU carries adds (with hints) and deletes; an RA follows. */
static void test_differential_mau(void **state)
{
    net_t *net = two_routers();
    frouter_t *b = &net->r[rid(net, "B")];
    b->capture = true;
    local_mobile(net, "B", "M0q1", true, JN_MESH_HINT_BALANCED);
    local_mobile(net, "B", "M0q2", true, JN_MESH_HINT_CLOSEST);
    net_tick(net);
    assert_true(has_mobile(net, "A", "B", "M0q1"));
    assert_true(has_mobile(net, "A", "B", "M0q2"));
    frouter_t *a = &net->r[rid(net, "A")];
    assert_int_equal(a->mobile[0].hint + a->mobile[1].hint,
                     JN_MESH_HINT_BALANCED + JN_MESH_HINT_CLOSEST);
    /* MAU to all, then an RA carrying the new sequence */
    assert_int_equal(count_op(b, "MAU"), 1);
    assert_int_equal(count_op(b, "RA"), 1);
    size_t mau = 0, ra = 0;
    for (size_t i = 0; i < b->n_sent; i++) {
        if (strcmp(msg_opname(b->sent[i].msg), "MAU") == 0)
            mau = i;
        if (strcmp(msg_opname(b->sent[i].msg), "RA") == 0)
            ra = i;
    }
    assert_true(mau < ra);
    assert_int_equal(b->sent[mau].kind, 'A');
    uint64_t seq;
    jn_mesh_own_state_CT(b->mesh, NULL, &seq);
    assert_int_equal(seq, 1);
    capture_clear(b);

    local_mobile(net, "B", "M0q1", false, 0);
    net_tick(net);
    assert_false(has_mobile(net, "A", "B", "M0q1"));
    assert_true(has_mobile(net, "A", "B", "M0q2"));
    assert_int_equal(jn_mesh_node_find_CT(a->mesh, "B", 1)->mobile_seq, 2);
    /* nothing pending: no MAU */
    capture_clear(b);
    net_tick(net);
    assert_int_equal(count_op(b, "MAU"), 0);
    b->capture = false;
    capture_clear(b);
    net_free(net);
}

/* An add and a delete of the same key before the timer cancel out. */
static void test_add_delete_cancel_out(void **state)
{
    net_t *net = two_routers();
    frouter_t *b = &net->r[rid(net, "B")];
    b->capture = true;
    local_mobile(net, "B", "M0x", true, JN_MESH_HINT_CLOSEST);
    local_mobile(net, "B", "M0x", false, 0);
    net_tick(net);
    assert_int_equal(count_op(b, "MAU"), 0);
    uint64_t seq;
    jn_mesh_own_state_CT(b->mesh, NULL, &seq);
    assert_int_equal(seq, 0);
    /* an advertised key deleted and re-added: nothing to send either */
    local_mobile(net, "B", "M0y", true, JN_MESH_HINT_CLOSEST);
    net_tick(net);
    assert_true(has_mobile(net, "A", "B", "M0y"));
    capture_clear(b);
    local_mobile(net, "B", "M0y", false, 0);
    local_mobile(net, "B", "M0y", true, JN_MESH_HINT_CLOSEST);
    net_tick(net);
    assert_int_equal(count_op(b, "MAU"), 0);
    assert_true(has_mobile(net, "A", "B", "M0y"));
    jn_mesh_own_state_CT(b->mesh, NULL, &seq);
    assert_int_equal(seq, 1);
    b->capture = false;
    capture_clear(b);
    net_free(net);
}

/* Drops the next MAU that B sends, and the RA after it (so A learns of
 * the gap only from the next MAU). */
static bool drop_one_mau(net_t *net, int from, int to, jn_message_t *msg)
{
    int *left = net->filter_ctx; /* [0] MAUs, [1] RAs to drop */
    if (from != rid(net, "B"))
        return false;
    const char *op = msg_opname(msg);
    int *n = strcmp(op, "MAU") == 0 ? &left[0] : strcmp(op, "RA") == 0 ? &left[1] : NULL;
    if (n && *n > 0) {
        (*n)--;
        return true;
    }
    return false;
}

/* A lost MAU: the next one is out of sequence, A asks (MAR), B answers
 * with an absolute MAU, and A ends up with B's exact set. */
static void test_out_of_sequence_mau_asks_for_all(void **state)
{
    net_t *net = two_routers();
    frouter_t *a = &net->r[rid(net, "A")], *b = &net->r[rid(net, "B")];
    local_mobile(net, "B", "M0keep", true, JN_MESH_HINT_BALANCED);
    net_tick(net);
    assert_true(has_mobile(net, "A", "B", "M0keep"));

    int drops[2] = {1, 1};
    net->filter = drop_one_mau;
    net->filter_ctx = drops;
    local_mobile(net, "B", "M0lost", true, JN_MESH_HINT_CLOSEST);
    local_mobile(net, "B", "M0keep", false, 0);
    net_tick(net); /* MAU seq 2 and the RA after it are lost */
    assert_int_equal(drops[0], 0);
    assert_int_equal(drops[1], 0);
    assert_false(has_mobile(net, "A", "B", "M0lost"));
    a->capture = true;
    b->capture = true;
    /* and before the tick the next MAU (seq 3) arrives out of sequence */
    local_mobile(net, "B", "M0new", true, JN_MESH_HINT_MULTICAST);
    net_tick(net);
    assert_int_equal(count_op(a, "MAR"), 1);
    for (size_t i = 0; i < a->n_sent; i++)
        if (strcmp(msg_opname(a->sent[i].msg), "MAR") == 0)
            assert_int_equal(a->sent[i].kind, 'R');
    /* B answered with an absolute MAU addressed to A */
    bool absolute = false;
    for (size_t i = 0; i < b->n_sent; i++) {
        if (strcmp(msg_opname(b->sent[i].msg), "MAU") != 0 || b->sent[i].kind != 'R')
            continue;
        jn_mesh_msg_t m;
        const char *why;
        assert_int_equal(jn_mesh_parse(b->sent[i].msg, &m, &why), 0);
        absolute = m.has_exist;
        assert_int_equal(m.exist.n, 2);
        jn_mesh_msg_fini(&m);
    }
    assert_true(absolute);
    assert_true(has_mobile(net, "A", "B", "M0lost"));
    assert_true(has_mobile(net, "A", "B", "M0new"));
    assert_false(has_mobile(net, "A", "B", "M0keep"));
    assert_int_equal(a->n_mobile, 2);
    assert_int_equal(jn_mesh_node_find_CT(a->mesh, "B", 1)->mobile_seq, 3);
    /* a MAR from A with a current have_seq gets no answer */
    capture_clear(a);
    capture_clear(b);
    net_run(net, 3);
    assert_int_equal(count_op(a, "MAR"), 0);
    a->capture = b->capture = false;
    capture_clear(a);
    capture_clear(b);
    net_free(net);
}

/* Keys advertised before the routers met are caught up through RA -> MAR
 * -> absolute MAU. */
static void test_ra_catch_up(void **state)
{
    net_t *net = net_new();
    int a = net_add(net, "A"), b = net_add(net, "B");
    local_mobile(net, "B", "M0early", true, JN_MESH_HINT_CLOSEST);
    local_mobile(net, "B", "M1wp", true, JN_MESH_HINT_BALANCED);
    net_run(net, 2); /* MAU seq 1 goes nowhere */
    net_connect(net, a, b, 1);
    net_run(net, 8);
    assert_true(has_mobile(net, "A", "B", "M0early"));
    assert_true(has_mobile(net, "A", "B", "M1wp"));
    assert_int_equal(jn_mesh_node_find_CT(net->r[a].mesh, "B", 1)->mobile_seq, 1);
    net_free(net);
}

/* Deleting a router record flushes its mobile keys first. */
static void test_deleted_router_loses_its_keys(void **state)
{
    net_t *net = net_new();
    net->ls_max_age = 5;
    int a = net_add(net, "A"), b = net_add(net, "B");
    int ab = net_connect(net, a, b, 1);
    net_run(net, 5);
    local_mobile(net, "B", "M0gone", true, JN_MESH_HINT_CLOSEST);
    net_tick(net);
    assert_true(has_mobile(net, "A", "B", "M0gone"));
    net_disconnect(net, ab);
    net_run(net, 20);
    assert_int_equal(find_known(&net->r[a], "B"), -1);
    assert_int_equal(net->r[a].n_mobile, 0);
    assert_int_equal(net->r[a].mob_removed, 1);
    net_free(net);
}

int main(void)
{
    quiet_logs();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_differential_mau),
        cmocka_unit_test(test_add_delete_cancel_out),
        cmocka_unit_test(test_out_of_sequence_mau_asks_for_all),
        cmocka_unit_test(test_ra_catch_up),
        cmocka_unit_test(test_deleted_router_loses_its_keys),
    };
    return finish_mesh_tests(cmocka_run_group_tests(tests, NULL, NULL));
}
