/*
 * svc_membership.c: the two writes that give someone access, joining an
 * org and joining a project's team, shared by the handlers that add
 * members directly, the ones that accept invites, and project creation;
 * and the steps of a role change that members and teams share.
 */
#include "svc_membership.h"

static const svc_stmt_t st_mem_insert = {
    "svc_members_insert",
    "INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, $3)",
    3, 0
};

static const svc_stmt_t st_team_insert = {
    "svc_teams_insert",
    "INSERT INTO project_members (org_id, project_id, user_id, role) VALUES ($1, $2, $3, $4)",
    4, 0
};

apr_status_t svc_member_insert(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                               const char *org_id, const char *user_id, svc_role_e role,
                               const char *via)
{
    apr_status_t rv;

    if (role < SVC_ROLE_VIEWER || role > SVC_ROLE_ADMIN) {
        return APR_EINVAL;
    }
    rv = svc_db_execv(db, &st_mem_insert, p, NULL, org_id, user_id, svc_role_name(role));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return svc_audit_write(db, p, actor, org_id, "member.added", "user", user_id,
                           svc_json_pool(p, json_pack("{s:s,s:s}", "role", svc_role_name(role),
                                                      "via", via)));
}

apr_status_t svc_team_insert(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                             const char *org_id, const char *project_id, const char *user_id,
                             svc_prole_e prole)
{
    apr_status_t rv;

    rv = svc_db_execv(db, &st_team_insert, p, NULL, org_id, project_id, user_id,
                      svc_prole_name(prole));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return svc_audit_write(db, p, actor, org_id, "team.member_added", "project", project_id,
                           svc_json_pool(p, json_pack("{s:s,s:s}", "user_id", user_id,
                                                      "role", svc_prole_name(prole))));
}

apr_status_t svc_roster_lock(svc_ctx_t *ctx, svc_db_t *db, const svc_roster_t *roster,
                             const char *scope_id, const char *user_id, svc_dbres_t **pres)
{
    apr_status_t rv = svc_db_execv(db, roster->lock, ctx->pool, pres, scope_id, user_id);

    if (rv == APR_SUCCESS && svc_dbres_rows(*pres) != 1) {
        rv = SVC_ENOTFOUND;
    }
    return rv;
}

apr_status_t svc_roster_set_role(svc_ctx_t *ctx, svc_db_t *db, const svc_roster_t *roster,
                                 const char *scope_id, const char *user_id, const char *role_s,
                                 const char *target_type, const char *target_id,
                                 const json_t *data)
{
    apr_status_t rv;

    rv = svc_db_execv(db, roster->set_role, ctx->pool, NULL, scope_id, user_id, role_s);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return svc_audit_ctx(ctx, db, roster->role_changed,
                         target_type, target_id, data);
}

apr_status_t svc_roster_reply(svc_ctx_t *ctx, svc_db_t *db, const svc_roster_t *roster,
                              const char *scope_id, const char *user_id, int status)
{
    svc_dbres_t *res;
    apr_status_t rv = svc_db_execv(db, roster->get, ctx->pool, &res, scope_id, user_id);

    return rv == APR_SUCCESS ? svc_reply_row(ctx, status, res, roster->item) : rv;
}
