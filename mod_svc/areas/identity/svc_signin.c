/*
 * svc_signin.c: the sign-in flow (/auth/login, /auth/callback,
 * /auth/logout) and its configuration.
 */
#include "svc_signin.h"
#include "svc_github.h"
#include "svc_sessions.h"

#include <string.h>

/*
 * The in-flight sign-in. The state is looked up by its keyed hash and
 * consumed by the same statement that reads it, so two callbacks with one
 * state cannot both get the row.
 */
static const svc_stmt_t st_signin_start = {
    "svc_signin_start",
    "INSERT INTO oauth_states (state_hash, nonce_hash, return_to, expires_at)"
    " VALUES ($1::bytea, $2::bytea, $3, now() + make_interval(secs => $4::int))",
    4, SVC_STMT_ALONE
};

/* Abandoned sign-ins: swept by whoever starts a new one. */
static const svc_stmt_t st_signin_sweep = {
    "svc_signin_sweep",
    "DELETE FROM oauth_states WHERE expires_at < now()",
    0, SVC_STMT_RETRY | SVC_STMT_ALONE
};

static const svc_stmt_t st_signin_consume = {
    "svc_signin_consume",
    "DELETE FROM oauth_states WHERE state_hash = $1::bytea"
    " RETURNING coalesce(nonce_hash = $2::bytea, false), expires_at > now(), return_to",
    2, SVC_STMT_ALONE
};

static const svc_stmt_t st_signin_by_vcs = {
    "svc_signin_by_vcs",
    "SELECT id, email FROM users WHERE vcs_user_id = $1::bigint FOR UPDATE",
    1, 0
};

static const svc_stmt_t st_signin_by_email = {
    "svc_signin_by_email",
    "SELECT id, vcs_user_id, link_by_email FROM users WHERE lower(email) = lower($1)"
    " FOR UPDATE",
    1, 0
};

/*
 * A returning user: the provider's current email, name and login win,
 * except an email another account already has (the user keeps theirs
 * rather than being locked out).
 */
static const svc_stmt_t st_signin_refresh = {
    "svc_signin_refresh",
    "UPDATE users u SET"
    " email = CASE WHEN EXISTS (SELECT 1 FROM users o"
    "   WHERE lower(o.email) = lower($2) AND o.id <> u.id) THEN u.email ELSE $2 END,"
    " name = CASE WHEN $3 = '' THEN u.name ELSE $3 END,"
    " vcs_login = $4, updated_at = now()"
    " WHERE u.id = $1 RETURNING u.email",
    4, 0
};

/* The permission to link is used up by the link. */
static const svc_stmt_t st_signin_link = {
    "svc_signin_link",
    "UPDATE users SET vcs_user_id = $2::bigint, vcs_login = $3,"
    " name = CASE WHEN name = '' THEN $4 ELSE name END, link_by_email = false,"
    " updated_at = now()"
    " WHERE id = $1 AND vcs_user_id IS NULL AND link_by_email",
    4, 0
};

static const svc_stmt_t st_signin_create = {
    "svc_signin_create",
    "INSERT INTO users (id, email, name, vcs_user_id, vcs_login)"
    " VALUES ($1, $2, $3, $4::bigint, $5)",
    5, 0
};

const svc_qparam_t svc_q_signin_login[] = {
    { "return_to", "string",
      "Where to go after signing in: a path on the UI's site (one leading slash); "
      "default the UI URL itself." },
    { NULL, NULL, NULL }
};

const svc_qparam_t svc_q_signin_callback[] = {
    { "code", "string", "Set by the provider: the authorization code." },
    { "state", "string", "Set by the provider: the state /auth/login issued." },
    { "error", "string", "Set by the provider when it did not sign the user in." },
    { NULL, NULL, NULL }
};

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */

const char *svc_signin_check_base_url(apr_pool_t *p, const char *url, const char **pnorm)
{
    return svc_http_check_base_url(p, url, pnorm);
}

const char *svc_signin_check_ui_url(apr_pool_t *p, const char *url)
{
    const char *norm, *why;

    if (url[0] == '/') {
        return svc_signin_return_to_valid(url)
            ? NULL : "must be a path (one leading slash, printable ASCII) or an http(s) URL";
    }
    /* The UI may use its fragment for routing; only the origin part is checked. */
    why = svc_signin_check_base_url(p, apr_pstrmemdup(p, url, strcspn(url, "?#")), &norm);
    if (!why && strpbrk(url, " \t\r\n\\")) {
        why = "contains spaces, control characters or backslashes";
    }
    return why;
}

