/*
 * test_kernel_config.c: kernel/svc_config.c: the server secret by reference
 * (file:, env:, exec:, refused inline) and the keys derived from it; the
 * values directives take (whole numbers, sizes, prices), settings unset,
 * merged for a virtual host and defaulted, rate classes known by name, and
 * the public URL's origin. The directives themselves are checked against
 * httpd in t/kernel/config.t.
 *
 * Every expectation is independent of the code under test: published
 * vectors, values computed by hand or with another implementation (noted
 * where used), or inputs the test builds byte by byte itself.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_areas.h"
#include "svc_config.h"
#include "svc_crypto.h"
#include "svc_kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------------- */
/* Secrets by reference                                                    */

#define KAT_SECRET "correct horse battery staple, 32+ bytes long!"

typedef struct {
    char dir[256];
} tmpdir_t;

static int tmp_open(tmpdir_t *td)
{
    const char *base = getenv("TMPDIR");

    apr_snprintf(td->dir, sizeof(td->dir), "%s/svc_ut_XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(td->dir) != NULL;
}

/* Writes a file with exactly this mode (umask notwithstanding). */
static const char *tmp_file(apr_pool_t *p, tmpdir_t *td, const char *name, const char *content,
                            apr_size_t len, mode_t mode)
{
    const char *path = apr_pstrcat(p, td->dir, "/", name, NULL);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    if (fd < 0) {
        return NULL;
    }
    if (write(fd, content, len) != (ssize_t)len || fchmod(fd, mode) != 0) {
        close(fd);
        return NULL;
    }
    close(fd);
    return path;
}

static void tmp_close(tmpdir_t *td)
{
    static const char *const names[] = { "a", "b", "c", "g", "o", "e", "s", "x", "exe", "bad",
                                         "dir" };
    char path[300];
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        apr_snprintf(path, sizeof(path), "%s/%s", td->dir, names[i]);
        if (unlink(path) != 0) {
            rmdir(path);
        }
    }
    SVC_CHECK(rmdir(td->dir) == 0);
}

static apr_status_t load(apr_pool_t *p, svc_config_t *conf, const char *ref, const char **perr)
{
    svc_config_defaults(conf, p);
    *perr = NULL;
    return svc_config_load_secret(conf, ref, p, perr);
}

/* The sub-keys of KAT_SECRET, derived with Python's hashlib (master =
 * BLAKE2b-256 of the secret; sub-key i = BLAKE2b-256 keyed by the master
 * with salt LE64(i) and personalisation "svc_pat_" / "svc_sess" /
 * "svc_box_" / "svc_sign": libsodium's crypto_kdf_derive_from_key). Every stored PAT
 * hash depends on these: a change must be deliberate. */
static void check_kat_keys(apr_pool_t *p, const svc_config_t *conf)
{
    SVC_CHECK(conf->have_secret);
    SVC_CHECK_STR(hexof(p, conf->pat_key, 32),
                  "d449bb842310d73c1d07210fd228530c06993a18ac0ac008e97d36ca45890bca");
    SVC_CHECK_STR(hexof(p, conf->session_key, 32),
                  "e50e1772eb2d531b3359a34ae5b9691ad805572ad5653cb69e7b11e605ee077e");
    SVC_CHECK_STR(hexof(p, conf->box_key, 32),
                  "fe2c7b16a0cd048dab8e0a28e4e98ccc49fb223eefb30b06e97f4c53756d77b7");
    SVC_CHECK_STR(hexof(p, conf->signin_key, 32),
                  "1ce04d52652b23b5c345079c978248b5554396085d9274c8b47e1c9f87c20a58");
}

