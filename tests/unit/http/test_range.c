/*
 * Range evaluation (src/http/range.c): RFC 9110 §14 examples and edge cases.
 * The table below is also the input of tests/e2e/range_vs_nginx.sh, which runs
 * `test_range --cases` to list our decisions and asks nginx the same questions:
 * `nginx` records nginx's status where it differs from ours on purpose (0: same).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "http/range.h"
#include "testlib.h"

struct range_case {
    uint64_t total;
    const char *header; /* NULL: no Range header */
    enum http_range_result want;
    uint64_t start, end; /* for PARTIAL */
    int nginx;           /* nginx 1.22's status when it differs on purpose, else 0 */
    const char *note;
};

#define N HTTP_RANGE_NONE
#define IGN HTTP_RANGE_IGNORED
#define MUL HTTP_RANGE_MULTI
#define OK HTTP_RANGE_PARTIAL
#define BAD HTTP_RANGE_UNSATISFIABLE

static const struct range_case cases[] = {
    /* RFC 9110 §14.1.2 examples, on a 10000-byte representation */
    {10000, "bytes=0-499", OK, 0, 499, 0, "RFC: first 500 bytes"},
    {10000, "bytes=500-999", OK, 500, 999, 0, "RFC: second 500 bytes"},
    {10000, "bytes=-500", OK, 9500, 9999, 0, "RFC: last 500 bytes"},
    {10000, "bytes=9500-", OK, 9500, 9999, 0, "RFC: last 500 bytes"},
    {10000, "bytes=0-0,-1", MUL, 0, 0, 206, "RFC: first and last byte; nginx multipart"},
    {10000, "bytes=500-600,601-999", MUL, 0, 0, 206, "RFC: non-canonical; nginx multipart"},
    {10000, "bytes=500-700,601-999", MUL, 0, 0, 206, "RFC: overlapping; nginx multipart"},
    /* single ranges */
    {1000, NULL, N, 0, 0, 0, "no Range"},
    {1000, "bytes=0-0", OK, 0, 0, 0, "first byte"},
    {1000, "bytes=0-999", OK, 0, 999, 0, "exactly all"},
    {1000, "bytes=0-1000", OK, 0, 999, 0, "end clamped"},
    {1000, "bytes=10-5000", OK, 10, 999, 0, "end clamped"},
    {1000, "bytes=0-", OK, 0, 999, 0, "open-ended from 0"},
    {1000, "bytes=999-", OK, 999, 999, 0, "open-ended last byte"},
    {1000, "bytes=5-5", OK, 5, 5, 0, "one byte"},
    {1000, "bytes=1000-", BAD, 0, 0, 0, "start = total"},
    {1000, "bytes=1000-2000", BAD, 0, 0, 0, "start = total"},
    {1000, "bytes=5000-", BAD, 0, 0, 0, "start > total"},
    {1000, "bytes=-1", OK, 999, 999, 0, "suffix 1"},
    {1000, "bytes=-1000", OK, 0, 999, 0, "suffix = total"},
    {1000, "bytes=-1001", OK, 0, 999, 0, "suffix > total: whole file"},
    {1000, "bytes=-0", BAD, 0, 0, 0, "suffix 0"},
    /* units, case, whitespace */
    {1000, "BYTES=0-1", OK, 0, 1, 0, "unit is case-insensitive"},
    {1000, "Bytes=0-1", OK, 0, 1, 0, "unit is case-insensitive"},
    {1000, "items=0-5", IGN, 0, 0, 0, "other unit"},
    {1000, "bytes = 0-5", IGN, 0, 0, 0, "space before ="},
    {1000, "bytesx=0-5", IGN, 0, 0, 0, "other unit"},
    {1000, "bytes=0 - 5", OK, 0, 5, 0, "spaces inside a range"},
    {1000, "bytes= 0-5", OK, 0, 5, 0, "space after ="},
    {1000, "bytes=0-5 , 900-", MUL, 0, 0, 206, "spaces around comma; nginx multipart"},
    {1000, "bytes=\t0-5", OK, 0, 5, 416, "tab; nginx only skips spaces"},
    /* invalid syntax: ignored (200) */
    {1000, "bytes=", IGN, 0, 0, 0, "no range"},
    {1000, "bytes=5-2", IGN, 0, 0, 416, "last < first: invalid"},
    {1000, "bytes=abc", IGN, 0, 0, 416, "not a number"},
    {1000, "bytes=-", IGN, 0, 0, 416, "no suffix length"},
    {1000, "bytes=1", IGN, 0, 0, 416, "no dash"},
    {1000, "bytes=--1", IGN, 0, 0, 416, "double dash"},
    {1000, "bytes=1-2-3", IGN, 0, 0, 416, "trailing junk"},
    {1000, "bytes=0x10-", IGN, 0, 0, 416, "hex"},
    {1000, "bytes=+1-2", IGN, 0, 0, 416, "sign"},
    {1000, "bytes=-1-2", IGN, 0, 0, 416, "suffix with an end"},
    {1000, "bytes=1.5-2", IGN, 0, 0, 416, "decimal"},
    /* several ranges */
    {1000, "bytes=0-5,10-15", MUL, 0, 0, 206, "two ranges; nginx multipart"},
    {1000, "bytes=0-0,0-0", MUL, 0, 0, 206, "same range twice; nginx multipart"},
    {1000, "bytes=0-999,0-999", MUL, 0, 0, 0, "sum > total: nginx also 200"},
    {1000, "bytes=0-5,5000-", OK, 0, 5, 0, "one of two satisfiable"},
    {1000, "bytes=5000-,0-5", OK, 0, 5, 0, "one of two satisfiable"},
    {1000, "bytes=-0,-3", OK, 997, 999, 0, "one of two satisfiable"},
    {1000, "bytes=5000-6000,7000-", BAD, 0, 0, 0, "none satisfiable"},
    {1000, "bytes=0-5,abc", IGN, 0, 0, 416, "one element invalid"},
    {1000, "bytes=0-5,5-2", IGN, 0, 0, 206, "one element invalid; nginx serves 0-5"},
    {1000, "bytes=,0-5", OK, 0, 5, 416, "empty list element (RFC 9110 5.6.1)"},
    {1000, "bytes=0-5,", OK, 0, 5, 416, "empty list element (RFC 9110 5.6.1)"},
    {1000, "bytes=0-5,,10-15", MUL, 0, 0, 416, "empty list element; nginx rejects"},
    {1000, "bytes=,", IGN, 0, 0, 416, "only empty elements"},
    /* numbers beyond 64 bits, and leading zeros */
    {1000, "bytes=18446744073709551615-", BAD, 0, 0, 0, "start = 2^64-1"},
    {1000, "bytes=18446744073709551616-", BAD, 0, 0, 0, "start = 2^64"},
    {1000, "bytes=99999999999999999999999-", BAD, 0, 0, 0, "huge start"},
    {1000, "bytes=0-9223372036854775807", OK, 0, 999, 0, "end = 2^63-1"},
    {1000, "bytes=0-18446744073709551615", OK, 0, 999, 416, "end = 2^64-1: clamped"},
    {1000, "bytes=0-99999999999999999999999", OK, 0, 999, 416, "huge end: clamped"},
    {1000, "bytes=-99999999999999999999999", OK, 0, 999, 416, "huge suffix: whole file"},
    {1000, "bytes=99999999999999999999998-99999999999999999999999", BAD, 0, 0, 0,
     "huge, ordered"},
    {1000, "bytes=99999999999999999999999-99999999999999999999998", IGN, 0, 0, 416,
     "huge, last < first"},
    {1000, "bytes=00000000000000000000000000-000000000000000000000000001", OK, 0, 1, 0,
     "leading zeros"},
    {1000, "bytes=0000000000000000000000000000000000000000000999-", OK, 999, 999, 0,
     "leading zeros"},
    /* tiny representations */
    {1, "bytes=0-0", OK, 0, 0, 0, "1-byte file"},
    {1, "bytes=-2", OK, 0, 0, 0, "1-byte file, long suffix"},
    {1, "bytes=1-", BAD, 0, 0, 0, "1-byte file, start past end"},
    {0, "bytes=0-", IGN, 0, 0, 0, "empty file: from 0 -> 200 empty"},
    {0, "bytes=0-0", IGN, 0, 0, 0, "empty file: from 0 -> 200 empty"},
    {0, "bytes=-5", IGN, 0, 0, 0, "empty file: suffix -> 200 empty"},
    {0, "bytes=-0", IGN, 0, 0, 0, "empty file: suffix 0 -> 200 empty"},
    {0, "bytes=5-", BAD, 0, 0, 0, "empty file: start past end"},
    {0, "bytes=1-2", BAD, 0, 0, 0, "empty file: start past end"},
    {0, "bytes=5-,0-", IGN, 0, 0, 0, "empty file: one range from 0"},
};

