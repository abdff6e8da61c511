/*
 * svc_tokens.h: personal access tokens.
 *
 * A secret is "svc_pat_" + 43 base62 characters (256 bits of randomness)
 * + a 6-character base62 CRC-32 of what precedes it, so a typo or a
 * truncated paste is recognised without touching the database, and a
 * leaked string can be recognised by scanners. Only a keyed BLAKE2b hash of
 * the secret is stored; the plaintext exists in the creation response only.
 */
#ifndef SVC_TOKENS_H
#define SVC_TOKENS_H

#include "svc_identity.h"

/* The format is base/'s secret token (svc_crypto.h), with this prefix. */
#define SVC_PAT_PREFIX "svc_pat_"
#define SVC_PAT_RANDOM SVC_SECRET_TOKEN_RANDOM
#define SVC_PAT_LEN SVC_SECRET_TOKEN_LEN

/* A fresh secret with its checksum. */
char *svc_pat_generate(apr_pool_t *p);

/* Prefix, length, alphabet and checksum: no database needed. */
int svc_pat_well_formed(const char *s);

/* The stored form: keyed BLAKE2b-256 under the server's PAT key. */
void svc_pat_hash(const svc_config_t *conf, const char *secret, unsigned char out[32]);

/*
 * Authenticates a bearer secret: on success fills *pwho. A 401 problem for
 * a malformed, unknown, expired or revoked token; SVC_EDBDOWN when the
 * database cannot say (never a 401 then). When this process has seen the
 * token before, the database's answer is deferred to the request's first
 * read, sent in the same round trip, and checked before that read's result
 * is used.
 */
apr_status_t svc_pat_authenticate(svc_ctx_t *ctx, const char *secret, svc_principal_t **pwho);

/*
 * Completes authentication before the response is final: runs a deferred
 * check no read has carried yet (see svc_pat_authenticate), answers with
 * its failure if it failed (a 401, or SVC_ERESTART when the cached
 * principal was stale), and records the token's last use when due.
 */
apr_status_t svc_pat_confirm(svc_ctx_t *ctx);

/* Route handlers. */
svc_handler_t svc_h_tokens_list, svc_h_tokens_create, svc_h_tokens_revoke;

/* The routes' request bodies. */
extern const svc_field_t svc_body_token_create[];
/* A token, and one just made with its secret (the answers' schemas). */
extern const svc_schema_t svc_schema_token, svc_schema_token_created;

#endif /* SVC_TOKENS_H */
