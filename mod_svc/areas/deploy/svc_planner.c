/*
 * svc_planner.c: the deployment planner (svc_deploy.h), on a thread of the
 * run supervisor's process.
 *
 * It claims the oldest deployment waiting in `planning` (a lease in the
 * row: planner, planner_until; FOR UPDATE SKIP LOCKED, so planners of
 * several nodes never take the same one), reads what the run's artifact
 * holds (git in the run sandbox: svc_run_artifact_tree), and proposes a
 * plan: the Procfile's web process when there is one, without a model
 * call; else the org's default model is asked, in JSON mode, with the file
 * list and the build files, and its reply is checked. The deployment
 * becomes `planned` (with a new plan version) or `plan_failed` (error
 * no_provider, provider_error, model_reply_invalid, ...), with its event
 * and an audit entry, unless it left `planning` meanwhile (torn down): the
 * plan is then dropped. A model call holds no transaction; a planner that
 * dies mid-plan leaves a claim that runs out, and another plans it again
 * (three attempts at most).
 *
 * It sleeps in poll() on its own LISTEN svc_deploy connection (sql/020: a
 * deployment entering planning notifies), and looks at the table every few
 * seconds for what was missed while the database was away.
 *
 * It also sweeps the deployments' replica-time (sql/022): every
 * PLANNER_USAGE_S, what has run past a full UTC hour is written as usage
 * up to that hour, so a long-running deployment's hours show in this
 * hour's usage, and a month's end splits them.
 */
#include "svc_deploy_store.h"
#include "svc_providers.h"
#include "svc_telemetry.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#define PLANNER_POLL_MS     2000
#define PLANNER_RECONNECT   apr_time_from_sec(1)
#define PLANNER_ATTEMPTS    3
/* Telemetry older than TELEMETRY_KEEP_DAYS is dropped this often. */
#define TELEMETRY_SWEEP_EVERY apr_time_from_sec(3600)
/* A claim lasts the model's time and the artifact's reading, and more. */
#define PLANNER_LEASE_EXTRA 180
/* How often the replica-time is swept (a few rows an hour at most). */
#define PLANNER_USAGE_S     10

static const svc_stmt_t st_plan_claim = {
    "svc_deploy_plan_claim",
    "UPDATE deployments SET planner = $1, planner_until = now() + make_interval(secs => $2::int),"
    " plan_attempts = plan_attempts + 1"
    " WHERE id = (SELECT id FROM deployments WHERE status = 'planning'"
    "   AND (planner IS NULL OR planner_until < now()) ORDER BY seq"
    "   FOR UPDATE SKIP LOCKED LIMIT 1)"
    " RETURNING id, org_id, run_id, created_by, plan_attempts",
    2, 0
};

typedef struct {
    const svc_supervisor_conf_t *sc;
    apr_pool_t *p;
    const char *node;
    apr_pool_t *db_pool;
    svc_db_t *db;
    apr_time_t next_connect;
    apr_time_t next_usage;
} planner_t;

/* One claimed deployment. */
typedef struct {
    const char *id;
    const char *org_id;
    const char *run_id;
    const char *created_by;
} job_t;

/* What planning came to: a plan (JSON text), or an error. */
typedef struct {
    const char *plan;
    const char *code;
    const char *message;
    const char *source;
} outcome_t;

