/*
 * svc_metrics.c: the server's counters and their exposition (svc_metrics.h).
 */
#include "svc_metrics.h"
#include "svc_ctx.h"
#include "svc_route.h"

#include <apr_atomic.h>
#include <apr_strings.h>
#include <string.h>

/* The histograms' upper bounds, microseconds; +Inf is the last bucket. The
 * same for requests and for waiting on the pool: from a cached read to a
 * model call. */
static const apr_uint64_t bounds_us[] = {
    5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000
};
static const char *const bounds_txt[] = {
    "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10"
};
#define NBOUNDS (sizeof(bounds_us) / sizeof(bounds_us[0]))
#define NBUCKETS (NBOUNDS + 1)

/* A histogram's words: its buckets (not cumulative: each observation adds
 * to one word only), then the sum of observations in microseconds. The
 * count is the buckets' sum, so _count and +Inf always agree. */
#define HIST_WORDS (NBUCKETS + 1)

/* A route's words: answers by status class (1xx to 5xx), then its
 * duration histogram. */
#define NCLASSES 5
#define ROUTE_WORDS (NCLASSES + HIST_WORDS)

static const char *const model_kinds[] = { "openai", "anthropic", "other" };
#define NKINDS (sizeof(model_kinds) / sizeof(model_kinds[0]))
static const char *const hook_sources[SVC_MHOOK_N] = { "vcs", "billing" };
static const char *const hook_results[SVC_MHOOK_RESULT_N] = {
    "accepted", "duplicate", "rejected", "failed"
};
static const char *const stream_kinds[SVC_MSTREAM_N] = { "org", "agent" };

struct svc_metrics_t {
    volatile apr_uint64_t *w;
    const svc_route_t *table;
    int nroutes;                /* rows of the table; slot nroutes: unmatched */
    const char **classes;
    int nclasses;
    /* Where each group starts, in words. */
    apr_size_t routes_at, db_at, streams_at, calls_at, tokens_at, hooks_at, rates_at, nwords;
};

static svc_metrics_t *current;

svc_metrics_t *svc_metrics_create(apr_pool_t *p, const svc_route_t *table,
                                  const char *const *classes)
{
    svc_metrics_t *m = apr_pcalloc(p, sizeof(*m));
    int i, j, n = 0;

    while (table[m->nroutes].method) {
        m->nroutes++;
    }
    m->table = table;
    for (i = 0; classes && classes[i]; i++) {
        n++;
    }
    m->classes = apr_pcalloc(p, sizeof(*m->classes) * (apr_size_t)(n + 1));
    for (i = 0; i < n; i++) {
        for (j = 0; j < m->nclasses && strcmp(m->classes[j], classes[i]) != 0; j++) {
        }
        if (j == m->nclasses) {
            m->classes[m->nclasses++] = apr_pstrdup(p, classes[i]);
        }
    }
    m->routes_at = 0;
    /* The pool: connections lent now, the wait histogram, failures. */
    m->db_at = m->routes_at + (apr_size_t)(m->nroutes + 1) * ROUTE_WORDS;
    m->streams_at = m->db_at + 1 + HIST_WORDS + 1;
    m->calls_at = m->streams_at + SVC_MSTREAM_N;
    m->tokens_at = m->calls_at + NKINDS * 2;
    m->hooks_at = m->tokens_at + NKINDS * 2;
    m->rates_at = m->hooks_at + SVC_MHOOK_N * SVC_MHOOK_RESULT_N;
    m->nwords = m->rates_at + (apr_size_t)m->nclasses;
    return m;
}

apr_size_t svc_metrics_size(const svc_metrics_t *m)
{
    return m->nwords * sizeof(apr_uint64_t);
}

void svc_metrics_bind(svc_metrics_t *m, void *words)
{
    m->w = words;
}

void svc_metrics_use(svc_metrics_t *m)
{
    current = m;
}

