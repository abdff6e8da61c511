/*
 * svc_doc_portal.c: what the share portal reads and writes (declared in
 * svc_documents.h). Every statement names the product of the share link
 * and its org, so a link reaches its own product's documents only.
 */
#include "svc_documents.h"

/* Reviewers see the approved version, or the current one where none is. */
#define SHOWN "coalesce(d.approved_version_id, d.current_version_id)"

static const svc_stmt_t st_portal_index = {
    "svc_documents_portal_index",
    "SELECT json_build_object('product', json_build_object('id', pr.id, 'name', pr.name),"
    " 'documents', coalesce((SELECT json_agg(json_build_object('id', d.id, 'kind', d.kind,"
    "   'title', d.title, 'version_id', v.id, 'version_number', v.number,"
    "   'approved', d.approved_version_id IS NOT NULL, 'updated_at', svc_ts(v.created_at))"
    "   ORDER BY d.kind = 'toc' DESC, d.seq)"
    "  FROM documents d JOIN doc_versions v ON v.id = " SHOWN
    "  WHERE d.product_id = pr.id), '[]'::json))::text"
    " FROM products pr WHERE pr.id = $1 AND pr.org_id = $2",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_portal_body = {
    "svc_documents_portal_body",
    "SELECT v.body FROM documents d JOIN doc_versions v ON v.id = " SHOWN
    " WHERE d.id = $1 AND d.product_id = $2 AND d.org_id = $3",
    3, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_portal_comment = {
    "svc_documents_portal_comment",
    "INSERT INTO doc_comments AS c (id, org_id, document_id, version_id, share_id,"
    " author_name, body)"
    " SELECT $1, d.org_id, d.id, " SHOWN ", $5, $6, $7 FROM documents d"
    " WHERE d.id = $2 AND d.product_id = $3 AND d.org_id = $4"
    " RETURNING json_build_object('id', c.id, 'document_id', c.document_id,"
    " 'version_id', c.version_id, 'author_name', c.author_name, 'body', c.body,"
    " 'created_at', svc_ts(c.created_at))::text",
    7, 0
};

/* The comments left through one link, newest first: the product's documents
 * narrow them first, so the (document_id, seq) index serves the list. */
static const svc_stmt_t st_portal_comments = {
    "svc_documents_portal_comments",
    "SELECT c.seq, c.id, c.document_id, c.version_id, c.author_name, c.body, c.created_at"
    " FROM documents d JOIN doc_comments c ON c.document_id = d.id AND c.org_id = d.org_id"
    " WHERE d.product_id = $1 AND d.org_id = $2 AND c.share_id = $3"
    " AND ($4::text IS NULL OR d.id = $4) AND c.seq < $5::bigint"
    " ORDER BY c.seq DESC LIMIT $6::int",
    6, SVC_STMT_READ | SVC_STMT_BINARY
};

apr_status_t svc_documents_portal_index(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                        const char *product_id, const char **pjson)
{
    return svc_db_value(db, &st_portal_index, p, pjson, NULL, product_id, org_id);
}

apr_status_t svc_documents_portal_body(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                       const char *product_id, const char *doc_id,
                                       const char **pbody, apr_size_t *plen)
{
    return svc_db_value(db, &st_portal_body, p, pbody, plen, doc_id, product_id, org_id);
}

apr_status_t svc_documents_portal_comment(svc_db_t *db, apr_pool_t *p,
                                          const svc_portal_comment_t *c, const char **pjson)
{
    return svc_db_value(db, &st_portal_comment, p, pjson, NULL, svc_id_new(p, "cmt_"), c->doc_id,
                        c->product_id, c->org_id, c->share_id, c->author_name, c->body);
}

apr_status_t svc_documents_portal_comments(svc_ctx_t *ctx, const char *org_id,
                                           const char *product_id, const char *share_id,
                                           const char *doc_id, const svc_col_t *item)
{
    return svc_reply_rows(ctx, &st_portal_comments, item, product_id, org_id, share_id, doc_id,
                          SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}
