/*
 * svc_agent_work.c: svc-agent's deployments.
 *
 * What the service sends is a deployment's desired state (its status, the
 * artifact, the plan it runs on, how many replicas); the agent makes the
 * machine match it, whatever it did before, so doing a piece of work twice
 * changes nothing. A deployment lives in DIR/deployments/<id>/: the
 * checkout (app/, the only place its replicas may write), their logs
 * (logs/replica-N.log) and what the agent knows of it (state.json, so a
 * restarted agent brings its replicas back on the same ports).
 *
 * Each replica is a child process: bubblewrap (its own user, PID, IPC and
 * UTS namespaces, the host's network, /usr and a few files of /etc
 * read-only, the checkout read-write, nothing else of the machine: not the
 * agent's data directory, not its configuration), or the runner the
 * operator configured (podman, say), started with PORT set, in a session of
 * its own, and killed if the agent dies. A replica that exits is started
 * again after 1, 2, 4 ... 60 seconds; one that stays healthy for a minute
 * has its count of quick restarts forgiven. Health is an HTTP GET of the
 * plan's path on 127.0.0.1:PORT (2xx or 3xx), every second until it
 * answers, every 10 seconds after; the replicas due are probed together
 * (svc_agent_probe.c).
 *
 * A piece of work that starts replicas is reported done once every replica
 * answers its health check, or failed (with why) when health_timeout
 * passes first; other work is reported when it is done.
 */
#define _GNU_SOURCE
#include "svc_agent.h"
#include "../base/svc_bwrap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define STOP_GRACE_MS   5000
#define BACKOFF_MAX     60
#define FORGIVE_AFTER   60
#define CHECK_STARTING  1
#define CHECK_HEALTHY   10

typedef struct {
    int index;
    int port;
    pid_t pid;                  /* 0: not running */
    int healthy;
    int restarts;               /* quick restarts, for the backoff */
    int restarts_total;
    int last_status;            /* how it last ended (wait status), -1: never */
    time_t started;
    time_t restart_at;
    time_t next_check;
} replica_t;

typedef struct dep {
    char *id;
    json_t *desired;
    char *commit;               /* checked out, or NULL */
    char *command;
    char *health_path;
    int memory_mb;
    long long plan_version;
    int want;
    replica_t reps[AGENT_MAX_REPLICAS];
    char *work_id;              /* work waiting for the replicas' health */
    time_t work_deadline;
    struct dep *next;
} dep_t;

static dep_t *deps;

/* ------------------------------------------------------------------------
 * Shapes of what the service sends (ids become paths: checked first)
 */

static int id_ok(const char *s, const char *prefix)
{
    size_t n = s ? strlen(s) : 0, p = strlen(prefix);

    return n > p + 8 && n <= 64 && strncmp(s, prefix, p) == 0
           && strspn(s + p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
              == n - p;
}

static int commit_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    return (n == 40 || n == 64) && strspn(s, "0123456789abcdef") == n;
}

static char *dep_dir(const dep_t *d)
{
    return xprintf("%s/deployments/%s", conf.dir, d->id);
}

static char *app_dir(const dep_t *d)
{
    return xprintf("%s/deployments/%s/app", conf.dir, d->id);
}

static dep_t *dep_find(const char *id)
{
    dep_t *d;

    for (d = deps; d; d = d->next) {
        if (strcmp(d->id, id) == 0) {
            return d;
        }
    }
    return NULL;
}

static dep_t *dep_new(const char *id)
{
    dep_t *d = calloc(1, sizeof(*d));
    int i;

    if (!d) {
        alog(AL_ERROR, "out of memory");
        exit(1);
    }
    d->id = xstrdup(id);
    for (i = 0; i < AGENT_MAX_REPLICAS; i++) {
        d->reps[i].index = i;
        d->reps[i].last_status = -1;
    }
    d->next = deps;
    deps = d;
    return d;
}

static void dep_forget(dep_t *d)
{
    dep_t **pp;

    for (pp = &deps; *pp; pp = &(*pp)->next) {
        if (*pp == d) {
            *pp = d->next;
            break;
        }
    }
    tel_forget(d->id);
    json_decref(d->desired);
    free(d->id);
    free(d->commit);
    free(d->command);
    free(d->health_path);
    free(d->work_id);
    free(d);
}

static void dep_save(const dep_t *d)
{
    char *path = xprintf("%s/deployments/%s/state.json", conf.dir, d->id);
    json_t *ports = json_array(), *st;
    int i;

    for (i = 0; i < AGENT_MAX_REPLICAS; i++) {
        json_array_append_new(ports, json_integer(d->reps[i].port));
    }
    st = json_pack("{s:O,s:s?,s:o}", "desired", d->desired, "commit", d->commit,
                   "ports", ports);
    if (write_json(path, st) < 0) {
        alog(AL_WARNING, "deployment %s: %s cannot be written", d->id, path);
    }
    json_decref(st);
    free(path);
}

/* ------------------------------------------------------------------------
 * Ports
 */

static int port_ours(int port)
{
    dep_t *d;
    int i;

    for (d = deps; d; d = d->next) {
        for (i = 0; i < AGENT_MAX_REPLICAS; i++) {
            if (d->reps[i].port == port && d->reps[i].pid) {
                return 1;
            }
        }
    }
    return 0;
}

