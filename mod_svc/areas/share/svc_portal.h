/*
 * svc_portal.h: the share portal, the /api/share/ routes (share-private): no login,
 * no organization; the token in the path is the only credential.
 */
#ifndef SVC_PORTAL_H
#define SVC_PORTAL_H

#include "svc_share.h"

/* Route handlers. */
svc_handler_t svc_h_portal_index, svc_h_portal_document, svc_h_portal_comment,
              svc_h_portal_comments;

/* The routes' request bodies. */
extern const svc_field_t svc_body_portal_comment[];

/* The shared product; a comment left through the link. */
extern const svc_schema_t svc_schema_portal, svc_schema_portal_comment;

#endif /* SVC_PORTAL_H */
