/*
 * svc_telemetry.c: what the agents report of their workloads, and what the
 * users read of it (docs/api/deployments.md, "Telemetry"):
 *
 *   POST /api/orgs/:orgSlug/deployments/:id/request-logs   ask the agent for logs
 *   GET  /api/orgs/:orgSlug/deployments/:id/logs           the latest upload (text)
 *   GET  /api/orgs/:orgSlug/deployments/:id/metrics        resources over time
 *   GET  /api/orgs/:orgSlug/deployments/:id/uptime         availability over time
 *   POST /api/agent/deployments/:id/logs/:requestId        an upload of logs
 *   POST /api/agent/telemetry                              samples and probes
 *
 * The agent is the only source of these figures, and what it sends is
 * rebuilt from what we look for, never stored as sent: logs are made valid
 * UTF-8 here whatever the agent did, and the key it presented is redacted
 * here too. Times are the service's: the agent says how long ago it took a
 * figure, so a wrong clock on the target moves nothing.
 *
 * A figure sent again is taken once: an agent numbers its figures (seq) in
 * the boot it chose when it started, and per (target, boot) the service
 * keeps the highest number it took (deploy_telemetry_boots, sql/027), in
 * the transaction of the figures; a figure at or below it is acknowledged
 * and skipped. An agent of before 027 sends no numbers and is taken as
 * before, every figure as it comes.
 *
 * Incidents: after each report, a running deployment whose replica failed
 * its last three probes, or restarted three times in five minutes, has an
 * incident: an improvement filed in its project by the service (the
 * pipeline's svc_improvement_file_incident), one open per deployment,
 * further failures counted on it, at most one filed an hour; three good
 * probes of every replica add a note that it recovered.
 */
#include "svc_telemetry.h"
#include "svc_deploy_store.h"
#include "svc_pipeline.h"

#include <string.h>
#include <strings.h>

/* Most deployments, samples and probes one report may carry. */
#define REPORT_DEPLOYMENTS_MAX  50
#define REPORT_ITEMS_MAX        2000
/* A figure older than this (seconds) is not taken. */
#define REPORT_AGO_MAX          86400
/* The hex digits of an agent's boot. */
#define REPORT_BOOT_LEN         32
/* The most points of a metrics series. */
#define METRICS_POINTS_MAX      1000
#define METRICS_STEP_MIN        15
#define METRICS_RANGE_MAX       (31 * 86400)
/* Lines of the latest logs an incident quotes. */
#define INCIDENT_LOG_LINES      40

/* ------------------------------------------------------------------------
 * Statements
 */

static const svc_stmt_t st_log_request = {
    "svc_deploy_log_request",
    "INSERT INTO deploy_log_requests (id, org_id, deployment_id, target_id, lines, requested_by)"
    " VALUES ($1, $2, $3, $4, $5::int, $6)",
    6, 0
};

