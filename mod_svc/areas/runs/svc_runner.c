/*
 * svc_runner.c: one run, from claim to final status (svc_runner.h). The
 * protocol with the factory is docs/api/factory-protocol.md.
 */
#include "svc_runner.h"
#include "svc_run_log.h"
#include "svc_run_model.h"
#include "svc_sandbox.h"
#include "svc_workspace.h"
#include "svc_providers.h"
#include "svc_vcs.h"

#include <apr_atomic.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A protocol line from the factory may carry a whole prompt. */
#define LINE_MAX_BYTES   (16 * 1024 * 1024)
#define READ_CHUNK       (64 * 1024)
/* Per turn of the loop, so a flood of output cannot starve the flags. */
#define READ_PER_TURN    (1024 * 1024)
#define TICK_MS          250
/* Once the sandbox's pipes are closed its process is about to exit: it is
 * reaped after 1, 2, 4 ... ms (at most REAP_MAX_MS), not after a tick. */
#define REAP_MAX_MS      32
#define FLUSH_EVERY_MS   500
#define FLUSH_BYTES      (64 * 1024)
#define STOP_GRACE_MS    2000
/* After an orderly stop, httpd kills the supervisor 3 s after SIGTERM. */
#define STOP_WRITE_MS    2000
/* What the factory is told it may write (single mode: in one answer).
 * Every model answer may be as large as the factory's own bound for a
 * reply line with these limits (svc_runner_reply_cap), so an answer within
 * them is never cut by the supervisor's cap, and one beyond is the model's
 * answer being wrong (model_reply_invalid), not a provider failure. */
#define MAX_FILES        1000
#define MAX_FILE_BYTES   (1024 * 1024)
#define MAX_TOTAL_BYTES  (4 * 1024 * 1024)
/* Agent mode: the conversation the factory keeps (~100k tokens). */
#define CONTEXT_BYTES    400000
/* A step's arguments as a run.step event and the log show them. */
#define STEP_ARGS_MAX    200

typedef struct {
    svc_run_slot_t *slot;
    const svc_supervisor_conf_t *sc;
    const svc_run_job_t *job;
    apr_pool_t *p;
    apr_time_t deadline;

    apr_pool_t *db_pool;        /* the connection's; NULL while there is none */
    svc_db_t *db;
    svc_run_log_t *log;
    svc_run_model_t *model;
    const char *workspace;
    int model_pipe[2];

    svc_sandbox_t sb;
    int is_factory;             /* the sandbox runs the factory (not the bundle step) */
    int out_eof, err_eof;
    char *obuf;                 /* stdout, up to its next newline */
    apr_size_t olen, ocap;
    svc_run_log_partial_t errpart;
    char *wbuf;                 /* what waits to go to stdin */
    apr_size_t wlen, woff;
    apr_time_t last_flush;

    json_t *result;             /* the factory's "result" line */
    const char *fcode;          /* the factory's "error" line */
    const char *fmessage;
    int agent;                  /* the factory works as an agent (tools) */
    int steps;                  /* its step lines so far */
    json_t *checks;             /* the last `run` step: {command, exit} */
    const char *stopped_code;   /* the result says the run stopped at a limit */
    const char *stopped_message;

    /* The outcome: a final status, "requeue", or NULL (lost: write nothing). */
    const char *status;
    const char *code;
    const char *message;
    int decided;

    /* Where the run's time went (SVC0790, at debug level; docs/performance.md):
     * clock readings only, no work of their own. */
    struct {
        apr_time_t start;           /* the thread began, just after the claim */
        apr_time_t provider, workspace, clone, factory, bundle, outcome, cleanup;
        apr_time_t spawned;         /* the factory's sandbox was spawned */
        apr_time_t first_line;      /* ... and its first protocol line arrived */
        apr_time_t first_model;     /* its first model request arrived */
        apr_time_t model_at;        /* the model call under way began */
        apr_time_t model;           /* the model calls, summed */
        apr_time_t last_reply;      /* the last model answer came back */
        apr_time_t result_at;       /* the factory's result line arrived */
    } t;
} run_t;

static int str_eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static int raised(volatile apr_uint32_t *flag)
{
    return apr_atomic_read32(flag) != 0;
}

static void decide(run_t *r, const char *status, const char *code, const char *message)
{
    if (!r->decided) {
        r->decided = 1;
        r->status = status;
        r->code = code;
        r->message = message;
    }
}

/* --- the database, which may come and go ----------------------------------- */

static void db_drop(run_t *r)
{
    if (r->db_pool) {
        apr_pool_destroy(r->db_pool);
        r->db_pool = NULL;
        r->db = NULL;
    }
}

static svc_db_t *db_get(run_t *r)
{
    const char *err = NULL;

    if (!r->db) {
        apr_pool_create(&r->db_pool, r->p);
        if (svc_db_connect(&r->db, r->sc->conninfo, r->db_pool, &err) != APR_SUCCESS) {
            db_drop(r);
            return NULL;
        }
        svc_db_set_statement_timeout(r->db, r->sc->statement_timeout_ms);
    }
    return r->db;
}

/* After a failed statement: a lost connection is made anew next time. */
static apr_status_t db_result(run_t *r, apr_status_t rv)
{
    if (rv == SVC_EDBDOWN) {
        db_drop(r);
    }
    return rv;
}

/* Waits up to ms, waking early when the supervisor raises a flag. */
static void nap(run_t *r, int ms)
{
    struct pollfd pfd = { r->slot->wake[0], POLLIN, 0 };
    char buf[16];

    if (poll(&pfd, 1, ms) > 0) {
        while (read(r->slot->wake[0], buf, sizeof(buf)) > 0) {
        }
    }
}

static apr_status_t flush_log(run_t *r)
{
    svc_db_t *db;
    apr_status_t rv;

    r->last_flush = apr_time_now();
    if (!svc_run_log_pending(r->log) && !(r->model && svc_run_model_unrecorded(r->model))) {
        return APR_SUCCESS;
    }
    if (!(db = db_get(r))) {
        return SVC_EDBDOWN;
    }
    if (r->model && (rv = db_result(r, svc_run_model_record(r->model, db))) != APR_SUCCESS) {
        return rv;
    }
    return db_result(r, svc_run_log_flush(r->log, db, r->job, r->slot->node));
}

