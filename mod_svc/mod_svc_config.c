/*
 * mod_svc_config.c: the Svc* directives: their rows, what each value may
 * be, and how a virtual host inherits what it does not set.
 *
 * Every row's cmd->info is NULL or the descriptor of the setting it writes
 * (an offset into svc_server_conf and the kind of value), so one handler
 * serves each kind: whole numbers, seconds, milliseconds, bytes, sizes with
 * K/M/G, amounts with K/M/G (tokens), settings given as a value or a reference, secrets given by
 * reference only, absolute paths. A setting no directive wrote stays unset
 * (SVC_UNSET, NULL, an empty list): merge_server_conf takes the main
 * server's value for it, and svc_config_fill gives what is still unset its
 * default at start. The values themselves are read by the kernel
 * (svc_config_parse_*), which needs no httpd.
 *
 * Adding a directive: a field (in svc_config_t when the core reads it,
 * svc_server_conf when only the glue does), unset in svc_config_unset,
 * a MERGE line and a DEFAULT line (kernel/svc_config.c), and one row
 * below; README and docs/operations.md say what it does.
 */
#include "mod_svc_glue.h"

#include <http_core.h>
#include <apr_file_info.h>
#include <apr_strings.h>

#include <stddef.h>

/* The kinds of value a directive takes. */
typedef enum {
    VAL_COUNT,          /* a whole number */
    VAL_SECONDS,        /* a whole number of seconds */
    VAL_MS,             /* a whole number of milliseconds */
    VAL_BYTES,          /* a whole number of bytes */
    VAL_SIZE,           /* bytes, or a number with K, M or G */
    VAL_AMOUNT,         /* a whole number, or one with K, M or G (of tokens, say) */
    VAL_SETTING,        /* a value, or a reference (env:, file:, exec:) to one */
    VAL_SECRET,         /* a reference only, never the secret itself */
    VAL_URL,            /* an http(s) base URL, or a reference to one */
    VAL_PATH,           /* an absolute path */
    VAL_SERVER_PATH     /* a path, relative to ServerRoot when not absolute */
} val_kind_e;

/* Flags of a setting. */
#define SET_GLOBAL   0x01   /* the main server's only (the one run supervisor) */
#define SET_ZERO_OFF 0x02   /* 0 is allowed besides min..max: "no limit" */

/* What a directive sets: cmd->info of its row. */
typedef struct {
    val_kind_e kind;
    apr_size_t offset;          /* into svc_server_conf */
    apr_size_t width;           /* sizeof the field, for numbers */
    apr_int64_t min, max;
    int scale;                  /* the field holds value * scale (seconds kept as ms) */
    unsigned flags;
} setting_t;

#define SETTING(k, f, ...)                                                          \
    ((void *)&(const setting_t){ .kind = (k), .offset = offsetof(svc_server_conf, f),  \
                                 .width = sizeof(((svc_server_conf *)0)->f), __VA_ARGS__ })

/* Rows: a number of some kind, a string of some kind, or a directive of its
 * own handler (info NULL). After the help come the setting's rules, each
 * by its name: .min and .max (numbers), .scale (when the field keeps the
 * value times it; 1 when left out) and .flags (none when left out). */
#define NUMBER(name, kind, f, help, ...) \
    AP_INIT_TAKE1(name, set_number, SETTING(kind, f, __VA_ARGS__), RSRC_CONF, help)
#define STRING(name, kind, f, help, ...) \
    AP_INIT_TAKE1(name, set_string, SETTING(kind, f, __VA_ARGS__), RSRC_CONF, help)

/* set_number writes apr_size_t fields as 64-bit numbers. */
_Static_assert(sizeof(apr_size_t) == sizeof(apr_int64_t), "apr_size_t is not 64 bits wide");

static void *at(svc_server_conf *sc, const setting_t *set)
{
    return (char *)sc + set->offset;
}

static svc_server_conf *server_conf(cmd_parms *cmd)
{
    return ap_get_module_config(cmd->server->module_config, &svc_module);
}

/* ------------------------------------------------------------------------
 * Creating and merging
 */

void *svc_create_server_conf(apr_pool_t *p, server_rec *s)
{
    svc_server_conf *sc = apr_pcalloc(p, sizeof(*sc));

    svc_config_unset(&sc->core, p);
    svc_supervisor_defaults(&sc->sup);
    return sc;
}

