/*
 * svc_page.c: limit and cursor parsing, and page assembly.
 */
#include "svc_page.h"
#include "svc_ctx.h"
#include "svc_route.h"
#include "svc_crypto.h"
#include "svc_json.h"

#include <stdarg.h>
#include <string.h>

#define CURSOR_VERSION 2
#define CURSOR_MAC_BYTES 16
#define CURSOR_BYTES (1 + 8 + CURSOR_MAC_BYTES)

/* One part of what a cursor's MAC covers, length-prefixed so that no two
 * sequences of parts read alike; NULL (an absent filter) is its own mark. */
static void mac_part(svc_jbuf_t *b, const char *s)
{
    char len[24];

    if (!s) {
        svc_jbuf_raw(b, "-;", 2);
        return;
    }
    svc_jbuf_raw(b, len, (apr_size_t)apr_snprintf(len, sizeof(len), "%" APR_SIZE_T_FMT ":",
                                                  strlen(s)));
    svc_jbuf_raw(b, s, strlen(s));
}

/*
 * The MAC of a position in ctx's list: the list is the route (its
 * operation and its path parameters, in the template's order), who asks
 * (the user and their token's org binding, which narrows some lists), and
 * the value of each filter the route documents.
 */
static void cursor_mac(unsigned char mac[CURSOR_MAC_BYTES], const svc_ctx_t *ctx,
                       const unsigned char seq_be[8])
{
    const svc_route_t *route = ctx->route;
    const char *tmpl = route ? route->path : "", *msg;
    unsigned char full[32];
    svc_jbuf_t b;
    apr_size_t n;

    svc_jbuf_init(&b, ctx->pool, 256);
    svc_jbuf_raw(&b, "svc-cursor-v2;", 14);
    mac_part(&b, route ? route->op_id : NULL);
    while ((tmpl = strchr(tmpl, ':')) != NULL) {
        const char *name = apr_pstrmemdup(ctx->pool, tmpl + 1, strcspn(tmpl + 1, "/"));
        mac_part(&b, name);
        mac_part(&b, apr_table_get(ctx->params, name));
        tmpl++;
    }
    mac_part(&b, ctx->who ? ctx->who->user_id : NULL);
    mac_part(&b, ctx->who && ctx->who->via == SVC_VIA_PAT ? ctx->who->token_org_id : NULL);
    if (route && route->query) {
        const svc_qparam_t *q;
        for (q = route->query; q->name; q++) {
            mac_part(&b, q->name);
            mac_part(&b, apr_table_get(ctx->query, q->name));
        }
    }
    svc_jbuf_raw(&b, (const char *)seq_be, 8);
    msg = svc_jbuf_text(&b, &n);
    svc_hmac_sha256(full, ctx->conf->cursor_key, sizeof(ctx->conf->cursor_key),
                    (const unsigned char *)msg, n);
    memcpy(mac, full, CURSOR_MAC_BYTES);
    svc_wipe(full, sizeof(full));
}

char *svc_cursor_encode(const svc_ctx_t *ctx, apr_int64_t seq)
{
    unsigned char raw[CURSOR_BYTES];
    int i;

    raw[0] = CURSOR_VERSION;
    for (i = 0; i < 8; i++) {
        raw[1 + i] = (unsigned char)((apr_uint64_t)seq >> (56 - 8 * i));
    }
    cursor_mac(raw + 9, ctx, raw + 1);
    return svc_b64url_encode(ctx->pool, raw, sizeof(raw));
}

/* The ordering key a cursor of ctx's list stands for; APR_EINVAL for
 * anything this list did not issue. */