static const char *result_name(enum http_range_result r)
{
    switch (r) {
    case HTTP_RANGE_NONE: return "NONE";
    case HTTP_RANGE_IGNORED: return "IGNORED";
    case HTTP_RANGE_MULTI: return "MULTI";
    case HTTP_RANGE_PARTIAL: return "PARTIAL";
    case HTTP_RANGE_UNSATISFIABLE: return "UNSATISFIABLE";
    }
    return "?";
}

/* The Content-Range we would send for a case, "" when none. */
static void content_range_for(const struct range_case *c, enum http_range_result r,
                              const struct http_range *rg, char out[HTTP_CONTENT_RANGE_MAX])
{
    out[0] = '\0';
    if (r == HTTP_RANGE_PARTIAL)
        http_content_range_format(out, rg->start, rg->end, c->total);
    else if (r == HTTP_RANGE_UNSATISFIABLE)
        http_content_range_unsatisfied(out, c->total);
}

TEST(table)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct range_case *c = &cases[i];
        struct http_range rg = {12345, 67890};
        enum http_range_result r = http_range_parse(c->header, c->total, &rg);
        bool good = r == c->want && (r != HTTP_RANGE_PARTIAL || (rg.start == c->start &&
                                                                 rg.end == c->end));
        if (!good)
            fprintf(stderr, "  case %zu total=%" PRIu64 " \"%s\": got %s %" PRIu64 "-%" PRIu64
                            ", want %s %" PRIu64 "-%" PRIu64 "\n",
                    i, c->total, c->header ? c->header : "(none)", result_name(r), rg.start,
                    rg.end, result_name(c->want), c->start, c->end);
        CHECK(good);
        if (r == HTTP_RANGE_PARTIAL)
            CHECK(rg.start <= rg.end && rg.end < c->total);
        else
            CHECK(rg.start == 12345 && rg.end == 67890); /* untouched */
    }
}

