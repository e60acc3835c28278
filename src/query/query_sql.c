/*
 * query_build_sql: a validated struct query_request -> one SELECT statement
 * with `?` placeholders and the typed values to bind, in placeholder order.
 * Identifiers come from the schema (or are aliases) and are always quoted;
 * values are always `CAST(? AS <type>)` so the parameter's type is ours, not
 * inferred from the column. Also the equality-index accessor and the binder.
 *
 * Shapes:
 *   SELECT [DISTINCT] "a", "b" FROM rel [WHERE ...] [ORDER BY ...] [LIMIT n [OFFSET m]]
 *   SELECT * FROM (SELECT "g", count(*) AS "count" FROM rel [WHERE ...] GROUP BY "g") AS "q"
 *       [WHERE <having>] [ORDER BY ...] [LIMIT ...]
 *   SELECT count(*) AS "count" FROM rel [WHERE ...]
 * Grouped queries are wrapped so that having and order_by refer to output
 * names only, and never depend on how DuckDB's binder resolves a name that is
 * both an aggregation alias and a table column (aliases may shadow columns).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "query/query_int.h"
#include "util/strbuf.h"

/* The SQL text is bounded by the request limits (at most VT_MAX_QUERY_PARAMS
 * values and a few thousand names); this cap only backs that up. */
#define SQL_MAX_BYTES (16u * 1024 * 1024)

struct bctx {
    const struct query_request *req;
    struct arena *arena;
    struct strbuf sb;
    struct query_value *params;
    size_t nparams, cap;
};

static const char *agg_fn[] = {
    [QUERY_AGG_COUNT] = "count",
    [QUERY_AGG_SUM] = "sum",
    [QUERY_AGG_AVG] = "avg",
    [QUERY_AGG_MIN] = "min",
    [QUERY_AGG_MAX] = "max",
    [QUERY_AGG_COUNT_DISTINCT] = "count",
    [QUERY_AGG_MEDIAN] = "median",
    [QUERY_AGG_QUANTILE] = "quantile_cont",
    [QUERY_AGG_STDDEV] = "stddev_samp",
};

static const char *cmp_sql[] = {
    [QUERY_OP_EQ] = " = ",  [QUERY_OP_NEQ] = " <> ", [QUERY_OP_GT] = " > ",
    [QUERY_OP_GTE] = " >= ", [QUERY_OP_LT] = " < ",  [QUERY_OP_LTE] = " <= ",
};

static const char *colname(const struct bctx *b, size_t i)
{
    return b->req->schema->cols[i].name;
}

static void add_param(struct bctx *b, const struct query_value *v)
{
    /* The builder pre-sizes params from the request, so this never grows. */
    if (b->nparams < b->cap)
        b->params[b->nparams++] = *v;
    else
        b->sb.overflow = true;
    sb_adds(&b->sb, "CAST(? AS ");
    sb_adds(&b->sb, v->cast);
    sb_addc(&b->sb, ')');
}

/* A JSON column: DuckDB reports it as VARCHAR with the type text "JSON". */
static bool is_json(const struct query_column *c)
{
    return c->type == DUCKDB_TYPE_VARCHAR && c->type_sql && strcmp(c->type_sql, "JSON") == 0;
}

/* The left-hand side of a predicate: an enum column compares as VARCHAR, so
 * that `in`/`eq` with a label the enum lacks is simply false, and like works.
 * A JSON column compares as its text too (the schema shows it as a string and
 * the equality index keys it by its text): JSON = VARCHAR would make DuckDB
 * parse the value as JSON and fail the query on "abc". */
static void add_lhs(struct bctx *b, const struct query_pred *p)
{
    const char *name;
    size_t col;
    if (p->ref.is_agg) {
        const struct query_agg *ag = &b->req->aggs[p->ref.idx];
        name = ag->alias;
        /* min/max keep the column's type; count/sum/avg are numbers. */
        col = ag->op == QUERY_AGG_MIN || ag->op == QUERY_AGG_MAX ? ag->col : QUERY_NO_COLUMN;
    } else if (p->ref.is_group) {
        const struct query_group *g = &b->req->groups[p->ref.grp];
        name = g->name;
        /* A bucket is a date, time or number, never an enum or JSON. */
        col = g->bucket == QUERY_BUCKET_NONE ? g->col : QUERY_NO_COLUMN;
    } else {
        name = colname(b, p->ref.idx);
        col = p->ref.idx;
    }
    const struct query_column *c = col != QUERY_NO_COLUMN ? &b->req->schema->cols[col] : NULL;
    bool as_text = c && (c->type == DUCKDB_TYPE_ENUM || is_json(c));
    if (as_text && p->op != QUERY_OP_IS_NULL && p->op != QUERY_OP_IS_NOT_NULL) {
        sb_adds(&b->sb, "CAST(");
        sb_add_sql_ident(&b->sb, name);
        sb_adds(&b->sb, " AS VARCHAR)");
    } else {
        sb_add_sql_ident(&b->sb, name);
    }
}

