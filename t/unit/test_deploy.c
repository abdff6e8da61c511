/*
 * test_deploy.c: the deploy area's rules without I/O: the Procfile's web
 * process, a model's plan checked field by field, which action each status
 * allows (docs/api/deployments.md), and what the model is told.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"
#include "svc_testdb.h"
#include "svc_deploy_rules.h"
#include "svc_telemetry.h"

SVC_TEST(procfile_web)
{
    SVC_CHECK_STR(svc_deploy_procfile_web(p, "web: python3 -m http.server $PORT\n"),
                  "python3 -m http.server $PORT");
    /* Comments, other processes, blanks and CRLF around it. */
    SVC_CHECK_STR(svc_deploy_procfile_web(p, "# a comment\nworker: sleep 1\r\n"
                                             "  web:   gunicorn app:app  \r\nrelease: x\n"),
                  "gunicorn app:app");
    SVC_CHECK_STR(svc_deploy_procfile_web(p, "web:npm start"), "npm start");
    SVC_CHECK(svc_deploy_procfile_web(p, "worker: sleep 1\n") == NULL);
    SVC_CHECK(svc_deploy_procfile_web(p, "web:\n") == NULL);
    SVC_CHECK(svc_deploy_procfile_web(p, "web:    \n") == NULL);
    SVC_CHECK(svc_deploy_procfile_web(p, "webapp: x\n") == NULL);
    SVC_CHECK(svc_deploy_procfile_web(p, "web: a\tb\n") == NULL);
    SVC_CHECK(svc_deploy_procfile_web(p, "") == NULL);
    {
        char *long_cmd = apr_palloc(p, 1100);
        memcpy(long_cmd, "web: ", 5);
        memset(long_cmd + 5, 'x', 1001);
        long_cmd[1006] = '\0';
        SVC_CHECK(svc_deploy_procfile_web(p, long_cmd) == NULL);
    }
}

SVC_TEST(plan_from_procfile)
{
    json_t *plan = svc_deploy_plan_procfile("npm start");

    SVC_CHECK_STR(json_string_value(json_object_get(plan, "command")), "npm start");
    SVC_CHECK_STR(json_string_value(json_object_get(plan, "port_env")), "PORT");
    SVC_CHECK_STR(json_string_value(json_object_get(plan, "health_path")), "/");
    SVC_CHECK(json_integer_value(json_object_get(plan, "replicas")) == 1);
    SVC_CHECK(json_integer_value(json_object_get(plan, "memory_mb")) == PLAN_MEMORY_DEFAULT);
    SVC_CHECK_STR(json_string_value(json_object_get(plan, "source")), "procfile");
    json_decref(plan);
}

SVC_TEST(plan_from_reply)
{
    const char *why;
    json_t *plan;
    static const char *const bad[] = {
        "not json",
        "[1]",
        "{\"health_path\": \"/\", \"replicas\": 1, \"memory_mb\": 128}",
        "{\"command\": \"\", \"health_path\": \"/\", \"replicas\": 1, \"memory_mb\": 128}",
        "{\"command\": \"a\\nb\", \"health_path\": \"/\", \"replicas\": 1, \"memory_mb\": 128}",
        "{\"command\": \"a\\u0000b\", \"health_path\": \"/\", \"replicas\": 1, \"memory_mb\": 128}",
        "{\"command\": \"x\", \"health_path\": \"health\", \"replicas\": 1, \"memory_mb\": 128}",
        "{\"command\": \"x\", \"health_path\": \"/a b\", \"replicas\": 1, \"memory_mb\": 128}",
        "{\"command\": \"x\", \"health_path\": \"/\", \"replicas\": 0, \"memory_mb\": 128}",
        "{\"command\": \"x\", \"health_path\": \"/\", \"replicas\": 11, \"memory_mb\": 128}",
        "{\"command\": \"x\", \"health_path\": \"/\", \"replicas\": \"2\", \"memory_mb\": 128}",
        "{\"command\": \"x\", \"health_path\": \"/\", \"replicas\": 1, \"memory_mb\": 32}",
        "{\"command\": \"x\", \"health_path\": \"/\", \"replicas\": 1, \"memory_mb\": 1.5}",
        "{\"command\": \"x\", \"health_path\": \"/\", \"replicas\": 1, \"memory_mb\": 128,"
        " \"port_env\": \"HTTP_PORT\"}",
        "{\"command\": \"x\", \"health_path\": \"/\", \"replicas\": 1, \"memory_mb\": 128,"
        " \"notes\": 5}",
        "{\"command\": \"x\", \"command\": \"y\", \"health_path\": \"/\", \"replicas\": 1,"
        " \"memory_mb\": 128}",
        NULL
    };
    int i;

    plan = svc_deploy_plan_reply(p, "{\"command\": \"python3 app.py\", \"health_path\": "
                                    "\"/health\", \"replicas\": 3, \"memory_mb\": 256, "
                                    "\"notes\": \"Flask.\", \"port_env\": \"PORT\", "
                                    "\"extra\": true}", &why);
    SVC_CHECK(plan != NULL && why == NULL);
    SVC_CHECK_STR(json_string_value(json_object_get(plan, "command")), "python3 app.py");
    SVC_CHECK_STR(json_string_value(json_object_get(plan, "health_path")), "/health");
    SVC_CHECK(json_integer_value(json_object_get(plan, "replicas")) == 3);
    SVC_CHECK(json_integer_value(json_object_get(plan, "memory_mb")) == 256);
    SVC_CHECK_STR(json_string_value(json_object_get(plan, "source")), "model");
    SVC_CHECK(json_object_get(plan, "extra") == NULL);
    json_decref(plan);
    for (i = 0; bad[i]; i++) {
        why = NULL;
        plan = svc_deploy_plan_reply(p, bad[i], &why);
        if (plan || !why) {
            fprintf(stderr, "accepted: %s\n", bad[i]);
        }
        SVC_CHECK(plan == NULL && why != NULL);
        json_decref(plan);
    }
}

