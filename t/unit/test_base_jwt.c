/*
 * test_base_jwt.c: base/svc_jwt.c: the session JWT verifier against every
 * negative vector of issue 4 (alg none, other algorithms, key confusion,
 * exp and nbf, segment count, alphabet, size), each one signed correctly
 * where that matters, so the check under test is the one that refuses it;
 * valid tokens, foreign headers, bad signatures, claims and shapes.
 *
 *   test_base_jwt [TEST]                          run the tests
 *   test_base_jwt --sign HEADER_JSON CLAIMS_JSON  print a token whose header and
 *       claims are exactly these bytes, HMAC-SHA256-signed with the session
 *       key derived from $SVC_SECRET: t/identity/signin.t sends such forgeries to the
 *       real server, which must refuse them for the right reason.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_config.h"
#include "svc_crypto.h"
#include "svc_jwt.h"

#include <apr_env.h>
#include <sodium.h>
#include <time.h>

static const unsigned char test_key[32] = "0123456789abcdef0123456789abcdef";
#define HS256_HEADER "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"

/* A compact token of exactly these header and claims bytes, signed with key. */
static const char *forge(apr_pool_t *p, const unsigned char *key, const char *header,
                         const char *claims)
{
    const char *input = apr_pstrcat(
        p, svc_b64url_encode(p, (const unsigned char *)header, strlen(header)), ".",
        svc_b64url_encode(p, (const unsigned char *)claims, strlen(claims)), NULL);
    unsigned char mac[32];

    svc_hmac_sha256(mac, key, 32, (const unsigned char *)input, strlen(input));
    return apr_pstrcat(p, input, ".", svc_b64url_encode(p, mac, sizeof(mac)), NULL);
}

static apr_int64_t now_s(void)
{
    return (apr_int64_t)time(NULL);
}

static const char *claims_exp(apr_pool_t *p, apr_int64_t exp)
{
    return apr_psprintf(p, "{\"sub\":\"usr_x\",\"sid\":\"ses_x\",\"exp\":%" APR_INT64_T_FMT "}",
                        exp);
}

/* 1 when the token verifies at the current time. */
static int ok(apr_pool_t *p, const char *token)
{
    json_t *claims;
    const char *err = NULL;

    return svc_jwt_verify_hs256(p, test_key, token, now_s(), &claims, &err) == APR_SUCCESS;
}

SVC_TEST(roundtrip)
{
    json_t *c = svc_json_pool(p, json_pack("{s:s,s:s,s:I}", "sub", "usr_a", "sid", "ses_a",
                                           "exp", (json_int_t)(now_s() + 60)));
    const char *tok = svc_jwt_sign_hs256(p, test_key, c);
    json_t *out;
    const char *err;

    SVC_CHECK(svc_jwt_verify_hs256(p, test_key, tok, now_s(), &out, &err) == APR_SUCCESS);
    SVC_CHECK_STR(json_string_value(json_object_get(out, "sid")), "ses_a");
    /* The same bytes through our forge: the forge signs as the server does. */
    SVC_CHECK(ok(p, forge(p, test_key, HS256_HEADER, claims_exp(p, now_s() + 60))));
}

SVC_TEST(alg_none)
{
    const char *body = claims_exp(p, now_s() + 60);
    const char *hdr = "{\"alg\":\"none\",\"typ\":\"JWT\"}";
    const char *unsigned_tok = apr_pstrcat(
        p, svc_b64url_encode(p, (const unsigned char *)hdr, strlen(hdr)), ".",
        svc_b64url_encode(p, (const unsigned char *)body, strlen(body)), ".", NULL);

    SVC_CHECK(!ok(p, unsigned_tok));
    /* Even with a valid MAC over it, "none" is not our header. */
    SVC_CHECK(!ok(p, forge(p, test_key, hdr, body)));
    SVC_CHECK(!ok(p, forge(p, test_key, "{\"alg\":\"None\",\"typ\":\"JWT\"}", body)));
}

