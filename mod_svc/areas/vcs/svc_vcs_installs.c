/*
 * svc_vcs_installs.c: the install flow and the org's installation records.
 *
 * The provider sends the user back with an installation id, which anyone
 * can type: it proves nothing by itself. What binds the return to the
 * flow is the state (one use, this user, this org, ten minutes); what
 * proves the user may act for the installation is the provider's code
 * (the App asks for OAuth on install), exchanged for a user token that
 * must reach it in GET /user/installations; what proves the installation
 * exists and belongs to this App is the provider's own answer to an App
 * JWT; and an installation already linked to another org is never taken
 * from it.
 */
#include "svc_vcs_installs.h"
#include "svc_vcs_client.h"
#include "svc_vcs_state.h"
#include "svc_vcs_tokens.h"

#include <string.h>

/* One installation record as the API shows it, from the row `i`. */
#define INSTALLATION_JSON                                                           \
    "json_build_object('installation_id', i.installation_id,"                      \
    " 'account', json_build_object('login', i.account_login, 'type', i.account_type),"\
    " 'repository_selection', i.repository_selection, 'repositories', i.repositories,"\
    " 'status', i.status, 'deleted_at', svc_ts(i.deleted_at),"                      \
    " 'created_at', svc_ts(i.created_at), 'updated_at', svc_ts(i.updated_at))"

static const svc_col_t account_keys[] = {
    { .key = "login", .type = SVC_COL_TEXT, .example = "acme" },
    { .key = "type", .type = SVC_COL_TEXT,
      .values = SVC_VALUES("User", "Organization", "Enterprise") },
    SVC_COL_END
};

static const svc_col_t known_repo_keys[] = {
    { .key = "id", .type = SVC_COL_INT },
    { .key = "full_name", .type = SVC_COL_TEXT, .example = "acme/site" },
    { .key = "private", .type = SVC_COL_BOOL },
    SVC_COL_END
};

static const svc_col_t installation_keys[] = {
    { .key = "installation_id", .type = SVC_COL_INT },
    { .key = "account", .type = SVC_COL_OBJECT, .sub = account_keys,
      .description = "The account the App is installed on." },
    { .key = "repository_selection", .type = SVC_COL_TEXT, .values = SVC_VALUES("all",
                                                                              "selected") },
    { .key = "repositories", .type = SVC_COL_ARRAY, .sub = known_repo_keys,
      .description = "The selection, as the provider's events told it (complete while the "
        "selection is selected)." },
    { .key = "status", .type = SVC_COL_TEXT, .values = SVC_VALUES("active", "suspended",
                                                                    "unlinked") },
    { .key = "deleted_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL,
      .description = "When the provider said it was uninstalled." },
    SVC_COL_CREATED_AT,
    SVC_COL_UPDATED_AT,
    SVC_COL_END
};

const svc_schema_t svc_schema_installation = { .name = "VcsInstallation", .keys = installation_keys,
    .description = "A record of the code-hosting App installed on an account, linked to the "
                   "organization (docs/api/vcs.md)." };

const svc_schema_t svc_schema_installation_unlinked = { .name = "VcsInstallationUnlinked",
    .description = "An installation unlinked from the organization.",
    .keys = (const svc_col_t[]) {
        { .key = "installation", .type = SVC_COL_OBJECT, .ref = &svc_schema_installation },
        { .key = "uninstall_url", .type = SVC_COL_TEXT, .format = "uri",
          .description = "Where an owner of the account removes the App at the provider." },
        { .key = "detail", .type = SVC_COL_TEXT, .description = "What unlinking did, in words." },
        SVC_COL_END
    }
};

const svc_schema_t svc_schema_install_url = { .name = "VcsInstallUrl",
    .description = "Where to send the browser to install the App.",
    .keys = (const svc_col_t[]) {
        { .key = "url", .type = SVC_COL_TEXT, .format = "uri" },
        SVC_COL_END
    }
};

/* The event svc_vcs_installation_changed writes. */
static const svc_schema_t installation_event = { .name = "VcsInstallationEvent",
    .description = "vcs.installation: an installation record changed status.",
    .keys = (const svc_col_t[]) {
        { .key = "installation_id", .type = SVC_COL_INT },
        { .key = "status", .type = SVC_COL_TEXT,
          .values = SVC_VALUES("active", "suspended", "unlinked") },
        { .key = "account", .type = SVC_COL_TEXT, .description = "The account's login." },
        SVC_COL_END
    }
};

const svc_event_kind_t svc_vcs_events[] = {
    { "vcs.installation", &installation_event, "An installation was linked, unlinked, "
      "suspended, unsuspended or deleted." },
    { NULL, NULL, NULL }
};

