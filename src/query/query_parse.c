/*
 * query_parse: the JSON query request -> struct query_request. Every rule of
 * the spec's "Query request" table is checked here, against the schema of the
 * generation being queried, before any SQL exists; the SQL builder then only
 * has to render a request it can trust. The decisions on open points are
 * listed in query.h. Errors name the slot ("predicates[2].col") so a client
 * can find the problem in its own body.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "query/query_int.h"
#include "util/limits.h"

#define SLOT_MAX 64

/* Slot names ("predicates[0].col") are built for every part of every request,
 * though only an error shows them: these write what snprintf's "%s%s" and
 * "%s[%zu]" would, truncated the same way, without going through stdio
 * (~1,000 instructions a call, several per predicate on the point-lookup
 * path; bench/callgrind.py). */
struct slot_w {
    char *buf;
    size_t cap, len;            /* cap > 0; len < cap */
};

static void sw_add(struct slot_w *w, const char *s)
{
    size_t n = strlen(s);
    if (n > w->cap - 1 - w->len)
        n = w->cap - 1 - w->len;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

static void sw_index(struct slot_w *w, size_t i)
{
    char d[24];
    size_t k = sizeof d;
    d[--k] = '\0';
    d[--k] = ']';
    do
        d[--k] = (char)('0' + i % 10);
    while ((i /= 10) != 0);
    d[--k] = '[';
    sw_add(w, d + k);
}

/* The n strings joined, in the arena (what arena_sprintf("%s%s...") makes,
 * without stdio); NULL when the arena is full. */
static char *arena_cat(struct arena *a, const char *const *parts, size_t n)
{
    size_t len[8], total = 0;
    for (size_t i = 0; i < n && i < 8; i++)
        total += len[i] = strlen(parts[i]);
    char *out = arena_alloc(a, total + 1);
    if (!out)
        return NULL;
    char *o = out;
    for (size_t i = 0; i < n && i < 8; i++) {
        memcpy(o, parts[i], len[i]);
        o += len[i];
    }
    *o = '\0';
    return out;
}

/* snprintf(dst, cap, "%s%s", a, b) */
static void slot_cat(char *dst, size_t cap, const char *a, const char *b)
{
    struct slot_w w = {dst, cap, 0};
    dst[0] = '\0';
    sw_add(&w, a);
    sw_add(&w, b);
}

/* snprintf(dst, cap, "%s[%zu]", a, i) */
static void slot_idx(char *dst, size_t cap, const char *a, size_t i)
{
    struct slot_w w = {dst, cap, 0};
    dst[0] = '\0';
    sw_add(&w, a);
    sw_index(&w, i);
}

struct pctx {
    const struct query_schema *schema;
    const struct query_options *opts;
    struct arena *a;
    struct vt_error *err;
    struct query_request *req;
    size_t nparams;
    const char **colnames; /* schema names, built on the first suggestion */
};

static const char *const op_names[] = {
    [QUERY_OP_EQ] = "eq",           [QUERY_OP_NEQ] = "neq",     [QUERY_OP_GT] = "gt",
    [QUERY_OP_GTE] = "gte",         [QUERY_OP_LT] = "lt",       [QUERY_OP_LTE] = "lte",
    [QUERY_OP_LIKE] = "like",       [QUERY_OP_ILIKE] = "ilike", [QUERY_OP_IN] = "in",
    [QUERY_OP_IS_NULL] = "is_null", [QUERY_OP_IS_NOT_NULL] = "is_not_null",
    [QUERY_OP_BETWEEN] = "between",
};
#define N_OPS (sizeof op_names / sizeof op_names[0])

static const char *const agg_names[] = {
    [QUERY_AGG_COUNT] = "count",
    [QUERY_AGG_SUM] = "sum",
    [QUERY_AGG_AVG] = "avg",
    [QUERY_AGG_MIN] = "min",
    [QUERY_AGG_MAX] = "max",
    [QUERY_AGG_COUNT_DISTINCT] = "count_distinct",
    [QUERY_AGG_MEDIAN] = "median",
    [QUERY_AGG_QUANTILE] = "quantile",
    [QUERY_AGG_STDDEV] = "stddev",
};
#define AGG_LIST "count, sum, avg, min, max, count_distinct, median, quantile or stddev"

static const char *const bucket_names[] = {
    [QUERY_BUCKET_NONE] = "",         [QUERY_BUCKET_MINUTE] = "minute",
    [QUERY_BUCKET_HOUR] = "hour",     [QUERY_BUCKET_DAY] = "day",
    [QUERY_BUCKET_WEEK] = "week",     [QUERY_BUCKET_MONTH] = "month",
    [QUERY_BUCKET_YEAR] = "year",     [QUERY_BUCKET_WIDTH] = "width",
};
#define N_AGGS (sizeof agg_names / sizeof agg_names[0])

static const char *const top_fields[] = {
    "columns",  "predicates", "order_by", "group_by", "aggregations",
    "having",   "distinct",   "limit",    "page",     "page_size",
    "include_total",
};
static const char *const pred_fields[] = {"col", "op", "val"};
static const char *const order_fields[] = {"col", "dir"};
static const char *const agg_fields[] = {"op", "col", "alias", "q"};
static const char *const group_fields[] = {"col", "bucket", "width", "alias"};
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

const char *query_op_name(enum query_op op)
{
    return (size_t)op < N_OPS ? op_names[op] : "?";
}

const char *query_bucket_name(enum query_bucket b)
{
    return (size_t)b < sizeof bucket_names / sizeof bucket_names[0] ? bucket_names[b] : "?";
}

static enum vt_err fail(struct pctx *c, enum vt_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum vt_err fail(struct pctx *c, enum vt_err code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vt_error_setv(c->err, code, fmt, ap);
    va_end(ap);
    return code;
}

static void *alloc(struct pctx *c, size_t count, size_t size)
{
    if (count == 0)
        count = 1;
    void *p = arena_calloc(c->a, count * size);
    if (!p)
        fail(c, VT_ERR_OUT_OF_MEMORY, "query request too large for memory");
    return p;
}

/* " (did you mean \"x\"?)" or "" */
static const char *did_you_mean(struct pctx *c, const char *s, const char *const *cands,
                                size_t n)
{
    const char *best = query_suggest(s, cands, n);
    if (!best)
        return "";
    const char *msg = arena_sprintf(c->a, " (did you mean %s?)", QUERY_SHOW(best));
    return msg ? msg : "";
}

static const char *const *schema_names(struct pctx *c)
{
    if (!c->colnames) {
        c->colnames = arena_alloc(c->a, (c->schema->n + 1) * sizeof *c->colnames);
        if (!c->colnames)
            return NULL;
        for (size_t i = 0; i < c->schema->n; i++)
            c->colnames[i] = c->schema->cols[i].name;
    }
    return c->colnames;
}

/* Whether containers nest deeper than `limit` (the body is level 1; scalars
 * add no level), stopping as soon as the limit is passed. */
static bool too_deep(const json_t *j, int depth, int limit)
{
    if ((json_is_array(j) || json_is_object(j)) && depth > limit)
        return true;
    if (json_is_array(j)) {
        size_t i;
        const json_t *v;
        json_array_foreach(j, i, v) {
            if (too_deep(v, depth + 1, limit))
                return true;
        }
    } else if (json_is_object(j)) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)j, k, v) {
            if (too_deep(v, depth + 1, limit))
                return true;
        }
    }
    return false;
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

