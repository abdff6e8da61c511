/*
 * test_signin.c: the parts of sign-in that need no server: configuration
 * from references, redirect targets, PKCE, and reading the provider's
 * answers (GitHub's shapes, and the malformed ones a provider could send).
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_config.h"
#include "svc_ctx.h"
#include "svc_crypto.h"
#include "svc_github.h"
#include "svc_signin.h"
#include "svc_vcs.h"

#include <apr_file_io.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------------- */
/* Configuration                                                          */

static svc_config_t *conf_new(apr_pool_t *p)
{
    svc_config_t *conf = apr_pcalloc(p, sizeof(*conf));

    svc_config_defaults(conf, p);
    return conf;
}

static apr_status_t configure(apr_pool_t *p, svc_config_t *conf, const char *id,
                              const char *secret, const char *web, const char *api,
                              const char **perr)
{
    svc_signin_refs_t refs;

    refs.client_id = id;
    refs.client_secret = secret;
    refs.web_url = web;
    refs.api_url = api;
    return svc_signin_configure(conf, &refs, p, perr);
}

SVC_TEST(config_defaults_are_off)
{
    svc_config_t *conf = conf_new(p);
    const char *err;

    SVC_CHECK(conf->signin_off != NULL);
    SVC_CHECK(configure(p, conf, NULL, NULL, NULL, NULL, &err) == APR_SUCCESS);
    SVC_CHECK(conf->signin_off != NULL);
    SVC_CHECK_STR(conf->vcs_web_url, "https://github.com");
    SVC_CHECK_STR(conf->vcs_api_url, "https://api.github.com");
    SVC_CHECK_STR(conf->ui_url, "/");
    SVC_CHECK_INT(conf->vcs_timeout_ms, 10000);
}

SVC_TEST(config_env_unset_or_empty_is_off_not_an_error)
{
    svc_config_t *conf = conf_new(p);
    const char *err = NULL;

    unsetenv("SVC_UT_ID");
    unsetenv("SVC_UT_WEB");
    setenv("SVC_UT_SECRET", "", 1);
    SVC_CHECK(configure(p, conf, "env:SVC_UT_ID", "env:SVC_UT_SECRET", "env:SVC_UT_WEB",
                        "env:SVC_UT_WEB", &err) == APR_SUCCESS);
    SVC_CHECK(conf->signin_off && strstr(conf->signin_off, "SVC_UT_ID"));
    SVC_CHECK(conf->signin_off && strstr(conf->signin_off, "SVC_UT_SECRET"));
    /* Unset URLs mean the public provider. */
    SVC_CHECK_STR(conf->vcs_web_url, "https://github.com");

    setenv("SVC_UT_ID", "Iv1.abc", 1);
    conf = conf_new(p);
    SVC_CHECK(configure(p, conf, "env:SVC_UT_ID", "env:SVC_UT_SECRET", NULL, NULL, &err)
              == APR_SUCCESS);
    SVC_CHECK(conf->signin_off && strstr(conf->signin_off, "SVC_UT_SECRET")
              && !strstr(conf->signin_off, "SVC_UT_ID"));
    unsetenv("SVC_UT_ID");
    unsetenv("SVC_UT_SECRET");
}

SVC_TEST(config_env_set_is_on)
{
    svc_config_t *conf = conf_new(p);
    const char *err = NULL;

    setenv("SVC_UT_ID", "Iv1.0123abcd", 1);
    setenv("SVC_UT_SECRET", "s3cr3t-value\n", 1);
    setenv("SVC_UT_WEB", "https://ghe.example.com/", 1);
    setenv("SVC_UT_API", "https://ghe.example.com/api/v3//", 1);
    SVC_CHECK(configure(p, conf, "env:SVC_UT_ID", "env:SVC_UT_SECRET", "env:SVC_UT_WEB",
                        "env:SVC_UT_API", &err) == APR_SUCCESS);
    SVC_CHECK(conf->signin_off == NULL);
    SVC_CHECK_STR(conf->oauth_client_id, "Iv1.0123abcd");
    /* A trailing newline is not part of a secret. */
    SVC_CHECK_STR(conf->oauth_client_secret, "s3cr3t-value");
    SVC_CHECK_STR(conf->vcs_web_url, "https://ghe.example.com");
    SVC_CHECK_STR(conf->vcs_api_url, "https://ghe.example.com/api/v3");

    /* Literal client id and URLs are fine too. */
    conf = conf_new(p);
    SVC_CHECK(configure(p, conf, "plain-id", "env:SVC_UT_SECRET", "http://127.0.0.1:8000",
                        NULL, &err) == APR_SUCCESS);
    SVC_CHECK(conf->signin_off == NULL);
    SVC_CHECK_STR(conf->oauth_client_id, "plain-id");
    SVC_CHECK_STR(conf->vcs_web_url, "http://127.0.0.1:8000");
    unsetenv("SVC_UT_ID");
    unsetenv("SVC_UT_SECRET");
    unsetenv("SVC_UT_WEB");
    unsetenv("SVC_UT_API");
}

