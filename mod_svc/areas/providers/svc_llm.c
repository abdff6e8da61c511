/*
 * svc_llm.c: calling model providers: OpenAI's chat completions (and every
 * server that speaks it) and Anthropic's Messages API, through the one
 * outbound HTTP client with the address guard for tenant-supplied URLs.
 */
#include "svc_llm.h"

#include <stdarg.h>
#include <string.h>

/* The most a model's answer may be, unless the caller says: a whole
 * document escaped in JSON. */
static apr_size_t reply_cap(const svc_config_t *conf, apr_size_t asked)
{
    apr_size_t cap = conf->document_limit * 6 + 256 * 1024;

    if (asked > 0) {
        return asked;
    }
    return cap < SVC_HTTP_MAX_RESPONSE ? SVC_HTTP_MAX_RESPONSE : cap;
}

const char *svc_llm_default_url(const char *kind)
{
    return strcmp(kind, SVC_LLM_KIND_ANTHROPIC) == 0 ? "https://api.anthropic.com"
                                                     : "https://api.openai.com";
}

const char *svc_llm_check_url(apr_pool_t *p, const char *url, int allow_private,
                              const char **pnorm)
{
    const char *why = svc_http_check_base_url(p, url, pnorm), *norm;
    apr_size_t n;

    if (why) {
        return why;
    }
    norm = *pnorm;
    n = strlen(norm);
    if (n >= 3 && strcmp(norm + n - 3, "/v1") == 0) {
        n -= 3;
        while (n > 0 && norm[n - 1] == '/') {
            n--;
        }
        norm = apr_pstrmemdup(p, norm, n);
        if (strstr(norm, "://")[3] == '\0') {
            return "has no host";
        }
    }
    *pnorm = norm;
    /* The outbound client's own rules, as it applies them at every call: an
     * address written out is refused now; a name is judged on the address
     * it resolves to, when it is called. */
    return svc_http_check_untrusted(p, norm, allow_private);
}

const char *svc_llm_scrub(apr_pool_t *p, const svc_provider_t *prov, const char *text,
                          apr_size_t max)
{
    const char *s = text ? text : "", *hit;
    apr_size_t klen = prov && prov->key ? strlen(prov->key) : 0;

    /* A provider may quote the key it refused. Whatever its length: a
     * short key (a local server's placeholder) may blank out ordinary
     * words with it, which is the lesser harm. */
    if (klen > 0) {
        char *out = apr_pstrdup(p, "");
        while ((hit = strstr(s, prov->key)) != NULL) {
            out = apr_pstrcat(p, out, apr_pstrmemdup(p, s, (apr_size_t)(hit - s)), "[REDACTED]",
                              NULL);
            s = hit + klen;
        }
        s = apr_pstrcat(p, out, s, NULL);
    }
    return svc_printable(p, svc_redact(p, s), max);
}

const char *svc_llm_error_message(apr_pool_t *p, const svc_provider_t *prov,
                                  const svc_http_resp_t *resp)
{
    json_error_t jerr;
    json_t *doc = resp->body_len ? json_loadb(resp->body, resp->body_len, 0, &jerr) : NULL;
    const char *msg = NULL;
    json_t *e;

    if (doc) {
        svc_json_pool(p, doc);
        e = json_object_get(doc, "error");
        msg = json_is_string(e) ? json_string_value(e) : svc_json_str(e, "message");
        if (!msg) {
            msg = svc_json_str(doc, "message");
        }
    }
    if (!msg) {
        msg = resp->body_len ? resp->body : "(no message)";
    }
    return svc_llm_scrub(p, prov, msg, 500);
}

