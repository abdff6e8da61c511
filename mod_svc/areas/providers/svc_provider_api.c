/*
 * svc_provider_api.c: /api/orgs/:orgSlug/providers: list, create, read,
 * update, delete, test, and choose the default. The key is write-only: no
 * answer, log line or audit entry carries it, only its hint.
 */
#include "svc_provider_api.h"
#include "svc_provider_store.h"
#include "svc_llm.h"

#include <string.h>

/* One provider as the API shows it: these columns of the llm_providers row
 * `p`, in provider_item's order, in binary. */
#define PROVIDER_COLS                                                               \
    "p.id, p.name, p.kind, p.base_url, p.model, p.key_hint, p.is_default,"          \
    " p.tools, p.tools_detected, p.created_at, p.updated_at"

static const char *const kind_values[] = { SVC_LLM_KIND_OPENAI, SVC_LLM_KIND_ANTHROPIC, NULL };
static const char *const tools_values[] = { "auto", "on", "off", NULL };

static const svc_col_t provider_item[] = {
    SVC_COL_ID("llm"),
    { .key = "name", .type = SVC_COL_TEXT, .example = "OpenAI" },
    { .key = "kind", .type = SVC_COL_TEXT, .values = kind_values,
      .description = "The wire API: openai (OpenAI-compatible) or anthropic." },
    { .key = "base_url", .type = SVC_COL_TEXT, .example = "https://api.openai.com/v1" },
    { .key = "model", .type = SVC_COL_TEXT, .example = "gpt-4o-mini" },
    { .key = "key_hint", .type = SVC_COL_TEXT, .example = "x9Qa",
      .description = "The key's last characters; the key itself is never shown." },
    { .key = "is_default", .type = SVC_COL_BOOL,
      .description = "The organization's default: what its features call." },
    { .key = "tools", .type = SVC_COL_TEXT, .values = tools_values,
      .description = "Whether runs let the model work with tools: on, off, or auto (what the "
        "provider test found)." },
    { .key = "tools_detected", .type = SVC_COL_BOOL, .flags = SVC_COL_NULL,
      .description = "Whether the last provider test found tool calling working; null until "
        "a test tried." },
    SVC_COL_CREATED_AT,
    SVC_COL_UPDATED_AT,
    SVC_COL_END
};

const svc_schema_t svc_schema_provider = { .name = "Provider", .keys = provider_item,
    .description = "A model provider of the organization, never with its key "
        "(docs/api/providers.md)." };

static const svc_col_t provider_test_keys[] = {
    { .key = "ok", .type = SVC_COL_BOOL, .description = "The provider answered a completion." },
    { .key = "models", .type = SVC_COL_ARRAY, .item = SVC_COL_TEXT,
      .description = "The models it lists (empty when it lists none)." },
    { .key = "latency_ms", .type = SVC_COL_INT },
    { .key = "error", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .description = "When not ok: what went wrong, for people." },
    { .key = "tools", .type = SVC_COL_BOOL, .flags = SVC_COL_NULL,
      .description = "Whether the model called a tool when asked to (null: not probed)." },
    { .key = "error_code", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL,
      .example = "provider_refused",
      .description = "When not ok: provider_error, provider_refused (the key), "
        "provider_rate_limited, provider_timeout or key_unreadable." },
    SVC_COL_END
};

const svc_schema_t svc_schema_provider_test = { .name = "ProviderTest", .keys = provider_test_keys,
    .description = "What calling the provider showed." };

static const svc_stmt_t st_prov_list = {
    "svc_providers_list",
    "SELECT p.seq, " PROVIDER_COLS " FROM llm_providers p"
    " WHERE p.org_id = $1 AND p.seq < $2::bigint ORDER BY p.seq DESC LIMIT $3::int",
    3, SVC_STMT_READ | SVC_STMT_BINARY
};

static const svc_stmt_t st_prov_get = {
    "svc_providers_get",
    "SELECT " PROVIDER_COLS " FROM llm_providers p WHERE p.id = $1 AND p.org_id = $2",
    2, SVC_STMT_READ | SVC_STMT_BINARY
};

/* The org's first provider becomes its default (under the org lock, so two
 * first creations cannot both be; the unique index would refuse it anyway). */
static const svc_stmt_t st_prov_insert = {
    "svc_providers_insert",
    "INSERT INTO llm_providers AS p (id, org_id, name, kind, base_url, model, key_box,"
    " key_hint, is_default, created_by, tools)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7::bytea, $8,"
    "  NOT EXISTS (SELECT 1 FROM llm_providers d WHERE d.org_id = $2 AND d.is_default), $9,"
    "  coalesce($10, 'auto'))"
    " RETURNING p.is_default",
    10, 0
};

