/*
 * The HTTP/1.1 wire parser (src/http/wire.c): head ends found whatever the
 * split, strict framing refusals with their error codes (issue 21 item 7:
 * what libmicrohttpd answered in HTML, once or twice, is a code of the error
 * table here), the chunked decoder and query arguments.
 */
#include <stdio.h>
#include <stdlib.h>

#include "http/wire.h"
#include "testlib.h"
#include "util/limits.h"

/* Finds the head end feeding `s` one byte more at a time. */
static enum http_parse find_bytewise(const char *s, size_t *end, enum vt_err *code)
{
    struct http_head_scan sc = {0};
    const char *msg = NULL;
    size_t len = strlen(s);
    enum http_parse p = HTTP_PARSE_MORE;
    for (size_t n = 1; n <= len && p == HTTP_PARSE_MORE; n++)
        p = http_head_find(&sc, s, n, end, code, &msg);
    return p;
}

/* Parses a whole head; returns the code and fills *h (fields in `f`). */
static enum vt_err parse(const char *s, struct http_head *h, struct http_field *f, char **keep)
{
    size_t end = 0;
    enum vt_err code = VT_ERR_OK;
    const char *msg = NULL;
    struct http_head_scan sc = {0};
    enum http_parse p = http_head_find(&sc, s, strlen(s), &end, &code, &msg);
    if (p == HTTP_PARSE_ERROR)
        return code;
    if (p != HTTP_PARSE_DONE)
        return VT_ERR_INTERNAL;
    *keep = malloc(end + 1);
    memcpy(*keep, s, end);
    (*keep)[end] = '\0';
    memset(h, 0, sizeof *h);
    /* The server's way (the scan's finding spares the values' check) and the
     * way without a scan must agree. */
    char *again = malloc(end + 1);
    memcpy(again, *keep, end + 1);
    struct http_field f2[VT_MAX_HEADER_FIELDS];
    struct http_head h2;
    const char *msg2 = NULL;
    enum vt_err alone = http_head_parse(again, end, NULL, f2, &h2, &msg2);
    free(again);
    enum vt_err rc = http_head_parse(*keep, end, &sc, f, h, &msg);
    if (rc != alone)
        return VT_ERR_INTERNAL;
    return rc;
}

static enum vt_err code_of(const char *s)
{
    struct http_field f[VT_MAX_HEADER_FIELDS];
    struct http_head h;
    char *keep = NULL;
    enum vt_err rc = parse(s, &h, f, &keep);
    free(keep);
    return rc;
}

TEST(head_end_whatever_the_split)
{
    const char *req = "\r\nGET /a?b=1 HTTP/1.1\r\nHost: x\r\nX-Y:  v w \r\n\r\nNEXT";
    size_t end = 0;
    enum vt_err code = VT_ERR_OK;
    CHECK_EQ_INT(find_bytewise(req, &end, &code), HTTP_PARSE_DONE);
    CHECK_EQ_INT(end, strlen(req) - 4);
    CHECK_EQ_INT(find_bytewise("GET / HTTP/1.1\nHost: x\n\n", &end, &code), HTTP_PARSE_ERROR);
    CHECK_EQ_INT(code, VT_ERR_MALFORMED_REQUEST);
}

