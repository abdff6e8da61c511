/*
 * svc_vcs_repos.c: the repositories an org reaches through its
 * installations, creating one, and a project's linked repository.
 *
 * Every check that a repository is reachable is the provider's: a link is
 * made only after the provider minted a token for that one repository and
 * described it with that token, so a repository outside the
 * installation's selection can never be linked. No pooled connection is
 * held while the provider answers.
 */
#include "svc_vcs_repos.h"
#include "svc_vcs_client.h"
#include "svc_vcs_tokens.h"

#include <string.h>

/* Repositories listed at most per installation. */
#define VCS_LIST_MAX 1000

/* A project's link as the API shows it, from the rows `r` and `i`. */
#define LINK_JSON                                                                   \
    "json_build_object('project_id', r.project_id, 'installation_id', r.installation_id,"\
    " 'full_name', r.full_name, 'repo_id', r.repo_id, 'private', r.private,"        \
    " 'default_branch', r.default_branch, 'installation_status', i.status,"         \
    " 'linked_at', svc_ts(r.linked_at))::text"

/* A repository an installation reaches (svc_vcs_api_repositories). */
static const svc_col_t repository_keys[] = {
    { .key = "full_name", .type = SVC_COL_TEXT, .example = "acme/site" },
    { .key = "private", .type = SVC_COL_BOOL },
    { .key = "default_branch", .type = SVC_COL_TEXT, .example = "main" },
    { .key = "installation_id", .type = SVC_COL_INT },
    SVC_COL_END
};

const svc_schema_t svc_schema_repository = { .name = "VcsRepository", .keys = repository_keys,
    .description = "A repository at the code-hosting provider that an installation reaches." };

const svc_col_t svc_vcs_repos_page_keys[] = {
    { .key = "truncated", .type = SVC_COL_BOOL,
      .description = "An installation reaches more than the 1000 listed." },
    SVC_COL_END
};

/* A project's link as LINK_JSON builds it. */
static const svc_col_t link_keys[] = {
    { .key = "project_id", .type = SVC_COL_TEXT, .id = "prj" },
    { .key = "installation_id", .type = SVC_COL_INT },
    { .key = "full_name", .type = SVC_COL_TEXT, .example = "acme/site" },
    { .key = "repo_id", .type = SVC_COL_INT },
    { .key = "private", .type = SVC_COL_BOOL },
    { .key = "default_branch", .type = SVC_COL_TEXT, .example = "main" },
    { .key = "installation_status", .type = SVC_COL_TEXT,
      .values = SVC_VALUES("active", "suspended", "unlinked") },
    { .key = "linked_at", .type = SVC_COL_TIME },
    SVC_COL_END
};

static const svc_schema_t link_schema = { .name = "VcsLink", .keys = link_keys,
    .description = "A project's linked repository." };

const svc_schema_t svc_schema_project_repository = { .name = "ProjectRepository",
    .description = "The project's linked repository, if it has one.",
    .keys = (const svc_col_t[]) {
        { .key = "repository", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL,
          .ref = &link_schema, .description = "null: the project has none." },
        SVC_COL_END
    }
};

static const svc_col_t created_repo_keys[] = {
    { .key = "full_name", .type = SVC_COL_TEXT, .example = "acme/site" },
    { .key = "repo_id", .type = SVC_COL_INT },
    { .key = "private", .type = SVC_COL_BOOL },
    { .key = "default_branch", .type = SVC_COL_TEXT, .example = "main" },
    { .key = "installation_id", .type = SVC_COL_INT },
    SVC_COL_END
};

const svc_schema_t svc_schema_repository_created = { .name = "VcsRepositoryCreated",
    .description = "A repository made at the provider, and the project's link to it.",
    .keys = (const svc_col_t[]) {
        { .key = "repository", .type = SVC_COL_OBJECT, .sub = created_repo_keys },
        { .key = "link", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .ref = &link_schema,
          .description = "null when no project was named." },
        SVC_COL_END
    }
};

static const svc_stmt_t st_repo_installations = {
    "svc_vcs_repo_installations",
    "SELECT installation_id FROM vcs_installations WHERE org_id = $1 AND status = 'active'"
    " ORDER BY seq",
    1, SVC_STMT_READ
};

