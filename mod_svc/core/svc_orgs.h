/*
 * svc_orgs.h: organizations (tenants) and memberships.
 */
#ifndef SVC_ORGS_H
#define SVC_ORGS_H

#include "svc_types.h"
#include "svc_ctx.h"
#include "svc_db.h"
#include "svc_audit.h"

/* The org with this slug and the user's role in it; SVC_ENOTFOUND when
 * there is no such org or the user is not a member (indistinguishably). */
apr_status_t svc_org_membership(svc_db_t *db, apr_pool_t *p, const char *slug,
                                const char *user_id, svc_orgref_t **porg);

/* Creates an org owned by owner_user_id, audit-logged, in one transaction.
 * SVC_ECONFLICT when the slug is taken. */
apr_status_t svc_org_create(svc_db_t *db, apr_pool_t *p, const char *slug, const char *name,
                            const char *owner_user_id, const svc_actor_t *actor,
                            const char **pid);

#endif /* SVC_ORGS_H */
