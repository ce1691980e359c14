/*
 * test_util_log.c — logging (junction/log.h): enable-string parsing (valid
 * and invalid) and formatting, module/level names, that a disabled level
 * does not evaluate the arguments, the line format written to a file (with
 * and without timestamp and source), DEFAULT inheritance, per-level counts,
 * the ring of recent entries, bad output files, control octets written as
 * '?' (a peer's text cannot forge a line), and whole lines from
 * concurrent threads while settings change.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/log.h>

#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Each test gets a fresh temporary log file as DEFAULT's output. */
struct fixture {
    char path[64];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    snprintf(f->path, sizeof(f->path), "/tmp/jn-test-log-XXXXXX");
    int fd = mkstemp(f->path);
    if (fd < 0)
        return -1;
    close(fd);
    char err[256];
    if (jn_log_set_output(JN_LOG_MOD_DEFAULT, f->path, err, sizeof(err)) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    jn_log_shutdown();
    unlink(f->path);
    free(f);
    return 0;
}

/* The whole file as a NUL-terminated string (caller frees). */
static char *read_file(const char *path)
{
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    return buf;
}

static void test_parse_enable_valid_strings(void **state)
{
    (void)state;
    unsigned m = 0;
    assert_int_equal(jn_log_parse_enable("trace,debug,warning+", &m, NULL, 0), 0);
    assert_int_equal(m, JN_LOG_MASK(JN_LOG_TRACE) | JN_LOG_MASK(JN_LOG_DEBUG) |
                            JN_LOG_MASK(JN_LOG_WARNING) | JN_LOG_MASK(JN_LOG_ERROR) |
                            JN_LOG_MASK(JN_LOG_CRITICAL));
    assert_int_equal(jn_log_parse_enable("info+", &m, NULL, 0), 0);
    assert_int_equal(m, 0x7cu);
    assert_int_equal(jn_log_parse_enable("trace+", &m, NULL, 0), 0);
    assert_int_equal(m, JN_LOG_MASK_ALL);
    assert_int_equal(jn_log_parse_enable("none", &m, NULL, 0), 0);
    assert_int_equal(m, 0);
    assert_int_equal(jn_log_parse_enable("critical", &m, NULL, 0), 0);
    assert_int_equal(m, JN_LOG_MASK(JN_LOG_CRITICAL));
    /* case-insensitive prefixes, in qdrouterd's order; other separators */
    assert_int_equal(jn_log_parse_enable("INF+", &m, NULL, 0), 0);
    assert_int_equal(m, 0x7cu);
    assert_int_equal(jn_log_parse_enable("n", &m, NULL, 0), 0);
    assert_int_equal(m, JN_LOG_MASK(JN_LOG_NOTICE));
    assert_int_equal(jn_log_parse_enable(" debug; error :critical ", &m, NULL, 0), 0);
    assert_int_equal(m, JN_LOG_MASK(JN_LOG_DEBUG) | JN_LOG_MASK(JN_LOG_ERROR) |
                            JN_LOG_MASK(JN_LOG_CRITICAL));
    assert_int_equal(jn_log_parse_enable("default", &m, NULL, 0), 0);
    assert_int_equal(m, JN_LOG_MASK_INHERIT);
}

static void test_parse_enable_unknown_level_names_token(void **state)
{
    (void)state;
    unsigned m = 12345;
    char err[128] = "";
    assert_int_equal(jn_log_parse_enable("info,bogus+", &m, err, sizeof(err)), JN_EINVAL);
    assert_non_null(strstr(err, "'bogus+'"));
    assert_int_equal(m, 12345); /* unchanged on error */
    assert_int_equal(jn_log_parse_enable("informational", &m, err, sizeof(err)), JN_EINVAL);
    assert_non_null(strstr(err, "informational"));
    assert_int_equal(jn_log_parse_enable("+", &m, err, sizeof(err)), JN_EINVAL);
    assert_int_equal(jn_log_parse_enable(NULL, &m, err, sizeof(err)), JN_EINVAL);
    /* a bad string leaves the module's setting alone */
    assert_int_equal(jn_log_set_enable(JN_LOG_MOD_ROUTER, "trace,xyz", err, sizeof(err)),
                     JN_EINVAL);
    assert_non_null(strstr(err, "xyz"));
    assert_false(jn_log_enabled(JN_LOG_MOD_ROUTER, JN_LOG_TRACE));
}

static void test_mask_format_round_trips(void **state)
{
    (void)state;
    const char *cases[] = {"info+",    "trace,debug,warning+", "none", "default", "trace+", "debug",
                           "critical", "trace,info,error+"};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unsigned m;
        char buf[64];
        assert_int_equal(jn_log_parse_enable(cases[i], &m, NULL, 0), 0);
        assert_int_equal(jn_log_mask_format(m, buf, sizeof(buf)), (int)strlen(cases[i]));
        assert_string_equal(buf, cases[i]);
    }
    char small[4];
    assert_int_equal(jn_log_mask_format(0x7c, small, sizeof(small)), JN_ERANGE);
}

