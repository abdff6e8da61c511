/*
 * svc_events.c: GET /api/orgs/:orgSlug/events, every event of the org as it
 * commits (docs/api/events.md). Authorization is a read of the org; the
 * glue does the streaming (mod_svc_sse.c).
 */
#include "svc_events.h"

/* Where a stream without Last-Event-ID starts: after the org's newest. */
static const svc_stmt_t st_events_latest = {
    "svc_events_latest",
    "SELECT coalesce(max(id), 0) FROM events WHERE org_id = $1",
    1, SVC_STMT_READ
};

static apr_status_t org_stream(svc_ctx_t *ctx)
{
    apr_int64_t after;
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_stream_resume_point(ctx, &after)) != APR_SUCCESS) {
        return rv;
    }
    if (after < 0) {
        if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
            || (rv = svc_db_execv(db, &st_events_latest, ctx->pool, &res, ctx->org->id))
               != APR_SUCCESS) {
            return rv;
        }
        if (svc_dbres_int64(res, 0, 0, &after) != APR_SUCCESS) {
            return SVC_EDB;
        }
    }
    return svc_reply_stream(ctx, ctx->org->id, NULL, after, 0);
}

static const svc_qparam_t stream_query[] = {
    { "last_event_id", "integer", "Resume after this event id (for clients that cannot send "
      "the Last-Event-ID header)." },
    { NULL, NULL, NULL }
};

static const svc_route_t routes[] = {
    { .method = "GET", .path = "/api/orgs/:orgSlug/events", .handler = org_stream,
      .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .flags = SVC_RF_STREAM,
      .op_id = "streamOrgEvents", .tag = "Events", .query = stream_query,
      .answers = SVC_ANS_LIMITED,
      .description = "Every kind any area writes (x-svc-events names each kind's data); a "
        "client ignores kinds it does not know. A user holds at most SvcStreamLimit streams "
        "(429 `too_many_streams`).",
      .summary = "Every event of the organization as it happens (text/event-stream); resumes "
        "after Last-Event-ID" },
    SVC_ROUTE_END,
};

static const svc_tag_t tags[] = {
    { "Events", "Live events: what happens in an organization, as server-sent events, "
      "resumable without a gap (docs/api/events.md)." },
    { NULL, NULL }
};

const svc_area_t svc_events_area = { .name = "events", .routes = routes, .tags = tags,
    .description = "Live event streams (server-sent events) over the durable event log." };
