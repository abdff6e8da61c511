/*
 * svc_vcs_routes.c: the vcs area's routes: the code-hosting App's webhook,
 * setup wizard, install flow, installations, repositories and project
 * links. Fields: svc_route.h; who may call what: docs/authorization.md;
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
    { .method = "POST", .path = "/webhooks/vcs", .handler = svc_h_vcs_webhook,
      .auth = SVC_AUTH_WEBHOOK, .body_limit = SVC_VCS_WEBHOOK_LIMIT, .flags = SVC_RF_RAW_BODY,
      .success = 202, .op_id = "receiveVcsWebhook", .response = &svc_schema_delivery_receipt,
      .body_example = "{\"action\": \"created\", \"installation\": {\"id\": 12345678}}",
      .success_also = 200, .tag = TAG,
      .summary = "The provider's webhook (X-Hub-Signature-256, de-duplicated on "
        "X-GitHub-Delivery)" },
    { .method = "GET", .path = "/api/admin/vcs/deliveries", .handler = svc_h_vcs_deliveries_list,
      .scope = SVC_SCOPE_READ, .flags = SVC_RF_FOUNDER | SVC_RF_PAGED, .op_id = "listVcsDeliveries",
      .response = &svc_schema_delivery,
      .tag = TAG,
      .summary = "Recorded webhook deliveries, newest first, without payloads" },
    { .method = "GET", .path = "/api/admin/vcs/deliveries/:deliveryId",
      .handler = svc_h_vcs_delivery_get, .scope = SVC_SCOPE_READ, .flags = SVC_RF_FOUNDER,
      .op_id = "getVcsDelivery", .response = &svc_schema_delivery_detail, .tag = TAG,
      .summary = "One recorded delivery with its payload" },
    { .method = "POST", .path = "/api/admin/vcs/deliveries/:deliveryId/redeliver",
      .handler = svc_h_vcs_delivery_redeliver, .scope = SVC_SCOPE_ADMIN,
      .flags = SVC_RF_FOUNDER, .op_id = "redeliverVcsDelivery",
      .response = &svc_schema_delivery, .tag = TAG,
      .description = "Processes again, as a new attempt, a recorded delivery whose processing "
        "failed (`status` failed): 200 with the delivery, processed; 409 `invalid_status` "
        "for one that was processed; when it fails again, the failure's answer, and the "
        "delivery shows one more attempt and its last error. In the platform audit log "
        "(docs/api/admin.md).",
      .summary = "Redeliver a delivery whose processing failed" },
    { .method = "GET", .path = "/admin/vcs-app/setup", .handler = svc_h_vcs_setup,
      .scope = SVC_SCOPE_READ,
      .flags = SVC_RF_FOUNDER | SVC_RF_SESSION | SVC_RF_HTML | SVC_RF_SECRET_QUERY,
      .op_id = "vcsAppSetup", .answers = SVC_ANS_PROVIDER, .tag = TAG, .query = svc_q_vcs_setup,
      .summary = "Setup wizard: creates the App from a manifest and writes its keys (founder, "
        "browser)" },

    /* Installations */
    { .method = "POST", .path = "/api/orgs/:orgSlug/vcs/install",
      .handler = svc_h_vcs_install_start, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN,
      .op_id = "startVcsInstall", .response = &svc_schema_install_url, .tag = TAG,
      .summary = "Start installing the App: the provider's install URL, with a state for you "
        "and the org" },
    { .method = "GET", .path = "/orgs/:orgSlug/vcs/install", .handler = svc_h_vcs_install_page,
      .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN, .success = 302,
      .op_id = "startVcsInstallPage", .tag = TAG,
      .summary = "The UI's install path: redirects a signed-in admin to the provider's install "
        "page" },
    { .method = "GET", .path = "/auth/vcs-app/callback", .handler = svc_h_vcs_install_callback,
      .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_SECRET_QUERY | SVC_RF_HTML,
      .op_id = "vcsInstallCallback", .answers = SVC_ANS_PROVIDER | SVC_ANS_CONFLICT,
      .success_also = 202, .tag = TAG, .query = svc_q_vcs_callback,
      .description = "A page for the browser: 200 when the installation is recorded; 202 when "
        "the provider says an owner of the account must approve it first "
        "(`setup_action=request`: nothing is linked); 409 `installation_linked_elsewhere` "
        "when another organization has it.",
      .summary = "The provider's return from installing: checks the state and the installation, "
        "records it" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/vcs/installations",
      .handler = svc_h_vcs_installations_list, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .flags = SVC_RF_PAGED, .op_id = "listVcsInstallations", .response = &svc_schema_installation,
      .tag = TAG,
      .summary = "The org's installation records (every status)" },
    { .method = "DELETE", .path = "/api/orgs/:orgSlug/vcs/installations/:id",
      .handler = svc_h_vcs_installation_unlink, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN,
      .op_id = "unlinkVcsInstallation", .response = &svc_schema_installation_unlinked, .tag = TAG,
      .summary = "Unlink an installation (kept as unlinked; the App stays installed at the "
        "provider)" },

    /* Repositories */
    { .method = "GET", .path = "/api/orgs/:orgSlug/vcs/repositories",
      .handler = svc_h_vcs_repos_list, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .op_id = "listVcsRepositories", .response = &svc_schema_repository,
      .page_keys = svc_vcs_repos_page_keys, .answers = SVC_ANS_PROVIDER, .tag = TAG,
      .summary = "The repositories the org's active installations reach" },
    { .method = "POST", .path = "/api/orgs/:orgSlug/vcs/repositories",
      .handler = svc_h_vcs_repos_create, .scope = SVC_SCOPE_ADMIN, .role = SVC_ROLE_ADMIN,
      .body = svc_body_vcs_provision, .body_limit = SVC_KB(16), .success = 201,
      .body_example =
          "{\"name\": \"shop\", \"installation_id\": 12345678, \"private\": true, "
          "\"project\": \"shop\"}",
      .op_id = "createVcsRepository", .response = &svc_schema_repository_created,
      .answers = SVC_ANS_PROVIDER, .tag = TAG,
      .summary = "Create a repository in an installation's account, and link it to a project" },
    { .method = "GET", .path = "/api/orgs/:orgSlug/projects/:projectSlug/repository",
      .handler = svc_h_vcs_link_get, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER,
      .prole = SVC_PROLE_VIEWER, .op_id = "getProjectRepository",
      .response = &svc_schema_project_repository, .tag = TAG,
      .summary = "The project's linked repository (null when none)" },
    { .method = "PUT", .path = "/api/orgs/:orgSlug/projects/:projectSlug/repository",
      .handler = svc_h_vcs_link_put, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_VIEWER,
      .prole = SVC_PROLE_MAINTAINER, .body = svc_body_vcs_link, .body_limit = SVC_KB(16),
      .body_example = "{\"installation_id\": 12345678, \"full_name\": \"acme/shop\"}",
      .op_id = "linkProjectRepository", .response = &svc_schema_project_repository,
      .answers = SVC_ANS_PROVIDER, .tag = TAG,
      .summary = "Link a repository an installation of the org reaches to the project" },
    { .method = "DELETE", .path = "/api/orgs/:orgSlug/projects/:projectSlug/repository",
      .handler = svc_h_vcs_link_delete, .scope = SVC_SCOPE_WRITE, .role = SVC_ROLE_VIEWER,
      .prole = SVC_PROLE_MAINTAINER, .success = 204, .op_id = "unlinkProjectRepository", .tag = TAG,
      .summary = "Remove the project's repository link" },
    SVC_ROUTE_END,
};

static const svc_tag_t tags[] = {
    { TAG, "The code-hosting provider's App (GitHub's): its setup, its installations on "
      "accounts linked to organizations, the webhook, repositories, and the repository a "
      "project works on (docs/api/vcs.md)." },
    { NULL, NULL }
};

const svc_area_t svc_vcs_area = { .name = "vcs", .routes = routes, .tags = tags,
    .events = svc_vcs_events,
    .description = "The code-hosting App: setup, installations, the webhook, repositories and "
                   "project links." };
