/*
 * test_billing.c: the billing area below HTTP: the webhook's signature (a
 * vector computed with Python's hmac, not with our code), SvcBillingPlan's
 * arguments, the provider's form encoding, and the redaction of the
 * provider's key shapes.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_billing_api.h"
#include "svc_redact.h"
#include "svc_stripe_client.h"

#include <string.h>

#define SECRET "whsec_test_secret"
#define BODY "{\"id\":\"evt_test\",\"object\":\"event\"}"
#define T 1700000000
/* hmac.new(b"whsec_test_secret", b"1700000000." + BODY, sha256).hexdigest() */
#define GOOD "8042376f6ca064adbe037642a718227dfd59047137eb49497a54c49eb0cfb724"
/* The same under b"whsec_old_secret". */
#define OLD "a1dd24cd166a5ec1b320e88ebfc7df18408a2dc13ab12ccf1d9e392d099b1dc1"

static const char *check(apr_pool_t *p, const char *header, const char *body,
                         apr_int64_t now, int *pexpired)
{
    return svc_billing_signature_check(p, SECRET, strlen(SECRET), header, body,
                                       strlen(body), now, SVC_BILLING_TOLERANCE_S, pexpired);
}

SVC_TEST(signature_good)
{
    int expired = 1;

    SVC_CHECK(check(p, "t=1700000000,v1=" GOOD, BODY, T, &expired) == NULL);
    SVC_CHECK(!expired);
    /* Uppercase hex, spaces after commas, an unknown scheme, a v0. */
    SVC_CHECK(check(p, "t=1700000000, v1=8042376F6CA064ADBE037642A718227DFD59047137EB49497A54C49EB0CFB724",
                    BODY, T, &expired) == NULL);
    SVC_CHECK(check(p, "t=1700000000,v0=" OLD ",v1=" GOOD ",x=1", BODY, T, &expired) == NULL);
    /* A rotation: the old secret's v1 and the new one's, in either order. */
    SVC_CHECK(check(p, "t=1700000000,v1=" OLD ",v1=" GOOD, BODY, T, &expired) == NULL);
    SVC_CHECK(check(p, "t=1700000000,v1=" GOOD ",v1=" OLD, BODY, T, &expired) == NULL);
    /* At the edges of the tolerance. */
    SVC_CHECK(check(p, "t=1700000000,v1=" GOOD, BODY, T + 300, &expired) == NULL);
    SVC_CHECK(check(p, "t=1700000000,v1=" GOOD, BODY, T - 300, &expired) == NULL);
}

SVC_TEST(signature_bad)
{
    int expired = 0;

    SVC_CHECK(check(p, NULL, BODY, T, &expired) != NULL);
    SVC_CHECK(check(p, "", BODY, T, &expired) != NULL);
    SVC_CHECK(check(p, "t=1700000000,v1=" OLD, BODY, T, &expired) != NULL);
    SVC_CHECK(!expired);
    SVC_CHECK(check(p, "t=1700000000,v0=" GOOD, BODY, T, &expired) != NULL);
    SVC_CHECK(check(p, "v1=" GOOD, BODY, T, &expired) != NULL);
    SVC_CHECK(check(p, "t=1700000001,v1=" GOOD, BODY, T, &expired) != NULL);
    SVC_CHECK(check(p, "t=1700000000,t=1700000000,v1=" GOOD, BODY, T, &expired) != NULL);
    SVC_CHECK(check(p, "t=17e8,v1=" GOOD, BODY, T, &expired) != NULL);
    SVC_CHECK(check(p, "t=1700000000,v1=" GOOD "00", BODY, T, &expired) != NULL);
    SVC_CHECK(check(p, "t=1700000000,v1=" GOOD, BODY " ", T, &expired) != NULL);
    SVC_CHECK(check(p, "t=1700000000,v1=", BODY, T, &expired) != NULL);
    /* A good signature out of the tolerance: expired, and said so. */
    SVC_CHECK(check(p, "t=1700000000,v1=" GOOD, BODY, T + 301, &expired) != NULL);
    SVC_CHECK(expired);
    expired = 0;
    SVC_CHECK(check(p, "t=1700000000,v1=" GOOD, BODY, T - 301, &expired) != NULL);
    SVC_CHECK(expired);
    /* A bad signature out of the tolerance is just bad. */
    expired = 0;
    SVC_CHECK(check(p, "t=1700000000,v1=" OLD, BODY, T + 3000, &expired) != NULL);
    SVC_CHECK(!expired);
}

static apr_status_t plan(apr_pool_t *p, const char *line, svc_billing_plan_t *pl,
                         const char **perr)
{
    char *copy = apr_pstrdup(p, line), *last, *tok;
    char *argv[16];
    int argc = 0;

    for (tok = apr_strtok(copy, " ", &last); tok && argc < 16;
         tok = apr_strtok(NULL, " ", &last)) {
        argv[argc++] = tok;
    }
    return svc_billing_plan_parse(p, argc, argv, pl, perr);
}

