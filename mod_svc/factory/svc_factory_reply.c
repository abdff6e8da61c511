/*
 * The model's answer. It is untrusted text: parsed strictly (one exact
 * object shape, one optional ```json fence and nothing else), and every
 * path is checked and every limit kept before a single file is written, so
 * a bad answer changes nothing.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "svc_factory.h"

#define SUMMARY_MAX 500

typedef struct {
    const char *path;
    size_t index;
} path_ref_t;

static int path_ref_cmp(const void *a, const void *b)
{
    const path_ref_t *x = a, *y = b;
    int c = strcmp(x->path, y->path);

    if (c != 0) {
        return c;
    }
    return x->index < y->index ? -1 : x->index > y->index;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Takes off surrounding white space and one ```json (or bare ```) fence.
 * Returns -1 when the text opens a fence that is not one such fence. */
static int unfence(const char **ptext, size_t *plen)
{
    const char *s = *ptext;
    size_t n = *plen;
    const char *nl;
    size_t open_len;

    while (n > 0 && is_space(s[0])) {
        s++;
        n--;
    }
    while (n > 0 && is_space(s[n - 1])) {
        n--;
    }
    *ptext = s;
    *plen = n;
    if (n < 3 || memcmp(s, "```", 3) != 0) {
        return 0;
    }
    nl = memchr(s, '\n', n);
    if (!nl) {
        return -1;
    }
    open_len = (size_t)(nl - s);
    while (open_len > 3 && is_space(s[open_len - 1])) {
        open_len--;
    }
    if (!(open_len == 3 || (open_len == 7 && strncasecmp(s + 3, "json", 4) == 0))) {
        return -1;
    }
    /* The closing fence: the last line, exactly ```. */
    if (n < open_len + 4 || memcmp(s + n - 3, "```", 3) != 0 || s[n - 4] != '\n'
        || (size_t)(nl - s) + 1 > n - 3) {
        return -1;
    }
    *ptext = nl + 1;
    *plen = (size_t)((s + n - 3) - (nl + 1));
    return 0;
}

int svc_factory_reply_parse(svc_factory_reply_t *preply, const char *text, size_t len,
                            svc_factory_err_t *perr)
{
    json_error_t jerr;
    json_t *doc = NULL, *summary, *files;
    const char *key;
    json_t *v;
    path_ref_t *refs = NULL;
    size_t i, n;
    int rv = -1;

    memset(preply, 0, sizeof(*preply));
    if (unfence(&text, &len) < 0) {
        return svc_factory_fail(perr, SVC_FACTORY_E_REPLY, "the reply opens a ``` fence that "
                                "is not one ```json fence around the whole object");
    }
    if (len == 0) {
        return svc_factory_fail(perr, SVC_FACTORY_E_REPLY, "the reply is empty");
    }
    doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        svc_factory_fail(perr, SVC_FACTORY_E_REPLY, "the reply is not one JSON object: %s "
                         "(line %d, column %d)", jerr.text, jerr.line, jerr.column);
        goto cleanup;
    }
    if (!json_is_object(doc)) {
        svc_factory_fail(perr, SVC_FACTORY_E_REPLY, "the reply is a JSON %s, not an object",
                         json_is_array(doc) ? "array" : "value");
        goto cleanup;
    }
    json_object_foreach(doc, key, v) {
        if (strcmp(key, "summary") != 0 && strcmp(key, "files") != 0) {
            svc_factory_fail(perr, SVC_FACTORY_E_REPLY, "unexpected member '%s' in the reply",
                             key);
            goto cleanup;
        }
    }
    summary = json_object_get(doc, "summary");
    if (!json_is_string(summary)) {
        svc_factory_fail(perr, SVC_FACTORY_E_REPLY, summary ? "summary is not a string"
                                                            : "summary is missing");
        goto cleanup;
    }
    n = json_string_length(summary);
    if (n == 0 || n > SUMMARY_MAX) {
        svc_factory_fail(perr, SVC_FACTORY_E_REPLY, "summary must be 1-%d bytes", SUMMARY_MAX);
        goto cleanup;
    }
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)json_string_value(summary)[i];

        if (c < 0x20 || c == 0x7f) {
            svc_factory_fail(perr, SVC_FACTORY_E_REPLY,
                             "summary must be one line without control characters");
            goto cleanup;
        }
    }
    files = json_object_get(doc, "files");
    if (!json_is_array(files)) {
        svc_factory_fail(perr, SVC_FACTORY_E_REPLY, files ? "files is not an array"
                                                          : "files is missing");
        goto cleanup;
    }
    n = json_array_size(files);
    if (n == 0) {
        svc_factory_fail(perr, SVC_FACTORY_E_REPLY, "the reply has no files");
        goto cleanup;
    }
    preply->files = calloc(n, sizeof(*preply->files));
    refs = calloc(n, sizeof(*refs));
    if (!preply->files || !refs) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    for (i = 0; i < n; i++) {
        json_t *f = json_array_get(files, i);
        json_t *path, *content;

        if (!json_is_object(f)) {
            svc_factory_fail(perr, SVC_FACTORY_E_REPLY, "files[%zu] is not an object", i);
            goto cleanup;
        }
        json_object_foreach(f, key, v) {
            if (strcmp(key, "path") != 0 && strcmp(key, "content") != 0) {
                svc_factory_fail(perr, SVC_FACTORY_E_REPLY,
                                 "unexpected member '%s' in files[%zu]", key, i);
                goto cleanup;
            }
        }
        path = json_object_get(f, "path");
        content = json_object_get(f, "content");
        if (!json_is_string(path)) {
            svc_factory_fail(perr, SVC_FACTORY_E_REPLY, path ? "files[%zu].path is not a string"
                                                             : "files[%zu].path is missing", i);
            goto cleanup;
        }
        if (!json_is_string(content)) {
            svc_factory_fail(perr, SVC_FACTORY_E_REPLY,
                             content ? "files[%zu].content is not a string"
                                     : "files[%zu].content is missing", i);
            goto cleanup;
        }
        preply->files[i].path = json_string_value(path);
        preply->files[i].path_len = json_string_length(path);
        preply->files[i].content = json_string_value(content);
        preply->files[i].content_len = json_string_length(content);
        refs[i].path = preply->files[i].path;
        refs[i].index = i;
    }
    qsort(refs, n, sizeof(*refs), path_ref_cmp);
    for (i = 1; i < n; i++) {
        if (strcmp(refs[i - 1].path, refs[i].path) == 0) {
            svc_factory_fail(perr, SVC_FACTORY_E_REPLY, "files[%zu].path repeats files[%zu].path "
                             "('%.200s')", refs[i].index, refs[i - 1].index, refs[i].path);
            goto cleanup;
        }
    }
    preply->doc = doc;
    preply->summary = json_string_value(summary);
    preply->nfiles = n;
    doc = NULL;
    rv = 0;
