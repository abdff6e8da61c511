/*
 * svc_write.h: how a handler writes, the only way it does.
 *
 * A write is one transaction that holds the change AND the answer:
 *
 *     BEGIN -> the change -> the answer, built -> COMMIT
 *
 * in that order, and anything that fails on the way rolls everything back.
 * The answer is built before COMMIT because a read after it could fail (a
 * lock, a restart) and answer "try again" (503) for a change that is saved;
 * built inside, a failure anywhere leaves nothing saved, and the 503 is
 * true. The reverse holds as well: when COMMIT fails, the answer that was
 * built is thrown away, and the request answers with the failure.
 *
 *     static apr_status_t rename_org(svc_ctx_t *ctx, svc_db_t *db, void *baton)
 *     {
 *         ... svc_db_execv(db, &st_rename, ...), svc_audit_member(ctx, db, ...) ...
 *         ... read the org as it is now, in this transaction ...
 *         return svc_reply_text(ctx, 200, json);
 *     }
 *
 *     apr_status_t svc_h_orgs_update(svc_ctx_t *ctx)
 *     {
 *         ... checks that need no transaction ...
 *         return svc_write(ctx, rename_org, NULL);
 *     }
 *
 * It is built on base's svc_db_tx (svc_db.h), which svcctl, migrations and
 * the run supervisor use directly (they answer no request).
 * tools/check-layers.pl fails the build on a handler that calls svc_db_tx,
 * or on any code that sends BEGIN, COMMIT or ROLLBACK by hand.
 */
#ifndef SVC_WRITE_H
#define SVC_WRITE_H

#include "svc_ktypes.h"
#include "svc_ctx.h"
#include "svc_db.h"

/*
 * The change and its answer. Runs its statements on db (the request's
 * connection, in the transaction) and sets the answer with one of the
 * svc_reply_* functions before it returns APR_SUCCESS; returning without an
 * answer is a bug (500, nothing saved). Any other status rolls back and is
 * the request's answer (svc_fail's problems included). It never gives the
 * connection back (svc_ctx_db_release fails inside a write): a slow call
 * belongs before svc_write.
 */
typedef apr_status_t (*svc_write_fn)(svc_ctx_t *ctx, svc_db_t *db, void *baton);

/*
 * Runs fn in one transaction (see above) and returns what came of it:
 * APR_SUCCESS when the change and its answer are committed. From then on
 * the answer is final: the svc_reply_* functions refuse to change it
 * (APR_EGENERAL), so the handler returns APR_SUCCESS and does nothing that
 * could fail. On failure nothing is saved and nothing of fn's answer
 * remains (its headers neither); the handler returns the status, or, when
 * fn said there was nothing to change (a status of its own choosing),
 * answers otherwise.
 */
apr_status_t svc_write(svc_ctx_t *ctx, svc_write_fn fn, void *baton);

#endif /* SVC_WRITE_H */
