/*
 * svc_provider_claim.c: claims on what a model call is about
 * (svc_providers.h), so that of simultaneous callers one pays for the call
 * whose answer is used (sql/017_hardening2.sql).
 */
#include "svc_providers.h"

/* Taken when free or expired, in one statement: of two callers at once,
 * the second waits for the first's row and then finds it held. */
static const svc_stmt_t st_claim_take = {
    "svc_providers_claim_take",
    "INSERT INTO model_claims AS c (subject, org_id, token, expires_at)"
    " VALUES ($1, $2, $3, clock_timestamp() + $4::bigint * interval '1 millisecond')"
    " ON CONFLICT (subject) DO UPDATE SET org_id = excluded.org_id, token = excluded.token,"
    " expires_at = excluded.expires_at WHERE c.expires_at < clock_timestamp()"
    " RETURNING c.token",
    4, SVC_STMT_ALONE
};

static const svc_stmt_t st_claim_give = {
    "svc_providers_claim_give",
    "DELETE FROM model_claims WHERE subject = $1 AND token = $2",
    2, SVC_STMT_ALONE
};

apr_status_t svc_model_claim(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                             const char *org_id, const char *subject, const char **ptoken)
{
    const char *token = svc_random_base62(p, 22);
    /* The call ends within SvcModelTimeout; the margin covers reading
     * before it and writing after it. */
    apr_int64_t ttl_ms = (apr_int64_t)conf->model_timeout_ms + SVC_MODEL_CLAIM_MARGIN_MS;
    svc_dbres_t *res;
    apr_status_t rv;

    *ptoken = NULL;
    rv = svc_db_execv(db, &st_claim_take, p, &res, subject, org_id, token,
                      apr_psprintf(p, "%" APR_INT64_T_FMT, ttl_ms));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_ECONFLICT;
    }
    *ptoken = token;
    return APR_SUCCESS;
}

apr_status_t svc_model_unclaim(svc_db_t *db, apr_pool_t *p, const char *subject,
                               const char *token)
{
    if (!token) {
        return APR_SUCCESS;
    }
    return svc_db_execv(db, &st_claim_give, p, NULL, subject, token);
}
