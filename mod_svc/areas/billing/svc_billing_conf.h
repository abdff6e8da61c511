/*
 * svc_billing_conf.h: the billing settings as resolved at start
 * (billing-private): the provider's keys and URL, and the plans.
 */
#ifndef SVC_BILLING_CONF_H
#define SVC_BILLING_CONF_H

#include "svc_billing.h"

typedef struct svc_billing_t svc_billing_t;

struct svc_billing_t {
    const char *secret_key;         /* NULL: the payment routes are off */
    const char *webhook_secret;     /* NULL: the webhook is off */
    apr_size_t webhook_secret_len;
    const char *webhook_off;        /* why the webhook is off, or NULL */
    const char *api_url;            /* no trailing slash */
    const apr_array_header_t *plans;    /* of svc_billing_plan_t; never NULL */
};

/* The settings of conf; where svc_billing_configure never ran (svcctl),
 * ones with no key, no plans and the default URL. */
const svc_billing_t *svc_billing_of(const svc_config_t *conf);

/* The plan with this id, or with this price at the provider; NULL if none. */
const svc_billing_plan_t *svc_billing_plan(const svc_config_t *conf, const char *id);
const svc_billing_plan_t *svc_billing_plan_by_price(const svc_config_t *conf,
                                                    const char *price_id);

/* The payment routes' answer while the key is missing: 503
 * billing_not_configured. */
apr_status_t svc_billing_not_configured(svc_ctx_t *ctx);

/* The provider's API when nothing else is configured. */
#define SVC_BILLING_API_DEFAULT "https://api.stripe.com"

#endif /* SVC_BILLING_CONF_H */
