/*
 * Range header evaluation for the Parquet export (RFC 9110 §14.1-14.4).
 * One pass over the header, no allocation: the whole ranges-specifier is
 * checked for syntax first (one bad element makes the header invalid, and an
 * invalid header is ignored), while the satisfiable ranges are counted and the
 * first one kept. The decisions that the RFC leaves open are listed in range.h.
 */
#include "http/range.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/*
 * A decimal position. Values beyond 64 bits are not an error (RFC 9110 puts no
 * bound on them): `big` is set and the digits are kept so two big numbers can
 * still be compared exactly.
 */
struct num {
    uint64_t v;
    bool big;
    const char *digits; /* leading zeros skipped */
    size_t ndigits;
};

/* Parses 1*DIGIT at *pp; false when there is no digit. */
static bool parse_num(const char **pp, struct num *n)
{
    const char *p = *pp;
    if (!is_digit(*p))
        return false;
    while (*p == '0' && is_digit(p[1]))
        p++;
    n->v = 0;
    n->big = false;
    n->digits = p;
    for (; is_digit(*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (!n->big && n->v > (UINT64_MAX - d) / 10)
            n->big = true;
        if (!n->big)
            n->v = n->v * 10 + d;
    }
    n->ndigits = (size_t)(p - n->digits);
    *pp = p;
    return true;
}

/* a < b, exactly, for any number of digits */
static bool num_less(const struct num *a, const struct num *b)
{
    if (!a->big && !b->big)
        return a->v < b->v;
    if (a->ndigits != b->ndigits)
        return a->ndigits < b->ndigits;
    return memcmp(a->digits, b->digits, a->ndigits) < 0;
}

static void skip_ows(const char **pp)
{
    while (is_ows(**pp))
        (*pp)++;
}

/* Case-insensitive "bytes" followed by '=' (RFC 9110 §14.1: units are
 * case-insensitive). */
static bool parse_unit(const char **pp)
{
    static const char unit[] = "bytes";
    const char *p = *pp;
    for (size_t i = 0; i < sizeof unit - 1; i++, p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != unit[i])
            return false;
    }
    if (*p != '=')
        return false;
    *pp = p + 1;
    return true;
}

enum http_range_result http_range_parse(const char *value, uint64_t total,
                                        struct http_range *out_range)
{
    if (!value)
        return HTTP_RANGE_NONE;
    const char *p = value;
    skip_ows(&p);
    if (!parse_unit(&p))
        return HTTP_RANGE_IGNORED; /* another unit, or garbage: ignore (§14.2) */

    size_t specs = 0, satisfiable = 0;
    bool zero_start = false; /* a range starting at byte 0 (matters when total == 0) */
    struct http_range first = {0, 0};

    for (;;) {
        while (is_ows(*p) || *p == ',')
            p++;
        if (!*p)
            break;

        uint64_t start, end;
        bool ok;
        if (*p == '-') {
            /* suffix-range = "-" suffix-length: the last n bytes */
            p++;
            skip_ows(&p);
            struct num n;
            if (!parse_num(&p, &n))
                return HTTP_RANGE_IGNORED;
            /* n larger than the file means the whole file (§14.1.3); n = 0 is
             * unsatisfiable -- except for an empty file, see below */
            ok = total > 0 && (n.big || n.v > 0);
            start = (n.big || n.v >= total) ? 0 : total - n.v;
            end = total - 1;
            zero_start = true; /* of an empty file, any suffix starts at 0 */
        } else {
            /* int-range = first-pos "-" [ last-pos ] */
            struct num a, b;
            if (!parse_num(&p, &a))
                return HTTP_RANGE_IGNORED;
            skip_ows(&p);
            if (*p != '-')
                return HTTP_RANGE_IGNORED;
            p++;
            skip_ows(&p);
            bool has_last = parse_num(&p, &b);
            if (has_last && num_less(&b, &a))
                return HTTP_RANGE_IGNORED; /* last < first: invalid (§14.1.1) */
            /* a first-pos at or past the end is unsatisfiable; a last-pos past
             * the end is clamped (§14.1.2) */
            ok = !a.big && a.v < total;
            start = a.v;
            end = (!has_last || b.big || b.v >= total) ? total - 1 : b.v;
            if (!a.big && a.v == 0)
                zero_start = true;
        }
        skip_ows(&p);
        if (*p != ',' && *p != '\0')
            return HTTP_RANGE_IGNORED;

        specs++;
        if (ok && satisfiable++ == 0) {
            first.start = start;
            first.end = end;
        }
    }

    if (specs == 0)
        return HTTP_RANGE_IGNORED; /* "bytes=" with no range: invalid */
    if (satisfiable == 1) {
        *out_range = first;
        return HTTP_RANGE_PARTIAL;
    }
    if (satisfiable > 1)
        return HTTP_RANGE_MULTI;
    /* An empty representation has no byte to send, so no 206 is possible.
     * A client asking from byte 0 (resuming at 0, or "the last n bytes")
     * gets the empty 200 it would have got without Range, which is also what
     * nginx does; a start past the end is a genuine 416. */
    if (total == 0 && zero_start)
        return HTTP_RANGE_IGNORED;
    return HTTP_RANGE_UNSATISFIABLE;
}

int http_range_status(enum http_range_result r)
{
    switch (r) {
    case HTTP_RANGE_PARTIAL: return 206;
    case HTTP_RANGE_UNSATISFIABLE: return 416;
    default: return 200;
    }
}

size_t http_content_range_format(char out[HTTP_CONTENT_RANGE_MAX], uint64_t start, uint64_t end,
                                 uint64_t total)
{
    int n = snprintf(out, HTTP_CONTENT_RANGE_MAX, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, start,
                     end, total);
    return n < 0 ? 0 : (size_t)n;
}

size_t http_content_range_unsatisfied(char out[HTTP_CONTENT_RANGE_MAX], uint64_t total)
{
    int n = snprintf(out, HTTP_CONTENT_RANGE_MAX, "bytes */%" PRIu64, total);
    return n < 0 ? 0 : (size_t)n;
}
