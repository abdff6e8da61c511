/*
 * svc_vcs_setup.c: the setup wizard, GitHub's App manifest flow.
 *
 *   GET /admin/vcs-app/setup[?org=ORG&name=NAME]
 *       a page whose form posts the App manifest to
 *       {web}/settings/apps/new?state=... (or the organization's
 *       /organizations/ORG/settings/apps/new); the founder submits it and
 *       confirms at the provider
 *   GET /admin/vcs-app/setup?code=...&state=...
 *       the provider's return: the state must be this session's, the code
 *       becomes the App's keys (POST /app-manifests/{code}/conversions),
 *       which are written to SvcVcsAppCredentials; httpd reads them at its
 *       next (graceful) restart
 *
 * No script runs on these pages: the manifest travels in a hidden field of
 * a form the founder submits.
 */
#include "svc_vcs_setup.h"
#include "svc_vcs_client.h"
#include "svc_vcs_state.h"

#include <string.h>

const svc_qparam_t svc_q_vcs_setup[] = {
    { "org", "string", "Create the App under this organization of the provider." },
    { "name", "string", "The App's name (the provider lets you change it before creating)." },
    { "code", "string", "Set by the provider: the manifest conversion code." },
    { "state", "string", "Set by the provider: the state this wizard issued." },
    { NULL, NULL, NULL }
};

/* An account or organization login as the provider allows them. */
static int login_valid(const char *s)
{
    apr_size_t n = strlen(s);

    return n >= 1 && n <= 39 && s[0] != '-'
        && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* The service's base URL as the provider and browsers reach it. */
static const char *base_url(svc_ctx_t *ctx)
{
    const char *base = ctx->conf->public_url ? ctx->conf->public_url : ctx->self_origin;
    apr_size_t n = base ? strlen(base) : 0;

    while (n > 0 && base[n - 1] == '/') {
        n--;
    }
    return base ? apr_pstrmemdup(ctx->pool, base, n) : NULL;
}

/* The App the wizard creates: SPEC.md's permissions and events. */
static const char *manifest(svc_ctx_t *ctx, const char *base, const char *name)
{
    json_t *m = json_pack(
        "{s:s,s:s,s:{s:s,s:b},s:s,s:[s],s:s,s:b,s:b,s:b,s:{s:s,s:s},s:[s,s]}",
        "name", name, "url", base,
        "hook_attributes", "url", apr_pstrcat(ctx->pool, base, "/webhooks/vcs", NULL),
        "active", 1,
        "redirect_url", apr_pstrcat(ctx->pool, base, "/admin/vcs-app/setup", NULL),
        "callback_urls", apr_pstrcat(ctx->pool, base, "/auth/vcs-app/callback", NULL),
        "setup_url", apr_pstrcat(ctx->pool, base, "/auth/vcs-app/callback", NULL),
        "setup_on_update", 1,
        /* The install callback's proof of who installed: a code for a user
         * token that must reach the installation (svc_vcs_installs.c). */
        "request_oauth_on_install", 1, "public", 0,
        "default_permissions", "contents", "read", "metadata", "read",
        "default_events", "installation", "installation_repositories");

    return svc_json_dump(ctx->pool, svc_json_pool(ctx->pool, m));
}

/* The first page: the manifest's form, and the choice of an organization. */
static apr_status_t start_page(svc_ctx_t *ctx)
{
    apr_pool_t *p = ctx->pool;
    const char *org = apr_table_get(ctx->query, "org");
    const char *name = apr_table_get(ctx->query, "name");
    const char *base = base_url(ctx), *state, *action;
    svc_db_t *db;
    apr_status_t rv;

    if (org && !*org) {
        org = NULL;
    }
    if (org && !login_valid(org)) {
        svc_fail_field(ctx, "org", "invalid_value",
                       "org must be an organization's login at the provider.");
        return SVC_EPROBLEM;
    }
    if (!name || !*name) {
        name = "mod_svc";
    }
    if (strlen(name) > 34 || strcspn(name, "\"<>\\\r\n\t") != strlen(name)) {
        svc_fail_field(ctx, "name", "invalid_value",
                       "name may have at most 34 characters, without quotes, angle brackets "
                       "or backslashes.");
        return SVC_EPROBLEM;
    }
    if (!base) {
        return svc_fail(ctx, 400, "invalid_request",
                        "The request has no Host header to build the App's URLs from.");
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_vcs_state_new(ctx, db, "manifest", NULL, &state)) != APR_SUCCESS) {
        return rv;
    }
    action = org ? apr_pstrcat(p, ctx->conf->vcs_web_url, "/organizations/",
                               svc_url_encode(p, org), "/settings/apps/new?state=", state, NULL)
                 : apr_pstrcat(p, ctx->conf->vcs_web_url, "/settings/apps/new?state=", state,
                               NULL);
    return svc_vcs_page(
        ctx, 200, "Set up the code-hosting App",
        apr_pstrcat(p,
                    "<p>This creates the App that gives organizations of this service scoped, "
                    "short-lived access to the repositories they choose: permissions "
                    "<b>contents: read</b> and <b>metadata: read</b>, the events "
                    "<b>installation</b> and <b>installation_repositories</b>, webhook <code>",
                    svc_vcs_html(p, base), "/webhooks/vcs</code>, callback <code>",
                    svc_vcs_html(p, base), "/auth/vcs-app/callback</code>. It is created ",
                    org ? "under the organization <b>" : "under your own account",
                    org ? svc_vcs_html(p, org) : "", org ? "</b>" : "",
                    " at <code>", svc_vcs_html(p, ctx->conf->vcs_web_url), "</code>; the "
                    "provider asks you to confirm, then sends you back here.</p>\n"
                    "<form method=\"post\" action=\"", svc_vcs_html(p, action), "\">\n"
                    "<input type=\"hidden\" name=\"manifest\" value=\"",
                    svc_vcs_html(p, manifest(ctx, base, name)), "\">\n"
                    "<button type=\"submit\">Create the App</button>\n</form>\n"
                    "<form method=\"get\" action=\"/admin/vcs-app/setup\">\n"
                    "<p><label>Organization at the provider (empty: your account) "
                    "<input name=\"org\" value=\"", org ? svc_vcs_html(p, org) : "", "\">"
                    "</label>\n<label>App name <input name=\"name\" value=\"",
                    svc_vcs_html(p, name), "\"></label>\n"
                    "<button type=\"submit\">Change</button></p>\n</form>", NULL));
}

