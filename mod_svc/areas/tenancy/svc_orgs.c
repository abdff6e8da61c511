/*
 * svc_orgs.c: organizations: creation, the org document and the /api/orgs
 * endpoints. (The membership lookup and the org lock are in svc_access.c.)
 */
#include "svc_orgs.h"

#include <string.h>

/*
 * One org as the API shows it: the columns of st_org_get in org_item's
 * order, read in binary and written by svc_row_json. The role is the
 * caller's (null for a caller who is not a member).
 */
static const svc_col_t org_owner[] = {
    SVC_COL_ID("usr"),
    SVC_COL_EMAIL,
    { .key = "name", .type = SVC_COL_TEXT, .example = "Ada Lovelace" },
    SVC_COL_END
};

static const svc_col_t org_item[] = {
    SVC_COL_ID("org"),
    SVC_COL_SLUG,
    { .key = "name", .type = SVC_COL_TEXT, .example = "Acme" },
    { .key = "role", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .values = svc_role_values,
      .description = "Your role in it (null for someone who is not a member)." },
    { .key = "owner", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .sub = org_owner },
    { .key = "members", .type = SVC_COL_INT, .description = "How many members it has." },
    { .key = "projects", .type = SVC_COL_INT, .description = "How many projects it has." },
    SVC_COL_CREATED_AT,
    SVC_COL_UPDATED_AT,
    SVC_COL_END
};

const svc_schema_t svc_schema_org = { .name = "Org", .keys = org_item,
    .description = "An organization (docs/api/tenancy.md)." };

/* An org in the caller's list of orgs (st_org_list, after the ordering key). */
static const svc_col_t org_list_item[] = {
    SVC_COL_ID("org"),
    SVC_COL_SLUG,
    { .key = "name", .type = SVC_COL_TEXT, .example = "Acme" },
    { .key = "role", .type = SVC_COL_TEXT, .values = svc_role_values,
      .description = "Your role in it." },
    SVC_COL_CREATED_AT,
    SVC_COL_UPDATED_AT,
    SVC_COL_END
};

const svc_schema_t svc_schema_org_summary = { .name = "OrgSummary", .keys = org_list_item,
    .description = "One of your organizations, as your list shows it." };

static const svc_stmt_t st_org_insert = {
    "svc_orgs_insert",
    "INSERT INTO orgs (id, slug, name) VALUES ($1, $2, $3)",
    3, 0
};

static const svc_stmt_t st_member_insert = {
    "svc_orgs_member_insert",
    "INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, $3)",
    3, 0
};

/* The owner comes from a LIMIT 1 lateral: inside an ownership transfer
 * there can be two for a moment, and the document must not break then. */
static const svc_stmt_t st_org_get = {
    "svc_orgs_get",
    "SELECT o.id, o.slug, o.name, m.role, ow.id, ow.email, ow.name,"
    " (SELECT count(*) FROM org_members c WHERE c.org_id = o.id),"
    " (SELECT count(*) FROM projects c WHERE c.org_id = o.id),"
    " o.created_at, o.updated_at"
    " FROM orgs o"
    " LEFT JOIN org_members m ON m.org_id = o.id AND m.user_id = $2"
    " LEFT JOIN LATERAL (SELECT u.id, u.email, u.name"
    "   FROM org_members om JOIN users u ON u.id = om.user_id"
    "   WHERE om.org_id = o.id AND om.role = 'owner' ORDER BY om.seq LIMIT 1) ow ON true"
    " WHERE o.id = $1",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

/* The caller's orgs, newest membership first; a bound token sees its org only. */
static const svc_stmt_t st_org_list = {
    "svc_orgs_list",
    "SELECT m.seq, o.id, o.slug, o.name, m.role, o.created_at, o.updated_at"
    " FROM org_members m JOIN orgs o ON o.id = m.org_id"
    " WHERE m.user_id = $1 AND ($2::text IS NULL OR o.id = $2) AND m.seq < $3::bigint"
    " ORDER BY m.seq DESC LIMIT $4::int",
    4, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_org_list_all = {
    "svc_orgs_list_all",
    "SELECT coalesce(json_agg(json_build_object('id', o.id, 'slug', o.slug, 'name', o.name,"
    " 'owner', (SELECT u.email FROM org_members om JOIN users u ON u.id = om.user_id"
    "           WHERE om.org_id = o.id AND om.role = 'owner'),"
    " 'members', (SELECT count(*) FROM org_members c WHERE c.org_id = o.id),"
    " 'projects', (SELECT count(*) FROM projects c WHERE c.org_id = o.id),"
    " 'created_at', svc_ts(o.created_at)) ORDER BY o.slug), '[]'::json) FROM orgs o",
    0, SVC_STMT_READ
};

static const svc_stmt_t st_org_name_lock = {
    "svc_orgs_name_lock",
    "SELECT name FROM orgs WHERE id = $1 FOR NO KEY UPDATE",
    1, 0
};

static const svc_stmt_t st_org_rename = {
    "svc_orgs_rename",
    "UPDATE orgs SET name = $2, updated_at = now() WHERE id = $1",
    2, 0
};

const svc_field_t svc_body_org_create[] = {
    { .name = "slug", .type = SVC_FT_SLUG, .required = 1,
      .description = "The organization's address (:orgSlug): lowercase a-z, 0-9 and '-', 1 to "
        "63, not starting or ending with '-'. Unique; cannot be changed." },
    { .name = "name", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 200,
      .description = "Display name, 1 to 200 characters." },
    SVC_FIELD_END
};

const svc_field_t svc_body_org_update[] = {
    { .name = "name", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 200,
      .description = "Display name, 1 to 200 characters." },
    SVC_FIELD_END
};

apr_status_t svc_org_create(svc_db_t *db, apr_pool_t *p, const char *slug, const char *name,
                            const char *owner_user_id, const svc_actor_t *actor,
                            const char **pid)
{
    const char *id = svc_id_new(p, "org_");
    apr_status_t rv;

    rv = svc_db_execv(db, &st_org_insert, p, NULL, id, slug, name);
    if (rv == APR_SUCCESS) {
        rv = svc_db_execv(db, &st_member_insert, p, NULL, id, owner_user_id, "owner");
    }
    if (rv == APR_SUCCESS) {
        rv = svc_audit_write(db, p, actor, id, "org.created", "org", id,
                             svc_json_pool(p, json_pack("{s:s,s:s,s:s}", "slug", slug,
                                                        "name", name, "owner_id",
                                                        owner_user_id)));
    }
    if (rv == APR_SUCCESS) {
        *pid = id;
    }
    return rv;
}

apr_status_t svc_org_json(svc_db_t *db, apr_pool_t *p, const char *org_id,
                          const char *user_id, const char **pjson)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_org_get, p, &res, org_id, user_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_ENOTFOUND;
    }
    return svc_row_json_text(p, res, org_item, pjson);
}

