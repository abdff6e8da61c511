/*
 * svc_shared.h: what the processes of one httpd share in memory: the run
 * supervisor's heartbeat, for /internal/ready, and the metrics' words
 * (svc_metrics.h), which follow this header in the same segment.
 *
 * httpd's parent makes the segment at start (anonymous apr_shm, before it
 * forks anything), so every child and the supervisor map the same bytes at
 * the same address. Fields are words updated with apr_atomic: no lock, and
 * nothing held across I/O. A graceful restart makes a new segment; the
 * children of the old generation keep the old one until they exit.
 */
#ifndef SVC_SHARED_H
#define SVC_SHARED_H

#include "svc_ktypes.h"

#include <apr_atomic.h>

struct svc_shared_t {
    /* 1 when this node runs a run supervisor (SvcRunSupervisor On). */
    volatile apr_uint32_t sup_expected;
    /* The supervisor's lease (SvcRunLease), seconds: a supervisor that has
     * not gone round its loop in that long holds no lease any more. */
    volatile apr_uint32_t sup_lease;
    /* When the supervisor last went round its loop (seconds since the
     * epoch); 0 before it first did. */
    volatile apr_uint32_t sup_beat;
};
typedef struct svc_shared_t svc_shared_t;

/* Makes the segment, zeroed, owned by pconf (gone with it), with `extra`
 * bytes after the header (svc_shared_extra). NULL and *prv set when the
 * system refuses it: readiness then says so. */
svc_shared_t *svc_shared_create(apr_pool_t *pconf, apr_size_t extra, apr_status_t *prv);

/* The extra bytes, 8-aligned. */
void *svc_shared_extra(svc_shared_t *sh);

/* The supervisor went round its loop. NULL-safe. */
void svc_shared_beat(svc_shared_t *sh);

/*
 * What readiness makes of the supervisor: NULL when it is fine (or this
 * node runs none), else why not, in words for the operator.
 */
const char *svc_shared_supervisor_problem(const svc_shared_t *sh, apr_pool_t *p);

#endif /* SVC_SHARED_H */
