/*
 * GET /datasets/{name}/summary (explore.h): per column its counts, range,
 * moments, most frequent values and an equal-width histogram, from ONE
 * statement over the generation's relation:
 *
 *   WITH "s" AS (SELECT count(*), count(c), approx_count_distinct(c), min,
 *                max, avg, stddev_samp, and the finite range of the
 *                histogram's key per column FROM rel AS "r"),   -- scan 1
 *        "b" AS (the bucket width and count per column),
 *        "b2" AS (the bucket edges, as values of the column's kind)
 *   SELECT any_value(stats), histogram(c) FILTER (low cardinality),
 *          histogram(bucket index) FILTER (finite)
 *   FROM "b2" AS "b" LEFT JOIN rel AS "r" ON true                -- scan 2
 *
 * Aliases are ours ("n3", "lo3", ...: the column's position), user columns
 * are always qualified ("r"."fare"), so no column name can be mistaken for
 * another. A histogram's key is a number: the value itself (integers, as
 * HUGEINT), its days since 1970 (dates), microseconds since 1970 (timestamps)
 * or since midnight (times), or a DOUBLE (other numbers); edges go back to
 * the column's kind in SQL, so they are written by the row encoder like any
 * other value.
 *
 * The answer per column is cached as JSON text per generation id: reloads
 * make new generations, so an entry is never stale, only unused.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "explore/explore_int.h"
#include "util/jsonw.h"
#include "util/log.h"
#include "util/timeutil.h"

enum kind { K_INT, K_FLOAT, K_DATE, K_TIME, K_TS, K_TSTZ, K_BOOL, K_STRING, K_OTHER, K_NESTED };

static enum kind kind_of(duckdb_type t)
{
    switch (t) {
    case DUCKDB_TYPE_TINYINT: case DUCKDB_TYPE_SMALLINT: case DUCKDB_TYPE_INTEGER:
    case DUCKDB_TYPE_BIGINT: case DUCKDB_TYPE_HUGEINT: case DUCKDB_TYPE_UTINYINT:
    case DUCKDB_TYPE_USMALLINT: case DUCKDB_TYPE_UINTEGER: case DUCKDB_TYPE_UBIGINT:
        return K_INT;
    case DUCKDB_TYPE_FLOAT: case DUCKDB_TYPE_DOUBLE: case DUCKDB_TYPE_DECIMAL:
    case DUCKDB_TYPE_UHUGEINT:
        return K_FLOAT;
    case DUCKDB_TYPE_DATE:
        return K_DATE;
    case DUCKDB_TYPE_TIME:
        return K_TIME;
    case DUCKDB_TYPE_TIMESTAMP: case DUCKDB_TYPE_TIMESTAMP_S: case DUCKDB_TYPE_TIMESTAMP_MS:
    case DUCKDB_TYPE_TIMESTAMP_NS:
        return K_TS;
    case DUCKDB_TYPE_TIMESTAMP_TZ:
        return K_TSTZ;
    case DUCKDB_TYPE_BOOLEAN:
        return K_BOOL;
    case DUCKDB_TYPE_VARCHAR: case DUCKDB_TYPE_ENUM: case DUCKDB_TYPE_UUID:
        return K_STRING;
    case DUCKDB_TYPE_LIST: case DUCKDB_TYPE_STRUCT: case DUCKDB_TYPE_MAP:
    case DUCKDB_TYPE_ARRAY: case DUCKDB_TYPE_UNION:
        return K_NESTED;
    default:
        return K_OTHER;
    }
}

static bool has_minmax(enum kind k) { return k <= K_STRING; }
static bool has_moments(enum kind k) { return k == K_INT || k == K_FLOAT; }
static bool has_top(enum kind k) { return k <= K_STRING; }
static bool has_hist(enum kind k) { return k <= K_TSTZ; }
/* Histograms over whole numbers (the value, days, microseconds). */
static bool int_scheme(enum kind k) { return k != K_FLOAT; }

/* ------------------------------------------------------------ the SQL */

static void col_ref(struct strbuf *sb, const char *name)
{
    sb_adds(sb, "\"r\".");
    sb_add_sql_ident(sb, name);
}

/* The histogram key of a value (see the file comment); NULL for values a
 * histogram leaves out (NaN, infinities): DuckDB evaluates an aggregate's
 * argument before its FILTER, and casting them would fail. */
