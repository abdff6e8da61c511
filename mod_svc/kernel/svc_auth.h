/*
 * svc_auth.h: who is calling, and may they call this route.
 *
 * The effective right of a request is the intersection of the token's
 * scope (a session counts as admin), the token's org binding, and the
 * caller's role in the org the route addresses. Cross-tenant access
 * answers 404, so ids and slugs in other orgs are not confirmed to exist.
 */
#ifndef SVC_AUTH_H
#define SVC_AUTH_H

#include "svc_ktypes.h"
#include "svc_ctx.h"

#define SVC_SESSION_COOKIE "service_session"

/*
 * How principals are verified. The kernel knows where credentials come
 * from (the Authorization header, the session cookie) but not what makes
 * them good: an area provides that (identity: svc_identity_verifiers) and
 * the configuration carries it (svc_config_t.verifiers), so the kernel
 * calls down into no area.
 */
struct svc_verifiers_t {
    /* A bearer token from "Authorization: Bearer ...": on success *pwho. */
    apr_status_t (*bearer)(svc_ctx_t *ctx, const char *token, svc_principal_t **pwho);
    /* The value of the service_session cookie: on success *pwho. */
    apr_status_t (*session)(svc_ctx_t *ctx, const char *cookie, svc_principal_t **pwho);
    /* Settles a check the bearer verifier deferred (svc_auth_confirm). */
    apr_status_t (*confirm)(svc_ctx_t *ctx);
    /*
     * A deploy agent's key from "Authorization: Bearer ..." on an agent
     * route (SVC_AUTH_AGENT): on success *pwho, of SVC_VIA_AGENT, naming
     * its target. Checked afresh on every request, never cached, so a
     * rotated key is refused at once. NULL: agent routes answer 401.
     */
    apr_status_t (*agent)(svc_ctx_t *ctx, const char *key, svc_principal_t **pwho);
};

/* Authenticates and authorizes ctx->route for the request in ctx. */
apr_status_t svc_auth_check(svc_ctx_t *ctx);

/*
 * Settles authentication before a response is final: a token check that was
 * deferred to ride along with a read (svc_pat_authenticate) runs now if no
 * read carried it, and its failure (401, or SVC_ERESTART: run again) wins
 * over whatever the handler answered.
 */
apr_status_t svc_auth_confirm(svc_ctx_t *ctx);

/*
 * The org a PAT caller is bound to, or NULL (sessions and unbound tokens).
 * A bound caller sees and manages only what belongs to that org, on every
 * route, tenant or not.
 */
const char *svc_auth_binding(const svc_ctx_t *ctx);

/* A 401 problem with the RFC 6750 WWW-Authenticate challenge. */
apr_status_t svc_auth_fail(svc_ctx_t *ctx, const char *detail);

/* The value of one cookie from the Cookie header(s), or NULL. */
const char *svc_cookie_get(apr_pool_t *p, const char *header, const char *name);

/* The credential of an "Authorization: Bearer ..." header (after the scheme
 * and its spaces); NULL for another scheme. */
const char *svc_auth_bearer(const char *authz);

/* True when the origin ("scheme://host[:port]") may send cookie-authenticated
 * state-changing requests: our own origin or a configured trusted one. */
int svc_origin_trusted(const svc_ctx_t *ctx, const char *origin);

/* True when the caller's address is in SvcInternalAllow. */
int svc_internal_allowed(const svc_ctx_t *ctx);

#endif /* SVC_AUTH_H */
