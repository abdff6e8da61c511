/*
 * svc_config.c: defaults, rate classes, and secrets given by reference.
 */
#include "svc_config.h"
#include "svc_crypto.h"
#include "svc_secret.h"

#include <sodium.h>
#include <string.h>

void svc_config_defaults(svc_config_t *conf, apr_pool_t *p)
{
    memset(conf, 0, sizeof(*conf));
    conf->body_limit = 1024 * 1024;
    conf->token_touch_interval = 60;
    conf->session_lifetime = 7 * 24 * 3600;
    conf->statement_timeout_ms = 10000;
    conf->invite_lifetime = 14 * 24 * 3600;
    conf->model_timeout_ms = 120 * 1000;
    conf->document_limit = 1024 * 1024;
    conf->upload_limit = 25 * 1024 * 1024;
    conf->run_timeout = 30 * 60;
    conf->stream_limit = 100;
    conf->rate_classes = apr_array_make(p, 4, sizeof(svc_rate_class_t));
    conf->internal_allow = apr_array_make(p, 2, sizeof(apr_ipsubnet_t *));
    conf->trusted_origins = apr_array_make(p, 2, sizeof(const char *));
    conf->signin_off = "SvcOAuthClientId and SvcOAuthClientSecret are not set";
    conf->vcs_web_url = "https://github.com";
    conf->vcs_api_url = "https://api.github.com";
    conf->ui_url = "/";
    conf->vcs_timeout_ms = 10000;
    conf->vcs_connect_timeout_ms = 3000;
    conf->vcs_app_off = "the code-hosting App is not configured";
}

void svc_config_default_rates(svc_config_t *conf, apr_pool_t *p)
{
    static const svc_rate_class_t defaults[] = {
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
    const svc_rate_class_t *d;
    int i, found;

    for (d = defaults; d->name; d++) {
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
    sodium_memzero(master, sizeof(master));
    sodium_memzero((void *)v, n);
    conf->have_secret = 1;
    return APR_SUCCESS;
}
