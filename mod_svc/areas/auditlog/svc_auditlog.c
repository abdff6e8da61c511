/*
 * svc_auditlog.c: the audit area: an org's log, newest first and filtered,
 * the check of its hash chain, and the check of every chain (svcctl).
 */
#include "svc_auditlog.h"

#include <string.h>

/* One entry as the API shows it; `a` is the audit_log row, `u` its actor's
 * user row if any. The id is a string like every id, though it is a number
 * that orders the chain. The actor's name comes from the users table, not
 * the entry, so that people who left the org since (no longer in its member
 * list) are still named; it is the user's name now. */
#define AUDIT_JSON                                                                  \
    "json_build_object('id', a.id::text, 'action', a.action,"                       \
    " 'actor', json_build_object('kind', a.actor_kind, 'user_id', a.actor_user_id," \
    "   'name', nullif(u.name, ''), 'token_id', a.actor_token_id),"                 \
    " 'target', json_build_object('type', a.target_type, 'id', a.target_id),"       \
    " 'data', a.data, 'ip', a.ip, 'user_agent', a.user_agent,"                      \
    " 'request_id', a.request_id, 'created_at', svc_ts(a.created_at),"              \
    " 'hash', encode(a.hash, 'hex'), 'prev_hash', encode(a.prev_hash, 'hex'))"

/* since is inclusive and until exclusive, so consecutive ranges do not overlap. */
static const svc_stmt_t st_audit_list = {
    "svc_audit_list",
    "SELECT " AUDIT_JSON ", a.id FROM audit_log a LEFT JOIN users u ON u.id = a.actor_user_id"
    " WHERE a.org_id = $1 AND a.id < $2::bigint"
    " AND ($3::text IS NULL OR a.action = $3) AND ($4::text IS NULL OR a.actor_user_id = $4)"
    " AND ($5::timestamptz IS NULL OR a.created_at >= $5::timestamptz)"
    " AND ($6::timestamptz IS NULL OR a.created_at < $6::timestamptz)"
    " ORDER BY a.id DESC LIMIT $7::int",
    7, SVC_STMT_READ
};

/*
 * Both walk their chains once, linearly (sql/008_hardening.sql: each entry compared with
 * the previous one of its chain, each digest computed once).
 */
static const svc_stmt_t st_audit_verify = {
    "svc_audit_verify",
    "SELECT c.first_broken_id::text, c.entries FROM svc_audit_check($1) c",
    1, SVC_STMT_READ
};

static const svc_stmt_t st_audit_verify_all = {
    "svc_audit_verify_all",
    "SELECT coalesce(json_agg(json_build_object('org_id', c.org_id,"
    " 'first_broken_id', c.first_broken_id::text) ORDER BY c.org_id NULLS FIRST), '[]'::json)"
    " FROM svc_audit_check_all() c WHERE c.first_broken_id IS NOT NULL",
    0, SVC_STMT_READ
};

apr_status_t svc_auditlog_verify(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                 const char **pbroken, apr_int64_t *pentries)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_audit_verify, p, &res, org_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1 || svc_dbres_int64(res, 0, 1, pentries) != APR_SUCCESS) {
        return SVC_EDB;
    }
    *pbroken = svc_dbres_str(res, 0, 0);
    return APR_SUCCESS;
}

apr_status_t svc_auditlog_verify_all(svc_db_t *db, apr_pool_t *p, const char **pjson)
{
    apr_status_t rv = svc_db_value(db, &st_audit_verify_all, p, pjson, NULL);

    /* An aggregate: its one row is always there. */
    return rv == SVC_ENOTFOUND ? SVC_EDB : rv;
}

/* An action name as the database allows them (audit_log's CHECK). */
static int action_valid(const char *s)
{
    apr_size_t n = strlen(s), i;
    int dots = 0;

    if (n < 3 || n > 100 || s[0] == '.' || s[n - 1] == '.') {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (s[i] == '.') {
            if (s[i + 1] == '.') {
                return 0;
            }
            dots++;
        }
        else if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_')) {
            return 0;
        }
    }
    return dots > 0;
}

