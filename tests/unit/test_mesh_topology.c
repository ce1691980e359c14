/*
 * test_mesh_topology.c — neighbour discovery, link state and route
 * computation of the routing protocol engine (docs/protocol.md,
 * "The mesh": "Control messages", "Link state and routes"), with several engines joined by the fake network
 * of test_mesh_util.h.
 */
#include "test_mesh_util.h"

/* Two routers find each other and agree on routes and sequences. */
static void test_two_routers_discover_each_other(void **state)
{
    net_t *net = net_new();
    int a = net_add(net, "A"), b = net_add(net, "B");
    net_connect(net, a, b, 1);
    net_run(net, 4);
    assert_route(net, "A", "B", NULL, 0, 1);
    assert_route(net, "B", "A", NULL, 0, 1);
    assert_int_equal(jn_mesh_radius_CT(net->r[a].mesh), 1);
    assert_int_equal(jn_mesh_router_index_CT(net->r[a].mesh, "B", 1), 1);
    assert_int_equal(jn_mesh_router_index_CT(net->r[a].mesh, "Z", 1), -1);
    /* only self is a valid origin with two routers */
    assert_int_equal(bits_count(&route(net, "A", "B")->vo), 1);
    /* one route callback: nothing changed after the first */
    unsigned calls = net->r[a].route_calls;
    assert_int_equal(calls, 1);
    net_run(net, 40);
    assert_int_equal(net->r[a].route_calls, calls);
    /* each holds the other's current link state */
    uint64_t ls_b;
    jn_mesh_own_state_CT(net->r[b].mesh, &ls_b, NULL);
    assert_int_equal(ls_b, 1);
    jn_mesh_node_t *nb = jn_mesh_node_find_CT(net->r[a].mesh, "B", 1);
    assert_non_null(nb);
    assert_int_equal(nb->ls_seq, ls_b);
    assert_int_equal(nb->peers.n, 1);
    assert_string_equal(nb->peers.s[0], "A");
    assert_int_equal(nb->instance, net->r[b].instance);
    net_free(net);
}

static bool info_fn(void *arg, const jn_mesh_router_info_t *info)
{
    jn_mesh_router_info_t *out = arg;
    *out = *info;
    return false;
}

/* A - B - C: next hops, costs, radius, valid origins; router info. */
static void test_linear_three(void **state)
{
    net_t *net = net_new();
    int a = net_add(net, "A"), b = net_add(net, "B"), c = net_add(net, "C");
    net_connect(net, a, b, 1);
    net_connect(net, b, c, 3);
    net_run(net, 8);
    assert_route(net, "A", "B", NULL, 0, 1);
    assert_route(net, "A", "C", "B", -1, 4);
    assert_route(net, "C", "A", "B", -1, 4);
    assert_route(net, "B", "C", NULL, 1, 3);
    assert_int_equal(jn_mesh_radius_CT(net->r[a].mesh), 2);
    assert_int_equal(jn_mesh_radius_CT(net->r[b].mesh), 1);
    /* B lies between A and C: each is a valid origin for the other at B */
    assert_true(valid_origin(net, "B", "C", "A"));
    assert_true(valid_origin(net, "B", "A", "C"));
    assert_int_equal(bits_count(&route(net, "B", "C")->vo), 2);
    /* at A nothing passes through A */
    assert_int_equal(bits_count(&route(net, "A", "C")->vo), 1);
    assert_int_equal(bits_count(&route(net, "A", "B")->vo), 1);
    /* management view */
    jn_mesh_router_info_t info;
    jn_mesh_foreach_router_CT(net->r[a].mesh, info_fn, &info);
    assert_string_equal(info.id, "B");
    assert_int_equal(info.link, 0);
    assert_int_equal(info.next_hop, -1);
    assert_true(info.reachable);
    assert_int_equal(info.peer_count, 2);
    (void)c;
    net_free(net);
}

