/*
 * What a lazy generation's statistics say about a predicate (issue 17):
 * values of Parquet statistics and partition directories parsed into the
 * column's domain, compared with request values, and the verdict on a file
 * or row group (no row can match, every row matches, or some may). Used by
 * lazy.c; the parsers read text from the files' footers and paths, so they
 * have a fuzz target (tests/fuzz/fuzz_lazy_stats.c) and unit tests
 * (tests/unit/sources/test_lazy_stats.c).
 *
 * Comparisons are made in the column's domain (integers exactly; floating
 * point and decimals with a margin, since statistics print values in their
 * shortest text; dates and timestamps as microseconds; strings bytewise), and
 * anything not understood (a type, a statistic, a value) means "may match":
 * pruning can only ever skip what cannot match, never change an answer.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sources/sources_internal.h"
#include "util/timeutil.h"

/* ---- parsing ------------------------------------------------------------------ */

enum lazy_class lazy_class_of(const char *type)
{
    if (!type)
        return LAZY_C_NONE;
    static const char *const ints[] = {"TINYINT",  "SMALLINT",  "INTEGER",  "BIGINT",
                                       "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (strcmp(type, ints[i]) == 0)
            return LAZY_C_INT;
    if (strcmp(type, "BOOLEAN") == 0)
        return LAZY_C_BOOL;
    if (strcmp(type, "FLOAT") == 0)
        return LAZY_C_REAL;
    if (strcmp(type, "DOUBLE") == 0 || strncmp(type, "DECIMAL", 7) == 0)
        return LAZY_C_FLOAT;
    if (strcmp(type, "DATE") == 0)
        return LAZY_C_DATE;
    if (strncmp(type, "TIMESTAMP", 9) == 0)
        return LAZY_C_TS;
    if (strcmp(type, "VARCHAR") == 0)
        return LAZY_C_STR;
    return LAZY_C_NONE;
}

bool lazy_parse_timestamp(const char *s, size_t n, struct lazy_ts *out)
{
    int y, mo, d, h = 0, mi = 0, se = 0;
    if (n < 10 || !time_digits(s, 4, &y) || s[4] != '-' || !time_digits(s + 5, 2, &mo) ||
        s[7] != '-' || !time_digits(s + 8, 2, &d) || mo < 1 || mo > 12 || d < 1 || d > 31)
        return false;
    int64_t us = 0;
    size_t p = 10;
    out->digits = 6;
    out->zoned = false;
    if (p < n && (s[p] == ' ' || s[p] == 'T')) {
        if (p + 9 > n || !time_digits(s + p + 1, 2, &h) || s[p + 3] != ':' ||
            !time_digits(s + p + 4, 2, &mi) || s[p + 6] != ':' ||
            !time_digits(s + p + 7, 2, &se) || h > 23 || mi > 59 || se > 60)
            return false;
        p += 9;
        out->digits = 0;
        if (p < n && s[p] == '.') {
            int64_t scale = 100000;
            for (p++; p < n && s[p] >= '0' && s[p] <= '9'; p++, scale /= 10) {
                if (++out->digits > 9)
                    return false;
                us += scale > 0 ? (s[p] - '0') * scale : 0;
            }
            if (out->digits > 6)
                out->digits = 6; /* nanoseconds: cut to what is compared */
        }
    }
    int64_t off = 0;
    if (p < n && s[p] == 'Z') {
        out->zoned = true;
        p++;
    } else if (p < n && (s[p] == '+' || s[p] == '-')) {
        int oh, om = 0;
        bool hm = n - p == 6 && s[p + 3] == ':' && time_digits(s + p + 4, 2, &om);
        if ((n - p != 3 && !hm) || !time_digits(s + p + 1, 2, &oh) || oh > 18 || om > 59)
            return false;
        off = ((int64_t)oh * 60 + om) * 60 * 1000000LL * (s[p] == '-' ? -1 : 1);
        out->zoned = true;
        p = n;
    }
    if (p != n)
        return false;
    out->offset_us = off;
    out->us = ((time_days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 * 1000000LL +
              se * 1000000LL + us - off;
    return true;
}

/* Statistics, partition values and request values: UTC or no zone at all
 * (a value in another zone is "not understood"). */
static bool parse_ts(const char *s, size_t n, int64_t *out)
{
    struct lazy_ts t;
    if (!lazy_parse_timestamp(s, n, &t) || t.offset_us != 0)
        return false;
    *out = t.us;
    return true;
}

/* Text of a statistic or partition value -> a value of the class. */
struct lazy_val lazy_parse_val(enum lazy_class c, const char *s, size_t n)
{
    struct lazy_val v = {0};
    char buf[64];
    switch (c) {
    case LAZY_C_INT:
    case LAZY_C_FLOAT:
    case LAZY_C_REAL:
        if (n == 0 || n >= sizeof buf)
            return v;
        memcpy(buf, s, n);
        buf[n] = '\0';
        char *end;
        if (c == LAZY_C_INT) {
            errno = 0;
            long long x = strtoll(buf, &end, 10);
            if (*end || errno)
                return v;
            v.kind = 1;
            v.i = x;
        } else {
            double x = strtod(buf, &end);
            if (*end || isnan(x))
                return v;
            v.kind = 2;
            v.d = x;
        }
        return v;
    case LAZY_C_BOOL:
        if (n == 4 && strncasecmp(s, "true", 4) == 0)
            v = (struct lazy_val){.kind = 1, .i = 1};
        else if (n == 5 && strncasecmp(s, "false", 5) == 0)
            v = (struct lazy_val){.kind = 1, .i = 0};
        return v;
    case LAZY_C_DATE:
    case LAZY_C_TS: {
        int64_t us;
        if (parse_ts(s, n, &us))
            v = (struct lazy_val){.kind = 1, .i = us};
        return v;
    }
    case LAZY_C_STR:
        v = (struct lazy_val){.kind = 3, .s = s, .n = n};
        return v;
    case LAZY_C_NONE:
        break;
    }
    return v;
}

/* A request value -> the column's domain (kind 0 when not comparable). */
struct lazy_val lazy_request_val(enum lazy_class c, const struct query_value *q)
{
    struct lazy_val v = {0};
    switch (c) {
    case LAZY_C_INT:
    case LAZY_C_FLOAT:
    case LAZY_C_REAL:
        if (q->kind == QUERY_VALUE_INT64)
            v = (struct lazy_val){.kind = 1, .i = q->u.i};
        else if (q->kind == QUERY_VALUE_DOUBLE && !isnan(q->u.d))
            v = (struct lazy_val){.kind = 2, .d = q->u.d};
        break;
    case LAZY_C_BOOL:
        if (q->kind == QUERY_VALUE_BOOL)
            v = (struct lazy_val){.kind = 1, .i = q->u.b};
        break;
    case LAZY_C_DATE:
    case LAZY_C_TS:
        if (q->kind == QUERY_VALUE_VARCHAR)
            v = lazy_parse_val(LAZY_C_TS, q->u.s.ptr, q->u.s.len);
        break;
    case LAZY_C_STR:
        if (q->kind == QUERY_VALUE_VARCHAR)
            v = (struct lazy_val){.kind = 3, .s = q->u.s.ptr, .n = q->u.s.len};
        break;
    case LAZY_C_NONE:
        break;
    }
    return v;
}

/* a <=> b in the column's domain: -1, 0, 1, or 2 when not comparable. The
 * margin of floating-point classes makes "equal" wide: values within it may
 * be equal, so they never decide a file away. */
int lazy_cmp(enum lazy_class c, const struct lazy_val *a, const struct lazy_val *b)
{
    if (!a->kind || !b->kind)
        return 2;
    if (a->kind == 3 || b->kind == 3) {
        if (a->kind != 3 || b->kind != 3)
            return 2;
        size_t n = a->n < b->n ? a->n : b->n;
        int r = memcmp(a->s, b->s, n);
        if (r)
            return r < 0 ? -1 : 1;
        return a->n < b->n ? -1 : a->n > b->n ? 1 : 0;
    }
    if (a->kind == 1 && b->kind == 1)
        return a->i < b->i ? -1 : a->i > b->i ? 1 : 0;
    long double x = a->kind == 1 ? (long double)a->i : a->d;
    long double y = b->kind == 1 ? (long double)b->i : b->d;
    long double margin = (fabsl(x) + fabsl(y)) * (c == LAZY_C_REAL ? 1e-6L : 1e-12L);
    if (x < y - margin)
        return -1;
    if (x > y + margin)
        return 1;
    return 0;
}

/* ---- verdicts ------------------------------------------------------------------- */

static enum lazy_verdict cmp_verdict_bounds(enum lazy_class c, enum query_op op, const struct lazy_val *v,
                                       const struct lazy_bounds *b);

/* Floating-point statistics may leave NaN out (Arrow and Spark write the
 * bounds of the other values), and NaN sorts above every number in DuckDB:
 * bounds never rule out a row for >, >= or <>, and never decide that every
 * row matches. */
static enum lazy_verdict cmp_verdict(enum lazy_class c, enum query_op op, const struct lazy_val *v,
                                const struct lazy_bounds *b)
{
    enum lazy_verdict r = cmp_verdict_bounds(c, op, v, b);
    if (c == LAZY_C_FLOAT || c == LAZY_C_REAL) {
        if (r == LAZY_ALL)
            return LAZY_SOME;
        if (r == LAZY_NONE && (op == QUERY_OP_GT || op == QUERY_OP_GTE || op == QUERY_OP_NEQ))
            return LAZY_SOME;
    }
    return r;
}

static enum lazy_verdict cmp_verdict_bounds(enum lazy_class c, enum query_op op, const struct lazy_val *v,
                                       const struct lazy_bounds *b)
{
    int lo = lazy_cmp(c, v, b->min), hi = lazy_cmp(c, v, b->max); /* v vs min, v vs max */
    bool nonull = b->nulls == 0;
    switch (op) {
    case QUERY_OP_EQ:
        if (lo == -1 || hi == 1)
            return LAZY_NONE;
        if (lo == 0 && hi == 0 && nonull && c != LAZY_C_FLOAT && c != LAZY_C_REAL)
            return LAZY_ALL;
        return LAZY_SOME;
    case QUERY_OP_NEQ:
        if (lo == 0 && hi == 0 && c != LAZY_C_FLOAT && c != LAZY_C_REAL)
            return LAZY_NONE; /* only v (and NULLs, which never match) */
        if ((lo == -1 || hi == 1) && nonull)
            return LAZY_ALL;
        return LAZY_SOME;
    case QUERY_OP_GT: /* col > v */
        if (hi == 1 || hi == 0)
            return hi == 0 && (c == LAZY_C_FLOAT || c == LAZY_C_REAL) ? LAZY_SOME : LAZY_NONE;
        if (lo == -1 && nonull)
            return LAZY_ALL;
        return LAZY_SOME;
    case QUERY_OP_GTE:
        if (hi == 1)
            return LAZY_NONE;
        if ((lo == -1 || (lo == 0 && c != LAZY_C_FLOAT && c != LAZY_C_REAL)) && nonull)
            return LAZY_ALL;
        return LAZY_SOME;
    case QUERY_OP_LT: /* col < v */
        if (lo == -1 || lo == 0)
            return lo == 0 && (c == LAZY_C_FLOAT || c == LAZY_C_REAL) ? LAZY_SOME : LAZY_NONE;
        if (hi == 1 && nonull)
            return LAZY_ALL;
        return LAZY_SOME;
    case QUERY_OP_LTE:
        if (lo == -1)
            return LAZY_NONE;
        if ((hi == 1 || (hi == 0 && c != LAZY_C_FLOAT && c != LAZY_C_REAL)) && nonull)
            return LAZY_ALL;
        return LAZY_SOME;
    default:
        return LAZY_SOME;
    }
}

enum lazy_verdict lazy_pred_verdict(enum lazy_class c, const struct query_pred *p,
                                 const struct lazy_bounds *b)
{
    if (b->rows == 0)
        return LAZY_NONE;
    bool all_null = b->nulls >= 0 && b->nulls == b->rows;
    switch (p->op) {
    case QUERY_OP_IS_NULL:
        if (b->nulls == 0)
            return LAZY_NONE;
        return all_null ? LAZY_ALL : LAZY_SOME;
    case QUERY_OP_IS_NOT_NULL:
        if (all_null)
            return LAZY_NONE;
        return b->nulls == 0 ? LAZY_ALL : LAZY_SOME;
    case QUERY_OP_LIKE:
    case QUERY_OP_ILIKE:
        return all_null ? LAZY_NONE : LAZY_SOME;
    default:
        break;
    }
    if (all_null)
        return LAZY_NONE; /* comparisons never match NULL */
    if (c == LAZY_C_NONE)
        return LAZY_SOME;
    if (p->op == QUERY_OP_IN) {
        enum lazy_verdict acc = LAZY_NONE;
        const struct query_value *items = p->vals;
        size_t n = p->nvals;
        if (n == 1 && items[0].kind == QUERY_VALUE_LIST) {
            items = items[0].u.list.items;
            n = items ? p->vals[0].u.list.n : 0;
        }
        for (size_t i = 0; i < n && acc != LAZY_ALL; i++) {
            struct lazy_val v = lazy_request_val(c, &items[i]);
            if (!v.kind)
                return LAZY_SOME;
            enum lazy_verdict one = cmp_verdict(c, QUERY_OP_EQ, &v, b);
            if (one != LAZY_NONE)
                acc = one;
        }
        return acc;
    }
    if (p->op == QUERY_OP_BETWEEN && p->nvals == 2) {
        struct lazy_val lo = lazy_request_val(c, &p->vals[0]), hi = lazy_request_val(c, &p->vals[1]);
        if (!lo.kind || !hi.kind)
            return LAZY_SOME;
        enum lazy_verdict a = cmp_verdict(c, QUERY_OP_GTE, &lo, b);
        enum lazy_verdict z = cmp_verdict(c, QUERY_OP_LTE, &hi, b);
        if (a == LAZY_NONE || z == LAZY_NONE)
            return LAZY_NONE;
        return a == LAZY_ALL && z == LAZY_ALL ? LAZY_ALL : LAZY_SOME;
    }
    if (p->nvals != 1)
        return LAZY_SOME;
    struct lazy_val v = lazy_request_val(c, &p->vals[0]);
    if (!v.kind)
        return LAZY_SOME;
    return cmp_verdict(c, p->op, &v, b);
}
