/*
 * test_runs.c: the httpd-free parts of runs: the sandbox's argv, limits and
 * isolation (bubblewrap for real), the log's cleaning, redaction and cap,
 * workspaces with hostile contents, the bundle header, the task line, and
 * the run store against PostgreSQL (claims, leases, reaping, exactly-once
 * writes).
 */
#define SVC_TEST_MAIN
#include "svc_test.h"
#include "svc_testdb.h"

#include "svc_run_log.h"
#include "svc_run_store.h"
#include "svc_runner.h"
#include "svc_sandbox.h"
#include "svc_workspace.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int has_arg(const char **argv, const char *a, const char *b, const char *c)
{
    int i;

    for (i = 0; argv[i]; i++) {
        if (strcmp(argv[i], a) == 0 && (!b || (argv[i + 1] && strcmp(argv[i + 1], b) == 0))
            && (!c || (argv[i + 1] && argv[i + 2] && strcmp(argv[i + 2], c) == 0))) {
            return 1;
        }
    }
    return 0;
}

static svc_supervisor_conf_t conf_for(const char *factory)
{
    svc_supervisor_conf_t sc;

    svc_supervisor_defaults(&sc);
    sc.factory = factory;
    return sc;
}

SVC_TEST(sandbox_argv_bwrap)
{
    static const char *const cmd[] = { SVC_SANDBOX_FACTORY, NULL };
    svc_supervisor_conf_t sc = conf_for("/opt/svc-factory");
    const char **argv;
    int i, dashes = -1;

    SVC_CHECK_INT(svc_sandbox_argv(p, &sc, "/w/run_x", "run_x", cmd, &argv), APR_SUCCESS);
    SVC_CHECK_STR(argv[0], "/usr/bin/bwrap");
    SVC_CHECK(has_arg(argv, "--unshare-all", NULL, NULL));
    SVC_CHECK(has_arg(argv, "--die-with-parent", NULL, NULL));
    SVC_CHECK(has_arg(argv, "--new-session", NULL, NULL));
    SVC_CHECK(has_arg(argv, "--clearenv", NULL, NULL));
    SVC_CHECK(has_arg(argv, "--ro-bind", "/usr", "/usr"));
    SVC_CHECK(has_arg(argv, "--bind", "/w/run_x", SVC_SANDBOX_WORKSPACE));
    SVC_CHECK(has_arg(argv, "--ro-bind", "/opt/svc-factory", SVC_SANDBOX_FACTORY));
    SVC_CHECK(has_arg(argv, "--tmpfs", "/tmp", NULL));
    SVC_CHECK(!has_arg(argv, "--share-net", NULL, NULL));
    /* The only read-write bind is the workspace. */
    for (i = 0; argv[i]; i++) {
        if (strcmp(argv[i], "--bind") == 0) {
            SVC_CHECK_STR(argv[i + 1], "/w/run_x");
        }
        if (strcmp(argv[i], "--") == 0) {
            dashes = i;
        }
    }
    SVC_CHECK(dashes > 0);
    SVC_CHECK_STR(argv[dashes + 1], SVC_SANDBOX_FACTORY);
    SVC_CHECK(argv[dashes + 2] == NULL);
}

SVC_TEST(sandbox_argv_runner)
{
    static const char *const runner[] = {
        "/usr/bin/podman", "run", "--rm", "-i", "--network=none", "--name=svc-{run}",
        "-v", "{workspace}:/workspace:Z", "-v", "{factory}:/svc/factory:ro", "{unknown}",
        "img", "{command}", NULL
    };
    static const char *const cmd[] = { "git", "bundle", "create", NULL };
    static const char *const nocmd[] = { "/usr/bin/podman", "run", "{workspace}", NULL };
    svc_supervisor_conf_t sc = conf_for("/opt/f");
    const char **argv;

    sc.runner = runner;
    SVC_CHECK_INT(svc_sandbox_argv(p, &sc, "/w/run_y", "run_y", cmd, &argv), APR_SUCCESS);
    SVC_CHECK_STR(argv[0], "/usr/bin/podman");
    SVC_CHECK_STR(argv[5], "--name=svc-run_y");
    SVC_CHECK_STR(argv[7], "/w/run_y:/workspace:Z");
    SVC_CHECK_STR(argv[9], "/opt/f:/svc/factory:ro");
    SVC_CHECK_STR(argv[10], "{unknown}");
    SVC_CHECK_STR(argv[11], "img");
    SVC_CHECK_STR(argv[12], "git");
    SVC_CHECK_STR(argv[13], "bundle");
    SVC_CHECK_STR(argv[14], "create");
    SVC_CHECK(argv[15] == NULL);
    sc.runner = nocmd;
    SVC_CHECK_INT(svc_sandbox_argv(p, &sc, "/w", "run_y", cmd, &argv), APR_EINVAL);
}

/* Reads all of a sandbox's stdout (until EOF), then reaps it. */
static const char *drain(apr_pool_t *p, svc_sandbox_t *sb)
{
    char buf[4096];
    const char *out = "";
    struct pollfd pfd;

    fcntl(sb->out, F_SETFL, fcntl(sb->out, F_GETFL) & ~O_NONBLOCK);
    for (;;) {
        ssize_t n;
        pfd.fd = sb->out;
        pfd.events = POLLIN;
        if (poll(&pfd, 1, 20000) <= 0) {
            break;
        }
        n = read(sb->out, buf, sizeof(buf));
        if (n <= 0) {
            break;
        }
        out = apr_pstrcat(p, out, apr_pstrmemdup(p, buf, (apr_size_t)n), NULL);
    }
    svc_sandbox_reap(sb, 20000);
    svc_sandbox_close(sb);
    return out;
}

