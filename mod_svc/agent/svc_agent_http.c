/*
 * svc_agent_http.c: svc-agent's side of the service's agent routes:
 * requests with the target's key, downloads, and the work stream
 * (server-sent events, read with libcurl's multi interface so the loop goes
 * on supervising replicas while it waits).
 *
 * Every transfer: http(s) only, no redirects (a redirect could carry the
 * key elsewhere), TLS verified (with ca_file when given), timeouts always.
 */
#include "svc_agent.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#define CONNECT_TIMEOUT 10L
#define CALL_TIMEOUT    60L
#define BODY_MAX        (8L * 1024 * 1024)
/* The service sends a comment every 15 s: a stream silent for this long is dead. */
#define STREAM_SILENCE  45L
#define EVENT_MAX       (4L * 1024 * 1024)

int http_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

void http_reply_free(http_reply_t *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

typedef struct {
    char *data;
    size_t len;
    int over;
} buf_t;

static size_t collect(char *ptr, size_t size, size_t n, void *baton)
{
    buf_t *b = baton;
    size_t add = size * n;
    char *grown;

    if (b->len + add > (size_t)BODY_MAX) {
        b->over = 1;
        return 0;
    }
    if (!(grown = realloc(b->data, b->len + add + 1))) {
        return 0;
    }
    b->data = grown;
    memcpy(b->data + b->len, ptr, add);
    b->len += add;
    b->data[b->len] = '\0';
    return add;
}

/* A handle with what every transfer of ours has, and the key. */
static CURL *handle(const char *path, struct curl_slist **phdrs, int json)
{
    CURL *c = curl_easy_init();
    char *url = xprintf("%s%s", conf.url, path);
    char *auth = xprintf("Authorization: Bearer %s", conf.key);
    struct curl_slist *h = NULL;

    if (!c) {
        free(url);
        free(auth);
        return NULL;
    }
    h = curl_slist_append(h, auth);
    if (json) {
        h = curl_slist_append(h, "Content-Type: application/json");
    }
    h = curl_slist_append(h, "Accept: application/json, text/event-stream, "
                             "application/octet-stream");
    memset(auth, 0, strlen(auth));
    free(auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    free(url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "svc-agent/" SVC_VERSION);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, CURLPROTO_HTTP | CURLPROTO_HTTPS);
#endif
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (conf.ca_file) {
        curl_easy_setopt(c, CURLOPT_CAINFO, conf.ca_file);
    }
    *phdrs = h;
    return c;
}

int http_call(const char *method, const char *path, const char *body, http_reply_t *out)
{
    struct curl_slist *h = NULL;
    buf_t b = { NULL, 0, 0 };
    CURL *c = handle(path, &h, body != NULL);
    CURLcode rc;

    memset(out, 0, sizeof(*out));
    if (!c) {
        return -1;
    }
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    curl_easy_setopt(c, CURLOPT_TIMEOUT, CALL_TIMEOUT);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    rc = curl_easy_perform(c);
    if (rc == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
        out->body = b.data ? b.data : xstrdup("");
        out->len = b.len;
    }
    else {
        alog(AL_WARNING, "%s %s: %s", method, path, curl_easy_strerror(rc));
        free(b.data);
    }
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return rc == CURLE_OK ? 0 : -1;
}

int http_download(const char *path, const char *file, long *pstatus)
{
    struct curl_slist *h = NULL;
    CURL *c = handle(path, &h, 0);
    FILE *f = fopen(file, "we");
    CURLcode rc;

    *pstatus = 0;
    if (!c || !f) {
        if (c) {
            curl_easy_cleanup(c);
        }
        curl_slist_free_all(h);
        if (f) {
            fclose(f);
        }
        return -1;
    }
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 600L);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
    rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, pstatus);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    if (fclose(f) != 0 || rc != CURLE_OK) {
        if (rc != CURLE_OK) {
            alog(AL_WARNING, "GET %s: %s", path, curl_easy_strerror(rc));
        }
        return -1;
    }
    return *pstatus == 200 ? 0 : -1;
}

/* ------------------------------------------------------------------------
 * The work stream
 */

struct stream {
    CURLM *multi;
    CURL *easy;
    struct curl_slist *hdrs;
    char *line;                 /* an incomplete line */
    size_t llen;
    /* The event being read. */
    long long id;
    char *kind;
    char *data;
    size_t dlen;
    /* Events read, for the loop to hand out. */
    sse_event_t *queue;
    size_t nqueue, cap;
    int bad;                    /* not an event stream, or an event too large */
};

static void event_end(stream_t *s)
{
    sse_event_t *ev;

    if (s->data && s->kind) {
        if (s->nqueue == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 16;
            sse_event_t *q = realloc(s->queue, cap * sizeof(*q));
            if (!q) {
                s->bad = 1;
                return;
            }
            s->queue = q;
            s->cap = cap;
        }
        ev = &s->queue[s->nqueue++];
        ev->id = s->id;
        ev->kind = s->kind;
        ev->data = s->data;
        s->kind = NULL;
        s->data = NULL;
    }
    free(s->kind);
    free(s->data);
    s->kind = NULL;
    s->data = NULL;
    s->dlen = 0;
}

