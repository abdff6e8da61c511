/*
 * svc_http.c: the one outbound HTTP client (libcurl underneath).
 *
 * One easy handle per request, created and released inside svc_http_do:
 * nothing is shared between requests, so no connection, DNS or CA cache
 * can carry state from one tenant's request into another's.
 */
#include "svc_http.h"
#include "svc_redact.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <apr_lib.h>
#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#define HTTP_REDACTED     "[REDACTED]"
#define HTTP_USER_AGENT   "mod_svc"
/* Query values shorter than this are not hunted for in libcurl's own error
 * text (they are always hidden in the URL we show): a value like "1" would
 * otherwise blank out every digit of "port 8443". Listed secrets are
 * redacted whatever their length. */
#define HTTP_MIN_IMPLICIT 4

/* How an address classifies for the guard. */
typedef enum {
    HTTP_ADDR_PUBLIC = 0,
    HTTP_ADDR_LOCAL,     /* loopback, private, link-local, ...: allow_private opens it */
    HTTP_ADDR_METADATA,  /* cloud instance metadata: never for untrusted URLs */
    HTTP_ADDR_OTHER      /* not an IP address at all: never for untrusted URLs */
} http_addr_e;

typedef struct {
    apr_pool_t *p;
    const svc_http_req_t *req;
    apr_size_t max_response;
    char *body;                 /* malloc'd while receiving, freed before return */
    apr_size_t body_len;
    apr_size_t body_cap;
    apr_table_t *headers;
    apr_size_t header_bytes;
    int in_body;                /* header lines after this are trailers */
    int too_big;
    int headers_too_big;
    int no_memory;
    int blocked;
    const char *ca_file;
} http_baton_t;

static int http_initialized;

apr_status_t svc_http_global_init(void)
{
    const curl_version_info_data *v;

    if (http_initialized) {
        return APR_SUCCESS;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        return APR_EGENERAL;
    }
    /* CURLOPT_PROTOCOLS_STR arrived in 7.85; without it we cannot pin
     * http/https, so refuse to run rather than fail on every request. */
    v = curl_version_info(CURLVERSION_NOW);
    if (!v || v->version_num < 0x075500) {
        curl_global_cleanup();
        return APR_ENOTIMPL;
    }
    http_initialized = 1;
    return APR_SUCCESS;
}

void svc_http_global_cleanup(void)
{
    if (http_initialized) {
        curl_global_cleanup();
        http_initialized = 0;
    }
}

/* ---------------------------------------------------------------------- */
/* The address guard                                                       */

static http_addr_e http_class_v4(const unsigned char *b)
{
    /* Special-purpose ranges (IANA registry) that are not a public service. */
    static const struct {
        apr_uint32_t net;
        int bits;
    } local[] = {
        { 0x00000000, 8 },  /* 0.0.0.0/8 "this network", unspecified */
        { 0x0a000000, 8 },  /* 10/8 */
        { 0x64400000, 10 }, /* 100.64/10 CGNAT */
        { 0x7f000000, 8 },  /* 127/8 loopback */
        { 0xa9fe0000, 16 }, /* 169.254/16 link-local */
        { 0xac100000, 12 }, /* 172.16/12 */
        { 0xc0000000, 24 }, /* 192.0.0.0/24 IETF protocol assignments */
        { 0xc0000200, 24 }, /* 192.0.2.0/24 documentation */
        { 0xc0a80000, 16 }, /* 192.168/16 */
        { 0xc6120000, 15 }, /* 198.18/15 benchmarking */
        { 0xc6336400, 24 }, /* 198.51.100/24 documentation */
        { 0xcb007100, 24 }, /* 203.0.113/24 documentation */
        { 0xe0000000, 4 },  /* 224/4 multicast */
        { 0xf0000000, 4 },  /* 240/4 reserved, and 255.255.255.255 */
    };
    /* Instance metadata endpoints of the clouds we might run in: AWS, GCP,
     * Azure, Oracle (169.254.169.254), AWS ECS/EKS credentials, Alibaba,
     * Azure WireServer (a public address that is host-local in Azure). */
    static const apr_uint32_t metadata[] = {
        0xa9fea9fe, /* 169.254.169.254 */
        0xa9feaa02, /* 169.254.170.2 */
        0xa9feaa17, /* 169.254.170.23 */
        0x646464c8, /* 100.100.100.200 */
        0xa83f8110, /* 168.63.129.16 */
    };
    apr_uint32_t a = ((apr_uint32_t)b[0] << 24) | ((apr_uint32_t)b[1] << 16)
                     | ((apr_uint32_t)b[2] << 8) | (apr_uint32_t)b[3];
    apr_size_t i;

    for (i = 0; i < sizeof(metadata) / sizeof(metadata[0]); i++) {
        if (a == metadata[i]) {
            return HTTP_ADDR_METADATA;
        }
    }
    for (i = 0; i < sizeof(local) / sizeof(local[0]); i++) {
        apr_uint32_t mask = 0xffffffffu << (32 - local[i].bits);
        if ((a & mask) == local[i].net) {
            return HTTP_ADDR_LOCAL;
        }
    }
    return HTTP_ADDR_PUBLIC;
}

static int http_zero(const unsigned char *b, apr_size_t n)
{
    apr_size_t i;

    for (i = 0; i < n; i++) {
        if (b[i]) {
            return 0;
        }
    }
    return 1;
}

