/*
 * Value formatting for the JSON writer: integers, floats (digits from
 * dtoa.cc), decimals, calendar types, strings, base64. These run once per
 * value on the hot path, so they write into caller-reserved memory without
 * bounds checks or allocation; the reservation rules are in json_format.h.
 */
#include "encode/json_format.h"

#include <emmintrin.h>
#include <stdlib.h>
#include <string.h>

#include "encode/json_digits.h"

const char json_digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
                                   "25262728293031323334353637383940414243444546474849"
                                   "50515253545556575859606162636465666768697071727374"
                                   "75767778798081828384858687888990919293949596979899";

typedef __int128 i128;
typedef unsigned __int128 u128;

char *json_fmt_null(char *o)
{
    memcpy(o, "null", 4);
    return o + 4;
}

char *json_fmt_bool(char *o, bool v)
{
    /* both stored as 5 bytes: callers reserve room anyway */
    memcpy(o, v ? "true\0" : "false", 5);
    return o + (v ? 4 : 5);
}

char *json_fmt_u64(char *o, uint64_t v) { return digits_u64(o, v); }

char *json_fmt_i64(char *o, int64_t v) { return digits_i64(o, v); }

/* Magnitude of a 128-bit unsigned value in decimal, via 10^19 limbs. */
static char *fmt_u128(char *o, u128 v)
{
    const uint64_t E19 = 10000000000000000000ull;
    if (v <= UINT64_MAX)
        return json_fmt_u64(o, (uint64_t)v);
    u128 hi = v / E19;
    uint64_t lo = (uint64_t)(v - hi * E19);
    if (hi <= UINT64_MAX) {
        o = json_fmt_u64(o, (uint64_t)hi);
    } else {
        uint64_t top = (uint64_t)(hi / E19);
        uint64_t mid = (uint64_t)(hi - (u128)top * E19);
        o = json_fmt_u64(o, top);
        put_digits(o, mid, 19);
        o += 19;
    }
    put_digits(o, lo, 19);
    return o + 19;
}

char *json_fmt_i128(char *o, int64_t upper, uint64_t lower)
{
    u128 u = ((u128)(uint64_t)upper << 64) | lower;
    if (upper < 0) {
        *o++ = '-';
        u = 0 - u;
    }
    return fmt_u128(o, u);
}

char *json_fmt_u128(char *o, uint64_t upper, uint64_t lower)
{
    return fmt_u128(o, ((u128)upper << 64) | lower);
}

/* Inserts the decimal point into the digits of |v| already at o[0..n). */
static char *place_point(char *o, int n, unsigned scale)
{
    if (scale == 0)
        return o + n;
    if ((unsigned)n > scale) {
        /* the fraction moves one byte right: short scales go as one 16-byte
         * block read before any byte is written (a byte loop here became a
         * memmove call per value) */
        char *f = o + n - scale;
        if (scale <= 16) {
            __m128i b = _mm_loadu_si128((const __m128i *)f);
            _mm_storeu_si128((__m128i *)(f + 1), b);
        } else {
            memmove(f + 1, f, scale);
        }
        *f = '.';
        return o + n + 1;
    }
    /* 0.00ddd: shift the digits right by 2 + (scale - n) */
    size_t shift = 2 + scale - (unsigned)n;
    memmove(o + shift, o, (size_t)n);
    o[0] = '0';
    o[1] = '.';
    memset(o + 2, '0', scale - (unsigned)n);
    return o + shift + n;
}

char *json_fmt_decimal64(char *o, int64_t v, unsigned scale)
{
    if (scale == 0)
        return json_fmt_i64(o, v);
    uint64_t u = (uint64_t)v;
    if (v < 0) {
        *o++ = '-';
        u = 0 - u;
    }
    if (u < P10[scale] && scale < 19) { /* common small case: 0.xx */
        o[0] = '0';
        o[1] = '.';
        put_digits(o + 2, u, (int)scale);
        return o + 2 + scale;
    }
    char *e = json_fmt_u64(o, u);
    return place_point(o, (int)(e - o), scale);
}

