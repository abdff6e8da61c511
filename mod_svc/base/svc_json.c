/*
 * svc_json.c: strict parsing of request bodies and the body schemas.
 */
#include "svc_json.h"
#include "svc_redact.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static apr_status_t json_cleanup(void *data)
{
    json_decref((json_t *)data);
    return APR_SUCCESS;
}

json_t *svc_json_pool(apr_pool_t *p, json_t *v)
{
    if (v) {
        apr_pool_cleanup_register(p, v, json_cleanup, apr_pool_cleanup_null);
    }
    return v;
}

apr_status_t svc_json_parse_body(json_t **pobj, const char *buf, apr_size_t len,
                                 apr_pool_t *p, const char **perr)
{
    json_error_t jerr;
    json_t *v;

    *pobj = NULL;
    if (!buf || len == 0) {
        *perr = "The request body is empty; a JSON object is expected.";
        return APR_EINVAL;
    }
    /*
     * jansson refuses NUL (\u0000) unless asked, invalid UTF-8 always,
     * integers beyond int64 always, and nesting deeper than 2048; we add
     * duplicate keys, and take any top-level value so that a bare scalar
     * gets a message of its own rather than a parser's.
     */
    v = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!v) {
        /*
         * jansson's text quotes the body near the error, cut at any byte:
         * half a UTF-8 sequence, or bytes that never were UTF-8. Only
         * printable ASCII of it goes into the message, which must be
         * valid UTF-8 for the problem document to carry it.
         */
        const char *text = svc_printable(p, jerr.text, sizeof(jerr.text));

        switch (json_error_code(&jerr)) {
        case json_error_duplicate_key:
            *perr = apr_psprintf(p, "The body repeats a key: %s", text);
            break;
        case json_error_invalid_utf8:
            *perr = "The body is not valid UTF-8.";
            break;
        case json_error_null_character:
        case json_error_null_byte_in_key:
            *perr = "The body contains a NUL character, which is not accepted.";
            break;
        case json_error_numeric_overflow:
            *perr = "The body contains a number too large to represent.";
            break;
        case json_error_stack_overflow:
            *perr = "The body is nested too deeply.";
            break;
        default:
            *perr = apr_psprintf(p, "The body is not valid JSON: %s (line %d, column %d).",
                                 text, jerr.line, jerr.column);
            break;
        }
        return APR_EINVAL;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        *perr = "The body must be a JSON object.";
        return APR_EINVAL;
    }
    *pobj = svc_json_pool(p, v);
    return APR_SUCCESS;
}

int svc_slug_valid(const char *s)
{
    apr_size_t n = s ? strlen(s) : 0;
    apr_size_t i;

    if (n < 1 || n > 63 || s[0] == '-' || s[n - 1] == '-') {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-')) {
            return 0;
        }
    }
    return 1;
}

int svc_word_valid(const char *s, apr_size_t max)
{
    apr_size_t n = 0;

    for (; s && *s; s++, n++) {
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f || n == max) {
            return 0;
        }
    }
    return n > 0;
}

int svc_email_valid(const char *s)
{
    const char *at = strchr(s, '@');
    apr_size_t n = strlen(s);
    apr_size_t i;

    if (n < 3 || n > 254 || !at || at == s || strchr(at + 1, '@') || !at[1]) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c == 0x7f || c == '<' || c == '>' || c == ',' || c == ';'
            || c == '"' || c == '\\') {
            return 0;
        }
    }
    return 1;
}

/* Characters, not bytes: jansson has already proven the UTF-8 valid. */
static apr_size_t utf8_chars(const char *s)
{
    apr_size_t n = 0;

    for (; *s; s++) {
        if (((unsigned char)*s & 0xC0) != 0x80) {
            n++;
        }
    }
    return n;
}

/* No control characters in one-line strings: they end up in headers and logs. */
static int has_control(const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f) {
            return 1;
        }
    }
    return 0;
}

