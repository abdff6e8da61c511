/*
 * svc_vcs_client.c: the one code-hosting client (svc_vcs.h): calls to the
 * provider's REST API within a request's budget, the OAuth code exchange,
 * and the App's calls made with them.
 */
#include "svc_vcs_client.h"

#include <string.h>

/* The REST API version we speak (GitHub's dated versions). */
#define VCS_API_VERSION "2022-11-28"

/* Pages of repositories read at most per installation (100 each). */
#define VCS_REPO_PAGE 100

/* Pages of a user's installations looked through (100 each): 10,000 is more
 * installations of one App than any user reaches. */
#define VCS_USER_INSTALLATION_PAGES 100

void svc_vcs_call_init(svc_vcs_call_t *c, apr_pool_t *p, const svc_config_t *conf)
{
    memset(c, 0, sizeof(*c));
    c->p = p;
    c->conf = conf;
    c->deadline = apr_time_now() + apr_time_from_msec(conf->vcs_timeout_ms);
    c->max_response = SVC_VCS_MAX_RESPONSE;
    c->message = "";
    c->why = "";
}

int svc_vcs_full_name_valid(const char *s)
{
    const char *slash = s ? strchr(s, '/') : NULL;
    apr_size_t owner, name;

    if (!slash) {
        return 0;
    }
    owner = (apr_size_t)(slash - s);
    name = strlen(slash + 1);
    if (owner < 1 || owner > 100 || name < 1 || name > 100
        || strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-") != owner
        || strspn(slash + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                             "._-") != name) {
        return 0;
    }
    return strcmp(slash + 1, ".") != 0 && strcmp(slash + 1, "..") != 0;
}

/*
 * Sends `req` (method, url, headers, body, secrets set by the caller) within
 * the call's budget and reads its JSON answer: what svc_vcs_call and the
 * OAuth exchange (which is not under the API base) share. `what` names the
 * call in c->why.
 */
static apr_status_t vcs_send(svc_vcs_call_t *c, svc_http_req_t *req, const char *what,
                             int expect, json_t **pdoc, svc_http_resp_t **presp)
{
    const svc_config_t *conf = c->conf;
    long left_ms = (long)apr_time_as_msec(c->deadline - apr_time_now());
    svc_http_resp_t *resp;
    json_error_t jerr;
    json_t *doc;
    apr_status_t rv;

    c->status = 0;
    c->message = "";
    if (pdoc) {
        *pdoc = NULL;
    }
    if (left_ms <= 0) {
        c->why = apr_pstrcat(c->p, what, ": no time left of SvcVcsTimeout", NULL);
        return SVC_HTTP_ETIMEOUT;
    }
    req->timeout_ms = left_ms;
    req->connect_timeout_ms = conf->vcs_connect_timeout_ms < left_ms
                              ? conf->vcs_connect_timeout_ms : left_ms;
    req->max_response = c->max_response;
    req->ca_file = conf->vcs_ca_file;
    rv = svc_http_do(c->p, req, &resp);
    if (presp) {
        *presp = resp;
    }
    if (rv != APR_SUCCESS) {
        c->why = apr_pstrcat(c->p, what, ": ", resp->error, NULL);
        return rv;
    }
    c->status = resp->status;
    doc = json_loadb(resp->body, resp->body_len, JSON_REJECT_DUPLICATES, &jerr);
    svc_json_pool(c->p, doc);
    if (resp->status != expect) {
        const char *m = json_is_object(doc) ? svc_json_str(doc, "message") : NULL;
        c->message = m ? svc_printable(c->p, m, 300) : "";
        c->why = apr_psprintf(c->p, "%s answered HTTP %d%s%s", what, resp->status,
                              *c->message ? ": " : "", c->message);
        return APR_EACCES;
    }
    if (!json_is_object(doc) && !json_is_array(doc)) {
        c->why = apr_pstrcat(c->p, what, " did not answer JSON", NULL);
        return APR_EINVAL;
    }
    if (pdoc) {
        *pdoc = doc;
    }
    return APR_SUCCESS;
}

