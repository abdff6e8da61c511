/*
 * svc_billing_store.c: an org's billing account, and usage summed in SQL
 * (svc_billing_store.h).
 *
 * Model calls are priced where they are summed: the price table
 * (svc_price_table_json: SvcModelPrice, then the shipped table) is one
 * JSON parameter, and each model summed is matched against it as
 * svc_price_of matches (its own name first, then the longest entry its
 * name starts with followed by '-', SvcModelPrice before the shipped
 * table), once per model, not once per call.
 */
#include "svc_billing_store.h"
#include "svc_providers.h"

#include <stdlib.h>
#include <string.h>

static const svc_stmt_t st_account = {
    "svc_billing_account",
    "SELECT customer_id, subscription_id, plan_id, price_id, status, provider_status,"
    " svc_ts(current_period_start), svc_ts(current_period_end), budget_usd::text,"
    " array_to_json(budget_alerts)::text, budget_hard, next_invoice::text,"
    " coalesce(next_invoice_at > now() - make_interval(secs => $2::int), false)"
    " FROM billing_accounts WHERE org_id = $1",
    2, SVC_STMT_READ
};

/* The provider's customer of an org, kept the moment the provider made it,
 * whatever the request comes to (SVC_STMT_ALONE): a customer nobody knows
 * would be made twice (docs/decisions.md, "One customer per org"). */
static const svc_stmt_t st_customer_store = {
    "svc_billing_customer_store",
    "INSERT INTO billing_accounts AS a (org_id, customer_id) VALUES ($1, $2)"
    " ON CONFLICT (org_id) DO UPDATE"
    " SET customer_id = coalesce(a.customer_id, EXCLUDED.customer_id),"
    "     updated_at = CASE WHEN a.customer_id IS NULL THEN now() ELSE a.updated_at END"
    " RETURNING customer_id",
    2, SVC_STMT_RETRY | SVC_STMT_ALONE
};

/*
 * When a usage record counts: a run's minutes when it ended; a deployment's
 * replica-hours when they began, as each record of them lies within one
 * UTC hour (sql/022), so [23:00, 24:00) of a month's last day is that
 * month's. (The extra hour in the WHERE below keeps to the index on
 * ended_at.)
 */
#define USED_AT(r) "(CASE WHEN " #r ".kind = 'deployment' THEN " #r ".started_at" \
    " ELSE " #r ".ended_at END)"

/*
 * The model calls of org $1 in [$2, $3) summed per key and model, each
 * model priced from the table PRICES (a parameter); the other usage per
 * key; and both per key in g: what the statements below start from.
 */
#define USAGE_CTES(PRICES, KEY_CALLS, KEY_OTHER)                                            \
    "WITH prices AS ("                                                                      \
    "  SELECT e->>'entry' AS entry, (e->>'input')::numeric AS pin,"                         \
    "         (e->>'output')::numeric AS pout, (e->>'rank')::int AS rank"                   \
    "  FROM jsonb_array_elements(" PRICES "::jsonb) AS e),"                                  \
    " calls AS ("                                                                           \
    "  SELECT " KEY_CALLS " AS k, u.model, count(*) AS calls,"                              \
    "         sum(u.input_tokens) AS it, sum(u.output_tokens) AS ot"                        \
    "  FROM model_usage u"                                                                  \
    "  WHERE u.org_id = $1 AND u.created_at >= $2::timestamptz"                             \
    "    AND u.created_at < $3::timestamptz"                                                \
    "  GROUP BY 1, 2),"                                                                     \
    " priced AS ("                                                                          \
    "  SELECT c.*, pr.pin, pr.pout,"                                                        \
    "         (c.it * pr.pin + c.ot * pr.pout) / 1000000 AS cost"                           \
    "  FROM calls c LEFT JOIN LATERAL ("                                                    \
    "    SELECT pin, pout FROM prices"                                                      \
    "    WHERE c.model = entry OR left(c.model, length(entry) + 1) = entry || '-'"          \
    "    ORDER BY c.model = entry DESC, length(entry) DESC, rank LIMIT 1) pr ON true),"     \
    " other AS ("                                                                           \
    "  SELECT " KEY_OTHER " AS k,"                                                          \
    "         coalesce(sum(r.quantity) FILTER (WHERE r.kind = 'run'), 0) AS minutes,"      \
    "         coalesce(sum(r.quantity) FILTER (WHERE r.kind = 'deployment'), 0) AS hours"  \
    "  FROM usage_records r"                                                                \
    "  WHERE r.org_id = $1 AND r.ended_at >= $2::timestamptz"                               \
    "    AND r.ended_at < $3::timestamptz + interval '1 hour'"                              \
    "    AND " USED_AT(r) " >= $2::timestamptz AND " USED_AT(r) " < $3::timestamptz"          \
    "  GROUP BY 1),"                                                                        \
    " g AS ("                                                                               \
    "  SELECT k, sum(calls)::bigint AS calls, sum(it)::bigint AS it, sum(ot)::bigint AS ot,"\
    "         sum(cost) AS cost, sum(minutes) AS minutes, sum(hours) AS hours"              \
    "  FROM (SELECT k, calls, it, ot, coalesce(cost, 0) AS cost, 0::numeric AS minutes,"    \
    "               0::numeric AS hours FROM priced"                                        \
    "        UNION ALL"                                                                     \
    "        SELECT k, 0, 0, 0, 0, minutes, hours FROM other) x"                            \
    "  GROUP BY k)"