static void test_module_and_level_names(void **state)
{
    (void)state;
    assert_int_equal(jn_log_module_from_name("ROUTER_CORE"), JN_LOG_MOD_ROUTER_CORE);
    assert_int_equal(jn_log_module_from_name("conn_mgr"), JN_LOG_MOD_CONN_MGR);
    assert_int_equal(jn_log_module_from_name("Default"), JN_LOG_MOD_DEFAULT);
    assert_int_equal(jn_log_module_from_name("ROUTER_COR"), JN_EINVAL);
    assert_int_equal(jn_log_module_from_name(NULL), JN_EINVAL);
    for (int m = 0; m < JN_LOG_MODULE_COUNT; m++)
        assert_int_equal(jn_log_module_from_name(jn_log_module_name(m)), m);
    assert_string_equal(jn_log_module_name(JN_LOG_MOD_PROTOCOL), "PROTOCOL");
    assert_string_equal(jn_log_module_name(JN_LOG_MODULE_COUNT), "?");
    assert_int_equal(JN_LOG_SCHEMA_MODULE_COUNT, 17);
    for (int l = 0; l < JN_LOG_LEVEL_COUNT; l++)
        assert_int_equal(jn_log_level_from_name(jn_log_level_name(l)), l);
    assert_int_equal(jn_log_level_from_name("WARNING"), JN_LOG_WARNING);
    assert_int_equal(jn_log_level_from_name("warn"), JN_EINVAL);
    assert_string_equal(jn_log_level_name(JN_LOG_NOTICE), "notice");
}

static int evaluations;

static int side_effect(void)
{
    return ++evaluations;
}

static void test_disabled_level_does_not_evaluate_arguments(void **state)
{
    (void)state;
    evaluations = 0;
    /* default: info and above */
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_DEBUG, "value %d", side_effect());
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_TRACE, "value %d", side_effect());
    assert_int_equal(evaluations, 0);
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_INFO, "value %d", side_effect());
    assert_int_equal(evaluations, 1);
    assert_int_equal(jn_log_set_enable(JN_LOG_MOD_ROUTER, "none", NULL, 0), 0);
    JN_LOG(JN_LOG_MOD_ROUTER, JN_LOG_CRITICAL, "value %d", side_effect());
    assert_int_equal(evaluations, 1);
}

static void test_line_format_with_timestamp_and_source(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(jn_log_set_include_source(JN_LOG_MOD_ROUTER_CORE, 1), 0);
    int line = __LINE__ + 1;
    JN_LOG(JN_LOG_MOD_ROUTER_CORE, JN_LOG_INFO, "[C%d] hello %s", 12, "world");
    char *text = read_file(f->path);

    char expect_tail[128];
    snprintf(expect_tail, sizeof(expect_tail),
             " ROUTER_CORE (info) [C12] hello world (test_util_log.c:%d)\n", line);
    regex_t re;
    assert_int_equal(regcomp(&re,
                             "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6} "
                             "[+-][0-9]{4} ",
                             REG_EXTENDED),
                     0);
    assert_int_equal(regexec(&re, text, 0, NULL, 0), 0);
    regfree(&re);
    assert_int_equal(strlen(text), 32 + strlen(expect_tail));
    assert_string_equal(text + 32, expect_tail);
    free(text);
}

static void test_line_format_without_timestamp(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(jn_log_set_include_timestamp(JN_LOG_MOD_DEFAULT, 0), 0);
    JN_LOG(JN_LOG_MOD_AGENT, JN_LOG_WARNING, "disk %d%% full", 93);
    JN_LOG(JN_LOG_MOD_PROTOCOL, JN_LOG_ERROR, "bad frame");
    char *text = read_file(f->path);
    assert_string_equal(text, "AGENT (warning) disk 93% full\nPROTOCOL (error) bad frame\n");
    free(text);
}

