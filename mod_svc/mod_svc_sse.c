/*
 * mod_svc_sse.c: live event streams (text/event-stream) that hold no worker
 * thread while they wait, never block one while they write, and let go of
 * a client that left or stopped reading.
 *
 * A stream route's handler only authorizes and says what to stream
 * (ctx->stream, kernel/svc_ctx.h). Here the stream takes a place among the
 * streams its user may hold (SvcStreamLimit, counted in PostgreSQL across
 * nodes: 429 beyond it), replays the event log after the client's
 * Last-Event-ID on the worker that took the request, gives the database
 * connection back, and then suspends the connection (the handler returns
 * SUSPENDED, the event MPM's mechanism): the worker thread goes back to the
 * pool, and the stream lives on as a small record that callbacks, run on
 * any worker, pick up when there is something to do:
 *
 *  - a wake-up, when an event of its org commits. Each child has one hub
 *    (kernel/svc_hub.c): a thread with one LISTEN connection of its own
 *    (never a pooled one), which reads every new event once into a ring of
 *    recent events and calls back here for each stream of that org; the
 *    callback schedules an immediate callback of the MPM for the stream;
 *  - a wake-up from the child's watcher: a thread with an epoll set of
 *    every stream's socket, which sees at once a client that closed its end
 *    (the stream ends then, not at its next write) and a socket that can
 *    take more of a backlog;
 *  - a heartbeat every 15 s (an SSE comment; the first after a random 1
 *    to 15 s, so that streams opened together do not beat together), which
 *    drops a client that took nothing of its backlog for a whole interval,
 *    and every 30 s checks the caller's access again: a revoked token, an
 *    ended session or a removed member ends the stream.
 *
 * Writing never blocks: from its start a stream's bytes go through a filter
 * of ours right above the core's network filter (after TLS), which writes
 * what the socket takes without waiting and keeps the rest. A stream stops
 * framing events while SSE_BACKLOG bytes wait, and goes on (from the ring,
 * or the table when it fell behind) when the watcher says the socket can
 * take more; so a client that reads slowly costs a bounded backlog, and one
 * that does not read at all is dropped, never a worker that waits for it.
 *
 * A stream that fell behind the ring, or whose org the hub has not covered
 * since it (re)connected, reads the log from the database instead, through
 * a pooled connection held only for that read. Event ids are in commit
 * order per org (sql/006_events.sql), so "after the last id sent" never
 * skips or repeats an event. The hub also keeps the books of the child's
 * stream places: it deletes those given back, confirms the rest, and gives
 * back all it holds when the child exits.
 *
 * What is here is what touches httpd: the MPM's timed callbacks, the
 * watcher (sockets of suspended connections), the network filter that
 * writes without waiting, the request handler, and the child's life.
 *
 * A stream does not keep its request: a second after it was suspended
 * (SSE_SETTLE) the request is logged and its pool destroyed
 * (release_request), which halves what an idle stream costs (two of four
 * 8 KiB blocks: what httpd put in the request's pool, and the response
 * head). The stream then lives on its connection alone: it frames its own
 * chunks, checks access with the credential it kept, and holds its place.
 *
 * What httpd 2.4 cannot do: give a suspended connection back to the MPM.
 * So a stream that ends writes its last bytes (the body's last chunk) and
 * then releases the connection itself, by destroying its pool: that closes
 * the socket and settles the MPM's connection counts, as the MPM's own
 * close would. Clients reconnect with Last-Event-ID (the stream sends
 * `retry:`); every stream ends when its child stops.
 */
#include "mod_svc_glue.h"

#include <http_core.h>
#include <http_protocol.h>
#include <http_request.h>
#include <ap_mpm.h>
#include <mpm_common.h>
#include <apr_allocator.h>
#include <apr_atomic.h>
#include <apr_portable.h>
#include <apr_strings.h>
#include <apr_thread_mutex.h>
#include <apr_thread_proc.h>

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

APLOG_USE_MODULE(svc);

#define SSE_HEARTBEAT   apr_time_from_sec(15)
#define SSE_RECHECK     apr_time_from_sec(30)
/* Rows per read of the event log. */
#define SSE_BATCH       500
/* A stream ending right after it was suspended waits this long before it
 * releases its connection, and every stream this long before it lets its
 * request go: the worker that suspended it may still be returning through
 * the MPM, which hands the request to its suspend hooks (see the note
 * above). */
#define SSE_SETTLE      apr_time_from_sec(1)
/* What the client's EventSource waits before reconnecting, in ms, and
 * the stream's first bytes that say so. */
#define SSE_RETRY_MS    2000
#define SSE_RETRY_LINE  "retry: " APR_STRINGIFY(SSE_RETRY_MS) "\n\n"
#define SSE_BEAT_LINE   ": heartbeat\n\n"
/* One event: its id, kind and data (one line of JSON). */
#define SSE_FRAME       "id: %" APR_INT64_T_FMT "\nevent: %s\ndata: %s\n\n"
/* Set-aside bytes up to this size are copied into the bucket allocator's
 * own block (APR keeps small pieces there); larger ones into a buffer of
 * their size (see net_out). */
#define SSE_SMALL_COPY  128
/* Bytes a stream lets wait for its client before it frames no more events;
 * it goes on when the socket has taken them. */
#define SSE_BACKLOG     (64 * 1024)
/* How often the watcher makes the MPM's listener look at its timers. */
#define SSE_TICK        apr_time_from_sec(1)
/* Streams of a child that may catch up from the table at once: each holds a
 * worker and a pooled connection meanwhile, and a burst of events must not
 * take every one of them from the requests. The others wait their turn, in
 * order, without a worker (see table_enter). */
#define SSE_TABLE_READERS 4
/* What the connection's allocator of a stream keeps of the memory freed on
 * it: nothing (APR frees a block whose size is above this; 0 would mean
 * "everything"). A stream's frames, heartbeats and set-aside bytes never
 * take a block of the connection's allocator (see frame and net_out), so
 * what is freed on it (the request context's pool, the request's own
 * pool, later an access check's or a catch-up's pool) is rare and goes
 * back to malloc, shared by every stream, instead of 8 KiB kept by each
 * for as long as it lives (httpd's MaxMemFree, 2 MiB or unlimited by
 * default, suits connections that come and go). */
#define SSE_MAX_FREE    1
/* What the child's scratch allocator keeps of the memory freed on it: the
 * pools of access checks and catch-ups (scratch_pool), a few 8 KiB blocks
 * for each of the workers running one at a time. */
#define SSE_SCRATCH_KEEP (512 * 1024)
/* What a client refused for holding too many streams waits, in seconds. */
#define SSE_LIMIT_RETRY "15"

typedef struct sse_hub sse_hub;
typedef struct sse_stream sse_stream;

/* The child's hub for one database (kernel/svc_hub.h), in the child's list. */
struct sse_hub {
    const char *conninfo;
    svc_hub_t *hub;
    sse_hub *next;
};

/*
 * The stream's writer: a connection filter right above the core's network
 * filter (below TLS), which writes what the socket takes without waiting
 * and keeps the rest in `backlog`. Once detached (the stream ends, or the
 * request turned out not to be a suspended stream) it passes everything on
 * to the core as any response is written.
 */
typedef struct {
    apr_socket_t *sock;
    apr_bucket_brigade *backlog;
    apr_size_t pending;         /* bytes in backlog */
    apr_uint64_t written;       /* bytes the socket took, in all */
    int detached;
    int failed;                 /* the socket failed: the client is gone */
} sse_net;

/* A place among the streams its caller holds (take_place), given back
 * when the request's pool goes, or by the stream once it has the place. */
typedef struct {
    svc_hub_t *hub;
    apr_int64_t id;
} sse_place;

/*
 * A stream's record outlives its request and connection (a heartbeat may
 * still be scheduled when it ends), so it is malloc'd and freed by the last
 * reference; the lock is a plain pthread mutex in it, because a pool of its
 * own would cost an allocator and 8 KiB per stream.
 */
