/*
 * svc_requests.c: listing, creating, reading and updating requests
 * (docs/api/pipeline.md). Their stages are svc_stages.c's.
 */
#include "svc_requests.h"
#include "svc_pl_store.h"

#include <string.h>

static const svc_stmt_t st_req_list = {
    "svc_pipeline_requests_list",
    "SELECT " SVC_REQUEST_JSON("") ", r.seq FROM requests r JOIN projects p ON p.id = r.project_id"
    " WHERE r.org_id = $1 AND ($2::text IS NULL OR p.slug = $2)"
    " AND ($3::text IS NULL OR r.stage = $3) AND ($4::text IS NULL OR r.status = $4)"
    " AND ($5::text IS NULL OR r.kind = $5)"
    " AND r.seq < $6::bigint ORDER BY r.seq DESC LIMIT $7::int",
    7, SVC_STMT_READ
};

static const svc_stmt_t st_key_claim = {
    "svc_pipeline_requests_key_claim",
    "INSERT INTO request_idempotency AS k (org_id, key, fingerprint, request_id)"
    " VALUES ($1, $2, $3::bytea, $4)"
    " ON CONFLICT (org_id, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,"
    " request_id = EXCLUDED.request_id, created_at = now()"
    " WHERE k.created_at < now() - interval '24 hours' RETURNING k.request_id",
    4, 0
};

static const svc_stmt_t st_key_get = {
    "svc_pipeline_requests_key_get",
    "SELECT request_id, fingerprint = $3::bytea FROM request_idempotency"
    " WHERE org_id = $1 AND key = $2",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_req_update = {
    "svc_pipeline_requests_update",
    "UPDATE requests SET title = coalesce($3, title), body = coalesce($4, body),"
    " updated_at = now() WHERE id = $1 AND org_id = $2",
    4, 0
};


const svc_field_t svc_body_request_create[] = {
    { .name = "project", .type = SVC_FT_SLUG, .required = 1, .description = "The project's slug." },
    { .name = "kind", .type = SVC_FT_ENUM, .required = 1, .values = svc_request_kinds,
      .description = "build: something new to build; improvement: a change to what exists." },
    { .name = "title", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 200,
      .description = "1 to 200 characters." },
    { .name = "body", .type = SVC_FT_TEXT, .required = 1, .max = 65536,
      .description = "What is asked for, in Markdown, up to 65536 characters." },
    SVC_FIELD_END
};

const svc_field_t svc_body_request_update[] = {
    { .name = "title", .type = SVC_FT_STRING, .min = 1, .max = 200,
      .description = "1 to 200 characters." },
    { .name = "body", .type = SVC_FT_TEXT, .max = 65536, .description = "Up to 65536 characters." },
    SVC_FIELD_END
};

const svc_qparam_t svc_query_requests_list[] = {
    { "project", "string", "Only the requests of this project (its slug)." },
    { "stage", "string", "Only those in this stage: intake, planning, review, build, "
      "integration, done." },
    { "status", "string", "Only those with this status: active, paused, cancelled, done." },
    { "kind", "string", "Only builds (build) or improvements (improvement)." },
    { NULL, NULL, NULL }
};

apr_status_t svc_h_requests_list(svc_ctx_t *ctx)
{
    const char *project = apr_table_get(ctx->query, "project");
    const char *stage, *status, *kind;

    if (!svc_pl_query_in(ctx, "stage", svc_request_stages, &stage)
        | !svc_pl_query_in(ctx, "status", svc_request_statuses, &status)
        | !svc_pl_query_in(ctx, "kind", svc_request_kinds, &kind)) {
        return SVC_EPROBLEM;
    }
    if (project && !svc_slug_valid(project)) {
        svc_fail_field(ctx, "project", "invalid_slug", "project is a project's slug.");
        return SVC_EPROBLEM;
    }
    return svc_reply_list(ctx, &st_req_list, ctx->org->id, project, stage, status, kind,
                          SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

apr_status_t svc_h_requests_get(svc_ctx_t *ctx)
{
    return svc_reply_one(ctx, "requestId", svc_request_reply);
}

/* A request to create, checked, with its Idempotency-Key. */
typedef struct {
    const char *id;
    svc_idem_t idem;
} creation_t;

static apr_status_t create_request(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    creation_t *c = baton;
    const char *kind = svc_json_str(ctx->body, "kind");
    const char *title = svc_json_str(ctx->body, "title");
    svc_request_t req;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_MEMBER, SVC_PROLE_DEVELOPER)) != APR_SUCCESS
        || (rv = svc_request_insert(ctx, db, c->id, ctx->project->id, kind, title,
                                    svc_json_str(ctx->body, "body"))) != APR_SUCCESS) {
        return rv;
    }
    if ((rv = svc_idem_claim(ctx, db, &c->idem, &st_key_claim, c->id)) != APR_SUCCESS) {
        return rv;
    }
    memset(&req, 0, sizeof(req));
    req.id = c->id;
    req.project_id = ctx->project->id;
    req.stage = SVC_STAGE_INTAKE;
    req.status = SVC_REQ_ACTIVE;
    if ((rv = svc_audit_member(ctx, db, "request.created", "request", c->id,
                               json_pack("{s:s,s:s,s:s}", "project", ctx->project->slug,
                                         "kind", kind, "title", title))) != APR_SUCCESS
        || (rv = svc_request_announce(ctx, db, &req)) != APR_SUCCESS) {
        return rv;
    }
    return svc_request_reply(ctx, db, c->id, 201);
}

