/*
 * svc_areas.c: the area registry. A new area is one line in svc_areas[]
 * (and its folder under areas/); nothing else in the kernel or the glue
 * changes.
 */
#include "svc_areas.h"
#include "svc_admin.h"
#include "svc_attachments.h"
#include "svc_auditlog.h"
#include "svc_deploy.h"
#include "svc_billing.h"
#include "svc_documents.h"
#include "svc_events.h"
#include "svc_identity.h"
#include "svc_pipeline.h"
#include "svc_providers.h"
#include "svc_runs.h"
#include "svc_share.h"
#include "svc_tenancy.h"
#include "svc_vcs.h"

const svc_area_t *const svc_areas[] = {
    &svc_kernel_area,
    &svc_identity_area,
    &svc_tenancy_area,
    &svc_auditlog_area,
    &svc_events_area,
    &svc_providers_area,
    &svc_documents_area,
    &svc_share_area,
    &svc_runs_area,
    &svc_pipeline_area,
    &svc_attachments_area,
    &svc_vcs_area,
    &svc_deploy_area,
    &svc_billing_area,
    &svc_admin_area,
    NULL
};

/* Identity's verifiers of users, with the deploy area's of agents; filled
 * at start, the same every time. */
static svc_verifiers_t verifiers;

void svc_areas_configure(svc_config_t *conf)
{
    verifiers = svc_identity_verifiers;
    verifiers.agent = svc_deploy_agent_verify;
    conf->areas = svc_areas;
    conf->verifiers = &verifiers;
}
