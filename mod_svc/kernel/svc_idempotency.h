/*
 * svc_idempotency.h: Idempotency-Key on creations (Stripe's semantics): the
 * same key with the same request within 24 hours answers 200 with what the
 * first request made, and Idempotent-Replayed: true; with a different
 * request (another body, caller or scope), 409 idempotency_conflict.
 *
 * Each area keeps its keys in a table of its own, next to what they made
 * (a key claimed in the transaction that makes the object, so simultaneous
 * requests with one key make one object); these are the parts that do not
 * depend on the table.
 */
#ifndef SVC_IDEMPOTENCY_H
#define SVC_IDEMPOTENCY_H

#include "svc_ktypes.h"
#include "svc_ctx.h"
#include "svc_db.h"

/* The request's Idempotency-Key (*pkey NULL without one); a 400 problem
 * unless it is 1 to 255 printable ASCII characters. */
apr_status_t svc_idem_key(svc_ctx_t *ctx, const char **pkey);

/*
 * What makes two requests "the same" for a key: the caller, `scope` (the
 * project, say) and the body with its members in a canonical order,
 * hashed, as a bytea parameter.
 */
const char *svc_idem_fingerprint(svc_ctx_t *ctx, const char *scope);

/* A creation's Idempotency-Key: the key (NULL without one), its
 * fingerprint, and whether an earlier request turned out to hold it. */
typedef struct {
    const char *key, *fp;
    int taken;
} svc_idem_t;

/* Reads the request's key (svc_idem_key: a 400 problem for a malformed one)
 * and, with one, its fingerprint for `scope` (svc_idem_fingerprint). */
apr_status_t svc_idem_begin(svc_ctx_t *ctx, svc_idem_t *idem, const char *scope);

/*
 * In the creation's transaction, once the object `id` is made: claims the
 * key with `claim` ($1 org, $2 key, $3 fingerprint, $4 id; a row back when
 * the key is this request's, none when an earlier request younger than 24
 * hours holds it). Taken: SVC_ECONFLICT with idem->taken set, so that the
 * transaction rolls back and nothing of this request stays. Without a key:
 * APR_SUCCESS.
 */
apr_status_t svc_idem_claim(svc_ctx_t *ctx, svc_db_t *db, svc_idem_t *idem,
                            const svc_stmt_t *claim, const char *id);

/* After the creation's svc_write returned rv: for a key an earlier request
 * took, that request's answer (svc_idem_replay, below); else rv. */
apr_status_t svc_idem_finish(svc_ctx_t *ctx, const svc_idem_t *idem, apr_status_t rv,
                             const svc_stmt_t *key_get, const svc_stmt_t *obj_get);

/*
 * The key was taken by an earlier request: `key_get` ($1 org, $2 key,
 * $3 fingerprint → the object's id, whether the fingerprints match) finds
 * it; the same request gets the object again, 200, read with `obj_get`
 * ($1 id, $2 org → its JSON text); a different one 409
 * idempotency_conflict.
 */
apr_status_t svc_idem_replay(svc_ctx_t *ctx, svc_db_t *db, const svc_stmt_t *key_get,
                             const svc_stmt_t *obj_get, const char *key, const char *fp);

#endif /* SVC_IDEMPOTENCY_H */
