/*
 * test_base_http.c: the outbound HTTP client against small servers of our own,
 * each a thread on 127.0.0.1 with an ephemeral port, behaving well or
 * badly (silent, trickling, oversized, redirecting, TLS with a throwaway
 * certificate).
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* ---------------------------------------------------------------------- */
/* Test servers                                                            */

typedef enum {
    SRV_ECHO,      /* 200, body = the raw request received */
    SRV_SILENT,    /* accepts, reads, never answers */
    SRV_TRICKLE,   /* answers headers, then one body byte every 100 ms */
    SRV_BODY,      /* 200 with body_size bytes, with or without Content-Length */
    SRV_REDIRECT,  /* 302 to another place */
    SRV_TLS        /* TLS, 200 "ok" */
} srv_mode_e;

typedef struct {
    srv_mode_e mode;
    apr_size_t body_size;
    int send_length;
    SSL_CTX *tls;
    int lfd;
    int port;
    int stop[2];
    pthread_t thread;
    /* Read by the test only after the thread is joined. */
    int connections;
    char request[16384];
    apr_size_t request_len;
} srv_t;

/* Waits for fd to be readable; 0 when the stop pipe fired or time ran out. */
static int srv_wait(srv_t *s, int fd, int ms)
{
    struct pollfd pf[2];

    pf[0].fd = fd;
    pf[0].events = POLLIN;
    pf[1].fd = s->stop[0];
    pf[1].events = POLLIN;
    if (poll(pf, 2, ms) <= 0 || (pf[1].revents & POLLIN)) {
        return 0;
    }
    return (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

static int srv_send(int fd, const char *buf, apr_size_t len)
{
    while (len) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n <= 0) {
            return -1;
        }
        buf += n;
        len -= (apr_size_t)n;
    }
    return 0;
}

/* Reads one request (head and Content-Length body) into s->request. */
static int srv_read_request(srv_t *s, int fd)
{
    apr_size_t need = 0;
    char *end;

    s->request_len = 0;
    s->request[0] = '\0';
    for (;;) {
        ssize_t n;
        if (s->request_len == sizeof(s->request) - 1 || !srv_wait(s, fd, 5000)) {
            return -1;
        }
        n = recv(fd, s->request + s->request_len, sizeof(s->request) - 1 - s->request_len, 0);
        if (n <= 0) {
            return -1;
        }
        s->request_len += (apr_size_t)n;
        s->request[s->request_len] = '\0';
        end = strstr(s->request, "\r\n\r\n");
        if (end && !need) {
            const char *cl = strcasestr(s->request, "\r\nContent-Length:");
            need = (apr_size_t)(end + 4 - s->request);
            if (cl && cl < end) {
                need += (apr_size_t)strtoul(cl + 17, NULL, 10);
            }
        }
        if (need && s->request_len >= need) {
            return 0;
        }
    }
}

/* Waits until the client goes away or the test ends. */
static void srv_linger(srv_t *s, int fd)
{
    char buf[512];

    while (srv_wait(s, fd, 10000)) {
        if (recv(fd, buf, sizeof(buf), 0) <= 0) {
            return;
        }
    }
}

static void srv_serve_tls(srv_t *s, int fd)
{
    static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                                 "Connection: close\r\n\r\nok";
    /* Generous: under valgrind, on a busy machine, the client's handshake
     * alone has taken more than five seconds (the server then hung up, and
     * the client saw a reset). */
    struct timeval tv = { 60, 0 };
    SSL *ssl = SSL_new(s->tls);
    char buf[4096];
    apr_size_t got = 0;

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (!ssl) {
        return;
    }
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
        while (got < sizeof(buf) - 1) {
            int n = SSL_read(ssl, buf + got, (int)(sizeof(buf) - 1 - got));
            if (n <= 0) {
                break;
            }
            got += (apr_size_t)n;
            buf[got] = '\0';
            if (strstr(buf, "\r\n\r\n")) {
                SSL_write(ssl, answer, (int)sizeof(answer) - 1);
                SSL_shutdown(ssl);
                /* Closing with the client's last bytes (its close_notify,
                 * TLS 1.3 tickets) unread would send a reset, which can
                 * reach the client before it has read the answer. */
                shutdown(fd, SHUT_WR);
                srv_linger(s, fd);
                break;
            }
        }
    }
    SSL_free(ssl);
    ERR_clear_error();
}

static void srv_serve(srv_t *s, int fd)
{
    char head[512];
    int n;

    if (s->mode == SRV_TLS) {
        srv_serve_tls(s, fd);
        return;
    }
    if (srv_read_request(s, fd) != 0) {
        return;
    }
    switch (s->mode) {
    case SRV_ECHO:
        n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                     "X-Test-Reply: echo\r\nX-Test-Multi: one\r\nX-Test-Multi: two\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n", s->request_len);
        if (srv_send(fd, head, (apr_size_t)n) == 0) {
            srv_send(fd, s->request, s->request_len);
        }
        break;
    case SRV_SILENT:
        srv_linger(s, fd);
        break;
    case SRV_TRICKLE:
        n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n");
        if (srv_send(fd, head, (apr_size_t)n) != 0) {
            break;
        }
        /* A byte per 100 ms: never idle long enough for an idle timeout. */
        for (;;) {
            struct pollfd pf[2];
            char c;
            pf[0].fd = fd;
            pf[0].events = POLLIN;
            pf[1].fd = s->stop[0];
            pf[1].events = POLLIN;
            if (poll(pf, 2, 100) < 0 || (pf[1].revents & POLLIN)) {
                break;
            }
            if (pf[0].revents && recv(fd, &c, 1, 0) <= 0) {
                break;                          /* the client gave up */
            }
            if (srv_send(fd, "x", 1) != 0) {
                break;
            }
        }
        break;
    case SRV_BODY: {
        char chunk[16384];
        apr_size_t left = s->body_size;
        if (s->send_length) {
            n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n",
                         s->body_size);
        }
        else {
            n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
        }
        if (srv_send(fd, head, (apr_size_t)n) != 0) {
            break;
        }
        memset(chunk, 'b', sizeof(chunk));
        while (left) {
            apr_size_t k = left < sizeof(chunk) ? left : sizeof(chunk);
            if (srv_send(fd, chunk, k) != 0) {
                break;
            }
            left -= k;
        }
        break;
    }
    case SRV_REDIRECT:
        n = snprintf(head, sizeof(head), "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:%d/"
                     "elsewhere\r\nContent-Length: 0\r\n\r\n", s->port);
        srv_send(fd, head, (apr_size_t)n);
        break;
    case SRV_TLS:
        break;
    }
}

