/*
 * svc_db.c: data access on a libpq connection (see svc_db.h for the traps
 * this file exists to avoid).
 */
#include "svc_db.h"

#include <apr_hash.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#define SVC_DB_CACHE_KEY "svc_db_conncache"

/* What we remember about one pooled connection, in its own pool. */
typedef struct {
    int backend_pid;            /* the backend the statements were prepared on */
    apr_hash_t *prepared;       /* statement name -> non-NULL */
    svc_db_stats_t stats;
} svc_conncache_t;

/* A statement waiting to ride along with the next read (svc_db_defer). */
typedef struct {
    const svc_stmt_t *st;
    const char **params;
    svc_db_check_fn check;
    void *baton;
    apr_pool_t *pool;
} deferred_t;

struct svc_db_t {
    PGconn *conn;
    svc_conncache_t *cache;
    int statement_timeout_ms;
    int in_tx;
    int guard_writes;           /* writes only inside a transaction (svc_db_guard_writes) */
    int lost;                   /* the last failure lost the connection */
    deferred_t *deferred;
    char sqlstate[6];
    char constraint[64];
    char errmsg[256];
};

struct svc_dbres_t {
    PGresult *res;
};

static apr_status_t res_cleanup(void *data)
{
    svc_dbres_t *r = data;
    if (r->res) {
        PQclear(r->res);
        r->res = NULL;
    }
    return APR_SUCCESS;
}

static apr_status_t conn_cleanup(void *data)
{
    PQfinish((PGconn *)data);
    return APR_SUCCESS;
}

/* Server notices (NOTICE, WARNING) would go to stderr, which is httpd's
 * error log; they carry nothing we act on. */
static void quiet_notices(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static svc_conncache_t *cache_get(PGconn *conn, apr_pool_t *conn_pool)
{
    svc_conncache_t *cache = NULL;

    apr_pool_userdata_get((void **)&cache, SVC_DB_CACHE_KEY, conn_pool);
    if (!cache) {
        cache = apr_pcalloc(conn_pool, sizeof(*cache));
        cache->prepared = apr_hash_make(conn_pool);
        cache->backend_pid = -1;
        apr_pool_userdata_set(cache, SVC_DB_CACHE_KEY, NULL, conn_pool);
        PQsetNoticeProcessor(conn, quiet_notices, NULL);
    }
    return cache;
}

apr_status_t svc_db_wrap(svc_db_t **pdb, PGconn *conn, apr_pool_t *conn_pool,
                         int statement_timeout_ms, apr_pool_t *p)
{
    svc_db_t *db;

    if (!conn) {
        return SVC_EDBDOWN;
    }
    db = apr_pcalloc(p, sizeof(*db));
    db->conn = conn;
    db->cache = cache_get(conn, conn_pool);
    db->statement_timeout_ms = statement_timeout_ms;
    db->in_tx = (PQtransactionStatus(conn) == PQTRANS_INTRANS);
    *pdb = db;
    return APR_SUCCESS;
}

apr_status_t svc_db_connect(svc_db_t **pdb, const char *conninfo, apr_pool_t *p,
                            const char **perr)
{
    PGconn *conn;
    apr_pool_t *cp;

    /* One pool per connection: its statement cache lives there. */
    apr_pool_create(&cp, p);
    p = cp;
    conn = PQconnectdb(conninfo ? conninfo : "");
    if (!conn) {
        *perr = "out of memory";
        return APR_ENOMEM;
    }
    apr_pool_cleanup_register(p, conn, conn_cleanup, apr_pool_cleanup_null);
    if (PQstatus(conn) != CONNECTION_OK) {
        *perr = apr_pstrdup(p, PQerrorMessage(conn));
        return SVC_EDBDOWN;
    }
    return svc_db_wrap(pdb, conn, p, 0, p);
}

void svc_db_set_statement_timeout(svc_db_t *db, int ms)
{
    db->statement_timeout_ms = ms;
}

PGconn *svc_db_conn(svc_db_t *db)
{
    return db->conn;
}

void svc_db_guard_writes(svc_db_t *db)
{
    db->guard_writes = 1;
}

static void note_error(svc_db_t *db, const PGresult *res)
{
    const char *s;

    db->sqlstate[0] = '\0';
    db->constraint[0] = '\0';
    if (res) {
        s = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        if (s) {
            apr_cpystrn(db->sqlstate, s, sizeof(db->sqlstate));
        }
        s = PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME);
        if (s) {
            apr_cpystrn(db->constraint, s, sizeof(db->constraint));
        }
        s = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    }
    else {
        s = NULL;
    }
    if (!s) {
        s = PQerrorMessage(db->conn);
    }
    apr_cpystrn(db->errmsg, s ? s : "unknown error", sizeof(db->errmsg));
}