SVC_TEST(actions_by_status)
{
    SVC_CHECK(svc_deploy_action_allowed(DA_APPROVE, DS_PLANNED));
    SVC_CHECK(!svc_deploy_action_allowed(DA_APPROVE, DS_PLANNING));
    SVC_CHECK(!svc_deploy_action_allowed(DA_APPROVE, DS_RUNNING));
    SVC_CHECK(svc_deploy_action_allowed(DA_REPLAN, DS_RUNNING));
    SVC_CHECK(svc_deploy_action_allowed(DA_REPLAN, DS_PLAN_FAILED));
    SVC_CHECK(!svc_deploy_action_allowed(DA_REPLAN, DS_PLANNING));
    SVC_CHECK(svc_deploy_action_allowed(DA_STOP, DS_RUNNING));
    SVC_CHECK(!svc_deploy_action_allowed(DA_STOP, DS_STOPPED));
    SVC_CHECK(svc_deploy_action_allowed(DA_START, DS_STOPPED));
    SVC_CHECK(!svc_deploy_action_allowed(DA_START, DS_RUNNING));
    SVC_CHECK(svc_deploy_action_allowed(DA_SCALE, DS_STOPPED));
    SVC_CHECK(svc_deploy_action_allowed(DA_TEARDOWN, DS_PLANNING));
    SVC_CHECK(svc_deploy_action_allowed(DA_SEPARATE, DS_RUNNING));
    SVC_CHECK(!svc_deploy_action_allowed(DA_SEPARATE, DS_STOPPED));
    /* Terminal and waiting statuses allow nothing but what the table says. */
    {
        static const svc_deploy_action_e all[] = { DA_APPROVE, DA_REPLAN, DA_STOP, DA_START,
                                                   DA_SCALE, DA_TEARDOWN, DA_SEPARATE };
        size_t i;
        for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
            SVC_CHECK(!svc_deploy_action_allowed(all[i], DS_TORN_DOWN));
            SVC_CHECK(!svc_deploy_action_allowed(all[i], DS_SEPARATED));
            SVC_CHECK(!svc_deploy_action_allowed(all[i], DS_TEARING_DOWN));
            SVC_CHECK(!svc_deploy_action_allowed(all[i], DS_SEPARATING));
        }
    }
    SVC_CHECK_STR(svc_deploy_action_from(p, DA_APPROVE), "planned");
    SVC_CHECK_STR(svc_deploy_action_from(p, DA_START), "stopped or failed");
    SVC_CHECK_STR(svc_deploy_action_from(p, DA_STOP), "deploying, running or failed");
}

