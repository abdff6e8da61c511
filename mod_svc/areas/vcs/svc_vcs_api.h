/*
 * svc_vcs_api.h: the provider's REST API as the App speaks it (GitHub's:
 * github.com, or GitHub Enterprise Server through SvcVcsApiURL), through
 * the one outbound client, within one time budget per request
 * (SvcVcsTimeout for all calls of one request together), with every token
 * and JWT kept out of traces and logs.
 *
 * The calls take no request context, so the runs area's init step can mint
 * tokens through svc_vcs_clone_token; svc_vcs_call_fail turns a failure
 * into the problem a route answers.
 */
#ifndef SVC_VCS_API_H
#define SVC_VCS_API_H

#include "svc_vcs_app.h"

/* Largest answer read from the provider (a page of 100 repositories is
 * some 600 KB). */
#define SVC_VCS_MAX_RESPONSE (4 * 1024 * 1024)

/* One request's calls to the provider: their budget, and what went wrong. */
typedef struct {
    apr_pool_t *p;
    const svc_config_t *conf;
    apr_time_t deadline;
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
 * Attaches the problem for a failed call and returns SVC_EPROBLEM: 504
 * provider_timeout, 502 provider_unreachable, or 502 provider_error, each
 * with a log_detail for the operator that starts with `what`.
 */
apr_status_t svc_vcs_call_fail(svc_ctx_t *ctx, const svc_vcs_call_t *c, apr_status_t rv,
                               const char *what);

/* An installation as GET /app/installations/{id} describes it. */
typedef struct {
    apr_int64_t id;
    apr_int64_t app_id;
    const char *account_login;
    const char *account_type;           /* User, Organization, Enterprise */
    const char *repository_selection;   /* all, selected */
    int suspended;
} svc_vcs_installation_t;

/* GET /app/installations/{id} with an App JWT. SVC_ENOTFOUND when the
 * provider knows no such installation of this App (404). */
apr_status_t svc_vcs_api_installation(svc_vcs_call_t *c, const svc_vcs_app_t *app,
                                      apr_int64_t id, svc_vcs_installation_t *pinst);

/*
 * POST /app/installations/{id}/access_tokens with an App JWT: a token for
 * `repo` (a repository name in the installation's account, or NULL for
 * every repository it reaches) with `permissions` (a JSON object text).
 * *ptoken in p, *pexpires from the provider's expires_at.
 */
apr_status_t svc_vcs_api_token(svc_vcs_call_t *c, const svc_vcs_app_t *app, apr_int64_t id,
                               const char *repo, const char *permissions,
                               const char **ptoken, apr_time_t *pexpires);

/*
 * The repositories an installation token reaches (GET
 * /installation/repositories), following the provider's Link rel="next"
 * pages (100 each) up to `max` repositories; *ptruncated says whether more
 * were left. Appends {full_name, private, default_branch, installation_id}
 * objects to `out`.
 */
apr_status_t svc_vcs_api_repositories(svc_vcs_call_t *c, const char *token,
                                      apr_int64_t installation_id, int max, json_t *out,
                                      int *ptruncated);

/*
 * The install callback's proof that the user who installed may act for the
 * installation (the App asks for OAuth on install, request_oauth_on_install):
 *
 * svc_vcs_api_user_token exchanges the callback's `code` for a user-to-server
 * token: POST {web}/login/oauth/access_token with the App's client id and
 * secret. *ptoken in p: the caller wipes it and never stores or logs it.
 * APR_EACCES when the provider refused the code (c->message is its error,
 * such as bad_verification_code; c->status is 200, as GitHub answers it).
 *
 * svc_vcs_api_user_installation: APR_SUCCESS when installation `id` is among
 * those the token's user can reach (GET /user/installations, paged);
 * SVC_ENOTFOUND when not.
 */
apr_status_t svc_vcs_api_user_token(svc_vcs_call_t *c, const svc_vcs_app_t *app,
                                    const char *code, const char **ptoken);
apr_status_t svc_vcs_api_user_installation(svc_vcs_call_t *c, const char *user_token,
                                           apr_int64_t id);

/* A repository as the API shows it, checked. */
typedef struct {
    apr_int64_t id;
    const char *full_name;
    const char *default_branch;
    int private_;
} svc_vcs_repo_t;

/* GET /repos/{owner}/{name} with an installation token. */
apr_status_t svc_vcs_api_repo(svc_vcs_call_t *c, const char *token, const char *full_name,
                              svc_vcs_repo_t *prepo);

/* Creates a repository in the installation's account: POST /orgs/{login}/repos
 * for an organization, POST /user/repos for a user; 201. */
apr_status_t svc_vcs_api_create_repo(svc_vcs_call_t *c, const char *token,
                                     const char *account_type, const char *login,
                                     const char *name, int private_, const char *description,
                                     svc_vcs_repo_t *prepo);

/* POST /app-manifests/{code}/conversions: the new App's credentials
 * (id, slug, client_id, client_secret, webhook_secret, pem), 201. */
apr_status_t svc_vcs_api_manifest(svc_vcs_call_t *c, const char *code, json_t **papp);

/* True for "owner/name" as the provider allows them. */
int svc_vcs_full_name_valid(const char *s);

#endif /* SVC_VCS_API_H */
