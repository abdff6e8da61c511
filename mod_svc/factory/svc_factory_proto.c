/*
 * The protocol's lines: reading the supervisor's (bounded, so a runaway
 * supervisor cannot make the factory grow without end) and writing ours
 * (one JSON object per line, flushed at once so the run's log is live).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "svc_factory.h"

#define READ_CHUNK (64 * 1024)

static int out_broken;

int svc_factory_read_line(svc_factory_in_t *in, size_t max, char **pline, size_t *plen)
{
    for (;;) {
        char *nl;
        ssize_t n;

        if (in->scanned < in->start) {
            in->scanned = in->start;
        }
        nl = in->len > in->scanned
            ? memchr(in->buf + in->scanned, '\n', in->len - in->scanned) : NULL;
        if (nl) {
            size_t end = (size_t)(nl - in->buf);

            if (end - in->start > max) {
                errno = E2BIG;
                return -1;
            }
            *nl = '\0';
            *pline = in->buf + in->start;
            *plen = end - in->start;
            in->start = end + 1;
            in->scanned = in->start;
            return 1;
        }
        in->scanned = in->len;
        if (in->len - in->start > max) {
            errno = E2BIG;
            return -1;
        }
        if (in->eof) {
            return 0;
        }
        /* Keep only the unread part, then make room for one more chunk. */
        if (in->start > 0) {
            memmove(in->buf, in->buf + in->start, in->len - in->start);
            in->len -= in->start;
            in->scanned -= in->start;
            in->start = 0;
        }
        if (in->cap - in->len < READ_CHUNK) {
            size_t cap = in->cap ? in->cap * 2 : READ_CHUNK * 2;
            char *buf;

            while (cap - in->len < READ_CHUNK) {
                cap *= 2;
            }
            buf = realloc(in->buf, cap);
            if (!buf) {
                return -1;
            }
            in->buf = buf;
            in->cap = cap;
        }
        n = read(in->fd, in->buf + in->len, in->cap - in->len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        if (n == 0) {
            in->eof = 1;
            continue;
        }
        in->len += (size_t)n;
    }
}

void svc_factory_in_free(svc_factory_in_t *in)
{
    free(in->buf);
    in->buf = NULL;
    in->start = in->scanned = in->len = in->cap = 0;
}

int svc_factory_out_broken(void)
{
    return out_broken;
}

int svc_factory_send(json_t *msg)
{
    char *line;
    int rv = -1;

    if (out_broken) {
        return -1;
    }
    line = json_dumps(msg, JSON_COMPACT);
    if (!line) {
        /* Only an allocation failure or invalid UTF-8 get here, and every
         * string we send was checked or cleaned: say so where it is seen. */
        fprintf(stderr, "svc-factory: cannot encode a protocol line\n");
        return -1;
    }
    if (fputs(line, stdout) == EOF || putc('\n', stdout) == EOF || fflush(stdout) == EOF) {
        out_broken = 1;
        goto cleanup;
    }
    rv = 0;
cleanup:
    free(line);
    return rv;
}

/* Sends {"type":"log","line":text}, cutting text until the whole line fits
 * SVC_FACTORY_LINE_OUT_MAX (escapes can make it longer than the text). */
static void send_log(const char *text, size_t len)
{
    char clean[SVC_FACTORY_LINE_OUT_MAX];
    size_t max = sizeof(clean) - 1;
    json_t *msg = NULL;

    for (;;) {
        size_t n = svc_factory_clean(clean, max, text, len);
        size_t size;

        json_decref(msg);
        msg = json_pack("{s:s, s:s}", "type", "log", "line", clean);
        if (!msg) {
            goto cleanup;
        }
        size = json_dumpb(msg, NULL, 0, JSON_COMPACT);
        if (size == 0) {
            goto cleanup;
        }
        if (size + 1 <= SVC_FACTORY_LINE_OUT_MAX || n == 0) {
            break;
        }
        /* Over by (size + 1 - limit): cut that much text, and a little
         * more, since cutting stops at a character boundary. */
        max = n > size + 1 - SVC_FACTORY_LINE_OUT_MAX + 8
            ? n - (size + 1 - SVC_FACTORY_LINE_OUT_MAX) - 8 : 0;
    }
    svc_factory_send(msg);
cleanup:
    json_decref(msg);
}

void svc_factory_log(const char *fmt, ...)
{
    char text[SVC_FACTORY_LINE_OUT_MAX];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    send_log(text, strlen(text));
}

void svc_factory_log_lines(const char *prefix, const char *text, size_t len)
{
    size_t i = 0;

    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t n = end - i;
        char line[SVC_FACTORY_LINE_OUT_MAX];
        size_t plen = strlen(prefix);

        if (n > 0 && text[end - 1] == '\r') {
            n--;
        }
        if (n > 0) {
            if (plen > sizeof(line) - 1) {
                plen = sizeof(line) - 1;
            }
            memcpy(line, prefix, plen);
            if (n > sizeof(line) - 1 - plen) {
                n = sizeof(line) - 1 - plen;
            }
            memcpy(line + plen, text + i, n);
            send_log(line, plen + n);
        }
        i = end + 1;
    }
}
