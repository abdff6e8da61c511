/*
 * svc_estimate.c: the build cost estimate (svc_estimate.h), priced by the
 * providers area's table (svc_price_of).
 */
#include "svc_estimate.h"
#include "svc_build.h"
#include "svc_documents.h"
#include "svc_providers.h"

#include <string.h>

static const svc_stmt_t st_tasks_sizes = {
    "svc_pipeline_tasks_sizes",
    "SELECT id, document_id, title, octet_length(instructions), section_bytes"
    " FROM build_tasks WHERE request_id = $1 AND org_id = $2 ORDER BY position",
    2, SVC_STMT_READ
};

apr_int64_t svc_estimate_tokens(apr_size_t bytes)
{
    return (apr_int64_t)((bytes + 3) / 4);
}

apr_int64_t svc_estimate_input(apr_size_t instruction_bytes)
{
    return svc_estimate_tokens(instruction_bytes) + SVC_ESTIMATE_PROMPT_TOKENS;
}

apr_int64_t svc_estimate_output(apr_size_t section_bytes)
{
    apr_int64_t out = 3 * svc_estimate_tokens(section_bytes);

    return out < SVC_ESTIMATE_OUTPUT_MIN ? SVC_ESTIMATE_OUTPUT_MIN
           : out > SVC_ESTIMATE_OUTPUT_MAX ? SVC_ESTIMATE_OUTPUT_MAX : out;
}

double svc_cost_of(const svc_price_t *price, apr_int64_t input_tokens,
                   apr_int64_t output_tokens)
{
    double cost = ((double)input_tokens * price->input_per_mtok
                   + (double)output_tokens * price->output_per_mtok) / 1e6;

    return svc_round_micro(cost);
}

double svc_round_micro(double dollars)
{
    return (double)(apr_int64_t)(dollars * 1e6 + 0.5) / 1e6;
}

const char *svc_estimate_dump(apr_pool_t *p, const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(12));
    const char *out = apr_pstrdup(p, s ? s : "null");

    free(s);
    return out;
}

/* The estimate as svc_estimate_request builds it. */
static const svc_col_t estimate_task_keys[] = {
    { .key = "task_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "tsk",
      .description = "The task; null before build, when a section is reckoned as the task "
        "it will become." },
    { .key = "document_id", .type = SVC_COL_TEXT, .id = "doc" },
    { .key = "title", .type = SVC_COL_TEXT, .example = "Checkout" },
    { .key = "input_tokens", .type = SVC_COL_INT },
    { .key = "output_tokens", .type = SVC_COL_INT },
    { .key = "cost", .type = SVC_COL_NUMBER, .flags = SVC_COL_NULL,
      .description = "US dollars; null when the model has no known price." },
    SVC_COL_END
};

static const svc_col_t estimate_keys[] = {
    { .key = "currency", .type = SVC_COL_TEXT, .values = SVC_VALUES("USD") },
    { .key = "provider", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "llm",
      .description = "The organization's default provider, if it has a usable one." },
    { .key = "model", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "gpt-4o-mini" },
    { .key = "tasks", .type = SVC_COL_ARRAY, .sub = estimate_task_keys },
    { .key = "total", .type = SVC_COL_NUMBER, .flags = SVC_COL_NULL,
      .description = "US dollars; null when the model has no known price." },
    { .key = "basis", .type = SVC_COL_TEXT, .description = "How it was reckoned, in words." },
    SVC_COL_END
};

const svc_schema_t svc_schema_estimate = { .name = "Estimate", .keys = estimate_keys,
    .description = "What building a request should cost, task by task (docs/api/pipeline.md)." };

/* One task's line of the estimate (added to `tasks`); its cost to *ptotal. */
static void add_task(json_t *tasks, const svc_price_t *price, const char *task_id,
                     const char *doc_id, const char *title, apr_size_t instruction_bytes,
                     apr_size_t section_bytes, double *ptotal)
{
    apr_int64_t in = svc_estimate_input(instruction_bytes);
    apr_int64_t out = svc_estimate_output(section_bytes);
    double cost = price ? svc_cost_of(price, in, out) : 0;

    *ptotal += cost;
    json_array_append_new(tasks, json_pack("{s:s?,s:s,s:s,s:I,s:I,s:o}", "task_id", task_id,
                                           "document_id", doc_id, "title", title,
                                           "input_tokens", (json_int_t)in,
                                           "output_tokens", (json_int_t)out,
                                           "cost", price ? json_real(cost) : json_null()));
}