static void add_error(json_t *errors, const char *field, const char *code,
                      const char *message)
{
    json_array_append_new(errors, json_pack("{s:s,s:s,s:s}", "field", field,
                                            "code", code, "message", message));
}

static const svc_field_t *find_field(const svc_field_t *schema, const char *name)
{
    for (; schema && schema->name; schema++) {
        if (strcmp(schema->name, name) == 0) {
            return schema;
        }
    }
    return NULL;
}

static const char *type_word(svc_ftype_e t)
{
    switch (t) {
    case SVC_FT_INT:
        return "an integer";
    case SVC_FT_BOOL:
        return "a boolean";
    case SVC_FT_OBJECT:
        return "an object";
    case SVC_FT_INTS:
        return "a list of integers";
    default:
        return "a string";
    }
}

static const char *join_values(apr_pool_t *p, const char *const *values)
{
    const char *out = "";
    const char *const *e;

    for (e = values; e && *e; e++) {
        out = apr_pstrcat(p, out, e == values ? "" : ", ", *e, NULL);
    }
    return out;
}

static void check_field(const svc_field_t *f, const json_t *v, apr_pool_t *p,
                        json_t *errors)
{
    const char *s;

    if (json_is_null(v)) {
        if (!f->nullable) {
            add_error(errors, f->name, "invalid_type",
                      apr_psprintf(p, "%s must be %s, not null.", f->name, type_word(f->type)));
        }
        return;
    }
    switch (f->type) {
    case SVC_FT_INT: {
        json_int_t n;
        if (!json_is_integer(v)) {
            add_error(errors, f->name, "invalid_type",
                      apr_psprintf(p, "%s must be an integer.", f->name));
            return;
        }
        n = json_integer_value(v);
        if (n < f->min || n > f->max) {
            add_error(errors, f->name, "out_of_range",
                      apr_psprintf(p, "%s must be between %" APR_INT64_T_FMT
                                   " and %" APR_INT64_T_FMT ".", f->name, f->min, f->max));
        }
        return;
    }
    case SVC_FT_BOOL:
        if (!json_is_boolean(v)) {
            add_error(errors, f->name, "invalid_type",
                      apr_psprintf(p, "%s must be true or false.", f->name));
        }
        return;
    case SVC_FT_OBJECT:
        if (!json_is_object(v)) {
            add_error(errors, f->name, "invalid_type",
                      apr_psprintf(p, "%s must be an object.", f->name));
        }
        return;
    case SVC_FT_INTS: {
        size_t i;
        json_t *e;
        if (!json_is_array(v) || json_array_size(v) > SVC_JSON_MAX_INTS) {
            add_error(errors, f->name, "invalid_type",
                      apr_psprintf(p, "%s must be a list of at most %d integers.", f->name,
                                   SVC_JSON_MAX_INTS));
            return;
        }
        json_array_foreach(v, i, e) {
            if (!json_is_integer(e) || json_integer_value(e) < f->min
                || json_integer_value(e) > f->max) {
                add_error(errors, f->name, "out_of_range",
                          apr_psprintf(p, "%s must hold integers between %" APR_INT64_T_FMT
                                       " and %" APR_INT64_T_FMT ".", f->name, f->min, f->max));
                return;
            }
        }
        return;
    }
    default:
        break;
    }
    if (!json_is_string(v)) {
        add_error(errors, f->name, "invalid_type",
                  apr_psprintf(p, "%s must be a string.", f->name));
        return;
    }
    s = json_string_value(v);
    switch (f->type) {
    case SVC_FT_STRING:
    case SVC_FT_TEXT: {
        apr_size_t n = utf8_chars(s);
        if (f->type == SVC_FT_STRING && has_control(s)) {
            add_error(errors, f->name, "invalid_value",
                      apr_psprintf(p, "%s must not contain control characters.", f->name));
        }
        else if ((apr_int64_t)n < f->min || (apr_int64_t)n > f->max) {
            add_error(errors, f->name, "invalid_length",
                      apr_psprintf(p, "%s must be %" APR_INT64_T_FMT " to %" APR_INT64_T_FMT
                                   " characters long.", f->name, f->min, f->max));
        }
        return;
    }
    case SVC_FT_ENUM: {
        const char *const *e;
        for (e = f->values; e && *e; e++) {
            if (strcmp(*e, s) == 0) {
                return;
            }
        }
        add_error(errors, f->name, "invalid_value",
                  apr_psprintf(p, "%s must be one of: %s.", f->name,
                               join_values(p, f->values)));
        return;
    }
    case SVC_FT_SLUG:
        if (!svc_slug_valid(s)) {
            add_error(errors, f->name, "invalid_slug",
                      apr_psprintf(p, "%s must be 1 to 63 characters of a-z, 0-9 and '-', "
                                   "not starting or ending with '-'.", f->name));
        }
        return;
    case SVC_FT_EMAIL:
        if (!svc_email_valid(s)) {
            add_error(errors, f->name, "invalid_email",
                      apr_psprintf(p, "%s must be an email address.", f->name));
        }
        return;
    case SVC_FT_ID: {
        const char *prefix = f->values ? f->values[0] : "";
        apr_size_t pl = strlen(prefix), i, n = strlen(s);
        int ok = n > pl && n <= 64 && strncmp(s, prefix, pl) == 0;
        for (i = pl; ok && i < n; i++) {
            ok = isalnum((unsigned char)s[i]) != 0;
        }
        if (!ok) {
            add_error(errors, f->name, "invalid_id",
                      apr_psprintf(p, "%s must be an id starting with %s.", f->name, prefix));
        }
        return;
    }
    default:
        return;
    }
}