#define MERGE_PTR(f) (sc->f = add->f ? add->f : base->f)

/* A virtual host inherits what it does not set itself. */
void *svc_merge_server_conf(apr_pool_t *p, void *basev, void *addv)
{
    svc_server_conf *base = basev, *add = addv;
    svc_server_conf *sc = apr_pmemdup(p, add, sizeof(*add));

    sc->schema_ok = 0;
    sc->schema_checked_at = 0;
    svc_config_merge(&sc->core, &base->core, &add->core, p);
    MERGE_PTR(secret_ref);
    MERGE_PTR(db_conninfo);
    MERGE_PTR(signin_refs.client_id);
    MERGE_PTR(signin_refs.client_secret);
    MERGE_PTR(signin_refs.web_url);
    MERGE_PTR(signin_refs.api_url);
    MERGE_PTR(vcs_refs.app_id);
    MERGE_PTR(vcs_refs.slug);
    MERGE_PTR(vcs_refs.client_id);
    MERGE_PTR(vcs_refs.client_secret);
    MERGE_PTR(vcs_refs.webhook_secret);
    MERGE_PTR(vcs_refs.private_key);
    MERGE_PTR(vcs_refs.credentials);
    MERGE_PTR(billing_refs.secret_key);
    MERGE_PTR(billing_refs.webhook_secret);
    MERGE_PTR(billing_refs.api_url);
    /* A virtual host's plans replace the main server's, all of them. */
    MERGE_PTR(billing_refs.plans);
    return sc;
}

/* ------------------------------------------------------------------------
 * One handler per kind of value
 */

static const char *check_global(cmd_parms *cmd, const setting_t *set)
{
    return (set->flags & SET_GLOBAL) ? ap_check_cmd_context(cmd, GLOBAL_ONLY) : NULL;
}

static const char *set_number(cmd_parms *cmd, void *dummy, const char *arg)
{
    const setting_t *set = cmd->info;
    const char *name = cmd->directive->directive, *err = check_global(cmd, set);
    void *field = at(server_conf(cmd), set);
    apr_int64_t v;
    int ok;

    if (err) {
        return err;
    }
    if ((set->flags & SET_ZERO_OFF) && strcmp(arg, "0") == 0) {
        v = 0;
        ok = 1;
    }
    else if (set->kind == VAL_SIZE || set->kind == VAL_AMOUNT) {
        ok = svc_config_parse_size(arg, set->min, set->max, &v);
    }
    else {
        ok = svc_config_parse_int(arg, set->min, set->max, &v);
    }
    if (!ok) {
        static const char *const what[] = {
            [VAL_COUNT] = "a whole number", [VAL_SECONDS] = "a number of seconds",
            [VAL_MS] = "a number of milliseconds", [VAL_BYTES] = "a number of bytes"
        };
        const char *zero = (set->flags & SET_ZERO_OFF) ? ", or 0 for no limit" : "";

        if (set->kind == VAL_SIZE || set->kind == VAL_AMOUNT) {
            return apr_psprintf(cmd->pool, "%s must be %s from %" APR_INT64_T_FMT " to %"
                                APR_INT64_T_FMT "%s (suffixes K, M and G allowed)%s",
                                name, set->kind == VAL_SIZE ? "a size" : "a number",
                                set->min, set->max, set->kind == VAL_SIZE ? " bytes" : "",
                                zero);
        }
        return apr_psprintf(cmd->pool, "%s must be %s from %" APR_INT64_T_FMT " to %"
                            APR_INT64_T_FMT "%s", name, what[set->kind], set->min, set->max,
                            zero);
    }
    v *= set->scale ? set->scale : 1;
    if (set->width == sizeof(int)) {
        *(int *)field = (int)v;
    }
    else {
        /* apr_size_t and apr_int64_t are both 64 bits wide where httpd runs. */
        *(apr_int64_t *)field = v;
    }
    return NULL;
}

