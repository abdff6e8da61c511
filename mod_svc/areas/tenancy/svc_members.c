/*
 * svc_members.c: organization members: list, change a role, remove (or
 * leave), and ownership transfer. See svc_members.h for the locking rule.
 */
#include "svc_members.h"
#include "svc_invites.h"
#include "svc_membership.h"
#include "svc_orgs.h"

#include <string.h>

/* One member as the API shows it: these columns (`m` the membership, `u`
 * the user), in member_item's order, read in binary. */
#define MEMBER_COLS "u.id, u.email, u.name, m.role, m.created_at, m.updated_at"

static const svc_col_t member_item[] = {
    { .key = "user_id", .type = SVC_COL_TEXT, .id = "usr" },
    SVC_COL_EMAIL,
    { .key = "name", .type = SVC_COL_TEXT, .example = "Ada Lovelace" },
    { .key = "role", .type = SVC_COL_TEXT, .values = svc_role_values },
    { .key = "joined_at", .type = SVC_COL_TIME },
    SVC_COL_UPDATED_AT,
    SVC_COL_END
};

const svc_schema_t svc_schema_member = { .name = "Member", .keys = member_item,
    .description = "A member of an organization, with their role." };

/* What the first page of members carries beside them, for admins. */
const svc_col_t svc_members_page_keys[] = {
    { .key = "invites", .type = SVC_COL_ARRAY, .flags = SVC_COL_OPTIONAL,
      .ref = &svc_schema_invite,
      .description = "On the first page, for admins and owners with admin scope: the newest "
        "100 pending invites." },
    { .key = "invites_total", .type = SVC_COL_INT, .flags = SVC_COL_OPTIONAL,
      .description = "With invites: how many are pending in all (GET .../invites pages them)." },
    SVC_COL_END
};

static const svc_stmt_t st_mem_list = {
    "svc_members_list",
    "SELECT m.seq, " MEMBER_COLS " FROM org_members m JOIN users u ON u.id = m.user_id"
    " WHERE m.org_id = $1 AND m.seq < $2::bigint ORDER BY m.seq DESC LIMIT $3::int",
    3, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_mem_get = {
    "svc_members_get",
    "SELECT " MEMBER_COLS " FROM org_members m JOIN users u ON u.id = m.user_id"
    " WHERE m.org_id = $1 AND m.user_id = $2",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_mem_lock = {
    "svc_members_lock",
    "SELECT role FROM org_members WHERE org_id = $1 AND user_id = $2 FOR UPDATE",
    2, 0
};

static const svc_stmt_t st_mem_set_role = {
    "svc_members_set_role",
    "UPDATE org_members SET role = $3, updated_at = now() WHERE org_id = $1 AND user_id = $2",
    3, 0
};

/* A viewer is read-only in every project of the org (org_viewer_project_cap):
 * demoting someone to viewer lowers their team roles in the same change. */
static const svc_stmt_t st_mem_cap_teams = {
    "svc_members_cap_teams",
    "WITH capped AS (UPDATE project_members SET role = 'viewer', updated_at = now()"
    "  WHERE org_id = $1 AND user_id = $2 AND role <> 'viewer' RETURNING project_id)"
    " SELECT coalesce(json_agg(project_id ORDER BY project_id), '[]'::json) FROM capped",
    2, 0
};

/* Leaving the org leaves its teams (the foreign key would cascade; doing it
 * first lets the audit entry say which teams). */
static const svc_stmt_t st_mem_leave_teams = {
    "svc_members_leave_teams",
    "WITH gone AS (DELETE FROM project_members WHERE org_id = $1 AND user_id = $2"
    "  RETURNING project_id, role)"
    " SELECT coalesce(json_agg(json_build_object('project_id', project_id, 'role', role)"
    "  ORDER BY project_id), '[]'::json) FROM gone",
    2, 0
};

static const svc_stmt_t st_mem_delete = {
    "svc_members_delete",
    "DELETE FROM org_members WHERE org_id = $1 AND user_id = $2",
    2, 0
};

/* A token bound to an org is only good for that org; whoever leaves it
 * should not keep a key that works again should they ever come back. */
static const svc_stmt_t st_mem_revoke_tokens = {
    "svc_members_revoke_tokens",
    "UPDATE api_tokens SET revoked_at = now()"
    " WHERE org_id = $1 AND user_id = $2 AND revoked_at IS NULL",
    2, 0
};

static const char *const member_roles[] = { "admin", "member", "viewer", NULL };
static const char *const user_prefix[] = { "usr_", NULL };

const svc_field_t svc_body_member_update[] = {
    { .name = "role", .type = SVC_FT_ENUM, .required = 1, .values = member_roles,
      .description = "The member's new role. The owner's role cannot be changed, and nobody "
        "becomes owner but by ownership transfer." },
    SVC_FIELD_END
};

const svc_field_t svc_body_transfer[] = {
    { .name = "user_id", .type = SVC_FT_ID, .required = 1, .values = user_prefix,
      .description = "The member who becomes the owner; the current owner becomes an admin." },
    SVC_FIELD_END
};

apr_status_t svc_member_add(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                            const char *org_id, const char *user_id, svc_role_e role)
{
    svc_role_e current;
    apr_status_t rv = svc_org_lock(db, p, org_id, user_id, &current);

    if (rv == APR_SUCCESS && current != SVC_ROLE_NONE) {
        rv = SVC_ECONFLICT;
    }
    if (rv == APR_SUCCESS) {
        rv = svc_member_insert(db, p, actor, org_id, user_id, role, "operator");
    }
    return rv;
}

/*
 * Takes the org lock and checks the caller's role again now that no other
 * membership change can run: the one seen at authorization may be stale.
 */
static apr_status_t lock_as(svc_ctx_t *ctx, svc_db_t *db, svc_role_e least, int status,
                            svc_role_e *pnow)
{
    apr_status_t rv = svc_org_lock(db, ctx->pool, ctx->org->id, ctx->who->user_id, pnow);

    if (rv == SVC_ENOTFOUND || (rv == APR_SUCCESS && *pnow == SVC_ROLE_NONE)) {
        return svc_fail(ctx, 404, "not_found", "No organization %s.", ctx->org->slug);
    }
    if (rv == APR_SUCCESS && *pnow < least) {
        return svc_fail(ctx, status, status == 409 ? "conflict" : "forbidden",
                        "Your role in %s is now %s; this needs %s or above.", ctx->org->slug,
                        svc_role_name(*pnow), svc_role_name(least));
    }
    return rv;
}

static const svc_roster_t members = {
    &st_mem_lock, &st_mem_set_role, &st_mem_get, member_item, "member.role_changed"
};

/* The member the route names, locked; 404 when there is none. */
static apr_status_t lock_member(svc_ctx_t *ctx, svc_db_t *db, const char *user_id,
                                svc_dbres_t **pres)
{
    apr_status_t rv = svc_roster_lock(ctx, db, &members, ctx->org->id, user_id, pres);

    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "No member %s in %s.", user_id, ctx->org->slug);
    }
    return rv;
}