static void hist_key(struct strbuf *sb, enum kind k, const char *name)
{
    switch (k) {
    case K_INT:
        sb_adds(sb, "CAST(");
        col_ref(sb, name);
        sb_adds(sb, " AS HUGEINT)");
        break;
    case K_FLOAT:
        sb_adds(sb, "CASE WHEN isfinite(CAST(");
        col_ref(sb, name);
        sb_adds(sb, " AS DOUBLE)) THEN CAST(");
        col_ref(sb, name);
        sb_adds(sb, " AS DOUBLE) END");
        break;
    case K_DATE:
        sb_adds(sb, "CASE WHEN isfinite(");
        col_ref(sb, name);
        sb_adds(sb, ") THEN CAST(");
        col_ref(sb, name);
        sb_adds(sb, " - DATE '1970-01-01' AS HUGEINT) END");
        break;
    case K_TIME:
        sb_adds(sb, "CAST(epoch_us(DATE '1970-01-01' + ");
        col_ref(sb, name);
        sb_adds(sb, ") AS HUGEINT)");
        break;
    default: /* K_TS, K_TSTZ */
        sb_adds(sb, "CASE WHEN isfinite(");
        col_ref(sb, name);
        sb_adds(sb, ") THEN CAST(epoch_us(");
        col_ref(sb, name);
        sb_adds(sb, ") AS HUGEINT) END");
        break;
    }
}

/* Which values a histogram counts: finite ones. */
static void hist_filter(struct strbuf *sb, enum kind k, const char *name)
{
    if (k == K_INT || k == K_TIME) {
        col_ref(sb, name);
        sb_adds(sb, " IS NOT NULL");
    } else if (k == K_FLOAT) {
        sb_adds(sb, "isfinite(CAST(");
        col_ref(sb, name);
        sb_adds(sb, " AS DOUBLE))");
    } else {
        sb_adds(sb, "isfinite(");
        col_ref(sb, name);
        sb_addc(sb, ')');
    }
}

/* A key back as a value of the column's kind (v: an expression over "b"). */
static void edge_value(struct strbuf *sb, enum kind k, const char *v)
{
    switch (k) {
    case K_DATE:
        sb_addf(sb, "CAST(DATE '1970-01-01' + CAST(%s AS INTEGER) AS DATE)", v);
        break;
    case K_TIME:
        /* the last edge of a day is 24:00:00, not 00:00:00 */
        sb_addf(sb, "CASE WHEN %s >= 86400000000 THEN TIME '24:00:00' ELSE "
                    "CAST(make_timestamp(CAST(%s AS BIGINT)) AS TIME) END", v, v);
        break;
    case K_TS:
        sb_addf(sb, "make_timestamp(CAST(%s AS BIGINT))", v);
        break;
    case K_TSTZ:
        /* the server's session zone is UTC: the same instant */
        sb_addf(sb, "CAST(make_timestamp(CAST(%s AS BIGINT)) AS TIMESTAMPTZ)", v);
        break;
    default:
        sb_adds(sb, v);
        break;
    }
}

/* The widths a histogram of whole numbers may take, smallest first: "nice"
 * steps a person reads at a glance (5, 10, 25; 15 minutes, 1 hour, 1 week).
 * Beyond the last, the exact width is used. */
static void ladder(struct strbuf *sb, enum kind k)
{
    static const int64_t S = 1000000, M = 60 * S, H = 60 * M, D = 24 * H;
    static const int64_t us[] = {1 * S, 2 * S, 5 * S, 10 * S, 15 * S, 30 * S, M, 2 * M,
                                 5 * M, 10 * M, 15 * M, 30 * M, H, 2 * H, 3 * H, 6 * H, 12 * H,
                                 D, 2 * D, 7 * D, 14 * D, 30 * D, 61 * D, 91 * D, 182 * D,
                                 365 * D, 730 * D, 1826 * D, 3652 * D, 7305 * D, 18262 * D,
                                 36525 * D, 73050 * D, 182625 * D, 365250 * D};
    static const int64_t days[] = {1, 2, 7, 14, 30, 61, 91, 182, 365, 730, 1826, 3652, 7305,
                                   18262, 36525, 73050, 182625, 365250, 730500, 1826250};
    sb_addc(sb, '[');
    bool first = true;
    if (k == K_DATE) {
        for (size_t i = 0; i < sizeof days / sizeof days[0]; i++, first = false)
            sb_addf(sb, "%s%lld", first ? "" : ", ", (long long)days[i]);
    } else {
        /* 1, 2, 5, 10, 20, 25, 50, ... (microseconds below a second) */
        int64_t p = 1;
        for (int e = 0; e < 19; e++, p *= 10) {
            static const int mult[] = {1, 2, 25, 5};
            for (size_t j = 0; j < 4; j++) {
                if (j == 2 && e == 0)
                    continue; /* 2.5 */
                int64_t v = j == 2 ? p / 10 * 25 : p * mult[j];
                if (k != K_INT && v >= S)
                    break;
                sb_addf(sb, "%s%lld", first ? "" : ", ", (long long)v);
                first = false;
            }
            if (k != K_INT && p * 10 >= S)
                break;
            if (p > INT64_MAX / 100)
                break;
        }
        if (k != K_INT)
            for (size_t i = 0; i < sizeof us / sizeof us[0]; i++)
                sb_addf(sb, ", %lld", (long long)us[i]);
    }
    sb_adds(sb, "]::HUGEINT[]");
}