static void *srv_main(void *arg)
{
    srv_t *s = arg;
    int fd;

    for (;;) {
        struct pollfd pf[2];
        pf[0].fd = s->lfd;
        pf[0].events = POLLIN;
        pf[1].fd = s->stop[0];
        pf[1].events = POLLIN;
        if (poll(pf, 2, -1) < 0 && errno != EINTR) {
            break;
        }
        if (pf[0].revents & POLLIN) {
            fd = accept(s->lfd, NULL, NULL);
            if (fd >= 0) {
                s->connections++;
                srv_serve(s, fd);
                close(fd);
            }
            continue;
        }
        if (pf[1].revents & POLLIN) {
            break;
        }
    }
    /* Count what is still queued, so "no connection" means none at all. */
    fcntl(s->lfd, F_SETFL, O_NONBLOCK);
    while ((fd = accept(s->lfd, NULL, NULL)) >= 0) {
        s->connections++;
        close(fd);
    }
    return NULL;
}

static srv_t *srv_start(srv_mode_e mode)
{
    srv_t *s = calloc(1, sizeof(*s));

    if (!s) {
        abort();
    }
    s->mode = mode;
    s->lfd = svc_test_listen_local(&s->port);
    if (s->lfd < 0 || pipe(s->stop) != 0) {
        fprintf(stderr, "cannot start a test server: %s\n", strerror(errno));
        abort();
    }
    return s;
}

static void srv_run(srv_t *s)
{
    if (pthread_create(&s->thread, NULL, srv_main, s) != 0) {
        abort();
    }
}

static srv_t *srv_new(srv_mode_e mode)
{
    srv_t *s = srv_start(mode);
    srv_run(s);
    return s;
}

/* Stops and joins the thread; the counters may be read afterwards. */
static void srv_stop(srv_t *s)
{
    if (write(s->stop[1], "x", 1) != 1) {
        abort();
    }
    pthread_join(s->thread, NULL);
    close(s->lfd);
    close(s->stop[0]);
    close(s->stop[1]);
}

static void srv_free(srv_t *s)
{
    free(s);
}

static const char *url_of(apr_pool_t *p, const srv_t *s, const char *host, const char *rest)
{
    return apr_psprintf(p, "http://%s:%d%s", host, s->port, rest);
}

static void req_init(svc_http_req_t *req, const char *method, const char *url)
{
    memset(req, 0, sizeof(*req));
    req->method = method;
    req->url = url;
    /* Generous: under valgrind on a busy machine, loading the system CA
     * bundle and a TLS handshake take seconds. Tests of timeouts set their
     * own short values. */
    req->connect_timeout_ms = 30000;
    req->timeout_ms = 60000;
}

/* ---------------------------------------------------------------------- */
/* Exchanges                                                               */

SVC_TEST(test_get)
{
    srv_t *s = srv_new(SRV_ECHO);
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;
    apr_status_t rv;

    req_init(&req, "GET", url_of(p, s, "127.0.0.1", "/hello?x=1"));
    rv = svc_http_do(p, &req, &resp);
    SVC_CHECK_INT(rv, APR_SUCCESS);
    SVC_CHECK(resp != NULL);
    SVC_CHECK_INT(resp->status, 200);
    SVC_CHECK(resp->error == NULL);
    SVC_CHECK(strncmp(resp->body, "GET /hello?x=1 HTTP/1.1\r\n", 25) == 0);
    SVC_CHECK(strstr(resp->body, "\r\nUser-Agent: mod_svc\r\n") != NULL);
    SVC_CHECK(strstr(resp->body, "Expect") == NULL);
    SVC_CHECK_INT(resp->body_len, strlen(resp->body));
    SVC_CHECK_STR(resp->primary_ip, "127.0.0.1");
    /* Names are lowercased in the table; lookups ignore case anyway. */
    SVC_CHECK_STR(apr_table_get(resp->headers, "X-Test-Reply"), "echo");
    SVC_CHECK_STR(apr_table_get(resp->headers, "content-type"), "text/plain");
    SVC_CHECK(apr_table_get(resp->headers, "HTTP/1.1 200 OK") == NULL);
    {
        const apr_array_header_t *arr = apr_table_elts(resp->headers);
        const apr_table_entry_t *e = (const apr_table_entry_t *)arr->elts;
        int i, multi = 0, sawname = 0;
        for (i = 0; i < arr->nelts; i++) {
            if (!strcmp(e[i].key, "x-test-reply")) {
                sawname = 1;
            }
            if (!strcmp(e[i].key, "x-test-multi")) {
                multi++;
            }
        }
        SVC_CHECK(sawname);
        SVC_CHECK_INT(multi, 2);
    }
    srv_stop(s);
    SVC_CHECK_INT(s->connections, 1);
    srv_free(s);
}