apr_status_t svc_json_check(const json_t *obj, const svc_field_t *schema,
                            apr_pool_t *p, json_t **perrors)
{
    json_t *errors = json_array();
    const svc_field_t *f;
    const char *key;
    json_t *v;

    /* Unknown fields first: a typo must never silently do nothing. */
    json_object_foreach((json_t *)obj, key, v) {
        f = find_field(schema, key);
        if (!f) {
            add_error(errors, key, "unknown_field",
                      apr_psprintf(p, "%s is not a field of this request.", key));
            continue;
        }
        check_field(f, v, p, errors);
    }
    for (f = schema; f && f->name; f++) {
        if (f->required && !json_object_get(obj, f->name)) {
            add_error(errors, f->name, "required",
                      apr_psprintf(p, "%s is required.", f->name));
        }
    }
    if (json_array_size(errors) == 0) {
        json_decref(errors);
        *perrors = NULL;
        return APR_SUCCESS;
    }
    *perrors = svc_json_pool(p, errors);
    return APR_EINVAL;
}

json_t *svc_json_schema_of(const svc_field_t *schema)
{
    json_t *props = json_object();
    json_t *required = json_array();
    json_t *out;
    const svc_field_t *f;

    for (f = schema; f && f->name; f++) {
        json_t *s = json_object();
        const char *type = "string";

        switch (f->type) {
        case SVC_FT_INT:
            type = "integer";
            json_object_set_new(s, "minimum", json_integer(f->min));
            json_object_set_new(s, "maximum", json_integer(f->max));
            break;
        case SVC_FT_BOOL:
            type = "boolean";
            break;
        case SVC_FT_OBJECT:
            /* Free-form: its members are the handler's to check (its
             * description says which); said open, so that a generated
             * client may send them (an object without properties is typed
             * as one that has none). */
            type = "object";
            json_object_set_new(s, "additionalProperties", json_true());
            break;
        case SVC_FT_INTS:
            type = "array";
            json_object_set_new(s, "items", json_pack("{s:s,s:I,s:I}", "type", "integer",
                                                      "minimum", (json_int_t)f->min,
                                                      "maximum", (json_int_t)f->max));
            json_object_set_new(s, "maxItems", json_integer(SVC_JSON_MAX_INTS));
            break;
        case SVC_FT_STRING:
        case SVC_FT_TEXT:
            json_object_set_new(s, "minLength", json_integer(f->min));
            json_object_set_new(s, "maxLength", json_integer(f->max));
            break;
        case SVC_FT_ENUM: {
            json_t *e = json_array();
            const char *const *v;
            for (v = f->values; v && *v; v++) {
                json_array_append_new(e, json_string(*v));
            }
            json_object_set_new(s, "enum", e);
            break;
        }
        case SVC_FT_SLUG:
            json_object_set_new(s, "pattern",
                                json_string("^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$"));
            break;
        case SVC_FT_EMAIL:
            json_object_set_new(s, "format", json_string("email"));
            json_object_set_new(s, "maxLength", json_integer(254));
            break;
        case SVC_FT_ID:
            if (f->values) {
                json_object_set_new(s, "pattern",
                                    json_pack("s++", "^", f->values[0], "[A-Za-z0-9]+$"));
            }
            break;
        }
        if (f->nullable) {
            json_object_set_new(s, "type", json_pack("[ss]", type, "null"));
        }
        else {
            json_object_set_new(s, "type", json_string(type));
        }
        if (f->description) {
            json_object_set_new(s, "description", json_string(f->description));
        }
        json_object_set_new(props, f->name, s);
        if (f->required) {
            json_array_append_new(required, json_string(f->name));
        }
    }
    out = json_pack("{s:s,s:o,s:b}", "type", "object", "properties", props,
                    "additionalProperties", 0);
    if (json_array_size(required)) {
        json_object_set_new(out, "required", required);
    }
    else {
        json_decref(required);
    }
    return out;
}