TEST(status_codes)
{
    CHECK_EQ_INT(http_range_status(HTTP_RANGE_NONE), 200);
    CHECK_EQ_INT(http_range_status(HTTP_RANGE_IGNORED), 200);
    CHECK_EQ_INT(http_range_status(HTTP_RANGE_MULTI), 200);
    CHECK_EQ_INT(http_range_status(HTTP_RANGE_PARTIAL), 206);
    CHECK_EQ_INT(http_range_status(HTTP_RANGE_UNSATISFIABLE), 416);
}

TEST(content_range_format)
{
    char b[HTTP_CONTENT_RANGE_MAX];
    CHECK_EQ_INT(http_content_range_format(b, 0, 499, 1234), 16);
    CHECK_EQ_STR(b, "bytes 0-499/1234");
    CHECK_EQ_INT(http_content_range_unsatisfied(b, 1234), 12);
    CHECK_EQ_STR(b, "bytes */1234");
    CHECK_EQ_STR((http_content_range_unsatisfied(b, 0), b), "bytes */0");
    /* the longest possible value fits */
    size_t n = http_content_range_format(b, UINT64_MAX - 1, UINT64_MAX - 1, UINT64_MAX);
    CHECK_EQ_STR(b, "bytes 18446744073709551614-18446744073709551614/18446744073709551615");
    CHECK(n < HTTP_CONTENT_RANGE_MAX);
}

