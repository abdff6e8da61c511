/*
 * svc_shares.c: /api/orgs/:orgSlug/products/:productId/shares and
 * /api/orgs/:orgSlug/shares/:shareId/revoke.
 */
#include "svc_shares.h"
#include "svc_documents.h"

#include <string.h>

/* A share as lists show it: never the token, only its first characters. */
#define SHARE_COLS                                                                  \
    "s.id, s.product_id, s.token_hint, CASE"                                        \
    "   WHEN s.revoked_at IS NOT NULL THEN 'revoked'"                               \
    "   WHEN s.expires_at <= now() THEN 'expired'"                                  \
    "   ELSE 'active' END,"                                                         \
    " s.created_by, s.created_at, s.expires_at, s.revoked_at"

static const svc_col_t share_item[] = {
    SVC_COL_ID("shr"),
    { .key = "product_id", .type = SVC_COL_TEXT, .id = "prd" },
    { .key = "token_hint", .type = SVC_COL_TEXT, .example = "svc_shr_8aQz",
      .description = "The token's first characters, to tell links apart." },
    { .key = "status", .type = SVC_COL_TEXT, .values = SVC_VALUES("active", "expired",
                                                                    "revoked") },
    SVC_COL_CREATED_BY,
    SVC_COL_CREATED_AT,
    { .key = "expires_at", .type = SVC_COL_TIME },
    { .key = "revoked_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    SVC_COL_END
};

const svc_schema_t svc_schema_share = { .name = "Share", .keys = share_item,
    .description = "A share link to a product, without its token (docs/api/shares.md)." };

static const svc_col_t share_created_keys[] = {
    { .key = "token", .type = SVC_COL_TEXT, .format = "secret",
      .example = "svc_shr_8aQzK3mT0vR7sLw1ZyN2cHd5JfA4pGe6u",
      .description = "The link's token, shown this once." },
    { .key = "url", .type = SVC_COL_TEXT, .format = "uri",
      .example = "https://svc.example.com/share/svc_shr_8aQzK3mT0vR7sLw1ZyN2cHd5JfA4pGe6u",
      .description = "The link to hand to reviewers, shown this once." },
    SVC_COL_END
};

const svc_schema_t svc_schema_share_created = { .name = "ShareCreated",
    .keys = share_created_keys, .base = &svc_schema_share,
    .description = "A share link just made: the link and, this once, its token and URL." };

static const svc_stmt_t st_shr_list = {
    "svc_share_list",
    "SELECT s.seq, " SHARE_COLS " FROM shares s"
    " WHERE s.product_id = $1 AND s.org_id = $2 AND s.seq < $3::bigint"
    " ORDER BY s.seq DESC LIMIT $4::int",
    4, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_shr_get = {
    "svc_share_get",
    "SELECT " SHARE_COLS " FROM shares s WHERE s.id = $1 AND s.org_id = $2",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

/* A product removed meanwhile fails the foreign key: 404. */
static const svc_stmt_t st_shr_insert = {
    "svc_share_insert",
    "INSERT INTO shares (id, org_id, product_id, token_hash, token_hint, created_by,"
    " expires_at) VALUES ($1, $2, $3, $4::bytea, $5, $6,"
    " now() + make_interval(days => $7::int))",
    7, 0
};

static const svc_stmt_t st_shr_revoke = {
    "svc_share_revoke",
    "UPDATE shares SET revoked_at = now(), revoked_by = $3"
    " WHERE id = $1 AND org_id = $2 AND revoked_at IS NULL RETURNING product_id",
    3, 0
};

const svc_field_t svc_body_share_create[] = {
    { .name = "expires_in_days", .type = SVC_FT_INT, .min = 1, .max = 365,
      .description = "Days until the link stops working, 1 to 365 (default 30)." },
    SVC_FIELD_END
};

void svc_share_hash(const svc_config_t *conf, const char *token, unsigned char out[32])
{
    svc_keyed_hash(out, conf->share_key, (const unsigned char *)token, strlen(token));
}

static apr_status_t reply_share(svc_ctx_t *ctx, svc_db_t *db, const char *id, int status)
{
    return svc_reply_org_row(ctx, db, &st_shr_get, share_item, "share", id, status);
}

/* A 404 problem unless the org has this product. */
static apr_status_t product_check(svc_ctx_t *ctx, svc_db_t *db, const char *product)
{
    const char *name;
    apr_status_t rv = svc_product_name(db, ctx->pool, ctx->org->id, product, &name);

    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "No product %s in %s.", product, ctx->org->slug);
    }
    return rv;
}

apr_status_t svc_h_shares_list(svc_ctx_t *ctx)
{
    const char *product = apr_table_get(ctx->params, "productId");
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = product_check(ctx, db, product)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_rows(ctx, &st_shr_list, share_item, product, ctx->org->id,
                          SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

/* Where a reviewer opens the link: the public origin (SvcPublicURL, or the
 * origin the request came to) + /share/ + the token. */
static const char *share_url(svc_ctx_t *ctx, const char *token)
{
    const char *base = ctx->conf->public_url ? ctx->conf->public_url : ctx->self_origin;
    apr_size_t n = base ? strlen(base) : 0;

    while (n > 0 && base[n - 1] == '/') {
        n--;
    }
    return apr_pstrcat(ctx->pool, n ? apr_pstrmemdup(ctx->pool, base, n) : "", "/share/",
                       token, NULL);
}

static apr_status_t create_share(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *product = apr_table_get(ctx->params, "productId");
    const char *id = svc_id_new(ctx->pool, "shr_");
    const char *token = svc_secret_token_generate(ctx->pool, SVC_SHARE_PREFIX);
    const char *hint = apr_pstrndup(ctx->pool, token, 12);
    int days = (int)svc_json_int(ctx->body, "expires_in_days", 30);
    unsigned char hash[32];
    apr_status_t rv;

    svc_share_hash(ctx->conf, token, hash);
    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_MEMBER, SVC_PROLE_NONE)) != APR_SUCCESS
        || (rv = product_check(ctx, db, product)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_db_execv(db, &st_shr_insert, ctx->pool, NULL, id, ctx->org->id, product,
                      svc_bytea_param(ctx->pool, hash, sizeof(hash)), hint, ctx->who->user_id,
                      apr_itoa(ctx->pool, days));
    if (rv == SVC_EINTEGRITY) {
        return svc_fail(ctx, 404, "not_found", "No product %s in %s.", product, ctx->org->slug);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = svc_audit_ctx(ctx, db, "share.created", "share", id,
                       svc_json_pool(ctx->pool,
                                     json_pack("{s:s,s:s,s:i}", "product_id", product,
                                               "token_hint", hint, "expires_in_days", days)));
    if (rv != APR_SUCCESS || (rv = reply_share(ctx, db, id, 201)) != APR_SUCCESS) {
        return rv;
    }
    /* The token and the link: in this answer, and nowhere ever again. */
    svc_reply_add(ctx, "token", svc_json_dump(ctx->pool, svc_json_pool(ctx->pool,
                                                                       json_string(token))));
    svc_reply_add(ctx, "url", svc_json_dump(ctx->pool, svc_json_pool(ctx->pool,
                                                    json_string(share_url(ctx, token)))));
    return APR_SUCCESS;
}

apr_status_t svc_h_shares_create(svc_ctx_t *ctx)
{
    return svc_write(ctx, create_share, NULL);
}

static apr_status_t revoke_share(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "shareId");
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_MEMBER, SVC_PROLE_NONE)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_shr_revoke, ctx->pool, &res, id, ctx->org->id,
                              ctx->who->user_id)) != APR_SUCCESS) {
        return rv;
    }
    /* Revoked already (or not ours): nothing to write; reply_share tells which. */
    if (svc_dbres_rows(res) == 1) {
        rv = svc_audit_ctx(ctx, db, "share.revoked", "share", id,
                           svc_json_pool(ctx->pool,
                                         json_pack("{s:s}", "product_id",
                                                   svc_dbres_str(res, 0, 0))));
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    return reply_share(ctx, db, id, 200);
}

apr_status_t svc_h_shares_revoke(svc_ctx_t *ctx)
{
    return svc_write(ctx, revoke_share, NULL);
}
