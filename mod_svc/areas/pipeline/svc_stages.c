/*
 * svc_stages.c: moving a request through its stages (docs/api/pipeline.md).
 *
 * Every change runs in one transaction (svc_write) under the request's row
 * lock (svc_request_lock), so of two simultaneous advances one moves the
 * request and the other finds it moved on: each change checks that the
 * stage it locked is the stage it was asked about, and a stage is never
 * skipped by a second caller. Entering planning asks the org's model for a
 * table of contents first, holding no connection while it waits; the
 * change that follows checks again, under the lock, that the request is
 * still in intake.
 */
#include "svc_stages.h"
#include "svc_build.h"
#include "svc_documents.h"
#include "svc_pl_store.h"
#include "svc_providers.h"
#include "svc_runs.h"

#include <string.h>

/* The longest table of contents asked of the model. */
#define PLAN_MAX_TOKENS 4096

static const svc_stmt_t st_req_product = {
    "svc_pipeline_request_product",
    "UPDATE requests SET product_id = $3 WHERE id = $1 AND org_id = $2 AND product_id IS NULL",
    3, 0
};

static const char plan_prompt[] =
    "You plan software work. From a request, write the table of contents of its planning "
    "documents, in Markdown: a title, one or two sentences on the goal, then a numbered list "
    "of sections, each one part of the work that can be built on its own, with a line on what "
    "it covers. Answer with one JSON object: {\"body\": \"<the table of contents>\"}.";

/* The table of contents a request enters planning with. */
typedef struct {
    const char *body;
    const char *model;          /* the model that wrote it, or NULL for the skeleton */
} draft_t;

/* Without a model: the request itself, and where the sections go. */
static const char *skeleton(apr_pool_t *p, const svc_request_t *req)
{
    return apr_pstrcat(p, "# ", req->title, "\n\n## The request\n\n",
                       *req->body ? req->body : "(no description)",
                       "\n\n## Sections\n\nEach section document of this product becomes one "
                       "build task. Add the sections, then list them here.\n", NULL);
}

/* The model's table of contents, or NULL with why in *pwhy. */
static const char *plan_from(svc_ctx_t *ctx, const svc_llm_reply_t *reply, const char **pwhy)
{
    json_error_t jerr;
    json_t *obj;
    const char *body, *c;

    if (reply->truncated) {
        *pwhy = "it was cut off at max_tokens";
        return NULL;
    }
    obj = svc_json_pool(ctx->pool, json_loads(reply->content, 0, &jerr));
    body = svc_json_str(obj, "body");
    if (!body || !*body) {
        *pwhy = "it has no \"body\" string, or an empty one";
        return NULL;
    }
    if (strlen(body) > ctx->conf->document_limit) {
        *pwhy = "the table of contents is over SvcDocumentLimit";
        return NULL;
    }
    for (c = body; *c; c++) {
        if (((unsigned char)*c < 0x20 && *c != '\t' && *c != '\n' && *c != '\r') || *c == 0x7f) {
            *pwhy = "the table of contents has control characters";
            return NULL;
        }
    }
    return body;
}

/*
 * The table of contents: the skeleton when the org has no default
 * provider; else the model's, asked with no database connection held, its
 * call recorded in the usage table whatever came of it. A call that
 * failed or answered unusably is 502 provider_error, and nothing changes.
 */