/* Values that can share one IN list or one list parameter: same cast and
 * same kind (on a REAL column both integers and fractions cast to FLOAT). */
static bool same_cast(const struct query_value *a, const struct query_value *c)
{
    return a->kind == c->kind && strcmp(a->cast, c->cast) == 0;
}

/* ` IN (SELECT unnest(CAST(? AS T[])))` with one LIST parameter holding the
 * `same` values of p->vals[first..] that share vals[first]'s cast. */
static void add_in_array(struct bctx *b, const struct query_pred *p, size_t first, size_t same)
{
    struct query_value *items = arena_alloc(b->arena, same * sizeof *items);
    char *cast = arena_sprintf(b->arena, "%s[]", p->vals[first].cast);
    if (!items || !cast) {
        b->sb.overflow = true; /* reported as a failure by query_build_sql */
        return;
    }
    size_t n = 0;
    for (size_t k = first; k < p->nvals; k++)
        if (same_cast(&p->vals[k], &p->vals[first]))
            items[n++] = p->vals[k];
    struct query_value list = {.kind = QUERY_VALUE_LIST, .cast = cast};
    list.u.list.items = items;
    list.u.list.n = n;
    sb_adds(&b->sb, " IN (SELECT unnest(");
    add_param(b, &list);
    sb_adds(&b->sb, "))");
}

static void add_pred(struct bctx *b, const struct query_pred *p)
{
    switch (p->op) {
    case QUERY_OP_IS_NULL:
    case QUERY_OP_IS_NOT_NULL:
        add_lhs(b, p);
        sb_adds(&b->sb, p->op == QUERY_OP_IS_NULL ? " IS NULL" : " IS NOT NULL");
        return;
    case QUERY_OP_BETWEEN:
        if (!same_cast(&p->vals[0], &p->vals[1])) {
            /* Bounds of two types (BIGINT and DOUBLE): one BETWEEN would
             * compare all three in their common type, DOUBLE, where 2^53+1
             * equals 2^53; two comparisons keep each exact, as `in` does. */
            sb_addc(&b->sb, '(');
            add_lhs(b, p);
            sb_adds(&b->sb, " >= ");
            add_param(b, &p->vals[0]);
            sb_adds(&b->sb, " AND ");
            add_lhs(b, p);
            sb_adds(&b->sb, " <= ");
            add_param(b, &p->vals[1]);
            sb_addc(&b->sb, ')');
            return;
        }
        add_lhs(b, p);
        sb_adds(&b->sb, " BETWEEN ");
        add_param(b, &p->vals[0]);
        sb_adds(&b->sb, " AND ");
        add_param(b, &p->vals[1]);
        return;
    case QUERY_OP_IN: {
        if (p->nvals == 0) {
            sb_adds(&b->sb, "false");
            return;
        }
        /* One IN list per cast type: DuckDB unifies an IN list to one type,
         * and BIGINT values next to DOUBLE ones would be compared as DOUBLE
         * (2^53+1 would match 2^53). Mixed lists become ORed IN lists. */
        size_t groups = 0;
        for (size_t i = 0; i < p->nvals; i++) {
            size_t j = 0;
            while (j < i && !same_cast(&p->vals[j], &p->vals[i]))
                j++;
            if (j == i)
                groups++;
        }
        if (groups > 1)
            sb_addc(&b->sb, '(');
        size_t done_groups = 0;
        for (size_t i = 0; i < p->nvals; i++) {
            size_t j = 0;
            while (j < i && !same_cast(&p->vals[j], &p->vals[i]))
                j++;
            if (j < i)
                continue; /* this cast type was written with an earlier value */
            if (done_groups++)
                sb_adds(&b->sb, " OR ");
            add_lhs(b, p);
            size_t same = 0;
            for (size_t k = i; k < p->nvals; k++)
                same += same_cast(&p->vals[k], &p->vals[i]);
            if (same > QUERY_IN_ARRAY_MIN) {
                add_in_array(b, p, i, same);
                continue;
            }
            sb_adds(&b->sb, " IN (");
            bool first = true;
            for (size_t k = i; k < p->nvals; k++) {
                if (!same_cast(&p->vals[k], &p->vals[i]))
                    continue;
                if (!first)
                    sb_adds(&b->sb, ", ");
                first = false;
                add_param(b, &p->vals[k]);
            }
            sb_addc(&b->sb, ')');
        }
        if (groups > 1)
            sb_addc(&b->sb, ')');
        return;
    }
    case QUERY_OP_LIKE:
    case QUERY_OP_ILIKE: {
        /* Our linear matcher (query_like.c), never DuckDB's backtracking
         * LIKE; ilike folds both sides with DuckDB's lower(), as its ILIKE. */
        bool fold = p->op == QUERY_OP_ILIKE;
        sb_adds(&b->sb, QUERY_LIKE_FUNCTION "(");
        sb_adds(&b->sb, fold ? "lower(" : "");
        add_lhs(b, p);
        sb_adds(&b->sb, fold ? "), lower(" : ", ");
        add_param(b, &p->vals[0]);
        sb_adds(&b->sb, fold ? "))" : ")");
        return;
    }
    default:
        add_lhs(b, p);
        sb_adds(&b->sb, cmp_sql[p->op]);
        add_param(b, &p->vals[0]);
        return;
    }
}

