/*
 * svc_route.h: the route table, the single source of truth for endpoints.
 *
 * Each area exports its routes as one svc_area_t; the table is their
 * concatenation (svc_route_table over the list in areas/svc_areas.c). The
 * router, the authorizer, GET /api/openapi.json and the conformance tests
 * (through `svcctl routes`) all read that one table. Adding an endpoint is
 * one row in its area's array plus one handler function.
 */
#ifndef SVC_ROUTE_H
#define SVC_ROUTE_H

#include "svc_ktypes.h"
#include "svc_ctx.h"
#include "svc_schema.h"

/* A request handler. The function type lets an area declare its handlers in
 * one declaration (svc_handler_t svc_h_a, svc_h_b;) instead of one prototype
 * a line; route rows hold the pointer. */
typedef apr_status_t svc_handler_t(svc_ctx_t *ctx);
typedef svc_handler_t *svc_handler_fn;

/* Route flags. */
#define SVC_RF_HIDDEN   0x0001  /* not in the public OpenAPI document */
#define SVC_RF_FOUNDER  0x0002  /* platform operator only */
#define SVC_RF_NO_DB    0x0004  /* no schema gate: needs no database, or reports it */
#define SVC_RF_PAGED    0x0008  /* takes ?limit= and ?cursor= */
/* The query string carries credentials (an OAuth code and state): the glue
 * keeps its values out of the access log. */
#define SVC_RF_SECRET_QUERY 0x0100
/* Answers a live event stream (text/event-stream): the handler sets
 * ctx->stream and the glue keeps the connection open (mod_svc_sse.c). */
#define SVC_RF_STREAM   0x0200
/* The path parameter :token is a credential (a share link): the glue
 * replaces it with [REDACTED] in the request line and URI before the
 * access log is written. */
#define SVC_RF_SECRET_PATH  0x0400
/* The body carries a planning document: its cap is what a document of
 * SvcDocumentLimit bytes takes as a JSON string at worst (every byte
 * escaped as \u00XX), plus room for the other fields, and at least
 * SvcBodyLimit. */
#define SVC_RF_DOCUMENT_BODY 0x0800
/* Answers plain text (text/plain; charset=utf-8), or bytes
 * (application/octet-stream), instead of JSON: for OpenAPI. */
#define SVC_RF_TEXT     0x1000
#define SVC_RF_BINARY   0x2000
/* A success answers text/markdown, not JSON (for the OpenAPI document). */
#define SVC_RF_MARKDOWN     0x4000
/*
 * The rate class counts what personal access tokens do, per token:
 * through a session (the account's human owner) nothing is counted, and a
 * token cannot spend another's budget. For revocation, which a stolen
 * token must never be able to block.
 */
#define SVC_RF_RATE_PER_TOKEN 0x8000
/*
 * The body is kept as received (ctx->raw_body, up to body_limit or the
 * configured default) and is not parsed: the handler checks it, then
 * parses it, because something about the exact bytes must be checked first
 * (a webhook's signature). body stays NULL on such rows.
 */
#define SVC_RF_RAW_BODY 0x10000
/* Only a signed-in session may call it (pages for a browser whose state is
 * bound to the session): a personal access token gets 403 session_required. */
#define SVC_RF_SESSION  0x20000
/* Answers an HTML page for a browser (text/html), not JSON; its errors are
 * problem documents all the same. */
#define SVC_RF_HTML     0x40000
/*
 * The body is the handler's to read as it arrives (uploads), in pieces,
 * with svc_body_read: the glue reads nothing first, the kernel neither
 * parses it nor checks its type, and the cap is SvcAttachmentLimit
 * (413 the moment it is passed, or up front from Content-Length). body
 * stays NULL on such rows.
 */
#define SVC_RF_STREAM_BODY  0x80000
/*
 * Honours Idempotency-Key (svc_idempotency.h): a replay answers 200 with
 * Idempotent-Replayed: true, a key reused for another request 409. Only a
 * route flagged so may read the key (svc_idem_key refuses otherwise), so
 * the document and the behaviour say the same.
 */
#define SVC_RF_IDEMPOTENT   0x100000

/*
 * Statuses a route may answer beyond the ones its row implies, for the
 * OpenAPI document (svc_openapi.c says what a row implies: 400 and 500
 * and 503 always, 401 and 403 for a user's route, 404 where the path or
 * the body names something, 409 for a change, 413 and 415 with a body,
 * 429 with a rate class, 200 and 409 when idempotent).
 */
#define SVC_ANS_CONFLICT    0x01    /* 409 on a read: the state does not allow it */
#define SVC_ANS_GONE        0x02    /* 410: it existed, and is no more */
#define SVC_ANS_PROVIDER    0x04    /* 502 and 504: a third-party provider failed */
#define SVC_ANS_LIMITED     0x08    /* 429 without a rate class (too many streams) */
#define SVC_ANS_DENIED      0x10    /* 401 and 403 on a route of another kind of caller */
#define SVC_ANS_NOT_FOUND   0x20    /* 404 where nothing in the row names a thing */
#define SVC_ANS_NULL        0x40    /* the JSON success may be null instead of .response */
#define SVC_ANS_PAYMENT     0x80    /* 402: a hard budget or the plan's allowance is used up */

/* A query parameter a route documents and accepts. */
typedef struct {
    const char *name;
    const char *type;           /* JSON schema type name */
    const char *description;
} svc_qparam_t;

