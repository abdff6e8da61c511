/*
 * mod_svc.c: the module record, the Svc* directives and the start-up hooks.
 */
#include "mod_svc_glue.h"

#include <http_core.h>
#include <http_protocol.h>
#include <http_request.h>
#include <ap_mpm.h>
#include <mpm_common.h>
#include <apr_file_info.h>
#include <apr_strings.h>



/* The code-hosting App's directives: cmd->info of each, in svc_vcs_refs_t's
 * order; the secrets come after VCS_APP_CLIENT_SECRET. */
enum {
    VCS_APP_ID, VCS_APP_SLUG, VCS_APP_CLIENT_ID, VCS_APP_CLIENT_SECRET,
    VCS_APP_WEBHOOK_SECRET, VCS_APP_PRIVATE_KEY, VCS_APP_CREDENTIALS, VCS_APP_DIRECTIVES
};

static const char **vcs_ref(svc_vcs_refs_t *refs, int which)
{
    switch (which) {
    case VCS_APP_ID: return &refs->app_id;
    case VCS_APP_SLUG: return &refs->slug;
    case VCS_APP_CLIENT_ID: return &refs->client_id;
    case VCS_APP_CLIENT_SECRET: return &refs->client_secret;
    case VCS_APP_WEBHOOK_SECRET: return &refs->webhook_secret;
    case VCS_APP_PRIVATE_KEY: return &refs->private_key;
    default: return &refs->credentials;
    }
}

static void *create_server_conf(apr_pool_t *p, server_rec *s)
{
    svc_server_conf *sc = apr_pcalloc(p, sizeof(*sc));

    svc_config_defaults(&sc->core, p);
    svc_supervisor_defaults(&sc->sup);
    return sc;
}

/* A virtual host inherits what it does not set itself. */
static void *merge_server_conf(apr_pool_t *p, void *basev, void *addv)
{
    svc_server_conf *base = basev, *add = addv;
    svc_server_conf *sc = apr_pcalloc(p, sizeof(*sc));
    int i;

    *sc = *add;
    sc->schema_ok = 0;
    sc->schema_checked_at = 0;
    sc->secret_ref = add->secret_ref ? add->secret_ref : base->secret_ref;
    if (!(add->set & SVC_SET_BODY_LIMIT)) {
        sc->core.body_limit = base->core.body_limit;
    }
    if (!(add->set & SVC_SET_TOUCH)) {
        sc->core.token_touch_interval = base->core.token_touch_interval;
    }
    if (!(add->set & SVC_SET_SESSION_LIFE)) {
        sc->core.session_lifetime = base->core.session_lifetime;
    }
    if (!(add->set & SVC_SET_STMT_TIMEOUT)) {
        sc->core.statement_timeout_ms = base->core.statement_timeout_ms;
    }
    if (!(add->set & SVC_SET_INVITE_LIFE)) {
        sc->core.invite_lifetime = base->core.invite_lifetime;
    }
    if (!(add->set & SVC_SET_MODEL_TIMEOUT)) {
        sc->core.model_timeout_ms = base->core.model_timeout_ms;
    }
    if (!(add->set & SVC_SET_DOC_LIMIT)) {
        sc->core.document_limit = base->core.document_limit;
    }
    if (!(add->set & SVC_SET_UPLOAD_LIMIT)) {
        sc->core.upload_limit = base->core.upload_limit;
    }
    /* Main server only: one count per user, whichever host a stream is on. */
    sc->core.stream_limit = base->core.stream_limit;
    if (!add->core.model_prices) {
        sc->core.model_prices = base->core.model_prices;
    }
    if (!(add->set & SVC_SET_ALLOW_PRIVATE)) {
        sc->core.provider_allow_private = base->core.provider_allow_private;
    }
    if (!(add->set & SVC_SET_RUN_TIMEOUT)) {
        sc->core.run_timeout = base->core.run_timeout;
    }
    if (!(add->set & SVC_SET_PUBLIC_URL)) {
        sc->core.public_url = base->core.public_url;
        sc->core.public_origin = base->core.public_origin;
    }
    if (!add->signin_refs.client_id) {
        sc->signin_refs.client_id = base->signin_refs.client_id;
    }
    if (!add->signin_refs.client_secret) {
        sc->signin_refs.client_secret = base->signin_refs.client_secret;
    }
    if (!add->signin_refs.web_url) {
        sc->signin_refs.web_url = base->signin_refs.web_url;
    }
    if (!add->signin_refs.api_url) {
        sc->signin_refs.api_url = base->signin_refs.api_url;
    }
    /* The App's keys, each inherited on its own. */
    for (i = 0; i < VCS_APP_DIRECTIVES; i++) {
        const char **slot = vcs_ref(&sc->vcs_refs, i);
        *slot = *slot ? *slot : *vcs_ref(&base->vcs_refs, i);
    }
    if (!(add->set & SVC_SET_UI_URL)) {
        sc->core.ui_url = base->core.ui_url;
    }
    if (!(add->set & SVC_SET_VCS_TIMEOUT)) {
        sc->core.vcs_timeout_ms = base->core.vcs_timeout_ms;
    }
    if (!add->db_conninfo) {
        sc->db_conninfo = base->db_conninfo;
    }
    if (!add->core.vcs_ca_file) {
        sc->core.vcs_ca_file = base->core.vcs_ca_file;
    }
    if (add->core.internal_allow->nelts == 0) {
        sc->core.internal_allow = base->core.internal_allow;
    }
    if (add->core.trusted_origins->nelts == 0) {
        sc->core.trusted_origins = base->core.trusted_origins;
    }
    /* Rate classes: the base's, overridden class by class. */
    sc->core.rate_classes = apr_array_copy(p, base->core.rate_classes);
    for (i = 0; i < add->core.rate_classes->nelts; i++) {
        const svc_rate_class_t *rc = &APR_ARRAY_IDX(add->core.rate_classes, i, svc_rate_class_t);
        svc_config_set_rate(&sc->core, p, rc->name, rc->limit, rc->period);
    }
    sc->set = add->set | base->set;
    return sc;
}

