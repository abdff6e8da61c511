/*
 * svc_attachments_routes.c: the attachments area's routes. Columns:
 * svc_route.h; who may call what, and why: docs/authorization.md.
 */
#include "svc_attachments.h"
#include "svc_attach_api.h"

static const svc_route_t routes[] = {
    /* The org's files: viewers read them, members add them; whoever added
     * one, or an admin, deletes it (the handler decides). */
    { "POST", "/api/orgs/:orgSlug/attachments", svc_h_attachments_upload, SVC_AUTH_USER,
      SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, NULL, 0, NULL, SVC_RF_STREAM_BODY, 201,
      "uploadAttachment", "Upload a file (the raw body, with its own Content-Type) bound to "
      "a request, a document or an improvement", "Attachments", svc_query_attachments_upload,
      SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/attachments", svc_h_attachments_list, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200, "listAttachments",
      "The org's attachments, or those of one request, document or improvement",
      "Attachments", svc_query_attachments_list, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/attachments/:id", svc_h_attachments_get, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 200, "getAttachment",
      "An attachment's metadata: name, type, size, SHA-256, what it is bound to",
      "Attachments", NULL, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/attachments/:id/content", svc_h_attachments_content,
      SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_BINARY, 200,
      "getAttachmentContent", "The file, streamed, as a download", "Attachments", NULL,
      SVC_PROLE_NONE },
    { "DELETE", "/api/orgs/:orgSlug/attachments/:id", svc_h_attachments_delete, SVC_AUTH_USER,
      SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, NULL, 0, NULL, 0, 204, "deleteAttachment",
      "Delete an attachment (its uploader, or an admin)", "Attachments", NULL,
      SVC_PROLE_NONE },
    { NULL, NULL, NULL, 0, 0, 0, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, SVC_PROLE_NONE }
};

const svc_area_t svc_attachments_area = {
    "attachments", "Files bound to requests, documents and improvements, stored in PostgreSQL "
    "in chunks and streamed both ways.", routes
};
