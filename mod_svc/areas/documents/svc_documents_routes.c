/*
 * svc_documents_routes.c: the documents area's routes. Columns: svc_route.h;
 * who may call what, and why: docs/authorization.md.
 */
#include "svc_documents.h"
#include "svc_doc_ai.h"
#include "svc_docs.h"
#include "svc_products.h"

static const svc_route_t routes[] = {
    /* Products belong to a project: its viewers read them, its developers
     * make them. Documents are the org's: viewers read, members write. */
    { "GET", "/api/orgs/:orgSlug/projects/:projectSlug/products", svc_h_products_list,
      SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200,
      "listProducts", "The project's products (planning sets of documents)", "Documents",
      NULL, SVC_PROLE_VIEWER },
    { "POST", "/api/orgs/:orgSlug/projects/:projectSlug/products", svc_h_products_create,
      SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_VIEWER, svc_body_product_create, SVC_KB(16),
      NULL, 0, 201, "createProduct", "Create a product in the project", "Documents", NULL,
      SVC_PROLE_DEVELOPER },
    { "GET", "/api/orgs/:orgSlug/products/:productId", svc_h_products_get, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 200, "getProduct",
      "A product, with its project and how many documents it has", "Documents", NULL,
      SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/products/:productId/documents", svc_h_documents_list,
      SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200,
      "listDocuments", "The product's documents, each with its current version", "Documents",
      NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/products/:productId/documents", svc_h_documents_create,
      SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, svc_body_document_create, 0, NULL,
      SVC_RF_DOCUMENT_BODY, 201, "createDocument",
      "Create a document (the table of contents, or a section) with its first version",
      "Documents", NULL, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/documents/:docId", svc_h_documents_get, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 200, "getDocument",
      "A document: its current version, the approved one, and its newest versions",
      "Documents", NULL, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/documents/:docId/versions", svc_h_documents_versions,
      SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200,
      "listVersions", "Every version of a document, newest first (no bodies)", "Documents",
      NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/documents/:docId/edit", svc_h_documents_edit, SVC_AUTH_USER,
      SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, svc_body_document_edit, 0, NULL, SVC_RF_DOCUMENT_BODY,
      201, "editDocument", "Write a new draft version (based on the current one, or 409)",
      "Documents", NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/documents/:docId/regenerate", svc_h_documents_regenerate,
      SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, svc_body_regenerate, SVC_KB(64),
      "models", 0, 201, "regenerateDocument",
      "The organization's default model rewrites the document as a new draft version",
      "Documents", NULL, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/documents/:docId/patches", svc_h_patches_list, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200, "listPatches",
      "Patches the model proposed for the document", "Documents", NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/documents/:docId/patches", svc_h_patches_create,
      SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, svc_body_patch_create, SVC_KB(64),
      "models", 0, 201, "proposePatch",
      "Ask the organization's default model for a change, kept as a patch (a unified diff)",
      "Documents", NULL, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/documents/:docId/comments", svc_h_documents_comments,
      SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200,
      "listComments", "Comments reviewers left through share links", "Documents", NULL,
      SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/doc-versions/:versionId/content", svc_h_versions_content,
      SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_MARKDOWN, 200,
      "getVersionContent", "A version's body, as text/markdown", "Documents", NULL,
      SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/doc-versions/:versionId/approve", svc_h_versions_approve,
      SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, NULL, 0, NULL, 0, 200,
      "approveVersion", "Approve the document's current version (a draft)", "Documents", NULL,
      SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/doc-versions/:versionId/request-changes",
      svc_h_versions_request_changes, SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_MEMBER,
      svc_body_request_changes, SVC_KB(64), NULL, 0, 200, "requestChanges",
      "Request changes to the document's current version (a draft), saying what",
      "Documents", NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/patches/:patchId/accept", svc_h_patches_accept,
      SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, NULL, 0, NULL, 0, 200, "acceptPatch",
      "Apply a proposed patch as a new draft version", "Documents", NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/patches/:patchId/reject", svc_h_patches_reject,
      SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, NULL, 0, NULL, 0, 200, "rejectPatch",
      "Reject a proposed patch", "Documents", NULL, SVC_PROLE_NONE },
    { NULL, NULL, NULL, 0, 0, 0, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, SVC_PROLE_NONE }
};

const svc_area_t svc_documents_area = {
    "documents", "Products and their planning documents: versions, approval, direct edits, "
    "AI regeneration and AI-proposed patches, reviewers' comments.", routes
};
