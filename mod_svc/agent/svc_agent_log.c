/*
 * svc_agent_log.c: what every part of svc-agent shares: its settings, the
 * stop flag its signal handler sets, its log, and strings that cannot fail
 * (an agent out of memory exits, and is restarted by its service manager).
 */
#define _GNU_SOURCE
#include "svc_agent.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

agent_conf_t conf;
volatile sig_atomic_t agent_stop;

void alog(int level, const char *fmt, ...)
{
    static const char *const names[] = { "error", "warning", "info" };
    char msg[4096], stamp[32], *k;
    time_t now = time(NULL);
    struct tm tm;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* Nothing the agent says may carry its key, whatever it quotes. */
    while (conf.key && *conf.key && (k = strstr(msg, conf.key)) != NULL) {
        memset(k, '*', strlen(conf.key));
    }
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(stderr, "%s svc-agent[%ld] %s: %s\n", stamp, (long)getpid(), names[level], msg);
    fflush(stderr);
}

char *xstrdup(const char *s)
{
    char *d = strdup(s ? s : "");

    if (!d) {
        alog(AL_ERROR, "out of memory");
        exit(1);
    }
    return d;
}

char *xprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0 || !s) {
        alog(AL_ERROR, "out of memory");
        exit(1);
    }
    return s;
}
