/*
 * svc_provider_api.h: the /providers endpoints (providers-private).
 */
#ifndef SVC_PROVIDER_API_H
#define SVC_PROVIDER_API_H

#include "svc_providers.h"

/* Route handlers. */
svc_handler_t svc_h_providers_list, svc_h_providers_create, svc_h_providers_get,
              svc_h_providers_update, svc_h_providers_delete, svc_h_providers_default,
              svc_h_providers_test;

/* The routes' request bodies. */
extern const svc_field_t svc_body_provider_create[], svc_body_provider_update[];

/* A provider; what testing one showed. */
extern const svc_schema_t svc_schema_provider, svc_schema_provider_test;

#endif /* SVC_PROVIDER_API_H */
