/*
 * svc_invites.c: invitations to an organization or a project's team, from
 * both sides: the admins and maintainers who invite and revoke, and the
 * invited user who lists, accepts and declines.
 */
#include "svc_invites.h"
#include "svc_membership.h"
#include "svc_orgs.h"

#include <string.h>

/* Pending: no outcome yet. Whether it has expired is a separate question. */
#define PENDING                                                                     \
    " i.accepted_at IS NULL AND i.declined_at IS NULL AND i.revoked_at IS NULL"     \
    " AND i.lapsed_at IS NULL"

/* One invite as the API shows it; `i` is the invites row. */
#define INVITE_JSON                                                                 \
    "json_build_object('id', i.id,"                                                 \
    " 'kind', CASE WHEN i.project_id IS NULL THEN 'org' ELSE 'project' END,"        \
    " 'org', (SELECT json_build_object('id', o.id, 'slug', o.slug, 'name', o.name)" \
    "         FROM orgs o WHERE o.id = i.org_id),"                                  \
    " 'project', (SELECT json_build_object('id', p.id, 'slug', p.slug, 'name', p.name)" \
    "             FROM projects p WHERE p.id = i.project_id),"                      \
    " 'email', i.email, 'role', i.role,"                                            \
    " 'invited_by', (SELECT json_build_object('id', u.id, 'email', u.email,"        \
    "                'name', u.name) FROM users u WHERE u.id = i.invited_by),"      \
    " 'status', CASE WHEN i.accepted_at IS NOT NULL THEN 'accepted'"                \
    "   WHEN i.declined_at IS NOT NULL THEN 'declined'"                             \
    "   WHEN i.revoked_at IS NOT NULL THEN 'revoked'"                               \
    "   WHEN i.lapsed_at IS NOT NULL OR i.expires_at <= now() THEN 'expired'"       \
    "   ELSE 'pending' END,"                                                        \
    " 'created_at', svc_ts(i.created_at), 'expires_at', svc_ts(i.expires_at))"

/* Where the invited address stands in the org (and the project) already. */
static const svc_stmt_t st_inv_standing = {
    "svc_invites_standing",
    "SELECT m.role, pm.role FROM users u"
    " JOIN org_members m ON m.user_id = u.id AND m.org_id = $1"
    " LEFT JOIN project_members pm ON pm.user_id = u.id AND pm.project_id = $2"
    " WHERE lower(u.email) = lower($3)",
    3, SVC_STMT_READ
};

/* An expired invite still pending would hold the unique index against a
 * new one: mark it lapsed first, in the same transaction. */
static const svc_stmt_t st_inv_lapse = {
    "svc_invites_lapse",
    "UPDATE invites i SET lapsed_at = now()"
    " WHERE i.org_id = $1 AND i.project_id IS NOT DISTINCT FROM $2"
    " AND lower(i.email) = lower($3) AND" PENDING " AND i.expires_at <= now()",
    3, 0
};

static const svc_stmt_t st_inv_insert = {
    "svc_invites_insert",
    "INSERT INTO invites AS i (id, org_id, project_id, email, role, invited_by, expires_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7::int))"
    " RETURNING " INVITE_JSON ", svc_ts(i.expires_at)",
    7, 0
};

static const svc_stmt_t st_inv_list = {
    "svc_invites_list",
    "SELECT " INVITE_JSON ", i.seq FROM invites i"
    " WHERE i.org_id = $1 AND i.project_id IS NOT DISTINCT FROM $2 AND" PENDING
    " AND i.expires_at > now() AND i.seq < $3::bigint ORDER BY i.seq DESC LIMIT $4::int",
    4, SVC_STMT_READ
};

/* The newest pending invites to an org, and how many there are in all. */
static const svc_stmt_t st_inv_pending = {
    "svc_invites_pending",
    "SELECT coalesce((SELECT json_agg(x.j ORDER BY x.seq DESC) FROM ("
    "   SELECT " INVITE_JSON " AS j, i.seq FROM invites i"
    "   WHERE i.org_id = $1 AND i.project_id IS NULL AND" PENDING
    "   AND i.expires_at > now() ORDER BY i.seq DESC LIMIT $2::int) x), '[]'::json),"
    " (SELECT count(*) FROM invites i WHERE i.org_id = $1 AND i.project_id IS NULL"
    "  AND" PENDING " AND i.expires_at > now())",
    2, SVC_STMT_READ
};

