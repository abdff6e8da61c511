/*
 * svc_agent_api.c: the routes of deploy agents, /api/agent/... (the agent's
 * side of docs/api/deployments.md). The caller is a target, by its key
 * (svc_deploy_agent_verify): never a user, and it reaches only its own
 * target's deployments (another's is 404 deployment_not_found).
 *
 *   GET  /api/agent/deployments               what the target should run now,
 *                                             and the event id to stream from
 *   GET  /api/agent/work                      its work, as an event stream
 *   POST /api/agent/heartbeat                 who it is; its workloads now
 *   POST /api/agent/work/:workId              a piece of work done or failed
 *   GET  /api/agent/deployments/:id/bundle    a deployment's artifact
 *
 * A piece of work is reported once: a second report of the same id
 * changes nothing (the agent may report again after a restart).
 */
#include "svc_agent_api.h"
#include "svc_deploy_store.h"

#include <string.h>

static const svc_stmt_t st_agent_view = {
    "svc_deploy_agent_view",
    "SELECT json_build_object('target_id', t.id, 'name', t.name,"
    " 'last_event_id', (SELECT coalesce(max(e.id), 0) FROM events e"
    "   WHERE e.target_id = t.id),"
    " 'deployments', coalesce((SELECT json_agg(json_build_object("
    "   'deployment_id', d.id, 'desired', " SVC_DEP_DESIRED("d", "r") ","
    "   'work', (SELECT json_build_object('work_id', w.id, 'action', w.action,"
    "     'outcome', w.outcome) FROM deploy_work w WHERE w.deployment_id = d.id"
    "     ORDER BY w.seq DESC LIMIT 1)) ORDER BY d.seq)"
    "   FROM deployments d JOIN runs r ON r.id = d.run_id WHERE d.target_id = t.id"
    "   AND d.applied_plan IS NOT NULL AND d.status NOT IN ('torn_down', 'separated')),"
    "   '[]'))::text"
    " FROM deploy_targets t WHERE t.id = $1",
    1, SVC_STMT_READ
};

/* Bookkeeping, like a credential's last use: it stands alone when a work
 * stream opens (answering nothing), and goes with a heartbeat's writes. */
static const svc_stmt_t st_agent_seen = {
    "svc_deploy_agent_seen",
    "UPDATE deploy_targets SET last_seen_at = now(),"
    " agent_version = coalesce($2, agent_version), agent_hostname = coalesce($3, agent_hostname)"
    " WHERE id = $1 AND removed_at IS NULL",
    3, SVC_STMT_RETRY | SVC_STMT_ALONE
};

static const svc_stmt_t st_agent_workload = {
    "svc_deploy_agent_workload",
    "UPDATE deployments SET workload = $3::jsonb, workload_at = now()"
    " WHERE id = $1 AND target_id = $2 AND status NOT IN ('torn_down', 'separated')",
    3, 0
};

static const svc_stmt_t st_work_of = {
    "svc_deploy_work_of",
    "SELECT deployment_id, org_id FROM deploy_work WHERE id = $1 AND target_id = $2",
    2, 0
};

/* After its deployment's row: the order the users' actions lock them in
 * (a deployment, then its work), so a report and an action never wait for
 * each other in a circle. */
static const svc_stmt_t st_work_lock = {
    "svc_deploy_work_lock",
    "SELECT action, outcome FROM deploy_work WHERE id = $1 FOR UPDATE",
    1, 0
};

static const svc_stmt_t st_work_outcome = {
    "svc_deploy_work_outcome",
    "UPDATE deploy_work SET outcome = $2, outcome_at = now(), error_code = $3,"
    " error_message = $4 WHERE id = $1",
    4, 0
};

static const svc_stmt_t st_bundle_of = {
    "svc_deploy_bundle_of",
    "SELECT org_id, run_id FROM deployments WHERE id = $1 AND target_id = $2",
    2, SVC_STMT_READ
};

const svc_field_t svc_body_agent_heartbeat[] = {
    { .name = "version", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 100,
      .description = "The agent's version." },
    { .name = "hostname", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 255,
      .description = "The machine's host name." },
    { .name = "workloads", .type = SVC_FT_OBJECT,
      .description = "Per deployment id, {\"replicas\": [{\"index\", \"port\", \"pid\", "
        "\"healthy\", \"restarts\"}]}: what runs now." },
    SVC_FIELD_END
};

static const char *const outcome_values[] = { "done", "failed", NULL };

const svc_field_t svc_body_agent_report[] = {
    { .name = "outcome", .type = SVC_FT_ENUM, .required = 1, .values = outcome_values,
      .description = "done, or failed (with error)." },
    { .name = "error", .type = SVC_FT_OBJECT,
      .description = "When failed: {\"code\": \"snake_case\", \"message\": \"why\"}." },
    { .name = "workload", .type = SVC_FT_OBJECT,
      .description = "What runs now, as in a heartbeat, or {\"separated_to\": \"/path\"}." },
    SVC_FIELD_END
};

