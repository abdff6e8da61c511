/*
 * svc_page.h: list responses with keyset pagination.
 *
 * Lists answer {"data":[...],"next_cursor":"..."|null}. ?limit= defaults to
 * 50 and may be 1 to 200; ?cursor= is opaque to clients. A query asks for
 * limit+1 rows "WHERE seq < $before ORDER BY seq DESC", so a full extra row
 * tells that there is a next page. Never OFFSET.
 *
 * A cursor is base64url of a version byte, the row's bigint ordering key
 * and a MAC (HMAC-SHA256 under a key derived from the server secret,
 * truncated to 128 bits) over that key and the list it belongs to: the
 * route, its path parameters, the caller and their token's org binding,
 * and the values of the route's documented filters. So a cursor is only
 * good for the list (and filters) that issued it: a forged one, or one of
 * another list or filter, is a 400, not a page of something else.
 */
#ifndef SVC_PAGE_H
#define SVC_PAGE_H

#include "svc_ktypes.h"
#include "svc_db.h"
#include "svc_json.h"
#include "svc_schema.h"

#define SVC_PAGE_DEFAULT 50
#define SVC_PAGE_MAX 200

typedef struct {
    int limit;
    const char *before;         /* decimal seq bound for SQL: rows strictly older */
    const char *fetch;          /* limit + 1, as text for SQL */
} svc_page_t;

/* Reads ?limit= and ?cursor=; a 400 problem on anything out of shape. */
apr_status_t svc_page_parse(svc_ctx_t *ctx, svc_page_t *pg);

/* The cursor that continues ctx's list after the row with ordering key seq
 * (from ctx->pool). */
char *svc_cursor_encode(const svc_ctx_t *ctx, apr_int64_t seq);

/*
 * Answers 200 with the page: each row's column json_col is one item's JSON
 * text (built by SQL), seq_col its ordering key.
 */
apr_status_t svc_reply_page(svc_ctx_t *ctx, const svc_dbres_t *res, int json_col,
                            int seq_col, const svc_page_t *pg);

/*
 * The shape of an item built in C from plain columns, the faster way
 * (docs/performance.md): PostgreSQL returns values, in binary
 * (SVC_STMT_BINARY), and svc_row_json writes one JSON object per row by a
 * shape (svc_schema.h), the same array the OpenAPI document describes the
 * answer by. Each key takes the next column; an SVC_COL_OBJECT takes as
 * many as its keys and writes null when the first of them is NULL. Every
 * column may be NULL, which writes null. The row writer knows TEXT, INT,
 * BOOL, TIME and OBJECT keys; a shape with any other fails
 * svc_shape_check.
 */
/*
 * Checks once per result that the columns from `col` on are exactly what
 * `shape` needs, in number, type and format (SVC_EDB if not: a statement
 * and its shape drifted apart).
 */
apr_status_t svc_shape_check(const svc_dbres_t *res, int col, const svc_col_t *shape);

/* Appends row `row` (columns from `col` on) as one JSON object. */
apr_status_t svc_row_json(svc_jbuf_t *b, const svc_dbres_t *res, int row, int col,
                          const svc_col_t *shape);

/*
 * The first row of a one-row result as one JSON object (*pjson, in p):
 * checks the shape, then writes it.
 */
apr_status_t svc_row_json_text(apr_pool_t *p, const svc_dbres_t *res, const svc_col_t *shape,
                               const char **pjson);

/*
 * Answers `status` with a one-row result as one JSON object; SVC_ENOTFOUND
 * when the result has no row (the thing is gone, or was never visible).
 */
apr_status_t svc_reply_row(svc_ctx_t *ctx, int status, const svc_dbres_t *res,
                           const svc_col_t *shape);

/*
 * One object of the request's org: runs `st` with (id, the org's id) and
 * gives its row, or answers 404 naming `what` ("No document doc_... in
 * acme.") when there is none.
 */
apr_status_t svc_org_row(svc_ctx_t *ctx, svc_db_t *db, const svc_stmt_t *st, const char *what,
                         const char *id, svc_dbres_t **pres);

/*
 * The detail of one object of the request's org: runs `st` with (id, the
 * org's id) and answers `status` with its row in `shape`, or 404 naming
 * `what` ("No provider llm_... in acme.") when there is none.
 */
apr_status_t svc_reply_org_row(svc_ctx_t *ctx, svc_db_t *db, const svc_stmt_t *st,
                               const svc_col_t *shape, const char *what, const char *id,
                               int status);

/* Stand-ins for the page's bound and size among svc_reply_list's parameters. */
extern const char svc_page_before[], svc_page_fetch[];
#define SVC_PAGE_BEFORE svc_page_before
#define SVC_PAGE_FETCH svc_page_fetch

/*
 * A list endpoint in one call: reads ?limit= and ?cursor=, runs `st` with
 * its st->nparams `const char *` arguments, where SVC_PAGE_BEFORE and
 * SVC_PAGE_FETCH stand for the page's bound and size, and answers the page.
 * Each row is one item: with `item`, its ordering key in column 0 and the
 * item's plain columns after it, as `item` says; with item NULL
 * (svc_reply_list), the item's JSON in column 0, its ordering key in
 * column 1.
 */
apr_status_t svc_reply_rows(svc_ctx_t *ctx, const svc_stmt_t *st, const svc_col_t *item, ...);
#define svc_reply_list(ctx, st, ...) svc_reply_rows(ctx, st, NULL, __VA_ARGS__)

#endif /* SVC_PAGE_H */
