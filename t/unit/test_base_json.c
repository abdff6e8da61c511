/*
 * test_base_json.c: base/svc_json.c: strict JSON bodies (svc_json_parse_body),
 * body schemas (svc_json_check), slugs, addresses and integers, RFC 3339
 * times and the JSON text writer (svc_jbuf).
 *
 * Every expectation is independent of the code under test: published
 * vectors, values computed by hand or with another implementation (noted
 * where used), or inputs the test builds byte by byte itself.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_json.h"
#include "svc_crypto.h"

#include <apr_lib.h>
#include <time.h>

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
    { .name = "name", .type = SVC_FT_STRING, .required = 1, .min = 2, .max = 5,
      .description = "a one-line name" },
    { .name = "bio", .type = SVC_FT_TEXT, .max = 8 },
    { .name = "count", .type = SVC_FT_INT, .min = 1, .max = 100 },
    { .name = "flag", .type = SVC_FT_BOOL },
    { .name = "color", .type = SVC_FT_ENUM, .values = colors },
    { .name = "slug", .type = SVC_FT_SLUG },
    { .name = "email", .type = SVC_FT_EMAIL },
    { .name = "ref", .type = SVC_FT_ID, .values = prj_prefix },
    { .name = "meta", .type = SVC_FT_OBJECT },
    { .name = "note", .type = SVC_FT_STRING, .nullable = 1, .max = 10 },
    { .name = "level", .type = SVC_FT_INT, .nullable = 1, .min = -5, .max = 5 },
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
        { .name = "name", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 200 },
        { .name = "description", .type = SVC_FT_TEXT, .max = 2000 },
        { .name = "role", .type = SVC_FT_ENUM, .values = roles },
        { .name = "slug", .type = SVC_FT_SLUG },
        { .name = "days", .type = SVC_FT_INT, .nullable = 1, .min = 1, .max = 365 },
        SVC_FIELD_END
    };
    static const svc_field_t with_object[] = {
        { .name = "name", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 10 },
        { .name = "meta", .type = SVC_FT_OBJECT },
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
