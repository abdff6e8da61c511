/*
 * svc_run_model.h: the model calls of a run, made by the supervisor for the
 * factory (docs/api/factory-protocol.md: "model" and "model_reply" lines),
 * with the org's default provider (svc_providers.h). The key stays here:
 * the sandbox has no network and never sees it.
 *
 * A call runs on a thread of its own, so the run's thread keeps reading the
 * factory's output, and can stop the run (cancel, timeout) while a slow
 * provider has not answered yet. Every call's usage is recorded against the
 * run, answered or not.
 */
#ifndef SVC_RUN_MODEL_H
#define SVC_RUN_MODEL_H

#include "svc_run_log.h"

typedef struct svc_run_model_t svc_run_model_t;

/*
 * The org's default provider, loaded into p (used by the calling thread
 * only). Every answer may be up to reply_cap bytes (svc_runner_reply_cap).
 * SVC_ENOTFOUND when the org has none; APR_EINVAL when its key can no
 * longer be opened; a database failure otherwise.
 */
apr_status_t svc_run_model_open(svc_run_model_t **pm, svc_db_t *db, apr_pool_t *p,
                                const svc_supervisor_conf_t *sc, const svc_run_job_t *job,
                                apr_size_t reply_cap);

/* Which provider (for the log): "kind model". */
const char *svc_run_model_describe(const svc_run_model_t *m);

/* Whether the run works as an agent (the provider's tools setting), and
 * why, for the log. */
int svc_run_model_agent(const svc_run_model_t *m, const char **pwhy);

/*
 * Starts the call a "model" line asks for; when it is done, one byte is
 * written to notify_fd. APR_EINVAL, with *perr for the log, when the line is
 * not a valid request; APR_EBUSY while another call runs. A request of
 * agent mode (with "tools") past the run's budgets is not made: *pnow is
 * then the model_reply to send at once (step_limit: more tool calls were
 * handed out than SvcRunMaxSteps allows; token_limit: the calls so far used
 * SvcRunMaxTokens).
 */
apr_status_t svc_run_model_start(svc_run_model_t *m, const json_t *line, int notify_fd,
                                 const char **perr, const char **pnow);

/* The tokens the run's finished calls used, in and out. */
void svc_run_model_tokens(const svc_run_model_t *m, apr_int64_t *pin, apr_int64_t *pout);

/* True while a call runs. */
int svc_run_model_busy(const svc_run_model_t *m);

/*
 * Waits for the running call to end (at once when notify_fd was written)
 * and returns the "model_reply" line for the factory (JSON, no newline),
 * after noting the call in the log.
 */
const char *svc_run_model_finish(svc_run_model_t *m, svc_run_log_t *log, apr_pool_t *p);

/* Records the usage of the calls that ended and are not recorded yet. */
apr_status_t svc_run_model_record(svc_run_model_t *m, svc_db_t *db);

/* True when usage waits to be recorded. */
int svc_run_model_unrecorded(const svc_run_model_t *m);

/* Waits for a running call (a stopped run still waits for its answer, which
 * may have cost money) and frees what the calls used. */
void svc_run_model_close(svc_run_model_t *m);

#endif /* SVC_RUN_MODEL_H */
