/*
 * svc_providers.h: the providers area: organizations' own model providers, their keys, calls and usage.
 * May call base/ and the kernel; other areas, the glue and svcctl call it through this header only.
 *
 * An organization registers the model it pays for: an OpenAI-compatible
 * chat-completions server (OpenAI, Azure-style gateways, Ollama,
 * llama.cpp, vLLM) or Anthropic's Messages API, with its key, which is
 * sealed at rest and never shown again. One provider per org is the
 * default; features that use "the org's model" use that one.
 *
 * Calling a model works outside an HTTP request too (the run supervisor
 * has a plain libpq handle and no request context), in three steps, so a
 * model call never holds a database connection or a transaction while it
 * waits:
 *
 *     svc_provider_default(db, p, conf, org_id, &prov);   short database use
 *     ...give the connection back...
 *     svc_provider_complete(p, conf, prov, &req, &reply); no database
 *     svc_provider_record_usage(db, p, prov, &usage, reply);  short database use
 */
#ifndef SVC_PROVIDERS_H
#define SVC_PROVIDERS_H

#include "svc_kernel.h"

/* The area's routes (svc_providers_routes.c). */
extern const svc_area_t svc_providers_area;

/* One message of a conversation. */
typedef struct {
    const char *role;               /* "user" or "assistant" */
    const char *content;
} svc_llm_msg_t;

typedef struct {
    const char *system;             /* instructions; may be NULL */
    const svc_llm_msg_t *messages;
    int nmessages;
    /* Ask for one JSON object: OpenAI's response_format json_object;
     * Anthropic is told so, and the object is taken out of its text. Either
     * way the reply's content is then the object's JSON text, or the call
     * fails with provider_error. */
    int json;
    int max_tokens;
    long timeout_ms;                /* 0: SvcModelTimeout */
    /*
     * Tool calling (a run's agent mode). With tools (an array of {name,
     * description, parameters: JSON Schema}), the conversation is
     * `conversation` instead of messages: an array, in the provider-neutral
     * form of the factory protocol (docs/api/factory-protocol.md), of
     * {role: user, content}, {role: assistant, content, tool_calls: [{id,
     * name, arguments: object}]} and {role: tool, results: [{id, content,
     * is_error}]}; each is sent in the provider's own form (OpenAI's tools,
     * tool_calls and role "tool" messages; Anthropic's tools, tool_use and
     * tool_result blocks). Checked by the caller.
     */
    const json_t *tools;
    const json_t *conversation;
    /* Forces a call of this tool (the provider test's probe); NULL: the
     * model chooses. */
    const char *tool_choice;
    /* The largest answer accepted, bytes; 0: room for a document
     * (SvcDocumentLimit), at least 4 MiB. */
    apr_size_t max_response;
} svc_llm_request_t;

typedef struct {
    const char *content;            /* the text, on success ("" is possible) */
    apr_int64_t input_tokens, output_tokens;
    long duration_ms;
    int http_status;                /* 0 when there was no answer */
    int truncated;                  /* the model stopped at max_tokens */
    int too_large;                  /* the answer was larger than max_response */
    /* With tools: the calls the model made, [{id, name, arguments: object}],
     * with arguments {} and arguments_error (why) when the provider's were
     * not a JSON object; and why it stopped: "end", "tool_calls" or
     * "max_tokens". Bound to the reply's pool. */
    json_t *tool_calls;
    const char *stop;
    /* NULL on success; else provider_refused (401/403: the key),
     * provider_rate_limited (429), provider_timeout, provider_error. */
    const char *error_code;
    /* The provider's own message, or ours, with the key and anything
     * secret-shaped redacted: fit for clients and logs. */
    const char *error;
} svc_llm_reply_t;

/* A loaded provider, its key opened; lives in (and is wiped with) the pool
 * it was loaded into. */
typedef struct svc_provider_t svc_provider_t;

/* Short database use: the org's default provider. SVC_ENOTFOUND when the
 * org has none; APR_EINVAL when its key cannot be opened (the server
 * secret changed since it was stored). */
apr_status_t svc_provider_default(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                                  const char *org_id, svc_provider_t **pprov);

/* No database: calls the provider within the timeout, and always fills
 * *preply (from p). APR_SUCCESS exactly when (*preply)->error_code is NULL. */
apr_status_t svc_provider_complete(apr_pool_t *p, const svc_config_t *conf,
                                   const svc_provider_t *prov, const svc_llm_request_t *req,
                                   svc_llm_reply_t **preply);

/* What a call was for, and for whom, for the usage table billing reads. */
typedef struct {
    const char *org_id;
    const char *user_id;            /* may be NULL (a run of the system) */
    const char *purpose;            /* "document.regenerate", "document.patch",
                                     * "provider.test", "run" */
    const char *subject_type;       /* "document", "provider", "run", ... */
    const char *subject_id;
} svc_usage_t;

