/*
 * svc_ktypes.h: the kernel's vocabulary: scopes, roles, how callers
 * authenticate, and the names of the request kernel's types.
 */
#ifndef SVC_KTYPES_H
#define SVC_KTYPES_H

#include "svc_types.h"

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

/*
 * How a route's caller authenticates. A route row that says nothing
 * (svc_route.h) takes a signed-in user, so forgetting the field fails
 * closed: a public route says SVC_AUTH_NONE.
 */
typedef enum {
    SVC_AUTH_USER = 0,     /* session cookie or PAT */
    SVC_AUTH_NONE,         /* public */
    SVC_AUTH_INTERNAL,     /* address allow-list, /internal/ only */
    SVC_AUTH_SHARE,        /* share token, /api/share/ only */
    SVC_AUTH_WEBHOOK,      /* HMAC over the raw body */
    SVC_AUTH_AGENT         /* deploy agent enrollment key */
} svc_auth_e;

/* How the user principal was established. */
typedef enum {
    SVC_VIA_NONE = 0,
    SVC_VIA_SESSION,
    SVC_VIA_PAT,
    SVC_VIA_AGENT           /* a deploy agent, by its target's key: no user at all */
} svc_via_e;

typedef struct svc_config_t svc_config_t;
typedef struct svc_ctx_t svc_ctx_t;
typedef struct svc_route_t svc_route_t;
typedef struct svc_area_t svc_area_t;
typedef struct svc_verifiers_t svc_verifiers_t;
typedef struct svc_router_t svc_router_t;
typedef struct svc_problem_t svc_problem_t;
typedef struct svc_principal_t svc_principal_t;
typedef struct svc_orgref_t svc_orgref_t;
typedef struct svc_projref_t svc_projref_t;

/* The names of scopes, org roles and project roles, NULL ended, for the
 * enums of the OpenAPI document (svc_schema.h). */
extern const char *const svc_scope_values[], *const svc_role_values[], *const svc_prole_values[];

const char *svc_scope_name(svc_scope_e scope);
svc_scope_e svc_scope_parse(const char *s);
const char *svc_role_name(svc_role_e role);
svc_role_e svc_role_parse(const char *s);
const char *svc_prole_name(svc_prole_e prole);
svc_prole_e svc_prole_parse(const char *s);

#endif /* SVC_KTYPES_H */
