/*
 * svc_run_store.c: the runs table and what hangs off it (svc_run_store.h).
 */
#include "svc_run_store.h"

#include <string.h>

/* Parts of an artifact as stored: no single value is large. */
#define ARTIFACT_PART (1024 * 1024)

static const svc_stmt_t st_claim = {
    "svc_runs_claim",
    "WITH c AS (SELECT r.id FROM runs r WHERE r.status = 'queued'"
    " AND NOT EXISTS (SELECT 1 FROM orgs o WHERE o.id = r.org_id"
    "                 AND o.suspended_at IS NOT NULL)"
    " ORDER BY r.seq LIMIT 1 FOR UPDATE OF r SKIP LOCKED)"
    " UPDATE runs r SET status = 'running', started_at = now(), lease_owner = $1,"
    " lease_expires_at = now() + make_interval(secs => $2::int), attempts = r.attempts + 1"
    " FROM c WHERE r.id = c.id"
    " RETURNING r.id, r.org_id, r.project_id, r.instructions, r.created_by,"
    " (SELECT u.name FROM users u WHERE u.id = r.created_by),"
    " (SELECT u.email FROM users u WHERE u.id = r.created_by),"
    " r.timeout_seconds, r.log_bytes, r.log_dropped, r.repository, r.repo_installation_id,"
    " r.max_steps, r.max_tokens, r.command_timeout",
    2, 0
};

static const svc_stmt_t st_renew = {
    "svc_runs_renew",
    "UPDATE runs SET lease_expires_at = now() + make_interval(secs => $2::int)"
    " WHERE lease_owner = $1 AND status = 'running' RETURNING id, cancel_requested",
    2, SVC_STMT_RETRY
};

static const svc_stmt_t st_expired = {
    "svc_runs_expired",
    "SELECT id, org_id, project_id FROM runs WHERE status = 'running'"
    " AND lease_expires_at < now() ORDER BY lease_expires_at LIMIT 1 FOR UPDATE SKIP LOCKED",
    0, 0
};

static const svc_stmt_t st_reap = {
    "svc_runs_reap",
    "UPDATE runs SET status = 'failed', error_code = 'lost', error_message = $2,"
    " finished_at = now(), lease_owner = NULL, lease_expires_at = NULL WHERE id = $1",
    2, 0
};

/* Every final status: succeeded sets the result and the artifact's size,
 * failed the error; the constraints check that the pair fits. */
static const svc_stmt_t st_end = {
    "svc_runs_end",
    "UPDATE runs SET status = $3, result = $4::jsonb, artifact_bytes = $5::bigint,"
    " error_code = $6, error_message = $7, finished_at = now(),"
    " lease_owner = NULL, lease_expires_at = NULL"
    " WHERE id = $1 AND lease_owner = $2 AND status = 'running'"
    " RETURNING org_id, project_id",
    7, 0
};

static const svc_stmt_t st_artifact_part = {
    "svc_runs_artifact_part",
    "INSERT INTO run_artifacts (run_id, part, data) VALUES ($1, $2::int, $3::bytea)",
    3, 0
};

/* An interrupted run goes back to the queue, unless its cancellation was
 * asked for meanwhile: then that is what happens. */
static const svc_stmt_t st_requeue = {
    "svc_runs_requeue",
    "UPDATE runs SET status = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'queued' END,"
    " started_at = CASE WHEN cancel_requested THEN started_at END,"
    " finished_at = CASE WHEN cancel_requested THEN now() END,"
    " lease_owner = NULL, lease_expires_at = NULL"
    " WHERE id = $1 AND lease_owner = $2 AND status = 'running'"
    " RETURNING org_id, project_id, status",
    2, 0
};

