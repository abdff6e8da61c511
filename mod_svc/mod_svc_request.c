/*
 * mod_svc_request.c: one API request through httpd. Builds the core
 * context from the request_rec (mod_svc_ctx.c), receives the body under
 * the route's cap, runs the kernel's dispatch, logs a failure, and writes
 * the answer through the one response writer (mod_svc_ctx.c), or hands an
 * event stream to mod_svc_sse.c.
 */
#include "mod_svc_glue.h"

#include <http_core.h>
#include <http_protocol.h>
#include <http_request.h>
#include <apr_atomic.h>
#include <apr_strings.h>


APLOG_USE_MODULE(svc);

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
 * Where the path carries a credential (a share link's token: routes flagged
 * SVC_RF_SECRET_PATH, and any path under the portal's prefix, matched or
 * not), the access log must not print it: the URI, the unparsed URI and the
 * request line get [REDACTED] in place of the :token segment (everything
 * after the prefix when no route matched). The request line is rebuilt from
 * the decoded path, so no spelling of the token in the raw line (percent
 * escapes, dot segments) survives. The core has already read the token.
 */
#define SVC_SECRET_PATH_PREFIX "/api/share/"

static void hide_path(request_rec *r, const svc_route_t *route)
{
    const char *masked = route ? svc_route_redact_path(r->pool, route, r->uri)
                               : SVC_SECRET_PATH_PREFIX "[REDACTED]";
    const char *unparsed = r->args ? apr_pstrcat(r->pool, masked, "?", r->args, NULL) : masked;

    r->uri = apr_pstrdup(r->pool, masked);
    r->parsed_uri.path = r->uri;
    r->unparsed_uri = apr_pstrdup(r->pool, unparsed);
    r->the_request = apr_pstrcat(r->pool, r->method, " ", unparsed,
                                 r->protocol && *r->protocol ? " " : "",
                                 r->protocol ? r->protocol : "", NULL);
}

/*
 * Reads the request body, refusing it with 413 as soon as it is known to be
 * over `limit`: up front from Content-Length, or while reading a chunked
 * body. With limit 0 the route takes no body, and any byte is kept so the
 * core can refuse it with 400. The buffer grows with what arrives (a route
 * may accept 25 MiB; most bodies are small).
 */
static apr_status_t receive_body(svc_ctx_t *ctx, request_rec *r, apr_size_t limit)
{
    apr_size_t cap = limit ? limit : 1;
    apr_size_t len = 0, size;
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
    /* Content-Length, when given, is the size; otherwise start small. */
    size = r->remaining > 0 ? (apr_size_t)r->remaining : 16384;
    size = size < cap ? size : cap;
    buf = apr_palloc(r->pool, size + 1);
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
        if (len + (apr_size_t)got > size) {
            char *bigger;
            size = size * 2 > len + (apr_size_t)got ? size * 2 : len + (apr_size_t)got;
            size = size < cap ? size : cap;
            bigger = apr_palloc(r->pool, size + 1);
            memcpy(bigger, buf, len);
            buf = bigger;
        }
        memcpy(buf + len, chunk, (apr_size_t)got);
        len += (apr_size_t)got;
    }
    buf[len] = '\0';
    ctx->raw_body = buf;
    ctx->raw_len = len;
    return APR_SUCCESS;
}

/*
 * A body the handler reads as it arrives (SVC_RF_STREAM_BODY): nothing is
 * read here but the head. Over the cap by Content-Length: 413 before a byte
 * is read; otherwise the kernel counts what the handler takes
 * (svc_body_read). "100 Continue" goes out with the first read, so a
 * refused request is refused before the client sends its body.
 */
typedef struct {
    request_rec *r;
    int started;
    int ended;                  /* the whole body was read */
} stream_body_t;

/* The next piece of a streamed body: the context's body_reader. */
static apr_status_t stream_body_next(void *baton, char *buf, apr_size_t *plen)
{
    stream_body_t *sb = baton;
    apr_size_t want = *plen;
    long got;

    *plen = 0;
    if (sb->ended) {
        return APR_SUCCESS;
    }
    if (!sb->started) {
        sb->started = 1;
        if (!ap_should_client_block(sb->r)) {
            sb->ended = 1;
            return APR_SUCCESS;
        }
    }
    got = ap_get_client_block(sb->r, buf, want > 65536 ? 65536 : want);
    if (got < 0) {
        return APR_EGENERAL;
    }
    if (got == 0) {
        sb->ended = 1;
    }
    *plen = (apr_size_t)got;
    return APR_SUCCESS;
}

