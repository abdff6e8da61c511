/*
 * mod_svc_ctx.c: a request_rec into a core context, and the context back
 * into a response: the pooled database connections lent to a context
 * (mod_dbd), with the schema gate on the way, and the one response writer.
 * Used by the request handler (mod_svc_request.c) and by event streams,
 * for their head and for the work they do later on a request's behalf
 * (mod_svc_sse.c).
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
 * an event stream, whose request may be gone), from the pool the context
 * lives in; the lease records the server, not the request. */
typedef struct {
    server_rec *s;
    apr_pool_t *pool;
    ap_dbd_t *dbd;
    svc_ctx_t *ctx;
} svc_lease_t;

static void db_return(svc_lease_t *lease)
{
    if (lease->dbd) {
        /* Never hand a connection back inside a transaction (trap 7). */
        svc_db_release(lease->ctx->db);
        dbd_close(lease->s, lease->dbd);
        lease->dbd = NULL;
        lease->ctx->db = NULL;
        svc_metrics_db_released(svc_metrics_current());
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
static apr_status_t schema_gate(svc_db_t *db, server_rec *s, apr_pool_t *p,
                                svc_server_conf *sc)
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
    if ((rv = svc_migrate_current(db, p, &version)) != APR_SUCCESS) {
        return rv;
    }
    if (version >= svc_schema_version) {
        apr_atomic_set32(&sc->schema_ok, 1);
        return APR_SUCCESS;
    }
    if (apr_atomic_xchg32(&sc->schema_checked_at, now) != now) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "SVC0011: the database schema is at "
                      "version %d; this build needs %d. Run `svcctl migrate`; until then "
                      "the API answers 503.", version, svc_schema_version);
    }
    return SVC_ESCHEMA;
}

static const char *db_reason(svc_ctx_t *ctx)
{
    svc_lease_t *lease = ctx->glue;

    return svc_dbwatch_reason(lease->s, lease->pool);
}

static apr_status_t db_acquire(svc_ctx_t *ctx)
{
    svc_lease_t *lease = ctx->glue;
    server_rec *s = lease->s;
    PGconn *conn;
    apr_status_t rv;
    apr_time_t asked = apr_time_now();

    /* With DBDPersist, mod_dbd lends from its reslist: when DBDMax are all
     * lent, this waits for one to come back; the wait is what the pool's
     * histogram shows (svc_db_acquire_wait_seconds). */
    lease->dbd = dbd_open(lease->pool, s);
    svc_metrics_db_acquired(svc_metrics_current(), lease->dbd != NULL, apr_time_now() - asked);
    svc_dbwatch_result(s, lease->pool, lease->dbd != NULL);
    if (!lease->dbd) {
        return SVC_EDBDOWN;
    }
    if (strcmp(apr_dbd_name(lease->dbd->driver), "pgsql") != 0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "SVC0010: DBDriver must be pgsql, not %s",
                     apr_dbd_name(lease->dbd->driver));
        dbd_close(s, lease->dbd);
        lease->dbd = NULL;
        svc_metrics_db_released(svc_metrics_current());
        return APR_ENOTIMPL;
    }
    conn = apr_dbd_native_handle(lease->dbd->driver, lease->dbd->handle);
    rv = svc_db_wrap(&ctx->db, conn, lease->dbd->pool, ctx->conf->statement_timeout_ms,
                     lease->pool);
    if (rv != APR_SUCCESS) {
        dbd_close(s, lease->dbd);
        lease->dbd = NULL;
        svc_metrics_db_released(svc_metrics_current());
        return rv;
    }
    if (ctx->route && !(ctx->route->flags & SVC_RF_NO_DB)) {
        svc_server_conf *sc = ap_get_module_config(s->module_config, &svc_module);
        if ((rv = schema_gate(ctx->db, s, lease->pool, sc)) != APR_SUCCESS) {
            /* No connection stays lent: the next attempt meets the gate again. */
            db_return(lease);
        }
    }
    return rv;
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

svc_ctx_t *svc_glue_ctx_bare(server_rec *s, apr_pool_t *p)
{
    svc_server_conf *sc = ap_get_module_config(s->module_config, &svc_module);
    svc_ctx_t *ctx = svc_ctx_create(p, &sc->core);
    svc_lease_t *lease = apr_pcalloc(p, sizeof(*lease));

    ctx->request_id = svc_id_new(p, "req_");
    lease->s = s;
    lease->pool = p;
    lease->ctx = ctx;
    ctx->glue = lease;
    ctx->db_acquire = db_acquire;
    ctx->db_release = db_release;
    ctx->db_reason = db_reason;
    apr_pool_cleanup_register(p, lease, db_return_cleanup, apr_pool_cleanup_null);
    return ctx;
}

