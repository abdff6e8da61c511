/*
 * svc_openapi.c: GET /api/openapi.json, from the same areas the route
 * table is made of, so a route cannot exist without being documented.
 */
#include "svc_openapi.h"
#include "svc_json.h"

#include <apr_lib.h>

#include <string.h>

/* "/api/me/tokens/:id" -> "/api/me/tokens/{id}" */
static const char *openapi_path(apr_pool_t *p, const char *tmpl, json_t *params)
{
    const char *s = tmpl;
    const char *out = "";

    while (*s) {
        if (*s == ':') {
            apr_size_t n = strcspn(s + 1, "/");
            const char *name = apr_pstrmemdup(p, s + 1, n);
            out = apr_pstrcat(p, out, "{", name, "}", NULL);
            json_array_append_new(params,
                                  json_pack("{s:s,s:s,s:b,s:{s:s}}", "name", name, "in", "path",
                                            "required", 1, "schema", "type", "string"));
            s += n + 1;
        }
        else {
            apr_size_t n = strcspn(s, ":");
            out = apr_pstrcat(p, out, apr_pstrmemdup(p, s, n), NULL);
            s += n;
        }
    }
    return out;
}

static json_t *problem_ref(const char *description)
{
    return json_pack("{s:s,s:{s:{s:{s:s}}}}", "description", description, "content",
                     "application/problem+json", "schema", "$ref",
                     "#/components/schemas/Problem");
}

