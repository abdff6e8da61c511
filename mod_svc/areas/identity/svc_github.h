/*
 * svc_github.h: the code-hosting provider's OAuth web flow and user API,
 * as GitHub speaks them (github.com, or GitHub Enterprise Server, or any
 * provider with the same API, through SvcVcsWebURL and SvcVcsApiURL).
 *
 * Every call goes through the one code-hosting client (svc_vcs.h) with what
 * remains of one budget (SvcVcsTimeout) for the whole sign-in, so a slow
 * provider holds a worker no longer than that. The provider URLs are the
 * operator's, so the address guard for tenant-supplied URLs does not apply.
 */
#ifndef SVC_GITHUB_H
#define SVC_GITHUB_H

#include "svc_identity.h"

/* The scopes sign-in asks for: the profile, and the email addresses. */
#define SVC_GITHUB_SCOPE "read:user user:email"

/* Largest provider answer read during sign-in. */
#define SVC_GITHUB_MAX_RESPONSE (64 * 1024)

/* Who the provider says signed in. Strings are allocated from the pool
 * the parser was given. */
typedef struct {
    apr_int64_t id;             /* the provider's stable numeric user id */
    const char *login;
    const char *name;           /* "" when the profile has none */
    const char *email;          /* the verified primary address */
} svc_github_user_t;

/* The authorize URL the browser is sent to (PKCE S256). */
const char *svc_github_authorize_url(apr_pool_t *p, const svc_config_t *conf,
                                     const char *redirect_uri, const char *state,
                                     const char *challenge);

/*
 * Exchanges the code for an access token, then reads the user and their
 * email addresses, all within conf->vcs_timeout_ms. The access token is
 * used for these two reads only, never stored or logged, and wiped from
 * memory afterwards. On failure a problem is attached (SVC_EPROBLEM):
 * 401 code_rejected, 403 email_not_verified or no_primary_email,
 * 502 provider_error or provider_unreachable, 504 provider_timeout; the
 * 5xx carry a redacted log_detail for the operator.
 *
 * The caller must not hold a pooled database connection.
 */
apr_status_t svc_github_sign_in(svc_ctx_t *ctx, const char *code, const char *verifier,
                                const char *redirect_uri, svc_github_user_t *puser);

/*
 * The parsers behind svc_github_sign_in, separate so they can be tested
 * without a provider. Each takes the raw body of a 200 answer. (The code
 * exchange's answer is the code-hosting client's: svc_vcs_parse_token.)
 */

/* The id, login and name of GET /user; APR_EINVAL with *perr when malformed. */
apr_status_t svc_github_parse_user(apr_pool_t *p, const char *body, apr_size_t len,
                                   svc_github_user_t *puser, const char **perr);

/*
 * The primary address of GET /user/emails when it is verified. APR_EINVAL
 * when malformed; SVC_ENOTFOUND with *perr "no_primary_email" or
 * "email_not_verified" when there is no address to trust.
 */
apr_status_t svc_github_parse_emails(apr_pool_t *p, const char *body, apr_size_t len,
                                     const char **pemail, const char **perr);


#endif /* SVC_GITHUB_H */
