/*
 * Accept-Encoding parsing and the compress-or-not decision for responses.
 * Pure functions on header strings: the server adapter (src/http/server.c)
 * asks http_encoding_choose() once per response and then streams the body
 * through src/http/compress.c. Nothing here allocates, so a hostile header
 * costs one linear scan at most.
 */
#include "http/encoding.h"

#include <stddef.h>
#include <string.h>

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* tchar from RFC 9110 §5.6.2 */
static bool is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive comparison of s[0..n) with the lower-case literal `lit`. */
static bool token_is(const char *s, size_t n, const char *lit)
{
    size_t ln = strlen(lit);
    if (n != ln)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lower(s[i]) != lit[i])
            return false;
    return true;
}

/*
 * qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )  (RFC 9110 §12.4.2)
 * Returns thousandths, or -1 when s[0..n) is not exactly a qvalue. Strict on
 * purpose: "q=2" or "q=0.5x" is a broken client, and skipping the element is
 * safer than guessing what it meant.
 */
static int parse_qvalue(const char *s, size_t n)
{
    if (n == 0 || (s[0] != '0' && s[0] != '1'))
        return -1;
    int whole = s[0] - '0';
    if (n == 1)
        return whole * 1000;
    if (s[1] != '.' || n > 5)
        return -1;
    int frac = 0, scale = 100;
    for (size_t i = 2; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        frac += (s[i] - '0') * scale;
        scale /= 10;
    }
    if (whole == 1 && frac != 0)
        return -1;
    return whole * 1000 + frac;
}

/* Skips a quoted-string starting at *p (which is '"'); false if unterminated. */
static bool skip_quoted(const char **pp)
{
    const char *p = *pp + 1;
    for (; *p; p++) {
        if (*p == '\\') {
            if (!p[1])
                return false;
            p++;
        } else if (*p == '"') {
            *pp = p + 1;
            return true;
        }
    }
    return false;
}

/*
 * Parses the parameters after a coding, p pointing just past the token and its
 * trailing OWS. On success stores the q-value (1000 when absent) and leaves *pp
 * at the ',' or NUL that ends the element. Unknown well-formed parameters are
 * skipped: the grammar only has "q", but ignoring an extension is kinder than
 * dropping the coding.
 */
static bool parse_params(const char **pp, int *out_q)
{
    const char *p = *pp;
    int q = 1000;
    while (*p == ';') {
        p++;
        while (is_ows(*p))
            p++;
        const char *name = p;
        while (is_tchar((unsigned char)*p))
            p++;
        size_t name_len = (size_t)(p - name);
        if (name_len == 0 || *p != '=')
            return false;
        p++;
        const char *val = p;
        if (*p == '"') {
            if (!skip_quoted(&p))
                return false;
        } else {
            while (is_tchar((unsigned char)*p))
                p++;
        }
        size_t val_len = (size_t)(p - val);
        if (val_len == 0)
            return false;
        if (token_is(name, name_len, "q")) {
            q = parse_qvalue(val, val_len);
            if (q < 0)
                return false;
        }
        while (is_ows(*p))
            p++;
    }
    if (*p != ',' && *p != '\0')
        return false;
    *pp = p;
    *out_q = q;
    return true;
}

static void record(int *slot, int q)
{
    if (*slot == HTTP_Q_UNLISTED || q < *slot)
        *slot = q;
}

void http_accept_encoding_parse(const char *value, struct http_accept_encoding *out)
{
    out->present = value != NULL;
    out->star_q = HTTP_Q_UNLISTED;
    for (int i = 0; i < HTTP_ENC__COUNT; i++)
        out->q[i] = HTTP_Q_UNLISTED;
    if (!value)
        return;

    const char *p = value;
    for (;;) {
        /* empty list elements and OWS are allowed between commas (§5.6.1) */
        while (is_ows(*p) || *p == ',')
            p++;
        if (!*p)
            break;
        const char *tok = p;
        while (is_tchar((unsigned char)*p))
            p++;
        size_t tok_len = (size_t)(p - tok);
        while (is_ows(*p))
            p++;
        int q;
        if (tok_len == 0 || !parse_params(&p, &q)) {
            /* malformed element: drop it and resync at the next comma */
            while (*p && *p != ',')
                p++;
            continue;
        }
        if (token_is(tok, tok_len, "gzip") || token_is(tok, tok_len, "x-gzip"))
            record(&out->q[HTTP_ENC_GZIP], q);
        else if (token_is(tok, tok_len, "br"))
            record(&out->q[HTTP_ENC_BR], q);
        else if (token_is(tok, tok_len, "zstd"))
            record(&out->q[HTTP_ENC_ZSTD], q);
        else if (token_is(tok, tok_len, "identity"))
            record(&out->q[HTTP_ENC_IDENTITY], q);
        else if (token_is(tok, tok_len, "*"))
            record(&out->star_q, q);
        /* other codings (deflate, compress, ...) we never produce */
    }
}

