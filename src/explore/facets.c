/*
 * POST /datasets/{name}/facets (explore.h): the top values of several columns
 * among the rows the predicates select, in ONE statement and one scan:
 *
 *   SELECT * FROM (
 *     SELECT GROUPING("v0", "v1") AS "g", "v0", "v1", count(*) AS "n",
 *            count(*) OVER w AS "d", sum(count(*)) OVER w AS "t",
 *            row_number() OVER (w ORDER BY count(*) DESC, values) AS "k"
 *     FROM (SELECT "a" AS "v0", "b" AS "v1" FROM (<the rows>) AS "i") AS "s"
 *     GROUP BY GROUPING SETS (("v0"), ("v1"))
 *   ) AS "f" WHERE "k" <= ? ORDER BY "g", "k"
 *
 * where <the rows> is src/query's own statement for {"columns": [...],
 * "predicates": [...]}: the predicates are validated and bound exactly as
 * /query's are. GROUPING() tells which set (column) a row belongs to; "d"
 * counts the set's groups (distinct values, NULL being one), "t" its rows.
 */
#include <string.h>

#include "explore/explore_int.h"
#include "util/jsonw.h"

static const char *const fields[] = {"predicates", "columns", "limit"};

/* The request: its query_request (columns + predicates) and limit. */
struct facet_req {
    struct query_request q;
    int64_t limit;
};

static enum vt_err parse(const struct cat_generation *gen, const json_t *body,
                         struct arena *arena, struct facet_req *out, struct vt_error *err)
{
    if (!json_is_object(body))
        return vt_error_set(err, VT_ERR_INVALID_QUERY, "request body must be a JSON object");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)body, k, v) {
        size_t i = 0;
        while (i < sizeof fields / sizeof fields[0] && strcmp(k, fields[i]) != 0)
            i++;
        if (i == sizeof fields / sizeof fields[0])
            return vt_error_set(err, VT_ERR_UNKNOWN_FIELD,
                                "unknown field \"%.64s\" (allowed: predicates, columns, limit)", k);
    }
    const json_t *cols = json_object_get(body, "columns");
    if (!json_is_array(cols) || json_array_size(cols) == 0)
        return vt_error_set(err, VT_ERR_INVALID_QUERY,
                            "columns: required, a non-empty list of column names");
    if (json_array_size(cols) > EXPLORE_MAX_FACET_COLUMNS)
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "columns: more than %d entries",
                            EXPLORE_MAX_FACET_COLUMNS);
    out->limit = EXPLORE_DEFAULT_FACET_LIMIT;
    const json_t *lim = json_object_get(body, "limit");
    if (lim && !json_is_null(lim)) {
        if (!json_is_integer(lim) || json_integer_value(lim) < 1 ||
            json_integer_value(lim) > EXPLORE_MAX_FACET_LIMIT)
            return vt_error_set(err, VT_ERR_INVALID_QUERY,
                                "limit: must be an integer from 1 to %d", EXPLORE_MAX_FACET_LIMIT);
        out->limit = (int64_t)json_integer_value(lim);
    }
    /* The rows: the query language's own rules for columns and predicates. */
    json_t *q = json_object();
    if (!q)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    json_object_set(q, "columns", (json_t *)cols);
    const json_t *preds = json_object_get(body, "predicates");
    if (preds)
        json_object_set(q, "predicates", (json_t *)preds);
    struct query_options opts = {.mode = QUERY_STREAM};
    enum vt_err rc = exec_parse_query(q, gen, &opts, arena, &out->q, err);
    json_decref(q);
    return rc;
}

enum vt_err explore_facets_check(const struct cat_generation *gen, const json_t *body,
                                 struct arena *arena, struct vt_error *err)
{
    struct facet_req r;
    return parse(gen, body, arena, &r, err);
}