static int port_free(int port)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok, one = 1;

    if (fd < 0) {
        return 0;
    }
    /* As servers bind: a port whose last connections linger in TIME_WAIT
     * (the replica that had it just stopped) is free to take again. */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

/* A port of the range no one listens on, nor one of ours is given. */
static int port_pick(const dep_t *self)
{
    int port, i;

    for (port = conf.port_lo; port <= conf.port_hi; port++) {
        int taken = port_ours(port);
        for (i = 0; self && i < AGENT_MAX_REPLICAS && !taken; i++) {
            taken = self->reps[i].port == port;
        }
        if (!taken && port_free(port)) {
            return port;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * Replicas
 */

typedef struct {
    char *v[128];
    int n;
} argv_t;

static void push(argv_t *a, const char *s)
{
    if (a->n < 127) {
        a->v[a->n++] = xstrdup(s);
        a->v[a->n] = NULL;
    }
}

static void argv_free(argv_t *a)
{
    int i;

    for (i = 0; i < a->n; i++) {
        free(a->v[i]);
    }
    a->n = 0;
}

/* The few files of /etc a networked program reads. */
static const char *const etc_files[] = {
    "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf",
    "/etc/gai.conf", "/etc/ssl", "/etc/ca-certificates", "/etc/passwd", "/etc/group",
    "/etc/localtime", "/etc/mime.types", "/etc/alternatives", NULL
};

/* svc_bwrap's push: push copies what it keeps. */
static void push_arg(void *argv, const char *s)
{
    push(argv, s);
}

static void bwrap_argv(argv_t *a, const dep_t *d, const replica_t *r, const char *app)
{
    char port[16];

    svc_bwrap_system(push_arg, a, "bwrap", 1, etc_files);
    /* The checkout at its own path, so the workload sees the same paths
     * the operator does. */
    push(a, "--bind");
    push(a, app);
    push(a, app);
    /* bubblewrap's own root is a tmpfs: read-only too, so the checkout and
     * /tmp are the only places a workload can write. */
    push(a, "--remount-ro");
    push(a, "/");
    push(a, "--chdir");
    push(a, app);
    svc_bwrap_env(push_arg, a, app);
    snprintf(port, sizeof(port), "%d", r->port);
    push(a, "--setenv");
    push(a, "PORT");
    push(a, port);
    push(a, "--");
    push(a, "/bin/sh");
    push(a, "-c");
    push(a, d->command);
}

/* The operator's runner: its words with {app}, {port}, {command},
 * {deployment}, {replica} and {memory_mb} replaced ({command} is one
 * argument, the shell command). */
static void runner_argv(argv_t *a, const dep_t *d, const replica_t *r, const char *app)
{
    char **w;

    for (w = conf.runner; *w; w++) {
        const char *s = *w;
        char *out = xstrdup("");
        while (*s) {
            const char *open = strchr(s, '{'), *close = open ? strchr(open, '}') : NULL;
            char *name, *val = NULL, *next;
            if (!open || !close) {
                next = xprintf("%s%s", out, s);
                free(out);
                out = next;
                break;
            }
            name = strndup(open + 1, (size_t)(close - open - 1));
            if (strcmp(name, "app") == 0) {
                val = xstrdup(app);
            }
            else if (strcmp(name, "port") == 0) {
                val = xprintf("%d", r->port);
            }
            else if (strcmp(name, "command") == 0) {
                val = xstrdup(d->command);
            }
            else if (strcmp(name, "deployment") == 0) {
                val = xstrdup(d->id);
            }
            else if (strcmp(name, "replica") == 0) {
                val = xprintf("%d", r->index);
            }
            else if (strcmp(name, "memory_mb") == 0) {
                val = xprintf("%d", d->memory_mb);
            }
            next = val ? xprintf("%s%.*s%s", out, (int)(open - s), s, val)
                       : xprintf("%s%.*s", out, (int)(close + 1 - s), s);
            free(out);
            free(val);
            free(name);
            out = next;
            s = close + 1;
        }
        push(a, out);
        free(out);
    }
}

static void replica_start(dep_t *d, replica_t *r)
{
    char *app = app_dir(d), *log = xprintf("%s/deployments/%s/logs/replica-%d.log", conf.dir,
                                             d->id, r->index);
    const char *envp[8];
    char port[32];
    argv_t a = { { NULL }, 0 };
    pid_t pid, parent;
    int n = 0;

    if (!r->port || (!port_free(r->port) && !port_ours(r->port))) {
        r->port = port_pick(d);
    }
    if (!r->port) {
        alog(AL_ERROR, "deployment %s: no free port in %d-%d for replica %d", d->id,
             conf.port_lo, conf.port_hi, r->index);
        r->restart_at = time(NULL) + BACKOFF_MAX;
        goto cleanup;
    }
    if (conf.runner) {
        runner_argv(&a, d, r, app);
    }
    else {
        bwrap_argv(&a, d, r, app);
    }
    envp[n++] = "PATH=/usr/local/bin:/usr/bin:/bin";
    envp[n++] = "LANG=C.UTF-8";
    snprintf(port, sizeof(port), "PORT=%d", r->port);
    envp[n++] = port;
    if (conf.runner) {
        /* A container runner may need these to reach its engine. */
        static char home[4200], xdg[4200];
        if (getenv("HOME") && snprintf(home, sizeof(home), "HOME=%s", getenv("HOME")) > 0) {
            envp[n++] = home;
        }
        if (getenv("XDG_RUNTIME_DIR")
            && snprintf(xdg, sizeof(xdg), "XDG_RUNTIME_DIR=%s", getenv("XDG_RUNTIME_DIR")) > 0) {
            envp[n++] = xdg;
        }
    }
    envp[n] = NULL;
    parent = getpid();
    pid = fork();
    if (pid < 0) {
        alog(AL_ERROR, "deployment %s: cannot start replica %d: %s", d->id, r->index,
             strerror(errno));
        r->restart_at = time(NULL) + 1;
        goto cleanup;
    }
    if (pid == 0) {
        int fd;
        sigset_t none;
        /* The replica dies with the agent (a restarted agent starts it again),
         * even if the agent died before this line. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(1);
        }
        setsid();
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        if (chdir(app) < 0) {
            _exit(126);
        }
        if (d->memory_mb > 0) {
            /* The data segment and private writable memory, a bound the
             * workload cannot raise. Not the address space: runtimes such as
             * V8 and Go reserve gigabytes of it they never use. */
            struct rlimit rl;
            rl.rlim_cur = rl.rlim_max = (rlim_t)d->memory_mb * 1024 * 1024;
            setrlimit(RLIMIT_DATA, &rl);
        }
        fd = open("/dev/null", O_RDONLY);
        if (fd >= 0) {
            dup2(fd, 0);
        }
        fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        closefrom(3);
        execvpe(a.v[0], a.v, (char *const *)envp);
        fprintf(stderr, "svc-agent: cannot run %s: %s\n", a.v[0], strerror(errno));
        _exit(127);
    }
    r->pid = pid;
    r->healthy = 0;
    r->started = time(NULL);
    r->next_check = r->started + CHECK_STARTING;
    alog(AL_INFO, "deployment %s: replica %d started on port %d (pid %ld)", d->id, r->index,
         r->port, (long)pid);

cleanup:
    argv_free(&a);
    free(app);
    free(log);
}

/* Waits up to ms for the process to end (reaped here). */
static int reap_within(pid_t pid, int ms)
{
    int status, waited = 0;

    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid || (got < 0 && errno == ECHILD)) {
            return 1;
        }
        if (waited >= ms) {
            return 0;
        }
        usleep(50 * 1000);
        waited += 50;
    }
}