/* --- the factory's protocol ------------------------------------------------- */

static void queue_write(run_t *r, const char *line)
{
    apr_size_t n = strlen(line);
    apr_size_t waiting = r->wlen - r->woff;
    char *buf = apr_palloc(r->p, waiting + n + 1);

    if (waiting) {
        memcpy(buf, r->wbuf + r->woff, waiting);
    }
    memcpy(buf + waiting, line, n);
    buf[waiting + n] = '\n';
    r->wbuf = buf;
    r->wlen = waiting + n + 1;
    r->woff = 0;
}

static void write_stdin(run_t *r)
{
    while (r->sb.in >= 0 && r->woff < r->wlen) {
        ssize_t n = write(r->sb.in, r->wbuf + r->woff, r->wlen - r->woff);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN) {
                /* The factory closed its stdin: it has stopped reading. */
                close(r->sb.in);
                r->sb.in = -1;
            }
            return;
        }
        r->woff += (apr_size_t)n;
    }
}

/* {"summary","commit","files":[paths]}, or NULL; a run stopped at one
 * of its limits also says which ("stopped": {code, message}). */
static json_t *check_result(run_t *r, const json_t *line)
{
    const json_t *summary = json_object_get(line, "summary");
    const json_t *commit = json_object_get(line, "commit");
    const json_t *files = json_object_get(line, "files");
    const json_t *stopped = json_object_get(line, "stopped");
    size_t i;

    if (!json_is_string(summary) || !json_is_string(commit)
        || !svc_git_id_valid(json_string_value(commit), json_string_length(commit))
        || !json_is_array(files)) {
        return NULL;
    }
    r->stopped_code = r->stopped_message = NULL;
    if (stopped) {
        const char *code = json_string_value(json_object_get(stopped, "code"));
        const char *text = json_string_value(json_object_get(stopped, "message"));

        if (!code || !text || (strcmp(code, "step_limit") != 0
                               && strcmp(code, "token_limit") != 0)) {
            return NULL;
        }
        r->stopped_code = apr_pstrdup(r->p, code);
        r->stopped_message = svc_printable(r->p, text, 2000);
    }
    for (i = 0; i < json_array_size(files); i++) {
        if (!json_is_string(json_array_get(files, i))) {
            return NULL;
        }
    }
    return json_pack("{s:O,s:O,s:O}", "summary", summary, "commit", commit, "files", files);
}

static int code_valid(const char *s)
{
    apr_size_t n = s ? strlen(s) : 0, i;

    if (n < 1 || n > 64) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_')) {
            return 0;
        }
    }
    return 1;
}

static void protocol_error(run_t *r, const char *why)
{
    svc_run_log_note(r->log, "[mod_svc] protocol: %s", why);
    decide(r, SVC_RUN_FAILED, "factory_failed",
           apr_psprintf(r->p, "The factory broke the protocol: %s", why));
}

/* A string of the factory cut to max bytes (on a character boundary) with
 * control characters as spaces: valid UTF-8 still, for an event. */
static const char *short_text(apr_pool_t *p, const char *s, apr_size_t max)
{
    apr_size_t n = strlen(s), i;
    char *out;

    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) {
            n--;
        }
    }
    out = apr_pstrmemdup(p, s, n);
    for (i = 0; i < n; i++) {
        if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f) {
            out[i] = ' ';
        }
    }
    return out;
}

/*
 * A "step" line: a log line of ours and a run.step event with it. Checked
 * and numbered here; past SvcRunMaxSteps (and the finish after it) steps
 * are not recorded, so a runaway factory cannot flood the events.
 */
static void factory_step(run_t *r, const json_t *msg)
{
    const json_t *tool = json_object_get(msg, "tool");
    const json_t *args = json_object_get(msg, "args");
    const json_t *ok = json_object_get(msg, "ok");
    const json_t *exitv = json_object_get(msg, "exit");
    const json_t *ms = json_object_get(msg, "duration_ms");
    const json_t *timed_out = json_object_get(msg, "timed_out");
    const char *name, *text, *outcome = "";
    json_t *data;
    apr_pool_t *sp;

    if (!json_is_integer(json_object_get(msg, "n")) || !json_is_string(tool)
        || json_string_length(tool) < 1 || json_string_length(tool) > 64
        || !json_is_string(args) || !json_is_boolean(ok)
        || (exitv && !json_is_integer(exitv) && !json_is_null(exitv))
        || (ms && !json_is_integer(ms)) || (timed_out && !json_is_boolean(timed_out))) {
        protocol_error(r, "a step line that is not {n, tool, args, ok[, exit, duration_ms, "
                       "timed_out]}");
        return;
    }
    if (r->steps > r->job->max_steps) {
        if (r->steps++ == r->job->max_steps + 1) {
            svc_run_log_note(r->log, "[mod_svc] protocol: more steps than SvcRunMaxSteps "
                             "allows; not recorded");
        }
        return;
    }
    r->steps++;
    apr_pool_create(&sp, r->p);
    name = short_text(sp, json_string_value(tool), 64);
    text = svc_run_log_redact(r->log, sp, short_text(sp, json_string_value(args),
                                                     STEP_ARGS_MAX));
    data = json_pack("{s:s,s:i,s:s,s:s,s:O}", "run_id", r->job->id, "n", r->steps, "tool",
                     name, "args", text, "ok", ok);
    if (data && strcmp(name, "run") == 0) {
        json_int_t d = json_is_integer(ms) && json_integer_value(ms) > 0
                       ? json_integer_value(ms) : 0;

        json_object_set_new(data, "exit", json_is_integer(exitv) ? json_incref((json_t *)exitv)
                                                                 : json_null());
        json_object_set_new(data, "duration_ms", json_integer(d));
        json_object_set_new(data, "timed_out", json_boolean(json_is_true(timed_out)));
        outcome = json_is_true(timed_out)
                  ? apr_psprintf(sp, ": killed at its time limit (%d s)",
                                 r->job->command_timeout)
                  : json_is_integer(exitv)
                  ? apr_psprintf(sp, ": exit %d, %.1f s", (int)json_integer_value(exitv),
                                 (double)d / 1000)
                  : ": killed";
        json_decref(r->checks);
        r->checks = json_pack("{s:s,s:O}", "command", text, "exit",
                              json_object_get(data, "exit"));
    }
    else if (!json_is_true(ok)) {
        outcome = ": refused, the model is told why";
    }
    svc_run_log_event(r->log, "run.step", data, "[mod_svc] step %d: %s %s%s", r->steps, name,
                      text, outcome);
    apr_pool_destroy(sp);
}

