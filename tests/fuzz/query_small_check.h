/*
 * The oracle of the lookup shape (query.h, query_small_scan/_parse), shared
 * by tests/fuzz/fuzz_query_small.c and tests/unit/query/test_query_small.c:
 * whatever the shortcut accepts, the general path (json_small_load, which
 * the fuzz target of json_small checks against jansson, then query_parse)
 * must load and accept with exactly the same request, in every mode.
 */
#ifndef VT_TESTS_QUERY_SMALL_CHECK_H
#define VT_TESTS_QUERY_SMALL_CHECK_H

#include <jansson.h>
#include <string.h>

#include "query/query.h"
#include "util/arena.h"
#include "util/json_small.h"

/* One column of each class the shape meets (and some it declines). */
static const struct query_column qs_cols[] = {
    {"id", DUCKDB_TYPE_INTEGER, "INTEGER"},  {"bi", DUCKDB_TYPE_BIGINT, "BIGINT"},
    {"ub", DUCKDB_TYPE_UBIGINT, "UBIGINT"},  {"f", DUCKDB_TYPE_FLOAT, "FLOAT"},
    {"d", DUCKDB_TYPE_DOUBLE, "DOUBLE"},     {"dec", DUCKDB_TYPE_DECIMAL, "DECIMAL(18,3)"},
    {"s", DUCKDB_TYPE_VARCHAR, "VARCHAR"},   {"e", DUCKDB_TYPE_ENUM, "ENUM('a', 'b')"},
    {"b", DUCKDB_TYPE_BOOLEAN, "BOOLEAN"},   {"ts", DUCKDB_TYPE_TIMESTAMP, "TIMESTAMP"},
    {"u", DUCKDB_TYPE_UUID, "UUID"},         {"l", DUCKDB_TYPE_LIST, "INTEGER[]"},
    {"bl", DUCKDB_TYPE_BLOB, "BLOB"},        {"i\"d", DUCKDB_TYPE_INTEGER, "INTEGER"},
};
static const struct query_schema qs_schema = {qs_cols, sizeof qs_cols / sizeof qs_cols[0]};

static int qs_same_value(const struct query_value *a, const struct query_value *b)
{
    if (a->kind != b->kind || strcmp(a->cast, b->cast) != 0)
        return 0;
    switch (a->kind) {
    case QUERY_VALUE_INT64: return a->u.i == b->u.i;
    case QUERY_VALUE_DOUBLE: return memcmp(&a->u.d, &b->u.d, sizeof a->u.d) == 0;
    case QUERY_VALUE_VARCHAR:
        return a->u.s.len == b->u.s.len && memcmp(a->u.s.ptr, b->u.s.ptr, a->u.s.len) == 0 &&
               a->u.s.ptr[a->u.s.len] == '\0' && b->u.s.ptr[b->u.s.len] == '\0';
    default: return 0; /* the shape makes no other kind */
    }
}

static int qs_same_request(const struct query_request *a, const struct query_request *b)
{
    if (a->mode != b->mode || a->schema != b->schema || a->ncolumns != b->ncolumns ||
        a->distinct != b->distinct || a->npreds != b->npreds || a->ngroup != b->ngroup ||
        a->naggs != b->naggs || a->nhaving != b->nhaving || a->norder != b->norder ||
        a->limit != b->limit || a->page != b->page || a->page_size != b->page_size ||
        a->offset != b->offset || a->max_rows != b->max_rows ||
        a->include_total != b->include_total || a->count_result != b->count_result)
        return 0;
    for (size_t i = 0; i < a->ncolumns; i++)
        if (a->columns[i] != b->columns[i])
            return 0;
    for (size_t i = 0; i < a->npreds; i++) {
        const struct query_pred *p = &a->preds[i], *q = &b->preds[i];
        if (p->ref.is_agg != q->ref.is_agg || p->ref.idx != q->ref.idx ||
            p->ref.is_group != q->ref.is_group || p->ref.grp != q->ref.grp || p->op != q->op ||
            p->nvals != q->nvals)
            return 0;
        for (size_t k = 0; k < p->nvals; k++)
            if (!qs_same_value(&p->vals[k], &q->vals[k]))
                return 0;
    }
    return 1;
}

/* 0: the scan declined; 1: the parse declined in every mode (the general
 * path answers); 2: accepted in some mode, and the general path agrees;
 * -1: a broken promise. */
static int query_small_check(const char *text, size_t len, const struct query_schema *schema)
{
    struct query_small sq;
    if (!query_small_scan(text, len, &sq))
        return 0;
    json_t *tree = json_small_load(text, len);
    if (!tree)
        return -1; /* the scan took a text outside json_small's subset */
    int rc = 1;
    static const enum query_mode modes[] = {QUERY_PAGED, QUERY_STREAM, QUERY_COUNT};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0] && rc >= 0; m++) {
        struct query_options opts = {.mode = modes[m], .max_page_size = 500};
        struct arena a1, a2;
        arena_init(&a1, 0);
        arena_init(&a2, 0);
        struct query_request fast, full;
        struct vt_error err = {0};
        if (query_small_parse(&sq, schema, &opts, &a1, &fast)) {
            if (query_parse(tree, schema, &opts, &a2, &full, &err) != VT_ERR_OK ||
                !qs_same_request(&fast, &full))
                rc = -1;
            else
                rc = 2;
        }
        arena_release(&a1);
        arena_release(&a2);
    }
    json_decref(tree);
    return rc;
}

#endif
