/*
 * libFuzzer target for the SQL functions user statements may call (issue 21
 * item 0, issue 22 item 7): every allowlisted function (src/sql/allowlist.c),
 * with the bounded wrappers and PostgreSQL functions of engine/functions.c
 * and the allocation budget of engine/budget.cc in place as in the server,
 * called with hostile arguments (NULLs, empty and huge strings, negative and
 * extreme numbers, deep JSON, nested lists and structs, malformed blobs and
 * text from the input itself, columns of a table holding such values) and
 * composed with other allowlisted functions up to three levels deep. Each
 * statement goes through the SQL gate first (what /sql would refuse is not
 * run), then runs in DuckDB under a deadline.
 *
 * What fails: a crash or an ASan/UBSan report (ours), a signal in DuckDB
 * (stack overflow, SEGV: the json_structure of 100,000 '[' was one), the
 * process past -rss_limit_mb, and a statement still running 20 s after its
 * deadline's interrupt (a call nothing can stop). DuckDB errors are answers.
 *
 * The input: one byte picks the shape of the statement, then two bytes pick
 * the function, one its arity, then per argument one byte picks from the
 * hostile pool (or a nested call, a column, or the following bytes as a
 * string literal). The shapes (where the crash classes live):
 *
 *   scalar     f(args) [, g(args)] FROM t (composed up to three deep)
 *   window     f(args) OVER ([PARTITION BY] [ORDER BY] [ROWS|RANGE|GROUPS
 *              frame with hostile bounds] [EXCLUDE]) FROM t: lag/lead with
 *              INT64_MIN crashed the server
 *   aggregate  f([DISTINCT] args [ORDER BY]) [FILTER] FROM t [GROUP BY]
 *   cast       CAST/TRY_CAST/:: of an argument to a type from the type pool,
 *              or a nested type built 1-250 deep (LIST, STRUCT, MAP): JSON
 *              to VARIANT crashed the server
 *   deep       f(f(...f(x, args)...)) 1-250 deep by a loop
 *   table      SELECT * FROM range/generate_series/unnest/json_each/json_tree
 *              (args), and unnest(x, recursive := true)
 *   jsonb      the functions pgwire's dialect maps jsonb @>, jsonb_set and
 *              jsonb_insert onto ("vt:jsonb_*", engine/jsonb.c): called by
 *              name, which only the dialect may do, so past the gate
 *
 *   make fuzz && build-fuzz/fuzz_sql_functions -rss_limit_mb=2048 DIR
 *   FUZZ_SQL_SWEEP=1 build-fuzz/fuzz_sql_functions   # every function x every
 *       pool value at every position of arity 1-3, every window function
 *       the same way over () and (ORDER BY), every frame bound, every pool
 *       value cast to every type, once (under an hour), then exits
 */
#include <duckdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "sql/sql.h"
#include "util/strbuf.h"

static duckdb_database db;
static duckdb_connection con;
static const char *const *fns;
static size_t nfns;

