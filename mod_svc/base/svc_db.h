/*
 * svc_db.h: data access on a libpq connection.
 *
 * The glue takes pooled connections from mod_dbd and hands us the native
 * PGconn (apr_dbd_native_handle); svcctl opens its own. Either way all
 * queries go through here, which is where the traps of mod_dbd and
 * apr_dbd_pgsql (the ten of docs/architecture.md, "Storage") are handled once:
 *
 *  - statements are prepared lazily under lowercase names, remembered per
 *    backend process id, so a silent reconnect is noticed and they are
 *    prepared again (traps 1, 9);
 *  - a statement that fails because the connection died is retried once on
 *    a fresh connection when that is safe: reads, BEGIN, and writes marked
 *    retryable, never inside a transaction (trap 2);
 *  - results keep libpq's real NULLs and are read as int64 (trap 5), and
 *    the PGresult lives until the pool that asked for it is cleared (trap 4);
 *  - parameters are always passed out of band, never spliced (trap 6);
 *  - a transaction is never left open: svc_db_release rolls back whatever
 *    the code did not commit (trap 7), and session state is only ever set
 *    with SET LOCAL inside one (trap 10).
 */
#ifndef SVC_DB_H
#define SVC_DB_H

#include "svc_types.h"
#include <libpq-fe.h>

/* Statement flags. */
#define SVC_STMT_READ     0x1   /* no side effects: safe to retry */
#define SVC_STMT_RETRY    0x2   /* a write whose repetition is harmless */
/*
 * Results in PostgreSQL's binary format: the server skips formatting every
 * value as text (timestamps above all), and we skip parsing it back. The
 * svc_dbres_* getters read both formats; in binary, svc_dbres_str suits
 * text columns only, svc_dbres_int64 integer columns and svc_dbres_bool
 * boolean ones (anything else reads as invalid).
 */
#define SVC_STMT_BINARY   0x4
/*
 * A write that stands on its own, outside any transaction: bookkeeping that
 * must stay whatever the request it serves comes to, and answers nothing (a
 * rate-limit count, a credential's last use, a model call's usage, a
 * sign-in's state made or used up, an open event stream counted). On a connection that svc_db_guard_writes
 * marked, any other write outside a transaction is refused: a request's
 * changes go through svc_write (kernel/svc_write.h).
 */
#define SVC_STMT_ALONE    0x8

/* A statement, defined once per area as a static const. */
typedef struct {
    const char *name;           /* "svc_<area>_<op>", lowercase */
    const char *sql;
    int nparams;
    unsigned flags;
} svc_stmt_t;

/* One result; valid until the pool given to the query is cleared. */
typedef struct svc_dbres_t svc_dbres_t;

/*
 * Wraps a live connection. `conn_pool` must live exactly as long as the
 * connection itself (mod_dbd's per-connection pool; svcctl's process pool):
 * the cache of prepared statements is kept there. `p` is the caller's
 * (request) pool.
 */
apr_status_t svc_db_wrap(svc_db_t **pdb, PGconn *conn, apr_pool_t *conn_pool,
                         int statement_timeout_ms, apr_pool_t *p);

/* Connects with a libpq conninfo string (for svcctl and tests). */
apr_status_t svc_db_connect(svc_db_t **pdb, const char *conninfo,
                            apr_pool_t *p, const char **perr);

/*
 * Whether a database can be reached with conninfo, and if not why, in
 * libpq's words (svc_dbprobe.c): connects on a connection of its own (5
 * seconds at most unless the conninfo sets connect_timeout) and closes it
 * again. APR_SUCCESS, or SVC_EDBDOWN with *preason as svc_db_reason makes
 * it.
 */
apr_status_t svc_db_probe(const char *conninfo, apr_pool_t *p, const char **preason);

/*
 * libpq's message `msg` about a connection made with conninfo, fit for a
 * log line: on one line, at most 512 bytes, with the conninfo's password
 * (and sslpassword) wherever they appear, any piece of a conninfo that does
 * not parse but keyword names, and anything shaped like one of our
 * secrets, replaced by [REDACTED].
 */
const char *svc_db_reason(apr_pool_t *p, const char *conninfo, const char *msg);

/* The statement timeout of a connection of our own (svc_db_connect sets
 * none); call it before the first statement. */
