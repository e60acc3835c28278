/*
 * Tests of the query request compiler (src/query): the SQL text produced for
 * each feature, every error with its code and message, the index accessor,
 * and execution of the generated SQL with bound parameters against an
 * in-memory DuckDB table holding every column type and NULLs.
 */
#include <duckdb.h>
#include <jansson.h>
#include <stdlib.h>

#include "config/config.h"
#include "index/index.h"
#include "query/query.h"
#include "testlib.h"
#include "util/strbuf.h"

/* ---- fixtures ---- */

static const struct query_column cols[] = {
    {"id", DUCKDB_TYPE_INTEGER, "INTEGER"},
    {"i", DUCKDB_TYPE_INTEGER, "INTEGER"},
    {"ti", DUCKDB_TYPE_TINYINT, "TINYINT"},
    {"bi", DUCKDB_TYPE_BIGINT, "BIGINT"},
    {"ub", DUCKDB_TYPE_UBIGINT, "UBIGINT"},
    {"hi", DUCKDB_TYPE_HUGEINT, "HUGEINT"},
    {"f", DUCKDB_TYPE_FLOAT, "FLOAT"},
    {"d", DUCKDB_TYPE_DOUBLE, "DOUBLE"},
    {"dec", DUCKDB_TYPE_DECIMAL, "DECIMAL(18,3)"},
    {"s", DUCKDB_TYPE_VARCHAR, "VARCHAR"},
    {"e", DUCKDB_TYPE_ENUM, "ENUM('sad', 'ok', 'happy')"},
    {"b", DUCKDB_TYPE_BOOLEAN, "BOOLEAN"},
    {"dt", DUCKDB_TYPE_DATE, "DATE"},
    {"t", DUCKDB_TYPE_TIME, "TIME"},
    {"ts", DUCKDB_TYPE_TIMESTAMP, "TIMESTAMP"},
    {"tsns", DUCKDB_TYPE_TIMESTAMP_NS, "TIMESTAMP_NS"},
    {"tstz", DUCKDB_TYPE_TIMESTAMP_TZ, "TIMESTAMP WITH TIME ZONE"},
    {"u", DUCKDB_TYPE_UUID, "UUID"},
    {"bl", DUCKDB_TYPE_BLOB, "BLOB"},
    {"iv", DUCKDB_TYPE_INTERVAL, "INTERVAL"},
    {"l", DUCKDB_TYPE_LIST, "INTEGER[]"},
    {"price", DUCKDB_TYPE_DOUBLE, "DOUBLE"},
    {"cat", DUCKDB_TYPE_VARCHAR, "VARCHAR"},
    {"we\"ird", DUCKDB_TYPE_VARCHAR, "VARCHAR"},
};
static const struct query_schema schema = {cols, sizeof cols / sizeof cols[0]};

#define REL "\"main\".\"t\""

struct compiled {
    struct arena arena;
    struct query_request req;
    struct query_plan plan;
    struct vt_error err;
    enum vt_err code;
};

/* Parses and builds `text` in `mode` over schema `sch` and relation `rel`;
 * the result is released by done(). */
static struct compiled *compile_on(const char *text, enum query_mode mode,
                                   const struct query_schema *sch, const char *rel)
{
    struct compiled *c = calloc(1, sizeof *c);
    arena_init(&c->arena, 64u << 20);
    json_error_t jerr;
    json_t *body = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (!body) {
        fprintf(stderr, "  bad test JSON: %s: %s\n", text, jerr.text);
        c->code = VT_ERR_INVALID_JSON;
        return c;
    }
    struct query_options opts = {.mode = mode, .max_page_size = 100};
    c->code = query_parse(body, sch, &opts, &c->arena, &c->req, &c->err);
    json_decref(body);
    if (c->code == VT_ERR_OK)
        c->code = query_build_sql(&c->req, rel, &c->arena, &c->plan, &c->err);
    return c;
}

static struct compiled *compile_mode(const char *text, enum query_mode mode)
{
    return compile_on(text, mode, &schema, REL);
}

static struct compiled *compile(const char *text)
{
    return compile_mode(text, QUERY_PAGED);
}

static void done(struct compiled *c)
{
    arena_release(&c->arena);
    free(c);
}

/* The SQL of a request that must compile. */
#define CHECK_SQL_MODE(json, mode, expected)                                             \
    do {                                                                                 \
        struct compiled *c_ = compile_mode(json, mode);                                  \
        if (c_->code != VT_ERR_OK)                                                       \
            fprintf(stderr, "  unexpected error: %s\n", vt_error_message(&c_->err));     \
        CHECK_EQ_INT(c_->code, VT_ERR_OK);                                               \
        if (c_->code == VT_ERR_OK)                                                       \
            CHECK_EQ_STR(c_->plan.sql, expected);                                        \
        done(c_);                                                                        \
    } while (0)
#define CHECK_SQL(json, expected) CHECK_SQL_MODE(json, QUERY_PAGED, expected)
/* A plain first page binds its limit (query_sql.c, add_limit): the SQL ends
 * in BOUND_LIMIT and the last parameter is the limit. */
#define BOUND_LIMIT " LIMIT CAST(? AS BIGINT)"
#define CHECK_SQL_BOUND_MODE(json, mode, expected, limit)                                \
    do {                                                                                 \
        struct compiled *c_ = compile_mode(json, mode);                                  \
        CHECK_EQ_INT(c_->code, VT_ERR_OK);                                               \
        if (c_->code == VT_ERR_OK) {                                                     \
            CHECK_EQ_STR(c_->plan.sql, expected BOUND_LIMIT);                            \
            CHECK(c_->plan.nparams > 0);                                                 \
            if (c_->plan.nparams > 0) {                                                  \
                const struct query_value *v_ = &c_->plan.params[c_->plan.nparams - 1];   \
                CHECK_EQ_INT(v_->kind, QUERY_VALUE_INT64);                               \
                CHECK_EQ_INT(v_->u.i, limit);                                            \
            }                                                                            \
        }                                                                                \
        done(c_);                                                                        \
    } while (0)
#define CHECK_SQL_BOUND(json, expected, limit) \
    CHECK_SQL_BOUND_MODE(json, QUERY_PAGED, expected, limit)

/* A request that must fail with `code` and a message containing `needle`. */
#define CHECK_ERR_MODE(json, mode, code_, needle)                                        \
    do {                                                                                 \
        struct compiled *c_ = compile_mode(json, mode);                                  \
        CHECK_EQ_STR(vt_err_code(c_->code), vt_err_code(code_));                         \
        CHECK_EQ_INT(vt_err_status(c_->code), 400);                                      \
        CHECK_CONTAINS(vt_error_message(&c_->err), needle);                              \
        done(c_);                                                                        \
    } while (0)
#define CHECK_ERR(json, code_, needle) CHECK_ERR_MODE(json, QUERY_PAGED, code_, needle)

#define ALL_COLS                                                                            \
    "\"id\", \"i\", \"ti\", \"bi\", \"ub\", \"hi\", \"f\", \"d\", \"dec\", \"s\", \"e\", "  \
    "\"b\", \"dt\", \"t\", \"ts\", \"tsns\", \"tstz\", \"u\", \"bl\", \"iv\", \"l\", "      \
    "\"price\", \"cat\", \"we\"\"ird\""

/* ---- SQL text per feature ---- */

TEST(empty_request_selects_everything_paged)
{
    CHECK_SQL_BOUND("{}", "SELECT " ALL_COLS " FROM " REL, 100); /* 1000 clamped to 100 */
}

TEST(projection_and_paging)
{
    CHECK_SQL("{\"columns\":[\"s\",\"id\"],\"page\":3,\"page_size\":10}",
              "SELECT \"s\", \"id\" FROM " REL " LIMIT 10 OFFSET 20");
    struct compiled *c = compile("{\"columns\":[\"we\\\"ird\"],\"page\":0,\"page_size\":100000}");
    CHECK_EQ_INT(c->code, VT_ERR_OK);
    CHECK_EQ_STR(c->plan.sql, "SELECT \"we\"\"ird\" FROM " REL BOUND_LIMIT);
    CHECK_EQ_INT(c->plan.nparams, 1);
    CHECK_EQ_INT(c->plan.params[0].u.i, 100);
    CHECK_EQ_INT(c->plan.page, 1);
    CHECK_EQ_INT(c->plan.page_size, 100); /* clamped to max_page_size */
    CHECK_EQ_INT(c->plan.nout, 1);
    CHECK_EQ_STR(c->plan.out_names[0], "we\"ird");
    done(c);
    c = compile("{\"page_size\":-5,\"page\":-3}");
    CHECK_EQ_INT(c->plan.page, 1);
    CHECK_EQ_INT(c->plan.page_size, 1);
    done(c);
}

TEST(limit_caps_total_across_pages)
{
    CHECK_SQL("{\"columns\":[\"id\"],\"page\":3,\"page_size\":10,\"limit\":25}",
              "SELECT \"id\" FROM " REL " LIMIT 5 OFFSET 20");
    CHECK_SQL_BOUND("{\"columns\":[\"id\"],\"page\":4,\"page_size\":10,\"limit\":25}",
                    "SELECT \"id\" FROM " REL, 0);
    CHECK_SQL_BOUND("{\"columns\":[\"id\"],\"limit\":0}", "SELECT \"id\" FROM " REL, 0);
    CHECK_SQL_BOUND("{\"columns\":[\"id\"],\"limit\":null,\"page_size\":7}",
                    "SELECT \"id\" FROM " REL, 7);
    /* Far past any row: empty, no overflow, no DuckDB range error. */
    CHECK_SQL_BOUND("{\"columns\":[\"id\"],\"page\":9223372036854775807,\"page_size\":100}",
                    "SELECT \"id\" FROM " REL, 0);
    struct compiled *c = compile("{\"page\":9223372036854775807,\"page_size\":100}");
    CHECK_EQ_INT(c->plan.page, INT64_MAX);
    CHECK_EQ_INT(c->plan.max_rows, 0);
    done(c);
}

TEST(stream_and_count_modes)
{
    CHECK_SQL_MODE("{\"columns\":[\"id\"],\"page\":3,\"page_size\":10}", QUERY_STREAM,
                   "SELECT \"id\" FROM " REL);
    CHECK_SQL_BOUND_MODE("{\"columns\":[\"id\"],\"page\":3,\"limit\":7}", QUERY_STREAM,
                         "SELECT \"id\" FROM " REL, 7);
    CHECK_SQL_MODE("{\"predicates\":[{\"col\":\"i\",\"op\":\"gt\",\"val\":1}],"
                   "\"order_by\":[{\"col\":\"i\"}],\"limit\":3,\"page\":2}",
                   QUERY_COUNT,
                   "SELECT count(*) AS \"count\" FROM " REL
                   " WHERE \"i\" > CAST(? AS BIGINT)");
    /* Grouping fields are validated but do not change a count. */
    CHECK_SQL_MODE("{\"group_by\":[\"cat\"],\"having\":[{\"col\":\"count\",\"op\":\"gt\","
                   "\"val\":1}]}",
                   QUERY_COUNT, "SELECT count(*) AS \"count\" FROM " REL);
    CHECK_ERR_MODE("{\"group_by\":[\"nope\"]}", QUERY_COUNT, VT_ERR_UNKNOWN_COLUMN,
                   "group_by[0]: unknown column \"nope\"");
    struct compiled *c = compile_mode("null", QUERY_COUNT);
    CHECK_EQ_INT(c->code, VT_ERR_INVALID_QUERY); /* JSON null body is not an object */
    done(c);
}

TEST(null_body_is_empty_request)
{
    struct arena a;
    arena_init(&a, 0);
    struct query_request req;
    struct query_plan plan;
    struct vt_error err = {0};
    struct query_options opts = {.mode = QUERY_COUNT};
    CHECK_EQ_INT(query_parse(NULL, &schema, &opts, &a, &req, &err), VT_ERR_OK);
    CHECK_EQ_INT(query_build_sql(&req, REL, &a, &plan, &err), VT_ERR_OK);
    CHECK_EQ_STR(plan.sql, "SELECT count(*) AS \"count\" FROM " REL);
    CHECK_EQ_INT(plan.nout, 1);
    CHECK_EQ_STR(plan.out_names[0], "count");
    arena_release(&a);
}

TEST(extra_fields_are_skipped)
{
    struct arena a;
    arena_init(&a, 0);
    struct query_request req;
    struct vt_error err = {0};
    static const char *const extra[] = {"name", NULL};
    struct query_options opts = {.mode = QUERY_PAGED, .extra_fields = extra};
    json_t *body = json_loads("{\"name\":\"ds\",\"columns\":[\"id\"]}", 0, NULL);
    CHECK_EQ_INT(query_parse(body, &schema, &opts, &a, &req, &err), VT_ERR_OK);
    opts.extra_fields = NULL;
    vt_error_clear(&err);
    CHECK_EQ_INT(query_parse(body, &schema, &opts, &a, &req, &err), VT_ERR_UNKNOWN_FIELD);
    json_decref(body);
    arena_release(&a);
}

TEST(predicates_every_operator)
{
    CHECK_SQL("{\"columns\":[\"id\"],\"predicates\":["
              "{\"col\":\"i\",\"op\":\"eq\",\"val\":3},"
              "{\"col\":\"i\",\"op\":\"neq\",\"val\":3.5},"
              "{\"col\":\"d\",\"op\":\"gt\",\"val\":1},"
              "{\"col\":\"d\",\"op\":\"gte\",\"val\":1.5},"
              "{\"col\":\"s\",\"op\":\"lt\",\"val\":\"m\"},"
              "{\"col\":\"s\",\"op\":\"lte\",\"val\":\"n\"},"
              "{\"col\":\"s\",\"op\":\"like\",\"val\":\"a%\"},"
              "{\"col\":\"s\",\"op\":\"ilike\",\"val\":\"A_c\"},"
              "{\"col\":\"i\",\"op\":\"in\",\"val\":[1,2]},"
              "{\"col\":\"s\",\"op\":\"is_null\"},"
              "{\"col\":\"s\",\"op\":\"is_not_null\",\"val\":null},"
              "{\"col\":\"i\",\"op\":\"between\",\"val\":[1,9]}]}",
              "SELECT \"id\" FROM " REL " WHERE \"i\" = CAST(? AS BIGINT)"
              " AND \"i\" <> CAST(? AS DOUBLE) AND \"d\" > CAST(? AS BIGINT)"
              " AND \"d\" >= CAST(? AS DOUBLE) AND \"s\" < CAST(? AS VARCHAR)"
              " AND \"s\" <= CAST(? AS VARCHAR) AND vt_like(\"s\", CAST(? AS VARCHAR))"
              " AND vt_like(lower(\"s\"), lower(CAST(? AS VARCHAR)))"
              " AND \"i\" IN (CAST(? AS BIGINT), CAST(? AS BIGINT))"
              " AND \"s\" IS NULL AND \"s\" IS NOT NULL"
              " AND \"i\" BETWEEN CAST(? AS BIGINT) AND CAST(? AS BIGINT) LIMIT 100");
}