apr_status_t svc_vcs_call(svc_vcs_call_t *c, const char *method, const char *path,
                          const char *auth, const json_t *body, int expect, json_t **pdoc,
                          svc_http_resp_t **presp)
{
    const svc_config_t *conf = c->conf;
    const char *what = apr_pstrcat(c->p, method, " ", path, NULL);
    const char **secrets = apr_pcalloc(c->p, 3 * sizeof(*secrets));
    apr_size_t base = strlen(conf->vcs_api_url);
    svc_http_req_t req;

    memset(&req, 0, sizeof(req));
    req.method = method;
    /* A next page's full URL is followed only under the API base. */
    if (strncmp(path, conf->vcs_api_url, base) == 0 && path[base] == '/') {
        req.url = path;
        what = apr_pstrcat(c->p, method, " ", path + base, NULL);
    }
    else if (path[0] == '/') {
        req.url = apr_pstrcat(c->p, conf->vcs_api_url, path, NULL);
    }
    else {
        c->status = 0;
        c->message = "";
        c->why = apr_pstrcat(c->p, what, ": not under SvcVcsApiURL", NULL);
        return SVC_HTTP_EURL;
    }
    req.headers = apr_table_make(c->p, 5);
    apr_table_setn(req.headers, "Accept", "application/vnd.github+json");
    apr_table_setn(req.headers, "X-GitHub-Api-Version", VCS_API_VERSION);
    if (auth) {
        apr_table_setn(req.headers, "Authorization", auth);
    }
    if (body) {
        req.body = svc_json_dump(c->p, body);
        req.body_len = strlen(req.body);
        apr_table_setn(req.headers, "Content-Type", "application/json");
    }
    /* The whole value, and the credential after its scheme ("Bearer "). */
    secrets[0] = auth;
    secrets[1] = auth && strchr(auth, ' ') ? strchr(auth, ' ') + 1 : NULL;
    req.secrets = secrets;
    return vcs_send(c, &req, what, expect, pdoc, presp);
}

apr_status_t svc_vcs_call_fail(svc_ctx_t *ctx, const svc_vcs_call_t *c, apr_status_t rv,
                               const char *what)
{
    if (rv == SVC_HTTP_ETIMEOUT) {
        svc_fail(ctx, 504, "provider_timeout",
                 "The code-hosting provider did not answer in time; try again.");
    }
    else if (rv != APR_EACCES && rv != APR_EINVAL && rv != SVC_HTTP_ETOOBIG
             && rv != SVC_ENOTFOUND) {
        svc_fail(ctx, 502, "provider_unreachable",
                 "The code-hosting provider could not be reached; try again later.");
    }
    else {
        svc_fail(ctx, 502, "provider_error",
                 "The code-hosting provider gave an answer the service cannot use; try again "
                 "later.");
    }
    ctx->problem->log_detail = apr_pstrcat(ctx->pool, "code-hosting App: ", what, ": ",
                                           c->why, NULL);
    return SVC_EPROBLEM;
}

/* "Bearer <App JWT>"; NULL when signing failed. */
static const char *jwt_auth(svc_vcs_call_t *c, const svc_vcs_app_t *app)
{
    const char *jwt = svc_vcs_app_jwt(c->p, app);

    if (!jwt) {
        c->why = "cannot sign an App JWT with VCS_APP_PRIVATE_KEY_PEM";
        return NULL;
    }
    return apr_pstrcat(c->p, "Bearer ", jwt, NULL);
}