/* Square A-B-D-C-A with a diagonal A-D: cheapest path, ties by id. */
static void test_square_with_diagonal(void **state)
{
    net_t *net = net_new();
    int a = net_add(net, "A"), b = net_add(net, "B"), c = net_add(net, "C"), d = net_add(net, "D");
    int ab = net_connect(net, a, b, 1);
    net_connect(net, b, d, 1);
    int ac = net_connect(net, a, c, 1);
    net_connect(net, c, d, 1);
    net_connect(net, a, d, 5);
    net_run(net, 10);
    /* A -> D: via B (2), via C (2), direct (5): tie goes to B */
    assert_route(net, "A", "D", "B", -1, 2);
    assert_route(net, "D", "A", "B", -1, 2);
    assert_route(net, "B", "C", "A", -1, 2);
    assert_route(net, "C", "B", "A", -1, 2);
    /* valid origins at B: D's traffic to A passes B (tie to B at D) */
    assert_true(valid_origin(net, "B", "A", "D"));
    assert_false(valid_origin(net, "C", "A", "D"));
    (void)ab;
    net_free(net);

    /* the same with A-B dearer: the cheapest path wins */
    net = net_new();
    a = net_add(net, "A"), b = net_add(net, "B"), c = net_add(net, "C"), d = net_add(net, "D");
    net_connect(net, a, b, 3);
    net_connect(net, b, d, 1);
    ac = net_connect(net, a, c, 1);
    net_connect(net, c, d, 1);
    net_connect(net, a, d, 5);
    net_run(net, 10);
    assert_route(net, "A", "D", "C", -1, 2);
    assert_route(net, "A", "B", NULL, 0, 3);
    assert_route(net, "A", "C", NULL, ac, 1);
    assert_route(net, "B", "A", NULL, 0, 3);
    net_free(net);
}

/* Six routers in a ring: everyone reaches everyone the short way round. */
static void test_ring_of_six_converges(void **state)
{
    static const char *const ids[] = {"R0", "R1", "R2", "R3", "R4", "R5"};
    net_t *net = net_new();
    for (int i = 0; i < 6; i++)
        net_add(net, ids[i]);
    for (int i = 0; i < 6; i++)
        net_connect(net, i, (i + 1) % 6, 1);
    net_run(net, 15);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(jn_mesh_radius_CT(net->r[i].mesh), 3);
        for (int j = 0; j < 6; j++) {
            if (i == j)
                continue;
            int dist = abs(i - j) < 3 ? abs(i - j) : 6 - abs(i - j);
            const froute_t *rt = route(net, ids[i], ids[j]);
            assert_true(rt->reachable);
            assert_int_equal(rt->cost, (uint32_t)dist);
        }
    }
    /* R0 -> R3: both ways cost 3; the queue settles R1 before R5 */
    assert_route(net, "R0", "R3", "R1", -1, 3);
    assert_route(net, "R0", "R2", "R1", -1, 2);
    assert_route(net, "R0", "R4", "R5", -1, 2);
    net_free(net);
}

/* Link loss: the neighbour goes at once, routes move to the other path. */
static void test_link_loss_reconverges(void **state)
{
    net_t *net = net_new();
    int a = net_add(net, "A"), b = net_add(net, "B"), c = net_add(net, "C");
    int ab = net_connect(net, a, b, 1);
    net_connect(net, b, c, 1);
    int ac = net_connect(net, a, c, 10);
    net_run(net, 8);
    assert_route(net, "A", "C", "B", -1, 2);
    assert_route(net, "A", "B", NULL, ab, 1);
    net_disconnect(net, ab);
    net_run(net, 6);
    assert_route(net, "A", "C", NULL, ac, 10);
    assert_route(net, "A", "B", "C", -1, 11);
    assert_route(net, "B", "A", "C", -1, 11);
    /* back again */
    net_reconnect(net, ab);
    net_run(net, 6);
    assert_route(net, "A", "C", "B", -1, 2);
    assert_route(net, "A", "B", NULL, ab, 1);
    net_free(net);
}

/* Two parallel connections: the neighbour stays on the first while it
 * lives and moves to the other when it goes. */
static void test_parallel_links_rebind(void **state)
{
    net_t *net = net_new();
    int a = net_add(net, "A"), b = net_add(net, "B");
    int l0 = net_connect(net, a, b, 1);
    int l1 = net_connect(net, a, b, 1);
    net_run(net, 4);
    assert_route(net, "A", "B", NULL, l0, 1);
    unsigned calls = net->r[a].route_calls;
    net_run(net, 5);
    assert_int_equal(net->r[a].route_calls, calls); /* no flapping */
    net_disconnect(net, l0);
    net_run(net, 3);
    assert_route(net, "A", "B", NULL, l1, 1);
    assert_route(net, "B", "A", NULL, l1, 1);
    net_free(net);
}

static bool drop_lsu_b_to_d(net_t *net, int from, int to, jn_message_t *msg)
{
    const int *bd = net->filter_ctx;
    return from == bd[0] && to == bd[1] && strcmp(msg_opname(msg), "LSU") == 0;
}