SVC_TEST(config_errors)
{
    svc_config_t *conf = conf_new(p);
    const char *err = NULL;
    char path[] = "/tmp/svc_ut_secretXXXXXX";
    int fd;

    /* An inline secret is refused outright. */
    SVC_CHECK(configure(p, conf, "id", "the-secret-itself", NULL, NULL, &err) != APR_SUCCESS);
    SVC_CHECK(err && strstr(err, "reference"));

    /* Set but wrong is an error, not "off". */
    setenv("SVC_UT_WEB", "ftp://ghe.example.com", 1);
    SVC_CHECK(configure(p, conf_new(p), "id", "env:HOME", "env:SVC_UT_WEB", NULL, &err)
              != APR_SUCCESS);
    SVC_CHECK(err && strstr(err, "SvcVcsWebURL"));
    setenv("SVC_UT_WEB", "https://user:pw@ghe.example.com", 1);
    SVC_CHECK(configure(p, conf_new(p), "id", "env:HOME", NULL, "env:SVC_UT_WEB", &err)
              != APR_SUCCESS);
    setenv("SVC_UT_WEB", "https://ghe.example.com/?x=1", 1);
    SVC_CHECK(configure(p, conf_new(p), "id", "env:HOME", "env:SVC_UT_WEB", NULL, &err)
              != APR_SUCCESS);
    unsetenv("SVC_UT_WEB");
    SVC_CHECK(configure(p, conf_new(p), "id with space", "env:HOME", NULL, NULL, &err)
              != APR_SUCCESS);
    SVC_CHECK(configure(p, conf_new(p), "id", "file:/nonexistent/svc-secret", NULL, NULL,
                        &err) != APR_SUCCESS);

    /* A secret file readable by others is refused; mode 0600 is read. */
    fd = mkstemp(path);
    SVC_CHECK(fd >= 0);
    SVC_CHECK(write(fd, "filesecret\n", 11) == 11);
    close(fd);
    chmod(path, 0644);
    SVC_CHECK(configure(p, conf_new(p), "id", apr_pstrcat(p, "file:", path, NULL), NULL, NULL,
                        &err) != APR_SUCCESS);
    chmod(path, 0600);
    conf = conf_new(p);
    SVC_CHECK(configure(p, conf, "id", apr_pstrcat(p, "file:", path, NULL), NULL, NULL, &err)
              == APR_SUCCESS);
    SVC_CHECK_STR(conf->oauth_client_secret, "filesecret");
    SVC_CHECK(conf->signin_off == NULL);
    unlink(path);
}

SVC_TEST(base_and_ui_urls)
{
    const char *n;

    SVC_CHECK(svc_signin_check_base_url(p, "https://github.com", &n) == NULL);
    SVC_CHECK(svc_signin_check_base_url(p, "http://127.0.0.1:9/api/v3/", &n) == NULL);
    SVC_CHECK_STR(n, "http://127.0.0.1:9/api/v3");
    SVC_CHECK(svc_signin_check_base_url(p, "github.com", &n) != NULL);
    SVC_CHECK(svc_signin_check_base_url(p, "https://", &n) != NULL);
    SVC_CHECK(svc_signin_check_base_url(p, "https:///x", &n) != NULL);
    SVC_CHECK(svc_signin_check_base_url(p, "https://a b", &n) != NULL);
    SVC_CHECK(svc_signin_check_base_url(p, "https://h/#f", &n) != NULL);
    SVC_CHECK(svc_signin_check_base_url(p, "javascript:alert(1)", &n) != NULL);

    SVC_CHECK(svc_signin_check_ui_url(p, "/") == NULL);
    SVC_CHECK(svc_signin_check_ui_url(p, "/app/") == NULL);
    SVC_CHECK(svc_signin_check_ui_url(p, "https://app.example.com/#/home") == NULL);
    SVC_CHECK(svc_signin_check_ui_url(p, "//evil.example") != NULL);
    SVC_CHECK(svc_signin_check_ui_url(p, "app") != NULL);
    SVC_CHECK(svc_signin_check_ui_url(p, "https://evil.example\\@app") != NULL);
}

