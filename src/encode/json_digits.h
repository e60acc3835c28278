/*
 * Decimal digit writing shared by the JSON value formatters (json_format.c,
 * dtoa.c): internal to src/encode, static inline so every hot loop gets its
 * own copy. Writers may store whole 8-byte words past the digits they keep;
 * callers keep JSON_FMT_SLACK bytes of room.
 */
#ifndef VT_ENCODE_JSON_DIGITS_H
#define VT_ENCODE_JSON_DIGITS_H

#include <emmintrin.h>
#include <stdint.h>
#include <string.h>

#include "encode/json_format.h" /* json_put2 */

static const uint64_t P10[20] __attribute__((unused)) = {1ull,
                                 10ull,
                                 100ull,
                                 1000ull,
                                 10000ull,
                                 100000ull,
                                 1000000ull,
                                 10000000ull,
                                 100000000ull,
                                 1000000000ull,
                                 10000000000ull,
                                 100000000000ull,
                                 1000000000000ull,
                                 10000000000000ull,
                                 100000000000000ull,
                                 1000000000000000ull,
                                 10000000000000000ull,
                                 100000000000000000ull,
                                 1000000000000000000ull,
                                 10000000000000000000ull};


/* Decimal digit count of v >= 1 (log2 * 1233/4096 approximates log10). */
static inline int ndigits_u64(uint64_t v)
{
    int t = ((64 - __builtin_clzll(v | 1)) * 1233) >> 12;
    return t + (v >= P10[t]);
}

/* The 8 decimal digits of v < 10^8 as ASCII in one word, first digit in the
 * lowest byte (SWAR: split into 4-digit lanes, then 2-digit, then 1-digit
 * lanes with multiply-shift divisions; exact for every v < 10^8, checked
 * exhaustively). No table loads and no dependency chain per digit pair. */
static inline uint64_t swar8(uint32_t v)
{
    uint64_t x = (uint64_t)(v / 10000) | ((uint64_t)(v % 10000) << 32);
    uint64_t q = ((x * 5243) >> 19) & 0x0000007F0000007Full; /* lane / 100 */
    x = q | ((x - q * 100) << 16);
    q = ((x * 103) >> 10) & 0x000F000F000F000Full; /* lane / 10 */
    x = q | ((x - q * 10) << 8);
    return x | 0x3030303030303030ull;
}

/* The 16 decimal digits of hi * 10^8 + lo (hi, lo < 10^8) as ASCII in one
 * SSE2 register, first digit in byte 0: the same lane splits as swar8
 * (10^4, then 100, then 10, each a multiply-shift that is exact over its
 * range) done for both words at once, ~23 instructions for what two swar8
 * do in ~50. */
static inline __m128i digits16(uint32_t hi, uint32_t lo)
{
    __m128i x = _mm_set_epi64x((long long)lo, (long long)hi);
    /* /10^4 of each 64-bit lane: (x * ceil(2^45 / 10^4)) >> 45, exact below 10^8 */
    __m128i q = _mm_srli_epi64(_mm_mul_epu32(x, _mm_set1_epi32((int)0xd1b71759)), 45);
    __m128i r = _mm_sub_epi64(x, _mm_mul_epu32(q, _mm_set1_epi32(10000)));
    __m128i t = _mm_or_si128(q, _mm_slli_epi64(r, 32)); /* 32-bit lanes of 4 digits */
    /* /100 in the low 16 bits of each 32-bit lane: (t * 5243) >> 19 */
    __m128i q2 = _mm_srli_epi16(_mm_mulhi_epu16(t, _mm_set1_epi16(5243)), 3);
    __m128i r2 = _mm_sub_epi16(t, _mm_mullo_epi16(q2, _mm_set1_epi16(100)));
    __m128i u = _mm_or_si128(q2, _mm_slli_epi32(r2, 16)); /* 16-bit lanes of 2 digits */
    /* /10 of each 16-bit lane below 100: (u * 6554) >> 16 */
    __m128i q3 = _mm_mulhi_epu16(u, _mm_set1_epi16(6554));
    __m128i r3 = _mm_sub_epi16(u, _mm_mullo_epi16(q3, _mm_set1_epi16(10)));
    return _mm_or_si128(_mm_or_si128(q3, _mm_slli_epi16(r3, 8)), _mm_set1_epi8('0'));
}

/* The last n <= 8 digits of w, stored as a full 8-byte word at o (bytes
 * past o + n are scratch the caller overwrites or ignores). */
static inline void put_upto8(char *o, uint32_t w, int n)
{
    uint64_t x = swar8(w) >> (8 * (8 - n));
    memcpy(o, &x, 8);
}

/* Writes exactly `n` (1..20) digits of v (v < 10^n), most significant first.
 * May write up to 8 bytes past o + n: callers keep JSON_FMT_SLACK. Leading
 * parts are stored first, so each later store overwrites only scratch. */
