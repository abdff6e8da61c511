/*
 * svc_testdb.h: helpers for unit tests that run against a real PostgreSQL.
 *
 * The database is named by the libpq conninfo in SVC_TEST_DB (one where
 * `svcctl migrate` has been run; tools/test.sh sets it). Tests share that
 * database with other test programs and earlier runs, so everything they
 * create carries a unique name (svc_testdb_name) and is dropped again.
 *
 * Include after svc_test.h; every helper is static inline, so a test file
 * only pays for what it uses.
 */
#ifndef SVC_TESTDB_H
#define SVC_TESTDB_H

#include "svc_crypto.h"
#include "svc_db.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The conninfo, or NULL when the tests are to be skipped. */
static inline const char *svc_testdb_conninfo(void)
{
    const char *ci = getenv("SVC_TEST_DB");

    return ci && *ci ? ci : NULL;
}

/*
 * A fresh connection of its own, closed when p is destroyed (so counters
 * such as svc_db_stats start at zero). NULL, with a failed check, when the
 * database cannot be reached.
 *
 * Each connection gets a sub-pool of p: svc_db keeps its per-connection
 * cache of prepared statements in the pool the connection was made in, so
 * two connections must never share one (see db_two_connections_one_pool).
 */
static inline svc_db_t *svc_testdb_open(apr_pool_t *p)
{
    svc_db_t *db = NULL;
    const char *err = NULL;
    apr_pool_t *cp;

    apr_pool_create(&cp, p);
    if (svc_db_connect(&db, svc_testdb_conninfo(), cp, &err) != APR_SUCCESS) {
        fprintf(stderr, "# cannot connect to SVC_TEST_DB: %s\n", err ? err : "?");
        svc_test_failed_checks++;
        return NULL;
    }
    return db;
}

/*
 * A name no other run uses: prefix + pid + a counter + random characters,
 * all lowercase, usable unquoted as an SQL identifier.
 */
static inline const char *svc_testdb_name(apr_pool_t *p, const char *prefix)
{
    static unsigned counter;
    char *r = svc_random_base62(p, 10);
    char *c;

    for (c = r; *c; c++) {
        if (*c >= 'A' && *c <= 'Z') {
            *c = (char)(*c - 'A' + 'a');
        }
    }
    return apr_psprintf(p, "%s%ld_%u_%s", prefix, (long)getpid(), ++counter, r);
}

/*
 * Runs SQL directly on a libpq connection, bypassing svc_db (for setup,
 * teardown and observation from a second connection). Returns the first
 * column of the first row copied into p ("" for a command, NULL for SQL
 * NULL or no row); on an error prints it and returns NULL, with *pok 0.
 */
static inline const char *svc_testdb_pq(apr_pool_t *p, PGconn *conn, const char *sql, int *pok)
{
    PGresult *res = PQexec(conn, sql);
    ExecStatusType st = PQresultStatus(res);
    const char *out = NULL;

    if (st == PGRES_COMMAND_OK) {
        out = "";
    }
    else if (st == PGRES_TUPLES_OK) {
        if (PQntuples(res) > 0 && PQnfields(res) > 0 && !PQgetisnull(res, 0, 0)) {
            out = apr_pstrdup(p, PQgetvalue(res, 0, 0));
        }
    }
    if (pok) {
        *pok = (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK);
    }
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && !pok) {
        fprintf(stderr, "# SQL failed: %s: %s", sql, PQerrorMessage(conn));
        svc_test_failed_checks++;
    }
    PQclear(res);
    return out;
}

/* The same on a svc_db handle's connection. */
static inline const char *svc_testdb_value(apr_pool_t *p, svc_db_t *db, const char *sql)
{
    return svc_testdb_pq(p, svc_db_conn(db), sql, NULL);
}

#endif /* SVC_TESTDB_H */