cleanup:
    free(refs);
    json_decref(doc);
    if (rv < 0) {
        free(preply->files);
        memset(preply, 0, sizeof(*preply));
    }
    return rv;
}

void svc_factory_reply_free(svc_factory_reply_t *reply)
{
    free(reply->files);
    json_decref(reply->doc);
    memset(reply, 0, sizeof(*reply));
}

/* Code points that HFS+ ignores in names: with them ".g\u200cit" is .git
 * there, so they do not make a name safe. */
static int hfs_ignorable(unsigned int cp)
{
    return (cp >= 0x200c && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e)
        || (cp >= 0x206a && cp <= 0x206f) || cp == 0xfeff;
}

/* Whether a component names git's own directory on some file system a clone
 * of this repository may meet: any case, HFS+ ignorables, trailing dots and
 * spaces (NTFS), NTFS's short name and stream syntax.
 *
 * Only the first five characters that count (ignorables aside) can tell
 * ".git", "git~1" or ".git:" apart from other names; after them only
 * whether the rest is all dots and spaces (which NTFS drops) matters. So
 * a name of any length is decided, not just one that fits a buffer: a
 * component ".git" followed by 60 spaces is .git on NTFS, and ".git:"
 * followed by a long or non-ASCII stream name is a stream of .git (found
 * by t/fuzz/fuzz_factory_reply.c). */
static int is_git_dir_name(const char *comp, size_t n)
{
    char norm[8];
    size_t i = 0, o = 0;
    int rest_dropped = 1;       /* every character after norm is '.' or ' ' */

    while (i < n) {
        unsigned int cp = 0;
        size_t k = svc_factory_utf8_next(&cp, (const unsigned char *)comp + i, n - i);

        if (k == 0) {
            return 0;
        }
        i += k;
        if (hfs_ignorable(cp)) {
            continue;
        }
        if (o < 5) {
            if (cp >= 0x80) {
                return 0;
            }
            norm[o++] = (char)cp;
        }
        else if (cp != '.' && cp != ' ') {
            rest_dropped = 0;
        }
    }
    norm[o] = '\0';
    if (o == 5 && strncasecmp(norm, ".git:", 5) == 0) {
        return 1;
    }
    if (!rest_dropped) {
        return 0;
    }
    while (o > 0 && (norm[o - 1] == '.' || norm[o - 1] == ' ')) {
        norm[--o] = '\0';
    }
    return strcasecmp(norm, ".git") == 0 || strcasecmp(norm, "git~1") == 0;
}