static const svc_stmt_t st_inst_list = {
    "svc_vcs_inst_list",
    "SELECT " INSTALLATION_JSON "::text, i.seq FROM vcs_installations i"
    " WHERE i.org_id = $1 AND i.seq < $2::bigint ORDER BY i.seq DESC LIMIT $3::int",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_inst_get = {
    "svc_vcs_inst_get",
    "SELECT " INSTALLATION_JSON "::text, i.account_login, i.account_type"
    " FROM vcs_installations i WHERE i.installation_id = $1::bigint AND i.org_id = $2",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_inst_lock = {
    "svc_vcs_inst_lock",
    "SELECT org_id, status FROM vcs_installations WHERE installation_id = $1::bigint"
    " FOR UPDATE",
    1, 0
};

static const svc_stmt_t st_inst_org_slug = {
    "svc_vcs_inst_org_slug",
    "SELECT slug FROM orgs WHERE id = $1",
    1, SVC_STMT_READ
};

/* A new record, or one this org or another had unlinked, linked anew. */
static const svc_stmt_t st_inst_link = {
    "svc_vcs_inst_link",
    "INSERT INTO vcs_installations (installation_id, org_id, account_login, account_type,"
    " repository_selection, status, linked_by)"
    " VALUES ($1::bigint, $2, $3, $4, $5, $6, $7)"
    " ON CONFLICT (installation_id) DO UPDATE SET org_id = EXCLUDED.org_id,"
    " account_login = EXCLUDED.account_login, account_type = EXCLUDED.account_type,"
    " repository_selection = EXCLUDED.repository_selection, status = EXCLUDED.status,"
    " deleted_at = NULL, linked_by = EXCLUDED.linked_by, updated_at = now()",
    7, 0
};

static const svc_stmt_t st_inst_unlink = {
    "svc_vcs_inst_unlink",
    "UPDATE vcs_installations SET status = 'unlinked', updated_at = now()"
    " WHERE installation_id = $1::bigint AND org_id = $2 AND status <> 'unlinked'"
    " RETURNING account_login",
    2, 0
};

/* Projects lose their repository with the installation that reached it. */
static const svc_stmt_t st_inst_unlink_repos = {
    "svc_vcs_inst_unlink_repos",
    "DELETE FROM vcs_project_repos WHERE installation_id = $1::bigint AND org_id = $2"
    " RETURNING project_id, full_name",
    2, 0
};

const svc_qparam_t svc_q_vcs_callback[] = {
    { "installation_id", "integer", "Set by the provider: the installation." },
    { "setup_action", "string", "Set by the provider: install, update or request." },
    { "state", "string", "Set by the provider: the state the install flow issued." },
    { "code", "string", "Set by the provider: the code that proves which user of the "
      "provider installed (the App requests user authorization on install)." },
    { NULL, NULL, NULL }
};

apr_status_t svc_vcs_installation_changed(svc_db_t *db, apr_pool_t *p,
                                          const svc_actor_t *actor, const char *org_id,
                                          apr_int64_t installation_id, const char *action,
                                          const char *status, const char *account_login,
                                          json_t *data)
{
    const char *id = apr_psprintf(p, "%" APR_INT64_T_FMT, installation_id);
    json_t *ev = svc_json_pool(p, json_pack("{s:I,s:s,s:s}", "installation_id",
                                            (json_int_t)installation_id, "status", status,
                                            "account", account_login));
    apr_status_t rv;

    if (!data) {
        data = svc_json_pool(p, json_object());
    }
    json_object_set_new(data, "installation_id", json_integer((json_int_t)installation_id));
    json_object_set_new(data, "account", json_string(account_login));
    json_object_set_new(data, "status", json_string(status));
    rv = svc_audit_write(db, p, actor, org_id, action, "vcs_installation", id, data);
    if (rv == APR_SUCCESS) {
        rv = svc_event_emit(db, p, org_id, NULL, NULL, "vcs.installation", ev);
    }
    return rv;
}

/* The provider's page that installs the App, with a fresh state for this
 * user and org (503 while the App is off). */
static apr_status_t install_url(svc_ctx_t *ctx, const char **purl)
{
    const svc_vcs_app_t *app = svc_vcs_app(ctx->conf);
    const char *state;
    svc_db_t *db;
    apr_status_t rv;

    if (!app) {
        return svc_vcs_off(ctx);
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_vcs_state_new(ctx, db, "install", ctx->org->id, &state)) != APR_SUCCESS) {
        return rv;
    }
    *purl = apr_pstrcat(ctx->pool, ctx->conf->vcs_web_url, "/apps/",
                        svc_url_encode(ctx->pool, app->slug), "/installations/new?state=",
                        state, NULL);
    return APR_SUCCESS;
}

apr_status_t svc_h_vcs_install_start(svc_ctx_t *ctx)
{
    const char *url;
    apr_status_t rv = install_url(ctx, &url);

    return rv != APR_SUCCESS ? rv : svc_reply_json(ctx, 200, json_pack("{s:s}", "url", url));
}

apr_status_t svc_h_vcs_install_page(svc_ctx_t *ctx)
{
    const char *url;
    apr_status_t rv = install_url(ctx, &url);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    apr_table_setn(ctx->headers_out, "Referrer-Policy", "no-referrer");
    return svc_reply_redirect(ctx, url);
}

/* What the install callback links, once the provider vouched for it. */
typedef struct {
    const svc_vcs_installation_t *inst;
    const char *setup_action;
} link_t;

/* The page that says what was linked. */
static apr_status_t linked_page(svc_ctx_t *ctx, const svc_vcs_installation_t *inst)
{
    return svc_vcs_page(
        ctx, 200, "App installed",
        apr_pstrcat(ctx->pool, "<p>Installation <b>", apr_ltoa(ctx->pool, (long)inst->id),
                    "</b> of the App on the ", svc_vcs_html(ctx->pool, inst->account_type),
                    " account <b>", svc_vcs_html(ctx->pool, inst->account_login),
                    "</b> is linked to <b>", svc_vcs_html(ctx->pool, ctx->org->slug), "</b>",
                    inst->suspended
                    ? ", but the provider reports it suspended: it cannot be used until it "
                      "is unsuspended there" : "",
                    ".</p>\n<p>Repository access: ",
                    strcmp(inst->repository_selection, "all") == 0
                    ? "all repositories of the account"
                    : "the repositories selected at the provider",
                    ".</p>\n<p><a href=\"", svc_vcs_html(ctx->pool, ctx->conf->ui_url),
                    "\">Back to the service</a></p>", NULL));
}

/* Records the installation for the org (baton: a link_t), all or nothing. */
static apr_status_t link_installation(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const link_t *l = baton;
    const svc_vcs_installation_t *inst = l->inst;
    const char *id = apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT, inst->id);
    const char *status = inst->suspended ? "suspended" : "active";
    svc_actor_t actor;
    svc_dbres_t *res;
    apr_status_t rv;

    /* The caller must still be an admin, now that the provider answered. */
    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_ADMIN, SVC_PROLE_NONE)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_inst_lock, ctx->pool, &res, id)) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 1 && strcmp(svc_dbres_str(res, 0, 0), ctx->org->id) != 0
        && strcmp(svc_dbres_str(res, 0, 1), "unlinked") != 0) {
        return svc_fail(ctx, 409, "installation_linked_elsewhere",
                        "Installation %s is linked to another organization of this service. "
                        "It can be linked here only once that organization unlinks it.", id);
    }
    rv = svc_db_execv(db, &st_inst_link, ctx->pool, NULL, id, ctx->org->id,
                      inst->account_login, inst->account_type, inst->repository_selection,
                      status, ctx->who->user_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    svc_actor_from_ctx(ctx, &actor);
    rv = svc_vcs_installation_changed(db, ctx->pool, &actor, ctx->org->id, inst->id,
                                      "vcs.installation.linked", status, inst->account_login,
                                      svc_json_pool(ctx->pool,
                                                    json_pack("{s:s,s:s,s:s}", "account_type",
                                                              inst->account_type,
                                                              "repository_selection",
                                                              inst->repository_selection,
                                                              "setup_action",
                                                              l->setup_action)));
    return rv == APR_SUCCESS ? linked_page(ctx, inst) : rv;
}

