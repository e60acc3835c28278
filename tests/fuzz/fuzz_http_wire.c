/*
 * libFuzzer target for the HTTP/1.1 wire parser (src/http/wire.c): the head
 * finder fed in pieces, the head parser, the chunked decoder and query-string
 * arguments. The first input byte picks the piece size; the rest is what a
 * client sends. Checks what wire.h promises: the head end is found wherever
 * the bytes are split, it never lies past the bytes seen, a parsed head has
 * its method, target and framing consistent, the chunked decoder never
 * consumes more than it was given nor grows the body past its cap, and a
 * decoded query value fits its buffer.
 * Build: make fuzz.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/wire.h"
#include "util/limits.h"

static enum http_parse find_in_pieces(const char *buf, size_t len, size_t step, size_t *end,
                                      enum vt_err *code, const char **msg,
                                      struct http_head_scan *out_scan)
{
    struct http_head_scan s;
    memset(&s, 0, sizeof s);
    enum http_parse p = HTTP_PARSE_MORE;
    for (size_t seen = step < len ? step : len;; seen = seen + step < len ? seen + step : len) {
        p = http_head_find(&s, buf, seen, end, code, msg);
        *out_scan = s;
        if (p != HTTP_PARSE_MORE || seen == len)
            break;
    }
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = (size_t)data[0] % 17 + 1;
    const char *in = (const char *)data + 1;
    size_t len = size - 1;
    char *buf = malloc(len + 1);
    memcpy(buf, in, len);
    buf[len] = '\0';

    size_t end = 0, end1 = 0;
    enum vt_err code = VT_ERR_OK, code1 = VT_ERR_OK;
    const char *msg = NULL;
    struct http_head_scan scan, scan1;
    enum http_parse p = find_in_pieces(buf, len, step, &end, &code, &msg, &scan);
    enum http_parse p1 = find_in_pieces(buf, len, len ? len : 1, &end1, &code1, &msg, &scan1);
    /* Where the bytes are split must not change the answer. */
    if (p != p1 || (p == HTTP_PARSE_DONE && end != end1) ||
        (p == HTTP_PARSE_ERROR && code != code1) ||
        (p == HTTP_PARSE_DONE && scan.saw_ctl != scan1.saw_ctl))
        abort();
    if (p == HTTP_PARSE_ERROR && (code == VT_ERR_OK || !msg))
        abort();
    if (p == HTTP_PARSE_DONE) {
        if (end == 0 || end > len)
            abort();
        struct http_field *fields = calloc(VT_MAX_HEADER_FIELDS, sizeof *fields);
        struct http_head h;
        memset(&h, 0, sizeof h);
        char *copy = malloc(end + 1);
        memcpy(copy, buf, end);
        copy[end] = '\0';
        /* Parsed without the scan's finding first: parsing with it (the
         * server's way, which skips the values' control-byte check when the
         * scan met none) must give the same answer. */
        char *alone = malloc(end + 1);
        memcpy(alone, copy, end + 1);
        struct http_head h0;
        memset(&h0, 0, sizeof h0);
        const char *msg0 = NULL;
        msg = NULL;
        enum vt_err rc0 = http_head_parse(alone, end, NULL, fields, &h0, &msg0);
        free(alone);
        enum vt_err rc = http_head_parse(copy, end, &scan, fields, &h, &msg);
        if (rc != rc0 || msg != msg0 || (rc == VT_ERR_OK && h.n_fields != h0.n_fields))
            abort();
        if (rc == VT_ERR_OK) {
            if (!h.method || !*h.method || !h.target || strlen(h.target) != h.target_len ||
                (h.minor != 0 && h.minor != 1) || h.n_fields > VT_MAX_HEADER_FIELDS ||
                (h.chunked && h.has_length) || (h.minor == 1 && !h.host))
                abort();
            for (size_t i = 0; i < h.n_fields; i++)
                if (!fields[i].name || !fields[i].value || strlen(fields[i].value) != fields[i].value_len ||
                    strlen(fields[i].name) != fields[i].name_len)
                    abort();
            char val[256];
            size_t vlen = 0;
            if (http_query_arg(h.target, "a", val, sizeof val, &vlen) && vlen >= sizeof val)
                abort();
        } else if (!msg) {
            abort();
        }
        free(copy);
        free(fields);

        /* What follows the head, as a chunked body, in pieces. */
        struct http_chunked ch;
        memset(&ch, 0, sizeof ch);
        struct strbuf body;
        sb_init(&body, 4096);
        size_t at = end;
        while (at < len) {
            size_t n = len - at < step ? len - at : step, used = 0;
            enum http_parse cp = http_chunked_feed(&ch, buf + at, n, &used, &body, &code, &msg);
            if (used > n || body.len > 4096)
                abort();
            at += used;
            if (cp != HTTP_PARSE_MORE)
                break;
            if (used != n)
                abort();
        }
        sb_release(&body);
    }
    free(buf);
    return 0;
}
