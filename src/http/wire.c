/*
 * HTTP/1.1 wire format (see wire.h): finding and parsing request heads,
 * decoding chunked bodies, query arguments, reason phrases, dates. No
 * sockets, no allocation: the connection code (conn.c) owns the buffers.
 */
#include "http/wire.h"

#include <emmintrin.h>
#include <string.h>
#include <strings.h>

#include "util/limits.h"
#include "util/text.h"

/* The request line may hold a target of VT_MAX_URL_BYTES plus a method and
 * the version. */
#define REQUEST_LINE_MAX (VT_MAX_URL_BYTES + 64)
/* Empty lines tolerated before a request line. */
#define LEADING_EMPTY_MAX 64

/* RFC 9110's tchar: digits, letters and !#$%&'*+-.^_`|~ (a table: every
 * byte of the method and of each field name passes here). */
static const bool tchar[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
    ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1,
    ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
    ['y'] = 1, ['z'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
    ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
    ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
    ['Y'] = 1, ['Z'] = 1,
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1,
    ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1, ['~'] = 1,
};

static inline bool is_tchar(unsigned char c)
{
    return tchar[c];
}

/* A control character other than HTAB (RFC 9110 §5.5). */
static bool is_ctl(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

/* Where a request target's scan stops: SP, and every byte is_ctl refuses
 * (the CR ending the line is one; HTAB is not, as ever). One table lookup a
 * byte instead of three compares. */
static const bool target_stop[256] = {
    [0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x05] = 1, [0x06] = 1,
    [0x07] = 1, [0x08] = 1, [0x0a] = 1, [0x0b] = 1, [0x0c] = 1, [0x0d] = 1,
    [0x0e] = 1, [0x0f] = 1, [0x10] = 1, [0x11] = 1, [0x12] = 1, [0x13] = 1, [0x14] = 1,
    [0x15] = 1, [0x16] = 1, [0x17] = 1, [0x18] = 1, [0x19] = 1, [0x1a] = 1, [0x1b] = 1,
    [0x1c] = 1, [0x1d] = 1, [0x1e] = 1, [0x1f] = 1, [' '] = 1, [0x7f] = 1,
};

/* Whether v[0..n) holds such a character. Sixteen bytes at a time with SSE2
 * (values such as bearer tokens run to kilobytes; eight at a time with
 * integer tricks was ~3,700 instructions for a 1.1 KB token, most of a
 * bearer request's extra cost): a block whose bytes are all above 0x1f and
 * none 0x7f is clean; one that may hold a control character (or a HTAB,
 * which is allowed) is checked byte by byte. */
static bool has_ctl(const unsigned char *v, size_t n)
{
    const __m128i c1f = _mm_set1_epi8(0x1f), c7f = _mm_set1_epi8(0x7f);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i w = _mm_loadu_si128((const __m128i *)(v + i));
        /* unsigned w <= 0x1f: min(w, 0x1f) == w */
        __m128i low = _mm_cmpeq_epi8(_mm_min_epu8(w, c1f), w);
        if (_mm_movemask_epi8(_mm_or_si128(low, _mm_cmpeq_epi8(w, c7f))))
            for (size_t j = i; j < i + 16; j++)
                if (is_ctl(v[j]))
                    return true;
    }
    for (; i < n; i++)
        if (is_ctl(v[i]))
            return true;
    return false;
}

/* Bit k set when v[k] may be a control byte: below 0x20 or 0x7f, and (the
 * price of a two-instruction test) every byte from 0x80, which the caller
 * tells apart. v + 1 as a signed byte is below 0x21 exactly for those. */
static inline unsigned maybe_ctl16(const unsigned char *v)
{
    __m128i w = _mm_loadu_si128((const __m128i *)v);
    return (unsigned)_mm_movemask_epi8(
        _mm_cmplt_epi8(_mm_add_epi8(w, _mm_set1_epi8(1)), _mm_set1_epi8(0x21)));
}

/* The first byte of buf[from..len) that may be a control byte (CR and LF
 * among them; see maybe_ctl16), or len. Sixteen or thirty-two bytes at a
 * time: a head's lines (a bearer token) run to kilobytes, and this one pass
 * finds both the line ends and any other control byte, so the parser need
 * not look at the values again (has_ctl). */
static inline size_t next_maybe_ctl(const char *buf, size_t from, size_t len)
{
    const unsigned char *b = (const unsigned char *)buf;
    size_t i = from;
    for (; i + 32 <= len; i += 32) {
        unsigned m = maybe_ctl16(b + i) | maybe_ctl16(b + i + 16) << 16;
        if (m)
            return i + (size_t)__builtin_ctz(m);
    }
    if (i + 16 <= len) {
        unsigned m = maybe_ctl16(b + i);
        if (m)
            return i + (size_t)__builtin_ctz(m);
        i += 16;
    }
    for (; i < len; i++)
        if (b[i] < 0x20 || b[i] >= 0x7f)
            return i;
    return len;
}

static enum http_parse fail(enum vt_err *out_code, const char **out_msg, enum vt_err code,
                            const char *msg)
{
    *out_code = code;
    *out_msg = msg;
    return HTTP_PARSE_ERROR;
}

enum http_parse http_head_find(struct http_head_scan *s, const char *buf, size_t len,
                               size_t *out_end, enum vt_err *out_code, const char **out_msg)
{
    *out_end = 0;
    for (size_t i = next_maybe_ctl(buf, s->pos, len); i < len;
         i = next_maybe_ctl(buf, i + 1, len)) {
        unsigned char c = (unsigned char)buf[i];
        if (c == '\n')
            return fail(out_code, out_msg, VT_ERR_MALFORMED_REQUEST,
                        "a line ends in LF without CR");
        if (c != '\r') {
            if (is_ctl(c)) /* (not HTAB, not 0x80 and above) */
                s->saw_ctl = true;
            continue;
        }
        if (i + 1 == len) {
            s->pos = i; /* look at the CR again with its LF */
            goto more;
        }
        if (buf[i + 1] != '\n')
            return fail(out_code, out_msg, VT_ERR_MALFORMED_REQUEST, "a CR not followed by LF");
        size_t line = i - s->line_start;
        i++;
        if (!s->in_fields) {
            if (line == 0) { /* an empty line before the request line */
                if (i + 1 > LEADING_EMPTY_MAX)
                    return fail(out_code, out_msg, VT_ERR_MALFORMED_REQUEST,
                                "too many empty lines before the request line");
            } else {
                if (line > REQUEST_LINE_MAX)
                    return fail(out_code, out_msg, VT_ERR_URI_TOO_LONG,
                                "request target longer than VT_MAX_URL_BYTES (8192)");
                s->in_fields = true;
            }
        } else if (line == 0) {
            *out_end = i + 1;
            s->pos = i + 1;
            return HTTP_PARSE_DONE;
        } else {
            s->field_bytes += line + 2;
            if (s->field_bytes > VT_MAX_HEADER_BYTES)
                return fail(out_code, out_msg, VT_ERR_HEADERS_TOO_LARGE,
                            "request header fields larger than VT_MAX_HEADER_BYTES");
        }
        s->line_start = i + 1;
    }
    s->pos = len;
more:;
    size_t partial = len - s->line_start;
    if (!s->in_fields && partial > REQUEST_LINE_MAX)
        return fail(out_code, out_msg, VT_ERR_URI_TOO_LONG,
                    "request target longer than VT_MAX_URL_BYTES (8192)");
    if (s->in_fields && s->field_bytes + partial > VT_MAX_HEADER_BYTES)
        return fail(out_code, out_msg, VT_ERR_HEADERS_TOO_LARGE,
                    "request header fields larger than VT_MAX_HEADER_BYTES");
    return HTTP_PARSE_MORE;
}

/* True when the (trimmed) value `v` is `word`, in any case. */
static bool value_is(const char *v, const char *word)
{
    return v && strcasecmp(v, word) == 0;
}

/* Connection options (a comma-separated list of tokens). */
static void connection_options(const char *v, int minor, bool *keep_alive)
{
    while (*v) {
        while (*v == ' ' || *v == '\t' || *v == ',')
            v++;
        const char *start = v;
        while (*v && *v != ',' && *v != ' ' && *v != '\t')
            v++;
        size_t n = (size_t)(v - start);
        if (n == 5 && !strncasecmp(start, "close", 5))
            *keep_alive = false;
        else if (n == 10 && !strncasecmp(start, "keep-alive", 10) && minor == 0)
            *keep_alive = true;
        while (*v && *v != ',')
            v++;
    }
}

static enum vt_err parse_framing(struct http_head *h, const char **out_msg)
{
    int hosts = 0, lengths = 0, encodings = 0, codings = 0;
    const char *te = NULL, *ce = NULL, *cl = NULL;
    bool close_seen = false;
    h->keep_alive = h->minor == 1;
    for (size_t i = 0; i < h->n_fields; i++) {
        const char *n = h->fields[i].name, *v = h->fields[i].value;
        /* Only a name as long as one of ours is compared (one compare a
         * framing field, none for the rest; bench/callgrind.py). */
        switch (h->fields[i].name_len) {
        case 4:
            if (!strcasecmp(n, "Host")) {
                hosts++;
                h->host = v;
            }
            break;
        case 14:
            if (!strcasecmp(n, "Content-Length")) {
                lengths++;
                cl = v;
            }
            break;
        case 17:
            if (!strcasecmp(n, "Transfer-Encoding")) {
                encodings++;
                te = v;
            }
            break;
        case 16:
            if (!strcasecmp(n, "Content-Encoding")) {
                codings++;
                ce = v;
            }
            break;
        case 10:
            if (!strcasecmp(n, "Connection")) {
                bool ka = h->keep_alive;
                connection_options(v, h->minor, &ka);
                if (!ka)
                    close_seen = true;
                h->keep_alive = ka;
            }
            break;
        case 6:
            if (!strcasecmp(n, "Expect"))
                h->expect_continue = h->minor == 1 && value_is(v, "100-continue");
            break;
        }
    }
    if (close_seen)
        h->keep_alive = false;
    if (h->minor == 1 ? hosts != 1 : hosts > 1) {
        *out_msg = hosts ? "more than one Host header" : "an HTTP/1.1 request needs a Host header";
        return VT_ERR_MALFORMED_REQUEST;
    }
    if (lengths > 1) {
        *out_msg = "more than one Content-Length header";
        return VT_ERR_MALFORMED_REQUEST;
    }
    if (encodings) {
        if (lengths) {
            *out_msg = "both Content-Length and Transfer-Encoding";
            return VT_ERR_MALFORMED_REQUEST;
        }
        if (h->minor == 0) {
            *out_msg = "Transfer-Encoding in an HTTP/1.0 request";
            return VT_ERR_MALFORMED_REQUEST;
        }
        if (encodings > 1 || !value_is(te, "chunked")) {
            *out_msg = "unsupported transfer coding (only chunked is accepted)";
            return VT_ERR_NOT_IMPLEMENTED;
        }
        h->chunked = true;
    }
    if (lengths) {
        size_t digits = strspn(cl, "0123456789");
        if (digits == 0 || cl[digits]) {
            *out_msg = "Content-Length is not a number";
            return VT_ERR_MALFORMED_REQUEST;
        }
        uint64_t v = 0;
        for (size_t i = 0; i < digits; i++) {
            if (v > (UINT64_C(1) << 62)) { /* far past any body limit */
                *out_msg = "request body exceeds server.max_body_bytes";
                return VT_ERR_BODY_TOO_LARGE;
            }
            v = v * 10 + (uint64_t)(cl[i] - '0');
        }
        h->has_length = true;
        h->content_length = v;
    }
    if (codings && !value_is(ce, "identity")) {
        *out_msg = "request bodies must not be sent with a Content-Encoding";
        return VT_ERR_UNSUPPORTED_CONTENT_ENCODING;
    }
    return VT_ERR_OK;
}

enum vt_err http_head_parse(char *buf, size_t len, const struct http_head_scan *scan,
                            struct http_field *fields, struct http_head *out,
                            const char **out_msg)
{
    /* The scan that found this head saw every byte of it: when it met no
     * control byte but the CRLFs (each CR followed by LF, or it failed), no
     * value holds one. */
    bool check_values = !scan || scan->saw_ctl;
    memset(out, 0, sizeof *out);
    out->fields = fields;
    char *p = buf, *end = buf + len;
    while (p + 1 < end && p[0] == '\r' && p[1] == '\n')
        p += 2;
    /* The request line. */
    char *eol = memchr(p, '\r', (size_t)(end - p));
    if (!eol) {
        *out_msg = "incomplete request head";
        return VT_ERR_MALFORMED_REQUEST;
    }
    char *m = p;
    while (p < eol && is_tchar((unsigned char)*p))
        p++;
    if (p == m || p == eol || *p != ' ') {
        *out_msg = "malformed request line (method)";
        return VT_ERR_MALFORMED_REQUEST;
    }
    *p++ = '\0';
    out->method = m;
    char *t = p;
    /* (eol is the line's first CR: the scan stops there at the latest) */
    while (!target_stop[(unsigned char)*p])
        p++;
    if (p < eol && *p != ' ') {
        *out_msg = "control character in the request target";
        return VT_ERR_MALFORMED_REQUEST;
    }
    if (p == t || p == eol) {
        *out_msg = "malformed request line (target)";
        return VT_ERR_MALFORMED_REQUEST;
    }
    *p++ = '\0';
    out->target = t;
    out->target_len = (size_t)(p - 1 - t);
    size_t vlen = (size_t)(eol - p);
    if (vlen == 8 && !memcmp(p, "HTTP/1.1", 8)) {
        out->minor = 1;
    } else if (vlen == 8 && !memcmp(p, "HTTP/1.0", 8)) {
        out->minor = 0;
    } else if (vlen == 8 && !memcmp(p, "HTTP/", 5) && p[5] >= '0' && p[5] <= '9' &&
               p[6] == '.' && p[7] >= '0' && p[7] <= '9') {
        *out_msg = "HTTP version not supported (1.0 and 1.1 are)";
        return VT_ERR_HTTP_VERSION_NOT_SUPPORTED;
    } else {
        *out_msg = vlen && memchr(p, ' ', vlen) ? "whitespace in the request target"
                                                : "malformed request line (version)";
        return VT_ERR_MALFORMED_REQUEST;
    }
    *eol = '\0';
    p = eol + 2;
    /* The fields, up to the empty line. */
    while (p < end) {
        eol = memchr(p, '\r', (size_t)(end - p));
        if (!eol) {
            *out_msg = "incomplete request head";
            return VT_ERR_MALFORMED_REQUEST;
        }
        if (eol == p)
            break;
        if (*p == ' ' || *p == '\t') {
            *out_msg = "obsolete line folding in a header field";
            return VT_ERR_MALFORMED_REQUEST;
        }
        char *name = p;
        /* Tokens up to the colon (':' and the CR at eol are not tchars). */
        while (is_tchar((unsigned char)*p))
            p++;
        if (p < eol && *p != ':') {
            *out_msg = "invalid character (or whitespace before the colon) in a header "
                       "field name";
            return VT_ERR_MALFORMED_REQUEST;
        }
        if (p == eol) {
            *out_msg = "a header line without a colon";
            return VT_ERR_MALFORMED_REQUEST;
        }
        if (p == name) {
            *out_msg = "empty header field name";
            return VT_ERR_MALFORMED_REQUEST;
        }
        char *colon = p;
        *p++ = '\0';
        while (p < eol && (*p == ' ' || *p == '\t'))
            p++;
        char *v = p, *ve = eol;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        if (check_values && has_ctl((const unsigned char *)v, (size_t)(ve - v))) {
            *out_msg = "control character (CR, NUL, ...) in a header field value";
            return VT_ERR_MALFORMED_REQUEST;
        }
        *ve = '\0';
        if (out->n_fields == VT_MAX_HEADER_FIELDS) {
            *out_msg = "more header fields than VT_MAX_HEADER_FIELDS";
            return VT_ERR_HEADERS_TOO_LARGE;
        }
        fields[out->n_fields++] =
            (struct http_field){name, v, (size_t)(ve - v), (size_t)(colon - name)};
        p = eol + 2;
    }
    return parse_framing(out, out_msg);
}

const char *http_head_field(const struct http_head *h, const char *name)
{
    size_t name_len = strlen(name);
    for (size_t i = 0; i < h->n_fields; i++)
        if (h->fields[i].name_len == name_len && http_name_eq(h->fields[i].name, name))
            return h->fields[i].value;
    return NULL;
}

/* ------------------------------------------------------------ chunked */

enum {
    CH_SIZE, CH_SIZE_MORE, CH_EXT, CH_SIZE_LF, CH_DATA, CH_DATA_CR, CH_DATA_LF,
    CH_TRAILER, CH_TRAILER_LINE, CH_TRAILER_LF, CH_END_LF
};

enum http_parse http_chunked_feed(struct http_chunked *c, const char *in, size_t n,
                                  size_t *out_used, struct strbuf *body, enum vt_err *out_code,
                                  const char **out_msg)
{
    size_t i = 0;
#define BAD(msg)                                                                           \
    do {                                                                                   \
        *out_used = i;                                                                     \
        return fail(out_code, out_msg, VT_ERR_MALFORMED_REQUEST, msg);                     \
    } while (0)
    while (i < n) {
        unsigned char ch = (unsigned char)in[i];
        switch (c->state) {
        case CH_SIZE:
        case CH_SIZE_MORE: {
            int h = text_hexval(ch);
            if (h >= 0) {
                if (++c->digits > 15)
                    BAD("chunk size too large");
                c->left = c->left * 16 + (uint64_t)h;
                c->state = CH_SIZE_MORE;
            } else if (c->state == CH_SIZE) {
                BAD("malformed chunk size");
            } else if (ch == ';') {
                c->state = CH_EXT;
                c->line = 0;
            } else if (ch == '\r') {
                c->state = CH_SIZE_LF;
            } else {
                BAD("malformed chunk size");
            }
            i++;
            break;
        }
        case CH_EXT:
            if (ch == '\r')
                c->state = CH_SIZE_LF;
            else if (ch == '\n' || is_ctl(ch) || ++c->line > VT_MAX_CHUNK_EXT_BYTES)
                BAD("malformed chunk extension");
            i++;
            break;
        case CH_SIZE_LF:
            if (ch != '\n')
                BAD("chunk size line not ended by CRLF");
            i++;
            c->digits = 0;
            if (c->left == 0) {
                c->state = CH_TRAILER;
                c->trailers = 0;
            } else {
                c->state = CH_DATA;
            }
            break;
        case CH_DATA: {
            size_t take = n - i;
            if ((uint64_t)take > c->left)
                take = (size_t)c->left;
            if (sb_add(body, in + i, take) != 0) {
                *out_used = i;
                return fail(out_code, out_msg, VT_ERR_BODY_TOO_LARGE,
                            "request body exceeds server.max_body_bytes");
            }
            i += take;
            c->left -= take;
            if (c->left == 0)
                c->state = CH_DATA_CR;
            break;
        }
        case CH_DATA_CR:
            if (ch != '\r')
                BAD("chunk data not followed by CRLF");
            c->state = CH_DATA_LF;
            i++;
            break;
        case CH_DATA_LF:
            if (ch != '\n')
                BAD("chunk data not followed by CRLF");
            c->state = CH_SIZE;
            i++;
            break;
        case CH_TRAILER:
            if (ch == '\r') {
                c->state = CH_END_LF;
            } else if (ch == ' ' || ch == '\t' || !is_tchar(ch)) {
                BAD("malformed trailer field");
            } else {
                c->state = CH_TRAILER_LINE;
                c->line = 1;
                c->trailers++;
            }
            i++;
            break;
        case CH_TRAILER_LINE:
            if (ch == '\r')
                c->state = CH_TRAILER_LF;
            else if (ch == '\n' || (is_ctl(ch) && ch != '\t'))
                BAD("malformed trailer field");
            if (++c->trailers > VT_MAX_HEADER_BYTES)
                BAD("trailer fields larger than VT_MAX_HEADER_BYTES");
            i++;
            break;
        case CH_TRAILER_LF:
            if (ch != '\n')
                BAD("trailer line not ended by CRLF");
            c->state = CH_TRAILER;
            i++;
            break;
        case CH_END_LF:
            if (ch != '\n')
                BAD("chunked body not ended by CRLF");
            i++;
            *out_used = i;
            return HTTP_PARSE_DONE;
        }
    }
#undef BAD
    *out_used = i;
    return HTTP_PARSE_MORE;
}

/* ------------------------------------------------------------ query */

/* Decodes s[0..n) ('+' is a space, %HH a byte; a bad escape stays) into out
 * (cap bytes with the NUL); the decoded length, or SIZE_MAX when it does not
 * fit. */
static size_t unescape(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (o + 1 >= cap)
            return SIZE_MAX;
        char c = s[i];
        int hi, lo;
        if (c == '+') {
            out[o++] = ' ';
        } else if (c == '%' && i + 2 < n &&
                   (hi = text_hexval((unsigned char)s[i + 1])) >= 0 &&
                   (lo = text_hexval((unsigned char)s[i + 2])) >= 0) {
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[o++] = c;
        }
    }
    out[o] = '\0';
    return o;
}

