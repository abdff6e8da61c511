/*
 * common.c: the set-up the service's fuzz targets share (fuzz_svc.h), and
 * APR pools that AddressSanitizer can see into.
 *
 * A pool hands out pieces of 8 KiB blocks, so a parser that writes or reads
 * a few bytes past what it allocated lands in the next piece and no
 * sanitizer notices. Here apr_palloc is replaced (the program's definition
 * wins over libapr's, for libapr's own calls too: apr_pstrdup, tables,
 * arrays): once the targets run, every allocation is a malloc of exactly
 * the size asked for, freed by a cleanup of its pool, so ASan reports an
 * overflow at its first byte and a use after the pool's end. The cleanup's
 * own record comes from the real apr_palloc (found with dlsym), which is
 * what `busy` is for: apr_pool_cleanup_register allocates. libFuzzer runs
 * a target on one thread. (apr_psprintf writes into the pool's block
 * itself and stays as it is.)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include "fuzz_svc.h"
#include "svc_areas.h"

#include <dlfcn.h>

typedef void *(*palloc_fn)(apr_pool_t *p, apr_size_t size);

static palloc_fn real_palloc;
static int busy;
static int ready;
static apr_pool_t *root;
static svc_config_t *conf;

static apr_status_t free_piece(void *data)
{
    free(data);
    return APR_SUCCESS;
}

void *apr_palloc(apr_pool_t *p, apr_size_t size);

void *apr_palloc(apr_pool_t *p, apr_size_t size)
{
    void *m;

    if (!real_palloc) {
        real_palloc = (palloc_fn)dlsym(RTLD_NEXT, "apr_palloc");
        if (!real_palloc) {
            fprintf(stderr, "fuzz common.c: apr_palloc not found in libapr\n");
            abort();
        }
    }
    /*
     * Before the targets run (APR's own start), inside the cleanup's
     * registration, and for the root pool, pools are APR's. What the root
     * holds lives as long as the process, and its blocks may be mapped
     * rather than malloc'd (APR_ALLOCATOR_USES_MMAP), where LeakSanitizer
     * does not look: a piece that only a cleanup record in them points to
     * (an array's buffer after it grew) would look leaked at exit.
     */
    if (!ready || busy || p == root) {
        return real_palloc(p, size);
    }
    m = malloc(size ? size : 1);
    if (!m) {
        abort();
    }
    busy = 1;
    apr_pool_cleanup_register(p, m, free_piece, apr_pool_cleanup_null);
    busy = 0;
    return m;
}

void fuzz_init(void)
{
    if (root) {
        return;
    }
    apr_initialize();
    if (svc_crypto_init() != APR_SUCCESS) {
        fprintf(stderr, "fuzz: libsodium did not start\n");
        abort();
    }
    apr_pool_create(&root, NULL);
    ready = 1;

    conf = apr_pcalloc(root, sizeof(*conf));
    svc_config_defaults(conf, root);
    svc_config_default_rates(conf, root);
    /* Fixed keys, one pattern each, so seeds can carry what they sign. */
    memset(conf->pat_key, 0x11, sizeof(conf->pat_key));
    memset(conf->session_key, 0x22, sizeof(conf->session_key));
    memset(conf->box_key, 0x33, sizeof(conf->box_key));
    memset(conf->signin_key, 0x44, sizeof(conf->signin_key));
    memset(conf->share_key, 0x55, sizeof(conf->share_key));
    memset(conf->cursor_key, 0x66, sizeof(conf->cursor_key));
    conf->have_secret = 1;
    svc_areas_configure(conf);
}

apr_pool_t *fuzz_root(void)
{
    return root;
}

svc_config_t *fuzz_conf(void)
{
    return conf;
}

svc_ctx_t *fuzz_ctx(apr_pool_t *p)
{
    svc_ctx_t *ctx = svc_ctx_create(p, conf);

    ctx->headers_in = apr_table_make(p, 4);
    ctx->client_ip = "192.0.2.1";
    ctx->request_id = "req_fuzz";
    ctx->self_origin = "https://svc.example";
    ctx->is_tls = 1;
    return ctx;
}

int fuzz_check_problem(svc_ctx_t *ctx, apr_status_t rv)
{
    svc_problem_t *pr = svc_ctx_problem(ctx, rv);
    json_error_t jerr;
    json_t *doc;

    FUZZ_ASSERT(pr != NULL);
    svc_ctx_render_problem(ctx, pr);
    FUZZ_ASSERT(ctx->resp_body != NULL);
    doc = json_loadb(ctx->resp_body, ctx->resp_len, 0, &jerr);
    if (!json_is_object(doc)) {
        fprintf(stderr, "fuzz: the problem document is not a JSON object: %.300s\n"
                "(status %d, code %s, detail %.300s)\n", ctx->resp_body, pr->status,
                pr->code ? pr->code : "(none)", pr->detail ? pr->detail : "(none)");
    }
    FUZZ_ASSERT(json_is_object(doc));
    FUZZ_ASSERT(json_integer_value(json_object_get(doc, "status")) == pr->status);
    FUZZ_ASSERT(json_is_string(json_object_get(doc, "code")));
    FUZZ_ASSERT(pr->status >= 400 && pr->status <= 599);
    if (pr->errors) {
        FUZZ_ASSERT(json_array_size(json_object_get(doc, "errors"))
                    == json_array_size(pr->errors));
    }
    json_decref(doc);
    return pr->status;
}
