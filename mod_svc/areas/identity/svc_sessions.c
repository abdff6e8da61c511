/*
 * svc_sessions.c: session rows and their JWT cookies.
 */
#include "svc_sessions.h"

#include <string.h>

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
    " u.email, u.name, u.founder, u.suspended_at IS NOT NULL"
    " FROM sessions s JOIN users u ON u.id = s.user_id"
    " WHERE s.id = $1 AND s.user_id = $2",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_session_touch = {
    "svc_sessions_touch",
    "UPDATE sessions SET last_seen_at = now(), ip = $2 WHERE id = $1",
    2, SVC_STMT_RETRY | SVC_STMT_ALONE
};

static const svc_stmt_t st_session_revoke = {
    "svc_sessions_revoke",
    "UPDATE sessions SET revoked_at = now()"
    " WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL RETURNING id",
    2, 0
};

static const svc_stmt_t st_session_visible = {
    "svc_sessions_visible",
    "SELECT 1 FROM sessions WHERE id = $1 AND user_id = $2",
    2, SVC_STMT_READ
};

/* Every live session but the one in use ($2, NULL for a token caller). */
static const svc_stmt_t st_session_revoke_others = {
    "svc_sessions_revoke_others",
    "UPDATE sessions SET revoked_at = now()"
    " WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > now()"
    " AND ($2::text IS NULL OR id <> $2) RETURNING id",
    2, 0
};

/* Live sessions only: ended ones are of no use to act on. */
static const svc_stmt_t st_session_list = {
    "svc_sessions_list",
    "SELECT s.seq, s.id, coalesce(s.id = $3::text, false), s.created_at, s.expires_at,"
    " s.last_seen_at, s.ip, s.user_agent FROM sessions s"
    " WHERE s.user_id = $1 AND s.seq < $2::bigint"
    " AND s.revoked_at IS NULL AND s.expires_at > now()"
    " ORDER BY s.seq DESC LIMIT $4::int",
    4, SVC_STMT_READ | SVC_STMT_BINARY
};

/* One session as GET /api/me/sessions shows it, in st_session_list's order:
 * the writer's shape and the OpenAPI schema both (svc_schema.h). */
static const svc_col_t session_item[] = {
    SVC_COL_ID("ses"),
    { .key = "current", .type = SVC_COL_BOOL,
      .description = "The session this request came with." },
    SVC_COL_CREATED_AT,
    { .key = "expires_at", .type = SVC_COL_TIME },
    { .key = "last_seen_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    { .key = "ip", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "192.0.2.7" },
    { .key = "user_agent", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .example = "Mozilla/5.0" },
    SVC_COL_END
};

const svc_schema_t svc_schema_session = { .name = "Session", .keys = session_item,
    .description = "A signed-in browser session of yours (docs/api/signin.md)." };

const svc_schema_t svc_schema_sessions_revoked = {
    .name = "SessionsRevoked",
    .description = "How many sessions were ended.",
    .keys = (const svc_col_t[]) {
        { .key = "revoked", .type = SVC_COL_INT },
        SVC_COL_END
    }
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
    /* Read with the session on every request: holds at once on every node. */
    if (svc_dbres_bool(res, 0, 6) == 1) {
        return svc_fail(ctx, 403, "account_suspended", "This account is suspended by the "
                        "platform's operator; contact them.");
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

apr_status_t svc_session_revoke(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                                const char *user_id, const char *sid, const char *reason,
                                int *pfound)
{
    svc_dbres_t *res;
    apr_status_t rv;

    *pfound = 0;
    rv = svc_db_execv(db, &st_session_revoke, p, &res, sid, user_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        svc_dbres_t *vis;
        rv = svc_db_execv(db, &st_session_visible, p, &vis, sid, user_id);
        *pfound = rv == APR_SUCCESS && svc_dbres_rows(vis) > 0;
        return rv;
    }
    rv = svc_audit_write(db, p, actor, NULL, "session.revoked", "session", sid,
                         svc_json_pool(p, json_pack("{s:s}", "reason", reason)));
    *pfound = rv == APR_SUCCESS;
    return rv;
}

/* Sessions reach every org: a token bound to one may neither see nor end them. */
static apr_status_t sessions_allowed(svc_ctx_t *ctx)
{
    if (ctx->who->via == SVC_VIA_PAT && ctx->who->token_org_id) {
        return svc_fail(ctx, 403, "insufficient_scope",
                        "A token bound to an organization cannot manage sessions, which reach "
                        "every organization.");
    }
    return APR_SUCCESS;
}

apr_status_t svc_h_sessions_list(svc_ctx_t *ctx)
{
    apr_status_t rv;

    if ((rv = sessions_allowed(ctx)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_rows(ctx, &st_session_list, session_item, ctx->who->user_id,
                          SVC_PAGE_BEFORE, ctx->who->session_id, SVC_PAGE_FETCH);
}

static apr_status_t revoke_session(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "id");
    svc_actor_t actor;
    apr_status_t rv;
    int found;

    svc_actor_from_ctx(ctx, &actor);
    rv = svc_session_revoke(db, ctx->pool, &actor, ctx->who->user_id, id, "revoked", &found);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (!found) {
        return svc_fail(ctx, 404, "not_found", "You have no session with this id.");
    }
    if (ctx->who->session_id && strcmp(id, ctx->who->session_id) == 0) {
        /* The session in use has ended: its cookie is of no use to the browser. */
        svc_cookie_set(ctx, SVC_SESSION_COOKIE, "", "/", 0);
    }
    return svc_reply_empty(ctx);
}

apr_status_t svc_h_sessions_revoke(svc_ctx_t *ctx)
{
    apr_status_t rv = sessions_allowed(ctx);

    return rv == APR_SUCCESS ? svc_write(ctx, revoke_session, NULL) : rv;
}

static apr_status_t revoke_others(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    svc_actor_t actor;
    svc_dbres_t *res;
    apr_status_t rv;
    int i, n;

    svc_actor_from_ctx(ctx, &actor);
    rv = svc_db_execv(db, &st_session_revoke_others, ctx->pool, &res, ctx->who->user_id,
                      ctx->who->session_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    n = svc_dbres_rows(res);
    /* One entry per session, so each one's end can be traced like a single revocation. */
    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        rv = svc_audit_write(db, ctx->pool, &actor, NULL, "session.revoked", "session",
                             svc_dbres_str(res, i, 0),
                             svc_json_pool(ctx->pool,
                                           json_pack("{s:s}", "reason", "revoke_others")));
    }
    return rv == APR_SUCCESS ? svc_reply_json(ctx, 200, json_pack("{s:i}", "revoked", n)) : rv;
}

apr_status_t svc_h_sessions_revoke_others(svc_ctx_t *ctx)
{
    apr_status_t rv = sessions_allowed(ctx);

    return rv == APR_SUCCESS ? svc_write(ctx, revoke_others, NULL) : rv;
}
