/*
 * svc_write.c: a handler's change and its answer in one transaction (see
 * svc_write.h).
 */
#include "svc_write.h"

/* What svc_db_tx hands to change_and_answer. */
typedef struct {
    svc_ctx_t *ctx;
    svc_write_fn fn;
    void *baton;
} write_call_t;

static apr_status_t change_and_answer(svc_db_t *db, apr_pool_t *p, void *baton)
{
    write_call_t *w = baton;
    apr_status_t rv = w->fn(w->ctx, db, w->baton);

    /* No answer yet means one would be built after COMMIT: refused. */
    if (rv == APR_SUCCESS && w->ctx->status == 0) {
        rv = APR_EGENERAL;
    }
    return rv;
}

apr_status_t svc_write(svc_ctx_t *ctx, svc_write_fn fn, void *baton)
{
    write_call_t w;
    apr_table_t *headers_before;
    svc_db_t *db;
    apr_status_t rv;

    /* One write per request, and nothing answered before it. */
    if (ctx->write_state != SVC_WRITE_NONE || ctx->status != 0) {
        return APR_EGENERAL;
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    w.ctx = ctx;
    w.fn = fn;
    w.baton = baton;
    headers_before = apr_table_copy(ctx->pool, ctx->headers_out);
    ctx->write_state = SVC_WRITE_OPEN;
    rv = svc_db_tx(db, ctx->pool, change_and_answer, &w);
    if (rv != APR_SUCCESS) {
        /* Nothing was saved: nothing of its answer goes out, headers
         * included. */
        ctx->write_state = SVC_WRITE_NONE;
        svc_ctx_forget_answer(ctx);
        ctx->headers_out = headers_before;
        return rv;
    }
    ctx->write_state = SVC_WRITE_COMMITTED;
    return APR_SUCCESS;
}