/* A user id as svc_id_new makes them. */
static int user_id_valid(const char *s)
{
    apr_size_t n = strlen(s), i;

    if (n < 5 || n > 64 || strncmp(s, "usr_", 4) != 0) {
        return 0;
    }
    for (i = 4; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'Z')
              || (s[i] >= 'a' && s[i] <= 'z'))) {
            return 0;
        }
    }
    return 1;
}

/*
 * A time filter (since or until) as PostgreSQL is given it: the instant in
 * UTC to the microsecond. The offset is applied here because PostgreSQL
 * refuses offsets beyond 15:59 that RFC 3339 allows, and an offset can move
 * a time out of the years PostgreSQL and we write (1 to 9999). NULL when
 * absent; a field error when unusable.
 */
static const char *time_filter(svc_ctx_t *ctx, const char *name)
{
    const char *v = apr_table_get(ctx->query, name);
    char *utc;
    apr_time_t t;

    if (!v) {
        return NULL;
    }
    if (svc_parse_rfc3339_usec(v, &t) != APR_SUCCESS) {
        svc_fail_field(ctx, name, "invalid_time",
                       "%s must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z "
                       "(offsets from -23:59 to +23:59).", name);
        return NULL;
    }
    utc = apr_palloc(ctx->pool, SVC_RFC3339_USEC_LEN + 1);
    if (svc_format_rfc3339_usec(utc, t) != APR_SUCCESS) {
        svc_fail_field(ctx, name, "out_of_range",
                       "%s must fall between 0001-01-01T00:00:00Z and "
                       "9999-12-31T23:59:59Z once its offset is applied.", name);
        return NULL;
    }
    return utc;
}

static apr_status_t audit_list(svc_ctx_t *ctx)
{
    const char *action = apr_table_get(ctx->query, "action");
    const char *actor = apr_table_get(ctx->query, "actor");
    const char *since, *until, *params[7];
    svc_page_t pg;
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    /* Every bad parameter is named, all in one answer. */
    if (action && !action_valid(action)) {
        svc_fail_field(ctx, "action", "invalid_value",
                       "action must be an action name such as member.role_changed.");
    }
    if (actor && !user_id_valid(actor)) {
        svc_fail_field(ctx, "actor", "invalid_id", "actor must be a user id (usr_...).");
    }
    since = time_filter(ctx, "since");
    until = time_filter(ctx, "until");
    if (ctx->problem) {
        return SVC_EPROBLEM;
    }
    if ((rv = svc_page_parse(ctx, &pg)) != APR_SUCCESS
        || (rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    params[0] = ctx->org->id;
    params[1] = pg.before;
    params[2] = action;
    params[3] = actor;
    params[4] = since;
    params[5] = until;
    params[6] = pg.fetch;
    rv = svc_db_exec(db, &st_audit_list, ctx->pool, &res, params);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_page(ctx, res, 0, 1, &pg);
}

static apr_status_t audit_verify(svc_ctx_t *ctx)
{
    const char *broken;
    apr_int64_t entries;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_auditlog_verify(db, ctx->pool, ctx->org->id, &broken, &entries))
           != APR_SUCCESS) {
        return rv;
    }
    if (broken) {
        return svc_reply_json(ctx, 200, json_pack("{s:b,s:s,s:I}", "ok", 0, "first_broken_id",
                                                  broken, "entries", (json_int_t)entries));
    }
    return svc_reply_json(ctx, 200, json_pack("{s:b,s:I}", "ok", 1, "entries",
                                              (json_int_t)entries));
}

static const svc_qparam_t audit_query[] = {
    { "action", "string", "Only entries of this action, such as member.role_changed." },
    { "actor", "string", "Only entries of this actor (a user id)." },
    { "since", "string", "Only entries at or after this RFC 3339 date-time." },
    { "until", "string", "Only entries before this RFC 3339 date-time." },
    { NULL, NULL, NULL }
};

