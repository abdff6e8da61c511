/*
 * svc_deploy_store.c: deployments read and locked, moved with their events
 * and audit entries, the agents' work, and the documents the API shows
 * (svc_deploy_store.h).
 */
#include "svc_deploy_store.h"
#include "svc_billing.h"

#include <stdlib.h>
#include <string.h>

static const svc_stmt_t st_dep_get = {
    "svc_deploy_dep_get",
    "SELECT " DEP_JSON DEP_FROM " WHERE d.id = $1 AND d.org_id = $2",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_dep_lock = {
    "svc_deploy_dep_lock",
    "SELECT id, org_id, project_id, target_id, run_id, status, plan::text, plan_version,"
    " applied_plan::text, replicas, coalesce((plan->>'replicas')::int, 0),"
    " coalesce((applied_plan->>'replicas')::int, 0), planner, plan_attempts"
    " FROM deployments WHERE id = $1 AND org_id = $2 FOR UPDATE",
    2, 0
};

/* A move: the status and what goes with it (svc_dep_change_t). Approval
 * makes the proposed plan, with its version, the applied one; a move to
 * planning forgets the proposed plan and any planner's claim. */
static const svc_stmt_t st_dep_move = {
    "svc_deploy_dep_move",
    "UPDATE deployments SET status = $3, replicas = coalesce($4::int, replicas),"
    " error_code = $5, error_message = $6,"
    " applied_plan = CASE WHEN $7::text IS NULL THEN applied_plan"
    "   ELSE plan || jsonb_build_object('version', plan_version) END,"
    " approved_by = coalesce($7, approved_by),"
    " approved_at = CASE WHEN $7::text IS NULL THEN approved_at ELSE now() END,"
    " plan = CASE WHEN $8::jsonb IS NOT NULL THEN $8::jsonb"
    "   WHEN $3 = 'planning' THEN NULL ELSE plan END,"
    " plan_version = plan_version + CASE WHEN $8::jsonb IS NOT NULL THEN 1 ELSE 0 END,"
    " planner = NULL, planner_until = NULL,"
    " plan_attempts = CASE WHEN $3 = 'planning' THEN 0 ELSE plan_attempts END,"
    " usage_from = CASE WHEN $3 = 'running' THEN now() WHEN $9::boolean THEN NULL"
    "   ELSE usage_from END,"
    " usage_replicas = CASE WHEN $3 = 'running' THEN coalesce($4::int, replicas)"
    "   WHEN $9::boolean THEN NULL ELSE usage_replicas END,"
    " updated_at = now()"
    " WHERE id = $1 AND org_id = $2",
    9, 0
};

/*
 * The open piece of a deployment's replica-time (usage_from, sql/022) up
 * to now ($2 false) or to the last full UTC hour ($2 true), cut at every
 * full UTC hour: each piece's start and end (RFC 3339 to the microsecond,
 * so the start is the same text on every try: the recorder's key) and its
 * replica-hours, to the recorder's six places.
 */
static const svc_stmt_t st_usage_pieces = {
    "svc_deploy_usage_pieces",
    "SELECT to_char(s.a AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
    " to_char(s.b AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
    " round(d.usage_replicas * extract(epoch FROM s.b - s.a) / 3600, 6)::text"
    " FROM deployments d"
    " CROSS JOIN LATERAL (SELECT CASE WHEN $2::boolean THEN date_trunc('hour', now(), 'UTC')"
    "   ELSE now() END AS upto) e"
    " CROSS JOIN LATERAL (SELECT greatest(h, d.usage_from) AS a,"
    "   least(h + interval '1 hour', e.upto) AS b"
    "   FROM generate_series(date_trunc('hour', d.usage_from, 'UTC'), e.upto,"
    "                        interval '1 hour') AS h) s"
    " WHERE d.id = $1 AND d.usage_from IS NOT NULL AND s.b > s.a ORDER BY s.a",
    2, 0
};

/* The open piece now starts at the last full hour (the sweep wrote what
 * was before it). */
static const svc_stmt_t st_usage_advance = {
    "svc_deploy_usage_advance",
    "UPDATE deployments SET usage_from = greatest(usage_from, date_trunc('hour', now(), 'UTC'))"
    " WHERE id = $1 AND usage_from IS NOT NULL",
    1, 0
};

/* Deployments whose open piece began before the last full hour. */
static const svc_stmt_t st_usage_due = {
    "svc_deploy_usage_due",
    "SELECT id, org_id FROM deployments"
    " WHERE usage_from < date_trunc('hour', now(), 'UTC') ORDER BY usage_from LIMIT 100",
    0, 0
};

static const svc_stmt_t st_work_supersede = {
    "svc_deploy_work_supersede",
    "UPDATE deploy_work SET outcome = 'superseded', outcome_at = now()"
    " WHERE deployment_id = $1 AND outcome IS NULL",
    1, 0
};

static const svc_stmt_t st_work_insert = {
    "svc_deploy_work_insert",
    "INSERT INTO deploy_work (id, org_id, target_id, deployment_id, action, spec)"
    " SELECT $1, d.org_id, d.target_id, d.id, $3, " SVC_DEP_DESIRED("d", "r")
    " FROM deployments d JOIN runs r ON r.id = d.run_id WHERE d.id = $2"
    " RETURNING json_build_object('work_id', id, 'action', action,"
    " 'deployment_id', deployment_id, 'desired', spec)::text",
    3, 0
};

static const svc_stmt_t st_target_get = {
    "svc_deploy_target_get",
    "SELECT json_build_object('id', t.id, 'name', t.name,"
    " 'status', " SVC_TARGET_STATUS("t") ","
    " 'agent', CASE WHEN t.last_seen_at IS NULL THEN NULL ELSE json_build_object("
    " 'version', t.agent_version, 'hostname', t.agent_hostname,"
    " 'last_seen_at', svc_ts(t.last_seen_at)) END,"
    " 'key_hint', t.key_hint, 'key_created_at', svc_ts(t.key_created_at),"
    " 'deployments', (SELECT count(*) FROM deployments d WHERE d.target_id = t.id"
    " AND d.status NOT IN ('torn_down', 'separated')),"
    " 'created_by', t.created_by, 'created_at', svc_ts(t.created_at))::text"
    " FROM deploy_targets t WHERE t.id = $1 AND t.org_id = $2 AND t.removed_at IS NULL",
    2, SVC_STMT_READ
};

apr_status_t svc_dep_lock(svc_db_t *db, apr_pool_t *p, const char *org_id, const char *id,
                          svc_deployment_t **pdep)
{
    svc_deployment_t *d;
    svc_dbres_t *res;
    apr_int64_t v;
    apr_status_t rv = svc_db_execv(db, &st_dep_lock, p, &res, id, org_id);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_ENOTFOUND;
    }
    d = apr_pcalloc(p, sizeof(*d));
    d->id = apr_pstrdup(p, svc_dbres_str(res, 0, 0));
    d->org_id = apr_pstrdup(p, svc_dbres_str(res, 0, 1));
    d->project_id = apr_pstrdup(p, svc_dbres_str(res, 0, 2));
    d->target_id = apr_pstrdup(p, svc_dbres_str(res, 0, 3));
    d->run_id = apr_pstrdup(p, svc_dbres_str(res, 0, 4));
    d->status = apr_pstrdup(p, svc_dbres_str(res, 0, 5));
    d->plan = svc_dbres_isnull(res, 0, 6) ? NULL : apr_pstrdup(p, svc_dbres_str(res, 0, 6));
    if (svc_dbres_int64(res, 0, 7, &v) != APR_SUCCESS) {
        return SVC_EDB;
    }
    d->plan_version = (int)v;
    d->applied_plan = svc_dbres_isnull(res, 0, 8) ? NULL
                      : apr_pstrdup(p, svc_dbres_str(res, 0, 8));
    if (svc_dbres_int64(res, 0, 9, &v) != APR_SUCCESS) {
        return SVC_EDB;
    }
    d->replicas = (int)v;
    if (svc_dbres_int64(res, 0, 10, &v) != APR_SUCCESS) {
        return SVC_EDB;
    }
    d->plan_replicas = (int)v;
    if (svc_dbres_int64(res, 0, 11, &v) != APR_SUCCESS) {
        return SVC_EDB;
    }
    d->applied_replicas = (int)v;
    d->planner = svc_dbres_isnull(res, 0, 12) ? NULL : apr_pstrdup(p, svc_dbres_str(res, 0, 12));
    if (svc_dbres_int64(res, 0, 13, &v) != APR_SUCCESS) {
        return SVC_EDB;
    }
    d->plan_attempts = (int)v;
    *pdep = d;
    return APR_SUCCESS;
}