static void add_where(struct bctx *b, const struct query_pred *preds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sb_adds(&b->sb, i ? " AND " : " WHERE ");
        add_pred(b, &preds[i]);
    }
}

static bool is_int64_or_narrower(duckdb_type t)
{
    switch (t) {
    case DUCKDB_TYPE_TINYINT: case DUCKDB_TYPE_SMALLINT: case DUCKDB_TYPE_INTEGER:
    case DUCKDB_TYPE_BIGINT: case DUCKDB_TYPE_UTINYINT: case DUCKDB_TYPE_USMALLINT:
    case DUCKDB_TYPE_UINTEGER: case DUCKDB_TYPE_UBIGINT:
        return true;
    default:
        return false;
    }
}

/* A sum over an integer column: compiled with an overflow check whose message
 * is one bound parameter. */
static bool is_int_sum(const struct query_request *req, const struct query_agg *ag)
{
    return ag->op == QUERY_AGG_SUM && ag->col != QUERY_NO_COLUMN &&
           is_int64_or_narrower(req->schema->cols[ag->col].type);
}

static void add_agg_expr(struct bctx *b, const struct query_agg *ag)
{
    if (is_int_sum(b->req, ag)) {
        /* DuckDB sums integers as HUGEINT (Arrow Decimal128(38,0)); clients
         * expect the column's integer kind back: a 64-bit integer, and a
         * clear error (never a wrapped number) past its range. */
        sb_adds(&b->sb, "CASE WHEN sum(");
        sb_add_sql_ident(&b->sb, colname(b, ag->col));
        sb_adds(&b->sb, ") IS NULL OR sum(");
        sb_add_sql_ident(&b->sb, colname(b, ag->col));
        sb_adds(&b->sb, ") BETWEEN -9223372036854775808 AND 9223372036854775807 THEN CAST(sum(");
        sb_add_sql_ident(&b->sb, colname(b, ag->col));
        sb_adds(&b->sb, ") AS BIGINT) ELSE error(");
        /* The message is a bound parameter: the SQL text never holds a string
         * literal (fuzz_query checks that rule on every accepted request). */
        struct query_value msg = {.kind = QUERY_VALUE_VARCHAR, .cast = "VARCHAR"};
        msg.u.s.ptr = arena_sprintf(b->arena, "sum overflows a 64-bit integer: %s", colname(b, ag->col));
        msg.u.s.len = msg.u.s.ptr ? strlen(msg.u.s.ptr) : 0;
        if (!msg.u.s.ptr)
            b->sb.overflow = true;
        else
            add_param(b, &msg);
        sb_adds(&b->sb, ") END");
        return;
    }
    sb_adds(&b->sb, agg_fn[ag->op]);
    sb_addc(&b->sb, '(');
    if (ag->op == QUERY_AGG_COUNT_DISTINCT)
        sb_adds(&b->sb, "DISTINCT ");
    if (ag->col == QUERY_NO_COLUMN)
        sb_addc(&b->sb, '*');
    else
        sb_add_sql_ident(&b->sb, colname(b, ag->col));
    if (ag->op == QUERY_AGG_QUANTILE) {
        /* A bound parameter: one prepared plan serves every q. */
        struct query_value q = {.kind = QUERY_VALUE_DOUBLE, .u.d = ag->q, .cast = "DOUBLE"};
        sb_adds(&b->sb, ", ");
        add_param(b, &q);
    }
    sb_addc(&b->sb, ')');
}

/* The type a time bucket is cast back to: the column's own (date_trunc turns
 * a TIMESTAMP_NS or a DATE into something else). Fixed names, never the
 * schema's text. */
static const char *bucket_type(duckdb_type t)
{
    switch (t) {
    case DUCKDB_TYPE_DATE: return "DATE";
    case DUCKDB_TYPE_TIME: return "TIME";
    case DUCKDB_TYPE_TIMESTAMP_S: return "TIMESTAMP_S";
    case DUCKDB_TYPE_TIMESTAMP_MS: return "TIMESTAMP_MS";
    case DUCKDB_TYPE_TIMESTAMP_NS: return "TIMESTAMP_NS";
    case DUCKDB_TYPE_TIMESTAMP_TZ: return "TIMESTAMPTZ";
    default: return "TIMESTAMP";
    }
}

