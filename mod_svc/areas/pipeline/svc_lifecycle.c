/*
 * svc_lifecycle.c: GET .../requests/:requestId/lifecycle: the request,
 * every stage it entered (when, by whom, how), its documents with their
 * approval, its build tasks with their runs and, next to each task's
 * estimate, what its runs actually used; its improvements and attachments.
 */
#include "svc_lifecycle.h"
#include "svc_attachments.h"
#include "svc_build.h"
#include "svc_documents.h"
#include "svc_estimate.h"
#include "svc_improvements.h"
#include "svc_pl_store.h"
#include "svc_providers.h"

#include <apr_hash.h>
#include <string.h>

static const svc_stmt_t st_history = {
    "svc_pipeline_request_history",
    "SELECT coalesce(json_agg(json_build_object('stage', s.stage, 'status', s.status,"
    " 'via', s.via, 'entered_at', svc_ts(s.entered_at), 'entered_by',"
    " CASE WHEN s.entered_by IS NULL THEN NULL"
    "  ELSE json_build_object('id', u.id, 'name', u.name) END) ORDER BY s.id), '[]')::text"
    " FROM request_stages s LEFT JOIN users u ON u.id = s.entered_by WHERE s.request_id = $1",
    1, SVC_STMT_READ
};

static const svc_stmt_t st_task_runs = {
    "svc_pipeline_request_task_runs",
    "SELECT x.run_id, x.task_id FROM build_task_runs x JOIN build_tasks t ON t.id = x.task_id"
    " WHERE t.request_id = $1 AND t.org_id = $2",
    2, SVC_STMT_READ
};

/* The lifecycle as svc_h_requests_lifecycle builds it. */
static const svc_col_t stage_by_keys[] = {
    SVC_COL_ID("usr"),
    { .key = "name", .type = SVC_COL_TEXT, .example = "Ada Lovelace" },
    SVC_COL_END
};

static const svc_col_t stage_keys[] = {
    { .key = "stage", .type = SVC_COL_TEXT, .values = svc_request_stages },
    { .key = "status", .type = SVC_COL_TEXT, .values = svc_request_statuses },
    { .key = "via", .type = SVC_COL_TEXT,
      .values = SVC_VALUES("create", "advance", "advance_to_build", "auto", "pause", "resume",
                           "cancel", "approve") },
    { .key = "entered_at", .type = SVC_COL_TIME },
    { .key = "entered_by", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .sub = stage_by_keys,
      .description = "null: the service itself (the last task's run succeeded)." },
    SVC_COL_END
};

static const svc_col_t product_keys[] = {
    SVC_COL_ID("prd"),
    { .key = "name", .type = SVC_COL_TEXT, .example = "Bakery shop" },
    SVC_COL_END
};