/* One line of the factory's stdout. */
static void factory_line(run_t *r, const char *line, apr_size_t len)
{
    json_error_t jerr;
    json_t *msg = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    const char *type = json_string_value(json_object_get(msg, "type"));
    const char *err = NULL;

    if (r->is_factory && !r->t.first_line) {
        r->t.first_line = apr_time_now();
    }
    if (!r->is_factory || !json_is_object(msg) || !type) {
        /* Not the protocol (a custom runner's chatter, say): log it. */
        svc_run_log_line(r->log, line, len);
    }
    else if (strcmp(type, "log") == 0) {
        const json_t *text = json_object_get(msg, "line");
        if (json_is_string(text)) {
            svc_run_log_line(r->log, json_string_value(text), json_string_length(text));
        }
        else {
            protocol_error(r, "a log line without a string \"line\"");
        }
    }
    else if (strcmp(type, "model") == 0) {
        const char *now = NULL;

        if (!r->model) {
            protocol_error(r, "a model request, but the run has no provider");
        }
        else if (svc_run_model_start(r->model, msg, r->model_pipe[1], &err, &now)
                 != APR_SUCCESS) {
            protocol_error(r, apr_pstrcat(r->p, "a model request that cannot be made: ", err,
                                          NULL));
        }
        else if (!now) {
            r->t.model_at = apr_time_now();
            if (!r->t.first_model) {
                r->t.first_model = r->t.model_at;
            }
        }
        else {
            svc_run_log_note(r->log, "[mod_svc] model call refused: the run is at its %s",
                             strstr(now, "token_limit") ? "token budget (SvcRunMaxTokens)"
                                                        : "step limit (SvcRunMaxSteps)");
            queue_write(r, now);
        }
    }
    else if (strcmp(type, "step") == 0) {
        factory_step(r, msg);
    }
    else if (strcmp(type, "result") == 0) {
        r->t.result_at = apr_time_now();
        json_decref(r->result);
        r->result = check_result(r, msg);
        if (!r->result) {
            protocol_error(r, "a result that is not {summary, commit (a commit id), "
                           "files [paths], stopped?: {code, message}}");
        }
    }
    else if (strcmp(type, "error") == 0) {
        const char *code = json_string_value(json_object_get(msg, "code"));
        const char *text = json_string_value(json_object_get(msg, "message"));

        r->fcode = code_valid(code) ? apr_pstrdup(r->p, code) : "factory_failed";
        r->fmessage = svc_printable(r->p, text ? text : "The factory failed.", 2000);
    }
    else {
        svc_run_log_note(r->log, "[mod_svc] protocol: a line of unknown type \"%s\" ignored",
                         svc_printable(r->p, type, 64));
    }
    json_decref(msg);
}

static void read_stdout(run_t *r)
{
    apr_size_t total = 0;

    while (r->sb.out >= 0 && total < READ_PER_TURN && !r->decided) {
        ssize_t n;
        char *nl;

        if (r->ocap - r->olen < READ_CHUNK) {
            apr_size_t cap = r->ocap ? r->ocap * 2 : 2 * READ_CHUNK;
            char *buf;

            if (cap > LINE_MAX_BYTES + 2 * READ_CHUNK) {
                protocol_error(r, "a line longer than 16 MiB");
                return;
            }
            buf = malloc(cap);
            if (!buf) {
                protocol_error(r, "out of memory for a line");
                return;
            }
            if (r->olen) {
                memcpy(buf, r->obuf, r->olen);
            }
            free(r->obuf);
            r->obuf = buf;
            r->ocap = cap;
        }
        n = read(r->sb.out, r->obuf + r->olen, r->ocap - r->olen);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0 || errno != EAGAIN) {
                r->out_eof = 1;
                close(r->sb.out);
                r->sb.out = -1;
                if (r->olen > 0) {
                    factory_line(r, r->obuf, r->olen);
                    r->olen = 0;
                }
            }
            return;
        }
        total += (apr_size_t)n;
        r->olen += (apr_size_t)n;
        while ((nl = memchr(r->obuf, '\n', r->olen)) != NULL) {
            apr_size_t len = (apr_size_t)(nl - r->obuf);

            factory_line(r, r->obuf, len);
            memmove(r->obuf, nl + 1, r->olen - len - 1);
            r->olen -= len + 1;
        }
    }
}

static void read_stderr(run_t *r)
{
    apr_size_t total = 0;
    char buf[8192];

    while (r->sb.err >= 0 && total < READ_PER_TURN) {
        ssize_t n = read(r->sb.err, buf, sizeof(buf));

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0 || errno != EAGAIN) {
                r->err_eof = 1;
                close(r->sb.err);
                r->sb.err = -1;
                svc_run_log_bytes(r->log, &r->errpart, "", 0, 1);
            }
            return;
        }
        total += (apr_size_t)n;
        svc_run_log_bytes(r->log, &r->errpart, buf, (apr_size_t)n, 0);
    }
}

/* --- one sandbox, watched until it ends or the run is stopped ------------- */

static const char *exit_text(apr_pool_t *p, int status)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        return apr_psprintf(p, "was killed by signal %d%s", sig,
                            sig == SIGXCPU ? " (CPU time limit)"
                            : sig == SIGXFSZ ? " (file size limit, SvcRunFileSize)" : "");
    }
    return apr_psprintf(p, "exited with status %d", WEXITSTATUS(status));
}

/*
 * Runs argv in the sandbox until it ends (APR_SUCCESS, status in r->sb),
 * or until the run is decided (cancelled, timed out, lost, stopping, a
 * protocol error): then the sandbox is stopped and APR_EINTR returned.
 * `init_env` (the init step's, always bubblewrap) is then the whole
 * environment, and the limits are set whatever SvcRunner says.
 */