static svc_server_conf *server_conf(cmd_parms *cmd)
{
    return ap_get_module_config(cmd->server->module_config, &svc_module);
}

static const char *parse_positive(cmd_parms *cmd, const char *arg, long long max, long long *pv)
{
    char *end;
    long long v = apr_strtoi64(arg, &end, 10);

    if (!*arg || *end || v < 1 || v > max) {
        return apr_psprintf(cmd->pool, "%s must be an integer from 1 to %" APR_INT64_T_FMT,
                            cmd->directive->directive, (apr_int64_t)max);
    }
    *pv = v;
    return NULL;
}

static const char *set_secret(cmd_parms *cmd, void *dummy, const char *arg)
{
    const char *err = ap_check_cmd_context(cmd, NOT_IN_DIR_LOC_FILE);

    if (err) {
        return err;
    }
    if (strncmp(arg, "file:", 5) && strncmp(arg, "env:", 4) && strncmp(arg, "exec:", 5)) {
        return "SvcSecret takes a reference (file:/path, env:NAME or exec:/program), "
               "never the secret itself";
    }
    server_conf(cmd)->secret_ref = arg;
    return NULL;
}

static const char *set_body_limit(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    long long v;
    const char *err = parse_positive(cmd, arg, 64LL * 1024 * 1024, &v);

    if (!err) {
        sc->core.body_limit = (apr_size_t)v;
        sc->set |= SVC_SET_BODY_LIMIT;
    }
    return err;
}

static const char *set_document_limit(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    long long v;
    const char *err = parse_positive(cmd, arg, 8LL * 1024 * 1024, &v);

    if (!err) {
        sc->core.document_limit = (apr_size_t)v;
        sc->set |= SVC_SET_DOC_LIMIT;
    }
    return err;
}

/* SvcAttachmentLimit: bytes, or a number with K, M or G. */
static const char *set_upload_limit(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    apr_int64_t v;
    const char *err = svc_cmd_parse_size(cmd, arg, 1, APR_INT64_C(1) << 32, &v);

    if (!err) {
        sc->core.upload_limit = (apr_size_t)v;
        sc->set |= SVC_SET_UPLOAD_LIMIT;
    }
    return err;
}

/* SvcStreamLimit: event streams one user may hold open (0: no limit). */
static const char *set_stream_limit(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    char *end;
    apr_int64_t v;

    if (err) {
        return err;
    }
    v = apr_strtoi64(arg, &end, 10);
    if (!*arg || *end || v < 0 || v > 1000000) {
        return "SvcStreamLimit must be an integer from 0 (no limit) to 1000000";
    }
    sc->core.stream_limit = (int)v;
    return NULL;
}

/* A price in US dollars per million tokens: a decimal number, 0 to 10000. */
static int parse_price(const char *arg, double *pv)
{
    char *end;
    double v;

    if (!*arg || strspn(arg, "0123456789.") != strlen(arg)) {
        return 0;
    }
    v = strtod(arg, &end);
    if (*end || v < 0 || v > 10000) {
        return 0;
    }
    *pv = v;
    return 1;
}

/* SvcModelPrice MODEL INPUT_PER_MTOK OUTPUT_PER_MTOK, repeatable; a model
 * named again takes the later prices. */
static const char *set_model_price(cmd_parms *cmd, void *dummy, const char *model,
                                   const char *in, const char *out)
{
    svc_server_conf *sc = server_conf(cmd);
    svc_model_price_t *mp = NULL;
    double vin, vout;
    int i;

    if (!*model || strlen(model) > 200) {
        return "SvcModelPrice: the model name must be 1 to 200 characters";
    }
    if (!parse_price(in, &vin) || !parse_price(out, &vout)) {
        return "SvcModelPrice: prices are US dollars per million tokens, such as 2.50, from 0 "
               "to 10000";
    }
    if (!sc->core.model_prices) {
        sc->core.model_prices = apr_array_make(cmd->pool, 8, sizeof(svc_model_price_t));
    }
    for (i = 0; i < sc->core.model_prices->nelts; i++) {
        svc_model_price_t *e = &APR_ARRAY_IDX(sc->core.model_prices, i, svc_model_price_t);
        if (strcmp(e->model, model) == 0) {
            mp = e;
        }
    }
    if (!mp) {
        mp = apr_array_push(sc->core.model_prices);
        mp->model = apr_pstrdup(cmd->pool, model);
    }
    mp->input_per_mtok = vin;
    mp->output_per_mtok = vout;
    return NULL;
}

static const char *set_model_timeout(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    long long v;
    const char *err = parse_positive(cmd, arg, 3600, &v);

    if (!err) {
        sc->core.model_timeout_ms = (int)v * 1000;
        sc->set |= SVC_SET_MODEL_TIMEOUT;
    }
    return err;
}

static const char *set_allow_private(cmd_parms *cmd, void *dummy, int on)
{
    svc_server_conf *sc = server_conf(cmd);

    sc->core.provider_allow_private = on;
    sc->set |= SVC_SET_ALLOW_PRIVATE;
    return NULL;
}

