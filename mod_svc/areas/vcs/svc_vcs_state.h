/*
 * svc_vcs_state.h: the `state` of a flow that leaves for the provider and
 * comes back: the setup wizard's (bound to the founder's session) and the
 * install flow's (bound to the user and the org). 256 random bits, kept
 * only as a keyed hash, good for ten minutes and for one return.
 */
#ifndef SVC_VCS_STATE_H
#define SVC_VCS_STATE_H

#include "svc_vcs.h"

#define SVC_VCS_STATE_TTL 600

/* A new state for `purpose` ("manifest": bound to ctx's session; "install":
 * to ctx's user and org_id). *pstate is what goes to the provider. */
apr_status_t svc_vcs_state_new(svc_ctx_t *ctx, svc_db_t *db, const char *purpose,
                               const char *org_id, const char **pstate);

/*
 * Consumes a state, whatever comes next: a state works once. SVC_EPROBLEM
 * with 400 invalid_state when it is missing, unknown, used already,
 * expired, for another purpose, or bound to another user or session.
 * *porg_id is the org an install state was issued for (may be NULL).
 */
apr_status_t svc_vcs_state_take(svc_ctx_t *ctx, svc_db_t *db, const char *purpose,
                                const char *state, const char **porg_id);

#endif /* SVC_VCS_STATE_H */
