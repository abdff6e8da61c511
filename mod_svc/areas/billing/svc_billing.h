/*
 * svc_billing.h: the billing area: plans, usage, the payment provider's checkout, portal and payment method, its webhook, budgets.
 * May call base/, the kernel and the providers area's public header (model prices); others call it through this header only.
 *
 * Organizations pay for what they use (SPEC.md, "Billing and usage";
 * docs/api/billing.md). The payment provider is Stripe's API, spoken
 * through base's one HTTP client (svc_stripe_client.c): form-encoded,
 * an Idempotency-Key on every POST, a pinned API version. Its signed
 * webhook (POST /webhooks/billing) keeps each org's subscription here;
 * usage (model calls, run minutes, deployment hours) is summed in SQL.
 * Budgets and plans with hard limits refuse new spending once used up:
 * the runs, documents and pipeline areas ask svc_billing_admit first.
 */
#ifndef SVC_BILLING_H
#define SVC_BILLING_H

#include "svc_kernel.h"

/* The area's routes (svc_billing_routes.c). */
extern const svc_area_t svc_billing_area;

/* A plan an org may subscribe to (SvcBillingPlan). */
typedef struct {
    const char *id;             /* ours: [a-z0-9][a-z0-9_-]{0,63} */
    const char *name;           /* for people: 1 to 100 characters */
    const char *price_id;       /* the provider's price (price_...) */
    apr_int64_t amount;         /* the price per interval, in the currency's minor unit */
    const char *currency;       /* ISO 4217, lowercase (usd) */
    const char *interval;       /* "month" or "year" */
    /* What the plan includes per billing period; -1: not limited by it. */
    apr_int64_t run_minutes;
    apr_int64_t model_tokens;   /* input and output together */
    apr_int64_t deployment_hours;
    int hard;                   /* past an allowance, new work is refused (402) */
} svc_billing_plan_t;

/*
 * One SvcBillingPlan directive's arguments: ID NAME PRICE_ID AMOUNT CURRENCY
 * [key=value ...], the keys run_minutes, model_tokens, deployment_hours
 * (whole numbers), hard (on or off) and interval (month or year). *perr
 * says what is wrong, for the configuration error.
 */
apr_status_t svc_billing_plan_parse(apr_pool_t *p, int argc, char *const argv[],
                                    svc_billing_plan_t *pplan, const char **perr);

/*
 * The directives as written: references (env:NAME, file:/path,
 * exec:/program) or, for the API URL, a value; NULL when absent, which
 * means env: of BILLING_SECRET_KEY, BILLING_WEBHOOK_SECRET and
 * BILLING_API_URL (an unset BILLING_API_URL means https://api.stripe.com).
 */
typedef struct {
    const char *secret_key;         /* references only */
    const char *webhook_secret;     /* references only */
    const char *api_url;
    apr_array_header_t *plans;      /* of svc_billing_plan_t, or NULL */
} svc_billing_refs_t;

/*
 * Resolves the billing settings into conf (allocated from p, which must
 * live as long as conf). Without the secret key the payment routes are off
 * and conf->billing_off says why (the caller logs it once); without the
 * webhook secret the webhook is off, and *pwebhook_off says why (NULL when
 * it is on). Plans and usage work either way. A reference that is present
 * but fails, a key with spaces, or an API URL that is no http(s) base is
 * an error: *perr.
 */
apr_status_t svc_billing_configure(svc_config_t *conf, const svc_billing_refs_t *refs,
                                   apr_pool_t *p, const char **pwebhook_off,
                                   const char **perr);

/*
 * Whether the org may start new spending now: a run, a regeneration or
 * patch, a build task. SVC_EPROBLEM (402 budget_exceeded, a message that
 * names the budget or the plan's allowance) when its hard budget for this
 * month is spent, or its plan has hard limits and an allowance of this
 * period is used up; APR_SUCCESS otherwise. Reads through the request's
 * connection (no transaction needed); what is already running finishes.
 */
apr_status_t svc_billing_admit(svc_ctx_t *ctx);

/*
 * The budget sweep, for the run supervisors (any node, as often as every
 * few seconds): for each org with a budget and model calls since its last
 * check, compares this month's model spend with the budget and, for each
 * alert level crossed for the first time this month, writes the alert, an
 * audit entry (actor system) and a billing.budget event, in one
 * transaction per org. Several nodes may sweep at once: each level is
 * written once. *palerts (may be NULL) counts the alerts written.
 */
apr_status_t svc_billing_sweep(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                               int *palerts);

/*
 * A piece of usage that is not a model call, in the caller's transaction:
 * kind "deployment" (quantity: replica-hours over [started, ended)) or
 * "run" (minutes; written by the database when a run ends). Recording the
 * same kind, subject and start again changes nothing (*precorded 0).
 * Times are RFC 3339 text.
 */
apr_status_t svc_billing_record_usage(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                      const char *project_id, const char *kind,
                                      const char *subject_id, double quantity,
                                      const char *started, const char *ended, int *precorded);

#endif /* SVC_BILLING_H */