svc_metrics_t *svc_metrics_current(void)
{
    return current;
}

static void add(svc_metrics_t *m, apr_size_t at, apr_uint64_t n)
{
    apr_atomic_add64(&m->w[at], n);
}

static apr_uint64_t get(const svc_metrics_t *m, apr_size_t at)
{
    return apr_atomic_read64((volatile apr_uint64_t *)&m->w[at]);
}

static void observe(svc_metrics_t *m, apr_size_t at, apr_interval_time_t took)
{
    apr_uint64_t us = took > 0 ? (apr_uint64_t)took : 0;
    apr_size_t b = 0;

    while (b < NBOUNDS && us > bounds_us[b]) {
        b++;
    }
    add(m, at + b, 1);
    add(m, at + NBUCKETS, us);
}

void svc_metrics_request(svc_metrics_t *m, const svc_route_t *route, int status,
                         apr_interval_time_t took)
{
    apr_size_t slot, at;
    int cls = status / 100;

    if (!m || !m->w) {
        return;
    }
    /* The router hands out rows of the table itself; anything else (no
     * route, a row of another table) is "unmatched". */
    slot = route && route >= m->table && route < m->table + m->nroutes
           ? (apr_size_t)(route - m->table) : (apr_size_t)m->nroutes;
    at = m->routes_at + slot * ROUTE_WORDS;
    cls = cls < 1 ? 1 : cls > NCLASSES ? NCLASSES : cls;
    add(m, at + (apr_size_t)(cls - 1), 1);
    observe(m, at + NCLASSES, took);
}

void svc_metrics_db_acquired(svc_metrics_t *m, int ok, apr_interval_time_t waited)
{
    if (!m || !m->w) {
        return;
    }
    if (ok) {
        add(m, m->db_at, 1);
    }
    else {
        add(m, m->db_at + 1 + HIST_WORDS, 1);
    }
    observe(m, m->db_at + 1, waited);
}

void svc_metrics_db_released(svc_metrics_t *m)
{
    if (m && m->w) {
        /* A gauge: adding 2^64 - 1 takes one away. */
        add(m, m->db_at, ~(apr_uint64_t)0);
    }
}

void svc_metrics_stream(svc_metrics_t *m, svc_mstream_e kind, int delta)
{
    if (m && m->w && kind < SVC_MSTREAM_N) {
        add(m, m->streams_at + kind, (apr_uint64_t)(apr_int64_t)delta);
    }
}

static apr_size_t kind_index(const char *kind)
{
    apr_size_t k;

    for (k = 0; k + 1 < NKINDS; k++) {
        if (kind && strcmp(kind, model_kinds[k]) == 0) {
            return k;
        }
    }
    return NKINDS - 1;
}

void svc_metrics_model_call(svc_metrics_t *m, const char *kind, int ok,
                            apr_int64_t input_tokens, apr_int64_t output_tokens)
{
    apr_size_t k = kind_index(kind);

    if (!m || !m->w) {
        return;
    }
    add(m, m->calls_at + k * 2 + (ok ? 0 : 1), 1);
    if (input_tokens > 0) {
        add(m, m->tokens_at + k * 2, (apr_uint64_t)input_tokens);
    }
    if (output_tokens > 0) {
        add(m, m->tokens_at + k * 2 + 1, (apr_uint64_t)output_tokens);
    }
}

void svc_metrics_webhook(svc_metrics_t *m, svc_mhook_e source, svc_mhook_result_e result)
{
    if (m && m->w && source < SVC_MHOOK_N && result < SVC_MHOOK_RESULT_N) {
        add(m, m->hooks_at + (apr_size_t)source * SVC_MHOOK_RESULT_N + result, 1);
    }
}

