/*
 * svc_membership.h: joining an org or a project's team (tenancy-private).
 */
#ifndef SVC_MEMBERSHIP_H
#define SVC_MEMBERSHIP_H

#include "svc_tenancy.h"

/*
 * Makes a user a member of an org with `role` (never owner), audit-logged
 * (member.added, with `via` in the entry's data). Runs in the caller's
 * transaction, which must hold the org lock. SVC_ECONFLICT when the user
 * is a member already.
 */
apr_status_t svc_member_insert(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                               const char *org_id, const char *user_id, svc_role_e role,
                               const char *via);

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

#endif /* SVC_MEMBERSHIP_H */
