/*
 * svc_billing_api.c: what an org's members read of its billing: the plans,
 * its plan with this period's usage against the plan's allowances and the
 * next invoice, and its usage broken down by day, project, model or kind
 * (svc_billing_api.h).
 */
#include "svc_billing_api.h"
#include "svc_billing_store.h"
#include "svc_stripe_client.h"

#include <string.h>

/* The longest span GET .../usage sums at once. */
#define USAGE_MAX_DAYS 400

/* A cache of what the provider previewed, written while GET /billing
 * answers: it stands alone (SVC_STMT_ALONE), part of no change. */
static const svc_stmt_t st_invoice_cache = {
    "svc_billing_invoice_cache",
    "UPDATE billing_accounts SET next_invoice = $3::jsonb, next_invoice_at = now()"
    " WHERE org_id = $1 AND subscription_id = $2",
    3, SVC_STMT_RETRY | SVC_STMT_ALONE
};

const svc_qparam_t svc_q_billing_usage[] = {
    { "from", "string", "Start (inclusive): an RFC 3339 date-time or a date (YYYY-MM-DD, "
      "midnight UTC); default the first day of this month (UTC)" },
    { "to", "string", "End (exclusive), the same forms; default the first day of next month. "
      "At most 400 days after from" },
    { "group_by", "string", "day (default), project, model or kind" },
    { NULL, NULL, NULL }
};

/* A plan as the API shows it; NULL for none. An id no SvcBillingPlan names
 * any more (the operator removed it) is shown by its id alone. */
static json_t *plan_json(const svc_config_t *conf, const char *id)
{
    const svc_billing_plan_t *pl = svc_billing_plan(conf, id);
    json_t *inc;

    if (!id) {
        return json_null();
    }
    if (!pl) {
        return json_pack("{s:s,s:n}", "id", id, "name");
    }
    inc = json_object();
    json_object_set_new(inc, "run_minutes",
                        pl->run_minutes < 0 ? json_null() : json_integer(pl->run_minutes));
    json_object_set_new(inc, "model_tokens",
                        pl->model_tokens < 0 ? json_null() : json_integer(pl->model_tokens));
    json_object_set_new(inc, "deployment_hours", pl->deployment_hours < 0
                        ? json_null() : json_integer(pl->deployment_hours));
    return json_pack("{s:s,s:s,s:{s:I,s:s,s:s},s:o,s:b}", "id", pl->id, "name", pl->name,
                     "price", "amount", (json_int_t)pl->amount, "currency", pl->currency,
                     "interval", pl->interval, "included", inc, "hard_limits", pl->hard);
}

apr_status_t svc_h_billing_plans(svc_ctx_t *ctx)
{
    const apr_array_header_t *plans = svc_billing_of(ctx->conf)->plans;
    json_t *data = json_array();
    int i;

    for (i = 0; i < plans->nelts; i++) {
        json_array_append_new(data, plan_json(ctx->conf, APR_ARRAY_IDX(plans, i,
                                                                       svc_billing_plan_t).id));
    }
    return svc_reply_json(ctx, 200, json_pack("{s:o,s:n}", "data", data, "next_cursor"));
}

/* used (taken) against included (null: not limited by the plan). */
static json_t *allowance(json_t *used, apr_int64_t included)
{
    return json_pack("{s:o,s:o}", "used", used, "included",
                     included < 0 ? json_null() : json_integer(included));
}

/* Minutes and hours as the usage list shows them: two and four decimals. */
static json_t *rounded(double v, double scale)
{
    return json_real((double)(apr_int64_t)(v * scale + 0.5) / scale);
}

/*
 * The upcoming invoice (the provider's preview of the subscription's next
 * one): {"amount_due", "currency", "date"} as JSON text, from the cache
 * while it is fresh, else asked of the provider (without holding a pooled
 * connection) and cached. *perr says why it is unknown when the provider
 * cannot say (a stale preview is shown then, if there is one).
 */
