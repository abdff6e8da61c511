/*
 * svc-factory: reads one task, prepares the repository, and then either
 * asks the model one question through the supervisor and writes the files
 * of its answer ("single" mode), or lets the model work with tools until
 * it is done (agent mode, svc_factory_agent.c); then commits. The protocol
 * is docs/api/factory-protocol.md.
 *
 *   svc-factory            (no arguments; the protocol on stdin/stdout)
 *
 * Exit status: 0 after a "result" line, 1 after an "error" line or when
 * stdin ends before the task or the model's reply (the run was cancelled:
 * nothing more is written on stdout), 2 when called with arguments.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "svc_factory.h"
#include "svc_factory_prompt.h"

#define TASK_LINE_MAX   (16u * 1024 * 1024)
#define MODEL_MAX_TOKENS 16000
#define LS_FILES_BYTES  (64 * 1024)
#define LS_FILES_SHOWN  500
#define HOME_NAME       ".svc-factory-home"


typedef svc_factory_t factory_t;

/* A macro, so the compiler checks it as the format it is. */
#define SYSTEM_PROMPT \
    "You are the factory of a software-building service. You receive a task and write the " \
    "files that complete it in a git repository.\n" \
    "\n" \
    "Answer with exactly one JSON object and nothing else: no prose, no markdown. Its form:\n" \
    "{\"summary\":\"one line saying what you did\",\"files\":[{\"path\":\"relative/path\"," \
    "\"content\":\"the full text of the file\"}]}\n" \
    "\n" \
    "Rules:\n" \
    "- \"summary\" is one line, at most 200 characters; it becomes the commit message.\n" \
    "- \"files\" lists at least one file. Give the complete new text of every file you create " \
    "or change; files you do not list stay as they are.\n" \
    "- A path is relative to the top of the repository, uses '/' between its parts, and has " \
    "no empty, '.' or '..' part, no '.git' part and no backslash.\n" \
    "- At most %zu files, each at most %zu bytes, at most %zu bytes in all.\n"


static int prepare_home(factory_t *f, svc_factory_err_t *perr)
{
    const char *repo = f->task.repo;
    const char *slash = strrchr(repo, '/');
    size_t parent_len = (size_t)(slash - repo);
    size_t n = parent_len + sizeof(HOME_NAME) + 1;
    int fd;

    /* HOME is a directory of the workspace (writable, and empty of any
     * configuration), beside the repository, never inside it. */
    f->home = malloc(n);
    if (!f->home) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
    }
    snprintf(f->home, n, "%.*s/%s", (int)parent_len, repo, HOME_NAME);
    if (mkdir(f->home, 0700) < 0 && errno != EEXIST) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "cannot create %s: %s", f->home,
                                strerror(errno));
    }
    fd = open(f->home, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "%s is not a directory: %s",
                                f->home, strerror(errno));
    }
    close(fd);
    return 0;
}

/* git init or checkout of the run's branch; the listing of tracked files
 * goes to listing for the model. */
static int prepare_repo(factory_t *f, svc_factory_buf_t *listing, svc_factory_err_t *perr)
{
    const svc_factory_task_t *t = &f->task;
    char *dotgit = NULL, *out = NULL;
    size_t out_len = 0, i, count = 0;
    int truncated = 0, created = 0, rv = -1;
    struct stat st;

    if (prepare_home(f, perr) < 0
        || svc_factory_git_init(&f->git, t, f->home, perr) < 0) {
        goto cleanup;
    }
    dotgit = malloc(strlen(t->repo) + sizeof("/.git"));
    if (!dotgit) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    strcpy(dotgit, t->repo);
    strcat(dotgit, "/.git");
    if (lstat(dotgit, &st) < 0) {
        const char *args[] = { "init", "-q", "-b", t->branch, "--", t->repo, NULL };

        if (errno != ENOENT) {
            svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "%s: %s", dotgit, strerror(errno));
            goto cleanup;
        }
        svc_factory_log("repository: none at %s; creating it on branch %s", t->repo, t->branch);
        if (svc_factory_git_run(&f->git, NULL, args, NULL, 0, NULL, NULL, 0, NULL, perr) < 0) {
            goto cleanup;
        }
        created = 1;
    }
    else {
        const char *args[] = { "checkout", "-q", "-B", t->branch, NULL };

        svc_factory_log("repository: found at %s; checking out branch %s", t->repo, t->branch);
        if (svc_factory_git_run(&f->git, t->repo, args, NULL, 0, NULL, NULL, 0, NULL,
                                perr) < 0) {
            goto cleanup;
        }
    }
    if (svc_factory_open_repo(&f->rootfd, t->repo, perr) < 0) {
        goto cleanup;
    }
    /* A repository just made has no commit and tracks no file: git is not
     * asked (each git is a process, and processes are most of what a short
     * run costs; docs/performance.md). */
    if (!created) {
        /* Where the run starts: what it changed is measured from here. A
         * new repository (or a clone of an empty one) has no commit yet. */
        const char *args[] = { "rev-parse", "-q", "--verify", "HEAD^{commit}", NULL };
        svc_factory_err_t ignored;
        size_t n = 0;

        if (svc_factory_git_run(&f->git, t->repo, args, NULL, 0, &f->start, &n, 256, NULL,
                                &ignored) < 0) {
            f->start = NULL;
        }
        while (f->start && n > 0 && (f->start[n - 1] == '\n' || f->start[n - 1] == '\r')) {
            f->start[--n] = '\0';
        }
    }
    if (!created) {
        const char *args[] = { "ls-files", "-z", NULL };

        if (svc_factory_git_run(&f->git, t->repo, args, NULL, 0, &out, &out_len,
                                LS_FILES_BYTES, &truncated, perr) < 0) {
            goto cleanup;
        }
    }
    for (i = 0; i < out_len && count < LS_FILES_SHOWN;) {
        const char *name = out + i;
        const char *end = memchr(name, '\0', out_len - i);
        char clean[SVC_FACTORY_PATH_MAX * 2];

        if (!end) {
            truncated = 1;    /* a name cut by the byte cap */
            break;
        }
        svc_factory_clean(clean, sizeof(clean) - 1, name, (size_t)(end - name));
        svc_factory_buf_printf(listing, "- %s\n", clean);
        count++;
        i = (size_t)(end - out) + 1;
    }
    if (i < out_len) {
        truncated = 1;
    }
    if (count == 0) {
        svc_factory_buf_puts(listing, "(no files yet)\n");
    }
    else if (truncated) {
        svc_factory_buf_printf(listing, "(the first %zu files; there are more)\n", count);
    }
    if (listing->failed) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    svc_factory_log("repository: %zu%s files tracked", count, truncated ? "+" : "");
    rv = 0;