/* One line of the stream (without its end). */
static void stream_line(stream_t *s, char *line, size_t n)
{
    char *value;

    if (n == 0) {
        event_end(s);
        return;
    }
    if (line[0] == ':') {
        return;     /* a comment: the heartbeat */
    }
    value = memchr(line, ':', n);
    if (value) {
        *value++ = '\0';
        if (*value == ' ') {
            value++;
        }
    }
    else {
        value = line + n;
    }
    if (strcmp(line, "id") == 0) {
        s->id = strtoll(value, NULL, 10);
    }
    else if (strcmp(line, "event") == 0) {
        free(s->kind);
        s->kind = xstrdup(value);
    }
    else if (strcmp(line, "data") == 0) {
        size_t vlen = strlen(value);
        char *grown;
        if (s->dlen + vlen > (size_t)EVENT_MAX
            || !(grown = realloc(s->data, s->dlen + vlen + 2))) {
            s->bad = 1;
            return;
        }
        s->data = grown;
        if (s->dlen) {
            s->data[s->dlen++] = '\n';
        }
        memcpy(s->data + s->dlen, value, vlen);
        s->dlen += vlen;
        s->data[s->dlen] = '\0';
    }
}

static size_t stream_in(char *ptr, size_t size, size_t n, void *baton)
{
    stream_t *s = baton;
    size_t add = size * n, i, start = 0;
    long status = 0;

    curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        return add;     /* a problem document: its status says it all */
    }
    for (i = 0; i < add; i++) {
        if (ptr[i] == '\n') {
            size_t piece = i - start;
            char *grown = realloc(s->line, s->llen + piece + 1);
            if (!grown) {
                return 0;
            }
            s->line = grown;
            memcpy(s->line + s->llen, ptr + start, piece);
            s->llen += piece;
            if (s->llen && s->line[s->llen - 1] == '\r') {
                s->llen--;
            }
            s->line[s->llen] = '\0';
            stream_line(s, s->line, s->llen);
            s->llen = 0;
            start = i + 1;
            if (s->bad) {
                return 0;
            }
        }
    }
    if (start < add) {
        size_t piece = add - start;
        char *grown;
        if (s->llen + piece > (size_t)EVENT_MAX || !(grown = realloc(s->line, s->llen + piece + 1))) {
            return 0;
        }
        s->line = grown;
        memcpy(s->line + s->llen, ptr + start, piece);
        s->llen += piece;
    }
    return add;
}

stream_t *stream_open(long long after)
{
    stream_t *s = calloc(1, sizeof(*s));
    char *path = after > 0 ? xprintf("/api/agent/work?last_event_id=%lld", after)
                           : xstrdup("/api/agent/work");

    if (!s) {
        free(path);
        return NULL;
    }
    s->easy = handle(path, &s->hdrs, 0);
    free(path);
    s->multi = curl_multi_init();
    if (!s->easy || !s->multi) {
        stream_close(s);
        return NULL;
    }
    curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, stream_in);
    curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(s->easy, CURLOPT_LOW_SPEED_TIME, STREAM_SILENCE);
    curl_multi_add_handle(s->multi, s->easy);
    return s;
}

int stream_pump(stream_t *s, int wait_ms, void (*fn)(const sse_event_t *ev, void *baton),
                void *baton)
{
    CURLMsg *msg;
    int running = 0, left, numfds, rc = 0;
    size_t i;

    if (!s) {
        return -1;
    }
    curl_multi_perform(s->multi, &running);
    if (running) {
        curl_multi_poll(s->multi, NULL, 0, wait_ms, &numfds);
        curl_multi_perform(s->multi, &running);
    }
    for (i = 0; i < s->nqueue; i++) {
        fn(&s->queue[i], baton);
        free(s->queue[i].kind);
        free(s->queue[i].data);
    }
    s->nqueue = 0;
    while ((msg = curl_multi_info_read(s->multi, &left)) != NULL) {
        if (msg->msg == CURLMSG_DONE) {
            long status = 0;
            curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
            if (status == 401) {
                rc = 401;
            }
            else if (msg->data.result != CURLE_OK || status != 200) {
                if (status && status != 200) {
                    alog(AL_WARNING, "the work stream answered %ld", status);
                }
                rc = -1;
            }
            else {
                rc = 1;
            }
        }
    }
    if (!rc && !running) {
        rc = 1;
    }
    return rc;
}

void stream_close(stream_t *s)
{
    size_t i;

    if (!s) {
        return;
    }
    if (s->multi && s->easy) {
        curl_multi_remove_handle(s->multi, s->easy);
    }
    if (s->easy) {
        curl_easy_cleanup(s->easy);
    }
    if (s->multi) {
        curl_multi_cleanup(s->multi);
    }
    curl_slist_free_all(s->hdrs);
    for (i = 0; i < s->nqueue; i++) {
        free(s->queue[i].kind);
        free(s->queue[i].data);
    }
    free(s->queue);
    free(s->line);
    free(s->kind);
    free(s->data);
    free(s);
}
