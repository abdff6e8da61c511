/*
 * svc_agent_telemetry.c: what svc-agent tells the service of its workloads
 * besides their status (docs/api/deployments.md, "Telemetry"): resource
 * samples of each replica, taken from /proc; the result and latency of
 * each health probe; and, when a member asks, the last lines of each
 * replica's output.
 *
 * Samples and probes wait in memory and go in one batch
 * (POST /api/agent/telemetry) every metrics interval; a batch the service
 * did not take is sent again with the next one, up to a bound, the oldest
 * dropped first. Each figure says how long ago it was taken (ago_ms, from
 * the monotonic clock), never when: the service puts its own time on it.
 *
 * A batch the service took but whose answer was lost (a timeout, a reset, a
 * proxy's 502 after the commit) is sent again too, so each figure carries
 * its identity: the agent's boot (random, chosen at the first figure) and
 * a number (seq), from 0 up in the order the figures are taken. The
 * service keeps the highest number it took of a boot and skips a figure at
 * or below it. That holds because a batch is every figure pending, in
 * order: dropping the oldest at the bound, or a deployment's on
 * tel_forget, removes numbers that are never sent, never reorders them.
 * A service from before the numbering refuses it (400, `boot` an unknown
 * field): the agent then goes on unnumbered, as an older agent would.
 *
 * A replica's figures are those of its process and every process under it
 * (bubblewrap, the shell, the server and its workers): CPU seconds (user
 * and system, with its reaped children's), resident memory, and open file
 * descriptors where /proc lets the agent count them.
 */
#define _GNU_SOURCE
#include "svc_agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* Most figures of one kind kept for one deployment while unsent. */
#define PENDING_MAX      2000
/* Most bytes of a replica's log read for an upload (its end). */
#define LOG_TAIL_MAX     (256 * 1024)
#define LOGS_LINES_MAX   5000
/* An upload the service did not take is tried again this many times. */
#define UPLOAD_TRIES     5

static json_t *pending;         /* {dep_id: {metrics: [...], probes: [...]}} */
/* This run's boot (hex; empty: no randomness, figures go unnumbered as an
 * older agent's did) and the number of its next figure. */
static char boot[33];
static json_int_t next_seq;
static int boot_tried;

typedef struct upload {
    char *dep_id;
    char *request_id;
    int lines;
    int tries;
    struct upload *next;
} upload_t;

static upload_t *uploads;

long long tel_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static json_t *list_of(const char *dep_id, const char *kind)
{
    json_t *d, *l;

    if (!pending) {
        pending = json_object();
    }
    if (!(d = json_object_get(pending, dep_id))) {
        d = json_pack("{s:[],s:[]}", "metrics", "probes");
        json_object_set_new(pending, dep_id, d);
    }
    l = json_object_get(d, kind);
    while (json_array_size(l) >= PENDING_MAX) {
        json_array_remove(l, 0);
    }
    return l;
}

/* Numbers a new figure of this boot (chosen at the first one). */
static void number(json_t *item)
{
    if (!boot_tried) {
        unsigned char raw[16];
        size_t i;
        boot_tried = 1;
        if (getrandom(raw, sizeof(raw), 0) == (ssize_t)sizeof(raw)) {
            for (i = 0; i < sizeof(raw); i++) {
                snprintf(boot + 2 * i, 3, "%02x", raw[i]);
            }
        }
        else {
            alog(AL_WARNING, "telemetry: no random boot id (%s): a batch sent again after "
                 "a lost answer may be counted twice", strerror(errno));
        }
    }
    if (boot[0]) {
        json_object_set_new(item, "seq", json_integer(next_seq++));
    }
}

/* ------------------------------------------------------------------------
 * Samples from /proc
 */

typedef struct {
    int pid, ppid;
    double cpu;
    long long rss;
} proc_t;

/* Reads /proc/<pid>/stat; 0 when it was read. */
static int proc_stat(int pid, proc_t *out)
{
    char path[64], buf[1024], *p;
    unsigned long long f[64];
    int fd, n, i;
    ssize_t len;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        return -1;
    }
    len = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (len <= 0) {
        return -1;
    }
    buf[len] = '\0';
    /* The command's name, in parentheses, may hold anything: the fields
     * start after the last ')'. */
    if (!(p = strrchr(buf, ')'))) {
        return -1;
    }
    p += 2;
    /* Field 3 is the state (a letter); the numbers from field 4 on. */
    if (*p) {
        p++;
    }
    for (n = 0; n < 30; n++) {
        char *end;
        while (*p == ' ') {
            p++;
        }
        f[n] = strtoull(p, &end, 10);
        if (end == p) {
            break;
        }
        p = end;
    }
    if (n < 22) {
        return -1;
    }
    /* f[0] is field 4 (ppid); utime 14, stime 15, cutime 16, cstime 17,
     * rss 24. */
    out->pid = pid;
    out->ppid = (int)f[0];
    {
        long tck = sysconf(_SC_CLK_TCK);
        unsigned long long t = f[10] + f[11] + f[12] + f[13];
        out->cpu = (double)t / (double)(tck > 0 ? tck : 100);
    }
    i = 20;
    out->rss = (long long)f[i] * sysconf(_SC_PAGESIZE);
    return 0;
}

