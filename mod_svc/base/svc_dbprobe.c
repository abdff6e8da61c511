/*
 * svc_dbprobe.c: why a database cannot be reached, in libpq's words, fit
 * for a log line and an operator's health check (issue 17).
 *
 * mod_dbd keeps libpq's reason to itself (its lines are turned down, as
 * they would fill the log during an outage: see quiet_dbd in mod_svc.c),
 * so the glue asks again on a connection of its own, at the moments an
 * operator needs to know: at start, when the database goes away, and when
 * /internal/health is asked.
 */
#include "svc_db.h"
#include "svc_redact.h"

#include <apr_strings.h>
#include <string.h>

/* How long a probe may wait for a server that does not answer, unless the
 * conninfo says otherwise (libpq's own default is to wait forever). */
#define SVC_PROBE_TIMEOUT "5"

/* The conninfo keywords whose values are secrets. */
static int keyword_secret(const char *kw)
{
    return strcmp(kw, "password") == 0 || strcmp(kw, "sslpassword") == 0;
}

/* Every occurrence of `what` in s replaced with [REDACTED]. */
static char *replace_all(apr_pool_t *p, const char *s, const char *what)
{
    apr_size_t n = strlen(what);
    const char *hit;
    char *out = apr_pstrdup(p, "");

    while ((hit = strstr(s, what)) != NULL) {
        out = apr_pstrcat(p, out, apr_pstrmemdup(p, s, (apr_size_t)(hit - s)), "[REDACTED]",
                          NULL);
        s = hit + n;
    }
    return apr_pstrcat(p, out, s, NULL);
}

/* Whether a quoted fragment of a parse error is kept: a libpq keyword, or
 * the "=" libpq says is missing. */
static int is_keyword(const char *s, apr_size_t n)
{
    PQconninfoOption *defs, *o;
    int found = 0;

    if (n == 1 && *s == '=') {
        return 1;
    }
    defs = PQconndefaults();

    for (o = defs; o && o->keyword; o++) {
        if (strlen(o->keyword) == n && strncmp(o->keyword, s, n) == 0) {
            found = 1;
            break;
        }
    }
    PQconninfoFree(defs);
    return found;
}

/*
 * A conninfo that does not parse: libpq quotes the piece it stumbled on,
 * which may be a password written without its keyword. Quoted keywords
 * (and "=") stay: they say what is wrong; any other quoted piece goes.
 */
static const char *mask_quoted(apr_pool_t *p, const char *msg)
{
    const char *s = msg, *open;
    char *out = apr_pstrdup(p, "");

    while ((open = strchr(s, '"')) != NULL) {
        const char *close = strchr(open + 1, '"');
        apr_size_t n;

        if (!close) {
            break;
        }
        n = (apr_size_t)(close - open - 1);
        out = apr_pstrcat(p, out, apr_pstrmemdup(p, s, (apr_size_t)(open - s + 1)),
                          is_keyword(open + 1, n) ? apr_pstrmemdup(p, open + 1, n)
                                                  : "[REDACTED]", "\"", NULL);
        s = close + 1;
    }
    return apr_pstrcat(p, out, s, NULL);
}

const char *svc_db_reason(apr_pool_t *p, const char *conninfo, const char *msg)
{
    PQconninfoOption *opts, *o;
    char *errmsg = NULL, *out, *w;
    const char *c;

    out = apr_pstrdup(p, msg ? msg : "");
    opts = PQconninfoParse(conninfo ? conninfo : "", &errmsg);
    if (opts) {
        for (o = opts; o->keyword; o++) {
            if (o->val && *o->val && keyword_secret(o->keyword)) {
                out = replace_all(p, out, o->val);
            }
        }
        PQconninfoFree(opts);
    }
    else {
        out = apr_pstrdup(p, mask_quoted(p, out));
        PQfreemem(errmsg);
    }
    /* One line: libpq's messages run over several, with tabs and runs of
     * spaces ("FATAL:  database ... \n\tIs the server running ..."). */
    for (c = out, w = out; *c; c++) {
        int space = (*c == ' ' || *c == '\t' || *c == '\n' || *c == '\r');
        if (!space || (w > out && w[-1] != ' ')) {
            *w++ = space ? ' ' : *c;
        }
    }
    while (w > out && w[-1] == ' ') {
        w--;
    }
    *w = '\0';
    return svc_redact(p, svc_printable(p, *out ? out : "no reason given", 512));
}

apr_status_t svc_db_probe(const char *conninfo, apr_pool_t *p, const char **preason)
{
    /* The default timeout first: the conninfo, expanded after it, may
     * override it (PQconnectdbParams: later values win). */
    const char *const keys[] = { "connect_timeout", "dbname", NULL };
    const char *const vals[] = { SVC_PROBE_TIMEOUT, conninfo ? conninfo : "", NULL };
    PGconn *conn = PQconnectdbParams(keys, vals, 1);
    apr_status_t rv = APR_SUCCESS;

    *preason = NULL;
    if (!conn) {
        *preason = "out of memory";
        return APR_ENOMEM;
    }
    if (PQstatus(conn) != CONNECTION_OK) {
        *preason = svc_db_reason(p, conninfo, PQerrorMessage(conn));
        rv = SVC_EDBDOWN;
    }
    PQfinish(conn);
    return rv;
}
