/*
 * Writing the model's files into the repository without following a
 * symbolic link anywhere. The repository may come from a clone of anything,
 * so a planted `docs -> /etc` must not turn `docs/x` into /etc/x: every
 * component is opened relative to its parent with O_NOFOLLOW, directories
 * with O_DIRECTORY, and a file that exists must be a plain file with no
 * other hard link (else writing it would change a file elsewhere).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "svc_factory.h"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

int svc_factory_open_repo(int *pfd, const char *repo, svc_factory_err_t *perr)
{
    int fd = open(repo, DIR_FLAGS);

    if (fd < 0) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "cannot open the repository %s: "
                                "%s", repo, strerror(errno));
    }
    *pfd = fd;
    return 0;
}

/* Why an open of a component failed, as a path_refused when the cause is
 * what is on disk, otherwise internal. */
static int refuse(svc_factory_err_t *perr, const char *path, const char *comp, int err)
{
    if (err == ENAMETOOLONG) {
        return svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s': '%s' is too long a name "
                                "here", path, comp);
    }
    if (err == ELOOP || err == ENOTDIR || err == EISDIR || err == ENXIO || err == EMLINK) {
        return svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s': '%s' is a symbolic link "
                                "or not a %s", path, comp,
                                err == EISDIR || err == ENXIO ? "plain file" : "directory");
    }
    return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "path '%s': '%s': %s", path, comp,
                            strerror(err));
}

int svc_factory_walk(int *pdirfd, const char **pname, int rootfd, const char *path, char *copy,
                     int create, svc_factory_err_t *perr)
{
    char *comp = copy, *slash;
    int dirfd = rootfd;
    int rv = -1;

    *pdirfd = -1;
    *pname = NULL;
    if (strlen(path) > SVC_FACTORY_PATH_MAX) {
        return svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%.200s...' is too long", path);
    }
    strcpy(copy, path);
    while ((slash = strchr(comp, '/')) != NULL) {
        int next;

        *slash = '\0';
        next = openat(dirfd, comp, DIR_FLAGS);
        if (next < 0 && errno == ENOENT && !create) {
            rv = 0;
            goto cleanup;
        }
        if (next < 0 && errno == ENOENT) {
            if (mkdirat(dirfd, comp, 0755) < 0 && errno != EEXIST) {
                refuse(perr, path, comp, errno);
                goto cleanup;
            }
            next = openat(dirfd, comp, DIR_FLAGS);
        }
        if (next < 0) {
            refuse(perr, path, comp, errno);
            goto cleanup;
        }
        if (dirfd != rootfd) {
            close(dirfd);
        }
        dirfd = next;
        comp = slash + 1;
    }
    *pdirfd = dirfd;
    *pname = comp;
    dirfd = rootfd;
    rv = 0;
cleanup:
    if (dirfd != rootfd) {
        close(dirfd);
    }
    return rv;
}

/* The refusals of svc_factory_preflight for one file; a file or directory
 * that does not exist yet is fine. */
static int check_one(int rootfd, const svc_factory_file_t *f, char *copy,
                     svc_factory_err_t *perr)
{
    const char *name;
    struct stat st;
    int dirfd;

    if (svc_factory_walk(&dirfd, &name, rootfd, f->path, copy, 0, perr) < 0) {
        return -1;
    }
    if (dirfd < 0) {
        return 0;    /* a directory is missing: nothing below it exists */
    }
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        int err = errno;

        if (dirfd != rootfd) {
            close(dirfd);
        }
        if (err == ENOENT) {
            return 0;
        }
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "path '%s': %s", f->path,
                                strerror(err));
    }
    if (dirfd != rootfd) {
        close(dirfd);
    }
    if (S_ISLNK(st.st_mode)) {
        return svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' is a symbolic link",
                                f->path);
    }
    if (!S_ISREG(st.st_mode)) {
        return svc_factory_fail(perr, SVC_FACTORY_E_PATH,
                                "path '%s' exists and is not a plain file", f->path);
    }
    if (st.st_nlink > 1) {
        return svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' has other hard links",
                                f->path);
    }
    return 0;
}

typedef int file_fn(int rootfd, const svc_factory_file_t *f, char *copy,
                    svc_factory_err_t *perr);

/* fn on each file of the reply in turn, with one buffer for the walks,
 * until one fails. */
static int each_file(int rootfd, const svc_factory_reply_t *reply, file_fn *fn,
                     svc_factory_err_t *perr)
{
    char *copy = malloc(SVC_FACTORY_PATH_MAX + 1);
    size_t i;
    int rv = 0;

    if (!copy) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
    }
    for (i = 0; i < reply->nfiles && rv == 0; i++) {
        rv = fn(rootfd, &reply->files[i], copy, perr);
    }
    free(copy);
    return rv;
}

int svc_factory_preflight(int rootfd, const svc_factory_reply_t *reply,
                          svc_factory_err_t *perr)
{
    return each_file(rootfd, reply, check_one, perr);
}