/* Ends a replica: SIGTERM to its process group, SIGKILL after the grace. */
static void replica_stop(dep_t *d, replica_t *r)
{
    if (!r->pid) {
        return;
    }
    kill(-r->pid, SIGTERM);
    if (!reap_within(r->pid, STOP_GRACE_MS)) {
        kill(-r->pid, SIGKILL);
        kill(r->pid, SIGKILL);
        reap_within(r->pid, STOP_GRACE_MS);
    }
    alog(AL_INFO, "deployment %s: replica %d stopped (port %d)", d->id, r->index, r->port);
    r->pid = 0;
    r->healthy = 0;
}

/*
 * Kills what still runs in the deployment's directory, left by an agent
 * that died: its replicas die with it as a rule, but a sandbox killed in
 * the instant it was being made can miss its parent's death. Processes of
 * this user whose working directory is in the deployment's directory are
 * the deployment's (a replica works in its checkout).
 */
static void kill_leftovers(const dep_t *d)
{
    char *dir = dep_dir(d), link[64], cwd[4096];
    size_t n = strlen(dir);
    struct dirent *de;
    struct stat st;
    DIR *proc = opendir("/proc");
    int killed = 0;

    while (proc && (de = readdir(proc)) != NULL) {
        pid_t pid = (pid_t)strtol(de->d_name, NULL, 10);
        ssize_t len;

        if (pid <= 1 || pid == getpid()) {
            continue;
        }
        snprintf(link, sizeof(link), "/proc/%ld/cwd", (long)pid);
        if (lstat(link, &st) < 0 || st.st_uid != getuid()
            || (len = readlink(link, cwd, sizeof(cwd) - 1)) <= 0) {
            continue;
        }
        cwd[len] = '\0';
        if (strncmp(cwd, dir, n) == 0 && (cwd[n] == '/' || cwd[n] == '\0')) {
            kill(pid, SIGKILL);
            killed++;
        }
    }
    if (proc) {
        closedir(proc);
    }
    if (killed) {
        alog(AL_WARNING, "deployment %s: %d process(es) left from before were killed", d->id,
             killed);
    }
    free(dir);
}

static void stop_all(dep_t *d)
{
    int i;

    /* All told at once, then waited for. */
    for (i = 0; i < AGENT_MAX_REPLICAS; i++) {
        if (d->reps[i].pid) {
            kill(-d->reps[i].pid, SIGTERM);
        }
    }
    for (i = 0; i < AGENT_MAX_REPLICAS; i++) {
        replica_stop(d, &d->reps[i]);
        d->reps[i].restarts = 0;
        d->reps[i].restart_at = 0;
    }
}

