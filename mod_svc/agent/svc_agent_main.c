/*
 * svc_agent_main.c: svc-agent's configuration, its main loop and its log.
 *
 * Configuration comes from a file (SVC_AGENT_CONFIG, default
 * /etc/svc-agent/agent.conf when it exists; "name = value" lines; it must
 * not be readable by group or others, since it holds the key) and from the
 * environment, which wins: SVC_AGENT_URL, SVC_AGENT_KEY, SVC_AGENT_DIR,
 * SVC_AGENT_CA_FILE, SVC_AGENT_PORTS, SVC_AGENT_SEPARATE_DIR,
 * SVC_AGENT_HEARTBEAT, SVC_AGENT_HEALTH_TIMEOUT, SVC_AGENT_RUNNER, and for
 * tests only SVC_AGENT_METRICS_INTERVAL and SVC_AGENT_PROBE_INTERVAL
 * (seconds; 15 and 10 unless set: the service's figures assume those). Never
 * from argv, where every user of the machine could read the key. The key
 * is taken out of the environment once read, so no process the agent
 * starts inherits it.
 *
 * It runs in the foreground until SIGTERM (or SIGINT): then it stops its
 * replicas and exits 0.
 */
#include "svc_agent.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_CONFIG "/etc/svc-agent/agent.conf"
/* After the key was refused, the agent tries again this often. */
#define REFUSED_RETRY 30
#define RECONNECT     2

static void on_signal(int sig)
{
    (void)sig;
    agent_stop = 1;
}

static char *trim(char *s)
{
    char *e;

    while (*s == ' ' || *s == '\t') {
        s++;
    }
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) {
        *--e = '\0';
    }
    return s;
}

/* Splits a runner template on blanks (no quoting: each word one argument). */
static char **split_words(const char *s)
{
    char **out = calloc(64, sizeof(char *));
    char *copy = xstrdup(s), *save = NULL, *w;
    int n = 0;

    for (w = strtok_r(copy, " \t", &save); w && n < 63; w = strtok_r(NULL, " \t", &save)) {
        out[n++] = xstrdup(w);
    }
    free(copy);
    if (!n) {
        free(out);
        return NULL;
    }
    return out;
}

/* Sets one setting by name; an error message, or NULL. */
static const char *set(const char *name, const char *value)
{
    /* An empty value (the packaged file's "key =") is no value. */
    if (!*value && (strcmp(name, "url") == 0 || strcmp(name, "key") == 0
                    || strcmp(name, "dir") == 0)) {
        char **field = strcmp(name, "url") == 0 ? &conf.url
                       : strcmp(name, "key") == 0 ? &conf.key : &conf.dir;
        free(*field);
        *field = NULL;
        return NULL;
    }
    if (strcmp(name, "url") == 0) {
        free(conf.url);
        conf.url = xstrdup(value);
    }
    else if (strcmp(name, "key") == 0) {
        free(conf.key);
        conf.key = xstrdup(value);
    }
    else if (strcmp(name, "dir") == 0) {
        free(conf.dir);
        conf.dir = xstrdup(value);
    }
    else if (strcmp(name, "ca_file") == 0) {
        free(conf.ca_file);
        conf.ca_file = *value ? xstrdup(value) : NULL;
    }
    else if (strcmp(name, "separate_dir") == 0) {
        free(conf.separate_dir);
        conf.separate_dir = xstrdup(value);
    }
    else if (strcmp(name, "ports") == 0) {
        int lo, hi;
        char tail;
        if (sscanf(value, "%d-%d%c", &lo, &hi, &tail) != 2 || lo < 1024 || hi > 65535
            || hi < lo) {
            return "ports must be a range such as 20000-29999 (within 1024-65535)";
        }
        conf.port_lo = lo;
        conf.port_hi = hi;
    }
    else if (strcmp(name, "metrics_interval") == 0 || strcmp(name, "probe_interval") == 0) {
        char *end;
        long v = strtol(value, &end, 10);
        if (!*value || *end || v < 1 || v > 3600) {
            return "metrics_interval and probe_interval are seconds, 1 to 3600";
        }
        *(strcmp(name, "metrics_interval") == 0 ? &conf.metrics_interval
                                                : &conf.probe_interval) = (int)v;
    }
    else if (strcmp(name, "heartbeat") == 0 || strcmp(name, "health_timeout") == 0) {
        char *end;
        long v = strtol(value, &end, 10);
        if (!*value || *end || v < 1 || v > 3600) {
            return "heartbeat and health_timeout are seconds, 1 to 3600";
        }
        *(strcmp(name, "heartbeat") == 0 ? &conf.heartbeat : &conf.health_timeout) = (int)v;
    }
    else if (strcmp(name, "runner") == 0) {
        conf.runner = *value ? split_words(value) : NULL;
        if (conf.runner) {
            int i, cmd = 0;
            for (i = 0; conf.runner[i]; i++) {
                cmd |= strcmp(conf.runner[i], "{command}") == 0;
            }
            if (!cmd) {
                return "runner must have a {command} argument";
            }
        }
    }
    else {
        return "unknown setting";
    }
    return NULL;
}