SVC_TEST(test_post_body_and_headers)
{
    srv_t *s = srv_new(SRV_ECHO);
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;
    static const char body[] = "{\"hello\":\"world\"}";
    apr_status_t rv;

    req_init(&req, "POST", url_of(p, s, "127.0.0.1", "/submit"));
    req.headers = apr_table_make(p, 4);
    apr_table_set(req.headers, "Content-Type", "application/json");
    apr_table_set(req.headers, "X-Custom", "value with\ttab");
    apr_table_set(req.headers, "X-Empty", "");
    req.body = body;
    req.body_len = sizeof(body) - 1;
    rv = svc_http_do(p, &req, &resp);
    SVC_CHECK_INT(rv, APR_SUCCESS);
    SVC_CHECK_INT(resp->status, 200);
    SVC_CHECK(strncmp(resp->body, "POST /submit HTTP/1.1\r\n", 23) == 0);
    SVC_CHECK(strstr(resp->body, "\r\nContent-Type: application/json\r\n") != NULL);
    SVC_CHECK(strstr(resp->body, "\r\nX-Custom: value with\ttab\r\n") != NULL);
    SVC_CHECK(strstr(resp->body, "\r\nX-Empty:") != NULL);
    SVC_CHECK(strstr(resp->body, "\r\nContent-Length: 17\r\n") != NULL);
    SVC_CHECK(strstr(resp->body, "Expect") == NULL);
    SVC_CHECK(strstr(resp->body, "x-www-form-urlencoded") == NULL);
    SVC_CHECK(resp->body_len > sizeof(body) - 1);
    SVC_CHECK(strcmp(resp->body + resp->body_len - (sizeof(body) - 1), body) == 0);
    srv_stop(s);
    srv_free(s);
}

SVC_TEST(test_other_methods)
{
    srv_t *s = srv_new(SRV_ECHO);
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;

    /* PUT without a body still says how long its (empty) body is. */
    req_init(&req, "PUT", url_of(p, s, "127.0.0.1", "/thing"));
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), APR_SUCCESS);
    SVC_CHECK(strncmp(resp->body, "PUT /thing HTTP/1.1\r\n", 21) == 0);
    SVC_CHECK(strstr(resp->body, "\r\nContent-Length: 0\r\n") != NULL);
    SVC_CHECK(strstr(resp->body, "Content-Type") == NULL);

    req_init(&req, "DELETE", url_of(p, s, "127.0.0.1", "/thing"));
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), APR_SUCCESS);
    SVC_CHECK(strncmp(resp->body, "DELETE /thing HTTP/1.1\r\n", 24) == 0);

    req_init(&req, "PATCH", url_of(p, s, "127.0.0.1", "/thing"));
    req.body = "a=b";
    req.body_len = 3;
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), APR_SUCCESS);
    SVC_CHECK(strncmp(resp->body, "PATCH /thing HTTP/1.1\r\n", 23) == 0);
    SVC_CHECK(resp->body_len > 3 && strcmp(resp->body + resp->body_len - 3, "a=b") == 0);

    /* No method: GET. */
    req_init(&req, NULL, url_of(p, s, "127.0.0.1", "/"));
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), APR_SUCCESS);
    SVC_CHECK(strncmp(resp->body, "GET / HTTP/1.1\r\n", 16) == 0);
    srv_stop(s);
    SVC_CHECK_INT(s->connections, 4);
    srv_free(s);
}

SVC_TEST(test_redirect_not_followed)
{
    srv_t *s = srv_new(SRV_REDIRECT);
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;

    req_init(&req, "GET", url_of(p, s, "127.0.0.1", "/start"));
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), APR_SUCCESS);
    SVC_CHECK_INT(resp->status, 302);
    SVC_CHECK_STR(apr_table_get(resp->headers, "location"),
                  apr_psprintf(p, "http://127.0.0.1:%d/elsewhere", s->port));
    SVC_CHECK_INT(resp->body_len, 0);
    SVC_CHECK_STR(resp->body, "");
    srv_stop(s);
    SVC_CHECK_INT(s->connections, 1);
    SVC_CHECK(strstr(s->request, "GET /start ") == s->request);
    srv_free(s);
}

/* ---------------------------------------------------------------------- */
/* Timeouts, sizes, connection failures                                    */

SVC_TEST(test_timeout_silent_server)
{
    srv_t *s = srv_new(SRV_SILENT);
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;

    req_init(&req, "GET", url_of(p, s, "127.0.0.1", "/"));
    req.timeout_ms = 400;
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_ETIMEOUT);
    SVC_CHECK(resp != NULL && resp->error != NULL);
    SVC_CHECK_INT(resp->status, 0);
    srv_stop(s);
    SVC_CHECK_INT(s->connections, 1);
    srv_free(s);
}

SVC_TEST(test_timeout_trickling_server)
{
    srv_t *s = srv_new(SRV_TRICKLE);
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;

    req_init(&req, "GET", url_of(p, s, "127.0.0.1", "/"));
    req.timeout_ms = 500;
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_ETIMEOUT);
    SVC_CHECK(resp->error != NULL);
    /* The headers had come; the body is not handed over on failure. */
    SVC_CHECK_INT(resp->status, 200);
    SVC_CHECK_INT(resp->body_len, 0);
    srv_stop(s);
    srv_free(s);
}

