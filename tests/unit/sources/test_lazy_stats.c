/*
 * The statistics of lazy generations (src/sources/lazy_stats.c): values of
 * Parquet statistics and partition directories parsed into a column's
 * domain, comparisons, and the verdicts pruning acts on. The rule under test:
 * a verdict may only say "no row matches" (or "every row matches") when it
 * is certain; what is not understood may match.
 */
#include <math.h>
#include <string.h>

#include "sources/sources_internal.h"
#include "testlib.h"

static struct lazy_val val(enum lazy_class c, const char *s)
{
    return lazy_parse_val(c, s, strlen(s));
}

static struct query_value qi(int64_t i)
{
    return (struct query_value){.kind = QUERY_VALUE_INT64, .u.i = i};
}

static struct query_value qd(double d)
{
    return (struct query_value){.kind = QUERY_VALUE_DOUBLE, .u.d = d};
}

static struct query_value qs(const char *s)
{
    return (struct query_value){.kind = QUERY_VALUE_VARCHAR, .u.s = {s, strlen(s)}};
}

/* The verdict of `col op v` on values in [lo, hi] with `nulls` of `rows` NULL. */
static enum lazy_verdict on(enum lazy_class c, enum query_op op, struct query_value v,
                            const char *lo, const char *hi, int64_t nulls, int64_t rows)
{
    struct lazy_val a = val(c, lo), b = val(c, hi);
    struct lazy_bounds bd = {&a, &b, nulls, rows};
    struct query_pred p = {.op = op, .vals = &v, .nvals = 1};
    return lazy_pred_verdict(c, &p, &bd);
}

TEST(classes_of_duckdb_types)
{
    CHECK_EQ_INT(lazy_class_of("BIGINT"), LAZY_C_INT);
    CHECK_EQ_INT(lazy_class_of("UTINYINT"), LAZY_C_INT);
    CHECK_EQ_INT(lazy_class_of("DOUBLE"), LAZY_C_FLOAT);
    CHECK_EQ_INT(lazy_class_of("DECIMAL(10,2)"), LAZY_C_FLOAT);
    CHECK_EQ_INT(lazy_class_of("FLOAT"), LAZY_C_REAL);
    CHECK_EQ_INT(lazy_class_of("DATE"), LAZY_C_DATE);
    CHECK_EQ_INT(lazy_class_of("TIMESTAMP WITH TIME ZONE"), LAZY_C_TS);
    CHECK_EQ_INT(lazy_class_of("VARCHAR"), LAZY_C_STR);
    /* not compared: */
    CHECK_EQ_INT(lazy_class_of("BLOB"), LAZY_C_NONE);
    CHECK_EQ_INT(lazy_class_of("INTEGER[]"), LAZY_C_NONE);
    CHECK_EQ_INT(lazy_class_of(NULL), LAZY_C_NONE);
}

TEST(values_parse_in_their_domain)
{
    struct lazy_val v = val(LAZY_C_INT, "-42");
    CHECK(v.kind == 1 && v.i == -42);
    CHECK_EQ_INT(val(LAZY_C_INT, "4x").kind, 0);
    CHECK_EQ_INT(val(LAZY_C_INT, "99999999999999999999").kind, 0); /* overflow */
    CHECK_EQ_INT(val(LAZY_C_INT, "").kind, 0);
    v = val(LAZY_C_FLOAT, "2.5");
    CHECK(v.kind == 2 && v.d == 2.5);
    CHECK_EQ_INT(val(LAZY_C_FLOAT, "nan").kind, 0);
    v = val(LAZY_C_DATE, "1970-01-02");
    CHECK(v.kind == 1 && v.i == 86400LL * 1000000);
    v = val(LAZY_C_TS, "2024-03-01 12:00:00.5+00");
    struct lazy_val w = val(LAZY_C_TS, "2024-03-01T12:00:00.500000Z");
    CHECK(v.kind == 1 && w.kind == 1 && v.i == w.i);
    CHECK_EQ_INT(val(LAZY_C_TS, "2024-03-01 12:00:00+02").kind, 0);  /* other zone */
    CHECK_EQ_INT(val(LAZY_C_DATE, "24-03-01").kind, 0);
    CHECK_EQ_INT(val(LAZY_C_DATE, "2024-13-01").kind, 0);
    CHECK_EQ_INT(val(LAZY_C_DATE, "2024-03-01 1").kind, 0);           /* cut time */
    v = val(LAZY_C_BOOL, "TRUE");
    CHECK(v.kind == 1 && v.i == 1);
    v = val(LAZY_C_STR, "abc");
    CHECK(v.kind == 3 && v.n == 3);
}

