/*
 * svc_idempotency.c: the table-independent parts of Idempotency-Key
 * (svc_idempotency.h).
 */
#include "svc_idempotency.h"
#include "svc_route.h"
#include "svc_crypto.h"
#include "svc_json.h"
#include "svc_redact.h"

#include <string.h>

apr_status_t svc_idem_key(svc_ctx_t *ctx, const char **pkey)
{
    const char *key = apr_table_get(ctx->headers_in, "Idempotency-Key");
    apr_size_t n = key ? strlen(key) : 0;
    const char *c;

    *pkey = key;
    /* The document says which routes honour the key from their flag: a
     * handler that reads it on another route is a mistake of ours, not a
     * key to ignore. */
    if (!ctx->route || !(ctx->route->flags & SVC_RF_IDEMPOTENT)) {
        *pkey = NULL;
        return svc_fail(ctx, 500, "internal_error", "Idempotency-Key is read on a route that "
                        "does not declare it (SVC_RF_IDEMPOTENT).");
    }
    if (!key) {
        return APR_SUCCESS;
    }
    for (c = key; *c && *c >= 0x20 && *c <= 0x7e; c++) {
    }
    if (n < 1 || n > 255 || *c) {
        svc_fail_field(ctx, "Idempotency-Key", "invalid_value", "Idempotency-Key must be 1 to "
                       "255 printable ASCII characters.");
        return SVC_EPROBLEM;
    }
    return APR_SUCCESS;
}

const char *svc_idem_fingerprint(svc_ctx_t *ctx, const char *scope)
{
    char *body = ctx->body ? json_dumps(ctx->body, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    const char *text = apr_pstrcat(ctx->pool, ctx->who->user_id, "\n", scope ? scope : "", "\n",
                                   body ? body : "", NULL);
    unsigned char digest[32];

    free(body);
    svc_sha256(digest, (const unsigned char *)text, strlen(text));
    return svc_bytea_param(ctx->pool, digest, sizeof(digest));
}

apr_status_t svc_idem_replay(svc_ctx_t *ctx, svc_db_t *db, const svc_stmt_t *key_get,
                             const svc_stmt_t *obj_get, const char *key, const char *fp)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, key_get, ctx->pool, &res, ctx->org->id, key, fp);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        /* What it made was deleted since, freeing the key, while this
         * request was made; the client may simply send it again. */
        return svc_fail(ctx, 409, "conflict", "The Idempotency-Key was released while this "
                        "request was made; send it again.");
    }
    if (svc_dbres_bool(res, 0, 1) != 1) {
        return svc_fail(ctx, 409, "idempotency_conflict", "The Idempotency-Key %s was used "
                        "in the last 24 hours for a different request (another body, "
                        "project or caller).", svc_printable(ctx->pool, key, 64));
    }
    rv = svc_db_execv(db, obj_get, ctx->pool, &res, svc_dbres_str(res, 0, 0), ctx->org->id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        return SVC_ENOTFOUND;
    }
    apr_table_setn(ctx->headers_out, "Idempotent-Replayed", "true");
    return svc_reply_text(ctx, 200, svc_dbres_str(res, 0, 0));
}

apr_status_t svc_idem_begin(svc_ctx_t *ctx, svc_idem_t *idem, const char *scope)
{
    apr_status_t rv;

    memset(idem, 0, sizeof(*idem));
    if ((rv = svc_idem_key(ctx, &idem->key)) == APR_SUCCESS && idem->key) {
        idem->fp = svc_idem_fingerprint(ctx, scope);
    }
    return rv;
}

apr_status_t svc_idem_claim(svc_ctx_t *ctx, svc_db_t *db, svc_idem_t *idem,
                            const svc_stmt_t *claim, const char *id)
{
    svc_dbres_t *res;
    apr_status_t rv;

    if (!idem->key) {
        return APR_SUCCESS;
    }
    rv = svc_db_execv(db, claim, ctx->pool, &res, ctx->org->id, idem->key, idem->fp, id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        /* Taken: nothing of this request stays; the first is answered. */
        idem->taken = 1;
        return SVC_ECONFLICT;
    }
    return APR_SUCCESS;
}

apr_status_t svc_idem_finish(svc_ctx_t *ctx, const svc_idem_t *idem, apr_status_t rv,
                             const svc_stmt_t *key_get, const svc_stmt_t *obj_get)
{
    svc_db_t *db;

    if (rv != SVC_ECONFLICT || !idem->taken) {
        return rv;
    }
    /* The same request gets what the first made (200), another a 409. */
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    return svc_idem_replay(ctx, db, key_get, obj_get, idem->key, idem->fp);
}
