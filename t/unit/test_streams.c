/*
 * test_streams.c: the places event streams take (kernel/svc_eventlog.c,
 * sql/016_event_streams.sql), against PostgreSQL: the count per principal,
 * its limit, places given back, and places of a holder that stopped
 * confirming them.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"
#include "svc_testdb.h"
#include "svc_eventlog.h"

#include <string.h>

/* How many places the principal holds that count (fresh ones). */
static int held(svc_db_t *db, apr_pool_t *p, const char *principal)
{
    static const svc_stmt_t st = {
        "test_streams_held",
        "SELECT count(*)::text FROM event_streams"
        " WHERE principal = $1 AND seen_at > now() - interval '90 seconds'",
        1, SVC_STMT_READ
    };
    svc_dbres_t *res;

    if (svc_db_execv(db, &st, p, &res, principal) != APR_SUCCESS) {
        return -1;
    }
    return atoi(svc_dbres_str(res, 0, 0));
}

SVC_TEST(places_up_to_the_limit)
{
    svc_db_t *db;
    const char *who, *holder;
    apr_int64_t a = 0, b = 0, c = -1, d = 0;

    if (!svc_testdb_conninfo() || !(db = svc_testdb_open(p))) {
        return;
    }
    who = apr_pstrcat(p, "user:", svc_testdb_name(p, "streams"), NULL);
    holder = svc_testdb_name(p, "holder");
    SVC_CHECK(svc_streams_claim(db, p, who, holder, 2, &a) == APR_SUCCESS && a > 0);
    SVC_CHECK(svc_streams_claim(db, p, who, holder, 2, &b) == APR_SUCCESS && b > a);
    /* The third is refused: 0, not an error. */
    SVC_CHECK(svc_streams_claim(db, p, who, holder, 2, &c) == APR_SUCCESS && c == 0);
    SVC_CHECK(held(db, p, who) == 2);
    /* Another principal is not affected. */
    SVC_CHECK(svc_streams_claim(db, p, apr_pstrcat(p, who, "x", NULL), holder, 2, &d)
              == APR_SUCCESS && d > 0);
    /* One given back: a place again. */
    SVC_CHECK(svc_streams_release(db, p, apr_psprintf(p, "{%" APR_INT64_T_FMT "}", a))
              == APR_SUCCESS);
    SVC_CHECK(held(db, p, who) == 1);
    SVC_CHECK(svc_streams_claim(db, p, who, holder, 2, &c) == APR_SUCCESS && c > 0);
    /* Limit 0: no limit. */
    SVC_CHECK(svc_streams_claim(db, p, who, holder, 0, &a) == APR_SUCCESS && a > 0);
    SVC_CHECK(held(db, p, who) == 3);
    SVC_CHECK(svc_streams_release(db, p, apr_psprintf(p, "{%" APR_INT64_T_FMT ",%"
                                                      APR_INT64_T_FMT ",%" APR_INT64_T_FMT
                                                      ",%" APR_INT64_T_FMT "}", a, b, c, d))
              == APR_SUCCESS);
    SVC_CHECK(held(db, p, who) == 0);
}

SVC_TEST(places_of_a_silent_holder_stop_counting)
{
    static const svc_stmt_t age = {
        "test_streams_age",
        "UPDATE event_streams SET seen_at = now() - $2::interval WHERE holder = $1",
        2, 0
    };
    static const svc_stmt_t rows = {
        "test_streams_rows",
        "SELECT count(*)::text FROM event_streams WHERE holder = $1",
        1, SVC_STMT_READ
    };
    svc_db_t *db;
    svc_dbres_t *res;
    const char *who, *dead, *live;
    apr_int64_t id = 0;

    if (!svc_testdb_conninfo() || !(db = svc_testdb_open(p))) {
        return;
    }
    who = apr_pstrcat(p, "user:", svc_testdb_name(p, "streams"), NULL);
    dead = svc_testdb_name(p, "dead");
    live = svc_testdb_name(p, "live");
    SVC_CHECK(svc_streams_claim(db, p, who, dead, 1, &id) == APR_SUCCESS && id > 0);
    SVC_CHECK(svc_streams_claim(db, p, who, live, 1, &id) == APR_SUCCESS && id == 0);
    /* The holder died two minutes ago: its place no longer counts. */
    SVC_CHECK(svc_db_execv(db, &age, p, NULL, dead, "2 minutes") == APR_SUCCESS);
    SVC_CHECK(svc_streams_claim(db, p, who, live, 1, &id) == APR_SUCCESS && id > 0);
    /* A live holder's refresh keeps its own rows and sweeps those older
     * than five minutes. */
    SVC_CHECK(svc_db_execv(db, &age, p, NULL, dead, "6 minutes") == APR_SUCCESS);
    SVC_CHECK(svc_db_execv(db, &age, p, NULL, live, "70 seconds") == APR_SUCCESS);
    SVC_CHECK(svc_streams_refresh(db, p, live) == APR_SUCCESS);
    SVC_CHECK(svc_db_execv(db, &rows, p, &res, dead) == APR_SUCCESS
              && strcmp(svc_dbres_str(res, 0, 0), "0") == 0);
    SVC_CHECK(held(db, p, who) == 1);
    SVC_CHECK(svc_streams_release(db, p, apr_psprintf(p, "{%" APR_INT64_T_FMT "}", id))
              == APR_SUCCESS);
}

int main(int argc, const char *const *argv)
{
    return svc_test_run(argc, argv);
}