static void test_modules_follow_default_until_set(void **state)
{
    (void)state;
    assert_false(jn_log_enabled(JN_LOG_MOD_SERVER, JN_LOG_DEBUG));
    assert_int_equal(jn_log_set_enable(JN_LOG_MOD_DEFAULT, "debug+", NULL, 0), 0);
    assert_true(jn_log_enabled(JN_LOG_MOD_SERVER, JN_LOG_DEBUG));
    assert_true(jn_log_enabled(JN_LOG_MOD_MAIN, JN_LOG_DEBUG));
    assert_int_equal(jn_log_set_enable(JN_LOG_MOD_SERVER, "error+", NULL, 0), 0);
    assert_false(jn_log_enabled(JN_LOG_MOD_SERVER, JN_LOG_DEBUG));
    assert_true(jn_log_enabled(JN_LOG_MOD_SERVER, JN_LOG_ERROR));
    assert_int_equal(jn_log_set_enable(JN_LOG_MOD_DEFAULT, "trace+", NULL, 0), 0);
    assert_false(jn_log_enabled(JN_LOG_MOD_SERVER, JN_LOG_TRACE)); /* own setting */
    assert_int_equal(jn_log_set_enable(JN_LOG_MOD_SERVER, "default", NULL, 0), 0);
    assert_true(jn_log_enabled(JN_LOG_MOD_SERVER, JN_LOG_TRACE));

    jn_log_config_t c;
    assert_int_equal(jn_log_get_config(JN_LOG_MOD_SERVER, &c), 0);
    assert_int_equal(c.mask, JN_LOG_MASK_ALL);
    assert_false(c.enable_set);
    assert_true(c.include_timestamp);
    assert_false(c.include_source);
    assert_false(c.output_set);
    assert_int_equal(jn_log_set_output(JN_LOG_MOD_SERVER, "stdout", NULL, 0), 0);
    assert_int_equal(jn_log_get_config(JN_LOG_MOD_SERVER, &c), 0);
    assert_string_equal(c.output, "stdout");
    assert_true(c.output_set);
    assert_int_equal(jn_log_set_include_source(JN_LOG_MOD_SERVER, 2), JN_EINVAL);
}

static void test_defaults_after_shutdown_are_qdrouterd_defaults(void **state)
{
    (void)state;
    jn_log_shutdown();
    jn_log_config_t c;
    assert_int_equal(jn_log_get_config(JN_LOG_MOD_DEFAULT, &c), 0);
    assert_int_equal(c.mask, JN_LOG_MASK_AND_ABOVE(JN_LOG_INFO));
    assert_true(c.include_timestamp);
    assert_false(c.include_source);
    assert_string_equal(c.output, "stderr");
}

static void test_counts_per_level(void **state)
{
    (void)state;
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO, "a");
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO, "b");
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_ERROR, "c");
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_DEBUG, "not written, not counted");
    uint64_t counts[JN_LOG_LEVEL_COUNT];
    assert_int_equal(jn_log_get_counts(JN_LOG_MOD_POLICY, counts), 0);
    assert_int_equal(counts[JN_LOG_INFO], 2);
    assert_int_equal(counts[JN_LOG_ERROR], 1);
    assert_int_equal(counts[JN_LOG_DEBUG], 0);
}

struct collected {
    int n;
    char first[64];
    char last[64];
    jn_log_entry_t last_entry;
};

static void collect(const jn_log_entry_t *e, void *ctx)
{
    struct collected *c = ctx;
    if (c->n == 0)
        snprintf(c->first, sizeof(c->first), "%s", e->text);
    snprintf(c->last, sizeof(c->last), "%s", e->text);
    c->last_entry = *e;
    c->n++;
}

static void test_ring_keeps_most_recent_entries(void **state)
{
    (void)state;
    for (int i = 0; i < JN_LOG_RING_SIZE + 5; i++)
        JN_LOG(JN_LOG_MOD_CONTAINER, JN_LOG_NOTICE, "entry %d", i);
    struct collected c = {0};
    assert_int_equal(jn_log_recent(0, collect, &c), JN_LOG_RING_SIZE);
    assert_int_equal(c.n, JN_LOG_RING_SIZE);
    assert_string_equal(c.first, "entry 5");
    assert_string_equal(c.last, "entry 1004");
    assert_int_equal(c.last_entry.module, JN_LOG_MOD_CONTAINER);
    assert_int_equal(c.last_entry.level, JN_LOG_NOTICE);
    assert_string_equal(c.last_entry.file, "test_util_log.c"); /* copied struct, static name */
    assert_true(c.last_entry.line > 0);
    assert_true(c.last_entry.time_us > 1600000000000000ll);

    struct collected three = {0};
    assert_int_equal(jn_log_recent(3, collect, &three), 3);
    assert_string_equal(three.first, "entry 1002");
    assert_string_equal(three.last, "entry 1004");
}

