/*
 * svc_utf8.c: UTF-8 decoding and counting (svc_utf8.h).
 */
#include "svc_utf8.h"

apr_size_t svc_utf8_next(const unsigned char *s, apr_size_t n, unsigned long *pcp)
{
    unsigned long cp;
    apr_size_t len, i;

    if (s[0] < 0x80) {
        *pcp = s[0];
        return 1;
    }
    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        len = 2;
        cp = s[0] & 0x1F;
    }
    else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        len = 3;
        cp = s[0] & 0x0F;
    }
    else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        len = 4;
        cp = s[0] & 0x07;
    }
    else {
        return 0;
    }
    if (n < len) {
        return 0;
    }
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))
        || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return 0;
    }
    *pcp = cp;
    return len;
}

apr_size_t svc_utf8_chars(const char *s, apr_size_t n)
{
    apr_size_t i, c = 0;

    for (i = 0; i < n; i++) {
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    }
    return c;
}

apr_size_t svc_utf8_prefix(const char *s, apr_size_t n, apr_size_t chars)
{
    apr_size_t i, c = 0;

    for (i = 0; i < n; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80 && c++ == chars) {
            return i;
        }
    }
    return n;
}
