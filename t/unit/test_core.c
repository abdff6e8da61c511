/*
 * test_core.c: unit tests of the core that need no database: strict JSON,
 * body schemas, encodings and MACs, token formats, JWTs, redaction, the
 * router, the OpenAPI document, secrets by reference, cursors and problem
 * documents.
 *
 * Every expectation is independent of the code under test: published
 * vectors (RFC 4648, RFC 4231, CRC-32/IEEE), values computed by hand or
 * with another implementation (Python's hashlib; noted where used), or
 * tokens the test builds byte by byte itself.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"
#include "svc_areas.h"


#include "svc_config.h"
#include "svc_crypto.h"
#include "svc_ctx.h"
#include "svc_json.h"
#include "svc_jwt.h"
#include "svc_openapi.h"
#include "svc_page.h"
#include "svc_redact.h"
#include "svc_route.h"
#include "svc_tokens.h"

#include <apr_hash.h>
#include <apr_lib.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------------- */
/* Small helpers of the tests' own                                         */

static const char *hexof(apr_pool_t *p, const unsigned char *d, apr_size_t n)
{
    static const char digits[] = "0123456789abcdef";
    char *out = apr_palloc(p, n * 2 + 1);
    apr_size_t i;

    for (i = 0; i < n; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[2 * n] = '\0';
    return out;
}

/* A string of n copies of c, in pool memory. */
static char *repeat(apr_pool_t *p, char c, apr_size_t n)
{
    char *s = apr_palloc(p, n + 1);

    memset(s, c, n);
    s[n] = '\0';
    return s;
}

/* s, n times over. */
static char *repeat_str(apr_pool_t *p, const char *s, apr_size_t n)
{
    apr_size_t len = strlen(s), i;
    char *out = apr_palloc(p, len * n + 1);

    for (i = 0; i < n; i++) {
        memcpy(out + i * len, s, len);
    }
    out[len * n] = '\0';
    return out;
}

static int contains(const char *hay, const char *needle)
{
    return hay && needle && strstr(hay, needle) != NULL;
}

/* ---------------------------------------------------------------------- */
/* svc_json_parse_body                                                     */

static apr_status_t parse_n(apr_pool_t *p, const char *buf, apr_size_t len, json_t **pobj,
                            const char **perr)
{
    *perr = NULL;
    return svc_json_parse_body(pobj, buf, len, p, perr);
}

static apr_status_t parse(apr_pool_t *p, const char *buf, json_t **pobj, const char **perr)
{
    return parse_n(p, buf, strlen(buf), pobj, perr);
}

/* Asserts that buf is refused with a message containing `word`. */
#define CHECK_REFUSED(buf_, len_, word_)                                      \
    do {                                                                      \
        json_t *o_ = (json_t *)1;                                             \
        const char *e_ = NULL;                                                \
        SVC_CHECK_INT(parse_n(p, (buf_), (len_), &o_, &e_), APR_EINVAL);      \
        SVC_CHECK(o_ == NULL);                                                \
        if (!contains(e_, (word_))) {                                         \
            fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, \
                    __LINE__, e_ ? e_ : "(null)", (word_));                   \
            svc_test_failed_checks++;                                         \
        }                                                                     \
    } while (0)
#define CHECK_REFUSED_S(buf_, word_) CHECK_REFUSED((buf_), strlen(buf_), (word_))

SVC_TEST(json_parse_accepts_objects)
{
    json_t *o = NULL;
    const char *err;

    SVC_CHECK_INT(parse(p, "{}", &o, &err), APR_SUCCESS);
    SVC_CHECK(json_is_object(o) && json_object_size(o) == 0);
    SVC_CHECK_INT(parse(p, " {\"a\": [1, 2.5, \"x\", null, true, {\"b\": {}}]}\n", &o, &err),
                  APR_SUCCESS);
    SVC_CHECK(json_is_array(json_object_get(o, "a")));
    SVC_CHECK_INT(json_array_size(json_object_get(o, "a")), 6);
    /* Largest and smallest int64 are fine. */
    SVC_CHECK_INT(parse(p, "{\"max\":9223372036854775807,\"min\":-9223372036854775808}", &o,
                        &err), APR_SUCCESS);
    SVC_CHECK(json_integer_value(json_object_get(o, "max")) == INT64_MAX);
    SVC_CHECK(json_integer_value(json_object_get(o, "min")) == INT64_MIN);
    /* Valid multi-byte UTF-8 (2, 3 and 4 bytes) and a valid escaped surrogate pair. */
    SVC_CHECK_INT(parse(p, "{\"s\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\\ud83d\\ude00\"}", &o,
                        &err), APR_SUCCESS);
    SVC_CHECK_STR(json_string_value(json_object_get(o, "s")),
                  "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf0\x9f\x98\x80");
    /* The same key in different objects is not a duplicate. */
    SVC_CHECK_INT(parse(p, "{\"a\":{\"x\":1},\"b\":{\"x\":2}}", &o, &err), APR_SUCCESS);
}

SVC_TEST(json_parse_refuses_duplicates_scalars_arrays)
{
    CHECK_REFUSED_S("{\"a\":1,\"a\":2}", "repeats a key");
    CHECK_REFUSED_S("{\"a\":{\"b\":1,\"b\":1}}", "repeats a key");
    /* Bare scalars and arrays at the top level. */
    CHECK_REFUSED_S("1", "JSON object");
    CHECK_REFUSED_S("\"s\"", "JSON object");
    CHECK_REFUSED_S("null", "JSON object");
    CHECK_REFUSED_S("true", "JSON object");
    CHECK_REFUSED_S("false", "JSON object");
    CHECK_REFUSED_S("-1.5", "JSON object");
    CHECK_REFUSED_S("[]", "JSON object");
    CHECK_REFUSED_S("[{\"a\":1}]", "JSON object");
}

SVC_TEST(json_parse_refuses_nul_and_bad_utf8)
{
    /* \u0000 escaped, in a value and in a key. */
    CHECK_REFUSED_S("{\"a\":\"x\\u0000y\"}", "NUL");
    CHECK_REFUSED_S("{\"a\\u0000b\":1}", "NUL");
    /* A raw NUL byte is not JSON at all. */
    CHECK_REFUSED("{\"a\":\"x\0y\"}", 11, "JSON");
    /* Invalid UTF-8: overlong '/', overlong 3-byte, lone continuation,
     * surrogate half U+D800 encoded in UTF-8, beyond U+10FFFF, 0xFF, a
     * truncated sequence; and one in a key. */
    CHECK_REFUSED_S("{\"a\":\"\xc0\xaf\"}", "UTF-8");
    CHECK_REFUSED_S("{\"a\":\"\xe0\x80\xaf\"}", "UTF-8");
    CHECK_REFUSED_S("{\"a\":\"\x80\"}", "UTF-8");
    CHECK_REFUSED_S("{\"a\":\"\xed\xa0\x80\"}", "UTF-8");
    CHECK_REFUSED_S("{\"a\":\"\xed\xbf\xbf\"}", "UTF-8");
    CHECK_REFUSED_S("{\"a\":\"\xf4\x90\x80\x80\"}", "UTF-8");
    CHECK_REFUSED_S("{\"a\":\"\xff\"}", "UTF-8");
    CHECK_REFUSED_S("{\"a\":\"\xe2\x82\"}", "UTF-8");
    CHECK_REFUSED_S("{\"\xc0\xaf\":1}", "UTF-8");
    /* A lone surrogate written as an escape is no character either. */
    CHECK_REFUSED_S("{\"a\":\"\\ud800\"}", "JSON");
    CHECK_REFUSED_S("{\"a\":\"\\udc00x\"}", "JSON");
}

/* {"a": followed by depth-1 arrays: `depth` nesting levels in all. */
static char *nested(apr_pool_t *p, int depth, apr_size_t *plen)
{
    char *b = apr_palloc(p, (apr_size_t)depth * 2 + 16);
    apr_size_t k;
    int i;

    memcpy(b, "{\"a\":", 5);
    k = 5;
    for (i = 0; i < depth - 1; i++) {
        b[k++] = '[';
    }
    for (i = 0; i < depth - 1; i++) {
        b[k++] = ']';
    }
    b[k++] = '}';
    b[k] = '\0';
    *plen = k;
    return b;
}

SVC_TEST(json_parse_nesting_boundary)
{
    /* jansson's limit (JSON_PARSER_MAX_DEPTH) is 2048 levels, the top-level
     * object included: 2048 is accepted, 2049 refused. */
    json_t *o;
    const char *err;
    apr_size_t n;
    char *b;
    int i;

    b = nested(p, 2000, &n);
    SVC_CHECK_INT(parse_n(p, b, n, &o, &err), APR_SUCCESS);
    b = nested(p, 2048, &n);
    SVC_CHECK_INT(parse_n(p, b, n, &o, &err), APR_SUCCESS);
    b = nested(p, 2049, &n);
    CHECK_REFUSED(b, n, "nested too deeply");
    b = nested(p, 100000, &n);
    CHECK_REFUSED(b, n, "nested too deeply");
    /* Objects count the same as arrays. */
    b = apr_palloc(p, 2049 * 6 + 2050 + 2);
    n = 0;
    for (i = 0; i < 2049; i++) {
        memcpy(b + n, "{\"a\":", 5);
        n += 5;
    }
    b[n++] = '1';
    for (i = 0; i < 2049; i++) {
        b[n++] = '}';
    }
    CHECK_REFUSED(b, n, "nested too deeply");
}

SVC_TEST(json_parse_refuses_numbers_garbage_empty)
{
    json_t *o = (json_t *)1;
    const char *err = NULL;

    CHECK_REFUSED_S("{\"a\":9223372036854775808}", "too large");
    CHECK_REFUSED_S("{\"a\":-9223372036854775809}", "too large");
    CHECK_REFUSED_S("{\"a\":123456789012345678901234567890}", "too large");
    CHECK_REFUSED_S("{\"a\":1e400}", "too large");
    CHECK_REFUSED_S("{\"a\":-1e400}", "too large");
    /* Trailing garbage, of every kind. */
    CHECK_REFUSED_S("{\"a\":1} x", "not valid JSON");
    CHECK_REFUSED_S("{\"a\":1}{}", "not valid JSON");
    CHECK_REFUSED_S("{\"a\":1},", "not valid JSON");
    CHECK_REFUSED_S("{\"a\":1", "not valid JSON");
    CHECK_REFUSED_S("{'a':1}", "not valid JSON");
    CHECK_REFUSED_S("{\"a\":01}", "not valid JSON");
    CHECK_REFUSED_S("{\"a\":NaN}", "not valid JSON");
    /* Empty, NULL and blank bodies. */
    SVC_CHECK_INT(svc_json_parse_body(&o, "", 0, p, &err), APR_EINVAL);
    SVC_CHECK(o == NULL);
    SVC_CHECK(contains(err, "empty"));
    o = (json_t *)1;
    err = NULL;
    SVC_CHECK_INT(svc_json_parse_body(&o, NULL, 0, p, &err), APR_EINVAL);
    SVC_CHECK(o == NULL);
    SVC_CHECK(contains(err, "empty"));
    CHECK_REFUSED_S("   ", "JSON");
}

SVC_TEST(json_parse_10mb_string)
{
    /* The size cap belongs to the HTTP layer: the parser copes. */
    const apr_size_t n = 10 * 1024 * 1024;
    char *b = apr_palloc(p, n + 16);
    const char *err;
    json_t *o;

    memcpy(b, "{\"s\":\"", 6);
    memset(b + 6, 'a', n);
    memcpy(b + 6 + n, "\"}", 2);
    SVC_CHECK_INT(parse_n(p, b, n + 8, &o, &err), APR_SUCCESS);
    SVC_CHECK_INT(json_string_length(json_object_get(o, "s")), n);
}

/* ---------------------------------------------------------------------- */
/* svc_json_check                                                          */

static const char *const colors[] = { "red", "green", NULL };
static const char *const prj_prefix[] = { "prj_", NULL };

static const svc_field_t test_schema[] = {
    { "name", SVC_FT_STRING, 1, 0, 2, 5, NULL, "a one-line name" },
    { "bio", SVC_FT_TEXT, 0, 0, 0, 8, NULL, NULL },
    { "count", SVC_FT_INT, 0, 0, 1, 100, NULL, NULL },
    { "flag", SVC_FT_BOOL, 0, 0, 0, 0, NULL, NULL },
    { "color", SVC_FT_ENUM, 0, 0, 0, 0, colors, NULL },
    { "slug", SVC_FT_SLUG, 0, 0, 0, 0, NULL, NULL },
    { "email", SVC_FT_EMAIL, 0, 0, 0, 0, NULL, NULL },
    { "ref", SVC_FT_ID, 0, 0, 0, 0, prj_prefix, NULL },
    { "meta", SVC_FT_OBJECT, 0, 0, 0, 0, NULL, NULL },
    { "note", SVC_FT_STRING, 0, 1, 0, 10, NULL, NULL },
    { "level", SVC_FT_INT, 0, 1, -5, 5, NULL, NULL },
    SVC_FIELD_END
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Runs svc_json_check on `text` and returns its errors as a sorted,
 * space-separated list of "field:code" ("" when there are none), after
 * checking the shape of every entry and that the status agrees.
 */
static const char *check_errors(apr_pool_t *p, const svc_field_t *schema, const char *text)
{
    json_error_t jerr;
    json_t *obj = json_loads(text, 0, &jerr);
    json_t *errors = (json_t *)1, *e;
    const char **items;
    const char *out = "";
    apr_status_t rv;
    size_t i, n;

    if (!obj) {
        fprintf(stderr, "test body does not parse: %s: %s\n", text, jerr.text);
        svc_test_failed_checks++;
        return "(unparsable)";
    }
    rv = svc_json_check(obj, schema, p, &errors);
    json_decref(obj);
    if (rv == APR_SUCCESS) {
        SVC_CHECK(errors == NULL);
        return "";
    }
    SVC_CHECK_INT(rv, APR_EINVAL);
    SVC_CHECK(json_is_array(errors) && json_array_size(errors) > 0);
    if (!json_is_array(errors)) {
        return "(no array)";
    }
    n = json_array_size(errors);
    items = apr_palloc(p, sizeof(*items) * (n ? n : 1));
    json_array_foreach(errors, i, e) {
        const char *f = json_string_value(json_object_get(e, "field"));
        const char *c = json_string_value(json_object_get(e, "code"));
        const char *m = json_string_value(json_object_get(e, "message"));
        SVC_CHECK(json_object_size(e) == 3);
        SVC_CHECK(f && c && m && *m);
        /* The message names the field, so a client can show it as is. */
        SVC_CHECK(contains(m, f));
        items[i] = apr_pstrcat(p, f ? f : "?", ":", c ? c : "?", NULL);
    }
    qsort(items, n, sizeof(*items), cmp_str);
    for (i = 0; i < n; i++) {
        out = apr_pstrcat(p, out, i ? " " : "", items[i], NULL);
    }
    return out;
}

#define CHECK_ERRS(text_, want_) SVC_CHECK_STR(check_errors(p, test_schema, (text_)), (want_))

SVC_TEST(json_check_valid_bodies)
{
    CHECK_ERRS("{\"name\":\"abc\"}", "");
    CHECK_ERRS("{\"name\":\"ab\",\"bio\":\"l1\\nl2\\tx\",\"count\":1,\"flag\":false,"
               "\"color\":\"green\",\"slug\":\"a-b1\",\"email\":\"x@y.z\",\"ref\":\"prj_Ab12\","
               "\"meta\":{\"k\":[1]},\"note\":null,\"level\":null}", "");
    CHECK_ERRS("{\"name\":\"abcde\",\"count\":100,\"flag\":true,\"color\":\"red\",\"note\":\"x\","
               "\"level\":-5}", "");
    /* Length counts characters, not bytes: five 2-byte characters. */
    CHECK_ERRS("{\"name\":\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"}", "");
    /* Boundaries of ids: 64 characters in all is the most. */
    CHECK_ERRS(apr_pstrcat(p, "{\"name\":\"abc\",\"ref\":\"prj_", repeat(p, 'A', 60), "\"}", NULL),
               "");
    CHECK_ERRS(apr_pstrcat(p, "{\"name\":\"abc\",\"slug\":\"", repeat(p, 'a', 63), "\"}", NULL),
               "");
}

/*
 * The largest valid body of a schema, in its longest encoding: a body
 * built that way (every character a surrogate pair of \u escapes, every
 * field at its maximum, pretty-printed) fits, and it is valid.
 */
SVC_TEST(json_body_max_fits_the_longest_encoding)
{
    static const char *const roles[] = { "viewer", "maintainer", NULL };
    static const svc_field_t schema[] = {
        { "name", SVC_FT_STRING, 1, 0, 1, 200, NULL, NULL },
        { "description", SVC_FT_TEXT, 0, 0, 0, 2000, NULL, NULL },
        { "role", SVC_FT_ENUM, 0, 0, 0, 0, roles, NULL },
        { "slug", SVC_FT_SLUG, 0, 0, 0, 0, NULL, NULL },
        { "days", SVC_FT_INT, 0, 1, 1, 365, NULL, NULL },
        SVC_FIELD_END
    };
    static const svc_field_t with_object[] = {
        { "name", SVC_FT_STRING, 1, 0, 1, 10, NULL, NULL },
        { "meta", SVC_FT_OBJECT, 0, 0, 0, 0, NULL, NULL },
        SVC_FIELD_END
    };
    const char *pair = "\\uD83D\\uDE00", *body, *desc, *name;
    json_t *obj, *errors;
    const char *err;

    desc = repeat_str(p, pair, 2000);
    name = repeat_str(p, pair, 200);
    body = apr_pstrcat(p, "{\n    \"name\": \"", name, "\",\n    \"description\": \"", desc,
                       "\",\n    \"role\": \"maintainer\",\n    \"slug\": \"",
                       repeat(p, 'a', 63), "\",\n    \"days\": 365\n}\n", NULL);
    SVC_CHECK(strlen(body) > 24000);
    SVC_CHECK(strlen(body) <= svc_json_body_max(schema));
    SVC_CHECK(svc_json_parse_body(&obj, body, strlen(body), p, &err) == APR_SUCCESS);
    SVC_CHECK(svc_json_check(obj, schema, p, &errors) == APR_SUCCESS);
    /* One more character is a validation error, not a size one. */
    body = apr_pstrcat(p, "{\"name\":\"x\",\"description\":\"", desc, pair, "\"}", NULL);
    SVC_CHECK(strlen(body) <= svc_json_body_max(schema));
    SVC_CHECK(svc_json_parse_body(&obj, body, strlen(body), p, &err) == APR_SUCCESS);
    SVC_CHECK(svc_json_check(obj, schema, p, &errors) == APR_EINVAL);
    /* A free-form object has no bound the schema can tell. */
    SVC_CHECK_INT(svc_json_body_max(with_object), 0);
    SVC_CHECK(svc_json_body_max(NULL) > 0);
}

SVC_TEST(json_check_unknown_and_missing)
{
    CHECK_ERRS("{}", "name:required");
    CHECK_ERRS("{\"name\":\"abc\",\"nmae\":\"x\"}", "nmae:unknown_field");
    CHECK_ERRS("{\"nmae\":\"abc\"}", "name:required nmae:unknown_field");
    CHECK_ERRS("{\"name\":\"abc\",\"Name\":\"abc\",\"\":1}", ":unknown_field Name:unknown_field");
    /* A required field present but null is a type error, not a missing one. */
    CHECK_ERRS("{\"name\":null}", "name:invalid_type");
}

SVC_TEST(json_check_types)
{
    /* string where an int is expected, floats, booleans */
    CHECK_ERRS("{\"name\":\"abc\",\"count\":\"5\"}", "count:invalid_type");
    CHECK_ERRS("{\"name\":\"abc\",\"count\":5.0}", "count:invalid_type");
    CHECK_ERRS("{\"name\":\"abc\",\"count\":5.5}", "count:invalid_type");
    CHECK_ERRS("{\"name\":\"abc\",\"count\":true}", "count:invalid_type");
    CHECK_ERRS("{\"name\":\"abc\",\"count\":null}", "count:invalid_type");
    /* int (and other things) where a bool is expected */
    CHECK_ERRS("{\"name\":\"abc\",\"flag\":1}", "flag:invalid_type");
    CHECK_ERRS("{\"name\":\"abc\",\"flag\":0}", "flag:invalid_type");
    CHECK_ERRS("{\"name\":\"abc\",\"flag\":\"true\"}", "flag:invalid_type");
    /* object, number, bool, array where a string is expected */
    CHECK_ERRS("{\"name\":{}}", "name:invalid_type");
    CHECK_ERRS("{\"name\":12}", "name:invalid_type");
    CHECK_ERRS("{\"name\":true}", "name:invalid_type");
    CHECK_ERRS("{\"name\":[\"abc\"]}", "name:invalid_type");
    CHECK_ERRS("{\"name\":\"abc\",\"bio\":1}", "bio:invalid_type");
    CHECK_ERRS("{\"name\":\"abc\",\"color\":1}", "color:invalid_type");
    CHECK_ERRS("{\"name\":\"abc\",\"slug\":{}}", "slug:invalid_type");
    CHECK_ERRS("{\"name\":\"abc\",\"email\":[]}", "email:invalid_type");
    CHECK_ERRS("{\"name\":\"abc\",\"ref\":7}", "ref:invalid_type");
    CHECK_ERRS("{\"name\":\"abc\",\"note\":1}", "note:invalid_type");
    /* not an object */
    CHECK_ERRS("{\"name\":\"abc\",\"meta\":[]}", "meta:invalid_type");
    CHECK_ERRS("{\"name\":\"abc\",\"meta\":\"{}\"}", "meta:invalid_type");
    CHECK_ERRS("{\"name\":\"abc\",\"meta\":null}", "meta:invalid_type");
    /* Several at once: each reported, once. */
    CHECK_ERRS("{\"name\":1,\"count\":\"2\",\"flag\":1,\"extra\":true}",
               "count:invalid_type extra:unknown_field flag:invalid_type name:invalid_type");
}

SVC_TEST(json_check_values_and_ranges)
{
    CHECK_ERRS("{\"name\":\"a\"}", "name:invalid_length");
    CHECK_ERRS("{\"name\":\"abcdef\"}", "name:invalid_length");
    CHECK_ERRS("{\"name\":\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"}",
               "name:invalid_length");
    /* One-line strings refuse control characters; text takes newlines and tabs. */
    CHECK_ERRS("{\"name\":\"a\\tb\"}", "name:invalid_value");
    CHECK_ERRS("{\"name\":\"a\\nb\"}", "name:invalid_value");
    CHECK_ERRS("{\"name\":\"a\\u007fb\"}", "name:invalid_value");
    CHECK_ERRS("{\"name\":\"a\\u001bb\"}", "name:invalid_value");
    CHECK_ERRS("{\"name\":\"abc\",\"bio\":\"a\\nb\\tc\"}", "");
    CHECK_ERRS("{\"name\":\"abc\",\"bio\":\"123456789\"}", "bio:invalid_length");
    /* INT range, both ends, and int64 extremes. */
    CHECK_ERRS("{\"name\":\"abc\",\"count\":0}", "count:out_of_range");
    CHECK_ERRS("{\"name\":\"abc\",\"count\":101}", "count:out_of_range");
    CHECK_ERRS("{\"name\":\"abc\",\"count\":-1}", "count:out_of_range");
    CHECK_ERRS("{\"name\":\"abc\",\"count\":9223372036854775807}", "count:out_of_range");
    CHECK_ERRS("{\"name\":\"abc\",\"count\":-9223372036854775808}", "count:out_of_range");
    CHECK_ERRS("{\"name\":\"abc\",\"level\":-6}", "level:out_of_range");
    CHECK_ERRS("{\"name\":\"abc\",\"level\":6}", "level:out_of_range");
    /* ENUM is exact. */
    CHECK_ERRS("{\"name\":\"abc\",\"color\":\"blue\"}", "color:invalid_value");
    CHECK_ERRS("{\"name\":\"abc\",\"color\":\"RED\"}", "color:invalid_value");
    CHECK_ERRS("{\"name\":\"abc\",\"color\":\"\"}", "color:invalid_value");
    /* SLUG */
    CHECK_ERRS("{\"name\":\"abc\",\"slug\":\"Ab\"}", "slug:invalid_slug");
    CHECK_ERRS("{\"name\":\"abc\",\"slug\":\"-a\"}", "slug:invalid_slug");
    CHECK_ERRS("{\"name\":\"abc\",\"slug\":\"a_b\"}", "slug:invalid_slug");
    CHECK_ERRS("{\"name\":\"abc\",\"slug\":\"\"}", "slug:invalid_slug");
    CHECK_ERRS(apr_pstrcat(p, "{\"name\":\"abc\",\"slug\":\"", repeat(p, 'a', 64), "\"}", NULL),
               "slug:invalid_slug");
    /* EMAIL */
    CHECK_ERRS("{\"name\":\"abc\",\"email\":\"nope\"}", "email:invalid_email");
    CHECK_ERRS("{\"name\":\"abc\",\"email\":\"a b@c.d\"}", "email:invalid_email");
    CHECK_ERRS("{\"name\":\"abc\",\"email\":\"\"}", "email:invalid_email");
    /* ID: the prefix, then 1+ alphanumerics, 64 characters at most. */
    CHECK_ERRS("{\"name\":\"abc\",\"ref\":\"prj_\"}", "ref:invalid_id");
    CHECK_ERRS("{\"name\":\"abc\",\"ref\":\"org_abc\"}", "ref:invalid_id");
    CHECK_ERRS("{\"name\":\"abc\",\"ref\":\"prj_a-b\"}", "ref:invalid_id");
    CHECK_ERRS("{\"name\":\"abc\",\"ref\":\"prj_a b\"}", "ref:invalid_id");
    CHECK_ERRS("{\"name\":\"abc\",\"ref\":\"PRJ_abc\"}", "ref:invalid_id");
    CHECK_ERRS(apr_pstrcat(p, "{\"name\":\"abc\",\"ref\":\"prj_", repeat(p, 'A', 61), "\"}", NULL),
               "ref:invalid_id");
    /* Missing and wrong together. */
    CHECK_ERRS("{\"count\":0}", "count:out_of_range name:required");
}

