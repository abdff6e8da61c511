/*
 * svc_config.h: the resolved configuration the core works with.
 *
 * The httpd glue fills one of these per server from the Svc* directives
 * (secrets already loaded from their references); svcctl fills one from its
 * command line. The core only ever reads it.
 */
#ifndef SVC_CONFIG_H
#define SVC_CONFIG_H

#include "svc_ktypes.h"
#include <apr_network_io.h>

#define SVC_KEY_BYTES 32

/*
 * The price of a model, in US dollars per million tokens (SvcModelPrice),
 * read by the pipeline's cost estimate before its own table.
 */
typedef struct {
    const char *model;
    double input_per_mtok;
    double output_per_mtok;
} svc_model_price_t;

/* A named rate-limit class: at most `limit` events per `period` seconds. */
typedef struct {
    const char *name;
    int limit;
    int period;
} svc_rate_class_t;

struct svc_config_t {
    /* Sub-keys derived from the one server secret (crypto_kdf). */
    unsigned char pat_key[SVC_KEY_BYTES];      /* keyed hash of PAT secrets */
    unsigned char session_key[SVC_KEY_BYTES];  /* HS256 session JWTs */
    unsigned char box_key[SVC_KEY_BYTES];      /* secrets at rest */
    unsigned char signin_key[SVC_KEY_BYTES];   /* OAuth state hashes, PKCE verifiers */
    unsigned char share_key[SVC_KEY_BYTES];    /* keyed hash of share-link tokens */
    unsigned char cursor_key[SVC_KEY_BYTES];   /* MACs of pagination cursors */
    unsigned char agent_key[SVC_KEY_BYTES];    /* keyed hash of deploy targets' keys */
    int have_secret;

    apr_size_t body_limit;          /* default JSON body cap in bytes */
    int token_touch_interval;       /* seconds between last_used writes */
    int session_lifetime;           /* seconds */
    int statement_timeout_ms;       /* per-statement cap on the server */
    int invite_lifetime;            /* seconds an org or project invite stays valid */
    int model_timeout_ms;           /* longest a call to a tenant's model may take */
    apr_size_t document_limit;      /* largest planning document body, in bytes */
    int provider_allow_private;     /* tenant provider URLs may reach private addresses */
    int run_timeout;                /* seconds a run created here may take (SvcRunTimeout) */
    int run_max_steps;              /* tool calls an agent run may make (SvcRunMaxSteps) */
    apr_int64_t run_max_tokens;     /* tokens a run may use in all (SvcRunMaxTokens) */
    int run_command_timeout;        /* seconds one `run` of the agent (SvcRunCommandTimeout) */
    apr_size_t upload_limit;        /* largest attachment, in bytes (SvcAttachmentLimit) */
    int stream_limit;               /* event streams one user may hold open (SvcStreamLimit;
                                     * 0: no limit) */
    apr_array_header_t *model_prices;   /* of svc_model_price_t (SvcModelPrice), or NULL */

    apr_array_header_t *rate_classes;     /* of svc_rate_class_t */
    apr_array_header_t *internal_allow;   /* of apr_ipsubnet_t * */
    apr_array_header_t *trusted_origins;  /* of const char *, "scheme://host[:port]" */

    /* How principals are verified (svc_auth.h): the identity area's table,
     * put here at start by the area registry (svc_areas_configure). */
    const svc_verifiers_t *verifiers;
    /* The areas whose routes make the route table (svc_route.h), NULL-ended;
     * also put here by the area registry. */
    const svc_area_t *const *areas;

    const char *public_url;         /* SvcPublicURL: the OpenAPI servers list, the
                                     * sign-in callback's base */
    const char *public_origin;      /* its scheme://host[:port]: our own origin for
                                     * the CSRF check when set */
    const char *openapi_json;       /* the OpenAPI document, rendered once at start */

    /* Sign-in through the code-hosting provider's OAuth app (svc_signin.c),
     * resolved at start by svc_signin_configure. */
    const char *signin_off;         /* why sign-in is off, or NULL when it is on */
    const char *oauth_client_id;
    const char *oauth_client_secret;
    const char *vcs_web_url;        /* provider web origin, no trailing slash */
    const char *vcs_api_url;        /* provider API base, no trailing slash */
    const char *ui_url;             /* where the browser lands after signing in */
    int vcs_timeout_ms;             /* budget of all provider calls of one sign-in */
    const char *vcs_ca_file;        /* extra CA bundle for the provider (SvcVcsCAFile) */
    int vcs_connect_timeout_ms;