static void reply_fail(apr_pool_t *p, svc_llm_reply_t *reply, const char *code,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void reply_fail(apr_pool_t *p, svc_llm_reply_t *reply, const char *code,
                       const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    reply->error = apr_pvsprintf(p, fmt, ap);
    va_end(ap);
    reply->error_code = code;
}

/*
 * One call to the provider: its authentication headers, the timeout, the
 * address guard, the key redacted from any error text. APR_SUCCESS with
 * *presp on a 2xx answer; otherwise reply says why.
 */
static apr_status_t llm_call(apr_pool_t *p, const svc_config_t *conf,
                             const svc_provider_t *prov, const char *method, const char *path,
                             const char *body, long timeout_ms, apr_size_t max_response,
                             svc_http_resp_t **presp, svc_llm_reply_t *reply)
{
    const char *secrets[2];
    svc_http_resp_t *resp;
    svc_http_req_t req;
    apr_time_t start;
    apr_status_t rv;

    memset(&req, 0, sizeof(req));
    req.method = method;
    req.url = apr_pstrcat(p, prov->base_url, path, NULL);
    req.headers = apr_table_make(p, 4);
    apr_table_setn(req.headers, "Accept", "application/json");
    if (strcmp(prov->kind, SVC_LLM_KIND_ANTHROPIC) == 0) {
        apr_table_setn(req.headers, "x-api-key", prov->key);
        apr_table_setn(req.headers, "anthropic-version", SVC_ANTHROPIC_VERSION);
    }
    else {
        apr_table_setn(req.headers, "Authorization", apr_pstrcat(p, "Bearer ", prov->key, NULL));
    }
    if (body) {
        apr_table_setn(req.headers, "Content-Type", "application/json");
        req.body = body;
        req.body_len = strlen(body);
    }
    req.timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
    req.connect_timeout_ms = req.timeout_ms < SVC_HTTP_CONNECT_TIMEOUT_MS
                             ? req.timeout_ms : SVC_HTTP_CONNECT_TIMEOUT_MS;
    req.max_response = reply_cap(conf, max_response);
    req.untrusted = 1;
    req.allow_private = conf->provider_allow_private;
    secrets[0] = prov->key;
    secrets[1] = NULL;
    req.secrets = secrets;

    start = apr_time_now();
    rv = svc_http_do(p, &req, &resp);
    reply->duration_ms = (long)apr_time_as_msec(apr_time_now() - start);
    reply->http_status = resp->status;
    *presp = resp;
    if (rv == SVC_HTTP_ETIMEOUT) {
        reply_fail(p, reply, "provider_timeout", "The provider did not answer within %ld s.",
                   (req.timeout_ms + 999) / 1000);
        return rv;
    }
    if (rv == SVC_HTTP_ETOOBIG) {
        /* It answered: this is no "could not be reached". */
        reply->too_large = 1;
        reply_fail(p, reply, "provider_error", "The provider's answer is larger than %"
                   APR_SIZE_T_FMT " bytes, the most this call accepts.", req.max_response);
        return rv;
    }
    if (rv == SVC_HTTP_EBLOCKED) {
        reply_fail(p, reply, "provider_error", "The provider's URL %s.",
                   resp->guard ? resp->guard : "was refused by the address guard");
        return rv;
    }
    if (rv != APR_SUCCESS) {
        reply_fail(p, reply, "provider_error", "The provider could not be reached: %s",
                   svc_llm_scrub(p, prov, resp->error, 500));
        return rv;
    }
    if (resp->status == 401 || resp->status == 403) {
        reply_fail(p, reply, "provider_refused", "The provider refused the key (%d): %s",
                   resp->status, svc_llm_error_message(p, prov, resp));
        return APR_EACCES;
    }
    if (resp->status == 429) {
        reply_fail(p, reply, "provider_rate_limited", "The provider is rate-limiting this key "
                   "(429): %s", svc_llm_error_message(p, prov, resp));
        return APR_EGENERAL;
    }
    if (resp->status < 200 || resp->status > 299) {
        reply_fail(p, reply, "provider_error", "The provider answered %d: %s", resp->status,
                   svc_llm_error_message(p, prov, resp));
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

/* A 2xx answer's JSON object, bound to p, or NULL. */
static json_t *answer_json(apr_pool_t *p, const svc_http_resp_t *resp)
{
    json_error_t jerr;
    json_t *doc = json_loadb(resp->body, resp->body_len, 0, &jerr);

    if (doc) {
        svc_json_pool(p, doc);
    }
    return json_is_object(doc) ? doc : NULL;
}

/* A token count as the provider reported it: 0 when absent (not every
 * compatible server counts), else the number, checked by the caller. */
static apr_int64_t int_at(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);

    return json_is_integer(v) ? (apr_int64_t)json_integer_value(v) : 0;
}

const char *svc_llm_json_object_text(apr_pool_t *p, const char *text)
{
    const char *open = strchr(text, '{'), *close = strrchr(text, '}');
    json_error_t jerr;
    json_t *obj;

    if (!open || !close || close < open) {
        return NULL;
    }
    obj = json_loadb(open, (apr_size_t)(close - open + 1), JSON_REJECT_DUPLICATES, &jerr);
    if (!obj) {
        return NULL;
    }
    svc_json_pool(p, obj);
    return json_is_object(obj) ? svc_json_dump(p, obj) : NULL;
}

/* A tool's output or a text as a provider takes it: never empty. */
static const char *nonempty(const char *s)
{
    return s && *s ? s : "(empty)";
}

/* The neutral conversation (svc_providers.h) in OpenAI's form. */
static void openai_conversation(apr_pool_t *p, json_t *msgs, const json_t *convo)
{
    size_t i, k;
    json_t *m, *c;

    json_array_foreach(convo, i, m) {
        const char *role = svc_json_str(m, "role");
        const char *content = svc_json_str(m, "content");
        json_t *calls = json_object_get(m, "tool_calls");
        json_t *results = json_object_get(m, "results");

        if (!role) {
            continue;
        }
        if (strcmp(role, "user") == 0) {
            json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "user", "content",
                                                  nonempty(content)));
        }
        else if (strcmp(role, "assistant") == 0) {
            json_t *o = json_pack("{s:s}", "role", "assistant");
            json_t *oc = json_array();

            json_array_foreach(calls, k, c) {
                /* OpenAI's arguments are a JSON text, not an object. */
                json_array_append_new(oc, json_pack(
                    "{s:s?,s:s,s:{s:s?,s:s}}", "id", svc_json_str(c, "id"), "type", "function",
                    "function", "name", svc_json_str(c, "name"), "arguments",
                    svc_json_dump(p, json_object_get(c, "arguments"))));
            }
            if (json_array_size(oc) > 0) {
                json_object_set_new(o, "content", content && *content ? json_string(content)
                                                                      : json_null());
                json_object_set_new(o, "tool_calls", oc);
            }
            else {
                json_object_set_new(o, "content", json_string(nonempty(content)));
                json_decref(oc);
            }
            json_array_append_new(msgs, o);
        }
        else if (strcmp(role, "tool") == 0) {
            json_array_foreach(results, k, c) {
                json_array_append_new(msgs, json_pack("{s:s,s:s?,s:s}", "role", "tool",
                                                      "tool_call_id", svc_json_str(c, "id"),
                                                      "content",
                                                      nonempty(svc_json_str(c, "content"))));
            }
        }
    }
}

