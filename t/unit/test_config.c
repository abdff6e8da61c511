/*
 * test_config.c: the kernel's side of configuration: the values directives
 * take (whole numbers, sizes, prices), settings unset, merged for a
 * virtual host and defaulted, rate classes known by name, and the public
 * URL's origin. The directives themselves are checked against httpd in
 * t/kernel/config.t.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_areas.h"
#include "svc_kernel.h"

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
    return svc_test_run(argc, argv);
}
