/*
 * svc_vcs_app.c: the App's configuration (six keys, from directives, the
 * environment or the wizard's credentials file), its JWTs, and the pieces
 * every App route shares.
 */
#include "svc_vcs_app.h"

#include <apr_file_info.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

const svc_vcs_key_t svc_vcs_keys[SVC_VCS_NKEYS] = {
    { "VCS_APP_ID", "SvcVcsAppId", 0 },
    { "VCS_APP_SLUG", "SvcVcsAppSlug", 0 },
    { "VCS_APP_CLIENT_ID", "SvcVcsAppClientId", 0 },
    { "VCS_APP_CLIENT_SECRET", "SvcVcsAppClientSecret", 1 },
    { "VCS_APP_WEBHOOK_SECRET", "SvcVcsAppWebhookSecret", 1 },
    { "VCS_APP_PRIVATE_KEY_PEM", "SvcVcsAppPrivateKey", 1 },
};

/* Index of each key in svc_vcs_keys. */
enum { K_ID, K_SLUG, K_CLIENT_ID, K_CLIENT_SECRET, K_WEBHOOK_SECRET, K_PEM };

const svc_vcs_app_t *svc_vcs_app(const svc_config_t *conf)
{
    return conf->vcs_app_off ? NULL : conf->vcs_app;
}

apr_status_t svc_vcs_off(svc_ctx_t *ctx)
{
    return svc_fail(ctx, 503, "vcs_app_not_configured",
                    "The code-hosting App is not configured on this server: the error log "
                    "says which of its keys are missing (docs/api/vcs.md). Sign-in and runs "
                    "without a repository work as usual.");
}

const char *svc_vcs_app_jwt(apr_pool_t *p, const svc_vcs_app_t *app)
{
    apr_int64_t now = (apr_int64_t)apr_time_sec(apr_time_now());
    json_t *claims = svc_json_pool(p, json_pack("{s:I,s:I,s:I}", "iat", (json_int_t)(now - 60),
                                                "exp", (json_int_t)(now + 540), "iss",
                                                (json_int_t)app->id));

    return claims ? svc_jwt_sign_rs256(p, app->key, claims) : NULL;
}

/* ------------------------------------------------------------------------ */
/* The credentials file                                                     */

static int name_char(char c, int first)
{
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
        || (!first && c >= '0' && c <= '9');
}

/* One line's value, from after the '=' to the end of the line. */
static apr_status_t parse_value(apr_pool_t *p, const char *s, const char *eol,
                                const char **pv)
{
    char *out, *o;

    if (s == eol || *s != '"') {
        while (eol > s && (eol[-1] == ' ' || eol[-1] == '\t' || eol[-1] == '\r')) {
            eol--;
        }
        *pv = apr_pstrmemdup(p, s, (apr_size_t)(eol - s));
        return APR_SUCCESS;
    }
    out = o = apr_palloc(p, (apr_size_t)(eol - s) + 1);
    for (s++; s < eol && *s != '"'; s++) {
        if (*s != '\\') {
            *o++ = *s;
            continue;
        }
        if (++s == eol) {
            return APR_EINVAL;
        }
        switch (*s) {
        case 'n': *o++ = '\n'; break;
        case '\\': case '"': case '$': case '`': *o++ = *s; break;
        default: return APR_EINVAL;
        }
    }
    if (s == eol) {
        return APR_EINVAL;          /* no closing quote */
    }
    for (s++; s < eol; s++) {
        if (*s != ' ' && *s != '\t' && *s != '\r') {
            return APR_EINVAL;
        }
    }
    *o = '\0';
    *pv = out;
    return APR_SUCCESS;
}

