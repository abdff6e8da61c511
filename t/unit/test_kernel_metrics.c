/*
 * test_kernel_metrics.c: kernel/svc_metrics.c: the counters' layout and
 * the Prometheus text exposition, over ordinary memory (the server binds
 * the same words to its shared segment; t/admin/metrics.t checks that end
 * with promtool and several children).
 *
 * Expected lines are written out by hand from the format's rules
 * (cumulative buckets, _sum in seconds, _count equal to +Inf).
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_ctx.h"
#include "svc_metrics.h"
#include "svc_route.h"

#include <apr_strings.h>

static apr_status_t h_dummy(svc_ctx_t *ctx)
{
    (void)ctx;
    return APR_SUCCESS;
}

static const svc_route_t table[] = {
    { .method = "GET", .path = "/api/orgs/:orgSlug/runs/:runId", .handler = h_dummy },
    { .method = "POST", .path = "/api/orgs/:orgSlug/runs", .handler = h_dummy },
    { .method = "GET", .path = "/internal/health", .handler = h_dummy },
    SVC_ROUTE_END
};

/* A row like the table's, but not of it: counted as unmatched. */
static const svc_route_t stranger = {
    .method = "GET", .path = "/api/orgs/:orgSlug/runs/:runId", .handler = h_dummy
};

static svc_metrics_t *fresh(apr_pool_t *p)
{
    static const char *const classes[] = {
        "tokens", "models", "tokens", "we\"ird\\cl\nass", NULL
    };
    svc_metrics_t *m = svc_metrics_create(p, table, classes);

    svc_metrics_bind(m, apr_pcalloc(p, svc_metrics_size(m)));
    return m;
}

/* How many lines of text are exactly `line`. */
static int lines_equal(const char *text, const char *line)
{
    apr_size_t n = strlen(line);
    const char *s = text;
    int count = 0;

    while ((s = strstr(s, line)) != NULL) {
        if ((s == text || s[-1] == '\n') && s[n] == '\n') {
            count++;
        }
        s += n;
    }
    return count;
}

#define HAS_LINE(text, line) SVC_CHECK_INT(lines_equal((text), (line)), 1)

SVC_TEST(test_idle_routes_are_not_shown)
{
    svc_metrics_t *m = fresh(p);
    const char *t = svc_metrics_render(m, NULL, p);

    /* Every family is declared, once... */
    HAS_LINE(t, "# TYPE svc_http_requests_total counter");
    HAS_LINE(t, "# TYPE svc_http_request_duration_seconds histogram");
    HAS_LINE(t, "# TYPE svc_db_connections_in_use gauge");
    HAS_LINE(t, "# TYPE svc_db_acquire_wait_seconds histogram");
    HAS_LINE(t, "# TYPE svc_model_calls_total counter");
    HAS_LINE(t, "# TYPE svc_model_tokens_total counter");
    HAS_LINE(t, "# TYPE svc_webhook_deliveries_total counter");
    HAS_LINE(t, "# TYPE svc_rate_limited_total counter");
    HAS_LINE(t, "# TYPE svc_build_info gauge");
    /* ...but a route that answered nothing has no series. */
    SVC_CHECK(!contains(t, "svc_http_requests_total{"));
    SVC_CHECK(!contains(t, "svc_http_request_duration_seconds_bucket{"));
    /* The rest start at zero, present. */
    HAS_LINE(t, "svc_db_connections_in_use 0");
    HAS_LINE(t, "svc_db_acquire_wait_seconds_count 0");
    HAS_LINE(t, "svc_event_streams_open{kind=\"org\"} 0");
    HAS_LINE(t, "svc_model_calls_total{kind=\"openai\",outcome=\"ok\"} 0");
    HAS_LINE(t, "svc_webhook_deliveries_total{source=\"billing\",result=\"duplicate\"} 0");
    HAS_LINE(t, "svc_build_info{version=\"" SVC_VERSION "\"} 1");
    /* No database figures: said so, and none made up. */
    HAS_LINE(t, "svc_database_up 0");
    SVC_CHECK(!contains(t, "svc_runs{"));
    /* The text ends with a line feed (the format wants every line ended). */
    SVC_CHECK(t[strlen(t) - 1] == '\n');
}

