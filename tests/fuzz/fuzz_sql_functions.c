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
 * The input: two bytes pick the function, one its arity, then per argument
 * one byte picks from the hostile pool (or a nested call, a column, or the
 * following bytes as a string literal).
 *
 *   make fuzz && build-fuzz/fuzz_sql_functions -rss_limit_mb=2048 DIR
 *   FUZZ_SQL_SWEEP=1 build-fuzz/fuzz_sql_functions   # every function x every
 *       pool value at every position of arity 1-3, once (minutes), then exits
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
};
#define POOL_N (sizeof pool / sizeof pool[0])
#define MAX_DEPTH 3

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

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *watchdog(void *arg)
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

/* Gate, then run with a 2 s deadline. */
static void run(const char *sql)
{
    struct sql_checked chk;
    struct vt_error err = {0};
    enum vt_err rc = sql_gate_check(con, sql, is_dataset, NULL, &chk, &err);
    /* The gate caches its prepared statements per thread and connection;
     * dropped after each check so nothing of a run outlives it (cached,
     * they were held where LeakSanitizer cannot see them: reported as a
     * leak of the run that prepared them, as quack's were). */
    sql_gate_forget(con);
    if (getenv("FUZZ_SQL_PRINT"))
        fprintf(stderr, "%s: %s\n", rc == VT_ERR_OK ? "run" : "refused", sql);
    if (rc != VT_ERR_OK)
        return;
    sql_checked_release(&chk);
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

static void sweep(void)
{
    const char *benign[] = {"'a'", "1", "[1]"};
    struct strbuf sb;
    sb_init(&sb, 0);
    for (size_t f = 0; f < nfns; f++) {
        const char *fn = fns[f];
        bool word = (fn[0] >= 'a' && fn[0] <= 'z') || (fn[0] >= 'A' && fn[0] <= 'Z');
        fprintf(stderr, "sweep %zu/%zu %s\n", f + 1, nfns, fn);
        for (int arity = word ? 1 : 2; arity <= (word ? 3 : 2); arity++)
            for (int pos = 0; pos < arity; pos++)
                for (size_t k = 0; k < POOL_N; k++) {
                    size_t b = (k + (size_t)pos) % 3;
                    {
                        sb_reset(&sb);
                        sb_adds(&sb, "SELECT ");
                        if (word)
                            sb_addf(&sb, "%s(", fn);
                        for (int i = 0; i < arity; i++) {
                            if (i)
                                sb_adds(&sb, word ? ", " : "");
                            if (!word && i)
                                sb_addf(&sb, " %s ", fn);
                            sb_adds(&sb, i == pos ? pool[k] : benign[b]);
                        }
                        sb_adds(&sb, word ? ") FROM t" : " FROM t");
                        run(sb.buf);
                    }
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
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_adds(&sb, "SELECT ");
    add_call(&sb, &r, 0);
    /* a second expression from what is left: more composition per run */
    if (r.n > 3) {
        sb_adds(&sb, ", ");
        add_call(&sb, &r, 1);
    }
    sb_adds(&sb, " FROM t");
    if (!sb.overflow)
        run(sb.buf);
    sb_release(&sb);
    return 0;
}