SVC_TEST(test_too_big_streamed)
{
    srv_t *s = srv_start(SRV_BODY);
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;

    /* No Content-Length: only counting while receiving can catch it. */
    s->body_size = 1024 * 1024;
    s->send_length = 0;
    srv_run(s);
    req_init(&req, "GET", url_of(p, s, "127.0.0.1", "/"));
    req.max_response = 10000;
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_ETOOBIG);
    SVC_CHECK(resp->error != NULL && strstr(resp->error, "10000") != NULL);
    SVC_CHECK_INT(resp->body_len, 0);
    srv_stop(s);
    srv_free(s);
}

SVC_TEST(test_too_big_announced)
{
    srv_t *s = srv_start(SRV_BODY);
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;

    s->body_size = 1024 * 1024;
    s->send_length = 1;
    srv_run(s);
    req_init(&req, "GET", url_of(p, s, "127.0.0.1", "/"));
    req.max_response = 10000;
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_ETOOBIG);
    srv_stop(s);
    srv_free(s);
}

SVC_TEST(test_size_at_the_limit)
{
    srv_t *s = srv_start(SRV_BODY);
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;

    s->body_size = 100000;
    s->send_length = 0;
    srv_run(s);
    req_init(&req, "GET", url_of(p, s, "127.0.0.1", "/"));
    req.max_response = 100000;
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), APR_SUCCESS);
    SVC_CHECK_INT(resp->body_len, 100000);
    SVC_CHECK(resp->body[0] == 'b' && resp->body[99999] == 'b' && resp->body[100000] == '\0');
    srv_stop(s);
    srv_free(s);
}

SVC_TEST(test_connect_refused)
{
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;
    int port = 0, fd = svc_test_listen_local(&port);

    /* A port that was just free and is closed again. */
    SVC_CHECK(fd >= 0);
    close(fd);
    req_init(&req, "GET", apr_psprintf(p, "http://127.0.0.1:%d/", port));
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_ECONNECT);
    SVC_CHECK(resp->error != NULL);
    SVC_CHECK_INT(resp->status, 0);
    SVC_CHECK_STR(resp->body, "");
}

/* ---------------------------------------------------------------------- */
/* What is refused before anything is sent                                 */

SVC_TEST(test_header_injection)
{
    srv_t *s = srv_new(SRV_ECHO);
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;
    static const char *const bad_values[] = {
        "a\r\nX-Injected: 1", "a\nb", "a\rb", "a\x01", "a\x7f", NULL
    };
    static const char *const bad_names[] = {
        "X-Bad\r\nX-Injected", "X Bad", "X-Bad:", "", "X-B\xc3\xa4", NULL
    };
    int i;

    for (i = 0; bad_values[i]; i++) {
        req_init(&req, "GET", url_of(p, s, "127.0.0.1", "/"));
        req.headers = apr_table_make(p, 2);
        apr_table_set(req.headers, "X-Fine", "fine");
        apr_table_set(req.headers, "X-Bad", bad_values[i]);
        resp = NULL;
        SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_EHEADER);
        SVC_CHECK(resp != NULL && resp->error != NULL);
    }
    for (i = 0; bad_names[i]; i++) {
        req_init(&req, "GET", url_of(p, s, "127.0.0.1", "/"));
        req.headers = apr_table_make(p, 2);
        apr_table_set(req.headers, bad_names[i], "v");
        SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_EHEADER);
    }
    /* The client frames the body; a caller does not get to lie about it. */
    req_init(&req, "POST", url_of(p, s, "127.0.0.1", "/"));
    req.headers = apr_table_make(p, 2);
    apr_table_set(req.headers, "Content-Length", "5");
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_EHEADER);
    req.headers = apr_table_make(p, 2);
    apr_table_set(req.headers, "transfer-encoding", "chunked");
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_EHEADER);
    /* The method goes on the request line: same rule. */
    req_init(&req, "GET / HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET", url_of(p, s, "127.0.0.1", "/"));
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_EHEADER);
    SVC_CHECK(strstr(resp->error, "Injected") == NULL);
    srv_stop(s);
    SVC_CHECK_INT(s->connections, 0);
    srv_free(s);
}

SVC_TEST(test_bad_urls)
{
    srv_t *s = srv_new(SRV_ECHO);
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;
    const char *bad[] = {
        "file:///etc/passwd",
        apr_psprintf(p, "ftp://127.0.0.1:%d/", s->port),
        apr_psprintf(p, "gopher://127.0.0.1:%d/_GET%%20/", s->port),
        apr_psprintf(p, "dict://127.0.0.1:%d/", s->port),
        apr_psprintf(p, "ldap://127.0.0.1:%d/", s->port),
        apr_psprintf(p, "http://user:hunter2pw@127.0.0.1:%d/", s->port),
        apr_psprintf(p, "http://user@127.0.0.1:%d/", s->port),
        apr_psprintf(p, "http://127.0.0.1:%d/a b", s->port),
        apr_psprintf(p, "http://127.0.0.1:%d/a\r\nX: y", s->port),
        "http://",
        "127.0.0.1/",
        "not a url",
        "",
        NULL
    };
    int i;

    for (i = 0; bad[i]; i++) {
        req_init(&req, "GET", bad[i]);
        resp = NULL;
        if (svc_http_do(p, &req, &resp) != SVC_HTTP_EURL) {
            fprintf(stderr, "  URL not refused: %s\n", bad[i]);
            svc_test_failed_checks++;
        }
        SVC_CHECK(resp != NULL && resp->error != NULL);
        SVC_CHECK(resp->error == NULL || strstr(resp->error, "hunter2pw") == NULL);
    }
    req_init(&req, "GET", NULL);
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_EURL);
    /* The scheme is not case sensitive. */
    req_init(&req, "GET", apr_psprintf(p, "HTTP://127.0.0.1:%d/", s->port));
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), APR_SUCCESS);
    srv_stop(s);
    SVC_CHECK_INT(s->connections, 1);
    srv_free(s);
}