/* Is the failure one of losing the server rather than of the statement? */
static int lost_connection(svc_db_t *db)
{
    /*
     * Every error the server reports carries an SQLSTATE; one without is
     * libpq's own, i.e. about the connection. libpq may still call the
     * connection OK at that point (a failed write is reported before the
     * read that would notice the socket is gone).
     */
    if (PQstatus(db->conn) != CONNECTION_OK || db->sqlstate[0] == '\0') {
        return 1;
    }
    /* 08xxx connection exceptions; 57P01-03 shutdown and start-up. */
    return strncmp(db->sqlstate, "08", 2) == 0
        || strcmp(db->sqlstate, "57P01") == 0
        || strcmp(db->sqlstate, "57P02") == 0
        || strcmp(db->sqlstate, "57P03") == 0;
}

static apr_status_t classify(svc_db_t *db)
{
    db->lost = lost_connection(db);
    if (db->lost) {
        /* in_tx stays set: the caller's transaction is gone, and nothing may
         * run outside it until the caller rolls back. */
        return SVC_EDBDOWN;
    }
    if (strcmp(db->sqlstate, "23505") == 0) {
        return SVC_ECONFLICT;
    }
    if (strncmp(db->sqlstate, "23", 2) == 0) {
        return SVC_EINTEGRITY;
    }
    /*
     * A statement timeout means the database is overloaded; a serialization
     * failure or a deadlock means the transaction lost a race and nothing
     * of it stays. Either way the client may simply try again (503).
     */
    if (strcmp(db->sqlstate, "57014") == 0 || strcmp(db->sqlstate, "40001") == 0
        || strcmp(db->sqlstate, "40P01") == 0) {
        return SVC_EDBDOWN;
    }
    return SVC_EDB;
}

/*
 * Notices a new backend behind the same PGconn (the driver or we ourselves
 * reset it): the statements prepared on the old one are gone, and the
 * per-session settings must be made again.
 */
static apr_status_t sync_backend(svc_db_t *db)
{
    int pid;
    PGresult *res;
    char sql[96];

    if (PQstatus(db->conn) != CONNECTION_OK) {
        apr_cpystrn(db->errmsg, PQerrorMessage(db->conn), sizeof(db->errmsg));
        db->lost = 1;
        return SVC_EDBDOWN;
    }
    pid = PQbackendPID(db->conn);
    if (pid == db->cache->backend_pid) {
        return APR_SUCCESS;
    }
    apr_hash_clear(db->cache->prepared);
    if (db->cache->backend_pid != -1) {
        db->cache->stats.reconnects++;
    }
    db->cache->backend_pid = -1;
    /*
     * These two are the same for every tenant and request, so setting them
     * for the session is safe (trap 10 concerns per-request state).
     */
    apr_snprintf(sql, sizeof(sql),
                 "SET statement_timeout = %d; SET TIME ZONE 'UTC'",
                 db->statement_timeout_ms > 0 ? db->statement_timeout_ms : 0);
    res = PQexec(db->conn, sql);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        apr_status_t rv;
        note_error(db, res);
        PQclear(res);
        rv = classify(db);
        return rv;
    }
    PQclear(res);
    db->cache->backend_pid = pid;
    return APR_SUCCESS;
}

