/*
 * svc_pl_store.h: what the pipeline's files share (pipeline-private): a
 * request as read or locked, the start of every change of one, recording
 * a change of stage or status with its history, audit entry and event,
 * and refusals that name what is missing.
 */
#ifndef SVC_PL_STORE_H
#define SVC_PL_STORE_H

#include "svc_pipeline.h"

/* Stages and statuses, as stored and shown. */
#define SVC_STAGE_INTAKE      "intake"
#define SVC_STAGE_PLANNING    "planning"
#define SVC_STAGE_REVIEW      "review"
#define SVC_STAGE_BUILD       "build"
#define SVC_STAGE_INTEGRATION "integration"
#define SVC_STAGE_DONE        "done"

#define SVC_REQ_ACTIVE    "active"
#define SVC_REQ_PAUSED    "paused"
#define SVC_REQ_CANCELLED "cancelled"
#define SVC_REQ_DONE      "done"

/* SQL: a request as the API shows it, JSON text, from the requests row `r`
 * and its project `p`; BODY is " 'body', r.body," in details, "" in lists. */
#define SVC_REQUEST_JSON(BODY)                                                      \
    "json_build_object('id', r.id, 'project', p.slug, 'kind', r.kind,"              \
    " 'title', r.title," BODY " 'stage', r.stage, 'status', r.status,"              \
    " 'product_id', r.product_id,"                                                  \
    " 'improvement_id', (SELECT i.id FROM improvements i WHERE i.request_id = r.id),"\
    " 'created_by', r.created_by, 'created_at', svc_ts(r.created_at),"              \
    " 'updated_at', svc_ts(r.updated_at),"                                          \
    " 'integration_approved_by', r.integration_approved_by,"                        \
    " 'integration_approved_at', svc_ts(r.integration_approved_at))::text"

/* The values a request's fields take; a build task's statuses; an
 * improvement's kinds and sources (NULL ended). */
extern const char *const svc_request_stages[], *const svc_request_statuses[],
                  *const svc_request_kinds[], *const svc_task_statuses[],
                  *const svc_improvement_kinds[], *const svc_improvement_sources[];

/* A request (in lists, without its body), and the events of the area. */
extern const svc_schema_t svc_schema_request_summary, svc_schema_request;
extern const svc_event_kind_t svc_pipeline_events[];

/* $1 id, $2 org: the request as the API shows it, JSON text. */
extern const svc_stmt_t svc_pl_request_get;

/* Where a stage is in the order (0 for intake ... 5 for done; -1 unknown). */
int svc_stage_index(const char *stage);

/* A request, as read (or locked) from the database; strings in ctx->pool. */
typedef struct {
    const char *id, *project_id, *project_slug;
    const char *kind, *title, *body;
    const char *stage, *status;
    const char *product_id;     /* NULL before planning */
    int archived;               /* its project is archived */
} svc_request_t;

/* The request `id` of the org (lock: FOR UPDATE, inside a transaction). A
 * 404 problem when there is none. */
apr_status_t svc_request_read(svc_ctx_t *ctx, svc_db_t *db, const char *id, int lock,
                              svc_request_t **preq);

/*
 * The start of every change of a request, in the caller's write
 * (svc_write): the request read, and its project made ctx->project; the
 * caller's org role (at least member) and effective role in that project
 * (at least `least`) checked under the org's lock (svc_access_recheck);
 * then the request's row locked, so changes of one request run one at a
 * time and each sees the last one's result; a request cancelled or done is
 * refused (svc_request_closed).
 */
apr_status_t svc_request_lock(svc_ctx_t *ctx, svc_db_t *db, const char *id,
                              svc_prole_e least, svc_request_t **preq);

/* Inserts a request in `intake` (and the first line of its history). */
apr_status_t svc_request_insert(svc_ctx_t *ctx, svc_db_t *db, const char *id,
                                const char *project_id, const char *kind, const char *title,
                                const char *body);

/*
 * Moves a locked request to `stage` and `status` (either may be its
 * current one), `via` saying how ("advance", "pause", ...): the row, a
 * line of history, and the audit entry `action` with `data` (taken; from,
 * to and via are added). req is updated. The request.stage event is
 * svc_request_announce's, after everything else the transaction writes.
 */
apr_status_t svc_request_move(svc_ctx_t *ctx, svc_db_t *db, svc_request_t *req,
                              const char *stage, const char *status, const char *via,
                              const char *action, json_t *data);

/* The request.stage event: {"request_id", "stage", "status"}. */
apr_status_t svc_request_announce(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req);

/* An event of the org's stream about the request's project (`data` taken). */
apr_status_t svc_pl_event(svc_ctx_t *ctx, svc_db_t *db, const char *project_id,
                          const char *kind, json_t *data);

/* Answers `status` with the request as the API shows it. */
apr_status_t svc_request_reply(svc_ctx_t *ctx, svc_db_t *db, const char *id, int status);

/* The request as the API shows it (JSON text in ctx->pool); SVC_ENOTFOUND. */
apr_status_t svc_request_json(svc_ctx_t *ctx, svc_db_t *db, const char *id,
                              const char **pjson);

/*
 * What is missing for a transition: one entry {"field", "code", "message"}
 * added to `errors`; svc_pl_refuse then answers 409 invalid_status with
 * them (the array is taken).
 */
void svc_pl_missing(apr_pool_t *p, json_t *errors, const char *field, const char *code,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
apr_status_t svc_pl_refuse(svc_ctx_t *ctx, json_t *errors, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 409 invalid_status with the one entry {field, code, message}; the
 * message is the problem's detail too. */
apr_status_t svc_pl_refuse_one(svc_ctx_t *ctx, const char *field, const char *code,
                               const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A 409 invalid_status for a request that is cancelled or done, naming
 * which; APR_SUCCESS for one still open. */
apr_status_t svc_request_closed(svc_ctx_t *ctx, const svc_request_t *req);

/* The query parameter `name` (*pv; NULL when absent): 0, with a 400
 * problem field, when it is given but not one of `values`. */
int svc_pl_query_in(svc_ctx_t *ctx, const char *name, const char *const *values,
                    const char **pv);

#endif /* SVC_PL_STORE_H */
