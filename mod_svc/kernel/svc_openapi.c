/*
 * svc_openapi.c: GET /api/openapi.json, from the same areas the route
 * table is made of, so a route cannot exist without being documented.
 *
 * Everything in the document comes from the route rows and what they
 * name: the schema of a success (.response, a shape of svc_schema.h), the
 * statuses the row implies and the ones it declares (.answers), the
 * headers (declared once under components and referred to), the tags the
 * areas describe, the event kinds the areas write. svc_openapi_check
 * refuses a table the document could not describe truthfully (a JSON
 * route without a schema, an undescribed tag, two schemas of one name):
 * the server does not start with one (docs/api/conventions.md).
 */
#include "svc_openapi.h"
#include "svc_json.h"

#include <apr_lib.h>
#include <apr_hash.h>

#include <stdlib.h>
#include <string.h>

#define SLUG_PATTERN "^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$"
#define PARAM_ID_PATTERN "^[A-Za-z0-9_-]{1,64}$"
#define ID_EXAMPLE "3kTq0dKc5gWm1xQ9aZr2Lb"
#define TIME_EXAMPLE "2026-01-15T09:30:00Z"

/* What building the document keeps. */
typedef struct {
    apr_pool_t *p;
    json_t *schemas;            /* components.schemas */
    json_t *headers;            /* components.headers */
    apr_hash_t *named;          /* component name -> const svc_schema_t * */
    apr_hash_t *route_headers;  /* component name -> header_def_t *, from route rows */
    const char *err;            /* the first thing the document cannot say truthfully */
} oa_t;

