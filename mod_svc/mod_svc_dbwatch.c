/*
 * mod_svc_dbwatch.c: the database's own reason, where an operator looks
 * (issue 17). mod_dbd's lines are turned down (quiet_dbd, mod_svc.c), and
 * a pool that cannot connect only says "no connection"; so libpq's reason
 * ("database "x" does not exist", "password authentication failed") is
 * asked for on a connection of the glue's own (svc_db_probe, secrets taken
 * out) and logged when each child starts (SVC0090) and when the database
 * goes away after the child reached it (SVC0091), and /internal/health
 * names it.
 */
#include "mod_svc_glue.h"

#include <apr_atomic.h>
#include <apr_hash.h>
#include <apr_strings.h>

APLOG_USE_MODULE(svc);

#define WATCH_UNKNOWN 0
#define WATCH_UP      1
#define WATCH_DOWN    2

/* One per distinct DBDParams; per child (copied at fork). */
typedef struct {
    const char *conninfo;
    server_rec *server;         /* the first server that uses it, for the log */
    volatile apr_uint32_t state;
} watch_t;

/* conninfo -> watch_t: made at start, only read afterwards. */
static apr_hash_t *watches;

void svc_dbwatch_setup(apr_pool_t *pconf, server_rec *s)
{
    server_rec *vs;

    watches = apr_hash_make(pconf);
    for (vs = s; vs; vs = vs->next) {
        svc_server_conf *sc = ap_get_module_config(vs->module_config, &svc_module);
        watch_t *w;

        if (!sc->db_conninfo || apr_hash_get(watches, sc->db_conninfo, APR_HASH_KEY_STRING)) {
            continue;
        }
        w = apr_pcalloc(pconf, sizeof(*w));
        w->conninfo = sc->db_conninfo;
        w->server = vs;
        apr_hash_set(watches, w->conninfo, APR_HASH_KEY_STRING, w);
    }
}

void svc_dbwatch_child_init(apr_pool_t *pchild)
{
    apr_hash_index_t *hi;
    apr_pool_t *p;

    if (!watches) {
        return;
    }
    apr_pool_create(&p, pchild);
    for (hi = apr_hash_first(p, watches); hi; hi = apr_hash_next(hi)) {
        watch_t *w = apr_hash_this_val(hi);
        const char *why;

        if (svc_db_probe(w->conninfo, p, &why) == APR_SUCCESS) {
            w->state = WATCH_UP;
            continue;
        }
        w->state = WATCH_DOWN;
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, w->server, "SVC0090: the database cannot be "
                     "reached (DBDParams of %s): %s. The API answers 503 until it can; "
                     "/internal/health says why.", w->server->defn_name
                     ? apr_psprintf(p, "%s:%u", w->server->defn_name, w->server->defn_line_number)
                     : "the main server", why);
    }
    apr_pool_destroy(p);
}

static watch_t *watch_of(server_rec *s)
{
    svc_server_conf *sc = ap_get_module_config(s->module_config, &svc_module);

    return watches && sc->db_conninfo
           ? apr_hash_get(watches, sc->db_conninfo, APR_HASH_KEY_STRING) : NULL;
}

/*
 * A failure seen on w: the first after a success says why (why, or asked
 * now), once per outage; a database that answers after all (the pool was
 * busy, one connection had died) is no outage.
 */
static void went_away(server_rec *s, apr_pool_t *p, watch_t *w, const char *why)
{
    if (apr_atomic_cas32(&w->state, WATCH_DOWN, WATCH_UP) != WATCH_UP) {
        return;
    }
    if (!why && svc_db_probe(w->conninfo, p, &why) == APR_SUCCESS) {
        apr_atomic_set32(&w->state, WATCH_UP);
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "SVC0091: the database went away: %s. "
                 "Requests that need it answer 503 until it is back (SVC0012 counts them).",
                 why);
}

void svc_dbwatch_result(server_rec *s, apr_pool_t *p, int ok)
{
    watch_t *w = watch_of(s);

    if (!w) {
        return;
    }
    if (!ok) {
        went_away(s, p, w, NULL);
    }
    else if (apr_atomic_read32(&w->state) != WATCH_UP) {
        apr_atomic_set32(&w->state, WATCH_UP);
    }
}

const char *svc_dbwatch_reason(server_rec *s, apr_pool_t *p)
{
    svc_server_conf *sc = ap_get_module_config(s->module_config, &svc_module);
    watch_t *w = watch_of(s);
    const char *why = NULL;

    if (!sc->db_conninfo) {
        return "no DBDParams is configured for this server";
    }
    if (svc_db_probe(sc->db_conninfo, p, &why) == APR_SUCCESS) {
        return NULL;
    }
    if (w) {
        went_away(s, p, w, why);
    }
    return why;
}