static const char *set_seconds(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    long long v;
    const char *err = parse_positive(cmd, arg, 365LL * 86400, &v);
    long which = (long)cmd->info;

    if (err) {
        return err;
    }
    if (which == SVC_SET_TOUCH) {
        sc->core.token_touch_interval = (int)v;
    }
    else if (which == SVC_SET_SESSION_LIFE) {
        sc->core.session_lifetime = (int)v;
    }
    else if (which == SVC_SET_INVITE_LIFE) {
        sc->core.invite_lifetime = (int)v;
    }
    else {
        sc->core.statement_timeout_ms = (int)v;
    }
    sc->set |= (unsigned)which;
    return NULL;
}

static const char *set_rate(cmd_parms *cmd, void *dummy, const char *name, const char *count,
                            const char *period)
{
    svc_server_conf *sc = server_conf(cmd);
    long long c, s;
    const char *err;
    char *end;

    c = apr_strtoi64(count, &end, 10);
    if (!*count || *end || c < 0 || c > 1000000) {
        return "SvcRateLimit COUNT must be an integer from 0 (unlimited) to 1000000";
    }
    if ((err = parse_positive(cmd, period, 86400, &s)) != NULL) {
        return err;
    }
    svc_config_set_rate(&sc->core, cmd->pool, name, (int)c, (int)s);
    return NULL;
}

static const char *add_internal_allow(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    char *ip = apr_pstrdup(cmd->pool, arg);
    char *mask = strchr(ip, '/');
    apr_ipsubnet_t *sub;
    apr_status_t rv;

    if (mask) {
        *mask++ = '\0';
    }
    rv = apr_ipsubnet_create(&sub, ip, mask, cmd->pool);
    if (rv != APR_SUCCESS) {
        return apr_psprintf(cmd->pool, "SvcInternalAllow: %s is not an address or CIDR "
                            "network", arg);
    }
    APR_ARRAY_PUSH(sc->core.internal_allow, apr_ipsubnet_t *) = sub;
    return NULL;
}

static const char *add_trusted_origin(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    const char *rest;

    if (strncmp(arg, "https://", 8) == 0) {
        rest = arg + 8;
    }
    else if (strncmp(arg, "http://", 7) == 0) {
        rest = arg + 7;
    }
    else {
        return "SvcTrustedOrigin must be an origin such as https://app.example.com";
    }
    if (!*rest || strpbrk(rest, "/?#@ ")) {
        return "SvcTrustedOrigin must be scheme://host[:port] with no path";
    }
    APR_ARRAY_PUSH(sc->core.trusted_origins, const char *) = arg;
    return NULL;
}

/*
 * The public URL, and its origin as browsers write it in Origin headers
 * (lowercase scheme and host, no default port), for the CSRF check.
 */
static const char *set_public_url(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    const char *norm, *host, *why = svc_signin_check_base_url(cmd->pool, arg, &norm);
    char *origin;
    apr_size_t n;

    if (why) {
        return apr_pstrcat(cmd->pool, "SvcPublicURL ", why, NULL);
    }
    host = strstr(norm, "://") + 3;
    origin = apr_pstrmemdup(cmd->pool, norm, (apr_size_t)(host - norm) + strcspn(host, "/"));
    ap_str_tolower(origin);
    n = strlen(origin);
    if (strncmp(origin, "https://", 8) == 0 && n > 4 && strcmp(origin + n - 4, ":443") == 0) {
        origin[n - 4] = '\0';
    }
    else if (strncmp(origin, "http://", 7) == 0 && n > 3 && strcmp(origin + n - 3, ":80") == 0) {
        origin[n - 3] = '\0';
    }
    sc->core.public_url = norm;
    sc->core.public_origin = origin;
    sc->set |= SVC_SET_PUBLIC_URL;
    return NULL;
}

#define SIGNIN_CLIENT_ID     1
#define SIGNIN_CLIENT_SECRET 2
#define SIGNIN_WEB_URL       3
#define SIGNIN_API_URL       4

/* References are resolved at start (svc_signin_configure): an env: variable
 * that is unset there turns sign-in off instead of failing start-up. */
static const char *set_signin(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    const char *err = ap_check_cmd_context(cmd, NOT_IN_DIR_LOC_FILE);
    int ref = !strncmp(arg, "file:", 5) || !strncmp(arg, "env:", 4)
              || !strncmp(arg, "exec:", 5);
    const char *norm;

    if (err) {
        return err;
    }
    switch ((long)cmd->info) {
    case SIGNIN_CLIENT_ID:
        sc->signin_refs.client_id = arg;
        break;
    case SIGNIN_CLIENT_SECRET:
        if (!ref) {
            return "SvcOAuthClientSecret takes a reference (env:NAME, file:/path or "
                   "exec:/program), never the secret itself";
        }
        sc->signin_refs.client_secret = arg;
        break;
    default:
        if (!ref && (err = svc_signin_check_base_url(cmd->pool, arg, &norm)) != NULL) {
            return apr_pstrcat(cmd->pool, cmd->directive->directive, " ", err,
                               " (or give a reference such as env:VCS_WEB_URL)", NULL);
        }
        if ((long)cmd->info == SIGNIN_WEB_URL) {
            sc->signin_refs.web_url = arg;
        }
        else {
            sc->signin_refs.api_url = arg;
        }
        break;
    }
    return NULL;
}

/* The code-hosting App's keys and where the setup wizard writes them.
 * Resolved at start (svc_vcs_configure), so an unset env: variable leaves
 * the App off instead of failing start-up. */
#define VCS_APP_KEY(which) ((void *)(long)(which))

