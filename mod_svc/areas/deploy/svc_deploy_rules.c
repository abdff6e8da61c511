/*
 * svc_deploy_rules.c: statuses and actions, Procfiles, and plans checked
 * (svc_deploy_rules.h). Nothing here does I/O; t/unit/test_deploy.c
 * drives it.
 */
#include "svc_deploy_rules.h"

#include <string.h>

/* Where each action may be taken (docs/api/deployments.md, the diagram). */
static const char *const allowed_from[][9] = {
    [DA_APPROVE] = { DS_PLANNED, NULL },
    [DA_REPLAN] = { DS_PLANNED, DS_PLAN_FAILED, DS_RUNNING, DS_FAILED, NULL },
    [DA_STOP] = { DS_DEPLOYING, DS_RUNNING, DS_FAILED, NULL },
    [DA_START] = { DS_STOPPED, DS_FAILED, NULL },
    [DA_SCALE] = { DS_RUNNING, DS_STOPPED, NULL },
    [DA_TEARDOWN] = { DS_PLANNING, DS_PLANNED, DS_PLAN_FAILED, DS_DEPLOYING, DS_RUNNING,
                      DS_FAILED, DS_STOPPING, DS_STOPPED, NULL },
    [DA_SEPARATE] = { DS_RUNNING, DS_FAILED, NULL },
};

static const char *const action_names[] = {
    [DA_APPROVE] = "approve", [DA_REPLAN] = "replan", [DA_STOP] = "stop",
    [DA_START] = "start", [DA_SCALE] = "scale", [DA_TEARDOWN] = "teardown",
    [DA_SEPARATE] = "separate"
};

const char *svc_deploy_action_name(svc_deploy_action_e a)
{
    return action_names[a];
}

int svc_deploy_action_allowed(svc_deploy_action_e a, const char *status)
{
    const char *const *s;

    for (s = allowed_from[a]; *s; s++) {
        if (strcmp(*s, status) == 0) {
            return 1;
        }
    }
    return 0;
}

const char *svc_deploy_action_from(apr_pool_t *p, svc_deploy_action_e a)
{
    const char *const *s;
    const char *out = NULL;

    for (s = allowed_from[a]; *s; s++) {
        out = out ? apr_pstrcat(p, out, s[1] ? ", " : " or ", *s, NULL) : *s;
    }
    return out;
}

/* Printable, one line: no control character at all (tabs neither). */
static int one_line(const char *s, apr_size_t n)
{
    apr_size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) {
            return 0;
        }
    }
    return 1;
}

const char *svc_deploy_procfile_web(apr_pool_t *p, const char *procfile)
{
    const char *line = procfile;

    while (line && *line) {
        const char *end = strchr(line, '\n');
        apr_size_t n = end ? (apr_size_t)(end - line) : strlen(line);
        const char *s = line, *e = line + n;

        while (s < e && (*s == ' ' || *s == '\t')) {
            s++;
        }
        if (e - s > 4 && strncmp(s, "web:", 4) == 0) {
            s += 4;
            while (s < e && (*s == ' ' || *s == '\t')) {
                s++;
            }
            while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) {
                e--;
            }
            if (e == s || e - s > PLAN_COMMAND_MAX || !one_line(s, (apr_size_t)(e - s))) {
                return NULL;
            }
            return apr_pstrmemdup(p, s, (apr_size_t)(e - s));
        }
        line = end ? end + 1 : NULL;
    }
    return NULL;
}

json_t *svc_deploy_plan_procfile(const char *command)
{
    return json_pack("{s:s,s:s,s:s,s:i,s:i,s:s,s:s}", "command", command, "port_env", "PORT",
                     "health_path", "/", "replicas", 1, "memory_mb", PLAN_MEMORY_DEFAULT,
                     "notes", "From the Procfile's web process; checked at / until "
                     "the plan is changed.", "source", "procfile");
}

/* A string member of at most max bytes on one line; NULL otherwise. */
static const char *member_line(const json_t *obj, const char *key, apr_size_t min,
                               apr_size_t max)
{
    const json_t *v = json_object_get(obj, key);
    const char *s = json_string_value(v);
    apr_size_t n = s ? json_string_length(v) : 0;

    if (!s || n < min || n > max || strlen(s) != n || !one_line(s, n)) {
        return NULL;
    }
    return s;
}

/* An integer member within [min, max]; 0 when it is not one. */
static int member_int(const json_t *obj, const char *key, long long min, long long max,
                      long long *pv)
{
    const json_t *v = json_object_get(obj, key);

    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        return 0;
    }
    *pv = json_integer_value(v);
    return 1;
}

