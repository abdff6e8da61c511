/*
 * svc_budget.c: budgets and hard limits (svc_billing.h, svc_billing_api.h):
 * an org's monthly budget for model spend and its alerts, what is written
 * when spend crosses them (at once when a budget is set below the spend;
 * else by the supervisors' sweep, svc_budget_sweep.c), and the admission
 * check the areas that start spending call first.
 */
#include "svc_billing_api.h"
#include "svc_billing_store.h"
#include "svc_budget.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How far back a sweep looks again: a call recorded in a transaction that
 * began before the last check but committed after it carries the earlier
 * time. Looking again costs one sum per org; an alert is written once. */
#define SWEEP_OVERLAP_S 60

const svc_field_t svc_body_billing_budget[] = {
    { .name = "monthly_usd", .type = SVC_FT_INT, .required = 1, .nullable = 1, .min = 1,
      .max = 100000000,
      .description = "Model spend allowed per calendar month (UTC), in whole US dollars; "
        "null removes the budget." },
    { .name = "alerts", .type = SVC_FT_INTS, .min = 1, .max = 100,
      .description = "Percentages of the budget at which an alert is sent once a month "
        "(a billing.budget event and an audit entry); default [80, 90, 100]." },
    { .name = "hard", .type = SVC_FT_BOOL,
      .description = "At 100 %, refuse new runs, regenerations, patches and build tasks "
        "(402 budget_exceeded); running ones finish. Default false." },
    SVC_FIELD_END
};

static const svc_stmt_t st_budget_lock = {
    "svc_billing_budget_lock",
    "SELECT budget_usd::text, array_to_json(budget_alerts)::text, budget_hard"
    " FROM billing_accounts WHERE org_id = $1 FOR UPDATE",
    1, 0
};

static const svc_stmt_t st_budget_set = {
    "svc_billing_budget_set",
    "INSERT INTO billing_accounts AS a (org_id, budget_usd, budget_alerts, budget_hard)"
    " VALUES ($1, $2::bigint, ARRAY(SELECT DISTINCT x::int FROM"
    "         json_array_elements_text($3::json) AS x ORDER BY 1), $4::boolean)"
    " ON CONFLICT (org_id) DO UPDATE SET budget_usd = EXCLUDED.budget_usd,"
    "  budget_alerts = EXCLUDED.budget_alerts, budget_hard = EXCLUDED.budget_hard,"
    "  updated_at = now()",
    4, 0
};

static const svc_stmt_t st_alert_insert = {
    "svc_billing_alert_insert",
    "INSERT INTO billing_budget_alerts (org_id, month, level, budget_usd, spend_usd)"
    " VALUES ($1, $2::date, $3::int, $4::bigint, $5::numeric)"
    " ON CONFLICT DO NOTHING RETURNING level",
    5, 0
};

