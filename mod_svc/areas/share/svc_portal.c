/*
 * svc_portal.c: what a share link's holder may do: read the product's
 * documents (the approved version of each, or the current one where none
 * is approved) and leave comments. A revoked, expired, unknown or
 * malformed token is the same 404, and so is any document of another
 * product; the token never reaches a log (SVC_RF_SECRET_PATH), and the
 * portal is rate-limited per client address (the "share" class).
 */
#include "svc_portal.h"
#include "svc_shares.h"
#include "svc_documents.h"

/* The live share a token hash names: one indexed lookup. A suspended
 * org's links answer like dead ones (the same 404), for as long as it is. */
static const svc_stmt_t st_portal_share = {
    "svc_share_portal_lookup",
    "SELECT s.id, s.org_id, s.product_id, svc_ts(s.expires_at) FROM shares s"
    " JOIN orgs o ON o.id = s.org_id AND o.suspended_at IS NULL"
    " WHERE s.token_hash = $1::bytea AND s.revoked_at IS NULL AND s.expires_at > now()",
    1, SVC_STMT_READ
};

static const char *const doc_prefix[] = { "doc_", NULL };

const svc_field_t svc_body_portal_comment[] = {
    { .name = "document_id", .type = SVC_FT_ID, .required = 1, .values = doc_prefix,
      .description = "The document commented on (one of the shared product's)." },
    { .name = "author_name", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 100,
      .description = "Who is commenting, as they want to be named, 1 to 100 characters." },
    { .name = "body", .type = SVC_FT_TEXT, .required = 1, .min = 1, .max = 10000,
      .description = "The comment, 1 to 10000 characters." },
    SVC_FIELD_END
};

/* What the documents area builds for the portal (svc_documents.h), as the
 * portal answers it. */
static const svc_col_t portal_product_keys[] = {
    SVC_COL_ID("prd"),
    { .key = "name", .type = SVC_COL_TEXT, .example = "Shop" },
    SVC_COL_END
};

static const svc_col_t portal_document_keys[] = {
    SVC_COL_ID("doc"),
    { .key = "kind", .type = SVC_COL_TEXT, .values = SVC_VALUES("toc", "section") },
    { .key = "title", .type = SVC_COL_TEXT, .example = "Architecture" },
    { .key = "version_id", .type = SVC_COL_TEXT, .id = "ver",
      .description = "The version shown: the approved one, else the current one." },
    { .key = "version_number", .type = SVC_COL_INT },
    { .key = "approved", .type = SVC_COL_BOOL },
    SVC_COL_UPDATED_AT,
    SVC_COL_END
};

static const svc_col_t portal_keys[] = {
    { .key = "product", .type = SVC_COL_OBJECT, .sub = portal_product_keys },
    { .key = "documents", .type = SVC_COL_ARRAY, .sub = portal_document_keys,
      .description = "The table of contents first, then the sections." },
    { .key = "expires_at", .type = SVC_COL_TIME, .description = "When the link stops working." },
    SVC_COL_END
};

const svc_schema_t svc_schema_portal = { .name = "Portal", .keys = portal_keys,
    .description = "A shared product, as its share link shows it." };

static const svc_col_t portal_comment_keys[] = {
    SVC_COL_ID("cmt"),
    { .key = "document_id", .type = SVC_COL_TEXT, .id = "doc" },
    { .key = "version_id", .type = SVC_COL_TEXT, .id = "ver" },
    { .key = "author_name", .type = SVC_COL_TEXT, .example = "Grace" },
    { .key = "body", .type = SVC_COL_TEXT, .example = "Section 2 needs a diagram." },
    SVC_COL_CREATED_AT,
    SVC_COL_END
};

const svc_schema_t svc_schema_portal_comment = { .name = "PortalComment",
    .keys = portal_comment_keys, .description = "A comment left through a share link." };

typedef struct {
    const char *id;
    const char *org_id;
    const char *product_id;
    const char *expires_at;
} share_t;

static apr_status_t no_share(svc_ctx_t *ctx)
{
    return svc_fail(ctx, 404, "not_found", "There is no such share link, or it has expired or "
                    "been revoked.");
}