/*
 * One endpoint. Rows are written with designated initialisers and leave
 * out what is zero: the caller is a signed-in user (SVC_AUTH_USER) unless
 * the row says otherwise, and needs no org or project role; no body, no
 * rate class, no flags; success is 200; the tag is the area's when it has
 * only one (svc_route_tag):
 *
 *     { .method = "GET", .path = "/api/orgs/:orgSlug", .handler = svc_h_orgs_get,
 *       .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .op_id = "getOrg",
 *       .tag = "Organizations",
 *       .summary = "Organization detail: owner, counts, your role" },
 *
 * A row that leaves out its caller fails closed: it needs a signed-in
 * user, whose every token may read; a change must name write or admin
 * scope (svc_router_create refuses it otherwise). A route that answers
 * JSON names the schema of its answer (.response), and its tag is one its
 * area describes: svc_openapi_check refuses the start otherwise. A field
 * added here, at the end, touches no row that does not use it.
 */
struct svc_route_t {
    const char *method;         /* GET, POST, PUT, PATCH, DELETE */
    const char *path;           /* template, ":name" segments are parameters */
    svc_handler_fn handler;
    svc_auth_e auth;
    svc_scope_e scope;          /* least PAT scope (sessions count as admin) */
    svc_role_e role;            /* least org role on tenant routes */
    const svc_field_t *body;    /* JSON body schema; NULL: no body accepted */
    apr_size_t body_limit;      /* 0: the configured default */
    const char *rate_class;     /* NULL: not rate-limited */
    unsigned flags;
    int success;                /* the status of a successful answer; 0: 200 */
    const char *op_id;          /* OpenAPI operationId */
    const char *summary;
    const char *tag;            /* OpenAPI tag: the SPEC area; NULL: its area's one tag */
    const svc_qparam_t *query;  /* extra documented query parameters, {NULL} ended */
    svc_prole_e prole;          /* least project role on routes with :projectSlug */
    /* The contract: what GET /api/openapi.json says of the route
     * (svc_openapi.c; docs/api/conventions.md). */
    const svc_schema_t *response;   /* a JSON success's body; of a paged route, its items */
    const char *description;        /* what the summary leaves out (Markdown) */
    unsigned answers;               /* SVC_ANS_*: statuses the row does not imply */
    const svc_header_t *headers;    /* a success's own headers, {NULL} ended */
    const char *media;              /* a success's media type where no flag says it */
    const char *events;             /* a stream's event kinds: those starting so (NULL: all) */
    const svc_col_t *page_keys;     /* a list's keys beside data and next_cursor: a route
                                     * with them answers the envelope, paged or not */
    int success_also;               /* another success status, with the same body (the
                                     * webhook's 200 for a duplicate beside its 202) */
    const char *body_example;       /* a JSON body the route accepts, as a client would
                                     * send it: required with .body, and checked against
                                     * it at start (svc_openapi_check) */
};

/* The operator's API: its routes are SVC_RF_FOUNDER, and answer 404 to
 * everyone else (svc_auth_check). */
#define SVC_ADMIN_PREFIX "/api/admin/"

/* Ends a route array. */
#define SVC_ROUTE_END { .method = NULL }

/* The status a successful answer of the route has. */
#define svc_route_success(r) ((r)->success ? (r)->success : 200)

/* Body caps in route rows. */
#define SVC_KB(n) ((apr_size_t)(n) * 1024)

/* An area of the service and its routes, as OpenAPI groups them. */
struct svc_area_t {
    const char *name;           /* "tenancy": also the folder under areas/ */
    const char *description;
    const svc_route_t *routes;  /* ended by a row with method NULL */
    const svc_tag_t *tags;      /* the tags its routes name, described; {NULL} ended */
    const svc_event_kind_t *events;  /* the event kinds it writes; {NULL} ended, or NULL */
    /* The kinds it addresses to one deploy target: only that target's
     * agent's work stream carries them, never a user's stream. */
    const svc_event_kind_t *agent_events;
};

/*
 * A route's OpenAPI tag: its own, or, when it names none, its area's where
 * the area describes exactly one (most do); NULL otherwise. An area of
 * several tags names one in every row, so no row is filed by accident.
 */
const char *svc_route_tag(const svc_area_t *area, const svc_route_t *r);

/*
 * The route table: the routes of `areas` (a NULL-ended list) one after the
 * other, ended by a row with method NULL, allocated from p. The order of
 * areas is the order of the OpenAPI document.
 */
const svc_route_t *svc_route_table(apr_pool_t *p, const svc_area_t *const *areas);

/* Builds the matcher from the table; allocations come from p (call at start). */
apr_status_t svc_router_create(svc_router_t **prt, const svc_route_t *table,
                               apr_pool_t *p);

/*
 * Finds the route for method and path. On a match, returns the route and
 * fills params (allocated from p). When the path exists under other methods
 * only, returns NULL and sets *pallow to the Allow header value; when the
 * path is unknown, returns NULL with *pallow NULL.
 */
const svc_route_t *svc_router_match(const svc_router_t *rt, const char *method,
                                    const char *path, apr_pool_t *p,
                                    apr_table_t *params, const char **pallow);

/* True when the route addresses one organization: /api/orgs/:orgSlug/...,
 * or a page of the web UI's under /orgs/:orgSlug/... that the service
 * answers itself. */
int svc_route_is_tenant(const svc_route_t *route);

/* True when the route addresses one project of that org
 * (/api/orgs/:orgSlug/projects/:projectSlug/...). */
int svc_route_is_project(const svc_route_t *route);

/*
 * `path` (which `route` matched) as the access log may show it: each
 * segment that is :token in the route's template (SVC_RF_SECRET_PATH) is
 * [REDACTED], the others as they are.
 */
const char *svc_route_redact_path(apr_pool_t *p, const svc_route_t *route, const char *path);

/* True for methods that change state. */
int svc_method_is_unsafe(const char *method);

#endif /* SVC_ROUTE_H */
