/*
 * svc_users.h: user accounts and GET /api/me.
 */
#ifndef SVC_USERS_H
#define SVC_USERS_H

#include "svc_identity.h"

apr_status_t svc_h_me(svc_ctx_t *ctx);

/* GET /api/me's answer. */
extern const svc_schema_t svc_schema_me;

#endif /* SVC_USERS_H */