static enum vt_err check_keys(struct pctx *c, const json_t *obj, const char *slot,
                              const char *const *allowed, size_t n, const char *const *extra)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        if (in_list(k, allowed, n))
            continue;
        bool skip = false;
        for (size_t i = 0; extra && extra[i]; i++)
            if (strcmp(k, extra[i]) == 0)
                skip = true;
        if (skip)
            continue;
        const char *hint = did_you_mean(c, k, allowed, n);
        if (!hint[0]) {
            char list[256];
            size_t used = 0;
            list[0] = '\0';
            for (size_t i = 0; i < n && used < sizeof list; i++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                         allowed[i]);
            hint = arena_sprintf(c->a, " (allowed: %s)", list);
            if (!hint)
                hint = "";
        }
        return fail(c, VT_ERR_UNKNOWN_FIELD, "%s%sunknown field %s%s", slot, slot[0] ? ": " : "",
                    QUERY_SHOW(k), hint);
    }
    return VT_ERR_OK;
}

/* A field that must be a list (absent or null: NULL). */
static enum vt_err get_list(struct pctx *c, const json_t *body, const char *key, size_t max,
                            const json_t **out)
{
    const json_t *v = json_object_get(body, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return VT_ERR_OK;
    if (!json_is_array(v))
        return fail(c, VT_ERR_INVALID_QUERY, "%s: must be a list", key);
    if (json_array_size(v) > max)
        return fail(c, VT_ERR_LIMIT_EXCEEDED, "%s: more than %zu entries", key, max);
    *out = json_array_size(v) ? v : NULL;
    return VT_ERR_OK;
}

/* A name (column, alias): a non-empty string of bounded length, no NUL. */
static enum vt_err get_name(struct pctx *c, const json_t *v, const char *slot, enum vt_err code,
                            const char **out)
{
    if (!json_is_string(v))
        return fail(c, code, "%s: must be a string", slot);
    size_t n = json_string_length(v);
    const char *s = json_string_value(v);
    if (n == 0)
        return fail(c, code, "%s: must not be empty", slot);
    if (n > VT_MAX_COLUMN_NAME_BYTES)
        return fail(c, VT_ERR_LIMIT_EXCEEDED, "%s: name longer than %d bytes", slot,
                    VT_MAX_COLUMN_NAME_BYTES);
    if (memchr(s, '\0', n))
        return fail(c, code, "%s: name contains a NUL character", slot);
    *out = s;
    return VT_ERR_OK;
}

static bool lookup_column(const struct query_schema *s, const char *name, size_t *out)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->cols[i].name, name) == 0) {
            *out = i;
            return true;
        }
    return false;
}

static enum vt_err unknown_column(struct pctx *c, const char *slot, const char *name,
                                  const char *const *cands, size_t n)
{
    return fail(c, VT_ERR_UNKNOWN_COLUMN, "%s: unknown column %s%s", slot, QUERY_SHOW(name),
                cands ? did_you_mean(c, name, cands, n) : "");
}

/* A column name (string at `v`) resolved against the schema. */
static enum vt_err get_column(struct pctx *c, const json_t *v, const char *slot, size_t *out)
{
    const char *name;
    enum vt_err e = get_name(c, v, slot, VT_ERR_INVALID_QUERY, &name);
    if (e)
        return e;
    if (lookup_column(c->schema, name, out))
        return VT_ERR_OK;
    return unknown_column(c, slot, name, schema_names(c), c->schema->n);
}

static const struct query_column *col_at(struct pctx *c, size_t i)
{
    return &c->schema->cols[i];
}

/* ---- group_by and aggregations ---- */

/* A list of distinct schema columns named by `field` (columns, group_by). */
static enum vt_err parse_column_list(struct pctx *c, const json_t *list, const char *field,
                                     size_t **out, size_t *out_n)
{
    size_t n = json_array_size(list);
    size_t *cols = alloc(c, n, sizeof *cols);
    if (!cols)
        return c->err->code;
    for (size_t i = 0; i < n; i++) {
        char slot[SLOT_MAX];
        slot_idx(slot, sizeof slot, field, i);
        enum vt_err e = get_column(c, json_array_get(list, i), slot, &cols[i]);
        if (e)
            return e;
        for (size_t j = 0; j < i; j++)
            if (cols[j] == cols[i])
                return fail(c, VT_ERR_INVALID_QUERY, "%s: column %s is listed twice", slot,
                            QUERY_SHOW(col_at(c, cols[i])->name));
    }
    *out = cols;
    *out_n = n;
    return VT_ERR_OK;
}

