/*
 * svc_health.h: readiness for operators and load balancers.
 */
#ifndef SVC_HEALTH_H
#define SVC_HEALTH_H

#include "svc_ktypes.h"
#include "svc_ctx.h"

/* GET /internal/health: 200 when the database answers at the schema
 * version this build needs; 503 otherwise. */
apr_status_t svc_h_health(svc_ctx_t *ctx);

/*
 * GET /internal/ready: whether this node can serve, for a load balancer:
 * the database answers, at the schema this build needs, and the run
 * supervisor (on a node that runs one) went round its loop within its
 * lease. 503 not_ready otherwise, its errors naming each thing wrong
 * (field: database, schema, supervisor).
 */
apr_status_t svc_h_ready(svc_ctx_t *ctx);

/*
 * GET /internal/metrics: the server's metrics (svc_metrics.h) in
 * Prometheus's text format, and the run queue read at scrape time.
 */
apr_status_t svc_h_metrics(svc_ctx_t *ctx);

#endif /* SVC_HEALTH_H */
