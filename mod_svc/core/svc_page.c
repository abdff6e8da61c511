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

/* The next_cursor value: null, or the quoted cursor of the page's last row. */
static apr_status_t next_cursor(svc_ctx_t *ctx, const svc_dbres_t *res, int seq_col,
                                const svc_page_t *pg, const char **pnext)
{
    apr_int64_t seq;

    *pnext = "null";
    if (svc_dbres_rows(res) <= pg->limit) {
        return APR_SUCCESS;
    }
    if (svc_dbres_int64(res, pg->limit - 1, seq_col, &seq) != APR_SUCCESS) {
        return SVC_EDB;
    }
    *pnext = apr_pstrcat(ctx->pool, "\"", svc_cursor_encode(ctx->pool, seq), "\"", NULL);
    return APR_SUCCESS;
}

static void reply_page_text(svc_ctx_t *ctx, svc_jbuf_t *b)
{
    ctx->resp_body = svc_jbuf_text(b, &ctx->resp_len);
    ctx->status = 200;
    ctx->content_type = "application/json; charset=utf-8";
}

apr_status_t svc_reply_page(svc_ctx_t *ctx, const svc_dbres_t *res, int json_col,
                            int seq_col, const svc_page_t *pg)
{
    int rows = svc_dbres_rows(res);
    int n = rows > pg->limit ? pg->limit : rows;
    const char *next;
    svc_jbuf_t b;
    apr_status_t rv;
    int i;

    if ((rv = next_cursor(ctx, res, seq_col, pg, &next)) != APR_SUCCESS) {
        return rv;
    }
    /* The items are JSON already: concatenate rather than parse and re-dump. */
    svc_jbuf_init(&b, ctx->pool, 256 * (apr_size_t)n + 64);
    svc_jbuf_raw(&b, "{\"data\":[", 9);
    for (i = 0; i < n; i++) {
        const char *item = svc_dbres_str(res, i, json_col);
        if (!item) {
            return SVC_EDB;
        }
        if (i) {
            svc_jbuf_raw(&b, ",", 1);
        }
        svc_jbuf_raw(&b, item, strlen(item));
    }
    svc_jbuf_raw(&b, "],\"next_cursor\":", 16);
    svc_jbuf_raw(&b, next, strlen(next));
    svc_jbuf_raw(&b, "}", 1);
    reply_page_text(ctx, &b);
    return APR_SUCCESS;
}

/* Does one column fit the type the shape gives it? */
static int col_fits(const svc_dbres_t *res, int col, svc_coltype_e type)
{
    int binary = 0;
    unsigned oid = svc_dbres_type(res, col, &binary);

    switch (type) {
    case SVC_COL_TEXT:
        return oid == SVC_OID_TEXT || oid == SVC_OID_VARCHAR;
    case SVC_COL_INT:
        return oid == SVC_OID_INT8 || oid == SVC_OID_INT4 || oid == SVC_OID_INT2;
    case SVC_COL_BOOL:
        return oid == SVC_OID_BOOL;
    case SVC_COL_TIME:
        return oid == SVC_OID_TIMESTAMPTZ && binary;
    default:
        return 0;
    }
}

static apr_status_t shape_walk(const svc_dbres_t *res, int *pcol, const svc_col_t *shape)
{
    for (; shape->key; shape++) {
        if (shape->type == SVC_COL_OBJECT) {
            if (shape_walk(res, pcol, shape->sub) != APR_SUCCESS) {
                return SVC_EDB;
            }
        }
        else if (!col_fits(res, (*pcol)++, shape->type)) {
            return SVC_EDB;
        }
    }
    return APR_SUCCESS;
}

apr_status_t svc_shape_check(const svc_dbres_t *res, int col, const svc_col_t *shape)
{
    if (shape_walk(res, &col, shape) != APR_SUCCESS || col != svc_dbres_cols(res)) {
        return SVC_EDB;
    }
    return APR_SUCCESS;
}

/* How many columns a shape takes, nested objects' included. */
static int shape_width(const svc_col_t *shape)
{
    int n = 0;

    for (; shape->key; shape++) {
        n += shape->type == SVC_COL_OBJECT ? shape_width(shape->sub) : 1;
    }
    return n;
}

