/*
 * Humantime durations ("30s", "5m", "1h 30m", "250ms", "2days"), the format
 * the spec uses for refresh intervals and saved-query ttl, and the inverse
 * rendering used when a dataset is written back to TOML.
 *
 * A duration is one or more <integer><unit> parts, optionally separated by
 * spaces; the parts add up. Fractions and bare numbers are rejected: "5" could
 * mean seconds or milliseconds, and guessing wrong silently is worse than an
 * error. Parts below a millisecond are summed in nanoseconds and truncated.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"

struct unit {
    const char *name;
    int64_t ns;
};

#define NS_MS INT64_C(1000000)
#define NS_S (1000 * NS_MS)
#define NS_DAY (86400 * NS_S)

static const struct unit units[] = {
    {"nanoseconds", 1}, {"nanosecond", 1}, {"nsec", 1}, {"ns", 1},
    {"microseconds", 1000}, {"microsecond", 1000}, {"usec", 1000}, {"us", 1000},
    {"\xC2\xB5s", 1000}, /* µs */
    {"milliseconds", NS_MS}, {"millisecond", NS_MS}, {"msec", NS_MS}, {"ms", NS_MS},
    {"seconds", NS_S}, {"second", NS_S}, {"secs", NS_S}, {"sec", NS_S}, {"s", NS_S},
    {"minutes", 60 * NS_S}, {"minute", 60 * NS_S}, {"mins", 60 * NS_S}, {"min", 60 * NS_S},
    {"m", 60 * NS_S},
    {"hours", 3600 * NS_S}, {"hour", 3600 * NS_S}, {"hrs", 3600 * NS_S}, {"hr", 3600 * NS_S},
    {"h", 3600 * NS_S},
    {"days", NS_DAY}, {"day", NS_DAY}, {"d", NS_DAY},
    {"weeks", 7 * NS_DAY}, {"week", 7 * NS_DAY}, {"w", 7 * NS_DAY},
    /* as humantime defines them: a month is 30.44 days, a year 365.25 days */
    {"months", 2630016 * NS_S}, {"month", 2630016 * NS_S}, {"M", 2630016 * NS_S},
    {"years", 31557600 * NS_S}, {"year", 31557600 * NS_S}, {"y", 31557600 * NS_S},
};

int64_t config_parse_duration_ms(const char *s)
{
    if (!s)
        return -1;
    int64_t total_ns = 0;
    int parts = 0;
    size_t i = 0, n = strlen(s);
    while (i < n && s[i] == ' ')
        i++;
    while (i < n) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        int64_t num = 0;
        while (i < n && isdigit((unsigned char)s[i])) {
            if (num > (INT64_MAX - 9) / 10)
                return -1;
            num = num * 10 + (s[i] - '0');
            i++;
        }
        size_t u = i;
        while (i < n && s[i] != ' ' && !isdigit((unsigned char)s[i]))
            i++;
        size_t ulen = i - u;
        int64_t mult = 0;
        for (size_t k = 0; k < sizeof units / sizeof units[0]; k++) {
            if (strlen(units[k].name) == ulen && memcmp(units[k].name, s + u, ulen) == 0) {
                mult = units[k].ns;
                break;
            }
        }
        if (!mult)
            return -1; /* unknown or missing unit */
        if (num > (INT64_MAX - total_ns) / mult)
            return -1;
        total_ns += num * mult;
        parts++;
        while (i < n && s[i] == ' ')
            i++;
    }
    return parts ? total_ns / NS_MS : -1;
}

void config_format_duration(int64_t ms, char out[64])
{
    if (ms <= 0) {
        snprintf(out, 64, "0s");
        return;
    }
    static const struct {
        const char *name;
        int64_t ms;
    } parts[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        int64_t q = ms / parts[i].ms;
        if (!q)
            continue;
        ms -= q * parts[i].ms;
        int w = snprintf(out + len, 64 - len, "%s%lld%s", len ? " " : "", (long long)q,
                         parts[i].name);
        if (w < 0 || (size_t)w >= 64 - len)
            break;
        len += (size_t)w;
    }
}

uint64_t config_parse_size_bytes(const char *s, uint64_t available)
{
    static const struct {
        const char *name;
        uint64_t mult;
    } size_units[] = {
        {"", 1}, {"b", 1}, {"byte", 1}, {"bytes", 1}, {"kb", 1000}, {"mb", 1000000},
        {"gb", 1000000000ull}, {"tb", 1000000000000ull}, {"kib", 1ull << 10},
        {"mib", 1ull << 20}, {"gib", 1ull << 30}, {"tib", 1ull << 40},
    };
    if (!s)
        return UINT64_MAX;
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return UINT64_MAX;
    while (*end == ' ')
        end++;
    if (strcmp(end, "%") == 0)
        return available ? (uint64_t)((double)available * v / 100.0) : UINT64_MAX;
    for (size_t i = 0; i < sizeof size_units / sizeof size_units[0]; i++)
        if (strcasecmp(end, size_units[i].name) == 0)
            return (uint64_t)(v * (double)size_units[i].mult);
    return UINT64_MAX;
}
