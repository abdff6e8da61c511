/*
 * svc_vcs_app.h: the App itself: its six keys (configuration, the
 * credentials file the setup wizard writes), its JWTs, and what every App
 * route shares (the "not configured" answer, HTML pages).
 */
#ifndef SVC_VCS_APP_H
#define SVC_VCS_APP_H

#include "svc_vcs.h"

/* The App's keys, once all six are configured and usable. */
struct svc_vcs_app_t {
    apr_int64_t id;                 /* app_id */
    const char *slug;
    const char *client_id;
    const char *client_secret;
    const char *webhook_secret;
    apr_size_t webhook_secret_len;
    EVP_PKEY *key;                  /* private_key.pem, parsed */
};
typedef struct svc_vcs_app_t svc_vcs_app_t;

/* The six keys: environment variable (SPEC.md's name, also the name in the
 * credentials file), directive, and whether it is a secret. */
typedef struct {
    const char *env;
    const char *directive;
    int secret;
} svc_vcs_key_t;

#define SVC_VCS_NKEYS 6
extern const svc_vcs_key_t svc_vcs_keys[SVC_VCS_NKEYS];

/* The App's keys, or NULL while it is off. (conf->vcs_app itself may hold
 * just the id of an App whose other keys are missing.) */
const svc_vcs_app_t *svc_vcs_app(const svc_config_t *conf);

/*
 * The answer of every App route while the App is off: 503
 * vcs_app_not_configured (the start-up log named what is missing).
 * Handlers begin with
 *     if (!(app = svc_vcs_app(ctx->conf))) return svc_vcs_off(ctx);
 */
apr_status_t svc_vcs_off(svc_ctx_t *ctx);

/*
 * An App JWT: RS256 with the App's key, iat 60 s in the past (clock skew),
 * exp 9 minutes ahead (the provider takes at most 10), iss the app id.
 * NULL when signing fails.
 */
const char *svc_vcs_app_jwt(apr_pool_t *p, const svc_vcs_app_t *app);

/*
 * The credentials file: KEY="value" lines (# comments, blank lines and a
 * leading "export " allowed), values in double quotes with \n, \\, \",
 * \$ and \` escapes, so sh and systemd's EnvironmentFile= can read it too.
 * svc_vcs_credentials_read: a table of its entries (empty when the file
 * does not exist); APR_EACCES when it is readable or writable by group or
 * others, APR_EINVAL with *perr on a line it cannot read.
 */
apr_status_t svc_vcs_credentials_read(apr_pool_t *p, const char *path, apr_table_t **pentries,
                                      const char **perr);

/*
 * Writes the six entries (in svc_vcs_keys order, values from `values`)
 * mode 0600: to a new file in the same directory, synced, then renamed over
 * `path`; where the directory is not ours to write (a package's
 * /etc/mod_svc), into the existing file in place, truncated, and synced.
 * *perr says why it failed (names the path, never a value).
 */
apr_status_t svc_vcs_credentials_write(apr_pool_t *p, const char *path,
                                       const char *const values[SVC_VCS_NKEYS],
                                       const char **perr);

/* Text with &, <, >, " and ' escaped for HTML. */
const char *svc_vcs_html(apr_pool_t *p, const char *s);

/*
 * Answers an HTML page: title and body (HTML the caller built with every
 * value escaped) in a minimal document, with a Content-Security-Policy that
 * allows no script, style or frame and forms only to this site and the
 * provider's web origin.
 */
apr_status_t svc_vcs_page(svc_ctx_t *ctx, int status, const char *title, const char *body);

#endif /* SVC_VCS_APP_H */