/* What an audit entry may say about a provider: never the key. */
static const svc_stmt_t st_prov_lock = {
    "svc_providers_lock",
    "SELECT json_build_object('name', name, 'kind', kind, 'base_url', base_url,"
    " 'model', model, 'key_hint', key_hint, 'is_default', is_default, 'tools', tools)::text,"
    " is_default"
    " FROM llm_providers WHERE id = $1 AND org_id = $2 FOR NO KEY UPDATE",
    2, 0
};

static const svc_stmt_t st_prov_update = {
    "svc_providers_update",
    "UPDATE llm_providers SET name = coalesce($3, name), base_url = coalesce($4, base_url),"
    " model = coalesce($5, model), key_box = coalesce($6::bytea, key_box),"
    " key_hint = coalesce($7, key_hint), tools = coalesce($8, tools),"
    " tools_detected = CASE WHEN $4 IS NOT NULL OR $5 IS NOT NULL THEN NULL"
    "  ELSE tools_detected END, updated_at = now()"
    " WHERE id = $1 AND org_id = $2",
    8, 0
};

static const svc_stmt_t st_prov_delete = {
    "svc_providers_delete",
    "DELETE FROM llm_providers WHERE id = $1 AND org_id = $2",
    2, 0
};

/* Two statements, not one: the unique index on the default is checked row
 * by row, so setting the new one before clearing the old would fail. */
static const svc_stmt_t st_prov_default_clear = {
    "svc_providers_default_clear",
    "UPDATE llm_providers SET is_default = false, updated_at = now()"
    " WHERE org_id = $1 AND is_default RETURNING id",
    1, 0
};

static const svc_stmt_t st_prov_default_set = {
    "svc_providers_default_set",
    "UPDATE llm_providers SET is_default = true, updated_at = now()"
    " WHERE id = $1 AND org_id = $2",
    2, 0
};

const svc_field_t svc_body_provider_create[] = {
    { .name = "name", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 100,
      .description = "A name for people, 1 to 100 characters, unique in the organization." },
    { .name = "kind", .type = SVC_FT_ENUM, .required = 1, .values = kind_values,
      .description = "openai: any OpenAI-compatible chat-completions server (OpenAI, "
        "Azure-style gateways, Ollama, llama.cpp, vLLM); anthropic: Anthropic's Messages API." },
    { .name = "base_url", .type = SVC_FT_STRING, .min = 1, .max = 2000,
      .description = "The API's base URL, without /v1 (the service adds /v1/...); omitted: the "
        "vendor's public API (https://api.openai.com, https://api.anthropic.com)." },
    { .name = "model", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 200,
      .description = "The model to call, as the provider names it (gpt-4o, claude-sonnet-4-5, "
        "llama3.1, ...)." },
    { .name = "api_key", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 1000,
      .description = "The provider's API key. Write-only: stored sealed, never shown again "
        "(key_hint shows its last four characters)." },
    { .name = "tools", .type = SVC_FT_ENUM, .values = tools_values,
      .description = "Whether runs let the model work with tools (the agent loop) or ask it "
        "for one answer with every file: on, off, or auto (default: what the provider test "
        "finds; tools until a test finds none)." },
    SVC_FIELD_END
};

const svc_field_t svc_body_provider_update[] = {
    { .name = "name", .type = SVC_FT_STRING, .min = 1, .max = 100,
      .description = "A new name, unique in the organization." },
    { .name = "base_url", .type = SVC_FT_STRING, .min = 1, .max = 2000,
      .description = "A new base URL (without /v1); only together with api_key: the stored "
        "key is never sent to another address." },
    { .name = "model", .type = SVC_FT_STRING, .min = 1, .max = 200,
      .description = "Another model." },
    { .name = "api_key", .type = SVC_FT_STRING, .min = 1, .max = 1000,
      .description = "A new key, replacing the old one." },
    { .name = "tools", .type = SVC_FT_ENUM, .values = tools_values,
      .description = "Tools for runs: on, off or auto (what the provider test finds)." },
    SVC_FIELD_END
};

static apr_status_t reply_provider(svc_ctx_t *ctx, svc_db_t *db, const char *id, int status)
{
    return svc_reply_org_row(ctx, db, &st_prov_get, provider_item, "provider", id, status);
}

