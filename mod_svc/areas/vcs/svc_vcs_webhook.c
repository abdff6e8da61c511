/*
 * svc_vcs_webhook.c: the provider's webhook. Every delivery is verified
 * over the exact bytes received before anything is parsed, recorded once
 * under its delivery id, and its effect applied in the same transaction:
 * a replay changes nothing. A delivery whose processing failed is kept,
 * as failed, with why (after its transaction rolled back): the provider's
 * redelivery, or an operator's, processes it again.
 */
#include "svc_vcs_webhook.h"
#include "svc_vcs_app.h"
#include "svc_vcs_installs.h"
#include "svc_vcs_tokens.h"

#include <apr_lib.h>
#include <string.h>

/* A delivery recorded before whose processing failed is processed again
 * (the provider's redelivery): one more attempt. */
static const svc_stmt_t st_wh_record = {
    "svc_vcs_wh_record",
    "INSERT INTO vcs_webhook_deliveries AS d (delivery_id, event, action, installation_id,"
    " payload, last_attempt_at)"
    " VALUES ($1, $2, $3, $4::bigint, $5::jsonb, now())"
    " ON CONFLICT (delivery_id) DO UPDATE SET status = 'processed', last_error = NULL,"
    " attempts = d.attempts + 1, last_attempt_at = now() WHERE d.status = 'failed'"
    " RETURNING seq",
    5, 0
};

/*
 * A delivery whose processing failed, kept for a redelivery: on its own,
 * after the transaction that tried it rolled back (SVC_STMT_ALONE). A
 * delivery processed meanwhile (by a concurrent redelivery) stays so.
 */
static const svc_stmt_t st_wh_failed = {
    "svc_vcs_wh_failed",
    "INSERT INTO vcs_webhook_deliveries AS d (delivery_id, event, action, installation_id,"
    " payload, status, last_error, last_attempt_at)"
    " VALUES ($1, $2, $3, $4::bigint, $5::jsonb, 'failed', $6, now())"
    " ON CONFLICT (delivery_id) DO UPDATE SET last_error = $6, attempts = d.attempts + 1,"
    " last_attempt_at = now() WHERE d.status = 'failed'",
    6, SVC_STMT_ALONE
};

/* An operator's redelivery: the recorded delivery, locked. */
static const svc_stmt_t st_wh_take = {
    "svc_vcs_wh_take",
    "SELECT event, action, installation_id, payload::text, status, attempts"
    " FROM vcs_webhook_deliveries WHERE delivery_id = $1 FOR UPDATE",
    1, 0
};

static const svc_stmt_t st_wh_get_raw = {
    "svc_vcs_wh_get_raw",
    "SELECT event, action, installation_id, payload::text FROM vcs_webhook_deliveries"
    " WHERE delivery_id = $1",
    1, SVC_STMT_READ
};

static const svc_stmt_t st_wh_done = {
    "svc_vcs_wh_done",
    "UPDATE vcs_webhook_deliveries SET status = 'processed', last_error = NULL,"
    " attempts = attempts + 1, last_attempt_at = now() WHERE delivery_id = $1"
    " RETURNING delivery_id, event, action, installation_id, received_at, status, attempts,"
    " last_error, last_attempt_at",
    1, SVC_STMT_BINARY
};

/*
 * A status the provider reports. An unlinked record is the org's decision
 * and stays so; an installation deleted at the provider stays suspended
 * whatever comes after.
 */
static const svc_stmt_t st_wh_status = {
    "svc_vcs_wh_status",
    "UPDATE vcs_installations i SET status = $2,"
    " deleted_at = CASE WHEN $3::boolean THEN coalesce(i.deleted_at, now())"
    "              ELSE i.deleted_at END,"
    " updated_at = now()"
    " WHERE i.installation_id = $1::bigint AND i.status <> 'unlinked'"
    " AND (i.status <> $2 OR ($3::boolean AND i.deleted_at IS NULL))"
    " AND NOT ($2 = 'active' AND i.deleted_at IS NOT NULL)"
    " RETURNING i.org_id, i.account_login",
    3, 0
};

