/*
 * svc_metrics.h: the server's metrics, for GET /internal/metrics.
 *
 * Counters and histograms live in the segment every process of one httpd
 * shares (svc_shared.h): each child, thread and the run supervisor adds to
 * the same 64-bit words with apr_atomic, so a scrape of any child sees the
 * whole server. No lock is ever taken; a scrape may see one request's
 * counter before its histogram, never a torn word.
 *
 * The layout is fixed at start (svc_metrics_create, in the parent's
 * post_config): one slot per route of the table, one for requests that
 * matched none, one per rate class. A descriptor in ordinary memory says
 * where each series is; the children inherit it with the segment, so both
 * are the same in every process of one generation. A graceful restart makes
 * a new pair; the old generation's children keep theirs until they exit.
 *
 * The renderer (svc_metrics_render) is plain C over the descriptor: the
 * unit tests bind it to ordinary memory.
 */
#ifndef SVC_METRICS_H
#define SVC_METRICS_H

#include "svc_ktypes.h"

typedef struct svc_metrics_t svc_metrics_t;

/* Where the words of a metrics set go: the shared segment, or any zeroed
 * memory of svc_metrics_size() bytes, 8-aligned. */
apr_size_t svc_metrics_size(const svc_metrics_t *m);
void svc_metrics_bind(svc_metrics_t *m, void *words);

/*
 * The layout for `table` (the route table, ended by a row with method
 * NULL) and the rate classes (`classes`, NULL-ended; duplicates are kept
 * once), from p. Not bound yet.
 */
svc_metrics_t *svc_metrics_create(apr_pool_t *p, const svc_route_t *table,
                                  const char *const *classes);

/*
 * This process's metrics set (NULL: none, or SvcMetrics Off). One per httpd
 * generation, set by the parent before it forks, so that code far from any
 * request (a model call of a run, the pool's lending) can count without
 * carrying it; every function below accepts NULL and then does nothing.
 */
void svc_metrics_use(svc_metrics_t *m);
svc_metrics_t *svc_metrics_current(void);

/* One answered request: its route (NULL or a row not of the table:
 * "unmatched"), its status and how long it took. */
void svc_metrics_request(svc_metrics_t *m, const svc_route_t *route, int status,
                         apr_interval_time_t took);

/* The database pool: a connection lent (ok) or not (!ok) after waiting
 * `waited` for it; a lent one given back. */
void svc_metrics_db_acquired(svc_metrics_t *m, int ok, apr_interval_time_t waited);
void svc_metrics_db_released(svc_metrics_t *m);

/* Event streams held open: org streams and deploy agents' work streams. */
typedef enum {
    SVC_MSTREAM_ORG = 0,
    SVC_MSTREAM_AGENT,
    SVC_MSTREAM_N
} svc_mstream_e;
void svc_metrics_stream(svc_metrics_t *m, svc_mstream_e kind, int delta);

/* One call to a model: the provider's kind ("openai", "anthropic";
 * others are counted as "other"), whether it answered, and its tokens. */
void svc_metrics_model_call(svc_metrics_t *m, const char *kind, int ok,
                            apr_int64_t input_tokens, apr_int64_t output_tokens);

/* One webhook delivery received, and what became of it. */
typedef enum {
    SVC_MHOOK_VCS = 0,          /* the code-hosting provider's */
    SVC_MHOOK_BILLING,          /* the payment provider's */
    SVC_MHOOK_N
} svc_mhook_e;
typedef enum {
    SVC_MHOOK_ACCEPTED = 0,     /* recorded and applied */
    SVC_MHOOK_DUPLICATE,        /* seen before, nothing done */
    SVC_MHOOK_REJECTED,         /* refused: signature, malformed (4xx) */
    SVC_MHOOK_FAILED,           /* could not be processed (5xx) */
    SVC_MHOOK_RESULT_N
} svc_mhook_result_e;
void svc_metrics_webhook(svc_metrics_t *m, svc_mhook_e source, svc_mhook_result_e result);

/* The same from a webhook handler's outcome: what it returned (rv, with
 * ctx's problem when it failed) and whether it found the delivery a
 * duplicate. */
void svc_metrics_webhook_answer(svc_metrics_t *m, svc_mhook_e source, const svc_ctx_t *ctx,
                                apr_status_t rv, int duplicate);

/* Runs a webhook handler, `fn` (which sets *pduplicate when it finds the
 * delivery recorded before), and counts its outcome in the current set. */
typedef apr_status_t (*svc_mhook_fn)(svc_ctx_t *ctx, int *pduplicate);
apr_status_t svc_metrics_webhook_handle(svc_ctx_t *ctx, svc_mhook_e source, svc_mhook_fn fn);

/* A request refused by the rate class `name` (unknown names are not
 * counted: the classes are fixed at start). */
void svc_metrics_rate_refused(svc_metrics_t *m, const char *name);

/* What a scrape reads from PostgreSQL (one query, svc_metrics_db_read):
 * runs by status, and how long the oldest queued run has waited. */
typedef struct {
    int have;                   /* 0: the database could not be read */
    const char *const *statuses;    /* NULL-ended */
    const apr_int64_t *counts;      /* one per status */
    double oldest_queued_s;     /* 0 when none is queued */
} svc_metrics_db_t;

/*
 * The exposition, Prometheus text format 0.0.4, from p: every series of
 * the set, the database's (when dbm->have), and svc_build_info{version}.
 * m may be NULL (only build info and the database's).
 */
const char *svc_metrics_render(const svc_metrics_t *m, const svc_metrics_db_t *dbm,
                               apr_pool_t *p);

/* The media type of the exposition. */
#define SVC_METRICS_MEDIA "text/plain; version=0.0.4; charset=utf-8"

#endif /* SVC_METRICS_H */
