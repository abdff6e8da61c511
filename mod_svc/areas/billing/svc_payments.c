/*
 * svc_payments.c: what an org's admins do at the payment provider: a
 * checkout session for a plan, a customer-portal session, the payment
 * method read and set (svc_billing_api.h).
 *
 * Every provider call is made without a pooled connection held; the
 * customer is made once per org (its Idempotency-Key is the org's, so a
 * retry, or a request at the same moment, gets the same one back) and
 * stored by itself the moment it exists, so a later failure never makes a
 * second one. Everything else is written in one transaction after the
 * provider has answered: a provider that fails leaves nothing half-written.
 */
#include "svc_billing_api.h"
#include "svc_billing_store.h"
#include "svc_stripe_client.h"

#include <apr_lib.h>
#include <string.h>

const svc_field_t svc_body_billing_checkout[] = {
    { .name = "plan", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 64,
      .description = "The plan's id (GET .../billing/plans)." },
    { .name = "success_url", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 2000,
      .description = "Where the provider sends the browser after paying: a URL on this "
        "service's public origin or SvcUIURL's." },
    { .name = "cancel_url", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 2000,
      .description = "Where it sends the browser when they go back; the same origins." },
    SVC_FIELD_END
};

const svc_field_t svc_body_billing_portal[] = {
    { .name = "return_url", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 2000,
      .description = "Where the portal's link back goes: a URL on this service's public "
        "origin or SvcUIURL's." },
    SVC_FIELD_END
};

const svc_field_t svc_body_billing_payment_method[] = {
    { .name = "payment_method", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 255,
      .description = "The provider's payment method (pm_...), made by its client-side "
        "library; it is attached to the org's customer and becomes its default." },
    SVC_FIELD_END
};

/* ------------------------------------------------------------------------ */

/* "scheme://host[:port]" of an absolute http(s) URL, as Origin headers write
 * it, or NULL when url is no such URL (user information, spaces, controls). */
static const char *url_origin(apr_pool_t *p, const char *url)
{
    const char *rest, *end, *c;

    if (strncasecmp(url, "https://", 8) == 0) {
        rest = url + 8;
    }
    else if (strncasecmp(url, "http://", 7) == 0) {
        rest = url + 7;
    }
    else {
        return NULL;
    }
    for (c = url; *c; c++) {
        if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f || *c == '\\') {
            return NULL;
        }
    }
    end = rest + strcspn(rest, "/?#");
    if (end == rest || memchr(rest, '@', (apr_size_t)(end - rest))) {
        return NULL;
    }
    return svc_config_origin(p, apr_pstrmemdup(p, url, (apr_size_t)(end - url)));
}

/*
 * A URL the provider will send the browser to must be the service's own
 * (its public origin, or the origin the client used when none is set) or
 * the UI's (SvcUIURL): anything else would make a checkout an open
 * redirect. Adds a field error otherwise.
 */
static void check_return_url(svc_ctx_t *ctx, const char *field)
{
    const char *url = svc_json_str(ctx->body, field);
    const char *origin = url ? url_origin(ctx->pool, url) : NULL;
    const char *own = ctx->conf->public_origin ? ctx->conf->public_origin : ctx->self_origin;
    const char *ui = ctx->conf->ui_url ? url_origin(ctx->pool, ctx->conf->ui_url) : NULL;

    if (origin && ((own && strcmp(origin, own) == 0) || (ui && strcmp(origin, ui) == 0))) {
        return;
    }
    svc_fail_field(ctx, field, "invalid_url",
                   "%s must be an http(s) URL on %s%s%s.", field, own ? own : "this service",
                   ui ? " or " : "", ui ? ui : "");
}

/* A customer's id from the provider's answer, or NULL. */
static const char *customer_id_of(const json_t *c)
{
    const char *id = svc_json_str(c, "id");

    return id && *id && strlen(id) <= 255
           && strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
              == strlen(id) ? id : NULL;
}

/*
 * After a 5xx the provider may or may not have made the customer, and it
 * replays that 5xx to the same key for a day: the customer the org's id
 * names is looked for (its search), and made with a key of its own only
 * when there is none. NULL in *pid when the search found none.
 */
static apr_status_t find_customer(svc_ctx_t *ctx, svc_stripe_t *s, const char **pid)
{
    const char *params[] = { "query", apr_psprintf(ctx->pool, "metadata['org_id']:'%s'",
                                                   ctx->org->id), "limit", "1", NULL };
    json_t *doc;
    apr_status_t rv;

    *pid = NULL;
    rv = svc_stripe_call(s, "GET", "/v1/customers/search", params, NULL, &doc);
    if (rv == APR_SUCCESS) {
        *pid = customer_id_of(json_array_get(json_object_get(doc, "data"), 0));
    }
    return rv;
}