const svc_qparam_t svc_query_agent_work[] = {
    { "last_event_id", "integer", "Resume after this event id (or send Last-Event-ID); "
      "without either the stream starts at the target's first event." },
    { NULL, NULL, NULL }
};

apr_status_t svc_h_agent_view(svc_ctx_t *ctx)
{
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_agent_view, ctx->pool, &res, ctx->who->target_id))
           != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_ENOTFOUND;
    }
    return svc_reply_text(ctx, 200, svc_dbres_str(res, 0, 0));
}

apr_status_t svc_h_agent_work_stream(svc_ctx_t *ctx)
{
    apr_int64_t after;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_stream_resume_point(ctx, &after)) != APR_SUCCESS) {
        return rv;
    }
    /* Heard from: the target is online from its first stream on. */
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_agent_seen, ctx->pool, NULL, ctx->who->target_id, NULL,
                              NULL)) != APR_SUCCESS) {
        return rv;
    }
    if ((rv = svc_reply_stream(ctx, ctx->who->target_org_id, NULL, after < 0 ? 0 : after, 0))
        != APR_SUCCESS) {
        return rv;
    }
    ctx->stream->target_id = ctx->who->target_id;
    /* target.key_rotated, target.removed: the key is checked again at once. */
    ctx->stream->recheck_prefix = "target.";
    return APR_SUCCESS;
}

/* A replica as reported: only known members, of the right types. */
static json_t *clean_replica(const json_t *r)
{
    static const char *const ints[] = { "index", "port", "pid", "restarts", NULL };
    const char *const *k;
    json_t *out = json_object();

    for (k = ints; *k; k++) {
        const json_t *v = json_object_get(r, *k);
        if (json_is_integer(v) && json_integer_value(v) >= 0
            && json_integer_value(v) <= APR_INT32_MAX) {
            json_object_set_new(out, *k, json_integer(json_integer_value(v)));
        }
    }
    if (json_is_boolean(json_object_get(r, "healthy"))) {
        json_object_set(out, "healthy", json_object_get(r, "healthy"));
    }
    return out;
}

/*
 * What the agent says runs for one deployment, rebuilt from what we know
 * to look for (never stored as sent): its replicas, or where a separated
 * workload went. NULL when it is not such an object.
 */
static json_t *clean_workload(apr_pool_t *p, const json_t *w)
{
    const json_t *reps = json_object_get(w, "replicas");
    const char *to = json_string_value(json_object_get(w, "separated_to"));
    json_t *out;
    size_t i;

    if (!json_is_object(w)) {
        return NULL;
    }
    out = svc_json_pool(p, json_object());
    if (json_is_array(reps)) {
        json_t *list = json_array();
        for (i = 0; i < json_array_size(reps) && i < 10; i++) {
            if (json_is_object(json_array_get(reps, i))) {
                json_array_append_new(list, clean_replica(json_array_get(reps, i)));
            }
        }
        json_object_set_new(out, "replicas", list);
    }
    if (to && strlen(to) <= 4096 && to[0] == '/') {
        json_object_set_new(out, "separated_to", json_string(svc_printable(p, to, 4096)));
    }
    return out;
}

static apr_status_t heartbeat(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const json_t *workloads = json_object_get(ctx->body, "workloads");
    const char *key;
    json_t *value;
    apr_status_t rv;

    if ((rv = svc_db_execv(db, &st_agent_seen, ctx->pool, NULL, ctx->who->target_id,
                           svc_json_str(ctx->body, "version"),
                           svc_json_str(ctx->body, "hostname"))) != APR_SUCCESS) {
        return rv;
    }
    json_object_foreach((json_t *)workloads, key, value) {
        json_t *w = clean_workload(ctx->pool, value);

        if (!w || strncmp(key, "dep_", 4) != 0 || !svc_word_valid(key, 64)) {
            continue;   /* not one of ours: nothing to say about it */
        }
        if ((rv = svc_db_execv(db, &st_agent_workload, ctx->pool, NULL, key,
                               ctx->who->target_id, svc_json_dump(ctx->pool, w)))
            != APR_SUCCESS) {
            return rv;
        }
    }
    return svc_reply_json(ctx, 200, json_pack("{s:s,s:s}", "target_id", ctx->who->target_id,
                                               "status", "online"));
}

apr_status_t svc_h_agent_heartbeat(svc_ctx_t *ctx)
{
    return svc_write(ctx, heartbeat, NULL);
}

/* Where a piece of work, done, leaves its deployment; NULL: nowhere new. */
static const char *done_status(const char *action, const svc_deployment_t *dep)
{
    if (strcmp(action, "deploy") == 0 || strcmp(action, "start") == 0) {
        return DS_RUNNING;
    }
    if (strcmp(action, "scale") == 0) {
        return dep->replicas ? DS_RUNNING : DS_STOPPED;
    }
    if (strcmp(action, "stop") == 0) {
        return DS_STOPPED;
    }
    if (strcmp(action, "teardown") == 0) {
        return DS_TORN_DOWN;
    }
    return DS_SEPARATED;
}