char *json_fmt_decimal128(char *o, int64_t upper, uint64_t lower, unsigned scale)
{
    u128 u = ((u128)(uint64_t)upper << 64) | lower;
    if (upper < 0) {
        *o++ = '-';
        u = 0 - u;
    }
    char *e = fmt_u128(o, u);
    return place_point(o, (int)(e - o), scale);
}

/* Proleptic Gregorian civil date from days since 1970-01-01, any int64 day
 * (H. Hinnant's civil_from_days). */
static void civil_from_days_slow(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/* The same in 32-bit unsigned arithmetic with multiply-shift divisions (C.
 * Neri and L. Schneider, "Euclidean affine functions and their application
 * to calendar algorithms", 2022), for days in [NS_MIN, NS_MAX]: the whole
 * TIMESTAMP range and every DATE but the outermost. Shifted by NS_S 400-year
 * eras so N stays unsigned; checked against the slow form for every day of
 * the range. */
#define NS_S 730u
#define NS_K (719468u + 146097u * NS_S)
#define NS_MIN (-(int64_t)NS_K)
#define NS_MAX ((int64_t)1073741823 - (int64_t)NS_K)

static inline void civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
    if (days < NS_MIN || days > NS_MAX) {
        civil_from_days_slow(days, y, m, d);
        return;
    }
    uint32_t n = (uint32_t)(days + NS_K);
    uint32_t n1 = 4 * n + 3;
    uint32_t c = n1 / 146097, nc = n1 % 146097 / 4;
    uint32_t n2 = 4 * nc + 3;
    uint64_t p2 = (uint64_t)2939745 * n2;
    uint32_t z = (uint32_t)(p2 >> 32), ny = (uint32_t)p2 / 2939745 / 4;
    uint32_t n3 = 2141 * ny + 197913;
    uint32_t mm = n3 >> 16, dd = (n3 & 0xffff) / 2141;
    uint32_t j = ny >= 306; /* January and February belong to the next year */
    *y = (int64_t)(100 * c + z + j) - (int64_t)(400 * NS_S);
    *m = j ? mm - 12 : mm;
    *d = dd + 1;
}

/* YYYY-MM-DD without quotes; see the header for years outside 0..9999. */
static char *put_date(char *o, int64_t days)
{
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    if (y >= 0 && y <= 9999) {
        json_put2(o, (unsigned)(y / 100));
        json_put2(o + 2, (unsigned)(y % 100));
        o += 4;
    } else {
        uint64_t uy = (uint64_t)y;
        if (y < 0) {
            *o++ = '-';
            uy = 0 - uy;
        }
        if (uy < 10000) {
            put_digits(o, uy, 4);
            o += 4;
        } else {
            o = json_fmt_u64(o, uy);
        }
    }
    o[0] = '-';
    json_put2(o + 1, m);
    o[3] = '-';
    json_put2(o + 4, d);
    return o + 6;
}

struct json_daycache *json_daycache_new(uint32_t slots)
{
    struct json_daycache *dc = malloc(sizeof *dc + slots * sizeof dc->e[0]);
    if (!dc)
        return NULL;
    dc->mask = slots - 1;
    dc->misses = 0;
    for (uint32_t i = 0; i < slots; i++)
        dc->e[i].tag = (int32_t)(i + 1);
    return dc;
}

/* put_date through the cache: a hit is one 16-byte copy (the text and the
 * tag; the 6 bytes past the date are scratch the caller overwrites). */
static inline char *put_date_cached(char *o, int64_t days, struct json_daycache *dc)
{
    if (!dc || days != (int32_t)days)
        return put_date(o, days);
    uint32_t slot = (uint32_t)days & dc->mask;
    if (dc->e[slot].tag == (int32_t)days) {
        __m128i t = _mm_loadu_si128((const __m128i *)dc->e[slot].ymd);
        _mm_storeu_si128((__m128i *)o, t);
        return o + 10;
    }
    dc->misses++;
    char *e = put_date(o, days);
    if (e - o == 10) {
        memcpy(dc->e[slot].ymd, o, 10);
        dc->e[slot].tag = (int32_t)days;
    }
    return e;
}

