/*
 * svc_sandbox.c: the sandbox's argv, limits and process (svc_sandbox.h).
 * No shell anywhere: every argv is built as an array.
 */
#include "svc_sandbox.h"
#include "svc_bwrap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BWRAP "/usr/bin/bwrap"

static void push(apr_array_header_t *a, const char *s)
{
    APR_ARRAY_PUSH(a, const char *) = s;
}

/* svc_bwrap's push: its arguments may be temporaries, so each is copied
 * into the argv's pool. */
static void push_copy(void *argv, const char *s)
{
    apr_array_header_t *a = argv;

    push(a, apr_pstrdup(a->pool, s));
}

/* What name resolution and TLS read from /etc, for the init step (the
 * only sandbox with a network); the rest of /etc stays out. */
static const char *const net_etc[] = { "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf",
                                       "/etc/gai.conf", "/etc/host.conf", "/etc/ssl",
                                       "/etc/ca-certificates", "/etc/pki",
                                       "/etc/crypto-policies", NULL };

/*
 * bubblewrap's part of an argv: the workspace writable at /workspace, the
 * system read-only, and then either the factory's sandbox (no network, the
 * factory at /svc/factory, an environment set here) or, for the init step
 * (`factory` NULL), the host's network, what name resolution and TLS need
 * from /etc, `ca_file` at SVC_SANDBOX_CA, and the environment of the
 * process as given (so a secret in it never appears in argv).
 */
static void bwrap_argv(apr_array_header_t *a, const char *workspace, const char *factory,
                       const char *ca_file)
{
    svc_bwrap_system(push_copy, a, BWRAP, !factory, factory ? NULL : net_etc);
    push(a, "--bind");
    push(a, workspace);
    push(a, SVC_SANDBOX_WORKSPACE);
    push(a, "--chdir");
    push(a, SVC_SANDBOX_WORKSPACE);
    if (!factory) {
        if (ca_file) {
            push(a, "--ro-bind");
            push(a, ca_file);
            push(a, SVC_SANDBOX_CA);
        }
        push(a, "--");
        return;
    }
    push(a, "--ro-bind");
    push(a, factory);
    push(a, SVC_SANDBOX_FACTORY);
    svc_bwrap_env(push_copy, a, "/tmp");
    push(a, "--setenv");
    push(a, "TZ");
    push(a, "UTC");
    push(a, "--");
}

const char **svc_sandbox_init_argv(apr_pool_t *p, const char *workspace, const char *ca_file,
                                   const char *const *command)
{
    apr_array_header_t *a = apr_array_make(p, 64, sizeof(const char *));
    const char *const *c;

    bwrap_argv(a, workspace, NULL, ca_file);
    for (c = command; *c; c++) {
        push(a, *c);
    }
    push(a, NULL);
    return (const char **)a->elts;
}

/* s with every {name} of the table replaced; placeholders it does not know
 * are left as they are. */
static const char *expand(apr_pool_t *p, const char *s, const char *const *names,
                          const char *const *values)
{
    const char *out = "";
    const char *open;
    int i;

    while ((open = strchr(s, '{')) != NULL) {
        for (i = 0; names[i]; i++) {
            apr_size_t n = strlen(names[i]);
            if (strncmp(open + 1, names[i], n) == 0 && open[1 + n] == '}') {
                break;
            }
        }
        if (!names[i]) {
            out = apr_pstrcat(p, out, apr_pstrmemdup(p, s, (apr_size_t)(open - s) + 1), NULL);
            s = open + 1;
            continue;
        }
        out = apr_pstrcat(p, out, apr_pstrmemdup(p, s, (apr_size_t)(open - s)), values[i],
                          NULL);
        s = open + strlen(names[i]) + 2;
    }
    return apr_pstrcat(p, out, s, NULL);
}

apr_status_t svc_sandbox_argv(apr_pool_t *p, const svc_supervisor_conf_t *sc,
                              const char *workspace, const char *run_id,
                              const char *const *command, const char ***pargv)
{
    static const char *const names[] = { "workspace", "factory", "run", NULL };
    const char *values[3];
    apr_array_header_t *a = apr_array_make(p, 48, sizeof(const char *));
    const char *const *c;
    const char *const *r;
    int placed = 0;

    if (!sc->runner) {
        bwrap_argv(a, workspace, sc->factory, NULL);
        for (c = command; *c; c++) {
            push(a, *c);
        }
    }
    else {
        values[0] = workspace;
        values[1] = sc->factory;
        values[2] = run_id;
        for (r = sc->runner; *r; r++) {
            if (strcmp(*r, "{command}") == 0) {
                for (c = command; *c; c++) {
                    push(a, *c);
                }
                placed = 1;
                continue;
            }
            push(a, expand(p, *r, names, values));
        }
        if (!placed) {
            return APR_EINVAL;
        }
    }
    push(a, NULL);
    *pargv = (const char **)a->elts;
    return APR_SUCCESS;
}