static const svc_stmt_t st_repo_installation = {
    "svc_vcs_repo_installation",
    "SELECT status, account_login, account_type FROM vcs_installations"
    " WHERE installation_id = $1::bigint AND org_id = $2",
    2, SVC_STMT_READ
};

/* Inside the link's transaction: the installation stays active until commit. */
static const svc_stmt_t st_repo_hold = {
    "svc_vcs_repo_hold",
    "SELECT 1 FROM vcs_installations WHERE installation_id = $1::bigint AND org_id = $2"
    " AND status = 'active' FOR SHARE",
    2, 0
};

static const svc_stmt_t st_link_get = {
    "svc_vcs_link_get",
    "SELECT " LINK_JSON " FROM vcs_project_repos r"
    " JOIN vcs_installations i ON i.installation_id = r.installation_id"
    " WHERE r.project_id = $1 AND r.org_id = $2",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_link_before = {
    "svc_vcs_link_before",
    "SELECT json_build_object('installation_id', installation_id, 'full_name', full_name)::text"
    " FROM vcs_project_repos WHERE project_id = $1 AND org_id = $2 FOR UPDATE",
    2, 0
};

static const svc_stmt_t st_link_upsert = {
    "svc_vcs_link_upsert",
    "INSERT INTO vcs_project_repos (project_id, org_id, installation_id, full_name, repo_id,"
    " private, default_branch, linked_by)"
    " VALUES ($1, $2, $3::bigint, $4, $5::bigint, $6::boolean, $7, $8)"
    " ON CONFLICT (project_id) DO UPDATE SET installation_id = EXCLUDED.installation_id,"
    " full_name = EXCLUDED.full_name, repo_id = EXCLUDED.repo_id,"
    " private = EXCLUDED.private, default_branch = EXCLUDED.default_branch,"
    " linked_by = EXCLUDED.linked_by, linked_at = now()",
    8, 0
};

static const svc_stmt_t st_link_of_project = {
    "svc_vcs_link_of_project",
    "SELECT full_name, installation_id FROM vcs_project_repos"
    " WHERE project_id = $1 AND org_id = $2",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_link_delete = {
    "svc_vcs_link_delete",
    "DELETE FROM vcs_project_repos WHERE project_id = $1 AND org_id = $2"
    " RETURNING installation_id, full_name",
    2, 0
};

const svc_field_t svc_body_vcs_link[] = {
    { .name = "installation_id", .type = SVC_FT_INT, .required = 1, .min = 1,
      .max = 9007199254740991LL,
      .description = "One of the org's active installations (GET "
        "/api/orgs/:orgSlug/vcs/installations)." },
    { .name = "full_name", .type = SVC_FT_STRING, .required = 1, .min = 3, .max = 201,
      .description = "The repository, owner/name, in that installation's account and selection." },
    SVC_FIELD_END
};

const svc_field_t svc_body_vcs_provision[] = {
    { .name = "name", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 100,
      .description = "The new repository's name: letters, digits, '.', '-' and '_'." },
    { .name = "installation_id", .type = SVC_FT_INT, .required = 1, .min = 1,
      .max = 9007199254740991LL,
      .description = "The active installation in whose account the repository is created." },
    { .name = "private", .type = SVC_FT_BOOL,
      .description = "A private repository (default true)." },
    { .name = "description", .type = SVC_FT_STRING, .max = 350,
      .description = "Its description at the provider." },
    { .name = "project", .type = SVC_FT_SLUG,
      .description = "A project of the org to link the new repository to." },
    SVC_FIELD_END
};

apr_status_t svc_h_vcs_repos_list(svc_ctx_t *ctx)
{
    const svc_vcs_app_t *app = svc_vcs_app(ctx->conf);
    json_t *out = json_array();
    apr_int64_t *ids;
    svc_vcs_call_t c;
    svc_dbres_t *res;
    svc_db_t *db;
    int i, n, truncated = 0;
    apr_status_t rv;

    svc_json_pool(ctx->pool, out);
    if (!app) {
        return svc_vcs_off(ctx);
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_repo_installations, ctx->pool, &res, ctx->org->id))
           != APR_SUCCESS) {
        return rv;
    }
    n = svc_dbres_rows(res);
    ids = apr_pcalloc(ctx->pool, sizeof(*ids) * (apr_size_t)(n + 1));
    for (i = 0; i < n; i++) {
        if ((rv = svc_dbres_int64(res, i, 0, &ids[i])) != APR_SUCCESS) {
            return rv;
        }
    }
    if ((rv = svc_ctx_db_release(ctx)) != APR_SUCCESS) {
        return rv;
    }
    svc_vcs_call_init(&c, ctx->pool, ctx->conf);
    for (i = 0; i < n; i++) {
        const char *token;
        apr_time_t expires;
        int more = 0;

        rv = svc_vcs_token(&c, app, ids[i], NULL, SVC_VCS_TOKEN_LIST, &token, &expires);
        if (rv == APR_EACCES && (c.status == 403 || c.status == 404)) {
            /* Suspended or uninstalled before the provider's event came. */
            continue;
        }
        if (rv == APR_SUCCESS) {
            rv = svc_vcs_api_repositories(&c, token, ids[i], VCS_LIST_MAX, out, &more);
            svc_wipe((void *)token, strlen(token));
        }
        if (rv != APR_SUCCESS) {
            return svc_vcs_call_fail(ctx, &c, rv, "listing repositories");
        }
        truncated |= more;
    }
    return svc_reply_json(ctx, 200, json_pack("{s:O,s:n,s:b}", "data", out, "next_cursor",
                                              "truncated", truncated));
}

