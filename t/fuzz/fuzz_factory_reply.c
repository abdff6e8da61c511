/*
 * fuzz_factory_reply.c: the model's answer as the factory reads it
 * (mod_svc/factory/svc_factory_reply.c): one object {summary, files:
 * [{path, content}]}, optionally in one ```json fence
 * (svc_factory_reply_parse), then every path and every limit checked
 * before anything is written (svc_factory_reply_check, svc_factory_
 * path_check). The answer is untrusted text: a model says what it likes,
 * and whoever wrote the document it worked from may have steered it.
 *
 * Input: three bytes for the limits (files, bytes per file, bytes in all;
 * as a task gives them), then the model's text.
 *
 * Properties: an answer accepted and checked writes only relative paths of
 * at most 1024 bytes and 32 components, none empty, '.', '..' or git's
 * own directory in any spelling a file system folds to it, no two the
 * same and none a directory of another, within the limits; whatever is
 * refused says why in valid UTF-8 (the message travels in a JSON line).
 */
#include "fuzz.h"
#include "svc_factory.h"

#include <strings.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void check_message(const svc_factory_err_t *err)
{
    json_t *msg = json_string(err->message);

    FUZZ_ASSERT(err->code != NULL);
    FUZZ_ASSERT(msg != NULL);
    json_decref(msg);
}

static void check_path(const char *path, size_t len)
{
    size_t start = 0, i, depth = 0;

    FUZZ_ASSERT(len >= 1 && len <= SVC_FACTORY_PATH_MAX && strlen(path) == len);
    FUZZ_ASSERT(path[0] != '/' && !strchr(path, '\\'));
    for (i = 0; i <= len; i++) {
        if (i == len || path[i] == '/') {
            size_t n = i - start;
            char comp[SVC_FACTORY_NAME_MAX + 1];

            FUZZ_ASSERT(n >= 1 && n <= SVC_FACTORY_NAME_MAX);
            memcpy(comp, path + start, n);
            comp[n] = '\0';
            FUZZ_ASSERT(strcmp(comp, ".") && strcmp(comp, ".."));
            FUZZ_ASSERT(strcasecmp(comp, ".git") && strncasecmp(comp, ".git:", 5)
                        && strcasecmp(comp, ".git.") && strcasecmp(comp, ".git ")
                        && strcasecmp(comp, "git~1"));
            depth++;
            start = i + 1;
        }
        else {
            FUZZ_ASSERT((unsigned char)path[i] >= 0x20 && path[i] != 0x7f);
        }
    }
    FUZZ_ASSERT(depth <= SVC_FACTORY_DEPTH_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = { data, size };
    svc_factory_limits_t limits;
    svc_factory_reply_t reply;
    svc_factory_err_t err;
    size_t i, j, total = 0;

    limits.max_files = 1 + fuzz_byte(&in) % 16;
    limits.max_file_bytes = 1 + (size_t)fuzz_byte(&in) * 64;
    limits.max_total_bytes = 1 + (size_t)fuzz_byte(&in) * 256;
    memset(&err, 0, sizeof(err));
    if (svc_factory_reply_parse(&reply, (const char *)in.data, in.data ? in.size : 0, &err)
        < 0) {
        FUZZ_ASSERT(reply.doc == NULL && reply.files == NULL);
        check_message(&err);
        return 0;
    }
    FUZZ_ASSERT(reply.nfiles >= 1 && reply.summary && *reply.summary);
    if (svc_factory_reply_check(&reply, &limits, &err) < 0) {
        check_message(&err);
        svc_factory_reply_free(&reply);
        return 0;
    }
    FUZZ_ASSERT(reply.nfiles <= limits.max_files);
    for (i = 0; i < reply.nfiles; i++) {
        const svc_factory_file_t *f = &reply.files[i];

        check_path(f->path, f->path_len);
        FUZZ_ASSERT(f->content_len <= limits.max_file_bytes);
        total += f->content_len;
        for (j = 0; j < reply.nfiles; j++) {
            const svc_factory_file_t *g = &reply.files[j];

            if (i == j) {
                continue;
            }
            FUZZ_ASSERT(strcmp(f->path, g->path) != 0);
            /* g is not a directory of f. */
            FUZZ_ASSERT(!(g->path_len < f->path_len && f->path[g->path_len] == '/'
                          && memcmp(f->path, g->path, g->path_len) == 0));
        }
    }
    FUZZ_ASSERT(total <= limits.max_total_bytes);
    svc_factory_reply_free(&reply);
    return 0;
}
