/*
 * svc_doc_plan.c: what the pipeline reads and writes (svc_documents.h): a
 * request's product and its table of contents, and the state of a
 * product's documents.
 */
#include "svc_documents.h"
#include "svc_doc_store.h"

#include <string.h>

static const svc_stmt_t st_plan_product = {
    "svc_documents_plan_product",
    "INSERT INTO products (id, org_id, project_id, name, created_by) VALUES ($1, $2, $3, $4, $5)",
    5, 0
};

static const svc_stmt_t st_plan_toc = {
    "svc_documents_plan_toc",
    "INSERT INTO documents (id, org_id, product_id, kind, title, current_version_id,"
    " created_by) VALUES ($1, $2, $3, 'toc', 'Contents', $4, $5)",
    5, 0
};

static const svc_stmt_t st_of_product = {
    "svc_documents_of_product",
    "SELECT d.id, d.kind, d.title, d.current_version_id, v.number, v.status,"
    " d.approved_version_id, CASE WHEN $3::boolean THEN coalesce(av.body, v.body) END,"
    " (SELECT 1 FROM products WHERE id = $1 AND org_id = $2)"
    " FROM (SELECT 1) one"
    " LEFT JOIN documents d ON d.product_id = $1 AND d.org_id = $2"
    " LEFT JOIN doc_versions v ON v.id = d.current_version_id"
    " LEFT JOIN doc_versions av ON av.id = d.approved_version_id"
    " ORDER BY d.kind = 'toc' DESC, d.seq LIMIT 1000",
    3, SVC_STMT_READ | SVC_STMT_BINARY
};

apr_status_t svc_documents_plan(svc_ctx_t *ctx, svc_db_t *db, const char *project_id,
                                const char *name, const char *toc_body, const char *model,
                                const char **pproduct, const char **ptoc)
{
    const char *product = svc_id_new(ctx->pool, "prd_");
    const char *doc = svc_id_new(ctx->pool, "doc_");
    const char *vid = svc_id_new(ctx->pool, "ver_");
    svc_new_version_t nv;
    apr_status_t rv;

    memset(&nv, 0, sizeof(nv));
    nv.body = toc_body;
    nv.author_kind = model ? "ai" : "user";
    nv.author_model = model;
    nv.source = "create";
    if ((rv = svc_db_execv(db, &st_plan_product, ctx->pool, NULL, product, ctx->org->id,
                           project_id, name, ctx->who->user_id)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_plan_toc, ctx->pool, NULL, doc, ctx->org->id, product,
                              vid, ctx->who->user_id)) != APR_SUCCESS
        || (rv = svc_doc_version_add(ctx, db, doc, vid, &nv, NULL)) != APR_SUCCESS
        || (rv = svc_doc_audit(ctx, db, "product.created", "product", product,
                               json_pack("{s:s,s:s}", "name", name, "project_id", project_id)))
           != APR_SUCCESS
        || (rv = svc_doc_audit(ctx, db, "document.created", "document", doc,
                               json_pack("{s:s,s:s,s:s,s:s,s:I,s:s?}", "product_id", product,
                                         "kind", "toc", "title", "Contents", "version_id", vid,
                                         "bytes", (json_int_t)strlen(toc_body),
                                         "model", model))) != APR_SUCCESS) {
        return rv;
    }
    *pproduct = product;
    *ptoc = doc;
    return APR_SUCCESS;
}

apr_status_t svc_documents_of_product(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                      const char *product_id, int bodies,
                                      apr_array_header_t **pdocs)
{
    apr_array_header_t *docs;
    svc_dbres_t *res;
    apr_status_t rv;
    int i, n;

    rv = svc_db_execv(db, &st_of_product, p, &res, product_id, org_id, bodies ? "t" : "f");
    if (rv != APR_SUCCESS) {
        return rv;
    }
    n = svc_dbres_rows(res);
    if (n == 0 || svc_dbres_isnull(res, 0, 8)) {
        return SVC_ENOTFOUND;
    }
    docs = apr_array_make(p, n, sizeof(svc_doc_brief_t));
    for (i = 0; i < n && !svc_dbres_isnull(res, i, 0); i++) {
        svc_doc_brief_t *d = apr_array_push(docs);
        apr_int64_t number = 0;

        d->id = apr_pstrdup(p, svc_dbres_str(res, i, 0));
        d->kind = apr_pstrdup(p, svc_dbres_str(res, i, 1));
        d->title = apr_pstrdup(p, svc_dbres_str(res, i, 2));
        d->current_version_id = apr_pstrdup(p, svc_dbres_str(res, i, 3));
        if (svc_dbres_int64(res, i, 4, &number) != APR_SUCCESS) {
            return SVC_EDB;
        }
        d->current_number = (int)number;
        d->current_status = apr_pstrdup(p, svc_dbres_str(res, i, 5));
        d->approved_version_id = svc_dbres_isnull(res, i, 6) ? NULL
                                 : apr_pstrdup(p, svc_dbres_str(res, i, 6));
        if (!svc_dbres_isnull(res, i, 7)) {
            d->len = svc_dbres_len(res, i, 7);
            d->body = apr_pstrmemdup(p, svc_dbres_str(res, i, 7), d->len);
        }
    }
    *pdocs = docs;
    return APR_SUCCESS;
}