static const svc_stmt_t st_logs_read = {
    "svc_deploy_logs_read",
    "SELECT l.id, l.body, l.truncated, svc_ts(l.uploaded_at) FROM deployments d"
    " LEFT JOIN LATERAL (SELECT * FROM deploy_log_requests l WHERE l.deployment_id = d.id"
    "   AND l.uploaded_at IS NOT NULL AND ($3::text IS NULL OR l.id = $3)"
    "   ORDER BY l.uploaded_at DESC, l.seq DESC LIMIT 1) l ON true"
    " WHERE d.id = $1 AND d.org_id = $2",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_dep_of_target = {
    "svc_deploy_dep_of_target",
    "SELECT org_id, status FROM deployments WHERE id = $1 AND target_id = $2",
    2, 0
};

static const svc_stmt_t st_log_lock = {
    "svc_deploy_log_lock",
    "SELECT lines, uploaded_at IS NOT NULL FROM deploy_log_requests"
    " WHERE id = $1 AND deployment_id = $2 AND target_id = $3 FOR UPDATE",
    3, 0
};

static const svc_stmt_t st_log_store = {
    "svc_deploy_log_store",
    "UPDATE deploy_log_requests SET body = $2, truncated = $3::boolean, uploaded_at = now()"
    " WHERE id = $1 AND uploaded_at IS NULL",
    3, 0
};

/* Samples and probes of one deployment of the reporting target: a
 * deployment of another target, or gone, takes nothing. */
static const svc_stmt_t st_metrics_insert = {
    "svc_deploy_metrics_insert",
    "INSERT INTO deploy_metrics (deployment_id, replica, at, cpu_seconds, rss_bytes, fds,"
    " restarts)"
    " SELECT d.id, x.replica, now() - make_interval(secs => x.ago_ms / 1000.0), x.cpu_seconds,"
    " x.rss_bytes, x.fds, x.restarts FROM deployments d,"
    " jsonb_to_recordset($3::jsonb) AS x(replica smallint, ago_ms bigint,"
    "   cpu_seconds double precision, rss_bytes bigint, fds integer, restarts integer)"
    " WHERE d.id = $1 AND d.target_id = $2 AND d.status NOT IN ('torn_down', 'separated')"
    " ON CONFLICT DO NOTHING",
    3, 0
};

static const svc_stmt_t st_probes_insert = {
    "svc_deploy_probes_insert",
    "INSERT INTO deploy_probes (deployment_id, replica, at, ok, latency_ms)"
    " SELECT d.id, x.replica, now() - make_interval(secs => x.ago_ms / 1000.0), x.ok,"
    " x.latency_ms FROM deployments d,"
    " jsonb_to_recordset($3::jsonb) AS x(replica smallint, ago_ms bigint, ok boolean,"
    "   latency_ms integer)"
    " WHERE d.id = $1 AND d.target_id = $2 AND d.status NOT IN ('torn_down', 'separated')"
    " ON CONFLICT DO NOTHING",
    3, 0
};

/* The number of the last figure taken of the agent's boot (-1: none yet),
 * its row locked to the end of the transaction: a batch sent again while
 * the first is still being written waits for it, then skips what it took. */
static const svc_stmt_t st_boot_claim = {
    "svc_deploy_boot_claim",
    "INSERT INTO deploy_telemetry_boots (target_id, boot) VALUES ($1, $2)"
    " ON CONFLICT (target_id, boot) DO UPDATE SET seen_at = now() RETURNING seq",
    2, 0
};

static const svc_stmt_t st_boot_advance = {
    "svc_deploy_boot_advance",
    "UPDATE deploy_telemetry_boots SET seq = greatest(seq, $3::bigint)"
    " WHERE target_id = $1 AND boot = $2",
    3, 0
};

/*
 * How a deployment is now, from its recent probes and samples: replicas
 * whose last three probes (of the last ten minutes) all failed; replicas
 * whose last three all passed, of those probed; the most restarts of a
 * replica in five minutes (counted between consecutive samples: an agent
 * that restarted counts from zero again, which is no restart).
 */
static const svc_stmt_t st_health_now = {
    "svc_deploy_health_now",
    "WITH last3 AS (SELECT replica, ok FROM (SELECT replica, ok, row_number() OVER"
    "   (PARTITION BY replica ORDER BY at DESC) AS n FROM deploy_probes"
    "   WHERE deployment_id = $1 AND at > now() - interval '10 minutes') x WHERE n <= 3),"
    " per AS (SELECT replica, count(*) AS n, bool_or(ok) AS any_ok, bool_and(ok) AS all_ok"
    "   FROM last3 GROUP BY replica),"
    " steps AS (SELECT replica, greatest(restarts - lag(restarts) OVER"
    "   (PARTITION BY replica ORDER BY at), 0) AS up FROM deploy_metrics"
    "   WHERE deployment_id = $1 AND at > now() - interval '5 minutes')"
    " SELECT (SELECT count(*) FROM per WHERE n = 3 AND NOT any_ok),"
    " (SELECT count(*) FROM per WHERE n = 3 AND all_ok), (SELECT count(*) FROM per),"
    " (SELECT coalesce(max(s), 0) FROM (SELECT sum(up) AS s FROM steps GROUP BY replica) y)",
    1, 0
};

static const svc_stmt_t st_incident_row = {
    "svc_deploy_incident_row",
    "INSERT INTO deploy_incidents (deployment_id, org_id) VALUES ($1, $2)"
    " ON CONFLICT DO NOTHING",
    2, 0
};

/* The row, with whether its improvement is still open and whether one was
 * filed in the last hour. */
static const svc_stmt_t st_incident_lock = {
    "svc_deploy_incident_lock",
    "SELECT c.improvement_id, c.failures, c.recovered_at IS NOT NULL,"
    " coalesce(i.status = 'open', false), coalesce(c.filed_at > now() - interval '1 hour', false)"
    " FROM deploy_incidents c LEFT JOIN improvements i ON i.id = c.improvement_id"
    " WHERE c.deployment_id = $1 FOR UPDATE OF c",
    1, 0
};

static const svc_stmt_t st_incident_failed = {
    "svc_deploy_incident_failed",
    "UPDATE deploy_incidents SET failures = failures + 1, last_failure_at = now(),"
    " recovered_at = NULL WHERE deployment_id = $1",
    1, 0
};

static const svc_stmt_t st_incident_filed = {
    "svc_deploy_incident_filed",
    "UPDATE deploy_incidents SET improvement_id = $2, reason = $3, failures = 1,"
    " last_failure_at = now(), filed_at = now(), recovered_at = NULL WHERE deployment_id = $1",
    3, 0
};

static const svc_stmt_t st_incident_recovered = {
    "svc_deploy_incident_recovered",
    "UPDATE deploy_incidents SET recovered_at = now() WHERE deployment_id = $1",
    1, 0
};

/* What an incident is filed with: the deployment's project, and the last
 * lines of its latest log upload. */
static const svc_stmt_t st_incident_context = {
    "svc_deploy_incident_context",
    "SELECT d.project_id, (SELECT l.body FROM deploy_log_requests l"
    "   WHERE l.deployment_id = d.id AND l.uploaded_at IS NOT NULL"
    "   ORDER BY l.uploaded_at DESC LIMIT 1) FROM deployments d WHERE d.id = $1",
    1, 0
};

static const svc_stmt_t st_metrics_read = {
    "svc_deploy_metrics_read",
    "WITH s AS (SELECT replica::int AS replica,"
    "   to_timestamp(floor(extract(epoch FROM at) / $5::int) * $5::int) AS t,"
    "   max(cpu_seconds) AS cpu, max(rss_bytes) AS rss, max(fds) AS fds,"
    "   max(restarts) AS restarts FROM deploy_metrics"
    "   WHERE deployment_id = $1 AND at >= to_timestamp($3::bigint)"
    "   AND at < to_timestamp($4::bigint) GROUP BY 1, 2),"
    " u AS (SELECT replica, t, cpu, rss, fds, restarts FROM s UNION ALL"
    "   SELECT NULL, t, sum(cpu), sum(rss), sum(fds), sum(restarts) FROM s GROUP BY t)"
    " SELECT json_build_object('from', svc_ts(to_timestamp($3::bigint)),"
    " 'to', svc_ts(to_timestamp($4::bigint)), 'step', $5::int,"
    " 'series', coalesce((SELECT json_agg(json_build_object('replica', x.replica,"
    "   'points', x.points) ORDER BY x.replica NULLS LAST) FROM (SELECT replica,"
    "   json_agg(json_build_array(svc_ts(t), round(cpu::numeric, 3), rss, fds, restarts)"
    "   ORDER BY t) AS points FROM u GROUP BY replica) x), '[]'))::text"
    " FROM deployments d WHERE d.id = $1 AND d.org_id = $2",
    5, SVC_STMT_READ
};

/*
 * Buckets of a minute (24h) or an hour (7d, 30d) over the window; a
 * bucket with no probe is unknown (the target was silent, or nothing
 * ran), and counts neither way.
 */
static const svc_stmt_t st_uptime_read = {
    "svc_deploy_uptime_read",
    "WITH w AS (SELECT $3::interval AS win, $4::text AS unit, ('1 ' || $4)::interval AS b),"
    " p AS (SELECT date_trunc((SELECT unit FROM w), at) AS s, count(*) FILTER (WHERE ok) AS up,"
    "   count(*) FILTER (WHERE NOT ok) AS down,"
    "   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms)"
    "     FILTER (WHERE ok))::int AS p50 FROM deploy_probes"
    "   WHERE deployment_id = $1 AND at > now() - (SELECT win FROM w) GROUP BY 1),"
    " b AS (SELECT generate_series(date_trunc((SELECT unit FROM w), now() - (SELECT win FROM w))"
    "   + (SELECT b FROM w), date_trunc((SELECT unit FROM w), now()), (SELECT b FROM w)) AS s)"
    " SELECT json_build_object('window', $5::text,"
    " 'bucket', (SELECT unit FROM w),"
    " 'availability', (SELECT CASE WHEN sum(up + down) > 0"
    "   THEN round(sum(up)::numeric / sum(up + down), 6) END FROM p),"
    " 'unknown_buckets', (SELECT count(*) FROM b LEFT JOIN p USING (s) WHERE p.s IS NULL),"
    " 'last_probe_at', (SELECT svc_ts(max(at)) FROM deploy_probes WHERE deployment_id = $1),"
    " 'buckets', (SELECT json_agg(json_build_object('start', svc_ts(b.s),"
    "   'up', coalesce(p.up, 0), 'down', coalesce(p.down, 0), 'p50_ms', p.p50,"
    "   'status', CASE WHEN p.s IS NULL THEN 'unknown' WHEN p.down = 0 THEN 'up'"
    "   WHEN p.up = 0 THEN 'down' ELSE 'partial' END) ORDER BY b.s)"
    "   FROM b LEFT JOIN p USING (s)),"
    " 'incidents', coalesce((SELECT json_agg(i.id ORDER BY i.seq) FROM improvements i"
    "   WHERE i.org_id = $2 AND i.source = 'incident' AND i.source_ref = d.id"
    "   AND i.created_at > now() - (SELECT win FROM w)), '[]'))::text"
    " FROM deployments d WHERE d.id = $1 AND d.org_id = $2",
    5, SVC_STMT_READ
};

static const svc_stmt_t st_sweep_metrics = {
    "svc_deploy_sweep_metrics",
    "WITH a AS (DELETE FROM deploy_metrics WHERE at < now() - make_interval(days => $1::int)"
    "   RETURNING 1),"
    " b AS (DELETE FROM deploy_probes WHERE at < now() - make_interval(days => $1::int)"
    "   RETURNING 1),"
    " c AS (DELETE FROM deploy_log_requests"
    "   WHERE created_at < now() - make_interval(days => $1::int) RETURNING 1),"
    " e AS (DELETE FROM deploy_telemetry_boots"
    "   WHERE seen_at < now() - make_interval(secs => $2::int) RETURNING 1)"
    " SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM b) + (SELECT count(*) FROM c)"
    " + (SELECT count(*) FROM e)",
    2, SVC_STMT_RETRY
};

/* ------------------------------------------------------------------------
 * Fields
 */

const svc_field_t svc_body_log_request[] = {
    { .name = "lines", .type = SVC_FT_INT, .min = 1, .max = TELEMETRY_LINES_MAX,
      .description = "The last lines of each replica's output to upload, 1 to 5000 "
        "(default 500)." },
    SVC_FIELD_END
};

const svc_qparam_t svc_query_logs[] = {
    { "request", "string", "One upload, by its log_request id (lgr_...); without it, the "
      "latest." },
    { NULL, NULL, NULL }
};

const svc_qparam_t svc_query_metrics[] = {
    { "from", "string", "RFC 3339; default: an hour before `to`." },
    { "to", "string", "RFC 3339; default: now." },
    { "step", "integer", "Seconds a point covers (at least 15; made coarser so that a series "
      "has at most 1000 points)." },
    { NULL, NULL, NULL }
};

const svc_qparam_t svc_query_uptime[] = {
    { "window", "string", "24h (the default; minute buckets), 7d or 30d (hourly buckets)." },
    { NULL, NULL, NULL }
};

const svc_field_t svc_body_agent_logs[] = {
    { .name = "replicas", .type = SVC_FT_OBJECT, .required = 1,
      .description = "Per replica index (\"0\" to \"9\"), its last lines as base64url "
        "(without padding): bytes as written, which the service makes valid UTF-8." },
    SVC_FIELD_END
};

const svc_field_t svc_body_agent_telemetry[] = {
    { .name = "deployments", .type = SVC_FT_OBJECT, .required = 1,
      .description = "Per deployment id, {\"metrics\": [{\"replica\", \"ago_ms\", "
        "\"cpu_seconds\", \"rss_bytes\", \"fds\", \"restarts\", \"seq\"}], \"probes\": "
        "[{\"replica\", \"ago_ms\", \"ok\", \"latency_ms\", \"seq\"}]}: ago_ms is how long "
        "ago the figure was taken; seq (with boot) its number, from 0 up in the agent's boot." },
    { .name = "boot", .type = SVC_FT_STRING, .min = REPORT_BOOT_LEN, .max = REPORT_BOOT_LEN,
      .description = "The agent's boot: 32 lowercase hex digits it chose at random when it "
        "started. With it every figure carries its seq, and a figure sent again (a number "
        "at or below the highest taken of the boot) is acknowledged but not stored again. "
        "Without it (an agent older than this field), no figure carries a seq and every one "
        "is taken as it comes." },
    SVC_FIELD_END
};

/* ------------------------------------------------------------------------
 * Logs
 */

static apr_status_t request_logs(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "id");
    const json_t *jl = json_object_get(ctx->body, "lines");
    int lines = json_is_integer(jl) ? (int)json_integer_value(jl) : TELEMETRY_LINES_DEFAULT;
    const char *lgr = svc_id_new(ctx->pool, "lgr_");
    svc_deployment_t *dep;
    json_t *data;
    apr_status_t rv;

    (void)baton;
    rv = svc_dep_lock(db, ctx->pool, ctx->org->id, id, &dep);
    if (rv == SVC_ENOTFOUND) {
        return svc_dep_not_found(ctx, id);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (!dep->applied_plan || strcmp(dep->status, DS_TORN_DOWN) == 0
        || strcmp(dep->status, DS_SEPARATED) == 0) {
        return svc_fail(ctx, 409, "invalid_status", "Deployment %s is %s: nothing of it runs "
                        "on its target to take logs of.", id, dep->status);
    }
    if ((rv = svc_db_execv(db, &st_log_request, ctx->pool, NULL, lgr, ctx->org->id, id,
                           dep->target_id, apr_itoa(ctx->pool, lines),
                           ctx->who->user_id)) != APR_SUCCESS) {
        return rv;
    }
    if ((rv = svc_audit_ctx(ctx, db, "deployment.logs_requested",
                            "deployment", id,
                            svc_json_pool(ctx->pool, json_pack("{s:s,s:i}", "log_request_id",
                                                               lgr, "lines", lines))))
        != APR_SUCCESS) {
        return rv;
    }
    data = svc_json_pool(ctx->pool, json_pack("{s:s,s:s,s:i}", "log_request_id", lgr,
                                              "deployment_id", id, "lines", lines));
    if ((rv = svc_event_emit_target(db, ctx->pool, ctx->org->id, dep->target_id,
                                    "deployment.logs_requested", data)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_json(ctx, 202, json_pack("{s:s,s:s,s:i,s:s}", "log_request_id", lgr,
                                              "deployment_id", id, "lines", lines,
                                              "status", "requested"));
}

apr_status_t svc_h_deployments_request_logs(svc_ctx_t *ctx)
{
    return svc_write(ctx, request_logs, NULL);
}

apr_status_t svc_h_deployments_logs(svc_ctx_t *ctx)
{
    const char *id = apr_table_get(ctx->params, "id");
    const char *req = apr_table_get(ctx->query, "request");
    const char *body;
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if (req && (strncmp(req, "lgr_", 4) != 0 || !svc_word_valid(req, 64))) {
        svc_fail_field(ctx, "request", "invalid_value", "request is a log request's id "
                       "(lgr_...).");
        return SVC_EPROBLEM;
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_logs_read, ctx->pool, &res, id, ctx->org->id, req))
           != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_dep_not_found(ctx, id);
    }
    if (svc_dbres_isnull(res, 0, 0)) {
        return req ? svc_fail(ctx, 404, "not_found", "No logs uploaded for %s of deployment "
                              "%s (yet).", req, id)
                   : svc_fail(ctx, 404, "not_found", "No logs of deployment %s yet: ask for "
                              "them with POST .../request-logs.", id);
    }
    body = svc_dbres_str(res, 0, 1);
    apr_table_setn(ctx->headers_out, "X-Log-Request", apr_pstrdup(ctx->pool,
                                                                  svc_dbres_str(res, 0, 0)));
    apr_table_setn(ctx->headers_out, "X-Log-Uploaded-At",
                   apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 3)));
    apr_table_setn(ctx->headers_out, "X-Log-Truncated",
                   svc_dbres_bool(res, 0, 2) ? "true" : "false");
    return svc_reply_body(ctx, 200, "text/plain; charset=utf-8", body, strlen(body));
}

