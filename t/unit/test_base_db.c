/*
 * test_base_db.c: the data-access layer against a real PostgreSQL, one test per
 * trap of mod_dbd and apr_dbd_pgsql (docs/architecture.md, "Storage"), and
 * the invariants the schema enforces.
 *
 * SVC_TEST_DB names a database where `svcctl migrate` has been run; the
 * database user must be allowed to terminate backends of its own role and,
 * for the audit tampering test, to disable triggers (a superuser in the
 * harness). Everything created here has a unique name and is removed again.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"


#include "svc_testdb.h"

#include "svc_audit_write.h"
#include "svc_crypto.h"
#include "svc_db.h"
#include "svc_json.h"
#include "svc_migrate.h"
#include "svc_page.h"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */

/* A statement whose SQL names a scratch table; lives in p, like the
 * connection whose cache remembers it. */
static const svc_stmt_t *stmt(apr_pool_t *p, const char *name, const char *sql, int nparams,
                              unsigned flags)
{
    svc_stmt_t *st = apr_palloc(p, sizeof(*st));

    st->name = name;
    st->sql = sql;
    st->nparams = nparams;
    st->flags = flags;
    return st;
}

/* Terminates the backend behind `victim` from another connection and waits
 * until it is gone. */
static int kill_backend(apr_pool_t *p, svc_db_t *observer, svc_db_t *victim)
{
    int pid = PQbackendPID(svc_db_conn(victim));
    const char *r = svc_testdb_value(
        p, observer, apr_psprintf(p, "SELECT pg_terminate_backend(%d, 10000)", pid));

    SVC_CHECK(pid > 0);
    SVC_CHECK_STR(r, "t");
    return r && strcmp(r, "t") == 0;
}

/* A scratch table: id int primary key, v text. */
static const char *scratch_table(apr_pool_t *p, svc_db_t *observer)
{
    const char *t = svc_testdb_name(p, "svc_ut_t");

    svc_testdb_value(p, observer,
                     apr_psprintf(p, "CREATE TABLE %s (id int PRIMARY KEY, v text)", t));
    return t;
}

static void drop_table(apr_pool_t *p, svc_db_t *observer, const char *t)
{
    svc_testdb_value(p, observer, apr_psprintf(p, "DROP TABLE IF EXISTS %s CASCADE", t));
}

/* How many rows of table t have this id, seen from the observer. */
static int count_id(apr_pool_t *p, svc_db_t *observer, const char *t, int id)
{
    const char *v = svc_testdb_value(
        p, observer, apr_psprintf(p, "SELECT count(*) FROM %s WHERE id = %d", t, id));

    return v ? atoi(v) : -1;
}

static const svc_stmt_t st_pid = {
    "svc_ut_pid", "SELECT pg_backend_pid()", 0, SVC_STMT_READ
};

static const svc_stmt_t st_one = {
    "svc_ut_one", "SELECT 1", 0, SVC_STMT_READ
};

static int backend_pid_via_stmt(apr_pool_t *p, svc_db_t *db, apr_status_t *prv)
{
    svc_dbres_t *res = NULL;
    apr_int64_t v = -1;

    *prv = svc_db_exec(db, &st_pid, p, &res, NULL);
    if (*prv != APR_SUCCESS || svc_dbres_int64(res, 0, 0, &v) != APR_SUCCESS) {
        return -1;
    }
    return (int)v;
}

/* ---------------------------------------------------------------------- */
/* Trap 5: NULL vs "", int64                                               */

SVC_TEST(db_nulls_are_not_empty_strings)
{
    static const svc_stmt_t st = {
        "svc_ut_nulls",
        "SELECT NULL::text, ''::text, NULL::boolean, true, false, $1::text, $2::text",
        2, SVC_STMT_READ
    };
    svc_db_t *db = svc_testdb_open(p);
    svc_dbres_t *res = NULL;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_execv(db, &st, p, &res, NULL, ""), APR_SUCCESS);
    SVC_CHECK_INT(svc_dbres_rows(res), 1);
    SVC_CHECK(svc_dbres_str(res, 0, 0) == NULL);
    SVC_CHECK(svc_dbres_isnull(res, 0, 0));
    SVC_CHECK_STR(svc_dbres_str(res, 0, 1), "");
    SVC_CHECK(!svc_dbres_isnull(res, 0, 1));
    SVC_CHECK_INT(svc_dbres_bool(res, 0, 2), -1);
    SVC_CHECK_INT(svc_dbres_bool(res, 0, 3), 1);
    SVC_CHECK_INT(svc_dbres_bool(res, 0, 4), 0);
    /* Parameters: a NULL pointer is SQL NULL, "" is the empty string. */
    SVC_CHECK(svc_dbres_isnull(res, 0, 5));
    SVC_CHECK_STR(svc_dbres_str(res, 0, 6), "");
    /* Out of range is NULL, not a crash. */
    SVC_CHECK(svc_dbres_str(res, 1, 0) == NULL);
    SVC_CHECK(svc_dbres_str(res, 0, 7) == NULL);
}

/* svc_db_value: the first column of the one row, its length, or
 * SVC_ENOTFOUND without a row (and with two). */
SVC_TEST(db_value_of_one_row)
{
    static const svc_stmt_t st = {
        "svc_ut_value", "SELECT $1::text || 'b', 7 FROM generate_series(1, $2::int)",
        2, SVC_STMT_READ
    };
    svc_db_t *db = svc_testdb_open(p);
    const char *v = NULL;
    apr_size_t len = 0;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_value(db, &st, p, &v, &len, "a\nb", "1"), APR_SUCCESS);
    SVC_CHECK_STR(v, "a\nbb");
    SVC_CHECK_INT((int)len, 4);
    v = NULL;
    SVC_CHECK_INT(svc_db_value(db, &st, p, &v, NULL, "x", "1"), APR_SUCCESS);
    SVC_CHECK_STR(v, "xb");
    v = NULL;
    SVC_CHECK_INT(svc_db_value(db, &st, p, &v, NULL, "x", "0"), SVC_ENOTFOUND);
    SVC_CHECK_INT(svc_db_value(db, &st, p, &v, NULL, "x", "2"), SVC_ENOTFOUND);
    SVC_CHECK(v == NULL);
}

SVC_TEST(db_int64_exact)
{
    /* (The literal -9223372036854775808::bigint would parse as
     * -(9223372036854775808::bigint) and overflow; a quoted literal does not.) */
    static const svc_stmt_t st = {
        "svc_ut_int64",
        "SELECT 2147483648::bigint, 9007199254740993::bigint,"
        " '-9223372036854775808'::bigint, 9223372036854775807::bigint, 0::bigint,"
        " 'abc'::text, '12x'::text, ''::text, NULL::bigint, '9223372036854775808'::text,"
        " ' 1'::text, '1.5'::text",
        0, SVC_STMT_READ
    };
    svc_db_t *db = svc_testdb_open(p);
    svc_dbres_t *res = NULL;
    apr_int64_t v;
    int col;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_exec(db, &st, p, &res, NULL), APR_SUCCESS);
    v = 0;
    SVC_CHECK_INT(svc_dbres_int64(res, 0, 0, &v), APR_SUCCESS);
    SVC_CHECK(v == APR_INT64_C(2147483648));
    SVC_CHECK_INT(svc_dbres_int64(res, 0, 1, &v), APR_SUCCESS);
    SVC_CHECK(v == APR_INT64_C(9007199254740993));
    SVC_CHECK_INT(svc_dbres_int64(res, 0, 2, &v), APR_SUCCESS);
    SVC_CHECK(v == INT64_MIN);
    SVC_CHECK_INT(svc_dbres_int64(res, 0, 3, &v), APR_SUCCESS);
    SVC_CHECK(v == INT64_MAX);
    SVC_CHECK_INT(svc_dbres_int64(res, 0, 4, &v), APR_SUCCESS);
    SVC_CHECK(v == 0);
    /* Garbage, empty, NULL, overflow, whitespace, fractions. */
    for (col = 5; col <= 11; col++) {
        v = 77;
        if (svc_dbres_int64(res, 0, col, &v) != APR_EINVAL) {
            fprintf(stderr, "%s:%d: column %d read as an int64\n", __FILE__, __LINE__, col);
            svc_test_failed_checks++;
        }
    }
}

/* Trap 4: a result stays readable after later queries, until its pool goes. */
SVC_TEST(db_results_outlive_later_queries)
{
    static const svc_stmt_t st = {
        "svc_ut_series", "SELECT g, 'row ' || g FROM generate_series(1, $1::int) g", 1,
        SVC_STMT_READ
    };
    svc_db_t *db = svc_testdb_open(p);
    svc_dbres_t *r1 = NULL, *r2 = NULL;
    const char *first;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_execv(db, &st, p, &r1, "3"), APR_SUCCESS);
    first = svc_dbres_str(r1, 2, 1);
    SVC_CHECK_INT(svc_db_execv(db, &st, p, &r2, "500"), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &st_one, p, NULL, NULL), APR_SUCCESS);
    SVC_CHECK_STR(first, "row 3");
    SVC_CHECK_STR(svc_dbres_str(r1, 0, 1), "row 1");
    SVC_CHECK_INT(svc_dbres_rows(r1), 3);
    SVC_CHECK_INT(svc_dbres_rows(r2), 500);
    SVC_CHECK_STR(svc_dbres_str(r2, 499, 1), "row 500");
}

/* Trap 6: '%' is just a character; parameters travel out of band. */
SVC_TEST(db_percent_in_sql)
{
    static const svc_stmt_t st = {
        "svc_ut_percent", "SELECT 'a%b', $1::text, '%s%d%%', 'x' LIKE '%'", 1, SVC_STMT_READ
    };
    svc_db_t *db = svc_testdb_open(p);
    svc_dbres_t *res = NULL;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_execv(db, &st, p, &res, "50% off; DROP TABLE users; --'"), APR_SUCCESS);
    SVC_CHECK_STR(svc_dbres_str(res, 0, 0), "a%b");
    SVC_CHECK_STR(svc_dbres_str(res, 0, 1), "50% off; DROP TABLE users; --'");
    SVC_CHECK_STR(svc_dbres_str(res, 0, 2), "%s%d%%");
    SVC_CHECK_INT(svc_dbres_bool(res, 0, 3), 1);
}

/* ---------------------------------------------------------------------- */
/* Traps 1, 2, 9: preparation, reconnects, retries                         */

SVC_TEST(db_same_backend_prepares_once)
{
    svc_db_t *db = svc_testdb_open(p);
    svc_db_stats_t s;
    int i, ok = 1;

    if (!db) {
        return;
    }
    for (i = 0; i < 100; i++) {
        ok &= svc_db_exec(db, &st_one, p, NULL, NULL) == APR_SUCCESS;
    }
    SVC_CHECK(ok);
    svc_db_stats(db, &s);
    SVC_CHECK_INT(s.prepares, 1);
    SVC_CHECK_INT(s.reconnects, 0);
    SVC_CHECK_INT(s.retries, 0);
    /* A second statement is prepared once more, and only once. */
    for (i = 0; i < 10; i++) {
        ok &= svc_db_exec(db, &st_pid, p, NULL, NULL) == APR_SUCCESS;
    }
    SVC_CHECK(ok);
    svc_db_stats(db, &s);
    SVC_CHECK_INT(s.prepares, 2);
    /* And the server agrees: two statements prepared in this session. */
    SVC_CHECK_STR(svc_testdb_value(p, db, "SELECT count(*) FROM pg_prepared_statements"
                                          " WHERE name LIKE 'svc\\_ut\\_%'"), "2");
}

SVC_TEST(db_read_reprepared_after_reconnect)
{
    svc_db_t *db = svc_testdb_open(p), *other = svc_testdb_open(p);
    svc_db_stats_t s;
    apr_status_t rv;
    int pid1, pid2;

    if (!db || !other) {
        return;
    }
    pid1 = backend_pid_via_stmt(p, db, &rv);
    SVC_CHECK_INT(rv, APR_SUCCESS);
    SVC_CHECK_INT(pid1, PQbackendPID(svc_db_conn(db)));
    svc_db_stats(db, &s);
    SVC_CHECK_INT(s.prepares, 1);
    SVC_CHECK_INT(s.reconnects, 0);

    if (!kill_backend(p, other, db)) {
        return;
    }
    /* The same prepared statement on the same handle: the read is retried
     * once on a fresh backend, where it is prepared again. */
    pid2 = backend_pid_via_stmt(p, db, &rv);
    SVC_CHECK_INT(rv, APR_SUCCESS);
    SVC_CHECK(pid2 > 0 && pid2 != pid1);
    SVC_CHECK_INT(pid2, PQbackendPID(svc_db_conn(db)));
    svc_db_stats(db, &s);
    SVC_CHECK_INT(s.prepares, 2);
    SVC_CHECK(s.reconnects >= 1);
    SVC_CHECK_INT(s.retries, 1);
    /* The new session got the per-session settings again. */
    SVC_CHECK_STR(svc_testdb_value(p, db, "SELECT current_setting('TimeZone')"), "UTC");
    /* And it keeps working without preparing again. */
    SVC_CHECK_INT(backend_pid_via_stmt(p, db, &rv), pid2);
    svc_db_stats(db, &s);
    SVC_CHECK_INT(s.prepares, 2);
}