/* Types whose values sort (ties between equal counts go by value). */
static bool sortable(duckdb_type t)
{
    switch (t) {
    case DUCKDB_TYPE_LIST: case DUCKDB_TYPE_STRUCT: case DUCKDB_TYPE_MAP: case DUCKDB_TYPE_ARRAY:
    case DUCKDB_TYPE_UNION: case DUCKDB_TYPE_BLOB: case DUCKDB_TYPE_INTERVAL:
        return false;
    default:
        return true;
    }
}

/* Nested values: no order of their own here, but a text that is one. */
static bool nested(duckdb_type t)
{
    return t == DUCKDB_TYPE_LIST || t == DUCKDB_TYPE_STRUCT || t == DUCKDB_TYPE_MAP ||
           t == DUCKDB_TYPE_ARRAY || t == DUCKDB_TYPE_UNION;
}

static void grouping(struct strbuf *sb, size_t n)
{
    sb_adds(sb, "GROUPING(");
    for (size_t i = 0; i < n; i++)
        sb_addf(sb, "%s\"v%zu\"", i ? ", " : "", i);
    sb_addc(sb, ')');
}

struct facet {
    struct jspan *values;
    int64_t *counts;
    size_t n;
    int64_t distinct, rows;
};

enum vt_err explore_facets(const struct explore_ctx *x, const json_t *body, struct strbuf *out,
                           struct vt_error *err)
{
    struct facet_req r;
    enum vt_err rc = parse(x->gen, body, x->arena, &r, err);
    if (rc != VT_ERR_OK)
        return rc;
    const struct query_request *q = &r.q;
    size_t n = q->ncolumns;
    struct query_plan inner;
    if ((rc = query_build_sql(q, x->gen->relation, x->arena, &inner, err)) != VT_ERR_OK)
        return rc;

