/*
 * svc_audit_write.c: writing audit entries (the chain itself lives in SQL). Reading
 * and verifying the log is the audit area's (areas/audit).
 */
#include "svc_audit_write.h"
#include "svc_access.h"
#include "svc_ctx.h"
#include "svc_json.h"
#include "svc_redact.h"

static const svc_stmt_t st_audit_insert = {
    "svc_audit_insert",
    "INSERT INTO audit_log (org_id, actor_kind, actor_user_id, actor_token_id, action,"
    " target_type, target_id, data, ip, user_agent, request_id)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11)",
    11, 0
};

static const svc_stmt_t st_platform_audit_insert = {
    "svc_platform_audit_insert",
    "INSERT INTO platform_audit_log (actor_kind, actor_user_id, actor_token_id, action,"
    " target_type, target_id, data, ip, user_agent, request_id)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10)",
    10, 0
};

void svc_actor_from_ctx(const svc_ctx_t *ctx, svc_actor_t *a)
{
    /* A deploy agent acts for its target: no user, no token. */
    a->kind = ctx->who && ctx->who->via == SVC_VIA_AGENT ? "agent" : "user";
    a->user_id = ctx->who ? ctx->who->user_id : NULL;
    a->token_id = ctx->who ? ctx->who->token_id : NULL;
    a->ip = ctx->client_ip;
    a->user_agent = ctx->user_agent;
    a->request_id = ctx->request_id;
}

/* The ten parameters of an entry, the same in an org's log and the
 * platform's: who, what, on what, with which data, from where. */
#define ENTRY_PARAMS 10
static void entry_params(const char **params, apr_pool_t *p, const svc_actor_t *a,
                         const char *action, const char *target_type, const char *target_id,
                         const json_t *data)
{
    params[0] = a->kind;
    params[1] = a->user_id;
    params[2] = a->token_id;
    params[3] = action;
    params[4] = target_type;
    params[5] = target_id;
    params[6] = data ? svc_json_dump(p, data) : "{}";
    params[7] = (a->ip && *a->ip) ? a->ip : NULL;
    /* User agents are client-controlled: bounded, printable ASCII only. */
    params[8] = a->user_agent ? svc_printable(p, a->user_agent, 512) : NULL;
    params[9] = a->request_id;
}

apr_status_t svc_audit_write(svc_db_t *db, apr_pool_t *p, const svc_actor_t *a,
                             const char *org_id, const char *action,
                             const char *target_type, const char *target_id,
                             const json_t *data)
{
    const char *params[1 + ENTRY_PARAMS];

    params[0] = org_id;
    entry_params(params + 1, p, a, action, target_type, target_id, data);
    return svc_db_exec(db, &st_audit_insert, p, NULL, params);
}

apr_status_t svc_audit_ctx(svc_ctx_t *ctx, svc_db_t *db, const char *action,
                           const char *target_type, const char *target_id,
                           const json_t *data)
{
    svc_actor_t actor;

    svc_actor_from_ctx(ctx, &actor);
    return svc_audit_write(db, ctx->pool, &actor, ctx->org->id, action, target_type, target_id,
                           data);
}

apr_status_t svc_audit_member(svc_ctx_t *ctx, svc_db_t *db, const char *action,
                              const char *target_type, const char *target_id, json_t *data)
{
    apr_status_t rv;

    svc_json_pool(ctx->pool, data);
    rv = svc_member_hold(db, ctx->pool, ctx->org->id, ctx->who->user_id);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "No organization %s.", ctx->org->slug);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (!data) {
        return APR_ENOMEM;
    }
    return svc_audit_ctx(ctx, db, action, target_type, target_id, data);
}

apr_status_t svc_platform_audit_write(svc_db_t *db, apr_pool_t *p, const svc_actor_t *a,
                                      const char *action, const char *target_type,
                                      const char *target_id, const json_t *data)
{
    const char *params[ENTRY_PARAMS];

    entry_params(params, p, a, action, target_type, target_id, data);
    return svc_db_exec(db, &st_platform_audit_insert, p, NULL, params);
}
