/*
 * svc_deploy.h: the deploy area: deploy targets, deployments, their planner, and the agents' routes.
 * May call base/, the kernel, and the runs, providers, billing and pipeline areas' public headers (billing: a deployment's replica-hours are usage; pipeline: its incidents are improvements); the registry, the glue and svcctl call it here.
 *
 * A deploy target is a machine of the customer's where our agent
 * (svc-agent, mod_svc/agent/) runs, enrolled with the target's key. A
 * deployment puts a succeeded run's artifact on a target: the planner
 * proposes a plan (from the artifact's Procfile, else by asking the org's
 * model), an admin approves it, and the agent carries it out. The agent
 * takes its work as an event stream (events addressed to its target) and
 * answers with POSTs; the service never reaches into a target. Every
 * status change is a deployment.status event on the org's stream and an
 * audit entry. The replicas' time while running is the org's usage
 * (docs/api/billing.md, "Deployment hours"). docs/api/deployments.md.
 */
#ifndef SVC_DEPLOY_H
#define SVC_DEPLOY_H

#include "svc_kernel.h"
#include "svc_runs.h"

/* The area's routes (svc_deploy_routes.c). */
extern const svc_area_t svc_deploy_area;

/*
 * The verifier of agents' keys, for svc_verifiers_t.agent (the registry
 * puts it there): a deploy target's current key (svc_dek_...), looked up
 * afresh on every call; anything else is 401.
 */
apr_status_t svc_deploy_agent_verify(svc_ctx_t *ctx, const char *key, svc_principal_t **pwho);

/*
 * The planner: claims deployments waiting for a plan (status planning) and
 * proposes one for each, until *stop is set. It runs beside the run
 * supervisor, in that process (the glue starts it on a thread of its own),
 * with the supervisor's settings: its connection string, its sandbox (to
 * read an artifact with git) and its configuration (the org's model).
 * Several nodes may run one each: a claim is a lease in PostgreSQL.
 */
void svc_deploy_planner_run(const svc_supervisor_conf_t *sc, volatile sig_atomic_t *stop,
                            apr_pool_t *p);

#endif /* SVC_DEPLOY_H */
