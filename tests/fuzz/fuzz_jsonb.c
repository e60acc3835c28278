/*
 * libFuzzer target for engine/jsonb.c: PostgreSQL's jsonb containment (what
 * the pgwire dialect makes of @> and <@), eng_jsonb_contains on two texts
 * cut from the input at its first NUL byte (the rest is b), JSON or not,
 * deep or wide, with the server's per-call limit of comparisons.
 *
 * What fails: a crash, an ASan/UBSan report or a leak, an answer other than
 * 1, 0, -1 (not JSON) or -2 (past a limit), more comparisons than the limit
 * allows, or a document that does not contain itself.
 *
 *   make fuzz && build-fuzz/fuzz_jsonb DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "util/limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *a = (const char *)data;
    const char *cut = memchr(a, 0, size);
    size_t an = cut ? (size_t)(cut - a) : size;
    const char *b = cut ? cut + 1 : a + size;
    size_t bn = cut ? size - an - 1 : 0;
    int64_t steps = 0;
    int rc = eng_jsonb_contains(a, an, b, bn, VT_SQL_MAX_JSONB_CONTAINS_STEPS, &steps);
    if (rc < -2 || rc > 1 || steps > VT_SQL_MAX_JSONB_CONTAINS_STEPS + 1)
        abort();
    steps = 0;
    if (eng_jsonb_contains(a, an, a, an, VT_SQL_MAX_JSONB_CONTAINS_STEPS, &steps) == 0)
        abort(); /* JSON contains itself (or is refused: -1, -2) */
    return 0;
}