/*
 * The installation named in a body: active and the org's, with its account.
 * 400 when the org has no such installation, 409 installation_suspended when
 * it cannot be used now.
 */
static apr_status_t body_installation(svc_ctx_t *ctx, svc_db_t *db, const char **pid,
                                      const char **plogin, const char **ptype)
{
    const char *id = apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT,
                                  (apr_int64_t)svc_json_int(ctx->body, "installation_id", 0));
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_db_execv(db, &st_repo_installation, ctx->pool, &res, id, ctx->org->id))
        != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        svc_fail_field(ctx, "installation_id", "not_found",
                       "%s has no installation %s (GET /api/orgs/%s/vcs/installations).",
                       ctx->org->slug, id, ctx->org->slug);
        return SVC_EPROBLEM;
    }
    if (strcmp(svc_dbres_str(res, 0, 0), "active") != 0) {
        return svc_fail(ctx, 409, "installation_suspended",
                        "Installation %s is %s: it cannot reach repositories now.", id,
                        svc_dbres_str(res, 0, 0));
    }
    *pid = id;
    *plogin = svc_dbres_str(res, 0, 1);
    *ptype = svc_dbres_str(res, 0, 2);
    return APR_SUCCESS;
}

static apr_status_t not_reachable(svc_ctx_t *ctx, const char *full_name, const char *id)
{
    return svc_fail(ctx, 409, "repository_not_reachable",
                    "Installation %s cannot reach %s: it is not in the installation's "
                    "repository selection, or it does not exist. Add it to the selection at "
                    "the code-hosting provider, then try again.", id, full_name);
}

/* Inside a transaction: links the repository to the project, audited. */
static apr_status_t link_write(svc_ctx_t *ctx, svc_db_t *db, const svc_projref_t *proj,
                               const char *installation_id, const svc_vcs_repo_t *repo)
{
    json_t *before = NULL;
    json_error_t jerr;
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_db_execv(db, &st_repo_hold, ctx->pool, &res, installation_id, ctx->org->id))
        != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_fail(ctx, 409, "installation_suspended",
                        "Installation %s was suspended or unlinked meanwhile.",
                        installation_id);
    }
    if ((rv = svc_db_execv(db, &st_link_before, ctx->pool, &res, proj->id, ctx->org->id))
        != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 1) {
        before = json_loads(svc_dbres_str(res, 0, 0), 0, &jerr);
    }
    rv = svc_db_execv(db, &st_link_upsert, ctx->pool, NULL, proj->id, ctx->org->id,
                      installation_id, repo->full_name,
                      apr_psprintf(ctx->pool, "%" APR_INT64_T_FMT, repo->id),
                      repo->private_ ? "true" : "false", repo->default_branch,
                      ctx->who->user_id);
    if (rv != APR_SUCCESS) {
        json_decref(before);
        return rv;
    }
    return svc_audit_ctx(ctx, db, "project.repository.linked",
                         "project", proj->id,
                         svc_json_pool(ctx->pool,
                                       json_pack("{s:s,s:I,s:s,s:I,s:o?}", "project",
                                                 proj->slug, "installation_id",
                                                 (json_int_t)apr_atoi64(installation_id),
                                                 "full_name",
                                                 repo->full_name, "repo_id",
                                                 (json_int_t)repo->id, "before", before)));
}

