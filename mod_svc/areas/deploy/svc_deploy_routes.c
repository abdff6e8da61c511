/*
 * svc_deploy_routes.c: the deploy area's routes. Fields: svc_route.h; who
 * may call what, and why: docs/authorization.md. Targets are integration
 * administration (admins, admin scope: a key lets a machine in); members
 * make and run deployments; approving a plan (what runs, with how much
 * memory, on the customer's machine) is an admin's. The agents' routes
 * take a target's key and nothing else.
 */
#include "svc_deploy.h"
#include "svc_deploy_rules.h"
#include "svc_agent_api.h"
#include "svc_deployments.h"
#include "svc_targets.h"
#include "svc_telemetry.h"

#define TARGETS "/api/orgs/:orgSlug/deploy-targets"
#define DEPS "/api/orgs/:orgSlug/deployments"
#define TAG "Deploy targets and deployments"
#define AGENT_TAG "Deploy agents"

#define DEPLOYMENT_ACTION(verb, fn, role_, body_, op, example_, summary_)            \
    { .method = "POST", .path = DEPS "/:id/" verb, .handler = fn,                   \
      .scope = SVC_SCOPE_WRITE, .role = role_, .body = body_, .op_id = op, .tag = TAG, \
      .response = &schema_deployment, .body_example = example_, .summary = summary_ }

/*
 * The answers' shapes (docs/api/conventions.md, "The document"). The
 * documents are built in SQL (DEP_JSON, SVC_DEP_DESIRED and the targets'
 * json_build_object in svc_deploy_store.h and svc_targets.c): these say
 * the same keys, and the suites hold every answer to them.
 */
static const char *const target_statuses[] = { "pending", "online", "offline", "removed",
                                               NULL };
static const char *const work_actions[] = { "deploy", "stop", "start", "scale", "teardown",
                                            "separate", NULL };
static const char *const dep_statuses[] = {
    DS_PLANNING, DS_PLANNED, DS_PLAN_FAILED, DS_DEPLOYING, DS_RUNNING, DS_FAILED, DS_STOPPING,
    DS_STOPPED, DS_TEARING_DOWN, DS_TORN_DOWN, DS_SEPARATING, DS_SEPARATED, NULL
};

static const svc_col_t agent_keys[] = {
    { .key = "version", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "0.1.0",
      .description = "null until its first heartbeat." },
    { .key = "hostname", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "app-1" },
    { .key = "last_seen_at", .type = SVC_COL_TIME },
    SVC_COL_END
};
static const svc_col_t target_keys[] = {
    SVC_COL_ID("dtg"),
    { .key = "name", .type = SVC_COL_TEXT, .example = "app-server-1" },
    { .key = "status", .type = SVC_COL_TEXT, .values = target_statuses,
      .description = "online: its agent was heard from in the last 60 seconds." },
    { .key = "agent", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .sub = agent_keys,
      .description = "null: no agent has used the key yet." },
    { .key = "key_hint", .type = SVC_COL_TEXT, .example = "svc_dek_...a1b2",
      .description = "The end of the enrollment key, to tell keys apart." },
    { .key = "key_created_at", .type = SVC_COL_TIME },
    { .key = "deployments", .type = SVC_COL_INT,
      .description = "Deployments on it that are not torn down or separated." },
    SVC_COL_CREATED_BY,
    SVC_COL_CREATED_AT,
    SVC_COL_END
};
static const svc_schema_t schema_target = { .name = "DeployTarget", .keys = target_keys,
    .description = "A machine whose agent runs deployments." };
static const svc_col_t target_key_keys[] = {
    { .key = "key", .type = SVC_COL_TEXT, .format = "secret",
      .example = "svc_dek_4x9Vq2mZ7rT1bN8cK3wY6hJ0pL5sD2fG7aE9uR4tQ1iO0",
      .description = "The enrollment key: shown in this answer only." },
    SVC_COL_END
};
static const svc_schema_t schema_target_with_key = {
    .name = "DeployTargetWithKey", .description = "A target as made or re-keyed: with its "
        "enrollment key, this once.", .base = &schema_target, .keys = target_key_keys
};

