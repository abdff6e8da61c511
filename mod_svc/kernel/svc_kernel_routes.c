/*
 * svc_kernel_routes.c: the kernel's own routes: the OpenAPI document and
 * the health check.
 */
#include "svc_kernel.h"

static const svc_route_t routes[] = {
    { "GET", "/api/openapi.json", svc_h_openapi, SVC_AUTH_NONE, SVC_SCOPE_NONE,
      SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_NO_DB, 200, "getOpenApi",
      "This OpenAPI document", "Service", NULL, SVC_PROLE_NONE },
    { "GET", "/internal/health", svc_h_health, SVC_AUTH_INTERNAL, SVC_SCOPE_NONE,
      SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_HIDDEN | SVC_RF_NO_DB, 200, "getHealth",
      "Readiness: database reachable at the needed schema version", "Service",
      NULL, SVC_PROLE_NONE },
    { NULL, NULL, NULL, 0, 0, 0, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, SVC_PROLE_NONE }
};

const svc_area_t svc_kernel_area = {
    "service", "The service itself: its OpenAPI document and health.", routes
};
