/*
 * Tests of the shortest-digits code (src/encode/dtoa.c, Schubfach) against
 * the independent reference (libdouble-conversion via dtoa_dc.cc): the same
 * digits and decimal point for random bit patterns and the edge families
 * (powers of two and ten, subnormals, boundaries, short decimals), and a
 * strtod/strtof read-back of every result. The JSON text of json_fmt_double
 * and json_fmt_float is compared with a plain re-implementation of its
 * layout rules applied to the reference digits.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode/dtoa.h"
#include "encode/json_format.h"
#include "testlib.h"

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}

static int bad;

static const uint64_t P10_TEST[18] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
                                      10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
                                      100000000000ull, 1000000000000ull, 10000000000000ull,
                                      100000000000000ull, 1000000000000000ull,
                                      10000000000000000ull, 100000000000000000ull};

/* The layout rules of json_format.h, written the obvious way: sign, then
 * 0.d1..dk * 10^point in fixed notation for -6 < point <= 21 (".0" when
 * integral), else d1.d2..dk e(point-1). */
static void reference_text(char *out, bool neg, const char *d, int k, int point)
{
    char *o = out;
    if (neg)
        *o++ = '-';
    if (point > 0 && point <= 21) {
        for (int i = 0; i < point; i++)
            *o++ = i < k ? d[i] : '0';
        *o++ = '.';
        if (k > point)
            for (int i = point; i < k; i++)
                *o++ = d[i];
        else
            *o++ = '0';
    } else if (point <= 0 && point > -6) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -point; i++)
            *o++ = '0';
        for (int i = 0; i < k; i++)
            *o++ = d[i];
    } else {
        *o++ = d[0];
        if (k > 1) {
            *o++ = '.';
            for (int i = 1; i < k; i++)
                *o++ = d[i];
        }
        o += sprintf(o, "e%d", point - 1);
    }
    *o = 0;
}

static void check_text_double(double v)
{
    if (!isfinite(v) || v == 0)
        return;
    char d[24], want[64], got[64 + JSON_FMT_SLACK];
    int p;
    int k = json_dc_dtoa_shortest(fabs(v), d, &p);
    reference_text(want, signbit(v), d, k, p);
    *json_fmt_double(got, v) = 0;
    if (strcmp(got, want) != 0 && bad++ < 10)
        fprintf(stderr, "  %.17g: got %s, want %s\n", v, got, want);
}

static void check_text_float(float v)
{
    if (!isfinite(v) || v == 0)
        return;
    char d[24], want[64], got[64 + JSON_FMT_SLACK];
    int p;
    int k = json_dc_ftoa_shortest(fabsf(v), d, &p);
    reference_text(want, signbit(v), d, k, p);
    *json_fmt_float(got, v) = 0;
    if (strcmp(got, want) != 0 && bad++ < 10)
        fprintf(stderr, "  %.9g: got %s, want %s\n", (double)v, got, want);
}

static void check_double(double v)
{
    check_text_double(v);
    if (!isfinite(v) || v == 0)
        return;
    v = fabs(v);
    char a[24], b[24];
    int pa, pb;
    int na = json_dtoa_shortest(v, a, &pa), nb = json_dc_dtoa_shortest(v, b, &pb);
    char txt[64];
    snprintf(txt, sizeof txt, "0.%.*se%d", na, a, pa);
    if (na != nb || pa != pb || memcmp(a, b, (size_t)na) != 0 || strtod(txt, NULL) != v) {
        if (bad++ < 10)
            fprintf(stderr, "  %.17g: ours 0.%.*se%d, reference 0.%.*se%d\n", v, na, a, pa, nb, b, pb);
    }
}

static void check_float(float v)
{
    check_text_float(v);
    if (!isfinite(v) || v == 0)
        return;
    v = fabsf(v);
    char a[24], b[24];
    int pa, pb;
    int na = json_ftoa_shortest(v, a, &pa), nb = json_dc_ftoa_shortest(v, b, &pb);
    char txt[64];
    snprintf(txt, sizeof txt, "0.%.*se%d", na, a, pa);
    if (na != nb || pa != pb || memcmp(a, b, (size_t)na) != 0 || strtof(txt, NULL) != v) {
        if (bad++ < 10)
            fprintf(stderr, "  %.9g: ours 0.%.*se%d, reference 0.%.*se%d\n", (double)v, na, a, pa, nb, b, pb);
    }
}

static double from_bits(uint64_t b)
{
    double v;
    memcpy(&v, &b, 8);
    return v;
}

static float from_bits32(uint32_t b)
{
    float v;
    memcpy(&v, &b, 4);
    return v;
}

TEST(doubles_random_bit_patterns)
{
    bad = 0;
    for (int i = 0; i < 1000000; i++)
        check_double(from_bits(rnd()));
    CHECK_EQ_INT(bad, 0);
}

/* Every binary exponent (every row of dtoa.c's per-exponent table, normal
 * and subnormal) with 1,000 random significands each, against the
 * reference. */
