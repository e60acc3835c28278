/*
 * One line per event on stderr: "<RFC3339 time> <LEVEL> <message>".
 * The level filter comes from VITRINE_LOG (error|warn|info|debug; default info).
 * Never pass secrets (tokens, passwords, signed URLs) to these functions.
 */
#ifndef VT_UTIL_LOG_H
#define VT_UTIL_LOG_H

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

void log_init_from_env(void);
void log_set_level(enum log_level level);
int log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An access line (level info), buffered: see log.c. */
void log_access(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
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
