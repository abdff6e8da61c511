/*
 * svc_types.h: the status codes and the few types every file shares.
 *
 * Like all of base/, it knows nothing of the service's domain (no users,
 * orgs or requests) and nothing of httpd: the Makefile compiles base/
 * without the httpd include path and without the kernel's or any area's
 * headers, so a slip breaks the build.
 */
#ifndef SVC_TYPES_H
#define SVC_TYPES_H

#include <apr.h>
#include <apr_errno.h>
#include <apr_pools.h>
#include <apr_tables.h>
#include <apr_strings.h>
#include <jansson.h>

/* The version comes from the Makefile (VERSION, passed as -DSVC_VERSION); a
 * build that lost the flag says so rather than claiming a release. */
#ifndef SVC_VERSION
#define SVC_VERSION "0.0.0+unversioned"
#endif

/* Our own status codes live in APR's user error space. */
#define SVC_ERRSPACE (APR_OS_START_USERERR + 5000)
/* A problem document has been attached to the context: answer with it. */
#define SVC_EPROBLEM   (SVC_ERRSPACE + 1)
/* The database cannot be reached right now (answer 503, retry later). */
#define SVC_EDBDOWN    (SVC_ERRSPACE + 2)
/* The database answered with an error we did not expect (answer 500). */
#define SVC_EDB        (SVC_ERRSPACE + 3)
/* A unique constraint refused the write. */
#define SVC_ECONFLICT  (SVC_ERRSPACE + 4)
/* The row does not exist (or is not visible to the caller). */
#define SVC_ENOTFOUND  (SVC_ERRSPACE + 5)
/* The schema is older than this build needs. */
#define SVC_ESCHEMA    (SVC_ERRSPACE + 6)
/* A foreign key or check constraint refused the write. */
#define SVC_EINTEGRITY (SVC_ERRSPACE + 7)
/* A speculation turned out wrong: run the request again from authentication. */
#define SVC_ERESTART   (SVC_ERRSPACE + 8)

typedef struct svc_db_t svc_db_t;
typedef struct svc_field_t svc_field_t;

/* Ties a jansson value's lifetime to a pool: decref'd when the pool goes. */
json_t *svc_json_pool(apr_pool_t *p, json_t *v);

#endif /* SVC_TYPES_H */
