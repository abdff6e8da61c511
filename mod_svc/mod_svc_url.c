/*
 * mod_svc_url.c: what httpd itself does with the service's URLs, around
 * the handler (issue 17):
 *
 *  - a share link's token is a credential in the path, and httpd quotes
 *    the path in lines it writes before any handler runs (the request line
 *    in the access log, AH10244 in the error log). So the token is taken
 *    out of every field httpd logs by (the request line, the unparsed URI,
 *    the path, the Referer) right after the request is read, kept aside
 *    for the handler, and masked again at logging time for requests httpd
 *    refused before that (docs/decisions.md);
 *  - the handler decodes the path httpd left raw for it (svc_glue_path),
 *    as httpd would have, refusals included;
 *  - a request httpd refuses itself comes back through an ErrorDocument
 *    (the configuration's, or the one set here for paths httpd cannot
 *    normalize), and is answered as the problem document of its status.
 */
#include "mod_svc_glue.h"

#include <http_core.h>
#include <http_protocol.h>
#include <http_request.h>
#include <apr_lib.h>
#include <apr_strings.h>

#include <stdlib.h>

APLOG_USE_MODULE(svc);

#define SHARE_PREFIX "/api/share/"
#define SHARE_MASK "[REDACTED]"

/* The paths whose first segment after the prefix is a share token: the
 * portal's API, and the web UI's page of the portal (docs/ui.md), which
 * httpd serves as a file and logs like any other request. */
static const char *const share_prefixes[] = { SHARE_PREFIX, "/share/", NULL };

/* Per request (r->request_config) once it was read: the token taken out
 * of its path, or NULL. */
typedef struct {
    const char *token;
} share_note_t;

static const share_note_t no_token = { NULL };

/*
 * Whether a path that httpd will refuse (it climbs above the root) names
 * the share portal anywhere, in any spelling: every escape decoded (a NUL
 * as '?', so nothing hides behind it), letters folded.
 */
static int mentions_share(apr_pool_t *p, const char *path)
{
    char *s = apr_pstrdup(p, path), *w = s;
    const char *c;

    for (c = path; *c; c++) {
        if (c[0] == '%' && apr_isxdigit(c[1]) && apr_isxdigit(c[2])) {
            char hex[3] = { c[1], c[2], '\0' };
            int v = (int)strtol(hex, NULL, 16);
            *w++ = (char)apr_tolower(v ? v : '?');
            c += 2;
        }
        else {
            *w++ = (char)apr_tolower(*c);
        }
    }
    *w = '\0';
    return strstr(s, "share") != NULL;
}

/*
 * A request target ("/path?query", or absolute "http://host/path?query")
 * with the share token masked: the path as httpd will route it (dot
 * segments resolved, slashes merged, unreserved characters decoded) with
 * [REDACTED] for its first segment after /api/share/ or /share/; the query
 * as it was.
 * *ptoken is that segment, *prouted whether the masked path is the one
 * httpd may route (0: httpd refuses the path, the whole of it is masked).
 * NULL when the target names no share token.
 */
