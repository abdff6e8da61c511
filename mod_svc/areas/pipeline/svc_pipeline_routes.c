/*
 * svc_pipeline_routes.c: the pipeline area's routes. Columns: svc_route.h;
 * who may call what, and why: docs/authorization.md. A request's routes
 * name no project, so the project role they need (developer to move a
 * request, maintainer to approve its integration or decide an
 * improvement) is checked by the handlers, under the org's lock, against
 * the request's own project.
 */
#include "svc_pipeline.h"
#include "svc_build.h"
#include "svc_estimate.h"
#include "svc_improvements.h"
#include "svc_lifecycle.h"
#include "svc_requests.h"
#include "svc_stages.h"

#define REQ "/api/orgs/:orgSlug/requests/:requestId"
#define TAG "Requests (pipeline)"

/* A POST on a request that takes no body: member in the route, developer
 * (maintainer to approve) in the handler. */
#define REQUEST_ACTION(path, fn, op, summary)                                       \
    { "POST", REQ path, fn, SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, NULL, 0, \
      NULL, 0, 200, op, summary, TAG, NULL, SVC_PROLE_NONE }

static const svc_route_t routes[] = {
    { "GET", "/api/orgs/:orgSlug/requests", svc_h_requests_list, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200, "listRequests",
      "The org's requests, newest first", TAG, svc_query_requests_list, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/requests", svc_h_requests_create, SVC_AUTH_USER,
      SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, svc_body_request_create, 0, NULL, 0, 201,
      "createRequest", "Make a request (build or improvement) in a project, in intake; "
      "Idempotency-Key honoured", TAG, NULL, SVC_PROLE_NONE },
    { "GET", REQ, svc_h_requests_get, SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0,
      NULL, 0, 200, "getRequest", "A request", TAG, NULL, SVC_PROLE_NONE },
    { "PATCH", REQ, svc_h_requests_update, SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_MEMBER,
      svc_body_request_update, 0, NULL, 0, 200, "updateRequest",
      "Change a request's title or body", TAG, NULL, SVC_PROLE_NONE },
    { "GET", REQ "/lifecycle", svc_h_requests_lifecycle, SVC_AUTH_USER, SVC_SCOPE_READ,
      SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 200, "getRequestLifecycle",
      "Everything about a request: stages entered, documents and their approval, build tasks "
      "with their runs, estimate and usage, improvements, attachments", TAG, NULL,
      SVC_PROLE_NONE },
    REQUEST_ACTION("/advance", svc_h_requests_advance, "advanceRequest",
                   "Move the request one stage forward, when the current stage's condition "
                   "holds (409 naming what is missing otherwise)"),
    REQUEST_ACTION("/advance-to-build", svc_h_requests_advance_to_build,
                   "advanceRequestToBuild", "Move the request straight into build when its "
                   "documents are all approved"),
    { "POST", REQ "/build-tasks/run-all", svc_h_requests_run_all, SVC_AUTH_USER,
      SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, NULL, 0, "runs", 0, 200, "runAllBuildTasks",
      "Start a run for every build task that is pending, failed or cancelled", TAG, NULL,
      SVC_PROLE_NONE },
    REQUEST_ACTION("/build/pause", svc_h_requests_pause, "pauseBuild",
                   "Start no more runs (running ones finish)"),
    REQUEST_ACTION("/build/resume", svc_h_requests_resume, "resumeBuild",
                   "Undo a pause"),
    REQUEST_ACTION("/cancel", svc_h_requests_cancel, "cancelRequest",
                   "Cancel the request and its queued and running runs"),
    REQUEST_ACTION("/integration/approve", svc_h_requests_approve, "approveIntegration",
                   "Approve the integration (admins and project maintainers): the request "
                   "is done"),
    { "GET", REQ "/build-cost-estimate", svc_h_requests_cost_estimate, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 200, "getBuildCostEstimate",
      "What building the request should cost, task by task", TAG, NULL, SVC_PROLE_NONE },

    /* Improvements: every member files them; a project's maintainers
     * (org admins included) decide them. */
    { "GET", "/api/orgs/:orgSlug/projects/:projectSlug/improvements", svc_h_improvements_list,
      SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200,
      "listImprovements", "The project's improvements, newest first", "Improvements",
      svc_query_improvements_list, SVC_PROLE_VIEWER },
    { "POST", "/api/orgs/:orgSlug/projects/:projectSlug/improvements", svc_h_improvements_file,
      SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, svc_body_improvement_file, 0, NULL, 0,
      201, "fileImprovement", "File a bug report or a feature ask", "Improvements", NULL,
      SVC_PROLE_VIEWER },
    { "POST", "/api/orgs/:orgSlug/improvements/:id/approve", svc_h_improvements_approve,
      SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, NULL, 0, NULL, 0, 200,
      "approveImprovement", "Approve an improvement for build: it becomes a request",
      "Improvements", NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/improvements/:id/reject", svc_h_improvements_reject,
      SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, svc_body_improvement_reject, SVC_KB(64),
      NULL, 0, 200, "rejectImprovement", "Reject an improvement, saying why", "Improvements",
      NULL, SVC_PROLE_NONE },
    { NULL, NULL, NULL, 0, 0, 0, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, SVC_PROLE_NONE }
};

const svc_area_t svc_pipeline_area = {
    "pipeline", "Requests stage by stage (intake, planning, review, build, integration, done), "
    "their build tasks and runs, the cost estimate, integration approval; improvements.",
    routes
};
