/*
 * svc_users.h: user accounts and GET /api/me.
 */
#ifndef SVC_USERS_H
#define SVC_USERS_H

#include "svc_identity.h"

apr_status_t svc_h_me(svc_ctx_t *ctx);

#endif /* SVC_USERS_H */