static int count_fds(int pid)
{
    char path[64];
    struct dirent *de;
    DIR *dh;
    int n = 0;

    snprintf(path, sizeof(path), "/proc/%d/fd", pid);
    if (!(dh = opendir(path))) {
        return 0;
    }
    while ((de = readdir(dh)) != NULL) {
        n += de->d_name[0] != '.';
    }
    closedir(dh);
    return n;
}

/* The figures of root and every process under it. */
static void tree_usage(int root, double *pcpu, long long *prss, int *pfds)
{
    proc_t *all = NULL;
    size_t n = 0, cap = 0, i;
    struct dirent *de;
    DIR *dh = opendir("/proc");
    int *mine, changed = 1;

    *pcpu = 0;
    *prss = 0;
    *pfds = 0;
    while (dh && (de = readdir(dh)) != NULL) {
        int pid = atoi(de->d_name);
        proc_t pr;
        if (pid <= 0 || proc_stat(pid, &pr) < 0) {
            continue;
        }
        if (n == cap) {
            proc_t *more = realloc(all, (cap = cap ? cap * 2 : 256) * sizeof(*all));
            if (!more) {
                break;
            }
            all = more;
        }
        all[n++] = pr;
    }
    if (dh) {
        closedir(dh);
    }
    mine = calloc(n ? n : 1, sizeof(int));
    for (i = 0; i < n; i++) {
        mine[i] = all[i].pid == root;
    }
    /* Under the root: until nothing more is found (trees are shallow). */
    while (changed) {
        changed = 0;
        for (i = 0; i < n; i++) {
            size_t j;
            if (mine[i]) {
                continue;
            }
            for (j = 0; j < n; j++) {
                if (mine[j] && all[j].pid == all[i].ppid) {
                    mine[i] = 1;
                    changed = 1;
                    break;
                }
            }
        }
    }
    for (i = 0; i < n; i++) {
        if (mine[i]) {
            *pcpu += all[i].cpu;
            *prss += all[i].rss;
            *pfds += count_fds(all[i].pid);
        }
    }
    free(mine);
    free(all);
}

void tel_sample(const char *dep_id, int replica, int pid, int restarts)
{
    double cpu = 0;
    long long rss = 0;
    int fds = 0;
    json_t *m;

    if (pid > 0) {
        tree_usage(pid, &cpu, &rss, &fds);
    }
    m = json_pack("{s:i,s:I,s:f,s:I,s:i,s:i}", "replica", replica, "at",
                  (json_int_t)tel_now_ms(), "cpu_seconds", cpu, "rss_bytes", (json_int_t)rss,
                  "fds", fds, "restarts", restarts);
    number(m);
    json_array_append_new(list_of(dep_id, "metrics"), m);
}

void tel_probe(const char *dep_id, int replica, int ok, int latency_ms)
{
    json_t *p = json_pack("{s:i,s:I,s:b}", "replica", replica, "at",
                          (json_int_t)tel_now_ms(), "ok", ok);

    json_object_set_new(p, "latency_ms", latency_ms >= 0 ? json_integer(latency_ms)
                                                         : json_null());
    number(p);
    json_array_append_new(list_of(dep_id, "probes"), p);
}

/* The pending figures as sent: "at" becomes how long ago. */
static json_t *batch(long long now)
{
    json_t *out = json_object(), *d;
    const char *id;

    json_object_foreach(pending, id, d) {
        json_t *o = json_pack("{s:[],s:[]}", "metrics", "probes");
        const char *kind;
        json_t *list;
        json_object_foreach(d, kind, list) {
            size_t i;
            json_t *item;
            json_array_foreach(list, i, item) {
                json_t *c = json_deep_copy(item);
                long long at = json_integer_value(json_object_get(item, "at"));
                json_object_del(c, "at");
                json_object_set_new(c, "ago_ms", json_integer(now > at ? now - at : 0));
                json_array_append_new(json_object_get(o, kind), c);
            }
        }
        json_object_set_new(out, id, o);
    }
    return out;
}

/* ------------------------------------------------------------------------
 * Logs
 */