TEST(params_are_typed_and_ordered)
{
    struct compiled *c = compile(
        "{\"predicates\":[{\"col\":\"i\",\"op\":\"eq\",\"val\":3.0},"
        "{\"col\":\"d\",\"op\":\"lt\",\"val\":2.5},{\"col\":\"b\",\"op\":\"eq\",\"val\":true},"
        "{\"col\":\"s\",\"op\":\"eq\",\"val\":\"x'y\"},"
        "{\"col\":\"f\",\"op\":\"eq\",\"val\":0.1}],\"columns\":[\"id\"]}");
    CHECK_EQ_INT(c->code, VT_ERR_OK);
    CHECK_EQ_STR(c->plan.sql, "SELECT \"id\" FROM " REL " WHERE \"i\" = CAST(? AS BIGINT)"
                              " AND \"d\" < CAST(? AS DOUBLE) AND \"b\" = CAST(? AS BOOLEAN)"
                              " AND \"s\" = CAST(? AS VARCHAR) AND \"f\" = CAST(? AS FLOAT)"
                              " LIMIT 100");
    CHECK_EQ_INT(c->plan.nparams, 5);
    CHECK_EQ_INT(c->plan.params[0].kind, QUERY_VALUE_INT64);
    CHECK_EQ_INT(c->plan.params[0].u.i, 3);
    CHECK_EQ_INT(c->plan.params[1].kind, QUERY_VALUE_DOUBLE);
    CHECK(c->plan.params[1].u.d == 2.5);
    CHECK_EQ_INT(c->plan.params[2].kind, QUERY_VALUE_BOOL);
    CHECK(c->plan.params[2].u.b);
    CHECK_EQ_INT(c->plan.params[3].kind, QUERY_VALUE_VARCHAR);
    CHECK_EQ_STR(c->plan.params[3].u.s.ptr, "x'y");
    CHECK_EQ_INT(c->plan.params[3].u.s.len, 3);
    CHECK_EQ_INT(c->plan.params[4].kind, QUERY_VALUE_DOUBLE);
    done(c);
}

TEST(mixed_in_list_splits_by_type)
{
    CHECK_SQL("{\"columns\":[\"id\"],\"predicates\":[{\"col\":\"bi\",\"op\":\"in\","
              "\"val\":[1,2.5,3,4.5]}]}",
              "SELECT \"id\" FROM " REL " WHERE (\"bi\" IN (CAST(? AS BIGINT), CAST(? AS BIGINT))"
              " OR \"bi\" IN (CAST(? AS DOUBLE), CAST(? AS DOUBLE))) LIMIT 100");
    struct compiled *c = compile("{\"columns\":[\"id\"],\"predicates\":[{\"col\":\"bi\",\"op\":"
                                 "\"in\",\"val\":[1,2.5,3,4.5]}]}");
    /* Params follow placeholder order, not request order. */
    CHECK_EQ_INT(c->plan.params[0].u.i, 1);
    CHECK_EQ_INT(c->plan.params[1].u.i, 3);
    CHECK(c->plan.params[2].u.d == 2.5);
    CHECK(c->plan.params[3].u.d == 4.5);
    done(c);
    CHECK_SQL("{\"columns\":[\"id\"],\"predicates\":[{\"col\":\"i\",\"op\":\"in\",\"val\":[]}]}",
              "SELECT \"id\" FROM " REL " WHERE false LIMIT 100");
}

/* `n` comma-separated values: fmt with %d = 0..n-1 */
static char *values(const char *fmt, int n)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    for (int i = 0; i < n; i++) {
        if (i)
            sb_addc(&sb, ',');
        sb_addf(&sb, fmt, i);
    }
    return sb_detach(&sb, NULL);
}

TEST(long_in_list_is_one_list_parameter)
{
    char *ints = values("%d", 33), *reals = values("%d.5", 3);
    char json[2048];
    snprintf(json, sizeof json,
             "{\"columns\":[\"id\"],\"predicates\":[{\"col\":\"i\",\"op\":\"in\",\"val\":[%s,%s]}]}",
             ints, reals);
    struct compiled *c = compile(json);
    CHECK_EQ_INT(c->code, VT_ERR_OK);
    CHECK_EQ_STR(c->plan.sql, "SELECT \"id\" FROM " REL " WHERE (\"i\" IN (SELECT unnest(CAST(? AS BIGINT[])))"
                              " OR \"i\" IN (CAST(? AS DOUBLE), CAST(? AS DOUBLE), CAST(? AS DOUBLE)))"
                              " LIMIT 100");
    CHECK_EQ_INT(c->plan.nparams, 4);
    CHECK_EQ_INT(c->plan.params[0].kind, QUERY_VALUE_LIST);
    CHECK_EQ_STR(c->plan.params[0].cast, "BIGINT[]");
    CHECK_EQ_INT(c->plan.params[0].u.list.n, 33);
    CHECK_EQ_INT(c->plan.params[0].u.list.items[32].u.i, 32);
    CHECK(c->plan.params[3].u.d == 2.5);
    done(c);
    /* 32 values of one type stay placeholders. */
    free(ints);
    ints = values("%d", 32);
    snprintf(json, sizeof json,
             "{\"columns\":[\"id\"],\"predicates\":[{\"col\":\"i\",\"op\":\"in\",\"val\":[%s]}]}", ints);
    c = compile(json);
    CHECK_EQ_INT(c->plan.nparams, 32);
    done(c);
    free(ints);
    free(reals);
}

TEST(temporal_values_are_canonical)
{
    struct compiled *c = compile(
        "{\"columns\":[\"id\"],\"predicates\":["
        "{\"col\":\"dt\",\"op\":\"gte\",\"val\":\"2024-01-01\"},"
        "{\"col\":\"dt\",\"op\":\"lt\",\"val\":\"2024-01-01T10:00\"},"
        "{\"col\":\"ts\",\"op\":\"lt\",\"val\":\"2024-01-02T01:00:00+02:00\"},"
        "{\"col\":\"ts\",\"op\":\"gt\",\"val\":\"2024-01-01 00:00:00.5\"},"
        "{\"col\":\"tstz\",\"op\":\"eq\",\"val\":\"2024-06-01T12:00:00+0200\"},"
        "{\"col\":\"tstz\",\"op\":\"eq\",\"val\":\"2024-06-01\"},"
        "{\"col\":\"tsns\",\"op\":\"eq\",\"val\":\"2024-01-01T10:00:00.123456789Z\"},"
        "{\"col\":\"t\",\"op\":\"gte\",\"val\":\"09:30\"},"
        "{\"col\":\"ts\",\"op\":\"eq\",\"val\":\"2024-03-01T00:30:00+01\"},"
        "{\"col\":\"ts\",\"op\":\"eq\",\"val\":\"2024-12-31T23:30:00-01:00\"},"
        "{\"col\":\"u\",\"op\":\"eq\",\"val\":\"A0EEBC999C0B4EF8BB6D6BB9BD380A11\"}]}");
    CHECK_EQ_INT(c->code, VT_ERR_OK);
    CHECK_EQ_STR(c->plan.sql,
                 "SELECT \"id\" FROM " REL " WHERE \"dt\" >= CAST(? AS DATE)"
                 " AND \"dt\" < CAST(? AS TIMESTAMP) AND \"ts\" < CAST(? AS TIMESTAMP)"
                 " AND \"ts\" > CAST(? AS TIMESTAMP) AND \"tstz\" = CAST(? AS TIMESTAMPTZ)"
                 " AND \"tstz\" = CAST(? AS TIMESTAMPTZ) AND \"tsns\" = CAST(? AS TIMESTAMP_NS)"
                 " AND \"t\" >= CAST(? AS TIME) AND \"ts\" = CAST(? AS TIMESTAMP)"
                 " AND \"ts\" = CAST(? AS TIMESTAMP) AND \"u\" = CAST(? AS UUID) LIMIT 100");
    const char *want[] = {
        "2024-01-01",
        "2024-01-01 10:00:00",
        "2024-01-01 23:00:00",
        "2024-01-01 00:00:00.500000",
        "2024-06-01 10:00:00+00",
        "2024-06-01 00:00:00+00",
        "2024-01-01 10:00:00.123456789",
        "09:30:00",
        "2024-02-29 23:30:00", /* across a leap day */
        "2025-01-01 00:30:00", /* across a year */
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0] && i < c->plan.nparams; i++)
        CHECK_EQ_STR(c->plan.params[i].u.s.ptr, want[i]);
    done(c);
}

TEST(enum_compares_as_varchar)
{
    CHECK_SQL("{\"columns\":[\"id\"],\"predicates\":[{\"col\":\"e\",\"op\":\"like\",\"val\":\"h%\"},"
              "{\"col\":\"e\",\"op\":\"in\",\"val\":[\"ok\",\"nope\"]},"
              "{\"col\":\"e\",\"op\":\"is_null\"}]}",
              "SELECT \"id\" FROM " REL " WHERE vt_like(CAST(\"e\" AS VARCHAR), CAST(? AS VARCHAR))"
              " AND CAST(\"e\" AS VARCHAR) IN (CAST(? AS VARCHAR), CAST(? AS VARCHAR))"
              " AND \"e\" IS NULL LIMIT 100");
    CHECK_SQL("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"min\",\"col\":\"e\"},"
              "{\"op\":\"count\",\"col\":\"e\"}],\"having\":[{\"col\":\"min_e\",\"op\":\"gt\","
              "\"val\":\"ok\"},{\"col\":\"count_e\",\"op\":\"gt\",\"val\":0}]}",
              "SELECT * FROM (SELECT \"cat\", min(\"e\") AS \"min_e\", count(\"e\") AS \"count_e\" FROM " REL
              " GROUP BY \"cat\") AS \"q\" WHERE CAST(\"min_e\" AS VARCHAR) > CAST(? AS VARCHAR)"
              " AND \"count_e\" > CAST(? AS BIGINT) ORDER BY \"cat\" ASC NULLS LAST LIMIT 100");
}

TEST(order_by_multi_key)
{
    CHECK_SQL("{\"columns\":[\"id\"],\"order_by\":[{\"col\":\"price\",\"dir\":\"desc\"},"
              "{\"col\":\"id\"},{\"col\":\"s\",\"dir\":\"asc\"}]}",
              "SELECT \"id\" FROM " REL " ORDER BY \"price\" DESC NULLS LAST,"
              " \"id\" ASC NULLS LAST, \"s\" ASC NULLS LAST LIMIT 100");
}

TEST(distinct)
{
    CHECK_SQL("{\"columns\":[\"cat\"],\"distinct\":true,\"order_by\":[{\"col\":\"cat\"}]}",
              "SELECT DISTINCT \"cat\" FROM " REL " ORDER BY \"cat\" ASC NULLS LAST LIMIT 100");
    CHECK_SQL_BOUND("{\"columns\":[\"cat\"],\"distinct\":false}", "SELECT \"cat\" FROM " REL, 100);
    /* Paged, a distinct query is ordered by all its columns after order_by,
     * so pages partition the result (issue 21 item 5); streamed, it is not. */
    CHECK_SQL("{\"columns\":[\"cat\",\"id\"],\"distinct\":true,\"page\":3,\"page_size\":10}",
              "SELECT DISTINCT \"cat\", \"id\" FROM " REL
              " ORDER BY \"cat\" ASC NULLS LAST, \"id\" ASC NULLS LAST LIMIT 10 OFFSET 20");
    CHECK_SQL("{\"columns\":[\"cat\",\"id\"],\"distinct\":true,"
              "\"order_by\":[{\"col\":\"id\",\"dir\":\"desc\"}]}",
              "SELECT DISTINCT \"cat\", \"id\" FROM " REL
              " ORDER BY \"id\" DESC NULLS LAST, \"cat\" ASC NULLS LAST LIMIT 100");
    CHECK_SQL_MODE("{\"columns\":[\"cat\"],\"distinct\":true}", QUERY_STREAM,
                   "SELECT DISTINCT \"cat\" FROM " REL);
}

TEST(group_by_with_implicit_count)
{
    struct compiled *c = compile("{\"group_by\":[\"cat\",\"b\"],\"columns\":[\"ignored\"]}");
    CHECK_EQ_INT(c->code, VT_ERR_OK);
    CHECK_EQ_STR(c->plan.sql, "SELECT * FROM (SELECT \"cat\", \"b\", count(*) AS \"count\" FROM " REL
                              " GROUP BY \"cat\", \"b\") AS \"q\""
                              " ORDER BY \"cat\" ASC NULLS LAST, \"b\" ASC NULLS LAST LIMIT 100");
    CHECK_EQ_INT(c->plan.nout, 3);
    CHECK_EQ_STR(c->plan.out_names[0], "cat");
    CHECK_EQ_STR(c->plan.out_names[1], "b");
    CHECK_EQ_STR(c->plan.out_names[2], "count");
    done(c);
}

