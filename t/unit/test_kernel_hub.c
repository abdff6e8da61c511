/*
 * test_kernel_hub.c: the hub of new events behind the live streams
 * (kernel/svc_hub.c), against PostgreSQL and without httpd: its LISTEN
 * connection, the wake callback (once per subscriber and batch read), the
 * ring (what it covers, wraparound, a resume from further back, filters,
 * where a read stops), the stream places it takes and gives back, and its
 * note that it cannot listen.
 *
 * Most tests step the hub by hand (svc_hub_step) on the test's own thread,
 * so what one turn does is seen exactly; one runs it on its thread.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"
#include "svc_testdb.h"
#include "svc_hub.h"

#include <apr_atomic.h>
#include <stddef.h>
#include <string.h>

/* A subscriber: what the wake callback counts. */
typedef struct {
    svc_hub_sub_t sub;
    volatile apr_uint32_t woken;
} tsub;

static void count_wake(void *baton, svc_hub_sub_t *sub)
{
    tsub *t = (tsub *)((char *)sub - offsetof(tsub, sub));

    apr_atomic_inc32(&t->woken);
}

/* What the hub logged. */
typedef struct {
    apr_pool_t *p;
    int n;
    int level;
    const char *first;
} tlog;

static void keep_log(void *baton, int level, const char *msg)
{
    tlog *l = baton;

    if (!l->n++) {
        l->level = level;
        l->first = apr_pstrdup(l->p, msg);
    }
}

/* What a read of the ring showed: ids and data, and where to stop. */
typedef struct {
    apr_pool_t *p;
    apr_array_header_t *ids;        /* of apr_int64_t */
    apr_array_header_t *data;       /* of const char * */
    int room;                       /* events it takes; then FULL (-1: no end) */
    apr_int64_t last_at;            /* answer LAST at this id */
} tread;

static int take(void *baton, const svc_event_t *e)
{
    tread *t = baton;

    if (t->room == 0) {
        return SVC_HUB_FULL;
    }
    if (t->room > 0) {
        t->room--;
    }
    APR_ARRAY_PUSH(t->ids, apr_int64_t) = e->id;
    APR_ARRAY_PUSH(t->data, const char *) = apr_pstrdup(t->p, e->data);
    return e->id == t->last_at ? SVC_HUB_LAST : SVC_HUB_TAKEN;
}

static tread *reader(apr_pool_t *p, int room)
{
    tread *t = apr_pcalloc(p, sizeof(*t));

    t->p = p;
    t->ids = apr_array_make(p, 8, sizeof(apr_int64_t));
    t->data = apr_array_make(p, 8, sizeof(const char *));
    t->room = room;
    return t;
}

static apr_int64_t id_at(const tread *t, int i)
{
    return APR_ARRAY_IDX(t->ids, i, apr_int64_t);
}

/* An org of its own (events need one). */
static const char *new_org(apr_pool_t *p, svc_db_t *db)
{
    const char *org = svc_id_new(p, "org_"), *user = svc_id_new(p, "usr_");
    char *slug = apr_pstrdup(p, svc_testdb_name(p, "hub"));
    char *c;
    int ok = 1;

    for (c = slug; *c; c++) {
        if (*c == '_') {
            *c = '-';
        }
    }
    /* An org has exactly one owner from its first commit on. */
    svc_testdb_pq(p, svc_db_conn(db), apr_psprintf(p,
        "BEGIN; INSERT INTO users (id, email, name) VALUES ('%s', '%s@example.test', 'Ada');"
        "INSERT INTO orgs (id, slug, name) VALUES ('%s', '%s', 'Hub');"
        "INSERT INTO org_members (org_id, user_id, role) VALUES ('%s', '%s', 'owner'); COMMIT",
        user, slug, org, slug, org, user), &ok);
    SVC_CHECK(ok);
    return org;
}

/* n events of the org in one transaction: data {"n": from..from+n-1}; with
 * a run or a target when given. */
