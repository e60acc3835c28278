/*
 * HTTP/1.1 on the wire (RFC 9112), the parts that need no socket: the
 * request head parser, the chunked body decoder, query-string arguments,
 * status reason phrases and the Date header. Pure functions over buffers the
 * caller owns; src/http/conn.c drives them, tests/fuzz/fuzz_http_wire.c
 * fuzzes them.
 *
 * The parser is strict where leniency lets two parsers disagree about where
 * a message ends (request smuggling) and answers every refusal with one of
 * the error table's codes, which the server sends as its JSON error body:
 *
 *   request line   METHOD SP target SP HTTP/1.x CRLF, one space each; a
 *                  method is a token; a target has no whitespace or control
 *                  bytes and at most VT_MAX_URL_BYTES (414); a version
 *                  other than 1.0/1.1 is 505; empty lines before it are
 *                  skipped (RFC 9112 §2.2)
 *   lines          end in CRLF; a bare LF or CR is 400
 *   fields         name ":" OWS value OWS; the name is a token with nothing
 *                  between it and the colon; the value has no control byte
 *                  but HTAB; obs-fold (a line starting with SP or HTAB) and
 *                  lines without a colon are 400; at most
 *                  VT_MAX_HEADER_FIELDS fields and VT_MAX_HEADER_BYTES
 *                  bytes after the request line (431)
 *   framing        exactly one Host in HTTP/1.1 (at most one in 1.0);
 *                  Content-Length once, plain digits (anything else 400; a
 *                  value past 2^63 is 413); Transfer-Encoding only in 1.1,
 *                  never with Content-Length, and only "chunked" (else 501);
 *                  a Content-Encoding other than identity is 415
 *
 * The chunked decoder takes chunk-size (hex, at most 15 digits), chunk
 * extensions (ignored, bounded), data, CRLF, the last chunk and trailer
 * fields (bounded, ignored); anything else is 400.
 */
#ifndef VT_HTTP_WIRE_H
#define VT_HTTP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <strings.h>
#include <time.h>

#include "util/errors.h"
#include "util/strbuf.h"

struct http_field {
    const char *name;           /* NUL-terminated, as sent (compare without case) */
    const char *value;          /* NUL-terminated, OWS trimmed */
    size_t value_len;
    size_t name_len;            /* (a lookup compares lengths before bytes) */
};

struct http_head {
    const char *method;         /* NUL-terminated token */
    const char *target;         /* NUL-terminated, as sent */
    size_t target_len;
    int minor;                  /* HTTP/1.<minor>: 0 or 1 */
    struct http_field *fields;  /* in the caller's array */
    size_t n_fields;
    /* Framing, from the fields. */
    const char *host;           /* NULL when absent */
    bool has_length;
    uint64_t content_length;
    bool chunked;
    bool expect_continue;       /* Expect: 100-continue */
    bool keep_alive;            /* the connection may carry another request */
};

enum http_parse { HTTP_PARSE_DONE, HTTP_PARSE_MORE, HTTP_PARSE_ERROR };

/* Where a head ends, found incrementally: zero it before the first bytes of
 * each head, then call http_head_find with the whole buffer so far (bytes
 * already looked at are not looked at again). */
struct http_head_scan {
    size_t pos;                 /* bytes looked at */
    size_t line_start;
    size_t field_bytes;         /* field lines so far, CRLFs included */
    bool in_fields;             /* past the request line */
    bool saw_ctl;               /* a control byte other than HTAB and the CRLFs */
};

/* HTTP_PARSE_DONE with *out_end just past the head's empty line;
 * HTTP_PARSE_MORE while it is incomplete; HTTP_PARSE_ERROR (with *out_code
 * and *out_msg) as soon as the bytes seen cannot become a head within the
 * limits: a bare LF or CR, a request line over VT_MAX_URL_BYTES (414), field
 * lines over VT_MAX_HEADER_BYTES (431). */
enum http_parse http_head_find(struct http_head_scan *s, const char *buf, size_t len,
                               size_t *out_end, enum vt_err *out_code, const char **out_msg);

/* Parses a complete head (buf[0..len), len from http_head_find) in place:
 * NULs are written at the ends of method, target, field names and values.
 * `scan` is the http_head_find state that found the head in these same bytes
 * (its one pass over them spares the values' control-byte check when it met
 * none), or NULL to check every value here. `fields` has room for
 * VT_MAX_HEADER_FIELDS. VT_ERR_OK, or the code to answer with and a message
 * (static text). */
enum vt_err http_head_parse(char *buf, size_t len, const struct http_head_scan *scan,
                            struct http_field *fields, struct http_head *out,
                            const char **out_msg);

/* The value of the first field named `name` (any case), or NULL (the
 * server joins repeated lines: http_req_header). */
const char *http_head_field(const struct http_head *h, const char *name);

/* Whether field names a and b are the same name (case-insensitive, as
 * strcasecmp in the C locale): the first bytes are compared inline, so the
 * usual mismatch costs no call (a head's lookups compare every field). */
static inline bool http_name_eq(const char *a, const char *b)
{
    return (a[0] | 0x20) == (b[0] | 0x20) && strcasecmp(a, b) == 0;
}

struct http_chunked {
    int state;
    uint64_t left;              /* data bytes left in the current chunk */
    unsigned digits;            /* chunk-size digits so far */
    size_t line;                /* bytes of the current extension or trailer line */
    size_t trailers;            /* bytes of trailer fields so far */
};

/* Feeds in[0..n) to the decoder, appending chunk data to `body` (a bounded
 * strbuf). *out_used is how much of `in` was consumed. HTTP_PARSE_DONE when
 * the last chunk and its trailers are complete (what follows in `in` is the
 * next request), HTTP_PARSE_MORE when all of `in` was consumed and more is
 * needed, HTTP_PARSE_ERROR with *out_code: VT_ERR_MALFORMED_REQUEST for bad
 * framing, VT_ERR_BODY_TOO_LARGE when `body` refused the data. */
enum http_parse http_chunked_feed(struct http_chunked *c, const char *in, size_t n,
                                  size_t *out_used, struct strbuf *body, enum vt_err *out_code,
                                  const char **out_msg);

/* Query-string arguments: target's part after '?', split at '&', each
 * "key=value" (or "key", value ""), keys and values percent-decoded and '+'
 * made a space (an invalid escape stays as written). Finds the first
 * argument named `key` and writes its decoded value (NUL-terminated; may hold
 * NUL bytes) to out (cap bytes); the value's length in *out_len. False when
 * absent (or longer than cap - 1). */
bool http_query_arg(const char *target, const char *key, char *out, size_t cap,
                    size_t *out_len);

/* "OK", "Not Found", ...; "Unknown" for codes not in the table. */
const char *http_reason(int status);

/* "Sun, 06 Nov 1994 08:49:37 GMT" (IMF-fixdate) into out[30]. */
void http_date(time_t t, char out[30]);

#endif
