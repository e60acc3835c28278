/*
 * Logging to stderr. Each line is formatted into one buffer and written with a
 * single write(2), so lines from concurrent threads never interleave.
 */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static int current_level = LOG_INFO;

void log_set_level(enum log_level level)
{
    current_level = (int)level;
}

void log_init_from_env(void)
{
    const char *v = getenv("VITRINE_LOG");
    if (!v || !*v)
        return;
    if (!strcasecmp(v, "error"))
        current_level = LOG_ERROR;
    else if (!strcasecmp(v, "warn") || !strcasecmp(v, "warning"))
        current_level = LOG_WARN;
    else if (!strcasecmp(v, "info"))
        current_level = LOG_INFO;
    else if (!strcasecmp(v, "debug") || !strcasecmp(v, "trace"))
        current_level = LOG_DEBUG;
}

int log_enabled(enum log_level level)
{
    return (int)level <= current_level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    static const char *names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    if (!log_enabled(level))
        return;
    char line[4096];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}
