/*
 * The task line: checked member by member (types, sizes, forms) before the
 * factory does anything, so a supervisor bug is a clear task_invalid rather
 * than a strange failure further on. Unknown members are refused.
 */
#include <string.h>

#include "svc_factory.h"

#define TEXT_MAX   (1024 * 1024)      /* instructions, context */
#define REPO_MAX   4095
#define BRANCH_MAX 200
#define RUN_ID_MAX 128
#define NAME_MAX_BYTES 256

static int has_control(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c < 0x20 || c == 0x7f) {
            return 1;
        }
    }
    return 0;
}

/* The string member name of obj, or a failure; NULL *ps when optional and
 * absent. */
static int get_string(const char **ps, size_t *plen, json_t *obj, const char *where,
                      const char *name, size_t max, int optional, svc_factory_err_t *perr)
{
    json_t *v = json_object_get(obj, name);

    *ps = NULL;
    if (!v) {
        if (optional) {
            return 0;
        }
        return svc_factory_fail(perr, SVC_FACTORY_E_TASK, "%s%s is missing", where, name);
    }
    if (!json_is_string(v)) {
        return svc_factory_fail(perr, SVC_FACTORY_E_TASK, "%s%s must be a string", where, name);
    }
    if (json_string_length(v) > max) {
        return svc_factory_fail(perr, SVC_FACTORY_E_TASK, "%s%s is longer than %zu bytes",
                                where, name, max);
    }
    *ps = json_string_value(v);
    if (plen) {
        *plen = json_string_length(v);
    }
    return 0;
}

/* An integer member of limits from min to cap; `dflt` when absent, unless
 * dflt is 0 (then the member is required). */
static int get_size(size_t *pv, json_t *obj, const char *name, size_t min, size_t cap,
                    size_t dflt, svc_factory_err_t *perr)
{
    json_t *v = json_object_get(obj, name);
    json_int_t n;

    if (!v && dflt) {
        *pv = dflt;
        return 0;
    }
    if (!v) {
        return svc_factory_fail(perr, SVC_FACTORY_E_TASK, "limits.%s is missing", name);
    }
    if (!json_is_integer(v)) {
        return svc_factory_fail(perr, SVC_FACTORY_E_TASK, "limits.%s must be an integer", name);
    }
    n = json_integer_value(v);
    if (n < (json_int_t)min || (unsigned long long)n > cap) {
        return svc_factory_fail(perr, SVC_FACTORY_E_TASK,
                                "limits.%s must be between %zu and %zu", name, min, cap);
    }
    *pv = (size_t)n;
    return 0;
}

/* Every member of obj is one of names (NULL-terminated). */
static int only_members(json_t *obj, const char *where, const char *const *names,
                        svc_factory_err_t *perr)
{
    const char *key;
    json_t *v;

    json_object_foreach(obj, key, v) {
        const char *const *n;
        int known = 0;

        for (n = names; *n; n++) {
            if (strcmp(key, *n) == 0) {
                known = 1;
                break;
            }
        }
        if (!known) {
            return svc_factory_fail(perr, SVC_FACTORY_E_TASK, "unexpected member '%s%s'",
                                    where, key);
        }
    }
    return 0;
}

/* git's rules for a branch name (git check-ref-format --branch), narrowed
 * to the characters a run's branch needs. */
static int branch_ok(const char *b, size_t len)
{
    size_t i;

    if (len == 0 || b[0] == '-' || b[0] == '/' || b[len - 1] == '/' || b[len - 1] == '.') {
        return 0;
    }
    if (len >= 5 && memcmp(b + len - 5, ".lock", 5) == 0) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        char c = b[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
              || c == '-' || c == '_' || c == '.' || c == '/')) {
            return 0;
        }
        if (c == '/' && b[i + 1] == '/') {
            return 0;
        }
        if (c == '.' && (i == 0 || b[i - 1] == '/' || b[i + 1] == '.')) {
            return 0;
        }
        if (c == '/' && i >= 5 && memcmp(b + i - 5, ".lock", 5) == 0) {
            return 0;
        }
    }
    return strcmp(b, "HEAD") != 0;
}

