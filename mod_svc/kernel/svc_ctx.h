/*
 * svc_ctx.h: one API request as the core sees it.
 *
 * The glue builds a context from the request_rec (method, path, headers,
 * body, client address), the core routes, authenticates, authorizes and
 * runs the handler on it, and the glue writes what the context says back.
 * Every allocation comes from ctx->pool, the request's pool.
 */
#ifndef SVC_CTX_H
#define SVC_CTX_H

#include "svc_ktypes.h"
#include "svc_config.h"

#include <apr_network_io.h>

/* The authenticated caller. */
struct svc_principal_t {
    svc_via_e via;
    const char *user_id;
    const char *email;
    const char *name;
    int founder;
    svc_scope_e scope;          /* a session counts as admin */
    /* Set for a PAT caller. */
    const char *token_id;
    const char *token_org_id;   /* NULL: not bound to an org */
    const char *token_org_slug;
    const char *token_expires_at;
    apr_int64_t token_expires_epoch;
    apr_int64_t user_rev;       /* api_tokens.user_rev: the user's details as read */
    /* Set for a session caller. */
    const char *session_id;
    /* Set for a deploy agent (SVC_VIA_AGENT; user_id is NULL): its target,
     * and the target's org. */
    const char *target_id;
    const char *target_org_id;
    /* The credential's last use is due to be recorded (after the request). */
    int touch_due;
};

/* The organization a tenant route addresses, with the caller's role in it. */
struct svc_orgref_t {
    const char *id;
    const char *slug;
    const char *name;
    svc_role_e role;
    int suspended;              /* an operator suspended the org (svc_auth_check refuses) */
};

/* The project a route under /projects/:projectSlug addresses, with the
 * caller's effective role in it. */
struct svc_projref_t {
    const char *id;
    const char *slug;
    const char *name;
    int archived;
    svc_prole_e prole;
};

/*
 * A live event stream a handler asks for (routes flagged SVC_RF_STREAM):
 * the glue sends the org's events after `after` (only the run's when run_id
 * is set; only a deploy target's work when target_id is, and otherwise none
 * of any target's), then each new one as it commits, with heartbeats, until
 * the client leaves, its access ends, or (until_run_ends) the run has
 * reported its final status. An event whose kind starts with
 * recheck_prefix (when set) has the caller's access checked again at once,
 * rather than at the next periodic check: a target's key rotated or the
 * target removed ends its agent's stream as it happens.
 */
typedef struct {
    const char *org_id;
    const char *run_id;
    apr_int64_t after;
    int until_run_ends;
    const char *target_id;
    const char *recheck_prefix;
} svc_stream_t;

/*
 * A streamed request body (routes flagged SVC_RF_STREAM_BODY): the glue's
 * reader fills buf with up to *plen bytes and sets *plen to how many; 0 at
 * the end. Handlers call svc_body_read (svc_dispatch.h), which holds the cap.
 */
typedef apr_status_t (*svc_body_reader_fn)(void *baton, char *buf, apr_size_t *plen);

/*
 * An answer produced in pieces (svc_reply_produced): each call sets *pdata
 * and *plen to the next piece, allocated from `scratch` (cleared after the
 * piece is written), and *plen to 0 at the end. The glue gives the
 * database connection back after every piece, before writing it, so a slow
 * client never holds one.
 */
typedef apr_status_t (*svc_body_producer_fn)(svc_ctx_t *ctx, void *baton, apr_pool_t *scratch,
                                             const char **pdata, apr_size_t *plen);

/* A request's write (svc_write.h): none yet, under way, committed. */
typedef enum {
    SVC_WRITE_NONE = 0,
    SVC_WRITE_OPEN,
    SVC_WRITE_COMMITTED
} svc_write_state_e;

/* Where a problem document goes before the glue renders it. */
struct svc_problem_t {
    int status;
    const char *code;
    const char *detail;
    json_t *errors;             /* array of {field,code,message} or NULL */
    /* For the operator, never sent to the client: why an upstream call
     * failed. The glue redacts it and logs it with 502/503/504 answers. */
    const char *log_detail;
};

struct svc_ctx_t {
    apr_pool_t *pool;
    const svc_config_t *conf;

