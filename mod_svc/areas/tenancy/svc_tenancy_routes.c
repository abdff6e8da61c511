/*
 * svc_tenancy_routes.c: the tenancy area's routes: organizations, members
 * and invites, projects and teams. Columns: svc_route.h; who may call
 * what, and why: docs/authorization.md.
 */
#include "svc_tenancy.h"
#include "svc_invites.h"
#include "svc_members.h"
#include "svc_orgs.h"
#include "svc_projects.h"
#include "svc_teams.h"

static const svc_route_t routes[] = {
    /* Tenancy: organizations, members and invites, projects and teams, audit.
     * Who may call what, and why: docs/authorization.md. */
    { "GET", "/api/orgs", svc_h_orgs_list, SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_NONE,
      NULL, 0, NULL, SVC_RF_PAGED, 200, "listOrgs",
      "Your organizations, with your role in each", "Organizations", NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs", svc_h_orgs_create, SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_NONE,
      svc_body_org_create, SVC_KB(16), NULL, 0, 201, "createOrg",
      "Create an organization; you become its owner", "Organizations", NULL, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug", svc_h_orgs_get, SVC_AUTH_USER, SVC_SCOPE_READ,
      SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 200, "getOrg",
      "Organization detail: owner, counts, your role", "Organizations", NULL, SVC_PROLE_NONE },
    { "PATCH", "/api/orgs/:orgSlug", svc_h_orgs_update, SVC_AUTH_USER, SVC_SCOPE_WRITE,
      SVC_ROLE_ADMIN, svc_body_org_update, SVC_KB(16), NULL, 0, 200, "updateOrg",
      "Rename the organization", "Organizations", NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/transfer-ownership", svc_h_orgs_transfer, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_OWNER, svc_body_transfer, SVC_KB(16), NULL, 0, 200,
      "transferOwnership",
      "Hand the organization to another member; you become an admin", "Organizations",
      NULL, SVC_PROLE_NONE },

    { "GET", "/api/orgs/:orgSlug/members", svc_h_members_list, SVC_AUTH_USER, SVC_SCOPE_READ,
      SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200, "listMembers",
      "Members with their roles; for admins, the first page also lists pending invites",
      "Members", NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/members", svc_h_org_invite_create, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, svc_body_org_invite, SVC_KB(16), NULL, 0, 201,
      "inviteMember", "Invite someone to the organization by email, with a role", "Members",
      NULL, SVC_PROLE_NONE },
    { "PATCH", "/api/orgs/:orgSlug/members/:userId", svc_h_members_update, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, svc_body_member_update, SVC_KB(16), NULL, 0, 200,
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
      SVC_SCOPE_WRITE, SVC_ROLE_MEMBER, svc_body_project_create, SVC_KB(16), NULL, 0, 201,
      "createProject", "Create a project; you become its maintainer", "Projects and teams",
      NULL, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/projects/:projectSlug", svc_h_projects_get, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 200, "getProject",
      "Project detail", "Projects and teams", NULL, SVC_PROLE_VIEWER },
    { "PATCH", "/api/orgs/:orgSlug/projects/:projectSlug", svc_h_projects_update,
      SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_VIEWER, svc_body_project_update, SVC_KB(16), NULL,
      0, 200, "updateProject", "Change a project's name, description or archived flag",
      "Projects and teams", NULL, SVC_PROLE_MAINTAINER },
    { "GET", "/api/orgs/:orgSlug/projects/:projectSlug/team", svc_h_team_list,
      SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200,
      "listTeam", "The project's team with project roles (pending invites: GET "
      ".../team/invites)", "Projects and teams", NULL, SVC_PROLE_VIEWER },
    { "POST", "/api/orgs/:orgSlug/projects/:projectSlug/team", svc_h_team_add,
      SVC_AUTH_USER, SVC_SCOPE_ADMIN, SVC_ROLE_VIEWER, svc_body_team_add, SVC_KB(16), NULL, 0,
      201, "addTeamMember",
      "Add an org member to the team (user_id), or invite someone by email",
      "Projects and teams", NULL, SVC_PROLE_MAINTAINER },
    { "PATCH", "/api/orgs/:orgSlug/projects/:projectSlug/team/:userId", svc_h_team_update,
      SVC_AUTH_USER, SVC_SCOPE_ADMIN, SVC_ROLE_VIEWER, svc_body_team_update, SVC_KB(16), NULL, 0,
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
    { NULL, NULL, NULL, 0, 0, 0, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, SVC_PROLE_NONE }
};

const svc_area_t svc_tenancy_area = {
    "tenancy", "Organizations, members and invites, ownership transfer, projects and "
    "their teams.", routes
};
