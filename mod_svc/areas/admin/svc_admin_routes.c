/*
 * svc_admin_routes.c: the admin area's routes, the shapes of their
 * answers, and the event kind it writes. Fields: svc_route.h; who may
 * call them: founders only (svc_auth_check answers 404 to everyone else);
 * the endpoints: docs/api/admin.md.
 */
#include "svc_admin.h"
#include "svc_admin_api.h"

#define TAG "Operators"

static const svc_field_t body_reason[] = {
    { .name = "reason", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 500,
      .description = "Why, for the platform audit log and the operator's lists: 1 to 500 "
        "characters." },
    SVC_FIELD_END
};

static const svc_col_t org_keys[] = {
    SVC_COL_ID("org"),
    { .key = "slug", .type = SVC_COL_TEXT, .format = "slug", .example = "acme" },
    { .key = "name", .type = SVC_COL_TEXT, .example = "Acme" },
    { .key = "members", .type = SVC_COL_INT },
    { .key = "plan", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "team",
      .description = "The plan of its subscription at the payment provider; null: none." },
    { .key = "billing_status", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .values = SVC_VALUES("none", "active", "past_due", "canceled"),
      .description = "The subscription's status; null: the org has no billing account." },
    { .key = "runs_this_month", .type = SVC_COL_INT,
      .description = "Runs created since the start of the month (UTC)." },
    { .key = "created_at", .type = SVC_COL_TIME },
    { .key = "suspended", .type = SVC_COL_BOOL },
    { .key = "suspended_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    { .key = "suspended_reason", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL },
    SVC_COL_END
};

static const svc_schema_t schema_org = { .name = "AdminOrg", .keys = org_keys,
    .description = "An organization as the platform's operator sees it." };

static const svc_col_t user_keys[] = {
    SVC_COL_ID("usr"),
    { .key = "email", .type = SVC_COL_TEXT, .format = "email" },
    { .key = "name", .type = SVC_COL_TEXT, .example = "Grace" },
    { .key = "founder", .type = SVC_COL_BOOL },
    { .key = "orgs", .type = SVC_COL_ARRAY, .item = SVC_COL_TEXT,
      .description = "The slugs of the organizations the user is a member of." },
    { .key = "last_sign_in_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL,
      .description = "When the user's newest session began; null: never signed in." },
    { .key = "created_at", .type = SVC_COL_TIME },
    { .key = "suspended", .type = SVC_COL_BOOL },
    { .key = "suspended_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    { .key = "suspended_reason", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL },
    SVC_COL_END
};

static const svc_schema_t schema_user = { .name = "AdminUser", .keys = user_keys,
    .description = "A user as the platform's operator sees it." };

static const svc_col_t run_keys[] = {
    SVC_COL_ID("run"),
    { .key = "status", .type = SVC_COL_TEXT, .values = SVC_VALUES("queued", "running") },
    { .key = "org", .type = SVC_COL_TEXT, .format = "slug", .example = "acme" },
    { .key = "project", .type = SVC_COL_TEXT, .format = "slug", .example = "shop" },
    { .key = "lease_owner", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .example = "node1/4242/a8Kq2Z",
      .description = "The run supervisor holding it (host/pid/random); null while queued." },
    { .key = "lease_expires_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    { .key = "created_at", .type = SVC_COL_TIME },
    { .key = "started_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    { .key = "age_seconds", .type = SVC_COL_INT, .description = "Since it was created." },
    { .key = "org_suspended", .type = SVC_COL_BOOL,
      .description = "Its org is suspended: a queued run is not started until lifted." },
    SVC_COL_END
};

static const svc_schema_t schema_run = { .name = "AdminRun", .keys = run_keys,
    .description = "A queued or running run, across organizations." };

static const svc_col_t usage_keys[] = {
    { .key = "org", .type = SVC_COL_TEXT, .format = "slug", .example = "acme" },
    { .key = "org_id", .type = SVC_COL_TEXT, .id = "org" },
    { .key = "month", .type = SVC_COL_TEXT, .example = "2026-11" },
    { .key = "model_calls", .type = SVC_COL_INT },
    { .key = "input_tokens", .type = SVC_COL_INT },
    { .key = "output_tokens", .type = SVC_COL_INT },
    { .key = "run_minutes", .type = SVC_COL_NUMBER },
    { .key = "deployment_hours", .type = SVC_COL_NUMBER, .description = "Replica-hours." },
    SVC_COL_END
};

static const svc_schema_t schema_usage = { .name = "AdminUsage", .keys = usage_keys,
    .description = "One organization's usage in a month (UTC): its model calls and tokens, run "
                   "minutes and deployment hours." };

static const svc_col_t audit_keys[] = {
    { .key = "id", .type = SVC_COL_INT },
    { .key = "actor_kind", .type = SVC_COL_TEXT, .values = SVC_VALUES("user", "operator"),
      .description = "`user`: a founder through the API; `operator`: svcctl on a host." },
    { .key = "actor_user_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "usr" },
    { .key = "action", .type = SVC_COL_TEXT, .example = "org.suspended" },
    { .key = "target_type", .type = SVC_COL_TEXT,
      .values = SVC_VALUES("user", "org", "vcs_delivery", "billing_event") },
    { .key = "target_id", .type = SVC_COL_TEXT },
    { .key = "data", .type = SVC_COL_OBJECT, .description = "Details: the reason." },
    { .key = "request_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL },
    { .key = "created_at", .type = SVC_COL_TIME },
    SVC_COL_END
};

static const svc_schema_t schema_audit = { .name = "PlatformAuditEntry", .keys = audit_keys,
    .description = "An entry of the platform audit log: what an operator did." };

static const svc_schema_t schema_verify = { .name = "PlatformAuditVerification",
    .description = "Whether the platform audit log's hash chain holds.",
    .keys = (const svc_col_t[]) {
        { .key = "valid", .type = SVC_COL_BOOL },
        { .key = "entries", .type = SVC_COL_INT },
        { .key = "first_broken_id", .type = SVC_COL_INT, .flags = SVC_COL_NULL,
          .description = "The first entry whose link or digest does not hold; null: none." },
        SVC_COL_END
    }
};

static const svc_schema_t suspension_event = { .name = "AccessSuspensionEvent",
    .description = "An operator suspended, or lifted the suspension of, the organization or "
        "one of its members: open streams check their access at once.",
    .keys = (const svc_col_t[]) {
        { .key = "target", .type = SVC_COL_TEXT, .values = SVC_VALUES("org", "user") },
        { .key = "user_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "usr",
          .description = "The member, when a user's suspension; null for the org's." },
        { .key = "suspended", .type = SVC_COL_BOOL },
        SVC_COL_END
    }
};

static const svc_qparam_t q_search[] = {
    { "q", "string", "Only those whose name, slug or e-mail address contains this text "
      "(1 to 200 characters, case ignored)." },
    { NULL, NULL, NULL }
};

static const svc_qparam_t q_runs[] = {
    { "status", "string", "`queued` or `running`; both when left out." },
    { NULL, NULL, NULL }
};

static const svc_qparam_t q_usage[] = {
    { "month", "string", "YYYY-MM (UTC); the current month when left out." },
    { NULL, NULL, NULL }
};

#define REASON_EXAMPLE "{\"reason\": \"Chargebacks under review (ticket 4411)\"}"

static const svc_route_t routes[] = {
    { .method = "GET", .path = "/api/admin/orgs", .handler = svc_h_admin_orgs,
      .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_FOUNDER | SVC_RF_PAGED, .query = q_search,
      .op_id = "adminListOrgs", .tag = TAG, .response = &schema_org,
      .summary = "Every organization, newest first: members, plan, runs this month, "
        "suspension" },
    { .method = "GET", .path = "/api/admin/users", .handler = svc_h_admin_users,
      .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_FOUNDER | SVC_RF_PAGED, .query = q_search,
      .op_id = "adminListUsers", .tag = TAG, .response = &schema_user,
      .summary = "Every user, newest first: founder, orgs, last sign-in, suspension" },
    { .method = "GET", .path = "/api/admin/runs", .handler = svc_h_admin_runs,
      .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_FOUNDER | SVC_RF_PAGED, .query = q_runs,
      .op_id = "adminListRuns", .tag = TAG, .response = &schema_run,
      .summary = "Queued and running runs across organizations: the node holding each lease, "
        "its expiry, the run's age" },
    { .method = "GET", .path = "/api/admin/usage", .handler = svc_h_admin_usage,
      .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_FOUNDER | SVC_RF_PAGED, .query = q_usage,
      .op_id = "adminListUsage", .tag = TAG, .response = &schema_usage,
      .summary = "Usage per organization in a month (those with any)" },
    { .method = "POST", .path = "/api/admin/users/:userId/suspend",
      .handler = svc_h_admin_user_suspend, .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_FOUNDER,
      .body = body_reason, .body_limit = SVC_KB(4), .body_example = REASON_EXAMPLE,
      .op_id = "adminSuspendUser", .tag = TAG, .response = &schema_user,
      .description = "From the next request on, on every node, the user's tokens and sessions "
        "are refused with 403 `account_suspended` and their open event streams end; nothing "
        "is revoked, so lifting the suspension gives everything back. 409 `invalid_status` "
        "when already suspended.",
      .summary = "Suspend a user" },
    { .method = "POST", .path = "/api/admin/users/:userId/unsuspend",
      .handler = svc_h_admin_user_unsuspend, .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_FOUNDER,
      .body = body_reason, .body_limit = SVC_KB(4), .body_example = REASON_EXAMPLE,
      .op_id = "adminUnsuspendUser", .tag = TAG, .response = &schema_user,
      .summary = "Lift a user's suspension (409 `invalid_status` when not suspended)" },
    { .method = "POST", .path = "/api/admin/orgs/:orgSlug/suspend",
      .handler = svc_h_admin_org_suspend, .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_FOUNDER,
      .body = body_reason, .body_limit = SVC_KB(4), .body_example = REASON_EXAMPLE,
      .op_id = "adminSuspendOrg", .tag = TAG, .response = &schema_org,
      .description = "From the next request on, on every node, the org's routes answer 403 "
        "`org_suspended` to its members, its open event streams end, its share links answer "
        "404, and its queued runs are not started (running ones finish). Its deployments "
        "keep running: they serve the org's own customers, and stopping them is a decision "
        "with consequences outside the platform (docs/api/admin.md). 409 `invalid_status` "
        "when already suspended.",
      .summary = "Suspend an organization" },
    { .method = "POST", .path = "/api/admin/orgs/:orgSlug/unsuspend",
      .handler = svc_h_admin_org_unsuspend, .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_FOUNDER,
      .body = body_reason, .body_limit = SVC_KB(4), .body_example = REASON_EXAMPLE,
      .op_id = "adminUnsuspendOrg", .tag = TAG, .response = &schema_org,
      .summary = "Lift an organization's suspension (409 `invalid_status` when not "
        "suspended)" },
    { .method = "GET", .path = "/api/admin/audit", .handler = svc_h_admin_audit,
      .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_FOUNDER | SVC_RF_PAGED,
      .op_id = "adminListAudit", .tag = TAG, .response = &schema_audit,
      .summary = "The platform audit log, newest first" },
    { .method = "GET", .path = "/api/admin/audit/verify", .handler = svc_h_admin_audit_verify,
      .scope = SVC_SCOPE_ADMIN, .flags = SVC_RF_FOUNDER, .op_id = "adminVerifyAudit",
      .tag = TAG, .response = &schema_verify,
      .summary = "Walk the platform audit log's hash chain" },
    SVC_ROUTE_END,
};

static const svc_event_kind_t events[] = {
    { "access.suspension", &suspension_event, "An operator suspended or lifted the "
      "suspension of the organization, or of one of its members." },
    { NULL, NULL, NULL }
};

static const svc_tag_t tags[] = {
    { TAG, "The platform operator's API: every organization, user and run, usage, "
      "suspensions and the platform audit log. Founders only; 404 to everyone else." },
    { NULL, NULL }
};

const svc_area_t svc_admin_area = { .name = "admin", .routes = routes, .tags = tags,
    .events = events,
    .description = "The platform operator's surface: lists across organizations, suspensions, "
                   "the platform audit log." };
