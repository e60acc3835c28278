/*
 * Single values in PostgreSQL's output forms, for the DataRow encoder
 * (types.c) and the settings and catalog code: the text of dates, times,
 * timestamps, intervals and uuids (DateStyle ISO, IntervalStyle postgres),
 * float4/float8 text (shortest round-trip, extra_float_digits), and the
 * binary numeric of a decimal text. Pure functions on values: no DuckDB
 * vectors, no column state (that is types.c).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode/dtoa.h"
#include "encode/json_format.h" /* json_put2 */
#include "pgwire/pgwire.h"

/* ------------------------------------------------------------ text output */

/* Days since 1970-01-01 to a civil date (proleptic Gregorian). */
static void civil(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yy + (*m <= 2);
}

/* The last two digits of v. */
static inline char *put2(char *o, unsigned v)
{
    json_put2(o, v % 100);
    return o + 2;
}

/* YYYY-MM-DD, PostgreSQL's way: years before 1 are "<1 - year> ... BC"
 * (the caller appends " BC" after the whole value when *bc). */
static char *put_ymd(char *o, int64_t days, bool *bc)
{
    int64_t y;
    unsigned m, d;
    civil(days, &y, &m, &d);
    *bc = y <= 0;
    if (*bc)
        y = 1 - y;
    if (y < 10000) { /* the common case without snprintf (this runs per value) */
        o = put2(o, (unsigned)y / 100);
        o = put2(o, (unsigned)y);
    } else {
        char yb[24];
        int n = snprintf(yb, sizeof yb, "%lld", (long long)y);
        memcpy(o, yb, (size_t)n);
        o += n;
    }
    *o++ = '-';
    o = put2(o, m);
    *o++ = '-';
    return put2(o, d);
}

/* HH:MM:SS[.ffffff] with the fraction's trailing zeros trimmed. */
static char *put_hms_frac(char *o, uint64_t hours, unsigned min, unsigned sec, uint32_t frac)
{
    if (hours < 100) {
        o = put2(o, (unsigned)hours);
    } else {
        char hb[24];
        int n = snprintf(hb, sizeof hb, "%llu", (unsigned long long)hours);
        memcpy(o, hb, (size_t)n);
        o += n;
    }
    *o++ = ':';
    o = put2(o, min);
    *o++ = ':';
    o = put2(o, sec);
    if (frac) { /* frac < 1000000: six digits written, the trailing zeros dropped */
        *o++ = '.';
        put2(o, frac / 10000);
        put2(o + 2, frac / 100);
        put2(o + 4, frac);
        int k = 6;
        while (k > 1 && o[k - 1] == '0')
            k--;
        o += k;
    }
    return o;
}

char *pgw_txt_time(char *o, int64_t us)
{
    uint64_t u = us < 0 ? 0 : (uint64_t)us;
    uint64_t s = u / 1000000;
    return put_hms_frac(o, s / 3600, (unsigned)(s / 60 % 60), (unsigned)(s % 60),
                        (uint32_t)(u % 1000000));
}

static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* A timestamp in microseconds: date, time, then "+00" for timestamptz, then
 * " BC". Infinite values as PostgreSQL writes them. */
char *pgw_txt_timestamp(char *o, int64_t us, bool tz)
{
    if (us == INT64_MAX) {
        memcpy(o, "infinity", 8);
        return o + 8;
    }
    if (us == -INT64_MAX || us == INT64_MIN) {
        memcpy(o, "-infinity", 9);
        return o + 9;
    }
    int64_t days = floordiv(us, 86400000000LL);
    int64_t rest = us - days * 86400000000LL;
    bool bc;
    o = put_ymd(o, days, &bc);
    *o++ = ' ';
    o = pgw_txt_time(o, rest);
    if (tz) {
        memcpy(o, "+00", 3);
        o += 3;
    }
    if (bc) {
        memcpy(o, " BC", 3);
        o += 3;
    }
    return o;
}

