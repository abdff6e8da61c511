/*
 * svc_runs_routes.c: the runs area's routes. Fields: svc_route.h; who may
 * call what: docs/authorization.md; the API: docs/api/runs.md.
 */
#include "svc_runs.h"
#include "svc_run_api.h"
#include "svc_run_store.h"

#define RUNS "/api/orgs/:orgSlug/projects/:projectSlug/runs"

static const svc_header_t log_headers[] = {
    { .name = "X-Next-Offset", .type = SVC_COL_INT, .required = 1,
      .description = "Where the log ends now: the offset to read from next time.",
      .example = "2048" },
    { .name = "X-Run-Status", .type = SVC_COL_TEXT, .required = 1,
      .description = "The run's status (queued, running, succeeded, failed, cancelled).",
      .example = "running" },
    { .name = NULL }
};

static const svc_header_t artifact_headers[] = {
    SVC_HEADER_DOWNLOAD,
    { .name = NULL }
};

static const svc_route_t routes[] = {
    { .method = "GET", .path = RUNS, .handler = svc_h_runs_list, .scope = SVC_SCOPE_READ,
      .role = SVC_ROLE_VIEWER, .prole = SVC_PROLE_VIEWER, .flags = SVC_RF_PAGED,
      .op_id = "listRuns", .response = &svc_schema_run, .tag = "Runs", .query = svc_query_runs_list,
      .summary = "The project's runs, newest first" },
    { .method = "POST", .path = RUNS, .handler = svc_h_runs_create, .scope = SVC_SCOPE_WRITE,
      .role = SVC_ROLE_VIEWER, .prole = SVC_PROLE_DEVELOPER, .body = svc_body_run_create,
      .body_example = "{\"instructions\": \"Add a README that says how to run the tests.\"}",
      .body_limit = SVC_KB(512), .rate_class = "runs", .flags = SVC_RF_IDEMPOTENT, .success = 201,
      .op_id = "startRun", .response = &svc_schema_run, .answers = SVC_ANS_PAYMENT,
      .tag = "Runs",
      .summary = "Start a run: the factory builds what the instructions ask for on a fresh "
        "repository (honours Idempotency-Key)" },
    { .method = "GET", .path = RUNS "/:runId", .handler = svc_h_runs_get, .scope = SVC_SCOPE_READ,
      .role = SVC_ROLE_VIEWER, .prole = SVC_PROLE_VIEWER, .op_id = "getRun",
      .response = &svc_schema_run_detail, .tag = "Runs",
      .summary = "A run: status, result or error" },
    { .method = "POST", .path = RUNS "/:runId/cancel", .handler = svc_h_runs_cancel,
      .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_VIEWER, .prole = SVC_PROLE_DEVELOPER,
      .op_id = "cancelRun", .response = &svc_schema_run, .tag = "Runs",
      .summary = "Cancel a queued run (at once) or a running one (its sandbox is stopped within "
        "seconds)" },
    { .method = "GET", .path = RUNS "/:runId/events", .handler = svc_h_runs_events,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .prole = SVC_PROLE_VIEWER,
      .flags = SVC_RF_STREAM, .op_id = "streamRunEvents", .events = "run.",
      .answers = SVC_ANS_LIMITED, .tag = "Runs",
      .query = svc_query_runs_events,
      .summary = "The run's events as they happen (text/event-stream), from its first or after "
        "Last-Event-ID; ends after its final status" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/runs/:runId/logs", .handler = svc_h_runs_logs,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .flags = SVC_RF_TEXT, .op_id = "getRunLogs",
      .headers = log_headers,
      .tag = "Runs", .query = svc_query_runs_logs,
      .summary = "The run's log so far (text/plain), from ?offset= bytes" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/runs/:runId/artifact",
      .handler = svc_h_runs_artifact, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .flags = SVC_RF_BINARY, .op_id = "getRunArtifact", .headers = artifact_headers, .tag = "Runs",
      .summary = "A succeeded run's repository as a git bundle (git clone run.bundle)" },
    SVC_ROUTE_END,
};

static const svc_tag_t tags[] = {
    { "Runs", "Factory runs: the factory builds what the instructions ask for in a sandbox, "
      "with the organization's model, and commits it; follow a run by its events, read its "
      "log, download its repository (docs/api/runs.md)." },
    { NULL, NULL }
};

const svc_area_t svc_runs_area = { .name = "runs", .routes = routes, .tags = tags,
    .events = svc_run_events,
    .description = "Factory runs: start, follow, cancel; their logs and artifacts." };
