/*
 * svc_pl_store.c: reading and locking requests, recording their changes
 * (svc_pl_store.h).
 */
#include "svc_pl_store.h"

#include <stdarg.h>
#include <string.h>

const svc_stmt_t svc_pl_request_get = {
    "svc_pipeline_request_json",
    "SELECT " SVC_REQUEST_JSON(" 'body', r.body,")
    " FROM requests r JOIN projects p ON p.id = r.project_id WHERE r.id = $1 AND r.org_id = $2",
    2, SVC_STMT_READ
};

#define REQUEST_ROW                                                                 \
    "SELECT r.id, r.project_id, p.slug, r.kind, r.title, r.body, r.stage, r.status,"\
    " r.product_id, p.archived FROM requests r JOIN projects p ON p.id = r.project_id"\
    " WHERE r.id = $1 AND r.org_id = $2"

static const svc_stmt_t st_req_read = {
    "svc_pipeline_request_read", REQUEST_ROW, 2, SVC_STMT_READ
};

static const svc_stmt_t st_req_lock = {
    "svc_pipeline_request_lock", REQUEST_ROW " FOR UPDATE OF r", 2, 0
};

static const svc_stmt_t st_req_insert = {
    "svc_pipeline_request_insert",
    "WITH r AS (INSERT INTO requests (id, org_id, project_id, kind, title, body, created_by)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id)"
    " INSERT INTO request_stages (request_id, stage, status, via, entered_by)"
    " SELECT id, 'intake', 'active', 'create', $7 FROM r",
    7, 0
};

static const svc_stmt_t st_req_move = {
    "svc_pipeline_request_move",
    "WITH r AS (UPDATE requests SET stage = $3, status = $4, updated_at = now(),"
    " integration_approved_by = CASE WHEN $3 = 'done' THEN $6 END,"
    " integration_approved_at = CASE WHEN $3 = 'done' THEN now() END"
    " WHERE id = $1 AND org_id = $2 RETURNING id)"
    " INSERT INTO request_stages (request_id, stage, status, via, entered_by)"
    " SELECT id, $3, $4, $5, $6 FROM r",
    6, 0
};

const char *const svc_request_stages[] = {
    SVC_STAGE_INTAKE, SVC_STAGE_PLANNING, SVC_STAGE_REVIEW, SVC_STAGE_BUILD,
    SVC_STAGE_INTEGRATION, SVC_STAGE_DONE, NULL
};
const char *const svc_request_statuses[] = {
    SVC_REQ_ACTIVE, SVC_REQ_PAUSED, SVC_REQ_CANCELLED, SVC_REQ_DONE, NULL
};
const char *const svc_request_kinds[] = { "build", "improvement", NULL };
const char *const svc_task_statuses[] = {
    "pending", "queued", "running", "succeeded", "failed", "cancelled", NULL
};
const char *const svc_improvement_kinds[] = { "bug", "feature", NULL };
const char *const svc_improvement_sources[] = { "user", "incident", NULL };

