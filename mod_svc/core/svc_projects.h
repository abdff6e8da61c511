/*
 * svc_projects.h: projects of an organization, and the effective project
 * role that combines a caller's org role with their team role.
 */
#ifndef SVC_PROJECTS_H
#define SVC_PROJECTS_H

#include "svc_types.h"
#include "svc_ctx.h"
#include "svc_db.h"
#include "svc_json.h"
#include "svc_route.h"

/*
 * The project with this slug in `org` and the user's effective role in it
 * (org->role must be the user's org role). SVC_ENOTFOUND when the org has
 * no such project. *pproj is allocated from p.
 */
/*
 * Inside the transaction of a change to access or to a project, before it
 * writes: takes the org's lock (the one every change of members, roles and
 * teams takes) and checks the caller's org role, and on project routes the
 * effective project role, as they are now. The roles seen at authorization
 * may have changed since; after this they cannot until the commit.
 */
apr_status_t svc_access_recheck(svc_ctx_t *ctx, svc_db_t *db, svc_role_e least,
                                svc_prole_e pleast);

apr_status_t svc_project_resolve(svc_db_t *db, apr_pool_t *p, const svc_orgref_t *org,
                                 const char *slug, const char *user_id,
                                 svc_projref_t **pproj);

/* Route handlers. */
apr_status_t svc_h_projects_list(svc_ctx_t *ctx);
apr_status_t svc_h_projects_create(svc_ctx_t *ctx);
apr_status_t svc_h_projects_get(svc_ctx_t *ctx);
apr_status_t svc_h_projects_update(svc_ctx_t *ctx);

extern const svc_field_t svc_body_project_create[];
extern const svc_field_t svc_body_project_update[];
extern const svc_qparam_t svc_query_projects_list[];

#endif /* SVC_PROJECTS_H */