static const char *share_target_masked(apr_pool_t *p, const char *target,
                                       const char **ptoken, int *prouted)
{
    const char *path = target, *query;
    const char *const *pre;
    apr_size_t plen, tlen;
    char *norm;

    *ptoken = NULL;
    *prouted = 0;
    /* Most requests: no "share" to normalize to, and no escape to hide one. */
    if (!target || (!strstr(target, "share") && !strchr(target, '%'))) {
        return NULL;
    }
    if (*path != '/') {
        const char *scheme_end = strstr(path, "://");
        if (!scheme_end || !(path = strchr(scheme_end + 3, '/'))) {
            return NULL;
        }
    }
    query = path + strcspn(path, "?");
    norm = apr_pstrmemdup(p, path, (apr_size_t)(query - path));
    if (!ap_normalize_path(norm, AP_NORMALIZE_NOT_ABOVE_ROOT | AP_NORMALIZE_DECODE_UNRESERVED
                                 | AP_NORMALIZE_MERGE_SLASHES)) {
        /* httpd answers 400 and quotes the target (AH10244): nothing of it. */
        norm = apr_pstrmemdup(p, path, (apr_size_t)(query - path));
        return mentions_share(p, norm) ? apr_pstrcat(p, "/" SHARE_MASK, query, NULL) : NULL;
    }
    for (pre = share_prefixes; *pre && strncmp(norm, *pre, strlen(*pre)) != 0; pre++) {
    }
    if (!*pre) {
        return NULL;
    }
    plen = strlen(*pre);
    tlen = strcspn(norm + plen, "/");
    if (tlen == 0) {
        return NULL;
    }
    *ptoken = apr_pstrmemdup(p, norm + plen, tlen);
    *prouted = 1;
    return apr_pstrcat(p, *pre, SHARE_MASK, norm + plen + tlen, query, NULL);
}

/* The request line with its target (the second word) replaced. */
static char *request_line_with(request_rec *r, char *line, const char *target)
{
    const char *sp = strchr(line, ' '), *rest;

    if (!sp) {
        return line;
    }
    rest = sp + 1 + strcspn(sp + 1, " ");
    return apr_pstrcat(r->pool, apr_pstrmemdup(r->pool, line, (apr_size_t)(sp - line + 1)),
                       target, rest, NULL);
}

/*
 * Masks the share token in every field of r that httpd logs: the request
 * line (%r), the unparsed URI, the path (%U) and the Referer. With `route`
 * (the request was just read), the masked path is also what httpd routes
 * on from here, and the token is noted for the handler;
 * a path httpd will refuse (it climbs above the root) is left for httpd
 * to refuse, and masked at logging time.
 */
static void mask_share_token(request_rec *r, int route)
{
    const char *masked, *t;
    int routed, any = 0;

    if (r->the_request) {
        /* The request line's second word: also one httpd could not parse. */
        const char *sp = strchr(r->the_request, ' ');
        const char *target = sp ? apr_pstrmemdup(r->pool, sp + 1, strcspn(sp + 1, " ")) : NULL;

        if ((masked = share_target_masked(r->pool, target, &t, &routed)) != NULL) {
            r->the_request = request_line_with(r, r->the_request, masked);
            any = 1;
        }
    }
    if ((masked = share_target_masked(r->pool, r->unparsed_uri, &t, &routed)) != NULL) {
        r->unparsed_uri = apr_pstrdup(r->pool, masked);
        any = 1;
        if (route && routed) {
            share_note_t *note = apr_pcalloc(r->pool, sizeof(*note));

            note->token = t;
            ap_set_module_config(r->request_config, &svc_module, note);
            /* httpd decodes and routes this path in place: one buffer for both. */
            r->uri = apr_pstrmemdup(r->pool, masked, strcspn(masked, "?"));
            r->parsed_uri.path = r->uri;
        }
    }
    if (!route && (masked = share_target_masked(r->pool, r->uri, &t, &routed)) != NULL) {
        r->uri = apr_pstrdup(r->pool, masked);
        any = 1;
    }
    /* The portal's page the browser came from carries the token too, and
     * httpd appends the Referer to its error lines. */
    if (any && apr_table_get(r->headers_in, "Referer")) {
        apr_table_setn(r->headers_in, "Referer", SHARE_MASK);
    }
}

/*
 * httpd refuses a path it cannot normalize (a malformed escape, a climb
 * above the root) with 400 before any <Location> applies, so no
 * ErrorDocument of the configuration's reaches it. On the prefixes the
 * module owns whole in every configuration it ships, the request's own
 * ErrorDocument sends that 400 to the module's problem document.
 */
