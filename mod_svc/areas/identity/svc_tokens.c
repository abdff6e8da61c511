/*
 * svc_tokens.c: personal access tokens: format, authentication, and the
 * /api/me/tokens endpoints.
 */
#include "svc_tokens.h"

#include <apr_thread_mutex.h>
#include <stdlib.h>
#include <string.h>

/*
 * One token's metadata as the API shows it: these columns of the api_tokens
 * row `t` (and the binding's slug, from `slug`), in the order of
 * token_item, read in binary and written by svc_row_json.
 */
#define TOKEN_COLS(slug)                                                            \
    "t.id, t.name, t.scope, t.org_id, " slug ", t.display_prefix, CASE"             \
    "   WHEN t.revoked_at IS NOT NULL THEN 'revoked'"                               \
    "   WHEN t.expires_at IS NOT NULL AND t.expires_at <= now() THEN 'expired'"     \
    "   ELSE 'active' END,"                                                         \
    " t.created_at, t.expires_at, t.last_used_at, t.last_used_ip, t.revoked_at"

static const svc_col_t org_ref[] = {
    SVC_COL_ID("org"),
    SVC_COL_SLUG,
    SVC_COL_END
};

/* A token as the list, the creation and svcctl show it: the writer's shape
 * and the OpenAPI schema both (svc_schema.h). */