/* Weeks start on Monday: widths of whole weeks are aligned to 1970-01-05. */
static void week_offset(struct strbuf *sb, enum kind k, size_t i)
{
    if (k == K_DATE)
        sb_addf(sb, "CASE WHEN \"w%zu\" %% 7 = 0 THEN 4 ELSE 0 END", i);
    else if (k == K_TS || k == K_TSTZ)
        sb_addf(sb, "CASE WHEN \"w%zu\" %% 604800000000 = 0 THEN 345600000000 ELSE 0 END", i);
    else
        sb_adds(sb, "0");
}

/* The statement for columns [lo, hi) of gen (aliases carry the column's
 * position in gen, so answers of several statements read alike). */
static void build_sql(const struct cat_generation *gen, size_t lo, size_t hi, struct strbuf *sb)
{
    sb_adds(sb, "WITH \"s\" AS (SELECT count(*) AS \"rows\"");
    for (size_t i = lo; i < hi; i++) {
        const char *name = gen->cols[i].name;
        enum kind k = kind_of(gen->cols[i].type);
        sb_adds(sb, ", count(");
        col_ref(sb, name);
        sb_addf(sb, ") AS \"n%zu\", approx_count_distinct(", i);
        col_ref(sb, name);
        sb_addf(sb, ") AS \"d%zu\"", i);
        if (has_minmax(k)) {
            sb_adds(sb, ", min(");
            col_ref(sb, name);
            sb_addf(sb, ") AS \"lo%zu\", max(", i);
            col_ref(sb, name);
            sb_addf(sb, ") AS \"hi%zu\"", i);
        }
        if (has_moments(k)) {
            /* Moments of the finite values; HUGEINT sums overflow, so wide
             * integers average as DOUBLE; the standard deviation leaves out
             * magnitudes past 1e100, whose squares would overflow too. */
            duckdb_type t = gen->cols[i].type;
            bool real = t == DUCKDB_TYPE_FLOAT || t == DUCKDB_TYPE_DOUBLE;
            bool wide = t == DUCKDB_TYPE_HUGEINT || t == DUCKDB_TYPE_UHUGEINT ||
                        t == DUCKDB_TYPE_DECIMAL;
            sb_adds(sb, wide ? ", avg(CAST(" : ", avg(");
            col_ref(sb, name);
            sb_adds(sb, wide ? " AS DOUBLE))" : ")");
            if (real) {
                sb_adds(sb, " FILTER (WHERE isfinite(");
                col_ref(sb, name);
                sb_adds(sb, "))");
            }
            sb_addf(sb, " AS \"mean%zu\", stddev_samp(CAST(", i);
            col_ref(sb, name);
            sb_adds(sb, " AS DOUBLE)) FILTER (WHERE abs(CAST(");
            col_ref(sb, name);
            sb_addf(sb, " AS DOUBLE)) < 1e100) AS \"sd%zu\"", i);
        }
        if (has_hist(k)) {
            sb_adds(sb, ", min(");
            hist_key(sb, k, name);
            sb_adds(sb, ") FILTER (WHERE ");
            hist_filter(sb, k, name);
            sb_addf(sb, ") AS \"hl%zu\", max(", i);
            hist_key(sb, k, name);
            sb_adds(sb, ") FILTER (WHERE ");
            hist_filter(sb, k, name);
            sb_addf(sb, ") AS \"hh%zu\"", i);
        }
    }
    sb_adds(sb, " FROM ");
    sb_adds(sb, gen->relation);
    /* b1: the width, the smallest nice step giving at most
     * EXPLORE_HIST_BUCKETS buckets (+1 for the alignment) */
    sb_adds(sb, " AS \"r\"), \"b1\" AS (SELECT *");
    for (size_t i = lo; i < hi; i++) {
        enum kind k = kind_of(gen->cols[i].type);
        if (!has_hist(k))
            continue;
        if (int_scheme(k)) {
            sb_adds(sb, ", coalesce(list_filter(");
            ladder(sb, k);
            sb_addf(sb, ", lambda u: u >= (\"hh%zu\" - \"hl%zu\") // %d + 1)[1], (\"hh%zu\" - "
                        "\"hl%zu\") // %d + 1) AS \"w%zu\"",
                    i, i, EXPLORE_HIST_BUCKETS, i, i, EXPLORE_HIST_BUCKETS, i);
        } else {
            /* 1, 2, 2.5, 5 x 10^k; a single value gets a bucket of width 1 */
            sb_addf(sb, ", CASE WHEN \"hh%zu\" > \"hl%zu\" THEN (\"hh%zu\" - \"hl%zu\") / %d ELSE 1 "
                        "END AS \"rw%zu\"",
                    i, i, i, i, EXPLORE_HIST_BUCKETS, i);
        }
    }
    sb_adds(sb, " FROM \"s\"), \"b2\" AS (SELECT *");
    for (size_t i = lo; i < hi; i++) {
        enum kind k = kind_of(gen->cols[i].type);
        if (!has_hist(k))
            continue;
        if (int_scheme(k)) {
            /* o: the first edge, min aligned down to a multiple of w (+offset) */
            sb_adds(sb, ", (\"hl");
            sb_addf(sb, "%zu\" - (", i);
            week_offset(sb, k, i);
            sb_addf(sb, ")) - (((\"hl%zu\" - (", i);
            week_offset(sb, k, i);
            sb_addf(sb, ")) %% \"w%zu\") + \"w%zu\") %% \"w%zu\" + (", i, i, i);
            week_offset(sb, k, i);
            sb_addf(sb, ") AS \"o%zu\"", i);
        } else {
            sb_addf(sb, ", list_filter([1, 2, 2.5, 5, 10], lambda u: u * pow(10, floor(log10(\"rw%zu\"))) "
                        ">= \"rw%zu\" * (1 - 1e-12))[1] * pow(10, floor(log10(\"rw%zu\"))) AS \"w%zu\"",
                    i, i, i, i);
        }
    }
    sb_adds(sb, " FROM \"b1\"), \"b3\" AS (SELECT *");
    for (size_t i = lo; i < hi; i++) {
        enum kind k = kind_of(gen->cols[i].type);
        if (!has_hist(k))
            continue;
        if (int_scheme(k))
            sb_addf(sb, ", CAST((\"hh%zu\" - \"o%zu\") // \"w%zu\" + 1 AS BIGINT) AS \"nb%zu\"", i, i,
                    i, i);
        else
            sb_addf(sb, ", greatest(0, CAST(-floor(log10(\"w%zu\")) AS INTEGER) + 1) AS \"g%zu\", "
                        "floor(\"hl%zu\" / \"w%zu\") * \"w%zu\" AS \"o%zu\"",
                    i, i, i, i, i, i);
    }
    sb_adds(sb, " FROM \"b2\"), \"b4\" AS (SELECT *");
    for (size_t i = lo; i < hi; i++) {
        enum kind k = kind_of(gen->cols[i].type);
        if (!has_hist(k) || int_scheme(k))
            continue;
        /* enough buckets that the last edge, rounded, is past max */
        sb_addf(sb, ", CAST(floor((\"hh%zu\" - \"o%zu\") / \"w%zu\") AS BIGINT) + 1 + CASE WHEN "
                    "round(\"o%zu\" + (floor((\"hh%zu\" - \"o%zu\") / \"w%zu\") + 1) * \"w%zu\", "
                    "\"g%zu\") <= \"hh%zu\" THEN 1 ELSE 0 END AS \"nb%zu\"",
                i, i, i, i, i, i, i, i, i, i, i);
    }
    sb_adds(sb, " FROM \"b3\"), \"b\" AS (SELECT *");
    for (size_t i = lo; i < hi; i++) {
        enum kind k = kind_of(gen->cols[i].type);
        if (!has_hist(k))
            continue;
        char v[96];
        if (int_scheme(k)) {
            snprintf(v, sizeof v, "\"o%zu\" + k * \"w%zu\"", i, i);
            sb_adds(sb, ", [");
            edge_value(sb, k, v);
            sb_addf(sb, " FOR k IN range(\"nb%zu\" + 1)] AS \"e%zu\"", i, i);
        } else {
            sb_addf(sb, ", [round(\"o%zu\" + k * \"w%zu\", \"g%zu\") FOR k IN range(\"nb%zu\" + 1)] "
                        "AS \"e%zu\"",
                    i, i, i, i, i);
        }
    }
    sb_adds(sb, " FROM \"b4\") SELECT any_value(\"b\".\"rows\") AS \"rows\"");
    for (size_t i = lo; i < hi; i++) {
        const char *name = gen->cols[i].name;
        enum kind k = kind_of(gen->cols[i].type);
        sb_addf(sb, ", any_value(\"b\".\"n%zu\") AS \"n%zu\", any_value(\"b\".\"d%zu\") AS \"d%zu\"",
                i, i, i, i);
        if (has_minmax(k))
            sb_addf(sb, ", any_value(\"b\".\"lo%zu\") AS \"lo%zu\", any_value(\"b\".\"hi%zu\") AS "
                        "\"hi%zu\"",
                    i, i, i, i);
        if (has_moments(k))
            sb_addf(sb, ", any_value(\"b\".\"mean%zu\") AS \"mean%zu\", any_value(\"b\".\"sd%zu\") "
                        "AS \"sd%zu\"",
                    i, i, i, i);
        if (has_top(k)) {
            sb_adds(sb, ", histogram(");
            col_ref(sb, name);
            sb_addf(sb, ") FILTER (WHERE \"b\".\"d%zu\" <= %d", i, EXPLORE_LOW_CARDINALITY);
            if (k == K_FLOAT) {
                /* DuckDB's histogram() lumps every value with NaN */
                sb_adds(sb, " AND isfinite(CAST(");
                col_ref(sb, name);
                sb_adds(sb, " AS DOUBLE))");
            }
            sb_addf(sb, ") AS \"t%zu\"", i);
        }
        if (has_hist(k)) {
            sb_addf(sb, ", any_value(\"b\".\"e%zu\") AS \"e%zu\", histogram(", i, i);
            if (int_scheme(k)) {
                sb_adds(sb, "CAST((");
                hist_key(sb, k, name);
                sb_addf(sb, " - \"b\".\"o%zu\") // \"b\".\"w%zu\" AS BIGINT)", i, i);
            } else {
                /* floor((x - o) / w), then one step either way so that the
                 * bucket's edges, as written, hold x */
                struct strbuf i0;
                sb_init(&i0, 0);
                sb_adds(&i0, "least(greatest(CAST(floor((");
                hist_key(&i0, k, name);
                sb_addf(&i0, " - \"b\".\"o%zu\") / \"b\".\"w%zu\") AS BIGINT), 0), \"b\".\"nb%zu\" - 1)",
                        i, i, i);
                const char *x0 = i0.buf ? i0.buf : "0";
                sb_adds(sb, "CASE WHEN ");
                hist_key(sb, k, name);
                sb_addf(sb, " < \"b\".\"e%zu\"[%s + 1] THEN %s - 1 WHEN ", i, x0, x0);
                hist_key(sb, k, name);
                sb_addf(sb, " >= \"b\".\"e%zu\"[%s + 2] THEN %s + 1 ELSE %s END", i, x0, x0, x0);
                sb->overflow |= i0.overflow;
                sb_release(&i0);
            }
            sb_adds(sb, ") FILTER (WHERE ");
            hist_filter(sb, k, name);
            sb_addf(sb, ") AS \"h%zu\"", i);
        }
    }
    sb_adds(sb, " FROM \"b\" LEFT JOIN ");
    sb_adds(sb, gen->relation);
    sb_adds(sb, " AS \"r\" ON true");
}