static const char *const pool[] = {
    "NULL", "''", "'x'", "'abc'", "'é€😀'", "-1", "0", "1", "2", "3", "7", "64", "1000000",
    "-2147483648", "2147483647", "9223372036854775807", "-9223372036854775808", "1e308",
    "-1e308", "'nan'::DOUBLE", "'inf'::DOUBLE", "-0.0", "0.5", "3e9", "1e9", "2000000000",
    "repeat('x', 100000)", "repeat('ab', 3000)", "repeat('[', 100000) || repeat(']', 100000)",
    "repeat('{\"a\":', 20000) || '1' || repeat('}', 20000)", "'{\"a\": [1, {\"b\": null}]}'",
    "'{\"a\":'", "'[1,2,'", "'\\x00\\xff'::BLOB", "''::BLOB", "repeat('\\xAA'::BLOB, 1000)",
    "[]", "[NULL]", "[1, 2, 3]", "[[1, 2], [3]]", "[[[[[1]]]]]", "['a', NULL, '']",
    "range(1000)", "{'a': 1}", "{'a': {'b': [1, NULL]}}", "MAP {'k': 1}", "MAP {}",
    "DATE '2024-02-29'", "'infinity'::DATE", "TIMESTAMP '294247-01-10 04:00:54'",
    "'-infinity'::TIMESTAMP", "TIMESTAMPTZ '2024-01-01 00:00:00+00'",
    "INTERVAL '1000000000 days'", "INTERVAL '-1 month'", "TIME '23:59:59.999999'",
    "'ffffffff-ffff-ffff-ffff-ffffffffffff'::UUID", "170141183460469231731687303715884105727::HUGEINT",
    "1.5::DECIMAL(38, 10)", "true", "false", "'%'", "'%s%s%n%999999d'", "'{:>9999}'",
    "'.*'", "'(a+)+$'", "'YYYY-MM-DD HH24:MI'", "'%Y-%m-%d'", "'$.a[0]'", "'utf-8'",
    "t.i", "t.s", "t.l", "t.j", "t.b", "t.ts", "t.d", "t.st", "t.blob", "t.m",
    /* structures (json_transform, from_json), deep as 2nd/3rd arguments */
    "'\"VARIANT\"'", "'{\"a\": \"INTEGER\", \"b\": [\"VARCHAR\"]}'", "'[\"JSON\"]'",
    "'\"UNION(a INT)\"'", "repeat('[', 3000) || '\"INTEGER\"' || repeat(']', 3000)",
    "repeat('{\"a\":', 3000) || '\"INTEGER\"' || repeat('}', 3000)",
    "(repeat('[', 30000) || repeat(']', 30000))::JSON",
    "'[1, [2, [3, [4]]]]'::JSON", "'{\"a\": {\"b\": [1, {\"c\": null}]}}'::JSON",
    "'$..*'", "'$[#-1]'", "'$' || repeat('[0]', 10000)", "'$.a.b[*].c'",
    /* regexps, formats */
    "'(a{1000}){1000}'", "'a{0,1000}b{0,1000}'", "repeat('(', 3000) || 'a' || repeat(')', 3000)",
    "'(?i)(\\w+\\s*)*$'", "'%Y-%m-%d %H:%M:%S.%f %z %Z %j %U %W %G %V %u'",
    "'%-d/%-m/%y %I %p %A %B %c %x %X %n %g'", "repeat('%Y', 10000)", "'%'",
    /* huge inputs to split, unnest, sort */
    "repeat('a,', 500000)", "repeat(',', 100000)", "repeat('é', 100000)", "range(100000)",
    /* extremes of precision, scale, offsets, counts */
    "-9223372036854775807 - 1", "CAST(-9223372036854775808 AS HUGEINT)", "-2147483649",
    "18446744073709551615::UBIGINT", "38", "39", "-38", "100000", "-1000000000000", "1e-308",
    "'-0'::DOUBLE",
    /* nesting */
    "[range(10), range(3)]", "list_value([1], [2, 3], NULL)", "{'a': [1, 2], 'b': {'c': NULL}}",
    "[{'a': 1}, {'a': NULL}]", "MAP {'a': [1], 'b': NULL}", "-t.i", "t.i::DOUBLE",
};
#define POOL_N (sizeof pool / sizeof pool[0])
#define MAX_DEPTH 3
_Static_assert(POOL_N + 24 <= 0xb4, "the seed corpus reads 0xb4 and up as literals");

/* Cast targets; "@" is a type nested 1-250 deep (cast_type). */
static const char *const types[] = {
    "INTEGER", "BIGINT", "HUGEINT", "UBIGINT", "DOUBLE", "FLOAT", "DECIMAL(38, 10)",
    "DECIMAL(4, 4)", "DECIMAL(18, 0)", "VARCHAR", "BLOB", "BIT", "DATE", "TIMESTAMP",
    "TIMESTAMPTZ", "TIMESTAMP_NS", "TIMESTAMP_S", "TIME", "TIMETZ", "INTERVAL", "UUID", "JSON",
    "VARIANT", "BOOLEAN", "INTEGER[]", "VARCHAR[]", "JSON[]", "INTEGER[3]", "INTEGER[][]",
    "VARCHAR[2][2]", "STRUCT(a INTEGER, b VARCHAR)", "STRUCT(k VARCHAR[])", "STRUCT(a VARIANT)",
    "MAP(VARCHAR, INTEGER)", "MAP(VARCHAR, JSON)", "MAP(INTEGER[], VARCHAR)",
    "UNION(a INTEGER, b VARCHAR)", "ENUM('a', 'b')", "VARIANT[]", "@",
};
#define TYPES_N (sizeof types / sizeof types[0])

