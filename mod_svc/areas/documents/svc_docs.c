/*
 * svc_docs.c: documents of a product (list, create, detail, versions, the
 * body of a version), deciding the current version (approve, request
 * changes), direct edits with optimistic concurrency, and the comments
 * reviewers left.
 */
#include "svc_docs.h"
#include "svc_doc_store.h"
#include "svc_products.h"

#include <string.h>

/* A document as the API shows it: the documents row `d` with its current
 * version `v` (and the version's author `au`). */
#define DOC_COLS                                                                    \
    "d.id, d.product_id, d.kind, d.title, " SVC_VERSION_COLS ","                    \
    " d.approved_version_id, d.created_at, d.updated_at"
#define DOC_FROM                                                                    \
    "documents d JOIN doc_versions v ON v.id = d.current_version_id"                \
    " LEFT JOIN users au ON au.id = v.author_user_id"

/* How many versions a document's detail lists; GET .../versions pages
 * through all of them. */
#define DOC_DETAIL_VERSIONS "100"

static const svc_col_t document_item[] = {
    SVC_COL_ID("doc"),
    { .key = "product_id", .type = SVC_COL_TEXT, .id = "prd" },
    { .key = "kind", .type = SVC_COL_TEXT, .values = SVC_VALUES("toc", "section"),
      .description = "toc: the product's table of contents; section: a section." },
    { .key = "title", .type = SVC_COL_TEXT, .example = "Architecture" },
    { .key = "current_version", .type = SVC_COL_OBJECT, .ref = &svc_schema_doc_version },
    { .key = "approved_version_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "ver",
      .description = "The newest approved version, if one is." },
    SVC_COL_CREATED_AT,
    SVC_COL_UPDATED_AT,
    SVC_COL_END
};

const svc_schema_t svc_schema_document = { .name = "Document", .keys = document_item,
    .description = "A planning document, with its current version (docs/api/documents.md)." };

static const svc_col_t document_detail_keys[] = {
    { .key = "versions", .type = SVC_COL_ARRAY, .ref = &svc_schema_doc_version,
      .description = "Its newest 100 versions, newest first (GET .../versions pages them)." },
    { .key = "versions_total", .type = SVC_COL_INT },
    SVC_COL_END
};

const svc_schema_t svc_schema_document_detail = { .name = "DocumentDetail",
    .keys = document_detail_keys, .base = &svc_schema_document,
    .description = "A document with its newest versions." };

static const svc_col_t comment_item[] = {
    SVC_COL_ID("cmt"),
    { .key = "document_id", .type = SVC_COL_TEXT, .id = "doc" },
    { .key = "version_id", .type = SVC_COL_TEXT, .id = "ver",
      .description = "The version the reviewer read." },
    { .key = "share_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "shr",
      .description = "The share link it came through." },
    { .key = "author_name", .type = SVC_COL_TEXT, .example = "Grace",
      .description = "The name the reviewer gave (not verified)." },
    { .key = "body", .type = SVC_COL_TEXT, .example = "Section 2 needs a diagram." },
    SVC_COL_CREATED_AT,
    SVC_COL_END
};

const svc_schema_t svc_schema_comment = { .name = "Comment", .keys = comment_item,
    .description = "A reviewer's comment, left through a share link." };