SVC_TEST(prompt)
{
    apr_array_header_t *files = apr_array_make(p, 4, sizeof(const char *));
    apr_hash_t *contents = apr_hash_make(p);
    const char *text;
    int i;

    APR_ARRAY_PUSH(files, const char *) = "app.py";
    APR_ARRAY_PUSH(files, const char *) = "requirements.txt";
    apr_hash_set(contents, "requirements.txt", APR_HASH_KEY_STRING, "flask==3.0");
    text = svc_deploy_plan_prompt(p, files, contents);
    SVC_CHECK(strstr(text, "app.py\nrequirements.txt\n") != NULL);
    SVC_CHECK(strstr(text, "--- requirements.txt ---\nflask==3.0\n") != NULL);
    /* A long list is cut, and says so. */
    for (i = 0; i < PLAN_LIST_MAX + 5; i++) {
        APR_ARRAY_PUSH(files, const char *) = apr_psprintf(p, "f%d", i);
    }
    text = svc_deploy_plan_prompt(p, files, contents);
    SVC_CHECK(strstr(text, "(and 7 more)") != NULL);
    SVC_CHECK(strstr(svc_deploy_plan_system, "JSON") != NULL);
}

/*
 * The telemetry sweep (sql/023): samples, probes and log requests older
 * than 30 days go, younger ones stay; an agent boot's number (sql/027) goes
 * 48 hours after the boot was last heard. In a transaction rolled back at the
 * end, with foreign keys off for it (the rows name a deployment that does
 * not exist), so nothing stays behind.
 */
SVC_TEST(telemetry_sweep)
{
    const char *dep, *org;
    apr_int64_t dropped = -1;
    svc_db_t *db;

    if (!svc_testdb_conninfo() || !(db = svc_testdb_open(p))) {
        return;
    }
    dep = svc_testdb_name(p, "dep_");
    org = svc_testdb_name(p, "org_");
    svc_testdb_value(p, db, "BEGIN");
    svc_testdb_value(p, db, "SET LOCAL session_replication_role = replica");
    svc_testdb_value(p, db, apr_psprintf(p,
        "INSERT INTO deploy_metrics (deployment_id, replica, at, cpu_seconds, rss_bytes, fds,"
        " restarts) VALUES ('%s', 0, now() - interval '31 days', 1, 1, 1, 0),"
        " ('%s', 0, now() - interval '29 days', 1, 1, 1, 0)", dep, dep));
    svc_testdb_value(p, db, apr_psprintf(p,
        "INSERT INTO deploy_probes (deployment_id, replica, at, ok, latency_ms)"
        " VALUES ('%s', 1, now() - interval '30 days 1 minute', false, NULL),"
        " ('%s', 1, now() - interval '1 hour', true, 3)", dep, dep));
    svc_testdb_value(p, db, apr_psprintf(p,
        "INSERT INTO deploy_log_requests (id, org_id, deployment_id, target_id, lines,"
        " created_at) VALUES ('lgr_%sold', '%s', '%s', 'dtg_x', 10,"
        " now() - interval '31 days'), ('lgr_%snew', '%s', '%s', 'dtg_x', 10, now())",
        svc_random_base62(p, 16), org, dep, svc_random_base62(p, 16), org, dep));

    svc_testdb_value(p, db, apr_psprintf(p,
        "INSERT INTO deploy_telemetry_boots (target_id, boot, seq, seen_at)"
        " VALUES ('%s', repeat('a', 32), 7, now() - interval '49 hours'),"
        " ('%s', repeat('b', 32), 9, now() - interval '47 hours')", dep, dep));

    SVC_CHECK(svc_telemetry_sweep(db, p, &dropped) == APR_SUCCESS);
    /* Other tests' old rows may go in the same sweep: at least ours. */
    SVC_CHECK(dropped >= 4);
    SVC_CHECK_STR(svc_testdb_value(p, db, apr_psprintf(p,
        "SELECT string_agg(seq::text, ',') FROM deploy_telemetry_boots"
        " WHERE target_id = '%s'", dep)), "9");
    SVC_CHECK_STR(svc_testdb_value(p, db, apr_psprintf(p,
        "SELECT string_agg(extract(day FROM now() - at)::int::text, ',')"
        " FROM deploy_metrics WHERE deployment_id = '%s'", dep)), "29");
    SVC_CHECK_STR(svc_testdb_value(p, db, apr_psprintf(p,
        "SELECT string_agg(ok::text, ',') FROM deploy_probes WHERE deployment_id = '%s'",
        dep)), "true");
    SVC_CHECK_STR(svc_testdb_value(p, db, apr_psprintf(p,
        "SELECT string_agg(right(id, 3), ',') FROM deploy_log_requests"
        " WHERE deployment_id = '%s'", dep)), "new");
    svc_testdb_value(p, db, "ROLLBACK");
}

int main(int argc, const char *const *argv)
{
    return svc_test_run(argc, argv);
}
