/*
 * svc_jwt.c: strict HS256 JWTs, and RS256 signing with OpenSSL.
 */
#include "svc_jwt.h"
#include "svc_crypto.h"
#include "svc_json.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <string.h>

/* The only header we issue and the only one we accept, byte for byte. */
static const char jwt_header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";

char *svc_jwt_sign_hs256(apr_pool_t *p, const unsigned char key[32], const json_t *claims)
{
    const char *payload = svc_json_dump(p, claims);
    char *signing_input = apr_pstrcat(
        p, svc_b64url_encode(p, (const unsigned char *)jwt_header, strlen(jwt_header)), ".",
        svc_b64url_encode(p, (const unsigned char *)payload, strlen(payload)), NULL);
    unsigned char mac[32];

    svc_hmac_sha256(mac, key, 32, (const unsigned char *)signing_input, strlen(signing_input));
    return apr_pstrcat(p, signing_input, ".", svc_b64url_encode(p, mac, sizeof(mac)), NULL);
}

static int claim_int(const json_t *claims, const char *name, int required,
                     apr_int64_t *pv, const char **perr, apr_pool_t *p)
{
    json_t *v = json_object_get(claims, name);

    if (!v) {
        if (required) {
            *perr = apr_psprintf(p, "claim %s missing", name);
            return 0;
        }
        *pv = 0;
        return 1;
    }
    if (!json_is_integer(v)) {
        *perr = apr_psprintf(p, "claim %s is not an integer", name);
        return 0;
    }
    *pv = (apr_int64_t)json_integer_value(v);
    return 1;
}

apr_status_t svc_jwt_verify_hs256(apr_pool_t *p, const unsigned char key[32],
                                  const char *token, apr_int64_t now,
                                  json_t **pclaims, const char **perr)
{
    const char *dot1, *dot2;
    unsigned char *hdr, *sig, *body;
    apr_size_t hlen, slen, blen, tlen;
    unsigned char mac[32];
    json_t *claims;
    json_error_t jerr;
    apr_int64_t exp, nbf, iat;

    *pclaims = NULL;
    tlen = token ? strlen(token) : 0;
    if (tlen == 0 || tlen > SVC_JWT_MAX) {
        *perr = "token empty or too long";
        return APR_EINVAL;
    }
    dot1 = strchr(token, '.');
    dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (!dot1 || !dot2 || strchr(dot2 + 1, '.')) {
        *perr = "token does not have three segments";
        return APR_EINVAL;
    }
    if (svc_b64url_decode(p, token, (apr_size_t)(dot1 - token), &hdr, &hlen) != APR_SUCCESS
        || svc_b64url_decode(p, dot1 + 1, (apr_size_t)(dot2 - dot1 - 1), &body, &blen)
           != APR_SUCCESS
        || svc_b64url_decode(p, dot2 + 1, strlen(dot2 + 1), &sig, &slen) != APR_SUCCESS) {
        *perr = "token segment is not base64url";
        return APR_EINVAL;
    }
    if (hlen != strlen(jwt_header) || memcmp(hdr, jwt_header, hlen) != 0) {
        *perr = "token header is not the HS256 header this server issues";
        return APR_EINVAL;
    }
    if (slen != sizeof(mac)) {
        *perr = "token signature has the wrong length";
        return APR_EINVAL;
    }
    svc_hmac_sha256(mac, key, 32, (const unsigned char *)token, (apr_size_t)(dot2 - token));
    if (!svc_ct_equal(mac, sig, sizeof(mac))) {
        *perr = "token signature does not verify";
        return APR_EINVAL;
    }
    claims = json_loadb((const char *)body, blen, JSON_REJECT_DUPLICATES, &jerr);
    if (!claims || !json_is_object(claims)) {
        json_decref(claims);
        *perr = "token claims are not a JSON object";
        return APR_EINVAL;
    }
    svc_json_pool(p, claims);
    if (!claim_int(claims, "exp", 1, &exp, perr, p)
        || !claim_int(claims, "nbf", 0, &nbf, perr, p)
        || !claim_int(claims, "iat", 0, &iat, perr, p)) {
        return APR_EINVAL;
    }
    if (exp <= now) {
        *perr = "token expired";
        return APR_EINVAL;
    }
    if (nbf > now) {
        *perr = "token not valid yet";
        return APR_EINVAL;
    }
    *pclaims = claims;
    return APR_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* RS256                                                                    */

static apr_status_t pkey_cleanup(void *data)
{
    EVP_PKEY_free(data);
    return APR_SUCCESS;
}

/* An encrypted key is not ours to unlock: refuse rather than prompt on a terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    return -1;
}

apr_status_t svc_rsa_key_from_pem(apr_pool_t *p, const char *pem, apr_size_t len,
                                  EVP_PKEY **pkey, const char **perr)
{
    BIO *bio;
    EVP_PKEY *key;

    *pkey = NULL;
    if (len == 0 || len > 64 * 1024) {
        *perr = "the private key is empty or too large";
        return APR_EINVAL;
    }
    bio = BIO_new_mem_buf(pem, (int)len);
    if (!bio) {
        *perr = "out of memory reading the private key";
        return APR_ENOMEM;
    }
    key = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
    BIO_free(bio);
    /* What OpenSSL queued may quote the input: drop it, never log it. */
    ERR_clear_error();
    if (!key) {
        *perr = "the private key is not an unencrypted PEM private key";
        return APR_EINVAL;
    }
    if (EVP_PKEY_base_id(key) != EVP_PKEY_RSA || EVP_PKEY_bits(key) < 2048) {
        EVP_PKEY_free(key);
        *perr = "the private key is not an RSA key of at least 2048 bits";
        return APR_EINVAL;
    }
    apr_pool_cleanup_register(p, key, pkey_cleanup, apr_pool_cleanup_null);
    *pkey = key;
    return APR_SUCCESS;
}

static const char rs256_header[] = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";

char *svc_jwt_sign_rs256(apr_pool_t *p, EVP_PKEY *key, const json_t *claims)
{
    const char *payload = svc_json_dump(p, claims);
    char *input = apr_pstrcat(
        p, svc_b64url_encode(p, (const unsigned char *)rs256_header, strlen(rs256_header)), ".",
        svc_b64url_encode(p, (const unsigned char *)payload, strlen(payload)), NULL);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char *sig = NULL;
    size_t siglen = 0;
    char *token = NULL;

    if (!md || !key) {
        goto cleanup;
    }
    if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1
        || EVP_DigestSign(md, NULL, &siglen, (const unsigned char *)input, strlen(input)) != 1
        || siglen == 0) {
        goto cleanup;
    }
    sig = apr_palloc(p, siglen);
    if (EVP_DigestSign(md, sig, &siglen, (const unsigned char *)input, strlen(input)) != 1) {
        goto cleanup;
    }
    token = apr_pstrcat(p, input, ".", svc_b64url_encode(p, sig, siglen), NULL);
cleanup:
    EVP_MD_CTX_free(md);
    ERR_clear_error();
    return token;
}