static const svc_stmt_t st_doc_list = {
    "svc_documents_list",
    "SELECT d.seq, " DOC_COLS " FROM " DOC_FROM
    " WHERE d.product_id = $1 AND d.org_id = $2 AND d.seq < $3::bigint"
    " ORDER BY d.seq DESC LIMIT $4::int",
    4, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_doc_get = {
    "svc_documents_get",
    "SELECT " DOC_COLS " FROM " DOC_FROM " WHERE d.id = $1 AND d.org_id = $2",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_doc_versions_top = {
    "svc_documents_versions_top",
    "SELECT " SVC_VERSION_COLS " FROM " SVC_VERSION_FROM
    " WHERE v.document_id = $1 AND v.org_id = $2 ORDER BY v.seq DESC LIMIT "
    DOC_DETAIL_VERSIONS,
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_doc_versions_count = {
    "svc_documents_versions_count",
    "SELECT count(*) FROM doc_versions WHERE document_id = $1 AND org_id = $2",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_ver_list = {
    "svc_documents_versions_list",
    "SELECT v.seq, " SVC_VERSION_COLS " FROM " SVC_VERSION_FROM
    " WHERE v.document_id = $1 AND v.org_id = $2 AND v.seq < $3::bigint"
    " ORDER BY v.seq DESC LIMIT $4::int",
    4, SVC_STMT_READ | SVC_STMT_BINARY
};

/* The product is held (FOR KEY SHARE) while a document is added to it. */
static const svc_stmt_t st_prd_hold = {
    "svc_documents_product_hold",
    "SELECT 1 FROM products WHERE id = $1 AND org_id = $2 FOR KEY SHARE",
    2, 0
};

static const svc_stmt_t st_doc_insert = {
    "svc_documents_insert",
    "INSERT INTO documents (id, org_id, product_id, kind, title, current_version_id,"
    " created_by) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    7, 0
};

static const svc_stmt_t st_ver_document = {
    "svc_documents_version_document",
    "SELECT document_id FROM doc_versions WHERE id = $1 AND org_id = $2",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_ver_status = {
    "svc_documents_version_status",
    "SELECT status, number FROM doc_versions WHERE id = $1",
    1, 0
};

static const svc_stmt_t st_ver_decide = {
    "svc_documents_version_decide",
    "UPDATE doc_versions SET status = $3, decided_by = $4, decided_at = now(),"
    " decision_comment = $5 WHERE id = $1 AND org_id = $2 AND status = 'draft'",
    5, 0
};

static const svc_stmt_t st_doc_set_approved = {
    "svc_documents_set_approved",
    "UPDATE documents SET approved_version_id = $3, updated_at = now()"
    " WHERE id = $1 AND org_id = $2",
    3, 0
};

static const svc_stmt_t st_cmt_list = {
    "svc_documents_comments_list",
    "SELECT c.seq, c.id, c.document_id, c.version_id, c.share_id, c.author_name, c.body,"
    " c.created_at FROM doc_comments c"
    " WHERE c.document_id = $1 AND c.org_id = $2 AND c.seq < $3::bigint"
    " ORDER BY c.seq DESC LIMIT $4::int",
    4, SVC_STMT_READ | SVC_STMT_BINARY
};

static const char *const kind_values[] = { "toc", "section", NULL };
static const char *const ver_prefix[] = { "ver_", NULL };

/* Bodies are capped in bytes by SvcDocumentLimit (svc_doc_check_size); the
 * schema's bound only keeps absurd lengths out. */
#define BODY_MAX (64LL * 1024 * 1024)

const svc_field_t svc_body_document_create[] = {
    { .name = "kind", .type = SVC_FT_ENUM, .required = 1, .values = kind_values,
      .description = "toc: the product's table of contents (at most one per product); section: "
        "a section document." },
    { .name = "title", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 200,
      .description = "The title, 1 to 200 characters." },
    { .name = "body", .type = SVC_FT_TEXT, .required = 1, .max = BODY_MAX,
      .description = "The first version's text, in Markdown, at most SvcDocumentLimit bytes "
        "(default 1 MiB)." },
    SVC_FIELD_END
};

const svc_field_t svc_body_document_edit[] = {
    { .name = "body", .type = SVC_FT_TEXT, .required = 1, .max = BODY_MAX,
      .description = "The new text, in Markdown, at most SvcDocumentLimit bytes." },
    { .name = "base_version_id", .type = SVC_FT_ID, .required = 1, .values = ver_prefix,
      .description = "The version the edit was made from: the document's current version, or "
        "the edit is refused with 409 conflict (someone else changed it meanwhile)." },
    SVC_FIELD_END
};

const svc_field_t svc_body_request_changes[] = {
    { .name = "comment", .type = SVC_FT_TEXT, .required = 1, .min = 1, .max = 10000,
      .description = "What should change, 1 to 10000 characters." },
    SVC_FIELD_END
};


/* The document with its newest versions and how many there are. */
static apr_status_t reply_document(svc_ctx_t *ctx, svc_db_t *db, const char *id, int status)
{
    svc_dbres_t *res, *vres, *cres;
    apr_int64_t total;
    svc_jbuf_t b;
    apr_status_t rv;
    int i;

    if ((rv = svc_org_row(ctx, db, &st_doc_get, "document", id, &res)) != APR_SUCCESS) {
        return rv;
    }
    if ((rv = svc_db_execv(db, &st_doc_versions_top, ctx->pool, &vres, id, ctx->org->id))
        != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_doc_versions_count, ctx->pool, &cres, id, ctx->org->id))
           != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_int64(cres, 0, 0, &total) != APR_SUCCESS
        || (svc_dbres_rows(vres) > 0 && svc_shape_check(vres, 0, svc_version_item)
                                        != APR_SUCCESS)) {
        return SVC_EDB;
    }
    if ((rv = svc_reply_row(ctx, status, res, document_item)) != APR_SUCCESS) {
        return rv;
    }
    svc_jbuf_init(&b, ctx->pool, 512);
    svc_jbuf_raw(&b, "[", 1);
    for (i = 0; i < svc_dbres_rows(vres); i++) {
        if (i) {
            svc_jbuf_raw(&b, ",", 1);
        }
        if ((rv = svc_row_json(&b, vres, i, 0, svc_version_item)) != APR_SUCCESS) {
            return rv;
        }
    }
    svc_jbuf_raw(&b, "]", 1);
    svc_reply_add(ctx, "versions", svc_jbuf_text(&b, NULL));
    svc_reply_add(ctx, "versions_total", apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT, total));
    return APR_SUCCESS;
}

apr_status_t svc_h_documents_list(svc_ctx_t *ctx)
{
    const char *product = apr_table_get(ctx->params, "productId");
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_product_check(ctx, db, product)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_rows(ctx, &st_doc_list, document_item, product, ctx->org->id,
                          SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

static apr_status_t create_document(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *product = apr_table_get(ctx->params, "productId");
    const char *id = svc_id_new(ctx->pool, "doc_");
    const char *vid = svc_id_new(ctx->pool, "ver_");
    const char *kind = svc_json_str(ctx->body, "kind");
    const char *title = svc_json_str(ctx->body, "title");
    const svc_new_version_t *nv = baton;
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_MEMBER, SVC_PROLE_NONE)) != APR_SUCCESS
        || (rv = svc_org_row(ctx, db, &st_prd_hold, "product", product, &res))
           != APR_SUCCESS) {
        return rv;
    }
    /* The document names its first version, written next; the reference is
     * checked at commit. */
    rv = svc_db_execv(db, &st_doc_insert, ctx->pool, NULL, id, ctx->org->id, product, kind,
                      title, vid, ctx->who->user_id);
    if (rv == SVC_ECONFLICT) {
        return svc_fail(ctx, 409, "conflict", "Product %s has a table of contents already.",
                        product);
    }
    if (rv != APR_SUCCESS
        || (rv = svc_doc_version_add(ctx, db, id, vid, nv, NULL)) != APR_SUCCESS
        || (rv = svc_doc_audit(ctx, db, "document.created", "document", id,
                               json_pack("{s:s,s:s,s:s,s:s,s:I}", "product_id", product,
                                         "kind", kind, "title", title, "version_id", vid,
                                         "bytes", (json_int_t)strlen(nv->body))))
           != APR_SUCCESS) {
        return rv;
    }
    return reply_document(ctx, db, id, 201);
}

/* The version a user writes with the body's "body" (*nv), checked against
 * SvcDocumentLimit. */
static apr_status_t user_version(svc_ctx_t *ctx, const char *source, svc_new_version_t *nv)
{
    memset(nv, 0, sizeof(*nv));
    nv->body = svc_json_str(ctx->body, "body");
    nv->author_kind = "user";
    nv->source = source;
    nv->base_version_id = svc_json_str(ctx->body, "base_version_id");
    return svc_doc_check_size(ctx, strlen(nv->body));
}

apr_status_t svc_h_documents_create(svc_ctx_t *ctx)
{
    svc_new_version_t nv;
    apr_status_t rv = user_version(ctx, "create", &nv);

    return rv == APR_SUCCESS ? svc_write(ctx, create_document, &nv) : rv;
}

apr_status_t svc_h_documents_get(svc_ctx_t *ctx)
{
    return svc_reply_one(ctx, "docId", reply_document);
}

apr_status_t svc_h_documents_versions(svc_ctx_t *ctx)
{
    return svc_doc_reply_children(ctx, &st_ver_list, svc_version_item);
}

apr_status_t svc_h_versions_content(svc_ctx_t *ctx)
{
    const char *vid = apr_table_get(ctx->params, "versionId");
    const char *body;
    apr_size_t len;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_doc_version_body(ctx, db, vid, &body, &len);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "No document version %s in %s.", vid,
                        ctx->org->slug);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_body(ctx, 200, "text/markdown; charset=utf-8", body, len);
}