int http_accept_media_q(const char *value, const char *type)
{
    int q_out = HTTP_Q_UNLISTED;
    if (!value)
        return q_out;
    const char *p = value;
    for (;;) {
        while (is_ows(*p) || *p == ',')
            p++;
        if (!*p)
            break;
        /* media-range = type "/" subtype, both tokens */
        const char *tok = p;
        while (is_tchar((unsigned char)*p))
            p++;
        bool slash = *p == '/';
        if (slash) {
            p++;
            const char *sub = p;
            while (is_tchar((unsigned char)*p))
                p++;
            slash = p > sub;
        }
        size_t tok_len = (size_t)(p - tok);
        while (is_ows(*p))
            p++;
        int q;
        if (!slash || !parse_params(&p, &q)) {
            while (*p && *p != ',')
                p++;
            continue;
        }
        if (token_is(tok, tok_len, type))
            record(&q_out, q);
    }
    return q_out;
}

enum http_encoding http_accept_encoding_pick(const struct http_accept_encoding *ae)
{
    if (!ae->present)
        return HTTP_ENC_IDENTITY;

    /* Walk from most to least preferred; a later coding must be strictly
     * better to win, which is the tie-break. */
    static const enum http_encoding order[] = {HTTP_ENC_ZSTD, HTTP_ENC_BR, HTTP_ENC_GZIP};
    enum http_encoding best = HTTP_ENC_IDENTITY;
    int best_q = 0;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        int q = ae->q[order[i]];
        if (q == HTTP_Q_UNLISTED)
            q = ae->star_q == HTTP_Q_UNLISTED ? 0 : ae->star_q;
        if (q > best_q) {
            best = order[i];
            best_q = q;
        }
    }
    /* identity competes only when the client gave it a q (by name or via *);
     * otherwise it is the fallback, which `best` already is when best_q == 0. */
    int qi = ae->q[HTTP_ENC_IDENTITY];
    if (qi == HTTP_Q_UNLISTED)
        qi = ae->star_q;
    if (qi != HTTP_Q_UNLISTED && qi > best_q)
        return HTTP_ENC_IDENTITY;
    return best;
}

bool http_content_type_compressible(const char *ct)
{
    if (!ct)
        return false;
    /* the API's own type, on every answer: no token scan */
    if (ct[0] == 'a' && strcmp(ct, "application/json") == 0)
        return true;
    while (is_ows(*ct))
        ct++;
    const char *slash = NULL, *p = ct;
    for (; *p && *p != ';' && !is_ows(*p); p++)
        if (*p == '/' && !slash)
            slash = p;
    if (!slash || slash == ct || slash + 1 == p)
        return false;
    size_t type_len = (size_t)(slash - ct);
    const char *sub = slash + 1;
    size_t sub_len = (size_t)(p - sub);

    if (token_is(ct, type_len, "text"))
        return true;
    /* structured-syntax suffixes (RFC 6838 §4.2.8): anything+json, anything+xml,
     * which also covers image/svg+xml and application/problem+json */
    if (sub_len > 5 && (token_is(sub + sub_len - 5, 5, "+json")))
        return true;
    if (sub_len > 4 && (token_is(sub + sub_len - 4, 4, "+xml")))
        return true;
    if (!token_is(ct, type_len, "application"))
        return false;
    static const char *const app[] = {"json", "x-ndjson", "ndjson", "javascript",
                                      "xml",  "csv",      "yaml",   "x-yaml"};
    for (size_t i = 0; i < sizeof app / sizeof app[0]; i++)
        if (token_is(sub, sub_len, app[i]))
            return true;
    /* Everything else, notably application/vnd.apache.arrow.stream and
     * application/vnd.apache.parquet: Parquet pages are already compressed,
     * Arrow IPC is read zero-copy by clients, and both are binary. */
    return false;
}

bool http_encoding_should_vary(bool compress_enabled, const char *content_type)
{
    return compress_enabled && http_content_type_compressible(content_type);
}

enum http_encoding http_encoding_choose(const char *accept_encoding, bool compress_enabled,
                                        const char *content_type, uint64_t body_len)
{
    /* (the length first: the cheaper test, and most API answers are small) */
    if (!compress_enabled ||
        (body_len != HTTP_BODY_LEN_UNKNOWN && body_len < HTTP_COMPRESS_MIN_BYTES) ||
        !http_content_type_compressible(content_type))
        return HTTP_ENC_IDENTITY;
    struct http_accept_encoding ae;
    http_accept_encoding_parse(accept_encoding, &ae);
    return http_accept_encoding_pick(&ae);
}

const char *http_encoding_header_value(enum http_encoding enc)
{
    switch (enc) {
    case HTTP_ENC_GZIP: return "gzip";
    case HTTP_ENC_BR: return "br";
    case HTTP_ENC_ZSTD: return "zstd";
    default: return NULL;
    }
}

const char *http_encoding_name(enum http_encoding enc)
{
    const char *h = http_encoding_header_value(enc);
    return h ? h : "identity";
}
