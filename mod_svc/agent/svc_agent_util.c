/*
 * svc_agent_util.c: svc-agent's small tools: files written whole (a
 * temporary file renamed into place, so a crash never leaves half of one),
 * trees removed without following links, child processes.
 */
#define _GNU_SOURCE
#include "svc_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int mkdirs(const char *path, mode_t mode)
{
    char *p = xstrdup(path), *s;
    int rc = 0;

    for (s = p + 1; *s && rc == 0; s++) {
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, mode) < 0 && errno != EEXIST) {
                rc = -1;
            }
            *s = '/';
        }
    }
    if (rc == 0 && mkdir(p, mode) < 0 && errno != EEXIST) {
        rc = -1;
    }
    free(p);
    return rc;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP) {
        return rmdir(path) < 0 ? -1 : 0;
    }
    return unlink(path) < 0 ? -1 : 0;
}

int rmtree(const char *path)
{
    struct stat st;

    if (lstat(path, &st) < 0) {
        return errno == ENOENT ? 0 : -1;
    }
    /* Depth first, never following a link out of the tree. A workload may
     * have left a directory unreadable to us: make it ours again first. */
    if (S_ISDIR(st.st_mode)) {
        const char *const argv[] = { "chmod", "-R", "u+rwX", path, NULL };
        run_wait(argv, NULL);
    }
    return nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

int write_file(const char *path, const char *data, size_t len, mode_t mode)
{
    char *tmp = xprintf("%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    size_t at = 0;
    int rc = 0;

    if (fd < 0) {
        free(tmp);
        return -1;
    }
    while (at < len) {
        ssize_t n = write(fd, data + at, len - at);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            rc = -1;
            break;
        }
        at += (size_t)n;
    }
    if (fsync(fd) < 0 || close(fd) < 0) {
        rc = -1;
    }
    if (rc == 0 && (fchmodat(AT_FDCWD, tmp, mode, 0) < 0 || rename(tmp, path) < 0)) {
        rc = -1;
    }
    if (rc) {
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

char *read_file(const char *path, size_t max, size_t *plen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    char *buf = NULL;
    size_t len = 0;

    if (fd < 0) {
        return NULL;
    }
    buf = malloc(max + 1);
    while (buf && len < max) {
        ssize_t n = read(fd, buf + len, max - len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    if (buf) {
        buf[len] = '\0';
    }
    if (plen) {
        *plen = len;
    }
    return buf;
}

json_t *read_json(const char *path)
{
    json_error_t jerr;
    size_t len;
    char *text = read_file(path, 16 * 1024 * 1024, &len);
    json_t *v = text ? json_loadb(text, len, 0, &jerr) : NULL;

    free(text);
    return v;
}

int write_json(const char *path, const json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    int rc = text ? write_file(path, text, strlen(text), 0600) : -1;

    free(text);
    return rc;
}

int run_wait(const char *const argv[], const char *cwd)
{
    static const char *const envp[] = {
        "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/nonexistent",
        "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0", NULL
    };
    int status;
    pid_t pid = fork();

    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(2, 1);
        }
        if (cwd && chdir(cwd) < 0) {
            _exit(126);
        }
        closefrom(3);
        execvpe(argv[0], (char *const *)argv, (char *const *)envp);
        _exit(127);
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
