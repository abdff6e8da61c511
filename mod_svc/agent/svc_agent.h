/*
 * svc_agent.h: svc-agent, the deploy agent that runs on a customer's
 * machine (a deploy target) and carries out its deployments
 * (docs/api/deployments.md, "The agent"; docs/operations.md, "Deploy
 * agents").
 *
 * A program of its own: libcurl, jansson and libc, nothing of the service.
 * It connects out to the service only, with its target's key: it reads
 * what the target should run (GET /api/agent/deployments), then its work
 * as an event stream (GET /api/agent/work, resumed with Last-Event-ID),
 * and answers with POSTs (a piece of work done or failed; heartbeats with
 * what runs). Each replica of a workload is a process of its own on a port
 * of its own, in a bubblewrap sandbox with the network (its own PID
 * namespace, its checkout the only writable place, the system read-only),
 * restarted with backoff when it dies and health-checked on the plan's
 * path.
 *
 *   svc_agent_main.c  configuration, the main loop, signals
 *   svc_agent_work.c  deployments: checkout, replicas, health, teardown, hand-over
 *   svc_agent_done.c  the work it has done, and its reports
 *   svc_agent_telemetry.c  samples, probes and logs sent to the service
 *   svc_agent_http.c  the service: requests, downloads, the event stream
 *   svc_agent_util.c  files, directories, processes
 *   svc_agent_log.c   settings, the log, strings
 * (each calls only those below it).
 */
#ifndef SVC_AGENT_H
#define SVC_AGENT_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#ifndef SVC_VERSION
#define SVC_VERSION "0.0.0"
#endif

#define AGENT_MAX_REPLICAS 10

/* ------------------------------------------------------------------------
 * Configuration (svc_agent_main.c)
 */

typedef struct {
    char *url;              /* the service, without a trailing slash */
    char *key;              /* the target's enrollment key (svc_dek_...) */
    char *dir;              /* the data directory (0700) */
    char *config;           /* the configuration file read, or NULL */
    char *ca_file;          /* CA bundle for the service's certificate, or NULL */
    char *separate_dir;     /* where handed-over workloads go */
    int port_lo, port_hi;   /* replicas' ports are taken from this range */
    int heartbeat;          /* seconds between heartbeats */
    int health_timeout;     /* seconds a deployment may take to become healthy */
    int metrics_interval;   /* seconds between resource samples (and their batches) */
    int probe_interval;     /* seconds between health probes */
    char **runner;          /* NULL: bubblewrap; else an argv template (podman...) */
} agent_conf_t;

extern agent_conf_t conf;
extern volatile sig_atomic_t agent_stop;

/* The log: stderr, one line each, with the time; the key never appears. */
enum { AL_ERROR, AL_WARNING, AL_INFO };
void alog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reads the key again from the configuration file (after a 401). */
int conf_reload_key(void);

/* ------------------------------------------------------------------------
 * The service (svc_agent_http.c)
 */

int http_init(void);

/* An answer: status (0: no answer at all) and body (malloc'd, NUL-ended). */
typedef struct {
    long status;
    char *body;
    size_t len;
} http_reply_t;

void http_reply_free(http_reply_t *r);

/* A request to the service's path; body NULL or JSON text. 0 when an
 * answer came (whatever its status), -1 on a transport failure. */
int http_call(const char *method, const char *path, const char *body, http_reply_t *out);

/* Downloads path into file (0600); its status in *pstatus. 0 on success. */
int http_download(const char *path, const char *file, long *pstatus);

/* One server-sent event. */
typedef struct {
    long long id;
    char *kind;
    char *data;
} sse_event_t;

typedef struct stream stream_t;

/* Opens the work stream after `after`. */
stream_t *stream_open(long long after);
/*
 * Moves the stream on for up to wait_ms; events that arrived are handed
 * to fn. Returns 0 while it is open; else its end: 1 ended (reconnect),
 * 401 the key was refused, -1 a transport failure.
 */
int stream_pump(stream_t *s, int wait_ms, void (*fn)(const sse_event_t *ev, void *baton),
                void *baton);
void stream_close(stream_t *s);

/* ------------------------------------------------------------------------
 * Deployments (svc_agent_work.c)
 */

/* Brings back what ran before a restart (from the data directory). */
void work_restore(void);
/* What the service says the target should run (GET /api/agent/deployments). */
void work_sync(const json_t *view);
/* One agent.work event. */
void work_event(const json_t *work);
/* Reaps, restarts, health-checks, finishes pending work, retries reports. */
void work_supervise(void);
/* Probes and samples the replicas when due, and sends them (telemetry). */
void work_telemetry(void);
/* Every deployment's replicas, for a heartbeat ({dep_id: {replicas: [...]}}). */
json_t *work_workloads(void);
/* Stops every replica (the agent is stopping). */
void work_shutdown(void);

/* ------------------------------------------------------------------------
 * Health probes (svc_agent_probe.c)
 */

typedef struct {
    int port;
    const char *path;           /* the plan's health path; NULL or "": "/" */
    int ok;                     /* out: answered 2xx or 3xx */
    int ms;                     /* out: how long it took; -1: not probed */
} probe_t;

/* Probes every one of probes[0..n) at once: returns when each has answered
 * or timed out (2 s), or the agent is stopping (those not done by then are
 * not probed: ms -1, which says nothing of the replica). */
void probe_health(probe_t *probes, int n);

/* ------------------------------------------------------------------------
 * Telemetry (svc_agent_telemetry.c)
 */

/* Milliseconds of the monotonic clock. */
long long tel_now_ms(void);
/* A replica's resources now (pid 0: it does not run), kept for the batch. */
void tel_sample(const char *dep_id, int replica, int pid, int restarts);
/* A health probe's result; latency_ms -1: no answer. */
void tel_probe(const char *dep_id, int replica, int ok, int latency_ms);
/* Sends what waits: log uploads to try again, then the batch. */
void tel_flush(void);
/* Forgets what waits of a deployment (torn down, handed over). */
void tel_forget(const char *dep_id);
/* One deployment.logs_requested event: uploads the last lines of each
 * replica's output (tried again by tel_flush when it cannot be sent). */
void tel_logs_requested(const json_t *data);

/* ------------------------------------------------------------------------
 * Utilities (svc_agent_util.c)
 */

char *xstrdup(const char *s);
char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int mkdirs(const char *path, mode_t mode);
int rmtree(const char *path);
int write_file(const char *path, const char *data, size_t len, mode_t mode);
char *read_file(const char *path, size_t max, size_t *plen);
json_t *read_json(const char *path);
int write_json(const char *path, const json_t *v);
/* Runs argv (argv[0] on PATH) with a clean environment and waits: its exit
 * status, or -1 when it could not run. Output goes to the log. */
int run_wait(const char *const argv[], const char *cwd);

/* The work the agent did, remembered in the data directory across restarts
 * (work.json): each piece of work's outcome and whether the service has it. */
void done_load(void);
json_t *done_get(const char *work_id);
void done_put(const char *work_id, json_t *report);
void done_reported(const char *work_id);
/* Sends what the service has not acknowledged yet (every few seconds). */
void done_retry(void);
/* Reports one piece of work (POST /api/agent/work/:id); 0 when acknowledged. */
int report_send(const char *work_id, const json_t *report);

#endif /* SVC_AGENT_H */
