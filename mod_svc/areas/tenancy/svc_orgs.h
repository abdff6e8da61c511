/*
 * svc_orgs.h: organizations (tenants): creation, the org document and the
 * /api/orgs endpoints. Members, roles and ownership transfer are in
 * svc_members.h; the membership lookup and the org lock are the kernel's
 * (svc_access.h).
 */
#ifndef SVC_ORGS_H
#define SVC_ORGS_H

#include "svc_tenancy.h"

/* The org's JSON text with the user's role in it (*pjson from p). */
apr_status_t svc_org_json(svc_db_t *db, apr_pool_t *p, const char *org_id,
                          const char *user_id, const char **pjson);

/* Route handlers. */
svc_handler_t svc_h_orgs_list, svc_h_orgs_create, svc_h_orgs_get, svc_h_orgs_update;

/* The routes' request bodies. */
extern const svc_field_t svc_body_org_create[], svc_body_org_update[];

/* An organization (its detail), and one of the caller's as their list shows it. */
extern const svc_schema_t svc_schema_org, svc_schema_org_summary;

#endif /* SVC_ORGS_H */