static const svc_stmt_t st_status_of = {
    "svc_runs_status_of",
    "SELECT status, lease_owner = $2, log_bytes, error_code FROM runs WHERE id = $1",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_log_grow = {
    "svc_runs_log_grow",
    "UPDATE runs SET log_bytes = $3::bigint + $4::bigint,"
    " log_dropped = log_dropped OR $5::boolean"
    " WHERE id = $1 AND lease_owner = $2 AND status = 'running' AND log_bytes = $3::bigint"
    " RETURNING org_id, project_id",
    5, 0
};

/* A line the service itself adds to a log it does not hold a lease on. */
static const svc_stmt_t st_log_note = {
    "svc_runs_log_note",
    "UPDATE runs SET log_bytes = log_bytes + $2::bigint WHERE id = $1"
    " RETURNING log_bytes - $2::bigint",
    2, 0
};

static const svc_stmt_t st_log_insert = {
    "svc_runs_log_insert",
    "INSERT INTO run_logs (run_id, byte_offset, data) VALUES ($1, $2::bigint, $3)",
    3, 0
};

/* The expired Idempotency-Keys of every creation that takes one (runs,
 * requests, deployments: sql/026's function knows their tables), so the
 * areas need no sweeper each; the supervisor is the one that runs. */
static const svc_stmt_t st_sweep_keys = {
    "svc_runs_sweep_keys",
    "SELECT svc_idempotency_sweep()",
    0, SVC_STMT_RETRY
};

const char *const svc_run_statuses[] = {
    SVC_RUN_QUEUED, SVC_RUN_RUNNING, SVC_RUN_SUCCEEDED, SVC_RUN_FAILED, SVC_RUN_CANCELLED,
    NULL
};

/* The run document as SVC_RUN_DOC_SQL builds it. */
static const svc_col_t run_result_keys[] = {
    { .key = "summary", .type = SVC_COL_TEXT, .example = "Add a README",
      .description = "The commit's message." },
    { .key = "commit", .type = SVC_COL_TEXT, .format = "sha",
      .description = "The commit on svc/run-<id>." },
    { .key = "files", .type = SVC_COL_ARRAY, .item = SVC_COL_TEXT,
      .description = "The files it wrote." },
    { .key = "mode", .type = SVC_COL_TEXT, .flags = SVC_COL_OPTIONAL,
      .values = SVC_VALUES("single", "agent"),
      .description = "How the factory worked: one answer with every file, or an agent with "
        "tools (left out by runs of builds before agents)." },
    { .key = "steps", .type = SVC_COL_INT, .flags = SVC_COL_OPTIONAL,
      .description = "The agent's tool calls." },
    { .key = "tokens", .type = SVC_COL_OBJECT, .flags = SVC_COL_OPTIONAL,
      .sub = (const svc_col_t[]) {
          { .key = "input", .type = SVC_COL_INT },
          { .key = "output", .type = SVC_COL_INT },
          SVC_COL_END
      }, .description = "What the run's model calls used." },
    { .key = "checks", .type = SVC_COL_OBJECT, .flags = SVC_COL_OPTIONAL | SVC_COL_NULL,
      .sub = (const svc_col_t[]) {
          { .key = "command", .type = SVC_COL_TEXT, .example = "make test" },
          { .key = "exit", .type = SVC_COL_INT, .flags = SVC_COL_NULL },
          SVC_COL_END
      }, .description = "The agent's last command and how it exited; null when it ran none." },
    { .key = "stopped", .type = SVC_COL_TEXT, .flags = SVC_COL_OPTIONAL,
      .values = SVC_VALUES("step_limit", "token_limit"),
      .description = "The limit that stopped an agent run (its work so far committed)." },
    SVC_COL_END
};

static const svc_col_t run_error_keys[] = {
    { .key = "code", .type = SVC_COL_TEXT, .example = "provider_error",
      .description = "Why it failed, for programs (docs/api/runs.md lists the codes)." },
    { .key = "message", .type = SVC_COL_TEXT, .description = "Why, for people." },
    SVC_COL_END
};

static const svc_col_t run_keys[] = {
    SVC_COL_ID("run"),
    { .key = "project", .type = SVC_COL_TEXT, .format = "slug",
      .description = "The project's slug." },
    { .key = "status", .type = SVC_COL_TEXT, .values = svc_run_statuses },
    { .key = "instructions", .type = SVC_COL_TEXT, .example = "Add a README that says hello." },
    { .key = "request_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .example = "rqs_3kTq0dKc5gWm1xQ9aZr2Lb",
      .description = "The pipeline request it builds for (set by the pipeline)." },
    { .key = "task_id", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .example = "tsk_3kTq0dKc5gWm1xQ9aZr2Lb",
      .description = "The build task it carries out (set by the pipeline)." },
    { .key = "repository", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "acme/site",
      .description = "The repository it works on (owner/name); null: a fresh one." },
    SVC_COL_CREATED_BY,
    SVC_COL_CREATED_AT,
    { .key = "started_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    { .key = "finished_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    { .key = "cancel_requested", .type = SVC_COL_BOOL },
    { .key = "result", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .sub = run_result_keys,
      .description = "Once succeeded: the commit." },
    { .key = "error", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .sub = run_error_keys,
      .description = "Once failed: why." },
    SVC_COL_END
};

const svc_schema_t svc_schema_run = { .name = "Run", .keys = run_keys,
    .description = "A factory run (docs/api/runs.md)." };

/* The detail adds the run's model calls (svc_h_runs_get). */
static const svc_col_t run_call_keys[] = {
    { .key = "call", .type = SVC_COL_INT, .description = "1, 2, ... in the order made." },
    { .key = "input_tokens", .type = SVC_COL_INT },
    { .key = "output_tokens", .type = SVC_COL_INT },
    { .key = "duration_ms", .type = SVC_COL_INT },
    { .key = "status", .type = SVC_COL_TEXT, .example = "ok" },
    { .key = "error_code", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL },
    { .key = "model", .type = SVC_COL_TEXT, .example = "gpt-4o-mini" },
    SVC_COL_END
};

const svc_schema_t svc_schema_run_detail = { .name = "RunDetail",
    .description = "A run with what its model calls used, call by call.",
    .keys = (const svc_col_t[]) {
        { .key = "usage", .type = SVC_COL_OBJECT, .sub = (const svc_col_t[]) {
              { .key = "calls", .type = SVC_COL_INT },
              { .key = "input_tokens", .type = SVC_COL_INT },
              { .key = "output_tokens", .type = SVC_COL_INT },
              { .key = "by_call", .type = SVC_COL_ARRAY, .sub = run_call_keys },
              SVC_COL_END
          } },
        SVC_COL_END
    },
    .base = &svc_schema_run
};

/* The events svc_run_emit_status and svc_run_log_append write. */
static const svc_col_t run_status_event_keys[] = {
    { .key = "run_id", .type = SVC_COL_TEXT, .id = "run" },
    { .key = "status", .type = SVC_COL_TEXT, .values = svc_run_statuses },
    { .key = "error", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .sub = run_error_keys },
    SVC_COL_END
};

static const svc_col_t run_log_event_keys[] = {
    { .key = "run_id", .type = SVC_COL_TEXT, .id = "run" },
    { .key = "offset", .type = SVC_COL_INT,
      .description = "The line's byte offset in the log (as GET .../logs?offset= counts)." },
    { .key = "line", .type = SVC_COL_TEXT },
    SVC_COL_END
};

static const svc_col_t run_step_event_keys[] = {
    { .key = "run_id", .type = SVC_COL_TEXT, .id = "run" },
    { .key = "n", .type = SVC_COL_INT, .description = "The step's number, from 1." },
    { .key = "tool", .type = SVC_COL_TEXT, .example = "write_file" },
    { .key = "args", .type = SVC_COL_TEXT, .description = "Its arguments, cut short, redacted." },
    { .key = "ok", .type = SVC_COL_BOOL },
    { .key = "exit", .type = SVC_COL_INT, .flags = SVC_COL_OPTIONAL | SVC_COL_NULL,
      .description = "For run: how the command exited (null: killed)." },
    { .key = "duration_ms", .type = SVC_COL_INT, .flags = SVC_COL_OPTIONAL },
    { .key = "timed_out", .type = SVC_COL_BOOL, .flags = SVC_COL_OPTIONAL },
    SVC_COL_END
};

static const svc_schema_t run_step_event = { .name = "RunStepEvent", .keys = run_step_event_keys,
    .description = "run.step: an agent run's tool call (docs/api/runs.md)." };

static const svc_schema_t run_status_event = { .name = "RunStatusEvent",
    .keys = run_status_event_keys,
    .description = "run.status: a run was made, or its status changed." };

static const svc_schema_t run_log_event = { .name = "RunLogEvent", .keys = run_log_event_keys,
    .description = "run.log: the runner wrote a line to the run's log." };

const svc_event_kind_t svc_run_events[] = {
    { "run.status", &run_status_event, "A run is made (queued) and at every status change." },
    { "run.log", &run_log_event, "The runner wrote a line to the run's log." },
    { "run.step", &run_step_event, "An agent run made a tool call." },
    { NULL, NULL, NULL }
};

static const char *i64(apr_pool_t *p, apr_int64_t v)
{
    return apr_psprintf(p, "%" APR_INT64_T_FMT, v);
}

apr_status_t svc_run_emit_status(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                 const char *project_id, const char *run_id,
                                 const char *status, const char *err_code,
                                 const char *err_message)
{
    json_t *err = err_code ? json_pack("{s:s,s:s}", "code", err_code, "message",
                                       err_message ? err_message : "")
                           : json_null();
    json_t *data = svc_json_pool(p, json_pack("{s:s,s:s,s:o}", "run_id", run_id, "status",
                                              status, "error", err));

    if (!data) {
        return APR_ENOMEM;
    }
    return svc_event_emit(db, p, org_id, project_id, run_id, "run.status", data);
}

/* One run.log event per line of text (whole lines, each ending in '\n'),
 * the first starting at byte `offset` of the log; each of `events` after
 * the line it goes with. */
static apr_status_t emit_lines(svc_db_t *db, apr_pool_t *p, const char *org_id,
                               const char *project_id, const char *run_id,
                               apr_int64_t offset, const char *text, apr_size_t len,
                               const svc_run_log_event_t *events, int nevents)
{
    apr_size_t at = 0;
    apr_status_t rv;
    int e = 0;

    for (;;) {
        const char *nl;
        apr_size_t n;
        json_t *data;

        for (; e < nevents && events[e].at <= at; e++) {
            rv = svc_event_emit(db, p, org_id, project_id, run_id, events[e].kind,
                                events[e].data);
            if (rv != APR_SUCCESS) {
                return rv;
            }
        }
        if (at >= len) {
            return APR_SUCCESS;
        }
        nl = memchr(text + at, '\n', len - at);
        n = nl ? (apr_size_t)(nl - (text + at)) : len - at;
        data = json_pack("{s:s,s:I,s:s%}", "run_id", run_id, "offset",
                         (json_int_t)(offset + (apr_int64_t)at), "line", text + at, n);
        at += n + 1;
        if (!data) {
            /* Text that is not UTF-8 never gets here (svc_run_log.c cleans
             * it); should it, the line is in the log, if not in a stream. */
            continue;
        }
        rv = svc_event_emit(db, p, org_id, project_id, run_id, "run.log",
                            svc_json_pool(p, data));
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
}

/* Copies what a result row says into pool memory (trap 4 concerns
 * mod_dbd's rows; ours live until p is cleared, but the job outlives the
 * statement's pool). */
static const char *col_dup(apr_pool_t *p, const svc_dbres_t *res, int col)
{
    const char *s = svc_dbres_str(res, 0, col);

    return s ? apr_pstrdup(p, s) : NULL;
}

/* What svc_run_claim asks, and the run it claimed (NULL: none queued). */
typedef struct {
    const char *node;
    int lease_s;
    svc_run_job_t *job;
} claim_t;

static apr_status_t claim_tx(svc_db_t *db, apr_pool_t *p, void *baton)
{
    claim_t *c = baton;
    svc_run_job_t *job;
    svc_dbres_t *res;
    apr_int64_t v;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_claim, p, &res, c->node, apr_itoa(p, c->lease_s));
    if (rv != APR_SUCCESS || svc_dbres_rows(res) == 0) {
        return rv;
    }
    job = apr_pcalloc(p, sizeof(*job));
    job->id = col_dup(p, res, 0);
    job->org_id = col_dup(p, res, 1);
    job->project_id = col_dup(p, res, 2);
    job->instructions = col_dup(p, res, 3);
    job->created_by = col_dup(p, res, 4);
    job->author_name = col_dup(p, res, 5);
    job->author_email = col_dup(p, res, 6);
    if (svc_dbres_int64(res, 0, 7, &v) != APR_SUCCESS
        || svc_dbres_int64(res, 0, 8, &job->log_bytes) != APR_SUCCESS) {
        return SVC_EDB;
    }
    job->timeout_seconds = (int)v;
    job->log_dropped = svc_dbres_bool(res, 0, 9) == 1;
    if (svc_dbres_int64(res, 0, 12, &v) != APR_SUCCESS
        || svc_dbres_int64(res, 0, 13, &job->max_tokens) != APR_SUCCESS) {
        return SVC_EDB;
    }
    job->max_steps = (int)v;
    if (svc_dbres_int64(res, 0, 14, &v) != APR_SUCCESS) {
        return SVC_EDB;
    }
    job->command_timeout = (int)v;
    job->repository = col_dup(p, res, 10);
    if (job->repository && svc_dbres_int64(res, 0, 11, &job->installation_id) != APR_SUCCESS) {
        return SVC_EDB;
    }
    if (!job->author_name || !*job->author_name) {
        job->author_name = job->author_email ? job->author_email : "mod_svc";
    }
    if (!job->author_email) {
        job->author_email = "runs@mod-svc.invalid";
    }
    c->job = job;
    return svc_run_emit_status(db, p, job->org_id, job->project_id, job->id, SVC_RUN_RUNNING,
                               NULL, NULL);
}

apr_status_t svc_run_claim(svc_db_t *db, apr_pool_t *p, const char *node, int lease_s,
                           svc_run_job_t **pjob)
{
    claim_t c = { node, lease_s, NULL };
    apr_status_t rv = svc_db_tx(db, p, claim_tx, &c);

    *pjob = rv == APR_SUCCESS ? c.job : NULL;
    return rv;
}

apr_status_t svc_run_renew(svc_db_t *db, apr_pool_t *p, const char *node, int lease_s,
                           apr_array_header_t **pleases)
{
    svc_dbres_t *res;
    apr_status_t rv;
    int i, n;

    rv = svc_db_execv(db, &st_renew, p, &res, node, apr_itoa(p, lease_s));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    n = svc_dbres_rows(res);
    *pleases = apr_array_make(p, n ? n : 1, sizeof(svc_run_lease_t));
    for (i = 0; i < n; i++) {
        svc_run_lease_t *l = apr_array_push(*pleases);
        l->id = apr_pstrdup(p, svc_dbres_str(res, i, 0));
        l->cancel_requested = svc_dbres_bool(res, i, 1) == 1;
    }
    return APR_SUCCESS;
}

/* Appends one line the service writes (not the runner) to a run's log, in
 * the caller's transaction, with its event. */
static apr_status_t log_note(svc_db_t *db, apr_pool_t *p, const char *org_id,
                             const char *project_id, const char *run_id, const char *line)
{
    const char *text = apr_pstrcat(p, line, "\n", NULL);
    apr_size_t len = strlen(text);
    svc_dbres_t *res;
    apr_int64_t offset;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_log_note, p, &res, run_id, i64(p, (apr_int64_t)len));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_int64(res, 0, 0, &offset) != APR_SUCCESS) {
        return SVC_EDB;
    }
    rv = svc_db_execv(db, &st_log_insert, p, NULL, run_id, i64(p, offset), text);
    if (rv == APR_SUCCESS) {
        rv = emit_lines(db, p, org_id, project_id, run_id, offset, text, len, NULL, 0);
    }
    return rv;
}

