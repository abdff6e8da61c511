/*
 * svc_agent_probe.c: health probes of replicas, all at once.
 *
 * A probe is an HTTP GET of the plan's health path on 127.0.0.1:PORT,
 * healthy on 2xx or 3xx, given PROBE_TIMEOUT_MS. The agent is one thread
 * that also reads its work stream and sends its heartbeats: probed one
 * after the other, ten replicas that accept and never answer held it for
 * 20 s, and a few such deployments kept it from its heartbeat long enough
 * for the service to call the target offline. Probed together (libcurl's
 * multi interface), a round takes as long as its slowest probe, at most
 * PROBE_TIMEOUT_MS, however many replicas it covers.
 */
#define _GNU_SOURCE
#include "svc_agent.h"

#include <curl/curl.h>
#include <stdlib.h>

#define PROBE_TIMEOUT_MS 2000L

static size_t sink(char *data, size_t size, size_t n, void *baton)
{
    (void)data;
    (void)baton;
    return size * n;
}

/* One probe's handle, or NULL. */
static CURL *probe_handle(probe_t *p, char **purl)
{
    CURL *c = curl_easy_init();

    *purl = xprintf("http://127.0.0.1:%d%s", p->port, p->path && *p->path ? p->path : "/");
    if (!c) {
        return NULL;
    }
    curl_easy_setopt(c, CURLOPT_URL, *purl);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, PROBE_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_PRIVATE, p);
    return c;
}

void probe_health(probe_t *probes, int n)
{
    CURLM *m;
    CURL **handles;
    char **urls;
    CURLMsg *msg;
    int i, running = 0, left;

    for (i = 0; i < n; i++) {
        probes[i].ok = 0;
        probes[i].ms = -1;
    }
    if (n <= 0 || !(m = curl_multi_init())) {
        return;
    }
    handles = calloc((size_t)n, sizeof(*handles));
    urls = calloc((size_t)n, sizeof(*urls));
    if (!handles || !urls) {
        free(handles);
        free(urls);
        curl_multi_cleanup(m);
        return;
    }
    for (i = 0; i < n; i++) {
        handles[i] = probe_handle(&probes[i], &urls[i]);
        if (handles[i] && curl_multi_add_handle(m, handles[i]) != CURLM_OK) {
            curl_easy_cleanup(handles[i]);
            handles[i] = NULL;
        }
    }
    /* Each handle ends by its own timeout; the loop ends with the last. */
    do {
        if (curl_multi_perform(m, &running) != CURLM_OK) {
            break;
        }
        if (running && curl_multi_poll(m, NULL, 0, 200, NULL) != CURLM_OK) {
            break;
        }
    } while (running && !agent_stop);
    while ((msg = curl_multi_info_read(m, &left)) != NULL) {
        probe_t *p = NULL;
        long status = 0;
        curl_off_t us = 0;

        if (msg->msg != CURLMSG_DONE) {
            continue;
        }
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&p);
        if (!p) {
            continue;
        }
        curl_easy_getinfo(msg->easy_handle, CURLINFO_TOTAL_TIME_T, &us);
        p->ms = (int)(us / 1000);
        if (msg->data.result == CURLE_OK) {
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            p->ok = status >= 200 && status < 400;
        }
    }
    for (i = 0; i < n; i++) {
        if (handles[i]) {
            curl_multi_remove_handle(m, handles[i]);
            curl_easy_cleanup(handles[i]);
        }
        free(urls[i]);
    }
    free(handles);
    free(urls);
    curl_multi_cleanup(m);
}