SVC_TEST(db_write_not_retried_after_kill)
{
    svc_db_t *db = svc_testdb_open(p), *other = svc_testdb_open(p);
    const svc_stmt_t *ins;
    const char *t;
    svc_db_stats_t s;

    if (!db || !other) {
        return;
    }
    t = scratch_table(p, other);
    ins = stmt(p, "svc_ut_ins", apr_psprintf(p, "INSERT INTO %s (id, v) VALUES ($1::int, $2)",
                                             t), 2, 0);
    SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "1", "first"), APR_SUCCESS);
    if (kill_backend(p, other, db)) {
        /* A write whose fate is unknown is not repeated behind the caller's back. */
        SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "2", "second"), SVC_EDBDOWN);
        svc_db_stats(db, &s);
        SVC_CHECK_INT(s.retries, 0);
        SVC_CHECK_INT(count_id(p, other, t, 2), 0);
        /* The next call, on the same handle, works again: nothing of it was
         * sent on the dead connection, so a fresh one is safe. */
        SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "3", "third"), APR_SUCCESS);
        SVC_CHECK_INT(count_id(p, other, t, 3), 1);
        SVC_CHECK_INT(svc_db_exec(db, &st_one, p, NULL, NULL), APR_SUCCESS);
        SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "4", "fourth"), APR_SUCCESS);
        SVC_CHECK_INT(count_id(p, other, t, 4), 1);
    }
    SVC_CHECK_INT(count_id(p, other, t, 1), 1);
    drop_table(p, other, t);
}

SVC_TEST(db_retryable_write_retried_after_kill)
{
    svc_db_t *db = svc_testdb_open(p), *other = svc_testdb_open(p);
    const svc_stmt_t *up;
    const char *t;

    if (!db || !other) {
        return;
    }
    t = scratch_table(p, other);
    svc_testdb_value(p, other, apr_psprintf(p, "INSERT INTO %s VALUES (1, 'a')", t));
    up = stmt(p, "svc_ut_touch", apr_psprintf(p, "UPDATE %s SET v = $2 WHERE id = $1::int", t),
              2, SVC_STMT_RETRY);
    SVC_CHECK_INT(svc_db_execv(db, up, p, NULL, "1", "b"), APR_SUCCESS);
    if (kill_backend(p, other, db)) {
        SVC_CHECK_INT(svc_db_execv(db, up, p, NULL, "1", "c"), APR_SUCCESS);
        SVC_CHECK_STR(svc_testdb_value(p, other, apr_psprintf(p, "SELECT v FROM %s", t)), "c");
    }
    drop_table(p, other, t);
}

SVC_TEST(db_read_in_transaction_not_retried)
{
    svc_db_t *db = svc_testdb_open(p), *other = svc_testdb_open(p);
    apr_status_t rv;

    if (!db || !other) {
        return;
    }
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &st_one, p, NULL, NULL), APR_SUCCESS);
    if (!kill_backend(p, other, db)) {
        svc_db_release(db);
        return;
    }
    /* The transaction is gone with its backend: the read must not quietly
     * continue on a new one outside it. */
    SVC_CHECK_INT(svc_db_exec(db, &st_one, p, NULL, NULL), SVC_EDBDOWN);
    svc_db_release(db);
    SVC_CHECK(!svc_db_in_tx(db));
    /* A new transaction starts on a fresh backend. */
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK(backend_pid_via_stmt(p, db, &rv) > 0);
    SVC_CHECK_INT(rv, APR_SUCCESS);
    SVC_CHECK_INT(svc_db_commit(db), APR_SUCCESS);
}

SVC_TEST(db_begin_retried_after_kill)
{
    svc_db_t *db = svc_testdb_open(p), *other = svc_testdb_open(p);
    const svc_stmt_t *ins;
    svc_db_stats_t s;
    const char *t;

    if (!db || !other) {
        return;
    }
    t = scratch_table(p, other);
    ins = stmt(p, "svc_ut_ins", apr_psprintf(p, "INSERT INTO %s (id, v) VALUES ($1::int, $2)",
                                             t), 2, 0);
    /* Prepared on the first backend, which then dies. */
    SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "1", "one"), APR_SUCCESS);
    if (kill_backend(p, other, db)) {
        SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
        SVC_CHECK(svc_db_in_tx(db));
        SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "2", "two"), APR_SUCCESS);
        SVC_CHECK_INT(svc_db_commit(db), APR_SUCCESS);
        SVC_CHECK(!svc_db_in_tx(db));
        SVC_CHECK_INT(count_id(p, other, t, 2), 1);
        svc_db_stats(db, &s);
        SVC_CHECK(s.reconnects >= 1);
        SVC_CHECK_INT(s.prepares, 2);
    }
    drop_table(p, other, t);
}

/* The symptom of trap 1 on the same backend: the server forgot a statement
 * our cache remembers (DEALLOCATE, DISCARD). It is prepared again. */
SVC_TEST(db_forgotten_statement_prepared_again)
{
    svc_db_t *db = svc_testdb_open(p);
    svc_db_stats_t s;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_exec(db, &st_one, p, NULL, NULL), APR_SUCCESS);
    SVC_CHECK_STR(svc_testdb_value(p, db, "DEALLOCATE ALL"), "");
    SVC_CHECK_INT(svc_db_exec(db, &st_one, p, NULL, NULL), APR_SUCCESS);
    svc_db_stats(db, &s);
    SVC_CHECK_INT(s.prepares, 2);
    SVC_CHECK_INT(s.reconnects, 0);
}

/*
 * svc_db_connect documents itself as the way svcctl and tests connect; two
 * connections made in the same pool must each work (each has its own
 * backend, so each needs its own record of what is prepared on it).
 */
SVC_TEST(db_two_connections_one_pool)
{
    svc_db_t *a = NULL, *b = NULL;
    const char *err = NULL;
    svc_db_stats_t s;
    apr_status_t rv;
    int i, pa, pb, ok = 1;

    if (svc_db_connect(&a, svc_testdb_conninfo(), p, &err) != APR_SUCCESS
        || svc_db_connect(&b, svc_testdb_conninfo(), p, &err) != APR_SUCCESS) {
        SVC_CHECK(!"connect");
        return;
    }
    SVC_CHECK(PQbackendPID(svc_db_conn(a)) != PQbackendPID(svc_db_conn(b)));
    for (i = 0; i < 3; i++) {
        pa = backend_pid_via_stmt(p, a, &rv);
        ok &= rv == APR_SUCCESS && pa == PQbackendPID(svc_db_conn(a));
        pb = backend_pid_via_stmt(p, b, &rv);
        ok &= rv == APR_SUCCESS && pb == PQbackendPID(svc_db_conn(b));
    }
    SVC_CHECK(ok);
    /* Neither connection was replaced, so nothing counts as a reconnect. */
    svc_db_stats(a, &s);
    SVC_CHECK_INT(s.reconnects, 0);
    SVC_CHECK_INT(s.prepares, 1);
}

/* Trap 9: a statement that fails to prepare harms nothing else. */
SVC_TEST(db_bad_statement_does_not_poison)
{
    static const svc_stmt_t bad = {
        "svc_ut_bad", "SELEC 1 FROM nowhere", 0, SVC_STMT_READ
    };
    static const svc_stmt_t missing = {
        "svc_ut_missing", "SELECT * FROM svc_ut_no_such_table", 0, SVC_STMT_READ
    };
    svc_db_t *db = svc_testdb_open(p), *db2;
    svc_db_stats_t s;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_exec(db, &bad, p, NULL, NULL), SVC_EDB);
    SVC_CHECK_STR(svc_db_sqlstate(db), "42601");
    SVC_CHECK_INT(svc_db_exec(db, &missing, p, NULL, NULL), SVC_EDB);
    SVC_CHECK_STR(svc_db_sqlstate(db), "42P01");
    SVC_CHECK_INT(svc_db_exec(db, &st_one, p, NULL, NULL), APR_SUCCESS);
    /* Not remembered as prepared: trying again fails the same way. */
    SVC_CHECK_INT(svc_db_exec(db, &bad, p, NULL, NULL), SVC_EDB);
    SVC_CHECK_STR(svc_db_sqlstate(db), "42601");
    svc_db_stats(db, &s);
    SVC_CHECK_INT(s.prepares, 1);
    /* A new connection opens fine. */
    db2 = svc_testdb_open(p);
    SVC_CHECK(db2 != NULL);
    if (db2) {
        SVC_CHECK_INT(svc_db_exec(db2, &st_one, p, NULL, NULL), APR_SUCCESS);
    }
}

/* ---------------------------------------------------------------------- */
/* Trap 7: transactions                                                    */

/* A change for svc_db_tx: inserts row `id`, then returns `rv` (after
 * trying a transaction inside this one, when `nested`). */
typedef struct {
    const char *t;
    const svc_stmt_t *ins;
    const char *id;
    apr_status_t rv;
    int nested;
} tx_case_t;

static apr_status_t tx_insert(svc_db_t *db, apr_pool_t *p, void *baton)
{
    tx_case_t *c = baton;
    apr_status_t rv = svc_db_execv(db, c->ins, p, NULL, c->id, "in svc_db_tx");

    if (rv == APR_SUCCESS && c->nested) {
        c->nested = 0;
        return svc_db_tx(db, p, tx_insert, c);
    }
    return rv == APR_SUCCESS ? c->rv : rv;
}

SVC_TEST(db_release_rolls_back)
{
    svc_db_t *db = svc_testdb_open(p), *other = svc_testdb_open(p);
    const svc_stmt_t *ins;
    const char *t;

    if (!db || !other) {
        return;
    }
    t = scratch_table(p, other);
    ins = stmt(p, "svc_ut_ins", apr_psprintf(p, "INSERT INTO %s (id, v) VALUES ($1::int, $2)",
                                             t), 2, 0);
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK(svc_db_in_tx(db));
    /* No nested transactions. */
    SVC_CHECK(svc_db_begin(db) != APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "1", "half a write"), APR_SUCCESS);
    SVC_CHECK_INT(count_id(p, other, t, 1), 0);
    /* The early error return: no commit, the connection goes back. */
    svc_db_release(db);
    SVC_CHECK(!svc_db_in_tx(db));
    SVC_CHECK_INT(PQtransactionStatus(svc_db_conn(db)), PQTRANS_IDLE);
    SVC_CHECK_INT(count_id(p, other, t, 1), 0);
    /* The same id can be written now: nothing is left of the first attempt. */
    SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "1", "whole"), APR_SUCCESS);
    SVC_CHECK_INT(count_id(p, other, t, 1), 1);
    /* Explicit rollback too. */
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "2", "x"), APR_SUCCESS);
    svc_db_rollback(db);
    SVC_CHECK_INT(count_id(p, other, t, 2), 0);
    /* Releasing outside a transaction, or twice, is harmless. */
    svc_db_release(db);
    svc_db_release(db);
    svc_db_release(NULL);
    SVC_CHECK_INT(count_id(p, other, t, 1), 1);
    drop_table(p, other, t);
}