static const svc_col_t document_keys[] = {
    SVC_COL_ID("doc"),
    { .key = "kind", .type = SVC_COL_TEXT, .values = SVC_VALUES("toc", "section") },
    { .key = "title", .type = SVC_COL_TEXT, .example = "Checkout" },
    { .key = "current_version_id", .type = SVC_COL_TEXT, .id = "ver" },
    { .key = "current_version_number", .type = SVC_COL_INT },
    { .key = "current_status", .type = SVC_COL_TEXT,
      .values = SVC_VALUES("draft", "approved", "changes_requested") },
    { .key = "approved_version_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "ver" },
    { .key = "approved", .type = SVC_COL_BOOL,
      .description = "The current version is the approved one." },
    SVC_COL_END
};

static const svc_col_t spent_keys[] = {
    { .key = "calls", .type = SVC_COL_INT },
    { .key = "input_tokens", .type = SVC_COL_INT },
    { .key = "output_tokens", .type = SVC_COL_INT },
    { .key = "cost", .type = SVC_COL_NUMBER, .flags = SVC_COL_NULL,
      .description = "US dollars; null when a model used has no known price." },
    SVC_COL_END
};

static const svc_schema_t spent_schema = { .name = "ModelUsage", .keys = spent_keys,
    .description = "What a set of model calls used, and cost." };

static const svc_col_t task_estimate_keys[] = {
    { .key = "input_tokens", .type = SVC_COL_INT },
    { .key = "output_tokens", .type = SVC_COL_INT },
    { .key = "cost", .type = SVC_COL_NUMBER, .flags = SVC_COL_NULL },
    SVC_COL_END
};

static const svc_schema_t task_usage_schema = { .name = "BuildTaskWithUsage",
    .description = "A build task with what its runs used, and its estimate.",
    .keys = (const svc_col_t[]) {
        { .key = "usage", .type = SVC_COL_OBJECT, .ref = &spent_schema },
        { .key = "estimate", .type = SVC_COL_OBJECT, .flags = SVC_COL_OPTIONAL,
          .sub = task_estimate_keys, .description = "Its line of the estimate." },
        SVC_COL_END
    },
    .base = &svc_schema_build_task
};

static const svc_col_t usage_keys[] = {
    { .key = "estimate", .type = SVC_COL_NUMBER, .flags = SVC_COL_NULL,
      .description = "The estimate's total (US dollars)." },
    { .key = "actual", .type = SVC_COL_OBJECT, .ref = &spent_schema,
      .description = "What the build's runs used." },
    { .key = "planning", .type = SVC_COL_OBJECT, .ref = &spent_schema,
      .description = "What planning used (the drafted table of contents)." },
    SVC_COL_END
};

static const svc_col_t lifecycle_keys[] = {
    { .key = "request", .type = SVC_COL_OBJECT, .ref = &svc_schema_request },
    { .key = "stages", .type = SVC_COL_ARRAY, .sub = stage_keys,
      .description = "Every stage and status it entered, oldest first." },
    { .key = "product", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .sub = product_keys },
    { .key = "documents", .type = SVC_COL_ARRAY, .sub = document_keys,
      .description = "The product's documents and their approval." },
    { .key = "build_tasks", .type = SVC_COL_ARRAY, .ref = &task_usage_schema },
    { .key = "estimate", .type = SVC_COL_OBJECT, .ref = &svc_schema_estimate },
    { .key = "usage", .type = SVC_COL_OBJECT, .sub = usage_keys },
    { .key = "improvements", .type = SVC_COL_ARRAY, .ref = &svc_schema_improvement },
    { .key = "attachments", .type = SVC_COL_ARRAY, .ref = &svc_schema_attachment },
    SVC_COL_END
};

const svc_schema_t svc_schema_lifecycle = { .name = "RequestLifecycle", .keys = lifecycle_keys,
    .description = "Everything about a request, in one answer." };

/* JSON text read back into a value (taken by the pool). */
static json_t *parsed(apr_pool_t *p, const char *text)
{
    json_error_t err;

    return svc_json_pool(p, json_loads(text, JSON_DECODE_ANY, &err));
}

static json_t *documents_of(apr_pool_t *p, const apr_array_header_t *docs)
{
    json_t *out = json_array();
    int i;

    for (i = 0; docs && i < docs->nelts; i++) {
        const svc_doc_brief_t *d = &APR_ARRAY_IDX(docs, i, svc_doc_brief_t);
        json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s,s:i,s:s,s:s?,s:b}", "id", d->id,
                                             "kind", d->kind, "title", d->title,
                                             "current_version_id", d->current_version_id,
                                             "current_version_number", d->current_number,
                                             "current_status", d->current_status,
                                             "approved_version_id", d->approved_version_id,
                                             "approved", d->approved_version_id
                                             && !strcmp(d->approved_version_id,
                                                        d->current_version_id)));
    }
    return out;
}

/* What a set of calls used and cost; cost null when a model has no price. */
typedef struct {
    apr_int64_t calls, in, out;
    double cost;
    int unpriced;
} spent_t;

static void spend(const svc_config_t *conf, spent_t *s, const svc_usage_sum_t *u)
{
    svc_price_t price;

    s->calls += u->calls;
    s->in += u->input_tokens;
    s->out += u->output_tokens;
    if (svc_price_of(conf, u->model, &price)) {
        s->cost += svc_cost_of(&price, u->input_tokens, u->output_tokens);
    }
    else {
        s->unpriced = 1;
    }
}

static json_t *spent_json(const spent_t *s)
{
    return json_pack("{s:I,s:I,s:I,s:o}", "calls", (json_int_t)s->calls,
                     "input_tokens", (json_int_t)s->in, "output_tokens", (json_int_t)s->out,
                     "cost", s->unpriced ? json_null() : json_real(svc_round_micro(s->cost)));
}

/*
 * Puts each task's estimate and actual usage beside it (build_tasks), and
 * returns the totals: {"estimate", "actual": {...}, "planning": {...}}.
 */