SVC_TEST(plans)
{
    svc_billing_plan_t pl;
    const char *err = NULL;

    SVC_CHECK(plan(p, "team Team price_1Abc 2900 USD", &pl, &err) == APR_SUCCESS);
    SVC_CHECK_STR(pl.id, "team");
    SVC_CHECK_STR(pl.price_id, "price_1Abc");
    SVC_CHECK(pl.amount == 2900);
    SVC_CHECK_STR(pl.currency, "usd");
    SVC_CHECK_STR(pl.interval, "month");
    SVC_CHECK(pl.run_minutes == -1 && pl.model_tokens == -1 && pl.deployment_hours == -1);
    SVC_CHECK(!pl.hard);
    SVC_CHECK(plan(p, "biz Biz price_b 0 eur run_minutes=0 model_tokens=1000000 "
                   "deployment_hours=720 hard=on interval=year", &pl, &err) == APR_SUCCESS);
    SVC_CHECK(pl.run_minutes == 0 && pl.model_tokens == 1000000 && pl.deployment_hours == 720);
    SVC_CHECK(pl.hard);
    SVC_CHECK_STR(pl.interval, "year");

    SVC_CHECK(plan(p, "team Team price_1 2900", &pl, &err) == APR_EINVAL);
    SVC_CHECK(strstr(err, "takes ID NAME PRICE_ID AMOUNT CURRENCY") != NULL);
    SVC_CHECK(plan(p, "Team Team price_1 2900 usd", &pl, &err) == APR_EINVAL);
    SVC_CHECK(strstr(err, "the ID") != NULL);
    SVC_CHECK(plan(p, "team Team price-1 2900 usd", &pl, &err) == APR_EINVAL);
    SVC_CHECK(strstr(err, "PRICE_ID") != NULL);
    SVC_CHECK(plan(p, "team Team price_1 29.00 usd", &pl, &err) == APR_EINVAL);
    SVC_CHECK(strstr(err, "AMOUNT") != NULL);
    SVC_CHECK(plan(p, "team Team price_1 2900 dollars", &pl, &err) == APR_EINVAL);
    SVC_CHECK(strstr(err, "CURRENCY") != NULL);
    SVC_CHECK(plan(p, "team Team price_1 2900 usd minutes=5", &pl, &err) == APR_EINVAL);
    SVC_CHECK(strstr(err, "unknown setting minutes") != NULL);
    SVC_CHECK(plan(p, "team Team price_1 2900 usd run_minutes=-5", &pl, &err) == APR_EINVAL);
    SVC_CHECK(strstr(err, "run_minutes must be a whole number") != NULL);
    SVC_CHECK(plan(p, "team Team price_1 2900 usd run_minutes", &pl, &err) == APR_EINVAL);
    SVC_CHECK(plan(p, "team Team price_1 2900 usd hard=yes", &pl, &err) == APR_EINVAL);
    SVC_CHECK(strstr(err, "hard=on or hard=off") != NULL);
    SVC_CHECK(plan(p, "team Team price_1 2900 usd interval=week", &pl, &err) == APR_EINVAL);
}

SVC_TEST(form_encoding)
{
    const char *params[] = {
        "metadata[org_id]", "org_1", "success_url", "https://x.test/done?s={CHECKOUT_SESSION_ID}&a=b",
        "line_items[0][quantity]", "1", "name", "Ünïcode & co", NULL
    };

    SVC_CHECK_STR(svc_stripe_form(p, params),
                  "metadata%5Borg_id%5D=org_1"
                  "&success_url=https%3A%2F%2Fx.test%2Fdone%3Fs%3D%7BCHECKOUT_SESSION_ID%7D%26a%3Db"
                  "&line_items%5B0%5D%5Bquantity%5D=1"
                  "&name=%C3%9Cn%C3%AFcode%20%26%20co");
    SVC_CHECK_STR(svc_stripe_form(p, NULL), "");
}

SVC_TEST(redact_provider_keys)
{
    SVC_CHECK_STR(svc_redact(p, "key sk_test_51HxYzAbCdEfGhIjKlMnOp end"), "key [REDACTED] end");
    SVC_CHECK_STR(svc_redact(p, "sk_live_0123456789abcdefXYZ"), "[REDACTED]");
    SVC_CHECK_STR(svc_redact(p, "restricted rk_live_0123456789abcdefXY,"), "restricted [REDACTED],");
    SVC_CHECK_STR(svc_redact(p, "secret=whsec_0123456789abcdef0123"), "secret=[REDACTED]");
    SVC_CHECK_STR(svc_redact(p, "whsec_0123456789abcdef0123"), "[REDACTED]");
    /* The provider's masked form, and ids, are not secrets. */
    SVC_CHECK_STR(svc_redact(p, "Invalid API Key provided: sk_test_****abcd"),
                  "Invalid API Key provided: sk_test_****abcd");
    SVC_CHECK_STR(svc_redact(p, "cus_NffrFeUfNV2Hib pm_1MqM05LkdIwHu7ix"),
                  "cus_NffrFeUfNV2Hib pm_1MqM05LkdIwHu7ix");
}

int main(int argc, const char *const *argv)
{
    return svc_test_run(argc, argv);
}
