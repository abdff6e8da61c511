/*
 * svc_improvements.h: improvements of a project: filed by members (or by
 * the service, for incidents), approved into a request or rejected
 * (pipeline-private). docs/api/pipeline.md.
 */
#ifndef SVC_IMPROVEMENTS_H
#define SVC_IMPROVEMENTS_H

#include "svc_pipeline.h"

/* Route handlers. */
svc_handler_t svc_h_improvements_list, svc_h_improvements_file, svc_h_improvements_approve,
              svc_h_improvements_reject;

/* The improvements that became `request_id`, as a JSON array (text in ctx->pool). */
apr_status_t svc_improvements_of_request(svc_ctx_t *ctx, svc_db_t *db, const char *request_id,
                                         const char **pjson);

/* The routes' request bodies and query parameters. */
extern const svc_field_t svc_body_improvement_file[], svc_body_improvement_reject[];
extern const svc_qparam_t svc_query_improvements_list[];

/* An improvement. */
extern const svc_schema_t svc_schema_improvement;

#endif /* SVC_IMPROVEMENTS_H */