apr_status_t svc_signin_configure(svc_config_t *conf, const svc_signin_refs_t *refs,
                                  apr_pool_t *p, const char **perr)
{
    const char *id, *secret, *web, *api, *off_id = NULL, *off_secret = NULL, *ignored;
    const char *why;
    apr_status_t rv;

    *perr = NULL;
    if (refs->client_secret && !svc_secret_is_ref(refs->client_secret)) {
        *perr = "SvcOAuthClientSecret must be a reference (env:NAME, file:/path or "
                "exec:/program), never the secret itself";
        return APR_EINVAL;
    }
    if ((rv = svc_setting_resolve(&id, refs->client_id, "SvcOAuthClientId", p, &off_id, perr))
        != APR_SUCCESS
        || (rv = svc_setting_resolve(&secret, refs->client_secret, "SvcOAuthClientSecret",
                                     p, &off_secret, perr)) != APR_SUCCESS
        || (rv = svc_setting_resolve(&web, refs->web_url, "SvcVcsWebURL", p, &ignored, perr))
           != APR_SUCCESS
        || (rv = svc_setting_resolve(&api, refs->api_url, "SvcVcsApiURL", p, &ignored, perr))
           != APR_SUCCESS) {
        return rv;
    }
    if (web && (why = svc_signin_check_base_url(p, web, &conf->vcs_web_url)) != NULL) {
        *perr = apr_pstrcat(p, "SvcVcsWebURL ", why, NULL);
        return APR_EINVAL;
    }
    if (api && (why = svc_signin_check_base_url(p, api, &conf->vcs_api_url)) != NULL) {
        *perr = apr_pstrcat(p, "SvcVcsApiURL ", why, NULL);
        return APR_EINVAL;
    }
    if (id) {
        apr_size_t i, n = strlen(id);
        for (i = 0; i < n; i++) {
            if ((unsigned char)id[i] <= 0x20 || (unsigned char)id[i] >= 0x7f) {
                break;
            }
        }
        if (i < n || n > 256) {
            *perr = "SvcOAuthClientId must be at most 256 printable ASCII characters";
            return APR_EINVAL;
        }
    }
    conf->oauth_client_id = id;
    conf->oauth_client_secret = secret;
    if (!id || !secret) {
        conf->signin_off = (!id && !secret)
            ? apr_pstrcat(p, off_id, "; ", off_secret, NULL)
            : (!id ? off_id : off_secret);
    }
    else {
        conf->signin_off = NULL;
    }
    return APR_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Redirect targets and PKCE                                                */

int svc_signin_return_to_valid(const char *s)
{
    apr_size_t n = strlen(s), i;

    /* "//host" and "/\host" are read by browsers as another site. */
    if (n == 0 || n > 2048 || s[0] != '/' || s[1] == '/' || s[1] == '\\') {
        return 0;
    }
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f || c == '\\') {
            return 0;
        }
    }
    return 1;
}

const char *svc_signin_target(apr_pool_t *p, const char *ui_url, const char *return_to)
{
    const char *host;

    if (!return_to) {
        return ui_url;
    }
    if (ui_url[0] == '/') {
        return return_to;
    }
    host = strstr(ui_url, "://") + 3;
    return apr_pstrcat(p, apr_pstrmemdup(p, ui_url, (apr_size_t)(host - ui_url)
                                                    + strcspn(host, "/?#")),
                       return_to, NULL);
}

/*
 * Keyed BLAKE2b of a value under the sign-in key, with a one-letter domain
 * so the stored state hash, the nonce hash and the PKCE verifier of one
 * state can never be computed from one another.
 */
static void signin_mac(unsigned char out[32], const svc_config_t *conf, char domain,
                       const char *value, apr_pool_t *p)
{
    const char *msg = apr_psprintf(p, "%c:%s", domain, value);

    svc_keyed_hash(out, conf->signin_key, (const unsigned char *)msg, strlen(msg));
}

