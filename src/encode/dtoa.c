/*
 * Shortest round-trip digits for doubles and floats: Schubfach, written from
 * R. Giulietti, "The Schubfach way to render doubles" (2020, rev. 2021).
 *
 * Why our own: floating point is the largest cost of the JSON writer.
 * Measured here (AMD EPYC, 2.6 GHz, CPU time, random 16-17 digit doubles):
 * libdouble-conversion's shortest mode (Grisu3 + bignum fallback) ~83 ns per
 * value, this ~19 ns (three 64x128-bit multiplications, branch-free choice,
 * no digit loop, no fallback); the digit layout adds ~15 ns either way. The
 * results are digit-for-digit those of double-conversion: the tests compare
 * the two on random and edge values, and all 2^31 positive finite floats
 * were compared once (no difference).
 *
 * In short: v = c * 2^q has the rounding interval R = [v - lo, v + hi]
 * (bounds included iff c is even). Pick k with 10^k <= 2^q (or 3/4 2^q when
 * the lower neighbour is closer), scale the three points 4c-2 (or 4c-1), 4c,
 * 4c+2 by 10^-k with one precomputed 128-bit power g, rounding to odd. Then
 * the shortest decimal in R is either a multiple of 10^(k+1) bracketing v
 * (when exactly one of the two lies in R), or one of s, s+1 at 10^k, the one
 * in R or, when both are, the closer to v (ties to even).
 */
#include "encode/dtoa.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "encode/dtoa_table.h"
#include "encode/json_digits.h"
#include "encode/json_format.h"

typedef unsigned __int128 u128;

/* floor(q log10 2), floor(q log10(3/4 2^q)), floor(e log2 10): exact over the
 * exponent ranges used (dtoa_gen.py checks them). */
static inline int flog10pow2(int q) { return (int)(((int64_t)q * 661971961083ll) >> 41); }
static inline int flog10threequarterspow2(int q)
{
    return (int)(((int64_t)q * 661971961083ll - 274743187321ll) >> 41);
}
static inline int flog2pow10(int e) { return (int)(((int64_t)e * 913124641741ll) >> 38); }

/* floor(g * cp / 2^128), with the lowest bit set when inexact (round to odd).
 * g over-estimates the power by < 1 unit, so a fraction of at most 1 unit of
 * 2^-64 means the exact product was an integer. */
static inline uint64_t rop(const uint64_t g[2], uint64_t cp)
{
    /* y = g[0] * cp + (g[1] * cp >> 64) in 64-bit halves: gcc spilled a
     * zero to the stack for the 128-bit addition and added from memory */
    uint64_t x_hi = (uint64_t)(((u128)g[1] * cp) >> 64);
    u128 y0 = (u128)g[0] * cp;
    uint64_t y_lo = (uint64_t)y0 + x_hi;
    uint64_t y_hi = (uint64_t)(y0 >> 64) + (y_lo < x_hi);
    return y_hi | (y_lo > 1);
}

/* k, h and the row of DTOA_G per binary exponent q (-1074..971) for the
 * usual case (the lower neighbour not closer): the digit search loads them
 * instead of computing two logarithms and an index (~10 instructions of
 * ~170 a value). 32 KiB, of which a column touches the rows of its few
 * exponents; filled before main from the same formulas, so the same bits. */
#define QROW_MIN (-1074)
struct qrow {
    const uint64_t *g;
    int32_t k, h;
};
static struct qrow QROW[971 - QROW_MIN + 1];

__attribute__((constructor)) static void qrow_init(void)
{
    for (int q = QROW_MIN; q <= 971; q++) {
        int k = flog10pow2(q);
        QROW[q - QROW_MIN] = (struct qrow){DTOA_G[-k - DTOA_G_MIN], k, q + flog2pow10(-k) + 1};
    }
}

/* The shortest (closest) decimal d * 10^e in the rounding interval of
 * c * 2^q; `lower_closer` when the predecessor is at half the distance. */
