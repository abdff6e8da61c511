/*
 * svc_dispatch.h: the request pipeline (docs/architecture.md, "One request"), in order:
 * route -> (glue reads the body under the route's cap) -> authenticate and
 * authorize -> parse and validate the body -> rate limit -> handler.
 */
#ifndef SVC_DISPATCH_H
#define SVC_DISPATCH_H

#include "svc_ktypes.h"
#include "svc_ctx.h"
#include "svc_route.h"

/*
 * Finds ctx->route for ctx->method and ctx->path. A path longer than any
 * route's (2,048 bytes): 414 uri_too_long. Unknown path: 404;
 * known path, other method: 405 with Allow; OPTIONS: 204 with Allow (then
 * ctx->route stays NULL and the response is complete).
 */
apr_status_t svc_dispatch_route(svc_ctx_t *ctx, const svc_router_t *rt);

/* Query strings with more parameters than this are refused. */
#define SVC_MAX_QUERY_PARAMS 64

/*
 * Decodes the query string (`args`, as received; NULL or "" for none)
 * into ctx->query, all of it or nothing: a parameter that cannot be
 * decoded (a bad escape, an encoded NUL), more than SVC_MAX_QUERY_PARAMS
 * parameters, or a
 * name given twice is a 400 invalid_query. Dropping what cannot be read
 * would answer a wider question than the one asked: a filter that
 * vanished returns more than the client wanted.
 */
apr_status_t svc_dispatch_query(svc_ctx_t *ctx, const char *args);

/*
 * httpd refused the request before the service saw it, and its
 * ErrorDocument brought the refusal here: the same status as a problem
 * document (400 bad_request for a malformed percent-encoding, 404
 * not_found for an encoded '/' or NUL, 414, 413, 408, ...).
 */
apr_status_t svc_dispatch_refusal(svc_ctx_t *ctx, int status);

/* The body cap of the matched route, in bytes (0: no body accepted); for
 * streamed bodies, SvcAttachmentLimit. */
apr_size_t svc_dispatch_body_limit(const svc_ctx_t *ctx);

/* Everything after the body has been read. */
apr_status_t svc_dispatch_run(svc_ctx_t *ctx);

/*
 * The next piece of a streamed request body (SVC_RF_STREAM_BODY) into buf,
 * at most *plen bytes; *plen is 0 at its end (and for a request without a
 * body). Past the cap (SvcAttachmentLimit): a 413 problem, and nothing more
 * is read. A body that cannot be read (the client went away): a 400
 * problem. Either way the handler rolls back what it began, and the glue
 * closes the connection.
 */
apr_status_t svc_body_read(svc_ctx_t *ctx, char *buf, apr_size_t *plen);

/* A 413 problem for a body over `limit` bytes. */
apr_status_t svc_fail_too_large(svc_ctx_t *ctx, apr_size_t limit);

#endif /* SVC_DISPATCH_H */