static apr_status_t supervise(run_t *r, const char *const *argv, int is_factory,
                              const char *stdin_line, const char *const *init_env)
{
    svc_sandbox_limits_t limits;
    const char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", NULL, NULL,
                           NULL, NULL };
    const char *err = NULL;
    apr_status_t rv;
    char buf[64];
    int i = 2, reap_ms = 0;

    memset(&limits, 0, sizeof(limits));
    if (!r->sc->runner || init_env) {
        limits.memory = r->sc->memory;
        limits.cpu_seconds = r->job->timeout_seconds + 5;
        limits.file_size = r->sc->file_size;
        limits.processes = svc_sandbox_nproc(r->sc->processes);
    }
    else {
        /* A container runner may need these to reach its daemon. */
        static const char *const pass[] = { "HOME", "XDG_RUNTIME_DIR", "DOCKER_HOST", NULL };
        const char *const *n;
        for (n = pass; *n; n++) {
            const char *v = getenv(*n);
            if (v) {
                envp[i++] = apr_pstrcat(r->p, *n, "=", v, NULL);
            }
        }
    }
    r->is_factory = is_factory;
    r->out_eof = r->err_eof = 0;
    r->olen = 0;
    r->wlen = r->woff = 0;
    if (is_factory) {
        r->t.spawned = apr_time_now();
    }
    rv = svc_sandbox_spawn(&r->sb, argv, init_env ? init_env : envp,
                           r->sc->runner && !init_env ? NULL : &limits, &err, r->p);
    if (rv != APR_SUCCESS) {
        svc_run_log_note(r->log, "[mod_svc] the sandbox could not start: %s", err);
        decide(r, SVC_RUN_FAILED, "sandbox_failed",
               apr_psprintf(r->p, "The sandbox could not start: %s", err));
        return APR_EINTR;
    }
    if (stdin_line) {
        queue_write(r, stdin_line);
    }
    else {
        close(r->sb.in);
        r->sb.in = -1;
    }
    for (;;) {
        struct pollfd fds[5];
        int nfds = 0, timeout;
        apr_time_t now = apr_time_now();

        if (raised(&r->slot->lost)) {
            decide(r, NULL, NULL, NULL);
        }
        else if (raised(&r->slot->stop)) {
            decide(r, "requeue", NULL, NULL);
        }
        else if (raised(&r->slot->cancel)) {
            svc_run_log_note(r->log, "[mod_svc] cancelled: stopping the sandbox");
            decide(r, SVC_RUN_CANCELLED, NULL, NULL);
        }
        else if (now >= r->deadline) {
            svc_run_log_note(r->log, "[mod_svc] the run took longer than its %d seconds "
                             "(SvcRunTimeout): stopping the sandbox", r->job->timeout_seconds);
            decide(r, SVC_RUN_FAILED, "timeout",
                   apr_psprintf(r->p, "The run took longer than %d seconds.",
                                r->job->timeout_seconds));
        }
        if (r->decided) {
            svc_sandbox_stop(&r->sb, STOP_GRACE_MS);
            return APR_EINTR;
        }
        if (r->out_eof && r->err_eof) {
            if (svc_sandbox_reap(&r->sb, 0)) {
                svc_sandbox_close(&r->sb);
                return APR_SUCCESS;
            }
            reap_ms = reap_ms ? (reap_ms * 2 > REAP_MAX_MS ? REAP_MAX_MS : reap_ms * 2) : 1;
        }
        fds[nfds++] = (struct pollfd){ r->slot->wake[0], POLLIN, 0 };
        fds[nfds++] = (struct pollfd){ r->model_pipe[0], POLLIN, 0 };
        if (r->sb.out >= 0) {
            fds[nfds++] = (struct pollfd){ r->sb.out, POLLIN, 0 };
        }
        if (r->sb.err >= 0) {
            fds[nfds++] = (struct pollfd){ r->sb.err, POLLIN, 0 };
        }
        if (r->sb.in >= 0 && r->woff < r->wlen) {
            fds[nfds++] = (struct pollfd){ r->sb.in, POLLOUT, 0 };
        }
        /* Nothing wakes the loop when the process exits (its pipes closed
         * before): the reap's short wait does, instead of a whole tick. */
        timeout = reap_ms ? reap_ms : TICK_MS;
        if (r->deadline - now < apr_time_from_msec(timeout)) {
            timeout = (int)apr_time_as_msec(r->deadline - now) + 1;
        }
        poll(fds, (nfds_t)nfds, timeout);
        while (read(r->slot->wake[0], buf, sizeof(buf)) > 0) {
        }
        if (read(r->model_pipe[0], buf, sizeof(buf)) > 0) {
            const char *reply = svc_run_model_finish(r->model, r->log, r->p);

            if (r->t.model_at) {
                r->t.last_reply = apr_time_now();
                r->t.model += r->t.last_reply - r->t.model_at;
                r->t.model_at = 0;
            }
            if (reply) {
                queue_write(r, reply);
            }
        }
        read_stdout(r);
        read_stderr(r);
        write_stdin(r);
        if (svc_run_log_pending(r->log) >= FLUSH_BYTES
            || apr_time_now() - r->last_flush >= apr_time_from_msec(FLUSH_EVERY_MS)) {
            if (flush_log(r) == SVC_ENOTFOUND) {
                apr_atomic_set32(&r->slot->lost, 1);
            }
        }
    }
}

/* --- the steps of a run ------------------------------------------------------ */

/* Names and addresses go into git's environment: no control characters. */
static const char *plain(apr_pool_t *p, const char *s)
{
    char *out = apr_pstrdup(p, s ? s : "");
    char *c;

    for (c = out; *c; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f) {
            *c = ' ';
        }
    }
    return out;
}

/* The task's file limits: ours, within SvcRunFileSize. */
static void file_limits(const svc_supervisor_conf_t *sc, apr_int64_t *pfile,
                        apr_int64_t *ptotal)
{
    *pfile = sc->file_size < MAX_FILE_BYTES ? sc->file_size : MAX_FILE_BYTES;
    *ptotal = sc->file_size < MAX_TOTAL_BYTES ? sc->file_size : MAX_TOTAL_BYTES;
}

apr_size_t svc_runner_reply_cap(const svc_supervisor_conf_t *sc)
{
    apr_int64_t file_max, total_max;

    file_limits(sc, &file_max, &total_max);
    /* The factory's bound for its model_reply line (factory-protocol.md):
     * every byte of the allowed files escaped twice, and the paths. */
    return (apr_size_t)(8 * (total_max + MAX_FILES * (1024 + 64)) + 1024 * 1024);
}