/* ".fff" with `ndig` digits, trailing zeros trimmed; nothing when frac == 0.
 * Inlined with ndig a constant: 3 and 6 digits come from the digit-pair
 * table (fewer instructions than a SWAR word; the writer is bound by its
 * instruction count). */
static inline __attribute__((always_inline)) char *put_frac(char *o, uint64_t frac, int ndig)
{
    if (frac == 0)
        return o;
    *o = '.';
    uint32_t f = (uint32_t)frac;
    if (ndig == 6) {
        uint32_t a = f / 10000, r = f - a * 10000, b = r / 100;
        json_put2(o + 1, a);
        json_put2(o + 3, b);
        json_put2(o + 5, r - b * 100);
    } else if (ndig == 3) {
        uint32_t a = f / 100;
        o[1] = (char)('0' + a);
        json_put2(o + 2, f - a * 100);
    } else {
        put_digits(o + 1, frac, ndig);
    }
    char *e = o + 1 + ndig;
    while (e[-1] == '0')
        e--;
    return e;
}

/* HH:MM:SS (hours past 99 in as many digits as they need). */
static inline __attribute__((always_inline)) char *put_hms(char *o, uint64_t secs)
{
    if (secs < 360000) { /* below 100 hours: 32-bit arithmetic */
        uint32_t s32 = (uint32_t)secs, h = s32 / 3600, rem = s32 - h * 3600, m = rem / 60;
        json_put2(o, h);
        o[2] = ':';
        json_put2(o + 3, m);
        o[5] = ':';
        json_put2(o + 6, rem - m * 60);
        return o + 8;
    }
    unsigned h = (unsigned)(secs / 3600), rem = (unsigned)(secs % 3600);
    o = json_fmt_u64(o, h);
    o[0] = ':';
    json_put2(o + 1, rem / 60);
    o[3] = ':';
    json_put2(o + 4, rem % 60);
    return o + 6;
}

static inline char *fmt_date(char *o, int32_t days, struct json_daycache *dc)
{
    if (days == INT32_MAX || days == -INT32_MAX) {
        const char *s = days > 0 ? "\"infinity\"" : "\"-infinity\"";
        size_t n = strlen(s);
        memcpy(o, s, n);
        return o + n;
    }
    *o++ = '"';
    o = put_date_cached(o, days, dc);
    *o++ = '"';
    return o;
}

char *json_fmt_date(char *o, int32_t days) { return fmt_date(o, days, NULL); }

char *json_fmt_date_miss(char *o, int32_t days, struct json_daycache *dc)
{
    return fmt_date(o, days, dc);
}

char *json_fmt_time(char *o, int64_t micros)
{
    uint64_t u = micros < 0 ? 0 : (uint64_t)micros; /* never negative in DuckDB */
    *o++ = '"';
    o = put_hms(o, u / 1000000);
    o = put_frac(o, u % 1000000, 6);
    *o++ = '"';
    return o;
}

char *json_fmt_time_tz(char *o, uint64_t bits)
{
    uint64_t micros = bits >> 24;
    int32_t offset = 57599 - (int32_t)(bits & 0xffffff);
    *o++ = '"';
    o = put_hms(o, micros / 1000000);
    o = put_frac(o, micros % 1000000, 6);
    *o++ = offset < 0 ? '-' : '+';
    unsigned a = (unsigned)(offset < 0 ? -offset : offset);
    json_put2(o, a / 3600);
    o[2] = ':';
    json_put2(o + 3, a / 60 % 60);
    o += 5;
    if (a % 60) {
        *o = ':';
        json_put2(o + 1, a % 60);
        o += 3;
    }
    *o++ = '"';
    return o;
}

