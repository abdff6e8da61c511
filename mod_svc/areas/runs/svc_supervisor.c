/*
 * svc_supervisor.c: the run supervisor's main loop (svc_runs.h).
 *
 * One main thread with one connection of its own claims queued runs (at
 * most SvcRunConcurrency at a time), renews the leases of the runs it
 * holds every third of a lease, hears of cancellations, fails the runs of
 * nodes whose leases ran out (error code "lost": a run that was cut off
 * halfway is not started again behind the user's back), and removes old
 * idempotency keys and workspaces left behind. It sleeps in poll() on its
 * LISTEN svc_runs connection, so a new run or a cancellation wakes it at
 * once; a periodic look at the table covers notifications missed while
 * the database was away. Each run has a thread of its own (svc_runner.c).
 */
#include "svc_billing.h"
#include "svc_runner.h"
#include "svc_sandbox.h"
#include "svc_workspace.h"

#include <apr_atomic.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TICK_MS         250
#define CLAIM_EVERY_S   2
#define SWEEP_EVERY_S   60
#define KEYS_EVERY_S    3600
/* Budgets are compared with the month's spend this often (svc_billing_sweep:
 * orgs with model calls since their last look only). */
#define BUDGETS_EVERY_S 5
#define RECONNECT_MS    1000

typedef struct {
    const svc_supervisor_conf_t *sc;
    apr_pool_t *p;
    const char *node;
    /* Twice sc->concurrency of them, in use while pool is set: a run counts
     * against SvcRunConcurrency until its outcome is written (settled); its
     * thread may still be removing its workspace when the next run starts. */
    svc_run_slot_t *slots;
    int nslots;
    int ended[2];               /* a run's thread writes a byte when it settles and ends */
    apr_pool_t *db_pool;
    svc_db_t *db;
    unsigned long db_resets;    /* the connection's reconnects when LISTEN was sent */
    apr_time_t next_connect, next_renew, next_reap, next_claim, next_sweep, next_keys;
    apr_time_t next_budgets;
    int claim_soon;
} sup_t;