apr_status_t svc_vcs_api_installation(svc_vcs_call_t *c, const svc_vcs_app_t *app,
                                      apr_int64_t id, svc_vcs_installation_t *pinst)
{
    const char *auth = jwt_auth(c, app);
    json_t *doc, *account, *jid, *japp;
    apr_status_t rv;

    memset(pinst, 0, sizeof(*pinst));
    if (!auth) {
        return APR_EGENERAL;
    }
    rv = svc_vcs_call(c, "GET", apr_psprintf(c->p, "/app/installations/%" APR_INT64_T_FMT, id),
                      auth, NULL, 200, &doc, NULL);
    if (rv == APR_EACCES && c->status == 404) {
        return SVC_ENOTFOUND;
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    account = json_object_get(doc, "account");
    jid = json_object_get(doc, "id");
    japp = json_object_get(doc, "app_id");
    pinst->account_login = svc_json_str(account, "login");
    pinst->account_type = svc_json_str(account, "type");
    pinst->repository_selection = svc_json_str(doc, "repository_selection");
    if (!json_is_integer(jid) || json_integer_value(jid) != id || !json_is_integer(japp)
        || !svc_word_valid(pinst->account_login, 100) || !pinst->account_type
        || (strcmp(pinst->account_type, "User") && strcmp(pinst->account_type, "Organization")
            && strcmp(pinst->account_type, "Enterprise"))
        || !pinst->repository_selection
        || (strcmp(pinst->repository_selection, "all")
            && strcmp(pinst->repository_selection, "selected"))) {
        c->why = "GET /app/installations/{id}: the answer lacks the id, app_id, account or "
                 "repository_selection";
        return APR_EINVAL;
    }
    pinst->id = id;
    pinst->app_id = (apr_int64_t)json_integer_value(japp);
    pinst->suspended = json_object_get(doc, "suspended_at")
                       && !json_is_null(json_object_get(doc, "suspended_at"));
    return APR_SUCCESS;
}

apr_status_t svc_vcs_api_token(svc_vcs_call_t *c, const svc_vcs_app_t *app, apr_int64_t id,
                               const char *repo, const char *permissions,
                               const char **ptoken, apr_time_t *pexpires)
{
    const char *auth = jwt_auth(c, app);
    json_error_t jerr;
    json_t *body, *doc;
    const char *token, *exp;
    apr_int64_t epoch;
    apr_status_t rv;

    *ptoken = NULL;
    if (!auth) {
        return APR_EGENERAL;
    }
    body = svc_json_pool(c->p, json_object());
    json_object_set_new(body, "permissions", json_loads(permissions, 0, &jerr));
    if (repo) {
        json_object_set_new(body, "repositories", json_pack("[s]", repo));
    }
    rv = svc_vcs_call(c, "POST", apr_psprintf(c->p, "/app/installations/%" APR_INT64_T_FMT
                                              "/access_tokens", id),
                      auth, body, 201, &doc, NULL);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    token = svc_json_str(doc, "token");
    exp = svc_json_str(doc, "expires_at");
    if (!svc_word_valid(token, 255) || !exp || svc_parse_rfc3339(exp, &epoch) != APR_SUCCESS) {
        c->why = "POST /app/installations/{id}/access_tokens: the answer has no usable token "
                 "or expires_at";
        return APR_EINVAL;
    }
    *ptoken = apr_pstrdup(c->p, token);
    /* The answer held the token too; it goes with the pool, wiped first. */
    svc_wipe((void *)token, strlen(token));
    *pexpires = apr_time_from_sec(epoch);
    return APR_SUCCESS;
}

static apr_status_t repo_from_json(svc_vcs_call_t *c, const json_t *r, svc_vcs_repo_t *prepo)
{
    json_t *id = json_object_get(r, "id");
    const char *full_name = svc_json_str(r, "full_name");
    const char *branch = svc_json_str(r, "default_branch");

    if (!json_is_integer(id) || json_integer_value(id) <= 0 || !svc_vcs_full_name_valid(full_name)
        || !json_is_boolean(json_object_get(r, "private"))) {
        c->why = "a repository in the provider's answer lacks id, full_name or private";
        return APR_EINVAL;
    }
    prepo->id = (apr_int64_t)json_integer_value(id);
    prepo->full_name = apr_pstrdup(c->p, full_name);
    /* An empty repository may have none yet; "main" is what it will get. */
    prepo->default_branch = svc_word_valid(branch, 255) ? apr_pstrdup(c->p, branch) : "main";
    prepo->private_ = json_is_true(json_object_get(r, "private"));
    return APR_SUCCESS;
}

/* The URL of Link's rel="next", or NULL. */
static const char *link_next(apr_pool_t *p, const char *link)
{
    const char *s = link;

    while (s && *s) {
        const char *lt = strchr(s, '<'), *gt = lt ? strchr(lt, '>') : NULL;
        const char *end;
        if (!gt) {
            return NULL;
        }
        end = gt + strcspn(gt, ",");
        if (strstr(apr_pstrmemdup(p, gt, (apr_size_t)(end - gt)), "rel=\"next\"")) {
            return apr_pstrmemdup(p, lt + 1, (apr_size_t)(gt - lt - 1));
        }
        s = *end ? end + 1 : end;
    }
    return NULL;
}

apr_status_t svc_vcs_api_repositories(svc_vcs_call_t *c, const char *token,
                                      apr_int64_t installation_id, int max, json_t *out,
                                      int *ptruncated)
{
    const char *auth = apr_pstrcat(c->p, "Bearer ", token, NULL);
    const char *next = apr_psprintf(c->p, "/installation/repositories?per_page=%d",
                                    VCS_REPO_PAGE);
    int got = 0;

    *ptruncated = 0;
    while (next) {
        svc_http_resp_t *resp;
        json_t *doc, *repos, *r;
        size_t i;
        apr_status_t rv;

        if (got >= max) {
            *ptruncated = 1;
            break;
        }
        rv = svc_vcs_call(c, "GET", next, auth, NULL, 200, &doc, &resp);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        repos = json_object_get(doc, "repositories");
        if (!json_is_array(repos)) {
            c->why = "GET /installation/repositories: the answer has no repositories array";
            return APR_EINVAL;
        }
        json_array_foreach(repos, i, r) {
            svc_vcs_repo_t repo;
            if ((rv = repo_from_json(c, r, &repo)) != APR_SUCCESS) {
                return rv;
            }
            json_array_append_new(out, json_pack("{s:s,s:b,s:s,s:I}", "full_name",
                                                 repo.full_name, "private", repo.private_,
                                                 "default_branch", repo.default_branch,
                                                 "installation_id",
                                                 (json_int_t)installation_id));
            got++;
        }
        next = link_next(c->p, apr_table_get(resp->headers, "Link"));
        if (next && json_array_size(repos) == 0) {
            break;      /* a provider that pages forever */
        }
    }
    return APR_SUCCESS;
}

/* The token of an exchange's answer (see svc_vcs_parse_token); the answer's
 * own copy is wiped. */
static apr_status_t token_of(apr_pool_t *p, json_t *doc, const char **ptoken, const char **perr)
{
    const char *token, *type;

    *ptoken = NULL;
    if (!json_is_object(doc)) {
        *perr = "the token answer is not a JSON object";
        return APR_EINVAL;
    }
    /* GitHub reports a refused exchange with 200 and an "error" member. */
    if (json_object_get(doc, "error")) {
        const char *code = svc_json_str(doc, "error");
        *perr = code ? svc_printable(p, code, 64) : "(error is not a string)";
        return APR_EACCES;
    }
    token = svc_json_str(doc, "access_token");
    if (!token || !svc_word_valid(token, 1024)) {
        *perr = "the token answer has no usable access_token";
        return APR_EINVAL;
    }
    type = svc_json_str(doc, "token_type");
    if (json_object_get(doc, "token_type") && (!type || strcasecmp(type, "bearer") != 0)) {
        *perr = "the token answer's token_type is not bearer";
        return APR_EINVAL;
    }
    *ptoken = apr_pstrdup(p, token);
    svc_wipe((void *)token, strlen(token));
    return APR_SUCCESS;
}

apr_status_t svc_vcs_parse_token(apr_pool_t *p, const char *body, apr_size_t len,
                                 const char **ptoken, const char **perr)
{
    json_error_t jerr;

    return token_of(p, svc_json_pool(p, json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr)),
                    ptoken, perr);
}

