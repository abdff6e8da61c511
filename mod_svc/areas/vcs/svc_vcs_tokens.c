/*
 * svc_vcs_tokens.c: installation access tokens and their per-process cache.
 *
 * A token minted for one repository is good for an hour; runs and link
 * checks of the same repository within the hour reuse it, so the provider
 * sees one mint, not one per run. The cache lives in this process's memory
 * only, each token sealed (crypto_secretbox) under a key drawn when the
 * process starts, so neither a core file's plain text nor anything written
 * anywhere holds a usable token, and every entry is wiped when it goes.
 */
#include "svc_vcs_tokens.h"

#include <apr_lib.h>
#include <apr_thread_mutex.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_SLOTS     256
#define CACHE_KEY_MAX   240
#define CACHE_TOKEN_MAX 255
/* A token is reused while more than this is left of its hour. */
#define CACHE_MARGIN    apr_time_from_sec(300)

typedef struct {
    apr_int64_t installation_id;            /* 0: a free slot */
    char key[CACHE_KEY_MAX + 1];
    unsigned char box[SVC_BOX_OVERHEAD + CACHE_TOKEN_MAX];
    apr_size_t boxlen;
    apr_time_t expires;
    apr_time_t used;
} slot_t;

static struct {
    apr_thread_mutex_t *mu;
    slot_t *slots;
    unsigned char key[32];
} cache;

static apr_status_t cache_cleanup(void *data)
{
    if (cache.slots) {
        svc_wipe(cache.slots, sizeof(slot_t) * CACHE_SLOTS);
        free(cache.slots);
        cache.slots = NULL;
    }
    svc_wipe(cache.key, sizeof(cache.key));
    cache.mu = NULL;
    return APR_SUCCESS;
}

apr_status_t svc_vcs_cache_init(apr_pool_t *pchild)
{
    apr_status_t rv = apr_thread_mutex_create(&cache.mu, APR_THREAD_MUTEX_DEFAULT, pchild);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    cache.slots = calloc(CACHE_SLOTS, sizeof(slot_t));
    if (!cache.slots) {
        return APR_ENOMEM;
    }
    svc_random_bytes(cache.key, sizeof(cache.key));
    apr_pool_cleanup_register(pchild, NULL, cache_cleanup, apr_pool_cleanup_null);
    return APR_SUCCESS;
}

static void slot_free(slot_t *s)
{
    svc_wipe(s, sizeof(*s));
}

/* 1 with the token in out (CACHE_TOKEN_MAX + 1 bytes) when a cached one
 * has more than CACHE_MARGIN left. */
static int cache_get(const char *key, char *out, apr_time_t *pexpires)
{
    apr_time_t now = apr_time_now();
    int i, found = 0;

    if (!cache.slots || apr_thread_mutex_lock(cache.mu) != APR_SUCCESS) {
        return 0;
    }
    for (i = 0; i < CACHE_SLOTS; i++) {
        slot_t *s = &cache.slots[i];
        if (!s->installation_id || strcmp(s->key, key) != 0) {
            continue;
        }
        if (s->expires - now > CACHE_MARGIN
            && svc_box_open_into((unsigned char *)out, cache.key, s->box, s->boxlen)
               == APR_SUCCESS) {
            out[s->boxlen - SVC_BOX_OVERHEAD] = '\0';
            *pexpires = s->expires;
            s->used = now;
            found = 1;
        }
        else {
            slot_free(s);
        }
        break;
    }
    apr_thread_mutex_unlock(cache.mu);
    return found;
}

static void cache_put(apr_int64_t id, const char *key, const char *token, apr_time_t expires)
{
    apr_size_t n = strlen(token);
    apr_time_t now = apr_time_now();
    slot_t *victim = NULL, *spare = NULL, *lru = NULL;
    int i;

    if (!cache.slots || n > CACHE_TOKEN_MAX || strlen(key) > CACHE_KEY_MAX
        || expires - now <= CACHE_MARGIN || apr_thread_mutex_lock(cache.mu) != APR_SUCCESS) {
        return;
    }
    /* The same key, else a free or stale slot, else the least recently used. */
    for (i = 0; i < CACHE_SLOTS && !victim; i++) {
        slot_t *s = &cache.slots[i];
        if (s->installation_id && strcmp(s->key, key) == 0) {
            victim = s;
        }
        else if (!s->installation_id || s->expires - now <= CACHE_MARGIN) {
            spare = spare ? spare : s;
        }
        else if (!lru || s->used < lru->used) {
            lru = s;
        }
    }
    victim = victim ? victim : spare ? spare : lru;
    slot_free(victim);
    victim->installation_id = id;
    memcpy(victim->key, key, strlen(key) + 1);
    svc_box_seal_into(victim->box, cache.key, (const unsigned char *)token, n);
    victim->boxlen = n + SVC_BOX_OVERHEAD;
    victim->expires = expires;
    victim->used = now;
    apr_thread_mutex_unlock(cache.mu);
}

