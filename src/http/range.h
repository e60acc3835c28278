/*
 * Byte-range requests (RFC 9110 §14) for the Parquet export: evaluates a Range
 * header against the representation's size and says whether to answer 200
 * (full body), 206 (one range) or 416, and formats Content-Range.
 *
 * Typical use in the server adapter, for GET only (RFC 9110 §14.2: GET is the
 * only method with range semantics, so HEAD and others ignore Range and report
 * the full size with 200):
 *
 *     struct http_range r;
 *     const char *range = is_get ? lookup("Range") : NULL;
 *     if (range && !http_if_range_allows(lookup("If-Range"), etag))  // conditional.h
 *         range = NULL;
 *     switch (http_range_parse(range, total, &r)) {
 *     case HTTP_RANGE_PARTIAL:        206, Content-Range from http_content_range_format,
 *                                     Content-Length r.end - r.start + 1;
 *     case HTTP_RANGE_UNSATISFIABLE:  416, Content-Range from
 *                                     http_content_range_unsatisfied, error body;
 *     default:                        200 with the whole body;
 *     }
 *     always: Accept-Ranges: bytes
 *
 * Decisions where the RFC leaves room (checked against nginx 1.22, see
 * tests/e2e/range_vs_nginx.sh):
 *  - Several satisfiable ranges: we answer 200 with the whole file instead of
 *    multipart/byteranges (clients of a Parquet file read one range at a time;
 *    nginx answers a multipart 206). If exactly one of the listed ranges is
 *    satisfiable we answer 206 for it, and if none is, 416 -- as nginx does.
 *  - A syntactically invalid header, e.g. "bytes=5-2" or "bytes=abc", is
 *    ignored (200), as RFC 9110 §14.2 suggests; nginx answers 416.
 *  - Numbers too large for 64 bits are handled by value: a huge first-pos is
 *    unsatisfiable (416), a huge last-pos clamps to the end, a huge suffix
 *    means the whole file (206); nginx answers 416 for all three.
 *  - A zero-length representation has no byte to send; ranges that start at
 *    byte 0 ("bytes=0-", "bytes=-5") get 200 with the empty body, ranges that
 *    start later get 416 -- the same as nginx.
 */
#ifndef VT_HTTP_RANGE_H
#define VT_HTTP_RANGE_H

#include <stddef.h>
#include <stdint.h>

enum http_range_result {
    HTTP_RANGE_NONE,          /* no Range header: 200, whole body */
    HTTP_RANGE_IGNORED,       /* invalid syntax, a unit other than bytes, or a range from
                                 byte 0 of an empty representation: 200, whole body */
    HTTP_RANGE_MULTI,         /* several satisfiable ranges: 200, whole body (our choice) */
    HTTP_RANGE_PARTIAL,       /* one satisfiable range: 206 with bytes start..end */
    HTTP_RANGE_UNSATISFIABLE, /* 416 with "Content-Range: bytes * /total" (no space) */
};

/* Inclusive byte positions of the range to send (only set for PARTIAL). */
struct http_range {
    uint64_t start;
    uint64_t end;
};

/*
 * Evaluates `value` (NUL-terminated; NULL when the header is absent) against a
 * representation of `total` bytes. The unit is case-insensitive; spaces and
 * tabs are allowed around list commas and around the numbers and "-" (nginx is
 * as lenient); empty list elements are skipped (RFC 9110 §5.6.1). No
 * allocation, one pass, any header length.
 */
enum http_range_result http_range_parse(const char *value, uint64_t total,
                                        struct http_range *out_range);

/* The HTTP status for a result: 200, 206 or 416. */
int http_range_status(enum http_range_result r);

/* "bytes 0-499/1234" and "bytes * /1234" (without the space). Both fit in
 * HTTP_CONTENT_RANGE_MAX bytes including the NUL. Return the length written. */
#define HTTP_CONTENT_RANGE_MAX 80
size_t http_content_range_format(char out[HTTP_CONTENT_RANGE_MAX], uint64_t start, uint64_t end,
                                 uint64_t total);
size_t http_content_range_unsatisfied(char out[HTTP_CONTENT_RANGE_MAX], uint64_t total);

#endif