/* The six keys of the conversion's answer, checked; NULL entries when not. */
static const char *conversion_keys(apr_pool_t *p, const json_t *doc,
                                   const char *values[SVC_VCS_NKEYS], const char **pwhy)
{
    static const char *const fields[SVC_VCS_NKEYS] = {
        "id", "slug", "client_id", "client_secret", "webhook_secret", "pem"
    };
    json_t *id = json_object_get(doc, "id");
    EVP_PKEY *key;
    int i;

    if (!json_is_integer(id) || json_integer_value(id) <= 0) {
        return "id";
    }
    values[0] = apr_psprintf(p, "%" APR_INT64_T_FMT, (apr_int64_t)json_integer_value(id));
    for (i = 1; i < SVC_VCS_NKEYS; i++) {
        values[i] = svc_json_str(doc, fields[i]);
        if (!values[i] || !*values[i] || strlen(values[i]) > 8192) {
            return fields[i];
        }
    }
    /* What the service will load at its next start must load now. */
    if (svc_rsa_key_from_pem(p, values[5], strlen(values[5]), &key, pwhy) != APR_SUCCESS) {
        return "pem";
    }
    return NULL;
}

/* An App whose keys the wizard wrote: its id, slug and client id, its
 * owner at the provider, and the file. */
typedef struct {
    const char *const *values;
    const char *owner, *path;
} written_t;

/* The audit entry of the keys written, and the page that says so. */
static apr_status_t record_written(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const written_t *w = baton;
    apr_pool_t *p = ctx->pool;
    svc_actor_t actor;
    apr_status_t rv;

    svc_actor_from_ctx(ctx, &actor);
    rv = svc_audit_write(db, p, &actor, NULL, "vcs.app.credentials_written", "vcs_app",
                         w->values[0],
                         svc_json_pool(p, json_pack("{s:s,s:s,s:s?,s:s}", "slug", w->values[1],
                                                    "client_id", w->values[2], "owner",
                                                    w->owner, "file", w->path)));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return svc_vcs_page(
        ctx, 200, "The App is created",
        apr_pstrcat(p, "<p>The App <b>", svc_vcs_html(p, w->values[1]), "</b> (id ",
                    w->values[0], ") was created at the code-hosting provider, and its keys "
                    "were written to <code>", svc_vcs_html(p, w->path), "</code>.</p>\n"
                    "<p>Restart httpd so the service reads them (<code>apachectl -k "
                    "graceful</code>, or <code>systemctl reload apache2</code>). Then "
                    "organizations install it from the service (<code>POST "
                    "/api/orgs/:orgSlug/vcs/install</code>) or at <code>",
                    svc_vcs_html(p, ctx->conf->vcs_web_url), "/apps/",
                    svc_vcs_html(p, w->values[1]), "/installations/new</code>.</p>", NULL));
}

