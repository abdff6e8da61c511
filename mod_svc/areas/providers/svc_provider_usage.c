/*
 * svc_provider_usage.c: the usage table summed for other areas
 * (svc_providers.h): what the pipeline shows next to its estimates.
 */
#include "svc_providers.h"

static const svc_stmt_t st_usage_sums = {
    "svc_providers_usage_sums",
    "SELECT subject_id, model, count(*), sum(input_tokens)::bigint,"
    " sum(output_tokens)::bigint FROM model_usage"
    " WHERE org_id = $1 AND subject_type = $2 AND subject_id = ANY ($3::text[])"
    " GROUP BY subject_id, model ORDER BY subject_id, model",
    3, SVC_STMT_READ | SVC_STMT_BINARY
};

/* The ids as a PostgreSQL array literal, each element quoted. */
static const char *array_literal(apr_pool_t *p, const apr_array_header_t *ids)
{
    svc_jbuf_t b;
    int i;

    svc_jbuf_init(&b, p, 64);
    svc_jbuf_raw(&b, "{", 1);
    for (i = 0; i < ids->nelts; i++) {
        const char *id = APR_ARRAY_IDX(ids, i, const char *), *c;
        if (i) {
            svc_jbuf_raw(&b, ",", 1);
        }
        svc_jbuf_raw(&b, "\"", 1);
        for (c = id; *c; c++) {
            if (*c == '"' || *c == '\\') {
                svc_jbuf_raw(&b, "\\", 1);
            }
            svc_jbuf_raw(&b, c, 1);
        }
        svc_jbuf_raw(&b, "\"", 1);
    }
    svc_jbuf_raw(&b, "}", 1);
    return svc_jbuf_text(&b, NULL);
}

apr_status_t svc_provider_usage_sums(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                     const char *subject_type,
                                     const apr_array_header_t *subject_ids,
                                     apr_array_header_t **psums)
{
    apr_array_header_t *sums = apr_array_make(p, 4, sizeof(svc_usage_sum_t));
    svc_dbres_t *res;
    apr_status_t rv;
    int i;

    *psums = sums;
    if (subject_ids->nelts == 0) {
        return APR_SUCCESS;
    }
    rv = svc_db_execv(db, &st_usage_sums, p, &res, org_id, subject_type,
                      array_literal(p, subject_ids));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (i = 0; i < svc_dbres_rows(res); i++) {
        svc_usage_sum_t *s = apr_array_push(sums);
        s->subject_id = apr_pstrdup(p, svc_dbres_str(res, i, 0));
        s->model = apr_pstrdup(p, svc_dbres_str(res, i, 1));
        if (svc_dbres_int64(res, i, 2, &s->calls) != APR_SUCCESS
            || svc_dbres_int64(res, i, 3, &s->input_tokens) != APR_SUCCESS
            || svc_dbres_int64(res, i, 4, &s->output_tokens) != APR_SUCCESS) {
            return SVC_EDB;
        }
    }
    return APR_SUCCESS;
}
