/*
 * svc_pipeline_routes.c: the pipeline area's routes. Fields: svc_route.h;
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
#include "svc_pl_store.h"
#include "svc_requests.h"
#include "svc_stages.h"

#define REQ "/api/orgs/:orgSlug/requests/:requestId"
#define TAG "Requests (pipeline)"

/* A POST on a request that takes no body and answers the request: member
 * in the route, developer (maintainer to approve) in the handler. */
#define REQUEST_ACTION(tail, fn, op, text, ...)                                     \
    { .method = "POST", .path = REQ tail, .handler = fn, .scope = SVC_SCOPE_WRITE,  \
      .role = SVC_ROLE_MEMBER, .op_id = op, .summary = text, .tag = TAG,            \
      .response = &svc_schema_request, __VA_ARGS__ }

static const svc_route_t routes[] = {
    { .method = "GET", .path = "/api/orgs/:orgSlug/requests", .handler = svc_h_requests_list,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .flags = SVC_RF_PAGED,
      .op_id = "listRequests", .response = &svc_schema_request_summary, .tag = TAG,
      .query = svc_query_requests_list,
      .summary = "The org's requests, newest first" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/requests", .handler = svc_h_requests_create,
      .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER, .body = svc_body_request_create,
      .body_example =
          "{\"project\": \"shop\", \"kind\": \"build\", \"title\": \"A shop for the bakery\", "
          "\"body\": \"Sell bread online, with delivery on Saturdays.\"}",
      .flags = SVC_RF_IDEMPOTENT, .success = 201, .op_id = "createRequest",
      .response = &svc_schema_request, .tag = TAG,
      .summary = "Make a request (build or improvement) in a project, in intake" },
    { .method = "GET", .path = REQ, .handler = svc_h_requests_get, .scope = SVC_SCOPE_READ,
      .role = SVC_ROLE_VIEWER, .op_id = "getRequest", .response = &svc_schema_request, .tag = TAG,
      .summary = "A request" },
    { .method = "PATCH", .path = REQ, .handler = svc_h_requests_update, .scope = SVC_SCOPE_WRITE,
      .role = SVC_ROLE_MEMBER, .body = svc_body_request_update, .op_id = "updateRequest",
      .body_example = "{\"title\": \"A shop for the bakery, with delivery\"}",
      .response = &svc_schema_request,
      .tag = TAG,
      .summary = "Change a request's title or body" },
    { .method = "GET", .path = REQ "/lifecycle", .handler = svc_h_requests_lifecycle,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .op_id = "getRequestLifecycle",
      .response = &svc_schema_lifecycle, .tag = TAG,
      .summary = "Everything about a request: stages entered, documents and their approval, "
        "build tasks with their runs, estimate and usage, improvements, attachments" },
    REQUEST_ACTION("/advance", svc_h_requests_advance, "advanceRequest",
                   "Move the request one stage forward, when the current stage's condition "
                   "holds (409 naming what is missing otherwise)",
                   .answers = SVC_ANS_PROVIDER,
                   .description = "Into planning, the organization's model drafts the "
                     "product's table of contents: 502 and 504 when the provider fails "
                     "(nothing moves), 409 `no_provider` without one."),
    REQUEST_ACTION("/advance-to-build", svc_h_requests_advance_to_build,
                   "advanceRequestToBuild", "Move the request straight into build when its "
                   "documents are all approved"),
    { .method = "POST", .path = REQ "/build-tasks/run-all", .handler = svc_h_requests_run_all,
      .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER, .rate_class = "runs",
      .op_id = "runAllBuildTasks", .response = &svc_schema_run_all, .tag = TAG,
      .answers = SVC_ANS_PAYMENT,
      .summary = "Start a run for every build task that is pending, failed or cancelled" },
    REQUEST_ACTION("/build/pause", svc_h_requests_pause, "pauseBuild",
                   "Start no more runs (running ones finish)"),
    REQUEST_ACTION("/build/resume", svc_h_requests_resume, "resumeBuild",
                   "Undo a pause"),
    REQUEST_ACTION("/cancel", svc_h_requests_cancel, "cancelRequest",
                   "Cancel the request and its queued and running runs"),
    REQUEST_ACTION("/integration/approve", svc_h_requests_approve, "approveIntegration",
                   "Approve the integration (admins and project maintainers): the request "
                   "is done"),
    { .method = "GET", .path = REQ "/build-cost-estimate", .handler = svc_h_requests_cost_estimate,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .op_id = "getBuildCostEstimate",
      .response = &svc_schema_estimate, .tag = TAG,
      .summary = "What building the request should cost, task by task" },

    /* Improvements: every member files them; a project's maintainers
     * (org admins included) decide them. */
    { .method = "GET", .path = "/api/orgs/:orgSlug/projects/:projectSlug/improvements",
      .handler = svc_h_improvements_list, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .prole = SVC_PROLE_VIEWER, .flags = SVC_RF_PAGED, .op_id = "listImprovements",
      .response = &svc_schema_improvement,
      .tag = "Improvements", .query = svc_query_improvements_list,
      .summary = "The project's improvements, newest first" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/projects/:projectSlug/improvements",
      .handler = svc_h_improvements_file, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .prole = SVC_PROLE_VIEWER, .body = svc_body_improvement_file, .success = 201,
      .body_example =
          "{\"kind\": \"bug\", \"title\": \"The cart forgets its items\", "
          "\"body\": \"Reloading the page empties the cart.\"}",
      .op_id = "fileImprovement", .response = &svc_schema_improvement, .tag = "Improvements",
      .summary = "File a bug report or a feature ask" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/improvements/:id/approve",
      .handler = svc_h_improvements_approve, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .op_id = "approveImprovement", .response = &svc_schema_improvement, .tag = "Improvements",
      .summary = "Approve an improvement for build: it becomes a request" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/improvements/:id/reject",
      .handler = svc_h_improvements_reject, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .body = svc_body_improvement_reject, .body_limit = SVC_KB(64), .op_id = "rejectImprovement",
      .body_example = "{\"reason\": \"Already fixed in the last release.\"}",
      .response = &svc_schema_improvement,
      .tag = "Improvements",
      .summary = "Reject an improvement, saying why" },
    SVC_ROUTE_END,
};

static const svc_tag_t tags[] = {
    { TAG, "Requests: something to build or change in a project, moved stage by stage "
      "(intake, planning, review, build, integration, done), with their build tasks and runs, "
      "the cost estimate and the integration approval (docs/api/pipeline.md)." },
    { "Improvements", "Bug reports and feature asks of a project, filed by members or by the "
      "service for an incident; approving one makes it a request." },
    { NULL, NULL }
};

const svc_area_t svc_pipeline_area = { .name = "pipeline", .routes = routes, .tags = tags,
    .events = svc_pipeline_events,
    .description = "Requests stage by stage (intake, planning, review, build, integration, "
                   "done), their build tasks and runs, the cost estimate, integration approval; "
                   "improvements." };