/* Short database use: records one call, successful or not (a reply whose
 * error_code is set is recorded as an error). Runs in the caller's
 * transaction if one is open, else on its own. */
apr_status_t svc_provider_record_usage(svc_db_t *db, apr_pool_t *p, const svc_provider_t *prov,
                                       const svc_usage_t *u, const svc_llm_reply_t *reply);

/*
 * Whether runs let this provider's model work with tools (the agent loop):
 * its `tools` setting, on, off, or auto (what its last test found; tools
 * until a test found none). *pwhy says which, for a run's log.
 * svc_provider_store.c.
 */
int svc_provider_uses_tools(apr_pool_t *p, const svc_provider_t *prov, const char **pwhy);

/* Short database use: records what a test found about tool calling. */
apr_status_t svc_provider_tools_found(svc_db_t *db, apr_pool_t *p, const svc_provider_t *prov,
                                      int works);

/* Short database use: the keys of all the org's providers, opened (*pkeys,
 * of const char *, in p; keys that no longer open are left out): what a
 * run's log hides wherever they appear. */
apr_status_t svc_provider_org_keys(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                                   const char *org_id, apr_array_header_t **pkeys);

/* Short database use: the org's calls about one subject, in order, as a
 * JSON array (bound to p) of {call, input_tokens, output_tokens,
 * duration_ms, status, error_code, model}: a run's usage, call by call. */
apr_status_t svc_provider_usage_calls(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                      const char *subject_type, const char *subject_id,
                                      json_t **pcalls);

/*
 * Claims on what a model call is about, for changes that use one answer
 * only (a request's table of contents, a document's regeneration): the
 * first caller claims the subject, calls, writes its change and gives the
 * claim back; a caller that finds it held answers 409 instead of paying for
 * a call whose answer would be thrown away. svc_provider_claim.c.
 *
 *     svc_model_claim(db, p, conf, org_id, "request:<org>/<id>", &token);
 *     ...svc_provider_default, give the connection back, call, write...
 *     svc_model_unclaim(db, p, "request:<org>/<id>", token);
 *
 * Each is one statement of its own, outside any transaction, so nothing
 * is held open across the call. SVC_ECONFLICT when another caller holds
 * the subject. A claim lasts SvcModelTimeout and a margin; one whose
 * holder died (or could not give it back) is taken over after that.
 * Unclaiming with a NULL token does nothing, and never removes a claim
 * another caller took over.
 */
#define SVC_MODEL_CLAIM_MARGIN_MS 60000

apr_status_t svc_model_claim(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                             const char *org_id, const char *subject, const char **ptoken);

apr_status_t svc_model_unclaim(svc_db_t *db, apr_pool_t *p, const char *subject,
                               const char *token);

/* What a loaded provider is. */
const char *svc_provider_id(const svc_provider_t *prov);
const char *svc_provider_kind(const svc_provider_t *prov);
const char *svc_provider_model(const svc_provider_t *prov);

/* The calls recorded against one subject with one model, summed. */
typedef struct {
    const char *subject_id;
    const char *model;
    apr_int64_t calls;
    apr_int64_t input_tokens;
    apr_int64_t output_tokens;
} svc_usage_sum_t;

/*
 * Short database use: the org's recorded calls about each of `subject_ids`
 * (const char *, of `subject_type`: the runs of a pipeline request, say),
 * summed per subject and model (*psums, of svc_usage_sum_t, in p; subjects
 * without calls are absent). svc_provider_usage.c.
 */
apr_status_t svc_provider_usage_sums(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                     const char *subject_type,
                                     const apr_array_header_t *subject_ids,
                                     apr_array_header_t **psums);

/*
 * Model prices (svc_provider_price.c): SvcModelPrice first, then the table
 * shipped with the service. The pipeline's estimates and the billing
 * area's costs read the same prices.
 */

/* A model's price in US dollars per million tokens, and where it is from. */
typedef struct {
    const char *entry;          /* the table's name for it */
    double input_per_mtok;
    double output_per_mtok;
    const char *source;         /* "SvcModelPrice" or "the shipped table" */
} svc_price_t;

/*
 * The price of `model`: the entry named exactly so, else the longest entry
 * the model's name starts with, followed by '-' (dated and "-latest" names:
 * gpt-4o-2024-08-06, claude-sonnet-4-20250514), from SvcModelPrice and the
 * shipped table together, SvcModelPrice winning between equals. 0 when no
 * price is known.
 */
int svc_price_of(const svc_config_t *conf, const char *model, svc_price_t *pprice);

/*
 * Every entry of both tables as JSON text (in p), for SQL that prices what
 * it sums: [{"entry", "input", "output", "rank"}], rank 0 for SvcModelPrice
 * and 1 for the shipped table. Matched in SQL as svc_price_of matches:
 * exact name first, then the longest entry followed by '-', then the lower
 * rank.
 */
const char *svc_price_table_json(apr_pool_t *p, const svc_config_t *conf);

#endif /* SVC_PROVIDERS_H */
