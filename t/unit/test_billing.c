/*
 * test_billing.c: the billing area below HTTP: the webhook's signature (a
 * vector computed with Python's hmac, not with our code), SvcBillingPlan's
 * arguments, the provider's form encoding, and the redaction of the
 * provider's key shapes.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_testdb.h"
#include "svc_billing_api.h"
#include "svc_billing_store.h"
#include "svc_config.h"
#include "svc_providers.h"
#include "svc_redact.h"
#include "svc_stripe_client.h"

#include <math.h>
#include <sodium.h>
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


/* An org of its own (and its owner), in the unit tests' database. */
static const char *test_org(apr_pool_t *p, svc_db_t *db, const char **pusr)
{
    const char *org = svc_id_new(p, "org_"), *usr = svc_id_new(p, "usr_");
    char *slug = apr_pstrdup(p, svc_testdb_name(p, "ut-bill")), *c;
    int ok = 1;

    for (c = slug; *c; c++) {
        *c = *c == '_' ? '-' : *c;
    }
    svc_testdb_pq(p, svc_db_conn(db), apr_psprintf(p,
        "BEGIN; INSERT INTO users (id, email, name) VALUES ('%s', '%s@example.test', 'B');"
        "INSERT INTO orgs (id, slug, name) VALUES ('%s', '%s', 'Bill');"
        "INSERT INTO org_members (org_id, user_id, role) VALUES ('%s', '%s', 'owner'); COMMIT",
        usr, slug, org, slug, org, usr), &ok);
    SVC_CHECK(ok);
    *pusr = usr;
    return org;
}

static void drop_org(apr_pool_t *p, svc_db_t *db, const char *org, const char *usr)
{
    svc_testdb_value(p, db, apr_psprintf(p, "DELETE FROM orgs WHERE id = '%s'", org));
    svc_testdb_value(p, db, apr_psprintf(p, "DELETE FROM users WHERE id = '%s'", usr));
}

/* SQL matches model names against the price table as svc_price_of does in
 * C: exact first, then the longest entry followed by '-', SvcModelPrice
 * before the shipped table between equals. */
SVC_TEST(usage_priced_as_in_c)
{
    static const char *const models[] = {
        "gpt-4o", "gpt-4o-mini", "gpt-4o-mini-2024-07-18", "gpt-4o-2024-08-06",
        "o3-mini-2025-01-31", "claude-sonnet-4-20250514", "claude-3-5-haiku-latest",
        "house-9", "house-9-large", "gpt-4.1", "gpt-4.1-nano-x", "llama3.1", "gpt-4", NULL
    };
    svc_config_t conf;
    svc_model_price_t *mp;
    const char *org, *usr, *json;
    json_t *doc, *row;
    json_error_t jerr;
    svc_db_t *db;
    size_t i;
    int k;

    if (!svc_testdb_conninfo() || !(db = svc_testdb_open(p))) {
        return;
    }
    svc_config_defaults(&conf, p);
    conf.model_prices = apr_array_make(p, 2, sizeof(svc_model_price_t));
    mp = apr_array_push(conf.model_prices);
    mp->model = "gpt-4o";           /* an operator's price over the shipped one */
    mp->input_per_mtok = 1.25;
    mp->output_per_mtok = 5;
    mp = apr_array_push(conf.model_prices);
    mp->model = "house-9";
    mp->input_per_mtok = 0.3;
    mp->output_per_mtok = 0.7;
    org = test_org(p, db, &usr);
    for (k = 0; models[k]; k++) {
        svc_testdb_value(p, db, apr_psprintf(p,
            "INSERT INTO model_usage (org_id, provider_kind, model, input_tokens, "
            "output_tokens, duration_ms, purpose, status) VALUES ('%s', 'openai', '%s', "
            "1000000, %d, 1, 'provider.test', 'ok')", org, models[k], 2000000 + k));
    }
    SVC_CHECK(svc_billing_usage_doc(db, p, &conf, org, "2000-01-01T00:00:00Z",
                                    "2100-01-01T00:00:00Z", "model", &json) == APR_SUCCESS);
    doc = svc_json_pool(p, json_loads(json, 0, &jerr));
    SVC_CHECK(json_array_size(json_object_get(doc, "data")) == 13);
    json_array_foreach(json_object_get(doc, "data"), i, row) {
        const char *m = svc_json_str(row, "model");
        svc_price_t pr;
        double want = 0, got = json_number_value(json_object_get(row, "model_cost_usd"));
        for (k = 0; models[k] && strcmp(models[k], m) != 0; k++) {
        }
        if (svc_price_of(&conf, m, &pr)) {
            want = (1e6 * pr.input_per_mtok + (2000000.0 + k) * pr.output_per_mtok) / 1e6;
        }
        if (fabs(got - want) > 1e-6) {
            fprintf(stderr, "# %s: SQL priced %.6f, svc_price_of %.6f\n", m, got, want);
            svc_test_failed_checks++;
        }
    }
    SVC_CHECK_STR(svc_json_dump(p, json_object_get(doc, "unpriced_models")),
                  "[\"gpt-4\",\"llama3.1\"]");
    drop_org(p, db, org, usr);
}