/* Replaces every `key` in buf[0..*plen) by [REDACTED] (into p). */
static char *redact(apr_pool_t *p, const char *buf, apr_size_t *plen, const char *key)
{
    static const char mark[] = "[REDACTED]";
    apr_size_t klen = key ? strlen(key) : 0, n = *plen, i = 0, o = 0;
    char *out;

    if (klen < 8) {
        return (char *)buf;
    }
    /* The mark is never longer than the key (svc_dek_ + 49 characters). */
    out = apr_palloc(p, n + 1);
    while (i < n) {
        if (n - i >= klen && memcmp(buf + i, key, klen) == 0) {
            memcpy(out + o, mark, sizeof(mark) - 1);
            o += sizeof(mark) - 1;
            i += klen;
        }
        else {
            out[o++] = buf[i++];
        }
    }
    out[o] = '\0';
    *plen = o;
    return out;
}

/* Valid UTF-8 from any bytes: each byte that starts no valid sequence (and
 * NUL, which text cannot hold) becomes U+FFFD. */
static char *utf8_clean(apr_pool_t *p, const char *buf, apr_size_t n, apr_size_t *plen)
{
    char *out = apr_palloc(p, n * 3 + 1);
    apr_size_t i = 0, o = 0;

    while (i < n) {
        unsigned long cp;
        apr_size_t k = svc_utf8_next((const unsigned char *)buf + i, n - i, &cp);
        if (k == 0 || cp == 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
        else {
            memcpy(out + o, buf + i, k);
            o += k;
            i += k;
        }
    }
    out[o] = '\0';
    *plen = o;
    return out;
}

/* A replica's lines as shown. */
typedef struct {
    char *text;
    apr_size_t len;
} log_part_t;

/*
 * One replica's upload as shown: its last `lines` lines, at most
 * TELEMETRY_LOG_REPLICA_MAX bytes of them (the newest kept), each prefixed
 * by the replica.
 */
static void add_replica(apr_pool_t *p, log_part_t *parts, int *nparts, int replica,
                        const char *text, apr_size_t n, int lines, int *ptruncated)
{
    const char *prefix = apr_psprintf(p, "replica %d | ", replica);
    apr_size_t plen = strlen(prefix), kept = 0, pos, first = 0, i, o = 0;
    int count = 0;
    char *out;

    /* A last line without its newline is a line all the same. */
    if (n && text[n - 1] == '\n') {
        n--;
    }
    if (!n) {
        return;
    }
    /* Back from the end, a line at a time: pos ends the line looked at. */
    pos = n;
    while (count < lines) {
        apr_size_t b = pos, need;
        while (b > 0 && text[b - 1] != '\n') {
            b--;
        }
        need = (pos - b) + plen + 1;
        if (kept + need > TELEMETRY_LOG_REPLICA_MAX) {
            *ptruncated = 1;
            break;
        }
        kept += need;
        count++;
        first = b;
        if (b == 0) {
            break;
        }
        pos = b - 1;
    }
    if (!count) {
        return;
    }
    out = apr_palloc(p, kept + 1);
    for (i = first; i <= n && o < kept; ) {
        const char *nl = memchr(text + i, '\n', n - i);
        apr_size_t len = nl ? (apr_size_t)(nl - (text + i)) : n - i;
        memcpy(out + o, prefix, plen);
        o += plen;
        memcpy(out + o, text + i, len);
        o += len;
        out[o++] = '\n';
        i += len + 1;
    }
    parts[*nparts].text = out;
    parts[*nparts].len = o;
    (*nparts)++;
}

/* The key this request was made with (Authorization: Bearer ...). */
static const char *presented_key(svc_ctx_t *ctx)
{
    const char *authz = apr_table_get(ctx->headers_in, "Authorization");

    if (!authz || strncasecmp(authz, "Bearer ", 7) != 0) {
        return NULL;
    }
    authz += 7;
    while (*authz == ' ') {
        authz++;
    }
    return authz;
}

static apr_status_t logs_upload(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "id");
    const char *req = apr_table_get(ctx->params, "requestId");
    const json_t *reps = json_object_get(ctx->body, "replicas");
    const char *key = presented_key(ctx), *org_id, *body;
    log_part_t parts[PLAN_REPLICAS_MAX];
    int nparts = 0, truncated = 0, lines, r;
    apr_int64_t v;
    apr_size_t total = 0;
    svc_dbres_t *res;
    apr_status_t rv;

    (void)baton;
    if ((rv = svc_db_execv(db, &st_dep_of_target, ctx->pool, &res, id, ctx->who->target_id))
        != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_fail(ctx, 404, "deployment_not_found", "No deployment %s on this target.",
                        id);
    }
    org_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
    if ((rv = svc_db_execv(db, &st_log_lock, ctx->pool, &res, req, id, ctx->who->target_id))
        != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_fail(ctx, 404, "not_found", "No log request %s for deployment %s.", req, id);
    }
    if (svc_dbres_bool(res, 0, 1)) {
        /* Uploaded before: the first upload stands. */
        return svc_reply_json(ctx, 200, json_pack("{s:s,s:b,s:i,s:b}", "log_request_id", req,
                                                  "recorded", 0, "bytes", 0, "truncated", 0));
    }
    if (svc_dbres_int64(res, 0, 0, &v) != APR_SUCCESS) {
        return SVC_EDB;
    }
    lines = (int)v;
    for (r = 0; r < PLAN_REPLICAS_MAX; r++) {
        const char *b64 = json_string_value(json_object_get(reps, apr_itoa(ctx->pool, r)));
        unsigned char *raw;
        apr_size_t len;
        char *text;

        if (!b64) {
            continue;
        }
        if (svc_b64url_decode(ctx->pool, b64, strlen(b64), &raw, &len) != APR_SUCCESS) {
            svc_fail_field(ctx, "replicas", "invalid_value", "replicas.%d is not base64url "
                           "(without padding).", r);
            return SVC_EPROBLEM;
        }
        text = redact(ctx->pool, (const char *)raw, &len, key);
        text = utf8_clean(ctx->pool, text, len, &len);
        add_replica(ctx->pool, parts, &nparts, r, text, len, lines, &truncated);
    }
    {
        char *all;
        int i;
        for (i = 0; i < nparts; i++) {
            total += parts[i].len;
        }
        all = apr_palloc(ctx->pool, total + 1);
        total = 0;
        for (i = 0; i < nparts; i++) {
            memcpy(all + total, parts[i].text, parts[i].len);
            total += parts[i].len;
        }
        all[total] = '\0';
        body = all;
    }
    if ((rv = svc_db_execv(db, &st_log_store, ctx->pool, NULL, req, body,
                           truncated ? "true" : "false")) != APR_SUCCESS) {
        return rv;
    }
    if ((rv = svc_event_emit(db, ctx->pool, org_id, NULL, NULL, "deployment.logs",
                             svc_json_pool(ctx->pool,
                                           json_pack("{s:s,s:s,s:I,s:b}", "deployment_id", id,
                                                     "log_request_id", req,
                                                     "bytes", (json_int_t)total,
                                                     "truncated", truncated))))
        != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_json(ctx, 200, json_pack("{s:s,s:b,s:I,s:b}", "log_request_id", req,
                                              "recorded", 1, "bytes", (json_int_t)total,
                                              "truncated", truncated));
}

apr_status_t svc_h_agent_logs_upload(svc_ctx_t *ctx)
{
    return svc_write(ctx, logs_upload, NULL);
}

/* ------------------------------------------------------------------------
 * Metrics and uptime
 */

apr_status_t svc_h_deployments_metrics(svc_ctx_t *ctx)
{
    const char *id = apr_table_get(ctx->params, "id");
    const char *qf = apr_table_get(ctx->query, "from"), *qt = apr_table_get(ctx->query, "to");
    const char *qs = apr_table_get(ctx->query, "step");
    apr_int64_t from, to = apr_time_sec(apr_time_now());
    long long step = 0;
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if (qt && svc_parse_rfc3339(qt, &to) != APR_SUCCESS) {
        svc_fail_field(ctx, "to", "invalid_value", "to is an RFC 3339 date-time.");
    }
    from = to - 3600;
    if (qf && svc_parse_rfc3339(qf, &from) != APR_SUCCESS) {
        svc_fail_field(ctx, "from", "invalid_value", "from is an RFC 3339 date-time.");
    }
    if (qs && svc_parse_int(qs, METRICS_STEP_MIN, METRICS_RANGE_MAX, &step) != APR_SUCCESS) {
        svc_fail_field(ctx, "step", "invalid_value", "step is seconds, %d to %d.",
                       METRICS_STEP_MIN, METRICS_RANGE_MAX);
    }
    if (!ctx->problem && (to <= from || to - from > METRICS_RANGE_MAX)) {
        svc_fail_field(ctx, "from", "invalid_value", "from must be before to, by at most "
                       "31 days.");
    }
    if (ctx->problem) {
        return SVC_EPROBLEM;
    }
    /* At most METRICS_POINTS_MAX points: a finer step is made coarser. */
    if (step < (to - from + METRICS_POINTS_MAX - 1) / METRICS_POINTS_MAX) {
        step = (to - from + METRICS_POINTS_MAX - 1) / METRICS_POINTS_MAX;
    }
    if (step < METRICS_STEP_MIN) {
        step = METRICS_STEP_MIN;
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_metrics_read, ctx->pool, &res, id, ctx->org->id,
                              apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT, from),
                              apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT, to),
                              apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT,
                                           (apr_int64_t)step))) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_dep_not_found(ctx, id);
    }
    return svc_reply_text(ctx, 200, svc_dbres_str(res, 0, 0));
}