/* The live share of the request's token, or the one 404 for every reason. */
static apr_status_t share_of(svc_ctx_t *ctx, svc_db_t **pdb, share_t *sh)
{
    const char *token = apr_table_get(ctx->params, "token");
    unsigned char hash[32];
    svc_dbres_t *res;
    apr_status_t rv;

    /* A link opened from the portal's pages must not leak through Referer. */
    apr_table_setn(ctx->headers_out, "Referrer-Policy", "no-referrer");
    if (!svc_secret_token_well_formed(token, SVC_SHARE_PREFIX)) {
        return no_share(ctx);
    }
    svc_share_hash(ctx->conf, token, hash);
    if ((rv = svc_ctx_db(ctx, pdb)) != APR_SUCCESS
        || (rv = svc_db_execv(*pdb, &st_portal_share, ctx->pool, &res,
                              svc_bytea_param(ctx->pool, hash, sizeof(hash)))) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return no_share(ctx);
    }
    sh->id = svc_dbres_str(res, 0, 0);
    sh->org_id = svc_dbres_str(res, 0, 1);
    sh->product_id = svc_dbres_str(res, 0, 2);
    sh->expires_at = svc_dbres_str(res, 0, 3);
    return APR_SUCCESS;
}

apr_status_t svc_h_portal_index(svc_ctx_t *ctx)
{
    const char *json;
    svc_db_t *db;
    share_t sh;
    apr_status_t rv;

    if ((rv = share_of(ctx, &db, &sh)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_documents_portal_index(db, ctx->pool, sh.org_id, sh.product_id, &json);
    if (rv == SVC_ENOTFOUND) {
        return no_share(ctx);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    svc_reply_text(ctx, 200, json);
    svc_reply_add(ctx, "expires_at", apr_pstrcat(ctx->pool, "\"", sh.expires_at, "\"", NULL));
    return APR_SUCCESS;
}

apr_status_t svc_h_portal_document(svc_ctx_t *ctx)
{
    const char *doc = apr_table_get(ctx->params, "docId");
    const char *body;
    apr_size_t len;
    svc_db_t *db;
    share_t sh;
    apr_status_t rv;

    if ((rv = share_of(ctx, &db, &sh)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_documents_portal_body(db, ctx->pool, sh.org_id, sh.product_id, doc, &body, &len);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "This share link has no document %s.", doc);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_body(ctx, 200, "text/markdown; charset=utf-8", body, len);
}

/*
 * The comments left through this link (by anyone holding it), newest
 * first: what its reviewers said to each other and to the org. Not those
 * of the product's other links, which went to other people, nor anything
 * members wrote inside the org (docs/decisions.md, "What a share link's
 * reviewers read").
 */
apr_status_t svc_h_portal_comments(svc_ctx_t *ctx)
{
    const char *doc = apr_table_get(ctx->query, "document_id");
    svc_db_t *db;
    share_t sh;
    apr_status_t rv;

    if ((rv = share_of(ctx, &db, &sh)) != APR_SUCCESS) {
        return rv;
    }
    if (doc && (strncmp(doc, "doc_", 4) != 0 || !svc_word_valid(doc, 64))) {
        svc_fail_field(ctx, "document_id", "invalid_value", "document_id is a document's id.");
        return SVC_EPROBLEM;
    }
    return svc_documents_portal_comments(ctx, sh.org_id, sh.product_id, sh.id, doc,
                                         portal_comment_keys);
}

/* Files the reviewer's comment (baton: the svc_portal_comment_t). */
static apr_status_t comment(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const svc_portal_comment_t *c = baton;
    const char *json;
    apr_status_t rv = svc_documents_portal_comment(db, ctx->pool, c, &json);

    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "This share link has no document %s.", c->doc_id);
    }
    return rv == APR_SUCCESS ? svc_reply_text(ctx, 201, json) : rv;
}

apr_status_t svc_h_portal_comment(svc_ctx_t *ctx)
{
    svc_portal_comment_t c;
    svc_db_t *db;
    share_t sh;
    apr_status_t rv;

    if ((rv = share_of(ctx, &db, &sh)) != APR_SUCCESS) {
        return rv;
    }
    c.org_id = sh.org_id;
    c.product_id = sh.product_id;
    c.share_id = sh.id;
    c.doc_id = svc_json_str(ctx->body, "document_id");
    c.author_name = svc_json_str(ctx->body, "author_name");
    c.body = svc_json_str(ctx->body, "body");
    return svc_write(ctx, comment, &c);
}
