/*
 * svc_admin_api.h: the operator's handlers (svc_admin_api.c).
 */
#ifndef SVC_ADMIN_API_H
#define SVC_ADMIN_API_H

#include "svc_admin.h"

apr_status_t svc_h_admin_orgs(svc_ctx_t *ctx);
apr_status_t svc_h_admin_users(svc_ctx_t *ctx);
apr_status_t svc_h_admin_runs(svc_ctx_t *ctx);
apr_status_t svc_h_admin_usage(svc_ctx_t *ctx);
apr_status_t svc_h_admin_audit(svc_ctx_t *ctx);
apr_status_t svc_h_admin_audit_verify(svc_ctx_t *ctx);
apr_status_t svc_h_admin_user_suspend(svc_ctx_t *ctx);
apr_status_t svc_h_admin_user_unsuspend(svc_ctx_t *ctx);
apr_status_t svc_h_admin_org_suspend(svc_ctx_t *ctx);
apr_status_t svc_h_admin_org_unsuspend(svc_ctx_t *ctx);

#endif /* SVC_ADMIN_API_H */