/* The longest a string of n characters (or n UTF-8 bytes) can be written. */
#define ESCAPED_CHARS(n) (2 + 12 * (apr_size_t)(n))
#define ESCAPED_BYTES(n) (2 + 6 * (apr_size_t)(n))

apr_size_t svc_json_body_max(const svc_field_t *schema)
{
    /* Braces, and room for an encoder's indentation and newlines. */
    apr_size_t total = 1024;
    const svc_field_t *f;

    for (f = schema; f && f->name; f++) {
        apr_size_t value = 0;
        const char *const *e;

        switch (f->type) {
        case SVC_FT_STRING:
        case SVC_FT_TEXT:
            /* max counts characters: 12 bytes each as a surrogate pair. */
            value = ESCAPED_CHARS(f->max > 0 ? f->max : 0);
            break;
        case SVC_FT_INT:
            value = 21;
            break;
        case SVC_FT_INTS:
            /* Each integer, its comma and some whitespace; the brackets. */
            value = 2 + SVC_JSON_MAX_INTS * (21 + 1 + 8);
            break;
        case SVC_FT_BOOL:
            value = 5;
            break;
        case SVC_FT_ENUM:
            for (e = f->values; e && *e; e++) {
                if (ESCAPED_BYTES(strlen(*e)) > value) {
                    value = ESCAPED_BYTES(strlen(*e));
                }
            }
            break;
        case SVC_FT_SLUG:
            value = ESCAPED_BYTES(63);
            break;
        case SVC_FT_EMAIL:
            /* 254 bytes; no UTF-8 byte takes more than 6 escaped. */
            value = ESCAPED_BYTES(254);
            break;
        case SVC_FT_ID:
            value = ESCAPED_BYTES(64);
            break;
        default:
            /* A free-form object has no size the schema can tell. */
            return 0;
        }
        /* The key (escaped too), colon, comma and some whitespace. */
        total += ESCAPED_BYTES(strlen(f->name)) + 2 + 32 + value;
    }
    return total;
}

const char *svc_json_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

long long svc_json_int(const json_t *obj, const char *key, long long dflt)
{
    json_t *v = json_object_get(obj, key);

    return json_is_integer(v) ? (long long)json_integer_value(v) : dflt;
}


char *svc_json_dump(apr_pool_t *p, const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    char *out;

    if (!s) {
        return apr_pstrdup(p, "null");
    }
    out = apr_pstrdup(p, s);
    free(s);
    return out;
}

