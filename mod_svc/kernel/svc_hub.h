/*
 * svc_hub.h: the hub of new events behind the live streams, one per process
 * (an httpd child) and database.
 *
 * The hub holds one connection of its own (never a pooled one) that LISTENs
 * on SVC_EVENTS_CHANNEL. When events commit it reads each of them once from
 * the event log (svc_eventlog.h) into a ring of recent events, and tells
 * whoever streams them that there is something new through the wake
 * callback it was given: once per subscriber of the org, per batch read.
 * The subscriber then takes what it has not sent from the ring
 * (svc_hub_read), or learns that the ring no longer holds it and reads the
 * table itself. The hub also keeps the books of the stream places of its
 * process (sql/016_event_streams.sql): it takes them, deletes those given
 * back, confirms the rest every 30 s, and gives back every one still held
 * when it stops.
 *
 * How the streams are written, woken and timed is the caller's (the httpd
 * glue: mod_svc_sse.c); nothing here knows of a connection or a request.
 */
#ifndef SVC_HUB_H
#define SVC_HUB_H

#include "svc_eventlog.h"

typedef struct svc_hub_t svc_hub_t;
/* The events of one org the hub tracks (the hub's own). */
typedef struct svc_hub_org_t svc_hub_org_t;
typedef struct svc_hub_sub_t svc_hub_sub_t;

/*
 * A subscription to one org's new events. It lives in the subscriber's own
 * record (so a stream costs no allocation more), from svc_hub_subscribe to
 * svc_hub_unsubscribe; its fields are the hub's.
 */
struct svc_hub_sub_t {
    svc_hub_org_t *org;
    svc_hub_sub_t *prev, *next;     /* the org's subscribers (hub locked) */
    apr_uint64_t ring_pos;          /* arrival number to scan the ring from */
    apr_int64_t noticed;            /* the newest id svc_hub_read_noting noted */
};

/*
 * There is something new for sub: called under the hub's lock (so sub is
 * still subscribed), from the hub's thread, svc_hub_wake_all or whoever
 * calls svc_hub_step. It must not call the hub back; it only arranges for
 * the subscriber to read later.
 */
typedef void svc_hub_wake_fn(void *baton, svc_hub_sub_t *sub);

/* Where the hub's own messages go (syslog's levels, as httpd's), tagged. */
typedef void svc_hub_log_fn(void *baton, int level, const char *msg);
#define SVC_HUB_WARNING 4
#define SVC_HUB_INFO    6

typedef struct {
    const char *conninfo;       /* libpq conninfo of the database (DBDParams) */
    const char *holder;         /* this process, as event_streams.holder names it */
    svc_hub_wake_fn *wake;
    void *wake_baton;
    svc_hub_log_fn *log;
    void *log_baton;
    int ring_size;              /* recent events kept; 0: 4096 */
    int batch;                  /* rows per read of the event log; 0: 500 */
} svc_hub_conf_t;

/*
 * A hub in p (conf is copied, its strings are not). It does nothing until
 * started (svc_hub_start) or stepped (svc_hub_step); when p goes, its thread
 * is stopped first (before p's sub-pools go), then every place it still
 * holds is given back and its connection closed.
 */
apr_status_t svc_hub_create(svc_hub_t **phub, apr_pool_t *p, const svc_hub_conf_t *conf);

/* Runs svc_hub_step on a thread of its own until the hub's pool goes. */
apr_status_t svc_hub_start(svc_hub_t *hub);

/*
 * One turn of the hub's loop: (re)connects and LISTENs if it must (one
 * second's pause after a failure), waits up to half a second for
 * notifications, gives back the places released since the last turn,
 * confirms the held ones every 30 s, and reads the announced orgs' new
 * events into the ring, waking their subscribers. A lost connection is
 * forgotten (the subscribers then read the table) and made again next turn.
 * On the hub's thread only, or, without one, on one thread at a time.
 */
void svc_hub_step(svc_hub_t *hub);

/*
 * Subscribes sub (zeroed or unsubscribed) to the new events of org_id.
 * A subscriber must be woken by the hub for what commits from now on; what
 * committed before is the subscriber's to read from the table.
 */
void svc_hub_subscribe(svc_hub_t *hub, svc_hub_sub_t *sub, const char *org_id);
void svc_hub_unsubscribe(svc_hub_t *hub, svc_hub_sub_t *sub);

/* The org sub follows (lives as long as the hub). */
const char *svc_hub_sub_org(const svc_hub_sub_t *sub);

/* Wakes every subscriber (a process that stops ends its streams so). */
void svc_hub_wake_all(svc_hub_t *hub);

/* What svc_hub_read's callback made of the event it was shown. */
#define SVC_HUB_TAKEN   0       /* sent: go on */
#define SVC_HUB_LAST    1       /* sent, and the last the subscriber wants */
#define SVC_HUB_FULL    2       /* not sent (no room): the next read starts there */
typedef int svc_hub_event_fn(void *baton, const svc_event_t *e);

/*
 * Shows fn, oldest first and under the hub's lock (fn must not call the
 * hub), the events of sub's org after *plast that the ring holds, only the
 * run's when run_id is not NULL, and only those for target_id (NULL: those
 * addressed to no target, as svc_events_after). *plast follows what fn took.
 * APR_SUCCESS when the ring holds everything after *plast; APR_INCOMPLETE,
 * having shown nothing, when it may not (the hub is not connected, has not
 * read the org since it connected, or evicted events after *plast): the
 * caller reads the table (svc_events_after), then calls svc_hub_rewind.
 */
apr_status_t svc_hub_read(svc_hub_t *hub, svc_hub_sub_t *sub, const char *run_id,
                          const char *target_id, apr_int64_t *plast,
                          svc_hub_event_fn *fn, void *baton);

/*
 * svc_hub_read, and more: *pnoticed is set to 1 when the ring holds an
 * event of sub's org after *plast, not yet noted for sub, whose kind starts
 * with notice_prefix but that the filter (run_id, target_id) keeps from fn.
 * So a subscriber that follows one run or target learns of an org-wide
 * event that concerns every subscriber (an operator's suspension,
 * access.suspension) without being sent it. The ring is looked at for these
 * even when the call returns APR_INCOMPLETE (the table read of a run's
 * events would not see them); an event the ring no longer holds is not
 * noted.
 */
apr_status_t svc_hub_read_noting(svc_hub_t *hub, svc_hub_sub_t *sub, const char *run_id,
                                 const char *target_id, const char *notice_prefix,
                                 apr_int64_t *plast, int *pnoticed,
                                 svc_hub_event_fn *fn, void *baton);

/* The next svc_hub_read scans the whole ring (filtered by id): after a read
 * of the table, which may have gone past what the ring scan had reached. */
void svc_hub_rewind(svc_hub_sub_t *sub);

/*
 * Claims a place among the streams `principal` holds (svc_streams_claim, on
 * db, held by this hub's process): *pid is its id, or 0 when the principal
 * holds `limit` already. The holder gives it back with svc_hub_place_give
 * (the hub deletes it at its next turn), whatever outlives what: a stream's
 * place is its request's at first and its connection's later. Places not
 * given back go when the hub stops.
 */
apr_status_t svc_hub_place_claim(svc_hub_t *hub, svc_db_t *db, apr_pool_t *p,
                                 const char *principal, int limit, apr_int64_t *pid);
void svc_hub_place_give(svc_hub_t *hub, apr_int64_t id);

#endif /* SVC_HUB_H */