static apr_status_t draft_toc(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                              draft_t *d)
{
    svc_provider_t *prov;
    svc_llm_msg_t msg = { .role = "user" };
    svc_llm_request_t lr = { .system = plan_prompt, .messages = &msg, .nmessages = 1,
                             .json = 1, .max_tokens = PLAN_MAX_TOKENS };
    svc_usage_t usage = { .org_id = ctx->org->id, .user_id = ctx->who->user_id,
                          .purpose = "request.plan", .subject_type = "request",
                          .subject_id = req->id };
    svc_llm_reply_t *reply;
    const char *why = NULL;
    apr_status_t rv;

    rv = svc_provider_default(db, ctx->pool, ctx->conf, ctx->org->id, &prov);
    if (rv == SVC_ENOTFOUND) {
        d->body = skeleton(ctx->pool, req);
        d->model = NULL;
        return APR_SUCCESS;
    }
    if (rv == APR_EINVAL) {
        return svc_fail(ctx, 409, "provider_key_unreadable", "The default provider's key cannot "
                        "be opened (the server secret changed since it was set); an admin sets "
                        "it again.");
    }
    if (rv != APR_SUCCESS || (rv = svc_ctx_db_release(ctx)) != APR_SUCCESS) {
        return rv;
    }
    msg.content = apr_pstrcat(ctx->pool, "Request: ", req->title, "\n\n", req->body, NULL);
    d->body = NULL;
    d->model = svc_provider_model(prov);
    if (svc_provider_complete(ctx->pool, ctx->conf, prov, &lr, &reply) == APR_SUCCESS
        && !(d->body = plan_from(ctx, reply, &why))) {
        reply->error_code = "provider_error";
        reply->error = apr_pstrcat(ctx->pool, "the model's answer cannot be used: ", why, NULL);
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_provider_record_usage(db, ctx->pool, prov, &usage, reply)) != APR_SUCCESS) {
        return rv;
    }
    if (!d->body) {
        svc_fail(ctx, 502, "provider_error", "The model provider failed: %s", reply->error);
        ctx->problem->log_detail = apr_pstrcat(ctx->pool, reply->error_code, ": ", reply->error,
                                               NULL);
        return SVC_EPROBLEM;
    }
    return APR_SUCCESS;
}

/* A request that moved on while this change was asked for. */
static apr_status_t moved_on(svc_ctx_t *ctx, const svc_request_t *req, const char *was)
{
    return svc_pl_refuse_one(ctx, "stage", req->stage, "Request %s was in %s when this was "
                             "asked; it moved on to %s meanwhile, and nothing changed.",
                             req->id, was, req->stage);
}

/* Before a change that may cost a model call: the caller may make it at
 * all (developer in the request's project), and the request is open. */
static apr_status_t first_look(svc_ctx_t *ctx, const char *id, svc_db_t **pdb,
                               svc_request_t **preq)
{
    svc_projref_t *proj;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, pdb)) != APR_SUCCESS
        || (rv = svc_request_read(ctx, *pdb, id, 0, preq)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_project_resolve(*pdb, ctx->pool, ctx->org, (*preq)->project_slug,
                             ctx->who->user_id, &proj);
    if (rv != APR_SUCCESS) {
        return rv == SVC_ENOTFOUND ? SVC_ECONFLICT : rv;
    }
    if (proj->prole < SVC_PROLE_DEVELOPER) {
        return svc_fail(ctx, 403, "forbidden", "Your role in project %s is %s; moving its "
                        "requests needs developer or above.", proj->slug,
                        svc_prole_name(proj->prole));
    }
    return svc_request_closed(ctx, *preq);
}

/* Enters build: the documents all approved (else 409 naming each that is
 * not), then the tasks. *ptasks are the new tasks' ids. */
static apr_status_t enter_build(svc_ctx_t *ctx, svc_db_t *db, svc_request_t *req,
                                const char *via, apr_array_header_t **ptasks)
{
    json_t *errors = json_array();
    apr_array_header_t *docs;
    apr_status_t rv = svc_build_check_docs(ctx, db, req, SVC_DOCS_APPROVED, errors, &docs);

    if (rv == APR_SUCCESS && json_array_size(errors)) {
        return svc_pl_refuse(ctx, errors, "Request %s cannot enter build: its documents are not "
                             "all approved.", req->id);
    }
    json_decref(errors);
    if (rv == APR_SUCCESS) {
        rv = svc_build_create_tasks(ctx, db, req, docs, ptasks);
    }
    if (rv == APR_SUCCESS) {
        rv = svc_request_move(ctx, db, req, SVC_STAGE_BUILD, SVC_REQ_ACTIVE, via,
                              "request.stage_changed",
                              json_pack("{s:i}", "tasks", (*ptasks)->nelts));
    }
    return rv;
}

/* Ends a change that went as `rv` says: the events (the stage's, then any
 * new task's), and the request as it is now, the answer. */