apr_status_t svc_vcs_oauth_token(svc_vcs_call_t *c, const char *client_id,
                                 const char *client_secret, const char *code,
                                 const char *redirect_uri, const char *verifier,
                                 const char **ptoken)
{
    const char *secrets[4] = { client_secret, code, verifier, NULL };
    const char *what = "POST /login/oauth/access_token", *err = NULL;
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;
    json_t *doc = NULL;
    char *form;
    apr_status_t rv;

    *ptoken = NULL;
    form = apr_pstrcat(c->p, "client_id=", svc_url_encode(c->p, client_id),
                       "&client_secret=", svc_url_encode(c->p, client_secret),
                       "&code=", svc_url_encode(c->p, code),
                       redirect_uri ? "&redirect_uri=" : "",
                       redirect_uri ? svc_url_encode(c->p, redirect_uri) : "",
                       verifier ? "&code_verifier=" : "",
                       verifier ? svc_url_encode(c->p, verifier) : "", NULL);
    memset(&req, 0, sizeof(req));
    req.method = "POST";
    req.url = apr_pstrcat(c->p, c->conf->vcs_web_url, "/login/oauth/access_token", NULL);
    req.headers = apr_table_make(c->p, 3);
    /* Without it GitHub answers form-encoded. */
    apr_table_setn(req.headers, "Accept", "application/json");
    apr_table_setn(req.headers, "Content-Type", "application/x-www-form-urlencoded");
    req.body = form;
    req.body_len = strlen(form);
    req.secrets = secrets;
    rv = vcs_send(c, &req, what, 200, &doc, &resp);
    svc_wipe(form, strlen(form));
    if (rv == APR_SUCCESS) {
        rv = token_of(c->p, doc, ptoken, &err);
    }
    if (resp && resp->body) {
        /* The answer held the user's token: it goes with the pool, wiped first. */
        svc_wipe(resp->body, resp->body_len);
    }
    if (rv == APR_EACCES && err) {
        c->message = err;
        c->why = apr_pstrcat(c->p, what, ": the provider refused the code: ", err, NULL);
    }
    else if (rv == APR_EINVAL && err) {
        c->why = apr_pstrcat(c->p, what, ": ", err, NULL);
    }
    return rv;
}