static apr_status_t try_reset(svc_db_t *db)
{
    db->cache->stats.retries++;
    PQreset(db->conn);
    if (PQstatus(db->conn) != CONNECTION_OK) {
        apr_cpystrn(db->errmsg, PQerrorMessage(db->conn), sizeof(db->errmsg));
        db->lost = 1;
        return SVC_EDBDOWN;
    }
    return APR_SUCCESS;
}

/* Prepares a statement on this backend unless it already is. */
static apr_status_t ensure_prepared(svc_db_t *db, const svc_stmt_t *st)
{
    PGresult *res;
    apr_status_t rv = APR_SUCCESS;

    if (apr_hash_get(db->cache->prepared, st->name, APR_HASH_KEY_STRING)) {
        return APR_SUCCESS;
    }
    res = PQprepare(db->conn, st->name, st->sql, st->nparams, NULL);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        note_error(db, res);
        rv = classify(db);
    }
    else {
        /* The name is a static string: the hash can keep the pointer. */
        apr_hash_set(db->cache->prepared, st->name, APR_HASH_KEY_STRING, st);
        db->cache->stats.prepares++;
    }
    PQclear(res);
    return rv;
}

/* A successful result handed to the caller (owned by p), or cleared. */
static void keep_result(apr_pool_t *p, PGresult *res, svc_dbres_t **pres)
{
    if (pres) {
        svc_dbres_t *r = apr_palloc(p, sizeof(*r));
        r->res = res;
        apr_pool_cleanup_register(p, r, res_cleanup, apr_pool_cleanup_null);
        *pres = r;
    }
    else {
        PQclear(res);
    }
}

static int result_format(const svc_stmt_t *st)
{
    return (st->flags & SVC_STMT_BINARY) ? 1 : 0;
}

static int result_ok(const PGresult *res)
{
    ExecStatusType est = PQresultStatus(res);

    return est == PGRES_COMMAND_OK || est == PGRES_TUPLES_OK;
}

/*
 * Leaves pipeline mode whatever state the pipeline is in: results not read
 * yet are drained. If libpq still will not leave it, the connection is
 * reset, so it never goes back to the pool in pipeline mode.
 */
static void leave_pipeline(svc_db_t *db)
{
    PGresult *r;
    int guard;

    if (PQpipelineStatus(db->conn) == PQ_PIPELINE_OFF) {
        return;
    }
    for (guard = 0; !PQexitPipelineMode(db->conn) && guard < 16; guard++) {
        if (PQstatus(db->conn) != CONNECTION_OK) {
            break;
        }
        while ((r = PQgetResult(db->conn)) != NULL) {
            ExecStatusType est = PQresultStatus(r);
            PQclear(r);
            if (est == PGRES_PIPELINE_SYNC) {
                break;
            }
        }
    }
    if (PQpipelineStatus(db->conn) != PQ_PIPELINE_OFF) {
        PQreset(db->conn);
        db->lost = 1;
    }
}

/*
 * Sends the deferred statement and the read `st` in one round trip
 * (pipeline mode), calls the deferred check on the first result, and only
 * then hands out the second. Both are reads, so after a lost connection or
 * a forgotten prepared statement the pair may be sent again once. When no
 * verdict could be had, the deferred statement stays pending, so a later
 * statement (a write above all) cannot run without it.
 */
