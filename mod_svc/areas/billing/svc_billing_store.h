/*
 * svc_billing_store.h: the billing area's tables (billing-private): an
 * org's account, and usage summed in SQL (model calls priced by the
 * providers area's table, run minutes, deployment hours).
 */
#ifndef SVC_BILLING_STORE_H
#define SVC_BILLING_STORE_H

#include "svc_billing_conf.h"

/* An org's row of billing_accounts (strings from p; NULL where SQL NULL). */
typedef struct {
    int exists;                 /* 0: the org has no row yet (all below unset) */
    const char *customer_id;
    const char *subscription_id;
    const char *plan_id;
    const char *price_id;
    const char *status;         /* none, active, past_due, canceled */
    const char *provider_status;
    const char *period_start;   /* RFC 3339, or NULL */
    const char *period_end;
    apr_int64_t budget_usd;     /* 0: no budget */
    const char *budget_alerts;  /* JSON array text: [80,90,100] */
    int budget_hard;
    const char *next_invoice;   /* JSON text of the cached preview, or NULL */
    int next_invoice_fresh;     /* cached within SVC_BILLING_INVOICE_CACHE_S */
} svc_billing_account_t;

/* How long the provider's upcoming-invoice preview is kept. */
#define SVC_BILLING_INVOICE_CACHE_S 300

/* The org's account (a read; *pacct zeroed with exists 0 when it has
 * none). */
apr_status_t svc_billing_account_get(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                     svc_billing_account_t *pacct);

/*
 * Stores the provider's customer for the org, made once per org: a lone
 * statement that keeps a customer already stored (a request at the same
 * moment may have stored one first). *pstored is the org's customer now.
 */
apr_status_t svc_billing_customer_store(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                        const char *customer_id, const char **pstored);

/* Usage summed over [from, to) (RFC 3339 text). */
typedef struct {
    double run_minutes;
    apr_int64_t model_calls;
    apr_int64_t input_tokens;
    apr_int64_t output_tokens;
    double model_cost_usd;      /* the calls whose model has a price */
    double deployment_hours;
    int unpriced;               /* some calls' model has no price */
} svc_usage_totals_t;

apr_status_t svc_billing_totals(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                                const char *org_id, const char *from, const char *to,
                                svc_usage_totals_t *pt);

/*
 * GET .../usage's document, built in SQL: {"from", "to", "group_by",
 * "currency", "data": [...], "totals": {...}, "unpriced_models": [...]},
 * as JSON text in p. group_by is day, project, model or kind.
 */
apr_status_t svc_billing_usage_doc(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                                   const char *org_id, const char *from, const char *to,
                                   const char *group_by, const char **pjson);

/* The calendar month (UTC) around `now`: its first instant and the next
 * month's, as RFC 3339 text in p, and the month as "YYYY-MM". */
void svc_billing_month(apr_pool_t *p, apr_time_t now, const char **pfrom, const char **pto,
                       const char **pmonth);

#endif /* SVC_BILLING_STORE_H */
