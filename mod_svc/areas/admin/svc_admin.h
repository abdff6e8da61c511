/*
 * svc_admin.h: the admin area: the platform operator's API (/api/admin/):
 * every organization, user and run across tenants, usage per org, the
 * suspension of users and organizations, and the platform audit log.
 * May call base/ and the kernel; others call it through this header only.
 *
 * Only founders reach it (svc_auth_check: everyone else gets 404), by a
 * session or a token bound to no org (docs/api/admin.md). svcctl suspends
 * and lifts suspensions through the same function the API uses.
 */
#ifndef SVC_ADMIN_H
#define SVC_ADMIN_H

#include "svc_kernel.h"

/* The area's routes (svc_admin_routes.c). */
extern const svc_area_t svc_admin_area;

/* What a suspension is of. */
typedef enum {
    SVC_SUSPEND_USER = 1,
    SVC_SUSPEND_ORG
} svc_suspend_kind_e;

/*
 * Suspends (suspend 1) or lifts the suspension of (0) a user, by id or
 * e-mail address, or an org, by slug, in the caller's transaction: the
 * row, the platform audit log's entry, and an access.suspension event on
 * the affected orgs' streams (which makes open streams check their access
 * at once). reason: 1 to 500 characters. *pid is the user's or org's id.
 * SVC_ENOTFOUND when there is none; SVC_ECONFLICT when it already is (or
 * is not) suspended.
 */
apr_status_t svc_admin_suspend(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                               svc_suspend_kind_e kind, const char *key, int suspend,
                               const char *reason, const char **pid);

#endif /* SVC_ADMIN_H */
