/*
 * svc_access.c: the access check every tenant route shares: who is a
 * member of which org with which role, the effective role in a project,
 * and the re-check under the org lock before a change of access.
 */
#include "svc_access.h"
#include "svc_db.h"

#include <string.h>

static const svc_stmt_t st_org_membership = {
    "svc_orgs_membership",
    "SELECT o.id, o.slug, o.name, m.role, o.suspended_at IS NOT NULL FROM orgs o"
    " JOIN org_members m ON m.org_id = o.id AND m.user_id = $2"
    " WHERE o.slug = $1",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_org_by_slug = {
    "svc_orgs_by_slug",
    "SELECT id, slug, name FROM orgs WHERE slug = $1",
    1, SVC_STMT_READ
};

/*
 * FOR NO KEY UPDATE: conflicts with itself (and with UPDATE of the row), so
 * membership changes of one org queue up, but not with the key-share locks
 * that foreign keys take, so creating projects is never held up by it.
 */
/*
 * Two statements, not one: after waiting for a row lock, PostgreSQL
 * re-reads the locked row but not the rows joined to it, so a role read in
 * the locking statement could be the one from before the wait. Read in a
 * statement of its own, it is the one committed by whoever held the lock.
 */
static const svc_stmt_t st_org_lock = {
    "svc_orgs_lock",
    "SELECT 1 FROM orgs WHERE id = $1 FOR NO KEY UPDATE",
    1, 0
};

static const svc_stmt_t st_org_role_now = {
    "svc_orgs_role_now",
    "SELECT role FROM org_members WHERE org_id = $1 AND user_id = $2",
    2, 0
};

/* Share-locks the row the member's foreign keys point at (see svc_orgs.h). */
static const svc_stmt_t st_member_hold = {
    "svc_orgs_member_hold",
    "SELECT 1 FROM org_members WHERE org_id = $1 AND user_id = $2 FOR KEY SHARE",
    2, 0
};

static const svc_stmt_t st_prj_resolve = {
    "svc_projects_resolve",
    "SELECT p.id, p.slug, p.name, p.archived, " SVC_EFFECTIVE_PROLE("$4", "$3")
    " FROM projects p WHERE p.org_id = $1 AND p.slug = $2",
    4, SVC_STMT_READ
};

/* The caller's effective role, read under the org lock (svc_access_recheck). */
static const svc_stmt_t st_prj_role_now = {
    "svc_projects_role_now",
    "SELECT " SVC_EFFECTIVE_PROLE("$3", "$2") " FROM projects p WHERE p.id = $1",
    3, 0
};

apr_status_t svc_member_hold(svc_db_t *db, apr_pool_t *p, const char *org_id,
                             const char *user_id)
{
    svc_dbres_t *res;
    apr_status_t rv = svc_db_execv(db, &st_member_hold, p, &res, org_id, user_id);

    if (rv == APR_SUCCESS && svc_dbres_rows(res) != 1) {
        rv = SVC_ENOTFOUND;
    }
    return rv;
}

/* The org a row of st_org_membership or st_org_by_slug names: id, slug,
 * name, and the caller's role and the org's suspension when the row has
 * them (else none). */
static apr_status_t orgref_of(apr_pool_t *p, const svc_dbres_t *res, svc_orgref_t **porg)
{
    svc_orgref_t *org;

    if (svc_dbres_rows(res) != 1) {
        return SVC_ENOTFOUND;
    }
    org = apr_pcalloc(p, sizeof(*org));
    org->id = svc_dbres_str(res, 0, 0);
    org->slug = svc_dbres_str(res, 0, 1);
    org->name = svc_dbres_str(res, 0, 2);
    org->role = svc_dbres_cols(res) > 3 ? svc_role_parse(svc_dbres_str(res, 0, 3))
                                        : SVC_ROLE_NONE;
    org->suspended = svc_dbres_cols(res) > 4 && svc_dbres_bool(res, 0, 4) == 1;
    *porg = org;
    return APR_SUCCESS;
}

apr_status_t svc_org_membership(svc_db_t *db, apr_pool_t *p, const char *slug,
                                const char *user_id, svc_orgref_t **porg)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_org_membership, p, &res, slug, user_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return orgref_of(p, res, porg);
}

apr_status_t svc_org_by_slug(svc_db_t *db, apr_pool_t *p, const char *slug,
                             svc_orgref_t **porg)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_org_by_slug, p, &res, slug);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    return orgref_of(p, res, porg);
}

apr_status_t svc_org_lock(svc_db_t *db, apr_pool_t *p, const char *org_id,
                          const char *user_id, svc_role_e *prole)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_org_lock, p, &res, org_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_ENOTFOUND;
    }
    *prole = SVC_ROLE_NONE;
    if (!user_id) {
        return APR_SUCCESS;
    }
    rv = svc_db_execv(db, &st_org_role_now, p, &res, org_id, user_id);
    if (rv == APR_SUCCESS && svc_dbres_rows(res) == 1) {
        *prole = svc_role_parse(svc_dbres_str(res, 0, 0));
    }
    return rv;
}

apr_status_t svc_access_recheck(svc_ctx_t *ctx, svc_db_t *db, svc_role_e least,
                                svc_prole_e pleast)
{
    svc_role_e role = SVC_ROLE_NONE;
    svc_prole_e prole;
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_org_lock(db, ctx->pool, ctx->org->id, ctx->who->user_id, &role);
    if (rv == SVC_ENOTFOUND || (rv == APR_SUCCESS && role == SVC_ROLE_NONE)) {
        return svc_fail(ctx, 404, "not_found", "No organization %s.", ctx->org->slug);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (role < least) {
        return svc_fail(ctx, 403, "forbidden", "Your role in %s is now %s; this needs %s or above.",
                        ctx->org->slug, svc_role_name(role), svc_role_name(least));
    }
    if (pleast == SVC_PROLE_NONE || !ctx->project) {
        return APR_SUCCESS;
    }
    rv = svc_db_execv(db, &st_prj_role_now, ctx->pool, &res, ctx->project->id,
                      ctx->who->user_id, svc_role_name(role));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    prole = svc_prole_parse(svc_dbres_str(res, 0, 0));
    if (prole < pleast) {
        return svc_fail(ctx, 403, "forbidden",
                        "Your role in project %s is now %s; this needs %s or above.",
                        ctx->project->slug, svc_prole_name(prole), svc_prole_name(pleast));
    }
    return APR_SUCCESS;
}

apr_status_t svc_project_resolve(svc_db_t *db, apr_pool_t *p, const svc_orgref_t *org,
                                 const char *slug, const char *user_id,
                                 svc_projref_t **pproj)
{
    svc_projref_t *proj;
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_prj_resolve, p, &res, org->id, slug, user_id,
                      svc_role_name(org->role));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_ENOTFOUND;
    }
    proj = apr_pcalloc(p, sizeof(*proj));
    proj->id = svc_dbres_str(res, 0, 0);
    proj->slug = svc_dbres_str(res, 0, 1);
    proj->name = svc_dbres_str(res, 0, 2);
    proj->archived = svc_dbres_bool(res, 0, 3) == 1;
    proj->prole = svc_prole_parse(svc_dbres_str(res, 0, 4));
    *pproj = proj;
    return APR_SUCCESS;
}
