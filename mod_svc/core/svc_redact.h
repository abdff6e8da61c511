/*
 * svc_redact.h: keeping secrets out of logs.
 *
 * Every log line that carries text a client or provider supplied goes
 * through svc_redact first; it removes anything shaped like one of our
 * secrets (svc_<kind>_<random>), bearer credentials, JWTs and session
 * cookies.
 */
#ifndef SVC_REDACT_H
#define SVC_REDACT_H

#include "svc_types.h"

/* A copy of s with every secret-shaped run replaced by "[REDACTED]". */
const char *svc_redact(apr_pool_t *p, const char *s);

/* A copy of s cut to max bytes with every byte outside printable ASCII
 * replaced by '?': for client-supplied strings stored or logged verbatim. */
const char *svc_printable(apr_pool_t *p, const char *s, apr_size_t max);

#endif /* SVC_REDACT_H */