struct sse_stream {
    pthread_mutex_t lock;       /* callbacks of this stream, one at a time */
    volatile apr_uint32_t refs; /* the hub's subscription + pending callbacks */
    volatile apr_uint32_t wake_pending;
    volatile apr_uint32_t gone; /* the watcher saw the client close its end */
    int ended;                  /* under lock: c is gone */
    int ending;                 /* under lock: end at the next callback */
    request_rec *r;             /* until the request is let go (release_request) */
    conn_rec *c;
    server_rec *s;              /* the request's (virtual) server */
    svc_hub_t *hub;
    sse_place *place;           /* in r's pool while the request has the place */
    apr_int64_t place_id;       /* the stream's once the request is gone; 0: none */
    int chunked;                /* httpd chunked the body: the stream goes on so */
    int keeps_request;          /* an output filter of the operator's: never let go */
    svc_hub_sub_t sub;          /* to its org's new events (the hub's) */
    sse_net *net;
    int fd;                     /* the socket's, for the watcher */
    apr_uint32_t slot, gen;     /* the watcher's: where it is registered */
    const char *run_id;         /* these strings in tail */
    const char *authz;          /* the request's Authorization header, for the recheck */
    const char *session;        /* its session cookie's value, for the recheck */
    const char *client_ip;
    int until_run_ends;
    const char *target_id;      /* a deploy agent's work stream: its target */
    const char *recheck_prefix; /* events of these kinds have access checked at once */
    apr_int64_t last_id;
    /* The mark: when the last whole heartbeat interval ended (the start,
     * at first), and net->written then. A client that took nothing of its
     * backlog since, for a whole interval, is not reading. */
    apr_uint64_t written_at_beat;
    apr_time_t marked_at;
    apr_time_t suspended_at;
    apr_time_t next_recheck;
    const svc_route_t *route;
    const char *params;         /* the route's parameters: nparams keys and values, in tail */
    int nparams;
    apr_size_t tail_used;       /* bytes of params filled (tail_fill) */
    apr_size_t tail_len;        /* bytes of tail (wiped before the record is freed) */
    apr_bucket_brigade *bb;
    sse_stream *tprev, *tnext; /* waiting for the table (table_lock) */
    int table_waiting;
    int recheck_first;          /* check access at the first callback (svc_sse_begin) */
    /* What the stream keeps of its request's context, which goes when the
     * stream is suspended (svc_handler), and of the request, which goes a
     * moment later (release_request): NUL-terminated strings. */
    char tail[];
};

/*
 * The child's watcher: one thread, one epoll set of every stream's socket.
 * A stream is registered one-shot for the peer closing its end, and for the
 * socket taking more while the stream has a backlog; each event wakes the
 * stream, which arms the registration again from its callback. Events name
 * a slot and its generation, so one that arrives for a stream that has
 * ended meanwhile finds the slot empty or reused and is ignored.
 */
typedef struct {
    int epfd;
    pthread_mutex_t lock;       /* the slots */
    apr_thread_t *thread;
    sse_stream **slots;
    apr_uint32_t *gens;
    apr_uint32_t *free_slots;
    apr_uint32_t nslots, cap, nfree;
    volatile apr_uint32_t streams;
    volatile apr_uint32_t stopping;
} sse_watch;

/* The child's hubs (one per database the servers stream from), its watcher
 * and its state. Set in child_init or under hubs_lock, read by request
 * threads afterwards. */
static sse_hub *hubs;
static sse_watch *watcher;
static apr_thread_mutex_t *hubs_lock;
static apr_pool_t *child_pool;
/* The parent of access checks' and catch-ups' pools (scratch_pool). */
static apr_pool_t *scratch_root;
static const char *holder;      /* this child, as event_streams.holder names it */
static volatile apr_uint32_t child_stopping;
/* Streams reading the table now, and those waiting their turn. */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static int table_readers;
static sse_stream *table_head, *table_tail;
static int mpm_is_async;
static ap_filter_rec_t *net_filter;

static void wake_cb(void *baton);
static void beat_cb(void *baton);

/*
 * Asks for a callback as soon as a worker is free. The event MPM of httpd
 * 2.4 wakes its listener for a new timer only when the timer is due earlier
 * than the earliest it knows of, and that value goes stale: after a socket
 * woke the listener without a due timer, it polls with no timeout at all,
 * and a timer due "now" is then not earlier than the stale value, so
 * nothing wakes the listener until a socket does. A child whose connections
 * are all suspended streams and that accepts no more (at its connection
 * limit) never gets one, and every wake-up, heartbeat and end of its
 * streams waits forever: the node that never let go of its clients. A
 * timer due at the start of the epoch is earlier than anything the listener
 * can hold, so registering one always wakes it; it then runs every due
 * timer and takes its next timeout from the first that is not due.
 */
static apr_status_t call_soon(ap_mpm_callback_fn_t *cb, void *baton)
{
    return ap_mpm_register_timed_callback(1 - apr_time_now(), cb, baton);
}

/* ------------------------------------------------------------------------
 * The writer
 */

/* Drops the first n bytes of the backlog (written). */
static void net_consume(sse_net *net, apr_size_t n)
{
    apr_bucket *b;

    while (!APR_BRIGADE_EMPTY(net->backlog)) {
        b = APR_BRIGADE_FIRST(net->backlog);
        if (b->length > n) {
            if (n) {
                apr_bucket_split(b, n);
                net->pending -= n;
                apr_bucket_delete(b);
            }
            return;
        }
        n -= b->length;
        net->pending -= b->length;
        apr_bucket_delete(b);
    }
}

/* Writes what the socket takes now. APR_SUCCESS also when some is left;
 * anything else: the client is gone. */
static apr_status_t net_write(sse_net *net)
{
    apr_status_t rv = APR_SUCCESS;

    if (net->failed) {
        return APR_ECONNABORTED;
    }
    while (net->pending && rv == APR_SUCCESS) {
        struct iovec vec[64];
        apr_bucket *b;
        apr_size_t n = 0;
        int nv = 0;

        for (b = APR_BRIGADE_FIRST(net->backlog);
             b != APR_BRIGADE_SENTINEL(net->backlog) && nv < 64; b = APR_BUCKET_NEXT(b)) {
            const char *data;
            apr_size_t len;

            if ((rv = apr_bucket_read(b, &data, &len, APR_BLOCK_READ)) != APR_SUCCESS) {
                break;
            }
            if (len) {
                vec[nv].iov_base = (void *)data;
                vec[nv].iov_len = len;
                nv++;
            }
        }
        if (rv != APR_SUCCESS || !nv) {
            break;
        }
        rv = apr_socket_sendv(net->sock, vec, nv, &n);
        net->written += n;
        net_consume(net, n);
    }
    if (APR_STATUS_IS_EAGAIN(rv)) {
        return APR_SUCCESS;
    }
    if (rv != APR_SUCCESS) {
        net->failed = 1;
    }
    return rv;
}

/*
 * Keeps a bucket for later, as apr_bucket_setaside does, but a transient
 * bucket's bytes (the chunk filter's sizes; with TLS, mod_ssl's records of
 * every frame) beyond a few go into a malloc'd buffer of their size, freed
 * with the bucket: APR would copy them into a block of at least 8 KiB of
 * the connection's allocator, taken and freed again for every frame, which
 * the allocator would then either keep (8 KiB a stream, for as long as it
 * lives) or malloc and free each time (see SSE_MAX_FREE). Our own frames
 * are heap buckets already, kept as they are.
 */
static apr_status_t net_setaside(apr_bucket *b, apr_pool_t *p)
{
    apr_status_t rv;

    if (APR_BUCKET_IS_TRANSIENT(b) && b->length > SSE_SMALL_COPY) {
        const char *data;
        apr_size_t len;
        char *copy;

        if ((rv = apr_bucket_read(b, &data, &len, APR_BLOCK_READ)) != APR_SUCCESS) {
            return rv;
        }
        if ((copy = malloc(len)) != NULL) {
            memcpy(copy, data, len);
            apr_bucket_heap_make(b, copy, len, free);
            return APR_SUCCESS;
        }
    }
    rv = apr_bucket_setaside(b, p);
    return rv == APR_ENOTIMPL ? APR_SUCCESS : rv;
}

