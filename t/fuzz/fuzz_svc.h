/*
 * fuzz_svc.h: what the service's fuzz targets share (docs/fuzzing.md).
 *
 * Each target makes a pool per input from fuzz_root() and destroys it
 * before returning, so that what one input allocated never looks like a
 * leak of the next. common.c makes every apr_palloc a malloc of its own
 * while a target runs, so AddressSanitizer sees the bounds of pool
 * allocations too (APR's pools otherwise carve them out of 8 KiB blocks,
 * where an overflow lands in a neighbour unnoticed).
 */
#ifndef SVC_FUZZ_SVC_H
#define SVC_FUZZ_SVC_H

#include "fuzz.h"
#include "svc_kernel.h"

/* APR, libsodium, the root pool and the configuration, once per process. */
void fuzz_init(void);

/* The pool inputs' pools are made from. */
apr_pool_t *fuzz_root(void);

/*
 * The configuration the targets share: the defaults, a fixed key for each
 * purpose (so seeds can carry valid cursors and tokens), and what the
 * area registry puts in at start (the areas, the verifiers).
 */
svc_config_t *fuzz_conf(void);

/* A request context as the glue makes one, on fuzz_conf(), from p. */
svc_ctx_t *fuzz_ctx(apr_pool_t *p);

/*
 * The answer a request that failed with rv gets, rendered as the glue
 * renders it (svc_ctx_problem, svc_ctx_render_problem): it must be a
 * problem document, a JSON object with the status and a code, whatever
 * bytes the request carried. Returns the status.
 */
int fuzz_check_problem(svc_ctx_t *ctx, apr_status_t rv);

/* The bytes up to the next `sep` as a string of p (see fuzz_part). */
static inline const char *fuzz_cut(fuzz_in_t *in, apr_pool_t *p, int sep, size_t *plen)
{
    const uint8_t *at;
    size_t n;

    if (!fuzz_part(in, sep, &at, &n)) {
        return NULL;
    }
    if (plen) {
        *plen = n;
    }
    return apr_pstrmemdup(p, (const char *)at, n);
}

#endif /* SVC_FUZZ_SVC_H */
