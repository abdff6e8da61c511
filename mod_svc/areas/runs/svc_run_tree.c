/*
 * svc_run_tree.c: what a succeeded run's artifact holds, for other areas
 * (the deploy area's planner): the bundle's bytes, and its file list and a
 * few named files, read by git in the run sandbox. git never runs on a
 * run's repository outside one (svc_workspace.h): whatever the model wrote
 * is untrusted, and a repository's configuration can name programs.
 */
#include "svc_runs.h"
#include "svc_run_store.h"
#include "svc_sandbox.h"
#include "svc_workspace.h"

#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Longest the reading may take; the sandbox is stopped after it. */
#define TREE_TIMEOUT_MS 60000
/* The file list is capped here (bytes of NUL-separated paths). */
#define TREE_LIST_MAX   (4 * 1024 * 1024)
#define TREE_OUT        "out"

static const svc_stmt_t st_artifact_run = {
    "svc_runs_artifact_run",
    "SELECT status, artifact_bytes FROM runs WHERE id = $1 AND org_id = $2",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_artifact_data = {
    "svc_runs_artifact_data",
    "SELECT data FROM run_artifacts WHERE run_id = $1 ORDER BY part",
    1, SVC_STMT_READ | SVC_STMT_BINARY
};

apr_status_t svc_run_artifact(svc_db_t *db, apr_pool_t *p, const char *org_id,
                              const char *run_id, const char **pdata, apr_size_t *plen)
{
    apr_int64_t size;
    svc_dbres_t *res;
    apr_status_t rv;
    apr_size_t len = 0;
    char *out;
    int i, n;

    if ((rv = svc_db_execv(db, &st_artifact_run, p, &res, run_id, org_id)) != APR_SUCCESS) {
        return rv;
    }
    /* Whatever its status: a run stopped at its step limit or token budget
     * has one too (its work so far). */
    if (svc_dbres_rows(res) != 1 || svc_dbres_int64(res, 0, 1, &size) != APR_SUCCESS) {
        return SVC_ENOTFOUND;
    }
    if ((rv = svc_db_execv(db, &st_artifact_data, p, &res, run_id)) != APR_SUCCESS) {
        return rv;
    }
    out = apr_palloc(p, (apr_size_t)size + 1);
    n = svc_dbres_rows(res);
    for (i = 0; i < n; i++) {
        apr_size_t part = svc_dbres_len(res, i, 0);

        if ((apr_int64_t)(len + part) > size) {
            return SVC_EDB;
        }
        memcpy(out + len, svc_dbres_str(res, i, 0), part);
        len += part;
    }
    if ((apr_int64_t)len != size) {
        return SVC_EDB;
    }
    out[len] = '\0';
    *pdata = out;
    *plen = len;
    return APR_SUCCESS;
}

/* Writes len bytes to a new file dir/name (0600). */
static apr_status_t write_file(apr_pool_t *p, const char *dir, const char *name,
                               const char *data, apr_size_t len)
{
    apr_file_t *f;
    apr_status_t rv;
    apr_size_t n = len;

    rv = apr_file_open(&f, apr_pstrcat(p, dir, "/", name, NULL),
                       APR_FOPEN_WRITE | APR_FOPEN_CREATE | APR_FOPEN_EXCL | APR_FOPEN_BINARY,
                       APR_FPROT_UREAD | APR_FPROT_UWRITE, p);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = apr_file_write_full(f, data, n, NULL);
    apr_file_close(f);
    return rv;
}

/*
 * The sandbox's script: clone the bundle bare (no checkout: nothing of the
 * tree is written as files, so no attribute or filter applies), list the
 * files at HEAD, and copy out each wanted top-level file that is a blob of
 * at most $1 bytes. Everything goes to files in the workspace.
 */
static const char tree_script[] =
    "max=$1; shift\n"
    "git -c init.templateDir= clone -q --bare --no-hardlinks a.bundle t.git 2>" TREE_OUT "/err"
    " || exit 3\n"
    "git -C t.git ls-tree -r -z --full-tree --name-only HEAD >" TREE_OUT "/files"
    " 2>>" TREE_OUT "/err || exit 4\n"
    "i=0\n"
    "for f in \"$@\"; do\n"
    "  if [ \"$(git -C t.git cat-file -t \"HEAD:$f\" 2>/dev/null)\" = blob ] &&\n"
    "     [ \"$(git -C t.git cat-file -s \"HEAD:$f\")\" -le \"$max\" ]; then\n"
    "    git -C t.git cat-file blob \"HEAD:$f\" >" TREE_OUT "/w$i || exit 5\n"
    "  fi\n"
    "  i=$((i+1))\n"
    "done\n";

apr_status_t svc_run_artifact_tree(const svc_supervisor_conf_t *sc, apr_pool_t *p,
                                   const char *bundle, apr_size_t len,
                                   const char *const *wanted, apr_size_t max_each,
                                   apr_array_header_t **pfiles, apr_hash_t **pcontents,
                                   const char **perr)
{
    const char *id = apr_pstrcat(p, "tree-", svc_random_base62(p, 16), NULL);
    const char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/tmp",
                           "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
                           "GIT_TERMINAL_PROMPT=0", NULL };
    apr_array_header_t *cmd = apr_array_make(p, 16, sizeof(const char *));
    apr_array_header_t *files = apr_array_make(p, 64, sizeof(const char *));
    apr_hash_t *contents = apr_hash_make(p);
    svc_sandbox_limits_t limits;
    svc_sandbox_t sb;
    const char *workspace, *err = NULL;
    const char **argv;
    unsigned char *data;
    apr_size_t dlen, at;
    apr_status_t rv;
    int i, waited = 0;

    *perr = NULL;
    if ((rv = svc_workspace_make(p, sc->work_dir, id, &workspace)) != APR_SUCCESS) {
        *perr = "no workspace could be made (SvcRunWorkDir)";
        return rv;
    }
    if ((rv = svc_workspace_fresh_dir(workspace, TREE_OUT)) != APR_SUCCESS
        || (rv = write_file(p, workspace, "a.bundle", bundle, len)) != APR_SUCCESS) {
        *perr = "the artifact could not be written to the workspace";
        goto cleanup;
    }
    APR_ARRAY_PUSH(cmd, const char *) = "sh";
    APR_ARRAY_PUSH(cmd, const char *) = "-c";
    APR_ARRAY_PUSH(cmd, const char *) = tree_script;
    APR_ARRAY_PUSH(cmd, const char *) = "sh";
    APR_ARRAY_PUSH(cmd, const char *) = apr_psprintf(p, "%" APR_SIZE_T_FMT, max_each);
    for (i = 0; wanted[i]; i++) {
        APR_ARRAY_PUSH(cmd, const char *) = wanted[i];
    }
    APR_ARRAY_PUSH(cmd, const char *) = NULL;
    if ((rv = svc_sandbox_argv(p, sc, workspace, id, (const char *const *)cmd->elts, &argv))
        != APR_SUCCESS) {
        *perr = "the sandbox's command could not be made (SvcRunner needs {command})";
        goto cleanup;
    }
    memset(&limits, 0, sizeof(limits));
    if (!sc->runner) {
        limits.memory = sc->memory;
        limits.cpu_seconds = TREE_TIMEOUT_MS / 1000;
        limits.file_size = sc->file_size;
        limits.processes = svc_sandbox_nproc(sc->processes);
    }
    if ((rv = svc_sandbox_spawn(&sb, argv, envp, sc->runner ? NULL : &limits, &err, p))
        != APR_SUCCESS) {
        *perr = apr_pstrcat(p, "the sandbox could not start: ", err, NULL);
        goto cleanup;
    }
    /* Everything it says goes to files: our ends of its pipes stay unread. */
    svc_sandbox_close(&sb);
    while (!svc_sandbox_reap(&sb, 100)) {
        waited += 100;
        if (waited >= TREE_TIMEOUT_MS) {
            svc_sandbox_stop(&sb, 1000);
            *perr = "reading the artifact took too long";
            rv = APR_TIMEUP;
            goto cleanup;
        }
    }
    if (!WIFEXITED(sb.status) || WEXITSTATUS(sb.status) != 0) {
        *perr = apr_psprintf(p, "git could not read the artifact (exit %d)",
                             WIFEXITED(sb.status) ? WEXITSTATUS(sb.status) : 128);
        rv = APR_EGENERAL;
        goto cleanup;
    }
    if ((rv = svc_workspace_read(p, workspace, TREE_OUT, "files", TREE_LIST_MAX, &data, &dlen))
        != APR_SUCCESS) {
        *perr = "the artifact's file list could not be read (or is too long)";
        goto cleanup;
    }
    for (at = 0; at < dlen;) {
        apr_size_t n = strnlen((const char *)data + at, dlen - at);
        if (n) {
            APR_ARRAY_PUSH(files, const char *) = apr_pstrmemdup(p, (const char *)data + at, n);
        }
        at += n + 1;
    }
    for (i = 0; wanted[i]; i++) {
        if (svc_workspace_read(p, workspace, TREE_OUT, apr_psprintf(p, "w%d", i), max_each,
                               &data, &dlen) == APR_SUCCESS) {
            apr_hash_set(contents, wanted[i], APR_HASH_KEY_STRING,
                         apr_pstrmemdup(p, (const char *)data, dlen));
        }
    }
    *pfiles = files;
    *pcontents = contents;
    rv = APR_SUCCESS;

cleanup:
    svc_workspace_remove(workspace);
    return rv;
}
