/*
 * Running git for the factory: fork and exec with an argv array (never a
 * shell), in an environment built from nothing, so no configuration of the
 * host or of whoever ran the supervisor is read, and no hook, fsmonitor or
 * signing program of a repository's configuration runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "svc_factory.h"

#define STDERR_KEEP (16 * 1024)
#define ARGS_MAX    32

static char *env_entry(const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 2;
    char *e = malloc(n);

    if (e) {
        snprintf(e, n, "%s=%s", name, value);
    }
    return e;
}

int svc_factory_git_init(svc_factory_git_t *pgit, const svc_factory_task_t *task,
                         const char *home, svc_factory_err_t *perr)
{
    const char *path = getenv("PATH");
    const char *pairs[][2] = {
        { "PATH", path && *path ? path : "/usr/local/bin:/usr/bin:/bin" },
        { "HOME", home },
        { "XDG_CONFIG_HOME", home },
        { "GIT_CONFIG_NOSYSTEM", "1" },
        { "GIT_CONFIG_GLOBAL", "/dev/null" },
        { "GIT_ATTR_NOSYSTEM", "1" },
        { "GIT_AUTHOR_NAME", task->author_name },
        { "GIT_AUTHOR_EMAIL", task->author_email },
        { "GIT_COMMITTER_NAME", task->author_name },
        { "GIT_COMMITTER_EMAIL", task->author_email },
        { "GIT_TERMINAL_PROMPT", "0" },
        /* A path like "*.md" is a file name, never a pattern. */
        { "GIT_LITERAL_PATHSPECS", "1" },
        { "LC_ALL", "C" },
        { "TZ", "UTC" },
    };
    size_t n = sizeof(pairs) / sizeof(pairs[0]), i;
    int rv = -1;

    memset(pgit, 0, sizeof(*pgit));
    pgit->env = calloc(n + 1, sizeof(*pgit->env));
    if (!pgit->env) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    for (i = 0; i < n; i++) {
        pgit->env[i] = env_entry(pairs[i][0], pairs[i][1]);
        if (!pgit->env[i]) {
            svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
            goto cleanup;
        }
    }
    /* The workspace may belong to another uid than the sandbox's; the run
     * owns it all the same. */
    pgit->safe_dir = env_entry("safe.directory", task->repo);
    if (!pgit->safe_dir) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    rv = 0;
cleanup:
    if (rv < 0) {
        svc_factory_git_free(pgit);
    }
    return rv;
}

void svc_factory_git_free(svc_factory_git_t *git)
{
    size_t i;

    for (i = 0; git->env && git->env[i]; i++) {
        free(git->env[i]);
    }
    free(git->env);
    free(git->safe_dir);
    memset(git, 0, sizeof(*git));
}

static void close_fd(int *pfd)
{
    if (*pfd >= 0) {
        close(*pfd);
        *pfd = -1;
    }
}

/* Appends what can be read from *pfd to buf, keeping at most max bytes
 * (the rest is read and dropped, so git never blocks on a full pipe);
 * closes *pfd at its end. */
static int drain(int *pfd, svc_factory_buf_t *buf, size_t max, int *ptruncated)
{
    char chunk[8192];
    ssize_t n = read(*pfd, chunk, sizeof(chunk));

    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) {
            return 0;
        }
        close_fd(pfd);
        return -1;
    }
    if (n == 0) {
        close_fd(pfd);
        return 0;
    }
    if (buf->len < max) {
        size_t keep = (size_t)n < max - buf->len ? (size_t)n : max - buf->len;

        svc_factory_buf_add(buf, chunk, keep);
        if (keep < (size_t)n && ptruncated) {
            *ptruncated = 1;
        }
    }
    else if (ptruncated) {
        *ptruncated = 1;
    }
    return 0;
}

