/*
 * mod_svc_sse.c: live event streams (text/event-stream) that hold no worker
 * thread while they wait.
 *
 * A stream route's handler only authorizes and says what to stream
 * (ctx->stream, kernel/svc_ctx.h). Here the stream replays the event log
 * after the client's Last-Event-ID on the worker that took the request,
 * gives the database connection back, and then suspends the connection
 * (the handler returns SUSPENDED, the event MPM's mechanism): the worker
 * thread goes back to the pool, and the stream lives on as a small record
 * that timed callbacks, run on any worker, pick up when there is something
 * to do:
 *
 *  - a wake-up, when an event of its org commits. Each child has one hub: a
 *    thread with one LISTEN connection of its own (never a pooled one),
 *    which reads every new event once into a ring of recent events and
 *    schedules an immediate callback for each stream of that org;
 *  - a heartbeat every 15 s (an SSE comment), which also notices a client
 *    that left, and every 30 s checks the caller's access again: a revoked
 *    token, an ended session or a removed member ends the stream.
 *
 * A stream that fell behind the ring, or whose org the hub has not covered
 * since it (re)connected, reads the log from the database instead, through
 * a pooled connection held only for that read. Event ids are in commit
 * order per org (sql/006_events.sql), so "after the last id sent" never
 * skips or repeats an event.
 *
 * What httpd 2.4 cannot do: give a suspended connection back to the MPM.
 * So a stream that ends writes its last bytes, finishes the request (it is
 * logged), and then releases the connection itself, by destroying its
 * pool: that closes the socket and settles the MPM's connection counts, as
 * the MPM's own close would. Clients reconnect with Last-Event-ID (the
 * stream sends `retry:`); every stream ends when its child stops.
 */
#include "mod_svc_glue.h"

#include <http_core.h>
#include <http_protocol.h>
#include <http_request.h>
#include <ap_mpm.h>
#include <mpm_common.h>
#include <apr_atomic.h>
#include <apr_hash.h>
#include <apr_strings.h>
#include <apr_thread_mutex.h>
#include <apr_thread_proc.h>

#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

APLOG_USE_MODULE(svc);

#define SSE_HEARTBEAT   apr_time_from_sec(15)
#define SSE_RECHECK     apr_time_from_sec(30)
/* Recent events kept per child; a stream further behind reads the table. */
#define SSE_RING        4096
/* Rows per read of the event log. */
#define SSE_BATCH       500
/* A stream ending right after it was suspended waits this long before it
 * releases its connection: the worker that suspended it may still be
 * returning through the MPM (see the note above). */
#define SSE_SETTLE      apr_time_from_sec(1)
/* What the client's EventSource waits before reconnecting, in ms. */
#define SSE_RETRY_MS    2000

typedef struct sse_hub sse_hub;
typedef struct sse_stream sse_stream;

/* One event in the ring; strings are malloc'd and freed on eviction. */
typedef struct {
    apr_int64_t id;
    char *org_id;
    char *run_id;
    char *kind;
    char *data;
} ring_entry;

/* The events of one org the hub tracks, and the streams that want them. */
typedef struct {
    char *org_id;
    /* The ring holds every event of the org with an id above this (or
     * none is known: covered is 0 until the hub read one after connecting). */
    int covered;
    apr_int64_t covered_after;
    apr_int64_t fetched;        /* the newest id read from the table */
    sse_stream *streams;        /* doubly linked */
} hub_org;

struct sse_hub {
    const char *conninfo;
    server_rec *s;
    apr_pool_t *pool;           /* the child's; keys and org records, under lock */
    apr_thread_mutex_t *lock;   /* everything below */
    apr_thread_t *thread;
    ring_entry ring[SSE_RING];
    apr_uint64_t head;          /* arrival number of the next entry */
    apr_hash_t *orgs;           /* org id -> hub_org */
    int connected;
    volatile apr_uint32_t stopping;
    sse_hub *next;
};

/*
 * A stream's record outlives its request and connection (a heartbeat may
 * still be scheduled when it ends), so it is malloc'd and freed by the last
 * reference; the lock is a plain pthread mutex in it, because a pool of its
 * own would cost an allocator and 8 KiB per stream.
 */