static void refusal_to_module(request_rec *r)
{
    static const char *const prefixes[] = { "/api/", "/internal/", "/auth/", NULL };
    const char *const *pre;
    char *path;

    if (!r->parsed_uri.path) {
        return;
    }
    for (pre = prefixes; *pre && strncmp(r->parsed_uri.path, *pre, strlen(*pre)); pre++) {
    }
    if (!*pre) {
        return;
    }
    path = apr_pstrdup(r->pool, r->parsed_uri.path);
    if (!ap_normalize_path(path, AP_NORMALIZE_NOT_ABOVE_ROOT | AP_NORMALIZE_DECODE_UNRESERVED
                                 | AP_NORMALIZE_MERGE_SLASHES)) {
        ap_custom_response(r, HTTP_BAD_REQUEST, SVC_ERROR_URL);
    }
}

/* Right after the request is read, before any module routes or logs it. */
static int svc_mask_share_read(request_rec *r)
{
    mask_share_token(r, 1);
    if (!ap_get_module_config(r->request_config, &svc_module)) {
        ap_set_module_config(r->request_config, &svc_module, (void *)&no_token);
    }
    refusal_to_module(r);
    return DECLINED;
}

/*
 * Before the access log is written, for the request and every request it
 * became that svc_mask_share_read did not see: those httpd refused before
 * they were read whole (a malformed request line, a header too long), and
 * the ErrorDocument's.
 */
static int svc_mask_share_log(request_rec *r)
{
    request_rec *x;

    for (x = r; x->prev; x = x->prev) {
    }
    for (; x; x = x->next) {
        if (!ap_get_module_config(x->request_config, &svc_module)) {
            mask_share_token(x, 0);
        }
    }
    return DECLINED;
}

const char *svc_glue_path(request_rec *r, int *prefused)
{
    const share_note_t *note = ap_get_module_config(r->request_config, &svc_module);
    static const char masked[] = SHARE_PREFIX SHARE_MASK;
    apr_size_t n = sizeof(masked) - 1;
    const char *own = apr_table_get(r->notes, SVC_NOTE_OWN);
    char *path = r->uri;
    int rc;

    *prefused = 0;
    if (note && note->token && strncmp(r->uri, masked, n) == 0
        && (r->uri[n] == '/' || r->uri[n] == '\0')) {
        path = apr_pstrcat(r->pool, SHARE_PREFIX, note->token, r->uri + n, NULL);
    }
    if (!own || strcmp(own, SVC_NOTE_RAW) != 0) {
        return path;
    }
    /* As httpd decodes a path (ap_process_request_internal), refusals included. */
    path = apr_pstrdup(r->pool, path);
    rc = ap_unescape_url_ex(path, AP_UNESCAPE_URL_KEEP_UNRESERVED
                                  | AP_UNESCAPE_URL_FORBID_SLASHES);
    if (rc != OK) {
        *prefused = rc == HTTP_NOT_FOUND ? HTTP_NOT_FOUND : HTTP_BAD_REQUEST;
        return r->uri;
    }
    return path;
}

int svc_glue_refusal(request_rec *r, const char *request_id)
{
    request_rec *orig = r;

    if (!r->prev || !ap_is_HTTP_ERROR(r->prev->status)) {
        return 0;
    }
    /* The access log reads its condition (env=SVC_REQUEST_ID) from the
     * request as it came in, and the id from this one's answer. */
    while (orig->prev) {
        orig = orig->prev;
    }
    apr_table_setn(orig->subprocess_env, "SVC_REQUEST_ID", request_id);
    return r->prev->status;
}

void svc_url_hooks(void)
{
    /* Before mod_log_forensic, which writes the request line as it came. */
    static const char *const succ[] = { "mod_log_forensic.c", NULL };

    ap_hook_post_read_request(svc_mask_share_read, NULL, succ, APR_HOOK_REALLY_FIRST);
    ap_hook_log_transaction(svc_mask_share_log, NULL, NULL, APR_HOOK_REALLY_FIRST);
}
