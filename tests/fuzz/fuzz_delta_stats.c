/*
 * libFuzzer target for Delta per-file statistics (src/sources/delta_stats.c):
 * add.stats comes from a table's log, so it is input. Build and run (clang;
 * not part of `make` or `make check`):
 *   make build-fuzz/fuzz_delta_stats
 *   build-fuzz/fuzz_delta_stats -max_total_time=60 -dict=tests/fuzz/delta.dict
 *
 * The input is the JSON text. Properties checked (trap on failure): no
 * bound without numRecords, null counts within numRecords, and every bound
 * given is text lazy_parse_val understands in its column's class.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sources/delta.h"
#include "sources/sources_internal.h"

#define N 7
static const char *const KEYS[N] = {"a", "b", "c", "d", "e", "f", "g"};
static const char *const TYPES[N] = {"BIGINT", "VARCHAR", "TIMESTAMP WITH TIME ZONE",
                                     "TIMESTAMP", "DATE", "DOUBLE", "BOOLEAN"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *mins[N], *maxs[N];
    int64_t nulls[N], rows;
    bool ok = delta_stats_parse((const char *)data, size, KEYS, TYPES, N, &rows, mins, maxs,
                                nulls);
    for (int c = 0; c < N; c++) {
        if (!ok && (mins[c] || maxs[c] || nulls[c] != -1))
            __builtin_trap();
        if (nulls[c] < -1 || (nulls[c] >= 0 && nulls[c] > rows))
            __builtin_trap();
        enum lazy_class cls = lazy_class_of(TYPES[c]);
        if (mins[c] && !lazy_parse_val(cls, mins[c], strlen(mins[c])).kind)
            __builtin_trap();
        if (maxs[c] && !lazy_parse_val(cls, maxs[c], strlen(maxs[c])).kind)
            __builtin_trap();
        free(mins[c]);
        free(maxs[c]);
    }
    return 0;
}