SVC_TEST(slug_email_parse_int)
{
    long long v;

    SVC_CHECK(svc_slug_valid("a"));
    SVC_CHECK(svc_slug_valid("0"));
    SVC_CHECK(svc_slug_valid("a-b"));
    SVC_CHECK(svc_slug_valid("a--b"));
    SVC_CHECK(svc_slug_valid("acme-2024"));
    SVC_CHECK(svc_slug_valid(repeat(p, 'z', 63)));
    SVC_CHECK(!svc_slug_valid(repeat(p, 'z', 64)));
    SVC_CHECK(!svc_slug_valid(NULL));
    SVC_CHECK(!svc_slug_valid(""));
    SVC_CHECK(!svc_slug_valid("-"));
    SVC_CHECK(!svc_slug_valid("-a"));
    SVC_CHECK(!svc_slug_valid("a-"));
    SVC_CHECK(!svc_slug_valid("A"));
    SVC_CHECK(!svc_slug_valid("a_b"));
    SVC_CHECK(!svc_slug_valid("a b"));
    SVC_CHECK(!svc_slug_valid("a.b"));
    SVC_CHECK(!svc_slug_valid("\xc3\xa9"));

    SVC_CHECK(svc_email_valid("a@b"));
    SVC_CHECK(svc_email_valid("first.last+tag@example.com"));
    SVC_CHECK(svc_email_valid(apr_pstrcat(p, repeat(p, 'a', 250), "@b.c", NULL)));
    SVC_CHECK(!svc_email_valid(apr_pstrcat(p, repeat(p, 'a', 251), "@b.c", NULL)));
    SVC_CHECK(!svc_email_valid(""));
    SVC_CHECK(!svc_email_valid("a"));
    SVC_CHECK(!svc_email_valid("@b.c"));
    SVC_CHECK(!svc_email_valid("a@"));
    SVC_CHECK(!svc_email_valid("a@b@c"));
    SVC_CHECK(!svc_email_valid("a b@c"));
    SVC_CHECK(!svc_email_valid("a@b\n"));
    SVC_CHECK(!svc_email_valid("a@b\r\nBcc: x@y"));
    SVC_CHECK(!svc_email_valid("<a@b>"));
    SVC_CHECK(!svc_email_valid("a@b,c@d"));
    SVC_CHECK(!svc_email_valid("\"a\"@b"));
    SVC_CHECK(!svc_email_valid("a\x7f@b"));

    /* Full-string decimal parsing. */
    v = -1;
    SVC_CHECK_INT(svc_parse_int("12", 0, 100, &v), APR_SUCCESS);
    SVC_CHECK_INT(v, 12);
    SVC_CHECK_INT(svc_parse_int("-7", -10, 10, &v), APR_SUCCESS);
    SVC_CHECK_INT(v, -7);
    /* "-0" is the number zero, in range when zero is. */
    v = -1;
    SVC_CHECK_INT(svc_parse_int("-0", -10, 10, &v), APR_SUCCESS);
    SVC_CHECK_INT(v, 0);
    SVC_CHECK_INT(svc_parse_int("-0", 1, 200, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("9223372036854775807", 0, LLONG_MAX, &v), APR_SUCCESS);
    SVC_CHECK(v == LLONG_MAX);
    SVC_CHECK_INT(svc_parse_int("-9223372036854775808", LLONG_MIN, 0, &v), APR_SUCCESS);
    SVC_CHECK(v == LLONG_MIN);
    v = 4242;
    SVC_CHECK_INT(svc_parse_int("12a", 0, 100, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int(" 1", 0, 100, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("1 ", 0, 100, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("\t1", 0, 100, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("", 0, 100, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int(NULL, 0, 100, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("-", 0, 100, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("+1", 0, 100, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("--1", -100, 100, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("- 1", -100, 100, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("0x10", 0, 100, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("1e3", 0, 10000, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("1.0", 0, 100, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("9223372036854775808", 0, LLONG_MAX, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("-9223372036854775809", LLONG_MIN, 0, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("99999999999999999999999", 0, LLONG_MAX, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("101", 0, 100, &v), APR_EINVAL);
    SVC_CHECK_INT(svc_parse_int("-1", 0, 100, &v), APR_EINVAL);
    /* Nothing is written on failure. */
    SVC_CHECK_INT(v, 4242);
}

/* ---------------------------------------------------------------------- */
/* Encodings, MACs, hashes                                                 */

static const char *b64(apr_pool_t *p, const char *s)
{
    return svc_b64url_encode(p, (const unsigned char *)s, strlen(s));
}

/* Decodes s; returns the bytes as a string or NULL when refused. */
static const char *unb64(apr_pool_t *p, const char *s, apr_size_t n)
{
    unsigned char *out = NULL;
    apr_size_t len = 0;

    if (svc_b64url_decode(p, s, n, &out, &len) != APR_SUCCESS) {
        return NULL;
    }
    return apr_pstrmemdup(p, (const char *)out, len);
}
#define UNB64(s_) unb64(p, (s_), strlen(s_))

SVC_TEST(b64url_rfc4648_vectors)
{
    static const char *const vec[][2] = {
        { "", "" }, { "f", "Zg" }, { "fo", "Zm8" }, { "foo", "Zm9v" }, { "foob", "Zm9vYg" },
        { "fooba", "Zm9vYmE" }, { "foobar", "Zm9vYmFy" }
    };
    static const unsigned char fbff[] = { 0xfb, 0xff };
    static const unsigned char ffffff[] = { 0xff, 0xff, 0xff };
    static const unsigned char fbefbe[] = { 0xfb, 0xef, 0xbe };
    unsigned char *out;
    apr_size_t len, i;

    for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
        SVC_CHECK_STR(b64(p, vec[i][0]), vec[i][1]);
        SVC_CHECK_STR(UNB64(vec[i][1]), vec[i][0]);
    }
    /* The two characters where base64url differs from base64 ("+/8=", "////"). */
    SVC_CHECK_STR(svc_b64url_encode(p, fbff, 2), "-_8");
    SVC_CHECK_STR(svc_b64url_encode(p, ffffff, 3), "____");
    SVC_CHECK_STR(svc_b64url_encode(p, fbefbe, 3), "----");
    SVC_CHECK_INT(svc_b64url_decode(p, "-_8", 3, &out, &len), APR_SUCCESS);
    SVC_CHECK(len == 2 && memcmp(out, fbff, 2) == 0);
}

SVC_TEST(b64url_decode_is_strict)
{
    SVC_CHECK(UNB64("Zg==") == NULL);
    SVC_CHECK(UNB64("Zg=") == NULL);
    SVC_CHECK(UNB64("Zm9vYg==") == NULL);
    SVC_CHECK(UNB64("+w") == NULL);
    SVC_CHECK(UNB64("/w") == NULL);
    SVC_CHECK(UNB64("+/8") == NULL);
    SVC_CHECK(UNB64("Zm9 v") == NULL);
    SVC_CHECK(UNB64("Zm9v\n") == NULL);
    SVC_CHECK(UNB64(" Zm9v") == NULL);
    SVC_CHECK(UNB64("Zm9v.") == NULL);
    SVC_CHECK(UNB64("Zm\xc3\xa9") == NULL);
    SVC_CHECK(unb64(p, "Zm\0v", 4) == NULL);
    /* Lengths that no byte string encodes to. */
    SVC_CHECK(UNB64("Z") == NULL);
    SVC_CHECK(UNB64("Zm9vY") == NULL);
    /* Non-zero trailing bits: each byte string has exactly one encoding. */
    SVC_CHECK_STR(UNB64("Zg"), "f");
    SVC_CHECK(UNB64("Zh") == NULL);
    SVC_CHECK(UNB64("Zv") == NULL);
    SVC_CHECK_STR(UNB64("Zm8"), "fo");
    SVC_CHECK(UNB64("Zm9") == NULL);
}

SVC_TEST(b64url_round_trip_random)
{
    unsigned char buf[300];
    apr_size_t n, len, i;
    unsigned char *out;
    char *enc;

    for (n = 0; n <= sizeof(buf); n++) {
        randombytes_buf(buf, n);
        enc = svc_b64url_encode(p, buf, n);
        SVC_CHECK_INT(strlen(enc), (n * 4 + 2) / 3);
        for (i = 0; enc[i]; i++) {
            SVC_CHECK(apr_isalnum(enc[i]) || enc[i] == '-' || enc[i] == '_');
        }
        out = NULL;
        SVC_CHECK_INT(svc_b64url_decode(p, enc, strlen(enc), &out, &len), APR_SUCCESS);
        SVC_CHECK(out && len == n && memcmp(out, buf, n) == 0);
    }
}

SVC_TEST(hmac_sha256_rfc4231)
{
    unsigned char key[131], mac[32];
    static const char tc1[] = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7";
    static const char tc2[] = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
    static const char tc6[] = "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54";
    static const char m6[] = "Test Using Larger Than Block-Size Key - Hash Key First";

    /* Test case 1: 20 bytes of 0x0b, "Hi There". */
    memset(key, 0x0b, 20);
    svc_hmac_sha256(mac, key, 20, (const unsigned char *)"Hi There", 8);
    SVC_CHECK_STR(hexof(p, mac, 32), tc1);
    /* Test case 2: a key shorter than the block. */
    svc_hmac_sha256(mac, (const unsigned char *)"Jefe", 4,
                    (const unsigned char *)"what do ya want for nothing?", 28);
    SVC_CHECK_STR(hexof(p, mac, 32), tc2);
    /* Test case 6: a key longer than the block (hashed first). */
    memset(key, 0xaa, 131);
    svc_hmac_sha256(mac, key, 131, (const unsigned char *)m6, strlen(m6));
    SVC_CHECK_STR(hexof(p, mac, 32), tc6);
}

SVC_TEST(keyed_hash_and_ct_equal)
{
    unsigned char key[32], key2[32], a[32], b[32];
    int i;

    for (i = 0; i < 32; i++) {
        key[i] = (unsigned char)i;
    }
    /* Expected from Python: hashlib.blake2b(b"abc", digest_size=32, key=bytes(range(32))). */
    svc_keyed_hash(a, key, (const unsigned char *)"abc", 3);
    SVC_CHECK_STR(hexof(p, a, 32),
                  "d63a32d3e44738d7907f964316c241adaba0abfeabc32349677578a15a203f7f");
    svc_keyed_hash(b, key, (const unsigned char *)"abc", 3);
    SVC_CHECK(memcmp(a, b, 32) == 0);
    /* One bit of key or message changes everything. */
    memcpy(key2, key, 32);
    key2[31] ^= 1;
    svc_keyed_hash(b, key2, (const unsigned char *)"abc", 3);
    SVC_CHECK(memcmp(a, b, 32) != 0);
    svc_keyed_hash(b, key, (const unsigned char *)"abd", 3);
    SVC_CHECK(memcmp(a, b, 32) != 0);
    svc_keyed_hash(b, key, (const unsigned char *)"abc", 2);
    SVC_CHECK(memcmp(a, b, 32) != 0);

    SVC_CHECK(svc_ct_equal("abcdef", "abcdef", 6));
    SVC_CHECK(!svc_ct_equal("abcdef", "abcdeg", 6));
    SVC_CHECK(!svc_ct_equal("xbcdef", "abcdef", 6));
    SVC_CHECK(svc_ct_equal("abcdef", "abcdeg", 5));
    SVC_CHECK(svc_ct_equal("a", "b", 0));
    memcpy(b, a, 32);
    b[16] ^= 0x80;
    SVC_CHECK(!svc_ct_equal(a, b, 32));
}

SVC_TEST(random_ids)
{
    const char *a = svc_id_new(p, "prj_"), *b = svc_id_new(p, "prj_");
    const char *r = svc_random_base62(p, 1000);
    int i;

    SVC_CHECK_INT(strlen(a), 4 + 22);
    SVC_CHECK(strncmp(a, "prj_", 4) == 0);
    SVC_CHECK(strcmp(a, b) != 0);
    SVC_CHECK_INT(strlen(r), 1000);
    for (i = 0; r[i]; i++) {
        SVC_CHECK(apr_isalnum(r[i]));
    }
}

/* ---------------------------------------------------------------------- */
/* Token checksum and PAT format                                           */

SVC_TEST(checksum62_crc32_vector)
{
    char out[7];

    /*
     * CRC-32/IEEE("123456789") = 0xCBF43926 = 3421780262. In base 62,
     * most significant digit first (alphabet 0-9A-Za-z):
     *   3421780262 = 3*62^5 + 673381766        -> '3'
     *    673381766 = 45*62^4 + 8446646         -> 45 = 'j'
     *      8446646 = 35*62^3 + 105166          -> 35 = 'Z'
     *       105166 = 27*62^2 + 1378            -> 27 = 'R'
     *         1378 = 22*62 + 14                -> 22 = 'M', 14 = 'E'
     */
    svc_checksum62("123456789", 9, out);
    SVC_CHECK_STR(out, "3jZRME");
    /* CRC-32("") = 0: six zero digits (fixed width). */
    svc_checksum62("", 0, out);
    SVC_CHECK_STR(out, "000000");
    /* CRC-32("a") = 0xE8B7BE43 = 3904355907; the same way:
     *   4*62^5 + 239824579; 16*62^4 + 3403203; 14*62^3 + 66611;
     *   17*62^2 + 1263; 20*62 + 23 -> 4, 16, 14, 17, 20, 23 = "4GEHKN". */
    svc_checksum62("a", 1, out);
    SVC_CHECK_STR(out, "4GEHKN");
}

static int is_b62(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

SVC_TEST(pat_generate_and_well_formed)
{
    static const char alphabet[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const char *seen[100];
    char sum[7];
    char *t, *m;
    int i, j, k;

    SVC_CHECK_INT(SVC_PAT_LEN, 8 + 43 + 6);
    for (i = 0; i < 100; i++) {
        t = svc_pat_generate(p);
        SVC_CHECK_INT(strlen(t), SVC_PAT_LEN);
        SVC_CHECK(strncmp(t, "svc_pat_", 8) == 0);
        for (j = 8; t[j]; j++) {
            SVC_CHECK(is_b62(t[j]));
        }
        /* The checksum is the CRC of what precedes it (our CRC62 is proven above). */
        svc_checksum62(t, SVC_PAT_LEN - 6, sum);
        SVC_CHECK(memcmp(sum, t + SVC_PAT_LEN - 6, 6) == 0);
        SVC_CHECK(svc_pat_well_formed(t));
        for (j = 0; j < i; j++) {
            SVC_CHECK(strcmp(seen[j], t) != 0);
        }
        seen[i] = t;
    }

    t = svc_pat_generate(p);
    /* Every single-character substitution after the prefix, with three
     * different replacement characters each. */
    for (i = 8; i < SVC_PAT_LEN; i++) {
        for (k = 1; k <= 3; k++) {
            m = apr_pstrdup(p, t);
            m[i] = alphabet[(strchr(alphabet, t[i]) - alphabet + k * 17) % 62];
            SVC_CHECK(m[i] != t[i]);
            if (svc_pat_well_formed(m)) {
                fprintf(stderr, "substitution at %d accepted\n", i);
                svc_test_failed_checks++;
            }
        }
    }
    /* Prefix changes. */
    for (i = 0; i < 8; i++) {
        m = apr_pstrdup(p, t);
        m[i] = (char)(m[i] == 'x' ? 'y' : 'x');
        SVC_CHECK(!svc_pat_well_formed(m));
    }
    m = apr_pstrdup(p, t);
    memcpy(m, "SVC_PAT_", 8);
    SVC_CHECK(!svc_pat_well_formed(m));
    m = apr_pstrcat(p, "svc_shr_", t + 8, NULL);
    SVC_CHECK(!svc_pat_well_formed(m));
    /* Truncated, extended, swapped. */
    SVC_CHECK(!svc_pat_well_formed(apr_pstrndup(p, t, SVC_PAT_LEN - 1)));
    SVC_CHECK(!svc_pat_well_formed(apr_pstrndup(p, t, 8)));
    SVC_CHECK(!svc_pat_well_formed(apr_pstrcat(p, t, "0", NULL)));
    SVC_CHECK(!svc_pat_well_formed(apr_pstrcat(p, t, "\n", NULL)));
    SVC_CHECK(!svc_pat_well_formed(apr_pstrcat(p, " ", t, NULL)));
    m = apr_pstrdup(p, t);
    for (i = 8; i + 1 < SVC_PAT_LEN; i++) {
        if (m[i] != m[i + 1]) {
            char c = m[i];
            m[i] = m[i + 1];
            m[i + 1] = c;
            break;
        }
    }
    SVC_CHECK(!svc_pat_well_formed(m));
    /* Characters outside base62, anywhere after the prefix. */
    for (i = 8; i < SVC_PAT_LEN; i += 7) {
        static const char bad[] = "-_+/=. \x7f\x80\xc3";
        for (j = 0; bad[j]; j++) {
            m = apr_pstrdup(p, t);
            m[i] = bad[j];
            SVC_CHECK(!svc_pat_well_formed(m));
        }
    }
    SVC_CHECK(!svc_pat_well_formed(NULL));
    SVC_CHECK(!svc_pat_well_formed(""));
    SVC_CHECK(!svc_pat_well_formed("svc_pat_"));
    /* A well-formed token built by hand: 43 zeros and its CRC62. */
    m = apr_pstrcat(p, "svc_pat_", repeat(p, '0', 43), NULL);
    svc_checksum62(m, strlen(m), sum);
    SVC_CHECK(svc_pat_well_formed(apr_pstrcat(p, m, sum, NULL)));
}

SVC_TEST(secret_token_other_prefix)
{
    char *t = svc_secret_token_generate(p, "svc_shr_");
    char *m;

    SVC_CHECK_INT(strlen(t), SVC_SECRET_TOKEN_LEN);
    SVC_CHECK(svc_secret_token_well_formed(t, "svc_shr_"));
    /* A share token is not a PAT, nor the other way round. */
    SVC_CHECK(!svc_pat_well_formed(t));
    SVC_CHECK(!svc_secret_token_well_formed(svc_pat_generate(p), "svc_shr_"));
    m = apr_pstrdup(p, t);
    m[20] = m[20] == 'a' ? 'b' : 'a';
    SVC_CHECK(!svc_secret_token_well_formed(m, "svc_shr_"));
}

SVC_TEST(box_seal_and_open)
{
    unsigned char key[32], other[32], *box, *box2;
    apr_size_t boxlen, boxlen2, n;
    const char *plain = "sk-test-0123456789abcdef";
    char *out;

    memset(key, 7, sizeof(key));
    memset(other, 8, sizeof(other));
    svc_box_seal(p, key, plain, strlen(plain), &box, &boxlen);
    SVC_CHECK_INT(boxlen, strlen(plain) + SVC_BOX_OVERHEAD);
    /* The plaintext is nowhere in the box. */
    SVC_CHECK(memmem(box, boxlen, plain, strlen(plain)) == NULL);
    SVC_CHECK(svc_box_open(p, key, box, boxlen, &out, &n) == APR_SUCCESS);
    SVC_CHECK_INT(n, strlen(plain));
    SVC_CHECK_STR(out, plain);
    /* A fresh nonce each time: the same plaintext seals differently. */
    svc_box_seal(p, key, plain, strlen(plain), &box2, &boxlen2);
    SVC_CHECK(boxlen2 == boxlen && memcmp(box, box2, boxlen) != 0);
    /* Another key, a flipped bit, a short box: refused. */
    SVC_CHECK(svc_box_open(p, other, box, boxlen, &out, &n) == APR_EINVAL);
    box[boxlen - 1] ^= 1;
    SVC_CHECK(svc_box_open(p, key, box, boxlen, &out, &n) == APR_EINVAL);
    SVC_CHECK(svc_box_open(p, key, box, SVC_BOX_OVERHEAD - 1, &out, &n) == APR_EINVAL);
    /* The empty secret round-trips too. */
    svc_box_seal(p, key, "", 0, &box, &boxlen);
    SVC_CHECK(svc_box_open(p, key, box, boxlen, &out, &n) == APR_SUCCESS && n == 0);
}

/* ---------------------------------------------------------------------- */
/* JWT                                                                     */

static const unsigned char jwt_key[32] = {
    0x10, 0x21, 0x32, 0x43, 0x54, 0x65, 0x76, 0x87, 0x98, 0xa9, 0xba, 0xcb, 0xdc, 0xed, 0xfe, 0x0f,
    0x01, 0x12, 0x23, 0x34, 0x45, 0x56, 0x67, 0x78, 0x89, 0x9a, 0xab, 0xbc, 0xcd, 0xde, 0xef, 0xf0
};

#define HS256_HEADER "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"

/* header.payload with the segments encoded from the given JSON texts. */
static const char *jwt_input(apr_pool_t *p, const char *header, const char *payload)
{
    return apr_pstrcat(p, b64(p, header), ".", b64(p, payload), NULL);
}

/* input.HMAC-SHA256(key, input) */
static const char *jwt_hs256(apr_pool_t *p, const char *input, const unsigned char *key,
                             apr_size_t keylen)
{
    unsigned char mac[32];

    svc_hmac_sha256(mac, key, keylen, (const unsigned char *)input, strlen(input));
    return apr_pstrcat(p, input, ".", svc_b64url_encode(p, mac, 32), NULL);
}

/* A token built by the test alone, signed with the server key. */
static const char *jwt_make(apr_pool_t *p, const char *header, const char *payload)
{
    return jwt_hs256(p, jwt_input(p, header, payload), jwt_key, 32);
}

static apr_status_t jwt_check(apr_pool_t *p, const char *token, apr_int64_t now,
                              json_t **pclaims)
{
    const char *err = NULL;
    json_t *claims = (json_t *)1;
    apr_status_t rv = svc_jwt_verify_hs256(p, jwt_key, token, now, &claims, &err);

    if (rv != APR_SUCCESS) {
        /* Refusals say why, and return no claims. */
        SVC_CHECK(claims == NULL);
        SVC_CHECK(err && *err);
    }
    if (pclaims) {
        *pclaims = claims;
    }
    return rv;
}

#define NOW ((apr_int64_t)1700000000)

#define CHECK_JWT_REFUSED(tok_)                                               \
    do {                                                                      \
        const char *t_ = (tok_);                                              \
        if (jwt_check(p, t_, NOW, NULL) == APR_SUCCESS) {                     \
            fprintf(stderr, "%s:%d: token accepted: %.200s\n", __FILE__,      \
                    __LINE__, t_);                                            \
            svc_test_failed_checks++;                                         \
        }                                                                     \
    } while (0)

SVC_TEST(jwt_valid_tokens)
{
    const char *payload = "{\"sub\":\"usr_1\",\"sid\":\"ses_2\",\"exp\":1700000060,"
                          "\"iat\":1699999990,\"nbf\":1700000000}";
    json_t *claims, *mine;
    const char *tok;

    /* Built by hand: the server must accept what the JWS spec says it issues. */
    tok = jwt_make(p, HS256_HEADER, payload);
    SVC_CHECK_INT(jwt_check(p, tok, NOW, &claims), APR_SUCCESS);
    SVC_CHECK_STR(json_string_value(json_object_get(claims, "sub")), "usr_1");
    SVC_CHECK_STR(json_string_value(json_object_get(claims, "sid")), "ses_2");
    SVC_CHECK(json_integer_value(json_object_get(claims, "exp")) == 1700000060);
    /* exp one second ahead is still valid; nbf == now is valid. */
    SVC_CHECK_INT(jwt_check(p, tok, 1700000059, NULL), APR_SUCCESS);

    /* Signed by the code: the fixed header, and our own MAC over the input. */
    mine = json_pack("{s:s,s:I}", "sub", "usr_9", "exp", (json_int_t)(NOW + 3600));
    tok = svc_jwt_sign_hs256(p, jwt_key, mine);
    json_decref(mine);
    SVC_CHECK(strncmp(tok, "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.", 37) == 0);
    {
        const char *dot2 = strrchr(tok, '.');
        const char *input = apr_pstrmemdup(p, tok, (apr_size_t)(dot2 - tok));
        SVC_CHECK_STR(jwt_hs256(p, input, jwt_key, 32), tok);
    }
    SVC_CHECK_INT(jwt_check(p, tok, NOW, &claims), APR_SUCCESS);
    SVC_CHECK_STR(json_string_value(json_object_get(claims, "sub")), "usr_9");
}

SVC_TEST(jwt_refuses_foreign_headers)
{
    const char *payload = "{\"sub\":\"usr_1\",\"exp\":1700003600}";
    const char *pubkey =
        "-----BEGIN PUBLIC KEY-----\n"
        "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n"
        "4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u\n"
        "-----END PUBLIC KEY-----\n";
    unsigned char mac512[64];
    const char *input;

    /* alg none: no signature, and with a perfectly good HS256 signature. */
    input = jwt_input(p, "{\"alg\":\"none\",\"typ\":\"JWT\"}", payload);
    CHECK_JWT_REFUSED(apr_pstrcat(p, input, ".", NULL));
    CHECK_JWT_REFUSED(jwt_hs256(p, input, jwt_key, 32));
    input = jwt_input(p, "{\"alg\":\"none\"}", payload);
    CHECK_JWT_REFUSED(apr_pstrcat(p, input, ".", NULL));
    input = jwt_input(p, "{\"alg\":\"None\",\"typ\":\"JWT\"}", payload);
    CHECK_JWT_REFUSED(apr_pstrcat(p, input, ".", NULL));
    /* HS512, properly signed with HMAC-SHA512 under the server key. */
    input = jwt_input(p, "{\"alg\":\"HS512\",\"typ\":\"JWT\"}", payload);
    crypto_auth_hmacsha512_state st;
    crypto_auth_hmacsha512_init(&st, jwt_key, 32);
    crypto_auth_hmacsha512_update(&st, (const unsigned char *)input, strlen(input));
    crypto_auth_hmacsha512_final(&st, mac512);
    CHECK_JWT_REFUSED(apr_pstrcat(p, input, ".", svc_b64url_encode(p, mac512, 64), NULL));
    CHECK_JWT_REFUSED(jwt_hs256(p, input, jwt_key, 32));
    /* RS256 / HS256 key confusion: HMAC keyed with a public key's text. */
    input = jwt_input(p, "{\"alg\":\"RS256\",\"typ\":\"JWT\"}", payload);
    CHECK_JWT_REFUSED(jwt_hs256(p, input, (const unsigned char *)pubkey, strlen(pubkey)));
    CHECK_JWT_REFUSED(jwt_hs256(p, input, jwt_key, 32));
    /* Otherwise valid HS256 tokens whose header is not the one we issue. */
    CHECK_JWT_REFUSED(jwt_make(p, "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"1\"}", payload));
    CHECK_JWT_REFUSED(jwt_make(p, "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"jku\":\"https://x\"}",
                               payload));
    CHECK_JWT_REFUSED(jwt_make(p, "{\"alg\":\"HS256\"}", payload));
    CHECK_JWT_REFUSED(jwt_make(p, "{\"typ\":\"JWT\"}", payload));
    CHECK_JWT_REFUSED(jwt_make(p, "{\"alg\":\"HS256\",\"typ\":\"JWS\"}", payload));
    CHECK_JWT_REFUSED(jwt_make(p, "{\"alg\":\"hs256\",\"typ\":\"JWT\"}", payload));
    CHECK_JWT_REFUSED(jwt_make(p, "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"alg\":\"none\"}",
                               payload));
    CHECK_JWT_REFUSED(jwt_make(p, "{}", payload));
    CHECK_JWT_REFUSED(jwt_make(p, "", payload));
    CHECK_JWT_REFUSED(jwt_make(p, "[]", payload));
}

SVC_TEST(jwt_refuses_bad_signatures)
{
    const char *payload = "{\"sub\":\"usr_1\",\"exp\":1700003600}";
    const char *input = jwt_input(p, HS256_HEADER, payload);
    const char *good = jwt_make(p, HS256_HEADER, payload);
    unsigned char mac[64], other_key[32];
    char *t;

    SVC_CHECK_INT(jwt_check(p, good, NOW, NULL), APR_SUCCESS);
    /* One bit of the MAC flipped. */
    svc_hmac_sha256(mac, jwt_key, 32, (const unsigned char *)input, strlen(input));
    mac[0] ^= 1;
    CHECK_JWT_REFUSED(apr_pstrcat(p, input, ".", svc_b64url_encode(p, mac, 32), NULL));
    mac[0] ^= 1;
    mac[31] ^= 0x80;
    CHECK_JWT_REFUSED(apr_pstrcat(p, input, ".", svc_b64url_encode(p, mac, 32), NULL));
    mac[31] ^= 0x80;
    /* Truncated and extended MACs (wrong length, same prefix). */
    CHECK_JWT_REFUSED(apr_pstrcat(p, input, ".", svc_b64url_encode(p, mac, 31), NULL));
    CHECK_JWT_REFUSED(apr_pstrcat(p, input, ".", svc_b64url_encode(p, mac, 16), NULL));
    memcpy(mac + 32, mac, 32);
    CHECK_JWT_REFUSED(apr_pstrcat(p, input, ".", svc_b64url_encode(p, mac, 33), NULL));
    CHECK_JWT_REFUSED(apr_pstrcat(p, input, ".", svc_b64url_encode(p, mac, 64), NULL));
    /* Signed with another key. */
    memset(other_key, 0x42, 32);
    CHECK_JWT_REFUSED(jwt_hs256(p, input, other_key, 32));
    /* A changed payload under the original signature. */
    t = apr_pstrcat(p, jwt_input(p, HS256_HEADER, "{\"sub\":\"usr_0\",\"exp\":1700003600}"),
                    strrchr(good, '.'), NULL);
    CHECK_JWT_REFUSED(t);
    t = apr_pstrcat(p, jwt_input(p, HS256_HEADER, "{\"sub\":\"usr_1\",\"exp\":1900003600}"),
                    strrchr(good, '.'), NULL);
    CHECK_JWT_REFUSED(t);
    /* A single character of the payload segment changed. */
    t = apr_pstrdup(p, good);
    t[strchr(t, '.') - t + 5] ^= 1;
    CHECK_JWT_REFUSED(t);
}

SVC_TEST(jwt_refuses_bad_claims)
{
    /* Every token here is correctly signed: only the claims are wrong. */
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"sub\":\"usr_1\"}"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":\"1700003600\"}"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":1700003600.0}"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":1.7e9}"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":null}"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":true}"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":[1700003600]}"));
    /* Expired: in the past, and exactly now. */
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":1699999999}"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":1700000000}"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":0}"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":-1}"));
    /* Not yet valid, or nbf/iat of the wrong type. */
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":1700003600,\"nbf\":1700000001}"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":1700003600,\"nbf\":\"0\"}"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":1700003600,\"iat\":1.5}"));
    /* Claims that are not an object. */
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "[{\"exp\":1700003600}]"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "\"exp\""));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "1700003600"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "null"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, ""));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":1700003600} x"));
    /* Duplicate claims: which exp would win? Neither. */
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"exp\":1700003600,\"exp\":1}"));
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER,
                               "{\"sub\":\"usr_1\",\"exp\":1700003600,\"sub\":\"usr_2\"}"));
    /* And NUL in a claim. */
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER, "{\"sub\":\"usr_1\\u0000x\",\"exp\":1700003600}"));
}