SVC_TEST(usage_records_once)
{
    const char *org, *usr;
    svc_db_t *db;
    int rec = -1;

    if (!svc_testdb_conninfo() || !(db = svc_testdb_open(p))) {
        return;
    }
    org = test_org(p, db, &usr);
    SVC_CHECK(svc_billing_record_usage(db, p, org, NULL, "deployment", "dep_abcdefghijklmnop",
                                       2.5, "2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z",
                                       &rec) == APR_SUCCESS);
    SVC_CHECK_INT(rec, 1);
    SVC_CHECK(svc_billing_record_usage(db, p, org, NULL, "deployment", "dep_abcdefghijklmnop",
                                       2.5, "2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z",
                                       &rec) == APR_SUCCESS);
    SVC_CHECK_INT(rec, 0);
    SVC_CHECK(svc_billing_record_usage(db, p, org, NULL, "deployment", "dep_abcdefghijklmnop",
                                       -1, "2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z",
                                       &rec) == APR_EINVAL);
    SVC_CHECK(svc_billing_record_usage(db, p, org, NULL, "minutes", "x", 1,
                                       "2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z",
                                       &rec) == SVC_EINTEGRITY);
    SVC_CHECK_STR(svc_testdb_value(p, db, apr_psprintf(p,
        "SELECT sum(quantity)::text FROM usage_records WHERE org_id = '%s'", org)), "2.500000");
    drop_org(p, db, org, usr);
}

/* Two sweeps (as two nodes would): each level is sent once. */
SVC_TEST(budget_sweep_once)
{
    svc_config_t conf;
    const char *org, *usr;
    svc_db_t *db, *db2;
    int n1 = -1, n2 = -1;

    if (!svc_testdb_conninfo() || !(db = svc_testdb_open(p)) || !(db2 = svc_testdb_open(p))) {
        return;
    }
    svc_config_defaults(&conf, p);
    org = test_org(p, db, &usr);
    /* gpt-4o-mini at $0.15 / $0.60: 10M in and 10M out is $7.50 of $10. */
    svc_testdb_value(p, db, apr_psprintf(p,
        "INSERT INTO billing_accounts (org_id, budget_usd, budget_alerts) "
        "VALUES ('%s', 10, '{50,75,100}')", org));
    svc_testdb_value(p, db, apr_psprintf(p,
        "INSERT INTO model_usage (org_id, provider_kind, model, input_tokens, output_tokens, "
        "duration_ms, purpose, status) VALUES ('%s', 'openai', 'gpt-4o-mini', 10000000, "
        "10000000, 1, 'provider.test', 'ok')", org));
    SVC_CHECK(svc_billing_sweep(db, p, &conf, &n1) == APR_SUCCESS);
    SVC_CHECK(svc_billing_sweep(db2, p, &conf, &n2) == APR_SUCCESS);
    SVC_CHECK_STR(svc_testdb_value(p, db, apr_psprintf(p,
        "SELECT string_agg(level::text, ',' ORDER BY level) FROM billing_budget_alerts "
        "WHERE org_id = '%s'", org)), "50,75");
    SVC_CHECK_STR(svc_testdb_value(p, db, apr_psprintf(p,
        "SELECT count(*)::text FROM events WHERE org_id = '%s' AND kind = 'billing.budget'",
        org)), "2");
    SVC_CHECK_STR(svc_testdb_value(p, db, apr_psprintf(p,
        "SELECT count(*)::text || '/' || min(actor_kind) FROM audit_log WHERE org_id = '%s' "
        "AND action = 'billing.budget.alert'", org)), "2/system");
    drop_org(p, db, org, usr);
}

int main(int argc, const char *const *argv)
{
    if (sodium_init() < 0) {
        return 1;
    }
    return svc_test_run(argc, argv);
}
