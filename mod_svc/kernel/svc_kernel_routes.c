/*
 * svc_kernel_routes.c: the kernel's own routes: the OpenAPI document and
 * the health check.
 */
#include "svc_kernel.h"

static const svc_col_t openapi_license_keys[] = {
    { .key = "name", .type = SVC_COL_TEXT },
    { .key = "identifier", .type = SVC_COL_TEXT, .example = "LicenseRef-mod_svc-unlicensed" },
    SVC_COL_END
};

static const svc_col_t openapi_info_keys[] = {
    { .key = "title", .type = SVC_COL_TEXT, .example = "mod_svc API" },
    { .key = "version", .type = SVC_COL_TEXT, .example = "0.1.0" },
    { .key = "license", .type = SVC_COL_OBJECT, .sub = openapi_license_keys },
    { .key = "description", .type = SVC_COL_TEXT },
    SVC_COL_END
};

static const svc_col_t openapi_server_keys[] = {
    { .key = "url", .type = SVC_COL_TEXT, .example = "https://svc.example.com" },
    SVC_COL_END
};

static const svc_col_t openapi_tag_keys[] = {
    { .key = "name", .type = SVC_COL_TEXT, .example = "Runs" },
    { .key = "description", .type = SVC_COL_TEXT },
    { .key = "x-svc-area", .type = SVC_COL_TEXT, .example = "runs",
      .description = "The area of the service the tag belongs to." },
    SVC_COL_END
};

static const svc_col_t openapi_group_keys[] = {
    { .key = "name", .type = SVC_COL_TEXT, .example = "runs" },
    { .key = "description", .type = SVC_COL_TEXT },
    { .key = "tags", .type = SVC_COL_ARRAY, .item = SVC_COL_TEXT },
    SVC_COL_END
};

static const svc_col_t openapi_keys[] = {
    { .key = "openapi", .type = SVC_COL_TEXT, .example = "3.1.0" },
    { .key = "info", .type = SVC_COL_OBJECT, .sub = openapi_info_keys },
    { .key = "servers", .type = SVC_COL_ARRAY, .sub = openapi_server_keys },
    { .key = "tags", .type = SVC_COL_ARRAY, .sub = openapi_tag_keys },
    { .key = "x-tagGroups", .type = SVC_COL_ARRAY, .sub = openapi_group_keys,
      .description = "The tags grouped by area, in the order of the areas (Redoc reads it)." },
    { .key = "paths", .type = SVC_COL_OBJECT, .description = "The operations, by path." },
    { .key = "components", .type = SVC_COL_OBJECT,
      .description = "Schemas, headers, parameters, problem answers, security schemes." },
    SVC_COL_END
};

static const svc_schema_t openapi_schema = { .name = "OpenApiDocument", .keys = openapi_keys,
    .description = "An OpenAPI 3.1 document: this one." };

static const svc_route_t routes[] = {
    { .method = "GET", .path = "/api/openapi.json", .handler = svc_h_openapi, .auth = SVC_AUTH_NONE,
      .flags = SVC_RF_NO_DB, .op_id = "getOpenApi",
      .summary = "This OpenAPI document", .response = &openapi_schema,
      .description = "Generated from the route table at start: what the server answers is "
        "what it says (docs/api/conventions.md, \"The document\")." },
    { .method = "GET", .path = "/internal/health", .handler = svc_h_health,
      .auth = SVC_AUTH_INTERNAL, .flags = SVC_RF_NO_DB, .op_id = "getHealth",
      .response = &svc_schema_health,
      .summary = "Readiness: database reachable at the needed schema version",
      .description = "For load balancers and monitoring: 200 when this server can serve, "
        "503 (`database_unavailable`, `schema_behind`) when it cannot." },
    { .method = "GET", .path = "/internal/ready", .handler = svc_h_ready,
      .auth = SVC_AUTH_INTERNAL, .flags = SVC_RF_NO_DB, .op_id = "getReady",
      .response = &svc_schema_ready,
      .summary = "Readiness for a load balancer: database, schema, run supervisor",
      .description = "200 when this node can serve; 503 `not_ready` otherwise, whose "
        "`errors` name each thing wrong: `database` (`database_unavailable`), `schema` "
        "(`schema_behind`), `supervisor` (`supervisor_down`: the run supervisor of this node "
        "has not started, or has not gone round its loop within its lease). "
        "`/internal/health` stays the cheap liveness check." },
    { .method = "GET", .path = "/internal/metrics", .handler = svc_h_metrics,
      .auth = SVC_AUTH_INTERNAL, .flags = SVC_RF_NO_DB | SVC_RF_TEXT, .op_id = "getMetrics",
      .answers = SVC_ANS_NOT_FOUND,
      .summary = "Metrics of the whole server, for Prometheus",
      .description = "The text exposition format 0.0.4 (`text/plain; version=0.0.4`): "
        "requests by route template and status class, their durations, the database "
        "pool, open event streams, queued and running runs, model calls and tokens, "
        "webhook deliveries, rate-limit refusals, build info (docs/operations.md, "
        "\"Monitoring\"). 404 when `SvcMetrics Off`." },
    SVC_ROUTE_END,
};

static const svc_tag_t tags[] = {
    { "Service", "The service itself: this document, the health and readiness checks, the metrics." },
    { NULL, NULL }
};

const svc_area_t svc_kernel_area = {
    .name = "service", .description = "The service itself: its OpenAPI document and health.",
    .routes = routes, .tags = tags
};
