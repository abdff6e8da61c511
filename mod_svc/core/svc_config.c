/*
 * svc_config.c: defaults, rate classes, and secrets given by reference.
 */
#include "svc_config.h"
#include "svc_crypto.h"

#include <apr_env.h>
#include <apr_file_io.h>
#include <apr_file_info.h>
#include <apr_thread_proc.h>
#include <sodium.h>
#include <string.h>

/* Secrets bigger than this are not secrets but mistakes. */
#define SVC_SECRET_MAX 65536

void svc_config_defaults(svc_config_t *conf, apr_pool_t *p)
{
    memset(conf, 0, sizeof(*conf));
    conf->body_limit = 1024 * 1024;
    conf->token_touch_interval = 60;
    conf->session_lifetime = 7 * 24 * 3600;
    conf->statement_timeout_ms = 10000;
    conf->invite_lifetime = 14 * 24 * 3600;
    conf->rate_classes = apr_array_make(p, 4, sizeof(svc_rate_class_t));
    conf->internal_allow = apr_array_make(p, 2, sizeof(apr_ipsubnet_t *));
    conf->trusted_origins = apr_array_make(p, 2, sizeof(const char *));
    conf->signin_off = "SvcOAuthClientId and SvcOAuthClientSecret are not set";
    conf->vcs_web_url = "https://github.com";
    conf->vcs_api_url = "https://api.github.com";
    conf->ui_url = "/";
    conf->vcs_timeout_ms = 10000;
    conf->vcs_connect_timeout_ms = 3000;
}

void svc_config_default_rates(svc_config_t *conf, apr_pool_t *p)
{
    /* Token creation and revocation: SPEC says rate-limited; 20 a minute per user. */
    static const svc_rate_class_t defaults[] = {
        { "tokens", 20, 60 },
        /* Sign-in starts and callbacks, per client address: each writes a
         * row and the callback calls the provider. */
        { "signin", 60, 60 },
        { NULL, 0, 0 }
    };
    const svc_rate_class_t *d;
    int i, found;

    for (d = defaults; d->name; d++) {
        found = 0;
        for (i = 0; i < conf->rate_classes->nelts; i++) {
            found |= strcmp(APR_ARRAY_IDX(conf->rate_classes, i, svc_rate_class_t).name,
                            d->name) == 0;
        }
        if (!found) {
            svc_config_set_rate(conf, p, d->name, d->limit, d->period);
        }
    }
}

void svc_config_set_rate(svc_config_t *conf, apr_pool_t *p, const char *name,
                         int limit, int period)
{
    svc_rate_class_t *rc;
    int i;

    for (i = 0; i < conf->rate_classes->nelts; i++) {
        rc = &APR_ARRAY_IDX(conf->rate_classes, i, svc_rate_class_t);
        if (strcmp(rc->name, name) == 0) {
            rc->limit = limit;
            rc->period = period;
            return;
        }
    }
    rc = apr_array_push(conf->rate_classes);
    rc->name = apr_pstrdup(p, name);
    rc->limit = limit;
    rc->period = period;
}

const svc_rate_class_t *svc_config_rate(const svc_config_t *conf, const char *name)
{
    int i;

    for (i = 0; name && i < conf->rate_classes->nelts; i++) {
        const svc_rate_class_t *rc = &APR_ARRAY_IDX(conf->rate_classes, i, svc_rate_class_t);
        if (strcmp(rc->name, name) == 0) {
            return rc->limit > 0 ? rc : NULL;
        }
    }
    return NULL;
}

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

apr_status_t svc_config_load_secret(svc_config_t *conf, const char *ref, apr_pool_t *p,
                                    const char **perr)
{
    unsigned char master[crypto_kdf_KEYBYTES];
    const char *v;
    apr_size_t n;
    apr_status_t rv;

    rv = svc_secret_read(&v, &n, ref, p, perr);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (n < 32) {
        *perr = "the server secret must be at least 32 bytes (e.g. 64 hex characters)";
        return APR_EINVAL;
    }
    /* Whatever the secret's form, the master key is its hash; the sub-keys
     * are independent of each other, so one use can never forge another. */
    crypto_generichash(master, sizeof(master), (const unsigned char *)v, n, NULL, 0);
    crypto_kdf_derive_from_key(conf->pat_key, SVC_KEY_BYTES, 1, "svc_pat_", master);
    crypto_kdf_derive_from_key(conf->session_key, SVC_KEY_BYTES, 2, "svc_sess", master);
    crypto_kdf_derive_from_key(conf->box_key, SVC_KEY_BYTES, 3, "svc_box_", master);
    crypto_kdf_derive_from_key(conf->signin_key, SVC_KEY_BYTES, 4, "svc_sign", master);
    sodium_memzero(master, sizeof(master));
    sodium_memzero((void *)v, n);
    conf->have_secret = 1;
    return APR_SUCCESS;
}
