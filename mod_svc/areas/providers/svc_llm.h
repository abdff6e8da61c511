/*
 * svc_llm.h: the wire side of model providers (providers-private): what a
 * loaded provider is, and how the two APIs we speak are called.
 */
#ifndef SVC_LLM_H
#define SVC_LLM_H

#include "svc_providers.h"

struct svc_provider_t {
    const char *id, *org_id, *name;
    const char *kind;           /* "openai" or "anthropic" */
    const char *base_url;       /* no trailing slash; the API paths start with /v1 */
    const char *model;
    const char *key;            /* opened; wiped with the pool */
    const char *tools;          /* "auto", "on" or "off": whether runs use tools */
    int tools_detected;         /* what the last test found: 1, 0, or -1 (never tested) */
};

#define SVC_LLM_KIND_OPENAI    "openai"
#define SVC_LLM_KIND_ANTHROPIC "anthropic"
/* The most tokens one call may report, input or output: more than any
 * model reads or writes at once (the largest windows hold a few million),
 * far from what would overflow the usage table's sums. A reply beyond it
 * is refused (provider_error). */
#define SVC_LLM_MAX_TOKENS 100000000

/* The Messages API version we speak (the anthropic-version header). */
#define SVC_ANTHROPIC_VERSION  "2023-06-01"

/* The vendor's public API for a kind, when a provider names no base URL. */
const char *svc_llm_default_url(const char *kind);

/*
 * A base URL as stored: checked (http or https, a host, no query, fragment
 * or user info, and the outbound client's address guard as it will apply
 * at every call: svc_http_check_untrusted) and without trailing slashes or
 * a trailing "/v1", since the API paths add it. NULL when fine, else why
 * not.
 */
const char *svc_llm_check_url(apr_pool_t *p, const char *url, int allow_private,
                              const char **pnorm);

/*
 * The models the key may use: GET {base}/v1/models within timeout_ms.
 * *pmodels is a JSON array of model ids (bound to p) on success; *preply
 * (always set) carries the status, the duration and, on failure, the
 * error as for completions.
 */
apr_status_t svc_llm_models(apr_pool_t *p, const svc_config_t *conf, const svc_provider_t *prov,
                            long timeout_ms, json_t **pmodels, svc_llm_reply_t **preply);

/* Something a provider said, fit for a client and a log: the key and
 * anything secret-shaped redacted, printable, at most `max` bytes. */
const char *svc_llm_scrub(apr_pool_t *p, const svc_provider_t *prov, const char *text,
                          apr_size_t max);

/*
 * The readers of what a provider answers (svc_provider_complete's, and
 * t/fuzz/fuzz_llm.c's): a completion's text, token counts and whether it
 * was cut off, from the answer's JSON object in the provider's kind of
 * API (APR_EINVAL when it has not that shape); the JSON object in a
 * model's text (itself, inside a ``` fence, or between the first '{' and
 * the last '}': models asked for JSON by instruction only sometimes say a
 * word around it), compact, or NULL; and the provider's message in an
 * error answer ({"error": {"message": ...}} of OpenAI, Anthropic and most
 * compatible servers, {"error": "..."}, {"message": ...}, or the body),
 * scrubbed.
 */
apr_status_t svc_llm_read_completion(apr_pool_t *p, const svc_provider_t *prov,
                                     const json_t *doc, svc_llm_reply_t *reply);
const char *svc_llm_json_object_text(apr_pool_t *p, const char *text);
const char *svc_llm_error_message(apr_pool_t *p, const svc_provider_t *prov,
                                  const svc_http_resp_t *resp);

#endif /* SVC_LLM_H */
