/*
 * libFuzzer target for the statistics parsers of lazy generations
 * (src/sources/lazy_stats.c): the text of Parquet min/max statistics and
 * hive partition values comes from the files, so it is input. Build and run
 * (clang; not part of `make` or `make check`):
 *   make build-fuzz/fuzz_lazy_stats
 *   build-fuzz/fuzz_lazy_stats -max_total_time=60
 *
 * The first byte picks the column class, the rest is split in two values at
 * the first NUL (or in the middle). Properties checked (trap on failure):
 * parsing stays within its input, comparison is reflexive and
 * antisymmetric for understood values, and a value inside bounds [a, b] is
 * never ruled out by eq.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sources/sources_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    enum lazy_class c = (enum lazy_class)(data[0] % (LAZY_C_STR + 1));
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    const char *nul = memchr(s, '\0', n);
    size_t na = nul ? (size_t)(nul - s) : n / 2;
    size_t off_b = nul ? na + 1 : na;
    struct lazy_val a = lazy_parse_val(c, s, na);
    struct lazy_val b = lazy_parse_val(c, s + off_b, n - off_b);
    if (a.kind && lazy_cmp(c, &a, &a) != 0)
        __builtin_trap();
    int ab = lazy_cmp(c, &a, &b), ba = lazy_cmp(c, &b, &a);
    if (ab == 2 ? ba != 2 : ab != -ba)
        __builtin_trap();
    /* Bounds [min, max] of the two; each bound itself may match eq. */
    if (a.kind && b.kind && ab != 2 && a.kind != 3) {
        const struct lazy_val *lo = ab <= 0 ? &a : &b, *hi = ab <= 0 ? &b : &a;
        struct lazy_bounds bd = {lo, hi, 0, 10};
        struct query_value q = {.kind = lo->kind == 1 ? QUERY_VALUE_INT64 : QUERY_VALUE_DOUBLE};
        if (lo->kind == 1)
            q.u.i = lo->i;
        else
            q.u.d = lo->d;
        struct query_pred p = {.op = QUERY_OP_EQ, .vals = &q, .nvals = 1};
        enum lazy_class qc = c == LAZY_C_DATE || c == LAZY_C_TS || c == LAZY_C_BOOL
                                 ? LAZY_C_NONE : c; /* requests give those as text */
        if (qc != LAZY_C_NONE && lazy_pred_verdict(qc, &p, &bd) == LAZY_NONE)
            __builtin_trap();
    }
    return 0;
}
