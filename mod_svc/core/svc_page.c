/*
 * svc_page.c: limit and cursor parsing, and page assembly.
 */
#include "svc_page.h"
#include "svc_ctx.h"
#include "svc_crypto.h"
#include "svc_json.h"

#include <stdarg.h>
#include <string.h>

char *svc_cursor_encode(apr_pool_t *p, apr_int64_t seq)
{
    const char *raw = apr_psprintf(p, "v1:%" APR_INT64_T_FMT, seq);

    return svc_b64url_encode(p, (const unsigned char *)raw, strlen(raw));
}

apr_status_t svc_page_parse(svc_ctx_t *ctx, svc_page_t *pg)
{
    const char *limit = apr_table_get(ctx->query, "limit");
    const char *cursor = apr_table_get(ctx->query, "cursor");
    long long v;

    pg->limit = SVC_PAGE_DEFAULT;
    pg->before = "9223372036854775807";
    if (limit) {
        if (svc_parse_int(limit, 1, SVC_PAGE_MAX, &v) != APR_SUCCESS) {
            svc_fail_field(ctx, "limit", "out_of_range",
                           "limit must be an integer from 1 to %d.", SVC_PAGE_MAX);
            return SVC_EPROBLEM;
        }
        pg->limit = (int)v;
    }
    if (cursor) {
        unsigned char *raw;
        apr_size_t n;

        if (strlen(cursor) > 64
            || svc_b64url_decode(ctx->pool, cursor, strlen(cursor), &raw, &n) != APR_SUCCESS
            || n < 4 || memcmp(raw, "v1:", 3) != 0
            || svc_parse_int((const char *)raw + 3, 1, APR_INT64_MAX, &v) != APR_SUCCESS) {
            svc_fail_field(ctx, "cursor", "invalid_cursor",
                           "cursor must be a value returned as next_cursor by this list.");
            return SVC_EPROBLEM;
        }
        pg->before = apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT, (apr_int64_t)v);
    }
    pg->fetch = apr_psprintf(ctx->pool, "%d", pg->limit + 1);
    return APR_SUCCESS;
}

apr_status_t svc_reply_page(svc_ctx_t *ctx, const svc_dbres_t *res, int json_col,
                            int seq_col, const svc_page_t *pg)
{
    int rows = svc_dbres_rows(res);
    int n = rows > pg->limit ? pg->limit : rows;
    struct iovec *iov = apr_palloc(ctx->pool, sizeof(struct iovec) * (apr_size_t)(2 * n + 4));
    const char *next = "null";
    apr_size_t len;
    int i, k = 0;

    if (rows > pg->limit) {
        apr_int64_t seq;
        if (svc_dbres_int64(res, n - 1, seq_col, &seq) != APR_SUCCESS) {
            return SVC_EDB;
        }
        next = apr_pstrcat(ctx->pool, "\"", svc_cursor_encode(ctx->pool, seq), "\"", NULL);
    }
    /* The items are JSON already: concatenate rather than parse and re-dump. */
    iov[k].iov_base = (void *)"{\"data\":[";
    iov[k++].iov_len = 9;
    for (i = 0; i < n; i++) {
        const char *item = svc_dbres_str(res, i, json_col);
        if (!item) {
            return SVC_EDB;
        }
        if (i) {
            iov[k].iov_base = (void *)",";
            iov[k++].iov_len = 1;
        }
        iov[k].iov_base = (void *)item;
        iov[k++].iov_len = strlen(item);
    }
    iov[k].iov_base = (void *)"],\"next_cursor\":";
    iov[k++].iov_len = 16;
    iov[k].iov_base = (void *)next;
    iov[k++].iov_len = strlen(next);
    iov[k].iov_base = (void *)"}";
    iov[k++].iov_len = 1;
    ctx->resp_body = apr_pstrcatv(ctx->pool, iov, (apr_size_t)k, &len);
    ctx->resp_len = len;
    ctx->status = 200;
    ctx->content_type = "application/json; charset=utf-8";
    return APR_SUCCESS;
}

const char svc_page_before[] = "(page bound)";
const char svc_page_fetch[] = "(page size)";

apr_status_t svc_reply_list(svc_ctx_t *ctx, const svc_stmt_t *st, ...)
{
    const char *params[16];
    svc_page_t pg;
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;
    va_list ap;
    int i;

    if (st->nparams > (int)(sizeof(params) / sizeof(params[0]))) {
        return APR_EINVAL;
    }
    if ((rv = svc_page_parse(ctx, &pg)) != APR_SUCCESS
        || (rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    va_start(ap, st);
    for (i = 0; i < st->nparams; i++) {
        const char *v = va_arg(ap, const char *);
        params[i] = v == svc_page_before ? pg.before : v == svc_page_fetch ? pg.fetch : v;
    }
    va_end(ap);
    rv = svc_db_exec(db, st, ctx->pool, &res, params);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_page(ctx, res, 0, 1, &pg);
}