/* ---------------------------------------------------------------------- */
/* The address guard                                                       */

SVC_TEST(test_guard_blocks_loopback)
{
    srv_t *s = srv_new(SRV_ECHO);
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;
    /* Every spelling that ends at 127.0.0.1 or ::1. */
    const char *hosts[] = {
        "127.0.0.1", "localhost", "LOCALHOST", "127.1", "2130706433", "0x7f.0.0.1",
        "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "0.0.0.0", NULL
    };
    int i;

    for (i = 0; hosts[i]; i++) {
        req_init(&req, "GET", url_of(p, s, hosts[i], "/"));
        req.untrusted = 1;
        resp = NULL;
        if (svc_http_do(p, &req, &resp) != SVC_HTTP_EBLOCKED) {
            fprintf(stderr, "  not blocked: %s (%s)\n", hosts[i],
                    resp && resp->error ? resp->error : "success");
            svc_test_failed_checks++;
        }
        SVC_CHECK(resp != NULL && resp->error != NULL);
        SVC_CHECK_STR(resp->primary_ip, "");
    }
    srv_stop(s);
    SVC_CHECK_INT(s->connections, 0);
    srv_free(s);
}

SVC_TEST(test_guard_allow_private)
{
    srv_t *s = srv_new(SRV_ECHO);
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;

    req_init(&req, "GET", url_of(p, s, "127.0.0.1", "/"));
    req.untrusted = 1;
    req.allow_private = 1;
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), APR_SUCCESS);
    SVC_CHECK_INT(resp->status, 200);

    req_init(&req, "GET", url_of(p, s, "localhost", "/"));
    req.untrusted = 1;
    req.allow_private = 1;
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), APR_SUCCESS);
    SVC_CHECK_INT(resp->status, 200);
    SVC_CHECK_STR(resp->primary_ip, "127.0.0.1");

    /* Trusted URLs (operator-configured) are not subject to the guard. */
    req_init(&req, "GET", url_of(p, s, "localhost", "/"));
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), APR_SUCCESS);
    srv_stop(s);
    SVC_CHECK_INT(s->connections, 3);
    srv_free(s);
}

SVC_TEST(test_guard_metadata_always_blocked)
{
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;
    const char *urls[] = {
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        /* 169.254.169.254 in every IPv6 form that carries an IPv4 address
         * (issue 17): compatible, SIIT, NAT64 (well-known and the local
         * prefix at each of RFC 6052's prefix lengths), 6to4, Teredo (the
         * client inverted, or the server). */
        "http://[::169.254.169.254]/",
        "http://[::ffff:0:a9fe:a9fe]/",
        "http://[64:ff9b::169.254.169.254]/",
        "http://[64:ff9b:1::a9fe:a9fe]/",
        "http://[64:ff9b:1:a9fe:a9:fe00::]/",
        "http://[64:ff9b:1:a9:fe:a9fe::]/",
        "http://[64:ff9b:1:0:a9:fea9:fe00:0]/",
        "http://[2002:a9fe:a9fe::1]/",
        "http://[2001:0:4136:e378:8000:63bf:5601:5601]/",
        "http://[2001:0:a9fe:a9fe::f7f7:f7f7]/",
        /* The other metadata addresses the same ways. */
        "http://[64:ff9b:1::a9fe:aa02]/",
        "http://[2001:0:4136:e378:8000:63bf:9b9b:9b37]/",
        /* And the IPv4 spellings resolvers accept. */
        "http://2852039166/",
        "http://0xa9fea9fe/",
        "http://0251.0376.0251.0376/",
        "http://169.254.43518/",
        NULL
    };
    int i;

    /* Refused when the socket would be created: nothing goes on the wire. */
    for (i = 0; urls[i]; i++) {
        req_init(&req, "GET", urls[i]);
        req.untrusted = 1;
        req.allow_private = 1;
        SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_EBLOCKED);
        req.allow_private = 0;
        SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_EBLOCKED);
    }
}

/* Refused before any connection when private addresses are allowed: a
 * spelling of an address other than a.b.c.d, a zone, a port out of range.
 * Nothing listens on the port used: a request that got through would fail
 * with SVC_HTTP_ECONNECT instead. */
SVC_TEST(test_guard_spellings_refused)
{
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;
    int port = 0, fd = svc_test_listen_local(&port);
    const char *hosts[] = {
        "127.1", "2130706433", "0x7f000001", "0x7f.0.0.1", "0177.0.0.1", "0", "127.0.0.01",
        "127.0.0.1.", "[fe80::1%25lo]", "[::1%25lo]", NULL
    };
    int i;

    SVC_CHECK(fd >= 0);
    close(fd);
    for (i = 0; hosts[i]; i++) {
        req_init(&req, "GET", apr_psprintf(p, "http://%s:%d/", hosts[i], port));
        req.untrusted = 1;
        req.allow_private = 1;
        resp = NULL;
        if (svc_http_do(p, &req, &resp) != SVC_HTTP_EBLOCKED) {
            fprintf(stderr, "  not refused: %s (%s)\n", hosts[i],
                    resp && resp->error ? resp->error : "success");
            svc_test_failed_checks++;
        }
        SVC_CHECK(resp != NULL && resp->guard != NULL);
    }
    /* libcurl's parser refuses this one first (the guard would too). */
    req_init(&req, "GET", "http://127.0.0.1:99999/");
    req.untrusted = 1;
    req.allow_private = 1;
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_EURL);
}