static const svc_stmt_t st_wh_created = {
    "svc_vcs_wh_created",
    "UPDATE vcs_installations SET repository_selection = $2, repositories = $3::jsonb,"
    " updated_at = now()"
    " WHERE installation_id = $1::bigint AND status <> 'unlinked'",
    3, 0
};

/* The selection's list: what was added ($3) joins it, what was removed
 * ($4) leaves it, each repository once, by id. */
static const svc_stmt_t st_wh_repos = {
    "svc_vcs_wh_repos",
    "UPDATE vcs_installations i SET"
    " repository_selection = coalesce($2, i.repository_selection),"
    " repositories = (SELECT coalesce(jsonb_agg(s.r ORDER BY s.r->>'full_name'), '[]'::jsonb)"
    "   FROM (SELECT DISTINCT ON (e.r->>'id') e.r"
    "         FROM jsonb_array_elements(i.repositories || $3::jsonb) AS e(r)"
    "         WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements($4::jsonb) AS x(r)"
    "                           WHERE x.r->>'id' = e.r->>'id')) s),"
    " updated_at = now()"
    " WHERE i.installation_id = $1::bigint AND i.status <> 'unlinked'",
    4, 0
};

static const svc_col_t delivery_item[] = {
    { .key = "delivery_id", .type = SVC_COL_TEXT, .example = "72d3162e-cc78-11e3-81ab-4c9367dc0958",
      .description = "The provider's X-GitHub-Delivery." },
    { .key = "event", .type = SVC_COL_TEXT, .example = "installation" },
    { .key = "action", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "created" },
    { .key = "installation_id", .type = SVC_COL_INT, .flags = SVC_COL_NULL },
    { .key = "received_at", .type = SVC_COL_TIME },
    SVC_COLS_ATTEMPTS,
    SVC_COL_END
};

const svc_schema_t svc_schema_delivery = { .name = "VcsDelivery", .keys = delivery_item,
    .description = "A webhook delivery the service recorded (docs/api/vcs.md)." };

const svc_schema_t svc_schema_delivery_detail = { .name = "VcsDeliveryDetail",
    .description = "A recorded delivery with its payload, as the provider sent it.",
    .keys = (const svc_col_t[]) {
        { .key = "payload", .type = SVC_COL_OBJECT, .description = "The event's body." },
        SVC_COL_END
    },
    .base = &svc_schema_delivery
};

const svc_schema_t svc_schema_delivery_receipt = { .name = "VcsDeliveryReceipt",
    .description = "What the webhook did with a delivery.",
    .keys = (const svc_col_t[]) {
        { .key = "status", .type = SVC_COL_TEXT, .values = SVC_VALUES("accepted", "duplicate"),
          .description = "accepted (202): applied; duplicate (200): seen before, nothing done." },
        { .key = "delivery_id", .type = SVC_COL_TEXT },
        SVC_COL_END
    }
};