/* The neutral conversation in Anthropic's form: content blocks, tool_use
 * in the assistant's turn, tool_result in the user's turn after it. */
static void anthropic_conversation(json_t *msgs, const json_t *convo)
{
    size_t i, k;
    json_t *m, *c;

    json_array_foreach(convo, i, m) {
        const char *role = svc_json_str(m, "role");
        const char *content = svc_json_str(m, "content");
        json_t *blocks = json_array();

        if (!role) {
            json_decref(blocks);
            continue;
        }
        if (strcmp(role, "user") == 0) {
            json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "user", "content",
                                                  nonempty(content)));
            json_decref(blocks);
            continue;
        }
        if (strcmp(role, "assistant") == 0) {
            if (content && *content) {
                json_array_append_new(blocks, json_pack("{s:s,s:s}", "type", "text", "text",
                                                        content));
            }
            json_array_foreach(json_object_get(m, "tool_calls"), k, c) {
                json_array_append_new(blocks, json_pack("{s:s,s:s?,s:s?,s:O}", "type",
                                                        "tool_use", "id", svc_json_str(c, "id"),
                                                        "name", svc_json_str(c, "name"),
                                                        "input",
                                                        json_object_get(c, "arguments")));
            }
            if (json_array_size(blocks) == 0) {
                json_array_append_new(blocks, json_pack("{s:s,s:s}", "type", "text", "text",
                                                        "(no answer)"));
            }
        }
        else if (strcmp(role, "tool") == 0) {
            json_array_foreach(json_object_get(m, "results"), k, c) {
                json_array_append_new(blocks, json_pack(
                    "{s:s,s:s?,s:s,s:b}", "type", "tool_result", "tool_use_id",
                    svc_json_str(c, "id"), "content", nonempty(svc_json_str(c, "content")),
                    "is_error", json_is_true(json_object_get(c, "is_error"))));
            }
            role = "user";
        }
        else {
            json_decref(blocks);
            continue;
        }
        json_array_append_new(msgs, json_pack("{s:s,s:o}", "role", role, "content", blocks));
    }
}