svc_ctx_t *svc_glue_ctx(request_rec *r, apr_pool_t *p)
{
    svc_server_conf *sc = ap_get_module_config(r->server->module_config, &svc_module);
    svc_ctx_t *ctx = svc_glue_ctx_bare(r->server, p);

    ctx->method = r->method;
    ctx->path = r->uri;
    ctx->headers_in = r->headers_in;
    ctx->client_ip = r->useragent_ip ? r->useragent_ip : "";
    ctx->client_sa = r->useragent_addr;
    ctx->user_agent = apr_table_get(r->headers_in, "User-Agent");
    /* Our own origin, for the CSRF check: the public URL's when it is
     * configured, not one the request's Host header made up. */
    ctx->self_origin = sc->core.public_origin ? sc->core.public_origin : self_origin(r);
    ctx->is_tls = strcmp(ap_http_scheme(r), "https") == 0
                  || (sc->core.public_origin && strncmp(sc->core.public_origin, "https:", 6) == 0);
    return ctx;
}

void svc_glue_ctx_release(svc_ctx_t *ctx)
{
    db_return(ctx->glue);
}

/* ------------------------------------------------------------------------
 * The answer: the context back into a response
 */

/*
 * Writes an answer the handler produces in pieces (svc_reply_produced):
 * each piece from a scratch pool cleared after it is written, the database
 * connection given back before each write, and a flush after each, so
 * neither memory nor a pooled connection grows with the size or waits on
 * the client. A piece that fails after the head went out cuts the answer
 * short and closes the connection: the client sees fewer bytes than
 * Content-Length said, never a wrong file.
 */
static void write_produced(svc_ctx_t *ctx, request_rec *r)
{
    apr_pool_t *scratch;
    apr_off_t sent = 0;
    apr_status_t rv = APR_SUCCESS;

    apr_pool_create(&scratch, r->pool);
    while (!r->connection->aborted) {
        const char *data = NULL;
        apr_size_t len = 0;

        apr_pool_clear(scratch);
        rv = ctx->producer(ctx, ctx->producer_baton, scratch, &data, &len);
        svc_glue_ctx_release(ctx);
        if (rv != APR_SUCCESS || len == 0) {
            break;
        }
        if (ap_rwrite(data, (int)len, r) < 0 || ap_rflush(r) < 0) {
            break;
        }
        sent += (apr_off_t)len;
    }
    apr_pool_destroy(scratch);
    if (sent != ctx->producer_len) {
        if (!r->connection->aborted) {
            ap_log_rerror(APLOG_MARK, APLOG_ERR, rv >= APR_OS_START_USERERR ? 0 : rv, r,
                          "SVC0050: %s stopped after %" APR_OFF_T_FMT " of %" APR_OFF_T_FMT
                          " bytes request_id=%s", ctx->route ? ctx->route->op_id : r->uri,
                          sent, ctx->producer_len, ctx->request_id);
        }
        r->connection->keepalive = AP_CONN_CLOSE;
        r->connection->aborted = 1;
    }
}

static int copy_header(void *baton, const char *key, const char *val)
{
    request_rec *r = baton;

    apr_table_add(r->err_headers_out, key, val);
    return 1;
}

void svc_glue_write_head(svc_ctx_t *ctx, request_rec *r, int status, const char *content_type)
{
    /* err_headers_out survive an error status; everything we send goes there. */
    apr_table_do(copy_header, r, ctx->headers_out, NULL);
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
    apr_table_setn(r->err_headers_out, "X-Content-Type-Options", "nosniff");
    r->status = status;
    if (content_type) {
        ap_set_content_type(r, content_type);
    }
}

int svc_glue_respond(svc_ctx_t *ctx, request_rec *r)
{
    svc_glue_write_head(ctx, r, ctx->status, ctx->content_type);
    if (ctx->producer) {
        ap_set_content_length(r, ctx->producer_len);
        if (!r->header_only) {
            write_produced(ctx, r);
        }
    }
    else if (ctx->resp_body && ctx->status != 204) {
        ap_set_content_length(r, (apr_off_t)ctx->resp_len);
        if (!r->header_only) {
            ap_rwrite(ctx->resp_body, (int)ctx->resp_len, r);
        }
    }
    else {
        ap_set_content_length(r, 0);
    }
    return OK;
}