/* Before build: what the tasks would be, from the documents as they are. */
static apr_status_t planned_tasks(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                                  const svc_price_t *price, json_t *tasks, double *ptotal)
{
    const svc_doc_brief_t *toc = NULL;
    apr_array_header_t *docs;
    apr_status_t rv;
    int i;

    if (!req->product_id) {
        return APR_SUCCESS;
    }
    rv = svc_documents_of_product(db, ctx->pool, ctx->org->id, req->product_id, 1, &docs);
    if (rv != APR_SUCCESS) {
        return rv == SVC_ENOTFOUND ? APR_SUCCESS : rv;
    }
    for (i = 0; i < docs->nelts; i++) {
        const svc_doc_brief_t *d = &APR_ARRAY_IDX(docs, i, svc_doc_brief_t);
        if (strcmp(d->kind, "toc") == 0) {
            toc = d;
        }
    }
    for (i = 0; i < docs->nelts; i++) {
        const svc_doc_brief_t *d = &APR_ARRAY_IDX(docs, i, svc_doc_brief_t);
        const char *text;

        if (strcmp(d->kind, "section") != 0) {
            continue;
        }
        text = svc_build_instructions(ctx->pool, req->title, d->title, d->body, d->len,
                                      toc ? toc->body : "", toc ? toc->len : 0);
        add_task(tasks, price, NULL, d->id, d->title, text ? strlen(text) : d->len, d->len,
                 ptotal);
    }
    return APR_SUCCESS;
}

apr_status_t svc_estimate_request(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                                  json_t **pest)
{
    svc_provider_t *prov = NULL;
    svc_price_t price;
    const char *model = NULL, *basis, *prices;
    json_t *tasks = json_array();
    svc_dbres_t *res;
    double total = 0;
    int priced, i;
    apr_status_t rv;

    rv = svc_provider_default(db, ctx->pool, ctx->conf, ctx->org->id, &prov);
    if (rv != APR_SUCCESS && rv != SVC_ENOTFOUND && rv != APR_EINVAL) {
        json_decref(tasks);
        return rv;
    }
    model = rv == APR_SUCCESS ? svc_provider_model(prov) : NULL;
    priced = svc_price_of(ctx->conf, model, &price);
    if (svc_stage_index(req->stage) >= svc_stage_index(SVC_STAGE_BUILD)) {
        rv = svc_db_execv(db, &st_tasks_sizes, ctx->pool, &res, req->id, ctx->org->id);
        for (i = 0; rv == APR_SUCCESS && i < svc_dbres_rows(res); i++) {
            apr_int64_t ib = 0, sb = 0;
            svc_dbres_int64(res, i, 3, &ib);
            svc_dbres_int64(res, i, 4, &sb);
            add_task(tasks, priced ? &price : NULL, svc_dbres_str(res, i, 0),
                     svc_dbres_str(res, i, 1), svc_dbres_str(res, i, 2), (apr_size_t)ib,
                     (apr_size_t)sb, &total);
        }
    }
    else {
        rv = planned_tasks(ctx, db, req, priced ? &price : NULL, tasks, &total);
    }
    if (rv != APR_SUCCESS) {
        json_decref(tasks);
        return rv;
    }
    prices = !model
             ? "The organization has no usable default model provider, so no price applies: "
               "costs are null."
             : priced
             ? apr_psprintf(ctx->pool, "Prices: %s at %.2f USD per million input tokens and "
                            "%.2f per million output tokens (%s entry %s; providers change "
                            "their prices: operators check them and set SvcModelPrice).",
                            model, price.input_per_mtok, price.output_per_mtok, price.source,
                            price.entry)
             : apr_psprintf(ctx->pool, "No price is known for model %s, so costs are null: an "
                            "operator sets one with SvcModelPrice %s INPUT_PER_MTOK "
                            "OUTPUT_PER_MTOK.", model, model);
    basis = apr_psprintf(ctx->pool, "%sInput: one token per 4 bytes of the instructions each "
                         "task's run is given (its approved section, the request's title and "
                         "the table of contents), plus %d for the factory's own prompt. "
                         "Output: three tokens per token of the section (code is longer than "
                         "its description), at least %d and at most %d (the most the factory "
                         "asks the model for). %s",
                         svc_stage_index(req->stage) < svc_stage_index(SVC_STAGE_BUILD)
                         ? "Before build there are no tasks yet: each section document is "
                           "reckoned as the task it will become, from its approved version, "
                           "or its current one where none is approved. " : "",
                         SVC_ESTIMATE_PROMPT_TOKENS, SVC_ESTIMATE_OUTPUT_MIN,
                         SVC_ESTIMATE_OUTPUT_MAX, prices);
    *pest = json_pack("{s:s,s:s?,s:s?,s:o,s:o,s:s}", "currency", "USD", "provider",
                      prov ? svc_provider_id(prov) : NULL, "model", model, "tasks", tasks,
                      "total", priced ? json_real(svc_round_micro(total)) : json_null(),
                      "basis", basis);
    return *pest ? APR_SUCCESS : APR_ENOMEM;
}

apr_status_t svc_h_requests_cost_estimate(svc_ctx_t *ctx)
{
    svc_request_t *req;
    json_t *est;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_request_read(ctx, db, apr_table_get(ctx->params, "requestId"), 0, &req))
           != APR_SUCCESS
        || (rv = svc_estimate_request(ctx, db, req, &est)) != APR_SUCCESS) {
        return rv;
    }
    svc_json_pool(ctx->pool, est);
    return svc_reply_text(ctx, 200, svc_estimate_dump(ctx->pool, est));
}
