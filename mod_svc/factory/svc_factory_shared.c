/*
 * What both modes of the factory share: a model call through the supervisor
 * (the "model" line out, its "model_reply" checked member by member), and
 * committing on the run's branch.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "svc_factory.h"

#define DIFF_BYTES      (1024 * 1024)

const char svc_factory_cancelled[] = "cancelled";

/* The size limit of the supervisor's model_reply line: the answer may use
 * the whole byte budget, and every byte of a file can become up to 7 bytes
 * once JSON-escaped in the model's text and again in the line. */
size_t svc_factory_reply_line_max(const svc_factory_limits_t *l)
{
    return 8 * (l->max_total_bytes + l->max_files * (SVC_FACTORY_PATH_MAX + 64))
           + 1024 * 1024;
}

/* A tool call of an agent-mode reply: exactly {id, name, arguments} and,
 * when the provider's arguments were not a JSON object, arguments_error. */
static int tool_calls_ok(const json_t *calls)
{
    size_t i;
    json_t *c;

    if (!json_is_array(calls)) {
        return 0;
    }
    json_array_foreach(calls, i, c) {
        const char *key;
        json_t *v;

        if (!json_is_object(c) || !json_object_get(c, "id") || !json_object_get(c, "name")
            || !json_object_get(c, "arguments")) {
            return 0;
        }
        json_object_foreach(c, key, v) {
            if (strcmp(key, "id") == 0 || strcmp(key, "name") == 0) {
                if (!json_is_string(v) || json_string_length(v) < 1
                    || json_string_length(v) > 256) {
                    return 0;
                }
            }
            else if (strcmp(key, "arguments") == 0) {
                if (!json_is_object(v)) {
                    return 0;
                }
            }
            else if (strcmp(key, "arguments_error") != 0 || !json_is_string(v)) {
                return 0;
            }
        }
    }
    return 1;
}

int svc_factory_model_call(svc_factory_t *f, json_t *msg, json_t **preply,
                           svc_factory_err_t *perr)
{
    static const char *const passed_single[] = { SVC_FACTORY_E_PROVIDER, SVC_FACTORY_E_NOPROV,
                                                 SVC_FACTORY_E_TIMEOUT, SVC_FACTORY_E_REPLY,
                                                 NULL };
    static const char *const passed_agent[] = { SVC_FACTORY_E_PROVIDER, SVC_FACTORY_E_NOPROV,
                                                SVC_FACTORY_E_TIMEOUT, SVC_FACTORY_E_REPLY,
                                                SVC_FACTORY_E_STEPS, SVC_FACTORY_E_TOKENS,
                                                NULL };
    static const char *const members_agent[] = { "content", "tool_calls", "stop", "usage",
                                                 NULL };
    int agent = f->task.agent;
    size_t max = svc_factory_reply_line_max(&f->task.limits);
    json_error_t jerr;
    json_t *v, *ok;
    const char *key;
    char *line;
    size_t len;
    int id, rc;

    json_decref(f->reply_msg);
    f->reply_msg = NULL;
    id = ++f->next_id;
    if (json_object_set_new(msg, "type", json_string("model")) < 0
        || json_object_set_new(msg, "id", json_integer(id)) < 0) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
    }
    if (svc_factory_send(msg) < 0) {
        /* The supervisor is gone: as good as cancelled. */
        perr->code = svc_factory_cancelled;
        return -1;
    }
    rc = svc_factory_read_line(&f->in, max, &line, &len);
    if (rc == 0) {
        perr->code = svc_factory_cancelled;
        return -1;
    }
    if (rc < 0) {
        if (errno == E2BIG) {
            return svc_factory_fail(perr, SVC_FACTORY_E_REPLY, "the model's reply is larger "
                                    "than the limits allow (over %zu bytes)", max);
        }
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "reading stdin: %s",
                                strerror(errno));
    }
    f->reply_msg = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!f->reply_msg || !json_is_object(f->reply_msg)) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "protocol: the supervisor's "
                                "line is not a JSON object: %s", f->reply_msg ? "" : jerr.text);
    }
    v = json_object_get(f->reply_msg, "type");
    if (!json_is_string(v) || strcmp(json_string_value(v), "model_reply") != 0) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "protocol: expected a "
                                "model_reply line");
    }
    v = json_object_get(f->reply_msg, "id");
    if (!json_is_integer(v) || json_integer_value(v) != id) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "protocol: the model_reply is "
                                "not for request %d", id);
    }
    ok = json_object_get(f->reply_msg, "ok");
    if (!json_is_boolean(ok)) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "protocol: model_reply.ok must "
                                "be true or false");
    }
    json_object_foreach(f->reply_msg, key, v) {
        const char *const *m;
        int known = strcmp(key, "type") == 0 || strcmp(key, "id") == 0
                    || strcmp(key, "ok") == 0
                    || strcmp(key, json_is_true(ok) ? "content" : "error") == 0;

        for (m = members_agent; agent && json_is_true(ok) && !known && *m; m++) {
            known = strcmp(key, *m) == 0;
        }
        if (!known) {
            return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "protocol: unexpected "
                                    "member '%s' in model_reply", key);
        }
    }
    if (json_is_false(ok)) {
        json_t *e = json_object_get(f->reply_msg, "error");
        json_t *code = json_object_get(e, "code");
        json_t *message = json_object_get(e, "message");
        const char *const *c;

        if (!json_is_object(e) || !json_is_string(code) || !json_is_string(message)
            || json_object_size(e) != 2) {
            return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "protocol: model_reply.error "
                                    "must be {code, message}");
        }
        for (c = agent ? passed_agent : passed_single; *c; c++) {
            if (strcmp(json_string_value(code), *c) == 0) {
                svc_factory_log("the model call failed: %s", json_string_value(code));
                return svc_factory_fail(perr, *c, "%s", json_string_value(message));
            }
        }
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "protocol: unknown "
                                "model_reply.error.code");
    }
    if (!json_is_string(json_object_get(f->reply_msg, "content"))) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "protocol: model_reply.content "
                                "must be a string");
    }
    if (agent) {
        json_t *usage = json_object_get(f->reply_msg, "usage");

        if (!tool_calls_ok(json_object_get(f->reply_msg, "tool_calls"))) {
            return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "protocol: "
                                    "model_reply.tool_calls must be an array of {id, name, "
                                    "arguments}");
        }
        if (!json_is_string(json_object_get(f->reply_msg, "stop"))) {
            return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "protocol: "
                                    "model_reply.stop must be a string");
        }
        if (!json_is_object(usage) || json_object_size(usage) != 2
            || !json_is_integer(json_object_get(usage, "input_tokens"))
            || !json_is_integer(json_object_get(usage, "output_tokens"))) {
            return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "protocol: "
                                    "model_reply.usage must be {input_tokens, output_tokens}");
        }
    }
    *preply = f->reply_msg;
    return 0;
}

