/*
 * test_kernel_ctx.c: kernel/svc_ctx.c and kernel/svc_page.c: page limits and
 * cursors, problem documents (rendering, and the mapping of statuses), and
 * answers that could not be built.
 *
 * Every expectation is independent of the code under test: published
 * vectors, values computed by hand or with another implementation (noted
 * where used), or inputs the test builds byte by byte itself.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_areas.h"
#include "svc_config.h"
#include "svc_crypto.h"
#include "svc_ctx.h"
#include "svc_json.h"
#include "svc_page.h"
#include "svc_route.h"
#include "svc_utf8.h"

#include <string.h>

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

int main(int argc, const char *const *argv)
{
    if (svc_crypto_init() != APR_SUCCESS) {
        fprintf(stderr, "svc_crypto_init failed\n");
        return 1;
    }
    return svc_test_run(argc, argv);
}

/* ---------------------------------------------------------------------- */
/* A body's parse error, in a problem document                            */

/*
 * The message quotes what jansson quotes of the body: bytes cut at any
 * point of a UTF-8 sequence, or not UTF-8 at all. It must stay valid UTF-8,
 * or the problem document that carries it cannot be written and the client
 * gets the body "null" (found by t/fuzz/fuzz_json_body.c; the inputs are in
 * its corpus, regress-*).
 */
static int utf8_valid(const char *s)
{
    apr_size_t n = strlen(s), at = 0, k;
    unsigned long cp;

    while (at < n) {
        if ((k = svc_utf8_next((const unsigned char *)s + at, n - at, &cp)) == 0) {
            return 0;
        }
        at += k;
    }
    return 1;
}

static void check_message_renders(apr_pool_t *p, const char *body, apr_size_t len)
{
    svc_config_t *conf = apr_palloc(p, sizeof(*conf));
    const char *err = NULL;
    svc_ctx_t *ctx;
    json_t *o, *doc;

    SVC_CHECK_INT(svc_json_parse_body(&o, body, len, p, &err), APR_EINVAL);
    if (!err) {
        svc_test_failed_checks++;
        return;
    }
    SVC_CHECK(utf8_valid(err));
    svc_config_defaults(conf, p);
    ctx = svc_ctx_create(p, conf);
    svc_fail(ctx, 400, "invalid_json", "%s", err);
    svc_ctx_render_problem(ctx, ctx->problem);
    doc = svc_json_pool(p, json_loads(ctx->resp_body, 0, NULL));
    if (!json_is_object(doc)) {
        fprintf(stderr, "message \"%s\" gives the problem document %s\n", err,
                ctx->resp_body);
        svc_test_failed_checks++;
    }
    SVC_CHECK_STR(svc_json_str(doc, "code"), "invalid_json");
}

SVC_TEST(json_parse_message_is_utf8)
{
    /* An invalid escape after two 2-byte characters: jansson quotes the
     * token up to the escape's first byte, half a character. */
    static const char bad_escape[] =
        "{\"name\":\"\xcc\x92\xcc\x90" "4\\\xcc\x92\xcc\x90" "4\"}";
    int i, k;

    check_message_renders(p, bad_escape, sizeof(bad_escape) - 1);
    /* A repeated key of 2-byte characters, longer than jansson's 160 bytes
     * of message: cut in the middle of one, at either parity. */
    for (i = 0; i < 2; i++) {
        const char *key = i ? "x" : "";
        const char *body;
        for (k = 0; k < 120; k++) {
            key = apr_pstrcat(p, key, "\xc3\xa9", NULL);
        }
        body = apr_psprintf(p, "{\"%s\":1,\"%s\":2}", key, key);
        check_message_renders(p, body, strlen(body));
    }
    /* Bytes that are not UTF-8 where a value should start. */
    check_message_renders(p, "{\"a\":\xff\xfe}", 9);
}