/* Ring A-B-C-D-A; B restarts and D does not get its new link state (its
 * LSUs to D are lost) while A does: A takes its path to C through B, D
 * (missing B's links) through itself. D's valid origins then say A's
 * copies for C pass D, as B's do at B: a multicast copy would reach C
 * twice. D's multicast origins leave A out until B's link state comes,
 * which the LSR sent again every tick fetches once LSUs flow. */
static void test_multicast_origins_wait_for_a_missing_link_state(void **state)
{
    net_t *net = net_new();
    int a = net_add(net, "A"), b = net_add(net, "B"), c = net_add(net, "C"), d = net_add(net, "D");
    net_connect(net, a, b, 1);
    net_connect(net, b, c, 1);
    net_connect(net, c, d, 1);
    net_connect(net, d, a, 1);
    net_run(net, 10);
    assert_route(net, "A", "C", "B", -1, 2); /* the tie goes to B */
    assert_false(valid_origin(net, "D", "C", "A"));
    assert_true(valid_origin(net, "B", "C", "A"));
    assert_true(mc_origin(net, "B", "C", "A"));
    int bd[2] = {b, d};
    net->filter = drop_lsu_b_to_d;
    net->filter_ctx = bd;
    net_restart(net, b);
    net_run(net, 6);
    assert_route(net, "A", "C", "B", -1, 2);
    assert_true(mc_origin(net, "B", "C", "A"));
    /* what the core does after each batch of control messages */
    for (int i = 0; i < 4; i++)
        jn_mesh_flush_CT(net->r[i].mesh);
    assert_true(valid_origin(net, "D", "C", "A")); /* D's view: A-D-C */
    assert_false(mc_origin(net, "D", "C", "A"));   /* not sure: not forwarded */
    net->filter = NULL;
    net_tick(net); /* D asks again on its tick, without waiting for an RA */
    for (int i = 0; i < 4; i++)
        jn_mesh_flush_CT(net->r[i].mesh);
    assert_false(valid_origin(net, "D", "C", "A"));
    assert_false(mc_origin(net, "D", "C", "A"));
    (void)a;
    (void)c;
    net_free(net);
}

/* B's link state and advertisements reach C only (those to A and D are
 * lost), for the test below. */
static bool drop_b_state_but_to_c(net_t *net, int from, int to, jn_message_t *msg)
{
    const int *bc = net->filter_ctx;
    const char *op = msg_opname(msg);
    return from == bc[0] && to != bc[1] && (strcmp(op, "LSU") == 0 || strcmp(op, "RA") == 0);
}

/* A, B, C, D, every pair linked but B-C. B-C comes up; C's new link
 * state (listing B) reaches A, B's (listing C) does not yet, nor B's
 * advertisement of it (as in the milliseconds after a link comes back).
 * A, holding B's link state without C, takes B's path to C through
 * itself, while B sends its copies for C straight there: were A to forward
 * B's multicast copies to C, C would get them twice (seen in the chaos
 * test after C came back from a stall). The one-sided link (C lists B, B
 * does not list C) marks both link states as not sure at A. */
static void test_multicast_origins_wait_for_a_one_sided_link(void **state)
{
    net_t *net = net_new();
    int a = net_add(net, "A"), b = net_add(net, "B"), c = net_add(net, "C"), d = net_add(net, "D");
    net_connect(net, a, b, 1);
    net_connect(net, a, c, 1);
    net_connect(net, a, d, 1);
    net_connect(net, b, d, 1);
    net_connect(net, c, d, 1);
    int bc_link = net_connect(net, b, c, 1);
    net_disconnect(net, bc_link);
    net_run(net, 10);
    for (int i = 0; i < 4; i++)
        jn_mesh_flush_CT(net->r[i].mesh);
    assert_route(net, "B", "C", "A", -1, 2); /* the tie goes to A */
    assert_true(mc_origin(net, "A", "C", "B"));
    int bc[2] = {b, c};
    net->filter = drop_b_state_but_to_c;
    net->filter_ctx = bc;
    net_reconnect(net, bc_link);
    net_run(net, 2);
    for (int i = 0; i < 4; i++)
        jn_mesh_flush_CT(net->r[i].mesh);
    assert_route(net, "B", "C", NULL, bc_link, 1); /* B sends its copies for C straight there */
    assert_true(valid_origin(net, "A", "C", "B")); /* A's view: B-A-C */
    assert_false(mc_origin(net, "A", "C", "B"));   /* not sure: not forwarded */
    assert_false(mc_origin(net, "D", "C", "B"));
    net->filter = NULL;
    net_run(net, 10); /* B's next RA, and A's LSR for what it lacks */
    for (int i = 0; i < 4; i++)
        jn_mesh_flush_CT(net->r[i].mesh);
    assert_false(valid_origin(net, "A", "C", "B")); /* agreed again: B-C */
    /* agreed: every valid origin is sure again, everywhere */
    const char *ids[4] = {"A", "B", "C", "D"};
    for (int at = 0; at < 4; at++)
        for (int to = 0; to < 4; to++)
            for (int o = 0; o < 4; o++)
                if (at != to && at != o && to != o)
                    assert_true(mc_origin(net, ids[at], ids[to], ids[o]) ==
                                valid_origin(net, ids[at], ids[to], ids[o]));
    (void)a;
    (void)d;
    net_free(net);
}