SVC_TEST(db_commit_after_failed_statement_fails)
{
    svc_db_t *db = svc_testdb_open(p), *other = svc_testdb_open(p);
    const svc_stmt_t *ins;
    tx_case_t tx;
    const char *t;

    memset(&tx, 0, sizeof(tx));

    if (!db || !other) {
        return;
    }
    t = scratch_table(p, other);
    ins = stmt(p, "svc_ut_ins", apr_psprintf(p, "INSERT INTO %s (id, v) VALUES ($1::int, $2)",
                                             t), 2, 0);
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "1", "first"), APR_SUCCESS);
    /* A failed statement (a code path that ignores it) aborts the transaction... */
    SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "1", "duplicate"), SVC_ECONFLICT);
    SVC_CHECK(svc_db_in_tx(db));
    /* ...and COMMIT (which PostgreSQL answers with ROLLBACK) is no success. */
    SVC_CHECK(svc_db_commit(db) != APR_SUCCESS);
    SVC_CHECK(!svc_db_in_tx(db));
    SVC_CHECK_INT(PQtransactionStatus(svc_db_conn(db)), PQTRANS_IDLE);
    SVC_CHECK_INT(count_id(p, other, t, 1), 0);
    /* Commit outside a transaction is refused. */
    SVC_CHECK(svc_db_commit(db) != APR_SUCCESS);
    /* The handle is fine for the next transaction. */
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "1", "again"), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_commit(db), APR_SUCCESS);
    SVC_CHECK_INT(count_id(p, other, t, 1), 1);

    /* svc_db_tx, the one transaction: what fn returns but success rolls
     * back and is returned as it was; success commits; a transaction
     * cannot begin inside one. */
    tx.t = t;
    tx.ins = ins;
    tx.id = "2";
    tx.rv = SVC_ECONFLICT;
    SVC_CHECK_INT(svc_db_tx(db, p, tx_insert, &tx), SVC_ECONFLICT);
    SVC_CHECK(!svc_db_in_tx(db));
    SVC_CHECK_INT(count_id(p, other, t, 2), 0);
    tx.rv = APR_SUCCESS;
    SVC_CHECK_INT(svc_db_tx(db, p, tx_insert, &tx), APR_SUCCESS);
    SVC_CHECK(!svc_db_in_tx(db));
    SVC_CHECK_INT(count_id(p, other, t, 2), 1);
    tx.id = "3";
    tx.nested = 1;
    SVC_CHECK(svc_db_tx(db, p, tx_insert, &tx) != APR_SUCCESS);
    SVC_CHECK(!svc_db_in_tx(db));
    SVC_CHECK_INT(count_id(p, other, t, 3), 0);
    drop_table(p, other, t);
}

/* A connection lent to a request writes inside a transaction only (but
 * for writes declared to stand alone), so a handler cannot change anything
 * but through svc_write. */
SVC_TEST(db_guarded_writes_need_a_transaction)
{
    svc_db_t *db = svc_testdb_open(p), *other = svc_testdb_open(p);
    const svc_stmt_t *ins, *alone, *read;
    tx_case_t tx;
    const char *t;

    memset(&tx, 0, sizeof(tx));
    if (!db || !other) {
        return;
    }
    t = scratch_table(p, other);
    ins = stmt(p, "svc_ut_ins", apr_psprintf(p, "INSERT INTO %s (id, v) VALUES ($1::int, $2)",
                                             t), 2, 0);
    alone = stmt(p, "svc_ut_ins_alone",
                 apr_psprintf(p, "INSERT INTO %s (id, v) VALUES ($1::int, $2)", t), 2,
                 SVC_STMT_ALONE);
    read = stmt(p, "svc_ut_count", apr_psprintf(p, "SELECT count(*) FROM %s", t), 0,
                SVC_STMT_READ);
    /* Unguarded (svcctl, the supervisor): a write on its own is its business. */
    SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "1", "unguarded"), APR_SUCCESS);
    svc_db_guard_writes(db);
    SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "2", "outside"), APR_EGENERAL);
    SVC_CHECK(strstr(svc_db_errmsg(db), "svc_ut_ins may write") != NULL);
    SVC_CHECK_INT(count_id(p, other, t, 2), 0);
    SVC_CHECK_INT(svc_db_execv(db, alone, p, NULL, "3", "bookkeeping"), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, read, p, NULL), APR_SUCCESS);
    tx.t = t;
    tx.ins = ins;
    tx.id = "4";
    SVC_CHECK_INT(svc_db_tx(db, p, tx_insert, &tx), APR_SUCCESS);
    SVC_CHECK_INT(count_id(p, other, t, 3), 1);
    SVC_CHECK_INT(count_id(p, other, t, 4), 1);
    drop_table(p, other, t);
}

/* ---------------------------------------------------------------------- */
/* Constraint violations                                                   */

SVC_TEST(db_constraint_violations_map)
{
    svc_db_t *db = svc_testdb_open(p), *other = svc_testdb_open(p);
    const char *parent, *child;
    const svc_stmt_t *ins_parent, *ins_child;
    svc_dbres_t *res = NULL;

    if (!db || !other) {
        return;
    }
    parent = svc_testdb_name(p, "svc_ut_par");
    child = svc_testdb_name(p, "svc_ut_chi");
    svc_testdb_value(p, other, apr_psprintf(p, "CREATE TABLE %s (id int PRIMARY KEY)", parent));
    svc_testdb_value(p, other, apr_psprintf(
        p, "CREATE TABLE %s (id int CONSTRAINT %s_pk PRIMARY KEY,"
        " slug text NOT NULL CONSTRAINT %s_slug_uq UNIQUE,"
        " n int CONSTRAINT %s_n_ck CHECK (n >= 0),"
        " parent int CONSTRAINT %s_parent_fk REFERENCES %s (id))",
        child, child, child, child, child, parent));
    svc_testdb_value(p, other, apr_psprintf(p, "INSERT INTO %s VALUES (1)", parent));
    ins_parent = stmt(p, "svc_ut_ins_parent",
                      apr_psprintf(p, "INSERT INTO %s (id) VALUES ($1::int)", parent), 1, 0);
    ins_child = stmt(p, "svc_ut_ins_child",
                     apr_psprintf(p, "INSERT INTO %s (id, slug, n, parent)"
                                  " VALUES ($1::int, $2, $3::int, $4::int) RETURNING id",
                                  child), 4, 0);

    SVC_CHECK_INT(svc_db_execv(db, ins_child, p, &res, "1", "a", "0", "1"), APR_SUCCESS);
    SVC_CHECK_STR(svc_dbres_str(res, 0, 0), "1");
    SVC_CHECK_INT(svc_dbres_affected(res), 1);
    /* Unique violations: conflict, naming the constraint. */
    SVC_CHECK_INT(svc_db_execv(db, ins_child, p, &res, "2", "a", "0", "1"), SVC_ECONFLICT);
    SVC_CHECK(res == NULL);
    SVC_CHECK_STR(svc_db_sqlstate(db), "23505");
    SVC_CHECK_STR(svc_db_constraint(db), apr_pstrcat(p, child, "_slug_uq", NULL));
    SVC_CHECK_INT(svc_db_execv(db, ins_child, p, NULL, "1", "b", "0", "1"), SVC_ECONFLICT);
    SVC_CHECK_STR(svc_db_constraint(db), apr_pstrcat(p, child, "_pk", NULL));
    SVC_CHECK_INT(svc_db_execv(db, ins_parent, p, NULL, "1"), SVC_ECONFLICT);
    SVC_CHECK_STR(svc_db_constraint(db), apr_pstrcat(p, parent, "_pkey", NULL));
    /* Check and foreign-key violations: integrity. */
    SVC_CHECK_INT(svc_db_execv(db, ins_child, p, NULL, "3", "c", "-1", "1"), SVC_EINTEGRITY);
    SVC_CHECK_STR(svc_db_sqlstate(db), "23514");
    SVC_CHECK_STR(svc_db_constraint(db), apr_pstrcat(p, child, "_n_ck", NULL));
    SVC_CHECK_INT(svc_db_execv(db, ins_child, p, NULL, "4", "d", "0", "99"), SVC_EINTEGRITY);
    SVC_CHECK_STR(svc_db_sqlstate(db), "23503");
    SVC_CHECK_STR(svc_db_constraint(db), apr_pstrcat(p, child, "_parent_fk", NULL));
    SVC_CHECK_INT(svc_db_execv(db, ins_child, p, NULL, "5", NULL, "0", "1"), SVC_EINTEGRITY);
    SVC_CHECK_STR(svc_db_sqlstate(db), "23502");
    /* Not a constraint at all: a plain database error, and no constraint named. */
    SVC_CHECK_INT(svc_db_execv(db, ins_child, p, NULL, "x", "e", "0", "1"), SVC_EDB);
    SVC_CHECK_STR(svc_db_sqlstate(db), "22P02");
    SVC_CHECK_STR(svc_db_constraint(db), "");
    /* After all that, the connection is fine and only row 1 exists. */
    SVC_CHECK_INT(svc_db_exec(db, &st_one, p, NULL, NULL), APR_SUCCESS);
    SVC_CHECK_STR(svc_testdb_value(p, other, apr_psprintf(p, "SELECT count(*) FROM %s", child)),
                  "1");
    drop_table(p, other, child);
    drop_table(p, other, parent);
}

/* ---------------------------------------------------------------------- */
/* Trap 10: session state                                                  */

SVC_TEST(db_set_local_does_not_survive)
{
    static const svc_stmt_t show = {
        "svc_ut_show_timeout", "SELECT current_setting('statement_timeout')", 0, SVC_STMT_READ
    };
    svc_db_t *db = svc_testdb_open(p);
    svc_dbres_t *res = NULL;
    const char *session;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_exec(db, &show, p, &res, NULL), APR_SUCCESS);
    session = svc_dbres_str(res, 0, 0);
    SVC_CHECK(session && strcmp(session, "1234ms") != 0);

    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_simple(db, "SET LOCAL statement_timeout = 1234", p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &show, p, &res, NULL), APR_SUCCESS);
    SVC_CHECK_STR(svc_dbres_str(res, 0, 0), "1234ms");
    SVC_CHECK_INT(svc_db_commit(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &show, p, &res, NULL), APR_SUCCESS);
    SVC_CHECK_STR(svc_dbres_str(res, 0, 0), session);

    /* Nor after a transaction that was released without commit. */
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_simple(db, "SET LOCAL statement_timeout = 4321", p), APR_SUCCESS);
    svc_db_release(db);
    SVC_CHECK_INT(svc_db_exec(db, &show, p, &res, NULL), APR_SUCCESS);
    SVC_CHECK_STR(svc_dbres_str(res, 0, 0), session);
    /* The session is in UTC, so times print the same for everyone. */
    SVC_CHECK_STR(svc_testdb_value(p, db, "SELECT current_setting('TimeZone')"), "UTC");
}

/* ---------------------------------------------------------------------- */
/* The audit log                                                           */

/*
 * Each entry of one chain, oldest first, with the digest recomputed here
 * from the columns by the formula of sql/001_foundation.sql, written out
 * again (not by calling svc_audit_digest): the format of the chain must
 * never change by accident, or every existing chain stops verifying.
 */
static const svc_stmt_t st_audit_rows = {
    "svc_ut_audit_rows",
    "SELECT id, encode(prev_hash, 'hex'), encode(hash, 'hex'), octet_length(hash),"
    " encode(sha256(coalesce(prev_hash, '\\x'::bytea) || convert_to(json_build_array("
    "   id, org_id, actor_kind, actor_user_id, actor_token_id, action, target_type,"
    "   target_id, data, ip, user_agent, request_id,"
    "   (extract(epoch FROM created_at) * 1000000)::bigint)::text, 'UTF8')), 'hex'),"
    " action, data->>'n', actor_kind, request_id, user_agent"
    " FROM audit_log WHERE org_id = $1 ORDER BY id",
    1, SVC_STMT_READ
};

static const svc_stmt_t st_audit_verify = {
    "svc_ut_audit_verify", "SELECT svc_audit_verify($1)", 1, SVC_STMT_READ
};

static const svc_stmt_t st_audit_update = {
    "svc_ut_audit_update",
    "UPDATE audit_log SET data = '{\"n\": 99}' WHERE id = $1::bigint", 1, 0
};

static const svc_stmt_t st_audit_delete = {
    "svc_ut_audit_delete", "DELETE FROM audit_log WHERE id = $1::bigint", 1, 0
};

static const svc_stmt_t st_audit_cleanup = {
    "svc_ut_audit_cleanup", "DELETE FROM audit_log WHERE org_id = ANY ($1::text[])", 1, 0
};

static apr_status_t audit_entry(apr_pool_t *p, svc_db_t *db, const char *org, int n)
{
    svc_actor_t actor;
    json_t *data = json_pack("{s:i}", "n", n);
    apr_status_t rv;

    memset(&actor, 0, sizeof(actor));
    actor.kind = "operator";
    actor.request_id = apr_psprintf(p, "req_ut%d", n);
    actor.user_agent = "unit\ttest\x01";
    rv = svc_audit_write(db, p, &actor, org, "test.entry_written", "test", "tgt_1", data);
    json_decref(data);
    return rv;
}

static const char *audit_verify(apr_pool_t *p, svc_db_t *db, const char *org, int *pnull)
{
    svc_dbres_t *res = NULL;

    SVC_CHECK_INT(svc_db_execv(db, &st_audit_verify, p, &res, org), APR_SUCCESS);
    *pnull = svc_dbres_isnull(res, 0, 0);
    return svc_dbres_str(res, 0, 0);
}