/* What OVER (...) applies to, and aggregates with DISTINCT/ORDER BY/FILTER. */
static const char *const window_fns[] = {
    "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
    "first_value", "last_value", "nth_value", "fill", "sum", "count", "min", "max", "avg",
    "list", "string_agg", "mode", "quantile", "quantile_disc", "median", "arg_max", "min_by",
    "approx_count_distinct", "histogram", "any_value", "bit_and", "bool_or", "first", "last",
    "json_group_array", "json_group_object", "json_group_structure", "bitstring_agg",
    "approx_quantile", "reservoir_quantile", "approx_top_k", "entropy", "kurtosis", "product",
    "count_if", "array_agg", "group_concat", "mad", "regr_slope", "corr", "arg_min_null",
};
#define WINDOW_N (sizeof window_fns / sizeof window_fns[0])

static const char *const frame_bounds[] = {
    "UNBOUNDED PRECEDING", "UNBOUNDED FOLLOWING", "CURRENT ROW", "# PRECEDING", "# FOLLOWING",
};

static const char table_ddl[] =
    "CREATE TABLE t AS SELECT * FROM (VALUES "
    "(1, 'a', [1, 2], '{\"k\": [1, 2]}', true, TIMESTAMP '2024-01-01', 1.5::DOUBLE, "
    "{'x': 1, 'y': 'z'}, 'ab'::BLOB, MAP {'k': 'v'}), "
    "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), "
    "(-9223372036854775808, repeat('é', 300), [NULL, -1], '[[[]]]', false, "
    "'infinity'::TIMESTAMP, 'nan'::DOUBLE, {'x': NULL, 'y': ''}, ''::BLOB, MAP {}))"
    " v(i, s, l, j, b, ts, d, st, blob, m)";

static bool is_dataset(void *ctx, const char *name)
{
    (void)ctx;
    return !strcmp(name, "t");
}

/* ------------------------------------------------------------ deadline */

static pthread_mutex_t dl_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dl_cv = PTHREAD_COND_INITIALIZER;
static int64_t dl_until;        /* ms, 0: nothing running */
static int64_t dl_interrupted;  /* ms, when it was interrupted */
static const char *dl_sql;

/* The watchdog and the clock run on their own time, not the input's: left
 * out of the coverage libFuzzer counts (how often the watchdog's loop ran
 * during an input would be a "feature"), so that a run is a function of
 * the seed and the corpus (make fuzz-smoke's reproducibility). */
#define NO_COVERAGE __attribute__((no_sanitize("coverage")))

NO_COVERAGE static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

NO_COVERAGE static void *watchdog(void *arg)
{
    (void)arg;
    for (;;) {
        usleep(20000);
        pthread_mutex_lock(&dl_mu);
        int64_t now = now_ms();
        if (dl_until && now >= dl_until && !dl_interrupted) {
            duckdb_interrupt(con);
            dl_interrupted = now;
        } else if (dl_interrupted && now - dl_interrupted > 20000) {
            fprintf(stderr, "still running 20 s after its interrupt:\n%s\n", dl_sql);
            abort();
        }
        pthread_mutex_unlock(&dl_mu);
    }
    return NULL;
}

