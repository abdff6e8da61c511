/*
 * svc_deploy_routes.c: the deploy area's routes. Fields: svc_route.h; who
 * may call what, and why: docs/authorization.md. Targets are integration
 * administration (admins, admin scope: a key lets a machine in); members
 * make and run deployments; approving a plan (what runs, with how much
 * memory, on the customer's machine) is an admin's. The agents' routes
 * take a target's key and nothing else.
 */
#include "svc_deploy.h"
#include "svc_agent_api.h"
#include "svc_deployments.h"
#include "svc_targets.h"

#define TARGETS "/api/orgs/:orgSlug/deploy-targets"
#define DEPS "/api/orgs/:orgSlug/deployments"
#define TAG "Deploy targets and deployments"
#define AGENT_TAG "Deploy agents"

#define DEPLOYMENT_ACTION(verb, fn, role_, body_, op, summary_)                      \
    { .method = "POST", .path = DEPS "/:id/" verb, .handler = fn,                   \
      .scope = SVC_SCOPE_WRITE, .role = role_, .body = body_, .op_id = op, .tag = TAG, \
      .summary = summary_ }

static const svc_route_t routes[] = {
    { .method = "GET", .path = TARGETS, .handler = svc_h_targets_list, .scope = SVC_SCOPE_READ,
      .role = SVC_ROLE_VIEWER, .flags = SVC_RF_PAGED, .op_id = "listDeployTargets", .tag = TAG,
      .summary = "The org's deploy targets: status (pending, online, offline), agent, key hint" },
    { .method = "POST", .path = TARGETS, .handler = svc_h_targets_create,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .body = svc_body_target_create,
      .success = 201, .op_id = "createDeployTarget", .tag = TAG,
      .summary = "Register a target; its enrollment key (svc_dek_...) is in this answer only" },
    { .method = "DELETE", .path = TARGETS "/:id", .handler = svc_h_targets_delete,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .success = 204,
      .op_id = "removeDeployTarget", .tag = TAG,
      .summary = "Remove a target (409 target_in_use while a deployment on it lives)" },
    { .method = "POST", .path = TARGETS "/:id/rotate-key", .handler = svc_h_targets_rotate,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .op_id = "rotateDeployTargetKey",
      .tag = TAG,
      .summary = "A new enrollment key, shown once; the old one is refused from now on" },

    { .method = "GET", .path = DEPS, .handler = svc_h_deployments_list,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .flags = SVC_RF_PAGED,
      .query = svc_query_deployments_list, .op_id = "listDeployments", .tag = TAG,
      .summary = "The org's deployments, newest first" },
    { .method = "POST", .path = DEPS, .handler = svc_h_deployments_create,
      .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER, .body = svc_body_deployment_create,
      .success = 201, .op_id = "createDeployment", .tag = TAG,
      .summary = "Deploy a succeeded run's artifact on a target: planning, then planned" },
    { .method = "GET", .path = DEPS "/:id", .handler = svc_h_deployments_get,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .op_id = "getDeployment", .tag = TAG,
      .summary = "A deployment: its plan, status, target's status and workload" },
    DEPLOYMENT_ACTION("approve", svc_h_deployments_approve, SVC_ROLE_ADMIN,
                      svc_body_deployment_approve, "approveDeployment",
                      "Approve the current plan (by its version) and deploy it"),
    DEPLOYMENT_ACTION("replan", svc_h_deployments_replan, SVC_ROLE_MEMBER, NULL,
                      "replanDeployment", "Run the planner again (a running app keeps "
                      "running until the new plan is approved)"),
    DEPLOYMENT_ACTION("stop", svc_h_deployments_stop, SVC_ROLE_MEMBER, NULL,
                      "stopDeployment", "Stop: no replica runs; the checkout stays"),
    DEPLOYMENT_ACTION("start", svc_h_deployments_start, SVC_ROLE_MEMBER, NULL,
                      "startDeployment", "Start a stopped app with its plan's replicas"),
    DEPLOYMENT_ACTION("scale", svc_h_deployments_scale, SVC_ROLE_MEMBER,
                      svc_body_deployment_scale, "scaleDeployment",
                      "Run 0 to 10 replicas"),
    DEPLOYMENT_ACTION("teardown", svc_h_deployments_teardown, SVC_ROLE_MEMBER, NULL,
                      "teardownDeployment",
                      "Delete the workload: processes and files gone from the target"),
    DEPLOYMENT_ACTION("separate", svc_h_deployments_separate, SVC_ROLE_MEMBER, NULL,
                      "separateDeployment", "Hand the workload over: it keeps running "
                      "from a start script of its own, no longer managed"),

    { .method = "GET", .path = "/api/agent/deployments", .handler = svc_h_agent_view,
      .auth = SVC_AUTH_AGENT, .op_id = "agentDeployments", .tag = AGENT_TAG,
      .summary = "What the target should run now, and the event id its work stream "
        "continues from" },
    { .method = "GET", .path = "/api/agent/work", .handler = svc_h_agent_work_stream,
      .auth = SVC_AUTH_AGENT, .flags = SVC_RF_STREAM, .query = svc_query_agent_work,
      .op_id = "agentWork", .tag = AGENT_TAG,
      .summary = "The target's work as an event stream (agent.work); resumes after "
        "Last-Event-ID" },
    { .method = "POST", .path = "/api/agent/heartbeat", .handler = svc_h_agent_heartbeat,
      .auth = SVC_AUTH_AGENT, .body = svc_body_agent_heartbeat, .body_limit = SVC_KB(256),
      .op_id = "agentHeartbeat", .tag = AGENT_TAG,
      .summary = "The agent's version and host, and what runs: keeps the target online" },
    { .method = "POST", .path = "/api/agent/work/:workId", .handler = svc_h_agent_report,
      .auth = SVC_AUTH_AGENT, .body = svc_body_agent_report, .body_limit = SVC_KB(64),
      .op_id = "agentReport", .tag = AGENT_TAG,
      .summary = "A piece of work done or failed (once: a second report changes nothing)" },
    { .method = "GET", .path = "/api/agent/deployments/:id/bundle",
      .handler = svc_h_agent_bundle, .auth = SVC_AUTH_AGENT, .flags = SVC_RF_BINARY,
      .op_id = "agentBundle", .tag = AGENT_TAG,
      .summary = "The artifact (git bundle) of a deployment of this target" },
    SVC_ROUTE_END,
};

const svc_area_t svc_deploy_area = {
    "deploy", "Deploy targets, deployments, their plans, and the deploy agents' routes.",
    routes
};