static apr_status_t edit_document(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *doc = apr_table_get(ctx->params, "docId");
    const char *vid = svc_id_new(ctx->pool, "ver_");
    const svc_new_version_t *nv = baton;
    svc_doc_state_t *st;
    int number;
    apr_status_t rv;

    if ((rv = svc_doc_lock(ctx, db, doc, &st)) != APR_SUCCESS) {
        return rv;
    }
    /* Optimistic concurrency: whoever edited another version than the
     * current one did not see the latest text. */
    if (strcmp(st->current_version_id, nv->base_version_id) != 0) {
        return svc_fail(ctx, 409, "conflict", "The document's current version is %s, not %s: "
                        "it changed since you read it. Read it again and redo the edit.",
                        st->current_version_id, nv->base_version_id);
    }
    if ((rv = svc_doc_version_add(ctx, db, doc, vid, nv, &number)) != APR_SUCCESS
        || (rv = svc_doc_audit(ctx, db, "document.edited", "document", doc,
                               json_pack("{s:s,s:i,s:s,s:I}", "version_id", vid,
                                         "number", number, "base_version_id",
                                         nv->base_version_id,
                                         "bytes", (json_int_t)strlen(nv->body))))
           != APR_SUCCESS) {
        return rv;
    }
    return svc_doc_reply_version(ctx, db, vid, 201);
}