static const char *set_string(cmd_parms *cmd, void *dummy, const char *arg)
{
    const setting_t *set = cmd->info;
    const char *name = cmd->directive->directive, *err = check_global(cmd, set), *norm;
    const char **field = at(server_conf(cmd), set);

    if (err) {
        return err;
    }
    switch (set->kind) {
    case VAL_SECRET:
        if (!svc_secret_is_ref(arg)) {
            return apr_pstrcat(cmd->pool, name, " takes a reference (env:NAME, file:/path "
                               "or exec:/program), never the secret itself", NULL);
        }
        break;
    case VAL_URL:
        if (!svc_secret_is_ref(arg)
            && (err = svc_signin_check_base_url(cmd->pool, arg, &norm)) != NULL) {
            return apr_pstrcat(cmd->pool, name, " ", err, " (or give a reference such as "
                               "env:NAME)", NULL);
        }
        break;
    case VAL_PATH:
        if (arg[0] != '/') {
            return apr_pstrcat(cmd->pool, name, " must be an absolute path", NULL);
        }
        break;
    case VAL_SERVER_PATH:
        if (!(arg = ap_server_root_relative(cmd->pool, arg))) {
            return apr_pstrcat(cmd->pool, name, ": not a usable path", NULL);
        }
        break;
    default:
        break;
    }
    *field = arg;
    return NULL;
}

/* ------------------------------------------------------------------------
 * Directives with rules of their own
 */