/* Checks a key and a base URL from a body; a 400 problem when either is unusable. */
static apr_status_t check_key_and_url(svc_ctx_t *ctx, const char *key, const char *url,
                                      const char **pnorm)
{
    const char *why;

    if (key && key[strcspn(key, " \t\r\n")]) {
        svc_fail_field(ctx, "api_key", "invalid_value", "api_key must not contain spaces.");
    }
    if (url && (why = svc_llm_check_url(ctx->pool, url, ctx->conf->provider_allow_private,
                                        pnorm)) != NULL) {
        svc_fail_field(ctx, "base_url", "invalid_value", "base_url %s.", why);
    }
    return ctx->problem ? SVC_EPROBLEM : APR_SUCCESS;
}

static apr_status_t name_taken(svc_ctx_t *ctx, const char *name)
{
    return svc_fail(ctx, 409, "conflict", "%s already has a provider named \"%s\".",
                    ctx->org->slug, name);
}

apr_status_t svc_h_providers_list(svc_ctx_t *ctx)
{
    return svc_reply_rows(ctx, &st_prov_list, provider_item, ctx->org->id, SVC_PAGE_BEFORE,
                          SVC_PAGE_FETCH);
}

apr_status_t svc_h_providers_get(svc_ctx_t *ctx)
{
    return svc_reply_one(ctx, "id", reply_provider);
}

static apr_status_t create_provider(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = svc_id_new(ctx->pool, "llm_");
    const char *name = svc_json_str(ctx->body, "name");
    const char *kind = svc_json_str(ctx->body, "kind");
    const char *model = svc_json_str(ctx->body, "model");
    const char *key = svc_json_str(ctx->body, "api_key");
    const char *norm = baton;
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_ADMIN, SVC_PROLE_NONE)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_db_execv(db, &st_prov_insert, ctx->pool, &res, id, ctx->org->id, name, kind, norm,
                      model, svc_provider_seal_key(ctx->pool, ctx->conf, key),
                      svc_provider_key_hint(ctx->pool, key), ctx->who->user_id,
                      svc_json_str(ctx->body, "tools"));
    if (rv == SVC_ECONFLICT) {
        return name_taken(ctx, name);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = svc_audit_ctx(ctx, db, "provider.created", "provider", id,
                       svc_json_pool(ctx->pool,
                                     json_pack("{s:s,s:s,s:s,s:s,s:s,s:b,s:s}", "name", name,
                                               "kind", kind, "base_url", norm, "model", model,
                                               "key_hint",
                                               svc_provider_key_hint(ctx->pool, key),
                                               "is_default",
                                               svc_dbres_bool(res, 0, 0) == 1, "tools",
                                               svc_json_str(ctx->body, "tools")
                                               ? svc_json_str(ctx->body, "tools")
                                               : "auto")));
    return rv == APR_SUCCESS ? reply_provider(ctx, db, id, 201) : rv;
}

apr_status_t svc_h_providers_create(svc_ctx_t *ctx)
{
    const char *norm = svc_llm_default_url(svc_json_str(ctx->body, "kind"));
    apr_status_t rv = check_key_and_url(ctx, svc_json_str(ctx->body, "api_key"),
                                        svc_json_str(ctx->body, "base_url"), &norm);

    return rv == APR_SUCCESS ? svc_write(ctx, create_provider, (void *)norm) : rv;
}

/*
 * The start of every change to one provider, in the caller's write: the
 * caller still an admin (under the org lock), and the provider's row
 * locked, with what the audit may say about it (*pbefore) and whether it is
 * the default.
 */
static apr_status_t lock_provider(svc_ctx_t *ctx, svc_db_t *db, const char *id,
                                  const char **pbefore, int *pis_default)
{
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_ADMIN, SVC_PROLE_NONE)) != APR_SUCCESS
        || (rv = svc_org_row(ctx, db, &st_prov_lock, "provider", id, &res)) != APR_SUCCESS) {
        return rv;
    }
    *pbefore = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
    *pis_default = svc_dbres_bool(res, 0, 1) == 1;
    return APR_SUCCESS;
}

static json_t *json_text(apr_pool_t *p, const char *text)
{
    json_error_t jerr;

    return svc_json_pool(p, json_loads(text, 0, &jerr));
}

