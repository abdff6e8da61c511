/*
 * svc_share.h: the share area: public links to a product's documents, and the portal that serves them.
 * May call base/, the kernel and the documents area (svc_documents.h); others call it through this header only.
 *
 * A share link is a secret token ("svc_shr_" + 43 base62 + a checksum, like
 * a personal access token) that lets anyone holding it read one product's
 * documents and comment on them, without signing in. Only a keyed hash of
 * the token is stored; the token is shown once, when the link is made, and
 * never logged (the access log shows [REDACTED] in its place).
 */
#ifndef SVC_SHARE_H
#define SVC_SHARE_H

#include "svc_kernel.h"

/* The area's routes (svc_share_routes.c). */
extern const svc_area_t svc_share_area;

#endif /* SVC_SHARE_H */
