/*
 * svc_ctx.c: the request context, and the one place problem documents are
 * built (RFC 9457 with our `code` and `request_id` members).
 */
#include "svc_ctx.h"
#include "svc_db.h"
#include "svc_json.h"
#include "svc_redact.h"

#include <stdarg.h>
#include <string.h>

svc_ctx_t *svc_ctx_create(apr_pool_t *p, const svc_config_t *conf)
{
    svc_ctx_t *ctx = apr_pcalloc(p, sizeof(*ctx));

    ctx->pool = p;
    ctx->conf = conf;
    ctx->params = apr_table_make(p, 4);
    ctx->query = apr_table_make(p, 4);
    ctx->headers_out = apr_table_make(p, 4);
    ctx->method = "GET";
    ctx->path = "/";
    ctx->client_ip = "";
    ctx->user_agent = "";
    ctx->request_id = "";
    return ctx;
}

apr_status_t svc_ctx_db(svc_ctx_t *ctx, svc_db_t **pdb)
{
    apr_status_t rv;

    if (!ctx->db) {
        if (!ctx->db_acquire) {
            return SVC_EDBDOWN;
        }
        rv = ctx->db_acquire(ctx);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        /* A request changes nothing but through svc_write. */
        if (ctx->db) {
            svc_db_guard_writes(ctx->db);
        }
    }
    *pdb = ctx->db;
    return ctx->db ? APR_SUCCESS : SVC_EDBDOWN;
}

apr_status_t svc_reply_one(svc_ctx_t *ctx, const char *param, svc_reply_one_fn reply)
{
    svc_db_t *db;
    apr_status_t rv = svc_ctx_db(ctx, &db);

    return rv == APR_SUCCESS ? reply(ctx, db, apr_table_get(ctx->params, param), 200) : rv;
}

apr_status_t svc_ctx_db_release(svc_ctx_t *ctx)
{
    apr_status_t rv = APR_SUCCESS;

    if (ctx->write_state == SVC_WRITE_OPEN) {
        /* Giving the connection back would roll the write back under it. */
        return APR_EGENERAL;
    }
    if (ctx->db && ctx->db_release) {
        /*
         * A deferred authentication check must not leave with the
         * connection: it runs now, and if it cannot, the request fails
         * closed. Either way the verdict is kept in ctx->auth_rv.
         */
        rv = svc_db_flush(ctx->db);
        if (rv != APR_SUCCESS && ctx->auth_rv == APR_SUCCESS) {
            ctx->auth_rv = rv;
        }
        ctx->db_release(ctx);
    }
    return ctx->auth_rv != APR_SUCCESS ? ctx->auth_rv : rv;
}

apr_status_t svc_fail(svc_ctx_t *ctx, int status, const char *code, const char *fmt, ...)
{
    svc_problem_t *pr = apr_pcalloc(ctx->pool, sizeof(*pr));
    va_list ap;

    va_start(ap, fmt);
    pr->detail = apr_pvsprintf(ctx->pool, fmt, ap);
    va_end(ap);
    pr->status = status;
    pr->code = code;
    ctx->problem = pr;
    return SVC_EPROBLEM;
}

void svc_fail_field(svc_ctx_t *ctx, const char *field, const char *code, const char *fmt, ...)
{
    va_list ap;
    const char *msg;

    va_start(ap, fmt);
    msg = apr_pvsprintf(ctx->pool, fmt, ap);
    va_end(ap);
    if (!ctx->problem || ctx->problem->status != 400 || !ctx->problem->errors) {
        svc_fail(ctx, 400, "validation_failed", "The request has invalid fields.");
        ctx->problem->errors = svc_json_pool(ctx->pool, json_array());
    }
    json_array_append_new(ctx->problem->errors,
                          json_pack("{s:s,s:s,s:s}", "field", field, "code", code,
                                    "message", msg));
}