apr_status_t svc_parse_int(const char *s, long long min, long long max, long long *pval)
{
    char *end;
    long long v;

    if (!s || !*s || !(isdigit((unsigned char)*s) || *s == '-')) {
        return APR_EINVAL;
    }
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max) {
        return APR_EINVAL;
    }
    *pval = v;
    return APR_SUCCESS;
}

/* n decimal digits at s, or -1. */
static int digits(const char *s, int n)
{
    int v = 0, i;

    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm). */
static apr_int64_t days_from_civil(int y, int m, int d)
{
    apr_int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/*
 * The one RFC 3339 reader: the instant in UTC as whole seconds since 1970
 * (floored) and the microseconds within that second (digits of the
 * fraction beyond the sixth are dropped).
 */
static apr_status_t parse_rfc3339(const char *s, apr_int64_t *psecs, apr_int64_t *pusec)
{
    static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    int y, mo, d, h, mi, sec, off = 0, leap, dim;
    apr_int64_t usec = 0;
    const char *p;

    if (!s || strlen(s) < 20 || strlen(s) > 40) {
        return APR_EINVAL;
    }
    y = digits(s, 4);
    mo = digits(s + 5, 2);
    d = digits(s + 8, 2);
    h = digits(s + 11, 2);
    mi = digits(s + 14, 2);
    sec = digits(s + 17, 2);
    if (y < 1 || s[4] != '-' || mo < 1 || mo > 12 || s[7] != '-' || d < 1
        || (s[10] != 'T' && s[10] != 't') || h < 0 || h > 23 || s[13] != ':'
        || mi < 0 || mi > 59 || s[16] != ':' || sec < 0 || sec > 59) {
        return APR_EINVAL;
    }
    leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    dim = mdays[mo - 1] + (mo == 2 && leap);
    if (d > dim) {
        return APR_EINVAL;
    }
    p = s + 19;
    if (*p == '.') {
        int n = 0;
        for (p++; *p >= '0' && *p <= '9'; p++) {
            if (n < 6) {
                usec = usec * 10 + (*p - '0');
            }
            n++;
        }
        if (n < 1 || n > 9) {
            return APR_EINVAL;
        }
        for (; n < 6; n++) {
            usec *= 10;
        }
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    }
    else if (*p == '+' || *p == '-') {
        int oh = digits(p + 1, 2), om;
        /*
         * Each check guards the next read: nothing past the NUL is looked
         * at. RFC 3339 allows any offset of hours 00-23 (PostgreSQL only
         * up to 15:59, which is why the offset is applied here).
         */
        if (oh < 0 || oh > 23 || p[3] != ':' || (om = digits(p + 4, 2)) < 0 || om > 59) {
            return APR_EINVAL;
        }
        off = (oh * 60 + om) * 60 * (*p == '-' ? -1 : 1);
        p += 6;
    }
    else {
        return APR_EINVAL;
    }
    if (*p) {
        return APR_EINVAL;
    }
    *psecs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
    *pusec = usec;
    return APR_SUCCESS;
}

apr_status_t svc_parse_rfc3339(const char *s, apr_int64_t *pepoch)
{
    apr_int64_t secs, usec;
    apr_status_t rv = parse_rfc3339(s, &secs, &usec);

    if (rv == APR_SUCCESS && pepoch) {
        *pepoch = secs;
    }
    return rv;
}

apr_status_t svc_parse_rfc3339_usec(const char *s, apr_time_t *pt)
{
    apr_int64_t secs, usec;
    apr_status_t rv = parse_rfc3339(s, &secs, &usec);

    if (rv == APR_SUCCESS && pt) {
        *pt = secs * APR_USEC_PER_SEC + usec;
    }
    return rv;
}

/* Howard Hinnant's civil_from_days: proleptic Gregorian, day 0 = 1970-01-01. */
static void civil_from_days(apr_int64_t z, int *py, int *pm, int *pd)
{
    apr_int64_t era, doe, yoe, doy, mp, y;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    y = yoe + era * 400;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *pd = (int)(doy - (153 * mp + 2) / 5 + 1);
    *pm = (int)(mp < 10 ? mp + 3 : mp - 9);
    *py = (int)(y + (*pm <= 2));
}

apr_status_t svc_format_rfc3339(char *buf, apr_time_t t)
{
    /* 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59.999999Z, checked first so
     * that nothing below can overflow. */
    static const apr_int64_t lo = APR_INT64_C(-62135596800) * APR_USEC_PER_SEC;
    static const apr_int64_t hi = APR_INT64_C(253402300800) * APR_USEC_PER_SEC - 1;
    apr_int64_t secs, days;
    int rem, y, m, d;

    if (t < lo || t > hi) {
        return APR_EINVAL;
    }
    /* Floor, not truncation toward zero: 1969-12-31T23:59:59.5 is :59. */
    secs = t >= 0 ? t / APR_USEC_PER_SEC : -((-t - 1) / APR_USEC_PER_SEC) - 1;
    days = secs >= 0 ? secs / 86400 : -((-secs - 1) / 86400) - 1;
    rem = (int)(secs - days * 86400);
    civil_from_days(days, &y, &m, &d);
    apr_snprintf(buf, SVC_RFC3339_LEN + 1, "%04d-%02d-%02dT%02d:%02d:%02dZ", y, m, d,
                 rem / 3600, rem / 60 % 60, rem % 60);
    return APR_SUCCESS;
}

apr_status_t svc_format_rfc3339_usec(char *buf, apr_time_t t)
{
    char secs[SVC_RFC3339_LEN + 1];
    apr_int64_t usec;

    if (svc_format_rfc3339(secs, t) != APR_SUCCESS) {
        return APR_EINVAL;
    }
    /* The microseconds within the (floored) second, 0 to 999999. */
    usec = t % APR_USEC_PER_SEC;
    if (usec < 0) {
        usec += APR_USEC_PER_SEC;
    }
    apr_snprintf(buf, SVC_RFC3339_USEC_LEN + 1, "%.19s.%06" APR_INT64_T_FMT "Z", secs, usec);
    return APR_SUCCESS;
}

void svc_jbuf_init(svc_jbuf_t *b, apr_pool_t *p, apr_size_t size_hint)
{
    b->pool = p;
    b->cap = size_hint > 64 ? size_hint : 64;
    b->data = apr_palloc(p, b->cap);
    b->len = 0;
}

/* Room for n more bytes and the final NUL. */
static void jbuf_reserve(svc_jbuf_t *b, apr_size_t n)
{
    if (b->len + n + 1 > b->cap) {
        apr_size_t cap = b->cap * 2;
        char *data;

        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        data = apr_palloc(b->pool, cap);
        memcpy(data, b->data, b->len);
        b->data = data;
        b->cap = cap;
    }
}

void svc_jbuf_raw(svc_jbuf_t *b, const char *s, apr_size_t n)
{
    jbuf_reserve(b, n);
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

void svc_jbuf_string(svc_jbuf_t *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const char *run;

    if (!s) {
        svc_jbuf_raw(b, "null", 4);
        return;
    }
    svc_jbuf_raw(b, "\"", 1);
    for (run = s; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[6];
        apr_size_t n = 2;

        if (c >= 0x20 && c != '"' && c != '\\') {
            continue;
        }
        svc_jbuf_raw(b, run, (apr_size_t)(s - run));
        run = s + 1;
        esc[0] = '\\';
        switch (c) {
        case '"':  esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 0xf];
            n = 6;
            break;
        }
        svc_jbuf_raw(b, esc, n);
    }
    svc_jbuf_raw(b, run, (apr_size_t)(s - run));
    svc_jbuf_raw(b, "\"", 1);
}

char *svc_jbuf_text(svc_jbuf_t *b, apr_size_t *plen)
{
    jbuf_reserve(b, 0);
    b->data[b->len] = '\0';
    if (plen) {
        *plen = b->len;
    }
    return b->data;
}