/* ------------------------------------------------------- the answer */

enum slot { S_N, S_D, S_LO, S_HI, S_MEAN, S_SD, S_TOP, S_HIST, S_EDGES, N_SLOTS };

struct col_spans {
    struct jspan v[N_SLOTS];
};

/* "lo12" -> (S_LO, 12) */
static bool parse_key(struct jspan key, enum slot *out_slot, size_t *out_col)
{
    static const char *const names[N_SLOTS] = {"n", "d", "lo", "hi", "mean", "sd", "t", "h", "e"};
    const char *p = key.p + 1, *end = key.p + key.n - 1;
    const char *digits = p;
    while (digits < end && (*digits < '0' || *digits > '9'))
        digits++;
    if (digits == end)
        return false;
    size_t col = 0;
    for (const char *q = digits; q < end; q++) {
        if (*q < '0' || *q > '9' || col > SIZE_MAX / 16)
            return false;
        col = col * 10 + (size_t)(*q - '0');
    }
    for (size_t s = 0; s < N_SLOTS; s++)
        if (strlen(names[s]) == (size_t)(digits - p) && memcmp(p, names[s], (size_t)(digits - p)) == 0) {
            *out_slot = (enum slot)s;
            *out_col = col;
            return true;
        }
    return false;
}

struct top_entry {
    struct jspan value;
    int64_t count;
};