static apr_status_t cursor_decode(const svc_ctx_t *ctx, const char *cursor, apr_int64_t *pseq)
{
    unsigned char mac[CURSOR_MAC_BYTES], *raw;
    apr_uint64_t seq = 0;
    apr_size_t n;
    int i;

    if (strlen(cursor) > 64
        || svc_b64url_decode(ctx->pool, cursor, strlen(cursor), &raw, &n) != APR_SUCCESS
        || n != CURSOR_BYTES || raw[0] != CURSOR_VERSION) {
        return APR_EINVAL;
    }
    cursor_mac(mac, ctx, raw + 1);
    if (!svc_ct_equal(mac, raw + 9, CURSOR_MAC_BYTES)) {
        return APR_EINVAL;
    }
    for (i = 0; i < 8; i++) {
        seq = (seq << 8) | raw[1 + i];
    }
    /* We only ever issue positive keys; anything else was not ours. */
    if (seq < 1 || seq > (apr_uint64_t)APR_INT64_MAX) {
        return APR_EINVAL;
    }
    *pseq = (apr_int64_t)seq;
    return APR_SUCCESS;
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
        apr_int64_t seq;

        if (cursor_decode(ctx, cursor, &seq) != APR_SUCCESS) {
            svc_fail_field(ctx, "cursor", "invalid_cursor",
                           "cursor must be a value returned as next_cursor by this list, "
                           "with the same filters.");
            return SVC_EPROBLEM;
        }
        pg->before = apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT, seq);
    }
    pg->fetch = apr_psprintf(ctx->pool, "%d", pg->limit + 1);
    return APR_SUCCESS;
}

/* Writes one item of a page: row `row` of res. */
typedef apr_status_t (*item_fn)(svc_jbuf_t *b, const svc_dbres_t *res, int row,
                                const void *baton);

/*
 * Answers 200 with {"data":[items],"next_cursor":...}: at most pg->limit
 * items; a further row only tells that there is a next page, whose cursor is
 * the ordering key (seq_col) of the last row shown.
 */
static apr_status_t reply_page(svc_ctx_t *ctx, const svc_dbres_t *res, int seq_col,
                               const svc_page_t *pg, item_fn write_item, const void *baton,
                               apr_size_t item_size)
{
    int rows = svc_dbres_rows(res);
    int n = rows > pg->limit ? pg->limit : rows;
    const char *next = "null";
    svc_jbuf_t b;
    apr_status_t rv;
    int i;

    if (rows > pg->limit) {
        apr_int64_t seq;
        if (svc_dbres_int64(res, n - 1, seq_col, &seq) != APR_SUCCESS) {
            return SVC_EDB;
        }
        next = apr_pstrcat(ctx->pool, "\"", svc_cursor_encode(ctx, seq), "\"", NULL);
    }
    svc_jbuf_init(&b, ctx->pool, item_size * (apr_size_t)n + 64);
    svc_jbuf_raw(&b, "{\"data\":[", 9);
    for (i = 0; i < n; i++) {
        if (i) {
            svc_jbuf_raw(&b, ",", 1);
        }
        if ((rv = write_item(&b, res, i, baton)) != APR_SUCCESS) {
            return rv;
        }
    }
    svc_jbuf_raw(&b, "],\"next_cursor\":", 16);
    svc_jbuf_raw(&b, next, strlen(next));
    svc_jbuf_raw(&b, "}", 1);
    ctx->resp_body = svc_jbuf_text(&b, &ctx->resp_len);
    ctx->status = 200;
    ctx->content_type = "application/json; charset=utf-8";
    return APR_SUCCESS;
}

/* An item SQL built: its JSON text, copied as it is (no parse, no re-dump). */
static apr_status_t json_text_item(svc_jbuf_t *b, const svc_dbres_t *res, int row,
                                   const void *baton)
{
    const char *item = svc_dbres_str(res, row, *(const int *)baton);

    if (!item) {
        return SVC_EDB;
    }
    svc_jbuf_raw(b, item, strlen(item));
    return APR_SUCCESS;
}

