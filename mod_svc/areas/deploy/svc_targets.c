/*
 * svc_targets.c: /api/orgs/:orgSlug/deploy-targets (docs/api/deployments.md)
 * and the verifier of agents' keys.
 *
 * A target's enrollment key is svc_dek_ + 256 random bits + a checksum
 * (the shape of the personal access tokens), shown once when the target is
 * made or its key rotated; only a keyed hash (BLAKE2b under a key derived
 * from SvcSecret) is stored, so the lookup is one indexed equality.
 * Rotating replaces the hash: the old key is refused from that moment, and
 * an event on the target's stream has its agent's open stream check its
 * key at once (and end, for the old key).
 */
#include "svc_targets.h"
#include "svc_deploy_store.h"

#include <string.h>

static const svc_stmt_t st_target_list = {
    "svc_deploy_target_list",
    "SELECT json_build_object('id', t.id, 'name', t.name,"
    " 'status', " SVC_TARGET_STATUS("t") ","
    " 'agent', CASE WHEN t.last_seen_at IS NULL THEN NULL ELSE json_build_object("
    " 'version', t.agent_version, 'hostname', t.agent_hostname,"
    " 'last_seen_at', svc_ts(t.last_seen_at)) END,"
    " 'key_hint', t.key_hint, 'key_created_at', svc_ts(t.key_created_at),"
    " 'deployments', (SELECT count(*) FROM deployments d WHERE d.target_id = t.id"
    " AND d.status NOT IN ('torn_down', 'separated')),"
    " 'created_by', t.created_by, 'created_at', svc_ts(t.created_at))::text, t.seq"
    " FROM deploy_targets t WHERE t.org_id = $1 AND t.removed_at IS NULL"
    " AND t.seq < $2::bigint ORDER BY t.seq DESC LIMIT $3::int",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_target_insert = {
    "svc_deploy_target_insert",
    "INSERT INTO deploy_targets (id, org_id, name, key_hash, key_hint, created_by)"
    " VALUES ($1, $2, $3, $4::bytea, $5, $6)",
    6, 0
};

static const svc_stmt_t st_target_lock = {
    "svc_deploy_target_lock",
    "SELECT name, (SELECT count(*) FROM deployments d WHERE d.target_id = t.id"
    " AND d.status NOT IN ('torn_down', 'separated'))"
    " FROM deploy_targets t WHERE t.id = $1 AND t.org_id = $2 AND t.removed_at IS NULL"
    " FOR UPDATE",
    2, 0
};

static const svc_stmt_t st_target_remove = {
    "svc_deploy_target_remove",
    "UPDATE deploy_targets SET removed_at = now(), key_hash = NULL WHERE id = $1 AND org_id = $2",
    2, 0
};

static const svc_stmt_t st_target_rekey = {
    "svc_deploy_target_rekey",
    "UPDATE deploy_targets SET key_hash = $3::bytea, key_hint = $4, key_created_at = now()"
    " WHERE id = $1 AND org_id = $2",
    4, 0
};

static const svc_stmt_t st_agent_key = {
    "svc_deploy_agent_key",
    "SELECT id, org_id FROM deploy_targets WHERE key_hash = $1::bytea AND removed_at IS NULL",
    1, SVC_STMT_READ
};

const svc_field_t svc_body_target_create[] = {
    { .name = "name", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 100,
      .description = "What the machine is called here, 1 to 100 characters; unique in the "
        "org." },
    SVC_FIELD_END
};

apr_status_t svc_h_targets_list(svc_ctx_t *ctx)
{
    return svc_reply_list(ctx, &st_target_list, ctx->org->id, SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

/* A new key: the secret (shown once), its hash as a bytea parameter, its hint. */
static void new_key(svc_ctx_t *ctx, const char **psecret, const char **phash,
                    const char **phint)
{
    const char *secret = svc_secret_token_generate(ctx->pool, SVC_DEK_PREFIX);
    unsigned char hash[32];

    svc_keyed_hash(hash, ctx->conf->agent_key, (const unsigned char *)secret, strlen(secret));
    *psecret = secret;
    *phash = svc_bytea_param(ctx->pool, hash, sizeof(hash));
    *phint = apr_pstrndup(ctx->pool, secret, SVC_DEK_HINT_LEN);
}

/* The target's document with its key, the one time it is shown. */
static apr_status_t reply_with_key(svc_ctx_t *ctx, svc_db_t *db, const char *id,
                                   const char *secret, int status)
{
    json_error_t jerr;
    const char *text;
    json_t *doc;
    apr_status_t rv = svc_target_json(db, ctx->pool, ctx->org->id, id, &text);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (!(doc = json_loads(text, 0, &jerr))) {
        return SVC_EDB;
    }
    json_object_set_new(doc, "key", json_string(secret));
    return svc_reply_json(ctx, status, doc);
}

static apr_status_t create(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = svc_id_new(ctx->pool, "dtg_");
    const char *name = svc_json_str(ctx->body, "name");
    const char *secret, *hash, *hint;
    apr_status_t rv;

    new_key(ctx, &secret, &hash, &hint);
    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_ADMIN, SVC_PROLE_NONE)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_db_execv(db, &st_target_insert, ctx->pool, NULL, id, ctx->org->id, name, hash,
                      hint, ctx->who->user_id);
    if (rv == SVC_ECONFLICT) {
        return svc_fail(ctx, 409, "conflict", "The organization has a deploy target named "
                        "\"%s\" already.", name);
    }
    if (rv != APR_SUCCESS
        || (rv = svc_audit_member(ctx, db, "deploy_target.created", "deploy_target", id,
                                  json_pack("{s:s,s:s}", "name", name, "key_hint", hint)))
           != APR_SUCCESS) {
        return rv;
    }
    return reply_with_key(ctx, db, id, secret, 201);
}

apr_status_t svc_h_targets_create(svc_ctx_t *ctx)
{
    return svc_write(ctx, create, NULL);
}

/* Locks the org's target; 404 when it has none (or removed it). */
static apr_status_t lock_target(svc_ctx_t *ctx, svc_db_t *db, const char *id,
                                const char **pname, apr_int64_t *pin_use)
{
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_ADMIN, SVC_PROLE_NONE)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_target_lock, ctx->pool, &res, id, ctx->org->id))
           != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_fail(ctx, 404, "not_found", "No deploy target %s in %s.", id,
                        ctx->org->slug);
    }
    *pname = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
    return svc_dbres_int64(res, 0, 1, pin_use) == APR_SUCCESS ? APR_SUCCESS : SVC_EDB;
}