static const char *set_vcs_app(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    const char *err = ap_check_cmd_context(cmd, NOT_IN_DIR_LOC_FILE);
    int which = (int)(long)cmd->info;
    const char **slot = vcs_ref(&sc->vcs_refs, which);

    if (err) {
        return err;
    }
    if (which == VCS_APP_CREDENTIALS) {
        *slot = ap_server_root_relative(cmd->pool, arg);
        return *slot ? NULL : "SvcVcsAppCredentials: not a usable path";
    }
    if (which >= VCS_APP_CLIENT_SECRET && !svc_secret_is_ref(arg)) {
        return apr_pstrcat(cmd->pool, cmd->directive->directive, " takes a reference "
                           "(env:NAME, file:/path or exec:/program), never the secret itself",
                           NULL);
    }
    *slot = arg;
    return NULL;
}

static const char *set_ui_url(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    const char *err = svc_signin_check_ui_url(cmd->pool, arg);

    if (err) {
        return apr_pstrcat(cmd->pool, "SvcUIURL ", err, NULL);
    }
    sc->core.ui_url = arg;
    sc->set |= SVC_SET_UI_URL;
    return NULL;
}

static const char *set_vcs_timeout(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    long long v;
    const char *err = parse_positive(cmd, arg, 300, &v);

    if (!err) {
        sc->core.vcs_timeout_ms = (int)v * 1000;
        sc->set |= SVC_SET_VCS_TIMEOUT;
    }
    return err;
}

/*
 * A provider behind a private certificate authority (GitHub Enterprise
 * Server, say): its CA bundle is added to the system's trust store for the
 * provider's calls, never put in its place. Checked at start, so a typo is
 * an error then rather than a failed sign-in later.
 */
static const char *set_vcs_ca_file(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    const char *path = ap_server_root_relative(cmd->pool, arg);
    apr_finfo_t fi;

    if (!path || apr_stat(&fi, path, APR_FINFO_TYPE, cmd->temp_pool) != APR_SUCCESS
        || fi.filetype != APR_REG) {
        return apr_psprintf(cmd->pool, "SvcVcsCAFile: %s is not a readable file", arg);
    }
    sc->core.vcs_ca_file = path;
    return NULL;
}

/*
 * DBDParams belongs to mod_dbd; mod_svc reads it on the way (the table of
 * the module loaded last is searched first, and DECLINE_CMD passes the
 * directive on to mod_dbd), because the connections that must not come
 * from mod_dbd's pool, a LISTEN connection that never returns to it and
 * the run supervisor's, need the same parameters.
 */
static const char *see_dbd_params(cmd_parms *cmd, void *dummy, const char *arg)
{
    server_conf(cmd)->db_conninfo = apr_pstrdup(cmd->pool, arg);
    return DECLINE_CMD;
}

