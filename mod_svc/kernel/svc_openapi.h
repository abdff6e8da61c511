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

/* The same, and in *perr the first thing it could not say truthfully
 * (NULL when there is none): see svc_openapi_check. */
json_t *svc_openapi_build_checked(apr_pool_t *p, const svc_area_t *const *areas,
                                  const char *server_url, const char **perr);

/*
 * NULL when the document describes every route of `areas`, or what it
 * cannot describe: a route that answers JSON without naming its schema
 * (.response), one whose tag its area does not describe, one without an
 * operation id or summary, two schemas of one name, an idempotent route
 * that does not create, a stream whose events no area writes. The server
 * refuses to start on one (mod_svc.c), as on an invalid route table.
 */
const char *svc_openapi_check(apr_pool_t *p, const svc_area_t *const *areas);

/* The same as JSON text in p. */
const char *svc_openapi_render(apr_pool_t *p, const svc_area_t *const *areas,
                               const char *server_url);

apr_status_t svc_h_openapi(svc_ctx_t *ctx);

#endif /* SVC_OPENAPI_H */