static char *b64url(const unsigned char *s, size_t n)
{
    static const char a[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char *out = malloc(n / 3 * 4 + 5), *o = out;
    size_t i;

    if (!out) {
        return NULL;
    }
    for (i = 0; i + 2 < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
        *o++ = a[v >> 18];
        *o++ = a[(v >> 12) & 63];
        *o++ = a[(v >> 6) & 63];
        *o++ = a[v & 63];
    }
    if (n - i == 1) {
        unsigned v = (unsigned)s[i] << 16;
        *o++ = a[v >> 18];
        *o++ = a[(v >> 12) & 63];
    }
    else if (n - i == 2) {
        unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8;
        *o++ = a[v >> 18];
        *o++ = a[(v >> 12) & 63];
        *o++ = a[(v >> 6) & 63];
    }
    *o = '\0';
    return out;
}

/* The last `lines` lines of the file (at most LOG_TAIL_MAX bytes), with
 * the key masked: malloc'd, its length in *plen; NULL when unreadable. */
static char *log_tail(const char *path, int lines, size_t *plen)
{
    struct stat st;
    char *buf, *k, *start;
    off_t from;
    ssize_t got;
    size_t n, klen = conf.key ? strlen(conf.key) : 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), count = 0;

    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0) {
            close(fd);
        }
        return NULL;
    }
    from = st.st_size > LOG_TAIL_MAX ? st.st_size - LOG_TAIL_MAX : 0;
    buf = malloc(LOG_TAIL_MAX + 1);
    got = buf ? pread(fd, buf, LOG_TAIL_MAX, from) : -1;
    close(fd);
    if (got < 0) {
        free(buf);
        return NULL;
    }
    n = (size_t)got;
    buf[n] = '\0';
    /* The key never leaves the machine, whatever a workload printed. */
    while (klen >= 8 && (k = memmem(buf, n, conf.key, klen)) != NULL) {
        static const char mark[] = "[REDACTED]";
        memcpy(k, mark, sizeof(mark) - 1);
        memmove(k + sizeof(mark) - 1, k + klen, n - (size_t)(k - buf) - klen);
        n -= klen - (sizeof(mark) - 1);
        buf[n] = '\0';
    }
    start = buf + n;
    if (start > buf && start[-1] == '\n') {
        start--;
    }
    while (start > buf) {
        if (start[-1] == '\n' && ++count >= lines) {
            break;
        }
        start--;
    }
    /* A first line cut by the byte bound is dropped, unless it is all. */
    if (start == buf && from > 0) {
        char *nl = memchr(buf, '\n', n);
        if (nl && nl + 1 < buf + n) {
            start = nl + 1;
        }
    }
    n -= (size_t)(start - buf);
    memmove(buf, start, n);
    buf[n] = '\0';
    *plen = n;
    return buf;
}

/* Uploads one request's logs; 0 when the service has them (or refused
 * them for good: a 4xx), -1 to try again. */
static int upload_send(const upload_t *u)
{
    json_t *reps = json_object(), *body;
    char *text, *path;
    http_reply_t r;
    int i, rc = -1;

    for (i = 0; i < AGENT_MAX_REPLICAS; i++) {
        char *file = xprintf("%s/deployments/%s/logs/replica-%d.log", conf.dir, u->dep_id, i);
        size_t len = 0;
        char *tail = log_tail(file, u->lines, &len);
        free(file);
        if (tail) {
            char key[12], *enc = b64url((const unsigned char *)tail, len);
            snprintf(key, sizeof(key), "%d", i);
            if (enc) {
                json_object_set_new(reps, key, json_string(enc));
            }
            free(enc);
            free(tail);
        }
    }
    body = json_pack("{s:o}", "replicas", reps);
    text = json_dumps(body, JSON_COMPACT);
    path = xprintf("/api/agent/deployments/%s/logs/%s", u->dep_id, u->request_id);
    if (http_call("POST", path, text, &r) == 0) {
        if (r.status == 200 || (r.status >= 400 && r.status < 500)) {
            if (r.status != 200) {
                alog(AL_WARNING, "logs of deployment %s (%s): the service answered %ld; not "
                     "sent again", u->dep_id, u->request_id, r.status);
            }
            else {
                alog(AL_INFO, "logs of deployment %s uploaded (%s)", u->dep_id,
                     u->request_id);
            }
            rc = 0;
        }
    }
    http_reply_free(&r);
    free(path);
    free(text);
    json_decref(body);
    return rc;
}

