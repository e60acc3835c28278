/*
 * Time helpers and ULID generation. ULIDs give generations ids that sort by
 * creation time; the random part comes from getrandom(2).
 */
#include "util/timeutil.h"

#include <stdio.h>
#include <sys/random.h>
#include <time.h>

int64_t time_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t time_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t time_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

bool time_parse_rfc3339(const char *s, int64_t *out_ms)
{
    int y, mo, d, h = 0, mi = 0, sec = 0, ms = 0;
    if (!time_digits(s, 4, &y) || s[4] != '-' || !time_digits(s + 5, 2, &mo) || s[7] != '-' ||
        !time_digits(s + 8, 2, &d) || mo < 1 || mo > 12 || d < 1 || d > 31)
        return false;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap))
        return false;
    const char *p = s + 10;
    int64_t off_min = 0;
    if (*p) {
        if ((*p != 'T' && *p != 't' && *p != ' ') || !time_digits(p + 1, 2, &h) || p[3] != ':' ||
            !time_digits(p + 4, 2, &mi) || p[6] != ':' || !time_digits(p + 7, 2, &sec) || h > 23 ||
            mi > 59 || sec > 60)
            return false;
        p += 9;
        if (*p == '.') {
            p++;
            int n = 0;
            for (; *p >= '0' && *p <= '9'; p++, n++)
                if (n < 3)
                    ms = ms * 10 + (*p - '0');
            if (n == 0)
                return false;
            for (; n < 3; n++)
                ms *= 10;
        }
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int oh, om;
            if (!time_digits(p + 1, 2, &oh) || p[3] != ':' || !time_digits(p + 4, 2, &om) ||
                oh > 23 || om > 59)
                return false;
            off_min = (*p == '-' ? -1 : 1) * (oh * 60 + om);
            p += 6;
        } else {
            return false;
        }
        if (*p)
            return false;
    }
    int64_t days = time_days_from_civil(y, mo, d);
    *out_ms = ((days * 24 + h) * 60 + mi - off_min) * 60000 + (int64_t)sec * 1000 + ms;
    return true;
}

void time_format_rfc3339(int64_t wall_us, char out[32])
{
    time_t secs = (time_t)(wall_us / 1000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    int year = tm.tm_year + 1900;
    int ms = (int)((wall_us / 1000) % 1000);
    if (year < 0 || year > 9999 || ms < 0) {
        /* outside what the fixed layout below holds (never for a clock) */
        char tmp[96];
        snprintf(tmp, sizeof tmp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", year, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
        snprintf(out, 32, "%.31s", tmp);
        return;
    }
    /* By hand: it runs once per query answer (X-Dataset-Refreshed-At), and
     * two snprintf calls cost ~4,000 instructions there (bench/callgrind.py). */
    char *o = out;
    *o++ = (char)('0' + year / 1000);
    *o++ = (char)('0' + year / 100 % 10);
    *o++ = (char)('0' + year / 10 % 10);
    *o++ = (char)('0' + year % 10);
    const int two[5] = {tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec};
    const char sep[5] = {'-', '-', 'T', ':', ':'};
    for (int i = 0; i < 5; i++) {
        *o++ = sep[i];
        *o++ = (char)('0' + two[i] / 10);
        *o++ = (char)('0' + two[i] % 10);
    }
    *o++ = '.';
    *o++ = (char)('0' + ms / 100);
    *o++ = (char)('0' + ms / 10 % 10);
    *o++ = (char)('0' + ms % 10);
    *o++ = 'Z';
    *o = '\0';
}

void ulid_new(char out[27])
{
    static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    uint64_t ms = (uint64_t)(time_wall_us() / 1000);
    unsigned char rnd[10] = {0};
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        /* getrandom on Linux does not fail for 10 bytes once the pool is ready;
         * fall back to the clock so the id is still unique enough to use. */
        uint64_t t = (uint64_t)time_mono_ms();
        for (int i = 0; i < 8; i++)
            rnd[i] ^= (unsigned char)(t >> (8 * i));
    }
    /* 128 bits: 48 time bits then 80 random bits, written as 26 base32 digits. */
    unsigned char bytes[16];
    for (int i = 0; i < 6; i++)
        bytes[i] = (unsigned char)(ms >> (8 * (5 - i)));
    for (int i = 0; i < 10; i++)
        bytes[6 + i] = rnd[i];
    /* 26 chars * 5 bits = 130 bits; the top 2 bits are zero. */
    for (int c = 25; c >= 0; c--) {
        int bit = (25 - c) * 5; /* bit offset from the least significant end */
        unsigned v = 0;
        for (int k = 0; k < 5; k++) {
            int b = bit + k;
            if (b >= 128)
                break;
            int byte = 15 - b / 8;
            if (bytes[byte] >> (b % 8) & 1)
                v |= 1u << k;
        }
        out[c] = alphabet[v];
    }
    out[26] = '\0';
}

bool time_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms)
{
    if (deadline_ms <= 0) {
        pthread_cond_wait(cv, mu);
        return true;
    }
    int64_t left = deadline_ms - time_mono_ms();
    if (left <= 0)
        return false;
    /* Condition variables wait on CLOCK_REALTIME by default; convert. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += left / 1000;
    ts.tv_nsec += (left % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &ts);
    return true;
}