/*
 * The installation id in the URL proves nothing, and neither does the state
 * (any admin of any org holds one): the provider's code says which of its
 * users came back, and that user must reach the installation. The user's
 * token serves for this one question and is wiped; nothing keeps it.
 */
static apr_status_t verify_user(svc_ctx_t *ctx, svc_vcs_call_t *c, const svc_vcs_app_t *app,
                                const char *code, apr_int64_t id)
{
    const char *token = NULL;
    apr_status_t rv = APR_EACCES;

    if (svc_word_valid(code, 255)) {
        rv = svc_vcs_oauth_token(c, app->client_id, app->client_secret, code, NULL, NULL,
                                 &token);
    }
    if (rv == APR_EACCES && (!svc_word_valid(code, 255)
                             || (c->status == 200
                                 && strcmp(c->message, "bad_verification_code") == 0))) {
        /* Expired, used already, or never issued: only a new install flow helps. */
        return svc_fail(ctx, 400, "install_code_rejected",
                        "The code-hosting provider refused the code of this return (it "
                        "expired or was used already). Start the installation from the "
                        "organization again. Nothing was linked.");
    }
    if (rv != APR_SUCCESS) {
        /* incorrect_client_credentials and the like: the operator's to fix. */
        return svc_vcs_call_fail(ctx, c, rv, "the install callback's code exchange (check "
                                 "VCS_APP_CLIENT_ID and VCS_APP_CLIENT_SECRET)");
    }
    rv = svc_vcs_api_user_installation(c, token, id);
    svc_wipe((void *)token, strlen(token));
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 403, "installation_not_accessible",
                        "Your account at the code-hosting provider has no access to "
                        "installation %" APR_INT64_T_FMT " of this App, so it cannot be "
                        "linked here. Nothing was linked.", id);
    }
    if (rv != APR_SUCCESS) {
        return svc_vcs_call_fail(ctx, c, rv, "the install callback's GET /user/installations");
    }
    return APR_SUCCESS;
}