TEST(aggregations_having_order)
{
    struct compiled *c = compile(
        "{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"sum\",\"col\":\"price\","
        "\"alias\":\"total\"},{\"op\":\"count\"},{\"op\":\"avg\",\"col\":\"d\"},"
        "{\"op\":\"min\",\"col\":\"dt\"},{\"op\":\"max\",\"col\":\"s\"},"
        "{\"op\":\"count\",\"col\":\"s\"}],"
        "\"predicates\":[{\"col\":\"i\",\"op\":\"gt\",\"val\":0}],"
        "\"having\":[{\"col\":\"total\",\"op\":\"gt\",\"val\":15},"
        "{\"col\":\"cat\",\"op\":\"neq\",\"val\":\"z\"},"
        "{\"col\":\"min_dt\",\"op\":\"gte\",\"val\":\"2020-01-01\"}],"
        "\"order_by\":[{\"col\":\"total\",\"dir\":\"desc\"},{\"col\":\"cat\"}],"
        "\"page\":2,\"page_size\":5}");
    CHECK_EQ_INT(c->code, VT_ERR_OK);
    CHECK_EQ_STR(c->plan.sql,
                 "SELECT * FROM (SELECT \"cat\", sum(\"price\") AS \"total\", count(*) AS \"count\","
                 " avg(\"d\") AS \"avg_d\", min(\"dt\") AS \"min_dt\", max(\"s\") AS \"max_s\","
                 " count(\"s\") AS \"count_s\" FROM " REL " WHERE \"i\" > CAST(? AS BIGINT)"
                 " GROUP BY \"cat\") AS \"q\" WHERE \"total\" > CAST(? AS BIGINT)"
                 " AND \"cat\" <> CAST(? AS VARCHAR) AND \"min_dt\" >= CAST(? AS DATE)"
                 " ORDER BY \"total\" DESC NULLS LAST, \"cat\" ASC NULLS LAST LIMIT 5 OFFSET 5");
    CHECK_EQ_INT(c->plan.nparams, 4);
    const char *names[] = {"cat", "total", "count", "avg_d", "min_dt", "max_s", "count_s"};
    CHECK_EQ_INT(c->plan.nout, 7);
    for (size_t i = 0; i < 7 && i < c->plan.nout; i++)
        CHECK_EQ_STR(c->plan.out_names[i], names[i]);
    done(c);
    /* An alias may shadow a table column that is not grouped. */
    CHECK_SQL("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"sum\",\"col\":\"price\","
              "\"alias\":\"price\"}],\"order_by\":[{\"col\":\"price\"}]}",
              "SELECT * FROM (SELECT \"cat\", sum(\"price\") AS \"price\" FROM " REL
              " GROUP BY \"cat\") AS \"q\" ORDER BY \"price\" ASC NULLS LAST,"
              " \"cat\" ASC NULLS LAST LIMIT 100");
}

TEST(null_fields_mean_absent)
{
    CHECK_SQL_BOUND("{\"columns\":null,\"predicates\":null,\"order_by\":null,\"group_by\":null,"
              "\"aggregations\":null,\"having\":null,\"distinct\":null,\"limit\":null,"
              "\"page\":null,\"page_size\":null}",
              "SELECT " ALL_COLS " FROM " REL, 100);
}

/* ---- errors ---- */

TEST(errors_shape_and_types)
{
    CHECK_ERR("[]", VT_ERR_INVALID_QUERY, "request body must be a JSON object");
    CHECK_ERR("{\"columns\":\"id\"}", VT_ERR_INVALID_QUERY, "columns: must be a list");
    CHECK_ERR("{\"columns\":[1]}", VT_ERR_INVALID_QUERY, "columns[0]: must be a string");
    CHECK_ERR("{\"columns\":[\"\"]}", VT_ERR_INVALID_QUERY, "columns[0]: must not be empty");
    CHECK_ERR("{\"columns\":[\"id\",\"id\"]}", VT_ERR_INVALID_QUERY,
              "columns[1]: column \"id\" is listed twice");
    CHECK_ERR("{\"columns\":[\"a\\u0000b\"]}", VT_ERR_INVALID_QUERY, "NUL");
    CHECK_ERR("{\"page\":\"2\"}", VT_ERR_INVALID_QUERY, "page: must be an integer");
    CHECK_ERR("{\"page\":2.0}", VT_ERR_INVALID_QUERY, "page: must be an integer");
    CHECK_ERR("{\"page_size\":true}", VT_ERR_INVALID_QUERY, "page_size: must be an integer");
    CHECK_ERR("{\"limit\":-1}", VT_ERR_INVALID_QUERY, "limit: must be an integer >= 0 or null");
    CHECK_ERR("{\"limit\":\"10\"}", VT_ERR_INVALID_QUERY, "limit: must be an integer >= 0");
    CHECK_ERR("{\"distinct\":1}", VT_ERR_INVALID_QUERY, "distinct: must be true or false");
    CHECK_ERR("{\"predicates\":{}}", VT_ERR_INVALID_QUERY, "predicates: must be a list");
    CHECK_ERR("{\"predicates\":[\"i = 1\"]}", VT_ERR_INVALID_QUERY,
              "predicates[0]: must be an object with col, op and val");
    CHECK_ERR("{\"predicates\":[{\"op\":\"eq\",\"val\":1}]}", VT_ERR_INVALID_QUERY,
              "predicates[0].col: missing");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"val\":1}]}", VT_ERR_INVALID_QUERY,
              "predicates[0].op: missing");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":5,\"val\":1}]}", VT_ERR_INVALID_QUERY,
              "predicates[0].op: must be a string");
    CHECK_ERR("{\"order_by\":[\"id\"]}", VT_ERR_INVALID_ORDER,
              "order_by[0]: must be an object with col and dir");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[\"count\"]}",
              VT_ERR_INVALID_AGGREGATION, "aggregations[0]: must be an object");
}

TEST(errors_unknown_fields)
{
    CHECK_ERR("{\"predicate\":[]}", VT_ERR_UNKNOWN_FIELD,
              "unknown field \"predicate\" (did you mean \"predicates\"?)");
    CHECK_ERR("{\"sql\":\"drop\"}", VT_ERR_UNKNOWN_FIELD, "unknown field \"sql\" (allowed: columns");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"eq\",\"value\":1}]}",
              VT_ERR_UNKNOWN_FIELD, "predicates[0]: unknown field \"value\" (allowed: col, op, val)");
    CHECK_ERR("{\"order_by\":[{\"col\":\"i\",\"direction\":\"asc\"}]}", VT_ERR_UNKNOWN_FIELD,
              "order_by[0]: unknown field \"direction\"");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"count\",\"as\":\"n\"}]}",
              VT_ERR_UNKNOWN_FIELD, "aggregations[0]: unknown field \"as\"");
    CHECK_ERR_MODE("{\"predicates\":[],\"colums\":[]}", QUERY_COUNT, VT_ERR_UNKNOWN_FIELD,
                   "(did you mean \"columns\"?)");
}

TEST(errors_unknown_column_and_operator)
{
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"eq\",\"val\":1},"
              "{\"col\":\"i\",\"op\":\"eq\",\"val\":1},{\"col\":\"prize\",\"op\":\"eq\",\"val\":1}]}",
              VT_ERR_UNKNOWN_COLUMN,
              "predicates[2].col: unknown column \"prize\" (did you mean \"price\"?)");
    CHECK_ERR("{\"columns\":[\"ID\"]}", VT_ERR_UNKNOWN_COLUMN,
              "columns[0]: unknown column \"ID\" (did you mean \"id\"?)");
    CHECK_ERR("{\"columns\":[\"zzzzzzzz\"]}", VT_ERR_UNKNOWN_COLUMN,
              "columns[0]: unknown column \"zzzzzzzz\"");
    CHECK_ERR("{\"order_by\":[{\"col\":\"nope\"}]}", VT_ERR_UNKNOWN_COLUMN,
              "order_by[0].col: unknown column \"nope\"");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"sum\",\"col\":\"pric\"}]}",
              VT_ERR_UNKNOWN_COLUMN,
              "aggregations[0].col: unknown column \"pric\" (did you mean \"price\"?)");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"equals\",\"val\":1}]}",
              VT_ERR_UNKNOWN_OPERATOR, "predicates[0].op: unknown operator \"equals\"");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"gte \",\"val\":1}]}",
              VT_ERR_UNKNOWN_OPERATOR, "(did you mean \"gte\"?)");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"EQ\",\"val\":1}]}",
              VT_ERR_UNKNOWN_OPERATOR, "(did you mean \"eq\"?)");
    /* Long names are cut in messages. */
    CHECK_ERR("{\"columns\":[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]}",
              VT_ERR_UNKNOWN_COLUMN, "aaaa...\"");
}

TEST(errors_values)
{
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"eq\",\"val\":\"3\"}]}", VT_ERR_INVALID_VALUE,
              "predicates[0].val: expected a number for column \"i\" (INTEGER), got a string");
    CHECK_ERR("{\"predicates\":[{\"col\":\"s\",\"op\":\"eq\",\"val\":3}]}", VT_ERR_INVALID_VALUE,
              "predicates[0].val: expected a string for column \"s\" (VARCHAR), got an integer");
    CHECK_ERR("{\"predicates\":[{\"col\":\"b\",\"op\":\"eq\",\"val\":1}]}", VT_ERR_INVALID_VALUE,
              "expected true or false for column \"b\" (BOOLEAN)");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"eq\",\"val\":null}]}", VT_ERR_INVALID_VALUE,
              "predicates[0].val: must not be null (use op is_null or is_not_null)");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"eq\"}]}", VT_ERR_INVALID_VALUE,
              "predicates[0].val: missing; eq needs a value");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"eq\",\"val\":[1]}]}", VT_ERR_INVALID_VALUE,
              "got a list");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"is_null\",\"val\":1}]}", VT_ERR_INVALID_VALUE,
              "predicates[0].val: is_null takes no val");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"in\",\"val\":1}]}", VT_ERR_INVALID_VALUE,
              "predicates[0].val: in takes a list");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"in\",\"val\":[1,null]}]}",
              VT_ERR_INVALID_VALUE, "predicates[0].val[1]: must not be null");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"in\",\"val\":[1,\"a\"]}]}",
              VT_ERR_INVALID_VALUE, "predicates[0].val[1]: expected a number");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"between\",\"val\":[1]}]}",
              VT_ERR_INVALID_VALUE, "between takes a list of two values [low, high], got 1");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"between\",\"val\":5}]}",
              VT_ERR_INVALID_VALUE, "between takes a list [low, high]");
    CHECK_ERR("{\"predicates\":[{\"col\":\"s\",\"op\":\"like\",\"val\":5}]}", VT_ERR_INVALID_VALUE,
              "like takes a string pattern");
    CHECK_ERR("{\"predicates\":[{\"col\":\"s\",\"op\":\"eq\",\"val\":\"a\\u0000b\"}]}",
              VT_ERR_INVALID_VALUE, "NUL");
    CHECK_ERR("{\"predicates\":[{\"col\":\"u\",\"op\":\"eq\",\"val\":\"not-a-uuid\"}]}",
              VT_ERR_INVALID_VALUE, "\"not-a-uuid\" is not a UUID");
}

TEST(errors_dates)
{
#define DATE_ERR(col, v, needle)                                                      \
    CHECK_ERR("{\"predicates\":[{\"col\":\"" col "\",\"op\":\"gte\",\"val\":\"" v "\"}]}", \
              VT_ERR_INVALID_VALUE, needle)
    DATE_ERR("dt", "2024-13-01", "\"2024-13-01\" is not an ISO-8601 date or timestamp for column "
                                 "\"dt\" (DATE) (month out of range)");
    DATE_ERR("dt", "2023-02-29", "(day out of range)");
    DATE_ERR("dt", "2024-02-30", "(day out of range)");
    DATE_ERR("dt", "yesterday", "(expected YYYY-MM-DD)");
    DATE_ERR("dt", "2024-1-1", "(expected YYYY-MM-DD)");
    DATE_ERR("ts", "2024-01-01T25:00", "(hour out of range)");
    DATE_ERR("ts", "2024-01-01T10:61", "(minute out of range)");
    DATE_ERR("ts", "2024-01-01T10:00:60", "(second out of range)");
    DATE_ERR("ts", "2024-01-01X10:00", "(expected T or a space between date and time)");
    DATE_ERR("ts", "2024-01-01T10:00:00.", "(expected digits after the decimal point)");
    DATE_ERR("ts", "2024-01-01T10:00:00+25:00", "(UTC offset out of range)");
    DATE_ERR("ts", "2024-01-01T10:00:00 UTC", "(unexpected text after the time)");
    DATE_ERR("ts", "2024-01-01T10:00:00.1234567", "more than microsecond precision");
    DATE_ERR("ts", "0000-01-01", "(year out of range)");
    DATE_ERR("ts", "0001-01-01T00:30:00+01:00", "is out of range in UTC");
    DATE_ERR("dt", "10:00", "is a time of day; column \"dt\" (DATE) takes a date");
    DATE_ERR("t", "2024-01-01", "is a date; column \"t\" (TIME) takes a time of day");
    DATE_ERR("t", "10:00+01:00", "has a UTC offset");
    DATE_ERR("t", "1000", "is not an ISO-8601 time");
#undef DATE_ERR
    CHECK_ERR("{\"predicates\":[{\"col\":\"dt\",\"op\":\"eq\",\"val\":20240101}]}",
              VT_ERR_INVALID_VALUE, "expected an ISO-8601 date or timestamp string");
    /* Nanoseconds fit a TIMESTAMP_NS column; zeros past microseconds fit any. */
    struct compiled *c = compile("{\"predicates\":[{\"col\":\"tsns\",\"op\":\"eq\",\"val\":"
                                 "\"2024-01-01T10:00:00.123456789\"},{\"col\":\"ts\",\"op\":"
                                 "\"eq\",\"val\":\"2024-01-01T10:00:00.123456000\"}]}");
    CHECK_EQ_INT(c->code, VT_ERR_OK);
    done(c);
}

TEST(errors_operator_and_type)
{
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"like\",\"val\":\"1%\"}]}",
              VT_ERR_INVALID_OPERATOR,
              "predicates[0].op: like applies to string columns, not to column \"i\" (INTEGER)");
    CHECK_ERR("{\"predicates\":[{\"col\":\"dt\",\"op\":\"ilike\",\"val\":\"2024%\"}]}",
              VT_ERR_INVALID_OPERATOR, "ilike applies to string columns");
    CHECK_ERR("{\"predicates\":[{\"col\":\"l\",\"op\":\"eq\",\"val\":1}]}", VT_ERR_INVALID_OPERATOR,
              "column \"l\" (INTEGER[]) cannot be compared with a value");
    CHECK_ERR("{\"predicates\":[{\"col\":\"bl\",\"op\":\"in\",\"val\":[\"a\"]}]}",
              VT_ERR_INVALID_OPERATOR, "column \"bl\" (BLOB) cannot be compared");
    /* Null tests apply to every type. */
    CHECK_SQL("{\"columns\":[\"id\"],\"predicates\":[{\"col\":\"l\",\"op\":\"is_null\"},"
              "{\"col\":\"iv\",\"op\":\"is_not_null\"}]}",
              "SELECT \"id\" FROM " REL " WHERE \"l\" IS NULL AND \"iv\" IS NOT NULL LIMIT 100");
}