SVC_TEST(other_algorithms)
{
    const char *body = claims_exp(p, now_s() + 60);
    static const char *const headers[] = {
        "{\"alg\":\"HS384\",\"typ\":\"JWT\"}",
        "{\"alg\":\"HS512\",\"typ\":\"JWT\"}",
        "{\"alg\":\"ES256\",\"typ\":\"JWT\"}",
        "{\"alg\":\"hs256\",\"typ\":\"JWT\"}",
        "{\"alg\":\"HS256\"}",
        "{\"typ\":\"JWT\",\"alg\":\"HS256\"}",
        "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"crit\":[\"b64\"],\"b64\":false}",
        "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"alg\":\"none\"}",
        NULL
    };
    int i;

    /* Every one carries a MAC the server's key would accept. */
    for (i = 0; headers[i]; i++) {
        SVC_CHECK(!ok(p, forge(p, test_key, headers[i], body)));
    }
}

SVC_TEST(key_confusion)
{
    const char *body = claims_exp(p, now_s() + 60);
    /* The classic: an asymmetric header whose "public key" is used as the
     * HMAC secret, or a header naming its own key. */
    static const unsigned char pubkey_as_secret[32] = "-----BEGIN PUBLIC KEY-----\nMIIB";

    SVC_CHECK(!ok(p, forge(p, pubkey_as_secret, "{\"alg\":\"RS256\",\"typ\":\"JWT\"}", body)));
    SVC_CHECK(!ok(p, forge(p, test_key, "{\"alg\":\"RS256\",\"typ\":\"JWT\"}", body)));
    SVC_CHECK(!ok(p, forge(p, pubkey_as_secret, HS256_HEADER, body)));
    SVC_CHECK(!ok(p, forge(p, test_key,
                           "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"kid\":\"../../dev/null\"}",
                           body)));
    SVC_CHECK(!ok(p, forge(p, test_key,
                           "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"jwk\":{\"kty\":\"oct\","
                           "\"k\":\"AAAA\"}}", body)));
}

SVC_TEST(exp_and_nbf)
{
    apr_int64_t t = now_s();

    SVC_CHECK(!ok(p, forge(p, test_key, HS256_HEADER, "{\"sub\":\"usr_x\",\"sid\":\"ses_x\"}")));
    SVC_CHECK(!ok(p, forge(p, test_key, HS256_HEADER, claims_exp(p, t - 10))));
    SVC_CHECK(!ok(p, forge(p, test_key, HS256_HEADER, claims_exp(p, t - 1))));
    SVC_CHECK(!ok(p, forge(p, test_key, HS256_HEADER,
                           "{\"sub\":\"usr_x\",\"sid\":\"ses_x\",\"exp\":\"9999999999\"}")));
    SVC_CHECK(!ok(p, forge(p, test_key, HS256_HEADER,
                           "{\"sub\":\"usr_x\",\"sid\":\"ses_x\",\"exp\":9999999999.5}")));
    SVC_CHECK(!ok(p, forge(p, test_key, HS256_HEADER,
                           "{\"sub\":\"usr_x\",\"sid\":\"ses_x\",\"exp\":null}")));
    SVC_CHECK(!ok(p, forge(p, test_key, HS256_HEADER,
                           apr_psprintf(p, "{\"sub\":\"u\",\"sid\":\"s\",\"exp\":%"
                                        APR_INT64_T_FMT ",\"nbf\":%" APR_INT64_T_FMT "}",
                                        t + 600, t + 300))));
    SVC_CHECK(!ok(p, forge(p, test_key, HS256_HEADER,
                           apr_psprintf(p, "{\"sub\":\"u\",\"sid\":\"s\",\"exp\":%"
                                        APR_INT64_T_FMT ",\"nbf\":\"0\"}", t + 600))));
    SVC_CHECK(ok(p, forge(p, test_key, HS256_HEADER,
                          apr_psprintf(p, "{\"sub\":\"u\",\"sid\":\"s\",\"exp\":%"
                                       APR_INT64_T_FMT ",\"nbf\":%" APR_INT64_T_FMT "}",
                                       t + 600, t - 5))));
    /* Duplicate claims could mean two things to two parsers. */
    SVC_CHECK(!ok(p, forge(p, test_key, HS256_HEADER,
                           apr_psprintf(p, "{\"sub\":\"u\",\"sid\":\"s\",\"exp\":%"
                                        APR_INT64_T_FMT ",\"exp\":1}", t + 600))));
    SVC_CHECK(!ok(p, forge(p, test_key, HS256_HEADER, "[1,2,3]")));
}

