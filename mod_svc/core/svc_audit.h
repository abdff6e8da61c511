/*
 * svc_audit.h: the append-only, hash-chained audit log.
 *
 * The database does the chaining (a BEFORE INSERT trigger locks the org's
 * chain, takes the previous entry's hash and computes this one's) and
 * refuses UPDATE, DELETE and TRUNCATE; this file writes entries, in the
 * caller's transaction, so an audited change and its entry commit or roll
 * back together, and serves an org's log and the check of its chain.
 */
#ifndef SVC_AUDIT_H
#define SVC_AUDIT_H

#include "svc_types.h"
#include "svc_db.h"

/* Who did it, from where. */
typedef struct {
    const char *kind;           /* "user", "operator" (svcctl), "system", "provider" */
    const char *user_id;
    const char *token_id;       /* set when the user acted through a PAT */
    const char *ip;
    const char *user_agent;
    const char *request_id;
} svc_actor_t;

/* The actor of an API request. */
void svc_actor_from_ctx(const svc_ctx_t *ctx, svc_actor_t *pactor);

/*
 * Appends one entry. org_id NULL files the entry in the user-level chain.
 * `data` (borrowed, may be NULL) carries before/after or details; it must
 * never hold a secret.
 */
apr_status_t svc_audit_write(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                             const char *org_id, const char *action,
                             const char *target_type, const char *target_id,
                             const json_t *data);

/*
 * Walks a chain (org_id NULL: the user-level chain). *pbroken is the id of
 * the first entry whose link or digest does not hold, or NULL when the
 * chain verifies; *pentries counts the chain's entries.
 */
apr_status_t svc_audit_verify(svc_db_t *db, apr_pool_t *p, const char *org_id,
                              const char **pbroken, apr_int64_t *pentries);

/* Every chain that does not verify, as a JSON array text of
 * {"org_id","first_broken_id"} (for svcctl). */
apr_status_t svc_audit_verify_all(svc_db_t *db, apr_pool_t *p, const char **pjson);

/* Route handlers: an org's log (newest first, filtered) and its check. */
apr_status_t svc_h_audit_list(svc_ctx_t *ctx);
apr_status_t svc_h_audit_verify(svc_ctx_t *ctx);

#endif /* SVC_AUDIT_H */
