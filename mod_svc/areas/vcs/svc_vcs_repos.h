/*
 * svc_vcs_repos.h: repositories through the org's installations: listing
 * what they reach, creating one (provisioning), and the repository linked
 * to a project.
 */
#ifndef SVC_VCS_REPOS_H
#define SVC_VCS_REPOS_H

#include "svc_vcs.h"

/* The routes' request bodies. */
extern const svc_field_t svc_body_vcs_link[], svc_body_vcs_provision[];

/* Route handlers. */
svc_handler_t svc_h_vcs_repos_list, svc_h_vcs_repos_create, svc_h_vcs_link_get, svc_h_vcs_link_put,
              svc_h_vcs_link_delete;

/* A repository an installation reaches, and the list's own key; a project's
 * link; a repository made. */
extern const svc_schema_t svc_schema_repository;
extern const svc_col_t svc_vcs_repos_page_keys[];
extern const svc_schema_t svc_schema_project_repository, svc_schema_repository_created;

#endif /* SVC_VCS_REPOS_H */
