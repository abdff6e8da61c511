/*
 * svc_jwt.h: JSON Web Tokens: HS256 for the service_session cookie, and
 * RS256 for the tokens the service signs for others to verify (the
 * code-hosting App's JWTs).
 *
 * The server fixes the algorithm: a session token whose header says
 * anything but {"alg":"HS256","typ":"JWT"} is refused before its signature
 * is looked at, so "none", RS256/HS256 key confusion and friends never get
 * a chance. RS256 tokens are only ever signed here, never verified.
 */
#ifndef SVC_JWT_H
#define SVC_JWT_H

#include "svc_types.h"

/* Longest token we will even parse; a cookie value beyond it is refused. */
#define SVC_JWT_MAX 4096

/* Signs the claims (borrowed) and returns the compact token. */
char *svc_jwt_sign_hs256(apr_pool_t *p, const unsigned char key[32], const json_t *claims);

/*
 * Verifies a compact token at time `now` (seconds): three base64url
 * segments, the fixed header, a constant-time signature check, then claims
 * that are an object with an integer "exp" in the future and, when present,
 * an integer "nbf" not in the future and an integer "iat". On success the
 * claims are bound to p. *perr says why not, for logs (never the token).
 */
apr_status_t svc_jwt_verify_hs256(apr_pool_t *p, const unsigned char key[32],
                                  const char *token, apr_int64_t now,
                                  json_t **pclaims, const char **perr);

/* OpenSSL's private key type (openssl/evp.h), without its headers. */
typedef struct evp_pkey_st EVP_PKEY;

/*
 * Loads an RSA private key of at least 2048 bits from PEM text (PKCS#1
 * "RSA PRIVATE KEY" or PKCS#8 "PRIVATE KEY", unencrypted). The key is freed
 * when p is cleared. APR_EINVAL with *perr saying why (never quoting the
 * key) when the text is not such a key.
 */
apr_status_t svc_rsa_key_from_pem(apr_pool_t *p, const char *pem, apr_size_t len,
                                  EVP_PKEY **pkey, const char **perr);

/*
 * Signs the claims (borrowed) with RS256 (RSASSA-PKCS1-v1_5 over SHA-256,
 * OpenSSL's EVP_DigestSign) under the header {"alg":"RS256","typ":"JWT"}.
 * NULL when OpenSSL fails. The key may be shared by threads.
 */
char *svc_jwt_sign_rs256(apr_pool_t *p, EVP_PKEY *key, const json_t *claims);

#endif /* SVC_JWT_H */