static const svc_col_t plan_keys[] = {
    { .key = "command", .type = SVC_COL_TEXT, .example = "gunicorn app:app",
      .description = "The shell command a replica runs (one line)." },
    { .key = "port_env", .type = SVC_COL_TEXT, .values = SVC_VALUES("PORT"),
      .description = "The environment variable that tells a replica its port." },
    { .key = "health_path", .type = SVC_COL_TEXT, .example = "/healthz" },
    { .key = "replicas", .type = SVC_COL_INT },
    { .key = "memory_mb", .type = SVC_COL_INT },
    { .key = "notes", .type = SVC_COL_TEXT },
    { .key = "source", .type = SVC_COL_TEXT, .values = SVC_VALUES("procfile", "model"),
      .description = "procfile: taken from the artifact's Procfile; model: proposed by the "
        "planner's model." },
    { .key = "version", .type = SVC_COL_INT,
      .description = "Approve names it: a plan changed since it was read is not approved." },
    SVC_COL_END
};
static const svc_schema_t schema_plan = { .name = "DeploymentPlan", .keys = plan_keys,
    .description = "How a deployment runs on its target." };
static const svc_col_t replica_keys[] = {
    { .key = "index", .type = SVC_COL_INT, .flags = SVC_COL_OPTIONAL },
    { .key = "port", .type = SVC_COL_INT, .flags = SVC_COL_OPTIONAL },
    { .key = "pid", .type = SVC_COL_INT, .flags = SVC_COL_OPTIONAL },
    { .key = "restarts", .type = SVC_COL_INT, .flags = SVC_COL_OPTIONAL },
    { .key = "healthy", .type = SVC_COL_BOOL, .flags = SVC_COL_OPTIONAL },
    SVC_COL_END
};
static const svc_col_t workload_keys[] = {
    { .key = "replicas", .type = SVC_COL_ARRAY, .flags = SVC_COL_OPTIONAL, .sub = replica_keys },
    { .key = "separated_to", .type = SVC_COL_TEXT, .flags = SVC_COL_OPTIONAL,
      .example = "/srv/apps/dep_4x9Vq2mZ7rT1bN8cK3wY6h",
      .description = "Where a separated workload lives now, on the target." },
    SVC_COL_END
};
static const svc_schema_t schema_workload = { .name = "DeploymentWorkload", .keys = workload_keys,
    .description = "What the agent last said runs (the keys it knows of, as it reported them)." };
