/*
 * svc_schema.h: what a JSON answer looks like, said once in C, for both
 * the code that writes it and the OpenAPI document that describes it.
 *
 * A shape is an array of keys (svc_col_t), ended by SVC_COL_END. The row
 * writer (svc_row_json, svc_page.h) writes an object by it from plain
 * columns; the OpenAPI document (svc_openapi.c) turns the same array into
 * a JSON Schema. So for a document written by its shape, the schema cannot
 * drift from the answer: they are one array. A document built another way
 * (SQL's json_build_object, jansson) is declared by a shape of its own,
 * beside the handler that builds it, and the suites check every answer
 * against the document (t/lib/SvcContract.pm).
 *
 * Keys are written with designated initialisers and leave out what is
 * zero: a key is always there and never null, a string is any string.
 *
 *     static const svc_col_t run_keys[] = {
 *         { .key = "id", .type = SVC_COL_TEXT, .id = "run" },
 *         { .key = "status", .type = SVC_COL_TEXT, .values = run_statuses },
 *         { .key = "finished_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
 *         { .key = "result", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL,
 *           .sub = run_result_keys },
 *         SVC_COL_END
 *     };
 *     const svc_schema_t svc_schema_run = {
 *         .name = "Run", .description = "A factory run.", .keys = run_keys
 *     };
 *
 * A route answers its schema by naming it (.response in svc_route.h).
 */
#ifndef SVC_SCHEMA_H
#define SVC_SCHEMA_H

#include "svc_ktypes.h"

/* What a key holds. The first five are what the row writer writes from a
 * column; the others describe documents built otherwise. */
typedef enum {
    SVC_COL_TEXT = 1,   /* a string (text or varchar) */
    SVC_COL_INT,        /* an integer (smallint, integer, bigint) */
    SVC_COL_BOOL,       /* true or false */
    SVC_COL_TIME,       /* RFC 3339 in UTC, whole seconds (timestamptz) */
    SVC_COL_OBJECT,     /* an object: the keys of `sub`, or the schema `ref` */
    SVC_COL_NUMBER,     /* a number that may have a fraction */
    SVC_COL_ARRAY,      /* an array of objects (`sub` or `ref`) or of `item`s */
    SVC_COL_JSON        /* any JSON value a handler passes through (a JsonValue) */
} svc_coltype_e;

/* Flags of a key. */
#define SVC_COL_NULL     0x01   /* may be null */
#define SVC_COL_OPTIONAL 0x02   /* may be left out */

typedef struct svc_schema_t svc_schema_t;

typedef struct svc_col_t {
    const char *key;                /* NULL ends a shape */
    svc_coltype_e type;
    const struct svc_col_t *sub;    /* OBJECT, ARRAY: the keys of the (item) object */
    unsigned flags;                 /* SVC_COL_NULL, SVC_COL_OPTIONAL */
    const char *id;                 /* TEXT: an id of this prefix ("run": run_ + 22 base62) */
    const char *const *values;      /* TEXT: one of these, NULL ended */
    const char *format;             /* TEXT: "slug", "email", "uri", "sha" (40 hex digits),
                                     * "hex", "digits" (a number as text), "secret" (a
                                     * credential shown once) */
    const svc_schema_t *ref;        /* OBJECT, ARRAY: a named schema instead of `sub` */
    svc_coltype_e item;             /* ARRAY: the type of scalar items */
    const char *description;
    const char *example;            /* TEXT: an example value (else one is made up) */
} svc_col_t;

#define SVC_COL(k, t) { .key = (k), .type = (t) }
#define SVC_COL_NEST(k, s) { .key = (k), .type = SVC_COL_OBJECT, .sub = (s) }
#define SVC_COL_END { .key = NULL }

/* The columns of a webhook delivery kept with its attempts, for a
 * redelivery (vcs and billing: docs/api/admin.md): status, attempts,
 * last_error, last_attempt_at, in that order. */
