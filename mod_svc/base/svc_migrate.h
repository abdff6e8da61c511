/*
 * svc_migrate.h: the numbered, forward-only migrations of sql/.
 *
 * tools/embed-sql.pl compiles sql/NNN_name.sql into svc_migrations[] at
 * build time, so svcctl carries the schema and the module knows, from the
 * same files, which version it needs.
 */
#ifndef SVC_MIGRATE_H
#define SVC_MIGRATE_H

#include "svc_types.h"
#include "svc_db.h"

typedef struct {
    int version;
    const char *name;
    const char *sql;
} svc_migration_t;

extern const svc_migration_t svc_migrations[];
extern const int svc_schema_version;

/* Applies what is missing, each migration in its own transaction, under an
 * advisory lock so two migrators cannot interleave. *papplied counts them. */
apr_status_t svc_migrate_run(svc_db_t *db, apr_pool_t *p, int *papplied, const char **perr);

/* The version the database is at (0 for an empty database). */
apr_status_t svc_migrate_current(svc_db_t *db, apr_pool_t *p, int *pversion);

#endif /* SVC_MIGRATE_H */
