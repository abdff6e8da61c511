/*
 * svc_crypto.c: libsodium for everything that touches secrets.
 */
#include "svc_crypto.h"

#include <sodium.h>
#include <string.h>

static const char b62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

apr_status_t svc_crypto_init(void)
{
    return sodium_init() < 0 ? APR_EGENERAL : APR_SUCCESS;
}

/* The box layout of svc_crypto.h, fixed at compile time. */
typedef char svc_box_overhead_check[(SVC_BOX_OVERHEAD == crypto_secretbox_NONCEBYTES
                                     + crypto_secretbox_MACBYTES) ? 1 : -1];

void svc_random_bytes(void *buf, apr_size_t n)
{
    randombytes_buf(buf, n);
}

char *svc_random_base62(apr_pool_t *p, apr_size_t n)
{
    unsigned char buf[64];
    apr_size_t i = 0, k = sizeof(buf);
    char *out = apr_palloc(p, n + 1);

    /*
     * One draw from the system for up to ~60 characters, rather than one
     * per character (every request id would otherwise cost 22 getrandom
     * calls). Bytes of 248 and above are dropped: 248 is 4 x 62, so what
     * remains maps onto the alphabet without modulo bias.
     */
    while (i < n) {
        if (k == sizeof(buf)) {
            randombytes_buf(buf, sizeof(buf));
            k = 0;
        }
        if (buf[k] < 248) {
            out[i++] = b62[buf[k] % 62];
        }
        k++;
    }
    out[n] = '\0';
    sodium_memzero(buf, sizeof(buf));
    return out;
}

char *svc_id_new(apr_pool_t *p, const char *prefix)
{
    return apr_pstrcat(p, prefix, svc_random_base62(p, 22), NULL);
}

static apr_uint32_t crc32_ieee(const unsigned char *d, apr_size_t n)
{
    apr_uint32_t c = 0xFFFFFFFFu;
    apr_size_t i;
    int k;

    for (i = 0; i < n; i++) {
        c ^= d[i];
        for (k = 0; k < 8; k++) {
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
        }
    }
    return ~c;
}

void svc_checksum62(const char *data, apr_size_t len, char out[7])
{
    apr_uint32_t v = crc32_ieee((const unsigned char *)data, len);
    int i;

    /* 62^6 > 2^32, so six digits always suffice; fixed width, most significant first. */
    for (i = 5; i >= 0; i--) {
        out[i] = b62[v % 62];
        v /= 62;
    }
    out[6] = '\0';
}

char *svc_secret_token_generate(apr_pool_t *p, const char *prefix)
{
    char *body = apr_pstrcat(p, prefix, svc_random_base62(p, SVC_SECRET_TOKEN_RANDOM), NULL);
    char sum[7];

    svc_checksum62(body, strlen(body), sum);
    return apr_pstrcat(p, body, sum, NULL);
}

int svc_secret_token_well_formed(const char *s, const char *prefix)
{
    apr_size_t i;
    char sum[7];

    if (!s || strlen(s) != SVC_SECRET_TOKEN_LEN
        || strncmp(s, prefix, SVC_SECRET_TOKEN_PREFIX_LEN) != 0) {
        return 0;
    }
    for (i = SVC_SECRET_TOKEN_PREFIX_LEN; i < SVC_SECRET_TOKEN_LEN; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))) {
            return 0;
        }
    }
    svc_checksum62(s, SVC_SECRET_TOKEN_LEN - 6, sum);
    /* The checksum is not secret, but there is no reason to be sloppy. */
    return svc_ct_equal(sum, s + SVC_SECRET_TOKEN_LEN - 6, 6);
}

