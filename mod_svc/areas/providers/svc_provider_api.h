/*
 * svc_provider_api.h: the /providers endpoints (providers-private).
 */
#ifndef SVC_PROVIDER_API_H
#define SVC_PROVIDER_API_H

#include "svc_providers.h"

apr_status_t svc_h_providers_list(svc_ctx_t *ctx);
apr_status_t svc_h_providers_create(svc_ctx_t *ctx);
apr_status_t svc_h_providers_get(svc_ctx_t *ctx);
apr_status_t svc_h_providers_update(svc_ctx_t *ctx);
apr_status_t svc_h_providers_delete(svc_ctx_t *ctx);
apr_status_t svc_h_providers_default(svc_ctx_t *ctx);
apr_status_t svc_h_providers_test(svc_ctx_t *ctx);

extern const svc_field_t svc_body_provider_create[];
extern const svc_field_t svc_body_provider_update[];

/* A provider; what testing one showed. */
extern const svc_schema_t svc_schema_provider;
extern const svc_schema_t svc_schema_provider_test;

#endif /* SVC_PROVIDER_API_H */
