/*
 * svc_eventlog.c: writing and reading the event log (svc_eventlog.h).
 */
#include "svc_eventlog.h"
#include "svc_json.h"

#include <string.h>

static const svc_stmt_t st_event_insert = {
    "svc_events_insert",
    "INSERT INTO events (org_id, project_id, run_id, kind, data)"
    " VALUES ($1, $2, $3, $4, $5::jsonb)",
    5, 0
};

static const svc_stmt_t st_event_insert_target = {
    "svc_events_insert_target",
    "INSERT INTO events (org_id, target_id, kind, data) VALUES ($1, $2, $3, $4::jsonb)",
    4, 0
};

/* The running total of the events' sizes keeps a read within its byte
 * budget in PostgreSQL (the first event always comes, whatever its size). */
static const svc_stmt_t st_events_after = {
    "svc_events_after",
    "SELECT id, kind, run_id, target_id, data FROM ("
    "SELECT id, kind, run_id, target_id, data::text AS data,"
    " sum(octet_length(data::text)) OVER (ORDER BY id) AS upto"
    " FROM events"
    " WHERE org_id = $1 AND id > $2::bigint AND ($3::text IS NULL OR run_id = $3)"
    " AND CASE WHEN $6::text IS NULL THEN target_id IS NULL WHEN $6 = '"
    SVC_EVENTS_EVERY_TARGET "' THEN true ELSE target_id = $6 END"
    " ORDER BY id LIMIT $4::int) e"
    " WHERE upto - octet_length(data) < $5::bigint ORDER BY id",
    6, SVC_STMT_READ
};

static const svc_stmt_t st_streams_claim = {
    "svc_streams_claim",
    "SELECT svc_stream_claim($1, $2, $3::int)",
    3, SVC_STMT_ALONE
};

static const svc_stmt_t st_streams_release = {
    "svc_streams_release",
    "DELETE FROM event_streams WHERE id = ANY($1::bigint[])",
    1, SVC_STMT_RETRY | SVC_STMT_ALONE
};

static const svc_stmt_t st_streams_refresh = {
    "svc_streams_refresh",
    "WITH seen AS (UPDATE event_streams SET seen_at = now() WHERE holder = $1)"
    " DELETE FROM event_streams WHERE seen_at < now() - interval '5 minutes'"
    " AND holder <> $1",
    1, SVC_STMT_RETRY | SVC_STMT_ALONE
};

static const svc_stmt_t st_streams_release_all = {
    "svc_streams_release_all",
    "DELETE FROM event_streams WHERE holder = $1",
    1, SVC_STMT_RETRY | SVC_STMT_ALONE
};

apr_status_t svc_event_emit(svc_db_t *db, apr_pool_t *p, const char *org_id,
                            const char *project_id, const char *run_id, const char *kind,
                            const json_t *data)
{
    const char *text = data ? svc_json_dump(p, data) : "{}";

    if (!text || (data && !json_is_object(data))) {
        return APR_EINVAL;
    }
    return svc_db_execv(db, &st_event_insert, p, NULL, org_id, project_id, run_id, kind, text);
}

apr_status_t svc_event_emit_target(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                   const char *target_id, const char *kind,
                                   const json_t *data)
{
    const char *text = data ? svc_json_dump(p, data) : "{}";

    if (!text || !target_id || (data && !json_is_object(data))) {
        return APR_EINVAL;
    }
    return svc_db_execv(db, &st_event_insert_target, p, NULL, org_id, target_id, kind, text);
}

apr_status_t svc_events_after(svc_db_t *db, apr_pool_t *p, const char *org_id,
                              const char *run_id, const char *target_id, apr_int64_t after,
                              int limit, apr_size_t max_bytes, apr_array_header_t **pevents)
{
    apr_array_header_t *out;
    svc_dbres_t *res;
    apr_status_t rv;
    int i, n;

    rv = svc_db_execv(db, &st_events_after, p, &res, org_id,
                      apr_psprintf(p, "%" APR_INT64_T_FMT, after), run_id,
                      apr_itoa(p, limit), apr_psprintf(p, "%" APR_SIZE_T_FMT, max_bytes),
                      target_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    n = svc_dbres_rows(res);
    out = apr_array_make(p, n ? n : 1, sizeof(svc_event_t));
    for (i = 0; i < n; i++) {
        svc_event_t *e = apr_array_push(out);
        if (svc_dbres_int64(res, i, 0, &e->id) != APR_SUCCESS) {
            return SVC_EDB;
        }
        e->kind = svc_dbres_str(res, i, 1);
        e->run_id = svc_dbres_str(res, i, 2);
        e->target_id = svc_dbres_str(res, i, 3);
        e->data = svc_dbres_str(res, i, 4);
    }
    *pevents = out;
    return APR_SUCCESS;
}

apr_status_t svc_streams_claim(svc_db_t *db, apr_pool_t *p, const char *principal,
                               const char *holder, int limit, apr_int64_t *pid)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_streams_claim, p, &res, principal, holder, apr_itoa(p, limit));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    *pid = 0;
    if (svc_dbres_rows(res) != 1) {
        return SVC_EDB;
    }
    if (!svc_dbres_isnull(res, 0, 0) && svc_dbres_int64(res, 0, 0, pid) != APR_SUCCESS) {
        return SVC_EDB;
    }
    return APR_SUCCESS;
}

apr_status_t svc_streams_release(svc_db_t *db, apr_pool_t *p, const char *ids)
{
    return svc_db_execv(db, &st_streams_release, p, NULL, ids);
}

apr_status_t svc_streams_refresh(svc_db_t *db, apr_pool_t *p, const char *holder)
{
    return svc_db_execv(db, &st_streams_refresh, p, NULL, holder);
}

apr_status_t svc_streams_release_all(svc_db_t *db, apr_pool_t *p, const char *holder)
{
    return svc_db_execv(db, &st_streams_release_all, p, NULL, holder);
}

apr_status_t svc_events_parse_notice(apr_pool_t *p, const char *payload, const char **porg,
                                     apr_int64_t *pid)
{
    const char *colon = payload ? strrchr(payload, ':') : NULL;
    long long id;

    if (!colon || colon == payload
        || svc_parse_int(colon + 1, 1, APR_INT64_MAX, &id) != APR_SUCCESS) {
        return APR_EINVAL;
    }
    *porg = apr_pstrmemdup(p, payload, (apr_size_t)(colon - payload));
    *pid = id;
    return APR_SUCCESS;
}
