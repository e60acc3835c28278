/*
 * libFuzzer target for the lookup shape (src/query/query_small.c): whenever
 * query_small_scan accepts a text, json_small_load must load it, and
 * whenever query_small_parse then accepts it (any mode), query_parse over
 * that tree must accept it with exactly the same request
 * (tests/fuzz/query_small_check.h). Texts it declines may be anything.
 *
 *   make fuzz && build-fuzz/fuzz_query_small -dict=tests/fuzz/query_small.dict DIR
 */
#include <stdint.h>
#include <stdlib.h>

#include "query_small_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (query_small_check((const char *)data, size, &qs_schema) < 0)
        abort();
    return 0;
}