#define SVC_COLS_ATTEMPTS \
    { .key = "status", .type = SVC_COL_TEXT, .values = SVC_VALUES("processed", "failed"), \
      .description = "failed: its last attempt did not go through; an operator may " \
        "redeliver it (POST .../redeliver), and so may the provider." }, \
    { .key = "attempts", .type = SVC_COL_INT, .description = "Times it was processed." }, \
    { .key = "last_error", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, \
      .description = "Why its last attempt failed; null once one succeeded." }, \
    { .key = "last_attempt_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL }

/* The columns most objects have, written once so that every answer spells
 * them alike: when made and last changed (RFC 3339, UTC), who made it. */
#define SVC_COL_CREATED_AT { .key = "created_at", .type = SVC_COL_TIME }
/* An object's own id, with the prefix its ids have ("prj": prj_ + 22 base62). */
#define SVC_COL_ID(prefix) { .key = "id", .type = SVC_COL_TEXT, .id = (prefix) }
/* An org's or a project's slug; a user's or an invitee's address. */
#define SVC_COL_SLUG { .key = "slug", .type = SVC_COL_TEXT, .format = "slug" }
#define SVC_COL_EMAIL { .key = "email", .type = SVC_COL_TEXT, .format = "email" }
#define SVC_COL_UPDATED_AT { .key = "updated_at", .type = SVC_COL_TIME }
#define SVC_COL_CREATED_BY \
    { .key = "created_by", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .id = "usr" }

/* A list of values for .values, NULL ended. */
#define SVC_VALUES(...) ((const char *const[]){ __VA_ARGS__, NULL })

/*
 * A named schema: a component of the OpenAPI document. The keys of `base`
 * (and of its base) come first, then `keys`: a token as created is a token
 * plus its secret, flat, as the answer is. A schema with `one_of` is
 * exactly one of those (NULL ended), and has no keys of its own: what a
 * route answers in one of two shapes (a team member added, or invited).
 */
struct svc_schema_t {
    const char *name;               /* the component's name: "Run" */
    const char *description;
    const svc_col_t *keys;
    const svc_schema_t *base;
    const svc_schema_t *const *one_of;
};

/* The keys an OBJECT or ARRAY key holds (`sub`, or the keys of `ref`
 * without its base); NULL for none. */
const svc_col_t *svc_col_keys(const svc_col_t *c);

/*
 * An event of the event log as a live stream carries it (svc_eventlog.h):
 * its kind and the schema of its data. Each area lists the events it
 * writes (svc_area_t.events), ended by { NULL }.
 */
typedef struct {
    const char *kind;               /* "run.status" */
    const svc_schema_t *data;
    const char *description;        /* when it is written */
} svc_event_kind_t;

/* A tag of the OpenAPI document: a part of an area, described. Ended by
 * { NULL }. */
typedef struct {
    const char *name;
    const char *description;
} svc_tag_t;

/*
 * A header of a route's success answer beyond the ones every answer or
 * every route of a kind has (svc_openapi.c): {NULL} ended.
 */
typedef struct {
    const char *name;               /* "X-Next-Offset" */
    svc_coltype_e type;             /* TEXT or INT */
    int required;                   /* always sent with a success */
    const char *description;        /* one meaning: every route that sends the header
                                     * says it the same way (svc_openapi_check) */
    const char *example;            /* a value as sent ("2048" for an INT) */
} svc_header_t;

/* The Content-Disposition of a download, in the one way every route that
 * sends it describes it. */
#define SVC_HEADER_DOWNLOAD \
    { .name = "Content-Disposition", .type = SVC_COL_TEXT, .required = 1, \
      .description = "attachment, with the file's name: a browser saves it, and does not " \
        "show it.", \
      .example = "attachment; filename=\"notes.txt\"; filename*=UTF-8''notes.txt" }

/*
 * The kernel's own schemas: a problem document (every error), the list
 * envelope (every paged route's answer is a Page whose data holds the
 * route's schema), and the health check's answer.
 */
extern const svc_schema_t svc_schema_problem, svc_schema_page, svc_schema_health, svc_schema_ready;

#endif /* SVC_SCHEMA_H */