static apr_status_t net_out(ap_filter_t *f, apr_bucket_brigade *bb)
{
    sse_net *net = f->ctx;
    apr_status_t rv;

    if (!net->detached && net->failed) {
        apr_brigade_cleanup(bb);
        return APR_ECONNABORTED;
    }
    while (!net->detached && !APR_BRIGADE_EMPTY(bb)) {
        apr_bucket *b = APR_BRIGADE_FIRST(bb);

        if (APR_BUCKET_IS_FLUSH(b)) {
            /* Everything is written as soon as it comes anyway. */
            apr_bucket_delete(b);
            continue;
        }
        if (APR_BUCKET_IS_METADATA(b)) {
            /* The end of the request (EOS, EOR): the core writes it, after
             * what is left (the stream detaches before; this is a guard). */
            net->detached = 1;
            break;
        }
        if (b->length == (apr_size_t)-1) {
            const char *data;
            apr_size_t len;
            if ((rv = apr_bucket_read(b, &data, &len, APR_BLOCK_READ)) != APR_SUCCESS) {
                apr_brigade_cleanup(bb);
                return rv;
            }
        }
        if ((rv = net_setaside(b, f->c->pool)) != APR_SUCCESS) {
            apr_brigade_cleanup(bb);
            return rv;
        }
        APR_BUCKET_REMOVE(b);
        APR_BRIGADE_INSERT_TAIL(net->backlog, b);
        net->pending += b->length;
    }
    if (net->detached) {
        if (!APR_BRIGADE_EMPTY(net->backlog)) {
            APR_BRIGADE_PREPEND(bb, net->backlog);
            net->pending = 0;
        }
        return ap_pass_brigade(f->next, bb);
    }
    if ((rv = net_write(net)) != APR_SUCCESS) {
        f->c->aborted = 1;
    }
    return rv;
}

/* Puts the writer under the request's output (after TLS); the socket
 * becomes non-blocking for the stream's life. NULL where there is no socket
 * of our own to write (an HTTP/2 stream). */
static sse_net *net_attach(request_rec *r)
{
    conn_rec *c = r->connection;
    apr_socket_t *sock = ap_get_conn_socket(c);
    sse_net *net;

    if (!net_filter || !sock || c->master) {
        return NULL;
    }
    net = apr_pcalloc(c->pool, sizeof(*net));
    net->sock = sock;
    net->backlog = apr_brigade_create(c->pool, c->bucket_alloc);
    apr_socket_timeout_set(sock, 0);
    ap_add_output_filter_handle(net_filter, net, r, c);
    return net;
}

/* From now on the core writes (what is left first), with this socket timeout:
 * the server's for a request that goes on as any other, 0 for a stream
 * whose connection closes now (its last bytes go if the socket takes them). */
static void net_detach(sse_net *net, apr_interval_time_t timeout)
{
    net->detached = 1;
    apr_socket_timeout_set(net->sock, timeout);
}

/* ------------------------------------------------------------------------
 * Writing events
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

/*
 * Appends one event in the SSE format (data is one line of JSON); about how
 * many bytes that took. The frame is a malloc'd buffer of its own size in a
 * heap bucket that frees it once written: a few hundred bytes, where the
 * brigade's own buffer would be a block of at least 8 KiB of the
 * connection's allocator (see SSE_MAX_FREE). Without memory for that, it
 * goes the brigade's way.
 */
static apr_size_t frame(apr_bucket_brigade *bb, apr_int64_t id, const char *kind,
                        const char *data)
{
    apr_size_t klen = strlen(kind), dlen = strlen(data);
    /* "id: ", 20 digits at most, "\nevent: ", "\ndata: ", "\n\n" and the NUL. */
    apr_size_t cap = 4 + 20 + 8 + klen + 7 + dlen + 2 + 1;
    char *buf = malloc(cap);

    if (buf) {
        apr_size_t n = (apr_size_t)apr_snprintf(buf, cap, SSE_FRAME, id, kind, data);
        APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_heap_create(buf, n, free, bb->bucket_alloc));
    }
    else {
        apr_brigade_printf(bb, NULL, NULL, SSE_FRAME, id, kind, data);
    }
    return 40 + klen + dlen;
}

/*
 * Sends what the brigade holds, now (without waiting for the client: the
 * writer keeps what the socket does not take). Anything but APR_SUCCESS:
 * the client is gone. Through the request's filters while the stream has
 * its request (httpd's chunk filter frames the body); once the request is
 * gone (release_request), straight to the connection's, as one chunk
 * framed here if httpd chunked the body (not for an HTTP/1.0 client, whose
 * body ends with the connection).
 */
static apr_status_t flush(sse_stream *st, apr_bucket_brigade *bb)
{
    conn_rec *c = st->c;
    ap_filter_t *out = st->r ? st->r->output_filters : c->output_filters;
    apr_status_t rv;
    apr_off_t len = 0;

    if (!st->r && st->chunked && (rv = apr_brigade_length(bb, 1, &len)) != APR_SUCCESS) {
        apr_brigade_cleanup(bb);
        return rv;
    }
    if (len > 0) {
        char size[24];
        apr_size_t n = (apr_size_t)apr_snprintf(size, sizeof(size), "%" APR_UINT64_T_HEX_FMT
                                                CRLF, (apr_uint64_t)len);

        /* A copy from the bucket allocator's small pieces (NULL: no free
         * function); the end of the chunk is a constant. */
        APR_BRIGADE_INSERT_HEAD(bb, apr_bucket_heap_create(size, n, NULL, c->bucket_alloc));
        APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_immortal_create(CRLF, 2, c->bucket_alloc));
    }
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_flush_create(c->bucket_alloc));
    rv = ap_pass_brigade(out, bb);
    apr_brigade_cleanup(bb);
    if (rv == APR_SUCCESS && c->aborted) {
        rv = APR_ECONNABORTED;
    }
    return rv;
}

/* Where a replay or a delivery stopped. */
typedef struct {
    apr_size_t budget;          /* bytes it may still frame */
    int more;                   /* it stopped at the budget: more is waiting */
    int final;                  /* a run stream sent its run's final status */
    int later;                  /* queued for the table: woken in its turn */
    int recheck;                /* it sent an event that may have changed access */
} sse_pass;

/* Whether the event of this kind makes the stream check its caller's access
 * now (svc_stream_t.recheck_prefix). */
static int asks_recheck(const char *prefix, const char *kind)
{
    return prefix && strncmp(kind, prefix, strlen(prefix)) == 0;
}

/* Writes the events (an array of svc_event_t) the stream has not sent,
 * within the pass's budget, and flushes them. */
static apr_status_t send_events(sse_stream *st, const apr_array_header_t *events,
                                sse_pass *pass)
{
    int i, wrote = 0;

    for (i = 0; i < events->nelts; i++) {
        const svc_event_t *e = &APR_ARRAY_IDX(events, i, svc_event_t);
        apr_size_t n;

        if (e->id <= st->last_id) {
            continue;
        }
        if (!pass->budget) {
            pass->more = 1;
            break;
        }
        n = frame(st->bb, e->id, e->kind, e->data);
        pass->budget = n < pass->budget ? pass->budget - n : 0;
        st->last_id = e->id;
        wrote = 1;
        if (asks_recheck(st->recheck_prefix, e->kind)) {
            pass->recheck = 1;
        }
        if (st->until_run_ends && is_final_status(e->kind, e->data)) {
            pass->final = 1;
            break;
        }
    }
    return wrote ? flush(st, st->bb) : APR_SUCCESS;
}

/*
 * Reads the stream's events after *plast from the table and sends them,
 * batch by batch, through a pooled connection lent to a context in p, until
 * it has caught up, spent the pass's budget, or the socket stopped taking
 * what it wrote (the rest comes when it does). The batches are read into
 * p, which goes right after (the request context's pool at the start of a
 * stream, a wake-up's own later): what they take is bounded by the pass's
 * budget, and a pool of their own would be one more 8 KiB block taken and
 * freed per stream.
 */
static apr_status_t replay(sse_stream *st, svc_ctx_t *ctx, apr_pool_t *p, const char *org_id,
                           sse_pass *pass)
{
    apr_array_header_t *events;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    for (;;) {
        apr_size_t asked = pass->budget ? pass->budget : 1, got = 0;
        int i;

        rv = svc_events_after(db, p, org_id, st->run_id, st->target_id, st->last_id, SSE_BATCH,
                              asked, &events);
        if (rv != APR_SUCCESS || !events->nelts) {
            break;
        }
        for (i = 0; i < events->nelts; i++) {
            got += strlen(APR_ARRAY_IDX(events, i, svc_event_t).data);
        }
        rv = send_events(st, events, pass);
        if (rv != APR_SUCCESS || pass->final || pass->more) {
            break;
        }
        /* Fewer rows than asked, and not cut by the byte budget (a cut
         * read's data reaches it): caught up. */
        if (events->nelts < SSE_BATCH && got < asked) {
            break;
        }
        if (!pass->budget || st->net->pending) {
            /* Spent, or the client has not taken the last batch yet. */
            pass->more = 1;
            break;
        }
    }
    return rv;
}