/* Fails one run whose lease ran out; SVC_ENOTFOUND when there is none. */
static apr_status_t reap_one(svc_db_t *db, apr_pool_t *p, void *baton)
{
    static const char msg[] = "The node running it stopped renewing its lease (it stopped, "
                              "or lost the database); the run was abandoned.";
    const char *id, *org, *project;
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_expired, p, &res);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        return SVC_ENOTFOUND;
    }
    id = col_dup(p, res, 0);
    org = col_dup(p, res, 1);
    project = col_dup(p, res, 2);
    if ((rv = svc_db_execv(db, &st_reap, p, NULL, id, msg)) != APR_SUCCESS
        || (rv = log_note(db, p, org, project, id,
                          apr_pstrcat(p, "[mod_svc] lost: ", msg, NULL))) != APR_SUCCESS) {
        return rv;
    }
    return svc_run_emit_status(db, p, org, project, id, SVC_RUN_FAILED, "lost", msg);
}

apr_status_t svc_run_reap(svc_db_t *db, apr_pool_t *p, int *pcount)
{
    apr_status_t rv;
    int count = 0;

    while ((rv = svc_db_tx(db, p, reap_one, NULL)) == APR_SUCCESS) {
        count++;
    }
    if (pcount) {
        *pcount = count;
    }
    return rv == SVC_ENOTFOUND ? APR_SUCCESS : rv;
}