static inline void put_digits(char *o, uint64_t v, int n)
{
    if (n <= 8) {
        put_upto8(o, (uint32_t)v, n);
    } else if (n <= 16) {
        uint64_t hi = v / 100000000;
        put_upto8(o, (uint32_t)hi, n - 8);
        uint64_t x = swar8((uint32_t)(v - hi * 100000000));
        memcpy(o + n - 8, &x, 8);
    } else {
        uint64_t top = v / 10000000000000000ull, rest = v - top * 10000000000000000ull;
        uint64_t mid = rest / 100000000;
        put_upto8(o, (uint32_t)top, n - 16);
        uint64_t x = swar8((uint32_t)mid), y = swar8((uint32_t)(rest - mid * 100000000));
        memcpy(o + n - 16, &x, 8);
        memcpy(o + n - 8, &y, 8);
    }
}

/* The digits of v, `lead` (1 or 2) leading ones then `pairs` pairs, for
 * 10^(lead + 2 pairs - 1) <= v < 10^(lead + 2 pairs) <= 10^8, front to
 * back from one fixed-point number: f = v * C with C = ceil(2^47 / 10^p),
 * p = 2 pairs, holds v / 10^p with 47 fraction bits; the integer part is
 * the leading digits, and each further pair is the integer part of the
 * fraction times 100. Exact: all of it is integer arithmetic on f = v 2^47 /
 * 10^p + e with 0 <= e < v, so after j pairs the number read is
 * v 100^j / 10^p plus e 100^j / 2^47 < (v 10^p / 2^47) 10^-(p - 2j), which
 * is below 10^-(p - 2j) as v 10^p < 10^14 < 2^47; the exact number is a
 * multiple of 10^-(p - 2j), so its integer part (the digits so far) is
 * unchanged (the unit test checks every v < 10^8). Per pair: mask,
 * multiply, shift, one table load and store; no division, no loop. */
static inline __attribute__((always_inline)) char *digits_fix(char *o, uint32_t v, int lead, int pairs)
{
    static const uint64_t C[4] __attribute__((unused)) = {1ull << 47, 1407374883554ull, 14073748836ull,
                                                          140737489ull};
    const uint64_t M = (1ull << 47) - 1;
    uint64_t f = (uint64_t)v * C[pairs];
    if (lead == 1)
        *o = (char)('0' + (f >> 47));
    else
        json_put2(o, (unsigned)(f >> 47));
    o += lead;
    for (int i = 0; i < pairs; i++) {
        f = (f & M) * 100;
        json_put2(o, (unsigned)(f >> 47));
        o += 2;
    }
    return o;
}

/* v in decimal, as few digits as it needs; returns the end. Below 10^8
 * (the values most columns hold) digits_fix for the length found by a few
 * comparisons (~30 instructions for a 6-digit value against ~50 for the
 * pair-by-pair division loop it replaced and ~45 for a SWAR word); wider
 * values put_digits (which stores whole 8-byte words: callers keep
 * JSON_FMT_SLACK). Inlined into the row writer's integer loops
 * (json_fmt_u64 is this). */
static inline char *digits_u64(char *o, uint64_t v)
{
    if (v < 100) {
        if (v < 10) {
            *o = (char)('0' + v);
            return o + 1;
        }
        json_put2(o, (unsigned)v);
        return o + 2;
    }
    if (v < 100000000) {
        uint32_t w = (uint32_t)v;
        if (w < 10000)
            return w < 1000 ? digits_fix(o, w, 1, 1) : digits_fix(o, w, 2, 1);
        if (w < 1000000)
            return w < 100000 ? digits_fix(o, w, 1, 2) : digits_fix(o, w, 2, 2);
        return w < 10000000 ? digits_fix(o, w, 1, 3) : digits_fix(o, w, 2, 3);
    }
    int n = ndigits_u64(v);
    put_digits(o, v, n);
    return o + n;
}

static inline char *digits_i64(char *o, int64_t v)
{
    if (v < 0) {
        *o++ = '-';
        return digits_u64(o, 0 - (uint64_t)v);
    }
    return digits_u64(o, (uint64_t)v);
}

/* A DECIMAL's JSON text (json_fmt_decimal64's) for a scale of 1..4, the
 * scale a constant where this is inlined: the integer part by a division by
 * a constant, the fraction from the digit-pair table (the general path
 * writes all digits, then moves the fraction to open the point). */
static inline char *digits_dec_small(char *o, int64_t v, unsigned scale)
{
    uint64_t u = (uint64_t)v;
    *o = '-';
    if (v < 0) {
        u = 0 - u;
        o++;
    }
    uint64_t ip = u / P10[scale], fp = u - ip * P10[scale];
    o = digits_u64(o, ip);
    *o = '.';
    if (scale == 1) {
        o[1] = (char)('0' + fp);
    } else if (scale == 2) {
        json_put2(o + 1, (unsigned)fp);
    } else if (scale == 3) {
        json_put2(o + 1, (unsigned)(fp / 10));
        o[3] = (char)('0' + fp % 10);
    } else {
        json_put2(o + 1, (unsigned)(fp / 100));
        json_put2(o + 3, (unsigned)(fp % 100));
    }
    return o + 1 + scale;
}

/* Bytes of a 16-byte block that a JSON string must escape (", \\, bytes
 * below 0x20), as a bit mask. */
static inline unsigned json_escape_mask(__m128i v)
{
    const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1f);
    __m128i m = _mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, bs));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v)); /* v <= 0x1f */
    return (unsigned)_mm_movemask_epi8(m);
}

#endif
