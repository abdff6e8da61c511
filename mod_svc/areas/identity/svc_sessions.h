/*
 * svc_sessions.h: server-side sessions behind the service_session cookie.
 *
 * The cookie is an HS256 JWT whose claims name the user (sub) and the
 * session row (sid); the row decides whether it is still good, so logout
 * and revocation take effect at once whatever the JWT's exp says.
 */
#ifndef SVC_SESSIONS_H
#define SVC_SESSIONS_H

#include "svc_identity.h"

/* Authenticates a cookie value: 401 problem when it is not a live session. */
apr_status_t svc_session_authenticate(svc_ctx_t *ctx, const char *cookie,
                                      svc_principal_t **pwho);

/*
 * Revokes one of user_id's sessions and writes its session.revoked audit
 * entry (with `reason`), in the caller's transaction. *pfound is 0 when the user has
 * no session with this id; one revoked already is found and left as it was,
 * without a second entry.
 */
apr_status_t svc_session_revoke(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                                const char *user_id, const char *sid, const char *reason,
                                int *pfound);

/* Route handlers: GET /api/me/sessions, DELETE /api/me/sessions/:id,
 * POST /api/me/sessions/revoke-others. */
svc_handler_t svc_h_sessions_list, svc_h_sessions_revoke, svc_h_sessions_revoke_others;

/* The answers' schemas: a session; how many revoke-others ended. */
extern const svc_schema_t svc_schema_session, svc_schema_sessions_revoked;

#endif /* SVC_SESSIONS_H */
