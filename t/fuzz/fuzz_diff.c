/*
 * fuzz_diff.c: the unified-diff writer and its strict applier
 * (base/svc_diff.c). A document's patch is the diff of its text to what the
 * model proposed (both outside bytes: the document's author and the model
 * write them), and it is applied again when the patch is accepted.
 *
 * Input: a mode byte, then two texts, each ended by a NUL byte or the end
 * (documents hold no NUL: JSON refuses it).
 *   even  "<text>\0<diff>": the diff, as stored, applied to the text;
 *   odd   "<old>\0<new>": the diff of old to new (with the context of the
 *         mode byte's high bits, and the default work budget, as documents
 *         use), applied to old.
 *
 * Properties: a diff the writer made applies to its old text and gives the
 * new one byte for byte, and counts as many added and removed lines as it
 * holds; equal texts give no diff; a diff the applier accepts gives a text
 * that, diffed against the old one again, rebuilds it; the applier's
 * output length is what it says.
 */
#include "fuzz_svc.h"
#include "svc_diff.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    return 0;
}

/* diff(a, b) applies to a and gives b. */
static void check_round_trip(apr_pool_t *p, const char *a, apr_size_t alen, const char *b,
                             apr_size_t blen, int context)
{
    const char *d = svc_diff_unified(p, a, alen, b, blen, "doc.md", context, 0);
    const char *out = NULL, *err = NULL;
    apr_size_t outlen = 0;
    int added, removed;

    FUZZ_ASSERT(d != NULL);
    if (alen == blen && memcmp(a, b, alen) == 0) {
        FUZZ_ASSERT(*d == '\0');
    }
    if (svc_diff_apply(p, a, alen, d, strlen(d), &out, &outlen, &err) != APR_SUCCESS) {
        fprintf(stderr, "fuzz_diff: the writer's diff is refused: %s\n%s\n", err, d);
        FUZZ_ASSERT(!"a diff the writer made applies");
    }
    FUZZ_ASSERT(outlen == blen && memcmp(out, b, blen) == 0);
    FUZZ_ASSERT(out[outlen] == '\0');
    svc_diff_stat(d, strlen(d), &added, &removed);
    FUZZ_ASSERT(added >= 0 && removed >= 0);
    FUZZ_ASSERT((added == 0 && removed == 0) == (*d == '\0'));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = { data, size };
    const char *a, *b, *out, *err;
    apr_size_t alen, blen, outlen;
    unsigned mode;
    apr_pool_t *p;

    apr_pool_create(&p, fuzz_root());
    mode = fuzz_byte(&in);
    a = fuzz_cut(&in, p, 0, &alen);
    b = fuzz_cut(&in, p, 0, &blen);
    if (!a) {
        goto done;
    }
    if (!b) {
        b = "";
        blen = 0;
    }
    if (mode & 1) {
        check_round_trip(p, a, alen, b, blen, (int)(mode >> 1) % 8);
        goto done;
    }
    out = NULL;
    err = NULL;
    if (svc_diff_apply(p, a, alen, b, blen, &out, &outlen, &err) == APR_SUCCESS) {
        int added, removed;

        FUZZ_ASSERT(out && out[outlen] == '\0' && strlen(out) == outlen);
        svc_diff_stat(b, blen, &added, &removed);
        check_round_trip(p, a, alen, out, outlen, SVC_DIFF_CONTEXT);
    }
    else {
        FUZZ_ASSERT(err && *err);
    }
done:
    apr_pool_destroy(p);
    return 0;
}
