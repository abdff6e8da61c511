/*
 * svc_auth.c: authentication (PAT or session cookie) and route
 * authorization (scope, founder flag, CSRF origin, org binding and role,
 * project role).
 */
#include "svc_auth.h"
#include "svc_access.h"
#include "svc_json.h"
#include "svc_route.h"

#include <ctype.h>
#include <string.h>

apr_status_t svc_auth_fail(svc_ctx_t *ctx, const char *detail)
{
    apr_table_setn(ctx->headers_out, "WWW-Authenticate",
                   "Bearer realm=\"mod_svc\", error=\"invalid_token\"");
    return svc_fail(ctx, 401, "unauthenticated", "%s", detail);
}

const char *svc_cookie_get(apr_pool_t *p, const char *header, const char *name)
{
    apr_size_t nlen = strlen(name);
    const char *s = header;

    while (s && *s) {
        const char *end;
        while (*s == ' ' || *s == ';' || *s == ',' || *s == '\t') {
            s++;
        }
        end = s + strcspn(s, ";,");
        if ((apr_size_t)(end - s) > nlen && strncmp(s, name, nlen) == 0 && s[nlen] == '=') {
            const char *v = s + nlen + 1;
            apr_size_t vlen = (apr_size_t)(end - v);
            while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t')) {
                vlen--;
            }
            return apr_pstrmemdup(p, v, vlen);
        }
        s = end;
    }
    return NULL;
}

int svc_origin_trusted(const svc_ctx_t *ctx, const char *origin)
{
    int i;

    if (!origin || !*origin) {
        return 0;
    }
    if (ctx->self_origin && strcasecmp(origin, ctx->self_origin) == 0) {
        return 1;
    }
    for (i = 0; i < ctx->conf->trusted_origins->nelts; i++) {
        if (strcasecmp(origin, APR_ARRAY_IDX(ctx->conf->trusted_origins, i, const char *)) == 0) {
            return 1;
        }
    }
    return 0;
}

int svc_internal_allowed(const svc_ctx_t *ctx)
{
    int i;

    if (!ctx->client_sa) {
        return 0;
    }
    for (i = 0; i < ctx->conf->internal_allow->nelts; i++) {
        if (apr_ipsubnet_test(APR_ARRAY_IDX(ctx->conf->internal_allow, i, apr_ipsubnet_t *),
                              ctx->client_sa)) {
            return 1;
        }
    }
    return 0;
}

/* The origin part of a Referer URL, or NULL. */
static const char *referer_origin(apr_pool_t *p, const char *referer)
{
    const char *s = referer ? strstr(referer, "://") : NULL;
    apr_size_t n;

    if (!s) {
        return NULL;
    }
    n = (apr_size_t)(s - referer) + 3;
    n += strcspn(referer + n, "/?#");
    return apr_pstrmemdup(p, referer, n);
}

/*
 * A state-changing request carried by a cookie must come from a page of a
 * trusted origin. Browsers send Origin on such requests; when they do not,
 * Referer is checked instead; a non-browser client holding a cookie may
 * send X-Requested-With, a header no cross-site page can add without a
 * CORS preflight, which this service never grants.
 */
static apr_status_t check_csrf(svc_ctx_t *ctx)
{
    const char *origin = apr_table_get(ctx->headers_in, "Origin");

    if (origin) {
        if (svc_origin_trusted(ctx, origin)) {
            return APR_SUCCESS;
        }
    }
    else {
        const char *ref = referer_origin(ctx->pool, apr_table_get(ctx->headers_in, "Referer"));
        if (ref ? svc_origin_trusted(ctx, ref)
                : apr_table_get(ctx->headers_in, "X-Requested-With") != NULL) {
            return APR_SUCCESS;
        }
    }
    return svc_fail(ctx, 403, "csrf_failed",
                    "A cookie-authenticated request that changes state must come from a "
                    "trusted origin (Origin header) or carry X-Requested-With.");
}

const char *svc_auth_bearer(const char *authz)
{
    if (strncasecmp(authz, "Bearer ", 7) != 0) {
        return NULL;
    }
    authz += 7;
    while (*authz == ' ') {
        authz++;
    }
    return authz;
}