apr_status_t svc_h_deployments_uptime(svc_ctx_t *ctx)
{
    const char *id = apr_table_get(ctx->params, "id");
    const char *w = apr_table_get(ctx->query, "window");
    const char *interval, *unit;
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if (!w || strcmp(w, "24h") == 0) {
        w = "24h";
        interval = "24 hours";
        unit = "minute";
    }
    else if (strcmp(w, "7d") == 0 || strcmp(w, "30d") == 0) {
        interval = w[0] == '7' ? "7 days" : "30 days";
        unit = "hour";
    }
    else {
        svc_fail_field(ctx, "window", "invalid_value", "window is 24h, 7d or 30d.");
        return SVC_EPROBLEM;
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_uptime_read, ctx->pool, &res, id, ctx->org->id,
                              interval, unit, w)) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_dep_not_found(ctx, id);
    }
    return svc_reply_text(ctx, 200, svc_dbres_str(res, 0, 0));
}

/* ------------------------------------------------------------------------
 * Reports
 */

static int int_in(const json_t *v, json_int_t lo, json_int_t hi)
{
    return json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi;
}

/* What a sample and a probe both carry: the replica, and how long ago. */
static int sample_ok(const json_t *m)
{
    return int_in(json_object_get(m, "replica"), 0, PLAN_REPLICAS_MAX - 1)
           && int_in(json_object_get(m, "ago_ms"), 0, REPORT_AGO_MAX * 1000LL);
}