/* As a bytea parameter. */
static const char *signin_hash(apr_pool_t *p, const svc_config_t *conf, char domain,
                               const char *value)
{
    unsigned char h[32];

    signin_mac(h, conf, domain, value, p);
    return svc_bytea_param(p, h, sizeof(h));
}

const char *svc_signin_verifier(apr_pool_t *p, const svc_config_t *conf, const char *state)
{
    unsigned char h[32];

    /* 32 bytes make 43 base64url characters, RFC 7636's shortest verifier. */
    signin_mac(h, conf, 'v', state, p);
    return svc_b64url_encode(p, h, sizeof(h));
}

const char *svc_signin_challenge(apr_pool_t *p, const char *verifier)
{
    unsigned char h[32];

    svc_sha256(h, (const unsigned char *)verifier, strlen(verifier));
    return svc_b64url_encode(p, h, sizeof(h));
}

/* ------------------------------------------------------------------------ */
/* The flow                                                                 */

static apr_status_t signin_unavailable(svc_ctx_t *ctx)
{
    return svc_fail(ctx, 503, "sign_in_not_configured",
                    "Signing in through the code-hosting provider is not configured on this "
                    "server (the error log says what is missing). Personal access tokens "
                    "work as usual.");
}

static int signin_on(const svc_ctx_t *ctx)
{
    /* Without the server secret no session could be signed either. */
    return !ctx->conf->signin_off && ctx->conf->have_secret;
}

/* Where the provider sends the browser back: the public URL when one is
 * configured (behind a proxy), else the origin the browser used. */
static const char *callback_url(svc_ctx_t *ctx)
{
    const char *base = ctx->conf->public_url ? ctx->conf->public_url : ctx->self_origin;
    apr_size_t n;

    if (!base) {
        return NULL;
    }
    n = strlen(base);
    while (n > 0 && base[n - 1] == '/') {
        n--;
    }
    return apr_pstrcat(ctx->pool, apr_pstrmemdup(ctx->pool, base, n), "/auth/callback",
                       NULL);
}

apr_status_t svc_h_signin_login(svc_ctx_t *ctx)
{
    const char *return_to = apr_table_get(ctx->query, "return_to");
    const char *redirect_uri, *state, *nonce;
    svc_db_t *db;
    apr_status_t rv;

    if (!signin_on(ctx)) {
        return signin_unavailable(ctx);
    }
    if (return_to && !svc_signin_return_to_valid(return_to)) {
        svc_fail_field(ctx, "return_to", "invalid_return_to",
                       "return_to must be a path on the UI's site: one leading slash, "
                       "printable ASCII, no backslash, at most 2048 bytes.");
        return SVC_EPROBLEM;
    }
    if (!(redirect_uri = callback_url(ctx))) {
        return svc_fail(ctx, 400, "invalid_request",
                        "The request has no Host header to build the callback URL from.");
    }
    /* 256 bits each: the state travels through the provider, the nonce
     * stays in this browser's cookie. */
    state = svc_random_base62(ctx->pool, 43);
    nonce = svc_random_base62(ctx->pool, 43);

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_signin_sweep, ctx->pool, NULL)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_signin_start, ctx->pool, NULL,
                              signin_hash(ctx->pool, ctx->conf, 's', state),
                              signin_hash(ctx->pool, ctx->conf, 'n', nonce), return_to,
                              apr_itoa(ctx->pool, SVC_SIGNIN_TTL))) != APR_SUCCESS) {
        return rv;
    }
    svc_cookie_set(ctx, SVC_SIGNIN_COOKIE, nonce, "/auth/", SVC_SIGNIN_TTL);
    apr_table_setn(ctx->headers_out, "Referrer-Policy", "no-referrer");
    return svc_reply_redirect(ctx, svc_github_authorize_url(
                                       ctx->pool, ctx->conf, redirect_uri, state,
                                       svc_signin_challenge(ctx->pool,
                                                            svc_signin_verifier(
                                                                ctx->pool, ctx->conf,
                                                                state))));
}