/*
 * After an update fenced by the lease changed nothing: whether the run is
 * already where the caller wanted it (an earlier attempt committed but its
 * answer was lost), or the node no longer holds it. The error code tells
 * our own failure from the reaper's ("lost"), which we never write.
 */
static apr_status_t settled(svc_db_t *db, apr_pool_t *p, const char *run_id, const char *node,
                            const char *want_status, const char *want_code)
{
    svc_dbres_t *res;
    apr_status_t rv = svc_db_execv(db, &st_status_of, p, &res, run_id, node);
    const char *status, *code;

    if (rv != APR_SUCCESS) {
        return rv;
    }
    status = svc_dbres_str(res, 0, 0);
    code = svc_dbres_str(res, 0, 3);
    return status && strcmp(status, want_status) == 0
           && (code ? want_code && strcmp(code, want_code) == 0 : !want_code)
           ? APR_SUCCESS : SVC_ENOTFOUND;
}

/* A run's end: what svc_run_finish and svc_run_succeed write. unheld is
 * set when the node turned out not to hold the run. */
typedef struct {
    const char *run_id, *node, *status, *result_json;
    const unsigned char *bundle;
    apr_size_t bundle_len;
    const char *err_code, *err_message;
    int unheld;
} end_t;

/* Ends a run the node holds, in one transaction: its final status, the
 * artifact in parts when there is one, the event. */