svc_problem_t *svc_ctx_problem(svc_ctx_t *ctx, apr_status_t rv)
{
    if (rv == SVC_EPROBLEM && ctx->problem) {
        return ctx->problem;
    }
    switch (rv) {
    case SVC_EDBDOWN:
        apr_table_setn(ctx->headers_out, "Retry-After", "1");
        svc_fail(ctx, 503, "service_unavailable",
                 "The database is not reachable right now; try again shortly.");
        break;
    case SVC_ESCHEMA:
        apr_table_setn(ctx->headers_out, "Retry-After", "30");
        svc_fail(ctx, 503, "schema_behind",
                 "The service is being upgraded; try again shortly.");
        break;
    case SVC_ECONFLICT:
    case SVC_EINTEGRITY:
        /* A database rule refused the change (a concurrent change usually
         * made it invalid): the state, not the request, is the problem. */
        svc_fail(ctx, 409, "conflict", "The request conflicts with the current state.");
        break;
    case SVC_ENOTFOUND:
        svc_fail(ctx, 404, "not_found", "No such resource.");
        break;
    default:
        svc_fail(ctx, 500, "internal_error",
                 "The service failed to answer; the request id identifies the failure "
                 "in the server's log.");
        break;
    }
    return ctx->problem;
}

const char *svc_ctx_failure_why(svc_ctx_t *ctx, apr_status_t rv)
{
    const svc_problem_t *pr = svc_ctx_problem(ctx, rv);

    if (pr->status < 500) {
        return NULL;
    }
    return ctx->db && *svc_db_errmsg(ctx->db)
           ? apr_psprintf(ctx->pool, "%s (sqlstate %s): %s", pr->code,
                          svc_db_sqlstate(ctx->db),
                          svc_redact(ctx->pool, svc_printable(ctx->pool,
                                                              svc_db_errmsg(ctx->db), 800)))
           : apr_psprintf(ctx->pool, "%s: %s", pr->code, pr->detail ? pr->detail : "");
}

const char *svc_status_title(int status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 402: return "Payment Required";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
    }
}

void svc_ctx_render_problem(svc_ctx_t *ctx, const svc_problem_t *pr)
{
    json_t *doc = json_pack("{s:s,s:s,s:i,s:s,s:s,s:s}",
                            "type", "about:blank",
                            "title", svc_status_title(pr->status),
                            "status", pr->status,
                            "detail", pr->detail ? pr->detail : "",
                            "code", pr->code ? pr->code : "error",
                            "request_id", ctx->request_id ? ctx->request_id : "");

    if (pr->errors) {
        json_object_set(doc, "errors", pr->errors);
    }
    /* A 503 or a 429 always says when to try again (the OpenAPI document
     * declares Retry-After on both): one whose cause did not say, says
     * shortly. */
    if ((pr->status == 503 || pr->status == 429)
        && !apr_table_get(ctx->headers_out, "Retry-After")) {
        apr_table_setn(ctx->headers_out, "Retry-After", pr->status == 429 ? "1" : "5");
    }
    ctx->status = pr->status;
    ctx->content_type = "application/problem+json";
    ctx->resp_body = svc_json_dump(ctx->pool, doc);
    ctx->resp_len = strlen(ctx->resp_body);
    json_decref(doc);
}

void svc_ctx_forget_answer(svc_ctx_t *ctx)
{
    ctx->status = 0;
    ctx->content_type = NULL;
    ctx->resp_body = NULL;
    ctx->resp_len = 0;
    ctx->producer = NULL;
    ctx->producer_baton = NULL;
    ctx->producer_len = 0;
    ctx->stream = NULL;
}

/* A write committed its answer: nothing may change it now. */
static int answer_final(const svc_ctx_t *ctx)
{
    return ctx->write_state == SVC_WRITE_COMMITTED;
}

apr_status_t svc_reply_json(svc_ctx_t *ctx, int status, json_t *body)
{
    /* A json_pack that failed must become a 500 problem, not a 200 "null". */
    if (!body) {
        return APR_ENOMEM;
    }
    if (answer_final(ctx)) {
        json_decref(body);
        return APR_EGENERAL;
    }
    ctx->status = status;
    ctx->content_type = "application/json; charset=utf-8";
    ctx->resp_body = svc_json_dump(ctx->pool, body);
    ctx->resp_len = strlen(ctx->resp_body);
    json_decref(body);
    return APR_SUCCESS;
}

apr_status_t svc_reply_body(svc_ctx_t *ctx, int status, const char *content_type,
                            const char *body, apr_size_t len)
{
    if (answer_final(ctx)) {
        return APR_EGENERAL;
    }
    ctx->status = status;
    ctx->content_type = content_type;
    ctx->resp_body = body;
    ctx->resp_len = len;
    return APR_SUCCESS;
}