struct sse_stream {
    pthread_mutex_t lock;       /* callbacks of this stream, one at a time */
    volatile apr_uint32_t refs; /* the hub's registration + pending callbacks */
    volatile apr_uint32_t wake_pending;
    int ended;                  /* under lock: r and c are gone */
    int ending;                 /* under lock: end at the next callback */
    request_rec *r;
    conn_rec *c;
    sse_hub *hub;
    hub_org *org;
    const char *run_id;
    int until_run_ends;
    apr_int64_t last_id;
    apr_uint64_t ring_pos;      /* arrival number to scan the ring from */
    apr_time_t suspended_at;
    apr_time_t next_recheck;
    const svc_route_t *route;
    apr_table_t *params;
    apr_bucket_brigade *bb;
    sse_stream *prev, *next;
};

/* The child's hubs (one per database the servers stream from) and its
 * state. Set in child_init, read by request threads afterwards. */
static sse_hub *hubs;
static apr_thread_mutex_t *hubs_lock;
static apr_pool_t *child_pool;
static volatile apr_uint32_t child_stopping;
static int mpm_is_async;

static void wake_cb(void *baton);
static void beat_cb(void *baton);

/* ------------------------------------------------------------------------
 * Writing
 */

static int is_final_status(const char *kind, const char *text)
{
    json_t *data;
    const char *st;
    int final;

    if (strcmp(kind, "run.status") != 0) {
        return 0;
    }
    data = json_loads(text, 0, NULL);
    st = json_string_value(json_object_get(data, "status"));
    final = st && (strcmp(st, "succeeded") == 0 || strcmp(st, "failed") == 0
                   || strcmp(st, "cancelled") == 0);
    json_decref(data);
    return final;
}

/* Appends one event in the SSE format; data is one line of JSON. */
static void frame(apr_bucket_brigade *bb, apr_int64_t id, const char *kind, const char *data)
{
    apr_brigade_printf(bb, NULL, NULL, "id: %" APR_INT64_T_FMT "\nevent: %s\ndata: %s\n\n",
                       id, kind, data);
}

/* Sends what the brigade holds, now. Anything but APR_SUCCESS: the client
 * is gone. */
static apr_status_t flush(request_rec *r, apr_bucket_brigade *bb)
{
    apr_status_t rv;

    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_flush_create(r->connection->bucket_alloc));
    rv = ap_pass_brigade(r->output_filters, bb);
    apr_brigade_cleanup(bb);
    if (rv == APR_SUCCESS && r->connection->aborted) {
        rv = APR_ECONNABORTED;
    }
    return rv;
}

/*
 * Writes the events (an array of svc_event_t) the stream has not sent and
 * flushes them. *pfinal is set when a run stream sent its run's final
 * status.
 */
static apr_status_t send_events(request_rec *r, apr_bucket_brigade *bb,
                                const apr_array_header_t *events, apr_int64_t *plast,
                                int until_run_ends, int *pfinal)
{
    int i;

    for (i = 0; i < events->nelts; i++) {
        const svc_event_t *e = &APR_ARRAY_IDX(events, i, svc_event_t);
        if (e->id <= *plast) {
            continue;
        }
        frame(bb, e->id, e->kind, e->data);
        *plast = e->id;
        if (until_run_ends && is_final_status(e->kind, e->data)) {
            *pfinal = 1;
            break;
        }
    }
    return events->nelts ? flush(r, bb) : APR_SUCCESS;
}

/*
 * Reads the stream's events after *plast from the table and sends them,
 * batch by batch, through a pooled connection lent to a context in p.
 */