/* The width of a numeric bucket: a finite number > 0, kept as an integer
 * when it is one (exact integer buckets on integer columns). */
static enum vt_err get_width(struct pctx *c, const json_t *v, const char *slot,
                             struct query_value *out)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i <= 0)
            return fail(c, VT_ERR_INVALID_QUERY, "%s: must be a number > 0", slot);
        *out = (struct query_value){.kind = QUERY_VALUE_INT64, .u.i = (int64_t)i, .cast = "BIGINT"};
        return VT_ERR_OK;
    }
    if (!json_is_real(v))
        return fail(c, VT_ERR_INVALID_QUERY, "%s: must be a number > 0", slot);
    double d = json_real_value(v);
    if (!(d > 0) || !isfinite(d))
        return fail(c, VT_ERR_INVALID_QUERY, "%s: must be a number > 0", slot);
    if (d == trunc(d) && d < 0x1p62)
        *out = (struct query_value){.kind = QUERY_VALUE_INT64, .u.i = (int64_t)d, .cast = "BIGINT"};
    else
        *out = (struct query_value){.kind = QUERY_VALUE_DOUBLE, .u.d = d, .cast = "DOUBLE"};
    return VT_ERR_OK;
}

/* One group_by entry: "col", or {"col", "bucket" | "width", "alias"}. */
static enum vt_err parse_group_entry(struct pctx *c, const json_t *item, const char *slot,
                                     struct query_group *g)
{
    char sub[SLOT_MAX * 2];
    memset(g, 0, sizeof *g);
    if (json_is_string(item)) {
        enum vt_err e = get_column(c, item, slot, &g->col);
        if (e == VT_ERR_OK)
            g->name = col_at(c, g->col)->name;
        return e;
    }
    if (!json_is_object(item))
        return fail(c, VT_ERR_INVALID_QUERY,
                    "%s: must be a column name or an object with col and bucket or width", slot);
    enum vt_err e = check_keys(c, item, slot, group_fields, COUNT_OF(group_fields), NULL);
    if (e)
        return e;
    const json_t *col = json_object_get(item, "col");
    slot_cat(sub, sizeof sub, slot, ".col");
    if (!col || json_is_null(col))
        return fail(c, VT_ERR_INVALID_QUERY, "%s: missing", sub);
    if ((e = get_column(c, col, sub, &g->col)))
        return e;
    const struct query_column *qc = col_at(c, g->col);
    enum query_class cl = query_class_of(qc->type);
    const json_t *bucket = json_object_get(item, "bucket");
    const json_t *width = json_object_get(item, "width");
    if (bucket && json_is_null(bucket))
        bucket = NULL;
    if (width && json_is_null(width))
        width = NULL;
    if (bucket && width)
        return fail(c, VT_ERR_INVALID_QUERY, "%s: give bucket or width, not both", slot);
    if (bucket) {
        slot_cat(sub, sizeof sub, slot, ".bucket");
        const char *b = json_is_string(bucket) ? json_string_value(bucket) : "";
        size_t k = QUERY_BUCKET_MINUTE;
        while (k <= QUERY_BUCKET_YEAR && strcmp(b, bucket_names[k]) != 0)
            k++;
        if (k > QUERY_BUCKET_YEAR)
            return fail(c, VT_ERR_INVALID_QUERY,
                        "%s: must be one of minute, hour, day, week, month, year%s", sub,
                        json_is_string(bucket)
                            ? did_you_mean(c, b, bucket_names + QUERY_BUCKET_MINUTE, 6)
                            : "");
        g->bucket = (enum query_bucket)k;
        bool date_like = cl == QC_DATE || cl == QC_TS || cl == QC_TS_NS || cl == QC_TSTZ;
        bool time_ok = cl == QC_TIME && g->bucket <= QUERY_BUCKET_HOUR;
        if (!date_like && !time_ok)
            return fail(c, VT_ERR_INVALID_QUERY,
                        "%s: a %s bucket applies to %s columns, not to %s (%s)", sub, b,
                        g->bucket <= QUERY_BUCKET_HOUR ? "date, time and timestamp"
                                                       : "date and timestamp",
                        QUERY_SHOW(qc->name), query_column_type_label(qc));
    } else if (width) {
        slot_cat(sub, sizeof sub, slot, ".width");
        if ((e = get_width(c, width, sub, &g->width)))
            return e;
        if (!query_class_numeric(cl))
            return fail(c, VT_ERR_INVALID_QUERY, "%s: width applies to numeric columns, not to %s (%s)",
                        sub, QUERY_SHOW(qc->name), query_column_type_label(qc));
        g->bucket = QUERY_BUCKET_WIDTH;
    }
    const json_t *alias = json_object_get(item, "alias");
    slot_cat(sub, sizeof sub, slot, ".alias");
    if (alias && !json_is_null(alias)) {
        const char *s;
        if ((e = get_name(c, alias, sub, VT_ERR_INVALID_QUERY, &s)))
            return e;
        g->name = arena_strdup(c->a, s);
        if (!g->name)
            return fail(c, VT_ERR_OUT_OF_MEMORY, "query request too large for memory");
    } else {
        g->name = qc->name;
    }
    return VT_ERR_OK;
}

static enum vt_err parse_group_by(struct pctx *c, const json_t *list)
{
    size_t n = json_array_size(list);
    size_t *cols = alloc(c, n, sizeof *cols);
    struct query_group *groups = alloc(c, n, sizeof *groups);
    if (!cols || !groups)
        return c->err->code;
    for (size_t i = 0; i < n; i++) {
        char slot[SLOT_MAX];
        slot_idx(slot, sizeof slot, "group_by", i);
        enum vt_err e = parse_group_entry(c, json_array_get(list, i), slot, &groups[i]);
        if (e)
            return e;
        cols[i] = groups[i].col;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(groups[j].name, groups[i].name) != 0)
                continue;
            if (groups[i].bucket == QUERY_BUCKET_NONE && groups[j].bucket == QUERY_BUCKET_NONE &&
                groups[i].col == groups[j].col)
                return fail(c, VT_ERR_INVALID_QUERY, "%s: column %s is listed twice", slot,
                            QUERY_SHOW(groups[i].name));
            return fail(c, VT_ERR_INVALID_QUERY,
                        "%s: output column %s is named twice; give one an alias", slot,
                        QUERY_SHOW(groups[i].name));
        }
    }
    c->req->group_by = cols;
    c->req->groups = groups;
    c->req->ngroup = n;
    return VT_ERR_OK;
}