/* The stricter of two classes: the enum is ordered from open to closed. */
static http_addr_e http_worst(http_addr_e a, http_addr_e b)
{
    return a > b ? a : b;
}

/* The class of the IPv4 address made of the bytes at b[i[0..3]]. */
static http_addr_e http_class_v4_at(const unsigned char *b, const int *i)
{
    unsigned char v4[4];

    v4[0] = b[i[0]];
    v4[1] = b[i[1]];
    v4[2] = b[i[2]];
    v4[3] = b[i[3]];
    return http_class_v4(v4);
}

/*
 * An address under a NAT64 prefix other than the well-known /96: where the
 * IPv4 address sits depends on the length of the prefix the network chose
 * (RFC 6052 2.2: /48, /56, /64 or /96 here; bits 64-71 are always skipped),
 * which the address does not say, so each place is read and the strictest
 * class wins. The prefix itself is for local use only (RFC 8215).
 */
static http_addr_e http_class_nat64_local(const unsigned char *b)
{
    static const int at48[4] = { 6, 7, 9, 10 };
    static const int at56[4] = { 7, 9, 10, 11 };
    static const int at64[4] = { 9, 10, 11, 12 };
    static const int at96[4] = { 12, 13, 14, 15 };
    http_addr_e cls = HTTP_ADDR_LOCAL;

    cls = http_worst(cls, http_class_v4_at(b, at48));
    cls = http_worst(cls, http_class_v4_at(b, at56));
    cls = http_worst(cls, http_class_v4_at(b, at64));
    return http_worst(cls, http_class_v4_at(b, at96));
}

static http_addr_e http_class_v6(const unsigned char *b)
{
    static const unsigned char aws_md[16] = {
        0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54
    };
    static const unsigned char aws_md_eks[16] = {
        0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x23
    };
    unsigned char v4[4];

    if (memcmp(b, aws_md, 16) == 0 || memcmp(b, aws_md_eks, 16) == 0) {
        return HTTP_ADDR_METADATA;
    }
    /*
     * Forms that carry an IPv4 address take that address's class (at
     * least): the kernel (mapped), a translator (NAT64, SIIT) or a relay
     * (6to4, Teredo) may deliver the packets to it. A metadata address so
     * written stays a metadata address, refused even where local ones are
     * allowed.
     */
    if (http_zero(b, 10) && b[10] == 0xff && b[11] == 0xff) {
        return http_class_v4(b + 12);               /* ::ffff:a.b.c.d mapped */
    }
    if (http_zero(b, 12)) {
        if (http_zero(b + 12, 3) && b[15] <= 1) {
            return HTTP_ADDR_LOCAL;                 /* :: and ::1 */
        }
        return http_class_v4(b + 12);               /* ::a.b.c.d compatible */
    }
    if (http_zero(b, 8) && b[8] == 0xff && b[9] == 0xff && http_zero(b + 10, 2)) {
        return http_class_v4(b + 12);               /* ::ffff:0:a.b.c.d SIIT */
    }
    if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) {
        if (http_zero(b + 4, 8)) {
            return http_class_v4(b + 12);           /* 64:ff9b::/96 NAT64 */
        }
        /* 64:ff9b:1::/48 local-use NAT64; the rest of 64:ff9b::/32 is
         * unassigned, so it is read the same way (fail closed). */
        return http_class_nat64_local(b);
    }
    if (b[0] == 0x20 && b[1] == 0x02) {
        return http_class_v4(b + 2);                /* 2002::/16 6to4 */
    }
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && b[3] == 0x00) {
        /* 2001::/32 Teredo: the server's address, then the client's,
         * stored inverted (RFC 4380 4); the packets reach either. */
        v4[0] = (unsigned char)~b[12];
        v4[1] = (unsigned char)~b[13];
        v4[2] = (unsigned char)~b[14];
        v4[3] = (unsigned char)~b[15];
        return http_worst(http_class_v4(b + 4), http_class_v4(v4));
    }
    if (b[0] == 0x01 && b[1] == 0x00 && http_zero(b + 2, 6)) {
        return HTTP_ADDR_LOCAL;                     /* 100::/64 discard */
    }
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) {
        return HTTP_ADDR_LOCAL;                     /* 2001:db8::/32 documentation */
    }
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && b[3] == 0x02
        && b[4] == 0x00 && b[5] == 0x00) {
        return HTTP_ADDR_LOCAL;                     /* 2001:2::/48 benchmarking */
    }
    if ((b[0] & 0xfe) == 0xfc) {
        return HTTP_ADDR_LOCAL;                     /* fc00::/7 unique-local */
    }
    if (b[0] == 0xfe && ((b[1] & 0xc0) == 0x80 || (b[1] & 0xc0) == 0xc0)) {
        return HTTP_ADDR_LOCAL;                     /* fe80::/10, fec0::/10 */
    }
    if (b[0] == 0xff) {
        return HTTP_ADDR_LOCAL;                     /* ff00::/8 multicast */
    }
    return HTTP_ADDR_PUBLIC;
}