/* The timestamp layout for a unit known at compile time: always inlined
 * into a per-unit caller, so the divisions are by constants (a division by a
 * unit looked up at run time cost more than the rest of the formatting). */
static inline __attribute__((always_inline)) char *fmt_ts(char *o, int64_t v, int64_t per_sec,
                                                          int frac_digits, bool utc,
                                                          struct json_daycache *dc)
{
    if (v == INT64_MAX || v == -INT64_MAX) {
        const char *s = v > 0 ? "\"infinity\"" : "\"-infinity\"";
        size_t n = strlen(s);
        memcpy(o, s, n);
        return o + n;
    }
    const int64_t pd = per_sec * 86400;
    int64_t days = v / pd, rem = v % pd;
    if (rem < 0) { /* floor division: times before 1970 count back from midnight */
        rem += pd;
        days--;
    }
    uint64_t r = (uint64_t)rem;
    *o++ = '"';
    o = put_date_cached(o, days, dc);
    *o++ = 'T';
    o = put_hms(o, r / (uint64_t)per_sec);
    if (frac_digits)
        o = put_frac(o, r % (uint64_t)per_sec, frac_digits);
    if (utc)
        *o++ = 'Z';
    *o++ = '"';
    return o;
}

static inline char *fmt_ts_unit(char *o, int64_t v, enum json_ts_unit unit, bool utc,
                                struct json_daycache *dc)
{
    switch (unit) {
    case JSON_TS_S: return utc ? fmt_ts(o, v, 1, 0, true, dc) : fmt_ts(o, v, 1, 0, false, dc);
    case JSON_TS_MS: return utc ? fmt_ts(o, v, 1000, 3, true, dc) : fmt_ts(o, v, 1000, 3, false, dc);
    case JSON_TS_NS:
        return utc ? fmt_ts(o, v, 1000000000, 9, true, dc) : fmt_ts(o, v, 1000000000, 9, false, dc);
    case JSON_TS_US:
    default: return utc ? fmt_ts(o, v, 1000000, 6, true, dc) : fmt_ts(o, v, 1000000, 6, false, dc);
    }
}

char *json_fmt_ts_us_cached(char *o, int64_t v, struct json_daycache *dc)
{
    return fmt_ts(o, v, 1000000, 6, false, dc);
}

char *json_fmt_tstz_us_cached(char *o, int64_t v, struct json_daycache *dc)
{
    return fmt_ts(o, v, 1000000, 6, true, dc);
}

char *json_fmt_timestamp(char *o, int64_t v, enum json_ts_unit unit, bool utc)
{
    return fmt_ts_unit(o, v, unit, utc, NULL);
}

char *json_fmt_timestamp_cached(char *o, int64_t v, enum json_ts_unit unit, bool utc,
                                struct json_daycache *dc)
{
    return fmt_ts_unit(o, v, unit, utc, dc);
}

/* One "<n><unit>" component of an ISO duration, with its own sign. */
static char *put_component(char *o, int64_t n, char unit)
{
    o = json_fmt_i64(o, n);
    *o++ = unit;
    return o;
}

char *json_fmt_interval(char *o, int32_t months, int32_t days, int64_t micros)
{
    *o++ = '"';
    *o++ = 'P';
    if (months == 0 && days == 0 && micros == 0) {
        memcpy(o, "T0S\"", 4);
        return o + 4;
    }
    int32_t years = months / 12, mon = months % 12; /* both carry months' sign */
    if (years)
        o = put_component(o, years, 'Y');
    if (mon)
        o = put_component(o, mon, 'M');
    if (days)
        o = put_component(o, days, 'D');
    if (micros) {
        uint64_t u = micros < 0 ? 0 - (uint64_t)micros : (uint64_t)micros;
        const char *sign = micros < 0 ? "-" : "";
        uint64_t secs = u / 1000000, frac = u % 1000000;
        uint64_t h = secs / 3600, m = secs / 60 % 60, s = secs % 60;
        *o++ = 'T';
        if (h) {
            o = stpcpy(o, sign);
            o = json_fmt_u64(o, h);
            *o++ = 'H';
        }
        if (m) {
            o = stpcpy(o, sign);
            o = json_fmt_u64(o, m);
            *o++ = 'M';
        }
        if (s || frac) {
            o = stpcpy(o, sign);
            o = json_fmt_u64(o, s);
            o = put_frac(o, frac, 6);
            *o++ = 'S';
        }
    }
    *o++ = '"';
    return o;
}