static void emit(apr_pool_t *p, svc_db_t *db, const char *org, int from, int n,
                 const char *run_id, const char *target_id)
{
    const char *sql = "BEGIN;";
    int i, ok = 1;

    for (i = from; i < from + n; i++) {
        sql = apr_psprintf(p, "%s INSERT INTO events (org_id, run_id, target_id, kind, data)"
                           " VALUES ('%s', %s, %s, 'test.hub', '{\"n\": %d}');", sql, org,
                           run_id ? apr_psprintf(p, "'%s'", run_id) : "NULL",
                           target_id ? apr_psprintf(p, "'%s'", target_id) : "NULL", i);
    }
    svc_testdb_pq(p, svc_db_conn(db), apr_pstrcat(p, sql, " COMMIT", NULL), &ok);
    SVC_CHECK(ok);
}

/* The id before the org's first event. */
static apr_int64_t before_first(apr_pool_t *p, svc_db_t *db, const char *org)
{
    const char *v = svc_testdb_value(p, db, apr_psprintf(p,
        "SELECT min(id) - 1 FROM events WHERE org_id = '%s'", org));

    return v ? apr_atoi64(v) : -1;
}

/* The places the holder holds. */
static int places_of(apr_pool_t *p, svc_db_t *db, const char *holder)
{
    const char *v = svc_testdb_value(p, db, apr_psprintf(p,
        "SELECT count(*) FROM event_streams WHERE holder = '%s'", holder));

    return v ? atoi(v) : -1;
}

static svc_hub_t *new_hub(apr_pool_t *p, const char *holder, int ring, int batch, tlog *log)
{
    svc_hub_conf_t conf = { 0 };
    svc_hub_t *hub = NULL;

    conf.conninfo = svc_testdb_conninfo();
    conf.holder = holder;
    conf.wake = count_wake;
    conf.log = keep_log;
    conf.log_baton = log;
    conf.ring_size = ring;
    conf.batch = batch;
    SVC_CHECK(svc_hub_create(&hub, p, &conf) == APR_SUCCESS);
    return hub;
}

/* Turns of the hub until the subscriber was woken (at most 40: 20 s). */
static int step_until_woken(svc_hub_t *hub, tsub *t)
{
    int i;

    for (i = 0; i < 40 && !apr_atomic_read32(&t->woken); i++) {
        svc_hub_step(hub);
    }
    return (int)apr_atomic_read32(&t->woken);
}

SVC_TEST(wakes_once_per_batch)
{
    tsub a, b;
    tlog log = { p, 0, 0, NULL };
    svc_db_t *db;
    svc_hub_t *hub;
    const char *org_a, *org_b;
    apr_int64_t last;
    tread *t;
    int i;

    if (!svc_testdb_conninfo() || !(db = svc_testdb_open(p))) {
        return;
    }
    org_a = new_org(p, db);
    org_b = new_org(p, db);
    hub = new_hub(p, svc_testdb_name(p, "holder"), 0, 3, &log);
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    svc_hub_subscribe(hub, &a.sub, org_a);
    svc_hub_subscribe(hub, &b.sub, org_b);
    SVC_CHECK_STR(svc_hub_sub_org(&a.sub), org_a);

    /* Connected: everyone catches up once (anything may have been missed). */
    svc_hub_step(hub);
    SVC_CHECK_INT(apr_atomic_read32(&a.woken), 1);
    SVC_CHECK_INT(apr_atomic_read32(&b.woken), 1);
    SVC_CHECK_INT(log.n, 0);
    /* Nothing read of the org since connecting: the table it is. */
    last = 0;
    t = reader(p, -1);
    SVC_CHECK(svc_hub_read(hub, &a.sub, NULL, NULL, &last, take, t) == APR_INCOMPLETE);
    SVC_CHECK_INT(t->ids->nelts, 0);

    /* Ten events in one transaction, read three at a time: 3, 3, 3, 1, and
     * a wake-up per read, not per event; the other org's subscriber sleeps. */
    apr_atomic_set32(&a.woken, 0);
    apr_atomic_set32(&b.woken, 0);
    emit(p, db, org_a, 1, 10, NULL, NULL);
    SVC_CHECK_INT(step_until_woken(hub, &a), 4);
    SVC_CHECK_INT(apr_atomic_read32(&b.woken), 0);

    /* All ten in the ring, in order, each once. */
    last = before_first(p, db, org_a);
    t = reader(p, -1);
    SVC_CHECK(svc_hub_read(hub, &a.sub, NULL, NULL, &last, take, t) == APR_SUCCESS);
    SVC_CHECK_INT(t->ids->nelts, 10);
    for (i = 0; i < t->ids->nelts; i++) {
        SVC_CHECK_INT(id_at(t, i), before_first(p, db, org_a) + 1 + i);
        SVC_CHECK_STR(APR_ARRAY_IDX(t->data, i, const char *),
                      apr_psprintf(p, "{\"n\": %d}", i + 1));
    }
    SVC_CHECK_INT(last, id_at(t, 9));
    /* Read again: nothing new. */
    t = reader(p, -1);
    SVC_CHECK(svc_hub_read(hub, &a.sub, NULL, NULL, &last, take, t) == APR_SUCCESS);
    SVC_CHECK_INT(t->ids->nelts, 0);

    /* Stopping: every subscriber is woken. */
    apr_atomic_set32(&a.woken, 0);
    apr_atomic_set32(&b.woken, 0);
    svc_hub_wake_all(hub);
    SVC_CHECK_INT(apr_atomic_read32(&a.woken), 1);
    SVC_CHECK_INT(apr_atomic_read32(&b.woken), 1);
    /* One that left is not. */
    svc_hub_unsubscribe(hub, &b.sub);
    svc_hub_wake_all(hub);
    SVC_CHECK_INT(apr_atomic_read32(&a.woken), 2);
    SVC_CHECK_INT(apr_atomic_read32(&b.woken), 1);
    svc_hub_unsubscribe(hub, &a.sub);
}