/* ------------------------------------------------------------------------
 * The hub (kernel/svc_hub.c) and what it wakes
 */

/* Schedules an immediate callback for the stream, unless one is pending.
 * Called while the stream is subscribed to the hub or registered with the
 * watcher (under its lock), so it lives. */
static void wake(sse_stream *st)
{
    if (apr_atomic_cas32(&st->wake_pending, 1, 0) == 0) {
        apr_atomic_inc32(&st->refs);
        if (call_soon(wake_cb, st) != APR_SUCCESS) {
            apr_atomic_dec32(&st->refs);
            apr_atomic_set32(&st->wake_pending, 0);
        }
    }
}

/* The hub's wake callback: sub is the one in a stream's record. */
static void hub_wake(void *baton, svc_hub_sub_t *sub)
{
    wake((sse_stream *)((char *)sub - offsetof(sse_stream, sub)));
}

static void hub_log(void *baton, int level, const char *msg)
{
    ap_log_error(APLOG_MARK, level, 0, baton, "%s", msg);
}

/* The child's hub for this database, started on first use. */
static svc_hub_t *hub_for(server_rec *s, const char *conninfo)
{
    sse_hub *h;

    apr_thread_mutex_lock(hubs_lock);
    for (h = hubs; h; h = h->next) {
        if (strcmp(h->conninfo, conninfo) == 0) {
            break;
        }
    }
    if (!h) {
        svc_hub_conf_t conf = { 0 };

        h = apr_pcalloc(child_pool, sizeof(*h));
        h->conninfo = apr_pstrdup(child_pool, conninfo);
        conf.conninfo = h->conninfo;
        conf.holder = holder;
        conf.wake = hub_wake;
        conf.log = hub_log;
        conf.log_baton = s;
        /* Stopped (and its places given back) when the child's pool goes. */
        if (svc_hub_create(&h->hub, child_pool, &conf) != APR_SUCCESS
            || svc_hub_start(h->hub) != APR_SUCCESS) {
            h = NULL;
        }
        else {
            h->next = hubs;
            hubs = h;
        }
    }
    apr_thread_mutex_unlock(hubs_lock);
    return h ? h->hub : NULL;
}

/* ------------------------------------------------------------------------
 * The watcher
 */

/* A callback that only makes the listener run the timers that are due. */
static void tick_cb(void *baton)
{
}

static void *APR_THREAD_FUNC watch_main(apr_thread_t *thd, void *data)
{
    sse_watch *w = data;
    apr_time_t last_tick = 0;

    while (!apr_atomic_read32(&w->stopping)) {
        struct epoll_event evs[256];
        apr_time_t now;
        int i, n = epoll_wait(w->epfd, evs, 256, 250);

        if (n > 0) {
            pthread_mutex_lock(&w->lock);
            for (i = 0; i < n; i++) {
                apr_uint32_t slot = (apr_uint32_t)(evs[i].data.u64 & 0xffffffffu);
                apr_uint32_t gen = (apr_uint32_t)(evs[i].data.u64 >> 32);
                sse_stream *st;

                if (slot >= w->nslots || w->gens[slot] != gen || !(st = w->slots[slot])) {
                    continue;   /* ended meanwhile */
                }
                if (evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                    apr_atomic_set32(&st->gone, 1);
                }
                wake(st);
            }
            pthread_mutex_unlock(&w->lock);
        }
        /*
         * While streams are suspended, make the listener look at its timers
         * every second (call_soon says why it may not otherwise), so no
         * heartbeat waits past its time by more than that.
         */
        now = apr_time_now();
        if (apr_atomic_read32(&w->streams) && now - last_tick >= SSE_TICK) {
            last_tick = now;
            call_soon(tick_cb, NULL);
        }
    }
    return NULL;
}

static apr_status_t watch_stop(void *data)
{
    sse_watch *w = data;
    apr_status_t trv;

    apr_atomic_set32(&w->stopping, 1);
    apr_thread_join(&trv, w->thread);
    close(w->epfd);
    pthread_mutex_destroy(&w->lock);
    free(w->slots);
    free(w->gens);
    free(w->free_slots);
    return APR_SUCCESS;
}

/* The child's watcher, started with its first stream. */
static sse_watch *watch_get(void)
{
    sse_watch *w;

    apr_thread_mutex_lock(hubs_lock);
    if (!watcher) {
        w = apr_pcalloc(child_pool, sizeof(*w));
        w->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (w->epfd >= 0 && pthread_mutex_init(&w->lock, NULL) == 0) {
            if (apr_thread_create(&w->thread, NULL, watch_main, w, child_pool)
                    == APR_SUCCESS) {
                apr_pool_cleanup_register(child_pool, w, watch_stop, apr_pool_cleanup_null);
                watcher = w;
            }
            else {
                pthread_mutex_destroy(&w->lock);
                close(w->epfd);
            }
        }
        else if (w->epfd >= 0) {
            close(w->epfd);
        }
    }
    w = watcher;
    apr_thread_mutex_unlock(hubs_lock);
    return w;
}

static apr_uint32_t watch_events(const sse_stream *st)
{
    return EPOLLRDHUP | EPOLLONESHOT | (st->net->pending ? EPOLLOUT : 0);
}

/* Registers the stream's socket; not APR_SUCCESS when it cannot be watched. */
static apr_status_t watch_add(sse_watch *w, sse_stream *st)
{
    struct epoll_event ev;
    apr_uint32_t slot;

    pthread_mutex_lock(&w->lock);
    if (w->nfree) {
        slot = w->free_slots[--w->nfree];
    }
    else {
        if (w->nslots == w->cap) {
            apr_uint32_t cap = w->cap ? w->cap * 2 : 256;
            sse_stream **slots = realloc(w->slots, cap * sizeof(*slots));
            apr_uint32_t *gens = slots ? realloc(w->gens, cap * sizeof(*gens)) : NULL;
            apr_uint32_t *fr = gens ? realloc(w->free_slots, cap * sizeof(*fr)) : NULL;
            if (slots) {
                w->slots = slots;
            }
            if (gens) {
                w->gens = gens;
            }
            if (!fr) {
                pthread_mutex_unlock(&w->lock);
                return APR_ENOMEM;
            }
            w->free_slots = fr;
            w->cap = cap;
        }
        slot = w->nslots++;
        w->gens[slot] = 0;
    }
    w->gens[slot]++;
    w->slots[slot] = st;
    st->slot = slot;
    st->gen = w->gens[slot];
    ev.events = watch_events(st);
    ev.data.u64 = ((apr_uint64_t)st->gen << 32) | slot;
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, st->fd, &ev) != 0) {
        apr_status_t rv = errno;
        w->slots[slot] = NULL;
        w->free_slots[w->nfree++] = slot;
        pthread_mutex_unlock(&w->lock);
        return rv;
    }
    apr_atomic_inc32(&w->streams);
    pthread_mutex_unlock(&w->lock);
    return APR_SUCCESS;
}

/* Arms the one-shot registration again, after the stream's callback. */
static void watch_arm(sse_stream *st)
{
    struct epoll_event ev;

    ev.events = watch_events(st);
    ev.data.u64 = ((apr_uint64_t)st->gen << 32) | st->slot;
    epoll_ctl(watcher->epfd, EPOLL_CTL_MOD, st->fd, &ev);
}

static void watch_del(sse_stream *st)
{
    sse_watch *w = watcher;

    pthread_mutex_lock(&w->lock);
    epoll_ctl(w->epfd, EPOLL_CTL_DEL, st->fd, NULL);
    w->slots[st->slot] = NULL;
    w->gens[st->slot]++;
    w->free_slots[w->nfree++] = st->slot;
    apr_atomic_dec32(&w->streams);
    pthread_mutex_unlock(&w->lock);
}

/* ------------------------------------------------------------------------
 * Streams
 */

/*
 * A turn at reading the table: 1 when the stream may read now; otherwise 0,
 * and the stream is queued and woken when a reader is done (it holds no
 * worker meanwhile).
 */
