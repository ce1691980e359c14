/*
 * test_io_tls.c — TLS profiles (junction/tls.h): 1.19's password forms and
 * every creation error, each naming its attribute. The key and
 * certificates are made with the openssl command in a temporary directory
 * at the start (as the system tests make theirs).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <junction/tls.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];
static char cert[128], key[128], enc_key[128], other_key[128], pwfile[128];

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    if (rc != 0)
        fail_msg("command failed (%d): %s", rc, cmd);
}

static int make_files(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/jn-tls-unit-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(cert, sizeof cert, "%s/cert.pem", dir);
    snprintf(key, sizeof key, "%s/key.pem", dir);
    snprintf(enc_key, sizeof enc_key, "%s/key-enc.pem", dir);
    snprintf(other_key, sizeof other_key, "%s/other.pem", dir);
    snprintf(pwfile, sizeof pwfile, "%s/pw", dir);
    const char *q = ">/dev/null 2>&1";
    sh("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out %s %s", key, q);
    sh("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out %s %s", other_key, q);
    sh("openssl req -x509 -new -key %s -out %s -days 2 -subj /O=Junction/CN=unit %s", key, cert, q);
    sh("openssl pkey -in %s -out %s -aes256 -passout pass:open-sesame %s", key, enc_key, q);
    FILE *f = fopen(pwfile, "w");
    if (!f)
        return -1;
    fputs("open-sesame\nnot this line\n", f);
    fclose(f);
    return 0;
}

static int remove_files(void **state)
{
    (void)state;
    sh("rm -rf %s", dir);
    return 0;
}

/* ---- password forms ---------------------------------------------------------- */