SVC_TEST(jwt_refuses_bad_shapes)
{
    const char *payload = "{\"sub\":\"usr_1\",\"exp\":1700003600}";
    const char *good = jwt_make(p, HS256_HEADER, payload);
    const char *hdr = b64(p, HS256_HEADER), *body = b64(p, payload);
    const char *sig = strrchr(good, '.') + 1;
    static const char *const badchars[] = { "+", "/", "=", " ", "%", "\n", "\xc3\xa9" };
    char *big;
    apr_size_t i;

    SVC_CHECK_INT(jwt_check(p, good, NOW, NULL), APR_SUCCESS);
    /* Segment counts. */
    CHECK_JWT_REFUSED(apr_pstrcat(p, hdr, ".", body, NULL));
    CHECK_JWT_REFUSED(apr_pstrcat(p, good, ".", sig, NULL));
    CHECK_JWT_REFUSED(apr_pstrcat(p, good, ".", NULL));
    CHECK_JWT_REFUSED(hdr);
    CHECK_JWT_REFUSED(apr_pstrcat(p, hdr, ".", body, ".", sig, ".", sig, ".", sig, NULL));
    /* Empty segments. */
    CHECK_JWT_REFUSED("..");
    CHECK_JWT_REFUSED("...");
    CHECK_JWT_REFUSED(apr_pstrcat(p, ".", body, ".", sig, NULL));
    CHECK_JWT_REFUSED(apr_pstrcat(p, hdr, "..", sig, NULL));
    CHECK_JWT_REFUSED(apr_pstrcat(p, hdr, ".", body, ".", NULL));
    CHECK_JWT_REFUSED("");
    SVC_CHECK(jwt_check(p, NULL, NOW, NULL) == APR_EINVAL);
    /* Characters outside base64url, in each segment (the MAC is recomputed
     * where the input changes, so only the encoding is wrong). */
    for (i = 0; i < sizeof(badchars) / sizeof(badchars[0]); i++) {
        const char *c = badchars[i];
        CHECK_JWT_REFUSED(jwt_hs256(p, apr_pstrcat(p, hdr, c, ".", body, NULL), jwt_key, 32));
        CHECK_JWT_REFUSED(jwt_hs256(p, apr_pstrcat(p, hdr, ".", body, c, NULL), jwt_key, 32));
        CHECK_JWT_REFUSED(apr_pstrcat(p, good, c, NULL));
        CHECK_JWT_REFUSED(apr_pstrcat(p, c, good, NULL));
    }
    /* Standard base64 with padding of the same bytes. */
    CHECK_JWT_REFUSED(apr_pstrcat(p, good, "=", NULL));
    /* A 1 MB token (a valid one with a huge claim, and junk). */
    big = repeat(p, 'x', 1024 * 1024);
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER,
                               apr_pstrcat(p, "{\"exp\":1700003600,\"pad\":\"", big, "\"}", NULL)));
    CHECK_JWT_REFUSED(apr_pstrcat(p, hdr, ".", big, ".", sig, NULL));
    big = repeat(p, '.', 1024 * 1024);
    CHECK_JWT_REFUSED(big);
    /* Just over the documented maximum, correctly signed. */
    CHECK_JWT_REFUSED(jwt_make(p, HS256_HEADER,
                               apr_pstrcat(p, "{\"exp\":1700003600,\"pad\":\"",
                                           repeat(p, 'x', SVC_JWT_MAX), "\"}", NULL)));
}