static inline __attribute__((always_inline)) uint64_t to_decimal(uint64_t c, int q, bool lower_closer,
                                                                 int *out_e)
{
    uint64_t out = c & 1; /* odd c: the bounds are not in R */
    uint64_t cb = c << 2, cbr = cb + 2, cbl;
    int k, h; /* h: 1..4 */
    const uint64_t *g;
    if (__builtin_expect(!lower_closer, 1)) {
        const struct qrow *r = &QROW[q - QROW_MIN];
        cbl = cb - 2;
        k = r->k;
        h = r->h;
        g = r->g;
    } else {
        cbl = cb - 1;
        k = flog10threequarterspow2(q);
        h = q + flog2pow10(-k) + 1;
        g = DTOA_G[-k - DTOA_G_MIN];
    }
    uint64_t vb = rop(g, cb << h), vbl = rop(g, cbl << h), vbr = rop(g, cbr << h);
    /* Every candidate and test is computed and the answer selected without
     * branches: for arbitrary doubles these outcomes are coin flips, and
     * mispredicted branches cost more than the few extra operations. */
    uint64_t s = vb >> 2, t = s + 1;
    uint64_t sp10 = s / 10 * 10, tp10 = sp10 + 10;
    bool upin = vbl + out <= sp10 << 2; /* u' = sp10 10^k in R */
    bool wpin = (tp10 << 2) + out <= vbr;
    bool uin = vbl + out <= s << 2; /* u = s 10^k in R */
    bool win = (t << 2) + out <= vbr;
    int64_t cmp = (int64_t)(vb - ((s + t) << 1)); /* both in R: the closer, ties to even */
    uint64_t closest = s + (uint64_t)((cmp > 0) | ((cmp == 0) & (int)(s & 1)));
    uint64_t m = 0 - (uint64_t)(uin != win);
    uint64_t pick = ((s + !uin) & m) | (closest & ~m);
    uint64_t shorter = upin ? sp10 : tp10; /* one digit shorter (s >= 10: u' > 0) */
    uint64_t m2 = 0 - (uint64_t)((s >= 10) & (upin != wpin));
    *out_e = k;
    return (shorter & m2) | (pick & ~m2); /* masks: gcc kept branches for ?: */
}

/* Strips trailing zeros of d (nonzero), adding them to *e. (A multiple of
 * 10^8 is a multiple of 2^8: the low-bit test skips the remainder.) */
static inline uint64_t strip_zeros(uint64_t d, int *e)
{
    int z = 0;
    while ((d & 0xff) == 0 && d % 100000000 == 0) {
        d /= 100000000;
        z += 8;
    }
    /* the last steps without branches (for even d they were coin flips) */
    uint64_t q = d / 10000, hit = q * 10000 == d;
    d = hit ? q : d;
    z += 4 * (int)hit;
    q = d / 100;
    hit = q * 100 == d;
    d = hit ? q : d;
    z += 2 * (int)hit;
    q = d / 10;
    hit = q * 10 == d;
    d = hit ? q : d;
    z += (int)hit;
    *e += z;
    return d;
}

/* Inlined into both the exported form and json_fmt_double (a call and its
 * frame per value were measurable). */
/* `whole`: v may be an integer below 2^53 (the batch paths test that
 * themselves first and pass false). */
static inline __attribute__((always_inline)) uint64_t dtoa_decimal_w(double v, int *out_e, bool strip,
                                                                     bool whole)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    uint64_t f = bits & ((1ull << 52) - 1);
    int be = (int)((bits >> 52) & 0x7ff);
    uint64_t c = f;
    int q = -1074, e = 0;
    bool lower_closer = false;
    if (be) {
        c = f | (1ull << 52);
        q = be - 1075;
        lower_closer = f == 0 && be > 1;
    }
    if (whole && be && q <= 0 && q > -53 && (c & ((1ull << -q) - 1)) == 0) /* an integer */
        c >>= -q;
    else
        c = to_decimal(c, q, lower_closer, &e);
    if (strip)
        c = strip_zeros(c, &e);
    *out_e = e;
    return c;
}