static const command_rec svc_cmds[] = {
    AP_INIT_TAKE1("DBDParams", see_dbd_params, NULL, RSRC_CONF,
                  "mod_dbd's connection parameters (read by mod_svc too; see mod_dbd)"),
    AP_INIT_TAKE1("SvcSecret", set_secret, NULL, RSRC_CONF,
                  "Reference to the server secret (file:/path mode 0600, env:NAME or "
                  "exec:/program); keys for token hashing, session cookies and secrets at "
                  "rest are derived from it"),
    AP_INIT_TAKE1("SvcBodyLimit", set_body_limit, NULL, RSRC_CONF,
                  "Largest JSON request body accepted, in bytes (default 1048576); routes "
                  "may accept less"),
    AP_INIT_TAKE3("SvcRateLimit", set_rate, NULL, RSRC_CONF,
                  "CLASS COUNT SECONDS: at most COUNT events of CLASS per SECONDS, shared "
                  "by every process and node (defaults: tokens 20 60, signin 60 60, "
                  "token_revoke 100 60); COUNT 0 lifts the limit"),
    AP_INIT_ITERATE("SvcInternalAllow", add_internal_allow, NULL, RSRC_CONF,
                    "Addresses or CIDR networks allowed to call /internal/ (default: "
                    "127.0.0.1 and ::1)"),
    AP_INIT_TAKE1("SvcTokenTouchInterval", set_seconds, (void *)SVC_SET_TOUCH, RSRC_CONF,
                  "Seconds between writes of a token's or session's last use (default 60)"),
    AP_INIT_TAKE1("SvcSessionLifetime", set_seconds, (void *)SVC_SET_SESSION_LIFE, RSRC_CONF,
                  "Lifetime of a signed-in session in seconds (default 604800)"),
    AP_INIT_TAKE1("SvcInviteLifetime", set_seconds, (void *)SVC_SET_INVITE_LIFE, RSRC_CONF,
                  "Seconds an invitation to an organization or a project stays valid "
                  "(default 1209600, 14 days)"),
    AP_INIT_TAKE1("SvcModelTimeout", set_model_timeout, NULL, RSRC_CONF,
                  "Longest a call to an organization's model provider may take, in seconds "
                  "(default 120); the request then answers 502 provider_error"),
    AP_INIT_TAKE1("SvcDocumentLimit", set_document_limit, NULL, RSRC_CONF,
                  "Largest planning document body in bytes (default 1048576); routes that "
                  "take a document accept a JSON body big enough to carry one"),
    AP_INIT_TAKE1("SvcStreamLimit", set_stream_limit, NULL, RSRC_CONF,
                  "Event streams one user may hold open at once, counted across every node "
                  "(default 100; 0: no limit); beyond it a new stream answers 429 "
                  "too_many_streams"),
    AP_INIT_TAKE1("SvcAttachmentLimit", set_upload_limit, NULL, RSRC_CONF,
                  "Largest attachment accepted, in bytes or with K, M or G (default 25M); "
                  "uploads are streamed to PostgreSQL, never held in memory"),
    AP_INIT_TAKE3("SvcModelPrice", set_model_price, NULL, RSRC_CONF,
                  "MODEL INPUT_PER_MTOK OUTPUT_PER_MTOK: the model's price in US dollars per "
                  "million input and output tokens, for build cost estimates (before the "
                  "shipped table; repeatable)"),
    AP_INIT_FLAG("SvcProviderAllowPrivate", set_allow_private, NULL, RSRC_CONF,
                 "On: organizations' model provider URLs may reach loopback, private and "
                 "link-local addresses (a local Ollama); cloud metadata addresses stay "
                 "refused (default Off)"),
    AP_INIT_TAKE1("SvcStatementTimeout", set_seconds, (void *)SVC_SET_STMT_TIMEOUT, RSRC_CONF,
                  "Longest a database statement may run, in milliseconds (default 10000)"),
    AP_INIT_ITERATE("SvcTrustedOrigin", add_trusted_origin, NULL, RSRC_CONF,
                    "Origins (scheme://host[:port]) besides the server's own from which "
                    "cookie-authenticated requests may change state"),
    AP_INIT_TAKE1("SvcPublicURL", set_public_url, NULL, RSRC_CONF,
                  "The service's public base URL, as clients reach it: the OpenAPI "
                  "servers list, the sign-in callback, and the origin trusted for "
                  "cookie-authenticated changes; required where sign-in is on, unless "
                  "ServerName with UseCanonicalName On says it"),
    AP_INIT_TAKE1("SvcOAuthClientId", set_signin, (void *)SIGNIN_CLIENT_ID, RSRC_CONF,
                  "Client id of the code-hosting provider's OAuth app for sign-in: the value, "
                  "or env:NAME, file:/path or exec:/program; unset env: turns sign-in off"),
    AP_INIT_TAKE1("SvcOAuthClientSecret", set_signin, (void *)SIGNIN_CLIENT_SECRET, RSRC_CONF,
                  "Client secret of that OAuth app, by reference only (env:NAME, file:/path "
                  "mode 0600, or exec:/program); unset env: turns sign-in off"),
    AP_INIT_TAKE1("SvcVcsWebURL", set_signin, (void *)SIGNIN_WEB_URL, RSRC_CONF,
                  "The provider's web origin, or a reference to it (default "
                  "https://github.com)"),
    AP_INIT_TAKE1("SvcVcsApiURL", set_signin, (void *)SIGNIN_API_URL, RSRC_CONF,
                  "The provider's REST API base URL, or a reference to it (default "
                  "https://api.github.com; GitHub Enterprise Server: https://HOST/api/v3)"),
    AP_INIT_TAKE1("SvcUIURL", set_ui_url, NULL, RSRC_CONF,
                  "Where the browser lands after signing in: a path on this site or an "
                  "http(s) URL (default /); return_to paths go to its origin"),
    AP_INIT_TAKE1("SvcVcsCAFile", set_vcs_ca_file, NULL, RSRC_CONF,
                  "A PEM bundle of certificate authorities trusted for the code-hosting "
                  "provider besides the system's (GitHub Enterprise Server behind a private "
                  "CA)"),
    AP_INIT_TAKE1("SvcVcsTimeout", set_vcs_timeout, NULL, RSRC_CONF,
                  "Seconds all provider calls of one sign-in (or one App request) may take "
                  "together (default 10)"),
    AP_INIT_TAKE1("SvcVcsAppId", set_vcs_app, VCS_APP_KEY(VCS_APP_ID), RSRC_CONF,
                  "The code-hosting App's id: the value, or env:NAME, file:/path or "
                  "exec:/program (default env:VCS_APP_ID)"),
    AP_INIT_TAKE1("SvcVcsAppSlug", set_vcs_app, VCS_APP_KEY(VCS_APP_SLUG), RSRC_CONF,
                  "The App's slug: the value or a reference (default env:VCS_APP_SLUG)"),
    AP_INIT_TAKE1("SvcVcsAppClientId", set_vcs_app, VCS_APP_KEY(VCS_APP_CLIENT_ID), RSRC_CONF,
                  "The App's client id: the value or a reference (default "
                  "env:VCS_APP_CLIENT_ID)"),
    AP_INIT_TAKE1("SvcVcsAppClientSecret", set_vcs_app, VCS_APP_KEY(VCS_APP_CLIENT_SECRET), RSRC_CONF,
                  "The App's client secret, by reference only (default "
                  "env:VCS_APP_CLIENT_SECRET)"),
    AP_INIT_TAKE1("SvcVcsAppWebhookSecret", set_vcs_app, VCS_APP_KEY(VCS_APP_WEBHOOK_SECRET),
                  RSRC_CONF, "The App's webhook secret, by reference only (default "
                  "env:VCS_APP_WEBHOOK_SECRET)"),
    AP_INIT_TAKE1("SvcVcsAppPrivateKey", set_vcs_app, VCS_APP_KEY(VCS_APP_PRIVATE_KEY), RSRC_CONF,
                  "The App's private key (PEM), by reference only (default "
                  "env:VCS_APP_PRIVATE_KEY_PEM)"),
    AP_INIT_TAKE1("SvcVcsAppCredentials", set_vcs_app, VCS_APP_KEY(VCS_APP_CREDENTIALS), RSRC_CONF,
                  "The file (mode 0600) where the setup wizard writes the App's keys, and "
                  "whose entries stand in for unset VCS_APP_* variables"),
    AP_INIT_FLAG("SvcRunSupervisor", svc_cmd_run_supervisor, NULL, RSRC_CONF,
                 "On (default): this httpd carries out queued runs; Off: it only serves "
                 "the API, and other nodes run them"),
    AP_INIT_TAKE_ARGV("SvcRunner", svc_cmd_runner, NULL, RSRC_CONF,
                      "The program (and arguments) that runs the factory in its sandbox "
                      "instead of bubblewrap, with {workspace}, {factory} and {run} "
                      "placeholders (docs/operations.md)"),
    AP_INIT_TAKE1("SvcRunConcurrency", svc_cmd_run_number, (void *)SVC_RUN_CONCURRENCY,
                  RSRC_CONF, "Runs this httpd carries out at once (default 2)"),
    AP_INIT_TAKE1("SvcRunTimeout", svc_cmd_run_number, (void *)SVC_RUN_TIMEOUT, RSRC_CONF,
                  "Seconds a run started through this server may take before it fails with "
                  "timeout (default 1800)"),
    AP_INIT_TAKE1("SvcRunMemory", svc_cmd_run_number, (void *)SVC_RUN_MEMORY, RSRC_CONF,
                  "Address space of each process of a run's sandbox, bytes, K, M or G "
                  "(default 2G; 0: no limit)"),
    AP_INIT_TAKE1("SvcRunProcesses", svc_cmd_run_number, (void *)SVC_RUN_PROCESSES, RSRC_CONF,
                  "Processes a run's sandbox may start beyond what httpd's user already has "
                  "(default 256)"),
    AP_INIT_TAKE1("SvcRunFileSize", svc_cmd_run_number, (void *)SVC_RUN_FILE_SIZE, RSRC_CONF,
                  "Largest file a run may write, bytes, K, M or G (default 64M)"),
    AP_INIT_TAKE1("SvcRunLogLimit", svc_cmd_run_number, (void *)SVC_RUN_LOG_LIMIT, RSRC_CONF,
                  "Bytes of log kept per run; the rest is dropped (default 16M)"),
    AP_INIT_TAKE1("SvcRunLease", svc_cmd_run_number, (void *)SVC_RUN_LEASE, RSRC_CONF,
                  "Seconds a node's claim on a run lasts without renewal before another node "
                  "fails the run as lost (default 30)"),
    AP_INIT_TAKE1("SvcRunWorkDir", svc_cmd_run_path, (void *)SVC_RUN_WORK_DIR, RSRC_CONF,
                  "Where runs' workspaces are made, one directory per run, removed after it "
                  "(default /var/lib/mod_svc/runs)"),
    AP_INIT_TAKE1("SvcRunFactory", svc_cmd_run_path, (void *)SVC_RUN_FACTORY, RSRC_CONF,
                  "The factory program (default " SVC_FACTORY_DEFAULT ")"),
    { NULL }
};