/* Finds, links or creates the user; within the caller's transaction. */
static apr_status_t signin_account(svc_ctx_t *ctx, svc_db_t *db, const svc_github_user_t *u,
                                   const char **puid)
{
    apr_pool_t *p = ctx->pool;
    const char *vid = apr_psprintf(p, "%" APR_INT64_T_FMT, u->id);
    const char *name = *u->name ? u->name : u->login;
    svc_actor_t actor;
    svc_dbres_t *res;
    apr_status_t rv;

    /* The provider vouches for who this is; the user is not signed in yet. */
    svc_actor_from_ctx(ctx, &actor);
    actor.kind = "provider";

    rv = svc_db_execv(db, &st_signin_by_vcs, p, &res, vid);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 1) {
        *puid = svc_dbres_str(res, 0, 0);
        return svc_db_execv(db, &st_signin_refresh, p, NULL, *puid, u->email, u->name,
                            u->login);
    }

    rv = svc_db_execv(db, &st_signin_by_email, p, &res, u->email);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 1) {
        /*
         * An account with this address: one linked to another provider
         * identity is never taken over. One made by an operator is linked
         * only if the operator allowed it (svcctl user add
         * --allow-email-link): a verified address at the provider proves
         * control of the mailbox today, not that this is the person the
         * operator made the account for (a reassigned address, a provider
         * account made to match).
         */
        if (!svc_dbres_isnull(res, 0, 1)) {
            return svc_fail(ctx, 409, "email_in_use",
                            "Another account already uses the email address %s. Ask an "
                            "operator to sort the two accounts out.", u->email);
        }
        if (svc_dbres_bool(res, 0, 2) != 1) {
            return svc_fail(ctx, 409, "account_exists",
                            "An account with the email address %s exists already and may "
                            "not be claimed by signing in. Ask an operator to allow it "
                            "(svcctl user allow-email-link %s), then sign in again.",
                            u->email, u->email);
        }
        *puid = svc_dbres_str(res, 0, 0);
        rv = svc_db_execv(db, &st_signin_link, p, NULL, *puid, vid, u->login, name);
        if (rv == APR_SUCCESS) {
            rv = svc_audit_write(db, p, &actor, NULL, "user.linked", "user", *puid,
                                 svc_json_pool(p, json_pack("{s:s,s:I,s:s}", "email",
                                                            u->email, "vcs_user_id",
                                                            (json_int_t)u->id, "vcs_login",
                                                            u->login)));
        }
        return rv;
    }

    *puid = svc_id_new(p, "usr_");
    rv = svc_db_execv(db, &st_signin_create, p, NULL, *puid, u->email, name, vid, u->login);
    if (rv == APR_SUCCESS) {
        rv = svc_audit_write(db, p, &actor, NULL, "user.created", "user", *puid,
                             svc_json_pool(p, json_pack("{s:s,s:b,s:s,s:I,s:s}", "email",
                                                        u->email, "founder", 0, "via",
                                                        "sign_in", "vcs_user_id",
                                                        (json_int_t)u->id, "vcs_login",
                                                        u->login)));
    }
    return rv;
}

/* What a sign-in that the provider confirmed finishes with. */
typedef struct {
    const svc_github_user_t *user;
    const char *return_to;
} svc_signin_done_t;

/*
 * The account, the session and their audit entries, all or nothing, and
 * the answer: the session cookie and the way back (baton: the
 * svc_signin_done_t).
 */
static apr_status_t signin_finish(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const svc_signin_done_t *done = baton;
    const svc_github_user_t *u = done->user;
    const char *uid = NULL, *sid = NULL, *cookie;
    svc_actor_t actor;
    apr_status_t rv;

    if ((rv = signin_account(ctx, db, u, &uid)) != APR_SUCCESS
        || (rv = svc_session_create(db, ctx->pool, ctx->conf, uid, ctx->client_ip,
                                    ctx->user_agent, &cookie, &sid)) != APR_SUCCESS) {
        return rv;
    }
    svc_actor_from_ctx(ctx, &actor);
    actor.user_id = uid;
    rv = svc_audit_write(db, ctx->pool, &actor, NULL, "user.signed_in", "user", uid,
                         svc_json_pool(ctx->pool,
                                       json_pack("{s:s,s:s,s:s,s:I}", "session_id", sid,
                                                 "method", "oauth", "vcs_login", u->login,
                                                 "vcs_user_id", (json_int_t)u->id)));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    svc_cookie_set(ctx, SVC_SESSION_COOKIE, cookie, "/", ctx->conf->session_lifetime);
    return svc_reply_redirect(ctx, svc_signin_target(ctx->pool, ctx->conf->ui_url,
                                                     done->return_to));
}

