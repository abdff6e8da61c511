/*
 * svc_hub.c: the hub of new events behind the live streams (svc_hub.h).
 */
#include "svc_hub.h"
#include "svc_redact.h"

#include <apr_atomic.h>
#include <apr_hash.h>
#include <apr_strings.h>
#include <apr_thread_mutex.h>
#include <apr_thread_proc.h>

#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#define HUB_RING        4096
#define HUB_BATCH       500
/* How often the process confirms the stream places it holds (sql/016). */
#define HUB_REFRESH     apr_time_from_sec(30)

/* One event in the ring; strings are malloc'd and freed on eviction. */
typedef struct {
    apr_int64_t id;
    char *org_id;
    char *run_id;
    char *target_id;
    char *kind;
    char *data;
} ring_entry;

struct svc_hub_org_t {
    char *org_id;
    /* The ring holds every event of the org with an id above this (or
     * none is known: covered is 0 until the hub read one after connecting). */
    int covered;
    apr_int64_t covered_after;
    apr_int64_t fetched;        /* the newest id read from the table */
    svc_hub_sub_t *subs;        /* doubly linked */
};

struct svc_hub_t {
    svc_hub_conf_t conf;
    apr_pool_t *pool;           /* keys and org records, under lock */
    apr_thread_mutex_t *lock;   /* everything down to `released` */
    ring_entry *ring;
    apr_uint64_t head;          /* arrival number of the next entry */
    apr_hash_t *orgs;           /* org id -> svc_hub_org_t */
    int connected;
    /* Stream places (sql/016) given back, to delete at the next turn. */
    apr_array_header_t *released;   /* of apr_int64_t */
    /* The loop's own (svc_hub_step), on one thread at a time. */
    apr_thread_t *thread;
    volatile apr_uint32_t stopping;
    apr_pool_t *cp;             /* the connection's */
    apr_pool_t *tp;             /* one turn's */
    svc_db_t *db;
    apr_time_t refreshed;
    int warned;
};

