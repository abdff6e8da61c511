/*
 * svc_improvements.c: bug reports and feature asks of a project
 * (docs/api/pipeline.md). An improvement is open until an admin or a
 * maintainer of its project decides it, once: approved, it becomes a
 * request of kind "improvement" in intake (each names the other);
 * rejected, it keeps the reason.
 */
#include "svc_improvements.h"
#include "svc_pl_store.h"

#include <string.h>

#define IMPROVEMENT_JSON                                                            \
    "json_build_object('id', i.id, 'project', p.slug, 'kind', i.kind,"              \
    " 'title', i.title, 'body', i.body, 'source', i.source,"                        \
    " 'source_ref', i.source_ref, 'status', i.status, 'reason', i.reason,"          \
    " 'request_id', i.request_id, 'created_by', i.created_by,"                      \
    " 'created_at', svc_ts(i.created_at), 'decided_by', i.decided_by,"              \
    " 'decided_at', svc_ts(i.decided_at))::text"
#define IMPROVEMENT_FROM " FROM improvements i JOIN projects p ON p.id = i.project_id"

static const svc_stmt_t st_imp_list = {
    "svc_pipeline_improvements_list",
    "SELECT " IMPROVEMENT_JSON ", i.seq" IMPROVEMENT_FROM
    " WHERE i.project_id = $1 AND ($2::text IS NULL OR i.status = $2)"
    " AND ($3::text IS NULL OR i.kind = $3) AND ($4::text IS NULL OR i.source = $4)"
    " AND i.seq < $5::bigint ORDER BY i.seq DESC LIMIT $6::int",
    6, SVC_STMT_READ
};