/* Integer columns whose bucket bounds fit a BIGINT (the others: HUGEINT). */
static bool int_fits_bigint(duckdb_type t)
{
    switch (t) {
    case DUCKDB_TYPE_TINYINT: case DUCKDB_TYPE_SMALLINT: case DUCKDB_TYPE_INTEGER:
    case DUCKDB_TYPE_BIGINT: case DUCKDB_TYPE_UTINYINT: case DUCKDB_TYPE_USMALLINT:
    case DUCKDB_TYPE_UINTEGER:
        return true;
    default:
        return false;
    }
}

/* Decimal digits a bucket width needs (0.1 -> 1, 2.5 -> 1, 5 -> 0; at most
 * 15): bucket bounds are rounded to them, so 3 * 0.1 shows as 0.3. */
static int width_digits(double w)
{
    double scale = 1;
    for (int k = 0; k < 15; k++, scale *= 10) {
        double x = w * scale;
        if (fabs(x - nearbyint(x)) <= 1e-9 * fmax(1.0, fabs(x)))
            return k;
    }
    return 15;
}

/* A group_by entry's expression: the column, a time bucket or a numeric
 * bucket's lower bound. Widths are bound parameters. */
static void add_group_expr(struct bctx *b, const struct query_group *g)
{
    const struct query_column *c = &b->req->schema->cols[g->col];
    if (g->bucket == QUERY_BUCKET_NONE) {
        sb_add_sql_ident(&b->sb, c->name);
        return;
    }
    if (g->bucket != QUERY_BUCKET_WIDTH) {
        sb_adds(&b->sb, "CAST(date_trunc('");
        sb_adds(&b->sb, query_bucket_name(g->bucket));
        sb_adds(&b->sb, c->type == DUCKDB_TYPE_TIME ? "', DATE '1970-01-01' + " : "', ");
        sb_add_sql_ident(&b->sb, c->name);
        sb_adds(&b->sb, ") AS ");
        sb_adds(&b->sb, bucket_type(c->type));
        sb_addc(&b->sb, ')');
        return;
    }
    if (query_class_of(c->type) == QC_INT && g->width.kind == QUERY_VALUE_INT64) {
        /* Exact: v - ((v % w) + w) % w is the multiple of w at or below v
         * (DuckDB's % keeps the dividend's sign), in HUGEINT so no value
         * overflows on the way. */
        struct query_value w = g->width;
        w.cast = "HUGEINT";
        sb_adds(&b->sb, "CAST(CAST(");
        sb_add_sql_ident(&b->sb, c->name);
        sb_adds(&b->sb, " AS HUGEINT) - ((CAST(");
        sb_add_sql_ident(&b->sb, c->name);
        sb_adds(&b->sb, " AS HUGEINT) % ");
        add_param(b, &w);
        sb_adds(&b->sb, ") + ");
        add_param(b, &w);
        sb_adds(&b->sb, ") % ");
        add_param(b, &w);
        sb_adds(&b->sb, int_fits_bigint(c->type) ? " AS BIGINT)" : " AS HUGEINT)");
        return;
    }
    struct query_value w = g->width;
    w.cast = "DOUBLE";
    double wd = w.kind == QUERY_VALUE_INT64 ? (double)w.u.i : w.u.d;
    struct query_value digits = {.kind = QUERY_VALUE_INT64, .u.i = width_digits(wd),
                                 .cast = "INTEGER"};
    /* The value is nudged up by 2^-50 of itself before the division: the
     * doubles of 0.3 and 0.1 divide to 2.9999999999999996, so a plain floor
     * put 0.3 in the bucket of 0.2 (and 0.3 had none). Binary rounding of a
     * decimal value and of the width errs by a few 2^-53 relative; a value
     * within that of a bound is on it. */
    sb_adds(&b->sb, "round(floor((CAST(");
    sb_add_sql_ident(&b->sb, c->name);
    sb_adds(&b->sb, " AS DOUBLE) + abs(CAST(");
    sb_add_sql_ident(&b->sb, c->name);
    sb_adds(&b->sb, " AS DOUBLE)) * 8.881784197001252e-16) / ");
    add_param(b, &w);
    sb_adds(&b->sb, ") * ");
    add_param(b, &w);
    sb_adds(&b->sb, ", ");
    add_param(b, &digits);
    sb_addc(&b->sb, ')');
}

/* Whether every group_by entry is a plain column under its own name (then
 * GROUP BY names them, as it always did; otherwise it goes by position). */
static bool groups_plain(const struct query_request *r)
{
    for (size_t g = 0; g < r->ngroup; g++)
        if (r->groups[g].bucket != QUERY_BUCKET_NONE ||
            strcmp(r->groups[g].name, r->schema->cols[r->groups[g].col].name) != 0)
            return false;
    return true;
}

/* Whether a having predicate reads aggregation k (count_result keeps only
 * those: the others do not change how many groups there are). */
static bool having_reads(const struct query_request *r, size_t k)
{
    for (size_t i = 0; i < r->nhaving; i++)
        if (r->having[i].ref.is_agg && r->having[i].ref.idx == k)
            return true;
    return false;
}

/* Whether order_by already names key k: group_by entry k of a grouped
 * query, column k of a DISTINCT one (not an aggregation). */