apr_status_t svc_h_signin_callback(svc_ctx_t *ctx)
{
    const char *state = apr_table_get(ctx->query, "state");
    const char *code = apr_table_get(ctx->query, "code");
    const char *denied = apr_table_get(ctx->query, "error");
    const char *nonce, *return_to, *redirect_uri;
    svc_github_user_t user;
    svc_signin_done_t done;
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if (!signin_on(ctx)) {
        return signin_unavailable(ctx);
    }
    /* Whatever happens now, this attempt is over: the state is consumed. */
    svc_cookie_set(ctx, SVC_SIGNIN_COOKIE, "", "/auth/", 0);
    apr_table_setn(ctx->headers_out, "Referrer-Policy", "no-referrer");

    if (!state || !*state || strlen(state) > 256) {
        return svc_fail(ctx, 400, "invalid_state",
                        "The sign-in answer has no state; start again from the sign-in page.");
    }
    nonce = svc_cookie_get(ctx->pool, apr_table_get(ctx->headers_in, "Cookie"),
                           SVC_SIGNIN_COOKIE);
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_db_execv(db, &st_signin_consume, ctx->pool, &res,
                      signin_hash(ctx->pool, ctx->conf, 's', state),
                      nonce && *nonce ? signin_hash(ctx->pool, ctx->conf, 'n', nonce) : NULL);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_fail(ctx, 400, "invalid_state",
                        "This sign-in is unknown, was completed already or has expired; "
                        "start again from the sign-in page.");
    }
    if (svc_dbres_bool(res, 0, 0) != 1) {
        /* A state without this browser's nonce: a link someone else started
         * (login CSRF), or a browser that dropped the cookie. */
        return svc_fail(ctx, 400, "invalid_state",
                        "This sign-in was not started in this browser (or its sign-in cookie "
                        "is missing); start again from the sign-in page, with cookies "
                        "enabled.");
    }
    if (svc_dbres_bool(res, 0, 1) != 1) {
        return svc_fail(ctx, 400, "invalid_state",
                        "This sign-in took longer than %d minutes; start again.",
                        SVC_SIGNIN_TTL / 60);
    }
    return_to = svc_dbres_str(res, 0, 2);
    if (denied) {
        return svc_fail(ctx, 401, "sign_in_denied",
                        "The code-hosting provider did not sign you in (%s).",
                        svc_printable(ctx->pool, denied, 64));
    }
    if (!code || !*code || strlen(code) > 512) {
        return svc_fail(ctx, 400, "invalid_request",
                        "The sign-in answer has no usable code; start again.");
    }
    if (!(redirect_uri = callback_url(ctx))) {
        return svc_fail(ctx, 400, "invalid_request",
                        "The request has no Host header to build the callback URL from.");
    }

    /* Never hold a pooled connection while the provider takes its time. */
    if ((rv = svc_ctx_db_release(ctx)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_github_sign_in(ctx, code, svc_signin_verifier(ctx->pool, ctx->conf, state),
                            redirect_uri, &user);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    done.user = &user;
    done.return_to = return_to;
    /*
     * Two first sign-ins of one person at the same moment: the loser's
     * insert hits the unique index; the second attempt finds the row.
     */
    rv = svc_write(ctx, signin_finish, &done);
    if (rv == SVC_ECONFLICT) {
        rv = svc_write(ctx, signin_finish, &done);
    }
    return rv;
}

static apr_status_t logout(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    svc_actor_t actor;
    apr_status_t rv;
    int found;

    svc_actor_from_ctx(ctx, &actor);
    rv = svc_session_revoke(db, ctx->pool, &actor, ctx->who->user_id, ctx->who->session_id,
                            "logout", &found);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    svc_cookie_set(ctx, SVC_SESSION_COOKIE, "", "/", 0);
    return svc_reply_empty(ctx);
}

apr_status_t svc_h_signin_logout(svc_ctx_t *ctx)
{
    if (ctx->who->via != SVC_VIA_SESSION) {
        return svc_fail(ctx, 400, "not_a_session",
                        "Only a signed-in session can sign out; a personal access token is "
                        "revoked with DELETE /api/me/tokens/:id.");
    }
    return svc_write(ctx, logout, NULL);
}
