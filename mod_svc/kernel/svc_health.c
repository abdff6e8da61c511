/*
 * svc_health.c: GET /internal/health and GET /internal/ready.
 */
#include "svc_health.h"
#include "svc_migrate.h"
#include "svc_shared.h"
#include "svc_json.h"

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
