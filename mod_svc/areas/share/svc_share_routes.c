/*
 * svc_share_routes.c: the share area's routes. Columns: svc_route.h;
 * who may call what, and why: docs/authorization.md.
 */
#include "svc_share.h"
#include "svc_portal.h"
#include "svc_shares.h"

static const svc_route_t routes[] = {
    /* A link lets people outside the org read a product: an access decision,
     * so making and revoking one takes an admin-scope token (or a session);
     * any member may decide it for their org's products. */
    { "GET", "/api/orgs/:orgSlug/products/:productId/shares", svc_h_shares_list, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_MEMBER, NULL, 0, NULL, SVC_RF_PAGED, 200, "listShares",
      "The product's share links (never their tokens)", "Share portal", NULL,
      SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/products/:productId/shares", svc_h_shares_create,
      SVC_AUTH_USER, SVC_SCOPE_ADMIN, SVC_ROLE_MEMBER, svc_body_share_create, SVC_KB(16), NULL,
      0, 201, "createShare", "Make a share link; the answer carries its token and URL once",
      "Share portal", NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/shares/:shareId/revoke", svc_h_shares_revoke, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_MEMBER, NULL, 0, NULL, 0, 200, "revokeShare",
      "Revoke a share link (at once; again is harmless)", "Share portal", NULL,
      SVC_PROLE_NONE },

    /* The portal: the token is the credential, the client address the
     * rate-limit key. */
    { "GET", "/api/share/:token", svc_h_portal_index, SVC_AUTH_SHARE, SVC_SCOPE_NONE,
      SVC_ROLE_NONE, NULL, 0, "share", SVC_RF_SECRET_PATH, 200, "portalIndex",
      "The shared product: its name and documents", "Share portal", NULL, SVC_PROLE_NONE },
    { "GET", "/api/share/:token/documents/:docId", svc_h_portal_document, SVC_AUTH_SHARE,
      SVC_SCOPE_NONE, SVC_ROLE_NONE, NULL, 0, "share", SVC_RF_SECRET_PATH | SVC_RF_MARKDOWN,
      200, "portalDocument", "A shared document's text (approved, else current), as "
      "text/markdown", "Share portal", NULL, SVC_PROLE_NONE },
    { "POST", "/api/share/:token/comments", svc_h_portal_comment, SVC_AUTH_SHARE,
      SVC_SCOPE_NONE, SVC_ROLE_NONE, svc_body_portal_comment, SVC_KB(64), "share",
      SVC_RF_SECRET_PATH, 201, "portalComment", "Leave a comment on a shared document",
      "Share portal", NULL, SVC_PROLE_NONE },
    { NULL, NULL, NULL, 0, 0, 0, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, SVC_PROLE_NONE }
};

const svc_area_t svc_share_area = {
    "share", "Public share links to a product's documents, and the portal where reviewers "
    "read them and comment without signing in.", routes
};
