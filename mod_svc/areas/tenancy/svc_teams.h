/*
 * svc_teams.h: project teams: org members with a project role, added
 * directly or invited by email.
 */
#ifndef SVC_TEAMS_H
#define SVC_TEAMS_H

#include "svc_tenancy.h"

/* Route handlers. */
svc_handler_t svc_h_team_list, svc_h_team_add, svc_h_team_update, svc_h_team_remove;

/* The routes' request bodies. */
extern const svc_field_t svc_body_team_add[], svc_body_team_update[];

/* A team member; what adding to a team made (a member or an invite). */
extern const svc_schema_t svc_schema_team_member, svc_schema_team_addition;

#endif /* SVC_TEAMS_H */