/* A request as SVC_REQUEST_JSON builds it: in lists without its body. */
static const svc_col_t request_summary_keys[] = {
    SVC_COL_ID("rqs"),
    { .key = "project", .type = SVC_COL_TEXT, .format = "slug",
      .description = "The project's slug." },
    { .key = "kind", .type = SVC_COL_TEXT, .values = svc_request_kinds },
    { .key = "title", .type = SVC_COL_TEXT, .example = "A shop for the bakery" },
    { .key = "stage", .type = SVC_COL_TEXT, .values = svc_request_stages },
    { .key = "status", .type = SVC_COL_TEXT, .values = svc_request_statuses },
    { .key = "product_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "prd",
      .description = "Its product (its planning documents), from planning on." },
    { .key = "improvement_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "imp",
      .description = "The improvement it was approved from, if it was." },
    SVC_COL_CREATED_BY,
    SVC_COL_CREATED_AT,
    SVC_COL_UPDATED_AT,
    { .key = "integration_approved_by", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .id = "usr" },
    { .key = "integration_approved_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    SVC_COL_END
};

const svc_schema_t svc_schema_request_summary = { .name = "RequestSummary",
    .keys = request_summary_keys,
    .description = "A pipeline request as lists show it (without its body)." };

const svc_schema_t svc_schema_request = { .name = "Request",
    .description = "A pipeline request: something to build or change, stage by stage "
        "(docs/api/pipeline.md).",
    .keys = (const svc_col_t[]) {
        { .key = "body", .type = SVC_COL_TEXT, .example = "Sell bread online.",
          .description = "What is asked for, in Markdown." },
        SVC_COL_END
    },
    .base = &svc_schema_request_summary
};

/* The events of the pipeline (svc_pl_event, svc_improvement_incident, and
 * the database's trigger on runs for request.task: sql/011). */
static const svc_schema_t stage_event = { .name = "RequestStageEvent",
    .description = "request.stage: a request was made, or its stage or status changed.",
    .keys = (const svc_col_t[]) {
        { .key = "request_id", .type = SVC_COL_TEXT, .id = "rqs" },
        { .key = "stage", .type = SVC_COL_TEXT, .values = svc_request_stages },
        { .key = "status", .type = SVC_COL_TEXT, .values = svc_request_statuses },
        SVC_COL_END
    }
};

static const svc_schema_t task_event = { .name = "RequestTaskEvent",
    .description = "request.task: a build task was made, started, or followed its run.",
    .keys = (const svc_col_t[]) {
        { .key = "request_id", .type = SVC_COL_TEXT, .id = "rqs" },
        { .key = "task_id", .type = SVC_COL_TEXT, .id = "tsk" },
        { .key = "status", .type = SVC_COL_TEXT, .values = svc_task_statuses },
        { .key = "run_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "run" },
        SVC_COL_END
    }
};

static const svc_schema_t decision_event = { .name = "RequestDecisionEvent",
    .description = "request.decision: a decision about a request.",
    .keys = (const svc_col_t[]) {
        { .key = "request_id", .type = SVC_COL_TEXT, .id = "rqs" },
        { .key = "decision", .type = SVC_COL_TEXT, .values = SVC_VALUES("integration_approved") },
        { .key = "by", .type = SVC_COL_TEXT, .id = "usr" },
        SVC_COL_END
    }
};

static const svc_schema_t filed_event = { .name = "ImprovementFiledEvent",
    .description = "improvement.filed: a member, or the service for an incident, filed one.",
    .keys = (const svc_col_t[]) {
        { .key = "improvement_id", .type = SVC_COL_TEXT, .id = "imp" },
        { .key = "kind", .type = SVC_COL_TEXT, .values = svc_improvement_kinds },
        { .key = "source", .type = SVC_COL_TEXT, .values = svc_improvement_sources },
        SVC_COL_END
    }
};

static const svc_schema_t decided_event = { .name = "ImprovementDecisionEvent",
    .description = "improvement.decision: an improvement was approved (with the request it "
        "became) or rejected.",
    .keys = (const svc_col_t[]) {
        { .key = "improvement_id", .type = SVC_COL_TEXT, .id = "imp" },
        { .key = "status", .type = SVC_COL_TEXT, .values = SVC_VALUES("approved", "rejected") },
        { .key = "request_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "rqs" },
        SVC_COL_END
    }
};

const svc_event_kind_t svc_pipeline_events[] = {
    { "request.stage", &stage_event, "A request is made, and at every change of its stage or "
      "status." },
    { "request.task", &task_event, "A build task is made, started by run-all, and whenever "
      "its run's status changes." },
    { "request.decision", &decision_event, "A decision about a request." },
    { "improvement.filed", &filed_event, "An improvement is filed." },
    { "improvement.decision", &decided_event, "An improvement is approved or rejected." },
    { NULL, NULL, NULL }
};

int svc_stage_index(const char *stage)
{
    int i;

    for (i = 0; stage && svc_request_stages[i]; i++) {
        if (strcmp(svc_request_stages[i], stage) == 0) {
            return i;
        }
    }
    return -1;
}

static const char *col(apr_pool_t *p, const svc_dbres_t *res, int c)
{
    const char *s = svc_dbres_str(res, 0, c);

    return s ? apr_pstrdup(p, s) : NULL;
}

apr_status_t svc_request_read(svc_ctx_t *ctx, svc_db_t *db, const char *id, int lock,
                              svc_request_t **preq)
{
    svc_request_t *req;
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_org_row(ctx, db, lock ? &st_req_lock : &st_req_read, "request", id, &res);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    req = apr_pcalloc(ctx->pool, sizeof(*req));
    req->id = col(ctx->pool, res, 0);
    req->project_id = col(ctx->pool, res, 1);
    req->project_slug = col(ctx->pool, res, 2);
    req->kind = col(ctx->pool, res, 3);
    req->title = col(ctx->pool, res, 4);
    req->body = col(ctx->pool, res, 5);
    req->stage = col(ctx->pool, res, 6);
    req->status = col(ctx->pool, res, 7);
    req->product_id = col(ctx->pool, res, 8);
    req->archived = svc_dbres_bool(res, 0, 9) == 1;
    *preq = req;
    return APR_SUCCESS;
}

apr_status_t svc_request_lock(svc_ctx_t *ctx, svc_db_t *db, const char *id,
                              svc_prole_e least, svc_request_t **preq)
{
    svc_request_t *req;
    svc_projref_t *proj;
    apr_status_t rv;

    if ((rv = svc_request_read(ctx, db, id, 0, &req)) != APR_SUCCESS) {
        return rv;
    }
    /* The request's project is the one whose role counts. */
    proj = apr_pcalloc(ctx->pool, sizeof(*proj));
    proj->id = req->project_id;
    proj->slug = req->project_slug;
    ctx->project = proj;
    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_MEMBER, least)) != APR_SUCCESS
        || (rv = svc_request_read(ctx, db, id, 1, preq)) != APR_SUCCESS) {
        return rv;
    }
    return svc_request_closed(ctx, *preq);
}