SVC_TEST(config_secret_from_file)
{
    svc_config_t c1, c2, c3;
    const char *err, *fa, *fb, *fc;
    tmpdir_t td;

    if (!tmp_open(&td)) {
        SVC_CHECK(!"mkdtemp");
        return;
    }
    fa = tmp_file(p, &td, "a", KAT_SECRET "\n", strlen(KAT_SECRET) + 1, 0600);
    fb = tmp_file(p, &td, "b", KAT_SECRET "\r\n", strlen(KAT_SECRET) + 2, 0400);
    fc = tmp_file(p, &td, "c", "another secret, also more than 32 bytes", 39, 0600);
    SVC_CHECK(fa && fb && fc);

    SVC_CHECK_INT(load(p, &c1, apr_pstrcat(p, "file:", fa, NULL), &err), APR_SUCCESS);
    check_kat_keys(p, &c1);
    /* Same secret (other line ending, read-only mode) -> same keys. */
    SVC_CHECK_INT(load(p, &c2, apr_pstrcat(p, "file:", fb, NULL), &err), APR_SUCCESS);
    SVC_CHECK(memcmp(c1.pat_key, c2.pat_key, 32) == 0);
    SVC_CHECK(memcmp(c1.session_key, c2.session_key, 32) == 0);
    SVC_CHECK(memcmp(c1.box_key, c2.box_key, 32) == 0);
    /* Another secret -> other keys, all three. */
    SVC_CHECK_INT(load(p, &c3, apr_pstrcat(p, "file:", fc, NULL), &err), APR_SUCCESS);
    SVC_CHECK(memcmp(c1.pat_key, c3.pat_key, 32) != 0);
    SVC_CHECK(memcmp(c1.session_key, c3.session_key, 32) != 0);
    SVC_CHECK(memcmp(c1.box_key, c3.box_key, 32) != 0);
    SVC_CHECK(memcmp(c1.signin_key, c3.signin_key, 32) != 0);
    /* The sub-keys are independent of each other. */
    SVC_CHECK(memcmp(c3.pat_key, c3.session_key, 32) != 0);
    SVC_CHECK(memcmp(c3.pat_key, c3.box_key, 32) != 0);
    SVC_CHECK(memcmp(c3.session_key, c3.box_key, 32) != 0);
    SVC_CHECK(memcmp(c3.signin_key, c3.pat_key, 32) != 0);
    SVC_CHECK(memcmp(c3.signin_key, c3.session_key, 32) != 0);
    SVC_CHECK(memcmp(c3.signin_key, c3.box_key, 32) != 0);
    tmp_close(&td);
}

SVC_TEST(config_secret_file_refusals)
{
    svc_config_t c;
    const char *err, *f;
    tmpdir_t td;

    if (!tmp_open(&td)) {
        SVC_CHECK(!"mkdtemp");
        return;
    }
    /* Readable or writable by group or others. */
    f = tmp_file(p, &td, "g", KAT_SECRET, strlen(KAT_SECRET), 0640);
    SVC_CHECK_INT(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err), APR_EACCES);
    SVC_CHECK(contains(err, "group or others"));
    SVC_CHECK(!c.have_secret);
    f = tmp_file(p, &td, "o", KAT_SECRET, strlen(KAT_SECRET), 0604);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err) != APR_SUCCESS);
    SVC_CHECK(!c.have_secret);
    f = tmp_file(p, &td, "x", KAT_SECRET, strlen(KAT_SECRET), 0620);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err) != APR_SUCCESS);
    f = tmp_file(p, &td, "s", KAT_SECRET, strlen(KAT_SECRET), 0602);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err) != APR_SUCCESS);
    /* Missing, empty, only a newline, too short (31 bytes, newline not counted). */
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", td.dir, "/missing", NULL), &err)
              != APR_SUCCESS);
    SVC_CHECK(err && *err);
    f = tmp_file(p, &td, "e", "", 0, 0600);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err) != APR_SUCCESS);
    SVC_CHECK(contains(err, "empty"));
    f = tmp_file(p, &td, "e", "\n", 1, 0600);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err) != APR_SUCCESS);
    f = tmp_file(p, &td, "bad", "0123456789012345678901234567890\n", 32, 0600);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err) != APR_SUCCESS);
    SVC_CHECK(contains(err, "32"));
    SVC_CHECK(!c.have_secret);
    /* 32 bytes exactly is enough. */
    f = tmp_file(p, &td, "bad", "01234567890123456789012345678901\n", 33, 0600);
    SVC_CHECK_INT(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err), APR_SUCCESS);
    /* A directory is not a secret file. */
    SVC_CHECK(mkdir(apr_pstrcat(p, td.dir, "/dir", NULL), 0700) == 0);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", td.dir, "/dir", NULL), &err) != APR_SUCCESS);
    tmp_close(&td);
}