static int word_ok(const char *s, const char *prefix)
{
    size_t n = s ? strlen(s) : 0, p = strlen(prefix);

    return n > p + 8 && n <= 64 && strncmp(s, prefix, p) == 0
           && strspn(s + p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
              == n - p;
}

void tel_logs_requested(const json_t *data)
{
    const char *dep = json_string_value(json_object_get(data, "deployment_id"));
    const char *req = json_string_value(json_object_get(data, "log_request_id"));
    json_int_t lines = json_integer_value(json_object_get(data, "lines"));
    upload_t *u;

    if (!word_ok(dep, "dep_") || !word_ok(req, "lgr_")) {
        alog(AL_WARNING, "a request for logs of an unknown shape: ignored");
        return;
    }
    u = calloc(1, sizeof(*u));
    if (!u) {
        return;
    }
    u->dep_id = xstrdup(dep);
    u->request_id = xstrdup(req);
    u->lines = lines >= 1 && lines <= LOGS_LINES_MAX ? (int)lines : 500;
    if (upload_send(u) == 0) {
        free(u->dep_id);
        free(u->request_id);
        free(u);
        return;
    }
    u->tries = 1;
    u->next = uploads;
    uploads = u;
}

/* ------------------------------------------------------------------------
 * Sending
 */

/* Posts every pending figure in one batch; http_call's result. */
static int post_pending(http_reply_t *r)
{
    json_t *body = json_pack("{s:o}", "deployments", batch(tel_now_ms()));
    char *text;
    int rc;

    if (boot[0]) {
        json_object_set_new(body, "boot", json_string(boot));
    }
    text = json_dumps(body, JSON_COMPACT);
    rc = http_call("POST", "/api/agent/telemetry", text, r);
    free(text);
    json_decref(body);
    return rc;
}

/* Whether a 400 says the service does not know the figures' numbering (a
 * service from before it, which refuses unknown members): its problem
 * document names `boot`, or a figure's `seq`, an unknown field. */
static int numbering_unknown(const http_reply_t *r)
{
    json_t *doc, *e;
    size_t i;
    int yes = 0;

    if (r->status != 400 || !r->body || !(doc = json_loadb(r->body, r->len, 0, NULL))) {
        return 0;
    }
    json_array_foreach(json_object_get(doc, "errors"), i, e) {
        const char *field = json_string_value(json_object_get(e, "field"));
        const char *code = json_string_value(json_object_get(e, "code"));
        size_t n = field ? strlen(field) : 0;
        if (code && strcmp(code, "unknown_field") == 0 && field
            && (strcmp(field, "boot") == 0 || (n > 4 && strcmp(field + n - 4, ".seq") == 0))) {
            yes = 1;
        }
    }
    json_decref(doc);
    return yes;
}

/* From now on the figures go unnumbered, as an older agent's (boot_tried
 * stays set, so no boot is chosen again): those pending lose their seq. */
static void unnumber(void)
{
    json_t *d, *list, *item;
    const char *id, *kind;
    size_t i;

    boot[0] = '\0';
    json_object_foreach(pending, id, d) {
        json_object_foreach(d, kind, list) {
            json_array_foreach(list, i, item) {
                json_object_del(item, "seq");
            }
        }
    }
}

void tel_flush(void)
{
    upload_t **pp = &uploads;
    http_reply_t r;
    int rc;

    while (*pp) {
        upload_t *u = *pp;
        if (upload_send(u) == 0 || ++u->tries >= UPLOAD_TRIES) {
            *pp = u->next;
            free(u->dep_id);
            free(u->request_id);
            free(u);
        }
        else {
            pp = &u->next;
        }
    }
    if (!pending || !json_object_size(pending)) {
        return;
    }
    rc = post_pending(&r);
    /* Agents are upgraded on their own schedule, often before the service:
     * rather than lose every figure until it is, the batch goes again at
     * once without numbers, and so does every later one (this happens, and
     * is logged, once a run: the boot is gone). */
    if (rc == 0 && boot[0] && numbering_unknown(&r)) {
        alog(AL_WARNING, "telemetry: the service does not know boot and seq (it predates "
             "them): figures are sent unnumbered from now on, so a batch sent again after a "
             "lost answer may be counted twice; upgrade the service");
        unnumber();
        http_reply_free(&r);
        rc = post_pending(&r);
    }
    if (rc == 0) {
        if (r.status == 200 || (r.status >= 400 && r.status < 500 && r.status != 401
                                && r.status != 429)) {
            /* Taken, or never to be taken as it is: not sent again. */
            if (r.status != 200) {
                alog(AL_WARNING, "telemetry: the service answered %ld; the batch is dropped",
                     r.status);
            }
            json_decref(pending);
            pending = NULL;
        }
    }
    http_reply_free(&r);
}

void tel_forget(const char *dep_id)
{
    if (pending) {
        json_object_del(pending, dep_id);
    }
}
