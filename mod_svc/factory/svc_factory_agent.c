/*
 * Agent mode: the model works on the repository with tools, a turn at a
 * time, until it calls finish. Each turn is one "model" request through
 * the supervisor (which speaks the provider's own form of tools, and holds
 * the key); each tool call the answer carries is one step, carried out
 * here, in the sandbox, and reported as a "step" line; the results go back
 * with the next request.
 *
 * The conversation is kept under the task's context_bytes: old tool
 * outputs are shortened, then dropped, then old file contents the model
 * sent; the task (the first message) and the last turn never are.
 *
 * The step limit is kept here (the supervisor refuses model calls past it
 * and past the token budget too): when it is reached, or the supervisor
 * answers step_limit or token_limit, the work so far is committed all the
 * same and the result line says why it stopped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svc_factory.h"
#include "svc_factory_prompt.h"

#define MODEL_MAX_TOKENS   16000
#define NO_TOOL_TURNS_MAX  3
#define SUMMARY_MAX        200
/* Shortening old outputs: what is kept of each end. */
#define KEEP_HEAD          1024
#define KEEP_TAIL          512
#define SHORTEN_OVER       2048
#define ARG_KEEP_OVER      512

#define SYSTEM_PROMPT \
    "You are the factory of a software-building service. You work in a git repository, " \
    "with tools, to complete the task you are given, as a careful engineer would: look at " \
    "what is there, make the changes, build and run the tests, read what failed, fix it, " \
    "and run them again.\n" \
    "\n" \
    "Tools:\n" \
    "- list_files: the paths of the files below a directory of the repository.\n" \
    "- read_file: a file's text, or a range of its lines.\n" \
    "- write_file: write a whole file (created, or replaced).\n" \
    "- edit_file: replace one exact, unique span of a file's text.\n" \
    "- run: a shell command (sh -c) in the top directory of the repository. There is no " \
    "network. A command may take at most %d seconds; you get its exit status and the last " \
    "16 KiB of its output.\n" \
    "- finish: the work is done; give a one-line summary, which becomes the commit message.\n" \
    "\n" \
    "Rules:\n" \
    "- Paths are relative to the top of the repository, use '/', and have no '.', '..' or " \
    "'.git' part.\n" \
    "- Read a file before you change it.\n" \
    "- When the task is about code, run its build and its tests before you finish, and " \
    "finish when they pass (or say in the summary why they do not).\n" \
    "- When you finish, everything git sees in the repository is committed on the branch " \
    "%s: add a .gitignore for build outputs and caches that should not be committed.\n" \
    "- You have at most %zu tool calls besides finish. A file is at most %zu bytes.\n"

typedef struct {
    svc_factory_t *f;
    json_t *convo;                  /* the messages, in the protocol's neutral form */
    json_t *tools;
    char *system;
    char **env;                     /* for `run` */
    size_t steps;                   /* steps taken (finish is not one of them) */
    size_t step_lines;              /* step lines sent (finish included) */
} agent_t;

/* --- small helpers ------------------------------------------------------------ */

/* The environment of `run`: built from nothing, as git's is. */
static char **run_env(void)
{
    const char *path = getenv("PATH"), *home = getenv("HOME");
    const char *pairs[][2] = {
        { "PATH", path && *path ? path : "/usr/local/bin:/usr/bin:/bin" },
        { "HOME", home && *home ? home : "/tmp" },
        { "LANG", "C.UTF-8" },
        { "TZ", "UTC" },
        { "TERM", "dumb" },
        { "PAGER", "cat" },
        { "GIT_PAGER", "cat" },
        /* A .pyc written in the same second as the edit that follows looks
         * current to Python: the fix would not be seen. */
        { "PYTHONDONTWRITEBYTECODE", "1" },
    };
    size_t n = sizeof(pairs) / sizeof(pairs[0]), i;
    char **env = calloc(n + 1, sizeof(*env));

    for (i = 0; env && i < n; i++) {
        size_t len = strlen(pairs[i][0]) + strlen(pairs[i][1]) + 2;

        env[i] = malloc(len);
        if (!env[i]) {
            break;
        }
        snprintf(env[i], len, "%s=%s", pairs[i][0], pairs[i][1]);
    }
    if (env && i < n) {
        while (i-- > 0) {
            free(env[i]);
        }
        free(env);
        env = NULL;
    }
    return env;
}

static void free_env(char **env)
{
    size_t i;

    for (i = 0; env && env[i]; i++) {
        free(env[i]);
    }
    free(env);
}

/* The largest n <= want at which s can be cut without splitting a UTF-8
 * character. */