static apr_status_t finish(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                           const apr_array_header_t *tasks, apr_status_t rv)
{
    if (rv == APR_SUCCESS) {
        rv = svc_request_announce(ctx, db, req);
    }
    if (rv == APR_SUCCESS && tasks) {
        rv = svc_build_announce_new(ctx, db, req, tasks);
    }
    return rv == APR_SUCCESS ? svc_request_reply(ctx, db, req->id, 200) : rv;
}

/* What an advance saw before its write: the request, and the table of
 * contents drafted for it when it was in intake. */
typedef struct {
    const svc_request_t *seen;
    draft_t draft;
} advance_t;

static apr_status_t advance(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "requestId");
    const advance_t *a = baton;
    apr_array_header_t *tasks = NULL, *docs;
    const char *was, *product, *toc;
    svc_request_t *req;
    json_t *errors;
    apr_status_t rv;

    if ((rv = svc_request_lock(ctx, db, id, SVC_PROLE_DEVELOPER, &req)) != APR_SUCCESS) {
        return rv;
    }
    if (strcmp(req->stage, a->seen->stage) != 0) {
        return moved_on(ctx, req, a->seen->stage);
    }
    was = req->stage;
    errors = svc_json_pool(ctx->pool, json_array());
    switch (svc_stage_index(req->stage)) {
    case 0:     /* intake -> planning: the product and its table of contents */
        if ((rv = svc_documents_plan(ctx, db, req->project_id, req->title, a->draft.body,
                                     a->draft.model, &product, &toc)) == APR_SUCCESS
            && (rv = svc_db_execv(db, &st_req_product, ctx->pool, NULL, req->id, ctx->org->id,
                                  product)) == APR_SUCCESS) {
            req->product_id = product;
            rv = svc_request_move(ctx, db, req, SVC_STAGE_PLANNING, SVC_REQ_ACTIVE, "advance",
                                  "request.stage_changed",
                                  json_pack("{s:s,s:s,s:s?}", "product_id", product,
                                            "toc_id", toc, "model", a->draft.model));
        }
        break;
    case 1:     /* planning -> review: a table of contents and a section */
        rv = svc_build_check_docs(ctx, db, req, SVC_DOCS_PLANNED, errors, &docs);
        if (rv == APR_SUCCESS && json_array_size(errors)) {
            rv = svc_pl_refuse(ctx, json_incref(errors), "Request %s cannot enter review yet.",
                               req->id);
        }
        else if (rv == APR_SUCCESS) {
            rv = svc_request_move(ctx, db, req, SVC_STAGE_REVIEW, SVC_REQ_ACTIVE, "advance",
                                  "request.stage_changed", NULL);
        }
        break;
    case 2:     /* review -> build: every document approved; the tasks */
        rv = enter_build(ctx, db, req, "advance", &tasks);
        break;
    case 3:     /* build -> integration: every task succeeded */
        rv = svc_build_check_tasks(ctx, db, req, errors);
        if (rv == APR_SUCCESS && json_array_size(errors)) {
            rv = svc_pl_refuse(ctx, json_incref(errors), "Request %s cannot enter integration: "
                               "not every build task has succeeded.", req->id);
        }
        else if (rv == APR_SUCCESS) {
            rv = svc_request_move(ctx, db, req, SVC_STAGE_INTEGRATION, SVC_REQ_ACTIVE,
                                  "advance", "request.stage_changed", NULL);
        }
        break;
    default:    /* integration -> done is an approval */
        svc_pl_missing(ctx->pool, errors, "integration", "approval_required", "An admin or a "
                       "maintainer of project %s approves the integration (POST "
                       ".../integration/approve).", req->project_slug);
        rv = svc_pl_refuse(ctx, json_incref(errors), "Request %s leaves %s only through "
                           "integration approval.", req->id, was);
        break;
    }
    return finish(ctx, db, req, tasks, rv);
}

/*
 * Leaving intake asks the model for a table of contents, and one answer is
 * used: the caller claims the request first (svc_model_claim: a statement
 * of its own, nothing held across the call), so simultaneous advances pay
 * for one call and the others are told at once. The claim is given back
 * whatever happened; one that cannot be (the database away) expires.
 */