/* The project's link as JSON text, or NULL when it has none. */
static apr_status_t link_json(svc_ctx_t *ctx, svc_db_t *db, const char *project_id,
                              const char **pjson)
{
    svc_dbres_t *res;
    apr_status_t rv = svc_db_execv(db, &st_link_get, ctx->pool, &res, project_id, ctx->org->id);

    *pjson = rv == APR_SUCCESS && svc_dbres_rows(res) == 1 ? svc_dbres_str(res, 0, 0) : NULL;
    return rv;
}


/* A repository the provider showed, to link to a project. */
typedef struct {
    const char *installation;       /* its installation's id */
    const svc_vcs_repo_t *repo;
    svc_projref_t *project;         /* to link it to, or NULL */
} link_t;

/* The answer about a project's link: `repo_json` (NULL: none, the answer of
 * a link) and the link of proj (NULL: none), read in the caller's write. */
static apr_status_t reply_linked(svc_ctx_t *ctx, svc_db_t *db, int status,
                                 const char *repo_json, const svc_projref_t *proj)
{
    const char *json = NULL;
    apr_status_t rv;

    if (proj && (rv = link_json(ctx, db, proj->id, &json)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_text(ctx, status,
                          apr_pstrcat(ctx->pool, "{",
                                      repo_json ? "\"repository\":" : "",
                                      repo_json ? repo_json : "",
                                      repo_json ? ",\"link\":" : "\"repository\":",
                                      json ? json : "null", "}", NULL));
}

apr_status_t svc_h_vcs_link_get(svc_ctx_t *ctx)
{
    svc_db_t *db;
    apr_status_t rv;

    if (!svc_vcs_app(ctx->conf)) {
        return svc_vcs_off(ctx);
    }
    rv = svc_ctx_db(ctx, &db);
    return rv == APR_SUCCESS ? reply_linked(ctx, db, 200, NULL, ctx->project) : rv;
}

static apr_status_t link_repository(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const link_t *l = baton;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_VIEWER, SVC_PROLE_MAINTAINER)) != APR_SUCCESS
        || (rv = link_write(ctx, db, l->project, l->installation, l->repo)) != APR_SUCCESS) {
        return rv;
    }
    return reply_linked(ctx, db, 200, NULL, l->project);
}