apr_status_t svc_vcs_credentials_read(apr_pool_t *p, const char *path, apr_table_t **pentries,
                                      const char **perr)
{
    apr_table_t *t = apr_table_make(p, 8);
    const char *text, *s, *eol;
    apr_finfo_t fi;
    apr_size_t n;
    apr_status_t rv;
    int lineno = 0;

    *pentries = t;
    rv = apr_stat(&fi, path, APR_FINFO_SIZE | APR_FINFO_TYPE, p);
    if (APR_STATUS_IS_ENOENT(rv) || (rv == APR_SUCCESS && fi.filetype == APR_REG
                                     && fi.size == 0)) {
        /* Nothing written yet: the wizard has not run, or the packages'
         * empty placeholder. */
        return APR_SUCCESS;
    }
    /* The same rules as any secret file: private to its owner. */
    rv = svc_secret_read(&text, &n, apr_pstrcat(p, "file:", path, NULL), p, perr);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    for (s = text; *s; s = *eol ? eol + 1 : eol) {
        const char *name, *value;
        eol = s + strcspn(s, "\n");
        lineno++;
        while (s < eol && (*s == ' ' || *s == '\t')) {
            s++;
        }
        if (s == eol || *s == '#' || (eol - s == 1 && *s == '\r')) {
            continue;
        }
        if (strncmp(s, "export ", 7) == 0) {
            for (s += 7; s < eol && *s == ' '; s++) {
            }
        }
        for (name = s; s < eol && name_char(*s, s == name); s++) {
        }
        if (s == name || s == eol || *s != '=') {
            *perr = apr_psprintf(p, "%s, line %d: not NAME=value", path, lineno);
            return APR_EINVAL;
        }
        name = apr_pstrmemdup(p, name, (apr_size_t)(s - name));
        if (parse_value(p, s + 1, eol, &value) != APR_SUCCESS) {
            *perr = apr_psprintf(p, "%s, line %d: the value of %s is not quoted properly",
                                 path, lineno, name);
            return APR_EINVAL;
        }
        apr_table_set(t, name, value);
    }
    svc_wipe((void *)text, n);
    return APR_SUCCESS;
}

/* A value in double quotes, escaped as svc_vcs_credentials_read reads it;
 * NULL for a value with control characters other than newlines. */
static const char *quote(apr_pool_t *p, const char *v)
{
    char *out = apr_palloc(p, strlen(v) * 2 + 3), *o = out;

    *o++ = '"';
    for (; *v; v++) {
        unsigned char c = (unsigned char)*v;
        if (c == '\n') {
            *o++ = '\\';
            *o++ = 'n';
            continue;
        }
        if (c < 0x20 || c == 0x7f) {
            return NULL;
        }
        if (c == '\\' || c == '"' || c == '$' || c == '`') {
            *o++ = '\\';
        }
        *o++ = (char)c;
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

static int write_all(int fd, const char *s, apr_size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return 0;
        }
        s += w;
        n -= (apr_size_t)w;
    }
    return 1;
}