static apr_status_t exec_pipelined(svc_db_t *db, deferred_t *d, const svc_stmt_t *st,
                                   apr_pool_t *p, svc_dbres_t **pres,
                                   const char *const *params)
{
    PGresult *res[2], *r;
    int attempts = 0, resets = 0, need_reset = 0, i, guard;
    apr_status_t rv, crv;

again:
    attempts++;
    res[0] = res[1] = NULL;
    db->lost = 0;
    if (need_reset || PQstatus(db->conn) != CONNECTION_OK) {
        /* Known dead before anything was sent: one new connection per call. */
        if (resets++ || (rv = try_reset(db)) != APR_SUCCESS) {
            rv = SVC_EDBDOWN;
            goto failed;
        }
    }
    if ((rv = sync_backend(db)) != APR_SUCCESS
        || (rv = ensure_prepared(db, d->st)) != APR_SUCCESS
        || (rv = ensure_prepared(db, st)) != APR_SUCCESS) {
        goto failed;
    }
    if (!PQenterPipelineMode(db->conn)
        || !PQsendQueryPrepared(db->conn, d->st->name, d->st->nparams,
                                (const char *const *)d->params, NULL, NULL,
                                result_format(d->st))
        || !PQsendQueryPrepared(db->conn, st->name, st->nparams, params, NULL, NULL,
                                result_format(st))
        || !PQpipelineSync(db->conn)) {
        note_error(db, NULL);
        rv = classify(db);
        leave_pipeline(db);
        goto failed;
    }
    /*
     * Each statement yields its result, then NULL; the sync point ends the
     * pipeline. The guard bounds the loop if the connection dies halfway.
     */
    for (i = 0, guard = 0; guard < 16; guard++) {
        r = PQgetResult(db->conn);
        if (!r) {
            if (PQstatus(db->conn) != CONNECTION_OK) {
                break;
            }
            continue;
        }
        if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            break;
        }
        if (i < 2) {
            res[i++] = r;
        }
        else {
            PQclear(r);
        }
    }
    leave_pipeline(db);
    db->cache->stats.pipelined++;
    if (!res[0] || !result_ok(res[0])) {
        note_error(db, res[0]);
        rv = classify(db);
        goto failed;
    }
    /* The check decides before anyone looks at what the read returned,
     * and whatever became of the read. */
    {
        svc_dbres_t first = { res[0] };
        crv = d->check(d->baton, &first);
    }
    PQclear(res[0]);
    res[0] = NULL;
    if (crv != APR_SUCCESS) {
        PQclear(res[1]);
        return crv;
    }
    if (!res[1] || !result_ok(res[1])) {
        note_error(db, res[1] && PQresultStatus(res[1]) != PGRES_PIPELINE_ABORTED
                       ? res[1] : NULL);
        PQclear(res[1]);
        /* The check has passed: from here on this is an ordinary read. */
        if (strcmp(db->sqlstate, "26000") == 0 && attempts == 1) {
            apr_hash_clear(db->cache->prepared);
            return svc_db_exec(db, st, p, pres, params);
        }
        rv = classify(db);
        if (rv == SVC_EDBDOWN && db->lost && attempts == 1
            && try_reset(db) == APR_SUCCESS) {
            return svc_db_exec(db, st, p, pres, params);
        }
        return rv;
    }
    keep_result(p, res[1], pres);
    return APR_SUCCESS;

failed:
    PQclear(res[0]);
    PQclear(res[1]);
    if (attempts == 1 && strcmp(db->sqlstate, "26000") == 0) {
        /* Our cache believed in a statement the server does not have. */
        apr_hash_clear(db->cache->prepared);
        goto again;
    }
    if (rv == SVC_EDBDOWN && db->lost && attempts == 1 && !resets) {
        /* The top of the loop reconnects, once. */
        need_reset = 1;
        goto again;
    }
    /* No verdict: the check stays pending for whatever runs next. */
    db->deferred = d;
    return rv;
}