static apr_status_t replay(request_rec *r, svc_ctx_t *ctx, apr_pool_t *p,
                           apr_bucket_brigade *bb, const char *org_id, const char *run_id,
                           int until_run_ends, apr_int64_t *plast, int *pfinal)
{
    apr_array_header_t *events;
    apr_pool_t *bp;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    /* The first batch in p; a long replay's further ones in a pool cleared
     * batch by batch (most streams replay little, and a pool of its own
     * would stay in the connection's allocator for the stream's life). */
    rv = svc_events_after(db, p, org_id, run_id, *plast, SSE_BATCH, &events);
    if (rv == APR_SUCCESS) {
        rv = send_events(r, bb, events, plast, until_run_ends, pfinal);
    }
    if (rv != APR_SUCCESS || *pfinal || events->nelts < SSE_BATCH) {
        return rv;
    }
    apr_pool_create(&bp, p);
    do {
        apr_pool_clear(bp);
        rv = svc_events_after(db, bp, org_id, run_id, *plast, SSE_BATCH, &events);
        if (rv == APR_SUCCESS) {
            rv = send_events(r, bb, events, plast, until_run_ends, pfinal);
        }
    } while (rv == APR_SUCCESS && !*pfinal && events->nelts == SSE_BATCH);
    apr_pool_destroy(bp);
    return rv;
}

/* ------------------------------------------------------------------------
 * The hub
 */

static hub_org *hub_org_get(sse_hub *hub, const char *org_id)
{
    hub_org *o = apr_hash_get(hub->orgs, org_id, APR_HASH_KEY_STRING);

    if (!o) {
        o = apr_pcalloc(hub->pool, sizeof(*o));
        o->org_id = apr_pstrdup(hub->pool, org_id);
        apr_hash_set(hub->orgs, o->org_id, APR_HASH_KEY_STRING, o);
    }
    return o;
}

/* Schedules an immediate callback for the stream, unless one is pending.
 * Called with the hub locked (the stream is registered, so it lives). */
static void wake(sse_stream *st)
{
    if (apr_atomic_cas32(&st->wake_pending, 1, 0) == 0) {
        apr_atomic_inc32(&st->refs);
        if (ap_mpm_register_timed_callback(0, wake_cb, st) != APR_SUCCESS) {
            apr_atomic_dec32(&st->refs);
            apr_atomic_set32(&st->wake_pending, 0);
        }
    }
}

static void wake_org(hub_org *o)
{
    sse_stream *st;

    for (st = o->streams; st; st = st->next) {
        wake(st);
    }
}

static void wake_all(sse_hub *hub)
{
    apr_hash_index_t *hi;

    for (hi = apr_hash_first(NULL, hub->orgs); hi; hi = apr_hash_next(hi)) {
        wake_org(apr_hash_this_val(hi));
    }
}

/* Adds one event to the ring, evicting the oldest. Hub locked. */
static void ring_add(sse_hub *hub, hub_org *o, const svc_event_t *e)
{
    ring_entry *slot = &hub->ring[hub->head % SSE_RING];

    if (slot->org_id) {
        /* The evicted event's org is no longer covered up to it. */
        hub_org *old = apr_hash_get(hub->orgs, slot->org_id, APR_HASH_KEY_STRING);
        if (old && old->covered && old->covered_after < slot->id) {
            old->covered_after = slot->id;
        }
        free(slot->org_id);
        free(slot->run_id);
        free(slot->kind);
        free(slot->data);
    }
    slot->id = e->id;
    slot->org_id = strdup(o->org_id);
    slot->run_id = e->run_id ? strdup(e->run_id) : NULL;
    slot->kind = strdup(e->kind);
    slot->data = strdup(e->data);
    if (!slot->org_id || !slot->kind || !slot->data || (e->run_id && !slot->run_id)) {
        /* Out of memory: forget the org's coverage; its streams read the table. */
        o->covered = 0;
    }
    hub->head++;
}

/* What one read of notifications announced: per org, the lowest id. */
typedef struct {
    apr_pool_t *pool;
    apr_hash_t *lowest;         /* org id -> apr_int64_t * */
} notices_t;

static void collect_notice(void *baton, const char *channel, const char *payload)
{
    notices_t *n = baton;
    const char *org;
    apr_int64_t id, *low;

    if (svc_events_parse_notice(n->pool, payload, &org, &id) != APR_SUCCESS) {
        return;
    }
    low = apr_hash_get(n->lowest, org, APR_HASH_KEY_STRING);
    if (!low) {
        low = apr_palloc(n->pool, sizeof(*low));
        *low = id;
        apr_hash_set(n->lowest, org, APR_HASH_KEY_STRING, low);
    }
    else if (id < *low) {
        *low = id;
    }
}