apr_status_t svc_vcs_credentials_write(apr_pool_t *p, const char *path,
                                       const char *const values[SVC_VCS_NKEYS],
                                       const char **perr)
{
    char stamp[SVC_RFC3339_LEN + 1];
    const char *text, *tmp, *slash;
    apr_status_t rv = APR_SUCCESS;
    int fd, i, in_place = 0;

    svc_format_rfc3339(stamp, apr_time_now());
    text = apr_pstrcat(p, "# The code-hosting App's credentials, written by mod_svc's setup "
                       "wizard at ", stamp, ".\n# mod_svc reads this file at start "
                       "(SvcVcsAppCredentials); so can sh and systemd's EnvironmentFile=.\n"
                       "# Keep it private (mode 0600); docs/api/vcs.md says how to rotate "
                       "what it holds.\n", NULL);
    for (i = 0; i < SVC_VCS_NKEYS; i++) {
        const char *q = quote(p, values[i]);
        if (!q) {
            *perr = apr_psprintf(p, "the provider's %s has control characters",
                                 svc_vcs_keys[i].env);
            return APR_EINVAL;
        }
        text = apr_pstrcat(p, text, svc_vcs_keys[i].env, "=", q, "\n", NULL);
    }

    slash = strrchr(path, '/');
    tmp = apr_psprintf(p, "%.*s.vcs-app.%s.tmp", slash ? (int)(slash - path + 1) : 0, path,
                       svc_random_base62(p, 12));
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 && errno == EACCES) {
        /* A directory we may not write (a package's /etc/mod_svc): the
         * packages leave an empty file of ours there to fill in place. */
        in_place = 1;
        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
    }
    if (fd < 0) {
        *perr = apr_psprintf(p, "cannot write %s: %s", in_place ? path : tmp, strerror(errno));
        return APR_FROM_OS_ERROR(errno);
    }
    if ((in_place && fchmod(fd, 0600) != 0) || !write_all(fd, text, strlen(text))
        || fsync(fd) != 0) {
        rv = APR_FROM_OS_ERROR(errno);
        *perr = apr_psprintf(p, "cannot write %s: %s", in_place ? path : tmp, strerror(errno));
    }
    svc_wipe((void *)text, strlen(text));
    if (close(fd) != 0 && rv == APR_SUCCESS) {
        rv = APR_FROM_OS_ERROR(errno);
        *perr = apr_psprintf(p, "cannot write %s: %s", in_place ? path : tmp, strerror(errno));
    }
    if (!in_place && rv == APR_SUCCESS && rename(tmp, path) != 0) {
        rv = APR_FROM_OS_ERROR(errno);
        *perr = apr_psprintf(p, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    }
    if (!in_place && rv != APR_SUCCESS) {
        unlink(tmp);
    }
    return rv;
}

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */

/*
 * PEM text as an environment variable often carries its line breaks as
 * the two characters \n (sh does not expand them in double quotes; the
 * wizard's file writes them so): turn them back into newlines.
 */
static const char *pem_text(apr_pool_t *p, const char *v)
{
    char *out, *o;

    if (strchr(v, '\n') || !strstr(v, "\\n")) {
        return v;
    }
    out = o = apr_pstrdup(p, v);
    for (; *v; v++) {
        if (v[0] == '\\' && v[1] == 'n') {
            *o++ = '\n';
            v++;
        }
        else {
            *o++ = *v;
        }
    }
    *o = '\0';
    return out;
}