static apr_status_t row_walk(svc_jbuf_t *b, const svc_dbres_t *res, int row, int *pcol,
                             const svc_col_t *shape)
{
    char num[24], ts[SVC_RFC3339_LEN + 1];
    const svc_col_t *c;
    apr_int64_t v;
    apr_time_t t;

    svc_jbuf_raw(b, "{", 1);
    for (c = shape; c->key; c++) {
        int col = (*pcol)++;

        if (c != shape) {
            svc_jbuf_raw(b, ",", 1);
        }
        svc_jbuf_raw(b, "\"", 1);
        svc_jbuf_raw(b, c->key, strlen(c->key));
        svc_jbuf_raw(b, "\":", 2);
        if (c->type == SVC_COL_OBJECT) {
            (*pcol)--;
            if (svc_dbres_isnull(res, row, col)) {
                *pcol += shape_width(c->sub);
                svc_jbuf_raw(b, "null", 4);
            }
            else if (row_walk(b, res, row, pcol, c->sub) != APR_SUCCESS) {
                return SVC_EDB;
            }
            continue;
        }
        if (svc_dbres_isnull(res, row, col)) {
            svc_jbuf_raw(b, "null", 4);
            continue;
        }
        switch (c->type) {
        case SVC_COL_TEXT:
            svc_jbuf_string(b, svc_dbres_str(res, row, col));
            break;
        case SVC_COL_INT:
            if (svc_dbres_int64(res, row, col, &v) != APR_SUCCESS) {
                return SVC_EDB;
            }
            svc_jbuf_raw(b, num, (apr_size_t)apr_snprintf(num, sizeof(num),
                                                          "%" APR_INT64_T_FMT, v));
            break;
        case SVC_COL_BOOL:
            if (svc_dbres_bool(res, row, col) == 1) {
                svc_jbuf_raw(b, "true", 4);
            }
            else {
                svc_jbuf_raw(b, "false", 5);
            }
            break;
        case SVC_COL_TIME:
            if (svc_dbres_time(res, row, col, &t) != APR_SUCCESS
                || svc_format_rfc3339(ts, t) != APR_SUCCESS) {
                return SVC_EDB;
            }
            svc_jbuf_raw(b, "\"", 1);
            svc_jbuf_raw(b, ts, SVC_RFC3339_LEN);
            svc_jbuf_raw(b, "\"", 1);
            break;
        default:
            return SVC_EDB;
        }
    }
    svc_jbuf_raw(b, "}", 1);
    return APR_SUCCESS;
}

apr_status_t svc_json_row(svc_jbuf_t *b, const svc_dbres_t *res, int row, int col,
                          const svc_col_t *shape)
{
    return row_walk(b, res, row, &col, shape);
}

const char svc_page_before[] = "(page bound)";
const char svc_page_fetch[] = "(page size)";

/* Reads the page parameters and runs a list statement with them in place. */
static apr_status_t list_query(svc_ctx_t *ctx, const svc_stmt_t *st, va_list ap,
                               svc_page_t *pg, svc_dbres_t **pres)
{
    const char *params[16];
    svc_db_t *db;
    apr_status_t rv;
    int i;

    if (st->nparams > (int)(sizeof(params) / sizeof(params[0]))) {
        return APR_EINVAL;
    }
    if ((rv = svc_page_parse(ctx, pg)) != APR_SUCCESS
        || (rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < st->nparams; i++) {
        const char *v = va_arg(ap, const char *);
        params[i] = v == svc_page_before ? pg->before : v == svc_page_fetch ? pg->fetch : v;
    }
    return svc_db_exec(db, st, ctx->pool, pres, params);
}

apr_status_t svc_reply_list(svc_ctx_t *ctx, const svc_stmt_t *st, ...)
{
    svc_page_t pg;
    svc_dbres_t *res;
    apr_status_t rv;
    va_list ap;

    va_start(ap, st);
    rv = list_query(ctx, st, ap, &pg, &res);
    va_end(ap);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_page(ctx, res, 0, 1, &pg);
}

apr_status_t svc_reply_rows(svc_ctx_t *ctx, const svc_stmt_t *st, const svc_col_t *item, ...)
{
    svc_page_t pg;
    svc_dbres_t *res;
    const char *next;
    svc_jbuf_t b;
    apr_status_t rv;
    va_list ap;
    int i, n;

    va_start(ap, item);
    rv = list_query(ctx, st, ap, &pg, &res);
    va_end(ap);
    if (rv != APR_SUCCESS
        || (rv = svc_shape_check(res, 1, item)) != APR_SUCCESS
        || (rv = next_cursor(ctx, res, 0, &pg, &next)) != APR_SUCCESS) {
        return rv;
    }
    n = svc_dbres_rows(res);
    n = n > pg.limit ? pg.limit : n;
    svc_jbuf_init(&b, ctx->pool, 320 * (apr_size_t)n + 64);
    svc_jbuf_raw(&b, "{\"data\":[", 9);
    for (i = 0; i < n; i++) {
        if (i) {
            svc_jbuf_raw(&b, ",", 1);
        }
        if ((rv = svc_json_row(&b, res, i, 1, item)) != APR_SUCCESS) {
            return rv;
        }
    }
    svc_jbuf_raw(&b, "],\"next_cursor\":", 16);
    svc_jbuf_raw(&b, next, strlen(next));
    svc_jbuf_raw(&b, "}", 1);
    reply_page_text(ctx, &b);
    return APR_SUCCESS;
}
