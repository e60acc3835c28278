/*
 * Logging to stderr. Each line is formatted into one buffer and written with a
 * single write(2), so lines from concurrent threads never interleave.
 *
 * Access lines (one per request) are the exception: they collect in a buffer
 * written when it fills, every ACCESS_FLUSH_MS by the flusher thread, before
 * any other line (so the order on stderr stays the order of events), and at
 * shutdown. A write(2) per request cost ~7% of a point lookup's CPU; nginx
 * buffers its access log for the same reason.
 */
#include "util/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static int current_level = LOG_INFO;

#define ACCESS_BUFFER_BYTES (32 * 1024)
#define ACCESS_FLUSH_MS 50

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static char access_buf[ACCESS_BUFFER_BYTES];
static size_t access_len;
static pthread_t flusher;
static bool flusher_running;
static bool flusher_stop;
static pthread_cond_t flusher_cv = PTHREAD_COND_INITIALIZER;

static void write_all(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, p, n);
        if (w <= 0)
            return; /* stderr closed or full: drop rather than block a request */
        p += w;
        n -= (size_t)w;
    }
}

/* Caller holds out_mu. */
static void flush_access_locked(void)
{
    if (access_len) {
        write_all(access_buf, access_len);
        access_len = 0;
    }
}

void log_flush(void)
{
    pthread_mutex_lock(&out_mu);
    flush_access_locked();
    pthread_mutex_unlock(&out_mu);
}

static void *flusher_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "log-flush");
    pthread_mutex_lock(&out_mu);
    while (!flusher_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += ACCESS_FLUSH_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&flusher_cv, &out_mu, &ts);
        flush_access_locked();
    }
    pthread_mutex_unlock(&out_mu);
    return NULL;
}

void log_start_flusher(void)
{
    if (!flusher_running && pthread_create(&flusher, NULL, flusher_main, NULL) == 0)
        flusher_running = true;
}

void log_stop_flusher(void)
{
    if (flusher_running) {
        pthread_mutex_lock(&out_mu);
        flusher_stop = true;
        pthread_cond_signal(&flusher_cv);
        pthread_mutex_unlock(&out_mu);
        pthread_join(flusher, NULL);
        flusher_running = false;
    }
    log_flush();
}

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

static const char *level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

/* Formats "<time> <LEVEL> <message>\n" into line; returns its length. */
static size_t format_line(char *line, size_t cap, enum log_level level, const char *fmt,
                          va_list ap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, level_names[level]);
    int m = vsnprintf(line + n, cap - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > cap - 2)
        len = cap - 2;
    line[len++] = '\n';
    return len;
}

void log_access(const char *fmt, ...)
{
    if (!log_enabled(LOG_INFO))
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    size_t len = format_line(line, sizeof line, LOG_INFO, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&out_mu);
    if (access_len + len > sizeof access_buf || !flusher_running)
        flush_access_locked();
    if (!flusher_running) {
        write_all(line, len);
    } else {
        memcpy(access_buf + access_len, line, len);
        access_len += len;
    }
    pthread_mutex_unlock(&out_mu);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (!log_enabled(level))
        return;
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    size_t len = format_line(line, sizeof line, level, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&out_mu);
    flush_access_locked(); /* earlier access lines first */
    write_all(line, len);
    pthread_mutex_unlock(&out_mu);
}
