/*
 * Tiny text helpers shared by the parsers (TOML, query values, Delta log
 * paths, S3 listings).
 */
#ifndef VT_UTIL_TEXT_H
#define VT_UTIL_TEXT_H

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

#endif