static const svc_col_t error_keys[] = {
    { .key = "code", .type = SVC_COL_TEXT, .example = "plan_failed" },
    { .key = "message", .type = SVC_COL_TEXT },
    SVC_COL_END
};
static const svc_col_t dep_telemetry_keys[] = {
    { .key = "last_sample_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL,
      .description = "The newest resource sample its agent reported (GET .../metrics)." },
    { .key = "last_probe_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL,
      .description = "The newest health probe (GET .../uptime)." },
    { .key = "logs_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL,
      .description = "The newest log upload (GET .../logs)." },
    { .key = "open_incident", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "imp",
      .description = "The open incident improvement filed for it, if any." },
    SVC_COL_END
};
static const svc_col_t deployment_keys[] = {
    SVC_COL_ID("dep"),
    { .key = "project", .type = SVC_COL_TEXT, .format = "slug",
      .description = "The project's slug." },
    { .key = "target_id", .type = SVC_COL_TEXT, .id = "dtg" },
    { .key = "target_status", .type = SVC_COL_TEXT, .values = target_statuses },
    { .key = "run_id", .type = SVC_COL_TEXT, .id = "run" },
    { .key = "status", .type = SVC_COL_TEXT, .values = dep_statuses },
    { .key = "plan", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .ref = &schema_plan,
      .description = "The plan under review or last approved; null while planning." },
    { .key = "applied_plan", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL,
      .ref = &schema_plan, .description = "The approved plan the workload runs on." },
    { .key = "replicas", .type = SVC_COL_INT },
    { .key = "error", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .sub = error_keys },
    { .key = "workload", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL,
      .ref = &schema_workload },
    { .key = "workload_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    SVC_COL_CREATED_BY,
    SVC_COL_CREATED_AT,
    SVC_COL_UPDATED_AT,
    { .key = "approved_by", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "usr" },
    { .key = "approved_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    { .key = "telemetry", .type = SVC_COL_OBJECT, .sub = dep_telemetry_keys,
      .description = "What its agent last reported (docs/api/deployments.md, "
        "\"Telemetry\")." },
    SVC_COL_END
};
static const svc_schema_t schema_deployment = { .name = "Deployment", .keys = deployment_keys,
    .description = "A run's artifact deployed on a target." };

/* The agents' side. */
static const svc_col_t desired_keys[] = {
    { .key = "deployment_id", .type = SVC_COL_TEXT, .id = "dep" },
    { .key = "status", .type = SVC_COL_TEXT, .values = dep_statuses },
    { .key = "run_id", .type = SVC_COL_TEXT, .id = "run" },
    { .key = "commit", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .format = "sha" },
    { .key = "bundle", .type = SVC_COL_TEXT,
      .example = "/api/agent/deployments/dep_4x9Vq2mZ7rT1bN8cK3wY6h/bundle",
      .description = "Where the agent fetches the artifact (a path on this service)." },
    { .key = "plan", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .ref = &schema_plan },
    { .key = "replicas", .type = SVC_COL_INT },
    SVC_COL_END
};
static const svc_schema_t schema_desired = { .name = "DeploymentDesired", .keys = desired_keys,
    .description = "What the agent is to make of a deployment." };
static const svc_col_t view_work_keys[] = {
    { .key = "work_id", .type = SVC_COL_TEXT, .id = "wrk" },
    { .key = "action", .type = SVC_COL_TEXT, .values = work_actions },
    { .key = "outcome", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .values = SVC_VALUES("done", "failed", "superseded"),
      .description = "null: not reported yet." },
    SVC_COL_END
};
static const svc_col_t view_dep_keys[] = {
    { .key = "deployment_id", .type = SVC_COL_TEXT, .id = "dep" },
    { .key = "desired", .type = SVC_COL_OBJECT, .ref = &schema_desired },
    { .key = "work", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .sub = view_work_keys,
      .description = "Its latest piece of work." },
    SVC_COL_END
};
static const svc_col_t view_keys[] = {
    { .key = "target_id", .type = SVC_COL_TEXT, .id = "dtg" },
    { .key = "name", .type = SVC_COL_TEXT },
    { .key = "last_event_id", .type = SVC_COL_INT,
      .description = "The work stream continues after this event id." },
    { .key = "deployments", .type = SVC_COL_ARRAY, .sub = view_dep_keys },
    SVC_COL_END
};
static const svc_schema_t schema_agent_view = { .name = "AgentView", .keys = view_keys,
    .description = "What a target should run now." };
static const svc_col_t heartbeat_keys[] = {
    { .key = "target_id", .type = SVC_COL_TEXT, .id = "dtg" },
    { .key = "status", .type = SVC_COL_TEXT, .values = SVC_VALUES("online") },
    SVC_COL_END
};
static const svc_schema_t schema_heartbeat = { .name = "AgentHeartbeat", .keys = heartbeat_keys,
    .description = "A heartbeat taken." };
static const svc_col_t report_keys[] = {
    { .key = "work_id", .type = SVC_COL_TEXT, .id = "wrk" },
    { .key = "outcome", .type = SVC_COL_TEXT, .values = SVC_VALUES("done", "failed",
                                                                   "superseded") },
    { .key = "recorded", .type = SVC_COL_BOOL,
      .description = "false: reported before (or superseded); the first word stands." },
    { .key = "deployment_status", .type = SVC_COL_TEXT, .flags = SVC_COL_OPTIONAL,
      .values = dep_statuses },
    SVC_COL_END
};
static const svc_schema_t schema_report = { .name = "AgentReport", .keys = report_keys,
    .description = "What became of a report of work." };

/* Telemetry (svc_telemetry.c). */
static const svc_col_t log_request_keys[] = {
    { .key = "log_request_id", .type = SVC_COL_TEXT, .id = "lgr" },
    { .key = "deployment_id", .type = SVC_COL_TEXT, .id = "dep" },
    { .key = "lines", .type = SVC_COL_INT,
      .description = "The last lines of each replica's output asked for." },
    { .key = "status", .type = SVC_COL_TEXT, .values = SVC_VALUES("requested"),
      .description = "The agent is told; GET .../logs answers its upload once it arrives "
        "(a deployment.logs event says so)." },
    SVC_COL_END
};
static const svc_schema_t schema_log_request = { .name = "DeploymentLogRequest",
    .keys = log_request_keys,
    .description = "Fresh logs asked of the agent." };
static const svc_header_t logs_headers[] = {
    { .name = "X-Log-Request", .type = SVC_COL_TEXT, .required = 1,
      .description = "The log request (lgr_...) this upload answered.",
      .example = "lgr_4x9Vq2mZ7rT1bN8cK3wY6h" },
    { .name = "X-Log-Uploaded-At", .type = SVC_COL_TEXT, .required = 1,
      .description = "When the agent uploaded it (RFC 3339).", .example = "2026-11-27T05:50:00Z" },
    { .name = "X-Log-Truncated", .type = SVC_COL_TEXT, .required = 1,
      .description = "true: a replica's lines were cut to the newest 256 KiB.",
      .example = "false" },
    { .name = NULL }
};
static const svc_col_t series_keys[] = {
    { .key = "replica", .type = SVC_COL_INT, .flags = SVC_COL_NULL,
      .description = "The replica's index; null: every replica summed." },
    { .key = "points", .type = SVC_COL_ARRAY, .item = SVC_COL_JSON,
      .description = "[time (RFC 3339, the start of its step), CPU seconds used since the "
        "replica started, resident memory (bytes), open file descriptors, restarts], oldest "
        "first; each the highest sampled in its step." },
    SVC_COL_END
};
static const svc_col_t metrics_keys[] = {
    { .key = "from", .type = SVC_COL_TIME },
    { .key = "to", .type = SVC_COL_TIME },
    { .key = "step", .type = SVC_COL_INT,
      .description = "Seconds a point covers: as asked, or coarser, so a series has at most "
        "1000 points." },
    { .key = "series", .type = SVC_COL_ARRAY, .sub = series_keys,
      .description = "One per replica sampled, then the sum (replica null)." },
    SVC_COL_END
};
static const svc_schema_t schema_metrics = { .name = "DeploymentMetrics", .keys = metrics_keys,
    .description = "A deployment's resources over time, as its agent sampled them every 15 "
                   "seconds." };
static const svc_col_t bucket_keys[] = {
    { .key = "start", .type = SVC_COL_TIME },
    { .key = "up", .type = SVC_COL_INT, .description = "Probes that passed." },
    { .key = "down", .type = SVC_COL_INT, .description = "Probes that failed." },
    { .key = "p50_ms", .type = SVC_COL_INT, .flags = SVC_COL_NULL,
      .description = "The median latency of the probes that passed; null: none passed." },
    { .key = "status", .type = SVC_COL_TEXT,
      .values = SVC_VALUES("up", "down", "partial", "unknown"),
      .description = "unknown: no probe was reported (the target was silent, or nothing "
        "ran): neither up nor down." },
    SVC_COL_END
};
static const svc_col_t uptime_keys[] = {
    { .key = "window", .type = SVC_COL_TEXT, .values = SVC_VALUES("24h", "7d", "30d") },
    { .key = "bucket", .type = SVC_COL_TEXT, .values = SVC_VALUES("minute", "hour") },
    { .key = "availability", .type = SVC_COL_NUMBER, .flags = SVC_COL_NULL,
      .description = "Probes passed over probes reported in the window, 0.0 to 1.0; null: "
        "none reported." },
    { .key = "unknown_buckets", .type = SVC_COL_INT,
      .description = "Buckets with no probe: silence, counted neither up nor down." },
    { .key = "last_probe_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    { .key = "buckets", .type = SVC_COL_ARRAY, .sub = bucket_keys,
      .description = "Oldest first, each a minute (24h) or an hour (7d, 30d)." },
    { .key = "incidents", .type = SVC_COL_ARRAY, .item = SVC_COL_TEXT,
      .description = "The improvements (imp_...) filed for the deployment's incidents in "
        "the window." },
    SVC_COL_END
};
static const svc_schema_t schema_uptime = {
    .name = "DeploymentUptime", .description = "A deployment's availability, from its agent's "
        "health probes every 10 seconds.", .keys = uptime_keys
};
static const svc_col_t log_upload_keys[] = {
    { .key = "log_request_id", .type = SVC_COL_TEXT, .id = "lgr" },
    { .key = "recorded", .type = SVC_COL_BOOL,
      .description = "false: uploaded before; the first upload stands." },
    { .key = "bytes", .type = SVC_COL_INT, .description = "The text kept." },
    { .key = "truncated", .type = SVC_COL_BOOL },
    SVC_COL_END
};
static const svc_schema_t schema_log_upload = { .name = "AgentLogUpload", .keys = log_upload_keys,
    .description = "What became of an upload of logs." };
static const svc_col_t telemetry_taken_keys[] = {
    { .key = "metrics", .type = SVC_COL_INT, .description = "Samples taken." },
    { .key = "probes", .type = SVC_COL_INT, .description = "Probes taken." },
    SVC_COL_END
};
static const svc_schema_t schema_telemetry_taken = { .name = "AgentTelemetry",
    .keys = telemetry_taken_keys,
    .description = "What a report of samples and probes gave: those of deployments not on this "
                   "target, or malformed, are left out." };

/* The events: deployment.status on the org's streams; the rest addressed
 * to one target, carried by its agent's work stream only. */
static const svc_col_t status_event_keys[] = {
    { .key = "deployment_id", .type = SVC_COL_TEXT, .id = "dep" },
    { .key = "status", .type = SVC_COL_TEXT, .values = dep_statuses },
    { .key = "from", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .values = dep_statuses,
      .description = "null when the deployment is made." },
    { .key = "error", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .sub = error_keys },
    SVC_COL_END
};
static const svc_schema_t status_event = { .name = "DeploymentStatusEvent",
    .keys = status_event_keys,
    .description = "deployment.status: a deployment was made or changed status." };
static const svc_col_t work_event_keys[] = {
    { .key = "work_id", .type = SVC_COL_TEXT, .id = "wrk" },
    { .key = "action", .type = SVC_COL_TEXT, .values = work_actions },
    { .key = "deployment_id", .type = SVC_COL_TEXT, .id = "dep" },
    { .key = "desired", .type = SVC_COL_OBJECT, .ref = &schema_desired },
    SVC_COL_END
};
static const svc_schema_t work_event = { .name = "AgentWorkEvent", .keys = work_event_keys,
    .description = "agent.work: a piece of work for the target." };
static const svc_col_t rotated_event_keys[] = {
    { .key = "target_id", .type = SVC_COL_TEXT, .id = "dtg" },
    { .key = "key_hint", .type = SVC_COL_TEXT },
    SVC_COL_END
};
static const svc_schema_t rotated_event = { .name = "TargetKeyRotatedEvent",
    .keys = rotated_event_keys,
    .description = "target.key_rotated: the target has a new key; a stream opened with the old "
                   "one ends." };
static const svc_col_t removed_event_keys[] = {
    { .key = "target_id", .type = SVC_COL_TEXT, .id = "dtg" },
    SVC_COL_END
};
static const svc_schema_t removed_event = { .name = "TargetRemovedEvent",
    .keys = removed_event_keys,
    .description = "target.removed: the target was removed; its stream ends." };
static const svc_col_t logs_event_keys[] = {
    { .key = "deployment_id", .type = SVC_COL_TEXT, .id = "dep" },
    { .key = "log_request_id", .type = SVC_COL_TEXT, .id = "lgr" },
    { .key = "bytes", .type = SVC_COL_INT },
    { .key = "truncated", .type = SVC_COL_BOOL },
    SVC_COL_END
};
static const svc_schema_t logs_event = { .name = "DeploymentLogsEvent", .keys = logs_event_keys,
    .description = "deployment.logs: logs asked for arrived (GET .../logs?request=)." };
static const svc_col_t incident_event_keys[] = {
    { .key = "deployment_id", .type = SVC_COL_TEXT, .id = "dep" },
    { .key = "improvement_id", .type = SVC_COL_TEXT, .id = "imp" },
    { .key = "state", .type = SVC_COL_TEXT, .values = SVC_VALUES("filed", "failing",
                                                                  "recovered"),
      .description = "filed: a new incident; failing: an open incident that had recovered "
        "fails again; recovered: every replica passed its last 3 probes." },
    { .key = "reason", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .values = SVC_VALUES("probes_failed", "crash_loop") },
    { .key = "failures", .type = SVC_COL_INT,
      .description = "Reports that found it failing since it was filed." },
    SVC_COL_END
};
static const svc_schema_t incident_event = { .name = "DeploymentIncidentEvent",
    .keys = incident_event_keys,
    .description = "deployment.incident: an incident of a running deployment was filed (as an "
                   "improvement), failed again after it recovered, or recovered." };
static const svc_col_t logs_requested_keys[] = {
    { .key = "log_request_id", .type = SVC_COL_TEXT, .id = "lgr" },
    { .key = "deployment_id", .type = SVC_COL_TEXT, .id = "dep" },
    { .key = "lines", .type = SVC_COL_INT },
    SVC_COL_END
};
static const svc_schema_t logs_requested_event = { .name = "DeploymentLogsRequestedEvent",
    .keys = logs_requested_keys,
    .description = "deployment.logs_requested: upload the last `lines` lines of each replica's "
                   "output." };
static const svc_event_kind_t events[] = {
    { "deployment.status", &status_event, "A deployment is made and at every status change." },
    { "deployment.logs", &logs_event, "Logs asked for with request-logs were uploaded." },
    { "deployment.incident", &incident_event, "An incident was filed for a running deployment, "
      "or it failed again after it recovered, or it recovered." },
    { NULL, NULL, NULL }
};
static const svc_event_kind_t agent_events[] = {
    { "agent.work", &work_event, "The target has a piece of work: deploy, start, stop, scale, "
      "tear down or separate a deployment." },
    { "deployment.logs_requested", &logs_requested_event, "A member asked for the last lines "
      "of a deployment's output: the agent uploads them." },
    { "target.key_rotated", &rotated_event, "The target's key was rotated." },
    { "target.removed", &removed_event, "The target was removed." },
    { NULL, NULL, NULL }
};
static const svc_tag_t tags[] = {
    { TAG, "Deploy targets (machines running the deploy agent) and deployments of a run's "
      "artifact on them: the plan, its approval, start, stop, scale, teardown, separation "
      "(docs/api/deployments.md)." },
    { AGENT_TAG, "The routes of the deploy agent (svc-agent), authenticated by a target's "
      "enrollment key: what to run, its work as a stream, heartbeats and reports." },
    { NULL, NULL }
};

static const svc_route_t routes[] = {
    { .method = "GET", .path = TARGETS, .handler = svc_h_targets_list, .scope = SVC_SCOPE_READ,
      .role = SVC_ROLE_VIEWER, .flags = SVC_RF_PAGED, .op_id = "listDeployTargets", .tag = TAG,
      .response = &schema_target,
      .summary = "The org's deploy targets: status (pending, online, offline), agent, key hint" },
    { .method = "POST", .path = TARGETS, .handler = svc_h_targets_create,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .body = svc_body_target_create,
      .success = 201, .op_id = "createDeployTarget", .tag = TAG,
      .response = &schema_target_with_key, .body_example = "{\"name\": \"app-server-1\"}",
      .summary = "Register a target; its enrollment key (svc_dek_...) is in this answer only" },
    { .method = "DELETE", .path = TARGETS "/:id", .handler = svc_h_targets_delete,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .success = 204,
      .op_id = "removeDeployTarget", .tag = TAG,
      .summary = "Remove a target (409 target_in_use while a deployment on it lives)" },
    { .method = "POST", .path = TARGETS "/:id/rotate-key", .handler = svc_h_targets_rotate,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .op_id = "rotateDeployTargetKey",
      .tag = TAG, .response = &schema_target_with_key,
      .summary = "A new enrollment key, shown once; the old one is refused from now on" },

    { .method = "GET", .path = DEPS, .handler = svc_h_deployments_list,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .flags = SVC_RF_PAGED,
      .query = svc_query_deployments_list, .op_id = "listDeployments", .tag = TAG,
      .response = &schema_deployment, .summary = "The org's deployments, newest first" },
    { .method = "POST", .path = DEPS, .handler = svc_h_deployments_create,
      .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER, .body = svc_body_deployment_create,
      .flags = SVC_RF_IDEMPOTENT, .success = 201, .op_id = "createDeployment", .tag = TAG, .response = &schema_deployment,
      .body_example = "{\"project\": \"shop\", \"target_id\": \"dtg_3kTq0dKc5gWm1xQ9aZr2Lb\", "
        "\"run_id\": \"run_3kTq0dKc5gWm1xQ9aZr2Lb\"}",
      .summary = "Deploy a succeeded run's artifact on a target: planning, then planned" },
    { .method = "GET", .path = DEPS "/:id", .handler = svc_h_deployments_get,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .op_id = "getDeployment", .tag = TAG,
      .response = &schema_deployment,
      .summary = "A deployment: its plan, status, target's status and workload" },
    DEPLOYMENT_ACTION("approve", svc_h_deployments_approve, SVC_ROLE_ADMIN,
                      svc_body_deployment_approve, "approveDeployment",
                      "{\"plan_version\": 1}",
                      "Approve the current plan (by its version) and deploy it"),
    DEPLOYMENT_ACTION("replan", svc_h_deployments_replan, SVC_ROLE_MEMBER, NULL,
                      "replanDeployment", NULL, "Run the planner again (a running app keeps "
                      "running until the new plan is approved)"),
    DEPLOYMENT_ACTION("stop", svc_h_deployments_stop, SVC_ROLE_MEMBER, NULL,
                      "stopDeployment", NULL, "Stop: no replica runs; the checkout stays"),
    DEPLOYMENT_ACTION("start", svc_h_deployments_start, SVC_ROLE_MEMBER, NULL,
                      "startDeployment", NULL, "Start a stopped app with its plan's replicas"),
    DEPLOYMENT_ACTION("scale", svc_h_deployments_scale, SVC_ROLE_MEMBER,
                      svc_body_deployment_scale, "scaleDeployment", "{\"replicas\": 2}",
                      "Run 0 to 10 replicas"),
    DEPLOYMENT_ACTION("teardown", svc_h_deployments_teardown, SVC_ROLE_MEMBER, NULL,
                      "teardownDeployment", NULL,
                      "Delete the workload: processes and files gone from the target"),
    DEPLOYMENT_ACTION("separate", svc_h_deployments_separate, SVC_ROLE_MEMBER, NULL,
                      "separateDeployment", NULL, "Hand the workload over: it keeps running "
                      "from a start script of its own, no longer managed"),
    { .method = "POST", .path = DEPS "/:id/request-logs",
      .handler = svc_h_deployments_request_logs, .scope = SVC_SCOPE_WRITE,
      .role = SVC_ROLE_MEMBER, .body = svc_body_log_request, .success = 202,
      .op_id = "requestDeploymentLogs", .tag = TAG, .response = &schema_log_request,
      .body_example = "{\"lines\": 500}",
      .summary = "Ask the agent for the last lines of each replica's output (202; "
        "a deployment.logs event when they arrive)" },
    { .method = "GET", .path = DEPS "/:id/logs", .handler = svc_h_deployments_logs,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .flags = SVC_RF_TEXT,
      .query = svc_query_logs, .headers = logs_headers, .op_id = "getDeploymentLogs",
      .tag = TAG, .answers = SVC_ANS_NOT_FOUND,
      .summary = "The latest logs uploaded (text/plain, each line prefixed by its replica); "
        "404 not_found before any" },
    { .method = "GET", .path = DEPS "/:id/metrics", .handler = svc_h_deployments_metrics,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .query = svc_query_metrics,
      .op_id = "getDeploymentMetrics", .tag = TAG, .response = &schema_metrics,
      .summary = "CPU, memory, file descriptors and restarts per replica and summed, over "
        "time (the last hour by default)" },
    { .method = "GET", .path = DEPS "/:id/uptime", .handler = svc_h_deployments_uptime,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .query = svc_query_uptime,
      .op_id = "getDeploymentUptime", .tag = TAG, .response = &schema_uptime,
      .summary = "Availability from the health probes, in minute or hour buckets, and the "
        "incidents of the window" },

    { .method = "GET", .path = "/api/agent/deployments", .handler = svc_h_agent_view,
      .auth = SVC_AUTH_AGENT, .op_id = "agentDeployments", .tag = AGENT_TAG,
      .response = &schema_agent_view,
      .summary = "What the target should run now, and the event id its work stream "
        "continues from" },
    { .method = "GET", .path = "/api/agent/work", .handler = svc_h_agent_work_stream,
      .auth = SVC_AUTH_AGENT, .flags = SVC_RF_STREAM, .query = svc_query_agent_work,
      .op_id = "agentWork", .tag = AGENT_TAG, .answers = SVC_ANS_LIMITED,
      .summary = "The target's work as an event stream (agent.work); resumes after "
        "Last-Event-ID" },
    { .method = "POST", .path = "/api/agent/heartbeat", .handler = svc_h_agent_heartbeat,
      .auth = SVC_AUTH_AGENT, .body = svc_body_agent_heartbeat, .body_limit = SVC_KB(256),
      .op_id = "agentHeartbeat", .tag = AGENT_TAG, .response = &schema_heartbeat,
      .body_example = "{\"version\": \"0.1.0\", \"hostname\": \"app-1\", \"workloads\": "
        "{\"dep_3kTq0dKc5gWm1xQ9aZr2Lb\": {\"replicas\": [{\"index\": 0, \"port\": 20001, "
        "\"pid\": 4242, \"restarts\": 0, \"healthy\": true}]}}}",
      .summary = "The agent's version and host, and what runs: keeps the target online" },
    { .method = "POST", .path = "/api/agent/work/:workId", .handler = svc_h_agent_report,
      .auth = SVC_AUTH_AGENT, .body = svc_body_agent_report, .body_limit = SVC_KB(64),
      .op_id = "agentReport", .tag = AGENT_TAG, .response = &schema_report,
      .body_example = "{\"outcome\": \"done\"}",
      .summary = "A piece of work done or failed (once: a second report changes nothing)" },
    { .method = "GET", .path = "/api/agent/deployments/:id/bundle",
      .handler = svc_h_agent_bundle, .auth = SVC_AUTH_AGENT, .flags = SVC_RF_BINARY,
      .op_id = "agentBundle", .tag = AGENT_TAG,
      .summary = "The artifact (git bundle) of a deployment of this target" },
    { .method = "POST", .path = "/api/agent/deployments/:id/logs/:requestId",
      .handler = svc_h_agent_logs_upload, .auth = SVC_AUTH_AGENT, .body = svc_body_agent_logs,
      .body_limit = SVC_KB(4096), .op_id = "agentUploadLogs", .tag = AGENT_TAG,
      .response = &schema_log_upload,
      .body_example = "{\"replicas\": {\"0\": \"c3RhcnRlZCBvbiBwb3J0IDIwMDAxCg\"}}",
      .summary = "The last lines of each replica's output, for a log request (once)" },
    { .method = "POST", .path = "/api/agent/telemetry", .handler = svc_h_agent_telemetry,
      .auth = SVC_AUTH_AGENT, .body = svc_body_agent_telemetry, .body_limit = SVC_KB(1024),
      .op_id = "agentTelemetry", .tag = AGENT_TAG, .response = &schema_telemetry_taken,
      .body_example = "{\"deployments\": {\"dep_3kTq0dKc5gWm1xQ9aZr2Lb\": {\"metrics\": "
        "[{\"replica\": 0, \"ago_ms\": 1200, \"cpu_seconds\": 1.25, \"rss_bytes\": "
        "31457280, \"fds\": 12, \"restarts\": 0}], \"probes\": [{\"replica\": 0, "
        "\"ago_ms\": 800, \"ok\": true, \"latency_ms\": 3}]}}}",
      .summary = "Resource samples and health probes of the target's deployments, in a batch" },
    SVC_ROUTE_END,
};

const svc_area_t svc_deploy_area = { .name = "deploy", .routes = routes, .tags = tags,
    .events = events, .agent_events = agent_events,
    .description = "Deploy targets, deployments, their plans, and the deploy agents' routes." };