TEST(parsed_head)
{
    struct http_field f[VT_MAX_HEADER_FIELDS];
    struct http_head h;
    char *keep = NULL;
    CHECK_EQ_INT(parse("POST /q?x=1 HTTP/1.1\r\nHost: localhost:80\r\nContent-Length: 12\r\n"
                       "X-Y:\t v w \r\nExpect: 100-continue\r\n\r\n", &h, f, &keep),
                 VT_ERR_OK);
    CHECK_EQ_STR(h.method, "POST");
    CHECK_EQ_STR(h.target, "/q?x=1");
    CHECK_EQ_INT(h.minor, 1);
    CHECK_EQ_STR(h.host, "localhost:80");
    CHECK(h.has_length && h.content_length == 12 && !h.chunked);
    CHECK(h.expect_continue && h.keep_alive);
    CHECK_EQ_STR(http_head_field(&h, "x-y"), "v w");
    free(keep);
    CHECK_EQ_INT(parse("GET / HTTP/1.0\r\n\r\n", &h, f, &keep), VT_ERR_OK);
    CHECK(!h.keep_alive && !h.host);
    free(keep);
    CHECK_EQ_INT(parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                       "Connection: close\r\n\r\n", &h, f, &keep), VT_ERR_OK);
    CHECK(h.chunked && !h.has_length && !h.keep_alive);
    free(keep);
}

TEST(refusals_have_their_codes)
{
    CHECK_EQ_INT(code_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"),
                 VT_ERR_MALFORMED_REQUEST);
    CHECK_EQ_INT(code_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +2\r\n\r\n"),
                 VT_ERR_MALFORMED_REQUEST);
    CHECK_EQ_INT(code_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n"),
                 VT_ERR_MALFORMED_REQUEST);
    CHECK_EQ_INT(code_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n"),
                 VT_ERR_BODY_TOO_LARGE);
    CHECK_EQ_INT(code_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n"),
                 VT_ERR_MALFORMED_REQUEST);
    CHECK_EQ_INT(code_of("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n"
                         "Transfer-Encoding: chunked\r\n\r\n"), VT_ERR_MALFORMED_REQUEST);
    CHECK_EQ_INT(code_of("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"),
                 VT_ERR_NOT_IMPLEMENTED);
    CHECK_EQ_INT(code_of("GET / HTTP/2.0\r\nHost: a\r\n\r\n"), VT_ERR_HTTP_VERSION_NOT_SUPPORTED);
    CHECK_EQ_INT(code_of("GET / HTTP/1.1\r\n\r\n"), VT_ERR_MALFORMED_REQUEST);
    CHECK_EQ_INT(code_of("GET / HTTP/1.1\r\nHost: a\r\nnocolon\r\n\r\n"), VT_ERR_MALFORMED_REQUEST);
    CHECK_EQ_INT(code_of("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n"), VT_ERR_MALFORMED_REQUEST);
    CHECK_EQ_INT(code_of("GET / HTTP/1.1\r\nHost : a\r\n\r\n"), VT_ERR_MALFORMED_REQUEST);
    CHECK_EQ_INT(code_of("GET  / HTTP/1.1\r\nHost: a\r\n\r\n"), VT_ERR_MALFORMED_REQUEST);
    CHECK_EQ_INT(code_of("GET / HTTP/1.1\r\nHost: a\r\nX: a\x01" "b\r\n\r\n"), VT_ERR_MALFORMED_REQUEST);
    /* Too many fields, too many field bytes. */
    static char many[VT_MAX_HEADER_BYTES];
    size_t k = (size_t)snprintf(many, sizeof many, "GET / HTTP/1.1\r\nHost: a\r\n");
    for (int i = 0; i < VT_MAX_HEADER_FIELDS + 1; i++)
        k += (size_t)snprintf(many + k, sizeof many - k, "X%d: 1\r\n", i);
    snprintf(many + k, sizeof many - k, "\r\n");
    CHECK_EQ_INT(code_of(many), VT_ERR_HEADERS_TOO_LARGE);
    size_t blen = VT_MAX_HEADER_BYTES + 100;
    char *big = malloc(blen + 64);
    int n = snprintf(big, 64, "GET / HTTP/1.1\r\nHost: a\r\nX: ");
    memset(big + n, 'a', blen);
    memcpy(big + n + blen, "\r\n\r\n", 5);
    CHECK_EQ_INT(code_of(big), VT_ERR_HEADERS_TOO_LARGE);
    free(big);
}

