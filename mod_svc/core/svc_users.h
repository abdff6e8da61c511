/*
 * svc_users.h: user accounts and GET /api/me.
 */
#ifndef SVC_USERS_H
#define SVC_USERS_H

#include "svc_types.h"
#include "svc_ctx.h"
#include "svc_db.h"
#include "svc_audit.h"

/* Creates a user, audit-logged. SVC_ECONFLICT when the email is taken. */
apr_status_t svc_user_add(svc_db_t *db, apr_pool_t *p, const char *email, const char *name,
                          int founder, const svc_actor_t *actor, const char **pid);

/* The user id for an email (case-insensitive); SVC_ENOTFOUND if none. */
apr_status_t svc_user_by_email(svc_db_t *db, apr_pool_t *p, const char *email,
                               const char **pid);

apr_status_t svc_h_me(svc_ctx_t *ctx);

#endif /* SVC_USERS_H */