static http_addr_e http_class_text(const char *ip)
{
    char buf[INET6_ADDRSTRLEN + 8];
    unsigned char a[16];
    apr_size_t n;
    char *pct;

    if (!ip) {
        return HTTP_ADDR_OTHER;
    }
    n = strlen(ip);
    if (n >= 2 && ip[0] == '[' && ip[n - 1] == ']') {
        ip++;
        n -= 2;
    }
    if (n == 0 || n >= sizeof(buf)) {
        return HTTP_ADDR_OTHER;
    }
    memcpy(buf, ip, n);
    buf[n] = '\0';
    if (inet_pton(AF_INET, buf, a) == 1) {
        return http_class_v4(a);
    }
    /* A zone names the interface, the address stays what it is. */
    pct = strchr(buf, '%');
    if (pct) {
        *pct = '\0';
    }
    if (inet_pton(AF_INET6, buf, a) == 1) {
        return http_class_v6(a);
    }
    return HTTP_ADDR_OTHER;
}

int svc_http_addr_blocked(const char *ip)
{
    return http_class_text(ip) != HTTP_ADDR_PUBLIC;
}

/* True when a host name's last label is a number (decimal, or 0x and hex
 * digits): resolvers then read the whole name as an IPv4 address, in any
 * of inet_aton's spellings, and so does libcurl (WHATWG's "ends in a
 * number"). */
static int http_ends_in_number(const char *host, apr_size_t n)
{
    apr_size_t start, i;

    if (n > 0 && host[n - 1] == '.') {
        n--;
    }
    for (start = n; start > 0 && host[start - 1] != '.'; start--) {
    }
    if (start == n) {
        return 0;
    }
    i = start;
    if (n - start >= 2 && host[i] == '0' && (host[i + 1] == 'x' || host[i + 1] == 'X')) {
        for (i += 2; i < n && apr_isxdigit(host[i]); i++) {
        }
        return i == n;
    }
    for (; i < n && apr_isdigit(host[i]); i++) {
    }
    return i == n;
}

/*
 * The guard's verdict on the host and port written in an untrusted URL,
 * before anything is resolved: NULL when they may be called (a name is
 * judged again on each address it resolves to, in http_opensocket), else
 * why not, in words that complete "<the URL> ...".
 */
static const char *http_untrusted_why(apr_pool_t *p, const char *url, int allow_private)
{
    const char *auth, *host, *port = NULL, *c;
    apr_size_t alen, hlen;
    http_addr_e cls = HTTP_ADDR_PUBLIC;
    unsigned char a[16];
    char *text;
    int portnum;

    auth = url ? strstr(url, "://") : NULL;
    if (!auth) {
        return "is not an absolute URL";
    }
    auth += 3;
    alen = strcspn(auth, "/?#");
    if (memchr(auth, '@', alen)) {
        return "must not carry user information";
    }
    if (alen > 0 && auth[0] == '[') {
        c = memchr(auth, ']', alen);
        if (!c) {
            return "has an IPv6 address without its closing bracket";
        }
        host = auth + 1;
        hlen = (apr_size_t)(c - host);
        if (c + 1 < auth + alen) {
            if (c[1] != ':') {
                return "has something other than a port after its IPv6 address";
            }
            port = c + 2;
        }
        if (memchr(host, '%', hlen)) {
            /* An interface name means something only on this machine. */
            return "names a network interface (an IPv6 zone), which a base URL may not";
        }
        text = apr_pstrmemdup(p, host, hlen);
        if (inet_pton(AF_INET6, text, a) != 1) {
            return "has a host in brackets that is not an IPv6 address";
        }
        cls = http_class_v6(a);
    }
    else {
        host = auth;
        c = memchr(auth, ':', alen);
        hlen = c ? (apr_size_t)(c - auth) : alen;
        if (c) {
            port = c + 1;
        }
        if (hlen == 0) {
            return "has no host";
        }
        for (c = host; c < host + hlen; c++) {
            if (!apr_isalnum(*c) && *c != '-' && *c != '.' && *c != '_') {
                return "has a host with characters a host name cannot have (letters, digits, "
                       "'-', '.' and '_' only)";
            }
        }
        if (http_ends_in_number(host, hlen)) {
            /* 127.1, 2130706433, 0x7f000001, 0177.0.0.1 and 0 all reach an
             * address; only its plain spelling is accepted, so what is
             * stored says where calls go. */
            text = apr_pstrmemdup(p, host, hlen);
            if (inet_pton(AF_INET, text, a) != 1) {
                return "writes an IPv4 address in a form other than four decimal numbers "
                       "from 0 to 255 (a.b.c.d, no leading zeros): octal, hex, decimal and "
                       "shortened forms are refused";
            }
            cls = http_class_v4(a);
        }
    }
    if (port) {
        apr_size_t plen = (apr_size_t)(auth + alen - port);
        portnum = 0;
        for (c = port; c < port + plen && apr_isdigit(*c) && portnum <= 65535; c++) {
            portnum = portnum * 10 + (*c - '0');
        }
        if (plen == 0 || c != port + plen || portnum < 1 || portnum > 65535) {
            return "has a port that is not a number from 1 to 65535";
        }
    }
    if (cls == HTTP_ADDR_METADATA) {
        return "names a cloud metadata address, which this server never calls";
    }
    if (cls != HTTP_ADDR_PUBLIC && !allow_private) {
        return "names a loopback, private, link-local or other local address, which this "
               "server does not call (SvcProviderAllowPrivate is off)";
    }
    return NULL;
}

const char *svc_http_check_untrusted(apr_pool_t *p, const char *url, int allow_private)
{
    return http_untrusted_why(p, url, allow_private);
}