apr_status_t svc_vcs_configure(svc_config_t *conf, const svc_vcs_refs_t *refs,
                               apr_pool_t *p, const char **perr)
{
    const char *ref[SVC_VCS_NKEYS] = {
        refs->app_id, refs->slug, refs->client_id, refs->client_secret, refs->webhook_secret,
        refs->private_key
    };
    const char *val[SVC_VCS_NKEYS];
    const char *missing = NULL, *absent = NULL, *why = NULL, *pem;
    apr_table_t *file = NULL;
    svc_vcs_app_t *app;
    long long id;
    apr_status_t rv;
    int i;

    *perr = NULL;
    conf->vcs_app = NULL;
    conf->vcs_app_credentials = refs->credentials;
    if (refs->credentials
        && (rv = svc_vcs_credentials_read(p, refs->credentials, &file, perr)) != APR_SUCCESS) {
        *perr = apr_pstrcat(p, "SvcVcsAppCredentials: ", *perr, NULL);
        return rv;
    }
    for (i = 0; i < SVC_VCS_NKEYS; i++) {
        const svc_vcs_key_t *k = &svc_vcs_keys[i];
        const char *r = ref[i] ? ref[i] : apr_pstrcat(p, "env:", k->env, NULL);
        int env = strncmp(r, "env:", 4) == 0;

        if (k->secret && !svc_secret_is_ref(r)) {
            *perr = apr_pstrcat(p, k->directive, " must be a reference (env:NAME, file:/path "
                                "or exec:/program), never the secret itself", NULL);
            return APR_EINVAL;
        }
        if ((rv = svc_setting_resolve(&val[i], r, k->directive, p, &absent, perr))
            != APR_SUCCESS) {
            return rv;
        }
        /* An unset variable may have been written by the wizard. */
        if (!val[i] && env && file) {
            const char *v = apr_table_get(file, r + 4);
            val[i] = v && *v ? v : NULL;
        }
        if (!val[i]) {
            const char *name = env ? r + 4 : k->directive;
            missing = missing ? apr_pstrcat(p, missing, ", ", name, NULL) : name;
        }
    }
    /* The app id alone, when known, tells the setup wizard the App exists. */
    app = apr_pcalloc(p, sizeof(*app));
    if (val[K_ID] && svc_parse_int(val[K_ID], 1, 9007199254740991LL, &id) == APR_SUCCESS) {
        app->id = (apr_int64_t)id;
        conf->vcs_app = app;
    }
    if (missing) {
        conf->vcs_app_off = apr_pstrcat(p, "missing ", missing, NULL);
        return APR_SUCCESS;
    }
    if (!app->id) {
        conf->vcs_app_off = "VCS_APP_ID (SvcVcsAppId) is not a positive integer";
        return APR_SUCCESS;
    }
    if (!svc_word_valid(val[K_SLUG], 100) || !svc_word_valid(val[K_CLIENT_ID], 256)) {
        conf->vcs_app_off = "VCS_APP_SLUG or VCS_APP_CLIENT_ID has spaces or control "
                            "characters, or is too long";
        return APR_SUCCESS;
    }
    pem = pem_text(p, val[K_PEM]);
    if (svc_rsa_key_from_pem(p, pem, strlen(pem), &app->key, &why) != APR_SUCCESS) {
        conf->vcs_app_off = apr_pstrcat(p, "VCS_APP_PRIVATE_KEY_PEM (SvcVcsAppPrivateKey) "
                                        "does not hold a usable private key: ", why, NULL);
        return APR_SUCCESS;
    }
    app->slug = val[K_SLUG];
    app->client_id = val[K_CLIENT_ID];
    app->client_secret = val[K_CLIENT_SECRET];
    app->webhook_secret = val[K_WEBHOOK_SECRET];
    app->webhook_secret_len = strlen(app->webhook_secret);
    conf->vcs_app = app;
    conf->vcs_app_off = NULL;
    return APR_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Pages                                                                    */

const char *svc_vcs_html(apr_pool_t *p, const char *s)
{
    char *out, *o;
    apr_size_t n = 0;
    const char *c;

    for (c = s; *c; c++) {
        n += strchr("&<>\"'", *c) ? 6 : 1;
    }
    out = o = apr_palloc(p, n + 1);
    for (c = s; *c; c++) {
        const char *e = *c == '&' ? "&amp;" : *c == '<' ? "&lt;" : *c == '>' ? "&gt;"
                      : *c == '"' ? "&quot;" : *c == '\'' ? "&#39;" : NULL;
        if (e) {
            memcpy(o, e, strlen(e));
            o += strlen(e);
        }
        else {
            *o++ = *c;
        }
    }
    *o = '\0';
    return out;
}

apr_status_t svc_vcs_page(svc_ctx_t *ctx, int status, const char *title, const char *body)
{
    apr_pool_t *p = ctx->pool;
    const char *web = ctx->conf->vcs_web_url;
    const char *host = strstr(web, "://");
    const char *origin = host ? apr_pstrmemdup(p, web, (apr_size_t)(host + 3 - web)
                                                       + strcspn(host + 3, "/"))
                              : web;

    /* No script, no style, no frames: the pages are forms and text. The
     * setup wizard's form posts the App manifest to the provider. */
    apr_table_setn(ctx->headers_out, "Content-Security-Policy",
                   apr_pstrcat(p, "default-src 'none'; form-action 'self' ", origin,
                               "; base-uri 'none'; frame-ancestors 'none'", NULL));
    apr_table_setn(ctx->headers_out, "Referrer-Policy", "no-referrer");
    return svc_reply_html(ctx, status,
                          apr_pstrcat(p, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>"
                                      "<meta charset=\"utf-8\"><title>",
                                      svc_vcs_html(p, title), "</title></head>\n<body>\n<h1>",
                                      svc_vcs_html(p, title), "</h1>\n", body,
                                      "\n</body>\n</html>\n", NULL));
}