apr_status_t svc_h_requests_create(svc_ctx_t *ctx)
{
    const char *slug = svc_json_str(ctx->body, "project");
    svc_projref_t *proj;
    creation_t c;
    svc_db_t *db;
    apr_status_t rv;

    memset(&c, 0, sizeof(c));
    if ((rv = svc_idem_begin(ctx, &c.idem, "requests")) != APR_SUCCESS
        || (rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_project_resolve(db, ctx->pool, ctx->org, slug, ctx->who->user_id, &proj);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "No project %s in %s.", slug, ctx->org->slug);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (proj->prole < SVC_PROLE_DEVELOPER) {
        return svc_fail(ctx, 403, "forbidden", "Your role in project %s is %s; making requests "
                        "needs developer or above.", slug, svc_prole_name(proj->prole));
    }
    if (proj->archived) {
        return svc_fail(ctx, 409, "project_archived", "Project %s is archived; restore it to "
                        "make requests.", slug);
    }
    ctx->project = proj;
    c.id = svc_id_new(ctx->pool, "rqs_");
    return svc_idem_finish(ctx, &c.idem, svc_write(ctx, create_request, &c), &st_key_get,
                           &svc_pl_request_get);
}

/* The audit entry's data of an update: what changed, bodies by their size. */
static json_t *changes(const svc_request_t *req, const char *title, const char *body)
{
    json_t *before = json_object(), *after = json_object();

    if (title) {
        json_object_set_new(before, "title", json_string(req->title));
        json_object_set_new(after, "title", json_string(title));
    }
    if (body) {
        json_object_set_new(before, "body_bytes", json_integer((json_int_t)strlen(req->body)));
        json_object_set_new(after, "body_bytes", json_integer((json_int_t)strlen(body)));
    }
    return json_pack("{s:o,s:o}", "before", before, "after", after);
}

static apr_status_t update_request(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "requestId");
    const char *title = svc_json_str(ctx->body, "title");
    const char *body = svc_json_str(ctx->body, "body");
    svc_request_t *req;
    apr_status_t rv;

    if ((rv = svc_request_lock(ctx, db, id, SVC_PROLE_DEVELOPER, &req)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_req_update, ctx->pool, NULL, id, ctx->org->id, title,
                              body)) != APR_SUCCESS
        || (rv = svc_audit_member(ctx, db, "request.updated", "request", id,
                                  changes(req, title, body))) != APR_SUCCESS) {
        return rv;
    }
    return svc_request_reply(ctx, db, id, 200);
}

apr_status_t svc_h_requests_update(svc_ctx_t *ctx)
{
    if (!svc_json_str(ctx->body, "title") && !svc_json_str(ctx->body, "body")) {
        svc_fail_field(ctx, "title", "required", "Give title, body or both.");
        return SVC_EPROBLEM;
    }
    return svc_write(ctx, update_request, NULL);
}