SVC_TEST(sandbox_limits_are_set)
{
    static const char *const argv[] = { "/bin/sh", "-c", "ulimit -v; ulimit -f; ulimit -c", NULL };
    static const char *const envp[] = { "PATH=/usr/bin:/bin", NULL };
    svc_sandbox_limits_t lim = { 512 * 1024 * 1024, 60, 8 * 1024 * 1024, 0 };
    svc_sandbox_t sb;
    const char *err = NULL;

    SVC_CHECK_INT(svc_sandbox_spawn(&sb, argv, envp, &lim, &err, p), APR_SUCCESS);
    /* ulimit -v is in KiB, -f in 512-byte blocks (dash). */
    SVC_CHECK_STR(drain(p, &sb), "524288\n16384\n0\n");
    SVC_CHECK(WIFEXITED(sb.status) && WEXITSTATUS(sb.status) == 0);
    SVC_CHECK(svc_sandbox_nproc(256) > 256);
}

SVC_TEST(sandbox_stop_ends_the_process_group)
{
    static const char *const argv[] = {
        "/bin/sh", "-c", "sleep 60 & echo $!; sleep 60 & echo $!; exec sleep 60", NULL
    };
    static const char *const envp[] = { "PATH=/usr/bin:/bin", NULL };
    svc_sandbox_t sb;
    const char *err = NULL;
    char buf[256];
    ssize_t n = 0;
    long a = 0, b = 0;
    int tries;

    SVC_CHECK_INT(svc_sandbox_spawn(&sb, argv, envp, NULL, &err, p), APR_SUCCESS);
    for (tries = 0; tries < 100; tries++) {
        ssize_t r = read(sb.out, buf + n, sizeof(buf) - 1 - (apr_size_t)n);
        if (r > 0) {
            n += r;
            buf[n] = '\0';
            if (sscanf(buf, "%ld %ld", &a, &b) == 2) {
                break;
            }
        }
        poll(NULL, 0, 50);
    }
    SVC_CHECK(a > 0 && b > 0);
    SVC_CHECK(kill((pid_t)a, 0) == 0 && kill((pid_t)b, 0) == 0);
    svc_sandbox_stop(&sb, 2000);
    SVC_CHECK(sb.exited);
    /* The grandchildren were in its process group: gone too (or zombies of
     * init, which do not answer kill 0 with success for long). */
    for (tries = 0; tries < 100 && (kill((pid_t)a, 0) == 0 || kill((pid_t)b, 0) == 0); tries++) {
        poll(NULL, 0, 20);
    }
    SVC_CHECK(kill((pid_t)a, 0) < 0 && kill((pid_t)b, 0) < 0);
}

/* The init step: bubblewrap with the host's network, DNS and TLS files of
 * /etc, the CA file, no factory, and no --clearenv or --setenv (the token
 * travels in the environment, never in argv). */
SVC_TEST(sandbox_init_argv)
{
    static const char *const cmd[] = { "git", "clone", "--", "https://h/o/r.git",
                                       "/workspace/repo", NULL };
    const char **argv = svc_sandbox_init_argv(p, "/w/run_i", "/etc/private-ca.pem", cmd);
    int i, dashes = -1;

    SVC_CHECK_STR(argv[0], "/usr/bin/bwrap");
    SVC_CHECK(has_arg(argv, "--unshare-all", NULL, NULL));
    SVC_CHECK(has_arg(argv, "--share-net", NULL, NULL));
    SVC_CHECK(has_arg(argv, "--die-with-parent", NULL, NULL));
    SVC_CHECK(has_arg(argv, "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"));
    SVC_CHECK(has_arg(argv, "--ro-bind-try", "/etc/ssl", "/etc/ssl"));
    SVC_CHECK(has_arg(argv, "--ro-bind", "/etc/private-ca.pem", SVC_SANDBOX_CA));
    SVC_CHECK(has_arg(argv, "--bind", "/w/run_i", SVC_SANDBOX_WORKSPACE));
    SVC_CHECK(!has_arg(argv, "--clearenv", NULL, NULL));
    SVC_CHECK(!has_arg(argv, "--setenv", NULL, NULL));
    SVC_CHECK(!has_arg(argv, "--ro-bind", "/etc", "/etc"));
    for (i = 0; argv[i]; i++) {
        if (strcmp(argv[i], "--bind") == 0) {
            SVC_CHECK_STR(argv[i + 1], "/w/run_i");
        }
        if (strcmp(argv[i], "--") == 0 && dashes < 0) {
            dashes = i;
        }
    }
    SVC_CHECK(dashes > 0);
    SVC_CHECK_STR(argv[dashes + 1], "git");
    SVC_CHECK_STR(argv[dashes + 5], "/workspace/repo");
    SVC_CHECK(argv[dashes + 6] == NULL);
    argv = svc_sandbox_init_argv(p, "/w/run_i", NULL, cmd);
    SVC_CHECK(!has_arg(argv, "--ro-bind", "/etc/private-ca.pem", SVC_SANDBOX_CA));
}

