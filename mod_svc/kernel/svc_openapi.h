/*
 * svc_openapi.h: the OpenAPI 3.1 document, generated from the areas' routes.
 */
#ifndef SVC_OPENAPI_H
#define SVC_OPENAPI_H

#include "svc_ktypes.h"
#include "svc_ctx.h"
#include "svc_route.h"

/* The document for every route of `areas` (a NULL-ended list) not flagged
 * hidden, tagged and grouped by area (a new reference). */
json_t *svc_openapi_build(apr_pool_t *p, const svc_area_t *const *areas, const char *server_url);

/* The same as JSON text in p. */
const char *svc_openapi_render(apr_pool_t *p, const svc_area_t *const *areas,
                               const char *server_url);

apr_status_t svc_h_openapi(svc_ctx_t *ctx);

#endif /* SVC_OPENAPI_H */