/*
 * A round of health probes: the replicas it covers, their deployments, and
 * what probe_health fills in, index for index.
 */
typedef struct {
    probe_t *probes;
    replica_t **reps;
    dep_t **deps;
} probe_round_t;

static void round_free(probe_round_t *round)
{
    free(round->probes);
    free(round->reps);
    free(round->deps);
    free(round);
}

/* The running replicas that should run, with due_only those whose health
 * check is due at now; NULL when there are none (*pn 0). */
static probe_round_t *round_of(time_t now, int due_only, int *pn)
{
    probe_round_t *round;
    dep_t *d;
    int i, n = 0;

    *pn = 0;
    for (d = deps; d; d = d->next) {
        n += d->want;
    }
    if (n == 0) {
        return NULL;
    }
    round = calloc(1, sizeof(*round));
    if (!round || !(round->probes = calloc((size_t)n, sizeof(probe_t)))
        || !(round->reps = calloc((size_t)n, sizeof(replica_t *)))
        || !(round->deps = calloc((size_t)n, sizeof(dep_t *)))) {
        alog(AL_ERROR, "out of memory");
        exit(1);
    }
    n = 0;
    for (d = deps; d; d = d->next) {
        for (i = 0; i < d->want; i++) {
            replica_t *r = &d->reps[i];
            if (!r->pid || (due_only && now < r->next_check)
                || (!due_only && (!d->command || !d->commit))) {
                continue;
            }
            round->probes[n].port = r->port;
            round->probes[n].path = d->health_path;
            round->reps[n] = r;
            round->deps[n] = d;
            n++;
        }
    }
    if (n == 0) {
        round_free(round);
        return NULL;
    }
    *pn = n;
    return round;
}

static probe_round_t *due_replicas(time_t now, int *pn)
{
    return round_of(now, 1, pn);
}

static probe_round_t *running_replicas(int *pn)
{
    return round_of(0, 0, pn);
}

/* Starts what should run and is due, stops what should not. */
static void converge(dep_t *d)
{
    time_t now = time(NULL);
    int i;

    for (i = 0; i < AGENT_MAX_REPLICAS; i++) {
        replica_t *r = &d->reps[i];
        if (i < d->want && d->command && d->commit) {
            if (!r->pid && now >= r->restart_at) {
                replica_start(d, r);
            }
        }
        else if (r->pid) {
            replica_stop(d, r);
        }
    }
}

static json_t *workload(const dep_t *d)
{
    json_t *reps = json_array();
    int i;

    for (i = 0; i < AGENT_MAX_REPLICAS; i++) {
        const replica_t *r = &d->reps[i];
        if (i < d->want || r->pid) {
            json_array_append_new(reps, json_pack("{s:i,s:i,s:i,s:b,s:i}", "index", i,
                                                  "port", r->port, "pid", (int)r->pid,
                                                  "healthy", r->healthy,
                                                  "restarts", r->restarts_total));
        }
    }
    return json_pack("{s:o}", "replicas", reps);
}

/* ------------------------------------------------------------------------
 * Reports
 */

static void finish(const char *work_id, const char *code, const char *message,
                   json_t *load)
{
    json_t *report = json_pack("{s:s}", "outcome", code ? "failed" : "done");

    if (code) {
        json_object_set_new(report, "error", json_pack("{s:s,s:s}", "code", code,
                                                       "message", message));
        alog(AL_WARNING, "work %s failed: %s: %s", work_id, code, message);
    }
    else {
        alog(AL_INFO, "work %s done", work_id);
    }
    if (load) {
        json_object_set_new(report, "workload", load);
    }
    done_put(work_id, report);
}

/* ------------------------------------------------------------------------
 * The checkout
 */

