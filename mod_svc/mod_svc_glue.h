/*
 * mod_svc_glue.h: what the httpd glue files share.
 *
 * The glue is what must touch httpd, and no more (docs/architecture.md,
 * "The glue"): the module record and hooks (mod_svc.c), the directives
 * (mod_svc_config.c), a request_rec into a core context and the context
 * back into a response (mod_svc_ctx.c), what httpd does with our URLs
 * around the handler (mod_svc_url.c), one API request (mod_svc_request.c),
 * event streams as httpd holds them open (mod_svc_sse.c: the MPM's
 * callbacks, the watcher, the network writer; the hub of new events behind
 * them is the kernel's, svc_hub.h), the database's own reason
 * (mod_svc_dbwatch.c), and the run supervisor's process (mod_svc_daemon.c).
 * Everything else is below: base/, the kernel and the areas.
 */
#ifndef SVC_MOD_SVC_GLUE_H
#define SVC_MOD_SVC_GLUE_H

#include <httpd.h>
#include <http_config.h>
#include <http_log.h>

#include "svc_kernel.h"
#include "svc_areas.h"
#include "svc_billing.h"
#include "svc_identity.h"
#include "svc_runs.h"
#include "svc_vcs.h"

extern module AP_MODULE_DECLARE_DATA svc_module;

/* Per-server configuration: the core's resolved config plus what the
 * directives said before resolution (for merging and for start-up). */
typedef struct {
    svc_config_t core;
    const char *secret_ref;
    /* The sign-in directives as written; resolved into core at start. */
    svc_signin_refs_t signin_refs;
    /* The code-hosting App's directives as written; resolved at start. */
    svc_vcs_refs_t vcs_refs;
    /* The billing directives as written (SvcBilling*); resolved at start. */
    svc_billing_refs_t billing_refs;
    const svc_router_t *router;
    /*
     * Per child process (the struct is copied at fork) and per server, since
     * each virtual host may have its own DBDParams: 1 once the schema was
     * seen at the needed version; when it was last found behind.
     */
    volatile apr_uint32_t schema_ok;
    volatile apr_uint32_t schema_checked_at;
    /*
     * mod_dbd's DBDParams for this server, seen on their way to mod_dbd
     * (svc_cmds): the connections that cannot come from mod_dbd's pool (the
     * per-child LISTEN connection of the event streams, the run supervisor)
     * open their own with it.
     */
    const char *db_conninfo;
    /*
     * The run supervisor's settings (SvcRun*; the main server's count, as
     * there is one supervisor per httpd) and whether it runs here at all
     * (SvcRunSupervisor, default on).
     */
    svc_supervisor_conf_t sup;
    int sup_off;
    /* SvcMetrics Off: nothing is counted, /internal/metrics answers 404
     * (server-wide: the main server's setting counts). */
    int metrics_off;
} svc_server_conf;

/* The directives and the per-server configuration (mod_svc_config.c). */
extern const command_rec svc_cmds[];
void *svc_create_server_conf(apr_pool_t *p, server_rec *s);
void *svc_merge_server_conf(apr_pool_t *p, void *basev, void *addv);

/* r->notes: set for the service's own URLs (mod_svc.c); "raw" where httpd
 * left the path undecoded for the module (svc_glue_path decodes it). */
#define SVC_NOTE_OWN "svc-own-url"
#define SVC_NOTE_RAW "raw"

/* The API handler ("svc") and the benchmark's no-op handler ("svc-noop"). */
int svc_handler(request_rec *r);

/*
 * A core context for r, living in p (r->pool, or a sub-pool for work done
 * later on r's behalf), lent pooled database connections on demand; they go
 * back with svc_glue_ctx_release or when p is cleared. svc_glue_ctx_bare
 * is one of server s with nothing of a request: an event stream's, once its
 * request is gone, which sets itself what its work reads (mod_svc_sse.c).
 */
svc_ctx_t *svc_glue_ctx(request_rec *r, apr_pool_t *p);
svc_ctx_t *svc_glue_ctx_bare(server_rec *s, apr_pool_t *p);
void svc_glue_ctx_release(svc_ctx_t *ctx);

/*
 * The one response writer (mod_svc_ctx.c). svc_glue_write_head puts
 * the handler's headers (ctx->headers_out), Cache-Control: no-store and
 * X-Content-Type-Options: nosniff into err_headers_out, which survive an
 * error status, and sets the status and type; svc_glue_respond writes the
 * whole answer ctx holds (a body, one produced in pieces, or none). An
 * event stream writes its head with the first and its events itself.
 */
void svc_glue_write_head(svc_ctx_t *ctx, request_rec *r, int status, const char *content_type);
int svc_glue_respond(svc_ctx_t *ctx, request_rec *r);

/*
 * Event streams (mod_svc_sse.c): svc_sse_begin answers a request whose
 * handler asked for a stream (ctx->stream): replays, then suspends the
 * connection and follows new events without holding a worker thread.
 * svc_sse_child_init prepares the child's streams (the hub, kernel/svc_hub.h,
 * starts with the first stream and stops with the child's pool);
 * svc_sse_stopping ends every stream when the child is about to exit.
 */
int svc_sse_begin(request_rec *r, svc_ctx_t *ctx);
/* Registers the streams' network writer (an output filter); register_hooks. */
void svc_sse_register(apr_pool_t *p);
void svc_sse_child_init(apr_pool_t *pchild, server_rec *s);
void svc_sse_stopping(void);

/*
 * The service's URLs as httpd handles them (mod_svc_url.c): svc_url_hooks
 * registers the hooks that keep share tokens out of every line httpd logs;
 * svc_glue_path is the path the handler routes: r->uri with the token that
 * was masked in it put back, decoded here where httpd left it raw (see
 * svc_pre_translate_name), or *prefused set to 400 (a malformed escape) or
 * 404 (an encoded '/' or NUL) as httpd would; svc_glue_refusal is the status httpd refused
 * the original request with when r is the ErrorDocument that brought the
 * refusal to the module (0 otherwise), and puts request_id on the original.
 */
void svc_url_hooks(void);
/* Where the ErrorDocuments of the configuration (and svc_url_hooks) send
 * httpd's refusals: any path the module serves would do. */
#define SVC_ERROR_URL "/api/_error"
const char *svc_glue_path(request_rec *r, int *prefused);
int svc_glue_refusal(request_rec *r, const char *request_id);

/*
 * The database's own reason (mod_svc_dbwatch.c): svc_dbwatch_setup (at
 * start) notes each distinct DBDParams; svc_dbwatch_child_init tries each
 * as a child starts and logs why one fails (SVC0090); svc_dbwatch_result
 * is told whether a request could use the database, and logs why not the
 * first time after it could (SVC0091); svc_dbwatch_reason is why server
 * s cannot reach its database now (logged as SVC0091 too if that is
 * news), or NULL when it can.
 */
void svc_dbwatch_setup(apr_pool_t *pconf, server_rec *s);
void svc_dbwatch_child_init(apr_pool_t *pchild);
void svc_dbwatch_result(server_rec *s, apr_pool_t *p, int ok);
const char *svc_dbwatch_reason(server_rec *s, apr_pool_t *p);

/* Called at start-up to resolve mod_dbd's optional functions. */
int svc_glue_dbd_init(void);

/*
 * Starts the run supervisor process (mod_svc_daemon.c) from httpd's
 * parent, after the configuration is read (not on the first, pre-config
 * pass), and keeps it running until httpd stops or restarts.
 */
void svc_supervisor_start(apr_pool_t *pconf, server_rec *s);

#endif /* SVC_MOD_SVC_GLUE_H */