/*
 * Writes the deployment's open piece of replica-time (locked by the
 * caller) as usage, to now or to the last full hour, one record per clock
 * hour, in the caller's transaction. Written before (a retry after a
 * crash) is written once: the recorder keeps one record per deployment
 * and start. *pn (may be NULL) counts the records written now.
 */
static apr_status_t usage_write(svc_db_t *db, apr_pool_t *p, const svc_deployment_t *dep,
                                int whole_hours, int *pn)
{
    svc_dbres_t *res;
    apr_status_t rv;
    int i, rec, n = 0;

    rv = svc_db_execv(db, &st_usage_pieces, p, &res, dep->id, whole_hours ? "true" : "false");
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < svc_dbres_rows(res); i++) {
        double q = strtod(svc_dbres_str(res, i, 2), NULL);

        rv = svc_billing_record_usage(db, p, dep->org_id, dep->project_id, "deployment",
                                      dep->id, q, svc_dbres_str(res, i, 0),
                                      svc_dbres_str(res, i, 1), &rec);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        n += rec;
    }
    if (pn) {
        *pn = n;
    }
    return APR_SUCCESS;
}

/* Whether a move to `to` ends the workload's counted time: all but a
 * replan's (the workload runs on its applied plan meanwhile). A move to
 * running ends the piece before it too, and opens one of its own. */
static int usage_ends(const char *to)
{
    return strcmp(to, DS_PLANNING) != 0 && strcmp(to, DS_PLANNED) != 0
           && strcmp(to, DS_PLAN_FAILED) != 0;
}