static void test_output_file_that_cannot_open_is_einval(void **state)
{
    (void)state;
    char err[256] = "";
    assert_int_equal(
        jn_log_set_output(JN_LOG_MOD_HTTP, "/nonexistent-dir/x/y.log", err, sizeof(err)),
        JN_EINVAL);
    assert_non_null(strstr(err, "/nonexistent-dir/x/y.log"));
    assert_int_equal(jn_log_set_output(JN_LOG_MOD_HTTP, "", err, sizeof(err)), JN_EINVAL);
    jn_log_config_t c;
    assert_int_equal(jn_log_get_config(JN_LOG_MOD_HTTP, &c), 0);
    assert_false(c.output_set);
}

static void test_long_text_is_cut(void **state)
{
    (void)state;
    char big[JN_LOG_TEXT_MAX + 100];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    JN_LOG(JN_LOG_MOD_MESSAGE, JN_LOG_INFO, "%s", big);
    struct collected c = {0};
    assert_int_equal(jn_log_recent(1, collect, &c), 1);
    assert_int_equal(strlen(c.last), sizeof(c.last) - 1);
}

static void test_control_octets_never_break_a_line(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(jn_log_set_include_timestamp(JN_LOG_MOD_DEFAULT, 0), 0);
    JN_LOG(JN_LOG_MOD_POLICY, JN_LOG_INFO, "address '%s'",
           "x\nSERVER (critical) forged\r\x1b[2J\x7f\tend");
    char *text = read_file(f->path);
    assert_string_equal(text, "POLICY (info) address 'x?SERVER (critical) forged??[2J?\tend'\n");
    free(text);
    struct collected c = {0};
    assert_int_equal(jn_log_recent(1, collect, &c), 1);
    assert_string_equal(c.last, "address 'x?SERVER (critical) forged??[2J?\tend'");
}

#define LOG_THREADS 4
#define LOG_LINES   2000

static void *log_thread(void *arg)
{
    intptr_t id = (intptr_t)arg;
    for (int i = 0; i < LOG_LINES; i++)
        JN_LOG(JN_LOG_MOD_ROUTER_LS, JN_LOG_INFO, "thread %ld line %d %s", (long)id, i,
               "padding-padding-padding-padding-padding-padding-padding-padding");
    return NULL;
}

static void *toggle_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200; i++) {
        jn_log_set_include_source(JN_LOG_MOD_ROUTER_LS, i & 1);
        jn_log_set_enable(JN_LOG_MOD_DEFAULT, (i & 1) ? "trace+" : "info+", NULL, 0);
    }
    return NULL;
}

static void test_concurrent_lines_never_interleave(void **state)
{
    struct fixture *f = *state;
    pthread_t t[LOG_THREADS + 1];
    for (intptr_t i = 0; i < LOG_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, log_thread, (void *)i), 0);
    assert_int_equal(pthread_create(&t[LOG_THREADS], NULL, toggle_thread, NULL), 0);
    for (int i = 0; i <= LOG_THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);

    char *text = read_file(f->path);
    regex_t re;
    assert_int_equal(regcomp(&re,
                             "^[0-9-]{10} [0-9:.]{15} [+-][0-9]{4} ROUTER_LS \\(info\\) thread "
                             "[0-3] line [0-9]+ (padding-?){8}( \\(test_util_log.c:[0-9]+\\))?$",
                             REG_EXTENDED | REG_NOSUB),
                     0);
    int lines = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (regexec(&re, l, 0, NULL, 0) != 0)
            fail_msg("malformed line: %s", l);
        lines++;
    }
    regfree(&re);
    assert_int_equal(lines, LOG_THREADS * LOG_LINES);
    free(text);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_parse_enable_valid_strings),
        T(test_parse_enable_unknown_level_names_token),
        T(test_mask_format_round_trips),
        T(test_module_and_level_names),
        T(test_disabled_level_does_not_evaluate_arguments),
        T(test_line_format_with_timestamp_and_source),
        T(test_line_format_without_timestamp),
        T(test_modules_follow_default_until_set),
        T(test_defaults_after_shutdown_are_qdrouterd_defaults),
        T(test_counts_per_level),
        T(test_ring_keeps_most_recent_entries),
        T(test_output_file_that_cannot_open_is_einval),
        T(test_long_text_is_cut),
        T(test_control_octets_never_break_a_line),
        T(test_concurrent_lines_never_interleave),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