/* The caller's invites: matched to their address; a bound token sees its org's only. */
static const svc_stmt_t st_inv_mine = {
    "svc_invites_mine",
    "SELECT " INVITE_JSON ", i.seq FROM invites i"
    " WHERE lower(i.email) = lower($1) AND ($2::text IS NULL OR i.org_id = $2) AND" PENDING
    " AND i.expires_at > now() AND i.seq < $3::bigint ORDER BY i.seq DESC LIMIT $4::int",
    4, SVC_STMT_READ
};

/* Someone else's invite is not found, whatever its id. */
static const svc_stmt_t st_inv_peek = {
    "svc_invites_peek",
    "SELECT org_id FROM invites"
    " WHERE id = $1 AND lower(email) = lower($2) AND ($3::text IS NULL OR org_id = $3)",
    3, SVC_STMT_READ
};

static const svc_stmt_t st_inv_lock_mine = {
    "svc_invites_lock_mine",
    "SELECT i.org_id, i.project_id, i.role, i.accepted_at IS NOT NULL,"
    " i.declined_at IS NOT NULL, i.revoked_at IS NOT NULL,"
    " i.lapsed_at IS NOT NULL OR i.expires_at <= now(), i.invited_by"
    " FROM invites i"
    " WHERE i.id = $1 AND lower(i.email) = lower($2) AND ($3::text IS NULL OR i.org_id = $3)"
    " FOR UPDATE",
    3, 0
};

static const svc_stmt_t st_inv_accept = {
    "svc_invites_accept",
    "UPDATE invites SET accepted_at = now(), accepted_by = $2 WHERE id = $1",
    2, 0
};

static const svc_stmt_t st_inv_decline = {
    "svc_invites_decline",
    "UPDATE invites SET declined_at = now() WHERE id = $1",
    1, 0
};

static const svc_stmt_t st_inv_revoke = {
    "svc_invites_revoke",
    "UPDATE invites i SET revoked_at = now(), revoked_by = $4"
    " WHERE i.id = $1 AND i.org_id = $2 AND i.project_id IS NOT DISTINCT FROM $3 AND" PENDING
    " RETURNING i.email, i.role",
    4, 0
};

static const svc_stmt_t st_inv_state = {
    "svc_invites_state",
    "SELECT i.accepted_at IS NOT NULL OR i.declined_at IS NOT NULL FROM invites i"
    " WHERE i.id = $1 AND i.org_id = $2 AND i.project_id IS NOT DISTINCT FROM $3",
    3, SVC_STMT_READ
};

/* What the invited user joined, for the answer to an accept. */
static const svc_stmt_t st_inv_joined_project = {
    "svc_invites_joined_project",
    "SELECT json_build_object('id', p.id, 'slug', p.slug, 'name', p.name, 'role', pm.role)"
    " FROM projects p JOIN project_members pm ON pm.project_id = p.id AND pm.user_id = $2"
    " WHERE p.id = $1",
    2, SVC_STMT_READ
};

static const char *const org_invite_roles[] = { "admin", "member", "viewer", NULL };

/* An invite as INVITE_JSON builds it. */
static const svc_col_t invite_place_keys[] = {
    { .key = "id", .type = SVC_COL_TEXT },
    SVC_COL_SLUG,
    { .key = "name", .type = SVC_COL_TEXT, .example = "Acme" },
    SVC_COL_END
};

static const svc_col_t invite_by_keys[] = {
    SVC_COL_ID("usr"),
    SVC_COL_EMAIL,
    { .key = "name", .type = SVC_COL_TEXT, .example = "Ada Lovelace" },
    SVC_COL_END
};

static const svc_col_t invite_keys[] = {
    SVC_COL_ID("inv"),
    { .key = "kind", .type = SVC_COL_TEXT, .values = SVC_VALUES("org", "project") },
    { .key = "org", .type = SVC_COL_OBJECT, .sub = invite_place_keys },
    { .key = "project", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .sub = invite_place_keys,
      .description = "The project, for an invite to its team." },
    { .key = "email", .type = SVC_COL_TEXT, .format = "email",
      .description = "The address invited." },
    { .key = "role", .type = SVC_COL_TEXT,
      .values = SVC_VALUES("admin", "member", "viewer", "developer", "maintainer"),
      .description = "The org role (admin, member, viewer) or, for a project, the project role "
        "(viewer, developer, maintainer) to join with." },
    { .key = "invited_by", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL, .sub = invite_by_keys,
      .description = "Who invited (null once their account is gone)." },
    { .key = "status", .type = SVC_COL_TEXT,
      .values = SVC_VALUES("pending", "accepted", "declined", "revoked", "expired") },
    SVC_COL_CREATED_AT,
    { .key = "expires_at", .type = SVC_COL_TIME },
    SVC_COL_END
};