apr_status_t svc_db_defer(svc_db_t *db, const svc_stmt_t *st, const char *const *params,
                          svc_db_check_fn check, void *baton, apr_pool_t *p)
{
    deferred_t *d;
    apr_status_t rv;
    int i;

    /* One check at a time: an earlier one is settled first. */
    if (db->deferred && (rv = svc_db_flush(db)) != APR_SUCCESS) {
        return rv;
    }
    d = apr_palloc(p, sizeof(*d));
    d->st = st;
    d->params = apr_palloc(p, sizeof(char *) * (apr_size_t)(st->nparams ? st->nparams : 1));
    for (i = 0; i < st->nparams; i++) {
        d->params[i] = params[i] ? apr_pstrdup(p, params[i]) : NULL;
    }
    d->check = check;
    d->baton = baton;
    d->pool = p;
    db->deferred = d;
    return APR_SUCCESS;
}

int svc_db_pending(svc_db_t *db)
{
    return db && db->deferred != NULL;
}

apr_status_t svc_db_flush(svc_db_t *db)
{
    deferred_t *d = db->deferred;
    svc_dbres_t *res;
    apr_status_t rv;

    if (!d) {
        return APR_SUCCESS;
    }
    db->deferred = NULL;
    rv = svc_db_exec(db, d->st, d->pool, &res, (const char *const *)d->params);
    if (rv != APR_SUCCESS) {
        /* No verdict: still pending, so nothing after it runs unchecked. */
        db->deferred = d;
        return rv;
    }
    return d->check(d->baton, res);
}

apr_status_t svc_db_exec(svc_db_t *db, const svc_stmt_t *st, apr_pool_t *p,
                         svc_dbres_t **pres, const char *const *params)
{
    int retryable = !db->in_tx && (st->flags & (SVC_STMT_READ | SVC_STMT_RETRY));
    int attempts = 0;
    PGresult *res = NULL;
    apr_status_t rv;

    if (pres) {
        *pres = NULL;
    }
    if (db->guard_writes && !db->in_tx && !(st->flags & (SVC_STMT_READ | SVC_STMT_ALONE))) {
        /* A change made outside svc_write would be answered after it is
         * saved, or saved without its answer. */
        apr_snprintf(db->errmsg, sizeof(db->errmsg), "%s may write, outside a transaction: "
                     "refused (a request writes through svc_write)", st->name);
        db->sqlstate[0] = '\0';
        return APR_EGENERAL;
    }
    if (db->deferred) {
        /* A read may travel with the deferred statement; anything else waits
         * for its check, so no write happens on an assumption. */
        if (!db->in_tx && (st->flags & SVC_STMT_READ)) {
            deferred_t *d = db->deferred;
            db->deferred = NULL;
            return exec_pipelined(db, d, st, p, pres, params);
        }
        if ((rv = svc_db_flush(db)) != APR_SUCCESS) {
            return rv;
        }
    }
again:
    attempts++;
    if (attempts == 1 && !db->in_tx && PQstatus(db->conn) != CONNECTION_OK
        && (rv = try_reset(db)) != APR_SUCCESS) {
        /* Known dead before anything was sent: a new connection is safe. */
        return rv;
    }
    rv = sync_backend(db);
    if (rv == APR_SUCCESS) {
        rv = ensure_prepared(db, st);
    }
    if (rv == APR_SUCCESS) {
        res = PQexecPrepared(db->conn, st->name, st->nparams, params, NULL, NULL,
                             result_format(st));
        if (result_ok(res)) {
            keep_result(p, res, pres);
            return APR_SUCCESS;
        }
        note_error(db, res);
        PQclear(res);
        res = NULL;
        if (strcmp(db->sqlstate, "26000") == 0 && !db->in_tx && attempts == 1) {
            /* Our cache believed in a statement the server does not have:
             * nothing ran, so preparing again and retrying is always safe. */
            apr_hash_clear(db->cache->prepared);
            goto again;
        }
        rv = classify(db);
    }
    /* Retry after losing the connection, never after a timeout: running a
     * slow statement again would only add to an overloaded database. */
    if (rv == SVC_EDBDOWN && db->lost && retryable && attempts == 1
        && try_reset(db) == APR_SUCCESS) {
        goto again;
    }
    return rv;
}

/* The most parameters a variadic call passes. */
#define SVC_DB_VARGS 32