/* ---------------------------------------------------------------------- */
/* Redaction                                                               */

#define CHECK_REDACT(in_, want_) SVC_CHECK_STR(svc_redact(p, (in_)), (want_))

/* The secret must be gone entirely; not even a 4-byte piece of it stays. */
static void check_gone(apr_pool_t *p, const char *in, const char *secret, int line)
{
    const char *out = svc_redact(p, in);
    apr_size_t n = strlen(secret), i;

    for (i = 0; i + 4 <= n; i++) {
        char piece[5];
        memcpy(piece, secret + i, 4);
        piece[4] = '\0';
        if (contains(out, piece)) {
            fprintf(stderr, "%s:%d: redaction left \"%s\" of the secret in \"%s\"\n",
                    __FILE__, line, piece, out);
            svc_test_failed_checks++;
            return;
        }
    }
}
#define CHECK_GONE(in_, secret_) check_gone(p, (in_), (secret_), __LINE__)

SVC_TEST(redact_our_tokens_and_jwts)
{
    const char *pat = svc_pat_generate(p);
    const char *jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c3JfMSJ9."
                      "Vv3C8u-_k9NqLhM0a1QkP3pM5o0x2Yd4rT6wE8sZb1c";

    CHECK_REDACT(apr_pstrcat(p, "token ", pat, " end", NULL), "token [REDACTED] end");
    CHECK_REDACT(pat, "[REDACTED]");
    CHECK_REDACT(apr_pstrcat(p, "\"", pat, "\"", NULL), "\"[REDACTED]\"");
    CHECK_REDACT(apr_pstrcat(p, "/api/x/", pat, "/y", NULL), "/api/x/[REDACTED]/y");
    CHECK_REDACT(apr_pstrcat(p, pat, ",", pat, NULL), "[REDACTED],[REDACTED]");
    /* Any svc_<kind>_ with 16+ base62 characters. */
    CHECK_REDACT("share svc_shr_ABCDEFGHIJKLMNOP!", "share [REDACTED]!");
    CHECK_REDACT("svc_whsec_0123456789abcdefXYZ", "[REDACTED]");
    /* A JWT anywhere. */
    CHECK_REDACT(apr_pstrcat(p, "cookie ", jwt, " rest", NULL), "cookie [REDACTED] rest");
    CHECK_REDACT(apr_pstrcat(p, "x=", jwt, NULL), "x=[REDACTED]");
    CHECK_GONE(apr_pstrcat(p, "a ", pat, " b", NULL), pat + 8);
    CHECK_GONE(apr_pstrcat(p, "a ", jwt, " b", NULL), jwt);
}

SVC_TEST(redact_credentials_after_keywords)
{
    CHECK_REDACT("Authorization: Bearer abc.def-ghi~jkl+/=",
                 "Authorization: Bearer [REDACTED]");
    CHECK_REDACT("authorization: bearer abc", "authorization: bearer [REDACTED]");
    CHECK_REDACT("Authorization: BEARER abc, next", "Authorization: BEARER [REDACTED], next");
    CHECK_REDACT("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED]");
    CHECK_REDACT("Bearer x", "Bearer [REDACTED]");
    CHECK_REDACT("Cookie: theme=dark; service_session=eyJabc.def.ghi; lang=en",
                 "Cookie: theme=dark; service_session=[REDACTED]; lang=en");
    CHECK_REDACT("Set-Cookie: service_session=abc123; Path=/; HttpOnly",
                 "Set-Cookie: service_session=[REDACTED]; Path=/; HttpOnly");
    CHECK_REDACT("GET /auth/callback?code=4a7b9c&state=xyz HTTP/1.1",
                 "GET /auth/callback?code=[REDACTED]&state=xyz HTTP/1.1");
    CHECK_REDACT("/cb?state=s&code=SPLXlOBeZQQYbYS6WxSbIA",
                 "/cb?state=s&code=[REDACTED]");
    CHECK_REDACT("POST /token?client_id=abc&client_secret=s3cr3t&x=1",
                 "POST /token?client_id=abc&client_secret=[REDACTED]&x=1");
    CHECK_REDACT("/x?access_token=gho_16C7e42F292c6912E7710c838347Ae178B4a&y=2",
                 "/x?access_token=[REDACTED]&y=2");
    CHECK_REDACT("password=hunter2 ok", "password=[REDACTED] ok");
    CHECK_GONE("Authorization: Bearer gho_16C7e42F292c6912E7710c838347Ae178B4a",
               "gho_16C7e42F292c6912E7710c838347Ae178B4a");
}

/* Issue 17 (Low 2): what run logs showed in clear: other services' tokens
 * and keys, and secret settings written as YAML, JSON or a URL. */
SVC_TEST(redact_other_credentials_and_settings)
{
    CHECK_REDACT("clone with ghs_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 done",
                 "clone with [REDACTED] done");
    CHECK_REDACT("GITHUB_TOKEN=ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2",
                 "GITHUB_TOKEN=[REDACTED]");
    CHECK_REDACT("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                 "[REDACTED]");
    CHECK_REDACT("key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 end", "key [REDACTED] end");
    CHECK_REDACT("x-api-key: sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx-_yz", "x-api-key: [REDACTED]");
    CHECK_REDACT("id AKIAIOSFODNN7EXAMPLE.", "id [REDACTED].");
    CHECK_REDACT("password: hunter2", "password: [REDACTED]");
    CHECK_REDACT("Password:hunter2 next", "Password:[REDACTED] next");
    CHECK_REDACT("{\"user\":\"u\",\"password\":\"hunter2\"}",
                 "{\"user\":\"u\",\"password\":\"[REDACTED]\"}");
    CHECK_REDACT("{\"password\": \"hunter 2\", \"a\": 1}",
                 "{\"password\": \"[REDACTED] 2\", \"a\": 1}");
    CHECK_REDACT("api_key=AKIAIOSFODNN7EXAMPLE", "api_key=[REDACTED]");
    CHECK_REDACT("api_key = 'abc123'", "api_key = '[REDACTED]'");
    CHECK_REDACT("secret_key: s3cr3t", "secret_key: [REDACTED]");
    CHECK_REDACT("postgres://u:pw@h/db", "postgres://u:[REDACTED]@h/db");
    CHECK_REDACT("DATABASE_URL=postgresql://app:s3cr3t@db.example:5432/app?x=1",
                 "DATABASE_URL=postgresql://app:[REDACTED]@db.example:5432/app?x=1");
    CHECK_REDACT("https://x-access-token:abc@github.com/o/r.git",
                 "https://x-access-token:[REDACTED]@github.com/o/r.git");
    CHECK_GONE("password: correct-horse-battery", "correct-horse-battery");
    CHECK_GONE("mysql://root:Tr0ub4dor3@localhost", "Tr0ub4dor3");
    /* Names that only begin the same, and URLs without a password. */
    CHECK_REDACT("tokens: 5 in, 3 out", "tokens: 5 in, 3 out");
    CHECK_REDACT("error token_limit: budget", "error token_limit: budget");
    CHECK_REDACT("https://user@example.com/x", "https://user@example.com/x");
    CHECK_REDACT("http://example.com:8080/a@b", "http://example.com:8080/a@b");
    CHECK_REDACT("the task-force-of-seventeen-people", "the task-force-of-seventeen-people");
    CHECK_REDACT("disk-0123456789abcdefghij", "disk-0123456789abcdefghij");
}

SVC_TEST(redact_leaves_ordinary_text)
{
    static const char *const plain[] = {
        "The quick brown fox jumps over the lazy dog.",
        "svc_db_exec failed: SQLSTATE 23505 on svc_tokens_insert",
        "GET /api/orgs/acme/projects?limit=50&cursor=abc HTTP/1.1",
        "code review at 10; a beard of bees",
        "eyJ is not a JWT",
        "zipcode=12345 barcode=987",
        "json {\"a\":[1,2,3]} 100% \xc3\xa9t\xc3\xa9",
        "",
    };
    apr_size_t i;

    for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        CHECK_REDACT(plain[i], plain[i]);
    }
    SVC_CHECK(svc_redact(p, NULL) == NULL);
}

SVC_TEST(redact_edge_cases_leave_nothing)
{
    const char *pat = svc_pat_generate(p);

    /* RFC 9110: credentials = auth-scheme [ 1*SP ... ]: more than one space
     * is legal and must not expose the token. */
    CHECK_GONE("Authorization: Bearer  TOPSECRETVALUE123", "TOPSECRETVALUE123");
    /* A token glued to what precedes it, as in a percent-encoded
     * "Bearer <pat>" inside a logged URL. */
    CHECK_GONE(apr_pstrcat(p, "/cb?h=Bearer%20", pat, NULL), pat + 8);
    CHECK_GONE(apr_pstrcat(p, "/cb?h=Bearer%20", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.c2lnbmF0dXJl",
                           NULL), "c2lnbmF0dXJl");
}

SVC_TEST(printable)
{
    SVC_CHECK_STR(svc_printable(p, "Mozilla/5.0 (X11)", 100), "Mozilla/5.0 (X11)");
    SVC_CHECK_STR(svc_printable(p, "ab\x01" "c\xc3\xa9", 100), "ab?c??");
    SVC_CHECK_STR(svc_printable(p, "\r\n\t\x7f x", 100), "???? x");
    SVC_CHECK_STR(svc_printable(p, "abcdef", 3), "abc");
    SVC_CHECK_STR(svc_printable(p, "abcdef", 0), "");
    SVC_CHECK_STR(svc_printable(p, "", 10), "");
}

/* ---------------------------------------------------------------------- */
/* Router                                                                  */

static apr_status_t h_dummy(svc_ctx_t *ctx)
{
    (void)ctx;
    return APR_SUCCESS;
}

#define ROW(m_, path_, auth_, scope_)                                         \
    { .method = m_, .path = path_, .handler = h_dummy, .auth = auth_, .scope = scope_ }
#define ROW_END SVC_ROUTE_END

/* Parameter templates first... */
static const svc_route_t table_a[] = {
    ROW("GET", "/api/items", SVC_AUTH_NONE, SVC_SCOPE_NONE),
    ROW("POST", "/api/items", SVC_AUTH_USER, SVC_SCOPE_WRITE),
    ROW("GET", "/api/items/:id", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("DELETE", "/api/items/:id", SVC_AUTH_USER, SVC_SCOPE_WRITE),
    ROW("GET", "/api/items/new", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("GET", "/api/orgs/:orgSlug/items/:id", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("PATCH", "/api/orgs/:orgSlug/items/:id", SVC_AUTH_USER, SVC_SCOPE_WRITE),
    ROW("GET", "/api/orgs/:orgSlug/items/latest", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("GET", "/api/:a/:b/:c/:d/:e/:f/:g/:h/:i/:j/:k/:l/:m/:n/:o", SVC_AUTH_NONE,
        SVC_SCOPE_NONE),
    ROW_END
};
/* ...and the same rows with the literal templates first. */
static const svc_route_t table_b[] = {
    ROW("GET", "/api/:a/:b/:c/:d/:e/:f/:g/:h/:i/:j/:k/:l/:m/:n/:o", SVC_AUTH_NONE,
        SVC_SCOPE_NONE),
    ROW("GET", "/api/orgs/:orgSlug/items/latest", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("PATCH", "/api/orgs/:orgSlug/items/:id", SVC_AUTH_USER, SVC_SCOPE_WRITE),
    ROW("GET", "/api/orgs/:orgSlug/items/:id", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("GET", "/api/items/new", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("DELETE", "/api/items/:id", SVC_AUTH_USER, SVC_SCOPE_WRITE),
    ROW("GET", "/api/items/:id", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("POST", "/api/items", SVC_AUTH_USER, SVC_SCOPE_WRITE),
    ROW("GET", "/api/items", SVC_AUTH_NONE, SVC_SCOPE_NONE),
    ROW_END
};

/* The row of `table` with this method and path. */
static const svc_route_t *row_of(const svc_route_t *table, const char *method, const char *path)
{
    for (; table->method; table++) {
        if (strcmp(table->method, method) == 0 && strcmp(table->path, path) == 0) {
            return table;
        }
    }
    return NULL;
}

typedef struct {
    const svc_route_t *route;
    const char *allow;
    apr_table_t *params;
} match_t;

static match_t do_match(apr_pool_t *p, const svc_router_t *rt, const char *method,
                        const char *path)
{
    match_t m;

    m.params = apr_table_make(p, 4);
    m.allow = "(unset)";
    m.route = svc_router_match(rt, method, path, p, m.params, &m.allow);
    return m;
}

static void check_table(apr_pool_t *p, const svc_route_t *t)
{
    svc_router_t *rt = NULL;
    match_t m;
    char *path;
    int i;

    SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_SUCCESS);
    if (!rt) {
        return;
    }
    /* Literal beats parameter at the same position. */
    m = do_match(p, rt, "GET", "/api/items/new");
    SVC_CHECK(m.route == row_of(t, "GET", "/api/items/new"));
    SVC_CHECK(m.allow == NULL);
    SVC_CHECK(apr_table_get(m.params, "id") == NULL);
    m = do_match(p, rt, "GET", "/api/items/it_42");
    SVC_CHECK(m.route == row_of(t, "GET", "/api/items/:id"));
    SVC_CHECK_STR(apr_table_get(m.params, "id"), "it_42");
    m = do_match(p, rt, "GET", "/api/orgs/acme/items/latest");
    SVC_CHECK(m.route == row_of(t, "GET", "/api/orgs/:orgSlug/items/latest"));
    SVC_CHECK_STR(apr_table_get(m.params, "orgSlug"), "acme");
    m = do_match(p, rt, "GET", "/api/orgs/acme/items/x1");
    SVC_CHECK(m.route == row_of(t, "GET", "/api/orgs/:orgSlug/items/:id"));
    SVC_CHECK_STR(apr_table_get(m.params, "orgSlug"), "acme");
    SVC_CHECK_STR(apr_table_get(m.params, "id"), "x1");
    m = do_match(p, rt, "PATCH", "/api/orgs/acme/items/x1");
    SVC_CHECK(m.route == row_of(t, "PATCH", "/api/orgs/:orgSlug/items/:id"));
    m = do_match(p, rt, "DELETE", "/api/items/it_42");
    SVC_CHECK(m.route == row_of(t, "DELETE", "/api/items/:id"));
    /* HEAD is GET. */
    m = do_match(p, rt, "HEAD", "/api/items");
    SVC_CHECK(m.route == row_of(t, "GET", "/api/items"));
    m = do_match(p, rt, "HEAD", "/api/items/it_1");
    SVC_CHECK(m.route == row_of(t, "GET", "/api/items/:id"));
    SVC_CHECK_STR(apr_table_get(m.params, "id"), "it_1");
    /* Unknown paths: no route and no Allow. */
    static const char *const unknown[] = {
        "/api/nothing", "/api/items/", "/api//items", "//api/items", "/api/items//x",
        "api/items", "", "/", "/api/items/a/b", "/API/items", "/api/items/new/"
    };
    for (i = 0; i < (int)(sizeof(unknown) / sizeof(unknown[0])); i++) {
        m = do_match(p, rt, "GET", unknown[i]);
        if (m.route || m.allow) {
            fprintf(stderr, "%s:%d: path \"%s\" matched or has Allow\n", __FILE__, __LINE__,
                    unknown[i]);
            svc_test_failed_checks++;
        }
    }
    /* A parameter of 200 characters matches, 201 does not. */
    m = do_match(p, rt, "GET", apr_pstrcat(p, "/api/items/", repeat(p, 'a', 200), NULL));
    SVC_CHECK(m.route == row_of(t, "GET", "/api/items/:id"));
    m = do_match(p, rt, "GET", apr_pstrcat(p, "/api/items/", repeat(p, 'a', 201), NULL));
    SVC_CHECK(m.route == NULL && m.allow == NULL);
    /* Sixteen segments is the most: the 16-parameter template matches... */
    path = apr_pstrdup(p, "/api");
    for (i = 0; i < 15; i++) {
        path = apr_pstrcat(p, path, "/s", apr_itoa(p, i), NULL);
    }
    m = do_match(p, rt, "GET", path);
    SVC_CHECK(m.route == row_of(t, "GET", "/api/:a/:b/:c/:d/:e/:f/:g/:h/:i/:j/:k/:l/:m/:n/:o"));
    SVC_CHECK_STR(apr_table_get(m.params, "o"), "s14");
    /* ...and one more segment is no match at all. */
    m = do_match(p, rt, "GET", apr_pstrcat(p, path, "/x", NULL));
    SVC_CHECK(m.route == NULL && m.allow == NULL);
    m = do_match(p, rt, "GET", apr_pstrcat(p, path, repeat(p, '/', 1), repeat(p, 'x', 1), "/y/z",
                                           NULL));
    SVC_CHECK(m.route == NULL && m.allow == NULL);
}

SVC_TEST(router_literal_beats_param_in_any_order)
{
    check_table(p, table_a);
    check_table(p, table_b);
}

SVC_TEST(router_method_not_allowed)
{
    svc_router_t *rt = NULL;
    match_t m;

    SVC_CHECK_INT(svc_router_create(&rt, table_a, p), APR_SUCCESS);
    if (!rt) {
        return;
    }
    /* The methods of the matching template, in table order, HEAD after GET. */
    m = do_match(p, rt, "PUT", "/api/items/it_1");
    SVC_CHECK(m.route == NULL);
    SVC_CHECK_STR(m.allow, "GET, HEAD, DELETE, OPTIONS");
    m = do_match(p, rt, "DELETE", "/api/items");
    SVC_CHECK(m.route == NULL);
    SVC_CHECK_STR(m.allow, "GET, HEAD, POST, OPTIONS");
    m = do_match(p, rt, "POST", "/api/orgs/acme/items/x");
    SVC_CHECK(m.route == NULL);
    SVC_CHECK_STR(m.allow, "GET, HEAD, PATCH, OPTIONS");
    /* The most specific template names the resource: /api/items/new has
     * GET only, even though DELETE /api/items/:id would match the path. */
    m = do_match(p, rt, "DELETE", "/api/items/new");
    SVC_CHECK(m.route == NULL);
    SVC_CHECK_STR(m.allow, "GET, HEAD, OPTIONS");
    /* Methods are case-sensitive tokens (RFC 9110). */
    m = do_match(p, rt, "get", "/api/items");
    SVC_CHECK(m.route == NULL);
    SVC_CHECK_STR(m.allow, "GET, HEAD, POST, OPTIONS");
}

SVC_TEST(router_create_refuses_bad_tables)
{
    static const char *const unsafe[] = { "POST", "PUT", "PATCH", "DELETE" };
    svc_router_t *rt;
    int i;

    for (i = 0; i < 4; i++) {
        svc_route_t t[2] = { ROW(unsafe[i], "/api/x", SVC_AUTH_USER, SVC_SCOPE_READ), ROW_END };
        svc_route_t t2[2] = { ROW(unsafe[i], "/api/x", SVC_AUTH_USER, SVC_SCOPE_NONE), ROW_END };
        svc_route_t ok[2] = { ROW(unsafe[i], "/api/x", SVC_AUTH_USER, SVC_SCOPE_WRITE), ROW_END };
        svc_route_t ok2[2] = { ROW(unsafe[i], "/api/x", SVC_AUTH_USER, SVC_SCOPE_ADMIN), ROW_END };
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_EINVAL);
        SVC_CHECK_INT(svc_router_create(&rt, t2, p), APR_EINVAL);
        SVC_CHECK_INT(svc_router_create(&rt, ok, p), APR_SUCCESS);
        SVC_CHECK_INT(svc_router_create(&rt, ok2, p), APR_SUCCESS);
    }
    {
        /* TRACE would echo credentials and CONNECT is a proxy's: never routes. */
        svc_route_t t[2] = { ROW("TRACE", "/api/x", SVC_AUTH_NONE, SVC_SCOPE_NONE), ROW_END };
        svc_route_t t2[2] = { ROW("CONNECT", "/api/x", SVC_AUTH_NONE, SVC_SCOPE_NONE), ROW_END };
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_EINVAL);
        SVC_CHECK_INT(svc_router_create(&rt, t2, p), APR_EINVAL);
    }
    {
        /* Safe methods may be read-scoped; unauthenticated routes have no scope. */
        svc_route_t t[4] = {
            ROW("GET", "/api/x", SVC_AUTH_USER, SVC_SCOPE_READ),
            ROW("POST", "/api/login", SVC_AUTH_NONE, SVC_SCOPE_NONE),
            ROW("POST", "/webhooks/vcs", SVC_AUTH_WEBHOOK, SVC_SCOPE_NONE),
            ROW_END
        };
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_SUCCESS);
    }
    {
        /* A raw body is the handler's to read: a schema on it would never apply. */
        static const svc_field_t schema[] = { SVC_FIELD_END };
        svc_route_t t[2] = { ROW("POST", "/webhooks/vcs", SVC_AUTH_WEBHOOK, SVC_SCOPE_NONE),
                             ROW_END };
        t[0].flags = SVC_RF_RAW_BODY;
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_SUCCESS);
        t[0].body = schema;
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_EINVAL);
    }
    {
        svc_route_t t[4] = {
            ROW("GET", "/api/x/:id", SVC_AUTH_USER, SVC_SCOPE_READ),
            ROW("DELETE", "/api/x/:id", SVC_AUTH_USER, SVC_SCOPE_WRITE),
            ROW("GET", "/api/x/:id", SVC_AUTH_USER, SVC_SCOPE_ADMIN),
            ROW_END
        };
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_EINVAL);
    }
    {
        svc_route_t t[2] = { ROW("GET", "api/x", SVC_AUTH_NONE, SVC_SCOPE_NONE), ROW_END };
        svc_route_t t2[2] = { ROW("GET", "/api/x/", SVC_AUTH_NONE, SVC_SCOPE_NONE), ROW_END };
        svc_route_t t3[2] = { ROW("GET", "/api/x", SVC_AUTH_NONE, SVC_SCOPE_NONE), ROW_END };
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_EINVAL);
        SVC_CHECK_INT(svc_router_create(&rt, t2, p), APR_EINVAL);
        t3[0].handler = NULL;
        SVC_CHECK_INT(svc_router_create(&rt, t3, p), APR_EINVAL);
    }
    {
        svc_route_t t[2] = {
            ROW("GET", "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q", SVC_AUTH_NONE, SVC_SCOPE_NONE),
            ROW_END
        };
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_EINVAL);
    }
    /* The real table is sound. */
    SVC_CHECK_INT(svc_router_create(&rt, svc_route_table(p, svc_areas), p), APR_SUCCESS);
}

