/*
 * svc_health.c: GET /internal/health and GET /internal/ready.
 */
#include "svc_health.h"
#include "svc_migrate.h"
#include "svc_shared.h"
#include "svc_json.h"

#include <apr_strings.h>

/*
 * The database's schema version. When it cannot be read: why, for the
 * operators who alone reach these routes (SvcInternalAllow), in libpq's
 * words, secrets removed; *pwhy is NULL when the version was read.
 */
static apr_status_t schema_version(svc_ctx_t *ctx, int *pversion, const char **pwhy)
{
    svc_db_t *db;
    apr_status_t rv = svc_ctx_db(ctx, &db);

    *pversion = 0;
    *pwhy = NULL;
    if (rv == APR_SUCCESS) {
        rv = svc_migrate_current(db, ctx->pool, pversion);
    }
    if (rv != APR_SUCCESS) {
        const char *reason = rv == SVC_EDBDOWN && ctx->db_reason ? ctx->db_reason(ctx) : NULL;

        *pwhy = reason ? apr_pstrcat(ctx->pool, "The database is not reachable: ", reason,
                                     NULL)
                       : "The database is not reachable.";
    }
    return rv;
}

/* The schema is older than this build: what to do about it. */
static const char *schema_behind(svc_ctx_t *ctx, int version)
{
    return apr_psprintf(ctx->pool, "The database schema is at version %d; this build needs %d "
                        "(run svcctl migrate).", version, svc_schema_version);
}

apr_status_t svc_h_health(svc_ctx_t *ctx)
{
    const char *why;
    int version;

    if (schema_version(ctx, &version, &why) != APR_SUCCESS) {
        apr_table_setn(ctx->headers_out, "Retry-After", "1");
        return svc_fail(ctx, 503, "database_unavailable", "%s", why);
    }
    if (version < svc_schema_version) {
        return svc_fail(ctx, 503, "schema_behind", "%s", schema_behind(ctx, version));
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
    const char *why;
    int version;

    /* Each check is made whatever the others found: the body names all
     * that is wrong at once, so one look tells the operator. */
    if (schema_version(ctx, &version, &why) != APR_SUCCESS) {
        not_ready(ctx, errors, "database", "database_unavailable", why);
    }
    else if (version < svc_schema_version) {
        not_ready(ctx, errors, "schema", "schema_behind", schema_behind(ctx, version));
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