static inline __attribute__((always_inline)) uint64_t dtoa_decimal(double v, int *out_e, bool strip)
{
    return dtoa_decimal_w(v, out_e, strip, true);
}

static inline __attribute__((always_inline)) uint64_t ftoa_decimal(float v, int *out_e, bool strip)
{
    uint32_t bits;
    memcpy(&bits, &v, 4);
    uint32_t f = bits & ((1u << 23) - 1);
    int be = (int)((bits >> 23) & 0xff);
    uint64_t c = f;
    int q = -149, e = 0;
    bool lower_closer = false;
    if (be) {
        c = f | (1u << 23);
        q = be - 150;
        lower_closer = f == 0 && be > 1;
    }
    if (be && q <= 0 && q > -24 && (c & ((1ull << -q) - 1)) == 0)
        c >>= -q;
    else
        c = to_decimal(c, q, lower_closer, &e);
    if (strip)
        c = strip_zeros(c, &e);
    *out_e = e;
    return c;
}

uint64_t json_dtoa_decimal(double v, int *out_e) { return dtoa_decimal(v, out_e, true); }

uint64_t json_ftoa_decimal(float v, int *out_e) { return ftoa_decimal(v, out_e, true); }

/* Digits of d into `digits`; returns the count, *point = count + e. */
static int to_digits(uint64_t d, int e, char *digits, int *out_point)
{
    int n = (int)(json_fmt_u64(digits, d) - digits);
    *out_point = n + e;
    return n;
}

int json_dtoa_shortest(double v, char *digits, int *out_point)
{
    int e;
    uint64_t d = json_dtoa_decimal(v, &e);
    return to_digits(d, e, digits, out_point);
}

int json_ftoa_shortest(float v, char *digits, int *out_point)
{
    int e;
    uint64_t d = json_ftoa_decimal(v, &e);
    return to_digits(d, e, digits, out_point);
}

/* ---- JSON text of floats (declared in json_format.h) ---- */

static inline double fabs_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    b &= ~(1ull << 63);
    memcpy(&v, &b, 8);
    return v;
}

/* Writes exactly k (1..17) digits of d (10^(k-1) <= d < 10^k) at o and
 * returns how many of them are trailing zeros. The shortest digits of a
 * double never exceed 17: two 8-digit words and at most one leading digit.
 * The zeros are counted on the ASCII words still in registers (xor with
 * "00000000", count the zero bytes from the high end), which is much shorter
 * on the critical path than dividing them off before writing. */
static inline int put_digits17_tz(char *o, uint64_t d, int k)
{
    const uint64_t Z = 0x3030303030303030ull;
    if (k <= 8) {
        uint64_t w = swar8((uint32_t)d); /* d != 0: some byte differs from '0' */
        int tz = __builtin_clzll(w ^ Z) >> 3;
        w >>= 8 * (8 - k);
        memcpy(o, &w, 8);
        return tz;
    }
    uint64_t hi = d / 100000000;
    uint64_t lo = swar8((uint32_t)(d - hi * 100000000)), hw;
    if (k <= 16) {
        hw = swar8((uint32_t)hi); /* hi != 0 */
        uint64_t x = hw >> (8 * (16 - k));
        memcpy(o, &x, 8);
    } else {
        uint32_t top = (uint32_t)(hi / 100000000); /* 1..9 */
        hw = swar8((uint32_t)(hi - (uint64_t)top * 100000000));
        o[0] = (char)('0' + top);
        memcpy(o + 1, &hw, 8);
    }
    memcpy(o + k - 8, &lo, 8);
    if (lo != Z)
        return __builtin_clzll(lo ^ Z) >> 3;
    if (hw != Z)
        return 8 + (__builtin_clzll(hw ^ Z) >> 3);
    return 16; /* k == 17 and only the leading digit is not zero */
}