apr_status_t svc_dep_move(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                          svc_deployment_t *dep, const char *to, const svc_dep_change_t *chg,
                          const char *action, json_t *data)
{
    const char *from = dep->status;
    int ends = usage_ends(to);
    json_t *event;
    apr_status_t rv;

    /* The replica-time up to this move, in its transaction: the row's
     * usage_from is cleared (or starts again) by the same commit. */
    if (ends && (rv = usage_write(db, p, dep, 0, NULL)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_db_execv(db, &st_dep_move, p, NULL, dep->id, dep->org_id, to,
                      chg->replicas >= 0 ? apr_itoa(p, chg->replicas) : NULL,
                      chg->error_code, chg->error_code ? chg->error_message : NULL,
                      chg->approved_by, chg->plan, ends ? "true" : "false");
    if (rv != APR_SUCCESS) {
        return rv;
    }
    dep->status = to;
    if (chg->replicas >= 0) {
        dep->replicas = chg->replicas;
    }
    if (chg->plan) {
        dep->plan = chg->plan;
        dep->plan_version++;
    }
    dep->planner = NULL;
    if (!data) {
        data = svc_json_pool(p, json_object());
    }
    json_object_set_new(data, "from", json_string(from));
    json_object_set_new(data, "to", json_string(to));
    if (chg->error_code) {
        json_object_set_new(data, "error_code", json_string(chg->error_code));
    }
    if ((rv = svc_audit_write(db, p, actor, dep->org_id, action, "deployment", dep->id, data))
        != APR_SUCCESS) {
        return rv;
    }
    event = svc_json_pool(p, json_pack("{s:s,s:s,s:s,s:o}", "deployment_id", dep->id,
                                       "status", to, "from", from, "error",
                                       chg->error_code
                                       ? json_pack("{s:s,s:s}", "code", chg->error_code,
                                                   "message", chg->error_message
                                                   ? chg->error_message : "")
                                       : json_null()));
    if (!event) {
        return APR_ENOMEM;
    }
    return svc_event_emit(db, p, dep->org_id, dep->project_id, NULL, "deployment.status",
                          event);
}

apr_status_t svc_dep_work(svc_db_t *db, apr_pool_t *p, const svc_deployment_t *dep,
                          const char *action, const char **pwork_id)
{
    const char *id = svc_id_new(p, "wrk_");
    json_error_t jerr;
    svc_dbres_t *res;
    json_t *work;
    apr_status_t rv;

    if ((rv = svc_db_execv(db, &st_work_supersede, p, NULL, dep->id)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_work_insert, p, &res, id, dep->id, action))
           != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1
        || !(work = svc_json_pool(p, json_loads(svc_dbres_str(res, 0, 0), 0, &jerr)))) {
        return SVC_EDB;
    }
    if (pwork_id) {
        *pwork_id = id;
    }
    return svc_event_emit_target(db, p, dep->org_id, dep->target_id, "agent.work", work);
}

apr_status_t svc_dep_json(svc_db_t *db, apr_pool_t *p, const char *org_id, const char *id,
                          const char **pjson)
{
    return svc_db_value(db, &st_dep_get, p, pjson, NULL, id, org_id);
}

apr_status_t svc_target_json(svc_db_t *db, apr_pool_t *p, const char *org_id, const char *id,
                             const char **pjson)
{
    return svc_db_value(db, &st_target_get, p, pjson, NULL, id, org_id);
}

apr_status_t svc_dep_not_found(svc_ctx_t *ctx, const char *id)
{
    return svc_fail(ctx, 404, "deployment_not_found", "No deployment %s in %s.", id,
                    ctx->org ? ctx->org->slug : "this organization");
}

apr_status_t svc_dep_usage_due(svc_db_t *db, apr_pool_t *p, apr_array_header_t **pdue)
{
    svc_dbres_t *res;
    apr_status_t rv;
    int i;

    if ((rv = svc_db_execv(db, &st_usage_due, p, &res)) != APR_SUCCESS) {
        return rv;
    }
    *pdue = apr_array_make(p, svc_dbres_rows(res) * 2 + 1, sizeof(const char *));
    for (i = 0; i < svc_dbres_rows(res); i++) {
        APR_ARRAY_PUSH(*pdue, const char *) = apr_pstrdup(p, svc_dbres_str(res, i, 0));
        APR_ARRAY_PUSH(*pdue, const char *) = apr_pstrdup(p, svc_dbres_str(res, i, 1));
    }
    return APR_SUCCESS;
}

apr_status_t svc_dep_usage_hours(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                 const char *id, int *precorded)
{
    svc_deployment_t *dep;
    apr_status_t rv;

    *precorded = 0;
    rv = svc_dep_lock(db, p, org_id, id, &dep);
    if (rv == SVC_ENOTFOUND) {
        return APR_SUCCESS;     /* gone meanwhile, with its org */
    }
    if (rv != APR_SUCCESS || (rv = usage_write(db, p, dep, 1, precorded)) != APR_SUCCESS) {
        return rv;
    }
    return svc_db_execv(db, &st_usage_advance, p, NULL, dep->id);
}
