/*
 * svc_audit_write.h: the append-only, hash-chained audit log.
 *
 * The database does the chaining (a BEFORE INSERT trigger locks the org's
 * chain, takes the previous entry's hash and computes this one's) and
 * refuses UPDATE, DELETE and TRUNCATE; this file writes entries, in the
 * caller's transaction, so an audited change and its entry commit or roll
 * back together. Reading the log is the audit area's (svc_auditlog.h).
 */
#ifndef SVC_AUDIT_WRITE_H
#define SVC_AUDIT_WRITE_H

#include "svc_ktypes.h"
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
 * Appends one entry to the platform audit log (sql/024): what a platform
 * operator did (a founder through /api/admin, or svcctl), one chain of its
 * own. Otherwise as svc_audit_write; target_type is user, org,
 * vcs_delivery or billing_event.
 */
apr_status_t svc_platform_audit_write(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                                      const char *action, const char *target_type,
                                      const char *target_id, const json_t *data);

/* svc_audit_write for the request's caller (svc_actor_from_ctx) in the org
 * of the request. */
apr_status_t svc_audit_ctx(svc_ctx_t *ctx, svc_db_t *db, const char *action,
                           const char *target_type, const char *target_id,
                           const json_t *data);

/*
 * The entry of a change made by the request's caller in their org, in the
 * caller's transaction: their membership held first (svc_member_hold: a
 * removal meanwhile answers 404, and the audit chain's lock is taken last),
 * then the entry. `data` is taken (NULL: an allocation failed).
 */
apr_status_t svc_audit_member(svc_ctx_t *ctx, svc_db_t *db, const char *action,
                              const char *target_type, const char *target_id, json_t *data);

#endif /* SVC_AUDIT_WRITE_H */
