/*
 * test_jwt.c: the session JWT verifier against every negative vector of
 * issue 4 (alg none, other algorithms, key confusion, exp and nbf, segment
 * count, alphabet, size), each one signed correctly where that matters, so
 * the check under test is the one that refuses it.
 *
 *   test_jwt [TEST]                          run the tests
 *   test_jwt --sign HEADER_JSON CLAIMS_JSON  print a token whose header and
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
        fprintf(stderr, "test_jwt --sign: cannot load $SVC_SECRET: %s\n", err ? err : "unset");
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