/* A JSON number's value (false: not a number, or too long to be one). */
static bool top_number(struct jspan v, double *out)
{
    char buf[64];
    if (v.n == 0 || v.n >= sizeof buf || !(v.p[0] == '-' || (v.p[0] >= '0' && v.p[0] <= '9')))
        return false;
    memcpy(buf, v.p, v.n);
    buf[v.n] = '\0';
    char *end;
    *out = strtod(buf, &end);
    return *end == '\0';
}

/* Most frequent first; ties by value as /facets orders them: numbers by
 * their value (their text put 10 before 2 and -1 before -5, so the ten
 * shown of many tied values were not the ten smallest), else by text. */
static int top_cmp(const void *a, const void *b)
{
    const struct top_entry *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    double dx, dy;
    if (top_number(x->value, &dx) && top_number(y->value, &dy) && dx != dy)
        return dx < dy ? -1 : 1;
    size_t n = x->value.n < y->value.n ? x->value.n : y->value.n;
    int c = memcmp(x->value.p, y->value.p, n);
    if (c)
        return c;
    return x->value.n < y->value.n ? -1 : x->value.n > y->value.n;
}

/* A histogram() MAP as written by the encoder: {"k":n,...} for string keys,
 * [{"key":k,"value":n},...] otherwise. Entries are allocated from `a`. */
static bool read_map(struct jspan map, struct arena *a, struct top_entry **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    if (jspan_is_null(map))
        return true;
    struct jspan_iter it;
    if (!jspan_iter_init(&it, map))
        return false;
    size_t cap = 16, n = 0;
    struct top_entry *e = arena_alloc(a, cap * sizeof *e);
    struct jspan k, v;
    while (e && jspan_next(&it, &k, &v)) {
        struct top_entry t;
        if (it.object) {
            t.value = k;
            if (!jspan_int(v, &t.count))
                return false;
        } else {
            struct jspan cnt;
            if (!jspan_get(v, "key", &t.value) || !jspan_get(v, "value", &cnt) ||
                !jspan_int(cnt, &t.count))
                return false;
        }
        if (n == cap) {
            struct top_entry *grown = arena_alloc(a, 2 * cap * sizeof *e);
            if (!grown)
                return false;
            memcpy(grown, e, n * sizeof *e);
            e = grown;
            cap *= 2;
        }
        e[n++] = t;
    }
    if (!e || it.bad)
        return false;
    *out = e;
    *out_n = n;
    return true;
}