/* Pending invites shown with the first page of members (GET .../invites pages them all). */
#define SVC_MEMBERS_INVITES_SHOWN 100

apr_status_t svc_h_members_list(svc_ctx_t *ctx)
{
    const char *invites, *total;
    svc_db_t *db;
    apr_status_t rv;

    rv = svc_reply_rows(ctx, &st_mem_list, member_item, ctx->org->id, SVC_PAGE_BEFORE,
                        SVC_PAGE_FETCH);
    /*
     * The first page also lists the pending invites, for those who may see
     * them: invites carry outsiders' addresses, so only admins and owners,
     * through a session or an admin-scope token (as GET .../invites).
     */
    if (rv != APR_SUCCESS || apr_table_get(ctx->query, "cursor")
        || ctx->org->role < SVC_ROLE_ADMIN || ctx->who->scope < SVC_SCOPE_ADMIN) {
        return rv;
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_invites_pending(db, ctx->pool, ctx->org->id, SVC_MEMBERS_INVITES_SHOWN,
                                     &invites, &total)) != APR_SUCCESS) {
        return rv;
    }
    svc_reply_add(ctx, "invites", invites);
    svc_reply_add(ctx, "invites_total", total);
    return APR_SUCCESS;
}

static apr_status_t change_role(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *user_id = apr_table_get(ctx->params, "userId");
    const char *role_s = svc_json_str(ctx->body, "role");
    svc_role_e role = svc_role_parse(role_s), me, before;
    svc_dbres_t *res;
    json_t *data;
    apr_status_t rv;

    if ((rv = lock_as(ctx, db, SVC_ROLE_ADMIN, 403, &me)) != APR_SUCCESS
        || (rv = lock_member(ctx, db, user_id, &res)) != APR_SUCCESS) {
        return rv;
    }
    before = svc_role_parse(svc_dbres_str(res, 0, 0));
    if (before == SVC_ROLE_OWNER) {
        return svc_fail(ctx, 409, "owner_protected",
                        "The owner's role cannot be changed; the owner can transfer ownership "
                        "(POST /api/orgs/%s/transfer-ownership) and is then an admin.",
                        ctx->org->slug);
    }
    if (before != role) {
        data = svc_json_pool(ctx->pool, json_pack("{s:s,s:s}", "before", svc_role_name(before),
                                                  "after", role_s));
        if (role == SVC_ROLE_VIEWER) {
            rv = svc_db_execv(db, &st_mem_cap_teams, ctx->pool, &res, ctx->org->id, user_id);
            if (rv != APR_SUCCESS) {
                return rv;
            }
            json_object_set_new(data, "projects_capped_to_viewer",
                                json_loads(svc_dbres_str(res, 0, 0), 0, NULL));
        }
        rv = svc_roster_set_role(ctx, db, &members, ctx->org->id, user_id, role_s, "user",
                                 user_id, data);
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    return svc_roster_reply(ctx, db, &members, ctx->org->id, user_id, 200);
}

apr_status_t svc_h_members_update(svc_ctx_t *ctx)
{
    return svc_write(ctx, change_role, NULL);
}

static apr_status_t remove_member(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *user_id = apr_table_get(ctx->params, "userId");
    int self = strcmp(user_id, ctx->who->user_id) == 0;
    svc_role_e me, role;
    svc_dbres_t *res, *teams, *toks;
    apr_status_t rv;

    if ((rv = lock_as(ctx, db, self ? SVC_ROLE_VIEWER : SVC_ROLE_ADMIN, 403, &me))
            != APR_SUCCESS
        || (rv = lock_member(ctx, db, user_id, &res)) != APR_SUCCESS) {
        return rv;
    }
    role = svc_role_parse(svc_dbres_str(res, 0, 0));
    if (role == SVC_ROLE_OWNER) {
        return svc_fail(ctx, 409, "owner_protected",
                        self ? "The owner cannot leave; transfer ownership first "
                               "(POST /api/orgs/%s/transfer-ownership)."
                             : "The owner cannot be removed; only the owner can hand the org "
                               "over (POST /api/orgs/%s/transfer-ownership).",
                        ctx->org->slug);
    }
    if ((rv = svc_db_execv(db, &st_mem_leave_teams, ctx->pool, &teams, ctx->org->id, user_id))
            != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_mem_delete, ctx->pool, NULL, ctx->org->id, user_id))
            != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_mem_revoke_tokens, ctx->pool, &toks, ctx->org->id,
                              user_id)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_audit_ctx(ctx, db,
                       self ? "member.left" : "member.removed", "user", user_id,
                       svc_json_pool(ctx->pool,
                                     json_pack("{s:s,s:o,s:I}", "role", svc_role_name(role),
                                               "teams",
                                               json_loads(svc_dbres_str(teams, 0, 0), 0,
                                                          NULL),
                                               "tokens_revoked",
                                               (json_int_t)svc_dbres_affected(toks))));
    return rv == APR_SUCCESS ? svc_reply_empty(ctx) : rv;
}