cleanup:
    free(out);
    free(dotgit);
    return rv;
}


/* The one model request of single mode; *ptext is the model's text (owned
 * by f->reply_msg). */
static int ask_model(factory_t *f, const svc_factory_buf_t *listing, const char **ptext,
                     size_t *plen, svc_factory_err_t *perr)
{
    const svc_factory_task_t *t = &f->task;
    const svc_factory_limits_t *l = &t->limits;
    svc_factory_buf_t system = { 0 }, user = { 0 };
    json_t *msg = NULL, *reply = NULL, *content;
    int rv = -1;

    svc_factory_buf_printf(&system, SYSTEM_PROMPT, l->max_files, l->max_file_bytes,
                           l->max_total_bytes);
    svc_factory_task_prompt(&user, t, listing);
    if (system.failed || user.failed) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    msg = json_pack("{s:s, s:[{s:s, s:s}], s:b, s:i}", "system", system.data, "messages",
                    "role", "user", "content", user.data, "json", 1, "max_tokens",
                    MODEL_MAX_TOKENS);
    if (!msg) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "cannot build the model request");
        goto cleanup;
    }
    svc_factory_log("asking the model (request %d, %zu bytes of prompt)", f->next_id + 1,
                    system.len + user.len);
    if (svc_factory_model_call(f, msg, &reply, perr) < 0) {
        goto cleanup;
    }
    content = json_object_get(reply, "content");
    *ptext = json_string_value(content);
    *plen = json_string_length(content);
    svc_factory_log("the model replied (%zu bytes)", *plen);
    rv = 0;
cleanup:
    json_decref(msg);
    svc_factory_buf_free(&system);
    svc_factory_buf_free(&user);
    return rv;
}


/* Single mode: checks every path, writes every file, commits them. */
static int build(factory_t *f, svc_factory_err_t *perr)
{
    const svc_factory_reply_t *r = &f->reply;
    svc_factory_buf_t paths = { 0 };
    size_t i, bytes = 0;
    int rv = -1;

    for (i = 0; i < r->nfiles; i++) {
        bytes += r->files[i].content_len;
    }
    svc_factory_log("reply: %zu files, %zu bytes: %s", r->nfiles, bytes, r->summary);
    if (svc_factory_reply_check(r, &f->task.limits, perr) < 0
        || svc_factory_preflight(f->rootfd, r, perr) < 0) {
        goto cleanup;
    }
    svc_factory_log("paths checked: every file is inside the repository and within the limits");
    if (svc_factory_write_files(f->rootfd, r, perr) < 0) {
        goto cleanup;
    }
    /* Paths go to git add on stdin, NUL-separated: no length limit of
     * argv, and no name is ever taken for an option. */
    for (i = 0; i < r->nfiles; i++) {
        svc_factory_buf_add(&paths, r->files[i].path, r->files[i].path_len + 1);
    }
    if (paths.failed) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    {
        /* -f: the model was asked for these files; a .gitignore of the
         * repository does not get to drop some of them silently. */
        const char *add[] = { "add", "-f", "--pathspec-from-file=-", "--pathspec-file-nul",
                              NULL };

        if (svc_factory_git_run(&f->git, f->task.repo, add, paths.data, paths.len, NULL, NULL,
                                0, NULL, perr) < 0) {
            goto cleanup;
        }
        svc_factory_log("staged %zu files", r->nfiles);
        if (svc_factory_commit(f, r->summary, perr) < 0 || svc_factory_head(f, perr) < 0) {
            goto cleanup;
        }
    }
    /* The reply's paths, in its order. */
    f->files = json_array();
    for (i = 0; f->files && i < r->nfiles; i++) {
        if (json_array_append_new(f->files, json_string(r->files[i].path)) < 0) {
            break;
        }
    }
    f->summary = strdup(r->summary);
    if (!f->files || i < r->nfiles || !f->summary) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    rv = 0;
cleanup:
    svc_factory_buf_free(&paths);
    return rv;
}

