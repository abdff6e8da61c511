/*
 * svc_projects.c: projects of an organization: list, create, detail and
 * update. (The project lookup the authorizer does for every route under
 * /projects/:projectSlug is the kernel's: svc_access.c.)
 */
#include "svc_projects.h"
#include "svc_membership.h"

#include <string.h>

/* One project as the API shows it: these columns of the projects row `p`
 * (and the caller's effective role), in project_item's order, in binary. */
#define PROJECT_COLS(R, U)                                                          \
    "p.id, p.slug, p.name, p.description, p.archived, "                             \
    SVC_EFFECTIVE_PROLE(R, U) ", p.created_at, p.updated_at"

static const svc_col_t project_item[] = {
    SVC_COL_ID("prj"),
    SVC_COL_SLUG,
    { .key = "name", .type = SVC_COL_TEXT, .example = "Website" },
    { .key = "description", .type = SVC_COL_TEXT, .example = "The public site." },
    { .key = "archived", .type = SVC_COL_BOOL },
    { .key = "role", .type = SVC_COL_TEXT, .values = svc_prole_values,
      .description = "Your effective role in it (org owners and admins maintain every "
        "project; others hold their team role, or view)." },
    SVC_COL_CREATED_AT,
    SVC_COL_UPDATED_AT,
    SVC_COL_END
};

const svc_schema_t svc_schema_project = { .name = "Project", .keys = project_item,
    .description = "A project of an organization." };

static const svc_stmt_t st_prj_list = {
    "svc_projects_list",
    "SELECT p.seq, " PROJECT_COLS("$5", "$6") " FROM projects p"
    " WHERE p.org_id = $1 AND ($2::boolean IS NULL OR p.archived = $2::boolean)"
    " AND p.seq < $3::bigint ORDER BY p.seq DESC LIMIT $4::int",
    6, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_prj_get = {
    "svc_projects_get",
    "SELECT " PROJECT_COLS("$2", "$3") " FROM projects p WHERE p.id = $1",
    3, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_prj_insert = {
    "svc_projects_insert",
    "INSERT INTO projects AS p (id, org_id, slug, name, description, created_by)"
    " VALUES ($1, $2, $3, $4, $5, $6)",
    6, 0
};

/* The settings before a change, with the row locked against a concurrent one. */
static const svc_stmt_t st_prj_lock = {
    "svc_projects_lock",
    "SELECT json_build_object('name', name, 'description', description,"
    " 'archived', archived) FROM projects WHERE id = $1 AND org_id = $2"
    " FOR NO KEY UPDATE",
    2, 0
};

/* NULL leaves a setting as it is; nothing changes (not even updated_at)
 * when every setting already has its value. */
static const svc_stmt_t st_prj_update = {
    "svc_projects_update",
    "UPDATE projects p SET name = coalesce($3, p.name),"
    " description = coalesce($4, p.description),"
    " archived = coalesce($5::boolean, p.archived), updated_at = now()"
    " WHERE p.id = $1 AND p.org_id = $2"
    " AND (p.name, p.description, p.archived) IS DISTINCT FROM"
    "     (coalesce($3, p.name), coalesce($4, p.description),"
    "      coalesce($5::boolean, p.archived))"
    " RETURNING json_build_object('name', p.name, 'description', p.description,"
    " 'archived', p.archived)",
    5, 0
};

const svc_field_t svc_body_project_create[] = {
    { .name = "slug", .type = SVC_FT_SLUG, .required = 1,
      .description = "The project's address in the org: lowercase a-z, 0-9 and '-', 1 to 63, "
        "not starting or ending with '-'. Unique in the org; cannot be changed." },
    { .name = "name", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 200,
      .description = "Display name, 1 to 200 characters." },
    { .name = "description", .type = SVC_FT_TEXT, .max = 2000,
      .description = "What the project is, up to 2000 characters (default empty)." },
    SVC_FIELD_END
};

const svc_field_t svc_body_project_update[] = {
    { .name = "name", .type = SVC_FT_STRING, .min = 1, .max = 200,
      .description = "Display name, 1 to 200 characters." },
    { .name = "description", .type = SVC_FT_TEXT, .max = 2000,
      .description = "Up to 2000 characters." },
    { .name = "archived", .type = SVC_FT_BOOL,
      .description = "Archive (true) or restore (false) the project." },
    SVC_FIELD_END
};

const svc_qparam_t svc_query_projects_list[] = {
    { "archived", "boolean", "true: archived projects only; false: active ones only; "
      "omitted: both." },
    { NULL, NULL, NULL }
};

/* Answers `status` with the project as the caller sees it (in a write, as
 * its transaction sees it: svc_write.h). 404 when there is none. */
static apr_status_t reply_project(svc_ctx_t *ctx, svc_db_t *db, const char *id, int status)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_prj_get, ctx->pool, &res, id, svc_role_name(ctx->org->role),
                      ctx->who->user_id);
    return rv == APR_SUCCESS ? svc_reply_row(ctx, status, res, project_item) : rv;
}

