/*
 * svc_shares.h: making, listing and revoking share links (share-private),
 * and the token format they share with the portal.
 */
#ifndef SVC_SHARES_H
#define SVC_SHARES_H

#include "svc_share.h"

#define SVC_SHARE_PREFIX "svc_shr_"

/* The stored form of a token: keyed BLAKE2b-256 under the server's share key. */
void svc_share_hash(const svc_config_t *conf, const char *token, unsigned char out[32]);

/* Route handlers. */
svc_handler_t svc_h_shares_list, svc_h_shares_create, svc_h_shares_revoke;

/* The routes' request bodies. */
extern const svc_field_t svc_body_share_create[];

/* A share link; one just made, with its token and URL. */
extern const svc_schema_t svc_schema_share, svc_schema_share_created;

#endif /* SVC_SHARES_H */