/* The variadic calls' parameters, st->nparams of them, into params. */
static apr_status_t params_of(const svc_stmt_t *st, const char **params, va_list ap)
{
    int i;

    if (st->nparams > SVC_DB_VARGS) {
        return APR_EINVAL;
    }
    for (i = 0; i < st->nparams; i++) {
        params[i] = va_arg(ap, const char *);
    }
    return APR_SUCCESS;
}

apr_status_t svc_db_execv(svc_db_t *db, const svc_stmt_t *st, apr_pool_t *p,
                          svc_dbres_t **pres, ...)
{
    const char *params[SVC_DB_VARGS];
    apr_status_t rv;
    va_list ap;

    va_start(ap, pres);
    rv = params_of(st, params, ap);
    va_end(ap);
    return rv == APR_SUCCESS ? svc_db_exec(db, st, p, pres, params) : rv;
}

apr_status_t svc_db_value(svc_db_t *db, const svc_stmt_t *st, apr_pool_t *p,
                          const char **pvalue, apr_size_t *plen, ...)
{
    const char *params[SVC_DB_VARGS];
    svc_dbres_t *res;
    apr_status_t rv;
    va_list ap;

    va_start(ap, plen);
    rv = params_of(st, params, ap);
    va_end(ap);
    if (rv != APR_SUCCESS || (rv = svc_db_exec(db, st, p, &res, params)) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_ENOTFOUND;
    }
    *pvalue = svc_dbres_str(res, 0, 0);
    if (plen) {
        *plen = svc_dbres_len(res, 0, 0);
    }
    return APR_SUCCESS;
}

static apr_status_t simple(svc_db_t *db, const char *sql, const char *expect_tag,
                           int retryable)
{
    PGresult *res;
    int attempts = 0;
    apr_status_t rv;

    if (db->deferred && (rv = svc_db_flush(db)) != APR_SUCCESS) {
        return rv;
    }

again:
    attempts++;
    if (attempts == 1 && !db->in_tx && PQstatus(db->conn) != CONNECTION_OK
        && (rv = try_reset(db)) != APR_SUCCESS) {
        return rv;
    }
    rv = sync_backend(db);
    if (rv == APR_SUCCESS) {
        ExecStatusType est;

        res = PQexec(db->conn, sql);
        est = PQresultStatus(res);
        if (est == PGRES_COMMAND_OK || est == PGRES_TUPLES_OK) {
            /* COMMIT of a failed transaction answers "ROLLBACK": not a success. */
            if (expect_tag && strcmp(PQcmdStatus(res), expect_tag) != 0) {
                apr_cpystrn(db->errmsg, "transaction was rolled back", sizeof(db->errmsg));
                apr_cpystrn(db->sqlstate, "40000", sizeof(db->sqlstate));
                PQclear(res);
                return SVC_EDB;
            }
            PQclear(res);
            return APR_SUCCESS;
        }
        note_error(db, res);
        PQclear(res);
        rv = classify(db);
    }
    if (rv == SVC_EDBDOWN && db->lost && retryable && attempts == 1
        && try_reset(db) == APR_SUCCESS) {
        goto again;
    }
    return rv;
}

apr_status_t svc_db_simple(svc_db_t *db, const char *sql, apr_pool_t *p)
{
    (void)p;
    return simple(db, sql, NULL, 0);
}

apr_status_t svc_db_begin(svc_db_t *db)
{
    apr_status_t rv;

    if (db->in_tx) {
        return APR_EGENERAL;
    }
    /* Nothing has run yet, so a dead pooled connection may be replaced. */
    rv = simple(db, "BEGIN", NULL, 1);
    if (rv == APR_SUCCESS) {
        db->in_tx = 1;
    }
    return rv;
}