/* ---------------------------------------------------------------------- */
/* Redirect targets                                                       */

SVC_TEST(return_to)
{
    SVC_CHECK(svc_signin_return_to_valid("/"));
    SVC_CHECK(svc_signin_return_to_valid("/orgs/acme/projects?tab=runs#top"));
    SVC_CHECK(svc_signin_return_to_valid("/%2F%2Fevil.example"));
    SVC_CHECK(!svc_signin_return_to_valid(""));
    SVC_CHECK(!svc_signin_return_to_valid("//evil.example/"));
    SVC_CHECK(!svc_signin_return_to_valid("/\\evil.example"));
    SVC_CHECK(!svc_signin_return_to_valid("/a\\b"));
    SVC_CHECK(!svc_signin_return_to_valid("https://evil.example/"));
    SVC_CHECK(!svc_signin_return_to_valid("evil.example"));
    SVC_CHECK(!svc_signin_return_to_valid("javascript:alert(1)"));
    SVC_CHECK(!svc_signin_return_to_valid("/\r\nSet-Cookie:x=y"));
    SVC_CHECK(!svc_signin_return_to_valid("/\t/evil.example"));
    SVC_CHECK(!svc_signin_return_to_valid("/ /evil"));
    SVC_CHECK(!svc_signin_return_to_valid("/caf\xc3\xa9"));
    {
        char *longest = apr_palloc(p, 2050);
        memset(longest, 'a', 2049);
        longest[0] = '/';
        longest[2049] = '\0';
        SVC_CHECK(!svc_signin_return_to_valid(longest));
        longest[2048] = '\0';
        SVC_CHECK(svc_signin_return_to_valid(longest));
    }
}

SVC_TEST(target)
{
    SVC_CHECK_STR(svc_signin_target(p, "/", NULL), "/");
    SVC_CHECK_STR(svc_signin_target(p, "/", "/projects"), "/projects");
    SVC_CHECK_STR(svc_signin_target(p, "/app/", "/x?y=1"), "/x?y=1");
    SVC_CHECK_STR(svc_signin_target(p, "https://ui.example.com/app#/home", NULL),
                  "https://ui.example.com/app#/home");
    SVC_CHECK_STR(svc_signin_target(p, "https://ui.example.com/app#/home", "/orgs/a"),
                  "https://ui.example.com/orgs/a");
    SVC_CHECK_STR(svc_signin_target(p, "http://ui.example.com:8443", "/x"),
                  "http://ui.example.com:8443/x");
    SVC_CHECK_STR(svc_signin_target(p, "https://ui.example.com?x", "/y"),
                  "https://ui.example.com/y");
}

SVC_TEST(cookies_and_redirects)
{
    svc_config_t *conf = conf_new(p);
    svc_ctx_t *ctx = svc_ctx_create(p, conf);
    const apr_array_header_t *h;
    const apr_table_entry_t *e;

    svc_cookie_set(ctx, "svc_signin", "n0nce", "/auth/", 600);
    svc_cookie_set(ctx, "service_session", "", "/", 0);
    ctx->is_tls = 1;
    svc_cookie_set(ctx, "service_session", "eyJ.x.y", "/", 604800);
    /* Several Set-Cookie headers, each kept. */
    h = apr_table_elts(ctx->headers_out);
    e = (const apr_table_entry_t *)h->elts;
    SVC_CHECK_INT(h->nelts, 3);
    SVC_CHECK_STR(e[0].val, "svc_signin=n0nce; Path=/auth/; Max-Age=600; HttpOnly; SameSite=Lax");
    SVC_CHECK_STR(e[1].val, "service_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax");
    SVC_CHECK_STR(e[2].val, "service_session=eyJ.x.y; Path=/; Max-Age=604800; HttpOnly; "
                            "SameSite=Lax; Secure");

    SVC_CHECK(svc_reply_redirect(ctx, "https://ui.example.com/x") == APR_SUCCESS);
    SVC_CHECK_INT(ctx->status, 302);
    SVC_CHECK_STR(apr_table_get(ctx->headers_out, "Location"), "https://ui.example.com/x");
    SVC_CHECK(ctx->resp_body == NULL);
    SVC_CHECK(svc_reply_redirect(ctx, "/x\r\nSet-Cookie: a=b") == APR_EINVAL);
    SVC_CHECK(svc_reply_redirect(ctx, "/x\tz") == APR_EINVAL);
}

/* ---------------------------------------------------------------------- */
/* PKCE                                                                   */

