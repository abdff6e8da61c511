/*
 * svc_route.c: matching request paths against the route table.
 */
#include "svc_route.h"

#include <stdlib.h>
#include <string.h>

#define SVC_MAX_SEGMENTS 16
#define SVC_MAX_PARAM_LEN 200

typedef struct {
    const svc_route_t *route;
    int nseg;
    const char *seg[SVC_MAX_SEGMENTS];   /* literal, or NULL for a parameter */
    const char *pname[SVC_MAX_SEGMENTS]; /* parameter name where seg is NULL */
} compiled_t;

struct svc_router_t {
    compiled_t *routes;
    int n;
};

typedef struct {
    int n;
    const char *start[SVC_MAX_SEGMENTS];
    apr_size_t len[SVC_MAX_SEGMENTS];
} split_t;

/* Splits "/a/b/c" into segments without allocating; 0 on a malformed path. */
static int split_path(const char *path, split_t *sp)
{
    const char *s = path;

    sp->n = 0;
    if (*s != '/') {
        return 0;
    }
    while (*s == '/') {
        const char *e;
        s++;
        e = strchr(s, '/');
        if (!e) {
            e = s + strlen(s);
        }
        if (e == s) {
            /* An empty segment ("//" or a trailing "/") names nothing here. */
            return 0;
        }
        if (sp->n == SVC_MAX_SEGMENTS) {
            return 0;
        }
        sp->start[sp->n] = s;
        sp->len[sp->n] = (apr_size_t)(e - s);
        sp->n++;
        s = e;
    }
    return 1;
}

int svc_method_is_unsafe(const char *method)
{
    return !(strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0
             || strcmp(method, "OPTIONS") == 0);
}

int svc_route_is_tenant(const svc_route_t *route)
{
    const char *s = strncmp(route->path, "/api/", 5) == 0 ? route->path + 4 : route->path;

    return strncmp(s, "/orgs/:orgSlug", 14) == 0 && (s[14] == '\0' || s[14] == '/');
}

const char *svc_route_redact_path(apr_pool_t *p, const svc_route_t *route, const char *path)
{
    const char *t = route->path, *u = path, *masked = "";

    while (*t == '/' && *u == '/') {
        apr_size_t tl = strcspn(t + 1, "/"), ul = strcspn(u + 1, "/");
        int secret = tl == 6 && strncmp(t + 1, ":token", 6) == 0;
        masked = apr_pstrcat(p, masked, "/",
                             secret ? "[REDACTED]" : apr_pstrmemdup(p, u + 1, ul), NULL);
        t += tl + 1;
        u += ul + 1;
    }
    return masked;
}

int svc_route_is_project(const svc_route_t *route)
{
    static const char prefix[] = "/api/orgs/:orgSlug/projects/:projectSlug";
    apr_size_t n = sizeof(prefix) - 1;

    return strncmp(route->path, prefix, n) == 0
        && (route->path[n] == '\0' || route->path[n] == '/');
}

/* Literal segments sort before parameters, position by position; routes of
 * one template stay together, in table order. */
static int specificity_cmp(const void *a, const void *b)
{
    const compiled_t *x = a, *y = b;
    int i, n = x->nseg < y->nseg ? x->nseg : y->nseg;
    int c;

    /* Templates of different lengths never match the same path; ordering
     * them by length first keeps the comparison a total order for qsort. */
    if (x->nseg != y->nseg) {
        return x->nseg < y->nseg ? -1 : 1;
    }

    for (i = 0; i < n; i++) {
        if (!x->seg[i] != !y->seg[i]) {
            return x->seg[i] ? -1 : 1;
        }
    }
    c = strcmp(x->route->path, y->route->path);
    if (c) {
        return c;
    }
    return x->route < y->route ? -1 : (x->route > y->route);
}