    /* The code-hosting App (areas/vcs), resolved at start by svc_vcs_configure;
     * the kernel carries it without looking inside. */
    const char *vcs_app_off;        /* why the App is off (the missing keys), or NULL */
    const struct svc_vcs_app_t *vcs_app;    /* the App's keys while it is on */
    const char *vcs_app_credentials;        /* SvcVcsAppCredentials: the wizard's file */

    /* Billing (areas/billing), resolved at start by svc_billing_configure;
     * the kernel carries it without looking inside. */
    const struct svc_billing_t *billing;    /* plans, the provider's keys and URL */
    const char *billing_off;        /* why the payment routes are off, or NULL */
    int billing_timeout_ms;         /* SvcBillingTimeout: one call to the provider */

    /* What the processes of this httpd share (svc_shared.h): made by the
     * parent at start, the same for every server; NULL if it could not be. */
    struct svc_shared_t *shared;
};

/*
 * Settings a directive may set are "unset" until one does: SVC_UNSET in
 * numbers and flags (of whatever type: svc_config_is_unset), NULL in
 * strings, an empty array in lists. A virtual host takes what it left
 * unset from the main server (svc_config_merge), and what is still unset
 * at start takes its default (svc_config_fill). Only values of 1 and more
 * are ever set, so -1 is free to mean "unset".
 */
#define SVC_UNSET (-1)
#define svc_config_is_unset(v) ((v) == (__typeof__(v))SVC_UNSET)

/* Every setting unset; what start-up resolves (sign-in, the App) at its
 * initial value. */
void svc_config_unset(svc_config_t *conf, apr_pool_t *p);

/* `into` (a copy of add) takes base's value for each setting add left
 * unset; rate classes are base's, overridden class by class by add's. */
void svc_config_merge(svc_config_t *into, const svc_config_t *base, const svc_config_t *add,
                      apr_pool_t *p);

/* The default of every setting still unset (SvcInternalAllow's: loopback). */
void svc_config_fill(svc_config_t *conf, apr_pool_t *p);

/* Defaults that give a working local instance: unset, then filled. */
void svc_config_defaults(svc_config_t *conf, apr_pool_t *p);

/* Adds the default rate classes that configuration did not set. */
void svc_config_default_rates(svc_config_t *conf, apr_pool_t *p);

/* Adds or replaces a rate class. */
void svc_config_set_rate(svc_config_t *conf, apr_pool_t *p, const char *name,
                         int limit, int period);

/* The default rate classes, ended by a NULL name (svc_rate_class_known
 * names the classes routes count against too). */
extern const svc_rate_class_t svc_rate_defaults[];

/*
 * Configuration values as directives write them. Each returns 1 and sets
 * *pv when `arg` is one, else 0 (the caller names the directive):
 * svc_config_parse_int: decimal digits only, from min to max;
 * svc_config_parse_size: digits with an optional K, M or G (powers of
 * 1024), from min to max bytes;
 * svc_config_parse_price: a decimal number with a point, 0 to 10000
 * (no sign, exponent or comma).
 */
int svc_config_parse_int(const char *arg, apr_int64_t min, apr_int64_t max, apr_int64_t *pv);
int svc_config_parse_size(const char *arg, apr_int64_t min, apr_int64_t max, apr_int64_t *pv);
int svc_config_parse_price(const char *arg, double *pv);

/*
 * The origin of an http(s) URL (normalized: no trailing slash) as browsers
 * write it in Origin headers: lowercase scheme and host, no default port.
 */
const char *svc_config_origin(apr_pool_t *p, const char *url);

/*
 * A virtual host that inherited the main server's SvcSecret shares its
 * keys rather than reading the reference again.
 */
void svc_config_share_keys(svc_config_t *to, const svc_config_t *from);

/* The class by name, or NULL when unlimited. */
const svc_rate_class_t *svc_config_rate(const svc_config_t *conf, const char *name);

/*
 * Loads the server secret from a reference ("file:/path", "env:NAME" or
 * "exec:/program") and derives the sub-keys. Files readable by group or
 * others are refused. On failure *perr says why, for the operator.
 */
apr_status_t svc_config_load_secret(svc_config_t *conf, const char *ref,
                                    apr_pool_t *p, const char **perr);

#endif /* SVC_CONFIG_H */