/* Lost HELLOs (no link-lost event): the neighbour expires after max age. */
static void test_neighbour_expires_without_hello(void **state)
{
    net_t *net = net_new();
    net->ls_max_age = 5;
    int a = net_add(net, "A"), b = net_add(net, "B");
    int ab = net_connect(net, a, b, 1);
    net_run(net, 4);
    assert_true(route(net, "A", "B")->reachable);
    net->c[ab].blackhole = true;
    net_run(net, 3);
    assert_true(route(net, "A", "B")->reachable); /* 3 s max age not passed */
    net_run(net, 2);
    assert_false(route(net, "A", "B")->reachable);
    assert_int_equal(net->r[a].unreachable_calls, 1);
    /* the link is still there but carries nothing: both ask to close it */
    assert_int_equal(net->r[a].silent_calls, 1);
    assert_int_equal(net->r[a].silent_link, ab);
    assert_int_equal(net->r[b].silent_calls, 1);
    assert_int_equal(net->r[b].silent_link, ab);
    /* B's stored link state keeps its record until it ages out (5 s
     * here); then, unreferenced, it is deleted on the third tick */
    assert_int_not_equal(find_known(&net->r[a], "B"), -1);
    unsigned last_count = jn_mesh_node_find_CT(net->r[a].mesh, "B", 1)->unref_ticks;
    bool gone = false;
    for (int t = 0; t < 20 && !gone; t++) {
        net_tick(net);
        jn_mesh_node_t *nb = jn_mesh_node_find_CT(net->r[a].mesh, "B", 1);
        gone = nb == NULL;
        if (nb && nb->unref_ticks > 0) {
            assert_int_equal(nb->peers.n, 0);
            assert_int_equal(nb->unref_ticks, last_count + 1);
            last_count = nb->unref_ticks;
        }
    }
    assert_true(gone);
    /* found unreferenced on ticks 1 and 2 (after them still there), deleted on 3 */
    assert_int_equal(last_count, JN_MESH_UNREF_TICKS - 1);
    assert_int_equal(find_known(&net->r[a], "B"), -1);
    assert_int_equal(net->r[a].removed, 1);
    net->c[ab].blackhole = false;
    net_run(net, 4);
    assert_route(net, "A", "B", NULL, ab, 1);
    net_free(net);
}

/* A router that did not run for 10 s (its process stopped) while its
 * neighbour's HELLOs queued up unread: its first tick, 10 s late, must not
 * expire the neighbour nor ask to close the link; the HELLOs read after it
 * keep the neighbour. The neighbour, which did hear nothing for 10 s,
 * expires it (and asks to close the link), as it should. */
static void test_own_stall_expires_nobody(void **state)
{
    net_t *net = net_new();
    int a = net_add(net, "A"), b = net_add(net, "B");
    int ab = net_connect(net, a, b, 1);
    net_run(net, 4);
    assert_true(route(net, "A", "B")->reachable);
    for (int t = 0; t < 10; t++) { /* only B runs; what it sends waits */
        net->now += JN_MESH_TICK_MS;
        jn_mesh_tick_CT(net->r[b].mesh, net->now);
    }
    net->now += JN_MESH_TICK_MS;
    jn_mesh_tick_CT(net->r[a].mesh, net->now); /* A runs again: 10 s late */
    assert_true(route(net, "A", "B")->reachable);
    assert_int_equal(net->r[a].unreachable_calls, 0);
    assert_int_equal(net->r[a].silent_calls, 0);
    net_pump(net); /* A reads what waited */
    net_run(net, 2);
    assert_true(route(net, "A", "B")->reachable);
    assert_int_equal(net->r[a].silent_calls, 0);
    assert_int_equal(net->r[b].silent_calls, 1);
    assert_int_equal(net->r[b].silent_link, ab);
    net_run(net, 6);
    assert_route(net, "A", "B", NULL, ab, 1);
    assert_route(net, "B", "A", NULL, ab, 1);
    net_free(net);
}

