/*
 * svc_github.c: the provider side of sign-in: the authorize URL, then the
 * code-for-token exchange, GET /user and GET /user/emails through the one
 * code-hosting client (the vcs area's svc_vcs_call, svc_vcs.h).
 */
#include "svc_github.h"
#include "svc_vcs.h"

#include <string.h>

const char *svc_github_authorize_url(apr_pool_t *p, const svc_config_t *conf,
                                     const char *redirect_uri, const char *state,
                                     const char *challenge)
{
    return apr_pstrcat(p, conf->vcs_web_url, "/login/oauth/authorize",
                       "?client_id=", svc_url_encode(p, conf->oauth_client_id),
                       "&redirect_uri=", svc_url_encode(p, redirect_uri),
                       "&scope=", svc_url_encode(p, SVC_GITHUB_SCOPE),
                       "&state=", svc_url_encode(p, state),
                       "&code_challenge=", svc_url_encode(p, challenge),
                       "&code_challenge_method=S256", NULL);
}

/* Loads a provider answer: the document is bound to p, or NULL. */
static json_t *github_json(apr_pool_t *p, const char *body, apr_size_t len)
{
    json_error_t jerr;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);

    return doc ? svc_json_pool(p, doc) : NULL;
}

/*
 * A display name as the schema keeps it: at most `max` characters (UTF-8
 * code points, cut on a boundary) with control characters made spaces.
 * jansson has already refused invalid UTF-8.
 */
static const char *github_name(apr_pool_t *p, const char *s, apr_size_t max)
{
    char *out = apr_pstrdup(p, s);
    apr_size_t chars = 0, i;

    for (i = 0; out[i]; i++) {
        unsigned char c = (unsigned char)out[i];
        if ((c & 0xC0) != 0x80 && chars++ == max) {
            out[i] = '\0';
            break;
        }
        if (c < 0x20 || c == 0x7f) {
            out[i] = ' ';
        }
    }
    return out;
}

apr_status_t svc_github_parse_user(apr_pool_t *p, const char *body, apr_size_t len,
                                   svc_github_user_t *u, const char **perr)
{
    json_t *doc = github_json(p, body, len);
    json_t *id, *name;
    const char *login;

    memset(u, 0, sizeof(*u));
    if (!json_is_object(doc)) {
        *perr = "GET /user did not answer a JSON object";
        return APR_EINVAL;
    }
    id = json_object_get(doc, "id");
    if (!json_is_integer(id) || json_integer_value(id) <= 0) {
        *perr = "GET /user has no positive integer id";
        return APR_EINVAL;
    }
    login = svc_json_str(doc, "login");
    if (!login || !svc_word_valid(login, 100)) {
        *perr = "GET /user has no usable login";
        return APR_EINVAL;
    }
    name = json_object_get(doc, "name");
    if (name && !json_is_null(name) && !json_is_string(name)) {
        *perr = "GET /user has a name that is not a string";
        return APR_EINVAL;
    }
    u->id = (apr_int64_t)json_integer_value(id);
    u->login = apr_pstrdup(p, login);
    u->name = json_is_string(name) ? github_name(p, json_string_value(name), 200) : "";
    return APR_SUCCESS;
}

apr_status_t svc_github_parse_emails(apr_pool_t *p, const char *body, apr_size_t len,
                                     const char **pemail, const char **perr)
{
    json_t *doc = github_json(p, body, len);
    json_t *e;
    size_t i;

    *pemail = NULL;
    if (!json_is_array(doc)) {
        *perr = "GET /user/emails did not answer a JSON array";
        return APR_EINVAL;
    }
    json_array_foreach(doc, i, e) {
        const char *addr = svc_json_str(e, "email");
        if (!json_is_object(e) || !addr) {
            *perr = "GET /user/emails has an entry without an email";
            return APR_EINVAL;
        }
        if (!json_is_true(json_object_get(e, "primary"))) {
            continue;
        }
        /*
         * Only the primary address, and only once the provider has verified
         * it: an unverified address proves nothing about who signed in, and
         * accounts are linked and invites matched by this address.
         */
        if (!json_is_true(json_object_get(e, "verified"))) {
            *perr = "email_not_verified";
            return SVC_ENOTFOUND;
        }
        if (!svc_email_valid(addr)) {
            *perr = "GET /user/emails has a primary address that is not an email address";
            return APR_EINVAL;
        }
        *pemail = apr_pstrdup(p, addr);
        return APR_SUCCESS;
    }
    *perr = "no_primary_email";
    return SVC_ENOTFOUND;
}

/* Attaches a 5xx problem whose log_detail tells the operator what failed. */
static apr_status_t github_fail(svc_ctx_t *ctx, int status, const char *code,
                                const char *detail, const char *log_detail)
{
    svc_fail(ctx, status, code, "%s", detail);
    ctx->problem->log_detail = apr_pstrcat(ctx->pool, "sign-in: ", log_detail, NULL);
    return SVC_EPROBLEM;
}