SVC_TEST(config_secret_env_exec_inline)
{
    svc_config_t c;
    const char *err, *exe, *bad;
    tmpdir_t td;
    static const char script[] = "#!/bin/sh\nprintf '%s\\n' '" KAT_SECRET "'\n";
    static const char failing[] = "#!/bin/sh\necho '" KAT_SECRET "'\nexit 3\n";

    /* env:NAME */
    setenv("SVC_UT_SECRET_ENV", KAT_SECRET, 1);
    SVC_CHECK_INT(load(p, &c, "env:SVC_UT_SECRET_ENV", &err), APR_SUCCESS);
    check_kat_keys(p, &c);
    unsetenv("SVC_UT_SECRET_ENV");
    SVC_CHECK(load(p, &c, "env:SVC_UT_SECRET_ENV", &err) != APR_SUCCESS);
    SVC_CHECK(contains(err, "SVC_UT_SECRET_ENV"));
    setenv("SVC_UT_SECRET_ENV", "short", 1);
    SVC_CHECK(load(p, &c, "env:SVC_UT_SECRET_ENV", &err) != APR_SUCCESS);
    unsetenv("SVC_UT_SECRET_ENV");

    /* exec:/program, whose standard output is the secret. */
    if (!tmp_open(&td)) {
        SVC_CHECK(!"mkdtemp");
        return;
    }
    exe = tmp_file(p, &td, "exe", script, strlen(script), 0700);
    SVC_CHECK(exe != NULL);
    SVC_CHECK_INT(load(p, &c, apr_pstrcat(p, "exec:", exe, NULL), &err), APR_SUCCESS);
    if (err) {
        fprintf(stderr, "exec: %s\n", err);
    }
    check_kat_keys(p, &c);
    /* A program that fails gives no secret, whatever it printed. */
    bad = tmp_file(p, &td, "bad", failing, strlen(failing), 0700);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "exec:", bad, NULL), &err) != APR_SUCCESS);
    SVC_CHECK(!c.have_secret);
    SVC_CHECK(load(p, &c, "exec:/bin/false", &err) != APR_SUCCESS);
    /* echo without arguments prints an empty line: an empty secret. */
    SVC_CHECK(load(p, &c, "exec:/bin/echo", &err) != APR_SUCCESS);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "exec:", td.dir, "/missing", NULL), &err)
              != APR_SUCCESS);
    tmp_close(&td);

    /* Inline values, unknown schemes, nothing. */
    SVC_CHECK(load(p, &c, "0123456789abcdef0123456789abcdef0123456789abcdef", &err)
              != APR_SUCCESS);
    SVC_CHECK(contains(err, "reference"));
    SVC_CHECK(load(p, &c, KAT_SECRET, &err) != APR_SUCCESS);
    SVC_CHECK(load(p, &c, "FILE:/etc/passwd", &err) != APR_SUCCESS);
    SVC_CHECK(load(p, &c, "file", &err) != APR_SUCCESS);
    SVC_CHECK(load(p, &c, "", &err) != APR_SUCCESS);
    SVC_CHECK(load(p, &c, NULL, &err) != APR_SUCCESS);
    SVC_CHECK(!c.have_secret);
}

/* ---------------------------------------------------------------------- */
/* The values directives take; unset, merged, defaulted                     */

