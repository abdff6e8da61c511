/*
 * svc_vcs.h: the vcs area: the code-hosting App (a GitHub App): setup wizard, installs, webhook, repositories.
 * May call base/ and the kernel; other areas, the glue and svcctl call it through this header only.
 *
 * The App is optional (SPEC.md, "Code-hosting integration behaviour"): it
 * is on only while all six of its keys are configured. docs/api/vcs.md
 * describes the routes and the operator's side.
 */
#ifndef SVC_VCS_H
#define SVC_VCS_H

#include "svc_kernel.h"

/* The area's routes (svc_vcs_routes.c). */
extern const svc_area_t svc_vcs_area;

/*
 * The one client of the code-hosting provider (svc_vcs_client.c): its REST API
 * as GitHub speaks it (github.com, or GitHub Enterprise Server through
 * SvcVcsApiURL) and its OAuth code exchange (SvcVcsWebURL), through base's
 * outbound client, within one time budget per request (SvcVcsTimeout for
 * all calls of one request together), with every token, secret and code
 * kept out of traces and logs. The App's calls use it, and so does sign-in
 * (the identity area).
 */

/* Largest answer read from the provider by default (a page of 100
 * repositories is some 600 KB). */
#define SVC_VCS_MAX_RESPONSE (4 * 1024 * 1024)

/* One request's calls to the provider: their budget, and what went wrong. */
typedef struct {
    apr_pool_t *p;
    const svc_config_t *conf;
    apr_time_t deadline;
    apr_size_t max_response;    /* SVC_VCS_MAX_RESPONSE unless the caller says less */
    int status;                 /* the provider's last HTTP status, 0 when none */
    const char *message;        /* its "message" on a refusal (printable), or "" */
    const char *why;            /* what failed, for the operator's log: no secrets */
} svc_vcs_call_t;

void svc_vcs_call_init(svc_vcs_call_t *c, apr_pool_t *p, const svc_config_t *conf);

/*
 * One call: `path` relative to SvcVcsApiURL (or a full URL under it, for
 * paging), `auth` the whole Authorization value or NULL, `body` JSON or
 * NULL. APR_SUCCESS when the provider answered `expect`: *pdoc is its JSON
 * (bound to p; pdoc may be NULL), *presp the response (may be NULL).
 * Otherwise SVC_HTTP_ETIMEOUT (also when the budget is spent), another
 * SVC_HTTP_E* (not reached), APR_EACCES (another status: c->status and
 * c->message say which), or APR_EINVAL (an answer that is not JSON).
 */
apr_status_t svc_vcs_call(svc_vcs_call_t *c, const char *method, const char *path,
                          const char *auth, const json_t *body, int expect, json_t **pdoc,
                          svc_http_resp_t **presp);

/*
 * The OAuth code exchange: POST {web}/login/oauth/access_token with the
 * client's id and secret, the code, and for sign-in the redirect URI and
 * PKCE verifier (NULL otherwise). *ptoken in c->p: the caller wipes it and
 * never stores or logs it. APR_EACCES with c->status 200 when the provider
 * refused the exchange (c->message is its error code, such as
 * bad_verification_code, as GitHub answers it); otherwise as svc_vcs_call.
 */
apr_status_t svc_vcs_oauth_token(svc_vcs_call_t *c, const char *client_id,
                                 const char *client_secret, const char *code,
                                 const char *redirect_uri, const char *verifier,
                                 const char **ptoken);

/*
 * The parser behind svc_vcs_oauth_token, for tests without a provider: the
 * raw body of a 200 answer. APR_SUCCESS with *ptoken; APR_EACCES when the
 * provider answered an OAuth error (*perr is its code); APR_EINVAL when the
 * answer is malformed (*perr says how).
 */
apr_status_t svc_vcs_parse_token(apr_pool_t *p, const char *body, apr_size_t len,
                                 const char **ptoken, const char **perr);