/* The key of a calendar day (UTC) of a time column. */
#define DAY(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD')"

/* The usage columns of one row (or the totals) from g's sums. */
#define USAGE_FIELDS(P)                                                                     \
    "'run_minutes', trim_scale(round(coalesce(" P "minutes, 0), 2)),"                       \
    " 'model_calls', coalesce(" P "calls, 0),"                                              \
    " 'input_tokens', coalesce(" P "it, 0),"                                                \
    " 'output_tokens', coalesce(" P "ot, 0),"                                               \
    " 'model_cost_usd', trim_scale(round(coalesce(" P "cost, 0), 6)),"                      \
    " 'deployment_hours', trim_scale(round(coalesce(" P "hours, 0), 4))"

static const svc_stmt_t st_totals = {
    "svc_billing_totals",
    USAGE_CTES("$4", "0", "0")
    " SELECT coalesce(sum(minutes), 0)::text, coalesce(sum(calls), 0)::text,"
    " coalesce(sum(it), 0)::text, coalesce(sum(ot), 0)::text, coalesce(sum(cost), 0)::text,"
    " coalesce(sum(hours), 0)::text,"
    " EXISTS (SELECT 1 FROM priced WHERE pin IS NULL)"
    " FROM g",
    4, SVC_STMT_READ
};

static const svc_stmt_t st_usage = {
    "svc_billing_usage",
    USAGE_CTES("$5", "CASE $4 WHEN 'day' THEN " DAY("u.created_at") " WHEN 'project' THEN"
               " u.project_id WHEN 'model' THEN u.model ELSE 'model' END",
               "CASE $4 WHEN 'day' THEN " DAY(USED_AT(r)) " WHEN 'project' THEN"
               " r.project_id WHEN 'model' THEN NULL ELSE r.kind END")
    " SELECT json_build_object("
    "  'from', svc_ts($2::timestamptz), 'to', svc_ts($3::timestamptz), 'group_by', $4,"
    "  'currency', 'usd',"
    "  'data', coalesce((SELECT json_agg("
    "      CASE $4 WHEN 'project' THEN jsonb_build_object('project', CASE WHEN g.k IS NOT NULL"
    "        THEN jsonb_build_object('id', g.k, 'slug', pj.slug, 'name', pj.name) END)"
    "      ELSE jsonb_build_object($4, g.k) END"
    "      || jsonb_build_object(" USAGE_FIELDS("g.") ")"
    "    ORDER BY g.k NULLS LAST)"
    "    FROM g LEFT JOIN projects pj ON $4 = 'project' AND pj.id = g.k AND pj.org_id = $1),"
    "   '[]'::json),"
    "  'totals', (SELECT json_build_object(" USAGE_FIELDS("t.") ")"
    "    FROM (SELECT sum(minutes) AS minutes, sum(calls) AS calls, sum(it) AS it,"
    "                 sum(ot) AS ot, sum(cost) AS cost, sum(hours) AS hours FROM g) t),"
    "  'unpriced_models', coalesce((SELECT json_agg(DISTINCT model) FROM priced"
    "    WHERE pin IS NULL), '[]'::json))::text",
    5, SVC_STMT_READ
};