static apr_status_t end_tx(svc_db_t *db, apr_pool_t *p, void *baton)
{
    end_t *e = baton;
    svc_dbres_t *res;
    apr_size_t at;
    apr_status_t rv;
    int part = 0;

    rv = svc_db_execv(db, &st_end, p, &res, e->run_id, e->node, e->status, e->result_json,
                      e->bundle ? i64(p, (apr_int64_t)e->bundle_len) : NULL, e->err_code,
                      e->err_message);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        e->unheld = 1;
        return SVC_ENOTFOUND;
    }
    for (at = 0; e->bundle && at < e->bundle_len && rv == APR_SUCCESS;
         at += ARTIFACT_PART, part++) {
        apr_size_t n = e->bundle_len - at < ARTIFACT_PART ? e->bundle_len - at : ARTIFACT_PART;
        apr_pool_t *sp;

        /* Each part's hex text is twice its size: let it go at once. */
        apr_pool_create(&sp, p);
        rv = svc_db_execv(db, &st_artifact_part, sp, NULL, e->run_id, apr_itoa(sp, part),
                          svc_bytea_param(sp, e->bundle + at, n));
        apr_pool_destroy(sp);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return svc_run_emit_status(db, p, svc_dbres_str(res, 0, 0), svc_dbres_str(res, 0, 1),
                               e->run_id, e->status, e->err_code, e->err_message);
}

