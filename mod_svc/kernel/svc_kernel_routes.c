/*
 * svc_kernel_routes.c: the kernel's own routes: the OpenAPI document and
 * the health check.
 */
#include "svc_kernel.h"

static const svc_route_t routes[] = {
    { .method = "GET", .path = "/api/openapi.json", .handler = svc_h_openapi, .auth = SVC_AUTH_NONE,
      .flags = SVC_RF_NO_DB, .op_id = "getOpenApi", .tag = "Service",
      .summary = "This OpenAPI document" },
    { .method = "GET", .path = "/internal/health", .handler = svc_h_health,
      .auth = SVC_AUTH_INTERNAL, .flags = SVC_RF_HIDDEN | SVC_RF_NO_DB, .op_id = "getHealth",
      .tag = "Service",
      .summary = "Readiness: database reachable at the needed schema version" },
    SVC_ROUTE_END,
};

const svc_area_t svc_kernel_area = {
    "service", "The service itself: its OpenAPI document and health.", routes
};
