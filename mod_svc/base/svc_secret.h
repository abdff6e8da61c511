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

#endif /* SVC_SECRET_H */
