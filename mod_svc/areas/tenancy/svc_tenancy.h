/*
 * svc_tenancy.h: the tenancy area: organizations, members, invites, projects and teams.
 * May call base/ and the kernel; other areas, the glue and svcctl call it through this header only.
 */
#ifndef SVC_TENANCY_H
#define SVC_TENANCY_H

#include "svc_kernel.h"

/* The area's routes (svc_tenancy_routes.c). */
extern const svc_area_t svc_tenancy_area;

/* Creates an org owned by owner_user_id, audit-logged, in the caller's
 * transaction (svc_write, or svcctl's svc_db_tx); *pid is its id.
 * SVC_ECONFLICT when the slug is taken. */
apr_status_t svc_org_create(svc_db_t *db, apr_pool_t *p, const char *slug, const char *name,
                            const char *owner_user_id, const svc_actor_t *actor,
                            const char **pid);

/* Every org with its owner and counts, as a JSON array text (for svcctl). */
apr_status_t svc_org_list_all(svc_db_t *db, apr_pool_t *p, const char **pjson);

/* Makes a user a member of an org with `role` (never owner), audit-logged,
 * in the caller's transaction (svcctl). SVC_ECONFLICT when already one. */
apr_status_t svc_member_add(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                            const char *org_id, const char *user_id, svc_role_e role);

#endif /* SVC_TENANCY_H */