/* d.ddd with the point after the first `point` digits (0 < point < k),
 * trailing zeros of the fraction cut (one kept after the point). The k
 * digits are built in registers (two 8-digit words, a 17th digit apart),
 * stored once whole and once shifted one byte right from the point on, so
 * no byte is moved through memory (a byte loop here was turned into a
 * memmove call per value). */
static inline __attribute__((always_inline)) char *put_fixed_frac(char *o, uint64_t d, int k, int point)
{
    const uint64_t Z = 0x3030303030303030ull;
    int tz;
    if (k <= 8) {
        uint64_t w = swar8((uint32_t)d); /* d != 0: some byte differs from '0' */
        tz = __builtin_clzll(w ^ Z) >> 3;
        w >>= 8 * (8 - k);
        memcpy(o, &w, 8);
        o[point] = '.';
        w >>= 8 * point;
        memcpy(o + point + 1, &w, 8);
    } else {
        uint64_t hi = d / 100000000;
        uint32_t lo = (uint32_t)(d - hi * 100000000);
        char *q = o;
        int pk = k, pp = point;
        if (k == 17) {
            uint32_t top = (uint32_t)(hi / 100000000); /* 1..9 */
            hi -= (uint64_t)top * 100000000;
            *q++ = (char)('0' + top);
            pk = 16;
            pp--;
        }
        __m128i dg = digits16((uint32_t)hi, lo);
        uint64_t a = (uint64_t)_mm_cvtsi128_si64(dg), b = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(dg, dg));
        tz = b != Z ? __builtin_clzll(b ^ Z) >> 3
                    : a != Z ? 8 + (__builtin_clzll(a ^ Z) >> 3) : 16;
        u128 x = (u128)b << 64 | a;
        if (pk < 16) /* random doubles: 16 or 17 digits, no shift */
            x >>= 8 * (16 - pk);
        memcpy(q, &x, 16);
        q[pp] = '.';
        x >>= 8 * pp;
        memcpy(q + pp + 1, &x, 16);
    }
    int sig = k - tz; /* significant digits */
    if (sig <= point) { /* the fraction was all zeros */
        o[point + 1] = '0';
        return o + point + 2;
    }
    return o + sig + 1;
}

/* Lays out the shortest decimal d * 10^e as JSON: fixed notation while the
 * decimal point falls within -5..21 digits of the first digit (JavaScript's
 * rule), else d.ddde[-]X; integral values end ".0". d may carry trailing
 * zeros (Schubfach's result before stripping): they are written and then
 * cut from the text, which leaves every layout decision unchanged, as those
 * depend only on the position of the point. Zeros are stored as whole
 * 8/16-byte blocks of '0' (the callers keep JSON_FMT_SLACK past
 * JSON_FMT_MAX_DOUBLE), not with a memset call. */
static inline __attribute__((always_inline)) char *layout_float(char *o, uint64_t d, int e)
{
    const uint64_t Z = 0x3030303030303030ull;
    if (d >= 100000000000000000ull) /* 18 digits: only a rounded-up 10^17 */
        d = strip_zeros(d, &e);
    int k = ndigits_u64(d), point = k + e; /* value = 0.digits * 10^point */
    if (point > 0 && point <= 21) {
        if (point >= k) { /* integral: digits, zeros (at most 20), ".0" */
            put_digits17_tz(o, d, k);
            memcpy(o + k, &Z, 8);
            memcpy(o + k + 8, &Z, 8);
            memcpy(o + k + 16, &Z, 8);
            o += point;
            memcpy(o, ".0", 2);
            return o + 2;
        }
        return put_fixed_frac(o, d, k, point);
    }
    if (point <= 0 && point > -6) { /* 0.000ddd */
        o[0] = '0';
        o[1] = '.';
        memcpy(o + 2, &Z, 8);
        o += 2 - point;
        return o + k - put_digits17_tz(o, d, k);
    }
    int sig = k - put_digits17_tz(o + 1, d, k);
    o[0] = o[1];
    if (sig == 1) {
        o += 1;
    } else {
        o[1] = '.';
        o += sig + 1;
    }
    *o++ = 'e';
    return json_fmt_i64(o, point - 1);
}