static int write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static int write_one(int rootfd, const svc_factory_file_t *f, char *copy,
                     svc_factory_err_t *perr)
{
    const char *name;
    struct stat st;
    int dirfd = -1, fd = -1;
    int rv = -1;

    if (svc_factory_walk(&dirfd, &name, rootfd, f->path, copy, 1, perr) < 0) {
        return -1;
    }
    /* Not O_TRUNC: a file with another hard link must be refused before a
     * byte of it changes. O_NONBLOCK so a planted FIFO cannot block us. */
    fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
                0644);
    if (fd < 0) {
        refuse(perr, f->path, name, errno);
        goto cleanup;
    }
    if (fstat(fd, &st) < 0) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "path '%s': %s", f->path, strerror(errno));
        goto cleanup;
    }
    if (!S_ISREG(st.st_mode) || st.st_nlink > 1) {
        svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' is not a plain file with one link",
                         f->path);
        goto cleanup;
    }
    if (ftruncate(fd, 0) < 0 || write_all(fd, f->content, f->content_len) < 0) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "writing '%s': %s", f->path,
                         strerror(errno));
        goto cleanup;
    }
    if (close(fd) < 0) {
        fd = -1;
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "writing '%s': %s", f->path,
                         strerror(errno));
        goto cleanup;
    }
    fd = -1;
    rv = 0;
cleanup:
    if (fd >= 0) {
        close(fd);
    }
    if (dirfd >= 0 && dirfd != rootfd) {
        close(dirfd);
    }
    return rv;
}

/* A reply's files are logged as written; a tool's one file is not. */
static int write_logged(int rootfd, const svc_factory_file_t *f, char *copy,
                        svc_factory_err_t *perr)
{
    if (write_one(rootfd, f, copy, perr) < 0) {
        return -1;
    }
    svc_factory_log("wrote %s (%zu bytes)", f->path, f->content_len);
    return 0;
}

int svc_factory_write_files(int rootfd, const svc_factory_reply_t *reply,
                            svc_factory_err_t *perr)
{
    return each_file(rootfd, reply, write_logged, perr);
}

int svc_factory_write_path(int rootfd, const char *path, const char *content, size_t len,
                           svc_factory_err_t *perr)
{
    svc_factory_file_t f = { .path = path, .path_len = strlen(path), .content = content,
                             .content_len = len };
    svc_factory_reply_t one = { .files = &f, .nfiles = 1 };

    if (svc_factory_path_check(path, f.path_len, perr) < 0) {
        return -1;
    }
    return each_file(rootfd, &one, write_one, perr);
}

int svc_factory_read_path(int rootfd, const char *path, size_t max, char **pdata,
                          size_t *plen, svc_factory_err_t *perr)
{
    svc_factory_buf_t buf = { 0 };
    const char *name;
    struct stat st;
    char *copy = NULL;
    int dirfd = -1, fd = -1;
    int rv = -1;

    *pdata = NULL;
    *plen = 0;
    if (svc_factory_path_check(path, strlen(path), perr) < 0) {
        return -1;
    }
    copy = malloc(SVC_FACTORY_PATH_MAX + 1);
    if (!copy) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
    }
    if (svc_factory_walk(&dirfd, &name, rootfd, path, copy, 0, perr) < 0) {
        goto cleanup;
    }
    if (dirfd < 0) {
        svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' does not exist", path);
        goto cleanup;
    }
    /* O_NONBLOCK: a planted FIFO answers at once instead of blocking. */
    fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT) {
            svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' does not exist", path);
        }
        else {
            refuse(perr, path, name, errno);
        }
        goto cleanup;
    }
    if (fstat(fd, &st) < 0) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "path '%s': %s", path, strerror(errno));
        goto cleanup;
    }
    if (S_ISDIR(st.st_mode)) {
        svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' is a directory", path);
        goto cleanup;
    }
    if (!S_ISREG(st.st_mode)) {
        svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' is not a plain file", path);
        goto cleanup;
    }
    if ((unsigned long long)st.st_size > max) {
        svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' is %lld bytes, more than %zu",
                         path, (long long)st.st_size, max);
        goto cleanup;
    }
    for (;;) {
        char chunk[65536];
        ssize_t n = read(fd, chunk, sizeof(chunk));

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "reading '%s': %s", path,
                             strerror(errno));
            goto cleanup;
        }
        if (n == 0) {
            break;
        }
        if (buf.len + (size_t)n > max) {
            svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' is more than %zu bytes",
                             path, max);
            goto cleanup;
        }
        svc_factory_buf_add(&buf, chunk, (size_t)n);
    }
    if (buf.failed) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    *pdata = buf.data ? buf.data : calloc(1, 1);
    if (!*pdata) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    *plen = buf.len;
    buf.data = NULL;
    rv = 0;
cleanup:
    svc_factory_buf_free(&buf);
    if (fd >= 0) {
        close(fd);
    }
    if (dirfd >= 0 && dirfd != rootfd) {
        close(dirfd);
    }
    free(copy);
    return rv;
}