/*
 * Six templates on which the specificity order of the router's sort is not
 * transitive (lengths differ, so some pairs are ordered by the literal-first
 * rule and others by path text); with glibc's qsort the literal /b/b/b then
 * sorts after /b/b/:p and loses to it.
 */
SVC_TEST(router_literal_beats_param_with_mixed_lengths)
{
    static const svc_route_t t[] = {
        ROW("GET", "/a/:p/:p", SVC_AUTH_NONE, SVC_SCOPE_NONE),
        ROW("GET", "/b/b/b", SVC_AUTH_NONE, SVC_SCOPE_NONE),
        ROW("GET", "/b", SVC_AUTH_NONE, SVC_SCOPE_NONE),
        ROW("GET", "/b/b/:p", SVC_AUTH_NONE, SVC_SCOPE_NONE),
        ROW("GET", "/:p/:p/b", SVC_AUTH_NONE, SVC_SCOPE_NONE),
        ROW("GET", "/:p/a", SVC_AUTH_NONE, SVC_SCOPE_NONE),
        ROW_END
    };
    svc_router_t *rt = NULL;
    match_t m;

    SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_SUCCESS);
    if (!rt) {
        return;
    }
    m = do_match(p, rt, "GET", "/b/b/b");
    SVC_CHECK(m.route == &t[1]);
    m = do_match(p, rt, "GET", "/b/b/x");
    SVC_CHECK(m.route == &t[3]);
}

/*
 * The same property over many random tables: for every concrete path, the
 * route found is the one whose literal segments come first, position by
 * position (the expectation is computed here, not by the router).
 */
SVC_TEST(router_specificity_property)
{
    static const char *const segs[] = { "a", "b", ":p" };
    static const char *const words[] = { "a", "b", "x" };
    apr_uint32_t seed = 12345;
    int iter, failures = 0;

#define NEXT_RAND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
    for (iter = 0; iter < 5000 && failures < 3; iter++) {
        svc_route_t t[11];
        const char *paths[10];
        apr_pool_t *sub;
        svc_router_t *rt;
        int n = 0, i, len, c;

        apr_pool_create(&sub, p);
        memset(t, 0, sizeof(t));
        while (n < 10) {
            int k, segs_n = 1 + (int)(NEXT_RAND() % 3);
            const char *tp = "";
            for (k = 0; k < segs_n; k++) {
                tp = apr_pstrcat(sub, tp, "/", segs[NEXT_RAND() % 3], NULL);
            }
            for (i = 0; i < n && strcmp(paths[i], tp) != 0; i++) {
            }
            if (i < n) {
                continue;
            }
            paths[n] = tp;
            t[n].method = "GET";
            t[n].path = tp;
            t[n].handler = h_dummy;
            /* Public: a user route would have to name its scope. */
            t[n].auth = SVC_AUTH_NONE;
            n++;
        }
        if (svc_router_create(&rt, t, sub) != APR_SUCCESS) {
            SVC_CHECK(!"router refused a random table");
            apr_pool_destroy(sub);
            break;
        }
        for (len = 1; len <= 3; len++) {
            int total = len == 1 ? 3 : len == 2 ? 9 : 27;
            for (c = 0; c < total; c++) {
                const char *parts[3], *path = "";
                int best = -1, k, cc = c;
                unsigned bestmask = 0;
                match_t m;

                for (k = 0; k < len; k++) {
                    parts[k] = words[cc % 3];
                    cc /= 3;
                    path = apr_pstrcat(sub, path, "/", parts[k], NULL);
                }
                for (i = 0; i < n; i++) {
                    /* Walk the template: literal segments must equal the path's. */
                    const char *s = paths[i];
                    unsigned mask = 0;
                    int ok = 1;
                    k = 0;
                    while (*s == '/' && ok) {
                        apr_size_t sl = strcspn(s + 1, "/");
                        if (k >= len) {
                            ok = 0;
                        }
                        else if (s[1] == ':') {
                            mask |= 1u << (len - 1 - k);
                        }
                        else if (strlen(parts[k]) != sl || strncmp(s + 1, parts[k], sl) != 0) {
                            ok = 0;
                        }
                        k++;
                        s += 1 + sl;
                    }
                    if (ok && k == len && (best < 0 || mask < bestmask)) {
                        best = i;
                        bestmask = mask;
                    }
                }
                m = do_match(sub, rt, "GET", path);
                if (m.route != (best >= 0 ? &t[best] : NULL)) {
                    fprintf(stderr, "%s:%d: path %s matched %s, expected %s; table:", __FILE__,
                            __LINE__, path, m.route ? m.route->path : "(none)",
                            best >= 0 ? paths[best] : "(none)");
                    for (i = 0; i < n; i++) {
                        fprintf(stderr, " %s", paths[i]);
                    }
                    fprintf(stderr, "\n");
                    svc_test_failed_checks++;
                    failures++;
                    len = 4;
                    break;
                }
            }
        }
        apr_pool_destroy(sub);
    }
#undef NEXT_RAND
}

/* Every row of the real table is reachable: its own method and a concrete
 * path made from its template answer with that very row. */
SVC_TEST(router_reaches_every_real_route)
{
    const svc_route_t *table = svc_route_table(p, svc_areas), *r;
    svc_router_t *rt = NULL;

    SVC_CHECK_INT(svc_router_create(&rt, table, p), APR_SUCCESS);
    if (!rt) {
        return;
    }
    for (r = table; r->method; r++) {
        const char *s = r->path, *path = "";
        match_t m;

        while (*s) {
            apr_size_t n = strcspn(s + 1, "/");
            path = apr_pstrcat(p, path, "/",
                               s[1] == ':' ? "v9Zq" : apr_pstrmemdup(p, s + 1, n), NULL);
            s += 1 + n;
        }
        m = do_match(p, rt, r->method, path);
        if (m.route != r) {
            fprintf(stderr, "%s:%d: %s %s (as %s) matched %s %s\n", __FILE__, __LINE__,
                    r->method, r->path, path, m.route ? m.route->method : "-",
                    m.route ? m.route->path : "(none)");
            svc_test_failed_checks++;
        }
        if (strcmp(r->method, "GET") == 0) {
            m = do_match(p, rt, "HEAD", path);
            SVC_CHECK(m.route == r);
        }
    }
}

SVC_TEST(route_helpers)
{
    svc_route_t r = ROW("GET", "/api/orgs/:orgSlug", SVC_AUTH_USER, SVC_SCOPE_READ);

    SVC_CHECK(svc_route_is_tenant(&r));
    r.path = "/api/orgs/:orgSlug/members/:userId";
    SVC_CHECK(svc_route_is_tenant(&r));
    r.path = "/api/orgs/:orgSlugs";
    SVC_CHECK(!svc_route_is_tenant(&r));
    r.path = "/api/orgs";
    SVC_CHECK(!svc_route_is_tenant(&r));
    r.path = "/api/me";
    SVC_CHECK(!svc_route_is_tenant(&r));
    /* The web UI's paths of an org that the service answers itself. */
    r.path = "/orgs/:orgSlug/vcs/install";
    SVC_CHECK(svc_route_is_tenant(&r));
    r.path = "/orgs/:orgSlugs/vcs/install";
    SVC_CHECK(!svc_route_is_tenant(&r));
    r.path = "/xapi/orgs/:orgSlug";
    SVC_CHECK(!svc_route_is_tenant(&r));
    r.path = "/admin/vcs-app/setup";
    SVC_CHECK(!svc_route_is_tenant(&r));
    SVC_CHECK(svc_method_is_unsafe("POST"));
    SVC_CHECK(svc_method_is_unsafe("PUT"));
    SVC_CHECK(svc_method_is_unsafe("PATCH"));
    SVC_CHECK(svc_method_is_unsafe("DELETE"));
    SVC_CHECK(!svc_method_is_unsafe("GET"));
    SVC_CHECK(!svc_method_is_unsafe("HEAD"));
    SVC_CHECK(!svc_method_is_unsafe("OPTIONS"));
}

/* ---------------------------------------------------------------------- */
/* OpenAPI                                                                 */

/* "/a/:id/b" -> "/a/{id}/b", written independently of the code. */
static const char *oapi_path(apr_pool_t *p, const char *tmpl, apr_array_header_t *names)
{
    char *out = apr_palloc(p, strlen(tmpl) * 2 + 1), *o = out;
    const char *s = tmpl;

    while (*s) {
        if (*s == ':' && s > tmpl && s[-1] == '/') {
            const char *e = s + 1;
            while (*e && *e != '/') {
                e++;
            }
            *o++ = '{';
            memcpy(o, s + 1, (apr_size_t)(e - s - 1));
            o += e - s - 1;
            *o++ = '}';
            APR_ARRAY_PUSH(names, const char *) = apr_pstrmemdup(p, s + 1,
                                                                 (apr_size_t)(e - s - 1));
            s = e;
        }
        else {
            *o++ = *s++;
        }
    }
    *o = '\0';
    return out;
}

static const char *lower(apr_pool_t *p, const char *s)
{
    char *out = apr_pstrdup(p, s), *c;

    for (c = out; *c; c++) {
        *c = (char)apr_tolower(*c);
    }
    return out;
}

/* svc_redact_query: values hidden, names and layout kept, every value seen. */
static void collect_value(void *baton, const char *v, apr_size_t n)
{
    apr_array_header_t *seen = baton;

    APR_ARRAY_PUSH(seen, char *) = apr_pstrmemdup(seen->pool, v, n);
}

SVC_TEST(redact_query_hides_values_only)
{
    apr_array_header_t *seen = apr_array_make(p, 4, sizeof(char *));

    SVC_CHECK_STR(svc_redact_query(p, "code=abc&state=d%20e", collect_value, seen),
                  "code=[REDACTED]&state=[REDACTED]");
    SVC_CHECK_INT(seen->nelts, 2);
    SVC_CHECK_STR(APR_ARRAY_IDX(seen, 0, char *), "abc");
    SVC_CHECK_STR(APR_ARRAY_IDX(seen, 1, char *), "d%20e");
    SVC_CHECK_STR(svc_redact_query(p, "bare", NULL, NULL), "[REDACTED]");
    SVC_CHECK_STR(svc_redact_query(p, "a=&&b=1", NULL, NULL), "a=[REDACTED]&&b=[REDACTED]");
    SVC_CHECK_STR(svc_redact_query(p, "", NULL, NULL), "");
}

/* The route table is the areas' routes in registry order, each row once. */
SVC_TEST(route_table_concatenates_the_areas)
{
    const svc_route_t *table = svc_route_table(p, svc_areas), *r, *t;
    const svc_area_t *const *a;
    int n = 0, rows = 0;

    for (a = svc_areas; *a; a++) {
        for (r = (*a)->routes; r->method; r++) {
            n++;
        }
    }
    SVC_CHECK(n > 0);
    t = table;
    for (a = svc_areas; *a; a++) {
        for (r = (*a)->routes; r->method; r++, t++) {
            SVC_CHECK(t->method && strcmp(t->method, r->method) == 0
                      && strcmp(t->path, r->path) == 0 && t->handler == r->handler);
        }
    }
    for (r = table; r->method; r++) {
        rows++;
    }
    SVC_CHECK_INT(rows, n);
    SVC_CHECK(svc_route_table(p, NULL)->method == NULL);
}

/* Each visible operation's tag is listed once, in the group of its area,
 * and the groups follow the registry. */
SVC_TEST(openapi_groups_tags_by_area)
{
    json_t *doc = svc_openapi_build(p, svc_areas, NULL);
    json_t *groups = json_object_get(doc, "x-tagGroups");
    json_t *tags = json_object_get(doc, "tags");
    const svc_area_t *const *a;
    size_t g = 0, i, j;

    SVC_CHECK(json_is_array(groups) && json_is_array(tags));
    for (a = svc_areas; *a; a++) {
        const svc_route_t *r;
        int visible = 0;
        json_t *group;

        for (r = (*a)->routes; r->method; r++) {
            visible += !(r->flags & SVC_RF_HIDDEN);
        }
        if (!visible) {
            continue;
        }
        group = json_array_get(groups, g++);
        SVC_CHECK_STR(json_string_value(json_object_get(group, "name")), (*a)->name);
        for (r = (*a)->routes; r->method; r++) {
            int found = 0;
            if (r->flags & SVC_RF_HIDDEN) {
                continue;
            }
            for (i = 0; i < json_array_size(json_object_get(group, "tags")); i++) {
                found |= strcmp(json_string_value(json_array_get(
                                    json_object_get(group, "tags"), i)), r->tag) == 0;
            }
            SVC_CHECK(found);
        }
    }
    SVC_CHECK_INT((int)json_array_size(groups), (int)g);
    for (i = 0; i < json_array_size(tags); i++) {
        const char *name = json_string_value(json_object_get(json_array_get(tags, i), "name"));
        int in_groups = 0;
        for (g = 0; g < json_array_size(groups); g++) {
            json_t *gt = json_object_get(json_array_get(groups, g), "tags");
            for (j = 0; j < json_array_size(gt); j++) {
                in_groups += strcmp(json_string_value(json_array_get(gt, j)), name) == 0;
            }
        }
        SVC_CHECK_INT(in_groups, 1);
    }
    json_decref(doc);
}