static bool ordered_by(const struct query_request *r, size_t k)
{
    for (size_t i = 0; i < r->norder; i++) {
        const struct query_ref *ref = &r->order[i].ref;
        if (!ref->is_agg && (r->ngroup > 0 ? ref->is_group && ref->grp == k : ref->idx == k))
            return true;
    }
    return false;
}

static void add_order(struct bctx *b)
{
    const struct query_request *r = b->req;
    size_t n = 0;
    for (size_t i = 0; i < r->norder; i++, n++) {
        const struct query_order *o = &r->order[i];
        sb_adds(&b->sb, n ? ", " : " ORDER BY ");
        sb_add_sql_ident(&b->sb, o->ref.is_agg     ? r->aggs[o->ref.idx].alias
                                 : o->ref.is_group ? r->groups[o->ref.grp].name
                                                   : colname(b, o->ref.idx));
        /* NULLs last both ways, written out so no setting can change it. */
        sb_adds(&b->sb, o->desc ? " DESC NULLS LAST" : " ASC NULLS LAST");
    }
    /* Pages must partition the result. A hash aggregate (group_by, distinct)
     * hands out its rows in an order that changes from one run to the next,
     * so page 2 repeated rows of page 1 and dropped others (issue 21 item 5):
     * paged, such queries are ordered by their key after order_by (the group
     * columns, unique per row; for distinct every column). A plain query
     * keeps DuckDB's scan order (insertion order is preserved), and is not
     * sorted. */
    if (r->mode != QUERY_PAGED || (r->ngroup == 0 && !r->distinct))
        return;
    size_t nkey = r->ngroup > 0 ? r->ngroup : r->ncolumns;
    for (size_t k = 0; k < nkey; k++) {
        size_t key = r->ngroup > 0 ? k : r->columns[k];
        if (ordered_by(r, key))
            continue;
        sb_adds(&b->sb, n++ ? ", " : " ORDER BY ");
        /* a group's output name (a bucket's alias), or the column */
        sb_add_sql_ident(&b->sb, r->ngroup > 0 ? r->groups[k].name : colname(b, key));
        sb_adds(&b->sb, " ASC NULLS LAST");
    }
}

static void add_limit(struct bctx *b)
{
    const struct query_request *r = b->req;
    if (r->mode == QUERY_COUNT || r->max_rows < 0 || r->count_result)
        return;
    if (r->norder == 0 && r->offset <= 0 && r->npreds == 0 && r->ngroup == 0 &&
        r->naggs == 0 && !r->distinct) {
        /* A plain first page binds its limit. DuckDB 1.4.4's late
         * materialization rewrites an unfiltered, unordered `SELECT ... LIMIT
         * n` with a constant n > 50 over a table (or a Parquet view) into a
         * rowid semi-join with a second scan and a sort (filters, grouping,
         * DISTINCT and ORDER BY ... LIMIT n > 50 keep it away already):
         * on the 1M-row bench table a 100,000-row first page took 52 ms
         * instead of 10 ms, a 1,000-row one 0.95 ms instead of 0.18 ms. It
         * leaves a bound limit alone, and a first page gains nothing from it.
         * (The optimizer switch `disabled_optimizers` would do the same, but
         * it is one setting for the whole database, and the configuration is
         * locked.) */
        struct query_value v = {.kind = QUERY_VALUE_INT64, .u.i = r->max_rows,
                                .cast = "BIGINT"};
        sb_adds(&b->sb, " LIMIT ");
        add_param(b, &v);
        return;
    }
    /* Literals on purpose (see query.h): computed int64s, never client text.
     * Deep pages and small ORDER BY ... LIMIT gain from late materialization
     * (1,000 rows at offset 500,000: 1.4 ms with it, 34 ms without). */
    sb_addf(&b->sb, " LIMIT %" PRId64, r->max_rows);
    if (r->offset > 0)
        sb_addf(&b->sb, " OFFSET %" PRId64, r->offset);
}

/* An upper bound of the placeholders (a long in list becomes one). */
static size_t count_params(const struct query_pred *p, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += p[i].nvals;
    return total;
}