/*
 * Reads the new events of the announced orgs into the ring, then wakes
 * their streams. An org's ids commit in order, so everything after the
 * newest id read is new; for an org first heard of since connecting,
 * everything from the first announced id on is.
 */
static apr_status_t hub_fetch(sse_hub *hub, svc_db_t *db, apr_pool_t *p, notices_t *n)
{
    apr_hash_index_t *hi;
    apr_status_t rv = APR_SUCCESS;

    for (hi = apr_hash_first(p, n->lowest); hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        const char *org_id = apr_hash_this_key(hi);
        apr_int64_t low = *(apr_int64_t *)apr_hash_this_val(hi), after;
        apr_array_header_t *events;
        hub_org *o;
        int i;

        apr_thread_mutex_lock(hub->lock);
        o = hub_org_get(hub, org_id);
        after = o->covered ? o->fetched : low - 1;
        apr_thread_mutex_unlock(hub->lock);
        do {
            rv = svc_events_after(db, p, org_id, NULL, after, SSE_BATCH, &events);
            if (rv != APR_SUCCESS) {
                break;
            }
            apr_thread_mutex_lock(hub->lock);
            if (!o->covered) {
                o->covered = 1;
                o->covered_after = after;
            }
            for (i = 0; i < events->nelts; i++) {
                const svc_event_t *e = &APR_ARRAY_IDX(events, i, svc_event_t);
                ring_add(hub, o, e);
                after = o->fetched = e->id;
            }
            wake_org(o);
            apr_thread_mutex_unlock(hub->lock);
        } while (events->nelts == SSE_BATCH);
    }
    return rv;
}

static void hub_forget(sse_hub *hub)
{
    apr_hash_index_t *hi;

    apr_thread_mutex_lock(hub->lock);
    hub->connected = 0;
    for (hi = apr_hash_first(NULL, hub->orgs); hi; hi = apr_hash_next(hi)) {
        hub_org *o = apr_hash_this_val(hi);
        o->covered = 0;
    }
    apr_thread_mutex_unlock(hub->lock);
}

/*
 * The event MPM of httpd 2.4 bounds its poll() by the next timer only right
 * after it ran due timers: a timer registered for later while nothing else
 * is due (a heartbeat in 15 s) waits until something else wakes the
 * listener, which on a quiet server may be never. A timer due now does wake
 * it, runs, and lets it take the next expiry into account; so the hub
 * registers one, doing nothing, every second while it has streams.
 */
static void tick_cb(void *baton)
{
}

/* The hub's thread: LISTEN, read, wake; reconnect when the database goes. */
static void *APR_THREAD_FUNC hub_main(apr_thread_t *thd, void *data)
{
    sse_hub *hub = data;
    apr_pool_t *cp = NULL, *tp;
    svc_db_t *db = NULL;
    apr_time_t last_tick = 0;
    int warned = 0;

    apr_pool_create(&tp, NULL);
    while (!apr_atomic_read32(&hub->stopping)) {
        struct pollfd pfd;
        notices_t n;
        const char *err = NULL;
        apr_time_t now = apr_time_now();

        if (now - last_tick >= apr_time_from_sec(1)) {
            last_tick = now;
            if (apr_hash_count(hub->orgs)) {
                ap_mpm_register_timed_callback(0, tick_cb, NULL);
            }
        }
        apr_pool_clear(tp);
        if (!db) {
            if (cp) {
                apr_pool_destroy(cp);
            }
            apr_pool_create(&cp, NULL);
            if (svc_db_connect(&db, hub->conninfo, cp, &err) != APR_SUCCESS
                || svc_db_simple(db, "LISTEN " SVC_EVENTS_CHANNEL, cp) != APR_SUCCESS) {
                if (!warned++) {
                    char *why = apr_pstrdup(tp, err ? err : svc_db_errmsg(db));
                    apr_size_t len = strlen(why);
                    while (len && (why[len - 1] == '\n' || why[len - 1] == ' ')) {
                        why[--len] = '\0'; /* libpq ends its messages with one */
                    }
                    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, hub->s, "SVC0030: event "
                                 "streams cannot listen for new events (%s); they read the "
                                 "database every heartbeat until it is back",
                                 svc_redact(tp, svc_printable(tp, why, 512)));
                }
                db = NULL;
                apr_sleep(apr_time_from_sec(1));
                continue;
            }
            if (warned) {
                ap_log_error(APLOG_MARK, APLOG_INFO, 0, hub->s, "SVC0031: event streams "
                             "listen for new events again");
            }
            warned = 0;
            /* Anything may have been missed meanwhile: the streams catch up
             * from the table once. */
            apr_thread_mutex_lock(hub->lock);
            hub->connected = 1;
            wake_all(hub);
            apr_thread_mutex_unlock(hub->lock);
        }
        pfd.fd = svc_db_socket(db);
        pfd.events = POLLIN;
        pfd.revents = 0;
        if (pfd.fd < 0 || poll(&pfd, 1, 500) < 0) {
            continue;
        }
        if (!pfd.revents) {
            continue;
        }
        n.pool = tp;
        n.lowest = apr_hash_make(tp);
        if (svc_db_notifications(db, collect_notice, &n) != APR_SUCCESS
            || hub_fetch(hub, db, tp, &n) != APR_SUCCESS) {
            hub_forget(hub);
            db = NULL;
        }
    }
    if (cp) {
        apr_pool_destroy(cp);
    }
    apr_pool_destroy(tp);
    /*
     * Returned from, not left with apr_thread_exit: pthread_exit unwinds
     * past this frame without its epilogue, leaving AddressSanitizer's
     * marks of the loop's variables on the stack, and the thread's own
     * teardown then trips on them (a false stack-use-after-scope that
     * aborted every child at exit under make test SANITIZE=1). The exit
     * status stays APR_SUCCESS either way; the thread's pool goes with the
     * child's.
     */
    return NULL;
}

