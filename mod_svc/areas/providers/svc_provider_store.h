/*
 * svc_provider_store.h: provider rows with their sealed keys, and the
 * usage table (providers-private).
 */
#ifndef SVC_PROVIDER_STORE_H
#define SVC_PROVIDER_STORE_H

#include "svc_providers.h"

/* The provider with this id in this org, its key opened. SVC_ENOTFOUND
 * when there is none; APR_EINVAL when the key cannot be opened. */
apr_status_t svc_provider_load(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                               const char *org_id, const char *id, svc_provider_t **pprov);

/* A key as stored: sealed under the server's key for secrets at rest, as
 * a bytea parameter; and the hint lists show (its last four characters,
 * for keys long enough that four say little). */
const char *svc_provider_seal_key(apr_pool_t *p, const svc_config_t *conf, const char *key);
const char *svc_provider_key_hint(apr_pool_t *p, const char *key);

#endif /* SVC_PROVIDER_STORE_H */