char *pgw_txt_date(char *o, int32_t days)
{
    if (days == INT32_MAX) {
        memcpy(o, "infinity", 8);
        return o + 8;
    }
    if (days == -INT32_MAX || days == INT32_MIN) {
        memcpy(o, "-infinity", 9);
        return o + 9;
    }
    bool bc;
    o = put_ymd(o, days, &bc);
    if (bc) {
        memcpy(o, " BC", 3);
        o += 3;
    }
    return o;
}

char *pgw_txt_timetz(char *o, uint64_t bits)
{
    uint64_t micros = bits >> 24;
    int32_t offset = 57599 - (int32_t)(bits & 0xffffff); /* seconds east of UTC */
    o = pgw_txt_time(o, (int64_t)micros);
    *o++ = offset < 0 ? '-' : '+';
    uint32_t a = (uint32_t)(offset < 0 ? -offset : offset);
    o = put2(o, a / 3600);
    if (a % 3600) {
        *o++ = ':';
        o = put2(o, a / 60 % 60);
        if (a % 60) {
            *o++ = ':';
            o = put2(o, a % 60);
        }
    }
    return o;
}

/* IntervalStyle postgres: "1 year 2 mons 3 days 04:05:06.789"; a positive
 * field after a negative one carries "+". */
char *pgw_txt_interval(char *o, int32_t months, int32_t days, int64_t micros)
{
    bool before = false, zero = true;
    char *start = o;
    int64_t fields[3] = {months / 12, months % 12, days};
    static const char *const unit[3] = {"year", "mon", "day"};
    for (int i = 0; i < 3; i++) {
        if (!fields[i])
            continue;
        char b[48];
        int n = snprintf(b, sizeof b, "%s%s%lld %s%s", zero ? "" : " ",
                         before && fields[i] > 0 ? "+" : "", (long long)fields[i], unit[i],
                         fields[i] == 1 ? "" : "s");
        memcpy(o, b, (size_t)n);
        o += n;
        before |= fields[i] < 0;
        zero = false;
    }
    if (zero || micros != 0) {
        bool minus = micros < 0;
        uint64_t u = minus ? 0 - (uint64_t)micros : (uint64_t)micros;
        if (!zero)
            *o++ = ' ';
        if (minus)
            *o++ = '-';
        else if (before)
            *o++ = '+';
        uint64_t s = u / 1000000;
        o = put_hms_frac(o, s / 3600, (unsigned)(s / 60 % 60), (unsigned)(s % 60),
                         (uint32_t)(u % 1000000));
    }
    (void)start;
    return o;
}

char *pgw_txt_uuid(char *o, const void *p)
{
    int64_t upper;
    uint64_t lower;
    memcpy(&lower, p, 8);
    memcpy(&upper, (const char *)p + 8, 8);
    static const char hex[] = "0123456789abcdef";
    uint64_t hi = (uint64_t)upper ^ (1ull << 63);
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *o++ = '-';
        unsigned char b = (unsigned char)(i < 8 ? hi >> (56 - 8 * i) : lower >> (56 - 8 * (i - 8)));
        *o++ = hex[b >> 4];
        *o++ = hex[b & 15];
    }
    return o;
}

/* PostgreSQL's float output: shortest round-trip digits (extra_float_digits
 * > 0, the default since PostgreSQL 12), exponent notation when the decimal
 * exponent is below -4 or at least `dig` (15 for float8, 6 for float4);
 * else %.*g with dig + extra_float_digits significant digits. */