const svc_schema_t svc_schema_invite = { .name = "Invite", .keys = invite_keys,
    .description = "An invitation to an organization or to a project's team." };

static const svc_col_t joined_project_keys[] = {
    SVC_COL_ID("prj"),
    SVC_COL_SLUG,
    { .key = "name", .type = SVC_COL_TEXT, .example = "Website" },
    { .key = "role", .type = SVC_COL_TEXT, .values = svc_prole_values,
      .description = "Your role on its team." },
    SVC_COL_END
};

static const svc_col_t invite_accepted_keys[] = {
    { .key = "org", .type = SVC_COL_OBJECT, .ref = &svc_schema_org,
      .description = "The organization you are a member of now." },
    { .key = "project", .type = SVC_COL_OBJECT, .flags = SVC_COL_NULL,
      .sub = joined_project_keys,
      .description = "For a project invite: the project joined; null for an org invite." },
    SVC_COL_END
};

const svc_schema_t svc_schema_invite_accepted = { .name = "InviteAccepted",
    .keys = invite_accepted_keys, .description = "What accepting an invite joined." };

const svc_field_t svc_body_org_invite[] = {
    { .name = "email", .type = SVC_FT_EMAIL, .required = 1,
      .description = "The address to invite; the invite is offered to the user who signs in "
        "with it (compared case-insensitively)." },
    { .name = "role", .type = SVC_FT_ENUM, .required = 1, .values = org_invite_roles,
      .description = "The role to join with. Nobody is invited as owner: ownership only moves "
        "by transfer." },
    SVC_FIELD_END
};

apr_status_t svc_invite_create(svc_ctx_t *ctx, svc_db_t *db, const char *project_id,
                               const char *email, const char *role, const char **pjson)
{
    const char *id = svc_id_new(ctx->pool, "inv_");
    const char *params[7];
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_inv_standing, ctx->pool, &res, ctx->org->id, project_id, email);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0 && project_id) {
        /*
         * Whoever accepts a project invite and is no member of the org
         * becomes one, and sees every project and member. Only admins
         * decide who joins the org: a maintainer below them invites org
         * members only. The role is read again under the org lock.
         */
        svc_role_e now;
        if ((rv = svc_org_lock(db, ctx->pool, ctx->org->id, ctx->who->user_id, &now))
            != APR_SUCCESS) {
            return rv;
        }
        if (now < SVC_ROLE_ADMIN) {
            return svc_fail(ctx, 403, "forbidden",
                            "%s is not a member of %s, and only an org admin (or the owner) "
                            "can invite someone into the organization: ask one to invite "
                            "them to %s, then add them to the team.", email, ctx->org->slug,
                            ctx->org->slug);
        }
    }
    if (svc_dbres_rows(res) == 1) {
        if (!project_id) {
            return svc_fail(ctx, 409, "already_member", "%s is a member of %s already.", email,
                            ctx->org->slug);
        }
        if (!svc_dbres_isnull(res, 0, 1)) {
            return svc_fail(ctx, 409, "already_member", "%s is on the team of %s already.",
                            email, ctx->project->slug);
        }
        if (svc_role_parse(svc_dbres_str(res, 0, 0)) == SVC_ROLE_VIEWER
            && svc_prole_parse(role) > SVC_PROLE_VIEWER) {
            return svc_fail(ctx, 409, "viewer_limited",
                            "%s is a viewer of %s, and an org viewer can only be a project "
                            "viewer; make them a member of the org first.", email,
                            ctx->org->slug);
        }
    }
    rv = svc_db_execv(db, &st_inv_lapse, ctx->pool, NULL, ctx->org->id, project_id, email);
    if (rv != APR_SUCCESS) {
        return rv;
    }
    params[0] = id;
    params[1] = ctx->org->id;
    params[2] = project_id;
    params[3] = email;
    params[4] = role;
    params[5] = ctx->who->user_id;
    params[6] = apr_itoa(ctx->pool, ctx->conf->invite_lifetime);
    rv = svc_db_exec(db, &st_inv_insert, ctx->pool, &res, params);
    if (rv == SVC_ECONFLICT) {
        /* The unique index decides between simultaneous invitations. */
        return svc_fail(ctx, 409, "invite_pending",
                        "%s has a pending invite to %s already; revoke it to invite again.",
                        email, project_id ? ctx->project->slug : ctx->org->slug);
    }
    if (rv != APR_SUCCESS) {
        return rv;
    }
    rv = svc_audit_ctx(ctx, db, "invite.created", "invite", id,
                       svc_json_pool(ctx->pool,
                                     json_pack("{s:s,s:s,s:s?,s:s?}", "email", email,
                                               "role", role, "project_id", project_id,
                                               "expires_at", svc_dbres_str(res, 0, 1))));
    if (rv == APR_SUCCESS) {
        *pjson = svc_dbres_str(res, 0, 0);
    }
    return rv;
}

