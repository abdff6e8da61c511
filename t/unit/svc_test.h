/*
 * svc_test.h: the smallest unit-test harness that does the job.
 *
 *     SVC_TEST(name) { SVC_CHECK(expr); SVC_CHECK_STR(a, b); }
 *     int main(int argc, const char *const *argv) { return svc_test_run(argc, argv); }
 *
 * Each test gets a fresh pool (svc_test_pool). A failed check prints
 * file:line and the expression and marks the test failed; the program's exit
 * status is the number of failed tests (capped at 100).
 */
#ifndef SVC_TEST_H
#define SVC_TEST_H

#include <apr_general.h>
#include <apr_pools.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef void (*svc_test_fn)(apr_pool_t *p);

typedef struct {
    const char *name;
    svc_test_fn fn;
} svc_test_case_t;

#define SVC_TEST_MAX 512
extern svc_test_case_t svc_test_cases[SVC_TEST_MAX];
extern int svc_test_ncases;
extern int svc_test_failed_checks;

#define SVC_TEST(tname)                                                       \
    static void tname(apr_pool_t *p);                                         \
    __attribute__((constructor)) static void tname##_register(void)           \
    {                                                                         \
        svc_test_cases[svc_test_ncases].name = #tname;                        \
        svc_test_cases[svc_test_ncases++].fn = tname;                         \
    }                                                                         \
    static void tname(apr_pool_t *p __attribute__((unused)))

#define SVC_CHECK(expr)                                                       \
    do {                                                                      \
        if (!(expr)) {                                                        \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,  \
                    #expr);                                                   \
            svc_test_failed_checks++;                                         \
        }                                                                     \
    } while (0)

#define SVC_CHECK_STR(a, b)                                                   \
    do {                                                                      \
        const char *sa_ = (a), *sb_ = (b);                                    \
        if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                          \
            fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" vs \"%s\"\n",     \
                    __FILE__, __LINE__, #a, #b, sa_ ? sa_ : "(null)",         \
                    sb_ ? sb_ : "(null)");                                    \
            svc_test_failed_checks++;                                         \
        }                                                                     \
    } while (0)

#define SVC_CHECK_INT(a, b)                                                   \
    do {                                                                      \
        long long ia_ = (long long)(a), ib_ = (long long)(b);                 \
        if (ia_ != ib_) {                                                     \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld vs %lld\n",         \
                    __FILE__, __LINE__, #a, #b, ia_, ib_);                    \
            svc_test_failed_checks++;                                         \
        }                                                                     \
    } while (0)

/* ---------------------------------------------------------------------- */
/* Small helpers of the tests' own (static inline: unused ones cost nothing) */

static inline const char *hexof(apr_pool_t *p, const unsigned char *d, apr_size_t n)
{
    static const char digits[] = "0123456789abcdef";
    char *out = apr_palloc(p, n * 2 + 1);
    apr_size_t i;

    for (i = 0; i < n; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[2 * n] = '\0';
    return out;
}

/* A string of n copies of c, in pool memory. */
static inline char *repeat(apr_pool_t *p, char c, apr_size_t n)
{
    char *s = apr_palloc(p, n + 1);

    memset(s, c, n);
    s[n] = '\0';
    return s;
}

/* s, n times over. */
static inline char *repeat_str(apr_pool_t *p, const char *s, apr_size_t n)
{
    apr_size_t len = strlen(s), i;
    char *out = apr_palloc(p, len * n + 1);

    for (i = 0; i < n; i++) {
        memcpy(out + i * len, s, len);
    }
    out[len * n] = '\0';
    return out;
}

/* A socket listening on 127.0.0.1 at a port the kernel picks (*pport), for
 * the tests' own servers; -1 on failure. */
static inline int svc_test_listen_local(int *pport)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 16) != 0
        || getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    *pport = ntohs(sa.sin_port);
    return fd;
}

static inline int contains(const char *hay, const char *needle)
{
    return hay && needle && strstr(hay, needle) != NULL;
}

/* Defined once, in the test program that includes this with SVC_TEST_MAIN. */
#ifdef SVC_TEST_MAIN
svc_test_case_t svc_test_cases[SVC_TEST_MAX];
int svc_test_ncases;
int svc_test_failed_checks;

static int svc_test_run(int argc, const char *const *argv)
{
    apr_pool_t *root, *p;
    int i, failed = 0;
    const char *only = argc > 1 ? argv[1] : NULL;

    apr_initialize();
    apr_pool_create(&root, NULL);
    for (i = 0; i < svc_test_ncases; i++) {
        int before = svc_test_failed_checks;
        if (only && strcmp(only, svc_test_cases[i].name) != 0) {
            continue;
        }
        apr_pool_create(&p, root);
        svc_test_cases[i].fn(p);
        apr_pool_destroy(p);
        if (svc_test_failed_checks != before) {
            failed++;
            printf("not ok %d - %s\n", i + 1, svc_test_cases[i].name);
        }
        else {
            printf("ok %d - %s\n", i + 1, svc_test_cases[i].name);
        }
    }
    printf("1..%d\n", svc_test_ncases);
    apr_pool_destroy(root);
    apr_terminate();
    return failed > 100 ? 100 : failed;
}
#endif

#endif /* SVC_TEST_H */