const char *svc_runner_task(apr_pool_t *p, const svc_supervisor_conf_t *sc,
                            const svc_run_job_t *job, int agent)
{
    apr_int64_t file_max, total_max;
    json_t *task;

    file_limits(sc, &file_max, &total_max);
    task = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:{s:s,s:s},s:{s:i,s:I,s:I,s:i,s:i,s:i},s:s}",
                     "type", "task", "run_id", job->id,
                     "instructions", job->instructions,
                     "repo", SVC_SANDBOX_WORKSPACE "/" SVC_WS_REPO,
                     "bundle", SVC_SANDBOX_WORKSPACE "/" SVC_WS_BUNDLE_DIR "/" SVC_WS_BUNDLE_FILE,
                     "branch", apr_pstrcat(p, "svc/run-", job->id, NULL),
                     "author", "name", plain(p, job->author_name),
                     "email", plain(p, job->author_email),
                     "limits", "max_files", MAX_FILES,
                     "max_file_bytes", (json_int_t)file_max,
                     "max_total_bytes", (json_int_t)total_max,
                     "max_steps", job->max_steps,
                     "command_timeout", job->command_timeout,
                     "context_bytes", CONTEXT_BYTES,
                     "mode", agent ? "agent" : "single");
    const char *text = task ? svc_json_dump(p, task) : NULL;

    json_decref(task);
    return text;
}

/* The variable of the init step's environment that carries the clone token. */
#define CLONE_TOKEN_ENV "SVC_CLONE_TOKEN"

/*
 * git's credential helper in the init step, run by git through its shell:
 * it answers "get" with the token from the environment, so the token is in
 * no argv (this text is, without it), no URL and no file. A -c before the
 * subcommand is not written to the clone's .git/config, and the remote URL
 * carries no user or password, so the repository the factory gets holds
 * nothing of it.
 */
#define CLONE_HELPER "!f() { test \"$1\" = get || exit 0; echo username=x-access-token; " \
                     "echo \"password=$" CLONE_TOKEN_ENV "\"; }; f"

/* The run fails with clone_failed, saying why in the words SPEC.md uses. */
static void clone_failed(run_t *r, const char *why)
{
    svc_run_log_note(r->log, "[mod_svc] init: %s", why);
    decide(r, SVC_RUN_FAILED, "clone_failed",
           apr_psprintf(r->p, "Cloning %s failed: %s", r->job->repository, why));
}

/*
 * The init step of a run on an existing repository: an installation token
 * for that one repository (svc_vcs.h; the supervisor's own connection, no
 * pool anyone waits on), then `git clone` into /workspace/repo in a
 * bubblewrap sandbox of its own that has a network (the factory's has
 * none), the token in its environment only. It exits; the factory never
 * sees the token. The run's cancel and timeout stop it like any sandbox.
 */
static void run_init(run_t *r)
{
    const svc_config_t *conf = r->sc->conf;
    const char *full_name = r->job->repository;
    const char *url = apr_pstrcat(r->p, conf->vcs_web_url, "/", full_name, ".git", NULL);
    const char *http = strncmp(conf->vcs_web_url, "http:", 5) == 0 ? "always" : "never";
    const char *token = NULL;
    const char *envp[12];
    const char **argv;
    char *token_env;
    apr_time_t expires;
    apr_status_t rv;
    svc_db_t *db;
    int n = 0;

    svc_run_log_note(r->log, "[mod_svc] init: cloning %s (installation %" APR_INT64_T_FMT
                     ") from %s into " SVC_SANDBOX_WORKSPACE "/" SVC_WS_REPO, full_name,
                     r->job->installation_id, conf->vcs_web_url);
    db = db_get(r);
    rv = db ? db_result(r, svc_vcs_clone_token(db, r->p, conf, r->job->org_id,
                                               r->job->installation_id, full_name, &token,
                                               &expires))
            : SVC_EDBDOWN;
    if (rv == SVC_ENOTFOUND) {
        svc_run_log_note(r->log, "[mod_svc] init: installation %" APR_INT64_T_FMT " is not "
                         "active; nothing was cloned", r->job->installation_id);
        decide(r, SVC_RUN_FAILED, "installation_suspended",
               apr_psprintf(r->p, "The code-hosting App's installation %" APR_INT64_T_FMT
                            " through which the run reaches %s is suspended, was removed at "
                            "the provider, or was unlinked from the organization: nothing was "
                            "cloned. Link the repository through an active installation.",
                            r->job->installation_id, full_name));
        return;
    }
    if (rv == APR_ENOTIMPL) {
        clone_failed(r, "the code-hosting App is not configured on this server.");
        return;
    }
    if (rv == APR_EACCES) {
        clone_failed(r, "the code-hosting provider refused a token for it. The repository was "
                     "probably removed from the installation's repository selection, or "
                     "deleted or renamed.");
        return;
    }
    if (rv != APR_SUCCESS) {
        clone_failed(r, "no token could be had from the code-hosting provider (it did not "
                     "answer in time, or the database was away); start the run again.");
        return;
    }
    /* Should git or the provider ever echo it, the log hides it. */
    svc_run_log_secret(r->log, token);
    token_env = apr_pstrcat(r->p, CLONE_TOKEN_ENV "=", token, NULL);
    envp[n++] = "PATH=/usr/local/bin:/usr/bin:/bin";
    envp[n++] = "HOME=/tmp";
    envp[n++] = "LANG=C.UTF-8";
    envp[n++] = "TZ=UTC";
    envp[n++] = "GIT_CONFIG_NOSYSTEM=1";
    envp[n++] = "GIT_CONFIG_GLOBAL=/dev/null";
    envp[n++] = "GIT_TERMINAL_PROMPT=0";
    if (conf->vcs_ca_file) {
        envp[n++] = "GIT_SSL_CAINFO=" SVC_SANDBOX_CA;
    }
    envp[n++] = token_env;
    envp[n] = NULL;
    {
        const char *command[] = {
            "git", "-c", "credential.helper=", "-c", "credential.helper=" CLONE_HELPER,
            "-c", "protocol.allow=never", "-c", "protocol.https.allow=always",
            "-c", apr_pstrcat(r->p, "protocol.http.allow=", http, NULL),
            "-c", "http.followRedirects=false", "-c", "core.hooksPath=/dev/null",
            "-c", "init.templateDir=", "clone", "--quiet", "--", url,
            SVC_SANDBOX_WORKSPACE "/" SVC_WS_REPO, NULL
        };

        argv = svc_sandbox_init_argv(r->p, r->workspace, conf->vcs_ca_file, command);
        rv = supervise(r, argv, 0, NULL, envp);
    }
    /* The child has its copy; ours goes now. */
    svc_wipe(token_env, strlen(token_env));
    svc_wipe((void *)token, strlen(token));
    if (rv != APR_SUCCESS) {
        return;     /* decided: cancelled, timed out, lost, stopping */
    }
    if (!WIFEXITED(r->sb.status) || WEXITSTATUS(r->sb.status) != 0) {
        clone_failed(r, apr_psprintf(r->p, "git %s. The repository was probably removed from "
                                     "the installation's repository selection, or deleted; "
                                     "the run's log has git's own words.",
                                     exit_text(r->p, r->sb.status)));
        return;
    }
    svc_run_log_note(r->log, "[mod_svc] init: cloned %s; the token is gone with the step",
                     full_name);
}