SVC_TEST(whole_numbers_are_digits_in_range)
{
    apr_int64_t v = -7;

    SVC_CHECK(svc_config_parse_int("1", 1, 256, &v) && v == 1);
    SVC_CHECK(svc_config_parse_int("256", 1, 256, &v) && v == 256);
    SVC_CHECK(svc_config_parse_int("0", 0, 10, &v) && v == 0);
    SVC_CHECK(svc_config_parse_int("007", 1, 10, &v) && v == 7);
    v = -7;
    /* No suffix, sign, space, exponent, or digits past the range. */
    SVC_CHECK(!svc_config_parse_int("0", 1, 256, &v));
    SVC_CHECK(!svc_config_parse_int("257", 1, 256, &v));
    SVC_CHECK(!svc_config_parse_int("2K", 1, 1000000, &v));
    SVC_CHECK(!svc_config_parse_int("+5", 1, 10, &v));
    SVC_CHECK(!svc_config_parse_int("-1", 0, 10, &v));
    SVC_CHECK(!svc_config_parse_int(" 5", 1, 10, &v));
    SVC_CHECK(!svc_config_parse_int("5 ", 1, 10, &v));
    SVC_CHECK(!svc_config_parse_int("1e3", 1, 10000, &v));
    SVC_CHECK(!svc_config_parse_int("", 0, 10, &v));
    SVC_CHECK(!svc_config_parse_int("99999999999999999999", 0, APR_INT64_MAX, &v));
    SVC_CHECK(v == -7);
}

SVC_TEST(sizes_take_one_suffix)
{
    apr_int64_t v = -7;

    SVC_CHECK(svc_config_parse_size("1", 1, 1024, &v) && v == 1);
    SVC_CHECK(svc_config_parse_size("64K", 1, APR_INT64_C(1) << 40, &v) && v == 65536);
    SVC_CHECK(svc_config_parse_size("64k", 1, APR_INT64_C(1) << 40, &v) && v == 65536);
    SVC_CHECK(svc_config_parse_size("25M", 1, APR_INT64_C(1) << 40, &v) && v == 25 << 20);
    SVC_CHECK(svc_config_parse_size("4G", 1, APR_INT64_C(4) << 30, &v)
              && v == APR_INT64_C(4) << 30);
    v = -7;
    SVC_CHECK(!svc_config_parse_size("5G", 1, APR_INT64_C(4) << 30, &v));
    SVC_CHECK(!svc_config_parse_size("1M", 64 << 20, APR_INT64_C(1) << 40, &v));
    SVC_CHECK(!svc_config_parse_size("5T", 1, APR_INT64_MAX, &v));
    SVC_CHECK(!svc_config_parse_size("25MB", 1, APR_INT64_MAX, &v));
    SVC_CHECK(!svc_config_parse_size("M", 1, APR_INT64_MAX, &v));
    SVC_CHECK(!svc_config_parse_size("-1", 0, APR_INT64_MAX, &v));
    SVC_CHECK(!svc_config_parse_size("1 M", 0, APR_INT64_MAX, &v));
    SVC_CHECK(!svc_config_parse_size("999999999999999999G", 0, APR_INT64_MAX, &v));
    SVC_CHECK(v == -7);
}

SVC_TEST(prices_are_plain_decimals)
{
    double v = -1;

    SVC_CHECK(svc_config_parse_price("2.50", &v) && v == 2.5);
    SVC_CHECK(svc_config_parse_price("0", &v) && v == 0);
    SVC_CHECK(svc_config_parse_price("10000", &v) && v == 10000);
    SVC_CHECK(!svc_config_parse_price("10000.01", &v));
    SVC_CHECK(!svc_config_parse_price("-1", &v));
    SVC_CHECK(!svc_config_parse_price("1e3", &v));
    SVC_CHECK(!svc_config_parse_price("2,50", &v));
    SVC_CHECK(!svc_config_parse_price("1..2", &v));
    SVC_CHECK(!svc_config_parse_price("", &v));
}

/* A virtual host takes what it left unset from the main server; what both
 * left unset takes its default at start. */