SVC_TEST(test_requests_by_template_and_class)
{
    svc_metrics_t *m = fresh(p);
    const char *t;
    const char *run = "route=\"/api/orgs/:orgSlug/runs/:runId\",method=\"GET\"";

    svc_metrics_request(m, &table[0], 200, 7000);       /* 0.007 s: le 0.01 */
    svc_metrics_request(m, &table[0], 204, 5000);       /* exactly 0.005: le 0.005 */
    svc_metrics_request(m, &table[0], 404, 30 * 1000 * 1000);   /* 30 s: +Inf only */
    svc_metrics_request(m, NULL, 404, 1);
    svc_metrics_request(m, &stranger, 405, 1);
    svc_metrics_request(m, &table[2], 99, 1);           /* below 1xx: counted as 1xx */
    svc_metrics_request(m, &table[2], 600, 1);          /* above 5xx: counted as 5xx */
    t = svc_metrics_render(m, NULL, p);

    HAS_LINE(t, apr_pstrcat(p, "svc_http_requests_total{", run, ",code=\"2xx\"} 2", NULL));
    HAS_LINE(t, apr_pstrcat(p, "svc_http_requests_total{", run, ",code=\"4xx\"} 1", NULL));
    HAS_LINE(t, apr_pstrcat(p, "svc_http_requests_total{", run, ",code=\"5xx\"} 0", NULL));
    HAS_LINE(t, apr_pstrcat(p, "svc_http_request_duration_seconds_bucket{", run,
                            ",le=\"0.005\"} 1", NULL));
    HAS_LINE(t, apr_pstrcat(p, "svc_http_request_duration_seconds_bucket{", run,
                            ",le=\"0.01\"} 2", NULL));
    HAS_LINE(t, apr_pstrcat(p, "svc_http_request_duration_seconds_bucket{", run,
                            ",le=\"10\"} 2", NULL));
    HAS_LINE(t, apr_pstrcat(p, "svc_http_request_duration_seconds_bucket{", run,
                            ",le=\"+Inf\"} 3", NULL));
    HAS_LINE(t, apr_pstrcat(p, "svc_http_request_duration_seconds_sum{", run,
                            "} 30.012000", NULL));
    HAS_LINE(t, apr_pstrcat(p, "svc_http_request_duration_seconds_count{", run, "} 3", NULL));
    /* No route, or a row not of the table: one label for all of them. */
    HAS_LINE(t, "svc_http_requests_total{route=\"unmatched\",method=\"\",code=\"4xx\"} 2");
    HAS_LINE(t, "svc_http_requests_total{route=\"/internal/health\",method=\"GET\","
                "code=\"1xx\"} 1");
    HAS_LINE(t, "svc_http_requests_total{route=\"/internal/health\",method=\"GET\","
                "code=\"5xx\"} 1");
    /* The idle POST route still shows nothing. */
    SVC_CHECK(!contains(t, "method=\"POST\""));
}