static void setup(void)
{
    if (db)
        return;
    duckdb_config cfg;
    duckdb_create_config(&cfg);
    duckdb_set_config(cfg, "threads", "1");
    duckdb_set_config(cfg, "memory_limit", "512MiB");
    duckdb_set_config(cfg, "autoinstall_known_extensions", "false");
    duckdb_set_config(cfg, "autoload_known_extensions", "false");
    if (duckdb_open_ext(NULL, &db, cfg, NULL) != DuckDBSuccess ||
        duckdb_connect(db, &con) != DuckDBSuccess)
        abort();
    duckdb_destroy_config(&cfg);
    struct vt_error err = {0};
    if (eng_functions_install(con, &err) != VT_ERR_OK) {
        fprintf(stderr, "%s\n", err.msg);
        abort();
    }
    duckdb_result r;
    if (duckdb_query(con, table_ddl, &r) != DuckDBSuccess) {
        fprintf(stderr, "%s\n", duckdb_result_error(&r));
        abort();
    }
    duckdb_destroy_result(&r);
    duckdb_query(con, "SET enable_external_access = false", &r);
    duckdb_destroy_result(&r);
    /* The clock as a constant (fuzzer only): what now() or uuidv7() gave
     * reached our wrappers (to_char's ordinal suffix of the microseconds)
     * and DuckDB's comparisons, whose operands libFuzzer mutates with, so a
     * run's inputs depended on the time of day. The random functions are
     * reseeded before each statement (run_as). */
    static const char *const frozen[] = {
        "CREATE MACRO main.now() AS TIMESTAMPTZ '2024-06-01 12:34:56.789012+00'",
        "CREATE MACRO main.transaction_timestamp() AS TIMESTAMPTZ '2024-06-01 12:34:56.789012+00'",
        "CREATE MACRO main.today() AS DATE '2024-06-01'",
        "CREATE MACRO main.uuidv7() AS '01900000-0000-7000-8000-000000000000'::UUID",
    };
    for (size_t i = 0; i < sizeof frozen / sizeof frozen[0]; i++) {
        if (duckdb_query(con, frozen[i], &r) != DuckDBSuccess) {
            fprintf(stderr, "%s\n", duckdb_result_error(&r));
            abort();
        }
        duckdb_destroy_result(&r);
    }
    eng_budget_set(768LL * 1024 * 1024); /* the server's: memory_limit plus a quarter+ */
    nfns = sql_allowed_functions(&fns);
    pthread_t t;
    pthread_create(&t, NULL, watchdog, NULL);
    pthread_detach(t);
}

/* Read the result the way the server's encoders do: chunk by chunk, every
 * validity bit and every byte of string and blob cells (a function that
 * built a string cell pointing anywhere is caught here by ASan).
 *
 * Not through duckdb_value_varchar: DuckDB 1.4.4's deprecated value API
 * dereferences NULL for `SELECT '...'::UUID, NULL` (a UUID column beside a
 * NULL-typed one; stop 33's CI found it) — a bug of that API, which the
 * server does not use for user statements. */
static void touch_result(duckdb_result *r)
{
    idx_t cols = duckdb_column_count(r);
    volatile unsigned sum = 0;
    for (;;) {
        duckdb_data_chunk chunk = duckdb_fetch_chunk(*r);
        if (!chunk)
            break;
        idx_t n = duckdb_data_chunk_get_size(chunk);
        for (idx_t c = 0; c < cols; c++) {
            duckdb_vector vec = duckdb_data_chunk_get_vector(chunk, c);
            duckdb_logical_type type = duckdb_vector_get_column_type(vec);
            duckdb_type id = duckdb_get_type_id(type);
            duckdb_destroy_logical_type(&type);
            uint64_t *valid = duckdb_vector_get_validity(vec);
            bool text = id == DUCKDB_TYPE_VARCHAR || id == DUCKDB_TYPE_BLOB;
            duckdb_string_t *cells = text ? duckdb_vector_get_data(vec) : NULL;
            for (idx_t i = 0; i < n; i++) {
                if (!duckdb_validity_row_is_valid(valid, i) || !cells)
                    continue;
                uint32_t len = duckdb_string_t_length(cells[i]);
                const char *bytes = duckdb_string_t_data(&cells[i]);
                for (uint32_t k = 0; k < len; k++)
                    sum += (unsigned char)bytes[k];
            }
        }
        duckdb_destroy_data_chunk(&chunk);
    }
    (void)sum;
}

/* Gate (unless `ungated`: what only pgwire's dialect writes), then run
 * with a 2 s deadline. */
static void run_as(const char *sql, bool ungated)
{
    struct sql_checked chk;
    struct vt_error err = {0};
    enum vt_err rc = VT_ERR_OK;
    if (!ungated) {
        rc = sql_gate_check(con, sql, is_dataset, NULL, &chk, &err);
        /* The gate caches its prepared statements per thread and
         * connection; dropped after each check so nothing of a run
         * outlives it (cached, they were held where LeakSanitizer cannot
         * see them: reported as a leak of the run that prepared them, as
         * quack's were). */
        sql_gate_forget(con);
    }
    if (getenv("FUZZ_SQL_PRINT"))
        fprintf(stderr, "%s: %s\n", rc == VT_ERR_OK ? "run" : "refused", sql);
    if (rc != VT_ERR_OK)
        return;
    if (!ungated)
        sql_checked_release(&chk);
    /* random(), uuid() and the like from the same seed for every input (a
     * statement's setseed() does not carry over to the next one) */
    duckdb_result seeded;
    duckdb_query(con, "SELECT setseed(0.5)", &seeded);
    duckdb_destroy_result(&seeded);
    pthread_mutex_lock(&dl_mu);
    dl_until = now_ms() + 2000;
    dl_interrupted = 0;
    dl_sql = sql;
    pthread_mutex_unlock(&dl_mu);
    duckdb_result r;
    if (duckdb_query(con, sql, &r) == DuckDBSuccess)
        touch_result(&r);
    duckdb_destroy_result(&r);
    pthread_mutex_lock(&dl_mu);
    dl_until = 0;
    dl_interrupted = 0;
    dl_sql = NULL;
    pthread_cond_broadcast(&dl_cv);
    pthread_mutex_unlock(&dl_mu);
}

