/*
 * svc_deploy_store.h: the deploy area's tables, shared by the users'
 * handlers, the agents' routes and the planner: a deployment read and
 * locked, its moves (each with its event and audit entry), the agent's
 * work, and the documents the API shows.
 */
#ifndef SVC_DEPLOY_STORE_H
#define SVC_DEPLOY_STORE_H

#include "svc_deploy_rules.h"

/* A deployment as read, locked, for a change (strings in the reader's pool). */
typedef struct {
    const char *id, *org_id, *project_id, *target_id, *run_id;
    const char *status;
    const char *plan;           /* JSON text, or NULL */
    int plan_version;
    const char *applied_plan;   /* JSON text, or NULL: never approved */
    int replicas;
    int plan_replicas;          /* the proposed plan's replicas (0 without one) */
    int applied_replicas;       /* the applied plan's replicas (0 without one) */
    const char *planner;        /* the planner holding it, or NULL */
    int plan_attempts;
} svc_deployment_t;

/* Reads the org's deployment and locks its row (FOR UPDATE) until the
 * transaction ends; SVC_ENOTFOUND when the org has none of that id. */
apr_status_t svc_dep_lock(svc_db_t *db, apr_pool_t *p, const char *org_id, const char *id,
                          svc_deployment_t **pdep);

/* What a move changes besides the status. */
typedef struct {
    int replicas;               /* -1: unchanged */
    const char *error_code;     /* NULL: cleared */
    const char *error_message;
    const char *approved_by;    /* set: the proposed plan becomes the applied one */
    const char *plan;           /* set: the new proposed plan (JSON text), a new version */
} svc_dep_change_t;

/*
 * Moves the deployment to `to` (in the caller's transaction): the row, an
 * audit entry (`action`, with `data`, borrowed, which gains from and to;
 * NULL: {}) by
 * `actor`, and the deployment.status event (emitted last: it takes the
 * org's event lock until COMMIT). A move to planning forgets the proposed
 * plan; every move ends a planner's claim; dep is updated. A move to
 * running starts counting the workload's replica-time; every other move
 * but a replan's (planning, planned, plan_failed) ends it, writing it as
 * usage through the billing area (svc_billing_record_usage), cut at each
 * full UTC hour.
 */
apr_status_t svc_dep_move(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                          svc_deployment_t *dep, const char *to, const svc_dep_change_t *chg,
                          const char *action, json_t *data);

/*
 * The planners' sweep of deployments' replica-time (sql/022). Due: the
 * deployments whose counted time runs past a full UTC hour, as pairs of
 * id and org id (at most 100; *pdue in p). Hours: one of them locked, and
 * its counted time up to the last full hour written as usage, one record
 * per hour (in the caller's transaction; written before: written once, so
 * several nodes may sweep at once); *precorded counts the records.
 */
apr_status_t svc_dep_usage_due(svc_db_t *db, apr_pool_t *p, apr_array_header_t **pdue);
apr_status_t svc_dep_usage_hours(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                 const char *id, int *precorded);

/*
 * Gives the deployment's agent a piece of work (in the caller's
 * transaction, before svc_dep_move's event): older open work of the
 * deployment is superseded, and the new one goes to the target's stream
 * as an agent.work event, with the deployment's desired state as it is
 * now (so call it after the row's change). *pwork_id in p.
 */
apr_status_t svc_dep_work(svc_db_t *db, apr_pool_t *p, const svc_deployment_t *dep,
                          const char *action, const char **pwork_id);

/* The deployment's document (JSON text in p); SVC_ENOTFOUND. */
apr_status_t svc_dep_json(svc_db_t *db, apr_pool_t *p, const char *org_id, const char *id,
                          const char **pjson);

/* The target's document (JSON text in p); SVC_ENOTFOUND (removed too). */
apr_status_t svc_target_json(svc_db_t *db, apr_pool_t *p, const char *org_id, const char *id,
                             const char **pjson);

/* SQL of a target's status from its row `t`: pending, online, offline, removed. */
#define SVC_TARGET_STATUS(t)                                                        \
    "CASE WHEN " t ".removed_at IS NOT NULL THEN 'removed'"                         \
    " WHEN " t ".last_seen_at IS NULL THEN 'pending'"                               \
    " WHEN " t ".last_seen_at > now() - interval '60 seconds' THEN 'online'"        \
    " ELSE 'offline' END"

/*
 * SQL of what the agent is to make of deployment `d` (of run `r`): its
 * status, the artifact (run, commit, where to fetch it), the plan it runs
 * on and how many replicas. The work events carry it, and so does the
 * agent's view of its deployments.
 */
#define SVC_DEP_DESIRED(d, r)                                                       \
    "json_build_object('deployment_id', " d ".id, 'status', " d ".status,"          \
    " 'run_id', " d ".run_id, 'commit', " r ".result->>'commit',"                   \
    " 'bundle', '/api/agent/deployments/' || " d ".id || '/bundle',"                \
    " 'plan', " d ".applied_plan, 'replicas', " d ".replicas)"

/* SQL of what its agent last reported of deployment d (docs/api/deployments.md,
 * "Telemetry"): when, and its open incident. */
#define DEP_TELEMETRY                                                               \
    "json_build_object('last_sample_at', (SELECT svc_ts(max(m.at))"                 \
    "   FROM deploy_metrics m WHERE m.deployment_id = d.id),"                       \
    " 'last_probe_at', (SELECT svc_ts(max(q.at)) FROM deploy_probes q"              \
    "   WHERE q.deployment_id = d.id),"                                             \
    " 'logs_at', (SELECT svc_ts(max(l.uploaded_at)) FROM deploy_log_requests l"     \
    "   WHERE l.deployment_id = d.id AND l.uploaded_at IS NOT NULL),"               \
    " 'open_incident', (SELECT c.improvement_id FROM deploy_incidents c"            \
    "   JOIN improvements i ON i.id = c.improvement_id AND i.status = 'open'"       \
    "   WHERE c.deployment_id = d.id))"

/* SQL of a deployment's document, from d (joined as DEP_FROM says). */
#define DEP_JSON                                                                    \
    "json_build_object('id', d.id, 'project', p.slug, 'target_id', d.target_id,"    \
    " 'target_status', " SVC_TARGET_STATUS("t") ", 'run_id', d.run_id,"             \
    " 'status', d.status, 'plan', CASE WHEN d.plan IS NULL THEN NULL ELSE"          \
    " d.plan || jsonb_build_object('version', d.plan_version) END,"                 \
    " 'applied_plan', d.applied_plan, 'replicas', d.replicas,"                      \
    " 'error', CASE WHEN d.error_code IS NULL THEN NULL ELSE"                       \
    " json_build_object('code', d.error_code, 'message', d.error_message) END,"     \
    " 'workload', d.workload, 'workload_at', svc_ts(d.workload_at),"                \
    " 'created_by', d.created_by, 'created_at', svc_ts(d.created_at),"              \
    " 'updated_at', svc_ts(d.updated_at), 'approved_by', d.approved_by,"            \
    " 'approved_at', svc_ts(d.approved_at), 'telemetry', " DEP_TELEMETRY ")::text"
#define DEP_FROM                                                                    \
    " FROM deployments d JOIN projects p ON p.id = d.project_id"                    \
    " JOIN deploy_targets t ON t.id = d.target_id"

/* The 404 of a deployment the org does not have. */
apr_status_t svc_dep_not_found(svc_ctx_t *ctx, const char *id);

#endif /* SVC_DEPLOY_STORE_H */
