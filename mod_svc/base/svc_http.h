/*
 * svc_http.h: the one outbound HTTP client (libcurl underneath).
 *
 * Every integration (code-hosting OAuth and App, payment provider, LLM
 * providers) calls out through svc_http_do, which always applies: connect
 * and total timeouts, TLS verification, http/https only, a response size
 * cap, no CR/LF in header values, and secrets redacted from any trace.
 * For URLs a tenant supplied, it also refuses loopback, private,
 * link-local and metadata addresses unless the operator allows them,
 * checked on the address actually connected to, so DNS tricks (rebinding,
 * redirects) do not get around it.
 */
#ifndef SVC_HTTP_H
#define SVC_HTTP_H

#include "svc_types.h"

/* Defaults when a request leaves the field at 0. */
#define SVC_HTTP_CONNECT_TIMEOUT_MS 5000
#define SVC_HTTP_TIMEOUT_MS         30000
#define SVC_HTTP_MAX_RESPONSE       (4 * 1024 * 1024)
/* Response header bytes accepted (all lines together); over it: SVC_HTTP_ETOOBIG. */
#define SVC_HTTP_MAX_HEADER_BYTES   (64 * 1024)

/* Failure statuses beyond APR's. */
#define SVC_HTTP_ETIMEOUT  (APR_OS_START_USERERR + 5101) /* connect or total timeout */
#define SVC_HTTP_ETOOBIG   (APR_OS_START_USERERR + 5102) /* response over the cap */
#define SVC_HTTP_EBLOCKED  (APR_OS_START_USERERR + 5103) /* address guard refused (resp->guard) */
#define SVC_HTTP_EURL      (APR_OS_START_USERERR + 5104) /* bad URL or scheme */
#define SVC_HTTP_EHEADER   (APR_OS_START_USERERR + 5105) /* CR/LF in a header, bad method */
#define SVC_HTTP_ECONNECT  (APR_OS_START_USERERR + 5106) /* could not connect */
#define SVC_HTTP_ETLS      (APR_OS_START_USERERR + 5107) /* TLS verification failed */
#define SVC_HTTP_EIO       (APR_OS_START_USERERR + 5108) /* any other transfer failure */

typedef struct {
    const char *method;         /* "GET", "POST", ... */
    const char *url;            /* http:// or https:// only */
    apr_table_t *headers;       /* request headers, or NULL */
    const char *body;           /* request body, or NULL */
    apr_size_t body_len;
    long connect_timeout_ms;    /* 0: default */
    long timeout_ms;            /* 0: default; the whole exchange */
    apr_size_t max_response;    /* 0: default; body bytes accepted */
    int untrusted;              /* tenant-supplied URL: apply the address guard */
    int allow_private;          /* operator allowed private addresses for untrusted URLs */
    const char *ca_file;        /* extra CA bundle (tests, private PKI), or NULL */
    const char *const *secrets; /* values to redact from traces, NULL ended, or NULL */
} svc_http_req_t;

typedef struct {
    int status;                 /* HTTP status, 0 when there was no response */
    apr_table_t *headers;       /* response headers of the final response */
    char *body;                 /* NUL-terminated for convenience; may contain NULs */
    apr_size_t body_len;
    const char *error;          /* why it failed, redacted, for logs and problems */
    const char *primary_ip;     /* the address actually connected to, "" when none */
    const char *guard;          /* SVC_HTTP_EBLOCKED: why, completing "the URL ...";
                                 * else NULL */
} svc_http_resp_t;