/* What a command sees inside bubblewrap: no network but loopback, the
 * system read-only, the workspace writable, nothing of the host's /etc or
 * home, an empty environment but the few variables given. */
SVC_TEST(sandbox_bwrap_isolation)
{
    static const char *const script[] = {
        "/bin/sh", "-c",
        "sed -n '3,$p' /proc/net/dev | cut -d: -f1 | tr -d ' '; "
        "touch /usr/x 2>/dev/null && echo usr-writable || echo usr-ro; "
        "echo hi > /workspace/inside && echo ws-writable; "
        "test -e /etc/passwd && echo etc || echo no-etc; "
        "test -e /var && echo var || echo no-var; "
        "env | sort | tr '\\n' ' '; echo", NULL
    };
    static const char *const envp[] = { "PATH=/usr/bin:/bin", "SECRET_OF_HTTPD=oops", NULL };
    svc_supervisor_conf_t sc = conf_for("/bin/true");
    const char *ws = apr_psprintf(p, "/tmp/svc-ut-ws-%ld", (long)getpid());
    const char **argv;
    svc_sandbox_t sb;
    const char *err = NULL, *out;
    struct stat st;

    if (access("/usr/bin/bwrap", X_OK) < 0) {
        fprintf(stderr, "# no bwrap: skipped\n");
        return;
    }
    mkdir(ws, 0700);
    SVC_CHECK_INT(svc_sandbox_argv(p, &sc, ws, "run_t", script, &argv), APR_SUCCESS);
    SVC_CHECK_INT(svc_sandbox_spawn(&sb, argv, envp, NULL, &err, p), APR_SUCCESS);
    out = drain(p, &sb);
    SVC_CHECK(WIFEXITED(sb.status) && WEXITSTATUS(sb.status) == 0);
    if (strncmp(out, "lo\n", 3) != 0) {
        fprintf(stderr, "# output: %s\n", out);
    }
    SVC_CHECK(strncmp(out, "lo\nusr-ro\nws-writable\nno-etc\nno-var\n", 35) == 0);
    SVC_CHECK(strstr(out, "SECRET_OF_HTTPD") == NULL);
    SVC_CHECK(strstr(out, "HOME=/tmp ") != NULL);
    SVC_CHECK(strstr(out, "PATH=/usr/local/bin:/usr/bin:/bin ") != NULL);
    SVC_CHECK(stat(apr_pstrcat(p, ws, "/inside", NULL), &st) == 0);
    SVC_CHECK_INT(svc_workspace_remove(ws), APR_SUCCESS);
}

SVC_TEST(log_cleans_and_redacts)
{
    static const char want[] =
        "plain line\ntab\tand control\n"
        "bad \xef\xbf\xbd\xef\xbf\xbd utf8 \xc3\xa9 ok\n"
        "key [REDACTED] end\ntoken [REDACTED] here\n"
        "Authorization: Bearer [REDACTED]\na short secret stays: short\n";
    svc_run_log_t *log = svc_run_log_create(p, 0, 0, 1024 * 1024);
    const char *text;
    apr_size_t len;
    char longline[20000];

    svc_run_log_secret(log, "sk-live-0123456789abcdef");
    svc_run_log_secret(log, "short");
    svc_run_log_line(log, "plain line", 10);
    svc_run_log_line(log, "tab\tand\x01" "control\r\n", 17);
    svc_run_log_line(log, "bad \xff\xfe utf8 \xc3\xa9 ok", 17);
    svc_run_log_line(log, "key sk-live-0123456789abcdef end", 32);
    svc_run_log_note(log, "token %s here", "svc_pat_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345abcdef");
    svc_run_log_note(log, "Authorization: Bearer abcdefghijklmnop");
    svc_run_log_note(log, "a short secret stays: short");
    memset(longline, 'x', sizeof(longline));
    svc_run_log_line(log, longline, sizeof(longline));
    text = svc_run_log_waiting(log, &len);
    if (len < sizeof(want) - 1 || memcmp(text, want, sizeof(want) - 1) != 0) {
        fprintf(stderr, "# got:\n%.*s", (int)(len < 400 ? len : 400), text);
        SVC_CHECK(0);
    }
    SVC_CHECK(strstr(text, "sk-live") == NULL);
    SVC_CHECK(strstr(text, "ABCDEFGHIJ") == NULL);
    /* The long line is cut to SVC_RUN_LOG_LINE_MAX and says so. */
    SVC_CHECK(strstr(text, "xxx [...]\n") != NULL);
    SVC_CHECK(len < sizeof(want) + SVC_RUN_LOG_LINE_MAX + 2);
}

SVC_TEST(log_partial_lines)
{
    svc_run_log_t *log = svc_run_log_create(p, 0, 0, 1024 * 1024);
    svc_run_log_partial_t *part = apr_pcalloc(p, sizeof(*part));
    const char *text;
    apr_size_t len;

    svc_run_log_bytes(log, part, "one\ntw", 6, 0);
    svc_run_log_bytes(log, part, "o\nthr", 5, 0);
    text = svc_run_log_waiting(log, &len);
    SVC_CHECK_INT(len, 8);
    SVC_CHECK(strncmp(text, "one\ntwo\n", 8) == 0);
    svc_run_log_bytes(log, part, "ee", 2, 1);
    text = svc_run_log_waiting(log, &len);
    SVC_CHECK_INT(len, 14);
    SVC_CHECK(strncmp(text, "one\ntwo\nthree\n", 14) == 0);
}

