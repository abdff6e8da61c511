/*
 * svc_config.c: settings unset, merged and defaulted; rate classes; the values
 * directives take; secrets given by reference.
 */
#include "svc_config.h"
#include "svc_crypto.h"
#include "svc_secret.h"

#include <apr_lib.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

void svc_config_unset(svc_config_t *conf, apr_pool_t *p)
{
    memset(conf, 0, sizeof(*conf));
    conf->body_limit = SVC_UNSET;
    conf->token_touch_interval = SVC_UNSET;
    conf->session_lifetime = SVC_UNSET;
    conf->statement_timeout_ms = SVC_UNSET;
    conf->invite_lifetime = SVC_UNSET;
    conf->model_timeout_ms = SVC_UNSET;
    conf->document_limit = SVC_UNSET;
    conf->provider_allow_private = SVC_UNSET;
    conf->run_timeout = SVC_UNSET;
    conf->upload_limit = SVC_UNSET;
    conf->vcs_timeout_ms = SVC_UNSET;
    conf->stream_limit = SVC_UNSET;
    conf->run_max_steps = SVC_UNSET;
    conf->run_max_tokens = SVC_UNSET;
    conf->run_command_timeout = SVC_UNSET;
    conf->billing_timeout_ms = SVC_UNSET;
    conf->rate_classes = apr_array_make(p, 4, sizeof(svc_rate_class_t));
    conf->internal_allow = apr_array_make(p, 2, sizeof(apr_ipsubnet_t *));
    conf->trusted_origins = apr_array_make(p, 2, sizeof(const char *));
    /* Resolved at start, not merged: svc_signin_configure, svc_vcs_configure. */
    conf->signin_off = "SvcOAuthClientId and SvcOAuthClientSecret are not set";
    conf->vcs_web_url = "https://github.com";
    conf->vcs_api_url = "https://api.github.com";
    conf->vcs_connect_timeout_ms = 3000;
    conf->vcs_app_off = "the code-hosting App is not configured";
    conf->billing_off = "billing is not configured";
}

/* One line per setting: add's value where it set one, else base's. */
#define MERGE(f) (into->f = !svc_config_is_unset(add->f) ? add->f : base->f)
#define MERGE_PTR(f) (into->f = add->f ? add->f : base->f)
#define MERGE_LIST(f) (into->f = add->f->nelts ? add->f : base->f)

void svc_config_merge(svc_config_t *into, const svc_config_t *base, const svc_config_t *add,
                      apr_pool_t *p)
{
    int i;

    MERGE(body_limit);
    MERGE(token_touch_interval);
    MERGE(session_lifetime);
    MERGE(statement_timeout_ms);
    MERGE(invite_lifetime);
    MERGE(model_timeout_ms);
    MERGE(document_limit);
    MERGE(provider_allow_private);
    MERGE(run_timeout);
    MERGE(upload_limit);
    MERGE(vcs_timeout_ms);
    MERGE(run_max_steps);
    MERGE(run_max_tokens);
    MERGE(run_command_timeout);
    MERGE(billing_timeout_ms);
    /* The main server's only: one count per user, whichever host a stream
     * is on (SvcStreamLimit is GLOBAL_ONLY). */
    into->stream_limit = base->stream_limit;
    MERGE_PTR(model_prices);
    MERGE_PTR(ui_url);
    MERGE_PTR(vcs_ca_file);
    /* The public URL and its origin go together. */
    into->public_origin = add->public_url ? add->public_origin : base->public_origin;
    MERGE_PTR(public_url);
    MERGE_LIST(internal_allow);
    MERGE_LIST(trusted_origins);
    into->rate_classes = apr_array_copy(p, base->rate_classes);
    for (i = 0; i < add->rate_classes->nelts; i++) {
        const svc_rate_class_t *rc = &APR_ARRAY_IDX(add->rate_classes, i, svc_rate_class_t);
        svc_config_set_rate(into, p, rc->name, rc->limit, rc->period);
    }
}

#define DEFAULT(f, v) \
    do { if (svc_config_is_unset(conf->f)) { conf->f = (v); } } while (0)

