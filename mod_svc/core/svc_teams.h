/*
 * svc_teams.h: project teams: org members with a project role, added
 * directly or invited by email.
 */
#ifndef SVC_TEAMS_H
#define SVC_TEAMS_H

#include "svc_types.h"
#include "svc_ctx.h"
#include "svc_db.h"
#include "svc_audit.h"
#include "svc_json.h"

/*
 * Puts a member of the org on a project's team, audit-logged
 * (team.member_added). Runs inside the caller's transaction.
 * SVC_ECONFLICT when they are on the team already; SVC_EINTEGRITY when the
 * user is not a member of the org (or is an org viewer and `prole` is
 * above viewer; the database refuses that at commit).
 */
apr_status_t svc_team_insert(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                             const char *org_id, const char *project_id, const char *user_id,
                             svc_prole_e prole);

/* Route handlers. */
apr_status_t svc_h_team_list(svc_ctx_t *ctx);
apr_status_t svc_h_team_add(svc_ctx_t *ctx);
apr_status_t svc_h_team_update(svc_ctx_t *ctx);
apr_status_t svc_h_team_remove(svc_ctx_t *ctx);

extern const svc_field_t svc_body_team_add[];
extern const svc_field_t svc_body_team_update[];

#endif /* SVC_TEAMS_H */