/* The tools in the provider's form. */
static json_t *tool_defs(int anthropic, const json_t *tools)
{
    json_t *out = json_array(), *t;
    size_t i;

    json_array_foreach(tools, i, t) {
        json_t *schema = json_object_get(t, "parameters");

        if (anthropic) {
            json_array_append_new(out, json_pack("{s:s?,s:s?,s:O}", "name",
                                                 svc_json_str(t, "name"), "description",
                                                 svc_json_str(t, "description"),
                                                 "input_schema", schema));
        }
        else {
            json_array_append_new(out, json_pack("{s:s,s:{s:s?,s:s?,s:O}}", "type",
                                                 "function", "function", "name",
                                                 svc_json_str(t, "name"), "description",
                                                 svc_json_str(t, "description"),
                                                 "parameters", schema));
        }
    }
    return out;
}

static const char *completion_body(apr_pool_t *p, const svc_provider_t *prov,
                                   const svc_llm_request_t *req)
{
    int anthropic = strcmp(prov->kind, SVC_LLM_KIND_ANTHROPIC) == 0;
    json_t *body = svc_json_pool(p, json_object());
    json_t *msgs = json_array();
    const char *system = req->system;
    int i;

    if (anthropic && req->json) {
        system = apr_pstrcat(p, system ? system : "", system ? "\n\n" : "",
                             "Answer with exactly one JSON object and nothing else: no prose, "
                             "no code fence.", NULL);
    }
    if (system && !anthropic) {
        json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "system", "content", system));
    }
    if (req->tools && anthropic) {
        anthropic_conversation(msgs, req->conversation);
    }
    else if (req->tools) {
        openai_conversation(p, msgs, req->conversation);
    }
    for (i = 0; !req->tools && i < req->nmessages; i++) {
        json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", req->messages[i].role,
                                              "content", req->messages[i].content));
    }
    json_object_set_new(body, "model", json_string(prov->model));
    json_object_set_new(body, "max_tokens", json_integer(req->max_tokens > 0 ? req->max_tokens
                                                                              : 1024));
    if (anthropic && system) {
        json_object_set_new(body, "system", json_string(system));
    }
    json_object_set_new(body, "messages", msgs);
    if (!anthropic && req->json) {
        json_object_set_new(body, "response_format", json_pack("{s:s}", "type", "json_object"));
    }
    if (req->tools) {
        json_object_set_new(body, "tools", tool_defs(anthropic, req->tools));
    }
    if (req->tools && req->tool_choice) {
        json_object_set_new(body, "tool_choice",
                            anthropic ? json_pack("{s:s,s:s}", "type", "tool", "name",
                                                  req->tool_choice)
                                      : json_pack("{s:s,s:{s:s}}", "type", "function",
                                                  "function", "name", req->tool_choice));
    }
    return svc_json_dump(p, body);
}

/* A tool call's id as the factory and the provider will see it again: the
 * provider's when it is plain, else one of ours. */
static const char *call_id(apr_pool_t *p, const char *id)
{
    apr_size_t n = id ? strlen(id) : 0, i;

    for (i = 0; i < n && n <= 128; i++) {
        if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z')
              || (id[i] >= '0' && id[i] <= '9') || id[i] == '_' || id[i] == '-')) {
            break;
        }
    }
    return n > 0 && n <= 128 && i == n ? id : apr_pstrcat(p, "call_", svc_random_base62(p, 24),
                                                          NULL);
}

