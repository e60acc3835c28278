#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "testlib.h"
#include "util/arena.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/errors.h"

TEST(caps_at_max)
{
    struct strbuf sb;
    sb_init(&sb, 8);
    CHECK_EQ_INT(sb_adds(&sb, "12345678"), 0);
    CHECK_EQ_INT(sb_addc(&sb, 'x'), -1);
    CHECK(sb.overflow);
    CHECK_EQ_STR(sb.buf, "12345678");
    sb_release(&sb);
}

TEST(json_escapes)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_add_json_string(&sb, "a\"b\\\n\x01", 6);
    CHECK_EQ_STR(sb.buf, "\"a\\\"b\\\\\\n\\u0001\"");
    sb_release(&sb);
}

/* The word-at-a-time escaper against a byte-at-a-time reference, on random
 * strings dense in bytes that need escapes (and bytes >= 0x80, which do not),
 * at every length and alignment around the 8-byte words. */
static void reference_json_string(struct strbuf *sb, const unsigned char *s, size_t n)
{
    sb_addc(sb, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\')
            sb_addf(sb, "\\%c", c);
        else if (c == '\n')
            sb_adds(sb, "\\n");
        else if (c == '\r')
            sb_adds(sb, "\\r");
        else if (c == '\t')
            sb_adds(sb, "\\t");
        else if (c == '\b')
            sb_adds(sb, "\\b");
        else if (c == '\f')
            sb_adds(sb, "\\f");
        else if (c < 0x20)
            sb_addf(sb, "\\u%04x", c);
        else
            sb_addc(sb, (char)c);
    }
    sb_addc(sb, '"');
}

TEST(json_escapes_match_reference)
{
    static const unsigned char alphabet[] = {'a', 'Z', '"', '\\', 0x00, 0x01, 0x1f, 0x20,
                                             0x7f, 0x80, 0xc3, 0xff, '\n', ':', ','};
    uint64_t x = 88172645463325252ULL;
    unsigned char in[80];
    int mismatches = 0;
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(round % 41);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            in[i] = (x >> 60) < 8 ? 'q' : alphabet[x % sizeof alphabet];
        }
        size_t off = (size_t)(round % 7); /* shift to vary alignment */
        unsigned char buf[96];
        memcpy(buf + off, in, n);
        struct strbuf got, want;
        sb_init(&got, 0);
        sb_init(&want, 0);
        sb_add_json_string(&got, (const char *)buf + off, n);
        reference_json_string(&want, in, n);
        if (got.len != want.len || memcmp(got.buf, want.buf, got.len) != 0)
            mismatches++;
        sb_release(&got);
        sb_release(&want);
    }
    CHECK_EQ_INT(mismatches, 0);
}

TEST(sql_quoting)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_add_sql_ident(&sb, "we\"ird");
    sb_adds(&sb, " ");
    sb_add_sql_string(&sb, "it's");
    CHECK_EQ_STR(sb.buf, "\"we\"\"ird\" 'it''s'");
    sb_release(&sb);
}

TEST(ulid_shape)
{
    char a[27], b[27];
    ulid_new(a);
    ulid_new(b);
    CHECK_EQ_INT(strlen(a), 26);
    CHECK(strcmp(a, b) != 0);
    CHECK(a[0] <= '7'); /* top bits are zero */
}

/* time_format_rfc3339 writes by hand what the snprintf layout wrote. */
TEST(rfc3339_matches_reference)
{
    int64_t samples[4000];
    size_t n = 0;
    samples[n++] = 0;
    samples[n++] = 999;
    samples[n++] = 1000;
    samples[n++] = 999999;
    samples[n++] = 253402300799999999LL; /* 9999-12-31T23:59:59.999999 */
    samples[n++] = 1795000000123456LL;
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    while (n < sizeof samples / sizeof samples[0]) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        samples[n++] = (int64_t)(x % 253402300800000000ULL);
    }
    int mismatches = 0;
    for (size_t i = 0; i < n; i++) {
        char got[32], want[96];
        time_format_rfc3339(samples[i], got);
        time_t secs = (time_t)(samples[i] / 1000000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (int)((samples[i] / 1000) % 1000));
        if (strcmp(got, want) != 0 && mismatches++ < 3)
            fprintf(stderr, "rfc3339 %lld: %s != %s\n", (long long)samples[i], got, want);
    }
    CHECK_EQ_INT(mismatches, 0);
    char t[32];
    time_format_rfc3339(1795000000123456LL, t);
    CHECK_EQ_STR(t, "2026-11-18T11:06:40.123Z");
}

