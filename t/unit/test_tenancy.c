/*
 * test_tenancy.c: the pure parts of tenancy: project role names,
 * RFC 3339 parsing for audit filters, and the route table's project rows.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"
#include "svc_areas.h"

#include "svc_json.h"
#include "svc_projects.h"
#include "svc_route.h"

SVC_TEST(prole_names)
{
    SVC_CHECK_STR(svc_prole_name(SVC_PROLE_DEVELOPER), "developer");
    SVC_CHECK_INT(svc_prole_parse("maintainer"), SVC_PROLE_MAINTAINER);
    SVC_CHECK_INT(svc_prole_parse("owner"), SVC_PROLE_NONE);
    SVC_CHECK_INT(svc_prole_parse(NULL), SVC_PROLE_NONE);
}

SVC_TEST(rfc3339_accepts)
{
    apr_int64_t t = -1;

    SVC_CHECK(svc_parse_rfc3339("1970-01-01T00:00:00Z", &t) == APR_SUCCESS);
    SVC_CHECK_INT(t, 0);
    SVC_CHECK(svc_parse_rfc3339("2026-11-25T21:54:14Z", &t) == APR_SUCCESS);
    SVC_CHECK_INT(t, 1795643654);
    SVC_CHECK(svc_parse_rfc3339("2026-11-25T22:54:14+01:00", &t) == APR_SUCCESS);
    SVC_CHECK_INT(t, 1795643654);
    SVC_CHECK(svc_parse_rfc3339("2026-11-25t21:54:14.123456z", &t) == APR_SUCCESS);
    SVC_CHECK_INT(t, 1795643654);
    SVC_CHECK(svc_parse_rfc3339("2024-02-29T00:00:00-05:30", NULL) == APR_SUCCESS);
    SVC_CHECK(svc_parse_rfc3339("2000-02-29T23:59:59Z", NULL) == APR_SUCCESS);
}

SVC_TEST(rfc3339_refuses)
{
    static const char *const bad[] = {
        "", "2026-11-25", "2026-11-25T21:54:14", "2026-11-25 21:54:14Z",
        "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-02-29T00:00:00Z",
        "1900-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-01-01T24:00:00Z",
        "2026-01-01T00:60:00Z", "2026-01-01T00:00:60Z", "0000-01-01T00:00:00Z",
        "2026-01-01T00:00:00.Z", "2026-01-01T00:00:00+01", "2026-01-01T00:00:00+0100",
        "2026-01-01T00:00:00+24:00", "2026-01-01T00:00:00Zjunk", "+2026-01-01T00:00:00Z",
        "2026-1-01T00:00:00Z", "2026-01-01T00:00:00.1234567890Z", "yesterday",
        "2026-01-01T00:00:00+01:", NULL
    };
    int i;

    for (i = 0; bad[i]; i++) {
        if (svc_parse_rfc3339(bad[i], NULL) != APR_EINVAL) {
            fprintf(stderr, "accepted: \"%s\"\n", bad[i]);
            SVC_CHECK(0);
        }
    }
    SVC_CHECK(svc_parse_rfc3339(NULL, NULL) == APR_EINVAL);
}

/*
 * Offsets are applied in C (PostgreSQL refuses those beyond 15:59, RFC 3339
 * allows up to 23:59), the fraction is kept to the microsecond, and the
 * normalised form is what SQL gets: a time in UTC between years 1 and 9999.
 */
SVC_TEST(rfc3339_normalised_to_utc)
{
    static const struct {
        const char *in;
        const char *utc;
    } vec[] = {
        { "2026-01-01T00:00:00+16:00", "2025-12-31T08:00:00.000000Z" },
        { "2026-01-01T00:00:00-23:59", "2026-01-01T23:59:00.000000Z" },
        { "2026-01-01T00:00:00+23:59", "2025-12-31T00:01:00.000000Z" },
        { "2026-11-25t21:54:14.5z", "2026-11-25T21:54:14.500000Z" },
        { "2026-11-25T21:54:14.123456789Z", "2026-11-25T21:54:14.123456Z" },
        { "1970-01-01T00:00:00.000001+00:01", "1969-12-31T23:59:00.000001Z" },
        { "0001-01-01T00:00:00-01:00", "0001-01-01T01:00:00.000000Z" },
        { "9999-12-31T23:59:59.999999+01:00", "9999-12-31T22:59:59.999999Z" },
    };
    char buf[SVC_RFC3339_USEC_LEN + 1];
    apr_time_t t;
    size_t i;

    for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
        SVC_CHECK(svc_parse_rfc3339_usec(vec[i].in, &t) == APR_SUCCESS);
        SVC_CHECK(svc_format_rfc3339_usec(buf, t) == APR_SUCCESS);
        SVC_CHECK_STR(buf, vec[i].utc);
    }
    /* Valid RFC 3339, but the offset takes it out of years 1 to 9999. */
    SVC_CHECK(svc_parse_rfc3339_usec("0001-01-01T00:00:00+00:01", &t) == APR_SUCCESS);
    SVC_CHECK(svc_format_rfc3339_usec(buf, t) == APR_EINVAL);
    SVC_CHECK(svc_parse_rfc3339_usec("9999-12-31T23:59:59-00:01", &t) == APR_SUCCESS);
    SVC_CHECK(svc_format_rfc3339_usec(buf, t) == APR_EINVAL);
    SVC_CHECK(svc_parse_rfc3339_usec("2026-01-01T00:00:00+24:00", &t) == APR_EINVAL);
    SVC_CHECK(svc_parse_rfc3339_usec("2026-01-01T00:00:00+16:60", &t) == APR_EINVAL);
    /* The seconds reader agrees, flooring. */
    SVC_CHECK(svc_parse_rfc3339_usec("1969-12-31T23:59:59.5Z", &t) == APR_SUCCESS);
    SVC_CHECK_INT(t, -500000);
}