SVC_TEST(ring_wraps_and_sends_the_far_behind_to_the_table)
{
    tsub c;
    tlog log = { p, 0, 0, NULL };
    svc_db_t *db;
    svc_hub_t *hub;
    const char *org;
    apr_array_header_t *events;
    apr_int64_t first, last;
    tread *t;

    if (!svc_testdb_conninfo() || !(db = svc_testdb_open(p))) {
        return;
    }
    org = new_org(p, db);
    hub = new_hub(p, svc_testdb_name(p, "holder"), 4, 0, &log);
    memset(&c, 0, sizeof(c));
    svc_hub_subscribe(hub, &c.sub, org);
    svc_hub_step(hub);
    SVC_CHECK_INT(apr_atomic_read32(&c.woken), 1);
    apr_atomic_set32(&c.woken, 0);

    /* Six events through a ring of four: the first two are evicted. */
    emit(p, db, org, 1, 6, NULL, NULL);
    SVC_CHECK(step_until_woken(hub, &c) > 0);
    first = before_first(p, db, org);

    /* A stream that resumes from before the ring: the table, and nothing shown. */
    last = first;
    t = reader(p, -1);
    SVC_CHECK(svc_hub_read(hub, &c.sub, NULL, NULL, &last, take, t) == APR_INCOMPLETE);
    SVC_CHECK_INT(t->ids->nelts, 0);
    SVC_CHECK_INT(last, first);
    last = first + 1;
    SVC_CHECK(svc_hub_read(hub, &c.sub, NULL, NULL, &last, take, t) == APR_INCOMPLETE);
    /* ...where every event after its last id is. */
    SVC_CHECK(svc_events_after(db, p, org, NULL, NULL, first, 500, 1 << 20, &events)
              == APR_SUCCESS);
    SVC_CHECK_INT(events->nelts, 6);

    /* From the last evicted event on, the ring has it all, across its end:
     * two taken, then no room; the next read starts where that stopped. */
    last = first + 2;
    t = reader(p, 2);
    SVC_CHECK(svc_hub_read(hub, &c.sub, NULL, NULL, &last, take, t) == APR_SUCCESS);
    SVC_CHECK_INT(t->ids->nelts, 2);
    SVC_CHECK_INT(id_at(t, 0), first + 3);
    SVC_CHECK_INT(id_at(t, 1), first + 4);
    SVC_CHECK_INT(last, first + 4);
    /* The last the subscriber wants (a run's final status): it stops there. */
    t = reader(p, -1);
    t->last_at = first + 5;
    SVC_CHECK(svc_hub_read(hub, &c.sub, NULL, NULL, &last, take, t) == APR_SUCCESS);
    SVC_CHECK_INT(t->ids->nelts, 1);
    SVC_CHECK_INT(last, first + 5);
    t = reader(p, -1);
    SVC_CHECK(svc_hub_read(hub, &c.sub, NULL, NULL, &last, take, t) == APR_SUCCESS);
    SVC_CHECK_INT(t->ids->nelts, 1);
    SVC_CHECK_INT(id_at(t, 0), first + 6);
    /* After a read of the table, the whole ring is scanned again (by id). */
    svc_hub_rewind(&c.sub);
    last = first + 3;
    t = reader(p, -1);
    SVC_CHECK(svc_hub_read(hub, &c.sub, NULL, NULL, &last, take, t) == APR_SUCCESS);
    SVC_CHECK_INT(t->ids->nelts, 3);

    /* Two more: the ring moves on, and what it covers with it. */
    apr_atomic_set32(&c.woken, 0);
    emit(p, db, org, 7, 2, NULL, NULL);
    SVC_CHECK(step_until_woken(hub, &c) > 0);
    last = first + 3;
    SVC_CHECK(svc_hub_read(hub, &c.sub, NULL, NULL, &last, take, t) == APR_INCOMPLETE);
    svc_hub_rewind(&c.sub);
    last = first + 4;
    t = reader(p, -1);
    SVC_CHECK(svc_hub_read(hub, &c.sub, NULL, NULL, &last, take, t) == APR_SUCCESS);
    SVC_CHECK_INT(t->ids->nelts, 4);
    SVC_CHECK_INT(id_at(t, 3), first + 8);
    svc_hub_unsubscribe(hub, &c.sub);
}

