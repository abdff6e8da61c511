/*
 * svc_run_model.c: a run's model calls (svc_run_model.h).
 */
#include "svc_run_model.h"
#include "svc_providers.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define MAX_MESSAGES   64
/* Agent mode: a conversation of SvcRunMaxSteps turns, with nudges. */
#define MAX_TURNS      (4 * 10000 + 64)
#define MAX_TOOLS      32
#define MAX_TOKENS_CAP 128000

typedef struct call_t call_t;

/* One call: its own pool (the call's thread allocates from it alone). */
struct call_t {
    svc_run_model_t *model;
    apr_pool_t *pool;
    svc_llm_request_t req;
    svc_llm_reply_t *reply;
    apr_int64_t id;
    int notify_fd;
    int recorded;
    int agent;                  /* the request had tools: the reply carries them */
};

struct svc_run_model_t {
    const svc_supervisor_conf_t *sc;
    const svc_run_job_t *job;
    svc_provider_t *prov;
    apr_pool_t *pool;
    apr_array_header_t *calls;  /* of call_t *, in order */
    call_t *running;
    pthread_t thread;
    apr_size_t reply_cap;
    apr_int64_t tool_calls;     /* handed to the factory so far */
};

apr_status_t svc_run_model_open(svc_run_model_t **pm, svc_db_t *db, apr_pool_t *p,
                                const svc_supervisor_conf_t *sc, const svc_run_job_t *job,
                                apr_size_t reply_cap)
{
    svc_run_model_t *m = apr_pcalloc(p, sizeof(*m));
    apr_status_t rv = svc_provider_default(db, p, sc->conf, job->org_id, &m->prov);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    m->sc = sc;
    m->job = job;
    m->pool = p;
    m->calls = apr_array_make(p, 2, sizeof(call_t *));
    m->reply_cap = reply_cap;
    *pm = m;
    return APR_SUCCESS;
}

int svc_run_model_agent(const svc_run_model_t *m, const char **pwhy)
{
    return svc_provider_uses_tools(m->pool, m->prov, pwhy);
}

void svc_run_model_tokens(const svc_run_model_t *m, apr_int64_t *pin, apr_int64_t *pout)
{
    int i;

    *pin = *pout = 0;
    for (i = 0; i < m->calls->nelts; i++) {
        call_t *c = APR_ARRAY_IDX(m->calls, i, call_t *);

        if (c != m->running && c->reply) {
            *pin += c->reply->input_tokens;
            *pout += c->reply->output_tokens;
        }
    }
}

const char *svc_run_model_describe(const svc_run_model_t *m)
{
    return apr_pstrcat(m->pool, svc_provider_kind(m->prov), " ", svc_provider_model(m->prov),
                       NULL);
}

static void *call_main(void *arg)
{
    call_t *c = arg;
    char byte = 1;

    svc_provider_complete(c->pool, c->model->sc->conf, c->model->prov, &c->req, &c->reply);
    while (write(c->notify_fd, &byte, 1) < 0 && errno == EINTR) {
    }
    return NULL;
}

/* A short string of the request: printable, bounded. */
static int plain_string(const json_t *v, apr_size_t min, apr_size_t max)
{
    return json_is_string(v) && json_string_length(v) >= min && json_string_length(v) <= max
           && strlen(json_string_value(v)) == json_string_length(v);
}

/*
 * The conversation of an agent-mode request in the neutral form
 * (svc_providers.h), checked shape by shape: the factory runs the model's
 * output, so its lines are not trusted beyond their form.
 */
static const char *check_conversation(const json_t *messages)
{
    size_t i, k;
    json_t *m, *c;

    json_array_foreach(messages, i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *key;
        json_t *v;

        if (!json_is_object(m) || !role) {
            return "each message is an object with a role";
        }
        json_object_foreach(m, key, v) {
            if (strcmp(key, "role") != 0 && strcmp(key, "content") != 0
                && strcmp(key, "tool_calls") != 0 && strcmp(key, "results") != 0) {
                return "a message has an unknown member";
            }
        }
        if (strcmp(role, "user") == 0) {
            if (!json_is_string(json_object_get(m, "content")) || json_object_size(m) != 2) {
                return "a user message is {role, content: string}";
            }
        }
        else if (strcmp(role, "assistant") == 0) {
            json_t *calls = json_object_get(m, "tool_calls");

            if (!json_is_string(json_object_get(m, "content")) || json_object_get(m, "results")
                || (calls && !json_is_array(calls))) {
                return "an assistant message is {role, content: string, tool_calls?: array}";
            }
            json_array_foreach(calls, k, c) {
                if (!json_is_object(c) || json_object_size(c) != 3
                    || !plain_string(json_object_get(c, "id"), 1, 256)
                    || !plain_string(json_object_get(c, "name"), 1, 256)
                    || !json_is_object(json_object_get(c, "arguments"))) {
                    return "a tool call is {id, name, arguments: object}";
                }
            }
        }
        else if (strcmp(role, "tool") == 0) {
            json_t *results = json_object_get(m, "results");

            if (!json_is_array(results) || json_object_size(m) != 2) {
                return "a tool message is {role, results: array}";
            }
            json_array_foreach(results, k, c) {
                if (!json_is_object(c) || json_object_size(c) != 3
                    || !plain_string(json_object_get(c, "id"), 1, 256)
                    || !json_is_string(json_object_get(c, "content"))
                    || !json_is_boolean(json_object_get(c, "is_error"))) {
                    return "a tool result is {id, content: string, is_error: boolean}";
                }
            }
        }
        else {
            return "a message's role is user, assistant or tool";
        }
    }
    return NULL;
}

