/*
 * svc_ratelimit.c: fixed-window counters in PostgreSQL.
 */
#include "svc_ratelimit.h"
#include "svc_ctx.h"
#include "svc_db.h"
#include "svc_metrics.h"
#include "svc_route.h"

#include <string.h>

/* Expired windows deleted by each request that opens a new one. */
#define SVC_RATE_SWEEP_BATCH "100"

/*
 * The window is computed from the database clock so every node agrees.
 * Returns the count in the window and the seconds until it ends.
 */
static const svc_stmt_t st_rate_hit = {
    "svc_rate_hit",
    "INSERT INTO rate_limits AS r (key, window_start, window_end, count)"
    " SELECT $1, w.start, w.start + $2::int, 1"
    " FROM (SELECT (floor(extract(epoch FROM now()) / $2::int) * $2::int)::bigint AS start) w"
    " ON CONFLICT (key, window_start) DO UPDATE SET count = r.count + 1"
    " RETURNING count, window_end - floor(extract(epoch FROM now()))::bigint",
    2, SVC_STMT_RETRY | SVC_STMT_ALONE
};

/*
 * Expired windows of any key, a bounded batch, oldest first. Whoever opens
 * a window deletes up to a batch of expired ones, so rows are deleted at
 * least as fast as they are made and the table stays as small as the
 * windows alive: one-off subjects (a stream of client addresses, IPv6 has
 * plenty) never come back to delete their own. SKIP LOCKED: concurrent
 * sweepers share the work instead of waiting on each other.
 */
static const svc_stmt_t st_rate_sweep = {
    "svc_rate_sweep",
    "DELETE FROM rate_limits WHERE ctid = ANY (ARRAY("
    " SELECT ctid FROM rate_limits WHERE window_end <= floor(extract(epoch FROM now()))::bigint"
    " ORDER BY window_end LIMIT $1::int FOR UPDATE SKIP LOCKED))",
    1, SVC_STMT_RETRY | SVC_STMT_ALONE
};

apr_status_t svc_rate_hit(svc_ctx_t *ctx, const char *class_name, const char *subject)
{
    const svc_rate_class_t *rc = svc_config_rate(ctx->conf, class_name);
    svc_db_t *db;
    svc_dbres_t *res;
    apr_int64_t count = 0, retry = 1;
    const char *key, *period;
    apr_status_t rv;

    if (!rc) {
        return APR_SUCCESS;
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    key = apr_pstrcat(ctx->pool, class_name, ":", subject, NULL);
    period = apr_itoa(ctx->pool, rc->period);
    rv = svc_db_execv(db, &st_rate_hit, ctx->pool, &res, key, period);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_int64(res, 0, 0, &count) != APR_SUCCESS
        || svc_dbres_int64(res, 0, 1, &retry) != APR_SUCCESS) {
        return SVC_EDB;
    }
    if (count == 1) {
        rv = svc_db_execv(db, &st_rate_sweep, ctx->pool, NULL, SVC_RATE_SWEEP_BATCH);
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    apr_table_setn(ctx->headers_out, "RateLimit-Limit", apr_itoa(ctx->pool, rc->limit));
    apr_table_setn(ctx->headers_out, "RateLimit-Remaining",
                   apr_itoa(ctx->pool, count >= rc->limit ? 0 : rc->limit - (int)count));
    apr_table_setn(ctx->headers_out, "RateLimit-Reset",
                   apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT, retry < 1 ? 1 : retry));
    if (count > rc->limit) {
        svc_metrics_rate_refused(svc_metrics_current(), class_name);
        apr_table_setn(ctx->headers_out, "Retry-After",
                       apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT, retry < 1 ? 1 : retry));
        return svc_fail(ctx, 429, "rate_limited",
                        "Too many requests of this kind: at most %d every %d seconds. "
                        "Retry after the time in Retry-After.", rc->limit, rc->period);
    }
    return APR_SUCCESS;
}

/* Adds `name` to the list unless it is there (names: ", "-separated). */
static const char *add_name(apr_pool_t *p, const char *names, const char *name)
{
    const char *s = names;
    apr_size_t n = strlen(name);

    while ((s = strstr(s, name)) != NULL) {
        if ((s == names || s[-1] == ' ') && (s[n] == ',' || s[n] == '\0')) {
            return names;
        }
        s += n;
    }
    return *names ? apr_pstrcat(p, names, ", ", name, NULL) : name;
}

int svc_rate_class_known(const char *name, const svc_area_t *const *areas, apr_pool_t *p,
                         const char **pnames)
{
    const svc_rate_class_t *d;
    const svc_route_t *r;
    const char *names = "";
    int known = 0;

    for (d = svc_rate_defaults; d->name; d++) {
        known |= strcmp(d->name, name) == 0;
        names = add_name(p, names, d->name);
    }
    for (; areas && *areas; areas++) {
        for (r = (*areas)->routes; r->method; r++) {
            if (r->rate_class) {
                known |= strcmp(r->rate_class, name) == 0;
                names = add_name(p, names, r->rate_class);
            }
        }
    }
    *pnames = names;
    return known;
}
