/*
 * svc_runs_routes.c: the runs area's routes. Columns: svc_route.h; who may
 * call what: docs/authorization.md; the API: docs/api/runs.md.
 */
#include "svc_runs.h"
#include "svc_run_api.h"

#define RUNS "/api/orgs/:orgSlug/projects/:projectSlug/runs"

static const svc_route_t routes[] = {
    { "GET", RUNS, svc_h_runs_list, SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0,
      NULL, SVC_RF_PAGED, 200, "listRuns", "The project's runs, newest first", "Runs",
      svc_query_runs_list, SVC_PROLE_VIEWER },
    { "POST", RUNS, svc_h_runs_create, SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_VIEWER,
      svc_body_run_create, SVC_KB(512), "runs", 0, 201, "startRun",
      "Start a run: the factory builds what the instructions ask for on a fresh "
      "repository (honours Idempotency-Key)", "Runs", NULL, SVC_PROLE_DEVELOPER },
    { "GET", RUNS "/:runId", svc_h_runs_get, SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_VIEWER,
      NULL, 0, NULL, 0, 200, "getRun", "A run: status, result or error", "Runs", NULL,
      SVC_PROLE_VIEWER },
    { "POST", RUNS "/:runId/cancel", svc_h_runs_cancel, SVC_AUTH_USER, SVC_SCOPE_WRITE,
      SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 200, "cancelRun",
      "Cancel a queued run (at once) or a running one (its sandbox is stopped within "
      "seconds)", "Runs", NULL, SVC_PROLE_DEVELOPER },
    { "GET", RUNS "/:runId/events", svc_h_runs_events, SVC_AUTH_USER, SVC_SCOPE_READ,
      SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_STREAM, 200, "streamRunEvents",
      "The run's events as they happen (text/event-stream), from its first or after "
      "Last-Event-ID; ends after its final status", "Runs", svc_query_runs_events,
      SVC_PROLE_VIEWER },
    { "GET", "/api/orgs/:orgSlug/runs/:runId/logs", svc_h_runs_logs, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_TEXT, 200, "getRunLogs",
      "The run's log so far (text/plain), from ?offset= bytes", "Runs", svc_query_runs_logs,
      SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/runs/:runId/artifact", svc_h_runs_artifact, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_BINARY, 200, "getRunArtifact",
      "A succeeded run's repository as a git bundle (git clone run.bundle)", "Runs", NULL,
      SVC_PROLE_NONE },
    { NULL, NULL, NULL, 0, 0, 0, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, SVC_PROLE_NONE }
};

const svc_area_t svc_runs_area = {
    "runs", "Factory runs: start, follow, cancel; their logs and artifacts.", routes
};