static apr_status_t github_bad_answer(svc_ctx_t *ctx, const char *log_detail)
{
    return github_fail(ctx, 502, "provider_error",
                       "The code-hosting provider gave an answer sign-in cannot use; try "
                       "again later.", log_detail);
}

/*
 * The problem for a call that failed: 504 when the budget ran out, 502
 * provider_unreachable when the provider was not reached, else 502
 * provider_error (a refusal, an answer sign-in cannot use).
 */
static apr_status_t github_call_fail(svc_ctx_t *ctx, const svc_vcs_call_t *c, apr_status_t rv)
{
    if (rv == SVC_HTTP_ETIMEOUT) {
        return github_fail(ctx, 504, "provider_timeout",
                           "The code-hosting provider did not answer in time; try signing in "
                           "again.", c->why);
    }
    if (rv == APR_EACCES || rv == APR_EINVAL || rv == SVC_HTTP_ETOOBIG) {
        return github_bad_answer(ctx, c->why);
    }
    return github_fail(ctx, 502, "provider_unreachable",
                       "The code-hosting provider could not be reached; try again later.",
                       c->why);
}

apr_status_t svc_github_sign_in(svc_ctx_t *ctx, const char *code, const char *verifier,
                                const char *redirect_uri, svc_github_user_t *puser)
{
    const svc_config_t *conf = ctx->conf;
    apr_pool_t *p = ctx->pool;
    const char *token = NULL, *err = NULL;
    char *bearer = NULL;
    svc_vcs_call_t c;
    svc_http_resp_t *resp;
    apr_status_t rv;

    /* One budget (SvcVcsTimeout) for the whole sign-in. */
    svc_vcs_call_init(&c, p, conf);
    c.max_response = SVC_GITHUB_MAX_RESPONSE;
    rv = svc_vcs_oauth_token(&c, conf->oauth_client_id, conf->oauth_client_secret, code,
                             redirect_uri, verifier, &token);
    if (rv == APR_EACCES && c.status == 200 && strcmp(c.message, "bad_verification_code") == 0) {
        /* Expired, used already, or not ours: the user can only start over. */
        rv = svc_fail(ctx, 401, "code_rejected",
                      "The code-hosting provider refused the sign-in code (it expired or was "
                      "used already); sign in again.");
        goto cleanup;
    }
    if (rv == APR_EACCES && c.status == 200) {
        /* incorrect_client_credentials, redirect_uri_mismatch, ...: ours to fix. */
        rv = github_bad_answer(ctx, apr_pstrcat(p, "the provider refused the code exchange: ",
                                                c.message, " (check SvcOAuthClientId, "
                                                "SvcOAuthClientSecret and the app's callback "
                                                "URL)", NULL));
        goto cleanup;
    }
    if (rv != APR_SUCCESS) {
        rv = github_call_fail(ctx, &c, rv);
        goto cleanup;
    }

    /* The token serves for these two reads only. */
    bearer = apr_pstrcat(p, "Bearer ", token, NULL);
    if ((rv = svc_vcs_call(&c, "GET", "/user", bearer, NULL, 200, NULL, &resp))
        != APR_SUCCESS) {
        rv = github_call_fail(ctx, &c, rv);
        goto cleanup;
    }
    if (svc_github_parse_user(p, resp->body, resp->body_len, puser, &err) != APR_SUCCESS) {
        rv = github_bad_answer(ctx, err);
        goto cleanup;
    }
    if ((rv = svc_vcs_call(&c, "GET", "/user/emails", bearer, NULL, 200, NULL, &resp))
        != APR_SUCCESS) {
        rv = github_call_fail(ctx, &c, rv);
        goto cleanup;
    }
    rv = svc_github_parse_emails(p, resp->body, resp->body_len, &puser->email, &err);
    if (rv == SVC_ENOTFOUND && strcmp(err, "email_not_verified") == 0) {
        rv = svc_fail(ctx, 403, "email_not_verified",
                      "Your primary email address at the code-hosting provider is not "
                      "verified. Verify it there, then sign in again.");
    }
    else if (rv == SVC_ENOTFOUND) {
        rv = svc_fail(ctx, 403, "no_primary_email",
                      "Your code-hosting account has no primary email address. Add and "
                      "verify one there, then sign in again.");
    }
    else if (rv != APR_SUCCESS) {
        rv = github_bad_answer(ctx, err);
    }

cleanup:
    /* The token was only needed for the two reads above. */
    if (token) {
        svc_wipe((void *)token, strlen(token));
    }
    if (bearer) {
        svc_wipe(bearer, strlen(bearer));
    }
    return rv;
}