static apr_status_t end_run(svc_db_t *db, apr_pool_t *p, end_t *e)
{
    apr_status_t rv = svc_db_tx(db, p, end_tx, e);

    if (rv == SVC_ENOTFOUND && e->unheld) {
        return settled(db, p, e->run_id, e->node, e->status, e->err_code);
    }
    return rv;
}

apr_status_t svc_run_finish(svc_db_t *db, apr_pool_t *p, const char *run_id,
                            const char *node, const char *status, const char *err_code,
                            const char *err_message)
{
    end_t e = { run_id, node, status, NULL, NULL, 0, err_code, err_message, 0 };

    return end_run(db, p, &e);
}

apr_status_t svc_run_succeed(svc_db_t *db, apr_pool_t *p, const char *run_id,
                             const char *node, const char *result_json,
                             const unsigned char *bundle, apr_size_t bundle_len)
{
    end_t e = { run_id, node, SVC_RUN_SUCCEEDED, result_json,
                bundle ? bundle : (const unsigned char *)"", bundle_len, NULL, NULL, 0 };

    return end_run(db, p, &e);
}

/* A run the node holds, and the node. */
typedef struct {
    const char *run_id, *node;
} held_t;

static apr_status_t requeue_tx(svc_db_t *db, apr_pool_t *p, void *baton)
{
    const held_t *h = baton;
    const char *org, *project, *status;
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_requeue, p, &res, h->run_id, h->node);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        return SVC_ENOTFOUND;
    }
    org = col_dup(p, res, 0);
    project = col_dup(p, res, 1);
    status = col_dup(p, res, 2);
    rv = log_note(db, p, org, project, h->run_id,
                  strcmp(status, SVC_RUN_QUEUED) == 0
                  ? "[mod_svc] interrupted: the supervisor stopped; the run is queued again "
                    "and starts over"
                  : "[mod_svc] interrupted: the supervisor stopped; the run was cancelled");
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return svc_run_emit_status(db, p, org, project, h->run_id, status, NULL, NULL);
}

