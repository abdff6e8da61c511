/*
 * svc_vcs_client.h: the App's calls to the provider's REST API, over the one
 * code-hosting client (svc_vcs_call, svc_vcs.h).
 *
 * The calls take no request context, so the runs area's init step can mint
 * tokens through svc_vcs_clone_token; svc_vcs_call_fail turns a failure
 * into the problem a route answers.
 */
#ifndef SVC_VCS_CLIENT_H
#define SVC_VCS_CLIENT_H

#include "svc_vcs_app.h"

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
 * the callback's `code` is exchanged for a user-to-server token
 * (svc_vcs_oauth_token, svc_vcs.h), then
 * svc_vcs_api_user_installation: APR_SUCCESS when installation `id` is among
 * those the token's user can reach (GET /user/installations, paged);
 * SVC_ENOTFOUND when not.
 */
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

#endif /* SVC_VCS_CLIENT_H */