static apr_status_t add_default_internal(svc_server_conf *sc, apr_pool_t *p)
{
    static const char *const loopback[] = { "127.0.0.1", "::1" };
    apr_ipsubnet_t *sub;
    int i;

    for (i = 0; i < 2; i++) {
        if (apr_ipsubnet_create(&sub, loopback[i], NULL, p) == APR_SUCCESS) {
            APR_ARRAY_PUSH(sc->core.internal_allow, apr_ipsubnet_t *) = sub;
        }
    }
    return APR_SUCCESS;
}

/*
 * Resolves the sign-in settings of one server. A virtual host that
 * inherited them all shares the main server's result, so a program runs
 * and the "off" warning is logged once, not once per host; and not on the
 * pass httpd makes over the configuration before the real start.
 */
static apr_status_t signin_setup(svc_server_conf *sc, server_rec *vs, server_rec *s,
                                 apr_pool_t *pconf)
{
    svc_server_conf *main_sc = ap_get_module_config(s->module_config, &svc_module);
    const char *err = NULL;
    apr_status_t rv;

    if (vs != s && memcmp(&sc->signin_refs, &main_sc->signin_refs,
                          sizeof(sc->signin_refs)) == 0) {
        sc->core.signin_off = main_sc->core.signin_off;
        sc->core.oauth_client_id = main_sc->core.oauth_client_id;
        sc->core.oauth_client_secret = main_sc->core.oauth_client_secret;
        sc->core.vcs_web_url = main_sc->core.vcs_web_url;
        sc->core.vcs_api_url = main_sc->core.vcs_api_url;
        return APR_SUCCESS;
    }
    rv = svc_signin_configure(&sc->core, &sc->signin_refs, pconf, &err);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, vs, "SVC0021: sign-in: %s", err);
        return rv;
    }
    if (sc->core.signin_off && ap_state_query(AP_SQ_MAIN_STATE) != AP_SQ_MS_CREATE_PRE_CONFIG) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, vs, "SVC0020: sign-in is off: %s. "
                     "/auth/login and /auth/callback answer 503 sign_in_not_configured; "
                     "personal access tokens work as usual.", sc->core.signin_off);
    }
    return APR_SUCCESS;
}

/*
 * Where sign-in is on, the sign-in callback URL and the origin trusted for
 * cookie-authenticated changes must not come from the Host header, which
 * the client writes (and a proxy may pass through): they come from
 * SvcPublicURL, or from ServerName when UseCanonicalName On makes httpd
 * build its own URLs from it.
 */
