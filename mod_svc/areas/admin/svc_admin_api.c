/*
 * svc_admin_api.c: the operator's lists and the suspensions
 * (svc_admin.h; docs/api/admin.md).
 *
 * The lists read across tenants, which nothing else in the service does:
 * only founders reach them (svc_auth_check). Each item is built by SQL,
 * as one JSON object, by the shapes of svc_admin_routes.c.
 */
#include "svc_admin.h"
#include "svc_admin_api.h"
#include "svc_utf8.h"

#include <apr_lib.h>
#include <apr_strings.h>
#include <string.h>

/* The start of the current month, in UTC. */
#define MONTH_START "(date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')"

/* An org as the operator sees it (schema AdminOrg). */
#define ORG_JSON                                                                    \
    "json_build_object('id', o.id, 'slug', o.slug, 'name', o.name,"                 \
    " 'members', (SELECT count(*) FROM org_members m WHERE m.org_id = o.id),"       \
    " 'plan', b.plan_id, 'billing_status', b.status,"                               \
    " 'runs_this_month', (SELECT count(*) FROM runs r WHERE r.org_id = o.id"        \
    "                     AND r.created_at >= " MONTH_START "),"                    \
    " 'created_at', svc_ts(o.created_at), 'suspended', o.suspended_at IS NOT NULL," \
    " 'suspended_at', svc_ts(o.suspended_at), 'suspended_reason', o.suspended_reason)::text"

/* A user as the operator sees it (schema AdminUser). */
#define USER_JSON                                                                   \
    "json_build_object('id', u.id, 'email', u.email, 'name', u.name,"               \
    " 'founder', u.founder,"                                                        \
    " 'orgs', coalesce((SELECT json_agg(o.slug ORDER BY o.slug) FROM org_members m" \
    "                   JOIN orgs o ON o.id = m.org_id WHERE m.user_id = u.id),"    \
    "                  '[]'::json),"                                                \
    " 'last_sign_in_at', (SELECT svc_ts(max(s.created_at)) FROM sessions s"         \
    "                     WHERE s.user_id = u.id),"                                 \
    " 'created_at', svc_ts(u.created_at), 'suspended', u.suspended_at IS NOT NULL," \
    " 'suspended_at', svc_ts(u.suspended_at), 'suspended_reason', u.suspended_reason)::text"

