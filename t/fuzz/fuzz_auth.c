/*
 * fuzz_auth.c: the credentials a request carries, as the kernel reads them
 * (kernel/svc_auth.c, svc_auth_check on a real route that needs a user):
 * the Authorization header (the Bearer scheme, then a personal access
 * token's format and checksum, areas/identity/svc_tokens.c through
 * base/svc_crypto.c's svc_secret_token_well_formed), or the Cookie header
 * (svc_cookie_get, then the session JWT and its claims,
 * areas/identity/svc_sessions.c); and the redaction of both from a log
 * line (base/svc_redact.c). Share links' tokens (svc_shr_) have the same
 * format and are checked the same way.
 *
 * There is no database here: a credential that passes every check made
 * before the database is asked ends in SVC_EDBDOWN, which is how the
 * target tells it passed.
 *
 * Input: a flags byte, then "<Authorization>\n<Cookie>". Flags: 1 send
 * Authorization, 2 send Cookie, 4 give the bearer token the checksum it
 * needs (so well-formed tokens are reached by mutation, which cannot find
 * a CRC-32 by itself).
 *
 * Properties: a refusal is a 401 problem document with WWW-Authenticate;
 * what reaches the database is a well-formed token (or a cookie whose JWT
 * verifies, with string sub and sid); a well-formed token of ours (its
 * random part: the prefix is no secret), or a verified cookie, in a log
 * line is gone after svc_redact.
 */
#include "fuzz_svc.h"
#include "svc_areas.h"
#include "svc_jwt.h"
#include "svc_shares.h"
#include "svc_tokens.h"

static const svc_route_t *route;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const svc_route_t *r;

    (void)argc;
    (void)argv;
    fuzz_init();
    for (r = svc_route_table(fuzz_root(), svc_areas); r->method; r++) {
        if (r->op_id && strcmp(r->op_id, "getMe") == 0) {
            route = r;
        }
    }
    if (!route || route->auth != SVC_AUTH_USER) {
        fprintf(stderr, "fuzz_auth: no route getMe for users\n");
        abort();
    }
    return 0;
}

/* Occurrences of needle in hay, overlapping ones too. */
static int count(const char *hay, const char *needle)
{
    int n = 0;

    for (hay = strstr(hay, needle); hay; hay = strstr(hay + 1, needle)) {
        n++;
    }
    return n;
}

/* Tokens of ours in text: well-formed, with either prefix. */
static int is_token_at(const char *at, const char **pprefix)
{
    static const char *const prefixes[] = { SVC_PAT_PREFIX, SVC_SHARE_PREFIX, NULL };
    char token[SVC_SECRET_TOKEN_LEN + 1];
    const char *const *pre;

    if (strlen(at) < SVC_SECRET_TOKEN_LEN) {
        return 0;
    }
    memcpy(token, at, SVC_SECRET_TOKEN_LEN);
    token[SVC_SECRET_TOKEN_LEN] = '\0';
    for (pre = prefixes; *pre; pre++) {
        if (svc_secret_token_well_formed(token, *pre)) {
            *pprefix = *pre;
            return 1;
        }
    }
    return 0;
}

/*
 * Every well-formed token of ours in `text` is gone from `redacted`: not
 * even its random part stays (the prefix is no secret, and with the random
 * part a reader rebuilds the token). The same characters may stand
 * elsewhere in the text, outside any token: those may stay, so what is
 * checked is that each token took its occurrences along.
 */
static void check_tokens_redacted(const char *text, const char *redacted)
{
    char secret[SVC_SECRET_TOKEN_RANDOM + 1];
    const char *at, *pre, *other;
    int tokens;

    for (at = strstr(text, "svc_"); at; at = strstr(at + 1, "svc_")) {
        if (!is_token_at(at, &pre)) {
            continue;
        }
        memcpy(secret, at + SVC_SECRET_TOKEN_PREFIX_LEN, SVC_SECRET_TOKEN_RANDOM);
        secret[SVC_SECRET_TOKEN_RANDOM] = '\0';
        tokens = 0;
        for (other = strstr(text, "svc_"); other; other = strstr(other + 1, "svc_")) {
            tokens += is_token_at(other, &pre)
                      && memcmp(other + SVC_SECRET_TOKEN_PREFIX_LEN, secret,
                                SVC_SECRET_TOKEN_RANDOM) == 0;
        }
        if (count(redacted, secret) + tokens > count(text, secret)) {
            fprintf(stderr, "fuzz_auth: %.*s survives redaction in \"%s\"\n",
                    SVC_SECRET_TOKEN_LEN, at, redacted);
        }
        FUZZ_ASSERT(count(redacted, secret) + tokens <= count(text, secret));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = { data, size };
    const char *authz, *cookie, *tok, *line, *redacted, *sess, *why;
    unsigned flags;
    svc_ctx_t *ctx;
    apr_pool_t *p;
    apr_status_t rv;
    json_t *claims;

    apr_pool_create(&p, fuzz_root());
    ctx = fuzz_ctx(p);
    ctx->route = route;
    ctx->method = route->method;
    ctx->path = route->path;
    flags = fuzz_byte(&in);
    authz = fuzz_cut(&in, p, '\n', NULL);
    cookie = fuzz_cut(&in, p, -1, NULL);
    if (!authz) {
        authz = "";
    }
    if (!cookie) {
        cookie = "";
    }
    tok = svc_auth_bearer(authz);
    if ((flags & 4) && tok && strlen(tok) == SVC_SECRET_TOKEN_LEN) {
        char *fixed = apr_pstrdup(p, authz);
        char *body = fixed + (tok - authz);

        svc_checksum62(body, SVC_SECRET_TOKEN_LEN - 6, body + SVC_SECRET_TOKEN_LEN - 6);
        authz = fixed;
        tok = svc_auth_bearer(authz);
    }
    if (flags & 1) {
        apr_table_setn(ctx->headers_in, "Authorization", authz);
    }
    if (flags & 2) {
        apr_table_setn(ctx->headers_in, "Cookie", cookie);
    }

    rv = svc_auth_check(ctx);
    FUZZ_ASSERT(rv != APR_SUCCESS);
    if (rv == SVC_EDBDOWN) {
        if (flags & 1) {
            FUZZ_ASSERT(tok && svc_pat_well_formed(tok));
        }
        else {
            sess = svc_cookie_get(p, cookie, SVC_SESSION_COOKIE);
            FUZZ_ASSERT(sess != NULL);
            FUZZ_ASSERT(svc_jwt_verify_hs256(p, fuzz_conf()->session_key, sess,
                                             apr_time_sec(apr_time_now()), &claims, &why)
                        == APR_SUCCESS);
            FUZZ_ASSERT(svc_json_str(claims, "sub") && svc_json_str(claims, "sid"));
        }
    }
    else {
        FUZZ_ASSERT(fuzz_check_problem(ctx, rv) == 401);
        FUZZ_ASSERT(apr_table_get(ctx->headers_out, "WWW-Authenticate") != NULL);
    }

    /* The credentials as a log line would carry them. */
    line = apr_pstrcat(p, "GET /api/me Authorization: ", authz, " Cookie: ", cookie, NULL);
    redacted = svc_redact(p, line);
    FUZZ_ASSERT(redacted != NULL);
    check_tokens_redacted(line, redacted);
    if (rv == SVC_EDBDOWN && !(flags & 1)) {
        sess = svc_cookie_get(p, cookie, SVC_SESSION_COOKIE);
        FUZZ_ASSERT(!strstr(redacted, sess));
    }
    apr_pool_destroy(p);
    return 0;
}
