/*
 * test_kernel_route.c: kernel/svc_route.c and kernel/svc_openapi.c: the
 * router (specificity, methods, refusing bad tables, every real route
 * reachable), the route table made of the areas, and the OpenAPI document
 * that describes it.
 *
 * Every expectation is independent of the code under test: published
 * vectors, values computed by hand or with another implementation (noted
 * where used), or inputs the test builds byte by byte itself.
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_areas.h"
#include "svc_config.h"
#include "svc_crypto.h"
#include "svc_ctx.h"
#include "svc_json.h"
#include "svc_openapi.h"
#include "svc_route.h"

#include <apr_hash.h>
#include <apr_lib.h>

/* ---------------------------------------------------------------------- */
/* Router                                                                  */

static apr_status_t h_dummy(svc_ctx_t *ctx)
{
    (void)ctx;
    return APR_SUCCESS;
}

#define ROW(m_, path_, auth_, scope_) \
    { .method = m_, .path = path_, .handler = h_dummy, .auth = auth_, .scope = scope_ }
#define ROW_END SVC_ROUTE_END

/* Parameter templates first... */
static const svc_route_t table_a[] = {
    ROW("GET", "/api/items", SVC_AUTH_NONE, SVC_SCOPE_NONE),
    ROW("POST", "/api/items", SVC_AUTH_USER, SVC_SCOPE_WRITE),
    ROW("GET", "/api/items/:id", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("DELETE", "/api/items/:id", SVC_AUTH_USER, SVC_SCOPE_WRITE),
    ROW("GET", "/api/items/new", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("GET", "/api/orgs/:orgSlug/items/:id", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("PATCH", "/api/orgs/:orgSlug/items/:id", SVC_AUTH_USER, SVC_SCOPE_WRITE),
    ROW("GET", "/api/orgs/:orgSlug/items/latest", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("GET", "/api/:a/:b/:c/:d/:e/:f/:g/:h/:i/:j/:k/:l/:m/:n/:o", SVC_AUTH_NONE,
        SVC_SCOPE_NONE),
    ROW_END
};
/* ...and the same rows with the literal templates first. */
static const svc_route_t table_b[] = {
    ROW("GET", "/api/:a/:b/:c/:d/:e/:f/:g/:h/:i/:j/:k/:l/:m/:n/:o", SVC_AUTH_NONE,
        SVC_SCOPE_NONE),
    ROW("GET", "/api/orgs/:orgSlug/items/latest", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("PATCH", "/api/orgs/:orgSlug/items/:id", SVC_AUTH_USER, SVC_SCOPE_WRITE),
    ROW("GET", "/api/orgs/:orgSlug/items/:id", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("GET", "/api/items/new", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("DELETE", "/api/items/:id", SVC_AUTH_USER, SVC_SCOPE_WRITE),
    ROW("GET", "/api/items/:id", SVC_AUTH_USER, SVC_SCOPE_READ),
    ROW("POST", "/api/items", SVC_AUTH_USER, SVC_SCOPE_WRITE),
    ROW("GET", "/api/items", SVC_AUTH_NONE, SVC_SCOPE_NONE),
    ROW_END
};

/* The row of `table` with this method and path. */
static const svc_route_t *row_of(const svc_route_t *table, const char *method, const char *path)
{
    for (; table->method; table++) {
        if (strcmp(table->method, method) == 0 && strcmp(table->path, path) == 0) {
            return table;
        }
    }
    return NULL;
}

typedef struct {
    const svc_route_t *route;
    const char *allow;
    apr_table_t *params;
} match_t;

static match_t do_match(apr_pool_t *p, const svc_router_t *rt, const char *method,
                        const char *path)
{
    match_t m;

    m.params = apr_table_make(p, 4);
    m.allow = "(unset)";
    m.route = svc_router_match(rt, method, path, p, m.params, &m.allow);
    return m;
}

static void check_table(apr_pool_t *p, const svc_route_t *t)
{
    svc_router_t *rt = NULL;
    match_t m;
    char *path;
    int i;

    SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_SUCCESS);
    if (!rt) {
        return;
    }
    /* Literal beats parameter at the same position. */
    m = do_match(p, rt, "GET", "/api/items/new");
    SVC_CHECK(m.route == row_of(t, "GET", "/api/items/new"));
    SVC_CHECK(m.allow == NULL);
    SVC_CHECK(apr_table_get(m.params, "id") == NULL);
    m = do_match(p, rt, "GET", "/api/items/it_42");
    SVC_CHECK(m.route == row_of(t, "GET", "/api/items/:id"));
    SVC_CHECK_STR(apr_table_get(m.params, "id"), "it_42");
    m = do_match(p, rt, "GET", "/api/orgs/acme/items/latest");
    SVC_CHECK(m.route == row_of(t, "GET", "/api/orgs/:orgSlug/items/latest"));
    SVC_CHECK_STR(apr_table_get(m.params, "orgSlug"), "acme");
    m = do_match(p, rt, "GET", "/api/orgs/acme/items/x1");
    SVC_CHECK(m.route == row_of(t, "GET", "/api/orgs/:orgSlug/items/:id"));
    SVC_CHECK_STR(apr_table_get(m.params, "orgSlug"), "acme");
    SVC_CHECK_STR(apr_table_get(m.params, "id"), "x1");
    m = do_match(p, rt, "PATCH", "/api/orgs/acme/items/x1");
    SVC_CHECK(m.route == row_of(t, "PATCH", "/api/orgs/:orgSlug/items/:id"));
    m = do_match(p, rt, "DELETE", "/api/items/it_42");
    SVC_CHECK(m.route == row_of(t, "DELETE", "/api/items/:id"));
    /* HEAD is GET. */
    m = do_match(p, rt, "HEAD", "/api/items");
    SVC_CHECK(m.route == row_of(t, "GET", "/api/items"));
    m = do_match(p, rt, "HEAD", "/api/items/it_1");
    SVC_CHECK(m.route == row_of(t, "GET", "/api/items/:id"));
    SVC_CHECK_STR(apr_table_get(m.params, "id"), "it_1");
    /* Unknown paths: no route and no Allow. */
    static const char *const unknown[] = {
        "/api/nothing", "/api/items/", "/api//items", "//api/items", "/api/items//x",
        "api/items", "", "/", "/api/items/a/b", "/API/items", "/api/items/new/"
    };
    for (i = 0; i < (int)(sizeof(unknown) / sizeof(unknown[0])); i++) {
        m = do_match(p, rt, "GET", unknown[i]);
        if (m.route || m.allow) {
            fprintf(stderr, "%s:%d: path \"%s\" matched or has Allow\n", __FILE__, __LINE__,
                    unknown[i]);
            svc_test_failed_checks++;
        }
    }
    /* A parameter of 200 characters matches, 201 does not. */
    m = do_match(p, rt, "GET", apr_pstrcat(p, "/api/items/", repeat(p, 'a', 200), NULL));
    SVC_CHECK(m.route == row_of(t, "GET", "/api/items/:id"));
    m = do_match(p, rt, "GET", apr_pstrcat(p, "/api/items/", repeat(p, 'a', 201), NULL));
    SVC_CHECK(m.route == NULL && m.allow == NULL);
    /* Sixteen segments is the most: the 16-parameter template matches... */
    path = apr_pstrdup(p, "/api");
    for (i = 0; i < 15; i++) {
        path = apr_pstrcat(p, path, "/s", apr_itoa(p, i), NULL);
    }
    m = do_match(p, rt, "GET", path);
    SVC_CHECK(m.route == row_of(t, "GET", "/api/:a/:b/:c/:d/:e/:f/:g/:h/:i/:j/:k/:l/:m/:n/:o"));
    SVC_CHECK_STR(apr_table_get(m.params, "o"), "s14");
    /* ...and one more segment is no match at all. */
    m = do_match(p, rt, "GET", apr_pstrcat(p, path, "/x", NULL));
    SVC_CHECK(m.route == NULL && m.allow == NULL);
    m = do_match(p, rt, "GET", apr_pstrcat(p, path, repeat(p, '/', 1), repeat(p, 'x', 1), "/y/z",
                                           NULL));
    SVC_CHECK(m.route == NULL && m.allow == NULL);
}

SVC_TEST(router_literal_beats_param_in_any_order)
{
    check_table(p, table_a);
    check_table(p, table_b);
}

SVC_TEST(router_method_not_allowed)
{
    svc_router_t *rt = NULL;
    match_t m;

    SVC_CHECK_INT(svc_router_create(&rt, table_a, p), APR_SUCCESS);
    if (!rt) {
        return;
    }
    /* The methods of the matching template, in table order, HEAD after GET. */
    m = do_match(p, rt, "PUT", "/api/items/it_1");
    SVC_CHECK(m.route == NULL);
    SVC_CHECK_STR(m.allow, "GET, HEAD, DELETE, OPTIONS");
    m = do_match(p, rt, "DELETE", "/api/items");
    SVC_CHECK(m.route == NULL);
    SVC_CHECK_STR(m.allow, "GET, HEAD, POST, OPTIONS");
    m = do_match(p, rt, "POST", "/api/orgs/acme/items/x");
    SVC_CHECK(m.route == NULL);
    SVC_CHECK_STR(m.allow, "GET, HEAD, PATCH, OPTIONS");
    /* The most specific template names the resource: /api/items/new has
     * GET only, even though DELETE /api/items/:id would match the path. */
    m = do_match(p, rt, "DELETE", "/api/items/new");
    SVC_CHECK(m.route == NULL);
    SVC_CHECK_STR(m.allow, "GET, HEAD, OPTIONS");
    /* Methods are case-sensitive tokens (RFC 9110). */
    m = do_match(p, rt, "get", "/api/items");
    SVC_CHECK(m.route == NULL);
    SVC_CHECK_STR(m.allow, "GET, HEAD, POST, OPTIONS");
}

SVC_TEST(router_create_refuses_bad_tables)
{
    static const char *const unsafe[] = { "POST", "PUT", "PATCH", "DELETE" };
    svc_router_t *rt;
    int i;

    for (i = 0; i < 4; i++) {
        svc_route_t t[2] = { ROW(unsafe[i], "/api/x", SVC_AUTH_USER, SVC_SCOPE_READ), ROW_END };
        svc_route_t t2[2] = { ROW(unsafe[i], "/api/x", SVC_AUTH_USER, SVC_SCOPE_NONE), ROW_END };
        svc_route_t ok[2] = { ROW(unsafe[i], "/api/x", SVC_AUTH_USER, SVC_SCOPE_WRITE), ROW_END };
        svc_route_t ok2[2] = { ROW(unsafe[i], "/api/x", SVC_AUTH_USER, SVC_SCOPE_ADMIN), ROW_END };
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_EINVAL);
        SVC_CHECK_INT(svc_router_create(&rt, t2, p), APR_EINVAL);
        SVC_CHECK_INT(svc_router_create(&rt, ok, p), APR_SUCCESS);
        SVC_CHECK_INT(svc_router_create(&rt, ok2, p), APR_SUCCESS);
    }
    {
        /* TRACE would echo credentials and CONNECT is a proxy's: never routes. */
        svc_route_t t[2] = { ROW("TRACE", "/api/x", SVC_AUTH_NONE, SVC_SCOPE_NONE), ROW_END };
        svc_route_t t2[2] = { ROW("CONNECT", "/api/x", SVC_AUTH_NONE, SVC_SCOPE_NONE), ROW_END };
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_EINVAL);
        SVC_CHECK_INT(svc_router_create(&rt, t2, p), APR_EINVAL);
    }
    {
        /* Safe methods may be read-scoped; unauthenticated routes have no scope. */
        svc_route_t t[4] = {
            ROW("GET", "/api/x", SVC_AUTH_USER, SVC_SCOPE_READ),
            ROW("POST", "/api/login", SVC_AUTH_NONE, SVC_SCOPE_NONE),
            ROW("POST", "/webhooks/vcs", SVC_AUTH_WEBHOOK, SVC_SCOPE_NONE),
            ROW_END
        };
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_SUCCESS);
    }
    {
        /* A raw body is the handler's to read: a schema on it would never apply. */
        static const svc_field_t schema[] = { SVC_FIELD_END };
        svc_route_t t[2] = { ROW("POST", "/webhooks/vcs", SVC_AUTH_WEBHOOK, SVC_SCOPE_NONE),
                             ROW_END };
        t[0].flags = SVC_RF_RAW_BODY;
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_SUCCESS);
        t[0].body = schema;
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_EINVAL);
    }
    {
        svc_route_t t[4] = {
            ROW("GET", "/api/x/:id", SVC_AUTH_USER, SVC_SCOPE_READ),
            ROW("DELETE", "/api/x/:id", SVC_AUTH_USER, SVC_SCOPE_WRITE),
            ROW("GET", "/api/x/:id", SVC_AUTH_USER, SVC_SCOPE_ADMIN),
            ROW_END
        };
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_EINVAL);
    }
    {
        svc_route_t t[2] = { ROW("GET", "api/x", SVC_AUTH_NONE, SVC_SCOPE_NONE), ROW_END };
        svc_route_t t2[2] = { ROW("GET", "/api/x/", SVC_AUTH_NONE, SVC_SCOPE_NONE), ROW_END };
        svc_route_t t3[2] = { ROW("GET", "/api/x", SVC_AUTH_NONE, SVC_SCOPE_NONE), ROW_END };
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_EINVAL);
        SVC_CHECK_INT(svc_router_create(&rt, t2, p), APR_EINVAL);
        t3[0].handler = NULL;
        SVC_CHECK_INT(svc_router_create(&rt, t3, p), APR_EINVAL);
    }
    {
        svc_route_t t[2] = {
            ROW("GET", "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q", SVC_AUTH_NONE, SVC_SCOPE_NONE),
            ROW_END
        };
        SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_EINVAL);
    }
    /* The real table is sound. */
    SVC_CHECK_INT(svc_router_create(&rt, svc_route_table(p, svc_areas), p), APR_SUCCESS);
}

