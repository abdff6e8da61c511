/*
 * test_pipeline.c: the pipeline's pure parts (the price table and its
 * matching, the token reckoning, a task's instructions) and, against
 * PostgreSQL, the incident filing the deployments area will call.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"
#include "svc_testdb.h"
#include "svc_build.h"
#include "svc_estimate.h"

#include <sodium.h>

static int near(double a, double b)
{
    return a - b < 1e-9 && b - a < 1e-9;
}

SVC_TEST(prices_shipped)
{
    svc_config_t conf;
    svc_price_t pr;

    memset(&conf, 0, sizeof(conf));
    SVC_CHECK(svc_price_of(&conf, "gpt-4o", &pr));
    SVC_CHECK(near(pr.input_per_mtok, 2.50) && near(pr.output_per_mtok, 10.00));
    SVC_CHECK_STR(pr.source, "the shipped table");
    /* Dated and -latest names take their family's price; the longest
     * family wins (gpt-4o-mini is not gpt-4o). */
    SVC_CHECK(svc_price_of(&conf, "gpt-4o-mini-2024-07-18", &pr));
    SVC_CHECK_STR(pr.entry, "gpt-4o-mini");
    SVC_CHECK(near(pr.input_per_mtok, 0.15));
    SVC_CHECK(svc_price_of(&conf, "gpt-4o-2024-08-06", &pr));
    SVC_CHECK_STR(pr.entry, "gpt-4o");
    SVC_CHECK(svc_price_of(&conf, "o3-mini-2025-01-31", &pr));
    SVC_CHECK_STR(pr.entry, "o3-mini");
    SVC_CHECK(svc_price_of(&conf, "claude-sonnet-4-20250514", &pr));
    SVC_CHECK_STR(pr.entry, "claude-sonnet-4");
    SVC_CHECK(near(pr.output_per_mtok, 15.00));
    SVC_CHECK(svc_price_of(&conf, "claude-3-5-haiku-latest", &pr));
    SVC_CHECK(near(pr.input_per_mtok, 0.80));
    /* A name that only starts like one is not it. */
    SVC_CHECK(!svc_price_of(&conf, "gpt-4ox", &pr));
    SVC_CHECK(!svc_price_of(&conf, "gpt-4", &pr));
    SVC_CHECK(!svc_price_of(&conf, "llama3.1", &pr));
    SVC_CHECK(!svc_price_of(&conf, NULL, &pr));
}

SVC_TEST(prices_configured_first)
{
    svc_config_t conf;
    svc_model_price_t *mp;
    svc_price_t pr;

    memset(&conf, 0, sizeof(conf));
    conf.model_prices = apr_array_make(p, 2, sizeof(svc_model_price_t));
    mp = apr_array_push(conf.model_prices);
    mp->model = "gpt-4o";
    mp->input_per_mtok = 1.25;
    mp->output_per_mtok = 5;
    mp = apr_array_push(conf.model_prices);
    mp->model = "llama3.1";
    mp->input_per_mtok = 0;
    mp->output_per_mtok = 0;
    SVC_CHECK(svc_price_of(&conf, "gpt-4o-2024-11-20", &pr));
    SVC_CHECK(near(pr.input_per_mtok, 1.25));
    SVC_CHECK_STR(pr.source, "SvcModelPrice");
    SVC_CHECK(svc_price_of(&conf, "llama3.1", &pr));
    SVC_CHECK(near(pr.output_per_mtok, 0));
    /* What the operator did not name still comes from the table. */
    SVC_CHECK(svc_price_of(&conf, "gpt-4o-mini", &pr));
    SVC_CHECK_STR(pr.source, "the shipped table");
}

SVC_TEST(tokens_and_costs)
{
    svc_price_t pr = { "gpt-4o-mini", 0.15, 0.60, "t" };

    SVC_CHECK_INT(svc_estimate_tokens(0), 0);
    SVC_CHECK_INT(svc_estimate_tokens(1), 1);
    SVC_CHECK_INT(svc_estimate_tokens(4), 1);
    SVC_CHECK_INT(svc_estimate_tokens(5), 2);
    SVC_CHECK_INT(svc_estimate_input(400), 100 + SVC_ESTIMATE_PROMPT_TOKENS);
    SVC_CHECK_INT(svc_estimate_output(10), SVC_ESTIMATE_OUTPUT_MIN);
    SVC_CHECK_INT(svc_estimate_output(4000), 3000);
    SVC_CHECK_INT(svc_estimate_output(1000000), SVC_ESTIMATE_OUTPUT_MAX);
    SVC_CHECK(near(svc_cost_of(&pr, 1000000, 1000000), 0.75));
    SVC_CHECK(near(svc_cost_of(&pr, 1234, 5678), 0.003592));   /* 0.0001851 + 0.0034068 */
    SVC_CHECK(near(svc_round_micro(0.0000005), 0.000001));
}