/*
 * Revokes the pending invite the route names, of ctx->org (baton NULL: an
 * org invite; else the id of the project it invites to), audit-logged
 * (invite.revoked). Revoking a revoked invite is a no-op; an accepted or
 * declined one is a 409; an unknown id (or one of another org or project)
 * a 404.
 */
static apr_status_t revoke_invite(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *project_id = baton;
    const char *id = apr_table_get(ctx->params, "id");
    svc_dbres_t *res;
    apr_status_t rv;

    rv = project_id ? svc_access_recheck(ctx, db, SVC_ROLE_VIEWER, SVC_PROLE_MAINTAINER)
                    : svc_access_recheck(ctx, db, SVC_ROLE_ADMIN, SVC_PROLE_NONE);
    if (rv != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_inv_revoke, ctx->pool, &res, id, ctx->org->id,
                              project_id, ctx->who->user_id)) != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) == 0) {
        /* Revoked (or lapsed) already is fine: DELETE is idempotent. */
        rv = svc_db_execv(db, &st_inv_state, ctx->pool, &res, id, ctx->org->id, project_id);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        if (svc_dbres_rows(res) == 0) {
            return svc_fail(ctx, 404, "not_found", "No invite %s here.", id);
        }
        if (svc_dbres_bool(res, 0, 0) == 1) {
            return svc_fail(ctx, 409, "invite_closed",
                            "The invite has been answered already; remove the member "
                            "instead.");
        }
        return svc_reply_empty(ctx);
    }
    rv = svc_audit_ctx(ctx, db, "invite.revoked", "invite", id,
                       svc_json_pool(ctx->pool,
                                     json_pack("{s:s,s:s,s:s?}", "email",
                                               svc_dbres_str(res, 0, 0), "role",
                                               svc_dbres_str(res, 0, 1), "project_id",
                                               project_id)));
    return rv == APR_SUCCESS ? svc_reply_empty(ctx) : rv;
}

apr_status_t svc_invites_pending(svc_db_t *db, apr_pool_t *p, const char *org_id, int max,
                                 const char **pjson, const char **ptotal)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_inv_pending, p, &res, org_id, apr_itoa(p, max));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1 || !(*pjson = svc_dbres_str(res, 0, 0))
        || !(*ptotal = svc_dbres_str(res, 0, 1))) {
        return SVC_EDB;
    }
    return APR_SUCCESS;
}

apr_status_t svc_invite_list(svc_ctx_t *ctx, const char *project_id)
{
    return svc_reply_list(ctx, &st_inv_list, ctx->org->id, project_id, SVC_PAGE_BEFORE,
                          SVC_PAGE_FETCH);
}

static apr_status_t invite_to_org(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *json;
    apr_status_t rv;

    if ((rv = svc_access_recheck(ctx, db, SVC_ROLE_ADMIN, SVC_PROLE_NONE)) != APR_SUCCESS
        || (rv = svc_invite_create(ctx, db, NULL, svc_json_str(ctx->body, "email"),
                                   svc_json_str(ctx->body, "role"), &json)) != APR_SUCCESS) {
        return rv;
    }
    return svc_reply_text(ctx, 201, json);
}

apr_status_t svc_h_org_invite_create(svc_ctx_t *ctx)
{
    return svc_write(ctx, invite_to_org, NULL);
}

apr_status_t svc_h_org_invites_list(svc_ctx_t *ctx)
{
    return svc_invite_list(ctx, NULL);
}

apr_status_t svc_h_org_invite_revoke(svc_ctx_t *ctx)
{
    return svc_write(ctx, revoke_invite, NULL);
}