SVC_TEST(ring_reads_filter_runs_and_targets)
{
    tsub s;
    tlog log = { p, 0, 0, NULL };
    svc_db_t *db;
    svc_hub_t *hub;
    const char *org;
    apr_int64_t first, last;
    tread *t;
    int i, noticed;

    if (!svc_testdb_conninfo() || !(db = svc_testdb_open(p))) {
        return;
    }
    org = new_org(p, db);
    hub = new_hub(p, svc_testdb_name(p, "holder"), 0, 0, &log);
    memset(&s, 0, sizeof(s));
    svc_hub_subscribe(hub, &s.sub, org);
    svc_hub_step(hub);
    apr_atomic_set32(&s.woken, 0);
    /* 1-2: the org's; 3-4: run_a's; 5: a target's work. */
    emit(p, db, org, 1, 2, NULL, NULL);
    emit(p, db, org, 3, 2, "run_a", NULL);
    emit(p, db, org, 5, 1, NULL, "tgt_a");
    first = before_first(p, db, org);
    for (i = 0; i < 40; i++) {
        /* Until the ring holds all five (one transaction each). */
        apr_int64_t l = first;
        t = reader(p, -1);
        if (svc_hub_read(hub, &s.sub, NULL, "tgt_a", &l, take, t) == APR_SUCCESS
            && t->ids->nelts == 1) {
            break;
        }
        svc_hub_step(hub);
    }

    /* A user's stream: everything but the target's work. */
    last = first;
    svc_hub_rewind(&s.sub);
    t = reader(p, -1);
    SVC_CHECK(svc_hub_read(hub, &s.sub, NULL, NULL, &last, take, t) == APR_SUCCESS);
    SVC_CHECK_INT(t->ids->nelts, 4);
    /* A run's: its own only. */
    last = first;
    svc_hub_rewind(&s.sub);
    t = reader(p, -1);
    SVC_CHECK(svc_hub_read(hub, &s.sub, "run_a", NULL, &last, take, t) == APR_SUCCESS);
    SVC_CHECK_INT(t->ids->nelts, 2);
    SVC_CHECK_INT(id_at(t, 0), first + 3);
    /* A deploy agent's: its target's only. */
    last = first;
    svc_hub_rewind(&s.sub);
    t = reader(p, -1);
    SVC_CHECK(svc_hub_read(hub, &s.sub, NULL, "tgt_a", &last, take, t) == APR_SUCCESS);
    SVC_CHECK_INT(t->ids->nelts, 1);
    SVC_CHECK_INT(id_at(t, 0), first + 5);
    SVC_CHECK_STR(APR_ARRAY_IDX(t->data, 0, const char *), "{\"n\": 5}");
    last = first;
    svc_hub_rewind(&s.sub);
    t = reader(p, -1);
    SVC_CHECK(svc_hub_read(hub, &s.sub, NULL, "tgt_b", &last, take, t) == APR_SUCCESS);
    SVC_CHECK_INT(t->ids->nelts, 0);

    /* A run's stream after its last event: the target's work (5) is not
     * shown, but noted when its kind has the prefix asked for; once. */
    noticed = 0;
    last = first + 4;
    svc_hub_rewind(&s.sub);
    t = reader(p, -1);
    SVC_CHECK(svc_hub_read_noting(hub, &s.sub, "run_a", NULL, "other.", &last, &noticed,
                                  take, t) == APR_SUCCESS);
    SVC_CHECK_INT(noticed, 0);
    svc_hub_rewind(&s.sub);
    SVC_CHECK(svc_hub_read_noting(hub, &s.sub, "run_a", NULL, "test.", &last, &noticed,
                                  take, t) == APR_SUCCESS);
    SVC_CHECK_INT(t->ids->nelts, 0);
    SVC_CHECK_INT(noticed, 1);
    SVC_CHECK(last == first + 4);
    noticed = 0;
    svc_hub_rewind(&s.sub);
    SVC_CHECK(svc_hub_read_noting(hub, &s.sub, "run_a", NULL, "test.", &last, &noticed,
                                  take, t) == APR_SUCCESS);
    SVC_CHECK_INT(noticed, 0);
    /* An org's stream is shown them instead: nothing to note. */
    last = first + 4;
    svc_hub_rewind(&s.sub);
    SVC_CHECK(svc_hub_read_noting(hub, &s.sub, NULL, NULL, "test.", &last, &noticed,
                                  take, t) == APR_SUCCESS);
    SVC_CHECK_INT(noticed, 0);
    svc_hub_unsubscribe(hub, &s.sub);
}

