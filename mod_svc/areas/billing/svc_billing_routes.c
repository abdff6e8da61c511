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

static const svc_route_t routes[] = {
    /* Members may see what the org is on and what it uses; admins pay
     * (SPEC.md: billing administration needs admin scope). */
    { .method = "GET", .path = ORG "/billing/plans", .handler = svc_h_billing_plans,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_MEMBER, .op_id = "listBillingPlans", .tag = TAG,
      .summary = "The plans an organization may subscribe to" },
    { .method = "GET", .path = ORG "/billing", .handler = svc_h_billing_get,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_MEMBER, .op_id = "getBilling", .tag = TAG,
      .summary = "Plan, subscription status, this period's usage against the plan, next "
        "invoice" },
    { .method = "GET", .path = ORG "/usage", .handler = svc_h_billing_usage,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_MEMBER, .query = svc_q_billing_usage,
      .op_id = "getUsage", .tag = TAG,
      .summary = "Run minutes, model tokens and cost, deployment hours, by day, project, "
        "model or kind" },
    { .method = "POST", .path = ORG "/billing/checkout", .handler = svc_h_billing_checkout,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .body = svc_body_billing_checkout,
      .body_limit = SVC_KB(16), .success = 201, .op_id = "createBillingCheckout", .tag = TAG,
      .summary = "A checkout session at the payment provider for a plan (Idempotency-Key "
        "accepted)" },
    { .method = "POST", .path = ORG "/billing/portal", .handler = svc_h_billing_portal,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .body = svc_body_billing_portal,
      .body_limit = SVC_KB(16), .success = 201, .op_id = "createBillingPortalSession",
      .tag = TAG,
      .summary = "A session of the payment provider's customer portal" },
    { .method = "GET", .path = ORG "/billing/payment-method",
      .handler = svc_h_billing_payment_method_get, .scope = SVC_SCOPE_READ,
      .role = SVC_ROLE_ADMIN, .op_id = "getBillingPaymentMethod", .tag = TAG,
      .summary = "The default payment method (brand, last four digits, expiry), or null" },
    { .method = "PUT", .path = ORG "/billing/payment-method",
      .handler = svc_h_billing_payment_method_put, .scope = SVC_SCOPE_ADMIN,
      .role = SVC_ROLE_ADMIN, .body = svc_body_billing_payment_method,
      .body_limit = SVC_KB(4), .op_id = "setBillingPaymentMethod", .tag = TAG,
      .summary = "Attach a payment method and make it the default" },
    { .method = "GET", .path = ORG "/billing/budget", .handler = svc_h_billing_budget_get,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_ADMIN, .op_id = "getBillingBudget",
      .tag = TAG,
      .summary = "The monthly budget for model spend, its alerts, and this month's spend" },
    { .method = "PUT", .path = ORG "/billing/budget", .handler = svc_h_billing_budget_put,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .body = svc_body_billing_budget,
      .body_limit = SVC_KB(4), .op_id = "setBillingBudget", .tag = TAG,
      .summary = "Set or remove the monthly budget, its alert levels, and whether it is hard" },

    /* The provider's events: authenticated by their signature, over the
     * raw body. */
    { .method = "POST", .path = "/webhooks/billing", .handler = svc_h_billing_webhook,
      .auth = SVC_AUTH_WEBHOOK, .body_limit = SVC_BILLING_WEBHOOK_LIMIT,
      .flags = SVC_RF_RAW_BODY, .op_id = "receiveBillingWebhook", .tag = TAG,
      .summary = "The payment provider's webhook (Stripe-Signature, de-duplicated on the "
        "event id)" },
    { .method = "GET", .path = "/api/admin/billing/events", .handler = svc_h_billing_events_list,
      .scope = SVC_SCOPE_READ, .flags = SVC_RF_FOUNDER | SVC_RF_PAGED,
      .op_id = "listBillingEvents", .tag = TAG,
      .summary = "Recorded webhook events of the payment provider, newest first, without "
        "payloads" },
    { .method = "GET", .path = "/api/admin/billing/events/:eventId",
      .handler = svc_h_billing_event_get, .scope = SVC_SCOPE_READ, .flags = SVC_RF_FOUNDER,
      .op_id = "getBillingEvent", .tag = TAG,
      .summary = "One recorded webhook event with its payload" },
    SVC_ROUTE_END,
};

const svc_area_t svc_billing_area = {
    "billing", "Plans, usage, the payment provider's checkout, portal and payment method, "
    "its webhook, and budgets.", routes
};