/* Runs fn-like SQL with the audit triggers disabled, all in one
 * transaction, so the triggers are enabled again whatever happens. */
static apr_status_t audit_as_superuser(apr_pool_t *p, svc_db_t *db, const svc_stmt_t *st,
                                       const char *arg)
{
    apr_status_t rv = svc_db_begin(db);

    if (rv == APR_SUCCESS) {
        rv = svc_db_simple(db, "ALTER TABLE audit_log DISABLE TRIGGER USER", p);
    }
    if (rv == APR_SUCCESS) {
        rv = svc_db_execv(db, st, p, NULL, arg);
    }
    if (rv == APR_SUCCESS) {
        rv = svc_db_simple(db, "ALTER TABLE audit_log ENABLE TRIGGER USER", p);
    }
    if (rv == APR_SUCCESS) {
        rv = svc_db_commit(db);
    }
    svc_db_release(db);
    return rv;
}

static void audit_triggers_enabled(apr_pool_t *p, svc_db_t *db)
{
    SVC_CHECK_STR(svc_testdb_value(p, db,
                                   "SELECT count(*) FROM pg_trigger"
                                   " WHERE tgrelid = 'audit_log'::regclass"
                                   " AND NOT tgisinternal AND tgenabled = 'D'"), "0");
}

SVC_TEST(db_audit_chain)
{
    svc_db_t *db = svc_testdb_open(p);
    const char *org_a = svc_testdb_name(p, "org_utA"), *org_b = svc_testdb_name(p, "org_utB");
    const char *prev = NULL;
    svc_dbres_t *res = NULL;
    int i, isnull = 0;

    if (!db) {
        return;
    }
    /* Interleaved writes to two chains; one inside a transaction. */
    SVC_CHECK_INT(audit_entry(p, db, org_a, 1), APR_SUCCESS);
    SVC_CHECK_INT(audit_entry(p, db, org_b, 1), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(audit_entry(p, db, org_a, 2), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_commit(db), APR_SUCCESS);
    SVC_CHECK_INT(audit_entry(p, db, org_b, 2), APR_SUCCESS);
    SVC_CHECK_INT(audit_entry(p, db, org_a, 3), APR_SUCCESS);
    /* An entry rolled back with its transaction leaves no link behind. */
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(audit_entry(p, db, org_a, 100), APR_SUCCESS);
    svc_db_release(db);

    SVC_CHECK_INT(svc_db_execv(db, &st_audit_rows, p, &res, org_a), APR_SUCCESS);
    SVC_CHECK_INT(svc_dbres_rows(res), 3);
    for (i = 0; i < svc_dbres_rows(res); i++) {
        const char *ph = svc_dbres_str(res, i, 1), *h = svc_dbres_str(res, i, 2);
        SVC_CHECK_STR(svc_dbres_str(res, i, 3), "32");
        if (i == 0) {
            SVC_CHECK(ph == NULL);
        }
        else {
            /* Chained to the previous entry of the same org, not of org B. */
            SVC_CHECK_STR(ph, prev);
        }
        SVC_CHECK_STR(h, svc_dbres_str(res, i, 4));
        SVC_CHECK_STR(svc_dbres_str(res, i, 5), "test.entry_written");
        SVC_CHECK_STR(svc_dbres_str(res, i, 6), apr_itoa(p, i + 1));
        SVC_CHECK_STR(svc_dbres_str(res, i, 7), "operator");
        SVC_CHECK_STR(svc_dbres_str(res, i, 8), apr_psprintf(p, "req_ut%d", i + 1));
        /* The client-supplied user agent is stored printable. */
        SVC_CHECK_STR(svc_dbres_str(res, i, 9), "unit?test?");
        prev = h;
    }
    SVC_CHECK_INT(svc_db_execv(db, &st_audit_rows, p, &res, org_b), APR_SUCCESS);
    SVC_CHECK_INT(svc_dbres_rows(res), 2);
    SVC_CHECK(svc_dbres_isnull(res, 0, 1));
    SVC_CHECK_STR(svc_dbres_str(res, 1, 1), svc_dbres_str(res, 0, 2));
    /* Both chains verify. */
    audit_verify(p, db, org_a, &isnull);
    SVC_CHECK(isnull);
    audit_verify(p, db, org_b, &isnull);
    SVC_CHECK(isnull);

    SVC_CHECK_INT(audit_as_superuser(p, db, &st_audit_cleanup,
                                     apr_psprintf(p, "{%s,%s}", org_a, org_b)), APR_SUCCESS);
    audit_triggers_enabled(p, db);
}

SVC_TEST(db_audit_append_only)
{
    static const svc_stmt_t upd = {
        "svc_ut_audit_upd_all", "UPDATE audit_log SET action = 'x.y' WHERE org_id = $1", 1, 0
    };
    static const svc_stmt_t del = {
        "svc_ut_audit_del_all", "DELETE FROM audit_log WHERE org_id = $1", 1, 0
    };
    static const svc_stmt_t trunc = {
        "svc_ut_audit_truncate", "TRUNCATE audit_log", 0, 0
    };
    svc_db_t *db = svc_testdb_open(p);
    const char *org = svc_testdb_name(p, "org_utC");
    svc_dbres_t *res = NULL;
    int isnull = 0;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(audit_entry(p, db, org, 1), APR_SUCCESS);
    /* Each attempt runs in a transaction that is rolled back whatever the
     * answer, so a missing trigger cannot wipe the shared audit log. */
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, &upd, p, NULL, org), SVC_EDB);
    SVC_CHECK_STR(svc_db_sqlstate(db), "42501");
    svc_db_release(db);
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, &del, p, NULL, org), SVC_EDB);
    SVC_CHECK_STR(svc_db_sqlstate(db), "42501");
    svc_db_release(db);
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &trunc, p, NULL, NULL), SVC_EDB);
    SVC_CHECK_STR(svc_db_sqlstate(db), "42501");
    svc_db_release(db);
    /* Outside a transaction too. */
    SVC_CHECK_INT(svc_db_execv(db, &upd, p, NULL, org), SVC_EDB);
    SVC_CHECK_STR(svc_db_sqlstate(db), "42501");
    /* The entry is unchanged and the chain intact. */
    SVC_CHECK_INT(svc_db_execv(db, &st_audit_rows, p, &res, org), APR_SUCCESS);
    SVC_CHECK_INT(svc_dbres_rows(res), 1);
    SVC_CHECK_STR(svc_dbres_str(res, 0, 5), "test.entry_written");
    audit_verify(p, db, org, &isnull);
    SVC_CHECK(isnull);
    SVC_CHECK_INT(audit_as_superuser(p, db, &st_audit_cleanup, apr_psprintf(p, "{%s}", org)),
                  APR_SUCCESS);
    audit_triggers_enabled(p, db);
}

SVC_TEST(db_audit_verify_detects_tampering)
{
    svc_db_t *db = svc_testdb_open(p);
    const char *org = svc_testdb_name(p, "org_utD"), *org2 = svc_testdb_name(p, "org_utE");
    const char *id2, *id3, *bad;
    svc_dbres_t *res = NULL;
    int isnull = 0;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(audit_entry(p, db, org, 1), APR_SUCCESS);
    SVC_CHECK_INT(audit_entry(p, db, org, 2), APR_SUCCESS);
    SVC_CHECK_INT(audit_entry(p, db, org, 3), APR_SUCCESS);
    SVC_CHECK_INT(audit_entry(p, db, org2, 1), APR_SUCCESS);
    SVC_CHECK_INT(audit_entry(p, db, org2, 2), APR_SUCCESS);
    SVC_CHECK_INT(audit_entry(p, db, org2, 3), APR_SUCCESS);
    audit_verify(p, db, org, &isnull);
    SVC_CHECK(isnull);

    /* Someone with the power to disable triggers edits entry 2's data. */
    SVC_CHECK_INT(svc_db_execv(db, &st_audit_rows, p, &res, org), APR_SUCCESS);
    id2 = apr_pstrdup(p, svc_dbres_str(res, 1, 0) ? svc_dbres_str(res, 1, 0) : "0");
    SVC_CHECK_INT(audit_as_superuser(p, db, &st_audit_update, id2), APR_SUCCESS);
    audit_triggers_enabled(p, db);
    bad = audit_verify(p, db, org, &isnull);
    SVC_CHECK(!isnull);
    SVC_CHECK_STR(bad, id2);

    /* ...or deletes entry 2 of another chain: entry 3 no longer links. */
    SVC_CHECK_INT(svc_db_execv(db, &st_audit_rows, p, &res, org2), APR_SUCCESS);
    id2 = apr_pstrdup(p, svc_dbres_str(res, 1, 0) ? svc_dbres_str(res, 1, 0) : "0");
    id3 = apr_pstrdup(p, svc_dbres_str(res, 2, 0) ? svc_dbres_str(res, 2, 0) : "0");
    SVC_CHECK_INT(audit_as_superuser(p, db, &st_audit_delete, id2), APR_SUCCESS);
    audit_triggers_enabled(p, db);
    bad = audit_verify(p, db, org2, &isnull);
    SVC_CHECK(!isnull);
    SVC_CHECK_STR(bad, id3);

    SVC_CHECK_INT(audit_as_superuser(p, db, &st_audit_cleanup,
                                     apr_psprintf(p, "{%s,%s}", org, org2)), APR_SUCCESS);
    audit_triggers_enabled(p, db);
}

/* ---------------------------------------------------------------------- */
/* Exactly one owner per org                                               */

static const svc_stmt_t st_user_ins = {
    "svc_ut_user_ins", "INSERT INTO users (id, email, name) VALUES ($1, $2, 'Unit Test')", 2, 0
};
static const svc_stmt_t st_org_ins = {
    "svc_ut_org_ins", "INSERT INTO orgs (id, slug, name) VALUES ($1, $2, 'Unit Test Org')", 2, 0
};
static const svc_stmt_t st_member_ins = {
    "svc_ut_member_ins", "INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, $3)",
    3, 0
};
static const svc_stmt_t st_member_role = {
    "svc_ut_member_role", "UPDATE org_members SET role = $3 WHERE org_id = $1 AND user_id = $2",
    3, 0
};
static const svc_stmt_t st_member_del = {
    "svc_ut_member_del", "DELETE FROM org_members WHERE org_id = $1 AND user_id = $2", 2, 0
};
static const svc_stmt_t st_owner_of = {
    "svc_ut_owner_of",
    "SELECT string_agg(user_id, ',') FROM org_members WHERE org_id = $1 AND role = 'owner'",
    1, SVC_STMT_READ
};
static const svc_stmt_t st_org_count = {
    "svc_ut_org_count", "SELECT count(*) FROM orgs WHERE id = $1", 1, SVC_STMT_READ
};

static const char *owner_of(apr_pool_t *p, svc_db_t *db, const char *org)
{
    svc_dbres_t *res = NULL;

    if (svc_db_execv(db, &st_owner_of, p, &res, org) != APR_SUCCESS) {
        return "(error)";
    }
    return svc_dbres_str(res, 0, 0) ? svc_dbres_str(res, 0, 0) : "(none)";
}

static const char *org_count(apr_pool_t *p, svc_db_t *db, const char *org)
{
    svc_dbres_t *res = NULL;

    if (svc_db_execv(db, &st_org_count, p, &res, org) != APR_SUCCESS) {
        return "(error)";
    }
    return svc_dbres_str(res, 0, 0);
}

