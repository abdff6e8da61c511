/*
 * svc_provider_store.c: loading providers with their keys opened, sealing
 * keys, and recording every model call in the usage table.
 */
#include "svc_provider_store.h"
#include "svc_llm.h"

#include <string.h>

/* The columns a loaded provider needs, read in binary (the sealed key is
 * bytea: raw bytes, no hex to decode). */
#define LOAD_COLS "SELECT id, org_id, name, kind, base_url, model, key_box FROM llm_providers"

static const svc_stmt_t st_prov_load_default = {
    "svc_providers_load_default",
    LOAD_COLS " WHERE org_id = $1 AND is_default",
    1, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_prov_load = {
    "svc_providers_load",
    LOAD_COLS " WHERE org_id = $1 AND id = $2",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

/* The provider or the user may have gone while the model answered: the
 * call is recorded all the same, without the reference. */
static const svc_stmt_t st_usage_insert = {
    "svc_providers_usage_insert",
    "INSERT INTO model_usage (org_id, provider_id, provider_kind, model, input_tokens,"
    " output_tokens, duration_ms, user_id, purpose, subject_type, subject_id, status,"
    " error_code, http_status)"
    " VALUES ($1, (SELECT id FROM llm_providers WHERE id = $2), $3, $4, $5::bigint,"
    " $6::bigint, $7::int, (SELECT id FROM users WHERE id = $8), $9, $10, $11, $12, $13,"
    " nullif($14::int, 0))",
    14, SVC_STMT_ALONE
};

static apr_status_t provider_of(apr_pool_t *p, const svc_config_t *conf,
                                const svc_dbres_t *res, svc_provider_t **pprov)
{
    svc_provider_t *prov;
    apr_size_t klen;
    char *key;

    if (svc_dbres_rows(res) != 1) {
        return SVC_ENOTFOUND;
    }
    prov = apr_pcalloc(p, sizeof(*prov));
    prov->id = apr_pstrdup(p, svc_dbres_str(res, 0, 0));
    prov->org_id = apr_pstrdup(p, svc_dbres_str(res, 0, 1));
    prov->name = apr_pstrdup(p, svc_dbres_str(res, 0, 2));
    prov->kind = apr_pstrdup(p, svc_dbres_str(res, 0, 3));
    prov->base_url = apr_pstrdup(p, svc_dbres_str(res, 0, 4));
    prov->model = apr_pstrdup(p, svc_dbres_str(res, 0, 5));
    if (svc_box_open(p, conf->box_key, (const unsigned char *)svc_dbres_str(res, 0, 6),
                     svc_dbres_len(res, 0, 6), &key, &klen) != APR_SUCCESS) {
        return APR_EINVAL;
    }
    prov->key = key;
    *pprov = prov;
    return APR_SUCCESS;
}

apr_status_t svc_provider_default(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                                  const char *org_id, svc_provider_t **pprov)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_prov_load_default, p, &res, org_id);
    return rv == APR_SUCCESS ? provider_of(p, conf, res, pprov) : rv;
}

apr_status_t svc_provider_load(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                               const char *org_id, const char *id, svc_provider_t **pprov)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_prov_load, p, &res, org_id, id);
    return rv == APR_SUCCESS ? provider_of(p, conf, res, pprov) : rv;
}

const char *svc_provider_seal_key(apr_pool_t *p, const svc_config_t *conf, const char *key)
{
    unsigned char *box;
    apr_size_t boxlen;

    svc_box_seal(p, conf->box_key, key, strlen(key), &box, &boxlen);
    return svc_bytea_param(p, box, boxlen);
}

const char *svc_provider_key_hint(apr_pool_t *p, const char *key)
{
    apr_size_t n = strlen(key);

    return n >= 16 ? apr_pstrdup(p, key + n - 4) : "";
}

apr_status_t svc_provider_record_usage(svc_db_t *db, apr_pool_t *p, const svc_provider_t *prov,
                                       const svc_usage_t *u, const svc_llm_reply_t *reply)
{
    return svc_db_execv(db, &st_usage_insert, p, NULL, u->org_id, prov->id, prov->kind,
                        prov->model,
                        apr_psprintf(p, "%" APR_INT64_T_FMT, reply->input_tokens),
                        apr_psprintf(p, "%" APR_INT64_T_FMT, reply->output_tokens),
                        apr_ltoa(p, reply->duration_ms), u->user_id, u->purpose,
                        u->subject_type, u->subject_id, reply->error_code ? "error" : "ok",
                        reply->error_code, apr_itoa(p, reply->http_status));
}
