/*
 * svc_teams.c: a project's team: list, add an org member, invite by email,
 * change a team role, remove (or leave).
 */
#include "svc_teams.h"
#include "svc_invites.h"
#include "svc_membership.h"

#include <string.h>

/* One team member as the API shows it: these columns (`pm` the project
 * membership, `m` the org membership, `u` the user), in team_item's order,
 * read in binary. */
#define TEAM_COLS "u.id, u.email, u.name, pm.role, m.role, pm.created_at, pm.updated_at"

static const svc_col_t team_item[] = {
    { .key = "user_id", .type = SVC_COL_TEXT, .id = "usr" },
    SVC_COL_EMAIL,
    { .key = "name", .type = SVC_COL_TEXT, .example = "Ada Lovelace" },
    { .key = "role", .type = SVC_COL_TEXT, .values = svc_prole_values,
      .description = "Their role on the team." },
    { .key = "org_role", .type = SVC_COL_TEXT, .values = svc_role_values,
      .description = "Their role in the organization." },
    { .key = "added_at", .type = SVC_COL_TIME },
    SVC_COL_UPDATED_AT,
    SVC_COL_END
};

const svc_schema_t svc_schema_team_member = { .name = "TeamMember", .keys = team_item,
    .description = "A member of a project's team." };

const svc_schema_t svc_schema_team_addition = {
    .name = "TeamAddition",
    .description = "Who was added: a team member (by user_id), or an invite (by email).",
    .one_of = (const svc_schema_t *const[]){ &svc_schema_team_member, &svc_schema_invite, NULL }
};

#define TEAM_FROM                                                                   \
    " FROM project_members pm JOIN users u ON u.id = pm.user_id"                    \
    " JOIN org_members m ON m.org_id = pm.org_id AND m.user_id = pm.user_id"