/* An entry as AUDIT_JSON builds it. */
static const svc_col_t audit_actor_keys[] = {
    { .key = "kind", .type = SVC_COL_TEXT,
      .values = SVC_VALUES("user", "operator", "system", "provider"),
      .description = "user: through the API; operator: svcctl; system: the service itself; "
        "provider: the code-hosting provider (a webhook)." },
    { .key = "user_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "usr" },
    { .key = "name", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "Ann",
      .description = "The user's name (as it is now), so that an entry of someone who left "
        "the organization still names them; null without a user or a name." },
    { .key = "token_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "tok",
      .description = "The personal access token used, if one was." },
    SVC_COL_END
};

static const svc_col_t audit_target_keys[] = {
    { .key = "type", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "project" },
    { .key = "id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .example = "prj_3kTq0dKc5gWm1xQ9aZr2Lb" },
    SVC_COL_END
};

static const svc_col_t audit_keys[] = {
    { .key = "id", .type = SVC_COL_TEXT, .format = "digits",
      .description = "The entry's place in the log (a number, as text)." },
    { .key = "action", .type = SVC_COL_TEXT, .example = "member.role_changed" },
    { .key = "actor", .type = SVC_COL_OBJECT, .sub = audit_actor_keys },
    { .key = "target", .type = SVC_COL_OBJECT, .sub = audit_target_keys },
    { .key = "data", .type = SVC_COL_OBJECT,
      .description = "What changed, by action (before and after, mostly)." },
    { .key = "ip", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "192.0.2.7" },
    { .key = "user_agent", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "curl/8.0" },
    { .key = "request_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .example = "req_3kTq0dKc5gWm1xQ9aZr2Lb",
      .description = "The API request that made the change (its X-Request-Id), or svcctl "
        "for the operator's tool; null for the service's own." },
    SVC_COL_CREATED_AT,
    { .key = "hash", .type = SVC_COL_TEXT, .format = "hex",
      .description = "SHA-256 of the entry and the previous entry's hash." },
    { .key = "prev_hash", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .format = "hex",
      .description = "The previous entry's hash; null for the first." },
    SVC_COL_END
};

static const svc_schema_t audit_entry_schema = { .name = "AuditEntry", .keys = audit_keys,
    .description = "An entry of an organization's audit log (docs/api/tenancy.md#audit)." };

static const svc_col_t audit_verify_keys[] = {
    { .key = "ok", .type = SVC_COL_BOOL, .description = "Every link and digest holds." },
    { .key = "first_broken_id", .type = SVC_COL_TEXT, .flags = SVC_COL_OPTIONAL,
      .format = "digits", .description = "When not ok: the first entry that does not hold." },
    { .key = "entries", .type = SVC_COL_INT, .description = "How many entries were checked." },
    SVC_COL_END
};

static const svc_schema_t audit_verify_schema = { .name = "AuditVerification",
    .keys = audit_verify_keys,
    .description = "The result of checking an organization's audit chain." };

static const svc_route_t routes[] = {
    { .method = "GET", .path = "/api/orgs/:orgSlug/audit", .handler = audit_list,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .flags = SVC_RF_PAGED, .op_id = "listAudit",
      .query = audit_query, .response = &audit_entry_schema,
      .summary = "The organization's audit log, newest first" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/audit/verify", .handler = audit_verify,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .op_id = "verifyAudit",
      .response = &audit_verify_schema,
      .summary = "Check the hash chain of the organization's audit log" },
    SVC_ROUTE_END,
};

static const svc_tag_t tags[] = {
    { "Audit", "The organization's audit log: every change, who made it and how, chained by "
      "SHA-256 so that tampering shows." },
    { NULL, NULL }
};

const svc_area_t svc_auditlog_area = {
    .name = "auditlog", .description = "The organization's append-only, hash-chained audit log.",
    .routes = routes, .tags = tags
};