/*
 * Six templates on which the specificity order of the router's sort is not
 * transitive (lengths differ, so some pairs are ordered by the literal-first
 * rule and others by path text); with glibc's qsort the literal /b/b/b then
 * sorts after /b/b/:p and loses to it.
 */
SVC_TEST(router_literal_beats_param_with_mixed_lengths)
{
    static const svc_route_t t[] = {
        ROW("GET", "/a/:p/:p", SVC_AUTH_NONE, SVC_SCOPE_NONE),
        ROW("GET", "/b/b/b", SVC_AUTH_NONE, SVC_SCOPE_NONE),
        ROW("GET", "/b", SVC_AUTH_NONE, SVC_SCOPE_NONE),
        ROW("GET", "/b/b/:p", SVC_AUTH_NONE, SVC_SCOPE_NONE),
        ROW("GET", "/:p/:p/b", SVC_AUTH_NONE, SVC_SCOPE_NONE),
        ROW("GET", "/:p/a", SVC_AUTH_NONE, SVC_SCOPE_NONE),
        ROW_END
    };
    svc_router_t *rt = NULL;
    match_t m;

    SVC_CHECK_INT(svc_router_create(&rt, t, p), APR_SUCCESS);
    if (!rt) {
        return;
    }
    m = do_match(p, rt, "GET", "/b/b/b");
    SVC_CHECK(m.route == &t[1]);
    m = do_match(p, rt, "GET", "/b/b/x");
    SVC_CHECK(m.route == &t[3]);
}