SVC_TEST(db_exactly_one_owner)
{
    svc_db_t *db = svc_testdb_open(p), *other = svc_testdb_open(p);
    const char *u1 = svc_id_new(p, "usr_"), *u2 = svc_id_new(p, "usr_");
    const char *o1 = svc_id_new(p, "org_"), *o2 = svc_id_new(p, "org_");
    const char *tag = svc_testdb_name(p, "ut-");
    const char *slug1, *slug2;
    apr_status_t rv;
    char *c;

    if (!db || !other) {
        return;
    }
    for (c = (char *)tag; *c; c++) {
        if (*c == '_') {
            *c = '-';
        }
    }
    slug1 = apr_pstrcat(p, tag, "-a", NULL);
    slug2 = apr_pstrcat(p, tag, "-b", NULL);
    SVC_CHECK_INT(svc_db_execv(db, &st_user_ins, p, NULL, u1,
                               apr_pstrcat(p, tag, "-1@example.test", NULL)), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, &st_user_ins, p, NULL, u2,
                               apr_pstrcat(p, tag, "-2@example.test", NULL)), APR_SUCCESS);

    /* An org without an owner: accepted statement by statement, refused at COMMIT. */
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, &st_org_ins, p, NULL, o1, slug1), APR_SUCCESS);
    rv = svc_db_commit(db);
    SVC_CHECK_INT(rv, SVC_EINTEGRITY);
    SVC_CHECK_STR(svc_db_constraint(db), "org_exactly_one_owner");
    SVC_CHECK(!svc_db_in_tx(db));
    SVC_CHECK_STR(org_count(p, other, o1), "0");
    /* Outside a transaction the same insert is its own transaction: refused. */
    SVC_CHECK_INT(svc_db_execv(db, &st_org_ins, p, NULL, o1, slug1), SVC_EINTEGRITY);
    SVC_CHECK_STR(org_count(p, other, o1), "0");

    /* With its owner in the same transaction: fine. */
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, &st_org_ins, p, NULL, o2, slug2), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, &st_member_ins, p, NULL, o2, u1, "owner"), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_commit(db), APR_SUCCESS);
    SVC_CHECK_STR(owner_of(p, other, o2), u1);

    /* A second owner is refused at once, by the unique index. */
    SVC_CHECK_INT(svc_db_execv(db, &st_member_ins, p, NULL, o2, u2, "owner"), SVC_ECONFLICT);
    SVC_CHECK_STR(svc_db_constraint(db), "org_members_one_owner");
    SVC_CHECK_INT(svc_db_execv(db, &st_member_ins, p, NULL, o2, u2, "member"), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, &st_member_role, p, NULL, o2, u2, "owner"), SVC_ECONFLICT);

    /* Ownership transfer: demote, then promote, in one transaction. */
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, &st_member_role, p, NULL, o2, u1, "admin"), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, &st_member_role, p, NULL, o2, u2, "owner"), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_commit(db), APR_SUCCESS);
    SVC_CHECK_STR(owner_of(p, other, o2), u2);

    /* Promoting first collides with the unique index (it cannot be deferred). */
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, &st_member_role, p, NULL, o2, u1, "owner"), SVC_ECONFLICT);
    svc_db_release(db);
    SVC_CHECK_STR(owner_of(p, other, o2), u2);

    /* Demoting the owner without a successor fails at COMMIT... */
    SVC_CHECK_INT(svc_db_begin(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, &st_member_role, p, NULL, o2, u2, "admin"), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_commit(db), SVC_EINTEGRITY);
    SVC_CHECK_STR(owner_of(p, other, o2), u2);
    /* ...and so does removing the owner's membership. */
    SVC_CHECK_INT(svc_db_execv(db, &st_member_del, p, NULL, o2, u2), SVC_EINTEGRITY);
    SVC_CHECK_STR(owner_of(p, other, o2), u2);
    /* Another member may leave. */
    SVC_CHECK_INT(svc_db_execv(db, &st_member_del, p, NULL, o2, u1), APR_SUCCESS);

    /* Clean up: orgs first (members go with them), then the users. */
    svc_testdb_value(p, other, apr_psprintf(p, "DELETE FROM orgs WHERE id IN ('%s', '%s')",
                                            o1, o2));
    svc_testdb_value(p, other, apr_psprintf(p, "DELETE FROM users WHERE id IN ('%s', '%s')",
                                            u1, u2));
    SVC_CHECK_STR(org_count(p, other, o2), "0");
}

/* ---------------------------------------------------------------------- */
/* Migrations                                                              */

/* ---------------------------------------------------------------------- */
/* Deferred checks: one round trip for a check and the next read            */

typedef struct {
    int calls;
    apr_status_t answer;        /* what the check returns */
    char seen[32];              /* the first column it saw */
} check_baton_t;

static apr_status_t record_check(void *baton, const svc_dbres_t *res)
{
    check_baton_t *b = baton;
    const char *v = svc_dbres_str(res, 0, 0);

    b->calls++;
    apr_cpystrn(b->seen, v ? v : "(null)", sizeof(b->seen));
    return b->answer;
}

static const svc_stmt_t st_echo = {
    "svc_ut_echo", "SELECT $1::text", 1, SVC_STMT_READ
};

SVC_TEST(db_deferred_check_rides_with_a_read)
{
    svc_db_t *db = svc_testdb_open(p);
    check_baton_t b = { 0, APR_SUCCESS, "" };
    const char *params[1] = { "checked" };
    svc_dbres_t *res = NULL;
    svc_db_stats_t s;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_defer(db, &st_echo, params, record_check, &b, p), APR_SUCCESS);
    SVC_CHECK(svc_db_pending(db));
    SVC_CHECK_INT(b.calls, 0);
    SVC_CHECK_INT(svc_db_execv(db, &st_echo, p, &res, "read"), APR_SUCCESS);
    SVC_CHECK_INT(b.calls, 1);
    SVC_CHECK_STR(b.seen, "checked");
    SVC_CHECK_STR(svc_dbres_str(res, 0, 0), "read");
    SVC_CHECK(!svc_db_pending(db));
    svc_db_stats(db, &s);
    SVC_CHECK_INT(s.pipelined, 1);
    /* The connection is back in normal mode: plain statements work. */
    SVC_CHECK_INT(svc_db_exec(db, &st_one, p, NULL, NULL), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_simple(db, "SELECT 1", p), APR_SUCCESS);
    SVC_CHECK_INT(b.calls, 1);
}

SVC_TEST(db_deferred_check_failure_discards_the_read)
{
    svc_db_t *db = svc_testdb_open(p);
    check_baton_t b = { 0, SVC_EPROBLEM, "" };
    const char *params[1] = { "no" };
    svc_dbres_t *res = NULL;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_defer(db, &st_echo, params, record_check, &b, p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, &st_echo, p, &res, "secret"), SVC_EPROBLEM);
    SVC_CHECK(res == NULL);
    SVC_CHECK_INT(b.calls, 1);
    /* Nothing is left pending, and the connection still works. */
    SVC_CHECK_INT(svc_db_execv(db, &st_echo, p, &res, "after"), APR_SUCCESS);
    SVC_CHECK_STR(svc_dbres_str(res, 0, 0), "after");
    SVC_CHECK_INT(b.calls, 1);
}

