/*
 * svc_secret.h: reading a secret by reference.
 */
#ifndef SVC_SECRET_H
#define SVC_SECRET_H

#include "svc_types.h"

/*
 * Reads a secret by reference ("file:/path", "env:NAME" or "exec:/program")
 * into pool memory (NUL-terminated, trailing newline stripped). Files
 * readable by group or others are refused. Shared by every directive that
 * takes a secret; on failure *perr says why, for the operator.
 */
apr_status_t svc_secret_read(const char **pvalue, apr_size_t *plen, const char *ref,
                             apr_pool_t *p, const char **perr);

/* True when s is a reference (env:, file: or exec:) rather than a literal. */
int svc_secret_is_ref(const char *s);

/*
 * The value of a setting that is either written out or given by reference,
 * for directives of optional features. *pv is NULL when the setting is
 * absent: no directive (ref NULL), or an env: reference whose variable is
 * unset or empty, which is how an operator leaves a feature off; *pabsent
 * then says so in words naming `what`. A reference that is present but
 * fails (an unreadable file, a failing program) is an error: *perr says
 * why, naming `what`.
 */
apr_status_t svc_setting_resolve(const char **pv, const char *ref, const char *what,
                                 apr_pool_t *p, const char **pabsent, const char **perr);

#endif /* SVC_SECRET_H */