char *json_fmt_uuid(char *o, int64_t upper, uint64_t lower)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t hi = (uint64_t)upper ^ (1ull << 63);
    unsigned char b[16];
    for (int i = 0; i < 8; i++) {
        b[i] = (unsigned char)(hi >> (56 - 8 * i));
        b[8 + i] = (unsigned char)(lower >> (56 - 8 * i));
    }
    *o++ = '"';
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *o++ = '-';
        *o++ = hex[b[i] >> 4];
        *o++ = hex[b[i] & 15];
    }
    *o++ = '"';
    return o;
}

/* The escape text of one byte that needs it. */
static inline char *escape_byte(char *o, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    o[0] = '\\';
    switch (c) {
    case '"': o[1] = '"'; return o + 2;
    case '\\': o[1] = '\\'; return o + 2;
    case '\n': o[1] = 'n'; return o + 2;
    case '\r': o[1] = 'r'; return o + 2;
    case '\t': o[1] = 't'; return o + 2;
    case '\b': o[1] = 'b'; return o + 2;
    case '\f': o[1] = 'f'; return o + 2;
    default:
        memcpy(o + 1, "u00", 3);
        o[4] = hex[c >> 4];
        o[5] = hex[c & 15];
        return o + 6;
    }
}

#if defined(__SANITIZE_ADDRESS__) || defined(VT_NO_OVERREAD)
#define JSON_OVERREAD_OK 0
#else
#define JSON_OVERREAD_OK 1
#endif


/* 16 bytes at a time: store the block unconditionally (the caller reserved
 * slack), then keep only the clean prefix and escape the first bad byte. The
 * tail is copied to a local block so we never read past the string. */
char *json_fmt_string_body(char *o, const char *s, size_t n)
{
    size_t i = 0;
    while (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
        _mm_storeu_si128((__m128i *)o, v);
        unsigned m = json_escape_mask(v);
        if (!m) {
            o += 16;
            i += 16;
            continue;
        }
        unsigned k = (unsigned)__builtin_ctz(m);
        o = escape_byte(o + k, (unsigned char)s[i + k]);
        i += k + 1;
    }
    if (i < n) {
        char tmp[32];
        size_t r = n - i, j = 0;
        const char *t = s + i;
        /* Reading up to 31 bytes past t cannot fault while they stay in t's
         * page; the bytes past the string are masked off. Sanitizer builds
         * (which would rightly flag the over-read) always copy. */
        if (!JSON_OVERREAD_OK || ((uintptr_t)t & 4095) > 4096 - 32) {
            memcpy(tmp, t, r);
            t = tmp;
        }
        while (j < r) {
            __m128i v = _mm_loadu_si128((const __m128i *)(t + j));
            _mm_storeu_si128((__m128i *)o, v);
            unsigned m = json_escape_mask(v) & ((1u << (r - j)) - 1);
            if (!m) {
                o += r - j;
                break;
            }
            unsigned k = (unsigned)__builtin_ctz(m);
            o = escape_byte(o + k, (unsigned char)t[j + k]);
            j += k + 1;
        }
    }
    return o;
}

char *json_fmt_string(char *o, const char *s, size_t n)
{
    *o++ = '"';
    o = json_fmt_string_body(o, s, n);
    *o++ = '"';
    return o;
}