/* Two live routers with one id, not neighbours of one router: the routers
 * that hear both keep the one that started first (smaller instance) and
 * ignore the newcomer, instead of resetting its state back and forth. */
static void test_duplicate_id_keeps_the_first(void **state)
{
    (void)state;
    net_t *net = net_new();
    int a = net_add(net, "A"), b = net_add(net, "B"), c = net_add(net, "C");
    net_connect(net, a, b, 1);
    net_connect(net, b, c, 1);
    net_run(net, 8);
    int a2 = net_add(net, "A"); /* a later instance */
    net_connect(net, a2, c, 1);
    net_run(net, 12);
    for (int at = b; at <= c; at++) {
        jn_mesh_node_t *n = jn_mesh_node_find_CT(net->r[at].mesh, "A", 1);
        assert_non_null(n);
        assert_int_equal(n->instance, net->r[a].instance);
        assert_int_equal(n->banned_instance, net->r[a2].instance);
    }
    assert_route(net, "C", "A", "B", -1, 2);
    net_free(net);
}

/* A restarted router (new instance) has its state reset and re-learned. */
static void test_restart_resets_and_relearns(void **state)
{
    net_t *net = net_new();
    int a = net_add(net, "A"), b = net_add(net, "B"), c = net_add(net, "C");
    net_connect(net, a, b, 1);
    net_connect(net, b, c, 1);
    net_run(net, 8);
    local_mobile(net, "C", "M0q1", true, JN_MESH_HINT_BALANCED);
    net_run(net, 2);
    assert_true(has_mobile(net, "A", "C", "M0q1"));
    jn_mesh_node_t *nc = jn_mesh_node_find_CT(net->r[a].mesh, "C", 1);
    uint64_t old_seq = nc->ls_seq;
    int index = nc->index;
    assert_true(old_seq >= 1);

    net_restart(net, c);
    /* A sees C's new instance in C's first RA that reaches it */
    for (int i = 0; i < 10 && has_mobile(net, "A", "C", "M0q1"); i++)
        net_tick(net);
    /* C's mobile keys are gone, C keeps its index */
    assert_false(has_mobile(net, "A", "C", "M0q1"));
    nc = jn_mesh_node_find_CT(net->r[a].mesh, "C", 1);
    assert_non_null(nc);
    assert_int_equal(nc->index, index);
    assert_int_equal(nc->instance, net->r[c].instance);
    net_run(net, 6);
    uint64_t ls_c;
    jn_mesh_own_state_CT(net->r[c].mesh, &ls_c, NULL);
    assert_int_equal(nc->ls_seq, ls_c);
    assert_route(net, "A", "C", "B", -1, 2);
    /* its new sequence numbers, starting again from 1, are accepted */
    local_mobile(net, "C", "M0q2", true, JN_MESH_HINT_CLOSEST);
    net_run(net, 2);
    assert_true(has_mobile(net, "A", "C", "M0q2"));
    assert_false(has_mobile(net, "A", "C", "M0q1"));
    assert_int_equal(nc->mobile_seq, 1);
    net_free(net);
}

/* Remote link states age out without RA and come back with the next one. */
static void test_remote_link_state_ages_out(void **state)
{
    net_t *net = net_new();
    net->ls_max_age = 5; /* stable RA interval stays 30 s */
    int a = net_add(net, "A"), b = net_add(net, "B"), c = net_add(net, "C");
    net_connect(net, a, b, 1);
    net_connect(net, b, c, 1);
    net_run(net, 8);
    jn_mesh_node_t *nc = jn_mesh_node_find_CT(net->r[a].mesh, "C", 1);
    assert_true(nc->ls_seq >= 1);
    bool aged = false;
    for (int i = 0; i < 40 && !aged; i++) {
        net_tick(net);
        aged = nc->ls_seq == 0 && nc->peers.n == 0;
    }
    assert_true(aged);
    /* the next RA from C (30 s stable interval) brings it back */
    bool back = false;
    for (int i = 0; i < 35 && !back; i++) {
        net_tick(net);
        back = nc->ls_seq >= 1;
    }
    assert_true(back);
    (void)a;
    (void)b;
    (void)c;
    net_free(net);
}

