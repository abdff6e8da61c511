/*
 * fuzz_json_body.c: request bodies through the route table's schemas, as
 * the kernel reads them (svc_dispatch.c, read_body): the strict parse
 * (base/svc_json.c, svc_json_parse_body), then the check against the body
 * schema of a real route (svc_json_check).
 *
 * Input: "<operationId>\n<body>". The route is the one of that operationId
 * among the routes that take a JSON body; an unknown name picks one by its
 * bytes, so every schema is reached either way.
 *
 * Property: a body the schema accepts, written compactly with every
 * non-ASCII character escaped (the longest way an encoder writes it),
 * fits in svc_json_body_max of its schema, the least body cap the kernel
 * grants the route, so no valid body can be a 413 for its encoding.
 */
#include "fuzz_svc.h"
#include "svc_areas.h"

static const svc_route_t **routes;
static int nroutes;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const svc_route_t *table, *r;
    int n = 0;

    (void)argc;
    (void)argv;
    fuzz_init();
    table = svc_route_table(fuzz_root(), svc_areas);
    for (r = table; r->method; r++) {
        n += r->body != NULL;
    }
    routes = apr_pcalloc(fuzz_root(), sizeof(*routes) * (apr_size_t)(n + 1));
    for (r = table; r->method; r++) {
        if (r->body) {
            routes[nroutes++] = r;
        }
    }
    if (nroutes == 0) {
        fprintf(stderr, "fuzz_json_body: no route takes a JSON body\n");
        abort();
    }
    return 0;
}

static const svc_route_t *pick(const char *op_id)
{
    unsigned h = 0;
    int i;

    for (i = 0; i < nroutes; i++) {
        if (routes[i]->op_id && strcmp(routes[i]->op_id, op_id) == 0) {
            return routes[i];
        }
    }
    for (; *op_id; op_id++) {
        h = h * 31 + (unsigned char)*op_id;
    }
    return routes[h % (unsigned)nroutes];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = { data, size };
    const svc_route_t *route;
    const char *op_id, *body, *err = NULL;
    json_t *obj = NULL, *errors = NULL;
    apr_size_t len, max;
    svc_ctx_t *ctx;
    apr_pool_t *p;

    apr_pool_create(&p, fuzz_root());
    ctx = fuzz_ctx(p);
    op_id = fuzz_cut(&in, p, '\n', NULL);
    route = pick(op_id);
    ctx->method = route->method;
    ctx->route = route;
    body = fuzz_cut(&in, p, -1, &len);
    if (!body) {
        body = "";
        len = 0;
    }
    /* As read_body (svc_dispatch.c): an empty body is the empty object. */
    if (len == 0) {
        obj = svc_json_pool(p, json_object());
    }
    else if (svc_json_parse_body(&obj, body, len, p, &err) != APR_SUCCESS) {
        FUZZ_ASSERT(obj == NULL && err != NULL && *err);
        FUZZ_ASSERT(fuzz_check_problem(ctx, svc_fail(ctx, 400, "invalid_json", "%s", err))
                    == 400);
        goto done;
    }
    FUZZ_ASSERT(json_is_object(obj));
    if (svc_json_check(obj, route->body, p, &errors) != APR_SUCCESS) {
        FUZZ_ASSERT(json_is_array(errors) && json_array_size(errors) > 0);
        svc_fail(ctx, 400, "validation_failed", "The request has invalid fields.");
        ctx->problem->errors = errors;
        FUZZ_ASSERT(fuzz_check_problem(ctx, SVC_EPROBLEM) == 400);
        goto done;
    }
    FUZZ_ASSERT(errors == NULL);
    max = svc_json_body_max(route->body);
    if (max > 0) {
        char *compact = json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII);

        FUZZ_ASSERT(compact != NULL);
        if (strlen(compact) > max) {
            fprintf(stderr, "%s: a valid body of %zu bytes, cap %zu\n", route->op_id,
                    strlen(compact), (size_t)max);
        }
        FUZZ_ASSERT(strlen(compact) <= max);
        FUZZ_ASSERT(svc_dispatch_body_limit(ctx) >= max);
        free(compact);
    }
done:
    apr_pool_destroy(p);
    return 0;
}