TEST(doubles_every_exponent)
{
    bad = 0;
    for (uint64_t e = 0; e < 2047; e++)
        for (int i = 0; i < 1000; i++)
            check_double(from_bits(e << 52 | (rnd() >> 12)));
    CHECK_EQ_INT(bad, 0);
}

TEST(doubles_edge_families)
{
    bad = 0;
    for (int e = 0; e < 2047; e++) { /* every power of two, its neighbours */
        uint64_t b = (uint64_t)e << 52;
        for (int64_t d = -3; d <= 3; d++)
            check_double(from_bits(b + (uint64_t)d));
    }
    for (uint64_t t = 1; t < 20000; t++) /* smallest subnormals */
        check_double(from_bits(t));
    check_double(from_bits(0x000fffffffffffffull)); /* largest subnormal */
    check_double(from_bits(0x0010000000000000ull)); /* smallest normal */
    check_double(from_bits(0x7fefffffffffffffull)); /* largest */
    for (int e = -325; e <= 308; e++) { /* powers of ten and neighbours */
        char t[32];
        snprintf(t, sizeof t, "1e%d", e);
        double p = strtod(t, NULL);
        check_double(p);
        check_double(nextafter(p, 0));
        check_double(nextafter(p, INFINITY));
    }
    for (int i = 0; i < 200000; i++) { /* short decimals: n / 10^k, n * 10^k */
        uint64_t n = rnd() % 1000000;
        int k = (int)(rnd() % 40);
        char t[48];
        snprintf(t, sizeof t, "%llue%d", (unsigned long long)n, (int)(rnd() % 2) ? k : -k);
        check_double(strtod(t, NULL));
    }
    for (uint64_t n = 1; n < 100000; n++) { /* integers, halves, cents */
        check_double((double)n + 0.5);
        check_double((double)n / 100);
        check_double(-(double)n * 1e15);
        check_double((double)n * 1e16 + 1e16);
    }
    for (int e = 0; e < 2047; e++) /* 99999..., 10^k - ulp style values */
        check_double(nextafter(pow(10, (e % 40) - 20), 0) * (e % 2 ? 1 : -1));
    check_double(99999999999999999.0); /* rounds up to 10^17 */
    check_double(9.999999999999999e22);
    CHECK_EQ_INT(bad, 0);
}

TEST(floats_random_and_edges)
{
    bad = 0;
    for (int i = 0; i < 2000000; i++)
        check_float(from_bits32((uint32_t)rnd()));
    for (uint32_t t = 1; t < (1u << 23); t += 7) /* subnormals */
        check_float(from_bits32(t));
    for (uint32_t e = 0; e < 255; e++)
        for (int d = -3; d <= 3; d++)
            check_float(from_bits32((e << 23) + (uint32_t)d));
    check_float(from_bits32(0x7f7fffffu));
    CHECK_EQ_INT(bad, 0);
}

/* json_dtoa_prepare_short (the short-decimal path of the row writer)
 * against json_fmt_double (Schubfach alone): the same text for every value,
 * fed in batches of 256 as the row writer does, the hint kept across
 * batches as a column keeps it. */
static struct json_dtoa_hint hint;
static double batch[256];
static size_t nbatch;
static unsigned long long compared;

static void flush_short(void)
{
    struct json_fdec f[256];
    json_dtoa_prepare_short(batch, nbatch, f, &hint);
    for (size_t i = 0; i < nbatch; i++) {
        char got[64 + JSON_FMT_SLACK], want[64 + JSON_FMT_SLACK];
        *json_fmt_fdec(got, &f[i]) = 0;
        if (!isfinite(batch[i]))
            strcpy(want, "null");
        else
            *json_fmt_double(want, batch[i]) = 0;
        if (strcmp(got, want) != 0 && bad++ < 10)
            fprintf(stderr, "  %.17g (hint %d): short path %s, Schubfach %s\n", batch[i], hint.k, got, want);
        compared++;
    }
    nbatch = 0;
}

static void add_short(double v)
{
    batch[nbatch++] = v;
    if (nbatch == 256)
        flush_short();
}

/* n * 10^-k correctly rounded (the double a parser gives for "n e-k"). */
static double decimal(uint64_t n, int k)
{
    char t[48];
    snprintf(t, sizeof t, "%llue-%d", (unsigned long long)n, k);
    return strtod(t, NULL);
}