static void raw_or_null(struct jw *w, const char *key, const struct jspan *v)
{
    jw_key(w, key);
    if (v->p)
        jw_rawn(w, v->p, v->n);
    else
        jw_null(w);
}

/* One column's summary object into `sb`. */
static bool write_column(const struct cat_column *col, int64_t rows, const struct col_spans *cs,
                         struct arena *a, struct strbuf *sb)
{
    enum kind k = kind_of(col->type);
    struct jw w;
    jw_init(&w, sb);
    jw_obj_begin(&w);
    jw_kstr(&w, "name", col->name);
    jw_kstr(&w, "type", col->type_sql);
    jw_kstr(&w, "logical", cat_logical_name(col->logical));
    int64_t n = 0, d = 0;
    if (!cs->v[S_N].p || !jspan_int(cs->v[S_N], &n))
        n = 0;
    if (!cs->v[S_D].p || !jspan_int(cs->v[S_D], &d))
        d = 0;
    struct top_entry *top = NULL;
    size_t ntop = 0;
    if (has_top(k) && cs->v[S_TOP].p && !read_map(cs->v[S_TOP], a, &top, &ntop))
        return false;
    /* HyperLogLog may say a little more than there is; a low-cardinality
     * column's histogram() counted its values exactly. */
    if (top && k != K_FLOAT) /* (floats: NaN and infinities are not in it) */
        d = (int64_t)ntop;
    if (d > n)
        d = n;
    jw_kint(&w, "count", n);
    jw_kint(&w, "null_count", rows - n);
    jw_kint(&w, "approx_distinct", d);
    raw_or_null(&w, "min", &cs->v[S_LO]);
    raw_or_null(&w, "max", &cs->v[S_HI]);
    raw_or_null(&w, "mean", &cs->v[S_MEAN]);
    raw_or_null(&w, "stddev", &cs->v[S_SD]);
    jw_key(&w, "top_values");
    if (top) {
        qsort(top, ntop, sizeof *top, top_cmp);
        jw_arr_begin(&w);
        for (size_t i = 0; i < ntop && i < EXPLORE_TOP_VALUES; i++) {
            jw_obj_begin(&w);
            jw_key(&w, "value");
            jw_rawn(&w, top[i].value.p, top[i].value.n);
            jw_kint(&w, "count", top[i].count);
            jw_obj_end(&w);
        }
        jw_arr_end(&w);
    } else {
        jw_null(&w);
    }
    jw_key(&w, "histogram");
    struct jspan edges = cs->v[S_EDGES];
    if (!has_hist(k) || !edges.p || jspan_is_null(edges)) {
        jw_null(&w);
    } else {
        struct top_entry *counts;
        size_t ncounts;
        if (!read_map(cs->v[S_HIST], a, &counts, &ncounts))
            return false;
        /* nice widths: at most EXPLORE_HIST_BUCKETS buckets, one more for
         * the alignment, one more for a rounded last edge */
        struct jspan e[EXPLORE_HIST_BUCKETS + 4];
        size_t ne = 0;
        struct jspan_iter it;
        struct jspan ev;
        if (!jspan_iter_init(&it, edges))
            return false;
        while (ne < EXPLORE_HIST_BUCKETS + 4 && jspan_next(&it, NULL, &ev))
            e[ne++] = ev;
        if (it.bad || ne < 2 || ne > EXPLORE_HIST_BUCKETS + 3)
            return false;
        jw_obj_begin(&w);
        jw_key(&w, "buckets");
        jw_arr_begin(&w);
        for (size_t b = 0; b + 1 < ne; b++) {
            int64_t c = 0;
            for (size_t j = 0; j < ncounts; j++) {
                int64_t idx;
                if (jspan_int(counts[j].value, &idx) && idx == (int64_t)b)
                    c = counts[j].count;
            }
            jw_obj_begin(&w);
            jw_key(&w, "lo");
            jw_rawn(&w, e[b].p, e[b].n);
            jw_key(&w, "hi");
            jw_rawn(&w, e[b + 1].p, e[b + 1].n);
            jw_kint(&w, "count", c);
            jw_obj_end(&w);
        }
        jw_arr_end(&w);
        jw_obj_end(&w);
    }
    jw_obj_end(&w);
    return !sb->overflow;
}

/* ---------------------------------------------------------- the cache */