static bool alias_is_group_column(struct pctx *c, const char *alias)
{
    for (size_t g = 0; g < c->req->ngroup; g++)
        if (strcmp(c->req->groups[g].name, alias) == 0)
            return true;
    return false;
}

static enum vt_err parse_aggregations(struct pctx *c, const json_t *list)
{
    struct query_request *r = c->req;
    size_t n = list ? json_array_size(list) : 0;
    struct query_agg *aggs = alloc(c, n ? n : 1, sizeof *aggs);
    if (!aggs)
        return c->err->code;
    if (n == 0) {
        /* The spec's implicit count of rows when group_by has no aggregations. */
        if (alias_is_group_column(c, "count"))
            return fail(c, VT_ERR_INVALID_AGGREGATION,
                        "group_by: column \"count\" collides with the implicit count; add an "
                        "aggregation with an alias");
        aggs[0] = (struct query_agg){.op = QUERY_AGG_COUNT, .col = QUERY_NO_COLUMN, .alias = "count"};
        r->aggs = aggs;
        r->naggs = 1;
        return VT_ERR_OK;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *item = json_array_get(list, i);
        char slot[SLOT_MAX], sub[SLOT_MAX * 2];
        slot_idx(slot, sizeof slot, "aggregations", i);
        if (!json_is_object(item))
            return fail(c, VT_ERR_INVALID_AGGREGATION,
                        "%s: must be an object with op, col and alias", slot);
        enum vt_err e = check_keys(c, item, slot, agg_fields, COUNT_OF(agg_fields), NULL);
        if (e)
            return e;
        struct query_agg *ag = &aggs[i];
        const json_t *op = json_object_get(item, "op");
        slot_cat(sub, sizeof sub, slot, ".op");
        if (!op || json_is_null(op))
            return fail(c, VT_ERR_INVALID_AGGREGATION, "%s: missing (" AGG_LIST ")", sub);
        if (!json_is_string(op))
            return fail(c, VT_ERR_INVALID_AGGREGATION, "%s: must be a string", sub);
        const char *ops = json_string_value(op);
        size_t k = 0;
        while (k < N_AGGS && strcmp(ops, agg_names[k]) != 0)
            k++;
        if (k == N_AGGS)
            return fail(c, VT_ERR_INVALID_AGGREGATION,
                        "%s: unknown aggregation %s%s; use " AGG_LIST, sub,
                        QUERY_SHOW(ops), did_you_mean(c, ops, agg_names, N_AGGS));
        ag->op = (enum query_agg_op)k;
        ag->col = QUERY_NO_COLUMN;
        const json_t *col = json_object_get(item, "col");
        slot_cat(sub, sizeof sub, slot, ".col");
        if (col && !json_is_null(col)) {
            e = get_column(c, col, sub, &ag->col);
            if (e)
                return e;
        } else if (ag->op != QUERY_AGG_COUNT) {
            return fail(c, VT_ERR_INVALID_AGGREGATION, "%s: %s needs a column", sub, ops);
        }
        if (ag->col != QUERY_NO_COLUMN) {
            const struct query_column *qc = col_at(c, ag->col);
            enum query_class cl = query_class_of(qc->type);
            if ((ag->op == QUERY_AGG_SUM || ag->op == QUERY_AGG_AVG) && !query_class_numeric(cl))
                return fail(c, VT_ERR_INVALID_AGGREGATION,
                            "%s: %s needs a numeric column; %s is %s", sub, ops,
                            QUERY_SHOW(qc->name), query_column_type_label(qc));
            if ((ag->op == QUERY_AGG_MIN || ag->op == QUERY_AGG_MAX) &&
                !query_class_orderable(cl))
                return fail(c, VT_ERR_INVALID_AGGREGATION, "%s: %s cannot be applied to %s (%s)",
                            sub, ops, QUERY_SHOW(qc->name), query_column_type_label(qc));
            if (ag->op == QUERY_AGG_STDDEV && !query_class_numeric(cl))
                return fail(c, VT_ERR_INVALID_AGGREGATION,
                            "%s: %s needs a numeric column; %s is %s", sub, ops,
                            QUERY_SHOW(qc->name), query_column_type_label(qc));
            if ((ag->op == QUERY_AGG_MEDIAN || ag->op == QUERY_AGG_QUANTILE) &&
                !query_class_numeric(cl) && cl != QC_DATE && cl != QC_TIME && cl != QC_TS &&
                cl != QC_TS_NS && cl != QC_TSTZ)
                return fail(c, VT_ERR_INVALID_AGGREGATION,
                            "%s: %s needs a numeric, date, time or timestamp column; %s is %s",
                            sub, ops, QUERY_SHOW(qc->name), query_column_type_label(qc));
        }
        const json_t *q = json_object_get(item, "q");
        slot_cat(sub, sizeof sub, slot, ".q");
        if (q && !json_is_null(q) && ag->op != QUERY_AGG_QUANTILE)
            return fail(c, VT_ERR_INVALID_AGGREGATION, "%s: q applies to quantile only", sub);
        if (ag->op == QUERY_AGG_QUANTILE) {
            if (!q || json_is_null(q))
                return fail(c, VT_ERR_INVALID_AGGREGATION,
                            "%s: missing; quantile needs q, a number from 0 to 1 (0.95 for the "
                            "95th percentile)",
                            sub);
            ag->q = json_is_number(q) ? json_number_value(q) : NAN;
            if (!(ag->q >= 0 && ag->q <= 1))
                return fail(c, VT_ERR_INVALID_AGGREGATION, "%s: must be a number from 0 to 1",
                            sub);
        }
        const json_t *alias = json_object_get(item, "alias");
        slot_cat(sub, sizeof sub, slot, ".alias");
        if (alias && !json_is_null(alias)) {
            const char *s;
            e = get_name(c, alias, sub, VT_ERR_INVALID_AGGREGATION, &s);
            if (e)
                return e;
            ag->alias = arena_strdup(c->a, s);
        } else if (ag->col == QUERY_NO_COLUMN) {
            ag->alias = "count";
        } else {
            ag->alias = arena_sprintf(c->a, "%s_%s", ops, col_at(c, ag->col)->name);
        }
        if (!ag->alias)
            return fail(c, VT_ERR_OUT_OF_MEMORY, "query request too large for memory");
        for (size_t j = 0; j < i; j++)
            if (strcmp(aggs[j].alias, ag->alias) == 0)
                return fail(c, VT_ERR_INVALID_AGGREGATION,
                            "%s: duplicate alias %s (aggregations[%zu] has it); set a distinct "
                            "alias",
                            sub, QUERY_SHOW(ag->alias), j);
        if (alias_is_group_column(c, ag->alias))
            return fail(c, VT_ERR_INVALID_AGGREGATION,
                        "%s: alias %s is also a group_by column; choose another alias", sub,
                        QUERY_SHOW(ag->alias));
    }
    r->aggs = aggs;
    r->naggs = n;
    return VT_ERR_OK;
}