static http_addr_e http_class_sockaddr(const struct curl_sockaddr *sa)
{
    if (sa->family == AF_INET && sa->addrlen >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in in;
        memcpy(&in, &sa->addr, sizeof(in));
        return http_class_v4((const unsigned char *)&in.sin_addr);
    }
    if (sa->family == AF_INET6 && sa->addrlen >= sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6;
        memcpy(&in6, &sa->addr, sizeof(in6));
        return http_class_v6(in6.sin6_addr.s6_addr);
    }
    return HTTP_ADDR_OTHER;
}

/*
 * libcurl calls this with the resolved address it is about to connect to,
 * for every address it tries: the guard sees what is really connected to,
 * whatever DNS said when the URL was checked.
 */
static curl_socket_t http_opensocket(void *baton, curlsocktype purpose,
                                     struct curl_sockaddr *sa)
{
    http_baton_t *b = baton;
    int fd;

    (void)purpose;
    if (b->req->untrusted) {
        http_addr_e cls = http_class_sockaddr(sa);
        if (cls == HTTP_ADDR_METADATA || cls == HTTP_ADDR_OTHER
            || (cls == HTTP_ADDR_LOCAL && !b->req->allow_private)) {
            b->blocked = 1;
            return CURL_SOCKET_BAD;
        }
    }
#ifdef SOCK_CLOEXEC
    /* httpd forks (CGI, piped logs): the socket must not leak into them. */
    fd = socket(sa->family, sa->socktype | SOCK_CLOEXEC, sa->protocol);
#else
    fd = socket(sa->family, sa->socktype, sa->protocol);
    if (fd >= 0) {
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
#endif
    return fd < 0 ? CURL_SOCKET_BAD : (curl_socket_t)fd;
}

/* ---------------------------------------------------------------------- */
/* Receiving                                                               */

static size_t http_on_body(char *data, size_t size, size_t nmemb, void *baton)
{
    http_baton_t *b = baton;
    apr_size_t n = size * nmemb;

    b->in_body = 1;
    if (n > b->max_response - b->body_len) {
        /* Returning short makes libcurl abort the transfer right here. */
        b->too_big = 1;
        return 0;
    }
    if (b->body_len + n > b->body_cap) {
        apr_size_t cap = b->body_cap ? b->body_cap : 16384;
        char *nb;
        while (cap < b->body_len + n) {
            cap *= 2;
        }
        if (cap > b->max_response) {
            cap = b->max_response;
        }
        nb = realloc(b->body, cap);
        if (!nb) {
            b->no_memory = 1;
            return 0;
        }
        b->body = nb;
        b->body_cap = cap;
    }
    if (n) {
        memcpy(b->body + b->body_len, data, n);
        b->body_len += n;
    }
    return n;
}

static size_t http_on_header(char *data, size_t size, size_t nmemb, void *baton)
{
    http_baton_t *b = baton;
    apr_size_t n = size * nmemb, len = n, i;
    const char *colon, *v, *ve;
    char *name;

    b->header_bytes += n;
    if (b->header_bytes > SVC_HTTP_MAX_HEADER_BYTES) {
        b->headers_too_big = 1;
        return 0;
    }
    if (b->in_body) {
        return n;
    }
    while (len && (data[len - 1] == '\n' || data[len - 1] == '\r')) {
        len--;
    }
    if (len == 0) {
        return n;
    }
    if (len >= 5 && memcmp(data, "HTTP/", 5) == 0) {
        /* A new status line: whatever came before was an interim (1xx)
         * response whose headers are not the answer's. */
        apr_table_clear(b->headers);
        return n;
    }
    if (data[0] == ' ' || data[0] == '\t') {
        /* obs-fold: a continuation of the previous header's value. */
        const apr_array_header_t *arr = apr_table_elts(b->headers);
        if (arr->nelts > 0) {
            apr_table_entry_t *last = &((apr_table_entry_t *)arr->elts)[arr->nelts - 1];
            v = data;
            ve = data + len;
            while (v < ve && (*v == ' ' || *v == '\t')) {
                v++;
            }
            last->val = apr_pstrcat(b->p, last->val, " ", apr_pstrmemdup(b->p, v, ve - v),
                                    NULL);
        }
        return n;
    }
    colon = memchr(data, ':', len);
    if (!colon || colon == data) {
        return n;
    }
    name = apr_pstrmemdup(b->p, data, colon - data);
    for (i = 0; name[i]; i++) {
        name[i] = (char)apr_tolower(name[i]);
    }
    v = colon + 1;
    ve = data + len;
    while (v < ve && (*v == ' ' || *v == '\t')) {
        v++;
    }
    while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) {
        ve--;
    }
    apr_table_addn(b->headers, name, apr_pstrmemdup(b->p, v, ve - v));
    return n;
}

/* Adds the extra CA bundle to the store libcurl already filled with the
 * system's, instead of replacing it as CURLOPT_CAINFO would. */
static CURLcode http_on_sslctx(CURL *h, void *sslctx, void *baton)
{
    http_baton_t *b = baton;

    (void)h;
    if (SSL_CTX_load_verify_locations((SSL_CTX *)sslctx, b->ca_file, NULL) != 1) {
        /* The error queue is per thread; do not leave ours for the next user. */
        ERR_clear_error();
        return CURLE_SSL_CACERT_BADFILE;
    }
    return CURLE_OK;
}