/*
 * The org's customer at the provider: the stored one, or a new one
 * (POST /v1/customers, the org's id in its metadata) stored at once. Called
 * without a pooled connection held; leaves none held.
 */
static apr_status_t ensure_customer(svc_ctx_t *ctx, svc_stripe_t *s,
                                    const svc_billing_account_t *a, const char **pcustomer,
                                    int *pcreated)
{
    const char *params[] = { "metadata[org_id]", ctx->org->id, NULL };
    const char *id = NULL;
    json_t *doc;
    svc_db_t *db;
    apr_status_t rv;

    *pcreated = 0;
    if (a->customer_id) {
        *pcustomer = a->customer_id;
        return APR_SUCCESS;
    }
    /*
     * The key is the org's: a retry after a lost answer, or a checkout at
     * the same moment, gets the same customer back, and its parameters
     * never change, so the key never meets other ones.
     */
    rv = svc_stripe_call(s, "POST", "/v1/customers", params,
                         apr_pstrcat(ctx->pool, "svc-customer-", ctx->org->id, NULL), &doc);
    if (rv == APR_SUCCESS) {
        *pcreated = !s->replayed;
    }
    else if (rv == APR_EACCES && s->status >= 500) {
        svc_stripe_t first = *s;
        if (find_customer(ctx, s, &id) != APR_SUCCESS) {
            /* The search failing too says nothing new: the first failure is
             * the one to report. */
            *s = first;
        }
        else if (!id) {
            rv = svc_stripe_call(s, "POST", "/v1/customers", params,
                                 apr_pstrcat(ctx->pool, "svc-customer-", ctx->org->id, "-",
                                             svc_random_base62(ctx->pool, 16), NULL), &doc);
            *pcreated = rv == APR_SUCCESS;
        }
        else {
            rv = APR_SUCCESS;
        }
    }
    if (rv != APR_SUCCESS) {
        return svc_stripe_fail(ctx, s, rv, "create the organization's customer");
    }
    if (!id && !(id = customer_id_of(doc))) {
        s->why = "POST /v1/customers answered without a usable id";
        return svc_stripe_fail(ctx, s, APR_EINVAL, "create the organization's customer");
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_billing_customer_store(db, ctx->pool, ctx->org->id, id, pcustomer))
           != APR_SUCCESS) {
        return rv;
    }
    /* Another request stored one first: that one is the org's. */
    *pcreated = *pcreated && strcmp(*pcustomer, id) == 0;
    return svc_ctx_db_release(ctx);
}

/* The account, read, then the connection given back for the provider. */
static apr_status_t read_account(svc_ctx_t *ctx, svc_billing_account_t *a)
{
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_billing_account_get(db, ctx->pool, ctx->org->id, a)) != APR_SUCCESS) {
        return rv;
    }
    return svc_ctx_db_release(ctx);
}

/* An admin's action at the provider, done: its audit entry and the answer. */
typedef struct {
    const char *action;
    json_t *data;               /* the audit entry's details */
    int status;
    json_t *reply;
} audited_t;

