/*
 * test_agent_probe.c: the deploy agent's health probes
 * (mod_svc/agent/svc_agent_probe.c) against real sockets on 127.0.0.1:
 * a replica that answers 204, one that answers 503, a port where nothing
 * listens, and five probes of one that accepts and never answers.
 *
 * The five must be in flight together: the server that never answers
 * counts the connections it holds open at once, and probing one after the
 * other (what the agent did, 2 s each, its one thread held meanwhile)
 * would show one at a time.
 *
 * The agent is a program of its own: this test links its objects, not the
 * module's (Makefile).
 */
#define SVC_TEST_MAIN
#include "svc_test.h"

#include "svc_agent.h"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#define HOLD_MAX 16

typedef struct {
    int fd;                     /* listening */
    int port;
    const char *answer;         /* NULL: never answer */
    volatile int stop;
    int open, max_open;         /* connections held at once (never answers) */
    char first_line[128];       /* the request line of the last request */
} server_t;

/* A listening socket of the test's own, or the test stops. */
static int listen_on_any(int *pport)
{
    int fd = svc_test_listen_local(pport);

    if (fd < 0) {
        perror("test_agent_probe: listen");
        exit(2);
    }
    return fd;
}

/* Reads a request's head (or what comes before the client gives up). */
static void read_head(int fd, server_t *s)
{
    char buf[1024];
    size_t have = 0;
    ssize_t n;

    while (have < sizeof(buf) - 1 && (n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
        have += (size_t)n;
        buf[have] = '\0';
        if (strstr(buf, "\r\n\r\n")) {
            break;
        }
    }
    buf[have] = '\0';
    have = strcspn(buf, "\r\n");
    if (have >= sizeof(s->first_line)) {
        have = sizeof(s->first_line) - 1;
    }
    memcpy(s->first_line, buf, have);
    s->first_line[have] = '\0';
}

/* Answers each request with s->answer; or, without one, holds every
 * connection until its client closes it, counting how many at once. */
static void *serve(void *baton)
{
    server_t *s = baton;
    struct pollfd fds[1 + HOLD_MAX];
    int n = 1, i;

    fds[0].fd = s->fd;
    fds[0].events = POLLIN;
    while (!s->stop) {
        if (poll(fds, (nfds_t)n, 100) <= 0) {
            continue;
        }
        if (fds[0].revents & POLLIN) {
            int c = accept(s->fd, NULL, NULL);
            if (c >= 0 && s->answer) {
                read_head(c, s);
                if (write(c, s->answer, strlen(s->answer)) < 0) {
                    perror("test_agent_probe: write");
                }
                close(c);
            }
            else if (c >= 0 && n < 1 + HOLD_MAX) {
                fds[n].fd = c;
                fds[n].events = POLLIN;
                fds[n].revents = 0;
                n++;
                if (++s->open > s->max_open) {
                    s->max_open = s->open;
                }
                continue;
            }
            else if (c >= 0) {
                close(c);
            }
        }
        for (i = 1; i < n; i++) {
            char buf[512];
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                continue;
            }
            if (read(fds[i].fd, buf, sizeof(buf)) <= 0) {
                /* The client gave up: it is no longer held. */
                close(fds[i].fd);
                fds[i] = fds[--n];
                s->open--;
                i--;
            }
        }
    }
    for (i = 0; i < n; i++) {
        close(fds[i].fd);
    }
    return NULL;
}

static void start(server_t *s, pthread_t *t, const char *answer)
{
    memset(s, 0, sizeof(*s));
    s->answer = answer;
    s->fd = listen_on_any(&s->port);
    pthread_create(t, NULL, serve, s);
}

SVC_TEST(probes_answer_by_status_and_run_together)
{
    server_t ok, bad, silent;
    pthread_t tok, tbad, tsilent;
    probe_t probes[8];
    int refused_port, fd, i;

    start(&ok, &tok, "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    start(&bad, &tbad, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                       "Connection: close\r\n\r\n");
    start(&silent, &tsilent, NULL);
    /* A port nothing listens on: taken, then given back. */
    fd = listen_on_any(&refused_port);
    close(fd);

    memset(probes, 0, sizeof(probes));
    for (i = 0; i < 5; i++) {
        probes[i].port = silent.port;
        probes[i].path = "/health";
    }
    probes[5].port = ok.port;
    probes[5].path = "/healthz";
    probes[6].port = bad.port;
    probes[6].path = NULL;
    probes[7].port = refused_port;
    probes[7].path = "";
    probe_health(probes, 8);

    for (i = 0; i < 5; i++) {
        SVC_CHECK(!probes[i].ok);
        /* It waited for the timeout (2 s), not less, and ms are ms. */
        SVC_CHECK(probes[i].ms >= 1500 && probes[i].ms <= 5000);
    }
    SVC_CHECK(probes[5].ok);
    SVC_CHECK(probes[5].ms >= 0);
    SVC_CHECK_STR(ok.first_line, "GET /healthz HTTP/1.1");
    SVC_CHECK(!probes[6].ok);
    SVC_CHECK(probes[6].ms >= 0);
    SVC_CHECK_STR(bad.first_line, "GET / HTTP/1.1");
    SVC_CHECK(!probes[7].ok);
    /* The five probes of the server that never answers were open at once. */
    if (silent.max_open != 5) {
        fprintf(stderr, "%s:%d: %d probe(s) at once, not 5\n", __FILE__, __LINE__,
                silent.max_open);
        svc_test_failed_checks++;
    }

    ok.stop = bad.stop = silent.stop = 1;
    pthread_join(tok, NULL);
    pthread_join(tbad, NULL);
    pthread_join(tsilent, NULL);
}

/* Sets agent_stop after a moment, as the agent's SIGTERM handler does. */
static void *stop_soon(void *baton)
{
    (void)baton;
    usleep(300 * 1000);
    agent_stop = 1;
    return NULL;
}

/* The agent stopping mid-round: the probes not done are not probed (ms
 * -1), which its callers take as nothing learnt, not as a replica down. */
SVC_TEST(a_stop_cuts_the_round_short)
{
    server_t silent;
    pthread_t tsilent, tstop;
    probe_t probes[3];
    int i;

    start(&silent, &tsilent, NULL);
    memset(probes, 0, sizeof(probes));
    for (i = 0; i < 3; i++) {
        probes[i].port = silent.port;
        probes[i].path = "/";
    }
    pthread_create(&tstop, NULL, stop_soon, NULL);
    probe_health(probes, 3);
    pthread_join(tstop, NULL);
    for (i = 0; i < 3; i++) {
        SVC_CHECK(!probes[i].ok);
        SVC_CHECK_INT(probes[i].ms, -1);
    }
    agent_stop = 0;
    silent.stop = 1;
    pthread_join(tsilent, NULL);
}

SVC_TEST(no_probes_is_nothing)
{
    probe_t one = { 1, "/", 1, 7 };

    probe_health(&one, 0);
    SVC_CHECK(one.ok == 1 && one.ms == 7);
}

int main(int argc, const char *const *argv)
{
    return svc_test_run(argc, argv);
}
