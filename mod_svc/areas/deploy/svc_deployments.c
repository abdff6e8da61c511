/*
 * svc_deployments.c: /api/orgs/:orgSlug/deployments (docs/api/deployments.md):
 * a deployment made from a succeeded run, its plan approved, and the
 * workload's life (stop, start, scale, teardown, separate). Each action
 * locks the deployment's row, checks its status (409 invalid_status), moves
 * it with its event and audit entry, and, where the target must act, gives
 * the agent a piece of work, in one transaction.
 */
#include "svc_deployments.h"
#include "svc_deploy_store.h"
#include "svc_idempotency.h"

#include <string.h>

static const svc_stmt_t st_dep_list = {
    "svc_deploy_dep_list",
    "SELECT " DEP_JSON ", d.seq" DEP_FROM
    " WHERE d.org_id = $1 AND ($2::text IS NULL OR p.slug = $2)"
    " AND ($3::text IS NULL OR d.status = $3) AND ($4::text IS NULL OR d.target_id = $4)"
    " AND d.seq < $5::bigint ORDER BY d.seq DESC LIMIT $6::int",
    6, SVC_STMT_READ
};

static const svc_stmt_t st_project_of = {
    "svc_deploy_project_of",
    "SELECT id, archived FROM projects WHERE org_id = $1 AND slug = $2",
    2, 0
};

/* The target stays while the deployment is made (a removal waits). */
static const svc_stmt_t st_target_hold = {
    "svc_deploy_target_hold",
    "SELECT id FROM deploy_targets WHERE id = $1 AND org_id = $2 AND removed_at IS NULL"
    " FOR SHARE",
    2, 0
};

static const svc_stmt_t st_run_of = {
    "svc_deploy_run_of",
    "SELECT project_id, status FROM runs WHERE id = $1 AND org_id = $2",
    2, 0
};

static const svc_stmt_t st_dep_insert = {
    "svc_deploy_dep_insert",
    "INSERT INTO deployments (id, org_id, project_id, target_id, run_id, created_by)"
    " VALUES ($1, $2, $3, $4, $5, $6)",
    6, 0
};

/* Claims the Idempotency-Key for this deployment, unless it is taken and
 * younger than 24 hours (sql/026). */
static const svc_stmt_t st_key_claim = {
    "svc_deploy_key_claim",
    "INSERT INTO deployment_idempotency AS k (org_id, key, fingerprint, deployment_id)"
    " VALUES ($1, $2, $3::bytea, $4)"
    " ON CONFLICT (org_id, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,"
    " deployment_id = EXCLUDED.deployment_id, created_at = now()"
    " WHERE k.created_at < now() - interval '24 hours' RETURNING k.deployment_id",
    4, 0
};