SVC_TEST(db_deferred_check_runs_before_a_write)
{
    svc_db_t *db = svc_testdb_open(p), *other = svc_testdb_open(p);
    check_baton_t b = { 0, SVC_EPROBLEM, "" };
    const char *params[1] = { "gate" };
    const svc_stmt_t *ins;
    const char *t;
    svc_db_stats_t s;

    if (!db || !other) {
        return;
    }
    t = scratch_table(p, other);
    ins = stmt(p, "svc_ut_ins_gate",
               apr_psprintf(p, "INSERT INTO %s (id, v) VALUES ($1::int, $2)", t), 2, 0);
    /* A failing check stops the write: it never reaches the database. */
    SVC_CHECK_INT(svc_db_defer(db, &st_echo, params, record_check, &b, p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "1", "x"), SVC_EPROBLEM);
    SVC_CHECK_INT(b.calls, 1);
    SVC_CHECK_INT(count_id(p, other, t, 1), 0);
    /* A passing one runs first, on its own, then the write. */
    b.answer = APR_SUCCESS;
    SVC_CHECK_INT(svc_db_defer(db, &st_echo, params, record_check, &b, p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "2", "y"), APR_SUCCESS);
    SVC_CHECK_INT(b.calls, 2);
    SVC_CHECK_INT(count_id(p, other, t, 2), 1);
    /* BEGIN waits for the check too. */
    b.answer = SVC_EPROBLEM;
    SVC_CHECK_INT(svc_db_defer(db, &st_echo, params, record_check, &b, p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_begin(db), SVC_EPROBLEM);
    SVC_CHECK(!svc_db_in_tx(db));
    SVC_CHECK_INT(b.calls, 3);
    svc_db_stats(db, &s);
    SVC_CHECK_INT(s.pipelined, 0);
    drop_table(p, other, t);
}

SVC_TEST(db_deferred_check_flush_and_release)
{
    svc_db_t *db = svc_testdb_open(p);
    check_baton_t b = { 0, APR_SUCCESS, "" };
    const char *params[1] = { "flushed" };

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_flush(db), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_defer(db, &st_echo, params, record_check, &b, p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_flush(db), APR_SUCCESS);
    SVC_CHECK_INT(b.calls, 1);
    SVC_CHECK_STR(b.seen, "flushed");
    SVC_CHECK_INT(svc_db_flush(db), APR_SUCCESS);
    SVC_CHECK_INT(b.calls, 1);
    /* Releasing forgets a check nobody flushed (its owner is gone). */
    SVC_CHECK_INT(svc_db_defer(db, &st_echo, params, record_check, &b, p), APR_SUCCESS);
    svc_db_release(db);
    SVC_CHECK(!svc_db_pending(db));
    SVC_CHECK_INT(b.calls, 1);
}

SVC_TEST(db_deferred_pipeline_survives_a_reconnect)
{
    svc_db_t *db = svc_testdb_open(p), *other = svc_testdb_open(p);
    check_baton_t b = { 0, APR_SUCCESS, "" };
    const char *params[1] = { "again" };
    svc_dbres_t *res = NULL;

    if (!db || !other) {
        return;
    }
    SVC_CHECK_INT(svc_db_execv(db, &st_echo, p, &res, "warm"), APR_SUCCESS);
    if (!kill_backend(p, other, db)) {
        return;
    }
    /* Both statements are reads: the pair is sent once more on a new backend. */
    SVC_CHECK_INT(svc_db_defer(db, &st_echo, params, record_check, &b, p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, &st_echo, p, &res, "read"), APR_SUCCESS);
    SVC_CHECK_STR(svc_dbres_str(res, 0, 0), "read");
    SVC_CHECK_INT(b.calls, 1);
    SVC_CHECK_STR(b.seen, "again");
}

SVC_TEST(db_deferred_check_sees_a_failing_read)
{
    svc_db_t *db = svc_testdb_open(p);
    check_baton_t b = { 0, APR_SUCCESS, "" };
    const char *params[1] = { "first" };
    const svc_stmt_t *bad;

    if (!db) {
        return;
    }
    /* The read fails on the server; the check has still run on its result. */
    bad = stmt(p, "svc_ut_div0", "SELECT 1 / $1::int", 1, SVC_STMT_READ);
    SVC_CHECK_INT(svc_db_defer(db, &st_echo, params, record_check, &b, p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, bad, p, NULL, "0"), SVC_EDB);
    SVC_CHECK_INT(b.calls, 1);
    SVC_CHECK_STR(svc_db_sqlstate(db), "22012");
    SVC_CHECK_INT(svc_db_exec(db, &st_one, p, NULL, NULL), APR_SUCCESS);
}

SVC_TEST(db_deferred_check_without_verdict_blocks_writes)
{
    svc_db_t *db = svc_testdb_open(p), *other = svc_testdb_open(p);
    check_baton_t b = { 0, APR_SUCCESS, "" };
    const char *params[1] = { "0" };
    const svc_stmt_t *failing, *ins;
    const char *t;

    if (!db || !other) {
        return;
    }
    t = scratch_table(p, other);
    ins = stmt(p, "svc_ut_ins_verdict",
               apr_psprintf(p, "INSERT INTO %s (id, v) VALUES ($1::int, $2)", t), 2, 0);
    /* The check's own statement fails: there is no verdict. */
    failing = stmt(p, "svc_ut_check_fails", "SELECT (1 / $1::int)::text", 1, SVC_STMT_READ);
    SVC_CHECK_INT(svc_db_defer(db, failing, params, record_check, &b, p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(db, &st_echo, p, NULL, "read"), SVC_EDB);
    SVC_CHECK_INT(b.calls, 0);
    /* ... so it is still pending, and a write cannot slip past it. */
    SVC_CHECK(svc_db_pending(db));
    SVC_CHECK_INT(svc_db_execv(db, ins, p, NULL, "1", "unchecked"), SVC_EDB);
    SVC_CHECK_INT(count_id(p, other, t, 1), 0);
    SVC_CHECK_INT(svc_db_flush(db), SVC_EDB);
    SVC_CHECK(svc_db_pending(db));
    /* Release forgets it with the connection (the request is over). */
    svc_db_release(db);
    SVC_CHECK(!svc_db_pending(db));
    SVC_CHECK_INT(b.calls, 0);
    drop_table(p, other, t);
}

SVC_TEST(db_timeout_is_not_a_lost_connection)
{
    svc_db_t *db = svc_testdb_open(p);
    const svc_stmt_t *slow;
    svc_db_stats_t s;
    int pid;

    if (!db) {
        return;
    }
    slow = stmt(p, "svc_ut_slow", "SELECT pg_sleep($1::float8)", 1, SVC_STMT_READ);
    SVC_CHECK_INT(svc_db_exec(db, &st_one, p, NULL, NULL), APR_SUCCESS);
    pid = PQbackendPID(svc_db_conn(db));
    SVC_CHECK_INT(svc_db_simple(db, "SET statement_timeout = 50", p), APR_SUCCESS);
    /* A statement timeout answers 503 (the database is overloaded) ... */
    SVC_CHECK_INT(svc_db_execv(db, slow, p, NULL, "2"), SVC_EDBDOWN);
    SVC_CHECK_STR(svc_db_sqlstate(db), "57014");
    /* ... but the connection is fine: no reset, no second run. */
    svc_db_stats(db, &s);
    SVC_CHECK_INT(s.retries, 0);
    SVC_CHECK_INT(PQbackendPID(svc_db_conn(db)), pid);
    SVC_CHECK_INT(svc_db_simple(db, "SET statement_timeout = 0", p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &st_one, p, NULL, NULL), APR_SUCCESS);
}

SVC_TEST(db_deadlock_is_retry_later)
{
    svc_db_t *a = svc_testdb_open(p), *b = svc_testdb_open(p), *obs = svc_testdb_open(p);
    const svc_stmt_t *up;
    const char *t;
    apr_status_t ra, rb;

    if (!a || !b || !obs) {
        return;
    }
    t = scratch_table(p, obs);
    svc_testdb_value(p, obs, apr_psprintf(p, "INSERT INTO %s VALUES (1, 'a'), (2, 'b')", t));
    up = stmt(p, "svc_ut_lock_row",
              apr_psprintf(p, "SELECT v FROM %s WHERE id = $1::int FOR UPDATE", t), 1, 0);
    /*
     * a locks 1, b locks 2; b waits for 1 (sent without waiting), then a
     * waits for 2. The deadlock is found by whoever's deadlock_timeout runs
     * out first, and that one is the victim: a, by setting them apart.
     */
    SVC_CHECK_INT(svc_db_simple(a, "SET deadlock_timeout = 20", p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_simple(b, "SET deadlock_timeout = '30s'", p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_begin(a), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_begin(b), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(a, up, p, NULL, "1"), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_execv(b, up, p, NULL, "2"), APR_SUCCESS);
    SVC_CHECK(PQsendQuery(svc_db_conn(b),
                          apr_psprintf(p, "SELECT v FROM %s WHERE id = 1 FOR UPDATE", t)) == 1);
    ra = svc_db_execv(a, up, p, NULL, "2");
    {
        PGresult *r;
        rb = APR_SUCCESS;
        while ((r = PQgetResult(svc_db_conn(b))) != NULL) {
            if (PQresultStatus(r) == PGRES_FATAL_ERROR) {
                rb = SVC_EDBDOWN;
            }
            PQclear(r);
        }
    }
    /* The loser is told "try again" (503), not 500; the other goes on. */
    SVC_CHECK_INT(ra, SVC_EDBDOWN);
    SVC_CHECK_STR(svc_db_sqlstate(a), "40P01");
    SVC_CHECK_INT(rb, APR_SUCCESS);
    svc_db_rollback(a);
    svc_db_rollback(b);
    svc_db_release(b);
    drop_table(p, obs, t);
}

/* The effective project role: one SQL function, read by authorization and
 * by every project document alike (sql/004). Each row of the rule. */
SVC_TEST(db_effective_project_role)
{
    static const struct {
        const char *org, *team, *want;
    } rows[] = {
        { "owner", NULL, "maintainer" }, { "admin", "viewer", "maintainer" },
        { "member", NULL, "viewer" }, { "member", "developer", "developer" },
        { "member", "maintainer", "maintainer" }, { "viewer", "maintainer", "viewer" },
        { "viewer", NULL, "viewer" }, { NULL, "maintainer", NULL }, { "bogus", "viewer", NULL },
    };
    static const svc_stmt_t st_eff = {
        "svc_ut_prole_effective", "SELECT svc_prole_effective($1, $2)", 2, SVC_STMT_READ
    };
    svc_db_t *db = svc_testdb_open(p);
    size_t i;

    if (!db) {
        return;
    }
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        svc_dbres_t *res = NULL;
        const char *got;
        SVC_CHECK_INT(svc_db_execv(db, &st_eff, p, &res, rows[i].org, rows[i].team),
                      APR_SUCCESS);
        got = svc_dbres_str(res, 0, 0);
        if (rows[i].want) {
            SVC_CHECK_STR(got, rows[i].want);
        }
        else {
            SVC_CHECK(got == NULL);
        }
    }
}

SVC_TEST(db_migrate_current)
{
    svc_db_t *db = svc_testdb_open(p), *scratch = svc_testdb_open(p);
    const char *schema = svc_testdb_name(p, "svc_ut_schema");
    const svc_migration_t *m;
    const char *err = NULL;
    int version = -1, last = 0, count = 0, applied = -1;

    if (!db || !scratch) {
        return;
    }
    for (m = svc_migrations; m->sql; m++) {
        /* Numbered, increasing (gaps allowed: branches merged out of order). */
        SVC_CHECK(m->version > last);
        last = m->version;
        count++;
    }
    SVC_CHECK(count > 0);
    SVC_CHECK_INT(svc_schema_version, last);
    SVC_CHECK_INT(svc_migrate_current(db, p, &version), APR_SUCCESS);
    SVC_CHECK_INT(version, svc_schema_version);

    /* An empty schema (a session of our own, so SET is fine here) is at 0... */
    svc_testdb_value(p, db, apr_psprintf(p, "CREATE SCHEMA %s", schema));
    SVC_CHECK_INT(svc_db_simple(scratch, apr_psprintf(p, "SET search_path = %s", schema), p),
                  APR_SUCCESS);
    version = -1;
    SVC_CHECK_INT(svc_migrate_current(scratch, p, &version), APR_SUCCESS);
    SVC_CHECK_INT(version, 0);
    /* ...migrates to the current version, and a second run has nothing to do. */
    SVC_CHECK_INT(svc_migrate_run(scratch, p, &applied, &err), APR_SUCCESS);
    if (err) {
        fprintf(stderr, "# migrate: %s\n", err);
    }
    SVC_CHECK_INT(applied, count);
    SVC_CHECK_INT(svc_migrate_current(scratch, p, &version), APR_SUCCESS);
    SVC_CHECK_INT(version, svc_schema_version);
    SVC_CHECK_INT(svc_migrate_run(scratch, p, &applied, &err), APR_SUCCESS);
    SVC_CHECK_INT(applied, 0);
    SVC_CHECK_STR(svc_testdb_value(p, db, apr_psprintf(
                      p, "SELECT count(*) FROM pg_tables WHERE schemaname = '%s'"
                      " AND tablename = 'audit_log'", schema)), "1");
    /* One in the middle missing (a branch merged after a later number was
     * applied): the schema is behind from there, and migrating applies just
     * that one. Its SQL is not replayed here; only the bookkeeping is. */
    if (count > 1) {
        int middle = svc_migrations[count - 2].version;

        svc_testdb_value(p, db, apr_psprintf(p, "DELETE FROM %s.schema_migrations WHERE "
                                             "version = %d", schema, middle));
        SVC_CHECK_INT(svc_migrate_current(scratch, p, &version), APR_SUCCESS);
        SVC_CHECK_INT(version, count > 2 ? svc_migrations[count - 3].version : 0);
        svc_testdb_value(p, db, apr_psprintf(p, "INSERT INTO %s.schema_migrations (version, "
                                             "name) VALUES (%d, 'x')", schema, middle));
        SVC_CHECK_INT(svc_migrate_current(scratch, p, &version), APR_SUCCESS);
        SVC_CHECK_INT(version, svc_schema_version);
    }
    svc_testdb_value(p, db, apr_psprintf(p, "DROP SCHEMA %s CASCADE", schema));
}

/* ---------------------------------------------------------------------- */
/* Binary results (SVC_STMT_BINARY) and rows written as JSON in C           */

#define USEC APR_INT64_C(1000000)

/* Integers of each width at their extremes, with a byte pattern that shows
 * the byte order (0x0102..., 258 = 0x0102), and negatives that need sign
 * extension from 16 and 32 bits. */
#define INTS_SQL                                                              \
    "SELECT 0::int2, '-32768'::int2, 32767::int2, (-2)::int2, 258::int2,"     \
    " '-2147483648'::int4, 2147483647::int4, (-1)::int4, 16909060::int4,"     \
    " '-9223372036854775808'::int8, 9223372036854775807::int8, (-1)::int8,"   \
    " 72623859790382856::int8, (-4294967296)::int8"

SVC_TEST(db_binary_ints)
{
    static const svc_stmt_t st_bin = {
        "svc_ut_bin_ints", INTS_SQL, 0, SVC_STMT_READ | SVC_STMT_BINARY
    };
    static const svc_stmt_t st_txt = {
        "svc_ut_txt_ints", INTS_SQL, 0, SVC_STMT_READ
    };
    static const struct {
        apr_int64_t v;
        unsigned oid;
    } want[] = {
        { 0, SVC_OID_INT2 }, { -32768, SVC_OID_INT2 }, { 32767, SVC_OID_INT2 },
        { -2, SVC_OID_INT2 }, { 258, SVC_OID_INT2 },
        { APR_INT64_C(-2147483648), SVC_OID_INT4 }, { 2147483647, SVC_OID_INT4 },
        { -1, SVC_OID_INT4 }, { 16909060, SVC_OID_INT4 },
        { APR_INT64_MIN, SVC_OID_INT8 }, { APR_INT64_MAX, SVC_OID_INT8 },
        { -1, SVC_OID_INT8 }, { APR_INT64_C(72623859790382856), SVC_OID_INT8 },
        { APR_INT64_C(-4294967296), SVC_OID_INT8 },
    };
    svc_db_t *db = svc_testdb_open(p);
    svc_dbres_t *bin = NULL, *txt = NULL;
    int col, ncols = (int)(sizeof(want) / sizeof(want[0]));

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_exec(db, &st_bin, p, &bin, NULL), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &st_txt, p, &txt, NULL), APR_SUCCESS);
    SVC_CHECK_INT(svc_dbres_cols(bin), ncols);
    SVC_CHECK_INT(svc_dbres_cols(txt), ncols);
    for (col = 0; col < ncols; col++) {
        apr_int64_t vb = 77, vt = 77;
        int fb = -1, ft = -1;

        /* The same value from either format. */
        if (svc_dbres_int64(bin, 0, col, &vb) != APR_SUCCESS || vb != want[col].v
            || svc_dbres_int64(txt, 0, col, &vt) != APR_SUCCESS || vt != want[col].v) {
            fprintf(stderr, "%s:%d: column %d: binary %" APR_INT64_T_FMT ", text %"
                    APR_INT64_T_FMT ", want %" APR_INT64_T_FMT "\n", __FILE__, __LINE__,
                    col, vb, vt, want[col].v);
            svc_test_failed_checks++;
        }
        SVC_CHECK_INT(svc_dbres_type(bin, col, &fb), want[col].oid);
        SVC_CHECK_INT(fb, 1);
        SVC_CHECK_INT(svc_dbres_type(txt, col, &ft), want[col].oid);
        SVC_CHECK_INT(ft, 0);
    }
    /* Out of range is 0 (and leaves the flag alone); the flag is optional. */
    {
        int f = 42;
        SVC_CHECK_INT(svc_dbres_type(bin, ncols, &f), 0);
        SVC_CHECK_INT(svc_dbres_type(bin, -1, &f), 0);
        SVC_CHECK_INT(svc_dbres_type(NULL, 0, &f), 0);
        SVC_CHECK_INT(f, 42);
        SVC_CHECK_INT(svc_dbres_type(bin, 0, NULL), SVC_OID_INT2);
        SVC_CHECK_INT(svc_dbres_cols(NULL), 0);
    }
}

SVC_TEST(db_binary_bool_and_text)
{
    static const svc_stmt_t st = {
        "svc_ut_bin_bool_text",
        "SELECT true, false, NULL::boolean, $1::text, ''::text, NULL::text,"
        " 'v'::varchar(5), 1::int4, NULL::int8, '2026-11-25 21:54:14+00'::timestamptz",
        1, SVC_STMT_READ | SVC_STMT_BINARY
    };
    /* é, a quote, a newline, U+1F600: text travels as the same bytes. */
    static const char text[] = "caf\xc3\xa9 \"q\"\n\xf0\x9f\x98\x80";
    svc_db_t *db = svc_testdb_open(p);
    svc_dbres_t *res = NULL;
    apr_int64_t v;
    int f;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_execv(db, &st, p, &res, text), APR_SUCCESS);
    SVC_CHECK_INT(svc_dbres_bool(res, 0, 0), 1);
    SVC_CHECK_INT(svc_dbres_bool(res, 0, 1), 0);
    SVC_CHECK_INT(svc_dbres_bool(res, 0, 2), -1);
    SVC_CHECK_STR(svc_dbres_str(res, 0, 3), text);
    SVC_CHECK_STR(svc_dbres_str(res, 0, 4), "");
    SVC_CHECK(svc_dbres_isnull(res, 0, 5));
    SVC_CHECK(!svc_dbres_isnull(res, 0, 4));
    SVC_CHECK_STR(svc_dbres_str(res, 0, 6), "v");
    /* A binary value of another type is not read as something else: the
     * int 1 is no boolean, the boolean no integer, nor the (8-byte)
     * timestamptz an int8. */
    SVC_CHECK_INT(svc_dbres_bool(res, 0, 7), -1);
    v = 77;
    SVC_CHECK_INT(svc_dbres_int64(res, 0, 7, &v), APR_SUCCESS);
    SVC_CHECK_INT(v, 1);
    SVC_CHECK_INT(svc_dbres_int64(res, 0, 0, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_dbres_int64(res, 0, 9, &v), APR_EINVAL);
    /* NULL is no number in binary either. */
    SVC_CHECK_INT(svc_dbres_int64(res, 0, 8, &v), APR_EINVAL);
    SVC_CHECK_INT(v, 1);

    SVC_CHECK_INT(svc_dbres_cols(res), 10);
    SVC_CHECK_INT(svc_dbres_type(res, 0, &f), SVC_OID_BOOL);
    SVC_CHECK_INT(f, 1);
    SVC_CHECK_INT(svc_dbres_type(res, 3, &f), SVC_OID_TEXT);
    SVC_CHECK_INT(svc_dbres_type(res, 6, &f), SVC_OID_VARCHAR);
    SVC_CHECK_INT(svc_dbres_type(res, 7, &f), SVC_OID_INT4);
    SVC_CHECK_INT(svc_dbres_type(res, 8, &f), SVC_OID_INT8);
    SVC_CHECK_INT(svc_dbres_type(res, 9, &f), SVC_OID_TIMESTAMPTZ);
    SVC_CHECK_INT(f, 1);
}

#define TIMES_SQL                                                             \
    "SELECT '2026-11-25 21:54:14.75+00'::timestamptz,"                        \
    " '2026-11-25 23:24:14.75+01:30'::timestamptz,"                           \
    " '2000-01-01 00:00:00+00'::timestamptz,"                                 \
    " '1969-12-31 23:59:59.999999+00'::timestamptz,"                          \
    " '1970-01-01 00:00:00+00'::timestamptz,"                                 \
    " '0001-01-01 00:00:00+00'::timestamptz,"                                 \
    " '9999-12-31 23:59:59.999999+00'::timestamptz,"                          \
    " 'infinity'::timestamptz, '-infinity'::timestamptz, NULL::timestamptz,"  \
    " '2026-11-25 21:54:14.75'::timestamp, 1795643654750000::int8,"           \
    " '2026-11-25 21:54:14.75+00'::text"

SVC_TEST(db_binary_timestamptz)
{
    static const svc_stmt_t st_bin = {
        "svc_ut_bin_times", TIMES_SQL, 0, SVC_STMT_READ | SVC_STMT_BINARY
    };
    static const svc_stmt_t st_txt = {
        "svc_ut_txt_times", TIMES_SQL, 0, SVC_STMT_READ
    };
    /* Seconds from GNU date (date -u -d ... +%s). */
    static const apr_time_t want[] = {
        APR_INT64_C(1795643654) * USEC + 750000,
        APR_INT64_C(1795643654) * USEC + 750000,  /* the same instant */
        APR_INT64_C(946684800) * USEC,            /* zero on the wire */
        -1,
        0,
        APR_INT64_C(-62135596800) * USEC,
        APR_INT64_C(253402300799) * USEC + 999999,
    };
    svc_db_t *db = svc_testdb_open(p);
    svc_dbres_t *bin = NULL, *txt = NULL;
    apr_time_t t;
    int col, f;

    if (!db) {
        return;
    }
    /* The value on the wire is UTC whatever the session's zone is. */
    SVC_CHECK_INT(svc_db_simple(db, "SET TimeZone = 'Asia/Kathmandu'", p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &st_bin, p, &bin, NULL), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &st_txt, p, &txt, NULL), APR_SUCCESS);
    for (col = 0; col < (int)(sizeof(want) / sizeof(want[0])); col++) {
        t = 77;
        if (svc_dbres_time(bin, 0, col, &t) != APR_SUCCESS || t != want[col]) {
            fprintf(stderr, "%s:%d: column %d: %" APR_INT64_T_FMT ", want %"
                    APR_INT64_T_FMT "\n", __FILE__, __LINE__, col, t, want[col]);
            svc_test_failed_checks++;
        }
        SVC_CHECK_INT(svc_dbres_type(bin, col, &f), SVC_OID_TIMESTAMPTZ);
        SVC_CHECK_INT(f, 1);
        /* Text format is refused, not parsed. */
        SVC_CHECK_INT(svc_dbres_time(txt, 0, col, &t), APR_EINVAL);
        SVC_CHECK_INT(svc_dbres_type(txt, col, &f), SVC_OID_TIMESTAMPTZ);
        SVC_CHECK_INT(f, 0);
    }
    /* infinity, -infinity, NULL; a timestamp without zone and an int8
     * (both 8 bytes, like a timestamptz) and a text. */
    for (col = 7; col <= 12; col++) {
        t = 77;
        if (svc_dbres_time(bin, 0, col, &t) != APR_EINVAL) {
            fprintf(stderr, "%s:%d: column %d read as a time: %" APR_INT64_T_FMT "\n",
                    __FILE__, __LINE__, col, t);
            svc_test_failed_checks++;
        }
    }
    SVC_CHECK_INT(svc_dbres_time(bin, 1, 0, &t), APR_EINVAL);   /* no such row */
    SVC_CHECK_INT(svc_dbres_time(bin, 0, 13, &t), APR_EINVAL);  /* no such column */
}

