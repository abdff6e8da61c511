/*
 * svc_budget_sweep.c: the run supervisors' budget sweep (svc_billing.h).
 *
 * A file of its own because it answers no request: it opens its
 * transactions with svc_db_tx, one per org, as the supervisor's other work
 * does (tools/check-layers.pl lets it; the budget's handlers write through
 * svc_write).
 */
#include "svc_budget.h"

#include <string.h>

static const svc_stmt_t st_sweep_orgs = {
    "svc_billing_sweep_orgs",
    "SELECT a.org_id FROM billing_accounts a"
    " WHERE a.budget_usd IS NOT NULL AND EXISTS (SELECT 1 FROM model_usage u"
    "   WHERE u.org_id = a.org_id"
    "     AND u.created_at > coalesce(a.budget_checked_at, '-infinity'::timestamptz))"
    " ORDER BY a.budget_checked_at NULLS FIRST LIMIT 100",
    0, SVC_STMT_READ
};

typedef struct {
    const svc_config_t *conf;
    const char *org_id;
    svc_actor_t actor;
    int alerts;
} sweep_t;

static apr_status_t sweep_org(svc_db_t *db, apr_pool_t *p, void *baton)
{
    sweep_t *sw = baton;

    return svc_budget_check(db, p, sw->conf, sw->org_id, &sw->actor, &sw->alerts);
}

apr_status_t svc_billing_sweep(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                               int *palerts)
{
    sweep_t sw;
    svc_dbres_t *res;
    apr_status_t rv;
    int i, total = 0;

    if (palerts) {
        *palerts = 0;
    }
    if ((rv = svc_db_execv(db, &st_sweep_orgs, p, &res)) != APR_SUCCESS) {
        return rv;
    }
    memset(&sw, 0, sizeof(sw));
    sw.conf = conf;
    sw.actor.kind = "system";
    for (i = 0; i < svc_dbres_rows(res); i++) {
        sw.org_id = apr_pstrdup(p, svc_dbres_str(res, i, 0));
        sw.alerts = 0;
        /* One transaction per org: one org's failure holds up no other. */
        if ((rv = svc_db_tx(db, p, sweep_org, &sw)) != APR_SUCCESS) {
            return rv;
        }
        total += sw.alerts;
    }
    if (palerts) {
        *palerts = total;
    }
    return APR_SUCCESS;
}