TEST(errors_combinations)
{
    CHECK_ERR("{\"aggregations\":[{\"op\":\"count\"}]}", VT_ERR_INVALID_COMBINATION,
              "aggregations: requires a non-empty group_by");
    CHECK_ERR("{\"group_by\":[],\"aggregations\":[{\"op\":\"count\"}]}",
              VT_ERR_INVALID_COMBINATION, "aggregations: requires a non-empty group_by");
    CHECK_ERR("{\"having\":[{\"col\":\"count\",\"op\":\"gt\",\"val\":1}]}",
              VT_ERR_INVALID_COMBINATION, "having: requires a non-empty group_by");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"distinct\":true}", VT_ERR_INVALID_COMBINATION,
              "distinct: cannot be combined with group_by or aggregations");
    CHECK_ERR("{\"aggregations\":[{\"op\":\"count\"}],\"distinct\":true}",
              VT_ERR_INVALID_COMBINATION, "aggregations: requires a non-empty group_by");
    CHECK_ERR_MODE("{\"aggregations\":[{\"op\":\"count\"}]}", QUERY_STREAM,
                   VT_ERR_INVALID_COMBINATION, "requires a non-empty group_by");
}

TEST(errors_aggregations)
{
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"mode\",\"col\":\"i\"}]}",
              VT_ERR_INVALID_AGGREGATION,
              "aggregations[0].op: unknown aggregation \"mode\"; use count, sum, avg, min, max, "
              "count_distinct, median, quantile or stddev");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"sun\",\"col\":\"i\"}]}",
              VT_ERR_INVALID_AGGREGATION, "(did you mean \"sum\"?)");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"col\":\"i\"}]}",
              VT_ERR_INVALID_AGGREGATION, "aggregations[0].op: missing");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"sum\"}]}",
              VT_ERR_INVALID_AGGREGATION, "aggregations[0].col: sum needs a column");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"sum\",\"col\":\"s\"}]}",
              VT_ERR_INVALID_AGGREGATION,
              "aggregations[0].col: sum needs a numeric column; \"s\" is VARCHAR");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"avg\",\"col\":\"dt\"}]}",
              VT_ERR_INVALID_AGGREGATION, "avg needs a numeric column; \"dt\" is DATE");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"max\",\"col\":\"l\"}]}",
              VT_ERR_INVALID_AGGREGATION, "max cannot be applied to \"l\"");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"count\"},{\"op\":\"count\"}]}",
              VT_ERR_INVALID_AGGREGATION,
              "aggregations[1].alias: duplicate alias \"count\" (aggregations[0] has it)");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"sum\",\"col\":\"i\"},"
              "{\"op\":\"max\",\"col\":\"i\",\"alias\":\"sum_i\"}]}",
              VT_ERR_INVALID_AGGREGATION, "duplicate alias \"sum_i\"");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"count\",\"alias\":\"cat\"}]}",
              VT_ERR_INVALID_AGGREGATION,
              "aggregations[0].alias: alias \"cat\" is also a group_by column");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"count\",\"alias\":\"\"}]}",
              VT_ERR_INVALID_AGGREGATION, "aggregations[0].alias: must not be empty");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"count\",\"alias\":7}]}",
              VT_ERR_INVALID_AGGREGATION, "aggregations[0].alias: must be a string");
    CHECK_ERR("{\"group_by\":[\"cat\",\"cat\"]}", VT_ERR_INVALID_QUERY,
              "group_by[1]: column \"cat\" is listed twice");
}

TEST(errors_having_and_order)
{
    CHECK_ERR("{\"group_by\":[\"cat\"],\"having\":[{\"col\":\"price\",\"op\":\"gt\",\"val\":1}]}",
              VT_ERR_INVALID_HAVING,
              "having[0].col: \"price\" is not a group_by column or an aggregation alias");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"having\":[{\"col\":\"cont\",\"op\":\"gt\",\"val\":1}]}",
              VT_ERR_UNKNOWN_COLUMN, "having[0].col: unknown column \"cont\" (did you mean \"count\"?)");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"having\":[{\"col\":\"count\",\"op\":\"gt\",\"val\":\"x\"}]}",
              VT_ERR_INVALID_VALUE, "having[0].val: expected a number for aggregation \"count\"");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"having\":[{\"col\":\"count\",\"op\":\"like\",\"val\":\"1\"}]}",
              VT_ERR_INVALID_OPERATOR, "like applies to string columns");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"order_by\":[{\"col\":\"price\"}]}", VT_ERR_INVALID_ORDER,
              "order_by[0].col: \"price\" is not a group_by column or an aggregation alias");
    CHECK_ERR("{\"order_by\":[{\"col\":\"id\",\"dir\":\"up\"}]}", VT_ERR_INVALID_ORDER,
              "order_by[0].dir: must be \"asc\" or \"desc\", got \"up\"");
    CHECK_ERR("{\"order_by\":[{\"col\":\"id\",\"dir\":1}]}", VT_ERR_INVALID_ORDER,
              "order_by[0].dir: must be \"asc\" or \"desc\"");
    CHECK_ERR("{\"order_by\":[{\"dir\":\"asc\"}]}", VT_ERR_INVALID_ORDER, "order_by[0].col: missing");
    CHECK_ERR("{\"order_by\":[{\"col\":\"l\"}]}", VT_ERR_INVALID_ORDER,
              "order_by[0].col: cannot sort by \"l\" (INTEGER[])");
    CHECK_ERR("{\"columns\":[\"cat\"],\"distinct\":true,\"order_by\":[{\"col\":\"id\"}]}",
              VT_ERR_INVALID_ORDER, "with distinct, order_by can use only projected columns");
}

TEST(implicit_count_collision)
{
    static const struct query_column c2[] = {{"count", DUCKDB_TYPE_BIGINT, NULL},
                                              {"x", DUCKDB_TYPE_INTEGER, NULL}};
    static const struct query_schema s2 = {c2, 2};
    struct arena a;
    arena_init(&a, 0);
    struct query_request req;
    struct vt_error err = {0};
    struct query_options opts = {.mode = QUERY_PAGED};
    json_t *body = json_loads("{\"group_by\":[\"count\"]}", 0, NULL);
    CHECK_EQ_INT(query_parse(body, &s2, &opts, &a, &req, &err), VT_ERR_INVALID_AGGREGATION);
    CHECK_CONTAINS(err.msg, "collides with the implicit count");
    json_decref(body);
    vt_error_clear(&err);
    body = json_loads("{\"group_by\":[\"count\"],\"aggregations\":[{\"op\":\"count\","
                      "\"alias\":\"n\"}]}", 0, NULL);
    CHECK_EQ_INT(query_parse(body, &s2, &opts, &a, &req, &err), VT_ERR_OK);
    json_decref(body);
    arena_release(&a);
}

static char *repeat_json(const char *prefix, const char *item, size_t n, const char *suffix)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_adds(&sb, prefix);
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_addc(&sb, ',');
        sb_adds(&sb, item);
    }
    sb_adds(&sb, suffix);
    return sb_detach(&sb, NULL);
}

TEST(errors_limits)
{
    char *j = repeat_json("{\"predicates\":[{\"col\":\"i\",\"op\":\"in\",\"val\":[", "1", 10001, "]}]}");
    CHECK_ERR(j, VT_ERR_LIMIT_EXCEEDED, "predicates[0].val: more than 10000 values in an in list");
    free(j);
    j = repeat_json("{\"predicates\":[{\"col\":\"i\",\"op\":\"in\",\"val\":[", "1", 10000, "]}]}");
    struct compiled *c = compile(j);
    CHECK_EQ_INT(c->code, VT_ERR_OK);
    CHECK_EQ_INT(c->plan.nparams, 1); /* one list parameter */
    CHECK_EQ_INT(c->plan.params[0].kind, QUERY_VALUE_LIST);
    CHECK_EQ_INT(c->plan.params[0].u.list.n, 10000);
    done(c);
    free(j);
    /* The total across predicates is bounded too. */
    char *list = repeat_json("{\"col\":\"i\",\"op\":\"in\",\"val\":[", "1", 10000, "]}");
    size_t n = 2 * strlen(list) + 128;
    char *big = malloc(n);
    snprintf(big, n, "{\"predicates\":[%s,%s]}", list, list);
    c = compile(big);
    CHECK_EQ_INT(c->code, VT_ERR_OK);
    done(c);
    snprintf(big, n, "{\"predicates\":[%s,%s,{\"col\":\"i\",\"op\":\"eq\",\"val\":1}]}",
             list, list);
    CHECK_ERR(big, VT_ERR_LIMIT_EXCEEDED,
              "predicates[2].val: more than 20000 values in one request");
    free(big);
    free(list);
    j = repeat_json("{\"predicates\":[", "{\"col\":\"i\",\"op\":\"is_null\"}", 257, "]}");
    CHECK_ERR(j, VT_ERR_LIMIT_EXCEEDED, "predicates: more than 256 entries");
    free(j);
    j = repeat_json("{\"columns\":[", "\"id\"", 1025, "]}");
    CHECK_ERR(j, VT_ERR_LIMIT_EXCEEDED, "columns: more than 1024 entries");
    free(j);
    j = repeat_json("{\"group_by\":[\"cat\"],\"aggregations\":[", "{\"op\":\"count\"}", 257, "]}");
    CHECK_ERR(j, VT_ERR_LIMIT_EXCEEDED, "aggregations: more than 256 entries");
    free(j);
    j = repeat_json("{\"predicates\":[{\"col\":\"s\",\"op\":\"like\",\"val\":\"", "x", 1025, "\"}]}");
    CHECK_ERR(j, VT_ERR_LIMIT_EXCEEDED, "predicates[0].val: pattern longer than 1024 bytes");
    free(j);
    j = repeat_json("{\"predicates\":[{\"col\":\"s\",\"op\":\"eq\",\"val\":\"", "x", 65537, "\"}]}");
    CHECK_ERR(j, VT_ERR_LIMIT_EXCEEDED, "predicates[0].val: string longer than 65536 bytes");
    free(j);
    j = repeat_json("{\"columns\":[\"", "x", 257, "\"]}");
    CHECK_ERR(j, VT_ERR_LIMIT_EXCEEDED, "columns[0]: name longer than 256 bytes");
    free(j);
    /* Depth: the body is level 1; 16 levels are fine, 17 are not. */
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"in\",\"val\":[[[[[[[[[[[[[[1]]]]]]]]]]]]]]}]}",
              VT_ERR_LIMIT_EXCEEDED, "request JSON is nested deeper than 16 levels");
    CHECK_ERR("{\"predicates\":[{\"col\":\"i\",\"op\":\"in\",\"val\":[[[[[[[[[[[[[1]]]]]]]]]]]]]}]}",
              VT_ERR_INVALID_VALUE, "got a list");
}

/* ---- index accessor ---- */

TEST(index_terms)
{
    struct compiled *c = compile(
        "{\"columns\":[\"id\"],\"predicates\":[{\"col\":\"ti\",\"op\":\"in\",\"val\":[1,300,2.5,-128,3.0]},"
        "{\"col\":\"s\",\"op\":\"eq\",\"val\":\"x\"},{\"col\":\"b\",\"op\":\"eq\",\"val\":false},"
        "{\"col\":\"ub\",\"op\":\"eq\",\"val\":-1}],\"page\":2,\"page_size\":10,\"limit\":15}");
    CHECK_EQ_INT(c->code, VT_ERR_OK);
    const struct query_index_term *terms;
    size_t n;
    CHECK(query_index_terms(&c->req, &c->arena, &terms, &n));
    CHECK_EQ_INT(n, 4);
    if (n == 4) {
        CHECK_EQ_INT(terms[0].col, 2);
        CHECK_EQ_INT(terms[0].nvals, 3); /* 300 and 2.5 cannot be TINYINT values */
        CHECK_EQ_INT(terms[0].vals[0].u.i, 1);
        CHECK_EQ_INT(terms[0].vals[1].u.i, -128);
        CHECK_EQ_INT(terms[0].vals[2].u.i, 3);
        CHECK_EQ_INT(terms[1].vals[0].kind, QUERY_VALUE_VARCHAR);
        CHECK_EQ_STR(terms[1].vals[0].u.s.ptr, "x");
        CHECK_EQ_INT(terms[2].vals[0].kind, QUERY_VALUE_BOOL);
        CHECK_EQ_INT(terms[3].nvals, 0); /* -1 on UBIGINT matches nothing */
    }
    CHECK_EQ_INT(c->req.offset, 10);
    CHECK_EQ_INT(c->req.max_rows, 5);
    done(c);

    /* A count ignores grouping and order, so the index still answers it. */
    c = compile_mode("{\"predicates\":[{\"col\":\"i\",\"op\":\"eq\",\"val\":1}],"
                     "\"order_by\":[{\"col\":\"i\"}],\"group_by\":[\"s\"]}",
                     QUERY_COUNT);
    CHECK(query_index_terms(&c->req, &c->arena, &terms, &n));
    done(c);

    const char *not_indexable[] = {
        "{}",
        "{\"predicates\":[{\"col\":\"i\",\"op\":\"gt\",\"val\":1}]}",
        "{\"predicates\":[{\"col\":\"d\",\"op\":\"eq\",\"val\":1}]}",
        "{\"predicates\":[{\"col\":\"hi\",\"op\":\"eq\",\"val\":1}]}",
        "{\"predicates\":[{\"col\":\"e\",\"op\":\"eq\",\"val\":\"ok\"}]}",
        "{\"predicates\":[{\"col\":\"i\",\"op\":\"eq\",\"val\":1}],\"order_by\":[{\"col\":\"i\"}]}",
        "{\"predicates\":[{\"col\":\"i\",\"op\":\"eq\",\"val\":1}],\"distinct\":true}",
        "{\"predicates\":[{\"col\":\"i\",\"op\":\"eq\",\"val\":1}],\"group_by\":[\"s\"]}",
        "{\"predicates\":[{\"col\":\"i\",\"op\":\"eq\",\"val\":1},{\"col\":\"s\",\"op\":\"like\",\"val\":\"a\"}]}",
    };
    for (size_t i = 0; i < sizeof not_indexable / sizeof not_indexable[0]; i++) {
        c = compile(not_indexable[i]);
        CHECK_EQ_INT(c->code, VT_ERR_OK);
        if (query_index_terms(&c->req, &c->arena, &terms, &n)) {
            fprintf(stderr, "  indexable by mistake: %s\n", not_indexable[i]);
            CHECK(false);
        }
        done(c);
    }
}

