/*
 * svc_billing_routes.c: the billing area's routes: plans, the org's billing
 * and usage, the payment provider's checkout, portal and payment method,
 * budgets, the provider's webhook and the operators' view of it. Fields:
 * svc_route.h; who may call what: docs/authorization.md; the flows:
 * docs/api/billing.md.
 */
#include "svc_billing.h"
#include "svc_billing_api.h"

#define TAG "Billing and usage"
#define ORG "/api/orgs/:orgSlug"

/* The answers' shapes (docs/api/conventions.md, "The document"). */
static const char *const billing_statuses[] = { "none", "active", "past_due", "canceled",
                                                NULL };
static const svc_col_t plan_price_keys[] = {
    { .key = "amount", .type = SVC_COL_INT, .description = "In the currency's smallest unit." },
    { .key = "currency", .type = SVC_COL_TEXT, .example = "usd" },
    { .key = "interval", .type = SVC_COL_TEXT, .example = "month" },
    SVC_COL_END
};
static const svc_col_t plan_included_keys[] = {
    { .key = "run_minutes", .type = SVC_COL_INT, .flags = SVC_COL_NULL,
      .description = "null: not limited by the plan." },
    { .key = "model_tokens", .type = SVC_COL_INT, .flags = SVC_COL_NULL },
    { .key = "deployment_hours", .type = SVC_COL_INT, .flags = SVC_COL_NULL },
    SVC_COL_END
};
static const svc_col_t plan_keys[] = {
    { .key = "id", .type = SVC_COL_TEXT, .example = "team" },
    { .key = "name", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "Team",
      .description = "null for a plan this server no longer offers (its other keys left out)." },
    { .key = "price", .type = SVC_COL_OBJECT, .flags = SVC_COL_OPTIONAL, .sub = plan_price_keys },
    { .key = "included", .type = SVC_COL_OBJECT, .flags = SVC_COL_OPTIONAL,
      .sub = plan_included_keys },
    { .key = "hard_limits", .type = SVC_COL_BOOL, .flags = SVC_COL_OPTIONAL,
      .description = "true: work over the plan's allowance is refused, not billed." },
    SVC_COL_END
};
static const svc_schema_t schema_plan = { .name = "BillingPlan", .keys = plan_keys,
    .description = "A plan (SvcBillingPlan)." };
static const svc_col_t used_number_keys[] = {
    { .key = "used", .type = SVC_COL_NUMBER },
    { .key = "included", .type = SVC_COL_INT, .flags = SVC_COL_NULL },
    SVC_COL_END
};
static const svc_col_t used_int_keys[] = {
    { .key = "used", .type = SVC_COL_INT },
    { .key = "included", .type = SVC_COL_INT, .flags = SVC_COL_NULL },
    SVC_COL_END
};
static const svc_col_t period_usage_keys[] = {
    { .key = "period_start", .type = SVC_COL_TEXT, .example = "2026-11-01T00:00:00Z" },
    { .key = "period_end", .type = SVC_COL_TEXT, .example = "2026-12-01T00:00:00Z" },
    { .key = "run_minutes", .type = SVC_COL_OBJECT, .sub = used_number_keys },
    { .key = "model_tokens", .type = SVC_COL_OBJECT, .sub = used_int_keys },
    { .key = "deployment_hours", .type = SVC_COL_OBJECT, .sub = used_number_keys },
    { .key = "model_cost_usd", .type = SVC_COL_NUMBER },
    { .key = "unpriced_models", .type = SVC_COL_BOOL,
      .description = "true: a model with no known price was used (its cost is not counted)." },
    SVC_COL_END
};
static const svc_col_t next_invoice_keys[] = {
    { .key = "amount_due", .type = SVC_COL_INT,
      .description = "In the currency's smallest unit." },
    { .key = "currency", .type = SVC_COL_TEXT, .example = "usd" },
    { .key = "date", .type = SVC_COL_TIME, .flags = SVC_COL_NULL,
      .description = "When it is to be paid (else the end of the period it bills)." },
    SVC_COL_END
};
static const svc_col_t billing_keys[] = {
    { .key = "plan", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .ref = &schema_plan },
    { .key = "status", .type = SVC_COL_TEXT, .values = billing_statuses },
    { .key = "provider_status", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL },
    { .key = "current_period_end", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL },
    { .key = "usage", .type = SVC_COL_OBJECT, .sub = period_usage_keys },
    { .key = "next_invoice", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL,
      .sub = next_invoice_keys,
      .description = "The payment provider's preview of the next invoice, or null (no "
        "subscription, or the provider could not say: next_invoice_error)." },
    { .key = "next_invoice_error", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL },
    SVC_COL_END
};
static const svc_schema_t schema_billing = { .name = "Billing", .keys = billing_keys,
    .description = "The organization's plan, subscription and this period's usage." };