/* What svc_http_check_untrusted says of URLs as a tenant writes them: the
 * verdict providers get when a base URL is stored. */
SVC_TEST(test_check_untrusted_table)
{
    static const struct {
        const char *url;
        int allow_private;
        const char *why;        /* a part of the reason, or NULL when accepted */
    } cases[] = {
        { "https://api.openai.com", 0, NULL },
        { "https://api.openai.com:443/x", 0, NULL },
        { "http://my_host.internal:8080", 0, NULL },
        { "http://localhost:11434", 0, NULL },      /* a name: judged when called */
        { "http://8.8.8.8", 0, NULL },
        { "http://[2606:4700::1111]:8443", 0, NULL },
        { "http://127.0.0.1:11434", 1, NULL },
        { "http://[::1]:11434", 1, NULL },
        { "http://10.1.2.3", 1, NULL },
        { "http://127.0.0.1:11434", 0, "SvcProviderAllowPrivate" },
        { "http://[::1]", 0, "SvcProviderAllowPrivate" },
        { "http://[64:ff9b:1::808:808]", 0, "SvcProviderAllowPrivate" },
        { "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]", 0, "SvcProviderAllowPrivate" },
        /* Metadata, whatever is allowed. */
        { "http://169.254.169.254", 1, "metadata" },
        { "http://169.254.170.2", 1, "metadata" },
        { "http://100.100.100.200", 1, "metadata" },
        { "http://[fd00:ec2::254]", 1, "metadata" },
        { "http://[fd00:ec2::23]", 1, "metadata" },
        { "http://[::ffff:169.254.169.254]", 1, "metadata" },
        { "http://[::ffff:a9fe:a9fe]", 1, "metadata" },
        { "http://[::169.254.169.254]", 1, "metadata" },
        { "http://[::ffff:0:a9fe:a9fe]", 1, "metadata" },
        { "http://[64:ff9b::a9fe:a9fe]", 1, "metadata" },
        { "http://[64:ff9b:1::a9fe:a9fe]", 1, "metadata" },
        { "http://[64:ff9b:1:a9fe:a9:fe00::]", 1, "metadata" },
        { "http://[64:ff9b:1:a9:fe:a9fe::]", 1, "metadata" },
        { "http://[64:ff9b:1:0:a9:fea9:fe00:0]", 1, "metadata" },
        { "http://[2002:a9fe:a9fe::]", 1, "metadata" },
        { "http://[2001:0:4136:e378:8000:63bf:5601:5601]", 1, "metadata" },
        { "http://[2001:0:a9fe:a9fe::f7f7:f7f7]", 1, "metadata" },
        /* IPv4 in any spelling but a.b.c.d, whatever is allowed. */
        { "http://127.1", 1, "four decimal numbers" },
        { "http://2130706433", 1, "four decimal numbers" },
        { "http://0x7f000001", 1, "four decimal numbers" },
        { "http://0X7F.1", 1, "four decimal numbers" },
        { "http://0177.0.0.1", 1, "four decimal numbers" },
        { "http://0", 1, "four decimal numbers" },
        { "http://0x", 1, "four decimal numbers" },
        { "http://2852039166", 1, "four decimal numbers" },
        { "http://0xa9fea9fe:80", 1, "four decimal numbers" },
        { "http://0251.0376.0251.0376", 1, "four decimal numbers" },
        { "http://1.2.3.4.5", 1, "four decimal numbers" },
        { "http://8.8.8.8.", 1, "four decimal numbers" },
        { "http://host.123", 1, "four decimal numbers" },
        /* Zones, ports, host characters. */
        { "http://[fe80::1%25lo]", 1, "zone" },
        { "http://[fe80::1%lo]:80", 1, "zone" },
        { "http://127.0.0.1:99999", 1, "1 to 65535" },
        { "http://127.0.0.1:0", 1, "1 to 65535" },
        { "http://h:", 1, "1 to 65535" },
        { "http://h:8a", 1, "1 to 65535" },
        { "http://h:000000000000000000065536", 1, "1 to 65535" },
        { "http://h:0080", 1, NULL },
        { "http://[::1]x", 1, "other than a port" },
        { "http://[::1", 1, "closing bracket" },
        { "http://[zz::1]", 1, "not an IPv6 address" },
        { "http://%31%32%37.0.0.1", 1, "characters" },
        { "http://a@b", 1, "user information" },
        { "http://", 1, "no host" },
        { "nourl", 1, "absolute" },
    };
    apr_size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = svc_http_check_untrusted(p, cases[i].url, cases[i].allow_private);
        if (cases[i].why ? !got || !strstr(got, cases[i].why) : got != NULL) {
            fprintf(stderr, "  svc_http_check_untrusted(%s, %d) = %s, expected %s\n",
                    cases[i].url, cases[i].allow_private, got ? got : "NULL",
                    cases[i].why ? cases[i].why : "NULL");
            svc_test_failed_checks++;
        }
    }
}

