/*
 * Logging to stderr. Each line is formatted into one buffer and written with a
 * single write(2), so lines from concurrent threads never interleave.
 *
 * Access lines (one per request) are the exception: they collect in a buffer
 * written when it fills, every ACCESS_FLUSH_MS by the flusher thread, before
 * any other line (so the order on stderr stays the order of events), and at
 * shutdown. A write(2) per request cost ~7% of a point lookup's CPU; nginx
 * buffers its access log for the same reason.
 *
 * There are two buffers: a full one is written with out_mu released while
 * lines go on into the other, one write at a time, in order. Writing under
 * the lock made every HTTP loop that finished a request wait for the write
 * (up to 0.7 ms), and for as long again as the writer waited for a CPU
 * when preempted in it: 69-92 futex waits of the two loops in 8 s of the
 * open-loop mix (README.md, "Fair latency under mixed load").
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
static bool json_format;
static _Thread_local const char *current_request_id;

#define ACCESS_BUFFER_BYTES (32 * 1024)
#define ACCESS_FLUSH_MS 50

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static char access_bufs[2][ACCESS_BUFFER_BYTES];
static int access_cur;           /* the buffer lines go into */
static size_t access_len;        /* bytes in it */
static bool access_writing;      /* the other buffer is being written, unlocked */
static pthread_cond_t access_written_cv = PTHREAD_COND_INITIALIZER;
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

/* Caller holds out_mu and no write is under way: writes the current
 * buffer with out_mu released (lines go on into the other one). */
static void write_access_unlocked(void)
{
    const char *b = access_bufs[access_cur];
    size_t n = access_len;
    access_cur ^= 1;
    access_len = 0;
    access_writing = true;
    pthread_mutex_unlock(&out_mu);
    write_all(b, n);
    pthread_mutex_lock(&out_mu);
    access_writing = false;
    pthread_cond_broadcast(&access_written_cv);
}

/* Caller holds out_mu: every access line so far is written when it returns
 * (before a line that must follow them). */
static void flush_access_locked(void)
{
    while (access_writing)
        pthread_cond_wait(&access_written_cv, &out_mu);
    if (access_len) {
        write_all(access_bufs[access_cur], access_len);
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
        if (access_len && !access_writing)
            write_access_unlocked();
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

bool log_json(void)
{
    return json_format;
}

void log_set_json(bool on)
{
    json_format = on;
}

void log_set_request_id(const char *id)
{
    current_request_id = id;
}

const char *log_request_id(void)
{
    return current_request_id;
}

void log_init_from_env(void)
{
    const char *f = getenv("VITRINE_LOG_FORMAT");
    if (f && !strcasecmp(f, "json"))
        json_format = true;
    const char *v = getenv("VITRINE_LOG");
    bool level_ok = true;
    if (v && *v) {
        if (!strcasecmp(v, "error"))
            current_level = LOG_ERROR;
        else if (!strcasecmp(v, "warn") || !strcasecmp(v, "warning"))
            current_level = LOG_WARN;
        else if (!strcasecmp(v, "info"))
            current_level = LOG_INFO;
        else if (!strcasecmp(v, "debug") || !strcasecmp(v, "trace"))
            current_level = LOG_DEBUG;
        else
            level_ok = false;
    }
    /* A misspelt setting was silently the default: say so, since whoever
     * set it expects other lines than they get. */
    if (f && *f && strcasecmp(f, "json") && strcasecmp(f, "text"))
        log_msg(LOG_WARN, "VITRINE_LOG_FORMAT=%.40s is not a format (json or text): logging text", f);
    if (!level_ok)
        log_msg(LOG_WARN, "VITRINE_LOG=%.40s is not a level (error, warn, info or debug): logging at info",
                v);
}

int log_enabled(enum log_level level)
{
    return (int)level <= current_level;
}

static const char *level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
static const char *level_json[] = {"error", "warn", "info", "debug"};

/* "<time>" as RFC 3339 UTC with milliseconds; returns its length (24). */
/* "YYYY-MM-DDTHH:MM:SS.mmmZ". Runs for every access line, so the part up to
 * the seconds is formatted once per second per thread and the milliseconds
 * by hand (snprintf and gmtime_r were ~5% of a point lookup's CPU). */
static int format_time(char *out, size_t cap)
{
    static _Thread_local time_t cached_sec = -1;
    static _Thread_local char cached[32];
    static _Thread_local int cached_len;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ts.tv_sec != cached_sec) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        cached_len = snprintf(cached, sizeof cached, "%04d-%02d-%02dT%02d:%02d:%02d",
                              tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                              tm.tm_min, tm.tm_sec);
        if (cached_len < 0 || (size_t)cached_len >= sizeof cached)
            cached_len = 0;
        cached_sec = ts.tv_sec;
    }
    if (cap < (size_t)cached_len + 6)
        return snprintf(out, cap, "%.*s", (int)(cap ? cap - 1 : 0), cached);
    memcpy(out, cached, (size_t)cached_len);
    long ms = ts.tv_nsec / 1000000;
    char *o = out + cached_len;
    *o++ = '.';
    *o++ = (char)('0' + ms / 100);
    *o++ = (char)('0' + ms / 10 % 10);
    *o++ = (char)('0' + ms % 10);
    *o++ = 'Z';
    *o = '\0';
    return (int)(o - out);
}