apr_status_t svc_vcs_api_user_installation(svc_vcs_call_t *c, const char *user_token,
                                           apr_int64_t id)
{
    char *auth = apr_pstrcat(c->p, "Bearer ", user_token, NULL);
    const char *next = apr_psprintf(c->p, "/user/installations?per_page=%d", VCS_REPO_PAGE);
    apr_status_t rv = SVC_ENOTFOUND;
    int pages = 0;

    while (next && rv == SVC_ENOTFOUND) {
        svc_http_resp_t *resp;
        json_t *doc, *list, *inst;
        apr_status_t crv;
        size_t i;

        if (++pages > VCS_USER_INSTALLATION_PAGES) {
            break;      /* more than anyone has: not found among them */
        }
        crv = svc_vcs_call(c, "GET", next, auth, NULL, 200, &doc, &resp);
        if (crv != APR_SUCCESS) {
            rv = crv;
            break;
        }
        list = json_object_get(doc, "installations");
        if (!json_is_array(list)) {
            c->why = "GET /user/installations: the answer has no installations array";
            rv = APR_EINVAL;
            break;
        }
        json_array_foreach(list, i, inst) {
            json_t *jid = json_object_get(inst, "id");
            if (json_is_integer(jid) && json_integer_value(jid) == id) {
                rv = APR_SUCCESS;
            }
        }
        next = link_next(c->p, apr_table_get(resp->headers, "Link"));
        if (next && json_array_size(list) == 0) {
            break;      /* a provider that pages forever */
        }
    }
    svc_wipe(auth, strlen(auth));
    return rv;
}

