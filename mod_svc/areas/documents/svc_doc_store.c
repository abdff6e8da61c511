/*
 * svc_doc_store.c: the document lock, version writes and the shapes the
 * documents area's answers share.
 */
#include "svc_doc_store.h"

static const svc_col_t version_author[] = {
    { .key = "kind", .type = SVC_COL_TEXT, .values = SVC_VALUES("user", "ai") },
    { .key = "user_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "usr",
      .description = "Who wrote it, or asked the model to (null once the account is gone)." },
    { .key = "name", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "Ada Lovelace" },
    { .key = "model", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "gpt-4o-mini",
      .description = "For a version the model wrote: which model." },
    SVC_COL_END
};

const svc_col_t svc_version_item[] = {
    SVC_COL_ID("ver"),
    { .key = "document_id", .type = SVC_COL_TEXT, .id = "doc" },
    { .key = "number", .type = SVC_COL_INT, .description = "1, 2, ... within the document." },
    { .key = "status", .type = SVC_COL_TEXT,
      .values = SVC_VALUES("draft", "approved", "changes_requested") },
    { .key = "author", .type = SVC_COL_OBJECT, .sub = version_author },
    { .key = "source", .type = SVC_COL_TEXT,
      .values = SVC_VALUES("create", "edit", "regenerate", "patch"),
      .description = "How it was written." },
    { .key = "base_version_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "ver",
      .description = "The version it was written from." },
    { .key = "bytes", .type = SVC_COL_INT, .description = "The body's size." },
    { .key = "comment", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .description = "The reviewer's words when changes were requested." },
    { .key = "decided_by", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "usr" },
    { .key = "decided_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    SVC_COL_CREATED_AT,
    SVC_COL_END
};

const svc_schema_t svc_schema_doc_version = { .name = "Version", .keys = svc_version_item,
    .description = "A version of a document, without its body (GET .../content has it)." };

static const svc_stmt_t st_doc_lock = {
    "svc_documents_lock",
    "SELECT id, product_id, kind, title, current_version_id, approved_version_id"
    " FROM documents WHERE id = $1 AND org_id = $2 FOR NO KEY UPDATE",
    2, 0
};

/* The number is the next under the document's lock (or in the transaction
 * that creates the document); the unique key would refuse a duplicate. */
static const svc_stmt_t st_ver_insert = {
    "svc_documents_version_insert",
    "INSERT INTO doc_versions (id, org_id, document_id, number, body, bytes, author_kind,"
    " author_user_id, author_model, source, base_version_id)"
    " VALUES ($1, $2, $3,"
    "  (SELECT coalesce(max(number), 0) + 1 FROM doc_versions WHERE document_id = $3),"
    "  $4, octet_length($4), $5, $6, $7, $8, $9)"
    " RETURNING number",
    9, 0
};

static const svc_stmt_t st_doc_set_current = {
    "svc_documents_set_current",
    "UPDATE documents SET current_version_id = $3, updated_at = now()"
    " WHERE id = $1 AND org_id = $2",
    3, 0
};

static const svc_stmt_t st_ver_get = {
    "svc_documents_version_get",
    "SELECT " SVC_VERSION_COLS " FROM " SVC_VERSION_FROM " WHERE v.id = $1 AND v.org_id = $2",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

/* Raw bytes in binary: a long body is neither formatted nor copied. */
static const svc_stmt_t st_ver_body = {
    "svc_documents_version_body",
    "SELECT body FROM doc_versions WHERE id = $1 AND org_id = $2",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

apr_status_t svc_doc_lock(svc_ctx_t *ctx, svc_db_t *db, const char *doc_id,
                          svc_doc_state_t **pst)
{
    svc_doc_state_t *st;
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_MEMBER, SVC_PROLE_NONE)) != APR_SUCCESS) {
        return rv;
    }
    if ((rv = svc_org_row(ctx, db, &st_doc_lock, "document", doc_id, &res)) != APR_SUCCESS) {
        return rv;
    }
    st = apr_pcalloc(ctx->pool, sizeof(*st));
    st->id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
    st->product_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 1));
    st->kind = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 2));
    st->title = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 3));
    st->current_version_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 4));
    st->approved_version_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 5));
    *pst = st;
    return APR_SUCCESS;
}

apr_status_t svc_doc_lock_via(svc_ctx_t *ctx, svc_db_t *db, const svc_stmt_t *owner,
                              const char *what, const char *id, svc_doc_state_t **pst)
{
    svc_dbres_t *res;
    apr_status_t rv = svc_db_execv(db, owner, ctx->pool, &res, id, ctx->org->id);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_fail(ctx, 404, "not_found", "No %s %s in %s.", what, id, ctx->org->slug);
    }
    return svc_doc_lock(ctx, db, apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0)), pst);
}

static const svc_stmt_t st_doc_exists = {
    "svc_documents_exists",
    "SELECT 1 FROM documents WHERE id = $1 AND org_id = $2",
    2, SVC_STMT_READ
};

apr_status_t svc_doc_reply_children(svc_ctx_t *ctx, const svc_stmt_t *st,
                                    const svc_col_t *shape)
{
    const char *doc = apr_table_get(ctx->params, "docId");
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_org_row(ctx, db, &st_doc_exists, "document", doc, &res)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_rows(ctx, st, shape, doc, ctx->org->id, SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

apr_status_t svc_doc_version_add(svc_ctx_t *ctx, svc_db_t *db, const char *doc_id,
                                 const char *version_id, const svc_new_version_t *nv,
                                 int *pnumber)
{
    svc_dbres_t *res;
    apr_int64_t number;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_ver_insert, ctx->pool, &res, version_id, ctx->org->id, doc_id,
                      nv->body, nv->author_kind, ctx->who->user_id, nv->author_model,
                      nv->source, nv->base_version_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_int64(res, 0, 0, &number) != APR_SUCCESS) {
        return SVC_EDB;
    }
    if (pnumber) {
        *pnumber = (int)number;
    }
    return svc_db_execv(db, &st_doc_set_current, ctx->pool, NULL, doc_id, ctx->org->id,
                        version_id);
}

apr_status_t svc_doc_reply_version(svc_ctx_t *ctx, svc_db_t *db, const char *version_id,
                                   int status)
{
    return svc_reply_org_row(ctx, db, &st_ver_get, svc_version_item, "document version",
                             version_id, status);
}

apr_status_t svc_doc_version_body(svc_ctx_t *ctx, svc_db_t *db, const char *version_id,
                                  const char **pbody, apr_size_t *plen)
{
    return svc_db_value(db, &st_ver_body, ctx->pool, pbody, plen, version_id, ctx->org->id);
}

apr_status_t svc_doc_check_size(svc_ctx_t *ctx, apr_size_t len)
{
    if (len > ctx->conf->document_limit) {
        return svc_fail(ctx, 413, "payload_too_large",
                        "The document body is %" APR_SIZE_T_FMT " bytes; documents are at most "
                        "%" APR_SIZE_T_FMT " bytes (SvcDocumentLimit).", len,
                        ctx->conf->document_limit);
    }
    return APR_SUCCESS;
}

apr_status_t svc_doc_audit(svc_ctx_t *ctx, svc_db_t *db, const char *action,
                           const char *target_type, const char *target_id, json_t *data)
{

    svc_json_pool(ctx->pool, data);
    if (!data) {
        return APR_ENOMEM;
    }
    return svc_audit_ctx(ctx, db, action, target_type,
                         target_id, data);
}
