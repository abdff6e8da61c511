/*
 * mod_svc_request.c: one API request through httpd. Builds the core
 * context from the request_rec, reads the body under the route's cap,
 * lends the core a pooled database connection, and writes the answer.
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

/* Query strings with more parameters than this are refused. */
#define SVC_MAX_QUERY_PARAMS 64

int svc_glue_dbd_init(void)
{
    dbd_open = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_open);
    dbd_close = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_close);
    return dbd_open && dbd_close;
}

/* The pooled connection lent to one request. */
typedef struct {
    request_rec *r;
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

static apr_status_t db_acquire(svc_ctx_t *ctx)
{
    svc_lease_t *lease = ctx->glue;
    request_rec *r = lease->r;
    PGconn *conn;
    apr_status_t rv;

    lease->dbd = dbd_open(r->pool, r->server);
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
                     r->pool);
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

/*
 * Decodes the query string into ctx->query, all of it or nothing: a
 * parameter that cannot be decoded (a bad escape, an encoded NUL), more
 * than SVC_MAX_QUERY_PARAMS parameters, or a name given twice is a 400.
 * Dropping what cannot be read would answer a wider question than the one
 * asked: a filter that vanished returns more than the client wanted.
 */
static apr_status_t parse_query(svc_ctx_t *ctx, request_rec *r)
{
    char *args, *pair, *state = NULL;
    int n = 0;

    if (!r->args || !*r->args) {
        return APR_SUCCESS;
    }
    args = apr_pstrdup(r->pool, r->args);
    for (pair = apr_strtok(args, "&", &state); pair; pair = apr_strtok(NULL, "&", &state)) {
        char *eq = strchr(pair, '=');
        char *val = eq ? eq + 1 : pair + strlen(pair);

        if (++n > SVC_MAX_QUERY_PARAMS) {
            return svc_fail(ctx, 400, "invalid_query",
                            "The query string has more than %d parameters.",
                            SVC_MAX_QUERY_PARAMS);
        }
        if (eq) {
            *eq = '\0';
        }
        /* Form decoding ('+' is a space); %2F is an ordinary character in a
         * query (encodeURIComponent("/x") is "%2Fx"); bad escapes and %00
         * are refused. */
        if (ap_unescape_urlencoded(pair) != OK || ap_unescape_urlencoded(val) != OK) {
            return svc_fail(ctx, 400, "invalid_query",
                            "The query string has a parameter that is not valid "
                            "percent-encoding, or that encodes a NUL character.");
        }
        if (apr_table_get(ctx->query, pair)) {
            return svc_fail(ctx, 400, "invalid_query",
                            "The query string gives the parameter %s more than once.",
                            svc_printable(r->pool, pair, 64));
        }
        apr_table_setn(ctx->query, pair, val);
    }
    return APR_SUCCESS;
}

/*
 * Where a query may carry credentials (an OAuth code and state), the values
 * are replaced before the access log prints the request line (%r), the URL
 * (%U%q) or the query; the core has already read them.
 */
static void hide_query(request_rec *r)
{
    const char *masked, *qm, *end;

    if (!r->args || !*r->args) {
        return;
    }
    masked = svc_redact_query(r->pool, r->args, NULL, NULL);
    if (r->the_request && (qm = strchr(r->the_request, '?')) != NULL) {
        end = qm + strcspn(qm, " ");
        r->the_request = apr_pstrcat(r->pool,
                                     apr_pstrmemdup(r->pool, r->the_request,
                                                    (apr_size_t)(qm - r->the_request + 1)),
                                     masked, end, NULL);
    }
    if (r->unparsed_uri && (qm = strchr(r->unparsed_uri, '?')) != NULL) {
        r->unparsed_uri = apr_pstrcat(r->pool,
                                      apr_pstrmemdup(r->pool, r->unparsed_uri,
                                                     (apr_size_t)(qm - r->unparsed_uri + 1)),
                                      masked, NULL);
    }
    r->args = apr_pstrdup(r->pool, masked);
    r->parsed_uri.query = r->args;
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

/*
 * Reads the request body, refusing it with 413 as soon as it is known to be
 * over `limit`: up front from Content-Length, or while reading a chunked
 * body. With limit 0 the route takes no body, and any byte is kept so the
 * core can refuse it with 400.
 */
static apr_status_t read_body(svc_ctx_t *ctx, request_rec *r, apr_size_t limit)
{
    apr_size_t cap = limit ? limit : 1;
    apr_size_t len = 0;
    char *buf;
    long got;

    if (ap_setup_client_block(r, REQUEST_CHUNKED_DECHUNK) != OK) {
        return svc_fail(ctx, 400, "invalid_body", "The request body could not be read.");
    }
    if (!ap_should_client_block(r)) {
        return APR_SUCCESS;
    }
    if (limit && r->remaining > (apr_off_t)limit) {
        r->connection->keepalive = AP_CONN_CLOSE;
        return svc_fail_too_large(ctx, limit);
    }
    buf = apr_palloc(r->pool, cap + 1);
    for (;;) {
        char chunk[8192];
        got = ap_get_client_block(r, chunk, sizeof(chunk));
        if (got < 0) {
            r->connection->keepalive = AP_CONN_CLOSE;
            return svc_fail(ctx, 400, "invalid_body", "The request body could not be read.");
        }
        if (got == 0) {
            break;
        }
        if (len + (apr_size_t)got > cap) {
            r->connection->keepalive = AP_CONN_CLOSE;
            if (!limit) {
                len = cap;
                break;
            }
            return svc_fail_too_large(ctx, limit);
        }
        memcpy(buf + len, chunk, (apr_size_t)got);
        len += (apr_size_t)got;
    }
    buf[len] = '\0';
    ctx->raw_body = buf;
    ctx->raw_len = len;
    return APR_SUCCESS;
}

static int copy_header(void *baton, const char *key, const char *val)
{
    request_rec *r = baton;

    apr_table_add(r->err_headers_out, key, val);
    return 1;
}

static int write_response(svc_ctx_t *ctx, request_rec *r)
{
    /* err_headers_out survive an error status; everything we send goes there. */
    apr_table_do(copy_header, r, ctx->headers_out, NULL);
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
    apr_table_setn(r->err_headers_out, "X-Content-Type-Options", "nosniff");
    r->status = ctx->status;
    if (ctx->content_type) {
        ap_set_content_type(r, ctx->content_type);
    }
    if (ctx->resp_body && ctx->status != 204) {
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

/*
 * Requests of this process answered 503 because the database could not be
 * used, since the last report, and the second of that report.
 */
static volatile apr_uint32_t db_unavailable_count;
static volatile apr_uint32_t db_unavailable_reported_at;

/*
 * While the database is down (or behind the schema), every request fails
 * the same way: one line a second per process, with how many failed since
 * the last one, says as much as one line per request, and a long outage
 * under load cannot fill the disk. (mod_dbd's own lines for the same
 * condition are turned down at start: svc_post_config.)
 */
static void report_db_unavailable(svc_ctx_t *ctx, request_rec *r, const svc_problem_t *pr)
{
    apr_uint32_t now = (apr_uint32_t)apr_time_sec(apr_time_now());
    apr_uint32_t last = apr_atomic_read32(&db_unavailable_reported_at);
    apr_uint32_t n;

    apr_atomic_inc32(&db_unavailable_count);
    if (now == last || apr_atomic_cas32(&db_unavailable_reported_at, now, last) != last) {
        return;
    }
    n = apr_atomic_xchg32(&db_unavailable_count, 0);
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "SVC0012: the database is unavailable: "
                  "%u request(s) of this process answered %d since the last report; the "
                  "latest: %s (%s) request_id=%s %s", n, pr->status,
                  ctx->route ? ctx->route->op_id : r->uri, pr->code, ctx->request_id,
                  svc_redact(r->pool, ctx->db ? svc_db_errmsg(ctx->db) : ""));
}

static void log_failure(svc_ctx_t *ctx, request_rec *r, apr_status_t rv,
                        const svc_problem_t *pr)
{
    const char *dberr = ctx->db ? svc_db_errmsg(ctx->db) : "";

    if (pr->status < 500) {
        return;
    }
    if (rv == SVC_EPROBLEM && pr->status >= 502 && pr->status <= 504) {
        /*
         * An upstream (a provider) failed, or a feature is off: not our
         * bug. The handler says why in log_detail; a feature that is off
         * was explained once at start and is not repeated per request.
         */
        if (pr->log_detail) {
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "SVC0022: %s answered %d (%s) "
                          "request_id=%s: %s", ctx->route ? ctx->route->op_id : r->uri,
                          pr->status, pr->code, ctx->request_id,
                          svc_redact(r->pool, svc_printable(r->pool, pr->log_detail, 1024)));
        }
        else {
            ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "%s answered %d (%s) request_id=%s",
                          ctx->route ? ctx->route->op_id : r->uri, pr->status, pr->code,
                          ctx->request_id);
        }
        return;
    }
    if (rv == SVC_EDBDOWN || rv == SVC_ESCHEMA) {
        report_db_unavailable(ctx, r, pr);
        return;
    }
    /* Our own status codes mean nothing to APR's strerror: log them as 0. */
    ap_log_rerror(APLOG_MARK, APLOG_ERR, rv >= APR_OS_START_USERERR ? 0 : rv, r,
                  "SVC0013: %s failed with %d (%s) request_id=%s sqlstate=%s %s",
                  ctx->route ? ctx->route->op_id : "-", pr->status, pr->code,
                  ctx->request_id, ctx->db ? svc_db_sqlstate(ctx->db) : "-",
                  svc_redact(r->pool, dberr));
}

/* The benchmark's reference point: as little work as an answer can take. */
static int noop_handler(request_rec *r)
{
    if (r->method_number == M_TRACE) {
        /* Never an echo of the request (see svc_dispatch_route); and not
         * httpd's error page either, whose Allow would offer TRACE. */
        r->status = HTTP_METHOD_NOT_ALLOWED;
        apr_table_setn(r->headers_out, "Allow", "GET, HEAD");
        ap_set_content_length(r, 0);
        return OK;
    }
    apr_table_setn(r->headers_out, "X-Request-Id", svc_id_new(r->pool, "req_"));
    ap_set_content_type(r, "application/json; charset=utf-8");
    ap_set_content_length(r, 2);
    if (!r->header_only) {
        ap_rwrite("{}", 2, r);
    }
    return OK;
}

int svc_handler(request_rec *r)
{
    svc_server_conf *sc;
    svc_lease_t *lease;
    svc_ctx_t *ctx;
    apr_status_t rv;

    if (!r->handler || strncmp(r->handler, "svc", 3) != 0) {
        return DECLINED;
    }
    if (strcmp(r->handler, "svc-noop") == 0) {
        return noop_handler(r);
    }
    if (r->handler[3] != '\0') {
        return DECLINED;
    }
    sc = ap_get_module_config(r->server->module_config, &svc_module);
    ctx = svc_ctx_create(r->pool, &sc->core);
    ctx->method = r->method;
    ctx->path = r->uri;
    ctx->headers_in = r->headers_in;
    ctx->client_ip = r->useragent_ip ? r->useragent_ip : "";
    ctx->client_sa = r->useragent_addr;
    ctx->user_agent = apr_table_get(r->headers_in, "User-Agent");
    ctx->request_id = svc_id_new(r->pool, "req_");
    /* Our own origin, for the CSRF check: the public URL's when it is
     * configured, not one the request's Host header made up. */
    ctx->self_origin = sc->core.public_origin ? sc->core.public_origin : self_origin(r);
    ctx->is_tls = strcmp(ap_http_scheme(r), "https") == 0
                  || (sc->core.public_origin && strncmp(sc->core.public_origin, "https:", 6) == 0);

    lease = apr_pcalloc(r->pool, sizeof(*lease));
    lease->r = r;
    lease->ctx = ctx;
    ctx->glue = lease;
    ctx->db_acquire = db_acquire;
    ctx->db_release = db_release;
    apr_pool_cleanup_register(r->pool, lease, db_return_cleanup, apr_pool_cleanup_null);

    apr_table_setn(r->err_headers_out, "X-Request-Id", ctx->request_id);
    /* The access log can show it too: LogFormat "... %{SVC_REQUEST_ID}e". */
    apr_table_setn(r->subprocess_env, "SVC_REQUEST_ID", ctx->request_id);

    rv = svc_dispatch_route(ctx, sc->router);
    if (rv == APR_SUCCESS) {
        rv = parse_query(ctx, r);
    }
    /* Every path under /auth/ is masked, matched or not: a mistyped
     * callback URL still carries a live code and state. */
    if ((ctx->route && (ctx->route->flags & SVC_RF_SECRET_QUERY))
        || strncmp(r->uri, "/auth/", 6) == 0) {
        hide_query(r);
    }
    if (rv == APR_SUCCESS && ctx->route) {
        rv = read_body(ctx, r, svc_dispatch_body_limit(ctx));
        if (rv == APR_SUCCESS && !sc->core.have_secret && ctx->route->auth == SVC_AUTH_USER) {
            rv = svc_fail(ctx, 503, "not_configured",
                          "The service is not configured for authentication yet "
                          "(SvcSecret is missing).");
        }
        if (rv == APR_SUCCESS) {
            rv = svc_dispatch_run(ctx);
        }
    }
    if (rv != APR_SUCCESS) {
        svc_problem_t *pr = svc_ctx_problem(ctx, rv);
        log_failure(ctx, r, rv, pr);
        svc_ctx_render_problem(ctx, pr);
    }
    /* Give the connection back before talking to a possibly slow client. */
    db_return(lease);
    return write_response(ctx, r);
}