/* Whether a figure is new: numbered above the last one taken of its boot,
 * or not numbered at all (an agent without a boot; telemetry_check made
 * sure the two never mix). */
static int fresh(const json_t *m, json_int_t taken)
{
    const json_t *seq = json_object_get(m, "seq");

    return !seq || json_integer_value(seq) > taken;
}

/* The samples as we take them: only known members, of the right types and
 * bounds, not taken before; anything else in the list is dropped. */
static json_t *clean_metrics(const json_t *list, json_int_t taken)
{
    json_t *out = json_array(), *m;
    size_t i;

    json_array_foreach((json_t *)list, i, m) {
        const json_t *cpu = json_object_get(m, "cpu_seconds");
        if (i >= REPORT_ITEMS_MAX) {
            break;
        }
        if (!fresh(m, taken) || !sample_ok(m) || !json_is_number(cpu) || json_number_value(cpu) < 0
            || json_number_value(cpu) > 1e12
            || !int_in(json_object_get(m, "rss_bytes"), 0, (json_int_t)1 << 50)
            || !int_in(json_object_get(m, "fds"), 0, APR_INT32_MAX)
            || !int_in(json_object_get(m, "restarts"), 0, APR_INT32_MAX)) {
            continue;
        }
        json_array_append_new(out, json_pack("{s:O,s:O,s:f,s:O,s:O,s:O}",
                                             "replica", json_object_get(m, "replica"),
                                             "ago_ms", json_object_get(m, "ago_ms"),
                                             "cpu_seconds", json_number_value(cpu),
                                             "rss_bytes", json_object_get(m, "rss_bytes"),
                                             "fds", json_object_get(m, "fds"),
                                             "restarts", json_object_get(m, "restarts")));
    }
    return out;
}

