/*
 * Clocks, RFC 3339 formatting and ULIDs (generation ids).
 */
#ifndef VT_UTIL_TIMEUTIL_H
#define VT_UTIL_TIMEUTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Milliseconds on the monotonic clock (for durations and deadlines). */
int64_t time_mono_ms(void);
/* Microseconds on the monotonic clock (request timings). */
int64_t time_mono_us(void);
/* Microseconds since the Unix epoch on the wall clock. */
int64_t time_wall_us(void);
/* Formats a wall-clock time (µs since epoch) as RFC 3339 UTC with milliseconds,
 * e.g. 2026-11-22T06:11:28.123Z. `out` needs 32 bytes. */
void time_format_rfc3339(int64_t wall_us, char out[32]);
/* Parses "YYYY-MM-DD", or RFC 3339 "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)"
 * ('T' or a space; a date alone is midnight UTC) into ms since the epoch.
 * False on anything else (out of range fields, trailing text). */
bool time_parse_rfc3339(const char *s, int64_t *out_ms);
/* One wait on `cv` (holding `mu`) until signalled or until the monotonic
 * deadline_ms (0 = no deadline). False when the deadline had already passed,
 * without waiting; callers loop on their own condition. */
bool time_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms);
/* A new ULID (26 Crockford base32 chars + NUL): 48-bit ms time, 80 random bits. */
void ulid_new(char out[27]);
/* Days since 1970-01-01 of a proleptic Gregorian date (the era-based method:
 * exact for every year; m is 1-12). Inline so the pure parsers that need it
 * (query values, lazy statistics) link nothing else. */
static inline int64_t time_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Days since 1970-01-01 -> a proleptic Gregorian date (the inverse of
 * time_days_from_civil). */
static inline void time_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* True when s[0..n) are all ASCII digits, with their decimal value in *out
 * (n small enough not to overflow an int). Shared by the date parsers. */
static inline bool time_digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

#endif