static void say(const svc_hub_t *s, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Logs through the hub's log callback; secrets redacted. */
static void say(const svc_hub_t *s, int level, const char *fmt, ...)
{
    apr_pool_t *sp;
    va_list ap;

    if (!s->conf.log) {
        return;
    }
    apr_pool_create(&sp, s->tp);
    va_start(ap, fmt);
    s->conf.log(s->conf.log_baton, level, svc_redact(sp, apr_pvsprintf(sp, fmt, ap)));
    va_end(ap);
    apr_pool_destroy(sp);
}

static svc_hub_org_t *org_get(svc_hub_t *hub, const char *org_id)
{
    svc_hub_org_t *o = apr_hash_get(hub->orgs, org_id, APR_HASH_KEY_STRING);

    if (!o) {
        o = apr_pcalloc(hub->pool, sizeof(*o));
        o->org_id = apr_pstrdup(hub->pool, org_id);
        apr_hash_set(hub->orgs, o->org_id, APR_HASH_KEY_STRING, o);
    }
    return o;
}

static void wake_org(svc_hub_t *hub, svc_hub_org_t *o)
{
    svc_hub_sub_t *sub;

    for (sub = o->subs; sub; sub = sub->next) {
        hub->conf.wake(hub->conf.wake_baton, sub);
    }
}

/* Hub locked. */
static void wake_all(svc_hub_t *hub)
{
    apr_hash_index_t *hi;

    for (hi = apr_hash_first(NULL, hub->orgs); hi; hi = apr_hash_next(hi)) {
        wake_org(hub, apr_hash_this_val(hi));
    }
}

static void entry_free(ring_entry *slot)
{
    free(slot->org_id);
    free(slot->run_id);
    free(slot->target_id);
    free(slot->kind);
    free(slot->data);
}

/* Adds one event to the ring, evicting the oldest. Hub locked. */
static void ring_add(svc_hub_t *hub, svc_hub_org_t *o, const svc_event_t *e)
{
    ring_entry *slot = &hub->ring[hub->head % (apr_uint64_t)hub->conf.ring_size];

    if (slot->org_id) {
        /* The evicted event's org is no longer covered up to it. */
        svc_hub_org_t *old = apr_hash_get(hub->orgs, slot->org_id, APR_HASH_KEY_STRING);
        if (old && old->covered && old->covered_after < slot->id) {
            old->covered_after = slot->id;
        }
        entry_free(slot);
    }
    slot->id = e->id;
    slot->org_id = strdup(o->org_id);
    slot->run_id = e->run_id ? strdup(e->run_id) : NULL;
    slot->target_id = e->target_id ? strdup(e->target_id) : NULL;
    slot->kind = strdup(e->kind);
    slot->data = strdup(e->data);
    if (!slot->org_id || !slot->kind || !slot->data || (e->run_id && !slot->run_id)
        || (e->target_id && !slot->target_id)) {
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
 * their subscribers. An org's ids commit in order, so everything after the
 * newest id read is new; for an org first heard of since connecting,
 * everything from the first announced id on is.
 */
static apr_status_t fetch(svc_hub_t *hub, apr_pool_t *p, notices_t *n)
{
    apr_hash_index_t *hi;
    apr_status_t rv = APR_SUCCESS;

    for (hi = apr_hash_first(p, n->lowest); hi && rv == APR_SUCCESS; hi = apr_hash_next(hi)) {
        const char *org_id = apr_hash_this_key(hi);
        apr_int64_t low = *(apr_int64_t *)apr_hash_this_val(hi), after;
        apr_array_header_t *events;
        svc_hub_org_t *o;
        int i;

        apr_thread_mutex_lock(hub->lock);
        o = org_get(hub, org_id);
        after = o->covered ? o->fetched : low - 1;
        apr_thread_mutex_unlock(hub->lock);
        do {
            rv = svc_events_after(hub->db, p, org_id, NULL, SVC_EVENTS_EVERY_TARGET, after,
                                  hub->conf.batch, (apr_size_t)APR_INT64_MAX, &events);
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
            wake_org(hub, o);
            apr_thread_mutex_unlock(hub->lock);
        } while (events->nelts == hub->conf.batch);
    }
    return rv;
}

/* The connection went: nothing is covered until the hub reads again. */
static void forget(svc_hub_t *hub)
{
    apr_hash_index_t *hi;

    apr_thread_mutex_lock(hub->lock);
    hub->connected = 0;
    for (hi = apr_hash_first(NULL, hub->orgs); hi; hi = apr_hash_next(hi)) {
        svc_hub_org_t *o = apr_hash_this_val(hi);
        o->covered = 0;
    }
    apr_thread_mutex_unlock(hub->lock);
    hub->db = NULL;
}

/*
 * The stream places given back since the last call are deleted, and every
 * 30 s the ones held are confirmed. On the hub's own connection; what fails
 * waits for the next connection.
 */
static apr_status_t places(svc_hub_t *hub, apr_pool_t *p)
{
    apr_array_header_t *ids;
    apr_status_t rv = APR_SUCCESS;

    apr_thread_mutex_lock(hub->lock);
    ids = hub->released->nelts ? apr_array_copy(p, hub->released) : NULL;
    hub->released->nelts = 0;
    apr_thread_mutex_unlock(hub->lock);
    if (ids) {
        /* One pass: a burst of ends gives back thousands at once. */
        apr_array_header_t *text = apr_array_make(p, ids->nelts, sizeof(char *));
        int i;
        for (i = 0; i < ids->nelts; i++) {
            APR_ARRAY_PUSH(text, char *) = apr_psprintf(p, "%" APR_INT64_T_FMT,
                                                        APR_ARRAY_IDX(ids, i, apr_int64_t));
        }
        rv = svc_streams_release(hub->db, p, apr_pstrcat(p, "{", apr_array_pstrcat(p, text, ','),
                                                         "}", NULL));
        if (rv != APR_SUCCESS) {
            apr_thread_mutex_lock(hub->lock);
            apr_array_cat(hub->released, ids);
            apr_thread_mutex_unlock(hub->lock);
            return rv;
        }
    }
    if (apr_time_now() - hub->refreshed >= HUB_REFRESH) {
        if ((rv = svc_streams_refresh(hub->db, p, hub->conf.holder)) == APR_SUCCESS) {
            hub->refreshed = apr_time_now();
        }
    }
    return rv;
}

/* Connects and LISTENs; 0 (having waited a second) when it cannot. */
static int connect_listen(svc_hub_t *hub)
{
    apr_pool_t *tp = hub->tp;
    const char *err = NULL;

    if (hub->cp) {
        apr_pool_destroy(hub->cp);
    }
    apr_pool_create(&hub->cp, NULL);
    if (svc_db_connect(&hub->db, hub->conf.conninfo, hub->cp, &err) != APR_SUCCESS
        || svc_db_simple(hub->db, "LISTEN " SVC_EVENTS_CHANNEL, hub->cp) != APR_SUCCESS) {
        if (!hub->warned++) {
            char *why = apr_pstrdup(tp, err ? err : svc_db_errmsg(hub->db));
            apr_size_t len = strlen(why);
            while (len && (why[len - 1] == '\n' || why[len - 1] == ' ')) {
                why[--len] = '\0'; /* libpq ends its messages with one */
            }
            say(hub, SVC_HUB_WARNING, "SVC0030: event streams cannot listen for new events "
                "(%s); they read the database every heartbeat until it is back",
                svc_printable(tp, why, 512));
        }
        hub->db = NULL;
        apr_sleep(apr_time_from_sec(1));
        return 0;
    }
    if (hub->warned) {
        say(hub, SVC_HUB_INFO, "SVC0031: event streams listen for new events again");
    }
    hub->warned = 0;
    /* Anything may have been missed meanwhile: the subscribers catch up
     * from the table once. */
    apr_thread_mutex_lock(hub->lock);
    hub->connected = 1;
    wake_all(hub);
    apr_thread_mutex_unlock(hub->lock);
    return 1;
}

void svc_hub_step(svc_hub_t *hub)
{
    struct pollfd pfd;
    notices_t n;

    apr_pool_clear(hub->tp);
    if (!hub->db && !connect_listen(hub)) {
        return;
    }
    pfd.fd = svc_db_socket(hub->db);
    pfd.events = POLLIN;
    pfd.revents = 0;
    if (pfd.fd < 0 || (poll(&pfd, 1, 500) < 0 && errno != EINTR)) {
        forget(hub);
        return;
    }
    /*
     * Every time round, readable or not: the statements below (and the
     * reads of events) run on this connection too, and libpq queues the
     * notifications that arrive meanwhile, where poll() no longer sees
     * them.
     */
    n.pool = hub->tp;
    n.lowest = apr_hash_make(hub->tp);
    if (places(hub, hub->tp) != APR_SUCCESS
        || svc_db_notifications(hub->db, collect_notice, &n) != APR_SUCCESS
        || fetch(hub, hub->tp, &n) != APR_SUCCESS) {
        forget(hub);
    }
}

/*
 * The end of the hub's loop: its process is going away, and every stream it
 * holds with it, so their places are given back now, whether or not their
 * owners got to hand them over (a process that exits with streams open
 * would otherwise leave places counted for 90 s and kept for five minutes).
 */
static void finish(svc_hub_t *hub)
{
    if (hub->db) {
        apr_pool_clear(hub->tp);
        svc_streams_release_all(hub->db, hub->tp, hub->conf.holder);
        hub->db = NULL;
    }
    if (hub->cp) {
        apr_pool_destroy(hub->cp);
        hub->cp = NULL;
    }
}

static void *APR_THREAD_FUNC hub_main(apr_thread_t *thd, void *data)
{
    svc_hub_t *hub = data;

    while (!apr_atomic_read32(&hub->stopping)) {
        svc_hub_step(hub);
    }
    finish(hub);
    /*
     * Returned from, not left with apr_thread_exit: pthread_exit unwinds
     * past this frame without its epilogue, leaving AddressSanitizer's
     * marks of the loop's variables on the stack, and the thread's own
     * teardown then trips on them (a false stack-use-after-scope that
     * aborted every child at exit under make test SANITIZE=1). The exit
     * status stays APR_SUCCESS either way; the thread's pool goes with the
     * process's.
     */
    return NULL;
}

/* A pre-cleanup of the hub's pool: the thread must be gone before the
 * sub-pool of org records is (sub-pools go before plain cleanups run). */
static apr_status_t hub_stop(void *data)
{
    svc_hub_t *hub = data;
    apr_status_t trv;
    int i;

    apr_atomic_set32(&hub->stopping, 1);
    if (hub->thread) {
        apr_thread_join(&trv, hub->thread);
        hub->thread = NULL;
    }
    finish(hub);
    apr_pool_destroy(hub->tp);
    for (i = 0; i < hub->conf.ring_size; i++) {
        entry_free(&hub->ring[i]);
    }
    free(hub->ring);
    return APR_SUCCESS;
}

apr_status_t svc_hub_create(svc_hub_t **phub, apr_pool_t *p, const svc_hub_conf_t *conf)
{
    svc_hub_t *hub = apr_pcalloc(p, sizeof(*hub));
    apr_status_t rv;

    hub->conf = *conf;
    if (hub->conf.ring_size <= 0) {
        hub->conf.ring_size = HUB_RING;
    }
    if (hub->conf.batch <= 0) {
        hub->conf.batch = HUB_BATCH;
    }
    if ((rv = apr_thread_mutex_create(&hub->lock, APR_THREAD_MUTEX_DEFAULT, p))
        != APR_SUCCESS) {
        return rv;
    }
    /* malloc'd as its entries are, and freed with them (hub_stop). */
    if (!(hub->ring = calloc((apr_size_t)hub->conf.ring_size, sizeof(*hub->ring)))) {
        return APR_ENOMEM;
    }
    apr_pool_create(&hub->pool, p);
    /* The loop's pools are its own (root pools, as the loop runs on a
     * thread of its own). */
    apr_pool_create(&hub->tp, NULL);
    hub->orgs = apr_hash_make(hub->pool);
    hub->released = apr_array_make(hub->pool, 64, sizeof(apr_int64_t));
    apr_pool_pre_cleanup_register(p, hub, hub_stop);
    *phub = hub;
    return APR_SUCCESS;
}

apr_status_t svc_hub_start(svc_hub_t *hub)
{
    return apr_thread_create(&hub->thread, NULL, hub_main, hub, apr_pool_parent_get(hub->pool));
}

void svc_hub_subscribe(svc_hub_t *hub, svc_hub_sub_t *sub, const char *org_id)
{
    apr_thread_mutex_lock(hub->lock);
    sub->org = org_get(hub, org_id);
    sub->ring_pos = 0;
    sub->noticed = 0;
    sub->prev = NULL;
    sub->next = sub->org->subs;
    if (sub->next) {
        sub->next->prev = sub;
    }
    sub->org->subs = sub;
    apr_thread_mutex_unlock(hub->lock);
}

void svc_hub_unsubscribe(svc_hub_t *hub, svc_hub_sub_t *sub)
{
    apr_thread_mutex_lock(hub->lock);
    if (sub->prev) {
        sub->prev->next = sub->next;
    }
    else {
        sub->org->subs = sub->next;
    }
    if (sub->next) {
        sub->next->prev = sub->prev;
    }
    apr_thread_mutex_unlock(hub->lock);
}

const char *svc_hub_sub_org(const svc_hub_sub_t *sub)
{
    return sub->org->org_id;
}

void svc_hub_wake_all(svc_hub_t *hub)
{
    apr_thread_mutex_lock(hub->lock);
    wake_all(hub);
    apr_thread_mutex_unlock(hub->lock);
}

/* Whether an event belongs to a subscriber for target_id (NULL: a user's,
 * which carries no target's work). */
static int target_matches(const char *sub_target, const char *event_target)
{
    if (!sub_target) {
        return event_target == NULL;
    }
    return event_target && strcmp(sub_target, event_target) == 0;
}

/* Whether the ring entry is one of sub's org that the filter shows. */
static int entry_shown(const ring_entry *re, const svc_hub_org_t *o, const char *run_id,
                       const char *target_id)
{
    return strcmp(re->org_id, o->org_id) == 0
           && (!run_id || (re->run_id && strcmp(re->run_id, run_id) == 0))
           && target_matches(target_id, re->target_id);
}

/* Notes (svc_hub_read_noting) an entry the filter keeps from sub. Hub locked. */
static void note(svc_hub_sub_t *sub, const ring_entry *re, const char *prefix,
                 apr_int64_t last, int *pnoticed)
{
    if (re->id > last && re->id > sub->noticed && re->kind
        && strncmp(re->kind, prefix, strlen(prefix)) == 0
        && strcmp(re->org_id, sub->org->org_id) == 0) {
        sub->noticed = re->id;
        *pnoticed = 1;
    }
}

apr_status_t svc_hub_read_noting(svc_hub_t *hub, svc_hub_sub_t *sub, const char *run_id,
                                 const char *target_id, const char *notice_prefix,
                                 apr_int64_t *plast, int *pnoticed,
                                 svc_hub_event_fn *fn, void *baton)
{
    svc_hub_org_t *o = sub->org;
    apr_uint64_t pos, tail, size = (apr_uint64_t)hub->conf.ring_size;

    /* An org's stream (no filter) is shown every event of the org itself. */
    if (!run_id && !target_id) {
        notice_prefix = NULL;
    }
    apr_thread_mutex_lock(hub->lock);
    tail = hub->head > size ? hub->head - size : 0;
    if (!hub->connected || !o->covered || *plast < o->covered_after) {
        /* The caller reads the table, which the filter applies to: only the
         * ring can tell of what it leaves out. */
        for (pos = sub->ring_pos > tail ? sub->ring_pos : tail;
             notice_prefix && pos < hub->head; pos++) {
            const ring_entry *re = &hub->ring[pos % size];
            if (re->org_id && !entry_shown(re, o, run_id, target_id)) {
                note(sub, re, notice_prefix, *plast, pnoticed);
            }
        }
        apr_thread_mutex_unlock(hub->lock);
        return APR_INCOMPLETE;
    }
    /* Straight from the ring to fn: no copies, no pool. */
    for (pos = sub->ring_pos > tail ? sub->ring_pos : tail; pos < hub->head; pos++) {
        const ring_entry *re = &hub->ring[pos % size];
        svc_event_t e;
        int took;

        if (re->id <= *plast) {
            continue;
        }
        if (!entry_shown(re, o, run_id, target_id)) {
            if (notice_prefix) {
                note(sub, re, notice_prefix, *plast, pnoticed);
            }
            continue;
        }
        e.id = re->id;
        e.kind = re->kind;
        e.run_id = re->run_id;
        e.target_id = re->target_id;
        e.data = re->data;
        if ((took = fn(baton, &e)) == SVC_HUB_FULL) {
            break;
        }
        *plast = re->id;
        if (took == SVC_HUB_LAST) {
            pos++;
            break;
        }
    }
    sub->ring_pos = pos;
    apr_thread_mutex_unlock(hub->lock);
    return APR_SUCCESS;
}

apr_status_t svc_hub_read(svc_hub_t *hub, svc_hub_sub_t *sub, const char *run_id,
                          const char *target_id, apr_int64_t *plast,
                          svc_hub_event_fn *fn, void *baton)
{
    int noticed = 0;

    return svc_hub_read_noting(hub, sub, run_id, target_id, NULL, plast, &noticed, fn, baton);
}

void svc_hub_rewind(svc_hub_sub_t *sub)
{
    sub->ring_pos = 0;
}

void svc_hub_place_give(svc_hub_t *hub, apr_int64_t id)
{
    apr_thread_mutex_lock(hub->lock);
    APR_ARRAY_PUSH(hub->released, apr_int64_t) = id;
    apr_thread_mutex_unlock(hub->lock);
}

apr_status_t svc_hub_place_claim(svc_hub_t *hub, svc_db_t *db, apr_pool_t *p,
                                 const char *principal, int limit, apr_int64_t *pid)
{
    *pid = 0;
    return svc_streams_claim(db, p, principal, hub->conf.holder, limit, pid);
}