static json_t *clean_probes(const json_t *list, json_int_t taken, int *pfailed)
{
    json_t *out = json_array(), *m;
    size_t i;

    json_array_foreach((json_t *)list, i, m) {
        const json_t *lat = json_object_get(m, "latency_ms");
        if (i >= REPORT_ITEMS_MAX) {
            break;
        }
        if (!fresh(m, taken) || !sample_ok(m) || !json_is_boolean(json_object_get(m, "ok"))
            || !(json_is_null(lat) || !lat || int_in(lat, 0, 600000))) {
            continue;
        }
        *pfailed += !json_is_true(json_object_get(m, "ok"));
        json_array_append_new(out, json_pack("{s:O,s:O,s:O,s:O}",
                                             "replica", json_object_get(m, "replica"),
                                             "ago_ms", json_object_get(m, "ago_ms"),
                                             "ok", json_object_get(m, "ok"),
                                             "latency_ms", lat ? lat : json_null()));
    }
    return out;
}

/* The last `n` lines of text (a pointer into it). */
static const char *last_lines(const char *text, int n)
{
    const char *s = text + strlen(text);

    if (s > text && s[-1] == '\n') {
        s--;
    }
    while (s > text) {
        if (s[-1] == '\n' && --n == 0) {
            break;
        }
        s--;
    }
    return s;
}

/*
 * The incident rules, after a report of the deployment (running only: a
 * deployment starting or stopping fails its probes as a matter of course).
 */