SVC_TEST(places_are_given_back)
{
    tlog log = { p, 0, 0, NULL };
    svc_db_t *db;
    svc_hub_t *hub;
    apr_pool_t *hp, *sp, *keep;
    const char *holder, *who;
    apr_int64_t a = 0, b = 0, c = -1, d = 0;

    if (!svc_testdb_conninfo() || !(db = svc_testdb_open(p))) {
        return;
    }
    holder = svc_testdb_name(p, "holder");
    who = apr_pstrcat(p, "user:", svc_testdb_name(p, "hub"), NULL);
    apr_pool_create(&hp, p);
    hub = new_hub(hp, holder, 0, 0, &log);
    svc_hub_step(hub);

    /* Claimed up to the limit, by this hub's holder. */
    apr_pool_create(&sp, hp);
    SVC_CHECK(svc_hub_place_claim(hub, db, sp, who, 2, &a) == APR_SUCCESS && a > 0);
    SVC_CHECK(svc_hub_place_claim(hub, db, sp, who, 2, &b) == APR_SUCCESS && b > a);
    SVC_CHECK(svc_hub_place_claim(hub, db, sp, who, 2, &c) == APR_SUCCESS && c == 0);
    SVC_CHECK_INT(places_of(p, db, holder), 2);
    /* Given back (from any thread): the hub deletes them at its next turn. */
    svc_hub_place_give(hub, a);
    svc_hub_place_give(hub, b);
    apr_pool_destroy(sp);
    SVC_CHECK_INT(places_of(p, db, holder), 2);
    svc_hub_step(hub);
    SVC_CHECK_INT(places_of(p, db, holder), 0);

    /* The hub stops (its process goes away): what it still holds goes with it. */
    apr_pool_create(&keep, hp);
    SVC_CHECK(svc_hub_place_claim(hub, db, keep, who, 2, &d) == APR_SUCCESS && d > 0);
    SVC_CHECK_INT(places_of(p, db, holder), 1);
    apr_pool_destroy(hp);
    SVC_CHECK_INT(places_of(p, db, holder), 0);
    SVC_CHECK_INT(log.n, 0);
}

