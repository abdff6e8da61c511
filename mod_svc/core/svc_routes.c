/*
 * svc_routes.c: THE route table. One row per endpoint; the router, the
 * authorizer, the OpenAPI document and the conformance tests all read it.
 *
 * Columns: method, path, handler, auth, least PAT scope, least org role,
 * body schema, body cap (0: SvcBodyLimit), rate class, flags, success
 * status, operationId, summary, tag, extra query parameters, least project
 * role (routes under /projects/:projectSlug; docs/authorization.md).
 */
#include "svc_route.h"
#include "svc_audit.h"
#include "svc_health.h"
#include "svc_invites.h"
#include "svc_json.h"
#include "svc_members.h"
#include "svc_openapi.h"
#include "svc_orgs.h"
#include "svc_projects.h"
#include "svc_sessions.h"
#include "svc_signin.h"
#include "svc_teams.h"
#include "svc_tokens.h"
#include "svc_users.h"

#define KB(n) ((apr_size_t)(n) * 1024)

static const svc_qparam_t audit_query[] = {
    { "action", "string", "Only entries of this action, such as member.role_changed." },
    { "actor", "string", "Only entries of this actor (a user id)." },
    { "since", "string", "Only entries at or after this RFC 3339 date-time." },
    { "until", "string", "Only entries before this RFC 3339 date-time." },
    { NULL, NULL, NULL }
};

