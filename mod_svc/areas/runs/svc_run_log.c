/*
 * svc_run_log.c: cleaning, redacting, capping and flushing a run's log
 * (svc_run_log.h).
 */
#include "svc_run_log.h"
#include "svc_utf8.h"

#include <stdarg.h>
#include <string.h>

#define FLUSH_CHUNK (256 * 1024)
#define MAX_SECRETS 32

struct svc_run_log_t {
    apr_pool_t *pool;
    apr_int64_t stored;         /* bytes in the database */
    apr_int64_t limit;
    int dropped;                /* the limit was reached; the line says so */
    int dropped_stored;         /* ...and that line is in the database */
    char *buf;                  /* whole lines waiting */
    apr_size_t len;
    apr_size_t cap;
    const char *secrets[MAX_SECRETS];
    int nsecrets;
    apr_array_header_t *events;     /* of svc_run_log_event_t; `at` is in buf */
};

/* Events not stored when the run ends (the database stayed away). */
static apr_status_t drop_events(void *data)
{
    svc_run_log_t *log = data;
    int i;

    for (i = 0; i < log->events->nelts; i++) {
        json_decref(APR_ARRAY_IDX(log->events, i, svc_run_log_event_t).data);
    }
    log->events->nelts = 0;
    return APR_SUCCESS;
}

svc_run_log_t *svc_run_log_create(apr_pool_t *p, apr_int64_t stored, int dropped,
                                  apr_int64_t limit)
{
    svc_run_log_t *log = apr_pcalloc(p, sizeof(*log));

    log->pool = p;
    log->stored = stored;
    log->limit = limit;
    log->dropped = log->dropped_stored = dropped;
    log->events = apr_array_make(p, 8, sizeof(svc_run_log_event_t));
    apr_pool_cleanup_register(p, log, drop_events, apr_pool_cleanup_null);
    return log;
}

void svc_run_log_secret(svc_run_log_t *log, const char *secret)
{
    if (secret && strlen(secret) >= 8 && log->nsecrets < MAX_SECRETS) {
        log->secrets[log->nsecrets++] = apr_pstrdup(log->pool, secret);
    }
}

/* At most SVC_RUN_LOG_LINE_MAX bytes of valid UTF-8 with no control
 * character but tab: invalid bytes become U+FFFD, controls a space. */
static char *clean(apr_pool_t *p, const char *line, apr_size_t len, apr_size_t *pout)
{
    static const char cut[] = " [...]";
    char *out = apr_palloc(p, SVC_RUN_LOG_LINE_MAX + 1);
    const unsigned char *s = (const unsigned char *)line;
    apr_size_t i = 0, o = 0, room = SVC_RUN_LOG_LINE_MAX - (sizeof(cut) - 1);

    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n')) {
        len--;
    }
    while (i < len) {
        unsigned long cp;
        apr_size_t n = svc_utf8_next(s + i, len - i, &cp);

        if (n == 0) {
            if (o + 3 > room) {
                break;
            }
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
            continue;
        }
        if (o + n > room) {
            break;
        }
        if (n == 1 && (s[i] < 0x20 || s[i] == 0x7f) && s[i] != '\t') {
            out[o++] = ' ';
        }
        else {
            memcpy(out + o, s + i, n);
            o += n;
        }
        i += n;
    }
    if (i < len) {
        memcpy(out + o, cut, sizeof(cut) - 1);
        o += sizeof(cut) - 1;
    }
    out[o] = '\0';
    *pout = o;
    return out;
}

/* s with every occurrence of the known secrets replaced. */
static const char *hide_secrets(svc_run_log_t *log, apr_pool_t *p, const char *s)
{
    int i;

    for (i = 0; i < log->nsecrets; i++) {
        const char *hit;
        apr_size_t n = strlen(log->secrets[i]);

        while ((hit = strstr(s, log->secrets[i])) != NULL) {
            s = apr_pstrcat(p, apr_pstrmemdup(p, s, (apr_size_t)(hit - s)), "[REDACTED]",
                            hit + n, NULL);
        }
    }
    return s;
}

static void append(svc_run_log_t *log, const char *s, apr_size_t n)
{
    if (log->len + n + 1 > log->cap) {
        apr_size_t cap = log->cap ? log->cap * 2 : 8192;
        char *buf;

        while (cap < log->len + n + 1) {
            cap *= 2;
        }
        /* The old buffer stays in the pool until the run ends: bounded by
         * the log limit, twice over at most. */
        buf = apr_palloc(log->pool, cap);
        if (log->len) {
            memcpy(buf, log->buf, log->len);
        }
        log->buf = buf;
        log->cap = cap;
    }
    memcpy(log->buf + log->len, s, n);
    log->len += n;
}

const char *svc_run_log_redact(svc_run_log_t *log, apr_pool_t *p, const char *text)
{
    return hide_secrets(log, p, svc_redact(p, text));
}