apr_status_t svc_router_create(svc_router_t **prt, const svc_route_t *table, apr_pool_t *p)
{
    svc_router_t *rt = apr_pcalloc(p, sizeof(*rt));
    const svc_route_t *r;
    int n = 0, i, j;

    for (r = table; r->method; r++) {
        n++;
    }
    rt->routes = apr_pcalloc(p, sizeof(compiled_t) * (apr_size_t)(n ? n : 1));
    for (r = table; r->method; r++) {
        compiled_t *c = &rt->routes[rt->n];
        split_t sp;

        /* TRACE echoes credentials; CONNECT is a proxy's: never a route. */
        if (!split_path(r->path, &sp) || !r->handler || strcmp(r->method, "TRACE") == 0
            || strcmp(r->method, "CONNECT") == 0) {
            return APR_EINVAL;
        }
        /* A state-changing user route that a read token could call would
         * break the scope model; refuse to start rather than serve it. */
        if (r->auth == SVC_AUTH_USER && svc_method_is_unsafe(r->method)
            && r->scope < SVC_SCOPE_WRITE) {
            return APR_EINVAL;
        }
        /* A raw body is the handler's to read; a schema would never be applied. */
        if ((r->flags & SVC_RF_RAW_BODY) && r->body) {
            return APR_EINVAL;
        }
        /* A project route that names no least project role would let every
         * org member in; a project role elsewhere would be checked nowhere. */
        if (svc_route_is_project(r) != (r->prole != SVC_PROLE_NONE)) {
            return APR_EINVAL;
        }
        c->route = r;
        c->nseg = sp.n;
        for (i = 0; i < sp.n; i++) {
            const char *seg = apr_pstrmemdup(p, sp.start[i], sp.len[i]);
            if (seg[0] == ':') {
                c->seg[i] = NULL;
                c->pname[i] = seg + 1;
            }
            else {
                c->seg[i] = seg;
            }
        }
        /* The same method and template twice is a mistake in the table. */
        for (j = 0; j < rt->n; j++) {
            if (strcmp(rt->routes[j].route->method, r->method) == 0
                && strcmp(rt->routes[j].route->path, r->path) == 0) {
                return APR_EINVAL;
            }
        }
        rt->n++;
    }
    qsort(rt->routes, (size_t)rt->n, sizeof(compiled_t), specificity_cmp);
    *prt = rt;
    return APR_SUCCESS;
}

static int path_matches(const compiled_t *c, const split_t *sp)
{
    int i;

    if (c->nseg != sp->n) {
        return 0;
    }
    for (i = 0; i < sp->n; i++) {
        if (c->seg[i]) {
            if (strlen(c->seg[i]) != sp->len[i]
                || memcmp(c->seg[i], sp->start[i], sp->len[i]) != 0) {
                return 0;
            }
        }
        else if (sp->len[i] > SVC_MAX_PARAM_LEN) {
            return 0;
        }
    }
    return 1;
}

const svc_route_t *svc_router_match(const svc_router_t *rt, const char *method,
                                    const char *path, apr_pool_t *p,
                                    apr_table_t *params, const char **pallow)
{
    split_t sp;
    int i, k;
    const char *want = strcmp(method, "HEAD") == 0 ? "GET" : method;
    const char *allow = NULL;
    const char *tmpl = NULL;

    *pallow = NULL;
    if (!split_path(path, &sp)) {
        return NULL;
    }
    /*
     * The routes are sorted most specific first, so the first template that
     * matches names the resource; only its methods count, and any other
     * method is a 405 rather than a fall-through to a looser template.
     */
    for (i = 0; i < rt->n; i++) {
        const compiled_t *c = &rt->routes[i];
        if (tmpl ? strcmp(c->route->path, tmpl) != 0 : !path_matches(c, &sp)) {
            continue;
        }
        tmpl = c->route->path;
        if (strcmp(c->route->method, want) == 0) {
            for (k = 0; k < c->nseg; k++) {
                if (!c->seg[k]) {
                    apr_table_setn(params, c->pname[k],
                                   apr_pstrmemdup(p, sp.start[k], sp.len[k]));
                }
            }
            return c->route;
        }
        allow = allow ? apr_pstrcat(p, allow, ", ", c->route->method, NULL)
                      : c->route->method;
        if (strcmp(c->route->method, "GET") == 0) {
            allow = apr_pstrcat(p, allow, ", HEAD", NULL);
        }
    }
    if (allow) {
        *pallow = apr_pstrcat(p, allow, ", OPTIONS", NULL);
    }
    return NULL;
}

const char *svc_route_tag(const svc_area_t *area, const svc_route_t *r)
{
    if (r->tag) {
        return r->tag;
    }
    if (area->tags && area->tags[0].name && !area->tags[1].name) {
        return area->tags[0].name;
    }
    return NULL;
}

const svc_route_t *svc_route_table(apr_pool_t *p, const svc_area_t *const *areas)
{
    const svc_area_t *const *a;
    const svc_route_t *r;
    svc_route_t *table;
    apr_size_t n = 0;

    for (a = areas; a && *a; a++) {
        for (r = (*a)->routes; r->method; r++) {
            n++;
        }
    }
    /* The last row stays zeroed: method NULL ends the table. */
    table = apr_pcalloc(p, sizeof(*table) * (n + 1));
    n = 0;
    for (a = areas; a && *a; a++) {
        for (r = (*a)->routes; r->method; r++) {
            table[n] = *r;
            table[n++].tag = svc_route_tag(*a, r);
        }
    }
    return table;
}