static apr_status_t hub_stop(void *data)
{
    sse_hub *hub = data;
    apr_status_t trv;
    int i;

    apr_atomic_set32(&hub->stopping, 1);
    if (hub->thread) {
        apr_thread_join(&trv, hub->thread);
    }
    for (i = 0; i < SSE_RING; i++) {
        free(hub->ring[i].org_id);
        free(hub->ring[i].run_id);
        free(hub->ring[i].kind);
        free(hub->ring[i].data);
    }
    return APR_SUCCESS;
}

/* The child's hub for this database, started on first use. */
static sse_hub *hub_for(server_rec *s, const char *conninfo)
{
    sse_hub *hub;

    apr_thread_mutex_lock(hubs_lock);
    for (hub = hubs; hub; hub = hub->next) {
        if (strcmp(hub->conninfo, conninfo) == 0) {
            break;
        }
    }
    if (!hub) {
        hub = apr_pcalloc(child_pool, sizeof(*hub));
        hub->conninfo = apr_pstrdup(child_pool, conninfo);
        hub->s = s;
        apr_pool_create(&hub->pool, child_pool);
        hub->orgs = apr_hash_make(hub->pool);
        if (apr_thread_mutex_create(&hub->lock, APR_THREAD_MUTEX_DEFAULT, child_pool)
                != APR_SUCCESS
            || apr_thread_create(&hub->thread, NULL, hub_main, hub, child_pool)
                != APR_SUCCESS) {
            hub = NULL;
        }
        else {
            apr_pool_cleanup_register(child_pool, hub, hub_stop, apr_pool_cleanup_null);
            hub->next = hubs;
            hubs = hub;
        }
    }
    apr_thread_mutex_unlock(hubs_lock);
    return hub;
}

/* ------------------------------------------------------------------------
 * Streams
 */

static void unref(sse_stream *st)
{
    if (!apr_atomic_dec32(&st->refs)) {
        pthread_mutex_destroy(&st->lock);
        free(st);
    }
}

static void hub_unregister(sse_stream *st)
{
    sse_hub *hub = st->hub;

    apr_thread_mutex_lock(hub->lock);
    if (st->prev) {
        st->prev->next = st->next;
    }
    else {
        st->org->streams = st->next;
    }
    if (st->next) {
        st->next->prev = st->prev;
    }
    apr_thread_mutex_unlock(hub->lock);
}