/* The value class of an aggregation's result (for having values). */
static enum query_class agg_class(struct pctx *c, const struct query_agg *ag)
{
    if (ag->op == QUERY_AGG_COUNT)
        return QC_INT;
    enum query_class cl = query_class_of(col_at(c, ag->col)->type);
    switch (ag->op) {
    case QUERY_AGG_SUM:
        return cl == QC_INT ? QC_INT : cl == QC_DECIMAL ? QC_DECIMAL : QC_DOUBLE;
    case QUERY_AGG_AVG:
    case QUERY_AGG_STDDEV:
        return QC_DOUBLE;
    case QUERY_AGG_COUNT_DISTINCT:
        return QC_INT;
    case QUERY_AGG_MEDIAN:
    case QUERY_AGG_QUANTILE:
        /* DuckDB's quantile_cont: integers interpolate as DOUBLE, a DATE as
         * a TIMESTAMP; other types keep their own. */
        return cl == QC_INT ? QC_DOUBLE : cl == QC_DATE ? QC_TS : cl;
    default:
        return cl;
    }
}

/* In a grouped query, a name is a group column or an aggregation alias.
 * A table column that is not grouped gets `code` (invalid_having or
 * invalid_order); a name that is nothing at all gets unknown_column. */
static enum vt_err resolve_grouped(struct pctx *c, const json_t *v, const char *slot,
                                   enum vt_err code, const char *field, struct query_ref *out)
{
    struct query_request *r = c->req;
    const char *name;
    enum vt_err e = get_name(c, v, slot, VT_ERR_INVALID_QUERY, &name);
    if (e)
        return e;
    for (size_t g = 0; g < r->ngroup; g++)
        if (strcmp(r->groups[g].name, name) == 0) {
            *out = (struct query_ref){.idx = r->group_by[g], .is_group = true, .grp = g};
            return VT_ERR_OK;
        }
    for (size_t k = 0; k < r->naggs; k++)
        if (strcmp(r->aggs[k].alias, name) == 0) {
            *out = (struct query_ref){.is_agg = true, .idx = k};
            return VT_ERR_OK;
        }
    size_t idx;
    if (lookup_column(c->schema, name, &idx))
        return fail(c, code,
                    "%s: %s is not a group_by column or an aggregation alias; %s in a grouped "
                    "query can use only those",
                    slot, QUERY_SHOW(name), field);
    const char **cands = arena_alloc(c->a, (r->ngroup + r->naggs + 1) * sizeof *cands);
    size_t nc = 0;
    if (cands) {
        for (size_t g = 0; g < r->ngroup; g++)
            cands[nc++] = r->groups[g].name;
        for (size_t k = 0; k < r->naggs; k++)
            cands[nc++] = r->aggs[k].alias;
    }
    return unknown_column(c, slot, name, cands, nc);
}

/* ---- predicates ---- */

static enum vt_err type_value(struct pctx *c, enum query_class cl, const json_t *v,
                              const char *slot, const char *what, struct query_value *out)
{
    if (json_is_null(v))
        return fail(c, VT_ERR_INVALID_VALUE,
                    "%s: must not be null (use op is_null or is_not_null)", slot);
    if (++c->nparams > VT_MAX_QUERY_PARAMS)
        return fail(c, VT_ERR_LIMIT_EXCEEDED, "%s: more than %d values in one request", slot,
                    VT_MAX_QUERY_PARAMS);
    return query_value_from_json(c->a, cl, v, slot, what, out, c->err);
}

static enum vt_err parse_pred(struct pctx *c, const json_t *p, const char *slot, bool having,
                              struct query_pred *out)
{
    char sub[SLOT_MAX * 2];
    if (!json_is_object(p))
        return fail(c, VT_ERR_INVALID_QUERY, "%s: must be an object with col, op and val", slot);
    enum vt_err e = check_keys(c, p, slot, pred_fields, COUNT_OF(pred_fields), NULL);
    if (e)
        return e;