void svc_config_fill(svc_config_t *conf, apr_pool_t *p)
{
    static const char *const loopback[] = { "127.0.0.1", "::1" };
    apr_ipsubnet_t *sub;
    int i;

    DEFAULT(body_limit, 1024 * 1024);
    DEFAULT(token_touch_interval, 60);
    DEFAULT(session_lifetime, 7 * 24 * 3600);
    DEFAULT(statement_timeout_ms, 10000);
    DEFAULT(invite_lifetime, 14 * 24 * 3600);
    DEFAULT(model_timeout_ms, 120 * 1000);
    DEFAULT(document_limit, 1024 * 1024);
    DEFAULT(provider_allow_private, 0);
    DEFAULT(run_timeout, 30 * 60);
    DEFAULT(upload_limit, 25 * 1024 * 1024);
    DEFAULT(vcs_timeout_ms, 10000);
    DEFAULT(stream_limit, 100);
    DEFAULT(run_max_steps, 50);
    DEFAULT(run_max_tokens, 2000000);
    DEFAULT(run_command_timeout, 120);
    DEFAULT(billing_timeout_ms, 20000);
    if (!conf->ui_url) {
        conf->ui_url = "/";
    }
    /* A list shared with the main server (merged) is filled once, there. */
    if (conf->internal_allow->nelts == 0) {
        for (i = 0; i < 2; i++) {
            if (apr_ipsubnet_create(&sub, loopback[i], NULL, p) == APR_SUCCESS) {
                APR_ARRAY_PUSH(conf->internal_allow, apr_ipsubnet_t *) = sub;
            }
        }
    }
}

void svc_config_defaults(svc_config_t *conf, apr_pool_t *p)
{
    svc_config_unset(conf, p);
    svc_config_fill(conf, p);
}

const svc_rate_class_t svc_rate_defaults[] = {
    /* Token creation: SPEC says rate-limited; 20 a minute per user. */
    { "tokens", 20, 60 },
    /* Token revocation, per token (SVC_RF_RATE_PER_TOKEN): a budget of
     * its own, so a stolen token spending "tokens" cannot block the
     * owner's revocations; sessions are not counted at all. */
    { "token_revoke", 100, 60 },
    /* Sign-in starts and callbacks, per client address: each writes a
     * row and the callback calls the provider. */
    { "signin", 60, 60 },
    /* The share portal, per client address: it needs no login, so
     * this is what stands between a token guesser and the database. */
    { "share", 300, 60 },
    /* Calls to an organization's model, per user: each costs the
     * organization money and holds a worker for up to SvcModelTimeout. */
    { "models", 60, 60 },
    /* Starting runs, per user: each one may cost model calls. */
    { "runs", 60, 60 },
    { NULL, 0, 0 }
};

void svc_config_default_rates(svc_config_t *conf, apr_pool_t *p)
{
    const svc_rate_class_t *d;
    int i, found;

    for (d = svc_rate_defaults; d->name; d++) {
        found = 0;
        for (i = 0; i < conf->rate_classes->nelts; i++) {
            found |= strcmp(APR_ARRAY_IDX(conf->rate_classes, i, svc_rate_class_t).name,
                            d->name) == 0;
        }
        if (!found) {
            svc_config_set_rate(conf, p, d->name, d->limit, d->period);
        }
    }
}

void svc_config_set_rate(svc_config_t *conf, apr_pool_t *p, const char *name,
                         int limit, int period)
{
    svc_rate_class_t *rc;
    int i;

    for (i = 0; i < conf->rate_classes->nelts; i++) {
        rc = &APR_ARRAY_IDX(conf->rate_classes, i, svc_rate_class_t);
        if (strcmp(rc->name, name) == 0) {
            rc->limit = limit;
            rc->period = period;
            return;
        }
    }
    rc = apr_array_push(conf->rate_classes);
    rc->name = apr_pstrdup(p, name);
    rc->limit = limit;
    rc->period = period;
}

const svc_rate_class_t *svc_config_rate(const svc_config_t *conf, const char *name)
{
    int i;

    for (i = 0; name && i < conf->rate_classes->nelts; i++) {
        const svc_rate_class_t *rc = &APR_ARRAY_IDX(conf->rate_classes, i, svc_rate_class_t);
        if (strcmp(rc->name, name) == 0) {
            return rc->limit > 0 ? rc : NULL;
        }
    }
    return NULL;
}