/* A bounded line writer for the access line (no snprintf on the hot path). */
struct line_w {
    char *buf;
    size_t len, cap;            /* cap includes room for the final '\n' */
};

static void lw_add(struct line_w *w, const char *s, size_t n)
{
    if (n > w->cap - w->len)
        n = w->cap - w->len;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void lw_str(struct line_w *w, const char *s)
{
    lw_add(w, s, strlen(s));
}

static void lw_u64(struct line_w *w, uint64_t v)
{
    if (v < 1000 && w->cap - w->len >= 3) { /* a status, a small size, the ms: no memcpy */
        char *o = w->buf + w->len;
        if (v >= 100)
            *o++ = (char)('0' + v / 100);
        if (v >= 10)
            *o++ = (char)('0' + v / 10 % 10);
        *o++ = (char)('0' + v % 10);
        w->len = (size_t)(o - w->buf);
        return;
    }
    char tmp[24];
    size_t k = sizeof tmp;
    do {
        tmp[--k] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    lw_add(w, tmp + k, sizeof tmp - k);
}

/* Appends `s` as the inside of a JSON string (no quotes); stops at `cap`. */
static size_t json_escape(char *out, size_t len, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *p = (const unsigned char *)s; *p && len + 7 < cap; p++) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            out[len++] = '\\';
            out[len++] = (char)c;
        } else if (c == '\n') {
            out[len++] = '\\';
            out[len++] = 'n';
        } else if (c == '\t') {
            out[len++] = '\\';
            out[len++] = 't';
        } else if (c < 0x20 || c == 0x7f) {
            memcpy(out + len, "\\u00", 4);
            out[len + 4] = hex[c >> 4];
            out[len + 5] = hex[c & 15];
            len += 6;
        } else {
            out[len++] = (char)c; /* UTF-8 passes through */
        }
    }
    return len;
}

/* Formats one line into `line` (cap bytes, newline included); returns its
 * length. Text: "<time> <LEVEL> <message>[ request_id=<id>]". JSON:
 * {"time":...,"level":...,"msg":...[,"request_id":...]}. */
static size_t format_line(char *line, size_t cap, enum log_level level, const char *fmt,
                          va_list ap)
{
    char t[96];
    format_time(t, sizeof t);
    const char *rid = current_request_id;
    if (!json_format) {
        int n = snprintf(line, cap, "%s %-5s ", t, level_names[level]);
        int m = vsnprintf(line + n, cap - (size_t)n - 1, fmt, ap);
        size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
        if (len > cap - 2)
            len = cap - 2;
        if (rid) {
            int k = snprintf(line + len, cap - len - 1, " request_id=%s", rid);
            len += k < 0 ? 0 : (size_t)k;
            if (len > cap - 2)
                len = cap - 2;
        }
        line[len++] = '\n';
        return len;
    }
    char msg[3072];
    int m = vsnprintf(msg, sizeof msg, fmt, ap);
    (void)m;
    size_t len = (size_t)snprintf(line, cap, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":\"", t,
                                  level_json[level]);
    len = json_escape(line, len, cap - 64, msg);
    if (rid) {
        len += (size_t)snprintf(line + len, cap - len, "\",\"request_id\":\"");
        len = json_escape(line, len, cap - 8, rid);
    }
    memcpy(line + len, "\"}\n", 3);
    return len + 3;
}