/*
 * The same property over many random tables: for every concrete path, the
 * route found is the one whose literal segments come first, position by
 * position (the expectation is computed here, not by the router).
 */
SVC_TEST(router_specificity_property)
{
    static const char *const segs[] = { "a", "b", ":p" };
    static const char *const words[] = { "a", "b", "x" };
    apr_uint32_t seed = 12345;
    int iter, failures = 0;

#define NEXT_RAND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
    for (iter = 0; iter < 5000 && failures < 3; iter++) {
        svc_route_t t[11];
        const char *paths[10];
        apr_pool_t *sub;
        svc_router_t *rt;
        int n = 0, i, len, c;

        apr_pool_create(&sub, p);
        memset(t, 0, sizeof(t));
        while (n < 10) {
            int k, segs_n = 1 + (int)(NEXT_RAND() % 3);
            const char *tp = "";
            for (k = 0; k < segs_n; k++) {
                tp = apr_pstrcat(sub, tp, "/", segs[NEXT_RAND() % 3], NULL);
            }
            for (i = 0; i < n && strcmp(paths[i], tp) != 0; i++) {
            }
            if (i < n) {
                continue;
            }
            paths[n] = tp;
            t[n].method = "GET";
            t[n].path = tp;
            t[n].handler = h_dummy;
            /* Public: a user route would have to name its scope. */
            t[n].auth = SVC_AUTH_NONE;
            n++;
        }
        if (svc_router_create(&rt, t, sub) != APR_SUCCESS) {
            SVC_CHECK(!"router refused a random table");
            apr_pool_destroy(sub);
            break;
        }
        for (len = 1; len <= 3; len++) {
            int total = len == 1 ? 3 : len == 2 ? 9 : 27;
            for (c = 0; c < total; c++) {
                const char *parts[3], *path = "";
                int best = -1, k, cc = c;
                unsigned bestmask = 0;
                match_t m;

                for (k = 0; k < len; k++) {
                    parts[k] = words[cc % 3];
                    cc /= 3;
                    path = apr_pstrcat(sub, path, "/", parts[k], NULL);
                }
                for (i = 0; i < n; i++) {
                    /* Walk the template: literal segments must equal the path's. */
                    const char *s = paths[i];
                    unsigned mask = 0;
                    int ok = 1;
                    k = 0;
                    while (*s == '/' && ok) {
                        apr_size_t sl = strcspn(s + 1, "/");
                        if (k >= len) {
                            ok = 0;
                        }
                        else if (s[1] == ':') {
                            mask |= 1u << (len - 1 - k);
                        }
                        else if (strlen(parts[k]) != sl || strncmp(s + 1, parts[k], sl) != 0) {
                            ok = 0;
                        }
                        k++;
                        s += 1 + sl;
                    }
                    if (ok && k == len && (best < 0 || mask < bestmask)) {
                        best = i;
                        bestmask = mask;
                    }
                }
                m = do_match(sub, rt, "GET", path);
                if (m.route != (best >= 0 ? &t[best] : NULL)) {
                    fprintf(stderr, "%s:%d: path %s matched %s, expected %s; table:", __FILE__,
                            __LINE__, path, m.route ? m.route->path : "(none)",
                            best >= 0 ? paths[best] : "(none)");
                    for (i = 0; i < n; i++) {
                        fprintf(stderr, " %s", paths[i]);
                    }
                    fprintf(stderr, "\n");
                    svc_test_failed_checks++;
                    failures++;
                    len = 4;
                    break;
                }
            }
        }
        apr_pool_destroy(sub);
    }
#undef NEXT_RAND
}

