/*
 * svc_docs.h: documents, their versions and decisions, direct edits and
 * reviewers' comments (documents-private).
 */
#ifndef SVC_DOCS_H
#define SVC_DOCS_H

#include "svc_documents.h"

apr_status_t svc_h_documents_list(svc_ctx_t *ctx);
apr_status_t svc_h_documents_create(svc_ctx_t *ctx);
apr_status_t svc_h_documents_get(svc_ctx_t *ctx);
apr_status_t svc_h_documents_versions(svc_ctx_t *ctx);
apr_status_t svc_h_documents_edit(svc_ctx_t *ctx);
apr_status_t svc_h_documents_comments(svc_ctx_t *ctx);
apr_status_t svc_h_versions_content(svc_ctx_t *ctx);
apr_status_t svc_h_versions_approve(svc_ctx_t *ctx);
apr_status_t svc_h_versions_request_changes(svc_ctx_t *ctx);

extern const svc_field_t svc_body_document_create[];
extern const svc_field_t svc_body_document_edit[];
extern const svc_field_t svc_body_request_changes[];

/* A document (in lists), with its newest versions (its detail); a comment. */
extern const svc_schema_t svc_schema_document;
extern const svc_schema_t svc_schema_document_detail;
extern const svc_schema_t svc_schema_comment;

#endif /* SVC_DOCS_H */
