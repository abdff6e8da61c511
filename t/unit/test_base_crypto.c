/*
 * test_base_crypto.c: base/svc_crypto.c: base64url, HMAC-SHA256, keyed
 * hashes and constant-time comparison, ids, the token checksum, sealed
 * boxes and the random alphabet.
 *
 * Every expectation is independent of the code under test: published
 * vectors, values computed by hand or with another implementation (noted
 * where used), or inputs the test builds byte by byte itself.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_crypto.h"

#include <apr_lib.h>
#include <sodium.h>

/* ---------------------------------------------------------------------- */
/* Encodings, MACs, hashes                                                 */

static const char *b64(apr_pool_t *p, const char *s)
{
    return svc_b64url_encode(p, (const unsigned char *)s, strlen(s));
}

/* Decodes s; returns the bytes as a string or NULL when refused. */
static const char *unb64(apr_pool_t *p, const char *s, apr_size_t n)
{
    unsigned char *out = NULL;
    apr_size_t len = 0;

    if (svc_b64url_decode(p, s, n, &out, &len) != APR_SUCCESS) {
        return NULL;
    }
    return apr_pstrmemdup(p, (const char *)out, len);
}
#define UNB64(s_) unb64(p, (s_), strlen(s_))

SVC_TEST(b64url_rfc4648_vectors)
{
    static const char *const vec[][2] = {
        { "", "" }, { "f", "Zg" }, { "fo", "Zm8" }, { "foo", "Zm9v" }, { "foob", "Zm9vYg" },
        { "fooba", "Zm9vYmE" }, { "foobar", "Zm9vYmFy" }
    };
    static const unsigned char fbff[] = { 0xfb, 0xff };
    static const unsigned char ffffff[] = { 0xff, 0xff, 0xff };
    static const unsigned char fbefbe[] = { 0xfb, 0xef, 0xbe };
    unsigned char *out;
    apr_size_t len, i;

    for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
        SVC_CHECK_STR(b64(p, vec[i][0]), vec[i][1]);
        SVC_CHECK_STR(UNB64(vec[i][1]), vec[i][0]);
    }
    /* The two characters where base64url differs from base64 ("+/8=", "////"). */
    SVC_CHECK_STR(svc_b64url_encode(p, fbff, 2), "-_8");
    SVC_CHECK_STR(svc_b64url_encode(p, ffffff, 3), "____");
    SVC_CHECK_STR(svc_b64url_encode(p, fbefbe, 3), "----");
    SVC_CHECK_INT(svc_b64url_decode(p, "-_8", 3, &out, &len), APR_SUCCESS);
    SVC_CHECK(len == 2 && memcmp(out, fbff, 2) == 0);
}

SVC_TEST(b64url_decode_is_strict)
{
    SVC_CHECK(UNB64("Zg==") == NULL);
    SVC_CHECK(UNB64("Zg=") == NULL);
    SVC_CHECK(UNB64("Zm9vYg==") == NULL);
    SVC_CHECK(UNB64("+w") == NULL);
    SVC_CHECK(UNB64("/w") == NULL);
    SVC_CHECK(UNB64("+/8") == NULL);
    SVC_CHECK(UNB64("Zm9 v") == NULL);
    SVC_CHECK(UNB64("Zm9v\n") == NULL);
    SVC_CHECK(UNB64(" Zm9v") == NULL);
    SVC_CHECK(UNB64("Zm9v.") == NULL);
    SVC_CHECK(UNB64("Zm\xc3\xa9") == NULL);
    SVC_CHECK(unb64(p, "Zm\0v", 4) == NULL);
    /* Lengths that no byte string encodes to. */
    SVC_CHECK(UNB64("Z") == NULL);
    SVC_CHECK(UNB64("Zm9vY") == NULL);
    /* Non-zero trailing bits: each byte string has exactly one encoding. */
    SVC_CHECK_STR(UNB64("Zg"), "f");
    SVC_CHECK(UNB64("Zh") == NULL);
    SVC_CHECK(UNB64("Zv") == NULL);
    SVC_CHECK_STR(UNB64("Zm8"), "fo");
    SVC_CHECK(UNB64("Zm9") == NULL);
}