apr_status_t svc_request_insert(svc_ctx_t *ctx, svc_db_t *db, const char *id,
                                const char *project_id, const char *kind, const char *title,
                                const char *body)
{
    return svc_db_execv(db, &st_req_insert, ctx->pool, NULL, id, ctx->org->id, project_id,
                        kind, title, body, ctx->who->user_id);
}

apr_status_t svc_pl_event(svc_ctx_t *ctx, svc_db_t *db, const char *project_id,
                          const char *kind, json_t *data)
{
    svc_json_pool(ctx->pool, data);
    if (!data) {
        return APR_ENOMEM;
    }
    return svc_event_emit(db, ctx->pool, ctx->org->id, project_id, NULL, kind, data);
}

apr_status_t svc_request_move(svc_ctx_t *ctx, svc_db_t *db, svc_request_t *req,
                              const char *stage, const char *status, const char *via,
                              const char *action, json_t *data)
{
    apr_status_t rv;

    if (!data) {
        data = json_object();
    }
    if (strcmp(stage, req->stage) != 0) {
        json_object_set_new(data, "from", json_string(req->stage));
        json_object_set_new(data, "to", json_string(stage));
    }
    json_object_set_new(data, "stage", json_string(stage));
    json_object_set_new(data, "status", json_string(status));
    json_object_set_new(data, "via", json_string(via));
    rv = svc_db_execv(db, &st_req_move, ctx->pool, NULL, req->id, ctx->org->id, stage, status,
                      via, ctx->who->user_id);
    if (rv != APR_SUCCESS) {
        json_decref(data);
        return rv;
    }
    req->stage = stage;
    req->status = status;
    return svc_audit_member(ctx, db, action, "request", req->id, data);
}

apr_status_t svc_request_announce(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req)
{
    return svc_pl_event(ctx, db, req->project_id, "request.stage",
                        json_pack("{s:s,s:s,s:s}", "request_id", req->id, "stage", req->stage,
                                  "status", req->status));
}

apr_status_t svc_request_json(svc_ctx_t *ctx, svc_db_t *db, const char *id,
                              const char **pjson)
{
    return svc_db_value(db, &svc_pl_request_get, ctx->pool, pjson, NULL, id, ctx->org->id);
}

apr_status_t svc_request_reply(svc_ctx_t *ctx, svc_db_t *db, const char *id, int status)
{
    const char *json;
    apr_status_t rv = svc_request_json(ctx, db, id, &json);

    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "No request %s in %s.", id, ctx->org->slug);
    }
    return rv == APR_SUCCESS ? svc_reply_text(ctx, status, json) : rv;
}

void svc_pl_missing(apr_pool_t *p, json_t *errors, const char *field, const char *code,
                    const char *fmt, ...)
{
    va_list ap;
    const char *msg;

    va_start(ap, fmt);
    msg = apr_pvsprintf(p, fmt, ap);
    va_end(ap);
    json_array_append_new(errors, json_pack("{s:s,s:s,s:s}", "field", field, "code", code,
                                            "message", msg));
}

apr_status_t svc_pl_refuse(svc_ctx_t *ctx, json_t *errors, const char *fmt, ...)
{
    va_list ap;
    const char *detail;

    va_start(ap, fmt);
    detail = apr_pvsprintf(ctx->pool, fmt, ap);
    va_end(ap);
    svc_fail(ctx, 409, "invalid_status", "%s", detail);
    ctx->problem->errors = svc_json_pool(ctx->pool, errors);
    return SVC_EPROBLEM;
}

apr_status_t svc_pl_refuse_one(svc_ctx_t *ctx, const char *field, const char *code,
                               const char *fmt, ...)
{
    json_t *errors = json_array();
    va_list ap;
    const char *msg;

    va_start(ap, fmt);
    msg = apr_pvsprintf(ctx->pool, fmt, ap);
    va_end(ap);
    svc_pl_missing(ctx->pool, errors, field, code, "%s", msg);
    return svc_pl_refuse(ctx, errors, "%s", msg);
}

apr_status_t svc_request_closed(svc_ctx_t *ctx, const svc_request_t *req)
{
    if (strcmp(req->status, SVC_REQ_CANCELLED) != 0 && strcmp(req->status, SVC_REQ_DONE) != 0) {
        return APR_SUCCESS;
    }
    return svc_pl_refuse_one(ctx, "status", req->status, "Request %s is %s; it changes no more.",
                             req->id, req->status);
}

int svc_pl_query_in(svc_ctx_t *ctx, const char *name, const char *const *values,
                    const char **pv)
{
    const char *const *s;

    *pv = apr_table_get(ctx->query, name);
    for (s = values; *pv && *s && strcmp(*s, *pv) != 0; s++) {
    }
    if (*pv && !*s) {
        svc_fail_field(ctx, name, "invalid_value", "%s is not one of the values this list "
                       "takes.", name);
        return 0;
    }
    return 1;
}
