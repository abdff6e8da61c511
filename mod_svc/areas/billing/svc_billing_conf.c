/*
 * svc_billing_conf.c: the billing directives read and resolved
 * (svc_billing.h, svc_billing_conf.h): SvcBillingPlan's arguments, the
 * provider's keys by reference, its API URL.
 */
#include "svc_billing_conf.h"

#include <apr_lib.h>
#include <string.h>

/* A plan id: what an API client names it by. */
static int plan_id_valid(const char *s)
{
    apr_size_t n = strlen(s);

    return n >= 1 && n <= 64 && (apr_islower(s[0]) || apr_isdigit(s[0]))
        && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* A whole number of units a plan includes (0 allowed: none included). */
static int allowance(const char *v, apr_int64_t *pv)
{
    return svc_config_parse_int(v, 0, 1000000000000LL, pv);
}

apr_status_t svc_billing_plan_parse(apr_pool_t *p, int argc, char *const argv[],
                                    svc_billing_plan_t *plan, const char **perr)
{
    apr_int64_t amount;
    int i;

    memset(plan, 0, sizeof(*plan));
    plan->interval = "month";
    plan->run_minutes = plan->model_tokens = plan->deployment_hours = -1;
    if (argc < 5) {
        *perr = "SvcBillingPlan takes ID NAME PRICE_ID AMOUNT CURRENCY [key=value ...]";
        return APR_EINVAL;
    }
    if (!plan_id_valid(argv[0])) {
        *perr = "SvcBillingPlan: the ID must be 1 to 64 characters of a-z, 0-9, '_' and '-', "
                "starting with a letter or digit";
        return APR_EINVAL;
    }
    if (!*argv[1] || strlen(argv[1]) > 100 || strpbrk(argv[1], "\r\n\t")) {
        *perr = "SvcBillingPlan: the NAME must be 1 to 100 characters on one line (quote it "
                "when it has spaces)";
        return APR_EINVAL;
    }
    if (!svc_word_valid(argv[2], 255)
        || strspn(argv[2], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
           != strlen(argv[2])) {
        *perr = "SvcBillingPlan: the PRICE_ID must be the provider's price id (price_...)";
        return APR_EINVAL;
    }
    if (!svc_config_parse_int(argv[3], 0, 100000000000LL, &amount)) {
        *perr = "SvcBillingPlan: the AMOUNT is the price in the currency's smallest unit "
                "(cents), a whole number";
        return APR_EINVAL;
    }
    if (strlen(argv[4]) != 3 || !apr_isalpha(argv[4][0]) || !apr_isalpha(argv[4][1])
        || !apr_isalpha(argv[4][2])) {
        *perr = "SvcBillingPlan: the CURRENCY must be a three-letter ISO 4217 code (usd)";
        return APR_EINVAL;
    }
    plan->id = apr_pstrdup(p, argv[0]);
    plan->name = apr_pstrdup(p, argv[1]);
    plan->price_id = apr_pstrdup(p, argv[2]);
    plan->amount = amount;
    plan->currency = apr_pstrdup(p, argv[4]);
    {
        char *c;
        for (c = (char *)plan->currency; *c; c++) {
            *c = (char)apr_tolower(*c);
        }
    }
    for (i = 5; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        const char *key = eq ? apr_pstrmemdup(p, argv[i], (apr_size_t)(eq - argv[i])) : argv[i];
        const char *v = eq ? eq + 1 : "";
        int ok;

        if (strcmp(key, "run_minutes") == 0) {
            ok = allowance(v, &plan->run_minutes);
        }
        else if (strcmp(key, "model_tokens") == 0) {
            ok = allowance(v, &plan->model_tokens);
        }
        else if (strcmp(key, "deployment_hours") == 0) {
            ok = allowance(v, &plan->deployment_hours);
        }
        else if (strcmp(key, "hard") == 0) {
            ok = strcasecmp(v, "on") == 0 || strcasecmp(v, "off") == 0;
            plan->hard = strcasecmp(v, "on") == 0;
        }
        else if (strcmp(key, "interval") == 0) {
            ok = strcmp(v, "month") == 0 || strcmp(v, "year") == 0;
            plan->interval = strcmp(v, "year") == 0 ? "year" : "month";
        }
        else {
            *perr = apr_psprintf(p, "SvcBillingPlan: unknown setting %s (the settings are "
                                 "run_minutes, model_tokens, deployment_hours, hard and "
                                 "interval)", svc_printable(p, key, 64));
            return APR_EINVAL;
        }
        if (!eq || !ok) {
            *perr = apr_psprintf(p, "SvcBillingPlan: %s must be %s", key,
                                 strcmp(key, "hard") == 0 ? "hard=on or hard=off"
                                 : strcmp(key, "interval") == 0
                                   ? "interval=month or interval=year"
                                   : "a whole number (key=N)");
            return APR_EINVAL;
        }
    }
    return APR_SUCCESS;
}

/* What is missing, as the operator would look for it: the variable of an
 * env: reference ("BILLING_SECRET_KEY"), else the directive. */
static const char *missing(apr_pool_t *p, const char *ref, const char *env,
                           const char *directive)
{
    if (!ref) {
        return apr_pstrcat(p, "missing ", env, NULL);
    }
    if (strncmp(ref, "env:", 4) == 0) {
        return apr_pstrcat(p, "missing ", ref + 4, " (", directive, ")", NULL);
    }
    return apr_pstrcat(p, directive, " is empty", NULL);
}

/* Resolves one setting; an env: reference whose variable is unset gives
 * NULL (the setting is absent). */
static apr_status_t resolve(apr_pool_t *p, const char *ref, const char *env,
                            const char *directive, const char **pv, const char **perr)
{
    const char *absent = NULL;

    if (!ref) {
        ref = apr_pstrcat(p, "env:", env, NULL);
    }
    return svc_setting_resolve(pv, ref, directive, p, &absent, perr);
}

apr_status_t svc_billing_configure(svc_config_t *conf, const svc_billing_refs_t *refs,
                                   apr_pool_t *p, const char **pwebhook_off,
                                   const char **perr)
{
    svc_billing_t *b = apr_pcalloc(p, sizeof(*b));
    const char *key = NULL, *whsec = NULL, *url = NULL, *why, *norm;
    apr_status_t rv;

    *perr = NULL;
    *pwebhook_off = NULL;
    if ((refs->secret_key && !svc_secret_is_ref(refs->secret_key))
        || (refs->webhook_secret && !svc_secret_is_ref(refs->webhook_secret))) {
        *perr = "SvcBillingSecretKey and SvcBillingWebhookSecret take a reference (env:NAME, "
                "file:/path or exec:/program), never the secret itself";
        return APR_EINVAL;
    }
    if ((rv = resolve(p, refs->secret_key, "BILLING_SECRET_KEY", "SvcBillingSecretKey", &key,
                      perr)) != APR_SUCCESS
        || (rv = resolve(p, refs->webhook_secret, "BILLING_WEBHOOK_SECRET",
                         "SvcBillingWebhookSecret", &whsec, perr)) != APR_SUCCESS
        || (rv = resolve(p, refs->api_url, "BILLING_API_URL", "SvcBillingApiURL", &url, perr))
           != APR_SUCCESS) {
        return rv;
    }
    if (!url) {
        url = SVC_BILLING_API_DEFAULT;
    }
    if ((why = svc_http_check_base_url(p, url, &norm)) != NULL) {
        *perr = apr_pstrcat(p, "SvcBillingApiURL (BILLING_API_URL) ", why, NULL);
        return APR_EINVAL;
    }
    b->api_url = norm;
    b->plans = refs->plans ? refs->plans : apr_array_make(p, 1, sizeof(svc_billing_plan_t));
    conf->billing = b;
    /* Keys are passed in an Authorization header and used as an HMAC key:
     * one word of printable ASCII, as the provider issues them. */
    if (key && !svc_word_valid(key, 1024)) {
        *perr = "BILLING_SECRET_KEY (SvcBillingSecretKey) has spaces or control characters, "
                "or is longer than 1024 characters";
        return APR_EINVAL;
    }
    if (whsec && !svc_word_valid(whsec, 1024)) {
        *perr = "BILLING_WEBHOOK_SECRET (SvcBillingWebhookSecret) has spaces or control "
                "characters, or is longer than 1024 characters";
        return APR_EINVAL;
    }
    b->secret_key = key;
    conf->billing_off = key ? NULL : missing(p, refs->secret_key, "BILLING_SECRET_KEY",
                                             "SvcBillingSecretKey");
    if (whsec) {
        b->webhook_secret = whsec;
        b->webhook_secret_len = strlen(whsec);
    }
    else {
        b->webhook_off = missing(p, refs->webhook_secret, "BILLING_WEBHOOK_SECRET",
                                 "SvcBillingWebhookSecret");
        *pwebhook_off = b->webhook_off;
    }
    return APR_SUCCESS;
}

const svc_billing_t *svc_billing_of(const svc_config_t *conf)
{
    static const apr_array_header_t none = { NULL, sizeof(svc_billing_plan_t), 0, 0, NULL };
    static const svc_billing_t unconfigured = {
        NULL, NULL, 0, "billing is not configured", SVC_BILLING_API_DEFAULT, &none
    };

    return conf->billing ? conf->billing : &unconfigured;
}

/* The configured plan whose id (by_price 0) or Stripe price id (1) is key. */
static const svc_billing_plan_t *plan_where(const svc_config_t *conf, int by_price,
                                            const char *key)
{
    const apr_array_header_t *plans = svc_billing_of(conf)->plans;
    int i;

    for (i = 0; key && i < plans->nelts; i++) {
        const svc_billing_plan_t *pl = &APR_ARRAY_IDX(plans, i, svc_billing_plan_t);
        if (strcmp(by_price ? pl->price_id : pl->id, key) == 0) {
            return pl;
        }
    }
    return NULL;
}

const svc_billing_plan_t *svc_billing_plan(const svc_config_t *conf, const char *id)
{
    return plan_where(conf, 0, id);
}

const svc_billing_plan_t *svc_billing_plan_by_price(const svc_config_t *conf,
                                                    const char *price_id)
{
    return plan_where(conf, 1, price_id);
}

apr_status_t svc_billing_not_configured(svc_ctx_t *ctx)
{
    return svc_fail(ctx, 503, "billing_not_configured",
                    "Payments are not configured on this server (%s): an operator sets "
                    "BILLING_SECRET_KEY (docs/operations.md, \"Billing\"). Usage "
                    "(GET .../usage) works without it.", ctx->conf->billing_off
                    ? ctx->conf->billing_off : "billing is not configured");
}
