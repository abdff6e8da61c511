/*
 * The agent's `run` tool: one shell command in the repository, inside the
 * factory's own sandbox (no network, the run's resource limits, which every
 * process inherits), with a time limit of its own. Its output (stdout and
 * stderr together, as a terminal would show them) goes to the run's log as
 * it comes, and its last bytes to the model.
 *
 * Nothing a command starts outlives its step: the command is the leader of
 * a new session and process group, and the factory is the "child
 * subreaper" of everything below it (PR_SET_CHILD_SUBREAPER), so a process
 * that leaves the group (setsid, a double fork) is still a descendant of
 * the factory. When the command ends, or its time is up, the group is
 * killed, then every descendant still alive, until none is left.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "svc_factory.h"

/* Bytes of a log line of output (the protocol's line is at most 4 KiB). */
#define OUT_LINE_MAX 2048
/* What is read after the command ended, from what it left in the pipe. */
#define DRAIN_MAX    (1024 * 1024)
#define SWEEP_ROUNDS 100
#define LOG_PREFIX   "| "

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void svc_factory_run_init(void)
{
    /* Orphans of the commands become our children, not the sandbox's init's:
     * then none can hide from the sweep. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    /* The commands run as our uid: without this, one could open
     * /proc/<factory>/fd/1 and write protocol lines of its own. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* The parent of process pid (from /proc/pid/stat), or -1; *pzombie when
 * it has ended and waits to be reaped. */
static pid_t parent_of(const char *pid, int *pzombie)
{
    char path[300], buf[512];
    const char *close_paren;
    ssize_t n;
    int fd;
    long ppid;
    char state;

    snprintf(path, sizeof(path), "/proc/%s/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return -1;
    }
    buf[n] = '\0';
    /* "pid (comm) state ppid ...": comm may hold spaces and parentheses. */
    close_paren = strrchr(buf, ')');
    if (!close_paren || sscanf(close_paren + 1, " %c %ld", &state, &ppid) != 2) {
        return -1;
    }
    *pzombie = state == 'Z' || state == 'X';
    return (pid_t)ppid;
}

/*
 * Kills every descendant of this process with SIGKILL and reaps what
 * becomes our child, until none is left alive. Returns how many were
 * alive when it started (what the command left behind).
 */
static int sweep(void)
{
    pid_t me = getpid();
    int found = 0, round;

    for (round = 0; round < SWEEP_ROUNDS; round++) {
        pid_t *pids = NULL, *ppids = NULL, *mine = NULL;
        char *zombie = NULL;
        size_t n = 0, cap = 0, nmine = 0, alive = 0, i, j;
        struct dirent *de;
        DIR *d = opendir("/proc");
        int status, grew;

        if (!d) {
            break;
        }
        while ((de = readdir(d)) != NULL) {
            pid_t pp;
            int z = 0;

            if (de->d_name[0] < '1' || de->d_name[0] > '9') {
                continue;
            }
            if ((pp = parent_of(de->d_name, &z)) < 0) {
                continue;
            }
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 256;
                pid_t *a = realloc(pids, nc * sizeof(*a)), *b;
                char *c;

                if (!a) {
                    break;
                }
                pids = a;
                b = realloc(ppids, nc * sizeof(*b));
                if (!b) {
                    break;
                }
                ppids = b;
                c = realloc(zombie, nc);
                if (!c) {
                    break;
                }
                zombie = c;
                cap = nc;
            }
            pids[n] = (pid_t)atol(de->d_name);
            ppids[n] = pp;
            zombie[n] = (char)z;
            n++;
        }
        closedir(d);
        mine = n ? calloc(n, sizeof(*mine)) : NULL;
        /* The descendants: our children, theirs, and so on. */
        do {
            grew = 0;
            for (i = 0; i < n; i++) {
                int known = pids[i] == me;

                for (j = 0; j < nmine && !known; j++) {
                    known = mine[j] == pids[i];
                }
                if (known) {
                    continue;
                }
                for (j = 0; j < nmine && ppids[i] != me; j++) {
                    if (ppids[i] == mine[j]) {
                        break;
                    }
                }
                if (ppids[i] == me || j < nmine) {
                    mine[nmine++] = pids[i];
                    grew = 1;
                    /* A zombie is dead already: reaped below, or by us
                     * once its parent is gone. */
                    if (!zombie[i]) {
                        kill(pids[i], SIGKILL);
                        alive++;
                    }
                }
            }
        } while (grew && mine);
        free(pids);
        free(ppids);
        free(zombie);
        free(mine);
        while (waitpid(-1, &status, WNOHANG) > 0) {
        }
        if (round == 0) {
            found = (int)alive;
        }
        if (alive == 0) {
            break;
        }
        poll(NULL, 0, 10);
    }
    return found;
}

/* Keeps the last SVC_FACTORY_RUN_TAIL bytes of the output. */
static void tail_add(svc_factory_run_t *res, const char *data, size_t len)
{
    size_t keep = SVC_FACTORY_RUN_TAIL;

    res->total += len;
    if (len >= keep) {
        memcpy(res->tail, data + len - keep, keep);
        res->tail_len = keep;
        return;
    }
    if (res->tail_len + len > keep) {
        size_t drop = res->tail_len + len - keep;

        memmove(res->tail, res->tail + drop, res->tail_len - drop);
        res->tail_len -= drop;
    }
    memcpy(res->tail + res->tail_len, data, len);
    res->tail_len += len;
}