static const svc_stmt_t st_imp_get = {
    "svc_pipeline_improvements_get",
    "SELECT " IMPROVEMENT_JSON IMPROVEMENT_FROM " WHERE i.id = $1 AND i.org_id = $2",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_imp_of_request = {
    "svc_pipeline_improvements_of_request",
    "SELECT coalesce(json_agg(x.j ORDER BY x.seq), '[]')::text FROM (SELECT "
    IMPROVEMENT_JSON "::json AS j, i.seq" IMPROVEMENT_FROM
    " WHERE i.request_id = $1 AND i.org_id = $2) x",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_imp_insert = {
    "svc_pipeline_improvements_insert",
    "INSERT INTO improvements (id, org_id, project_id, kind, title, body, source, created_by)"
    " VALUES ($1, $2, $3, $4, $5, $6, 'user', $7)",
    7, 0
};

/* An incident's: none when the project has one open for the same source. */
static const svc_stmt_t st_imp_incident = {
    "svc_pipeline_improvements_incident",
    "INSERT INTO improvements (id, org_id, project_id, kind, title, body, source, source_ref)"
    " VALUES ($1, $2, $3, $4, $5, $6, 'incident', $7)"
    " ON CONFLICT (project_id, source_ref) WHERE source = 'incident' AND status = 'open'"
    " DO NOTHING RETURNING id",
    7, 0
};

static const svc_stmt_t st_imp_open_incident = {
    "svc_pipeline_improvements_open_incident",
    "SELECT id FROM improvements WHERE project_id = $1 AND org_id = $2 AND source = 'incident'"
    " AND source_ref = $3 AND status = 'open'",
    3, 0
};

static const svc_stmt_t st_imp_note = {
    "svc_pipeline_improvements_note",
    "UPDATE improvements SET body = left(body || E'\\n\\n' || $3, 65536)"
    " WHERE id = $1 AND org_id = $2 AND source = 'incident' AND status = 'open'",
    3, 0
};

static const svc_stmt_t st_imp_lock = {
    "svc_pipeline_improvements_lock",
    "SELECT i.project_id, p.slug, i.kind, i.title, i.body, i.status FROM improvements i"
    " JOIN projects p ON p.id = i.project_id WHERE i.id = $1 AND i.org_id = $2"
    " FOR UPDATE OF i",
    2, 0
};

static const svc_stmt_t st_imp_decide = {
    "svc_pipeline_improvements_decide",
    "UPDATE improvements SET status = $3, reason = $4, request_id = $5, decided_by = $6,"
    " decided_at = now() WHERE id = $1 AND org_id = $2 AND status = 'open'",
    6, 0
};

static const char *const status_values[] = { "open", "approved", "rejected", NULL };

/* An improvement as IMPROVEMENT_JSON builds it. */
static const svc_col_t improvement_keys[] = {
    SVC_COL_ID("imp"),
    { .key = "project", .type = SVC_COL_TEXT, .format = "slug",
      .description = "The project's slug." },
    { .key = "kind", .type = SVC_COL_TEXT, .values = svc_improvement_kinds },
    { .key = "title", .type = SVC_COL_TEXT, .example = "The cart forgets its items" },
    { .key = "body", .type = SVC_COL_TEXT, .example = "After a reload the cart is empty." },
    { .key = "source", .type = SVC_COL_TEXT, .values = svc_improvement_sources,
      .description = "user: filed by a member; incident: by the service, for a deployment's "
        "incident." },
    { .key = "source_ref", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .description = "For an incident: what it is about." },
    { .key = "status", .type = SVC_COL_TEXT, .values = status_values },
    { .key = "reason", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .description = "Why it was rejected." },
    { .key = "request_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "rqs",
      .description = "The request it became, once approved." },
    SVC_COL_CREATED_BY,
    SVC_COL_CREATED_AT,
    { .key = "decided_by", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "usr" },
    { .key = "decided_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    SVC_COL_END
};

const svc_schema_t svc_schema_improvement = { .name = "Improvement", .keys = improvement_keys,
    .description = "A bug report or a feature ask of a project (docs/api/pipeline.md)." };

const svc_field_t svc_body_improvement_file[] = {
    { .name = "kind", .type = SVC_FT_ENUM, .required = 1, .values = svc_improvement_kinds,
      .description = "bug: something does not work as it should; feature: something new." },
    { .name = "title", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 200,
      .description = "1 to 200 characters." },
    { .name = "body", .type = SVC_FT_TEXT, .required = 1, .max = 65536,
      .description = "What happens, or what is wanted, in Markdown, up to 65536 characters." },
    SVC_FIELD_END
};

const svc_field_t svc_body_improvement_reject[] = {
    { .name = "reason", .type = SVC_FT_TEXT, .required = 1, .min = 1, .max = 10000,
      .description = "Why not, 1 to 10000 characters." },
    SVC_FIELD_END
};

const svc_qparam_t svc_query_improvements_list[] = {
    { "status", "string", "Only those that are open, approved or rejected." },
    { "kind", "string", "Only bugs (bug) or features (feature)." },
    { "source", "string", "Only those filed by people (user) or for incidents (incident)." },
    { NULL, NULL, NULL }
};


apr_status_t svc_h_improvements_list(svc_ctx_t *ctx)
{
    const char *status, *kind, *source;

    if (!svc_pl_query_in(ctx, "status", status_values, &status)
        | !svc_pl_query_in(ctx, "kind", svc_improvement_kinds, &kind)
        | !svc_pl_query_in(ctx, "source", svc_improvement_sources, &source)) {
        return SVC_EPROBLEM;
    }
    return svc_reply_list(ctx, &st_imp_list, ctx->project->id, status, kind, source,
                          SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

static apr_status_t reply_improvement(svc_ctx_t *ctx, svc_db_t *db, const char *id, int status)
{
    svc_dbres_t *res;
    apr_status_t rv = svc_org_row(ctx, db, &st_imp_get, "improvement", id, &res);

    return rv == APR_SUCCESS ? svc_reply_text(ctx, status, svc_dbres_str(res, 0, 0)) : rv;
}

static apr_status_t file_improvement(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = svc_id_new(ctx->pool, "imp_");
    const char *kind = svc_json_str(ctx->body, "kind");
    const char *title = svc_json_str(ctx->body, "title");
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_MEMBER, SVC_PROLE_VIEWER)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_imp_insert, ctx->pool, NULL, id, ctx->org->id,
                              ctx->project->id, kind, title, svc_json_str(ctx->body, "body"),
                              ctx->who->user_id)) != APR_SUCCESS
        || (rv = svc_audit_member(ctx, db, "improvement.filed", "improvement", id,
                                  json_pack("{s:s,s:s,s:s,s:s}", "project", ctx->project->slug,
                                            "kind", kind, "title", title, "source", "user")))
           != APR_SUCCESS
        || (rv = svc_pl_event(ctx, db, ctx->project->id, "improvement.filed",
                              json_pack("{s:s,s:s,s:s}", "improvement_id", id, "kind", kind,
                                        "source", "user")))
           != APR_SUCCESS) {
        return rv;
    }
    return reply_improvement(ctx, db, id, 201);
}

apr_status_t svc_h_improvements_file(svc_ctx_t *ctx)
{
    return svc_write(ctx, file_improvement, NULL);
}

/*
 * Approves (baton NULL) or rejects (baton: the reason) an open
 * improvement: its project's maintainers (org admins included) decide,
 * once. Approval makes the request, in the same transaction.
 */
static apr_status_t decide(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "id");
    const char *reason = baton;
    const char *status = reason ? "rejected" : "approved";
    const char *request_id = NULL;
    svc_projref_t *proj;
    svc_request_t req;
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_org_row(ctx, db, &st_imp_lock, "improvement", id, &res)) != APR_SUCCESS) {
        return rv;
    }
    memset(&req, 0, sizeof(req));
    req.project_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
    req.project_slug = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 1));
    req.title = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 3));
    req.body = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 4));
    proj = apr_pcalloc(ctx->pool, sizeof(*proj));
    proj->id = req.project_id;
    proj->slug = req.project_slug;
    ctx->project = proj;
    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_MEMBER, SVC_PROLE_MAINTAINER))
        != APR_SUCCESS) {
        return rv;
    }
    if (strcmp(svc_dbres_str(res, 0, 5), "open") != 0) {
        return svc_pl_refuse_one(ctx, "status", svc_dbres_str(res, 0, 5), "Improvement %s is "
                                 "%s already; an improvement is decided once.", id,
                                 svc_dbres_str(res, 0, 5));
    }
    if (!reason) {
        request_id = svc_id_new(ctx->pool, "rqs_");
        req.id = request_id;
        req.stage = SVC_STAGE_INTAKE;
        req.status = SVC_REQ_ACTIVE;
        if ((rv = svc_request_insert(ctx, db, request_id, req.project_id, "improvement",
                                     req.title, req.body)) != APR_SUCCESS) {
            return rv;
        }
    }
    if ((rv = svc_db_execv(db, &st_imp_decide, ctx->pool, NULL, id, ctx->org->id, status,
                           reason, request_id, ctx->who->user_id)) != APR_SUCCESS
        || (rv = svc_audit_member(ctx, db, reason ? "improvement.rejected" : "improvement.approved",
                                  "improvement", id,
                                  json_pack("{s:s?,s:s?}", "request_id", request_id, "reason",
                                            reason))) != APR_SUCCESS
        || (request_id
            && (rv = svc_audit_member(ctx, db, "request.created", "request", request_id,
                                      json_pack("{s:s,s:s,s:s,s:s}", "project", req.project_slug,
                                                "kind", "improvement", "title", req.title,
                                                "improvement_id", id))) != APR_SUCCESS)
        || (rv = svc_pl_event(ctx, db, req.project_id, "improvement.decision",
                              json_pack("{s:s,s:s,s:s?}", "improvement_id", id, "status",
                                        status, "request_id", request_id))) != APR_SUCCESS
        || (request_id && (rv = svc_request_announce(ctx, db, &req)) != APR_SUCCESS)) {
        return rv;
    }
    return reply_improvement(ctx, db, id, 200);
}