static int checkout(dep_t *d, const json_t *desired, char **perr)
{
    const char *commit = json_string_value(json_object_get(desired, "commit"));
    const char *bundle = json_string_value(json_object_get(desired, "bundle"));
    char *dir = dep_dir(d), *app = app_dir(d), *fresh = xprintf("%s/app.new", dir);
    char *file = xprintf("%s/artifact.bundle", dir), *logs = xprintf("%s/logs", dir);
    struct stat st;
    long status = 0;
    int rc = -1;

    *perr = NULL;
    if (!commit_ok(commit) || !bundle || strncmp(bundle, "/api/agent/deployments/", 23) != 0
        || strstr(bundle, "..")) {
        *perr = xstrdup("the service sent no usable commit or artifact");
        goto cleanup;
    }
    if (d->commit && strcmp(d->commit, commit) == 0 && stat(app, &st) == 0) {
        rc = 0;
        goto cleanup;
    }
    if (mkdirs(logs, 0700) < 0) {
        *perr = xprintf("%s cannot be made: %s", logs, strerror(errno));
        goto cleanup;
    }
    if (http_download(bundle, file, &status) < 0) {
        *perr = xprintf("the artifact could not be fetched (status %ld)", status);
        goto cleanup;
    }
    rmtree(fresh);
    {
        /* Git with no hooks, no templates, no configuration of the
         * machine's: the repository is what a model wrote. */
        const char *const clone[] = { "git", "-c", "core.hooksPath=/dev/null", "-c",
                                "init.templateDir=", "clone", "-q", "--no-checkout", file,
                                fresh, NULL };
        const char *const co[] = { "git", "-c", "core.hooksPath=/dev/null", "-c",
                             "core.fsmonitor=false", "-C", fresh, "checkout", "-q", "--detach",
                             commit, NULL };
        int c1 = run_wait(clone, dir), c2 = c1 == 0 ? run_wait(co, dir) : -1;
        if (c1 != 0 || c2 != 0) {
            *perr = xprintf("git could not check the artifact out (exit %d)",
                            c1 != 0 ? c1 : c2);
            rmtree(fresh);
            goto cleanup;
        }
    }
    rmtree(app);
    if (rename(fresh, app) < 0) {
        *perr = xprintf("the checkout cannot be put in place: %s", strerror(errno));
        goto cleanup;
    }
    chmod(app, 0700);
    free(d->commit);
    d->commit = xstrdup(commit);
    alog(AL_INFO, "deployment %s: checked out %.12s", d->id, commit);
    rc = 0;

cleanup:
    unlink(file);
    free(dir);
    free(app);
    free(fresh);
    free(file);
    free(logs);
    return rc;
}

/* Takes the plan of the desired state; 1 when it changed what runs. */
static int take_plan(dep_t *d, const json_t *desired)
{
    const json_t *plan = json_object_get(desired, "plan");
    const char *command = json_string_value(json_object_get(plan, "command"));
    const char *health = json_string_value(json_object_get(plan, "health_path"));
    long long version = json_integer_value(json_object_get(plan, "version"));
    int changed;

    if (!command || !*command) {
        return 0;
    }
    changed = !d->command || strcmp(d->command, command) != 0 || d->plan_version != version;
    free(d->command);
    free(d->health_path);
    d->command = xstrdup(command);
    d->health_path = xstrdup(health && health[0] == '/' ? health : "/");
    d->memory_mb = (int)json_integer_value(json_object_get(plan, "memory_mb"));
    d->plan_version = version;
    return changed;
}

/* ------------------------------------------------------------------------
 * Teardown and hand-over
 */

static void teardown(dep_t *d)
{
    char *dir = dep_dir(d);

    stop_all(d);
    kill_leftovers(d);
    if (rmtree(dir) < 0) {
        alog(AL_WARNING, "deployment %s: %s could not be removed entirely", d->id, dir);
    }
    alog(AL_INFO, "deployment %s torn down: its processes and files are gone", d->id);
    free(dir);
    dep_forget(d);
}

/* Writes text to path with mode, and frees both (each made by xprintf). */
static void write_text(char *path, char *text, mode_t mode)
{
    write_file(path, text, strlen(text), mode);
    free(path);
    free(text);
}

/*
 * Hands the workload over: its checkout moves to separate_dir/<id>/app,
 * with a start script (start.sh, which starts the replicas in the
 * background on the ports they had), the plan's command on its own
 * (command.sh) and a systemd unit template to run it as a service; the
 * agent stops its own replicas, starts the handed-over ones with the
 * script, outside any sandbox and its own control, and forgets the
 * deployment.
 */
