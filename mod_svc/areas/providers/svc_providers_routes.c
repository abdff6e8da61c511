/*
 * svc_providers_routes.c: the providers area's routes. Columns: svc_route.h;
 * who may call what, and why: docs/authorization.md.
 */
#include "svc_providers.h"
#include "svc_provider_api.h"

static const svc_route_t routes[] = {
    /* Admins manage providers (they hold the org's keys and its bill);
     * members may see which exist, and use the default through the
     * features that call a model. */
    { "GET", "/api/orgs/:orgSlug/providers", svc_h_providers_list, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_MEMBER, NULL, 0, NULL, SVC_RF_PAGED, 200, "listProviders",
      "The organization's model providers (never their keys)", "LLM providers", NULL,
      SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/providers", svc_h_providers_create, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, svc_body_provider_create, SVC_KB(16), NULL, 0, 201,
      "createProvider", "Register a model provider with its key; the first one becomes the "
      "default", "LLM providers", NULL, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/providers/:id", svc_h_providers_get, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_MEMBER, NULL, 0, NULL, 0, 200, "getProvider",
      "A model provider (its key hint, never the key)", "LLM providers", NULL, SVC_PROLE_NONE },
    { "PATCH", "/api/orgs/:orgSlug/providers/:id", svc_h_providers_update, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, svc_body_provider_update, SVC_KB(16), NULL, 0, 200,
      "updateProvider", "Rename a provider, point it elsewhere, change its model or replace "
      "its key", "LLM providers", NULL, SVC_PROLE_NONE },
    { "DELETE", "/api/orgs/:orgSlug/providers/:id", svc_h_providers_delete, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, NULL, 0, NULL, 0, 204, "deleteProvider",
      "Delete a provider (deleting the default leaves none)", "LLM providers", NULL,
      SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/providers/:id/test", svc_h_providers_test, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, NULL, 0, "models", 0, 200, "testProvider",
      "Call the provider: list its models, then a one-token completion", "LLM providers",
      NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/providers/:id/default", svc_h_providers_default,
      SVC_AUTH_USER, SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, NULL, 0, NULL, 0, 200,
      "setDefaultProvider", "Make this the organization's default provider", "LLM providers",
      NULL, SVC_PROLE_NONE },
    { NULL, NULL, NULL, 0, 0, 0, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, SVC_PROLE_NONE }
};

const svc_area_t svc_providers_area = {
    "providers", "Bring-your-own model providers: OpenAI-compatible servers and Anthropic, "
    "their sealed keys, tests and the organization's default.", routes
};
