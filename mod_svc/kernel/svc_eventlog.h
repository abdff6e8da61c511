/*
 * svc_eventlog.h: the durable event log behind the live streams.
 *
 * Every change a client may watch (a run's status and log lines, later the
 * pipeline's and deployments' changes) is a row of `events` first, written
 * in the transaction of the change (sql/006_events.sql). Ids are monotonic
 * per org in commit order, so a stream that resumes after Last-Event-ID
 * misses and repeats nothing; each org counts its own, without gaps
 * (sql/013_hardening2.sql), so they are unique per org only and tell
 * nothing of other orgs' activity. Each commit notifies the svc_events channel,
 * which wakes the streams of every httpd child (mod_svc_sse.c).
 */
#ifndef SVC_EVENTLOG_H
#define SVC_EVENTLOG_H

#include "svc_ktypes.h"
#include "svc_db.h"

/* The channel every event is announced on; the payload is "org_id:id". */
#define SVC_EVENTS_CHANNEL "svc_events"

/* One event as a stream sends it. */
typedef struct {
    apr_int64_t id;
    const char *kind;           /* "run.status", "run.log", ... */
    const char *run_id;         /* NULL unless the event is about a run */
    const char *data;           /* one JSON object, as text */
} svc_event_t;

/*
 * Appends an event in the caller's transaction (committed or rolled back
 * with the change it reports). `data` (borrowed) must be a JSON object.
 * The insert takes the org's event lock until the transaction ends, so
 * emit events last in a transaction, right before COMMIT.
 */
apr_status_t svc_event_emit(svc_db_t *db, apr_pool_t *p, const char *org_id,
                            const char *project_id, const char *run_id, const char *kind,
                            const json_t *data);

/*
 * The org's events after `after`, oldest first, at most `limit`; only the
 * run's when run_id is not NULL. *pevents is an array of svc_event_t in p.
 */
apr_status_t svc_events_after(svc_db_t *db, apr_pool_t *p, const char *org_id,
                              const char *run_id, apr_int64_t after, int limit,
                              apr_array_header_t **pevents);

/* Parses "org_id:id" (a notification's payload); APR_EINVAL otherwise. */
apr_status_t svc_events_parse_notice(apr_pool_t *p, const char *payload, const char **porg,
                                     apr_int64_t *pid);

#endif /* SVC_EVENTLOG_H */
