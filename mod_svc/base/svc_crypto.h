/*
 * svc_crypto.h: randomness, ids, encodings, MACs and secret comparison.
 * Everything here is libsodium underneath; nothing compares a secret with
 * strcmp.
 */
#ifndef SVC_CRYPTO_H
#define SVC_CRYPTO_H

#include "svc_types.h"

/* Once per process, before threads start. */
apr_status_t svc_crypto_init(void);

/* n random bytes from the system's generator. */
void svc_random_bytes(void *buf, apr_size_t n);

/* n characters drawn uniformly from [0-9A-Za-z]. */
char *svc_random_base62(apr_pool_t *p, apr_size_t n);

/* A new opaque id: prefix + 22 base62 characters (about 131 bits). */
char *svc_id_new(apr_pool_t *p, const char *prefix);

/* A CRC-32 (IEEE) as exactly 6 base62 characters, for token checksums. */
void svc_checksum62(const char *data, apr_size_t len, char out[7]);

/*
 * Secret tokens: prefix + 43 base62 characters (256 bits of randomness) + a
 * 6-character base62 CRC-32 of what precedes it, so a typo or a truncated
 * paste is recognised without a database, and scanners can recognise a
 * leaked string by its prefix. Personal access tokens ("svc_pat_") and
 * share links ("svc_shr_") use it; prefixes are 8 characters.
 */
#define SVC_SECRET_TOKEN_PREFIX_LEN 8
#define SVC_SECRET_TOKEN_RANDOM 43
#define SVC_SECRET_TOKEN_LEN (SVC_SECRET_TOKEN_PREFIX_LEN + SVC_SECRET_TOKEN_RANDOM + 6)

/* A fresh token with this 8-character prefix and its checksum. */
char *svc_secret_token_generate(apr_pool_t *p, const char *prefix);

/* Prefix, length, alphabet and checksum: no database needed. */
int svc_secret_token_well_formed(const char *s, const char *prefix);

/* base64url without padding, and its strict inverse (APR_EINVAL on any
 * character outside the alphabet, padding included). */
char *svc_b64url_encode(apr_pool_t *p, const unsigned char *data, apr_size_t len);
apr_status_t svc_b64url_decode(apr_pool_t *p, const char *s, apr_size_t slen,
                               unsigned char **pout, apr_size_t *plen);

char *svc_hex(apr_pool_t *p, const unsigned char *data, apr_size_t len);

/* Bytes as a PostgreSQL bytea parameter in text form ("\\x" + hex). */
char *svc_bytea_param(apr_pool_t *p, const unsigned char *data, apr_size_t len);

/* HMAC-SHA256 (32 bytes out). */
void svc_hmac_sha256(unsigned char out[32], const unsigned char *key, apr_size_t keylen,
                     const unsigned char *msg, apr_size_t len);

/* Keyed BLAKE2b-256 with a 32-byte key. */
void svc_keyed_hash(unsigned char out[32], const unsigned char key[32],
                    const unsigned char *msg, apr_size_t len);

/* Plain SHA-256, for protocols that name it (PKCE's S256 challenge). */
void svc_sha256(unsigned char out[32], const unsigned char *msg, apr_size_t len);

/* Constant-time equality of two equal-length buffers. */
int svc_ct_equal(const void *a, const void *b, apr_size_t len);

/*
 * Secrets at rest: libsodium's secretbox (XSalsa20-Poly1305) under a 32-byte
 * key, with a fresh random nonce per sealing. The sealed form is
 * nonce || MAC || ciphertext, SVC_BOX_OVERHEAD bytes longer than the
 * plaintext.
 *
 * svc_box_seal_into writes len + SVC_BOX_OVERHEAD bytes to out;
 * svc_box_open_into writes boxlen - SVC_BOX_OVERHEAD bytes to out and fails
 * (APR_EINVAL) on a box that is too short, forged, or sealed under another
 * key, writing nothing usable then. For fixed buffers (a cache's slots).
 */
#define SVC_BOX_OVERHEAD (24 + 16)
void svc_box_seal_into(unsigned char *out, const unsigned char key[32],
                       const unsigned char *msg, apr_size_t len);
apr_status_t svc_box_open_into(unsigned char *out, const unsigned char key[32],
                               const unsigned char *box, apr_size_t boxlen);

/* The same with the box allocated from p. */
void svc_box_seal(apr_pool_t *p, const unsigned char key[32], const char *plain,
                  apr_size_t len, unsigned char **pbox, apr_size_t *pboxlen);

/*
 * Opens a sealed box: *pplain (NUL-terminated, from p) is wiped when p is
 * cleared. APR_EINVAL when the box is too short, was forged, or was sealed
 * under another key.
 */
apr_status_t svc_box_open(apr_pool_t *p, const unsigned char key[32],
                          const unsigned char *box, apr_size_t boxlen,
                          char **pplain, apr_size_t *plen);

/* Wipes memory the compiler may not optimise away. */
void svc_wipe(void *buf, apr_size_t len);

#endif /* SVC_CRYPTO_H */
