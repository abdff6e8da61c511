/*
 * test_identity.c: the identity area's token format (svc_tokens.h): personal
 * access tokens and other secret tokens, their checksum and how a malformed
 * one is told offline.
 *
 * Every expectation is independent of the code under test: published
 * vectors, values computed by hand or with another implementation (noted
 * where used), or inputs the test builds byte by byte itself.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_crypto.h"
#include "svc_tokens.h"

static int is_b62(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

SVC_TEST(pat_generate_and_well_formed)
{
    static const char alphabet[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const char *seen[100];
    char sum[7];
    char *t, *m;
    int i, j, k;

    SVC_CHECK_INT(SVC_PAT_LEN, 8 + 43 + 6);
    for (i = 0; i < 100; i++) {
        t = svc_pat_generate(p);
        SVC_CHECK_INT(strlen(t), SVC_PAT_LEN);
        SVC_CHECK(strncmp(t, "svc_pat_", 8) == 0);
        for (j = 8; t[j]; j++) {
            SVC_CHECK(is_b62(t[j]));
        }
        /* The checksum is the CRC of what precedes it (our CRC62 is proven above). */
        svc_checksum62(t, SVC_PAT_LEN - 6, sum);
        SVC_CHECK(memcmp(sum, t + SVC_PAT_LEN - 6, 6) == 0);
        SVC_CHECK(svc_pat_well_formed(t));
        for (j = 0; j < i; j++) {
            SVC_CHECK(strcmp(seen[j], t) != 0);
        }
        seen[i] = t;
    }

    t = svc_pat_generate(p);
    /* Every single-character substitution after the prefix, with three
     * different replacement characters each. */
    for (i = 8; i < SVC_PAT_LEN; i++) {
        for (k = 1; k <= 3; k++) {
            m = apr_pstrdup(p, t);
            m[i] = alphabet[(strchr(alphabet, t[i]) - alphabet + k * 17) % 62];
            SVC_CHECK(m[i] != t[i]);
            if (svc_pat_well_formed(m)) {
                fprintf(stderr, "substitution at %d accepted\n", i);
                svc_test_failed_checks++;
            }
        }
    }
    /* Prefix changes. */
    for (i = 0; i < 8; i++) {
        m = apr_pstrdup(p, t);
        m[i] = (char)(m[i] == 'x' ? 'y' : 'x');
        SVC_CHECK(!svc_pat_well_formed(m));
    }
    m = apr_pstrdup(p, t);
    memcpy(m, "SVC_PAT_", 8);
    SVC_CHECK(!svc_pat_well_formed(m));
    m = apr_pstrcat(p, "svc_shr_", t + 8, NULL);
    SVC_CHECK(!svc_pat_well_formed(m));
    /* Truncated, extended, swapped. */
    SVC_CHECK(!svc_pat_well_formed(apr_pstrndup(p, t, SVC_PAT_LEN - 1)));
    SVC_CHECK(!svc_pat_well_formed(apr_pstrndup(p, t, 8)));
    SVC_CHECK(!svc_pat_well_formed(apr_pstrcat(p, t, "0", NULL)));
    SVC_CHECK(!svc_pat_well_formed(apr_pstrcat(p, t, "\n", NULL)));
    SVC_CHECK(!svc_pat_well_formed(apr_pstrcat(p, " ", t, NULL)));
    m = apr_pstrdup(p, t);
    for (i = 8; i + 1 < SVC_PAT_LEN; i++) {
        if (m[i] != m[i + 1]) {
            char c = m[i];
            m[i] = m[i + 1];
            m[i + 1] = c;
            break;
        }
    }
    SVC_CHECK(!svc_pat_well_formed(m));
    /* Characters outside base62, anywhere after the prefix. */
    for (i = 8; i < SVC_PAT_LEN; i += 7) {
        static const char bad[] = "-_+/=. \x7f\x80\xc3";
        for (j = 0; bad[j]; j++) {
            m = apr_pstrdup(p, t);
            m[i] = bad[j];
            SVC_CHECK(!svc_pat_well_formed(m));
        }
    }
    SVC_CHECK(!svc_pat_well_formed(NULL));
    SVC_CHECK(!svc_pat_well_formed(""));
    SVC_CHECK(!svc_pat_well_formed("svc_pat_"));
    /* A well-formed token built by hand: 43 zeros and its CRC62. */
    m = apr_pstrcat(p, "svc_pat_", repeat(p, '0', 43), NULL);
    svc_checksum62(m, strlen(m), sum);
    SVC_CHECK(svc_pat_well_formed(apr_pstrcat(p, m, sum, NULL)));
}

SVC_TEST(secret_token_other_prefix)
{
    char *t = svc_secret_token_generate(p, "svc_shr_");
    char *m;

    SVC_CHECK_INT(strlen(t), SVC_SECRET_TOKEN_LEN);
    SVC_CHECK(svc_secret_token_well_formed(t, "svc_shr_"));
    /* A share token is not a PAT, nor the other way round. */
    SVC_CHECK(!svc_pat_well_formed(t));
    SVC_CHECK(!svc_secret_token_well_formed(svc_pat_generate(p), "svc_shr_"));
    m = apr_pstrdup(p, t);
    m[20] = m[20] == 'a' ? 'b' : 'a';
    SVC_CHECK(!svc_secret_token_well_formed(m, "svc_shr_"));
}

int main(int argc, const char *const *argv)
{
    if (svc_crypto_init() != APR_SUCCESS) {
        fprintf(stderr, "svc_crypto_init failed\n");
        return 1;
    }
    return svc_test_run(argc, argv);
}
