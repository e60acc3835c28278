/*
 * JSON text for single values: the formatting primitives behind the row
 * encoder (json_rows.h), exported so that other writers of query results (the
 * index fast path reading its own columns, the schema sample) produce exactly
 * the same text. Every function writes at `o` and returns the end; the caller
 * guarantees the stated room (JSON_FMT_MAX_* bytes, plus JSON_FMT_SLACK bytes:
 * some writers store whole 8/16-byte blocks and overshoot what they keep).
 *
 * Formats (docs/architecture.md "JSON values", plus the choices made here):
 *   integers     exact JSON numbers, all widths up to 128 bits
 *   double/float shortest round-trip digits (float32-shortest for FLOAT);
 *                fixed notation for decimal exponents -6..21 (JavaScript's
 *                rule), else d.ddde[-]X; integral values keep ".0"
 *                (1.0, -0.0, 1e21); NaN and +-Inf are null
 *   decimal      exact JSON number with all `scale` digits (1.50, -0.05)
 *   date         "YYYY-MM-DD" (astronomical years: year 0 = 1 BC is "0000",
 *                "-0043-03-15", "10000-01-01" — all read back by DuckDB's
 *                cast); "infinity" / "-infinity"
 *   time         "HH:MM:SS[.f]"; fractions trimmed of trailing zeros
 *   time_tz      "HH:MM:SS[.f]+HH:MM[:SS]"
 *   timestamp    "YYYY-MM-DDTHH:MM:SS[.f]" (+ "Z" for TIMESTAMPTZ, stored UTC),
 *                fraction up to the unit's precision, trailing zeros trimmed;
 *                "infinity" / "-infinity"
 *   interval     ISO-8601 duration as PostgreSQL's intervalstyle iso_8601
 *                writes it: "P1Y2M3DT4H5M6.5S", a sign per component
 *                ("P-1Y-2M3DT-4H"), zero is "PT0S"
 *   uuid         "8-4-4-4-12" lower-case hex
 *   blob         base64 (RFC 4648, padded) string
 *   string       escaped: \" \\ \b \f \n \r \t, other bytes < 0x20 as \u00XX;
 *                everything else (valid UTF-8, DuckDB guarantees it) verbatim
 */