static int is_sha(const char *s, size_t len)
{
    size_t i;

    if (len != 40 && len != 64) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return 0;
        }
    }
    return 1;
}

/* The commit HEAD names, into f->sha. */
int svc_factory_head(svc_factory_t *f, svc_factory_err_t *perr)
{
    const char *head[] = { "rev-parse", "--verify", "HEAD", NULL };
    char *out = NULL;
    size_t out_len = 0;

    if (svc_factory_git_run(&f->git, f->task.repo, head, NULL, 0, &out, &out_len, 256, NULL,
                            perr) < 0) {
        return -1;
    }
    while (out_len > 0 && (out[out_len - 1] == '\n' || out[out_len - 1] == '\r')) {
        out[--out_len] = '\0';
    }
    if (!is_sha(out, out_len)) {
        free(out);
        return svc_factory_fail(perr, SVC_FACTORY_E_GIT, "git rev-parse HEAD gave no commit id");
    }
    free(f->sha);
    f->sha = out;
    svc_factory_log("committed %s on %s", f->sha, f->task.branch);
    return 0;
}

int svc_factory_bundle(svc_factory_t *f, svc_factory_err_t *perr)
{
    const svc_factory_task_t *t = &f->task;
    const char *args[] = { "bundle", "create", "-q", t->bundle, "HEAD", t->branch, NULL };

    const char *slash;
    char *dir = NULL;
    int dfd = -1, rv = -1;

    if (!t->bundle) {
        return 0;
    }
    slash = strrchr(t->bundle, '/');
    /* The model's commands may have put something at the path (they are all
     * stopped by now): git follows a symlink there and writes through it,
     * so whatever is there goes first, and the directory must be one, not
     * a link to elsewhere. */
    dir = slash == t->bundle ? strdup("/") : strndup(t->bundle, (size_t)(slash - t->bundle));
    if (!dir) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        svc_factory_fail(perr, SVC_FACTORY_E_BUNDLE, "the bundle's directory %s: %s", dir,
                         strerror(errno));
        goto cleanup;
    }
    if (unlinkat(dfd, slash + 1, 0) < 0 && errno != ENOENT) {
        svc_factory_fail(perr, SVC_FACTORY_E_BUNDLE, "%s cannot be replaced: %s", t->bundle,
                         strerror(errno));
        goto cleanup;
    }
    if (svc_factory_git_run(&f->git, t->repo, args, NULL, 0, NULL, NULL, 0, NULL, perr) < 0) {
        perr->code = SVC_FACTORY_E_BUNDLE;
        goto cleanup;
    }
    svc_factory_log("bundle: %s (HEAD and %s)", t->bundle, t->branch);
    rv = 0;
