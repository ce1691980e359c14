/*
 * test_mgmt_metrics.c — /metrics in two steps (router/mgmt/metrics.c):
 * the residence histogram as the text format wants it (cumulative
 * buckets ending at _count, the sum in seconds), the omitted-addresses
 * gauge, the dynamic addresses' one label set and gauge, and jn_mgmt_metrics_format refusing what
 * is not a snapshot (500, nothing read past the octets given, the snapshot freed: ASan).
 * Per-address lines need a running core: tests/system/test_http_metrics.py.
 */
#include <junction/mgmt.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* mobile: 3 copies under 10 us, 2 in (250 us, 500 us], 1 over 1 s */
static void fake_residence(void *io, jn_residence_t *out)
{
    (void)io;
    memset(out, 0, sizeof *out);
    out->count[JN_RES_CLASS_MOBILE][0] = 3;
    out->count[JN_RES_CLASS_MOBILE][5] = 2;
    out->count[JN_RES_CLASS_MOBILE][JN_RES_BUCKETS - 1] = 1;
    out->sum_ns[JN_RES_CLASS_MOBILE] = 2500000001ull;
}

static char *page_of(jn_mgmt_t *agent, const char *query, bool prometheus_names)
{
    char *body = NULL;
    size_t len = 0;
    assert_int_equal(jn_mgmt_metrics_CT(agent, query, prometheus_names, &body, &len), 200);
    assert_non_null(body);
    char *text = malloc(len + 1);
    assert_non_null(text);
    memcpy(text, body, len);
    text[len] = '\0';
    free(body);
    return text;
}

static char *page(jn_mgmt_t *agent)
{
    return page_of(agent, NULL, false);
}

/* 1.19's exact names by default (a 1.19 dashboard keeps working), the
 * Prometheus convention's for its `_total` gauges with the listener's
 * metricsPrometheusNames, and 1.19's again there with ?compat=qdrouterd. */
static void test_gauge_names_1_19_by_default(void **state)
{
    (void)state;
    jn_mgmt_config_t cfg = {.router_id = "R1", .mode = "standalone"};
    jn_mgmt_t *agent = jn_mgmt_create(&cfg);
    static const char *const gauges[] = {"qdr_connections", "qdr_links", "qdr_addresses",
                                         "qdr_routers", "qdr_link_routes", "qdr_auto_links",
                                         "qdr_deliveries_stuck", "qdr_links_blocked"};
    char *dflt = page(agent), *prom = page_of(agent, "", true);
    char *compat = page_of(agent, "compat=qdrouterd", true);
    for (size_t i = 0; i < sizeof gauges / sizeof gauges[0]; i++) {
        char with[96], without[96];
        snprintf(with, sizeof with, "# TYPE %s_total gauge\n", gauges[i]);
        snprintf(without, sizeof without, "# TYPE %s gauge\n", gauges[i]);
        assert_non_null(strstr(dflt, with));
        assert_null(strstr(dflt, without));
        assert_non_null(strstr(prom, without));
        assert_null(strstr(prom, with));
        assert_non_null(strstr(compat, with));
    }
    /* counters keep `_total` in every case */
    assert_non_null(strstr(prom, "# TYPE qdr_accepted_deliveries_total counter\n"));
    free(dflt);
    free(prom);
    free(compat);
    jn_mgmt_free(agent);
}