static apr_status_t usage_of(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                             json_t *build_tasks, const json_t *estimate, json_t **pusage)
{
    apr_array_header_t *runs = apr_array_make(ctx->pool, 8, sizeof(const char *));
    apr_array_header_t *sums, *plan;
    apr_hash_t *task_of = apr_hash_make(ctx->pool);
    apr_hash_t *by_task = apr_hash_make(ctx->pool);
    spent_t total, planning;
    svc_dbres_t *res;
    json_t *t;
    apr_status_t rv;
    size_t i;
    int k;

    memset(&total, 0, sizeof(total));
    memset(&planning, 0, sizeof(planning));
    rv = svc_db_execv(db, &st_task_runs, ctx->pool, &res, req->id, ctx->org->id);
    for (k = 0; rv == APR_SUCCESS && k < svc_dbres_rows(res); k++) {
        const char *run = apr_pstrdup(ctx->pool, svc_dbres_str(res, k, 0));
        APR_ARRAY_PUSH(runs, const char *) = run;
        apr_hash_set(task_of, run, APR_HASH_KEY_STRING,
                     apr_pstrdup(ctx->pool, svc_dbres_str(res, k, 1)));
    }
    if (rv == APR_SUCCESS) {
        rv = svc_provider_usage_sums(db, ctx->pool, ctx->org->id, "run", runs, &sums);
    }
    if (rv == APR_SUCCESS) {
        apr_array_header_t *one = apr_array_make(ctx->pool, 1, sizeof(const char *));
        APR_ARRAY_PUSH(one, const char *) = req->id;
        rv = svc_provider_usage_sums(db, ctx->pool, ctx->org->id, "request", one, &plan);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (k = 0; k < sums->nelts; k++) {
        const svc_usage_sum_t *u = &APR_ARRAY_IDX(sums, k, svc_usage_sum_t);
        const char *task = apr_hash_get(task_of, u->subject_id, APR_HASH_KEY_STRING);
        spent_t *s = task ? apr_hash_get(by_task, task, APR_HASH_KEY_STRING) : NULL;

        if (task && !s) {
            s = apr_pcalloc(ctx->pool, sizeof(*s));
            apr_hash_set(by_task, task, APR_HASH_KEY_STRING, s);
        }
        if (s) {
            spend(ctx->conf, s, u);
        }
        spend(ctx->conf, &total, u);
    }
    for (k = 0; k < plan->nelts; k++) {
        spend(ctx->conf, &planning, &APR_ARRAY_IDX(plan, k, svc_usage_sum_t));
    }
    json_array_foreach(build_tasks, i, t) {
        const char *id = json_string_value(json_object_get(t, "id"));
        spent_t none, *s = id ? apr_hash_get(by_task, id, APR_HASH_KEY_STRING) : NULL;
        json_t *e;
        size_t j;

        memset(&none, 0, sizeof(none));
        json_object_set_new(t, "usage", spent_json(s ? s : &none));
        json_array_foreach(json_object_get(estimate, "tasks"), j, e) {
            const char *tid = json_string_value(json_object_get(e, "task_id"));
            if (tid && id && strcmp(tid, id) == 0) {
                json_object_set_new(t, "estimate",
                                    json_pack("{s:O,s:O,s:O}", "input_tokens",
                                              json_object_get(e, "input_tokens"),
                                              "output_tokens", json_object_get(e, "output_tokens"),
                                              "cost", json_object_get(e, "cost")));
            }
        }
    }
    *pusage = json_pack("{s:O,s:o,s:o}", "estimate", json_object_get(estimate, "total"),
                        "actual", spent_json(&total), "planning", spent_json(&planning));
    return *pusage ? APR_SUCCESS : APR_ENOMEM;
}

apr_status_t svc_h_requests_lifecycle(svc_ctx_t *ctx)
{
    const char *id = apr_table_get(ctx->params, "requestId");
    const char *request, *tasks, *improvements, *attachments;
    apr_array_header_t *docs = NULL;
    const char *product_name = NULL;
    json_t *out, *estimate, *build_tasks, *usage;
    svc_request_t *req;
    svc_dbres_t *hist;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_request_read(ctx, db, id, 0, &req)) != APR_SUCCESS
        || (rv = svc_request_json(ctx, db, id, &request)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_history, ctx->pool, &hist, id)) != APR_SUCCESS
        || (rv = svc_build_tasks_json(ctx, db, id, &tasks)) != APR_SUCCESS
        || (rv = svc_improvements_of_request(ctx, db, id, &improvements)) != APR_SUCCESS
        || (rv = svc_attachments_of(db, ctx->pool, ctx->org->id, "request_id", id,
                                    &attachments)) != APR_SUCCESS
        || (rv = svc_estimate_request(ctx, db, req, &estimate)) != APR_SUCCESS) {
        return rv;
    }
    svc_json_pool(ctx->pool, estimate);
    if (req->product_id) {
        rv = svc_documents_of_product(db, ctx->pool, ctx->org->id, req->product_id, 0, &docs);
        if (rv == APR_SUCCESS) {
            rv = svc_product_name(db, ctx->pool, ctx->org->id, req->product_id, &product_name);
        }
        if (rv != APR_SUCCESS && rv != SVC_ENOTFOUND) {
            return rv;
        }
    }
    build_tasks = parsed(ctx->pool, tasks);
    if ((rv = usage_of(ctx, db, req, build_tasks, estimate, &usage)) != APR_SUCCESS) {
        return rv;
    }
    out = json_pack("{s:O,s:O,s:o,s:o,s:O,s:O,s:o,s:O,s:O}",
                    "request", parsed(ctx->pool, request),
                    "stages", parsed(ctx->pool, svc_dbres_str(hist, 0, 0)),
                    "product", product_name
                               ? json_pack("{s:s,s:s}", "id", req->product_id, "name",
                                           product_name) : json_null(),
                    "documents", documents_of(ctx->pool, docs),
                    "build_tasks", build_tasks,
                    "estimate", estimate,
                    "usage", usage,
                    "improvements", parsed(ctx->pool, improvements),
                    "attachments", parsed(ctx->pool, attachments));
    if (!out) {
        return APR_ENOMEM;
    }
    svc_json_pool(ctx->pool, out);
    return svc_reply_text(ctx, 200, svc_estimate_dump(ctx->pool, out));
}