/* A control character anywhere in a long value (a bearer token) is refused,
 * whatever its place in the head finder's 32- and 16-byte blocks (and
 * has_ctl's) or the bytes after them;
 * HTAB, space, '~' and obs-text (0x80-0xff) pass. */
TEST(control_characters_at_every_offset)
{
    enum { VLEN = 75 };
    static const unsigned char bad[] = {0x01, 0x08, 0x0a, 0x0b, 0x1b, 0x1f, 0x7f};
    static const unsigned char good[] = {'\t', ' ', '~', 0x80, 0xa0, 0xfe, 0xff};
    char req[256];
    for (int pos = 1; pos < VLEN - 1; pos++) {
        for (size_t b = 0; b < sizeof bad + sizeof good; b++) {
            bool is_bad = b < sizeof bad;
            unsigned char c = is_bad ? bad[b] : good[b - sizeof bad];
            int n = snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: ");
            memset(req + n, 'x', VLEN);
            req[n + pos] = (char)c;
            memcpy(req + n + VLEN, "\r\n\r\n", 5);
            enum vt_err want = is_bad ? VT_ERR_MALFORMED_REQUEST : VT_ERR_OK;
            if (code_of(req) != want) {
                fprintf(stderr, "byte 0x%02x at %d\n", c, pos);
                CHECK_EQ_INT(code_of(req), want);
            }
        }
    }
}

static enum http_parse chunked(const char *in, struct strbuf *body, size_t *used, enum vt_err *code)
{
    struct http_chunked c = {0};
    const char *msg = NULL;
    return http_chunked_feed(&c, in, strlen(in), used, body, code, &msg);
}

TEST(chunked_bodies)
{
    struct strbuf b;
    sb_init(&b, 16);
    size_t used = 0;
    enum vt_err code = VT_ERR_OK;
    const char *ok = "2;x=1\r\n{}\r\na\r\n0123456789\r\n0\r\nT: v\r\n\r\nGET";
    CHECK_EQ_INT(chunked(ok, &b, &used, &code), HTTP_PARSE_DONE);
    CHECK_EQ_INT(used, strlen(ok) - 3);
    CHECK_EQ_INT(b.len, 12);
    CHECK(!memcmp(b.buf, "{}0123456789", 12));
    sb_reset(&b);
    CHECK_EQ_INT(chunked("zz\r\n", &b, &used, &code), HTTP_PARSE_ERROR);
    CHECK_EQ_INT(code, VT_ERR_MALFORMED_REQUEST);
    CHECK_EQ_INT(chunked("FFFFFFFFFFFFFFFFFFFF\r\n", &b, &used, &code), HTTP_PARSE_ERROR);
    CHECK_EQ_INT(code, VT_ERR_MALFORMED_REQUEST);
    CHECK_EQ_INT(chunked("2\r\n{}X\r\n", &b, &used, &code), HTTP_PARSE_ERROR);
    sb_reset(&b);
    CHECK_EQ_INT(chunked("20\r\n0123456789012345678901234567890", &b, &used, &code), HTTP_PARSE_ERROR);
    CHECK_EQ_INT(code, VT_ERR_BODY_TOO_LARGE);
    sb_release(&b);
}

TEST(query_args)
{
    char v[32];
    size_t n = 0;
    CHECK(http_query_arg("/x?a=1&b=x%20y+z&c", "b", v, sizeof v, &n) && !strcmp(v, "x y z"));
    CHECK_EQ_INT(n, 5);
    CHECK(http_query_arg("/x?a=1&b=x%20y+z&c", "c", v, sizeof v, &n) && n == 0);
    CHECK(!http_query_arg("/x?a=1", "b", v, sizeof v, &n));
    CHECK(!http_query_arg("/x", "a", v, sizeof v, &n));
    CHECK(!http_query_arg("/x?a=0123456789012345678901234567890123456789", "a", v, sizeof v, &n));
}