SVC_TEST(openapi_covers_the_route_table)
{
    json_t *doc = svc_openapi_build(p, svc_areas, "https://svc.example");
    json_t *paths = json_object_get(doc, "paths");
    apr_hash_t *op_ids = apr_hash_make(p);
    const svc_route_t *r;
    int visible = 0, ops = 0;
    const char *k;
    json_t *item;

    SVC_CHECK_STR(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
    SVC_CHECK(json_is_object(json_object_get(doc, "info")));
    SVC_CHECK_STR(json_string_value(json_object_get(json_array_get(
                      json_object_get(doc, "servers"), 0), "url")), "https://svc.example");
    SVC_CHECK(json_is_object(paths));

    for (r = svc_route_table(p, svc_areas); r->method; r++) {
        apr_array_header_t *names = apr_array_make(p, 4, sizeof(const char *));
        const char *path = oapi_path(p, r->path, names);
        json_t *op = json_object_get(json_object_get(paths, path), lower(p, r->method));
        json_t *params, *prm;
        size_t i;
        int j;

        if (r->flags & SVC_RF_HIDDEN) {
            if (op) {
                fprintf(stderr, "hidden route %s %s is documented\n", r->method, r->path);
                svc_test_failed_checks++;
            }
            continue;
        }
        visible++;
        if (!json_is_object(op)) {
            fprintf(stderr, "route %s %s missing as %s %s\n", r->method, r->path,
                    lower(p, r->method), path);
            svc_test_failed_checks++;
            continue;
        }
        SVC_CHECK_STR(json_string_value(json_object_get(op, "operationId")), r->op_id);
        SVC_CHECK(r->op_id && !apr_hash_get(op_ids, r->op_id, APR_HASH_KEY_STRING));
        if (r->op_id) {
            apr_hash_set(op_ids, r->op_id, APR_HASH_KEY_STRING, r);
        }
        SVC_CHECK(json_is_object(json_object_get(json_object_get(op, "responses"),
                                                 apr_itoa(p, r->success ? r->success : 200))));
        /* Each path parameter is declared, in path, required. */
        params = json_object_get(op, "parameters");
        for (j = 0; j < names->nelts; j++) {
            const char *want = APR_ARRAY_IDX(names, j, const char *);
            int found = 0;
            json_array_foreach(params, i, prm) {
                /* Common ones ({orgSlug}) are components, referred to. */
                const char *ref = json_string_value(json_object_get(prm, "$ref"));
                if (ref && strncmp(ref, "#/components/parameters/", 24) == 0) {
                    prm = json_object_get(json_object_get(json_object_get(doc, "components"),
                                                          "parameters"), ref + 24);
                }
                if (json_is_object(prm) && json_string_value(json_object_get(prm, "name"))
                    && strcmp(json_string_value(json_object_get(prm, "name")), want) == 0
                    && strcmp(json_string_value(json_object_get(prm, "in")), "path") == 0
                    && json_is_true(json_object_get(prm, "required"))) {
                    found = 1;
                }
            }
            SVC_CHECK(found);
        }
        if (r->body) {
            json_t *schema = json_object_get(json_object_get(json_object_get(json_object_get(
                op, "requestBody"), "content"), "application/json"), "schema");
            json_t *req = json_object_get(schema, "required");
            json_t *props = json_object_get(schema, "properties");
            const svc_field_t *f;
            size_t nreq = 0, nfields = 0;

            SVC_CHECK(json_is_object(schema));
            SVC_CHECK_STR(json_string_value(json_object_get(schema, "type")), "object");
            SVC_CHECK(json_is_false(json_object_get(schema, "additionalProperties")));
            for (f = r->body; f->name; f++) {
                nfields++;
                SVC_CHECK(json_is_object(json_object_get(props, f->name)));
                if (f->required) {
                    int found = 0;
                    nreq++;
                    json_array_foreach(req, i, prm) {
                        found |= strcmp(json_string_value(prm), f->name) == 0;
                    }
                    if (!found) {
                        fprintf(stderr, "%s %s: required field %s not listed\n", r->method,
                                r->path, f->name);
                        svc_test_failed_checks++;
                    }
                }
            }
            SVC_CHECK_INT(json_array_size(req), nreq);
            SVC_CHECK_INT(json_object_size(props), nfields);
        }
        else if (r->flags & SVC_RF_STREAM_BODY) {
            /* A streamed body is the file itself, whatever its type. */
            SVC_CHECK(json_object_get(json_object_get(json_object_get(op, "requestBody"),
                                                      "content"), "*/*") != NULL);
        }
        else if (r->flags & SVC_RF_RAW_BODY) {
            /* The handler reads it: documented as any JSON, unconstrained. */
            SVC_CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(
                json_object_get(json_object_get(op, "requestBody"), "content"),
                "application/json"), "schema"), "$ref")), "#/components/schemas/JsonValue");
        }
        else {
            SVC_CHECK(json_object_get(op, "requestBody") == NULL);
        }
    }
    /* Nothing documented that the table does not have. */
    json_object_foreach(paths, k, item) {
        ops += (int)json_object_size(item);
        SVC_CHECK(k[0] == '/' && !strchr(k, ':'));
    }
    SVC_CHECK_INT(ops, visible);
    SVC_CHECK(visible > 0);
    json_decref(doc);
}

/*
 * A route the document cannot describe truthfully is refused
 * (svc_openapi_check; the server does not start with one): a JSON answer
 * without a schema, a tag its area does not describe, two schemas of one
 * name, an idempotent route that creates nothing, a stream of events no
 * area writes. The areas of this build pass.
 */
static const svc_col_t oc_keys[] = {
    { .key = "id", .type = SVC_COL_TEXT, .id = "itm" },
    SVC_COL_END
};
static const svc_schema_t oc_item = { .name = "Item", .keys = oc_keys };
static const svc_schema_t oc_item_too = { .name = "Item", .keys = oc_keys };
static const svc_tag_t oc_tags[] = { { "Items", "Things." }, { NULL, NULL } };

#define OC_ROW(...) { .method = "GET", .path = "/api/items", .handler = h_dummy,             \
                      .auth = SVC_AUTH_NONE, .op_id = "listItems", __VA_ARGS__ }

static const char *oc_check(apr_pool_t *p, const svc_route_t *routes)
{
    const svc_area_t area = { .name = "items", .description = "Items.", .routes = routes,
                              .tags = oc_tags };
    const svc_area_t *const areas[] = { &area, NULL };

    return svc_openapi_check(p, areas);
}

SVC_TEST(openapi_check_refuses_what_it_cannot_document)
{
    static const svc_route_t ok[] = {
        OC_ROW(.tag = "Items", .summary = "Items", .response = &oc_item), SVC_ROUTE_END
    };
    static const svc_route_t unsaid[] = {
        OC_ROW(.tag = "Items", .summary = "Items"), SVC_ROUTE_END
    };
    static const svc_route_t untagged[] = {
        OC_ROW(.tag = "Nobody's", .summary = "Items", .response = &oc_item), SVC_ROUTE_END
    };
    static const svc_route_t twice[] = {
        OC_ROW(.tag = "Items", .summary = "Items", .response = &oc_item),
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Items", .summary = "Make one", .success = 201,
          .response = &oc_item_too },
        SVC_ROUTE_END
    };
    static const svc_route_t idem[] = {
        OC_ROW(.tag = "Items", .summary = "Items", .response = &oc_item,
               .flags = SVC_RF_IDEMPOTENT), SVC_ROUTE_END
    };
    static const svc_route_t stream[] = {
        OC_ROW(.tag = "Items", .summary = "Items", .flags = SVC_RF_STREAM, .events = "item."),
        SVC_ROUTE_END
    };
    static const svc_route_t text[] = {
        OC_ROW(.tag = "Items", .summary = "Items", .flags = SVC_RF_TEXT, .response = &oc_item),
        SVC_ROUTE_END
    };
    static const svc_header_t h_one[] = {
        { .name = "X-Count", .type = SVC_COL_INT, .required = 1, .description = "How many.",
          .example = "3" },
        { NULL }
    };
    static const svc_header_t h_other[] = {
        { .name = "X-Count", .type = SVC_COL_INT, .required = 1,
          .description = "How many are left.", .example = "3" },
        { NULL }
    };
    static const svc_route_t same_header[] = {
        OC_ROW(.tag = "Items", .summary = "Items", .response = &oc_item, .headers = h_one),
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Items", .summary = "Make one", .success = 201,
          .response = &oc_item, .headers = h_one },
        SVC_ROUTE_END
    };
    static const svc_route_t header_twice[] = {
        OC_ROW(.tag = "Items", .summary = "Items", .response = &oc_item, .headers = h_one),
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Items", .summary = "Make one", .success = 201,
          .response = &oc_item, .headers = h_other },
        SVC_ROUTE_END
    };
    static const svc_field_t item_body[] = {
        { .name = "name", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 10 },
        SVC_FIELD_END
    };
    static const svc_route_t body_shown[] = {
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Items", .summary = "Make one", .success = 201,
          .response = &oc_item, .body = item_body, .body_example = "{\"name\": \"Bread\"}" },
        SVC_ROUTE_END
    };
    static const svc_route_t body_unshown[] = {
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Items", .summary = "Make one", .success = 201,
          .response = &oc_item, .body = item_body },
        SVC_ROUTE_END
    };
    static const svc_route_t body_refused[] = {
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Items", .summary = "Make one", .success = 201,
          .response = &oc_item, .body = item_body,
          .body_example = "{\"name\": \"A loaf of rye bread\"}" },
        SVC_ROUTE_END
    };
    static const svc_route_t body_broken[] = {
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Items", .summary = "Make one", .success = 201,
          .response = &oc_item, .body = item_body, .body_example = "{\"name\": " },
        SVC_ROUTE_END
    };
    const char *why;

    SVC_CHECK(svc_openapi_check(p, svc_areas) == NULL);
    /* A JSON body is shown by an example the route's own body check takes. */
    SVC_CHECK(oc_check(p, body_shown) == NULL);
    SVC_CHECK((why = oc_check(p, body_unshown)) != NULL && strstr(why, "no example"));
    SVC_CHECK((why = oc_check(p, body_refused)) != NULL && strstr(why, "refused")
              && strstr(why, "invalid_length"));
    SVC_CHECK((why = oc_check(p, body_broken)) != NULL && strstr(why, "not a JSON object"));
    /* One header, one meaning: two routes may send it, said the same way;
     * said two ways, the second would have been dropped without a word. */
    SVC_CHECK(oc_check(p, same_header) == NULL);
    SVC_CHECK((why = oc_check(p, header_twice)) != NULL && strstr(why, "X-Count")
              && strstr(why, "POST /api/items"));
    SVC_CHECK(oc_check(p, ok) == NULL);
    SVC_CHECK((why = oc_check(p, unsaid)) != NULL && strstr(why, "names no schema")
              && strstr(why, "GET /api/items"));
    SVC_CHECK((why = oc_check(p, untagged)) != NULL && strstr(why, "Nobody's"));
    SVC_CHECK((why = oc_check(p, twice)) != NULL && strstr(why, "two schemas are named Item"));
    SVC_CHECK((why = oc_check(p, idem)) != NULL && strstr(why, "idempotent"));
    SVC_CHECK((why = oc_check(p, stream)) != NULL && strstr(why, "no area writes"));
    SVC_CHECK((why = oc_check(p, text)) != NULL && strstr(why, "does not answer JSON"));
}

/* ---------------------------------------------------------------------- */
/* Secrets by reference                                                    */

#define KAT_SECRET "correct horse battery staple, 32+ bytes long!"

typedef struct {
    char dir[256];
} tmpdir_t;

static int tmp_open(tmpdir_t *td)
{
    const char *base = getenv("TMPDIR");

    apr_snprintf(td->dir, sizeof(td->dir), "%s/svc_ut_XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(td->dir) != NULL;
}

/* Writes a file with exactly this mode (umask notwithstanding). */
static const char *tmp_file(apr_pool_t *p, tmpdir_t *td, const char *name, const char *content,
                            apr_size_t len, mode_t mode)
{
    const char *path = apr_pstrcat(p, td->dir, "/", name, NULL);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    if (fd < 0) {
        return NULL;
    }
    if (write(fd, content, len) != (ssize_t)len || fchmod(fd, mode) != 0) {
        close(fd);
        return NULL;
    }
    close(fd);
    return path;
}

static void tmp_close(tmpdir_t *td)
{
    static const char *const names[] = { "a", "b", "c", "g", "o", "e", "s", "x", "exe", "bad",
                                         "dir" };
    char path[300];
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        apr_snprintf(path, sizeof(path), "%s/%s", td->dir, names[i]);
        if (unlink(path) != 0) {
            rmdir(path);
        }
    }
    SVC_CHECK(rmdir(td->dir) == 0);
}

static apr_status_t load(apr_pool_t *p, svc_config_t *conf, const char *ref, const char **perr)
{
    svc_config_defaults(conf, p);
    *perr = NULL;
    return svc_config_load_secret(conf, ref, p, perr);
}

/* The sub-keys of KAT_SECRET, derived with Python's hashlib (master =
 * BLAKE2b-256 of the secret; sub-key i = BLAKE2b-256 keyed by the master
 * with salt LE64(i) and personalisation "svc_pat_" / "svc_sess" /
 * "svc_box_" / "svc_sign": libsodium's crypto_kdf_derive_from_key). Every stored PAT
 * hash depends on these: a change must be deliberate. */
static void check_kat_keys(apr_pool_t *p, const svc_config_t *conf)
{
    SVC_CHECK(conf->have_secret);
    SVC_CHECK_STR(hexof(p, conf->pat_key, 32),
                  "d449bb842310d73c1d07210fd228530c06993a18ac0ac008e97d36ca45890bca");
    SVC_CHECK_STR(hexof(p, conf->session_key, 32),
                  "e50e1772eb2d531b3359a34ae5b9691ad805572ad5653cb69e7b11e605ee077e");
    SVC_CHECK_STR(hexof(p, conf->box_key, 32),
                  "fe2c7b16a0cd048dab8e0a28e4e98ccc49fb223eefb30b06e97f4c53756d77b7");
    SVC_CHECK_STR(hexof(p, conf->signin_key, 32),
                  "1ce04d52652b23b5c345079c978248b5554396085d9274c8b47e1c9f87c20a58");
}

SVC_TEST(config_secret_from_file)
{
    svc_config_t c1, c2, c3;
    const char *err, *fa, *fb, *fc;
    tmpdir_t td;

    if (!tmp_open(&td)) {
        SVC_CHECK(!"mkdtemp");
        return;
    }
    fa = tmp_file(p, &td, "a", KAT_SECRET "\n", strlen(KAT_SECRET) + 1, 0600);
    fb = tmp_file(p, &td, "b", KAT_SECRET "\r\n", strlen(KAT_SECRET) + 2, 0400);
    fc = tmp_file(p, &td, "c", "another secret, also more than 32 bytes", 39, 0600);
    SVC_CHECK(fa && fb && fc);

    SVC_CHECK_INT(load(p, &c1, apr_pstrcat(p, "file:", fa, NULL), &err), APR_SUCCESS);
    check_kat_keys(p, &c1);
    /* Same secret (other line ending, read-only mode) -> same keys. */
    SVC_CHECK_INT(load(p, &c2, apr_pstrcat(p, "file:", fb, NULL), &err), APR_SUCCESS);
    SVC_CHECK(memcmp(c1.pat_key, c2.pat_key, 32) == 0);
    SVC_CHECK(memcmp(c1.session_key, c2.session_key, 32) == 0);
    SVC_CHECK(memcmp(c1.box_key, c2.box_key, 32) == 0);
    /* Another secret -> other keys, all three. */
    SVC_CHECK_INT(load(p, &c3, apr_pstrcat(p, "file:", fc, NULL), &err), APR_SUCCESS);
    SVC_CHECK(memcmp(c1.pat_key, c3.pat_key, 32) != 0);
    SVC_CHECK(memcmp(c1.session_key, c3.session_key, 32) != 0);
    SVC_CHECK(memcmp(c1.box_key, c3.box_key, 32) != 0);
    SVC_CHECK(memcmp(c1.signin_key, c3.signin_key, 32) != 0);
    /* The sub-keys are independent of each other. */
    SVC_CHECK(memcmp(c3.pat_key, c3.session_key, 32) != 0);
    SVC_CHECK(memcmp(c3.pat_key, c3.box_key, 32) != 0);
    SVC_CHECK(memcmp(c3.session_key, c3.box_key, 32) != 0);
    SVC_CHECK(memcmp(c3.signin_key, c3.pat_key, 32) != 0);
    SVC_CHECK(memcmp(c3.signin_key, c3.session_key, 32) != 0);
    SVC_CHECK(memcmp(c3.signin_key, c3.box_key, 32) != 0);
    tmp_close(&td);
}

SVC_TEST(config_secret_file_refusals)
{
    svc_config_t c;
    const char *err, *f;
    tmpdir_t td;

    if (!tmp_open(&td)) {
        SVC_CHECK(!"mkdtemp");
        return;
    }
    /* Readable or writable by group or others. */
    f = tmp_file(p, &td, "g", KAT_SECRET, strlen(KAT_SECRET), 0640);
    SVC_CHECK_INT(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err), APR_EACCES);
    SVC_CHECK(contains(err, "group or others"));
    SVC_CHECK(!c.have_secret);
    f = tmp_file(p, &td, "o", KAT_SECRET, strlen(KAT_SECRET), 0604);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err) != APR_SUCCESS);
    SVC_CHECK(!c.have_secret);
    f = tmp_file(p, &td, "x", KAT_SECRET, strlen(KAT_SECRET), 0620);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err) != APR_SUCCESS);
    f = tmp_file(p, &td, "s", KAT_SECRET, strlen(KAT_SECRET), 0602);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err) != APR_SUCCESS);
    /* Missing, empty, only a newline, too short (31 bytes, newline not counted). */
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", td.dir, "/missing", NULL), &err)
              != APR_SUCCESS);
    SVC_CHECK(err && *err);
    f = tmp_file(p, &td, "e", "", 0, 0600);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err) != APR_SUCCESS);
    SVC_CHECK(contains(err, "empty"));
    f = tmp_file(p, &td, "e", "\n", 1, 0600);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err) != APR_SUCCESS);
    f = tmp_file(p, &td, "bad", "0123456789012345678901234567890\n", 32, 0600);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err) != APR_SUCCESS);
    SVC_CHECK(contains(err, "32"));
    SVC_CHECK(!c.have_secret);
    /* 32 bytes exactly is enough. */
    f = tmp_file(p, &td, "bad", "01234567890123456789012345678901\n", 33, 0600);
    SVC_CHECK_INT(load(p, &c, apr_pstrcat(p, "file:", f, NULL), &err), APR_SUCCESS);
    /* A directory is not a secret file. */
    SVC_CHECK(mkdir(apr_pstrcat(p, td.dir, "/dir", NULL), 0700) == 0);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "file:", td.dir, "/dir", NULL), &err) != APR_SUCCESS);
    tmp_close(&td);
}