/* A binary read carried in the same round trip as a deferred check still
 * comes back binary (the pipeline path asks for the format too), and the
 * deferred text statement still comes back text. */
SVC_TEST(db_binary_read_rides_with_a_deferred_check)
{
    static const svc_stmt_t st = {
        "svc_ut_bin_piped", "SELECT (-2)::int2, '2026-11-25 21:54:14.75+00'::timestamptz", 0,
        SVC_STMT_READ | SVC_STMT_BINARY
    };
    svc_db_t *db = svc_testdb_open(p);
    check_baton_t b = { 0, APR_SUCCESS, "" };
    const char *params[1] = { "checked" };
    svc_dbres_t *res = NULL;
    svc_db_stats_t s;
    apr_int64_t v = 0;
    apr_time_t t = 0;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_defer(db, &st_echo, params, record_check, &b, p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &st, p, &res, NULL), APR_SUCCESS);
    svc_db_stats(db, &s);
    SVC_CHECK_INT(s.pipelined, 1);
    SVC_CHECK_STR(b.seen, "checked");
    SVC_CHECK_INT(svc_dbres_int64(res, 0, 0, &v), APR_SUCCESS);
    SVC_CHECK_INT(v, -2);
    SVC_CHECK_INT(svc_dbres_time(res, 0, 1, &t), APR_SUCCESS);
    SVC_CHECK(t == APR_INT64_C(1795643654) * USEC + 750000);
}

static const svc_col_t shape_owner[] = {
    SVC_COL("id", SVC_COL_INT),
    SVC_COL("name", SVC_COL_TEXT),
    SVC_COL_END
};

SVC_TEST(db_shape_check)
{
#define SHAPE_SQL                                                             \
    "SELECT 1::int8, 'x'::text, 2::int4, true, now(), 3::int2, 'y'::varchar(3)"
    static const svc_stmt_t st_bin = {
        "svc_ut_shape_bin", SHAPE_SQL, 0, SVC_STMT_READ | SVC_STMT_BINARY
    };
    static const svc_stmt_t st_txt = {
        "svc_ut_shape_txt", SHAPE_SQL, 0, SVC_STMT_READ
    };
    static const svc_stmt_t st_ts = {
        "svc_ut_shape_ts", "SELECT 1::int8, now()::timestamp", 0,
        SVC_STMT_READ | SVC_STMT_BINARY
    };
#undef SHAPE_SQL
    /* From column 1: text, int, bool, time, then an object of int and text. */
    static const svc_col_t fits[] = {
        SVC_COL("name", SVC_COL_TEXT), SVC_COL("n", SVC_COL_INT),
        SVC_COL("flag", SVC_COL_BOOL), SVC_COL("at", SVC_COL_TIME),
        SVC_COL_NEST("owner", shape_owner), SVC_COL_END
    };
    /* The same with the ordering key: from column 0. */
    static const svc_col_t fits0[] = {
        SVC_COL("seq", SVC_COL_INT), SVC_COL("name", SVC_COL_TEXT),
        SVC_COL("n", SVC_COL_INT), SVC_COL("flag", SVC_COL_BOOL),
        SVC_COL("at", SVC_COL_TIME), SVC_COL("m", SVC_COL_INT),
        SVC_COL("s", SVC_COL_TEXT), SVC_COL_END
    };
    static const svc_col_t too_few[] = {
        SVC_COL("name", SVC_COL_TEXT), SVC_COL("n", SVC_COL_INT),
        SVC_COL("flag", SVC_COL_BOOL), SVC_COL("at", SVC_COL_TIME),
        SVC_COL("m", SVC_COL_INT), SVC_COL_END
    };
    static const svc_col_t too_many[] = {
        SVC_COL("name", SVC_COL_TEXT), SVC_COL("n", SVC_COL_INT),
        SVC_COL("flag", SVC_COL_BOOL), SVC_COL("at", SVC_COL_TIME),
        SVC_COL_NEST("owner", shape_owner), SVC_COL("more", SVC_COL_TEXT), SVC_COL_END
    };
    static const svc_col_t text_on_int[] = {
        SVC_COL("name", SVC_COL_TEXT), SVC_COL("n", SVC_COL_TEXT),
        SVC_COL("flag", SVC_COL_BOOL), SVC_COL("at", SVC_COL_TIME),
        SVC_COL_NEST("owner", shape_owner), SVC_COL_END
    };
    static const svc_col_t int_on_text[] = {
        SVC_COL("name", SVC_COL_INT), SVC_COL("n", SVC_COL_INT),
        SVC_COL("flag", SVC_COL_BOOL), SVC_COL("at", SVC_COL_TIME),
        SVC_COL_NEST("owner", shape_owner), SVC_COL_END
    };
    static const svc_col_t bool_on_int[] = {
        SVC_COL("name", SVC_COL_TEXT), SVC_COL("n", SVC_COL_BOOL),
        SVC_COL("flag", SVC_COL_BOOL), SVC_COL("at", SVC_COL_TIME),
        SVC_COL_NEST("owner", shape_owner), SVC_COL_END
    };
    static const svc_col_t time_on_int[] = {
        SVC_COL("name", SVC_COL_TEXT), SVC_COL("n", SVC_COL_TIME),
        SVC_COL("flag", SVC_COL_BOOL), SVC_COL("at", SVC_COL_TIME),
        SVC_COL_NEST("owner", shape_owner), SVC_COL_END
    };
    /* Without the time, a text-format result fits too. */
    static const svc_col_t no_time[] = {
        SVC_COL("name", SVC_COL_TEXT), SVC_COL("n", SVC_COL_INT),
        SVC_COL("flag", SVC_COL_BOOL), SVC_COL_END
    };
    static const svc_col_t ts_time[] = {
        SVC_COL("at", SVC_COL_TIME), SVC_COL_END
    };
    static const svc_stmt_t st_part = {
        "svc_ut_shape_part", "SELECT 1::int8, 'x'::text, 2::int4, true", 0,
        SVC_STMT_READ
    };
    svc_db_t *db = svc_testdb_open(p);
    svc_dbres_t *bin = NULL, *txt = NULL, *ts = NULL, *part = NULL;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_exec(db, &st_bin, p, &bin, NULL), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &st_txt, p, &txt, NULL), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &st_ts, p, &ts, NULL), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &st_part, p, &part, NULL), APR_SUCCESS);

    SVC_CHECK_INT(svc_shape_check(bin, 1, fits), APR_SUCCESS);
    SVC_CHECK_INT(svc_shape_check(bin, 0, fits0), APR_SUCCESS);
    /* The shape must take every column from `col` on, no fewer, no more. */
    SVC_CHECK_INT(svc_shape_check(bin, 1, too_few), SVC_EDB);
    SVC_CHECK_INT(svc_shape_check(bin, 1, too_many), SVC_EDB);
    SVC_CHECK_INT(svc_shape_check(bin, 0, fits), SVC_EDB);
    SVC_CHECK_INT(svc_shape_check(bin, 2, fits), SVC_EDB);
    /* Types. */
    SVC_CHECK_INT(svc_shape_check(bin, 1, text_on_int), SVC_EDB);
    SVC_CHECK_INT(svc_shape_check(bin, 1, int_on_text), SVC_EDB);
    SVC_CHECK_INT(svc_shape_check(bin, 1, bool_on_int), SVC_EDB);
    SVC_CHECK_INT(svc_shape_check(bin, 1, time_on_int), SVC_EDB);
    SVC_CHECK_INT(svc_shape_check(ts, 1, ts_time), SVC_EDB);     /* timestamp, no zone */
    /* A time needs the binary format; the other types read from either. */
    SVC_CHECK_INT(svc_shape_check(txt, 1, fits), SVC_EDB);
    SVC_CHECK_INT(svc_shape_check(txt, 0, fits0), SVC_EDB);
    SVC_CHECK_INT(svc_shape_check(part, 1, no_time), APR_SUCCESS);
}

