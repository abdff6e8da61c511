/*
 * svc_telemetry.h: a deployment's telemetry (svc_telemetry.c): logs on
 * request, resource samples, health probes and the incidents filed from
 * them; the users' routes and the agents' (docs/api/deployments.md,
 * "Telemetry").
 */
#ifndef SVC_TELEMETRY_H
#define SVC_TELEMETRY_H

#include "svc_deploy.h"

/* Most lines a member may ask of each replica, and the default. */
#define TELEMETRY_LINES_MAX     5000
#define TELEMETRY_LINES_DEFAULT 500
/* Most bytes of one replica's log kept from an upload (its last lines). */
#define TELEMETRY_LOG_REPLICA_MAX (256 * 1024)
/* Samples and probes are kept this long (days). */
#define TELEMETRY_KEEP_DAYS 30

/* The routes' request bodies and query parameters. */
extern const svc_field_t svc_body_log_request[];
extern const svc_qparam_t svc_query_logs[], svc_query_metrics[], svc_query_uptime[];
extern const svc_field_t svc_body_agent_logs[], svc_body_agent_telemetry[];

/* Route handlers. */
svc_handler_t svc_h_deployments_request_logs, svc_h_deployments_logs, svc_h_deployments_metrics,
              svc_h_deployments_uptime, svc_h_agent_logs_upload, svc_h_agent_telemetry;

/* Drops samples, probes and log uploads older than TELEMETRY_KEEP_DAYS;
 * *pdropped: how many rows went. */
apr_status_t svc_telemetry_sweep(svc_db_t *db, apr_pool_t *p, apr_int64_t *pdropped);

#endif /* SVC_TELEMETRY_H */