static void say(const sup_t *s, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(const sup_t *s, int level, const char *fmt, ...)
{
    apr_pool_t *sp;
    va_list ap;

    apr_pool_create(&sp, s->p);
    va_start(ap, fmt);
    s->sc->log(s->sc->log_baton, level, svc_redact(sp, apr_pvsprintf(sp, fmt, ap)));
    va_end(ap);
    apr_pool_destroy(sp);
}

void svc_supervisor_defaults(svc_supervisor_conf_t *sc)
{
    memset(sc, 0, sizeof(*sc));
    sc->statement_timeout_ms = 10000;
    sc->work_dir = SVC_WORK_DIR_DEFAULT;
    sc->factory = SVC_FACTORY_DEFAULT;
    sc->concurrency = 2;
    sc->memory = APR_INT64_C(2) * 1024 * 1024 * 1024;
    sc->processes = 256;
    sc->file_size = APR_INT64_C(64) * 1024 * 1024;
    sc->log_limit = APR_INT64_C(16) * 1024 * 1024;
    sc->lease_seconds = 30;
}

static svc_run_slot_t *slot_of(sup_t *s, const char *run_id)
{
    int i;

    for (i = 0; i < s->nslots; i++) {
        if (s->slots[i].pool && strcmp(s->slots[i].job->id, run_id) == 0) {
            return &s->slots[i];
        }
    }
    return NULL;
}

static void db_drop(sup_t *s)
{
    if (s->db_pool) {
        apr_pool_destroy(s->db_pool);
        s->db_pool = NULL;
        s->db = NULL;
    }
}

/* A lost connection is made anew (and LISTEN sent again) on the next turn. */
static apr_status_t checked(sup_t *s, apr_status_t rv, const char *what)
{
    if (rv == SVC_EDBDOWN) {
        if (s->db) {
            say(s, SVC_SUP_WARNING, "SVC0073: run supervisor: the database connection was "
                "lost (%s): %s", what, svc_db_errmsg(s->db));
        }
        db_drop(s);
        s->next_connect = apr_time_now() + apr_time_from_msec(RECONNECT_MS);
    }
    else if (rv != APR_SUCCESS && rv != SVC_ENOTFOUND) {
        say(s, SVC_SUP_ERR, "SVC0074: run supervisor: %s failed: %s %s", what,
            s->db ? svc_db_sqlstate(s->db) : "", s->db ? svc_db_errmsg(s->db) : "");
    }
    return rv;
}

/* The connection, listening; or NULL until the database is back. */
static svc_db_t *db_get(sup_t *s)
{
    svc_db_stats_t st;
    const char *err = NULL;

    if (!s->db) {
        if (apr_time_now() < s->next_connect) {
            return NULL;
        }
        apr_pool_create(&s->db_pool, s->p);
        if (svc_db_connect(&s->db, s->sc->conninfo, s->db_pool, &err) != APR_SUCCESS) {
            db_drop(s);
            s->next_connect = apr_time_now() + apr_time_from_msec(RECONNECT_MS);
            return NULL;
        }
        svc_db_set_statement_timeout(s->db, s->sc->statement_timeout_ms);
        s->db_resets = (unsigned long)-1;
    }
    /* A connection svc_db made anew behind our back listens to nothing. */
    svc_db_stats(s->db, &st);
    if (st.reconnects != s->db_resets) {
        if (checked(s, svc_db_simple(s->db, "LISTEN svc_runs", s->db_pool), "LISTEN")
            != APR_SUCCESS) {
            return NULL;
        }
        svc_db_stats(s->db, &st);
        s->db_resets = st.reconnects;
        /* Notifications may have been missed meanwhile. */
        s->claim_soon = 1;
        s->next_renew = 0;
    }
    return s->db;
}

static void on_notice(void *baton, const char *channel, const char *payload)
{
    sup_t *s = baton;
    svc_run_slot_t *slot;

    if (strncmp(payload, "queued:", 7) == 0) {
        s->claim_soon = 1;
    }
    else if (strncmp(payload, "cancel:", 7) == 0 && (slot = slot_of(s, payload + 7)) != NULL) {
        svc_run_slot_raise(slot, &slot->cancel);
    }
}

/* Renews the leases; tells each run whether it was cancelled or lost. */
static void renew(sup_t *s, svc_db_t *db)
{
    apr_array_header_t *leases;
    apr_pool_t *sp;
    int i, j;

    apr_pool_create(&sp, s->p);
    if (checked(s, svc_run_renew(db, sp, s->node, s->sc->lease_seconds, &leases), "renewing "
                "leases") != APR_SUCCESS) {
        apr_pool_destroy(sp);
        return;
    }
    for (i = 0; i < s->nslots; i++) {
        svc_run_slot_t *slot = &s->slots[i];
        int held = 0;

        if (!slot->pool || apr_atomic_read32(&slot->settled)) {
            continue;
        }
        for (j = 0; j < leases->nelts; j++) {
            svc_run_lease_t *l = &APR_ARRAY_IDX(leases, j, svc_run_lease_t);
            if (strcmp(l->id, slot->job->id) == 0) {
                held = 1;
                if (l->cancel_requested && !apr_atomic_read32(&slot->cancel)) {
                    svc_run_slot_raise(slot, &slot->cancel);
                }
            }
        }
        if (!held && !apr_atomic_read32(&slot->lost)) {
            say(s, SVC_SUP_WARNING, "SVC0075: run %s: this node no longer holds it (its lease "
                "ran out); stopping it", slot->job->id);
            svc_run_slot_raise(slot, &slot->lost);
        }
    }
    /* Held but not worked on: a claim whose answer was lost. */
    for (j = 0; j < leases->nelts; j++) {
        svc_run_lease_t *l = &APR_ARRAY_IDX(leases, j, svc_run_lease_t);
        if (!slot_of(s, l->id)) {
            say(s, SVC_SUP_NOTICE, "SVC0076: run %s: held by this node but not running here; "
                "putting it back in the queue", l->id);
            checked(s, svc_run_requeue(db, sp, l->id, s->node), "requeueing");
        }
    }
    apr_pool_destroy(sp);
}

/* The runs that count against SvcRunConcurrency: not yet settled. */
static int running(const sup_t *s)
{
    int i, n = 0;

    for (i = 0; i < s->nslots; i++) {
        if (s->slots[i].pool && !apr_atomic_read32(&s->slots[i].settled)) {
            n++;
        }
    }
    return n;
}

static void claim(sup_t *s, svc_db_t *db)
{
    int n;

    while ((n = running(s)) < s->sc->concurrency) {
        svc_run_slot_t *slot = NULL;
        svc_run_job_t *job;
        apr_pool_t *rp;
        apr_status_t rv;
        int i;

        for (i = 0; i < s->nslots && !slot; i++) {
            if (!s->slots[i].pool) {
                slot = &s->slots[i];
            }
        }
        if (!slot) {
            /* Every slot's thread is still cleaning up: the next turn. */
            return;
        }
        /* The run's pool: a root pool, its thread's alone. */
        apr_pool_create(&rp, NULL);
        rv = checked(s, svc_run_claim(db, rp, s->node, s->sc->lease_seconds, &job), "claiming");
        if (rv != APR_SUCCESS || !job) {
            apr_pool_destroy(rp);
            return;
        }
        memset(slot, 0, sizeof(*slot));
        slot->sc = s->sc;
        slot->node = s->node;
        slot->job = job;
        slot->pool = rp;
        slot->ended = s->ended[1];
        if ((rv = svc_run_slot_start(slot)) != APR_SUCCESS) {
            say(s, SVC_SUP_ERR, "SVC0077: run %s: cannot start its thread (%d); putting it "
                "back in the queue", job->id, rv);
            checked(s, svc_run_requeue(db, rp, job->id, s->node), "requeueing");
            slot->pool = NULL;
            apr_pool_destroy(rp);
            return;
        }
        say(s, SVC_SUP_INFO, "SVC0078: run %s claimed (%d of %d)", job->id, n + 1,
            s->sc->concurrency);
    }
}

static void join_done(sup_t *s, int all)
{
    int i;

    for (i = 0; i < s->nslots; i++) {
        svc_run_slot_t *slot = &s->slots[i];

        if (slot->pool && (all || apr_atomic_read32(&slot->done))) {
            svc_run_slot_join(slot);
            apr_pool_destroy(slot->pool);
            slot->pool = NULL;
        }
    }
}

/* Workspaces of runs that are no longer running anywhere (their supervisor
 * was killed, say). Those of this node's runs, and of runs another
 * supervisor on this host runs with the same SvcRunWorkDir, stay. */
static void sweep_workspaces(sup_t *s, svc_db_t *db)
{
    static const svc_stmt_t st_running = {
        "svc_runs_is_running",
        "SELECT 1 FROM runs WHERE id = $1 AND status = 'running'",
        1, SVC_STMT_READ
    };
    apr_array_header_t *names;
    apr_pool_t *sp;
    int i;

    apr_pool_create(&sp, s->p);
    names = svc_workspace_list(sp, s->sc->work_dir);
    for (i = 0; i < names->nelts; i++) {
        const char *name = APR_ARRAY_IDX(names, i, const char *);
        svc_dbres_t *res;

        if (slot_of(s, name)
            || checked(s, svc_db_execv(db, &st_running, sp, &res, name), "sweeping")
               != APR_SUCCESS
            || svc_dbres_rows(res) > 0) {
            continue;
        }
        if (svc_workspace_remove(apr_pstrcat(sp, s->sc->work_dir, "/", name, NULL))
            != APR_SUCCESS) {
            say(s, SVC_SUP_WARNING, "SVC0304: the workspace %s/%s could not be removed "
                "entirely", s->sc->work_dir, name);
        }
    }
    apr_pool_destroy(sp);
}

static int usable_work_dir(const sup_t *s)
{
    struct stat st;

    if (stat(s->sc->work_dir, &st) < 0 || !S_ISDIR(st.st_mode)
        || access(s->sc->work_dir, R_OK | W_OK | X_OK) < 0) {
        say(s, SVC_SUP_ERR, "SVC0303: run supervisor: SvcRunWorkDir %s is not a directory "
            "this process can use (%s); no runs are carried out", s->sc->work_dir,
            strerror(errno));
        return 0;
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        /* Workspaces hold what the runs build: for httpd's user alone. */
        chmod(s->sc->work_dir, S_IRWXU);
    }
    return 1;
}

int svc_supervisor_run(const svc_supervisor_conf_t *sc, volatile sig_atomic_t *stop,
                       apr_pool_t *p)
{
    sup_t s;
    char host[256];

    memset(&s, 0, sizeof(s));
    s.sc = sc;
    s.p = p;
    if (gethostname(host, sizeof(host)) < 0) {
        apr_cpystrn(host, "localhost", sizeof(host));
    }
    host[sizeof(host) - 1] = '\0';
    s.node = apr_psprintf(p, "%s/%ld/%s", host, (long)getpid(), svc_random_base62(p, 6));
    if (!usable_work_dir(&s)) {
        return 1;
    }
    if (!sc->runner && access(sc->factory, X_OK) < 0) {
        say(&s, SVC_SUP_ERR, "SVC0072: run supervisor: SvcRunFactory %s cannot be run (%s); "
            "runs will fail", sc->factory, strerror(errno));
    }
    if (pipe2(s.ended, O_CLOEXEC | O_NONBLOCK) < 0) {
        say(&s, SVC_SUP_ERR, "SVC0830: run supervisor: no pipe (%s); no runs are carried out",
            strerror(errno));
        return 1;
    }
    s.nslots = 2 * sc->concurrency;
    s.slots = apr_pcalloc(p, sizeof(*s.slots) * (apr_size_t)s.nslots);
    s.claim_soon = 1;
    say(&s, SVC_SUP_NOTICE, "SVC0079: run supervisor %s: up to %d runs at once, workspaces in "
        "%s, sandbox: %s", s.node, sc->concurrency, sc->work_dir,
        sc->runner ? sc->runner[0] : "bubblewrap");

    while (!*stop) {
        apr_time_t now = apr_time_now();
        svc_db_t *db;
        struct pollfd pfd[2];
        char buf[64];

        join_done(&s, 0);
        /* Alive, for /internal/ready: only while it reaches the database,
         * since a supervisor without one claims and renews nothing. */
        if (db_get(&s) != NULL && sc->conf) {
            svc_shared_beat(sc->conf->shared);
        }
        if ((db = db_get(&s)) != NULL && now >= s.next_renew) {
            renew(&s, db);
            s.next_renew = now + apr_time_from_sec(sc->lease_seconds) / 3;
        }
        if ((db = db_get(&s)) != NULL && now >= s.next_reap) {
            int reaped = 0;
            apr_pool_t *sp;

            apr_pool_create(&sp, p);
            checked(&s, svc_run_reap(db, sp, &reaped), "reaping lost runs");
            if (reaped) {
                say(&s, SVC_SUP_NOTICE, "SVC0080: %d run(s) of a node that stopped renewing "
                    "its leases failed as lost", reaped);
            }
            apr_pool_destroy(sp);
            s.next_reap = now + apr_time_from_sec(sc->lease_seconds) / 3;
        }
        if ((db = db_get(&s)) != NULL && (s.claim_soon || now >= s.next_claim)) {
            s.claim_soon = 0;
            claim(&s, db);
            s.next_claim = now + apr_time_from_sec(CLAIM_EVERY_S);
        }
        if ((db = db_get(&s)) != NULL && now >= s.next_sweep) {
            sweep_workspaces(&s, db);
            s.next_sweep = now + apr_time_from_sec(SWEEP_EVERY_S);
        }
        if ((db = db_get(&s)) != NULL && now >= s.next_keys) {
            apr_pool_t *sp;

            apr_pool_create(&sp, p);
            checked(&s, svc_run_sweep_keys(db, sp), "removing old idempotency keys");
            apr_pool_destroy(sp);
            s.next_keys = now + apr_time_from_sec(KEYS_EVERY_S);
        }
        if ((db = db_get(&s)) != NULL && now >= s.next_budgets && sc->conf) {
            apr_pool_t *sp;
            int alerts = 0;

            apr_pool_create(&sp, p);
            checked(&s, svc_billing_sweep(db, sp, sc->conf, &alerts), "checking budgets");
            if (alerts) {
                say(&s, SVC_SUP_INFO, "SVC0703: %d budget alert(s) sent", alerts);
            }
            apr_pool_destroy(sp);
            s.next_budgets = now + apr_time_from_sec(BUDGETS_EVERY_S);
        }
        /* A run that settles frees its place at once: the queue's next run
         * is claimed then, not at the next tick or claim (SvcRunConcurrency
         * runs back to back, docs/performance.md). */
        /* A notification that came in with a statement's answer (a claim's,
         * say) is in libpq's queue already, not on the socket: the poll
         * would not see it, and the run would wait for the next claim. */
        if (s.db) {
            checked(&s, svc_db_notifications(s.db, on_notice, &s), "listening");
        }
        pfd[0] = (struct pollfd){ s.ended[0], POLLIN, 0 };
        pfd[1] = (struct pollfd){ s.db ? svc_db_socket(s.db) : -1, POLLIN, 0 };
        if (poll(pfd, pfd[1].fd >= 0 ? 2 : 1, s.claim_soon && s.db ? 0 : TICK_MS) > 0) {
            if (pfd[0].revents) {
                while (read(s.ended[0], buf, sizeof(buf)) > 0) {
                }
                s.claim_soon = 1;
            }
            if (pfd[1].revents && s.db) {
                checked(&s, svc_db_notifications(s.db, on_notice, &s), "listening");
            }
        }
    }

    /* An orderly stop: the runs go back to the queue for whoever is next. */
    {
        int i;

        for (i = 0; i < s.nslots; i++) {
            if (s.slots[i].pool) {
                svc_run_slot_raise(&s.slots[i], &s.slots[i].stop);
            }
        }
        join_done(&s, 1);
    }
    db_drop(&s);
    close(s.ended[0]);
    close(s.ended[1]);
    say(&s, SVC_SUP_INFO, "SVC0081: run supervisor %s stopped", s.node);
    return 0;
}
