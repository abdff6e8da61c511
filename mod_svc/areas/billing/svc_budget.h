/*
 * svc_budget.h: what the budget's handlers and the supervisors' sweep
 * (svc_budget_sweep.c) share, inside the billing area.
 */
#ifndef SVC_BUDGET_H
#define SVC_BUDGET_H

#include "svc_billing.h"

/*
 * The org's month spend against its budget, in the caller's transaction:
 * each alert level reached for the first time this month is written, with
 * an audit entry (by `actor`) and a billing.budget event (last: it takes
 * the org's event lock). *pnew counts them. The account row is locked
 * first, so a budget changed at the same moment is seen as it ends up.
 */
apr_status_t svc_budget_check(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                              const char *org_id, const svc_actor_t *actor, int *pnew);

#endif /* SVC_BUDGET_H */
