/*
 * svc_shared.c: the segment the processes of one httpd share (svc_shared.h).
 */
#include "svc_shared.h"

#include <apr_shm.h>
#include <apr_strings.h>
#include <apr_time.h>
#include <string.h>

/* The header's size, rounded up so that the 64-bit words after it are
 * aligned for apr_atomic_add64. */
#define HEADER_SIZE ((sizeof(svc_shared_t) + 7) & ~(apr_size_t)7)

svc_shared_t *svc_shared_create(apr_pool_t *pconf, apr_size_t extra, apr_status_t *prv)
{
    apr_shm_t *shm;
    svc_shared_t *sh;

    *prv = apr_shm_create(&shm, HEADER_SIZE + extra, NULL, pconf);
    if (*prv != APR_SUCCESS) {
        return NULL;
    }
    sh = apr_shm_baseaddr_get(shm);
    memset(sh, 0, HEADER_SIZE + extra);
    return sh;
}

void *svc_shared_extra(svc_shared_t *sh)
{
    return (char *)sh + HEADER_SIZE;
}

void svc_shared_beat(svc_shared_t *sh)
{
    if (sh) {
        apr_atomic_set32(&sh->sup_beat, (apr_uint32_t)apr_time_sec(apr_time_now()));
    }
}

const char *svc_shared_supervisor_problem(const svc_shared_t *sh, apr_pool_t *p)
{
    apr_uint32_t now = (apr_uint32_t)apr_time_sec(apr_time_now());
    apr_uint32_t beat, lease;

    if (!sh) {
        return "the shared memory segment could not be made at start; the supervisor's "
               "state is unknown";
    }
    if (!apr_atomic_read32((volatile apr_uint32_t *)&sh->sup_expected)) {
        return NULL;
    }
    beat = apr_atomic_read32((volatile apr_uint32_t *)&sh->sup_beat);
    lease = apr_atomic_read32((volatile apr_uint32_t *)&sh->sup_lease);
    if (!beat) {
        return "the run supervisor has not started (yet)";
    }
    if (now > beat && now - beat > lease) {
        return apr_psprintf(p, "the run supervisor last went round its loop %u s ago, "
                            "longer than its lease (%u s)", now - beat, lease);
    }
    return NULL;
}