static apr_status_t remove_target(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "id");
    const char *name;
    apr_int64_t in_use;
    apr_status_t rv;

    if ((rv = lock_target(ctx, db, id, &name, &in_use)) != APR_SUCCESS) {
        return rv;
    }
    if (in_use > 0) {
        return svc_fail(ctx, 409, "target_in_use", "Deploy target %s has %" APR_INT64_T_FMT
                        " deployment(s) that are not torn down or separated; tear them down "
                        "or separate them first.", id, in_use);
    }
    if ((rv = svc_db_execv(db, &st_target_remove, ctx->pool, NULL, id, ctx->org->id))
        != APR_SUCCESS
        || (rv = svc_audit_member(ctx, db, "deploy_target.removed", "deploy_target", id,
                                  json_pack("{s:s}", "name", name))) != APR_SUCCESS
        || (rv = svc_event_emit_target(db, ctx->pool, ctx->org->id, id, "target.removed",
                                       svc_json_pool(ctx->pool, json_pack("{s:s}", "target_id",
                                                                          id))))
           != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_empty(ctx);
}

apr_status_t svc_h_targets_delete(svc_ctx_t *ctx)
{
    return svc_write(ctx, remove_target, NULL);
}

static apr_status_t rotate(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "id");
    const char *name, *secret, *hash, *hint;
    apr_int64_t in_use;
    apr_status_t rv;

    new_key(ctx, &secret, &hash, &hint);
    if ((rv = lock_target(ctx, db, id, &name, &in_use)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_target_rekey, ctx->pool, NULL, id, ctx->org->id, hash,
                              hint)) != APR_SUCCESS
        || (rv = svc_audit_member(ctx, db, "deploy_target.key_rotated", "deploy_target", id,
                                  json_pack("{s:s,s:s}", "name", name, "key_hint", hint)))
           != APR_SUCCESS
        || (rv = svc_event_emit_target(db, ctx->pool, ctx->org->id, id, "target.key_rotated",
                                       svc_json_pool(ctx->pool,
                                                     json_pack("{s:s,s:s}", "target_id", id,
                                                               "key_hint", hint))))
           != APR_SUCCESS) {
        return rv;
    }
    return reply_with_key(ctx, db, id, secret, 200);
}

apr_status_t svc_h_targets_rotate(svc_ctx_t *ctx)
{
    return svc_write(ctx, rotate, NULL);
}

apr_status_t svc_deploy_agent_verify(svc_ctx_t *ctx, const char *key, svc_principal_t **pwho)
{
    unsigned char hash[32];
    svc_principal_t *who;
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if (strncmp(key, "svc_pat_", 8) == 0) {
        return svc_auth_fail(ctx, "Agent routes take a deploy target's key (svc_dek_...), "
                                  "never a personal access token.");
    }
    if (!svc_secret_token_well_formed(key, SVC_DEK_PREFIX)) {
        return svc_auth_fail(ctx, "The key is malformed (wrong prefix, length or checksum).");
    }
    svc_keyed_hash(hash, ctx->conf->agent_key, (const unsigned char *)key, strlen(key));
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_agent_key, ctx->pool, &res,
                              svc_bytea_param(ctx->pool, hash, sizeof(hash)))) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_auth_fail(ctx, "This key is not a deploy target's current key: it was "
                                  "rotated, or its target was removed.");
    }
    who = apr_pcalloc(ctx->pool, sizeof(*who));
    who->via = SVC_VIA_AGENT;
    who->scope = SVC_SCOPE_WRITE;
    who->target_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
    who->target_org_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 1));
    *pwho = who;
    return APR_SUCCESS;
}