/* ---------------------------------------------------------------------- */
/* Redaction                                                               */

static void http_needle_add(apr_array_header_t *needles, const char *s, apr_size_t min)
{
    if (s && *s && strlen(s) >= min) {
        APR_ARRAY_PUSH(needles, const char *) = s;
    }
}

static int http_hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

static char *http_unescape(apr_pool_t *p, const char *s, apr_size_t n)
{
    char *out = apr_palloc(p, n + 1), *o = out;
    apr_size_t i;

    for (i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = http_hexval(s[i + 1])) >= 0
            && (lo = http_hexval(s[i + 2])) >= 0) {
            *o++ = (char)(hi * 16 + lo);
            i += 2;
        }
        else {
            *o++ = s[i] == '+' ? ' ' : s[i];
        }
    }
    *o = '\0';
    return out;
}

/* Needles for one hidden query value: as sent, and decoded. */
typedef struct {
    apr_pool_t *pool;
    apr_array_header_t *needles;
} http_qbaton_t;

static void http_query_value(void *baton, const char *v, apr_size_t n)
{
    http_qbaton_t *qb = baton;

    http_needle_add(qb->needles, apr_pstrmemdup(qb->pool, v, n), HTTP_MIN_IMPLICIT);
    http_needle_add(qb->needles, http_unescape(qb->pool, v, n), HTTP_MIN_IMPLICIT);
}

/*
 * Returns the query with every value replaced by the marker, and adds the
 * values (as sent and decoded) to the needles hunted for in libcurl's text.
 */
static const char *http_query_redact(apr_pool_t *p, const char *q, apr_array_header_t *needles)
{
    http_qbaton_t qb = { p, needles };

    /* q is libcurl's and freed before the error is written: keep a copy. */
    q = apr_pstrdup(p, q);
    http_needle_add(needles, q, HTTP_MIN_IMPLICIT);
    return svc_redact_query(p, q, http_query_value, &qb);
}

/*
 * One pass over the text: at each position the longest needle that matches
 * is replaced, so a secret that contains another is hidden whole, and the
 * markers already in the text are left as they are.
 */
static const char *http_redact(apr_pool_t *p, const char *text,
                               const apr_array_header_t *needles)
{
    apr_size_t len = strlen(text), mlen = sizeof(HTTP_REDACTED) - 1, i = 0;
    char *out, *o;

    if (needles->nelts == 0) {
        return text;
    }
    /* Worst case: every byte is a one-byte secret. */
    out = o = apr_palloc(p, len * mlen + 1);
    while (i < len) {
        apr_size_t best = 0;
        int k;

        if (len - i >= mlen && memcmp(text + i, HTTP_REDACTED, mlen) == 0) {
            memcpy(o, HTTP_REDACTED, mlen);
            o += mlen;
            i += mlen;
            continue;
        }
        for (k = 0; k < needles->nelts; k++) {
            const char *nd = APR_ARRAY_IDX(needles, k, const char *);
            apr_size_t nl = strlen(nd);
            if (nl > best && nl <= len - i && memcmp(text + i, nd, nl) == 0) {
                best = nl;
            }
        }
        if (best) {
            memcpy(o, HTTP_REDACTED, mlen);
            o += mlen;
            i += best;
        }
        else {
            *o++ = text[i++];
        }
    }
    *o = '\0';
    return out;
}

/* ---------------------------------------------------------------------- */
/* Checking the request                                                    */

static int http_is_tchar(unsigned char c)
{
    return apr_isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int http_is_token(const char *s)
{
    if (!s || !*s) {
        return 0;
    }
    for (; *s; s++) {
        if (!http_is_tchar((unsigned char)*s)) {
            return 0;
        }
    }
    return 1;
}

/* Field values: visible characters, spaces, tabs and obs-text; never CR,
 * LF or another control character (which is how headers get injected). */
static int http_is_field_value(const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            return 0;
        }
    }
    return 1;
}

/*
 * Parses and checks the URL. On success *pshown is the URL as it may appear
 * in an error: no userinfo (refused anyway), no fragment, query values
 * replaced by the marker.
 */
static apr_status_t http_check_url(CURLU *u, const char *url, apr_pool_t *p,
                                   apr_array_header_t *needles, const char **pshown,
                                   const char **pwhy)
{
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *query = NULL, *tmp = NULL;
    apr_status_t rv = SVC_HTTP_EURL;
    const char *s;

    *pshown = "(URL not shown)";
    if (!url || !*url) {
        *pwhy = "no URL was given";
        return SVC_HTTP_EURL;
    }
    /* Spaces and controls are never valid in a URL; libcurl would refuse
     * most of them too, but the guard should not depend on its leniency. */
    for (s = url; *s; s++) {
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s == 0x7f) {
            *pwhy = "the URL contains a space or a control character";
            return SVC_HTTP_EURL;
        }
    }
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
        *pwhy = "the URL is not valid";
        return SVC_HTTP_EURL;
    }
    if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK
        || (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0)) {
        *pwhy = "only http and https URLs are accepted";
        goto cleanup;
    }
    if (curl_url_get(u, CURLUPART_USER, &tmp, 0) != CURLUE_NO_USER
        || curl_url_get(u, CURLUPART_PASSWORD, &tmp, 0) != CURLUE_NO_PASSWORD
        || curl_url_get(u, CURLUPART_OPTIONS, &tmp, 0) != CURLUE_NO_OPTIONS) {
        *pwhy = "URLs with credentials (user:password@) are not accepted";
        goto cleanup;
    }
    if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host) {
        *pwhy = "the URL has no host";
        goto cleanup;
    }
    if (curl_url_get(u, CURLUPART_PORT, &port, 0) != CURLUE_OK) {
        port = NULL;
    }
    if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
        path = NULL;
    }
    if (curl_url_get(u, CURLUPART_QUERY, &query, 0) != CURLUE_OK) {
        query = NULL;
    }
    *pshown = apr_pstrcat(p, scheme, "://", host, port ? ":" : "", port ? port : "",
                          path ? path : "/", query ? "?" : "",
                          query ? http_query_redact(p, query, needles) : "", NULL);
    rv = APR_SUCCESS;

