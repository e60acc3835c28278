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
 * The same input drives jsonb_set and jsonb_insert (eng_jsonb_set): a is the
 * target, b up to its first NUL the new value, the rest the path (elements
 * cut at ',', "~" a NULL element), under each of the four operations. What
 * fails there: a crash or report, an answer other than 0 or -1, no message
 * with -1, more bytes walked than the bound, or a result that is not JSON
 * (the function refuses to walk it again with the empty path) or that
 * changes when walked again so.
 *
 *   make fuzz && build-fuzz/fuzz_jsonb DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "util/limits.h"
#include "util/strbuf.h"

static void check_set(const char *a, size_t an, const char *b, size_t bn)
{
    const char *cut = memchr(b, 0, bn);
    size_t vn = cut ? (size_t)(cut - b) : bn;
    const char *ps = cut ? cut + 1 : b + bn;
    size_t pn = cut ? bn - vn - 1 : 0;
    struct eng_jsonb_step path[64];
    size_t np = 0;
    for (size_t i = 0; cut && np < 64;) {
        const char *comma = memchr(ps + i, ',', pn - i);
        size_t len = comma ? (size_t)(comma - (ps + i)) : pn - i;
        path[np].s = len == 1 && ps[i] == '~' ? NULL : ps + i;
        path[np++].n = len;
        if (!comma)
            break;
        i += len + 1;
    }
    for (int op = ENG_JSONB_REPLACE; op <= ENG_JSONB_INSERT_AFTER; op++) {
        struct strbuf out, again;
        sb_init(&out, 0);
        sb_init(&again, 0);
        char err[300] = "";
        int64_t walked = 0, max = 1 << 20;
        int rc = eng_jsonb_set(a, an, path, np, b, vn, (enum eng_jsonb_op)op, max, &walked,
                               &out, err, sizeof err);
        if (rc != 0 && rc != -1)
            abort();
        if (rc == -1 && !err[0])
            abort();
        if (walked > max + (int64_t)an + 1)
            abort(); /* at most one value past the bound */
        if (rc == 0) {
            int64_t w2 = 0;
            if (eng_jsonb_set(out.buf ? out.buf : "", out.len, NULL, 0, "1", 1,
                              ENG_JSONB_CREATE, max, &w2, &again, err, sizeof err) != 0 ||
                again.len != out.len || memcmp(again.buf, out.buf, out.len) != 0)
                abort();
        }
        sb_release(&out);
        sb_release(&again);
    }
}

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
    check_set(a, an, b, bn);
    return 0;
}