    struct strbuf sql, rows;
    sb_init(&sql, 0);
    sb_init(&rows, EXPLORE_MAX_RESULT_BYTES);
    sb_adds(&sql, "SELECT * FROM (SELECT ");
    grouping(&sql, n);
    sb_adds(&sql, " AS \"g\"");
    for (size_t i = 0; i < n; i++)
        sb_addf(&sql, ", \"v%zu\"", i);
    sb_adds(&sql, ", count(*) AS \"n\", count(*) OVER (PARTITION BY ");
    grouping(&sql, n);
    sb_adds(&sql, ") AS \"d\", sum(count(*)) OVER (PARTITION BY ");
    grouping(&sql, n);
    sb_adds(&sql, ") AS \"t\", row_number() OVER (PARTITION BY ");
    grouping(&sql, n);
    sb_adds(&sql, " ORDER BY count(*) DESC");
    for (size_t i = 0; i < n; i++) {
        duckdb_type t = q->schema->cols[q->columns[i]].type;
        if (sortable(t))
            sb_addf(&sql, ", \"v%zu\" ASC NULLS LAST", i);
        else if (nested(t)) /* ties by their text: unordered, the shown ones changed per run */
            sb_addf(&sql, ", CAST(\"v%zu\" AS VARCHAR) ASC NULLS LAST", i);
    }
    sb_adds(&sql, ") AS \"k\" FROM (SELECT ");
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_adds(&sql, ", ");
        sb_add_sql_ident(&sql, q->schema->cols[q->columns[i]].name);
        sb_addf(&sql, " AS \"v%zu\"", i);
    }
    sb_adds(&sql, " FROM (");
    sb_add(&sql, inner.sql, inner.sql_len);
    sb_adds(&sql, ") AS \"i\") AS \"s\" GROUP BY GROUPING SETS (");
    for (size_t i = 0; i < n; i++)
        sb_addf(&sql, "%s(\"v%zu\")", i ? ", " : "", i);
    sb_adds(&sql, ")) AS \"f\" WHERE \"k\" <= CAST(? AS BIGINT) ORDER BY \"g\", \"k\"");

    struct query_value *params = arena_alloc(x->arena, (inner.nparams + 1) * sizeof *params);
    struct facet *fs = arena_calloc(x->arena, n * sizeof *fs);
    if (!params || !fs || sql.overflow) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        goto done;
    }
    memcpy(params, inner.params, inner.nparams * sizeof *params);
    params[inner.nparams] = (struct query_value){.kind = QUERY_VALUE_INT64, .u.i = r.limit,
                                                 .cast = "BIGINT"};
    for (size_t i = 0; i < n; i++) {
        fs[i].values = arena_alloc(x->arena, (size_t)r.limit * sizeof *fs[i].values);
        fs[i].counts = arena_alloc(x->arena, (size_t)r.limit * sizeof *fs[i].counts);
        if (!fs[i].values || !fs[i].counts) {
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
            goto done;
        }
    }
    struct exec_plan plan = {
        .kind = EXEC_SQL,
        .sql = sql.buf,
        .params = params,
        .nparams = inner.nparams + 1,
        .gen = x->gen,
        .job = x->job,
        .arena = x->arena,
        .timing = x->timing,
    };
    if ((rc = explore_run_json(&plan, &rows, NULL, err)))
        goto done;

    struct jspan_iter it;
    struct jspan row;
    bool bad = !jspan_iter_init(&it, (struct jspan){rows.buf, rows.len});
    int64_t total = 0;
    while (!bad && jspan_next(&it, NULL, &row)) {
        struct jspan gs, ns, ds, ts, vs;
        int64_t g, cnt, d, t;
        bad = !jspan_get(row, "g", &gs) || !jspan_int(gs, &g) || !jspan_get(row, "n", &ns) ||
              !jspan_int(ns, &cnt) || !jspan_get(row, "d", &ds) || !jspan_int(ds, &d) ||
              !jspan_get(row, "t", &ts) || !jspan_int(ts, &t);
        size_t col = n;
        for (size_t i = 0; !bad && i < n; i++)
            if (!((g >> (n - 1 - i)) & 1))
                col = i;
        char key[24];
        snprintf(key, sizeof key, "v%zu", col);
        if (bad || col == n || !jspan_get(row, key, &vs) || fs[col].n >= (size_t)r.limit) {
            bad = true;
            break;
        }
        fs[col].values[fs[col].n] = vs;
        fs[col].counts[fs[col].n++] = cnt;
        fs[col].distinct = d;
        fs[col].rows = t;
        total = t;
    }
    if (bad || it.bad) {
        rc = vt_error_set(err, VT_ERR_INTERNAL, "the facets could not be read");
        goto done;
    }

    struct jw w;
    jw_init(&w, out);
    jw_obj_begin(&w);
    jw_kstr(&w, "name", x->dataset);
    jw_kint(&w, "rows", total);
    jw_key(&w, "facets");
    jw_arr_begin(&w);
    for (size_t i = 0; i < n; i++) {
        jw_obj_begin(&w);
        jw_kstr(&w, "column", q->schema->cols[q->columns[i]].name);
        jw_key(&w, "values");
        jw_arr_begin(&w);
        int64_t shown_rows = 0;
        for (size_t j = 0; j < fs[i].n; j++) {
            jw_obj_begin(&w);
            jw_key(&w, "value");
            jw_rawn(&w, fs[i].values[j].p, fs[i].values[j].n);
            jw_kint(&w, "count", fs[i].counts[j]);
            jw_obj_end(&w);
            shown_rows += fs[i].counts[j];
        }
        jw_arr_end(&w);
        jw_kint(&w, "distinct", fs[i].distinct);
        jw_kint(&w, "other_values", fs[i].distinct - (int64_t)fs[i].n);
        jw_kint(&w, "other_rows", total - shown_rows);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    if (out->overflow)
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "the facets do not fit in memory");
done:
    sb_release(&sql);
    sb_release(&rows);
    return rc;
}