void svc_db_set_statement_timeout(svc_db_t *db, int ms);

PGconn *svc_db_conn(svc_db_t *db);

/*
 * From now on, a statement that may write (neither SVC_STMT_READ nor
 * SVC_STMT_ALONE) runs only inside a transaction (svc_db_tx); outside one
 * it is refused with APR_EGENERAL, and svc_db_errmsg names it. The kernel
 * marks every connection it lends a request.
 */
void svc_db_guard_writes(svc_db_t *db);

/*
 * Runs a statement with text parameters (NULL entries are SQL NULL).
 * Returns APR_SUCCESS, SVC_ECONFLICT (unique violation), SVC_EINTEGRITY
 * (foreign key or check), SVC_EDBDOWN (connection lost), or SVC_EDB.
 */
apr_status_t svc_db_exec(svc_db_t *db, const svc_stmt_t *st, apr_pool_t *p,
                         svc_dbres_t **pres, const char *const *params);

/* Variadic form: exactly st->nparams `const char *` arguments follow. */
apr_status_t svc_db_execv(svc_db_t *db, const svc_stmt_t *st, apr_pool_t *p,
                          svc_dbres_t **pres, ...);

/*
 * The variadic form for a statement that answers one value: the first
 * column of its one row (often a JSON text the statement built), and its
 * length when plen is not NULL. SVC_ENOTFOUND when it returned no row (or
 * more than one); otherwise as svc_db_exec.
 */
apr_status_t svc_db_value(svc_db_t *db, const svc_stmt_t *st, apr_pool_t *p,
                          const char **pvalue, apr_size_t *plen, ...);

/*
 * Speculation with a check. A deferred statement is one whose result only
 * confirms what the caller already assumed (that a cached token is still
 * good). It is not sent on its own: the next READ statement outside a
 * transaction carries it in the same round trip (libpq pipeline mode), and
 * `check` is called on its result before the read's result is returned;
 * when check fails, the read's result is discarded and check's status is
 * returned instead. Any other statement, BEGIN, or svc_db_flush runs it on
 * its own first, so nothing is ever written on an assumption. Parameters
 * are copied into p, which must outlive the check.
 */
typedef apr_status_t (*svc_db_check_fn)(void *baton, const svc_dbres_t *res);

apr_status_t svc_db_defer(svc_db_t *db, const svc_stmt_t *st, const char *const *params,
                          svc_db_check_fn check, void *baton, apr_pool_t *p);

/*
 * Runs a deferred statement and its check now, if there is one. If the
 * statement itself fails (the database is down), it stays pending: no later
 * statement runs before its check has passed.
 */
apr_status_t svc_db_flush(svc_db_t *db);

/* True while a deferred statement waits. */
int svc_db_pending(svc_db_t *db);

/* Runs plain SQL without parameters (LISTEN, migrations); never BEGIN,
 * COMMIT or ROLLBACK: transactions are svc_db_tx's. */
apr_status_t svc_db_simple(svc_db_t *db, const char *sql, apr_pool_t *p);

/*
 * The one transaction: BEGIN, then `fn` makes its change (and, in a request,
 * builds its answer: svc_write in kernel/svc_write.h is this with the
 * answer), then COMMIT, in that order; whatever fn returns but APR_SUCCESS,
 * and a COMMIT that fails, roll everything back, and that status is
 * returned. It runs in "rollback mode" (trap 7): the only way to COMMIT is
 * fn returning APR_SUCCESS; an error, an early return in fn or a
 * connection given back halfway all roll back (svc_db_release).
 *
 * fn runs statements on db with svc_db_exec and allocates from p; it never
 * ends the transaction itself and never begins another (svc_db_tx inside
 * fn fails: one transaction at a time). A status fn returns to say "nothing
 * to do" (SVC_ENOTFOUND, say) rolls back an empty transaction and reaches
 * the caller as it was.
 *
 * Request handlers write through svc_write; svc_db_tx itself is for what
 * answers no request: svcctl, migrations and the run supervisor.
 * tools/check-layers.pl fails the build on any other caller, and on any
 * other code that sends BEGIN, COMMIT or ROLLBACK.
 */
typedef apr_status_t (*svc_db_tx_fn)(svc_db_t *db, apr_pool_t *p, void *baton);