apr_status_t svc_h_team_invites_list(svc_ctx_t *ctx)
{
    return svc_invite_list(ctx, ctx->project->id);
}

apr_status_t svc_h_team_invite_revoke(svc_ctx_t *ctx)
{
    return svc_write(ctx, revoke_invite, (void *)ctx->project->id);
}

apr_status_t svc_h_my_invites_list(svc_ctx_t *ctx)
{
    return svc_reply_list(ctx, &st_inv_mine, ctx->who->email, svc_auth_binding(ctx),
                          SVC_PAGE_BEFORE, SVC_PAGE_FETCH);
}

/*
 * The invite `id` addressed to the caller, locked, and still open to an
 * answer: 404 when it is not theirs, 409 when answered, 410 when revoked
 * or expired. Columns as in st_inv_lock_mine.
 */
static apr_status_t lock_mine(svc_ctx_t *ctx, svc_db_t *db, const char *id, svc_dbres_t **pres)
{
    svc_dbres_t *res;
    apr_status_t rv;

    rv = svc_db_execv(db, &st_inv_lock_mine, ctx->pool, &res, id, ctx->who->email,
                      svc_auth_binding(ctx));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_fail(ctx, 404, "not_found", "You have no invite with this id.");
    }
    if (svc_dbres_bool(res, 0, 3) == 1 || svc_dbres_bool(res, 0, 4) == 1) {
        return svc_fail(ctx, 409, "invite_closed", "You have %s this invite already.",
                        svc_dbres_bool(res, 0, 3) == 1 ? "accepted" : "declined");
    }
    if (svc_dbres_bool(res, 0, 5) == 1) {
        return svc_fail(ctx, 410, "invite_revoked", "This invite has been withdrawn.");
    }
    if (svc_dbres_bool(res, 0, 6) == 1) {
        return svc_fail(ctx, 410, "invite_expired",
                        "This invite has expired; ask for a new one.");
    }
    *pres = res;
    return APR_SUCCESS;
}

/*
 * Joins what the invite (locked, *res from lock_mine) offers: the org, or a
 * project's team (and its org, when the invite may admit the caller to it).
 */
static apr_status_t join(svc_ctx_t *ctx, svc_db_t *db, const char *org_id, svc_role_e my_role,
                         const svc_dbres_t *res, const svc_actor_t *actor)
{
    const char *project_id = svc_dbres_str(res, 0, 1);
    const char *role_s = svc_dbres_str(res, 0, 2);
    const char *inviter = svc_dbres_str(res, 0, 7);
    svc_prole_e prole = svc_prole_parse(role_s);
    svc_role_e inviter_role = SVC_ROLE_NONE;
    apr_status_t rv;

    if (!project_id) {
        if (my_role != SVC_ROLE_NONE) {
            return svc_fail(ctx, 409, "already_member",
                            "You are a member of this organization already; decline the "
                            "invite instead.");
        }
        return svc_member_insert(db, ctx->pool, actor, org_id, ctx->who->user_id,
                                 svc_role_parse(role_s), "invite");
    }
    /*
     * Joining a team means joining its org (read-only for a project
     * viewer), which only an admin decides: the invite admits a non-member
     * only if whoever made it is an org admin (or the owner) now. An invite
     * made to a member who left since, or before this rule, does not.
     */
    if (my_role == SVC_ROLE_NONE && inviter
        && (rv = svc_org_lock(db, ctx->pool, org_id, inviter, &inviter_role)) != APR_SUCCESS) {
        return rv;
    }
    if (my_role == SVC_ROLE_NONE && inviter_role < SVC_ROLE_ADMIN) {
        return svc_fail(ctx, 409, "org_invite_required",
                        "You are not a member of this project's organization, and this "
                        "invite was not made by one of its admins, so it cannot admit you "
                        "to it: ask an org admin to invite you to the organization (or "
                        "decline this invite).");
    }
    if (my_role == SVC_ROLE_NONE
        && (rv = svc_member_insert(db, ctx->pool, actor, org_id, ctx->who->user_id,
                                   prole == SVC_PROLE_VIEWER ? SVC_ROLE_VIEWER
                                                             : SVC_ROLE_MEMBER,
                                   "project_invite")) != APR_SUCCESS) {
        return rv;
    }
    if (my_role == SVC_ROLE_VIEWER && prole > SVC_PROLE_VIEWER) {
        return svc_fail(ctx, 409, "viewer_limited",
                        "You are a viewer of this organization, and an org viewer can only "
                        "be a project viewer; decline the invite or ask to be made a "
                        "member first.");
    }
    rv = svc_team_insert(db, ctx->pool, actor, org_id, project_id, ctx->who->user_id, prole);
    if (rv == SVC_ECONFLICT) {
        return svc_fail(ctx, 409, "already_member",
                        "You are on this project's team already; decline the invite "
                        "instead.");
    }
    return rv;
}