cleanup:
    if (dfd >= 0) {
        close(dfd);
    }
    free(dir);
    return rv;
}

int svc_factory_commit(svc_factory_t *f, const char *summary, svc_factory_err_t *perr)
{
    const char *args[] = { "commit", "-q", "--no-verify", "--allow-empty",
                           "--cleanup=verbatim", "-m", summary, NULL };

    return svc_factory_git_run(&f->git, f->task.repo, args, NULL, 0, NULL, NULL, 0, NULL, perr);
}

/* NUL-separated names from git into f->files, made fit for a JSON line. */
static int files_from(svc_factory_t *f, const char *names, size_t len, int truncated,
                      svc_factory_err_t *perr)
{
    size_t i = 0;

    json_decref(f->files);
    f->files = json_array();
    while (f->files && i < len) {
        const char *end = memchr(names + i, '\0', len - i);
        char clean[SVC_FACTORY_PATH_MAX * 4 + 1];

        if (!end) {
            break;          /* a name cut by the byte cap */
        }
        svc_factory_clean(clean, sizeof(clean) - 1, names + i, (size_t)(end - (names + i)));
        if (json_array_append_new(f->files, json_string(clean)) < 0) {
            return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        }
        i = (size_t)(end - names) + 1;
    }
    if (!f->files) {
        return svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
    }
    if (truncated) {
        svc_factory_log("the run changed more paths than the result lists (the first %zu)",
                        json_array_size(f->files));
    }
    return 0;
}

int svc_factory_commit_all(svc_factory_t *f, const char *summary, svc_factory_err_t *perr)
{
    const svc_factory_task_t *t = &f->task;
    const char *add[] = { "add", "-A", NULL };
    char *out = NULL, *ref = NULL;
    size_t out_len = 0;
    int truncated = 0, rv = -1;

    {
        /* The model's commands may have moved HEAD (git checkout): the work
         * goes on the run's branch all the same, worktree and all. */
        const char *sym[] = { "symbolic-ref", "-q", "HEAD", NULL };
        const char *checkout[] = { "checkout", "-q", "-B", t->branch, NULL };
        svc_factory_err_t ignored;
        size_t n = 0;
        int on_branch = 0;

        if (svc_factory_git_run(&f->git, t->repo, sym, NULL, 0, &ref, &n, 512, NULL,
                                &ignored) == 0) {
            while (n > 0 && ref[n - 1] == '\n') {
                ref[--n] = '\0';
            }
            on_branch = strncmp(ref, "refs/heads/", 11) == 0 && strcmp(ref + 11, t->branch) == 0;
        }
        if (!on_branch && svc_factory_git_run(&f->git, t->repo, checkout, NULL, 0, NULL, NULL,
                                              0, NULL, perr) < 0) {
            goto cleanup;
        }
    }
    if (svc_factory_git_run(&f->git, t->repo, add, NULL, 0, NULL, NULL, 0, NULL, perr) < 0
        || svc_factory_commit(f, summary, perr) < 0 || svc_factory_head(f, perr) < 0) {
        goto cleanup;
    }
    if (f->start) {
        const char *diff[] = { "diff", "--name-only", "-z", "--no-renames", f->start, f->sha,
                               "--", NULL };

        if (svc_factory_git_run(&f->git, t->repo, diff, NULL, 0, &out, &out_len, DIFF_BYTES,
                                &truncated, perr) < 0) {
            goto cleanup;
        }
    }
    else {
        const char *tree[] = { "ls-tree", "-r", "-z", "--name-only", f->sha, NULL };

        if (svc_factory_git_run(&f->git, t->repo, tree, NULL, 0, &out, &out_len, DIFF_BYTES,
                                &truncated, perr) < 0) {
            goto cleanup;
        }
    }
    if (files_from(f, out, out_len, truncated, perr) < 0) {
        goto cleanup;
    }
    free(f->summary);
    f->summary = strdup(summary);
    if (!f->summary) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    svc_factory_log("the commit changes %zu path(s)", json_array_size(f->files));
    rv = 0;
cleanup:
    free(out);
    free(ref);
    return rv;
}
