/*
 * svc_attachments_routes.c: the attachments area's routes. Fields:
 * svc_route.h; who may call what, and why: docs/authorization.md.
 */
#include "svc_attachments.h"
#include "svc_attach_api.h"

static const svc_header_t content_headers[] = {
    SVC_HEADER_DOWNLOAD,
    { .name = "Repr-Digest", .type = SVC_COL_TEXT, .required = 1,
      .description = "The file's SHA-256 (RFC 9530): sha-256=:base64:.",
      .example = "sha-256=:WJG1tSLV3whtD/CxEPvZ0hu0/HFjrzTQgoai6Eb2vgM=:" },
    { .name = "Content-Security-Policy", .type = SVC_COL_TEXT, .required = 1,
      .description = "default-src 'none'; sandbox: inert if a browser shows it anyway.",
      .example = "default-src 'none'; sandbox" },
    { .name = NULL }
};

static const svc_route_t routes[] = {
    /* The org's files: viewers read them, members add them; whoever added
     * one, or an admin, deletes it (the handler decides). */
    { .method = "POST", .path = "/api/orgs/:orgSlug/attachments",
      .handler = svc_h_attachments_upload, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .flags = SVC_RF_STREAM_BODY, .success = 201, .op_id = "uploadAttachment",
      .response = &svc_schema_attachment,
      .query = svc_query_attachments_upload,
      .summary = "Upload a file (the raw body, with its own Content-Type) bound to a request, a "
        "document or an improvement" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/attachments", .handler = svc_h_attachments_list,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .flags = SVC_RF_PAGED,
      .op_id = "listAttachments", .response = &svc_schema_attachment,
      .query = svc_query_attachments_list,
      .summary = "The org's attachments, or those of one request, document or improvement" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/attachments/:id",
      .handler = svc_h_attachments_get, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .op_id = "getAttachment", .response = &svc_schema_attachment,
      .summary = "An attachment's metadata: name, type, size, SHA-256, what it is bound to" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/attachments/:id/content",
      .handler = svc_h_attachments_content, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .flags = SVC_RF_BINARY, .op_id = "getAttachmentContent", .headers = content_headers,
      .media = "*/*",
      .summary = "The file, streamed, as a download" },
    { .method = "DELETE", .path = "/api/orgs/:orgSlug/attachments/:id",
      .handler = svc_h_attachments_delete, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .success = 204, .op_id = "deleteAttachment",
      .summary = "Delete an attachment (its uploader, or an admin)" },
    SVC_ROUTE_END,
};

static const svc_tag_t tags[] = {
    { "Attachments", "Files bound to a request, a document or an improvement: uploaded as "
      "the raw body, stored in PostgreSQL in chunks, downloaded as they were stored "
      "(docs/api/attachments.md)." },
    { NULL, NULL }
};

const svc_area_t svc_attachments_area = { .name = "attachments", .routes = routes, .tags = tags,
    .description = "Files bound to requests, documents and improvements, stored in PostgreSQL "
        "in chunks and streamed both ways." };
