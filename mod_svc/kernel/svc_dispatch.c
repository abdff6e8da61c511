/*
 * svc_dispatch.c: routing, then the checks every route shares, then the
 * handler. Handlers only ever see authenticated, authorized, rate-checked
 * requests with validated bodies.
 */
#include "svc_dispatch.h"
#include "svc_auth.h"
#include "svc_db.h"
#include "svc_http.h"
#include "svc_json.h"
#include "svc_ratelimit.h"
#include "svc_redact.h"

#include <string.h>

/* The longest id a path may carry (ours are a prefix and 22 characters). */
#define SVC_ID_MAX 64

/*
 * The longest path (decoded, without the query) that is routed: no route's
 * path with valid parameters comes near it (parameters are at most 200
 * bytes), so anything longer names nothing and is refused before the
 * router splits it (docs/decisions.md).
 */
#define SVC_PATH_MAX 2048

/* An id as a path names one: ASCII letters, digits, '_' and '-'. */
static int id_valid(const char *s)
{
    apr_size_t n = strlen(s);

    return n >= 1 && n <= SVC_ID_MAX
        && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

static int param_valid(void *baton, const char *name, const char *value)
{
    apr_size_t n = strlen(name);

    (void)baton;
    if (n > 4 && strcmp(name + n - 4, "Slug") == 0) {
        return svc_slug_valid(value);
    }
    return id_valid(value);
}

apr_status_t svc_dispatch_route(svc_ctx_t *ctx, const svc_router_t *rt)
{
    const char *allow = NULL;

    if (strlen(ctx->path) > SVC_PATH_MAX) {
        return svc_fail(ctx, 414, "uri_too_long", "The path is longer than any endpoint's "
                        "(%d bytes at most).", SVC_PATH_MAX);
    }
    ctx->route = svc_router_match(rt, ctx->method, ctx->path, ctx->pool, ctx->params, &allow);
    if (ctx->route) {
        /*
         * Every path parameter has a format: a slug for :orgSlug and
         * :projectSlug, an id for the others. A value of another shape
         * names nothing, so it is a 404 before any handler or query sees
         * it (bytes that are not UTF-8 would make PostgreSQL refuse the
         * statement: a 500 for what is only a wrong URL).
         */
        if (!apr_table_do(param_valid, NULL, ctx->params, NULL)) {
            return svc_fail(ctx, 404, "not_found", "There is nothing at this path.");
        }
        return APR_SUCCESS;
    }
    /*
     * No route takes TRACE (svc_router_create refuses one): it echoes the
     * request, Authorization and cookies included. It is refused wherever
     * it is sent, even where there is no route, whatever httpd's
     * TraceEnable says (the glue keeps httpd's own TRACE handler away
     * from the service's URLs).
     */
    if (strcmp(ctx->method, "TRACE") == 0) {
        apr_table_setn(ctx->headers_out, "Allow", allow ? allow : "");
        return svc_fail(ctx, 405, "method_not_allowed",
                        "TRACE is not served: it would echo the request, credentials "
                        "included.");
    }
    if (!allow) {
        return svc_fail(ctx, 404, "not_found", "There is no endpoint at this path.");
    }
    apr_table_setn(ctx->headers_out, "Allow", allow);
    if (strcmp(ctx->method, "OPTIONS") == 0) {
        return svc_reply_empty(ctx);
    }
    return svc_fail(ctx, 405, "method_not_allowed",
                    "This endpoint does not accept %s; it accepts %s.", ctx->method, allow);
}

apr_status_t svc_dispatch_query(svc_ctx_t *ctx, const char *args)
{
    char *copy, *pair, *state = NULL;
    int n = 0;

    if (!args || !*args) {
        return APR_SUCCESS;
    }
    copy = apr_pstrdup(ctx->pool, args);
    for (pair = apr_strtok(copy, "&", &state); pair; pair = apr_strtok(NULL, "&", &state)) {
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
        if (!svc_url_decode_form(pair) || !svc_url_decode_form(val)) {
            return svc_fail(ctx, 400, "invalid_query",
                            "The query string has a parameter that is not valid "
                            "percent-encoding, or that encodes a NUL character.");
        }
        if (apr_table_get(ctx->query, pair)) {
            return svc_fail(ctx, 400, "invalid_query",
                            "The query string gives the parameter %s more than once.",
                            svc_printable(ctx->pool, pair, 64));
        }
        apr_table_setn(ctx->query, pair, val);
    }
    return APR_SUCCESS;
}

/* What httpd refuses before a route is known, said as a problem. */
static const struct {
    int status;
    const char *code;
    const char *detail;
} refusals[] = {
    { .status = 400, .code = "bad_request", .detail = "The request could not be read: a "
      "malformed percent-encoding in its path, or a malformed header." },
    { .status = 403, .code = "forbidden",
      .detail = "The server's configuration refuses this request." },
    { .status = 404, .code = "not_found", .detail = "There is no endpoint at this path (an "
      "encoded '/' or NUL never names one)." },
    { .status = 408, .code = "request_timeout",
      .detail = "The request did not arrive in time." },
    { .status = 413, .code = "payload_too_large",
      .detail = "The request body is larger than the server accepts." },
    { .status = 414, .code = "uri_too_long",
      .detail = "The request's URL is longer than the server accepts." },
};

apr_status_t svc_dispatch_refusal(svc_ctx_t *ctx, int status)
{
    apr_size_t i;

    for (i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        if (refusals[i].status == status) {
            return svc_fail(ctx, status, refusals[i].code, "%s", refusals[i].detail);
        }
    }
    if (status >= 500 && status <= 599) {
        return svc_fail(ctx, status, status == 500 ? "internal_error"
                                     : status == 503 ? "service_unavailable" : "server_error",
                        "The server could not answer this request (HTTP %d).", status);
    }
    if (status < 400 || status > 499) {
        status = 400;
    }
    return svc_fail(ctx, status, "request_refused", "The server refused this request before "
                    "the service saw it (HTTP %d).", status);
}

apr_size_t svc_dispatch_body_limit(const svc_ctx_t *ctx)
{
    apr_size_t cap, need;

    if (ctx->route && (ctx->route->flags & SVC_RF_STREAM_BODY)) {
        return ctx->conf->upload_limit;
    }
    if (!ctx->route || (!ctx->route->body && !(ctx->route->flags & SVC_RF_RAW_BODY))) {
        return 0;
    }
    if (ctx->route->flags & SVC_RF_DOCUMENT_BODY) {
        /* A document of SvcDocumentLimit bytes with every byte escaped. */
        cap = ctx->conf->document_limit * 6 + 64 * 1024;
        if (cap < ctx->conf->body_limit) {
            cap = ctx->conf->body_limit;
        }
    }
    else {
        cap = ctx->route->body_limit ? ctx->route->body_limit : ctx->conf->body_limit;
    }
    /*
     * Never below the largest valid body in its longest encoding: a field
     * of 2,000 characters is 24 KB as \u escapes (what most encoders
     * write beyond ASCII), and valid text must not be a 413 for its
     * encoding.
     */
    need = svc_json_body_max(ctx->route->body);
    return need > cap ? need : cap;
}

apr_status_t svc_fail_too_large(svc_ctx_t *ctx, apr_size_t limit)
{
    return svc_fail(ctx, 413, "payload_too_large",
                    "The request body is larger than this endpoint accepts (%" APR_SIZE_T_FMT
                    " bytes).", limit);
}

apr_status_t svc_body_read(svc_ctx_t *ctx, char *buf, apr_size_t *plen)
{
    apr_size_t limit = svc_dispatch_body_limit(ctx);
    apr_status_t rv;

    if (!ctx->body_reader) {
        *plen = 0;
        return APR_SUCCESS;
    }
    if (ctx->body_cut) {
        return SVC_EPROBLEM;
    }
    /*
     * Nothing of the body is taken before the caller's credentials are
     * confirmed (a deferred token check still pending runs now): a request
     * that must run again from authentication (SVC_ERESTART) still has its
     * whole body.
     */
    if (ctx->body_read == 0 && ctx->db && svc_db_pending(ctx->db)) {
        rv = svc_db_flush(ctx->db);
        if (ctx->auth_rv != APR_SUCCESS) {
            return ctx->auth_rv;
        }
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    if (ctx->body_reader(ctx->body_baton, buf, plen) != APR_SUCCESS) {
        ctx->body_cut = 1;
        return svc_fail(ctx, 400, "invalid_body", "The request body could not be read to its "
                        "end (the client stopped sending it?).");
    }
    ctx->body_read += (apr_off_t)*plen;
    if ((apr_size_t)ctx->body_read > limit) {
        ctx->body_cut = 1;
        return svc_fail_too_large(ctx, limit);
    }
    return APR_SUCCESS;
}

/* application/json, optionally with parameters; also any +json type. */
static int is_json_type(const char *ct)
{
    apr_size_t n;

    if (!ct) {
        return 0;
    }
    n = strcspn(ct, "; \t");
    if (n == 16 && strncasecmp(ct, "application/json", 16) == 0) {
        return 1;
    }
    return n > 17 && strncasecmp(ct, "application/", 12) == 0
        && strncasecmp(ct + n - 5, "+json", 5) == 0;
}

static apr_status_t parse_body(svc_ctx_t *ctx)
{
    const svc_route_t *route = ctx->route;
    const char *err;
    json_t *errors;

    if (route->flags & SVC_RF_STREAM_BODY) {
        /* The handler's to read, whatever its type (svc_body_read). */
        return APR_SUCCESS;
    }
    if (route->flags & SVC_RF_RAW_BODY) {
        /* The handler's to check and parse (the webhook's signature first). */
        return APR_SUCCESS;
    }
    if (!route->body) {
        if (ctx->raw_len > 0) {
            return svc_fail(ctx, 400, "body_not_allowed",
                            "This endpoint takes no request body.");
        }
        return APR_SUCCESS;
    }
    if (ctx->raw_len == 0) {
        /* No body is the empty object: fine when nothing is required. */
        ctx->body = svc_json_pool(ctx->pool, json_object());
    }
    else {
        if (!is_json_type(apr_table_get(ctx->headers_in, "Content-Type"))) {
            return svc_fail(ctx, 415, "unsupported_media_type",
                            "The request body must be JSON (Content-Type: application/json).");
        }
        if (svc_json_parse_body(&ctx->body, ctx->raw_body, ctx->raw_len, ctx->pool, &err)
            != APR_SUCCESS) {
            return svc_fail(ctx, 400, "invalid_json", "%s", err);
        }
    }
    if (svc_json_check(ctx->body, route->body, ctx->pool, &errors) != APR_SUCCESS) {
        svc_fail(ctx, 400, "validation_failed", "The request has invalid fields.");
        ctx->problem->errors = errors;
        return SVC_EPROBLEM;
    }
    return APR_SUCCESS;
}

/* Who a rate-limited request is counted against, or NULL: not counted. */
static const char *rate_subject(const svc_ctx_t *ctx)
{
    if (ctx->route->flags & SVC_RF_RATE_PER_TOKEN) {
        return ctx->who && ctx->who->via == SVC_VIA_PAT ? ctx->who->token_id : NULL;
    }
    if (ctx->who && ctx->who->via == SVC_VIA_AGENT) {
        return ctx->who->target_id;
    }
    return ctx->who ? ctx->who->user_id : ctx->client_ip;
}

static apr_status_t run_once(svc_ctx_t *ctx)
{
    const svc_route_t *route = ctx->route;
    apr_status_t rv;

    if ((rv = svc_auth_check(ctx)) != APR_SUCCESS) {
        return rv;
    }
    if ((rv = parse_body(ctx)) != APR_SUCCESS) {
        return rv;
    }
    /*
     * Only well-formed, authorized requests count against a limit: bad input
     * changes nothing, not even a counter, and a typo does not cost a
     * client its budget.
     */
    if (route->rate_class && rate_subject(ctx)) {
        if ((rv = svc_rate_hit(ctx, route->rate_class, rate_subject(ctx))) != APR_SUCCESS) {
            return rv;
        }
    }
    rv = route->handler(ctx);
    if (rv == APR_SUCCESS && ctx->status == 0) {
        /* A handler that answered nothing is a bug, not a 200. */
        return APR_EGENERAL;
    }
    return rv;
}

/* Back to the state right after routing, for a second run. */
static void reset(svc_ctx_t *ctx)
{
    /* No transaction is open here: a write ends within svc_write. */
    ctx->write_state = SVC_WRITE_NONE;
    ctx->who = NULL;
    ctx->org = NULL;
    ctx->project = NULL;
    ctx->body = NULL;
    ctx->problem = NULL;
    ctx->auth_rv = APR_SUCCESS;
    ctx->auth_problem = NULL;
    svc_ctx_forget_answer(ctx);
    apr_table_clear(ctx->headers_out);
}

apr_status_t svc_dispatch_run(svc_ctx_t *ctx)
{
    apr_status_t rv, crv;

    rv = run_once(ctx);
    /*
     * Authentication may have been confirmed only speculatively (see
     * svc_pat_authenticate); its verdict overrides whatever the handler
     * answered. A stale assumption (all that ran were reads) means running
     * the request once more, now without the assumption.
     */
    crv = svc_auth_confirm(ctx);
    /* (A stale assumption is found before any write: BEGIN settles it.) */
    if (crv == SVC_ERESTART && ctx->write_state != SVC_WRITE_COMMITTED) {
        reset(ctx);
        rv = run_once(ctx);
        crv = svc_auth_confirm(ctx);
    }
    return crv != APR_SUCCESS ? crv : rv;
}
