/*
 * svc_documents_routes.c: the documents area's routes. Fields: svc_route.h;
 * who may call what, and why: docs/authorization.md.
 */
#include "svc_documents.h"
#include "svc_doc_ai.h"
#include "svc_doc_store.h"
#include "svc_docs.h"
#include "svc_products.h"

static const svc_route_t routes[] = {
    /* Products belong to a project: its viewers read them, its developers
     * make them. Documents are the org's: viewers read, members write. */
    { .method = "GET", .path = "/api/orgs/:orgSlug/projects/:projectSlug/products",
      .handler = svc_h_products_list, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .prole = SVC_PROLE_VIEWER, .flags = SVC_RF_PAGED, .op_id = "listProducts",
      .response = &svc_schema_product,
      .summary = "The project's products (planning sets of documents)" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/projects/:projectSlug/products",
      .handler = svc_h_products_create, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_VIEWER,
      .prole = SVC_PROLE_DEVELOPER, .body = svc_body_product_create, .body_limit = SVC_KB(16),
      .body_example = "{\"name\": \"Web shop\"}",
      .success = 201, .op_id = "createProduct", .response = &svc_schema_product,
      .summary = "Create a product in the project" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/products/:productId",
      .handler = svc_h_products_get, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .op_id = "getProduct", .response = &svc_schema_product,
      .summary = "A product, with its project and how many documents it has" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/products/:productId/documents",
      .handler = svc_h_documents_list, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .flags = SVC_RF_PAGED, .op_id = "listDocuments", .response = &svc_schema_document,
      .summary = "The product's documents, each with its current version" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/products/:productId/documents",
      .handler = svc_h_documents_create, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .body = svc_body_document_create, .flags = SVC_RF_DOCUMENT_BODY, .success = 201,
      .body_example =
          "{\"kind\": \"section\", \"title\": \"Cart\", "
          "\"body\": \"# Cart\\n\\nThe cart keeps what a customer picked.\\n\"}",
      .op_id = "createDocument", .response = &svc_schema_document_detail,
      .summary = "Create a document (the table of contents, or a section) with its first version" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/documents/:docId",
      .handler = svc_h_documents_get, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .op_id = "getDocument", .response = &svc_schema_document_detail,
      .summary = "A document: its current version, the approved one, and its newest versions" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/documents/:docId/versions",
      .handler = svc_h_documents_versions, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .flags = SVC_RF_PAGED, .op_id = "listVersions", .response = &svc_schema_doc_version,
      .summary = "Every version of a document, newest first (no bodies)" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/documents/:docId/edit",
      .handler = svc_h_documents_edit, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .body = svc_body_document_edit, .flags = SVC_RF_DOCUMENT_BODY, .success = 201,
      .body_example =
          "{\"body\": \"# Cart\\n\\nThe cart keeps what a customer picked, for a week.\\n\", "
          "\"base_version_id\": \"ver_3kTq0dKc5gWm1xQ9aZr2Lb\"}",
      .op_id = "editDocument", .response = &svc_schema_doc_version,
      .summary = "Write a new draft version (based on the current one, or 409)" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/documents/:docId/regenerate",
      .handler = svc_h_documents_regenerate, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .body = svc_body_regenerate, .body_limit = SVC_KB(64), .rate_class = "models", .success = 201,
      .body_example = "{\"instructions\": \"Shorter, and say how long the cart keeps items.\"}",
      .op_id = "regenerateDocument", .response = &svc_schema_doc_version,
      .answers = SVC_ANS_PROVIDER | SVC_ANS_PAYMENT,
      .summary = "The organization's default model rewrites the document as a new draft version" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/documents/:docId/patches",
      .handler = svc_h_patches_list, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .flags = SVC_RF_PAGED, .op_id = "listPatches", .response = &svc_schema_patch,
      .summary = "Patches the model proposed for the document" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/documents/:docId/patches",
      .handler = svc_h_patches_create, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .body = svc_body_patch_create, .body_limit = SVC_KB(64), .rate_class = "models",
      .body_example = "{\"instructions\": \"Say how long the cart keeps items.\"}",
      .success = 201, .op_id = "proposePatch", .response = &svc_schema_patch,
      .answers = SVC_ANS_PROVIDER | SVC_ANS_PAYMENT,
      .summary = "Ask the organization's default model for a change, kept as a patch (a unified "
        "diff)" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/documents/:docId/comments",
      .handler = svc_h_documents_comments, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .flags = SVC_RF_PAGED, .op_id = "listComments", .response = &svc_schema_comment,
      .summary = "Comments reviewers left through share links" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/doc-versions/:versionId/content",
      .handler = svc_h_versions_content, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .flags = SVC_RF_MARKDOWN, .op_id = "getVersionContent",
      .summary = "A version's body, as text/markdown" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/doc-versions/:versionId/approve",
      .handler = svc_h_versions_approve, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .op_id = "approveVersion", .response = &svc_schema_doc_version,
      .summary = "Approve the document's current version (a draft)" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/doc-versions/:versionId/request-changes",
      .handler = svc_h_versions_request_changes, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .body = svc_body_request_changes, .body_limit = SVC_KB(64), .op_id = "requestChanges",
      .body_example = "{\"comment\": \"Say what happens to the cart when a product is sold out.\"}",
      .response = &svc_schema_doc_version,
      .summary = "Request changes to the document's current version (a draft), saying what" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/patches/:patchId/accept",
      .handler = svc_h_patches_accept, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .op_id = "acceptPatch", .response = &svc_schema_patch,
      .summary = "Apply a proposed patch as a new draft version" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/patches/:patchId/reject",
      .handler = svc_h_patches_reject, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .op_id = "rejectPatch", .response = &svc_schema_patch,
      .summary = "Reject a proposed patch" },
    SVC_ROUTE_END,
};

static const svc_tag_t tags[] = {
    { "Documents", "Products (planning sets of a project) and their Markdown documents: "
      "versions, approval, direct edits with optimistic concurrency, regeneration and patches "
      "by the organization's model, and reviewers' comments (docs/api/documents.md)." },
    { NULL, NULL }
};

const svc_area_t svc_documents_area = { .name = "documents", .routes = routes, .tags = tags,
    .description = "Products and their planning documents: versions, approval, direct edits, "
        "AI regeneration and AI-proposed patches, reviewers' comments." };