/* One tool call in the neutral form; `args` is the provider's (an object
 * from Anthropic, a JSON text from OpenAI). */
static void add_call(apr_pool_t *p, const svc_provider_t *prov, json_t *calls, const char *id,
                     const char *name, const json_t *args)
{
    json_t *call = json_pack("{s:s,s:s}", "id", call_id(p, id), "name",
                             name && *name ? svc_printable(p, name, 128) : "(none)");
    json_t *obj = NULL;

    if (json_is_string(args)) {
        json_error_t jerr;

        obj = json_loads(json_string_value(args), JSON_REJECT_DUPLICATES, &jerr);
        if (obj && !json_is_object(obj)) {
            json_decref(obj);
            obj = NULL;
        }
    }
    else if (json_is_object(args)) {
        obj = json_incref((json_t *)args);
    }
    if (obj) {
        json_object_set_new(call, "arguments", obj);
    }
    else {
        const char *raw = json_is_string(args) ? json_string_value(args)
                                               : svc_json_dump(p, (json_t *)args);

        json_object_set_new(call, "arguments", json_object());
        json_object_set_new(call, "arguments_error",
                            json_string(svc_llm_scrub(p, prov, raw ? raw : "(none)", 200)));
    }
    json_array_append_new(calls, call);
}

apr_status_t svc_llm_read_completion(apr_pool_t *p, const svc_provider_t *prov,
                                     const json_t *doc, svc_llm_reply_t *reply)
{
    json_t *usage = json_object_get(doc, "usage");

    reply->tool_calls = svc_json_pool(p, json_array());
    if (strcmp(prov->kind, SVC_LLM_KIND_ANTHROPIC) == 0) {
        json_t *content = json_object_get(doc, "content"), *part;
        const char *text = "", *stop = svc_json_str(doc, "stop_reason");
        size_t i;

        if (!json_is_array(content)) {
            return APR_EINVAL;
        }
        json_array_foreach(content, i, part) {
            const char *type = svc_json_str(part, "type");

            if (type && strcmp(type, "text") == 0) {
                if (!svc_json_str(part, "text")) {
                    return APR_EINVAL;
                }
                text = apr_pstrcat(p, text, svc_json_str(part, "text"), NULL);
            }
            else if (type && strcmp(type, "tool_use") == 0) {
                add_call(p, prov, reply->tool_calls, svc_json_str(part, "id"),
                         svc_json_str(part, "name"), json_object_get(part, "input"));
            }
        }
        reply->content = text;
        reply->truncated = stop && strcmp(stop, "max_tokens") == 0;
        reply->stop = reply->truncated ? "max_tokens"
                      : stop && strcmp(stop, "tool_use") == 0 ? "tool_calls" : "end";
        reply->input_tokens = int_at(usage, "input_tokens");
        reply->output_tokens = int_at(usage, "output_tokens");
    }
    else {
        json_t *choice = json_array_get(json_object_get(doc, "choices"), 0);
        json_t *msg = json_object_get(choice, "message");
        json_t *content = json_object_get(msg, "content");
        json_t *calls = json_object_get(msg, "tool_calls"), *c;
        const char *finish = svc_json_str(choice, "finish_reason");
        size_t i;

        if (!json_is_object(msg) || !(json_is_string(content) || json_is_null(content)
                                      || !content)
            || !(!calls || json_is_null(calls) || json_is_array(calls))) {
            return APR_EINVAL;
        }
        json_array_foreach(calls, i, c) {
            json_t *fn = json_object_get(c, "function");

            add_call(p, prov, reply->tool_calls, svc_json_str(c, "id"),
                     svc_json_str(fn, "name"), json_object_get(fn, "arguments"));
        }
        reply->content = json_is_string(content) ? apr_pstrdup(p, json_string_value(content))
                                                 : "";
        reply->truncated = finish && strcmp(finish, "length") == 0;
        reply->stop = reply->truncated ? "max_tokens"
                      : json_array_size(reply->tool_calls) > 0 ? "tool_calls" : "end";
        reply->input_tokens = int_at(usage, "prompt_tokens");
        reply->output_tokens = int_at(usage, "completion_tokens");
    }
    return APR_SUCCESS;
}

