/*
 * fuzz_jwt.c: the session cookie's JWT (base/svc_jwt.c,
 * svc_jwt_verify_hs256): three base64url segments, the one header the
 * server issues, the HMAC, then the claims.
 *
 * A fuzzer cannot forge an HMAC, so most of what follows the signature
 * check would stay out of reach of raw tokens. The first byte of the input
 * picks what the rest is:
 *   0  a token as a client sends it (any bytes);
 *   1  the claims, as bytes: the target signs them under the fixed header
 *      with the configuration's session key, so every claims parser path
 *      is reached (JSON or not, exp, nbf, iat of every type);
 *   2  "<header>\n<claims>": both signed, so any header but the one
 *      issued must be refused even with a valid signature ("none",
 *      RS256, whitespace or key order changed).
 *
 * Properties: what verifies has claims that are an object with an integer
 * exp after now, and an nbf (when present) not after now; only the exact
 * issued header verifies; a token the server signs for accepted claims
 * verifies again with the same claims; a token cut or changed by one
 * character in its signature does not verify.
 */
#include "fuzz_svc.h"
#include "svc_jwt.h"

/* A fixed "now", so that what verifies does not depend on the day the
 * target runs: 2026-01-01T00:00:00Z. */
#define FUZZ_NOW 1767225600

static const char issued_header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    return 0;
}

/* header.claims.signature under the session key, from raw bytes. */
static char *sign_raw(apr_pool_t *p, const char *hdr, apr_size_t hlen, const char *claims,
                      apr_size_t clen)
{
    const unsigned char *key = fuzz_conf()->session_key;
    unsigned char mac[32];
    char *input = apr_pstrcat(p, svc_b64url_encode(p, (const unsigned char *)hdr, hlen), ".",
                              svc_b64url_encode(p, (const unsigned char *)claims, clen), NULL);

    svc_hmac_sha256(mac, key, 32, (const unsigned char *)input, strlen(input));
    return apr_pstrcat(p, input, ".", svc_b64url_encode(p, mac, sizeof(mac)), NULL);
}

static void check_verified(apr_pool_t *p, const char *token, json_t *claims)
{
    const unsigned char *key = fuzz_conf()->session_key;
    json_t *exp = json_object_get(claims, "exp"), *nbf = json_object_get(claims, "nbf");
    json_t *again = NULL;
    const char *why = NULL, *resigned;
    char *bad;
    apr_size_t n;

    FUZZ_ASSERT(json_is_object(claims));
    FUZZ_ASSERT(json_is_integer(exp) && json_integer_value(exp) > FUZZ_NOW);
    FUZZ_ASSERT(!nbf || (json_is_integer(nbf) && json_integer_value(nbf) <= FUZZ_NOW));
    FUZZ_ASSERT(strlen(token) <= SVC_JWT_MAX);

    /* What the server signs for these claims verifies to the same claims. */
    resigned = svc_jwt_sign_hs256(p, key, claims);
    if (strlen(resigned) <= SVC_JWT_MAX) {
        FUZZ_ASSERT(svc_jwt_verify_hs256(p, key, resigned, FUZZ_NOW, &again, &why)
                    == APR_SUCCESS);
        FUZZ_ASSERT(json_equal(again, claims));
    }
    /* One character of the signature changed, or the last one dropped. */
    n = strlen(token);
    bad = apr_pstrdup(p, token);
    bad[n - 1] = bad[n - 1] == 'A' ? 'B' : 'A';
    FUZZ_ASSERT(svc_jwt_verify_hs256(p, key, bad, FUZZ_NOW, &again, &why) != APR_SUCCESS);
    bad[n - 1] = '\0';
    FUZZ_ASSERT(svc_jwt_verify_hs256(p, key, bad, FUZZ_NOW, &again, &why) != APR_SUCCESS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = { data, size };
    const unsigned char *key;
    const char *token = NULL, *hdr, *claims_text, *why = NULL;
    apr_size_t hlen, clen;
    json_t *claims = NULL;
    unsigned mode;
    apr_pool_t *p;
    apr_status_t rv;

    fuzz_init();
    key = fuzz_conf()->session_key;
    apr_pool_create(&p, fuzz_root());
    mode = fuzz_byte(&in) % 3;
    switch (mode) {
    case 0:
        token = fuzz_cut(&in, p, -1, NULL);
        break;
    case 1:
        claims_text = fuzz_cut(&in, p, -1, &clen);
        if (claims_text) {
            token = sign_raw(p, issued_header, strlen(issued_header), claims_text, clen);
        }
        break;
    default:
        hdr = fuzz_cut(&in, p, '\n', &hlen);
        claims_text = fuzz_cut(&in, p, -1, &clen);
        if (hdr && claims_text) {
            token = sign_raw(p, hdr, hlen, claims_text, clen);
        }
        break;
    }
    if (!token) {
        goto done;
    }
    rv = svc_jwt_verify_hs256(p, key, token, FUZZ_NOW, &claims, &why);
    if (rv == APR_SUCCESS) {
        if (mode == 2) {
            FUZZ_ASSERT(hlen == strlen(issued_header)
                        && memcmp(hdr, issued_header, hlen) == 0);
        }
        check_verified(p, token, claims);
    }
    else {
        FUZZ_ASSERT(claims == NULL && why != NULL);
        /* The reason goes to logs: it never quotes the token. */
        FUZZ_ASSERT(strlen(token) < 8 || !strstr(why, token));
    }
done:
    apr_pool_destroy(p);
    return 0;
}
