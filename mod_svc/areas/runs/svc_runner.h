/*
 * svc_runner.h: carrying out one claimed run, on a thread of its own with
 * its own database connection (svc_runner.c):
 *
 *   the org's provider (none: failed, no_provider)
 *   -> a fresh workspace -> for a run on a repository, the init step: a
 *   clone token (svc_vcs.h; installation_suspended, clone_failed) and git
 *   clone in a sandbox with a network, the token in its environment only
 *   -> the factory in its sandbox, fed the task on
 *   stdin; its protocol lines on stdout (log, model, result, error) and its
 *   stderr go to the log, its model requests to the provider
 *   -> on a result: a second sandbox makes the git bundle of the run's
 *   branch -> succeeded, with the result and the bundle; else failed with
 *   the factory's error code, timeout after the run's SvcRunTimeout, or
 *   cancelled -> the workspace is removed.
 *
 * The supervisor (main thread) talks to a run through its slot: it raises
 * a flag and wakes the thread, which acts on it within a quarter second.
 */
#ifndef SVC_RUNNER_H
#define SVC_RUNNER_H

#include "svc_run_store.h"

#include <pthread.h>

typedef struct {
    /* Set by the supervisor before the thread starts; read-only after. */
    const svc_supervisor_conf_t *sc;
    const char *node;
    const svc_run_job_t *job;
    apr_pool_t *pool;           /* the run's; the thread's alone until it is done */
    int ended;                  /* the thread writes a byte to it when it settles, and ends */
    /* Raised by the supervisor (svc_run_slot_raise), read by the thread. */
    volatile apr_uint32_t cancel;   /* the run's cancellation was asked for */
    volatile apr_uint32_t lost;     /* another node has the run: stop, write nothing */
    volatile apr_uint32_t stop;     /* the supervisor stops: the run goes back to the queue */
    /* Raised by the thread: its outcome is written (the lease is gone with
     * it; what remains is cleaning up); it has ended. */
    volatile apr_uint32_t settled;
    volatile apr_uint32_t done;
    int wake[2];                    /* a byte on wake[1] wakes the thread */
    pthread_t thread;
} svc_run_slot_t;

/* Starts the run's thread. The slot must stay where it is until joined. */
apr_status_t svc_run_slot_start(svc_run_slot_t *slot);

/* Raises one of the slot's flags and wakes the thread. */
void svc_run_slot_raise(svc_run_slot_t *slot, volatile apr_uint32_t *flag);

/* Waits for the thread (after done is raised, at once) and closes the pipe. */
void svc_run_slot_join(svc_run_slot_t *slot);

/* The task line the factory gets (JSON, no newline), for the unit tests
 * too: single mode, or agent mode (tools) with the run's limits. */
const char *svc_runner_task(apr_pool_t *p, const svc_supervisor_conf_t *sc,
                            const svc_run_job_t *job, int agent);

/* The largest model answer a run accepts: what the factory accepts as a
 * reply line with the task's limits (its formula), so that the limits the
 * factory is told can be reached. */
apr_size_t svc_runner_reply_cap(const svc_supervisor_conf_t *sc);

#endif /* SVC_RUNNER_H */