TEST(comparisons)
{
    struct lazy_val a = val(LAZY_C_STR, "ab"), b = val(LAZY_C_STR, "abc");
    CHECK_EQ_INT(lazy_cmp(LAZY_C_STR, &a, &b), -1);
    CHECK_EQ_INT(lazy_cmp(LAZY_C_STR, &b, &a), 1);
    struct lazy_val u = val(LAZY_C_STR, "\xc3\xbc"), z = val(LAZY_C_STR, "z");
    CHECK_EQ_INT(lazy_cmp(LAZY_C_STR, &z, &u), -1); /* bytewise, as DuckDB compares */
    struct lazy_val x = val(LAZY_C_FLOAT, "0.1");
    struct query_value q = qd(0.1000000000000001);
    struct lazy_val y = lazy_request_val(LAZY_C_FLOAT, &q);
    CHECK_EQ_INT(lazy_cmp(LAZY_C_FLOAT, &x, &y), 0); /* within the margin: may be equal */
    struct lazy_val none = {0};
    CHECK_EQ_INT(lazy_cmp(LAZY_C_INT, &none, &x), 2);
    q = qi(3);
    struct lazy_val i3 = lazy_request_val(LAZY_C_FLOAT, &q), f3 = val(LAZY_C_FLOAT, "3.0");
    CHECK_EQ_INT(lazy_cmp(LAZY_C_FLOAT, &i3, &f3), 0);
    q = qs("2024-01-01");
    struct lazy_val d = lazy_request_val(LAZY_C_DATE, &q);
    CHECK(d.kind == 1 && d.i == val(LAZY_C_DATE, "2024-01-01").i);
}

TEST(integer_verdicts_are_exact)
{
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_EQ, qi(5), "6", "9", 0, 10), LAZY_NONE);
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_EQ, qi(6), "6", "9", 0, 10), LAZY_SOME);
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_EQ, qi(6), "6", "6", 0, 10), LAZY_ALL);
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_EQ, qi(6), "6", "6", 1, 10), LAZY_SOME); /* a NULL */
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_GT, qi(9), "6", "9", 0, 10), LAZY_NONE);
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_GTE, qi(9), "6", "9", 0, 10), LAZY_SOME);
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_GT, qi(5), "6", "9", 0, 10), LAZY_ALL);
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_LT, qi(6), "6", "9", 0, 10), LAZY_NONE);
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_LTE, qi(6), "6", "9", 0, 10), LAZY_SOME);
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_NEQ, qi(6), "6", "6", 0, 10), LAZY_NONE);
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_NEQ, qi(5), "6", "9", 0, 10), LAZY_ALL);
    /* A value between integers. */
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_EQ, qd(6.5), "6", "6", 0, 10), LAZY_NONE);
    /* Every row NULL: no comparison matches; is_null all. */
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_EQ, qi(6), "6", "9", 10, 10), LAZY_NONE);
    struct lazy_val a = val(LAZY_C_INT, "6"), b = val(LAZY_C_INT, "9");
    struct lazy_bounds bd = {&a, &b, 10, 10};
    struct query_pred p = {.op = QUERY_OP_IS_NULL};
    CHECK_EQ_INT(lazy_pred_verdict(LAZY_C_INT, &p, &bd), LAZY_ALL);
    bd.nulls = 0;
    CHECK_EQ_INT(lazy_pred_verdict(LAZY_C_INT, &p, &bd), LAZY_NONE);
    bd.nulls = -1; /* unknown */
    CHECK_EQ_INT(lazy_pred_verdict(LAZY_C_INT, &p, &bd), LAZY_SOME);
    /* between and in */
    struct query_value lohi[2] = {qi(1), qi(5)};
    struct query_pred btw = {.op = QUERY_OP_BETWEEN, .vals = lohi, .nvals = 2};
    bd.nulls = 0;
    CHECK_EQ_INT(lazy_pred_verdict(LAZY_C_INT, &btw, &bd), LAZY_NONE);
    lohi[1] = qi(6);
    CHECK_EQ_INT(lazy_pred_verdict(LAZY_C_INT, &btw, &bd), LAZY_SOME);
    lohi[1] = qi(100);
    CHECK_EQ_INT(lazy_pred_verdict(LAZY_C_INT, &btw, &bd), LAZY_ALL);
    struct query_value items[3] = {qi(1), qi(2), qi(10)};
    struct query_value list = {.kind = QUERY_VALUE_LIST, .u.list = {items, 3}};
    struct query_pred in = {.op = QUERY_OP_IN, .vals = &list, .nvals = 1};
    CHECK_EQ_INT(lazy_pred_verdict(LAZY_C_INT, &in, &bd), LAZY_NONE);
    items[2] = qi(7);
    CHECK_EQ_INT(lazy_pred_verdict(LAZY_C_INT, &in, &bd), LAZY_SOME);
}