apr_status_t svc_h_projects_list(svc_ctx_t *ctx)
{
    const char *archived = apr_table_get(ctx->query, "archived");

    if (archived && strcmp(archived, "true") != 0 && strcmp(archived, "false") != 0) {
        svc_fail_field(ctx, "archived", "invalid_value", "archived must be true or false.");
        return SVC_EPROBLEM;
    }
    return svc_reply_rows(ctx, &st_prj_list, project_item, ctx->org->id, archived,
                          SVC_PAGE_BEFORE, SVC_PAGE_FETCH, svc_role_name(ctx->org->role),
                          ctx->who->user_id);
}

static apr_status_t create_project(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = svc_id_new(ctx->pool, "prj_");
    const char *slug = svc_json_str(ctx->body, "slug");
    const char *name = svc_json_str(ctx->body, "name");
    const char *desc = svc_json_str(ctx->body, "description");
    svc_actor_t actor;
    apr_status_t rv;

    svc_actor_from_ctx(ctx, &actor);
    rv = svc_db_execv(db, &st_prj_insert, ctx->pool, NULL, id, ctx->org->id, slug, name,
                      desc ? desc : "", ctx->who->user_id);
    if (rv == SVC_ECONFLICT) {
        /* The unique index decides between simultaneous creations. */
        return svc_fail(ctx, 409, "conflict", "A project with the slug %s already exists in %s.",
                        slug, ctx->org->slug);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    /*
     * The creator's membership is locked before the audit chain's lock (see
     * svc_member_hold): a concurrent removal of the creator then waits, or
     * this creation finds them gone, instead of the two deadlocking.
     */
    rv = svc_member_hold(db, ctx->pool, ctx->org->id, ctx->who->user_id);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "No organization %s.", ctx->org->slug);
    }
    if (rv != APR_SUCCESS
        || (rv = svc_audit_write(db, ctx->pool, &actor, ctx->org->id, "project.created",
                                 "project", id,
                                 svc_json_pool(ctx->pool,
                                               json_pack("{s:s,s:s,s:s}", "slug", slug, "name",
                                                         name, "description",
                                                         desc ? desc : ""))))
           != APR_SUCCESS
        /* The creator maintains what they created (org admins would anyway). */
        || (rv = svc_team_insert(db, ctx->pool, &actor, ctx->org->id, id, ctx->who->user_id,
                                 SVC_PROLE_MAINTAINER)) != APR_SUCCESS) {
        return rv;
    }
    return reply_project(ctx, db, id, 201);
}

apr_status_t svc_h_projects_create(svc_ctx_t *ctx)
{
    return svc_write(ctx, create_project, NULL);
}

apr_status_t svc_h_projects_get(svc_ctx_t *ctx)
{
    svc_db_t *db;
    apr_status_t rv = svc_ctx_db(ctx, &db);

    return rv == APR_SUCCESS ? reply_project(ctx, db, ctx->project->id, 200) : rv;
}

static apr_status_t update_project(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const json_t *archived = json_object_get(ctx->body, "archived");
    svc_dbres_t *before, *after;
    json_error_t jerr;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_VIEWER, SVC_PROLE_MAINTAINER))
            != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_prj_lock, ctx->pool, &before, ctx->project->id,
                              ctx->org->id)) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(before) != 1) {
        return svc_fail(ctx, 404, "not_found", "No project %s in %s.", ctx->project->slug,
                        ctx->org->slug);
    }
    rv = svc_db_execv(db, &st_prj_update, ctx->pool, &after, ctx->project->id, ctx->org->id,
                      svc_json_str(ctx->body, "name"), svc_json_str(ctx->body, "description"),
                      archived ? (json_is_true(archived) ? "true" : "false") : NULL);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(after) == 1) {
        json_t *data = json_pack("{s:o?,s:o?}",
                                 "before", json_loads(svc_dbres_str(before, 0, 0), 0, &jerr),
                                 "after", json_loads(svc_dbres_str(after, 0, 0), 0, &jerr));
        rv = svc_audit_ctx(ctx, db, "project.updated",
                           "project", ctx->project->id, svc_json_pool(ctx->pool, data));
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    return reply_project(ctx, db, ctx->project->id, 200);
}

apr_status_t svc_h_projects_update(svc_ctx_t *ctx)
{
    if (json_object_size(ctx->body) == 0) {
        return svc_fail(ctx, 400, "validation_failed",
                        "The body names no setting to change (name, description, archived).");
    }
    return svc_write(ctx, update_project, NULL);
}