static int send_result(factory_t *f)
{
    json_t *msg;
    int rv = -1;

    msg = json_pack("{s:s, s:s, s:s, s:O}", "type", "result", "summary", f->summary,
                    "commit", f->sha, "files", f->files);
    if (msg && f->stopped.code
        && json_object_set_new(msg, "stopped", json_pack("{s:s, s:s}", "code",
                                                         f->stopped.code, "message",
                                                         f->stopped.message)) < 0) {
        goto cleanup;
    }
    if (msg && svc_factory_send(msg) == 0) {
        rv = 0;
    }
cleanup:
    json_decref(msg);
    return rv;
}

static void send_error(const svc_factory_err_t *err)
{
    json_t *msg = json_pack("{s:s, s:s, s:s}", "type", "error", "code", err->code,
                            "message", err->message);

    fprintf(stderr, "svc-factory: %s: %s\n", err->code, err->message);
    if (msg) {
        svc_factory_send(msg);
    }
    json_decref(msg);
}

static int run(factory_t *f, svc_factory_err_t *perr)
{
    svc_factory_buf_t listing = { 0 };
    const char *text = NULL;
    size_t text_len = 0;
    char *line;
    size_t len;
    int rc, rv = -1;

    rc = svc_factory_read_line(&f->in, TASK_LINE_MAX, &line, &len);
    if (rc == 0) {
        perr->code = svc_factory_cancelled;
        goto cleanup;
    }
    if (rc < 0) {
        if (errno == E2BIG) {
            svc_factory_fail(perr, SVC_FACTORY_E_TASK, "the task line is longer than %u bytes",
                             TASK_LINE_MAX);
        }
        else {
            svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "reading stdin: %s", strerror(errno));
        }
        goto cleanup;
    }
    if (svc_factory_task_parse(&f->task, line, len, perr) < 0) {
        goto cleanup;
    }
    svc_factory_log("task %s: branch %s; at most %zu files, %zu bytes each, %zu bytes in all",
                    f->task.run_id, f->task.branch, f->task.limits.max_files,
                    f->task.limits.max_file_bytes, f->task.limits.max_total_bytes);
    if (prepare_repo(f, &listing, perr) < 0) {
        goto cleanup;
    }
    if (f->task.agent) {
        svc_factory_log("mode: agent (tools; at most %zu steps, %d s per command)",
                        f->task.limits.max_steps, f->task.limits.command_timeout);
        if (svc_factory_agent(f, &listing, perr) < 0) {
            goto cleanup;
        }
    }
    else if (ask_model(f, &listing, &text, &text_len, perr) < 0
             || svc_factory_reply_parse(&f->reply, text, text_len, perr) < 0
             || build(f, perr) < 0) {
        goto cleanup;
    }
    /* In this sandbox, not a second one: a sandbox's start is most of what
     * a short run costs (docs/performance.md). */
    if (svc_factory_bundle(f, perr) < 0) {
        goto cleanup;
    }
    rv = 0;
cleanup:
    svc_factory_buf_free(&listing);
    return rv;
}

int main(int argc, char **argv)
{
    factory_t f;
    svc_factory_err_t err;
    int status = SVC_FACTORY_EXIT_FAILED;

    memset(&f, 0, sizeof(f));
    memset(&err, 0, sizeof(err));
    f.in.fd = 0;
    f.rootfd = -1;
    if (argc > 1) {
        fprintf(stderr, "usage: %s (no arguments: the factory protocol on stdin and stdout, "
                "docs/api/factory-protocol.md)\n", argv[0]);
        return SVC_FACTORY_EXIT_USAGE;
    }
    /* A supervisor that goes away must not kill us mid-write: we notice
     * the failed write and stop. */
    signal(SIGPIPE, SIG_IGN);
    if (run(&f, &err) == 0) {
        if (send_result(&f) == 0) {
            status = SVC_FACTORY_EXIT_OK;
        }
    }
    else if (err.code == svc_factory_cancelled) {
        fprintf(stderr, "svc-factory: stdin closed before the %s; stopping\n",
                f.task.doc ? "model's reply" : "task");
    }
    else if (!svc_factory_out_broken()) {
        send_error(&err);
    }
    if (f.rootfd >= 0) {
        close(f.rootfd);
    }
    svc_factory_reply_free(&f.reply);
    json_decref(f.reply_msg);
    json_decref(f.files);
    svc_factory_git_free(&f.git);
    svc_factory_task_free(&f.task);
    svc_factory_in_free(&f.in);
    free(f.home);
    free(f.start);
    free(f.sha);
    free(f.summary);
    return status;
}