static void oa_fail(oa_t *oa, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void oa_fail(oa_t *oa, const char *fmt, ...)
{
    va_list ap;

    if (!oa->err) {
        va_start(ap, fmt);
        oa->err = apr_pvsprintf(oa->p, fmt, ap);
        va_end(ap);
    }
}

/* {"$ref": "#/components/<kind>/<name>"}, without apr_pstrcat(NULL, ...). */
static json_t *ref_of(oa_t *oa, const char *kind, const char *name)
{
    return json_pack("{s:s}", "$ref", apr_pstrcat(oa->p, "#/components/", kind, "/", name,
                                                  NULL));
}

/* ------------------------------------------------------------------------
 * Schemas
 */

static json_t *schema_ref(oa_t *oa, const svc_schema_t *s);

static json_t *string_values(const char *const *values, int nullable)
{
    json_t *e = json_array();
    const char *const *v;

    for (v = values; *v; v++) {
        json_array_append_new(e, json_string(*v));
    }
    if (nullable) {
        json_array_append_new(e, json_null());
    }
    return e;
}

static const char *scalar_type(svc_coltype_e t)
{
    switch (t) {
    case SVC_COL_INT:
        return "integer";
    case SVC_COL_BOOL:
        return "boolean";
    case SVC_COL_NUMBER:
        return "number";
    default:
        return "string";
    }
}

static json_t *keys_schema(oa_t *oa, const svc_col_t *keys, const svc_schema_t *base,
                           const char *where);

/* The schema of one key's value, null aside. */
static json_t *value_schema(oa_t *oa, const svc_col_t *c, const char *where)
{
    json_t *s;

    switch (c->type) {
    case SVC_COL_TEXT:
        s = json_pack("{s:s}", "type", "string");
        if (c->id) {
            json_object_set_new(s, "pattern", json_pack("s++", "^", c->id,
                                                        "_[0-9A-Za-z]{22}$"));
        }
        if (c->values) {
            json_object_set_new(s, "enum", string_values(c->values, 0));
        }
        if (c->format) {
            if (strcmp(c->format, "slug") == 0) {
                json_object_set_new(s, "pattern", json_string(SLUG_PATTERN));
            }
            else if (strcmp(c->format, "sha") == 0) {
                json_object_set_new(s, "pattern", json_string("^[0-9a-f]{40}$"));
            }
            else if (strcmp(c->format, "hex") == 0) {
                json_object_set_new(s, "pattern", json_string("^[0-9a-f]+$"));
            }
            else if (strcmp(c->format, "digits") == 0) {
                json_object_set_new(s, "pattern", json_string("^[0-9]+$"));
            }
            else if (strcmp(c->format, "email") == 0 || strcmp(c->format, "uri") == 0) {
                json_object_set_new(s, "format", json_string(c->format));
            }
            else if (strcmp(c->format, "secret") != 0) {
                oa_fail(oa, "%s: unknown format %s", where, c->format);
            }
        }
        return s;
    case SVC_COL_INT:
    case SVC_COL_BOOL:
    case SVC_COL_NUMBER:
        return json_pack("{s:s}", "type", scalar_type(c->type));
    case SVC_COL_TIME:
        return json_pack("{s:s,s:s}", "type", "string", "format", "date-time");
    case SVC_COL_OBJECT:
        if (c->ref) {
            return schema_ref(oa, c->ref);
        }
        if (c->sub) {
            return keys_schema(oa, c->sub, NULL, where);
        }
        /* A map a handler passes through: any JSON under any key. */
        return json_pack("{s:s,s:o}", "type", "object", "additionalProperties",
                         ref_of(oa, "schemas", "JsonValue"));
    case SVC_COL_ARRAY:
        if (c->ref) {
            return json_pack("{s:s,s:o}", "type", "array", "items", schema_ref(oa, c->ref));
        }
        if (c->sub) {
            return json_pack("{s:s,s:o}", "type", "array", "items",
                             keys_schema(oa, c->sub, NULL, where));
        }
        if (c->item) {
            svc_col_t item = { .key = c->key, .type = c->item };
            return json_pack("{s:s,s:o}", "type", "array", "items",
                             value_schema(oa, &item, where));
        }
        /* Only the envelope leaves its items open (each list says them). */
        return json_pack("{s:s}", "type", "array");
    case SVC_COL_JSON:
        return ref_of(oa, "schemas", "JsonValue");
    default:
        oa_fail(oa, "%s: key %s has no type", where, c->key ? c->key : "(null)");
        return json_object();
    }
}

/* One key's schema, null included where the key allows it. */
static json_t *key_schema(oa_t *oa, const svc_col_t *c, const char *where)
{
    json_t *s = value_schema(oa, c, where);
    json_t *type = json_object_get(s, "type");

    if (c->flags & SVC_COL_NULL) {
        if (json_object_get(s, "$ref")) {
            /* JsonValue takes null already; a schema of ours is one or null. */
            if (c->type != SVC_COL_JSON) {
                s = json_pack("{s:[o,{s:s}]}", "oneOf", s, "type", "null");
            }
        }
        else if (json_is_string(type)) {
            json_object_set_new(s, "type", json_pack("[s,s]", json_string_value(type), "null"));
            if (json_object_get(s, "enum")) {
                json_array_append_new(json_object_get(s, "enum"), json_null());
            }
        }
    }
    /* 3.1 allows a description beside $ref; generators show it. */
    if (c->description) {
        json_object_set_new(s, "description", json_string(c->description));
    }
    return s;
}

/* Adds the keys of `keys` (after those of `base`) to props and required. */
static void add_keys(oa_t *oa, json_t *props, json_t *required, const svc_col_t *keys,
                     const svc_schema_t *base, const char *where)
{
    const svc_col_t *c;

    if (base) {
        add_keys(oa, props, required, base->keys, base->base, where);
    }
    for (c = keys; c && c->key; c++) {
        if (json_object_get(props, c->key)) {
            oa_fail(oa, "%s: key %s twice", where, c->key);
        }
        json_object_set_new(props, c->key, key_schema(oa, c, apr_pstrcat(oa->p, where, ".",
                                                                         c->key, NULL)));
        if (!(c->flags & SVC_COL_OPTIONAL)) {
            json_array_append_new(required, json_string(c->key));
        }
    }
}

static json_t *keys_schema(oa_t *oa, const svc_col_t *keys, const svc_schema_t *base,
                           const char *where)
{
    json_t *props = json_object();
    json_t *required = json_array();

    add_keys(oa, props, required, keys, base, where);
    return json_pack("{s:s,s:o,s:o}", "type", "object", "required", required, "properties",
                     props);
}

/* A named schema, put under components the first time: {"$ref": ...}. */
static json_t *schema_ref(oa_t *oa, const svc_schema_t *s)
{
    const svc_schema_t *known = apr_hash_get(oa->named, s->name, APR_HASH_KEY_STRING);
    const char *n;
    json_t *body;

    if (known && known != s) {
        oa_fail(oa, "two schemas are named %s", s->name);
    }
    if (!known) {
        for (n = s->name; *n; n++) {
            if (!apr_isalnum(*n)) {
                oa_fail(oa, "schema name %s: letters and digits only", s->name);
            }
        }
        apr_hash_set(oa->named, s->name, APR_HASH_KEY_STRING, s);
        if (s->one_of) {
            const svc_schema_t *const *o;
            body = json_pack("{s:[]}", "oneOf");
            for (o = s->one_of; *o; o++) {
                json_array_append_new(json_object_get(body, "oneOf"), schema_ref(oa, *o));
            }
            if (s->keys || s->base) {
                oa_fail(oa, "%s: one of several schemas has no keys of its own", s->name);
            }
        }
        else {
            body = keys_schema(oa, s->keys, s->base, s->name);
        }
        json_object_set_new(body, "title", json_string(s->name));
        if (s->description) {
            json_object_set_new(body, "description", json_string(s->description));
        }
        json_object_set_new(oa->schemas, s->name, body);
    }
    return ref_of(oa, "schemas", s->name);
}

/*
 * The schema of any JSON value (what a handler passes through: an audit
 * entry's data, a webhook's payload). Not recursive: generators cannot
 * type a value that contains itself through an array (TypeScript refuses
 * openapi-typescript's output for it), so what is inside an array or an
 * object of it is any JSON, unsaid.
 */
static json_t *json_value_schema(void)
{
    return json_pack("{s:s,s:s,s:[{s:s},{s:s},{s:s},{s:s},{s:s,s:{}},{s:s,s:{}}]}",
                     "title", "JsonValue", "description", "Any JSON value, as the service "
                     "passes it through.", "anyOf",
                     "type", "string", "type", "number", "type", "boolean", "type", "null",
                     "type", "array", "items", "type", "object", "additionalProperties");
}

/* ------------------------------------------------------------------------
 * Examples, made from the schemas (so they always fit them)
 */

static json_t *keys_example(const svc_col_t *keys, const svc_schema_t *base, int depth);

/* An example of a named schema: of its first choice when it has several. */
static json_t *schema_example(const svc_schema_t *s, int depth)
{
    while (s->one_of && s->one_of[0]) {
        s = s->one_of[0];
    }
    return keys_example(s->keys, s->base, depth);
}

static json_t *value_example(const svc_col_t *c, int depth)
{
    switch (c->type) {
    case SVC_COL_TEXT:
        if (c->example) {
            return json_string(c->example);
        }
        if (c->id) {
            return json_pack("s++", c->id, "_", ID_EXAMPLE);
        }
        if (c->values) {
            return json_string(c->values[0]);
        }
        if (c->format && strcmp(c->format, "slug") == 0) {
            return json_string("acme");
        }
        if (c->format && strcmp(c->format, "email") == 0) {
            return json_string("ada@example.com");
        }
        if (c->format && strcmp(c->format, "uri") == 0) {
            return json_string("https://svc.example.com/");
        }
        if (c->format && strcmp(c->format, "sha") == 0) {
            return json_string("3f1c2a9d8b7e6f5a4c3b2a1d0e9f8a7b6c5d4e3f");
        }
        if (c->format && strcmp(c->format, "hex") == 0) {
            return json_string("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
        }
        if (c->format && strcmp(c->format, "digits") == 0) {
            return json_string("4711");
        }
        return json_string("...");
    case SVC_COL_INT:
        return json_integer(1);
    case SVC_COL_BOOL:
        return json_false();
    case SVC_COL_NUMBER:
        return json_real(0.25);
    case SVC_COL_TIME:
        return json_string(TIME_EXAMPLE);
    case SVC_COL_OBJECT:
        if (depth > 6 || (!c->sub && !c->ref)) {
            return json_object();
        }
        return c->ref ? schema_example(c->ref, depth + 1) : keys_example(c->sub, NULL, depth + 1);
    case SVC_COL_ARRAY:
        if (depth > 6) {
            return json_array();
        }
        if (c->ref) {
            return json_pack("[o]", schema_example(c->ref, depth + 1));
        }
        if (c->sub) {
            return json_pack("[o]", keys_example(c->sub, NULL, depth + 1));
        }
        if (c->item) {
            svc_col_t item = { .key = c->key, .type = c->item };
            return json_pack("[o]", value_example(&item, depth + 1));
        }
        return json_array();
    default:
        return json_object();
    }
}

static json_t *keys_example(const svc_col_t *keys, const svc_schema_t *base, int depth)
{
    json_t *out = base ? keys_example(base->keys, base->base, depth) : json_object();
    const svc_col_t *c;

    for (c = keys; c && c->key; c++) {
        json_object_set_new(out, c->key, value_example(c, depth));
    }
    return out;
}

/* ------------------------------------------------------------------------
 * Headers and the responses every route shares
 */

typedef struct {
    const char *component;
    const char *name;
    const char *description;
    const char *type;
    const char *pattern;
    const char *example;        /* a value as sent */
} header_def_t;

static const header_def_t std_headers[] = {
    { "RequestId", "X-Request-Id", "The request's id: on every answer, and in the problem "
      "document of an error (request_id); it finds the request in the server's log.",
      "string", "^req_[0-9A-Za-z]{22}$", "req_" ID_EXAMPLE },
    { "RateLimitLimit", "RateLimit-Limit", "How many requests of the route's rate class the "
      "window allows (SvcRateLimit); with every answer the class counted.", "integer", NULL,
      "20" },
    { "RateLimitRemaining", "RateLimit-Remaining", "How many are left in the current window.",
      "integer", NULL, "19" },
    { "RateLimitReset", "RateLimit-Reset", "Seconds until the window ends.", "integer", NULL,
      "42" },
    { "RetryAfter", "Retry-After", "Seconds to wait before trying again.", "integer", NULL,
      "5" },
    { "IdempotentReplayed", "Idempotent-Replayed", "true: this answer is the replay of the "
      "first request made with the same Idempotency-Key; nothing new was made.", "string",
      "^true$", "true" },
    { "WwwAuthenticate", "WWW-Authenticate", "The Bearer challenge (RFC 6750); with "
      "error=\"insufficient_scope\" when the token's scope is too low.", "string",
      "^Bearer", "Bearer realm=\"mod_svc\", error=\"invalid_token\"" },
    { "Location", "Location", "Where the browser goes next.", "string", NULL,
      "https://github.com/login/oauth/authorize?client_id=Iv1.8a61f9b3a7aba766&state="
      ID_EXAMPLE },
    { NULL, NULL, NULL, NULL, NULL, NULL }
};

/* A header component's name from a header's ("X-Next-Offset" -> XNextOffset). */
static const char *header_component(apr_pool_t *p, const char *name)
{
    char *out = apr_palloc(p, strlen(name) + 1), *o = out;
    int up = 1;

    for (; *name; name++) {
        if (*name == '-') {
            up = 1;
            continue;
        }
        *o++ = up ? (char)apr_toupper(*name) : (char)apr_tolower(*name);
        up = 0;
    }
    *o = '\0';
    return out;
}

/* Whether two texts, either of them NULL, are the same. */
static int same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* A header's definition, by component name: the standard ones, and those
 * route rows declare (svc_header_t), kept as they are first met. */
static const header_def_t *header_def(oa_t *oa, const char *component)
{
    const header_def_t *h;

    for (h = std_headers; h->component; h++) {
        if (strcmp(h->component, component) == 0) {
            return h;
        }
    }
    return apr_hash_get(oa->route_headers, component, APR_HASH_KEY_STRING);
}

/*
 * headers[name] = a reference to the header's component, made on first
 * use. A 3.1 reference cannot say "required" beside it, so a header that
 * is sometimes there and sometimes not has a component of each kind
 * (<Component> and <Component>Optional): only the ones used exist.
 */
static void use_header(oa_t *oa, json_t *headers, const char *name, const char *component,
                       int required)
{
    const char *c = required ? component : apr_pstrcat(oa->p, component, "Optional", NULL);
    const header_def_t *h;

    if (!json_object_get(oa->headers, c)) {
        json_t *schema;
        if (!(h = header_def(oa, component))) {
            oa_fail(oa, "header %s is not defined", name);
            return;
        }
        json_t *def;
        schema = json_pack("{s:s}", "type", h->type);
        if (h->pattern) {
            json_object_set_new(schema, "pattern", json_string(h->pattern));
        }
        def = json_pack("{s:s,s:b,s:o}", "description", h->description, "required", required,
                        "schema", schema);
        if (h->example) {
            json_object_set_new(def, "example", strcmp(h->type, "integer") == 0
                                ? json_integer(apr_atoi64(h->example))
                                : json_string(h->example));
        }
        json_object_set_new(oa->headers, c, def);
    }
    json_object_set_new(headers, name, ref_of(oa, "headers", c));
}

/* The problem answers, each a component with the headers it always has. */
typedef struct {
    int status;
    const char *component;
    const char *description;
} problem_def_t;

static const problem_def_t problems[] = {
    { 400, "BadRequest", "The request is invalid (`validation_failed` with `errors`, "
      "`invalid_json`, `invalid_query`, `body_not_allowed`, or the route's own code)." },
    { 401, "Unauthenticated", "No, malformed, unknown, expired or revoked credentials "
      "(`unauthenticated`)." },
    { 401, "Unauthorized", "The request's own credentials were refused (a signature, a code)." },
    { 402, "PaymentRequired", "A hard budget or the plan's allowance is used up "
      "(`budget_exceeded`): nothing new was started." },
    { 403, "Forbidden", "Not allowed: the token's scope (`insufficient_scope`), your role "
      "(`forbidden`), a cookie-authenticated change from an untrusted origin (`csrf_failed`), "
      "an account (`account_suspended`) or organization (`org_suspended`) the platform's "
      "operator suspended, or the route's own reason." },
    { 404, "NotFound", "No such thing, or not visible to you (`not_found`): other "
      "organizations' objects answer 404, never 403." },
    { 409, "Conflict", "The state does not allow it: `conflict` (a database rule, a stale "
      "version), `invalid_status`, `idempotency_conflict`, or the route's own code." },
    { 410, "Gone", "It existed and is no more (an invitation expired or revoked)." },
    { 413, "PayloadTooLarge", "The body is over the route's limit (`payload_too_large`)." },
    { 415, "UnsupportedMediaType", "The body is not JSON (`unsupported_media_type`)." },
    { 429, "TooManyRequests", "Too many requests (`rate_limited`, `too_many_streams`): wait "
      "Retry-After seconds." },
    { 500, "InternalError", "A fault of ours (`internal_error`); the request id finds it in "
      "the log." },
    { 502, "BadGateway", "A third-party provider failed or answered unusably "
      "(`provider_error`); nothing was written." },
    { 503, "ServiceUnavailable", "Not now: the database is unreachable or lost a race "
      "(`service_unavailable`: nothing was saved), the schema is behind (`schema_behind`), "
      "or something is not configured; try again after Retry-After." },
    { 504, "GatewayTimeout", "A third-party provider took too long (`provider_timeout`)." },
    { 0, NULL, NULL }
};

static void define_problems(oa_t *oa, json_t *responses)
{
    const problem_def_t *d;

    for (d = problems; d->status; d++) {
        json_t *headers = json_object();
        json_t *content = json_pack("{s:{s:o}}", "application/problem+json", "schema",
                                    ref_of(oa, "schemas", "Problem"));
        json_t *example = json_pack("{s:s,s:s,s:i,s:s,s:s,s:s}", "type", "about:blank",
                                    "title", svc_status_title(d->status), "status", d->status,
                                    "detail", d->description,
                                    "code", d->status == 400 ? "validation_failed"
                                    : d->status == 401 ? "unauthenticated"
                                    : d->status == 402 ? "budget_exceeded"
                                    : d->status == 403 ? "forbidden"
                                    : d->status == 404 ? "not_found"
                                    : d->status == 409 ? "conflict"
                                    : d->status == 410 ? "invite_expired"
                                    : d->status == 413 ? "payload_too_large"
                                    : d->status == 415 ? "unsupported_media_type"
                                    : d->status == 429 ? "rate_limited"
                                    : d->status == 502 ? "provider_error"
                                    : d->status == 503 ? "service_unavailable"
                                    : d->status == 504 ? "provider_timeout" : "internal_error",
                                    "request_id", "req_" ID_EXAMPLE);

        if (d->status == 400) {
            json_object_set_new(example, "detail", json_string("The request has invalid "
                                                               "fields."));
            json_object_set_new(example, "errors",
                                json_pack("[{s:s,s:s,s:s}]", "field", "scope", "code",
                                          "invalid_value", "message",
                                          "scope must be one of: read, write, admin."));
        }
        json_object_set_new(json_object_get(content, "application/problem+json"), "example",
                            example);
        use_header(oa, headers, "X-Request-Id", "RequestId", 1);
        if (d->status == 401 && strcmp(d->component, "Unauthenticated") == 0) {
            use_header(oa, headers, "WWW-Authenticate", "WwwAuthenticate", 1);
        }
        if (d->status == 403) {
            use_header(oa, headers, "WWW-Authenticate", "WwwAuthenticate", 0);
        }
        if (d->status == 429 || d->status == 503) {
            use_header(oa, headers, "Retry-After", "RetryAfter", 1);
        }
        if (d->status == 429) {
            use_header(oa, headers, "RateLimit-Limit", "RateLimitLimit", 0);
            use_header(oa, headers, "RateLimit-Remaining", "RateLimitRemaining", 0);
            use_header(oa, headers, "RateLimit-Reset", "RateLimitReset", 0);
        }
        json_object_set_new(responses, d->component,
                            json_pack("{s:s,s:o,s:o}", "description", d->description,
                                      "headers", headers, "content", content));
    }
}

static void add_problem(oa_t *oa, json_t *responses, int status, const char *component)
{
    json_object_set_new(responses, apr_itoa(oa->p, status),
                        ref_of(oa, "responses", component));
}

/* ------------------------------------------------------------------------
 * Operations
 */

/* True when a success of the route is a JSON document. */
static int answers_json(const svc_route_t *r)
{
    int code = svc_route_success(r);

    return code != 204 && code != 302 && !r->media
           && !(r->flags & (SVC_RF_HTML | SVC_RF_STREAM | SVC_RF_TEXT | SVC_RF_BINARY
                            | SVC_RF_MARKDOWN));
}

/* "/api/me/tokens/:id" -> "/api/me/tokens/{id}", its parameters appended. */
static const char *openapi_path(oa_t *oa, const char *tmpl, json_t *params)
{
    const char *s = tmpl;
    const char *out = "";

    while (*s) {
        if (*s == ':') {
            apr_size_t n = strcspn(s + 1, "/");
            const char *name = apr_pstrmemdup(oa->p, s + 1, n);
            out = apr_pstrcat(oa->p, out, "{", name, "}", NULL);
            if (strcmp(name, "orgSlug") == 0 || strcmp(name, "projectSlug") == 0) {
                json_array_append_new(params, ref_of(oa, "parameters", name));
            }
            else {
                json_array_append_new(params, json_pack(
                    "{s:s,s:s,s:b,s:s,s:{s:s,s:s}}", "name", name, "in", "path",
                    "required", 1, "description", strcmp(name, "token") == 0
                    ? "The share link's token (a credential: kept out of the access log)."
                    : "An id: letters, digits, _ and -, at most 64 (others answer 404).",
                    "schema", "type", "string", "pattern", PARAM_ID_PATTERN));
            }
            s += n + 1;
        }
        else {
            apr_size_t n = strcspn(s, ":");
            out = apr_pstrcat(oa->p, out, apr_pstrmemdup(oa->p, s, n), NULL);
            s += n;
        }
    }
    return out;
}

static int has_path_params(const svc_route_t *r)
{
    return strchr(r->path, ':') != NULL;
}

/* What the operation's description says beyond the summary: who may call
 * it, its limits, and the route's own words. */
static const char *describe(oa_t *oa, const svc_route_t *r)
{
    const char *who, *d;

    switch (r->auth) {
    case SVC_AUTH_USER:
        who = (r->flags & SVC_RF_SESSION)
            ? "a signed-in browser session (a personal access token gets 403 "
              "`session_required`)"
            : apr_pstrcat(oa->p, "a signed-in session, or a personal access token with `",
                          svc_scope_name(r->scope), "` scope or more", NULL);
        if (svc_route_is_tenant(r)) {
            who = apr_pstrcat(oa->p, who, "; the `", svc_role_name(r->role),
                              "` role or more in the organization", NULL);
        }
        if (svc_route_is_project(r)) {
            who = apr_pstrcat(oa->p, who, "; the `", svc_prole_name(r->prole),
                              "` role or more in the project", NULL);
        }
        if (r->flags & SVC_RF_FOUNDER) {
            who = apr_pstrcat(oa->p, who, "; the platform's operator (a founder) only", NULL);
        }
        break;
    case SVC_AUTH_SHARE:
        who = "anyone holding a live share link (its token in the path)";
        break;
    case SVC_AUTH_WEBHOOK:
        who = "the code-hosting provider, signing the body with the App's webhook secret";
        break;
    case SVC_AUTH_INTERNAL:
        who = "addresses SvcInternalAllow lists (loopback by default); others get 404";
        break;
    default:
        who = "anyone (public)";
        break;
    }
    d = apr_pstrcat(oa->p, r->summary ? r->summary : "", ".\n\n",
                    r->description ? r->description : "",
                    r->description ? "\n\n" : "", "**Who may call it:** ", who, ".", NULL);
    if (r->rate_class) {
        d = apr_pstrcat(oa->p, d, "\n\n**Rate limit:** the `", r->rate_class,
                        "` class (SvcRateLimit); RateLimit-* headers say what is left, and "
                        "a 429 says when to try again (Retry-After).", NULL);
    }
    if (r->flags & SVC_RF_IDEMPOTENT) {
        d = apr_pstrcat(oa->p, d, "\n\n**Idempotency:** with an Idempotency-Key, the same "
                        "request again within 24 hours answers 200 with what the first made "
                        "(Idempotent-Replayed: true); another request with that key is 409 "
                        "`idempotency_conflict`.", NULL);
    }
    if (r->flags & SVC_RF_PAGED) {
        d = apr_pstrcat(oa->p, d, "\n\n**A list:** newest first, in pages (`limit`, "
                        "`cursor`; docs/api/conventions.md#lists).", NULL);
    }
    return d;
}

/* The event kinds a stream route carries, each to its data's schema. */
static json_t *stream_events(oa_t *oa, const svc_route_t *r, const svc_area_t *const *areas)
{
    json_t *events = json_object();
    const svc_area_t *const *a;
    const svc_event_kind_t *e;

    for (a = areas; a && *a; a++) {
        /* An agent's stream carries its target's work; a user's never. */
        for (e = r->auth == SVC_AUTH_AGENT ? (*a)->agent_events : (*a)->events;
             e && e->kind; e++) {
            if (r->events && strncmp(e->kind, r->events, strlen(r->events)) != 0) {
                continue;
            }
            json_object_set_new(events, e->kind, schema_ref(oa, e->data));
        }
    }
    if (!json_object_size(events)) {
        oa_fail(oa, "%s %s streams events, but no area writes one it carries", r->method,
                r->path);
    }
    return events;
}

/* The success answer, and the replay's when the route is idempotent. */
static void success(oa_t *oa, const svc_route_t *r, json_t *op, json_t *responses,
                    const svc_area_t *const *areas)
{
    int code = svc_route_success(r);
    json_t *headers = json_object();
    json_t *resp = json_pack("{s:s}", "description", "Success.");
    const svc_header_t *h;

    use_header(oa, headers, "X-Request-Id", "RequestId", 1);
    if (r->rate_class) {
        use_header(oa, headers, "RateLimit-Limit", "RateLimitLimit", 0);
        use_header(oa, headers, "RateLimit-Remaining", "RateLimitRemaining", 0);
        use_header(oa, headers, "RateLimit-Reset", "RateLimitReset", 0);
    }
    if (code == 302) {
        use_header(oa, headers, "Location", "Location", 1);
        json_object_set_new(resp, "description", json_string("A redirect for the browser."));
    }
    for (h = r->headers; h && h->name; h++) {
        const char *component = header_component(oa->p, h->name);
        const header_def_t *known = header_def(oa, component);
        if (!known) {
            header_def_t *d = apr_pcalloc(oa->p, sizeof(*d));
            d->component = component;
            d->name = h->name;
            d->description = h->description;
            d->type = scalar_type(h->type);
            d->example = h->example;
            apr_hash_set(oa->route_headers, component, APR_HASH_KEY_STRING, d);
        }
        else if (!same_text(known->description, h->description)
                 || strcmp(known->type, scalar_type(h->type)) != 0
                 || !same_text(known->example, h->example)) {
            /* One component per header: a second meaning would be dropped
             * without a word, and a route would be documented by another's
             * description. */
            oa_fail(oa, "%s %s: header %s is declared otherwise by another route (one "
                    "description, type and example per header)", r->method, r->path, h->name);
        }
        use_header(oa, headers, h->name, component, h->required);
    }
    json_object_set_new(resp, "headers", headers);
    if (code == 204) {
        json_object_set_new(resp, "description", json_string("Done; no body."));
    }
    else if (code == 302) {
        /* A redirect's body is nothing a client reads. */
        if (r->response) {
            oa_fail(oa, "%s %s redirects, and names a JSON schema", r->method, r->path);
        }
    }
    else if (answers_json(r)) {
        json_t *schema, *example;
        if (!r->response) {
            oa_fail(oa, "%s %s answers JSON but names no schema (.response)", r->method,
                    r->path);
            json_decref(resp);
            return;
        }
        example = schema_example(r->response, 0);
        if ((r->flags & SVC_RF_PAGED) || r->page_keys) {
            /* The one envelope (Page), its items said here. */
            json_t *own = json_pack("{s:s,s:[s],s:{s:{s:s,s:o}}}", "type", "object",
                                    "required", "data", "properties", "data", "type", "array",
                                    "items", schema_ref(oa, r->response));
            example = json_pack("{s:[o],s:n}", "data", example, "next_cursor");
            if (r->page_keys) {
                const char *where = apr_pstrcat(oa->p, r->method, " ", r->path, NULL);
                add_keys(oa, json_object_get(own, "properties"),
                         json_object_get(own, "required"), r->page_keys, NULL, where);
                json_t *more = keys_example(r->page_keys, NULL, 0);
                json_object_update(example, more);
                json_decref(more);
            }
            schema = json_pack("{s:[o,o]}", "allOf", schema_ref(oa, &svc_schema_page), own);
            json_object_set_new(resp, "description",
                                json_string(apr_pstrcat(oa->p, "A page of ",
                                                        r->response->name, " items.", NULL)));
        }
        else {
            schema = schema_ref(oa, r->response);
            if (r->answers & SVC_ANS_NULL) {
                schema = json_pack("{s:[o,{s:s}]}", "oneOf", schema, "type", "null");
            }
            json_object_set_new(resp, "description",
                                json_string(apr_pstrcat(oa->p, code == 201 ? "Made: the "
                                                        : "The ", r->response->name, ".",
                                                        NULL)));
        }
        json_object_set_new(resp, "content",
                            json_pack("{s:{s:o,s:o}}", "application/json", "schema", schema,
                                      "example", example));
    }
    else {
        const char *media = r->media;
        const char *what = "The answer.";
        json_t *schema = json_pack("{s:s}", "type", "string");

        if (r->response) {
            oa_fail(oa, "%s %s names a JSON schema but does not answer JSON", r->method,
                    r->path);
        }
        if (!media) {
            media = (r->flags & SVC_RF_HTML) ? "text/html"
                  : (r->flags & SVC_RF_STREAM) ? "text/event-stream"
                  : (r->flags & SVC_RF_TEXT) ? "text/plain"
                  : (r->flags & SVC_RF_MARKDOWN) ? "text/markdown"
                  : "application/octet-stream";
        }
        if (r->flags & SVC_RF_HTML) {
            what = "A page for the browser.";
        }
        else if (r->flags & SVC_RF_STREAM) {
            what = "Server-sent events: each event's `event:` line is its kind and its "
                   "`data:` line one JSON object, whose schema x-svc-events names by kind "
                   "(docs/api/events.md).";
        }
        else if (r->flags & SVC_RF_MARKDOWN) {
            what = "The document, in Markdown.";
        }
        if (!(r->flags & (SVC_RF_HTML | SVC_RF_STREAM | SVC_RF_TEXT | SVC_RF_MARKDOWN))) {
            json_object_set_new(schema, "format", json_string("binary"));
        }
        if (r->flags & SVC_RF_STREAM) {
            /* Each event's data line is one of the kinds' schemas: said as
             * an annotation of the stream (contentSchema), so generators
             * and linters see the event types; x-svc-events maps kinds. */
            json_t *events = stream_events(oa, r, areas), *v;
            json_t *one_of = json_array();
            const char *kind;
            json_object_foreach(events, kind, v) {
                json_array_append(one_of, v);
            }
            json_object_set_new(schema, "contentSchema", json_pack("{s:o}", "oneOf", one_of));
            json_object_set_new(op, "x-svc-events", events);
        }
        json_object_set_new(resp, "description", json_string(what));
        json_object_set_new(resp, "content", json_pack("{s:{s:o}}", media, "schema", schema));
    }
    json_object_set_new(responses, apr_itoa(oa->p, code), resp);
    if (r->success_also) {
        json_t *also = json_deep_copy(resp);
        json_object_set_new(also, "description",
                            json_string("Success too (what the description says)."));
        json_object_set_new(responses, apr_itoa(oa->p, r->success_also), also);
    }
    if (r->flags & SVC_RF_IDEMPOTENT) {
        json_t *replay = json_deep_copy(resp);
        json_t *rh = json_object_get(replay, "headers");
        if (code != 201) {
            oa_fail(oa, "%s %s: only a creation (201) can be idempotent (SVC_RF_IDEMPOTENT)",
                    r->method, r->path);
        }
        use_header(oa, rh, "Idempotent-Replayed", "IdempotentReplayed", 1);
        json_object_set_new(replay, "description",
                            json_string("A replay: the same request with the same "
                                        "Idempotency-Key within 24 hours; what the first made, "
                                        "as it is now."));
        json_object_set_new(responses, "200", replay);
    }
}

/* The problems the route may answer. */
static void failures(oa_t *oa, const svc_route_t *r, json_t *responses)
{
    int body = r->body || (r->flags & (SVC_RF_RAW_BODY | SVC_RF_STREAM_BODY));
    int user = r->auth == SVC_AUTH_USER;

    /* The query string is decoded on every route (invalid_query). */
    add_problem(oa, responses, 400, "BadRequest");
    if (user) {
        add_problem(oa, responses, 401, "Unauthenticated");
        add_problem(oa, responses, 403, "Forbidden");
    }
    else if (r->auth == SVC_AUTH_AGENT) {
        /* Not a deploy target's current key (a PAT or a session neither). */
        add_problem(oa, responses, 401, "Unauthenticated");
    }
    else if (r->auth == SVC_AUTH_WEBHOOK || (r->answers & SVC_ANS_DENIED)) {
        add_problem(oa, responses, 401, "Unauthorized");
        add_problem(oa, responses, 403, "Forbidden");
    }
    if (r->answers & SVC_ANS_PAYMENT) {
        add_problem(oa, responses, 402, "PaymentRequired");
    }
    /* An internal route answers 404 to other addresses: it does not
     * confirm it exists. */
    if (has_path_params(r) || body || r->query || (r->flags & SVC_RF_FOUNDER)
        || r->auth == SVC_AUTH_INTERNAL || (r->answers & SVC_ANS_NOT_FOUND)) {
        add_problem(oa, responses, 404, "NotFound");
    }
    if (svc_method_is_unsafe(r->method) || (r->answers & SVC_ANS_CONFLICT)) {
        add_problem(oa, responses, 409, "Conflict");
    }
    if (r->answers & SVC_ANS_GONE) {
        add_problem(oa, responses, 410, "Gone");
    }
    if (body) {
        add_problem(oa, responses, 413, "PayloadTooLarge");
    }
    if (r->body || (r->flags & SVC_RF_RAW_BODY)) {
        add_problem(oa, responses, 415, "UnsupportedMediaType");
    }
    if (r->rate_class || (r->answers & SVC_ANS_LIMITED)) {
        add_problem(oa, responses, 429, "TooManyRequests");
    }
    add_problem(oa, responses, 500, "InternalError");
    if (r->answers & SVC_ANS_PROVIDER) {
        add_problem(oa, responses, 502, "BadGateway");
        add_problem(oa, responses, 504, "GatewayTimeout");
    }
    add_problem(oa, responses, 503, "ServiceUnavailable");
}

/*
 * The example of a route's JSON body: its own (.body_example), which the
 * service's body check (svc_json_check, what every request's body goes
 * through) must accept, so the document never shows a body the route
 * would refuse. NULL, and the table refused, when there is none or it
 * does not pass.
 */
static json_t *body_example(oa_t *oa, const svc_route_t *r)
{
    json_error_t jerr;
    json_t *example, *errors = NULL;

    if (!r->body_example) {
        oa_fail(oa, "%s %s takes a JSON body but shows no example of it (.body_example)",
                r->method, r->path);
        return NULL;
    }
    example = json_loads(r->body_example, JSON_REJECT_DUPLICATES, &jerr);
    if (!example || !json_is_object(example)) {
        oa_fail(oa, "%s %s: its .body_example is not a JSON object (%s)", r->method, r->path,
                example ? "another value" : jerr.text);
        json_decref(example);
        return NULL;
    }
    if (svc_json_check(example, r->body, oa->p, &errors) != APR_SUCCESS) {
        char *why = json_dumps(errors, JSON_COMPACT);
        oa_fail(oa, "%s %s: its .body_example is refused by its own body schema: %s",
                r->method, r->path, why ? why : "(unprintable)");
        free(why);
        json_decref(example);
        return NULL;
    }
    return example;
}

static json_t *operation(oa_t *oa, const svc_route_t *r, const char *tag, json_t *params,
                         const svc_area_t *const *areas)
{
    json_t *op = json_object();
    json_t *responses = json_object();
    const svc_qparam_t *q;

    json_object_set_new(op, "operationId", json_string(r->op_id));
    json_object_set_new(op, "summary", json_string(r->summary));
    json_object_set_new(op, "description", json_string(describe(oa, r)));
    json_object_set_new(op, "tags", json_pack("[s]", tag));
    if (r->flags & SVC_RF_PAGED) {
        json_array_append_new(params, ref_of(oa, "parameters", "limit"));
        json_array_append_new(params, ref_of(oa, "parameters", "cursor"));
    }
    for (q = r->query; q && q->name; q++) {
        json_array_append_new(params, json_pack("{s:s,s:s,s:s,s:{s:s}}", "name", q->name,
                                                "in", "query", "description", q->description,
                                                "schema", "type", q->type));
    }
    if (r->flags & SVC_RF_IDEMPOTENT) {
        json_array_append_new(params, ref_of(oa, "parameters", "IdempotencyKey"));
    }
    if (r->flags & SVC_RF_STREAM) {
        json_array_append_new(params, ref_of(oa, "parameters", "LastEventId"));
    }
    if (json_array_size(params)) {
        json_object_set(op, "parameters", params);
    }
    if (r->body) {
        json_t *schema = svc_json_schema_of(r->body);
        json_t *example = body_example(oa, r);
        const svc_field_t *f;
        int required = 0;

        /* A body whose fields are all optional (a PATCH) is still a body: an
         * empty one is invalid JSON. */
        for (f = r->body; f->name; f++) {
            required |= f->required;
        }
        json_object_set_new(op, "requestBody",
                            json_pack("{s:b,s:s,s:{s:{s:o}}}", "required", 1, "description",
                                      required ? "The fields, as the schema says."
                                      : "The fields to change; those left out stay as they "
                                        "are.", "content", "application/json", "schema",
                                      schema));
        if (example) {
            json_object_set_new(json_object_get(json_object_get(json_object_get(
                                    op, "requestBody"), "content"), "application/json"),
                                "example", example);
        }
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
                            json_pack("{s:b,s:s,s:{s:{s:o}}}", "required", 1, "description",
                                      "The provider's event, as it sent it (its signature is "
                                      "checked over these bytes).", "content",
                                      "application/json", "schema",
                                      ref_of(oa, "schemas", "JsonValue")));
        if (r->body_example) {
            /* Any JSON is taken here: it need only parse. */
            json_error_t jerr;
            json_t *example = json_loads(r->body_example, JSON_REJECT_DUPLICATES, &jerr);
            if (!example) {
                oa_fail(oa, "%s %s: its .body_example is not JSON (%s)", r->method, r->path,
                        jerr.text);
            }
            else {
                json_object_set_new(json_object_get(json_object_get(json_object_get(
                                        op, "requestBody"), "content"), "application/json"),
                                    "example", example);
            }
        }
    }
    success(oa, r, op, responses, areas);
    failures(oa, r, responses);
    json_object_set_new(op, "responses", responses);
    if (r->auth == SVC_AUTH_USER) {
        json_object_set_new(op, "security",
                            (r->flags & SVC_RF_SESSION)
                            ? json_pack("[{s:[]}]", "session")
                            : json_pack("[{s:[s]},{s:[]}]", "pat", svc_scope_name(r->scope),
                                        "session"));
    }
    else if (r->auth == SVC_AUTH_AGENT) {
        json_object_set_new(op, "security", json_pack("[{s:[]}]", "agent"));
    }
    else {
        json_object_set_new(op, "security", json_array());
    }
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

/* The tag's description from the area's list; NULL when it has none. */
static const char *tag_description(const svc_area_t *area, const char *tag)
{
    const svc_tag_t *t;

    for (t = area->tags; t && t->name; t++) {
        if (strcmp(t->name, tag) == 0) {
            return t->description;
        }
    }
    return NULL;
}

/* The operations of one area's routes, added to paths; the area's tags,
 * in order of first use, appended to tags and to the group's list. */
static void add_area(oa_t *oa, const svc_area_t *area, const svc_area_t *const *areas,
                     json_t *paths, json_t *tags, json_t *group)
{
    const svc_route_t *r;

    for (r = area->routes; r->method; r++) {
        json_t *params, *item;
        const char *path, *tag = svc_route_tag(area, r);
        char *m;
        size_t i;
        int k, seen = 0;

        if (r->flags & SVC_RF_HIDDEN) {
            continue;
        }
        if (!tag || !r->op_id || !r->summary) {
            oa_fail(oa, "%s %s: a route names its tag (its area has several), operation id "
                    "and summary", r->method, r->path);
            continue;
        }
        if (!tag_description(area, tag)) {
            oa_fail(oa, "%s %s: the tag \"%s\" is not one area %s describes (svc_area_t.tags)",
                    r->method, r->path, tag, area->name);
        }
        params = json_array();
        path = openapi_path(oa, r->path, params);
        item = json_object_get(paths, path);
        if (!item) {
            item = json_object();
            json_object_set_new(paths, path, item);
        }
        m = apr_pstrdup(oa->p, r->method);
        for (k = 0; m[k]; k++) {
            m[k] = (char)apr_tolower(m[k]);
        }
        json_object_set_new(item, m, operation(oa, r, tag, params, areas));
        json_decref(params);
        for (i = 0; i < json_array_size(tags); i++) {
            json_t *t = json_object_get(json_array_get(tags, i), "name");
            seen |= strcmp(json_string_value(t), tag) == 0;
        }
        if (!seen) {
            const char *d = tag_description(area, tag);
            json_array_append_new(tags, json_pack("{s:s,s:s,s:s}", "name", tag, "description",
                                                  d ? d : "", "x-svc-area", area->name));
            json_array_append_new(json_object_get(group, "tags"), json_string(tag));
        }
    }
}

static json_t *parameters(void)
{
    return json_pack(
        "{s:{s:s,s:s,s:b,s:s,s:{s:s,s:s}},s:{s:s,s:s,s:b,s:s,s:{s:s,s:s}},"
        "s:{s:s,s:s,s:s,s:{s:s,s:i,s:i,s:i}},s:{s:s,s:s,s:s,s:{s:s,s:i}},"
        "s:{s:s,s:s,s:s,s:{s:s,s:i,s:i,s:s}},s:{s:s,s:s,s:s,s:{s:s,s:s}}}",
        "orgSlug", "name", "orgSlug", "in", "path", "required", 1, "description",
        "The organization's slug.", "schema", "type", "string", "pattern", SLUG_PATTERN,
        "projectSlug", "name", "projectSlug", "in", "path", "required", 1, "description",
        "The project's slug (unique in its organization).", "schema", "type", "string",
        "pattern", SLUG_PATTERN,
        "limit", "name", "limit", "in", "query", "description", "Items per page.", "schema",
        "type", "integer", "minimum", 1, "maximum", 200, "default", 50,
        "cursor", "name", "cursor", "in", "query", "description",
        "The next_cursor of the previous page, with the same filters (signed: another "
        "list's or an altered cursor is a 400).", "schema", "type", "string", "maxLength", 64,
        "IdempotencyKey", "name", "Idempotency-Key", "in", "header", "description",
        "Makes a retry safe: the same key with the same request within 24 hours answers "
        "what the first made (Stripe's semantics).", "schema", "type", "string",
        "minLength", 1, "maxLength", 255, "pattern", "^[\\x21-\\x7E]+$",
        "LastEventId", "name", "Last-Event-ID", "in", "header", "description",
        "Resume after this event id (EventSource sends it by itself on a reconnect).",
        "schema", "type", "string", "pattern", "^[0-9]+$");
}

static json_t *security_schemes(void)
{
    return json_pack(
        "{s:{s:s,s:s,s:s},s:{s:s,s:s,s:s,s:s},s:{s:s,s:s,s:s}}",
        "pat", "type", "http", "scheme", "bearer", "description",
        "A personal access token, svc_pat_...; its scope caps what it may do.",
        "session", "type", "apiKey", "in", "cookie", "name", "service_session",
        "description", "The web UI's session cookie (counts as admin scope).",
        "agent", "type", "http", "scheme", "bearer", "description",
        "A deploy target's enrollment key, svc_dek_... (the agent routes only).");
}

json_t *svc_openapi_build_checked(apr_pool_t *p, const svc_area_t *const *areas,
                                  const char *server_url, const char **perr)
{
    oa_t oa = { p, json_object(), json_object(), apr_hash_make(p), apr_hash_make(p), NULL };
    json_t *paths = json_object();
    json_t *tags = json_array();
    json_t *groups = json_array();
    json_t *responses = json_object();
    const svc_area_t *const *a;

    define_problems(&oa, responses);
    json_decref(schema_ref(&oa, &svc_schema_problem));
    json_object_set_new(oa.schemas, "JsonValue", json_value_schema());
    /* Operations are tagged by the part of the specification they belong
     * to; x-tagGroups (read by Redoc and others) groups those tags by area,
     * in the order of the area registry. */
    for (a = areas; a && *a; a++) {
        json_t *group = json_pack("{s:s,s:s,s:[]}", "name", (*a)->name, "description",
                                  (*a)->description, "tags");
        add_area(&oa, *a, areas, paths, tags, group);
        if (json_array_size(json_object_get(group, "tags"))) {
            json_array_append(groups, group);
        }
        json_decref(group);
    }
    if (perr) {
        *perr = oa.err;
    }
    return json_pack("{s:s,s:{s:s,s:s,s:{s:s,s:s},s:s},s:[{s:s}],s:o,s:o,s:o,s:o}",
                     "openapi", "3.1.0",
                     "info", "title", "mod_svc API", "version", SVC_VERSION, "license",
                     "name", "No license declared: all rights reserved", "identifier",
                     "LicenseRef-mod_svc-unlicensed", "description",
                     "The multi-tenant, AI-assisted software-building service. Errors are "
                     "RFC 9457 problem documents with a stable `code` and the `request_id`; "
                     "lists are pages of `data` with a `next_cursor`; times are RFC 3339 in "
                     "UTC; ids carry a type prefix (docs/api/conventions.md).",
                     "servers", "url", server_url && *server_url ? server_url : "/",
                     "tags", tags, "x-tagGroups", groups, "paths", paths,
                     "components",
                     json_pack("{s:o,s:o,s:o,s:o,s:o}", "securitySchemes", security_schemes(),
                               "parameters", parameters(), "headers", oa.headers,
                               "responses", responses, "schemas", oa.schemas));
}

json_t *svc_openapi_build(apr_pool_t *p, const svc_area_t *const *areas, const char *server_url)
{
    return svc_openapi_build_checked(p, areas, server_url, NULL);
}

const char *svc_openapi_check(apr_pool_t *p, const svc_area_t *const *areas)
{
    const char *err = NULL;
    json_t *doc = svc_openapi_build_checked(p, areas, NULL, &err);

    json_decref(doc);
    return err;
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