apr_status_t svc_billing_account_get(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                     svc_billing_account_t *a)
{
    svc_dbres_t *res;
    apr_status_t rv;

    memset(a, 0, sizeof(*a));
    a->status = "none";
    a->budget_alerts = "[80,90,100]";
    rv = svc_db_execv(db, &st_account, p, &res, org_id,
                      apr_itoa(p, SVC_BILLING_INVOICE_CACHE_S));
    if (rv != APR_SUCCESS || svc_dbres_rows(res) == 0) {
        return rv;
    }
    a->exists = 1;
    a->customer_id = apr_pstrdup(p, svc_dbres_str(res, 0, 0));
    a->subscription_id = apr_pstrdup(p, svc_dbres_str(res, 0, 1));
    a->plan_id = apr_pstrdup(p, svc_dbres_str(res, 0, 2));
    a->price_id = apr_pstrdup(p, svc_dbres_str(res, 0, 3));
    a->status = apr_pstrdup(p, svc_dbres_str(res, 0, 4));
    a->provider_status = apr_pstrdup(p, svc_dbres_str(res, 0, 5));
    a->period_start = apr_pstrdup(p, svc_dbres_str(res, 0, 6));
    a->period_end = apr_pstrdup(p, svc_dbres_str(res, 0, 7));
    if (!svc_dbres_isnull(res, 0, 8)
        && svc_dbres_int64(res, 0, 8, &a->budget_usd) != APR_SUCCESS) {
        return SVC_EDB;
    }
    a->budget_alerts = apr_pstrdup(p, svc_dbres_str(res, 0, 9));
    a->budget_hard = svc_dbres_bool(res, 0, 10) == 1;
    a->next_invoice = apr_pstrdup(p, svc_dbres_str(res, 0, 11));
    a->next_invoice_fresh = svc_dbres_bool(res, 0, 12) == 1;
    return APR_SUCCESS;
}

apr_status_t svc_billing_customer_store(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                        const char *customer_id, const char **pstored)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_customer_store, p, &res, org_id, customer_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_EDB;
    }
    *pstored = apr_pstrdup(p, svc_dbres_str(res, 0, 0));
    return APR_SUCCESS;
}

/* A numeric column as a double (sums of money and minutes: a double's 15
 * digits are plenty for a display and a comparison). */
static apr_status_t number(const svc_dbres_t *res, int col, double *pv)
{
    const char *s = svc_dbres_str(res, 0, col);
    char *end;

    if (!s) {
        return SVC_EDB;
    }
    *pv = strtod(s, &end);
    return *end ? SVC_EDB : APR_SUCCESS;
}

apr_status_t svc_billing_totals(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                                const char *org_id, const char *from, const char *to,
                                svc_usage_totals_t *t)
{
    svc_dbres_t *res;
    apr_status_t rv;

    memset(t, 0, sizeof(*t));
    rv = svc_db_execv(db, &st_totals, p, &res, org_id, from, to,
                      svc_price_table_json(p, conf));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1
        || number(res, 0, &t->run_minutes) != APR_SUCCESS
        || svc_dbres_int64(res, 0, 1, &t->model_calls) != APR_SUCCESS
        || svc_dbres_int64(res, 0, 2, &t->input_tokens) != APR_SUCCESS
        || svc_dbres_int64(res, 0, 3, &t->output_tokens) != APR_SUCCESS
        || number(res, 4, &t->model_cost_usd) != APR_SUCCESS
        || number(res, 5, &t->deployment_hours) != APR_SUCCESS) {
        return SVC_EDB;
    }
    t->unpriced = svc_dbres_bool(res, 0, 6) == 1;
    return APR_SUCCESS;
}

apr_status_t svc_billing_usage_doc(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                                   const char *org_id, const char *from, const char *to,
                                   const char *group_by, const char **pjson)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_usage, p, &res, org_id, from, to, group_by,
                      svc_price_table_json(p, conf));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1 || svc_dbres_isnull(res, 0, 0)) {
        return SVC_EDB;
    }
    *pjson = svc_dbres_str(res, 0, 0);
    return APR_SUCCESS;
}

void svc_billing_month(apr_pool_t *p, apr_time_t now, const char **pfrom, const char **pto,
                       const char **pmonth)
{
    apr_time_exp_t tm;
    int y, m;

    apr_time_exp_gmt(&tm, now);
    y = tm.tm_year + 1900;
    m = tm.tm_mon + 1;
    *pfrom = apr_psprintf(p, "%04d-%02d-01T00:00:00Z", y, m);
    *pto = m == 12 ? apr_psprintf(p, "%04d-01-01T00:00:00Z", y + 1)
                   : apr_psprintf(p, "%04d-%02d-01T00:00:00Z", y, m + 1);
    if (pmonth) {
        *pmonth = apr_psprintf(p, "%04d-%02d", y, m);
    }
}
