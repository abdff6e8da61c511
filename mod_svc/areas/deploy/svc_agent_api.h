/*
 * svc_agent_api.h: the handlers of /api/agent/... (svc_agent_api.c).
 */
#ifndef SVC_AGENT_API_H
#define SVC_AGENT_API_H

#include "svc_deploy.h"

/* The routes' request bodies and query parameters. */
extern const svc_field_t svc_body_agent_heartbeat[], svc_body_agent_report[];
extern const svc_qparam_t svc_query_agent_work[];

/* Route handlers. */
svc_handler_t svc_h_agent_view, svc_h_agent_work_stream, svc_h_agent_heartbeat, svc_h_agent_report,
              svc_h_agent_bundle;

#endif /* SVC_AGENT_API_H */
