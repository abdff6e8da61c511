/*
 * svc_run_log.h: a run's log on its way to PostgreSQL.
 *
 * Every line the runner writes (the factory's log lines, its stderr, the
 * supervisor's own notes) is cleaned (valid UTF-8, no control characters
 * but tab, at most SVC_RUN_LOG_LINE_MAX bytes), stripped of secrets
 * (svc_redact's shapes and the exact strings given, such as the provider's
 * key), kept in memory and flushed in batches, one transaction each
 * (svc_run_log_append). While the database is away, lines wait here; the
 * log's limit bounds what can wait. Past the limit one line says the rest
 * was dropped, and nothing more is kept.
 */
#ifndef SVC_RUN_LOG_H
#define SVC_RUN_LOG_H

#include "svc_run_store.h"

#define SVC_RUN_LOG_LINE_MAX (8 * 1024)

typedef struct svc_run_log_t svc_run_log_t;

/*
 * A log that continues a run's stored log (`stored` bytes, `dropped` when
 * the limit was reached before), at most `limit` bytes in all. Allocated
 * from p, which must not be used by another thread meanwhile.
 */
svc_run_log_t *svc_run_log_create(apr_pool_t *p, apr_int64_t stored, int dropped,
                                  apr_int64_t limit);

/* A string to hide wherever it appears (copied; at least 8 bytes, or
 * ignored; at most 32 of them). */
void svc_run_log_secret(svc_run_log_t *log, const char *secret);

/* Adds one line (without its newline; `len` bytes, may hold anything). */
void svc_run_log_line(svc_run_log_t *log, const char *line, apr_size_t len);

/* printf into one line. */
void svc_run_log_note(svc_run_log_t *log, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * One line, as svc_run_log_note, and an event of kind `kind` with `data`
 * (taken) that goes with it: stored with the line, after its run.log
 * event. Past the log's limit, neither is kept.
 */
void svc_run_log_event(svc_run_log_t *log, const char *kind, json_t *data,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* text with the known secrets and secret-shaped runs hidden, as every line
 * is (for what goes into an event's data). */
const char *svc_run_log_redact(svc_run_log_t *log, apr_pool_t *p, const char *text);

/*
 * Bytes of a stream (a runner's stderr) that may end in the middle of a
 * line: whole lines are added, the rest waits for more; `eof` adds the
 * rest as a line. `partial` is the caller's buffer state.
 */
typedef struct {
    char buf[SVC_RUN_LOG_LINE_MAX];
    apr_size_t len;
} svc_run_log_partial_t;

void svc_run_log_bytes(svc_run_log_t *log, svc_run_log_partial_t *partial, const char *data,
                       apr_size_t len, int eof);

/* Bytes waiting to be stored. */
apr_size_t svc_run_log_pending(const svc_run_log_t *log);

/*
 * Stores what waits, in chunks of at most 256 KiB, each with its events.
 * SVC_EDBDOWN (or another failure) leaves the rest waiting for the next
 * call; SVC_ENOTFOUND means the node no longer holds the run.
 */
apr_status_t svc_run_log_flush(svc_run_log_t *log, svc_db_t *db, const svc_run_job_t *job,
                               const char *node);

/* The text waiting (for the unit tests): *plen bytes, not NUL-terminated. */
const char *svc_run_log_waiting(const svc_run_log_t *log, apr_size_t *plen);

#endif /* SVC_RUN_LOG_H */
