/*
 * test_kernel_request.c: what the kernel does for the glue with a request's raw
 * parts, which needs no httpd: the query string decoded all or nothing
 * (svc_dispatch_query, over svc_url_decode_form), and a share link's
 * token kept out of the path the access log prints (svc_route_redact_path).
 * t/kernel/query.t and t/share/portal.t check the same through httpd.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_kernel.h"

static char *decoded(apr_pool_t *p, const char *s)
{
    char *copy = apr_pstrdup(p, s);

    return svc_url_decode_form(copy) ? copy : NULL;
}

SVC_TEST(form_decoding)
{
    SVC_CHECK_STR(decoded(p, "a+b%20c"), "a b c");
    SVC_CHECK_STR(decoded(p, "%2Fx"), "/x");
    SVC_CHECK_STR(decoded(p, "%c3%A9"), "\xc3\xa9");
    SVC_CHECK_STR(decoded(p, ""), "");
    SVC_CHECK(!decoded(p, "%00"));
    SVC_CHECK(!decoded(p, "a%"));
    SVC_CHECK(!decoded(p, "a%4"));
    SVC_CHECK(!decoded(p, "%zz"));
    SVC_CHECK(!decoded(p, "%4g"));
}

SVC_TEST(query_all_or_nothing)
{
    svc_config_t conf;
    svc_ctx_t *ctx;
    const char *many;
    int i;

    svc_config_defaults(&conf, p);
    ctx = svc_ctx_create(p, &conf);
    SVC_CHECK(svc_dispatch_query(ctx, NULL) == APR_SUCCESS);
    SVC_CHECK(svc_dispatch_query(ctx, "") == APR_SUCCESS);
    SVC_CHECK(svc_dispatch_query(ctx, "status=open&q=a+b&flag&x=%2F") == APR_SUCCESS);
    SVC_CHECK_STR(apr_table_get(ctx->query, "status"), "open");
    SVC_CHECK_STR(apr_table_get(ctx->query, "q"), "a b");
    SVC_CHECK_STR(apr_table_get(ctx->query, "flag"), "");
    SVC_CHECK_STR(apr_table_get(ctx->query, "x"), "/");

    ctx = svc_ctx_create(p, &conf);
    SVC_CHECK(svc_dispatch_query(ctx, "a=1&a=2") == SVC_EPROBLEM);
    SVC_CHECK(ctx->problem && ctx->problem->status == 400);
    SVC_CHECK_STR(ctx->problem->code, "invalid_query");
    ctx = svc_ctx_create(p, &conf);
    SVC_CHECK(svc_dispatch_query(ctx, "a=%00") == SVC_EPROBLEM);
    ctx = svc_ctx_create(p, &conf);
    SVC_CHECK(svc_dispatch_query(ctx, "a%zz=1") == SVC_EPROBLEM);

    many = "";
    for (i = 0; i < 64; i++) {
        many = apr_psprintf(p, "%s%sp%d=1", many, i ? "&" : "", i);
    }
    ctx = svc_ctx_create(p, &conf);
    SVC_CHECK(svc_dispatch_query(ctx, many) == APR_SUCCESS);
    ctx = svc_ctx_create(p, &conf);
    SVC_CHECK(svc_dispatch_query(ctx, apr_pstrcat(p, many, "&p64=1", NULL)) == SVC_EPROBLEM);
}

SVC_TEST(secret_path_segments_redacted)
{
    const svc_route_t portal = { .method = "GET", .path = "/api/share/:token/documents/:id" };

    SVC_CHECK_STR(svc_route_redact_path(p, &portal, "/api/share/s3cr3t/documents/doc_1"),
                  "/api/share/[REDACTED]/documents/doc_1");
    SVC_CHECK_STR(svc_route_redact_path(p, &(svc_route_t){ .path = "/api/share/:token" },
                                        "/api/share/s3cr3t"),
                  "/api/share/[REDACTED]");
    /* :tokenId is another parameter, not the credential. */
    SVC_CHECK_STR(svc_route_redact_path(p, &(svc_route_t){ .path = "/api/me/tokens/:tokenId" },
                                        "/api/me/tokens/tok_1"),
                  "/api/me/tokens/tok_1");
}

int main(int argc, const char *const *argv)
{
    return svc_test_run(argc, argv);
}
