/*
 * svc_stripe_client.c: the payment provider's API (svc_stripe_client.h).
 */
#include "svc_stripe_client.h"

#include <string.h>

/* Largest answer read: a customer or a session is a few KB; an invoice
 * preview with many lines some hundreds. */
#define STRIPE_MAX_RESPONSE (1024 * 1024)

/* Connecting may take this long at most (of SvcBillingTimeout). */
#define STRIPE_CONNECT_MS 5000

void svc_stripe_init(svc_stripe_t *s, apr_pool_t *p, const svc_config_t *conf)
{
    memset(s, 0, sizeof(*s));
    s->p = p;
    s->conf = conf;
    s->request_id = "";
    s->type = s->code = s->message = "";
    s->why = "";
}

const char *svc_stripe_form(apr_pool_t *p, const char *const *params)
{
    svc_jbuf_t b;
    int i;

    svc_jbuf_init(&b, p, 256);
    for (i = 0; params && params[i] && params[i + 1]; i += 2) {
        const char *k = svc_url_encode(p, params[i]), *v = svc_url_encode(p, params[i + 1]);
        if (i) {
            svc_jbuf_raw(&b, "&", 1);
        }
        svc_jbuf_raw(&b, k, strlen(k));
        svc_jbuf_raw(&b, "=", 1);
        svc_jbuf_raw(&b, v, strlen(v));
    }
    return svc_jbuf_text(&b, NULL);
}

/* Text the provider sent, fit for a client and a log line: printable, cut,
 * without our key (should it ever be echoed) or anything shaped like a
 * secret. */
static const char *clean(const svc_stripe_t *s, const char *text, apr_size_t max)
{
    const char *key = svc_billing_of(s->conf)->secret_key;
    const char *out = svc_printable(s->p, text ? text : "", max);
    const char *at;

    while (key && *key && (at = strstr(out, key)) != NULL) {
        out = apr_pstrcat(s->p, apr_pstrmemdup(s->p, out, (apr_size_t)(at - out)),
                          "[REDACTED]", at + strlen(key), NULL);
    }
    return svc_redact(s->p, out);
}

/* The provider's request id as sent (req_...), or "" when there is none
 * or it is not one word. */
static const char *request_id_of(svc_stripe_t *s, const svc_http_resp_t *resp)
{
    const char *id = resp->headers ? apr_table_get(resp->headers, "Request-Id") : NULL;

    return id && svc_word_valid(id, 128) ? clean(s, id, 128) : "";
}