static void run(const char *sql)
{
    run_as(sql, false);
}

/* ------------------------------------------------------ input -> SQL */

struct rd {
    const uint8_t *p;
    size_t n;
};

static int take(struct rd *r)
{
    if (!r->n)
        return -1;
    r->n--;
    return *r->p++;
}

static void add_call(struct strbuf *sb, struct rd *r, int depth);

static void add_arg(struct strbuf *sb, struct rd *r, int depth)
{
    int b = take(r);
    if (b < 0) {
        sb_adds(sb, "NULL");
        return;
    }
    size_t k = (size_t)b;
    if (k < POOL_N) {
        sb_adds(sb, pool[k]);
    } else if (k < POOL_N + 24 && depth < MAX_DEPTH) {
        add_call(sb, r, depth + 1); /* compose */
    } else {
        /* the next bytes as a string literal (malformed UTF-8 included:
         * DuckDB refuses it at parse, which is an answer) */
        int len = take(r);
        len = len < 0 ? 0 : len % 48;
        sb_addc(sb, '\'');
        for (int i = 0; i < len; i++) {
            int c = take(r);
            if (c < 0)
                break;
            if (c == '\'')
                sb_addc(sb, '\'');
            if (c == 0)
                c = ' ';
            sb_addc(sb, (char)c);
        }
        sb_addc(sb, '\'');
    }
}

static void add_call(struct strbuf *sb, struct rd *r, int depth)
{
    int hi = take(r), lo = take(r), ar = take(r);
    if (hi < 0 || lo < 0) {
        sb_adds(sb, "NULL");
        return;
    }
    const char *fn = fns[(size_t)(hi << 8 | lo) % nfns];
    int arity = ar < 0 ? 1 : ar % 5;
    bool word = (fn[0] >= 'a' && fn[0] <= 'z') || (fn[0] >= 'A' && fn[0] <= 'Z');
    if (!word) { /* an operator: infix, two operands */
        sb_addc(sb, '(');
        add_arg(sb, r, depth);
        sb_addf(sb, " %s ", fn);
        add_arg(sb, r, depth);
        sb_addc(sb, ')');
        return;
    }
    sb_addf(sb, "%s(", fn);
    for (int i = 0; i < arity; i++) {
        if (i)
            sb_adds(sb, ", ");
        add_arg(sb, r, depth);
    }
    sb_addc(sb, ')');
}

/* ------------------------------------------------------------ shapes */

/* Arguments after the function's name and '(' (closes with ')'). */
static void add_args(struct strbuf *sb, struct rd *r, int arity, int depth)
{
    for (int i = 0; i < arity; i++) {
        if (i)
            sb_adds(sb, ", ");
        add_arg(sb, r, depth);
    }
    sb_addc(sb, ')');
}

static const char *pick_window_fn(struct rd *r)
{
    int b = take(r);
    /* odd bytes: any allowlisted name (most do not window: an answer) */
    if (b >= 0 && (b & 1) && take(r) >= 0)
        return fns[(size_t)((b << 7) | (r->n ? r->p[-1] : 0)) % nfns];
    return window_fns[(size_t)(b < 0 ? 0 : b >> 1) % WINDOW_N];
}

static void add_bound(struct strbuf *sb, struct rd *r)
{
    int b = take(r);
    const char *f = frame_bounds[(size_t)(b < 0 ? 2 : b) % 5];
    if (f[0] == '#') {
        add_arg(sb, r, MAX_DEPTH);
        sb_adds(sb, f + 1);
    } else {
        sb_adds(sb, f);
    }
}