static void separate(dep_t *d, const json_t *desired, const char *work_id)
{
    char *dir = dep_dir(d), *app = app_dir(d), *err = NULL, *target = NULL, *ports = NULL;
    char *text, *path;
    json_t *reps = json_array();
    time_t deadline, stamp = time(NULL);
    struct stat st;
    char when[32];
    probe_t probes[AGENT_MAX_REPLICAS];
    int n, i, healthy = 0;
    pid_t pid;

    take_plan(d, desired);
    if (checkout(d, desired, &err) < 0 || !d->command) {
        finish(work_id, "separate_failed", err ? err : "the deployment has no plan",
               NULL);
        json_decref(reps);
        free(err);
        goto cleanup;
    }
    n = d->want > 0 ? d->want : 1;
    for (i = 0; i < n; i++) {
        if (!d->reps[i].port) {
            d->reps[i].port = port_pick(d);
        }
    }
    stop_all(d);
    target = xprintf("%s/%s", conf.separate_dir, d->id);
    if (stat(target, &st) == 0) {
        free(target);
        target = xprintf("%s/%s-%ld", conf.separate_dir, d->id, (long)stamp);
    }
    if (mkdirs(target, 0755) < 0) {
        finish(work_id, "separate_failed", "the hand-over directory cannot be made", NULL);
        json_decref(reps);
        goto cleanup;
    }
    path = xprintf("%s/app", target);
    if (rename(app, path) < 0) {
        const char *const cp[] = { "cp", "-a", app, path, NULL };
        if (errno != EXDEV || run_wait(cp, NULL) != 0) {
            finish(work_id, "separate_failed", "the checkout cannot be moved to the "
                   "hand-over directory", NULL);
            free(path);
            json_decref(reps);
            goto cleanup;
        }
    }
    chmod(path, 0755);
    free(path);
    ports = xstrdup("");
    for (i = 0; i < n; i++) {
        char *next = xprintf("%s%s%d", ports, i ? " " : "", d->reps[i].port);
        free(ports);
        ports = next;
        json_array_append_new(reps, json_pack("{s:i,s:i}", "index", i, "port",
                                              d->reps[i].port));
    }
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&stamp));
    write_text(xprintf("%s/command.sh", target),
               xprintf("#!/bin/sh\n# The web process of deployment %s (its plan's command),\n"
                       "# run in app/ with PORT set.\n%s\n", d->id, d->command), 0755);
    text = xprintf(
        "#!/bin/sh\n"
        "# Deployment %s, handed over by svc-agent on %s: the agent no\n"
        "# longer manages it. This starts its replicas in the background, one per\n"
        "# port, with PORT set; their output goes to replica-PORT.log and their\n"
        "# process ids to pids. To run them under systemd instead, see\n"
        "# svc-app-%s@.service.\n"
        "cd \"$(dirname \"$0\")\" || exit 1\n"
        "here=$(pwd)\n"
        ": > pids\n"
        "for port in %s; do\n"
        "    (cd app && PORT=$port exec sh \"$here/command.sh\" >> \"$here/replica-$port.log\" "
        "2>&1 < /dev/null) &\n"
        "    echo $! >> pids\n"
        "done\n", d->id, when, d->id, ports);
    write_text(xprintf("%s/start.sh", target), text, 0755);
    text = xprintf(
        "# Deployment %s, handed over by svc-agent: one instance per port.\n"
        "#   systemctl link %s/svc-app-%s@.service\n"
        "#   systemctl enable --now svc-app-%s@PORT   (for each of: %s)\n"
        "[Unit]\n"
        "Description=Deployment %s (handed over by svc-agent) on port %%i\n"
        "After=network.target\n\n"
        "[Service]\n"
        "WorkingDirectory=%s/app\n"
        "Environment=PORT=%%i\n"
        "ExecStart=/bin/sh %s/command.sh\n"
        "Restart=on-failure\n\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n", d->id, target, d->id, d->id, ports, d->id, target,
        target);
    write_text(xprintf("%s/svc-app-%s@.service", target, d->id), text, 0644);
    /* Started in a session of its own, with nothing of the agent's: no
     * death signal, no sandbox; the agent does not wait for it. */
    pid = fork();
    if (pid == 0) {
        const char *const argv[] = { "/bin/sh", "start.sh", NULL };
        const char *const envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
                                     NULL };
        int fd = open("/dev/null", O_RDWR);
        setsid();
        if (fd >= 0) {
            dup2(fd, 0);
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (chdir(target) < 0) {
            _exit(126);
        }
        closefrom(3);
        execve(argv[0], (char *const *)argv, (char *const *)envp);
        _exit(127);
    }
    if (pid > 0) {
        reap_within(pid, 10000);
    }
    for (i = 0; i < n; i++) {
        probes[i].port = d->reps[i].port;
        probes[i].path = d->health_path;
    }
    deadline = time(NULL) + conf.health_timeout;
    while (!agent_stop && time(NULL) < deadline) {
        probe_health(probes, n);
        healthy = 0;
        for (i = 0; i < n; i++) {
            healthy += probes[i].ok;
        }
        if (healthy == n) {
            break;
        }
        sleep(1);
    }
    rmtree(dir);
    alog(AL_INFO, "deployment %s handed over to %s (%d of %d replicas answer); the agent "
         "forgets it", d->id, target, healthy, n);
    if (healthy == n) {
        finish(work_id, NULL, NULL, json_pack("{s:s,s:o}", "separated_to", target,
                                              "replicas", reps));
    }
    else {
        json_decref(reps);
        finish(work_id, "separate_failed", "the handed-over replicas do not answer their "
               "health check", json_pack("{s:s}", "separated_to", target));
    }
    dep_forget(d);
    d = NULL;

cleanup:
    free(dir);
    free(app);
    free(target);
    free(ports);
}

/* ------------------------------------------------------------------------
 * Desired states
 */

/* Makes the machine match the deployment's desired state; reports work_id
 * (if not NULL) when that is done. */
