/*
 * svc_bwrap.c: the start of a bubblewrap command line (svc_bwrap.h).
 */
#include "svc_bwrap.h"

#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

/* The top-level names a system keeps its programs and libraries under; each
 * is a symlink into /usr on merged-/usr systems, or a directory. */
static const char *const system_dirs[] = { "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                                           "/libx32", NULL };

static void push_three(svc_bwrap_push_fn *push, void *argv, const char *option,
                       const char *a, const char *b)
{
    push(argv, option);
    push(argv, a);
    push(argv, b);
}

void svc_bwrap_system(svc_bwrap_push_fn *push, void *argv, const char *bwrap, int share_net,
                      const char *const *etc_files)
{
    const char *const *d;
    char target[4096];
    struct stat st;

    push(argv, bwrap);
    push(argv, "--unshare-all");
    if (share_net) {
        push(argv, "--share-net");
    }
    push(argv, "--die-with-parent");
    push(argv, "--new-session");
    push_three(push, argv, "--ro-bind", "/usr", "/usr");
    for (d = system_dirs; *d; d++) {
        ssize_t n;

        if (lstat(*d, &st) < 0) {
            continue;
        }
        if (S_ISLNK(st.st_mode) && (n = readlink(*d, target, sizeof(target) - 1)) > 0) {
            target[n] = '\0';
            push_three(push, argv, "--symlink", target, *d);
        }
        else if (S_ISDIR(st.st_mode)) {
            push_three(push, argv, "--ro-bind", *d, *d);
        }
    }
    for (d = etc_files; d && *d; d++) {
        push_three(push, argv, "--ro-bind-try", *d, *d);
    }
    push(argv, "--proc");
    push(argv, "/proc");
    push(argv, "--dev");
    push(argv, "/dev");
    push(argv, "--tmpfs");
    push(argv, "/tmp");
}

void svc_bwrap_env(svc_bwrap_push_fn *push, void *argv, const char *home)
{
    push(argv, "--clearenv");
    push_three(push, argv, "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin");
    push_three(push, argv, "--setenv", "HOME", home);
    push_three(push, argv, "--setenv", "LANG", "C.UTF-8");
}