/* The table-driven scans of the target and the field names, and framing
 * found by the names' lengths: every control byte but HTAB refused in a
 * target wherever it sits, every non-token byte refused in a name, each
 * name's length kept, and only the exact framing names counted whatever
 * their case (a longer or shorter name that starts the same is a plain
 * field). */
TEST(table_scans_and_framing_by_length)
{
    char req[64];
    for (int c = 0; c < 256; c++) {
        if (c == ' ' || c == '\r')
            continue;
        snprintf(req, sizeof req, "GET /a%cb HTTP/1.1\r\nHost: a\r\n\r\n", c ? c : 'x');
        if (!c)
            req[6] = '\0';
        enum vt_err want = (c < 0x20 && c != '\t') || c == 0x7f ? VT_ERR_MALFORMED_REQUEST
                                                                 : VT_ERR_OK;
        struct http_field f[VT_MAX_HEADER_FIELDS];
        struct http_head h;
        char *keep = NULL;
        size_t end = strlen(req) + (c ? 0 : 1 + strlen(req + 7));
        char *copy = malloc(end + 1);
        memcpy(copy, req, end);
        copy[end] = '\0';
        const char *msg = NULL;
        enum vt_err got = http_head_parse(copy, end, NULL, f, &h, &msg);
        if (got != want)
            printf("target byte 0x%02x: %d, want %d\n", c, got, want);
        CHECK_EQ_INT(got, want);
        free(copy);
        free(keep);
    }
    for (int c = 0x21; c < 0x7f; c++) {
        if (c == ':')
            continue;
        snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: a\r\nX%cY: 1\r\n\r\n", c);
        bool token = strchr("!#$%&'*+-.^_`|~", c) || (c >= '0' && c <= '9') ||
                     (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        CHECK_EQ_INT(code_of(req), token ? VT_ERR_OK : VT_ERR_MALFORMED_REQUEST);
    }
    struct http_field f[VT_MAX_HEADER_FIELDS];
    struct http_head h;
    char *keep = NULL;
    CHECK_EQ_INT(parse("POST / HTTP/1.1\r\nhOsT: a\r\nHosts: b\r\nContent-Type: x\r\n"
                       "content-length: 3\r\nContent-Lengths: 9\r\nConnectionX: close\r\n"
                       "EXPECT: 100-continue\r\n\r\n", &h, f, &keep), VT_ERR_OK);
    CHECK_EQ_STR(h.host, "a");
    CHECK(h.has_length && h.content_length == 3 && h.keep_alive && h.expect_continue);
    CHECK_EQ_INT((int)h.n_fields, 7);
    static const size_t lens[] = {4, 5, 12, 14, 15, 11, 6};
    for (size_t i = 0; i < 7 && i < h.n_fields; i++)
        CHECK_EQ_INT((int)f[i].name_len, (int)lens[i]);
    free(keep);
    CHECK_EQ_INT(code_of("GET / HTTP/1.1\r\nHOST: a\r\nhost: b\r\n\r\n"),
                 VT_ERR_MALFORMED_REQUEST);
    CHECK_EQ_INT(code_of("POST / HTTP/1.1\r\nHost: a\r\ncontent-encoding: gzip\r\n\r\n"),
                 VT_ERR_UNSUPPORTED_CONTENT_ENCODING);
    CHECK_EQ_INT(code_of("POST / HTTP/1.1\r\nHost: a\r\nTRANSFER-ENCODING: chunked\r\n"
                         "Content-Length: 1\r\n\r\n"), VT_ERR_MALFORMED_REQUEST);
}

RUN_TESTS(TEST_CASE(head_end_whatever_the_split), TEST_CASE(parsed_head),
          TEST_CASE(table_scans_and_framing_by_length),
          TEST_CASE(control_characters_at_every_offset),
          TEST_CASE(refusals_have_their_codes), TEST_CASE(chunked_bodies), TEST_CASE(query_args))
