/*
 * test_base_redact.c: base/svc_redact.c: secrets taken out of text for the
 * logs, printable excerpts, and query strings with their values hidden.
 *
 * Every expectation is independent of the code under test: published
 * vectors, values computed by hand or with another implementation (noted
 * where used), or inputs the test builds byte by byte itself.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_crypto.h"
#include "svc_redact.h"
#include "svc_tokens.h"     /* real tokens to redact */

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
    /*
     * A token right after something secret-shaped: the first match used to
     * take the token's "svc" as the end of its own run and leave
     * "_pat_<random part>" in the clear (found by t/fuzz/fuzz_auth.c; its
     * corpus keeps the input, regress-redact-adjacent).
     */
    CHECK_GONE(apr_pstrcat(p, "x svc_ab_AAAAAAAAAAAAAAAA", pat, " y", NULL), pat + 8);
    CHECK_GONE(apr_pstrcat(p, "svc_whsec_0123456789abcdefXYZ", pat, NULL), pat + 8);
    CHECK_GONE(apr_pstrcat(p, "svc_shr_0123456789abcdefXYZ", pat, pat, NULL), pat + 8);
    CHECK_REDACT(apr_pstrcat(p, "svc_ab_AAAAAAAAAAAAAAAA", pat, "!", NULL), "[REDACTED]!");
    /*
     * The same with any shape whose run stops at the token's '_': a
     * payment provider's key or a GitHub token took the token's "svc" and
     * left "_pat_<random part>" (t/fuzz/fuzz_auth.c again, after the case
     * above had been fixed on its own; regress-redact-overlap).
     */
    CHECK_GONE(apr_pstrcat(p, "Bearer x sk_test_AAAAAAAAAAAAAAAA", pat, NULL), pat + 8);
    CHECK_GONE(apr_pstrcat(p, "x ghp_A1b2C3d4E5f6G7h8I9j0K1l2", pat, " y", NULL), pat + 8);
    CHECK_GONE(apr_pstrcat(p, "whsec_0123456789abcdefXYZ", pat, NULL), pat + 8);
    CHECK_REDACT(apr_pstrcat(p, "a sk_live_AAAAAAAAAAAAAAAA", pat, ".", NULL), "a [REDACTED].");
    /* A JWT that starts inside another secret's run ends the redaction
     * at the end of its own. */
    CHECK_REDACT("svc_ab_eyJeyJeyJeyJeyJeyJeyJ.x-y end", "[REDACTED] end");
    /* Long runs of a secret's prefix, redacted as one (each "eyJ" of a run
     * without a dot used to scan the whole run again: quadratic). */
    CHECK_REDACT(apr_pstrcat(p, "svc_ab_", repeat_str(p, "eyJ", 20000), "-x y", NULL),
                 "[REDACTED]-x y");
    CHECK_REDACT(apr_pstrcat(p, "a ", repeat_str(p, "eyJ", 20000), " b", NULL),
                 apr_pstrcat(p, "a ", repeat_str(p, "eyJ", 20000), " b", NULL));
    /* A run ending in "svc_" that no secret follows stays as it was. */
    CHECK_REDACT("svc_ab_AAAAAAAAAAAAAAAAsvc_x", "[REDACTED]_x");
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
    /* A token as a URL's user name (GitHub's token-in-URL form): the whole
     * user information goes, not only the password after it. */
    CHECK_REDACT("git clone https://ghp_A1b2C3d4E5f6G7h8I9j0K1l2:x-oauth-basic@github.com/o/r",
                 "git clone https://[REDACTED]@github.com/o/r");
    CHECK_GONE("fetch https://x:y@h/ and https://svc_pat_ABCDEFGHIJKLMNOPQRST:x@h/r",
               "ABCDEFGHIJKLMNOPQRST");
    CHECK_REDACT("https://user:s3cret@example.com/", "https://user:[REDACTED]@example.com/");
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

int main(int argc, const char *const *argv)
{
    if (svc_crypto_init() != APR_SUCCESS) {
        fprintf(stderr, "svc_crypto_init failed\n");
        return 1;
    }
    return svc_test_run(argc, argv);
}
