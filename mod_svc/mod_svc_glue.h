/*
 * mod_svc_glue.h: what the httpd glue files share.
 *
 * The glue is thin on purpose: configuration and hooks (mod_svc.c), and
 * turning a request_rec into a core context and the context back into a
 * response (mod_svc_request.c). Everything else is below: base/, the
 * kernel and the areas (docs/architecture.md).
 */
#ifndef SVC_MOD_SVC_GLUE_H
#define SVC_MOD_SVC_GLUE_H

#include <httpd.h>
#include <http_config.h>
#include <http_log.h>

#include "svc_kernel.h"
#include "svc_areas.h"
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
    const svc_router_t *router;
    /* Which scalar directives were set here, so a vhost inherits the rest. */
    unsigned set;
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
} svc_server_conf;

#define SVC_SET_BODY_LIMIT   0x01
#define SVC_SET_TOUCH        0x02
#define SVC_SET_SESSION_LIFE 0x04
#define SVC_SET_STMT_TIMEOUT 0x08
#define SVC_SET_PUBLIC_URL   0x10
#define SVC_SET_UI_URL       0x0100
#define SVC_SET_VCS_TIMEOUT  0x0200
#define SVC_SET_INVITE_LIFE  0x0400
#define SVC_SET_MODEL_TIMEOUT 0x0800
#define SVC_SET_DOC_LIMIT    0x1000
#define SVC_SET_ALLOW_PRIVATE 0x2000
#define SVC_SET_RUN_TIMEOUT  0x4000
#define SVC_SET_UPLOAD_LIMIT 0x8000

/* r->notes: set for the service's own URLs (mod_svc.c); "raw" where httpd
 * left the path undecoded for the module (svc_glue_path decodes it). */
#define SVC_NOTE_OWN "svc-own-url"
#define SVC_NOTE_RAW "raw"

/* The API handler ("svc") and the benchmark's no-op handler ("svc-noop"). */
int svc_handler(request_rec *r);

/*
 * A core context for r, living in p (r->pool, or a sub-pool for work done
 * later on r's behalf), lent pooled database connections on demand; they go
 * back with svc_glue_ctx_release or when p is cleared.
 */
svc_ctx_t *svc_glue_ctx(request_rec *r, apr_pool_t *p);
void svc_glue_ctx_release(svc_ctx_t *ctx);

/*
 * Decodes r's query string into ctx->query, all of it or nothing: a
 * parameter that cannot be decoded (a bad escape, an encoded NUL), more
 * than 64 parameters, or a name given twice is a 400 invalid_query.
 * Dropping what cannot be read would answer a wider question than the one
 * asked: a filter that vanished returns more than the client wanted.
 */
apr_status_t svc_glue_parse_query(svc_ctx_t *ctx, request_rec *r);

/*
 * Event streams (mod_svc_sse.c): svc_sse_begin answers a request whose
 * handler asked for a stream (ctx->stream): replays, then suspends the
 * connection and follows new events without holding a worker thread.
 * svc_sse_child_init prepares the child's stream hub; svc_sse_stopping ends
 * every stream when the child is about to exit.
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
 * first time after it could (SVC0091); svc_dbwatch_reason is why r's
 * server cannot reach its database now (logged as SVC0091 too if that is
 * news), or NULL when it can.
 */
void svc_dbwatch_setup(apr_pool_t *pconf, server_rec *s);
void svc_dbwatch_child_init(apr_pool_t *pchild);
void svc_dbwatch_result(request_rec *r, int ok);
const char *svc_dbwatch_reason(request_rec *r);

/* Called at start-up to resolve mod_dbd's optional functions. */
int svc_glue_dbd_init(void);

/*
 * Starts the run supervisor process (mod_svc_supervisor.c) from httpd's
 * parent, after the configuration is read (not on the first, pre-config
 * pass), and keeps it running until httpd stops or restarts.
 */
void svc_supervisor_start(apr_pool_t *pconf, server_rec *s);

/* The SvcRun* directives (mod_svc_supervisor.c), listed in svc_cmds. */
const char *svc_cmd_run_supervisor(cmd_parms *cmd, void *dummy, int on);
const char *svc_cmd_runner(cmd_parms *cmd, void *dummy, int argc, char *const argv[]);
const char *svc_cmd_run_number(cmd_parms *cmd, void *dummy, const char *arg);
const char *svc_cmd_run_path(cmd_parms *cmd, void *dummy, const char *arg);

/* A directive's SIZE or number: digits, with K, M or G for sizes, from min
 * to max; else the error message (mod_svc_supervisor.c). */
const char *svc_cmd_parse_size(cmd_parms *cmd, const char *arg, apr_int64_t min,
                               apr_int64_t max, apr_int64_t *pv);

/* Which setting svc_cmd_run_number and svc_cmd_run_path set (cmd->info). */
#define SVC_RUN_CONCURRENCY   1
#define SVC_RUN_TIMEOUT       2
#define SVC_RUN_MEMORY        3
#define SVC_RUN_PROCESSES     4
#define SVC_RUN_FILE_SIZE     5
#define SVC_RUN_LOG_LIMIT     6
#define SVC_RUN_LEASE         7
#define SVC_RUN_WORK_DIR      8
#define SVC_RUN_FACTORY       9

#endif /* SVC_MOD_SVC_GLUE_H */
