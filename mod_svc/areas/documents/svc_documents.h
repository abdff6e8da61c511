/*
 * svc_documents.h: the documents area: products and their planning documents, versions, decisions, AI edits, comments.
 * May call base/, the kernel, the providers area (svc_providers.h) and the billing area (svc_billing.h: a budget used up refuses new model work); others call it through this header only.
 *
 * A product is the planning set of a project: a table of contents and
 * section documents. Every change of a document is a new version (its body
 * stored once, never changed); a version is a draft until it is approved
 * or has changes requested, and only the current version can be decided.
 * People edit directly (optimistically: an edit names the version it was
 * based on); the organization's default model regenerates a document or
 * proposes a patch (a unified diff) that people accept or reject. Outside
 * reviewers read through share links (the share area) and leave comments.
 */
#ifndef SVC_DOCUMENTS_H
#define SVC_DOCUMENTS_H

#include "svc_kernel.h"

/* The area's routes (svc_documents_routes.c). */
extern const svc_area_t svc_documents_area;

/*
 * What the share portal reads and writes. Each takes the org and the
 * product a share link is for, so a link never reaches beyond its own
 * product: another product's document is SVC_ENOTFOUND, as an unknown one.
 * A reviewer sees each document's approved version, or its current one
 * where none is approved.
 */

/* The product's name (*pname, from p). SVC_ENOTFOUND when the org has no
 * such product. */
apr_status_t svc_product_name(svc_db_t *db, apr_pool_t *p, const char *org_id,
                              const char *product_id, const char **pname);

/* The product as a reviewer sees it, JSON text:
 * {"product": {"id", "name"}, "documents": [{"id", "kind", "title",
 *  "version_id", "version_number", "approved", "updated_at"}]},
 * the table of contents first, then the sections in the order they were
 * made. */
apr_status_t svc_documents_portal_index(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                        const char *product_id, const char **pjson);

/* The body a reviewer reads (markdown; *pbody lives in p). */
apr_status_t svc_documents_portal_body(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                       const char *product_id, const char *doc_id,
                                       const char **pbody, apr_size_t *plen);

/* A reviewer's comment on the version they read, through share `share_id`;
 * *pjson is the comment. */
typedef struct {
    const char *org_id, *product_id, *doc_id, *share_id;
    const char *author_name, *body;
} svc_portal_comment_t;

apr_status_t svc_documents_portal_comment(svc_db_t *db, apr_pool_t *p,
                                          const svc_portal_comment_t *c, const char **pjson);

/* Answers the page of comments left through share `share_id` on the
 * product's documents (only document `doc_id`'s unless NULL), newest first,
 * each row as `item`: id, document_id, version_id, author_name, body,
 * created_at. */
apr_status_t svc_documents_portal_comments(svc_ctx_t *ctx, const char *org_id,
                                           const char *product_id, const char *share_id,
                                           const char *doc_id, const svc_col_t *item);

/*
 * What the pipeline reads and writes (svc_doc_plan.c).
 */

/*
 * In the caller's transaction, on behalf of the request's caller (ctx:
 * its org and user): a product of `project_id` named `name`, with a table
 * of contents whose first version is `toc_body` (written by `model` when
 * not NULL, else by the caller), and their audit entries
 * (product.created, document.created). *pproduct and *ptoc are the ids.
 */
apr_status_t svc_documents_plan(svc_ctx_t *ctx, svc_db_t *db, const char *project_id,
                                const char *name, const char *toc_body, const char *model,
                                const char **pproduct, const char **ptoc);

/* A document of a product as the pipeline sees it. */
typedef struct {
    const char *id;
    const char *kind;                   /* "toc" or "section" */
    const char *title;
    const char *current_version_id;
    int current_number;
    const char *current_status;         /* "draft", "approved", "changes_requested" */
    const char *approved_version_id;    /* the latest approved version, or NULL */
    /* With bodies: the approved version's body, or the current one's where
     * none is approved, and its bytes. */
    const char *body;
    apr_size_t len;
} svc_doc_brief_t;

/*
 * The product's documents (*pdocs, of svc_doc_brief_t, in p): the table of
 * contents first, then the sections in the order they were made; with
 * `bodies`, each one's approved body (or current, where none is approved). SVC_ENOTFOUND when the org
 * has no such product.
 */
apr_status_t svc_documents_of_product(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                      const char *product_id, int bodies,
                                      apr_array_header_t **pdocs);

#endif /* SVC_DOCUMENTS_H */
