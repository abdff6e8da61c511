/*
 * svc_tenancy_routes.c: the tenancy area's routes: organizations, members
 * and invites, projects and teams. Fields: svc_route.h; who may call
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
    { .method = "GET", .path = "/api/orgs", .handler = svc_h_orgs_list, .scope = SVC_SCOPE_READ,
      .flags = SVC_RF_PAGED, .op_id = "listOrgs", .response = &svc_schema_org_summary,
      .tag = "Organizations",
      .summary = "Your organizations, with your role in each" },
    { .method = "POST", .path = "/api/orgs", .handler = svc_h_orgs_create, .scope = SVC_SCOPE_WRITE,
      .body = svc_body_org_create, .body_limit = SVC_KB(16), .success = 201, .op_id = "createOrg",
      .body_example = "{\"slug\": \"acme\", \"name\": \"Acme\"}",
      .response = &svc_schema_org,
      .tag = "Organizations",
      .summary = "Create an organization; you become its owner" },
    { .method = "GET", .path = "/api/orgs/:orgSlug", .handler = svc_h_orgs_get,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .op_id = "getOrg",
      .response = &svc_schema_org, .tag = "Organizations",
      .summary = "Organization detail: owner, counts, your role" },
    { .method = "PATCH", .path = "/api/orgs/:orgSlug", .handler = svc_h_orgs_update,
      .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_ADMIN, .body = svc_body_org_update,
      .body_example = "{\"name\": \"Acme Corporation\"}",
      .body_limit = SVC_KB(16), .op_id = "updateOrg", .response = &svc_schema_org,
      .tag = "Organizations",
      .summary = "Rename the organization" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/transfer-ownership",
      .handler = svc_h_orgs_transfer, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_OWNER,
      .body = svc_body_transfer, .body_limit = SVC_KB(16), .op_id = "transferOwnership",
      .body_example = "{\"user_id\": \"usr_3kTq0dKc5gWm1xQ9aZr2Lb\"}",
      .response = &svc_schema_org,
      .tag = "Organizations",
      .summary = "Hand the organization to another member; you become an admin" },

    { .method = "GET", .path = "/api/orgs/:orgSlug/members", .handler = svc_h_members_list,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .flags = SVC_RF_PAGED,
      .op_id = "listMembers", .response = &svc_schema_member,
      .page_keys = svc_members_page_keys, .tag = "Members",
      .summary = "Members with their roles; for admins, the first page also lists pending "
        "invites" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/members", .handler = svc_h_org_invite_create,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .body = svc_body_org_invite,
      .body_example = "{\"email\": \"grace@example.com\", \"role\": \"member\"}",
      .body_limit = SVC_KB(16), .success = 201, .op_id = "inviteMember",
      .response = &svc_schema_invite, .tag = "Members",
      .summary = "Invite someone to the organization by email, with a role" },
    { .method = "PATCH", .path = "/api/orgs/:orgSlug/members/:userId",
      .handler = svc_h_members_update, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN,
      .body = svc_body_member_update, .body_limit = SVC_KB(16), .op_id = "updateMember",
      .body_example = "{\"role\": \"admin\"}",
      .response = &svc_schema_member,
      .tag = "Members",
      .summary = "Change a member's role (never the owner's, never to owner)" },
    { .method = "DELETE", .path = "/api/orgs/:orgSlug/members/:userId",
      .handler = svc_h_members_remove, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_VIEWER,
      .success = 204, .op_id = "removeMember", .tag = "Members",
      .summary = "Remove a member (admin), or leave the organization (yourself; not the owner)" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/invites", .handler = svc_h_org_invites_list,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .flags = SVC_RF_PAGED,
      .op_id = "listOrgInvites", .response = &svc_schema_invite, .tag = "Members",
      .summary = "Pending invites to the organization" },
    { .method = "DELETE", .path = "/api/orgs/:orgSlug/invites/:id",
      .handler = svc_h_org_invite_revoke, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN,
      .success = 204, .op_id = "revokeOrgInvite", .tag = "Members",
      .summary = "Revoke a pending invite to the organization" },

    { .method = "GET", .path = "/api/me/invites", .handler = svc_h_my_invites_list,
      .scope = SVC_SCOPE_READ, .flags = SVC_RF_PAGED, .op_id = "listMyInvites",
      .response = &svc_schema_invite, .tag = "Members",
      .summary = "Your pending invites (matched to your email) to organizations and projects" },
    { .method = "POST", .path = "/api/me/invites/:id/accept", .handler = svc_h_my_invite_accept,
      .scope = SVC_SCOPE_WRITE, .op_id = "acceptInvite", .response = &svc_schema_invite_accepted,
      .answers = SVC_ANS_GONE, .tag = "Members",
      .summary = "Accept an invite: join the organization (and the project's team)" },
    { .method = "POST", .path = "/api/me/invites/:id/decline", .handler = svc_h_my_invite_decline,
      .scope = SVC_SCOPE_WRITE, .success = 204, .op_id = "declineInvite", .answers = SVC_ANS_GONE,
      .tag = "Members",
      .summary = "Decline an invite" },

    { .method = "GET", .path = "/api/orgs/:orgSlug/projects", .handler = svc_h_projects_list,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .flags = SVC_RF_PAGED,
      .op_id = "listProjects", .response = &svc_schema_project, .tag = "Projects and teams",
      .query = svc_query_projects_list,
      .summary = "Projects of the organization, with your role in each" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/projects", .handler = svc_h_projects_create,
      .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_MEMBER, .body = svc_body_project_create,
      .body_example =
          "{\"slug\": \"shop\", \"name\": \"Shop\", \"description\": \"The bakery's web shop.\"}",
      .body_limit = SVC_KB(16), .success = 201, .op_id = "createProject",
      .response = &svc_schema_project,
      .tag = "Projects and teams",
      .summary = "Create a project; you become its maintainer" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/projects/:projectSlug",
      .handler = svc_h_projects_get, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .prole = SVC_PROLE_VIEWER, .op_id = "getProject", .response = &svc_schema_project,
      .tag = "Projects and teams",
      .summary = "Project detail" },
    { .method = "PATCH", .path = "/api/orgs/:orgSlug/projects/:projectSlug",
      .handler = svc_h_projects_update, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_VIEWER,
      .prole = SVC_PROLE_MAINTAINER, .body = svc_body_project_update, .body_limit = SVC_KB(16),
      .body_example = "{\"description\": \"The bakery's web shop, with delivery.\"}",
      .op_id = "updateProject", .response = &svc_schema_project, .tag = "Projects and teams",
      .summary = "Change a project's name, description or archived flag" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/projects/:projectSlug/team",
      .handler = svc_h_team_list, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .prole = SVC_PROLE_VIEWER, .flags = SVC_RF_PAGED, .op_id = "listTeam",
      .response = &svc_schema_team_member,
      .tag = "Projects and teams",
      .summary = "The project's team with project roles (pending invites: GET .../team/invites)" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/projects/:projectSlug/team",
      .handler = svc_h_team_add, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_VIEWER,
      .prole = SVC_PROLE_MAINTAINER, .body = svc_body_team_add, .body_limit = SVC_KB(16),
      .body_example = "{\"email\": \"grace@example.com\", \"role\": \"developer\"}",
      .success = 201, .op_id = "addTeamMember", .response = &svc_schema_team_addition,
      .tag = "Projects and teams",
      .summary = "Add an org member to the team (user_id), or invite someone by email" },
    { .method = "PATCH", .path = "/api/orgs/:orgSlug/projects/:projectSlug/team/:userId",
      .handler = svc_h_team_update, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_VIEWER,
      .prole = SVC_PROLE_MAINTAINER, .body = svc_body_team_update, .body_limit = SVC_KB(16),
      .body_example = "{\"role\": \"maintainer\"}",
      .op_id = "updateTeamMember", .response = &svc_schema_team_member, .tag = "Projects and teams",
      .summary = "Change a team member's project role" },
    { .method = "DELETE", .path = "/api/orgs/:orgSlug/projects/:projectSlug/team/:userId",
      .handler = svc_h_team_remove, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_VIEWER,
      .prole = SVC_PROLE_VIEWER, .success = 204, .op_id = "removeTeamMember",
      .tag = "Projects and teams",
      .summary = "Remove someone from the team (maintainer), or leave it (yourself)" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/projects/:projectSlug/team/invites",
      .handler = svc_h_team_invites_list, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_VIEWER,
      .prole = SVC_PROLE_MAINTAINER, .flags = SVC_RF_PAGED, .op_id = "listTeamInvites",
      .response = &svc_schema_invite,
      .tag = "Projects and teams",
      .summary = "Pending invites to the project's team" },
    { .method = "DELETE", .path = "/api/orgs/:orgSlug/projects/:projectSlug/team/invites/:id",
      .handler = svc_h_team_invite_revoke, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_VIEWER,
      .prole = SVC_PROLE_MAINTAINER, .success = 204, .op_id = "revokeTeamInvite",
      .tag = "Projects and teams",
      .summary = "Revoke a pending invite to the project's team" },
    SVC_ROUTE_END,
};

static const svc_tag_t tags[] = {
    { "Organizations", "Organizations: the tenants. Every other object belongs to one, and "
      "only its members see it (docs/api/tenancy.md, docs/authorization.md)." },
    { "Members", "An organization's members and their roles (owner, admin, member, viewer), "
      "and invitations by email." },
    { "Projects and teams", "Projects of an organization, and each project's team with its "
      "roles (maintainer, developer, viewer)." },
    { NULL, NULL }
};

const svc_area_t svc_tenancy_area = {
    .name = "tenancy",
    .description = "Organizations, members and invites, ownership transfer, projects and "
        "their teams.",
    .routes = routes, .tags = tags
};