apr_status_t svc_db_commit(svc_db_t *db)
{
    apr_status_t rv;

    if (!db->in_tx) {
        return APR_EGENERAL;
    }
    rv = simple(db, "COMMIT", "COMMIT", 0);
    db->in_tx = 0;
    if (rv != APR_SUCCESS && PQtransactionStatus(db->conn) != PQTRANS_IDLE) {
        svc_db_rollback(db);
    }
    return rv;
}

void svc_db_rollback(svc_db_t *db)
{
    PGresult *res;

    db->in_tx = 0;
    if (PQstatus(db->conn) != CONNECTION_OK) {
        return;
    }
    switch (PQtransactionStatus(db->conn)) {
    case PQTRANS_INTRANS:
    case PQTRANS_INERROR:
        res = PQexec(db->conn, "ROLLBACK");
        PQclear(res);
        break;
    default:
        break;
    }
}

apr_status_t svc_db_tx(svc_db_t *db, apr_pool_t *p, svc_db_tx_fn fn, void *baton)
{
    apr_status_t rv;

    if ((rv = svc_db_begin(db)) != APR_SUCCESS) {
        return rv;
    }
    rv = fn(db, p, baton);
    if (rv != APR_SUCCESS) {
        svc_db_rollback(db);
        return rv;
    }
    /* A COMMIT that fails has rolled back (svc_db_commit): all or nothing. */
    return svc_db_commit(db);
}

int svc_db_in_tx(svc_db_t *db)
{
    return db->in_tx;
}

void svc_db_release(svc_db_t *db)
{
    if (db && db->conn) {
        /* Whoever deferred a check has flushed it or no longer needs it. */
        db->deferred = NULL;
        svc_db_rollback(db);
    }
}

int svc_dbres_rows(const svc_dbres_t *res)
{
    return res ? PQntuples(res->res) : 0;
}

const char *svc_dbres_str(const svc_dbres_t *res, int row, int col)
{
    if (!res || row >= PQntuples(res->res) || col >= PQnfields(res->res)
        || PQgetisnull(res->res, row, col)) {
        return NULL;
    }
    return PQgetvalue(res->res, row, col);
}

int svc_dbres_isnull(const svc_dbres_t *res, int row, int col)
{
    return svc_dbres_str(res, row, col) == NULL;
}

apr_size_t svc_dbres_len(const svc_dbres_t *res, int row, int col)
{
    return svc_dbres_str(res, row, col) ? (apr_size_t)PQgetlength(res->res, row, col) : 0;
}

/* Binary integers arrive in network byte order. */
static apr_uint64_t be_uint(const unsigned char *b, int n)
{
    apr_uint64_t v = 0;
    int i;

    for (i = 0; i < n; i++) {
        v = (v << 8) | b[i];
    }
    return v;
}

/* The same, two's complement, sign-extended: without relying on the
 * implementation-defined conversion of an out-of-range unsigned value. */
static apr_int64_t be_int(const unsigned char *b, int n)
{
    apr_uint64_t u = be_uint(b, n);

    if (n < 8) {
        apr_uint64_t sign = (apr_uint64_t)1 << (8 * n - 1);
        return (apr_int64_t)(u ^ sign) - (apr_int64_t)sign;
    }
    return u <= (apr_uint64_t)APR_INT64_MAX ? (apr_int64_t)u : -(apr_int64_t)~u - 1;
}

unsigned svc_dbres_type(const svc_dbres_t *res, int col, int *pbinary)
{
    if (!res || col < 0 || col >= PQnfields(res->res)) {
        return 0;
    }
    if (pbinary) {
        *pbinary = PQfformat(res->res, col) == 1;
    }
    return (unsigned)PQftype(res->res, col);
}

int svc_dbres_cols(const svc_dbres_t *res)
{
    return res ? PQnfields(res->res) : 0;
}

/* The raw binary value of a column of type `oid` exactly `len` bytes long. */
static const unsigned char *binary_value(const svc_dbres_t *res, int row, int col,
                                         unsigned oid, int len)
{
    const char *s = svc_dbres_str(res, row, col);

    if (!s || PQfformat(res->res, col) != 1 || (unsigned)PQftype(res->res, col) != oid
        || PQgetlength(res->res, row, col) != len) {
        return NULL;
    }
    return (const unsigned char *)s;
}