SVC_TEST(shape)
{
    const char *good = forge(p, test_key, HS256_HEADER, claims_exp(p, now_s() + 60));
    const char *dot1 = strchr(good, '.'), *dot2 = strrchr(good, '.');
    char *bad;

    SVC_CHECK(ok(p, good));
    /* Wrong number of segments. */
    SVC_CHECK(!ok(p, apr_pstrmemdup(p, good, (apr_size_t)(dot2 - good))));
    SVC_CHECK(!ok(p, apr_pstrcat(p, good, ".", dot2 + 1, NULL)));
    SVC_CHECK(!ok(p, apr_pstrmemdup(p, good, (apr_size_t)(dot1 - good))));
    SVC_CHECK(!ok(p, ""));
    SVC_CHECK(!ok(p, ".."));
    /* Characters outside base64url, padding included. */
    SVC_CHECK(!ok(p, apr_pstrcat(p, good, "=", NULL)));
    bad = apr_pstrdup(p, good);
    bad[1] = '+';
    SVC_CHECK(!ok(p, bad));
    bad = apr_pstrdup(p, good);
    bad[(dot1 - good) + 2] = '/';
    SVC_CHECK(!ok(p, bad));
    bad = apr_pstrdup(p, good);
    bad[strlen(bad) - 3] = '!';
    SVC_CHECK(!ok(p, bad));
    bad = apr_pstrdup(p, good);
    bad[3] = ' ';
    SVC_CHECK(!ok(p, bad));
    /* Altered claims under the old signature, and a signature from another key. */
    bad = apr_pstrdup(p, good);
    bad[(dot1 - good) + 5] = bad[(dot1 - good) + 5] == 'A' ? 'B' : 'A';
    SVC_CHECK(!ok(p, bad));
    SVC_CHECK(!ok(p, forge(p, (const unsigned char *)"fedcba9876543210fedcba9876543210",
                           HS256_HEADER, claims_exp(p, now_s() + 60))));
    /* A truncated signature. */
    SVC_CHECK(!ok(p, apr_pstrmemdup(p, good, strlen(good) - 2)));
}

SVC_TEST(size)
{
    apr_size_t n = 1024 * 1024;
    char *huge = apr_palloc(p, n + 1);

    memset(huge, 'A', n);
    huge[n] = '\0';
    huge[10] = '.';
    huge[20] = '.';
    SVC_CHECK(!ok(p, huge));
    /* Just over the limit, with a valid token's shape, is refused unread. */
    SVC_CHECK(!ok(p, forge(p, test_key, HS256_HEADER,
                           apr_psprintf(p, "{\"exp\":%" APR_INT64_T_FMT ",\"pad\":\"%s\"}",
                                        now_s() + 60,
                                        svc_random_base62(p, SVC_JWT_MAX)))));
}


/* ---------------------------------------------------------------------- */
/* JWT                                                                     */

static const char *b64(apr_pool_t *p, const char *s)
{
    return svc_b64url_encode(p, (const unsigned char *)s, strlen(s));
}

static const unsigned char jwt_key[32] = {
    0x10, 0x21, 0x32, 0x43, 0x54, 0x65, 0x76, 0x87, 0x98, 0xa9, 0xba, 0xcb, 0xdc, 0xed, 0xfe, 0x0f,
    0x01, 0x12, 0x23, 0x34, 0x45, 0x56, 0x67, 0x78, 0x89, 0x9a, 0xab, 0xbc, 0xcd, 0xde, 0xef, 0xf0
};


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

/* The forging tool behind t/identity/signin.t's JWT vectors. */
static int sign_main(const char *header, const char *claims)
{
    apr_pool_t *p;
    svc_config_t conf;
    char *ref = NULL;
    const char *err = NULL;
    int rc = 0;

    apr_initialize();
    apr_pool_create(&p, NULL);
    svc_crypto_init();
    svc_config_defaults(&conf, p);
    if (apr_env_get(&ref, "SVC_SECRET", p) != APR_SUCCESS
        || svc_config_load_secret(&conf, ref, p, &err) != APR_SUCCESS) {
        fprintf(stderr, "test_base_jwt --sign: cannot load $SVC_SECRET: %s\n", err ? err : "unset");
        rc = 1;
    }
    else {
        printf("%s\n", forge(p, conf.session_key, header, claims));
    }
    svc_wipe(&conf, sizeof(conf));
    apr_pool_destroy(p);
    apr_terminate();
    return rc;
}

int main(int argc, const char *const *argv)
{
    if (argc == 4 && strcmp(argv[1], "--sign") == 0) {
        return sign_main(argv[2], argv[3]);
    }
    svc_crypto_init();
    return svc_test_run(argc, argv);
}
