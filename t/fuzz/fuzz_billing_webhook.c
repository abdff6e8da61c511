/*
 * fuzz_billing_webhook.c: a payment provider's webhook delivery as
 * svc_h_billing_webhook reads it (areas/billing/svc_billing_webhook.c), up
 * to where it would look at the database: the Stripe-Signature header
 * (t=TIMESTAMP,v1=HEX[,v1=HEX...], svc_billing_signature_check) over the
 * exact bytes, then the body as strict JSON.
 *
 * Input: a mode byte, then "<Stripe-Signature>\n<body>". Mode 0 takes the
 * header as given; 1 replaces it with a true one for the body (signed now,
 * the fuzzer's header appended as further items, as a rotation of the
 * secret appends a second v1); 2 a true one signed outside the tolerance.
 *
 * Properties: a header accepted names the true HMAC-SHA256 of
 * "TIMESTAMP.body" under the secret as one of its v1 items (any case) and
 * a timestamp within the tolerance; a true one is accepted unless the
 * fuzzer's items add a second timestamp; a stale one is refused as expired
 * and only as expired; every refusal is a problem document (401, or 400
 * for a body that is not JSON).
 */
#include "fuzz_svc.h"
#include "svc_billing_api.h"

#include <apr_lib.h>
#include <strings.h>

static const char secret[] = "whsec_fuzz_0123456789abcdef";
/* A fixed clock: the input decides the timestamps, not the hour it runs. */
#define NOW ((apr_int64_t)1800000000)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    return 0;
}

static const char *mac_hex(apr_pool_t *p, apr_int64_t ts, const char *body, apr_size_t len)
{
    unsigned char mac[32];
    const char *prefix = apr_psprintf(p, "%" APR_INT64_T_FMT ".", ts);
    apr_size_t plen = strlen(prefix);
    char *msg = apr_palloc(p, plen + len + 1);

    memcpy(msg, prefix, plen);
    memcpy(msg + plen, body, len);
    svc_hmac_sha256(mac, (const unsigned char *)secret, strlen(secret),
                    (const unsigned char *)msg, plen + len);
    return svc_hex(p, mac, sizeof(mac));
}

/* The header's items after leading spaces, as the provider writes them. */
static int count_items(apr_pool_t *p, const char *header, const char *prefix)
{
    char *copy = apr_pstrdup(p, header), *last, *item;
    int n = 0;

    for (item = apr_strtok(copy, ",", &last); item; item = apr_strtok(NULL, ",", &last)) {
        while (apr_isspace(*item)) {
            item++;
        }
        n += strncmp(item, prefix, strlen(prefix)) == 0;
    }
    return n;
}

/* Whether an item "v1=<hex>" of the header is `hex`, in any case. */
static int names_mac(apr_pool_t *p, const char *header, const char *hex)
{
    char *copy = apr_pstrdup(p, header), *last, *item;

    for (item = apr_strtok(copy, ",", &last); item; item = apr_strtok(NULL, ",", &last)) {
        while (apr_isspace(*item)) {
            item++;
        }
        if (strncmp(item, "v1=", 3) == 0 && strcasecmp(item + 3, hex) == 0) {
            return 1;
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = { data, size };
    const char *header, *body, *why, *err;
    apr_int64_t ts = 0;
    apr_size_t len;
    unsigned mode;
    svc_ctx_t *ctx;
    apr_pool_t *p;
    json_t *doc;
    int expired = 0;

    apr_pool_create(&p, fuzz_root());
    ctx = fuzz_ctx(p);
    ctx->method = "POST";
    ctx->path = "/webhooks/billing";
    mode = fuzz_byte(&in) % 3;
    header = fuzz_cut(&in, p, '\n', NULL);
    body = fuzz_cut(&in, p, -1, &len);
    if (!header) {
        header = "";
    }
    if (!body) {
        body = "";
        len = 0;
    }
    if (mode > 0) {
        /* Signed now, or just past the tolerance on either side. */
        ts = mode == 1 ? NOW - (apr_int64_t)(size % SVC_BILLING_TOLERANCE_S)
                       : (size % 2 ? NOW + SVC_BILLING_TOLERANCE_S + 1 + (apr_int64_t)size
                                   : NOW - SVC_BILLING_TOLERANCE_S - 1 - (apr_int64_t)size);
        header = apr_psprintf(p, "t=%" APR_INT64_T_FMT ",v1=%s%s%s", ts, mac_hex(p, ts, body, len),
                              *header ? "," : "", header);
        if (strlen(header) > 4096) {
            goto done;
        }
    }
    why = svc_billing_signature_check(p, secret, strlen(secret), header, body, len, NOW,
                                      SVC_BILLING_TOLERANCE_S, &expired);
    if (!why) {
        /* Accepted: one timestamp, in range, and the true MAC for it. */
        const char *t;
        FUZZ_ASSERT(count_items(p, header, "t=") == 1);
        t = strstr(header, "t=");
        FUZZ_ASSERT(t != NULL);
        FUZZ_ASSERT(!expired);
        if (mode > 0) {
            FUZZ_ASSERT(mode == 1);
        }
        else {
            /* Whatever the fuzzer wrote, a forged header cannot name the
             * MAC of a timestamp it does not carry. */
            char *copy = apr_pstrdup(p, header), *last, *item;
            for (item = apr_strtok(copy, ",", &last); item;
                 item = apr_strtok(NULL, ",", &last)) {
                while (apr_isspace(*item)) {
                    item++;
                }
                if (strncmp(item, "t=", 2) == 0) {
                    ts = apr_atoi64(item + 2);
                }
            }
            FUZZ_ASSERT(ts >= NOW - SVC_BILLING_TOLERANCE_S
                        && ts <= NOW + SVC_BILLING_TOLERANCE_S);
            FUZZ_ASSERT(names_mac(p, header, mac_hex(p, ts, body, len)));
        }
    }
    else {
        if (mode == 1) {
            /* A true header is refused only for a second timestamp the
             * fuzzer's items added. */
            FUZZ_ASSERT(count_items(p, header, "t=") > 1);
        }
        if (mode == 2 && count_items(p, header, "t=") == 1) {
            FUZZ_ASSERT(expired);
        }
        if (expired) {
            FUZZ_ASSERT(count_items(p, header, "t=") == 1);
        }
        svc_fail(ctx, 401, expired ? "signature_expired" : "invalid_signature", "%s", why);
        FUZZ_ASSERT(fuzz_check_problem(ctx, SVC_EPROBLEM) == 401);
        goto done;
    }
    if (svc_json_parse_body(&doc, body, len, p, &err) != APR_SUCCESS) {
        svc_fail(ctx, 400, "invalid_json", "The event's body: %s", err);
        FUZZ_ASSERT(fuzz_check_problem(ctx, SVC_EPROBLEM) == 400);
    }
done:
    apr_pool_destroy(p);
    return 0;
}
