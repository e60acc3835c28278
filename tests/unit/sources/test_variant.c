/*
 * Variant binary encoding -> JSON text (src/sources/variant.c): every
 * primitive type of Parquet's VariantEncoding.md, short strings, objects
 * (field ids into the dictionary, values out of order, large counts, wide
 * offsets), arrays, nesting, and malformed input (truncation, ids outside the
 * dictionary, offsets past the end, depth, the output cap, invalid UTF-8),
 * with byte strings written here from the specification.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/sources_internal.h"
#include "testlib.h"
#include "util/limits.h"

/* Metadata with keys "a", "b", "c" (1-byte offsets). */
static const uint8_t META[] = {0x11, 3, 0, 1, 2, 3, 'a', 'b', 'c'};
static const uint8_t META_EMPTY[] = {0x01, 0, 0};

static void expect(const uint8_t *v, size_t n, const char *want)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    const char *why = NULL;
    int rc = source_variant_json(META, sizeof META, v, n, &sb, &why);
    if (rc < 0)
        fprintf(stderr, "  failed: %s (want %s)\n", why, want);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_STR(sb.buf ? sb.buf : "", want);
    sb_release(&sb);
}

static void refuse(const uint8_t *meta, size_t ml, const uint8_t *v, size_t n, const char *why_part)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_adds(&sb, "kept");
    const char *why = NULL;
    CHECK_EQ_INT(source_variant_json(meta, ml, v, n, &sb, &why), -1);
    CHECK_CONTAINS(why, why_part);
    CHECK_EQ_STR(sb.buf, "kept"); /* nothing appended */
    sb_release(&sb);
}

#define P(id) ((uint8_t)((id) << 2)) /* primitive header byte */