SVC_TEST(b64url_round_trip_random)
{
    unsigned char buf[300];
    apr_size_t n, len, i;
    unsigned char *out;
    char *enc;

    for (n = 0; n <= sizeof(buf); n++) {
        randombytes_buf(buf, n);
        enc = svc_b64url_encode(p, buf, n);
        SVC_CHECK_INT(strlen(enc), (n * 4 + 2) / 3);
        for (i = 0; enc[i]; i++) {
            SVC_CHECK(apr_isalnum(enc[i]) || enc[i] == '-' || enc[i] == '_');
        }
        out = NULL;
        SVC_CHECK_INT(svc_b64url_decode(p, enc, strlen(enc), &out, &len), APR_SUCCESS);
        SVC_CHECK(out && len == n && memcmp(out, buf, n) == 0);
    }
}

SVC_TEST(hmac_sha256_rfc4231)
{
    unsigned char key[131], mac[32];
    static const char tc1[] = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7";
    static const char tc2[] = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
    static const char tc6[] = "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54";
    static const char m6[] = "Test Using Larger Than Block-Size Key - Hash Key First";

    /* Test case 1: 20 bytes of 0x0b, "Hi There". */
    memset(key, 0x0b, 20);
    svc_hmac_sha256(mac, key, 20, (const unsigned char *)"Hi There", 8);
    SVC_CHECK_STR(hexof(p, mac, 32), tc1);
    /* Test case 2: a key shorter than the block. */
    svc_hmac_sha256(mac, (const unsigned char *)"Jefe", 4,
                    (const unsigned char *)"what do ya want for nothing?", 28);
    SVC_CHECK_STR(hexof(p, mac, 32), tc2);
    /* Test case 6: a key longer than the block (hashed first). */
    memset(key, 0xaa, 131);
    svc_hmac_sha256(mac, key, 131, (const unsigned char *)m6, strlen(m6));
    SVC_CHECK_STR(hexof(p, mac, 32), tc6);
}

SVC_TEST(keyed_hash_and_ct_equal)
{
    unsigned char key[32], key2[32], a[32], b[32];
    int i;

    for (i = 0; i < 32; i++) {
        key[i] = (unsigned char)i;
    }
    /* Expected from Python: hashlib.blake2b(b"abc", digest_size=32, key=bytes(range(32))). */
    svc_keyed_hash(a, key, (const unsigned char *)"abc", 3);
    SVC_CHECK_STR(hexof(p, a, 32),
                  "d63a32d3e44738d7907f964316c241adaba0abfeabc32349677578a15a203f7f");
    svc_keyed_hash(b, key, (const unsigned char *)"abc", 3);
    SVC_CHECK(memcmp(a, b, 32) == 0);
    /* One bit of key or message changes everything. */
    memcpy(key2, key, 32);
    key2[31] ^= 1;
    svc_keyed_hash(b, key2, (const unsigned char *)"abc", 3);
    SVC_CHECK(memcmp(a, b, 32) != 0);
    svc_keyed_hash(b, key, (const unsigned char *)"abd", 3);
    SVC_CHECK(memcmp(a, b, 32) != 0);
    svc_keyed_hash(b, key, (const unsigned char *)"abc", 2);
    SVC_CHECK(memcmp(a, b, 32) != 0);

    SVC_CHECK(svc_ct_equal("abcdef", "abcdef", 6));
    SVC_CHECK(!svc_ct_equal("abcdef", "abcdeg", 6));
    SVC_CHECK(!svc_ct_equal("xbcdef", "abcdef", 6));
    SVC_CHECK(svc_ct_equal("abcdef", "abcdeg", 5));
    SVC_CHECK(svc_ct_equal("a", "b", 0));
    memcpy(b, a, 32);
    b[16] ^= 0x80;
    SVC_CHECK(!svc_ct_equal(a, b, 32));
}

SVC_TEST(random_ids)
{
    const char *a = svc_id_new(p, "prj_"), *b = svc_id_new(p, "prj_");
    const char *r = svc_random_base62(p, 1000);
    int i;

    SVC_CHECK_INT(strlen(a), 4 + 22);
    SVC_CHECK(strncmp(a, "prj_", 4) == 0);
    SVC_CHECK(strcmp(a, b) != 0);
    SVC_CHECK_INT(strlen(r), 1000);
    for (i = 0; r[i]; i++) {
        SVC_CHECK(apr_isalnum(r[i]));
    }
}

/* ---------------------------------------------------------------------- */
/* Token checksum and PAT format                                           */

