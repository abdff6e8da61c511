/*
 * svc_run_api.c: starting, listing, reading and cancelling the runs of a
 * project, and the run's event stream (docs/api/runs.md). The supervisor
 * does the rest (svc_supervisor.c): it is woken by the NOTIFY that queuing
 * and cancelling send (sql/007_runs.sql).
 */
#include "svc_run_api.h"
#include "svc_run_store.h"
#include "svc_billing.h"
#include "svc_idempotency.h"
#include "svc_vcs.h"
#include "svc_providers.h"

#include <string.h>

#define RUN_FROM " FROM runs r JOIN projects p ON p.id = r.project_id"

static const svc_stmt_t st_runs_list = {
    "svc_runs_list",
    "SELECT " SVC_RUN_DOC_SQL ", r.seq" RUN_FROM
    " WHERE r.project_id = $1 AND ($2::text IS NULL OR r.status = $2)"
    " AND r.seq < $3::bigint ORDER BY r.seq DESC LIMIT $4::int",
    4, SVC_STMT_READ
};

static const svc_stmt_t st_runs_get = {
    "svc_runs_get",
    "SELECT " SVC_RUN_DOC_SQL RUN_FROM " WHERE r.id = $1 AND r.project_id = $2",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_runs_exists = {
    "svc_runs_exists",
    "SELECT 1 FROM runs WHERE id = $1 AND project_id = $2",
    2, SVC_STMT_READ
};

/* Claims the key for this run, unless it is taken and younger than 24 hours. */
static const svc_stmt_t st_key_claim = {
    "svc_runs_key_claim",
    "INSERT INTO run_idempotency AS k (org_id, key, fingerprint, run_id)"
    " VALUES ($1, $2, $3::bytea, $4)"
    " ON CONFLICT (org_id, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,"
    " run_id = EXCLUDED.run_id, created_at = now()"
    " WHERE k.created_at < now() - interval '24 hours' RETURNING k.run_id",
    4, 0
};

static const svc_stmt_t st_key_get = {
    "svc_runs_key_get",
    "SELECT run_id, fingerprint = $3::bytea FROM run_idempotency"
    " WHERE org_id = $1 AND key = $2",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_runs_get_in_org = {
    "svc_runs_get_in_org",
    "SELECT " SVC_RUN_DOC_SQL RUN_FROM " WHERE r.id = $1 AND r.org_id = $2",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_runs_lock = {
    "svc_runs_lock",
    "SELECT status, cancel_requested FROM runs WHERE id = $1 AND project_id = $2 FOR UPDATE",
    2, 0
};

static const svc_stmt_t st_runs_cancel_queued = {
    "svc_runs_cancel_queued",
    "UPDATE runs SET status = 'cancelled', finished_at = now(), cancel_requested = true"
    " WHERE id = $1 AND status = 'queued'",
    1, 0
};

/* The supervisor holding the run hears of it (NOTIFY, sql/007_runs.sql). */
static const svc_stmt_t st_runs_cancel_running = {
    "svc_runs_cancel_running",
    "UPDATE runs SET cancel_requested = true WHERE id = $1 AND status = 'running'",
    1, 0
};

const svc_field_t svc_body_run_create[] = {
    { .name = "instructions", .type = SVC_FT_TEXT, .required = 1, .min = 1, .max = 65536,
      .description = "What to build or change, in Markdown: 1 to 65536 characters." },
    { .name = "request_id", .type = SVC_FT_STRING, .min = 1, .max = 64,
      .description = "The pipeline request the run belongs to (set by the pipeline)." },
    { .name = "task_id", .type = SVC_FT_STRING, .min = 1, .max = 64,
      .description = "The build task the run carries out (set by the pipeline)." },
    { .name = "repository", .type = SVC_FT_STRING, .min = 1, .max = 200,
      .description = "The repository to work on (owner/name): it must be the one linked to the "
        "project (PUT .../repository), else 409 repository_not_linked. Omitted: the linked one, "
        "or a fresh repository when the project has none." },
    SVC_FIELD_END
};

const svc_qparam_t svc_query_runs_list[] = {
    { "status", "string", "Only runs with this status: queued, running, succeeded, failed "
      "or cancelled." },
    { NULL, NULL, NULL }
};

const svc_qparam_t svc_query_runs_events[] = {
    { "last_event_id", "integer", "Resume after this event id (for clients that cannot send "
      "the Last-Event-ID header). Without either, the stream starts at the run's first "
      "event." },
    { NULL, NULL, NULL }
};

static const char *run_param(svc_ctx_t *ctx)
{
    return apr_table_get(ctx->params, "runId");
}

static apr_status_t no_run(svc_ctx_t *ctx, const char *id)
{
    return svc_fail(ctx, 404, "not_found", "No run %s in project %s.", id,
                    ctx->project->slug);
}

/* The run's JSON (*pjson, NULL when the project has no such run); in a
 * write, as its transaction sees it: the run as made. */
static apr_status_t run_json(svc_ctx_t *ctx, svc_db_t *db, const char *id, const char **pjson)
{
    svc_dbres_t *res;
    apr_status_t rv = svc_db_execv(db, &st_runs_get, ctx->pool, &res, id, ctx->project->id);

    *pjson = NULL;
    if (rv == APR_SUCCESS && svc_dbres_rows(res) == 1) {
        *pjson = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
    }
    return rv;
}

/* Answers `status` with the run as the API shows it; 404 when the project
 * has none. */
static apr_status_t reply_run(svc_ctx_t *ctx, svc_db_t *db, const char *id, int status)
{
    const char *json;
    apr_status_t rv = run_json(ctx, db, id, &json);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    return json ? svc_reply_text(ctx, status, json) : no_run(ctx, id);
}

/*
 * The audit entry of a change to a run, in its transaction; `data` (taken)
 * says more. The caller's membership is held first: the audit chain's lock
 * comes last (svc_member_hold).
 */
static apr_status_t audit(svc_ctx_t *ctx, svc_db_t *db, const char *action, const char *run_id,
                          json_t *data)
{
    apr_status_t rv = svc_member_hold(db, ctx->pool, ctx->org->id, ctx->who->user_id);

    svc_json_pool(ctx->pool, data);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "No organization %s.", ctx->org->slug);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return svc_audit_ctx(ctx, db, action, "run", run_id, data);
}

apr_status_t svc_h_runs_list(svc_ctx_t *ctx)
{
    const char *status = apr_table_get(ctx->query, "status");
    const char *const *s;

    if (status) {
        for (s = svc_run_statuses; *s && strcmp(*s, status) != 0; s++) {
        }
        if (!*s) {
            svc_fail_field(ctx, "status", "invalid_value", "status must be one of: queued, "
                           "running, succeeded, failed, cancelled.");
            return SVC_EPROBLEM;
        }
    }
    return svc_reply_list(ctx, &st_runs_list, ctx->project->id, status, SVC_PAGE_BEFORE,
                          SVC_PAGE_FETCH);
}

apr_status_t svc_h_runs_get(svc_ctx_t *ctx)
{
    const char *id = run_param(ctx), *json;
    json_t *doc, *calls, *c;
    json_error_t jerr;
    json_int_t in = 0, out = 0;
    svc_db_t *db;
    apr_status_t rv;
    size_t i;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = run_json(ctx, db, id, &json)) != APR_SUCCESS) {
        return rv;
    }
    if (!json) {
        return no_run(ctx, id);
    }
    /* The detail shows the run's model calls one by one (an agent run
     * makes one per turn), from the usage records billing reads. */
    if ((rv = svc_provider_usage_calls(db, ctx->pool, ctx->org->id, "run", id, &calls))
        != APR_SUCCESS) {
        return rv;
    }
    doc = svc_json_pool(ctx->pool, json_loads(json, 0, &jerr));
    if (!doc) {
        return SVC_EDB;
    }
    json_array_foreach(calls, i, c) {
        in += json_integer_value(json_object_get(c, "input_tokens"));
        out += json_integer_value(json_object_get(c, "output_tokens"));
    }
    json_object_set_new(doc, "usage", json_pack("{s:I,s:I,s:I,s:O}", "calls",
                                                (json_int_t)json_array_size(calls),
                                                "input_tokens", in, "output_tokens", out,
                                                "by_call", calls));
    return svc_reply_json(ctx, 200, json_incref(doc));
}

