/*
 * svc_run_api.h: the runs of a project: start (with Idempotency-Key), list,
 * detail, cancel, and the run's live event stream; and the run's log and
 * artifact (org-level routes). docs/api/runs.md.
 */
#ifndef SVC_RUN_API_H
#define SVC_RUN_API_H

#include "svc_runs.h"

apr_status_t svc_h_runs_list(svc_ctx_t *ctx);
apr_status_t svc_h_runs_create(svc_ctx_t *ctx);
apr_status_t svc_h_runs_get(svc_ctx_t *ctx);
apr_status_t svc_h_runs_cancel(svc_ctx_t *ctx);
apr_status_t svc_h_runs_events(svc_ctx_t *ctx);
apr_status_t svc_h_runs_logs(svc_ctx_t *ctx);
apr_status_t svc_h_runs_artifact(svc_ctx_t *ctx);

extern const svc_field_t svc_body_run_create[];
extern const svc_qparam_t svc_query_runs_list[];
extern const svc_qparam_t svc_query_runs_events[];
extern const svc_qparam_t svc_query_runs_logs[];

#endif /* SVC_RUN_API_H */