static json_t *operation(apr_pool_t *p, const svc_route_t *r, json_t *params)
{
    json_t *op = json_object();
    json_t *responses = json_object();
    const svc_qparam_t *q;
    const char *code = apr_itoa(p, svc_route_success(r));

    json_object_set_new(op, "operationId", json_string(r->op_id));
    json_object_set_new(op, "summary", json_string(r->summary));
    json_object_set_new(op, "tags", json_pack("[s]", r->tag ? r->tag : "Service"));
    if (r->flags & SVC_RF_PAGED) {
        json_array_append_new(params, json_pack("{s:s,s:s,s:s,s:{s:s,s:i,s:i,s:i}}",
                                                "name", "limit", "in", "query", "description",
                                                "Items per page.", "schema", "type", "integer",
                                                "minimum", 1, "maximum", 200, "default", 50));
        json_array_append_new(params, json_pack("{s:s,s:s,s:s,s:{s:s}}", "name", "cursor",
                                                "in", "query", "description",
                                                "The next_cursor of the previous page, "
                                                "with the same filters (signed: another "
                                                "list's or an altered cursor is a 400).",
                                                "schema", "type", "string"));
    }
    for (q = r->query; q && q->name; q++) {
        json_array_append_new(params, json_pack("{s:s,s:s,s:s,s:{s:s}}", "name", q->name,
                                                "in", "query", "description", q->description,
                                                "schema", "type", q->type));
    }
    if (json_array_size(params)) {
        json_object_set(op, "parameters", params);
    }
    if (r->body) {
        json_object_set_new(op, "requestBody",
                            json_pack("{s:b,s:{s:{s:o}}}", "required", 0, "content",
                                      "application/json", "schema",
                                      svc_json_schema_of(r->body)));
    }
    else if (r->flags & SVC_RF_STREAM_BODY) {
        json_object_set_new(op, "requestBody",
                            json_pack("{s:b,s:s,s:{s:{s:{s:s,s:s}}}}", "required", 1,
                                      "description", "The file itself, with its own "
                                      "Content-Type, streamed (at most SvcAttachmentLimit).",
                                      "content", "*/*", "schema", "type", "string", "format",
                                      "binary"));
    }
    else if (r->flags & SVC_RF_RAW_BODY) {
        json_object_set_new(op, "requestBody",
                            json_pack("{s:b,s:{s:{s:{s:s}}}}", "required", 1, "content",
                                      "application/json", "schema", "type", "object"));
    }
    if (strcmp(code, "204") == 0) {
        json_object_set_new(responses, code, json_pack("{s:s}", "description", "Done."));
    }
    else if (r->flags & SVC_RF_HTML) {
        json_object_set_new(responses, code,
                            json_pack("{s:s,s:{s:{s:{s:s}}}}", "description",
                                      "A page for the browser.", "content", "text/html",
                                      "schema", "type", "string"));
    }
    else if (r->flags & SVC_RF_STREAM) {
        json_object_set_new(responses, code,
                            json_pack("{s:s,s:{s:{s:{s:s}}}}", "description",
                                      "Server-sent events (docs/api/events.md).", "content",
                                      "text/event-stream", "schema", "type", "string"));
    }
    else if (r->flags & (SVC_RF_TEXT | SVC_RF_BINARY)) {
        int text = (r->flags & SVC_RF_TEXT) != 0;
        json_object_set_new(responses, code,
                            json_pack("{s:s,s:{s:{s:{s:s,s:s}}}}", "description", "Success.",
                                      "content", text ? "text/plain" : "application/octet-stream",
                                      "schema", "type", "string", "format",
                                      text ? "text" : "binary"));
    }
    else if (r->flags & SVC_RF_MARKDOWN) {
        json_object_set_new(responses, code,
                            json_pack("{s:s,s:{s:{s:{s:s}}}}", "description", "Markdown.",
                                      "content", "text/markdown", "schema", "type",
                                      "string"));
    }
    else {
        json_object_set_new(responses, code,
                            json_pack("{s:s,s:{s:{s:{s:s}}}}", "description", "Success.",
                                      "content", "application/json", "schema", "type",
                                      "object"));
    }
    if (r->body || (r->flags & SVC_RF_RAW_BODY)) {
        json_object_set_new(responses, "400", problem_ref("Invalid body or parameters."));
        json_object_set_new(responses, "413", problem_ref("Body too large."));
        json_object_set_new(responses, "415", problem_ref("Body is not JSON."));
    }
    else if (r->flags & SVC_RF_STREAM_BODY) {
        json_object_set_new(responses, "400", problem_ref("Invalid parameters."));
        json_object_set_new(responses, "413", problem_ref("Body too large."));
    }
    if (r->auth == SVC_AUTH_USER) {
        json_object_set_new(responses, "401", problem_ref("Not authenticated."));
        json_object_set_new(responses, "403",
                            problem_ref("Scope, role or CSRF check refused the request."));
        json_object_set_new(op, "security",
                            (r->flags & SVC_RF_SESSION)
                            ? json_pack("[{s:[]}]", "session")
                            : json_pack("[{s:[s]},{s:[]}]", "pat", svc_scope_name(r->scope),
                                        "session"));
    }
    else if (r->auth == SVC_AUTH_AGENT) {
        json_object_set_new(responses, "401", problem_ref("Not a deploy target's current key."));
        json_object_set_new(op, "security", json_pack("[{s:[]}]", "agent"));
    }
    else {
        json_object_set_new(op, "security", json_array());
    }
    json_object_set_new(responses, "404", problem_ref("Not found (or not visible to you)."));
    if (r->rate_class) {
        json_object_set_new(responses, "429", problem_ref("Rate limited; see Retry-After."));
    }
    json_object_set_new(responses, "503", problem_ref("Temporarily unavailable."));
    json_object_set_new(op, "responses", responses);
    /* What the conformance tests and clients need to know about access. */
    json_object_set_new(op, "x-svc-auth",
                        json_string(r->auth == SVC_AUTH_USER ? "user"
                                    : r->auth == SVC_AUTH_NONE ? "none"
                                    : r->auth == SVC_AUTH_AGENT ? "agent" : "other"));
    json_object_set_new(op, "x-svc-scope", json_string(svc_scope_name(r->scope)));
    if (svc_route_is_tenant(r)) {
        json_object_set_new(op, "x-svc-role", json_string(svc_role_name(r->role)));
    }
    if (svc_route_is_project(r)) {
        json_object_set_new(op, "x-svc-project-role", json_string(svc_prole_name(r->prole)));
    }
    if (r->rate_class) {
        json_object_set_new(op, "x-svc-rate-class", json_string(r->rate_class));
    }
    return op;
}

