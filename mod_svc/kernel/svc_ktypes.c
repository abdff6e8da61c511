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

/* names[v], names[0] ("none") when v is out of range: each enum starts at 0, none. */
static const char *name_of(const char *const *names, int last, int v)
{
    return v >= 0 && v <= last ? names[v] : names[0];
}

/* The value s names among names[1..last], 0 (none) when it names none. */
static int parse_of(const char *const *names, int last, const char *s)
{
    int i;

    for (i = 1; s && i <= last; i++) {
        if (strcmp(s, names[i]) == 0) {
            return i;
        }
    }
    return 0;
}

const char *svc_scope_name(svc_scope_e scope)
{
    return name_of(scope_names, SVC_SCOPE_ADMIN, scope);
}

svc_scope_e svc_scope_parse(const char *s)
{
    return (svc_scope_e)parse_of(scope_names, SVC_SCOPE_ADMIN, s);
}

const char *svc_role_name(svc_role_e role)
{
    return name_of(role_names, SVC_ROLE_OWNER, role);
}

svc_role_e svc_role_parse(const char *s)
{
    return (svc_role_e)parse_of(role_names, SVC_ROLE_OWNER, s);
}

const char *svc_prole_name(svc_prole_e prole)
{
    return name_of(prole_names, SVC_PROLE_MAINTAINER, prole);
}

svc_prole_e svc_prole_parse(const char *s)
{
    return (svc_prole_e)parse_of(prole_names, SVC_PROLE_MAINTAINER, s);
}