/*
 * Ends the stream: finishes the response, lets httpd log and free the
 * request, then closes the connection by destroying its pool (2.4 has no
 * way to hand it back to the MPM). Called with st->lock and r->invoke_mtx
 * held; returns with only st->lock held.
 */
static void end_stream(sse_stream *st)
{
    request_rec *r = st->r;
    conn_rec *c = st->c;
    apr_bucket_brigade *bb;

    ap_log_rerror(APLOG_MARK, APLOG_TRACE1, 0, r, "event stream %pp ends (last id %"
                  APR_INT64_T_FMT ")", st, st->last_id);
    st->ended = 1;
    hub_unregister(st);
    ap_finalize_request_protocol(r);
    apr_thread_mutex_unlock(r->invoke_mtx);
    ap_process_request_after_handler(r);
    /* r is gone. Whatever the output filters still hold goes out now. */
    bb = apr_brigade_create(c->pool, c->bucket_alloc);
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_flush_create(c->bucket_alloc));
    ap_pass_brigade(c->output_filters, bb);
    if (c->cs) {
        /* The MPM counts the connection as suspended until its pool goes. */
        c->cs->state = CONN_STATE_SUSPENDED;
    }
    apr_pool_destroy(c->pool);
    st->r = NULL;
    st->c = NULL;
    /* The hub's reference. */
    apr_atomic_dec32(&st->refs);
}

/* Takes both locks for a callback; 0 when the stream has ended (then only
 * the reference is given back). */
static int enter(sse_stream *st)
{
    pthread_mutex_lock(&st->lock);
    if (st->ended) {
        pthread_mutex_unlock(&st->lock);
        unref(st);
        return 0;
    }
    apr_thread_mutex_lock(st->r->invoke_mtx);
    return 1;
}

static void leave(sse_stream *st)
{
    if (!st->ended) {
        apr_thread_mutex_unlock(st->r->invoke_mtx);
    }
    pthread_mutex_unlock(&st->lock);
    unref(st);
}

/*
 * Ends the stream now, or shortly if it was suspended a moment ago: the
 * worker that suspended it may still be on its way out of the MPM, and the
 * connection must not go from under it.
 */
static void finish(sse_stream *st)
{
    if (apr_time_now() - st->suspended_at < SSE_SETTLE) {
        apr_atomic_inc32(&st->refs);
        if (ap_mpm_register_timed_callback(SSE_SETTLE, beat_cb, st) == APR_SUCCESS) {
            st->ending = 1;
            return;
        }
        apr_atomic_dec32(&st->refs);
    }
    end_stream(st);
}

/*
 * Sends what the stream has not sent: from the ring when the hub covers
 * the stream's org from its last id on, else from the table. Returns
 * non-zero when the stream must end (client gone, run over).
 */
static int deliver(sse_stream *st)
{
    sse_hub *hub = st->hub;
    apr_uint64_t pos, tail;
    int from_table = 0, final = 0, wrote = 0;
    apr_status_t rv = APR_SUCCESS;

    apr_thread_mutex_lock(hub->lock);
    if (!hub->connected || !st->org->covered || st->last_id < st->org->covered_after) {
        from_table = 1;
    }
    else {
        /* Straight from the ring into the brigade: no copies, no pool. */
        tail = hub->head > SSE_RING ? hub->head - SSE_RING : 0;
        for (pos = st->ring_pos > tail ? st->ring_pos : tail; pos < hub->head; pos++) {
            const ring_entry *re = &hub->ring[pos % SSE_RING];
            if (re->id <= st->last_id || strcmp(re->org_id, st->org->org_id) != 0
                || (st->run_id && (!re->run_id || strcmp(re->run_id, st->run_id) != 0))) {
                continue;
            }
            frame(st->bb, re->id, re->kind, re->data);
            st->last_id = re->id;
            wrote = 1;
            if (st->until_run_ends && is_final_status(re->kind, re->data)) {
                final = 1;
                break;
            }
        }
        st->ring_pos = final ? pos + 1 : hub->head;
    }
    apr_thread_mutex_unlock(hub->lock);

    if (from_table) {
        apr_pool_t *tp;
        svc_ctx_t *ctx;

        apr_pool_create(&tp, st->r->pool);
        ctx = svc_glue_ctx(st->r, tp);
        rv = replay(st->r, ctx, tp, st->bb, st->org->org_id, st->run_id, st->until_run_ends,
                    &st->last_id, &final);
        svc_glue_ctx_release(ctx);
        apr_pool_destroy(tp);
        /* The database being away is no reason to end a stream. */
        if (rv == SVC_EDBDOWN || rv == SVC_ESCHEMA) {
            rv = APR_SUCCESS;
        }
        /* Later wake-ups scan the whole ring again, filtered by id. */
        st->ring_pos = 0;
    }
    else if (wrote) {
        rv = flush(st->r, st->bb);
    }
    return rv != APR_SUCCESS || final;
}