apr_status_t svc_run_fail_with_work(svc_db_t *db, apr_pool_t *p, const char *run_id,
                                    const char *node, const char *err_code,
                                    const char *err_message, const char *result_json,
                                    const unsigned char *bundle, apr_size_t bundle_len)
{
    end_t e = { run_id, node, SVC_RUN_FAILED, result_json,
                bundle ? bundle : (const unsigned char *)"", bundle_len, err_code,
                err_message, 0 };

    return end_run(db, p, &e);
}

apr_status_t svc_run_requeue(svc_db_t *db, apr_pool_t *p, const char *run_id,
                             const char *node)
{
    held_t h = { run_id, node };

    return svc_db_tx(db, p, requeue_tx, &h);
}

/* A piece of log to append; unheld is set when the node turned out not
 * to hold the run, or the log not to be `offset` long. */
typedef struct {
    const svc_run_job_t *job;
    const char *node;
    apr_int64_t offset;
    const char *text;
    apr_size_t len;
    int dropped;
    const svc_run_log_event_t *events;
    int nevents;
    int unheld;
} append_t;

static apr_status_t append_tx(svc_db_t *db, apr_pool_t *p, void *baton)
{
    append_t *a = baton;
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_log_grow, p, &res, a->job->id, a->node, i64(p, a->offset),
                      i64(p, (apr_int64_t)a->len), a->dropped ? "true" : "false");
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        a->unheld = 1;
        return SVC_ENOTFOUND;
    }
    if (a->len > 0
        && (rv = svc_db_execv(db, &st_log_insert, p, NULL, a->job->id, i64(p, a->offset),
                              apr_pstrmemdup(p, a->text, a->len))) != APR_SUCCESS) {
        return rv;
    }
    return emit_lines(db, p, a->job->org_id, a->job->project_id, a->job->id, a->offset,
                      a->text, a->len, a->events, a->nevents);
}

apr_status_t svc_run_log_append(svc_db_t *db, apr_pool_t *p, const svc_run_job_t *job,
                                const char *node, apr_int64_t offset, const char *text,
                                apr_size_t len, int dropped,
                                const svc_run_log_event_t *events, int nevents)
{
    append_t a = { job, node, offset, text, len, dropped, events, nevents, 0 };
    apr_int64_t now_len;
    svc_dbres_t *res;
    apr_status_t rv = svc_db_tx(db, p, append_tx, &a);

    if (rv != SVC_ENOTFOUND || !a.unheld) {
        return rv;
    }
    rv = svc_db_execv(db, &st_status_of, p, &res, job->id, node);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_bool(res, 0, 1) != 1) {
        return SVC_ENOTFOUND;
    }
    /* Still ours: an earlier attempt did commit, or the log moved under us,
     * which only a bug could do. */
    if (svc_dbres_int64(res, 0, 2, &now_len) == APR_SUCCESS
        && now_len == offset + (apr_int64_t)len) {
        return APR_SUCCESS;
    }
    return SVC_EDB;
}

apr_status_t svc_run_sweep_keys(svc_db_t *db, apr_pool_t *p)
{
    return svc_db_execv(db, &st_sweep_keys, p, NULL);
}
