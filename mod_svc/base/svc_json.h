/*
 * svc_json.h: strict JSON in, and the body schemas of the route table.
 */
#ifndef SVC_JSON_H
#define SVC_JSON_H

#include "svc_types.h"
#include <apr_time.h>

/* Field types a body schema knows. */
typedef enum {
    SVC_FT_STRING = 1,  /* min/max: length in characters (code points, decoded) */
    SVC_FT_INT,         /* min/max: value */
    SVC_FT_BOOL,
    SVC_FT_ENUM,        /* one of `values` */
    SVC_FT_SLUG,        /* lowercase [a-z0-9-], 1-63, no dash at either end */
    SVC_FT_EMAIL,       /* a plausible address, at most 254 characters */
    SVC_FT_ID,          /* an opaque id with the given prefix (values[0]) */
    SVC_FT_OBJECT,      /* free-form object (validated by the handler) */
    SVC_FT_TEXT,        /* multi-line text: min/max length, no NUL */
    SVC_FT_INTS         /* a list of at most SVC_JSON_MAX_INTS integers, each from min to max */
} svc_ftype_e;

/* The most entries an SVC_FT_INTS list may have. */
#define SVC_JSON_MAX_INTS 16

/*
 * One field of a body schema, written with designated initialisers that
 * leave out what is zero (not required, not nullable, no bounds):
 *     { .name = "role", .type = SVC_FT_ENUM, .required = 1, .values = roles,
 *       .description = "The member's new role." },
 */
struct svc_field_t {
    const char *name;           /* NULL ends a schema */
    svc_ftype_e type;
    int required;
    int nullable;               /* JSON null accepted (means "clear") */
    apr_int64_t min;
    apr_int64_t max;
    const char *const *values;  /* SVC_FT_ENUM choices, NULL ended */
    const char *description;
};

#define SVC_FIELD_END { .name = NULL }

/*
 * Parses a request body strictly: an object at the top level, duplicate
 * keys, NUL characters and invalid UTF-8 refused, nesting bounded. On
 * failure *perr says what is wrong in words a client can act on.
 * The value is bound to p.
 */
apr_status_t svc_json_parse_body(json_t **pobj, const char *buf, apr_size_t len,
                                 apr_pool_t *p, const char **perr);

/*
 * Checks an object against a schema: unknown fields, missing required
 * fields, wrong types and out-of-range values each become one entry of
 * *perrors (an array of {field,code,message}, bound to p). Returns
 * APR_SUCCESS when there is nothing to report.
 */
apr_status_t svc_json_check(const json_t *obj, const svc_field_t *schema,
                            apr_pool_t *p, json_t **perrors);

/*
 * The size in bytes of the largest body a schema accepts, written the
 * longest way a JSON encoder may write it (every character of a string as
 * a \uXXXX escape, a surrogate pair beyond the BMP: 12 bytes a character),
 * with room for indentation. Limits in a schema count characters after
 * decoding, so a body cap below this would refuse valid text for the way
 * it was encoded. 0 when a field has no bound (a free-form object).
 */
apr_size_t svc_json_body_max(const svc_field_t *schema);

/* The JSON Schema (draft 2020-12, as OpenAPI 3.1 uses) of a body schema. */
json_t *svc_json_schema_of(const svc_field_t *schema);

/* Getters for validated bodies: NULL / dflt when absent or null. */
const char *svc_json_str(const json_t *obj, const char *key);
long long svc_json_int(const json_t *obj, const char *key, long long dflt);

/* Serializes compactly into pool memory. */
char *svc_json_dump(apr_pool_t *p, const json_t *v);

/* The slug rule: lowercase [a-z0-9-], 1-63, no dash at either end. */
int svc_slug_valid(const char *s);

/* 1 to max characters of printable ASCII without spaces (a token, a login,
 * a header word); 0 for NULL. */
int svc_word_valid(const char *s, apr_size_t max);

/* A plausible email address: one @, no spaces or controls, at most 254 bytes. */
int svc_email_valid(const char *s);

/*
 * An RFC 3339 date-time ("2026-11-25T21:54:14Z", "...14.250+01:00"), with
 * every field range-checked (days per month and leap years included),
 * years 1 to 9999 as written, and any offset RFC 3339 allows (-23:59 to
 * +23:59). *pepoch gets the whole seconds since 1970 in UTC, floored (may
 * be NULL). APR_EINVAL otherwise. Hand PostgreSQL the normalised form
 * (svc_format_rfc3339_usec), never the text: it refuses offsets beyond
 * 15:59, and the offset can move the instant out of years 1 to 9999.
 */
apr_status_t svc_parse_rfc3339(const char *s, apr_int64_t *pepoch);

/* The same as microseconds since 1970 in UTC (*pt, may be NULL), the
 * fraction kept to the microsecond (further digits dropped). */
apr_status_t svc_parse_rfc3339_usec(const char *s, apr_time_t *pt);

/*
 * The reverse: apr_time_t (microseconds since 1970) as "YYYY-MM-DDTHH:MM:SSZ",
 * the seconds truncated, into buf (at least SVC_RFC3339_LEN + 1 bytes).
 * APR_EINVAL for a year outside 1 to 9999.
 */
#define SVC_RFC3339_LEN 20
apr_status_t svc_format_rfc3339(char *buf, apr_time_t t);

/* The same to the microsecond, "YYYY-MM-DDTHH:MM:SS.ffffffZ", into buf (at
 * least SVC_RFC3339_USEC_LEN + 1 bytes); APR_EINVAL outside years 1 to 9999. */
#define SVC_RFC3339_USEC_LEN 27
apr_status_t svc_format_rfc3339_usec(char *buf, apr_time_t t);

/*
 * JSON text written straight into pool memory, for documents built from
 * database rows (svc_page.h), where a jansson tree would be built only to be
 * dumped. Strings are escaped as PostgreSQL's json functions escape them
 * (jansson differs only in writing \u001F where they write \u001f); they
 * must be UTF-8 (PostgreSQL's, in a UTF8 database, always are).
 */
typedef struct {
    apr_pool_t *pool;
    char *data;
    apr_size_t len;
    apr_size_t cap;
} svc_jbuf_t;

void svc_jbuf_init(svc_jbuf_t *b, apr_pool_t *p, apr_size_t size_hint);
/* Bytes as they are (punctuation, keys we wrote, JSON we trust). */
void svc_jbuf_raw(svc_jbuf_t *b, const char *s, apr_size_t n);
/* A JSON string; NULL writes null. */
void svc_jbuf_string(svc_jbuf_t *b, const char *s);
/* The text so far, NUL-terminated; *plen (may be NULL) gets its length. */
char *svc_jbuf_text(svc_jbuf_t *b, apr_size_t *plen);

/* Full-string decimal parse into [min, max]; APR_EINVAL otherwise. */
apr_status_t svc_parse_int(const char *s, long long min, long long max, long long *pval);

#endif /* SVC_JSON_H */