SVC_TEST(checksum62_crc32_vector)
{
    char out[7];

    /*
     * CRC-32/IEEE("123456789") = 0xCBF43926 = 3421780262. In base 62,
     * most significant digit first (alphabet 0-9A-Za-z):
     *   3421780262 = 3*62^5 + 673381766        -> '3'
     *    673381766 = 45*62^4 + 8446646         -> 45 = 'j'
     *      8446646 = 35*62^3 + 105166          -> 35 = 'Z'
     *       105166 = 27*62^2 + 1378            -> 27 = 'R'
     *         1378 = 22*62 + 14                -> 22 = 'M', 14 = 'E'
     */
    svc_checksum62("123456789", 9, out);
    SVC_CHECK_STR(out, "3jZRME");
    /* CRC-32("") = 0: six zero digits (fixed width). */
    svc_checksum62("", 0, out);
    SVC_CHECK_STR(out, "000000");
    /* CRC-32("a") = 0xE8B7BE43 = 3904355907; the same way:
     *   4*62^5 + 239824579; 16*62^4 + 3403203; 14*62^3 + 66611;
     *   17*62^2 + 1263; 20*62 + 23 -> 4, 16, 14, 17, 20, 23 = "4GEHKN". */
    svc_checksum62("a", 1, out);
    SVC_CHECK_STR(out, "4GEHKN");
}

SVC_TEST(box_seal_and_open)
{
    unsigned char key[32], other[32], *box, *box2;
    apr_size_t boxlen, boxlen2, n;
    const char *plain = "sk-test-0123456789abcdef";
    char *out;

    memset(key, 7, sizeof(key));
    memset(other, 8, sizeof(other));
    svc_box_seal(p, key, plain, strlen(plain), &box, &boxlen);
    SVC_CHECK_INT(boxlen, strlen(plain) + SVC_BOX_OVERHEAD);
    /* The plaintext is nowhere in the box. */
    SVC_CHECK(memmem(box, boxlen, plain, strlen(plain)) == NULL);
    SVC_CHECK(svc_box_open(p, key, box, boxlen, &out, &n) == APR_SUCCESS);
    SVC_CHECK_INT(n, strlen(plain));
    SVC_CHECK_STR(out, plain);
    /* A fresh nonce each time: the same plaintext seals differently. */
    svc_box_seal(p, key, plain, strlen(plain), &box2, &boxlen2);
    SVC_CHECK(boxlen2 == boxlen && memcmp(box, box2, boxlen) != 0);
    /* Another key, a flipped bit, a short box: refused. */
    SVC_CHECK(svc_box_open(p, other, box, boxlen, &out, &n) == APR_EINVAL);
    box[boxlen - 1] ^= 1;
    SVC_CHECK(svc_box_open(p, key, box, boxlen, &out, &n) == APR_EINVAL);
    SVC_CHECK(svc_box_open(p, key, box, SVC_BOX_OVERHEAD - 1, &out, &n) == APR_EINVAL);
    /* The empty secret round-trips too. */
    svc_box_seal(p, key, "", 0, &box, &boxlen);
    SVC_CHECK(svc_box_open(p, key, box, boxlen, &out, &n) == APR_SUCCESS && n == 0);
}

/* The random alphabet is used evenly: 620,000 characters put about 10,000
 * on each symbol (sd ~99), and 9,400..10,600 is six of those either side,
 * so a sound generator fails this about once in ten million runs. A biased
 * mapping (byte % 62 over all 256 values) puts ~12,100 on the first eight
 * symbols and ~9,700 on the rest. */
SVC_TEST(random_base62_is_uniform)
{
    static const char alphabet[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    int counts[62] = { 0 };
    const char *s = svc_random_base62(p, 620000);
    apr_size_t i;
    int bad = 0;

    SVC_CHECK_INT(strlen(s), 620000);
    for (i = 0; s[i]; i++) {
        const char *at = strchr(alphabet, s[i]);
        if (!at) {
            bad++;
            continue;
        }
        counts[at - alphabet]++;
    }
    SVC_CHECK_INT(bad, 0);
    for (i = 0; i < 62; i++) {
        SVC_CHECK(counts[i] > 9400 && counts[i] < 10600);
    }
    SVC_CHECK(strcmp(svc_random_base62(p, 22), svc_random_base62(p, 22)) != 0);
}

int main(int argc, const char *const *argv)
{
    if (svc_crypto_init() != APR_SUCCESS) {
        fprintf(stderr, "svc_crypto_init failed\n");
        return 1;
    }
    return svc_test_run(argc, argv);
}
