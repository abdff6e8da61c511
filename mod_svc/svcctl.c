/*
 * svcctl: the operator's tool. It links the same core as the module (which
 * proves the split is real) and talks to PostgreSQL directly.
 *
 *   svcctl [--db CONNINFO] [--secret REF] COMMAND ...
 *   svcctl --version | --help
 *
 * The connection comes from --db or SVC_DB (a libpq conninfo string), the
 * server secret reference from --secret or SVC_SECRET. Exit status: 0 done,
 * 1 failed, 2 usage error.
 */
#include <apr_general.h>
#include <apr_env.h>
#include <apr_strings.h>
#include <stdio.h>
#include <string.h>

#include "svc_kernel.h"
#include "svc_areas.h"
#include "svc_admin.h"
#include "svc_auditlog.h"
#include "svc_identity.h"
#include "svc_tenancy.h"
#include "svc_vcs.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2

static const char usage_text[] =
    "usage: svcctl [--db CONNINFO] [--secret REF] COMMAND\n"
    "\n"
    "  migrate                             apply the schema migrations that are missing\n"
    "  schema-version                      print the database's and this build's versions\n"
    "  user add EMAIL [--name NAME] [--founder] [--allow-email-link]\n"
    "                                      --allow-email-link: the first sign-in with this\n"
    "                                      verified address may claim the account\n"
    "  user allow-email-link EMAIL         the same for an account that exists\n"
    "  org create SLUG --owner EMAIL [--name NAME]\n"
    "  org list [--json]                   every organization, its owner and sizes\n"
    "  org add-member SLUG EMAIL --role admin|member|viewer\n"
    "                                      add a user directly, without an invite\n"
    "  user suspend|unsuspend EMAIL --reason TEXT\n"
    "  org suspend|unsuspend SLUG --reason TEXT\n"
    "                                      suspend (or lift the suspension of) a user or an\n"
    "                                      organization, as POST /api/admin/... does; in the\n"
    "                                      platform audit log\n"
    "  token create EMAIL --scope read|write|admin [--org SLUG] [--days N] [--name NAME]\n"
    "                                      print a new personal access token (only the secret)\n"
    "  token list EMAIL [--json]           the user's tokens: metadata, never a secret\n"
    "  token revoke ID                     revoke a token (tok_...) of any user, now\n"
    "  session create EMAIL                print a service_session cookie value\n"
    "  audit verify                        check every audit chain; exit 1 if one is broken\n"
    "  routes [--json]                     the route table\n"
    "  openapi [--server URL]              print the OpenAPI document GET /api/openapi.json\n"
    "                                      answers (for client generators, offline); exit 1\n"
    "                                      when a route cannot be documented\n"
    "  vcs-app check [--credentials FILE]  sign an App JWT with the code-hosting App's key and\n"
    "                                      ask the provider who it is (after a key rotation);\n"
    "                                      the keys as the module reads them: VCS_APP_*, then\n"
    "                                      FILE; VCS_API_URL (default https://api.github.com)"
    "\n"
    "  --db CONNINFO   libpq connection string (default: $SVC_DB)\n"
    "  --secret REF    server secret as file:/path, env:NAME or exec:/program\n"
    "                  (default: $SVC_SECRET); the module's SvcSecret\n"
    "  --version       print svcctl's version (the module's, when from one build)\n";

typedef struct {
    apr_pool_t *pool;
    const char *conninfo;
    const char *secret_ref;
    int argc;
    const char **argv;
    svc_config_t conf;
    svc_db_t *db;
} cli_t;

static int usage(const char *why)
{
    if (why) {
        fprintf(stderr, "svcctl: %s\n\n", why);
    }
    fputs(usage_text, stderr);
    return EXIT_USAGE;
}

static int fail(const char *what, const char *why)
{
    fprintf(stderr, "svcctl: %s: %s\n", what, why);
    return EXIT_FAILED;
}

/* Why a core call failed, in words for an operator. */
static const char *explain(cli_t *cli, apr_status_t rv)
{
    char buf[256];

    switch (rv) {
    case SVC_EDBDOWN:
        return apr_pstrcat(cli->pool, "database unreachable: ", svc_db_errmsg(cli->db), NULL);
    case SVC_ECONFLICT:
        return "already exists";
    case SVC_ENOTFOUND:
        return "not found";
    case SVC_EDB:
    case SVC_EINTEGRITY:
        return apr_pstrdup(cli->pool, svc_db_errmsg(cli->db));
    default:
        return apr_pstrdup(cli->pool, apr_strerror(rv, buf, sizeof(buf)));
    }
}

/* Finds --name VALUE among the command's arguments; flags without a value
 * are reported by has_flag. Unknown options are usage errors. */
static const char *opt(cli_t *cli, const char *name)
{
    int i;

    for (i = 0; i < cli->argc; i++) {
        if (strcmp(cli->argv[i], name) == 0) {
            return i + 1 < cli->argc ? cli->argv[i + 1] : "";
        }
    }
    return NULL;
}