SVC_TEST(log_cap_drops_the_rest_with_one_line)
{
    /* 100 bytes stored already, a limit of 150. */
    svc_run_log_t *log = svc_run_log_create(p, 100, 0, 150);
    const char *text;
    apr_size_t len;
    int i;

    svc_run_log_line(log, "0123456789012345678", 19);          /* 120 */
    svc_run_log_line(log, "0123456789012345678", 19);          /* 140 */
    svc_run_log_line(log, "0123456789012345678", 19);          /* 160: over */
    for (i = 0; i < 10; i++) {
        svc_run_log_line(log, "more", 4);
    }
    text = svc_run_log_waiting(log, &len);
    SVC_CHECK(strncmp(text, "0123456789012345678\n0123456789012345678\n[mod_svc] the log "
                      "reached its limit of 150 bytes", 80) == 0);
    SVC_CHECK(strstr(text, "more") == NULL);
    SVC_CHECK(memchr(text, '\n', len) && text[len - 1] == '\n');
    /* Exactly one dropped line, and nothing after it. */
    SVC_CHECK(strstr(text, "dropped\n") == text + len - 8);
    /* A log that was already at its limit keeps nothing. */
    log = svc_run_log_create(p, 150, 1, 150);
    svc_run_log_line(log, "late", 4);
    svc_run_log_waiting(log, &len);
    SVC_CHECK_INT(len, 0);
}

SVC_TEST(bundle_head_reads_the_header)
{
    static const char v2[] =
        "# v2 git bundle\n"
        "-1111111111111111111111111111111111111111 a prerequisite\n"
        "2222222222222222222222222222222222222222 HEAD\n"
        "3333333333333333333333333333333333333333 refs/heads/svc/run-run_x\n"
        "\nPACK....";
    static const char v3[] =
        "# v3 git bundle\n@object-format=sha1\n"
        "4444444444444444444444444444444444444444 refs/heads/svc/run-run_x\n\nPACK";

    SVC_CHECK_STR(svc_bundle_head(p, (const unsigned char *)v2, sizeof(v2) - 1,
                                  "refs/heads/svc/run-run_x"),
                  "3333333333333333333333333333333333333333");
    SVC_CHECK_STR(svc_bundle_head(p, (const unsigned char *)v2, sizeof(v2) - 1, "HEAD"),
                  "2222222222222222222222222222222222222222");
    SVC_CHECK_STR(svc_bundle_head(p, (const unsigned char *)v3, sizeof(v3) - 1,
                                  "refs/heads/svc/run-run_x"),
                  "4444444444444444444444444444444444444444");
    SVC_CHECK(svc_bundle_head(p, (const unsigned char *)v2, sizeof(v2) - 1,
                              "refs/heads/svc/run-run_") == NULL);
    SVC_CHECK(svc_bundle_head(p, (const unsigned char *)v2, sizeof(v2) - 1,
                              "a prerequisite") == NULL);
    SVC_CHECK(svc_bundle_head(p, (const unsigned char *)"PK\003\004", 4, "HEAD") == NULL);
    SVC_CHECK(svc_bundle_head(p, (const unsigned char *)"# v2 git bundle\n2222", 20,
                              "HEAD") == NULL);
}

/* What a runner might leave: symlinks out, unreadable and unwritable
 * directories. Removal takes the tree and nothing the links point at. */