cleanup:
    curl_free(tmp);
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(query);
    return rv;
}

/*
 * Turns the request headers into libcurl's list, refusing anything that
 * could split a header. *plist is set as soon as there is one, so the
 * caller frees it on every path.
 */
static apr_status_t http_build_headers(const svc_http_req_t *req, apr_pool_t *p,
                                       apr_array_header_t *needles, int has_body,
                                       struct curl_slist **plist, const char **pwhy)
{
    const apr_array_header_t *arr;
    const apr_table_entry_t *e;
    int i, have_ctype = 0, have_expect = 0;
    struct curl_slist *tmp;
    const char *line;

    *plist = NULL;
    if (req->headers) {
        arr = apr_table_elts(req->headers);
        e = (const apr_table_entry_t *)arr->elts;
        for (i = 0; i < arr->nelts; i++) {
            const char *val = e[i].val ? e[i].val : "";
            if (!http_is_token(e[i].key)) {
                *pwhy = "a request header name is not a valid token";
                return SVC_HTTP_EHEADER;
            }
            if (!http_is_field_value(val)) {
                *pwhy = apr_psprintf(p, "the request header %s contains CR, LF or another "
                                     "control character", e[i].key);
                return SVC_HTTP_EHEADER;
            }
            if (!strcasecmp(e[i].key, "Content-Length")
                || !strcasecmp(e[i].key, "Transfer-Encoding")) {
                *pwhy = apr_psprintf(p, "the request header %s is set by the client itself",
                                     e[i].key);
                return SVC_HTTP_EHEADER;
            }
            if (!strcasecmp(e[i].key, "Authorization")
                || !strcasecmp(e[i].key, "Proxy-Authorization")
                || !strcasecmp(e[i].key, "Cookie")) {
                const char *sp = strchr(val, ' ');
                http_needle_add(needles, val, 1);
                if (sp) {
                    http_needle_add(needles, sp + 1, 1);
                }
            }
            have_ctype |= !strcasecmp(e[i].key, "Content-Type");
            have_expect |= !strcasecmp(e[i].key, "Expect");
        }
        for (i = 0; i < arr->nelts; i++) {
            const char *val = e[i].val ? e[i].val : "";
            /* libcurl reads "Name:" as "remove the header"; "Name;" sends it empty. */
            line = *val ? apr_pstrcat(p, e[i].key, ": ", val, NULL)
                        : apr_pstrcat(p, e[i].key, ";", NULL);
            if (!(tmp = curl_slist_append(*plist, line))) {
                goto nomem;
            }
            *plist = tmp;
        }
    }
    /* A second of waiting for "100 Continue" buys nothing here. */
    if (!have_expect) {
        if (!(tmp = curl_slist_append(*plist, "Expect:"))) {
            goto nomem;
        }
        *plist = tmp;
    }
    /* libcurl would label a body form-urlencoded; send no guess instead. */
    if (has_body && !have_ctype) {
        if (!(tmp = curl_slist_append(*plist, "Content-Type:"))) {
            goto nomem;
        }
        *plist = tmp;
    }
    return APR_SUCCESS;

nomem:
    *pwhy = "out of memory building the request headers";
    return SVC_HTTP_EIO;
}

/* ---------------------------------------------------------------------- */

static apr_status_t http_map(CURLcode rc, const http_baton_t *b, const char **pkind)
{
    switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
        *pkind = "timed out";
        return SVC_HTTP_ETIMEOUT;
    case CURLE_FILESIZE_EXCEEDED:
        *pkind = "response too large";
        return SVC_HTTP_ETOOBIG;
    case CURLE_WRITE_ERROR:
        if (b->too_big || b->headers_too_big) {
            *pkind = "response too large";
            return SVC_HTTP_ETOOBIG;
        }
        *pkind = b->no_memory ? "out of memory" : "transfer failed";
        return SVC_HTTP_EIO;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
        if (b->blocked) {
            *pkind = "refused by the address guard";
            return SVC_HTTP_EBLOCKED;
        }
        *pkind = "could not connect";
        return SVC_HTTP_ECONNECT;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
        *pkind = "bad URL";
        return SVC_HTTP_EURL;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_USE_SSL_FAILED:
    case CURLE_SSL_CLIENTCERT:
        *pkind = "TLS failed";
        return SVC_HTTP_ETLS;
    default:
        *pkind = "transfer failed";
        return SVC_HTTP_EIO;
    }
}