static const svc_stmt_t st_key_get = {
    "svc_deploy_key_get",
    "SELECT deployment_id, fingerprint = $3::bytea FROM deployment_idempotency"
    " WHERE org_id = $1 AND key = $2",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_dep_get = {
    "svc_deploy_dep_get_in_org",
    "SELECT " DEP_JSON DEP_FROM " WHERE d.id = $1 AND d.org_id = $2",
    2, SVC_STMT_READ
};

static const char *const dep_prefix_target[] = { "dtg_", NULL };
static const char *const dep_prefix_run[] = { "run_", NULL };

const svc_field_t svc_body_deployment_create[] = {
    { .name = "project", .type = SVC_FT_SLUG, .required = 1,
      .description = "The project (its slug) whose run is deployed." },
    { .name = "target_id", .type = SVC_FT_ID, .required = 1, .values = dep_prefix_target,
      .description = "The deploy target (dtg_...) it runs on." },
    { .name = "run_id", .type = SVC_FT_ID, .required = 1, .values = dep_prefix_run,
      .description = "A succeeded run of the project: its artifact is what is deployed." },
    SVC_FIELD_END
};

const svc_field_t svc_body_deployment_approve[] = {
    { .name = "plan_version", .type = SVC_FT_INT, .required = 1, .min = 1, .max = 1000000000,
      .description = "The version of the plan approved: the current one, or 409 plan_changed." },
    SVC_FIELD_END
};

const svc_field_t svc_body_deployment_scale[] = {
    { .name = "replicas", .type = SVC_FT_INT, .required = 1, .min = 0, .max = 10,
      .description = "Replicas to run, 0 to 10 (0 stops the workload)." },
    SVC_FIELD_END
};

const svc_qparam_t svc_query_deployments_list[] = {
    { "project", "string", "Only the deployments of this project (its slug)." },
    { "status", "string", "Only those in this status." },
    { "target_id", "string", "Only those on this deploy target." },
    { NULL, NULL, NULL }
};

static const char *const status_values[] = {
    DS_PLANNING, DS_PLANNED, DS_PLAN_FAILED, DS_DEPLOYING, DS_RUNNING, DS_FAILED, DS_STOPPING,
    DS_STOPPED, DS_TEARING_DOWN, DS_TORN_DOWN, DS_SEPARATING, DS_SEPARATED, NULL
};

apr_status_t svc_h_deployments_list(svc_ctx_t *ctx)
{
    const char *project = apr_table_get(ctx->query, "project");
    const char *status = apr_table_get(ctx->query, "status");
    const char *target = apr_table_get(ctx->query, "target_id");
    const char *const *s;

    for (s = status_values; status && *s && strcmp(*s, status) != 0; s++) {
    }
    if (status && !*s) {
        svc_fail_field(ctx, "status", "invalid_value", "status is not a deployment's status.");
        return SVC_EPROBLEM;
    }
    if (project && !svc_slug_valid(project)) {
        svc_fail_field(ctx, "project", "invalid_value", "project is a project's slug.");
        return SVC_EPROBLEM;
    }
    if (target && (strncmp(target, "dtg_", 4) != 0 || !svc_word_valid(target, 64))) {
        svc_fail_field(ctx, "target_id", "invalid_value", "target_id is a target's id.");
        return SVC_EPROBLEM;
    }
    return svc_reply_list(ctx, &st_dep_list, ctx->org->id, project, status, target,
                          SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

static apr_status_t reply_deployment(svc_ctx_t *ctx, svc_db_t *db, const char *id, int status)
{
    const char *json;
    apr_status_t rv = svc_dep_json(db, ctx->pool, ctx->org->id, id, &json);

    if (rv == SVC_ENOTFOUND) {
        return svc_dep_not_found(ctx, id);
    }
    return rv == APR_SUCCESS ? svc_reply_text(ctx, status, json) : rv;
}

apr_status_t svc_h_deployments_get(svc_ctx_t *ctx)
{
    return svc_reply_one(ctx, "id", reply_deployment);
}

/* A refusal for the status: 409 invalid_status, naming where it may be. */
static apr_status_t refuse_status(svc_ctx_t *ctx, const svc_deployment_t *dep,
                                  svc_deploy_action_e a)
{
    const char *allowed = svc_deploy_action_from(ctx->pool, a);
    const char *msg = apr_psprintf(ctx->pool, "Deployment %s is %s; %s is for a deployment "
                                   "that is %s.", dep->id, dep->status,
                                   svc_deploy_action_name(a), allowed);

    svc_fail(ctx, 409, "invalid_status", "%s", msg);
    ctx->problem->errors = svc_json_pool(ctx->pool, json_pack("[{s:s,s:s,s:s}]", "field",
                                                              "status", "code", dep->status,
                                                              "message", msg));
    return SVC_EPROBLEM;
}

static apr_status_t create(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    svc_idem_t *idem = baton;
    const char *id = svc_id_new(ctx->pool, "dep_");
    const char *slug = svc_json_str(ctx->body, "project");
    const char *target = svc_json_str(ctx->body, "target_id");
    const char *run = svc_json_str(ctx->body, "run_id");
    const char *project_id, *run_status;
    svc_actor_t actor;
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_MEMBER, SVC_PROLE_NONE)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_project_of, ctx->pool, &res, ctx->org->id, slug))
           != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_fail(ctx, 404, "not_found", "No project %s in %s.", slug, ctx->org->slug);
    }
    project_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
    if (svc_dbres_bool(res, 0, 1)) {
        return svc_fail(ctx, 409, "project_archived", "Project %s is archived.", slug);
    }
    if ((rv = svc_db_execv(db, &st_target_hold, ctx->pool, &res, target, ctx->org->id))
        != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_fail(ctx, 404, "not_found", "No deploy target %s in %s.", target,
                        ctx->org->slug);
    }
    if ((rv = svc_db_execv(db, &st_run_of, ctx->pool, &res, run, ctx->org->id))
        != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1 || strcmp(svc_dbres_str(res, 0, 0), project_id) != 0) {
        return svc_fail(ctx, 404, "not_found", "No run %s in project %s.", run, slug);
    }
    run_status = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 1));
    if (strcmp(run_status, "succeeded") != 0) {
        const char *msg = apr_psprintf(ctx->pool, "Run %s is %s; only a run that succeeded "
                                       "has an artifact to deploy.", run, run_status);
        svc_fail(ctx, 409, "invalid_status", "%s", msg);
        ctx->problem->errors = svc_json_pool(ctx->pool, json_pack("[{s:s,s:s,s:s}]",
                                                                  "field", "run_id", "code",
                                                                  run_status, "message", msg));
        return SVC_EPROBLEM;
    }
    svc_actor_from_ctx(ctx, &actor);
    if ((rv = svc_db_execv(db, &st_dep_insert, ctx->pool, NULL, id, ctx->org->id, project_id,
                           target, run, ctx->who->user_id)) != APR_SUCCESS) {
        return rv;
    }
    if ((rv = svc_idem_claim(ctx, db, idem, &st_key_claim, id)) != APR_SUCCESS) {
        return rv;
    }
    if ((rv = svc_audit_member(ctx, db, "deployment.created", "deployment", id,
                                  json_pack("{s:s,s:s,s:s}", "project", slug, "target_id",
                                            target, "run_id", run))) != APR_SUCCESS
        || (rv = svc_event_emit(db, ctx->pool, ctx->org->id, project_id, NULL,
                                "deployment.status",
                                svc_json_pool(ctx->pool,
                                              json_pack("{s:s,s:s,s:n,s:n}", "deployment_id",
                                                        id, "status", DS_PLANNING, "from",
                                                        "error")))) != APR_SUCCESS) {
        return rv;
    }
    return reply_deployment(ctx, db, id, 201);
}