TEST(primitives)
{
    expect((uint8_t[]){P(0)}, 1, "null");
    expect((uint8_t[]){P(1)}, 1, "true");
    expect((uint8_t[]){P(2)}, 1, "false");
    expect((uint8_t[]){P(3), 0xFE}, 2, "-2");
    expect((uint8_t[]){P(4), 0x00, 0x80}, 3, "-32768");
    expect((uint8_t[]){P(5), 0x78, 0x56, 0x34, 0x12}, 5, "305419896");
    expect((uint8_t[]){P(6), 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}, 9,
           "9223372036854775807");
    /* 1.5 and NaN as IEEE little-endian doubles; 0.25f as a float. */
    expect((uint8_t[]){P(7), 0, 0, 0, 0, 0, 0, 0xF8, 0x3F}, 9, "1.5");
    expect((uint8_t[]){P(7), 0, 0, 0, 0, 0, 0, 0xF8, 0x7F}, 9, "null");
    expect((uint8_t[]){P(14), 0, 0, 0x80, 0x3E}, 5, "0.25");
    /* decimal4 scale 2 of -12345, decimal8 scale 0, decimal16 scale 3 of 1. */
    expect((uint8_t[]){P(8), 2, 0xC7, 0xCF, 0xFF, 0xFF}, 6, "-123.45");
    expect((uint8_t[]){P(9), 0, 7, 0, 0, 0, 0, 0, 0, 0}, 10, "7");
    expect((uint8_t[]){P(10), 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 18, "0.001");
    /* date 19723 = 2024-01-01; timestamps of 2024-01-01T00:00:01.5 (micros,
     * with and without zone), nanos; time 01:02:03. */
    expect((uint8_t[]){P(11), 0x0B, 0x4D, 0, 0}, 5, "\"2024-01-01\"");
    uint8_t ts[9] = {P(12)};
    int64_t us = 1704067201500000LL;
    memcpy(ts + 1, &us, 8);
    expect(ts, 9, "\"2024-01-01T00:00:01.5Z\"");
    ts[0] = P(13);
    expect(ts, 9, "\"2024-01-01T00:00:01.5\"");
    int64_t ns = us * 1000 + 7;
    memcpy(ts + 1, &ns, 8);
    ts[0] = P(18);
    expect(ts, 9, "\"2024-01-01T00:00:01.500000007Z\"");
    int64_t t = 3723000000LL;
    memcpy(ts + 1, &t, 8);
    ts[0] = P(17);
    expect(ts, 9, "\"01:02:03\"");
    /* binary (base64), long string with escapes, short string, uuid. */
    expect((uint8_t[]){P(15), 3, 0, 0, 0, 'a', 'b', 'c'}, 8, "\"YWJj\"");
    expect((uint8_t[]){P(16), 4, 0, 0, 0, 'a', '"', '\n', 'z'}, 9, "\"a\\\"\\nz\"");
    expect((uint8_t[]){(5 << 2) | 1, 'h', 'e', 'l', 'l', 'o'}, 6, "\"hello\"");
    expect((uint8_t[]){P(20), 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45,
                       0x67, 0x89, 0xab, 0xcd, 0xef},
           17, "\"12345678-9abc-def0-0123-456789abcdef\"");
    /* Invalid UTF-8 in a string: U+FFFD, the rest kept. */
    expect((uint8_t[]){(3 << 2) | 1, 'a', 0xFF, 'b'}, 4, "\"a\xEF\xBF\xBD" "b\"");
    /* A value followed by bytes it does not own: they are ignored. */
    expect((uint8_t[]){P(1), 0x55, 0x55}, 3, "true");
}

TEST(objects_and_arrays)
{
    /* {"b": 1, "c": [true, "x"], "a": null}: ids in key order a, b, c,
     * values stored out of order (b's value first). */
    static const uint8_t obj[] = {
        0x02,              /* object, 1-byte ids and offsets, small */
        3,                 /* elements */
        0, 1, 2,           /* field ids a, b, c */
        10, 0, 2, 11,      /* offsets: a at 10, b at 0, c at 2, end 11 */
        P(3), 1,           /* b: int8 1 */
        0x03, 2, 0, 1, 3, P(1), 0x05, 'x', /* c: array [true, "x"] */
        P(0),              /* a: null */
    };
    expect(obj, sizeof obj, "{\"a\":null,\"b\":1,\"c\":[true,\"x\"]}");
    /* Empty object and array; a large array (4-byte count, 2-byte offsets). */
    expect((uint8_t[]){0x02, 0, 0}, 3, "{}");
    expect((uint8_t[]){0x03, 0, 0}, 3, "[]");
    expect((uint8_t[]){(uint8_t)(((1 << 2) | 1) << 2 | 3), 2, 0, 0, 0, 0, 0, 1, 0, 2, 0, P(1),
                       P(2)},
           13, "[true,false]");
    /* 4-byte metadata offsets. */
    static const uint8_t meta4[] = {0xC1, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 'k', 'y'};
    struct strbuf sb;
    sb_init(&sb, 0);
    const char *why;
    static const uint8_t o1[] = {0x02, 1, 0, 0, 2, P(3), 9};
    CHECK_EQ_INT(source_variant_json(meta4, sizeof meta4, o1, sizeof o1, &sb, &why), 0);
    CHECK_EQ_STR(sb.buf, "{\"ky\":9}");
    sb_release(&sb);
}

TEST(malformed_input_is_refused)
{
    refuse((uint8_t[]){0x02, 0, 0}, 3, (uint8_t[]){P(0)}, 1, "version");
    refuse(META, 3, (uint8_t[]){P(0)}, 1, "metadata");
    refuse(META, sizeof META, (uint8_t[]){0}, 0, "empty");
    refuse(META, sizeof META, (uint8_t[]){P(5), 1, 2}, 3, "truncated");
    refuse(META, sizeof META, (uint8_t[]){P(21)}, 1, "unknown primitive");
    refuse(META, sizeof META, (uint8_t[]){P(8), 39, 1, 0, 0, 0}, 6, "scale");
    refuse(META, sizeof META, (uint8_t[]){(10 << 2) | 1, 'a'}, 2, "short string");
    refuse(META, sizeof META, (uint8_t[]){P(16), 9, 0, 0, 0, 'a'}, 6, "truncated");
    /* An id outside the dictionary; an offset past the end; too few bytes
     * for the offsets. */
    refuse(META, sizeof META, (uint8_t[]){0x02, 1, 7, 0, 1, P(0)}, 6, "dictionary");
    refuse(META, sizeof META, (uint8_t[]){0x02, 1, 0, 0, 5, P(0)}, 6, "offset");
    refuse(META, sizeof META, (uint8_t[]){0x03, 200, 0, 1}, 4, "truncated");
    refuse(META_EMPTY, sizeof META_EMPTY, (uint8_t[]){0x02, 1, 0, 0, 1, P(0)}, 6, "dictionary");
    /* Nesting deeper than the limit: [[[[...null...]]]]. */
    size_t depth = VT_VARIANT_MAX_DEPTH + 2, n = depth * 4 + 1;
    uint8_t *deep = malloc(n);
    for (size_t i = 0; i < depth; i++) {
        uint8_t *p = deep + i * 4;
        p[0] = 0x03;
        p[1] = 1;
        p[2] = 0;
        p[3] = (uint8_t)(n - i * 4 - 4 > 255 ? 255 : n - i * 4 - 4);
    }
    deep[n - 1] = P(0);
    refuse(META, sizeof META, deep, n, "");
    free(deep);
    /* An array whose 255 elements all point at the same nested array, six
     * levels deep (a value reused everywhere multiplies the text: 255^6
     * nulls from 3 KB): stopped by the output cap. */
    static uint8_t bomb[8 * 600];
    size_t len = 1;
    bomb[0] = P(0);
    for (int level = 0; level < 6; level++) {
        size_t head = 2 + 256 * 2;
        memmove(bomb + head, bomb, len);
        bomb[0] = 0x07; /* array, 2-byte offsets, 1-byte count */
        bomb[1] = 255;
        memset(bomb + 2, 0, 255 * 2); /* every element at offset 0 */
        bomb[2 + 255 * 2] = (uint8_t)len;
        bomb[3 + 255 * 2] = (uint8_t)(len >> 8);
        len += head;
    }
    struct strbuf sb;
    sb_init(&sb, 1 << 16);
    const char *why;
    CHECK_EQ_INT(source_variant_json(META, sizeof META, bomb, len, &sb, &why), -1);
    sb_release(&sb);
}

RUN_TESTS(TEST_CASE(primitives), TEST_CASE(objects_and_arrays),
          TEST_CASE(malformed_input_is_refused))
