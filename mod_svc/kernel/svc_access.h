/*
 * svc_access.h: the access check: membership and roles.
 *
 * The authorizer (svc_auth.c) resolves the org and project of every tenant
 * route with these; areas call them again under the org lock before they
 * change who may do what (svc_access_recheck), and to hold a membership
 * while they build on it (svc_member_hold).
 */
#ifndef SVC_ACCESS_H
#define SVC_ACCESS_H

#include "svc_ktypes.h"
#include "svc_ctx.h"
#include "svc_db.h"

/*
 * SQL: the caller's effective role in the project row `p`, where R is the
 * caller's org role and U their user id (parameter markers). The rule
 * itself is svc_prole_effective (sql/004), the one place it lives, for
 * what is shown and what is enforced alike.
 */
#define SVC_EFFECTIVE_PROLE(R, U)                                                   \
    "svc_prole_effective(" R "::text, (SELECT pm.role FROM project_members pm"      \
    " WHERE pm.project_id = p.id AND pm.user_id = " U "::text))"

/* The org with this slug and the user's role in it; SVC_ENOTFOUND when
 * there is no such org or the user is not a member (indistinguishably). */
apr_status_t svc_org_membership(svc_db_t *db, apr_pool_t *p, const char *slug,
                                const char *user_id, svc_orgref_t **porg);

/* The org with this slug, whoever asks (role SVC_ROLE_NONE); for svcctl,
 * never for a request. SVC_ENOTFOUND if there is none. */
apr_status_t svc_org_by_slug(svc_db_t *db, apr_pool_t *p, const char *slug,
                             svc_orgref_t **porg);

/*
 * Inside a transaction: holds the user's membership of the org (FOR KEY
 * SHARE, what a foreign key to it takes) until commit, so a concurrent
 * removal waits for what is being built on that membership, or the build
 * sees it gone (SVC_ENOTFOUND). Take it before any audit entry: the audit
 * chain's lock comes last, or a removal holding the row deadlocks with us.
 */
apr_status_t svc_member_hold(svc_db_t *db, apr_pool_t *p, const char *org_id,
                             const char *user_id);

/*
 * Locks the org's row for a change of its members or their roles, so such
 * changes in one org run one at a time, and returns the user's role as it
 * is now that nothing else can change it (SVC_ROLE_NONE: not a member, or
 * user_id NULL). Inside a transaction only. SVC_ENOTFOUND: no such org.
 */
apr_status_t svc_org_lock(svc_db_t *db, apr_pool_t *p, const char *org_id,
                          const char *user_id, svc_role_e *prole);

/*
 * Inside the transaction of a change to access or to a project, before it
 * writes: takes the org's lock (the one every change of members, roles and
 * teams takes) and checks the caller's org role, and on project routes the
 * effective project role, as they are now. The roles seen at authorization
 * may have changed since; after this they cannot until the commit.
 */
apr_status_t svc_access_recheck(svc_ctx_t *ctx, svc_db_t *db, svc_role_e least,
                                svc_prole_e pleast);

/*
 * The project with this slug in `org` and the user's effective role in it
 * (org->role must be the user's org role). SVC_ENOTFOUND when the org has
 * no such project. *pproj is allocated from p.
 */
apr_status_t svc_project_resolve(svc_db_t *db, apr_pool_t *p, const svc_orgref_t *org,
                                 const char *slug, const char *user_id,
                                 svc_projref_t **pproj);

#endif /* SVC_ACCESS_H */