static apr_status_t next_invoice(svc_ctx_t *ctx, const svc_billing_account_t *a,
                                 const char **pjson, const char **perr)
{
    const char *params[] = { "customer", a->customer_id, "subscription", a->subscription_id,
                             NULL };
    const char *date;
    svc_stripe_t s;
    json_t *doc, *at, *out;
    svc_db_t *db;
    apr_status_t rv;

    *pjson = a->next_invoice;
    *perr = NULL;
    if (a->next_invoice_fresh && a->next_invoice) {
        return APR_SUCCESS;
    }
    if ((rv = svc_ctx_db_release(ctx)) != APR_SUCCESS) {
        return rv;
    }
    svc_stripe_init(&s, ctx->pool, ctx->conf);
    /* A preview changes nothing at the provider; the key only satisfies
     * "every POST carries one". */
    rv = svc_stripe_call(&s, "POST", "/v1/invoices/create_preview", params,
                         apr_pstrcat(ctx->pool, "svc-preview-", svc_random_base62(ctx->pool, 22),
                                     NULL), &doc);
    if (rv != APR_SUCCESS) {
        *perr = s.status ? apr_psprintf(ctx->pool, "the payment provider refused the invoice "
                                        "preview (HTTP %d%s%s)%s%s", s.status,
                                        *s.message ? ": " : "", s.message,
                                        *s.request_id ? ", request " : "", s.request_id)
                : "the payment provider could not be reached for the invoice preview";
        return APR_SUCCESS;
    }
    /* When the invoice is due to be paid; a preview without a payment
     * attempt yet falls back to the end of the period it bills. */
    at = json_object_get(doc, "next_payment_attempt");
    if (!json_is_integer(at)) {
        at = json_object_get(doc, "period_end");
    }
    date = NULL;
    if (json_is_integer(at)) {
        char *buf = apr_palloc(ctx->pool, SVC_RFC3339_LEN + 1);
        if (svc_format_rfc3339(buf, apr_time_from_sec(json_integer_value(at)))
            == APR_SUCCESS) {
            date = buf;
        }
    }
    if (!json_is_integer(json_object_get(doc, "amount_due"))
        || !svc_json_str(doc, "currency")) {
        *perr = "the payment provider's invoice preview has no amount_due or currency";
        return APR_SUCCESS;
    }
    out = svc_json_pool(ctx->pool, json_pack("{s:I,s:s,s:s?}", "amount_due",
                                             json_integer_value(json_object_get(doc,
                                                                                "amount_due")),
                                             "currency", svc_printable(ctx->pool,
                                                                       svc_json_str(doc,
                                                                                    "currency"),
                                                                       8),
                                             "date", date));
    *pjson = svc_json_dump(ctx->pool, out);
    /* A cache: a lone statement, and a failure to keep it costs only a
     * later call. */
    if (svc_ctx_db(ctx, &db) == APR_SUCCESS) {
        (void)svc_db_execv(db, &st_invoice_cache, ctx->pool, NULL, ctx->org->id,
                           a->subscription_id, *pjson);
    }
    return APR_SUCCESS;
}

