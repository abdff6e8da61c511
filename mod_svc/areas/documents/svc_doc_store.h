/*
 * svc_doc_store.h: what the documents area's files share (documents-private):
 * the JSON shapes of versions and documents, the document lock every
 * change takes, and writing a new version.
 */
#ifndef SVC_DOC_STORE_H
#define SVC_DOC_STORE_H

#include "svc_documents.h"

/* A version as the API shows it (never its body): SVC_VERSION_COLS over
 * SVC_VERSION_FROM, in this shape. */
extern const svc_col_t svc_version_item[];
extern const svc_schema_t svc_schema_doc_version;

#define SVC_VERSION_COLS                                                            \
    "v.id, v.document_id, v.number, v.status, v.author_kind, v.author_user_id,"     \
    " au.name, v.author_model, v.source, v.base_version_id, v.bytes,"               \
    " v.decision_comment, v.decided_by, v.decided_at, v.created_at"
#define SVC_VERSION_FROM "doc_versions v LEFT JOIN users au ON au.id = v.author_user_id"

/* A document row, locked for the rest of the transaction. */
typedef struct {
    const char *id, *product_id, *kind, *title;
    const char *current_version_id;
    const char *approved_version_id;    /* NULL when none */
} svc_doc_state_t;

/*
 * Inside a write transaction: the caller still a member (under the org
 * lock), then the document's row locked (FOR NO KEY UPDATE), so changes of
 * one document run one at a time and each sees the last one's result. A
 * 404 problem when the org has no such document.
 */
apr_status_t svc_doc_lock(svc_ctx_t *ctx, svc_db_t *db, const char *doc_id,
                          svc_doc_state_t **pst);

/*
 * svc_doc_lock for a change addressed through something of a document (a
 * version, a patch), in the caller's write: the document `owner` names for
 * (id, org) found (404 naming `what` when not), then locked.
 */
apr_status_t svc_doc_lock_via(svc_ctx_t *ctx, svc_db_t *db, const svc_stmt_t *owner,
                              const char *what, const char *id, svc_doc_state_t **pst);

/*
 * A list of a document's children (versions, patches, comments): 404 when
 * the org has no such document, else the page `st` (its parameters: the
 * document, the org, the page's bound and size) in `shape`.
 */
apr_status_t svc_doc_reply_children(svc_ctx_t *ctx, const svc_stmt_t *st,
                                    const svc_col_t *shape);

/* A version to write. */
typedef struct {
    const char *body;
    const char *author_kind;        /* "user" or "ai" */
    const char *author_model;       /* the model, for "ai"; else NULL */
    const char *source;             /* "create", "edit", "regenerate", "patch" */
    const char *base_version_id;    /* what it was made from; NULL for the first */
} svc_new_version_t;

/*
 * Writes a version (the caller, ctx->who, as its author or, for "ai", as
 * who asked) with the next number, and makes it the document's current
 * version. Inside the transaction holding svc_doc_lock (or creating the
 * document). *pid and *pnumber (may be NULL) say what was written.
 */
apr_status_t svc_doc_version_add(svc_ctx_t *ctx, svc_db_t *db, const char *doc_id,
                                 const char *version_id, const svc_new_version_t *nv,
                                 int *pnumber);

/* Answers `status` with the version. */
apr_status_t svc_doc_reply_version(svc_ctx_t *ctx, svc_db_t *db, const char *version_id,
                                   int status);

/* The body of a version of this org (*pbody, from ctx->pool). SVC_ENOTFOUND
 * when there is none. */
apr_status_t svc_doc_version_body(svc_ctx_t *ctx, svc_db_t *db, const char *version_id,
                                  const char **pbody, apr_size_t *plen);

/* A 413 problem when a document body is over SvcDocumentLimit. */
apr_status_t svc_doc_check_size(svc_ctx_t *ctx, apr_size_t len);

/* The audit entry of a change to a document, in the caller's transaction. */
apr_status_t svc_doc_audit(svc_ctx_t *ctx, svc_db_t *db, const char *action,
                           const char *target_type, const char *target_id, json_t *data);

#endif /* SVC_DOC_STORE_H */
