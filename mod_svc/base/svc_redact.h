/*
 * svc_redact.h: keeping secrets out of logs.
 *
 * Every log line that carries text a client or provider supplied goes
 * through svc_redact first; it removes anything shaped like one of our
 * secrets (svc_<kind>_<random>), bearer credentials, JWTs and session
 * cookies, other services' tokens and keys (GitHub's gh*_ and github_pat_,
 * sk-... API keys, AWS access key ids, the payment provider's secret keys
 * and webhook secrets: sk_live_..., sk_test_..., rk_..., whsec_...), the
 * values of secret settings (password, token, secret, api_key, ... with '='
 * or ':', as in a query, YAML or JSON) and the passwords of URLs
 * (scheme://user:[REDACTED]@host).
 */
#ifndef SVC_REDACT_H
#define SVC_REDACT_H

#include "svc_types.h"

/* A copy of s with every secret-shaped run replaced by "[REDACTED]". */
const char *svc_redact(apr_pool_t *p, const char *s);

/* A copy of s cut to max bytes with every byte outside printable ASCII
 * replaced by '?': for client-supplied strings stored or logged verbatim. */
const char *svc_printable(apr_pool_t *p, const char *s, apr_size_t max);

/* Called with each value svc_redact_query hides (as written, not decoded). */
typedef void (*svc_redact_each_fn)(void *baton, const char *value, apr_size_t len);

/*
 * A query string with every value hidden, names kept: "code=abc&state=d"
 * becomes "code=[REDACTED]&state=[REDACTED]", a bare "abc" becomes
 * "[REDACTED]", empty parts stay empty. `each` (may be NULL) sees every
 * value hidden, so a caller can hunt for it elsewhere too. For access logs
 * and error texts: the one place a query is masked.
 */
const char *svc_redact_query(apr_pool_t *p, const char *q, svc_redact_each_fn each,
                             void *baton);

#endif /* SVC_REDACT_H */