/* Every row of the real table is reachable: its own method and a concrete
 * path made from its template answer with that very row. */
SVC_TEST(router_reaches_every_real_route)
{
    const svc_route_t *table = svc_route_table(p, svc_areas), *r;
    svc_router_t *rt = NULL;

    SVC_CHECK_INT(svc_router_create(&rt, table, p), APR_SUCCESS);
    if (!rt) {
        return;
    }
    for (r = table; r->method; r++) {
        const char *s = r->path, *path = "";
        match_t m;

        while (*s) {
            apr_size_t n = strcspn(s + 1, "/");
            path = apr_pstrcat(p, path, "/",
                               s[1] == ':' ? "v9Zq" : apr_pstrmemdup(p, s + 1, n), NULL);
            s += 1 + n;
        }
        m = do_match(p, rt, r->method, path);
        if (m.route != r) {
            fprintf(stderr, "%s:%d: %s %s (as %s) matched %s %s\n", __FILE__, __LINE__,
                    r->method, r->path, path, m.route ? m.route->method : "-",
                    m.route ? m.route->path : "(none)");
            svc_test_failed_checks++;
        }
        if (strcmp(r->method, "GET") == 0) {
            m = do_match(p, rt, "HEAD", path);
            SVC_CHECK(m.route == r);
        }
    }
}