int svc_factory_path_check(const char *path, size_t len, svc_factory_err_t *perr)
{
    const unsigned char *p = (const unsigned char *)path;
    size_t i, start, depth = 0;

    if (len == 0) {
        return svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '' is empty");
    }
    if (len > SVC_FACTORY_PATH_MAX) {
        return svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%.200s...' is longer than "
                                "%d bytes", path, SVC_FACTORY_PATH_MAX);
    }
    if (path[0] == '/') {
        return svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' is absolute", path);
    }
    for (i = 0; i < len;) {
        unsigned int cp = 0;
        size_t k = svc_factory_utf8_next(&cp, p + i, len - i);

        if (k == 0) {
            return svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' is not UTF-8", path);
        }
        if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
            return svc_factory_fail(perr, SVC_FACTORY_E_PATH,
                                    "path '%s' contains a control character", path);
        }
        if (cp == '\\') {
            return svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' contains a backslash",
                                    path);
        }
        i += k;
    }
    for (start = 0; start <= len; start = i + 1) {
        size_t n;

        for (i = start; i < len && path[i] != '/'; i++) {
        }
        n = i - start;
        if (n == 0) {
            return svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' has an empty component",
                                    path);
        }
        if ((n == 1 && path[start] == '.') || (n == 2 && path[start] == '.'
                                               && path[start + 1] == '.')) {
            return svc_factory_fail(perr, SVC_FACTORY_E_PATH,
                                    "path '%s' has a '.' or '..' component", path);
        }
        if (n > SVC_FACTORY_NAME_MAX) {
            return svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%.200s' has a component "
                                    "longer than %d bytes", path, SVC_FACTORY_NAME_MAX);
        }
        if (is_git_dir_name(path + start, n)) {
            return svc_factory_fail(perr, SVC_FACTORY_E_PATH,
                                    "path '%s' reaches into a .git directory", path);
        }
        if (++depth > SVC_FACTORY_DEPTH_MAX) {
            return svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%.200s' is deeper than %d "
                                    "components", path, SVC_FACTORY_DEPTH_MAX);
        }
    }
    return 0;
}

static int path_ref_find(const void *key, const void *elem)
{
    const path_ref_t *e = elem;

    return strcmp((const char *)key, e->path);
}

int svc_factory_reply_check(const svc_factory_reply_t *reply,
                            const svc_factory_limits_t *limits, svc_factory_err_t *perr)
{
    path_ref_t *refs = NULL;
    char *prefix = NULL;
    size_t i, total = 0;
    int rv = -1;

    for (i = 0; i < reply->nfiles; i++) {
        const svc_factory_file_t *f = &reply->files[i];

        if (svc_factory_path_check(f->path, f->path_len, perr) < 0) {
            goto cleanup;
        }
        if (i >= limits->max_files) {
            svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' is one file more than the "
                             "limit of %zu files (the reply has %zu)", f->path,
                             limits->max_files, reply->nfiles);
            goto cleanup;
        }
        if (f->content_len > limits->max_file_bytes) {
            svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' is %zu bytes, more than the "
                             "limit of %zu", f->path, f->content_len, limits->max_file_bytes);
            goto cleanup;
        }
        total += f->content_len;
        if (total > limits->max_total_bytes) {
            svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' brings the reply over the "
                             "limit of %zu bytes in all", f->path, limits->max_total_bytes);
            goto cleanup;
        }
    }

    /* "a" and "a/b" cannot both be files: found before anything is written
     * rather than halfway through. */
    refs = calloc(reply->nfiles, sizeof(*refs));
    prefix = malloc(SVC_FACTORY_PATH_MAX + 1);
    if (!refs || !prefix) {
        svc_factory_fail(perr, SVC_FACTORY_E_INTERNAL, "out of memory");
        goto cleanup;
    }
    for (i = 0; i < reply->nfiles; i++) {
        refs[i].path = reply->files[i].path;
        refs[i].index = i;
    }
    qsort(refs, reply->nfiles, sizeof(*refs), path_ref_cmp);
    for (i = 0; i < reply->nfiles; i++) {
        const svc_factory_file_t *f = &reply->files[i];
        size_t k;

        for (k = 0; k < f->path_len; k++) {
            if (f->path[k] != '/') {
                continue;
            }
            memcpy(prefix, f->path, k);
            prefix[k] = '\0';
            if (bsearch(prefix, refs, reply->nfiles, sizeof(*refs), path_ref_find)) {
                svc_factory_fail(perr, SVC_FACTORY_E_PATH, "path '%s' needs '%s' to be a "
                                 "directory, but the reply writes it as a file", f->path, prefix);
                goto cleanup;
            }
        }
    }
    rv = 0;
cleanup:
    free(prefix);
    free(refs);
    return rv;
}
