/*
 * svc_identity_routes.c: the identity area's routes: who am I, personal
 * access tokens, sign-in and sessions. Columns: svc_route.h.
 */
#include "svc_identity.h"
#include "svc_signin.h"
#include "svc_sessions.h"
#include "svc_tokens.h"
#include "svc_users.h"

static const svc_route_t routes[] = {
    /* Account and tokens */
    { "GET", "/api/me", svc_h_me, SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_NONE,
      NULL, 0, NULL, 0, 200, "getMe",
      "Who am I: user, memberships, and the credential in use", "Tokens", NULL, SVC_PROLE_NONE },
    { "GET", "/api/me/tokens", svc_h_tokens_list, SVC_AUTH_USER, SVC_SCOPE_ADMIN,
      SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_PAGED, 200, "listTokens",
      "List your personal access tokens (metadata only)", "Tokens", NULL, SVC_PROLE_NONE },
    { "POST", "/api/me/tokens", svc_h_tokens_create, SVC_AUTH_USER, SVC_SCOPE_ADMIN,
      SVC_ROLE_NONE, svc_body_token_create, SVC_KB(16), "tokens", 0, 201, "createToken",
      "Create a personal access token; the secret is returned this once", "Tokens",
      NULL, SVC_PROLE_NONE },
    { "DELETE", "/api/me/tokens/:id", svc_h_tokens_revoke, SVC_AUTH_USER, SVC_SCOPE_ADMIN,
      SVC_ROLE_NONE, NULL, 0, "token_revoke", SVC_RF_RATE_PER_TOKEN, 204, "revokeToken",
      "Revoke a personal access token, effective immediately", "Tokens", NULL, SVC_PROLE_NONE },

    /* Sign-in and sessions */
    { "GET", "/auth/login", svc_h_signin_login, SVC_AUTH_NONE, SVC_SCOPE_NONE, SVC_ROLE_NONE,
      NULL, 0, "signin", 0, 302, "signIn",
      "Start signing in: redirects to the code-hosting provider", "Sign-in",
      svc_q_signin_login, SVC_PROLE_NONE },
    { "GET", "/auth/callback", svc_h_signin_callback, SVC_AUTH_NONE, SVC_SCOPE_NONE,
      SVC_ROLE_NONE, NULL, 0, "signin", SVC_RF_SECRET_QUERY, 302, "signInCallback",
      "The provider's return: opens a session, sets service_session, redirects to the UI",
      "Sign-in", svc_q_signin_callback, SVC_PROLE_NONE },
    { "POST", "/auth/logout", svc_h_signin_logout, SVC_AUTH_USER, SVC_SCOPE_WRITE,
      SVC_ROLE_NONE, NULL, 0, NULL, 0, 204, "signOut",
      "Sign out: ends this session and clears its cookie", "Sign-in", NULL, SVC_PROLE_NONE },
    { "GET", "/api/me/sessions", svc_h_sessions_list, SVC_AUTH_USER, SVC_SCOPE_ADMIN,
      SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_PAGED, 200, "listSessions",
      "List your signed-in sessions; the one in use is marked current", "Sign-in",
      NULL, SVC_PROLE_NONE },
    { "DELETE", "/api/me/sessions/:id", svc_h_sessions_revoke, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_NONE, NULL, 0, NULL, 0, 204, "revokeSession",
      "End one of your sessions, effective immediately", "Sign-in", NULL, SVC_PROLE_NONE },
    { "POST", "/api/me/sessions/revoke-others", svc_h_sessions_revoke_others, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_NONE, NULL, 0, NULL, 0, 200, "revokeOtherSessions",
      "End every session but the one in use", "Sign-in", NULL, SVC_PROLE_NONE },
    { NULL, NULL, NULL, 0, 0, 0, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, SVC_PROLE_NONE }
};

const svc_area_t svc_identity_area = {
    "identity", "Users, personal access tokens, sign-in and web sessions.", routes
};

const svc_verifiers_t svc_identity_verifiers = {
    svc_pat_authenticate, svc_session_authenticate, svc_pat_confirm
};