static apr_status_t write_audited(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    audited_t *w = baton;
    apr_status_t rv;

    /* Still an admin now that the provider has answered. */
    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_ADMIN, SVC_PROLE_NONE)) != APR_SUCCESS) {
        return rv;
    }
    if ((rv = svc_audit_ctx(ctx, db, w->action, "org",
                            ctx->org->id, w->data)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_json(ctx, w->status, json_incref(w->reply));
}

/* Writes the audit entry of what was done at the provider with the answer
 * (svc_write). `data` and `reply` are taken. */
static apr_status_t answer_audited(svc_ctx_t *ctx, const char *action, json_t *data,
                                   int status, json_t *reply)
{
    audited_t w;

    w.action = action;
    w.data = svc_json_pool(ctx->pool, data);
    w.status = status;
    w.reply = svc_json_pool(ctx->pool, reply);
    if (!w.data || !w.reply) {
        return APR_ENOMEM;
    }
    return svc_write(ctx, write_audited, &w);
}

/* The provider's key of a POST a client may send again with its own
 * Idempotency-Key: the same client key gives the same provider key (and
 * so the same session back); without one, a fresh key. */
static apr_status_t idem_key(svc_ctx_t *ctx, const char *what, const char **pkey)
{
    const char *key;
    unsigned char digest[32];
    apr_status_t rv;

    if ((rv = svc_idem_key(ctx, &key)) != APR_SUCCESS) {
        return rv;
    }
    if (!key) {
        *pkey = apr_pstrcat(ctx->pool, "svc-", what, "-", svc_random_base62(ctx->pool, 22),
                            NULL);
        return APR_SUCCESS;
    }
    /* Keyed by org and caller, so two orgs' (or two admins') keys never
     * meet at the provider. */
    key = apr_pstrcat(ctx->pool, ctx->org->id, "\n", ctx->who->user_id, "\n", key, NULL);
    svc_sha256(digest, (const unsigned char *)key, strlen(key));
    *pkey = apr_pstrcat(ctx->pool, "svc-", what, "-", svc_hex(ctx->pool, digest, 16), NULL);
    return APR_SUCCESS;
}

/* A session's URL and id from the provider's answer, or a 502. */
static apr_status_t session_of(svc_ctx_t *ctx, svc_stripe_t *s, const json_t *doc,
                               const char *what, const char **purl, const char **pid)
{
    *purl = svc_json_str(doc, "url");
    *pid = svc_json_str(doc, "id");
    if (!*purl || strncmp(*purl, "https://", 8) != 0 || strlen(*purl) > 4000 || !*pid
        || !svc_word_valid(*pid, 255)) {
        s->why = apr_pstrcat(ctx->pool, what, ": the answer has no usable url or id", NULL);
        return svc_stripe_fail(ctx, s, APR_EINVAL, what);
    }
    *purl = svc_printable(ctx->pool, *purl, 4000);
    return APR_SUCCESS;
}

/* ------------------------------------------------------------------------ */

apr_status_t svc_h_billing_checkout(svc_ctx_t *ctx)
{
    const char *plan_id = svc_json_str(ctx->body, "plan");
    const svc_billing_plan_t *plan = svc_billing_plan(ctx->conf, plan_id);
    const char *customer, *key, *url, *id;
    svc_billing_account_t a;
    svc_stripe_t s;
    json_t *doc;
    int created;
    apr_status_t rv;

    if (ctx->conf->billing_off) {
        return svc_billing_not_configured(ctx);
    }
    if (!plan) {
        svc_fail_field(ctx, "plan", "invalid_value", "There is no plan %s (GET "
                       ".../billing/plans lists them).", svc_printable(ctx->pool, plan_id, 64));
    }
    check_return_url(ctx, "success_url");
    check_return_url(ctx, "cancel_url");
    if (ctx->problem) {
        return SVC_EPROBLEM;
    }
    if ((rv = idem_key(ctx, "checkout", &key)) != APR_SUCCESS
        || (rv = read_account(ctx, &a)) != APR_SUCCESS) {
        return rv;
    }
    /* A second subscription would bill the org twice: plans change in the
     * portal. */
    if (a.subscription_id && (strcmp(a.status, "active") == 0
                              || strcmp(a.status, "past_due") == 0)) {
        return svc_fail(ctx, 409, "already_subscribed", "The organization has a subscription "
                        "(%s, %s); change its plan or cancel it in the customer portal (POST "
                        ".../billing/portal).", a.plan_id ? a.plan_id : "an unknown plan",
                        a.status);
    }
    svc_stripe_init(&s, ctx->pool, ctx->conf);
    if ((rv = ensure_customer(ctx, &s, &a, &customer, &created)) != APR_SUCCESS) {
        return rv;
    }
    {
        const char *params[] = {
            "mode", "subscription",
            "customer", customer,
            "client_reference_id", ctx->org->id,
            "line_items[0][price]", plan->price_id,
            "line_items[0][quantity]", "1",
            "success_url", svc_json_str(ctx->body, "success_url"),
            "cancel_url", svc_json_str(ctx->body, "cancel_url"),
            "metadata[org_id]", ctx->org->id,
            "metadata[plan]", plan->id,
            "subscription_data[metadata][org_id]", ctx->org->id,
            "subscription_data[metadata][plan]", plan->id,
            NULL
        };
        rv = svc_stripe_call(&s, "POST", "/v1/checkout/sessions", params, key, &doc);
    }
    if (rv == APR_EACCES && strcmp(s.type, "idempotency_error") == 0) {
        return svc_fail(ctx, 409, "idempotency_conflict", "The Idempotency-Key was used in "
                        "the last 24 hours for a different checkout (another plan or URLs).");
    }
    if (rv != APR_SUCCESS) {
        return svc_stripe_fail(ctx, &s, rv, "create a checkout session");
    }
    if ((rv = session_of(ctx, &s, doc, "create a checkout session", &url, &id))
        != APR_SUCCESS) {
        return rv;
    }
    if (s.replayed) {
        /* The same checkout again: audited when it was made. */
        apr_table_setn(ctx->headers_out, "Idempotent-Replayed", "true");
    }
    else {
        return answer_audited(ctx, "billing.checkout.created",
                              json_pack("{s:s,s:s,s:s,s:b}", "plan", plan->id, "session_id",
                                        id, "customer_id", customer, "customer_created",
                                        created),
                              201, json_pack("{s:s,s:s}", "url", url, "id", id));
    }
    /* A replay answers 200, as every idempotent creation's does
     * (svc_idempotency.h): nothing new was made. */
    return svc_reply_json(ctx, 200, json_pack("{s:s,s:s}", "url", url, "id", id));
}

apr_status_t svc_h_billing_portal(svc_ctx_t *ctx)
{
    const char *customer, *url, *id;
    svc_billing_account_t a;
    svc_stripe_t s;
    json_t *doc;
    int created;
    apr_status_t rv;

    if (ctx->conf->billing_off) {
        return svc_billing_not_configured(ctx);
    }
    check_return_url(ctx, "return_url");
    if (ctx->problem) {
        return SVC_EPROBLEM;
    }
    if ((rv = read_account(ctx, &a)) != APR_SUCCESS) {
        return rv;
    }
    svc_stripe_init(&s, ctx->pool, ctx->conf);
    if ((rv = ensure_customer(ctx, &s, &a, &customer, &created)) != APR_SUCCESS) {
        return rv;
    }
    {
        const char *params[] = { "customer", customer,
                                 "return_url", svc_json_str(ctx->body, "return_url"), NULL };
        rv = svc_stripe_call(&s, "POST", "/v1/billing_portal/sessions", params,
                             apr_pstrcat(ctx->pool, "svc-portal-",
                                         svc_random_base62(ctx->pool, 22), NULL), &doc);
    }
    if (rv != APR_SUCCESS) {
        return svc_stripe_fail(ctx, &s, rv, "create a customer-portal session");
    }
    if ((rv = session_of(ctx, &s, doc, "create a customer-portal session", &url, &id))
        != APR_SUCCESS) {
        return rv;
    }
    return answer_audited(ctx, "billing.portal.opened",
                          json_pack("{s:s,s:s,s:b}", "session_id", id, "customer_id",
                                    customer, "customer_created", created),
                          201, json_pack("{s:s}", "url", url));
}

/* {"brand", "last4", "exp_month", "exp_year"} of a card payment method
 * object; NULL when it is none. */
static json_t *card_of(apr_pool_t *p, const json_t *pm)
{
    const json_t *card = json_object_get(pm, "card");
    const char *brand = svc_json_str(card, "brand"), *last4 = svc_json_str(card, "last4");
    const json_t *m = json_object_get(card, "exp_month"), *y = json_object_get(card, "exp_year");

    if (!json_is_object(card) || !brand || !last4 || !json_is_integer(m)
        || !json_is_integer(y)) {
        return NULL;
    }
    return json_pack("{s:s,s:s,s:I,s:I}", "brand", svc_printable(p, brand, 32),
                     "last4", svc_printable(p, last4, 4), "exp_month", json_integer_value(m),
                     "exp_year", json_integer_value(y));
}

apr_status_t svc_h_billing_payment_method_get(svc_ctx_t *ctx)
{
    const char *params[] = { "expand[]", "invoice_settings.default_payment_method", NULL };
    svc_billing_account_t a;
    svc_stripe_t s;
    json_t *doc, *pm, *card;
    apr_status_t rv;

    if (ctx->conf->billing_off) {
        return svc_billing_not_configured(ctx);
    }
    if ((rv = read_account(ctx, &a)) != APR_SUCCESS) {
        return rv;
    }
    if (!a.customer_id) {
        return svc_reply_text(ctx, 200, "null");
    }
    svc_stripe_init(&s, ctx->pool, ctx->conf);
    rv = svc_stripe_call(&s, "GET", apr_pstrcat(ctx->pool, "/v1/customers/",
                                                svc_url_encode(ctx->pool, a.customer_id), NULL),
                         params, NULL, &doc);
    if (rv != APR_SUCCESS) {
        return svc_stripe_fail(ctx, &s, rv, "read the organization's customer");
    }
    pm = json_object_get(json_object_get(doc, "invoice_settings"), "default_payment_method");
    card = json_is_object(pm) ? card_of(ctx->pool, pm) : NULL;
    return card ? svc_reply_json(ctx, 200, card) : svc_reply_text(ctx, 200, "null");
}

apr_status_t svc_h_billing_payment_method_put(svc_ctx_t *ctx)
{
    const char *pm_id = svc_json_str(ctx->body, "payment_method");
    const char *customer, *enc;
    svc_billing_account_t a;
    svc_stripe_t s;
    json_t *pm, *doc, *card;
    int created;
    apr_status_t rv;

    if (ctx->conf->billing_off) {
        return svc_billing_not_configured(ctx);
    }
    if (strspn(pm_id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
        != strlen(pm_id)) {
        svc_fail_field(ctx, "payment_method", "invalid_value", "payment_method must be the "
                       "provider's id of a payment method (pm_...).");
        return SVC_EPROBLEM;
    }
    if ((rv = read_account(ctx, &a)) != APR_SUCCESS) {
        return rv;
    }
    svc_stripe_init(&s, ctx->pool, ctx->conf);
    if ((rv = ensure_customer(ctx, &s, &a, &customer, &created)) != APR_SUCCESS) {
        return rv;
    }
    enc = svc_url_encode(ctx->pool, pm_id);
    {
        const char *params[] = { "customer", customer, NULL };
        rv = svc_stripe_call(&s, "POST", apr_pstrcat(ctx->pool, "/v1/payment_methods/", enc,
                                                     "/attach", NULL),
                             params, apr_pstrcat(ctx->pool, "svc-pm-attach-",
                                                 svc_random_base62(ctx->pool, 22), NULL), &pm);
    }
    /* The provider refusing the card itself (declined, unknown, another
     * customer's) is about what the client sent: a 400 with its words. */
    if (rv == APR_EACCES && s.status >= 400 && s.status < 500 && s.status != 401
        && s.status != 403 && s.status != 429
        && (strcmp(s.type, "card_error") == 0 || strcmp(s.type, "invalid_request_error") == 0)) {
        svc_fail_field(ctx, "payment_method", s.code && *s.code ? s.code : "rejected",
                       "The payment provider refused the payment method: %s%s%s%s",
                       *s.message ? s.message : "it gave no reason",
                       *s.request_id ? " (request " : "", s.request_id,
                       *s.request_id ? ")" : "");
        return SVC_EPROBLEM;
    }
    if (rv != APR_SUCCESS) {
        return svc_stripe_fail(ctx, &s, rv, "attach the payment method");
    }
    if (!(card = card_of(ctx->pool, pm))) {
        svc_fail_field(ctx, "payment_method", "not_a_card", "The payment method is not a "
                       "card; only cards are accepted.");
        return SVC_EPROBLEM;
    }
    svc_json_pool(ctx->pool, card);
    /* What was attached: a test token (pm_card_visa) is made into a payment
     * method of its own, whose id is the one to use from now on. */
    if (!svc_json_str(pm, "id") || !svc_word_valid(svc_json_str(pm, "id"), 255)) {
        s.why = "POST /v1/payment_methods/.../attach answered without a usable id";
        return svc_stripe_fail(ctx, &s, APR_EINVAL, "attach the payment method");
    }
    pm_id = svc_json_str(pm, "id");
    {
        const char *params[] = { "invoice_settings[default_payment_method]", pm_id, NULL };
        rv = svc_stripe_call(&s, "POST", apr_pstrcat(ctx->pool, "/v1/customers/",
                                                     svc_url_encode(ctx->pool, customer), NULL),
                             params, apr_pstrcat(ctx->pool, "svc-pm-default-",
                                                 svc_random_base62(ctx->pool, 22), NULL), &doc);
    }
    if (rv != APR_SUCCESS) {
        return svc_stripe_fail(ctx, &s, rv, "make the payment method the customer's default");
    }
    /* A subscription made by a checkout pays with the card given there,
     * which wins over the customer's default: it follows the new one. */
    if (a.subscription_id && strcmp(a.status, "canceled") != 0) {
        const char *params[] = { "default_payment_method", pm_id, NULL };
        rv = svc_stripe_call(&s, "POST", apr_pstrcat(ctx->pool, "/v1/subscriptions/",
                                                     svc_url_encode(ctx->pool,
                                                                    a.subscription_id), NULL),
                             params, apr_pstrcat(ctx->pool, "svc-pm-sub-",
                                                 svc_random_base62(ctx->pool, 22), NULL), &doc);
        if (rv != APR_SUCCESS) {
            return svc_stripe_fail(ctx, &s, rv, "make the payment method the subscription's");
        }
    }
    return answer_audited(ctx, "billing.payment_method.set",
                          json_pack("{s:O,s:O,s:b}", "brand", json_object_get(card, "brand"),
                                    "last4", json_object_get(card, "last4"), "customer_created",
                                    created),
                          200, json_incref(card));
}