enum vt_err query_build_sql(const struct query_request *req, const char *relation,
                            struct arena *arena, struct query_plan *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    struct bctx b = {.req = req, .arena = arena};
    sb_init(&b.sb, SQL_MAX_BYTES);
    b.cap = count_params(req->preds, req->npreds) +
            (req->mode == QUERY_COUNT ? 0 : count_params(req->having, req->nhaving) + 1 /* limit */);
    if (req->mode != QUERY_COUNT) {
        for (size_t g = 0; g < req->ngroup; g++)
            b.cap += req->groups[g].bucket == QUERY_BUCKET_WIDTH ? 3 : 0;
        for (size_t a = 0; a < req->naggs; a++)
            b.cap += req->aggs[a].op == QUERY_AGG_QUANTILE || is_int_sum(req, &req->aggs[a]);
    }
    b.params = arena_alloc(arena, (b.cap ? b.cap : 1) * sizeof *b.params);

    size_t nout = req->mode == QUERY_COUNT || req->count_result ? 1
                  : req->ngroup > 0                            ? req->ngroup + req->naggs
                                                               : req->ncolumns;
    const char **names = arena_alloc(arena, (nout ? nout : 1) * sizeof *names);
    if (!b.params || !names) {
        sb_release(&b.sb);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "query request too large for memory");
    }

    if (req->mode == QUERY_COUNT) {
        sb_adds(&b.sb, "SELECT count(*) AS \"count\" FROM ");
        sb_adds(&b.sb, relation);
        add_where(&b, req->preds, req->npreds);
        names[0] = "count";
    } else if (req->ngroup > 0) {
        sb_adds(&b.sb, req->count_result ? "SELECT count(*) AS \"count\" FROM (SELECT "
                                         : "SELECT * FROM (SELECT ");
        size_t k = 0;
        bool plain = groups_plain(req);
        for (size_t g = 0; g < req->ngroup; g++, k++) {
            const struct query_group *gr = &req->groups[g];
            if (k)
                sb_adds(&b.sb, ", ");
            add_group_expr(&b, gr);
            if (!plain) {
                sb_adds(&b.sb, " AS ");
                sb_add_sql_ident(&b.sb, gr->name);
            }
            names[k] = gr->name;
        }
        for (size_t a = 0; a < req->naggs; a++) {
            if (req->count_result && !having_reads(req, a))
                continue;
            sb_adds(&b.sb, ", ");
            add_agg_expr(&b, &req->aggs[a]);
            sb_adds(&b.sb, " AS ");
            sb_add_sql_ident(&b.sb, req->aggs[a].alias);
            if (!req->count_result)
                names[k++] = req->aggs[a].alias;
        }
        sb_adds(&b.sb, " FROM ");
        sb_adds(&b.sb, relation);
        add_where(&b, req->preds, req->npreds);
        for (size_t g = 0; g < req->ngroup; g++) {
            sb_adds(&b.sb, g ? ", " : " GROUP BY ");
            if (plain)
                sb_add_sql_ident(&b.sb, colname(&b, req->group_by[g]));
            else
                sb_addf(&b.sb, "%zu", g + 1); /* by position: an expression or an alias */
        }
        sb_adds(&b.sb, ") AS \"q\"");
        add_where(&b, req->having, req->nhaving);
        if (req->count_result) {
            names[0] = "count";
        } else {
            add_order(&b);
            add_limit(&b);
        }
    } else if (req->count_result) {
        /* DISTINCT rows counted (query_total_request builds no other). */
        sb_adds(&b.sb, "SELECT count(*) AS \"count\" FROM (SELECT DISTINCT ");
        for (size_t i = 0; i < req->ncolumns; i++) {
            if (i)
                sb_adds(&b.sb, ", ");
            sb_add_sql_ident(&b.sb, colname(&b, req->columns[i]));
        }
        sb_adds(&b.sb, " FROM ");
        sb_adds(&b.sb, relation);
        add_where(&b, req->preds, req->npreds);
        sb_adds(&b.sb, ") AS \"q\"");
        names[0] = "count";
    } else {
        sb_adds(&b.sb, req->distinct ? "SELECT DISTINCT " : "SELECT ");
        for (size_t i = 0; i < req->ncolumns; i++) {
            if (i)
                sb_adds(&b.sb, ", ");
            sb_add_sql_ident(&b.sb, colname(&b, req->columns[i]));
            names[i] = colname(&b, req->columns[i]);
        }
        if (req->ncolumns == 0)
            sb_adds(&b.sb, "*"); /* a schema with no columns; DuckDB has none */
        sb_adds(&b.sb, " FROM ");
        sb_adds(&b.sb, relation);
        add_where(&b, req->preds, req->npreds);
        add_order(&b);
        add_limit(&b);
    }

    if (b.sb.overflow) {
        sb_release(&b.sb);
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "query too large to compile");
    }
    char *sql = arena_strndup(arena, b.sb.buf, b.sb.len);
    size_t len = b.sb.len;
    sb_release(&b.sb);
    if (!sql)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "query request too large for memory");
    out->sql = sql;
    out->sql_len = len;
    out->params = b.params;
    out->nparams = b.nparams;
    out->out_names = names;
    out->nout = nout;
    out->page = req->page;
    out->page_size = req->page_size;
    out->offset = req->offset;
    out->max_rows = req->max_rows;
    return VT_ERR_OK;
}

void query_total_request(const struct query_request *req, struct query_request *out)
{
    *out = *req;
    out->include_total = false;
    out->norder = 0;
    out->order = NULL;
    out->limit = -1;
    out->page = 1;
    out->page_size = 0;
    out->offset = 0;
    out->max_rows = -1;
    if (req->ngroup > 0 || req->distinct) {
        out->mode = QUERY_STREAM;
        out->count_result = true;
    } else {
        out->mode = QUERY_COUNT;
        out->count_result = false;
    }
}