/* ---- execution against DuckDB ---- */

static duckdb_database xdb;
static duckdb_connection xcon;

static void exec_sql(const char *sql)
{
    duckdb_result res;
    if (duckdb_query(xcon, sql, &res) != DuckDBSuccess) {
        fprintf(stderr, "  setup failed: %s: %s\n", sql, duckdb_result_error(&res));
        tl_failed_checks++;
    }
    duckdb_destroy_result(&res);
}

static void setup_db(void)
{
    if (xcon)
        return;
    duckdb_open(NULL, &xdb);
    duckdb_connect(xdb, &xcon);
    struct vt_error lerr = {0};
    query_like_register(xcon, &lerr);
    /* A zone far from UTC: results must not depend on the session time zone. */
    exec_sql("SET TimeZone = 'America/Los_Angeles'");
    exec_sql("SET threads = 1");
    exec_sql("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')");
    exec_sql("CREATE TABLE t (id INTEGER, i INTEGER, ti TINYINT, bi BIGINT, ub UBIGINT, hi HUGEINT,"
             " f FLOAT, d DOUBLE, dec DECIMAL(18,3), s VARCHAR, e mood, b BOOLEAN, dt DATE, t TIME,"
             " ts TIMESTAMP, tsns TIMESTAMP_NS, tstz TIMESTAMPTZ, u UUID, bl BLOB, iv INTERVAL,"
             " l INTEGER[], price DOUBLE, cat VARCHAR, \"we\"\"ird\" VARCHAR)");
    exec_sql("INSERT INTO t VALUES"
             " (1, 3, 1, 9007199254740993, 18446744073709551615, 170141183460469231731687303715884105727,"
             "  0.1, 3.5, 1.250, 'apple', 'happy', true, '2024-01-01', '10:00:00',"
             "  '2024-01-01 10:00:00', '2024-01-01 10:00:00.123456789', '2024-01-01 10:00:00+00',"
             "  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\\x01'::BLOB, INTERVAL 1 DAY, [1, 2], 10.0, 'a', 'w1'),"
             " (2, 4, -5, 9007199254740992, 0, -1, 2.5, -1.25, 0.100, 'a_c', 'ok', false, '2024-01-02',"
             "  '23:59:59.5', '2024-01-01 23:30:00', '2024-01-01 10:00:00.123456', '2024-06-01 12:00:00+02',"
             "  NULL, NULL, NULL, NULL, 7.5, 'a', 'w2'),"
             " (3, 5, 127, -9007199254740993, 42, 0, NULL, 0.5, 99.999, 'a%c', 'sad', NULL, '2024-02-29',"
             "  '00:00:00', '2024-02-29 12:00:00', NULL, '2023-12-31 23:00:00-05', NULL, NULL, NULL, [],"
             "  NULL, 'b', NULL),"
             " (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'abc', NULL, true, '2023-12-31', NULL,"
             "  NULL, NULL, NULL, NULL, NULL, NULL, NULL, 20.0, 'b', NULL),"
             " (5, 3, 0, 0, 10000000000000000000, 5, 1e30, 3.0, -1.000, 'ABC', 'happy', false, NULL, '12:30:00',"
             "  '2025-01-01 00:30:00', NULL, NULL, NULL, NULL, NULL, NULL, 1.0, 'c', NULL),"
             " (6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
             "  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)");
}

/* Runs the compiled request and renders the rows as "v,v;v,v" (NULL as ~),
 * or "ERR <code>: <message>". */
static char *run_on(const char *json, enum query_mode mode, const struct query_schema *sch,
                    const char *rel)
{
    setup_db();
    struct compiled *c = compile_on(json, mode, sch, rel);
    struct strbuf out;
    sb_init(&out, 0);
    if (c->code != VT_ERR_OK) {
        sb_addf(&out, "ERR %s: %s", vt_err_code(c->code), vt_error_message(&c->err));
        done(c);
        return sb_detach(&out, NULL);
    }
    /* Render every value as text in SQL: the deprecated value API cannot
     * print every type (ENUM, TIMETZ). The generated statement is run as is,
     * inside. */
    char *wrapped = malloc(c->plan.sql_len + 64);
    sprintf(wrapped, "SELECT COLUMNS(*)::VARCHAR FROM (%s)", c->plan.sql);
    duckdb_prepared_statement st;
    if (duckdb_prepare(xcon, wrapped, &st) != DuckDBSuccess) {
        sb_addf(&out, "PREPARE FAILED: %s | %s", duckdb_prepare_error(st), c->plan.sql);
    } else {
        struct vt_error err = {0};
        duckdb_result res;
        if (query_plan_bind(&c->plan, st, &err) != VT_ERR_OK) {
            sb_addf(&out, "BIND FAILED: %s", vt_error_message(&err));
        } else if (duckdb_execute_prepared(st, &res) != DuckDBSuccess) {
            sb_addf(&out, "EXEC FAILED: %s | %s", duckdb_result_error(&res), c->plan.sql);
            duckdb_destroy_result(&res);
        } else {
            CHECK_EQ_INT(duckdb_column_count(&res), c->plan.nout);
            for (idx_t r = 0; r < duckdb_row_count(&res); r++) {
                if (r)
                    sb_addc(&out, ';');
                for (idx_t k = 0; k < duckdb_column_count(&res); k++) {
                    if (k)
                        sb_addc(&out, ',');
                    if (duckdb_value_is_null(&res, k, r)) {
                        sb_addc(&out, '~');
                    } else {
                        char *v = duckdb_value_varchar(&res, k, r);
                        sb_adds(&out, v);
                        duckdb_free(v);
                    }
                }
            }
            duckdb_destroy_result(&res);
        }
    }
    duckdb_destroy_prepare(&st);
    free(wrapped);
    done(c);
    return sb_detach(&out, NULL);
}

static char *run_mode(const char *json, enum query_mode mode)
{
    return run_on(json, mode, &schema, REL);
}

#define CHECK_ROWS_MODE(json, mode, expected)       \
    do {                                            \
        char *got_ = run_mode(json, mode);          \
        if (strcmp(got_, expected) != 0)            \
            fprintf(stderr, "  request: %s\n", json); \
        CHECK_EQ_STR(got_, expected);               \
        free(got_);                                 \
    } while (0)
#define CHECK_ROWS(json, expected) CHECK_ROWS_MODE(json, QUERY_PAGED, expected)

/* ids matching one predicate, in id order */
#define IDS(pred) "{\"columns\":[\"id\"],\"order_by\":[{\"col\":\"id\"}],\"predicates\":[" pred "]}"

TEST(exec_numbers_by_value)
{
    CHECK_ROWS(IDS("{\"col\":\"i\",\"op\":\"eq\",\"val\":3.0}"), "1;5");
    CHECK_ROWS(IDS("{\"col\":\"i\",\"op\":\"eq\",\"val\":3}"), "1;5");
    CHECK_ROWS(IDS("{\"col\":\"i\",\"op\":\"eq\",\"val\":3.5}"), "");
    CHECK_ROWS(IDS("{\"col\":\"i\",\"op\":\"gt\",\"val\":3.5}"), "2;3");
    CHECK_ROWS(IDS("{\"col\":\"i\",\"op\":\"lte\",\"val\":3.99}"), "1;5");
    CHECK_ROWS(IDS("{\"col\":\"i\",\"op\":\"neq\",\"val\":3}"), "2;3"); /* NULLs do not match */
    CHECK_ROWS(IDS("{\"col\":\"ti\",\"op\":\"eq\",\"val\":1000}"), ""); /* no bind error */
    CHECK_ROWS(IDS("{\"col\":\"ti\",\"op\":\"lt\",\"val\":1000}"), "1;2;3;5");
    CHECK_ROWS(IDS("{\"col\":\"bi\",\"op\":\"eq\",\"val\":9007199254740993}"), "1");
    CHECK_ROWS(IDS("{\"col\":\"bi\",\"op\":\"in\",\"val\":[9007199254740993,0.5]}"), "1");
    CHECK_ROWS(IDS("{\"col\":\"ub\",\"op\":\"eq\",\"val\":-1}"), "");
    CHECK_ROWS(IDS("{\"col\":\"ub\",\"op\":\"gt\",\"val\":9223372036854775807}"), "1;5");
    CHECK_ROWS(IDS("{\"col\":\"ub\",\"op\":\"eq\",\"val\":1e19}"), "5");
    CHECK_ROWS(IDS("{\"col\":\"ub\",\"op\":\"eq\",\"val\":18446744073709551615.0}"), ""); /* 2^64 */
    CHECK_ROWS(IDS("{\"col\":\"ub\",\"op\":\"lt\",\"val\":18446744073709551615.0}"), "1;2;3;5");
    CHECK_ROWS(IDS("{\"col\":\"i\",\"op\":\"lt\",\"val\":1e30}"), "1;2;3;5");
    CHECK_ROWS(IDS("{\"col\":\"hi\",\"op\":\"gt\",\"val\":9223372036854775807}"), "1");
    CHECK_ROWS(IDS("{\"col\":\"f\",\"op\":\"eq\",\"val\":0.1}"), "1");
    CHECK_ROWS(IDS("{\"col\":\"f\",\"op\":\"eq\",\"val\":2.5}"), "2");
    CHECK_ROWS(IDS("{\"col\":\"f\",\"op\":\"gt\",\"val\":1e29}"), "5");
    CHECK_ROWS(IDS("{\"col\":\"dec\",\"op\":\"eq\",\"val\":1.25}"), "1");
    CHECK_ROWS(IDS("{\"col\":\"dec\",\"op\":\"eq\",\"val\":0.1}"), "2");
    CHECK_ROWS(IDS("{\"col\":\"dec\",\"op\":\"eq\",\"val\":-1}"), "5");
    CHECK_ROWS(IDS("{\"col\":\"d\",\"op\":\"eq\",\"val\":3}"), "5");
    CHECK_ROWS(IDS("{\"col\":\"d\",\"op\":\"between\",\"val\":[-1.25,0.5]}"), "2;3");
    CHECK_ROWS(IDS("{\"col\":\"i\",\"op\":\"between\",\"val\":[4,5]}"), "2;3");
    CHECK_ROWS(IDS("{\"col\":\"i\",\"op\":\"between\",\"val\":[5,4]}"), "");
    /* Bounds of two kinds (a fraction and an integer, an integer and a real
     * past 2^127) compare each in its own type, exactly, as `in` does: one
     * BETWEEN would compare all three as DOUBLE and 2^53+1 would equal 2^53. */
    CHECK_ROWS(IDS("{\"col\":\"bi\",\"op\":\"between\",\"val\":[-0.5,9007199254740992]}"), "2;5");
    CHECK_ROWS(IDS("{\"col\":\"bi\",\"op\":\"between\",\"val\":[9007199254740993,1e300]}"), "1");
    CHECK_ROWS(IDS("{\"col\":\"bi\",\"op\":\"between\",\"val\":[-9007199254740992,0.5]}"), "5");
    CHECK_ROWS(IDS("{\"col\":\"i\",\"op\":\"in\",\"val\":[3,4.0,5.5]}"), "1;2;5");
    CHECK_ROWS(IDS("{\"col\":\"i\",\"op\":\"in\",\"val\":[]}"), "");
    CHECK_ROWS(IDS("{\"col\":\"b\",\"op\":\"eq\",\"val\":true}"), "1;4");
    CHECK_ROWS(IDS("{\"col\":\"b\",\"op\":\"in\",\"val\":[false]}"), "2;5");
    CHECK_ROWS(IDS("{\"col\":\"i\",\"op\":\"is_null\"}"), "4;6");
    CHECK_ROWS(IDS("{\"col\":\"l\",\"op\":\"is_not_null\"}"), "1;3");
}

TEST(exec_strings)
{
    CHECK_ROWS(IDS("{\"col\":\"s\",\"op\":\"like\",\"val\":\"a_c\"}"), "2;3;4");
    CHECK_ROWS(IDS("{\"col\":\"s\",\"op\":\"like\",\"val\":\"a%\"}"), "1;2;3;4");
    CHECK_ROWS(IDS("{\"col\":\"s\",\"op\":\"like\",\"val\":\"%c\"}"), "2;3;4");
    CHECK_ROWS(IDS("{\"col\":\"s\",\"op\":\"like\",\"val\":\"abc\"}"), "4");
    CHECK_ROWS(IDS("{\"col\":\"s\",\"op\":\"ilike\",\"val\":\"abc\"}"), "4;5");
    CHECK_ROWS(IDS("{\"col\":\"s\",\"op\":\"ilike\",\"val\":\"A%\"}"), "1;2;3;4;5");
    CHECK_ROWS(IDS("{\"col\":\"s\",\"op\":\"like\",\"val\":\"a\\\\%c\"}"), ""); /* no escape char */
    CHECK_ROWS(IDS("{\"col\":\"s\",\"op\":\"gte\",\"val\":\"abc\"}"), "1;4");
    CHECK_ROWS(IDS("{\"col\":\"s\",\"op\":\"eq\",\"val\":\"x' OR 1=1 --\"}"), "");
    CHECK_ROWS(IDS("{\"col\":\"s\",\"op\":\"in\",\"val\":[\"apple\",\"ABC\",\"zzz\"]}"), "1;5");
    CHECK_ROWS(IDS("{\"col\":\"e\",\"op\":\"eq\",\"val\":\"happy\"}"), "1;5");
    CHECK_ROWS(IDS("{\"col\":\"e\",\"op\":\"in\",\"val\":[\"ok\",\"not-a-label\"]}"), "2");
    CHECK_ROWS(IDS("{\"col\":\"e\",\"op\":\"like\",\"val\":\"%a%\"}"), "1;3;5");
    CHECK_ROWS(IDS("{\"col\":\"u\",\"op\":\"eq\",\"val\":\"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11\"}"), "1");
    CHECK_ROWS("{\"columns\":[\"we\\\"ird\"],\"predicates\":[{\"col\":\"we\\\"ird\",\"op\":\"eq\","
               "\"val\":\"w2\"}]}",
               "w2");
}