static void add_window_spec(struct strbuf *sb, struct rd *r)
{
    static const char *const orders[] = {"t.i", "t.s DESC", "t.d NULLS FIRST", "t.ts",
                                         "t.i::DOUBLE", "t.b DESC NULLS LAST"};
    static const char *const frames[] = {"ROWS", "RANGE", "GROUPS"};
    static const char *const excludes[] = {"CURRENT ROW", "GROUP", "TIES", "NO OTHERS"};
    int b = take(r);
    b = b < 0 ? 0 : b;
    sb_adds(sb, " OVER (");
    if (b & 1)
        sb_adds(sb, "PARTITION BY t.b ");
    if (b & 2)
        sb_addf(sb, "ORDER BY %s ", orders[(size_t)(b >> 5) % 6]);
    if (b & 4) {
        sb_addf(sb, "%s BETWEEN ", frames[(size_t)(b >> 3) % 3]);
        add_bound(sb, r);
        sb_adds(sb, " AND ");
        add_bound(sb, r);
        if (b & 16) {
            int e = take(r);
            sb_addf(sb, " EXCLUDE %s", excludes[(size_t)(e < 0 ? 0 : e) % 4]);
        }
    }
    sb_adds(sb, ")");
}

static void shape_window(struct strbuf *sb, struct rd *r)
{
    const char *fn = pick_window_fn(r);
    int ar = take(r);
    sb_addf(sb, "%s(", fn);
    add_args(sb, r, ar < 0 ? 1 : ar % 4, 1);
    add_window_spec(sb, r);
}

static void shape_aggregate(struct strbuf *sb, struct rd *r, bool *group)
{
    const char *fn = pick_window_fn(r);
    int b = take(r);
    b = b < 0 ? 0 : b;
    sb_addf(sb, "%s(%s", fn, (b & 1) ? "DISTINCT " : "");
    int arity = 1 + (b >> 1) % 3;
    for (int i = 0; i < arity; i++) {
        if (i)
            sb_adds(sb, ", ");
        add_arg(sb, r, 1);
    }
    if (b & 8)
        sb_adds(sb, " ORDER BY t.s DESC");
    sb_addc(sb, ')');
    if (b & 16) {
        sb_adds(sb, " FILTER (WHERE ");
        add_arg(sb, r, 1);
        sb_addc(sb, ')');
    }
    *group = (b & 32) != 0;
}

/* A type nested `n` deep around a base, by a loop (the parser's own depth
 * limit is 1,000; the gate's walk 200). */
static void add_deep_type(struct strbuf *sb, int kind, int n)
{
    static const char *const base[] = {"INTEGER", "JSON", "VARCHAR", "VARIANT"};
    const char *b = base[(size_t)(kind >> 2) % 4];
    if ((kind & 3) == 0) { /* b[][]...[] */
        sb_adds(sb, b);
        for (int i = 0; i < n; i++)
            sb_adds(sb, "[]");
        return;
    }
    /* STRUCT(a STRUCT(a ... b)), MAP(VARCHAR, ...), or UNION and STRUCT alternating */
    for (int i = 0; i < n; i++)
        sb_adds(sb, (kind & 3) == 1   ? "STRUCT(a "
                    : (kind & 3) == 2 ? "MAP(VARCHAR, "
                    : i & 1           ? "STRUCT(a "
                                      : "UNION(a ");
    sb_adds(sb, b);
    for (int i = 0; i < n; i++)
        sb_addc(sb, ')');
}

static void add_type(struct strbuf *sb, struct rd *r)
{
    int b = take(r);
    const char *t = types[(size_t)(b < 0 ? 0 : b) % TYPES_N];
    if (t[0] != '@') {
        sb_adds(sb, t);
        return;
    }
    int kind = take(r), n = take(r);
    add_deep_type(sb, kind < 0 ? 0 : kind, 1 + (n < 0 ? 0 : n) % 250);
}

static void shape_cast(struct strbuf *sb, struct rd *r)
{
    int how = take(r);
    how = how < 0 ? 0 : how % 3;
    sb_adds(sb, how == 0 ? "CAST(" : how == 1 ? "TRY_CAST(" : "(");
    add_arg(sb, r, 1);
    sb_adds(sb, how == 2 ? ")::" : " AS ");
    add_type(sb, r);
    if (how != 2)
        sb_addc(sb, ')');
}