static const svc_col_t token_item[] = {
    SVC_COL_ID("tok"),
    { .key = "name", .type = SVC_COL_TEXT, .example = "deploy bot" },
    { .key = "scope", .type = SVC_COL_TEXT, .values = svc_scope_values },
    { .key = "org", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .sub = org_ref,
      .description = "The organization the token is bound to; null: all of yours." },
    { .key = "prefix", .type = SVC_COL_TEXT, .example = "svc_pat_4Xb2",
      .description = "The secret's first characters, to tell tokens apart." },
    { .key = "status", .type = SVC_COL_TEXT, .values = SVC_VALUES("active", "expired",
                                                                    "revoked") },
    SVC_COL_CREATED_AT,
    { .key = "expires_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL,
      .description = "null: it does not expire." },
    { .key = "last_used_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    { .key = "last_used_ip", .type = SVC_COL_TEXT, .flags = SVC_COL_NULL, .example = "192.0.2.7" },
    { .key = "revoked_at", .type = SVC_COL_TIME, .flags = SVC_COL_NULL },
    SVC_COL_END
};

const svc_schema_t svc_schema_token = { .name = "Token", .keys = token_item,
    .description = "A personal access token, without its secret (docs/api/tokens.md)." };

static const svc_col_t token_created_keys[] = {
    { .key = "token", .type = SVC_COL_TEXT, .format = "secret",
      .example = "svc_pat_4Xb2mQ9kT1vR8sLw0ZyN3cHd6JfA5pGe7u",
      .description = "The secret, shown this once: send it as `Authorization: Bearer ...`." },
    SVC_COL_END
};

const svc_schema_t svc_schema_token_created = { .name = "TokenCreated",
    .keys = token_created_keys, .base = &svc_schema_token,
    .description = "A token just made: the token and, this once, its secret." };

/*
 * Both token statements start with the same eight columns (TOKEN_VERDICT),
 * so one function reads the verdict from either: the token, scope and
 * binding, whether it is revoked or expired, whether its last use is due to
 * be recorded, the user, and the revision of the user's identity (bumped by
 * sql/005 whenever email, name or the founder flag change). The full lookup
 * adds the user's details and what never changes for a token (the binding's
 * slug, the expiry), for the cache to keep.
 */
#define TOKEN_VERDICT                                                               \
    "SELECT t.id, t.scope, t.org_id, t.revoked_at IS NOT NULL,"                     \
    " t.expires_at <= now(),"                                                       \
    " t.last_used_at IS NULL OR t.last_used_at < now() - make_interval(secs => $2::int),"\
    " t.user_id, t.user_rev"

enum {
    TV_ID, TV_SCOPE, TV_ORG, TV_REVOKED, TV_EXPIRED, TV_TOUCH, TV_USER, TV_USER_REV,
    TV_EMAIL, TV_NAME, TV_FOUNDER, TV_ORG_SLUG, TV_EXPIRES_AT, TV_EXPIRES_EPOCH, TV_SUSPENDED
};

static const svc_stmt_t st_tok_auth = {
    "svc_tokens_auth",
    TOKEN_VERDICT ", u.email, u.name, u.founder,"
    " o.slug, svc_ts(t.expires_at), extract(epoch FROM t.expires_at)::bigint,"
    " u.suspended_at IS NOT NULL"
    " FROM api_tokens t JOIN users u ON u.id = t.user_id"
    " LEFT JOIN orgs o ON o.id = t.org_id"
    " WHERE t.secret_hash = $1::bytea",
    2, SVC_STMT_READ
};

/*
 * The lean form of st_tok_auth for a cached token, run on every request:
 * one index lookup in one table, returning only what can change
 * (revocation, expiry by the clock, the user's identity revision) and what
 * identifies the principal.
 */
static const svc_stmt_t st_tok_check = {
    "svc_tokens_check",
    TOKEN_VERDICT
    " FROM api_tokens t"
    " WHERE t.secret_hash = $1::bytea",
    2, SVC_STMT_READ
};

/* Harmless to repeat: it only moves a timestamp forward. */
static const svc_stmt_t st_tok_touch = {
    "svc_tokens_touch",
    "UPDATE api_tokens SET last_used_at = now(), last_used_ip = $2 WHERE id = $1",
    2, SVC_STMT_RETRY | SVC_STMT_ALONE
};

static const svc_stmt_t st_tok_insert = {
    "svc_tokens_insert",
    "INSERT INTO api_tokens AS t (id, user_id, org_id, name, scope, secret_hash,"
    " display_prefix, expires_at)"
    " VALUES ($1, $2, $3, $4, $5, $6::bytea, $7,"
    "  CASE WHEN $8::int IS NULL THEN NULL ELSE now() + make_interval(days => $8::int) END)"
    " RETURNING " TOKEN_COLS("(SELECT o.slug FROM orgs o WHERE o.id = t.org_id)"),
    8, SVC_STMT_BINARY
};

static const svc_stmt_t st_tok_list = {
    "svc_tokens_list",
    "SELECT t.seq, " TOKEN_COLS("o.slug")
    " FROM api_tokens t LEFT JOIN orgs o ON o.id = t.org_id"
    " WHERE t.user_id = $1 AND t.seq < $2::bigint AND ($3::text IS NULL OR t.org_id = $3)"
    " ORDER BY t.seq DESC LIMIT $4::int",
    4, SVC_STMT_READ | SVC_STMT_BINARY
};

/* Every token of a user, for the operator (svcctl token list). */
static const svc_stmt_t st_tok_of_user = {
    "svc_tokens_of_user",
    "SELECT " TOKEN_COLS("o.slug")
    " FROM api_tokens t LEFT JOIN orgs o ON o.id = t.org_id"
    " WHERE t.user_id = $1 ORDER BY t.seq DESC",
    1, SVC_STMT_READ | SVC_STMT_BINARY
};

/* A NULL user ($2) or binding ($3) narrows nothing: the operator's revocation. */
static const svc_stmt_t st_tok_revoke = {
    "svc_tokens_revoke",
    "UPDATE api_tokens SET revoked_at = now()"
    " WHERE id = $1 AND ($2::text IS NULL OR user_id = $2) AND ($3::text IS NULL OR org_id = $3)"
    " AND revoked_at IS NULL"
    " RETURNING org_id, scope, name, user_id",
    3, 0
};

static const svc_stmt_t st_tok_visible = {
    "svc_tokens_visible",
    "SELECT 1 FROM api_tokens"
    " WHERE id = $1 AND ($2::text IS NULL OR user_id = $2) AND ($3::text IS NULL OR org_id = $3)",
    3, SVC_STMT_READ
};


const svc_field_t svc_body_token_create[] = {
    { .name = "name", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 100,
      .description = "What the token is for, 1 to 100 characters." },
    { .name = "scope", .type = SVC_FT_ENUM, .required = 1, .values = svc_scope_values,
      .description = "read: safe methods only; write: read plus changes to tenant resources; "
        "admin: write plus token, member and billing administration." },
    { .name = "org", .type = SVC_FT_SLUG, .nullable = 1,
      .description = "Bind the token to this organization (you must be a member); omitted or "
        "null: not bound." },
    { .name = "expires_in_days", .type = SVC_FT_INT, .nullable = 1, .min = 1, .max = 365,
      .description = "Days until the token expires, 1 to 365; omitted or null: never." },
    SVC_FIELD_END
};

char *svc_pat_generate(apr_pool_t *p)
{
    return svc_secret_token_generate(p, SVC_PAT_PREFIX);
}

int svc_pat_well_formed(const char *s)
{
    return svc_secret_token_well_formed(s, SVC_PAT_PREFIX);
}

void svc_pat_hash(const svc_config_t *conf, const char *secret, unsigned char out[32])
{
    svc_keyed_hash(out, conf->pat_key, (const unsigned char *)secret, strlen(secret));
}

/*
 * Unknown, revoked or expired: the 401 to answer; else APR_SUCCESS. It only
 * reads TOKEN_VERDICT's columns, so the full lookup and the deferred check
 * share it.
 */
static apr_status_t token_verdict(svc_ctx_t *ctx, const svc_dbres_t *res)
{
    if (svc_dbres_rows(res) != 1) {
        return svc_auth_fail(ctx, "The token is not recognised.");
    }
    if (svc_dbres_bool(res, 0, TV_REVOKED) == 1) {
        return svc_auth_fail(ctx, "The token has been revoked.");
    }
    if (svc_dbres_bool(res, 0, TV_EXPIRED) == 1) {
        return svc_auth_fail(ctx, "The token has expired.");
    }
    return APR_SUCCESS;
}

/* The principal a row of st_tok_auth describes, or a 401 problem. */
static apr_status_t principal_of(svc_ctx_t *ctx, const svc_dbres_t *res,
                                 svc_principal_t **pwho)
{
    svc_principal_t *who;
    apr_status_t rv;

    if ((rv = token_verdict(ctx, res)) != APR_SUCCESS) {
        return rv;
    }
    /*
     * A suspension bumps the user's revision on every token (sql/024), so
     * a cached principal fails its per-request check and comes here, on
     * every node, with the next request: never cached as allowed.
     */
    if (svc_dbres_bool(res, 0, TV_SUSPENDED) == 1) {
        return svc_fail(ctx, 403, "account_suspended", "This account is suspended by the "
                        "platform's operator; contact them.");
    }
    who = apr_pcalloc(ctx->pool, sizeof(*who));
    who->via = SVC_VIA_PAT;
    who->token_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, TV_ID));
    who->scope = svc_scope_parse(svc_dbres_str(res, 0, TV_SCOPE));
    who->token_org_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, TV_ORG));
    who->token_org_slug = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, TV_ORG_SLUG));
    who->token_expires_at = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, TV_EXPIRES_AT));
    who->user_id = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, TV_USER));
    who->email = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, TV_EMAIL));
    who->name = apr_pstrdup(ctx->pool, svc_dbres_str(res, 0, TV_NAME));
    who->founder = svc_dbres_bool(res, 0, TV_FOUNDER) == 1;
    if (svc_dbres_int64(res, 0, TV_USER_REV, &who->user_rev) != APR_SUCCESS) {
        return SVC_EDB;
    }
    if (who->token_expires_at
        && svc_dbres_int64(res, 0, TV_EXPIRES_EPOCH, &who->token_expires_epoch) != APR_SUCCESS) {
        return SVC_EDB;
    }
    /* last_used_at is written at most once per interval per token. */
    who->touch_due = svc_dbres_bool(res, 0, TV_TOUCH) == 1;
    *pwho = who;
    return APR_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/*
 * The authentication cache: what a token hash resolved to, per httpd child.
 *
 * It never decides anything. A hit only lets the authentication query be
 * deferred and sent in the same round trip as the request's first read
 * (svc_db_defer): the request proceeds on the cached principal, and the
 * query's result is checked before that read's result is used, before any
 * write, and at the latest before the response (svc_pat_confirm). So a
 * revoked or expired token is refused on the very next request, as without
 * the cache; the cache only saves a round trip. If the fresh row differs
 * from the cached principal (an email or the founder flag changed), the
 * entry is dropped and the request runs again from authentication
 * (SVC_ERESTART).
 */