apr_status_t svc_h_vcs_link_put(svc_ctx_t *ctx)
{
    const svc_vcs_app_t *app = svc_vcs_app(ctx->conf);
    const char *full_name = svc_json_str(ctx->body, "full_name");
    const char *id, *login, *type, *token, *slash;
    svc_vcs_repo_t repo;
    svc_vcs_call_t c;
    link_t l;
    apr_time_t expires;
    svc_db_t *db;
    apr_status_t rv;

    if (!app) {
        return svc_vcs_off(ctx);
    }
    if (!svc_vcs_full_name_valid(full_name)) {
        svc_fail_field(ctx, "full_name", "invalid_value",
                       "full_name must be owner/name, as the provider spells it.");
        return SVC_EPROBLEM;
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = body_installation(ctx, db, &id, &login, &type)) != APR_SUCCESS) {
        return rv;
    }
    slash = strchr(full_name, '/');
    if (strlen(login) != (apr_size_t)(slash - full_name)
        || strncasecmp(login, full_name, strlen(login)) != 0) {
        return not_reachable(ctx, full_name, id);
    }
    if ((rv = svc_ctx_db_release(ctx)) != APR_SUCCESS) {
        return rv;
    }
    /* The provider decides what the installation reaches: a token for this
     * one repository, then the repository as that token sees it. */
    svc_vcs_call_init(&c, ctx->pool, ctx->conf);
    rv = svc_vcs_token(&c, app, (apr_int64_t)svc_json_int(ctx->body, "installation_id", 0),
                       slash + 1, SVC_VCS_TOKEN_CLONE, &token, &expires);
    if (rv == APR_SUCCESS) {
        rv = svc_vcs_api_repo(&c, token, full_name, &repo);
        svc_wipe((void *)token, strlen(token));
    }
    if (rv == APR_EACCES && (c.status == 404 || c.status == 422 || c.status == 403)) {
        return not_reachable(ctx, full_name, id);
    }
    if (rv != APR_SUCCESS) {
        return svc_vcs_call_fail(ctx, &c, rv, "linking a repository");
    }

    l.installation = id;
    l.repo = &repo;
    l.project = ctx->project;
    return svc_write(ctx, link_repository, &l);
}

static apr_status_t unlink_repository(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_VIEWER, SVC_PROLE_MAINTAINER))
        != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_link_delete, ctx->pool, &res, ctx->project->id,
                              ctx->org->id)) != APR_SUCCESS) {
        return rv;
    }
    /* Removing a link that is not there changes nothing, and is no error. */
    if (svc_dbres_rows(res) == 1) {
        rv = svc_audit_ctx(ctx, db, "project.repository.unlinked",
                           "project", ctx->project->id,
                           svc_json_pool(ctx->pool,
                                         json_pack("{s:s,s:I,s:s}", "project",
                                                   ctx->project->slug, "installation_id",
                                                   (json_int_t)apr_atoi64(
                                                       svc_dbres_str(res, 0, 0)),
                                                   "full_name", svc_dbres_str(res, 0, 1))));
    }
    return rv == APR_SUCCESS ? svc_reply_empty(ctx) : rv;
}

apr_status_t svc_h_vcs_link_delete(svc_ctx_t *ctx)
{
    if (!svc_vcs_app(ctx->conf)) {
        return svc_vcs_off(ctx);
    }
    return svc_write(ctx, unlink_repository, NULL);
}

static apr_status_t permission_missing(svc_ctx_t *ctx, const svc_vcs_app_t *app,
                                       const char *login)
{
    return svc_fail(ctx, 409, "vcs_permission_missing",
                    "The App may not create repositories: it needs the repository permission "
                    "Administration: Read and write. Grant it in the App's settings "
                    "(%s/settings/apps/%s/permissions, or under the owning organization's "
                    "settings), then an owner of %s accepts the new permissions on the "
                    "installation; then try again.", ctx->conf->vcs_web_url, app->slug, login);
}

/* Records a repository the App created (and links it, when the request
 * named a project). */
static apr_status_t record_created(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const link_t *l = baton;
    const svc_vcs_repo_t *repo = l->repo;
    json_int_t installation = (json_int_t)svc_json_int(ctx->body, "installation_id", 0);
    svc_actor_t actor;
    apr_status_t rv;

    ctx->project = l->project;
    svc_actor_from_ctx(ctx, &actor);
    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_ADMIN,
                                 l->project ? SVC_PROLE_MAINTAINER : SVC_PROLE_NONE))
            != APR_SUCCESS
        || (rv = svc_audit_write(db, ctx->pool, &actor, ctx->org->id, "vcs.repository.created",
                                 "vcs_repository", repo->full_name,
                                 svc_json_pool(ctx->pool,
                                               json_pack("{s:I,s:I,s:b}", "installation_id",
                                                         installation, "repo_id",
                                                         (json_int_t)repo->id, "private",
                                                         repo->private_))))
           != APR_SUCCESS
        || (l->project && (rv = link_write(ctx, db, l->project, l->installation, repo))
                          != APR_SUCCESS)) {
        return rv;
    }
    return reply_linked(ctx, db, 201,
                        svc_json_dump(ctx->pool,
                                      svc_json_pool(ctx->pool,
                                                    json_pack("{s:s,s:I,s:b,s:s,s:I}",
                                                              "full_name", repo->full_name,
                                                              "repo_id", (json_int_t)repo->id,
                                                              "private", repo->private_,
                                                              "default_branch",
                                                              repo->default_branch,
                                                              "installation_id",
                                                              installation))),
                        l->project);
}

