/*
 * svc_page.h: list responses with keyset pagination.
 *
 * Lists answer {"data":[...],"next_cursor":"..."|null}. ?limit= defaults to
 * 50 and may be 1 to 200; ?cursor= is opaque to clients (a base64url
 * "v1:<seq>", where seq is the row's bigint ordering key). A query asks
 * for limit+1 rows "WHERE seq < $before ORDER BY seq DESC", so a full extra
 * row tells that there is a next page. Never OFFSET.
 */
#ifndef SVC_PAGE_H
#define SVC_PAGE_H

#include "svc_types.h"
#include "svc_db.h"

#define SVC_PAGE_DEFAULT 50
#define SVC_PAGE_MAX 200

typedef struct {
    int limit;
    const char *before;         /* decimal seq bound for SQL: rows strictly older */
    const char *fetch;          /* limit + 1, as text for SQL */
} svc_page_t;

/* Reads ?limit= and ?cursor=; a 400 problem on anything out of shape. */
apr_status_t svc_page_parse(svc_ctx_t *ctx, svc_page_t *pg);

char *svc_cursor_encode(apr_pool_t *p, apr_int64_t seq);

/*
 * Answers 200 with the page: each row's column json_col is one item's JSON
 * text (built by SQL), seq_col its ordering key.
 */
apr_status_t svc_reply_page(svc_ctx_t *ctx, const svc_dbres_t *res, int json_col,
                            int seq_col, const svc_page_t *pg);

/* Stand-ins for the page's bound and size among svc_reply_list's parameters. */
extern const char svc_page_before[];
extern const char svc_page_fetch[];
#define SVC_PAGE_BEFORE svc_page_before
#define SVC_PAGE_FETCH svc_page_fetch

/*
 * A list endpoint in one call: reads ?limit= and ?cursor=, runs `st` with
 * its st->nparams `const char *` arguments, where SVC_PAGE_BEFORE and
 * SVC_PAGE_FETCH stand for the page's bound and size, and answers the page
 * (each row: the item's JSON in column 0, its ordering key in column 1).
 */
apr_status_t svc_reply_list(svc_ctx_t *ctx, const svc_stmt_t *st, ...);

#endif /* SVC_PAGE_H */