/* The factory, from the task to its result or error. */
static void run_factory(run_t *r)
{
    static const char *const command[] = { SVC_SANDBOX_FACTORY, NULL };
    const char **argv;
    const char *task = svc_runner_task(r->p, r->sc, r->job, r->agent);

    if (!r->sc->runner && access(r->sc->factory, X_OK) < 0) {
        decide(r, SVC_RUN_FAILED, "sandbox_failed",
               apr_psprintf(r->p, "The factory program %s cannot be run (SvcRunFactory).",
                            r->sc->factory));
        return;
    }
    /* The factory writes the artifact there (the task's "bundle"). */
    if (svc_workspace_fresh_dir(r->workspace, SVC_WS_BUNDLE_DIR) != APR_SUCCESS) {
        decide(r, SVC_RUN_FAILED, "bundle_failed", "The artifact could not be prepared.");
        return;
    }
    if (!task || svc_sandbox_argv(r->p, r->sc, r->workspace, r->job->id, command, &argv)
                 != APR_SUCCESS) {
        decide(r, SVC_RUN_FAILED, "sandbox_failed", "The sandbox's command could not be made "
               "(SvcRunner needs {command}).");
        return;
    }
    if (supervise(r, argv, 1, task, NULL) != APR_SUCCESS) {
        return;
    }
    if (r->result && WIFEXITED(r->sb.status) && WEXITSTATUS(r->sb.status) == 0) {
        return;
    }
    if (r->fcode) {
        svc_run_log_note(r->log, "[mod_svc] the factory failed: %s: %s", r->fcode,
                         r->fmessage);
        decide(r, SVC_RUN_FAILED, r->fcode, r->fmessage);
        return;
    }
    svc_run_log_note(r->log, "[mod_svc] the factory %s without a result",
                     exit_text(r->p, r->sb.status));
    decide(r, SVC_RUN_FAILED, "factory_failed",
           apr_psprintf(r->p, "The factory %s without a result.",
                        exit_text(r->p, r->sb.status)));
}

/*
 * The git bundle of the run's branch, which the factory made in its own
 * sandbox before its result line (git never runs on the run's repository
 * outside one: its configuration may name programs), read without following
 * links, and checked to hold the commit the factory reported.
 */
static apr_status_t read_bundle(run_t *r, unsigned char **pdata, apr_size_t *plen)
{
    const char *branch = apr_pstrcat(r->p, "svc/run-", r->job->id, NULL);
    const char *commit = json_string_value(json_object_get(r->result, "commit"));
    const char *head;
    apr_status_t rv;

    rv = svc_workspace_read(r->p, r->workspace, SVC_WS_BUNDLE_DIR, SVC_WS_BUNDLE_FILE,
                            (apr_size_t)r->sc->file_size, pdata, plen);
    if (rv != APR_SUCCESS) {
        decide(r, SVC_RUN_FAILED, "bundle_failed", "The artifact could not be read (or is "
               "larger than SvcRunFileSize).");
        return rv;
    }
    /* HEAD too, so that `git clone run.bundle` checks the branch out. */
    head = svc_bundle_head(r->p, *pdata, *plen, apr_pstrcat(r->p, "refs/heads/", branch, NULL));
    if (head && !str_eq(svc_bundle_head(r->p, *pdata, *plen, "HEAD"), head)) {
        head = NULL;
    }
    if (!head || strcmp(head, commit) != 0) {
        svc_run_log_note(r->log, "[mod_svc] the bundle's %s is %s, not the reported %s",
                         branch, head ? head : "missing", commit);
        decide(r, SVC_RUN_FAILED, "bundle_failed", "The artifact does not hold the commit the "
               "factory reported.");
        return APR_EGENERAL;
    }
    svc_run_log_note(r->log, "[mod_svc] artifact: %" APR_SIZE_T_FMT " bytes, %s at %s", *plen,
                     branch, commit);
    return APR_SUCCESS;
}

/*
 * Writes the outcome, retrying while the database is away: until it is
 * written, or the run is lost, or (the supervisor stopping) time is up.
 */
/*
 * The run's result as stored: the factory's commit, summary and files, and
 * what the supervisor saw itself: the mode, the steps (their step lines),
 * the tokens (its own calls' usage) and the checks (the last `run`).
 */
static const char *result_doc(run_t *r)
{
    apr_int64_t in = 0, out = 0;
    json_t *doc;
    const char *text;

    if (!r->result) {
        return NULL;
    }
    if (r->model) {
        svc_run_model_tokens(r->model, &in, &out);
    }
    doc = json_pack("{s:O,s:O,s:O,s:s,s:i,s:{s:I,s:I},s:O}",
                    "summary", json_object_get(r->result, "summary"),
                    "commit", json_object_get(r->result, "commit"),
                    "files", json_object_get(r->result, "files"),
                    "mode", r->agent ? "agent" : "single",
                    "steps", r->steps > r->job->max_steps + 1 ? r->job->max_steps + 1 : r->steps,
                    "tokens", "input", (json_int_t)in, "output", (json_int_t)out,
                    "checks", r->checks ? r->checks : json_null());
    if (doc && r->stopped_code) {
        json_object_set_new(doc, "stopped", json_string(r->stopped_code));
    }
    text = doc ? svc_json_dump(r->p, doc) : NULL;
    json_decref(doc);
    return text;
}

