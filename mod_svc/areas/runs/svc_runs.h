/*
 * svc_runs.h: the runs area: factory runs, their supervisor, sandbox, logs and artifacts.
 * May call base/, the kernel, the providers area's public header, the billing area's
 * (svc_billing.h: a budget used up refuses new runs; the supervisors sweep the budgets) and the vcs area's
 * (svc_vcs.h: a project's linked repository, the init step's clone token); the glue
 * calls it here.
 *
 * The API (svc_run_api.c, svc_run_output.c) queues runs and reads them; the
 * supervisor (svc_supervisor.c), a process of its own that the glue starts
 * with httpd (mod_svc_daemon.c), claims them from PostgreSQL and carries
 * each out in a sandbox (svc_sandbox.c). Nothing here needs httpd.
 */
#ifndef SVC_RUNS_H
#define SVC_RUNS_H

#include "svc_kernel.h"

#include <apr_hash.h>
#include <signal.h>

/* The area's routes (svc_runs_routes.c). */
extern const svc_area_t svc_runs_area;

/* Log levels of the supervisor's own messages (syslog's numbers, as httpd's). */
#define SVC_SUP_ERR     3
#define SVC_SUP_WARNING 4
#define SVC_SUP_NOTICE  5
#define SVC_SUP_INFO    6
#define SVC_SUP_DEBUG   7

/* The supervisor's settings (the SvcRun* directives of the main server). */
typedef struct {
    const char *conninfo;       /* libpq conninfo (DBDParams) */
    int statement_timeout_ms;
    const char *work_dir;       /* SvcRunWorkDir: one directory per run below it */
    const char *factory;        /* SvcRunFactory: the factory program */
    /*
     * SvcRunner: NULL for bubblewrap, else the program and its arguments,
     * NULL-ended, with the placeholders {workspace}, {factory} and {run}
     * (svc_sandbox.h).
     */
    const char *const *runner;
    int concurrency;            /* SvcRunConcurrency: runs at once on this node */
    apr_int64_t memory;         /* SvcRunMemory: address space, bytes */
    int processes;              /* SvcRunProcesses */
    apr_int64_t file_size;      /* SvcRunFileSize: largest file, bytes */
    apr_int64_t log_limit;      /* SvcRunLogLimit: bytes of log per run */
    int lease_seconds;          /* SvcRunLease */
    /* For the providers' keys at rest (box_key) and outbound limits. */
    const svc_config_t *conf;
    /* Where the supervisor's own messages go (the glue: httpd's error log). */
    void (*log)(void *baton, int level, const char *msg);
    void *log_baton;
} svc_supervisor_conf_t;

#define SVC_FACTORY_DEFAULT  "/usr/libexec/mod_svc/svc-factory"
#define SVC_WORK_DIR_DEFAULT "/var/lib/mod_svc/runs"

/* Fills in the defaults (before the directives are applied). */
void svc_supervisor_defaults(svc_supervisor_conf_t *sc);

/*
 * The supervisor: claims queued runs and carries them out until *stop is
 * set (by a signal handler), then puts the runs it holds back in the queue
 * and returns. Runs in the calling process, which it expects to have to
 * itself (threads, child processes, signals: SIGCHLD must not be ignored).
 * Returns non-zero only when it cannot start at all (the work directory is
 * unusable): the reason was logged.
 */
int svc_supervisor_run(const svc_supervisor_conf_t *sc, volatile sig_atomic_t *stop,
                       apr_pool_t *p);

/*
 * Runs other areas start (the pipeline's build tasks: svc_run_start.c; the
 * runs API queues its own the same way), in the caller's transaction. The supervisor picks a queued run up once the
 * transaction commits (the NOTIFY it sends is delivered then).
 */
typedef struct {
    const char *org_id;
    const char *project_id;
    const char *instructions;       /* 1 to 65536 characters */
    const char *request_id;         /* the pipeline request, or NULL */
    const char *task_id;            /* the build task, or NULL */
    const char *created_by;         /* the user who started it */
    int timeout_seconds;            /* SvcRunTimeout of the server it is started through */
    /* The agent's limits of that server: SvcRunMaxSteps, SvcRunMaxTokens,
     * SvcRunCommandTimeout (0: the defaults, 50, 2000000 and 120). */
    int max_steps;
    apr_int64_t max_tokens;
    int command_timeout;
    const char *repository;         /* "owner/name" the init step clones, or NULL: the
                                     * project's linked one, else a fresh one */
    const char *repo_installation_id; /* its App installation (decimal), with repository */
} svc_run_spec_t;

/* Queues a run (*pid, from p). Its run.status event is svc_run_announce's,
 * which comes last in the transaction (it takes the org's event lock). */
apr_status_t svc_run_queue(svc_db_t *db, apr_pool_t *p, const svc_run_spec_t *spec,
                           const char **pid);

/*
 * Cancels a run of the org: a queued one at once (*pstatus "cancelled":
 * announce it), a running one by asking its supervisor to stop it
 * (*pstatus "running"; its status changes when it has stopped). A finished
 * run, or none, changes nothing (*pstatus NULL).
 */
apr_status_t svc_run_cancel_for(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                const char *run_id, const char **pstatus);

/*
 * Locks a run of the org until the caller's transaction ends (a run that
 * is ending meanwhile is waited for). A run's status change takes its own
 * row, then its request's (sql/011's trigger): a change of a pipeline
 * request that also changes its runs takes their rows first, with this,
 * so the two never wait for each other. A run that is not there is no
 * error.
 */
apr_status_t svc_run_hold(svc_db_t *db, apr_pool_t *p, const char *org_id, const char *run_id);

/* The run.status event of a run queued or cancelled above, in the
 * caller's transaction, after everything else it writes. */
apr_status_t svc_run_announce(svc_db_t *db, apr_pool_t *p, const char *org_id,
                              const char *project_id, const char *run_id, const char *status);

/*
 * A run's artifact, its git bundle, read whole into p (*pdata is
 * NUL-terminated beyond *plen). SVC_ENOTFOUND: the org has no such run, or
 * the run has none (a run has one once it succeeded, or stopped at its step
 * limit or token budget). svc_run_tree.c.
 */
apr_status_t svc_run_artifact(svc_db_t *db, apr_pool_t *p, const char *org_id,
                              const char *run_id, const char **pdata, apr_size_t *plen);

/*
 * Answers 200 with a run's artifact as a download named `name`.bundle;
 * SVC_ENOTFOUND, nothing answered, as svc_run_artifact (the caller says
 * why there is none). svc_run_output.c.
 */
apr_status_t svc_run_reply_artifact(svc_ctx_t *ctx, svc_db_t *db, const char *org_id,
                                    const char *run_id, const char *name);

/*
 * What a bundle holds at its HEAD, read by git in the run sandbox (as every
 * git command on a run's repository is; SvcRunner applies): the paths of
 * its files (*pfiles, const char *, in git's order), and the contents of
 * those of `wanted` (top-level names, NULL-ended) that are files of at most
 * max_each bytes (*pcontents: name -> const char *; the others are
 * absent). A workspace under SvcRunWorkDir holds it meanwhile and is
 * removed. No database. On failure *perr says why. Call it from the thread
 * that waits (the sandbox dies with it).
 */
apr_status_t svc_run_artifact_tree(const svc_supervisor_conf_t *sc, apr_pool_t *p,
                                   const char *bundle, apr_size_t len,
                                   const char *const *wanted, apr_size_t max_each,
                                   apr_array_header_t **pfiles, apr_hash_t **pcontents,
                                   const char **perr);

#endif /* SVC_RUNS_H */