apr_status_t svc_stripe_call(svc_stripe_t *s, const char *method, const char *path,
                             const char *const *params, const char *idem_key, json_t **pdoc)
{
    const svc_billing_t *b = svc_billing_of(s->conf);
    const char *what = apr_pstrcat(s->p, method, " ", path, NULL);
    const char **secrets = apr_pcalloc(s->p, 2 * sizeof(*secrets));
    const char *form = svc_stripe_form(s->p, params);
    int post = strcmp(method, "GET") != 0;
    svc_http_req_t req;
    svc_http_resp_t *resp;
    json_error_t jerr;
    json_t *doc, *err;
    apr_status_t rv;

    s->status = 0;
    s->request_id = "";
    s->type = s->code = s->message = "";
    s->replayed = 0;
    if (pdoc) {
        *pdoc = NULL;
    }
    if (!b->secret_key) {
        s->why = apr_pstrcat(s->p, what, ": no secret key", NULL);
        return APR_EINVAL;
    }
    /* A POST the provider may see twice (a retry after a lost answer) must
     * be recognised as the same one. */
    if (post && !idem_key) {
        s->why = apr_pstrcat(s->p, what, ": no Idempotency-Key", NULL);
        return APR_EINVAL;
    }
    memset(&req, 0, sizeof(req));
    req.method = method;
    req.url = apr_pstrcat(s->p, b->api_url, path, !post && *form ? "?" : "",
                          !post ? form : "", NULL);
    req.headers = apr_table_make(s->p, 6);
    apr_table_setn(req.headers, "Authorization",
                   apr_pstrcat(s->p, "Bearer ", b->secret_key, NULL));
    apr_table_setn(req.headers, "Stripe-Version", SVC_STRIPE_VERSION);
    apr_table_setn(req.headers, "Accept", "application/json");
    if (post) {
        apr_table_setn(req.headers, "Content-Type", "application/x-www-form-urlencoded");
        apr_table_setn(req.headers, "Idempotency-Key", idem_key);
        req.body = form;
        req.body_len = strlen(form);
    }
    secrets[0] = b->secret_key;
    req.secrets = secrets;
    req.timeout_ms = s->conf->billing_timeout_ms;
    req.connect_timeout_ms = STRIPE_CONNECT_MS < req.timeout_ms ? STRIPE_CONNECT_MS
                             : req.timeout_ms;
    req.max_response = STRIPE_MAX_RESPONSE;
    rv = svc_http_do(s->p, &req, &resp);
    if (rv != APR_SUCCESS) {
        s->why = apr_pstrcat(s->p, what, ": ", resp->error, NULL);
        return rv;
    }
    s->status = resp->status;
    s->request_id = request_id_of(s, resp);
    s->replayed = resp->headers
                  && strcmp(apr_table_get(resp->headers, "Idempotent-Replayed")
                            ? apr_table_get(resp->headers, "Idempotent-Replayed") : "",
                            "true") == 0;
    doc = svc_json_pool(s->p, json_loadb(resp->body, resp->body_len, JSON_REJECT_DUPLICATES,
                                         &jerr));
    if (resp->status < 200 || resp->status > 299) {
        /* {"error": {"type", "code", "message", ...}}, as the provider
         * answers every refusal. */
        err = json_object_get(doc, "error");
        if (json_is_object(err)) {
            s->type = clean(s, svc_json_str(err, "type"), 64);
            s->code = clean(s, svc_json_str(err, "code"), 64);
            s->message = clean(s, svc_json_str(err, "message"), 500);
        }
        s->why = apr_psprintf(s->p, "%s answered HTTP %d%s%s%s%s%s%s", what, resp->status,
                              *s->type ? " " : "", s->type, *s->code ? "/" : "", s->code,
                              *s->message ? ": " : "", s->message);
        if (*s->request_id) {
            s->why = apr_pstrcat(s->p, s->why, " (request ", s->request_id, ")", NULL);
        }
        return APR_EACCES;
    }
    if (!json_is_object(doc)) {
        s->why = apr_psprintf(s->p, "%s answered HTTP %d with something that is not a JSON "
                              "object", what, resp->status);
        return APR_EINVAL;
    }
    if (pdoc) {
        *pdoc = doc;
    }
    return APR_SUCCESS;
}

apr_status_t svc_stripe_fail(svc_ctx_t *ctx, const svc_stripe_t *s, apr_status_t rv,
                             const char *what)
{
    const char *rid = *s->request_id ? apr_pstrcat(ctx->pool, " (request ", s->request_id,
                                                   ")", NULL) : "";

    if (rv == APR_EACCES) {
        svc_fail(ctx, 502, "payment_provider_error",
                 "The payment provider refused to %s (HTTP %d%s%s): %s%s", what, s->status,
                 *s->code ? ", " : "", s->code,
                 *s->message ? s->message : "it gave no reason", rid);
    }
    else if (rv == SVC_HTTP_ETIMEOUT) {
        svc_fail(ctx, 502, "payment_provider_error",
                 "The payment provider did not answer within %d seconds when asked to %s; "
                 "try again.", ctx->conf->billing_timeout_ms / 1000,
                 what);
    }
    else if (rv == APR_EINVAL && s->status) {
        svc_fail(ctx, 502, "payment_provider_error",
                 "The payment provider's answer when asked to %s could not be used%s.", what, rid);
    }
    else {
        svc_fail(ctx, 502, "payment_provider_error",
                 "The payment provider could not be reached to %s; try again later.", what);
    }
    ctx->problem->log_detail = apr_pstrcat(ctx->pool, "billing: ", s->why, NULL);
    return SVC_EPROBLEM;
}