static const svc_col_t usage_figure_keys[] = {
    { .key = "run_minutes", .type = SVC_COL_NUMBER },
    { .key = "model_calls", .type = SVC_COL_INT },
    { .key = "input_tokens", .type = SVC_COL_INT },
    { .key = "output_tokens", .type = SVC_COL_INT },
    { .key = "model_cost_usd", .type = SVC_COL_NUMBER,
      .description = "At SvcModelPrice's prices; models without one count 0 (unpriced_models)." },
    { .key = "deployment_hours", .type = SVC_COL_NUMBER, .description = "Replica-hours." },
    SVC_COL_END
};
static const svc_schema_t schema_usage_figures = { .name = "UsageFigures",
    .keys = usage_figure_keys,
    .description = "What was used." };
static const svc_col_t usage_project_keys[] = {
    SVC_COL_ID("prj"),
    { .key = "slug", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .format = "slug",
      .description = "null for a project deleted since." },
    { .key = "name", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL },
    SVC_COL_END
};
static const svc_col_t usage_group_keys[] = {
    { .key = "day", .type = SVC_COL_TEXT, .flags = SVC_COL_OPTIONAL, .example = "2026-11-27",
      .description = "group_by=day: the day (UTC)." },
    { .key = "project", .type = SVC_COL_OBJECT, .flags = SVC_COL_OPTIONAL | SVC_COL_NULL,
      .sub = usage_project_keys,
      .description = "group_by=project: the project; null for what belongs to none." },
    { .key = "model", .type = SVC_COL_TEXT, .flags = SVC_COL_OPTIONAL | SVC_COL_NULL,
      .example = "gpt-4o-mini",
      .description = "group_by=model: the model; null for usage that is no model's." },
    { .key = "kind", .type = SVC_COL_TEXT, .flags = SVC_COL_OPTIONAL | SVC_COL_NULL,
      .values = SVC_VALUES("model", "run", "deployment"),
      .description = "group_by=kind: what was used." },
    SVC_COL_END
};
static const svc_schema_t schema_usage_group = {
    .name = "UsageGroup", .description = "The usage of one group: its key (the one group_by "
        "names) and its figures.", .base = &schema_usage_figures, .keys = usage_group_keys
};
static const svc_col_t usage_keys[] = {
    { .key = "from", .type = SVC_COL_TIME },
    { .key = "to", .type = SVC_COL_TIME },
    { .key = "group_by", .type = SVC_COL_TEXT,
      .values = SVC_VALUES("day", "project", "model", "kind") },
    { .key = "currency", .type = SVC_COL_TEXT, .values = SVC_VALUES("usd") },
    { .key = "data", .type = SVC_COL_ARRAY, .ref = &schema_usage_group,
      .description = "One object per group: its key (day, project, model or kind) and its "
        "usage." },
    { .key = "totals", .type = SVC_COL_OBJECT, .ref = &schema_usage_figures,
      .description = "The usage of every group." },
    { .key = "unpriced_models", .type = SVC_COL_ARRAY, .item = SVC_COL_TEXT },
    SVC_COL_END
};
static const svc_schema_t schema_usage = { .name = "Usage", .keys = usage_keys,
    .description = "Usage over a period, grouped." };