char *json_fmt_base64(char *o, const unsigned char *s, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    *o++ = '"';
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t w = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        o[0] = tab[w >> 18];
        o[1] = tab[(w >> 12) & 63];
        o[2] = tab[(w >> 6) & 63];
        o[3] = tab[w & 63];
        o += 4;
    }
    if (n - i == 1) {
        uint32_t w = (uint32_t)s[i] << 16;
        o[0] = tab[w >> 18];
        o[1] = tab[(w >> 12) & 63];
        o[2] = o[3] = '=';
        o += 4;
    } else if (n - i == 2) {
        uint32_t w = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
        o[0] = tab[w >> 18];
        o[1] = tab[(w >> 12) & 63];
        o[2] = tab[(w >> 6) & 63];
        o[3] = '=';
        o += 4;
    }
    *o++ = '"';
    return o;
}

char *json_fmt_bit(char *o, const unsigned char *s, size_t n)
{
    *o++ = '"';
    if (n >= 2) {
        unsigned pad = s[0] > 7 ? 7 : s[0];
        for (unsigned b = pad; b < 8; b++)
            *o++ = (char)('0' + ((s[1] >> (7 - b)) & 1));
        for (size_t i = 2; i < n; i++)
            for (int b = 7; b >= 0; b--)
                *o++ = (char)('0' + ((s[i] >> b) & 1));
    }
    *o++ = '"';
    return o;
}

/* BIGNUM: a 3-byte header (top bit set for non-negative, then the byte count;
 * all inverted for negatives) and the big-endian magnitude (also inverted for
 * negatives). Converted by repeated division of 32-bit limbs by 10^9. */
char *json_fmt_bignum(char *o, const unsigned char *s, size_t n)
{
    if (n < 4)
        return NULL;
    bool neg = !(s[0] & 0x80);
    unsigned char inv = neg ? 0xff : 0;
    size_t nb = n - 3;
    size_t nl = (nb + 3) / 4;
    uint32_t small[64];
    uint32_t *limb = nl <= 64 ? small : malloc(nl * sizeof *limb);
    if (!limb)
        return NULL;
    /* big-endian bytes into big-endian limbs (limb[0] most significant) */
    memset(limb, 0, nl * sizeof *limb);
    for (size_t i = 0; i < nb; i++) {
        size_t from_end = nb - 1 - i;
        limb[nl - 1 - from_end / 4] |= (uint32_t)(unsigned char)(s[3 + i] ^ inv) << (8 * (from_end % 4));
    }
    /* remainders of 10^9, least significant group first, written backwards
     * into the tail of the reserved room and then moved up */
    size_t room = json_bignum_max(n);
    char *end = o + room, *p = end;
    size_t first = 0;
    while (first < nl && limb[first] == 0)
        first++;
    if (neg)
        *o++ = '-';
    if (first == nl) {
        if (limb != small)
            free(limb);
        *o++ = '0';
        return o;
    }
    while (first < nl) {
        uint64_t rem = 0;
        for (size_t i = first; i < nl; i++) {
            uint64_t cur = rem << 32 | limb[i];
            limb[i] = (uint32_t)(cur / 1000000000u);
            rem = cur % 1000000000u;
        }
        while (first < nl && limb[first] == 0)
            first++;
        p -= 9;
        put_digits(p, rem, 9);
    }
    while (*p == '0' && p + 1 < end)
        p++;
    size_t len = (size_t)(end - p);
    memmove(o, p, len);
    if (limb != small)
        free(limb);
    return o + len;
}

/* ---- validation of JSON-typed values (RFC 8259) ---- */

struct jv {
    const char *p, *e;
};

static void jv_ws(struct jv *v)
{
    while (v->p < v->e && (*v->p == ' ' || *v->p == '\n' || *v->p == '\r' || *v->p == '\t'))
        v->p++;
}

static bool jv_lit(struct jv *v, const char *lit, size_t n)
{
    if ((size_t)(v->e - v->p) < n || memcmp(v->p, lit, n) != 0)
        return false;
    v->p += n;
    return true;
}

static bool jv_digits(struct jv *v)
{
    const char *s = v->p;
    while (v->p < v->e && *v->p >= '0' && *v->p <= '9')
        v->p++;
    return v->p > s;
}