static int run_id_ok(const char *s, size_t len)
{
    size_t i;

    if (len < 5 || strncmp(s, "run_", 4) != 0) {
        return 0;
    }
    for (i = 4; i < len; i++) {
        char c = s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
              || c == '-' || c == '_')) {
            return 0;
        }
    }
    return 1;
}

static int repo_ok(const char *s, size_t len)
{
    const char *p = s;

    if (len < 2 || s[0] != '/' || s[len - 1] == '/' || has_control(s, len)) {
        return 0;
    }
    /* No '.' or '..' component: the workspace is named plainly. */
    while (*p) {
        const char *comp = p + 1;
        const char *end = strchr(comp, '/');
        size_t n = end ? (size_t)(end - comp) : strlen(comp);

        if (n == 0 || (n == 1 && comp[0] == '.') || (n == 2 && comp[0] == '.' && comp[1] == '.')) {
            return 0;
        }
        p = comp + n;
    }
    return 1;
}

static int not_empty(const char *s, size_t len)
{
    return len > 0;
}

/* A string member of the task read as get_string does, then refused with
 * `why` unless ok() says its value is well formed. */
static int get_checked(const char **ps, json_t *doc, const char *name, size_t max,
                       int optional, int (*ok)(const char *, size_t), const char *why,
                       svc_factory_err_t *perr)
{
    size_t n;

    if (get_string(ps, &n, doc, "", name, max, optional, perr) < 0) {
        return -1;
    }
    if (*ps && !ok(*ps, n)) {
        return svc_factory_fail(perr, SVC_FACTORY_E_TASK, "%s", why);
    }
    return 0;
}

