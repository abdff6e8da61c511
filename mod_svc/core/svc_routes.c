/*
 * svc_routes.c: THE route table. One row per endpoint; the router, the
 * authorizer, the OpenAPI document and the conformance tests all read it.
 *
 * Columns: method, path, handler, auth, least PAT scope, least org role,
 * body schema, body cap (0: SvcBodyLimit), rate class, flags, success
 * status, operationId, summary, tag, extra query parameters.
 */
#include "svc_route.h"
#include "svc_health.h"
#include "svc_json.h"
#include "svc_openapi.h"
#include "svc_tokens.h"
#include "svc_users.h"

#define KB(n) ((apr_size_t)(n) * 1024)

const svc_route_t svc_routes[] = {
    /* Service */
    { "GET", "/api/openapi.json", svc_h_openapi, SVC_AUTH_NONE, SVC_SCOPE_NONE,
      SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_NO_DB, 200, "getOpenApi",
      "This OpenAPI document", "Service", NULL },
    { "GET", "/internal/health", svc_h_health, SVC_AUTH_INTERNAL, SVC_SCOPE_NONE,
      SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_HIDDEN | SVC_RF_NO_DB, 200, "getHealth",
      "Readiness: database reachable at the needed schema version", "Service", NULL },

    /* Account and tokens */
    { "GET", "/api/me", svc_h_me, SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_NONE,
      NULL, 0, NULL, 0, 200, "getMe",
      "Who am I: user, memberships, and the credential in use", "Tokens", NULL },
    { "GET", "/api/me/tokens", svc_h_tokens_list, SVC_AUTH_USER, SVC_SCOPE_ADMIN,
      SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_PAGED, 200, "listTokens",
      "List your personal access tokens (metadata only)", "Tokens", NULL },
    { "POST", "/api/me/tokens", svc_h_tokens_create, SVC_AUTH_USER, SVC_SCOPE_ADMIN,
      SVC_ROLE_NONE, svc_body_token_create, KB(16), "tokens", 0, 201, "createToken",
      "Create a personal access token; the secret is returned this once", "Tokens", NULL },
    { "DELETE", "/api/me/tokens/:id", svc_h_tokens_revoke, SVC_AUTH_USER, SVC_SCOPE_ADMIN,
      SVC_ROLE_NONE, NULL, 0, "tokens", 0, 204, "revokeToken",
      "Revoke a personal access token, effective immediately", "Tokens", NULL },

    { NULL, NULL, NULL, 0, 0, 0, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL }
};