/*
 * Whether the caller may still read what it streams: the route's whole
 * authentication and authorization again, with the credentials the stream
 * was opened with. Only a clear refusal ends a stream; the database being
 * away does not.
 */
static int still_allowed(sse_stream *st)
{
    apr_pool_t *tp;
    apr_status_t rv;
    int tries, allowed = 1;

    apr_pool_create(&tp, st->r->pool);
    /* A cached principal found stale (SVC_ERESTART) is looked up afresh, as
     * the dispatcher does for a request. */
    for (tries = 0; tries < 2; tries++) {
        svc_ctx_t *ctx = svc_glue_ctx(st->r, tp);

        ctx->route = st->route;
        apr_table_overlap(ctx->params, st->params, APR_OVERLAP_TABLES_SET);
        rv = svc_auth_check(ctx);
        if (rv == APR_SUCCESS || rv == SVC_EPROBLEM) {
            apr_status_t crv = svc_auth_confirm(ctx);
            if (crv != APR_SUCCESS) {
                rv = crv;
            }
        }
        svc_glue_ctx_release(ctx);
        if (rv != SVC_ERESTART) {
            allowed = !(rv == SVC_EPROBLEM && ctx->problem && ctx->problem->status < 500);
            break;
        }
    }
    apr_pool_destroy(tp);
    return allowed;
}

static void wake_cb(void *baton)
{
    sse_stream *st = baton;

    apr_atomic_set32(&st->wake_pending, 0);
    if (!enter(st)) {
        return;
    }
    if (st->ending) {
        leave(st);
        return;
    }
    if (apr_atomic_read32(&child_stopping) || deliver(st)) {
        finish(st);
    }
    leave(st);
}

static void beat_cb(void *baton)
{
    sse_stream *st = baton;
    int done = 0;

    if (!enter(st)) {
        return;
    }
    ap_log_rerror(APLOG_MARK, APLOG_TRACE2, 0, st->r, "event stream %pp: heartbeat", st);
    if (st->ending) {
        /* A scheduled end (see finish). */
        end_stream(st);
        leave(st);
        return;
    }
    apr_brigade_puts(st->bb, NULL, NULL, ": heartbeat\n\n");
    done = apr_atomic_read32(&child_stopping) || flush(st->r, st->bb) != APR_SUCCESS;
    if (!done && apr_time_now() >= st->next_recheck) {
        st->next_recheck = apr_time_now() + SSE_RECHECK;
        done = !still_allowed(st);
    }
    if (!done) {
        /* Cheap when the hub has woken it already; a catch-up while the hub
         * is not connected. */
        done = deliver(st);
    }
    if (done) {
        finish(st);
    }
    else {
        apr_atomic_inc32(&st->refs);
        if (ap_mpm_register_timed_callback(SSE_HEARTBEAT, beat_cb, st) != APR_SUCCESS) {
            apr_atomic_dec32(&st->refs);
            end_stream(st);
        }
    }
    leave(st);
}

/* ------------------------------------------------------------------------
 * The start of a stream, on the worker that took the request
 */

static int stream_refused(request_rec *r, svc_ctx_t *ctx, int status, const char *code,
                          const char *detail)
{
    ctx->stream = NULL;
    svc_glue_ctx_release(ctx);
    svc_ctx_render_problem(ctx, svc_ctx_problem(ctx, svc_fail(ctx, status, code, "%s", detail)));
    return svc_glue_respond(ctx, r);
}

