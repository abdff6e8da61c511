/*
 * svc_build.h: what building a request needs (pipeline-private): the
 * checks of its documents, the build tasks made when it enters build, the
 * instructions each task's run gets, run-all, and the tasks as the API
 * shows them. docs/api/pipeline.md.
 */
#ifndef SVC_BUILD_H
#define SVC_BUILD_H

#include "svc_pipeline.h"
#include "svc_pl_store.h"

/* The most a run's instructions may hold, in characters (sql/010). */
#define SVC_RUN_INSTRUCTIONS_MAX 65536

/* How far the documents must have come. */
typedef enum {
    SVC_DOCS_PLANNED = 1,   /* a table of contents and at least one section */
    SVC_DOCS_APPROVED       /* ... and every current version approved, each section fit for a run */
} svc_docs_level_e;

/*
 * Checks the request's documents against `level`, adding what is missing
 * to `errors` (svc_pl_missing); *pdocs (with bodies when APPROVED, NULL
 * without a product) are the product's documents.
 */
apr_status_t svc_build_check_docs(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                                  svc_docs_level_e level, json_t *errors,
                                  apr_array_header_t **pdocs);

/*
 * The instructions of the run of a section's task: the section (title and
 * body), then the request's title and the plan's table of contents for
 * context, cut so the whole stays within SVC_RUN_INSTRUCTIONS_MAX
 * characters. NULL when the section alone does not fit.
 */
const char *svc_build_instructions(apr_pool_t *p, const char *request_title,
                                   const char *section_title, const char *section,
                                   apr_size_t section_len, const char *toc, apr_size_t toc_len);

/*
 * Entering build: one task per section document of `docs` (checked
 * APPROVED), in order, from its approved version. *pids are the new
 * tasks' ids, for svc_build_announce_new after everything else.
 */
apr_status_t svc_build_create_tasks(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                                    const apr_array_header_t *docs, apr_array_header_t **pids);

/* The request.task events of new tasks (pending). */
apr_status_t svc_build_announce_new(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                                    const apr_array_header_t *ids);

/* Adds to `errors` every task of the request that has not succeeded. */
apr_status_t svc_build_check_tasks(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                                   json_t *errors);

/* The request's tasks as the API shows them, each with its runs: a JSON
 * array (text, in ctx->pool). */
apr_status_t svc_build_tasks_json(svc_ctx_t *ctx, svc_db_t *db, const char *request_id,
                                  const char **pjson);

/* The ids of the runs of the request's tasks that are queued or running. */
apr_status_t svc_build_active_runs(svc_ctx_t *ctx, svc_db_t *db, const char *request_id,
                                   apr_array_header_t **pruns);

apr_status_t svc_h_requests_run_all(svc_ctx_t *ctx);

/* A build task; what run-all answers. */
extern const svc_schema_t svc_schema_build_task, svc_schema_run_all;

#endif /* SVC_BUILD_H */