static const char *set_rate(cmd_parms *cmd, void *dummy, const char *name, const char *count,
                            const char *period)
{
    svc_server_conf *sc = server_conf(cmd);
    const char *names;
    apr_int64_t c, s;

    /* A class no route counts against would be accepted and never apply. */
    if (!svc_rate_class_known(name, svc_areas, cmd->temp_pool, &names)) {
        return apr_psprintf(cmd->pool, "SvcRateLimit: there is no rate class %s (the classes "
                            "are %s)", svc_printable(cmd->temp_pool, name, 64), names);
    }
    if (!svc_config_parse_int(count, 0, 1000000, &c)) {
        return "SvcRateLimit COUNT must be a whole number from 0 (unlimited) to 1000000";
    }
    if (!svc_config_parse_int(period, 1, 86400, &s)) {
        return "SvcRateLimit SECONDS must be a number of seconds from 1 to 86400";
    }
    svc_config_set_rate(&sc->core, cmd->pool, name, (int)c, (int)s);
    return NULL;
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
    if (!svc_config_parse_price(in, &vin) || !svc_config_parse_price(out, &vout)) {
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

static const char *set_allow_private(cmd_parms *cmd, void *dummy, int on)
{
    server_conf(cmd)->core.provider_allow_private = on;
    return NULL;
}

static const char *add_internal_allow(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    char *ip = apr_pstrdup(cmd->pool, arg);
    char *mask = strchr(ip, '/');
    apr_ipsubnet_t *sub;

    if (mask) {
        *mask++ = '\0';
    }
    if (apr_ipsubnet_create(&sub, ip, mask, cmd->pool) != APR_SUCCESS) {
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
 * The public URL, and its origin as browsers write it in Origin headers,
 * for the CSRF check.
 */
static const char *set_public_url(cmd_parms *cmd, void *dummy, const char *arg)
{
    svc_server_conf *sc = server_conf(cmd);
    const char *norm, *why = svc_signin_check_base_url(cmd->pool, arg, &norm);

    if (why) {
        return apr_pstrcat(cmd->pool, "SvcPublicURL ", why, NULL);
    }
    sc->core.public_url = norm;
    sc->core.public_origin = svc_config_origin(cmd->pool, norm);
    return NULL;
}

static const char *set_ui_url(cmd_parms *cmd, void *dummy, const char *arg)
{
    const char *err = svc_signin_check_ui_url(cmd->pool, arg);

    if (err) {
        return apr_pstrcat(cmd->pool, "SvcUIURL ", err, NULL);
    }
    server_conf(cmd)->core.ui_url = arg;
    return NULL;
}

/*
 * A provider behind a private certificate authority (GitHub Enterprise
 * Server, say): its CA bundle is added to the system's trust store for the
 * provider's calls, never put in its place. Checked at start, so a typo is
 * an error then rather than a failed sign-in later.
 */
static const char *set_vcs_ca_file(cmd_parms *cmd, void *dummy, const char *arg)
{
    const char *path = ap_server_root_relative(cmd->pool, arg);
    apr_finfo_t fi;

    if (!path || apr_stat(&fi, path, APR_FINFO_TYPE, cmd->temp_pool) != APR_SUCCESS
        || fi.filetype != APR_REG) {
        return apr_psprintf(cmd->pool, "SvcVcsCAFile: %s is not a readable file", arg);
    }
    server_conf(cmd)->core.vcs_ca_file = path;
    return NULL;
}

/* A server-wide On|Off kept as "off" (cmd->info: the int's offset in
 * svc_server_conf): SvcRunSupervisor, SvcMetrics. */
static const char *set_global_off(cmd_parms *cmd, void *dummy, int on)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);

    if (err) {
        return err;
    }
    *(int *)((char *)server_conf(cmd) + (apr_uintptr_t)cmd->info) = !on;
    return NULL;
}

static const char *set_runner(cmd_parms *cmd, void *dummy, int argc, char *const argv[])
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    const char **args;
    int i, has_command = 0, has_workspace = 0;

    if (err) {
        return err;
    }
    if (argc < 1) {
        return "SvcRunner takes a program and its arguments";
    }
    if (argv[0][0] != '/') {
        return "SvcRunner: the program must be an absolute path";
    }
    args = apr_pcalloc(cmd->pool, sizeof(*args) * (apr_size_t)(argc + 1));
    for (i = 0; i < argc; i++) {
        args[i] = apr_pstrdup(cmd->pool, argv[i]);
        has_command += strcmp(argv[i], "{command}") == 0;
        has_workspace |= strstr(argv[i], "{workspace}") != NULL;
    }
    if (has_command != 1 || !has_workspace) {
        return "SvcRunner must have {command} as one argument of its own (where the command "
               "to run in the sandbox goes) and name {workspace} (docs/operations.md)";
    }
    server_conf(cmd)->sup.runner = args;
    return NULL;
}

/*
 * SvcBillingPlan ID NAME PRICE_ID AMOUNT CURRENCY [key=value ...], repeatable;
 * the arguments are the billing area's to read (svc_billing_plan_parse). Two
 * plans may not share an id or a price: the provider's events name the
 * price, and clients the id.
 */
static const char *add_billing_plan(cmd_parms *cmd, void *dummy, int argc, char *const argv[])
{
    svc_server_conf *sc = server_conf(cmd);
    svc_billing_plan_t plan;
    const char *err = NULL;
    int i;

    if (svc_billing_plan_parse(cmd->pool, argc, argv, &plan, &err) != APR_SUCCESS) {
        return err;
    }
    if (!sc->billing_refs.plans) {
        sc->billing_refs.plans = apr_array_make(cmd->pool, 4, sizeof(svc_billing_plan_t));
    }
    for (i = 0; i < sc->billing_refs.plans->nelts; i++) {
        const svc_billing_plan_t *e = &APR_ARRAY_IDX(sc->billing_refs.plans, i,
                                                     svc_billing_plan_t);
        if (strcmp(e->id, plan.id) == 0 || strcmp(e->price_id, plan.price_id) == 0) {
            return apr_psprintf(cmd->pool, "SvcBillingPlan: plan %s or price %s is named "
                                "twice", plan.id, plan.price_id);
        }
    }
    APR_ARRAY_PUSH(sc->billing_refs.plans, svc_billing_plan_t) = plan;
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

/* ------------------------------------------------------------------------
 * The rows
 */

#define KIB APR_INT64_C(1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)

const command_rec svc_cmds[] = {
    AP_INIT_TAKE1("DBDParams", see_dbd_params, NULL, RSRC_CONF,
                  "mod_dbd's connection parameters (read by mod_svc too; see mod_dbd)"),
    STRING("SvcSecret", VAL_SECRET, secret_ref,
           "Reference to the server secret (file:/path mode 0600, env:NAME or "
           "exec:/program); keys for token hashing, session cookies and secrets at "
           "rest are derived from it"),
    NUMBER("SvcBodyLimit", VAL_BYTES, core.body_limit,
           "Largest JSON request body accepted, in bytes (default 1048576); routes "
           "may accept less",
           .min = 1, .max = 64 * MIB),
    AP_INIT_TAKE3("SvcRateLimit", set_rate, NULL, RSRC_CONF,
                  "CLASS COUNT SECONDS: at most COUNT events of CLASS per SECONDS, shared "
                  "by every process and node (defaults: tokens 20 60, signin 60 60, "
                  "token_revoke 100 60); COUNT 0 lifts the limit"),
    AP_INIT_ITERATE("SvcInternalAllow", add_internal_allow, NULL, RSRC_CONF,
                    "Addresses or CIDR networks allowed to call /internal/ (default: "
                    "127.0.0.1 and ::1)"),
    NUMBER("SvcTokenTouchInterval", VAL_SECONDS, core.token_touch_interval,
           "Seconds between writes of a token's or session's last use (default 60)",
           .min = 1, .max = 365 * 86400),
    NUMBER("SvcSessionLifetime", VAL_SECONDS, core.session_lifetime,
           "Lifetime of a signed-in session in seconds (default 604800)",
           .min = 1, .max = 365 * 86400),
    NUMBER("SvcInviteLifetime", VAL_SECONDS, core.invite_lifetime,
           "Seconds an invitation to an organization or a project stays valid "
           "(default 1209600, 14 days)",
           .min = 1, .max = 365 * 86400),
    NUMBER("SvcModelTimeout", VAL_SECONDS, core.model_timeout_ms,
           "Longest a call to an organization's model provider may take, in seconds "
           "(default 120); the request then answers 502 provider_error",
           .min = 1, .max = 3600, .scale = 1000),
    NUMBER("SvcDocumentLimit", VAL_BYTES, core.document_limit,
           "Largest planning document body in bytes (default 1048576); routes that "
           "take a document accept a JSON body big enough to carry one",
           .min = 1, .max = 8 * MIB),
    /* The main server's only: one count per user, whichever host a stream is on. */
    NUMBER("SvcStreamLimit", VAL_COUNT, core.stream_limit,
           "Event streams one user may hold open at once, counted across every node "
           "(default 100; 0: no limit); beyond it a new stream answers 429 "
           "too_many_streams",
           .min = 0, .max = 1000000, .flags = SET_GLOBAL),
    NUMBER("SvcAttachmentLimit", VAL_SIZE, core.upload_limit,
           "Largest attachment accepted, in bytes or with K, M or G (default 25M); "
           "uploads are streamed to PostgreSQL, never held in memory",
           .min = 1, .max = 4 * GIB),
    AP_INIT_TAKE3("SvcModelPrice", set_model_price, NULL, RSRC_CONF,
                  "MODEL INPUT_PER_MTOK OUTPUT_PER_MTOK: the model's price in US dollars per "
                  "million input and output tokens, for build cost estimates (before the "
                  "shipped table; repeatable)"),
    AP_INIT_FLAG("SvcProviderAllowPrivate", set_allow_private, NULL, RSRC_CONF,
                 "On: organizations' model provider URLs may reach loopback, private and "
                 "link-local addresses (a local Ollama); cloud metadata addresses stay "
                 "refused (default Off)"),
    NUMBER("SvcStatementTimeout", VAL_MS, core.statement_timeout_ms,
           "Longest a database statement may run, in milliseconds (default 10000)",
           .min = 1, .max = 3600 * 1000),
    AP_INIT_ITERATE("SvcTrustedOrigin", add_trusted_origin, NULL, RSRC_CONF,
                    "Origins (scheme://host[:port]) besides the server's own from which "
                    "cookie-authenticated requests may change state"),
    AP_INIT_TAKE1("SvcPublicURL", set_public_url, NULL, RSRC_CONF,
                  "The service's public base URL, as clients reach it: the OpenAPI "
                  "servers list, the sign-in callback, and the origin trusted for "
                  "cookie-authenticated changes; required where sign-in is on, unless "
                  "ServerName with UseCanonicalName On says it"),

    /* Sign-in: references are resolved at start (svc_signin_configure), so an
     * env: variable that is unset there turns sign-in off instead of failing
     * start-up. */
    STRING("SvcOAuthClientId", VAL_SETTING, signin_refs.client_id,
           "Client id of the code-hosting provider's OAuth app for sign-in: the value, "
           "or env:NAME, file:/path or exec:/program; unset env: turns sign-in off"),
    STRING("SvcOAuthClientSecret", VAL_SECRET, signin_refs.client_secret,
           "Client secret of that OAuth app, by reference only (env:NAME, file:/path "
           "mode 0600, or exec:/program); unset env: turns sign-in off"),
    STRING("SvcVcsWebURL", VAL_URL, signin_refs.web_url,
           "The provider's web origin, or a reference to it (default https://github.com)"),
    STRING("SvcVcsApiURL", VAL_URL, signin_refs.api_url,
           "The provider's REST API base URL, or a reference to it (default "
           "https://api.github.com; GitHub Enterprise Server: https://HOST/api/v3)"),
    AP_INIT_TAKE1("SvcUIURL", set_ui_url, NULL, RSRC_CONF,
                  "Where the browser lands after signing in: a path on this site or an "
                  "http(s) URL (default /); return_to paths go to its origin"),
    AP_INIT_TAKE1("SvcVcsCAFile", set_vcs_ca_file, NULL, RSRC_CONF,
                  "A PEM bundle of certificate authorities trusted for the code-hosting "
                  "provider besides the system's (GitHub Enterprise Server behind a private "
                  "CA)"),
    NUMBER("SvcVcsTimeout", VAL_SECONDS, core.vcs_timeout_ms,
           "Seconds all provider calls of one sign-in (or one App request) may take "
           "together (default 10)",
           .min = 1, .max = 300, .scale = 1000),

    /* The code-hosting App: resolved at start (svc_vcs_configure), so an
     * unset env: variable leaves the App off instead of failing start-up. */
    STRING("SvcVcsAppId", VAL_SETTING, vcs_refs.app_id,
           "The code-hosting App's id: the value, or env:NAME, file:/path or "
           "exec:/program (default env:VCS_APP_ID)"),
    STRING("SvcVcsAppSlug", VAL_SETTING, vcs_refs.slug,
           "The App's slug: the value or a reference (default env:VCS_APP_SLUG)"),
    STRING("SvcVcsAppClientId", VAL_SETTING, vcs_refs.client_id,
           "The App's client id: the value or a reference (default env:VCS_APP_CLIENT_ID)"),
    STRING("SvcVcsAppClientSecret", VAL_SECRET, vcs_refs.client_secret,
           "The App's client secret, by reference only (default env:VCS_APP_CLIENT_SECRET)"),
    STRING("SvcVcsAppWebhookSecret", VAL_SECRET, vcs_refs.webhook_secret,
           "The App's webhook secret, by reference only (default "
           "env:VCS_APP_WEBHOOK_SECRET)"),
    STRING("SvcVcsAppPrivateKey", VAL_SECRET, vcs_refs.private_key,
           "The App's private key (PEM), by reference only (default "
           "env:VCS_APP_PRIVATE_KEY_PEM)"),
    STRING("SvcVcsAppCredentials", VAL_SERVER_PATH, vcs_refs.credentials,
           "The file (mode 0600) where the setup wizard writes the App's keys, and "
           "whose entries stand in for unset VCS_APP_* variables"),

    /* Billing: resolved at start (svc_billing_configure), so an unset env:
     * variable leaves the payment routes off instead of failing start-up. */
    STRING("SvcBillingSecretKey", VAL_SECRET, billing_refs.secret_key,
           "The payment provider's secret API key, by reference only (default "
           "env:BILLING_SECRET_KEY); unset, the payment routes answer 503 "
           "billing_not_configured"),
    STRING("SvcBillingWebhookSecret", VAL_SECRET, billing_refs.webhook_secret,
           "The signing secret of the provider's webhook endpoint, by reference only "
           "(default env:BILLING_WEBHOOK_SECRET)"),
    STRING("SvcBillingApiURL", VAL_URL, billing_refs.api_url,
           "The payment provider's API base URL, or a reference to it (default "
           "env:BILLING_API_URL, else https://api.stripe.com)"),
    NUMBER("SvcBillingTimeout", VAL_SECONDS, core.billing_timeout_ms,
           "Seconds one call to the payment provider may take (default 20)",
           .min = 1, .max = 300, .scale = 1000),
    AP_INIT_TAKE_ARGV("SvcBillingPlan", add_billing_plan, NULL, RSRC_CONF,
                      "ID NAME PRICE_ID AMOUNT CURRENCY [run_minutes=N] [model_tokens=N] "
                      "[deployment_hours=N] [hard=on|off] [interval=month|year]: a plan "
                      "organizations may subscribe to (repeatable)"),

    /* Runs: one supervisor per httpd, so its settings are the main server's;
     * only the run timeout and the agent's limits are per virtual host (a run
     * keeps the values of the host it was started through). */
    AP_INIT_FLAG("SvcRunSupervisor", set_global_off,
                 (void *)APR_OFFSETOF(svc_server_conf, sup_off), RSRC_CONF,
                 "On (default): this httpd carries out queued runs; Off: it only serves "
                 "the API, and other nodes run them"),
    AP_INIT_FLAG("SvcMetrics", set_global_off,
                 (void *)APR_OFFSETOF(svc_server_conf, metrics_off), RSRC_CONF,
                 "On (default): count requests, pool waits, streams, model calls and more "
                 "in shared memory for GET /internal/metrics; Off: count nothing"),
    AP_INIT_TAKE_ARGV("SvcRunner", set_runner, NULL, RSRC_CONF,
                      "The program (and arguments) that runs the factory in its sandbox "
                      "instead of bubblewrap, with {workspace}, {factory} and {run} "
                      "placeholders (docs/operations.md)"),
    NUMBER("SvcRunConcurrency", VAL_COUNT, sup.concurrency,
           "Runs this httpd carries out at once (default 2)",
           .min = 1, .max = 256, .flags = SET_GLOBAL),
    NUMBER("SvcRunTimeout", VAL_SECONDS, core.run_timeout,
           "Seconds a run started through this server may take before it fails with "
           "timeout (default 1800)",
           .min = 1, .max = 7 * 86400),
    /* The agent's limits are per virtual host too: a run takes them from
     * the host it was started through. */
    NUMBER("SvcRunMaxSteps", VAL_COUNT, core.run_max_steps,
           "Tool calls an agent run started through this server may make before it "
           "fails with step_limit, its work so far committed (default 50)",
           .min = 1, .max = 10000),
    NUMBER("SvcRunMaxTokens", VAL_AMOUNT, core.run_max_tokens,
           "Model tokens (input and output) a run started through this server may use "
           "before it fails with token_limit, its work so far committed (default "
           "2000000; K, M and G allowed)",
           .min = 1000, .max = 1000000000),
    NUMBER("SvcRunCommandTimeout", VAL_SECONDS, core.run_command_timeout,
           "Seconds one command an agent run executes in its sandbox may take before it "
           "is killed (default 120)",
           .min = 1, .max = 86400),
    /* 0: no limit on the address space (what a sanitizer build of the
     * factory needs: its shadow memory is reserved up front). */
    NUMBER("SvcRunMemory", VAL_SIZE, sup.memory,
           "Address space of each process of a run's sandbox, bytes, K, M or G "
           "(default 2G; 0: no limit)",
           .min = 64 * MIB, .max = 1024 * GIB, .flags = SET_GLOBAL | SET_ZERO_OFF),
    NUMBER("SvcRunProcesses", VAL_COUNT, sup.processes,
           "Processes a run's sandbox may start beyond what httpd's user already has "
           "(default 256)",
           .min = 8, .max = 65536, .flags = SET_GLOBAL),
    NUMBER("SvcRunFileSize", VAL_SIZE, sup.file_size,
           "Largest file a run may write, bytes, K, M or G (default 64M)",
           .min = 1 * MIB, .max = 1024 * GIB, .flags = SET_GLOBAL),
    NUMBER("SvcRunLogLimit", VAL_SIZE, sup.log_limit,
           "Bytes of log kept per run; the rest is dropped (default 16M)",
           .min = 4 * KIB, .max = 1 * GIB, .flags = SET_GLOBAL),
    NUMBER("SvcRunLease", VAL_SECONDS, sup.lease_seconds,
           "Seconds a node's claim on a run lasts without renewal before another node "
           "fails the run as lost (default 30)",
           .min = 5, .max = 3600, .flags = SET_GLOBAL),
    STRING("SvcRunWorkDir", VAL_PATH, sup.work_dir,
           "Where runs' workspaces are made, one directory per run, removed after it "
           "(default /var/lib/mod_svc/runs)",
           .flags = SET_GLOBAL),
    STRING("SvcRunFactory", VAL_PATH, sup.factory,
           "The factory program (default " SVC_FACTORY_DEFAULT ")",
           .flags = SET_GLOBAL),
    { NULL }
};