    /* col */
    const json_t *col = json_object_get(p, "col");
    slot_cat(sub, sizeof sub, slot, ".col");
    if (!col || json_is_null(col))
        return fail(c, VT_ERR_INVALID_QUERY, "%s: missing", sub);
    enum query_class cl;
    char *what;
    if (having) {
        e = resolve_grouped(c, col, sub, VT_ERR_INVALID_HAVING, "having", &out->ref);
        if (e)
            return e;
    } else {
        out->ref.is_agg = false;
        e = get_column(c, col, sub, &out->ref.idx);
        if (e)
            return e;
    }
    if (out->ref.is_agg) {
        const struct query_agg *ag = &c->req->aggs[out->ref.idx];
        cl = agg_class(c, ag);
        struct query_shown name = query_show(ag->alias, strlen(ag->alias));
        what = arena_cat(c->a, (const char *[]){"aggregation ", name.s}, 2);
    } else if (out->ref.is_group && c->req->groups[out->ref.grp].bucket == QUERY_BUCKET_WIDTH) {
        /* A numeric bucket's lower bound: exact integers, else DOUBLE. */
        const struct query_group *g = &c->req->groups[out->ref.grp];
        cl = query_class_of(col_at(c, g->col)->type) == QC_INT &&
                     g->width.kind == QUERY_VALUE_INT64
                 ? QC_INT
                 : QC_DOUBLE;
        struct query_shown name = query_show(g->name, strlen(g->name));
        what = arena_cat(c->a, (const char *[]){"bucket ", name.s}, 2);
    } else {
        const struct query_column *qc = col_at(c, out->ref.idx);
        cl = query_class_of(qc->type);
        struct query_shown name = query_show(qc->name, strlen(qc->name));
        what = arena_cat(c->a, (const char *[]){"column ", name.s, " (",
                                                query_column_type_label(qc), ")"}, 5);
    }
    if (!what)
        return fail(c, VT_ERR_OUT_OF_MEMORY, "query request too large for memory");

    /* op */
    const json_t *op = json_object_get(p, "op");
    slot_cat(sub, sizeof sub, slot, ".op");
    if (!op || json_is_null(op))
        return fail(c, VT_ERR_INVALID_QUERY, "%s: missing", sub);
    if (!json_is_string(op))
        return fail(c, VT_ERR_INVALID_QUERY, "%s: must be a string", sub);
    const char *ops = json_string_value(op);
    size_t k = 0;
    while (k < N_OPS && strcmp(ops, op_names[k]) != 0)
        k++;
    if (k == N_OPS)
        return fail(c, VT_ERR_UNKNOWN_OPERATOR,
                    "%s: unknown operator %s%s; operators: eq, neq, gt, gte, lt, lte, like, "
                    "ilike, in, between, is_null, is_not_null",
                    sub, QUERY_SHOW(ops), did_you_mean(c, ops, op_names, N_OPS));
    out->op = (enum query_op)k;

    /* val */
    const json_t *val = json_object_get(p, "val");
    slot_cat(sub, sizeof sub, slot, ".val");
    if (out->op == QUERY_OP_IS_NULL || out->op == QUERY_OP_IS_NOT_NULL) {
        if (val && !json_is_null(val))
            return fail(c, VT_ERR_INVALID_VALUE, "%s: %s takes no val", sub, ops);
        out->vals = NULL;
        out->nvals = 0;
        return VT_ERR_OK;
    }
    if (out->op == QUERY_OP_LIKE || out->op == QUERY_OP_ILIKE) {
        if (cl != QC_STRING && cl != QC_ENUM)
            return fail(c, VT_ERR_INVALID_OPERATOR, "%s.op: %s applies to string columns, not to %s",
                        slot, ops, what);
    } else if (!query_class_comparable(cl)) {
        return fail(c, VT_ERR_INVALID_OPERATOR,
                    "%s.op: %s cannot be compared with a value (only is_null and is_not_null "
                    "apply)",
                    slot, what);
    }
    if (!val)
        return fail(c, VT_ERR_INVALID_VALUE, "%s: missing; %s needs a value", sub, ops);

    if (out->op == QUERY_OP_IN || out->op == QUERY_OP_BETWEEN) {
        bool in = out->op == QUERY_OP_IN;
        if (json_is_null(val))
            return fail(c, VT_ERR_INVALID_VALUE, "%s: must not be null; %s takes a list", sub,
                        ops);
        if (!json_is_array(val))
            return fail(c, VT_ERR_INVALID_VALUE, "%s: %s takes a list%s", sub, ops,
                        in ? "" : " [low, high]");
        size_t n = json_array_size(val);
        if (in && n > VT_MAX_IN_LIST)
            return fail(c, VT_ERR_LIMIT_EXCEEDED, "%s: more than %d values in an in list", sub,
                        VT_MAX_IN_LIST);
        if (!in && n != 2)
            return fail(c, VT_ERR_INVALID_VALUE,
                        "%s: between takes a list of two values [low, high], got %zu", sub, n);
        struct query_value *vals = alloc(c, n, sizeof *vals);
        if (!vals)
            return c->err->code;
        for (size_t i = 0; i < n; i++) {
            char esub[SLOT_MAX * 3];
            slot_idx(esub, sizeof esub, sub, i);
            e = type_value(c, cl, json_array_get(val, i), esub, what, &vals[i]);
            if (e)
                return e;
        }
        out->vals = vals;
        out->nvals = n;
        return VT_ERR_OK;
    }

    struct query_value *v1 = alloc(c, 1, sizeof *v1);
    if (!v1)
        return c->err->code;
    if (out->op == QUERY_OP_LIKE || out->op == QUERY_OP_ILIKE) {
        if (json_is_null(val))
            return fail(c, VT_ERR_INVALID_VALUE,
                        "%s: must not be null (use op is_null or is_not_null)", sub);
        if (!json_is_string(val))
            return fail(c, VT_ERR_INVALID_VALUE, "%s: %s takes a string pattern", sub, ops);
        if (json_string_length(val) > VT_MAX_LIKE_PATTERN_BYTES)
            return fail(c, VT_ERR_LIMIT_EXCEEDED, "%s: pattern longer than %d bytes", sub,
                        VT_MAX_LIKE_PATTERN_BYTES);
        struct vt_error perr = {0};
        if (query_like_check(json_string_value(val), json_string_length(val), &perr) != VT_ERR_OK)
            return fail(c, perr.code, "%s: %s", sub, perr.msg);
        /* Typed as a string column whatever the column (enum included). */
        cl = QC_STRING;
    }
    e = type_value(c, cl, val, sub, what, v1);
    if (e)
        return e;
    out->vals = v1;
    out->nvals = 1;
    return VT_ERR_OK;
}