/* The provider's return: the code becomes the App's keys, written to disk. */
static apr_status_t finish(svc_ctx_t *ctx, const char *path)
{
    apr_pool_t *p = ctx->pool;
    const char *code = apr_table_get(ctx->query, "code");
    const char *values[SVC_VCS_NKEYS], *bad, *why = "", *err = "", *owner, *no_org;
    svc_vcs_call_t c;
    written_t w;
    json_t *doc;
    svc_db_t *db;
    apr_status_t rv;
    int i;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_vcs_state_take(ctx, db, "manifest", apr_table_get(ctx->query, "state"),
                                    &no_org)) != APR_SUCCESS) {
        return rv;
    }
    if (strlen(code) > 100 || strspn(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                           "0123456789_-") != strlen(code)) {
        return svc_fail(ctx, 400, "invalid_request", "The provider's code is not usable.");
    }
    if ((rv = svc_ctx_db_release(ctx)) != APR_SUCCESS) {
        return rv;
    }
    svc_vcs_call_init(&c, p, ctx->conf);
    rv = svc_vcs_api_manifest(&c, code, &doc);
    if (rv == APR_EACCES && (c.status == 404 || c.status == 422)) {
        return svc_fail(ctx, 400, "code_rejected",
                        "The code-hosting provider refused the code (it is good for an hour "
                        "and once); start the setup again.");
    }
    if (rv != APR_SUCCESS) {
        return svc_vcs_call_fail(ctx, &c, rv, "the setup wizard");
    }
    if ((bad = conversion_keys(p, doc, values, &why)) != NULL) {
        c.why = apr_pstrcat(p, "POST /app-manifests/{code}/conversions: the answer's ", bad,
                            " is missing or unusable ", why, NULL);
        return svc_vcs_call_fail(ctx, &c, APR_EINVAL, "the setup wizard");
    }
    owner = svc_json_str(json_object_get(doc, "owner"), "login");
    rv = svc_vcs_credentials_write(p, path, values, &err);
    for (i = 3; i < SVC_VCS_NKEYS; i++) {
        svc_wipe((void *)values[i], strlen(values[i]));
    }
    if (rv != APR_SUCCESS) {
        /* The App exists at the provider now; say what to do by hand. */
        svc_fail(ctx, 503, "credentials_not_written",
                 "The App %s (id %s) was created at the provider, but its keys could not be "
                 "written to SvcVcsAppCredentials (the error log says why). Generate a new "
                 "private key and client secret in the App's settings, set a webhook secret "
                 "there, and configure the six keys by hand (docs/api/vcs.md).",
                 values[1], values[0]);
        ctx->problem->log_detail = apr_pstrcat(p, "setup wizard: ", err, NULL);
        return SVC_EPROBLEM;
    }
    w.values = values;
    w.owner = owner;
    w.path = path;
    return svc_write(ctx, record_written, &w);
}

apr_status_t svc_h_vcs_setup(svc_ctx_t *ctx)
{
    const svc_config_t *conf = ctx->conf;
    const char *path = conf->vcs_app_credentials, *err = NULL, *written;
    apr_table_t *file;
    apr_status_t rv;

    /* Once there is an App, the wizard is done: it offers nothing more. */
    if (conf->vcs_app && conf->vcs_app->id) {
        return svc_vcs_page(ctx, 200, "The code-hosting App is configured",
                            apr_psprintf(ctx->pool, "<p>This service uses the App with id "
                                         "%" APR_INT64_T_FMT "%s%s. Nothing is left to set "
                                         "up here; docs/api/vcs.md says how to rotate its "
                                         "keys.</p>", conf->vcs_app->id,
                                         conf->vcs_app_off ? ", but it is off: " : "",
                                         conf->vcs_app_off
                                         ? svc_vcs_html(ctx->pool, conf->vcs_app_off) : ""));
    }
    if (!path) {
        return svc_vcs_page(ctx, 503, "The setup wizard is not available",
                            "<p>The server has no <code>SvcVcsAppCredentials</code> file to "
                            "write the App's keys to. Set it, or create the App by hand "
                            "(docs/api/vcs.md).</p>");
    }
    if ((rv = svc_vcs_credentials_read(ctx->pool, path, &file, &err)) != APR_SUCCESS) {
        svc_fail(ctx, 503, "credentials_unreadable",
                 "The setup wizard cannot read SvcVcsAppCredentials (the error log says why).");
        ctx->problem->log_detail = apr_pstrcat(ctx->pool, "setup wizard: ", err, NULL);
        return SVC_EPROBLEM;
    }
    if ((written = apr_table_get(file, "VCS_APP_ID")) != NULL && *written) {
        return svc_vcs_page(ctx, 200, "The code-hosting App is configured",
                            apr_pstrcat(ctx->pool, "<p>The keys of the App with id ",
                                        svc_vcs_html(ctx->pool, written), " are in <code>",
                                        svc_vcs_html(ctx->pool, path), "</code>. Restart "
                                        "httpd so the service reads them.</p>", NULL));
    }
    return apr_table_get(ctx->query, "code") ? finish(ctx, path) : start_page(ctx);
}