SVC_TEST(instructions)
{
    const char *t, *toc = "1. One\n2. Two\n";
    char *big, *huge, *wide;
    apr_size_t n;

    t = svc_build_instructions(p, "Greeter", "One", "Say hi.", 7, toc, strlen(toc));
    SVC_CHECK(t && strncmp(t, "# One\n\nSay hi.\n", 15) == 0);
    SVC_CHECK(t && strstr(t, "\"Greeter\"") && strstr(t, "2. Two\n"));
    /* A long table of contents is cut to fit 65536 characters. */
    big = apr_palloc(p, 100001);
    memset(big, 'c', 100000);
    big[100000] = '\0';
    t = svc_build_instructions(p, "R", "S", "body", 4, big, 100000);
    SVC_CHECK(t && strstr(t, "is left out"));
    SVC_CHECK(t && strlen(t) <= SVC_RUN_INSTRUCTIONS_MAX);
    /* Characters count, not bytes: 30000 two-byte characters fit. */
    wide = apr_palloc(p, 60001);
    for (n = 0; n < 60000; n += 2) {
        wide[n] = (char)0xC3;
        wide[n + 1] = (char)0xA9;
    }
    wide[60000] = '\0';
    SVC_CHECK(svc_build_instructions(p, "R", "S", wide, 60000, "", 0) != NULL);
    /* A section that does not fit alone: NULL. */
    huge = apr_palloc(p, 70001);
    memset(huge, 'x', 70000);
    huge[70000] = '\0';
    SVC_CHECK(svc_build_instructions(p, "R", "S", huge, 70000, toc, strlen(toc)) == NULL);
}

/* The incident improvements the deployments area files, once per source. */
SVC_TEST(incident_filing)
{
    svc_db_t *db;
    svc_incident_t inc;
    const char *org = svc_id_new(p, "org_"), *prj = svc_id_new(p, "prj_");
    const char *usr = svc_id_new(p, "usr_");
    const char *slug = svc_testdb_name(p, "ut-inc");
    const char *id1 = NULL, *id2 = NULL, *id3 = NULL;
    char *s, *sl = apr_pstrdup(p, slug);
    int created = -1, ok = 1;

    if (!svc_testdb_conninfo()) {
        return;
    }
    if (!(db = svc_testdb_open(p))) {
        return;
    }
    for (s = sl; *s; s++) {
        *s = *s == '_' ? '-' : *s;
    }
    svc_testdb_pq(p, svc_db_conn(db), apr_psprintf(p,
        "BEGIN; INSERT INTO users (id, email, name) VALUES ('%s', '%s@example.test', 'Ida');"
        "INSERT INTO orgs (id, slug, name) VALUES ('%s', '%s', 'Inc');"
        "INSERT INTO org_members (org_id, user_id, role) VALUES ('%s', '%s', 'owner');"
        "INSERT INTO projects (id, org_id, slug, name) VALUES ('%s', '%s', 'p', 'P'); COMMIT",
        usr, sl, org, sl, org, usr, prj, org), &ok);
    SVC_CHECK(ok);
    memset(&inc, 0, sizeof(inc));
    inc.org_id = org;
    inc.project_id = prj;
    inc.title = "Deployment web is down";
    inc.body = "Health checks failed for 5 minutes.";
    inc.source_ref = "dep_abc";
    SVC_CHECK(svc_db_begin(db) == APR_SUCCESS);
    SVC_CHECK(svc_improvement_file_incident(db, p, &inc, &id1, &created) == APR_SUCCESS);
    SVC_CHECK(svc_db_commit(db) == APR_SUCCESS);
    SVC_CHECK_INT(created, 1);
    SVC_CHECK(id1 && strncmp(id1, "imp_", 4) == 0);
    /* The same incident again, while the first is open: that one. */
    SVC_CHECK(svc_improvement_file_incident(db, p, &inc, &id2, &created) == APR_SUCCESS);
    SVC_CHECK_INT(created, 0);
    SVC_CHECK_STR(id2, id1);
    SVC_CHECK_STR(svc_testdb_value(p, db, apr_psprintf(p,
        "SELECT source || '/' || kind || '/' || status || '/' || source_ref || '/' "
        "|| coalesce(created_by, 'nobody') FROM improvements WHERE id = '%s'", id1)),
        "incident/bug/open/dep_abc/nobody");
    SVC_CHECK_STR(svc_testdb_value(p, db, apr_psprintf(p,
        "SELECT actor_kind FROM audit_log WHERE target_id = '%s' AND action = "
        "'improvement.filed'", id1)), "system");
    SVC_CHECK_STR(svc_testdb_value(p, db, apr_psprintf(p,
        "SELECT data->>'source' FROM events WHERE org_id = '%s' AND kind = "
        "'improvement.filed'", org)), "incident");
    /* Once decided, the next incident of that source is a new one. */
    svc_testdb_value(p, db, apr_psprintf(p, "UPDATE improvements SET status = 'rejected', "
                                         "reason = 'fixed', decided_at = now() WHERE id = '%s'",
                                         id1));
    SVC_CHECK(svc_improvement_file_incident(db, p, &inc, &id3, &created) == APR_SUCCESS);
    SVC_CHECK_INT(created, 1);
    SVC_CHECK(id3 && strcmp(id3, id1) != 0);
    svc_testdb_value(p, db, apr_psprintf(p, "DELETE FROM orgs WHERE id = '%s'", org));
    svc_testdb_value(p, db, apr_psprintf(p, "DELETE FROM users WHERE id = '%s'", usr));
}

int main(int argc, const char *const *argv)
{
    if (sodium_init() < 0) {
        return 1;
    }
    return svc_test_run(argc, argv);
}