SVC_TEST(route_helpers)
{
    svc_route_t r = ROW("GET", "/api/orgs/:orgSlug", SVC_AUTH_USER, SVC_SCOPE_READ);

    SVC_CHECK(svc_route_is_tenant(&r));
    r.path = "/api/orgs/:orgSlug/members/:userId";
    SVC_CHECK(svc_route_is_tenant(&r));
    r.path = "/api/orgs/:orgSlugs";
    SVC_CHECK(!svc_route_is_tenant(&r));
    r.path = "/api/orgs";
    SVC_CHECK(!svc_route_is_tenant(&r));
    r.path = "/api/me";
    SVC_CHECK(!svc_route_is_tenant(&r));
    /* The web UI's paths of an org that the service answers itself. */
    r.path = "/orgs/:orgSlug/vcs/install";
    SVC_CHECK(svc_route_is_tenant(&r));
    r.path = "/orgs/:orgSlugs/vcs/install";
    SVC_CHECK(!svc_route_is_tenant(&r));
    r.path = "/xapi/orgs/:orgSlug";
    SVC_CHECK(!svc_route_is_tenant(&r));
    r.path = "/admin/vcs-app/setup";
    SVC_CHECK(!svc_route_is_tenant(&r));
    SVC_CHECK(svc_method_is_unsafe("POST"));
    SVC_CHECK(svc_method_is_unsafe("PUT"));
    SVC_CHECK(svc_method_is_unsafe("PATCH"));
    SVC_CHECK(svc_method_is_unsafe("DELETE"));
    SVC_CHECK(!svc_method_is_unsafe("GET"));
    SVC_CHECK(!svc_method_is_unsafe("HEAD"));
    SVC_CHECK(!svc_method_is_unsafe("OPTIONS"));
}

/* ---------------------------------------------------------------------- */
/* OpenAPI                                                                 */

/* "/a/:id/b" -> "/a/{id}/b", written independently of the code. */
static const char *oapi_path(apr_pool_t *p, const char *tmpl, apr_array_header_t *names)
{
    char *out = apr_palloc(p, strlen(tmpl) * 2 + 1), *o = out;
    const char *s = tmpl;

    while (*s) {
        if (*s == ':' && s > tmpl && s[-1] == '/') {
            const char *e = s + 1;
            while (*e && *e != '/') {
                e++;
            }
            *o++ = '{';
            memcpy(o, s + 1, (apr_size_t)(e - s - 1));
            o += e - s - 1;
            *o++ = '}';
            APR_ARRAY_PUSH(names, const char *) = apr_pstrmemdup(p, s + 1,
                                                                 (apr_size_t)(e - s - 1));
            s = e;
        }
        else {
            *o++ = *s++;
        }
    }
    *o = '\0';
    return out;
}

static const char *lower(apr_pool_t *p, const char *s)
{
    char *out = apr_pstrdup(p, s), *c;

    for (c = out; *c; c++) {
        *c = (char)apr_tolower(*c);
    }
    return out;
}

SVC_TEST(route_table_concatenates_the_areas)
{
    const svc_route_t *table = svc_route_table(p, svc_areas), *r, *t;
    const svc_area_t *const *a;
    int n = 0, rows = 0;

    for (a = svc_areas; *a; a++) {
        for (r = (*a)->routes; r->method; r++) {
            n++;
        }
    }
    SVC_CHECK(n > 0);
    t = table;
    for (a = svc_areas; *a; a++) {
        for (r = (*a)->routes; r->method; r++, t++) {
            SVC_CHECK(t->method && strcmp(t->method, r->method) == 0
                      && strcmp(t->path, r->path) == 0 && t->handler == r->handler);
            /* A row that names no tag has its area's in the table. */
            SVC_CHECK(t->tag && strcmp(t->tag, r->tag ? r->tag : (*a)->tags[0].name) == 0);
        }
    }
    for (r = table; r->method; r++) {
        rows++;
    }
    SVC_CHECK_INT(rows, n);
    SVC_CHECK(svc_route_table(p, NULL)->method == NULL);
}

/* Each visible operation's tag is listed once, in the group of its area,
 * and the groups follow the registry. */
