/*
 * svc_vcs_installs.h: installations of the App and the install flow:
 * starting it (API and the UI's path), the provider's return to
 * /auth/vcs-app/callback, the org's installation records, unlinking.
 */
#ifndef SVC_VCS_INSTALLS_H
#define SVC_VCS_INSTALLS_H

#include "svc_vcs.h"

/*
 * Inside the transaction of a change of an installation record's status:
 * its audit entry (action, e.g. "vcs.installation.linked"; data borrowed,
 * no secrets) and then, last before the commit, the `vcs.installation`
 * event on the org's stream.
 */
apr_status_t svc_vcs_installation_changed(svc_db_t *db, apr_pool_t *p,
                                          const svc_actor_t *actor, const char *org_id,
                                          apr_int64_t installation_id, const char *action,
                                          const char *status, const char *account_login,
                                          json_t *data);

/* Route handlers. */
svc_handler_t svc_h_vcs_install_start, svc_h_vcs_install_page, svc_h_vcs_install_callback,
              svc_h_vcs_installations_list, svc_h_vcs_installation_unlink;

/* The routes' query parameters. */
extern const svc_qparam_t svc_q_vcs_callback[];

/* An installation record; one unlinked; the install URL; the area's events. */
extern const svc_schema_t svc_schema_installation, svc_schema_installation_unlinked,
                          svc_schema_install_url;
extern const svc_event_kind_t svc_vcs_events[];

#endif /* SVC_VCS_INSTALLS_H */