static void write_outcome(run_t *r, const unsigned char *bundle, apr_size_t bundle_len)
{
    apr_time_t give_up = 0;
    const char *result = result_doc(r);
    int tries = 0;

    for (;;) {
        apr_status_t rv;
        svc_db_t *db;

        if (raised(&r->slot->lost)) {
            return;
        }
        if (raised(&r->slot->stop) && !give_up) {
            give_up = apr_time_now() + apr_time_from_msec(STOP_WRITE_MS);
        }
        rv = flush_log(r);
        if (rv == APR_SUCCESS && (db = db_get(r)) != NULL) {
            if (strcmp(r->status, "requeue") == 0) {
                rv = svc_run_requeue(db, r->p, r->job->id, r->slot->node);
            }
            else if (strcmp(r->status, SVC_RUN_SUCCEEDED) == 0) {
                rv = svc_run_succeed(db, r->p, r->job->id, r->slot->node, result, bundle,
                                     bundle_len);
            }
            else if (r->stopped_code && bundle && result
                     && strcmp(r->code, r->stopped_code) == 0) {
                rv = svc_run_fail_with_work(db, r->p, r->job->id, r->slot->node, r->code,
                                            r->message, result, bundle, bundle_len);
            }
            else {
                rv = svc_run_finish(db, r->p, r->job->id, r->slot->node, r->status, r->code,
                                    r->message);
            }
            rv = db_result(r, rv);
        }
        else if (rv == APR_SUCCESS) {
            rv = SVC_EDBDOWN;
        }
        if (rv == APR_SUCCESS || rv == SVC_ENOTFOUND) {
            return;
        }
        if (give_up && apr_time_now() >= give_up) {
            return;
        }
        /* A statement that failed for another reason than the connection
         * (a bug) is not tried forever. */
        if (rv != SVC_EDBDOWN && ++tries >= 5) {
            r->sc->log(r->sc->log_baton, SVC_SUP_ERR,
                       apr_psprintf(r->p, "SVC0070: run %s: its final status (%s) could not "
                                    "be written; it will be failed as lost", r->job->id,
                                    r->status));
            return;
        }
        nap(r, 1000);
    }
}

/* The time since *mark, which moves to now. */
static apr_time_t lap(apr_time_t *mark)
{
    apr_time_t now = apr_time_now(), d = now - *mark;

    *mark = now;
    return d;
}

/* A run's parts in microseconds, one debug line a run for `make bench`
 * (tools/run-bench.pl reads it; docs/performance.md says what each is).
 * A part the run did not reach is 0. */
static void log_timings(run_t *r, apr_time_t end)
{
    apr_time_t sandbox = 0, prepare = 0, commit = 0, ended = 0;

    if (r->t.first_line) {
        sandbox = r->t.first_line - r->t.spawned;
    }
    if (r->t.first_model) {
        prepare = r->t.first_model - r->t.first_line;
    }
    if (r->t.result_at) {
        commit = r->t.result_at - (r->t.last_reply ? r->t.last_reply : r->t.first_line);
        ended = r->t.spawned + r->t.factory - r->t.result_at;
    }
    r->sc->log(r->sc->log_baton, SVC_SUP_DEBUG,
               apr_psprintf(r->p, "SVC0790: run %s timings (us): provider=%" APR_TIME_T_FMT
                            " workspace=%" APR_TIME_T_FMT " clone=%" APR_TIME_T_FMT
                            " factory=%" APR_TIME_T_FMT " sandbox=%" APR_TIME_T_FMT
                            " prepare=%" APR_TIME_T_FMT " model=%" APR_TIME_T_FMT
                            " commit=%" APR_TIME_T_FMT " exit=%" APR_TIME_T_FMT
                            " bundle=%" APR_TIME_T_FMT
                            " outcome=%" APR_TIME_T_FMT " cleanup=%" APR_TIME_T_FMT
                            " total=%" APR_TIME_T_FMT " status=%s",
                            r->job->id, r->t.provider, r->t.workspace, r->t.clone,
                            r->t.factory, sandbox, prepare, r->t.model, commit, ended, r->t.bundle,
                            r->t.outcome, r->t.cleanup, end - r->t.start,
                            r->status ? r->status : "lost"));
}

/* Wakes the supervisor: the run's place (settled) or its slot (done) is free. */
static void tell_ended(svc_run_slot_t *slot)
{
    char byte = 1;

    if (write(slot->ended, &byte, 1) < 0) {
        /* The pipe is full: the supervisor has wake-ups waiting already. */
    }
}