static int table_enter(sse_stream *st)
{
    int ok = 0;

    pthread_mutex_lock(&table_lock);
    if (table_readers < SSE_TABLE_READERS) {
        table_readers++;
        ok = 1;
    }
    else if (!st->table_waiting) {
        st->table_waiting = 1;
        st->tnext = NULL;
        st->tprev = table_tail;
        if (table_tail) {
            table_tail->tnext = st;
        }
        else {
            table_head = st;
        }
        table_tail = st;
    }
    pthread_mutex_unlock(&table_lock);
    return ok;
}

/* Takes the stream out of the queue; table_lock held. */
static void table_unqueue(sse_stream *st)
{
    if (st->tprev) {
        st->tprev->tnext = st->tnext;
    }
    else {
        table_head = st->tnext;
    }
    if (st->tnext) {
        st->tnext->tprev = st->tprev;
    }
    else {
        table_tail = st->tprev;
    }
    st->table_waiting = 0;
}

/* A reader is done: the first stream waiting gets its turn. (A queued
 * stream lives: it leaves the queue before it ends.) */
static void table_leave(void)
{
    pthread_mutex_lock(&table_lock);
    table_readers--;
    if (table_head) {
        sse_stream *next = table_head;
        table_unqueue(next);
        wake(next);
    }
    pthread_mutex_unlock(&table_lock);
}

/* Frees a record no callback can reach any more; the credentials it kept
 * for its access checks go first. */
static void stream_free(sse_stream *st)
{
    svc_wipe(st->tail, st->tail_len);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

static void unref(sse_stream *st)
{
    if (!apr_atomic_dec32(&st->refs)) {
        stream_free(st);
    }
}

/* The open streams' gauge (svc_metrics.h): one more from the head on,
 * one less when the request's pool goes (however the stream ends), or
 * when the stream ends after its request went. */
static apr_status_t stream_uncount(void *data)
{
    svc_metrics_stream(svc_metrics_current(), (svc_mstream_e)(apr_uintptr_t)data, -1);
    return APR_SUCCESS;
}

/* Which gauge counts the stream: a deploy agent's work stream, or an org's. */
static void *stream_kind(const sse_stream *st)
{
    return (void *)(apr_uintptr_t)(st->target_id ? SVC_MSTREAM_AGENT : SVC_MSTREAM_ORG);
}

static apr_status_t place_give(void *data)
{
    sse_place *pl = data;

    svc_hub_place_give(pl->hub, pl->id);
    return APR_SUCCESS;
}

/* The request's end gives the connection's allocator back the server's
 * MaxMemFree: the keep-alive requests after a stream that ended, and the
 * connections that later reuse this one's pool (the event MPM recycles it
 * with its allocator), are served as any other, not with every block
 * handed back to malloc. */
static apr_status_t max_free_restore(void *allocator)
{
    apr_allocator_max_free_set(allocator, ap_max_mem_free);
    return APR_SUCCESS;
}

/*
 * Whether the request's own output filters (those above the connection's)
 * only frame and count what the stream writes, so that writing below them
 * changes nothing on the wire. An operator's filter on the stream's type
 * (a transformation, a compression the stream did not turn off) would see
 * the first second of the stream and not the rest: such a stream keeps its
 * request for as long as it lives, as streams did before they let it go.
 */
static int plain_filters(sse_stream *st)
{
    static const char *const plain[] = { "chunk", "content_length", "http_outerror" };
    ap_filter_t *f;
    apr_size_t i;

    if (st->keeps_request) {
        return 0;
    }
    for (f = st->r->output_filters; f && f != st->c->output_filters; f = f->next) {
        for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
            if (strcasecmp(f->frec->name, plain[i]) == 0) {
                break;
            }
        }
        if (i == sizeof(plain) / sizeof(plain[0])) {
            ap_log_cerror(APLOG_MARK, APLOG_DEBUG, 0, st->c, "SVC0930: event stream %pp "
                          "keeps its request: output filter %s is configured for it",
                          st, f->frec->name);
            st->keeps_request = 1;
            return 0;
        }
    }
    return 1;
}

/*
 * Lets the request go while the stream goes on, on its connection: httpd
 * logs it (its access log line says how the stream started: status, the
 * bytes of its first second, a second or so of time) and destroys its
 * pool, two of the four 8 KiB blocks an idle stream held (what httpd and
 * the head put there). From now on the stream writes its chunks to the
 * connection's filters itself (flush), checks access with what it kept of
 * the request (still_allowed), and holds its place and gauge until it ends
 * (end_stream); the connection's allocator keeps nothing freed until it
 * goes with the connection's pool (it is that pool's own).
 *
 * Called with st->lock and r->invoke_mtx held, at a callback SSE_SETTLE
 * after the stream was suspended: the worker that suspended it has long
 * let go of r (httpd itself says the request's pool may be gone once the
 * handler returned; the MPM then touches only the connection). Returns with
 * only st->lock held, or with both when the stream keeps its request
 * (plain_filters).
 */
static void release_request(sse_stream *st)
{
    request_rec *r = st->r;
    conn_rec *c = st->c;

    if (!plain_filters(st)) {
        return;
    }
    st->chunked = r->chunked;
    if (st->place) {
        apr_pool_cleanup_kill(r->pool, st->place, place_give);
        st->place_id = st->place->id;
        st->place = NULL;
    }
    apr_pool_cleanup_kill(r->pool, stream_kind(st), stream_uncount);
    apr_pool_cleanup_kill(r->pool, apr_pool_allocator_get(c->pool), max_free_restore);
    /* The request's brigade is empty (every write is flushed at once). */
    st->bb = apr_brigade_create(c->pool, c->bucket_alloc);
    st->r = NULL;
    apr_thread_mutex_unlock(r->invoke_mtx);
    /* The end-of-request bucket is what logs a request and destroys its
     * pool; it goes through no filter, as nothing below holds anything of
     * the request (the writer copied or owns every byte it keeps) and the
     * request's own filters must not see an end: its chunk filter would
     * write the body's last chunk. */
    apr_bucket_destroy(ap_bucket_eor_create(c->bucket_alloc, r));
}

/*
 * Ends the stream: finishes the response (the body's last chunk), then
 * closes the connection by destroying its pool (2.4 has no way to hand it
 * back to the MPM). Called with st->lock held, and r->invoke_mtx while the
 * stream has its request (then httpd logs and frees the request here);
 * returns with only st->lock held.
 */
static void end_stream(sse_stream *st)
{
    request_rec *r = st->r;
    conn_rec *c = st->c;
    apr_bucket_brigade *bb;

    ap_log_cerror(APLOG_MARK, APLOG_TRACE1, 0, c, "event stream %pp ends (last id %"
                  APR_INT64_T_FMT ")", st, st->last_id);
    st->ended = 1;
    svc_hub_unsubscribe(st->hub, &st->sub);
    watch_del(st);
    pthread_mutex_lock(&table_lock);
    if (st->table_waiting) {
        table_unqueue(st);
    }
    pthread_mutex_unlock(&table_lock);
    if (r) {
        /* The last bytes go if the socket takes them now; nothing waits. */
        net_detach(st->net, 0);
        ap_finalize_request_protocol(r);
        apr_thread_mutex_unlock(r->invoke_mtx);
        ap_process_request_after_handler(r);
        /* r is gone (and with its pool the stream's place). */
        bb = apr_brigade_create(c->pool, c->bucket_alloc);
    }
    else {
        bb = st->bb;
        if (st->chunked) {
            APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_immortal_create("0" CRLF CRLF, 5,
                                                                   c->bucket_alloc));
        }
        net_detach(st->net, 0);
        if (st->place_id) {
            svc_hub_place_give(st->hub, st->place_id);
        }
        stream_uncount(stream_kind(st));
    }
    /* Whatever the output filters still hold goes out now, or not at all. */
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_flush_create(c->bucket_alloc));
    ap_pass_brigade(c->output_filters, bb);
    if (c->cs) {
        /* The MPM counts the connection as suspended until its pool goes. */
        c->cs->state = CONN_STATE_SUSPENDED;
    }
    apr_pool_destroy(c->pool);
    st->r = NULL;
    st->c = NULL;
    st->bb = NULL;
    /* The hub's reference. */
    apr_atomic_dec32(&st->refs);
}

/*
 * Takes the stream's lock for a callback, and the request's too while the
 * stream has its request (which lets the request go once it is
 * SSE_SETTLE old); 0 when the stream has ended (then only the reference is
 * given back).
 */