bool http_query_arg(const char *target, const char *key, char *out, size_t cap,
                    size_t *out_len)
{
    const char *q = strchr(target, '?');
    if (!q || cap == 0)
        return false;
    size_t klen = strlen(key);
    char kbuf[256];
    for (const char *p = q + 1; *p;) {
        const char *amp = strchr(p, '&');
        const char *pend = amp ? amp : p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(pend - p));
        const char *kend = eq ? eq : pend;
        size_t kl = unescape(p, (size_t)(kend - p), kbuf, sizeof kbuf);
        if (kl == klen && !memcmp(kbuf, key, klen)) {
            const char *v = eq ? eq + 1 : pend;
            size_t vl = unescape(v, (size_t)(pend - v), out, cap);
            if (vl == SIZE_MAX)
                return false;
            if (out_len)
                *out_len = vl;
            return true;
        }
        p = amp ? amp + 1 : pend;
    }
    return false;
}

/* ------------------------------------------------------------ status, date */

const char *http_reason(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

void http_date(time_t t, char out[30])
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct tm tm;
    gmtime_r(&t, &tm);
    /* 29 characters and the NUL, by construction. */
    char *o = out;
    memcpy(o, days[tm.tm_wday % 7], 3);
    o += 3;
    *o++ = ',';
    *o++ = ' ';
    *o++ = (char)('0' + tm.tm_mday / 10);
    *o++ = (char)('0' + tm.tm_mday % 10);
    *o++ = ' ';
    memcpy(o, months[tm.tm_mon % 12], 3);
    o += 3;
    *o++ = ' ';
    int y = tm.tm_year + 1900;
    if (y < 0 || y > 9999)
        y = 9999;
    *o++ = (char)('0' + y / 1000);
    *o++ = (char)('0' + y / 100 % 10);
    *o++ = (char)('0' + y / 10 % 10);
    *o++ = (char)('0' + y % 10);
    *o++ = ' ';
    int hms[3] = {tm.tm_hour, tm.tm_min, tm.tm_sec};
    for (int k = 0; k < 3; k++) {
        *o++ = (char)('0' + hms[k] / 10 % 10);
        *o++ = (char)('0' + hms[k] % 10);
        *o++ = k < 2 ? ':' : ' ';
    }
    memcpy(o, "GMT", 4);
}
