/*
 * svc_vcs_setup.h: the setup wizard (/admin/vcs-app/setup): creates the
 * App from a manifest at the provider and writes its six keys to
 * SvcVcsAppCredentials. Founder only, in a signed-in browser; it gates
 * itself once an app id is configured.
 */
#ifndef SVC_VCS_SETUP_H
#define SVC_VCS_SETUP_H

#include "svc_vcs.h"

apr_status_t svc_h_vcs_setup(svc_ctx_t *ctx);

extern const svc_qparam_t svc_q_vcs_setup[];

#endif /* SVC_VCS_SETUP_H */