char *svc_b64url_encode(apr_pool_t *p, const unsigned char *d, apr_size_t n)
{
    char *out = apr_palloc(p, (n + 2) / 3 * 4 + 1);
    char *o = out;
    apr_size_t i;

    for (i = 0; i + 2 < n; i += 3) {
        *o++ = b64url[d[i] >> 2];
        *o++ = b64url[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
        *o++ = b64url[((d[i + 1] & 15) << 2) | (d[i + 2] >> 6)];
        *o++ = b64url[d[i + 2] & 63];
    }
    if (n - i == 1) {
        *o++ = b64url[d[i] >> 2];
        *o++ = b64url[(d[i] & 3) << 4];
    }
    else if (n - i == 2) {
        *o++ = b64url[d[i] >> 2];
        *o++ = b64url[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
        *o++ = b64url[(d[i + 1] & 15) << 2];
    }
    *o = '\0';
    return out;
}

static int b64url_val(char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
}

apr_status_t svc_b64url_decode(apr_pool_t *p, const char *s, apr_size_t n,
                               unsigned char **pout, apr_size_t *plen)
{
    unsigned char *out;
    apr_size_t i, o = 0;
    apr_uint32_t acc = 0;
    int bits = 0;

    if (n % 4 == 1) {
        return APR_EINVAL;
    }
    out = apr_palloc(p, n * 3 / 4 + 1);
    for (i = 0; i < n; i++) {
        int v = b64url_val(s[i]);
        if (v < 0) {
            return APR_EINVAL;
        }
        acc = (acc << 6) | (apr_uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    /* Leftover bits must be zero, so each byte string has one encoding. */
    if (acc != 0) {
        return APR_EINVAL;
    }
    out[o] = '\0';
    *pout = out;
    *plen = o;
    return APR_SUCCESS;
}

char *svc_hex(apr_pool_t *p, const unsigned char *d, apr_size_t n)
{
    char *out = apr_palloc(p, n * 2 + 1);

    sodium_bin2hex(out, n * 2 + 1, d, n);
    return out;
}

char *svc_bytea_param(apr_pool_t *p, const unsigned char *data, apr_size_t len)
{
    return apr_pstrcat(p, "\\x", svc_hex(p, data, len), NULL);
}

void svc_hmac_sha256(unsigned char out[32], const unsigned char *key, apr_size_t keylen,
                     const unsigned char *msg, apr_size_t len)
{
    crypto_auth_hmacsha256_state st;

    crypto_auth_hmacsha256_init(&st, key, keylen);
    crypto_auth_hmacsha256_update(&st, msg, len);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof(st));
}

void svc_keyed_hash(unsigned char out[32], const unsigned char key[32],
                    const unsigned char *msg, apr_size_t len)
{
    crypto_generichash(out, 32, msg, len, key, 32);
}

void svc_sha256(unsigned char out[32], const unsigned char *msg, apr_size_t len)
{
    crypto_hash_sha256(out, msg, len);
}

int svc_ct_equal(const void *a, const void *b, apr_size_t len)
{
    return sodium_memcmp(a, b, len) == 0;
}

_Static_assert(SVC_BOX_OVERHEAD == crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES,
               "SVC_BOX_OVERHEAD is libsodium's secretbox nonce and MAC");

void svc_box_seal_into(unsigned char *out, const unsigned char key[32],
                       const unsigned char *msg, apr_size_t len)
{
    randombytes_buf(out, crypto_secretbox_NONCEBYTES);
    crypto_secretbox_easy(out + crypto_secretbox_NONCEBYTES, msg, len, out, key);
}

apr_status_t svc_box_open_into(unsigned char *out, const unsigned char key[32],
                               const unsigned char *box, apr_size_t boxlen)
{
    if (boxlen < SVC_BOX_OVERHEAD) {
        return APR_EINVAL;
    }
    return crypto_secretbox_open_easy(out, box + crypto_secretbox_NONCEBYTES,
                                      boxlen - crypto_secretbox_NONCEBYTES, box, key) == 0
           ? APR_SUCCESS : APR_EINVAL;
}

void svc_box_seal(apr_pool_t *p, const unsigned char key[32], const char *plain,
                  apr_size_t len, unsigned char **pbox, apr_size_t *pboxlen)
{
    unsigned char *box = apr_palloc(p, len + SVC_BOX_OVERHEAD);

    svc_box_seal_into(box, key, (const unsigned char *)plain, len);
    *pbox = box;
    *pboxlen = len + SVC_BOX_OVERHEAD;
}

typedef struct {
    char *buf;
    apr_size_t len;
} wipe_baton_t;

static apr_status_t wipe_cleanup(void *data)
{
    wipe_baton_t *w = data;

    sodium_memzero(w->buf, w->len);
    return APR_SUCCESS;
}

apr_status_t svc_box_open(apr_pool_t *p, const unsigned char key[32],
                          const unsigned char *box, apr_size_t boxlen,
                          char **pplain, apr_size_t *plen)
{
    wipe_baton_t *w;
    apr_size_t len;

    if (boxlen < SVC_BOX_OVERHEAD) {
        return APR_EINVAL;
    }
    len = boxlen - SVC_BOX_OVERHEAD;
    w = apr_palloc(p, sizeof(*w));
    w->buf = apr_palloc(p, len + 1);
    w->len = len + 1;
    if (svc_box_open_into((unsigned char *)w->buf, key, box, boxlen) != APR_SUCCESS) {
        return APR_EINVAL;
    }
    w->buf[len] = '\0';
    apr_pool_cleanup_register(p, w, wipe_cleanup, apr_pool_cleanup_null);
    *pplain = w->buf;
    *plen = len;
    return APR_SUCCESS;
}

void svc_wipe(void *buf, apr_size_t len)
{
    sodium_memzero(buf, len);
}
