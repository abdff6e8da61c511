/*
 * svc_billing_api.h: the billing area's handlers and body schemas
 * (billing-private): plans, the org's billing and usage
 * (svc_billing_api.c), checkout, portal and payment method
 * (svc_payments.c), the budget (svc_budget.c), the provider's webhook and
 * the operators' view of it (svc_billing_webhook.c).
 */
#ifndef SVC_BILLING_API_H
#define SVC_BILLING_API_H

#include "svc_billing_conf.h"

/* Largest webhook body accepted (the provider's events are a few KB). */
#define SVC_BILLING_WEBHOOK_LIMIT (1024 * 1024)

/* How far a signature's timestamp may be from the server's clock. */
#define SVC_BILLING_TOLERANCE_S 300

/* The routes' request bodies and query parameters. */
extern const svc_field_t svc_body_billing_checkout[], svc_body_billing_portal[],
                         svc_body_billing_payment_method[], svc_body_billing_budget[];
extern const svc_qparam_t svc_q_billing_usage[];

/* Route handlers. */
svc_handler_t svc_h_billing_plans, svc_h_billing_get, svc_h_billing_usage, svc_h_billing_checkout,
              svc_h_billing_portal, svc_h_billing_payment_method_get,
              svc_h_billing_payment_method_put, svc_h_billing_budget_get, svc_h_billing_budget_put,
              svc_h_billing_webhook, svc_h_billing_events_list, svc_h_billing_event_get,
              svc_h_billing_event_redeliver;

/* A recorded event as the operators' list shows it (the BillingEvent schema). */
extern const svc_col_t svc_billing_event_keys[];

/*
 * Checks a Stripe-Signature header (t=TIMESTAMP,v1=HEX[,v1=HEX...]) over the
 * exact body: some v1 must be the hex HMAC-SHA256 of "TIMESTAMP.body" under
 * the secret (each compared in constant time), and the timestamp within
 * `tolerance` seconds of `now`. NULL when it holds; else why not, with
 * *pexpired set when only the timestamp is out of range.
 */
const char *svc_billing_signature_check(apr_pool_t *p, const char *secret,
                                        apr_size_t secret_len, const char *header,
                                        const char *body, apr_size_t len, apr_int64_t now,
                                        int tolerance, int *pexpired);

#endif /* SVC_BILLING_API_H */
