/*
 * fuzz_attach.c: attachment names and types (areas/attachments/
 * svc_attach_rules.c): the name an upload gives (?filename=, any bytes
 * but NUL once the query is decoded), the type it is stored and served
 * with (from its Content-Type), and the Content-Disposition of its
 * download (RFC 6266, with RFC 8187's filename*).
 *
 * Input: "<filename>\n<Content-Type>".
 *
 * Properties: an accepted name is 1 to 255 bytes of valid UTF-8 without
 * controls or a path separator; its Content-Disposition is one line of
 * printable ASCII (nothing a header could be split or quoted out with),
 * its ASCII filename has no quote, backslash or percent, and its filename*
 * decodes back to the name byte for byte; a stored type is on the allow
 * list or application/octet-stream, never anything a browser would run.
 */
#include "fuzz_svc.h"
#include "svc_attach_rules.h"

#include <apr_lib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    return 0;
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c - 'A' + 10;
}

static void check_disposition(apr_pool_t *p, const char *name)
{
    const char *cd = svc_attach_disposition(p, name);
    static const char head[] = "attachment; filename=\"";
    const char *q, *star;
    char *decoded, *o;
    apr_size_t i;

    for (i = 0; cd[i]; i++) {
        FUZZ_ASSERT((unsigned char)cd[i] >= 0x20 && (unsigned char)cd[i] < 0x7f);
    }
    FUZZ_ASSERT(strncmp(cd, head, sizeof(head) - 1) == 0);
    q = cd + sizeof(head) - 1;
    /* The fallback: as many characters as the name has bytes, none that
     * would end or escape the quoted string. */
    for (i = 0; q[i] && q[i] != '"'; i++) {
        FUZZ_ASSERT(q[i] != '\\' && q[i] != '%');
    }
    FUZZ_ASSERT(i == strlen(name));
    star = strstr(q + i, "; filename*=UTF-8''");
    FUZZ_ASSERT(star == q + i + 1);
    star += strlen("; filename*=UTF-8''");
    decoded = apr_palloc(p, strlen(star) + 1);
    for (o = decoded; *star; star++) {
        if (*star == '%') {
            FUZZ_ASSERT(apr_isxdigit(star[1]) && apr_isxdigit(star[2]));
            FUZZ_ASSERT(!apr_islower(star[1]) && !apr_islower(star[2]));
            *o++ = (char)(hexval(star[1]) * 16 + hexval(star[2]));
            star += 2;
        }
        else {
            FUZZ_ASSERT(apr_isalnum(*star) || strchr("!#$&+-.^_`|~", *star));
            *o++ = *star;
        }
    }
    *o = '\0';
    FUZZ_ASSERT(strcmp(decoded, name) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const allowed[] = {
        "image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "text/plain",
        "application/json", "application/zip", "application/octet-stream", NULL
    };
    fuzz_in_t in = { data, size };
    const char *name, *ctype, *why, *stored, *const *a;
    apr_size_t len;
    apr_pool_t *p;

    apr_pool_create(&p, fuzz_root());
    name = fuzz_cut(&in, p, '\n', &len);
    ctype = fuzz_cut(&in, p, -1, NULL);

    why = svc_attach_name_refusal(name);
    if (!why) {
        apr_size_t at = 0, k;
        unsigned long cp;

        FUZZ_ASSERT(name && strlen(name) >= 1 && strlen(name) <= SVC_ATTACH_NAME_MAX);
        FUZZ_ASSERT(!strchr(name, '/') && !strchr(name, '\\'));
        FUZZ_ASSERT(strcmp(name, ".") && strcmp(name, ".."));
        while (name[at]) {
            k = svc_utf8_next((const unsigned char *)name + at, strlen(name + at), &cp);
            FUZZ_ASSERT(k > 0 && cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp <= 0x9f));
            at += k;
        }
        check_disposition(p, name);
    }
    else {
        /* The reason is shown to the client as it is. */
        FUZZ_ASSERT(*why);
    }

    stored = svc_attach_stored_type(p, ctype);
    for (a = allowed; *a && strcmp(*a, stored) != 0; a++) {
    }
    FUZZ_ASSERT(*a != NULL);
    apr_pool_destroy(p);
    return 0;
}