static void apply(const json_t *desired, const char *action, const char *work_id)
{
    const char *id = json_string_value(json_object_get(desired, "deployment_id"));
    const char *status = json_string_value(json_object_get(desired, "status"));
    dep_t *d;
    char *err = NULL;
    int plan_changed;

    if (!id_ok(id, "dep_") || !status) {
        alog(AL_WARNING, "work for a deployment of an unknown shape: ignored");
        return;
    }
    if (!action) {
        action = "";
    }
    d = dep_find(id);
    if (strcmp(action, "teardown") == 0 || strcmp(status, "tearing_down") == 0) {
        if (d) {
            teardown(d);
        }
        else {
            char *dir = xprintf("%s/deployments/%s", conf.dir, id);
            rmtree(dir);
            free(dir);
        }
        if (work_id) {
            finish(work_id, NULL, NULL, json_pack("{s:[]}", "replicas"));
        }
        return;
    }
    if (!d) {
        d = dep_new(id);
    }
    if (strcmp(action, "separate") == 0 || strcmp(status, "separating") == 0) {
        if (work_id) {
            separate(d, desired, work_id);
        }
        return;
    }
    json_decref(d->desired);
    d->desired = json_deep_copy(desired);
    plan_changed = take_plan(d, desired);
    if (checkout(d, desired, &err) < 0) {
        alog(AL_ERROR, "deployment %s: %s", d->id, err);
        if (work_id) {
            finish(work_id, "checkout_failed", err, NULL);
        }
        free(err);
        return;
    }
    if (plan_changed) {
        /* A new plan: every replica starts again on it. */
        stop_all(d);
    }
    d->want = (int)json_integer_value(json_object_get(desired, "replicas"));
    if (d->want < 0 || d->want > AGENT_MAX_REPLICAS) {
        d->want = 0;
    }
    converge(d);
    dep_save(d);
    if (!work_id) {
        return;
    }
    free(d->work_id);
    d->work_id = NULL;
    if (d->want == 0) {
        finish(work_id, NULL, NULL, workload(d));
        return;
    }
    d->work_id = xstrdup(work_id);
    d->work_deadline = time(NULL) + conf.health_timeout;
}

void work_event(const json_t *work)
{
    const char *work_id = json_string_value(json_object_get(work, "work_id"));
    const char *action = json_string_value(json_object_get(work, "action"));
    const json_t *desired = json_object_get(work, "desired");
    const char *dep_id = json_string_value(json_object_get(work, "deployment_id"));
    dep_t *d;

    if (!id_ok(work_id, "wrk_") || !json_is_object(desired)) {
        alog(AL_WARNING, "work of an unknown shape: ignored");
        return;
    }
    if (done_get(work_id)) {
        /* Done before (delivered again): nothing is done twice. */
        return;
    }
    d = dep_id ? dep_find(dep_id) : NULL;
    if (d && d->work_id && strcmp(d->work_id, work_id) == 0) {
        return;     /* under way */
    }
    alog(AL_INFO, "work %s: %s deployment %s", work_id, action ? action : "?",
         dep_id ? dep_id : "?");
    apply(desired, action, work_id);
}

void work_sync(const json_t *view)
{
    const json_t *list = json_object_get(view, "deployments"), *item;
    dep_t *d, *next;
    size_t i;

    json_array_foreach(list, i, item) {
        const json_t *work = json_object_get(item, "work");
        const char *work_id = json_string_value(json_object_get(work, "work_id"));
        const char *action = json_string_value(json_object_get(work, "action"));
        const json_t *desired = json_object_get(item, "desired");

        if (work_id && !json_is_null(json_object_get(work, "outcome"))) {
            work_id = NULL;     /* the service has its outcome */
        }
        if (work_id && (done_get(work_id) || !id_ok(work_id, "wrk_"))) {
            work_id = NULL;     /* done here; its report is sent again if need be */
        }
        d = dep_find(json_string_value(json_object_get(desired, "deployment_id")));
        if (d && work_id && d->work_id && strcmp(d->work_id, work_id) == 0) {
            continue;
        }
        apply(desired, action, work_id);
    }
    /* What the service no longer has on this target (torn down or handed
     * over while the agent was away) goes. */
    for (d = deps; d; d = next) {
        int listed = 0;
        next = d->next;
        json_array_foreach(list, i, item) {
            const char *id = json_string_value(json_object_get(json_object_get(item, "desired"),
                                                               "deployment_id"));
            listed |= id && strcmp(id, d->id) == 0;
        }
        if (!listed) {
            alog(AL_INFO, "deployment %s is no longer this target's: removing it", d->id);
            teardown(d);
        }
    }
}

void work_restore(void)
{
    char *root = xprintf("%s/deployments", conf.dir);
    struct dirent *de;
    DIR *dh;

    mkdirs(root, 0700);
    if (!(dh = opendir(root))) {
        free(root);
        return;
    }
    while ((de = readdir(dh)) != NULL) {
        char *path;
        json_t *st, *ports;
        dep_t *d;
        size_t i;

        if (!id_ok(de->d_name, "dep_")) {
            continue;
        }
        path = xprintf("%s/%s/state.json", root, de->d_name);
        st = read_json(path);
        free(path);
        if (!json_is_object(st) || !json_is_object(json_object_get(st, "desired"))) {
            json_decref(st);
            continue;
        }
        d = dep_new(de->d_name);
        if (json_string_value(json_object_get(st, "commit"))) {
            d->commit = xstrdup(json_string_value(json_object_get(st, "commit")));
        }
        ports = json_object_get(st, "ports");
        for (i = 0; i < AGENT_MAX_REPLICAS && i < json_array_size(ports); i++) {
            d->reps[i].port = (int)json_integer_value(json_array_get(ports, i));
        }
        alog(AL_INFO, "deployment %s: bringing back what ran before", d->id);
        kill_leftovers(d);
        apply(json_object_get(st, "desired"), NULL, NULL);
        json_decref(st);
    }
    closedir(dh);
    free(root);
}

