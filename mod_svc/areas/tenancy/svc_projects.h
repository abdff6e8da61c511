/*
 * svc_projects.h: projects of an organization, and the effective project
 * role that combines a caller's org role with their team role.
 */
#ifndef SVC_PROJECTS_H
#define SVC_PROJECTS_H

#include "svc_tenancy.h"

/* Route handlers. */
svc_handler_t svc_h_projects_list, svc_h_projects_create, svc_h_projects_get, svc_h_projects_update;

/* The routes' request bodies and query parameters. */
extern const svc_field_t svc_body_project_create[], svc_body_project_update[];
extern const svc_qparam_t svc_query_projects_list[];

/* A project. */
extern const svc_schema_t svc_schema_project;

#endif /* SVC_PROJECTS_H */