static const char *check_tools(const json_t *tools)
{
    size_t i;
    json_t *t;

    if (json_array_size(tools) < 1 || json_array_size(tools) > MAX_TOOLS) {
        return "tools must list 1 to 32 tools";
    }
    json_array_foreach(tools, i, t) {
        if (!json_is_object(t) || !plain_string(json_object_get(t, "name"), 1, 64)
            || (json_object_get(t, "description")
                && !plain_string(json_object_get(t, "description"), 0, 4096))
            || !json_is_object(json_object_get(t, "parameters"))
            || json_object_size(t) > 3) {
            return "a tool is {name, description, parameters: object}";
        }
    }
    return NULL;
}

/* The "model" line, member by member; *perr says what is wrong. */
static apr_status_t parse_request(call_t *c, const json_t *line, const char **perr)
{
    const json_t *id = json_object_get(line, "id");
    const json_t *system = json_object_get(line, "system");
    const json_t *messages = json_object_get(line, "messages");
    const json_t *jm = json_object_get(line, "json");
    const json_t *mt = json_object_get(line, "max_tokens");
    const json_t *tools = json_object_get(line, "tools");
    const char *key, *why;
    json_t *v;
    svc_llm_msg_t *msgs;
    size_t i, n;

    json_object_foreach((json_t *)line, key, v) {
        if (strcmp(key, "type") && strcmp(key, "id") && strcmp(key, "system")
            && strcmp(key, "messages") && strcmp(key, "json") && strcmp(key, "max_tokens")
            && strcmp(key, "tools")) {
            *perr = apr_psprintf(c->pool, "unexpected member '%s'", key);
            return APR_EINVAL;
        }
    }
    if (!json_is_integer(id) || (system && !json_is_string(system))
        || !json_is_array(messages) || (jm && !json_is_boolean(jm))
        || (mt && !json_is_integer(mt)) || (tools && !json_is_array(tools))) {
        *perr = "id (integer) and messages (array) are required; system is a string, json a "
                "boolean, max_tokens an integer, tools an array";
        return APR_EINVAL;
    }
    n = json_array_size(messages);
    if (n < 1 || n > (tools ? MAX_TURNS : MAX_MESSAGES)) {
        *perr = apr_psprintf(c->pool, "messages must hold 1 to %d messages",
                             tools ? MAX_TURNS : MAX_MESSAGES);
        return APR_EINVAL;
    }
    if (mt && (json_integer_value(mt) < 1 || json_integer_value(mt) > MAX_TOKENS_CAP)) {
        *perr = apr_psprintf(c->pool, "max_tokens must be from 1 to %d", MAX_TOKENS_CAP);
        return APR_EINVAL;
    }
    if (tools) {
        if (jm && json_is_true(jm)) {
            *perr = "json and tools do not go together";
            return APR_EINVAL;
        }
        if ((why = check_tools(tools)) != NULL || (why = check_conversation(messages)) != NULL) {
            *perr = why;
            return APR_EINVAL;
        }
        /* Copies for the call's thread, freed with its pool. */
        c->req.tools = svc_json_pool(c->pool, json_deep_copy(tools));
        c->req.conversation = svc_json_pool(c->pool, json_deep_copy(messages));
        if (!c->req.tools || !c->req.conversation) {
            *perr = "out of memory";
            return APR_ENOMEM;
        }
        c->agent = 1;
    }
    else {
        msgs = apr_pcalloc(c->pool, sizeof(*msgs) * n);
        for (i = 0; i < n; i++) {
            const json_t *msg = json_array_get(messages, i);
            const json_t *role = json_object_get(msg, "role");
            const json_t *content = json_object_get(msg, "content");

            if (!json_is_object(msg) || json_object_size(msg) != 2 || !json_is_string(role)
                || !json_is_string(content)
                || (strcmp(json_string_value(role), "user") != 0
                    && strcmp(json_string_value(role), "assistant") != 0)) {
                *perr = "each message is {role: user|assistant, content: string}";
                return APR_EINVAL;
            }
            msgs[i].role = apr_pstrdup(c->pool, json_string_value(role));
            msgs[i].content = apr_pstrmemdup(c->pool, json_string_value(content),
                                             json_string_length(content));
        }
        c->req.messages = msgs;
        c->req.nmessages = (int)n;
    }
    c->id = json_integer_value(id);
    c->req.system = system ? apr_pstrdup(c->pool, json_string_value(system)) : NULL;
    c->req.json = jm ? json_is_true(jm) : 0;
    c->req.max_tokens = mt ? (int)json_integer_value(mt) : 4096;
    c->req.timeout_ms = 0;
    c->req.max_response = c->model->reply_cap;
    return APR_SUCCESS;
}