static void test_residence_histogram(void **state)
{
    (void)state;
    jn_mgmt_config_t cfg = {.router_id = "R1",
                            .mode = "standalone",
                            .residence = fake_residence,
                            .metrics_address_limit = 10};
    jn_mgmt_t *agent = jn_mgmt_create(&cfg);
    assert_non_null(agent);
    char *text = page(agent);
    static const char *const want[] = {
        "# TYPE junction_delivery_residence_seconds histogram\n",
        "junction_delivery_residence_seconds_bucket{class=\"mobile\",le=\"1e-05\"} 3\n",
        "junction_delivery_residence_seconds_bucket{class=\"mobile\",le=\"0.00025\"} 3\n",
        "junction_delivery_residence_seconds_bucket{class=\"mobile\",le=\"0.0005\"} 5\n",
        "junction_delivery_residence_seconds_bucket{class=\"mobile\",le=\"1\"} 5\n",
        "junction_delivery_residence_seconds_bucket{class=\"mobile\",le=\"+Inf\"} 6\n",
        "junction_delivery_residence_seconds_sum{class=\"mobile\"} 2.500000001\n",
        "junction_delivery_residence_seconds_count{class=\"mobile\"} 6\n",
        "junction_delivery_residence_seconds_count{class=\"local\"} 0\n",
        "junction_delivery_residence_seconds_count{class=\"router\"} 0\n",
        "junction_delivery_residence_seconds_count{class=\"other\"} 0\n",
        /* no core: no address, none left out */
        "junction_metrics_addresses_omitted 0\n",
        /* the dynamic addresses' sums are always there, named only so */
        "junction_address_deliveries_ingress_total{class=\"dynamic\",address=\"$dynamic\"} 0\n",
        "junction_address_deliveries_egress_total{class=\"dynamic\",address=\"$dynamic\"} 0\n",
        "junction_dynamic_addresses 0\n",
        "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes ",
        "# TYPE junction_pool_object_bytes gauge\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(text, want[i]))
            fail_msg("missing: %s\nin:\n%s", want[i], text);
    const char *first = strstr(text, "junction_address_deliveries_ingress_total{");
    assert_non_null(first);
    assert_true(strncmp(first + 41, "{class=\"dynamic\"", 16) == 0);
    assert_null(strstr(first + 1, "junction_address_deliveries_ingress_total{"));
    free(text);
    jn_mgmt_free(agent);
}

static void test_no_residence_hook_no_histogram(void **state)
{
    (void)state;
    jn_mgmt_config_t cfg = {.router_id = "R1", .mode = "standalone"};
    jn_mgmt_t *agent = jn_mgmt_create(&cfg);
    char *text = page(agent);
    assert_null(strstr(text, "junction_delivery_residence_seconds"));
    assert_non_null(strstr(text, "qdr_connections_total 0\n"));
    free(text);
    jn_mgmt_free(agent);
}

static int format_of(const void *snap, size_t len)
{
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, snap, len);
    char *body = (char *)1;
    size_t out = 1;
    int status = jn_mgmt_metrics_format(copy, len, &body, &out);
    if (status != 200) {
        assert_null(body);
        assert_int_equal(out, 0);
    } else {
        free(body);
    }
    return status;
}

static void test_format_refuses_what_is_not_a_snapshot(void **state)
{
    (void)state;
    jn_mgmt_config_t cfg = {.router_id = "R1", .mode = "standalone"};
    jn_mgmt_t *agent = jn_mgmt_create(&cfg);
    char *snap = NULL;
    size_t len = 0;
    assert_int_equal(jn_mgmt_metrics_snapshot_CT(agent, NULL, false, &snap, &len), 200);
    assert_true(len > 64);
    /* a whole one formats; every shorter prefix that cuts the head or its
     * text is refused without reading past it (ASan would say) */
    assert_int_equal(format_of(snap, len), 200);
    for (size_t cut = 0; cut < len; cut += cut < 128 ? 1 : 97)
        assert_int_equal(format_of(snap, cut), 500);
    char junk[256];
    memset(junk, 0x5a, sizeof junk);
    assert_int_equal(format_of(junk, sizeof junk), 500);
    char *body = (char *)1;
    size_t out = 1;
    assert_int_equal(jn_mgmt_metrics_format(NULL, 0, &body, &out), 500);
    assert_null(body);
    free(snap);
    jn_mgmt_free(agent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gauge_names_1_19_by_default),
        cmocka_unit_test(test_residence_histogram),
        cmocka_unit_test(test_no_residence_hook_no_histogram),
        cmocka_unit_test(test_format_refuses_what_is_not_a_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
