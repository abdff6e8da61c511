/*
 * svc_vcs_state.c: single-use, bound, short-lived states of the App's flows.
 */
#include "svc_vcs_state.h"

#include <string.h>

static const svc_stmt_t st_state_sweep = {
    "svc_vcs_state_sweep",
    "DELETE FROM vcs_states WHERE expires_at < now()",
    0, SVC_STMT_RETRY | SVC_STMT_ALONE
};

static const svc_stmt_t st_state_new = {
    "svc_vcs_state_new",
    "INSERT INTO vcs_states (state_hash, purpose, user_id, session_id, org_id, expires_at)"
    " VALUES ($1::bytea, $2, $3, $4, $5, now() + make_interval(secs => $6::int))",
    6, SVC_STMT_ALONE
};

/* Deleted by the one statement that reads it, so two returns with one
 * state cannot both get it. */
static const svc_stmt_t st_state_take = {
    "svc_vcs_state_take",
    "DELETE FROM vcs_states WHERE state_hash = $1::bytea AND purpose = $2"
    " RETURNING user_id = $3, coalesce(session_id = $4, purpose = 'install'),"
    " expires_at > now(), org_id",
    4, SVC_STMT_ALONE
};

/* Keyed under the sign-in key, with the purpose, so no state of one flow
 * (or of sign-in) ever matches another's. */
static const char *state_hash(svc_ctx_t *ctx, const char *purpose, const char *state)
{
    const char *msg = apr_pstrcat(ctx->pool, "vcs:", purpose, ":", state, NULL);
    unsigned char h[32];

    svc_keyed_hash(h, ctx->conf->signin_key, (const unsigned char *)msg, strlen(msg));
    return svc_bytea_param(ctx->pool, h, sizeof(h));
}

apr_status_t svc_vcs_state_new(svc_ctx_t *ctx, svc_db_t *db, const char *purpose,
                               const char *org_id, const char **pstate)
{
    const char *state = svc_random_base62(ctx->pool, 43);
    apr_status_t rv;

    if ((rv = svc_db_execv(db, &st_state_sweep, ctx->pool, NULL)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_state_new, ctx->pool, NULL,
                              state_hash(ctx, purpose, state), purpose, ctx->who->user_id,
                              strcmp(purpose, "manifest") == 0 ? ctx->who->session_id : NULL,
                              org_id, apr_itoa(ctx->pool, SVC_VCS_STATE_TTL)))
           != APR_SUCCESS) {
        return rv;
    }
    *pstate = state;
    return APR_SUCCESS;
}

apr_status_t svc_vcs_state_take(svc_ctx_t *ctx, svc_db_t *db, const char *purpose,
                                const char *state, const char **porg_id)
{
    int manifest = strcmp(purpose, "manifest") == 0;
    svc_dbres_t *res;
    apr_status_t rv;

    *porg_id = NULL;
    if (!state || !*state || strlen(state) > 256) {
        return svc_fail(ctx, 400, "invalid_state",
                        "The provider's answer has no state; start again.");
    }
    rv = svc_db_execv(db, &st_state_take, ctx->pool, &res, state_hash(ctx, purpose, state),
                      purpose, ctx->who->user_id, manifest ? ctx->who->session_id : NULL);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_fail(ctx, 400, "invalid_state",
                        "This %s is unknown, was completed already or has expired; start "
                        "again.", manifest ? "setup" : "installation");
    }
    if (svc_dbres_bool(res, 0, 0) != 1 || svc_dbres_bool(res, 0, 1) != 1) {
        return svc_fail(ctx, 400, "invalid_state",
                        "This %s was started by someone else (or in another session); start "
                        "again yourself.", manifest ? "setup" : "installation");
    }
    if (svc_dbres_bool(res, 0, 2) != 1) {
        return svc_fail(ctx, 400, "invalid_state", "This %s took longer than %d minutes; "
                        "start again.", manifest ? "setup" : "installation",
                        SVC_VCS_STATE_TTL / 60);
    }
    *porg_id = svc_dbres_str(res, 0, 3);
    return APR_SUCCESS;
}