static const svc_stmt_t st_team_list = {
    "svc_teams_list",
    "SELECT pm.seq, " TEAM_COLS TEAM_FROM
    " WHERE pm.project_id = $1 AND pm.org_id = $2 AND pm.seq < $3::bigint"
    " ORDER BY pm.seq DESC LIMIT $4::int",
    4, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_team_get = {
    "svc_teams_get",
    "SELECT " TEAM_COLS TEAM_FROM " WHERE pm.project_id = $1 AND pm.user_id = $2",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

/*
 * The org role of someone about to join a team, held (FOR SHARE) until the
 * change commits: a demotion to viewer waits for it and then lowers the new
 * team role too, or happens first and is seen here.
 */
static const svc_stmt_t st_team_org_role = {
    "svc_teams_org_role",
    "SELECT role FROM org_members WHERE org_id = $1 AND user_id = $2 FOR SHARE",
    2, 0
};

static const svc_stmt_t st_team_lock = {
    "svc_teams_lock",
    "SELECT pm.role, m.role FROM project_members pm"
    " JOIN org_members m ON m.org_id = pm.org_id AND m.user_id = pm.user_id"
    " WHERE pm.project_id = $1 AND pm.user_id = $2 FOR UPDATE OF pm FOR SHARE OF m",
    2, 0
};

static const svc_stmt_t st_team_set_role = {
    "svc_teams_set_role",
    "UPDATE project_members SET role = $3, updated_at = now()"
    " WHERE project_id = $1 AND user_id = $2",
    3, 0
};

static const svc_stmt_t st_team_delete = {
    "svc_teams_delete",
    "DELETE FROM project_members WHERE project_id = $1 AND user_id = $2 RETURNING role",
    2, 0
};

static const char *const project_roles[] = { "viewer", "developer", "maintainer", NULL };
static const char *const user_prefix[] = { "usr_", NULL };

const svc_field_t svc_body_team_add[] = {
    { .name = "user_id", .type = SVC_FT_ID, .values = user_prefix,
      .description = "A member of the org to put on the team (give this or email)." },
    { .name = "email", .type = SVC_FT_EMAIL,
      .description = "An address to invite to the team (give this or user_id); whoever accepts "
        "joins the org too if they are not a member (as viewer for the viewer role, else as "
        "member), so inviting a non-member needs an org admin or the owner." },
    { .name = "role", .type = SVC_FT_ENUM, .required = 1, .values = project_roles,
      .description = "The project role. An org viewer can only be a project viewer." },
    SVC_FIELD_END
};

const svc_field_t svc_body_team_update[] = {
    { .name = "role", .type = SVC_FT_ENUM, .required = 1, .values = project_roles,
      .description = "The new project role. An org viewer can only be a project viewer." },
    SVC_FIELD_END
};

static apr_status_t not_on_team(svc_ctx_t *ctx, const char *user_id)
{
    return svc_fail(ctx, 404, "not_found", "%s is not on the team of %s.", user_id,
                    ctx->project->slug);
}

static apr_status_t viewer_limited(svc_ctx_t *ctx, const char *user_id)
{
    return svc_fail(ctx, 409, "viewer_limited",
                    "%s is a viewer of %s, and an org viewer can only be a project viewer; "
                    "make them a member of the org first.", user_id, ctx->org->slug);
}

static const svc_roster_t team = {
    &st_team_lock, &st_team_set_role, &st_team_get, team_item, "team.role_changed"
};

apr_status_t svc_h_team_list(svc_ctx_t *ctx)
{
    return svc_reply_rows(ctx, &st_team_list, team_item, ctx->project->id, ctx->org->id,
                          SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

static apr_status_t add_to_team(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *user_id = svc_json_str(ctx->body, "user_id");
    const char *email = svc_json_str(ctx->body, "email");
    const char *role_s = svc_json_str(ctx->body, "role");
    svc_prole_e role = svc_prole_parse(role_s);
    const char *json;
    svc_actor_t actor;
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_VIEWER, SVC_PROLE_MAINTAINER))
        != APR_SUCCESS) {
        return rv;
    }
    if (email) {
        rv = svc_invite_create(ctx, db, ctx->project->id, email, role_s, &json);
        return rv == APR_SUCCESS ? svc_reply_text(ctx, 201, json) : rv;
    }
    rv = svc_db_execv(db, &st_team_org_role, ctx->pool, &res, ctx->org->id, user_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        svc_fail_field(ctx, "user_id", "not_a_member",
                       "Only members of %s can join its projects' teams; invite others by "
                       "email.", ctx->org->slug);
        return SVC_EPROBLEM;
    }
    if (svc_role_parse(svc_dbres_str(res, 0, 0)) == SVC_ROLE_VIEWER && role > SVC_PROLE_VIEWER) {
        return viewer_limited(ctx, user_id);
    }
    svc_actor_from_ctx(ctx, &actor);
    rv = svc_team_insert(db, ctx->pool, &actor, ctx->org->id, ctx->project->id, user_id, role);
    if (rv == SVC_ECONFLICT) {
        return svc_fail(ctx, 409, "already_member",
                        "%s is on the team of %s already; change their role with PATCH.",
                        user_id, ctx->project->slug);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return svc_roster_reply(ctx, db, &team, ctx->project->id, user_id, 201);
}

apr_status_t svc_h_team_add(svc_ctx_t *ctx)
{
    const char *user_id = svc_json_str(ctx->body, "user_id");

    if (!user_id == !svc_json_str(ctx->body, "email")) {
        svc_fail_field(ctx, user_id ? "email" : "user_id", "one_of",
                       "Give exactly one of user_id (an org member) and email (an invite).");
        return SVC_EPROBLEM;
    }
    return svc_write(ctx, add_to_team, NULL);
}

static apr_status_t change_role(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *user_id = apr_table_get(ctx->params, "userId");
    const char *role_s = svc_json_str(ctx->body, "role");
    svc_prole_e role = svc_prole_parse(role_s), before;
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_VIEWER, SVC_PROLE_MAINTAINER))
        != APR_SUCCESS) {
        return rv;
    }
    rv = svc_roster_lock(ctx, db, &team, ctx->project->id, user_id, &res);
    if (rv == SVC_ENOTFOUND) {
        return not_on_team(ctx, user_id);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    before = svc_prole_parse(svc_dbres_str(res, 0, 0));
    if (svc_role_parse(svc_dbres_str(res, 0, 1)) == SVC_ROLE_VIEWER && role > SVC_PROLE_VIEWER) {
        return viewer_limited(ctx, user_id);
    }
    if (before != role
        && (rv = svc_roster_set_role(ctx, db, &team, ctx->project->id, user_id, role_s,
                                     "project", ctx->project->id,
                                     svc_json_pool(ctx->pool,
                                                   json_pack("{s:s,s:s,s:s}", "user_id",
                                                             user_id, "before",
                                                             svc_prole_name(before), "after",
                                                             role_s)))) != APR_SUCCESS) {
        return rv;
    }
    return svc_roster_reply(ctx, db, &team, ctx->project->id, user_id, 200);
}

apr_status_t svc_h_team_update(svc_ctx_t *ctx)
{
    return svc_write(ctx, change_role, NULL);
}

static apr_status_t remove_from_team(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *user_id = apr_table_get(ctx->params, "userId");
    int self = strcmp(user_id, ctx->who->user_id) == 0;
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_VIEWER,
                                 self ? SVC_PROLE_VIEWER : SVC_PROLE_MAINTAINER))
            != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_team_delete, ctx->pool, &res, ctx->project->id, user_id))
           != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return not_on_team(ctx, user_id);
    }
    rv = svc_audit_ctx(ctx, db,
                       self ? "team.member_left" : "team.member_removed", "project",
                       ctx->project->id,
                       svc_json_pool(ctx->pool,
                                     json_pack("{s:s,s:s}", "user_id", user_id, "role",
                                               svc_dbres_str(res, 0, 0))));
    return rv == APR_SUCCESS ? svc_reply_empty(ctx) : rv;
}

apr_status_t svc_h_team_remove(svc_ctx_t *ctx)
{
    /* Anyone may leave a team; only maintainers remove others. */
    if (strcmp(apr_table_get(ctx->params, "userId"), ctx->who->user_id) != 0
        && ctx->project->prole < SVC_PROLE_MAINTAINER) {
        return svc_fail(ctx, 403, "forbidden",
                        "Your role in project %s is %s; removing another team member needs "
                        "maintainer.", ctx->project->slug, svc_prole_name(ctx->project->prole));
    }
    return svc_write(ctx, remove_from_team, NULL);
}