static apr_status_t update_provider(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "id");
    const char *name = svc_json_str(ctx->body, "name");
    const char *key = svc_json_str(ctx->body, "api_key");
    const char *norm = baton, *before, *after;
    svc_dbres_t *res;
    int is_default;
    apr_status_t rv;

    if ((rv = lock_provider(ctx, db, id, &before, &is_default)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_db_execv(db, &st_prov_update, ctx->pool, NULL, id, ctx->org->id, name, norm,
                      svc_json_str(ctx->body, "model"),
                      key ? svc_provider_seal_key(ctx->pool, ctx->conf, key) : NULL,
                      key ? svc_provider_key_hint(ctx->pool, key) : NULL,
                      svc_json_str(ctx->body, "tools"));
    if (rv == SVC_ECONFLICT) {
        return name_taken(ctx, name);
    }
    if (rv != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_prov_lock, ctx->pool, &res, id, ctx->org->id))
           != APR_SUCCESS) {
        return rv;
    }
    after = svc_dbres_str(res, 0, 0);
    rv = svc_audit_ctx(ctx, db, "provider.updated", "provider", id,
                       svc_json_pool(ctx->pool,
                                     json_pack("{s:O?,s:O?,s:b}",
                                               "before", json_text(ctx->pool, before),
                                               "after", json_text(ctx->pool, after),
                                               "key_replaced", key != NULL)));
    return rv == APR_SUCCESS ? reply_provider(ctx, db, id, 200) : rv;
}

apr_status_t svc_h_providers_update(svc_ctx_t *ctx)
{
    const char *url = svc_json_str(ctx->body, "base_url");
    const char *key = svc_json_str(ctx->body, "api_key");
    const char *norm = NULL;
    apr_status_t rv;

    if (json_object_size(ctx->body) == 0) {
        return svc_fail(ctx, 400, "validation_failed",
                        "The body names nothing to change (name, base_url, model, api_key, "
                        "tools).");
    }
    /* The key was given for one address: whoever points the provider
     * elsewhere gives it again, or the sealed key would be sent to an
     * address of their choosing (POST .../test) without their knowing it. */
    if (url && !key) {
        svc_fail_field(ctx, "api_key", "required", "api_key must be given again with a new "
                       "base_url: a stored key is never sent to another address than the one "
                       "it was given for.");
    }
    rv = check_key_and_url(ctx, key, url, &norm);
    return rv == APR_SUCCESS ? svc_write(ctx, update_provider, (void *)norm) : rv;
}

static apr_status_t delete_provider(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "id");
    const char *before;
    int is_default;
    apr_status_t rv;

    if ((rv = lock_provider(ctx, db, id, &before, &is_default)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_prov_delete, ctx->pool, NULL, id, ctx->org->id))
           != APR_SUCCESS) {
        return rv;
    }
    /* Deleting the default leaves the org without one: which provider
     * should answer for it is for an admin to say, not for us to guess. */
    rv = svc_audit_ctx(ctx, db, "provider.deleted", "provider", id,
                       json_text(ctx->pool, before));
    return rv == APR_SUCCESS ? svc_reply_empty(ctx) : rv;
}

apr_status_t svc_h_providers_delete(svc_ctx_t *ctx)
{
    return svc_write(ctx, delete_provider, NULL);
}

static apr_status_t make_default(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "id");
    const char *before, *previous = NULL;
    svc_dbres_t *res;
    int is_default;
    apr_status_t rv;

    if ((rv = lock_provider(ctx, db, id, &before, &is_default)) != APR_SUCCESS) {
        return rv;
    }
    /* Already the default: nothing changes, nothing to audit. */
    if (!is_default) {
        rv = svc_db_execv(db, &st_prov_default_clear, ctx->pool, &res, ctx->org->id);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        if (svc_dbres_rows(res) == 1) {
            previous = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, 0));
        }
        if ((rv = svc_db_execv(db, &st_prov_default_set, ctx->pool, NULL, id, ctx->org->id))
            != APR_SUCCESS) {
            return rv;
        }
        rv = svc_audit_ctx(ctx, db, "provider.default_set",
                           "provider", id,
                           svc_json_pool(ctx->pool, json_pack("{s:s?}", "previous", previous)));
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    return reply_provider(ctx, db, id, 200);
}

apr_status_t svc_h_providers_default(svc_ctx_t *ctx)
{
    return svc_write(ctx, make_default, NULL);
}

/* The test's answer: {"ok", "models", "latency_ms", "error", "error_code",
 * "tools"}; tools is -1 when it was not tried. */
static apr_status_t reply_test(svc_ctx_t *ctx, json_t *models, const svc_llm_reply_t *r,
                               int tools)
{
    return svc_reply_json(ctx, 200, json_pack("{s:b,s:O,s:I,s:s?,s:s?,s:o}",
                                              "ok", r->error_code == NULL,
                                              "models", models,
                                              "latency_ms", (json_int_t)r->duration_ms,
                                              "error", r->error, "error_code", r->error_code,
                                              "tools", tools < 0 ? json_null()
                                                                 : json_boolean(tools)));
}