SVC_TEST(pkce)
{
    svc_config_t *conf = conf_new(p);
    const char *v1, *v2, *v3;
    apr_size_t i;

    /* RFC 7636, appendix B. */
    SVC_CHECK_STR(svc_signin_challenge(p, "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
                  "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");

    memset(conf->signin_key, 7, sizeof(conf->signin_key));
    v1 = svc_signin_verifier(p, conf, "state-one");
    v2 = svc_signin_verifier(p, conf, "state-one");
    v3 = svc_signin_verifier(p, conf, "state-two");
    SVC_CHECK_STR(v1, v2);
    SVC_CHECK(strcmp(v1, v3) != 0);
    /* 43 unreserved characters: RFC 7636's shortest verifier. */
    SVC_CHECK_INT(strlen(v1), 43);
    for (i = 0; i < strlen(v1); i++) {
        SVC_CHECK(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                         v1[i]) != NULL);
    }
    /* Another server key, another verifier. */
    memset(conf->signin_key, 8, sizeof(conf->signin_key));
    SVC_CHECK(strcmp(v1, svc_signin_verifier(p, conf, "state-one")) != 0);
}

SVC_TEST(authorize_url)
{
    svc_config_t *conf = conf_new(p);
    const char *url;

    conf->oauth_client_id = "Iv1.a b&c";
    conf->vcs_web_url = "https://ghe.example.com";
    url = svc_github_authorize_url(p, conf, "https://svc.example.com/auth/callback", "st4te",
                                   "ch-al_lenge");
    SVC_CHECK_STR(url, "https://ghe.example.com/login/oauth/authorize"
                       "?client_id=Iv1.a%20b%26c"
                       "&redirect_uri=https%3A%2F%2Fsvc.example.com%2Fauth%2Fcallback"
                       "&scope=read%3Auser%20user%3Aemail&state=st4te"
                       "&code_challenge=ch-al_lenge&code_challenge_method=S256");
    SVC_CHECK_STR(svc_url_encode(p, "a~b.c-d_e/\xff"), "a~b.c-d_e%2F%FF");
}

/* ---------------------------------------------------------------------- */
/* The provider's answers                                                 */

#define PARSE_TOKEN(s) svc_vcs_parse_token(p, s, strlen(s), &tok, &err)

SVC_TEST(parse_token)
{
    const char *tok, *err;

    SVC_CHECK(PARSE_TOKEN("{\"access_token\":\"gho_abc123\",\"token_type\":\"bearer\","
                          "\"scope\":\"read:user,user:email\"}") == APR_SUCCESS);
    SVC_CHECK_STR(tok, "gho_abc123");
    SVC_CHECK(PARSE_TOKEN("{\"access_token\":\"gho_x\"}") == APR_SUCCESS);
    /* GitHub reports refusals with 200 and an error member. */
    SVC_CHECK(PARSE_TOKEN("{\"error\":\"bad_verification_code\","
                          "\"error_description\":\"The code passed is incorrect or expired.\"}")
              == APR_EACCES);
    SVC_CHECK_STR(err, "bad_verification_code");
    SVC_CHECK(PARSE_TOKEN("{\"error\":\"incorrect_client_credentials\"}") == APR_EACCES);
    SVC_CHECK(PARSE_TOKEN("{\"error\":{\"x\":1}}") == APR_EACCES);
    SVC_CHECK(PARSE_TOKEN("access_token=gho_x&token_type=bearer") == APR_EINVAL);
    SVC_CHECK(PARSE_TOKEN("[]") == APR_EINVAL);
    SVC_CHECK(PARSE_TOKEN("{}") == APR_EINVAL);
    SVC_CHECK(PARSE_TOKEN("{\"access_token\":\"\"}") == APR_EINVAL);
    SVC_CHECK(PARSE_TOKEN("{\"access_token\":\"a b\"}") == APR_EINVAL);
    SVC_CHECK(PARSE_TOKEN("{\"access_token\":\"a\\r\\nX-Injected: 1\"}") == APR_EINVAL);
    SVC_CHECK(PARSE_TOKEN("{\"access_token\":42}") == APR_EINVAL);
    SVC_CHECK(PARSE_TOKEN("{\"access_token\":\"x\",\"token_type\":\"mac\"}") == APR_EINVAL);
    SVC_CHECK(PARSE_TOKEN("{\"access_token\":\"x\",\"access_token\":\"y\"}") == APR_EINVAL);
}

#define PARSE_USER(s) svc_github_parse_user(p, s, strlen(s), &u, &err)