static void shape_deep(struct strbuf *sb, struct rd *r)
{
    int hi = take(r), lo = take(r), nb = take(r), ar = take(r);
    const char *fn = fns[(size_t)((hi < 0 ? 0 : hi) << 8 | (lo < 0 ? 0 : lo)) % nfns];
    int n = 1 + (nb < 0 ? 0 : nb) % 250, extra = ar < 0 ? 0 : ar % 3;
    bool word = (fn[0] >= 'a' && fn[0] <= 'z') || (fn[0] >= 'A' && fn[0] <= 'Z');
    for (int i = 0; i < n; i++)
        sb_addf(sb, word ? "%s(" : "(", fn);
    add_arg(sb, r, MAX_DEPTH);
    /* the same extra arguments at every level */
    struct strbuf tail;
    sb_init(&tail, 0);
    for (int i = 0; i < extra; i++) {
        sb_adds(&tail, word ? ", " : "");
        if (!word)
            sb_addf(&tail, " %s ", fn);
        add_arg(&tail, r, MAX_DEPTH);
    }
    if (!word && !extra)
        sb_addf(&tail, " %s 1", fn);
    sb_adds(&tail, ")");
    for (int i = 0; i < n && !tail.overflow; i++)
        sb_add(sb, tail.buf, tail.len);
    sb_release(&tail);
}

static void shape_table(struct strbuf *sb, struct rd *r)
{
    static const char *const tfs[] = {"range", "generate_series", "unnest", "json_each",
                                      "json_tree"};
    int b = take(r);
    b = b < 0 ? 0 : b;
    if (b & 1) {
        sb_adds(sb, "SELECT count(*), max(length(CAST(x AS VARCHAR))) FROM (SELECT unnest(");
        add_arg(sb, r, 1);
        sb_adds(sb, (b & 2) ? ", recursive := true" : "");
        sb_adds(sb, (b & 4) ? ", max_depth := " : "");
        if (b & 4)
            add_arg(sb, r, MAX_DEPTH);
        sb_adds(sb, ") AS x FROM t)");
        return;
    }
    int ar = take(r);
    sb_addf(sb, "SELECT * FROM %s(", tfs[(size_t)(b >> 1) % 5]);
    add_args(sb, r, ar < 0 ? 1 : 1 + ar % 3, 1);
    sb_adds(sb, " LIMIT 100");
}

static void shape_jsonb(struct strbuf *sb, struct rd *r)
{
    static const char *const jf[] = {"\"vt:jsonb_contains\"", "\"vt:jsonb_set\"",
                                     "\"vt:jsonb_insert\""};
    static const int arity[] = {2, 3, 3};
    int b = take(r);
    size_t k = (size_t)(b < 0 ? 0 : b) % 3;
    int a = arity[k] + (k && b >= 0 && (b & 8) ? 1 : 0);
    sb_addf(sb, "SELECT %s(", jf[k]);
    for (int i = 0; i < a; i++) {
        if (i)
            sb_adds(sb, ", ");
        /* the dialect hands text and text[] paths; NULL-typed arguments
         * are cast as pgwire's parameters would be */
        sb_adds(sb, "CAST(");
        add_arg(sb, r, 1);
        sb_adds(sb, k && i == 1 ? " AS VARCHAR[])" : i == 3 ? " AS BOOLEAN)" : " AS VARCHAR)");
    }
    sb_adds(sb, ") FROM t");
}

enum shape { S_SCALAR, S_WINDOW, S_AGGREGATE, S_CAST, S_DEEP, S_TABLE, S_JSONB, S_N };

/* ------------------------------------------------------------ sweep */

