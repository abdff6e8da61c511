/*
 * mod_svc.c: the module record and the start-up hooks; the directives are
 * mod_svc_config.c's.
 */
#include "mod_svc_glue.h"

#include <http_core.h>
#include <http_protocol.h>
#include <http_request.h>
#include <ap_mpm.h>
#include <mpm_common.h>
#include <apr_file_info.h>
#include <apr_strings.h>

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
 * Resolves the billing settings of one server, sharing the main server's
 * result where a virtual host inherited them all (so each "off" line is
 * logged once); nothing is logged on the pass httpd makes over the
 * configuration before the real start.
 */
static apr_status_t billing_setup(svc_server_conf *sc, server_rec *vs, server_rec *s,
                                  apr_pool_t *pconf)
{
    svc_server_conf *main_sc = ap_get_module_config(s->module_config, &svc_module);
    const char *err = NULL, *webhook_off = NULL;
    int logging = ap_state_query(AP_SQ_MAIN_STATE) != AP_SQ_MS_CREATE_PRE_CONFIG;
    apr_status_t rv;

    if (vs != s && memcmp(&sc->billing_refs, &main_sc->billing_refs,
                          sizeof(sc->billing_refs)) == 0) {
        sc->core.billing = main_sc->core.billing;
        sc->core.billing_off = main_sc->core.billing_off;
        return APR_SUCCESS;
    }
    rv = svc_billing_configure(&sc->core, &sc->billing_refs, pconf, &webhook_off, &err);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, vs, "SVC0701: billing: %s", err);
        return rv;
    }
    if (sc->core.billing_off && logging) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, vs, "SVC0700: billing_not_configured: "
                     "payments are off: %s. Checkout, the customer portal and the payment "
                     "method answer 503 billing_not_configured; plans, billing and usage work "
                     "as usual (docs/operations.md, \"Billing\").", sc->core.billing_off);
    }
    else if (webhook_off && logging) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, vs, "SVC0702: billing_not_configured: the "
                     "payment provider's webhook is off: %s. POST /webhooks/billing answers "
                     "503, so subscriptions are not followed (docs/operations.md, "
                     "\"Billing\").", webhook_off);
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

/*
 * The metrics' layout (svc_metrics.h), unless SvcMetrics Off: a slot per
 * route of the table and per rate class, all known now. `table` is the
 * router's own: the rows it matches are the rows counted.
 */
static svc_metrics_t *metrics_layout(apr_pool_t *pconf, server_rec *s,
                                     const svc_route_t *table)
{
    svc_server_conf *sc = ap_get_module_config(s->module_config, &svc_module);
    apr_array_header_t *classes = apr_array_make(pconf, 16, sizeof(const char *));
    const svc_rate_class_t *d;
    const svc_route_t *r;

    if (sc->metrics_off) {
        return NULL;
    }
    for (d = svc_rate_defaults; d->name; d++) {
        APR_ARRAY_PUSH(classes, const char *) = d->name;
    }
    for (r = table; r->method; r++) {
        if (r->rate_class) {
            APR_ARRAY_PUSH(classes, const char *) = r->rate_class;
        }
    }
    APR_ARRAY_PUSH(classes, const char *) = NULL;
    return svc_metrics_create(pconf, table, (const char *const *)classes->elts);
}

static int svc_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                           server_rec *s)
{
    static int process_ready = 0;
    const svc_router_t *router;
    svc_router_t *rt;
    server_rec *vs;
    const char *undocumented;
    svc_shared_t *shared;
    svc_metrics_t *metrics;
    const svc_route_t *table;
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
    table = svc_route_table(pconf, svc_areas);
    rv = svc_router_create(&rt, table, pconf);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "SVC0003: the route table is invalid");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    router = rt;
    /* A route the OpenAPI document cannot describe truthfully (a JSON
     * answer without a schema, say) is a route table mistake too. */
    if ((undocumented = svc_openapi_check(pconf, svc_areas)) != NULL) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "SVC0306: the route table cannot be "
                     "documented: %s (docs/api/conventions.md, \"The document\")", undocumented);
        return HTTP_INTERNAL_SERVER_ERROR;
    }

    /* Made here, in the parent before it forks: children and the run
     * supervisor all map it (svc_shared.h), metrics and all. */
    metrics = metrics_layout(pconf, s, table);
    shared = svc_shared_create(pconf, metrics ? svc_metrics_size(metrics) : 0, &rv);
    if (!shared) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, "SVC0800: cannot make the shared memory "
                     "segment; /internal/ready answers 503 until httpd restarts");
        metrics = NULL;
    }
    if (metrics) {
        svc_metrics_bind(metrics, svc_shared_extra(shared));
    }
    svc_metrics_use(metrics);
    for (vs = s; vs; vs = vs->next) {
        svc_server_conf *sc = ap_get_module_config(vs->module_config, &svc_module);
        const char *err = NULL;

        sc->core.shared = shared;
        sc->router = router;
        svc_config_fill(&sc->core, pconf);
        svc_areas_configure(&sc->core);
        sc->core.openapi_json = svc_openapi_render(pconf, sc->core.areas, sc->core.public_url);
        svc_config_default_rates(&sc->core, pconf);
        if (signin_setup(sc, vs, s, pconf) != APR_SUCCESS
            || vcs_setup(sc, vs, s, pconf) != APR_SUCCESS
            || billing_setup(sc, vs, s, pconf) != APR_SUCCESS) {
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
            svc_config_share_keys(&sc->core, &((svc_server_conf *)ap_get_module_config(
                                                   s->module_config, &svc_module))->core);
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
    svc_create_server_conf,
    svc_merge_server_conf,
    svc_cmds,
    svc_register_hooks
#if defined(AP_MODULE_FLAG_ALWAYS_MERGE)
    , AP_MODULE_FLAG_NONE
#endif
};