apr_status_t svc_h_billing_get(svc_ctx_t *ctx)
{
    const svc_billing_plan_t *pl;
    svc_billing_account_t a;
    svc_usage_totals_t t;
    const char *from, *to, *invoice = NULL, *invoice_err = NULL;
    json_t *usage, *doc, *inv = NULL;
    json_error_t jerr;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_billing_account_get(db, ctx->pool, ctx->org->id, &a)) != APR_SUCCESS) {
        return rv;
    }
    pl = svc_billing_plan(ctx->conf, a.plan_id);
    /* This billing period, or this calendar month without one. */
    if (a.period_start && a.period_end && strcmp(a.status, "none") != 0) {
        from = a.period_start;
        to = a.period_end;
    }
    else {
        svc_billing_month(ctx->pool, apr_time_now(), &from, &to, NULL);
    }
    if ((rv = svc_billing_totals(db, ctx->pool, ctx->conf, ctx->org->id, from, to, &t))
        != APR_SUCCESS) {
        return rv;
    }
    usage = json_pack("{s:s,s:s,s:o,s:o,s:o,s:f,s:b}", "period_start", from, "period_end", to,
                      "run_minutes", allowance(rounded(t.run_minutes, 100),
                                               pl ? pl->run_minutes : -1),
                      "model_tokens", allowance(json_integer(t.input_tokens + t.output_tokens),
                                                pl ? pl->model_tokens : -1),
                      "deployment_hours", allowance(rounded(t.deployment_hours, 10000),
                                                    pl ? pl->deployment_hours : -1),
                      "model_cost_usd", (double)(apr_int64_t)(t.model_cost_usd * 1e6 + 0.5) / 1e6,
                      "unpriced_models", t.unpriced);
    if (a.subscription_id && a.customer_id && !ctx->conf->billing_off
        && strcmp(a.status, "canceled") != 0) {
        if ((rv = next_invoice(ctx, &a, &invoice, &invoice_err)) != APR_SUCCESS) {
            json_decref(usage);
            return rv;
        }
        inv = invoice ? json_loads(invoice, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    }
    doc = json_pack("{s:o,s:s,s:s?,s:s?,s:o,s:o,s:s?}", "plan", plan_json(ctx->conf, a.plan_id),
                    "status", a.status, "provider_status", a.provider_status,
                    "current_period_end", a.period_end, "usage", usage,
                    "next_invoice", inv ? inv : json_null(), "next_invoice_error", invoice_err);
    return svc_reply_json(ctx, 200, doc);
}

/* A time of the usage query (from, to): RFC 3339, or a date at midnight
 * UTC; dflt when absent. NULL with a field error when unusable. */
static const char *usage_time(svc_ctx_t *ctx, const char *name, const char *dflt,
                              apr_time_t *pt)
{
    const char *v = apr_table_get(ctx->query, name);
    char *utc;

    if (!v) {
        v = dflt;
    }
    else if (strlen(v) == 10 && v[4] == '-' && v[7] == '-') {
        v = apr_pstrcat(ctx->pool, v, "T00:00:00Z", NULL);
    }
    utc = apr_palloc(ctx->pool, SVC_RFC3339_USEC_LEN + 1);
    if (svc_parse_rfc3339_usec(v, pt) != APR_SUCCESS
        || svc_format_rfc3339_usec(utc, *pt) != APR_SUCCESS) {
        svc_fail_field(ctx, name, "invalid_time",
                       "%s must be a date (2026-01-31) or an RFC 3339 date-time "
                       "(2026-01-31T12:00:00Z) from year 1 to 9999.", name);
        return NULL;
    }
    return utc;
}

apr_status_t svc_h_billing_usage(svc_ctx_t *ctx)
{
    static const char *const groups[] = { "day", "project", "model", "kind", NULL };
    const char *group = apr_table_get(ctx->query, "group_by");
    const char *month_from, *month_to, *from, *to, *json;
    apr_time_t tf = 0, tt = 0;
    svc_db_t *db;
    apr_status_t rv;
    int i;

    svc_billing_month(ctx->pool, apr_time_now(), &month_from, &month_to, NULL);
    from = usage_time(ctx, "from", month_from, &tf);
    to = usage_time(ctx, "to", month_to, &tt);
    if (!group) {
        group = "day";
    }
    for (i = 0; groups[i] && strcmp(groups[i], group) != 0; i++) {
    }
    if (!groups[i]) {
        svc_fail_field(ctx, "group_by", "invalid_value",
                       "group_by must be one of: day, project, model, kind.");
    }
    if (from && to && tt <= tf) {
        svc_fail_field(ctx, "to", "out_of_range", "to must come after from.");
    }
    else if (from && to && tt - tf > apr_time_from_sec((apr_int64_t)USAGE_MAX_DAYS * 86400)) {
        svc_fail_field(ctx, "to", "out_of_range",
                       "to may be at most %d days after from.", USAGE_MAX_DAYS);
    }
    if (ctx->problem) {
        return SVC_EPROBLEM;
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_billing_usage_doc(db, ctx->pool, ctx->conf, ctx->org->id, from, to,
                                       group, &json)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_text(ctx, 200, json);
}