void svc_run_log_line(svc_run_log_t *log, const char *line, apr_size_t len)
{
    apr_pool_t *sp;
    const char *text;
    apr_size_t n;

    if (log->dropped) {
        return;
    }
    apr_pool_create(&sp, log->pool);
    text = clean(sp, line, len, &n);
    text = svc_run_log_redact(log, sp, text);
    n = strlen(text);
    if (log->stored + (apr_int64_t)(log->len + n + 1) > log->limit) {
        text = apr_psprintf(sp, "[mod_svc] the log reached its limit of %" APR_INT64_T_FMT
                            " bytes (SvcRunLogLimit); the rest of it was dropped", log->limit);
        n = strlen(text);
        log->dropped = 1;
    }
    append(log, text, n);
    append(log, "\n", 1);
    apr_pool_destroy(sp);
}

/* A formatted line, formatted in a scratch pool the log does not keep. */
static void log_vline(svc_run_log_t *log, const char *fmt, va_list ap)
{
    apr_pool_t *sp;
    const char *text;

    apr_pool_create(&sp, log->pool);
    text = apr_pvsprintf(sp, fmt, ap);
    svc_run_log_line(log, text, strlen(text));
    apr_pool_destroy(sp);
}

void svc_run_log_note(svc_run_log_t *log, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vline(log, fmt, ap);
    va_end(ap);
}

void svc_run_log_event(svc_run_log_t *log, const char *kind, json_t *data,
                       const char *fmt, ...)
{
    svc_run_log_event_t *e;
    va_list ap;

    va_start(ap, fmt);
    log_vline(log, fmt, ap);
    va_end(ap);
    if (log->dropped || !data) {
        json_decref(data);
        return;
    }
    e = apr_array_push(log->events);
    e->at = log->len;
    e->kind = kind;
    e->data = data;
}

void svc_run_log_bytes(svc_run_log_t *log, svc_run_log_partial_t *partial, const char *data,
                       apr_size_t len, int eof)
{
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        apr_size_t n = nl ? (apr_size_t)(nl - data) : len;
        apr_size_t room = sizeof(partial->buf) - partial->len;

        if (n > room) {
            /* A line longer than a line may be: what fits now, the rest as
             * lines of their own. */
            memcpy(partial->buf + partial->len, data, room);
            svc_run_log_line(log, partial->buf, sizeof(partial->buf));
            partial->len = 0;
            data += room;
            len -= room;
            continue;
        }
        memcpy(partial->buf + partial->len, data, n);
        partial->len += n;
        if (!nl) {
            break;
        }
        svc_run_log_line(log, partial->buf, partial->len);
        partial->len = 0;
        data += n + 1;
        len -= n + 1;
    }
    if (eof && partial->len > 0) {
        svc_run_log_line(log, partial->buf, partial->len);
        partial->len = 0;
    }
}

apr_size_t svc_run_log_pending(const svc_run_log_t *log)
{
    return log->len;
}

const char *svc_run_log_waiting(const svc_run_log_t *log, apr_size_t *plen)
{
    *plen = log->len;
    return log->buf ? log->buf : "";
}

apr_status_t svc_run_log_flush(svc_run_log_t *log, svc_db_t *db, const svc_run_job_t *job,
                               const char *node)
{
    apr_status_t rv = APR_SUCCESS;
    apr_size_t done = 0;

    while (done < log->len) {
        apr_size_t n = log->len - done;
        apr_pool_t *sp;
        int last, first_event = 0, nevents = 0, i;

        if (n > FLUSH_CHUNK) {
            /* Whole lines only: end the chunk at a newline. */
            const char *nl = log->buf + done + FLUSH_CHUNK;
            while (nl > log->buf + done && nl[-1] != '\n') {
                nl--;
            }
            if (nl > log->buf + done) {
                n = (apr_size_t)(nl - (log->buf + done));
            }
        }
        last = done + n == log->len;
        /* The events of this chunk's lines, relative to it. */
        for (i = 0; i < log->events->nelts; i++) {
            svc_run_log_event_t *e = &APR_ARRAY_IDX(log->events, i, svc_run_log_event_t);

            if (e->at <= done) {
                first_event = i + 1;
            }
            else if (e->at <= done + n) {
                nevents++;
            }
        }
        for (i = first_event; i < first_event + nevents; i++) {
            APR_ARRAY_IDX(log->events, i, svc_run_log_event_t).at -= done;
        }
        apr_pool_create(&sp, log->pool);
        rv = svc_run_log_append(db, sp, job, node, log->stored, log->buf + done, n,
                                last && log->dropped && !log->dropped_stored,
                                &APR_ARRAY_IDX(log->events, first_event, svc_run_log_event_t),
                                nevents);
        apr_pool_destroy(sp);
        for (i = first_event; i < first_event + nevents; i++) {
            APR_ARRAY_IDX(log->events, i, svc_run_log_event_t).at += done;
        }
        if (rv != APR_SUCCESS) {
            break;
        }
        log->stored += (apr_int64_t)n;
        done += n;
        if (last && log->dropped) {
            log->dropped_stored = 1;
        }
    }
    if (done > 0) {
        int i, kept = 0;

        memmove(log->buf, log->buf + done, log->len - done);
        log->len -= done;
        for (i = 0; i < log->events->nelts; i++) {
            svc_run_log_event_t *e = &APR_ARRAY_IDX(log->events, i, svc_run_log_event_t);

            if (e->at <= done) {
                json_decref(e->data);
                continue;
            }
            e->at -= done;
            APR_ARRAY_IDX(log->events, kept++, svc_run_log_event_t) = *e;
        }
        log->events->nelts = kept;
    }
    return rv;
}