static json_t *components(void)
{
    json_t *problem_props = json_pack(
        "{s:{s:s},s:{s:s},s:{s:s},s:{s:s},s:{s:s},s:{s:s},s:{s:s},s:{s:s,s:{s:s}}}",
        "type", "type", "string", "title", "type", "string", "status", "type", "integer",
        "detail", "type", "string", "code", "type", "string", "request_id", "type", "string",
        "instance", "type", "string", "errors", "type", "array", "items", "type", "object");
    json_t *problem = json_pack("{s:s,s:[sssss],s:o}", "type", "object", "required", "type",
                                "title", "status", "code", "request_id", "properties",
                                problem_props);
    json_t *schemes = json_pack(
        "{s:{s:s,s:s,s:s},s:{s:s,s:s,s:s,s:s},s:{s:s,s:s,s:s}}",
        "pat", "type", "http", "scheme", "bearer", "description",
        "A personal access token, svc_pat_...; its scope caps what it may do.",
        "session", "type", "apiKey", "in", "cookie", "name", "service_session",
        "description", "The web UI's session cookie (counts as admin scope).",
        "agent", "type", "http", "scheme", "bearer", "description",
        "A deploy target's enrollment key, svc_dek_... (the agent routes only).");

    return json_pack("{s:o,s:{s:o}}", "securitySchemes", schemes, "schemas", "Problem",
                     problem);
}

/* The operations of one area's routes, added to paths; the area's tags,
 * in order of first use, appended to tags and to the group's list. */
static void add_area(apr_pool_t *p, const svc_area_t *area, json_t *paths, json_t *tags,
                     json_t *group)
{
    const svc_route_t *r;

    for (r = area->routes; r->method; r++) {
        json_t *params, *item;
        const char *path, *tag = r->tag ? r->tag : "Service";
        char *m;
        size_t i;
        int k, seen = 0;

        if (r->flags & SVC_RF_HIDDEN) {
            continue;
        }
        params = json_array();
        path = openapi_path(p, r->path, params);
        item = json_object_get(paths, path);
        if (!item) {
            item = json_object();
            json_object_set_new(paths, path, item);
        }
        m = apr_pstrdup(p, r->method);
        for (k = 0; m[k]; k++) {
            m[k] = (char)apr_tolower(m[k]);
        }
        json_object_set_new(item, m, operation(p, r, params));
        json_decref(params);
        for (i = 0; i < json_array_size(tags); i++) {
            json_t *t = json_object_get(json_array_get(tags, i), "name");
            seen |= strcmp(json_string_value(t), tag) == 0;
        }
        if (!seen) {
            json_array_append_new(tags, json_pack("{s:s,s:s}", "name", tag, "x-svc-area",
                                                  area->name));
            json_array_append_new(json_object_get(group, "tags"), json_string(tag));
        }
    }
}

json_t *svc_openapi_build(apr_pool_t *p, const svc_area_t *const *areas, const char *server_url)
{
    json_t *paths = json_object();
    json_t *tags = json_array();
    json_t *groups = json_array();
    const svc_area_t *const *a;

    /* Operations are tagged by the part of the specification they belong
     * to; x-tagGroups (read by Redoc and others) groups those tags by area,
     * in the order of the area registry. */
    for (a = areas; a && *a; a++) {
        json_t *group = json_pack("{s:s,s:s,s:[]}", "name", (*a)->name, "description",
                                  (*a)->description, "tags");
        add_area(p, *a, paths, tags, group);
        if (json_array_size(json_object_get(group, "tags"))) {
            json_array_append(groups, group);
        }
        json_decref(group);
    }
    return json_pack("{s:s,s:{s:s,s:s,s:s},s:[{s:s}],s:o,s:o,s:o,s:o}",
                     "openapi", "3.1.0",
                     "info", "title", "mod_svc API", "version", SVC_VERSION, "description",
                     "The multi-tenant, AI-assisted software-building service. Errors are "
                     "RFC 9457 problem documents with a stable `code` and the `request_id`.",
                     "servers", "url", server_url && *server_url ? server_url : "/",
                     "tags", tags, "x-tagGroups", groups,
                     "paths", paths, "components", components());
}

const char *svc_openapi_render(apr_pool_t *p, const svc_area_t *const *areas,
                               const char *server_url)
{
    json_t *doc = svc_openapi_build(p, areas, server_url);
    const char *text = svc_json_dump(p, doc);

    json_decref(doc);
    return text;
}

apr_status_t svc_h_openapi(svc_ctx_t *ctx)
{
    /* The document only changes with the build and the configuration, so
     * the server renders it once at start; svcctl and tests have no copy. */
    if (ctx->conf->openapi_json) {
        return svc_reply_text(ctx, 200, ctx->conf->openapi_json);
    }
    return svc_reply_text(ctx, 200, svc_openapi_render(ctx->pool, ctx->conf->areas,
                                                       ctx->conf->public_url));
}
