/*
 * svc_orgs.h: organizations (tenants): membership lookup, creation, the
 * org lock that serializes membership changes, and the /api/orgs
 * endpoints. Members, roles and ownership transfer are in svc_members.h.
 */
#ifndef SVC_ORGS_H
#define SVC_ORGS_H

#include "svc_types.h"
#include "svc_ctx.h"
#include "svc_db.h"
#include "svc_audit.h"
#include "svc_json.h"

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

/* Creates an org owned by owner_user_id, audit-logged, in one transaction.
 * SVC_ECONFLICT when the slug is taken. */
apr_status_t svc_org_create(svc_db_t *db, apr_pool_t *p, const char *slug, const char *name,
                            const char *owner_user_id, const svc_actor_t *actor,
                            const char **pid);

/*
 * Locks the org's row for a change of its members or their roles, so such
 * changes in one org run one at a time, and returns the user's role as it
 * is now that nothing else can change it (SVC_ROLE_NONE: not a member, or
 * user_id NULL). Inside a transaction only. SVC_ENOTFOUND: no such org.
 */
apr_status_t svc_org_lock(svc_db_t *db, apr_pool_t *p, const char *org_id,
                          const char *user_id, svc_role_e *prole);

/* The org's JSON text with the user's role in it (*pjson from p). */
apr_status_t svc_org_json(svc_db_t *db, apr_pool_t *p, const char *org_id,
                          const char *user_id, const char **pjson);

/* Every org with its owner and counts, as a JSON array text (for svcctl). */
apr_status_t svc_org_list_all(svc_db_t *db, apr_pool_t *p, const char **pjson);

/* Route handlers. */
apr_status_t svc_h_orgs_list(svc_ctx_t *ctx);
apr_status_t svc_h_orgs_create(svc_ctx_t *ctx);
apr_status_t svc_h_orgs_get(svc_ctx_t *ctx);
apr_status_t svc_h_orgs_update(svc_ctx_t *ctx);

extern const svc_field_t svc_body_org_create[];
extern const svc_field_t svc_body_org_update[];

#endif /* SVC_ORGS_H */