/* The instant as PostgreSQL writes it for the expectation. */
#define PG_RFC3339(c) "to_char(" c " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

/*
 * Rows of every kind: NULLs everywhere, the nested owner null (when its
 * first column is NULL, even with others set) or present with NULLs inside,
 * text that needs escaping, booleans, ints at their extremes, times before
 * 1970 with a fraction, at the ends of years 1 and 9999, given in another
 * zone.
 */
#define ROWS_CTE                                                              \
    "WITH r(id, big, small, name, flag, at, o_id, o_name, o_admin, o_since,"  \
    " note) AS (VALUES"                                                       \
    " (1, 1::int8, 1::int2, 'plain'::text, true,"                             \
    "  '2026-11-25 21:54:14.75+00'::timestamptz, 10::int8, 'owner'::text,"    \
    "  true, '2020-01-01 00:00:00+00'::timestamptz, 'n1'::varchar(20)),"      \
    " (2, '-9223372036854775808'::int8, '-32768'::int2,"                      \
    "  E'quote \" backslash \\\\ nl \\n tab \\t cr \\r bs \\b ff \\f '"       \
    "  || chr(1) || chr(31) || chr(127) || chr(233) || chr(128512)"           \
    "  || chr(8232) || ' /', false, '1969-12-31 23:59:59.5+00', NULL, NULL,"  \
    "  NULL, NULL, NULL),"                                                    \
    " (3, NULL, NULL, NULL, NULL, NULL, NULL, 'ghost', false,"                \
    "  '2021-06-01 12:00:00+00', ''),"                                        \
    " (4, 9223372036854775807, 32767, '', false,"                             \
    "  '0001-01-01 00:00:00+00', 0, NULL, NULL, NULL, 'tail'),"               \
    " (5, -1, -1, E'\\u00e9t\\u00e9', NULL,"                                  \
    "  '9999-12-31 23:59:59.999999+00', '-1', E'\\\\\"', NULL,"               \
    "  '2026-11-26 03:24:14.999+05:30', NULL))"

static const svc_col_t row_owner[] = {
    SVC_COL("id", SVC_COL_INT),
    SVC_COL("name", SVC_COL_TEXT),
    SVC_COL("admin", SVC_COL_BOOL),
    SVC_COL("since", SVC_COL_TIME),
    SVC_COL_END
};

static const svc_col_t row_item[] = {
    SVC_COL("id", SVC_COL_INT),
    SVC_COL("big", SVC_COL_INT),
    SVC_COL("small", SVC_COL_INT),
    SVC_COL("name", SVC_COL_TEXT),
    SVC_COL("flag", SVC_COL_BOOL),
    SVC_COL("at", SVC_COL_TIME),
    SVC_COL_NEST("owner", row_owner),
    SVC_COL("note", SVC_COL_TEXT),
    SVC_COL_END
};

/* Parses JSON text (any value), or prints why not and returns NULL. */
static json_t *json_of(apr_pool_t *p, const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text ? text : "", JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);

    if (!j) {
        fprintf(stderr, "# not JSON (%s): %s\n", jerr.text, text ? text : "(null)");
        return NULL;
    }
    return svc_json_pool(p, j);
}

SVC_TEST(db_json_row_matches_postgres)
{
    static const svc_stmt_t st_rows = {
        "svc_ut_json_rows",
        ROWS_CTE " SELECT id, id, big, small, name, flag, at, o_id, o_name, o_admin,"
        " o_since, note FROM r ORDER BY id",
        0, SVC_STMT_READ | SVC_STMT_BINARY
    };
    static const svc_stmt_t st_want = {
        "svc_ut_json_want",
        ROWS_CTE " SELECT json_build_object('id', id, 'big', big, 'small', small,"
        " 'name', name, 'flag', flag, 'at', " PG_RFC3339("at") ","
        " 'owner', CASE WHEN o_id IS NULL THEN NULL ELSE json_build_object("
        "   'id', o_id, 'name', o_name, 'admin', o_admin,"
        "   'since', " PG_RFC3339("o_since") ") END,"
        " 'note', note)::text FROM r ORDER BY id",
        0, SVC_STMT_READ
    };
    svc_db_t *db = svc_testdb_open(p);
    svc_dbres_t *res = NULL, *exp = NULL;
    json_t *all;
    svc_jbuf_t b;
    int i, n;

    if (!db) {
        return;
    }
    /* Times are written in UTC whatever the session's zone. */
    SVC_CHECK_INT(svc_db_simple(db, "SET TimeZone = 'America/St_Johns'", p), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &st_rows, p, &res, NULL), APR_SUCCESS);
    SVC_CHECK_INT(svc_db_exec(db, &st_want, p, &exp, NULL), APR_SUCCESS);
    n = svc_dbres_rows(res);
    SVC_CHECK_INT(n, 5);
    SVC_CHECK_INT(svc_dbres_rows(exp), n);
    SVC_CHECK_INT(svc_shape_check(res, 1, row_item), APR_SUCCESS);

    /* All rows into one buffer (it grows from the minimum), as a list. */
    svc_jbuf_init(&b, p, 0);
    svc_jbuf_raw(&b, "[", 1);
    for (i = 0; i < n; i++) {
        if (i) {
            svc_jbuf_raw(&b, ",", 1);
        }
        SVC_CHECK_INT(svc_row_json(&b, res, i, 1, row_item), APR_SUCCESS);
    }
    svc_jbuf_raw(&b, "]", 1);
    all = json_of(p, svc_jbuf_text(&b, NULL));
    SVC_CHECK(json_is_array(all));
    SVC_CHECK_INT(json_array_size(all), n);
    for (i = 0; i < n && json_is_array(all); i++) {
        json_t *got = json_array_get(all, (size_t)i);
        json_t *want = json_of(p, svc_dbres_str(exp, i, 0));

        if (!want || !json_equal(got, want)) {
            char *g = json_dumps(got, JSON_SORT_KEYS | JSON_ENCODE_ANY);
            char *w = want ? json_dumps(want, JSON_SORT_KEYS) : NULL;
            fprintf(stderr, "%s:%d: row %d:\n#   ours %s\n#   want %s\n", __FILE__, __LINE__,
                    i + 1, g ? g : "(none)", w ? w : "(none)");
            free(g);
            free(w);
            svc_test_failed_checks++;
        }
    }

    /* The exact text of one row: keys in shape order, no spaces. */
    svc_jbuf_init(&b, p, 0);
    SVC_CHECK_INT(svc_row_json(&b, res, 0, 1, row_item), APR_SUCCESS);
    SVC_CHECK_STR(svc_jbuf_text(&b, NULL),
                  "{\"id\":1,\"big\":1,\"small\":1,\"name\":\"plain\",\"flag\":true,"
                  "\"at\":\"2026-11-25T21:54:14Z\",\"owner\":{\"id\":10,\"name\":\"owner\","
                  "\"admin\":true,\"since\":\"2020-01-01T00:00:00Z\"},\"note\":\"n1\"}");
    svc_jbuf_init(&b, p, 0);
    SVC_CHECK_INT(svc_row_json(&b, res, 2, 1, row_item), APR_SUCCESS);
    SVC_CHECK_STR(svc_jbuf_text(&b, NULL),
                  "{\"id\":3,\"big\":null,\"small\":null,\"name\":null,\"flag\":null,"
                  "\"at\":null,\"owner\":null,\"note\":\"\"}");
}

/*
 * A null object that holds an object: the columns of the inner one are
 * skipped too, so the next key reads its own column. (svc_shape_check
 * counts every column of every level; svc_row_json must agree.)
 */
SVC_TEST(db_json_row_null_object_with_nested_object)
{
    static const svc_stmt_t st = {
        "svc_ut_json_nest2",
        "SELECT t_id, l_id, l_name, after FROM (VALUES"
        " (1, NULL::int8, 5::int8, 'x'::text, 'tail'::text),"
        " (2, 7, NULL, 'y', 'tail'),"
        " (3, 7, 5, 'z', 'tail')) v(k, t_id, l_id, l_name, after) ORDER BY k",
        0, SVC_STMT_READ | SVC_STMT_BINARY
    };
    static const svc_col_t lead[] = {
        SVC_COL("id", SVC_COL_INT), SVC_COL("name", SVC_COL_TEXT), SVC_COL_END
    };
    static const svc_col_t team[] = {
        SVC_COL("id", SVC_COL_INT), SVC_COL_NEST("lead", lead), SVC_COL_END
    };
    static const svc_col_t item[] = {
        SVC_COL_NEST("team", team), SVC_COL("after", SVC_COL_TEXT), SVC_COL_END
    };
    static const char *const want[] = {
        "{\"team\":null,\"after\":\"tail\"}",
        "{\"team\":{\"id\":7,\"lead\":null},\"after\":\"tail\"}",
        "{\"team\":{\"id\":7,\"lead\":{\"id\":5,\"name\":\"z\"}},\"after\":\"tail\"}",
    };
    svc_db_t *db = svc_testdb_open(p);
    svc_dbres_t *res = NULL;
    int i;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_exec(db, &st, p, &res, NULL), APR_SUCCESS);
    SVC_CHECK_INT(svc_shape_check(res, 0, item), APR_SUCCESS);
    for (i = 0; i < 3; i++) {
        svc_jbuf_t b;
        svc_jbuf_init(&b, p, 0);
        SVC_CHECK_INT(svc_row_json(&b, res, i, 0, item), APR_SUCCESS);
        SVC_CHECK_STR(svc_jbuf_text(&b, NULL), want[i]);
    }
}

/* A time the shape accepts but JSON cannot say (infinity, a year past 9999)
 * fails the row instead of writing something wrong. */
SVC_TEST(db_json_row_refuses_unwritable_times)
{
    static const svc_stmt_t st = {
        "svc_ut_json_badtime",
        "SELECT t FROM (VALUES (1, 'infinity'::timestamptz), (2, '-infinity'),"
        " (3, '10000-01-01 00:00:00+00'), (4, '0001-01-01 00:00:00+00'::timestamptz"
        " - interval '1 microsecond'), (5, '9999-12-31 23:59:59.999999+00'))"
        " v(k, t) ORDER BY k",
        0, SVC_STMT_READ | SVC_STMT_BINARY
    };
    static const svc_col_t item[] = { SVC_COL("t", SVC_COL_TIME), SVC_COL_END };
    svc_db_t *db = svc_testdb_open(p);
    svc_dbres_t *res = NULL;
    svc_jbuf_t b;
    int i;

    if (!db) {
        return;
    }
    SVC_CHECK_INT(svc_db_exec(db, &st, p, &res, NULL), APR_SUCCESS);
    SVC_CHECK_INT(svc_shape_check(res, 0, item), APR_SUCCESS);
    for (i = 0; i < 4; i++) {
        svc_jbuf_init(&b, p, 0);
        SVC_CHECK_INT(svc_row_json(&b, res, i, 0, item), SVC_EDB);
    }
    svc_jbuf_init(&b, p, 0);
    SVC_CHECK_INT(svc_row_json(&b, res, 4, 0, item), APR_SUCCESS);
    SVC_CHECK_STR(svc_jbuf_text(&b, NULL), "{\"t\":\"9999-12-31T23:59:59Z\"}");
}

int main(int argc, const char *const *argv)
{
    if (!svc_testdb_conninfo()) {
        printf("# SKIP no SVC_TEST_DB\n");
        return 0;
    }
    if (svc_crypto_init() != APR_SUCCESS) {
        fprintf(stderr, "svc_crypto_init failed\n");
        return 1;
    }
    return svc_test_run(argc, argv);
}
