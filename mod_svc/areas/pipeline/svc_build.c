/*
 * svc_build.c: build tasks: made when a request enters build, one per
 * approved section; carried out by runs (run-all); followed by the
 * trigger of sql/011 as their runs change status.
 */
#include "svc_build.h"
#include "svc_billing.h"
#include "svc_documents.h"
#include "svc_runs.h"

#include <string.h>

static const svc_stmt_t st_task_insert = {
    "svc_pipeline_task_insert",
    "INSERT INTO build_tasks (id, org_id, request_id, document_id, version_id, position,"
    " title, instructions, section_bytes)"
    " VALUES ($1, $2, $3, $4, $5, $6::int, $7, $8, $9::int)",
    9, 0
};

static const svc_stmt_t st_tasks_unfinished = {
    "svc_pipeline_tasks_unfinished",
    "SELECT id, title, status, error_code FROM build_tasks"
    " WHERE request_id = $1 AND org_id = $2 AND status <> 'succeeded' ORDER BY position",
    2, SVC_STMT_READ
};

/* The tasks run-all starts: never run, or whose latest run failed or was
 * cancelled. Read under the request's lock, so two run-alls see each
 * other's result. */
static const svc_stmt_t st_tasks_to_run = {
    "svc_pipeline_tasks_to_run",
    "SELECT id, instructions FROM build_tasks WHERE request_id = $1 AND org_id = $2"
    " AND status IN ('pending', 'failed', 'cancelled') ORDER BY position",
    2, 0
};

static const svc_stmt_t st_task_started = {
    "svc_pipeline_task_started",
    "WITH t AS (UPDATE build_tasks SET status = 'queued', run_id = $2, error_code = NULL,"
    " updated_at = now() WHERE id = $1 AND org_id = $3 RETURNING id, org_id)"
    " INSERT INTO build_task_runs (run_id, task_id, org_id, status, created_by)"
    " SELECT $2, id, org_id, 'queued', $4 FROM t",
    4, 0
};

static const svc_stmt_t st_tasks_json = {
    "svc_pipeline_tasks_json",
    "SELECT coalesce(json_agg(json_build_object('id', t.id, 'position', t.position,"
    " 'title', t.title, 'document_id', t.document_id, 'version_id', t.version_id,"
    " 'status', t.status, 'run_id', t.run_id, 'error_code', t.error_code,"
    " 'created_at', svc_ts(t.created_at), 'updated_at', svc_ts(t.updated_at),"
    " 'runs', (SELECT coalesce(json_agg(json_build_object('run_id', x.run_id,"
    "   'status', x.status, 'error_code', x.error_code, 'created_by', x.created_by,"
    "   'created_at', svc_ts(x.created_at), 'finished_at', svc_ts(x.finished_at))"
    "   ORDER BY x.created_at, x.run_id), '[]') FROM build_task_runs x WHERE x.task_id = t.id))"
    " ORDER BY t.position), '[]')::text FROM build_tasks t"
    " WHERE t.request_id = $1 AND t.org_id = $2",
    2, SVC_STMT_READ
};

