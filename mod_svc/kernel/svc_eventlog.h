/*
 * svc_eventlog.h: the durable event log behind the live streams.
 *
 * Every change a client may watch (a run's status and log lines, later the
 * pipeline's and deployments' changes) is a row of `events` first, written
 * in the transaction of the change (sql/006_events.sql). Ids are monotonic
 * per org in commit order, so a stream that resumes after Last-Event-ID
 * misses and repeats nothing; each org counts its own, without gaps
 * (sql/017_hardening2.sql), so they are unique per org only and tell
 * nothing of other orgs' activity. Each commit notifies the svc_events
 * channel, which the hub of every httpd child hears (svc_hub.h).
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
    const char *target_id;      /* NULL unless the event is work for a deploy target */
    const char *data;           /* one JSON object, as text */
} svc_event_t;

/*
 * Appends an event in the caller's transaction (committed or rolled back
 * with the change it reports). `data` (borrowed) must be a JSON object.
 * The insert takes the org's event lock until the transaction ends, so
 * emit events last among a transaction's writes (a write's answer, read
 * after them, takes no lock).
 */
apr_status_t svc_event_emit(svc_db_t *db, apr_pool_t *p, const char *org_id,
                            const char *project_id, const char *run_id, const char *kind,
                            const json_t *data);

/*
 * An event addressed to one deploy target: its agent's work stream carries
 * it, and no user's stream does (the org's and a run's leave such events
 * out). Otherwise as svc_event_emit.
 */
apr_status_t svc_event_emit_target(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                   const char *target_id, const char *kind,
                                   const json_t *data);

/* svc_events_after's target_id for the hub, which reads every event. */
#define SVC_EVENTS_EVERY_TARGET "*"

/*
 * The org's events after `after`, oldest first, at most `limit` of them and
 * (but for the first) at most max_bytes of data together; only the run's
 * when run_id is not NULL. target_id NULL: only events addressed to no
 * target (what users see); a target's id: only that target's;
 * SVC_EVENTS_EVERY_TARGET: all of them. *pevents is an array of
 * svc_event_t in p. Fewer than `limit` does not mean the end: ask again
 * after the last one.
 */
apr_status_t svc_events_after(svc_db_t *db, apr_pool_t *p, const char *org_id,
                              const char *run_id, const char *target_id, apr_int64_t after,
                              int limit, apr_size_t max_bytes, apr_array_header_t **pevents);

/* Parses "org_id:id" (a notification's payload); APR_EINVAL otherwise. */
apr_status_t svc_events_parse_notice(apr_pool_t *p, const char *payload, const char **porg,
                                     apr_int64_t *pid);

/*
 * The event streams a principal holds open, counted across every node
 * (sql/016_event_streams.sql). svc_streams_claim takes a place for one more
 * stream of `principal` (such as "user:<id>"), held by `holder` (the httpd
 * child: node, pid, start time): *pid is its id, or 0 when the principal
 * holds `limit` streams already (limit 0: no limit). The holder gives its
 * places back with svc_streams_release (ids as a PostgreSQL array literal,
 * "{1,2}") and keeps them counted with svc_streams_refresh at least every
 * 90 s; places not refreshed that long are not counted, and
 * svc_streams_refresh removes those older than five minutes. A holder that
 * goes away gives back all it still holds with svc_streams_release_all.
 */
apr_status_t svc_streams_claim(svc_db_t *db, apr_pool_t *p, const char *principal,
                               const char *holder, int limit, apr_int64_t *pid);
apr_status_t svc_streams_release(svc_db_t *db, apr_pool_t *p, const char *ids);
apr_status_t svc_streams_refresh(svc_db_t *db, apr_pool_t *p, const char *holder);
apr_status_t svc_streams_release_all(svc_db_t *db, apr_pool_t *p, const char *holder);

#endif /* SVC_EVENTLOG_H */
