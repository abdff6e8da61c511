/*
 * svc_schema.c: the kernel's own schemas (problem documents, the list
 * envelope, health), and reading a shape's nested keys.
 */
#include "svc_schema.h"

const svc_col_t *svc_col_keys(const svc_col_t *c)
{
    return c->sub ? c->sub : c->ref ? c->ref->keys : NULL;
}

static const svc_col_t problem_error_keys[] = {
    { .key = "field", .type = SVC_COL_TEXT, .example = "scope",
      .description = "The field of the body or the query parameter, as sent." },
    { .key = "code", .type = SVC_COL_TEXT, .example = "invalid_value",
      .description = "What is wrong with it, for programs: required, unknown_field, "
        "invalid_type, invalid_value, invalid_length, out_of_range, invalid_slug, "
        "invalid_email, invalid_id, invalid_cursor, not_found." },
    { .key = "message", .type = SVC_COL_TEXT, .example = "scope must be one of: read, write, "
      "admin.", .description = "What is wrong with it, for people." },
    SVC_COL_END
};

static const svc_col_t problem_keys[] = {
    { .key = "type", .type = SVC_COL_TEXT, .example = "about:blank",
      .description = "Always about:blank: `code` says what happened." },
    { .key = "title", .type = SVC_COL_TEXT, .example = "Bad Request",
      .description = "The status's reason phrase." },
    { .key = "status", .type = SVC_COL_INT, .description = "The HTTP status, again." },
    { .key = "detail", .type = SVC_COL_TEXT, .example = "The request has invalid fields.",
      .description = "What happened, for people." },
    { .key = "code", .type = SVC_COL_TEXT, .example = "validation_failed",
      .description = "What happened, for programs: stable (docs/api/conventions.md lists the "
        "codes every route may answer; each area's page, its own)." },
    { .key = "request_id", .type = SVC_COL_TEXT, .id = "req",
      .description = "The request's id (X-Request-Id), which finds it in the server's log." },
    { .key = "errors", .type = SVC_COL_ARRAY, .flags = SVC_COL_OPTIONAL,
      .sub = problem_error_keys,
      .description = "With validation_failed: each field that is wrong." },
    SVC_COL_END
};

const svc_schema_t svc_schema_problem = { .name = "Problem", .keys = problem_keys,
    .description = "An error, as an RFC 9457 problem document "
        "(application/problem+json)." };

static const svc_col_t page_keys[] = {
    { .key = "data", .type = SVC_COL_ARRAY,
      .description = "This page's items, newest first (each operation says what they are)." },
    { .key = "next_cursor", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .example = "AgAAAAAAAAAMcvhqw1Gz0Zq6l3Xh5r0Mkg",
      .description = "Pass it as ?cursor= for the next page, with the same filters; null on "
        "the last page. Opaque, and good only for the list that issued it." },
    SVC_COL_END
};

const svc_schema_t svc_schema_page = { .name = "Page", .keys = page_keys,
    .description = "One page of a list: the envelope of every list answer "
        "(docs/api/conventions.md#lists)." };

static const svc_col_t health_keys[] = {
    { .key = "status", .type = SVC_COL_TEXT, .values = SVC_VALUES("ok") },
    { .key = "database", .type = SVC_COL_TEXT, .values = SVC_VALUES("ok") },
    { .key = "schema_version", .type = SVC_COL_INT,
      .description = "The database's migration level." },
    { .key = "schema_required", .type = SVC_COL_INT,
      .description = "The level this build needs (at most schema_version)." },
    { .key = "version", .type = SVC_COL_TEXT, .example = "0.1.0",
      .description = "The module's version." },
    SVC_COL_END
};

static const svc_col_t ready_keys[] = {
    { .key = "status", .type = SVC_COL_TEXT, .values = SVC_VALUES("ready") },
    { .key = "database", .type = SVC_COL_TEXT, .values = SVC_VALUES("ok") },
    { .key = "schema_version", .type = SVC_COL_INT,
      .description = "The database's migration level." },
    { .key = "schema_required", .type = SVC_COL_INT,
      .description = "The level this build needs (at most schema_version)." },
    { .key = "supervisor", .type = SVC_COL_TEXT, .values = SVC_VALUES("ok", "off"),
      .description = "`ok`: the run supervisor of this node went round its loop within its "
        "lease; `off`: this node runs none (SvcRunSupervisor Off)." },
    { .key = "version", .type = SVC_COL_TEXT, .example = "0.1.0",
      .description = "The module's version." },
    SVC_COL_END
};

const svc_schema_t svc_schema_ready = { .name = "Readiness", .keys = ready_keys,
    .description = "This node can serve: the database answers at the schema this build "
        "needs, and its run supervisor, if it runs one, is alive." };

const svc_schema_t svc_schema_health = { .name = "Health", .keys = health_keys,
    .description = "Ready: the database answers, at the schema this build needs." };