    /* The request. */
    const char *method;         /* "HEAD" is routed as "GET" */
    const char *path;
    const svc_route_t *route;
    apr_table_t *params;        /* path parameters by name */
    apr_table_t *query;         /* decoded query parameters */
    apr_table_t *headers_in;
    const char *raw_body;       /* the body as received, or NULL */
    apr_size_t raw_len;
    json_t *body;               /* the parsed object, or NULL */
    /* A body the handler reads as it arrives (SVC_RF_STREAM_BODY). */
    svc_body_reader_fn body_reader;
    void *body_baton;
    apr_off_t body_read;        /* bytes handed to the handler so far */
    int body_cut;               /* refused or failed midway: the glue closes the connection */
    const char *client_ip;
    apr_sockaddr_t *client_sa;  /* the peer (or proxy-reported) address, or NULL */
    const char *user_agent;
    const char *request_id;
    const char *self_origin;    /* "scheme://host[:port]" as the client sees us */
    int is_tls;

    /*
     * Set when a deferred authentication check failed (svc_tokens.c): the
     * status, and the problem to answer with, whatever the handler did.
     */
    apr_status_t auth_rv;
    svc_problem_t *auth_problem;

    /* The caller, once authenticated; the org, on tenant routes; and the
     * project, on routes under /projects/:projectSlug. */
    svc_principal_t *who;
    svc_orgref_t *org;
    svc_projref_t *project;

    /* The database, acquired on first use through the glue's callback. */
    svc_db_t *db;
    apr_status_t (*db_acquire)(svc_ctx_t *ctx);
    void (*db_release)(svc_ctx_t *ctx);
    void *glue;                 /* baton for db_acquire and db_release */
    /* Where the request's write is (svc_write.h); once committed, the
     * answer is final. */
    svc_write_state_e write_state;
    /* Why the database cannot be reached now, as libpq says it (secrets
     * removed), or NULL when it can: for /internal/health. May be NULL. */
    const char *(*db_reason)(svc_ctx_t *ctx);

    /* The response. */
    int status;
    const char *content_type;
    const char *resp_body;
    apr_size_t resp_len;
    apr_table_t *headers_out;
    svc_problem_t *problem;
    svc_stream_t *stream;       /* set by stream handlers: the glue streams */
    /* An answer produced in pieces (svc_reply_produced), of producer_len bytes. */
    svc_body_producer_fn producer;
    void *producer_baton;
    apr_off_t producer_len;
};

/* Creates a context; the glue fills in the request fields afterwards. */
svc_ctx_t *svc_ctx_create(apr_pool_t *p, const svc_config_t *conf);

/* The database handle, acquired on first call. SVC_EDBDOWN when there is none. */
apr_status_t svc_ctx_db(svc_ctx_t *ctx, svc_db_t **pdb);

/*
 * Answers GET of one thing: `reply` (the area's own "read it and answer
 * status", which writes call too, inside their transaction) with the
 * request's connection and the path parameter `param`, status 200.
 */
typedef apr_status_t (*svc_reply_one_fn)(svc_ctx_t *ctx, svc_db_t *db, const char *id,
                                         int status);
apr_status_t svc_reply_one(svc_ctx_t *ctx, const char *param, svc_reply_one_fn reply);

/*
 * Gives the connection back to the pool now. Handlers call this before
 * waiting on anything slow, such as an outbound HTTP call, so a slow
 * provider cannot starve the pool; the next svc_ctx_db acquires a
 * connection again. Anything but APR_SUCCESS means the caller's
 * authentication did not hold (or the call came from inside a write,
 * svc_write.h, which holds its connection to the end): stop and return it.
 */
apr_status_t svc_ctx_db_release(svc_ctx_t *ctx) __attribute__((warn_unused_result));

/*
 * Attaches a problem document and returns SVC_EPROBLEM, so handlers write
 *     return svc_fail(ctx, 404, "not_found", "No token %s.", id);
 * The format is applied with apr_pvsprintf; detail is for humans.
 */
