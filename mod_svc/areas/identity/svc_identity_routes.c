/*
 * svc_identity_routes.c: the identity area's routes: who am I, personal
 * access tokens, sign-in and sessions. Fields: svc_route.h.
 */
#include "svc_identity.h"
#include "svc_signin.h"
#include "svc_sessions.h"
#include "svc_tokens.h"
#include "svc_users.h"

static const svc_route_t routes[] = {
    /* Account and tokens */
    { .method = "GET", .path = "/api/me", .handler = svc_h_me, .scope = SVC_SCOPE_READ,
      .op_id = "getMe", .tag = "Tokens",
      .summary = "Who am I: user, memberships, and the credential in use" },
    { .method = "GET", .path = "/api/me/tokens", .handler = svc_h_tokens_list,
      .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_PAGED, .op_id = "listTokens", .tag = "Tokens",
      .summary = "List your personal access tokens (metadata only)" },
    { .method = "POST", .path = "/api/me/tokens", .handler = svc_h_tokens_create,
      .scope = SVC_SCOPE_ADMIN, .body = svc_body_token_create, .body_limit = SVC_KB(16),
      .rate_class = "tokens", .success = 201, .op_id = "createToken", .tag = "Tokens",
      .summary = "Create a personal access token; the secret is returned this once" },
    { .method = "DELETE", .path = "/api/me/tokens/:id", .handler = svc_h_tokens_revoke,
      .scope = SVC_SCOPE_ADMIN, .rate_class = "token_revoke", .flags = SVC_RF_RATE_PER_TOKEN,
      .success = 204, .op_id = "revokeToken", .tag = "Tokens",
      .summary = "Revoke a personal access token, effective immediately" },

    /* Sign-in and sessions */
    { .method = "GET", .path = "/auth/login", .handler = svc_h_signin_login, .auth = SVC_AUTH_NONE,
      .rate_class = "signin", .success = 302, .op_id = "signIn", .tag = "Sign-in",
      .query = svc_q_signin_login,
      .summary = "Start signing in: redirects to the code-hosting provider" },
    { .method = "GET", .path = "/auth/callback", .handler = svc_h_signin_callback,
      .auth = SVC_AUTH_NONE, .rate_class = "signin", .flags = SVC_RF_SECRET_QUERY, .success = 302,
      .op_id = "signInCallback", .tag = "Sign-in", .query = svc_q_signin_callback,
      .summary = "The provider's return: opens a session, sets service_session, redirects to "
        "the UI" },
    { .method = "POST", .path = "/auth/logout", .handler = svc_h_signin_logout,
      .scope = SVC_SCOPE_WRITE, .success = 204, .op_id = "signOut", .tag = "Sign-in",
      .summary = "Sign out: ends this session and clears its cookie" },
    { .method = "GET", .path = "/api/me/sessions", .handler = svc_h_sessions_list,
      .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_PAGED, .op_id = "listSessions", .tag = "Sign-in",
      .summary = "List your signed-in sessions; the one in use is marked current" },
    { .method = "DELETE", .path = "/api/me/sessions/:id", .handler = svc_h_sessions_revoke,
      .scope = SVC_SCOPE_ADMIN, .success = 204, .op_id = "revokeSession", .tag = "Sign-in",
      .summary = "End one of your sessions, effective immediately" },
    { .method = "POST", .path = "/api/me/sessions/revoke-others",
      .handler = svc_h_sessions_revoke_others, .scope = SVC_SCOPE_ADMIN,
      .op_id = "revokeOtherSessions", .tag = "Sign-in",
      .summary = "End every session but the one in use" },
    SVC_ROUTE_END,
};

const svc_area_t svc_identity_area = {
    "identity", "Users, personal access tokens, sign-in and web sessions.", routes
};

/* Agents' keys are the deploy area's: the registry adds its verifier. */
const svc_verifiers_t svc_identity_verifiers = {
    .bearer = svc_pat_authenticate, .session = svc_session_authenticate,
    .confirm = svc_pat_confirm
};