apr_status_t svc_h_requests_advance(svc_ctx_t *ctx)
{
    const char *id = apr_table_get(ctx->params, "requestId");
    const char *subject, *claim = NULL;
    svc_request_t *seen, *now;
    svc_db_t *db = NULL;
    advance_t a;
    apr_status_t rv;

    memset(&a, 0, sizeof(a));
    if ((rv = first_look(ctx, id, &db, &seen)) != APR_SUCCESS) {
        return rv;
    }
    a.seen = seen;
    if (strcmp(seen->stage, SVC_STAGE_INTAKE) != 0) {
        return svc_write(ctx, advance, &a);
    }
    subject = apr_pstrcat(ctx->pool, "request:", ctx->org->id, "/", id, NULL);
    rv = svc_model_claim(db, ctx->pool, ctx->conf, ctx->org->id, subject, &claim);
    if (rv == SVC_ECONFLICT) {
        return svc_fail(ctx, 409, "conflict", "Request %s is being advanced by another call "
                        "(the model is writing its table of contents); nothing changed. Read "
                        "the request again once that call has answered.", id);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    /* An advance that ended between our first look and the claim (its
     * claim given back already) moved the request on: asking the model now
     * would pay for an answer thrown away. The write below answers as for
     * any advance that was overtaken. */
    if ((rv = svc_request_read(ctx, db, id, 0, &now)) == APR_SUCCESS
        && strcmp(now->stage, seen->stage) == 0) {
        rv = draft_toc(ctx, db, seen, &a.draft);
    }
    if (rv == APR_SUCCESS) {
        rv = svc_write(ctx, advance, &a);
    }
    if (svc_ctx_db(ctx, &db) == APR_SUCCESS) {
        (void)svc_model_unclaim(db, ctx->pool, subject, claim);
    }
    return rv;
}

static apr_status_t advance_to_build(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "requestId");
    apr_array_header_t *tasks = NULL;
    svc_request_t *req;
    apr_status_t rv;

    if ((rv = svc_request_lock(ctx, db, id, SVC_PROLE_DEVELOPER, &req)) != APR_SUCCESS) {
        return rv;
    }
    if (svc_stage_index(req->stage) >= svc_stage_index(SVC_STAGE_BUILD)) {
        rv = svc_pl_refuse_one(ctx, "stage", req->stage, "Request %s is in %s already, past "
                               "review.", req->id, req->stage);
    }
    else {
        rv = enter_build(ctx, db, req, "advance_to_build", &tasks);
    }
    return finish(ctx, db, req, tasks, rv);
}

apr_status_t svc_h_requests_advance_to_build(svc_ctx_t *ctx)
{
    return svc_write(ctx, advance_to_build, NULL);
}

/* Pause (baton non-NULL: to paused) or resume (to active) the build. */
static apr_status_t pause_or_resume(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "requestId");
    int pause = baton != NULL;
    const char *from = pause ? SVC_REQ_ACTIVE : SVC_REQ_PAUSED;
    svc_request_t *req;
    apr_status_t rv;

    if ((rv = svc_request_lock(ctx, db, id, SVC_PROLE_DEVELOPER, &req)) != APR_SUCCESS) {
        return rv;
    }
    if (strcmp(req->stage, SVC_STAGE_BUILD) != 0) {
        rv = svc_pl_refuse_one(ctx, "stage", req->stage, "Only a build is paused and resumed; "
                               "request %s is in %s.", req->id, req->stage);
    }
    else if (strcmp(req->status, from) != 0) {
        rv = svc_pl_refuse_one(ctx, "status", req->status, "The build of request %s is %s "
                               "already.", req->id, req->status);
    }
    else {
        rv = svc_request_move(ctx, db, req, req->stage, pause ? SVC_REQ_PAUSED : SVC_REQ_ACTIVE,
                              pause ? "pause" : "resume",
                              pause ? "request.paused" : "request.resumed", NULL);
    }
    return finish(ctx, db, req, NULL, rv);
}