/*
 * What a caller must know about svc_http_do:
 *
 * - Response header names are lowercased (as HTTP/2 sends them anyway);
 *   values are trimmed of surrounding whitespace. apr_table lookups ignore
 *   case, so apr_table_get(resp->headers, "Content-Type") works. A repeated
 *   header gives several entries (apr_table_get returns the first). Only
 *   the final response's headers are kept (not 1xx), and trailers are not
 *   included.
 * - The body is the raw bytes received: no Accept-Encoding is sent by the
 *   client, so nothing is decompressed behind the caller's back.
 * - On success the status may be anything, 4xx and 5xx included; a 3xx is
 *   returned as it is. On failure body is "" and status is whatever arrived
 *   before the failure (0 when nothing did).
 * - Request headers: names must be tokens, values may hold no control
 *   characters but tab. Content-Length and Transfer-Encoding are refused:
 *   the client frames the body itself. An empty value is sent as empty.
 *   libcurl's default Content-Type for a body and its "Expect: 100-continue"
 *   are not sent: set Content-Type yourself when sending a body.
 * - A default "User-Agent: mod_svc" is sent unless the caller sets one.
 * - Proxy settings from the environment (http_proxy, ...) are ignored: the
 *   address guard must see the real peer.
 * - ca_file is added to the system trust store, not put in its place.
 * - For untrusted URLs, cloud metadata addresses (169.254.169.254,
 *   fd00:ec2::254, ...) stay refused even with allow_private; allow_private
 *   opens loopback, private, link-local and the other local ranges.
 * - Values of Authorization, Proxy-Authorization and Cookie request headers
 *   are redacted like req->secrets; query values are never shown in error.
 */

/* Once per process, before threads start (curl_global_init). Calling it
 * again is harmless. Fails when the libcurl at run time is older than 7.85
 * (needed for the protocol allow-list). */
apr_status_t svc_http_global_init(void);

/* At process end, after the last request (curl_global_cleanup). */
void svc_http_global_cleanup(void);

/*
 * Performs the request. Everything is allocated from p, and the curl handle
 * is released before returning. On failure the returned status is one of
 * the SVC_HTTP_E* values and (*presp)->error says why; *presp is always set.
 * Redirects are not followed (callers that want them do so explicitly).
 */
apr_status_t svc_http_do(apr_pool_t *p, const svc_http_req_t *req, svc_http_resp_t **presp);

/* True when the address (textual IPv4 or IPv6) is loopback, private,
 * link-local, unique-local, unspecified, multicast, CGNAT or a cloud
 * metadata address: what an untrusted URL may not reach. Also true for the
 * other special ranges (benchmarking, documentation, reserved, broadcast,
 * 192.0.0.0/24), for IPv6 forms that embed such an IPv4 address
 * (mapped, compatible, SIIT, NAT64 64:ff9b::/96 and the local-use
 * 64:ff9b:1::/48, 6to4, Teredo's server or client), and for text
 * that is not an address (fail closed). "[::1]" and "fe80::1%eth0" are
 * understood. */
int svc_http_addr_blocked(const char *ip);

/*
 * The guard's verdict on an untrusted URL as written, before anything is
 * resolved: NULL when its host and port may be called (a name is judged
 * again on the addresses it resolves to, at every call), else why not, in
 * words that complete "<the URL> ...". Refused: a port outside 1-65535, an
 * IPv6 zone ("%25eth0"), a host that is not a plain name or address, an
 * IPv4 address in any spelling but four decimal numbers (127.1,
 * 2130706433, 0x7f000001, 0177.0.0.1, 0: resolvers read them all as
 * addresses), metadata addresses in every form, and other local addresses
 * unless allow_private. svc_http_do applies the same verdict to every
 * untrusted request (SVC_HTTP_EBLOCKED, the why in resp->guard), so what
 * was accepted when a URL was stored is what is called.
 */
const char *svc_http_check_untrusted(apr_pool_t *p, const char *url, int allow_private);

/*
 * NULL when `url` is usable as the base of outbound calls (http or https, a
 * host, printable ASCII, no query, fragment or user info), else why not, in
 * words that complete "<the URL> ...". *pnorm is it without trailing slashes.
 */
const char *svc_http_check_base_url(apr_pool_t *p, const char *url, const char **pnorm);

/* Percent-encodes everything but RFC 3986's unreserved characters. */
char *svc_url_encode(apr_pool_t *p, const char *s);

/*
 * Decodes s in place as a form value ("+" is a space, %XX a byte): 1, or 0
 * when an escape is not two hex digits or encodes a NUL (s is then partly
 * decoded and must not be used).
 */
int svc_url_decode_form(char *s);

#endif /* SVC_HTTP_H */
