/*
 * svc_ratelimit.h: rate limits shared by every httpd process and node.
 *
 * Counters live in PostgreSQL (fixed windows of the class's period), so a
 * limit holds across processes and machines without anything of our own
 * to cluster. Over the limit: 429, code rate_limited, Retry-After.
 */
#ifndef SVC_RATELIMIT_H
#define SVC_RATELIMIT_H

#include "svc_ktypes.h"

/* Counts one event of `class_name` for `subject`; 429 problem when over. */
apr_status_t svc_rate_hit(svc_ctx_t *ctx, const char *class_name, const char *subject);

/*
 * Whether `name` is a rate class (SvcRateLimit may set it): one of the
 * defaults (svc_config.h), or one a route of `areas` (NULL-ended) counts
 * against. *pnames lists them all (from p), for the message that refuses
 * another name.
 */
int svc_rate_class_known(const char *name, const svc_area_t *const *areas, apr_pool_t *p,
                         const char **pnames);

#endif /* SVC_RATELIMIT_H */
