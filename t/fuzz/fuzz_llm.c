/*
 * fuzz_llm.c: what a model provider answers, read as svc_provider_complete
 * reads it (areas/providers/svc_llm.c) once the HTTP exchange is over: a
 * 2xx answer's JSON object in the shape of the provider's API (OpenAI's
 * chat completion: choices[0].message.content, finish_reason, usage;
 * Anthropic's message: content[] of typed parts, stop_reason, usage), in
 * JSON mode the object in the model's text, and an error answer's message
 * (svc_llm_error_message), with the provider's key scrubbed out of
 * everything said about it (svc_llm_scrub).
 *
 * Input: a flags byte, then the answer's body. Flags: 1 Anthropic (else
 * OpenAI), 2 JSON mode, 4 an error answer (status 401, 429 or 500 by the
 * next bits) rather than a 2xx one.
 *
 * Properties: a completion read is valid UTF-8 with token counts of zero
 * or more; in JSON mode the content is one JSON object written compactly;
 * whatever is said about an answer (error messages, the body quoted when
 * it has the wrong shape) is printable ASCII within its bound and never
 * carries the key.
 */
#include "fuzz_svc.h"
#include "svc_llm.h"

static const char key[] = "sk-fuzz-0123456789abcdefghij";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    return 0;
}

static void check_said(const char *s, apr_size_t max)
{
    apr_size_t i, n;

    FUZZ_ASSERT(s != NULL);
    n = strlen(s);
    FUZZ_ASSERT(n <= max);
    for (i = 0; i < n; i++) {
        FUZZ_ASSERT((unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f);
    }
    FUZZ_ASSERT(!strstr(s, key));
}

static int utf8_valid(const char *s)
{
    apr_size_t n = strlen(s), at = 0, k;
    unsigned long cp;

    while (at < n) {
        if ((k = svc_utf8_next((const unsigned char *)s + at, n - at, &cp)) == 0) {
            return 0;
        }
        at += k;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int error_status[] = { 401, 429, 500, 503 };
    fuzz_in_t in = { data, size };
    svc_provider_t prov;
    svc_http_resp_t resp;
    svc_llm_reply_t reply;
    json_error_t jerr;
    json_t *doc;
    unsigned flags;
    const char *body;
    apr_size_t len;
    apr_pool_t *p;

    apr_pool_create(&p, fuzz_root());
    flags = fuzz_byte(&in);
    memset(&prov, 0, sizeof(prov));
    prov.id = "llm_fuzz";
    prov.kind = (flags & 1) ? SVC_LLM_KIND_ANTHROPIC : SVC_LLM_KIND_OPENAI;
    prov.base_url = "https://llm.example";
    prov.model = "m";
    prov.key = key;
    memset(&resp, 0, sizeof(resp));
    body = fuzz_cut(&in, p, -1, &len);
    if (!body) {
        body = "";
        len = 0;
    }
    resp.body = apr_pstrmemdup(p, body, len);
    resp.body_len = len;
    resp.status = (flags & 4) ? error_status[(flags >> 3) & 3] : 200;

    if (flags & 4) {
        check_said(svc_llm_error_message(p, &prov, &resp), 500);
        goto done;
    }
    /* As svc_provider_complete: the answer's object, then its shape. */
    memset(&reply, 0, sizeof(reply));
    reply.content = "";
    doc = svc_json_pool(p, json_loadb(resp.body, resp.body_len, 0, &jerr));
    if (!json_is_object(doc) || svc_llm_read_completion(p, &prov, doc, &reply) != APR_SUCCESS) {
        check_said(svc_llm_scrub(p, &prov, resp.body, 200), 200);
        goto done;
    }
    FUZZ_ASSERT(reply.content && utf8_valid(reply.content));
    FUZZ_ASSERT(reply.input_tokens >= 0 && reply.output_tokens >= 0);
    if (flags & 2) {
        const char *obj = svc_llm_json_object_text(p, reply.content);

        if (obj) {
            json_t *back = json_loads(obj, JSON_REJECT_DUPLICATES, &jerr);
            char *again;

            FUZZ_ASSERT(json_is_object(back));
            again = json_dumps(back, JSON_COMPACT | JSON_ENCODE_ANY);
            FUZZ_ASSERT(again && strcmp(again, obj) == 0);
            free(again);
            json_decref(back);
        }
    }
done:
    apr_pool_destroy(p);
    return 0;
}