apr_status_t svc_h_vcs_install_callback(svc_ctx_t *ctx)
{
    const svc_vcs_app_t *app = svc_vcs_app(ctx->conf);
    const char *action = apr_table_get(ctx->query, "setup_action");
    const char *idtext = apr_table_get(ctx->query, "installation_id");
    const char *code = apr_table_get(ctx->query, "code");
    const char *org_id, *h;
    svc_vcs_installation_t inst;
    svc_vcs_call_t c;
    svc_orgref_t *org;
    link_t l;
    svc_dbres_t *res;
    svc_db_t *db;
    long long id = 0;
    apr_status_t rv;

    if (!app) {
        return svc_vcs_off(ctx);
    }
    apr_table_setn(ctx->headers_out, "Referrer-Policy", "no-referrer");
    /* First the state, whatever else the return carries: it is used up. */
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_vcs_state_take(ctx, db, "install", apr_table_get(ctx->query, "state"),
                                    &org_id)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_inst_org_slug, ctx->pool, &res, org_id))
           != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_fail(ctx, 404, "not_found", "The organization of this installation is gone.");
    }
    org = apr_pcalloc(ctx->pool, sizeof(*org));
    org->id = org_id;
    org->slug = svc_dbres_str(res, 0, 0);
    ctx->org = org;
    h = svc_vcs_html(ctx->pool, org->slug);

    if (action && strcmp(action, "request") == 0) {
        /* The user may not install on that account; an owner must approve. */
        return svc_vcs_page(ctx, 202, "Installation requested",
                            apr_pstrcat(ctx->pool, "<p>An owner of the account must approve "
                                        "the App at the code-hosting provider before it can "
                                        "be used. Nothing was linked to <b>", h, "</b>: once "
                                        "the owner has approved it, start the installation "
                                        "from the organization again to link it.</p>", NULL));
    }
    if (!action || (strcmp(action, "install") && strcmp(action, "update"))) {
        return svc_fail(ctx, 400, "invalid_request",
                        "setup_action must be install, update or request.");
    }
    if (!idtext || svc_parse_int(idtext, 1, 9007199254740991LL, &id) != APR_SUCCESS) {
        return svc_fail(ctx, 400, "invalid_request",
                        "The provider's answer has no usable installation_id.");
    }

    if (!code || !*code) {
        return svc_fail(ctx, 400, "install_code_missing",
                        "The provider's answer has no code, so nothing proves that you may "
                        "act for installation %" APR_INT64_T_FMT ". The App must request user "
                        "authorization (OAuth) during installation: an operator turns that "
                        "on at the provider (docs/api/vcs.md). Nothing was linked.",
                        (apr_int64_t)id);
    }

    /* Ask the provider, not the URL, and hold no pooled connection meanwhile. */
    if ((rv = svc_ctx_db_release(ctx)) != APR_SUCCESS) {
        return rv;
    }
    svc_vcs_call_init(&c, ctx->pool, ctx->conf);
    if ((rv = verify_user(ctx, &c, app, code, (apr_int64_t)id)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_vcs_api_installation(&c, app, (apr_int64_t)id, &inst);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 400, "invalid_installation",
                        "The code-hosting provider knows no installation %" APR_INT64_T_FMT
                        " of this App.", (apr_int64_t)id);
    }
    if (rv != APR_SUCCESS) {
        return svc_vcs_call_fail(ctx, &c, rv, "the install callback");
    }
    if (inst.app_id != app->id) {
        return svc_fail(ctx, 400, "invalid_installation",
                        "Installation %" APR_INT64_T_FMT " belongs to another App.",
                        (apr_int64_t)id);
    }
    l.inst = &inst;
    l.setup_action = action;
    return svc_write(ctx, link_installation, &l);
}