TEST(exec_dates_and_times)
{
    CHECK_ROWS(IDS("{\"col\":\"dt\",\"op\":\"gte\",\"val\":\"2024-01-01\"},"
                   "{\"col\":\"dt\",\"op\":\"lt\",\"val\":\"2024-02-01\"}"),
               "1;2");
    CHECK_ROWS(IDS("{\"col\":\"dt\",\"op\":\"gte\",\"val\":\"2024-01-01T10:00\"}"), "2;3");
    CHECK_ROWS(IDS("{\"col\":\"dt\",\"op\":\"eq\",\"val\":\"2024-02-29\"}"), "3");
    CHECK_ROWS(IDS("{\"col\":\"dt\",\"op\":\"between\",\"val\":[\"2023-12-31\",\"2024-01-02\"]}"),
               "1;2;4");
    CHECK_ROWS(IDS("{\"col\":\"dt\",\"op\":\"in\",\"val\":[\"2023-12-31\",\"2024-02-29T00:00:00\"]}"),
               "3;4");
    CHECK_ROWS(IDS("{\"col\":\"ts\",\"op\":\"lt\",\"val\":\"2024-01-02T01:00:00+02:00\"}"), "1");
    CHECK_ROWS(IDS("{\"col\":\"ts\",\"op\":\"lte\",\"val\":\"2024-01-01T23:30:00Z\"}"), "1;2");
    CHECK_ROWS(IDS("{\"col\":\"ts\",\"op\":\"gte\",\"val\":\"2024-02-29\"}"), "3;5");
    CHECK_ROWS(IDS("{\"col\":\"ts\",\"op\":\"eq\",\"val\":\"2024-12-31T23:30:00-01:00\"}"), "5");
    CHECK_ROWS(IDS("{\"col\":\"tstz\",\"op\":\"eq\",\"val\":\"2024-06-01T10:00:00Z\"}"), "2");
    CHECK_ROWS(IDS("{\"col\":\"tstz\",\"op\":\"eq\",\"val\":\"2024-06-01 12:00:00+02:00\"}"), "2");
    CHECK_ROWS(IDS("{\"col\":\"tstz\",\"op\":\"eq\",\"val\":\"2024-01-01T10:00:00\"}"), "1");
    CHECK_ROWS(IDS("{\"col\":\"tstz\",\"op\":\"gte\",\"val\":\"2024-01-01\"}"), "1;2;3");
    CHECK_ROWS(IDS("{\"col\":\"tstz\",\"op\":\"lt\",\"val\":\"2024-01-01T04:00:00Z\"}"), "");
    CHECK_ROWS(IDS("{\"col\":\"tstz\",\"op\":\"lte\",\"val\":\"2024-01-01T04:00:00Z\"}"), "3");
    CHECK_ROWS(IDS("{\"col\":\"tsns\",\"op\":\"eq\",\"val\":\"2024-01-01T10:00:00.123456789\"}"), "1");
    CHECK_ROWS(IDS("{\"col\":\"tsns\",\"op\":\"gt\",\"val\":\"2024-01-01T10:00:00.123456\"}"), "1");
    CHECK_ROWS(IDS("{\"col\":\"t\",\"op\":\"gte\",\"val\":\"10:00\"}"), "1;2;5");
    CHECK_ROWS(IDS("{\"col\":\"t\",\"op\":\"gt\",\"val\":\"23:59:59.4\"}"), "2");
    CHECK_ROWS(IDS("{\"col\":\"t\",\"op\":\"eq\",\"val\":\"00:00\"}"), "3");
}

/* `in` with a long list of misses plus `hits`, through the list parameter. */
static char *long_in(const char *col, const char *miss_fmt, const char *hits)
{
    char *miss = values(miss_fmt, 40);
    size_t n = strlen(miss) + strlen(hits) + 256;
    char *json = malloc(n);
    snprintf(json, n,
             "{\"columns\":[\"id\"],\"order_by\":[{\"col\":\"id\"}],\"predicates\":[{\"col\":"
             "\"%s\",\"op\":\"in\",\"val\":[%s,%s]}]}",
             col, miss, hits);
    free(miss);
    return json;
}

