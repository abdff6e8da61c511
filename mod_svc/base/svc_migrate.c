/*
 * svc_migrate.c: applying migrations and reading the schema version.
 */
#include "svc_migrate.h"

#include <string.h>

static const svc_stmt_t st_schema_version = {
    "svc_migrate_version",
    "SELECT coalesce(max(version), 0) FROM schema_migrations",
    0, SVC_STMT_READ
};

static const svc_stmt_t st_schema_record = {
    "svc_migrate_record",
    "INSERT INTO schema_migrations (version, name) VALUES ($1::int, $2)",
    2, 0
};

apr_status_t svc_migrate_current(svc_db_t *db, apr_pool_t *p, int *pversion)
{
    svc_dbres_t *res;
    apr_int64_t v;
    apr_status_t rv;

    rv = svc_db_exec(db, &st_schema_version, p, &res, NULL);
    if (rv == SVC_EDB && strcmp(svc_db_sqlstate(db), "42P01") == 0) {
        /* No schema_migrations table: nothing has been applied. */
        *pversion = 0;
        return APR_SUCCESS;
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_int64(res, 0, 0, &v) != APR_SUCCESS) {
        return SVC_EDB;
    }
    *pversion = (int)v;
    return APR_SUCCESS;
}

apr_status_t svc_migrate_run(svc_db_t *db, apr_pool_t *p, int *papplied, const char **perr)
{
    const svc_migration_t *m;
    apr_status_t rv;
    int current = 0;

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
        rv = svc_migrate_current(db, p, &current);
    }
    for (m = svc_migrations; rv == APR_SUCCESS && m->sql; m++) {
        if (m->version <= current) {
            continue;
        }
        rv = svc_db_begin(db, p);
        if (rv == APR_SUCCESS) {
            rv = svc_db_simple(db, m->sql, p);
        }
        if (rv == APR_SUCCESS) {
            rv = svc_db_execv(db, &st_schema_record, p, NULL,
                              apr_itoa(p, m->version), m->name);
        }
        if (rv == APR_SUCCESS) {
            rv = svc_db_commit(db, p);
        }
        if (rv != APR_SUCCESS) {
            *perr = apr_psprintf(p, "migration %03d_%s failed: %s", m->version, m->name,
                                 svc_db_errmsg(db));
            svc_db_rollback(db, p);
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