apr_status_t svc_db_tx(svc_db_t *db, apr_pool_t *p, svc_db_tx_fn fn, void *baton);

/*
 * The steps svc_db_tx is made of, for its own use and for the unit tests
 * of this file (t/unit/test_base_db.c) only: tools/check-layers.pl fails the
 * build on any other caller. A failed COMMIT has rolled back already.
 */
apr_status_t svc_db_begin(svc_db_t *db);
apr_status_t svc_db_commit(svc_db_t *db);
void svc_db_rollback(svc_db_t *db);

int svc_db_in_tx(svc_db_t *db);

/*
 * Before a connection goes back to the pool: rolls back an open
 * transaction, so an early error return can never commit half a write.
 */
void svc_db_release(svc_db_t *db);

int svc_dbres_rows(const svc_dbres_t *res);
/* Column value as text, or NULL for SQL NULL. */
const char *svc_dbres_str(const svc_dbres_t *res, int row, int col);
int svc_dbres_isnull(const svc_dbres_t *res, int row, int col);
/* The value's length in bytes (0 for NULL): what a bytea or text column of
 * a SVC_STMT_BINARY result holds, raw, at svc_dbres_str. */
apr_size_t svc_dbres_len(const svc_dbres_t *res, int row, int col);
/* int64 with a full-string check; APR_EINVAL on NULL or garbage. */
apr_status_t svc_dbres_int64(const svc_dbres_t *res, int row, int col, apr_int64_t *pv);
/* PostgreSQL boolean: 1, 0, or -1 for NULL. */
int svc_dbres_bool(const svc_dbres_t *res, int row, int col);
/*
 * A timestamptz column of a SVC_STMT_BINARY result as microseconds since
 * 1970 (apr_time_t). APR_EINVAL on NULL, on +/-infinity and on a column of
 * another type or format.
 */
apr_status_t svc_dbres_time(const svc_dbres_t *res, int row, int col, apr_time_t *pt);

/* Column types the getters and the row writer (svc_page.h) know. */
#define SVC_OID_BOOL        16
#define SVC_OID_INT8        20
#define SVC_OID_INT2        21
#define SVC_OID_INT4        23
#define SVC_OID_TEXT        25
#define SVC_OID_VARCHAR     1043
#define SVC_OID_TIMESTAMPTZ 1184
/* The column's type OID and whether it came in binary, or 0 when out of range. */
unsigned svc_dbres_type(const svc_dbres_t *res, int col, int *pbinary);
int svc_dbres_cols(const svc_dbres_t *res);
/* Rows affected by an INSERT/UPDATE/DELETE. */
long svc_dbres_affected(const svc_dbres_t *res);

/* The last error text of the connection, for logs (never carries values). */
const char *svc_db_errmsg(svc_db_t *db);
/* The SQLSTATE of the last failed statement, or "". */
const char *svc_db_sqlstate(svc_db_t *db);
/* The constraint named by the last failed statement, or "". */
const char *svc_db_constraint(svc_db_t *db);

/*
 * Notifications, on a connection of its own (svc_db_connect; never a pooled
 * one): after svc_db_simple(db, "LISTEN channel", p), wait for the socket
 * to be readable, then svc_db_notifications calls fn once per notification
 * that arrived, in the order PostgreSQL sent them (commit order). It
 * returns SVC_EDBDOWN when the connection is lost; listen anew on a new
 * connection then, and catch up from the table, since notifications sent
 * meanwhile are gone.
 */
typedef void (*svc_db_notify_fn)(void *baton, const char *channel, const char *payload);

/* The connection's socket, for poll(); -1 when there is none. */
int svc_db_socket(svc_db_t *db);

apr_status_t svc_db_notifications(svc_db_t *db, svc_db_notify_fn fn, void *baton);

/* Counters for tests and metrics. */
typedef struct {
    unsigned long prepares;     /* statements prepared on this connection */
    unsigned long reconnects;   /* new backends noticed */
    unsigned long retries;      /* statements run again after a lost connection */
    unsigned long pipelined;    /* deferred statements sent along with a read */
} svc_db_stats_t;
void svc_db_stats(svc_db_t *db, svc_db_stats_t *pstats);

#endif /* SVC_DB_H */
