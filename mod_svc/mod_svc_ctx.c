/*
 * mod_svc_ctx.c: a core context for a request, and the pooled database
 * connections lent to it (mod_dbd), with the schema gate on the way. Used
 * by the request handler (mod_svc_request.c) and by event streams for the
 * work they do later on a request's behalf (mod_svc_sse.c).
 */
#include "mod_svc_glue.h"

#include <http_core.h>
#include <http_protocol.h>
#include <http_request.h>
#include <apr_atomic.h>
#include <apr_dbd.h>
#include <mod_dbd.h>
#include <apr_optional.h>
#include <apr_strings.h>

APLOG_USE_MODULE(svc);

static APR_OPTIONAL_FN_TYPE(ap_dbd_open) *dbd_open;
static APR_OPTIONAL_FN_TYPE(ap_dbd_close) *dbd_close;

int svc_glue_dbd_init(void)
{
    dbd_open = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_open);
    dbd_close = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_close);
    return dbd_open && dbd_close;
}

/* The pooled connection lent to one context (a request, or one wake-up of
 * an event stream), from the pool the context lives in. */
typedef struct {
    request_rec *r;
    apr_pool_t *pool;
    ap_dbd_t *dbd;
    svc_ctx_t *ctx;
} svc_lease_t;

static void db_return(svc_lease_t *lease)
{
    if (lease->dbd) {
        /* Never hand a connection back inside a transaction (trap 7). */
        svc_db_release(lease->ctx->db);
        dbd_close(lease->r->server, lease->dbd);
        lease->dbd = NULL;
        lease->ctx->db = NULL;
    }
}

static void db_release(svc_ctx_t *ctx)
{
    db_return(ctx->glue);
}

static apr_status_t db_return_cleanup(void *data)
{
    db_return(data);
    return APR_SUCCESS;
}

/*
 * The module refuses service while the database is behind the schema this
 * build needs, rather than failing strangely; it re-checks every few
 * seconds so `svcctl migrate` takes effect without a restart. It runs when
 * a request first needs the database, so what is decided without one (a
 * malformed token, a bad body) is answered the same whatever the database.
 */
static apr_status_t schema_gate(svc_db_t *db, request_rec *r, svc_server_conf *sc)
{
    apr_uint32_t now = (apr_uint32_t)apr_time_sec(apr_time_now());
    int version = 0;
    apr_status_t rv;

    if (apr_atomic_read32(&sc->schema_ok)) {
        return APR_SUCCESS;
    }
    if (now - apr_atomic_read32(&sc->schema_checked_at) < 5) {
        return SVC_ESCHEMA;
    }
    if ((rv = svc_migrate_current(db, r->pool, &version)) != APR_SUCCESS) {
        return rv;
    }
    if (version >= svc_schema_version) {
        apr_atomic_set32(&sc->schema_ok, 1);
        return APR_SUCCESS;
    }
    if (apr_atomic_xchg32(&sc->schema_checked_at, now) != now) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "SVC0011: the database schema is at "
                      "version %d; this build needs %d. Run `svcctl migrate`; until then "
                      "the API answers 503.", version, svc_schema_version);
    }
    return SVC_ESCHEMA;
}

static const char *db_reason(svc_ctx_t *ctx)
{
    return svc_dbwatch_reason(((svc_lease_t *)ctx->glue)->r);
}

static apr_status_t db_acquire(svc_ctx_t *ctx)
{
    svc_lease_t *lease = ctx->glue;
    request_rec *r = lease->r;
    PGconn *conn;
    apr_status_t rv;

    lease->dbd = dbd_open(lease->pool, r->server);
    svc_dbwatch_result(r, lease->dbd != NULL);
    if (!lease->dbd) {
        return SVC_EDBDOWN;
    }
    if (strcmp(apr_dbd_name(lease->dbd->driver), "pgsql") != 0) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "SVC0010: DBDriver must be pgsql, not %s",
                      apr_dbd_name(lease->dbd->driver));
        dbd_close(r->server, lease->dbd);
        lease->dbd = NULL;
        return APR_ENOTIMPL;
    }
    conn = apr_dbd_native_handle(lease->dbd->driver, lease->dbd->handle);
    rv = svc_db_wrap(&ctx->db, conn, lease->dbd->pool, ctx->conf->statement_timeout_ms,
                     lease->pool);
    if (rv != APR_SUCCESS) {
        dbd_close(r->server, lease->dbd);
        lease->dbd = NULL;
        return rv;
    }
    if (ctx->route && !(ctx->route->flags & SVC_RF_NO_DB)) {
        svc_server_conf *sc = ap_get_module_config(r->server->module_config, &svc_module);
        if ((rv = schema_gate(ctx->db, r, sc)) != APR_SUCCESS) {
            /* No connection stays lent: the next attempt meets the gate again. */
            db_return(lease);
        }
    }
    return rv;
}

apr_status_t svc_glue_parse_query(svc_ctx_t *ctx, request_rec *r)
{
    /* The kernel splits and checks; httpd's decoder decodes each part. */
    return svc_query_parse(ctx, r->args, ap_unescape_urlencoded);
}


/*
 * The origin clients use to reach us, as httpd builds self-referential URLs:
 * the scheme from ServerName (https:// behind a TLS-terminating proxy), the
 * host and port from the Host header, or from ServerName with
 * UseCanonicalName On.
 */
static const char *self_origin(request_rec *r)
{
    const char *scheme = ap_http_scheme(r);
    const char *host = ap_get_server_name_for_url(r);
    apr_port_t port = ap_get_server_port(r);
    int dflt = (port == 80 && strcmp(scheme, "http") == 0)
               || (port == 443 && strcmp(scheme, "https") == 0);

    if (!host || !*host) {
        return NULL;
    }
    return dflt ? apr_pstrcat(r->pool, scheme, "://", host, NULL)
                : apr_psprintf(r->pool, "%s://%s:%u", scheme, host, (unsigned)port);
}

svc_ctx_t *svc_glue_ctx(request_rec *r, apr_pool_t *p)
{
    svc_server_conf *sc = ap_get_module_config(r->server->module_config, &svc_module);
    svc_ctx_t *ctx = svc_ctx_create(p, &sc->core);
    svc_lease_t *lease;

    ctx->method = r->method;
    ctx->path = r->uri;
    ctx->headers_in = r->headers_in;
    ctx->client_ip = r->useragent_ip ? r->useragent_ip : "";
    ctx->client_sa = r->useragent_addr;
    ctx->user_agent = apr_table_get(r->headers_in, "User-Agent");
    ctx->request_id = svc_id_new(p, "req_");
    /* Our own origin, for the CSRF check: the public URL's when it is
     * configured, not one the request's Host header made up. */
    ctx->self_origin = sc->core.public_origin ? sc->core.public_origin : self_origin(r);
    ctx->is_tls = strcmp(ap_http_scheme(r), "https") == 0
                  || (sc->core.public_origin && strncmp(sc->core.public_origin, "https:", 6) == 0);

    lease = apr_pcalloc(p, sizeof(*lease));
    lease->r = r;
    lease->pool = p;
    lease->ctx = ctx;
    ctx->glue = lease;
    ctx->db_acquire = db_acquire;
    ctx->db_release = db_release;
    ctx->db_reason = db_reason;
    apr_pool_cleanup_register(p, lease, db_return_cleanup, apr_pool_cleanup_null);
    return ctx;
}

void svc_glue_ctx_release(svc_ctx_t *ctx)
{
    db_return(ctx->glue);
}
