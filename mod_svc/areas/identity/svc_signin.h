/*
 * svc_signin.h: signing in through the code-hosting provider's OAuth app.
 *
 *   GET /auth/login[?return_to=/path]
 *       -> 302 to the provider's authorize URL, with a fresh `state` (kept
 *          server-side as a hash, bound to this browser by a short-lived
 *          cookie carrying a nonce) and a PKCE S256 challenge.
 *   GET /auth/callback?code=...&state=...
 *       -> consumes the state (once), exchanges the code, reads the user and
 *          their verified primary email, creates, links or updates the user,
 *          opens a session, sets service_session and answers 302 to the UI.
 *   POST /auth/logout
 *       -> revokes the session and clears the cookie.
 *
 * docs/api/signin.md describes the flow for clients and operators.
 */
#ifndef SVC_SIGNIN_H
#define SVC_SIGNIN_H

#include "svc_identity.h"

/* The cookie that binds a sign-in in flight to the browser that started it. */
#define SVC_SIGNIN_COOKIE "svc_signin"
/* How long a sign-in may take between /auth/login and /auth/callback. */
#define SVC_SIGNIN_TTL 600

/* A return_to the sign-in may send the browser back to: a path with one
 * leading slash, printable ASCII without backslashes, at most 2048 bytes. */
int svc_signin_return_to_valid(const char *s);

/* Where the browser goes after signing in: the UI URL itself, or its
 * origin (the site itself, when the UI URL is a path) plus return_to. */
const char *svc_signin_target(apr_pool_t *p, const char *ui_url, const char *return_to);

/* The PKCE verifier of a state (derived, never stored) and its S256 challenge. */
const char *svc_signin_verifier(apr_pool_t *p, const svc_config_t *conf, const char *state);
const char *svc_signin_challenge(apr_pool_t *p, const char *verifier);

/* Route handlers. */
svc_handler_t svc_h_signin_login, svc_h_signin_callback, svc_h_signin_logout;

/* The routes' query parameters. */
extern const svc_qparam_t svc_q_signin_login[], svc_q_signin_callback[];

#endif /* SVC_SIGNIN_H */
