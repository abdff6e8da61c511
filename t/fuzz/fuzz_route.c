/*
 * fuzz_route.c: path routing (kernel/svc_route.c, svc_router_match) over
 * the real route table, with the checks of its parameters that follow
 * (svc_dispatch_route: slugs and ids, 404, 405 with Allow, OPTIONS).
 *
 * Input: "<METHOD> <path>": the method up to the first space, the rest the
 * path as httpd hands it to the module (r->uri: percent-decoded, so any
 * byte but NUL). A method that is not an HTTP token is skipped, as httpd
 * refuses such a request line before any module sees it.
 *
 * Properties: a match names a route of that method (HEAD: GET), whose
 * template has as many segments as the path, with every parameter a
 * segment of the path and no '/'; every refusal is a problem document,
 * 404 or 405, and a 405 says what is allowed; a match is the same when
 * asked again (the router keeps no state).
 */
#include "fuzz_svc.h"
#include "svc_areas.h"

#include <apr_lib.h>

static svc_router_t *router;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    if (svc_router_create(&router, svc_route_table(fuzz_root(), svc_areas), fuzz_root())
        != APR_SUCCESS) {
        fprintf(stderr, "fuzz_route: the route table does not build\n");
        abort();
    }
    return 0;
}

/* RFC 9110's token: what httpd accepts as a method. */
static int is_token(const char *s)
{
    if (!*s) {
        return 0;
    }
    for (; *s; s++) {
        if (!(apr_isalnum(*s) || strchr("!#$%&'*+-.^_`|~", *s))) {
            return 0;
        }
    }
    return 1;
}

static int count_segments(const char *path)
{
    int n = 0;

    for (; *path; path++) {
        n += *path == '/';
    }
    return n;
}

static int param_in_path(void *baton, const char *name, const char *value)
{
    const char *path = baton;
    apr_size_t n = strlen(value);
    const char *at;

    (void)name;
    if (n == 0 || strchr(value, '/')) {
        return 0;
    }
    for (at = strstr(path, value); at; at = strstr(at + 1, value)) {
        if (at[-1] == '/' && (at[n] == '/' || at[n] == '\0')) {
            return 1;
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = { data, size };
    const char *method, *path, *allow = NULL;
    const svc_route_t *again;
    apr_table_t *params;
    svc_ctx_t *ctx;
    apr_pool_t *p;
    apr_status_t rv;

    apr_pool_create(&p, fuzz_root());
    ctx = fuzz_ctx(p);
    method = fuzz_cut(&in, p, ' ', NULL);
    path = fuzz_cut(&in, p, -1, NULL);
    if (!method || !path || !is_token(method)) {
        goto done;
    }
    ctx->method = method;
    ctx->path = path;
    rv = svc_dispatch_route(ctx, router);
    if (rv == APR_SUCCESS && ctx->route) {
        const char *want = strcmp(method, "HEAD") == 0 ? "GET" : method;

        FUZZ_ASSERT(strcmp(ctx->route->method, want) == 0);
        FUZZ_ASSERT(count_segments(ctx->route->path) == count_segments(path));
        FUZZ_ASSERT(apr_table_do(param_in_path, (void *)path, ctx->params, NULL));
        params = apr_table_make(p, 4);
        again = svc_router_match(router, method, path, p, params, &allow);
        FUZZ_ASSERT(again == ctx->route && allow == NULL);
        (void)svc_dispatch_body_limit(ctx);
    }
    else if (rv == APR_SUCCESS) {
        /* OPTIONS on a path that exists: 204 with Allow. */
        FUZZ_ASSERT(strcmp(method, "OPTIONS") == 0);
        FUZZ_ASSERT(apr_table_get(ctx->headers_out, "Allow") != NULL);
    }
    else {
        int status = fuzz_check_problem(ctx, rv);

        FUZZ_ASSERT(status == 404 || status == 405);
        if (status == 405) {
            FUZZ_ASSERT(apr_table_get(ctx->headers_out, "Allow") != NULL);
        }
    }
done:
    apr_pool_destroy(p);
    return 0;
}