void svc_metrics_webhook_answer(svc_metrics_t *m, svc_mhook_e source, const svc_ctx_t *ctx,
                                apr_status_t rv, int duplicate)
{
    int status = rv == SVC_EPROBLEM && ctx->problem ? ctx->problem->status
                 : rv == SVC_ENOTFOUND || rv == SVC_ECONFLICT ? 400 : 500;

    svc_metrics_webhook(m, source, rv == APR_SUCCESS
                                   ? (duplicate ? SVC_MHOOK_DUPLICATE : SVC_MHOOK_ACCEPTED)
                                   : status < 500 ? SVC_MHOOK_REJECTED : SVC_MHOOK_FAILED);
}

apr_status_t svc_metrics_webhook_handle(svc_ctx_t *ctx, svc_mhook_e source, svc_mhook_fn fn)
{
    int duplicate = 0;
    apr_status_t rv = fn(ctx, &duplicate);

    svc_metrics_webhook_answer(current, source, ctx, rv, duplicate);
    return rv;
}

void svc_metrics_rate_refused(svc_metrics_t *m, const char *name)
{
    int i;

    if (!m || !m->w || !name) {
        return;
    }
    for (i = 0; i < m->nclasses; i++) {
        if (strcmp(m->classes[i], name) == 0) {
            add(m, m->rates_at + (apr_size_t)i, 1);
            return;
        }
    }
}

/* ------------------------------------------------------------------------
 * The exposition
 */

typedef struct {
    apr_pool_t *p;
    apr_array_header_t *out;    /* of const char * */
} expo_t;

static void put(expo_t *x, const char *s)
{
    APR_ARRAY_PUSH(x->out, const char *) = s;
}

