/*
 * svc_stripe_client.h: the payment provider's API, as Stripe speaks it
 * (billing-private).
 *
 * Every call goes through base's one HTTP client: the secret key as
 * `Authorization: Bearer`, the API version pinned (Stripe-Version), the
 * parameters form-encoded with bracketed keys (metadata[org_id],
 * line_items[0][price]), an Idempotency-Key on every POST, SvcBillingTimeout
 * per call, the key redacted from every trace. Nothing here touches the
 * database: callers give their pooled connection back before calling.
 */
#ifndef SVC_STRIPE_CLIENT_H
#define SVC_STRIPE_CLIENT_H

#include "svc_billing_conf.h"

/* The API version every call asks for (docs/api/billing.md says why). */
#define SVC_STRIPE_VERSION "2025-03-31.basil"

/* One call's outcome beyond its document. */
typedef struct {
    apr_pool_t *p;
    const svc_config_t *conf;
    int status;                 /* the provider's HTTP status; 0 when none came */
    const char *request_id;     /* its Request-Id header, or "" */
    /* Its error object (type, code, message: printable, redacted), or "". */
    const char *type;
    const char *code;
    const char *message;
    int replayed;               /* Idempotent-Replayed: true */
    const char *why;            /* what failed, for the operator's log; no secrets */
} svc_stripe_t;

void svc_stripe_init(svc_stripe_t *s, apr_pool_t *p, const svc_config_t *conf);

/*
 * One call: `path` under SvcBillingApiURL ("/v1/customers"); `params` NULL
 * or pairs of key and value ended by NULL, sent as the query of a GET and
 * as the form body of a POST; `idem_key` the Idempotency-Key of a POST (a
 * POST without one is refused: APR_EINVAL). APR_SUCCESS on a 2xx answer
 * that is a JSON object (*pdoc, bound to p; pdoc may be NULL); APR_EACCES
 * when the provider refused (s->status, s->type, s->code, s->message,
 * s->request_id say how); APR_EINVAL for an answer that is not the API's;
 * SVC_HTTP_E* when it could not be asked (SVC_HTTP_ETIMEOUT: no answer
 * within SvcBillingTimeout).
 */
apr_status_t svc_stripe_call(svc_stripe_t *s, const char *method, const char *path,
                             const char *const *params, const char *idem_key, json_t **pdoc);

/* The form encoding of params (pairs, NULL-ended), as sent: each key and
 * value percent-encoded (RFC 3986 unreserved characters stay). */
const char *svc_stripe_form(apr_pool_t *p, const char *const *params);

/*
 * The request's answer to a failed call: 502 payment_provider_error with
 * the provider's message and request id (never its key), or that it could
 * not be reached or did not answer in time; the operator's log gets `what`
 * and s->why. Returns SVC_EPROBLEM.
 */
apr_status_t svc_stripe_fail(svc_ctx_t *ctx, const svc_stripe_t *s, apr_status_t rv,
                             const char *what);

#endif /* SVC_STRIPE_CLIENT_H */