SVC_TEST(says_once_that_it_cannot_listen)
{
    tlog log = { p, 0, 0, NULL };
    svc_hub_conf_t conf = { 0 };
    svc_hub_t *hub = NULL;
    tsub s;
    apr_int64_t last = 0;
    tread *t = reader(p, -1);

    conf.conninfo = "host=/nonexistent/svc-hub-test port=1 dbname=none connect_timeout=1 "
                    "password=hunter2secret";
    conf.holder = "test";
    conf.wake = count_wake;
    conf.log = keep_log;
    conf.log_baton = &log;
    SVC_CHECK(svc_hub_create(&hub, p, &conf) == APR_SUCCESS);
    memset(&s, 0, sizeof(s));
    svc_hub_subscribe(hub, &s.sub, "org_none");
    svc_hub_step(hub);
    svc_hub_step(hub);
    SVC_CHECK_INT(log.n, 1);
    SVC_CHECK_INT(log.level, SVC_HUB_WARNING);
    SVC_CHECK(log.first && strncmp(log.first, "SVC0030: ", 9) == 0);
    SVC_CHECK(log.first && !contains(log.first, "hunter2secret"));
    /* Not connected: no one woken, every read goes to the table. */
    SVC_CHECK_INT(apr_atomic_read32(&s.woken), 0);
    SVC_CHECK(svc_hub_read(hub, &s.sub, NULL, NULL, &last, take, t) == APR_INCOMPLETE);
    svc_hub_unsubscribe(hub, &s.sub);
}

SVC_TEST(runs_on_its_own_thread)
{
    tsub s;
    tlog log = { p, 0, 0, NULL };
    svc_db_t *db;
    svc_hub_t *hub;
    apr_pool_t *hp, *keep;
    const char *org, *holder;
    apr_int64_t first, last, id = 0, given = 0;
    tread *t = NULL;
    int i;

    if (!svc_testdb_conninfo() || !(db = svc_testdb_open(p))) {
        return;
    }
    org = new_org(p, db);
    holder = svc_testdb_name(p, "holder");
    apr_pool_create(&hp, p);
    hub = new_hub(hp, holder, 0, 0, &log);
    memset(&s, 0, sizeof(s));
    svc_hub_subscribe(hub, &s.sub, org);
    SVC_CHECK(svc_hub_start(hub) == APR_SUCCESS);
    /* Connected once it woke its subscriber. */
    for (i = 0; i < 200 && !apr_atomic_read32(&s.woken); i++) {
        apr_sleep(apr_time_from_msec(100));
    }
    SVC_CHECK(apr_atomic_read32(&s.woken) > 0);
    emit(p, db, org, 1, 1, NULL, NULL);
    first = before_first(p, db, org);
    for (i = 0; i < 200; i++) {
        last = first;
        t = reader(p, -1);
        if (svc_hub_read(hub, &s.sub, NULL, NULL, &last, take, t) == APR_SUCCESS
            && t->ids->nelts) {
            break;
        }
        apr_sleep(apr_time_from_msec(100));
    }
    SVC_CHECK(t && t->ids->nelts == 1 && last == first + 1);
    /* A place held while the hub goes, and one given back just before. */
    apr_pool_create(&keep, hp);
    SVC_CHECK(svc_hub_place_claim(hub, db, keep, apr_pstrcat(p, "user:", holder, NULL), 2, &id)
              == APR_SUCCESS && id > 0);
    SVC_CHECK(svc_hub_place_claim(hub, db, keep, apr_pstrcat(p, "user:", holder, NULL), 2,
                                  &given) == APR_SUCCESS && given > 0);
    svc_hub_place_give(hub, given);
    svc_hub_unsubscribe(hub, &s.sub);
    /* Its pool goes: the thread ends, and gives back the place it held. */
    apr_pool_destroy(hp);
    SVC_CHECK_INT(places_of(p, db, holder), 0);
}

int main(int argc, const char *const *argv)
{
    return svc_test_run(argc, argv);
}