/* The probe of tool calling: one tool, the model made to call it. A call
 * of it, with its argument, is the provider's tools working; a refusal
 * (400) or a plain text answer is a provider without them. */
static const char probe_tools[] =
    "[{\"name\":\"report_status\",\"description\":\"Report a status word.\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"status\":{\"type\":"
    "\"string\"}},\"required\":[\"status\"]}}]";

static int probe(svc_ctx_t *ctx, const svc_provider_t *prov, long timeout_ms,
                 svc_llm_reply_t **preply)
{
    json_error_t jerr;
    json_t *tools = svc_json_pool(ctx->pool, json_loads(probe_tools, 0, &jerr));
    json_t *convo = svc_json_pool(ctx->pool, json_pack(
        "[{s:s,s:s}]", "role", "user", "content",
        "Call the tool report_status with the status \"ok\"."));
    svc_llm_request_t req;
    json_t *call;

    memset(&req, 0, sizeof(req));
    req.tools = tools;
    req.conversation = convo;
    req.tool_choice = "report_status";
    req.max_tokens = 64;
    req.timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
    svc_provider_complete(ctx->pool, ctx->conf, prov, &req, preply);
    call = json_array_get((*preply)->tool_calls, 0);
    return (*preply)->error_code == NULL && call
           && strcmp(svc_json_str(call, "name") ? svc_json_str(call, "name") : "",
                     "report_status") == 0
           && svc_json_str(json_object_get(call, "arguments"), "status") != NULL;
}

apr_status_t svc_h_providers_test(svc_ctx_t *ctx)
{
    const char *id = apr_table_get(ctx->params, "id");
    static const svc_llm_msg_t hello[] = { { "user", "Reply with the word: ok" } };
    apr_time_t deadline = apr_time_now() + apr_time_from_msec(ctx->conf->model_timeout_ms);
    svc_llm_request_t req;
    svc_llm_reply_t *reply, *mreply, *treply = NULL;
    svc_provider_t *prov;
    int tools = -1;
    svc_usage_t usage;
    json_t *models;
    svc_db_t *db;
    apr_status_t rv;

    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_provider_load(db, ctx->pool, ctx->conf, ctx->org->id, id, &prov);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "No provider %s in %s.", id, ctx->org->slug);
    }
    if (rv == APR_EINVAL) {
        mreply = apr_pcalloc(ctx->pool, sizeof(*mreply));
        mreply->error_code = "key_unreadable";
        mreply->error = "The stored key cannot be opened (the server secret changed since it "
                        "was set); set the key again.";
        return reply_test(ctx, svc_json_pool(ctx->pool, json_array()), mreply, -1);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    /* Neither call holds a pooled connection. */
    if ((rv = svc_ctx_db_release(ctx)) != APR_SUCCESS) {
        return rv;
    }
    reply = NULL;
    rv = svc_llm_models(ctx->pool, ctx->conf, prov, ctx->conf->model_timeout_ms, &models,
                        &mreply);
    /* Not every compatible server lists its models; the completion says more. */
    if (rv == APR_SUCCESS || mreply->http_status == 404) {
        memset(&req, 0, sizeof(req));
        req.messages = hello;
        req.nmessages = 1;
        req.max_tokens = 1;
        /* Both calls within SvcModelTimeout together. */
        req.timeout_ms = (long)apr_time_as_msec(deadline - apr_time_now());
        if (req.timeout_ms < 1) {
            req.timeout_ms = 1;
        }
        svc_provider_complete(ctx->pool, ctx->conf, prov, &req, &reply);
    }
    if (!reply) {
        reply = mreply;
    }
    /* Then tool calling, which runs use when they can (the agent loop):
     * what it finds is kept for the provider's `tools: auto`. */
    if (reply->error_code == NULL) {
        tools = probe(ctx, prov, (long)apr_time_as_msec(deadline - apr_time_now()), &treply);
    }
    memset(&usage, 0, sizeof(usage));
    usage.org_id = ctx->org->id;
    usage.user_id = ctx->who->user_id;
    usage.purpose = "provider.test";
    usage.subject_type = "provider";
    usage.subject_id = prov->id;
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_provider_record_usage(db, ctx->pool, prov, &usage, reply)) != APR_SUCCESS
        || (treply && (rv = svc_provider_record_usage(db, ctx->pool, prov, &usage, treply))
                      != APR_SUCCESS)
        || (tools >= 0 && (rv = svc_provider_tools_found(db, ctx->pool, prov, tools))
                          != APR_SUCCESS)) {
        return rv;
    }
    return reply_test(ctx, models, reply, tools);
}