int svc_factory_git_run(svc_factory_git_t *git, const char *dir, const char *const *args,
                        const char *in, size_t in_len, char **pout, size_t *pout_len,
                        size_t out_max, int *ptruncated, svc_factory_err_t *perr)
{
    const char *argv[ARGS_MAX];
    int in_p[2] = { -1, -1 }, out_p[2] = { -1, -1 }, err_p[2] = { -1, -1 };
    svc_factory_buf_t out = { 0 }, err = { 0 };
    size_t argc = 0, i, written = 0;
    int status = 0, truncated = 0;
    pid_t pid = -1;
    int rv = -1;

    if (pout) {
        *pout = NULL;
        *pout_len = 0;
    }
    argv[argc++] = "git";
    if (dir) {
        argv[argc++] = "-C";
        argv[argc++] = dir;
    }
    argv[argc++] = "-c";
    argv[argc++] = "core.hooksPath=/dev/null";
    argv[argc++] = "-c";
    argv[argc++] = "core.fsmonitor=false";
    argv[argc++] = "-c";
    argv[argc++] = "commit.gpgSign=false";
    argv[argc++] = "-c";
    argv[argc++] = "core.autocrlf=false";
    argv[argc++] = "-c";
    argv[argc++] = git->safe_dir;
    for (i = 0; args[i]; i++) {
        if (argc + 1 >= ARGS_MAX) {
            return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "too many git arguments");
        }
        argv[argc++] = args[i];
    }
    argv[argc] = NULL;

    if ((in && pipe2(in_p, O_CLOEXEC) < 0) || pipe2(out_p, O_CLOEXEC) < 0
        || pipe2(err_p, O_CLOEXEC) < 0) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "pipe: %s", strerror(errno));
        goto cleanup;
    }
    pid = fork();
    if (pid < 0) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "fork: %s", strerror(errno));
        goto cleanup;
    }
    if (pid == 0) {
        int null_fd = in ? in_p[0] : open("/dev/null", O_RDONLY | O_CLOEXEC);

        /* The protocol's stdin and stdout are the supervisor's, never git's. */
        if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out_p[1], 1) < 0
            || dup2(err_p[1], 2) < 0) {
            _exit(127);
        }
        signal(SIGPIPE, SIG_DFL);
        execvpe("git", (char *const *)argv, git->env);
        dprintf(2, "cannot run git: %s\n", strerror(errno));
        _exit(127);
    }
    close_fd(&in_p[0]);
    close_fd(&out_p[1]);
    close_fd(&err_p[1]);
    if (in_p[1] >= 0 && fcntl(in_p[1], F_SETFL, O_NONBLOCK) < 0) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "fcntl: %s", strerror(errno));
        goto cleanup;
    }
    if (in_p[1] >= 0 && in_len == 0) {
        close_fd(&in_p[1]);
    }

    while (in_p[1] >= 0 || out_p[0] >= 0 || err_p[0] >= 0) {
        struct pollfd fds[3];
        nfds_t nfds = 0;

        if (in_p[1] >= 0) {
            fds[nfds].fd = in_p[1];
            fds[nfds++].events = POLLOUT;
        }
        if (out_p[0] >= 0) {
            fds[nfds].fd = out_p[0];
            fds[nfds++].events = POLLIN;
        }
        if (err_p[0] >= 0) {
            fds[nfds].fd = err_p[0];
            fds[nfds++].events = POLLIN;
        }
        if (poll(fds, nfds, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "poll: %s", strerror(errno));
            goto cleanup;
        }
        for (i = 0; i < nfds; i++) {
            if (!fds[i].revents) {
                continue;
            }
            if (fds[i].fd == in_p[1]) {
                ssize_t n = write(in_p[1], in + written, in_len - written);

                if (n < 0 && errno != EINTR && errno != EAGAIN) {
                    /* git stopped reading (it will say why on stderr). */
                    close_fd(&in_p[1]);
                }
                else if (n > 0) {
                    written += (size_t)n;
                    if (written == in_len) {
                        close_fd(&in_p[1]);
                    }
                }
            }
            else if (fds[i].fd == out_p[0]) {
                drain(&out_p[0], &out, out_max, &truncated);
            }
            else if (fds[i].fd == err_p[0]) {
                drain(&err_p[0], &err, STDERR_KEEP, NULL);
            }
        }
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "waitpid: %s", strerror(errno));
            goto cleanup;
        }
    }
    pid = -1;
    if (out.failed || err.failed) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    if (err.len) {
        svc_factory_log_lines("git: ", err.data, err.len);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const char *tail = err.len > 600 ? err.data + err.len - 600 : (err.data ? err.data : "");

        if (WIFEXITED(status)) {
            svc_factory_fail(perr, SVC_FACTORY_E_GIT, "git %s failed (exit %d): %s", args[0],
                             WEXITSTATUS(status), tail);
        }
        else {
            svc_factory_fail(perr, SVC_FACTORY_E_GIT, "git %s was killed by signal %d", args[0],
                             WTERMSIG(status));
        }
        goto cleanup;
    }
    if (pout) {
        *pout = out.data ? out.data : calloc(1, 1);
        if (!*pout) {
            svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
            goto cleanup;
        }
        *pout_len = out.len;
        out.data = NULL;
    }
    if (ptruncated) {
        *ptruncated = truncated;
    }
    rv = 0;
cleanup:
    close_fd(&in_p[0]);
    close_fd(&in_p[1]);
    close_fd(&out_p[0]);
    close_fd(&out_p[1]);
    close_fd(&err_p[0]);
    close_fd(&err_p[1]);
    if (pid > 0) {
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    svc_factory_buf_free(&out);
    svc_factory_buf_free(&err);
    return rv;
}