SVC_TEST(config_secret_env_exec_inline)
{
    svc_config_t c;
    const char *err, *exe, *bad;
    tmpdir_t td;
    static const char script[] = "#!/bin/sh\nprintf '%s\\n' '" KAT_SECRET "'\n";
    static const char failing[] = "#!/bin/sh\necho '" KAT_SECRET "'\nexit 3\n";

    /* env:NAME */
    setenv("SVC_UT_SECRET_ENV", KAT_SECRET, 1);
    SVC_CHECK_INT(load(p, &c, "env:SVC_UT_SECRET_ENV", &err), APR_SUCCESS);
    check_kat_keys(p, &c);
    unsetenv("SVC_UT_SECRET_ENV");
    SVC_CHECK(load(p, &c, "env:SVC_UT_SECRET_ENV", &err) != APR_SUCCESS);
    SVC_CHECK(contains(err, "SVC_UT_SECRET_ENV"));
    setenv("SVC_UT_SECRET_ENV", "short", 1);
    SVC_CHECK(load(p, &c, "env:SVC_UT_SECRET_ENV", &err) != APR_SUCCESS);
    unsetenv("SVC_UT_SECRET_ENV");

    /* exec:/program, whose standard output is the secret. */
    if (!tmp_open(&td)) {
        SVC_CHECK(!"mkdtemp");
        return;
    }
    exe = tmp_file(p, &td, "exe", script, strlen(script), 0700);
    SVC_CHECK(exe != NULL);
    SVC_CHECK_INT(load(p, &c, apr_pstrcat(p, "exec:", exe, NULL), &err), APR_SUCCESS);
    if (err) {
        fprintf(stderr, "exec: %s\n", err);
    }
    check_kat_keys(p, &c);
    /* A program that fails gives no secret, whatever it printed. */
    bad = tmp_file(p, &td, "bad", failing, strlen(failing), 0700);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "exec:", bad, NULL), &err) != APR_SUCCESS);
    SVC_CHECK(!c.have_secret);
    SVC_CHECK(load(p, &c, "exec:/bin/false", &err) != APR_SUCCESS);
    /* echo without arguments prints an empty line: an empty secret. */
    SVC_CHECK(load(p, &c, "exec:/bin/echo", &err) != APR_SUCCESS);
    SVC_CHECK(load(p, &c, apr_pstrcat(p, "exec:", td.dir, "/missing", NULL), &err)
              != APR_SUCCESS);
    tmp_close(&td);

    /* Inline values, unknown schemes, nothing. */
    SVC_CHECK(load(p, &c, "0123456789abcdef0123456789abcdef0123456789abcdef", &err)
              != APR_SUCCESS);
    SVC_CHECK(contains(err, "reference"));
    SVC_CHECK(load(p, &c, KAT_SECRET, &err) != APR_SUCCESS);
    SVC_CHECK(load(p, &c, "FILE:/etc/passwd", &err) != APR_SUCCESS);
    SVC_CHECK(load(p, &c, "file", &err) != APR_SUCCESS);
    SVC_CHECK(load(p, &c, "", &err) != APR_SUCCESS);
    SVC_CHECK(load(p, &c, NULL, &err) != APR_SUCCESS);
    SVC_CHECK(!c.have_secret);
}

/* ---------------------------------------------------------------------- */
/* Pages and cursors                                                       */

static svc_ctx_t *new_ctx(apr_pool_t *p)
{
    svc_config_t *conf = apr_palloc(p, sizeof(*conf));

    svc_config_defaults(conf, p);
    return svc_ctx_create(p, conf);
}

/* The page problem of a context: status 400 with exactly one error on `field`. */
static void check_page_problem(apr_pool_t *p, svc_ctx_t *ctx, const char *field,
                               const char *what)
{
    json_t *e;

    (void)p;
    if (!ctx->problem) {
        fprintf(stderr, "no problem for %s\n", what);
        svc_test_failed_checks++;
        return;
    }
    SVC_CHECK_INT(ctx->problem->status, 400);
    SVC_CHECK_STR(ctx->problem->code, "validation_failed");
    SVC_CHECK_INT(json_array_size(ctx->problem->errors), 1);
    e = json_array_get(ctx->problem->errors, 0);
    if (!json_is_object(e) || strcmp(json_string_value(json_object_get(e, "field")), field)) {
        fprintf(stderr, "%s: error not on field %s\n", what, field);
        svc_test_failed_checks++;
    }
}

SVC_TEST(page_limits)
{
    static const char *const bad[] = {
        "0", "201", "-1", "abc", "1e3", "", " 5", "5 ", "+5", "5.0", "0x10", "-0",
        "99999999999999999999", "2147483648", "10;", "1,2"
    };
    static const char *const good[][2] = {
        { "1", "2" }, { "50", "51" }, { "200", "201" }, { "007", "8" }
    };
    svc_page_t pg;
    svc_ctx_t *ctx;
    size_t i;

    ctx = new_ctx(p);
    SVC_CHECK_INT(svc_page_parse(ctx, &pg), APR_SUCCESS);
    SVC_CHECK_INT(pg.limit, 50);
    SVC_CHECK_STR(pg.fetch, "51");
    SVC_CHECK_STR(pg.before, "9223372036854775807");
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        ctx = new_ctx(p);
        apr_table_setn(ctx->query, "limit", good[i][0]);
        SVC_CHECK_INT(svc_page_parse(ctx, &pg), APR_SUCCESS);
        SVC_CHECK_STR(pg.fetch, good[i][1]);
        SVC_CHECK(ctx->problem == NULL);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ctx = new_ctx(p);
        apr_table_setn(ctx->query, "limit", bad[i]);
        SVC_CHECK_INT(svc_page_parse(ctx, &pg), SVC_EPROBLEM);
        check_page_problem(p, ctx, "limit", bad[i]);
    }
}

/* A list route for cursor tests: an org's projects, filtered by archived. */
static const svc_qparam_t cursor_query[] = {
    { "archived", "boolean", NULL },
    { NULL, NULL, NULL }
};
static const svc_route_t cursor_route = {
    .method = "GET", .path = "/api/orgs/:orgSlug/projects", .scope = SVC_SCOPE_READ,
    .role = SVC_ROLE_VIEWER, .flags = SVC_RF_PAGED, .op_id = "listProjects",
    .query = cursor_query
};
static const svc_route_t cursor_other_route = {
    .method = "GET", .path = "/api/orgs/:orgSlug/members", .scope = SVC_SCOPE_READ,
    .role = SVC_ROLE_VIEWER, .flags = SVC_RF_PAGED, .op_id = "listMembers"
};

/* A context on that list: org `org`, caller `user`, archived filter (or NULL). */
static svc_ctx_t *list_ctx(apr_pool_t *p, const svc_route_t *route, const char *org,
                           const char *user, const char *archived)
{
    svc_ctx_t *ctx = new_ctx(p);
    svc_principal_t *who = apr_pcalloc(p, sizeof(*who));
    svc_config_t *conf = (svc_config_t *)ctx->conf;

    memset(conf->cursor_key, 0x5c, sizeof(conf->cursor_key));
    ctx->route = route;
    apr_table_setn(ctx->params, "orgSlug", org);
    who->via = SVC_VIA_SESSION;
    who->user_id = user;
    ctx->who = who;
    if (archived) {
        apr_table_setn(ctx->query, "archived", archived);
    }
    return ctx;
}

/* Does `cursor` (issued elsewhere) parse on ctx? */
static int cursor_accepted(svc_ctx_t *ctx, const char *cursor)
{
    svc_page_t pg;

    apr_table_setn(ctx->query, "cursor", cursor);
    return svc_page_parse(ctx, &pg) == APR_SUCCESS;
}

SVC_TEST(page_cursors)
{
    static const char *const garbage[] = {
        "djE6MTIzNDU",                      /* a version 1 cursor: "v1:12345", forgeable */
        "djE6OTk5OTk5",                     /* "v1:999999", the forgery of the report */
        "djE6MTIzNDU=", "djI6MTIzNDU", "eDE6NQ", "djE6MA", "djE6LTU",
        "djE6MTIz+DU", "djE6MTIz/DU", "djE6 MTIzNDU", "", "!!!!", "12345", "v1:12345",
    };
    const apr_int64_t seqs[] = { 1, 2, 12345, 2147483648LL, 9007199254740993LL, INT64_MAX };
    svc_ctx_t *ctx;
    svc_page_t pg;
    const char *c;
    unsigned char *raw;
    apr_size_t n, i, bit;

    /* Round trips, with the limit free to change between pages. */
    for (i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
        c = svc_cursor_encode(list_ctx(p, &cursor_route, "acme", "usr_A", "true"), seqs[i]);
        ctx = list_ctx(p, &cursor_route, "acme", "usr_A", "true");
        apr_table_setn(ctx->query, "cursor", c);
        apr_table_setn(ctx->query, "limit", "10");
        SVC_CHECK_INT(svc_page_parse(ctx, &pg), APR_SUCCESS);
        SVC_CHECK_STR(pg.before, apr_psprintf(p, "%" APR_INT64_T_FMT, seqs[i]));
        SVC_CHECK_INT(pg.limit, 10);
        SVC_CHECK_STR(pg.fetch, "11");
        SVC_CHECK(strlen(c) <= 64);
    }
    /* Bound to the list: another route, org, filter value, caller or key. */
    c = svc_cursor_encode(list_ctx(p, &cursor_route, "acme", "usr_A", "true"), 12345);
    SVC_CHECK(cursor_accepted(list_ctx(p, &cursor_route, "acme", "usr_A", "true"), c));
    SVC_CHECK(!cursor_accepted(list_ctx(p, &cursor_other_route, "acme", "usr_A", "true"), c));
    SVC_CHECK(!cursor_accepted(list_ctx(p, &cursor_route, "other", "usr_A", "true"), c));
    SVC_CHECK(!cursor_accepted(list_ctx(p, &cursor_route, "acme", "usr_A", "false"), c));
    SVC_CHECK(!cursor_accepted(list_ctx(p, &cursor_route, "acme", "usr_A", NULL), c));
    SVC_CHECK(!cursor_accepted(list_ctx(p, &cursor_route, "acme", "usr_B", "true"), c));
    ctx = list_ctx(p, &cursor_route, "acme", "usr_A", "true");
    ctx->who->via = SVC_VIA_PAT;
    ctx->who->token_org_id = "org_X";
    SVC_CHECK(!cursor_accepted(ctx, c));
    ctx = list_ctx(p, &cursor_route, "acme", "usr_A", "true");
    ((svc_config_t *)ctx->conf)->cursor_key[0] ^= 1;
    SVC_CHECK(!cursor_accepted(ctx, c));
    /* An absent filter and an empty one are different lists. */
    c = svc_cursor_encode(list_ctx(p, &cursor_route, "acme", "usr_A", NULL), 7);
    SVC_CHECK(cursor_accepted(list_ctx(p, &cursor_route, "acme", "usr_A", NULL), c));
    SVC_CHECK(!cursor_accepted(list_ctx(p, &cursor_route, "acme", "usr_A", ""), c));
    /* Every single bit flipped is refused, and the refusal is the page problem. */
    SVC_CHECK(svc_b64url_decode(p, c, strlen(c), &raw, &n) == APR_SUCCESS);
    for (bit = 0; bit < n * 8; bit++) {
        unsigned char *copy = apr_pmemdup(p, raw, n);
        copy[bit / 8] ^= (unsigned char)(1 << (bit % 8));
        ctx = list_ctx(p, &cursor_route, "acme", "usr_A", NULL);
        apr_table_setn(ctx->query, "cursor", svc_b64url_encode(p, copy, n));
        SVC_CHECK_INT(svc_page_parse(ctx, &pg), SVC_EPROBLEM);
        check_page_problem(p, ctx, "cursor", "a flipped bit");
    }
    /* Keys we never issue, even with a valid MAC. */
    c = svc_cursor_encode(list_ctx(p, &cursor_route, "acme", "usr_A", NULL), 0);
    SVC_CHECK(!cursor_accepted(list_ctx(p, &cursor_route, "acme", "usr_A", NULL), c));
    c = svc_cursor_encode(list_ctx(p, &cursor_route, "acme", "usr_A", NULL), -5);
    SVC_CHECK(!cursor_accepted(list_ctx(p, &cursor_route, "acme", "usr_A", NULL), c));
    for (i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
        ctx = list_ctx(p, &cursor_route, "acme", "usr_A", NULL);
        apr_table_setn(ctx->query, "cursor", garbage[i]);
        SVC_CHECK_INT(svc_page_parse(ctx, &pg), SVC_EPROBLEM);
        check_page_problem(p, ctx, "cursor", garbage[i]);
    }
    ctx = list_ctx(p, &cursor_route, "acme", "usr_A", NULL);
    apr_table_setn(ctx->query, "cursor", repeat(p, 'A', 100));
    SVC_CHECK_INT(svc_page_parse(ctx, &pg), SVC_EPROBLEM);
    check_page_problem(p, ctx, "cursor", "long");
}

/* ---------------------------------------------------------------------- */
/* Problem documents                                                       */

/* Parses the rendered body; checks the members every problem has. */
static json_t *rendered(apr_pool_t *p, svc_ctx_t *ctx, int status, const char *title,
                        const char *code)
{
    json_error_t jerr;
    json_t *doc;

    svc_ctx_render_problem(ctx, ctx->problem);
    SVC_CHECK_INT(ctx->status, status);
    SVC_CHECK_STR(ctx->content_type, "application/problem+json");
    SVC_CHECK(ctx->resp_body && ctx->resp_len == strlen(ctx->resp_body));
    doc = json_loadb(ctx->resp_body ? ctx->resp_body : "", ctx->resp_len,
                     JSON_REJECT_DUPLICATES, &jerr);
    SVC_CHECK(json_is_object(doc));
    if (!doc) {
        return svc_json_pool(p, json_object());
    }
    svc_json_pool(p, doc);
    SVC_CHECK_STR(json_string_value(json_object_get(doc, "type")), "about:blank");
    SVC_CHECK_STR(json_string_value(json_object_get(doc, "title")), title);
    SVC_CHECK(json_is_integer(json_object_get(doc, "status")));
    SVC_CHECK_INT(json_integer_value(json_object_get(doc, "status")), status);
    SVC_CHECK_STR(json_string_value(json_object_get(doc, "code")), code);
    SVC_CHECK_STR(json_string_value(json_object_get(doc, "request_id")), "req_Ut0123456789");
    SVC_CHECK(json_is_string(json_object_get(doc, "detail")));
    return doc;
}

SVC_TEST(problem_rendering)
{
    svc_ctx_t *ctx = new_ctx(p);
    json_t *doc, *errs;

    ctx->request_id = "req_Ut0123456789";
    SVC_CHECK_INT(svc_fail(ctx, 404, "not_found", "No token %s here (%d).", "tok_x", 7),
                  SVC_EPROBLEM);
    doc = rendered(p, ctx, 404, "Not Found", "not_found");
    SVC_CHECK_STR(json_string_value(json_object_get(doc, "detail")), "No token tok_x here (7).");
    SVC_CHECK(json_object_get(doc, "errors") == NULL);
    SVC_CHECK_INT(json_object_size(doc), 6);

    /* Validation errors collect into one 400. */
    ctx = new_ctx(p);
    ctx->request_id = "req_Ut0123456789";
    svc_fail_field(ctx, "name", "required", "name is required.");
    svc_fail_field(ctx, "limit", "out_of_range", "limit must be from %d to %d.", 1, 200);
    doc = rendered(p, ctx, 400, "Bad Request", "validation_failed");
    errs = json_object_get(doc, "errors");
    SVC_CHECK_INT(json_array_size(errs), 2);
    SVC_CHECK_STR(json_string_value(json_object_get(json_array_get(errs, 0), "field")), "name");
    SVC_CHECK_STR(json_string_value(json_object_get(json_array_get(errs, 0), "code")),
                  "required");
    SVC_CHECK_STR(json_string_value(json_object_get(json_array_get(errs, 1), "message")),
                  "limit must be from 1 to 200.");

    /* A detail with quotes, newlines and non-ASCII stays valid JSON. */
    ctx = new_ctx(p);
    ctx->request_id = "req_Ut0123456789";
    svc_fail(ctx, 409, "conflict", "slug \"%s\"\n taken", "\xc3\xa9t\xc3\xa9");
    doc = rendered(p, ctx, 409, "Conflict", "conflict");
    SVC_CHECK_STR(json_string_value(json_object_get(doc, "detail")),
                  "slug \"\xc3\xa9t\xc3\xa9\"\n taken");
}

SVC_TEST(problem_mapping)
{
    static const struct {
        apr_status_t rv;
        int status;
        const char *title;
        const char *retry_after;
    } map[] = {
        { SVC_EDBDOWN, 503, "Service Unavailable", "1" },
        { SVC_ECONFLICT, 409, "Conflict", NULL },
        { SVC_EINTEGRITY, 409, "Conflict", NULL },
        { SVC_ENOTFOUND, 404, "Not Found", NULL },
        { SVC_EDB, 500, "Internal Server Error", NULL },
        { APR_EGENERAL, 500, "Internal Server Error", NULL },
        { APR_ENOMEM, 500, "Internal Server Error", NULL },
        /* SVC_EPROBLEM without a problem attached is a bug: 500, not a crash. */
        { SVC_EPROBLEM, 500, "Internal Server Error", NULL },
    };
    size_t i;

    for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        svc_ctx_t *ctx = new_ctx(p);
        svc_problem_t *pr;
        json_t *doc;
        json_error_t jerr;

        ctx->request_id = "req_Ut0123456789";
        pr = svc_ctx_problem(ctx, map[i].rv);
        SVC_CHECK(pr != NULL);
        if (!pr) {
            continue;
        }
        SVC_CHECK_INT(pr->status, map[i].status);
        if (map[i].retry_after) {
            SVC_CHECK_STR(apr_table_get(ctx->headers_out, "Retry-After"), map[i].retry_after);
        }
        else {
            SVC_CHECK(apr_table_get(ctx->headers_out, "Retry-After") == NULL);
        }
        svc_ctx_render_problem(ctx, pr);
        doc = json_loads(ctx->resp_body, 0, &jerr);
        SVC_CHECK(json_is_object(doc));
        SVC_CHECK_INT(json_integer_value(json_object_get(doc, "status")), map[i].status);
        SVC_CHECK_STR(json_string_value(json_object_get(doc, "title")), map[i].title);
        SVC_CHECK(json_string_length(json_object_get(doc, "code")) > 0);
        SVC_CHECK_STR(json_string_value(json_object_get(doc, "request_id")), "req_Ut0123456789");
        json_decref(doc);
    }
    {
        /* An attached problem wins over the status. */
        svc_ctx_t *ctx = new_ctx(p);
        svc_fail(ctx, 403, "insufficient_scope", "no");
        SVC_CHECK_INT(svc_ctx_problem(ctx, SVC_EPROBLEM)->status, 403);
        SVC_CHECK_STR(svc_ctx_problem(ctx, SVC_EPROBLEM)->code, "insufficient_scope");
    }
}

/* ---------------------------------------------------------------------- */
/* RFC 3339 output and the JSON text writer (svc_jbuf)                     */

#define USEC APR_INT64_C(1000000)