static apr_status_t incidents(svc_ctx_t *ctx, svc_db_t *db, const char *dep_id,
                              const char *org_id, json_t *events)
{
    apr_int64_t failing, healthy, probed, restarts, failures;
    const char *imp_id, *reason, *why;
    int recovered, open, recent, created;
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_db_execv(db, &st_health_now, ctx->pool, &res, dep_id)) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_int64(res, 0, 0, &failing) != APR_SUCCESS
        || svc_dbres_int64(res, 0, 1, &healthy) != APR_SUCCESS
        || svc_dbres_int64(res, 0, 2, &probed) != APR_SUCCESS
        || svc_dbres_int64(res, 0, 3, &restarts) != APR_SUCCESS) {
        return SVC_EDB;
    }
    if ((rv = svc_db_execv(db, &st_incident_row, ctx->pool, NULL, dep_id, org_id))
        != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_incident_lock, ctx->pool, &res, dep_id))
           != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1 || svc_dbres_int64(res, 0, 1, &failures) != APR_SUCCESS) {
        return SVC_EDB;
    }
    imp_id = svc_dbres_isnull(res, 0, 0) ? NULL : apr_pstrdup(ctx->pool,
                                                               svc_dbres_str(res, 0, 0));
    recovered = svc_dbres_bool(res, 0, 2);
    open = svc_dbres_bool(res, 0, 3);
    recent = svc_dbres_bool(res, 0, 4);

    /* A crash loop is judged while it lasts: once every replica passed its
     * last 3 probes, restarts of the last 5 minutes are history. */
    if (failing > 0 || (restarts >= 3 && !(probed > 0 && healthy == probed))) {
        reason = failing > 0 ? "probes_failed" : "crash_loop";
        if (open) {
            /* One open incident a deployment: further failures count on it. */
            if ((rv = svc_db_execv(db, &st_incident_failed, ctx->pool, NULL, dep_id))
                != APR_SUCCESS) {
                return rv;
            }
            if (recovered) {
                json_array_append_new(events, json_pack("{s:s,s:s,s:s,s:s,s:I}",
                                                        "deployment_id", dep_id,
                                                        "improvement_id", imp_id,
                                                        "state", "failing", "reason", reason,
                                                        "failures", (json_int_t)failures + 1));
            }
            return APR_SUCCESS;
        }
        if (recent) {
            /* A flapping app does not flood: one an hour, even after a
             * rejection. */
            return APR_SUCCESS;
        }
        {
            svc_incident_t inc;
            svc_actor_t actor = { .kind = "system" };
            const char *logs;

            if ((rv = svc_db_execv(db, &st_incident_context, ctx->pool, &res, dep_id))
                != APR_SUCCESS) {
                return rv;
            }
            if (svc_dbres_rows(res) != 1) {
                return SVC_EDB;
            }
            why = failing > 0
                  ? apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT " replica(s) failed their "
                                 "last 3 health probes in a row.", failing)
                  : apr_psprintf(ctx->pool, "A replica restarted %" APR_INT64_T_FMT " times "
                                 "in 5 minutes (a crash loop).", restarts);
            logs = svc_dbres_isnull(res, 0, 1) ? NULL
                   : last_lines(svc_dbres_str(res, 0, 1), INCIDENT_LOG_LINES);
            memset(&inc, 0, sizeof(inc));
            inc.org_id = org_id;
            inc.project_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
            inc.kind = "bug";
            inc.title = apr_psprintf(ctx->pool, "Incident: deployment %s %s", dep_id,
                                     failing > 0 ? "fails its health checks"
                                                 : "is in a crash loop");
            inc.body = apr_psprintf(ctx->pool,
                                    "Deployment %s, running on target %s, has an incident "
                                    "(%s).\n\n%s\n\n%s%s%s",
                                    dep_id, ctx->who->target_id, reason, why,
                                    logs ? "The last lines of its latest logs:\n\n" :
                                    "No logs of it were uploaded yet (POST .../request-logs).",
                                    logs ? logs : "", logs ? "\n" : "");
            if (strlen(inc.body) > 60000) {
                inc.body = apr_pstrndup(ctx->pool, inc.body,
                                        svc_utf8_prefix(inc.body, 60000, 60000));
            }
            inc.source_ref = dep_id;
            /* The audit entry first: filing takes the org's event lock. */
            if ((rv = svc_audit_write(db, ctx->pool, &actor, org_id, "deployment.incident",
                                      "deployment", dep_id,
                                      svc_json_pool(ctx->pool,
                                                    json_pack("{s:s,s:s}", "reason", reason,
                                                              "target_id",
                                                              ctx->who->target_id))))
                != APR_SUCCESS
                || (rv = svc_improvement_file_incident(db, ctx->pool, &inc, &imp_id,
                                                       &created)) != APR_SUCCESS
                || (rv = svc_db_execv(db, &st_incident_filed, ctx->pool, NULL, dep_id, imp_id,
                                      reason)) != APR_SUCCESS) {
                return rv;
            }
            json_array_append_new(events, json_pack("{s:s,s:s,s:s,s:s,s:i}",
                                                    "deployment_id", dep_id,
                                                    "improvement_id", imp_id,
                                                    "state", "filed", "reason", reason,
                                                    "failures", 1));
        }
        return APR_SUCCESS;
    }
    if (open && !recovered && probed > 0 && healthy == probed) {
        const char *note = "Recovered: every replica passed its last 3 health probes. The "
                           "incident stays open until someone approves or rejects it.";
        if ((rv = svc_db_execv(db, &st_incident_recovered, ctx->pool, NULL, dep_id))
            != APR_SUCCESS
            || (rv = svc_improvement_note_incident(db, ctx->pool, org_id, imp_id, note))
               != APR_SUCCESS) {
            return rv;
        }
        json_array_append_new(events, json_pack("{s:s,s:s,s:s,s:n,s:I}",
                                                "deployment_id", dep_id,
                                                "improvement_id", imp_id,
                                                "state", "recovered", "reason",
                                                "failures", (json_int_t)failures));
    }
    return APR_SUCCESS;
}

/* A report's boot, and the highest number of its figures (-1: none). */
typedef struct {
    const char *boot;
    json_int_t last;
} report_t;

/*
 * The numbers of a report, before anything is written: with a boot, every
 * figure (an object in a deployment's metrics or probes) has a seq, a
 * non-negative integer; without one, none has. Anything else is a 400 that
 * changes nothing. The highest number goes in rep->last, of every figure,
 * also those not taken (another target's deployment, out of bounds): the
 * agent sent them all, and would not send them again once answered.
 */
