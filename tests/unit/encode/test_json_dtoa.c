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

RUN_TESTS(TEST_CASE(doubles_random_bit_patterns), TEST_CASE(doubles_edge_families),
          TEST_CASE(floats_random_and_edges))