static int public_url_known(const svc_server_conf *sc, server_rec *vs)
{
    core_dir_config *d = ap_get_core_module_config(vs->lookup_defaults);

    return sc->core.public_url || (d && d->use_canonical_name == USE_CANONICAL_NAME_ON);
}

/*
 * Resolves the code-hosting App's keys of one server, sharing the main
 * server's result where a virtual host inherited them all (so the key is
 * parsed and the "off" line logged once); nothing is logged on the pass
 * httpd makes over the configuration before the real start.
 */
static apr_status_t vcs_setup(svc_server_conf *sc, server_rec *vs, server_rec *s,
                              apr_pool_t *pconf)
{
    svc_server_conf *main_sc = ap_get_module_config(s->module_config, &svc_module);
    const char *err = NULL;
    apr_status_t rv;

    if (vs != s && memcmp(&sc->vcs_refs, &main_sc->vcs_refs, sizeof(sc->vcs_refs)) == 0) {
        sc->core.vcs_app = main_sc->core.vcs_app;
        sc->core.vcs_app_off = main_sc->core.vcs_app_off;
        sc->core.vcs_app_credentials = main_sc->core.vcs_app_credentials;
        return APR_SUCCESS;
    }
    rv = svc_vcs_configure(&sc->core, &sc->vcs_refs, pconf, &err);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, vs, "SVC0041: code-hosting App: %s", err);
        return rv;
    }
    if (sc->core.vcs_app_off && ap_state_query(AP_SQ_MAIN_STATE) != AP_SQ_MS_CREATE_PRE_CONFIG) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, vs, "SVC0040: vcs_app_not_configured: the "
                     "code-hosting App is off: %s. Its routes answer 503 "
                     "vcs_app_not_configured; sign-in and runs without a repository work as "
                     "usual (docs/api/vcs.md).", sc->core.vcs_app_off);
    }
    return APR_SUCCESS;
}

/*
 * mod_dbd reports every failed connection attempt and every request that
 * found no connection (AH00629, AH02655): two error lines per request for
 * as long as the database is down, which under load fills the disk. For the
 * servers where the operator did not set a level for dbd, those lines are
 * turned down to critical ones; the glue writes its own summary line at
 * most once a second instead (SVC0012, mod_svc_request.c).
 */
static void quiet_dbd(apr_pool_t *pconf, server_rec *s)
{
    module *dbd = ap_find_linked_module("mod_dbd.c");
    server_rec *vs;

    if (!dbd) {
        return;
    }
    for (vs = s; vs; vs = vs->next) {
        if (!vs->log.module_levels || vs->log.module_levels[dbd->module_index] < 0) {
            ap_set_module_loglevel(pconf, &vs->log, dbd->module_index, APLOG_CRIT);
        }
    }
}

/*
 * The service's own URLs name no file, yet httpd would map them to one:
 * core's translate_name joins the path to the DocumentRoot (a path past
 * the file system's limits is a 403 there, AH00127), and map_to_storage
 * walks the filesystem (<Directory> sections, .htaccess: six stat calls
 * per request). Whether a URL is ours is known from SetHandler, which only
 * the <Location> walk before (pre_)translate_name has merged (the
 * configuration is reset to the server's before map_to_storage), so it is
 * read then and remembered in a note.
 */
static int own_url(request_rec *r)
{
    core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    const char *h, *err = NULL;

    if (!d || !d->expr_handler) {
        return 0;
    }
    h = ap_expr_str_exec(r, d->expr_handler, &err);
    return !err && h && strncmp(h, "svc", 3) == 0 && (h[3] == '\0' || h[3] == '-');
}

/*
 * httpd decodes the path after this hook, and answers a malformed escape
 * (400) or an encoded '/' or NUL (404) with its own page, before any
 * Location's ErrorDocument applies. DONE leaves our paths raw: the handler
 * decodes them the same way and answers with problem documents
 * (svc_glue_path).
 */
static int svc_pre_translate_name(request_rec *r)
{
    if (!own_url(r)) {
        return DECLINED;
    }
    apr_table_setn(r->notes, SVC_NOTE_OWN, SVC_NOTE_RAW);
    return DONE;
}

/* Ours: the translation ends here, as mod_proxy's does, with a filename
 * that is no file. */
static int svc_translate_name(request_rec *r)
{
    if (!apr_table_get(r->notes, SVC_NOTE_OWN)) {
        if (!own_url(r)) {
            return DECLINED;
        }
        apr_table_setn(r->notes, SVC_NOTE_OWN, "1");
    }
    r->filename = apr_pstrdup(r->pool, "svc:");
    return OK;
}

static int svc_map_to_storage(request_rec *r)
{
    /*
     * OK ends the phase: core's directory and file walks do not run, and
     * neither does httpd's TRACE handler (http_core hooks it here, after
     * us), which would echo the request, credentials included, wherever
     * TraceEnable is On; the service refuses TRACE itself, with a 405.
     */
    return apr_table_get(r->notes, SVC_NOTE_OWN) ? OK : DECLINED;
}

