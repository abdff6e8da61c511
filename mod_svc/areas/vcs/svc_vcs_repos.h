/*
 * svc_vcs_repos.h: repositories through the org's installations: listing
 * what they reach, creating one (provisioning), and the repository linked
 * to a project.
 */
#ifndef SVC_VCS_REPOS_H
#define SVC_VCS_REPOS_H

#include "svc_vcs.h"

extern const svc_field_t svc_body_vcs_link[];
extern const svc_field_t svc_body_vcs_provision[];

apr_status_t svc_h_vcs_repos_list(svc_ctx_t *ctx);
apr_status_t svc_h_vcs_repos_create(svc_ctx_t *ctx);
apr_status_t svc_h_vcs_link_get(svc_ctx_t *ctx);
apr_status_t svc_h_vcs_link_put(svc_ctx_t *ctx);
apr_status_t svc_h_vcs_link_delete(svc_ctx_t *ctx);

#endif /* SVC_VCS_REPOS_H */