apr_status_t svc_config_load_secret(svc_config_t *conf, const char *ref, apr_pool_t *p,
                                    const char **perr)
{
    unsigned char master[crypto_kdf_KEYBYTES];
    const char *v;
    apr_size_t n;
    apr_status_t rv;

    rv = svc_secret_read(&v, &n, ref, p, perr);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (n < 32) {
        *perr = "the server secret must be at least 32 bytes (e.g. 64 hex characters)";
        return APR_EINVAL;
    }
    /* Whatever the secret's form, the master key is its hash; the sub-keys
     * are independent of each other, so one use can never forge another. */
    crypto_generichash(master, sizeof(master), (const unsigned char *)v, n, NULL, 0);
    crypto_kdf_derive_from_key(conf->pat_key, SVC_KEY_BYTES, 1, "svc_pat_", master);
    crypto_kdf_derive_from_key(conf->session_key, SVC_KEY_BYTES, 2, "svc_sess", master);
    crypto_kdf_derive_from_key(conf->box_key, SVC_KEY_BYTES, 3, "svc_box_", master);
    crypto_kdf_derive_from_key(conf->signin_key, SVC_KEY_BYTES, 4, "svc_sign", master);
    crypto_kdf_derive_from_key(conf->share_key, SVC_KEY_BYTES, 5, "svc_shr_", master);
    crypto_kdf_derive_from_key(conf->cursor_key, SVC_KEY_BYTES, 6, "svc_curs", master);
    crypto_kdf_derive_from_key(conf->agent_key, SVC_KEY_BYTES, 7, "svc_dek_", master);
    sodium_memzero(master, sizeof(master));
    sodium_memzero((void *)v, n);
    conf->have_secret = 1;
    return APR_SUCCESS;
}

int svc_config_parse_int(const char *arg, apr_int64_t min, apr_int64_t max, apr_int64_t *pv)
{
    char *end;
    apr_int64_t v;

    /* Digits only: no sign, no space, no suffix (apr_strtoi64 takes all three). */
    if (!*arg || strspn(arg, "0123456789") != strlen(arg) || strlen(arg) > 18) {
        return 0;
    }
    v = apr_strtoi64(arg, &end, 10);
    if (*end || v < min || v > max) {
        return 0;
    }
    *pv = v;
    return 1;
}

int svc_config_parse_size(const char *arg, apr_int64_t min, apr_int64_t max, apr_int64_t *pv)
{
    apr_size_t n = strspn(arg, "0123456789");
    apr_int64_t unit = 1, v = 0;
    apr_size_t i;

    if (n == 0 || n > 18) {
        return 0;
    }
    switch (arg[n]) {
    case '\0':
        break;
    case 'K': case 'k':
        unit = 1024;
        break;
    case 'M': case 'm':
        unit = 1024 * 1024;
        break;
    case 'G': case 'g':
        unit = 1024 * 1024 * 1024;
        break;
    default:
        return 0;
    }
    if (arg[n] && arg[n + 1]) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        v = v * 10 + (arg[i] - '0');
    }
    if (v > max / unit || v * unit < min) {
        return 0;
    }
    *pv = v * unit;
    return 1;
}

int svc_config_parse_price(const char *arg, double *pv)
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

const char *svc_config_origin(apr_pool_t *p, const char *url)
{
    const char *host = strstr(url, "://");
    char *origin, *c;
    apr_size_t n;

    host = host ? host + 3 : url;
    origin = apr_pstrmemdup(p, url, (apr_size_t)(host - url) + strcspn(host, "/"));
    for (c = origin; *c; c++) {
        *c = (char)apr_tolower(*c);
    }
    n = strlen(origin);
    if (strncmp(origin, "https://", 8) == 0 && n > 4 && strcmp(origin + n - 4, ":443") == 0) {
        origin[n - 4] = '\0';
    }
    else if (strncmp(origin, "http://", 7) == 0 && n > 3 && strcmp(origin + n - 3, ":80") == 0) {
        origin[n - 3] = '\0';
    }
    return origin;
}

void svc_config_share_keys(svc_config_t *to, const svc_config_t *from)
{
    memcpy(to->pat_key, from->pat_key, sizeof(to->pat_key));
    memcpy(to->session_key, from->session_key, sizeof(to->session_key));
    memcpy(to->box_key, from->box_key, sizeof(to->box_key));
    memcpy(to->signin_key, from->signin_key, sizeof(to->signin_key));
    memcpy(to->share_key, from->share_key, sizeof(to->share_key));
    memcpy(to->cursor_key, from->cursor_key, sizeof(to->cursor_key));
    memcpy(to->agent_key, from->agent_key, sizeof(to->agent_key));
    to->have_secret = from->have_secret;
}