/* Sets an option, or leaves the function with the option's failure. */
#define HTTP_SETOPT(opt, val)                                                 \
    do {                                                                      \
        if ((crc = curl_easy_setopt(h, opt, val)) != CURLE_OK) {              \
            why = apr_psprintf(p, "cannot set " #opt ": %s",                  \
                               curl_easy_strerror(crc));                      \
            rv = SVC_HTTP_EIO;                                                \
            goto cleanup;                                                     \
        }                                                                     \
    } while (0)

apr_status_t svc_http_do(apr_pool_t *p, const svc_http_req_t *req, svc_http_resp_t **presp)
{
    svc_http_resp_t *resp;
    http_baton_t b;
    apr_array_header_t *needles;
    const char *method = "GET", *shown = "(URL not shown)", *why = NULL, *kind = "";
    const char *const *sec;
    char errbuf[CURL_ERROR_SIZE];
    struct curl_slist *hdrs = NULL;
    CURL *h = NULL;
    CURLU *u = NULL;
    CURLcode crc = CURLE_OK;
    apr_status_t rv;
    long code = 0;
    char *ip = NULL;
    int has_body;

    resp = apr_pcalloc(p, sizeof(*resp));
    resp->headers = apr_table_make(p, 16);
    resp->body = apr_pstrdup(p, "");
    resp->primary_ip = "";
    *presp = resp;

    memset(&b, 0, sizeof(b));
    b.p = p;
    b.req = req;
    b.headers = resp->headers;
    b.max_response = req->max_response ? req->max_response : SVC_HTTP_MAX_RESPONSE;
    b.ca_file = req->ca_file;
    errbuf[0] = '\0';

    needles = apr_array_make(p, 8, sizeof(const char *));
    for (sec = req->secrets; sec && *sec; sec++) {
        http_needle_add(needles, *sec, 1);
    }

    if (req->method && !http_is_token(req->method)) {
        method = "(invalid method)";
        why = "the method is not a valid token";
        rv = SVC_HTTP_EHEADER;
        goto cleanup;
    }
    if (req->method) {
        method = req->method;
    }

    if (!(u = curl_url())) {
        why = "out of memory";
        rv = SVC_HTTP_EIO;
        goto cleanup;
    }
    if ((rv = http_check_url(u, req->url, p, needles, &shown, &why)) != APR_SUCCESS) {
        goto cleanup;
    }
    /* The same verdict as when the URL was stored (svc_http_check_untrusted):
     * one set of rules. The connected address is judged again below. */
    if (req->untrusted
        && (resp->guard = http_untrusted_why(p, req->url, req->allow_private)) != NULL) {
        why = apr_pstrcat(p, "refused by the address guard: the URL ", resp->guard, NULL);
        rv = SVC_HTTP_EBLOCKED;
        goto cleanup;
    }

    has_body = (req->body != NULL) || !strcmp(method, "POST") || !strcmp(method, "PUT")
               || !strcmp(method, "PATCH");
    if ((rv = http_build_headers(req, p, needles, has_body, &hdrs, &why)) != APR_SUCCESS) {
        goto cleanup;
    }

    if (!(h = curl_easy_init())) {
        why = "cannot create a curl handle";
        rv = SVC_HTTP_EIO;
        goto cleanup;
    }
    HTTP_SETOPT(CURLOPT_CURLU, u);
    /* Signals would hit whichever httpd thread is around; the threaded
     * resolver keeps DNS within the timeouts without them. */
    HTTP_SETOPT(CURLOPT_NOSIGNAL, 1L);
    HTTP_SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
    HTTP_SETOPT(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    HTTP_SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
    /* An empty proxy disables http_proxy and friends from the environment:
     * through a proxy the guard would only ever see the proxy's address. */
    HTTP_SETOPT(CURLOPT_PROXY, "");
    HTTP_SETOPT(CURLOPT_CONNECTTIMEOUT_MS, req->connect_timeout_ms > 0
                                           ? req->connect_timeout_ms
                                           : (long)SVC_HTTP_CONNECT_TIMEOUT_MS);
    /* The whole exchange, so a peer trickling a byte at a time is cut off
     * too, not only one that stays silent. */
    HTTP_SETOPT(CURLOPT_TIMEOUT_MS, req->timeout_ms > 0 ? req->timeout_ms
                                                        : (long)SVC_HTTP_TIMEOUT_MS);
    HTTP_SETOPT(CURLOPT_SSL_VERIFYPEER, 1L);
    HTTP_SETOPT(CURLOPT_SSL_VERIFYHOST, 2L);
    HTTP_SETOPT(CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    if (req->ca_file) {
        crc = curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, http_on_sslctx);
        if (crc == CURLE_OK) {
            HTTP_SETOPT(CURLOPT_SSL_CTX_DATA, &b);
            /* A cached store would be shared and our addition lost or
             * leaked into it; this handle builds its own. */
            crc = curl_easy_setopt(h, CURLOPT_CA_CACHE_TIMEOUT, 0L);
            if (crc != CURLE_OK && crc != CURLE_UNKNOWN_OPTION) {
                HTTP_SETOPT(CURLOPT_CA_CACHE_TIMEOUT, 0L);
            }
        }
        else {
            /* Not OpenSSL underneath: the bundle can only replace the store. */
            HTTP_SETOPT(CURLOPT_CAINFO, req->ca_file);
        }
    }
    HTTP_SETOPT(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)b.max_response);
    HTTP_SETOPT(CURLOPT_WRITEFUNCTION, http_on_body);
    HTTP_SETOPT(CURLOPT_WRITEDATA, &b);
    HTTP_SETOPT(CURLOPT_HEADERFUNCTION, http_on_header);
    HTTP_SETOPT(CURLOPT_HEADERDATA, &b);
    HTTP_SETOPT(CURLOPT_OPENSOCKETFUNCTION, http_opensocket);
    HTTP_SETOPT(CURLOPT_OPENSOCKETDATA, &b);
    HTTP_SETOPT(CURLOPT_ERRORBUFFER, errbuf);
    HTTP_SETOPT(CURLOPT_USERAGENT, HTTP_USER_AGENT);
    HTTP_SETOPT(CURLOPT_HTTPHEADER, hdrs);

    if (!strcmp(method, "HEAD") && !req->body) {
        HTTP_SETOPT(CURLOPT_NOBODY, 1L);
    }
    else if (has_body) {
        /* POSTFIELDS does not copy: req->body outlives the transfer. A
         * method without a body of its own still sends Content-Length: 0. */
        HTTP_SETOPT(CURLOPT_POSTFIELDSIZE_LARGE,
                    (curl_off_t)(req->body ? req->body_len : 0));
        HTTP_SETOPT(CURLOPT_POSTFIELDS, req->body ? req->body : "");
        if (strcmp(method, "POST") != 0) {
            HTTP_SETOPT(CURLOPT_CUSTOMREQUEST, method);
        }
    }
    else if (!strcmp(method, "GET")) {
        HTTP_SETOPT(CURLOPT_HTTPGET, 1L);
    }
    else {
        HTTP_SETOPT(CURLOPT_CUSTOMREQUEST, method);
    }

    crc = curl_easy_perform(h);

    if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK) {
        resp->status = (int)code;
    }
    if (curl_easy_getinfo(h, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip) {
        resp->primary_ip = apr_pstrdup(p, ip);
    }
    if (crc != CURLE_OK) {
        rv = http_map(crc, &b, &kind);
        if (rv == SVC_HTTP_ETOOBIG) {
            why = apr_psprintf(p, "%s: the response is larger than the limit of %"
                               APR_SIZE_T_FMT " bytes%s", kind, b.max_response,
                               b.headers_too_big ? " (headers)" : "");
        }
        else if (rv == SVC_HTTP_EBLOCKED) {
            /* The address is left out on purpose: it would tell a tenant
             * how names resolve inside our network. */
            resp->guard = "reaches a loopback, private, link-local or metadata address, "
                          "which this server does not call";
            why = apr_pstrcat(p, kind, ": the host is a loopback, private, link-local or "
                              "metadata address", NULL);
        }
        else {
            why = apr_pstrcat(p, kind, ": ", errbuf[0] ? errbuf : curl_easy_strerror(crc),
                              NULL);
        }
        goto cleanup;
    }

    resp->body = apr_palloc(p, b.body_len + 1);
    if (b.body_len) {
        memcpy(resp->body, b.body, b.body_len);
    }
    resp->body[b.body_len] = '\0';
    resp->body_len = b.body_len;
    rv = APR_SUCCESS;

cleanup:
    if (rv != APR_SUCCESS) {
        resp->error = http_redact(p, apr_psprintf(p, "%s %s: %s", method, shown,
                                                  why ? why : "failed"), needles);
    }
    /* The handle refers to u, hdrs and b: it goes first. */
    if (h) {
        curl_easy_cleanup(h);
    }
    curl_url_cleanup(u);
    curl_slist_free_all(hdrs);
    free(b.body);
    return rv;
}