static void sweep_calls(struct strbuf *sb, const char *const *names, size_t n, int max_arity,
                        const char *over)
{
    const char *benign[] = {"'a'", "1", "[1]"};
    for (size_t f = 0; f < n; f++) {
        const char *fn = names[f];
        bool word = (fn[0] >= 'a' && fn[0] <= 'z') || (fn[0] >= 'A' && fn[0] <= 'Z');
        fprintf(stderr, "sweep%s %zu/%zu %s\n", over ? " window" : "", f + 1, n, fn);
        for (int arity = word ? 1 : 2; arity <= (word ? max_arity : 2); arity++)
            for (int pos = 0; pos < arity; pos++)
                for (size_t k = 0; k < POOL_N; k++) {
                    size_t b = (k + (size_t)pos) % 3;
                    sb_reset(sb);
                    sb_adds(sb, "SELECT ");
                    if (word)
                        sb_addf(sb, "%s(", fn);
                    for (int i = 0; i < arity; i++) {
                        if (i)
                            sb_adds(sb, word ? ", " : "");
                        if (!word && i)
                            sb_addf(sb, " %s ", fn);
                        sb_adds(sb, i == pos ? pool[k] : benign[b]);
                    }
                    sb_adds(sb, word ? ")" : "");
                    /* over () and over (ORDER BY): the two paths of lead/lag */
                    if (over)
                        sb_adds(sb, k & 1 ? " OVER (ORDER BY t.i)" : over);
                    sb_adds(sb, " FROM t");
                    run(sb->buf);
                }
    }
}

static void sweep(void)
{
    struct strbuf sb;
    sb_init(&sb, 0);
    sweep_calls(&sb, fns, nfns, 3, NULL);
    sweep_calls(&sb, window_fns, WINDOW_N, 3, " OVER ()");
    /* every frame bound of every kind with every pool value */
    static const char *const frames[] = {"ROWS", "RANGE", "GROUPS"};
    fprintf(stderr, "sweep frames\n");
    for (size_t f = 0; f < 3; f++)
        for (size_t k = 0; k < POOL_N; k++)
            for (int side = 0; side < 4; side++) {
                sb_reset(&sb);
                sb_addf(&sb, "SELECT sum(t.i) OVER (ORDER BY t.i %s BETWEEN ", frames[f]);
                if (side < 2)
                    sb_addf(&sb, "%s %s AND CURRENT ROW", pool[k],
                            side ? "FOLLOWING" : "PRECEDING");
                else
                    sb_addf(&sb, "CURRENT ROW AND %s %s", pool[k],
                            side == 3 ? "FOLLOWING" : "PRECEDING");
                sb_adds(&sb, ") FROM t");
                run(sb.buf);
            }
    /* every pool value to every type, and nested types 1, 50, 250 deep */
    fprintf(stderr, "sweep casts\n");
    for (size_t ty = 0; ty < TYPES_N; ty++)
        for (size_t k = 0; k < POOL_N; k++)
            for (int how = 0; how < 2; how++) {
                static const int depths[] = {1, 50, 250};
                int reps = types[ty][0] == '@' ? 16 * 3 : 1;
                for (int rep = 0; rep < reps; rep++) {
                    sb_reset(&sb);
                    sb_addf(&sb, "SELECT %s(%s AS ", how ? "TRY_CAST" : "CAST", pool[k]);
                    if (reps > 1)
                        add_deep_type(&sb, rep / 3, depths[rep % 3]);
                    else
                        sb_adds(&sb, types[ty]);
                    sb_adds(&sb, ") FROM t");
                    run(sb.buf);
                }
            }
    sb_release(&sb);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setup();
    const char *s = getenv("FUZZ_SQL_SWEEP");
    if (s && *s == '1') {
        sweep();
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    struct rd r = {data, size};
    int sh = take(&r);
    enum shape shape = sh < 0 ? S_SCALAR : (enum shape)(sh % S_N);
    struct strbuf sb;
    sb_init(&sb, 0);
    bool group = false;
    switch (shape) {
    case S_TABLE:
        shape_table(&sb, &r);
        break;
    case S_JSONB:
        shape_jsonb(&sb, &r);
        break;
    default:
        sb_adds(&sb, "SELECT ");
        if (shape == S_WINDOW)
            shape_window(&sb, &r);
        else if (shape == S_AGGREGATE)
            shape_aggregate(&sb, &r, &group);
        else if (shape == S_CAST)
            shape_cast(&sb, &r);
        else if (shape == S_DEEP)
            shape_deep(&sb, &r);
        else
            add_call(&sb, &r, 0);
        /* a second expression from what is left: more composition per run */
        if (r.n > 3 && shape != S_AGGREGATE) {
            sb_adds(&sb, ", ");
            add_call(&sb, &r, 1);
        }
        sb_adds(&sb, " FROM t");
        if (group)
            sb_adds(&sb, " GROUP BY t.b");
    }
    if (!sb.overflow)
        run_as(sb.buf, shape == S_JSONB);
    sb_release(&sb);
    return 0;
}