apr_status_t svc_h_members_remove(svc_ctx_t *ctx)
{
    /* Anyone may leave; only admins and the owner remove others. */
    if (strcmp(apr_table_get(ctx->params, "userId"), ctx->who->user_id) != 0
        && ctx->org->role < SVC_ROLE_ADMIN) {
        return svc_fail(ctx, 403, "forbidden",
                        "Your role in %s is %s; removing another member needs admin or "
                        "above.", ctx->org->slug, svc_role_name(ctx->org->role));
    }
    return svc_write(ctx, remove_member, NULL);
}

static apr_status_t transfer(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *to = svc_json_str(ctx->body, "user_id");
    const char *json;
    svc_role_e me, was;
    svc_dbres_t *res;
    apr_status_t rv;

    /*
     * Two transfers at once: the second waits here for the first to commit,
     * then finds its caller an admin, no longer the owner: 409.
     */
    if ((rv = lock_as(ctx, db, SVC_ROLE_OWNER, 409, &me)) != APR_SUCCESS) {
        return rv;
    }
    if (strcmp(to, ctx->who->user_id) == 0) {
        return svc_fail(ctx, 409, "conflict", "You are the owner of %s already.",
                        ctx->org->slug);
    }
    rv = svc_roster_lock(ctx, db, &members, ctx->org->id, to, &res);
    if (rv == SVC_ENOTFOUND) {
        svc_fail_field(ctx, "user_id", "not_a_member",
                       "The new owner must be a member of %s already.", ctx->org->slug);
        return SVC_EPROBLEM;
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    was = svc_role_parse(svc_dbres_str(res, 0, 0));
    /*
     * Demote first: the unique index allows at most one owner at any moment,
     * and the deferred trigger checks that there is exactly one at commit.
     */
    if ((rv = svc_db_execv(db, &st_mem_set_role, ctx->pool, NULL, ctx->org->id,
                           ctx->who->user_id, "admin")) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_mem_set_role, ctx->pool, NULL, ctx->org->id, to,
                              "owner")) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_audit_ctx(ctx, db, "ownership.transferred", "user",
                       to,
                       svc_json_pool(ctx->pool,
                                     json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s}}",
                                               "from", ctx->who->user_id, "to", to,
                                               "before", "from_role", "owner", "to_role",
                                               svc_role_name(was), "after", "from_role",
                                               "admin", "to_role", "owner")));
    if (rv != APR_SUCCESS
        || (rv = svc_org_json(db, ctx->pool, ctx->org->id, ctx->who->user_id, &json))
           != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_text(ctx, 200, json);
}

apr_status_t svc_h_orgs_transfer(svc_ctx_t *ctx)
{
    return svc_write(ctx, transfer, NULL);
}