TEST(huge_totals)
{
    struct http_range r;
    CHECK_EQ_INT(http_range_parse("bytes=0-", UINT64_MAX, &r), HTTP_RANGE_PARTIAL);
    CHECK(r.start == 0 && r.end == UINT64_MAX - 1);
    CHECK_EQ_INT(http_range_parse("bytes=18446744073709551614-", UINT64_MAX, &r),
                 HTTP_RANGE_PARTIAL);
    CHECK(r.start == UINT64_MAX - 1 && r.end == UINT64_MAX - 1);
    CHECK_EQ_INT(http_range_parse("bytes=18446744073709551615-", UINT64_MAX, &r),
                 HTTP_RANGE_UNSATISFIABLE);
    CHECK_EQ_INT(http_range_parse("bytes=-18446744073709551615", UINT64_MAX, &r),
                 HTTP_RANGE_PARTIAL);
    CHECK(r.start == 0 && r.end == UINT64_MAX - 1);
    CHECK_EQ_INT(http_range_parse("bytes=-18446744073709551614", UINT64_MAX, &r),
                 HTTP_RANGE_PARTIAL);
    CHECK(r.start == 1 && r.end == UINT64_MAX - 1);
    CHECK_EQ_INT(http_range_parse("bytes=1-18446744073709551616", UINT64_MAX, &r),
                 HTTP_RANGE_PARTIAL);
    CHECK(r.start == 1 && r.end == UINT64_MAX - 1);
}

TEST(long_headers)
{
    /* many ranges: linear, no allocation, still one decision */
    static char big[1 << 16];
    size_t n = 0;
    memcpy(big, "bytes=", 6);
    n = 6;
    while (n + 8 < sizeof big) {
        memcpy(big + n, "1-2,3-4,", 8);
        n += 8;
    }
    big[n] = '\0';
    struct http_range r;
    CHECK_EQ_INT(http_range_parse(big, 1000, &r), HTTP_RANGE_MULTI);
    CHECK_EQ_INT(http_range_parse(big, 1, &r), HTTP_RANGE_UNSATISFIABLE);
    /* one number of 60000 digits */
    memset(big + 6, '9', 60000);
    big[60006] = '-';
    big[60007] = '\0';
    CHECK_EQ_INT(http_range_parse(big, 1000, &r), HTTP_RANGE_UNSATISFIABLE);
    big[6] = '-';
    big[60006] = '\0';
    CHECK_EQ_INT(http_range_parse(big, 1000, &r), HTTP_RANGE_PARTIAL);
    CHECK(r.start == 0 && r.end == 999);
}

/* `test_range --cases` prints the table for tests/e2e/range_vs_nginx.sh:
 * total|has_header|header|our_status|our_content_range|nginx_status_if_different|note */
static int print_cases(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct range_case *c = &cases[i];
        struct http_range rg = {0, 0};
        enum http_range_result r = http_range_parse(c->header, c->total, &rg);
        char cr[HTTP_CONTENT_RANGE_MAX];
        content_range_for(c, r, &rg, cr);
        printf("%" PRIu64 "|%d|%s|%d|%s|%d|%s\n", c->total, c->header != NULL,
               c->header ? c->header : "", http_range_status(r), cr, c->nginx, c->note);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--cases") == 0)
        return print_cases();
    static const struct tl_case all[] = {TEST_CASE(table), TEST_CASE(status_codes),
                                         TEST_CASE(content_range_format), TEST_CASE(huge_totals),
                                         TEST_CASE(long_headers)};
    return tl_run(all, sizeof all / sizeof all[0], __FILE__);
}