apr_status_t svc_dbres_int64(const svc_dbres_t *res, int row, int col, apr_int64_t *pv)
{
    const char *s = svc_dbres_str(res, row, col);
    char *end;
    long long v;

    if (s && PQfformat(res->res, col) == 1) {
        static const struct { unsigned oid; int len; } ints[] = {
            { SVC_OID_INT8, 8 }, { SVC_OID_INT4, 4 }, { SVC_OID_INT2, 2 }
        };
        unsigned i;

        for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
            const unsigned char *b = binary_value(res, row, col, ints[i].oid, ints[i].len);
            if (b) {
                *pv = be_int(b, ints[i].len);
                return APR_SUCCESS;
            }
        }
        return APR_EINVAL;
    }
    /* strtoll would skip leading blanks and take a "+" sign. */
    if (!s || !(*s == '-' || (*s >= '0' && *s <= '9'))) {
        return APR_EINVAL;
    }
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end) {
        return APR_EINVAL;
    }
    *pv = (apr_int64_t)v;
    return APR_SUCCESS;
}

int svc_dbres_bool(const svc_dbres_t *res, int row, int col)
{
    const char *s = svc_dbres_str(res, row, col);

    if (!s) {
        return -1;
    }
    if (PQfformat(res->res, col) == 1) {
        const unsigned char *b = binary_value(res, row, col, SVC_OID_BOOL, 1);
        return b ? b[0] != 0 : -1;
    }
    return s[0] == 't';
}

/* PostgreSQL counts timestamps in microseconds from 2000-01-01 00:00 UTC. */
#define PG_EPOCH_USEC APR_INT64_C(946684800000000)

apr_status_t svc_dbres_time(const svc_dbres_t *res, int row, int col, apr_time_t *pt)
{
    const unsigned char *b = binary_value(res, row, col, SVC_OID_TIMESTAMPTZ, 8);
    apr_int64_t v;

    if (!b) {
        return APR_EINVAL;
    }
    v = be_int(b, 8);
    /* +/-infinity are the extremes; nothing we store is near either. */
    if (v == APR_INT64_MAX || v == APR_INT64_MIN || v > APR_INT64_MAX - PG_EPOCH_USEC) {
        return APR_EINVAL;
    }
    *pt = (apr_time_t)(v + PG_EPOCH_USEC);
    return APR_SUCCESS;
}

long svc_dbres_affected(const svc_dbres_t *res)
{
    const char *s = res ? PQcmdTuples(res->res) : "";

    return *s ? strtol(s, NULL, 10) : 0;
}

const char *svc_db_errmsg(svc_db_t *db)
{
    return db->errmsg;
}

const char *svc_db_sqlstate(svc_db_t *db)
{
    return db->sqlstate;
}

const char *svc_db_constraint(svc_db_t *db)
{
    return db->constraint;
}

void svc_db_stats(svc_db_t *db, svc_db_stats_t *pstats)
{
    *pstats = db->cache->stats;
}

int svc_db_socket(svc_db_t *db)
{
    return db && db->conn && PQstatus(db->conn) == CONNECTION_OK ? PQsocket(db->conn) : -1;
}

apr_status_t svc_db_notifications(svc_db_t *db, svc_db_notify_fn fn, void *baton)
{
    PGnotify *n;

    if (!PQconsumeInput(db->conn) || PQstatus(db->conn) != CONNECTION_OK) {
        apr_cpystrn(db->errmsg, PQerrorMessage(db->conn), sizeof(db->errmsg));
        return SVC_EDBDOWN;
    }
    while ((n = PQnotifies(db->conn)) != NULL) {
        fn(baton, n->relname, n->extra);
        PQfreemem(n);
    }
    return APR_SUCCESS;
}