static apr_status_t telemetry_check(svc_ctx_t *ctx, report_t *rep)
{
    static const char *const kinds[] = { "metrics", "probes" };
    const json_t *deps = json_object_get(ctx->body, "deployments"), *value;
    const char *key, *bad = NULL;
    apr_size_t k;

    rep->boot = svc_json_str(ctx->body, "boot");
    rep->last = -1;
    if (rep->boot && strspn(rep->boot, "0123456789abcdef") != REPORT_BOOT_LEN) {
        svc_fail_field(ctx, "boot", "invalid_value", "boot is %d lowercase hex digits.",
                       REPORT_BOOT_LEN);
        return SVC_EPROBLEM;
    }
    json_object_foreach((json_t *)deps, key, value) {
        for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]) && !bad; k++) {
            const json_t *m;
            size_t i;
            json_array_foreach(json_object_get(value, kinds[k]), i, m) {
                const json_t *seq = json_object_get(m, "seq");
                if (!json_is_object(m) || (!seq && !rep->boot)) {
                    continue;
                }
                if (!rep->boot || !int_in(seq, 0, (json_int_t)APR_INT64_MAX)) {
                    bad = apr_psprintf(ctx->pool, "deployments.%s.%s[%" APR_SIZE_T_FMT "].seq",
                                       key, kinds[k], i);
                    break;
                }
                if (json_integer_value(seq) > rep->last) {
                    rep->last = json_integer_value(seq);
                }
            }
        }
        if (bad) {
            svc_fail_field(ctx, bad, "invalid_value", rep->boot
                           ? "With a boot, every figure has a seq: a non-negative integer."
                           : "A figure's seq is a number in the report's boot: there is no "
                             "boot.");
            return SVC_EPROBLEM;
        }
    }
    return APR_SUCCESS;
}

static apr_status_t telemetry(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const json_t *deps = json_object_get(ctx->body, "deployments");
    const report_t *rep = baton;
    json_t *value, *events = svc_json_pool(ctx->pool, json_array());
    json_int_t taken_m = 0, taken_p = 0, taken = -1;
    const char *key;
    svc_dbres_t *res;
    apr_status_t rv;
    int n = 0;
    size_t i;

    /* The figures of this boot taken already, if it numbered any. */
    if (rep->boot && rep->last >= 0) {
        apr_int64_t seq;
        if ((rv = svc_db_execv(db, &st_boot_claim, ctx->pool, &res, ctx->who->target_id,
                               rep->boot)) != APR_SUCCESS) {
            return rv;
        }
        if (svc_dbres_rows(res) != 1 || svc_dbres_int64(res, 0, 0, &seq) != APR_SUCCESS) {
            return SVC_EDB;
        }
        taken = (json_int_t)seq;
    }
    json_object_foreach((json_t *)deps, key, value) {
        json_t *m, *pr;
        const char *org_id, *status;
        int failed = 0;

        if (n++ >= REPORT_DEPLOYMENTS_MAX) {
            break;
        }
        if (strncmp(key, "dep_", 4) != 0 || !svc_word_valid(key, 64) || !json_is_object(value)) {
            continue;   /* not one of ours: nothing to say about it */
        }
        if ((rv = svc_db_execv(db, &st_dep_of_target, ctx->pool, &res, key,
                               ctx->who->target_id)) != APR_SUCCESS) {
            return rv;
        }
        if (svc_dbres_rows(res) != 1) {
            continue;   /* another target's, or none: not this agent's to report */
        }
        org_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
        status = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 1));
        m = svc_json_pool(ctx->pool, clean_metrics(json_object_get(value, "metrics"), taken));
        pr = svc_json_pool(ctx->pool, clean_probes(json_object_get(value, "probes"), taken,
                                                   &failed));
        if (json_array_size(m)
            && (rv = svc_db_execv(db, &st_metrics_insert, ctx->pool, NULL, key,
                                  ctx->who->target_id, svc_json_dump(ctx->pool, m)))
               != APR_SUCCESS) {
            return rv;
        }
        if (json_array_size(pr)
            && (rv = svc_db_execv(db, &st_probes_insert, ctx->pool, NULL, key,
                                  ctx->who->target_id, svc_json_dump(ctx->pool, pr)))
               != APR_SUCCESS) {
            return rv;
        }
        taken_m += (json_int_t)json_array_size(m);
        taken_p += (json_int_t)json_array_size(pr);
        if (strcmp(status, DS_RUNNING) == 0 && (json_array_size(pr) || json_array_size(m))
            && (rv = incidents(ctx, db, key, org_id, events)) != APR_SUCCESS) {
            return rv;
        }
    }
    if (rep->boot && rep->last > taken
        && (rv = svc_db_execv(db, &st_boot_advance, ctx->pool, NULL, ctx->who->target_id,
                              rep->boot, apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT,
                                                      (apr_int64_t)rep->last))) != APR_SUCCESS) {
        return rv;
    }
    /* The events last: each takes the org's event lock until COMMIT. */
    for (i = 0; i < json_array_size(events); i++) {
        if ((rv = svc_event_emit(db, ctx->pool, ctx->who->target_org_id, NULL, NULL,
                                 "deployment.incident", json_array_get(events, i)))
            != APR_SUCCESS) {
            return rv;
        }
    }
    return svc_reply_json(ctx, 200, json_pack("{s:I,s:I}", "metrics", taken_m,
                                              "probes", taken_p));
}

apr_status_t svc_h_agent_telemetry(svc_ctx_t *ctx)
{
    report_t rep;
    apr_status_t rv = telemetry_check(ctx, &rep);

    return rv != APR_SUCCESS ? rv : svc_write(ctx, telemetry, &rep);
}

apr_status_t svc_telemetry_sweep(svc_db_t *db, apr_pool_t *p, apr_int64_t *pdropped)
{
    svc_dbres_t *res;
    /* A boot's number outlives its figures' bound twice over (sql/027). */
    apr_status_t rv = svc_db_execv(db, &st_sweep_metrics, p, &res,
                                   apr_itoa(p, TELEMETRY_KEEP_DAYS),
                                   apr_itoa(p, 2 * REPORT_AGO_MAX));

    *pdropped = 0;
    if (rv == APR_SUCCESS && svc_dbres_int64(res, 0, 0, pdropped) != APR_SUCCESS) {
        rv = SVC_EDB;
    }
    return rv;
}
