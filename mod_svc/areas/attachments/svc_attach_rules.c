/*
 * svc_attach_rules.c: names, stored types and Content-Disposition of
 * attachments (svc_attach_rules.h).
 */
#include "svc_attach_rules.h"

#include <apr_lib.h>
#include <string.h>

const char *svc_attach_name_refusal(const char *name)
{
    const unsigned char *s = (const unsigned char *)name;
    apr_size_t n = name ? strlen(name) : 0, at = 0;

    if (n == 0) {
        return "filename is required: the name the file is downloaded as.";
    }
    if (n > SVC_ATTACH_NAME_MAX) {
        return "filename is longer than 255 bytes.";
    }
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        return "filename cannot be . or ..";
    }
    while (at < n) {
        unsigned long cp;
        apr_size_t len = svc_utf8_next(s + at, n - at, &cp);

        if (len == 0) {
            return "filename is not valid UTF-8.";
        }
        if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) {
            return "filename has a control character.";
        }
        if (cp == '/' || cp == '\\') {
            return "filename is a name, not a path: no / or \\.";
        }
        at += len;
    }
    return NULL;
}

static const char *const allowed_types[] = {
    "image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "text/plain",
    "application/json", "application/zip", NULL
};

const char *svc_attach_stored_type(apr_pool_t *p, const char *content_type)
{
    const char *const *t;
    apr_size_t n;
    char *mt, *c;

    if (!content_type) {
        return "application/octet-stream";
    }
    while (*content_type == ' ' || *content_type == '\t') {
        content_type++;
    }
    n = strcspn(content_type, "; \t");
    mt = apr_pstrmemdup(p, content_type, n);
    for (c = mt; *c; c++) {
        *c = (char)apr_tolower(*c);
    }
    for (t = allowed_types; *t; t++) {
        if (strcmp(*t, mt) == 0) {
            return *t;
        }
    }
    return "application/octet-stream";
}

/* RFC 8187's attr-char: what goes into filename* unescaped. */
static int attr_char(unsigned char c)
{
    return apr_isalnum(c) || (c && strchr("!#$&+-.^_`|~", c));
}

const char *svc_attach_disposition(apr_pool_t *p, const char *name)
{
    apr_size_t n = strlen(name), i;
    char *ascii = apr_palloc(p, n + 1);
    char *enc = apr_palloc(p, n * 3 + 1), *e = enc;
    static const char hex[] = "0123456789ABCDEF";

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        ascii[i] = (c >= 0x20 && c < 0x7F && c != '"' && c != '\\' && c != '%') ? (char)c : '_';
        if (attr_char(c)) {
            *e++ = (char)c;
        }
        else {
            *e++ = '%';
            *e++ = hex[c >> 4];
            *e++ = hex[c & 0x0F];
        }
    }
    ascii[n] = '\0';
    *e = '\0';
    return apr_psprintf(p, "attachment; filename=\"%s\"; filename*=UTF-8''%s", ascii, enc);
}