apr_status_t svc_h_vcs_installations_list(svc_ctx_t *ctx)
{
    if (!svc_vcs_app(ctx->conf)) {
        return svc_vcs_off(ctx);
    }
    return svc_reply_list(ctx, &st_inst_list, ctx->org->id, SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

/* Where the account's owner uninstalls the App at the provider. */
static const char *uninstall_url(apr_pool_t *p, const svc_config_t *conf, const char *type,
                                 const char *login, const char *id)
{
    if (strcmp(type, "Organization") == 0) {
        return apr_pstrcat(p, conf->vcs_web_url, "/organizations/", svc_url_encode(p, login),
                           "/settings/installations/", id, NULL);
    }
    return apr_pstrcat(p, conf->vcs_web_url, "/settings/installations/", id, NULL);
}

static apr_status_t unlink_installation(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *idtext = apr_table_get(ctx->params, "id");
    const char *login, *type;
    json_t *links, *item;
    json_error_t jerr;
    svc_actor_t actor;
    svc_dbres_t *res;
    apr_status_t rv;
    int i;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_ADMIN, SVC_PROLE_NONE)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_inst_unlink, ctx->pool, &res, idtext, ctx->org->id))
           != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 1) {
        login = svc_dbres_str(res, 0, 0);
        if ((rv = svc_db_execv(db, &st_inst_unlink_repos, ctx->pool, &res, idtext,
                               ctx->org->id)) != APR_SUCCESS) {
            return rv;
        }
        links = svc_json_pool(ctx->pool, json_array());
        for (i = 0; i < svc_dbres_rows(res); i++) {
            json_array_append_new(links, json_pack("{s:s,s:s}", "project_id",
                                                   svc_dbres_str(res, i, 0), "full_name",
                                                   svc_dbres_str(res, i, 1)));
        }
        svc_actor_from_ctx(ctx, &actor);
        rv = svc_vcs_installation_changed(db, ctx->pool, &actor, ctx->org->id,
                                          *(const apr_int64_t *)baton,
                                          "vcs.installation.unlinked", "unlinked", login,
                                          svc_json_pool(ctx->pool,
                                                        json_pack("{s:O}", "repositories_unlinked",
                                                                  links)));
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    /* Unlinking an unlinked installation again changes nothing and says the same. */
    if ((rv = svc_org_row(ctx, db, &st_inst_get, "installation", idtext, &res)) != APR_SUCCESS) {
        return rv;
    }
    item = json_loads(svc_dbres_str(res, 0, 0), 0, &jerr);
    login = svc_dbres_str(res, 0, 1);
    type = svc_dbres_str(res, 0, 2);
    return svc_reply_json(
        ctx, 200,
        json_pack("{s:o,s:s,s:s}", "installation", item, "uninstall_url",
                  uninstall_url(ctx->pool, ctx->conf, type, login, idtext), "detail",
                  apr_pstrcat(ctx->pool, "The installation is unlinked from ", ctx->org->slug,
                              ": the service no longer uses it, and projects linked to its "
                              "repositories lost their link. The App stays installed on ",
                              login, " at the code-hosting provider: to remove it, an owner "
                              "of that account uninstalls it there (Settings, then GitHub "
                              "Apps, then Configure, then Uninstall) at uninstall_url.",
                              NULL)));
}

apr_status_t svc_h_vcs_installation_unlink(svc_ctx_t *ctx)
{
    const char *idtext = apr_table_get(ctx->params, "id");
    long long parsed;
    apr_int64_t id;
    apr_status_t rv;

    if (!svc_vcs_app(ctx->conf)) {
        return svc_vcs_off(ctx);
    }
    if (svc_parse_int(idtext, 1, 9007199254740991LL, &parsed) != APR_SUCCESS) {
        return svc_fail(ctx, 404, "not_found", "No installation %s in %s.",
                        svc_printable(ctx->pool, idtext, 32), ctx->org->slug);
    }
    id = (apr_int64_t)parsed;
    if ((rv = svc_write(ctx, unlink_installation, &id)) == APR_SUCCESS) {
        /* Its cached token goes with the link. */
        svc_vcs_token_forget(id);
    }
    return rv;
}
