/*
 * svc_migrate.c: applying migrations and reading the schema version.
 */
#include "svc_migrate.h"

#include <string.h>

/*
 * Which migrations are applied, by number: branches developed side by side
 * take numbers in the order they were started and may land out of order,
 * so a database can hold 012 without 011 (until 011 is merged and
 * migrated). Nothing is skipped for a higher number being present.
 */
static const svc_stmt_t st_schema_applied = {
    "svc_migrate_applied",
    "SELECT version FROM schema_migrations ORDER BY version",
    0, SVC_STMT_READ
};

static const svc_stmt_t st_schema_record = {
    "svc_migrate_record",
    "INSERT INTO schema_migrations (version, name) VALUES ($1::int, $2)",
    2, 0
};

/* Whether migration v is among the rows (NULL: none applied). */
static int is_applied(const svc_dbres_t *res, int v)
{
    apr_int64_t got;
    int i;

    for (i = 0; res && i < svc_dbres_rows(res); i++) {
        if (svc_dbres_int64(res, i, 0, &got) == APR_SUCCESS && got == v) {
            return 1;
        }
    }
    return 0;
}

/* The applied versions; *pres NULL when there is no schema_migrations table. */
static apr_status_t applied_versions(svc_db_t *db, apr_pool_t *p, svc_dbres_t **pres)
{
    apr_status_t rv = svc_db_exec(db, &st_schema_applied, p, pres, NULL);

    if (rv == SVC_EDB && strcmp(svc_db_sqlstate(db), "42P01") == 0) {
        /* No schema_migrations table: nothing has been applied. */
        *pres = NULL;
        return APR_SUCCESS;
    }
    return rv;
}

apr_status_t svc_migrate_current(svc_db_t *db, apr_pool_t *p, int *pversion)
{
    const svc_migration_t *m;
    svc_dbres_t *res;
    apr_int64_t v;
    apr_status_t rv = applied_versions(db, p, &res);
    int n;

    *pversion = 0;
    if (rv != APR_SUCCESS || !res) {
        return rv;
    }
    /* Up to the first of ours that is missing: the schema is behind there. */
    for (m = svc_migrations; m->sql; m++) {
        if (!is_applied(res, m->version)) {
            return APR_SUCCESS;
        }
        *pversion = m->version;
    }
    /* All of ours are in: the highest applied, which a newer build may have
     * taken further. */
    n = svc_dbres_rows(res);
    if (n > 0) {
        if (svc_dbres_int64(res, n - 1, 0, &v) != APR_SUCCESS) {
            return SVC_EDB;
        }
        if ((int)v > *pversion) {
            *pversion = (int)v;
        }
    }
    return APR_SUCCESS;
}

/* One migration and its record, in one transaction. */
static apr_status_t apply_one(svc_db_t *db, apr_pool_t *p, void *baton)
{
    const svc_migration_t *m = baton;
    apr_status_t rv = svc_db_simple(db, m->sql, p);

    if (rv == APR_SUCCESS) {
        rv = svc_db_execv(db, &st_schema_record, p, NULL, apr_itoa(p, m->version), m->name);
    }
    return rv;
}

apr_status_t svc_migrate_run(svc_db_t *db, apr_pool_t *p, int *papplied, const char **perr)
{
    const svc_migration_t *m;
    apr_status_t rv;
    svc_dbres_t *done = NULL;

    *papplied = 0;
    *perr = NULL;
    rv = svc_db_simple(db, "SELECT pg_advisory_lock(hashtext('svc_migrate'))", p);
    if (rv != APR_SUCCESS) {
        *perr = apr_pstrdup(p, svc_db_errmsg(db));
        return rv;
    }
    rv = svc_db_simple(db,
                       "CREATE TABLE IF NOT EXISTS schema_migrations ("
                       " version integer PRIMARY KEY,"
                       " name text NOT NULL,"
                       " applied_at timestamptz NOT NULL DEFAULT now())", p);
    if (rv == APR_SUCCESS) {
        rv = applied_versions(db, p, &done);
    }
    for (m = svc_migrations; rv == APR_SUCCESS && m->sql; m++) {
        if (is_applied(done, m->version)) {
            continue;
        }
        rv = svc_db_tx(db, p, apply_one, (void *)m);
        if (rv != APR_SUCCESS) {
            *perr = apr_psprintf(p, "migration %03d_%s failed: %s", m->version, m->name,
                                 svc_db_errmsg(db));
            break;
        }
        (*papplied)++;
    }
    if (rv != APR_SUCCESS && !*perr) {
        *perr = apr_pstrdup(p, svc_db_errmsg(db));
    }
    svc_db_simple(db, "SELECT pg_advisory_unlock(hashtext('svc_migrate'))", p);
    return rv;
}