apr_status_t svc_vcs_api_repo(svc_vcs_call_t *c, const char *token, const char *full_name,
                              svc_vcs_repo_t *prepo)
{
    json_t *doc;
    apr_status_t rv;

    rv = svc_vcs_call(c, "GET", apr_pstrcat(c->p, "/repos/", full_name, NULL),
                      apr_pstrcat(c->p, "Bearer ", token, NULL), NULL, 200, &doc, NULL);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return repo_from_json(c, doc, prepo);
}

apr_status_t svc_vcs_api_create_repo(svc_vcs_call_t *c, const char *token,
                                     const char *account_type, const char *login,
                                     const char *name, int private_, const char *description,
                                     svc_vcs_repo_t *prepo)
{
    json_t *body = svc_json_pool(c->p, json_pack("{s:s,s:b,s:b}", "name", name, "private",
                                                 private_, "auto_init", 1));
    const char *path = strcmp(account_type, "User") == 0
                       ? "/user/repos"
                       : apr_pstrcat(c->p, "/orgs/", login, "/repos", NULL);
    json_t *doc;
    apr_status_t rv;

    if (description) {
        json_object_set_new(body, "description", json_string(description));
    }
    rv = svc_vcs_call(c, "POST", path, apr_pstrcat(c->p, "Bearer ", token, NULL), body, 201,
                      &doc, NULL);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return repo_from_json(c, doc, prepo);
}

apr_status_t svc_vcs_api_manifest(svc_vcs_call_t *c, const char *code, json_t **papp)
{
    apr_status_t rv;

    *papp = NULL;
    rv = svc_vcs_call(c, "POST", apr_pstrcat(c->p, "/app-manifests/", code, "/conversions",
                                             NULL),
                      NULL, NULL, 201, papp, NULL);
    if (rv == APR_SUCCESS && !json_is_object(*papp)) {
        c->why = "POST /app-manifests/{code}/conversions did not answer an object";
        rv = APR_EINVAL;
    }
    return rv;
}

apr_status_t svc_vcs_check(apr_pool_t *p, const svc_config_t *conf, const char **preport)
{
    const svc_vcs_app_t *app = svc_vcs_app(conf);
    const char *auth, *slug;
    svc_vcs_call_t c;
    json_t *doc, *id;
    apr_status_t rv;

    if (!app) {
        *preport = apr_pstrcat(p, "the App is not configured: ", conf->vcs_app_off, NULL);
        return APR_ENOTIMPL;
    }
    svc_vcs_call_init(&c, p, conf);
    if (!(auth = jwt_auth(&c, app))) {
        *preport = c.why;
        return APR_EGENERAL;
    }
    rv = svc_vcs_call(&c, "GET", "/app", auth, NULL, 200, &doc, NULL);
    if (rv != APR_SUCCESS) {
        *preport = apr_pstrcat(p, "the provider did not accept the App JWT: ", c.why, NULL);
        return rv;
    }
    id = json_object_get(doc, "id");
    slug = svc_json_str(doc, "slug");
    if (!json_is_integer(id) || json_integer_value(id) != app->id) {
        *preport = "GET /app answered for another App than VCS_APP_ID";
        return APR_EINVAL;
    }
    *preport = apr_psprintf(p, "the provider accepts App JWTs signed with this key: App %"
                            APR_INT64_T_FMT " (%s) at %s", app->id,
                            slug ? svc_printable(p, slug, 100) : "?", conf->vcs_api_url);
    return APR_SUCCESS;
}