static int has_flag(cli_t *cli, const char *name)
{
    int i;

    for (i = 0; i < cli->argc; i++) {
        if (strcmp(cli->argv[i], name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Every argument after the positional ones must be a known option. */
static const char *check_options(cli_t *cli, int positional, const char *const *with_value,
                                 const char *const *flags)
{
    int i;

    for (i = positional; i < cli->argc; i++) {
        const char *const *o;
        int known = 0;
        for (o = with_value; o && *o; o++) {
            if (strcmp(cli->argv[i], *o) == 0) {
                if (i + 1 >= cli->argc) {
                    return apr_psprintf(cli->pool, "%s needs a value", *o);
                }
                i++;
                known = 1;
                break;
            }
        }
        for (o = flags; !known && o && *o; o++) {
            known = strcmp(cli->argv[i], *o) == 0;
        }
        if (!known) {
            return apr_psprintf(cli->pool, "unexpected argument: %s", cli->argv[i]);
        }
    }
    return NULL;
}

static int connect_db(cli_t *cli)
{
    const char *err = NULL;

    if (!cli->conninfo || !*cli->conninfo) {
        fprintf(stderr, "svcctl: no database: give --db CONNINFO or set SVC_DB\n");
        return EXIT_USAGE;
    }
    if (svc_db_connect(&cli->db, cli->conninfo, cli->pool, &err) != APR_SUCCESS) {
        return fail("cannot connect to the database", err ? err : "unknown error");
    }
    return 0;
}

static int load_secret(cli_t *cli)
{
    const char *err = NULL;

    if (!cli->secret_ref || !*cli->secret_ref) {
        fprintf(stderr, "svcctl: this command needs the server secret: give --secret REF or "
                        "set SVC_SECRET (the same reference as SvcSecret)\n");
        return EXIT_USAGE;
    }
    if (svc_config_load_secret(&cli->conf, cli->secret_ref, cli->pool, &err) != APR_SUCCESS) {
        return fail("cannot load the server secret", err);
    }
    return 0;
}

static void operator_actor(svc_actor_t *a)
{
    memset(a, 0, sizeof(*a));
    a->kind = "operator";
    a->user_agent = "svcctl/" SVC_VERSION;
    a->request_id = "svcctl";
}

static int need_user(cli_t *cli, const char *email, const char **pid)
{
    apr_status_t rv = svc_user_by_email(cli->db, cli->pool, email, pid);

    if (rv == SVC_ENOTFOUND) {
        return fail(email, "no such user (create it with: svcctl user add EMAIL)");
    }
    if (rv != APR_SUCCESS) {
        return fail("looking up the user", explain(cli, rv));
    }
    return 0;
}

static int cmd_migrate(cli_t *cli)
{
    const char *err = NULL;
    int applied = 0, version = 0, rc;
    apr_status_t rv;

    if (cli->argc != 0) {
        return usage("migrate takes no arguments");
    }
    if ((rc = connect_db(cli)) != 0) {
        return rc;
    }
    rv = svc_migrate_run(cli->db, cli->pool, &applied, &err);
    if (rv != APR_SUCCESS) {
        return fail("migrate", err ? err : explain(cli, rv));
    }
    svc_migrate_current(cli->db, cli->pool, &version);
    printf("schema at version %d (%d migration%s applied)\n", version, applied,
           applied == 1 ? "" : "s");
    return 0;
}

static int cmd_schema_version(cli_t *cli)
{
    int version = 0, rc;
    apr_status_t rv;

    if ((rc = connect_db(cli)) != 0) {
        return rc;
    }
    rv = svc_migrate_current(cli->db, cli->pool, &version);
    if (rv != APR_SUCCESS) {
        return fail("schema-version", explain(cli, rv));
    }
    printf("database %d, build %d\n", version, svc_schema_version);
    return version >= svc_schema_version ? 0 : EXIT_FAILED;
}

/*
 * A command's change runs in one transaction of its own (svc_db_tx), as a
 * request's does in svc_write: each *_tx function below makes one, with
 * the command's arguments in its baton.
 */
typedef struct {
    const char *email, *name;
    int founder, allow_email_link;
    svc_actor_t actor;
    const char *id;                 /* out */
} user_add_t;

static apr_status_t user_add_tx(svc_db_t *db, apr_pool_t *p, void *baton)
{
    user_add_t *a = baton;

    return svc_user_add(db, p, a->email, a->name, a->founder, a->allow_email_link, &a->actor,
                        &a->id);
}

static int cmd_user_add(cli_t *cli)
{
    static const char *const with_value[] = { "--name", NULL };
    static const char *const flags[] = { "--founder", "--allow-email-link", NULL };
    const char *email, *name, *err;
    user_add_t a;
    apr_status_t rv;
    int rc;

    if (cli->argc < 1 || cli->argv[0][0] == '-') {
        return usage("user add needs an EMAIL");
    }
    if ((err = check_options(cli, 1, with_value, flags)) != NULL) {
        return usage(err);
    }
    email = cli->argv[0];
    name = opt(cli, "--name");
    if (!svc_email_valid(email)) {
        return usage("EMAIL is not an email address");
    }
    if (name && strlen(name) > 200) {
        return usage("--name is longer than 200 characters");
    }
    if ((rc = connect_db(cli)) != 0) {
        return rc;
    }
    a.email = email;
    a.name = name;
    a.founder = has_flag(cli, "--founder");
    a.allow_email_link = has_flag(cli, "--allow-email-link");
    operator_actor(&a.actor);
    rv = svc_db_tx(cli->db, cli->pool, user_add_tx, &a);
    if (rv != APR_SUCCESS) {
        return fail(email, rv == SVC_ECONFLICT ? "a user with this email already exists"
                                               : explain(cli, rv));
    }
    printf("%s\n", a.id);
    return 0;
}

typedef struct {
    const char *user_id;
    svc_actor_t actor;
} user_link_t;

static apr_status_t user_allow_email_link_tx(svc_db_t *db, apr_pool_t *p, void *baton)
{
    user_link_t *a = baton;

    return svc_user_allow_email_link(db, p, a->user_id, &a->actor);
}

/* For an account made before the flag existed, or without it. */
static int cmd_user_allow_email_link(cli_t *cli)
{
    const char *email;
    user_link_t a;
    apr_status_t rv;
    int rc;

    if (cli->argc != 1 || cli->argv[0][0] == '-') {
        return usage("user allow-email-link needs exactly one EMAIL");
    }
    email = cli->argv[0];
    if ((rc = connect_db(cli)) != 0 || (rc = need_user(cli, email, &a.user_id)) != 0) {
        return rc;
    }
    operator_actor(&a.actor);
    rv = svc_db_tx(cli->db, cli->pool, user_allow_email_link_tx, &a);
    if (rv == SVC_ECONFLICT) {
        return fail(email, "a provider identity has claimed this account already");
    }
    if (rv != APR_SUCCESS) {
        return fail("user allow-email-link", explain(cli, rv));
    }
    printf("%s may now be claimed by its first sign-in\n", email);
    return 0;
}

typedef struct {
    const char *slug, *name, *owner_id;
    svc_actor_t actor;
    const char *id;                 /* out */
} org_create_t;

static apr_status_t org_create_tx(svc_db_t *db, apr_pool_t *p, void *baton)
{
    org_create_t *a = baton;

    return svc_org_create(db, p, a->slug, a->name, a->owner_id, &a->actor, &a->id);
}

static int cmd_org_create(cli_t *cli)
{
    static const char *const with_value[] = { "--owner", "--name", NULL };
    const char *slug, *owner, *name, *err;
    org_create_t a;
    apr_status_t rv;
    int rc;

    if (cli->argc < 1 || cli->argv[0][0] == '-') {
        return usage("org create needs a SLUG");
    }
    if ((err = check_options(cli, 1, with_value, NULL)) != NULL) {
        return usage(err);
    }
    slug = cli->argv[0];
    owner = opt(cli, "--owner");
    name = opt(cli, "--name");
    if (!svc_slug_valid(slug)) {
        return usage("SLUG must be 1 to 63 characters of a-z, 0-9 and '-', not starting or "
                     "ending with '-'");
    }
    if (!owner) {
        return usage("org create needs --owner EMAIL");
    }
    if (name && (strlen(name) < 1 || strlen(name) > 200)) {
        return usage("--name must be 1 to 200 characters");
    }
    if ((rc = connect_db(cli)) != 0 || (rc = need_user(cli, owner, &a.owner_id)) != 0) {
        return rc;
    }
    a.slug = slug;
    a.name = name ? name : slug;
    operator_actor(&a.actor);
    rv = svc_db_tx(cli->db, cli->pool, org_create_tx, &a);
    if (rv != APR_SUCCESS) {
        return fail(slug, rv == SVC_ECONFLICT ? "this slug is taken" : explain(cli, rv));
    }
    printf("%s\n", a.id);
    return 0;
}

/*
 * The API only shows a user the orgs they belong to; an operator needs the
 * whole list (to find an org whose owner left, for instance).
 */
typedef struct {
    svc_suspend_kind_e kind;
    const char *key, *reason;
    int suspend;
    svc_actor_t actor;
    const char *id;                 /* out */
} suspend_t;

static apr_status_t suspend_tx(svc_db_t *db, apr_pool_t *p, void *baton)
{
    suspend_t *a = baton;

    return svc_admin_suspend(db, p, &a->actor, a->kind, a->key, a->suspend, a->reason, &a->id);
}

/* user suspend|unsuspend EMAIL, org suspend|unsuspend SLUG: --reason. */
static int cmd_suspend(cli_t *cli, svc_suspend_kind_e kind, int suspend)
{
    static const char *const with_value[] = { "--reason", NULL };
    const char *what = kind == SVC_SUSPEND_ORG ? "org" : "user";
    const char *err;
    suspend_t a;
    apr_status_t rv;
    int rc;

    memset(&a, 0, sizeof(a));
    if (cli->argc < 1 || cli->argv[0][0] == '-') {
        return usage(kind == SVC_SUSPEND_ORG ? "org suspend|unsuspend needs a SLUG"
                                             : "user suspend|unsuspend needs an EMAIL");
    }
    if ((err = check_options(cli, 1, with_value, NULL)) != NULL) {
        return usage(err);
    }
    a.key = cli->argv[0];
    a.reason = opt(cli, "--reason");
    if (kind == SVC_SUSPEND_ORG ? !svc_slug_valid(a.key) : !svc_email_valid(a.key)) {
        return usage(kind == SVC_SUSPEND_ORG ? "SLUG must be an organization slug"
                                             : "EMAIL is not an email address");
    }
    if (!a.reason || !*a.reason || strlen(a.reason) > 500) {
        return usage("--reason must be 1 to 500 characters");
    }
    if ((rc = connect_db(cli)) != 0) {
        return rc;
    }
    a.kind = kind;
    a.suspend = suspend;
    operator_actor(&a.actor);
    rv = svc_db_tx(cli->db, cli->pool, suspend_tx, &a);
    if (rv == SVC_ENOTFOUND) {
        return fail(a.key, apr_psprintf(cli->pool, "no such %s", what));
    }
    if (rv == SVC_ECONFLICT) {
        return fail(a.key, suspend ? "already suspended" : "not suspended");
    }
    if (rv != APR_SUCCESS) {
        return fail(suspend ? "suspend" : "unsuspend", explain(cli, rv));
    }
    printf("%s %s %s\n", what, a.key, suspend ? "suspended" : "no longer suspended");
    return 0;
}

static int cmd_org_list(cli_t *cli)
{
    const char *text;
    json_t *all, *o;
    size_t i;
    apr_status_t rv;
    int rc, as_json;

    if (cli->argc > 1 || (cli->argc == 1 && strcmp(cli->argv[0], "--json") != 0)) {
        return usage("org list takes only --json");
    }
    as_json = cli->argc == 1;
    if ((rc = connect_db(cli)) != 0) {
        return rc;
    }
    rv = svc_org_list_all(cli->db, cli->pool, &text);
    if (rv != APR_SUCCESS) {
        return fail("org list", explain(cli, rv));
    }
    if (as_json) {
        printf("%s\n", text);
        return 0;
    }
    all = svc_json_pool(cli->pool, json_loads(text, 0, NULL));
    printf("%-30s %-26s %-30s %7s %8s\n", "SLUG", "ID", "OWNER", "MEMBERS", "PROJECTS");
    json_array_foreach(all, i, o) {
        printf("%-30s %-26s %-30s %7" JSON_INTEGER_FORMAT " %8" JSON_INTEGER_FORMAT "\n",
               json_string_value(json_object_get(o, "slug")),
               json_string_value(json_object_get(o, "id")),
               json_is_string(json_object_get(o, "owner"))
                   ? json_string_value(json_object_get(o, "owner")) : "-",
               json_integer_value(json_object_get(o, "members")),
               json_integer_value(json_object_get(o, "projects")));
    }
    return 0;
}

typedef struct {
    const char *org_id, *user_id;
    svc_role_e role;
    svc_actor_t actor;
} member_add_t;

static apr_status_t member_add_tx(svc_db_t *db, apr_pool_t *p, void *baton)
{
    member_add_t *a = baton;

    return svc_member_add(db, p, &a->actor, a->org_id, a->user_id, a->role);
}

/*
 * Adds a member without an invite: for bootstrapping and for recovering an
 * org whose admins are gone. Never as owner: ownership moves by transfer.
 */
static int cmd_org_add_member(cli_t *cli)
{
    static const char *const with_value[] = { "--role", NULL };
    const char *slug, *email, *role_s, *err;
    svc_orgref_t *org;
    member_add_t a;
    apr_status_t rv;
    int rc;

    if (cli->argc < 2 || cli->argv[0][0] == '-' || cli->argv[1][0] == '-') {
        return usage("org add-member needs a SLUG and an EMAIL");
    }
    if ((err = check_options(cli, 2, with_value, NULL)) != NULL) {
        return usage(err);
    }
    slug = cli->argv[0];
    email = cli->argv[1];
    role_s = opt(cli, "--role");
    if (!svc_slug_valid(slug)) {
        return usage("SLUG must be an organization slug");
    }
    if (!role_s) {
        return usage("org add-member needs --role admin, member or viewer");
    }
    a.role = svc_role_parse(role_s);
    if (a.role == SVC_ROLE_OWNER) {
        return usage("--role owner is refused: ownership moves only by transfer "
                     "(POST /api/orgs/SLUG/transfer-ownership)");
    }
    if (a.role == SVC_ROLE_NONE) {
        return usage("--role must be admin, member or viewer");
    }
    if ((rc = connect_db(cli)) != 0 || (rc = need_user(cli, email, &a.user_id)) != 0) {
        return rc;
    }
    rv = svc_org_by_slug(cli->db, cli->pool, slug, &org);
    if (rv == SVC_ENOTFOUND) {
        return fail(slug, "no such organization");
    }
    if (rv != APR_SUCCESS) {
        return fail(slug, explain(cli, rv));
    }
    a.org_id = org->id;
    operator_actor(&a.actor);
    rv = svc_db_tx(cli->db, cli->pool, member_add_tx, &a);
    if (rv != APR_SUCCESS) {
        return fail(email, rv == SVC_ECONFLICT ? "is a member of this organization already"
                                               : explain(cli, rv));
    }
    printf("%s %s %s\n", slug, email, role_s);
    return 0;
}

/* Every chain, the user-level one included, which no API route can show. */
static int cmd_audit_verify(cli_t *cli)
{
    const char *text;
    json_t *broken, *b;
    size_t i;
    apr_status_t rv;
    int rc;

    if (cli->argc != 0) {
        return usage("audit verify takes no arguments");
    }
    if ((rc = connect_db(cli)) != 0) {
        return rc;
    }
    rv = svc_auditlog_verify_all(cli->db, cli->pool, &text);
    if (rv != APR_SUCCESS) {
        return fail("audit verify", explain(cli, rv));
    }
    broken = svc_json_pool(cli->pool, json_loads(text, 0, NULL));
    if (json_array_size(broken) == 0) {
        printf("every audit chain verifies\n");
        return 0;
    }
    json_array_foreach(broken, i, b) {
        const char *org = json_string_value(json_object_get(b, "org_id"));
        fprintf(stderr, "svcctl: audit chain of %s is broken at entry %s\n",
                org ? org : "the user level", json_string_value(json_object_get(b,
                                                                "first_broken_id")));
    }
    return EXIT_FAILED;
}

typedef struct {
    const svc_config_t *conf;
    svc_token_spec_t spec;
    svc_actor_t actor;
    const char *secret;             /* out */
} token_create_t;

static apr_status_t token_create_tx(svc_db_t *db, apr_pool_t *p, void *baton)
{
    token_create_t *a = baton;
    json_t *meta;

    return svc_token_create(db, p, a->conf, &a->spec, &a->actor, &a->secret, &meta);
}

static int cmd_token_create(cli_t *cli)
{
    static const char *const with_value[] = { "--scope", "--org", "--days", "--name", NULL };
    const char *email, *scope, *org, *days, *name, *err;
    token_create_t a;
    svc_token_spec_t *spec = &a.spec;
    long long d = 0;
    apr_status_t rv;
    int rc;

    if (cli->argc < 1 || cli->argv[0][0] == '-') {
        return usage("token create needs an EMAIL");
    }
    if ((err = check_options(cli, 1, with_value, NULL)) != NULL) {
        return usage(err);
    }
    email = cli->argv[0];
    scope = opt(cli, "--scope");
    org = opt(cli, "--org");
    days = opt(cli, "--days");
    name = opt(cli, "--name");
    memset(&a, 0, sizeof(a));
    spec->scope = svc_scope_parse(scope);
    if (spec->scope == SVC_SCOPE_NONE) {
        return usage("token create needs --scope read, write or admin");
    }
    if (days && svc_parse_int(days, 1, 365, &d) != APR_SUCCESS) {
        return usage("--days must be an integer from 1 to 365");
    }
    spec->days = (int)d;
    spec->name = name ? name : "svcctl";
    if (strlen(spec->name) < 1 || strlen(spec->name) > 100) {
        return usage("--name must be 1 to 100 characters");
    }
    if (org && !svc_slug_valid(org)) {
        return usage("--org must be an organization slug");
    }
    if ((rc = load_secret(cli)) != 0 || (rc = connect_db(cli)) != 0
        || (rc = need_user(cli, email, &spec->user_id)) != 0) {
        return rc;
    }
    if (org) {
        svc_orgref_t *ref;
        rv = svc_org_membership(cli->db, cli->pool, org, spec->user_id, &ref);
        if (rv == SVC_ENOTFOUND) {
            return fail(org, "no such organization, or the user is not a member");
        }
        if (rv != APR_SUCCESS) {
            return fail(org, explain(cli, rv));
        }
        spec->org_id = ref->id;
    }
    a.conf = &cli->conf;
    operator_actor(&a.actor);
    rv = svc_db_tx(cli->db, cli->pool, token_create_tx, &a);
    if (rv != APR_SUCCESS) {
        return fail("token create", explain(cli, rv));
    }
    printf("%s\n", a.secret);
    return 0;
}

/* The value of a JSON string member, or "-" when it is null. */
static const char *member(json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));

    return v ? v : "-";
}

/*
 * What the API shows the user themselves (GET /api/me/tokens), for the
 * operator who must find the token to revoke: never a secret.
 */
static int cmd_token_list(cli_t *cli)
{
    const char *email, *user_id, *text;
    json_t *all, *t;
    size_t i;
    apr_status_t rv;
    int rc;

    if (cli->argc < 1 || cli->argv[0][0] == '-' || cli->argc > 2
        || (cli->argc == 2 && strcmp(cli->argv[1], "--json") != 0)) {
        return usage("token list needs an EMAIL, and takes only --json");
    }
    email = cli->argv[0];
    if ((rc = connect_db(cli)) != 0 || (rc = need_user(cli, email, &user_id)) != 0) {
        return rc;
    }
    rv = svc_tokens_of(cli->db, cli->pool, user_id, &text);
    if (rv != APR_SUCCESS) {
        return fail("token list", explain(cli, rv));
    }
    if (cli->argc == 2) {
        printf("%s\n", text);
        return 0;
    }
    all = svc_json_pool(cli->pool, json_loads(text, 0, NULL));
    printf("%-26s %-8s %-7s %-6s %-20s %-20s %-20s %s\n", "ID", "STATUS", "SCOPE", "ORG",
           "CREATED", "EXPIRES", "LAST USED", "NAME");
    json_array_foreach(all, i, t) {
        json_t *org = json_object_get(t, "org");
        printf("%-26s %-8s %-7s %-6s %-20s %-20s %-20s %s\n", member(t, "id"),
               member(t, "status"), member(t, "scope"),
               json_is_object(org) ? member(org, "slug") : "-", member(t, "created_at"),
               member(t, "expires_at"), member(t, "last_used_at"), member(t, "name"));
    }
    return 0;
}

typedef struct {
    const char *id;
    svc_actor_t actor;
    int revoked;                    /* out */
} token_revoke_t;

static apr_status_t token_revoke_tx(svc_db_t *db, apr_pool_t *p, void *baton)
{
    token_revoke_t *a = baton;

    return svc_token_revoke(db, p, &a->actor, a->id, NULL, NULL, &a->revoked);
}

/* Revocation by an operator: of whoever's token, audit-logged as theirs. */
static int cmd_token_revoke(cli_t *cli)
{
    const char *id;
    token_revoke_t a;
    apr_status_t rv;
    apr_size_t n;
    int rc;

    if (cli->argc != 1 || cli->argv[0][0] == '-') {
        return usage("token revoke needs exactly one token ID (tok_...)");
    }
    id = cli->argv[0];
    n = strlen(id);
    if (n < 5 || n > 64 || strncmp(id, "tok_", 4) != 0
        || strspn(id + 4, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
           != n - 4) {
        return usage("ID must be a token id (tok_ and letters and digits), as `token list` "
                     "shows it");
    }
    if ((rc = connect_db(cli)) != 0) {
        return rc;
    }
    a.id = id;
    operator_actor(&a.actor);
    rv = svc_db_tx(cli->db, cli->pool, token_revoke_tx, &a);
    if (rv == SVC_ENOTFOUND) {
        return fail(id, "no such token");
    }
    if (rv != APR_SUCCESS) {
        return fail("token revoke", explain(cli, rv));
    }
    printf("%s %s\n", id, a.revoked ? "revoked" : "was revoked already");
    return 0;
}

typedef struct {
    const svc_config_t *conf;
    const char *user_id;
    const char *cookie;             /* out */
} session_create_t;

static apr_status_t session_create_tx(svc_db_t *db, apr_pool_t *p, void *baton)
{
    session_create_t *a = baton;
    const char *sid;

    return svc_session_create(db, p, a->conf, a->user_id, NULL, "svcctl/" SVC_VERSION,
                              &a->cookie, &sid);
}

static int cmd_session_create(cli_t *cli)
{
    const char *email;
    session_create_t a;
    apr_status_t rv;
    int rc;

    if (cli->argc != 1 || cli->argv[0][0] == '-') {
        return usage("session create needs exactly one EMAIL");
    }
    email = cli->argv[0];
    if ((rc = load_secret(cli)) != 0 || (rc = connect_db(cli)) != 0
        || (rc = need_user(cli, email, &a.user_id)) != 0) {
        return rc;
    }
    a.conf = &cli->conf;
    rv = svc_db_tx(cli->db, cli->pool, session_create_tx, &a);
    if (rv != APR_SUCCESS) {
        return fail("session create", explain(cli, rv));
    }
    printf("%s\n", a.cookie);
    return 0;
}

static const char *auth_name(svc_auth_e a)
{
    switch (a) {
    case SVC_AUTH_NONE: return "none";
    case SVC_AUTH_USER: return "user";
    case SVC_AUTH_INTERNAL: return "internal";
    case SVC_AUTH_SHARE: return "share";
    case SVC_AUTH_WEBHOOK: return "webhook";
    case SVC_AUTH_AGENT: return "agent";
    }
    return "?";
}

static const char *field_type_name(svc_ftype_e t)
{
    switch (t) {
    case SVC_FT_STRING: return "string";
    case SVC_FT_INT: return "int";
    case SVC_FT_BOOL: return "bool";
    case SVC_FT_ENUM: return "enum";
    case SVC_FT_SLUG: return "slug";
    case SVC_FT_EMAIL: return "email";
    case SVC_FT_ID: return "id";
    case SVC_FT_OBJECT: return "object";
    case SVC_FT_TEXT: return "text";
    case SVC_FT_INTS: return "ints";
    }
    return "?";
}

static int cmd_vcs_app_check(cli_t *cli)
{
    svc_vcs_refs_t refs;
    const char *err = NULL, *report = NULL, *api = getenv("VCS_API_URL");
    apr_status_t rv;

    memset(&refs, 0, sizeof(refs));
    if (cli->argc == 2 && strcmp(cli->argv[0], "--credentials") == 0) {
        refs.credentials = cli->argv[1];
    }
    else if (cli->argc != 0) {
        return usage("vcs-app check takes only --credentials FILE");
    }
    if (api && *api && (err = svc_signin_check_base_url(cli->pool, api,
                                                         &cli->conf.vcs_api_url)) != NULL) {
        return fail("VCS_API_URL", err);
    }
    if (svc_http_global_init() != APR_SUCCESS) {
        return fail("vcs-app check", "libcurl failed to initialise");
    }
    rv = svc_vcs_configure(&cli->conf, &refs, cli->pool, &err);
    if (rv == APR_SUCCESS) {
        rv = svc_vcs_check(cli->pool, &cli->conf, &report);
    }
    svc_http_global_cleanup();
    if (rv != APR_SUCCESS) {
        return fail("vcs-app check", err ? err : report);
    }
    printf("%s\n", report);
    return 0;
}

/* The document the module serves, from the same table; with --server, that
 * base URL in its servers list (the module's is SvcPublicURL, or "/"). */
static int cmd_openapi(cli_t *cli)
{
    const char *server = NULL, *err = NULL;
    json_t *doc;
    char *out;

    if (cli->argc == 2 && strcmp(cli->argv[0], "--server") == 0) {
        server = cli->argv[1];
    }
    else if (cli->argc != 0) {
        return usage("openapi takes only --server URL");
    }
    doc = svc_openapi_build_checked(cli->pool, svc_areas, server, &err);
    if (err) {
        json_decref(doc);
        return fail("openapi", err);
    }
    out = json_dumps(doc, JSON_INDENT(2));
    json_decref(doc);
    if (!out) {
        return fail("openapi", "out of memory");
    }
    printf("%s\n", out);
    free(out);
    return 0;
}

static int cmd_routes(cli_t *cli)
{
    const svc_route_t *table = svc_route_table(cli->pool, svc_areas), *r;
    json_t *all;
    char *out;

    if (cli->argc > 1 || (cli->argc == 1 && strcmp(cli->argv[0], "--json") != 0)) {
        return usage("routes takes only --json");
    }
    if (cli->argc == 0) {
        for (r = table; r->method; r++) {
            printf("%-7s %-60s %-8s %-6s %-7s %s\n", r->method, r->path, auth_name(r->auth),
                   svc_scope_name(r->scope),
                   svc_route_is_tenant(r) ? svc_role_name(r->role) : "-",
                   svc_route_is_project(r) ? svc_prole_name(r->prole) : "-");
        }
        return 0;
    }
    all = json_array();
    for (r = table; r->method; r++) {
        json_t *fields = json_array();
        const svc_field_t *f;
        for (f = r->body; f && f->name; f++) {
            json_t *values = json_array();
            const char *const *v;
            for (v = f->values; v && *v; v++) {
                json_array_append_new(values, json_string(*v));
            }
            /* Enough for a test to build a valid body (the conformance tests do). */
            json_array_append_new(fields, json_pack("{s:s,s:b,s:s,s:o,s:I,s:I}", "name", f->name,
                                                    "required", f->required,
                                                    "type", field_type_name(f->type),
                                                    "values", values, "min", (json_int_t)f->min,
                                                    "max", (json_int_t)f->max));
        }
        json_array_append_new(
            all, json_pack("{s:s,s:s,s:s,s:s,s:s,s:b,s:b,s:s,s:o,s:s?,s:b,s:b,s:b,s:b,s:b,s:i,s:s}",
                           "method", r->method, "path", r->path, "auth", auth_name(r->auth),
                           "scope", svc_scope_name(r->scope), "role", svc_role_name(r->role),
                           "tenant", svc_route_is_tenant(r),
                           "project", svc_route_is_project(r),
                           "prole", svc_prole_name(r->prole), "body",
                           r->body ? fields : json_null(), "rate_class", r->rate_class,
                           "hidden", (r->flags & SVC_RF_HIDDEN) != 0,
                           "founder", (r->flags & SVC_RF_FOUNDER) != 0,
                           "paged", (r->flags & SVC_RF_PAGED) != 0,
                           "session_only", (r->flags & SVC_RF_SESSION) != 0,
                           "stream", (r->flags & SVC_RF_STREAM) != 0,
                           "success", svc_route_success(r), "op_id", r->op_id));
        json_object_set_new(json_array_get(all, json_array_size(all) - 1), "response",
                            r->response ? json_string(r->response->name) : json_null());
        if (!r->body) {
            json_decref(fields);
        }
    }
    out = json_dumps(all, JSON_INDENT(1));
    printf("%s\n", out);
    free(out);
    json_decref(all);
    return 0;
}

static int cmd_user_suspend(cli_t *cli)
{
    return cmd_suspend(cli, SVC_SUSPEND_USER, 1);
}

static int cmd_user_unsuspend(cli_t *cli)
{
    return cmd_suspend(cli, SVC_SUSPEND_USER, 0);
}

static int cmd_org_suspend(cli_t *cli)
{
    return cmd_suspend(cli, SVC_SUSPEND_ORG, 1);
}

static int cmd_org_unsuspend(cli_t *cli)
{
    return cmd_suspend(cli, SVC_SUSPEND_ORG, 0);
}

/* The commands: a noun, and a verb after it unless verb is NULL; what
 * follows them is the command's (cli->argv). */
typedef struct {
    const char *noun, *verb;
    int (*run)(cli_t *cli);
} command_t;

static const command_t commands[] = {
    { .noun = "migrate", .run = cmd_migrate },
    { .noun = "schema-version", .run = cmd_schema_version },
    { .noun = "user", .verb = "add", .run = cmd_user_add },
    { .noun = "user", .verb = "allow-email-link", .run = cmd_user_allow_email_link },
    { .noun = "user", .verb = "suspend", .run = cmd_user_suspend },
    { .noun = "user", .verb = "unsuspend", .run = cmd_user_unsuspend },
    { .noun = "org", .verb = "create", .run = cmd_org_create },
    { .noun = "org", .verb = "list", .run = cmd_org_list },
    { .noun = "org", .verb = "add-member", .run = cmd_org_add_member },
    { .noun = "org", .verb = "suspend", .run = cmd_org_suspend },
    { .noun = "org", .verb = "unsuspend", .run = cmd_org_unsuspend },
    { .noun = "audit", .verb = "verify", .run = cmd_audit_verify },
    { .noun = "token", .verb = "create", .run = cmd_token_create },
    { .noun = "token", .verb = "list", .run = cmd_token_list },
    { .noun = "token", .verb = "revoke", .run = cmd_token_revoke },
    { .noun = "session", .verb = "create", .run = cmd_session_create },
    { .noun = "vcs-app", .verb = "check", .run = cmd_vcs_app_check },
    { .noun = "routes", .run = cmd_routes },
    { .noun = "openapi", .run = cmd_openapi },
    { .noun = NULL }
};

int main(int argc, const char *const *argv)
{
    const command_t *c;
    cli_t cli;
    char *env;
    int i = 1, rc;

    apr_app_initialize(&argc, &argv, NULL);
    memset(&cli, 0, sizeof(cli));
    apr_pool_create(&cli.pool, NULL);
    svc_config_defaults(&cli.conf, cli.pool);
    svc_config_default_rates(&cli.conf, cli.pool);
    svc_areas_configure(&cli.conf);
    if (svc_crypto_init() != APR_SUCCESS) {
        return fail("start", "libsodium failed to initialise");
    }
    if (apr_env_get(&env, "SVC_DB", cli.pool) == APR_SUCCESS) {
        cli.conninfo = env;
    }
    if (apr_env_get(&env, "SVC_SECRET", cli.pool) == APR_SUCCESS) {
        cli.secret_ref = env;
    }
    while (i < argc && argv[i][0] == '-') {
        if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) {
            cli.conninfo = argv[i + 1];
            i += 2;
        }
        else if (strcmp(argv[i], "--secret") == 0 && i + 1 < argc) {
            cli.secret_ref = argv[i + 1];
            i += 2;
        }
        else if (strcmp(argv[i], "--version") == 0) {
            printf("svcctl %s\n", SVC_VERSION);
            return 0;
        }
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        else {
            return usage(apr_psprintf(cli.pool, "unknown option %s", argv[i]));
        }
    }
    if (i >= argc) {
        return usage(NULL);
    }
    for (c = commands; c->noun; c++) {
        int words = c->verb ? 2 : 1;

        if (strcmp(argv[i], c->noun) == 0
            && (!c->verb || (i + 1 < argc && strcmp(argv[i + 1], c->verb) == 0))) {
            cli.argc = argc - i - words;
            cli.argv = (const char **)argv + i + words;
            break;
        }
    }
    rc = c->noun ? c->run(&cli)
                 : usage(apr_psprintf(cli.pool, "unknown command: %s", argv[i]));
    apr_pool_destroy(cli.pool);
    apr_terminate();
    return rc;
}