apr_status_t svc_org_list_all(svc_db_t *db, apr_pool_t *p, const char **pjson)
{
    apr_status_t rv = svc_db_value(db, &st_org_list_all, p, pjson, NULL);

    /* An aggregate: its one row is always there. */
    return rv == SVC_ENOTFOUND ? SVC_EDB : rv;
}

apr_status_t svc_h_orgs_list(svc_ctx_t *ctx)
{
    return svc_reply_rows(ctx, &st_org_list, org_list_item, ctx->who->user_id,
                          svc_auth_binding(ctx), SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

static apr_status_t create_org(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *slug = svc_json_str(ctx->body, "slug");
    const char *id, *json;
    svc_actor_t actor;
    apr_status_t rv;

    svc_actor_from_ctx(ctx, &actor);
    rv = svc_org_create(db, ctx->pool, slug, svc_json_str(ctx->body, "name"),
                        ctx->who->user_id, &actor, &id);
    if (rv == SVC_ECONFLICT) {
        /* The unique index decides between simultaneous creations. */
        return svc_fail(ctx, 409, "conflict", "An organization with the slug %s already exists.",
                        slug);
    }
    if (rv != APR_SUCCESS
        || (rv = svc_org_json(db, ctx->pool, id, ctx->who->user_id, &json)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_text(ctx, 201, json);
}

apr_status_t svc_h_orgs_create(svc_ctx_t *ctx)
{
    /* A token bound to one org must not be a way to reach beyond it. */
    if (ctx->who->via == SVC_VIA_PAT && ctx->who->token_org_id) {
        return svc_fail(ctx, 403, "insufficient_scope",
                        "This token is bound to organization %s and cannot create "
                        "organizations.", ctx->who->token_org_slug);
    }
    return svc_write(ctx, create_org, NULL);
}

apr_status_t svc_h_orgs_get(svc_ctx_t *ctx)
{
    const char *json;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_org_json(db, ctx->pool, ctx->org->id, ctx->who->user_id, &json))
           != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_text(ctx, 200, json);
}

static apr_status_t rename_org(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *name = svc_json_str(ctx->body, "name");
    const char *before, *json;
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_ADMIN, SVC_PROLE_NONE)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_org_name_lock, ctx->pool, &res, ctx->org->id))
           != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_ENOTFOUND;
    }
    before = svc_dbres_str(res, 0, 0);
    if (strcmp(before, name) != 0) {
        rv = svc_db_execv(db, &st_org_rename, ctx->pool, NULL, ctx->org->id, name);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        rv = svc_audit_ctx(ctx, db, "org.updated", "org",
                           ctx->org->id,
                           svc_json_pool(ctx->pool,
                                         json_pack("{s:{s:s},s:{s:s}}", "before", "name",
                                                   before, "after", "name", name)));
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    if ((rv = svc_org_json(db, ctx->pool, ctx->org->id, ctx->who->user_id, &json))
        != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_text(ctx, 200, json);
}

apr_status_t svc_h_orgs_update(svc_ctx_t *ctx)
{
    return svc_write(ctx, rename_org, NULL);
}
