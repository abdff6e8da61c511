/*
 * svc_estimate.h: what building a request should cost (pipeline-private):
 * tokens reckoned from what each task's run is given, priced by the model
 * of the org's default provider. docs/api/pipeline.md says how, and why.
 */
#ifndef SVC_ESTIMATE_H
#define SVC_ESTIMATE_H

#include "svc_pipeline.h"
#include "svc_pl_store.h"
#include "svc_providers.h"

/* What the factory adds to every run's instructions (its own prompt, the
 * repository's listing), in tokens. */
#define SVC_ESTIMATE_PROMPT_TOKENS 300
/* The most a run's one model call may answer (the factory's max_tokens). */
#define SVC_ESTIMATE_OUTPUT_MAX 16000
#define SVC_ESTIMATE_OUTPUT_MIN 1000

/* Tokens of text, reckoned: one per 4 bytes, rounded up. */
apr_int64_t svc_estimate_tokens(apr_size_t bytes);

/* A task's input: its instructions' tokens and the factory's prompt. */
apr_int64_t svc_estimate_input(apr_size_t instruction_bytes);

/* A task's output: three tokens per token of its section, within
 * SVC_ESTIMATE_OUTPUT_MIN and SVC_ESTIMATE_OUTPUT_MAX. */
apr_int64_t svc_estimate_output(apr_size_t section_bytes);

/* The cost in dollars, rounded to a millionth. */
double svc_cost_of(const svc_price_t *price, apr_int64_t input_tokens,
                   apr_int64_t output_tokens);

/*
 * The estimate of building `req` (*pest, a new reference): {"currency",
 * "provider", "model", "tasks": [{"task_id", "document_id", "title",
 * "input_tokens", "output_tokens", "cost"}], "total", "basis"}; before
 * build, one entry per section (task_id null).
 */
apr_status_t svc_estimate_request(svc_ctx_t *ctx, svc_db_t *db, const svc_request_t *req,
                                  json_t **pest);

/* Dollars rounded to a millionth (costs are not negative). */
double svc_round_micro(double dollars);

/* JSON text with costs written as decimals (JSON_REAL_PRECISION), in p. */
const char *svc_estimate_dump(apr_pool_t *p, const json_t *v);

apr_status_t svc_h_requests_cost_estimate(svc_ctx_t *ctx);

/* The estimate. */
extern const svc_schema_t svc_schema_estimate;

#endif /* SVC_ESTIMATE_H */
