/*
 * svc_identity.h: the identity area: users, personal access tokens, web sessions and sign-in.
 * May call base/ and the kernel; other areas, the glue and svcctl call it through this header only.
 */
#ifndef SVC_IDENTITY_H
#define SVC_IDENTITY_H

#include "svc_kernel.h"

/* The area's routes (svc_identity_routes.c). */
extern const svc_area_t svc_identity_area;

/*
 * How the kernel's authenticator verifies principals: bearer tokens
 * (svc_tokens.c) and session cookies (svc_sessions.c). The area registry
 * puts it in the configuration (svc_areas_configure).
 */
extern const svc_verifiers_t svc_identity_verifiers;

/* Creates this process's authentication cache (httpd: once per child).
 * Without it, every request authenticates with its own round trip. */
apr_status_t svc_pat_cache_init(apr_pool_t *p);

/* What a new token is to be. */
typedef struct {
    const char *user_id;
    const char *name;
    svc_scope_e scope;
    const char *org_id;         /* NULL: not bound */
    int days;                   /* 0: never expires; else 1..365 */
} svc_token_spec_t;

/*
 * Creates a token and its audit entry, in the caller's transaction
 * (svc_write, or svcctl's svc_db_tx). *psecret is the plaintext (show it
 * once), *pmeta the metadata object (bound to p). SVC_ENOTFOUND when the
 * token is bound to an org the user no longer belongs to.
 */
apr_status_t svc_token_create(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                              const svc_token_spec_t *spec, const svc_actor_t *actor,
                              const char **psecret, json_t **pmeta);

/*
 * Revokes token `id`, audit-logged (token.revoked) by `actor`, in the
 * caller's transaction. user_id and org_id narrow which token may be
 * meant (NULL: any user's, any binding: the operator's svcctl). *prevoked
 * is 1 when this call revoked it, 0 when it was revoked already (nothing
 * written). SVC_ENOTFOUND when there is no such token within the narrowing.
 */
apr_status_t svc_token_revoke(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                              const char *id, const char *user_id, const char *org_id,
                              int *prevoked);

/* Every token of a user, newest first, as a JSON array text of their
 * metadata (as GET /api/me/tokens shows it; never a secret). */
apr_status_t svc_tokens_of(svc_db_t *db, apr_pool_t *p, const char *user_id,
                           const char **pjson);

/* The sign-in directives as written: references (env:, file:, exec:) or,
 * where allowed, literal values; NULL when the directive is absent. */
typedef struct {
    const char *client_id;
    const char *client_secret;      /* a reference, never a literal */
    const char *web_url;
    const char *api_url;
} svc_signin_refs_t;

/*
 * Resolves the references into conf (values allocated from p, which must
 * live as long as conf). An env: reference whose variable is unset or
 * empty counts as absent: a missing client id or secret turns sign-in off
 * (conf->signin_off says why) and a missing URL means the public
 * provider's. Anything present but wrong (an unreadable file, a failing
 * program, a malformed URL, an inline secret) is an error: *perr says what.
 */
apr_status_t svc_signin_configure(svc_config_t *conf, const svc_signin_refs_t *refs,
                                  apr_pool_t *p, const char **perr);

/* NULL when `url` is a usable provider base URL (http or https, a host, no
 * query, fragment or user info), else why not. *pnorm is it without
 * trailing slashes. */
const char *svc_signin_check_base_url(apr_pool_t *p, const char *url, const char **pnorm);

/* NULL when `url` is a usable SvcUIURL (a path on this site, or an http(s)
 * URL), else why not. */
const char *svc_signin_check_ui_url(apr_pool_t *p, const char *url);

/*
 * Opens a session for the user, in the caller's transaction: inserts the
 * row and signs the cookie value. *pcookie is the JWT (the
 * cookie's value), *psid the session id.
 */
apr_status_t svc_session_create(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                                const char *user_id, const char *ip, const char *user_agent,
                                const char **pcookie, const char **psid);

/*
 * Creates a user, audit-logged, in the caller's transaction. allow_email_link: the first sign-in of a
 * provider identity with this (verified) address may claim the account;
 * otherwise sign-in refuses to link it (docs/authorization.md).
 * SVC_ECONFLICT when the email is taken.
 */
apr_status_t svc_user_add(svc_db_t *db, apr_pool_t *p, const char *email, const char *name,
                          int founder, int allow_email_link, const svc_actor_t *actor,
                          const char **pid);

/* Allows the next sign-in with the user's verified address to claim the
 * account, audit-logged, in the caller's transaction. SVC_ECONFLICT when a provider identity has claimed
 * it already. */
apr_status_t svc_user_allow_email_link(svc_db_t *db, apr_pool_t *p, const char *user_id,
                                       const svc_actor_t *actor);

/* The user id for an email (case-insensitive); SVC_ENOTFOUND if none. */
apr_status_t svc_user_by_email(svc_db_t *db, apr_pool_t *p, const char *email,
                               const char **pid);

#endif /* SVC_IDENTITY_H */
