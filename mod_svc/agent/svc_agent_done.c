/*
 * svc_agent_done.c: the record of the work svc-agent has done (work.json
 * in its data directory), kept across restarts so that a piece of work
 * delivered twice is done once, and the reports of that work to the
 * service, sent again until the service has them.
 */
#include "svc_agent.h"

#include <stdlib.h>
#include <string.h>

/* Outcomes remembered; older ones are forgotten (the service has them). */
#define DONE_KEEP 2000
#define RETRY_EVERY 5

/* ------------------------------------------------------------------------
 * The work done
 */

static json_t *done;            /* work_id -> {outcome, error?, workload?, reported, at} */
static time_t next_retry;

static char *done_path(void)
{
    return xprintf("%s/work.json", conf.dir);
}

void done_load(void)
{
    char *path = done_path();

    done = read_json(path);
    if (!json_is_object(done)) {
        json_decref(done);
        done = json_object();
    }
    free(path);
}

static void done_save(void)
{
    char *path = done_path();

    /* Bounded: the oldest go first (the service has their reports). */
    while (json_object_size(done) > DONE_KEEP) {
        const char *k, *oldest = NULL;
        json_int_t at, min = 0;
        json_t *v;
        json_object_foreach(done, k, v) {
            at = json_integer_value(json_object_get(v, "at"));
            if (json_is_true(json_object_get(v, "reported")) && (!oldest || at < min)) {
                oldest = k;
                min = at;
            }
        }
        if (!oldest) {
            break;
        }
        json_object_del(done, oldest);
    }
    if (write_json(path, done) < 0) {
        alog(AL_ERROR, "%s cannot be written: the work done is not remembered", path);
    }
    free(path);
}

json_t *done_get(const char *work_id)
{
    return json_object_get(done, work_id);
}

void done_put(const char *work_id, json_t *report)
{
    json_object_set_new(report, "reported", json_false());
    json_object_set_new(report, "at", json_integer((json_int_t)time(NULL)));
    json_object_set_new(done, work_id, report);
    done_save();
    if (report_send(work_id, report) == 0) {
        done_reported(work_id);
    }
}

void done_reported(const char *work_id)
{
    json_t *v = json_object_get(done, work_id);

    if (v) {
        json_object_set_new(v, "reported", json_true());
        done_save();
    }
}

int report_send(const char *work_id, const json_t *report)
{
    json_t *body = json_pack("{s:O}", "outcome", json_object_get(report, "outcome"));
    char *path = xprintf("/api/agent/work/%s", work_id), *text;
    http_reply_t r;
    int rc = -1;

    if (json_object_get(report, "error")) {
        json_object_set(body, "error", json_object_get(report, "error"));
    }
    if (json_object_get(report, "workload")) {
        json_object_set(body, "workload", json_object_get(report, "workload"));
    }
    text = json_dumps(body, JSON_COMPACT);
    if (http_call("POST", path, text, &r) == 0) {
        if (r.status == 200) {
            rc = 0;
        }
        else if (r.status == 404 || r.status == 400) {
            /* The service will never take it: no use sending it again. */
            alog(AL_WARNING, "work %s: the service refused its report (%ld)", work_id,
                 r.status);
            rc = 0;
        }
    }
    http_reply_free(&r);
    free(text);
    free(path);
    json_decref(body);
    return rc;
}

void done_retry(void)
{
    const char *k;
    json_t *v;
    time_t now = time(NULL);
    int dirty = 0;

    if (now < next_retry) {
        return;
    }
    next_retry = now + RETRY_EVERY;
    json_object_foreach(done, k, v) {
        if (!json_is_true(json_object_get(v, "reported")) && report_send(k, v) == 0) {
            json_object_set_new(v, "reported", json_true());
            dirty = 1;
        }
    }
    if (dirty) {
        done_save();
    }
}