TEST(exec_long_in_lists)
{
    struct {
        const char *col, *miss, *hits, *want;
    } cases[] = {
        {"i", "1%d00", "3.0, 4, 5.5", "1;2;5"},
        {"bi", "%d", "9007199254740993", "1;5"}, /* 0 from the misses matches id 5 */
        {"d", "%d.25", "3.5, -1.25", "1;2"},
        {"f", "%d.75", "0.1", "1"},
        {"f", "%d", "0.1, 2.5", "1;2"}, /* integers and fractions: both FLOAT casts */
        {"dec", "%d.001", "99.999", "3"},
        {"s", "\"m%d\"", "\"a%c\", \"ABC\"", "3;5"},
        {"e", "\"nope%d\"", "\"ok\"", "2"},
        {"b", "%d", "", ""},
        {"dt", "\"19%02d-01-01\"", "\"2024-02-29\"", "3"},
        {"ts", "\"2020-01-01T00:%02d:00Z\"", "\"2024-01-02T01:30:00+02:00\"", "2"},
        {"tstz", "\"2020-01-01T00:%02d:00\"", "\"2024-06-01 12:00:00+02:00\"", "2"},
        {"t", "\"01:%02d\"", "\"12:30\"", "5"},
        {"u", "\"00000000-0000-0000-0000-0000000000%02d\"", "\"A0EEBC999C0B4EF8BB6D6BB9BD380A11\"", "1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(cases[i].col, "b") == 0)
            continue; /* booleans: see below */
        char *json = long_in(cases[i].col, cases[i].miss, cases[i].hits);
        CHECK_ROWS(json, cases[i].want);
        free(json);
    }
    char *t = values("true", 20), *f = values("false", 20);
    char json[1024];
    snprintf(json, sizeof json, "{\"columns\":[\"id\"],\"order_by\":[{\"col\":\"id\"}],"
             "\"predicates\":[{\"col\":\"b\",\"op\":\"in\",\"val\":[%s,%s]}]}", t, f);
    CHECK_ROWS(json, "1;2;4;5");
    free(t);
    free(f);
    char *big = values("%d", 10000);
    char *j2 = malloc(strlen(big) + 256);
    sprintf(j2, "{\"columns\":[\"id\"],\"order_by\":[{\"col\":\"id\"}],\"predicates\":[{\"col\":"
            "\"ub\",\"op\":\"in\",\"val\":[%s]}]}", big);
    CHECK_ROWS(j2, "2;3");
    free(j2);
    free(big);
}

TEST(exec_wide_decimals)
{
    /* DuckDB compares DECIMAL(38,20) with a BIGINT as DECIMAL(38,20) and
     * fails on 10^18; values are compared as DOUBLE instead. */
    static const struct query_column wc[] = {{"id", DUCKDB_TYPE_INTEGER, NULL},
                                             {"wd", DUCKDB_TYPE_DECIMAL, "DECIMAL(38,20)"},
                                             {"nd", DUCKDB_TYPE_DECIMAL, "DECIMAL(38,37)"},
                                             {"uh", DUCKDB_TYPE_UHUGEINT, "UHUGEINT"}};
    static const struct query_schema ws = {wc, 4};
    setup_db();
    exec_sql("CREATE TABLE w (id INTEGER, wd DECIMAL(38,20), nd DECIMAL(38,37), uh UHUGEINT)");
    exec_sql("INSERT INTO w VALUES (1, 1.5, 0.5, 340282366920938463463374607431768211455),"
             " (2, 123456789012345678.25, -1.25, 7), (3, NULL, NULL, NULL)");
    struct {
        const char *pred, *want;
    } cases[] = {
        {"{\"col\":\"wd\",\"op\":\"lt\",\"val\":1000000000000000000}", "1;2"},
        {"{\"col\":\"wd\",\"op\":\"lt\",\"val\":9223372036854775807}", "1;2"},
        {"{\"col\":\"wd\",\"op\":\"eq\",\"val\":1.5}", "1"},
        {"{\"col\":\"wd\",\"op\":\"in\",\"val\":[1, 2, 1.5]}", "1"},
        {"{\"col\":\"nd\",\"op\":\"lt\",\"val\":20}", "1;2"},
        {"{\"col\":\"nd\",\"op\":\"between\",\"val\":[-2, 0]}", "2"},
        {"{\"col\":\"uh\",\"op\":\"gt\",\"val\":-1}", "1;2"},
        {"{\"col\":\"uh\",\"op\":\"eq\",\"val\":7.0}", "2"},
        {"{\"col\":\"uh\",\"op\":\"in\",\"val\":[7, -7]}", "2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"columns\":[\"id\"],\"order_by\":[{\"col\":\"id\"}],\"predicates\":[%s]}",
                 cases[i].pred);
        char *got = run_on(json, QUERY_PAGED, &ws, "w");
        if (strcmp(got, cases[i].want) != 0)
            fprintf(stderr, "  request: %s\n", json);
        CHECK_EQ_STR(got, cases[i].want);
        free(got);
    }
    char *got = run_on("{\"group_by\":[\"id\"],\"aggregations\":[{\"op\":\"sum\",\"col\":\"wd\"}],"
                       "\"having\":[{\"col\":\"sum_wd\",\"op\":\"gt\",\"val\":1e17}],"
                       "\"order_by\":[{\"col\":\"id\"}]}",
                       QUERY_PAGED, &ws, "w");
    CHECK_EQ_STR(got, "2,123456789012345678.25000000000000000000");
    free(got);
}

TEST(exec_json_compares_as_text)
{
    /* A JSON column is a string column: values that are not JSON text match
     * nothing instead of failing the query with a DuckDB conversion error
     * (the index path, which keys JSON by its text, already answered so). */
    static const struct query_column jc[] = {{"id", DUCKDB_TYPE_INTEGER, "INTEGER"},
                                             {"js", DUCKDB_TYPE_VARCHAR, "JSON"}};
    static const struct query_schema js = {jc, 2};
    setup_db();
    exec_sql("CREATE TABLE j (id INTEGER, js JSON)");
    exec_sql("INSERT INTO j VALUES (1, '{\"a\":1}'), (2, '[1,2]'), (3, '\"str\"'), (4, NULL)");
    struct {
        const char *pred, *want;
    } cases[] = {
        {"{\"col\":\"js\",\"op\":\"eq\",\"val\":\"abc\"}", ""},
        {"{\"col\":\"js\",\"op\":\"eq\",\"val\":\"[1,2]\"}", "2"},
        {"{\"col\":\"js\",\"op\":\"in\",\"val\":[\"x\", \"\\\"str\\\"\"]}", "3"},
        {"{\"col\":\"js\",\"op\":\"neq\",\"val\":\"zzz\"}", "1;2;3"},
        {"{\"col\":\"js\",\"op\":\"gt\",\"val\":\"[\"}", "1;2"},
        {"{\"col\":\"js\",\"op\":\"like\",\"val\":\"%a%\"}", "1"},
        {"{\"col\":\"js\",\"op\":\"is_null\"}", "4"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "{\"columns\":[\"id\"],\"order_by\":[{\"col\":\"id\"}],\"predicates\":[%s]}",
                 cases[i].pred);
        char *got = run_on(json, QUERY_PAGED, &js, "j");
        if (strcmp(got, cases[i].want) != 0)
            fprintf(stderr, "  request: %s\n", json);
        CHECK_EQ_STR(got, cases[i].want);
        free(got);
    }
    char *got = run_on("{\"group_by\":[\"id\"],\"aggregations\":[{\"op\":\"max\",\"col\":\"js\"}],"
                       "\"having\":[{\"col\":\"max_js\",\"op\":\"eq\",\"val\":\"e\"}]}",
                       QUERY_PAGED, &js, "j");
    CHECK_EQ_STR(got, "");
    free(got);
}

TEST(exec_grouping)
{
    CHECK_ROWS("{\"group_by\":[\"cat\"],\"order_by\":[{\"col\":\"cat\"}]}", "a,2;b,2;c,1;~,1");
    CHECK_ROWS("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"sum\",\"col\":\"price\","
               "\"alias\":\"total\"}],\"having\":[{\"col\":\"total\",\"op\":\"gt\",\"val\":15}],"
               "\"order_by\":[{\"col\":\"cat\"}]}",
               "a,17.5;b,20.0");
    CHECK_ROWS("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"sum\",\"col\":\"price\","
               "\"alias\":\"price\"},{\"op\":\"count\",\"col\":\"i\"},{\"op\":\"min\",\"col\":\"dt\"},"
               "{\"op\":\"max\",\"col\":\"s\"},{\"op\":\"avg\",\"col\":\"i\"}],"
               "\"order_by\":[{\"col\":\"price\",\"dir\":\"desc\"}]}",
               "b,20.0,1,2023-12-31,abc,5.0;a,17.5,2,2024-01-01,apple,3.5;c,1.0,1,~,ABC,3.0;~,~,0,~,~,~");
    CHECK_ROWS("{\"group_by\":[\"cat\"],\"having\":[{\"col\":\"cat\",\"op\":\"in\","
               "\"val\":[\"a\",\"c\"]},{\"col\":\"count\",\"op\":\"gte\",\"val\":2}]}",
               "a,2");
    CHECK_ROWS("{\"group_by\":[\"e\"],\"having\":[{\"col\":\"e\",\"op\":\"like\",\"val\":\"h%\"}]}",
               "happy,2");
    CHECK_ROWS("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"max\",\"col\":\"e\"}],"
               "\"having\":[{\"col\":\"max_e\",\"op\":\"in\",\"val\":[\"happy\",\"nope\"]}],"
               "\"order_by\":[{\"col\":\"cat\"}]}",
               "a,happy;c,happy");
    CHECK_ROWS("{\"group_by\":[\"b\"],\"aggregations\":[{\"op\":\"max\",\"col\":\"ts\","
               "\"alias\":\"latest\"}],\"having\":[{\"col\":\"latest\",\"op\":\"gte\","
               "\"val\":\"2025-01-01\"}]}",
               "false,2025-01-01 00:30:00");
    CHECK_ROWS("{\"columns\":[\"cat\"],\"distinct\":true,\"order_by\":[{\"col\":\"cat\",\"dir\":\"desc\"}]}",
               "c;b;a;~");
}

TEST(exec_paging_and_modes)
{
#define PAGE(p) "{\"columns\":[\"id\"],\"order_by\":[{\"col\":\"id\"}],\"page_size\":2,\"limit\":5,\"page\":" p "}"
    CHECK_ROWS(PAGE("1"), "1;2");
    CHECK_ROWS(PAGE("2"), "3;4");
    CHECK_ROWS(PAGE("3"), "5");
    CHECK_ROWS(PAGE("4"), "");
    CHECK_ROWS(PAGE("0"), "1;2");
#undef PAGE
    CHECK_ROWS("{\"columns\":[\"id\"],\"order_by\":[{\"col\":\"price\",\"dir\":\"desc\"}]}",
               "4;1;2;5;3;6");
    CHECK_ROWS("{\"columns\":[\"id\"],\"order_by\":[{\"col\":\"price\"}]}", "5;2;1;4;3;6");
    CHECK_ROWS("{\"columns\":[\"id\"],\"page\":9223372036854775807,\"page_size\":100}", "");
    CHECK_ROWS_MODE("{\"columns\":[\"id\"],\"order_by\":[{\"col\":\"id\",\"dir\":\"desc\"}],"
                    "\"limit\":3,\"page\":5,\"page_size\":1}",
                    QUERY_STREAM, "6;5;4");
    CHECK_ROWS_MODE("{\"predicates\":[{\"col\":\"cat\",\"op\":\"in\",\"val\":[\"a\",\"b\"]}],"
                    "\"limit\":1}",
                    QUERY_COUNT, "4");
    CHECK_ROWS_MODE("{}", QUERY_COUNT, "6");
}

/* The index path must answer exactly what the SQL path answers: builds the
 * fast path over the test table (rows in table order, id = position + 1)
 * and compares its answers with the SQL result for eq/in requests. */
struct ids {
    size_t id_col;
    struct strbuf out;
    size_t n;
};

static enum vt_err ids_begin(void *ctx, struct vt_error *err)
{
    (void)ctx;
    (void)err;
    return VT_ERR_OK;
}

static enum vt_err ids_row(void *ctx, const struct index_row *row, struct vt_error *err)
{
    (void)err;
    struct ids *x = ctx;
    sb_addf(&x->out, "%s%lld", x->n++ ? ";" : "", (long long)row->cells[x->id_col].v.i);
    return VT_ERR_OK;
}

TEST(exec_index_path_matches_sql)
{
    setup_db();
    duckdb_result res;
    CHECK(duckdb_query(xcon, "SELECT * FROM t", &res) == DuckDBSuccess);
    const char *names[64];
    duckdb_logical_type types[64];
    size_t n = duckdb_column_count(&res), id_col = 0;
    for (size_t i = 0; i < n && i < 64; i++) {
        names[i] = duckdb_column_name(&res, i);
        types[i] = duckdb_column_logical_type(&res, i);
        if (strcmp(names[i], "id") == 0)
            id_col = i;
    }
    struct vt_dataset_config cfg;
    config_dataset_defaults(&cfg);
    cfg.index_mode = CFG_INDEX_AUTO;
    cfg.index_max_cardinality = 1000;
    struct index_build_options opt = {.cfg = &cfg, .rows = true};
    char warn[128], note[128], why[128];
    struct index_builder *b = index_builder_create(n, names, types, &opt, warn, sizeof warn);
    CHECK(b != NULL);
    duckdb_data_chunk chunk;
    while (b && (chunk = duckdb_fetch_chunk(res)) != NULL) {
        index_builder_add_chunk(b, chunk);
        duckdb_destroy_data_chunk(&chunk);
    }
    struct index_fastpath *fp =
        b ? index_builder_finish(b, note, sizeof note, why, sizeof why) : NULL;
    duckdb_destroy_result(&res);
    CHECK(fp != NULL);
    if (!fp)
        return;
    const struct vt_index *ix = index_fastpath_index(fp);

    const char *preds[] = {
        "{\"col\":\"i\",\"op\":\"eq\",\"val\":3}",
        "{\"col\":\"i\",\"op\":\"eq\",\"val\":3.0}",
        "{\"col\":\"i\",\"op\":\"eq\",\"val\":3.5}",
        "{\"col\":\"i\",\"op\":\"in\",\"val\":[3, 4.0, 5.5, 99]}",
        "{\"col\":\"i\",\"op\":\"in\",\"val\":[]}",
        "{\"col\":\"ti\",\"op\":\"in\",\"val\":[127, 300, -5]}",
        "{\"col\":\"bi\",\"op\":\"eq\",\"val\":9007199254740993}",
        "{\"col\":\"ub\",\"op\":\"in\",\"val\":[-1, 0, 42, 18446744073709551615.0]}",
        "{\"col\":\"ub\",\"op\":\"in\",\"val\":[18446744073709549568.0, 1e19]}",
        "{\"col\":\"ub\",\"op\":\"eq\",\"val\":18446744073709549568.0}",
        "{\"col\":\"s\",\"op\":\"in\",\"val\":[\"a_c\", \"ABC\", \"abc\", \"zz\"]}",
        "{\"col\":\"s\",\"op\":\"eq\",\"val\":\"a%c\"}",
        "{\"col\":\"b\",\"op\":\"eq\",\"val\":false}",
        "{\"col\":\"b\",\"op\":\"eq\",\"val\":true},{\"col\":\"cat\",\"op\":\"eq\",\"val\":\"b\"}",
        "{\"col\":\"cat\",\"op\":\"in\",\"val\":[\"a\",\"c\"]},{\"col\":\"i\",\"op\":\"in\",\"val\":[3]}",
    };
    for (size_t p = 0; p < sizeof preds / sizeof preds[0]; p++) {
        char json[512];
        snprintf(json, sizeof json, "{\"columns\":[\"id\"],\"predicates\":[%s]}", preds[p]);
        char *want = run_mode(json, QUERY_PAGED); /* SQL path, table order */
        struct compiled *c = compile(json);
        const struct index_term *terms;
        size_t nt;
        bool empty;
        bool ok = query_index_match_terms(&c->req, ix, &c->arena, &terms, &nt, &empty);
        CHECK(ok);
        struct ids got = {.id_col = id_col};
        sb_init(&got.out, 0);
        if (ok) {
            struct index_fast_query q = {.kind = INDEX_FAST_ROWS, .terms = terms,
                                         .n_terms = nt, .empty = empty, .limit = -1,
                                         .max_rows = SIZE_MAX};
            struct index_fast_sink sink = {.ctx = &got, .begin = ids_begin, .row = ids_row};
            struct vt_error err;
            enum index_fast r = index_fast_answer(fp, &q, &sink, &c->arena, &err);
            /* dense columns alone are left to DuckDB */
            if (r == INDEX_FAST_NO) {
                sb_reset(&got.out);
                sb_adds(&got.out, want);
            }
        }
        if (strcmp(got.out.buf ? got.out.buf : "", want) != 0)
            fprintf(stderr, "  request: %s\n", json);
        CHECK_EQ_STR(got.out.buf ? got.out.buf : "", want);
        sb_release(&got.out);
        free(want);
        done(c);
    }
    /* A column the index does not hold (DOUBLE) keeps the SQL path. */
    struct compiled *c = compile("{\"predicates\":[{\"col\":\"d\",\"op\":\"eq\",\"val\":1}]}");
    const struct index_term *terms;
    size_t nt;
    bool empty;
    CHECK(!query_index_match_terms(&c->req, ix, &c->arena, &terms, &nt, &empty));
    done(c);
    index_fastpath_destroy(fp);
    index_thread_release();
}

/* ---- query-language additions (issue 28) ---- */

TEST(new_aggregations_sql)
{
    CHECK_SQL("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"count_distinct\",\"col\":\"s\"},"
              "{\"op\":\"median\",\"col\":\"price\"},{\"op\":\"quantile\",\"col\":\"price\",\"q\":0.95,"
              "\"alias\":\"p95\"},{\"op\":\"stddev\",\"col\":\"d\"}]}",
              "SELECT * FROM (SELECT \"cat\", count(DISTINCT \"s\") AS \"count_distinct_s\", "
              "median(\"price\") AS \"median_price\", quantile_cont(\"price\", CAST(? AS DOUBLE)) "
              "AS \"p95\", stddev_samp(\"d\") AS \"stddev_d\" FROM " REL " GROUP BY \"cat\") AS "
              "\"q\" ORDER BY \"cat\" ASC NULLS LAST LIMIT 100");
    struct compiled *c = compile("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"quantile\","
                                 "\"col\":\"price\",\"q\":0.25}],\"predicates\":[{\"col\":\"i\","
                                 "\"op\":\"gt\",\"val\":1}]}");
    CHECK_EQ_INT(c->code, VT_ERR_OK);
    /* q is bound before the predicate's value: parameters follow the text */
    CHECK_EQ_INT(c->plan.nparams, 2);
    CHECK_EQ_INT(c->plan.params[0].kind, QUERY_VALUE_DOUBLE);
    CHECK(c->plan.params[0].u.d == 0.25);
    CHECK_EQ_INT(c->plan.params[1].kind, QUERY_VALUE_INT64);
    done(c);
}

TEST(new_aggregations_errors)
{
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"quantile\",\"col\":\"i\"}]}",
              VT_ERR_INVALID_AGGREGATION, "aggregations[0].q: missing; quantile needs q");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"quantile\",\"col\":\"i\",\"q\":1.5}]}",
              VT_ERR_INVALID_AGGREGATION, "aggregations[0].q: must be a number from 0 to 1");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"quantile\",\"col\":\"i\",\"q\":\"0.5\"}]}",
              VT_ERR_INVALID_AGGREGATION, "aggregations[0].q: must be a number from 0 to 1");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"median\",\"col\":\"i\",\"q\":0.5}]}",
              VT_ERR_INVALID_AGGREGATION, "aggregations[0].q: q applies to quantile only");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"stddev\",\"col\":\"s\"}]}",
              VT_ERR_INVALID_AGGREGATION, "stddev needs a numeric column; \"s\" is VARCHAR");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"median\",\"col\":\"s\"}]}",
              VT_ERR_INVALID_AGGREGATION, "median needs a numeric, date, time or timestamp column");
    CHECK_ERR("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"count_distinct\"}]}",
              VT_ERR_INVALID_AGGREGATION, "count_distinct needs a column");
    /* the spec's rules stay: aggregations still need a group_by */
    CHECK_ERR("{\"aggregations\":[{\"op\":\"median\",\"col\":\"i\"}]}", VT_ERR_INVALID_COMBINATION,
              "aggregations: requires a non-empty group_by");
}

TEST(bucketed_group_by_sql)
{
    CHECK_SQL("{\"group_by\":[{\"col\":\"ts\",\"bucket\":\"hour\"}],\"order_by\":[{\"col\":\"ts\"}]}",
              "SELECT * FROM (SELECT CAST(date_trunc('hour', \"ts\") AS TIMESTAMP) AS \"ts\", "
              "count(*) AS \"count\" FROM " REL " GROUP BY 1) AS \"q\" ORDER BY \"ts\" ASC NULLS "
              "LAST LIMIT 100");
    CHECK_SQL("{\"group_by\":[{\"col\":\"t\",\"bucket\":\"minute\",\"alias\":\"m\"},\"cat\"]}",
              "SELECT * FROM (SELECT CAST(date_trunc('minute', DATE '1970-01-01' + \"t\") AS TIME) "
              "AS \"m\", \"cat\" AS \"cat\", count(*) AS \"count\" FROM " REL " GROUP BY 1, 2) AS "
              "\"q\" ORDER BY \"m\" ASC NULLS LAST, \"cat\" ASC NULLS LAST LIMIT 100");
    CHECK_SQL("{\"group_by\":[{\"col\":\"i\",\"width\":5}]}",
              "SELECT * FROM (SELECT CAST(CAST(\"i\" AS HUGEINT) - ((CAST(\"i\" AS HUGEINT) % "
              "CAST(? AS HUGEINT)) + CAST(? AS HUGEINT)) % CAST(? AS HUGEINT) AS BIGINT) AS \"i\", "
              "count(*) AS \"count\" FROM " REL " GROUP BY 1) AS \"q\" ORDER BY \"i\" ASC NULLS LAST "
              "LIMIT 100");
    CHECK_SQL("{\"group_by\":[{\"col\":\"price\",\"width\":2.5}]}",
              "SELECT * FROM (SELECT round(floor((CAST(\"price\" AS DOUBLE) + abs(CAST(\"price\" AS "
              "DOUBLE)) * 8.881784197001252e-16) / CAST(? AS DOUBLE)) * "
              "CAST(? AS DOUBLE), CAST(? AS INTEGER)) AS \"price\", count(*) AS \"count\" FROM " REL
              " GROUP BY 1) AS \"q\" ORDER BY \"price\" ASC NULLS LAST LIMIT 100");
    /* a plain entry as an object is the column itself */
    CHECK_SQL("{\"group_by\":[{\"col\":\"cat\"}]}",
              "SELECT * FROM (SELECT \"cat\", count(*) AS \"count\" FROM " REL " GROUP BY \"cat\") "
              "AS \"q\" ORDER BY \"cat\" ASC NULLS LAST LIMIT 100");
}

