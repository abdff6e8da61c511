/*
 * fuzz_query.c: query strings, as a list request reads them: the decoding
 * into parameters (kernel/svc_dispatch.c, svc_dispatch_query, over base's
 * svc_url_decode_form, as the glue calls it), then ?limit= and ?cursor=
 * (kernel/svc_page.c, svc_page_parse: cursors are base64url, versioned
 * and MAC'd over the list they belong to), Last-Event-ID and
 * ?last_event_id= (svc_stream_resume_point), the audit log's time filters
 * (svc_parse_rfc3339_usec, and back with svc_format_rfc3339_usec), a byte
 * offset (svc_parse_int), and the masking of a query for the access log
 * (svc_redact_query).
 *
 * Input: "<query string>[\n<Last-Event-ID header>]". The list is the real
 * route listAudit of org acme, for a signed-in user. A cursor written
 * "@<n>" is replaced by the cursor this list issues for key n, computed
 * after the other parameters are read, so valid cursors of every filter
 * combination are reachable.
 *
 * Properties: every refusal is a 400 problem document; a cursor this list
 * issued is accepted and gives back its key; an accepted cursor is the
 * one cursor of its key (written again, it is the same text); an accepted
 * limit is 1 to 200 and the fetch size one more; a time filter accepted
 * comes back to the same instant through its UTC form, or is refused as
 * out of range; a masked query has the same parts, each hidden.
 */
#include "fuzz_svc.h"
#include "svc_areas.h"

static const svc_route_t *route;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const svc_route_t *r;

    (void)argc;
    (void)argv;
    fuzz_init();
    for (r = svc_route_table(fuzz_root(), svc_areas); r->method; r++) {
        if (r->op_id && strcmp(r->op_id, "listAudit") == 0) {
            route = r;
        }
    }
    if (!route || !(route->flags & SVC_RF_PAGED) || !route->query) {
        fprintf(stderr, "fuzz_query: no paged route listAudit with filters\n");
        abort();
    }
    return 0;
}

static void check_time_filter(const char *v)
{
    apr_time_t t, back;
    apr_int64_t secs;
    char utc[SVC_RFC3339_USEC_LEN + 1];

    if (!v || svc_parse_rfc3339_usec(v, &t) != APR_SUCCESS) {
        FUZZ_ASSERT(!v || svc_parse_rfc3339(v, &secs) != APR_SUCCESS);
        return;
    }
    /* The two readers agree: whole seconds are the floor of the instant. */
    FUZZ_ASSERT(svc_parse_rfc3339(v, &secs) == APR_SUCCESS);
    FUZZ_ASSERT(secs * APR_USEC_PER_SEC <= t && t < (secs + 1) * APR_USEC_PER_SEC);
    if (svc_format_rfc3339_usec(utc, t) != APR_SUCCESS) {
        /* Out of years 1 to 9999 once the offset is applied. */
        return;
    }
    FUZZ_ASSERT(strlen(utc) == SVC_RFC3339_USEC_LEN);
    FUZZ_ASSERT(svc_parse_rfc3339_usec(utc, &back) == APR_SUCCESS && back == t);
}

static int count_parts(const char *q)
{
    int n = 1;

    for (; *q; q++) {
        n += *q == '&';
    }
    return n;
}

static void check_masked(apr_pool_t *p, const char *args)
{
    const char *masked = svc_redact_query(p, args, NULL, NULL);
    char *copy, *part, *state = NULL;

    if (!*args) {
        FUZZ_ASSERT(*masked == '\0');
        return;
    }
    FUZZ_ASSERT(count_parts(masked) == count_parts(args));
    copy = apr_pstrdup(p, masked);
    for (part = apr_strtok(copy, "&", &state); part; part = apr_strtok(NULL, "&", &state)) {
        const char *eq = strchr(part, '=');
        FUZZ_ASSERT(strcmp(eq ? eq + 1 : part, "[REDACTED]") == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = { data, size };
    svc_principal_t *who;
    const char *args, *header, *cursor, *minted = NULL;
    svc_page_t pg;
    svc_ctx_t *ctx;
    apr_pool_t *p;
    apr_status_t rv;
    apr_int64_t after;
    long long v, key = 0;

    apr_pool_create(&p, fuzz_root());
    ctx = fuzz_ctx(p);
    args = fuzz_cut(&in, p, '\n', NULL);
    header = fuzz_cut(&in, p, -1, NULL);
    if (!args) {
        goto done;
    }
    ctx->route = route;
    ctx->path = "/api/orgs/acme/audit";
    apr_table_setn(ctx->params, "orgSlug", "acme");
    who = apr_pcalloc(p, sizeof(*who));
    who->via = SVC_VIA_SESSION;
    who->user_id = "usr_fuzz";
    who->scope = SVC_SCOPE_ADMIN;
    ctx->who = who;
    if (header) {
        apr_table_setn(ctx->headers_in, "Last-Event-ID", header);
    }
    check_masked(p, args);

    rv = svc_dispatch_query(ctx, args);
    if (rv != APR_SUCCESS) {
        FUZZ_ASSERT(fuzz_check_problem(ctx, rv) == 400);
        goto done;
    }
    FUZZ_ASSERT(apr_table_elts(ctx->query)->nelts <= SVC_MAX_QUERY_PARAMS);

    /* A cursor the list issues, when asked for with "@<key>". */
    cursor = apr_table_get(ctx->query, "cursor");
    if (cursor && cursor[0] == '@'
        && svc_parse_int(cursor + 1, 1, APR_INT64_MAX, &key) == APR_SUCCESS) {
        minted = svc_cursor_encode(ctx, (apr_int64_t)key);
        apr_table_setn(ctx->query, "cursor", minted);
        cursor = minted;
    }
    rv = svc_page_parse(ctx, &pg);
    if (rv == APR_SUCCESS) {
        long long before;

        FUZZ_ASSERT(pg.limit >= 1 && pg.limit <= SVC_PAGE_MAX);
        FUZZ_ASSERT(svc_parse_int(pg.fetch, 2, SVC_PAGE_MAX + 1, &v) == APR_SUCCESS
                    && v == pg.limit + 1);
        FUZZ_ASSERT(svc_parse_int(pg.before, 1, APR_INT64_MAX, &before) == APR_SUCCESS);
        if (cursor) {
            /* One text per key: the cursor is the one this list writes. */
            FUZZ_ASSERT(strcmp(svc_cursor_encode(ctx, before), cursor) == 0);
        }
        if (minted) {
            FUZZ_ASSERT(before == key);
        }
    }
    else {
        FUZZ_ASSERT(fuzz_check_problem(ctx, rv) == 400);
        /* Only the limit may have refused a cursor the list issued. */
        FUZZ_ASSERT(!minted || apr_table_get(ctx->query, "limit"));
        ctx->problem = NULL;
    }

    rv = svc_stream_resume_point(ctx, &after);
    if (rv == APR_SUCCESS) {
        FUZZ_ASSERT(after >= -1);
        FUZZ_ASSERT(after >= 0 || (!header && !apr_table_get(ctx->query, "last_event_id")));
    }
    else {
        FUZZ_ASSERT(fuzz_check_problem(ctx, rv) == 400);
        ctx->problem = NULL;
    }

    check_time_filter(apr_table_get(ctx->query, "since"));
    check_time_filter(apr_table_get(ctx->query, "until"));
    if (apr_table_get(ctx->query, "offset")) {
        (void)svc_parse_int(apr_table_get(ctx->query, "offset"), 0, APR_INT64_MAX, &v);
    }
done:
    apr_pool_destroy(p);
    return 0;
}
