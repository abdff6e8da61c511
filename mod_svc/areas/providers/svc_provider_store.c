/*
 * svc_provider_store.c: loading providers with their keys opened, sealing
 * keys, and recording every model call in the usage table.
 */
#include "svc_provider_store.h"
#include "svc_llm.h"
#include "svc_metrics.h"

#include <string.h>

/* The columns a loaded provider needs, read in binary (the sealed key is
 * bytea: raw bytes, no hex to decode). */
#define LOAD_COLS "SELECT id, org_id, name, kind, base_url, model, key_box, tools," \
                  " tools_detected FROM llm_providers"

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

static const svc_stmt_t st_prov_keys = {
    "svc_providers_keys",
    "SELECT key_box FROM llm_providers WHERE org_id = $1 ORDER BY seq",
    1, SVC_STMT_READ | SVC_STMT_BINARY
};

/* What a test's probe found stays whatever the test answers: a record of a
 * call made, like its usage, so it stands alone. */
static const svc_stmt_t st_prov_tools_found = {
    "svc_providers_tools_found",
    "UPDATE llm_providers SET tools_detected = $3::boolean WHERE id = $1 AND org_id = $2",
    3, SVC_STMT_ALONE
};

static const svc_stmt_t st_usage_calls = {
    "svc_providers_usage_calls",
    "SELECT input_tokens, output_tokens, duration_ms, status, error_code, model"
    " FROM model_usage WHERE org_id = $1 AND subject_type = $2 AND subject_id = $3"
    " ORDER BY id LIMIT 10000",
    3, SVC_STMT_READ
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
    prov->tools = apr_pstrdup(p, svc_dbres_str(res, 0, 7));
    prov->tools_detected = svc_dbres_bool(res, 0, 8);
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
    /* Every model call of the service comes through here, whatever made
     * it (a document, a run, a test): the place to count them. */
    svc_metrics_model_call(svc_metrics_current(), prov->kind, !reply->error_code,
                           reply->input_tokens, reply->output_tokens);
    return svc_db_execv(db, &st_usage_insert, p, NULL, u->org_id, prov->id, prov->kind,
                        prov->model,
                        apr_psprintf(p, "%" APR_INT64_T_FMT, reply->input_tokens),
                        apr_psprintf(p, "%" APR_INT64_T_FMT, reply->output_tokens),
                        apr_ltoa(p, reply->duration_ms), u->user_id, u->purpose,
                        u->subject_type, u->subject_id, reply->error_code ? "error" : "ok",
                        reply->error_code, apr_itoa(p, reply->http_status));
}

int svc_provider_uses_tools(apr_pool_t *p, const svc_provider_t *prov, const char **pwhy)
{
    int on = strcmp(prov->tools, "on") == 0
             || (strcmp(prov->tools, "auto") == 0 && prov->tools_detected != 0);

    /* auto before any test: both APIs we speak have tools, and most servers
     * that speak them do; a test that finds otherwise turns them off. */
    *pwhy = strcmp(prov->tools, "auto") != 0
            ? apr_psprintf(p, "tools %s", prov->tools)
            : prov->tools_detected == 1 ? "tools auto: the provider test found tool calling works"
            : prov->tools_detected == 0 ? "tools auto: the provider test found no tool calling"
            : "tools auto: not tested yet, tools assumed";
    return on;
}

apr_status_t svc_provider_tools_found(svc_db_t *db, apr_pool_t *p, const svc_provider_t *prov,
                                      int works)
{
    return svc_db_execv(db, &st_prov_tools_found, p, NULL, prov->id, prov->org_id,
                        works ? "true" : "false");
}

apr_status_t svc_provider_org_keys(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                                   const char *org_id, apr_array_header_t **pkeys)
{
    svc_dbres_t *res;
    apr_status_t rv = svc_db_execv(db, &st_prov_keys, p, &res, org_id);
    int i;

    *pkeys = apr_array_make(p, 2, sizeof(const char *));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < svc_dbres_rows(res); i++) {
        apr_size_t klen;
        char *key;

        /* A key that no longer opens (the server secret changed) cannot
         * be used by anything either. */
        if (svc_box_open(p, conf->box_key, (const unsigned char *)svc_dbres_str(res, i, 0),
                         svc_dbres_len(res, i, 0), &key, &klen) == APR_SUCCESS) {
            APR_ARRAY_PUSH(*pkeys, const char *) = key;
        }
    }
    return APR_SUCCESS;
}

apr_status_t svc_provider_usage_calls(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                      const char *subject_type, const char *subject_id,
                                      json_t **pcalls)
{
    json_t *calls = svc_json_pool(p, json_array());
    svc_dbres_t *res;
    apr_status_t rv = svc_db_execv(db, &st_usage_calls, p, &res, org_id, subject_type,
                                   subject_id);
    int i;

    *pcalls = calls;
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < svc_dbres_rows(res); i++) {
        apr_int64_t in = 0, out = 0, ms = 0;

        if (svc_dbres_int64(res, i, 0, &in) != APR_SUCCESS
            || svc_dbres_int64(res, i, 1, &out) != APR_SUCCESS
            || svc_dbres_int64(res, i, 2, &ms) != APR_SUCCESS) {
            return SVC_EDB;
        }
        json_array_append_new(calls, json_pack("{s:i,s:I,s:I,s:I,s:s,s:s?,s:s}",
                                               "call", i + 1, "input_tokens", (json_int_t)in,
                                               "output_tokens", (json_int_t)out,
                                               "duration_ms", (json_int_t)ms,
                                               "status", svc_dbres_str(res, i, 3),
                                               "error_code", svc_dbres_str(res, i, 4),
                                               "model", svc_dbres_str(res, i, 5)));
    }
    return APR_SUCCESS;
}