static void putf(expo_t *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(expo_t *x, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    put(x, apr_pvsprintf(x->p, fmt, ap));
    va_end(ap);
}

static void head(expo_t *x, const char *name, const char *type, const char *help)
{
    putf(x, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * A label value as the format wants it: backslash, double quote and line
 * feed escaped. Route templates and class names need none today; the
 * escaping keeps the output valid whatever a future row says.
 */
static const char *label(apr_pool_t *p, const char *v)
{
    apr_size_t n = 0;
    const char *s;
    char *out, *o;

    for (s = v; *s; s++) {
        n += (*s == '\\' || *s == '"' || *s == '\n') ? 2 : 1;
    }
    o = out = apr_palloc(p, n + 1);
    for (s = v; *s; s++) {
        if (*s == '\\' || *s == '"' || *s == '\n') {
            *o++ = '\\';
            *o++ = *s == '\n' ? 'n' : *s;
        }
        else {
            *o++ = *s;
        }
    }
    *o = '\0';
    return out;
}

/* Seconds from microseconds, exactly enough for the format's float. */
static const char *seconds(apr_pool_t *p, apr_uint64_t us)
{
    return apr_psprintf(p, "%" APR_UINT64_T_FMT ".%06" APR_UINT64_T_FMT, us / 1000000,
                        us % 1000000);
}

/* One histogram's series under `name`, its other labels `labels` (may be
 * empty; else ending in a comma). */
static void histogram(expo_t *x, const svc_metrics_t *m, apr_size_t at, const char *name,
                      const char *labels)
{
    apr_uint64_t cum = 0;
    apr_size_t b;

    for (b = 0; b < NBUCKETS; b++) {
        cum += get(m, at + b);
        putf(x, "%s_bucket{%sle=\"%s\"} %" APR_UINT64_T_FMT "\n", name, labels,
             b < NBOUNDS ? bounds_txt[b] : "+Inf", cum);
    }
    if (*labels) {
        /* The labels without their trailing comma. */
        const char *bare = apr_pstrmemdup(x->p, labels, strlen(labels) - 1);
        putf(x, "%s_sum{%s} %s\n%s_count{%s} %" APR_UINT64_T_FMT "\n", name, bare,
             seconds(x->p, get(m, at + NBUCKETS)), name, bare, cum);
    }
    else {
        putf(x, "%s_sum %s\n%s_count %" APR_UINT64_T_FMT "\n", name,
             seconds(x->p, get(m, at + NBUCKETS)), name, cum);
    }
}

static const char *route_labels(expo_t *x, const svc_metrics_t *m, int slot)
{
    if (slot == m->nroutes) {
        return "route=\"unmatched\",method=\"\",";
    }
    return apr_pstrcat(x->p, "route=\"", label(x->p, m->table[slot].path), "\",method=\"",
                       label(x->p, m->table[slot].method), "\",", NULL);
}

/*
 * Whether a route has answered anything yet. A route's series appear from
 * its first request on, as a client library's labelled children do: a
 * server has hundreds of routes, most of them idle on any one node, and
 * their zeros would be most of every scrape. Counters never go back, so
 * a series once shown stays.
 */
static int route_used(const svc_metrics_t *m, int slot)
{
    apr_size_t at = m->routes_at + (apr_size_t)slot * ROUTE_WORDS, c;

    for (c = 0; c < NCLASSES; c++) {
        if (get(m, at + c)) {
            return 1;
        }
    }
    return 0;
}

static void render_requests(expo_t *x, const svc_metrics_t *m)
{
    char *used = apr_pcalloc(x->p, (apr_size_t)m->nroutes + 1);
    int slot, c;

    /* Read once: a route that answers its first request during the
     * scrape shows in both families or in neither. */
    for (slot = 0; slot <= m->nroutes; slot++) {
        used[slot] = (char)route_used(m, slot);
    }
    head(x, "svc_http_requests_total", "counter",
         "Requests answered, by route template, method and status class.");
    for (slot = 0; slot <= m->nroutes; slot++) {
        const char *l;
        if (!used[slot]) {
            continue;
        }
        l = route_labels(x, m, slot);
        for (c = 0; c < NCLASSES; c++) {
            putf(x, "svc_http_requests_total{%scode=\"%dxx\"} %" APR_UINT64_T_FMT "\n", l,
                 c + 1, get(m, m->routes_at + (apr_size_t)slot * ROUTE_WORDS + (apr_size_t)c));
        }
    }
    head(x, "svc_http_request_duration_seconds", "histogram",
         "Time from reading the request line to the end of the handler, by route template.");
    for (slot = 0; slot <= m->nroutes; slot++) {
        if (!used[slot]) {
            continue;
        }
        histogram(x, m, m->routes_at + (apr_size_t)slot * ROUTE_WORDS + NCLASSES,
                  "svc_http_request_duration_seconds", route_labels(x, m, slot));
    }
}

static void render_rest(expo_t *x, const svc_metrics_t *m)
{
    apr_size_t k, i;
    int c;

    head(x, "svc_db_connections_in_use", "gauge",
         "Database connections lent from the pool (mod_dbd) to requests and streams now.");
    putf(x, "svc_db_connections_in_use %" APR_INT64_T_FMT "\n", (apr_int64_t)get(m, m->db_at));
    head(x, "svc_db_acquire_wait_seconds", "histogram",
         "Time spent waiting for the pool to lend a connection, failed attempts included.");
    histogram(x, m, m->db_at + 1, "svc_db_acquire_wait_seconds", "");
    head(x, "svc_db_acquire_failures_total", "counter",
         "Attempts to borrow a database connection that got none.");
    putf(x, "svc_db_acquire_failures_total %" APR_UINT64_T_FMT "\n",
         get(m, m->db_at + 1 + HIST_WORDS));

    head(x, "svc_event_streams_open", "gauge",
         "Event streams held open: org streams and deploy agents' work streams.");
    for (k = 0; k < SVC_MSTREAM_N; k++) {
        putf(x, "svc_event_streams_open{kind=\"%s\"} %" APR_INT64_T_FMT "\n", stream_kinds[k],
             (apr_int64_t)get(m, m->streams_at + k));
    }

    head(x, "svc_model_calls_total", "counter",
         "Calls to language models, by provider kind and outcome.");
    for (k = 0; k < NKINDS; k++) {
        for (i = 0; i < 2; i++) {
            putf(x, "svc_model_calls_total{kind=\"%s\",outcome=\"%s\"} %" APR_UINT64_T_FMT
                 "\n", model_kinds[k], i ? "error" : "ok", get(m, m->calls_at + k * 2 + i));
        }
    }
    head(x, "svc_model_tokens_total", "counter",
         "Tokens of language model calls, by provider kind and direction.");
    for (k = 0; k < NKINDS; k++) {
        for (i = 0; i < 2; i++) {
            putf(x, "svc_model_tokens_total{kind=\"%s\",direction=\"%s\"} %" APR_UINT64_T_FMT
                 "\n", model_kinds[k], i ? "output" : "input",
                 get(m, m->tokens_at + k * 2 + i));
        }
    }

    head(x, "svc_webhook_deliveries_total", "counter",
         "Webhook deliveries received, by source and result.");
    for (k = 0; k < SVC_MHOOK_N; k++) {
        for (i = 0; i < SVC_MHOOK_RESULT_N; i++) {
            putf(x, "svc_webhook_deliveries_total{source=\"%s\",result=\"%s\"} %"
                 APR_UINT64_T_FMT "\n", hook_sources[k], hook_results[i],
                 get(m, m->hooks_at + k * SVC_MHOOK_RESULT_N + i));
        }
    }

    head(x, "svc_rate_limited_total", "counter",
         "Requests refused (429) by a rate class.");
    for (c = 0; c < m->nclasses; c++) {
        putf(x, "svc_rate_limited_total{class=\"%s\"} %" APR_UINT64_T_FMT "\n",
             label(x->p, m->classes[c]), get(m, m->rates_at + (apr_size_t)c));
    }
}

static void render_db(expo_t *x, const svc_metrics_db_t *dbm)
{
    int i;

    head(x, "svc_database_up", "gauge",
         "1 when this scrape could read the run figures from the database.");
    putf(x, "svc_database_up %d\n", dbm && dbm->have ? 1 : 0);
    if (!dbm || !dbm->have) {
        return;
    }
    head(x, "svc_runs", "gauge", "Runs by status, read from the database at scrape time.");
    for (i = 0; dbm->statuses[i]; i++) {
        putf(x, "svc_runs{status=\"%s\"} %" APR_INT64_T_FMT "\n",
             label(x->p, dbm->statuses[i]), dbm->counts[i]);
    }
    head(x, "svc_run_queue_oldest_age_seconds", "gauge",
         "How long the oldest queued run has waited (0: none queued).");
    putf(x, "svc_run_queue_oldest_age_seconds %.3f\n", dbm->oldest_queued_s);
}

const char *svc_metrics_render(const svc_metrics_t *m, const svc_metrics_db_t *dbm,
                               apr_pool_t *p)
{
    expo_t x;
    apr_size_t total = 0;
    char *out, *o;
    int i;

    x.p = p;
    x.out = apr_array_make(p, 1024, sizeof(const char *));
    if (m && m->w) {
        render_requests(&x, m);
        render_rest(&x, m);
    }
    render_db(&x, dbm);
    head(&x, "svc_build_info", "gauge", "The build this server runs: always 1.");
    putf(&x, "svc_build_info{version=\"%s\"} 1\n", label(p, SVC_VERSION));

    for (i = 0; i < x.out->nelts; i++) {
        total += strlen(APR_ARRAY_IDX(x.out, i, const char *));
    }
    o = out = apr_palloc(p, total + 1);
    for (i = 0; i < x.out->nelts; i++) {
        const char *s = APR_ARRAY_IDX(x.out, i, const char *);
        apr_size_t n = strlen(s);
        memcpy(o, s, n);
        o += n;
    }
    *o = '\0';
    return out;
}