/* The status a deployment waits for its agent in, for each action. */
static int waits_for(const char *status, const char *action)
{
    if (strcmp(action, "stop") == 0 || (strcmp(action, "scale") == 0
                                       && strcmp(status, DS_STOPPING) == 0)) {
        return strcmp(status, DS_STOPPING) == 0;
    }
    if (strcmp(action, "teardown") == 0) {
        return strcmp(status, DS_TEARING_DOWN) == 0;
    }
    if (strcmp(action, "separate") == 0) {
        return strcmp(status, DS_SEPARATING) == 0;
    }
    return strcmp(status, DS_DEPLOYING) == 0;
}

static int code_valid(const char *s)
{
    apr_size_t n = s ? strlen(s) : 0;

    return n >= 1 && n <= 64 && strspn(s, "abcdefghijklmnopqrstuvwxyz_") == n;
}

static apr_status_t report(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *work_id = apr_table_get(ctx->params, "workId");
    const char *outcome = svc_json_str(ctx->body, "outcome");
    const json_t *err = json_object_get(ctx->body, "error");
    const char *code = NULL, *message = NULL, *dep_id, *action, *org_id, *to;
    svc_dep_change_t chg = { -1, NULL, NULL, NULL, NULL };
    svc_deployment_t *dep;
    svc_actor_t actor;
    svc_dbres_t *res;
    json_t *workload;
    apr_status_t rv;

    if ((rv = svc_db_execv(db, &st_work_of, ctx->pool, &res, work_id, ctx->who->target_id))
        != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_fail(ctx, 404, "not_found", "No work %s for this target.", work_id);
    }
    dep_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
    org_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 1));
    if ((rv = svc_dep_lock(db, ctx->pool, org_id, dep_id, &dep)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_work_lock, ctx->pool, &res, work_id)) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_EDB;
    }
    action = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
    if (!svc_dbres_isnull(res, 0, 1)) {
        /* Reported before (or superseded): the first word stands. */
        return svc_reply_json(ctx, 200, json_pack("{s:s,s:s,s:b}", "work_id", work_id,
                                                  "outcome", svc_dbres_str(res, 0, 1),
                                                  "recorded", 0));
    }
    if (strcmp(outcome, "failed") == 0) {
        code = json_string_value(json_object_get(err, "code"));
        message = json_string_value(json_object_get(err, "message"));
        code = code_valid(code) ? code : "agent_failed";
        message = svc_printable(ctx->pool, message ? message : "The agent gave no reason.",
                                2000);
    }
    if ((rv = svc_db_execv(db, &st_work_outcome, ctx->pool, NULL, work_id, outcome, code,
                           message)) != APR_SUCCESS) {
        return rv;
    }
    workload = clean_workload(ctx->pool, json_object_get(ctx->body, "workload"));
    if (workload && (rv = svc_db_execv(db, &st_agent_workload, ctx->pool, NULL, dep_id,
                                       ctx->who->target_id, svc_json_dump(ctx->pool, workload)))
                    != APR_SUCCESS) {
        return rv;
    }
    /* Only the deployment's latest work moves it, and only from the status
     * that work left it waiting in. */
    if (waits_for(dep->status, action)) {
        to = code ? DS_FAILED : done_status(action, dep);
        chg.error_code = code;
        chg.error_message = message;
        memset(&actor, 0, sizeof(actor));
        svc_actor_from_ctx(ctx, &actor);
        if ((rv = svc_dep_move(db, ctx->pool, &actor, dep, to, &chg, "deployment.status_changed",
                               svc_json_pool(ctx->pool,
                                             json_pack("{s:s,s:s,s:s,s:s,s:s}", "via", "agent",
                                                       "target_id", ctx->who->target_id,
                                                       "work_id", work_id, "action", action,
                                                       "outcome", outcome))))
            != APR_SUCCESS) {
            return rv;
        }
    }
    return svc_reply_json(ctx, 200, json_pack("{s:s,s:s,s:b,s:s}", "work_id", work_id,
                                              "outcome", outcome, "recorded", 1,
                                              "deployment_status", dep->status));
}

apr_status_t svc_h_agent_report(svc_ctx_t *ctx)
{
    return svc_write(ctx, report, NULL);
}

apr_status_t svc_h_agent_bundle(svc_ctx_t *ctx)
{
    const char *id = apr_table_get(ctx->params, "id");
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_bundle_of, ctx->pool, &res, id, ctx->who->target_id))
           != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        /* Another target's deployment is not this agent's business. */
        return svc_fail(ctx, 404, "deployment_not_found", "No deployment %s on this target.",
                        id);
    }
    rv = svc_run_reply_artifact(ctx, db, svc_dbres_str(res, 0, 0), svc_dbres_str(res, 0, 1),
                                id);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "The deployment's run has no artifact.");
    }
    return rv;
}