static const svc_stmt_t st_wh_list = {
    "svc_vcs_wh_list",
    "SELECT seq, delivery_id, event, action, installation_id, received_at, status, attempts,"
    " last_error, last_attempt_at"
    " FROM vcs_webhook_deliveries WHERE seq < $1::bigint ORDER BY seq DESC LIMIT $2::int",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_wh_get = {
    "svc_vcs_wh_get",
    "SELECT json_build_object('delivery_id', delivery_id, 'event', event, 'action', action,"
    " 'installation_id', installation_id, 'received_at', svc_ts(received_at),"
    " 'status', status, 'attempts', attempts, 'last_error', last_error,"
    " 'last_attempt_at', svc_ts(last_attempt_at),"
    " 'payload', payload)::text FROM vcs_webhook_deliveries WHERE delivery_id = $1",
    1, SVC_STMT_READ
};

int svc_vcs_signature_ok(apr_pool_t *p, const char *secret, apr_size_t secret_len,
                         const char *header, const char *body, apr_size_t len)
{
    unsigned char mac[32];
    char given[65];
    const char *want;
    int i;

    if (!header || strncmp(header, "sha256=", 7) != 0 || strlen(header + 7) != 64) {
        return 0;
    }
    for (i = 0; i < 64; i++) {
        given[i] = (char)apr_tolower(header[7 + i]);
    }
    given[64] = '\0';
    svc_hmac_sha256(mac, (const unsigned char *)secret, secret_len,
                    (const unsigned char *)body, len);
    want = svc_hex(p, mac, sizeof(mac));
    return svc_ct_equal(want, given, 64);
}

json_t *svc_vcs_repo_list(apr_pool_t *p, const json_t *arr)
{
    json_t *out = svc_json_pool(p, json_array()), *r;
    size_t i;

    json_array_foreach(arr, i, r) {
        json_t *id = json_object_get(r, "id");
        const char *full_name = svc_json_str(r, "full_name");
        if (json_is_integer(id) && full_name && strlen(full_name) <= 201) {
            json_array_append_new(out, json_pack("{s:I,s:s,s:b}", "id", json_integer_value(id),
                                                 "full_name", full_name, "private",
                                                 json_is_true(json_object_get(r, "private"))));
        }
    }
    return out;
}

static apr_status_t set_status(svc_ctx_t *ctx, svc_db_t *db, apr_int64_t id,
                               const char *status, int deleted, const char *action)
{
    svc_actor_t actor;
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_wh_status, ctx->pool, &res,
                      apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT, id), status,
                      deleted ? "true" : "false");
    if (rv != APR_SUCCESS || svc_dbres_rows(res) != 1) {
        return rv;
    }
    /* Whatever this process still holds for it is of no use any more. */
    svc_vcs_token_forget(id);
    svc_actor_from_ctx(ctx, &actor);
    actor.kind = "provider";
    return svc_vcs_installation_changed(db, ctx->pool, &actor, svc_dbres_str(res, 0, 0), id,
                                        action, status, svc_dbres_str(res, 0, 1),
                                        svc_json_pool(ctx->pool,
                                                      json_pack("{s:b}", "deleted", deleted)));
}

/* What a delivery changes. Events other than these are recorded only. */
static apr_status_t apply(svc_ctx_t *ctx, svc_db_t *db, const char *event, const char *action,
                          const json_t *doc, apr_int64_t id)
{
    const char *idtext = apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT, id);
    const char *selection = svc_json_str(json_object_get(doc, "installation"),
                                         "repository_selection");

    if (!id || !action) {
        return APR_SUCCESS;
    }
    if (selection && strcmp(selection, "all") && strcmp(selection, "selected")) {
        selection = NULL;
    }
    if (strcmp(event, "installation") == 0) {
        if (strcmp(action, "deleted") == 0) {
            return set_status(ctx, db, id, "suspended", 1, "vcs.installation.deleted");
        }
        if (strcmp(action, "suspend") == 0) {
            return set_status(ctx, db, id, "suspended", 0, "vcs.installation.suspended");
        }
        if (strcmp(action, "unsuspend") == 0) {
            return set_status(ctx, db, id, "active", 0, "vcs.installation.unsuspended");
        }
        if (strcmp(action, "created") == 0 && selection) {
            /* Known only when the install callback came first. */
            return svc_db_execv(db, &st_wh_created, ctx->pool, NULL, idtext, selection,
                                svc_json_dump(ctx->pool,
                                              svc_vcs_repo_list(ctx->pool,
                                                        json_object_get(doc, "repositories"))));
        }
        return APR_SUCCESS;
    }
    if (strcmp(event, "installation_repositories") == 0
        && (strcmp(action, "added") == 0 || strcmp(action, "removed") == 0)) {
        return svc_db_execv(db, &st_wh_repos, ctx->pool, NULL, idtext, selection,
                            svc_json_dump(ctx->pool,
                                          svc_vcs_repo_list(ctx->pool, json_object_get(
                                                                   doc, "repositories_added"))),
                            svc_json_dump(ctx->pool,
                                          svc_vcs_repo_list(ctx->pool, json_object_get(
                                                                   doc, "repositories_removed"))));
    }
    return APR_SUCCESS;
}

/*
 * The processing of a delivery failed and rolled back: the delivery is
 * kept as failed, with why, for a redelivery (by an operator or the
 * provider). What the request's answer says (a refusal of ours, below 500)
 * is no failure to keep. Best effort: when even this cannot be written
 * (the database is away), the provider's own retry is what is left.
 */
