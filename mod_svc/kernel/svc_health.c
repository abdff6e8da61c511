/*
 * svc_health.c: GET /internal/health and GET /internal/ready.
 */
#include "svc_health.h"
#include "svc_migrate.h"
#include "svc_shared.h"
#include "svc_json.h"
#include "svc_metrics.h"

#include <stdlib.h>

#include <apr_strings.h>

apr_status_t svc_h_health(svc_ctx_t *ctx)
{
    svc_db_t *db;
    int version = 0;
    apr_status_t rv;

    rv = svc_ctx_db(ctx, &db);
    if (rv == APR_SUCCESS) {
        rv = svc_migrate_current(db, ctx->pool, &version);
    }
    if (rv != APR_SUCCESS) {
        /* Only operators reach this (SvcInternalAllow): they are told why,
         * in libpq's words, secrets removed. */
        const char *why = rv == SVC_EDBDOWN && ctx->db_reason ? ctx->db_reason(ctx) : NULL;

        apr_table_setn(ctx->headers_out, "Retry-After", "1");
        return why ? svc_fail(ctx, 503, "database_unavailable", "The database is not "
                              "reachable: %s", why)
                   : svc_fail(ctx, 503, "database_unavailable", "The database is not "
                              "reachable.");
    }
    if (version < svc_schema_version) {
        return svc_fail(ctx, 503, "schema_behind",
                        "The database schema is at version %d; this build needs %d "
                        "(run svcctl migrate).", version, svc_schema_version);
    }
    return svc_reply_json(ctx, 200,
                          json_pack("{s:s,s:s,s:i,s:i,s:s}", "status", "ok", "database", "ok",
                                    "schema_version", version, "schema_required",
                                    svc_schema_version, "version", SVC_VERSION));
}

/* One thing that keeps this node from serving, for the 503's errors. */
static void not_ready(svc_ctx_t *ctx, json_t *errors, const char *what, const char *code,
                      const char *msg)
{
    (void)ctx;
    json_array_append_new(errors, json_pack("{s:s,s:s,s:s}", "field", what, "code", code,
                                            "message", msg));
}

apr_status_t svc_h_ready(svc_ctx_t *ctx)
{
    json_t *errors = svc_json_pool(ctx->pool, json_array());
    const char *sup = svc_shared_supervisor_problem(ctx->conf->shared, ctx->pool);
    int version = 0;
    svc_db_t *db;
    apr_status_t rv;

    /* Each check is made whatever the others found: the body names all
     * that is wrong at once, so one look tells the operator. */
    rv = svc_ctx_db(ctx, &db);
    if (rv == APR_SUCCESS) {
        rv = svc_migrate_current(db, ctx->pool, &version);
    }
    if (rv != APR_SUCCESS) {
        const char *why = rv == SVC_EDBDOWN && ctx->db_reason ? ctx->db_reason(ctx) : NULL;
        not_ready(ctx, errors, "database", "database_unavailable",
                  why ? apr_pstrcat(ctx->pool, "The database is not reachable: ", why, NULL)
                      : "The database is not reachable.");
    }
    else if (version < svc_schema_version) {
        not_ready(ctx, errors, "schema", "schema_behind",
                  apr_psprintf(ctx->pool, "The database schema is at version %d; this build "
                               "needs %d (run svcctl migrate).", version,
                               svc_schema_version));
    }
    if (sup) {
        not_ready(ctx, errors, "supervisor", "supervisor_down", sup);
    }
    if (json_array_size(errors)) {
        apr_status_t frv;
        apr_table_setn(ctx->headers_out, "Retry-After", "1");
        frv = svc_fail(ctx, 503, "not_ready", "This node cannot serve: %s",
                       json_string_value(json_object_get(json_array_get(errors, 0),
                                                         "message")));
        ctx->problem->errors = errors;
        return frv;
    }
    return svc_reply_json(ctx, 200,
                          json_pack("{s:s,s:s,s:i,s:i,s:s,s:s}", "status", "ready",
                                    "database", "ok", "schema_version", version,
                                    "schema_required", svc_schema_version, "supervisor",
                                    ctx->conf->shared && ctx->conf->shared->sup_expected
                                    ? "ok" : "off",
                                    "version", SVC_VERSION));
}

/*
 * The run figures of a scrape: two counts and an age, each from a partial
 * index of runs (runs_queue, runs_leases), so the query stays cheap however
 * many runs have ever finished. Finished runs are not counted here: their
 * totals only grow, and svc_http_requests_total of the run routes or the
 * database itself tell them better.
 */
static const svc_stmt_t st_metrics_runs = {
    "svc_metrics_runs",
    "SELECT (SELECT count(*) FROM runs WHERE status = 'queued'),"
    " (SELECT count(*) FROM runs WHERE status = 'running'),"
    " coalesce((SELECT extract(epoch FROM now() - min(created_at)) FROM runs"
    " WHERE status = 'queued'), 0)::float8::text",
    0, SVC_STMT_READ
};

static const char *const run_statuses[] = { "queued", "running", NULL };

apr_status_t svc_h_metrics(svc_ctx_t *ctx)
{
    svc_metrics_t *m = svc_metrics_current();
    apr_int64_t *counts = apr_pcalloc(ctx->pool, 2 * sizeof(*counts));
    svc_metrics_db_t dbm = { 0, run_statuses, counts, 0 };
    const char *text;
    svc_dbres_t *res;
    svc_db_t *db;

    if (!m) {
        return svc_fail(ctx, 404, "not_found", "Metrics are off on this server "
                        "(SvcMetrics Off).");
    }
    /* The counters answer whatever the database does: svc_database_up
     * says whether the run figures could be read. */
    if (svc_ctx_db(ctx, &db) == APR_SUCCESS
        && svc_db_execv(db, &st_metrics_runs, ctx->pool, &res) == APR_SUCCESS
        && svc_dbres_int64(res, 0, 0, &counts[0]) == APR_SUCCESS
        && svc_dbres_int64(res, 0, 1, &counts[1]) == APR_SUCCESS) {
        dbm.oldest_queued_s = strtod(svc_dbres_str(res, 0, 2), NULL);
        dbm.have = 1;
    }
    if (svc_ctx_db_release(ctx) != APR_SUCCESS) {
        dbm.have = 0;
    }
    text = svc_metrics_render(m, &dbm, ctx->pool);
    return svc_reply_body(ctx, 200, SVC_METRICS_MEDIA, text, strlen(text));
}