apr_status_t svc_reply_page(svc_ctx_t *ctx, const svc_dbres_t *res, int json_col,
                            int seq_col, const svc_page_t *pg)
{
    return reply_page(ctx, res, seq_col, pg, json_text_item, &json_col, 256);
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

/*
 * Walks a shape against the result's columns from *pcol on, advancing it.
 * A nested object must have at least one entry: its first column says
 * whether it is there at all.
 */
static apr_status_t shape_walk(const svc_dbres_t *res, int *pcol, const svc_col_t *shape)
{
    for (; shape->key; shape++) {
        if (shape->type == SVC_COL_OBJECT) {
            const svc_col_t *sub = svc_col_keys(shape);
            /* A base's keys are not columns of a row (svc_schema.h). */
            if (!sub || !sub->key || (shape->ref && shape->ref->base)
                || shape_walk(res, pcol, sub) != APR_SUCCESS) {
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
        n += shape->type == SVC_COL_OBJECT ? shape_width(svc_col_keys(shape)) : 1;
    }
    return n;
}

/* One value of a row; the column fits its type (svc_shape_check). */
static apr_status_t write_value(svc_jbuf_t *b, const svc_dbres_t *res, int row, int col,
                                svc_coltype_e type)
{
    char num[24], ts[SVC_RFC3339_LEN + 1];
    apr_int64_t v;
    apr_time_t t;

    if (svc_dbres_isnull(res, row, col)) {
        svc_jbuf_raw(b, "null", 4);
        return APR_SUCCESS;
    }
    switch (type) {
    case SVC_COL_TEXT:
        svc_jbuf_string(b, svc_dbres_str(res, row, col));
        return APR_SUCCESS;
    case SVC_COL_INT:
        if (svc_dbres_int64(res, row, col, &v) != APR_SUCCESS) {
            return SVC_EDB;
        }
        svc_jbuf_raw(b, num, (apr_size_t)apr_snprintf(num, sizeof(num), "%" APR_INT64_T_FMT, v));
        return APR_SUCCESS;
    case SVC_COL_BOOL:
        if (svc_dbres_bool(res, row, col) == 1) {
            svc_jbuf_raw(b, "true", 4);
        }
        else {
            svc_jbuf_raw(b, "false", 5);
        }
        return APR_SUCCESS;
    case SVC_COL_TIME:
        /* A time we cannot write as RFC 3339 (+/-infinity, beyond year
         * 9999) fails the response rather than turning into a null that
         * would mean something else ("never expires"). */
        if (svc_dbres_time(res, row, col, &t) != APR_SUCCESS
            || svc_format_rfc3339(ts, t) != APR_SUCCESS) {
            return SVC_EDB;
        }
        svc_jbuf_raw(b, "\"", 1);
        svc_jbuf_raw(b, ts, SVC_RFC3339_LEN);
        svc_jbuf_raw(b, "\"", 1);
        return APR_SUCCESS;
    default:
        return SVC_EDB;
    }
}

static apr_status_t row_walk(svc_jbuf_t *b, const svc_dbres_t *res, int row, int *pcol,
                             const svc_col_t *shape)
{
    const svc_col_t *c;
    apr_status_t rv;

    svc_jbuf_raw(b, "{", 1);
    for (c = shape; c->key; c++) {
        if (c != shape) {
            svc_jbuf_raw(b, ",", 1);
        }
        svc_jbuf_raw(b, "\"", 1);
        svc_jbuf_raw(b, c->key, strlen(c->key));
        svc_jbuf_raw(b, "\":", 2);
        if (c->type != SVC_COL_OBJECT) {
            rv = write_value(b, res, row, (*pcol)++, c->type);
        }
        else if (svc_dbres_isnull(res, row, *pcol)) {
            /* No object: skip all of its columns, nested ones included. */
            *pcol += shape_width(svc_col_keys(c));
            svc_jbuf_raw(b, "null", 4);
            rv = APR_SUCCESS;
        }
        else {
            rv = row_walk(b, res, row, pcol, svc_col_keys(c));
        }
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    svc_jbuf_raw(b, "}", 1);
    return APR_SUCCESS;
}

apr_status_t svc_row_json(svc_jbuf_t *b, const svc_dbres_t *res, int row, int col,
                          const svc_col_t *shape)
{
    return row_walk(b, res, row, &col, shape);
}

apr_status_t svc_row_json_text(apr_pool_t *p, const svc_dbres_t *res, const svc_col_t *shape,
                               const char **pjson)
{
    svc_jbuf_t b;
    apr_status_t rv;

    svc_jbuf_init(&b, p, 512);
    if (svc_dbres_rows(res) < 1
        || (rv = svc_shape_check(res, 0, shape)) != APR_SUCCESS
        || (rv = svc_row_json(&b, res, 0, 0, shape)) != APR_SUCCESS) {
        return SVC_EDB;
    }
    *pjson = svc_jbuf_text(&b, NULL);
    return APR_SUCCESS;
}

apr_status_t svc_reply_row(svc_ctx_t *ctx, int status, const svc_dbres_t *res,
                           const svc_col_t *shape)
{
    const char *json;
    apr_status_t rv;

    if (svc_dbres_rows(res) != 1) {
        return SVC_ENOTFOUND;
    }
    if ((rv = svc_row_json_text(ctx->pool, res, shape, &json)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_text(ctx, status, json);
}

apr_status_t svc_org_row(svc_ctx_t *ctx, svc_db_t *db, const svc_stmt_t *st, const char *what,
                         const char *id, svc_dbres_t **pres)
{
    apr_status_t rv = svc_db_execv(db, st, ctx->pool, pres, id, ctx->org->id);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(*pres) != 1) {
        return svc_fail(ctx, 404, "not_found", "No %s %s in %s.", what, id, ctx->org->slug);
    }
    return APR_SUCCESS;
}

apr_status_t svc_reply_org_row(svc_ctx_t *ctx, svc_db_t *db, const svc_stmt_t *st,
                               const svc_col_t *shape, const char *what, const char *id,
                               int status)
{
    svc_dbres_t *res;
    apr_status_t rv = svc_org_row(ctx, db, st, what, id, &res);

    return rv == APR_SUCCESS ? svc_reply_row(ctx, status, res, shape) : rv;
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

/* An item built from plain columns: columns 1.. of the row, as the shape says. */
static apr_status_t shaped_item(svc_jbuf_t *b, const svc_dbres_t *res, int row,
                                const void *baton)
{
    return svc_row_json(b, res, row, 1, baton);
}

/*
 * Runs a list statement and answers its page: items written by the shape
 * `item` from columns 1.. with the ordering key in column 0, or (item NULL)
 * taken as JSON text from column 0 with the ordering key in column 1.
 */
static apr_status_t reply_list_v(svc_ctx_t *ctx, const svc_stmt_t *st, const svc_col_t *item,
                                 va_list ap)
{
    svc_page_t pg;
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = list_query(ctx, st, ap, &pg, &res)) != APR_SUCCESS) {
        return rv;
    }
    if (!item) {
        return svc_reply_page(ctx, res, 0, 1, &pg);
    }
    /* The ordering key is checked too, though it is read only when a page
     * is full: a drift should fail every time, not on full pages only. */
    if (svc_dbres_type(res, 0, NULL) != SVC_OID_INT8
        || svc_shape_check(res, 1, item) != APR_SUCCESS) {
        return SVC_EDB;
    }
    return reply_page(ctx, res, 0, &pg, shaped_item, item, 320);
}

apr_status_t svc_reply_rows(svc_ctx_t *ctx, const svc_stmt_t *st, const svc_col_t *item, ...)
{
    apr_status_t rv;
    va_list ap;

    va_start(ap, item);
    rv = reply_list_v(ctx, st, item, ap);
    va_end(ap);
    return rv;
}