SVC_TEST(workspace_remove_hostile_tree)
{
    const char *base = apr_psprintf(p, "/tmp/svc-ut-rm-%ld", (long)getpid());
    const char *outside = apr_pstrcat(p, base, "-outside", NULL);
    const char *ws, *path;
    unsigned char *data = NULL;
    apr_size_t len = 0;
    struct stat st;
    int fd;

    mkdir(base, 0700);
    mkdir(outside, 0700);
    fd = open(apr_pstrcat(p, outside, "/keep", NULL), O_CREAT | O_WRONLY, 0600);
    SVC_CHECK(fd >= 0 && write(fd, "keep", 4) == 4);
    close(fd);
    SVC_CHECK_INT(svc_workspace_make(p, base, "run_abc", &ws), APR_SUCCESS);
    SVC_CHECK(symlink(outside, apr_pstrcat(p, ws, "/link-dir", NULL)) == 0);
    SVC_CHECK(symlink(apr_pstrcat(p, outside, "/keep", NULL),
                      apr_pstrcat(p, ws, "/link-file", NULL)) == 0);
    path = apr_pstrcat(p, ws, "/locked", NULL);
    SVC_CHECK(mkdir(path, 0700) == 0);
    SVC_CHECK(mkdir(apr_pstrcat(p, path, "/inner", NULL), 0700) == 0);
    SVC_CHECK(chmod(apr_pstrcat(p, path, "/inner", NULL), 0) == 0);
    SVC_CHECK(chmod(path, 0500) == 0);

    /* Reading refuses a symlink, as file or as directory. */
    SVC_CHECK_INT(svc_workspace_make(p, base, "run_abc", &ws), APR_SUCCESS);
    SVC_CHECK(symlink(outside, apr_pstrcat(p, ws, "/" SVC_WS_BUNDLE_DIR, NULL)) == 0);
    SVC_CHECK(svc_workspace_read(p, ws, SVC_WS_BUNDLE_DIR, "keep", 100, &data, &len)
              != APR_SUCCESS);
    SVC_CHECK_INT(svc_workspace_fresh_dir(ws, SVC_WS_BUNDLE_DIR), APR_SUCCESS);
    SVC_CHECK(symlink(apr_pstrcat(p, outside, "/keep", NULL),
                      apr_pstrcat(p, ws, "/" SVC_WS_BUNDLE_DIR "/" SVC_WS_BUNDLE_FILE, NULL))
              == 0);
    SVC_CHECK(svc_workspace_read(p, ws, SVC_WS_BUNDLE_DIR, SVC_WS_BUNDLE_FILE, 100, &data,
                                 &len) != APR_SUCCESS);
    SVC_CHECK_INT(svc_workspace_fresh_dir(ws, SVC_WS_BUNDLE_DIR), APR_SUCCESS);
    fd = open(apr_pstrcat(p, ws, "/" SVC_WS_BUNDLE_DIR "/" SVC_WS_BUNDLE_FILE, NULL),
              O_CREAT | O_WRONLY, 0600);
    SVC_CHECK(fd >= 0 && write(fd, "bundle", 6) == 6);
    close(fd);
    SVC_CHECK_INT(svc_workspace_read(p, ws, SVC_WS_BUNDLE_DIR, SVC_WS_BUNDLE_FILE, 100, &data,
                                     &len), APR_SUCCESS);
    SVC_CHECK(len == 6 && memcmp(data, "bundle", 6) == 0);
    SVC_CHECK_INT(svc_workspace_read(p, ws, SVC_WS_BUNDLE_DIR, SVC_WS_BUNDLE_FILE, 5, &data,
                                     &len), APR_ENOSPC);

    SVC_CHECK_INT(svc_workspace_remove(ws), APR_SUCCESS);
    SVC_CHECK(lstat(ws, &st) < 0 && errno == ENOENT);
    SVC_CHECK(stat(apr_pstrcat(p, outside, "/keep", NULL), &st) == 0 && st.st_size == 4);
    SVC_CHECK_INT(svc_workspace_list(p, base)->nelts, 0);
    SVC_CHECK_INT(svc_workspace_remove(outside), APR_SUCCESS);
    SVC_CHECK_INT(svc_workspace_remove(base), APR_SUCCESS);
}

SVC_TEST(task_line)
{
    svc_supervisor_conf_t sc = conf_for("/f");
    svc_run_job_t job;
    json_error_t jerr;
    json_t *t;

    memset(&job, 0, sizeof(job));
    job.id = "run_0123456789abcdefghijkl";
    job.instructions = "Do it";
    job.author_name = "Ada\nEvil: header";
    job.author_email = "ada@example.test";
    job.max_steps = 7;
    job.command_timeout = 9;
    t = json_loads(svc_runner_task(p, &sc, &job, 0), JSON_REJECT_DUPLICATES, &jerr);
    SVC_CHECK(t != NULL);
    SVC_CHECK_STR(json_string_value(json_object_get(t, "type")), "task");
    SVC_CHECK_STR(json_string_value(json_object_get(t, "mode")), "single");
    SVC_CHECK_STR(json_string_value(json_object_get(t, "repo")), "/workspace/repo");
    /* The factory makes the artifact there, in its own sandbox (issue 25). */
    SVC_CHECK_STR(json_string_value(json_object_get(t, "bundle")),
                  "/workspace/bundle/run.bundle");
    SVC_CHECK_STR(json_string_value(json_object_get(t, "branch")),
                  "svc/run-run_0123456789abcdefghijkl");
    SVC_CHECK_STR(json_string_value(json_object_get(json_object_get(t, "author"), "name")),
                  "Ada Evil: header");
    SVC_CHECK_INT(json_integer_value(json_object_get(json_object_get(t, "limits"),
                                                     "max_file_bytes")), 1024 * 1024);
    json_decref(t);
    t = json_loads(svc_runner_task(p, &sc, &job, 1), JSON_REJECT_DUPLICATES, &jerr);
    SVC_CHECK(t != NULL);
    SVC_CHECK_STR(json_string_value(json_object_get(t, "mode")), "agent");
    SVC_CHECK_INT(json_integer_value(json_object_get(json_object_get(t, "limits"),
                                                     "max_steps")), 7);
    SVC_CHECK_INT(json_integer_value(json_object_get(json_object_get(t, "limits"),
                                                     "command_timeout")), 9);
    json_decref(t);
}

/* Issue 17 (Low 1): the limits the factory is told can be reached. An
 * answer as large as they allow (every byte escaped twice, as the factory
 * reckons: factory-protocol.md) fits the cap on the provider's answer, and
 * the cap is more than the 6,553,600 bytes that once cut answers within
 * the limits. */
SVC_TEST(reply_cap_fits_the_limits)
{
    svc_supervisor_conf_t sc = conf_for("/f");
    svc_run_job_t job;
    json_error_t jerr;
    json_t *t, *l;
    apr_int64_t files, total, need;

    memset(&job, 0, sizeof(job));
    job.id = "run_0123456789abcdefghijkl";
    job.instructions = "Do it";
    job.author_name = "Ada";
    job.author_email = "ada@example.test";
    job.max_steps = 50;
    job.command_timeout = 120;
    t = json_loads(svc_runner_task(p, &sc, &job, 0), JSON_REJECT_DUPLICATES, &jerr);
    SVC_CHECK(t != NULL);
    l = json_object_get(t, "limits");
    files = json_integer_value(json_object_get(l, "max_files"));
    total = json_integer_value(json_object_get(l, "max_total_bytes"));
    need = 8 * (total + files * (1024 + 64)) + 1024 * 1024;
    SVC_CHECK((apr_int64_t)svc_runner_reply_cap(&sc) >= need);
    SVC_CHECK(svc_runner_reply_cap(&sc) > 6553600);
    json_decref(t);
}