static size_t utf8_cut(const char *s, size_t len, size_t want)
{
    if (want >= len) {
        return len;
    }
    while (want > 0 && ((unsigned char)s[want] & 0xc0) == 0x80) {
        want--;
    }
    return want;
}

/* Where a tail of about `want` bytes of s starts, on a character boundary. */
static size_t utf8_tail(const char *s, size_t len, size_t want)
{
    size_t at = want >= len ? 0 : len - want;

    while (at < len && ((unsigned char)s[at] & 0xc0) == 0x80) {
        at++;
    }
    return at;
}

/* A one-line, bounded form of any text (a commit message, a step's args). */
static void one_line(char *out, size_t max, const char *text, size_t len)
{
    size_t n, i = 0;

    /* Leading white space and line breaks say nothing. */
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n'
                       || text[i] == '\r')) {
        i++;
    }
    n = svc_factory_clean(out, max, text + i, len - i);
    while (n > 0 && out[n - 1] == ' ') {
        out[--n] = '\0';
    }
}

/* --- the conversation under its budget ----------------------------------------- */

static size_t dump_size(const json_t *v)
{
    return json_dumpb(v, NULL, 0, JSON_COMPACT);
}

/* s shortened to its head and tail with a note between, as a new string
 * (NULL when short enough already or out of memory). */
static json_t *shortened(const char *s, size_t len, const char *what)
{
    svc_factory_buf_t b = { 0 };
    size_t head = utf8_cut(s, len, KEEP_HEAD), tail = utf8_tail(s, len, KEEP_TAIL);
    json_t *v;

    if (len <= SHORTEN_OVER || tail <= head) {
        return NULL;
    }
    svc_factory_buf_add(&b, s, head);
    svc_factory_buf_printf(&b, "\n[... %zu bytes of this %s were left out to keep the "
                           "conversation within the model's context ...]\n", tail - head, what);
    svc_factory_buf_add(&b, s + tail, len - tail);
    v = b.failed ? NULL : json_stringn(b.data, b.len);
    svc_factory_buf_free(&b);
    return v;
}

/*
 * One pass over the messages that may change (all but the task and the
 * last two: the latest turn and its results), oldest first, until the
 * conversation fits. `pass`: 0 shortens tool outputs, 1 drops them, 2
 * shortens the long arguments of old tool calls (file contents), 3 old
 * texts. Returns how many values changed.
 */