static const svc_col_t checkout_keys[] = {
    { .key = "url", .type = SVC_COL_TEXT, .format = "uri",
      .example = "https://checkout.stripe.com/c/pay/cs_test_a1" },
    { .key = "id", .type = SVC_COL_TEXT, .example = "cs_test_a1" },
    SVC_COL_END
};
static const svc_schema_t schema_checkout = { .name = "BillingCheckout", .keys = checkout_keys,
    .description = "A checkout session at the payment provider." };
static const svc_col_t portal_keys[] = {
    { .key = "url", .type = SVC_COL_TEXT, .format = "uri",
      .example = "https://billing.stripe.com/p/session/test_a1" },
    SVC_COL_END
};
static const svc_schema_t schema_portal = { .name = "BillingPortalSession", .keys = portal_keys,
    .description = "A session of the customer portal." };
static const svc_col_t card_keys[] = {
    { .key = "brand", .type = SVC_COL_TEXT, .example = "visa" },
    { .key = "last4", .type = SVC_COL_TEXT, .example = "4242" },
    { .key = "exp_month", .type = SVC_COL_INT },
    { .key = "exp_year", .type = SVC_COL_INT },
    SVC_COL_END
};
static const svc_schema_t schema_card = { .name = "PaymentMethod", .keys = card_keys,
    .description = "The default payment method." };
static const svc_col_t budget_keys[] = {
    { .key = "monthly_usd", .type = SVC_COL_INT, .flags = SVC_COL_NULL },
    { .key = "alerts", .type = SVC_COL_ARRAY, .item = SVC_COL_INT },
    { .key = "hard", .type = SVC_COL_BOOL },
    { .key = "month", .type = SVC_COL_TEXT, .example = "2026-11" },
    { .key = "spend_usd", .type = SVC_COL_NUMBER },
    { .key = "percent", .type = SVC_COL_NUMBER, .flags = SVC_COL_NULL },
    { .key = "alerted", .type = SVC_COL_ARRAY, .item = SVC_COL_INT },
    { .key = "exceeded", .type = SVC_COL_BOOL },
    { .key = "unpriced_models", .type = SVC_COL_BOOL },
    SVC_COL_END
};
static const svc_schema_t schema_budget = { .name = "BillingBudget", .keys = budget_keys,
    .description = "The monthly budget for model spend." };
static const svc_col_t receipt_keys[] = {
    { .key = "status", .type = SVC_COL_TEXT, .values = SVC_VALUES("accepted", "duplicate") },
    { .key = "event_id", .type = SVC_COL_TEXT, .example = "evt_1" },
    SVC_COL_END
};
static const svc_schema_t schema_receipt = { .name = "BillingWebhookReceipt", .keys = receipt_keys,
    .description = "What became of a delivered event." };
static const svc_schema_t schema_event = { .name = "BillingEvent", .keys = svc_billing_event_keys,
    .description = "A recorded webhook event of the payment provider." };
static const svc_col_t event_detail_keys[] = {
    { .key = "payload", .type = SVC_COL_JSON, .description = "The event as the provider sent it." },
    SVC_COL_END
};
static const svc_schema_t schema_event_detail = {
    .name = "BillingEventDetail", .description = "A recorded webhook event with its payload.",
    .base = &schema_event, .keys = event_detail_keys
};
static const svc_col_t no_page_keys[] = { SVC_COL_END };