const char *svc_http_check_base_url(apr_pool_t *p, const char *url, const char **pnorm)
{
    const char *host, *s;
    apr_size_t n;

    if (strncmp(url, "https://", 8) == 0) {
        host = url + 8;
    }
    else if (strncmp(url, "http://", 7) == 0) {
        host = url + 7;
    }
    else {
        return "must be an http:// or https:// URL";
    }
    if (!*host || *host == '/' || *host == ':') {
        return "has no host";
    }
    for (s = url; *s; s++) {
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f || *s == '\\') {
            return "contains spaces, control or non-ASCII characters";
        }
    }
    if (strpbrk(url, "?#")) {
        return "must not have a query or fragment";
    }
    if (memchr(host, '@', strcspn(host, "/"))) {
        return "must not carry user information";
    }
    n = strlen(url);
    while (n > 0 && url[n - 1] == '/') {
        n--;
    }
    *pnorm = apr_pstrmemdup(p, url, n);
    return NULL;
}

char *svc_url_encode(apr_pool_t *p, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    apr_size_t n = strlen(s), i, o = 0;
    char *out = apr_palloc(p, n * 3 + 1);

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
            || c == '-' || c == '.' || c == '_' || c == '~') {
            out[o++] = (char)c;
        }
        else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
    return out;
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int svc_url_decode_form(char *s)
{
    char *out = s;

    for (; *s; s++) {
        if (*s == '+') {
            *out++ = ' ';
        }
        else if (*s == '%') {
            int hi = hex_value(s[1]), lo = hi < 0 ? -1 : hex_value(s[2]);
            if (lo < 0 || (hi == 0 && lo == 0)) {
                return 0;
            }
            *out++ = (char)(hi * 16 + lo);
            s += 2;
        }
        else {
            *out++ = *s;
        }
    }
    *out = '\0';
    return 1;
}
