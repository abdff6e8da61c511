/*
 * svc_run_store.h: the runs table and what hangs off it (sql/007_runs.sql),
 * for the API handlers and the supervisor alike. Every status change goes
 * through here, so each one emits its run.status event in its own
 * transaction, and each appended piece of log its run.log events.
 *
 * The supervisor's writes are fenced by its lease: they name the node that
 * holds the run (lease_owner) and change nothing once another node has
 * taken the run over or the run was reaped (SVC_ENOTFOUND).
 */
#ifndef SVC_RUN_STORE_H
#define SVC_RUN_STORE_H

#include "svc_runs.h"

/* Statuses, as stored and shown. */
#define SVC_RUN_QUEUED    "queued"
#define SVC_RUN_RUNNING   "running"
#define SVC_RUN_SUCCEEDED "succeeded"
#define SVC_RUN_FAILED    "failed"
#define SVC_RUN_CANCELLED "cancelled"

/* SQL: one run (r, joined to its project p) as the API shows it, JSON text. */
#define SVC_RUN_DOC_SQL                                                              \
    "json_build_object('id', r.id, 'project', p.slug, 'status', r.status,"           \
    " 'instructions', r.instructions, 'request_id', r.request_id,"                   \
    " 'task_id', r.task_id, 'repository', r.repository, 'created_by', r.created_by,"  \
    " 'created_at', svc_ts(r.created_at), 'started_at', svc_ts(r.started_at),"       \
    " 'finished_at', svc_ts(r.finished_at), 'cancel_requested', r.cancel_requested," \
    " 'result', r.result, 'error', CASE WHEN r.error_code IS NULL THEN NULL"         \
    " ELSE json_build_object('code', r.error_code, 'message', r.error_message) END)::text"

/* The statuses, the run document's schema, and the events the area writes. */
extern const char *const svc_run_statuses[];
extern const svc_schema_t svc_schema_run, svc_schema_run_detail;
extern const svc_event_kind_t svc_run_events[];

/*
 * Emits run.status for a change made in the caller's transaction (its last
 * write: it takes the org's event lock). err_code and
 * err_message may be NULL.
 */
apr_status_t svc_run_emit_status(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                 const char *project_id, const char *run_id,
                                 const char *status, const char *err_code,
                                 const char *err_message);

/* What the supervisor needs to carry out one claimed run. */
typedef struct {
    const char *id;
    const char *org_id;
    const char *project_id;
    const char *instructions;
    const char *created_by;         /* user id, or NULL when the user is gone */
    const char *author_name;        /* for the commit: the creator's name... */
    const char *author_email;       /* ...and address, or the service's own */
    const char *repository;         /* "owner/name" to clone first, or NULL (greenfield) */
    apr_int64_t installation_id;    /* ...through this installation */
    int timeout_seconds;
    int max_steps;                  /* SvcRunMaxSteps of the server it was started through */
    apr_int64_t max_tokens;         /* SvcRunMaxTokens */
    int command_timeout;            /* SvcRunCommandTimeout */
    apr_int64_t log_bytes;          /* the log's length as stored */
    int log_dropped;
} svc_run_job_t;

/*
 * Claims the oldest queued run for `node` (FOR UPDATE SKIP LOCKED, so
 * supervisors on several nodes never take the same run): running, a lease
 * of lease_s seconds, its run.status event, one transaction. *pjob is NULL
 * when the queue is empty.
 */
apr_status_t svc_run_claim(svc_db_t *db, apr_pool_t *p, const char *node, int lease_s,
                           svc_run_job_t **pjob);

/* One run the node holds, as its heartbeat saw it. */
typedef struct {
    const char *id;
    int cancel_requested;
} svc_run_lease_t;

/*
 * Renews every lease `node` holds; *pleases (of svc_run_lease_t) lists the
 * runs it still holds, with whether their cancellation was asked for. A run
 * missing from the list was taken from the node (reaped): stop working on it.
 */
apr_status_t svc_run_renew(svc_db_t *db, apr_pool_t *p, const char *node, int lease_s,
                           apr_array_header_t **pleases);

/*
 * Fails the runs whose lease ran out (their node stopped renewing: it died
 * or lost the database for longer than a lease) with error code "lost",
 * one transaction per run. *pcount (may be NULL) gets how many.
 */
apr_status_t svc_run_reap(svc_db_t *db, apr_pool_t *p, int *pcount);

/*
 * Ends a run the node holds as failed (err_code set) or cancelled, with its
 * event. Exactly once: APR_SUCCESS when it already has that status (an
 * earlier attempt committed); SVC_ENOTFOUND when the node no longer holds
 * it (nothing changed).
 */
apr_status_t svc_run_finish(svc_db_t *db, apr_pool_t *p, const char *run_id,
                            const char *node, const char *status, const char *err_code,
                            const char *err_message);

/*
 * Ends a run the node holds as succeeded: its result (JSON text), its
 * artifact (a git bundle, stored in parts) and its event, one transaction.
 * Otherwise as svc_run_finish.
 */
apr_status_t svc_run_succeed(svc_db_t *db, apr_pool_t *p, const char *run_id,
                             const char *node, const char *result_json,
                             const unsigned char *bundle, apr_size_t bundle_len);

/*
 * Ends a run the node holds as failed (err_code step_limit or token_limit)
 * with a result and an artifact all the same: the work so far of a run
 * stopped at one of its limits. Otherwise as svc_run_finish.
 */
apr_status_t svc_run_fail_with_work(svc_db_t *db, apr_pool_t *p, const char *run_id,
                                    const char *node, const char *err_code,
                                    const char *err_message, const char *result_json,
                                    const unsigned char *bundle, apr_size_t bundle_len);

/*
 * Puts a run the node holds back in the queue (an orderly stop of the
 * supervisor interrupted it): another supervisor starts it again from the
 * beginning. SVC_ENOTFOUND when the node no longer holds it.
 */
apr_status_t svc_run_requeue(svc_db_t *db, apr_pool_t *p, const char *run_id,
                             const char *node);

/* An event of the run that goes with its log (a run.step): emitted after
 * the run.log event of the line that ends `at` bytes into the text
 * appended (at 0: before them all), so a stream shows both in order. */
typedef struct {
    apr_size_t at;
    const char *kind;
    json_t *data;
} svc_run_log_event_t;

/*
 * Appends text (whole lines, each ending in '\n') to the log of a run the
 * node holds, where the log is `offset` bytes long, with one run.log event
 * per line and the `nevents` events given (in order of `at`), in one
 * transaction. `dropped` records that the log reached its limit. Exactly
 * once: when the log is already longer by this text (an earlier attempt
 * committed, its answer was lost), nothing is written and APR_SUCCESS
 * returned. SVC_ENOTFOUND when the node no longer holds the run.
 */
apr_status_t svc_run_log_append(svc_db_t *db, apr_pool_t *p, const svc_run_job_t *job,
                                const char *node, apr_int64_t offset, const char *text,
                                apr_size_t len, int dropped,
                                const svc_run_log_event_t *events, int nevents);

/* Removes idempotency keys older than 24 hours. */
apr_status_t svc_run_sweep_keys(svc_db_t *db, apr_pool_t *p);

#endif /* SVC_RUN_STORE_H */