static const svc_stmt_t st_orgs = {
    "svc_admin_orgs",
    "SELECT " ORG_JSON ", o.seq FROM orgs o LEFT JOIN billing_accounts b ON b.org_id = o.id"
    " WHERE o.seq < $2::bigint AND ($1::text IS NULL OR strpos(o.slug, lower($1)) > 0"
    "                               OR strpos(lower(o.name), lower($1)) > 0)"
    " ORDER BY o.seq DESC LIMIT $3::int",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_org_one = {
    "svc_admin_org_one",
    "SELECT " ORG_JSON " FROM orgs o LEFT JOIN billing_accounts b ON b.org_id = o.id"
    " WHERE o.id = $1",
    1, 0
};

static const svc_stmt_t st_users = {
    "svc_admin_users",
    "SELECT " USER_JSON ", u.seq FROM users u"
    " WHERE u.seq < $2::bigint AND ($1::text IS NULL OR strpos(lower(u.email), lower($1)) > 0"
    "                               OR strpos(lower(u.name), lower($1)) > 0)"
    " ORDER BY u.seq DESC LIMIT $3::int",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_user_one = {
    "svc_admin_user_one",
    "SELECT " USER_JSON " FROM users u WHERE u.id = $1",
    1, 0
};

static const svc_stmt_t st_runs = {
    "svc_admin_runs",
    "SELECT json_build_object('id', r.id, 'status', r.status, 'org', o.slug,"
    " 'project', p.slug, 'lease_owner', r.lease_owner,"
    " 'lease_expires_at', svc_ts(r.lease_expires_at), 'created_at', svc_ts(r.created_at),"
    " 'started_at', svc_ts(r.started_at),"
    " 'age_seconds', greatest(0, extract(epoch FROM now() - r.created_at))::bigint,"
    " 'org_suspended', o.suspended_at IS NOT NULL)::text, r.seq"
    " FROM runs r JOIN orgs o ON o.id = r.org_id JOIN projects p ON p.id = r.project_id"
    " WHERE r.status = ANY (CASE WHEN $1::text IS NULL THEN ARRAY['queued', 'running']"
    "                      ELSE ARRAY[$1::text] END)"
    " AND r.seq < $2::bigint ORDER BY r.seq DESC LIMIT $3::int",
    3, SVC_STMT_READ
};

/* An org's usage in the month starting at $1 (UTC), for orgs with any. */
static const svc_stmt_t st_usage = {
    "svc_admin_usage",
    "WITH span AS (SELECT ($1::text || '-01')::timestamp AT TIME ZONE 'UTC' AS a,"
    "              (($1::text || '-01')::timestamp + interval '1 month') AT TIME ZONE 'UTC'"
    "              AS b)"
    " SELECT json_build_object('org', o.slug, 'org_id', o.id, 'month', $1::text,"
    " 'model_calls', m.calls, 'input_tokens', m.input, 'output_tokens', m.output,"
    " 'run_minutes', u.run_minutes, 'deployment_hours', u.deployment_hours)::text, o.seq"
    " FROM orgs o CROSS JOIN span"
    " CROSS JOIN LATERAL (SELECT count(*) AS calls,"
    "   coalesce(sum(x.input_tokens), 0) AS input, coalesce(sum(x.output_tokens), 0) AS output"
    "   FROM model_usage x WHERE x.org_id = o.id AND x.created_at >= span.a"
    "   AND x.created_at < span.b) m"
    " CROSS JOIN LATERAL (SELECT"
    "   coalesce(sum(y.quantity) FILTER (WHERE y.kind = 'run'), 0)::float8 AS run_minutes,"
    "   coalesce(sum(y.quantity) FILTER (WHERE y.kind = 'deployment'), 0)::float8"
    "   AS deployment_hours"
    "   FROM usage_records y WHERE y.org_id = o.id AND y.ended_at >= span.a"
    "   AND y.ended_at < span.b) u"
    " WHERE o.seq < $2::bigint AND (m.calls > 0 OR u.run_minutes > 0 OR u.deployment_hours > 0)"
    " ORDER BY o.seq DESC LIMIT $3::int",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_audit = {
    "svc_admin_audit",
    "SELECT json_build_object('id', a.id, 'actor_kind', a.actor_kind,"
    " 'actor_user_id', a.actor_user_id, 'action', a.action, 'target_type', a.target_type,"
    " 'target_id', a.target_id, 'data', a.data, 'request_id', a.request_id,"
    " 'created_at', svc_ts(a.created_at))::text, a.id"
    " FROM platform_audit_log a WHERE a.id < $1::bigint ORDER BY a.id DESC LIMIT $2::int",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_audit_verify = {
    "svc_admin_audit_verify",
    "SELECT svc_platform_audit_verify(), (SELECT count(*) FROM platform_audit_log)",
    0, SVC_STMT_READ
};


/* The row changes only when its state is the other one: a repeat is a
 * conflict, not a second entry in the log. */
static const svc_stmt_t st_user_suspend = {
    "svc_admin_user_suspend",
    "UPDATE users SET suspended_at = CASE WHEN $2::boolean THEN now() END,"
    " suspended_reason = CASE WHEN $2::boolean THEN $3 END, updated_at = now()"
    " WHERE id = (SELECT id FROM users WHERE id = $1 OR lower(email) = lower($1) LIMIT 1)"
    " AND (suspended_at IS NULL) = $2::boolean RETURNING id",
    3, 0
};

static const svc_stmt_t st_user_find = {
    "svc_admin_user_find",
    "SELECT id FROM users WHERE id = $1 OR lower(email) = lower($1) LIMIT 1",
    1, 0
};

static const svc_stmt_t st_user_orgs = {
    "svc_admin_user_orgs",
    "SELECT org_id FROM org_members WHERE user_id = $1 ORDER BY org_id",
    1, 0
};

static const svc_stmt_t st_org_suspend = {
    "svc_admin_org_suspend",
    "UPDATE orgs SET suspended_at = CASE WHEN $2::boolean THEN now() END,"
    " suspended_reason = CASE WHEN $2::boolean THEN $3 END, updated_at = now()"
    " WHERE slug = $1 AND (suspended_at IS NULL) = $2::boolean RETURNING id",
    3, 0
};

static const svc_stmt_t st_org_find = {
    "svc_admin_org_find",
    "SELECT id FROM orgs WHERE slug = $1",
    1, 0
};

static int utf8_valid(const char *s)
{
    apr_size_t n = strlen(s), at = 0, len;
    unsigned long cp;

    while (at < n) {
        if ((len = svc_utf8_next((const unsigned char *)s + at, n - at, &cp)) == 0) {
            return 0;
        }
        at += len;
    }
    return 1;
}

/* ?q=: what a name, slug or address contains; 1 to 200 characters. */
static apr_status_t query_text(svc_ctx_t *ctx, const char **pq)
{
    const char *q = apr_table_get(ctx->query, "q");

    *pq = NULL;
    if (!q || !*q) {
        return APR_SUCCESS;
    }
    if (strlen(q) > 200 || !utf8_valid(q)) {
        return svc_fail(ctx, 400, "invalid_query", "q is at most 200 characters of UTF-8.");
    }
    *pq = q;
    return APR_SUCCESS;
}

apr_status_t svc_h_admin_orgs(svc_ctx_t *ctx)
{
    const char *q;
    apr_status_t rv = query_text(ctx, &q);

    return rv != APR_SUCCESS ? rv
         : svc_reply_list(ctx, &st_orgs, q, SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

apr_status_t svc_h_admin_users(svc_ctx_t *ctx)
{
    const char *q;
    apr_status_t rv = query_text(ctx, &q);

    return rv != APR_SUCCESS ? rv
         : svc_reply_list(ctx, &st_users, q, SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

apr_status_t svc_h_admin_runs(svc_ctx_t *ctx)
{
    const char *status = apr_table_get(ctx->query, "status");

    if (status && strcmp(status, "queued") != 0 && strcmp(status, "running") != 0) {
        return svc_fail(ctx, 400, "invalid_query", "status is queued or running.");
    }
    return svc_reply_list(ctx, &st_runs, status, SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

/* YYYY-MM, a real month. */
static int month_valid(const char *m)
{
    int i;

    if (strlen(m) != 7 || m[4] != '-') {
        return 0;
    }
    for (i = 0; i < 7; i++) {
        if (i != 4 && !apr_isdigit(m[i])) {
            return 0;
        }
    }
    return atoi(m) >= 1970 && atoi(m + 5) >= 1 && atoi(m + 5) <= 12;
}

apr_status_t svc_h_admin_usage(svc_ctx_t *ctx)
{
    const char *month = apr_table_get(ctx->query, "month");

    if (!month) {
        apr_time_exp_t t;
        apr_time_exp_gmt(&t, apr_time_now());
        month = apr_psprintf(ctx->pool, "%04d-%02d", t.tm_year + 1900, t.tm_mon + 1);
    }
    else if (!month_valid(month)) {
        return svc_fail(ctx, 400, "invalid_query", "month is YYYY-MM (2026-11).");
    }
    return svc_reply_list(ctx, &st_usage, month, SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

apr_status_t svc_h_admin_audit(svc_ctx_t *ctx)
{
    return svc_reply_list(ctx, &st_audit, SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

apr_status_t svc_h_admin_audit_verify(svc_ctx_t *ctx)
{
    svc_dbres_t *res;
    svc_db_t *db;
    apr_int64_t n = 0, bad = 0;
    int broken;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_audit_verify, ctx->pool, &res)) != APR_SUCCESS) {
        return rv;
    }
    broken = !svc_dbres_isnull(res, 0, 0);
    if ((broken && svc_dbres_int64(res, 0, 0, &bad) != APR_SUCCESS)
        || svc_dbres_int64(res, 0, 1, &n) != APR_SUCCESS) {
        return SVC_EDB;
    }
    return svc_reply_json(ctx, 200, broken
                          ? json_pack("{s:b,s:I,s:I}", "valid", 0, "entries", (json_int_t)n,
                                      "first_broken_id", (json_int_t)bad)
                          : json_pack("{s:b,s:I,s:n}", "valid", 1, "entries", (json_int_t)n,
                                      "first_broken_id"));
}

apr_status_t svc_admin_suspend(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                               svc_suspend_kind_e kind, const char *key, int suspend,
                               const char *reason, const char **pid)
{
    const int is_org = kind == SVC_SUSPEND_ORG;
    const char *flag = suspend ? "true" : "false";
    json_t *data, *ev;
    svc_dbres_t *res;
    const char *id;
    apr_status_t rv;
    int i;

    rv = svc_db_execv(db, is_org ? &st_org_suspend : &st_user_suspend, p, &res, key, flag,
                      reason);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        /* Nothing changed: is there nobody, or is it already so? */
        rv = svc_db_execv(db, is_org ? &st_org_find : &st_user_find, p, &res, key);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        if (svc_dbres_rows(res) == 1) {
            *pid = svc_dbres_str(res, 0, 0);
            return SVC_ECONFLICT;
        }
        return SVC_ENOTFOUND;
    }
    id = *pid = svc_dbres_str(res, 0, 0);
    data = svc_json_pool(p, json_pack("{s:s}", "reason", reason));
    if (!data) {
        return APR_ENOMEM;
    }
    if ((rv = svc_platform_audit_write(db, p, actor,
                                       apr_pstrcat(p, is_org ? "org." : "user.",
                                                   suspend ? "suspended" : "unsuspended", NULL),
                                       is_org ? "org" : "user", id, data)) != APR_SUCCESS) {
        return rv;
    }
    /* Last, as the event log asks (it takes each org's event lock). */
    ev = svc_json_pool(p, json_pack("{s:s,s:o,s:b}", "target", is_org ? "org" : "user",
                                    "user_id", is_org ? json_null() : json_string(id),
                                    "suspended", suspend));
    if (!ev) {
        return APR_ENOMEM;
    }
    if (is_org) {
        return svc_event_emit(db, p, id, NULL, NULL, "access.suspension", ev);
    }
    if ((rv = svc_db_execv(db, &st_user_orgs, p, &res, id)) != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < svc_dbres_rows(res); i++) {
        rv = svc_event_emit(db, p, svc_dbres_str(res, i, 0), NULL, NULL, "access.suspension",
                            ev);
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    return APR_SUCCESS;
}

typedef struct {
    svc_suspend_kind_e kind;
    const char *key;
    int suspend;
} suspend_req_t;

static apr_status_t suspend_tx(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    suspend_req_t *s = baton;
    const char *what = s->kind == SVC_SUSPEND_ORG ? "organization" : "user";
    const char *id = NULL;
    svc_actor_t actor;
    svc_dbres_t *res;
    apr_status_t rv;

    svc_actor_from_ctx(ctx, &actor);
    rv = svc_admin_suspend(db, ctx->pool, &actor, s->kind, s->key, s->suspend,
                           svc_json_str(ctx->body, "reason"), &id);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "No %s %s.", what, s->key);
    }
    if (rv == SVC_ECONFLICT) {
        return svc_fail(ctx, 409, "invalid_status", "The %s %s is %s suspended.", what, s->key,
                        s->suspend ? "already" : "not");
    }
    if (rv != APR_SUCCESS
        || (rv = svc_db_execv(db, s->kind == SVC_SUSPEND_ORG ? &st_org_one : &st_user_one,
                              ctx->pool, &res, id)) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_EDB;
    }
    return svc_reply_text(ctx, 200, svc_dbres_str(res, 0, 0));
}

static apr_status_t suspend_route(svc_ctx_t *ctx, svc_suspend_kind_e kind, const char *param,
                                  int suspend)
{
    suspend_req_t s = { kind, apr_table_get(ctx->params, param), suspend };

    if (kind == SVC_SUSPEND_ORG ? !svc_slug_valid(s.key)
                                : !s.key || strncmp(s.key, "usr_", 4) != 0) {
        return svc_fail(ctx, 404, "not_found", "No %s %s.",
                        kind == SVC_SUSPEND_ORG ? "organization" : "user", s.key ? s.key : "");
    }
    return svc_write(ctx, suspend_tx, &s);
}

apr_status_t svc_h_admin_user_suspend(svc_ctx_t *ctx)
{
    return suspend_route(ctx, SVC_SUSPEND_USER, "userId", 1);
}

apr_status_t svc_h_admin_user_unsuspend(svc_ctx_t *ctx)
{
    return suspend_route(ctx, SVC_SUSPEND_USER, "userId", 0);
}

apr_status_t svc_h_admin_org_suspend(svc_ctx_t *ctx)
{
    return suspend_route(ctx, SVC_SUSPEND_ORG, "orgSlug", 1);
}

apr_status_t svc_h_admin_org_unsuspend(svc_ctx_t *ctx)
{
    return suspend_route(ctx, SVC_SUSPEND_ORG, "orgSlug", 0);
}