struct summary {
    char gen_id[27];
    int64_t rows;
    size_t ncols;
    char **names;       /* column names, for ?columns= */
    char **json;        /* one object per column */
    uint64_t used;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct summary *cache[EXPLORE_SUMMARY_CACHE];
static size_t cache_n;
static uint64_t cache_tick, computed;

static void summary_free(struct summary *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->ncols; i++) {
        free(s->names ? s->names[i] : NULL);
        free(s->json ? s->json[i] : NULL);
    }
    free(s->names);
    free(s->json);
    free(s);
}

/* Under cache_lock. */
static struct summary *cache_find(const char *gen_id)
{
    for (size_t i = 0; i < cache_n; i++)
        if (strcmp(cache[i]->gen_id, gen_id) == 0) {
            cache[i]->used = ++cache_tick;
            return cache[i];
        }
    return NULL;
}

/* Takes s; returns the entry to use (another request's, when it won). */
static struct summary *cache_put(struct summary *s)
{
    struct summary *have = cache_find(s->gen_id);
    if (have) {
        summary_free(s);
        return have;
    }
    if (cache_n == EXPLORE_SUMMARY_CACHE) {
        size_t old = 0;
        for (size_t i = 1; i < cache_n; i++)
            if (cache[i]->used < cache[old]->used)
                old = i;
        summary_free(cache[old]);
        cache[old] = cache[--cache_n];
    }
    s->used = ++cache_tick;
    cache[cache_n++] = s;
    computed++;
    return s;
}

void explore_cache_stats(uint64_t *out_entries, uint64_t *out_computed)
{
    pthread_mutex_lock(&cache_lock);
    *out_entries = cache_n;
    *out_computed = computed;
    pthread_mutex_unlock(&cache_lock);
}

void explore_cache_clear(void)
{
    pthread_mutex_lock(&cache_lock);
    for (size_t i = 0; i < cache_n; i++)
        summary_free(cache[i]);
    cache_n = 0;
    pthread_mutex_unlock(&cache_lock);
}

/* ------------------------------------------------------------ compute */

static enum vt_err compute(const struct explore_ctx *x, struct summary **out,
                           struct vt_error *err)
{
    const struct cat_generation *gen = x->gen;
    enum vt_err rc = VT_ERR_OK;
    struct summary *s = calloc(1, sizeof *s);
    struct col_spans *cs = calloc(gen->n_cols ? gen->n_cols : 1, sizeof *cs);
    struct strbuf sql, rows;
    sb_init(&sql, 0);
    sb_init(&rows, EXPLORE_MAX_RESULT_BYTES);
    if (!s || !cs || !(s->names = calloc(gen->n_cols ? gen->n_cols : 1, sizeof *s->names)) ||
        !(s->json = calloc(gen->n_cols ? gen->n_cols : 1, sizeof *s->json))) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        goto done;
    }
    memcpy(s->gen_id, gen->id, sizeof s->gen_id);
    s->ncols = gen->n_cols;
    /* EXPLORE_SUMMARY_COLUMNS columns per statement (explore.h): what DuckDB
     * allocates for one grows with the square of its aggregates. */
    size_t lo = 0;
    do {
        size_t hi = gen->n_cols - lo > EXPLORE_SUMMARY_COLUMNS ? lo + EXPLORE_SUMMARY_COLUMNS
                                                                : gen->n_cols;
        sb_reset(&sql);
        sb_reset(&rows);
        build_sql(gen, lo, hi, &sql);
        if (sql.overflow) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
            goto done;
        }
        struct exec_plan plan = {
            .kind = EXEC_SQL,
            .sql = sql.buf,
            .gen = x->gen,
            .job = x->job,
            .arena = x->arena,
            .timing = x->timing,
        };
        if ((rc = explore_run_json(&plan, &rows, NULL, err))) {
            /* DuckDB failing on our own statement is our fault, not the client's */
            if (rc == VT_ERR_QUERY_FAILED) {
                struct vt_error why = *err;
                vt_error_clear(err);
                rc = vt_error_set(err, VT_ERR_INTERNAL, "the summary could not be computed: %s",
                                  vt_error_message(&why));
            }
            goto done;
        }
        /* [{"rows":n,"n0":...}] */
        struct jspan_iter it, fields;
        struct jspan row, key, val;
        if (!jspan_iter_init(&it, (struct jspan){rows.buf, rows.len}) ||
            !jspan_next(&it, NULL, &row) || !jspan_iter_init(&fields, row)) {
            rc = vt_error_set(err, VT_ERR_INTERNAL, "the summary could not be read");
            goto done;
        }
        int64_t nrows = 0;
        while (jspan_next(&fields, &key, &val)) {
            enum slot sl;
            size_t col;
            if (key.n == 6 && memcmp(key.p, "\"rows\"", 6) == 0) {
                if (!jspan_int(val, &nrows))
                    nrows = 0;
            } else if (parse_key(key, &sl, &col) && col >= lo && col < hi) {
                cs[col].v[sl] = val; /* null included: the min of no values */
            }
        }
        if (fields.bad) {
            rc = vt_error_set(err, VT_ERR_INTERNAL, "the summary could not be read");
            goto done;
        }
        s->rows = nrows;
        /* the spans point into `rows`: written out before the next statement */
        for (size_t i = lo; i < hi; i++) {
            struct strbuf one;
            sb_init(&one, 0);
            bool ok = write_column(&gen->cols[i], nrows, &cs[i], x->arena, &one);
            s->names[i] = strdup(gen->cols[i].name);
            s->json[i] = ok ? sb_detach(&one, NULL) : NULL;
            sb_release(&one);
            if (!s->names[i] || !s->json[i]) {
                rc = vt_error_set(err, ok ? VT_ERR_OUT_OF_MEMORY : VT_ERR_INTERNAL,
                                  ok ? NULL : "the summary of a column could not be read");
                goto done;
            }
        }
        lo = hi;
    } while (lo < gen->n_cols);
    *out = s;
    s = NULL;