apr_int64_t svc_sandbox_nproc(int processes)
{
    uid_t uid = getuid();
    apr_int64_t tasks = 0;
    struct dirent *de;
    DIR *d = opendir("/proc");
    char path[300], line[256];

    if (!d) {
        return processes;
    }
    while ((de = readdir(d)) != NULL) {
        long threads = 0, ruid = -1;
        FILE *f;

        if (de->d_name[0] < '1' || de->d_name[0] > '9') {
            continue;
        }
        snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
        if (!(f = fopen(path, "re"))) {
            continue;
        }
        while (fgets(line, sizeof(line), f)) {
            if (strncmp(line, "Uid:", 4) == 0) {
                ruid = strtol(line + 4, NULL, 10);
            }
            else if (strncmp(line, "Threads:", 8) == 0) {
                threads = strtol(line + 8, NULL, 10);
            }
        }
        fclose(f);
        if (ruid == (long)uid) {
            tasks += threads > 0 ? threads : 1;
        }
    }
    closedir(d);
    return tasks + processes;
}

static void set_limit(int resource, apr_int64_t v)
{
    struct rlimit rl;

    rl.rlim_cur = rl.rlim_max = (rlim_t)v;
    setrlimit(resource, &rl);
}

/* In the child, between fork and exec: async-signal-safe calls only. */
static void child(int in, int out, int err, const char *const *argv, const char *const *envp,
                  const svc_sandbox_limits_t *limits)
{
    struct sigaction sa;
    sigset_t none;
    int sig;

    setsid();
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) {
        _exit(127);
    }
    closefrom(3);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    for (sig = 1; sig < NSIG; sig++) {
        sigaction(sig, &sa, NULL);
    }
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    set_limit(RLIMIT_CORE, 0);
    if (limits) {
        if (limits->memory > 0) {
            set_limit(RLIMIT_AS, limits->memory);
        }
        if (limits->cpu_seconds > 0) {
            set_limit(RLIMIT_CPU, limits->cpu_seconds);
        }
        if (limits->file_size > 0) {
            set_limit(RLIMIT_FSIZE, limits->file_size);
        }
        if (limits->processes > 0) {
            set_limit(RLIMIT_NPROC, limits->processes);
        }
    }
    execve(argv[0], (char *const *)argv, (char *const *)envp);
    _exit(127);
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

apr_status_t svc_sandbox_spawn(svc_sandbox_t *sb, const char *const *argv,
                               const char *const *envp, const svc_sandbox_limits_t *limits,
                               const char **perr, apr_pool_t *p)
{
    int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr_[2] = { -1, -1 };
    apr_status_t rv;
    pid_t pid;

    memset(sb, 0, sizeof(*sb));
    sb->in = sb->out = sb->err = -1;
    sb->pid = -1;
    if (access(argv[0], X_OK) < 0) {
        rv = errno;
        *perr = apr_psprintf(p, "%s cannot be run: %s", argv[0], strerror(errno));
        return rv;
    }
    if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0
        || pipe2(perr_, O_CLOEXEC) < 0) {
        rv = errno;
        *perr = apr_psprintf(p, "pipe: %s", strerror(errno));
        goto failed;
    }
    pid = fork();
    if (pid < 0) {
        rv = errno;
        *perr = apr_psprintf(p, "fork: %s", strerror(errno));
        goto failed;
    }
    if (pid == 0) {
        child(pin[0], pout[1], perr_[1], argv, envp, limits);
    }
    close(pin[0]);
    close(pout[1]);
    close(perr_[1]);
    sb->pid = pid;
    sb->in = pin[1];
    sb->out = pout[0];
    sb->err = perr_[0];
    fcntl(sb->in, F_SETFL, fcntl(sb->in, F_GETFL) | O_NONBLOCK);
    fcntl(sb->out, F_SETFL, fcntl(sb->out, F_GETFL) | O_NONBLOCK);
    fcntl(sb->err, F_SETFL, fcntl(sb->err, F_GETFL) | O_NONBLOCK);
    return APR_SUCCESS;
failed:
    close_fd(&pin[0]);
    close_fd(&pin[1]);
    close_fd(&pout[0]);
    close_fd(&pout[1]);
    close_fd(&perr_[0]);
    close_fd(&perr_[1]);
    return rv;
}

int svc_sandbox_reap(svc_sandbox_t *sb, int wait_ms)
{
    int waited = 0;

    if (sb->exited || sb->pid <= 0) {
        return 1;
    }
    for (;;) {
        int status;
        pid_t r = waitpid(sb->pid, &status, WNOHANG);

        if (r == sb->pid || (r < 0 && errno == ECHILD)) {
            sb->exited = 1;
            sb->status = r == sb->pid ? status : 0;
            return 1;
        }
        if (waited >= wait_ms) {
            return 0;
        }
        poll(NULL, 0, 20);
        waited += 20;
    }
}

void svc_sandbox_close(svc_sandbox_t *sb)
{
    close_fd(&sb->in);
    close_fd(&sb->out);
    close_fd(&sb->err);
}

void svc_sandbox_stop(svc_sandbox_t *sb, int grace_ms)
{
    svc_sandbox_close(sb);
    if (sb->pid <= 0 || sb->exited) {
        return;
    }
    kill(-sb->pid, SIGTERM);
    if (!svc_sandbox_reap(sb, grace_ms)) {
        kill(-sb->pid, SIGKILL);
        svc_sandbox_reap(sb, 10000);
    }
}