TEST(error_first_wins)
{
    struct vt_error e = {0};
    vt_error_set(&e, VT_ERR_UNKNOWN_COLUMN, "unknown column \"%s\"", "x");
    vt_error_set(&e, VT_ERR_INTERNAL, "later");
    CHECK_EQ_INT(e.code, VT_ERR_UNKNOWN_COLUMN);
    CHECK_EQ_STR(vt_error_message(&e), "unknown column \"x\"");
    CHECK_EQ_INT(vt_err_status(VT_ERR_BODY_TOO_LARGE), 413);
    CHECK_EQ_STR(vt_err_code(VT_ERR_TIMEOUT), "timeout");
}

/* arena_reset keeps the first block only, empty: the next allocations start
 * at its beginning again, bigger ones get new blocks, the cap counts from
 * zero. */
TEST(arena_reset_keeps_the_first_block)
{
    struct arena a;
    arena_init(&a, 64 * 1024);
    char *first = arena_alloc(&a, 100);
    CHECK(first != NULL);
    for (int i = 0; i < 40; i++)
        CHECK(arena_alloc(&a, 1000) != NULL); /* past 4 KB: more blocks */
    CHECK(arena_alloc(&a, 64 * 1024) == NULL); /* over the cap */
    arena_reset(&a);
    CHECK_EQ_INT(a.used_total, 0);
    char *again = arena_alloc(&a, 16);
    CHECK(again == first);
    memset(again, 'x', 16);
    char *big = arena_alloc(&a, 60 * 1024); /* fits the cap again */
    CHECK(big != NULL);
    if (big)
        memset(big, 'y', 60 * 1024);
    arena_reset(&a);
    CHECK(arena_alloc(&a, 1) == first);
    arena_release(&a);
    arena_reset(&a); /* an empty arena */
    CHECK(a.head == NULL);
    CHECK(arena_alloc(&a, 8) != NULL);
    arena_release(&a);
}

/* The inline fast path of arena_alloc against the rules of the slow one:
 * 16-byte alignment, 0 bytes still a distinct 16, the cap met exactly and
 * then refused by one byte, sizes that would wrap when rounded refused, and
 * an allocation that fills the block to its last byte. */
TEST(arena_inline_path)
{
    struct arena a;
    arena_init(&a, 4096 + 64);
    char *p0 = arena_alloc(&a, 0);
    char *p1 = arena_alloc(&a, 1);
    CHECK(p0 && p1 && p1 - p0 == 16);
    CHECK(((uintptr_t)p0 & 15) == 0 && ((uintptr_t)p1 & 15) == 0);
    CHECK(arena_alloc(&a, (size_t)-1) == NULL);
    CHECK(arena_alloc(&a, (size_t)-16) == NULL);
    CHECK_EQ_INT((int)a.used_total, 32);
    char *rest = arena_alloc(&a, 4096 - 32); /* the first block to its end */
    CHECK(rest == p0 + 32);
    CHECK(a.next == a.limit);
    CHECK(arena_alloc(&a, 64) != NULL); /* a new block, the cap met exactly */
    CHECK_EQ_INT((int)a.used_total, 4096 + 64);
    CHECK(arena_alloc(&a, 1) == NULL); /* one byte over the cap */
    arena_release(&a);
    CHECK(a.next == NULL && a.limit == NULL);
}

/* The inline appends and their out-of-line growth: the bytes and the NUL
 * after them, whatever crosses the capacity. */
TEST(strbuf_inline_appends)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    char want[600];
    size_t n = 0;
    for (int i = 0; i < 200; i++) {
        char c = (char)('a' + i % 26);
        if (i % 3 == 0) {
            CHECK_EQ_INT(sb_addc(&sb, c), 0);
            want[n++] = c;
        } else {
            CHECK_EQ_INT(sb_adds(&sb, i % 3 == 1 ? "xy" : ""), 0);
            if (i % 3 == 1) {
                want[n++] = 'x';
                want[n++] = 'y';
            }
        }
        CHECK(sb.len == n && sb.buf[n] == '\0' && memcmp(sb.buf, want, n) == 0);
    }
    sb_release(&sb);
    sb_init(&sb, 5);
    CHECK_EQ_INT(sb_adds(&sb, "abcd"), 0);
    CHECK_EQ_INT(sb_addc(&sb, 'e'), 0);
    CHECK_EQ_INT(sb_addc(&sb, 'f'), -1);
    CHECK_EQ_INT(sb_adds(&sb, "g"), -1);
    CHECK(sb.overflow);
    CHECK_EQ_STR(sb.buf, "abcde");
    sb_release(&sb);
}

RUN_TESTS(TEST_CASE(caps_at_max), TEST_CASE(arena_reset_keeps_the_first_block),
          TEST_CASE(arena_inline_path), TEST_CASE(strbuf_inline_appends), TEST_CASE(json_escapes), TEST_CASE(json_escapes_match_reference),
          TEST_CASE(sql_quoting),
          TEST_CASE(ulid_shape), TEST_CASE(rfc3339_matches_reference), TEST_CASE(error_first_wins))
