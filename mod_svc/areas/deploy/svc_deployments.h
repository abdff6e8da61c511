/*
 * svc_deployments.h: the handlers of /api/orgs/:orgSlug/deployments and
 * their bodies (svc_deployments.c).
 */
#ifndef SVC_DEPLOYMENTS_H
#define SVC_DEPLOYMENTS_H

#include "svc_deploy.h"

/* The routes' request bodies and query parameters. */
extern const svc_field_t svc_body_deployment_create[], svc_body_deployment_approve[],
                         svc_body_deployment_scale[];
extern const svc_qparam_t svc_query_deployments_list[];

/* Route handlers. */
svc_handler_t svc_h_deployments_list, svc_h_deployments_create, svc_h_deployments_get,
              svc_h_deployments_approve, svc_h_deployments_replan, svc_h_deployments_stop,
              svc_h_deployments_start, svc_h_deployments_scale, svc_h_deployments_teardown,
              svc_h_deployments_separate;

#endif /* SVC_DEPLOYMENTS_H */