SVC_TEST(openapi_groups_tags_by_area)
{
    json_t *doc = svc_openapi_build(p, svc_areas, NULL);
    json_t *groups = json_object_get(doc, "x-tagGroups");
    json_t *tags = json_object_get(doc, "tags");
    const svc_area_t *const *a;
    size_t g = 0, i, j;

    SVC_CHECK(json_is_array(groups) && json_is_array(tags));
    for (a = svc_areas; *a; a++) {
        const svc_route_t *r;
        int visible = 0;
        json_t *group;

        for (r = (*a)->routes; r->method; r++) {
            visible += !(r->flags & SVC_RF_HIDDEN);
        }
        if (!visible) {
            continue;
        }
        group = json_array_get(groups, g++);
        SVC_CHECK_STR(json_string_value(json_object_get(group, "name")), (*a)->name);
        for (r = (*a)->routes; r->method; r++) {
            int found = 0;
            if (r->flags & SVC_RF_HIDDEN) {
                continue;
            }
            for (i = 0; i < json_array_size(json_object_get(group, "tags")); i++) {
                found |= strcmp(json_string_value(json_array_get(
                                    json_object_get(group, "tags"), i)),
                                svc_route_tag(*a, r)) == 0;
            }
            SVC_CHECK(found);
        }
    }
    SVC_CHECK_INT((int)json_array_size(groups), (int)g);
    for (i = 0; i < json_array_size(tags); i++) {
        const char *name = json_string_value(json_object_get(json_array_get(tags, i), "name"));
        int in_groups = 0;
        for (g = 0; g < json_array_size(groups); g++) {
            json_t *gt = json_object_get(json_array_get(groups, g), "tags");
            for (j = 0; j < json_array_size(gt); j++) {
                in_groups += strcmp(json_string_value(json_array_get(gt, j)), name) == 0;
            }
        }
        SVC_CHECK_INT(in_groups, 1);
    }
    json_decref(doc);
}

SVC_TEST(openapi_covers_the_route_table)
{
    json_t *doc = svc_openapi_build(p, svc_areas, "https://svc.example");
    json_t *paths = json_object_get(doc, "paths");
    apr_hash_t *op_ids = apr_hash_make(p);
    const svc_route_t *r;
    int visible = 0, ops = 0;
    const char *k;
    json_t *item;

    SVC_CHECK_STR(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
    SVC_CHECK(json_is_object(json_object_get(doc, "info")));
    SVC_CHECK_STR(json_string_value(json_object_get(json_array_get(
                      json_object_get(doc, "servers"), 0), "url")), "https://svc.example");
    SVC_CHECK(json_is_object(paths));

    for (r = svc_route_table(p, svc_areas); r->method; r++) {
        apr_array_header_t *names = apr_array_make(p, 4, sizeof(const char *));
        const char *path = oapi_path(p, r->path, names);
        json_t *op = json_object_get(json_object_get(paths, path), lower(p, r->method));
        json_t *params, *prm;
        size_t i;
        int j;

        if (r->flags & SVC_RF_HIDDEN) {
            if (op) {
                fprintf(stderr, "hidden route %s %s is documented\n", r->method, r->path);
                svc_test_failed_checks++;
            }
            continue;
        }
        visible++;
        if (!json_is_object(op)) {
            fprintf(stderr, "route %s %s missing as %s %s\n", r->method, r->path,
                    lower(p, r->method), path);
            svc_test_failed_checks++;
            continue;
        }
        SVC_CHECK_STR(json_string_value(json_object_get(op, "operationId")), r->op_id);
        SVC_CHECK(r->op_id && !apr_hash_get(op_ids, r->op_id, APR_HASH_KEY_STRING));
        if (r->op_id) {
            apr_hash_set(op_ids, r->op_id, APR_HASH_KEY_STRING, r);
        }
        SVC_CHECK(json_is_object(json_object_get(json_object_get(op, "responses"),
                                                 apr_itoa(p, r->success ? r->success : 200))));
        /* Each path parameter is declared, in path, required. */
        params = json_object_get(op, "parameters");
        for (j = 0; j < names->nelts; j++) {
            const char *want = APR_ARRAY_IDX(names, j, const char *);
            int found = 0;
            json_array_foreach(params, i, prm) {
                /* Common ones ({orgSlug}) are components, referred to. */
                const char *ref = json_string_value(json_object_get(prm, "$ref"));
                if (ref && strncmp(ref, "#/components/parameters/", 24) == 0) {
                    prm = json_object_get(json_object_get(json_object_get(doc, "components"),
                                                          "parameters"), ref + 24);
                }
                if (json_is_object(prm) && json_string_value(json_object_get(prm, "name"))
                    && strcmp(json_string_value(json_object_get(prm, "name")), want) == 0
                    && strcmp(json_string_value(json_object_get(prm, "in")), "path") == 0
                    && json_is_true(json_object_get(prm, "required"))) {
                    found = 1;
                }
            }
            SVC_CHECK(found);
        }
        if (r->body) {
            json_t *schema = json_object_get(json_object_get(json_object_get(json_object_get(
                op, "requestBody"), "content"), "application/json"), "schema");
            json_t *req = json_object_get(schema, "required");
            json_t *props = json_object_get(schema, "properties");
            const svc_field_t *f;
            size_t nreq = 0, nfields = 0;

            SVC_CHECK(json_is_object(schema));
            SVC_CHECK_STR(json_string_value(json_object_get(schema, "type")), "object");
            SVC_CHECK(json_is_false(json_object_get(schema, "additionalProperties")));
            for (f = r->body; f->name; f++) {
                nfields++;
                SVC_CHECK(json_is_object(json_object_get(props, f->name)));
                if (f->required) {
                    int found = 0;
                    nreq++;
                    json_array_foreach(req, i, prm) {
                        found |= strcmp(json_string_value(prm), f->name) == 0;
                    }
                    if (!found) {
                        fprintf(stderr, "%s %s: required field %s not listed\n", r->method,
                                r->path, f->name);
                        svc_test_failed_checks++;
                    }
                }
            }
            SVC_CHECK_INT(json_array_size(req), nreq);
            SVC_CHECK_INT(json_object_size(props), nfields);
        }
        else if (r->flags & SVC_RF_STREAM_BODY) {
            /* A streamed body is the file itself, whatever its type. */
            SVC_CHECK(json_object_get(json_object_get(json_object_get(op, "requestBody"),
                                                      "content"), "*/*") != NULL);
        }
        else if (r->flags & SVC_RF_RAW_BODY) {
            /* The handler reads it: documented as any JSON, unconstrained. */
            SVC_CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(
                json_object_get(json_object_get(op, "requestBody"), "content"),
                "application/json"), "schema"), "$ref")), "#/components/schemas/JsonValue");
        }
        else {
            SVC_CHECK(json_object_get(op, "requestBody") == NULL);
        }
    }
    /* Nothing documented that the table does not have. */
    json_object_foreach(paths, k, item) {
        ops += (int)json_object_size(item);
        SVC_CHECK(k[0] == '/' && !strchr(k, ':'));
    }
    SVC_CHECK_INT(ops, visible);
    SVC_CHECK(visible > 0);
    json_decref(doc);
}