#define SVC_AUTH_CACHE_SLOTS 512

typedef struct {
    unsigned char hash[32];
    int used;
    svc_principal_t who;        /* its strings point into blob */
    char *blob;                 /* malloc'd: an entry outlives any request pool */
} cache_slot_t;

static cache_slot_t *auth_cache;
static apr_thread_mutex_t *auth_cache_lock;

static apr_status_t cache_cleanup(void *data)
{
    int i;

    (void)data;
    for (i = 0; auth_cache && i < SVC_AUTH_CACHE_SLOTS; i++) {
        free(auth_cache[i].blob);
    }
    free(auth_cache);
    auth_cache = NULL;
    auth_cache_lock = NULL;
    return APR_SUCCESS;
}

apr_status_t svc_pat_cache_init(apr_pool_t *p)
{
    apr_status_t rv;

    if (auth_cache) {
        return APR_SUCCESS;
    }
    rv = apr_thread_mutex_create(&auth_cache_lock, APR_THREAD_MUTEX_DEFAULT, p);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    auth_cache = calloc(SVC_AUTH_CACHE_SLOTS, sizeof(cache_slot_t));
    if (!auth_cache) {
        return APR_ENOMEM;
    }
    apr_pool_cleanup_register(p, NULL, cache_cleanup, apr_pool_cleanup_null);
    return APR_SUCCESS;
}