apr_status_t svc_h_vcs_repos_create(svc_ctx_t *ctx)
{
    const svc_vcs_app_t *app = svc_vcs_app(ctx->conf);
    const char *name = svc_json_str(ctx->body, "name");
    const char *slug = svc_json_str(ctx->body, "project");
    const json_t *priv = json_object_get(ctx->body, "private");
    const char *id, *login, *type, *token;
    svc_projref_t *proj = NULL;
    svc_vcs_repo_t repo;
    svc_vcs_call_t c;
    apr_time_t expires;
    link_t l;
    svc_db_t *db;
    apr_status_t rv;

    if (!app) {
        return svc_vcs_off(ctx);
    }
    if (strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
        != strlen(name) || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        svc_fail_field(ctx, "name", "invalid_value",
                       "name may hold letters, digits, '.', '-' and '_' only.");
        return SVC_EPROBLEM;
    }
    if ((rv = svc_ctx_db(ctx, &db)) != APR_SUCCESS
        || (rv = body_installation(ctx, db, &id, &login, &type)) != APR_SUCCESS) {
        return rv;
    }
    if (slug) {
        rv = svc_project_resolve(db, ctx->pool, ctx->org, slug, ctx->who->user_id, &proj);
        if (rv == SVC_ENOTFOUND) {
            svc_fail_field(ctx, "project", "not_found", "%s has no project %s.",
                           ctx->org->slug, slug);
            return SVC_EPROBLEM;
        }
        if (rv != APR_SUCCESS) {
            return rv;
        }
    }
    if ((rv = svc_ctx_db_release(ctx)) != APR_SUCCESS) {
        return rv;
    }
    svc_vcs_call_init(&c, ctx->pool, ctx->conf);
    rv = svc_vcs_token(&c, app, (apr_int64_t)svc_json_int(ctx->body, "installation_id", 0),
                       NULL, SVC_VCS_TOKEN_ADMIN, &token, &expires);
    if (rv == APR_EACCES && (c.status == 422 || c.status == 403)) {
        /* "The permissions requested are not granted to this installation." */
        return permission_missing(ctx, app, login);
    }
    if (rv == APR_SUCCESS) {
        rv = svc_vcs_api_create_repo(&c, token, type, login, name, !priv || json_is_true(priv),
                                     svc_json_str(ctx->body, "description"), &repo);
        svc_wipe((void *)token, strlen(token));
        if (rv == APR_EACCES && c.status == 403) {
            /* "Resource not accessible by integration" */
            return permission_missing(ctx, app, login);
        }
        if (rv == APR_EACCES && c.status == 422) {
            return svc_fail(ctx, 409, "repository_exists",
                            "%s/%s cannot be created: %s", login, name,
                            *c.message ? c.message : "the provider refused the name.");
        }
    }
    if (rv != APR_SUCCESS) {
        return svc_vcs_call_fail(ctx, &c, rv, "creating a repository");
    }

    l.installation = id;
    l.repo = &repo;
    l.project = proj;
    return svc_write(ctx, record_created, &l);
}

apr_status_t svc_vcs_project_repository(svc_db_t *db, apr_pool_t *p, const char *org_id,
                                        const char *project_id, const char **pfull_name,
                                        apr_int64_t *pinstallation_id)
{
    svc_dbres_t *res;
    apr_status_t rv = svc_db_execv(db, &st_link_of_project, p, &res, project_id, org_id);

    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_ENOTFOUND;
    }
    *pfull_name = apr_pstrdup(p, svc_dbres_str(res, 0, 0));
    return svc_dbres_int64(res, 0, 1, pinstallation_id) == APR_SUCCESS ? APR_SUCCESS : SVC_EDB;
}