/*
 * Telemetry: every probe interval, a probe of each replica that should run
 * (one that does not run is down); every metrics interval, a sample of
 * each, and the batch goes. Only a deployment with its checkout and plan:
 * nothing is said of one still being fetched.
 */
static void telemetry(time_t now)
{
    static time_t next_probe, next_sample;
    probe_round_t *round;
    dep_t *d;
    int i, n;

    if (now >= next_probe) {
        next_probe = now + conf.probe_interval;
        if ((round = running_replicas(&n)) != NULL) {
            probe_health(round->probes, n);
            for (i = 0; i < n; i++) {
                /* A probe the agent's stop cut short says nothing. */
                if (round->probes[i].ms >= 0) {
                    tel_probe(round->deps[i]->id,
                              (int)(round->reps[i] - round->deps[i]->reps),
                              round->probes[i].ok, round->probes[i].ms);
                }
            }
            round_free(round);
        }
        /* One that does not run is down, and not probed. */
        for (d = deps; d; d = d->next) {
            for (i = 0; i < d->want && d->command && d->commit; i++) {
                if (!d->reps[i].pid) {
                    tel_probe(d->id, i, 0, -1);
                }
            }
        }
    }
    if (now >= next_sample) {
        next_sample = now + conf.metrics_interval;
        for (d = deps; d; d = d->next) {
            for (i = 0; i < d->want && d->command && d->commit; i++) {
                tel_sample(d->id, i, (int)d->reps[i].pid, d->reps[i].restarts_total);
            }
        }
        tel_flush();
    }
}

void work_supervise(void)
{
    time_t now = time(NULL);
    probe_round_t *due;
    int status, n;
    pid_t pid;
    dep_t *d, *next;
    int i;

    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (d = deps; d; d = d->next) {
            for (i = 0; i < AGENT_MAX_REPLICAS; i++) {
                replica_t *r = &d->reps[i];
                int wait;
                if (r->pid != pid) {
                    continue;
                }
                r->pid = 0;
                r->healthy = 0;
                r->last_status = status;
                if (now - r->started >= FORGIVE_AFTER) {
                    r->restarts = 0;
                }
                wait = r->restarts >= 6 ? BACKOFF_MAX : 1 << r->restarts;
                r->restarts++;
                r->restarts_total++;
                r->restart_at = now + wait;
                if (i < d->want) {
                    alog(AL_WARNING, "deployment %s: replica %d (port %d) %s %d; starting it "
                         "again in %d s", d->id, i, r->port,
                         WIFEXITED(status) ? "exited with status" : "was killed by signal",
                         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), wait);
                }
            }
        }
    }
    /* The replicas whose health check is due, every deployment's in one
     * round (svc_agent_probe.c says why). */
    for (d = deps; d; d = d->next) {
        converge(d);
    }
    if ((due = due_replicas(now, &n)) != NULL) {
        probe_health(due->probes, n);
        for (i = 0; i < n; i++) {
            replica_t *r = due->reps[i];
            /* Not probed (the agent is stopping): nothing learnt of it. */
            if (due->probes[i].ms < 0) {
                continue;
            }
            r->healthy = due->probes[i].ok;
            r->next_check = now + (r->healthy ? CHECK_HEALTHY : CHECK_STARTING);
        }
        round_free(due);
    }
    for (d = deps; d; d = next) {
        int up = 0;
        next = d->next;
        for (i = 0; i < d->want; i++) {
            replica_t *r = &d->reps[i];
            up += r->pid && r->healthy;
        }
        if (d->work_id && up == d->want) {
            char *w = d->work_id;
            d->work_id = NULL;
            finish(w, NULL, NULL, workload(d));
            free(w);
        }
        else if (d->work_id && now >= d->work_deadline) {
            char *w = d->work_id, *why = NULL;
            const char *code = "health_check_failed";
            for (i = 0; i < d->want && !why; i++) {
                replica_t *r = &d->reps[i];
                if (r->restarts_total > 0 && r->last_status >= 0) {
                    code = "replica_exited";
                    why = xprintf("replica %d (port %d) %s %d, %d time(s); its log is "
                                  "%s/deployments/%s/logs/replica-%d.log", i, r->port,
                                  WIFEXITED(r->last_status) ? "exited with status"
                                  : "was killed by signal",
                                  WIFEXITED(r->last_status) ? WEXITSTATUS(r->last_status)
                                  : WTERMSIG(r->last_status), r->restarts_total, conf.dir,
                                  d->id, i);
                }
                else if (!r->healthy) {
                    why = xprintf("replica %d did not answer GET %s on port %d within %d s",
                                  i, d->health_path, r->port, conf.health_timeout);
                }
            }
            d->work_id = NULL;
            finish(w, code, why ? why : "the replicas did not become healthy in time",
                   workload(d));
            free(why);
            free(w);
        }
    }
}

void work_telemetry(void)
{
    telemetry(time(NULL));
}

json_t *work_workloads(void)
{
    json_t *all = json_object();
    dep_t *d;

    for (d = deps; d; d = d->next) {
        json_object_set_new(all, d->id, workload(d));
    }
    return all;
}

void work_shutdown(void)
{
    dep_t *d;

    for (d = deps; d; d = d->next) {
        stop_all(d);
    }
}