/* A model_reply with ok:false, for the factory. */
static const char *refusal(apr_pool_t *p, apr_int64_t id, const char *code, const char *msg)
{
    json_t *line = json_pack("{s:s,s:I,s:b,s:{s:s,s:s}}", "type", "model_reply", "id",
                             (json_int_t)id, "ok", 0, "error", "code", code, "message", msg);
    const char *text = svc_json_dump(p, line);

    json_decref(line);
    return text;
}

apr_status_t svc_run_model_start(svc_run_model_t *m, const json_t *line, int notify_fd,
                                 const char **perr, const char **pnow)
{
    apr_int64_t in, out;
    apr_pool_t *cp;
    call_t *c;
    apr_status_t rv;

    *pnow = NULL;
    if (m->running) {
        *perr = "a model call is already running; the factory must wait for its reply";
        return APR_EBUSY;
    }
    /* The call's pool: a root pool, since its thread allocates from it. */
    apr_pool_create(&cp, NULL);
    c = apr_pcalloc(cp, sizeof(*c));
    c->pool = cp;
    c->notify_fd = notify_fd;
    c->model = m;
    if ((rv = parse_request(c, line, perr)) != APR_SUCCESS) {
        *perr = apr_pstrdup(m->pool, *perr);
        apr_pool_destroy(cp);
        return rv;
    }
    /* The budgets are the supervisor's to keep: the factory runs what the
     * model wrote and is not trusted to stop by itself. */
    svc_run_model_tokens(m, &in, &out);
    if (c->agent && in + out >= m->job->max_tokens) {
        *pnow = refusal(m->pool, c->id, "token_limit",
                        apr_psprintf(m->pool, "The run used %" APR_INT64_T_FMT " tokens of its "
                                     "budget of %" APR_INT64_T_FMT " (SvcRunMaxTokens) before "
                                     "the model called finish.", in + out,
                                     m->job->max_tokens));
        apr_pool_destroy(cp);
        return APR_SUCCESS;
    }
    if (c->agent && m->tool_calls > m->job->max_steps) {
        *pnow = refusal(m->pool, c->id, "step_limit",
                        apr_psprintf(m->pool, "The run reached its limit of %d steps "
                                     "(SvcRunMaxSteps) before the model called finish.",
                                     m->job->max_steps));
        apr_pool_destroy(cp);
        return APR_SUCCESS;
    }
    if ((rv = pthread_create(&m->thread, NULL, call_main, c)) != 0) {
        *perr = "cannot start a thread for the model call";
        apr_pool_destroy(cp);
        return rv;
    }
    APR_ARRAY_PUSH(m->calls, call_t *) = c;
    m->running = c;
    return APR_SUCCESS;
}

int svc_run_model_busy(const svc_run_model_t *m)
{
    return m->running != NULL;
}

/* What the factory hears of a failed call: its codes are provider_error,
 * no_provider and timeout, and a model that took too long is a provider's
 * failure, not the run's own timeout; an answer larger than the run's
 * limits allow is the model's answer being wrong. */
static const char *factory_code(const svc_llm_reply_t *r)
{
    if (r && r->too_large) {
        return "model_reply_invalid";
    }
    return r && r->error_code && strcmp(r->error_code, "no_provider") == 0 ? "no_provider"
                                                                          : "provider_error";
}

/*
 * The provider answered, but the model's text is not what JSON mode asked
 * for: that is the model's answer being wrong, which the factory judges
 * (model_reply_invalid), not the provider failing.
 */
static int answered_text(const svc_llm_reply_t *r)
{
    return r->http_status >= 200 && r->http_status < 300 && r->content && *r->content;
}