apr_status_t svc_h_deployments_create(svc_ctx_t *ctx)
{
    svc_idem_t idem;
    apr_status_t rv;

    if ((rv = svc_idem_begin(ctx, &idem, ctx->org->id)) != APR_SUCCESS) {
        return rv;
    }
    return svc_idem_finish(ctx, &idem, svc_write(ctx, create, &idem), &st_key_get, &st_dep_get);
}

/* An action on one deployment, in one transaction. */
static apr_status_t act(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    svc_deploy_action_e a = *(const svc_deploy_action_e *)baton;
    const char *id = apr_table_get(ctx->params, "id");
    svc_dep_change_t chg = { -1, NULL, NULL, NULL, NULL };
    const char *to, *work = NULL, *audit;
    svc_deployment_t *dep;
    svc_actor_t actor;
    json_t *data;
    apr_status_t rv;

    rv = svc_dep_lock(db, ctx->pool, ctx->org->id, id, &dep);
    if (rv == SVC_ENOTFOUND) {
        return svc_dep_not_found(ctx, id);
    }
    if (rv != APR_SUCCESS
        || (rv = svc_access_recheck(ctx, db, a == DA_APPROVE ? SVC_ROLE_ADMIN : SVC_ROLE_MEMBER,
                                    SVC_PROLE_NONE)) != APR_SUCCESS) {
        return rv;
    }
    if (!svc_deploy_action_allowed(a, dep->status)) {
        return refuse_status(ctx, dep, a);
    }
    data = svc_json_pool(ctx->pool, json_object());
    switch (a) {
    case DA_APPROVE: {
        long long v = svc_json_int(ctx->body, "plan_version", 0);

        if (v != dep->plan_version) {
            svc_fail(ctx, 409, "plan_changed", "The plan of deployment %s is at version %d "
                     "now, not %lld: read it again (GET the deployment) and approve that "
                     "one.", dep->id, dep->plan_version, v);
            ctx->problem->errors = svc_json_pool(ctx->pool, json_pack(
                "[{s:s,s:s,s:s}]", "field", "plan_version", "code", "stale", "message",
                apr_psprintf(ctx->pool, "The current plan is version %d.", dep->plan_version)));
            return SVC_EPROBLEM;
        }
        to = DS_DEPLOYING;
        chg.replicas = dep->plan_replicas;
        chg.approved_by = ctx->who->user_id;
        work = "deploy";
        json_object_set_new(data, "plan_version", json_integer(dep->plan_version));
        break;
    }
    case DA_REPLAN:
        to = DS_PLANNING;
        break;
    case DA_STOP:
        to = DS_STOPPING;
        chg.replicas = 0;
        work = "stop";
        break;
    case DA_START:
        to = DS_DEPLOYING;
        chg.replicas = dep->applied_replicas > 0 ? dep->applied_replicas : 1;
        work = "start";
        break;
    case DA_SCALE:
        chg.replicas = (int)svc_json_int(ctx->body, "replicas", 0);
        to = chg.replicas ? DS_DEPLOYING : DS_STOPPING;
        work = "scale";
        json_object_set_new(data, "replicas", json_integer(chg.replicas));
        break;
    case DA_TEARDOWN:
        /* Nothing was ever put on the target: nothing to take off it. */
        to = dep->applied_plan ? DS_TEARING_DOWN : DS_TORN_DOWN;
        work = dep->applied_plan ? "teardown" : NULL;
        chg.replicas = 0;
        break;
    case DA_SEPARATE:
    default:
        to = DS_SEPARATING;
        work = "separate";
        break;
    }
    audit = apr_pstrcat(ctx->pool, "deployment.", svc_deploy_action_name(a), NULL);
    svc_actor_from_ctx(ctx, &actor);
    /* The membership held first, as svc_audit_member does. */
    rv = svc_member_hold(db, ctx->pool, ctx->org->id, ctx->who->user_id);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "No organization %s.", ctx->org->slug);
    }
    if (rv != APR_SUCCESS
        || (rv = svc_dep_move(db, ctx->pool, &actor, dep, to, &chg, audit, data))
           != APR_SUCCESS
        || (work && (rv = svc_dep_work(db, ctx->pool, dep, work, NULL)) != APR_SUCCESS)) {
        return rv;
    }
    return reply_deployment(ctx, db, dep->id, 200);
}

#define ACTION(fn, a)                                                               \
    apr_status_t fn(svc_ctx_t *ctx)                                                 \
    {                                                                               \
        static const svc_deploy_action_e action = a;                               \
        return svc_write(ctx, act, (void *)&action);                            \
    }

ACTION(svc_h_deployments_approve, DA_APPROVE)
ACTION(svc_h_deployments_replan, DA_REPLAN)
ACTION(svc_h_deployments_stop, DA_STOP)
ACTION(svc_h_deployments_start, DA_START)
ACTION(svc_h_deployments_scale, DA_SCALE)
ACTION(svc_h_deployments_teardown, DA_TEARDOWN)
ACTION(svc_h_deployments_separate, DA_SEPARATE)