/* The key is a keyed hash, uniformly random already: its first bytes pick
 * the slot, and a collision merely evicts. */
static cache_slot_t *slot_of(const unsigned char hash[32])
{
    return &auth_cache[(((unsigned)hash[0] << 8) | hash[1]) % SVC_AUTH_CACHE_SLOTS];
}

static const char *blob_put(char **pw, const char *s)
{
    char *start;

    if (!s) {
        return NULL;
    }
    start = *pw;
    *pw = stpcpy(start, s) + 1;
    return start;
}

static apr_size_t len0(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

static void cache_store(const unsigned char hash[32], const svc_principal_t *who)
{
    cache_slot_t *slot;
    char *blob, *w;

    if (!auth_cache) {
        return;
    }
    blob = malloc(len0(who->user_id) + len0(who->email) + len0(who->name)
                  + len0(who->token_id) + len0(who->token_org_id)
                  + len0(who->token_org_slug) + len0(who->token_expires_at) + 1);
    if (!blob) {
        return;
    }
    apr_thread_mutex_lock(auth_cache_lock);
    slot = slot_of(hash);
    free(slot->blob);
    memcpy(slot->hash, hash, 32);
    slot->used = 1;
    slot->who = *who;
    w = blob;
    slot->who.user_id = blob_put(&w, who->user_id);
    slot->who.email = blob_put(&w, who->email);
    slot->who.name = blob_put(&w, who->name);
    slot->who.token_id = blob_put(&w, who->token_id);
    slot->who.token_org_id = blob_put(&w, who->token_org_id);
    slot->who.token_org_slug = blob_put(&w, who->token_org_slug);
    slot->who.token_expires_at = blob_put(&w, who->token_expires_at);
    slot->who.touch_due = 0;
    slot->blob = blob;
    apr_thread_mutex_unlock(auth_cache_lock);
}

/* A pool copy of the cached principal for this hash, or NULL. */
static svc_principal_t *cache_get(apr_pool_t *p, const unsigned char hash[32])
{
    svc_principal_t *who = NULL;
    cache_slot_t *slot;

    if (!auth_cache) {
        return NULL;
    }
    apr_thread_mutex_lock(auth_cache_lock);
    slot = slot_of(hash);
    if (slot->used && svc_ct_equal(slot->hash, hash, 32)) {
        who = apr_pmemdup(p, &slot->who, sizeof(*who));
        who->user_id = apr_pstrdup(p, slot->who.user_id);
        who->email = apr_pstrdup(p, slot->who.email);
        who->name = apr_pstrdup(p, slot->who.name);
        who->token_id = apr_pstrdup(p, slot->who.token_id);
        who->token_org_id = apr_pstrdup(p, slot->who.token_org_id);
        who->token_org_slug = apr_pstrdup(p, slot->who.token_org_slug);
        who->token_expires_at = apr_pstrdup(p, slot->who.token_expires_at);
    }
    apr_thread_mutex_unlock(auth_cache_lock);
    return who;
}

static void cache_drop(const unsigned char hash[32])
{
    cache_slot_t *slot;

    if (!auth_cache) {
        return;
    }
    apr_thread_mutex_lock(auth_cache_lock);
    slot = slot_of(hash);
    if (slot->used && svc_ct_equal(slot->hash, hash, 32)) {
        free(slot->blob);
        memset(slot, 0, sizeof(*slot));
    }
    apr_thread_mutex_unlock(auth_cache_lock);
}

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/*
 * Does a st_tok_check row confirm the assumed principal? Everything the
 * request may have used is compared: the user's details through their
 * revision; a token's expiry and org binding never change, so the cached
 * ones stand.
 */
static int row_confirms(const svc_dbres_t *res, const svc_principal_t *a)
{
    apr_int64_t rev;

    return same_str(svc_dbres_str(res, 0, TV_ID), a->token_id)
        && svc_scope_parse(svc_dbres_str(res, 0, TV_SCOPE)) == a->scope
        && same_str(svc_dbres_str(res, 0, TV_ORG), a->token_org_id)
        && same_str(svc_dbres_str(res, 0, TV_USER), a->user_id)
        && svc_dbres_int64(res, 0, TV_USER_REV, &rev) == APR_SUCCESS
        && rev == a->user_rev;
}

typedef struct {
    svc_ctx_t *ctx;
    svc_principal_t *assumed;
    unsigned char hash[32];
} deferred_auth_t;

/* The deferred check answered: did the request assume right? */
static apr_status_t check_deferred(void *baton, const svc_dbres_t *res)
{
    deferred_auth_t *d = baton;
    svc_ctx_t *ctx = d->ctx;
    apr_status_t rv = token_verdict(ctx, res);

    if (rv == APR_SUCCESS && !row_confirms(res, d->assumed)) {
        rv = SVC_ERESTART;
    }
    if (rv != APR_SUCCESS) {
        cache_drop(d->hash);
        ctx->auth_rv = rv;
        ctx->auth_problem = rv == SVC_EPROBLEM ? ctx->problem : NULL;
        return rv;
    }
    d->assumed->touch_due = svc_dbres_bool(res, 0, TV_TOUCH) == 1;
    return APR_SUCCESS;
}

apr_status_t svc_pat_authenticate(svc_ctx_t *ctx, const char *secret, svc_principal_t **pwho)
{
    unsigned char hash[32];
    const char *params[2];
    svc_principal_t *who;
    svc_dbres_t *res;
    svc_db_t *db;
    apr_status_t rv;

    if (!svc_pat_well_formed(secret)) {
        return svc_auth_fail(ctx, "The token is malformed (wrong prefix, length or checksum).");
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    svc_pat_hash(ctx->conf, secret, hash);
    params[0] = svc_bytea_param(ctx->pool, hash, sizeof(hash));
    params[1] = apr_itoa(ctx->pool, ctx->conf->token_touch_interval);

    who = cache_get(ctx->pool, hash);
    if (who) {
        deferred_auth_t *d = apr_palloc(ctx->pool, sizeof(*d));
        d->ctx = ctx;
        d->assumed = who;
        memcpy(d->hash, hash, sizeof(hash));
        if ((rv = svc_db_defer(db, &st_tok_check, params, check_deferred, d, ctx->pool))
            != APR_SUCCESS) {
            return rv;
        }
        *pwho = who;
        return APR_SUCCESS;
    }
    rv = svc_db_exec(db, &st_tok_auth, ctx->pool, &res, params);
    if (rv == APR_SUCCESS) {
        rv = principal_of(ctx, res, &who);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    cache_store(hash, who);
    *pwho = who;
    return APR_SUCCESS;
}

apr_status_t svc_pat_confirm(svc_ctx_t *ctx)
{
    svc_db_t *db;
    apr_status_t rv;

    /* No verdict (the database went away) means no answer but a 503. */
    if (ctx->db && svc_db_pending(ctx->db) && (rv = svc_db_flush(ctx->db)) != APR_SUCCESS
        && ctx->auth_rv == APR_SUCCESS) {
        ctx->auth_rv = rv;
    }
    if (ctx->auth_rv != APR_SUCCESS) {
        if (ctx->auth_problem) {
            ctx->problem = ctx->auth_problem;
        }
        return ctx->auth_rv;
    }
    /* A failure to record the last use must not fail the request. */
    if (ctx->who && ctx->who->via == SVC_VIA_PAT && ctx->who->touch_due
        && svc_ctx_db(ctx, &db) == APR_SUCCESS) {
        ctx->who->touch_due = 0;
        (void)svc_db_execv(db, &st_tok_touch, ctx->pool, NULL, ctx->who->token_id,
                           *ctx->client_ip ? ctx->client_ip : NULL);
    }
    return APR_SUCCESS;
}

apr_status_t svc_token_create(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                              const svc_token_spec_t *spec, const svc_actor_t *actor,
                              const char **psecret, json_t **pmeta)
{
    const char *secret = svc_pat_generate(p);
    const char *id = svc_id_new(p, "tok_");
    unsigned char hash[32];
    const char *params[8];
    json_t *meta, *audit;
    const char *text;
    json_error_t jerr;
    svc_dbres_t *res;
    apr_status_t rv;

    params[0] = id;
    params[1] = spec->user_id;
    params[2] = spec->org_id;
    params[3] = spec->name;
    params[4] = svc_scope_name(spec->scope);
    svc_pat_hash(conf, secret, hash);
    params[5] = svc_bytea_param(p, hash, sizeof(hash));
    params[6] = apr_pstrndup(p, secret, 12);
    params[7] = spec->days > 0 ? apr_itoa(p, spec->days) : NULL;

    /* A concurrent removal from the org (which revokes the member's tokens
     * bound to it) must not miss a token being created. */
    if ((spec->org_id && (rv = svc_member_hold(db, p, spec->org_id, spec->user_id))
                         != APR_SUCCESS)
        || (rv = svc_db_exec(db, &st_tok_insert, p, &res, params)) != APR_SUCCESS
        /* Built the way the list builds it, so both show a token alike. */
        || (rv = svc_row_json_text(p, res, token_item, &text)) != APR_SUCCESS) {
        return rv;
    }
    meta = svc_json_pool(p, json_loads(text, 0, &jerr));
    if (!meta) {
        return SVC_EDB;
    }
    audit = svc_json_pool(p, json_pack("{s:s,s:s,s:s?,s:O}", "name", spec->name,
                                       "scope", svc_scope_name(spec->scope),
                                       "org_id", spec->org_id,
                                       "expires_at", json_object_get(meta, "expires_at")));
    rv = svc_audit_write(db, p, actor, spec->org_id, "token.created", "token", id, audit);
    if (rv == APR_SUCCESS) {
        *psecret = secret;
        *pmeta = meta;
    }
    return rv;
}

apr_status_t svc_h_tokens_list(svc_ctx_t *ctx)
{
    return svc_reply_rows(ctx, &st_tok_list, token_item, ctx->who->user_id, SVC_PAGE_BEFORE,
                          svc_auth_binding(ctx), SVC_PAGE_FETCH);
}

/* The body's "org" is not one of the caller's. */
static apr_status_t not_a_member(svc_ctx_t *ctx)
{
    svc_fail_field(ctx, "org", "not_found",
                   "You are not a member of an organization with this slug.");
    return SVC_EPROBLEM;
}

/* Creates the token *baton (svc_token_spec_t) describes, for the caller. */
static apr_status_t create_token(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *secret;
    svc_actor_t actor;
    json_t *meta;
    apr_status_t rv;

    svc_actor_from_ctx(ctx, &actor);
    rv = svc_token_create(db, ctx->pool, ctx->conf, baton, &actor, &secret, &meta);
    if (rv == SVC_ENOTFOUND) {
        /* Removed from the org between the check before and the insert. */
        return not_a_member(ctx);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    json_object_set_new(meta, "token", json_string(secret));
    return svc_reply_json(ctx, 201, json_incref(meta));
}

apr_status_t svc_h_tokens_create(svc_ctx_t *ctx)
{
    svc_token_spec_t spec;
    const char *org_slug = svc_json_str(ctx->body, "org");
    svc_db_t *db;
    apr_status_t rv;

    memset(&spec, 0, sizeof(spec));
    spec.user_id = ctx->who->user_id;
    spec.name = svc_json_str(ctx->body, "name");
    spec.scope = svc_scope_parse(svc_json_str(ctx->body, "scope"));
    spec.days = (int)svc_json_int(ctx->body, "expires_in_days", 0);

    /*
     * A token may not mint a token that reaches further than itself: not
     * beyond its org binding, and not past its own expiry.
     */
    if (ctx->who->via == SVC_VIA_PAT) {
        if (ctx->who->token_org_slug
            && (!org_slug || strcmp(org_slug, ctx->who->token_org_slug) != 0)) {
            return svc_fail(ctx, 403, "insufficient_scope",
                            "This token is bound to organization %s and can only create "
                            "tokens bound to it.", ctx->who->token_org_slug);
        }
        if (ctx->who->token_expires_at
            && (spec.days == 0 || apr_time_sec(apr_time_now()) + (apr_int64_t)spec.days * 86400
                                  > ctx->who->token_expires_epoch)) {
            return svc_fail(ctx, 403, "insufficient_scope",
                            "This token expires at %s and cannot create a token that "
                            "outlives it.", ctx->who->token_expires_at);
        }
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS) {
        return rv;
    }
    if (org_slug) {
        svc_orgref_t *org;
        rv = svc_org_membership(db, ctx->pool, org_slug, ctx->who->user_id, &org);
        if (rv == SVC_ENOTFOUND) {
            return not_a_member(ctx);
        }
        if (rv != APR_SUCCESS) {
            return rv;
        }
        spec.org_id = org->id;
    }
    return svc_write(ctx, create_token, &spec);
}

apr_status_t svc_token_revoke(svc_db_t *db, apr_pool_t *p, const svc_actor_t *actor,
                              const char *id, const char *user_id, const char *org_id,
                              int *prevoked)
{
    svc_dbres_t *res;
    apr_status_t rv;

    *prevoked = 0;
    rv = svc_db_execv(db, &st_tok_revoke, p, &res, id, user_id, org_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        /* Revoked already, or not there (or not visible) at all. */
        svc_dbres_t *vis;
        rv = svc_db_execv(db, &st_tok_visible, p, &vis, id, user_id, org_id);
        if (rv == APR_SUCCESS && svc_dbres_rows(vis) == 0) {
            rv = SVC_ENOTFOUND;
        }
        return rv;
    }
    rv = svc_audit_write(db, p, actor, svc_dbres_str(res, 0, 0), "token.revoked", "token", id,
                         svc_json_pool(p, json_pack("{s:s?,s:s?,s:s?,s:s?}", "name",
                                                    svc_dbres_str(res, 0, 2), "scope",
                                                    svc_dbres_str(res, 0, 1), "org_id",
                                                    svc_dbres_str(res, 0, 0), "user_id",
                                                    svc_dbres_str(res, 0, 3))));
    if (rv == APR_SUCCESS) {
        *prevoked = 1;
    }
    return rv;
}

apr_status_t svc_tokens_of(svc_db_t *db, apr_pool_t *p, const char *user_id,
                           const char **pjson)
{
    svc_dbres_t *res;
    svc_jbuf_t b;
    apr_status_t rv;
    int i, n;

    rv = svc_db_execv(db, &st_tok_of_user, p, &res, user_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    n = svc_dbres_rows(res);
    if (n > 0 && svc_shape_check(res, 0, token_item) != APR_SUCCESS) {
        return SVC_EDB;
    }
    svc_jbuf_init(&b, p, 320 * (apr_size_t)n + 2);
    svc_jbuf_raw(&b, "[", 1);
    for (i = 0; i < n; i++) {
        if (i) {
            svc_jbuf_raw(&b, ",", 1);
        }
        if ((rv = svc_row_json(&b, res, i, 0, token_item)) != APR_SUCCESS) {
            return rv;
        }
    }
    svc_jbuf_raw(&b, "]", 1);
    *pjson = svc_jbuf_text(&b, NULL);
    return APR_SUCCESS;
}

static apr_status_t revoke_token(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    svc_actor_t actor;
    apr_status_t rv;
    int revoked;

    svc_actor_from_ctx(ctx, &actor);
    /* Revoking a revoked token is fine (DELETE is idempotent); someone
     * else's is not found. */
    rv = svc_token_revoke(db, ctx->pool, &actor, apr_table_get(ctx->params, "id"),
                          ctx->who->user_id, svc_auth_binding(ctx), &revoked);
    if (rv == SVC_ENOTFOUND) {
        return svc_fail(ctx, 404, "not_found", "You have no token with this id.");
    }
    return rv == APR_SUCCESS ? svc_reply_empty(ctx) : rv;
}

apr_status_t svc_h_tokens_revoke(svc_ctx_t *ctx)
{
    return svc_write(ctx, revoke_token, NULL);
}
