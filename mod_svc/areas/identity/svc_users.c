/*
 * svc_users.c: user accounts and GET /api/me.
 */
#include "svc_users.h"

static const svc_stmt_t st_user_insert = {
    "svc_users_insert",
    "INSERT INTO users (id, email, name, founder, link_by_email)"
    " VALUES ($1, $2, $3, $4::boolean, $5::boolean)",
    5, 0
};

/* Only an account no provider identity has claimed yet may be claimed. */
static const svc_stmt_t st_user_allow_link = {
    "svc_users_allow_link",
    "UPDATE users SET link_by_email = true, updated_at = now()"
    " WHERE id = $1 AND vcs_user_id IS NULL RETURNING id",
    1, 0
};

static const svc_stmt_t st_user_by_email = {
    "svc_users_by_email",
    "SELECT id FROM users WHERE lower(email) = lower($1)",
    1, SVC_STMT_READ
};

/* The user and their memberships; a bound token sees only its org. */
static const svc_stmt_t st_me = {
    "svc_users_me",
    "SELECT json_build_object('id', u.id, 'email', u.email, 'name', u.name,"
    " 'founder', u.founder, 'created_at', svc_ts(u.created_at),"
    " 'orgs', coalesce((SELECT json_agg(json_build_object('id', o.id, 'slug', o.slug,"
    "   'name', o.name, 'role', m.role) ORDER BY o.slug)"
    "   FROM org_members m JOIN orgs o ON o.id = m.org_id"
    "   WHERE m.user_id = u.id AND ($2::text IS NULL OR o.id = $2)), '[]'::json))"
    " FROM users u WHERE u.id = $1",
    2, SVC_STMT_READ
};

apr_status_t svc_user_add(svc_db_t *db, apr_pool_t *p, const char *email, const char *name,
                          int founder, int allow_email_link, const svc_actor_t *actor,
                          const char **pid)
{
    const char *id = svc_id_new(p, "usr_");
    apr_status_t rv;

    rv = svc_db_execv(db, &st_user_insert, p, NULL, id, email, name ? name : "",
                      founder ? "true" : "false", allow_email_link ? "true" : "false");
    if (rv == APR_SUCCESS) {
        rv = svc_audit_write(db, p, actor, NULL, "user.created", "user", id,
                             svc_json_pool(p, json_pack("{s:s,s:b,s:b}", "email", email,
                                                        "founder", founder,
                                                        "email_link_allowed",
                                                        allow_email_link)));
    }
    if (rv == APR_SUCCESS) {
        *pid = id;
    }
    return rv;
}

apr_status_t svc_user_allow_email_link(svc_db_t *db, apr_pool_t *p, const char *user_id,
                                       const svc_actor_t *actor)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_user_allow_link, p, &res, user_id);
    if (rv == APR_SUCCESS && svc_dbres_rows(res) != 1) {
        rv = SVC_ECONFLICT;
    }
    if (rv == APR_SUCCESS) {
        rv = svc_audit_write(db, p, actor, NULL, "user.email_link_allowed", "user", user_id,
                             NULL);
    }
    return rv;
}

apr_status_t svc_user_by_email(svc_db_t *db, apr_pool_t *p, const char *email,
                               const char **pid)
{
    return svc_db_value(db, &st_user_by_email, p, pid, NULL, email);
}

/* GET /api/me: built by st_me and svc_h_me, declared here. */
static const svc_col_t me_org_keys[] = {
    SVC_COL_ID("org"),
    SVC_COL_SLUG,
    { .key = "name", .type = SVC_COL_TEXT, .example = "Acme" },
    { .key = "role", .type = SVC_COL_TEXT, .values = svc_role_values,
      .description = "Your role in it." },
    SVC_COL_END
};

static const svc_col_t me_token_org_keys[] = {
    SVC_COL_ID("org"),
    SVC_COL_SLUG,
    SVC_COL_END
};

static const svc_col_t me_token_keys[] = {
    SVC_COL_ID("tok"),
    { .key = "scope", .type = SVC_COL_TEXT, .values = svc_scope_values },
    { .key = "org", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .sub = me_token_org_keys,
      .description = "The organization the token is bound to; null: all of yours." },
    { .key = "expires_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    SVC_COL_END
};

static const svc_col_t me_session_keys[] = {
    SVC_COL_ID("ses"),
    SVC_COL_END
};

static const svc_col_t me_auth_keys[] = {
    { .key = "method", .type = SVC_COL_TEXT, .values = SVC_VALUES("token", "session") },
    { .key = "token", .type = SVC_COL_OBJECT, .flags = SVC_COL_OPTIONAL, .sub = me_token_keys,
      .description = "With method token: the token in use." },
    { .key = "session", .type = SVC_COL_OBJECT, .flags = SVC_COL_OPTIONAL,
      .sub = me_session_keys, .description = "With method session: the session in use." },
    SVC_COL_END
};

static const svc_col_t me_keys[] = {
    SVC_COL_ID("usr"),
    SVC_COL_EMAIL,
    { .key = "name", .type = SVC_COL_TEXT, .example = "Ada Lovelace" },
    { .key = "founder", .type = SVC_COL_BOOL,
      .description = "The platform's operator (founder rights)." },
    SVC_COL_CREATED_AT,
    { .key = "orgs", .type = SVC_COL_ARRAY, .sub = me_org_keys,
      .description = "Your organizations (only the bound one, for a bound token)." },
    { .key = "auth", .type = SVC_COL_OBJECT, .sub = me_auth_keys,
      .description = "The credential of this request." },
    SVC_COL_END
};

const svc_schema_t svc_schema_me = { .name = "Me", .keys = me_keys,
    .description = "You: your account, your organizations, and the credential in use." };

apr_status_t svc_h_me(svc_ctx_t *ctx)
{
    const svc_principal_t *who = ctx->who;
    const char *bound = svc_auth_binding(ctx);
    json_error_t jerr;
    svc_dbres_t *res;
    json_t *me, *auth;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_db_execv(db, &st_me, ctx->pool, &res, who->user_id, bound);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1 || !(me = json_loads(svc_dbres_str(res, 0, 0), 0, &jerr))) {
        return SVC_EDB;
    }
    if (who->via == SVC_VIA_PAT) {
        json_t *org = who->token_org_id
            ? json_pack("{s:s,s:s}", "id", who->token_org_id, "slug", who->token_org_slug)
            : json_null();
        auth = json_pack("{s:s,s:{s:s,s:s,s:o,s:s?}}", "method", "token", "token",
                         "id", who->token_id, "scope", svc_scope_name(who->scope),
                         "org", org, "expires_at", who->token_expires_at);
    }
    else {
        auth = json_pack("{s:s,s:{s:s}}", "method", "session", "session", "id",
                         who->session_id);
    }
    json_object_set_new(me, "auth", auth);
    return svc_reply_json(ctx, 200, me);
}
