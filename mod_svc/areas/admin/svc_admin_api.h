/*
 * svc_admin_api.h: the operator's handlers (svc_admin_api.c).
 */
#ifndef SVC_ADMIN_API_H
#define SVC_ADMIN_API_H

#include "svc_admin.h"

/* Route handlers. */
svc_handler_t svc_h_admin_orgs, svc_h_admin_users, svc_h_admin_runs, svc_h_admin_usage,
              svc_h_admin_audit, svc_h_admin_audit_verify, svc_h_admin_user_suspend,
              svc_h_admin_user_unsuspend, svc_h_admin_org_suspend, svc_h_admin_org_unsuspend;

#endif /* SVC_ADMIN_API_H */