static enum vt_err parse_preds(struct pctx *c, const json_t *list, bool having,
                               const struct query_pred **out, size_t *out_n)
{
    size_t n = json_array_size(list);
    struct query_pred *preds = alloc(c, n, sizeof *preds);
    if (!preds)
        return c->err->code;
    for (size_t i = 0; i < n; i++) {
        char slot[SLOT_MAX];
        slot_idx(slot, sizeof slot, having ? "having" : "predicates", i);
        enum vt_err e = parse_pred(c, json_array_get(list, i), slot, having, &preds[i]);
        if (e)
            return e;
    }
    *out = preds;
    *out_n = n;
    return VT_ERR_OK;
}

/* ---- columns, order_by ---- */

static enum vt_err parse_columns(struct pctx *c, const json_t *list)
{
    struct query_request *r = c->req;
    size_t n = json_array_size(list);
    if (r->ngroup > 0) {
        /* Ignored with group_by (spec), but a malformed value is still a 400. */
        for (size_t i = 0; i < n; i++) {
            char slot[SLOT_MAX];
            const char *name;
            slot_idx(slot, sizeof slot, "columns", i);
            enum vt_err e = get_name(c, json_array_get(list, i), slot, VT_ERR_INVALID_QUERY, &name);
            if (e)
                return e;
        }
        r->columns = NULL;
        r->ncolumns = 0;
        return VT_ERR_OK;
    }
    if (n == 0) {
        size_t *all = alloc(c, c->schema->n, sizeof *all);
        if (!all)
            return c->err->code;
        for (size_t i = 0; i < c->schema->n; i++)
            all[i] = i;
        r->columns = all;
        r->ncolumns = c->schema->n;
        return VT_ERR_OK;
    }
    size_t *cols = NULL;
    enum vt_err e = parse_column_list(c, list, "columns", &cols, &r->ncolumns);
    if (e == VT_ERR_OK)
        r->columns = cols;
    return e;
}

static enum vt_err parse_order(struct pctx *c, const json_t *list)
{
    struct query_request *r = c->req;
    size_t n = json_array_size(list);
    struct query_order *ord = alloc(c, n, sizeof *ord);
    if (!ord)
        return c->err->code;
    for (size_t i = 0; i < n; i++) {
        const json_t *item = json_array_get(list, i);
        char slot[SLOT_MAX], sub[SLOT_MAX * 2];
        slot_idx(slot, sizeof slot, "order_by", i);
        if (!json_is_object(item))
            return fail(c, VT_ERR_INVALID_ORDER, "%s: must be an object with col and dir", slot);
        enum vt_err e = check_keys(c, item, slot, order_fields, COUNT_OF(order_fields), NULL);
        if (e)
            return e;
        const json_t *col = json_object_get(item, "col");
        slot_cat(sub, sizeof sub, slot, ".col");
        if (!col || json_is_null(col))
            return fail(c, VT_ERR_INVALID_ORDER, "%s: missing", sub);
        if (r->ngroup > 0) {
            e = resolve_grouped(c, col, sub, VT_ERR_INVALID_ORDER, "order_by", &ord[i].ref);
        } else {
            ord[i].ref.is_agg = false;
            e = get_column(c, col, sub, &ord[i].ref.idx);
        }
        if (e)
            return e;
        if (!ord[i].ref.is_agg) {
            const struct query_column *qc = col_at(c, ord[i].ref.idx);
            if (!query_class_orderable(query_class_of(qc->type)))
                return fail(c, VT_ERR_INVALID_ORDER, "%s: cannot sort by %s (%s)", sub,
                            QUERY_SHOW(qc->name), query_column_type_label(qc));
            if (r->distinct) {
                bool projected = false;
                for (size_t j = 0; j < r->ncolumns; j++)
                    if (r->columns[j] == ord[i].ref.idx)
                        projected = true;
                if (!projected)
                    return fail(c, VT_ERR_INVALID_ORDER,
                                "%s: %s is not among columns; with distinct, order_by can use "
                                "only projected columns",
                                sub, QUERY_SHOW(qc->name));
            }
        }
        const json_t *dir = json_object_get(item, "dir");
        slot_cat(sub, sizeof sub, slot, ".dir");
        ord[i].desc = false;
        if (dir && !json_is_null(dir)) {
            if (!json_is_string(dir))
                return fail(c, VT_ERR_INVALID_ORDER, "%s: must be \"asc\" or \"desc\"", sub);
            const char *d = json_string_value(dir);
            if (strcmp(d, "desc") == 0)
                ord[i].desc = true;
            else if (strcmp(d, "asc") != 0)
                return fail(c, VT_ERR_INVALID_ORDER, "%s: must be \"asc\" or \"desc\", got %s",
                            sub, QUERY_SHOW(d));
        }
    }
    r->order = ord;
    r->norder = n;
    return VT_ERR_OK;
}

/* ---- paging ---- */

/* An optional integer field: absent or null leaves *out unchanged. */
static enum vt_err get_int(struct pctx *c, const json_t *body, const char *key, const char *rule,
                           bool *present, int64_t *out)
{
    const json_t *v = json_object_get(body, key);
    *present = false;
    if (!v || json_is_null(v))
        return VT_ERR_OK;
    if (!json_is_integer(v))
        return fail(c, VT_ERR_INVALID_QUERY, "%s: must be %s", key, rule);
    *present = true;
    *out = (int64_t)json_integer_value(v);
    return VT_ERR_OK;
}