/*
 * A route the document cannot describe truthfully is refused
 * (svc_openapi_check; the server does not start with one): a JSON answer
 * without a schema, a tag its area does not describe, two schemas of one
 * name, an idempotent route that creates nothing, a stream of events no
 * area writes. The areas of this build pass.
 */
static const svc_col_t oc_keys[] = {
    { .key = "id", .type = SVC_COL_TEXT, .id = "itm" },
    SVC_COL_END
};
static const svc_schema_t oc_item = { .name = "Item", .keys = oc_keys };
static const svc_schema_t oc_item_too = { .name = "Item", .keys = oc_keys };
static const svc_tag_t oc_tags[] = { { "Items", "Things." }, { NULL, NULL } };

#define OC_ROW(...) { .method = "GET", .path = "/api/items", .handler = h_dummy,             \
                      .auth = SVC_AUTH_NONE, .op_id = "listItems", __VA_ARGS__ }

static const char *oc_check(apr_pool_t *p, const svc_route_t *routes)
{
    const svc_area_t area = { .name = "items", .description = "Items.", .routes = routes,
                              .tags = oc_tags };
    const svc_area_t *const areas[] = { &area, NULL };

    return svc_openapi_check(p, areas);
}

/*
 * A row without a tag is filed under its area's tag when the area
 * describes one only; in an area of several it is refused, never filed
 * under the first by accident. The table carries the tag it was given.
 */
SVC_TEST(route_tag_defaults_to_the_areas_only_tag)
{
    static const svc_tag_t two_tags[] = {
        { "Items", "Things." }, { "Other", "Other things." }, { NULL, NULL }
    };
    static const svc_route_t rows[] = {
        OC_ROW(.summary = "Items", .response = &oc_item),
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Other", .summary = "Make one", .success = 201,
          .response = &oc_item },
        SVC_ROUTE_END
    };
    const svc_area_t one = { .name = "items", .description = "Items.", .routes = rows,
                             .tags = oc_tags };
    const svc_area_t two = { .name = "items", .description = "Items.", .routes = rows,
                             .tags = two_tags };
    const svc_area_t *const areas_one[] = { &one, NULL }, *const areas_two[] = { &two, NULL };
    const svc_route_t *table = svc_route_table(p, areas_one);
    json_t *doc;
    const char *why;

    SVC_CHECK_STR(svc_route_tag(&one, &rows[0]), "Items");
    SVC_CHECK_STR(svc_route_tag(&one, &rows[1]), "Other");
    SVC_CHECK(svc_route_tag(&two, &rows[0]) == NULL);
    SVC_CHECK_STR(svc_route_tag(&two, &rows[1]), "Other");
    SVC_CHECK_STR(table[0].tag, "Items");
    SVC_CHECK_STR(table[1].tag, "Other");
    SVC_CHECK(svc_route_table(p, areas_two)[0].tag == NULL);
    /* The document files the untagged row under the area's tag... */
    doc = svc_openapi_build(p, areas_one, NULL);
    SVC_CHECK_STR(json_string_value(json_array_get(json_object_get(json_object_get(
                      json_object_get(json_object_get(doc, "paths"), "/api/items"), "get"),
                      "tags"), 0)), "Items");
    json_decref(doc);
    /* ...and, where the area has two, refuses it. */
    SVC_CHECK((why = svc_openapi_check(p, areas_two)) != NULL && strstr(why, "names its tag"));
}