/* ---------------------------------------------------------------------- */
/* The run store, against PostgreSQL                                      */

typedef struct {
    const char *user, *org, *project;
} fixture_t;

static int fixture(apr_pool_t *p, svc_db_t *db, fixture_t *f)
{
    char *tag = apr_pstrdup(p, svc_testdb_name(p, "ut-"));
    char *c;
    int ok = 1;

    /* A slug: no underscores. */
    for (c = tag; *c; c++) {
        if (*c == '_') {
            *c = '-';
        }
    }

    f->user = svc_id_new(p, "usr_");
    f->org = svc_id_new(p, "org_");
    f->project = svc_id_new(p, "prj_");
    svc_testdb_pq(p, svc_db_conn(db), apr_psprintf(p,
        "BEGIN; INSERT INTO users (id, email, name) VALUES ('%s', '%s@example.test', 'Ada');"
        "INSERT INTO orgs (id, slug, name) VALUES ('%s', '%s', 'Runs');"
        "INSERT INTO org_members (org_id, user_id, role) VALUES ('%s', '%s', 'owner');"
        "INSERT INTO projects (id, org_id, slug, name) VALUES ('%s', '%s', 'p', 'P'); COMMIT",
        f->user, tag, f->org, tag, f->org, f->user, f->project, f->org), &ok);
    SVC_CHECK(ok);
    return ok;
}

static const char *new_run(apr_pool_t *p, svc_db_t *db, const fixture_t *f)
{
    const char *id = svc_id_new(p, "run_");
    int ok = 1;

    svc_testdb_pq(p, svc_db_conn(db), apr_psprintf(p,
        "INSERT INTO runs (id, org_id, project_id, instructions, created_by, timeout_seconds)"
        " VALUES ('%s', '%s', '%s', 'Do it', '%s', 60)", id, f->org, f->project, f->user), &ok);
    SVC_CHECK(ok);
    return id;
}

static const char *q(apr_pool_t *p, svc_db_t *db, const char *sql)
{
    const char *v = svc_testdb_value(p, db, sql);
    return v ? v : "(null)";
}

SVC_TEST(store_claim_renew_finish)
{
    svc_db_t *db = svc_testdb_open(p);
    svc_run_job_t *job = NULL, *job2 = NULL, *none = NULL;
    apr_array_header_t *leases;
    fixture_t f;
    const char *r1, *r2;

    if (!db || !fixture(p, db, &f)) {
        return;
    }
    r1 = new_run(p, db, &f);
    r2 = new_run(p, db, &f);
    SVC_CHECK_INT(svc_run_claim(db, p, "node-a", 30, &job), APR_SUCCESS);
    SVC_CHECK(job && strcmp(job->id, r1) == 0);
    SVC_CHECK_STR(job->author_name, "Ada");
    SVC_CHECK_INT(job->timeout_seconds, 60);
    SVC_CHECK(job->repository == NULL);     /* greenfield: no init step */
    SVC_CHECK_STR(q(p, db, apr_psprintf(p, "SELECT status || ' ' || lease_owner || ' ' || "
                                        "attempts FROM runs WHERE id = '%s'", r1)),
                  "running node-a 1");
    SVC_CHECK_INT(svc_run_claim(db, p, "node-b", 30, &job2), APR_SUCCESS);
    SVC_CHECK(job2 && strcmp(job2->id, r2) == 0);
    SVC_CHECK_INT(svc_run_claim(db, p, "node-b", 30, &none), APR_SUCCESS);
    SVC_CHECK(none == NULL);

    /* Each node renews its own. */
    svc_testdb_value(p, db, apr_psprintf(p, "UPDATE runs SET cancel_requested = true "
                                         "WHERE id = '%s'", r1));
    SVC_CHECK_INT(svc_run_renew(db, p, "node-a", 30, &leases), APR_SUCCESS);
    SVC_CHECK_INT(leases->nelts, 1);
    SVC_CHECK_STR(APR_ARRAY_IDX(leases, 0, svc_run_lease_t).id, r1);
    SVC_CHECK_INT(APR_ARRAY_IDX(leases, 0, svc_run_lease_t).cancel_requested, 1);

    /* Only the holder ends a run; ending it twice is the same as once. */
    SVC_CHECK_INT(svc_run_finish(db, p, r1, "node-b", SVC_RUN_CANCELLED, NULL, NULL),
                  SVC_ENOTFOUND);
    SVC_CHECK_INT(svc_run_finish(db, p, r1, "node-a", SVC_RUN_CANCELLED, NULL, NULL),
                  APR_SUCCESS);
    SVC_CHECK_INT(svc_run_finish(db, p, r1, "node-a", SVC_RUN_CANCELLED, NULL, NULL),
                  APR_SUCCESS);
    SVC_CHECK_INT(svc_run_finish(db, p, r1, "node-a", SVC_RUN_FAILED, "x", "y"),
                  SVC_ENOTFOUND);
    SVC_CHECK_STR(q(p, db, apr_psprintf(p, "SELECT string_agg(data->>'status', ',' ORDER BY id) "
                                        "FROM events WHERE run_id = '%s'", r1)),
                  "running,cancelled");
    SVC_CHECK_INT(svc_run_renew(db, p, "node-a", 30, &leases), APR_SUCCESS);
    SVC_CHECK_INT(leases->nelts, 0);

    /* Success stores the result and the bundle in parts, with its event. */
    {
        apr_size_t n = 2 * 1024 * 1024 + 3, i;
        unsigned char *bundle = apr_palloc(p, n);
        for (i = 0; i < n; i++) {
            bundle[i] = (unsigned char)(i * 7);
        }
        SVC_CHECK_INT(svc_run_succeed(db, p, r2, "node-b", "{\"summary\":\"s\"}", bundle, n),
                      APR_SUCCESS);
        SVC_CHECK_STR(q(p, db, apr_psprintf(p, "SELECT count(*) || ' ' || sum(octet_length(data))"
                                            " FROM run_artifacts WHERE run_id = '%s'", r2)),
                      "3 2097155");
        SVC_CHECK_STR(q(p, db, apr_psprintf(p, "SELECT status || ' ' || (result->>'summary') "
                                            "|| ' ' || artifact_bytes FROM runs WHERE id = '%s'",
                                            r2)), "succeeded s 2097155");
        SVC_CHECK_INT(svc_run_succeed(db, p, r2, "node-b", "{}", bundle, 1), APR_SUCCESS);
        SVC_CHECK_STR(q(p, db, apr_psprintf(p, "SELECT count(*) FROM run_artifacts "
                                            "WHERE run_id = '%s'", r2)), "3");
    }
    svc_testdb_value(p, db, apr_psprintf(p, "DELETE FROM orgs WHERE id = '%s'", f.org));
}

