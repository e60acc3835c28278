/*
 * One line per event on stderr: "<RFC3339 time> <LEVEL> <message>", or with
 * VITRINE_LOG_FORMAT=json one JSON object per line ({"time","level","msg",
 * "request_id"?}) for log shippers. The level filter comes from VITRINE_LOG
 * (error|warn|info|debug; default info).
 *
 * A thread working for an HTTP request sets its id (log_set_request_id):
 * every line it logs meanwhile carries it (" request_id=<id>" at the end of a
 * text line, "request_id" in JSON), so one slow request can be followed
 * through the log from its access line's id.
 *
 * Never pass secrets (tokens, passwords, signed URLs) to these functions.
 */
#ifndef VT_UTIL_LOG_H
#define VT_UTIL_LOG_H

#include <stdbool.h>
#include <stdint.h>

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

void log_init_from_env(void);
/* True when lines are JSON objects (VITRINE_LOG_FORMAT=json). */
bool log_json(void);
void log_set_json(bool on);
void log_set_level(enum log_level level);
int log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The request the calling thread works for (NULL: none). The string must
 * stay valid until it is cleared. */
void log_set_request_id(const char *id);
const char *log_request_id(void);

/* One access line (level info), buffered: see log.c. */
struct log_access_rec {
    const char *method;
    const char *route;          /* the route pattern, never the raw path */
    int status;
    uint64_t bytes;
    int64_t dur_us;
    const char *request_id;
    const char *outcome;        /* NULL, or why the server ended it early ("client-abort") */
};
void log_access(const struct log_access_rec *a);
/* The thread that writes buffered access lines every few milliseconds; without
 * it access lines are written at once. Stop flushes what is left. */
void log_start_flusher(void);
void log_stop_flusher(void);
void log_flush(void);

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)                       \
    do {                                     \
        if (log_enabled(LOG_DEBUG))          \
            log_msg(LOG_DEBUG, __VA_ARGS__); \
    } while (0)

#endif