static size_t fmt_float_common(char *out, double v, bool is_float, int efd)
{
    if (isnan(v))
        return (size_t)snprintf(out, 32, "NaN");
    if (isinf(v))
        return (size_t)snprintf(out, 32, v > 0 ? "Infinity" : "-Infinity");
    int dig = is_float ? 6 : 15;
    if (efd <= 0) {
        int prec = dig + efd;
        if (prec < 1)
            prec = 1;
        return (size_t)snprintf(out, 32, "%.*g", prec, v);
    }
    if (v == 0)
        return (size_t)snprintf(out, 32, signbit(v) ? "-0" : "0");
    char digits[24];
    int point;
    int k = is_float ? json_ftoa_shortest((float)v, digits, &point)
                     : json_dtoa_shortest(v, digits, &point);
    char *o = out;
    if (v < 0)
        *o++ = '-';
    int exp = point - 1;
    if (exp < -4 || exp >= dig) {
        *o++ = digits[0];
        if (k > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)(k - 1));
            o += k - 1;
        }
        o += snprintf(o, 8, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    } else if (point <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -point; i++)
            *o++ = '0';
        memcpy(o, digits, (size_t)k);
        o += k;
    } else if (point >= k) {
        memcpy(o, digits, (size_t)k);
        o += k;
        for (int i = k; i < point; i++)
            *o++ = '0';
    } else {
        memcpy(o, digits, (size_t)point);
        o += point;
        *o++ = '.';
        memcpy(o, digits + point, (size_t)(k - point));
        o += k - point;
    }
    return (size_t)(o - out);
}

size_t pgw_fmt_double(char *out, double v, int extra_float_digits)
{
    return fmt_float_common(out, v, false, extra_float_digits);
}

size_t pgw_fmt_float(char *out, float v, int extra_float_digits)
{
    return fmt_float_common(out, v, true, extra_float_digits);
}

/* ------------------------------------------------------- binary numeric */

static void be16(char *p, uint16_t v)
{
    p[0] = (char)(v >> 8);
    p[1] = (char)v;
}

int pgw_numeric_binary(struct strbuf *out, const char *text, size_t len)
{
    size_t i = 0;
    bool neg = false;
    if (len == 3 && !strncasecmp(text, "nan", 3)) {
        char h[8] = {0};
        be16(h + 4, 0xC000);
        return sb_add(out, h, 8);
    }
    if (i < len && (text[i] == '-' || text[i] == '+'))
        neg = text[i++] == '-';
    size_t istart = i;
    while (i < len && isdigit((unsigned char)text[i]))
        i++;
    size_t iend = i, fstart = i, fend = i;
    if (i < len && text[i] == '.') {
        fstart = ++i;
        while (i < len && isdigit((unsigned char)text[i]))
            i++;
        fend = i;
    }
    if (i != len || (iend == istart && fend == fstart))
        return -1;
    while (istart < iend && text[istart] == '0')
        istart++;
    size_t nint = iend - istart, nfrac = fend - fstart;
    if (nfrac > 16383 || nint > 131072)
        return -1;
    /* Groups of 4 digits aligned at the decimal point. */
    size_t igroups = (nint + 3) / 4, fgroups = (nfrac + 3) / 4;
    size_t total = igroups + fgroups;
    uint16_t *g = calloc(total ? total : 1, sizeof *g);
    if (!g)
        return -1;
    size_t lead = igroups * 4 - nint; /* zeros padding the first group */
    for (size_t d = 0; d < nint; d++) {
        size_t pos = lead + d;
        g[pos / 4] = (uint16_t)(g[pos / 4] * 10 + (text[istart + d] - '0'));
    }
    for (size_t d = 0; d < fgroups * 4; d++) {
        unsigned digit = d < nfrac ? (unsigned)(text[fstart + d] - '0') : 0;
        g[igroups + d / 4] = (uint16_t)(g[igroups + d / 4] * 10 + digit);
    }
    size_t first = 0, last = total;
    while (first < total && g[first] == 0)
        first++;
    while (last > first && g[last - 1] == 0)
        last--;
    int weight = (int)igroups - 1 - (int)first;
    size_t nd = last - first;
    if (nd == 0) {
        weight = 0;
        neg = false;
    }
    if (sb_grow(out, 8 + 2 * nd) != 0) {
        free(g);
        return -1;
    }
    char *p = out->buf + out->len;
    be16(p, (uint16_t)nd);
    be16(p + 2, (uint16_t)(int16_t)weight);
    be16(p + 4, neg ? 0x4000 : 0);
    be16(p + 6, (uint16_t)nfrac);
    for (size_t k = 0; k < nd; k++)
        be16(p + 8 + 2 * k, g[first + k]);
    out->len += 8 + 2 * nd;
    free(g);
    return 0;
}