static apr_status_t stream_body_begin(svc_ctx_t *ctx, request_rec *r, apr_size_t limit,
                                      stream_body_t **psb)
{
    stream_body_t *sb;

    if (ap_setup_client_block(r, REQUEST_CHUNKED_DECHUNK) != OK) {
        return svc_fail(ctx, 400, "invalid_body", "The request body could not be read.");
    }
    if (r->remaining > (apr_off_t)limit) {
        r->connection->keepalive = AP_CONN_CLOSE;
        return svc_fail_too_large(ctx, limit);
    }
    sb = apr_pcalloc(r->pool, sizeof(*sb));
    sb->r = r;
    ctx->body_reader = stream_body_next;
    ctx->body_baton = sb;
    *psb = sb;
    return APR_SUCCESS;
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
            ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "SVC0305: %s answered %d (%s) "
                          "request_id=%s", ctx->route ? ctx->route->op_id : r->uri,
                          pr->status, pr->code, ctx->request_id);
        }
        return;
    }
    if (rv == SVC_EDBDOWN || rv == SVC_ESCHEMA) {
        /* A pooled connection that died mid-request is an outage too. */
        if (rv == SVC_EDBDOWN) {
            svc_dbwatch_result(r->server, r->pool, 0);
        }
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

/*
 * Request notes for the access log (conf/svc.conf shows the LogFormat):
 * the route's template, never the raw path (which can name a share link's
 * token, and whose ids would make every line its own series), the
 * caller's user id and the org a tenant route addressed. Set whether the
 * request succeeded or not, as far as it got.
 */
static void set_notes(request_rec *r, const svc_ctx_t *ctx)
{
    if (ctx->route) {
        apr_table_setn(r->notes, "svc-route", ctx->route->path);
    }
    /* Copied: the context's pool may go before the request (an event
     * stream's, see svc_handler). */
    if (ctx->who && ctx->who->user_id) {
        apr_table_set(r->notes, "svc-user", ctx->who->user_id);
    }
    if (ctx->org && ctx->org->slug) {
        apr_table_set(r->notes, "svc-org", ctx->org->slug);
    }
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
    stream_body_t *sb = NULL;
    apr_pool_t *cp;
    svc_ctx_t *ctx;
    apr_status_t rv;
    int refused, ret;

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
    /*
     * The context lives in a pool of its own under the request's: an event
     * stream's request lives a second after the stream is suspended (and
     * as long as the stream under an operator's output filter), and what
     * authorizing it took (the caller, the org, the route's parameters, the
     * database's answers: some 4 KiB) goes at the suspension (svc_sse_begin
     * keeps what it needs). Nothing of the request may point into it: what
     * goes into the request's tables is copied there.
     */
    apr_pool_create(&cp, r->pool);
    apr_pool_tag(cp, "svc_ctx");
    ctx = svc_glue_ctx(r, cp);
    ctx->request_id = apr_pstrdup(r->pool, ctx->request_id);

    apr_table_setn(r->err_headers_out, "X-Request-Id", ctx->request_id);
    /* The access log can show it too: LogFormat "... %{SVC_REQUEST_ID}e". */
    apr_table_setn(r->subprocess_env, "SVC_REQUEST_ID", ctx->request_id);

    /* httpd refused the request before we saw it (its ErrorDocument
     * brought it here), or its path does not decode. */
    refused = svc_glue_refusal(r, ctx->request_id);
    ctx->path = refused ? ctx->path : svc_glue_path(r, &refused);
    rv = refused ? svc_dispatch_refusal(ctx, refused) : svc_dispatch_route(ctx, sc->router);
    if (rv == APR_SUCCESS) {
        rv = svc_dispatch_query(ctx, r->args);
    }
    /* Every path under /auth/ is masked, matched or not: a mistyped
     * callback URL still carries a live code and state. */
    if ((ctx->route && (ctx->route->flags & SVC_RF_SECRET_QUERY))
        || strncmp(r->uri, "/auth/", 6) == 0) {
        hide_query(r);
    }
    if (ctx->route && (ctx->route->flags & SVC_RF_SECRET_PATH)) {
        hide_path(r, ctx->route);
    }
    else if (strncmp(r->uri, SVC_SECRET_PATH_PREFIX, sizeof(SVC_SECRET_PATH_PREFIX) - 1) == 0) {
        hide_path(r, NULL);
    }
    if (rv == APR_SUCCESS && ctx->route) {
        rv = (ctx->route->flags & SVC_RF_STREAM_BODY)
             ? stream_body_begin(ctx, r, svc_dispatch_body_limit(ctx), &sb)
             : receive_body(ctx, r, svc_dispatch_body_limit(ctx));
        if (rv == APR_SUCCESS && !sc->core.have_secret
            && (ctx->route->auth == SVC_AUTH_USER || ctx->route->auth == SVC_AUTH_SHARE
                || ctx->route->auth == SVC_AUTH_AGENT)) {
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
    /* A streamed body left unread (refused, or cut at the cap) is not read
     * to its end just to keep the connection: it is closed instead. */
    if (sb && (!sb->ended || ctx->body_cut)) {
        r->connection->keepalive = AP_CONN_CLOSE;
    }
    if (rv != APR_SUCCESS) {
        ctx->producer = NULL;
    }
    set_notes(r, ctx);
    if (rv == APR_SUCCESS && ctx->stream) {
        /* The stream replays from the database, then lets go of it. Its
         * request is counted once its head went out (or it was refused):
         * a stream's length says nothing about the server. httpd holds r
         * until this handler returns, suspended or not. */
        ret = svc_sse_begin(r, ctx);
    }
    else {
        /* Give the connection back before talking to a possibly slow client. */
        svc_glue_ctx_release(ctx);
        ret = svc_glue_respond(ctx, r);
    }
    svc_metrics_request(svc_metrics_current(), ctx->route, r->status,
                        apr_time_now() - r->request_time);
    if (ret == SUSPENDED) {
        /* Before the handler returns: the stream's callbacks wait for it
         * (r->invoke_mtx), and their pools (under the connection's) come
         * from the allocator this one's does, which has no lock. */
        apr_pool_destroy(cp);
    }
    return ret;
}