apr_status_t svc_h_documents_edit(svc_ctx_t *ctx)
{
    svc_new_version_t nv;
    apr_status_t rv = user_version(ctx, "edit", &nv);

    return rv == APR_SUCCESS ? svc_write(ctx, edit_document, &nv) : rv;
}

/* A decision on a version: its status, and the comment (NULL: approval). */
typedef struct {
    const char *status;
    const char *comment;
} decision_t;

/*
 * Approves the current version or requests changes to it (baton: the
 * decision_t). Only the current version, and only a draft, may be decided:
 * anything else is 409 invalid_status, which is also what the second of
 * two simultaneous decisions gets (it waits for the document's lock, then
 * finds the version decided).
 */
static apr_status_t decide(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *vid = apr_table_get(ctx->params, "versionId");
    const decision_t *d = baton;
    const char *status = d->status, *comment = d->comment;
    int approved = strcmp(status, "approved") == 0;
    const char *doc, *now_status;
    svc_doc_state_t *st;
    svc_dbres_t *res;
    apr_int64_t number = 0;
    apr_status_t rv;

    if ((rv = svc_doc_lock_via(ctx, db, &st_ver_document, "document version", vid, &st))
            != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_ver_status, ctx->pool, &res, vid)) != APR_SUCCESS) {
        return rv;
    }
    doc = st->id;
    now_status = svc_dbres_str(res, 0, 0);
    svc_dbres_int64(res, 0, 1, &number);
    if (strcmp(st->current_version_id, vid) != 0) {
        return svc_fail(ctx, 409, "invalid_status", "Version %s is not the document's current "
                        "version (%s); only the current version can be decided.", vid,
                        st->current_version_id);
    }
    if (strcmp(now_status, "draft") != 0) {
        return svc_fail(ctx, 409, "invalid_status", "Version %s is %s already; a version is "
                        "decided once.", vid, now_status);
    }
    if ((rv = svc_db_execv(db, &st_ver_decide, ctx->pool, NULL, vid, ctx->org->id, status,
                           ctx->who->user_id, comment)) != APR_SUCCESS
        || (approved
            && (rv = svc_db_execv(db, &st_doc_set_approved, ctx->pool, NULL, doc, ctx->org->id,
                                  vid)) != APR_SUCCESS)
        || (rv = svc_doc_audit(ctx, db, approved ? "version.approved"
                                                 : "version.changes_requested",
                               "doc_version", vid,
                               json_pack("{s:s,s:I,s:s?}", "document_id", doc,
                                         "number", (json_int_t)number, "comment", comment)))
           != APR_SUCCESS) {
        return rv;
    }
    return svc_doc_reply_version(ctx, db, vid, 200);
}

apr_status_t svc_h_versions_approve(svc_ctx_t *ctx)
{
    decision_t d = { "approved", NULL };

    return svc_write(ctx, decide, &d);
}

apr_status_t svc_h_versions_request_changes(svc_ctx_t *ctx)
{
    decision_t d = { "changes_requested", svc_json_str(ctx->body, "comment") };

    return svc_write(ctx, decide, &d);
}

apr_status_t svc_h_documents_comments(svc_ctx_t *ctx)
{
    return svc_doc_reply_children(ctx, &st_cmt_list, comment_item);
}