int svc_factory_task_parse(svc_factory_task_t *ptask, const char *line, size_t len,
                           svc_factory_err_t *perr)
{
    static const char *const top[] = { "type", "run_id", "instructions", "repo", "branch",
                                       "author", "limits", "context", "mode", "bundle",
                                       NULL };
    static const char *const author_members[] = { "name", "email", NULL };
    static const char *const limit_members[] = { "max_files", "max_file_bytes",
                                                 "max_total_bytes", "max_steps",
                                                 "command_timeout", "context_bytes", NULL };
    json_error_t jerr;
    json_t *doc, *author, *limits;
    const char *type, *mode;
    size_t n, timeout;
    int rv = -1;

    memset(ptask, 0, sizeof(*ptask));
    doc = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        return svc_factory_fail(perr, SVC_FACTORY_E_TASK, "the task is not JSON: %s (column %d)",
                                jerr.text, jerr.column);
    }
    if (!json_is_object(doc)) {
        svc_factory_fail(perr, SVC_FACTORY_E_TASK, "the task must be a JSON object");
        goto cleanup;
    }
    if (only_members(doc, "", top, perr) < 0
        || get_string(&type, NULL, doc, "", "type", 64, 0, perr) < 0) {
        goto cleanup;
    }
    if (strcmp(type, "task") != 0) {
        svc_factory_fail(perr, SVC_FACTORY_E_TASK, "the first line must be of type \"task\"");
        goto cleanup;
    }
    /* An absent bundle: none (the first protocol version; the supervisor
     * made it in a sandbox of its own). */
    if (get_checked(&ptask->run_id, doc, "run_id", RUN_ID_MAX, 0, run_id_ok,
                    "run_id must be run_ followed by letters, digits, '-' or '_'", perr) < 0
        || get_checked(&ptask->instructions, doc, "instructions", TEXT_MAX, 0, not_empty,
                       "instructions are empty", perr) < 0
        || get_checked(&ptask->repo, doc, "repo", REPO_MAX, 0, repo_ok, "repo must be an "
                       "absolute path without '.', '..' or empty components", perr) < 0
        || get_checked(&ptask->branch, doc, "branch", BRANCH_MAX, 0, branch_ok,
                       "branch is not a valid branch name", perr) < 0
        || get_checked(&ptask->bundle, doc, "bundle", REPO_MAX, 1, repo_ok, "bundle must be an "
                       "absolute path without '.', '..' or empty components", perr) < 0) {
        goto cleanup;
    }
    if (get_string(&ptask->context, NULL, doc, "", "context", TEXT_MAX, 1, perr) < 0
        || get_string(&mode, NULL, doc, "", "mode", 16, 1, perr) < 0) {
        goto cleanup;
    }
    /* Absent: the single answer of the first protocol version. */
    if (mode && strcmp(mode, "agent") != 0 && strcmp(mode, "single") != 0) {
        svc_factory_fail(perr, SVC_FACTORY_E_TASK, "mode must be \"single\" or \"agent\"");
        goto cleanup;
    }
    ptask->agent = mode && strcmp(mode, "agent") == 0;

    author = json_object_get(doc, "author");
    if (!json_is_object(author)) {
        svc_factory_fail(perr, SVC_FACTORY_E_TASK, "author must be an object {name, email}");
        goto cleanup;
    }
    if (only_members(author, "author.", author_members, perr) < 0
        || get_string(&ptask->author_name, &n, author, "author.", "name", NAME_MAX_BYTES, 0,
                      perr) < 0) {
        goto cleanup;
    }
    /* git drops '<', '>' and newlines from identities; refusing them keeps
     * the commit's author exactly what the task says. */
    if (n == 0 || has_control(ptask->author_name, n) || strpbrk(ptask->author_name, "<>")) {
        svc_factory_fail(perr, SVC_FACTORY_E_TASK, "author.name must be 1-%d bytes without "
                         "control characters, '<' or '>'", NAME_MAX_BYTES);
        goto cleanup;
    }
    if (get_string(&ptask->author_email, &n, author, "author.", "email", NAME_MAX_BYTES, 0,
                   perr) < 0) {
        goto cleanup;
    }
    if (n < 3 || has_control(ptask->author_email, n) || strpbrk(ptask->author_email, "<> ")
        || !strchr(ptask->author_email, '@')) {
        svc_factory_fail(perr, SVC_FACTORY_E_TASK, "author.email is not an e-mail address");
        goto cleanup;
    }

    limits = json_object_get(doc, "limits");
    if (!json_is_object(limits)) {
        svc_factory_fail(perr, SVC_FACTORY_E_TASK,
                         "limits must be an object {max_files, max_file_bytes, max_total_bytes}");
        goto cleanup;
    }
    if (only_members(limits, "limits.", limit_members, perr) < 0
        || get_size(&ptask->limits.max_files, limits, "max_files", 1,
                    SVC_FACTORY_MAX_FILES_CAP, 0, perr) < 0
        || get_size(&ptask->limits.max_file_bytes, limits, "max_file_bytes", 1,
                    SVC_FACTORY_MAX_FILE_BYTES_CAP, 0, perr) < 0
        || get_size(&ptask->limits.max_total_bytes, limits, "max_total_bytes", 1,
                    SVC_FACTORY_MAX_TOTAL_CAP, 0, perr) < 0
        || get_size(&ptask->limits.max_steps, limits, "max_steps", 1,
                    SVC_FACTORY_MAX_STEPS_CAP, SVC_FACTORY_MAX_STEPS_DEFAULT, perr) < 0
        || get_size(&timeout, limits, "command_timeout", 1,
                    SVC_FACTORY_COMMAND_TIMEOUT_CAP, SVC_FACTORY_COMMAND_TIMEOUT_DEFAULT,
                    perr) < 0
        || get_size(&ptask->limits.context_bytes, limits, "context_bytes",
                    SVC_FACTORY_CONTEXT_MIN, SVC_FACTORY_CONTEXT_CAP,
                    SVC_FACTORY_CONTEXT_DEFAULT, perr) < 0) {
        goto cleanup;
    }
    ptask->limits.command_timeout = (int)timeout;
    ptask->doc = doc;
    doc = NULL;
    rv = 0;
cleanup:
    json_decref(doc);
    if (rv < 0) {
        memset(ptask, 0, sizeof(*ptask));
    }
    return rv;
}

void svc_factory_task_free(svc_factory_task_t *task)
{
    json_decref(task->doc);
    memset(task, 0, sizeof(*task));
}
