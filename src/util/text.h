/*
 * Tiny text helpers shared by the parsers (TOML, query values, Delta log
 * paths, S3 listings) and their messages.
 */
#ifndef VT_UTIL_TEXT_H
#define VT_UTIL_TEXT_H

#include <stddef.h>
#include <string.h>

/* The value of one hexadecimal digit, or -1. */
static inline int text_hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Copies s[0..len) into out for a message: control characters become '?'
 * (a hostile name cannot forge log lines) and a text that does not fit ends
 * in "...". Returns out. */
static inline const char *text_show(const char *s, size_t len, char *out, size_t outlen)
{
    size_t j = 0;
    for (size_t i = 0; i < len && j + 4 < outlen; i++) {
        unsigned char c = (unsigned char)s[i];
        out[j++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (j + 4 >= outlen && len > j) {
        memcpy(out + j, "...", 3);
        j += 3;
    }
    out[j] = '\0';
    return out;
}

/* The deepest nesting of a JSON text: brackets counted outside strings (an
 * escaped quote does not end one). Parsers with recursive descent (jansson,
 * DuckDB's JSON functions) are checked with it before they see the text. */
static inline size_t text_json_depth(const char *s, size_t n)
{
    long long depth = 0, max = 0; /* signed: a stray closer goes below 0 */
    int in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > max)
                max = depth;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return (size_t)max;
}

#endif
