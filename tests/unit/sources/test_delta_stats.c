/*
 * Delta per-file statistics (src/sources/delta_stats.c): add.stats texts as
 * Spark and delta-rs write them turned into the bounds lazy generations plan
 * with. The rule under test: a bound a writer may have weakened (a truncated
 * string maximum, a millisecond timestamp maximum) never rules out a row
 * that is there, and what is not understood is unknown.
 */
#include <string.h>

#include "sources/delta.h"
#include "sources/sources_internal.h"
#include "testlib.h"

#define N 8
static const char *const KEYS[N] = {"id", "name", "ts", "ntz", "d", "price", "col-5e1b", NULL};
static const char *const TYPES[N] = {"BIGINT", "VARCHAR", "TIMESTAMP WITH TIME ZONE",
                                     "TIMESTAMP", "DATE", "DECIMAL(10,2)", "INTEGER",
                                     "INTEGER"};

struct parsed {
    bool ok;
    int64_t rows;
    char *mins[N], *maxs[N];
    int64_t nulls[N];
};

static struct parsed parse(const char *text)
{
    struct parsed p;
    p.ok = delta_stats_parse(text, strlen(text), KEYS, TYPES, N, &p.rows, p.mins, p.maxs,
                             p.nulls);
    return p;
}

static void release(struct parsed *p)
{
    for (int c = 0; c < N; c++) {
        free(p->mins[c]);
        free(p->maxs[c]);
    }
}

TEST(spark_stats)
{
    struct parsed p = parse(
        "{\"numRecords\":10,\"minValues\":{\"id\":1,\"name\":\"alpha\","
        "\"ts\":\"2023-03-03T02:39:38.123-08:00\",\"ntz\":\"2023-03-03T02:39:38.123\","
        "\"d\":\"2021-01-31\",\"price\":1.5,\"col-5e1b\":-3},"
        "\"maxValues\":{\"id\":9,\"name\":\"omega\",\"ts\":\"2023-03-04T00:00:00.000Z\","
        "\"ntz\":\"2023-03-04T00:00:00.5\",\"d\":\"2021-02-01\",\"price\":99.25,"
        "\"col-5e1b\":7},\"nullCount\":{\"id\":0,\"name\":2,\"ts\":0,\"ntz\":1,\"d\":0,"
        "\"price\":0,\"col-5e1b\":10},\"tightBounds\":true}");
    CHECK(p.ok);
    CHECK_EQ_INT(p.rows, 10);
    CHECK_EQ_STR(p.mins[0], "1");
    CHECK_EQ_STR(p.maxs[0], "9");
    CHECK_EQ_STR(p.mins[1], "alpha");
    CHECK_EQ_STR(p.maxs[1], "omega");
    /* The zone applied; the maximum widened over its unwritten digits. */
    CHECK_EQ_STR(p.mins[2], "2023-03-03 10:39:38.123000");
    CHECK_EQ_STR(p.maxs[2], "2023-03-04 00:00:00.000999");
    CHECK_EQ_STR(p.mins[3], "2023-03-03 02:39:38.123000");
    CHECK_EQ_STR(p.maxs[3], "2023-03-04 00:00:00.599999");
    CHECK_EQ_STR(p.mins[4], "2021-01-31");
    CHECK_EQ_STR(p.maxs[4], "2021-02-01");
    CHECK_EQ_STR(p.mins[5], "1.5");
    CHECK_EQ_STR(p.maxs[5], "99.25");
    /* A physical (column-mapped) name. */
    CHECK_EQ_STR(p.mins[6], "-3");
    CHECK_EQ_INT(p.nulls[1], 2);
    CHECK_EQ_INT(p.nulls[6], 10);
    CHECK(p.mins[7] == NULL && p.nulls[7] == -1);
    /* What the lazy generation reads back. */
    struct lazy_val lo = lazy_parse_val(LAZY_C_TS, p.mins[2], strlen(p.mins[2]));
    struct lazy_val at = lazy_parse_val(LAZY_C_TS, "2023-03-03 10:39:38.123+00", 26);
    CHECK(lo.kind && lazy_cmp(LAZY_C_TS, &lo, &at) == 0);
    release(&p);
}

TEST(weakened_bounds_are_unknown)
{
    /* A 32-character maximum may be a prefix: only the minimum is kept. A
     * timestamp without a zone for a zoned column, a fraction for an
     * integer column, a string for a number: unknown. Null counts above
     * numRecords are not believed. */
    struct parsed p = parse(
        "{\"numRecords\":3,\"minValues\":{\"id\":1.5,\"name\":\"0123456789abcdef0123456789abcdef\","
        "\"ts\":\"2023-03-03T02:39:38\",\"ntz\":\"2023-03-03T02:39:38Z\",\"price\":\"x\"},"
        "\"maxValues\":{\"id\":2,\"name\":\"0123456789abcdef0123456789abcdef\","
        "\"ts\":\"2023-03-03T02:39:38\",\"ntz\":\"2023-03-03T02:39:38Z\",\"price\":3},"
        "\"nullCount\":{\"id\":4,\"name\":{\"nested\":1}}}");
    CHECK(p.ok);
    CHECK(p.mins[0] == NULL);
    CHECK_EQ_STR(p.mins[1], "0123456789abcdef0123456789abcdef");
    CHECK(p.maxs[1] == NULL);
    CHECK(p.mins[2] == NULL && p.maxs[2] == NULL);
    CHECK(p.mins[3] == NULL && p.maxs[3] == NULL);
    CHECK(p.mins[5] == NULL);
    CHECK_EQ_INT(p.nulls[0], -1);
    CHECK_EQ_INT(p.nulls[1], -1);
    release(&p);
    /* Multi-byte characters count as one: 31 of them is not truncated. */
    char text[512];
    char s[31 * 2 + 1] = {0};
    for (int i = 0; i < 31; i++)
        memcpy(s + 2 * i, "\xc3\xa9", 2);
    snprintf(text, sizeof text,
             "{\"numRecords\":1,\"minValues\":{\"name\":\"%s\"},\"maxValues\":{\"name\":\"%s\"}}",
             s, s);
    p = parse(text);
    CHECK(p.ok && p.maxs[1] && strcmp(p.maxs[1], s) == 0);
    release(&p);
}

TEST(no_usable_stats)
{
    const char *bad[] = {"", "{}", "[1]", "{\"numRecords\":-1}", "{\"numRecords\":\"3\"}",
                         "{\"numRecords\":1e3}", "not json", "{\"numRecords\":99999999999999999999999}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct parsed p = parse(bad[i]);
        CHECK(!p.ok);
        CHECK_EQ_INT(p.rows, -1);
        release(&p);
    }
    /* Only the count: rows known, every bound unknown. */
    struct parsed p = parse("{\"numRecords\":0}");
    CHECK(p.ok && p.rows == 0 && p.mins[0] == NULL && p.nulls[0] == -1);
    release(&p);
}

RUN_TESTS(TEST_CASE(spark_stats), TEST_CASE(weakened_bounds_are_unknown),
          TEST_CASE(no_usable_stats))