json_t *svc_deploy_plan_reply(apr_pool_t *p, const char *reply, const char **pwhy)
{
    json_error_t jerr;
    json_t *obj = reply ? json_loads(reply, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    const char *command, *health, *notes = "", *port_env;
    const json_t *nv;
    long long replicas, memory;
    json_t *plan = NULL;

    *pwhy = NULL;
    if (!json_is_object(obj)) {
        *pwhy = "the reply is not a JSON object";
        goto cleanup;
    }
    if (!(command = member_line(obj, "command", 1, PLAN_COMMAND_MAX))) {
        *pwhy = "command must be a shell command on one line, 1 to 1000 characters";
        goto cleanup;
    }
    health = member_line(obj, "health_path", 1, PLAN_HEALTH_MAX);
    if (!health || health[0] != '/' || strpbrk(health, " #")) {
        *pwhy = "health_path must be a path starting with /, without spaces, up to 200 "
                "characters";
        goto cleanup;
    }
    if (!member_int(obj, "replicas", 1, PLAN_REPLICAS_MAX, &replicas)) {
        *pwhy = "replicas must be a whole number from 1 to 10";
        goto cleanup;
    }
    if (!member_int(obj, "memory_mb", PLAN_MEMORY_MIN, PLAN_MEMORY_MAX, &memory)) {
        *pwhy = "memory_mb must be a whole number from 64 to 65536";
        goto cleanup;
    }
    nv = json_object_get(obj, "notes");
    if (nv && !json_is_null(nv)) {
        notes = json_string_value(nv);
        if (!notes || json_string_length(nv) > PLAN_NOTES_MAX
            || strlen(notes) != json_string_length(nv)) {
            *pwhy = "notes must be text of at most 2000 characters";
            goto cleanup;
        }
    }
    port_env = json_string_value(json_object_get(obj, "port_env"));
    if (json_object_get(obj, "port_env") && (!port_env || strcmp(port_env, "PORT") != 0)) {
        *pwhy = "port_env can only be PORT";
        goto cleanup;
    }
    plan = json_pack("{s:s,s:s,s:s,s:I,s:I,s:s,s:s}", "command", command, "port_env", "PORT",
                     "health_path", health, "replicas", (json_int_t)replicas,
                     "memory_mb", (json_int_t)memory, "notes", notes, "source", "model");

cleanup:
    json_decref(obj);
    (void)p;
    return plan;
}

const char *const svc_deploy_build_files[] = {
    "Procfile", "package.json", "pyproject.toml", "requirements.txt", "setup.py", "Pipfile",
    "go.mod", "Cargo.toml", "Gemfile", "Makefile", "Dockerfile", "pom.xml", "build.gradle",
    "composer.json", "mix.exs", "deno.json", "README.md", NULL
};

const char svc_deploy_plan_system[] =
    "You plan how to run a web application on a Linux server. You are given the files of "
    "its repository and the contents of its build files. The application is started in the "
    "repository's root directory by a shell command, with the environment variable PORT "
    "holding the TCP port it must listen on (all interfaces or 127.0.0.1); nothing is "
    "installed for it beforehand, so use what the repository and a usual Debian system "
    "(python3, sh) provide. Answer with one JSON object and nothing else: "
    "{\"command\": \"the shell command that starts the web server on $PORT\", "
    "\"health_path\": \"an HTTP path that answers 200 once the application is up, such as /\", "
    "\"replicas\": 1, \"memory_mb\": 512, \"notes\": \"one or two sentences on why\"}. "
    "replicas is 1 to 10; memory_mb is 64 to 65536.";

const char *svc_deploy_plan_prompt(apr_pool_t *p, const apr_array_header_t *files,
                                   apr_hash_t *contents)
{
    const char *out = "The repository's files:\n";
    const char *const *b;
    int i;

    for (i = 0; i < files->nelts && i < PLAN_LIST_MAX; i++) {
        out = apr_pstrcat(p, out, APR_ARRAY_IDX(files, i, const char *), "\n", NULL);
    }
    if (files->nelts > PLAN_LIST_MAX) {
        out = apr_psprintf(p, "%s(and %d more)\n", out, files->nelts - PLAN_LIST_MAX);
    }
    for (b = svc_deploy_build_files; *b; b++) {
        const char *text = apr_hash_get(contents, *b, APR_HASH_KEY_STRING);
        if (text) {
            out = apr_pstrcat(p, out, "\n--- ", *b, " ---\n", text,
                              *text && text[strlen(text) - 1] == '\n' ? "" : "\n", NULL);
        }
    }
    return out;
}
