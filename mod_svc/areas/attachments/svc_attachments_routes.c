/*
 * svc_attachments_routes.c: the attachments area's routes. Fields:
 * svc_route.h; who may call what, and why: docs/authorization.md.
 */
#include "svc_attachments.h"
#include "svc_attach_api.h"

static const svc_route_t routes[] = {
    /* The org's files: viewers read them, members add them; whoever added
     * one, or an admin, deletes it (the handler decides). */
    { .method = "POST", .path = "/api/orgs/:orgSlug/attachments",
      .handler = svc_h_attachments_upload, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .flags = SVC_RF_STREAM_BODY, .success = 201, .op_id = "uploadAttachment",
      .tag = "Attachments", .query = svc_query_attachments_upload,
      .summary = "Upload a file (the raw body, with its own Content-Type) bound to a request, a "
        "document or an improvement" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/attachments", .handler = svc_h_attachments_list,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .flags = SVC_RF_PAGED,
      .op_id = "listAttachments", .tag = "Attachments", .query = svc_query_attachments_list,
      .summary = "The org's attachments, or those of one request, document or improvement" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/attachments/:id",
      .handler = svc_h_attachments_get, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .op_id = "getAttachment", .tag = "Attachments",
      .summary = "An attachment's metadata: name, type, size, SHA-256, what it is bound to" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/attachments/:id/content",
      .handler = svc_h_attachments_content, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .flags = SVC_RF_BINARY, .op_id = "getAttachmentContent", .tag = "Attachments",
      .summary = "The file, streamed, as a download" },
    { .method = "DELETE", .path = "/api/orgs/:orgSlug/attachments/:id",
      .handler = svc_h_attachments_delete, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER,
      .success = 204, .op_id = "deleteAttachment", .tag = "Attachments",
      .summary = "Delete an attachment (its uploader, or an admin)" },
    SVC_ROUTE_END,
};

const svc_area_t svc_attachments_area = {
    "attachments", "Files bound to requests, documents and improvements, stored in PostgreSQL "
    "in chunks and streamed both ways.", routes
};