apr_status_t svc_h_requests_pause(svc_ctx_t *ctx)
{
    static const int pause = 1;

    return svc_write(ctx, pause_or_resume, (void *)&pause);
}

apr_status_t svc_h_requests_resume(svc_ctx_t *ctx)
{
    return svc_write(ctx, pause_or_resume, NULL);
}

/*
 * Cancels the request (any stage but done) and its queued and running
 * runs, in one transaction. The runs' rows are locked before the
 * request's: a run that ends holds its own row and then takes its
 * request's (sql/011's trigger), so this is the order in which the two
 * cannot wait for each other. A run queued between the first look and the
 * request's lock is cancelled too. A request already cancelled starts no
 * run again.
 */
static apr_status_t cancel(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "requestId");
    apr_array_header_t *runs;
    const char **status;
    svc_request_t *req;
    json_t *ids;
    apr_status_t rv;
    int i;

    if ((rv = svc_build_active_runs(ctx, db, id, &runs)) != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < runs->nelts; i++) {
        if ((rv = svc_run_hold(db, ctx->pool, ctx->org->id,
                               APR_ARRAY_IDX(runs, i, const char *))) != APR_SUCCESS) {
            return rv;
        }
    }
    if ((rv = svc_request_lock(ctx, db, id, SVC_PROLE_DEVELOPER, &req)) != APR_SUCCESS
        || (rv = svc_build_active_runs(ctx, db, id, &runs)) != APR_SUCCESS) {
        return rv;
    }
    ids = json_array();
    for (i = 0; i < runs->nelts; i++) {
        json_array_append_new(ids, json_string(APR_ARRAY_IDX(runs, i, const char *)));
    }
    if ((rv = svc_request_move(ctx, db, req, req->stage, SVC_REQ_CANCELLED, "cancel",
                               "request.cancelled", json_pack("{s:o}", "runs", ids)))
        != APR_SUCCESS) {
        return rv;
    }
    status = apr_pcalloc(ctx->pool, sizeof(*status) * (apr_size_t)(runs->nelts + 1));
    for (i = 0; i < runs->nelts && rv == APR_SUCCESS; i++) {
        rv = svc_run_cancel_for(db, ctx->pool, ctx->org->id,
                                APR_ARRAY_IDX(runs, i, const char *), &status[i]);
    }
    /* The events last: the request's, then each run's. */
    if (rv == APR_SUCCESS) {
        rv = svc_request_announce(ctx, db, req);
    }
    for (i = 0; i < runs->nelts && rv == APR_SUCCESS; i++) {
        if (status[i] && strcmp(status[i], "cancelled") == 0) {
            rv = svc_run_announce(db, ctx->pool, ctx->org->id, req->project_id,
                                  APR_ARRAY_IDX(runs, i, const char *), "cancelled");
        }
    }
    return rv == APR_SUCCESS ? svc_request_reply(ctx, db, id, 200) : rv;
}

apr_status_t svc_h_requests_cancel(svc_ctx_t *ctx)
{
    return svc_write(ctx, cancel, NULL);
}

static apr_status_t approve(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "requestId");
    svc_request_t *req;
    apr_status_t rv;

    if ((rv = svc_request_lock(ctx, db, id, SVC_PROLE_MAINTAINER, &req)) != APR_SUCCESS) {
        return rv;
    }
    if (strcmp(req->stage, SVC_STAGE_INTEGRATION) != 0) {
        return svc_pl_refuse_one(ctx, "stage", req->stage, "Integration is approved in "
                                 "integration; request %s is in %s.", req->id, req->stage);
    }
    rv = svc_request_move(ctx, db, req, SVC_STAGE_DONE, SVC_REQ_DONE, "approve",
                          "request.integration_approved", NULL);
    if (rv == APR_SUCCESS) {
        rv = svc_pl_event(ctx, db, req->project_id, "request.decision",
                          json_pack("{s:s,s:s,s:s}", "request_id", req->id, "decision",
                                    "integration_approved", "by", ctx->who->user_id));
    }
    return finish(ctx, db, req, NULL, rv);
}

apr_status_t svc_h_requests_approve(svc_ctx_t *ctx)
{
    return svc_write(ctx, approve, NULL);
}
