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
 * Authenticated encryption (libsodium's crypto_secretbox: XSalsa20-Poly1305)
 * under a 32-byte key, for secrets kept anywhere but in a variable. A box
 * is nonce + MAC + ciphertext: SVC_BOX_OVERHEAD bytes more than the message.
 * svc_box_seal writes len + SVC_BOX_OVERHEAD bytes to out, with a fresh
 * random nonce. svc_box_open writes boxlen - SVC_BOX_OVERHEAD bytes to out
 * and fails (APR_EINVAL) on a box that is too short or was not sealed
 * under this key, writing nothing usable then.
 */
#define SVC_BOX_OVERHEAD 40
void svc_box_seal(unsigned char *out, const unsigned char key[32], const unsigned char *msg,
                  apr_size_t len);
apr_status_t svc_box_open(unsigned char *out, const unsigned char key[32],
                          const unsigned char *box, apr_size_t boxlen);

/* Wipes memory the compiler may not optimise away. */
void svc_wipe(void *buf, apr_size_t len);

#endif /* SVC_CRYPTO_H */