const svc_route_t svc_routes[] = {
    /* Service */
    { "GET", "/api/openapi.json", svc_h_openapi, SVC_AUTH_NONE, SVC_SCOPE_NONE,
      SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_NO_DB, 200, "getOpenApi",
      "This OpenAPI document", "Service", NULL, SVC_PROLE_NONE },
    { "GET", "/internal/health", svc_h_health, SVC_AUTH_INTERNAL, SVC_SCOPE_NONE,
      SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_HIDDEN | SVC_RF_NO_DB, 200, "getHealth",
      "Readiness: database reachable at the needed schema version", "Service",
      NULL, SVC_PROLE_NONE },

    /* Account and tokens */
    { "GET", "/api/me", svc_h_me, SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_NONE,
      NULL, 0, NULL, 0, 200, "getMe",
      "Who am I: user, memberships, and the credential in use", "Tokens", NULL, SVC_PROLE_NONE },
    { "GET", "/api/me/tokens", svc_h_tokens_list, SVC_AUTH_USER, SVC_SCOPE_ADMIN,
      SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_PAGED, 200, "listTokens",
      "List your personal access tokens (metadata only)", "Tokens", NULL, SVC_PROLE_NONE },
    { "POST", "/api/me/tokens", svc_h_tokens_create, SVC_AUTH_USER, SVC_SCOPE_ADMIN,
      SVC_ROLE_NONE, svc_body_token_create, KB(16), "tokens", 0, 201, "createToken",
      "Create a personal access token; the secret is returned this once", "Tokens",
      NULL, SVC_PROLE_NONE },
    { "DELETE", "/api/me/tokens/:id", svc_h_tokens_revoke, SVC_AUTH_USER, SVC_SCOPE_ADMIN,
      SVC_ROLE_NONE, NULL, 0, "tokens", 0, 204, "revokeToken",
      "Revoke a personal access token, effective immediately", "Tokens", NULL, SVC_PROLE_NONE },

    /* Sign-in and sessions */
    { "GET", "/auth/login", svc_h_signin_login, SVC_AUTH_NONE, SVC_SCOPE_NONE, SVC_ROLE_NONE,
      NULL, 0, "signin", 0, 302, "signIn",
      "Start signing in: redirects to the code-hosting provider", "Sign-in",
      svc_q_signin_login, SVC_PROLE_NONE },
    { "GET", "/auth/callback", svc_h_signin_callback, SVC_AUTH_NONE, SVC_SCOPE_NONE,
      SVC_ROLE_NONE, NULL, 0, "signin", SVC_RF_SECRET_QUERY, 302, "signInCallback",
      "The provider's return: opens a session, sets service_session, redirects to the UI",
      "Sign-in", svc_q_signin_callback, SVC_PROLE_NONE },
    { "POST", "/auth/logout", svc_h_signin_logout, SVC_AUTH_USER, SVC_SCOPE_WRITE,
      SVC_ROLE_NONE, NULL, 0, NULL, 0, 204, "signOut",
      "Sign out: ends this session and clears its cookie", "Sign-in", NULL, SVC_PROLE_NONE },
    { "GET", "/api/me/sessions", svc_h_sessions_list, SVC_AUTH_USER, SVC_SCOPE_ADMIN,
      SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_PAGED, 200, "listSessions",
      "List your signed-in sessions; the one in use is marked current", "Sign-in",
      NULL, SVC_PROLE_NONE },
    { "DELETE", "/api/me/sessions/:id", svc_h_sessions_revoke, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_NONE, NULL, 0, NULL, 0, 204, "revokeSession",
      "End one of your sessions, effective immediately", "Sign-in", NULL, SVC_PROLE_NONE },
    { "POST", "/api/me/sessions/revoke-others", svc_h_sessions_revoke_others, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_NONE, NULL, 0, NULL, 0, 200, "revokeOtherSessions",
      "End every session but the one in use", "Sign-in", NULL, SVC_PROLE_NONE },

    /* Tenancy: organizations, members and invites, projects and teams, audit.
     * Who may call what, and why: docs/authorization.md. */
    { "GET", "/api/orgs", svc_h_orgs_list, SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_NONE,
      NULL, 0, NULL, SVC_RF_PAGED, 200, "listOrgs",
      "Your organizations, with your role in each", "Organizations", NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs", svc_h_orgs_create, SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_NONE,
      svc_body_org_create, KB(16), NULL, 0, 201, "createOrg",
      "Create an organization; you become its owner", "Organizations", NULL, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug", svc_h_orgs_get, SVC_AUTH_USER, SVC_SCOPE_READ,
      SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 200, "getOrg",
      "Organization detail: owner, counts, your role", "Organizations", NULL, SVC_PROLE_NONE },
    { "PATCH", "/api/orgs/:orgSlug", svc_h_orgs_update, SVC_AUTH_USER, SVC_SCOPE_WRITE,
      SVC_ROLE_ADMIN, svc_body_org_update, KB(16), NULL, 0, 200, "updateOrg",
      "Rename the organization", "Organizations", NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/transfer-ownership", svc_h_orgs_transfer, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_OWNER, svc_body_transfer, KB(16), NULL, 0, 200,
      "transferOwnership",
      "Hand the organization to another member; you become an admin", "Organizations",
      NULL, SVC_PROLE_NONE },

    { "GET", "/api/orgs/:orgSlug/members", svc_h_members_list, SVC_AUTH_USER, SVC_SCOPE_READ,
      SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200, "listMembers",
      "Members with their roles; for admins, the first page also lists pending invites",
      "Members", NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/members", svc_h_org_invite_create, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, svc_body_org_invite, KB(16), NULL, 0, 201,
      "inviteMember", "Invite someone to the organization by email, with a role", "Members",
      NULL, SVC_PROLE_NONE },
    { "PATCH", "/api/orgs/:orgSlug/members/:userId", svc_h_members_update, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, svc_body_member_update, KB(16), NULL, 0, 200,
      "updateMember", "Change a member's role (never the owner's, never to owner)",
      "Members", NULL, SVC_PROLE_NONE },
    { "DELETE", "/api/orgs/:orgSlug/members/:userId", svc_h_members_remove, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 204, "removeMember",
      "Remove a member (admin), or leave the organization (yourself; not the owner)",
      "Members", NULL, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/invites", svc_h_org_invites_list, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, NULL, 0, NULL, SVC_RF_PAGED, 200, "listOrgInvites",
      "Pending invites to the organization", "Members", NULL, SVC_PROLE_NONE },
    { "DELETE", "/api/orgs/:orgSlug/invites/:id", svc_h_org_invite_revoke, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, NULL, 0, NULL, 0, 204, "revokeOrgInvite",
      "Revoke a pending invite to the organization", "Members", NULL, SVC_PROLE_NONE },

    { "GET", "/api/me/invites", svc_h_my_invites_list, SVC_AUTH_USER, SVC_SCOPE_READ,
      SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_PAGED, 200, "listMyInvites",
      "Your pending invites (matched to your email) to organizations and projects",
      "Members", NULL, SVC_PROLE_NONE },
    { "POST", "/api/me/invites/:id/accept", svc_h_my_invite_accept, SVC_AUTH_USER,
      SVC_SCOPE_WRITE, SVC_ROLE_NONE, NULL, 0, NULL, 0, 200, "acceptInvite",
      "Accept an invite: join the organization (and the project's team)", "Members",
      NULL, SVC_PROLE_NONE },
    { "POST", "/api/me/invites/:id/decline", svc_h_my_invite_decline, SVC_AUTH_USER,
      SVC_SCOPE_WRITE, SVC_ROLE_NONE, NULL, 0, NULL, 0, 204, "declineInvite",
      "Decline an invite", "Members", NULL, SVC_PROLE_NONE },

    { "GET", "/api/orgs/:orgSlug/projects", svc_h_projects_list, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200, "listProjects",
      "Projects of the organization, with your role in each", "Projects and teams",
      svc_query_projects_list, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/projects", svc_h_projects_create, SVC_AUTH_USER,
      SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, svc_body_project_create, KB(16), NULL, 0, 201,
      "createProject", "Create a project; you become its maintainer", "Projects and teams",
      NULL, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/projects/:projectSlug", svc_h_projects_get, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 200, "getProject",
      "Project detail", "Projects and teams", NULL, SVC_PROLE_VIEWER },
    { "PATCH", "/api/orgs/:orgSlug/projects/:projectSlug", svc_h_projects_update,
      SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_VIEWER, svc_body_project_update, KB(16), NULL,
      0, 200, "updateProject", "Change a project's name, description or archived flag",
      "Projects and teams", NULL, SVC_PROLE_MAINTAINER },
    { "GET", "/api/orgs/:orgSlug/projects/:projectSlug/team", svc_h_team_list,
      SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200,
      "listTeam", "The project's team with project roles (pending invites: GET "
      ".../team/invites)", "Projects and teams", NULL, SVC_PROLE_VIEWER },
    { "POST", "/api/orgs/:orgSlug/projects/:projectSlug/team", svc_h_team_add,
      SVC_AUTH_USER, SVC_SCOPE_ADMIN, SVC_ROLE_VIEWER, svc_body_team_add, KB(16), NULL, 0,
      201, "addTeamMember",
      "Add an org member to the team (user_id), or invite someone by email",
      "Projects and teams", NULL, SVC_PROLE_MAINTAINER },
    { "PATCH", "/api/orgs/:orgSlug/projects/:projectSlug/team/:userId", svc_h_team_update,
      SVC_AUTH_USER, SVC_SCOPE_ADMIN, SVC_ROLE_VIEWER, svc_body_team_update, KB(16), NULL, 0,
      200, "updateTeamMember", "Change a team member's project role", "Projects and teams",
      NULL, SVC_PROLE_MAINTAINER },
    { "DELETE", "/api/orgs/:orgSlug/projects/:projectSlug/team/:userId", svc_h_team_remove,
      SVC_AUTH_USER, SVC_SCOPE_ADMIN, SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 204,
      "removeTeamMember",
      "Remove someone from the team (maintainer), or leave it (yourself)",
      "Projects and teams", NULL, SVC_PROLE_VIEWER },
    { "GET", "/api/orgs/:orgSlug/projects/:projectSlug/team/invites", svc_h_team_invites_list,
      SVC_AUTH_USER, SVC_SCOPE_ADMIN, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200,
      "listTeamInvites", "Pending invites to the project's team", "Projects and teams", NULL,
      SVC_PROLE_MAINTAINER },
    { "DELETE", "/api/orgs/:orgSlug/projects/:projectSlug/team/invites/:id",
      svc_h_team_invite_revoke, SVC_AUTH_USER, SVC_SCOPE_ADMIN, SVC_ROLE_VIEWER, NULL, 0,
      NULL, 0, 204, "revokeTeamInvite", "Revoke a pending invite to the project's team",
      "Projects and teams", NULL, SVC_PROLE_MAINTAINER },

    { "GET", "/api/orgs/:orgSlug/audit", svc_h_audit_list, SVC_AUTH_USER, SVC_SCOPE_ADMIN,
      SVC_ROLE_ADMIN, NULL, 0, NULL, SVC_RF_PAGED, 200, "listAudit",
      "The organization's audit log, newest first", "Audit", audit_query, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/audit/verify", svc_h_audit_verify, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, NULL, 0, NULL, 0, 200, "verifyAudit",
      "Check the hash chain of the organization's audit log", "Audit", NULL, SVC_PROLE_NONE },

    { NULL, NULL, NULL, 0, 0, 0, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, SVC_PROLE_NONE }
};