static enum vt_err parse_paging(struct pctx *c, const json_t *body)
{
    struct query_request *r = c->req;
    bool has;
    int64_t limit = -1, page = 1, page_size = QUERY_DEFAULT_PAGE_SIZE;
    enum vt_err e = get_int(c, body, "limit", "an integer >= 0 or null", &has, &limit);
    if (e)
        return e;
    if (has && limit < 0)
        return fail(c, VT_ERR_INVALID_QUERY, "limit: must be an integer >= 0 or null, got %lld",
                    (long long)limit);
    if ((e = get_int(c, body, "page", "an integer", &has, &page)))
        return e;
    if ((e = get_int(c, body, "page_size", "an integer", &has, &page_size)))
        return e;
    query_paging_apply(r, c->opts, limit, page, page_size);
    return VT_ERR_OK;
}

void query_paging_apply(struct query_request *r, const struct query_options *opts,
                        int64_t limit, int64_t page, int64_t page_size)
{
    int64_t max_ps = opts && opts->max_page_size > 0 ? opts->max_page_size
                                                     : QUERY_DEFAULT_MAX_PAGE_SIZE;
    if (page < 1)
        page = 1;
    if (page_size < 1)
        page_size = 1;
    if (page_size > max_ps)
        page_size = max_ps;
    if (limit >= QUERY_MAX_SQL_ROWS)
        limit = -1; /* no table has 2^62 rows: the same as unlimited */
    r->limit = limit;

    switch (r->mode) {
    case QUERY_PAGED:
        r->page = page;
        r->page_size = page_size;
        if (page - 1 > (QUERY_MAX_SQL_ROWS - 1) / page_size) {
            /* Past any possible row: empty, not an error (and no overflow). */
            r->offset = 0;
            r->max_rows = 0;
            break;
        }
        r->offset = (page - 1) * page_size;
        r->max_rows = page_size;
        if (limit >= 0) {
            int64_t rest = limit - r->offset;
            r->max_rows = rest <= 0 ? 0 : rest < page_size ? rest : page_size;
        }
        if (r->max_rows == 0)
            r->offset = 0;
        break;
    case QUERY_STREAM:
        r->page = 1;
        r->page_size = 0;
        r->offset = 0;
        r->max_rows = limit;
        break;
    case QUERY_COUNT:
        r->page = 1;
        r->page_size = 0;
        r->offset = 0;
        r->max_rows = -1;
        break;
    }
}

/* ---- entry point ---- */

enum vt_err query_parse(const json_t *body, const struct query_schema *schema,
                        const struct query_options *opts, struct arena *arena,
                        struct query_request *out, struct vt_error *err)
{
    json_t *empty = NULL;
    memset(out, 0, sizeof *out);
    struct pctx ctx = {.schema = schema, .opts = opts, .a = arena, .err = err, .req = out};
    struct pctx *c = &ctx;
    out->mode = opts ? opts->mode : QUERY_PAGED;
    out->schema = schema;
    out->limit = -1;
    out->max_rows = -1;
    out->page = 1;

    if (!body)
        body = empty = json_object();
    enum vt_err e = VT_ERR_OK;
    if (!body) {
        e = fail(c, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    if (!json_is_object(body)) {
        e = fail(c, VT_ERR_INVALID_QUERY, "request body must be a JSON object");
        goto done;
    }
    if (too_deep(body, 1, VT_MAX_JSON_DEPTH)) {
        e = fail(c, VT_ERR_LIMIT_EXCEEDED, "request JSON is nested deeper than %d levels",
                 VT_MAX_JSON_DEPTH);
        goto done;
    }
    if ((e = check_keys(c, body, "", top_fields, COUNT_OF(top_fields),
                        opts ? opts->extra_fields : NULL)))
        goto done;

    const json_t *columns, *preds, *order, *group, *aggs, *having;
    if ((e = get_list(c, body, "columns", VT_MAX_COLUMNS_IN_REQUEST, &columns)) ||
        (e = get_list(c, body, "predicates", VT_MAX_PREDICATES, &preds)) ||
        (e = get_list(c, body, "order_by", VT_MAX_COLUMNS_IN_REQUEST, &order)) ||
        (e = get_list(c, body, "group_by", VT_MAX_COLUMNS_IN_REQUEST, &group)) ||
        (e = get_list(c, body, "aggregations", VT_MAX_AGGREGATIONS, &aggs)) ||
        (e = get_list(c, body, "having", VT_MAX_PREDICATES, &having)))
        goto done;
    const json_t *distinct = json_object_get(body, "distinct");
    if (distinct && !json_is_null(distinct) && !json_is_boolean(distinct)) {
        e = fail(c, VT_ERR_INVALID_QUERY, "distinct: must be true or false");
        goto done;
    }
    out->distinct = distinct && json_is_true(distinct);
    const json_t *total = json_object_get(body, "include_total");
    if (total && !json_is_null(total) && !json_is_boolean(total)) {
        e = fail(c, VT_ERR_INVALID_QUERY, "include_total: must be true or false");
        goto done;
    }
    out->include_total = total && json_is_true(total) && out->mode == QUERY_PAGED;

    /* Combinations first: they say what is wrong with the request as a whole. */
    if (aggs && !group) {
        e = fail(c, VT_ERR_INVALID_COMBINATION, "aggregations: requires a non-empty group_by");
        goto done;
    }
    if (having && !group) {
        e = fail(c, VT_ERR_INVALID_COMBINATION, "having: requires a non-empty group_by");
        goto done;
    }
    if (out->distinct && group) {
        e = fail(c, VT_ERR_INVALID_COMBINATION,
                 "distinct: cannot be combined with group_by or aggregations");
        goto done;
    }

    if (group && ((e = parse_group_by(c, group)) || (e = parse_aggregations(c, aggs))))
        goto done;
    if ((e = parse_columns(c, columns)))
        goto done;
    if (preds && (e = parse_preds(c, preds, false, &out->preds, &out->npreds)))
        goto done;
    if (having && (e = parse_preds(c, having, true, &out->having, &out->nhaving)))
        goto done;
    if (order && (e = parse_order(c, order)))
        goto done;
    e = parse_paging(c, body);

done:
    json_decref(empty);
    return e;
}
