/*
 * svc_billing_webhook.c: the payment provider's webhook (POST
 * /webhooks/billing) and the operators' list of what it delivered
 * (svc_billing_api.h).
 *
 * As the code-hosting deliveries are (docs/api/vcs.md): the signature is
 * checked over the exact bytes received before anything is parsed; each
 * event is recorded once under its id with its effect in the same
 * transaction, so a redelivery changes nothing and a delivery whose
 * processing failed leaves no trace (the provider retries it).
 */
#include "svc_billing_api.h"
#include "svc_billing_store.h"

#include <apr_lib.h>
#include <string.h>

static const svc_stmt_t st_event_record = {
    "svc_billing_event_record",
    "INSERT INTO billing_webhook_events (event_id, type, org_id, livemode, created, payload)"
    " VALUES ($1, $2, $3, $4::boolean, to_timestamp($5::bigint), $6::jsonb)"
    " ON CONFLICT (event_id) DO NOTHING RETURNING seq",
    6, 0
};

/* The org an event is about: by the customer stored for it, else by the
 * org id the service put in the metadata (a customer it made and stored
 * itself, so this is for an org that somehow lost the link). */
static const svc_stmt_t st_org_of = {
    "svc_billing_org_of",
    "SELECT coalesce((SELECT org_id FROM billing_accounts WHERE customer_id = $1),"
    "                (SELECT o.id FROM orgs o WHERE o.id = $2"
    "                 AND NOT EXISTS (SELECT 1 FROM billing_accounts a WHERE a.org_id = o.id"
    "                                 AND a.customer_id IS NOT NULL AND a.customer_id <> $1)))",
    2, 0
};

static const svc_stmt_t st_org_exists = {
    "svc_billing_org_exists",
    "SELECT id FROM orgs WHERE id = $1",
    1, 0
};

/* The org's account, locked for the change (made if it has none). */
static const svc_stmt_t st_account_lock = {
    "svc_billing_account_lock",
    "WITH ins AS (INSERT INTO billing_accounts (org_id) VALUES ($1)"
    "             ON CONFLICT (org_id) DO NOTHING)"
    " SELECT 1",
    1, 0
};

static const svc_stmt_t st_account_row = {
    "svc_billing_account_row",
    "SELECT customer_id, subscription_id, status, plan_id,"
    " (subscription_event_at IS NULL OR subscription_event_at <= to_timestamp($2::bigint))"
    " FROM billing_accounts WHERE org_id = $1 FOR UPDATE",
    2, 0
};

static const svc_stmt_t st_link = {
    "svc_billing_link",
    "UPDATE billing_accounts SET customer_id = coalesce(customer_id, $2),"
    " subscription_id = coalesce($3, subscription_id), next_invoice_at = NULL,"
    " updated_at = now()"
    " WHERE org_id = $1 AND (customer_id IS NULL OR customer_id = $2)"
    " AND NOT EXISTS (SELECT 1 FROM billing_accounts o WHERE o.customer_id = $2"
    "                 AND o.org_id <> $1)"
    " RETURNING status, plan_id, svc_ts(current_period_end)",
    3, 0
};

static const svc_stmt_t st_subscription = {
    "svc_billing_subscription",
    "UPDATE billing_accounts SET customer_id = coalesce(customer_id, $2),"
    " subscription_id = $3, plan_id = $4, price_id = $5, status = $6, provider_status = $7,"
    " current_period_start = to_timestamp($8::bigint),"
    " current_period_end = to_timestamp($9::bigint),"
    " subscription_event_at = to_timestamp($10::bigint), next_invoice_at = NULL,"
    " updated_at = now()"
    " WHERE org_id = $1"
    " RETURNING status, plan_id, svc_ts(current_period_end)",
    10, 0
};

static const svc_stmt_t st_invoice_status = {
    "svc_billing_invoice_status",
    "UPDATE billing_accounts SET status = CASE WHEN $2 = 'past_due' THEN 'past_due'"
    "   WHEN status = 'past_due' THEN 'active' ELSE status END,"
    " next_invoice_at = NULL, updated_at = now()"
    " WHERE org_id = $1"
    " RETURNING status, plan_id, svc_ts(current_period_end)",
    2, 0
};

