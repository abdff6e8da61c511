/*
 * svc_share_routes.c: the share area's routes. Fields: svc_route.h;
 * who may call what, and why: docs/authorization.md.
 */
#include "svc_share.h"
#include "svc_portal.h"
#include "svc_shares.h"

static const svc_qparam_t q_comments[] = {
    { "document_id", "string", "Only the comments on this document." },
    { NULL, NULL, NULL }
};

static const svc_route_t routes[] = {
    /* A link lets people outside the org read a product: an access decision,
     * so making and revoking one takes an admin-scope token (or a session);
     * any member may decide it for their org's products. */
    { .method = "GET", .path = "/api/orgs/:orgSlug/products/:productId/shares",
      .handler = svc_h_shares_list, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_MEMBER,
      .flags = SVC_RF_PAGED, .op_id = "listShares", .response = &svc_schema_share,
      .summary = "The product's share links (never their tokens)" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/products/:productId/shares",
      .handler = svc_h_shares_create, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_MEMBER,
      .body = svc_body_share_create, .body_limit = SVC_KB(16), .success = 201,
      .body_example = "{\"expires_in_days\": 14}",
      .op_id = "createShare", .response = &svc_schema_share_created,
      .summary = "Make a share link; the answer carries its token and URL once" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/shares/:shareId/revoke",
      .handler = svc_h_shares_revoke, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_MEMBER,
      .op_id = "revokeShare", .response = &svc_schema_share,
      .summary = "Revoke a share link (at once; again is harmless)" },

    /* The portal: the token is the credential, the client address the
     * rate-limit key. */
    { .method = "GET", .path = "/api/share/:token", .handler = svc_h_portal_index,
      .auth = SVC_AUTH_SHARE, .rate_class = "share", .flags = SVC_RF_SECRET_PATH,
      .op_id = "portalIndex", .response = &svc_schema_portal,
      .summary = "The shared product: its name and documents" },
    { .method = "GET", .path = "/api/share/:token/documents/:docId",
      .handler = svc_h_portal_document, .auth = SVC_AUTH_SHARE, .rate_class = "share",
      .flags = SVC_RF_SECRET_PATH | SVC_RF_MARKDOWN, .op_id = "portalDocument",
      .summary = "A shared document's text (approved, else current), as text/markdown" },
    { .method = "GET", .path = "/api/share/:token/comments", .handler = svc_h_portal_comments,
      .auth = SVC_AUTH_SHARE, .rate_class = "share", .flags = SVC_RF_SECRET_PATH | SVC_RF_PAGED,
      .query = q_comments, .op_id = "portalComments", .response = &svc_schema_portal_comment,
      .summary = "The comments left through this link, newest first" },
    { .method = "POST", .path = "/api/share/:token/comments", .handler = svc_h_portal_comment,
      .auth = SVC_AUTH_SHARE, .body = svc_body_portal_comment, .body_limit = SVC_KB(64),
      .body_example =
          "{\"document_id\": \"doc_3kTq0dKc5gWm1xQ9aZr2Lb\", \"author_name\": \"Ada\", "
          "\"body\": \"Can the cart remember what I added yesterday?\"}",
      .rate_class = "share", .flags = SVC_RF_SECRET_PATH, .success = 201, .op_id = "portalComment",
      .response = &svc_schema_portal_comment,
      .summary = "Leave a comment on a shared document" },
    SVC_ROUTE_END,
};

static const svc_tag_t tags[] = {
    { "Share portal", "Share links: a product's documents for reviewers outside the "
      "organization, who read them and comment without signing in; the link's token is the "
      "credential (docs/api/shares.md)." },
    { NULL, NULL }
};

const svc_area_t svc_share_area = { .name = "share", .routes = routes, .tags = tags,
    .description = "Public share links to a product's documents, and the portal where "
        "reviewers read them and comment without signing in." };
