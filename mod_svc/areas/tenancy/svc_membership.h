/*
 * svc_membership.h: joining an org or a project's team, and what changing
 * a role in either looks like (tenancy-private).
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

/*
 * A roster: an org's members or a project's team, the two lists of people
 * with a role that tenancy keeps. Its statements take $1 the org's (or
 * project's) id and $2 the user's, as the handlers of both call them.
 */
typedef struct {
    const svc_stmt_t *lock;         /* the row, its role first, FOR UPDATE */
    const svc_stmt_t *set_role;     /* ... and $3 the new role */
    const svc_stmt_t *get;          /* the row as `item` shows it */
    const svc_col_t *item;
    const char *role_changed;       /* the audit action of a role change */
} svc_roster_t;

/* Locks user_id's row (*pres) until the caller's transaction ends;
 * SVC_ENOTFOUND when they are not on the roster. */
apr_status_t svc_roster_lock(svc_ctx_t *ctx, svc_db_t *db, const svc_roster_t *roster,
                             const char *scope_id, const char *user_id, svc_dbres_t **pres);

/* Gives user_id the role role_s, audit-logged as the roster's role change of
 * (target_type, target_id) with `data` (borrowed), in the caller's
 * transaction. */
apr_status_t svc_roster_set_role(svc_ctx_t *ctx, svc_db_t *db, const svc_roster_t *roster,
                                 const char *scope_id, const char *user_id, const char *role_s,
                                 const char *target_type, const char *target_id,
                                 const json_t *data);

/* Answers `status` with user_id's row as the API shows it, read in the
 * caller's transaction (the end of a write: svc_write.h). */
apr_status_t svc_roster_reply(svc_ctx_t *ctx, svc_db_t *db, const svc_roster_t *roster,
                              const char *scope_id, const char *user_id, int status);

#endif /* SVC_MEMBERSHIP_H */
