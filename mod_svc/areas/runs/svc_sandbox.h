/*
 * svc_sandbox.h: running a command of a run in its sandbox.
 *
 * By default the sandbox is bubblewrap: new user, network, PID, IPC, UTS and
 * cgroup namespaces (--unshare-all: no network at all), a new session, the
 * system's /usr read-only, a private /tmp, /proc and /dev, the run's
 * workspace as the only writable place (at /workspace), the factory
 * program read-only at /svc/factory, an empty environment but for PATH,
 * HOME, LANG and TZ, and --die-with-parent. Resource limits are set on it
 * before exec (svc_sandbox_limits_t); they are inherited by everything it
 * starts.
 *
 * SvcRunner replaces bubblewrap with an operator's program (podman, docker,
 * ...): its arguments are taken as they are, with these placeholders
 * replaced (docs/operations.md):
 *   {workspace}  the run's workspace on the host (to mount at /workspace)
 *   {factory}    the factory program on the host (to mount at /svc/factory)
 *   {run}        the run's id (a container name, say)
 *   {command}    the command to run inside, as several arguments; it must
 *                be an argument of its own
 * Such a program is responsible for the limits; the supervisor sets none on
 * it but the core dump size.
 *
 * Either way the process is the leader of a process group of its own, so
 * stopping it (SIGTERM, then SIGKILL to the group) ends the whole tree:
 * bubblewrap's PID namespace dies with its first process.
 */
#ifndef SVC_SANDBOX_H
#define SVC_SANDBOX_H

#include "svc_runs.h"

#include <sys/types.h>

/* Where things are inside the sandbox. */
#define SVC_SANDBOX_WORKSPACE "/workspace"
#define SVC_SANDBOX_FACTORY   "/svc/factory"
#define SVC_SANDBOX_CA        "/svc/ca.pem"     /* the init step's SvcVcsCAFile */

/* What the sandboxed command may use. */
typedef struct {
    apr_int64_t memory;         /* RLIMIT_AS, bytes; 0: none */
    apr_int64_t cpu_seconds;    /* RLIMIT_CPU; 0: none */
    apr_int64_t file_size;      /* RLIMIT_FSIZE, bytes; 0: none */
    apr_int64_t processes;      /* RLIMIT_NPROC (see svc_sandbox_nproc); 0: none */
} svc_sandbox_limits_t;

/*
 * The argv (NULL-ended, in p) that runs `command` (NULL-ended; argv[0] a
 * path inside the sandbox, or a program on its PATH) in the sandbox of the
 * run `run_id` whose workspace is `workspace` on the host. APR_EINVAL when
 * SvcRunner has no {command} argument.
 */
apr_status_t svc_sandbox_argv(apr_pool_t *p, const svc_supervisor_conf_t *sc,
                              const char *workspace, const char *run_id,
                              const char *const *command, const char ***pargv);

/*
 * The argv (NULL-ended, in p) of a run's init step, which clones its
 * repository: bubblewrap whatever SvcRunner says (an operator's container
 * runner keeps the factory's sandbox; docs/decisions.md), as for the
 * factory but with the host's network (--share-net), the files of /etc
 * that name resolution and TLS read, `ca_file` (SvcVcsCAFile, or NULL)
 * read-only at SVC_SANDBOX_CA, and no factory. No --clearenv: the
 * environment inside is exactly the envp given to svc_sandbox_spawn, so a
 * token can travel there and never in argv.
 */
const char **svc_sandbox_init_argv(apr_pool_t *p, const char *workspace, const char *ca_file,
                                   const char *const *command);

/*
 * RLIMIT_NPROC counts every task (process or thread) of the real uid, in
 * every namespace, httpd's own included: the limit that lets the sandbox
 * start `processes` more is the uid's current count plus that. Returns that
 * sum (the count from /proc).
 */
apr_int64_t svc_sandbox_nproc(int processes);

/* A started sandbox: the process, and our ends of its stdin/stdout/stderr
 * (non-blocking, close-on-exec; -1 once closed). */
typedef struct {
    pid_t pid;
    int in;
    int out;
    int err;
    int exited;                 /* reaped; status in `status` */
    int status;
} svc_sandbox_t;

/*
 * Starts argv with the environment envp (NULL-ended) and limits (NULL: only
 * no core dumps), in a new session, with every other descriptor closed and
 * every signal back to its default. The child dies with the calling thread
 * (PR_SET_PDEATHSIG): call it from the thread that will wait for it. On
 * failure *perr says why.
 */
apr_status_t svc_sandbox_spawn(svc_sandbox_t *sb, const char *const *argv,
                               const char *const *envp, const svc_sandbox_limits_t *limits,
                               const char **perr, apr_pool_t *p);

/* Reaps the process if it has exited (or waits up to wait_ms for that);
 * 1 when it has, else 0. */
int svc_sandbox_reap(svc_sandbox_t *sb, int wait_ms);

/*
 * Ends the whole tree: SIGTERM to the process group, up to grace_ms for it
 * to exit, then SIGKILL, then reaps. Closes our ends of the pipes.
 */
void svc_sandbox_stop(svc_sandbox_t *sb, int grace_ms);

/* Closes our ends of the pipes (the process is left alone). */
void svc_sandbox_close(svc_sandbox_t *sb);

#endif /* SVC_SANDBOX_H */
