/*
 * svc_run_output.c: what a run leaves behind, read back: its log (plain
 * text, from any byte offset) and its artifact (a git bundle). Both are
 * addressed through the org (/api/orgs/:orgSlug/runs/:runId/...), so a run
 * of another org is simply not found.
 */
#include "svc_run_api.h"
#include "svc_run_store.h"

#include <string.h>

/* The run (status, log length) and the log's chunks that end after $3. */
static const svc_stmt_t st_log_read = {
    "svc_runs_log_read",
    "SELECT r.status, r.log_bytes, l.byte_offset, l.data FROM runs r"
    " LEFT JOIN run_logs l ON l.run_id = r.id"
    " AND l.byte_offset + octet_length(l.data) > $3::bigint"
    " WHERE r.id = $1 AND r.org_id = $2 ORDER BY l.byte_offset",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_artifact_of = {
    "svc_runs_artifact_of",
    "SELECT status FROM runs WHERE id = $1 AND org_id = $2",
    2, SVC_STMT_READ
};

const svc_qparam_t svc_query_runs_logs[] = {
    { "offset", "integer", "Start at this byte of the log (default 0): the X-Next-Offset of "
      "an earlier answer, to read only what came since." },
    { NULL, NULL, NULL }
};

static apr_status_t no_run(svc_ctx_t *ctx, const char *id)
{
    return svc_fail(ctx, 404, "not_found", "No run %s in %s.", id, ctx->org->slug);
}

apr_status_t svc_h_runs_logs(svc_ctx_t *ctx)
{
    const char *id = apr_table_get(ctx->params, "runId");
    const char *q = apr_table_get(ctx->query, "offset");
    apr_int64_t from = 0, total, at;
    long long v;
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;
    char *out;
    apr_size_t len = 0;
    int i, n;

    if (q) {
        if (svc_parse_int(q, 0, APR_INT64_MAX, &v) != APR_SUCCESS) {
            svc_fail_field(ctx, "offset", "invalid_value",
                           "offset must be a byte offset: an integer from 0.");
            return SVC_EPROBLEM;
        }
        from = v;
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_log_read, ctx->pool, &res, id, ctx->org->id,
                              apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT, from)))
           != APR_SUCCESS) {
        return rv;
    }
    n = svc_dbres_rows(res);
    if (n == 0) {
        return no_run(ctx, id);
    }
    if (svc_dbres_int64(res, 0, 1, &total) != APR_SUCCESS) {
        return SVC_EDB;
    }
    out = apr_palloc(ctx->pool, (apr_size_t)(total > from ? total - from : 0) + 1);
    for (i = 0; i < n && !svc_dbres_isnull(res, i, 2); i++) {
        const char *data = svc_dbres_str(res, i, 3);
        apr_size_t dlen = svc_dbres_len(res, i, 3);
        apr_size_t skip;

        if (svc_dbres_int64(res, i, 2, &at) != APR_SUCCESS || at + (apr_int64_t)dlen > total
            || at + (apr_int64_t)dlen <= from || (apr_int64_t)len != (at > from ? at - from : 0)) {
            /* Chunks are contiguous and within log_bytes by construction. */
            return SVC_EDB;
        }
        skip = at < from ? (apr_size_t)(from - at) : 0;
        memcpy(out + len, data + skip, dlen - skip);
        len += dlen - skip;
    }
    out[len] = '\0';
    /* Where the log ends now, whatever was asked: an offset past the end
     * is the client's mistake, and echoing it would tell the next read to
     * wait for bytes that come only once the log has grown past it. */
    apr_table_setn(ctx->headers_out, "X-Next-Offset",
                   apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT, total));
    apr_table_setn(ctx->headers_out, "X-Run-Status",
                   apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0)));
    return svc_reply_body(ctx, 200, "text/plain; charset=utf-8", out, len);
}

apr_status_t svc_run_reply_artifact(svc_ctx_t *ctx, svc_db_t *db, const char *org_id,
                                    const char *run_id, const char *name)
{
    const char *data;
    apr_size_t len;
    apr_status_t rv = svc_run_artifact(db, ctx->pool, org_id, run_id, &data, &len);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    apr_table_setn(ctx->headers_out, "Content-Disposition",
                   apr_psprintf(ctx->pool, "attachment; filename=\"%s.bundle\"", name));
    return svc_reply_body(ctx, 200, "application/octet-stream", data, len);
}

apr_status_t svc_h_runs_artifact(svc_ctx_t *ctx)
{
    const char *id = apr_table_get(ctx->params, "runId");
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_artifact_of, ctx->pool, &res, id, ctx->org->id))
           != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        return no_run(ctx, id);
    }
    /* A succeeded run has one, and so has a run stopped at its step limit
     * or token budget: its work so far. */
    rv = svc_run_reply_artifact(ctx, db, ctx->org->id, id, id);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "Run %s has no artifact: it has status %s; "
                        "a run has one once it succeeded (or stopped at its step limit or "
                        "token budget with its work so far).", id,
                        apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0)));
    }
    return rv;
}