static const svc_stmt_t st_alerted = {
    "svc_billing_alerted",
    "SELECT coalesce(json_agg(level ORDER BY level), '[]'::json)::text"
    " FROM billing_budget_alerts WHERE org_id = $1 AND month = $2::date",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_checked = {
    "svc_billing_budget_checked",
    "UPDATE billing_accounts SET budget_checked_at = now() - make_interval(secs => $2::int)"
    " WHERE org_id = $1",
    2, 0
};

static const svc_stmt_t st_record_usage = {
    "svc_billing_record_usage",
    "INSERT INTO usage_records (org_id, project_id, kind, subject_id, quantity, started_at,"
    " ended_at) VALUES ($1, $2, $3, $4, $5::numeric, $6::timestamptz, $7::timestamptz)"
    " ON CONFLICT ON CONSTRAINT usage_records_once DO NOTHING RETURNING id",
    7, 0
};

/* Dollars to the cent, as messages and events show them. */
static double cents(double usd)
{
    return floor(usd * 100 + 0.5) / 100;
}

/* ------------------------------------------------------------------------ */
/* Crossing the alert levels                                                */

apr_status_t svc_budget_check(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                              const char *org_id, const svc_actor_t *actor, int *pnew)
{
    const char *from, *to, *month;
    apr_array_header_t *fresh = apr_array_make(p, 4, sizeof(int));
    svc_usage_totals_t t;
    svc_dbres_t *res, *ins;
    json_t *levels;
    apr_int64_t budget;
    json_error_t jerr;
    double percent;
    size_t i;
    int hard, j;
    apr_status_t rv;

    *pnew = 0;
    if ((rv = svc_db_execv(db, &st_budget_lock, p, &res, org_id)) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1 || svc_dbres_isnull(res, 0, 0)) {
        return svc_db_execv(db, &st_checked, p, NULL, org_id, apr_itoa(p, SWEEP_OVERLAP_S));
    }
    if (svc_dbres_int64(res, 0, 0, &budget) != APR_SUCCESS) {
        return SVC_EDB;
    }
    levels = svc_json_pool(p, json_loads(svc_dbres_str(res, 0, 1), 0, &jerr));
    hard = svc_dbres_bool(res, 0, 2) == 1;
    svc_billing_month(p, apr_time_now(), &from, &to, &month);
    if ((rv = svc_billing_totals(db, p, conf, org_id, from, to, &t)) != APR_SUCCESS) {
        return rv;
    }
    percent = t.model_cost_usd * 100.0 / (double)budget;
    for (i = 0; i < json_array_size(levels); i++) {
        json_int_t level = json_integer_value(json_array_get(levels, i));
        if (level < 1 || percent < (double)level) {
            continue;
        }
        rv = svc_db_execv(db, &st_alert_insert, p, &ins, org_id, apr_pstrcat(p, month, "-01",
                                                                              NULL),
                          apr_psprintf(p, "%" APR_INT64_T_FMT, (apr_int64_t)level),
                          apr_psprintf(p, "%" APR_INT64_T_FMT, budget),
                          apr_psprintf(p, "%.6f", t.model_cost_usd));
        if (rv != APR_SUCCESS) {
            return rv;
        }
        if (svc_dbres_rows(ins) == 1) {
            APR_ARRAY_PUSH(fresh, int) = (int)level;
        }
    }
    for (j = 0; j < fresh->nelts; j++) {
        int level = APR_ARRAY_IDX(fresh, j, int);
        rv = svc_audit_write(db, p, actor, org_id, "billing.budget.alert", "org", org_id,
                             svc_json_pool(p, json_pack("{s:i,s:s,s:I,s:f,s:b}", "level",
                                                        level, "month", month, "monthly_usd",
                                                        (json_int_t)budget, "spend_usd",
                                                        cents(t.model_cost_usd), "hard",
                                                        hard)));
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    if ((rv = svc_db_execv(db, &st_checked, p, NULL, org_id, apr_itoa(p, SWEEP_OVERLAP_S)))
        != APR_SUCCESS) {
        return rv;
    }
    for (j = 0; j < fresh->nelts; j++) {
        int level = APR_ARRAY_IDX(fresh, j, int);
        rv = svc_event_emit(db, p, org_id, NULL, NULL, "billing.budget",
                            svc_json_pool(p, json_pack("{s:i,s:s,s:I,s:f,s:f,s:b,s:b}",
                                                       "level", level, "month", month,
                                                       "monthly_usd", (json_int_t)budget,
                                                       "spend_usd", cents(t.model_cost_usd),
                                                       "percent", floor(percent * 10) / 10,
                                                       "hard", hard,
                                                       "exceeded", percent >= 100.0)));
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    *pnew = fresh->nelts;
    return APR_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* The budget's routes                                                      */

/* The budget as GET and PUT answer it, read through db (in the PUT's
 * transaction after the change). */
static apr_status_t budget_doc(svc_ctx_t *ctx, svc_db_t *db, json_t **pdoc)
{
    const char *from, *to, *month;
    svc_billing_account_t a;
    svc_usage_totals_t t;
    json_t *alerts, *alerted;
    json_error_t jerr;
    svc_dbres_t *res;
    apr_status_t rv;

    svc_billing_month(ctx->pool, apr_time_now(), &from, &to, &month);
    if ((rv = svc_billing_account_get(db, ctx->pool, ctx->org->id, &a)) != APR_SUCCESS
        || (rv = svc_billing_totals(db, ctx->pool, ctx->conf, ctx->org->id, from, to, &t))
           != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_alerted, ctx->pool, &res, ctx->org->id,
                              apr_pstrcat(ctx->pool, month, "-01", NULL))) != APR_SUCCESS) {
        return rv;
    }
    alerts = json_loads(a.budget_alerts, 0, &jerr);
    alerted = json_loads(svc_dbres_str(res, 0, 0), 0, &jerr);
    if (!alerts || !alerted) {
        json_decref(alerts);
        json_decref(alerted);
        return SVC_EDB;
    }
    *pdoc = json_pack("{s:o,s:o,s:b,s:s,s:f,s:o,s:o,s:b,s:b}",
                      "monthly_usd", a.budget_usd ? json_integer(a.budget_usd) : json_null(),
                      "alerts", alerts, "hard", a.budget_hard, "month", month,
                      "spend_usd", floor(t.model_cost_usd * 1e6 + 0.5) / 1e6,
                      "percent", a.budget_usd
                                 ? json_real(floor(t.model_cost_usd * 1000.0
                                                   / (double)a.budget_usd) / 10)
                                 : json_null(),
                      "alerted", alerted,
                      "exceeded", a.budget_usd && t.model_cost_usd >= (double)a.budget_usd,
                      "unpriced_models", t.unpriced);
    return *pdoc ? APR_SUCCESS : APR_ENOMEM;
}

apr_status_t svc_h_billing_budget_get(svc_ctx_t *ctx)
{
    json_t *doc;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = budget_doc(ctx, db, &doc)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_json(ctx, 200, doc);
}

/* The budget set, audited, its alerts checked, and the answer: one write. */
static apr_status_t set_budget(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    json_t *usd = json_object_get(ctx->body, "monthly_usd");
    json_t *alerts = baton;
    json_t *hard = json_object_get(ctx->body, "hard");
    json_t *before = NULL, *after = NULL;
    svc_actor_t actor;
    apr_status_t rv;
    int n;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_ADMIN, SVC_PROLE_NONE)) != APR_SUCCESS
        || (rv = budget_doc(ctx, db, &before)) != APR_SUCCESS) {
        return rv;
    }
    svc_json_pool(ctx->pool, before);
    rv = svc_db_execv(db, &st_budget_set, ctx->pool, NULL, ctx->org->id,
                      json_is_integer(usd)
                      ? apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT,
                                     (apr_int64_t)json_integer_value(usd))
                      : NULL,
                      svc_json_dump(ctx->pool, alerts), json_is_true(hard) ? "true" : "false");
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = svc_audit_ctx(ctx, db, "billing.budget.updated", "org",
                       ctx->org->id,
                       svc_json_pool(ctx->pool,
                                     json_pack("{s:{s:O,s:O,s:O},s:{s:O,s:O,s:b}}",
                                               "before", "monthly_usd",
                                               json_object_get(before, "monthly_usd"),
                                               "alerts", json_object_get(before, "alerts"),
                                               "hard", json_object_get(before, "hard"),
                                               "after", "monthly_usd",
                                               usd ? usd : json_null(), "alerts", alerts,
                                               "hard", json_is_true(hard))));
    /* A budget set below what is spent already alerts now, not at the
     * next sweep. */
    svc_actor_from_ctx(ctx, &actor);
    if (rv != APR_SUCCESS
        || (rv = svc_budget_check(db, ctx->pool, ctx->conf, ctx->org->id, &actor, &n))
           != APR_SUCCESS
        || (rv = budget_doc(ctx, db, &after)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_json(ctx, 200, after);
}

apr_status_t svc_h_billing_budget_put(svc_ctx_t *ctx)
{
    json_t *alerts = json_object_get(ctx->body, "alerts");

    if (!alerts || json_is_null(alerts)) {
        alerts = svc_json_pool(ctx->pool, json_pack("[iii]", 80, 90, 100));
    }
    if (json_array_size(alerts) > 10) {
        return svc_fail(ctx, 400, "validation_failed", "alerts has at most 10 levels.");
    }
    return svc_write(ctx, set_budget, alerts);
}

/* ------------------------------------------------------------------------ */
/* Admission                                                                */

/* The 402 of an allowance used up. */
static apr_status_t exceeded(svc_ctx_t *ctx, const char *what)
{
    return svc_fail(ctx, 402, "budget_exceeded", "%s New runs, regenerations, patches and "
                    "build tasks are refused until then; what is running finishes.", what);
}

apr_status_t svc_billing_admit(svc_ctx_t *ctx)
{
    const char *from, *to, *month;
    const svc_billing_plan_t *pl;
    svc_billing_account_t a;
    svc_usage_totals_t t;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_billing_account_get(db, ctx->pool, ctx->org->id, &a)) != APR_SUCCESS
        || !a.exists) {
        return rv;
    }
    if (a.budget_hard && a.budget_usd) {
        svc_billing_month(ctx->pool, apr_time_now(), &from, &to, &month);
        if ((rv = svc_billing_totals(db, ctx->pool, ctx->conf, ctx->org->id, from, to, &t))
            != APR_SUCCESS) {
            return rv;
        }
        if (t.model_cost_usd >= (double)a.budget_usd) {
            return exceeded(ctx, apr_psprintf(ctx->pool, "The organization's monthly budget "
                                              "of $%" APR_INT64_T_FMT " for model spend is "
                                              "used up ($%.2f in %s): an admin raises it "
                                              "(PUT /api/orgs/%s/billing/budget), or it starts "
                                              "again next month.", a.budget_usd,
                                              cents(t.model_cost_usd), month, ctx->org->slug));
        }
    }
    pl = svc_billing_plan(ctx->conf, a.plan_id);
    if (!pl || !pl->hard
        || (strcmp(a.status, "active") != 0 && strcmp(a.status, "past_due") != 0)) {
        return APR_SUCCESS;
    }
    if (a.period_start && a.period_end) {
        from = a.period_start;
        to = a.period_end;
    }
    else {
        svc_billing_month(ctx->pool, apr_time_now(), &from, &to, &month);
    }
    if ((rv = svc_billing_totals(db, ctx->pool, ctx->conf, ctx->org->id, from, to, &t))
        != APR_SUCCESS) {
        return rv;
    }
    {
        const char *what = NULL;
        if (pl->run_minutes >= 0 && t.run_minutes >= (double)pl->run_minutes) {
            what = apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT " run minutes (%.1f used)",
                                pl->run_minutes, t.run_minutes);
        }
        else if (pl->model_tokens >= 0
                 && t.input_tokens + t.output_tokens >= pl->model_tokens) {
            what = apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT " model tokens (%"
                                APR_INT64_T_FMT " used)", pl->model_tokens,
                                t.input_tokens + t.output_tokens);
        }
        else if (pl->deployment_hours >= 0
                 && t.deployment_hours >= (double)pl->deployment_hours) {
            what = apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT " deployment hours (%.1f used)",
                                pl->deployment_hours, t.deployment_hours);
        }
        if (what) {
            return exceeded(ctx, apr_psprintf(ctx->pool, "The %s plan's allowance of %s for "
                                              "this period (to %s) is used up, and the plan's "
                                              "limits are hard: an admin changes the plan "
                                              "(POST /api/orgs/%s/billing/portal), or it "
                                              "starts again with the next period.", pl->name,
                                              what, to, ctx->org->slug));
        }
    }
    return APR_SUCCESS;
}

apr_status_t svc_billing_record_usage(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                      const char *project_id, const char *kind,
                                      const char *subject_id, double quantity,
                                      const char *started, const char *ended, int *precorded)
{
    svc_dbres_t *res;
    apr_status_t rv;

    *precorded = 0;
    if (quantity < 0 || quantity != quantity) {
        return APR_EINVAL;
    }
    rv = svc_db_execv(db, &st_record_usage, p, &res, org_id, project_id, kind, subject_id,
                      apr_psprintf(p, "%.6f", quantity), started, ended);
    if (rv == APR_SUCCESS) {
        *precorded = svc_dbres_rows(res) == 1;
    }
    return rv;
}