apr_status_t svc_fail(svc_ctx_t *ctx, int status, const char *code,
                      const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Adds one validation error to the pending 400 problem (created if needed). */
void svc_fail_field(svc_ctx_t *ctx, const char *field, const char *code,
                    const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Turns any status a handler returned into the problem to send: keeps an
 * attached problem, maps SVC_EDBDOWN to 503, SVC_ECONFLICT to 409,
 * SVC_ENOTFOUND to 404, anything else to 500.
 */
svc_problem_t *svc_ctx_problem(svc_ctx_t *ctx, apr_status_t rv);

/*
 * Why a write that failed with rv failed, in words to keep with what it
 * was about (a webhook delivery kept for a redelivery): in the database's
 * words when it said why (read before anything else runs on the
 * connection; redacted, printable, at most about 900 bytes), else in the
 * answer's. NULL when the answer is a refusal of ours (below 500): the
 * request was wrong, nothing failed.
 */
const char *svc_ctx_failure_why(svc_ctx_t *ctx, apr_status_t rv);

/* Renders a problem as application/problem+json into ctx's response. */
void svc_ctx_render_problem(svc_ctx_t *ctx, const svc_problem_t *pr);

/*
 * The answer. Each svc_reply_* sets it whole (the last one wins), and
 * refuses with APR_EGENERAL once a write committed: that write's answer,
 * built inside its transaction, is final (svc_write.h).
 */

/* Forgets the answer set so far (status, body, producer, stream), not its
 * headers: for an answer that is not to be sent after all (a write that
 * did not commit; a request run again). */
void svc_ctx_forget_answer(svc_ctx_t *ctx);

/* Sets a JSON response: takes the reference to `body`. */
apr_status_t svc_reply_json(svc_ctx_t *ctx, int status, json_t *body);

/* Sets a response whose JSON text was produced elsewhere (by SQL). */
apr_status_t svc_reply_text(svc_ctx_t *ctx, int status, const char *json_text);

/* Sets a response that is not JSON: `body` (len bytes, borrowed until the
 * response is written) as `content_type`. */
apr_status_t svc_reply_body(svc_ctx_t *ctx, int status, const char *content_type,
                            const char *body, apr_size_t len);

/*
 * Sets a response of `len` bytes that `fn` produces in pieces (downloads):
 * memory stays flat whatever the size. The status and headers are sent
 * before the first piece is asked for; a piece that fails then cuts the
 * answer short (the client sees fewer bytes than Content-Length).
 */
apr_status_t svc_reply_produced(svc_ctx_t *ctx, int status, const char *content_type,
                                apr_off_t len, svc_body_producer_fn fn, void *baton);

/*
 * Adds one member, whose value is JSON text, to the object already set as
 * the response (a page of a list, say).
 */
void svc_reply_add(svc_ctx_t *ctx, const char *key, const char *json_value);

/* An HTML page (text/html; charset=utf-8): the caller escaped every value
 * in it and sets the Content-Security-Policy that fits the page. */
apr_status_t svc_reply_html(svc_ctx_t *ctx, int status, const char *html);

/* 204, no body. */
apr_status_t svc_reply_empty(svc_ctx_t *ctx);

/* 302 to `location` (absolute, or a path on the same origin), no body.
 * APR_EINVAL when it holds a control character: callers validate first. */
apr_status_t svc_reply_redirect(svc_ctx_t *ctx, const char *location);

/*
 * Adds one Set-Cookie (added, not set: a response may carry several):
 * HttpOnly, SameSite=Lax, and Secure when the request came over TLS.
 * max_age 0 deletes the cookie. name and value must be cookie-octets
 * already (ours are base62 or base64url).
 */
void svc_cookie_set(svc_ctx_t *ctx, const char *name, const char *value, const char *path,
                    int max_age);

/*
 * Where a stream resumes: the Last-Event-ID header, or the last_event_id
 * query parameter (a browser's EventSource cannot set a header on its first
 * connect). *pafter is -1 when neither is given; a 400 problem when one is
 * not an event id.
 */
apr_status_t svc_stream_resume_point(svc_ctx_t *ctx, apr_int64_t *pafter);

/* Makes the answer a stream (see svc_stream_t); 200 text/event-stream. */
apr_status_t svc_reply_stream(svc_ctx_t *ctx, const char *org_id, const char *run_id,
                              apr_int64_t after, int until_run_ends);

/* The reason phrase of a status we use. */
const char *svc_status_title(int status);

#endif /* SVC_CTX_H */