/*
 * The repository the run works on: the project's linked one (a project
 * links at most one), which `repository`, when given, must name. Kept on
 * the run, so the init step clones what the run was started on. NULLs for
 * a greenfield run.
 */
static apr_status_t run_repository(svc_ctx_t *ctx, svc_db_t *db, const char **prepo,
                                   const char **pinstallation)
{
    const char *asked = svc_json_str(ctx->body, "repository");
    const char *linked = NULL;
    apr_int64_t installation = 0;
    apr_status_t rv = svc_vcs_project_repository(db, ctx->pool, ctx->org->id,
                                                 ctx->project->id, &linked, &installation);

    if (rv == SVC_ENOTFOUND) {
        linked = NULL;
    }
    else if (rv != APR_SUCCESS) {
        return rv;
    }
    /* Names are the provider's, whatever their case. */
    if (asked && (!linked || strcasecmp(asked, linked) != 0)) {
        return svc_fail(ctx, 409, "repository_not_linked",
                        "Repository %s is not linked to project %s%s%s. Link it first (PUT "
                        "/api/orgs/%s/projects/%s/repository), or leave out \"repository\".",
                        svc_printable(ctx->pool, asked, 200), ctx->project->slug,
                        linked ? ", which works on " : "", linked ? linked : "",
                        ctx->org->slug, ctx->project->slug);
    }
    if (linked) {
        *prepo = linked;
        *pinstallation = apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT, installation);
    }
    return APR_SUCCESS;
}

