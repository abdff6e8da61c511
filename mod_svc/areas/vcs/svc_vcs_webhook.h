/*
 * svc_vcs_webhook.h: POST /webhooks/vcs, the provider's deliveries, and the
 * founder's view of what was received.
 */
#ifndef SVC_VCS_WEBHOOK_H
#define SVC_VCS_WEBHOOK_H

#include "svc_vcs.h"

/* The deliveries' body limit: GitHub caps payloads at 25 MB. */
#define SVC_VCS_WEBHOOK_LIMIT ((apr_size_t)25 * 1024 * 1024)

/* True when `header` ("sha256=" + 64 hex digits, as X-Hub-Signature-256
 * carries it) is the HMAC-SHA256 of body under secret; compared in
 * constant time. */
int svc_vcs_signature_ok(apr_pool_t *p, const char *secret, apr_size_t secret_len,
                         const char *header, const char *body, apr_size_t len);

/* [{id, full_name, private}] of a delivery's repository objects that have
 * them (the provider's lists of added, removed or selected repositories;
 * anything else in arr is skipped), bound to p. The webhook's, and the
 * fuzz target's (t/fuzz/fuzz_webhook.c). */
json_t *svc_vcs_repo_list(apr_pool_t *p, const json_t *arr);

/* Route handlers. */
svc_handler_t svc_h_vcs_webhook, svc_h_vcs_deliveries_list, svc_h_vcs_delivery_get;
/* POST /api/admin/vcs/deliveries/:deliveryId/redeliver: a delivery whose
 * processing failed, processed again (one more attempt). */
apr_status_t svc_h_vcs_delivery_redeliver(svc_ctx_t *ctx);

/* A recorded delivery (with its payload); what the webhook answers. */
extern const svc_schema_t svc_schema_delivery, svc_schema_delivery_detail,
                          svc_schema_delivery_receipt;

#endif /* SVC_VCS_WEBHOOK_H */
