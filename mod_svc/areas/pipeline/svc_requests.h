/*
 * svc_requests.h: requests: list, create (with Idempotency-Key), detail,
 * update (pipeline-private). docs/api/pipeline.md.
 */
#ifndef SVC_REQUESTS_H
#define SVC_REQUESTS_H

#include "svc_pipeline.h"

/* Route handlers. */
svc_handler_t svc_h_requests_list, svc_h_requests_create, svc_h_requests_get, svc_h_requests_update;

/* The routes' request bodies and query parameters. */
extern const svc_field_t svc_body_request_create[], svc_body_request_update[];
extern const svc_qparam_t svc_query_requests_list[];

#endif /* SVC_REQUESTS_H */
