/*
 * svc_membership.c: the two writes that give someone access, joining an
 * org and joining a project's team, shared by the handlers that add
 * members directly, the ones that accept invites, and project creation.
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