int64_t query_total_cap(const struct query_request *req, int64_t n)
{
    return req->limit >= 0 && n > req->limit ? req->limit : n;
}

/* A DuckDB value for one list item (NULL on failure). */
static duckdb_value item_value(const struct query_value *v)
{
    switch (v->kind) {
    case QUERY_VALUE_BOOL:
        return duckdb_create_bool(v->u.b);
    case QUERY_VALUE_INT64:
        return duckdb_create_int64(v->u.i);
    case QUERY_VALUE_DOUBLE:
        return duckdb_create_double(v->u.d);
    case QUERY_VALUE_VARCHAR:
        return duckdb_create_varchar_length(v->u.s.ptr, v->u.s.len);
    case QUERY_VALUE_BLOB:
        return duckdb_create_blob((const uint8_t *)v->u.s.ptr, v->u.s.len);
    case QUERY_VALUE_NULL:
        return duckdb_create_null_value();
    default:
        return NULL;
    }
}

/* The element type of a list: its cast names it ("DATE[]": items given as
 * text are cast by DuckDB), else its first item's kind. */
static duckdb_type list_child_type(const struct query_value *v)
{
    static const struct {
        const char *cast;
        duckdb_type t;
    } named[] = {
        {"BOOLEAN[]", DUCKDB_TYPE_BOOLEAN}, {"BIGINT[]", DUCKDB_TYPE_BIGINT},
        {"DOUBLE[]", DUCKDB_TYPE_DOUBLE},   {"VARCHAR[]", DUCKDB_TYPE_VARCHAR},
        {"DATE[]", DUCKDB_TYPE_DATE},       {"TIMESTAMP[]", DUCKDB_TYPE_TIMESTAMP},
        {"TIMESTAMPTZ[]", DUCKDB_TYPE_TIMESTAMP_TZ}, {"TIME[]", DUCKDB_TYPE_TIME},
        {"INTERVAL[]", DUCKDB_TYPE_INTERVAL}, {"UUID[]", DUCKDB_TYPE_UUID},
        {"BLOB[]", DUCKDB_TYPE_BLOB},       {"NULL[]", DUCKDB_TYPE_SQLNULL},
    };
    for (size_t i = 0; v->cast && i < sizeof named / sizeof named[0]; i++)
        if (!strcmp(v->cast, named[i].cast))
            return named[i].t;
    static const duckdb_type by_kind[] = {
        [QUERY_VALUE_BOOL] = DUCKDB_TYPE_BOOLEAN,
        [QUERY_VALUE_INT64] = DUCKDB_TYPE_BIGINT,
        [QUERY_VALUE_DOUBLE] = DUCKDB_TYPE_DOUBLE,
        [QUERY_VALUE_VARCHAR] = DUCKDB_TYPE_VARCHAR,
    };
    if (v->u.list.n == 0 || v->u.list.items[0].kind >= QUERY_VALUE_LIST)
        return DUCKDB_TYPE_INVALID;
    return by_kind[v->u.list.items[0].kind];
}

/* A list parameter: the query compiler's IN lists (items of one kind) and
 * pgwire's array parameters (NULL items, empty arrays, a typed cast). */
static duckdb_state bind_list(duckdb_prepared_statement stmt, idx_t at,
                              const struct query_value *v)
{
    size_t n = v->u.list.n;
    duckdb_type child = list_child_type(v);
    if (child == DUCKDB_TYPE_INVALID)
        return DuckDBError;
    duckdb_value *items = calloc(n ? n : 1, sizeof *items);
    if (!items)
        return DuckDBError;
    duckdb_state st = DuckDBSuccess;
    for (size_t k = 0; k < n && st == DuckDBSuccess; k++) {
        if (v->u.list.items[k].kind == QUERY_VALUE_LIST ||
            !(items[k] = item_value(&v->u.list.items[k])))
            st = DuckDBError;
    }
    if (st == DuckDBSuccess) {
        duckdb_logical_type t = duckdb_create_logical_type(child);
        duckdb_value list = duckdb_create_list_value(t, items, (idx_t)n);
        st = list ? duckdb_bind_value(stmt, at, list) : DuckDBError;
        duckdb_destroy_value(&list);
        duckdb_destroy_logical_type(&t);
    }
    for (size_t k = 0; k < n; k++)
        if (items[k])
            duckdb_destroy_value(&items[k]);
    free(items);
    return st;
}