SVC_TEST(test_pool_streams_models_hooks_rates)
{
    svc_metrics_t *m = fresh(p);
    svc_ctx_t ctx;
    svc_problem_t pr = { .status = 401 };
    const char *t;

    svc_metrics_db_acquired(m, 1, 100);
    svc_metrics_db_acquired(m, 1, 20000);
    svc_metrics_db_acquired(m, 0, 3000000);
    svc_metrics_db_released(m);
    svc_metrics_stream(m, SVC_MSTREAM_AGENT, 1);
    svc_metrics_stream(m, SVC_MSTREAM_AGENT, 1);
    svc_metrics_stream(m, SVC_MSTREAM_AGENT, -1);
    svc_metrics_model_call(m, "anthropic", 1, 120, 30);
    svc_metrics_model_call(m, "anthropic", 0, 0, 0);
    svc_metrics_model_call(m, "mistral", 1, 5, -1);     /* unknown kind: other */
    svc_metrics_model_call(m, NULL, 0, 0, 0);
    memset(&ctx, 0, sizeof(ctx));
    svc_metrics_webhook_answer(m, SVC_MHOOK_VCS, &ctx, APR_SUCCESS, 0);
    svc_metrics_webhook_answer(m, SVC_MHOOK_VCS, &ctx, APR_SUCCESS, 1);
    ctx.problem = &pr;
    svc_metrics_webhook_answer(m, SVC_MHOOK_VCS, &ctx, SVC_EPROBLEM, 0);
    pr.status = 503;
    svc_metrics_webhook_answer(m, SVC_MHOOK_BILLING, &ctx, SVC_EPROBLEM, 0);
    svc_metrics_webhook_answer(m, SVC_MHOOK_BILLING, &ctx, SVC_EDBDOWN, 0);
    svc_metrics_rate_refused(m, "tokens");
    svc_metrics_rate_refused(m, "tokens");
    svc_metrics_rate_refused(m, "nosuchclass");
    svc_metrics_rate_refused(m, "we\"ird\\cl\nass");
    t = svc_metrics_render(m, NULL, p);

    HAS_LINE(t, "svc_db_connections_in_use 1");
    HAS_LINE(t, "svc_db_acquire_wait_seconds_bucket{le=\"0.005\"} 1");
    HAS_LINE(t, "svc_db_acquire_wait_seconds_bucket{le=\"0.025\"} 2");
    HAS_LINE(t, "svc_db_acquire_wait_seconds_bucket{le=\"5\"} 3");
    HAS_LINE(t, "svc_db_acquire_wait_seconds_sum 3.020100");
    HAS_LINE(t, "svc_db_acquire_wait_seconds_count 3");
    HAS_LINE(t, "svc_db_acquire_failures_total 1");
    HAS_LINE(t, "svc_event_streams_open{kind=\"agent\"} 1");
    HAS_LINE(t, "svc_event_streams_open{kind=\"org\"} 0");
    HAS_LINE(t, "svc_model_calls_total{kind=\"anthropic\",outcome=\"ok\"} 1");
    HAS_LINE(t, "svc_model_calls_total{kind=\"anthropic\",outcome=\"error\"} 1");
    HAS_LINE(t, "svc_model_calls_total{kind=\"other\",outcome=\"ok\"} 1");
    HAS_LINE(t, "svc_model_calls_total{kind=\"other\",outcome=\"error\"} 1");
    HAS_LINE(t, "svc_model_tokens_total{kind=\"anthropic\",direction=\"input\"} 120");
    HAS_LINE(t, "svc_model_tokens_total{kind=\"anthropic\",direction=\"output\"} 30");
    HAS_LINE(t, "svc_model_tokens_total{kind=\"other\",direction=\"input\"} 5");
    HAS_LINE(t, "svc_model_tokens_total{kind=\"other\",direction=\"output\"} 0");
    HAS_LINE(t, "svc_webhook_deliveries_total{source=\"vcs\",result=\"accepted\"} 1");
    HAS_LINE(t, "svc_webhook_deliveries_total{source=\"vcs\",result=\"duplicate\"} 1");
    HAS_LINE(t, "svc_webhook_deliveries_total{source=\"vcs\",result=\"rejected\"} 1");
    HAS_LINE(t, "svc_webhook_deliveries_total{source=\"billing\",result=\"failed\"} 2");
    /* A class named twice is one series; a label value is escaped. */
    HAS_LINE(t, "svc_rate_limited_total{class=\"tokens\"} 2");
    HAS_LINE(t, "svc_rate_limited_total{class=\"models\"} 0");
    HAS_LINE(t, "svc_rate_limited_total{class=\"we\\\"ird\\\\cl\\nass\"} 1");
    SVC_CHECK(!contains(t, "nosuchclass"));
}

SVC_TEST(test_database_figures)
{
    static const char *const statuses[] = { "queued", "running", NULL };
    static const apr_int64_t counts[] = { 3, 2 };
    svc_metrics_db_t dbm = { 1, statuses, counts, 12.5 };
    const char *t = svc_metrics_render(NULL, &dbm, p);

    HAS_LINE(t, "svc_database_up 1");
    HAS_LINE(t, "svc_runs{status=\"queued\"} 3");
    HAS_LINE(t, "svc_runs{status=\"running\"} 2");
    HAS_LINE(t, "svc_run_queue_oldest_age_seconds 12.500");
    /* Without a metrics set (SvcMetrics Off), nothing of it. */
    SVC_CHECK(!contains(t, "svc_http_requests_total"));
    HAS_LINE(t, "svc_build_info{version=\"" SVC_VERSION "\"} 1");
}

SVC_TEST(test_null_and_unbound_sets_count_nothing)
{
    svc_metrics_t *m = svc_metrics_create(p, table, NULL);

    /* Neither crashes: code far from a request counts through these. */
    svc_metrics_request(NULL, &table[0], 200, 1);
    svc_metrics_db_acquired(NULL, 1, 1);
    svc_metrics_db_released(NULL);
    svc_metrics_model_call(NULL, "openai", 1, 1, 1);
    svc_metrics_request(m, &table[0], 200, 1);
    svc_metrics_rate_refused(m, "tokens");
    SVC_CHECK(!contains(svc_metrics_render(m, NULL, p), "svc_http_requests_total"));
    SVC_CHECK_INT(svc_metrics_size(m) % 8, 0);
}

int main(int argc, const char *const *argv)
{
    return svc_test_run(argc, argv);
}