static size_t trim_pass(agent_t *a, int pass, size_t budget)
{
    size_t n = json_array_size(a->convo), i, changed = 0;

    for (i = 1; i + 2 < n && dump_size(a->convo) > budget; i++) {
        json_t *m = json_array_get(a->convo, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        json_t *results = json_object_get(m, "results"), *r, *calls, *c;
        size_t k;

        if (strcmp(role, "tool") == 0 && pass <= 1) {
            json_array_foreach(results, k, r) {
                json_t *content = json_object_get(r, "content");
                const char *s = json_string_value(content);
                size_t len = json_string_length(content);
                static const char dropped[] = "[the output of this step was left out to keep "
                                              "the conversation within the model's context]";
                json_t *nv = NULL;

                if (pass == 0) {
                    nv = shortened(s, len, "output");
                }
                else if (len > sizeof(dropped)) {
                    nv = json_string(dropped);
                }
                if (nv) {
                    json_object_set_new(r, "content", nv);
                    changed++;
                }
            }
        }
        else if (strcmp(role, "assistant") == 0 && pass == 2) {
            calls = json_object_get(m, "tool_calls");
            json_array_foreach(calls, k, c) {
                json_t *args = json_object_get(c, "arguments"), *v;
                const char *key;

                json_object_foreach(args, key, v) {
                    if (json_is_string(v) && json_string_length(v) > ARG_KEEP_OVER) {
                        char note[160];

                        snprintf(note, sizeof(note), "[%zu bytes, left out of the conversation "
                                 "to save room; read the file for its text]",
                                 json_string_length(v));
                        json_object_set_new(args, key, json_string(note));
                        changed++;
                    }
                }
            }
        }
        else if (pass == 3 && json_is_string(json_object_get(m, "content"))) {
            json_t *content = json_object_get(m, "content");
            json_t *nv = shortened(json_string_value(content), json_string_length(content),
                                   "message");

            if (nv) {
                json_object_set_new(m, "content", nv);
                changed++;
            }
        }
    }
    return changed;
}

static void trim(agent_t *a)
{
    size_t fixed = strlen(a->system) + dump_size(a->tools);
    size_t budget = a->f->task.limits.context_bytes > fixed
                    ? a->f->task.limits.context_bytes - fixed : 0;
    size_t before = dump_size(a->convo), changed = 0;
    int pass;

    if (before <= budget) {
        return;
    }
    for (pass = 0; pass < 4 && dump_size(a->convo) > budget; pass++) {
        changed += trim_pass(a, pass, budget);
    }
    svc_factory_log("context: %zu old output(s) and argument(s) shortened or left out "
                    "(%zu -> %zu bytes; the limit is %zu)", changed, before,
                    dump_size(a->convo), a->f->task.limits.context_bytes);
}

/* --- steps -------------------------------------------------------------------- */

static void send_step(agent_t *a, const char *tool, const char *args, int ok,
                      const svc_factory_run_t *run)
{
    char name[65];
    json_t *msg;

    svc_factory_clean(name, sizeof(name) - 1, tool, strlen(tool));
    msg = json_pack("{s:s, s:I, s:s, s:s, s:b}", "type", "step", "n",
                    (json_int_t)++a->step_lines, "tool", name, "args", args, "ok", ok);
    if (msg && run) {
        json_object_set_new(msg, "exit", run->timed_out || run->signal
                                         ? json_null() : json_integer(run->exit_status));
        json_object_set_new(msg, "duration_ms", json_integer(run->duration_ms));
        json_object_set_new(msg, "timed_out", json_boolean(run->timed_out));
    }
    if (msg) {
        svc_factory_send(msg);
    }
    json_decref(msg);
}

static void run_tool(agent_t *a, json_t *args, svc_factory_tool_out_t *out)
{
    const svc_factory_limits_t *l = &a->f->task.limits;
    size_t len;
    json_t *v = json_object_get(args, "command");
    const char *command = json_string_value(v);
    svc_factory_run_t res;
    svc_factory_err_t err;

    len = json_string_length(v);
    if (!command || len == 0 || strlen(command) != len) {
        out->is_error = 1;
        svc_factory_buf_puts(&out->text, "run needs command (a non-empty string without NUL)");
        snprintf(out->brief, sizeof(out->brief), "(bad arguments)");
        send_step(a, "run", out->brief, 0, NULL);
        return;
    }
    one_line(out->brief, sizeof(out->brief) - 1, command, len);
    svc_factory_log("run: $ %s", out->brief);
    if (svc_factory_run(&res, command, a->f->task.repo, l->command_timeout, a->env,
                        &err) < 0) {
        out->is_error = 1;
        svc_factory_buf_printf(&out->text, "the command could not be started: %s",
                               err.message);
        send_step(a, "run", out->brief, 0, NULL);
        svc_factory_run_free(&res);
        return;
    }
    if (res.timed_out) {
        svc_factory_buf_printf(&out->text, "killed: the command took longer than its limit of "
                               "%d s", l->command_timeout);
        out->is_error = 1;
    }
    else if (res.signal) {
        svc_factory_buf_printf(&out->text, "killed by signal %d after %.1f s", res.signal,
                               (double)res.duration_ms / 1000);
        out->is_error = 1;
    }
    else {
        svc_factory_buf_printf(&out->text, "exit status %d (%.1f s)", res.exit_status,
                               (double)res.duration_ms / 1000);
        out->is_error = res.exit_status != 0;
    }
    if (res.leftovers) {
        svc_factory_buf_printf(&out->text, "\n%d process(es) it left running were stopped",
                               res.leftovers);
    }
    if (res.total == 0) {
        svc_factory_buf_puts(&out->text, "\n(no output)");
    }
    else {
        if (res.total > res.tail_len) {
            svc_factory_buf_printf(&out->text, "\noutput (the last %zu of %zu bytes):\n",
                                   res.tail_len, res.total);
        }
        else {
            svc_factory_buf_puts(&out->text, "\noutput:\n");
        }
        svc_factory_tool_text(&out->text, res.tail, res.tail_len);
    }
    if (out->text.data) {
        svc_factory_log("run: %.*s", (int)strcspn(out->text.data, "\n"), out->text.data);
    }
    send_step(a, "run", out->brief, !out->is_error, &res);
    svc_factory_run_free(&res);
}

/*
 * The end: everything in the repository committed. summary NULL: stopped
 * at a limit (f->stopped says which).
 */
static int commit_work(agent_t *a, const char *summary, svc_factory_err_t *perr)
{
    char text[256];

    if (!summary) {
        snprintf(text, sizeof(text), "Work so far (the run stopped at its %s after %zu steps)",
                 strcmp(a->f->stopped.code, SVC_FACTORY_E_STEPS) == 0 ? "step limit"
                                                                      : "token budget",
                 a->steps);
        summary = text;
        svc_factory_log("stopped: %s; committing the work so far", a->f->stopped.message);
    }
    return svc_factory_commit_all(a->f, summary, perr);
}

static void stop_at(agent_t *a, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void stop_at(agent_t *a, const char *code, const char *fmt, ...)
{
    char text[SVC_FACTORY_MSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    svc_factory_fail(&a->f->stopped, code, "%s", text);
}

/*
 * Carries out the tool calls of one answer, in order; their results go
 * into *presults. Returns 1 when the run is over (finish, or the step
 * limit: a->f->stopped), 0 to go on, -1 on a failure that ends the run.
 */
static int do_calls(agent_t *a, json_t *calls, json_t *results, svc_factory_err_t *perr)
{
    size_t i;
    json_t *c;

    json_array_foreach(calls, i, c) {
        const char *id = json_string_value(json_object_get(c, "id"));
        const char *name = json_string_value(json_object_get(c, "name"));
        json_t *args = json_object_get(c, "arguments");
        const char *args_error = json_string_value(json_object_get(c, "arguments_error"));
        svc_factory_tool_out_t out;
        json_t *r;

        memset(&out, 0, sizeof(out));
        if (strcmp(name, "finish") == 0 && !args_error) {
            size_t len;
            const char *s = json_string_value(json_object_get(args, "summary"));
            char summary[SUMMARY_MAX + 1];

            len = s ? strlen(s) : 0;
            one_line(summary, SUMMARY_MAX, s ? s : "", len);
            if (summary[0]) {
                send_step(a, "finish", summary, 1, NULL);
                svc_factory_log("finish: %s", summary);
                if (commit_work(a, summary, perr) < 0) {
                    return -1;
                }
                return 1;
            }
            out.is_error = 1;
            svc_factory_buf_puts(&out.text, "finish needs summary: one line saying what was "
                                 "done; nothing was committed yet");
            snprintf(out.brief, sizeof(out.brief), "(no summary)");
            send_step(a, "finish", out.brief, 0, NULL);
        }
        else {
            if (a->steps >= a->f->task.limits.max_steps) {
                stop_at(a, SVC_FACTORY_E_STEPS, "The run reached its limit of %zu steps "
                        "(SvcRunMaxSteps) before the model called finish.",
                        a->f->task.limits.max_steps);
                if (commit_work(a, NULL, perr) < 0) {
                    return -1;
                }
                return 1;
            }
            a->steps++;
            if (args_error) {
                out.is_error = 1;
                svc_factory_buf_printf(&out.text, "the arguments of this call are not a JSON "
                                       "object (%.300s); call the tool again with valid JSON "
                                       "arguments", args_error);
                snprintf(out.brief, sizeof(out.brief), "(arguments not JSON)");
                send_step(a, name, out.brief, 0, NULL);
            }
            else if (strcmp(name, "run") == 0) {
                run_tool(a, args, &out);
            }
            else if (svc_factory_tool_fs(a->f, name, args, &out) == 0) {
                svc_factory_log("%s: %s%s%.200s", name, out.brief, out.is_error ? ": " : "",
                                out.is_error && out.text.data ? out.text.data : "");
                send_step(a, name, out.brief, !out.is_error, NULL);
            }
            else {
                char clean[65];

                svc_factory_clean(clean, sizeof(clean) - 1, name, strlen(name));
                out.is_error = 1;
                svc_factory_buf_printf(&out.text, "there is no tool named '%s'; the tools are "
                                       "list_files, read_file, write_file, edit_file, run and "
                                       "finish", clean);
                send_step(a, clean, "(unknown tool)", 0, NULL);
            }
        }
        if (out.text.failed) {
            svc_factory_buf_free(&out.text);
            return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        }
        r = json_pack("{s:s, s:s%, s:b}", "id", id, "content",
                      out.text.data ? out.text.data : "", out.text.len, "is_error",
                      out.is_error);
        svc_factory_buf_free(&out.text);
        if (!r || json_array_append_new(results, r) < 0) {
            return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "cannot record a tool's "
                                    "result");
        }
    }
    return 0;
}

/* The assistant's turn as the conversation keeps it. */
static int add_turn(agent_t *a, const char *content, json_t *calls)
{
    json_t *m = json_pack("{s:s, s:s}", "role", "assistant", "content", content);
    json_t *kept = json_array(), *c;
    size_t i;

    if (!m || !kept) {
        json_decref(m);
        json_decref(kept);
        return -1;
    }
    json_array_foreach(calls, i, c) {
        json_array_append_new(kept, json_pack("{s:O, s:O, s:O}", "id",
                                              json_object_get(c, "id"), "name",
                                              json_object_get(c, "name"), "arguments",
                                              json_object_get(c, "arguments")));
    }
    if (json_array_size(kept) > 0) {
        json_object_set_new(m, "tool_calls", kept);
    }
    else {
        json_decref(kept);
    }
    return json_array_append_new(a->convo, m);
}

static int loop(agent_t *a, svc_factory_err_t *perr)
{
    int no_tool_turns = 0;

    for (;;) {
        json_t *msg, *reply = NULL, *calls, *results;
        const char *content, *stop;
        int rc;

        trim(a);
        msg = json_pack("{s:s, s:O, s:O, s:i}", "system", a->system, "messages", a->convo,
                        "tools", a->tools, "max_tokens", MODEL_MAX_TOKENS);
        if (!msg) {
            return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "cannot build the model "
                                    "request");
        }
        svc_factory_log("asking the model (request %d, %zu messages)", a->f->next_id + 1,
                        json_array_size(a->convo));
        rc = svc_factory_model_call(a->f, msg, &reply, perr);
        json_decref(msg);
        if (rc < 0) {
            if (perr->code != svc_factory_cancelled
                && (strcmp(perr->code, SVC_FACTORY_E_STEPS) == 0
                    || strcmp(perr->code, SVC_FACTORY_E_TOKENS) == 0)) {
                a->f->stopped = *perr;
                return commit_work(a, NULL, perr);
            }
            return -1;
        }
        content = json_string_value(json_object_get(reply, "content"));
        calls = json_object_get(reply, "tool_calls");
        stop = json_string_value(json_object_get(reply, "stop"));
        svc_factory_log("the model answered: %zu tool call(s)%s", json_array_size(calls),
                        strcmp(stop, "max_tokens") == 0 ? " (cut at max_tokens)" : "");
        if (add_turn(a, *content || json_array_size(calls) ? content : "(no answer)",
                     calls) < 0) {
            return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        }
        if (json_array_size(calls) == 0) {
            if (++no_tool_turns >= NO_TOOL_TURNS_MAX) {
                return svc_factory_fail(perr, SVC_FACTORY_E_REPLY, "the model answered %d "
                                        "times in a row without calling a tool",
                                        NO_TOOL_TURNS_MAX);
            }
            json_array_append_new(a->convo, json_pack(
                "{s:s, s:s}", "role", "user", "content",
                strcmp(stop, "max_tokens") == 0
                ? "Your answer was cut off at the output limit before it called a tool. Write "
                  "large files in parts (write_file, then edit_file to add to them). Continue "
                  "the work with the tools, and call finish when it is done."
                : "Continue the work with the tools (answering in text does nothing). When it "
                  "is done, call finish with a one-line summary."));
            continue;
        }
        no_tool_turns = 0;
        results = json_array();
        if (!results) {
            return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        }
        rc = do_calls(a, calls, results, perr);
        if (rc != 0) {
            json_decref(results);
            return rc < 0 ? -1 : 0;
        }
        if (json_array_append_new(a->convo, json_pack("{s:s, s:o}", "role", "tool", "results",
                                                      results)) < 0) {
            return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        }
    }
}

int svc_factory_agent(svc_factory_t *f, const svc_factory_buf_t *listing,
                      svc_factory_err_t *perr)
{
    const svc_factory_task_t *t = &f->task;
    svc_factory_buf_t system = { 0 }, user = { 0 };
    agent_t a;
    int rv = -1;

    memset(&a, 0, sizeof(a));
    a.f = f;
    svc_factory_run_init();
    svc_factory_buf_printf(&system, SYSTEM_PROMPT, t->limits.command_timeout, t->branch,
                           t->limits.max_steps, t->limits.max_file_bytes);
    svc_factory_task_prompt(&user, t, listing);
    a.tools = svc_factory_tool_defs();
    a.convo = json_array();
    a.env = run_env();
    if (system.failed || user.failed || !a.tools || !a.convo || !a.env
        || json_array_append_new(a.convo, json_pack("{s:s, s:s}", "role", "user", "content",
                                                    user.data)) < 0) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    a.system = system.data;
    rv = loop(&a, perr);
cleanup:
    json_decref(a.convo);
    json_decref(a.tools);
    free_env(a.env);
    svc_factory_buf_free(&system);
    svc_factory_buf_free(&user);
    return rv;
}