static bool jv_number(struct jv *v)
{
    if (v->p < v->e && *v->p == '-')
        v->p++;
    if (v->p < v->e && *v->p == '0')
        v->p++;
    else if (!jv_digits(v))
        return false;
    if (v->p < v->e && *v->p == '.') {
        v->p++;
        if (!jv_digits(v))
            return false;
    }
    if (v->p < v->e && (*v->p == 'e' || *v->p == 'E')) {
        v->p++;
        if (v->p < v->e && (*v->p == '+' || *v->p == '-'))
            v->p++;
        if (!jv_digits(v))
            return false;
    }
    return true;
}

/* Strings: escapes checked, raw control bytes refused, UTF-8 checked. */
static bool jv_string(struct jv *v)
{
    v->p++; /* opening quote */
    while (v->p < v->e) {
        unsigned char c = (unsigned char)*v->p++;
        if (c == '"')
            return true;
        if (c < 0x20)
            return false;
        if (c == '\\') {
            if (v->p >= v->e)
                return false;
            char x = *v->p++;
            if (x == 'u') {
                for (int i = 0; i < 4; i++, v->p++) {
                    if (v->p >= v->e)
                        return false;
                    char h = *v->p;
                    if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F')))
                        return false;
                }
            } else if (!strchr("\"\\/bfnrt", x) || x == 0) {
                return false;
            }
        } else if (c >= 0x80) {
            int extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 ? 1 : -1;
            if (extra < 0 || c > 0xf4 || v->e - v->p < extra)
                return false;
            unsigned char c1 = (unsigned char)v->p[0];
            if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f) || (c == 0xf0 && c1 < 0x90) ||
                (c == 0xf4 && c1 > 0x8f))
                return false; /* overlong, surrogate, above U+10FFFF */
            for (int i = 0; i < extra; i++)
                if (((unsigned char)v->p[i] & 0xc0) != 0x80)
                    return false;
            v->p += extra;
        }
    }
    return false;
}

/* Iterative, with an explicit stack of container kinds so depth costs no C
 * stack; containers deeper than the stack are refused (then the value is
 * written as a string instead, which is still correct JSON). */
bool json_is_valid(const char *s, size_t n)
{
    enum { MAXD = 256 };
    char stack[MAXD];
    int depth = 0;
    struct jv v = {s, s + n};
    jv_ws(&v);
    for (;;) {
        /* expect a value */
        if (v.p >= v.e)
            return false;
        char c = *v.p;
        if (c == '{' || c == '[') {
            if (depth == MAXD)
                return false;
            stack[depth++] = c;
            v.p++;
            jv_ws(&v);
            if (v.p < v.e && *v.p == (c == '{' ? '}' : ']')) {
                v.p++;
                depth--;
                goto after_value;
            }
            if (c == '{')
                goto member_key;
            continue;
        } else if (c == '"') {
            if (!jv_string(&v))
                return false;
        } else if (c == 't') {
            if (!jv_lit(&v, "true", 4))
                return false;
        } else if (c == 'f') {
            if (!jv_lit(&v, "false", 5))
                return false;
        } else if (c == 'n') {
            if (!jv_lit(&v, "null", 4))
                return false;
        } else if (!jv_number(&v)) {
            return false;
        }
    after_value:
        jv_ws(&v);
        if (depth == 0)
            return v.p == v.e;
        if (v.p >= v.e)
            return false;
        if (*v.p == ',') {
            v.p++;
            jv_ws(&v);
            if (stack[depth - 1] == '{')
                goto member_key;
            continue;
        }
        if (*v.p == (stack[depth - 1] == '{' ? '}' : ']')) {
            v.p++;
            depth--;
            goto after_value;
        }
        return false;
    member_key:
        if (v.p >= v.e || *v.p != '"' || !jv_string(&v))
            return false;
        jv_ws(&v);
        if (v.p >= v.e || *v.p != ':')
            return false;
        v.p++;
        jv_ws(&v);
    }
}