apr_status_t svc_provider_complete(apr_pool_t *p, const svc_config_t *conf,
                                   const svc_provider_t *prov, const svc_llm_request_t *req,
                                   svc_llm_reply_t **preply)
{
    svc_llm_reply_t *reply = apr_pcalloc(p, sizeof(*reply));
    long timeout = req->timeout_ms > 0 ? req->timeout_ms : conf->model_timeout_ms;
    int anthropic = strcmp(prov->kind, SVC_LLM_KIND_ANTHROPIC) == 0;
    svc_http_resp_t *resp;
    json_t *doc;

    *preply = reply;
    reply->content = "";
    reply->stop = "end";
    if (llm_call(p, conf, prov, "POST", anthropic ? "/v1/messages" : "/v1/chat/completions",
                 completion_body(p, prov, req), timeout, req->max_response, &resp, reply)
        != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    doc = answer_json(p, resp);
    if (!doc || svc_llm_read_completion(p, prov, doc, reply) != APR_SUCCESS) {
        reply_fail(p, reply, "provider_error", "The provider's answer is not a %s: %s",
                   anthropic ? "Messages API response" : "chat completion",
                   svc_llm_scrub(p, prov, resp->body, 200));
        return APR_EGENERAL;
    }
    /* Counts go into the usage table and its sums (billing, the pipeline's
     * costs): a count no model could reach is a broken or lying server, and
     * one such reply would overflow every sum it enters. The answer is not
     * used, and the call is recorded without its counts. */
    if (reply->input_tokens < 0 || reply->input_tokens > SVC_LLM_MAX_TOKENS
        || reply->output_tokens < 0 || reply->output_tokens > SVC_LLM_MAX_TOKENS) {
        reply_fail(p, reply, "provider_error", "The provider reported %" APR_INT64_T_FMT
                   " input and %" APR_INT64_T_FMT " output tokens for one call, outside 0 to %d: "
                   "its answer is not used.", reply->input_tokens, reply->output_tokens,
                   SVC_LLM_MAX_TOKENS);
        reply->input_tokens = 0;
        reply->output_tokens = 0;
        reply->content = "";
        return APR_EGENERAL;
    }
    if (req->json) {
        const char *obj = svc_llm_json_object_text(p, reply->content);
        if (!obj) {
            reply_fail(p, reply, "provider_error", "The model did not answer with a JSON "
                       "object%s.", reply->truncated ? " (it was cut off at max_tokens)" : "");
            return APR_EGENERAL;
        }
        reply->content = obj;
    }
    return APR_SUCCESS;
}

apr_status_t svc_llm_models(apr_pool_t *p, const svc_config_t *conf, const svc_provider_t *prov,
                            long timeout_ms, json_t **pmodels, svc_llm_reply_t **preply)
{
    svc_llm_reply_t *reply = apr_pcalloc(p, sizeof(*reply));
    json_t *models = svc_json_pool(p, json_array()), *doc, *data, *m;
    svc_http_resp_t *resp;
    size_t i;

    *preply = reply;
    *pmodels = models;
    reply->content = "";
    if (llm_call(p, conf, prov, "GET", "/v1/models", NULL, timeout_ms, 0, &resp, reply)
        != APR_SUCCESS) {
        return APR_EGENERAL;
    }
    /* {"data": [{"id": ...}, ...]} from both APIs. */
    doc = answer_json(p, resp);
    data = json_object_get(doc, "data");
    if (!json_is_array(data)) {
        reply_fail(p, reply, "provider_error", "The provider's model list is not a list: %s",
                   svc_llm_scrub(p, prov, resp->body, 200));
        return APR_EGENERAL;
    }
    json_array_foreach(data, i, m) {
        const char *id = svc_json_str(m, "id");
        if (id && json_array_size(models) < 500) {
            json_array_append_new(models, json_string(svc_printable(p, id, 200)));
        }
    }
    return APR_SUCCESS;
}

const char *svc_provider_id(const svc_provider_t *prov)
{
    return prov->id;
}

const char *svc_provider_kind(const svc_provider_t *prov)
{
    return prov->kind;
}

const char *svc_provider_model(const svc_provider_t *prov)
{
    return prov->model;
}