SVC_TEST(openapi_check_refuses_what_it_cannot_document)
{
    static const svc_route_t ok[] = {
        OC_ROW(.tag = "Items", .summary = "Items", .response = &oc_item), SVC_ROUTE_END
    };
    static const svc_route_t unsaid[] = {
        OC_ROW(.tag = "Items", .summary = "Items"), SVC_ROUTE_END
    };
    static const svc_route_t untagged[] = {
        OC_ROW(.tag = "Nobody's", .summary = "Items", .response = &oc_item), SVC_ROUTE_END
    };
    static const svc_route_t twice[] = {
        OC_ROW(.tag = "Items", .summary = "Items", .response = &oc_item),
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Items", .summary = "Make one", .success = 201,
          .response = &oc_item_too },
        SVC_ROUTE_END
    };
    static const svc_route_t idem[] = {
        OC_ROW(.tag = "Items", .summary = "Items", .response = &oc_item,
               .flags = SVC_RF_IDEMPOTENT), SVC_ROUTE_END
    };
    static const svc_route_t stream[] = {
        OC_ROW(.tag = "Items", .summary = "Items", .flags = SVC_RF_STREAM, .events = "item."),
        SVC_ROUTE_END
    };
    static const svc_route_t text[] = {
        OC_ROW(.tag = "Items", .summary = "Items", .flags = SVC_RF_TEXT, .response = &oc_item),
        SVC_ROUTE_END
    };
    static const svc_header_t h_one[] = {
        { .name = "X-Count", .type = SVC_COL_INT, .required = 1, .description = "How many.",
          .example = "3" },
        { .name = NULL }
    };
    static const svc_header_t h_other[] = {
        { .name = "X-Count", .type = SVC_COL_INT, .required = 1,
          .description = "How many are left.", .example = "3" },
        { .name = NULL }
    };
    static const svc_route_t same_header[] = {
        OC_ROW(.tag = "Items", .summary = "Items", .response = &oc_item, .headers = h_one),
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Items", .summary = "Make one", .success = 201,
          .response = &oc_item, .headers = h_one },
        SVC_ROUTE_END
    };
    static const svc_route_t header_twice[] = {
        OC_ROW(.tag = "Items", .summary = "Items", .response = &oc_item, .headers = h_one),
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Items", .summary = "Make one", .success = 201,
          .response = &oc_item, .headers = h_other },
        SVC_ROUTE_END
    };
    static const svc_field_t item_body[] = {
        { .name = "name", .type = SVC_FT_STRING, .required = 1, .min = 1, .max = 10 },
        SVC_FIELD_END
    };
    static const svc_route_t body_shown[] = {
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Items", .summary = "Make one", .success = 201,
          .response = &oc_item, .body = item_body, .body_example = "{\"name\": \"Bread\"}" },
        SVC_ROUTE_END
    };
    static const svc_route_t body_unshown[] = {
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Items", .summary = "Make one", .success = 201,
          .response = &oc_item, .body = item_body },
        SVC_ROUTE_END
    };
    static const svc_route_t body_refused[] = {
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Items", .summary = "Make one", .success = 201,
          .response = &oc_item, .body = item_body,
          .body_example = "{\"name\": \"A loaf of rye bread\"}" },
        SVC_ROUTE_END
    };
    static const svc_route_t body_broken[] = {
        { .method = "POST", .path = "/api/items", .handler = h_dummy, .auth = SVC_AUTH_NONE,
          .op_id = "makeItem", .tag = "Items", .summary = "Make one", .success = 201,
          .response = &oc_item, .body = item_body, .body_example = "{\"name\": " },
        SVC_ROUTE_END
    };
    const char *why;

    SVC_CHECK(svc_openapi_check(p, svc_areas) == NULL);
    /* A JSON body is shown by an example the route's own body check takes. */
    SVC_CHECK(oc_check(p, body_shown) == NULL);
    SVC_CHECK((why = oc_check(p, body_unshown)) != NULL && strstr(why, "no example"));
    SVC_CHECK((why = oc_check(p, body_refused)) != NULL && strstr(why, "refused")
              && strstr(why, "invalid_length"));
    SVC_CHECK((why = oc_check(p, body_broken)) != NULL && strstr(why, "not a JSON object"));
    /* One header, one meaning: two routes may send it, said the same way;
     * said two ways, the second would have been dropped without a word. */
    SVC_CHECK(oc_check(p, same_header) == NULL);
    SVC_CHECK((why = oc_check(p, header_twice)) != NULL && strstr(why, "X-Count")
              && strstr(why, "POST /api/items"));
    SVC_CHECK(oc_check(p, ok) == NULL);
    SVC_CHECK((why = oc_check(p, unsaid)) != NULL && strstr(why, "names no schema")
              && strstr(why, "GET /api/items"));
    SVC_CHECK((why = oc_check(p, untagged)) != NULL && strstr(why, "Nobody's"));
    SVC_CHECK((why = oc_check(p, twice)) != NULL && strstr(why, "two schemas are named Item"));
    SVC_CHECK((why = oc_check(p, idem)) != NULL && strstr(why, "idempotent"));
    SVC_CHECK((why = oc_check(p, stream)) != NULL && strstr(why, "no area writes"));
    SVC_CHECK((why = oc_check(p, text)) != NULL && strstr(why, "does not answer JSON"));
}

int main(int argc, const char *const *argv)
{
    if (svc_crypto_init() != APR_SUCCESS) {
        fprintf(stderr, "svc_crypto_init failed\n");
        return 1;
    }
    return svc_test_run(argc, argv);
}