static void add_access(const char *line, size_t len)
{
    pthread_mutex_lock(&out_mu);
    if (!flusher_running || len > ACCESS_BUFFER_BYTES) {
        flush_access_locked();
        write_all(line, len);
        pthread_mutex_unlock(&out_mu);
        return;
    }
    /* Full: write it unless a write is under way; then wait for that one
     * (both buffers full: the file is slower than the requests). */
    while (access_len + len > ACCESS_BUFFER_BYTES) {
        if (!access_writing)
            write_access_unlocked();
        else
            pthread_cond_wait(&access_written_cv, &out_mu);
    }
    memcpy(access_bufs[access_cur] + access_len, line, len);
    access_len += len;
    pthread_mutex_unlock(&out_mu);
}

void log_access(const struct log_access_rec *a)
{
    if (!log_enabled(LOG_INFO))
        return;
    char line[1024];
    char t[96];
    format_time(t, sizeof t);
    int n;
    if (!json_format && a->status >= 0 && a->dur_us >= 0) {
        /* "%s %-5s %s %s %d %lluB %.0fms id=%s%s%s\n" by hand: the time, the
         * level, method, route, status, bytes, milliseconds rounded as %.0f
         * does (half to even), request id, outcome. */
        struct line_w w = {line, 0, sizeof line - 1};
        lw_str(&w, t);
        lw_add(&w, " INFO  ", 7);
        lw_str(&w, a->method ? a->method : "?");
        lw_add(&w, " ", 1);
        lw_str(&w, a->route ? a->route : "(null)");
        lw_add(&w, " ", 1);
        lw_u64(&w, (uint64_t)a->status);
        lw_add(&w, " ", 1);
        lw_u64(&w, a->bytes);
        lw_add(&w, "B ", 2);
        uint64_t ms = (uint64_t)a->dur_us / 1000, rem = (uint64_t)a->dur_us % 1000;
        ms += rem > 500 || (rem == 500 && (ms & 1));
        lw_u64(&w, ms);
        lw_add(&w, "ms id=", 6);
        lw_str(&w, a->request_id ? a->request_id : "-");
        if (a->outcome) {
            lw_add(&w, " ", 1);
            lw_str(&w, a->outcome);
        }
        line[w.len++] = '\n';
        n = (int)w.len;
    } else if (!json_format) {
        n = snprintf(line, sizeof line, "%s %-5s %s %s %d %lluB %.0fms id=%s%s%s\n", t,
                     level_names[LOG_INFO], a->method ? a->method : "?", a->route, a->status,
                     (unsigned long long)a->bytes, (double)a->dur_us / 1000.0,
                     a->request_id ? a->request_id : "-", a->outcome ? " " : "",
                     a->outcome ? a->outcome : "");
    } else {
        /* Every string here is ours or a checked token (method, route
         * pattern, request id), except the method, which the HTTP parser took verbatim:
         * escape it like the rest. */
        char method[64];
        size_t ml = json_escape(method, 0, sizeof method, a->method ? a->method : "?");
        method[ml] = '\0';
        char route[512];
        size_t rl = json_escape(route, 0, sizeof route, a->route ? a->route : "");
        route[rl] = '\0';
        n = snprintf(line, sizeof line,
                     "{\"time\":\"%s\",\"level\":\"info\",\"msg\":\"access\",\"method\":\"%s\","
                     "\"route\":\"%s\",\"status\":%d,\"bytes\":%llu,\"duration_ms\":%.3f,"
                     "\"request_id\":\"%s\"%s%s%s}\n",
                     t, method, route, a->status, (unsigned long long)a->bytes,
                     (double)a->dur_us / 1000.0, a->request_id ? a->request_id : "",
                     a->outcome ? ",\"outcome\":\"" : "", a->outcome ? a->outcome : "",
                     a->outcome ? "\"" : "");
    }
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (line[len - 1] != '\n')
        line[len - 1] = '\n';
    add_access(line, len);
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