SVC_TEST(test_addr_blocked_table)
{
    static const struct {
        const char *ip;
        int blocked;
    } cases[] = {
        /* IPv4 */
        { "0.0.0.0", 1 }, { "0.1.2.3", 1 }, { "10.0.0.1", 1 }, { "10.255.255.255", 1 },
        { "100.64.0.1", 1 }, { "100.127.255.254", 1 }, { "100.63.255.255", 0 },
        { "100.128.0.0", 0 }, { "127.0.0.1", 1 }, { "127.255.255.254", 1 },
        { "169.254.0.1", 1 }, { "169.254.169.254", 1 }, { "172.16.0.1", 1 },
        { "172.31.255.255", 1 }, { "172.15.255.255", 0 }, { "172.32.0.0", 0 },
        { "192.0.0.1", 1 }, { "192.0.0.170", 1 }, { "192.0.2.1", 1 }, { "192.168.1.1", 1 },
        { "192.169.0.1", 0 }, { "198.18.0.1", 1 }, { "198.19.255.255", 1 },
        { "198.20.0.0", 0 }, { "198.51.100.7", 1 }, { "203.0.113.9", 1 },
        { "224.0.0.1", 1 }, { "239.255.255.250", 1 }, { "240.0.0.1", 1 },
        { "255.255.255.255", 1 }, { "100.100.100.200", 1 }, { "168.63.129.16", 1 },
        { "8.8.8.8", 0 }, { "1.1.1.1", 0 }, { "93.184.216.34", 0 }, { "140.82.112.3", 0 },
        { "223.255.255.255", 0 }, { "11.0.0.1", 0 }, { "126.255.255.255", 0 },
        { "128.0.0.1", 0 },
        /* IPv6 */
        { "::", 1 }, { "::1", 1 }, { "[::1]", 1 }, { "::ffff:127.0.0.1", 1 },
        { "::ffff:7f00:1", 1 }, { "::ffff:10.0.0.1", 1 }, { "::ffff:169.254.169.254", 1 },
        { "::ffff:8.8.8.8", 0 }, { "::127.0.0.1", 1 }, { "::8.8.8.8", 0 },
        { "::ffff:0:127.0.0.1", 1 }, { "64:ff9b::127.0.0.1", 1 }, { "64:ff9b::7f00:1", 1 },
        { "64:ff9b::a9fe:a9fe", 1 }, { "64:ff9b::10.1.2.3", 1 }, { "64:ff9b::8.8.8.8", 0 },
        { "64:ff9b:1::1", 1 }, { "64:ff9b:1::808:808", 1 }, { "64:ff9b:2::808:808", 1 },
        { "2002:7f00:1::", 1 }, { "2002:c0a8:101::1", 1 },
        { "2002:808:808::1", 0 }, { "2001:0:4136:e378:8000:63bf:80ff:fffe", 1 },
        { "fe80::1", 1 }, { "fe80::1%eth0", 1 }, { "[fe80::1%25eth0]", 1 }, { "febf::1", 1 },
        { "fec0::1", 1 }, { "fc00::1", 1 }, { "fd12:3456::1", 1 }, { "fd00:ec2::254", 1 },
        { "ff02::1", 1 }, { "ff05::2", 1 }, { "100::1", 1 }, { "2001:db8::1", 1 },
        { "2001:2::1", 1 }, { "2606:4700::1111", 0 }, { "2001:4860:4860::8888", 0 },
        { "2a00:1450:4001:81b::200e", 0 }, { "fbff::1", 0 },
        /* Not an address: fail closed. */
        { NULL, 1 }, { "", 1 }, { "localhost", 1 }, { "example.com", 1 }, { "127.1", 1 },
        { "2130706433", 1 }, { "1.2.3.4.5", 1 }, { "[8.8.8.8", 1 }, { "::ffff:1.2.3.4x", 1 },
    };
    apr_size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int got = svc_http_addr_blocked(cases[i].ip);
        if (got != cases[i].blocked) {
            fprintf(stderr, "  svc_http_addr_blocked(%s) = %d, expected %d\n",
                    cases[i].ip ? cases[i].ip : "NULL", got, cases[i].blocked);
            svc_test_failed_checks++;
        }
    }
}

/* ---------------------------------------------------------------------- */
/* Redaction                                                               */

