/*
 * Text helpers of the factory: UTF-8 checking, making arbitrary bytes (git's
 * output, file names) safe for a JSON line, a growable buffer, and the one
 * way failures are described.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svc_factory.h"

int svc_factory_fail(svc_factory_err_t *perr, const char *code, const char *fmt, ...)
{
    va_list ap;
    char raw[SVC_FACTORY_MSG_MAX];

    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    perr->code = code;
    /* Messages quote paths and git's output: they must stay valid UTF-8 to
     * travel in a JSON line. */
    svc_factory_clean(perr->message, sizeof(perr->message) - 1, raw, strlen(raw));
    return -1;
}

size_t svc_factory_utf8_next(unsigned int *pcp, const unsigned char *p, size_t n)
{
    unsigned int cp;
    size_t len, i;

    if (n == 0) {
        return 0;
    }
    if (p[0] < 0x80) {
        *pcp = p[0];
        return 1;
    }
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        len = 2;
        cp = p[0] & 0x1f;
    }
    else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        len = 3;
        cp = p[0] & 0x0f;
    }
    else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        len = 4;
        cp = p[0] & 0x07;
    }
    else {
        return 0;
    }
    if (n < len) {
        return 0;
    }
    for (i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    /* Overlong forms, surrogates and code points past U+10FFFF are not
     * UTF-8, whatever the bit pattern says. */
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff
        || (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }
    *pcp = cp;
    return len;
}

size_t svc_factory_clean(char *out, size_t max, const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t i = 0, o = 0;

    while (i < len) {
        unsigned int cp = 0;
        size_t n = svc_factory_utf8_next(&cp, p + i, len - i);

        if (n == 0) {
            if (o + 1 > max) {
                break;
            }
            out[o++] = '?';
            i++;
            continue;
        }
        if ((cp < 0x20 && cp != '\t') || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
            if (o + 1 > max) {
                break;
            }
            out[o++] = ' ';
            i += n;
            continue;
        }
        if (o + n > max) {
            break;
        }
        memcpy(out + o, p + i, n);
        o += n;
        i += n;
    }
    out[o] = '\0';
    return o;
}

static void buf_reserve(svc_factory_buf_t *buf, size_t more)
{
    size_t want, cap;
    char *data;

    if (buf->failed) {
        return;
    }
    if (more > ((size_t)-1) / 2 - buf->len) {
        buf->failed = 1;
        return;
    }
    want = buf->len + more + 1;
    if (want <= buf->cap) {
        return;
    }
    cap = buf->cap ? buf->cap : 256;
    while (cap < want) {
        cap *= 2;
    }
    data = realloc(buf->data, cap);
    if (!data) {
        buf->failed = 1;
        return;
    }
    buf->data = data;
    buf->cap = cap;
}

void svc_factory_buf_add(svc_factory_buf_t *buf, const char *s, size_t len)
{
    buf_reserve(buf, len);
    if (buf->failed) {
        return;
    }
    memcpy(buf->data + buf->len, s, len);
    buf->len += len;
    buf->data[buf->len] = '\0';
}

void svc_factory_buf_puts(svc_factory_buf_t *buf, const char *s)
{
    svc_factory_buf_add(buf, s, strlen(s));
}

void svc_factory_buf_printf(svc_factory_buf_t *buf, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        buf->failed = 1;
        return;
    }
    buf_reserve(buf, (size_t)n);
    if (buf->failed) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(buf->data + buf->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    buf->len += (size_t)n;
}

void svc_factory_buf_free(svc_factory_buf_t *buf)
{
    free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}
