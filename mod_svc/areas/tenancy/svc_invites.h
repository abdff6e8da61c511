/*
 * svc_invites.h: invitations by email, to an organization or to a
 * project's team, and the invited user's side: list, accept, decline.
 *
 * An invite is matched to a user by email, case-insensitively. The database
 * holds at most one pending invite per (org, email) and per (project,
 * email), so two simultaneous invitations of one address end in one 201 and
 * one 409. Invites expire after SvcInviteLifetime (default 14 days).
 */
#ifndef SVC_INVITES_H
#define SVC_INVITES_H

#include "svc_tenancy.h"

/*
 * Creates an invite to ctx->org (project_id NULL) or to one of its projects
 * with `role` (an org role, or a project role for a project invite), in the
 * caller's open transaction, audit-logged (invite.created). Answers with a
 * problem when the address already belongs to a member (409
 * already_member), is already invited (409 invite_pending), or belongs to
 * an org viewer invited to a project role above viewer (409
 * viewer_limited). On success *pjson is the invite's JSON text.
 */
apr_status_t svc_invite_create(svc_ctx_t *ctx, svc_db_t *db, const char *project_id,
                               const char *email, const char *role, const char **pjson);

/* Lists ctx->org's pending invites (project_id NULL: to the org). */
apr_status_t svc_invite_list(svc_ctx_t *ctx, const char *project_id);

/* The org's newest pending invites (at most `max`) as a JSON array, and the
 * number pending in all, both as text in p. */
apr_status_t svc_invites_pending(svc_db_t *db, apr_pool_t *p, const char *org_id, int max,
                                 const char **pjson, const char **ptotal);

/* Route handlers. */
svc_handler_t svc_h_org_invite_create, svc_h_org_invites_list, svc_h_org_invite_revoke,
              svc_h_team_invites_list, svc_h_team_invite_revoke, svc_h_my_invites_list,
              svc_h_my_invite_accept, svc_h_my_invite_decline;

/* The routes' request bodies. */
extern const svc_field_t svc_body_org_invite[];

/* An invite; what accepting one joined. */
extern const svc_schema_t svc_schema_invite, svc_schema_invite_accepted;

#endif /* SVC_INVITES_H */
