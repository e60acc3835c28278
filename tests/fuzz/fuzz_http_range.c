/*
 * libFuzzer target for the Range parser (src/http/range.c). The first 8 input
 * bytes pick the representation size, the rest is the header value. Besides
 * the sanitizers, every answer is checked against a second, deliberately
 * naive implementation below (split on commas, 128-bit arithmetic), so a
 * logic slip in the one-pass parser shows up as a crash. Build: make fuzz.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/range.h"

#define CAP ((unsigned __int128)1 << 100) /* "huge": beyond any uint64 */

static bool ows(char c)
{
    return c == ' ' || c == '\t';
}

/* Trims OWS; parses [s, e) as 1*DIGIT into a saturating 128-bit value. */
static bool ref_num(const char *s, const char *e, unsigned __int128 *v)
{
    if (s == e)
        return false;
    *v = 0;
    for (; s < e; s++) {
        if (*s < '0' || *s > '9')
            return false;
        *v = *v * 10 + (unsigned)(*s - '0');
        if (*v > CAP)
            *v = CAP;
    }
    return true;
}

static void trim(const char **s, const char **e)
{
    while (*s < *e && ows(**s))
        (*s)++;
    while (*e > *s && ows((*e)[-1]))
        (*e)--;
}

static enum http_range_result reference(const char *h, uint64_t total, struct http_range *out)
{
    if (!h)
        return HTTP_RANGE_NONE;
    while (ows(*h))
        h++;
    if (strncasecmp(h, "bytes=", 6) != 0)
        return HTTP_RANGE_IGNORED;
    const char *p = h + 6;
    int specs = 0, sat = 0;
    bool zero = false;
    struct http_range first = {0, 0};
    for (;;) {
        const char *end = strchr(p, ',');
        const char *s = p, *e = end ? end : p + strlen(p);
        trim(&s, &e);
        if (s < e) {
            const char *dash = memchr(s, '-', (size_t)(e - s));
            if (!dash)
                return HTTP_RANGE_IGNORED;
            const char *as = s, *ae = dash, *bs = dash + 1, *be = e;
            trim(&as, &ae);
            trim(&bs, &be);
            unsigned __int128 a, b;
            bool ok;
            uint64_t st = 0, en = 0;
            if (as == ae) { /* suffix */
                if (!ref_num(bs, be, &b))
                    return HTTP_RANGE_IGNORED;
                ok = total > 0 && b > 0;
                st = b >= total ? 0 : (uint64_t)(total - b);
                en = total - 1;
                zero = true;
            } else {
                if (!ref_num(as, ae, &a))
                    return HTTP_RANGE_IGNORED;
                bool has_b = bs < be;
                if (has_b && !ref_num(bs, be, &b))
                    return HTTP_RANGE_IGNORED;
                /* both saturated at CAP: compare the digit strings instead */
                if (has_b && a == CAP && b == CAP) {
                    while (*as == '0' && as + 1 < ae)
                        as++;
                    while (*bs == '0' && bs + 1 < be)
                        bs++;
                    size_t la = (size_t)(ae - as), lb = (size_t)(be - bs);
                    if (lb < la || (lb == la && memcmp(bs, as, la) < 0))
                        return HTTP_RANGE_IGNORED;
                } else if (has_b && b < a) {
                    return HTTP_RANGE_IGNORED;
                }
                ok = a < total;
                st = ok ? (uint64_t)a : 0;
                en = (!has_b || b >= total) ? total - 1 : (uint64_t)b;
                if (a == 0)
                    zero = true;
            }
            specs++;
            if (ok && sat++ == 0) {
                first.start = st;
                first.end = en;
            }
        }
        if (!end)
            break;
        p = end + 1;
    }
    if (specs == 0)
        return HTTP_RANGE_IGNORED;
    if (sat == 1) {
        *out = first;
        return HTTP_RANGE_PARTIAL;
    }
    if (sat > 1)
        return HTTP_RANGE_MULTI;
    if (total == 0 && zero)
        return HTTP_RANGE_IGNORED;
    return HTTP_RANGE_UNSATISFIABLE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint64_t raw;
    memcpy(&raw, data, 8);
    /* mostly small sizes, where the interesting edges are, sometimes any */
    uint64_t total = (raw & 1) ? raw >> 1 : (raw >> 1) % 2000;
    if ((raw & 6) == 6)
        total = UINT64_MAX - ((raw >> 8) % 4);
    char *h = malloc(size - 8 + 1);
    memcpy(h, data + 8, size - 8);
    h[size - 8] = '\0';

    struct http_range r = {0, 0}, ref = {0, 0};
    enum http_range_result got = http_range_parse(h, total, &r);
    enum http_range_result want = reference(h, total, &ref);
    /* the header syntax the two disagree on must be a spec question, not a bug:
     * nothing here is allowed to differ */
    if (got != want)
        abort();
    if (got == HTTP_RANGE_PARTIAL) {
        if (r.start > r.end || r.end >= total || r.start != ref.start || r.end != ref.end)
            abort();
        char cr[HTTP_CONTENT_RANGE_MAX];
        if (http_content_range_format(cr, r.start, r.end, total) >= HTTP_CONTENT_RANGE_MAX)
            abort();
    }
    int st = http_range_status(got);
    if (st != 200 && st != 206 && st != 416)
        abort();
    free(h);
    return 0;
}