SVC_TEST(store_log_exactly_once)
{
    svc_db_t *db = svc_testdb_open(p);
    svc_run_job_t *job = NULL;
    fixture_t f;
    const char *r;

    if (!db || !fixture(p, db, &f)) {
        return;
    }
    r = new_run(p, db, &f);
    SVC_CHECK_INT(svc_run_claim(db, p, "node-a", 30, &job), APR_SUCCESS);
    SVC_CHECK(job && strcmp(job->id, r) == 0);
    if (!job) {
        return;
    }
    SVC_CHECK_INT(svc_run_log_append(db, p, job, "node-a", 0, "one\ntwo\n", 8, 0, NULL, 0),
                  APR_SUCCESS);
    /* The same append again (its answer was lost): nothing twice. */
    SVC_CHECK_INT(svc_run_log_append(db, p, job, "node-a", 0, "one\ntwo\n", 8, 0, NULL, 0),
                  APR_SUCCESS);
    SVC_CHECK_INT(svc_run_log_append(db, p, job, "node-a", 8, "three\n", 6, 1, NULL, 0),
                  APR_SUCCESS);
    /* Out of step (a bug): refused. Another node: not its run. */
    SVC_CHECK_INT(svc_run_log_append(db, p, job, "node-a", 3, "x\n", 2, 0, NULL, 0), SVC_EDB);
    SVC_CHECK_INT(svc_run_log_append(db, p, job, "node-b", 14, "x\n", 2, 0, NULL, 0),
                  SVC_ENOTFOUND);
    SVC_CHECK_STR(q(p, db, apr_psprintf(p, "SELECT string_agg(data, '' ORDER BY byte_offset) "
                                        "FROM run_logs WHERE run_id = '%s'", r)),
                  "one\ntwo\nthree\n");
    SVC_CHECK_STR(q(p, db, apr_psprintf(p, "SELECT log_bytes || ' ' || log_dropped FROM runs "
                                        "WHERE id = '%s'", r)), "14 true");
    SVC_CHECK_STR(q(p, db, apr_psprintf(p, "SELECT string_agg((data->>'offset') || ':' || "
                                        "(data->>'line'), ',' ORDER BY id) FROM events "
                                        "WHERE run_id = '%s' AND kind = 'run.log'", r)),
                  "0:one,4:two,8:three");
    svc_testdb_value(p, db, apr_psprintf(p, "DELETE FROM orgs WHERE id = '%s'", f.org));
}

/* A step's event comes right after its log line, in the log's own
 * transaction, whatever chunks the flush makes; a run stopped at a limit
 * ends failed with its result and artifact. */