/* splitmix64 from a fixed seed: "random" inputs that a failure can replay. */
static apr_uint64_t next_rand(apr_uint64_t *state)
{
    apr_uint64_t z = (*state += APR_UINT64_C(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * APR_UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * APR_UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/*
 * svc_format_rfc3339 into an exactly sized stack buffer (so ASan sees a
 * write past it), copied into p; NULL when refused.
 */
static const char *rfc3339(apr_pool_t *p, apr_time_t t)
{
    char buf[SVC_RFC3339_LEN + 1];

    memset(buf, '#', sizeof(buf));
    if (svc_format_rfc3339(buf, t) != APR_SUCCESS) {
        return NULL;
    }
    /* Always the full width, NUL-terminated. */
    SVC_CHECK((char *)memchr(buf, '\0', sizeof(buf)) == buf + SVC_RFC3339_LEN);
    return apr_pstrdup(p, buf);
}

SVC_TEST(rfc3339_format_vectors)
{
    /* Seconds from GNU date (date -u -d TEXT +%s), not from the code. */
    static const struct {
        apr_int64_t secs;
        const char *text;
    } vec[] = {
        { 0, "1970-01-01T00:00:00Z" },
        { -86400, "1969-12-31T00:00:00Z" },
        { APR_INT64_C(951827696), "2000-02-29T12:34:56Z" },
        { APR_INT64_C(946684799), "1999-12-31T23:59:59Z" },
        { APR_INT64_C(1709251199), "2024-02-29T23:59:59Z" },
        /* 2100 and 1900 are not leap years, 1600 is. */
        { APR_INT64_C(4107542400), "2100-03-01T00:00:00Z" },
        { APR_INT64_C(4107542399), "2100-02-28T23:59:59Z" },
        { APR_INT64_C(-2203891200), "1900-03-01T00:00:00Z" },
        { APR_INT64_C(-11670912001), "1600-02-29T23:59:59Z" },
        { APR_INT64_C(-62035891200), "0004-02-29T00:00:00Z" },
        { APR_INT64_C(1795643654), "2026-11-25T21:54:14Z" },
        /* The ends of the range. */
        { APR_INT64_C(253402300799), "9999-12-31T23:59:59Z" },
        { APR_INT64_C(-62135596800), "0001-01-01T00:00:00Z" },
    };
    size_t i;

    for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
        SVC_CHECK_STR(rfc3339(p, vec[i].secs * USEC), vec[i].text);
        /* Any fraction of the second is dropped. */
        SVC_CHECK_STR(rfc3339(p, vec[i].secs * USEC + 999999), vec[i].text);
    }

    /* Floor, not truncation toward zero: before 1970 a fraction of a
     * second belongs to the second before. */
    SVC_CHECK_STR(rfc3339(p, -1), "1969-12-31T23:59:59Z");
    SVC_CHECK_STR(rfc3339(p, -999999), "1969-12-31T23:59:59Z");
    SVC_CHECK_STR(rfc3339(p, -1000000), "1969-12-31T23:59:59Z");
    SVC_CHECK_STR(rfc3339(p, -1000001), "1969-12-31T23:59:58Z");
    SVC_CHECK_STR(rfc3339(p, 999999), "1970-01-01T00:00:00Z");
    SVC_CHECK_STR(rfc3339(p, 1000000), "1970-01-01T00:00:01Z");
    /* The same at a day boundary (days are floored too). */
    SVC_CHECK_STR(rfc3339(p, 86400 * USEC - 1), "1970-01-01T23:59:59Z");
    SVC_CHECK_STR(rfc3339(p, -86400 * USEC), "1969-12-31T00:00:00Z");
    SVC_CHECK_STR(rfc3339(p, -86400 * USEC - 1), "1969-12-30T23:59:59Z");

    /* Years 1 to 9999 only: the last and first microseconds in, one step
     * further out (a second, and a microsecond) refused. */
    SVC_CHECK_STR(rfc3339(p, APR_INT64_C(253402300799) * USEC + 999999),
                  "9999-12-31T23:59:59Z");
    SVC_CHECK(rfc3339(p, APR_INT64_C(253402300800) * USEC) == NULL);
    SVC_CHECK(rfc3339(p, APR_INT64_C(253402300799) * USEC + 1000000) == NULL);
    SVC_CHECK_STR(rfc3339(p, APR_INT64_C(-62135596800) * USEC), "0001-01-01T00:00:00Z");
    SVC_CHECK(rfc3339(p, APR_INT64_C(-62135596801) * USEC) == NULL);
    SVC_CHECK(rfc3339(p, APR_INT64_C(-62135596800) * USEC - 1) == NULL);
    {
        char buf[SVC_RFC3339_LEN + 1];
        SVC_CHECK_INT(svc_format_rfc3339(buf, APR_INT64_C(253402300800) * USEC), APR_EINVAL);
        SVC_CHECK_INT(svc_format_rfc3339(buf, APR_INT64_C(-62135596801) * USEC), APR_EINVAL);
    }
    /* The extremes of apr_time_t are refused, not wrapped into range. */
    SVC_CHECK(rfc3339(p, APR_INT64_MAX) == NULL);
    SVC_CHECK(rfc3339(p, APR_INT64_MIN + 1) == NULL);
    SVC_CHECK(rfc3339(p, APR_INT64_MIN) == NULL);
}

/*
 * For random instants (any microsecond of any second of years 1..9999,
 * and more often near the places where the arithmetic turns: 1970, 2000,
 * the leap days, the ends of the range), the text is what glibc's gmtime_r
 * says, and svc_parse_rfc3339 reads it back as the floored second.
 */
SVC_TEST(rfc3339_format_round_trip)
{
    static const apr_int64_t lo = APR_INT64_C(-62135596800), hi = APR_INT64_C(253402300799);
    static const apr_int64_t anchors[] = {
        0, APR_INT64_C(946684800), APR_INT64_C(951782400), APR_INT64_C(4107542400),
        APR_INT64_C(-11670912001), APR_INT64_C(-62135596800), APR_INT64_C(253402300799)
    };
    apr_uint64_t seed = 20261125;
    int i, failures = 0;

    for (i = 0; i < 5000 && failures < 5; i++) {
        apr_int64_t secs, back = -1;
        apr_time_t t;
        const char *got, *want;
        time_t tt;
        struct tm tm;

        if (i % 4 == 0) {
            secs = anchors[next_rand(&seed) % (sizeof(anchors) / sizeof(anchors[0]))]
                   + (apr_int64_t)(next_rand(&seed) % 400001) - 200000;
            secs = secs < lo ? lo : secs > hi ? hi : secs;
        }
        else {
            secs = lo + (apr_int64_t)(next_rand(&seed) % (apr_uint64_t)(hi - lo + 1));
        }
        t = secs * USEC + (apr_int64_t)(next_rand(&seed) % 1000000);
        tt = (time_t)secs;
        if (!gmtime_r(&tt, &tm)) {
            SVC_CHECK(!"gmtime_r failed");
            return;
        }
        want = apr_psprintf(p, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                            tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        got = rfc3339(p, t);
        if (!got || strcmp(got, want) != 0 || svc_parse_rfc3339(got, &back) != APR_SUCCESS
            || back != secs) {
            fprintf(stderr, "%s:%d: t=%" APR_INT64_T_FMT ": got %s, want %s, read back %"
                    APR_INT64_T_FMT "\n", __FILE__, __LINE__, t, got ? got : "(refused)",
                    want, back);
            svc_test_failed_checks++;
            failures++;
        }
    }
}

/*
 * A sub-pool whose memory is not fresh zeroed pages: it was filled with 'Z'
 * and cleared, and APR hands the same blocks out again. A byte the code
 * under test forgets to write (the final NUL) then shows.
 */
static apr_pool_t *dirty_pool(apr_pool_t *p)
{
    apr_pool_t *sub;
    int i;

    apr_pool_create(&sub, p);
    for (i = 0; i < 256; i++) {
        memset(apr_palloc(sub, 1024), 'Z', 1024);
    }
    apr_pool_clear(sub);
    return sub;
}

/* s as svc_jbuf_string writes it, into a fresh buffer. */
static const char *jstr(apr_pool_t *p, const char *s)
{
    svc_jbuf_t b;

    svc_jbuf_init(&b, p, 0);
    svc_jbuf_string(&b, s);
    return svc_jbuf_text(&b, NULL);
}

SVC_TEST(jbuf_string_vectors)
{
    /* (Adjacent literals keep a hex escape from eating the next letter.) */
    static const char *const vec[][2] = {
        { "", "\"\"" },
        { "plain text", "\"plain text\"" },
        { "\"", "\"\\\"\"" },
        { "\\", "\"\\\\\"" },
        { "\b", "\"\\b\"" },
        { "\f", "\"\\f\"" },
        { "\n", "\"\\n\"" },
        { "\r", "\"\\r\"" },
        { "\t", "\"\\t\"" },
        { "\x01", "\"\\u0001\"" },
        { "\x1f", "\"\\u001f\"" },
        { "\x0b", "\"\\u000b\"" },
        /* DEL is not a control character to JSON (RFC 8259 section 7) and
         * jansson leaves it alone; neither is "/" without JSON_ESCAPE_SLASH. */
        { "\x7f", "\"\x7f\"" },
        { "/", "\"/\"" },
        { " ~", "\" ~\"" },
        /* UTF-8 passes through: é, U+1F600, and U+2028 (which jansson
         * does not escape either). */
        { "caf\xc3\xa9", "\"caf\xc3\xa9\"" },
        { "\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"" },
        { "\xe2\x80\xa8", "\"\xe2\x80\xa8\"" },
        /* Escapes at the start, at the end, back to back, between runs. */
        { "\x01" "x", "\"\\u0001x\"" },
        { "x" "\x1f", "\"x\\u001f\"" },
        { "\n\n\"\"", "\"\\n\\n\\\"\\\"\"" },
        { "a\"b\\c\nd\te", "\"a\\\"b\\\\c\\nd\\te\"" },
        { "<\xc3\xa9\t\xf0\x9f\x98\x80>", "\"<\xc3\xa9\\t\xf0\x9f\x98\x80>\"" },
    };
    apr_pool_t *dp = dirty_pool(p);
    svc_jbuf_t b;
    size_t i;
    int c;

    for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
        SVC_CHECK_STR(jstr(dp, vec[i][0]), vec[i][1]);
    }
    SVC_CHECK_STR(jstr(dp, NULL), "null");

    /* Every control character, the expectation built here: the five short
     * escapes, else \u00XX with lowercase hex (what PostgreSQL's json
     * writes; jansson writes the same code point in uppercase). */
    for (c = 1; c < 0x20; c++) {
        char in[2] = { (char)c, '\0' };
        const char *want;
        switch (c) {
        case '\b': want = "\"\\b\""; break;
        case '\f': want = "\"\\f\""; break;
        case '\n': want = "\"\\n\""; break;
        case '\r': want = "\"\\r\""; break;
        case '\t': want = "\"\\t\""; break;
        default:   want = apr_psprintf(p, "\"\\u%04x\"", (unsigned)c); break;
        }
        SVC_CHECK_STR(jstr(dp, in), want);
    }

    /* Strings among other output: each is appended, nothing else touched. */
    svc_jbuf_init(&b, dp, 0);
    svc_jbuf_raw(&b, "[", 1);
    svc_jbuf_string(&b, "a\n");
    svc_jbuf_raw(&b, ",", 1);
    svc_jbuf_string(&b, NULL);
    svc_jbuf_raw(&b, ",", 1);
    svc_jbuf_string(&b, "");
    svc_jbuf_raw(&b, "]", 1);
    SVC_CHECK_STR(svc_jbuf_text(&b, NULL), "[\"a\\n\",null,\"\"]");
}

/* Writes scalar value cp (not a surrogate, not 0) as UTF-8; returns the length. */
static apr_size_t utf8_put(char *out, apr_uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A random Unicode scalar value other than U+0000, weighted toward what
 * needs escaping and toward each UTF-8 length. */
static apr_uint32_t random_cp(apr_uint64_t *seed)
{
    static const char special[] = "\"\\/\x7f";
    apr_uint32_t cp;

    switch (next_rand(seed) % 8) {
    case 0:
        return 1 + (apr_uint32_t)(next_rand(seed) % 0x1f);
    case 1:
        return (unsigned char)special[next_rand(seed) % (sizeof(special) - 1)];
    case 2:
    case 3:
        return 0x20 + (apr_uint32_t)(next_rand(seed) % 0x5f);
    case 4:
        return 0x80 + (apr_uint32_t)(next_rand(seed) % (0x800 - 0x80));
    case 5:
        cp = 0x800 + (apr_uint32_t)(next_rand(seed) % (0x10000 - 0x800 - 0x800));
        return cp >= 0xd800 ? cp + 0x800 : cp;     /* skip the surrogates */
    case 6:
        return 0x10000 + (apr_uint32_t)(next_rand(seed) % (0x110000 - 0x10000));
    default:
        cp = 1 + (apr_uint32_t)(next_rand(seed) % (0x110000 - 0x800 - 1));
        return cp >= 0xd800 ? cp + 0x800 : cp;
    }
}

/*
 * jansson writes \u escapes with uppercase hex ("\u001F"), svc_jbuf with
 * lowercase: the one difference allowed. Lowercases the four digits of each
 * \u escape in s (JSON text), leaving everything else as it is.
 */
static void lower_u_escapes(char *s)
{
    for (; *s; s++) {
        if (*s == '\\') {
            int k;
            if (!*++s) {
                return;
            }
            if (*s != 'u') {
                continue;
            }
            for (k = 1; k <= 4 && s[k]; k++) {
                s[k] = (char)apr_tolower(s[k]);
            }
            s += k - 1;
        }
    }
}

/*
 * Thousands of random valid UTF-8 strings: svc_jbuf_string writes exactly
 * the bytes jansson's json_dumps writes for them (up to the case of the hex
 * digits, above), and jansson's parser reads them back as the same string.
 */
SVC_TEST(jbuf_string_matches_jansson)
{
    apr_uint64_t seed = 0x5eed;
    int i, failures = 0;

    for (i = 0; i < 5000 && failures < 5; i++) {
        char s[41 * 4 + 1];
        apr_size_t n = 0;
        int k, ncp = (int)(next_rand(&seed) % 41);
        json_t *js, *back;
        json_error_t jerr;
        char *theirs;
        const char *ours;

        for (k = 0; k < ncp; k++) {
            n += utf8_put(s + n, random_cp(&seed));
        }
        s[n] = '\0';
        ours = jstr(p, s);
        js = json_string(s);
        theirs = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
        json_decref(js);
        if (!theirs) {
            /* jansson refuses invalid UTF-8: the generator is broken. */
            SVC_CHECK(!"json_string refused a generated string");
            return;
        }
        lower_u_escapes(theirs);
        back = json_loads(ours, JSON_DECODE_ANY, &jerr);
        if (strcmp(ours, theirs) != 0 || !json_is_string(back)
            || json_string_length(back) != n || memcmp(json_string_value(back), s, n) != 0) {
            fprintf(stderr, "%s:%d: string %d: ours %s, jansson's %s\n", __FILE__, __LINE__,
                    i, ours, theirs);
            svc_test_failed_checks++;
            failures++;
        }
        json_decref(back);
        free(theirs);
    }
}

/*
 * Appends far past the initial capacity, in pieces of every size (some
 * larger than the whole buffer so far, some empty, some with NUL bytes):
 * the text is exactly the concatenation, and there is always room for the
 * NUL that svc_jbuf_text writes (cap > len).
 */
SVC_TEST(jbuf_growth)
{
    apr_size_t total = 0, len = 12345, wlen = 0;
    apr_uint64_t seed = 42;
    apr_pool_t *dp = dirty_pool(p);
    svc_jbuf_t b;
    char *want, *piece, *text;
    int i, bad = 0;

    /* An empty buffer is "" (even with a hint below the minimum). The
     * buffers live in reused memory, so a missing NUL would show. */
    svc_jbuf_init(&b, dp, 1);
    text = svc_jbuf_text(&b, &len);
    SVC_CHECK_STR(text, "");
    SVC_CHECK_INT(len, 0);

    /* An append that exactly fills the capacity still leaves room for the
     * NUL (the minimum capacity is 64). */
    svc_jbuf_init(&b, dp, 64);
    svc_jbuf_raw(&b, repeat(p, 'x', 64), 64);
    SVC_CHECK(b.cap > b.len);
    text = svc_jbuf_text(&b, &len);
    SVC_CHECK_INT(len, 64);
    SVC_CHECK_STR(text, repeat(p, 'x', 64));

    piece = apr_palloc(p, 20000);
    /* 2000 pieces of under 300 bytes and 20 of at most 20000. */
    want = apr_palloc(p, 2000 * 300 + 20 * 20000);
    svc_jbuf_init(&b, dp, 0);
    for (i = 0; i < 2000; i++) {
        apr_size_t n = i % 100 == 7 ? 2 * total + 1000 : (apr_size_t)(next_rand(&seed) % 300);
        apr_size_t k;

        n = n > 20000 ? 20000 : n;
        for (k = 0; k < n; k++) {
            piece[k] = (char)(k % 61 == 60 ? '\0' : 'a' + (i + (int)k) % 26);
        }
        svc_jbuf_raw(&b, piece, n);
        memcpy(want + wlen, piece, n);
        wlen += n;
        total += n;
        if (b.len != wlen || b.cap <= b.len) {
            bad++;
        }
        if (i % 97 == 0) {
            text = svc_jbuf_text(&b, &len);
            if (len != wlen || text[len] != '\0' || memcmp(text, want, wlen) != 0) {
                bad++;
            }
        }
    }
    SVC_CHECK_INT(bad, 0);
    SVC_CHECK(total > 100000);
    text = svc_jbuf_text(&b, &len);
    SVC_CHECK_INT(len, wlen);
    SVC_CHECK(text[len] == '\0' && memcmp(text, want, wlen) == 0);
    /* plen may be NULL, and reading the text does not end the buffer. */
    svc_jbuf_raw(&b, "!", 1);
    text = svc_jbuf_text(&b, NULL);
    SVC_CHECK(text[wlen] == '!' && text[wlen + 1] == '\0' && memcmp(text, want, wlen) == 0);

    /* A long string of escapes grows the buffer too: 10000 quotes. */
    svc_jbuf_init(&b, dp, 0);
    svc_jbuf_string(&b, repeat(p, '"', 10000));
    text = svc_jbuf_text(&b, &len);
    SVC_CHECK_INT(len, 20002);
    SVC_CHECK(text[0] == '"' && text[20001] == '"' && text[20002] == '\0');
    for (i = 1, bad = 0; i < 20001; i += 2) {
        bad += text[i] != '\\' || text[i + 1] != '"';
    }
    SVC_CHECK_INT(bad, 0);
}

int main(int argc, const char *const *argv)
{
    if (svc_crypto_init() != APR_SUCCESS) {
        fprintf(stderr, "svc_crypto_init failed\n");
        return 1;
    }
    return svc_test_run(argc, argv);
}

/* The random alphabet is used evenly: 620,000 characters put about 10,000
 * on each symbol (sd ~99), and 9,400..10,600 is six of those either side,
 * so a sound generator fails this about once in ten million runs. A biased
 * mapping (byte % 62 over all 256 values) puts ~12,100 on the first eight
 * symbols and ~9,700 on the rest. */
SVC_TEST(random_base62_is_uniform)
{
    static const char alphabet[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    int counts[62] = { 0 };
    const char *s = svc_random_base62(p, 620000);
    apr_size_t i;
    int bad = 0;

    SVC_CHECK_INT(strlen(s), 620000);
    for (i = 0; s[i]; i++) {
        const char *at = strchr(alphabet, s[i]);
        if (!at) {
            bad++;
            continue;
        }
        counts[at - alphabet]++;
    }
    SVC_CHECK_INT(bad, 0);
    for (i = 0; i < 62; i++) {
        SVC_CHECK(counts[i] > 9400 && counts[i] < 10600);
    }
    SVC_CHECK(strcmp(svc_random_base62(p, 22), svc_random_base62(p, 22)) != 0);
}

/* A body that could not be built is a failure for the problem builder, not
 * a 200 with "null". */
SVC_TEST(reply_json_refuses_null)
{
    svc_ctx_t *ctx = svc_ctx_create(p, NULL);

    SVC_CHECK(svc_reply_json(ctx, 200, NULL) != APR_SUCCESS);
    SVC_CHECK_INT(ctx->status, 0);
    SVC_CHECK(ctx->resp_body == NULL);
    SVC_CHECK_INT(svc_reply_json(ctx, 200, json_object()), APR_SUCCESS);
    SVC_CHECK_STR(ctx->resp_body, "{}");
}