int svc_sse_begin(request_rec *r, svc_ctx_t *ctx)
{
    svc_server_conf *sc = ap_get_module_config(r->server->module_config, &svc_module);
    const svc_stream_t *spec = ctx->stream;
    apr_bucket_brigade *bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    apr_int64_t last = spec->after;
    sse_stream *st;
    sse_hub *hub;
    int final = 0;
    apr_status_t rv;

    if (!mpm_is_async || !sc->db_conninfo || !child_pool) {
        return stream_refused(r, ctx, 503, "streams_unavailable",
                              "Event streams need httpd's event MPM and DBDParams; this "
                              "server cannot hold them open.");
    }
    svc_glue_write_head(ctx, r, 200, "text/event-stream; charset=utf-8");
    /* Proxies in front (nginx, some load balancers) must not buffer it. */
    apr_table_setn(r->err_headers_out, "X-Accel-Buffering", "no");
    if (r->header_only) {
        svc_glue_ctx_release(ctx);
        return OK;
    }
    apr_brigade_printf(bb, NULL, NULL, "retry: %d\n\n", SSE_RETRY_MS);
    rv = flush(r, bb);
    if (rv == APR_SUCCESS) {
        rv = replay(r, ctx, r->pool, bb, spec->org_id, spec->run_id, spec->until_run_ends,
                    &last, &final);
    }
    /* Idle streams hold no pooled connection. */
    svc_glue_ctx_release(ctx);
    if (rv != APR_SUCCESS || final || r->connection->aborted) {
        /* Done (the run is over) or the client left: an ordinary ending. */
        return OK;
    }
    hub = hub_for(r->server, sc->db_conninfo);
    if (!hub || !(st = calloc(1, sizeof(*st)))) {
        return OK;
    }
    if (pthread_mutex_init(&st->lock, NULL) != 0) {
        free(st);
        return OK;
    }
    st->r = r;
    st->c = r->connection;
    st->hub = hub;
    st->run_id = spec->run_id;
    st->until_run_ends = spec->until_run_ends;
    st->last_id = last;
    st->route = ctx->route;
    st->params = ctx->params;
    st->bb = bb;
    st->suspended_at = apr_time_now();
    st->next_recheck = apr_time_now() + SSE_RECHECK;
    /* The hub's reference, and the heartbeat's and a first wake-up's: what
     * committed between the replay and now is sent at once. */
    apr_atomic_set32(&st->refs, 3);
    apr_atomic_set32(&st->wake_pending, 1);

    apr_thread_mutex_lock(hub->lock);
    st->org = hub_org_get(hub, spec->org_id);
    st->next = st->org->streams;
    if (st->next) {
        st->next->prev = st;
    }
    st->org->streams = st;
    apr_thread_mutex_unlock(hub->lock);

    /* Callbacks wait for r->invoke_mtx, which httpd holds until this
     * handler has returned. */
    if (ap_mpm_register_timed_callback(SSE_HEARTBEAT, beat_cb, st) != APR_SUCCESS) {
        apr_atomic_dec32(&st->refs);
    }
    if (ap_mpm_register_timed_callback(0, wake_cb, st) != APR_SUCCESS) {
        apr_atomic_dec32(&st->refs);
    }
    return SUSPENDED;
}

/* ------------------------------------------------------------------------
 * Child life
 */

void svc_sse_child_init(apr_pool_t *pchild, server_rec *s)
{
    int async = 0;

    if (ap_mpm_query(AP_MPMQ_IS_ASYNC, &async) == APR_SUCCESS && async) {
        mpm_is_async = 1;
    }
    if (apr_thread_mutex_create(&hubs_lock, APR_THREAD_MUTEX_DEFAULT, pchild) == APR_SUCCESS) {
        child_pool = pchild;
    }
}

void svc_sse_stopping(void)
{
    sse_hub *hub;

    apr_atomic_set32(&child_stopping, 1);
    if (!hubs_lock) {
        return;
    }
    /* Every stream ends at its next callback; make that now. */
    apr_thread_mutex_lock(hubs_lock);
    for (hub = hubs; hub; hub = hub->next) {
        apr_thread_mutex_lock(hub->lock);
        wake_all(hub);
        apr_thread_mutex_unlock(hub->lock);
    }
    apr_thread_mutex_unlock(hubs_lock);
}