SVC_TEST(unset_merged_then_filled)
{
    svc_config_t base, add, merged;

    svc_config_unset(&base, p);
    svc_config_unset(&add, p);
    SVC_CHECK(svc_config_is_unset(base.body_limit));
    SVC_CHECK(svc_config_is_unset(base.statement_timeout_ms));
    SVC_CHECK(svc_config_is_unset(base.provider_allow_private));

    base.body_limit = 4096;
    base.provider_allow_private = 1;
    base.public_url = "https://main.example";
    base.public_origin = "https://main.example";
    svc_config_set_rate(&base, p, "tokens", 5, 60);
    svc_config_set_rate(&base, p, "runs", 7, 60);
    add.statement_timeout_ms = 1500;
    add.provider_allow_private = 0;
    svc_config_set_rate(&add, p, "runs", 1, 1);

    merged = add;
    svc_config_merge(&merged, &base, &add, p);
    svc_config_fill(&merged, p);
    SVC_CHECK_INT(merged.body_limit, 4096);             /* the main server's */
    SVC_CHECK_INT(merged.statement_timeout_ms, 1500);   /* its own */
    SVC_CHECK_INT(merged.provider_allow_private, 0);    /* its own Off beats the main's On */
    SVC_CHECK_INT(merged.session_lifetime, 7 * 24 * 3600); /* the default */
    SVC_CHECK_STR(merged.public_url, "https://main.example");
    SVC_CHECK_STR(merged.public_origin, "https://main.example");
    SVC_CHECK_STR(merged.ui_url, "/");
    SVC_CHECK_INT(svc_config_rate(&merged, "tokens")->limit, 5);
    SVC_CHECK_INT(svc_config_rate(&merged, "runs")->limit, 1);
    SVC_CHECK_INT(svc_config_rate(&base, "runs")->limit, 7);
    SVC_CHECK_INT(merged.internal_allow->nelts, 2);     /* 127.0.0.1 and ::1 */

    svc_config_fill(&base, p);
    SVC_CHECK_INT(base.statement_timeout_ms, 10000);
    SVC_CHECK_INT(base.run_timeout, 1800);
    SVC_CHECK_INT(base.upload_limit, 25 * 1024 * 1024);
}

SVC_TEST(rate_classes_by_name)
{
    const char *names = NULL;

    SVC_CHECK(svc_rate_class_known("tokens", svc_areas, p, &names));
    SVC_CHECK(svc_rate_class_known("models", svc_areas, p, &names));
    SVC_CHECK(!svc_rate_class_known("tokenz", svc_areas, p, &names));
    SVC_CHECK(!svc_rate_class_known("", svc_areas, p, &names));
    SVC_CHECK(!svc_rate_class_known("Tokens", svc_areas, p, &names));
    /* Each class named once, the defaults first. */
    SVC_CHECK(names && strncmp(names, "tokens, token_revoke, signin", 28) == 0);
    SVC_CHECK(names && !strstr(strstr(names, "runs") + 4, "runs"));
}

SVC_TEST(origins_as_browsers_write_them)
{
    SVC_CHECK_STR(svc_config_origin(p, "https://Svc.Example.COM"), "https://svc.example.com");
    SVC_CHECK_STR(svc_config_origin(p, "https://svc.example.com:443/base"),
                  "https://svc.example.com");
    SVC_CHECK_STR(svc_config_origin(p, "http://svc.example.com:80"), "http://svc.example.com");
    SVC_CHECK_STR(svc_config_origin(p, "http://svc.example.com:8080/x/y"),
                  "http://svc.example.com:8080");
    SVC_CHECK_STR(svc_config_origin(p, "https://svc.example.com:80"),
                  "https://svc.example.com:80");
}

int main(int argc, const char *const *argv)
{
    if (svc_crypto_init() != APR_SUCCESS) {
        fprintf(stderr, "svc_crypto_init failed\n");
        return 1;
    }
    return svc_test_run(argc, argv);
}