/* The events the area writes on the org's streams. */
static const svc_col_t updated_event_keys[] = {
    { .key = "plan", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "team" },
    { .key = "status", .type = SVC_COL_TEXT, .values = billing_statuses },
    { .key = "current_period_end", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    { .key = "cause", .type = SVC_COL_TEXT, .example = "customer.subscription.updated",
      .description = "The type of the provider's event that made the change." },
    { .key = "event_id", .type = SVC_COL_TEXT, .example = "evt_1" },
    SVC_COL_END
};
static const svc_schema_t updated_event = { .name = "BillingUpdatedEvent",
    .keys = updated_event_keys,
    .description = "billing.updated: the provider's event changed the organization's "
                   "subscription." };
static const svc_col_t budget_event_keys[] = {
    { .key = "level", .type = SVC_COL_INT, .description = "The alert level crossed, in %." },
    { .key = "month", .type = SVC_COL_TEXT, .example = "2026-11" },
    { .key = "monthly_usd", .type = SVC_COL_INT },
    { .key = "spend_usd", .type = SVC_COL_NUMBER },
    { .key = "percent", .type = SVC_COL_NUMBER },
    { .key = "hard", .type = SVC_COL_BOOL },
    { .key = "exceeded", .type = SVC_COL_BOOL },
    SVC_COL_END
};
static const svc_schema_t budget_event = { .name = "BillingBudgetEvent", .keys = budget_event_keys,
    .description = "billing.budget: this month's model spend crossed an alert level of the "
                   "budget." };
static const svc_event_kind_t events[] = {
    { "billing.updated", &updated_event, "A provider's event changed the subscription (plan, "
      "status, period)." },
    { "billing.budget", &budget_event, "Model spend crossed one of the budget's alert levels "
      "(once per level and month)." },
    { NULL, NULL, NULL }
};

static const svc_tag_t tags[] = {
    { TAG, "Plans, the organization's billing and usage, the payment provider's checkout, "
      "portal and payment method, budgets, and the provider's webhook." },
    { NULL, NULL }
};

static const svc_route_t routes[] = {
    /* Members may see what the org is on and what it uses; admins pay
     * (SPEC.md: billing administration needs admin scope). */
    { .method = "GET", .path = ORG "/billing/plans", .handler = svc_h_billing_plans,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_MEMBER, .op_id = "listBillingPlans", .tag = TAG,
      .response = &schema_plan, .page_keys = no_page_keys,
      .summary = "The plans an organization may subscribe to" },
    { .method = "GET", .path = ORG "/billing", .handler = svc_h_billing_get,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_MEMBER, .op_id = "getBilling", .tag = TAG,
      .response = &schema_billing,
      .summary = "Plan, subscription status, this period's usage against the plan, next "
        "invoice" },
    { .method = "GET", .path = ORG "/usage", .handler = svc_h_billing_usage,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_MEMBER, .query = svc_q_billing_usage,
      .op_id = "getUsage", .tag = TAG, .response = &schema_usage,
      .summary = "Run minutes, model tokens and cost, deployment hours, by day, project, "
        "model or kind" },
    { .method = "POST", .path = ORG "/billing/checkout", .handler = svc_h_billing_checkout,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .body = svc_body_billing_checkout,
      .body_limit = SVC_KB(16), .success = 201, .op_id = "createBillingCheckout", .tag = TAG,
      .flags = SVC_RF_IDEMPOTENT,
      .response = &schema_checkout, .answers = SVC_ANS_PROVIDER,
      .body_example = "{\"plan\": \"team\", \"success_url\": \"https://app.example.com/ok\", "
        "\"cancel_url\": \"https://app.example.com/billing\"}",
      .summary = "A checkout session at the payment provider for a plan (Idempotency-Key "
        "accepted)" },
    { .method = "POST", .path = ORG "/billing/portal", .handler = svc_h_billing_portal,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .body = svc_body_billing_portal,
      .body_limit = SVC_KB(16), .success = 201, .op_id = "createBillingPortalSession",
      .tag = TAG, .response = &schema_portal, .answers = SVC_ANS_PROVIDER,
      .body_example = "{\"return_url\": \"https://app.example.com/billing\"}",
      .summary = "A session of the payment provider's customer portal" },
    { .method = "GET", .path = ORG "/billing/payment-method",
      .handler = svc_h_billing_payment_method_get, .scope = SVC_SCOPE_READ,
      .role = SVC_ROLE_ADMIN, .op_id = "getBillingPaymentMethod", .tag = TAG,
      .response = &schema_card, .answers = SVC_ANS_NULL | SVC_ANS_PROVIDER,
      .summary = "The default payment method (brand, last four digits, expiry), or null" },
    { .method = "PUT", .path = ORG "/billing/payment-method",
      .handler = svc_h_billing_payment_method_put, .scope = SVC_SCOPE_ADMIN,
      .role = SVC_ROLE_ADMIN, .body = svc_body_billing_payment_method,
      .body_limit = SVC_KB(4), .op_id = "setBillingPaymentMethod", .tag = TAG,
      .response = &schema_card, .answers = SVC_ANS_PROVIDER,
      .body_example = "{\"payment_method\": \"pm_card_visa\"}",
      .summary = "Attach a payment method and make it the default" },
    { .method = "GET", .path = ORG "/billing/budget", .handler = svc_h_billing_budget_get,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_ADMIN, .op_id = "getBillingBudget",
      .tag = TAG, .response = &schema_budget,
      .summary = "The monthly budget for model spend, its alerts, and this month's spend" },
    { .method = "PUT", .path = ORG "/billing/budget", .handler = svc_h_billing_budget_put,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .body = svc_body_billing_budget,
      .body_limit = SVC_KB(4), .op_id = "setBillingBudget", .tag = TAG,
      .response = &schema_budget,
      .body_example = "{\"monthly_usd\": 500, \"alerts\": [80, 100], \"hard\": true}",
      .summary = "Set or remove the monthly budget, its alert levels, and whether it is hard" },

    /* The provider's events: authenticated by their signature, over the
     * raw body. */
    { .method = "POST", .path = "/webhooks/billing", .handler = svc_h_billing_webhook,
      .auth = SVC_AUTH_WEBHOOK, .body_limit = SVC_BILLING_WEBHOOK_LIMIT,
      .flags = SVC_RF_RAW_BODY, .op_id = "receiveBillingWebhook", .tag = TAG,
      .response = &schema_receipt,
      .body_example = "{\"id\": \"evt_1\", \"type\": \"invoice.paid\", \"data\": {\"object\": {}}}",
      .summary = "The payment provider's webhook (Stripe-Signature, de-duplicated on the "
        "event id)" },
    { .method = "GET", .path = "/api/admin/billing/events", .handler = svc_h_billing_events_list,
      .scope = SVC_SCOPE_READ, .flags = SVC_RF_FOUNDER | SVC_RF_PAGED,
      .op_id = "listBillingEvents", .tag = TAG, .response = &schema_event,
      .summary = "Recorded webhook events of the payment provider, newest first, without "
        "payloads" },
    { .method = "GET", .path = "/api/admin/billing/events/:eventId",
      .handler = svc_h_billing_event_get, .scope = SVC_SCOPE_READ, .flags = SVC_RF_FOUNDER,
      .op_id = "getBillingEvent", .tag = TAG, .response = &schema_event_detail,
      .summary = "One recorded webhook event with its payload" },
    { .method = "POST", .path = "/api/admin/billing/events/:eventId/redeliver",
      .handler = svc_h_billing_event_redeliver, .scope = SVC_SCOPE_ADMIN,
      .flags = SVC_RF_FOUNDER, .op_id = "redeliverBillingEvent", .tag = TAG,
      .response = &schema_event,
      .description = "Processes again, as a new attempt, a recorded event whose processing "
        "failed (`status` failed): 200 with the event, processed; 409 `invalid_status` for "
        "one that was processed; when it fails again, the failure's answer, and the event "
        "shows one more attempt and its last error. In the platform audit log "
        "(docs/api/admin.md).",
      .summary = "Redeliver an event whose processing failed" },
    SVC_ROUTE_END,
};

const svc_area_t svc_billing_area = { .name = "billing", .routes = routes, .tags = tags,
    .events = events,
    .description = "Plans, usage, the payment provider's checkout, portal and payment method, "
                   "its webhook, and budgets." };
