/*
 * svc_secret.c: secrets given by reference (file:, env:, exec:), never
 * inline, so they stay out of configuration files and process listings.
 */
#include "svc_secret.h"

#include <apr_env.h>
#include <apr_file_io.h>
#include <apr_file_info.h>
#include <apr_thread_proc.h>
#include <string.h>

/* Secrets bigger than this are not secrets but mistakes. */
#define SVC_SECRET_MAX 65536

static apr_status_t read_file_secret(const char **pv, apr_size_t *plen, const char *path,
                                     apr_pool_t *p, const char **perr)
{
    apr_finfo_t fi;
    apr_file_t *f;
    apr_status_t rv;
    char *buf;
    apr_size_t n;

    rv = apr_stat(&fi, path, APR_FINFO_PROT | APR_FINFO_SIZE | APR_FINFO_TYPE | APR_FINFO_USER,
                  p);
    if (rv != APR_SUCCESS) {
        *perr = apr_psprintf(p, "cannot read secret file %s", path);
        return rv;
    }
    if (fi.filetype != APR_REG) {
        *perr = apr_psprintf(p, "secret file %s is not a regular file", path);
        return APR_EINVAL;
    }
    /* Only the owner may write it and others may not read it. The group may
     * read it when root owns the file: the packages install the server secret
     * root:<httpd's group> 0640, so that svcctl run as httpd's user reads the
     * key the module reads (as root, in post_config). */
    if ((fi.protection & (APR_GWRITE | APR_WREAD | APR_WWRITE))
        || ((fi.protection & APR_GREAD) && fi.user != 0)) {
        *perr = apr_psprintf(p, "secret file %s is readable or writable by group or "
                             "others; chmod 600 it (or 640 if root owns it)", path);
        return APR_EACCES;
    }
    if (fi.size > SVC_SECRET_MAX) {
        *perr = apr_psprintf(p, "secret file %s is too large", path);
        return APR_EINVAL;
    }
    rv = apr_file_open(&f, path, APR_FOPEN_READ, 0, p);
    if (rv != APR_SUCCESS) {
        *perr = apr_psprintf(p, "cannot open secret file %s", path);
        return rv;
    }
    buf = apr_palloc(p, (apr_size_t)fi.size + 1);
    n = (apr_size_t)fi.size;
    rv = apr_file_read_full(f, buf, n, &n);
    apr_file_close(f);
    if (rv != APR_SUCCESS && !APR_STATUS_IS_EOF(rv)) {
        *perr = apr_psprintf(p, "cannot read secret file %s", path);
        return rv;
    }
    buf[n] = '\0';
    *pv = buf;
    *plen = n;
    return APR_SUCCESS;
}

static apr_status_t read_exec_secret(const char **pv, apr_size_t *plen, const char *prog,
                                     apr_pool_t *p, const char **perr)
{
    apr_procattr_t *attr;
    apr_proc_t proc;
    const char *argv[2];
    apr_status_t rv;
    char *buf = apr_palloc(p, SVC_SECRET_MAX + 1);
    apr_size_t n = 0, got;
    int code = 0;
    apr_exit_why_e why;

    argv[0] = prog;
    argv[1] = NULL;
    if ((rv = apr_procattr_create(&attr, p)) != APR_SUCCESS
        || (rv = apr_procattr_io_set(attr, APR_NO_PIPE, APR_FULL_BLOCK, APR_NO_PIPE))
           != APR_SUCCESS
        || (rv = apr_procattr_cmdtype_set(attr, APR_PROGRAM)) != APR_SUCCESS
        || (rv = apr_proc_create(&proc, prog, argv, NULL, attr, p)) != APR_SUCCESS) {
        *perr = apr_psprintf(p, "cannot run secret program %s", prog);
        return rv;
    }
    do {
        got = SVC_SECRET_MAX - n;
        rv = apr_file_read(proc.out, buf + n, &got);
        n += (rv == APR_SUCCESS) ? got : 0;
    } while (rv == APR_SUCCESS && n < SVC_SECRET_MAX);
    apr_file_close(proc.out);
    apr_proc_wait(&proc, &code, &why, APR_WAIT);
    if (!APR_PROC_CHECK_EXIT(why) || code != 0) {
        *perr = apr_psprintf(p, "secret program %s failed (exit %d)", prog, code);
        return APR_EGENERAL;
    }
    buf[n] = '\0';
    *pv = buf;
    *plen = n;
    return APR_SUCCESS;
}

apr_status_t svc_secret_read(const char **pvalue, apr_size_t *plen, const char *ref,
                             apr_pool_t *p, const char **perr)
{
    apr_status_t rv;
    const char *v = NULL;
    apr_size_t n = 0;

    if (!ref || !*ref) {
        *perr = "no secret reference given";
        return APR_EINVAL;
    }
    if (strncmp(ref, "file:", 5) == 0) {
        rv = read_file_secret(&v, &n, ref + 5, p, perr);
    }
    else if (strncmp(ref, "exec:", 5) == 0) {
        rv = read_exec_secret(&v, &n, ref + 5, p, perr);
    }
    else if (strncmp(ref, "env:", 4) == 0) {
        char *ev = NULL;
        rv = apr_env_get(&ev, ref + 4, p);
        if (rv != APR_SUCCESS || !ev) {
            *perr = apr_psprintf(p, "environment variable %s is not set", ref + 4);
            return APR_EINVAL;
        }
        v = ev;
        n = strlen(ev);
    }
    else {
        *perr = "a secret must be given by reference: file:/path, env:NAME or exec:/program "
                "(never inline)";
        return APR_EINVAL;
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    /* A trailing newline from an editor or `echo` is not part of the secret. */
    while (n > 0 && (v[n - 1] == '\n' || v[n - 1] == '\r')) {
        n--;
    }
    if (n == 0) {
        *perr = "the secret is empty";
        return APR_EINVAL;
    }
    *pvalue = apr_pstrmemdup(p, v, n);
    *plen = n;
    return APR_SUCCESS;
}

int svc_secret_is_ref(const char *s)
{
    return strncmp(s, "env:", 4) == 0 || strncmp(s, "file:", 5) == 0
        || strncmp(s, "exec:", 5) == 0;
}

apr_status_t svc_setting_resolve(const char **pv, const char *ref, const char *what,
                                 apr_pool_t *p, const char **pabsent, const char **perr)
{
    apr_size_t n;
    apr_status_t rv;

    *pv = NULL;
    if (!ref) {
        *pabsent = apr_pstrcat(p, what, " is not set", NULL);
        return APR_SUCCESS;
    }
    if (strncmp(ref, "env:", 4) == 0) {
        char *v = NULL;
        /* Unset is how an operator leaves an optional feature off. */
        if (apr_env_get(&v, ref + 4, p) != APR_SUCCESS || !v || !*v) {
            *pabsent = apr_pstrcat(p, "environment variable ", ref + 4, " (", what,
                                   ") is not set", NULL);
            return APR_SUCCESS;
        }
    }
    if (!svc_secret_is_ref(ref)) {
        *pv = ref;
        return APR_SUCCESS;
    }
    rv = svc_secret_read(pv, &n, ref, p, perr);
    if (rv != APR_SUCCESS) {
        *perr = apr_pstrcat(p, what, ": ", *perr, NULL);
    }
    return rv;
}
