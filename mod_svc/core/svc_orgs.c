/*
 * svc_orgs.c: organizations and memberships.
 */
#include "svc_orgs.h"
#include "svc_crypto.h"
#include "svc_json.h"

static const svc_stmt_t st_org_membership = {
    "svc_orgs_membership",
    "SELECT o.id, o.slug, o.name, m.role FROM orgs o"
    " JOIN org_members m ON m.org_id = o.id AND m.user_id = $2"
    " WHERE o.slug = $1",
    2, SVC_STMT_READ
};

static const svc_stmt_t st_org_insert = {
    "svc_orgs_insert",
    "INSERT INTO orgs (id, slug, name) VALUES ($1, $2, $3)",
    3, 0
};

static const svc_stmt_t st_member_insert = {
    "svc_orgs_member_insert",
    "INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, $3)",
    3, 0
};

apr_status_t svc_org_membership(svc_db_t *db, apr_pool_t *p, const char *slug,
                                const char *user_id, svc_orgref_t **porg)
{
    svc_orgref_t *org;
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_org_membership, p, &res, slug, user_id);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return SVC_ENOTFOUND;
    }
    org = apr_pcalloc(p, sizeof(*org));
    org->id = svc_dbres_str(res, 0, 0);
    org->slug = svc_dbres_str(res, 0, 1);
    org->name = svc_dbres_str(res, 0, 2);
    org->role = svc_role_parse(svc_dbres_str(res, 0, 3));
    *porg = org;
    return APR_SUCCESS;
}

apr_status_t svc_org_create(svc_db_t *db, apr_pool_t *p, const char *slug, const char *name,
                            const char *owner_user_id, const svc_actor_t *actor,
                            const char **pid)
{
    const char *id = svc_id_new(p, "org_");
    apr_status_t rv;

    if ((rv = svc_db_begin(db, p)) != APR_SUCCESS) {
        return rv;
    }
    rv = svc_db_execv(db, &st_org_insert, p, NULL, id, slug, name);
    if (rv == APR_SUCCESS) {
        rv = svc_db_execv(db, &st_member_insert, p, NULL, id, owner_user_id, "owner");
    }
    if (rv == APR_SUCCESS) {
        rv = svc_audit_write(db, p, actor, id, "org.created", "org", id,
                             svc_json_pool(p, json_pack("{s:s,s:s,s:s}", "slug", slug,
                                                        "name", name, "owner_id",
                                                        owner_user_id)));
    }
    if (rv == APR_SUCCESS) {
        rv = svc_db_commit(db, p);
    }
    if (rv != APR_SUCCESS) {
        svc_db_rollback(db, p);
        return rv;
    }
    *pid = id;
    return APR_SUCCESS;
}
