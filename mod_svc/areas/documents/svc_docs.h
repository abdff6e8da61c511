/*
 * svc_docs.h: documents, their versions and decisions, direct edits and
 * reviewers' comments (documents-private).
 */
#ifndef SVC_DOCS_H
#define SVC_DOCS_H

#include "svc_documents.h"

/* Route handlers. */
svc_handler_t svc_h_documents_list, svc_h_documents_create, svc_h_documents_get,
              svc_h_documents_versions, svc_h_documents_edit, svc_h_documents_comments,
              svc_h_versions_content, svc_h_versions_approve, svc_h_versions_request_changes;

/* The routes' request bodies. */
extern const svc_field_t svc_body_document_create[], svc_body_document_edit[],
                         svc_body_request_changes[];

/* A document (in lists), with its newest versions (its detail); a comment. */
extern const svc_schema_t svc_schema_document, svc_schema_document_detail, svc_schema_comment;

#endif /* SVC_DOCS_H */