static void test_password_forms(void **state)
{
    (void)state;
    char out[JN_TLS_PASSWORD_MAX + 1], err[256];
    setenv("JN_UNIT_PW", "from-env", 1);
    assert_int_equal(jn_tls_password_resolve("env:JN_UNIT_PW", out, sizeof out, err, sizeof err),
                     0);
    assert_string_equal(out, "from-env");
    assert_int_equal(jn_tls_password_resolve("env:  JN_UNIT_PW", out, sizeof out, err, sizeof err),
                     0);
    assert_string_equal(out, "from-env");
    assert_int_equal(jn_tls_password_resolve("pass:p:w", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "p:w");
    assert_int_equal(jn_tls_password_resolve("literal:env:x", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "env:x");
    char spec[160];
    snprintf(spec, sizeof spec, "file:%s", pwfile);
    assert_int_equal(jn_tls_password_resolve(spec, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "open-sesame"); /* the first line, without its end */
    assert_int_equal(jn_tls_password_resolve("plain words", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "plain words");
    assert_int_equal(jn_tls_password_resolve("", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "");
}

static void test_password_errors(void **state)
{
    (void)state;
    char out[JN_TLS_PASSWORD_MAX + 1], err[256];
    unsetenv("JN_UNIT_NOPE");
    assert_int_equal(jn_tls_password_resolve("env:JN_UNIT_NOPE", out, sizeof out, err, sizeof err),
                     JN_ENOENT);
    assert_non_null(strstr(err, "'JN_UNIT_NOPE' is not set"));
    assert_int_equal(
        jn_tls_password_resolve("file:/nonexistent/pw", out, sizeof out, err, sizeof err),
        JN_ENOENT);
    assert_non_null(strstr(err, "cannot read '/nonexistent/pw'"));
    assert_int_equal(jn_tls_password_resolve(NULL, out, sizeof out, err, sizeof err), JN_EINVAL);
    char tiny[3];
    assert_int_equal(jn_tls_password_resolve("pass:long", tiny, sizeof tiny, err, sizeof err),
                     JN_EINVAL);
    /* cut at 199 octets, as 1.19 */
    char lng[400] = "pass:";
    memset(lng + 5, 'x', 300);
    lng[305] = '\0';
    assert_int_equal(jn_tls_password_resolve(lng, out, sizeof out, err, sizeof err), 0);
    assert_int_equal(strlen(out), JN_TLS_PASSWORD_MAX);
}

/* ---- profiles ------------------------------------------------------------------ */

/* Create with cfg; expect rc, the attribute named and a phrase in the error. */
static void expect(const jn_tls_profile_config_t *cfg, int rc, const char *attr, const char *phrase)
{
    jn_tls_profile_t *p = (jn_tls_profile_t *)1;
    char err[512] = "";
    const char *bad = NULL;
    assert_int_equal(jn_tls_profile_create(cfg, &p, err, sizeof err, &bad), rc);
    if (rc == 0) {
        assert_non_null(p);
        jn_tls_profile_unref(p);
        return;
    }
    assert_null(p);
    if (!bad || strcmp(bad, attr) != 0)
        fail_msg("attribute: want %s, got %s (%s)", attr, bad ? bad : "NULL", err);
    if (!strstr(err, phrase))
        fail_msg("error: want '%s' in '%s'", phrase, err);
}

static void test_profile_good(void **state)
{
    (void)state;
    jn_tls_profile_config_t cfg = {.name = "ok",
                                   .cert_file = cert,
                                   .private_key_file = key,
                                   .ca_cert_file = cert,
                                   .protocols = "TLSv1.2 TLSv1.3",
                                   .ciphers = "HIGH",
                                   .uid_format = "on"};
    jn_tls_profile_t *p = NULL;
    char err[256];
    assert_int_equal(jn_tls_profile_create(&cfg, &p, err, sizeof err, NULL), 0);
    assert_string_equal(jn_tls_profile_name(p), "ok");
    assert_true(jn_tls_profile_has_cert(p));
    assert_true(jn_tls_profile_has_ca(p));
    assert_non_null(jn_tls_profile_ctx(p));
    /* a connection's reference outlives the creator's */
    jn_tls_profile_t *conn_ref = jn_tls_profile_ref(p);
    jn_tls_profile_unref(p);
    assert_string_equal(jn_tls_profile_name(conn_ref), "ok");
    jn_tls_profile_unref(conn_ref);
    jn_tls_profile_unref(NULL);

    jn_tls_profile_config_t enc = {.name = "enc",
                                   .cert_file = cert,
                                   .private_key_file = enc_key,
                                   .password = "pass:open-sesame"};
    expect(&enc, 0, NULL, NULL);
    char spec[160];
    snprintf(spec, sizeof spec, "file:%s", pwfile);
    enc.password = spec;
    expect(&enc, 0, NULL, NULL);
    enc.password = NULL;
    enc.password_file = pwfile; /* the deprecated attribute */
    expect(&enc, 0, NULL, NULL);
    /* a client-only profile: CAs, no certificate */
    jn_tls_profile_config_t client = {.name = "c", .ca_cert_file = cert};
    expect(&client, 0, NULL, NULL);
}

static void test_profile_errors(void **state)
{
    (void)state;
    jn_tls_profile_config_t c = {
        .name = "bad", .cert_file = "/nonexistent/c.pem", .private_key_file = key};
    expect(&c, JN_EINVAL, "certFile", "cannot read '/nonexistent/c.pem'");
    c.cert_file = pwfile; /* not a certificate */
    expect(&c, JN_EINVAL, "certFile", "is not a PEM certificate");
    c.cert_file = cert;
    c.private_key_file = "/nonexistent/k.pem";
    expect(&c, JN_EINVAL, "privateKeyFile", "cannot read '/nonexistent/k.pem'");
    c.private_key_file = other_key;
    expect(&c, JN_EINVAL, "privateKeyFile", "does not match the certificate");
    c.private_key_file = enc_key;
    expect(&c, JN_EINVAL, "privateKeyFile", "no password is set");
    c.password = "pass:wrong";
    expect(&c, JN_EINVAL, "password", "wrong password");
    c.password = "env:JN_UNIT_NOPE";
    unsetenv("JN_UNIT_NOPE");
    expect(&c, JN_EINVAL, "password", "is not set");
    c.password = NULL;
    c.password_file = "/nonexistent/pw";
    expect(&c, JN_EINVAL, "passwordFile", "cannot read");

    jn_tls_profile_config_t d = {.name = "bad", .cert_file = cert, .private_key_file = key};
    d.ca_cert_file = "/nonexistent/ca.pem";
    expect(&d, JN_EINVAL, "caCertFile", "cannot read");
    d.ca_cert_file = pwfile;
    expect(&d, JN_EINVAL, "caCertFile", "holds no PEM certificate");
    d.ca_cert_file = NULL;
    d.ciphers = "NOT-A-CIPHER";
    expect(&d, JN_EINVAL, "ciphers", "no cipher matches 'NOT-A-CIPHER'");
    d.ciphers = NULL;
    d.protocols = "TLSv1.2 SSLv9";
    expect(&d, JN_EINVAL, "protocols", "unknown protocol 'SSLv9'");
    /* 1.19's SSL names are accepted; they allow nothing (TLSv1.2 does) */
    d.protocols = "TLSv1.2 SSLv3";
    expect(&d, 0, NULL, NULL);
    d.protocols = "SSLv23";
    expect(&d, 0, NULL, NULL);
    d.protocols = " ";
    expect(&d, JN_EINVAL, "protocols", "no protocol");
    d.protocols = NULL;
    d.uid_format = "nx";
    expect(&d, JN_EINVAL, "uidFormat", "uidFormat letters");
    d.uid_format = NULL;
    d.uid_name_mapping_file = cert; /* not JSON */
    expect(&d, JN_EINVAL, "uidNameMappingFile", ":1: invalid JSON");

    jn_tls_profile_config_t k = {.name = "bad", .private_key_file = key};
    expect(&k, JN_EINVAL, "certFile", "privateKeyFile is set without certFile");
}

static const char *const fill_attrs[][2] = {
    {"certFile", "/c"},       {"privateKeyFile", "/k"}, {"caCertFile", "/a"},
    {"password", "pass:x"},   {"passwordFile", "/p"},   {"ciphers", "HIGH"},
    {"protocols", "TLSv1.3"}, {"uidFormat", "n"},       {"uidNameMappingFile", "/m"}};

static const char *fill_get(void *ctx, const char *attr)
{
    (void)ctx;
    for (size_t i = 0; i < sizeof fill_attrs / sizeof fill_attrs[0]; i++)
        if (strcmp(fill_attrs[i][0], attr) == 0)
            return fill_attrs[i][1];
    return NULL;
}

static void test_config_fill(void **state)
{
    (void)state;
    jn_tls_profile_config_t cfg;
    jn_tls_profile_config_fill(&cfg, "p1", fill_get, NULL);
    assert_string_equal(cfg.name, "p1");
    assert_string_equal(cfg.cert_file, "/c");
    assert_string_equal(cfg.private_key_file, "/k");
    assert_string_equal(cfg.ca_cert_file, "/a");
    assert_string_equal(cfg.password, "pass:x");
    assert_string_equal(cfg.password_file, "/p");
    assert_string_equal(cfg.ciphers, "HIGH");
    assert_string_equal(cfg.protocols, "TLSv1.3");
    assert_string_equal(cfg.uid_format, "n");
    assert_string_equal(cfg.uid_name_mapping_file, "/m");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_password_forms), cmocka_unit_test(test_password_errors),
        cmocka_unit_test(test_profile_good),   cmocka_unit_test(test_profile_errors),
        cmocka_unit_test(test_config_fill),
    };
    return cmocka_run_group_tests(tests, make_files, remove_files);
}