enum vt_err query_plan_bind(const struct query_plan *plan, duckdb_prepared_statement stmt,
                            struct vt_error *err)
{
    for (size_t i = 0; i < plan->nparams; i++) {
        const struct query_value *v = &plan->params[i];
        idx_t at = (idx_t)i + 1;
        duckdb_state st = DuckDBError;
        switch (v->kind) {
        case QUERY_VALUE_LIST:
            st = bind_list(stmt, at, v);
            break;
        case QUERY_VALUE_BOOL:
            st = duckdb_bind_boolean(stmt, at, v->u.b);
            break;
        case QUERY_VALUE_INT64:
            st = duckdb_bind_int64(stmt, at, v->u.i);
            break;
        case QUERY_VALUE_DOUBLE:
            st = duckdb_bind_double(stmt, at, v->u.d);
            break;
        case QUERY_VALUE_VARCHAR:
            st = duckdb_bind_varchar_length(stmt, at, v->u.s.ptr, v->u.s.len);
            break;
        case QUERY_VALUE_NULL:
            st = duckdb_bind_null(stmt, at);
            break;
        case QUERY_VALUE_BLOB:
            st = duckdb_bind_blob(stmt, at, v->u.s.ptr, v->u.s.len);
            break;
        }
        if (st != DuckDBSuccess) {
            const char *why = duckdb_prepare_error(stmt);
            return vt_error_set(err, VT_ERR_INTERNAL, "binding parameter %zu (%s) failed: %s",
                                i + 1, v->cast, why ? why : "unknown error");
        }
    }
    return VT_ERR_OK;
}

/* ---- equality-index path ---- */

/* The int64 range a column's values can take, for dropping values that
 * cannot match. False for columns the index does not cover. */
static bool int_range(duckdb_type t, int64_t *lo, int64_t *hi)
{
    switch (t) {
    case DUCKDB_TYPE_TINYINT: *lo = INT8_MIN; *hi = INT8_MAX; return true;
    case DUCKDB_TYPE_SMALLINT: *lo = INT16_MIN; *hi = INT16_MAX; return true;
    case DUCKDB_TYPE_INTEGER: *lo = INT32_MIN; *hi = INT32_MAX; return true;
    case DUCKDB_TYPE_BIGINT: *lo = INT64_MIN; *hi = INT64_MAX; return true;
    case DUCKDB_TYPE_UTINYINT: *lo = 0; *hi = UINT8_MAX; return true;
    case DUCKDB_TYPE_USMALLINT: *lo = 0; *hi = UINT16_MAX; return true;
    case DUCKDB_TYPE_UINTEGER: *lo = 0; *hi = UINT32_MAX; return true;
    case DUCKDB_TYPE_UBIGINT: *lo = 0; *hi = INT64_MAX; return true; /* JSON ints are int64 */
    default: return false;
    }
}

bool query_index_terms(const struct query_request *req, struct arena *arena,
                       const struct query_index_term **out_terms, size_t *out_n)
{
    *out_terms = NULL;
    *out_n = 0;
    if (req->npreds == 0 || req->count_result)
        return false;
    /* A count uses only the predicates; other fields were validated and
     * are ignored (see query.h). */
    if (req->mode != QUERY_COUNT && (req->ngroup > 0 || req->distinct || req->norder > 0))
        return false;
    for (size_t i = 0; i < req->npreds; i++) {
        const struct query_pred *p = &req->preds[i];
        if (p->op != QUERY_OP_EQ && p->op != QUERY_OP_IN)
            return false;
        duckdb_type t = req->schema->cols[p->ref.idx].type;
        int64_t lo, hi;
        if (t != DUCKDB_TYPE_BOOLEAN && t != DUCKDB_TYPE_VARCHAR && !int_range(t, &lo, &hi))
            return false;
    }
    struct query_index_term *terms = arena_alloc(arena, req->npreds * sizeof *terms);
    if (!terms)
        return false;
    for (size_t i = 0; i < req->npreds; i++) {
        const struct query_pred *p = &req->preds[i];
        duckdb_type t = req->schema->cols[p->ref.idx].type;
        struct query_value *vals = arena_alloc(arena, (p->nvals ? p->nvals : 1) * sizeof *vals);
        if (!vals)
            return false;
        size_t n = 0;
        int64_t lo = 0, hi = 0;
        bool is_int = int_range(t, &lo, &hi);
        for (size_t k = 0; k < p->nvals; k++) {
            const struct query_value *v = &p->vals[k];
            /* The parser typed values by column class, so only integer
             * columns can hold a value that cannot match (3.5, 300 on a
             * TINYINT, -1 on an unsigned column). A UBIGINT also holds the
             * integral doubles in [2^63, 2^64), kept as DOUBLE. */
            if (is_int && v->kind == QUERY_VALUE_DOUBLE && t == DUCKDB_TYPE_UBIGINT &&
                v->u.d == trunc(v->u.d) && v->u.d >= 0x1p63 && v->u.d < 0x1p64) {
                vals[n++] = *v;
                continue;
            }
            if (is_int && (v->kind != QUERY_VALUE_INT64 || v->u.i < lo || v->u.i > hi))
                continue;
            vals[n++] = *v;
        }
        terms[i] = (struct query_index_term){p->ref.idx, vals, n};
    }
    *out_terms = terms;
    *out_n = req->npreds;
    return true;
}