SVC_TEST(store_step_events_and_work_so_far)
{
    svc_db_t *db = svc_testdb_open(p);
    svc_run_job_t *job = NULL;
    svc_run_log_t *log;
    fixture_t f;
    const char *r;

    if (!db || !fixture(p, db, &f)) {
        return;
    }
    r = new_run(p, db, &f);
    SVC_CHECK_INT(svc_run_claim(db, p, "node-a", 30, &job), APR_SUCCESS);
    SVC_CHECK(job && strcmp(job->id, r) == 0);
    if (!job) {
        return;
    }
    log = svc_run_log_create(p, job->log_bytes, job->log_dropped, 1024 * 1024);
    svc_run_log_note(log, "before");
    svc_run_log_event(log, "run.step", json_pack("{s:s,s:i}", "run_id", r, "n", 1),
                      "step one");
    svc_run_log_note(log, "between");
    svc_run_log_event(log, "run.step", json_pack("{s:s,s:i}", "run_id", r, "n", 2),
                      "step two");
    SVC_CHECK_INT(svc_run_log_flush(log, db, job, "node-a"), APR_SUCCESS);
    svc_run_log_note(log, "after");
    SVC_CHECK_INT(svc_run_log_flush(log, db, job, "node-a"), APR_SUCCESS);
    SVC_CHECK_STR(q(p, db, apr_psprintf(p, "SELECT string_agg(coalesce(data->>'line', "
                                        "'#' || (data->>'n')), ',' ORDER BY id) FROM events "
                                        "WHERE run_id = '%s' AND kind IN ('run.log', "
                                        "'run.step')", r)),
                  "before,step one,#1,between,step two,#2,after");
    SVC_CHECK_INT(svc_run_fail_with_work(db, p, r, "node-a", "step_limit", "Stopped.",
                                         "{\"summary\":\"so far\"}",
                                         (const unsigned char *)"bundle", 6), APR_SUCCESS);
    SVC_CHECK_STR(q(p, db, apr_psprintf(p, "SELECT status || ' ' || error_code || ' ' || "
                                        "(result->>'summary') || ' ' || artifact_bytes FROM "
                                        "runs WHERE id = '%s'", r)), "failed step_limit so far 6");
    /* Only those two codes may leave a result on a failed run. */
    r = new_run(p, db, &f);
    SVC_CHECK_INT(svc_run_claim(db, p, "node-a", 30, &job), APR_SUCCESS);
    SVC_CHECK(job && strcmp(job->id, r) == 0);
    SVC_CHECK(svc_run_fail_with_work(db, p, r, "node-a", "timeout", "x", "{}",
                                     (const unsigned char *)"b", 1) != APR_SUCCESS);
    svc_testdb_value(p, db, apr_psprintf(p, "DELETE FROM orgs WHERE id = '%s'", f.org));
}

SVC_TEST(store_reap_and_requeue)
{
    svc_db_t *db = svc_testdb_open(p);
    svc_run_job_t *job = NULL, *job2 = NULL;
    apr_array_header_t *leases;
    fixture_t f;
    const char *r1, *r2;
    int reaped = -1;

    if (!db || !fixture(p, db, &f)) {
        return;
    }
    r1 = new_run(p, db, &f);
    r2 = new_run(p, db, &f);
    SVC_CHECK_INT(svc_run_claim(db, p, "dead-node", 30, &job), APR_SUCCESS);
    SVC_CHECK_INT(svc_run_claim(db, p, "live-node", 30, &job2), APR_SUCCESS);
    SVC_CHECK(job && job2);
    /* Nothing has expired yet. */
    SVC_CHECK_INT(svc_run_reap(db, p, &reaped), APR_SUCCESS);
    SVC_CHECK_INT(reaped, 0);
    svc_testdb_value(p, db, apr_psprintf(p, "UPDATE runs SET lease_expires_at = now() - "
                                         "interval '1 second' WHERE id = '%s'", r1));
    SVC_CHECK_INT(svc_run_reap(db, p, &reaped), APR_SUCCESS);
    SVC_CHECK_INT(reaped, 1);
    SVC_CHECK_STR(q(p, db, apr_psprintf(p, "SELECT status || ' ' || error_code || ' ' || "
                                        "(lease_owner IS NULL) FROM runs WHERE id = '%s'", r1)),
                  "failed lost true");
    SVC_CHECK(strstr(q(p, db, apr_psprintf(p, "SELECT data FROM run_logs WHERE run_id = '%s'",
                                           r1)), "[mod_svc] lost:") != NULL);
    SVC_CHECK_INT(svc_run_renew(db, p, "dead-node", 30, &leases), APR_SUCCESS);
    SVC_CHECK_INT(leases->nelts, 0);
    SVC_CHECK_INT(svc_run_finish(db, p, r1, "dead-node", SVC_RUN_FAILED, "timeout", "late"),
                  SVC_ENOTFOUND);

    /* An orderly stop: back in the queue, started again from nothing. */
    SVC_CHECK_INT(svc_run_requeue(db, p, r2, "live-node"), APR_SUCCESS);
    SVC_CHECK_STR(q(p, db, apr_psprintf(p, "SELECT status || ' ' || (started_at IS NULL) "
                                        "FROM runs WHERE id = '%s'", r2)), "queued true");
    SVC_CHECK_INT(svc_run_requeue(db, p, r2, "live-node"), SVC_ENOTFOUND);
    SVC_CHECK_INT(svc_run_claim(db, p, "next-node", 30, &job), APR_SUCCESS);
    SVC_CHECK(job && strcmp(job->id, r2) == 0);
    SVC_CHECK_STR(q(p, db, apr_psprintf(p, "SELECT attempts FROM runs WHERE id = '%s'", r2)),
                  "2");
    /* Cancelled while it ran, then stopped: cancelled, not queued again. */
    svc_testdb_value(p, db, apr_psprintf(p, "UPDATE runs SET cancel_requested = true "
                                         "WHERE id = '%s'", r2));
    SVC_CHECK_INT(svc_run_requeue(db, p, r2, "next-node"), APR_SUCCESS);
    SVC_CHECK_STR(q(p, db, apr_psprintf(p, "SELECT status FROM runs WHERE id = '%s'", r2)),
                  "cancelled");
    svc_testdb_value(p, db, apr_psprintf(p, "DELETE FROM orgs WHERE id = '%s'", f.org));
}

int main(int argc, const char *const *argv)
{
    return svc_test_run(argc, argv);
}