/*
 * The App's directives as written: references (env:NAME, file:/path,
 * exec:/program) or, for the app id, slug and client id, literal values;
 * NULL when the directive is absent, which means env: of the variable
 * SPEC.md names (VCS_APP_ID, VCS_APP_SLUG, VCS_APP_CLIENT_ID,
 * VCS_APP_CLIENT_SECRET, VCS_APP_WEBHOOK_SECRET, VCS_APP_PRIVATE_KEY_PEM).
 */
typedef struct {
    const char *app_id;
    const char *slug;
    const char *client_id;
    const char *client_secret;      /* references only */
    const char *webhook_secret;     /* references only */
    const char *private_key;        /* references only: the PEM text */
    const char *credentials;        /* SvcVcsAppCredentials: a file path, or NULL */
} svc_vcs_refs_t;

/*
 * Resolves the App's keys into conf (allocated from p, which must live as
 * long as conf; the private key is freed with p). An env: reference whose
 * variable is unset or empty takes the entry of that name from the
 * credentials file the setup wizard writes, when there is one. While any
 * key is missing, or one is unusable (a private key that does not parse, an
 * app id that is not a number), the App is off and conf->vcs_app_off says
 * why, naming keys, never values: the caller logs it once. A reference that
 * is present but fails (an unreadable file), an inline secret, or a
 * credentials file that is not private to its owner is an error: *perr.
 */
apr_status_t svc_vcs_configure(svc_config_t *conf, const svc_vcs_refs_t *refs,
                               apr_pool_t *p, const char **perr);

/* Creates this process's cache of installation access tokens (httpd: once
 * per child). Without it every token is minted afresh. */
apr_status_t svc_vcs_cache_init(apr_pool_t *pchild);

/*
 * An installation access token for cloning one repository of an org: scope
 * the one repository `full_name` ("owner/name"), permissions contents: read
 * and metadata: read, valid one hour from when the provider minted it
 * (*pexpires). Tokens come from the per-process cache while more than five
 * minutes remain; the cache keeps them encrypted. *ptoken is allocated from
 * p: the caller wipes it (svc_wipe) when done and never logs or stores it.
 *
 * For the runs area's init step: it reads the installation through db
 * (the caller's connection; no transaction needed), then calls the
 * provider within conf->vcs_timeout_ms, so it must not be called while
 * holding a pooled connection others wait for.
 *
 *   SVC_ENOTFOUND  the installation is not the org's, or not active
 *                  (suspended, deleted at the provider, unlinked): the run
 *                  fails with installation_suspended
 *   APR_EACCES     the provider refuses the repository (removed from the
 *                  installation's selection, deleted, renamed): clone_failed
 *   APR_ENOTIMPL   the App is not configured
 *   anything else  the provider could not be asked (SVC_HTTP_E*, APR_EINVAL
 *                  for an unusable answer) or the database failed: clone_failed
 */
apr_status_t svc_vcs_clone_token(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                                 const char *org_id, apr_int64_t installation_id,
                                 const char *full_name, const char **ptoken,
                                 apr_time_t *pexpires);

/*
 * The repository linked to a project (PUT .../projects/:projectSlug/repository),
 * for the runs area when a run is queued: *pfull_name ("owner/name", in p)
 * and *pinstallation_id. A project links at most one. SVC_ENOTFOUND when it
 * has none. Reads through db, in the caller's transaction if any; asks
 * nothing of the provider (the init step does, through svc_vcs_clone_token).
 */
apr_status_t svc_vcs_project_repository(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                        const char *project_id, const char **pfull_name,
                                        apr_int64_t *pinstallation_id);

/*
 * Checks the App's keys against the provider, as key rotation asks: signs
 * an App JWT and asks GET {api}/app who it is. APR_SUCCESS when the provider
 * accepts the JWT as this App's (same id); *preport says what was found, or
 * why not, in words for an operator (svcctl vcs-app check).
 */
apr_status_t svc_vcs_check(apr_pool_t *p, const svc_config_t *conf, const char **preport);

#endif /* SVC_VCS_H */