TEST(float_bounds_never_rule_out_what_nan_could_match)
{
    /* Writers may leave NaN out of the bounds; NaN sorts above numbers. */
    CHECK_EQ_INT(on(LAZY_C_FLOAT, QUERY_OP_GT, qd(100), "1", "9", 0, 10), LAZY_SOME);
    CHECK_EQ_INT(on(LAZY_C_FLOAT, QUERY_OP_GTE, qd(100), "1", "9", 0, 10), LAZY_SOME);
    CHECK_EQ_INT(on(LAZY_C_FLOAT, QUERY_OP_NEQ, qd(5), "5", "5", 0, 10), LAZY_SOME);
    /* ... and never decide that every row matches. */
    CHECK_EQ_INT(on(LAZY_C_FLOAT, QUERY_OP_LT, qd(100), "1", "9", 0, 10), LAZY_SOME);
    /* What NaN cannot match can still be ruled out. */
    CHECK_EQ_INT(on(LAZY_C_FLOAT, QUERY_OP_LT, qd(0.5), "1", "9", 0, 10), LAZY_NONE);
    CHECK_EQ_INT(on(LAZY_C_FLOAT, QUERY_OP_EQ, qd(100), "1", "9", 0, 10), LAZY_NONE);
}

TEST(what_is_not_understood_may_match)
{
    /* Unknown bounds, a string against a number, a type not compared. */
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_EQ, qi(5), "", "", 0, 10), LAZY_SOME);
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_EQ, qs("5"), "6", "9", 0, 10), LAZY_SOME);
    CHECK_EQ_INT(on(LAZY_C_NONE, QUERY_OP_EQ, qi(5), "6", "9", 0, 10), LAZY_SOME);
    CHECK_EQ_INT(on(LAZY_C_TS, QUERY_OP_GT, qs("not a time"), "2024-01-01", "2024-01-02", 0, 10),
                 LAZY_SOME);
    /* LIKE is never decided by bounds (except all NULL). */
    CHECK_EQ_INT(on(LAZY_C_STR, QUERY_OP_LIKE, qs("zz%"), "a", "b", 0, 10), LAZY_SOME);
    CHECK_EQ_INT(on(LAZY_C_STR, QUERY_OP_LIKE, qs("zz%"), "a", "b", 10, 10), LAZY_NONE);
    /* No rows: nothing matches. */
    CHECK_EQ_INT(on(LAZY_C_INT, QUERY_OP_NEQ, qi(1), "6", "9", 0, 0), LAZY_NONE);
}

RUN_TESTS(TEST_CASE(classes_of_duckdb_types), TEST_CASE(values_parse_in_their_domain),
          TEST_CASE(comparisons), TEST_CASE(integer_verdicts_are_exact),
          TEST_CASE(float_bounds_never_rule_out_what_nan_could_match),
          TEST_CASE(what_is_not_understood_may_match))
