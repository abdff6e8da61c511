/*
 * svc_types.h: the vocabulary shared by every part of the mod_svc core.
 *
 * The core is pure C on APR, jansson, libsodium, OpenSSL, libcurl and libpq.
 * It never includes an httpd header; the Makefile compiles it without the
 * httpd include path so that a slip breaks the build.
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

/* What a personal access token may do. A session counts as admin. */
typedef enum {
    SVC_SCOPE_NONE = 0,
    SVC_SCOPE_READ = 1,
    SVC_SCOPE_WRITE = 2,
    SVC_SCOPE_ADMIN = 3
} svc_scope_e;

/* Organization roles, ordered so that a comparison says "at least". */
typedef enum {
    SVC_ROLE_NONE = 0,
    SVC_ROLE_VIEWER = 1,
    SVC_ROLE_MEMBER = 2,
    SVC_ROLE_ADMIN = 3,
    SVC_ROLE_OWNER = 4
} svc_role_e;

/*
 * Project roles, ordered like org roles. The effective role in a project
 * combines both (svc_projects.h): org owners and admins maintain every
 * project, other members hold their team role or else view.
 */
typedef enum {
    SVC_PROLE_NONE = 0,
    SVC_PROLE_VIEWER = 1,
    SVC_PROLE_DEVELOPER = 2,
    SVC_PROLE_MAINTAINER = 3
} svc_prole_e;

/* How a route's caller authenticates. */
typedef enum {
    SVC_AUTH_NONE = 0,     /* public */
    SVC_AUTH_USER,         /* session cookie or PAT */
    SVC_AUTH_INTERNAL,     /* address allow-list, /internal/ only */
    SVC_AUTH_SHARE,        /* share token, /api/share/ only */
    SVC_AUTH_WEBHOOK,      /* HMAC over the raw body */
    SVC_AUTH_AGENT         /* deploy agent enrollment key */
} svc_auth_e;

/* How the user principal was established. */
typedef enum {
    SVC_VIA_NONE = 0,
    SVC_VIA_SESSION,
    SVC_VIA_PAT
} svc_via_e;

typedef struct svc_config_t svc_config_t;
typedef struct svc_ctx_t svc_ctx_t;
typedef struct svc_route_t svc_route_t;
typedef struct svc_router_t svc_router_t;
typedef struct svc_db_t svc_db_t;
typedef struct svc_field_t svc_field_t;
typedef struct svc_problem_t svc_problem_t;
typedef struct svc_principal_t svc_principal_t;
typedef struct svc_orgref_t svc_orgref_t;
typedef struct svc_projref_t svc_projref_t;

const char *svc_scope_name(svc_scope_e scope);
svc_scope_e svc_scope_parse(const char *s);
const char *svc_role_name(svc_role_e role);
svc_role_e svc_role_parse(const char *s);
const char *svc_prole_name(svc_prole_e prole);
svc_prole_e svc_prole_parse(const char *s);

/* Ties a jansson value's lifetime to a pool: decref'd when the pool goes. */
json_t *svc_json_pool(apr_pool_t *p, json_t *v);

#endif /* SVC_TYPES_H */
