/*
 * fuzz_webhook.c: a code-hosting provider's webhook delivery as
 * svc_h_vcs_webhook reads it (areas/vcs/svc_vcs_webhook.c), up to where it
 * would write to the database: X-Hub-Signature-256 checked over the exact
 * bytes (svc_vcs_signature_ok), then X-GitHub-Event and X-GitHub-Delivery,
 * the body as strict JSON, its action and installation id, and the lists
 * of repositories it names (svc_vcs_repo_list).
 *
 * Input: a mode byte, then "<signature>\n<event>\n<delivery>\n<body>".
 * Mode 0 takes the signature header as given; 1 replaces it with the
 * body's true signature under the webhook secret (lowercase hex), 2 the
 * same in uppercase hex, so the parsing after the signature is reached.
 *
 * Properties: a signature holds exactly when it is "sha256=" and the 64
 * hex digits (either case) of HMAC-SHA256(secret, body); every refusal is
 * a problem document (401, or 400 after the signature); the repository
 * lists hold only objects with an integer id, a full_name of at most 201
 * bytes and a boolean private, and are valid JSON.
 */
#include "fuzz_svc.h"
#include "svc_vcs_webhook.h"

#include <apr_lib.h>

static const char secret[] = "It's a Secret to Everybody";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_init();
    return 0;
}

static const char *true_signature(apr_pool_t *p, const char *body, apr_size_t len, int upper)
{
    unsigned char mac[32];
    char *hex;
    int i;

    svc_hmac_sha256(mac, (const unsigned char *)secret, strlen(secret),
                    (const unsigned char *)body, len);
    hex = svc_hex(p, mac, sizeof(mac));
    for (i = 0; upper && hex[i]; i++) {
        hex[i] = (char)apr_toupper(hex[i]);
    }
    return apr_pstrcat(p, "sha256=", hex, NULL);
}

static void check_repos(apr_pool_t *p, const json_t *doc, const char *member)
{
    json_t *list = svc_vcs_repo_list(p, json_object_get(doc, member)), *r, *back;
    json_error_t jerr;
    size_t i;

    FUZZ_ASSERT(json_is_array(list));
    json_array_foreach(list, i, r) {
        FUZZ_ASSERT(json_is_integer(json_object_get(r, "id")));
        FUZZ_ASSERT(json_is_string(json_object_get(r, "full_name")));
        FUZZ_ASSERT(strlen(svc_json_str(r, "full_name")) <= 201);
        FUZZ_ASSERT(json_is_boolean(json_object_get(r, "private")));
        FUZZ_ASSERT(json_object_size(r) == 3);
    }
    back = json_loads(svc_json_dump(p, list), 0, &jerr);
    FUZZ_ASSERT(json_equal(back, list));
    json_decref(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = { data, size };
    const char *sig, *event, *delivery, *body, *err, *action, *want;
    apr_size_t len;
    json_t *doc, *jid;
    unsigned mode;
    svc_ctx_t *ctx;
    apr_pool_t *p;
    int ok;

    apr_pool_create(&p, fuzz_root());
    ctx = fuzz_ctx(p);
    ctx->method = "POST";
    ctx->path = "/webhooks/vcs";
    mode = fuzz_byte(&in) % 3;
    sig = fuzz_cut(&in, p, '\n', NULL);
    event = fuzz_cut(&in, p, '\n', NULL);
    delivery = fuzz_cut(&in, p, '\n', NULL);
    body = fuzz_cut(&in, p, -1, &len);
    if (!body) {
        body = "";
        len = 0;
    }
    if (mode > 0) {
        sig = true_signature(p, body, len, mode == 2);
    }
    ok = svc_vcs_signature_ok(p, secret, strlen(secret), sig, body, len);
    want = true_signature(p, body, len, 0);
    FUZZ_ASSERT(ok == (sig && strlen(sig) == strlen(want) && strncmp(sig, "sha256=", 7) == 0
                       && strcasecmp(sig + 7, want + 7) == 0));
    if (!ok) {
        svc_fail(ctx, 401, "invalid_signature", "X-Hub-Signature-256 does not hold.");
        FUZZ_ASSERT(fuzz_check_problem(ctx, SVC_EPROBLEM) == 401);
        goto done;
    }
    if (!svc_word_valid(event, 100) || !svc_word_valid(delivery, 100)) {
        goto done;
    }
    if (svc_json_parse_body(&doc, body, len, p, &err) != APR_SUCCESS) {
        svc_fail(ctx, 400, "invalid_json", "The delivery's body: %s", err);
        FUZZ_ASSERT(fuzz_check_problem(ctx, SVC_EPROBLEM) == 400);
        goto done;
    }
    action = svc_json_str(doc, "action");
    if (action && !svc_word_valid(action, 100)) {
        action = NULL;
    }
    /* What the handler records: the action only as a word, the id only
     * when positive. */
    FUZZ_ASSERT(!action || svc_word_valid(action, 100));
    jid = json_object_get(json_object_get(doc, "installation"), "id");
    FUZZ_ASSERT(!json_is_integer(jid) || json_integer_value(jid) <= 0
                || apr_psprintf(p, "%" APR_INT64_T_FMT, (apr_int64_t)json_integer_value(jid))
                   != NULL);
    check_repos(p, doc, "repositories");
    check_repos(p, doc, "repositories_added");
    check_repos(p, doc, "repositories_removed");
done:
    apr_pool_destroy(p);
    return 0;
}