static int svc_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                           server_rec *s)
{
    static int process_ready = 0;
    const svc_router_t *router;
    svc_router_t *rt;
    server_rec *vs;
    apr_status_t rv;

    /* Libraries that want one call per process, before any thread exists. */
    if (!process_ready) {
        if (svc_crypto_init() != APR_SUCCESS || svc_http_global_init() != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "SVC0001: cannot initialise "
                         "libsodium or libcurl");
            return HTTP_INTERNAL_SERVER_ERROR;
        }
        process_ready = 1;
    }
    if (!svc_glue_dbd_init()) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "SVC0002: mod_svc needs mod_dbd: add "
                     "LoadModule dbd_module before LoadModule svc_module");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    rv = svc_router_create(&rt, svc_route_table(pconf, svc_areas), pconf);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "SVC0003: the route table is invalid");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    router = rt;

    for (vs = s; vs; vs = vs->next) {
        svc_server_conf *sc = ap_get_module_config(vs->module_config, &svc_module);
        const char *err = NULL;

        sc->router = router;
        svc_areas_configure(&sc->core);
        sc->core.openapi_json = svc_openapi_render(pconf, sc->core.areas, sc->core.public_url);
        svc_config_default_rates(&sc->core, pconf);
        if (sc->core.internal_allow->nelts == 0) {
            add_default_internal(sc, pconf);
        }
        if (signin_setup(sc, vs, s, pconf) != APR_SUCCESS
            || vcs_setup(sc, vs, s, pconf) != APR_SUCCESS) {
            return HTTP_INTERNAL_SERVER_ERROR;
        }
        if (!sc->core.signin_off && !public_url_known(sc, vs)) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, vs, "SVC0023: sign-in is configured for "
                         "%s:%u, but not the server's public URL, so the sign-in callback "
                         "and the origin trusted for cookie-authenticated changes would be "
                         "taken from each request's Host header. Set SvcPublicURL to the "
                         "URL browsers use (e.g. SvcPublicURL https://svc.example.com), or "
                         "ServerName https://svc.example.com with UseCanonicalName On; or "
                         "leave SvcOAuthClientId and SvcOAuthClientSecret unset.",
                         vs->server_hostname ? vs->server_hostname : "(no name)",
                         (unsigned)vs->port);
            return HTTP_INTERNAL_SERVER_ERROR;
        }
        if (!sc->secret_ref) {
            continue;
        }
        if (vs != s && sc->secret_ref == ((svc_server_conf *)ap_get_module_config(
                                              s->module_config, &svc_module))->secret_ref) {
            /* Inherited from the main server: share its keys. */
            svc_server_conf *main_sc = ap_get_module_config(s->module_config, &svc_module);
            memcpy(sc->core.pat_key, main_sc->core.pat_key, sizeof(sc->core.pat_key));
            memcpy(sc->core.session_key, main_sc->core.session_key,
                   sizeof(sc->core.session_key));
            memcpy(sc->core.box_key, main_sc->core.box_key, sizeof(sc->core.box_key));
            memcpy(sc->core.signin_key, main_sc->core.signin_key, sizeof(sc->core.signin_key));
            memcpy(sc->core.share_key, main_sc->core.share_key, sizeof(sc->core.share_key));
            memcpy(sc->core.cursor_key, main_sc->core.cursor_key, sizeof(sc->core.cursor_key));
            sc->core.have_secret = main_sc->core.have_secret;
            continue;
        }
        rv = svc_config_load_secret(&sc->core, sc->secret_ref, ptemp, &err);
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, rv, vs, "SVC0004: SvcSecret: %s", err);
            return HTTP_INTERNAL_SERVER_ERROR;
        }
    }
    {
        svc_server_conf *main_sc = ap_get_module_config(s->module_config, &svc_module);
        if (!main_sc->core.have_secret) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "SVC0005: SvcSecret is not set: "
                         "authenticated routes answer 503 until it is");
        }
    }
    quiet_dbd(pconf, s);
    svc_dbwatch_setup(pconf, s);
    svc_supervisor_start(pconf, s);
    /* "mod_svc/x.y.z" in the Server header only where ServerTokens Full lets
     * components show (httpd locks the banner otherwise); always in the
     * server description of the error log's start line. */
    ap_add_version_component(pconf, "mod_svc/" SVC_VERSION);
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, "SVC0006: mod_svc %s ready, schema version "
                 "%d required", SVC_VERSION, svc_schema_version);
    return OK;
}

/* Per child: the authentication cache (its mutex must belong to the child). */
static void svc_child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_status_t rv = svc_pat_cache_init(pchild);

    svc_sse_child_init(pchild, s);
    svc_dbwatch_child_init(pchild);
    if (rv != APR_SUCCESS) {
        /* Not fatal: every request then authenticates with its own round trip. */
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s, "SVC0007: cannot create the "
                     "authentication cache; continuing without it");
    }
    if ((rv = svc_vcs_cache_init(pchild)) != APR_SUCCESS) {
        /* Not fatal either: installation tokens are then minted for each use. */
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s, "SVC0042: cannot create the "
                     "installation token cache; continuing without it");
    }
}

/* The child is about to exit (graceful or not): its event streams end, and
 * their clients reconnect elsewhere with Last-Event-ID. */
static void svc_child_stopping(apr_pool_t *pchild, int graceful)
{
    svc_sse_stopping();
}

static void svc_register_hooks(apr_pool_t *p)
{
    static const char *const pre[] = { "mod_dbd.c", NULL };

    ap_hook_post_config(svc_post_config, pre, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(svc_child_init, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_stopping(svc_child_stopping, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_pre_translate_name(svc_pre_translate_name, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_translate_name(svc_translate_name, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_map_to_storage(svc_map_to_storage, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_handler(svc_handler, NULL, NULL, APR_HOOK_MIDDLE);
    svc_sse_register(p);
    svc_url_hooks();
}

AP_DECLARE_MODULE(svc) = {
    STANDARD20_MODULE_STUFF,
    NULL,
    NULL,
    create_server_conf,
    merge_server_conf,
    svc_cmds,
    svc_register_hooks
#if defined(AP_MODULE_FLAG_ALWAYS_MERGE)
    , AP_MODULE_FLAG_NONE
#endif
};