static const svc_col_t event_item[] = {
    SVC_COL("event_id", SVC_COL_TEXT),
    SVC_COL("type", SVC_COL_TEXT),
    SVC_COL("org_id", SVC_COL_TEXT),
    SVC_COL("livemode", SVC_COL_BOOL),
    SVC_COL("created", SVC_COL_TIME),
    SVC_COL("received_at", SVC_COL_TIME),
    SVC_COL_END
};

static const svc_stmt_t st_event_list = {
    "svc_billing_event_list",
    "SELECT seq, event_id, type, org_id, livemode, created, received_at"
    " FROM billing_webhook_events WHERE seq < $1::bigint ORDER BY seq DESC LIMIT $2::int",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_event_get = {
    "svc_billing_event_get",
    "SELECT json_build_object('event_id', event_id, 'type', type, 'org_id', org_id,"
    " 'livemode', livemode, 'created', svc_ts(created), 'received_at', svc_ts(received_at),"
    " 'payload', payload)::text FROM billing_webhook_events WHERE event_id = $1",
    1, SVC_STMT_READ
};

/* ------------------------------------------------------------------------ */
/* The signature                                                            */

/* The provider's ids: letters, digits and '_' (evt_..., cus_...). */
static int provider_id_valid(const char *s)
{
    apr_size_t n = s ? strlen(s) : 0;

    return n >= 1 && n <= 255
        && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

const char *svc_billing_signature_check(apr_pool_t *p, const char *secret,
                                        apr_size_t secret_len, const char *header,
                                        const char *body, apr_size_t len, apr_int64_t now,
                                        int tolerance, int *pexpired)
{
    const char *item, *t = NULL, *want;
    char *copy, *last;
    apr_array_header_t *v1 = apr_array_make(p, 2, sizeof(const char *));
    unsigned char mac[32];
    long long ts;
    int i, match = 0;

    *pexpired = 0;
    if (!header || !*header || strlen(header) > 4096) {
        return "Stripe-Signature is missing";
    }
    /* t=TIMESTAMP,v1=HEX[,v1=HEX...][,v0=...]: during a rotation of the
     * secret the provider signs with the old and the new one. */
    copy = apr_pstrdup(p, header);
    for (item = apr_strtok(copy, ",", &last); item; item = apr_strtok(NULL, ",", &last)) {
        while (apr_isspace(*item)) {
            item++;
        }
        if (strncmp(item, "t=", 2) == 0) {
            if (t) {
                return "Stripe-Signature has more than one timestamp";
            }
            t = item + 2;
        }
        else if (strncmp(item, "v1=", 3) == 0) {
            APR_ARRAY_PUSH(v1, const char *) = item + 3;
        }
    }
    if (!t || svc_parse_int(t, 0, 9999999999LL, &ts) != APR_SUCCESS) {
        return "Stripe-Signature has no timestamp (t=)";
    }
    if (v1->nelts == 0) {
        return "Stripe-Signature has no v1 signature";
    }
    {
        /* HMAC over t "." body without copying the body. */
        const char *prefix = apr_pstrcat(p, t, ".", NULL);
        apr_size_t plen = strlen(prefix);
        char *msg = apr_palloc(p, plen + len + 1);
        memcpy(msg, prefix, plen);
        if (len) {
            memcpy(msg + plen, body, len);
        }
        svc_hmac_sha256(mac, (const unsigned char *)secret, secret_len,
                        (const unsigned char *)msg, plen + len);
    }
    want = svc_hex(p, mac, sizeof(mac));
    /* Every candidate is compared, each in constant time. */
    for (i = 0; i < v1->nelts; i++) {
        const char *given = APR_ARRAY_IDX(v1, i, const char *);
        if (strlen(given) == 64) {
            char lower[64];
            int k;
            for (k = 0; k < 64; k++) {
                lower[k] = (char)apr_tolower(given[k]);
            }
            match |= svc_ct_equal(want, lower, 64);
        }
    }
    if (!match) {
        return "no v1 signature of Stripe-Signature is the HMAC-SHA256 of this body under "
               "the webhook secret";
    }
    if (ts < now - tolerance || ts > now + tolerance) {
        *pexpired = 1;
        return "the signature's timestamp is more than the tolerance away from now";
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Effects                                                                  */

/* Our word for the provider's subscription status. */
static const char *status_of(const char *provider)
{
    if (!provider) {
        return "none";
    }
    if (strcmp(provider, "active") == 0 || strcmp(provider, "trialing") == 0) {
        return "active";
    }
    if (strcmp(provider, "past_due") == 0 || strcmp(provider, "unpaid") == 0
        || strcmp(provider, "paused") == 0) {
        return "past_due";
    }
    if (strcmp(provider, "canceled") == 0 || strcmp(provider, "incomplete_expired") == 0) {
        return "canceled";
    }
    /* incomplete: the first payment has not gone through yet. */
    return "none";
}

/* A string member that is a provider id, or NULL. */
static const char *id_member(const json_t *obj, const char *key)
{
    const char *v = svc_json_str(obj, key);

    return provider_id_valid(v) ? v : NULL;
}

/* A whole-seconds time member as decimal text, or NULL. */
static const char *time_member(apr_pool_t *p, const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);

    return json_is_integer(v) && json_integer_value(v) >= 0
           ? apr_psprintf(p, "%" APR_INT64_T_FMT, (apr_int64_t)json_integer_value(v)) : NULL;
}

/* One event being handled. */
typedef struct {
    svc_ctx_t *ctx;
    svc_db_t *db;
    const char *event_id;
    const char *type;
    const char *created;        /* the event's creation, decimal seconds */
    const char *livemode;       /* "true" or "false" */
    const json_t *obj;          /* data.object */
    const char *org_id;         /* the org it is about, or NULL */
    /* What changed, for the audit entry and the billing.updated event. */
    const char *action;
    json_t *details;
    int duplicate;              /* recorded before: nothing done (for the metrics) */
} event_t;

/* The change's audit entry (by the provider) and the billing.updated event
 * (last: it takes the org's event lock), from the row as it is now. */
static apr_status_t changed(event_t *ev, svc_dbres_t *res)
{
    svc_ctx_t *ctx = ev->ctx;
    svc_actor_t actor;
    json_t *data;
    apr_status_t rv;

    svc_actor_from_ctx(ctx, &actor);
    actor.kind = "provider";
    actor.user_id = NULL;
    actor.token_id = NULL;
    json_object_set_new(ev->details, "event_id", json_string(ev->event_id));
    rv = svc_audit_write(ev->db, ctx->pool, &actor, ev->org_id, ev->action, "org", ev->org_id,
                         ev->details);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    data = svc_json_pool(ctx->pool,
                         json_pack("{s:s?,s:s,s:s?,s:s,s:s}", "plan", svc_dbres_str(res, 0, 1),
                                   "status", svc_dbres_str(res, 0, 0), "current_period_end",
                                   svc_dbres_str(res, 0, 2), "cause", ev->type,
                                   "event_id", ev->event_id));
    return svc_event_emit(ev->db, ctx->pool, ev->org_id, NULL, NULL, "billing.updated", data);
}

/* checkout.session.completed: the org named by client_reference_id gets the
 * session's customer and subscription. */
static apr_status_t checkout_completed(event_t *ev)
{
    const char *customer = id_member(ev->obj, "customer");
    const char *sub = id_member(ev->obj, "subscription");
    svc_dbres_t *res;
    apr_status_t rv;

    if (!customer) {
        return APR_SUCCESS;
    }
    rv = svc_db_execv(ev->db, &st_link, ev->ctx->pool, &res, ev->org_id, customer, sub);
    /* The org has another customer, or the customer is another org's:
     * recorded, not linked. */
    if (rv != APR_SUCCESS || svc_dbres_rows(res) == 0) {
        return rv;
    }
    ev->action = "billing.checkout.completed";
    ev->details = svc_json_pool(ev->ctx->pool,
                                json_pack("{s:s?,s:s,s:s?}", "session_id",
                                          id_member(ev->obj, "id"), "customer_id", customer,
                                          "subscription_id", sub));
    return changed(ev, res);
}

/* customer.subscription.created, .updated, .deleted: plan, status and
 * period, unless a newer event said otherwise already. */
static apr_status_t subscription_changed(event_t *ev, int deleted)
{
    apr_pool_t *p = ev->ctx->pool;
    const char *sub = id_member(ev->obj, "id");
    const char *customer = id_member(ev->obj, "customer");
    const char *pstatus = svc_json_str(ev->obj, "status");
    const json_t *item = json_array_get(json_object_get(json_object_get(ev->obj, "items"),
                                                        "data"), 0);
    const char *price = id_member(json_object_get(item, "price"), "id");
    const svc_billing_plan_t *pl = svc_billing_plan_by_price(ev->ctx->conf, price);
    const char *status = deleted ? "canceled" : status_of(pstatus);
    /* The period: on the subscription in older API versions, on each of
     * its items since 2025-03-31.basil. */
    const char *start = time_member(p, ev->obj, "current_period_start");
    const char *end = time_member(p, ev->obj, "current_period_end");
    const char *cur_sub, *old_status;
    svc_dbres_t *res;
    apr_status_t rv;

    if (!start || !end) {
        start = time_member(p, item, "current_period_start");
        end = time_member(p, item, "current_period_end");
    }
    if (!sub || !customer) {
        return APR_SUCCESS;
    }
    if ((rv = svc_db_execv(ev->db, &st_account_row, p, &res, ev->org_id, ev->created))
        != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_EDB;
    }
    /* An event older than one applied already changes nothing. */
    if (svc_dbres_bool(res, 0, 4) != 1) {
        return APR_SUCCESS;
    }
    cur_sub = apr_pstrdup(p, svc_dbres_str(res, 0, 1));
    old_status = apr_pstrdup(p, svc_dbres_str(res, 0, 2));
    /* Another subscription than the org's: its end (an old one cancelled)
     * changes nothing; one that starts takes the org over. */
    if (cur_sub && strcmp(cur_sub, sub) != 0
        && (deleted || strcmp(status, "active") != 0)) {
        return APR_SUCCESS;
    }
    rv = svc_db_execv(ev->db, &st_subscription, p, &res, ev->org_id, customer, sub,
                      pl ? pl->id : NULL, price, status,
                      pstatus ? svc_printable(p, pstatus, 64) : NULL, start, end, ev->created);
    if (rv != APR_SUCCESS || svc_dbres_rows(res) != 1) {
        return rv != APR_SUCCESS ? rv : SVC_EDB;
    }
    ev->action = "billing.subscription.updated";
    ev->details = svc_json_pool(p, json_pack("{s:s,s:s,s:s?,s:s?,s:s,s:s?}", "type", ev->type,
                                             "subscription_id", sub, "plan",
                                             pl ? pl->id : NULL, "price_id", price,
                                             "status", status, "previous_status", old_status));
    return changed(ev, res);
}

/* invoice.paid, invoice.payment_failed: a failed payment makes the org
 * past_due; a paid invoice ends that. */
static apr_status_t invoice_event(event_t *ev, int failed)
{
    apr_pool_t *p = ev->ctx->pool;
    /* The subscription billed: a member of the invoice in older API
     * versions, under parent.subscription_details since 2025-03-31.basil. */
    const char *sub = id_member(ev->obj, "subscription");
    const json_t *amount = json_object_get(ev->obj, failed ? "amount_due" : "amount_paid");
    const char *cur_sub;
    svc_dbres_t *res;
    apr_status_t rv;

    if (!sub) {
        sub = id_member(json_object_get(json_object_get(ev->obj, "parent"),
                                        "subscription_details"), "subscription");
    }
    if ((rv = svc_db_execv(ev->db, &st_account_row, p, &res, ev->org_id, "0")) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_EDB;
    }
    cur_sub = svc_dbres_str(res, 0, 1);
    /* An invoice of another subscription than the org's says nothing of
     * its standing. */
    if (sub && cur_sub && strcmp(sub, cur_sub) != 0) {
        return APR_SUCCESS;
    }
    if ((rv = svc_db_execv(ev->db, &st_invoice_status, p, &res, ev->org_id,
                           failed ? "past_due" : "paid")) != APR_SUCCESS) {
        return rv;
    }
    ev->action = failed ? "billing.invoice.payment_failed" : "billing.invoice.paid";
    ev->details = svc_json_pool(p, json_pack("{s:s?,s:s?,s:o,s:s?}", "invoice_id",
                                             id_member(ev->obj, "id"), "subscription_id", sub,
                                             failed ? "amount_due" : "amount_paid",
                                             json_is_integer(amount) ? json_incref((json_t *)amount)
                                             : json_null(),
                                             "currency",
                                             svc_json_str(ev->obj, "currency")
                                             ? svc_printable(p, svc_json_str(ev->obj,
                                                                             "currency"), 8)
                                             : NULL));
    return changed(ev, res);
}

/* The org an event is about, or NULL (recorded, nothing else). */
static apr_status_t org_of(event_t *ev, const char **porg)
{
    apr_pool_t *p = ev->ctx->pool;
    svc_dbres_t *res;
    apr_status_t rv;

    *porg = NULL;
    if (strcmp(ev->type, "checkout.session.completed") == 0) {
        const char *ref = svc_json_str(ev->obj, "client_reference_id");
        if (!ref || strlen(ref) > 64
            || strcmp(svc_json_str(ev->obj, "mode") ? svc_json_str(ev->obj, "mode") : "",
                      "subscription") != 0) {
            return APR_SUCCESS;
        }
        rv = svc_db_execv(ev->db, &st_org_exists, p, &res, ref);
    }
    else {
        const char *customer = id_member(ev->obj, "customer");
        const char *meta = svc_json_str(json_object_get(ev->obj, "metadata"), "org_id");
        if (!customer) {
            return APR_SUCCESS;
        }
        rv = svc_db_execv(ev->db, &st_org_of, p, &res, customer,
                          meta && strlen(meta) <= 64 ? meta : NULL);
    }
    if (rv == APR_SUCCESS && svc_dbres_rows(res) == 1 && !svc_dbres_isnull(res, 0, 0)) {
        *porg = apr_pstrdup(p, svc_dbres_str(res, 0, 0));
    }
    return rv;
}

/* The events that change an org's account, and how. */
static const struct {
    const char *type;
    apr_status_t (*fn)(event_t *ev, int flag);
    int flag;
} handled[] = {
    { "customer.subscription.created", subscription_changed, 0 },
    { "customer.subscription.updated", subscription_changed, 0 },
    { "customer.subscription.deleted", subscription_changed, 1 },
    { "invoice.paid", invoice_event, 0 },
    { "invoice.payment_failed", invoice_event, 1 },
    { NULL, NULL, 0 }
};

static apr_status_t apply(event_t *ev)
{
    apr_status_t rv;
    int i;

    for (i = 0; handled[i].type && strcmp(handled[i].type, ev->type) != 0; i++) {
    }
    if (!handled[i].type && strcmp(ev->type, "checkout.session.completed") != 0) {
        return APR_SUCCESS;
    }
    /* The org's account exists from here on: each change below is an
     * UPDATE of its row (which locks it until the commit). */
    if ((rv = svc_db_execv(ev->db, &st_account_lock, ev->ctx->pool, NULL, ev->org_id))
        != APR_SUCCESS) {
        return rv;
    }
    return handled[i].type ? handled[i].fn(ev, handled[i].flag) : checkout_completed(ev);
}

/* The event recorded once, with its effect, and the answer: one write. */
static apr_status_t record_event(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    event_t *ev = baton;
    svc_dbres_t *res;
    apr_status_t rv;

    ev->db = db;
    ev->duplicate = 0;
    if ((rv = org_of(ev, &ev->org_id)) != APR_SUCCESS) {
        return rv;
    }
    /* A redelivery waits here for the first delivery's transaction, then
     * finds its row; if that one rolled back, this one goes ahead. */
    rv = svc_db_execv(db, &st_event_record, ctx->pool, &res, ev->event_id, ev->type,
                      ev->org_id, ev->livemode, ev->created, ctx->raw_body);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        /* Recorded before: nothing was written, nothing changes. */
        ev->duplicate = 1;
        return svc_reply_json(ctx, 200, json_pack("{s:s,s:s}", "status", "duplicate",
                                                  "event_id", ev->event_id));
    }
    if (ev->org_id && (rv = apply(ev)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_json(ctx, 200, json_pack("{s:s,s:s}", "status", "accepted",
                                              "event_id", ev->event_id));
}

static apr_status_t billing_webhook(svc_ctx_t *ctx, int *pduplicate)
{
    const svc_billing_t *b = svc_billing_of(ctx->conf);
    const char *why, *created;
    json_t *doc, *data;
    event_t ev;
    apr_status_t rv;
    int expired;

    if (!b->webhook_secret) {
        return svc_fail(ctx, 503, "billing_not_configured",
                        "The payment provider's webhook is not configured on this server "
                        "(%s): an operator sets BILLING_WEBHOOK_SECRET (docs/operations.md, "
                        "\"Billing\").", b->webhook_off ? b->webhook_off : "no secret");
    }
    /* Nothing of the event is looked at before its signature holds. */
    why = svc_billing_signature_check(ctx->pool, b->webhook_secret, b->webhook_secret_len,
                                      apr_table_get(ctx->headers_in, "Stripe-Signature"),
                                      ctx->raw_body ? ctx->raw_body : "", ctx->raw_len,
                                      apr_time_sec(apr_time_now()), SVC_BILLING_TOLERANCE_S,
                                      &expired);
    if (why && expired) {
        return svc_fail(ctx, 401, "signature_expired",
                        "The Stripe-Signature timestamp is more than %d seconds from this "
                        "server's clock: a replayed delivery, or a clock that is wrong.",
                        SVC_BILLING_TOLERANCE_S);
    }
    if (why) {
        return svc_fail(ctx, 401, "invalid_signature",
                        "%s: the webhook secret configured here differs from the endpoint's "
                        "at the provider (docs/operations.md, secret rotation).", why);
    }
    if (svc_json_parse_body(&doc, ctx->raw_body ? ctx->raw_body : "", ctx->raw_len, ctx->pool,
                            &why) != APR_SUCCESS) {
        return svc_fail(ctx, 400, "invalid_json", "The event's body: %s", why);
    }
    memset(&ev, 0, sizeof(ev));
    ev.ctx = ctx;
    ev.event_id = svc_json_str(doc, "id");
    ev.type = svc_json_str(doc, "type");
    data = json_object_get(doc, "data");
    ev.obj = json_object_get(data, "object");
    created = time_member(ctx->pool, doc, "created");
    if (!provider_id_valid(ev.event_id) || !svc_word_valid(ev.type, 100)
        || !json_is_object(ev.obj) || !created) {
        return svc_fail(ctx, 400, "invalid_webhook", "The event has no usable id, type, "
                        "created or data.object.");
    }
    ev.created = created;
    ev.livemode = json_is_true(json_object_get(doc, "livemode")) ? "true" : "false";
    rv = svc_write(ctx, record_event, &ev);
    *pduplicate = ev.duplicate;
    return rv;
}

apr_status_t svc_h_billing_webhook(svc_ctx_t *ctx)
{
    return svc_metrics_webhook_handle(ctx, SVC_MHOOK_BILLING, billing_webhook);
}

apr_status_t svc_h_billing_events_list(svc_ctx_t *ctx)
{
    return svc_reply_rows(ctx, &st_event_list, event_item, SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

apr_status_t svc_h_billing_event_get(svc_ctx_t *ctx)
{
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_event_get, ctx->pool, &res,
                              apr_table_get(ctx->params, "eventId"))) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_fail(ctx, 404, "not_found", "No event with this id was received.");
    }
    return svc_reply_text(ctx, 200, svc_dbres_str(res, 0, 0));
}