/* A build task as st_tasks_json builds it. */
static const svc_col_t task_run_keys[] = {
    { .key = "run_id", .type = SVC_COL_TEXT, .id = "run" },
    { .key = "status", .type = SVC_COL_TEXT, .values = svc_task_statuses,
      .description = "The run's status, as the task saw it last." },
    { .key = "error_code", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .description = "Why it failed." },
    SVC_COL_CREATED_BY,
    SVC_COL_CREATED_AT,
    { .key = "finished_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    SVC_COL_END
};

static const svc_col_t task_keys[] = {
    SVC_COL_ID("tsk"),
    { .key = "position", .type = SVC_COL_INT, .description = "1, 2, ... within the request." },
    { .key = "title", .type = SVC_COL_TEXT, .example = "Checkout" },
    { .key = "document_id", .type = SVC_COL_TEXT, .id = "doc",
      .description = "The section document it builds." },
    { .key = "version_id", .type = SVC_COL_TEXT, .id = "ver",
      .description = "The approved version it was made from." },
    { .key = "status", .type = SVC_COL_TEXT, .values = svc_task_statuses,
      .description = "pending until a run starts, then its latest run's status." },
    { .key = "run_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "run",
      .description = "Its latest run." },
    { .key = "error_code", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL },
    SVC_COL_CREATED_AT,
    SVC_COL_UPDATED_AT,
    { .key = "runs", .type = SVC_COL_ARRAY, .sub = task_run_keys,
      .description = "Every run it started, oldest first." },
    SVC_COL_END
};

const svc_schema_t svc_schema_build_task = { .name = "BuildTask", .keys = task_keys,
    .description = "A build task: one section document of the request's product, carried out by "
                   "a run." };

static const svc_col_t started_keys[] = {
    { .key = "task_id", .type = SVC_COL_TEXT, .id = "tsk" },
    { .key = "run_id", .type = SVC_COL_TEXT, .id = "run" },
    SVC_COL_END
};

static const svc_col_t run_all_keys[] = {
    { .key = "request_id", .type = SVC_COL_TEXT, .id = "rqs" },
    { .key = "started", .type = SVC_COL_ARRAY, .sub = started_keys,
      .description = "The tasks this call started, each with its new run." },
    { .key = "build_tasks", .type = SVC_COL_ARRAY, .ref = &svc_schema_build_task },
    SVC_COL_END
};

const svc_schema_t svc_schema_run_all = { .name = "BuildTasksStarted", .keys = run_all_keys,
    .description = "What run-all started, and every task of the request now." };

static const svc_stmt_t st_active_runs = {
    "svc_pipeline_active_runs",
    "SELECT run_id FROM build_tasks WHERE request_id = $1 AND org_id = $2"
    " AND status IN ('queued', 'running') ORDER BY position",
    2, SVC_STMT_READ
};

const char *svc_build_instructions(apr_pool_t *p, const char *request_title,
                                   const char *section_title, const char *section,
                                   apr_size_t section_len, const char *toc, apr_size_t toc_len)
{
    static const char cut[] = "\n[... the rest of the table of contents is left out ...]\n";
    const char *head = apr_pstrcat(p, "# ", section_title, "\n\n",
                                   apr_pstrmemdup(p, section, section_len), NULL);
    const char *context = apr_pstrcat(p, "\n\n---\n\nThis is one part of the request \"",
                                      request_title, "\". The plan's table of contents, for "
                                      "context:\n\n", NULL);
    apr_size_t head_chars = svc_utf8_chars(head, strlen(head));
    apr_size_t used = head_chars + svc_utf8_chars(context, strlen(context));
    apr_size_t room, keep;

    if (used + sizeof(cut) > SVC_RUN_INSTRUCTIONS_MAX) {
        return head_chars <= SVC_RUN_INSTRUCTIONS_MAX ? head : NULL;
    }
    room = SVC_RUN_INSTRUCTIONS_MAX - used;
    if (svc_utf8_chars(toc, toc_len) <= room) {
        return apr_pstrcat(p, head, context, apr_pstrmemdup(p, toc, toc_len), NULL);
    }
    keep = svc_utf8_prefix(toc, toc_len, room - (sizeof(cut) - 1));
    return apr_pstrcat(p, head, context, apr_pstrmemdup(p, toc, keep), cut, NULL);
}

apr_status_t svc_build_check_docs(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                                  svc_docs_level_e level, json_t *errors,
                                  apr_array_header_t **pdocs)
{
    const svc_doc_brief_t *toc = NULL;
    apr_status_t rv;
    int i, sections = 0;

    *pdocs = NULL;
    if (!req->product_id) {
        svc_pl_missing(ctx->pool, errors, "product", "missing", "The request has no product "
                       "yet: it gets one, with a table of contents, when it enters planning.");
        return APR_SUCCESS;
    }
    rv = svc_documents_of_product(db, ctx->pool, ctx->org->id, req->product_id,
                                  level == SVC_DOCS_APPROVED, pdocs);
    if (rv == SVC_ENOTFOUND) {
        svc_pl_missing(ctx->pool, errors, "product", "missing", "The request's product %s is "
                       "gone.", req->product_id);
        return APR_SUCCESS;
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < (*pdocs)->nelts; i++) {
        const svc_doc_brief_t *d = &APR_ARRAY_IDX(*pdocs, i, svc_doc_brief_t);
        if (strcmp(d->kind, "toc") == 0) {
            toc = d;
        }
        else {
            sections++;
        }
    }
    if (!toc) {
        svc_pl_missing(ctx->pool, errors, "product.toc", "missing", "Product %s has no table of "
                       "contents.", req->product_id);
    }
    if (!sections) {
        svc_pl_missing(ctx->pool, errors, "product.sections", "missing", "Product %s has no "
                       "section document: add one (POST /api/orgs/%s/products/%s/documents).",
                       req->product_id, ctx->org->slug, req->product_id);
    }
    if (level < SVC_DOCS_APPROVED) {
        return APR_SUCCESS;
    }
    for (i = 0; i < (*pdocs)->nelts; i++) {
        const svc_doc_brief_t *d = &APR_ARRAY_IDX(*pdocs, i, svc_doc_brief_t);
        const char *field = apr_pstrcat(ctx->pool, "documents/", d->id, NULL);

        if (!d->approved_version_id || strcmp(d->approved_version_id, d->current_version_id)) {
            svc_pl_missing(ctx->pool, errors, field, "not_approved", "\"%s\": its current "
                           "version (%d, %s) is not approved.", d->title, d->current_number,
                           d->current_status);
        }
        else if (strcmp(d->kind, "section") == 0
                 && !svc_build_instructions(ctx->pool, req->title, d->title, d->body, d->len,
                                            "", 0)) {
            svc_pl_missing(ctx->pool, errors, field, "too_long", "\"%s\" is longer than a run's "
                           "instructions may be (%d characters): split it.", d->title,
                           SVC_RUN_INSTRUCTIONS_MAX);
        }
    }
    return APR_SUCCESS;
}

apr_status_t svc_build_create_tasks(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                                    const apr_array_header_t *docs, apr_array_header_t **pids)
{
    const svc_doc_brief_t *toc = NULL;
    apr_status_t rv = APR_SUCCESS;
    int i, position = 0;

    *pids = apr_array_make(ctx->pool, docs->nelts, sizeof(const char *));
    for (i = 0; i < docs->nelts; i++) {
        const svc_doc_brief_t *d = &APR_ARRAY_IDX(docs, i, svc_doc_brief_t);
        if (strcmp(d->kind, "toc") == 0) {
            toc = d;
        }
    }
    for (i = 0; i < docs->nelts && rv == APR_SUCCESS; i++) {
        const svc_doc_brief_t *d = &APR_ARRAY_IDX(docs, i, svc_doc_brief_t);
        const char *id, *text;

        if (strcmp(d->kind, "section") != 0) {
            continue;
        }
        text = svc_build_instructions(ctx->pool, req->title, d->title, d->body, d->len,
                                      toc ? toc->body : "", toc ? toc->len : 0);
        if (!text) {
            return APR_EINVAL;      /* svc_build_check_docs said so first */
        }
        id = svc_id_new(ctx->pool, "tsk_");
        rv = svc_db_execv(db, &st_task_insert, ctx->pool, NULL, id, ctx->org->id, req->id,
                          d->id, d->approved_version_id, apr_itoa(ctx->pool, ++position),
                          d->title, text, apr_itoa(ctx->pool, (int)d->len));
        APR_ARRAY_PUSH(*pids, const char *) = id;
    }
    return rv;
}

static apr_status_t announce_task(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                                  const char *task_id, const char *status, const char *run_id)
{
    return svc_pl_event(ctx, db, req->project_id, "request.task",
                        json_pack("{s:s,s:s,s:s,s:s?}", "request_id", req->id, "task_id",
                                  task_id, "status", status, "run_id", run_id));
}

apr_status_t svc_build_announce_new(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                                    const apr_array_header_t *ids)
{
    apr_status_t rv = APR_SUCCESS;
    int i;

    for (i = 0; i < ids->nelts && rv == APR_SUCCESS; i++) {
        rv = announce_task(ctx, db, req, APR_ARRAY_IDX(ids, i, const char *), "pending", NULL);
    }
    return rv;
}

apr_status_t svc_build_check_tasks(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                                   json_t *errors)
{
    svc_dbres_t *res;
    apr_status_t rv;
    int i;

    rv = svc_db_execv(db, &st_tasks_unfinished, ctx->pool, &res, req->id, ctx->org->id);
    for (i = 0; rv == APR_SUCCESS && i < svc_dbres_rows(res); i++) {
        const char *code = svc_dbres_str(res, i, 3);
        svc_pl_missing(ctx->pool, errors,
                       apr_pstrcat(ctx->pool, "build_tasks/", svc_dbres_str(res, i, 0), NULL),
                       svc_dbres_str(res, i, 2), "\"%s\" is %s%s%s; every task must have "
                       "succeeded.", svc_dbres_str(res, i, 1), svc_dbres_str(res, i, 2),
                       code ? ": " : "", code ? code : "");
    }
    return rv;
}

apr_status_t svc_build_tasks_json(svc_ctx_t *ctx, svc_db_t *db, const char *request_id,
                                  const char **pjson)
{
    return svc_db_value(db, &st_tasks_json, ctx->pool, pjson, NULL, request_id, ctx->org->id);
}

apr_status_t svc_build_active_runs(svc_ctx_t *ctx, svc_db_t *db, const char *request_id,
                                   apr_array_header_t **pruns)
{
    svc_dbres_t *res;
    apr_status_t rv;
    int i;

    *pruns = apr_array_make(ctx->pool, 4, sizeof(const char *));
    rv = svc_db_execv(db, &st_active_runs, ctx->pool, &res, request_id, ctx->org->id);
    for (i = 0; rv == APR_SUCCESS && i < svc_dbres_rows(res); i++) {
        APR_ARRAY_PUSH(*pruns, const char *) = apr_pstrdup(ctx->pool, svc_dbres_str(res, i, 0));
    }
    return rv;
}

/* A run-all that cannot start anything: outside build, or paused. */
static apr_status_t not_runnable(svc_ctx_t *ctx, const svc_request_t *req)
{
    if (strcmp(req->stage, SVC_STAGE_BUILD) != 0) {
        return svc_pl_refuse_one(ctx, "stage", req->stage, "Build tasks run in build; request "
                                 "%s is in %s.", req->id, req->stage);
    }
    return svc_pl_refuse_one(ctx, "status", req->status, "The build of request %s is paused; "
                             "resume it first (POST .../build/resume).", req->id);
}

static apr_status_t run_all(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "requestId");
    json_t *started = svc_json_pool(ctx->pool, json_array());
    const char *tasks;
    svc_request_t *req;
    svc_dbres_t *res;
    apr_status_t rv;
    int i, n;
    const char **runs, **task_ids;

    if ((rv = svc_request_lock(ctx, db, id, SVC_PROLE_DEVELOPER, &req)) != APR_SUCCESS) {
        return rv;
    }
    if (strcmp(req->stage, SVC_STAGE_BUILD) != 0 || strcmp(req->status, SVC_REQ_PAUSED) == 0) {
        return not_runnable(ctx, req);
    }
    if (req->archived) {
        return svc_fail(ctx, 409, "project_archived", "Project %s is archived; restore it to "
                        "start runs.", req->project_slug);
    }
    /* A hard budget used up refuses new build tasks' runs (402). */
    if ((rv = svc_billing_admit(ctx)) != APR_SUCCESS) {
        return rv;
    }
    if ((rv = svc_db_execv(db, &st_tasks_to_run, ctx->pool, &res, id, ctx->org->id))
        != APR_SUCCESS) {
        return rv;
    }
    n = svc_dbres_rows(res);
    runs = apr_pcalloc(ctx->pool, sizeof(*runs) * (apr_size_t)(n + 1));
    task_ids = apr_pcalloc(ctx->pool, sizeof(*task_ids) * (apr_size_t)(n + 1));
    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        svc_run_spec_t spec;

        /* repository stays NULL: a build task's run starts from a fresh
         * repository, even in a project that links one (not yet wired). */
        memset(&spec, 0, sizeof(spec));
        spec.org_id = ctx->org->id;
        spec.project_id = req->project_id;
        spec.instructions = svc_dbres_str(res, i, 1);
        spec.request_id = req->id;
        spec.task_id = task_ids[i] = apr_pstrdup(ctx->pool, svc_dbres_str(res, i, 0));
        spec.created_by = ctx->who->user_id;
        spec.timeout_seconds = ctx->conf->run_timeout;
        spec.max_steps = ctx->conf->run_max_steps;
        spec.max_tokens = ctx->conf->run_max_tokens;
        spec.command_timeout = ctx->conf->run_command_timeout;
        if ((rv = svc_run_queue(db, ctx->pool, &spec, &runs[i])) == APR_SUCCESS) {
            rv = svc_db_execv(db, &st_task_started, ctx->pool, NULL, task_ids[i], runs[i],
                              ctx->org->id, ctx->who->user_id);
        }
        json_array_append_new(started, json_pack("{s:s,s:s}", "task_id", task_ids[i],
                                                 "run_id", runs[i] ? runs[i] : ""));
    }
    if (rv == APR_SUCCESS && n > 0) {
        rv = svc_audit_member(ctx, db, "request.tasks_started", "request", id,
                              json_pack("{s:O}", "started", started));
    }
    /* The events last: each run's, then each task's. */
    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        if ((rv = svc_run_announce(db, ctx->pool, ctx->org->id, req->project_id, runs[i],
                                   "queued")) == APR_SUCCESS) {
            rv = announce_task(ctx, db, req, task_ids[i], "queued", runs[i]);
        }
    }
    if (rv != APR_SUCCESS || (rv = svc_build_tasks_json(ctx, db, id, &tasks)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_text(ctx, 200, apr_pstrcat(ctx->pool, "{\"request_id\":\"", id,
                                                "\",\"started\":",
                                                svc_json_dump(ctx->pool, started),
                                                ",\"build_tasks\":", tasks, "}", NULL));
}

apr_status_t svc_h_requests_run_all(svc_ctx_t *ctx)
{
    return svc_write(ctx, run_all, NULL);
}