/* A 401 for a request that brought no credential: the challenge without an
 * error code (RFC 6750, 3.1). */
static apr_status_t no_credential(svc_ctx_t *ctx, const char *detail)
{
    apr_table_setn(ctx->headers_out, "WWW-Authenticate", "Bearer realm=\"mod_svc\"");
    return svc_fail(ctx, 401, "unauthenticated", "%s", detail);
}

static apr_status_t authenticate(svc_ctx_t *ctx)
{
    const svc_verifiers_t *v = ctx->conf->verifiers;
    const char *authz = apr_table_get(ctx->headers_in, "Authorization");
    const char *cookie;

    if (!v) {
        /* No area registered how to verify principals: a build error. */
        return APR_ENOTIMPL;
    }
    if (authz) {
        const char *tok = svc_auth_bearer(authz);
        if (!tok) {
            return svc_auth_fail(ctx, "Authorization must use the Bearer scheme with a "
                                      "personal access token.");
        }
        return v->bearer(ctx, tok, &ctx->who);
    }
    cookie = svc_cookie_get(ctx->pool, apr_table_get(ctx->headers_in, "Cookie"),
                            SVC_SESSION_COOKIE);
    if (cookie) {
        return v->session(ctx, cookie, &ctx->who);
    }
    return no_credential(ctx, "This endpoint needs a personal access token (Authorization: "
                         "Bearer svc_pat_...) or a signed-in session.");
}

/*
 * A deploy agent: its target's key as a bearer token, and nothing else (no
 * cookie, no personal access token: those are refused by the verifier,
 * which knows the key's shape).
 */
static apr_status_t authenticate_agent(svc_ctx_t *ctx)
{
    const svc_verifiers_t *v = ctx->conf->verifiers;
    const char *authz = apr_table_get(ctx->headers_in, "Authorization");
    const char *key = authz ? svc_auth_bearer(authz) : NULL;

    if (!key) {
        return no_credential(ctx, "Agent routes need the deploy target's key (Authorization: "
                             "Bearer svc_dek_...).");
    }
    if (!v || !v->agent) {
        return svc_auth_fail(ctx, "This server verifies no deploy agents.");
    }
    return v->agent(ctx, key, &ctx->who);
}

/*
 * The project of a route under /projects/:projectSlug, looked up in the org
 * already resolved (so a slug of another org is simply not found), and the
 * caller's effective role in it. Every member of the org can see that a
 * project exists, so a role too low for the route is 403, not 404.
 */
static apr_status_t check_project(svc_ctx_t *ctx, svc_db_t *db)
{
    const char *slug = apr_table_get(ctx->params, "projectSlug");
    apr_status_t rv;

    if (!svc_slug_valid(slug)) {
        return svc_fail(ctx, 404, "not_found", "No project with this slug.");
    }
    rv = svc_project_resolve(db, ctx->pool, ctx->org, slug, ctx->who->user_id, &ctx->project);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "No project %s in %s.", slug, ctx->org->slug);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (ctx->project->prole < ctx->route->prole) {
        return svc_fail(ctx, 403, "forbidden",
                        "Your role in project %s is %s; this needs %s or above.", slug,
                        svc_prole_name(ctx->project->prole),
                        svc_prole_name(ctx->route->prole));
    }
    return APR_SUCCESS;
}

const char *svc_auth_binding(const svc_ctx_t *ctx)
{
    return ctx->who && ctx->who->via == SVC_VIA_PAT ? ctx->who->token_org_id : NULL;
}

apr_status_t svc_auth_confirm(svc_ctx_t *ctx)
{
    if (ctx->who && ctx->who->via == SVC_VIA_PAT && ctx->conf->verifiers) {
        return ctx->conf->verifiers->confirm(ctx);
    }
    return APR_SUCCESS;
}

