/*
 * svc_doc_ai.h: what the organization's model does to documents:
 * regeneration and proposed patches (documents-private).
 */
#ifndef SVC_DOC_AI_H
#define SVC_DOC_AI_H

#include "svc_documents.h"

/* Route handlers. */
svc_handler_t svc_h_documents_regenerate, svc_h_patches_create, svc_h_patches_list,
              svc_h_patches_accept, svc_h_patches_reject;

/* The routes' request bodies. */
extern const svc_field_t svc_body_regenerate[], svc_body_patch_create[];

/* A patch the model proposed. */
extern const svc_schema_t svc_schema_patch;

#endif /* SVC_DOC_AI_H */