/* Output to the run's log, line by line (long lines in pieces). */
static void log_add(svc_factory_buf_t *partial, const char *data, size_t len, int eof)
{
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t n = nl ? (size_t)(nl - data) : len;
        size_t room = OUT_LINE_MAX - partial->len;

        if (n >= room) {
            svc_factory_buf_add(partial, data, room);
            svc_factory_log_lines(LOG_PREFIX, partial->data, partial->len);
            partial->len = 0;
            data += room;
            len -= room;
            continue;
        }
        svc_factory_buf_add(partial, data, n);
        if (!nl) {
            break;
        }
        if (partial->len == 0) {
            svc_factory_log("%s", LOG_PREFIX);
        }
        else {
            svc_factory_log_lines(LOG_PREFIX, partial->data, partial->len);
        }
        partial->len = 0;
        data += n + 1;
        len -= n + 1;
    }
    if (eof && partial->len > 0) {
        svc_factory_log_lines(LOG_PREFIX, partial->data, partial->len);
        partial->len = 0;
    }
}

static void read_out(int *pfd, svc_factory_run_t *res, svc_factory_buf_t *partial, size_t max)
{
    char chunk[16384];
    size_t got = 0;

    while (*pfd >= 0 && got < max) {
        ssize_t n = read(*pfd, chunk, sizeof(chunk));

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0 || errno != EAGAIN) {
                close(*pfd);
                *pfd = -1;
            }
            return;
        }
        got += (size_t)n;
        tail_add(res, chunk, (size_t)n);
        log_add(partial, chunk, (size_t)n, 0);
    }
}

int svc_factory_run(svc_factory_run_t *res, const char *command, const char *cwd,
                    int timeout_s, char *const *envp, svc_factory_err_t *perr)
{
    svc_factory_buf_t partial = { 0 };
    int out[2] = { -1, -1 };
    long start = now_ms(), deadline = start + (long)timeout_s * 1000;
    pid_t pid;
    int status = 0, exited = 0;

    memset(res, 0, sizeof(*res));
    res->exit_status = -1;
    res->tail = malloc(SVC_FACTORY_RUN_TAIL + 1);
    if (!res->tail) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
    }
    if (pipe2(out, O_CLOEXEC) < 0) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "pipe: %s", strerror(errno));
    }
    pid = fork();
    if (pid < 0) {
        close(out[0]);
        close(out[1]);
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        const char *argv[] = { "sh", "-c", command, NULL };
        int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

        /* A session and a process group of its own, which the timeout
         * kills whole; never the protocol's stdin or stdout. */
        setsid();
        if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out[1], 1) < 0 || dup2(out[1], 2) < 0
            || chdir(cwd) < 0) {
            dprintf(out[1], "cannot start the command: %s\n", strerror(errno));
            _exit(127);
        }
        /* We ignore SIGPIPE; the command gets the usual behaviour. */
        signal(SIGPIPE, SIG_DFL);
        prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
        execve("/bin/sh", (char *const *)argv, envp);
        dprintf(2, "cannot run /bin/sh: %s\n", strerror(errno));
        _exit(127);
    }
    close(out[1]);
    fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);

    for (;;) {
        struct pollfd pfd = { out[0], POLLIN, 0 };
        long now = now_ms(), wait = deadline - now;
        pid_t w;

        if (wait <= 0) {
            res->timed_out = 1;
            break;
        }
        if (out[0] >= 0) {
            poll(&pfd, 1, wait < 100 ? (int)wait : 100);
            read_out(&out[0], res, &partial, SIZE_MAX);
        }
        else {
            poll(NULL, 0, wait < 100 ? (int)wait : 100);
        }
        w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            exited = 1;
            break;
        }
        if (w < 0 && errno != EINTR) {
            break;
        }
    }
    /* What the command wrote before it ended is still in the pipe; a
     * process it left behind may keep writing, so not forever. */
    if (exited && out[0] >= 0) {
        read_out(&out[0], res, &partial, DRAIN_MAX);
    }
    if (!exited) {
        kill(-pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    /* After a timeout, what the group's kill has not finished yet would
     * count as left behind: only a command that ended has leftovers. */
    res->leftovers = sweep();
    if (!exited) {
        res->leftovers = 0;
    }
    kill(-pid, SIGKILL);
    if (out[0] >= 0) {
        read_out(&out[0], res, &partial, DRAIN_MAX);
        close(out[0]);
    }
    log_add(&partial, "", 0, 1);
    svc_factory_buf_free(&partial);
    res->tail[res->tail_len] = '\0';
    res->duration_ms = now_ms() - start;
    if (res->timed_out) {
        res->exit_status = -1;
    }
    else if (WIFEXITED(status)) {
        res->exit_status = WEXITSTATUS(status);
    }
    else if (WIFSIGNALED(status)) {
        res->signal = WTERMSIG(status);
    }
    return 0;
}

void svc_factory_run_free(svc_factory_run_t *res)
{
    free(res->tail);
    res->tail = NULL;
}
