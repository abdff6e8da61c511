/*
 * svc_targets.h: the handlers of /api/orgs/:orgSlug/deploy-targets and the
 * verifier of their keys (svc_targets.c).
 */
#ifndef SVC_TARGETS_H
#define SVC_TARGETS_H

#include "svc_deploy.h"

/* The routes' request bodies. */
extern const svc_field_t svc_body_target_create[];

/* Route handlers. */
svc_handler_t svc_h_targets_list, svc_h_targets_create, svc_h_targets_delete, svc_h_targets_rotate;

#endif /* SVC_TARGETS_H */
