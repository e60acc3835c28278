/*
 * libFuzzer target for the query request compiler: random bytes -> jansson ->
 * query_parse -> query_build_sql, in every mode, against a schema holding every
 * class of column type. Besides memory errors (ASan/UBSan) it checks the
 * compiler's safety rule on every accepted request: the SQL text has no string
 * literal but the compiler's own constants (bucket units, an epoch date; no
 * other single quote outside quoted identifiers) and exactly one `?` per
 * parameter. With FUZZ_QUERY_DUCKDB=1 it also prepares, binds and runs
 * each statement against an empty DuckDB table of that schema: any failure is
 * a compiler bug (slow; use it for shorter runs).
 *
 *   make fuzz-query
 *   build-fuzz/fuzz_query -dict=tests/fuzz/query.dict tests/fuzz/corpus/fuzz_query
 */
#include <duckdb.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query/query.h"

static const struct query_column cols[] = {
    {"id", DUCKDB_TYPE_INTEGER, NULL},   {"ti", DUCKDB_TYPE_TINYINT, NULL},
    {"uh", DUCKDB_TYPE_UHUGEINT, NULL},
    {"ub", DUCKDB_TYPE_UBIGINT, NULL},   {"hi", DUCKDB_TYPE_HUGEINT, NULL},
    {"f", DUCKDB_TYPE_FLOAT, NULL},      {"d", DUCKDB_TYPE_DOUBLE, NULL},
    {"dec", DUCKDB_TYPE_DECIMAL, NULL},  {"s", DUCKDB_TYPE_VARCHAR, NULL},
    {"e", DUCKDB_TYPE_ENUM, NULL},       {"b", DUCKDB_TYPE_BOOLEAN, NULL},
    {"dt", DUCKDB_TYPE_DATE, NULL},      {"t", DUCKDB_TYPE_TIME, NULL},
    {"ts", DUCKDB_TYPE_TIMESTAMP, NULL}, {"tsns", DUCKDB_TYPE_TIMESTAMP_NS, NULL},
    {"tstz", DUCKDB_TYPE_TIMESTAMP_TZ, NULL}, {"ttz", DUCKDB_TYPE_TIME_TZ, NULL},
    {"u", DUCKDB_TYPE_UUID, NULL},       {"bl", DUCKDB_TYPE_BLOB, NULL},
    {"l", DUCKDB_TYPE_LIST, NULL},       {"q\"?'x", DUCKDB_TYPE_VARCHAR, NULL},
};
static const struct query_schema schema = {cols, sizeof cols / sizeof cols[0]};
static const char ddl[] =
    "CREATE TABLE t (id INTEGER, ti TINYINT, uh UHUGEINT, ub UBIGINT, hi HUGEINT, f FLOAT,"
    " d DOUBLE, dec DECIMAL(38,20), s VARCHAR, e ENUM('a', 'b'), b BOOLEAN, dt DATE, t TIME,"
    " ts TIMESTAMP, tsns TIMESTAMP_NS, tstz TIMESTAMPTZ, ttz TIMETZ, u UUID, bl BLOB,"
    " l INTEGER[], \"q\"\"?'x\" VARCHAR)";

static duckdb_database db;
static duckdb_connection con;
static int use_duckdb = -1;

static bool is_compiler_literal(const char *text, size_t n)
{
    static const char *const allowed[] = {"minute", "hour", "day", "week", "month", "year", "1970-01-01"};
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (strlen(allowed[i]) == n && memcmp(allowed[i], text, n) == 0)
            return true;
    return false;
}

static void check_text(const struct query_plan *p)
{
    size_t marks = 0;
    for (const char *s = p->sql; *s; s++) {
        if (*s == '"') { /* a quoted identifier; "" is an escaped quote */
            for (s++; *s && !(s[0] == '"' && s[1] != '"'); s++)
                if (s[0] == '"')
                    s++;
            if (!*s)
                abort(); /* unterminated identifier */
        } else if (*s == '\'') {
            /* A string literal: only the compiler's own constants may be one
             * (a time bucket's unit, the TIME bucket's epoch date); anything
             * else means a value reached the SQL text. */
            size_t n = strcspn(s + 1, "'");
            if (s[1 + n] != '\'' || !is_compiler_literal(s + 1, n))
                abort();
            s += n + 1;
        } else if (*s == '?') {
            marks++;
        }
    }
    if (marks != p->nparams)
        abort();
}

static void run(const struct query_plan *p)
{
    if (use_duckdb < 0) {
        const char *env = getenv("FUZZ_QUERY_DUCKDB");
        use_duckdb = env && env[0] == '1';
        if (use_duckdb) {
            duckdb_result r;
            struct vt_error lerr = {0};
            if (duckdb_open(NULL, &db) != DuckDBSuccess || duckdb_connect(db, &con) != DuckDBSuccess ||
                query_like_register(con, &lerr) != VT_ERR_OK ||
                duckdb_query(con, ddl, &r) != DuckDBSuccess)
                abort();
            duckdb_destroy_result(&r);
            duckdb_query(con,
                         "INSERT INTO t (id, s, ts, uh, dec) VALUES (1, 'x', '2024-01-01',"
                         " 340282366920938463463374607431768211455, 123456789012345678.5)",
                         &r);
            duckdb_destroy_result(&r);
        }
    }
    if (!use_duckdb)
        return;
    duckdb_prepared_statement st;
    if (duckdb_prepare(con, p->sql, &st) != DuckDBSuccess) {
        fprintf(stderr, "prepare failed: %s\n%s\n", duckdb_prepare_error(st), p->sql);
        abort();
    }
    struct vt_error err = {0};
    if (query_plan_bind(p, st, &err) != VT_ERR_OK) {
        fprintf(stderr, "bind failed: %s\n%s\n", err.msg, p->sql);
        abort();
    }
    duckdb_result res;
    if (duckdb_execute_prepared(st, &res) != DuckDBSuccess) {
        fprintf(stderr, "execute failed: %s\n%s\n", duckdb_result_error(&res), p->sql);
        abort();
    }
    if (duckdb_column_count(&res) != p->nout)
        abort();
    duckdb_destroy_result(&res);
    duckdb_destroy_prepare(&st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!body)
        return 0;
    static const enum query_mode modes[] = {QUERY_PAGED, QUERY_STREAM, QUERY_COUNT};
    for (size_t m = 0; m < 3; m++) {
        struct arena a;
        arena_init(&a, 16u << 20);
        struct query_options opts = {.mode = modes[m], .max_page_size = 1000};
        struct query_request req;
        struct query_plan plan;
        struct vt_error err = {0};
        enum vt_err e = query_parse(body, &schema, &opts, &a, &req, &err);
        if (e == VT_ERR_OK) {
            e = query_build_sql(&req, "\"t\"", &a, &plan, &err);
            if (e != VT_ERR_OK && e != VT_ERR_OUT_OF_MEMORY)
                abort(); /* a parsed request must always compile */
            if (e == VT_ERR_OK) {
                check_text(&plan);
                run(&plan);
            }
            const struct query_index_term *terms;
            size_t n;
            query_index_terms(&req, &a, &terms, &n);
        } else if (vt_err_status(e) != 400 && e != VT_ERR_OUT_OF_MEMORY) {
            abort(); /* every rejection is a client error */
        } else if (!err.msg[0]) {
            abort(); /* and says why */
        }
        arena_release(&a);
    }
    json_decref(body);
    return 0;
}