static void run_main(run_t *r)
{
    unsigned char *bundle = NULL;
    apr_size_t bundle_len = 0;
    apr_status_t rv;
    apr_time_t mark = r->t.start;

    r->log = svc_run_log_create(r->p, r->job->log_bytes, r->job->log_dropped,
                                r->sc->log_limit);
    svc_run_log_note(r->log, "[mod_svc] run %s started on %s", r->job->id, r->slot->node);
    /* The provider first: without one there is nothing to do. */
    for (;;) {
        svc_db_t *db = db_get(r);

        rv = db ? db_result(r, svc_run_model_open(&r->model, db, r->p, r->sc, r->job,
                                                  svc_runner_reply_cap(r->sc)))
                : SVC_EDBDOWN;
        if (rv == APR_SUCCESS) {
            apr_array_header_t *keys;
            int i;

            /* Every key of the org's providers is hidden from the log
             * wherever it appears (a model that was shown one, a command
             * that prints one), not only the one this run uses. */
            rv = db_result(r, svc_provider_org_keys(db, r->p, r->sc->conf, r->job->org_id,
                                                    &keys));
            for (i = 0; rv == APR_SUCCESS && i < keys->nelts; i++) {
                svc_run_log_secret(r->log, APR_ARRAY_IDX(keys, i, const char *));
            }
        }
        if (rv != SVC_EDBDOWN || raised(&r->slot->lost) || raised(&r->slot->stop)
            || raised(&r->slot->cancel) || apr_time_now() >= r->deadline) {
            break;
        }
        nap(r, 1000);
    }
    r->t.provider = lap(&mark);
    if (raised(&r->slot->lost)) {
        decide(r, NULL, NULL, NULL);
    }
    else if (raised(&r->slot->stop)) {
        decide(r, "requeue", NULL, NULL);
    }
    else if (raised(&r->slot->cancel)) {
        decide(r, SVC_RUN_CANCELLED, NULL, NULL);
    }
    else if (rv == SVC_ENOTFOUND) {
        svc_run_log_note(r->log, "[mod_svc] the organization has no default model provider");
        decide(r, SVC_RUN_FAILED, "no_provider", "The organization has no default model "
               "provider: add one (POST /api/orgs/:orgSlug/providers) and make it the "
               "default.");
    }
    else if (rv == APR_EINVAL) {
        decide(r, SVC_RUN_FAILED, "provider_error", "The default provider's key can no "
               "longer be opened (the server secret changed since it was stored); set the "
               "key again.");
    }
    else if (rv != APR_SUCCESS) {
        decide(r, SVC_RUN_FAILED, "internal", "The run's provider could not be loaded.");
    }
    if (!r->decided) {
        const char *why;

        r->agent = svc_run_model_agent(r->model, &why);
        svc_run_log_note(r->log, "[mod_svc] model: %s; %s (%s)",
                         svc_run_model_describe(r->model),
                         r->agent ? "agent mode: the model works with tools" : "single-answer "
                         "mode: the model answers once with every file", why);
        rv = svc_workspace_make(r->p, r->sc->work_dir, r->job->id, &r->workspace);
        if (rv != APR_SUCCESS) {
            r->workspace = NULL;
            decide(r, SVC_RUN_FAILED, "sandbox_failed", "The run's workspace could not be "
                   "made (SvcRunWorkDir).");
        }
        r->t.workspace = lap(&mark);
    }
    if (!r->decided && r->job->repository) {
        run_init(r);
        r->t.clone = lap(&mark);
    }
    if (!r->decided) {
        run_factory(r);
        r->t.factory = lap(&mark);
    }
    if (!r->decided && read_bundle(r, &bundle, &bundle_len) == APR_SUCCESS) {
        r->t.bundle = lap(&mark);
        if (r->stopped_code) {
            /* Failed, with the work so far on the branch and in the
             * artifact for a person to look at. */
            svc_run_log_note(r->log, "[mod_svc] stopped at a limit; the work so far is "
                             "committed: %s", json_string_value(json_object_get(r->result,
                                                                                "commit")));
            decide(r, SVC_RUN_FAILED, r->stopped_code, r->stopped_message);
        }
        else {
            svc_run_log_note(r->log, "[mod_svc] succeeded: %s",
                             json_string_value(json_object_get(r->result, "summary")));
            decide(r, SVC_RUN_SUCCEEDED, NULL, NULL);
        }
    }
    if (r->status) {
        if (strcmp(r->status, SVC_RUN_FAILED) == 0) {
            svc_run_log_note(r->log, "[mod_svc] failed: %s", r->code);
        }
        lap(&mark);
        write_outcome(r, bundle, bundle_len);
        r->t.outcome = lap(&mark);
    }
    /* The run no longer counts against SvcRunConcurrency: the supervisor
     * claims the next one while this thread cleans up. */
    apr_atomic_set32(&r->slot->settled, 1);
    tell_ended(r->slot);
    /* The workspace first: a model call still under way (a cancelled run)
     * may take its time to end. */
    if (r->workspace && svc_workspace_remove(r->workspace) != APR_SUCCESS) {
        r->sc->log(r->sc->log_baton, SVC_SUP_WARNING,
                   apr_psprintf(r->p, "SVC0071: run %s: its workspace %s could not be removed "
                                "entirely", r->job->id, r->workspace));
    }
    if (r->model) {
        /* A call still running was paid for all the same. */
        if (svc_run_model_busy(r->model)) {
            svc_run_model_finish(r->model, r->log, r->p);
        }
        if (svc_run_model_unrecorded(r->model) && db_get(r)) {
            db_result(r, svc_run_model_record(r->model, r->db));
        }
        svc_run_model_close(r->model);
    }
    r->t.cleanup = lap(&mark);
    log_timings(r, mark);
}

static void *slot_main(void *arg)
{
    svc_run_slot_t *slot = arg;
    run_t r;

    memset(&r, 0, sizeof(r));
    r.slot = slot;
    r.sc = slot->sc;
    r.job = slot->job;
    r.p = slot->pool;
    r.t.start = apr_time_now();
    r.deadline = r.t.start + apr_time_from_sec(slot->job->timeout_seconds);
    r.last_flush = apr_time_now();
    r.sb.in = r.sb.out = r.sb.err = -1;
    r.model_pipe[0] = r.model_pipe[1] = -1;
    if (pipe2(r.model_pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
        run_main(&r);
    }
    else {
        decide(&r, SVC_RUN_FAILED, "internal", "The supervisor is out of file descriptors.");
        r.log = svc_run_log_create(r.p, r.job->log_bytes, r.job->log_dropped,
                                   r.sc->log_limit);
        write_outcome(&r, NULL, 0);
    }
    json_decref(r.result);
    json_decref(r.checks);
    free(r.obuf);
    if (r.model_pipe[0] >= 0) {
        close(r.model_pipe[0]);
        close(r.model_pipe[1]);
    }
    db_drop(&r);
    apr_atomic_set32(&slot->done, 1);
    tell_ended(slot);
    return NULL;
}

apr_status_t svc_run_slot_start(svc_run_slot_t *slot)
{
    int rc;

    if (pipe2(slot->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        return errno;
    }
    rc = pthread_create(&slot->thread, NULL, slot_main, slot);
    if (rc != 0) {
        close(slot->wake[0]);
        close(slot->wake[1]);
        return rc;
    }
    return APR_SUCCESS;
}

void svc_run_slot_raise(svc_run_slot_t *slot, volatile apr_uint32_t *flag)
{
    char byte = 1;

    apr_atomic_set32(flag, 1);
    if (write(slot->wake[1], &byte, 1) < 0) {
        /* The pipe is full: the thread has wake-ups waiting already. */
    }
}

void svc_run_slot_join(svc_run_slot_t *slot)
{
    pthread_join(slot->thread, NULL);
    close(slot->wake[0]);
    close(slot->wake[1]);
}