TEST(bucketed_group_by_errors)
{
    CHECK_ERR("{\"group_by\":[{\"col\":\"ts\",\"bucket\":\"fortnight\"}]}", VT_ERR_INVALID_QUERY,
              "group_by[0].bucket: must be one of minute, hour, day, week, month, year");
    CHECK_ERR("{\"group_by\":[{\"col\":\"ts\",\"bucket\":\"hours\"}]}", VT_ERR_INVALID_QUERY,
              "(did you mean \"hour\"?)");
    CHECK_ERR("{\"group_by\":[{\"col\":\"s\",\"bucket\":\"day\"}]}", VT_ERR_INVALID_QUERY,
              "group_by[0].bucket: a day bucket applies to date and timestamp columns, not to \"s\"");
    CHECK_ERR("{\"group_by\":[{\"col\":\"t\",\"bucket\":\"day\"}]}", VT_ERR_INVALID_QUERY,
              "a day bucket applies to date and timestamp columns");
    CHECK_ERR("{\"group_by\":[{\"col\":\"s\",\"width\":5}]}", VT_ERR_INVALID_QUERY,
              "group_by[0].width: width applies to numeric columns");
    CHECK_ERR("{\"group_by\":[{\"col\":\"i\",\"width\":0}]}", VT_ERR_INVALID_QUERY,
              "group_by[0].width: must be a number > 0");
    CHECK_ERR("{\"group_by\":[{\"col\":\"i\",\"width\":-2.5}]}", VT_ERR_INVALID_QUERY,
              "group_by[0].width: must be a number > 0");
    CHECK_ERR("{\"group_by\":[{\"col\":\"i\",\"width\":\"5\"}]}", VT_ERR_INVALID_QUERY,
              "group_by[0].width: must be a number > 0");
    CHECK_ERR("{\"group_by\":[{\"col\":\"ts\",\"bucket\":\"day\",\"width\":1}]}",
              VT_ERR_INVALID_QUERY, "group_by[0]: give bucket or width, not both");
    CHECK_ERR("{\"group_by\":[{\"col\":\"ts\",\"buckets\":\"day\"}]}", VT_ERR_UNKNOWN_FIELD,
              "group_by[0]: unknown field \"buckets\"");
    CHECK_ERR("{\"group_by\":[{\"bucket\":\"day\"}]}", VT_ERR_INVALID_QUERY,
              "group_by[0].col: missing");
    CHECK_ERR("{\"group_by\":[7]}", VT_ERR_INVALID_QUERY,
              "group_by[0]: must be a column name or an object");
    CHECK_ERR("{\"group_by\":[{\"col\":\"ts\",\"bucket\":\"day\"},{\"col\":\"ts\",\"bucket\":\"hour\"}]}",
              VT_ERR_INVALID_QUERY, "group_by[1]: output column \"ts\" is named twice; give one an alias");
    CHECK_ERR("{\"group_by\":[{\"col\":\"ts\",\"bucket\":\"day\"}],\"aggregations\":[{\"op\":\"count\","
              "\"alias\":\"ts\"}]}",
              VT_ERR_INVALID_AGGREGATION, "alias \"ts\" is also a group_by column");
    /* having and order_by name the bucket's output column */
    CHECK_ERR("{\"group_by\":[{\"col\":\"ts\",\"bucket\":\"day\",\"alias\":\"day\"}],"
              "\"order_by\":[{\"col\":\"ts\"}]}",
              VT_ERR_INVALID_ORDER, "order_by[0].col: \"ts\" is not a group_by column");
}

TEST(include_total_requests)
{
    struct compiled *c = compile("{\"columns\":[\"id\"],\"predicates\":[{\"col\":\"i\",\"op\":\"gt\","
                                 "\"val\":1}],\"include_total\":true,\"page_size\":2}");
    CHECK_EQ_INT(c->code, VT_ERR_OK);
    CHECK(c->req.include_total);
    struct query_request t;
    query_total_request(&c->req, &t);
    CHECK_EQ_INT(t.mode, QUERY_COUNT); /* a plain count: the index may answer */
    CHECK(!t.count_result);
    struct query_plan p;
    struct vt_error err = {0};
    CHECK_EQ_INT(query_build_sql(&t, REL, &c->arena, &p, &err), VT_ERR_OK);
    CHECK_EQ_STR(p.sql, "SELECT count(*) AS \"count\" FROM " REL " WHERE \"i\" > CAST(? AS BIGINT)");
    CHECK_EQ_INT(query_total_cap(&c->req, 7), 7);
    done(c);

    c = compile("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"sum\",\"col\":\"price\"},"
                "{\"op\":\"median\",\"col\":\"d\"}],\"having\":[{\"col\":\"sum_price\",\"op\":\"gt\","
                "\"val\":1}],\"order_by\":[{\"col\":\"cat\"}],\"limit\":3,\"include_total\":true}");
    CHECK_EQ_INT(c->code, VT_ERR_OK);
    query_total_request(&c->req, &t);
    CHECK(t.count_result);
    CHECK_EQ_INT(query_build_sql(&t, REL, &c->arena, &p, &err), VT_ERR_OK);
    /* only what having reads, no order, no limit */
    CHECK_EQ_STR(p.sql, "SELECT count(*) AS \"count\" FROM (SELECT \"cat\", sum(\"price\") AS "
                        "\"sum_price\" FROM " REL " GROUP BY \"cat\") AS \"q\" WHERE \"sum_price\" > "
                        "CAST(? AS BIGINT)");
    CHECK_EQ_INT(query_total_cap(&c->req, 7), 3);
    done(c);

    c = compile("{\"columns\":[\"cat\"],\"distinct\":true,\"include_total\":true}");
    query_total_request(&c->req, &t);
    CHECK_EQ_INT(query_build_sql(&t, REL, &c->arena, &p, &err), VT_ERR_OK);
    CHECK_EQ_STR(p.sql, "SELECT count(*) AS \"count\" FROM (SELECT DISTINCT \"cat\" FROM " REL
                        ") AS \"q\"");
    const struct query_index_term *terms;
    size_t n;
    CHECK(!query_index_terms(&t, &c->arena, &terms, &n));
    done(c);

    /* only on paged queries; a malformed flag is a 400 everywhere */
    c = compile_mode("{\"include_total\":true}", QUERY_STREAM);
    CHECK_EQ_INT(c->code, VT_ERR_OK);
    CHECK(!c->req.include_total);
    done(c);
    CHECK_ERR("{\"include_total\":1}", VT_ERR_INVALID_QUERY, "include_total: must be true or false");
}

TEST(exec_new_aggregations_and_buckets)
{
    /* price: a 10.0, 7.5; b NULL, 20.0; c 1.0; ~ NULL */
    CHECK_ROWS("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"median\",\"col\":\"price\"},"
               "{\"op\":\"quantile\",\"col\":\"price\",\"q\":0.75,\"alias\":\"q3\"},"
               "{\"op\":\"count_distinct\",\"col\":\"s\"},{\"op\":\"stddev\",\"col\":\"price\"}],"
               "\"order_by\":[{\"col\":\"cat\"}]}",
               "a,8.75,9.375,2,1.7677669529663689;b,20.0,20.0,2,~;c,1.0,1.0,1,~;~,~,~,0,~");
    CHECK_ROWS("{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"median\",\"col\":\"dt\"}],"
               "\"having\":[{\"col\":\"median_dt\",\"op\":\"gte\",\"val\":\"2024-01-01T12:00:00\"}]}",
               "a,2024-01-01 12:00:00;b,2024-01-30 00:00:00");
    /* ts: 2024-01-01 10:00, 2024-01-01 23:30, 2024-02-29 12:00, NULL, 2025-01-01 00:30, NULL */
    CHECK_ROWS("{\"group_by\":[{\"col\":\"ts\",\"bucket\":\"day\"}],\"order_by\":[{\"col\":\"ts\"}]}",
               "2024-01-01 00:00:00,2;2024-02-29 00:00:00,1;2025-01-01 00:00:00,1;~,2");
    CHECK_ROWS("{\"group_by\":[{\"col\":\"ts\",\"bucket\":\"month\",\"alias\":\"m\"}],"
               "\"having\":[{\"col\":\"m\",\"op\":\"lt\",\"val\":\"2025-01-01\"}],"
               "\"order_by\":[{\"col\":\"m\",\"dir\":\"desc\"}]}",
               "2024-02-01 00:00:00,1;2024-01-01 00:00:00,2");
    CHECK_ROWS("{\"group_by\":[{\"col\":\"dt\",\"bucket\":\"week\"}],\"order_by\":[{\"col\":\"dt\"}]}",
               "2023-12-25,1;2024-01-01,2;2024-02-26,1;~,2");
    CHECK_ROWS("{\"group_by\":[{\"col\":\"tstz\",\"bucket\":\"year\"}],\"order_by\":[{\"col\":\"tstz\"}]}",
               /* in the session's zone (the server's is UTC) */
               "2023-01-01 00:00:00-08,1;2024-01-01 00:00:00-08,2;~,3");
    CHECK_ROWS("{\"group_by\":[{\"col\":\"t\",\"bucket\":\"hour\"}],\"order_by\":[{\"col\":\"t\"}]}",
               "00:00:00,1;10:00:00,1;12:00:00,1;23:00:00,1;~,2");
    /* ti: 1, -5, 127, NULL, 0, NULL: floor to multiples of 5, exactly */
    CHECK_ROWS("{\"group_by\":[{\"col\":\"ti\",\"width\":5}],\"order_by\":[{\"col\":\"ti\"}]}",
               "-5,1;0,2;125,1;~,2");
    CHECK_ROWS("{\"group_by\":[{\"col\":\"hi\",\"width\":10}],\"having\":[{\"col\":\"hi\",\"op\":\"lt\","
               "\"val\":100}],\"order_by\":[{\"col\":\"hi\"}]}",
               "-10,1;0,2");
    /* price 10.0, 7.5, 20.0, 1.0: width 2.5 */
    CHECK_ROWS("{\"group_by\":[{\"col\":\"price\",\"width\":2.5}],\"predicates\":[{\"col\":\"price\","
               "\"op\":\"is_not_null\"}],\"order_by\":[{\"col\":\"price\"}]}",
               "0.0,1;7.5,1;10.0,1;20.0,1");
    CHECK_ROWS("{\"group_by\":[{\"col\":\"dec\",\"width\":0.1}],\"predicates\":[{\"col\":\"dec\","
               "\"op\":\"is_not_null\"}],\"order_by\":[{\"col\":\"dec\"}]}",
               "-1.0,1;0.1,1;1.2,1;99.9,1");
}

TEST(exec_totals)
{
    const char *cases[][2] = {
        {"{\"columns\":[\"id\"],\"predicates\":[{\"col\":\"i\",\"op\":\"gte\",\"val\":3}]}", "4"},
        {"{\"group_by\":[\"cat\"]}", "4"},
        {"{\"group_by\":[\"cat\"],\"having\":[{\"col\":\"count\",\"op\":\"gt\",\"val\":1}]}", "2"},
        {"{\"group_by\":[\"cat\"],\"aggregations\":[{\"op\":\"median\",\"col\":\"price\"}],"
         "\"having\":[{\"col\":\"median_price\",\"op\":\"gt\",\"val\":5}]}", "2"},
        {"{\"columns\":[\"cat\"],\"distinct\":true}", "4"},
        {"{\"group_by\":[{\"col\":\"ts\",\"bucket\":\"year\"}]}", "3"},
    };
    setup_db();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct compiled *c = compile(cases[i][0]);
        CHECK_EQ_INT(c->code, VT_ERR_OK);
        struct query_request t;
        query_total_request(&c->req, &t);
        struct query_plan p;
        struct vt_error err = {0};
        CHECK_EQ_INT(query_build_sql(&t, REL, &c->arena, &p, &err), VT_ERR_OK);
        duckdb_prepared_statement st;
        CHECK(duckdb_prepare(xcon, p.sql, &st) == DuckDBSuccess);
        CHECK_EQ_INT(query_plan_bind(&p, st, &err), VT_ERR_OK);
        duckdb_result res;
        CHECK(duckdb_execute_prepared(st, &res) == DuckDBSuccess);
        char *v = duckdb_value_varchar(&res, 0, 0);
        CHECK_EQ_STR(v, cases[i][1]);
        duckdb_free(v);
        duckdb_destroy_result(&res);
        duckdb_destroy_prepare(&st);
        done(c);
    }
}

int main(void)
{
    static const struct tl_case cases[] = {
        TEST_CASE(empty_request_selects_everything_paged),
        TEST_CASE(projection_and_paging),
        TEST_CASE(limit_caps_total_across_pages),
        TEST_CASE(stream_and_count_modes),
        TEST_CASE(null_body_is_empty_request),
        TEST_CASE(extra_fields_are_skipped),
        TEST_CASE(predicates_every_operator),
        TEST_CASE(params_are_typed_and_ordered),
        TEST_CASE(mixed_in_list_splits_by_type),
        TEST_CASE(long_in_list_is_one_list_parameter),
        TEST_CASE(temporal_values_are_canonical),
        TEST_CASE(enum_compares_as_varchar),
        TEST_CASE(order_by_multi_key),
        TEST_CASE(distinct),
        TEST_CASE(group_by_with_implicit_count),
        TEST_CASE(aggregations_having_order),
        TEST_CASE(null_fields_mean_absent),
        TEST_CASE(errors_shape_and_types),
        TEST_CASE(errors_unknown_fields),
        TEST_CASE(errors_unknown_column_and_operator),
        TEST_CASE(errors_values),
        TEST_CASE(errors_dates),
        TEST_CASE(errors_operator_and_type),
        TEST_CASE(errors_combinations),
        TEST_CASE(errors_aggregations),
        TEST_CASE(errors_having_and_order),
        TEST_CASE(implicit_count_collision),
        TEST_CASE(errors_limits),
        TEST_CASE(index_terms),
        TEST_CASE(exec_numbers_by_value),
        TEST_CASE(exec_strings),
        TEST_CASE(exec_dates_and_times),
        TEST_CASE(exec_long_in_lists),
        TEST_CASE(exec_wide_decimals),
        TEST_CASE(exec_json_compares_as_text),
        TEST_CASE(exec_grouping),
        TEST_CASE(exec_paging_and_modes),
        TEST_CASE(exec_index_path_matches_sql),
        TEST_CASE(new_aggregations_sql),
        TEST_CASE(new_aggregations_errors),
        TEST_CASE(bucketed_group_by_sql),
        TEST_CASE(bucketed_group_by_errors),
        TEST_CASE(include_total_requests),
        TEST_CASE(exec_new_aggregations_and_buckets),
        TEST_CASE(exec_totals),
    };
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    if (xcon) {
        duckdb_disconnect(&xcon);
        duckdb_close(&xdb);
    }
    return rc;
}