#ifndef VT_ENCODE_JSON_FORMAT_H
#define VT_ENCODE_JSON_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* "00".."99": the digits of each value below 100, one table for every text
 * writer (the JSON formatters, pgwire's dates and times). */
extern const char json_digit_pairs[201];
static inline void json_put2(char *o, unsigned v) { memcpy(o, json_digit_pairs + 2 * v, 2); } /* v < 100 */

#define JSON_FMT_SLACK 32
#define JSON_FMT_MAX_INT 41       /* -170141183460469231731687303715884105728 */
#define JSON_FMT_MAX_DOUBLE 32    /* -0.0000012345678901234567 and friends */
#define JSON_FMT_MAX_DECIMAL 44   /* 38 digits, sign, point, "0." */
#define JSON_FMT_MAX_DATE 24      /* quoted, years up to 7 digits */
#define JSON_FMT_MAX_TIME 24      /* "HH:MM:SS.fffffffff" quoted */
#define JSON_FMT_MAX_TIME_TZ 32
#define JSON_FMT_MAX_TIMESTAMP 48 /* quoted, long years, 9 fraction digits, Z */
#define JSON_FMT_MAX_INTERVAL 80
#define JSON_FMT_MAX_UUID 38

enum json_ts_unit { JSON_TS_S, JSON_TS_MS, JSON_TS_US, JSON_TS_NS };

char *json_fmt_null(char *o);
char *json_fmt_bool(char *o, bool v);
char *json_fmt_u64(char *o, uint64_t v);
char *json_fmt_i64(char *o, int64_t v);
/* 128-bit two's complement as DuckDB stores it: (upper, lower) halves. */
char *json_fmt_i128(char *o, int64_t upper, uint64_t lower);
char *json_fmt_u128(char *o, uint64_t upper, uint64_t lower);
char *json_fmt_double(char *o, double v);
char *json_fmt_float(char *o, float v);
char *json_fmt_decimal64(char *o, int64_t v, unsigned scale);
char *json_fmt_decimal128(char *o, int64_t upper, uint64_t lower, unsigned scale);
char *json_fmt_date(char *o, int32_t days);
char *json_fmt_time(char *o, int64_t micros);
/* DuckDB's dtime_tz_t bits: micros << 24 | (57599 - offset_seconds). */
char *json_fmt_time_tz(char *o, uint64_t bits);
char *json_fmt_timestamp(char *o, int64_t v, enum json_ts_unit unit, bool utc);

/* The same two with a cache of date texts by day number, for a column's
 * values (the civil-date arithmetic was ~90 instructions a value; a column
 * of dates or timestamps rarely spans more than a few thousand days). One
 * cache per column, made by json_daycache_new with JSON_DAYCACHE_N slots
 * (32 KiB); a column that keeps missing (more days than slots) gets one of
 * JSON_DAYCACHE_MAX (json_rows.c). Same output. */
#define JSON_DAYCACHE_N 2048
#define JSON_DAYCACHE_MAX 16384
struct json_daycache {
    uint32_t mask;   /* slots - 1 (a power of two) */
    uint32_t misses; /* lookups that formatted the date */
    struct {
        char ymd[12]; /* "YYYY-MM-DD": years 0..9999 only */
        int32_t tag;  /* its day; (slot + 1) when empty: never looked up there */
    } e[];
};
/* slots: a power of two; NULL without memory (free() releases it) */
struct json_daycache *json_daycache_new(uint32_t slots);
/* A date through the cache: the hit inline in the caller's loop (a call,
 * its frame and the infinity tests were more than the copy), the rest
 * json_fmt_date_miss. No tag is ever an infinity (only 10-byte dates are
 * cached), nor an empty slot's own day. */
char *json_fmt_date_miss(char *o, int32_t days, struct json_daycache *dc);
static inline char *json_fmt_date_cached(char *o, int32_t days, struct json_daycache *dc)
{
    if (dc) {
        uint32_t slot = (uint32_t)days & dc->mask;
        if (dc->e[slot].tag == days) {
            o[0] = '"';
            memcpy(o + 1, dc->e[slot].ymd, 16); /* the text, then scratch */
            o[11] = '"';
            return o + 12;
        }
    }
    return json_fmt_date_miss(o, days, dc);
}
char *json_fmt_timestamp_cached(char *o, int64_t v, enum json_ts_unit unit, bool utc,
                                struct json_daycache *dc);
/* The same for TIMESTAMP and TIMESTAMPTZ (microseconds): one small function
 * each, no unit switch (the row writer's columns of the two usual types). */
char *json_fmt_ts_us_cached(char *o, int64_t v, struct json_daycache *dc);
char *json_fmt_tstz_us_cached(char *o, int64_t v, struct json_daycache *dc);
char *json_fmt_interval(char *o, int32_t months, int32_t days, int64_t micros);
/* DuckDB's UUID hugeint (top bit flipped so that signed order is byte order). */
char *json_fmt_uuid(char *o, int64_t upper, uint64_t lower);

/* Strings: room needed is json_string_max(n) (+ slack). */
static inline size_t json_string_max(size_t n) { return 6 * n + 2; }
char *json_fmt_string(char *o, const char *s, size_t n);
/* The same without the surrounding quotes. */
char *json_fmt_string_body(char *o, const char *s, size_t n);

static inline size_t json_base64_max(size_t n) { return (n + 2) / 3 * 4 + 2; }
char *json_fmt_base64(char *o, const unsigned char *s, size_t n); /* quoted */

/* DuckDB BIT string (first byte = padding bits) as a quoted "0101" string;
 * room: 8 * n + 2. */
char *json_fmt_bit(char *o, const unsigned char *s, size_t n);
/* DuckDB BIGNUM blob as an exact JSON number; room: json_bignum_max(n). Returns
 * NULL when the blob is not a well-formed BIGNUM. */
static inline size_t json_bignum_max(size_t n) { return n * 5 / 2 + 8; }
char *json_fmt_bignum(char *o, const unsigned char *s, size_t n);

/* True when s[0..n) is exactly one RFC 8259 JSON text (surrounding whitespace
 * allowed). Used before passing JSON-typed values through verbatim. */
bool json_is_valid(const char *s, size_t n);

#endif