static int enter(sse_stream *st)
{
    pthread_mutex_lock(&st->lock);
    if (st->ended) {
        pthread_mutex_unlock(&st->lock);
        unref(st);
        return 0;
    }
    if (st->r) {
        apr_thread_mutex_lock(st->r->invoke_mtx);
        if (apr_time_now() - st->suspended_at >= SSE_SETTLE) {
            release_request(st);
        }
    }
    return 1;
}

/* Leaves a callback: the watcher is armed again for a stream that goes on. */
static void leave(sse_stream *st)
{
    if (!st->ended) {
        watch_arm(st);
        if (st->r) {
            apr_thread_mutex_unlock(st->r->invoke_mtx);
        }
    }
    pthread_mutex_unlock(&st->lock);
    unref(st);
}

/* The callback SSE_SETTLE after the suspension: an idle stream lets its
 * request go (enter) without waiting for its first heartbeat. */
static void settle_cb(void *baton)
{
    sse_stream *st = baton;

    if (enter(st)) {
        leave(st);
    }
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

/* What a pass through the ring frames into. */
typedef struct {
    sse_stream *st;
    sse_pass *pass;
    int wrote;
} ring_pass;

/* svc_hub_read's callback: frames one event of the ring, within the budget. */
static int frame_from_ring(void *baton, const svc_event_t *e)
{
    ring_pass *rp = baton;
    sse_pass *pass = rp->pass;
    apr_size_t n;

    if (!pass->budget) {
        pass->more = 1;
        return SVC_HUB_FULL;
    }
    n = frame(rp->st->bb, e->id, e->kind, e->data);
    pass->budget = n < pass->budget ? pass->budget - n : 0;
    rp->wrote = 1;
    if (asks_recheck(rp->st->recheck_prefix, e->kind)) {
        pass->recheck = 1;
    }
    if (rp->st->until_run_ends && is_final_status(e->kind, e->data)) {
        pass->final = 1;
        return SVC_HUB_LAST;
    }
    return SVC_HUB_TAKEN;
}

/*
 * A pool for an access check or a catch-up, on the child's scratch
 * allocator, which keeps what is freed on it: on the connection's (which
 * keeps nothing, SSE_MAX_FREE) each check took a fresh 8 KiB block and
 * gave it back, and with Debian's APR, whose allocator maps its blocks,
 * that was an mmap and a munmap (and the munmap's TLB flush on every
 * other CPU) for each of 10,000 streams' checks every 30 s: a sixth of
 * what idle streams cost httpd (docs/performance.md, run 22).
 */
static apr_pool_t *scratch_pool(const sse_stream *st)
{
    apr_pool_t *tp;

    if (!scratch_root || apr_pool_create(&tp, scratch_root) != APR_SUCCESS) {
        apr_pool_create(&tp, st->c->pool);
    }
    return tp;
}

/*
 * Frames, within the pass's budget, what the stream has not sent: from the
 * ring when the hub covers the stream's org from its last id on, else from
 * the table; and flushes it.
 */
static apr_status_t next_events(sse_stream *st, sse_pass *pass)
{
    ring_pass rp = { st, pass, 0 };
    apr_status_t rv = APR_SUCCESS;
    int from_table;

    /* Straight from the ring into the brigade: no copies, no pool. A stream
     * of one run or target is not sent the org's other events, but one that
     * may change access (an operator's suspension: access.suspension) has
     * it check its caller's access now all the same. */
    from_table = svc_hub_read_noting(st->hub, &st->sub, st->run_id, st->target_id,
                                     st->recheck_prefix, &st->last_id, &pass->recheck,
                                     frame_from_ring, &rp) != APR_SUCCESS;
    if (from_table && !table_enter(st)) {
        pass->later = 1;
    }
    else if (from_table) {
        apr_pool_t *tp;
        svc_ctx_t *ctx;

        tp = scratch_pool(st);
        ctx = svc_glue_ctx_bare(st->s, tp);
        rv = replay(st, ctx, tp, svc_hub_sub_org(&st->sub), pass);
        svc_glue_ctx_release(ctx);
        apr_pool_destroy(tp);
        table_leave();
        /* The database being away is no reason to end a stream. */
        if (rv == SVC_EDBDOWN || rv == SVC_ESCHEMA) {
            rv = APR_SUCCESS;
        }
        /* Later wake-ups scan the whole ring again, filtered by id. */
        svc_hub_rewind(&st->sub);
    }
    else if (rp.wrote) {
        rv = flush(st, st->bb);
    }
    return rv;
}

/*
 * Sends what waits for the client, then what the stream has not sent yet,
 * as far as the backlog allows (the rest when the watcher says the socket
 * takes more). Returns non-zero when the stream must end (client gone, run
 * over).
 */
static int still_allowed(sse_stream *st);

static int deliver(sse_stream *st)
{
    if (st->recheck_first) {
        /* The replay at the start sent an event that may have changed
         * access: committed after the request was authorized. */
        st->recheck_first = 0;
        st->next_recheck = apr_time_now() + SSE_RECHECK;
        if (!still_allowed(st)) {
            return 1;
        }
    }
    for (;;) {
        sse_pass pass = { 0, 0, 0, 0, 0 };

        if (net_write(st->net) != APR_SUCCESS) {
            return 1;
        }
        if (st->net->pending >= SSE_BACKLOG) {
            return 0;
        }
        pass.budget = SSE_BACKLOG - st->net->pending;
        if (next_events(st, &pass) != APR_SUCCESS || pass.final) {
            return 1;
        }
        if (pass.recheck) {
            /* Access may have changed with it (a target's key rotated):
             * checked now, not at the next periodic check. */
            st->next_recheck = apr_time_now() + SSE_RECHECK;
            if (!still_allowed(st)) {
                return 1;
            }
        }
        if (pass.later) {
            /* Queued for the table: woken in its turn. */
            return 0;
        }
        if (!pass.more || st->net->pending) {
            return 0;
        }
    }
}

/* The route's parameters the stream was opened with, for its access check. */
static void params_restore(const sse_stream *st, apr_table_t *params)
{
    const char *key = st->params;
    int i;

    for (i = 0; i < st->nparams; i++) {
        const char *val = key + strlen(key) + 1;

        apr_table_setn(params, key, val);
        key = val + strlen(val) + 1;
    }
}

/*
 * Whether the caller may still read what it streams: the route's whole
 * authentication and authorization again, with the credentials the stream
 * was opened with (kept in its record: the request may be gone). Only a
 * clear refusal ends a stream; the database being away does not.
 */
static int still_allowed(sse_stream *st)
{
    apr_pool_t *tp;
    apr_status_t rv;
    char *cookie = NULL;
    int tries, allowed = 1;

    tp = scratch_pool(st);
    if (st->session) {
        cookie = apr_pstrcat(tp, SVC_SESSION_COOKIE "=", st->session, NULL);
    }
    /* A cached principal found stale (SVC_ERESTART) is looked up afresh, as
     * the dispatcher does for a request. */
    for (tries = 0; tries < 2; tries++) {
        svc_ctx_t *ctx = svc_glue_ctx_bare(st->s, tp);

        /* What authentication reads of a request: its credential (a
         * stream is a GET, which no CSRF check concerns) and the address
         * a token's or a session's last use records. */
        ctx->method = "GET";
        ctx->path = st->route->path;
        ctx->client_ip = st->client_ip;
        ctx->headers_in = apr_table_make(tp, 2);
        if (st->authz) {
            apr_table_setn(ctx->headers_in, "Authorization", st->authz);
        }
        if (cookie) {
            apr_table_setn(ctx->headers_in, "Cookie", cookie);
        }
        ctx->route = st->route;
        params_restore(st, ctx->params);
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
    /* The scratch allocator keeps the pool's blocks for the next check. */
    if (cookie) {
        svc_wipe(cookie, strlen(cookie));
    }
    apr_pool_destroy(tp);
    return allowed;
}

/* Whether the stream must end before anything else: its child is stopping,
 * or its client closed its end. */
static int must_end(sse_stream *st)
{
    return apr_atomic_read32(&child_stopping) || apr_atomic_read32(&st->gone);
}

static void wake_cb(void *baton)
{
    sse_stream *st = baton;

    apr_atomic_set32(&st->wake_pending, 0);
    if (!enter(st)) {
        return;
    }
    if (!st->ending && (must_end(st) || deliver(st))) {
        finish(st);
    }
    leave(st);
}

static void beat_cb(void *baton)
{
    sse_stream *st = baton;
    apr_time_t now;
    int done = 0, full;

    if (!enter(st)) {
        return;
    }
    /* Whether a whole heartbeat interval has passed since the mark. */
    now = apr_time_now();
    full = now - st->marked_at >= SSE_HEARTBEAT;
    ap_log_cerror(APLOG_MARK, APLOG_TRACE2, 0, st->c, "event stream %pp: heartbeat", st);
    if (st->ending) {
        /* A scheduled end (see finish). */
        end_stream(st);
        leave(st);
        return;
    }
    if (must_end(st)) {
        done = 1;
    }
    else if (st->net->pending) {
        /* Not idle: bytes wait for the client. One that took none of them
         * for a whole heartbeat interval is not reading; it is dropped (and
         * may come back with Last-Event-ID). The first heartbeat may come
         * sooner than an interval after the start (svc_sse_begin): a
         * client is not judged on that. */
        if (full && st->net->written == st->written_at_beat) {
            ap_log_cerror(APLOG_MARK, APLOG_DEBUG, 0, st->c, "SVC0190: event stream "
                          "dropped: the client took nothing of %" APR_SIZE_T_FMT " bytes "
                          "for a heartbeat interval", st->net->pending);
            done = 1;
        }
    }
    else {
        APR_BRIGADE_INSERT_TAIL(st->bb, apr_bucket_immortal_create(SSE_BEAT_LINE,
                                sizeof(SSE_BEAT_LINE) - 1, st->bb->bucket_alloc));
        done = flush(st, st->bb) != APR_SUCCESS;
    }
    if (full) {
        st->written_at_beat = st->net->written;
        st->marked_at = now;
    }
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

/* Answers the request with the problem rv stands for, instead of a stream. */
static int stream_refused(request_rec *r, svc_ctx_t *ctx, apr_status_t rv)
{
    svc_problem_t *problem = svc_ctx_problem(ctx, rv);

    ctx->stream = NULL;
    svc_glue_ctx_release(ctx);
    svc_ctx_render_problem(ctx, problem);
    return svc_glue_respond(ctx, r);
}

/*
 * Takes a place among the streams the caller holds (SvcStreamLimit), given
 * back when the request's pool goes, or by the stream once it has it
 * (release_request). APR_SUCCESS, or a problem: 429 when the caller holds
 * as many as allowed.
 */
static apr_status_t take_place(request_rec *r, svc_ctx_t *ctx, sse_stream *st, int limit)
{
    const svc_principal_t *who = ctx->who;
    const char *principal;
    apr_int64_t id;
    svc_db_t *db;
    apr_status_t rv;

    /* A user's streams count against the user, whatever the credential; a
     * deploy agent's against its target. */
    if (!limit || !who || (!who->user_id && !who->target_id)) {
        return APR_SUCCESS;
    }
    principal = who->user_id ? apr_pstrcat(r->pool, "user:", who->user_id, NULL)
                             : apr_pstrcat(r->pool, "target:", who->target_id, NULL);
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_hub_place_claim(st->hub, db, r->pool, principal, limit, &id))
           != APR_SUCCESS) {
        return rv;
    }
    if (!id) {
        apr_table_setn(ctx->headers_out, "Retry-After", SSE_LIMIT_RETRY);
        return svc_fail(ctx, 429, "too_many_streams", "You hold %d event streams open "
                        "already, as many as one %s may (SvcStreamLimit); close one, or "
                        "try again when one has ended.", limit,
                        who->user_id ? "user" : "deploy target");
    }
    st->place = apr_palloc(r->pool, sizeof(*st->place));
    st->place->hub = st->hub;
    st->place->id = id;
    apr_pool_cleanup_register(r->pool, st->place, place_give, apr_pool_cleanup_null);
    return APR_SUCCESS;
}

static void stream_counted(request_rec *r, const sse_stream *st)
{
    svc_metrics_stream(svc_metrics_current(), (svc_mstream_e)(apr_uintptr_t)stream_kind(st), 1);
    apr_pool_cleanup_register(r->pool, stream_kind(st), stream_uncount, apr_pool_cleanup_null);
}

/* The stream's strings: those of its route's parameters and the others. */
typedef struct {
    const char *run_id, *target_id, *recheck_prefix, *authz, *session, *client_ip;
} sse_strings;

static int param_size(void *baton, const char *key, const char *val)
{
    *(apr_size_t *)baton += strlen(key) + strlen(val) + 2;
    return 1;
}

/* What the record's tail takes for the stream's strings and parameters. */
static apr_size_t str_size(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

static apr_size_t tail_size(const sse_strings *str, const apr_table_t *params)
{
    apr_size_t n = str_size(str->run_id) + str_size(str->target_id)
                   + str_size(str->recheck_prefix) + str_size(str->authz)
                   + str_size(str->session) + str_size(str->client_ip);

    apr_table_do(param_size, &n, params, NULL);
    return n;
}

/* Copies s to *at, which moves past it; NULL stays NULL. */
static const char *tail_put(char **at, const char *s)
{
    char *copy = *at;
    apr_size_t n;

    if (!s) {
        return NULL;
    }
    n = strlen(s) + 1;
    memcpy(copy, s, n);
    *at += n;
    return copy;
}

static int param_put(void *baton, const char *key, const char *val)
{
    sse_stream *st = baton;
    char *at = (char *)st->params + st->tail_used;

    tail_put(&at, key);
    tail_put(&at, val);
    st->tail_used = (apr_size_t)(at - st->params);
    st->nparams++;
    return 1;
}

/* Keeps in the record's tail (tail_size) what the stream needs of the
 * request's context, which goes when the stream is suspended, and of the
 * request, which goes a moment later. */
static void tail_fill(sse_stream *st, const sse_strings *str, const apr_table_t *params)
{
    char *at = st->tail;

    st->run_id = tail_put(&at, str->run_id);
    st->target_id = tail_put(&at, str->target_id);
    st->recheck_prefix = tail_put(&at, str->recheck_prefix);
    st->authz = tail_put(&at, str->authz);
    st->session = tail_put(&at, str->session);
    st->client_ip = tail_put(&at, str->client_ip);
    st->params = at;
    st->tail_used = 0;
    apr_table_do(param_put, st, params, NULL);
}

/* A stream's record for the request ctx authorized, or NULL without
 * memory. */
static sse_stream *stream_new(request_rec *r, svc_ctx_t *ctx, svc_hub_t *hub)
{
    const svc_stream_t *spec = ctx->stream;
    const char *authz = apr_table_get(r->headers_in, "Authorization");
    sse_strings str = { spec->run_id, spec->target_id, spec->recheck_prefix, authz, NULL,
                        ctx->client_ip };
    apr_size_t len;
    sse_stream *st;

    /* Authentication reads the session cookie only without a bearer. */
    if (!authz) {
        str.session = svc_cookie_get(r->pool, apr_table_get(r->headers_in, "Cookie"),
                                     SVC_SESSION_COOKIE);
    }
    len = tail_size(&str, ctx->params);
    if (!(st = calloc(1, sizeof(*st) + len))) {
        return NULL;
    }
    if (pthread_mutex_init(&st->lock, NULL) != 0) {
        free(st);
        return NULL;
    }
    st->tail_len = len;
    tail_fill(st, &str, ctx->params);
    st->r = r;
    st->c = r->connection;
    st->s = r->server;
    st->hub = hub;
    st->route = ctx->route;
    st->until_run_ends = spec->until_run_ends;
    st->last_id = spec->after;
    return st;
}

/* From here until the request ends (or, once the stream lets it go, until
 * the connection's pool and its allocator go), the connection's allocator
 * keeps nothing freed on it (SSE_MAX_FREE). */
static void keep_nothing_freed(request_rec *r)
{
    apr_allocator_t *allocator = apr_pool_allocator_get(r->connection->pool);

    apr_allocator_max_free_set(allocator, SSE_MAX_FREE);
    apr_pool_cleanup_register(r->pool, allocator, max_free_restore, apr_pool_cleanup_null);
}

/* The stream's start did not end in a suspension: the core writes the rest
 * of the response as any other (OK), or the problem of a refusal. */
static int not_suspended(sse_stream *st, int ret)
{
    if (st->net) {
        net_detach(st->net, st->r->server->timeout);
    }
    stream_free(st);
    return ret;
}

int svc_sse_begin(request_rec *r, svc_ctx_t *ctx)
{
    svc_server_conf *sc = ap_get_module_config(r->server->module_config, &svc_module);
    const svc_stream_t *spec = ctx->stream;
    apr_bucket_brigade *bb;
    sse_pass pass = { SSE_BACKLOG, 0, 0, 0, 0 };
    apr_interval_time_t first_beat;
    sse_stream *st;
    sse_watch *w;
    svc_hub_t *hub;
    apr_status_t rv;

    if (!mpm_is_async || !sc->db_conninfo || !child_pool) {
        return stream_refused(r, ctx, svc_fail(ctx, 503, "streams_unavailable",
                              "Event streams need httpd's event MPM and DBDParams; this "
                              "server cannot hold them open."));
    }
    if (r->connection->master) {
        return stream_refused(r, ctx, svc_fail(ctx, 503, "streams_unavailable",
                              "Event streams are served over HTTP/1.1 connections; this "
                              "request came over HTTP/2."));
    }
    if (!(hub = hub_for(r->server, sc->db_conninfo)) || !(w = watch_get())
        || !(st = stream_new(r, ctx, hub))) {
        return stream_refused(r, ctx, svc_fail(ctx, 503, "streams_unavailable",
                              "This server cannot hold event streams open right now."));
    }
    if ((rv = take_place(r, ctx, st, sc->core.stream_limit)) != APR_SUCCESS) {
        return not_suspended(st, stream_refused(r, ctx, rv));
    }
    stream_counted(r, st);
    svc_glue_write_head(ctx, r, 200, "text/event-stream; charset=utf-8");
    /* mod_deflate would hold events back until its buffer fills, and would
     * keep the stream from letting its request go (plain_filters). */
    apr_table_setn(r->subprocess_env, "no-gzip", "1");
    /* Proxies in front (nginx, some load balancers) must not buffer it. */
    apr_table_setn(r->err_headers_out, "X-Accel-Buffering", "no");
    if (r->header_only) {
        svc_glue_ctx_release(ctx);
        return not_suspended(st, OK);
    }
    if (!(st->net = net_attach(r))) {
        return not_suspended(st, stream_refused(r, ctx, svc_fail(ctx, 503,
                             "streams_unavailable", "This connection cannot carry an event "
                             "stream.")));
    }
    if (apr_os_sock_get(&st->fd, st->net->sock) != APR_SUCCESS) {
        svc_glue_ctx_release(ctx);
        return not_suspended(st, OK);
    }
    keep_nothing_freed(r);
    /* The request's brigade until the request goes (release_request). */
    st->bb = bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_immortal_create(SSE_RETRY_LINE,
                            sizeof(SSE_RETRY_LINE) - 1, bb->bucket_alloc));
    rv = flush(st, bb);
    if (rv == APR_SUCCESS) {
        rv = replay(st, ctx, ctx->pool, spec->org_id, &pass);
    }
    /* Idle streams hold no pooled connection. */
    svc_glue_ctx_release(ctx);
    if (rv != APR_SUCCESS || pass.final || r->connection->aborted) {
        /* Done (the run is over), or the client left: an ordinary ending,
         * written by the core as any response. */
        return not_suspended(st, OK);
    }
    st->suspended_at = apr_time_now();
    /*
     * The first heartbeat comes after a random 1 to 15 s, then every 15 s:
     * streams opened together (every client of a node that just restarted
     * reconnects within its `retry:`) would otherwise beat, and check
     * access, together for as long as they live, a burst of callbacks and
     * queries every 15 s instead of an even rate. Access is first checked
     * at the first or, as often, the second heartbeat (between the two is
     * the mark), so within SSE_RECHECK of the start and evenly over it,
     * then every SSE_RECHECK.
     */
    first_beat = (apr_interval_time_t)ap_random_pick((apr_uint32_t)SSE_SETTLE,
                                                     (apr_uint32_t)SSE_HEARTBEAT);
    st->next_recheck = ap_random_pick(0, 1) ? st->suspended_at
                       : st->suspended_at + first_beat + SSE_HEARTBEAT / 2;
    st->written_at_beat = st->net->written;
    st->marked_at = st->suspended_at;
    /* A suspension that committed between the authorization and the replay
     * (which sent it) is acted on at the first wake-up, just below. */
    st->recheck_first = pass.recheck;
    /* The hub's reference, and the heartbeat's, a first wake-up's (what
     * committed between the replay and now, or what the replay left for
     * later, is sent at once) and the settling's (settle_cb). */
    apr_atomic_set32(&st->refs, 4);
    apr_atomic_set32(&st->wake_pending, 1);

    svc_hub_subscribe(hub, &st->sub, spec->org_id);
    if (watch_add(w, st) != APR_SUCCESS) {
        svc_hub_unsubscribe(hub, &st->sub);
        return not_suspended(st, OK);
    }

    /* Callbacks wait for r->invoke_mtx, which httpd holds until this
     * handler has returned. */
    if (ap_mpm_register_timed_callback(first_beat, beat_cb, st) != APR_SUCCESS) {
        apr_atomic_dec32(&st->refs);
    }
    if (ap_mpm_register_timed_callback(SSE_SETTLE, settle_cb, st) != APR_SUCCESS) {
        apr_atomic_dec32(&st->refs);
    }
    if (call_soon(wake_cb, st) != APR_SUCCESS) {
        apr_atomic_dec32(&st->refs);
    }
    return SUSPENDED;
}

/* ------------------------------------------------------------------------
 * Child life
 */

void svc_sse_register(apr_pool_t *p)
{
    /* Right above the core's network filter: below TLS, so what it keeps
     * is what goes on the wire. */
    net_filter = ap_register_output_filter("SVC_SSE_NET", net_out, NULL,
                                           AP_FTYPE_NETWORK - 1);
}

/* No scratch pools once the child's pool is gone. */
static apr_status_t scratch_gone(void *data)
{
    (void)data;
    scratch_root = NULL;
    return APR_SUCCESS;
}

/* The root of scratch pools: its own allocator, shared by the worker
 * threads (hence its mutex), keeping SSE_SCRATCH_KEEP; destroyed with the
 * child. NULL if any of it fails (scratch pools then come from the
 * connection, as before). */
static apr_pool_t *scratch_create(apr_pool_t *pchild)
{
    apr_allocator_t *alloc;
    apr_thread_mutex_t *mutex;
    apr_pool_t *root;

    if (apr_allocator_create(&alloc) != APR_SUCCESS) {
        return NULL;
    }
    if (apr_pool_create_ex(&root, pchild, NULL, alloc) != APR_SUCCESS) {
        apr_allocator_destroy(alloc);
        return NULL;
    }
    apr_allocator_owner_set(alloc, root);
    if (apr_thread_mutex_create(&mutex, APR_THREAD_MUTEX_DEFAULT, root) != APR_SUCCESS) {
        apr_pool_destroy(root);
        return NULL;
    }
    apr_allocator_mutex_set(alloc, mutex);
    apr_allocator_max_free_set(alloc, SSE_SCRATCH_KEEP);
    apr_pool_tag(root, "svc_sse_scratch");
    apr_pool_cleanup_register(root, NULL, scratch_gone, apr_pool_cleanup_null);
    return root;
}

void svc_sse_child_init(apr_pool_t *pchild, server_rec *s)
{
    char host[APRMAXHOSTLEN + 1];
    int async = 0;

    if (ap_mpm_query(AP_MPMQ_IS_ASYNC, &async) == APR_SUCCESS && async) {
        mpm_is_async = 1;
    }
    if (apr_gethostname(host, sizeof(host), pchild) != APR_SUCCESS) {
        apr_cpystrn(host, "localhost", sizeof(host));
    }
    /* Node, process and start: a pid reused later is another holder. */
    holder = apr_psprintf(pchild, "%.200s:%" APR_PID_T_FMT ":%" APR_TIME_T_FMT, host,
                          getpid(), apr_time_now());
    if (apr_thread_mutex_create(&hubs_lock, APR_THREAD_MUTEX_DEFAULT, pchild) == APR_SUCCESS) {
        child_pool = pchild;
    }
    scratch_root = scratch_create(pchild);
}

void svc_sse_stopping(void)
{
    sse_hub *h;

    apr_atomic_set32(&child_stopping, 1);
    if (!hubs_lock) {
        return;
    }
    /* Every stream ends at its next callback; make that now. */
    apr_thread_mutex_lock(hubs_lock);
    for (h = hubs; h; h = h->next) {
        svc_hub_wake_all(h->hub);
    }
    apr_thread_mutex_unlock(hubs_lock);
}