TEST(short_decimals_match_schubfach)
{
    bad = 0;
    hint = (struct json_dtoa_hint){0, 0};
    for (int i = 0; i < 1000000; i++) /* random bits: the path must stay out of the way */
        add_short(from_bits(rnd()));
    flush_short();
    CHECK(hint.cold >= 4); /* no short decimals: the plain loop */
    for (int i = 0; i < 64 * 256 * 2; i++) /* then cents: found again within 64 batches */
        add_short(decimal(rnd() % 10000000, 2));
    flush_short();
    CHECK(hint.cold == 0 && hint.k == 2);
    for (int i = 0; i < 2000000; i++) { /* random short decimals, any length and step */
        int j = 1 + (int)(rnd() % 17), k = (int)(rnd() % 18);
        uint64_t n = rnd() % P10_TEST[j];
        add_short((rnd() & 1 ? -1 : 1) * decimal(n, k));
    }
    flush_short();
    for (int run = 0; run < 8; run++) { /* columns of one step, then steps mixed */
        hint = (struct json_dtoa_hint){0, 0};
        for (int i = 0; i < 250000; i++) {
            int k = run < 6 ? run + 1 : 1 + (int)(rnd() % 15);
            add_short(decimal(rnd() % (run == 7 ? 1000000000000000ull : 100000000ull), k));
        }
        flush_short();
        if (run == 1)
            CHECK_EQ_INT(hint.k, 2); /* cents: the column learned its step */
    }
    hint = (struct json_dtoa_hint){0, 0};
    for (int i = 0; i < 1000000; i++) { /* short and random values interleaved */
        add_short(i % 3 ? decimal(rnd() % 10000000, 2) : from_bits(rnd()));
    }
    flush_short();
    hint = (struct json_dtoa_hint){0, 0};
    for (uint64_t n = 0; n < 1000000; n++) { /* every cent price up to 10,000.00, + 0.001 steps */
        add_short((double)n / 100);
        add_short((double)n / 1000);
    }
    flush_short();
    /* edges: 0.1 + 0.2, step bounds, the 2^50 bound, subnormals, zeros, specials */
    const double edges[] = {0.1 + 0.2, 0.3, 1e-15, 1e-16, 1e15 + 0.5, 1125899906842623.5,
                            1125899906842624.5, 0x1p50 / 1e15, 0x1p50 / 1e2 + 0.01, 5e-324,
                            2.2250738585072014e-308, 2.225073858507201e-308, 9007199254740993.0,
                            9007199254740991.0, 9007199254740992.0, 1e22, 1e23, -0.0, 0.0, NAN,
                            INFINITY, -INFINITY, 0.5, 0.05, 0.005, 123456789012.345, 99999999.99,
                            1.0000000000000002, 0.9999999999999999, 4.35, 2.675, 1.005};
    for (int r = 0; r < 20; r++) {
        hint = (struct json_dtoa_hint){r % 16, 0};
        for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
            add_short(edges[i]);
            add_short(-edges[i]);
            add_short(nextafter(edges[i], 0));
            add_short(nextafter(edges[i], INFINITY));
        }
        flush_short();
    }
    CHECK(compared > 8000000);
    CHECK_EQ_INT(bad, 0);
}

/* json_fmt_u64 / json_fmt_i64 (json_digits.h's digits_u64: the fixed-point
 * digits below 10^8) against a decimal counter kept as text, for every value
 * below 10^8 and every length, then random and edge values of all 64 bits
 * against snprintf, with the bytes past the room it may use untouched. */
TEST(integers_every_value_below_1e8)
{
    char ref[24] = "0", out[64];
    int rlen = 1, wrong = 0;
    for (uint32_t v = 0; v < 100000000; v++) {
        char *e = json_fmt_u64(out, v);
        if ((int)(e - out) != rlen || memcmp(out, ref, (size_t)rlen) != 0) {
            if (wrong++ < 5)
                fprintf(stderr, "  %u: %.*s\n", v, (int)(e - out), out);
        }
        int i = rlen - 1; /* ref += 1 */
        while (i >= 0 && ref[i] == '9')
            ref[i--] = '0';
        if (i >= 0) {
            ref[i]++;
        } else {
            memmove(ref + 1, ref, (size_t)rlen++);
            ref[0] = '1';
        }
    }
    CHECK_EQ_INT(wrong, 0);
    const int64_t edges[] = {0, 1, -1, 9, 10, 99, 100, 999, 1000, 9999, 99999999, 100000000,
                             4294967295ll, 4294967296ll, -4294967296ll, 999999999999999999ll,
                             1000000000000000000ll, INT64_MAX, INT64_MIN, INT64_MIN + 1};
    for (int i = 0; i < 2000000 + (int)(sizeof edges / sizeof *edges); i++) {
        int64_t x = i < (int)(sizeof edges / sizeof *edges) ? edges[i]
                                                           : (int64_t)(rnd() >> (rnd() % 64));
        char want[32];
        memset(out, 'x', sizeof out);
        char *e = json_fmt_i64(out, x);
        int n = snprintf(want, sizeof want, "%lld", (long long)x);
        CHECK(e - out == n && memcmp(out, want, (size_t)n) == 0);
        CHECK(out[n + JSON_FMT_SLACK] == 'x');
        uint64_t u = (uint64_t)x;
        e = json_fmt_u64(out, u);
        n = snprintf(want, sizeof want, "%llu", (unsigned long long)u);
        CHECK(e - out == n && memcmp(out, want, (size_t)n) == 0);
    }
}

RUN_TESTS(TEST_CASE(doubles_random_bit_patterns), TEST_CASE(doubles_every_exponent), TEST_CASE(doubles_edge_families),
          TEST_CASE(floats_random_and_edges), TEST_CASE(short_decimals_match_schubfach),
          TEST_CASE(integers_every_value_below_1e8))