/* Every route under /projects/:projectSlug names its least project role,
 * and no other route names one (svc_router_create refuses either slip). */
SVC_TEST(project_routes_name_a_project_role)
{
    const svc_route_t *r;
    svc_router_t *rt;
    int projects = 0;

    for (r = svc_route_table(p, svc_areas); r->method; r++) {
        if (svc_route_is_project(r)) {
            projects++;
            SVC_CHECK(r->prole >= SVC_PROLE_VIEWER);
            SVC_CHECK(svc_route_is_tenant(r));
            SVC_CHECK(r->role >= SVC_ROLE_VIEWER);
        }
        else {
            SVC_CHECK_INT(r->prole, SVC_PROLE_NONE);
        }
        if (svc_route_is_tenant(r)) {
            SVC_CHECK(r->role >= SVC_ROLE_VIEWER);
        }
    }
    SVC_CHECK(projects > 0);
    SVC_CHECK(svc_router_create(&rt, svc_route_table(p, svc_areas), p) == APR_SUCCESS);
}

SVC_TEST(router_refuses_project_route_without_role)
{
    static const svc_route_t bad[] = {
        { .method = "GET", .path = "/api/orgs/:orgSlug/projects/:projectSlug/x",
          .handler = svc_h_projects_get, .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER },
        SVC_ROUTE_END
    };
    static const svc_route_t stray[] = {
        { .method = "GET", .path = "/api/orgs/:orgSlug/x", .handler = svc_h_projects_get,
          .scope = SVC_SCOPE_READ, .role = SVC_ROLE_VIEWER, .prole = SVC_PROLE_VIEWER },
        SVC_ROUTE_END
    };
    svc_router_t *rt;

    SVC_CHECK(svc_router_create(&rt, bad, p) == APR_EINVAL);
    SVC_CHECK(svc_router_create(&rt, stray, p) == APR_EINVAL);
    /* "/projects/:projectSlugs" is another parameter, not a project route. */
    SVC_CHECK(!svc_route_is_project(&(svc_route_t){ .path = "/api/orgs/:orgSlug/projects" }));
}

/*
 * A row that leaves out who may call it takes a signed-in user (it fails
 * closed), and a change it leaves the scope of unsaid is refused at start
 * rather than served to read tokens.
 */
SVC_TEST(route_rows_default_to_signed_in_callers)
{
    static const svc_route_t unsaid[] = {
        { .method = "POST", .path = "/api/me/x", .handler = svc_h_projects_get },
        SVC_ROUTE_END
    };
    static const svc_route_t read[] = {
        { .method = "GET", .path = "/api/me/x", .handler = svc_h_projects_get,
          .scope = SVC_SCOPE_READ },
        SVC_ROUTE_END
    };
    static const svc_route_t public_[] = {
        { .method = "GET", .path = "/api/x", .handler = svc_h_projects_get,
          .auth = SVC_AUTH_NONE },
        SVC_ROUTE_END
    };
    svc_router_t *rt;

    SVC_CHECK(read[0].auth == SVC_AUTH_USER && unsaid[0].auth == SVC_AUTH_USER);
    SVC_CHECK(svc_route_success(&read[0]) == 200);
    SVC_CHECK(svc_router_create(&rt, unsaid, p) == APR_EINVAL);
    SVC_CHECK(svc_router_create(&rt, read, p) == APR_SUCCESS);
    SVC_CHECK(svc_router_create(&rt, public_, p) == APR_SUCCESS);
}

int main(int argc, const char *const *argv)
{
    return svc_test_run(argc, argv);
}
