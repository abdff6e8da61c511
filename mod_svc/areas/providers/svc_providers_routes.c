/*
 * svc_providers_routes.c: the providers area's routes. Fields: svc_route.h;
 * who may call what, and why: docs/authorization.md.
 */
#include "svc_providers.h"
#include "svc_provider_api.h"

static const svc_route_t routes[] = {
    /* Admins manage providers (they hold the org's keys and its bill);
     * members may see which exist, and use the default through the
     * features that call a model. */
    { .method = "GET", .path = "/api/orgs/:orgSlug/providers", .handler = svc_h_providers_list,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_MEMBER, .flags = SVC_RF_PAGED,
      .op_id = "listProviders", .response = &svc_schema_provider,
      .summary = "The organization's model providers (never their keys)" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/providers", .handler = svc_h_providers_create,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .body = svc_body_provider_create,
      .body_example =
          "{\"name\": \"OpenAI\", \"kind\": \"openai\", \"model\": \"gpt-4o-mini\", "
          "\"api_key\": \"sk-proj-...\"}",
      .body_limit = SVC_KB(16), .success = 201, .op_id = "createProvider",
      .response = &svc_schema_provider,
      .summary = "Register a model provider with its key; the first one becomes the default" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/providers/:id", .handler = svc_h_providers_get,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_MEMBER, .op_id = "getProvider",
      .response = &svc_schema_provider,
      .summary = "A model provider (its key hint, never the key)" },
    { .method = "PATCH", .path = "/api/orgs/:orgSlug/providers/:id",
      .handler = svc_h_providers_update, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN,
      .body = svc_body_provider_update, .body_limit = SVC_KB(16), .op_id = "updateProvider",
      .body_example = "{\"model\": \"gpt-4o\"}",
      .response = &svc_schema_provider,
      .summary = "Rename a provider, point it elsewhere, change its model or replace its key" },
    { .method = "DELETE", .path = "/api/orgs/:orgSlug/providers/:id",
      .handler = svc_h_providers_delete, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN,
      .success = 204, .op_id = "deleteProvider",
      .summary = "Delete a provider (deleting the default leaves none)" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/providers/:id/test",
      .handler = svc_h_providers_test, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN,
      .rate_class = "models", .op_id = "testProvider", .response = &svc_schema_provider_test,
      .summary = "Call the provider: list its models, then a one-token completion" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/providers/:id/default",
      .handler = svc_h_providers_default, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN,
      .op_id = "setDefaultProvider", .response = &svc_schema_provider,
      .summary = "Make this the organization's default provider" },
    SVC_ROUTE_END,
};

static const svc_tag_t tags[] = {
    { "LLM providers", "The organization's own model providers (OpenAI-compatible servers "
      "and Anthropic) with their keys, sealed at rest and never shown again; the default is "
      "what the service's features call (docs/api/providers.md)." },
    { NULL, NULL }
};

const svc_area_t svc_providers_area = { .name = "providers", .routes = routes, .tags = tags,
    .description = "Bring-your-own model providers: OpenAI-compatible servers and Anthropic, "
        "their sealed keys, tests and the organization's default." };
