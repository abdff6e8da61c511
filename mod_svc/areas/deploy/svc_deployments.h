/*
 * svc_deployments.h: the handlers of /api/orgs/:orgSlug/deployments and
 * their bodies (svc_deployments.c).
 */
#ifndef SVC_DEPLOYMENTS_H
#define SVC_DEPLOYMENTS_H

#include "svc_deploy.h"

extern const svc_field_t svc_body_deployment_create[];
extern const svc_field_t svc_body_deployment_approve[];
extern const svc_field_t svc_body_deployment_scale[];
extern const svc_qparam_t svc_query_deployments_list[];

apr_status_t svc_h_deployments_list(svc_ctx_t *ctx);
apr_status_t svc_h_deployments_create(svc_ctx_t *ctx);
apr_status_t svc_h_deployments_get(svc_ctx_t *ctx);
apr_status_t svc_h_deployments_approve(svc_ctx_t *ctx);
apr_status_t svc_h_deployments_replan(svc_ctx_t *ctx);
apr_status_t svc_h_deployments_stop(svc_ctx_t *ctx);
apr_status_t svc_h_deployments_start(svc_ctx_t *ctx);
apr_status_t svc_h_deployments_scale(svc_ctx_t *ctx);
apr_status_t svc_h_deployments_teardown(svc_ctx_t *ctx);
apr_status_t svc_h_deployments_separate(svc_ctx_t *ctx);

#endif /* SVC_DEPLOYMENTS_H */