apr_status_t svc_auth_check(svc_ctx_t *ctx)
{
    const svc_route_t *route = ctx->route;
    apr_status_t rv;

    switch (route->auth) {
    case SVC_AUTH_NONE:
        return APR_SUCCESS;
    case SVC_AUTH_INTERNAL:
        if (!svc_internal_allowed(ctx)) {
            /* Not reachable from outside: do not even confirm it exists. */
            return svc_fail(ctx, 404, "not_found", "No such resource.");
        }
        return APR_SUCCESS;
    case SVC_AUTH_USER:
        break;
    case SVC_AUTH_AGENT:
        return authenticate_agent(ctx);
    default:
        /* Share tokens and webhook signatures are checked by their
         * handlers, over the material only they know how to read. */
        return APR_SUCCESS;
    }

    if ((rv = authenticate(ctx)) != APR_SUCCESS) {
        return rv;
    }
    /* The founder flag can change: never decide on a cached one. */
    if ((route->flags & SVC_RF_FOUNDER) && (rv = svc_auth_confirm(ctx)) != APR_SUCCESS) {
        return rv;
    }
    /*
     * The operator's API is not part of the user-facing surface: to anyone
     * but a founder (by session, or by a token bound to no org) it does
     * not exist. Other founder routes (the App's setup page) say 403.
     */
    if ((route->flags & SVC_RF_FOUNDER) && strncmp(route->path, SVC_ADMIN_PREFIX,
                                                    sizeof(SVC_ADMIN_PREFIX) - 1) == 0
        && (!ctx->who->founder || svc_auth_binding(ctx))) {
        return svc_fail(ctx, 404, "not_found", "No such resource.");
    }
    if ((route->flags & SVC_RF_FOUNDER) && !ctx->who->founder) {
        return svc_fail(ctx, 403, "forbidden", "Only a platform operator may do this.");
    }
    if (ctx->who->scope < route->scope) {
        apr_table_setn(ctx->headers_out, "WWW-Authenticate",
                       apr_psprintf(ctx->pool, "Bearer realm=\"mod_svc\", "
                                    "error=\"insufficient_scope\", scope=\"%s\"",
                                    svc_scope_name(route->scope)));
        return svc_fail(ctx, 403, "insufficient_scope",
                        "This token's scope is %s; this endpoint needs %s.",
                        svc_scope_name(ctx->who->scope), svc_scope_name(route->scope));
    }
    if ((route->flags & SVC_RF_SESSION) && ctx->who->via != SVC_VIA_SESSION) {
        return svc_fail(ctx, 403, "session_required",
                        "This page is for a signed-in browser session; personal access tokens "
                        "cannot use it.");
    }
    if (ctx->who->via == SVC_VIA_SESSION && svc_method_is_unsafe(ctx->method)) {
        if ((rv = check_csrf(ctx)) != APR_SUCCESS) {
            return rv;
        }
    }
    if (svc_route_is_tenant(route)) {
        const char *slug = apr_table_get(ctx->params, "orgSlug");
        svc_db_t *db;

        if (!svc_slug_valid(slug)) {
            return svc_fail(ctx, 404, "not_found", "No organization with this slug.");
        }
        /* A bound token sees no other org, not even whether it exists. */
        if (ctx->who->via == SVC_VIA_PAT && ctx->who->token_org_slug
            && strcmp(slug, ctx->who->token_org_slug) != 0) {
            return svc_fail(ctx, 404, "not_found", "No organization %s.", slug);
        }
        if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
            return rv;
        }
        rv = svc_org_membership(db, ctx->pool, slug, ctx->who->user_id, &ctx->org);
        if (rv == SVC_ENOTFOUND) {
            return svc_fail(ctx, 404, "not_found", "No organization %s.", slug);
        }
        if (rv != APR_SUCCESS) {
            return rv;
        }
        /* Members learn why; outsiders got their 404 above. Read with the
         * membership on every request, so it holds at once on every node. */
        if (ctx->org->suspended) {
            return svc_fail(ctx, 403, "org_suspended", "The organization %s is suspended by "
                            "the platform's operator; contact them.", slug);
        }
        if (ctx->org->role < route->role) {
            return svc_fail(ctx, 403, "forbidden",
                            "Your role in %s is %s; this needs %s or above.", slug,
                            svc_role_name(ctx->org->role), svc_role_name(route->role));
        }
        if (svc_route_is_project(route)) {
            return check_project(ctx, db);
        }
    }
    return APR_SUCCESS;
}