/* Reads the configuration file; -1 (said why) when it cannot be used. */
static int read_config(const char *path, int must)
{
    struct stat st;
    char line[8192];
    FILE *f;
    int n = 0;

    if (stat(path, &st) < 0) {
        if (must || errno != ENOENT) {
            alog(AL_ERROR, "the configuration file %s cannot be read: %s", path,
                 strerror(errno));
            return -1;
        }
        return 0;
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        alog(AL_ERROR, "the configuration file %s holds the target's key: it must not be "
             "readable by group or others (chmod 0600 %s)", path, path);
        return -1;
    }
    if (st.st_uid != getuid() && st.st_uid != 0) {
        alog(AL_ERROR, "the configuration file %s must belong to the agent's user or root",
             path);
        return -1;
    }
    if (!(f = fopen(path, "re"))) {
        alog(AL_ERROR, "the configuration file %s cannot be read: %s", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        char *s = trim(line), *eq, *name, *value;
        const char *err;

        n++;
        if (!*s || *s == '#') {
            continue;
        }
        if (!(eq = strchr(s, '='))) {
            alog(AL_ERROR, "%s:%d: expected name = value", path, n);
            fclose(f);
            return -1;
        }
        *eq = '\0';
        name = trim(s);
        value = trim(eq + 1);
        if ((err = set(name, value)) != NULL) {
            alog(AL_ERROR, "%s:%d: %s: %s", path, n, name, err);
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    free(conf.config);
    conf.config = xstrdup(path);
    return 0;
}

static int read_env(void)
{
    static const char *const names[][2] = {
        { "SVC_AGENT_URL", "url" }, { "SVC_AGENT_KEY", "key" }, { "SVC_AGENT_DIR", "dir" },
        { "SVC_AGENT_CA_FILE", "ca_file" }, { "SVC_AGENT_PORTS", "ports" },
        { "SVC_AGENT_SEPARATE_DIR", "separate_dir" }, { "SVC_AGENT_HEARTBEAT", "heartbeat" },
        { "SVC_AGENT_HEALTH_TIMEOUT", "health_timeout" }, { "SVC_AGENT_RUNNER", "runner" },
        { "SVC_AGENT_METRICS_INTERVAL", "metrics_interval" },
        { "SVC_AGENT_PROBE_INTERVAL", "probe_interval" },
    };
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = getenv(names[i][0]), *err;
        if (v && (err = set(names[i][1], v)) != NULL) {
            alog(AL_ERROR, "%s: %s", names[i][0], err);
            return -1;
        }
    }
    /* Nothing the agent starts inherits the key. */
    unsetenv("SVC_AGENT_KEY");
    return 0;
}

int conf_reload_key(void)
{
    char *before = conf.key ? xstrdup(conf.key) : NULL;
    int changed;

    if (conf.config) {
        read_config(conf.config, 0);
    }
    changed = before && conf.key && strcmp(before, conf.key) != 0;
    free(before);
    return changed;
}

static int url_ok(const char *u)
{
    const char *host;

    if (strncmp(u, "https://", 8) == 0) {
        return 1;
    }
    /* Plain HTTP only to this machine: the key never crosses a network
     * in the clear. */
    if (strncmp(u, "http://", 7) != 0) {
        return 0;
    }
    host = u + 7;
    return strncmp(host, "127.0.0.1", 9) == 0 || strncmp(host, "localhost", 9) == 0
           || strncmp(host, "[::1]", 5) == 0;
}

static int configure(void)
{
    const char *path = getenv("SVC_AGENT_CONFIG");
    size_t n;

    conf.port_lo = 20000;
    conf.port_hi = 29999;
    conf.heartbeat = 15;
    conf.health_timeout = 60;
    conf.metrics_interval = 15;
    conf.probe_interval = 10;
    if (read_config(path ? path : DEFAULT_CONFIG, path != NULL) < 0 || read_env() < 0) {
        return -1;
    }
    if (!conf.url || !conf.key || !conf.dir) {
        alog(AL_ERROR, "the service's URL, the target's key and the data directory are "
             "needed: url, key and dir in %s, or SVC_AGENT_URL, SVC_AGENT_KEY and "
             "SVC_AGENT_DIR", path ? path : DEFAULT_CONFIG);
        return -1;
    }
    if (!url_ok(conf.url)) {
        alog(AL_ERROR, "the service's URL must be https:// (http:// only to this machine)");
        return -1;
    }
    n = strlen(conf.url);
    while (n && conf.url[n - 1] == '/') {
        conf.url[--n] = '\0';
    }
    if (strncmp(conf.key, "svc_dek_", 8) != 0) {
        alog(AL_ERROR, "the key is not a deploy target's key (svc_dek_...)");
        return -1;
    }
    if (conf.dir[0] != '/') {
        alog(AL_ERROR, "the data directory must be an absolute path");
        return -1;
    }
    if (mkdirs(conf.dir, 0700) < 0 || chmod(conf.dir, 0700) < 0) {
        alog(AL_ERROR, "the data directory %s cannot be made private: %s", conf.dir,
             strerror(errno));
        return -1;
    }
    if (!conf.separate_dir) {
        conf.separate_dir = xprintf("%s/separated", conf.dir);
    }
    return 0;
}

static void heartbeat(void)
{
    char host[256];
    json_t *body;
    http_reply_t r;
    char *text;

    if (gethostname(host, sizeof(host)) != 0) {
        strcpy(host, "unknown");
    }
    host[sizeof(host) - 1] = '\0';
    body = json_pack("{s:s,s:s,s:o}", "version", SVC_VERSION, "hostname", host,
                     "workloads", work_workloads());
    text = json_dumps(body, JSON_COMPACT);
    if (http_call("POST", "/api/agent/heartbeat", text, &r) == 0 && r.status != 200
        && r.status != 401) {
        alog(AL_WARNING, "heartbeat: the service answered %ld", r.status);
    }
    http_reply_free(&r);
    free(text);
    json_decref(body);
}

/* What the target should run now; the event id its stream goes on from.
 * 0, 401 (the key was refused), or -1. */
static int sync_view(long long *pafter)
{
    http_reply_t r;
    json_error_t jerr;
    json_t *view;
    int rc = -1;

    if (http_call("GET", "/api/agent/deployments", NULL, &r) < 0) {
        return -1;
    }
    if (r.status == 401) {
        rc = 401;
    }
    else if (r.status != 200 || !(view = json_loads(r.body, 0, &jerr))) {
        alog(AL_WARNING, "the service answered %ld to GET /api/agent/deployments", r.status);
    }
    else {
        *pafter = json_integer_value(json_object_get(view, "last_event_id"));
        work_sync(view);
        json_decref(view);
        rc = 0;
    }
    http_reply_free(&r);
    return rc;
}

/* Hands an event's data to fn, parsed; data that is not JSON is ignored. */
static void take_json(const sse_event_t *ev, void (*fn)(const json_t *))
{
    json_error_t jerr;
    json_t *data = json_loads(ev->data, 0, &jerr);

    if (!data) {
        alog(AL_WARNING, "event %lld: its data is not JSON; ignored", ev->id);
        return;
    }
    fn(data);
    json_decref(data);
}

static void on_event(const sse_event_t *ev, void *baton)
{
    long long *plast = baton;

    if (strcmp(ev->kind, "agent.work") == 0) {
        take_json(ev, work_event);
    }
    else if (strcmp(ev->kind, "deployment.logs_requested") == 0) {
        take_json(ev, tel_logs_requested);
    }
    else if (strcmp(ev->kind, "target.key_rotated") == 0) {
        alog(AL_INFO, "the target's key was rotated; this agent's key is checked again");
    }
    else if (strcmp(ev->kind, "target.removed") == 0) {
        alog(AL_WARNING, "the target was removed from the service");
    }
    if (ev->id > *plast) {
        *plast = ev->id;
    }
}

static void refused(void)
{
    alog(AL_ERROR, "the service refused this agent's key (401): it was rotated, or the "
         "target was removed. Put the target's current key in %s (or SVC_AGENT_KEY) and "
         "restart the agent; trying again in %d s", conf.config ? conf.config :
         "the configuration", REFUSED_RETRY);
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    stream_t *stream = NULL;
    time_t next_connect = 0, next_beat = 0, now;
    long long last = -1;
    int synced = 0;

    if (argc > 1) {
        if (argc == 2 && strcmp(argv[1], "--version") == 0) {
            printf("svc-agent %s\n", SVC_VERSION);
            return 0;
        }
        fprintf(stderr, "svc-agent takes no arguments: its settings come from its "
                "configuration file (SVC_AGENT_CONFIG, default %s) or the environment "
                "(SVC_AGENT_URL, SVC_AGENT_KEY, SVC_AGENT_DIR), never from the command line "
                "(docs/operations.md)\n", DEFAULT_CONFIG);
        return 2;
    }
    umask(077);
    if (configure() < 0) {
        return 1;
    }
    if (http_init() < 0) {
        alog(AL_ERROR, "libcurl cannot start");
        return 1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    alog(AL_INFO, "svc-agent %s starting: service %s, data in %s", SVC_VERSION, conf.url,
         conf.dir);
    done_load();
    work_restore();

    while (!agent_stop) {
        now = time(NULL);
        if (!stream && now >= next_connect) {
            int rc = synced ? 0 : sync_view(&last);
            if (rc == 401) {
                refused();
                conf_reload_key();
                next_connect = now + REFUSED_RETRY;
            }
            else if (rc < 0) {
                next_connect = now + RECONNECT;
            }
            else {
                synced = 1;
                stream = stream_open(last);
                next_beat = 0;
            }
        }
        if (stream) {
            int rc = stream_pump(stream, 500, on_event, &last);
            if (rc) {
                stream_close(stream);
                stream = NULL;
                if (rc == 401) {
                    refused();
                    conf_reload_key();
                    synced = 0;
                    next_connect = time(NULL) + REFUSED_RETRY;
                }
                else {
                    if (rc < 0) {
                        alog(AL_WARNING, "the work stream was cut; reconnecting after event "
                             "%lld", last);
                    }
                    next_connect = time(NULL) + RECONNECT;
                }
            }
        }
        else {
            usleep(500 * 1000);
        }
        work_supervise();
        if (synced) {
            work_telemetry();
        }
        done_retry();
        now = time(NULL);
        if (synced && stream && now >= next_beat) {
            heartbeat();
            next_beat = now + conf.heartbeat;
        }
    }
    alog(AL_INFO, "stopping: its replicas are stopped");
    if (stream) {
        stream_close(stream);
    }
    work_shutdown();
    return 0;
}