static apr_status_t accept_invite(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "id");
    const char *org_id, *project_id, *org_json, *project_json = NULL;
    svc_role_e my_role;
    svc_actor_t actor;
    svc_dbres_t *res;
    apr_status_t rv;

    /*
     * Locks in the order every membership change takes them (org, then the
     * invite, then memberships), so an accept and a revoke cannot deadlock:
     * find the invite's org first, lock the org, then lock the invite.
     */
    rv = svc_db_execv(db, &st_inv_peek, ctx->pool, &res, id, ctx->who->email,
                      svc_auth_binding(ctx));
    if (rv != APR_SUCCESS) {
        return rv;
    }
    if (svc_dbres_rows(res) != 1) {
        return svc_fail(ctx, 404, "not_found", "You have no invite with this id.");
    }
    org_id = svc_dbres_str(res, 0, 0);
    svc_actor_from_ctx(ctx, &actor);
    if ((rv = svc_org_lock(db, ctx->pool, org_id, ctx->who->user_id, &my_role)) != APR_SUCCESS
        || (rv = lock_mine(ctx, db, id, &res)) != APR_SUCCESS
        || (rv = join(ctx, db, org_id, my_role, res, &actor)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_inv_accept, ctx->pool, NULL, id, ctx->who->user_id))
           != APR_SUCCESS) {
        return rv;
    }
    project_id = svc_dbres_str(res, 0, 1);
    rv = svc_audit_write(db, ctx->pool, &actor, org_id, "invite.accepted", "invite", id,
                         svc_json_pool(ctx->pool,
                                       json_pack("{s:s,s:s,s:s?}", "user_id",
                                                 ctx->who->user_id, "role",
                                                 svc_dbres_str(res, 0, 2), "project_id",
                                                 project_id)));
    /* The answer: what was joined. */
    if (rv != APR_SUCCESS
        || (rv = svc_org_json(db, ctx->pool, org_id, ctx->who->user_id, &org_json))
           != APR_SUCCESS) {
        return rv;
    }
    if (project_id) {
        rv = svc_db_execv(db, &st_inv_joined_project, ctx->pool, &res, project_id,
                          ctx->who->user_id);
        if (rv != APR_SUCCESS) {
            return rv;
        }
        if (svc_dbres_rows(res) == 1) {
            project_json = svc_dbres_str(res, 0, 0);
        }
    }
    return svc_reply_json(ctx, 200, json_pack("{s:o?,s:o?}", "org",
                                              json_loads(org_json, 0, NULL), "project",
                                              project_json ? json_loads(project_json, 0, NULL)
                                                           : NULL));
}

apr_status_t svc_h_my_invite_accept(svc_ctx_t *ctx)
{
    return svc_write(ctx, accept_invite, NULL);
}

static apr_status_t decline_invite(svc_ctx_t *ctx, svc_db_t *db, void *baton)
{
    const char *id = apr_table_get(ctx->params, "id");
    svc_actor_t actor;
    svc_dbres_t *res;
    apr_status_t rv;

    if ((rv = lock_mine(ctx, db, id, &res)) != APR_SUCCESS
        || (rv = svc_db_execv(db, &st_inv_decline, ctx->pool, NULL, id)) != APR_SUCCESS) {
        return rv;
    }
    svc_actor_from_ctx(ctx, &actor);
    rv = svc_audit_write(db, ctx->pool, &actor, svc_dbres_str(res, 0, 0), "invite.declined",
                         "invite", id,
                         svc_json_pool(ctx->pool,
                                       json_pack("{s:s,s:s,s:s?}", "user_id",
                                                 ctx->who->user_id, "role",
                                                 svc_dbres_str(res, 0, 2), "project_id",
                                                 svc_dbres_str(res, 0, 1))));
    return rv == APR_SUCCESS ? svc_reply_empty(ctx) : rv;
}

apr_status_t svc_h_my_invite_decline(svc_ctx_t *ctx)
{
    return svc_write(ctx, decline_invite, NULL);
}
