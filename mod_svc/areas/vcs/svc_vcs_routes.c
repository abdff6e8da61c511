/*
 * svc_vcs_routes.c: the vcs area's routes: the code-hosting App's webhook,
 * setup wizard, install flow, installations, repositories and project
 * links. Columns: svc_route.h; who may call what: docs/authorization.md;
 * the flows: docs/api/vcs.md.
 */
#include "svc_vcs.h"
#include "svc_vcs_installs.h"
#include "svc_vcs_repos.h"
#include "svc_vcs_setup.h"
#include "svc_vcs_webhook.h"

#define TAG "Code-hosting App"

static const svc_route_t routes[] = {
    /* The provider's deliveries: authenticated by their HMAC, over the raw body. */
    { "POST", "/webhooks/vcs", svc_h_vcs_webhook, SVC_AUTH_WEBHOOK, SVC_SCOPE_NONE,
      SVC_ROLE_NONE, NULL, SVC_VCS_WEBHOOK_LIMIT, NULL, SVC_RF_RAW_BODY, 202,
      "receiveVcsWebhook",
      "The provider's webhook (X-Hub-Signature-256, de-duplicated on X-GitHub-Delivery)",
      TAG, NULL, SVC_PROLE_NONE },
    { "GET", "/api/admin/vcs/deliveries", svc_h_vcs_deliveries_list, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_FOUNDER | SVC_RF_PAGED, 200,
      "listVcsDeliveries", "Recorded webhook deliveries, newest first, without payloads",
      TAG, NULL, SVC_PROLE_NONE },
    { "GET", "/api/admin/vcs/deliveries/:deliveryId", svc_h_vcs_delivery_get, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_FOUNDER, 200, "getVcsDelivery",
      "One recorded delivery with its payload", TAG, NULL, SVC_PROLE_NONE },
    { "GET", "/admin/vcs-app/setup", svc_h_vcs_setup, SVC_AUTH_USER, SVC_SCOPE_READ,
      SVC_ROLE_NONE, NULL, 0, NULL,
      SVC_RF_FOUNDER | SVC_RF_SESSION | SVC_RF_HTML | SVC_RF_SECRET_QUERY, 200, "vcsAppSetup",
      "Setup wizard: creates the App from a manifest and writes its keys (founder, browser)",
      TAG, svc_q_vcs_setup, SVC_PROLE_NONE },

    /* Installations */
    { "POST", "/api/orgs/:orgSlug/vcs/install", svc_h_vcs_install_start, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, NULL, 0, NULL, 0, 200, "startVcsInstall",
      "Start installing the App: the provider's install URL, with a state for you and the org",
      TAG, NULL, SVC_PROLE_NONE },
    { "GET", "/orgs/:orgSlug/vcs/install", svc_h_vcs_install_page, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, NULL, 0, NULL, 0, 302, "startVcsInstallPage",
      "The UI's install path: redirects a signed-in admin to the provider's install page",
      TAG, NULL, SVC_PROLE_NONE },
    { "GET", "/auth/vcs-app/callback", svc_h_vcs_install_callback, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_NONE, NULL, 0, NULL, SVC_RF_SECRET_QUERY | SVC_RF_HTML, 200,
      "vcsInstallCallback",
      "The provider's return from installing: checks the state and the installation, "
      "records it", TAG, svc_q_vcs_callback, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/vcs/installations", svc_h_vcs_installations_list,
      SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, SVC_RF_PAGED, 200,
      "listVcsInstallations", "The org's installation records (every status)", TAG, NULL,
      SVC_PROLE_NONE },
    { "DELETE", "/api/orgs/:orgSlug/vcs/installations/:id", svc_h_vcs_installation_unlink,
      SVC_AUTH_USER, SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, NULL, 0, NULL, 0, 200,
      "unlinkVcsInstallation",
      "Unlink an installation (kept as unlinked; the App stays installed at the provider)",
      TAG, NULL, SVC_PROLE_NONE },

    /* Repositories */
    { "GET", "/api/orgs/:orgSlug/vcs/repositories", svc_h_vcs_repos_list, SVC_AUTH_USER,
      SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 200, "listVcsRepositories",
      "The repositories the org's active installations reach", TAG, NULL, SVC_PROLE_NONE },
    { "POST", "/api/orgs/:orgSlug/vcs/repositories", svc_h_vcs_repos_create, SVC_AUTH_USER,
      SVC_SCOPE_ADMIN, SVC_ROLE_ADMIN, svc_body_vcs_provision, SVC_KB(16), NULL, 0, 201,
      "createVcsRepository",
      "Create a repository in an installation's account, and link it to a project", TAG,
      NULL, SVC_PROLE_NONE },
    { "GET", "/api/orgs/:orgSlug/projects/:projectSlug/repository", svc_h_vcs_link_get,
      SVC_AUTH_USER, SVC_SCOPE_READ, SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 200,
      "getProjectRepository", "The project's linked repository (null when none)", TAG, NULL,
      SVC_PROLE_VIEWER },
    { "PUT", "/api/orgs/:orgSlug/projects/:projectSlug/repository", svc_h_vcs_link_put,
      SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_VIEWER, svc_body_vcs_link, SVC_KB(16), NULL, 0,
      200, "linkProjectRepository",
      "Link a repository an installation of the org reaches to the project", TAG, NULL,
      SVC_PROLE_MAINTAINER },
    { "DELETE", "/api/orgs/:orgSlug/projects/:projectSlug/repository", svc_h_vcs_link_delete,
      SVC_AUTH_USER, SVC_SCOPE_WRITE, SVC_ROLE_VIEWER, NULL, 0, NULL, 0, 204,
      "unlinkProjectRepository", "Remove the project's repository link", TAG, NULL,
      SVC_PROLE_MAINTAINER },
    { NULL, NULL, NULL, 0, 0, 0, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, SVC_PROLE_NONE }
};

const svc_area_t svc_vcs_area = {
    "vcs", "The code-hosting App: setup, installations, the webhook, repositories and "
    "project links.", routes
};