apr_status_t svc_h_improvements_approve(svc_ctx_t *ctx)
{
    return svc_write(ctx, decide, NULL);
}

apr_status_t svc_h_improvements_reject(svc_ctx_t *ctx)
{
    return svc_write(ctx, decide, (void *)svc_json_str(ctx->body, "reason"));
}

apr_status_t svc_improvements_of_request(svc_ctx_t *ctx, svc_db_t *db, const char *request_id,
                                         const char **pjson)
{
    return svc_db_value(db, &st_imp_of_request, ctx->pool, pjson, NULL, request_id,
                        ctx->org->id);
}

apr_status_t svc_improvement_file_incident(svc_db_t *db, apr_pool_t *p,
                                           const svc_incident_t *inc, const char **pid,
                                           int *pcreated)
{
    const char *id = svc_id_new(p, "imp_");
    const char *kind = inc->kind ? inc->kind : "bug";
    svc_actor_t actor = { .kind = "system" };
    svc_dbres_t *res;
    apr_status_t rv;

    *pcreated = 0;
    rv = svc_db_execv(db, &st_imp_incident, p, &res, id, inc->org_id, inc->project_id, kind,
                      inc->title, inc->body ? inc->body : "", inc->source_ref);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        rv = svc_db_execv(db, &st_imp_open_incident, p, &res, inc->project_id, inc->org_id,
                          inc->source_ref);
        if (rv == APR_SUCCESS && svc_dbres_rows(res) != 1) {
            /* Decided between the two statements: file again. */
            rv = SVC_ECONFLICT;
        }
        if (rv == APR_SUCCESS) {
            *pid = apr_pstrdup(p, svc_dbres_str(res, 0, 0));
        }
        return rv;
    }
    rv = svc_audit_write(db, p, &actor, inc->org_id, "improvement.filed", "improvement", id,
                         svc_json_pool(p, json_pack("{s:s,s:s,s:s,s:s}", "kind", kind,
                                                    "title", inc->title, "source", "incident",
                                                    "source_ref", inc->source_ref)));
    if (rv == APR_SUCCESS) {
        rv = svc_event_emit(db, p, inc->org_id, inc->project_id, NULL, "improvement.filed",
                            svc_json_pool(p, json_pack("{s:s,s:s,s:s}", "improvement_id", id,
                                                       "kind", kind, "source", "incident")));
    }
    if (rv == APR_SUCCESS) {
        *pid = id;
        *pcreated = 1;
    }
    return rv;
}

apr_status_t svc_improvement_note_incident(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                           const char *id, const char *note)
{
    return svc_db_execv(db, &st_imp_note, p, NULL, id, org_id, note);
}
