/*
 * svc_ktypes.c: names of scopes and roles, as the API and the database
 * spell them.
 */
#include "svc_ktypes.h"

#include <string.h>

static const char *const scope_names[] = { "none", "read", "write", "admin" };
static const char *const role_names[] = { "none", "viewer", "member", "admin", "owner" };
static const char *const prole_names[] = { "none", "viewer", "developer", "maintainer" };

/* The same, as the values an answer may hold (svc_schema.h). */
const char *const svc_scope_values[] = { "read", "write", "admin", NULL };
const char *const svc_role_values[] = { "viewer", "member", "admin", "owner", NULL };
const char *const svc_prole_values[] = { "viewer", "developer", "maintainer", NULL };

const char *svc_scope_name(svc_scope_e scope)
{
    return (scope >= SVC_SCOPE_NONE && scope <= SVC_SCOPE_ADMIN) ? scope_names[scope] : "none";
}

svc_scope_e svc_scope_parse(const char *s)
{
    int i;

    for (i = SVC_SCOPE_READ; s && i <= SVC_SCOPE_ADMIN; i++) {
        if (strcmp(s, scope_names[i]) == 0) {
            return (svc_scope_e)i;
        }
    }
    return SVC_SCOPE_NONE;
}

const char *svc_role_name(svc_role_e role)
{
    return (role >= SVC_ROLE_NONE && role <= SVC_ROLE_OWNER) ? role_names[role] : "none";
}

svc_role_e svc_role_parse(const char *s)
{
    int i;

    for (i = SVC_ROLE_VIEWER; s && i <= SVC_ROLE_OWNER; i++) {
        if (strcmp(s, role_names[i]) == 0) {
            return (svc_role_e)i;
        }
    }
    return SVC_ROLE_NONE;
}

const char *svc_prole_name(svc_prole_e prole)
{
    return (prole >= SVC_PROLE_NONE && prole <= SVC_PROLE_MAINTAINER) ? prole_names[prole]
                                                                     : "none";
}

svc_prole_e svc_prole_parse(const char *s)
{
    int i;

    for (i = SVC_PROLE_VIEWER; s && i <= SVC_PROLE_MAINTAINER; i++) {
        if (strcmp(s, prole_names[i]) == 0) {
            return (svc_prole_e)i;
        }
    }
    return SVC_PROLE_NONE;
}