static apr_status_t start_run(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    svc_idem_t *idem = baton;
    const char *id = NULL, *repo = NULL, *installation = NULL;
    svc_run_spec_t spec;
    apr_status_t rv;

    if ((rv = run_repository(ctx, db, &repo, &installation)) != APR_SUCCESS) {
        return rv;
    }
    memset(&spec, 0, sizeof(spec));
    spec.org_id = ctx->org->id;
    spec.project_id = ctx->project->id;
    spec.instructions = svc_json_str(ctx->body, "instructions");
    spec.request_id = svc_json_str(ctx->body, "request_id");
    spec.task_id = svc_json_str(ctx->body, "task_id");
    spec.created_by = ctx->who->user_id;
    spec.timeout_seconds = ctx->conf->run_timeout;
    spec.max_steps = ctx->conf->run_max_steps;
    spec.max_tokens = ctx->conf->run_max_tokens;
    spec.command_timeout = ctx->conf->run_command_timeout;
    spec.repository = repo;
    spec.repo_installation_id = installation;
    if ((rv = svc_run_queue(db, ctx->pool, &spec, &id)) != APR_SUCCESS) {
        return rv;
    }
    if ((rv = svc_idem_claim(ctx, db, idem, &st_key_claim, id)) != APR_SUCCESS) {
        return rv;
    }
    if ((rv = audit(ctx, db, "run.created", id,
                    json_pack("{s:s}", "project", ctx->project->slug))) != APR_SUCCESS
        || (rv = svc_run_emit_status(db, ctx->pool, ctx->org->id, ctx->project->id, id,
                                     SVC_RUN_QUEUED, NULL, NULL)) != APR_SUCCESS) {
        return rv;
    }
    return reply_run(ctx, db, id, 201);
}

apr_status_t svc_h_runs_create(svc_ctx_t *ctx)
{
    svc_idem_t idem;
    apr_status_t rv;

    if ((rv = svc_idem_begin(ctx, &idem, ctx->project->id)) != APR_SUCCESS) {
        return rv;
    }
    if (ctx->project->archived) {
        return svc_fail(ctx, 409, "project_archived", "Project %s is archived; restore it "
                        "to start runs.", ctx->project->slug);
    }
    /* A hard budget used up refuses new runs (402); running ones finish. */
    if ((rv = svc_billing_admit(ctx)) != APR_SUCCESS) {
        return rv;
    }
    return svc_idem_finish(ctx, &idem, svc_write(ctx, start_run, &idem), &st_key_get,
                           &st_runs_get_in_org);
}

static apr_status_t cancel_run(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = run_param(ctx);
    const char *status;
    svc_dbres_t *res;
    apr_status_t rv;
    int queued;

    rv = svc_db_execv(db, &st_runs_lock, ctx->pool, &res, id, ctx->project->id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        return no_run(ctx, id);
    }
    status = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
    queued = strcmp(status, SVC_RUN_QUEUED) == 0;
    if (!queued && strcmp(status, SVC_RUN_RUNNING) != 0) {
        return svc_fail(ctx, 409, "invalid_status", "Run %s has finished (%s); only a queued "
                        "or running run can be cancelled.", id, status);
    }
    /* Asked for already (a running run): nothing changes, and no second
     * audit entry. */
    if (queued || svc_dbres_bool(res, 0, 1) != 1) {
        rv = svc_db_execv(db, queued ? &st_runs_cancel_queued : &st_runs_cancel_running,
                          ctx->pool, NULL, id);
        if (rv == APR_SUCCESS) {
            rv = audit(ctx, db, "run.cancelled", id,
                       json_pack("{s:s}", "status_before", status));
        }
        /* A running run's status changes when its supervisor has stopped it. */
        if (rv == APR_SUCCESS && queued) {
            rv = svc_run_emit_status(db, ctx->pool, ctx->org->id, ctx->project->id, id,
                                     SVC_RUN_CANCELLED, NULL, NULL);
        }
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    return reply_run(ctx, db, id, 200);
}

apr_status_t svc_h_runs_cancel(svc_ctx_t *ctx)
{
    return svc_write(ctx, cancel_run, NULL);
}

apr_status_t svc_h_runs_events(svc_ctx_t *ctx)
{
    const char *id = run_param(ctx);
    apr_int64_t after;
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_stream_resume_point(ctx, &after)) != APR_SUCCESS
        || (rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_runs_exists, ctx->pool, &res, id, ctx->project->id))
           != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        return no_run(ctx, id);
    }
    /* Without a resume point, the whole run from its first event. */
    return svc_reply_stream(ctx, ctx->org->id, id, after < 0 ? 0 : after, 1);
}
