/*
 * svc_sessions.c: session rows and their JWT cookies.
 */
#include "svc_sessions.h"
#include "svc_auth.h"
#include "svc_crypto.h"
#include "svc_json.h"
#include "svc_jwt.h"
#include "svc_redact.h"

static const svc_stmt_t st_session_insert = {
    "svc_sessions_insert",
    "INSERT INTO sessions (id, user_id, expires_at, ip, user_agent)"
    " VALUES ($1, $2, now() + make_interval(secs => $3::int), $4, $5)"
    " RETURNING extract(epoch FROM created_at)::bigint, extract(epoch FROM expires_at)::bigint",
    5, 0
};

static const svc_stmt_t st_session_auth = {
    "svc_sessions_auth",
    "SELECT s.revoked_at IS NOT NULL, s.expires_at <= now(),"
    " s.last_seen_at IS NULL OR s.last_seen_at < now() - make_interval(secs => $3::int),"
    " u.email, u.name, u.founder"
    " FROM sessions s JOIN users u ON u.id = s.user_id"
    " WHERE s.id = $1 AND s.user_id = $2",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_session_touch = {
    "svc_sessions_touch",
    "UPDATE sessions SET last_seen_at = now(), ip = $2 WHERE id = $1",
    2, SVC_STMT_RETRY
};

apr_status_t svc_session_create(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                                const char *user_id, const char *ip, const char *user_agent,
                                const char **pcookie, const char **psid)
{
    const char *sid = svc_id_new(p, "ses_");
    svc_dbres_t *res;
    apr_int64_t iat, exp;
    json_t *claims;
    apr_status_t rv;

    if (!conf->have_secret) {
        return APR_EINIT;
    }
    rv = svc_db_execv(db, &st_session_insert, p, &res, sid, user_id,
                      apr_itoa(p, conf->session_lifetime), ip,
                      user_agent ? svc_printable(p, user_agent, 512) : NULL);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_int64(res, 0, 0, &iat) != APR_SUCCESS
        || svc_dbres_int64(res, 0, 1, &exp) != APR_SUCCESS) {
        return SVC_EDB;
    }
    claims = svc_json_pool(p, json_pack("{s:s,s:s,s:I,s:I}", "sub", user_id, "sid", sid,
                                        "iat", (json_int_t)iat, "exp", (json_int_t)exp));
    *pcookie = svc_jwt_sign_hs256(p, conf->session_key, claims);
    *psid = sid;
    return APR_SUCCESS;
}

apr_status_t svc_session_authenticate(svc_ctx_t *ctx, const char *cookie,
                                      svc_principal_t **pwho)
{
    svc_principal_t *who;
    const char *why, *sub, *sid;
    json_t *claims;
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if (!ctx->conf->have_secret
        || svc_jwt_verify_hs256(ctx->pool, ctx->conf->session_key, cookie,
                                apr_time_sec(apr_time_now()), &claims, &why) != APR_SUCCESS) {
        return svc_auth_fail(ctx, "The session cookie is not valid; sign in again.");
    }
    sub = svc_json_str(claims, "sub");
    sid = svc_json_str(claims, "sid");
    if (!sub || !sid) {
        return svc_auth_fail(ctx, "The session cookie is not valid; sign in again.");
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_db_execv(db, &st_session_auth, ctx->pool, &res, sid, sub,
                      apr_itoa(ctx->pool, ctx->conf->token_touch_interval));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1 || svc_dbres_bool(res, 0, 0) == 1
        || svc_dbres_bool(res, 0, 1) == 1) {
        return svc_auth_fail(ctx, "The session has ended; sign in again.");
    }
    who = apr_pcalloc(ctx->pool, sizeof(*who));
    who->via = SVC_VIA_SESSION;
    who->scope = SVC_SCOPE_ADMIN;
    who->session_id = sid;
    who->user_id = sub;
    who->email = svc_dbres_str(res, 0, 3);
    who->name = svc_dbres_str(res, 0, 4);
    who->founder = svc_dbres_bool(res, 0, 5) == 1;
    if (svc_dbres_bool(res, 0, 2) == 1) {
        (void)svc_db_execv(db, &st_session_touch, ctx->pool, NULL, sid,
                           *ctx->client_ip ? ctx->client_ip : NULL);
    }
    *pwho = who;
    return APR_SUCCESS;
}
