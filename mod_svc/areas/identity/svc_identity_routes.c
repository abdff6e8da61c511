/*
 * svc_identity_routes.c: the identity area's routes: who am I, personal
 * access tokens, sign-in and sessions. Fields: svc_route.h.
 */
#include "svc_identity.h"
#include "svc_signin.h"
#include "svc_sessions.h"
#include "svc_tokens.h"
#include "svc_users.h"

/* The sign-in flow's cookies: the flow's nonce, then the session. */
static const svc_header_t set_cookie[] = {
    { .name = "Set-Cookie", .type = SVC_COL_TEXT, .required = 1,
      .description = "The cookie the flow needs next (HttpOnly, Secure where the site is).",
      .example = "svc_signin=3kTq0dKc5gWm1xQ9aZr2Lb; Path=/auth/; Max-Age=600; HttpOnly; "
        "SameSite=Lax; Secure" },
    { .name = NULL }
};

static const svc_route_t routes[] = {
    /* Account and tokens */
    { .method = "GET", .path = "/api/me", .handler = svc_h_me, .scope = SVC_SCOPE_READ,
      .op_id = "getMe", .tag = "Tokens", .response = &svc_schema_me,
      .summary = "Who am I: user, memberships, and the credential in use" },
    { .method = "GET", .path = "/api/me/tokens", .handler = svc_h_tokens_list,
      .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_PAGED, .op_id = "listTokens", .tag = "Tokens",
      .response = &svc_schema_token,
      .summary = "List your personal access tokens (metadata only)",
      .description = "A token bound to an organization sees the tokens bound to it only." },
    { .method = "POST", .path = "/api/me/tokens", .handler = svc_h_tokens_create,
      .scope = SVC_SCOPE_ADMIN, .body = svc_body_token_create, .body_limit = SVC_KB(16),
      .body_example =
          "{\"name\": \"CI deploy\", \"scope\": \"write\", \"org\": \"acme\", "
          "\"expires_in_days\": 90}",
      .rate_class = "tokens", .success = 201, .op_id = "createToken", .tag = "Tokens",
      .response = &svc_schema_token_created,
      .summary = "Create a personal access token; the secret is returned this once",
      .description = "A token may not make one that reaches further than itself: bound to "
        "its organization if it is bound, and expiring no later than it does (403 "
        "`insufficient_scope`)." },
    { .method = "DELETE", .path = "/api/me/tokens/:id", .handler = svc_h_tokens_revoke,
      .scope = SVC_SCOPE_ADMIN, .rate_class = "token_revoke", .flags = SVC_RF_RATE_PER_TOKEN,
      .success = 204, .op_id = "revokeToken", .tag = "Tokens",
      .summary = "Revoke a personal access token, effective immediately" },

    /* Sign-in and sessions */
    { .method = "GET", .path = "/auth/login", .handler = svc_h_signin_login, .auth = SVC_AUTH_NONE,
      .rate_class = "signin", .success = 302, .op_id = "signIn", .tag = "Sign-in",
      .query = svc_q_signin_login, .headers = set_cookie,
      .summary = "Start signing in: redirects to the code-hosting provider",
      .description = "503 `sign_in_not_configured` where the server has no OAuth app." },
    { .method = "GET", .path = "/auth/callback", .handler = svc_h_signin_callback,
      .auth = SVC_AUTH_NONE, .rate_class = "signin", .flags = SVC_RF_SECRET_QUERY, .success = 302,
      .op_id = "signInCallback", .tag = "Sign-in", .query = svc_q_signin_callback,
      .headers = set_cookie, .answers = SVC_ANS_DENIED | SVC_ANS_CONFLICT | SVC_ANS_PROVIDER,
      .summary = "The provider's return: opens a session, sets service_session, redirects to "
        "the UI",
      .description = "Refusals: 400 `invalid_state` (a flow this browser did not start, or "
        "an old one), 401 `sign_in_denied` and `code_rejected`, 403 `email_not_verified` and "
        "`no_primary_email`, 409 `email_in_use` and `account_exists` (docs/api/signin.md); "
        "502 and 504 when the provider fails." },
    { .method = "POST", .path = "/auth/logout", .handler = svc_h_signin_logout,
      .scope = SVC_SCOPE_WRITE, .success = 204, .op_id = "signOut", .tag = "Sign-in",
      .headers = set_cookie,
      .summary = "Sign out: ends this session and clears its cookie",
      .description = "A personal access token is not a session: 400 `not_a_session`." },
    { .method = "GET", .path = "/api/me/sessions", .handler = svc_h_sessions_list,
      .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_PAGED, .op_id = "listSessions", .tag = "Sign-in",
      .response = &svc_schema_session,
      .summary = "List your signed-in sessions; the one in use is marked current" },
    { .method = "DELETE", .path = "/api/me/sessions/:id", .handler = svc_h_sessions_revoke,
      .scope = SVC_SCOPE_ADMIN, .success = 204, .op_id = "revokeSession", .tag = "Sign-in",
      .summary = "End one of your sessions, effective immediately" },
    { .method = "POST", .path = "/api/me/sessions/revoke-others",
      .handler = svc_h_sessions_revoke_others, .scope = SVC_SCOPE_ADMIN,
      .op_id = "revokeOtherSessions", .tag = "Sign-in", .response = &svc_schema_sessions_revoked,
      .summary = "End every session but the one in use" },
    SVC_ROUTE_END,
};

static const svc_tag_t tags[] = {
    { "Tokens", "Who you are, and your personal access tokens: secrets for programs, each "
      "with a scope (read, write, admin), optionally bound to one organization and expiring "
      "(docs/api/tokens.md)." },
    { "Sign-in", "Signing in with the code-hosting provider (OAuth with PKCE), and your "
      "browser sessions (docs/api/signin.md)." },
    { NULL, NULL }
};

const svc_area_t svc_identity_area = {
    .name = "identity", .description = "Users, personal access tokens, sign-in and web sessions.",
    .routes = routes, .tags = tags
};

/* Agents' keys are the deploy area's: the registry adds its verifier. */
const svc_verifiers_t svc_identity_verifiers = {
    .bearer = svc_pat_authenticate, .session = svc_session_authenticate,
    .confirm = svc_pat_confirm
};