/* Classifies v and runs the digit search: the first, long half of the work,
 * which batch callers run over a whole vector before writing any text. */
static inline __attribute__((always_inline)) void prepare_double(double v, struct json_fdec *f)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    f->neg = (uint8_t)(bits >> 63);
    f->e = 0;
    f->d = 0;
    if ((bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) {
        f->kind = JSON_FDEC_NULL; /* NaN, +-Inf */
        return;
    }
    v = fabs_bits(v);
    if (v == 0) {
        f->kind = JSON_FDEC_ZERO;
    } else if (v < 9007199254740992.0 && v == (double)(int64_t)v) {
        /* integral below 2^53: exact, and its digits are the shortest */
        f->kind = JSON_FDEC_INT;
        f->d = (uint64_t)v;
    } else {
        int e;
        f->kind = JSON_FDEC_DEC;
        f->d = dtoa_decimal_w(v, &e, false, false); /* not an integer below 2^53 */
        f->e = e;
    }
}

static inline __attribute__((always_inline)) void prepare_float(float v, struct json_fdec *f)
{
    uint32_t bits;
    memcpy(&bits, &v, 4);
    f->neg = (uint8_t)(bits >> 31);
    f->e = 0;
    f->d = 0;
    if ((bits & 0x7f800000u) == 0x7f800000u) {
        f->kind = JSON_FDEC_NULL;
        return;
    }
    bits &= 0x7fffffffu;
    memcpy(&v, &bits, 4);
    if (v == 0) {
        f->kind = JSON_FDEC_ZERO;
    } else if (v < 16777216.0f && v == (float)(int32_t)v) {
        f->kind = JSON_FDEC_INT;
        f->d = (uint64_t)v;
    } else {
        int e;
        f->kind = JSON_FDEC_DEC;
        f->d = ftoa_decimal(v, &e, false);
        f->e = e;
    }
}

void json_dtoa_prepare(const double *v, size_t n, struct json_fdec *out)
{
    for (size_t i = 0; i < n; i++)
        prepare_double(v[i], &out[i]);
}

/* Powers of ten exact as doubles (all up to 10^22; the short path uses
 * 1..JSON_DTOA_SHORT_MAX). */
static const double P10D[JSON_DTOA_SHORT_MAX + 1] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
                                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

/* The short-decimal path. For a normal double a with a = m / 10^k exactly as
 * IEEE division rounds it (m < 2^50, 1 <= k <= 15; m and 10^k are exact
 * doubles, so the quotient is correctly rounded, nearest-even), the decimal
 * m * 10^-k lies in a's rounding interval R with the bounds included iff a's
 * significand is even: R as Schubfach defines it. R is narrower than one
 * ulp, and one ulp of a normal a is at most a * 2^-52, so with
 * a * 10^k < 2^50 (+ rounding) the grid of step 10^-k holds at most one
 * point of R. Then m * 10^-k (trailing zeros stripped) is the shortest
 * decimal in R and the only one of its length: a shorter or equally long
 * one at a coarser or equal step would be a second grid point in R; one at a
 * finer step has more digits unless it lies below a power of ten 10^L <=
 * m * 10^-k, and then 10^L itself is in R and on the grid, again a second
 * point unless m * 10^-k = 10^L (one digit, nothing shorter). So the digits
 * are exactly Schubfach's (the unit test compares both over millions of
 * values). */
static inline bool short_decimal(double a, int k, uint64_t *out_m)
{
    double x = a * P10D[k];
    if (!(x < 0x1p50) || a < 0x1p-1022)
        return false;
    uint64_t m = (uint64_t)(x + 0.5);
    *out_m = m;
    return (double)m / P10D[k] == a;
}