apr_status_t svc_reply_produced(svc_ctx_t *ctx, int status, const char *content_type,
                                apr_off_t len, svc_body_producer_fn fn, void *baton)
{
    if (answer_final(ctx)) {
        return APR_EGENERAL;
    }
    ctx->status = status;
    ctx->content_type = content_type;
    ctx->resp_body = NULL;
    ctx->resp_len = 0;
    ctx->producer = fn;
    ctx->producer_baton = baton;
    ctx->producer_len = len;
    return APR_SUCCESS;
}

apr_status_t svc_reply_text(svc_ctx_t *ctx, int status, const char *json_text)
{
    return svc_reply_body(ctx, status, "application/json; charset=utf-8", json_text,
                          strlen(json_text));
}

void svc_reply_add(svc_ctx_t *ctx, const char *key, const char *json_value)
{
    apr_size_t n = ctx->resp_len;

    /* The body is an object we wrote: its last byte is the closing brace. */
    if (answer_final(ctx) || !ctx->resp_body || n < 2 || ctx->resp_body[n - 1] != '}') {
        return;
    }
    ctx->resp_body = apr_pstrcat(ctx->pool, apr_pstrmemdup(ctx->pool, ctx->resp_body, n - 1),
                                 n > 2 ? "," : "", "\"", key, "\":", json_value, "}", NULL);
    ctx->resp_len = strlen(ctx->resp_body);
}

apr_status_t svc_reply_html(svc_ctx_t *ctx, int status, const char *html)
{
    return svc_reply_body(ctx, status, "text/html; charset=utf-8", html, strlen(html));
}

apr_status_t svc_reply_empty(svc_ctx_t *ctx)
{
    if (answer_final(ctx)) {
        return APR_EGENERAL;
    }
    ctx->status = 204;
    ctx->content_type = NULL;
    ctx->resp_body = NULL;
    ctx->resp_len = 0;
    return APR_SUCCESS;
}

apr_status_t svc_reply_redirect(svc_ctx_t *ctx, const char *location)
{
    const char *s;

    if (answer_final(ctx)) {
        return APR_EGENERAL;
    }
    for (s = location; *s; s++) {
        if ((unsigned char)*s < 0x20 || *s == 0x7f) {
            return APR_EINVAL;
        }
    }
    apr_table_setn(ctx->headers_out, "Location", location);
    ctx->status = 302;
    ctx->content_type = NULL;
    ctx->resp_body = NULL;
    ctx->resp_len = 0;
    return APR_SUCCESS;
}

void svc_cookie_set(svc_ctx_t *ctx, const char *name, const char *value, const char *path,
                    int max_age)
{
    /* Lax: sent on top-level navigations from other sites (the provider's
     * redirect back to /auth/callback), never on their subrequests or POSTs. */
    apr_table_addn(ctx->headers_out, "Set-Cookie",
                   apr_psprintf(ctx->pool, "%s=%s; Path=%s; Max-Age=%d; HttpOnly; "
                                "SameSite=Lax%s", name, value, path, max_age,
                                ctx->is_tls ? "; Secure" : ""));
}

apr_status_t svc_stream_resume_point(svc_ctx_t *ctx, apr_int64_t *pafter)
{
    const char *h = apr_table_get(ctx->headers_in, "Last-Event-ID");
    const char *q = apr_table_get(ctx->query, "last_event_id");
    const char *v = h ? h : q;
    long long id;

    *pafter = -1;
    if (!v) {
        return APR_SUCCESS;
    }
    if (svc_parse_int(v, 0, APR_INT64_MAX, &id) != APR_SUCCESS) {
        svc_fail_field(ctx, h ? "Last-Event-ID" : "last_event_id", "invalid_value",
                       "An event id is the decimal id of the last event received.");
        return SVC_EPROBLEM;
    }
    *pafter = id;
    return APR_SUCCESS;
}

apr_status_t svc_reply_stream(svc_ctx_t *ctx, const char *org_id, const char *run_id,
                              apr_int64_t after, int until_run_ends)
{
    svc_stream_t *st = apr_pcalloc(ctx->pool, sizeof(*st));

    if (answer_final(ctx)) {
        return APR_EGENERAL;
    }
    st->org_id = org_id;
    st->run_id = run_id;
    st->after = after < 0 ? 0 : after;
    st->until_run_ends = until_run_ends;
    /* An operator's suspension (access.suspension) ends a stream at once
     * rather than at the next periodic check (docs/api/admin.md). */
    st->recheck_prefix = "access.";
    ctx->stream = st;
    ctx->status = 200;
    ctx->content_type = "text/event-stream; charset=utf-8";
    return APR_SUCCESS;
}