SVC_TEST(test_secrets_redacted)
{
    svc_http_req_t req;
    svc_http_resp_t *resp = NULL;
    static const char *const secrets[] = { "s3cr3t-query-value", "s3cr3t-header", "PATHSECRET",
                                           "127.0.0.1", NULL };
    int port = 0, fd = svc_test_listen_local(&port);

    SVC_CHECK(fd >= 0);
    close(fd);
    req_init(&req, "POST", apr_psprintf(p, "http://127.0.0.1:%d/hooks/PATHSECRET/x?"
                                        "key=s3cr3t-query-value&plain=visible-value&flag#frag",
                                        port));
    req.headers = apr_table_make(p, 2);
    apr_table_set(req.headers, "X-Api-Key", "s3cr3t-header");
    apr_table_set(req.headers, "Authorization", "Bearer unlisted-bearer-token");
    req.secrets = secrets;
    SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_ECONNECT);
    SVC_CHECK(resp->error != NULL);
    if (resp->error) {
        SVC_CHECK(strstr(resp->error, "s3cr3t") == NULL);
        SVC_CHECK(strstr(resp->error, "PATHSECRET") == NULL);
        SVC_CHECK(strstr(resp->error, "unlisted-bearer-token") == NULL);
        SVC_CHECK(strstr(resp->error, "visible-value") == NULL);
        SVC_CHECK(strstr(resp->error, "frag") == NULL);
        /* libcurl's own text names the host it failed to reach. */
        SVC_CHECK(strstr(resp->error, "127.0.0.1") == NULL);
        SVC_CHECK(strstr(resp->error, "[REDACTED]") != NULL);
        SVC_CHECK(strstr(resp->error, "key=[REDACTED]") != NULL);
        SVC_CHECK(strstr(resp->error, "/hooks/[REDACTED]/x") != NULL);
        SVC_CHECK(strstr(resp->error, apr_psprintf(p, ":%d", port)) != NULL);
    }

    /* Same for a timeout, and for refusals made before sending. */
    {
        srv_t *s = srv_new(SRV_SILENT);
        req_init(&req, "GET", url_of(p, s, "localhost", "/PATHSECRET?t=s3cr3t-query-value"));
        req.timeout_ms = 300;
        req.secrets = secrets;
        SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_ETIMEOUT);
        SVC_CHECK(resp->error && !strstr(resp->error, "s3cr3t")
                  && !strstr(resp->error, "PATHSECRET"));

        req.headers = apr_table_make(p, 2);
        apr_table_set(req.headers, "X-Bad", "s3cr3t-header\r\n");
        SVC_CHECK_INT(svc_http_do(p, &req, &resp), SVC_HTTP_EHEADER);
        SVC_CHECK(resp->error && !strstr(resp->error, "s3cr3t")
                  && !strstr(resp->error, "PATHSECRET"));
        srv_stop(s);
        srv_free(s);
    }
}

/* ---------------------------------------------------------------------- */
/* TLS                                                                     */

typedef struct {
    char path[64];
    SSL_CTX *ctx;
} tls_fixture_t;

/* A throwaway self-signed certificate for 127.0.0.1 (not "localhost"). */
static int tls_fixture_make(tls_fixture_t *f)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509V3_CTX v3;
    X509_EXTENSION *ext;
    X509_NAME *name;
    FILE *fp;
    int fd, ok = 0;

    f->ctx = NULL;
    strcpy(f->path, "/tmp/svc-test-ca-XXXXXX");
    if (!key || !x) {
        goto cleanup;
    }
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"svc test",
                               -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name,
                              "IP:127.0.0.1,DNS:svc-test.invalid");
    if (!ext) {
        goto cleanup;
    }
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    ext = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:TRUE");
    if (!ext) {
        goto cleanup;
    }
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    if (!X509_sign(x, key, EVP_sha256())) {
        goto cleanup;
    }
    fd = mkstemp(f->path);
    if (fd < 0 || !(fp = fdopen(fd, "w"))) {
        goto cleanup;
    }
    ok = PEM_write_X509(fp, x);
    fclose(fp);
    if (!ok) {
        goto cleanup;
    }
    f->ctx = SSL_CTX_new(TLS_server_method());
    ok = f->ctx && SSL_CTX_use_certificate(f->ctx, x) == 1
         && SSL_CTX_use_PrivateKey(f->ctx, key) == 1;

cleanup:
    X509_free(x);
    EVP_PKEY_free(key);
    return ok;
}

static void tls_fixture_free(tls_fixture_t *f)
{
    SSL_CTX_free(f->ctx);
    unlink(f->path);
}

static apr_status_t tls_get(apr_pool_t *p, const tls_fixture_t *f, const char *host,
                            const char *ca, svc_http_resp_t **presp)
{
    srv_t *s = srv_start(SRV_TLS);
    svc_http_req_t req;
    apr_status_t rv;

    s->tls = f->ctx;
    srv_run(s);
    req_init(&req, "GET", apr_psprintf(p, "https://%s:%d/", host, s->port));
    req.ca_file = ca;
    rv = svc_http_do(p, &req, presp);
    srv_stop(s);
    srv_free(s);
    return rv;
}

SVC_TEST(test_tls_verification)
{
    tls_fixture_t f;
    svc_http_resp_t *resp = NULL;

    SVC_CHECK(tls_fixture_make(&f));
    if (!f.ctx) {
        tls_fixture_free(&f);
        return;
    }
    /* Unknown issuer. */
    SVC_CHECK_INT(tls_get(p, &f, "127.0.0.1", NULL, &resp), SVC_HTTP_ETLS);
    SVC_CHECK(resp->error != NULL);
    /* Trusted through the extra CA file. */
    SVC_CHECK_INT(tls_get(p, &f, "127.0.0.1", f.path, &resp), APR_SUCCESS);
    SVC_CHECK_INT(resp->status, 200);
    SVC_CHECK_STR(resp->body, "ok");
    /* Trusted issuer, wrong name. */
    SVC_CHECK_INT(tls_get(p, &f, "localhost", f.path, &resp), SVC_HTTP_ETLS);
    /* An unreadable CA file is a TLS failure, not a silent downgrade. */
    SVC_CHECK_INT(tls_get(p, &f, "127.0.0.1", "/nonexistent/ca.pem", &resp), SVC_HTTP_ETLS);
    tls_fixture_free(&f);
}

int main(int argc, const char *const *argv)
{
    int rc;

    /* The TLS server writes with write(2); a client gone away must not kill us. */
    signal(SIGPIPE, SIG_IGN);
    if (svc_http_global_init() != APR_SUCCESS) {
        fprintf(stderr, "svc_http_global_init failed\n");
        return 1;
    }
    rc = svc_test_run(argc, argv);
    svc_http_global_cleanup();
    return rc;
}