static void keep_failed(svc_ctx_t *ctx, apr_status_t rv, const char *delivery,
                        const char *event, const char *action, apr_int64_t installation,
                        const char *payload)
{
    const char *why = svc_ctx_failure_why(ctx, rv);
    svc_db_t *db;

    if (!why) {
        return;
    }
    if (svc_ctx_db(ctx, &db) != APR_SUCCESS) {
        return;
    }
    (void)svc_db_execv(db, &st_wh_failed, ctx->pool, NULL, delivery, event, action,
                       installation ? apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT,
                                                   installation) : NULL,
                       payload, svc_printable(ctx->pool, why, 1000));
}

/* A delivery whose signature held. */
typedef struct {
    const char *delivery, *event, *action;
    json_t *doc;
    apr_int64_t installation;       /* 0: none named */
    int duplicate;                  /* seen before: nothing done (for the metrics) */
} delivery_t;

/* Records the delivery (baton: a delivery_t) and applies it, once. */
static apr_status_t record_delivery(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    delivery_t *d = baton;
    svc_dbres_t *res;
    apr_status_t rv;

    d->duplicate = 0;
    /* A replay waits here for the first delivery's transaction, then finds
     * its row; if that one rolled back, this one goes ahead instead. */
    rv = svc_db_execv(db, &st_wh_record, ctx->pool, &res, d->delivery, d->event, d->action,
                      d->installation ? apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT,
                                                     d->installation) : NULL,
                      ctx->raw_body);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        d->duplicate = 1;
        return svc_reply_json(ctx, 200, json_pack("{s:s,s:s}", "status", "duplicate",
                                                  "delivery_id", d->delivery));
    }
    if ((rv = apply(ctx, db, d->event, d->action, d->doc, d->installation)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_json(ctx, 202, json_pack("{s:s,s:s}", "status", "accepted",
                                              "delivery_id", d->delivery));
}

static apr_status_t vcs_webhook(svc_ctx_t *ctx, int *pduplicate)
{
    const svc_vcs_app_t *app = svc_vcs_app(ctx->conf);
    const char *delivery = apr_table_get(ctx->headers_in, "X-GitHub-Delivery");
    const char *event = apr_table_get(ctx->headers_in, "X-GitHub-Event");
    const char *action, *err;
    json_t *doc, *jid;
    apr_int64_t id = 0;
    delivery_t d;
    apr_status_t rv;

    if (!app) {
        return svc_vcs_off(ctx);
    }
    /* Nothing about the delivery is looked at before its signature holds. */
    if (!svc_vcs_signature_ok(ctx->pool, app->webhook_secret, app->webhook_secret_len,
                              apr_table_get(ctx->headers_in, "X-Hub-Signature-256"),
                              ctx->raw_body ? ctx->raw_body : "", ctx->raw_len)) {
        return svc_fail(ctx, 401, "invalid_signature",
                        "X-Hub-Signature-256 is missing or is not the HMAC-SHA256 of this body "
                        "under the webhook secret: the secret configured here differs from the "
                        "App's at the provider (docs/api/vcs.md, rotation).");
    }
    if (!svc_word_valid(event, 100)) {
        return svc_fail(ctx, 400, "invalid_webhook", "The delivery has no X-GitHub-Event.");
    }
    if (!svc_word_valid(delivery, 100)) {
        return svc_fail(ctx, 400, "invalid_webhook",
                        "The delivery has no usable X-GitHub-Delivery.");
    }
    if (svc_json_parse_body(&doc, ctx->raw_body ? ctx->raw_body : "", ctx->raw_len, ctx->pool,
                            &err) != APR_SUCCESS) {
        return svc_fail(ctx, 400, "invalid_json", "The delivery's body: %s", err);
    }
    action = svc_json_str(doc, "action");
    if (action && !svc_word_valid(action, 100)) {
        action = NULL;
    }
    jid = json_object_get(json_object_get(doc, "installation"), "id");
    if (json_is_integer(jid) && json_integer_value(jid) > 0) {
        id = (apr_int64_t)json_integer_value(jid);
    }

    d.delivery = delivery;
    d.event = event;
    d.action = action;
    d.doc = doc;
    d.installation = id;
    d.duplicate = 0;
    rv = svc_write(ctx, record_delivery, &d);
    if (rv != APR_SUCCESS) {
        keep_failed(ctx, rv, delivery, event, action, id, ctx->raw_body);
    }
    *pduplicate = d.duplicate;
    return rv;
}

apr_status_t svc_h_vcs_webhook(svc_ctx_t *ctx)
{
    return svc_metrics_webhook_handle(ctx, SVC_MHOOK_VCS, vcs_webhook);
}

apr_status_t svc_h_vcs_deliveries_list(svc_ctx_t *ctx)
{
    if (!svc_vcs_app(ctx->conf)) {
        return svc_vcs_off(ctx);
    }
    return svc_reply_rows(ctx, &st_wh_list, delivery_item, SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

static apr_status_t no_delivery(svc_ctx_t *ctx)
{
    return svc_fail(ctx, 404, "not_found", "No delivery with this id was recorded.");
}

apr_status_t svc_h_vcs_delivery_get(svc_ctx_t *ctx)
{
    const char *json;
    svc_db_t *db;
    apr_status_t rv;

    if (!svc_vcs_app(ctx->conf)) {
        return svc_vcs_off(ctx);
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_db_value(db, &st_wh_get, ctx->pool, &json, NULL,
                      apr_table_get(ctx->params, "deliveryId"));
    if (rv == SVC_ENOTFOUND) {
        return no_delivery(ctx);
    }
    return rv != APR_SUCCESS ? rv : svc_reply_text(ctx, 200, json);
}

/* An operator's redelivery of a failed delivery (baton: its id). */
static apr_status_t redeliver_tx(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = baton;
    const char *json, *err;
    svc_actor_t actor;
    svc_dbres_t *res;
    apr_int64_t inst = 0;
    json_t *doc;
    apr_status_t rv;

    if ((rv = svc_db_execv(db, &st_wh_take, ctx->pool, &res, id)) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return no_delivery(ctx);
    }
    if (strcmp(svc_dbres_str(res, 0, 4), "failed") != 0) {
        return svc_fail(ctx, 409, "invalid_status", "This delivery was processed; only one "
                        "whose processing failed is redelivered.");
    }
    if (!svc_dbres_isnull(res, 0, 2) && svc_dbres_int64(res, 0, 2, &inst) != APR_SUCCESS) {
        return SVC_EDB;
    }
    json = svc_dbres_str(res, 0, 3);
    if (svc_json_parse_body(&doc, json, strlen(json), ctx->pool, &err) != APR_SUCCESS) {
        return SVC_EDB;
    }
    if ((rv = apply(ctx, db, svc_dbres_str(res, 0, 0), svc_dbres_str(res, 0, 1), doc, inst))
        != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_wh_done, ctx->pool, &res, id)) != APR_SUCCESS
        || (rv = svc_row_json_text(ctx->pool, res, delivery_item, &json)) != APR_SUCCESS) {
        return rv;
    }
    svc_actor_from_ctx(ctx, &actor);
    if ((rv = svc_platform_audit_write(db, ctx->pool, &actor, "vcs_delivery.redelivered",
                                       "vcs_delivery", id, NULL)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_text(ctx, 200, json);
}

apr_status_t svc_h_vcs_delivery_redeliver(svc_ctx_t *ctx)
{
    const char *id = apr_table_get(ctx->params, "deliveryId");
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if (!svc_vcs_app(ctx->conf)) {
        return svc_vcs_off(ctx);
    }
    if (!svc_word_valid(id, 100)) {
        return no_delivery(ctx);
    }
    rv = svc_write(ctx, redeliver_tx, (void *)id);
    /* It failed again: one more failed attempt, with why. */
    if (rv != APR_SUCCESS && svc_ctx_db(ctx, &db) == APR_SUCCESS
        && svc_db_execv(db, &st_wh_get_raw, ctx->pool, &res, id) == APR_SUCCESS
        && svc_dbres_rows(res) == 1) {
        apr_int64_t inst = 0;
        if (!svc_dbres_isnull(res, 0, 2)) {
            (void)svc_dbres_int64(res, 0, 2, &inst);
        }
        keep_failed(ctx, rv, id, svc_dbres_str(res, 0, 0), svc_dbres_str(res, 0, 1), inst,
                    svc_dbres_str(res, 0, 3));
    }
    return rv;
}