const char *svc_run_model_finish(svc_run_model_t *m, svc_run_log_t *log, apr_pool_t *p)
{
    call_t *c = m->running;
    const svc_llm_reply_t *r;
    json_t *line;
    const char *text;

    if (!c) {
        return NULL;
    }
    pthread_join(m->thread, NULL);
    m->running = NULL;
    r = c->reply;
    if (!r) {
        svc_run_log_note(log, "[mod_svc] model call %" APR_INT64_T_FMT ": no answer",
                         c->id);
        line = json_pack("{s:s,s:I,s:b,s:{s:s,s:s}}", "type", "model_reply", "id",
                         (json_int_t)c->id, "ok", 0, "error", "code", "provider_error", "message",
                         "the model call failed");
    }
    else if (!r->error_code || answered_text(r)) {
        if (r->error_code) {
            svc_run_log_note(log, "[mod_svc] model call %" APR_INT64_T_FMT ": %s; the factory "
                             "judges the answer", c->id, r->error ? r->error : r->error_code);
        }
        svc_run_log_note(log, "[mod_svc] model call %" APR_INT64_T_FMT ": answered in %ld "
                         "ms, %" APR_INT64_T_FMT " tokens in, %" APR_INT64_T_FMT " out%s%s",
                         c->id, r->duration_ms, r->input_tokens, r->output_tokens,
                         r->truncated ? " (cut at max_tokens)" : "",
                         c->agent ? apr_psprintf(p, ", %d tool call(s)",
                                                 (int)json_array_size(r->tool_calls)) : "");
        line = json_pack("{s:s,s:I,s:b,s:s}", "type", "model_reply", "id",
                         (json_int_t)c->id, "ok", 1, "content", r->content ? r->content : "");
        if (line && c->agent) {
            json_object_set_new(line, "tool_calls", r->tool_calls ? json_incref(r->tool_calls)
                                                                  : json_array());
            json_object_set_new(line, "stop", json_string(r->stop ? r->stop : "end"));
            json_object_set_new(line, "usage", json_pack("{s:I,s:I}", "input_tokens",
                                                         (json_int_t)r->input_tokens,
                                                         "output_tokens",
                                                         (json_int_t)r->output_tokens));
            m->tool_calls += (apr_int64_t)json_array_size(r->tool_calls);
        }
    }
    else {
        /* An answer too large is the model's, said as such: no provider
         * code in front of it. */
        const char *msg = r->too_large && r->error
                          ? apr_pstrcat(p, "The model's answer is larger than the run's limits "
                                        "allow. ", r->error, NULL)
                          : apr_psprintf(p, "%s%s%s", r->error_code, r->error ? ": " : "",
                                         r->error ? r->error : "");
        svc_run_log_note(log, "[mod_svc] model call %" APR_INT64_T_FMT " failed after %ld "
                         "ms: %s", c->id, r->duration_ms, msg);
        line = json_pack("{s:s,s:I,s:b,s:{s:s,s:s}}", "type", "model_reply", "id",
                         (json_int_t)c->id, "ok", 0, "error", "code", factory_code(r), "message",
                         svc_printable(p, msg, 2000));
    }
    if (!line) {
        /* Only text that is not UTF-8 gets here: the provider's, which
         * svc_llm checks; say so rather than hang the factory. */
        line = json_pack("{s:s,s:I,s:b,s:{s:s,s:s}}", "type", "model_reply", "id",
                         (json_int_t)c->id, "ok", 0, "error", "code", "provider_error", "message",
                         "the model's answer could not be passed on");
    }
    text = svc_json_dump(p, line);
    json_decref(line);
    return text;
}

int svc_run_model_unrecorded(const svc_run_model_t *m)
{
    int i;

    for (i = 0; i < m->calls->nelts; i++) {
        call_t *c = APR_ARRAY_IDX(m->calls, i, call_t *);
        if (c != m->running && !c->recorded && c->reply) {
            return 1;
        }
    }
    return 0;
}

apr_status_t svc_run_model_record(svc_run_model_t *m, svc_db_t *db)
{
    svc_usage_t u;
    apr_status_t rv;
    int i;

    u.org_id = m->job->org_id;
    u.user_id = m->job->created_by;
    u.purpose = "run";
    u.subject_type = "run";
    u.subject_id = m->job->id;
    for (i = 0; i < m->calls->nelts; i++) {
        call_t *c = APR_ARRAY_IDX(m->calls, i, call_t *);
        apr_pool_t *sp;

        if (c == m->running || c->recorded || !c->reply) {
            continue;
        }
        apr_pool_create(&sp, m->pool);
        rv = svc_provider_record_usage(db, sp, m->prov, &u, c->reply);
        apr_pool_destroy(sp);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        c->recorded = 1;
    }
    return APR_SUCCESS;
}

void svc_run_model_close(svc_run_model_t *m)
{
    int i;

    if (m->running) {
        pthread_join(m->thread, NULL);
        m->running = NULL;
    }
    for (i = 0; i < m->calls->nelts; i++) {
        apr_pool_destroy(APR_ARRAY_IDX(m->calls, i, call_t *)->pool);
    }
    m->calls->nelts = 0;
}