void svc_vcs_token_forget(apr_int64_t id)
{
    int i;

    if (!cache.slots || apr_thread_mutex_lock(cache.mu) != APR_SUCCESS) {
        return;
    }
    for (i = 0; i < CACHE_SLOTS; i++) {
        if (cache.slots[i].installation_id == id) {
            slot_free(&cache.slots[i]);
        }
    }
    apr_thread_mutex_unlock(cache.mu);
}

apr_status_t svc_vcs_token(svc_vcs_call_t *c, const svc_vcs_app_t *app, apr_int64_t id,
                           const char *repo, svc_vcs_token_e kind, const char **ptoken,
                           apr_time_t *pexpires)
{
    static const char *const permissions[] = {
        NULL,
        "{\"contents\":\"read\",\"metadata\":\"read\"}",
        "{\"metadata\":\"read\"}",
        "{\"administration\":\"write\",\"metadata\":\"read\"}"
    };
    /* Repository names are the provider's, whatever their case. */
    char *key = apr_psprintf(c->p, "%" APR_INT64_T_FMT ":%d:%s", id, (int)kind,
                             kind == SVC_VCS_TOKEN_CLONE ? repo : "");
    char *k;
    char buf[CACHE_TOKEN_MAX + 1];
    apr_status_t rv;

    for (k = key; *k; k++) {
        *k = (char)apr_tolower(*k);
    }
    if (kind != SVC_VCS_TOKEN_ADMIN && cache_get(key, buf, pexpires)) {
        *ptoken = apr_pstrdup(c->p, buf);
        svc_wipe(buf, sizeof(buf));
        return APR_SUCCESS;
    }
    rv = svc_vcs_api_token(c, app, id, kind == SVC_VCS_TOKEN_CLONE ? repo : NULL,
                           permissions[kind], ptoken, pexpires);
    if (rv == APR_SUCCESS && kind != SVC_VCS_TOKEN_ADMIN) {
        cache_put(id, key, *ptoken, *pexpires);
    }
    return rv;
}

/* ------------------------------------------------------------------------ */
/* For the runs area                                                        */

static const svc_stmt_t st_tok_installation = {
    "svc_vcs_tok_installation",
    "SELECT account_login FROM vcs_installations"
    " WHERE installation_id = $1::bigint AND org_id = $2 AND status = 'active'",
    2, SVC_STMT_READ
};

apr_status_t svc_vcs_clone_token(svc_db_t *db, apr_pool_t *p, const svc_config_t *conf,
                                 const char *org_id, apr_int64_t installation_id,
                                 const char *full_name, const char **ptoken,
                                 apr_time_t *pexpires)
{
    const svc_vcs_app_t *app = svc_vcs_app(conf);
    const char *slash, *login;
    svc_vcs_call_t c;
    svc_dbres_t *res;
    apr_status_t rv;

    *ptoken = NULL;
    if (!app) {
        return APR_ENOTIMPL;
    }
    if (!svc_vcs_full_name_valid(full_name)) {
        return APR_EACCES;
    }
    rv = svc_db_execv(db, &st_tok_installation, p, &res,
                      apr_psprintf(p, "%" APR_INT64_T_FMT, installation_id), org_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_ENOTFOUND;
    }
    /* A token names repositories of the installation's own account. */
    login = svc_dbres_str(res, 0, 0);
    slash = strchr(full_name, '/');
    if (strlen(login) != (apr_size_t)(slash - full_name)
        || strncasecmp(login, full_name, (apr_size_t)(slash - full_name)) != 0) {
        return APR_EACCES;
    }
    svc_vcs_call_init(&c, p, conf);
    rv = svc_vcs_token(&c, app, installation_id, slash + 1, SVC_VCS_TOKEN_CLONE, ptoken,
                       pexpires);
    if (rv == APR_EACCES) {
        /* 404 (uninstalled) and 403 (suspended) are about the installation,
         * before any webhook said so; 422 is about the repository. */
        return c.status == 404 || c.status == 403 ? SVC_ENOTFOUND : APR_EACCES;
    }
    return rv;
}
