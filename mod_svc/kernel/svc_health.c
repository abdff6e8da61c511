/*
 * svc_health.c: GET /internal/health.
 */
#include "svc_health.h"
#include "svc_migrate.h"

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
