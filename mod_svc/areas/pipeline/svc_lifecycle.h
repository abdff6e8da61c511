/*
 * svc_lifecycle.h: everything about one request in one answer, for the
 * page that shows it (pipeline-private). docs/api/pipeline.md.
 */
#ifndef SVC_LIFECYCLE_H
#define SVC_LIFECYCLE_H

#include "svc_pipeline.h"

apr_status_t svc_h_requests_lifecycle(svc_ctx_t *ctx);

/* Its answer. */
extern const svc_schema_t svc_schema_lifecycle;

#endif /* SVC_LIFECYCLE_H */
