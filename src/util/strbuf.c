/*
 * struct strbuf: the bounded growable buffer used for response bodies, SQL
 * text and messages. Growth doubles; the cap keeps input-driven growth bounded.
 */
#include "util/strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_init(struct strbuf *sb, size_t max)
{
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    sb->max = max ? max : SIZE_MAX;
    sb->overflow = false;
}

void sb_release(struct strbuf *sb)
{
    free(sb->buf);
    sb->buf = NULL;
    sb->len = sb->cap = 0;
}

void sb_reset(struct strbuf *sb)
{
    sb->len = 0;
    if (sb->buf)
        sb->buf[0] = '\0';
}

int sb_grow_slow(struct strbuf *sb, size_t extra)
{
    size_t max = sb->max ? sb->max : SIZE_MAX;
    if (extra > max || sb->len > max - extra) {
        sb->overflow = true;
        return -1;
    }
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap)
        return 0;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(sb->buf, cap);
    if (!p) {
        sb->overflow = true;
        return -1;
    }
    sb->buf = p;
    sb->cap = cap;
    return 0;
}

int sb_add_slow(struct strbuf *sb, const void *data, size_t n)
{
    if (sb_grow_slow(sb, n) < 0)
        return -1;
    if (n)
        memcpy(sb->buf + sb->len, data, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
    return 0;
}

int sb_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return -1;
    if ((size_t)n < sizeof small)
        return sb_add(sb, small, (size_t)n);
    if (sb_grow(sb, (size_t)n) < 0)
        return -1;
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
    return 0;
}

int sb_addf(struct strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = sb_vaddf(sb, fmt, ap);
    va_end(ap);
    return r;
}

char *sb_detach(struct strbuf *sb, size_t *out_len)
{
    char *p = sb->buf;
    if (out_len)
        *out_len = sb->len;
    if (!p) {
        p = malloc(1);
        if (p)
            p[0] = '\0';
    }
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    return p;
}

/* A high bit in each byte of `w` that needs an escape inside a JSON string
 * (a control byte, '"' or '\\'). Bits may also be set above a true match (the
 * borrow of the subtraction), never below it, so the lowest set bit marks the
 * first byte to escape exactly (the word is read little-endian). */
static uint64_t json_escape_mask(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t ctl = (w - ones * 0x20) & ~w;
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
    q = (q - ones) & ~q;
    b = (b - ones) & ~b;
    return (ctl | q | b) & highs;
}

static char *json_escape_byte(char *o, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    *o++ = '\\';
    switch (c) {
    case '"': *o++ = '"'; break;
    case '\\': *o++ = '\\'; break;
    case '\n': *o++ = 'n'; break;
    case '\r': *o++ = 'r'; break;
    case '\t': *o++ = 't'; break;
    case '\b': *o++ = 'b'; break;
    case '\f': *o++ = 'f'; break;
    default:
        *o++ = 'u';
        *o++ = '0';
        *o++ = '0';
        *o++ = hex[c >> 4];
        *o++ = hex[c & 15];
    }
    return o;
}

int sb_add_json_string(struct strbuf *sb, const char *s, size_t n)
{
    /* worst case every byte becomes \u00XX */
    if (sb_grow(sb, n * 6 + 2) < 0)
        return -1;
    char *o = sb->buf + sb->len;
    *o++ = '"';
    size_t i = 0;
    /* Eight bytes at a time: copy the word, keep its clean prefix, escape the
     * byte after it. The text of a JSON document (the MCP tools' text items)
     * has a quote every few bytes, so most words end early; still about half
     * the instructions of a byte loop. The reservation above leaves room for
     * the 8-byte store: at least 6 * (n - i) + 1 bytes remain. */
    while (n - i >= 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        memcpy(o, &w, 8);
        uint64_t m = json_escape_mask(w);
        if (!m) {
            o += 8;
            i += 8;
            continue;
        }
        unsigned k = (unsigned)__builtin_ctzll(m) >> 3;
        o += k;
        i += k;
        o = json_escape_byte(o, (unsigned char)s[i++]);
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            *o++ = (char)c;
        else
            o = json_escape_byte(o, c);
    }
    *o++ = '"';
    sb->len = (size_t)(o - sb->buf);
    sb->buf[sb->len] = '\0';
    return 0;
}

static int add_quoted(struct strbuf *sb, const char *s, char q)
{
    if (sb_addc(sb, q) < 0)
        return -1;
    for (; *s; s++) {
        if (*s == q && sb_addc(sb, q) < 0)
            return -1;
        if (sb_addc(sb, *s) < 0)
            return -1;
    }
    return sb_addc(sb, q);
}

int sb_add_sql_ident(struct strbuf *sb, const char *s)
{
    return add_quoted(sb, s, '"');
}

int sb_add_sql_string(struct strbuf *sb, const char *s)
{
    return add_quoted(sb, s, '\'');
}
