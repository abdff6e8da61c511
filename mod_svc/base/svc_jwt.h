/*
 * svc_jwt.h: HS256 JSON Web Tokens for the service_session cookie.
 *
 * The server fixes the algorithm: a token whose header says anything but
 * {"alg":"HS256","typ":"JWT"} is refused before its signature is looked at,
 * so "none", RS256/HS256 key confusion and friends never get a chance.
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

#endif /* SVC_JWT_H */