done:
    summary_free(s);
    free(cs);
    sb_release(&sql);
    sb_release(&rows);
    return rc;
}

/* ---------------------------------------------------------- selection */

/* Marks the columns `spec` names in sel[] (all when spec is empty). */
static enum vt_err select_columns(const struct summary *s, const char *spec, bool *sel,
                                  struct vt_error *err)
{
    if (!spec || !*spec) {
        for (size_t i = 0; i < s->ncols; i++)
            sel[i] = true;
        return VT_ERR_OK;
    }
    json_t *list = NULL;
    if (spec[0] == '[') {
        json_error_t jerr;
        list = json_loads(spec, JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_array(list)) {
            json_decref(list);
            return vt_error_set(err, VT_ERR_INVALID_QUERY,
                                "columns: a comma-separated list of names, or a JSON array of "
                                "them");
        }
    }
    size_t n = list ? json_array_size(list) : 1;
    const char *p = spec;
    enum vt_err rc = VT_ERR_OK;
    for (size_t k = 0; rc == VT_ERR_OK && (list ? k < n : *p != '\0' || k == 0); k++) {
        const char *name;
        size_t len;
        if (list) {
            const json_t *v = json_array_get(list, k);
            if (!json_is_string(v)) {
                rc = vt_error_set(err, VT_ERR_INVALID_QUERY, "columns[%zu]: must be a string", k);
                break;
            }
            name = json_string_value(v);
            len = json_string_length(v);
        } else {
            name = p;
            len = strcspn(p, ",");
            p += len;
            if (*p == ',')
                p++;
        }
        size_t i = 0;
        while (i < s->ncols && !(strlen(s->names[i]) == len && memcmp(s->names[i], name, len) == 0))
            i++;
        if (i == s->ncols)
            rc = vt_error_set(err, VT_ERR_UNKNOWN_COLUMN, "columns: unknown column \"%.*s\"",
                              len > 64 ? 64 : (int)len, name);
        else
            sel[i] = true;
    }
    json_decref(list);
    return rc;
}

/* The answer from a cached entry; under cache_lock. */
static enum vt_err write_answer(const struct explore_ctx *x, const struct summary *s,
                                const char *columns, struct strbuf *out, struct vt_error *err)
{
    bool *sel = calloc(s->ncols ? s->ncols : 1, sizeof *sel);
    if (!sel)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    enum vt_err rc = select_columns(s, columns, sel, err);
    if (rc == VT_ERR_OK) {
        struct jw w;
        jw_init(&w, out);
        jw_obj_begin(&w);
        jw_kstr(&w, "name", x->dataset);
        jw_kint(&w, "rows", s->rows);
        jw_kstr(&w, "generation", s->gen_id);
        jw_key(&w, "columns");
        jw_arr_begin(&w);
        for (size_t i = 0; i < s->ncols; i++)
            if (sel[i])
                jw_raw(&w, s->json[i]);
        jw_arr_end(&w);
        jw_obj_end(&w);
        if (out->overflow)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "the summary does not fit in memory");
    }
    free(sel);
    return rc;
}

enum vt_err explore_summary(const struct explore_ctx *x, const char *columns, struct strbuf *out,
                            struct vt_error *err)
{
    /* Entries are used under the lock: another request may evict one. */
    pthread_mutex_lock(&cache_lock);
    struct summary *s = cache_find(x->gen->id);
    enum vt_err rc = s ? write_answer(x, s, columns, out, err) : VT_ERR_OK;
    pthread_mutex_unlock(&cache_lock);
    if (s)
        return rc;
    struct summary *fresh = NULL;
    int64_t t0 = time_mono_us();
    if (compute(x, &fresh, err) != VT_ERR_OK)
        return err->code;
    log_info("dataset %s: summary of generation %s computed (%zu columns, %lld ms)", x->dataset,
             x->gen->id, fresh->ncols, (long long)((time_mono_us() - t0) / 1000));
    pthread_mutex_lock(&cache_lock);
    s = cache_put(fresh);
    rc = write_answer(x, s, columns, out, err);
    pthread_mutex_unlock(&cache_lock);
    return rc;
}
