/*
 * svc_workspace.c: making, reading and removing runs' workspaces without
 * trusting their contents (svc_workspace.h).
 */
#include "svc_workspace.h"

#include <apr_lib.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Deeper trees than this are left behind (and reported): no recursion
 * without a bound. */
#define RM_DEPTH_MAX 256

static int rm_at(int dirfd, const char *name, int depth);

/* Empties the directory open as fd (which it closes). */
static int rm_contents(int fd, int depth)
{
    DIR *d;
    struct dirent *de;
    int failed = 0;

    /* Our uid owns everything in it; modes the runner set do not stop us. */
    fchmod(fd, S_IRWXU);
    d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }
        if (rm_at(dirfd(d), de->d_name, depth + 1) < 0) {
            failed = 1;
        }
    }
    closedir(d);
    return failed ? -1 : 0;
}

static int rm_at(int dirfd, const char *name, int depth)
{
    struct stat st;
    int fd;

    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        return errno == ENOENT ? 0 : -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        return unlinkat(dirfd, name, 0) == 0 || errno == ENOENT ? 0 : -1;
    }
    if (depth > RM_DEPTH_MAX) {
        return -1;
    }
    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        /* A directory without read permission: give it back to us. */
        if (errno != EACCES || fchmodat(dirfd, name, S_IRWXU, 0) < 0
            || (fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
            return -1;
        }
    }
    if (rm_contents(fd, depth) < 0) {
        return -1;
    }
    return unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

apr_status_t svc_workspace_remove(const char *path)
{
    return rm_at(AT_FDCWD, path, 0) == 0 ? APR_SUCCESS : APR_EGENERAL;
}

apr_status_t svc_workspace_make(apr_pool_t *p, const char *work_dir, const char *run_id,
                                const char **ppath)
{
    const char *path = apr_pstrcat(p, work_dir, "/", run_id, NULL);

    if (svc_workspace_remove(path) != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    if (mkdir(path, S_IRWXU) < 0) {
        return errno;
    }
    *ppath = path;
    return APR_SUCCESS;
}

apr_status_t svc_workspace_fresh_dir(const char *workspace, const char *name)
{
    int fd = open(workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    apr_status_t rv = APR_SUCCESS;

    if (fd < 0) {
        return errno;
    }
    if (rm_at(fd, name, 1) < 0) {
        rv = APR_EGENERAL;
    }
    else if (mkdirat(fd, name, S_IRWXU) < 0) {
        rv = errno;
    }
    close(fd);
    return rv;
}

apr_status_t svc_workspace_read(apr_pool_t *p, const char *workspace, const char *dir,
                                const char *name, apr_size_t max,
                                unsigned char **pdata, apr_size_t *plen)
{
    int wfd = -1, dfd = -1, fd = -1;
    apr_status_t rv = APR_SUCCESS;
    unsigned char *buf;
    apr_size_t got = 0;
    struct stat st;

    if ((wfd = open(workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0
        || (dfd = openat(wfd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0
        || (fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0
        || fstat(fd, &st) < 0) {
        rv = errno;
        goto cleanup;
    }
    if (!S_ISREG(st.st_mode)) {
        rv = APR_EINVAL;
        goto cleanup;
    }
    if ((apr_size_t)st.st_size > max) {
        rv = APR_ENOSPC;
        goto cleanup;
    }
    buf = apr_palloc(p, (apr_size_t)st.st_size + 1);
    while (got < (apr_size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (apr_size_t)st.st_size - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            rv = n < 0 ? errno : APR_EOF;
            goto cleanup;
        }
        got += (apr_size_t)n;
    }
    *pdata = buf;
    *plen = got;
cleanup:
    if (fd >= 0) {
        close(fd);
    }
    if (dfd >= 0) {
        close(dfd);
    }
    if (wfd >= 0) {
        close(wfd);
    }
    return rv;
}

apr_array_header_t *svc_workspace_list(apr_pool_t *p, const char *work_dir)
{
    apr_array_header_t *names = apr_array_make(p, 8, sizeof(const char *));
    struct dirent *de;
    DIR *d = opendir(work_dir);

    if (!d) {
        return names;
    }
    while ((de = readdir(d)) != NULL) {
        const char *c;

        if (strncmp(de->d_name, "run_", 4) != 0 || !de->d_name[4]) {
            continue;
        }
        for (c = de->d_name + 4; *c && apr_isalnum(*c); c++) {
        }
        if (!*c) {
            APR_ARRAY_PUSH(names, const char *) = apr_pstrdup(p, de->d_name);
        }
    }
    closedir(d);
    return names;
}

int svc_git_id_valid(const char *s, apr_size_t n)
{
    apr_size_t i;

    if (n != 40 && n != 64) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return 0;
        }
    }
    return 1;
}

const char *svc_bundle_head(apr_pool_t *p, const unsigned char *data, apr_size_t len,
                            const char *ref)
{
    const char *s = (const char *)data;
    const char *end = s + len;
    apr_size_t rlen = strlen(ref);

    if (len < 16 || (memcmp(s, "# v2 git bundle\n", 16) != 0
                     && memcmp(s, "# v3 git bundle\n", 16) != 0)) {
        return NULL;
    }
    s += 16;
    /* Capabilities (v3), prerequisites, then "<id> <ref>" lines, up to an
     * empty line. */
    while (s < end && *s != '\n') {
        const char *nl = memchr(s, '\n', (apr_size_t)(end - s));
        const char *sp;

        if (!nl) {
            return NULL;
        }
        sp = memchr(s, ' ', (apr_size_t)(nl - s));
        if (*s != '@' && *s != '-' && sp && svc_git_id_valid(s, (apr_size_t)(sp - s))
            && (apr_size_t)(nl - sp - 1) == rlen && memcmp(sp + 1, ref, rlen) == 0) {
            return apr_pstrmemdup(p, s, (apr_size_t)(sp - s));
        }
        s = nl + 1;
    }
    return NULL;
}