static void say(const planner_t *pl, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(const planner_t *pl, int level, const char *fmt, ...)
{
    apr_pool_t *sp;
    va_list ap;

    apr_pool_create(&sp, pl->p);
    va_start(ap, fmt);
    pl->sc->log(pl->sc->log_baton, level, svc_redact(sp, apr_pvsprintf(sp, fmt, ap)));
    va_end(ap);
    apr_pool_destroy(sp);
}

static void db_drop(planner_t *pl)
{
    if (pl->db_pool) {
        apr_pool_destroy(pl->db_pool);
        pl->db_pool = NULL;
        pl->db = NULL;
    }
    pl->next_connect = apr_time_now() + PLANNER_RECONNECT;
}

/* The connection, listening; NULL until the database is there. */
static svc_db_t *db_get(planner_t *pl)
{
    const char *err = NULL;

    if (pl->db) {
        return pl->db;
    }
    if (apr_time_now() < pl->next_connect) {
        return NULL;
    }
    apr_pool_create(&pl->db_pool, pl->p);
    if (svc_db_connect(&pl->db, pl->sc->conninfo, pl->db_pool, &err) != APR_SUCCESS) {
        db_drop(pl);
        return NULL;
    }
    svc_db_set_statement_timeout(pl->db, pl->sc->statement_timeout_ms);
    if (svc_db_simple(pl->db, "LISTEN svc_deploy", pl->db_pool) != APR_SUCCESS) {
        db_drop(pl);
        return NULL;
    }
    return pl->db;
}

static void on_notice(void *baton, const char *channel, const char *payload)
{
    *(int *)baton = 1;
}

static void fail(outcome_t *o, const char *code, const char *message)
{
    o->plan = NULL;
    o->code = code;
    o->message = message;
}

/* The model's plan for what the artifact holds. Short database use only. */
static void ask_model(planner_t *pl, svc_db_t *db, apr_pool_t *p, const job_t *job,
                      const apr_array_header_t *files, apr_hash_t *contents, outcome_t *o)
{
    svc_llm_msg_t msg = { .role = "user" };
    svc_llm_request_t req = { .system = svc_deploy_plan_system, .messages = &msg,
                              .nmessages = 1, .json = 1, .max_tokens = 1024 };
    svc_usage_t usage = { .org_id = job->org_id, .user_id = job->created_by,
                          .purpose = "deployment.plan", .subject_type = "deployment",
                          .subject_id = job->id };
    svc_llm_reply_t *reply = NULL;
    svc_provider_t *prov;
    const char *why;
    json_t *plan;
    apr_status_t rv = svc_provider_default(db, p, pl->sc->conf, job->org_id, &prov);

    o->source = "model";
    if (rv == SVC_ENOTFOUND) {
        fail(o, "no_provider", "The artifact has no Procfile, and the organization has no "
             "default model provider to plan with: add one (POST .../providers, then make it "
             "the default), or add a Procfile with a web process, and replan.");
        return;
    }
    if (rv == APR_EINVAL) {
        fail(o, "provider_key_unreadable", "The default provider's key cannot be opened "
             "(the server secret changed since it was stored): set the key again.");
        return;
    }
    if (rv != APR_SUCCESS) {
        fail(o, "internal", "The provider could not be read.");
        return;
    }
    msg.content = svc_deploy_plan_prompt(p, files, contents);
    svc_provider_complete(p, pl->sc->conf, prov, &req, &reply);
    if (svc_provider_record_usage(db, p, prov, &usage, reply) != APR_SUCCESS) {
        say(pl, SVC_SUP_WARNING, "SVC0600: deployment %s: the model call's usage could not "
            "be recorded", job->id);
    }
    if (reply->error_code) {
        fail(o, "provider_error", apr_pstrcat(p, "The model provider failed: ",
                                              reply->error ? reply->error : reply->error_code,
                                              NULL));
        return;
    }
    if (!(plan = svc_deploy_plan_reply(p, reply->content, &why))) {
        fail(o, "model_reply_invalid",
             apr_pstrcat(p, "The model's answer was not a usable plan: ", why, ".", NULL));
        return;
    }
    o->plan = svc_json_dump(p, svc_json_pool(p, plan));
}

/* Plans one deployment: what the artifact holds, then Procfile or model. */
static void plan(planner_t *pl, svc_db_t *db, apr_pool_t *p, const job_t *job, int attempts,
                 outcome_t *o)
{
    apr_array_header_t *files;
    apr_hash_t *contents;
    const char *bundle, *err, *procfile, *command;
    apr_size_t len;
    apr_status_t rv;

    memset(o, 0, sizeof(*o));
    if (attempts > PLANNER_ATTEMPTS) {
        fail(o, "internal", "Planning was cut off three times (the planner's process died); "
             "replan to try again.");
        return;
    }
    rv = svc_run_artifact(db, p, job->org_id, job->run_id, &bundle, &len);
    if (rv != APR_SUCCESS) {
        fail(o, "artifact_missing", "The run's artifact could not be read.");
        return;
    }
    if (svc_run_artifact_tree(pl->sc, p, bundle, len, svc_deploy_build_files, PLAN_FILE_MAX,
                              &files, &contents, &err) != APR_SUCCESS) {
        say(pl, SVC_SUP_WARNING, "SVC0601: deployment %s: the artifact of run %s could not be "
            "read: %s", job->id, job->run_id, err);
        fail(o, "artifact_unreadable", apr_pstrcat(p, "The run's artifact could not be read: ",
                                                   err, ".", NULL));
        return;
    }
    procfile = apr_hash_get(contents, "Procfile", APR_HASH_KEY_STRING);
    if (procfile && (command = svc_deploy_procfile_web(p, procfile)) != NULL) {
        o->source = "procfile";
        o->plan = svc_json_dump(p, svc_json_pool(p, svc_deploy_plan_procfile(command)));
        return;
    }
    ask_model(pl, db, p, job, files, contents, o);
}

/* What write_outcome's transaction needs. */
typedef struct {
    planner_t *pl;
    const job_t *job;
    const outcome_t *o;
} outcome_tx_t;

/* Left planning meanwhile: nothing of this planner's is written (a status
 * of the planner's own, far from the shared ones of svc_types.h). */
#define OUTCOME_DROPPED (SVC_ERRSPACE + 2101)

static apr_status_t outcome_tx(svc_db_t *db, apr_pool_t *p, void *baton)
{
    const outcome_tx_t *t = baton;
    svc_dep_change_t chg = { -1, NULL, NULL, NULL, NULL };
    svc_deployment_t *dep;
    svc_actor_t actor = { .kind = "system" };
    apr_status_t rv;

    if ((rv = svc_dep_lock(db, p, t->job->org_id, t->job->id, &dep)) != APR_SUCCESS) {
        return rv;
    }
    if (strcmp(dep->status, DS_PLANNING) != 0 || !dep->planner
        || strcmp(dep->planner, t->pl->node) != 0) {
        return OUTCOME_DROPPED;
    }
    chg.plan = t->o->plan;
    chg.error_code = t->o->code;
    chg.error_message = t->o->message;
    return svc_dep_move(db, p, &actor, dep, t->o->plan ? DS_PLANNED : DS_PLAN_FAILED, &chg,
                        "deployment.status_changed",
                        svc_json_pool(p, json_pack("{s:s,s:s?}", "via", "planner",
                                                   "source", t->o->source)));
}

/* Writes the outcome, if the deployment still waits for this planner. */
static apr_status_t write_outcome(planner_t *pl, svc_db_t *db, apr_pool_t *p, const job_t *job,
                                  const outcome_t *o)
{
    outcome_tx_t t = { pl, job, o };
    apr_status_t rv = svc_db_tx(db, p, outcome_tx, &t);

    if (rv == OUTCOME_DROPPED) {
        /* Torn down, or replanned and claimed anew, meanwhile. */
        say(pl, SVC_SUP_INFO, "SVC0602: deployment %s left planning meanwhile; its plan is "
            "dropped", job->id);
        return APR_SUCCESS;
    }
    /* Gone altogether (its org removed): nothing to write. */
    return rv == SVC_ENOTFOUND ? APR_SUCCESS : rv;
}

/* Claims and plans what waits, one after the other; 0 when nothing did. */
static int plan_waiting(planner_t *pl, volatile sig_atomic_t *stop)
{
    int planned = 0;

    while (!*stop) {
        svc_db_t *db = db_get(pl);
        apr_int64_t attempts = 0;
        svc_dbres_t *res;
        outcome_t o;
        job_t job;
        apr_pool_t *p;
        apr_status_t rv;

        if (!db) {
            return planned;
        }
        apr_pool_create(&p, pl->p);
        rv = svc_db_execv(db, &st_plan_claim, p, &res, pl->node,
                          apr_itoa(p, (int)(pl->sc->conf->model_timeout_ms / 1000)
                                   + PLANNER_LEASE_EXTRA));
        if (rv != APR_SUCCESS || svc_dbres_rows(res) != 1) {
            if (rv == SVC_EDBDOWN) {
                db_drop(pl);
            }
            apr_pool_destroy(p);
            return planned;
        }
        job.id = apr_pstrdup(p, svc_dbres_str(res, 0, 0));
        job.org_id = apr_pstrdup(p, svc_dbres_str(res, 0, 1));
        job.run_id = apr_pstrdup(p, svc_dbres_str(res, 0, 2));
        job.created_by = svc_dbres_isnull(res, 0, 3) ? NULL
                         : apr_pstrdup(p, svc_dbres_str(res, 0, 3));
        if (svc_dbres_int64(res, 0, 4, &attempts) != APR_SUCCESS) {
            attempts = PLANNER_ATTEMPTS + 1;
        }
        say(pl, SVC_SUP_INFO, "SVC0603: deployment %s: planning (attempt %d)", job.id,
            (int)attempts);
        plan(pl, db, p, &job, (int)attempts, &o);
        rv = write_outcome(pl, db, p, &job, &o);
        if (rv != APR_SUCCESS) {
            say(pl, SVC_SUP_WARNING, "SVC0604: deployment %s: its plan could not be written "
                "(%s); it is planned again when the claim runs out", job.id,
                svc_db_errmsg(db));
            if (rv == SVC_EDBDOWN) {
                db_drop(pl);
            }
        }
        else {
            say(pl, SVC_SUP_INFO, "SVC0605: deployment %s: %s%s%s", job.id,
                o.plan ? "planned" : "plan failed: ", o.plan ? "" : o.code,
                o.plan ? (strcmp(o.source, "procfile") == 0 ? " from the Procfile"
                                                             : " by the model") : "");
        }
        apr_pool_destroy(p);
        planned = 1;
    }
    return planned;
}

typedef struct {
    const char *org_id;
    const char *id;
    int recorded;
} usage_tx_t;

static apr_status_t usage_tx(svc_db_t *db, apr_pool_t *p, void *baton)
{
    usage_tx_t *t = baton;

    return svc_dep_usage_hours(db, p, t->org_id, t->id, &t->recorded);
}

/* Writes the full hours of running deployments as usage, one deployment
 * per transaction; what fails now is written at a later sweep, as the
 * time stays counted in the row. */
static void usage_sweep(planner_t *pl)
{
    apr_array_header_t *due;
    svc_db_t *db = db_get(pl);
    apr_pool_t *p;
    apr_status_t rv;
    int i;

    if (!db || apr_time_now() < pl->next_usage) {
        return;
    }
    pl->next_usage = apr_time_now() + apr_time_from_sec(PLANNER_USAGE_S);
    apr_pool_create(&p, pl->p);
    rv = svc_dep_usage_due(db, p, &due);
    for (i = 0; rv == APR_SUCCESS && i + 1 < due->nelts; i += 2) {
        usage_tx_t t = { APR_ARRAY_IDX(due, i + 1, const char *),
                         APR_ARRAY_IDX(due, i, const char *), 0 };

        if ((rv = svc_db_tx(db, p, usage_tx, &t)) == APR_SUCCESS && t.recorded) {
            say(pl, SVC_SUP_INFO, "SVC0607: deployment %s: %d hour(s) of replica-time "
                "recorded as usage", t.id, t.recorded);
        }
    }
    if (rv != APR_SUCCESS) {
        say(pl, SVC_SUP_WARNING, "SVC0608: deployments' replica-time could not be recorded "
            "now (%s); it is at the next sweep", svc_db_errmsg(db));
        if (rv == SVC_EDBDOWN) {
            db_drop(pl);
        }
    }
    apr_pool_destroy(p);
}

void svc_deploy_planner_run(const svc_supervisor_conf_t *sc, volatile sig_atomic_t *stop,
                            apr_pool_t *p)
{
    char host[256];
    planner_t pl;
    apr_time_t last = 0, next_sweep = 0;
    int look = 1;

    memset(&pl, 0, sizeof(pl));
    pl.sc = sc;
    apr_pool_create(&pl.p, p);
    if (gethostname(host, sizeof(host)) != 0) {
        apr_cpystrn(host, "localhost", sizeof(host));
    }
    host[sizeof(host) - 1] = '\0';
    pl.node = apr_psprintf(pl.p, "%.200s/%ld/planner", host, (long)getpid());
    while (!*stop) {
        struct pollfd pfd;
        svc_db_t *db;
        int heard = 0;

        /* The planner's thread keeps the telemetry's tables in bounds too,
         * hourly. Several nodes may sweep: a row deleted twice is deleted
         * once. */
        if (apr_time_now() >= next_sweep && (db = db_get(&pl)) != NULL) {
            apr_pool_t *sp;
            apr_int64_t dropped = 0;
            apr_pool_create(&sp, pl.p);
            next_sweep = apr_time_now() + TELEMETRY_SWEEP_EVERY;
            if (svc_telemetry_sweep(db, sp, &dropped) != APR_SUCCESS) {
                say(&pl, SVC_SUP_WARNING, "SVC0781: old deployment telemetry could not be "
                    "dropped (%s); trying again in an hour", svc_db_errmsg(db));
            }
            else if (dropped > 0) {
                say(&pl, SVC_SUP_INFO, "SVC0782: %" APR_INT64_T_FMT " row(s) of deployment "
                    "telemetry older than %d days dropped", dropped, TELEMETRY_KEEP_DAYS);
            }
            apr_pool_destroy(sp);
        }

        /* What waits now (at the start, on a notice, and every few seconds
         * for notices missed while the database was away). */
        if (look) {
            last = apr_time_now();
            look = 0;
            plan_waiting(&pl, stop);
            usage_sweep(&pl);
            continue;
        }
        if (!(db = db_get(&pl))) {
            apr_sleep(apr_time_from_msec(250));
            look = apr_time_now() - last >= apr_time_from_msec(PLANNER_POLL_MS);
            continue;
        }
        pfd.fd = svc_db_socket(db);
        pfd.events = POLLIN;
        pfd.revents = 0;
        /* In slices, so a stop is seen soon. */
        if (pfd.fd < 0 || (poll(&pfd, 1, 250) < 0 && errno != EINTR)
            || svc_db_notifications(db, on_notice, &heard) != APR_SUCCESS) {
            db_drop(&pl);
            look = 1;
            continue;
        }
        look = heard || apr_time_now() - last >= apr_time_from_msec(PLANNER_POLL_MS);
    }
    db_drop(&pl);
    apr_pool_destroy(pl.p);
}
