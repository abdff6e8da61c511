/*
 * svc_run_api.h: the runs of a project: start (with Idempotency-Key), list,
 * detail, cancel, and the run's live event stream; and the run's log and
 * artifact (org-level routes). docs/api/runs.md.
 */
#ifndef SVC_RUN_API_H
#define SVC_RUN_API_H

#include "svc_runs.h"

/* Route handlers. */
svc_handler_t svc_h_runs_list, svc_h_runs_create, svc_h_runs_get, svc_h_runs_cancel,
              svc_h_runs_events, svc_h_runs_logs, svc_h_runs_artifact;

/* The routes' request bodies and query parameters. */
extern const svc_field_t svc_body_run_create[];
extern const svc_qparam_t svc_query_runs_list[], svc_query_runs_events[], svc_query_runs_logs[];

#endif /* SVC_RUN_API_H */