SVC_TEST(parse_user)
{
    svc_github_user_t u;
    const char *err;

    SVC_CHECK(PARSE_USER("{\"login\":\"octocat\",\"id\":583231,\"name\":\"The Octocat\","
                         "\"email\":null,\"type\":\"User\"}") == APR_SUCCESS);
    SVC_CHECK_INT(u.id, 583231);
    SVC_CHECK_STR(u.login, "octocat");
    SVC_CHECK_STR(u.name, "The Octocat");
    SVC_CHECK(PARSE_USER("{\"login\":\"octo\",\"id\":9007199254740993}") == APR_SUCCESS);
    SVC_CHECK(u.id == 9007199254740993LL);
    SVC_CHECK_STR(u.name, "");
    SVC_CHECK(PARSE_USER("{\"login\":\"octo\",\"id\":1,\"name\":null}") == APR_SUCCESS);
    SVC_CHECK_STR(u.name, "");
    SVC_CHECK(PARSE_USER("{\"login\":\"octo\",\"id\":1,\"name\":\"a\\u0007b\"}") == APR_SUCCESS);
    SVC_CHECK_STR(u.name, "a b");
    SVC_CHECK(PARSE_USER("{\"login\":\"octo\",\"id\":\"1\"}") == APR_EINVAL);
    SVC_CHECK(PARSE_USER("{\"login\":\"octo\",\"id\":0}") == APR_EINVAL);
    SVC_CHECK(PARSE_USER("{\"login\":\"octo\",\"id\":-5}") == APR_EINVAL);
    SVC_CHECK(PARSE_USER("{\"login\":\"octo\",\"id\":1.5}") == APR_EINVAL);
    SVC_CHECK(PARSE_USER("{\"id\":1}") == APR_EINVAL);
    SVC_CHECK(PARSE_USER("{\"login\":\"oc to\",\"id\":1}") == APR_EINVAL);
    SVC_CHECK(PARSE_USER("{\"login\":\"octo\",\"id\":1,\"name\":5}") == APR_EINVAL);
    SVC_CHECK(PARSE_USER("{\"message\":\"Bad credentials\"") == APR_EINVAL);
    {
        /* 300 two-byte characters are cut to 200 characters on a boundary. */
        const char *long_name = "";
        int i;
        for (i = 0; i < 300; i++) {
            long_name = apr_pstrcat(p, long_name, "\xc3\xa9", NULL);
        }
        SVC_CHECK(PARSE_USER(apr_psprintf(p, "{\"login\":\"o\",\"id\":1,\"name\":\"%s\"}",
                                          long_name)) == APR_SUCCESS);
        SVC_CHECK_INT(strlen(u.name), 400);
    }
}

#define PARSE_EMAILS(s) svc_github_parse_emails(p, s, strlen(s), &email, &err)

SVC_TEST(parse_emails)
{
    const char *email, *err;

    SVC_CHECK(PARSE_EMAILS("[{\"email\":\"o@old.example\",\"primary\":false,\"verified\":true},"
                           "{\"email\":\"octo@example.com\",\"primary\":true,"
                           "\"verified\":true,\"visibility\":\"public\"}]") == APR_SUCCESS);
    SVC_CHECK_STR(email, "octo@example.com");
    SVC_CHECK(PARSE_EMAILS("[{\"email\":\"octo@example.com\",\"primary\":true,"
                           "\"verified\":false}]") == SVC_ENOTFOUND);
    SVC_CHECK_STR(err, "email_not_verified");
    /* "true" as a string is not true. */
    SVC_CHECK(PARSE_EMAILS("[{\"email\":\"octo@example.com\",\"primary\":true,"
                           "\"verified\":\"true\"}]") == SVC_ENOTFOUND);
    SVC_CHECK(PARSE_EMAILS("[{\"email\":\"a@example.com\",\"primary\":false,"
                           "\"verified\":true}]") == SVC_ENOTFOUND);
    SVC_CHECK_STR(err, "no_primary_email");
    SVC_CHECK(PARSE_EMAILS("[]") == SVC_ENOTFOUND);
    SVC_CHECK(PARSE_EMAILS("{}") == APR_EINVAL);
    SVC_CHECK(PARSE_EMAILS("[1]") == APR_EINVAL);
    SVC_CHECK(PARSE_EMAILS("[{\"primary\":true,\"verified\":true}]") == APR_EINVAL);
    SVC_CHECK(PARSE_EMAILS("[{\"email\":\"not an address\",\"primary\":true,"
                           "\"verified\":true}]") == APR_EINVAL);
}

int main(int argc, const char *const *argv)
{
    svc_crypto_init();
    return svc_test_run(argc, argv);
}