void json_dtoa_prepare_short(const double *v, size_t n, struct json_fdec *out, struct json_dtoa_hint *hint)
{
    /* a column whose last 4 batches had (almost) no short decimals (random
     * doubles: a few have short digits): the plain loop, one batch in 64
     * tried again */
    if (n == 0)
        return;
    if (hint->cold >= 4 && (hint->cold++ & 63) != 0) {
        json_dtoa_prepare(v, n, out);
        return;
    }
    int k = hint->k;
    unsigned hit = 0, miss = 0;
    bool on = k > 0;
    for (size_t i = 0; i < n; i++) {
        double a = v[i];
        struct json_fdec *f = &out[i];
        uint64_t bits;
        memcpy(&bits, &a, 8);
        f->neg = (uint8_t)(bits >> 63);
        f->e = 0;
        f->d = 0;
        if ((bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) {
            f->kind = JSON_FDEC_NULL;
            continue;
        }
        a = fabs_bits(a);
        if (a == 0) {
            f->kind = JSON_FDEC_ZERO;
            continue;
        }
        if (a < 9007199254740992.0 && a == (double)(int64_t)a) {
            f->kind = JSON_FDEC_INT;
            f->d = (uint64_t)a;
            continue;
        }
        f->kind = JSON_FDEC_DEC;
        uint64_t m;
        if (on && short_decimal(a, k, &m)) {
            f->d = m;
            f->e = -k;
            hit++;
            continue;
        }
        int e;
        f->d = dtoa_decimal_w(a, &e, false, false);
        f->e = e;
        /* A miss: take the step of this value when it is a short decimal
         * itself (a longer step, or a shorter one where the value was too
         * large for the step tried), while misses are few. A miss costs
         * ~20 instructions, a hit saves ~150: past 16 misses, with fewer
         * hits than one per 8 misses, the path is off for the batch. */
        if (++miss > 16) {
            on = on && miss <= 8 * hit;
            continue;
        }
        int se = e;
        uint64_t sd = strip_zeros(f->d, &se);
        if (sd < (1ull << 50) && -se >= 1 && -se <= JSON_DTOA_SHORT_MAX) {
            k = -se;
            on = true;
        }
    }
    hint->k = k;
    hint->cold = miss <= 8 * hit ? 0 : hint->cold + 1;
}

void json_ftoa_prepare(const float *v, size_t n, struct json_fdec *out)
{
    for (size_t i = 0; i < n; i++)
        prepare_float(v[i], &out[i]);
}

static inline __attribute__((always_inline)) char *fmt_fdec(char *o, const struct json_fdec *f)
{
    switch (f->kind) {
    case JSON_FDEC_NULL:
        return json_fmt_null(o);
    case JSON_FDEC_ZERO:
        memcpy(o, f->neg ? "-0.0" : "0.0\0", 4);
        return o + 3 + f->neg;
    case JSON_FDEC_INT:
        *o = '-';
        o = json_fmt_u64(o + f->neg, f->d);
        memcpy(o, ".0", 2);
        return o + 2;
    default:
        *o = '-';
        return layout_float(o + f->neg, f->d, f->e);
    }
}

char *json_fmt_fdec(char *o, const struct json_fdec *f) { return fmt_fdec(o, f); }

char *json_fmt_fdecs(char *o, const struct json_fdec *f, size_t n, const char *base, size_t *ends,
                     const char *pre, size_t pre_len)
{
    for (size_t i = 0; i < n; i++) {
        if (pre_len <= 32) { /* pre has JSON_FMT_SLACK bytes of slack */
            memcpy(o, pre, 16);
            memcpy(o + 16, pre + 16, 16);
        } else {
            memcpy(o, pre, pre_len);
        }
        o = fmt_fdec(o + pre_len, &f[i]);
        ends[i] = (size_t)(o - base);
    }
    return o;
}

char *json_fmt_double(char *o, double v)
{
    struct json_fdec f;
    prepare_double(v, &f);
    return fmt_fdec(o, &f);
}

char *json_fmt_float(char *o, float v)
{
    struct json_fdec f;
    prepare_float(v, &f);
    return fmt_fdec(o, &f);
}