/* RA timing: first on the first tick; flux interval after a change, then
 * the stable one. */
static void test_ra_intervals(void **state)
{
    net_t *net = net_new();
    int a = net_add(net, "A"), b = net_add(net, "B");
    net->r[a].capture = true;
    net_tick(net);
    assert_int_equal(net->r[a].n_sent, 1); /* no link yet: only the RA */
    assert_int_equal(net->r[a].sent[0].kind, 'A');
    assert_string_equal(msg_opname(net->r[a].sent[0].msg), "RA");
    capture_clear(&net->r[a]);
    net_connect(net, a, b, 1);
    int64_t ra_times[64];
    size_t n_ra = 0;
    for (int i = 0; i < 60; i++) {
        net_tick(net);
        for (size_t k = 0; k < net->r[a].n_sent; k++)
            if (strcmp(msg_opname(net->r[a].sent[k].msg), "RA") == 0 && n_ra < 64)
                ra_times[n_ra++] = net->now;
        capture_clear(&net->r[a]);
    }
    /* the last change is early: after the flux period RAs come 30 s apart */
    assert_true(n_ra >= 3);
    assert_int_equal(ra_times[n_ra - 1] - ra_times[n_ra - 2], 30000);
    assert_true(ra_times[1] - ra_times[0] <= 4000);
    net_free(net);
}

/* The HELLOs sent (captured) by r, and clears its capture. */
static unsigned hellos_sent(frouter_t *r)
{
    unsigned n = 0;
    for (size_t k = 0; k < r->n_sent; k++)
        n += strcmp(msg_opname(r->sent[k].msg), "HELLO") == 0;
    capture_clear(r);
    return n;
}

/* A router heard for the first time is answered with a HELLO at once on
 * its link, once: two routers become neighbours within one tick of either
 * (here A's alone), not a hello interval later when the other's turn
 * comes (the gap in which 1.19's system_tests_router_mesh saw a router
 * known from the RAs with no route to it yet). */
static void test_first_hello_is_answered_at_once(void **state)
{
    net_t *net = net_new();
    int a = net_add(net, "A"), b = net_add(net, "B");
    net_connect(net, a, b, 1);
    net->r[a].capture = net->r[b].capture = true;
    net->now += JN_MESH_TICK_MS;
    jn_mesh_tick_CT(net->r[a].mesh, net->now); /* B's tick does not come */
    net_pump(net);
    jn_mesh_node_t *na = jn_mesh_node_find_CT(net->r[b].mesh, "A", 1);
    jn_mesh_node_t *nb = jn_mesh_node_find_CT(net->r[a].mesh, "B", 1);
    assert_non_null(na);
    assert_non_null(nb);
    assert_int_equal(na->link, 0); /* each bound to the connection (link 0) */
    assert_int_equal(nb->link, 0);
    /* A: its tick's and its answer to B's; B: its answer to A's */
    assert_int_equal(hellos_sent(&net->r[a]), 2);
    assert_int_equal(hellos_sent(&net->r[b]), 1);
    /* known ids are not answered out of turn: one HELLO a tick each */
    net_tick(net);
    assert_int_equal(hellos_sent(&net->r[a]), 1);
    assert_int_equal(hellos_sent(&net->r[b]), 1);
    net_run(net, 3);
    assert_route(net, "A", "B", NULL, 0, 1);
    assert_route(net, "B", "A", NULL, 0, 1);
    net_free(net);
}

int main(void)
{
    quiet_logs();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_routers_discover_each_other),
        cmocka_unit_test(test_linear_three),
        cmocka_unit_test(test_square_with_diagonal),
        cmocka_unit_test(test_ring_of_six_converges),
        cmocka_unit_test(test_link_loss_reconverges),
        cmocka_unit_test(test_parallel_links_rebind),
        cmocka_unit_test(test_neighbour_expires_without_hello),
        cmocka_unit_test(test_own_stall_expires_nobody),
        cmocka_unit_test(test_multicast_origins_wait_for_a_missing_link_state),
        cmocka_unit_test(test_multicast_origins_wait_for_a_one_sided_link),
        cmocka_unit_test(test_restart_resets_and_relearns),
        cmocka_unit_test(test_duplicate_id_keeps_the_first),
        cmocka_unit_test(test_remote_link_state_ages_out),
        cmocka_unit_test(test_ra_intervals),
        cmocka_unit_test(test_first_hello_is_answered_at_once),
    };
    return finish_mesh_tests(cmocka_run_group_tests(tests, NULL, NULL));
}
