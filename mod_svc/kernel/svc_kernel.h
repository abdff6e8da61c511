/*
 * svc_kernel.h: kernel/, the request kernel every area uses: context, routing, principals, access.
 * May call base/ only; it never calls an area (areas register what it needs: svc_config_t).
 *
 * The request context and problem documents (svc_ctx.h), the route table,
 * router and areas (svc_route.h), dispatch (svc_dispatch.h), authentication
 * and authorization (svc_auth.h), the membership and role checks
 * (svc_access.h), paging and row-shaped JSON (svc_page.h), audit writing
 * (svc_audit_write.h), how a handler writes (svc_write.h: its change and its
 * answer in one transaction), rate limits (svc_ratelimit.h), the configuration
 * (svc_config.h), OpenAPI (svc_openapi.h), health (svc_health.h), the event
 * log (svc_eventlog.h) and the hub of new events behind the live streams
 * (svc_hub.h).
 */
#ifndef SVC_KERNEL_H
#define SVC_KERNEL_H

#include "svc_base.h"
#include "svc_ktypes.h"
#include "svc_access.h"
#include "svc_audit_write.h"
#include "svc_auth.h"
#include "svc_config.h"
#include "svc_ctx.h"
#include "svc_dispatch.h"
#include "svc_eventlog.h"
#include "svc_health.h"
#include "svc_hub.h"
#include "svc_idempotency.h"
#include "svc_metrics.h"
#include "svc_openapi.h"
#include "svc_page.h"
#include "svc_ratelimit.h"
#include "svc_route.h"
#include "svc_shared.h"
#include "svc_write.h"

/* The kernel's own routes: the OpenAPI document and health (svc_kernel_routes.c). */
extern const svc_area_t svc_kernel_area;

#endif /* SVC_KERNEL_H */
