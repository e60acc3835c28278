/*
 * vt-bench-json: measures the JSON row writer against DuckDB's own to_json on
 * the same rows, in one process. Generates a mixed-type table (ints, doubles,
 * strings, dates, timestamps, decimals, booleans, NULLs), then times
 *   (a) SELECT * streamed chunk by chunk into json_rows (the service's path),
 *   (b) SELECT to_json(t) FROM t, every string appended to one body,
 *   (c) SELECT json_group_array(t) FROM t (DuckDB builds the body itself),
 * each including DuckDB's scan, best and median of N runs of process CPU
 * time; prints times and ratios.
 * Usage: vt-bench-json [ROWS] [RUNS] [THREADS] [SELECT-LIST]
 *        (defaults 100000 7 1 "*"; a select list such as "id, name, day"
 *        compares on those columns only)
 * With VT_BENCH_JSON_ENCODE=N set, fetches the rows once and then only runs
 * the encoder N times over the materialised chunks (for perf and callgrind:
 * no DuckDB scan in the profile), printing CPU ms per pass and the body's
 * size and FNV-1a hash (a change of output shows as a changed hash).
 * VT_BENCH_JSON_PARQUET=FILE takes the first ROWS rows of FILE as the table
 * instead (bench.py's data: line 6b's rows).
 */
#include <duckdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "encode/json_rows.h"
#include "util/strbuf.h"

/* Process CPU time, not wall time: the figures must not depend on what else
 * the (shared) machine runs. DuckDB runs with threads=1 by default here, as
 * each vitrine worker connection does, so its work is on this thread too. */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void must(duckdb_connection con, const char *sql)
{
    duckdb_result res;
    if (duckdb_query(con, sql, &res) != DuckDBSuccess) {
        fprintf(stderr, "vt-bench-json: %s: %s\n", sql, duckdb_result_error(&res));
        exit(1);
    }
    duckdb_destroy_result(&res);
}

/* Streams a query; returns its result (caller destroys) or exits. */
static duckdb_result stream(duckdb_connection con, const char *sql)
{
    duckdb_prepared_statement st;
    duckdb_result res;
    if (duckdb_prepare(con, sql, &st) != DuckDBSuccess) {
        fprintf(stderr, "vt-bench-json: prepare: %s\n", duckdb_prepare_error(st));
        exit(1);
    }
    if (duckdb_execute_prepared_streaming(st, &res) != DuckDBSuccess) {
        fprintf(stderr, "vt-bench-json: %s\n", duckdb_result_error(&res));
        exit(1);
    }
    duckdb_destroy_prepare(&st);
    return res;
}

/* (a) our writer; *enc_ms gets the time spent inside json_rows only. */
static char q_ours[1024], q_to_json[1024], q_group[1024];

static double run_ours(duckdb_connection con, struct strbuf *body, double *enc_ms)
{
    double t0 = now_ms(), inside = 0;
    sb_reset(body);
    duckdb_result res = stream(con, q_ours);
    char err[256];
    struct json_rows *enc = json_rows_create_for_result(&res, err, sizeof err);
    if (!enc) {
        fprintf(stderr, "vt-bench-json: %s\n", err);
        exit(1);
    }
    sb_adds(body, "{\"data\":[");
    duckdb_data_chunk ch;
    while ((ch = duckdb_fetch_chunk(res))) {
        double a = now_ms();
        if (json_rows_encode_chunk(enc, ch, body) < 0) {
            fprintf(stderr, "vt-bench-json: encode failed\n");
            exit(1);
        }
        inside += now_ms() - a;
        duckdb_destroy_data_chunk(&ch);
    }
    sb_adds(body, "],\"page\":1,\"page_size\":100000}");
    json_rows_destroy(enc);
    duckdb_destroy_result(&res);
    *enc_ms = inside;
    return now_ms() - t0;
}

/* (b) to_json per row, strings copied into one body the same shape */
static double run_to_json(duckdb_connection con, struct strbuf *body)
{
    double t0 = now_ms();
    sb_reset(body);
    duckdb_result res = stream(con, q_to_json);
    sb_adds(body, "{\"data\":[");
    duckdb_data_chunk ch;
    bool first = true;
    while ((ch = duckdb_fetch_chunk(res))) {
        idx_t n = duckdb_data_chunk_get_size(ch);
        duckdb_vector v = duckdb_data_chunk_get_vector(ch, 0);
        duckdb_string_t *d = duckdb_vector_get_data(v);
        uint64_t *m = duckdb_vector_get_validity(v);
        for (idx_t i = 0; i < n; i++) {
            if (!first)
                sb_addc(body, ',');
            first = false;
            if (m && !duckdb_validity_row_is_valid(m, i)) {
                sb_add(body, "null", 4);
                continue;
            }
            sb_add(body, duckdb_string_t_data(&d[i]), duckdb_string_t_length(d[i]));
        }
        duckdb_destroy_data_chunk(&ch);
    }
    sb_adds(body, "],\"page\":1,\"page_size\":100000}");
    duckdb_destroy_result(&res);
    return now_ms() - t0;
}

/* (c) json_group_array: DuckDB returns the whole array as one value */
static double run_group_array(duckdb_connection con, struct strbuf *body)
{
    double t0 = now_ms();
    sb_reset(body);
    duckdb_result res = stream(con, q_group);
    duckdb_data_chunk ch;
    sb_adds(body, "{\"data\":");
    while ((ch = duckdb_fetch_chunk(res))) {
        duckdb_string_t *d = duckdb_vector_get_data(duckdb_data_chunk_get_vector(ch, 0));
        if (duckdb_data_chunk_get_size(ch))
            sb_add(body, duckdb_string_t_data(&d[0]), duckdb_string_t_length(d[0]));
        duckdb_destroy_data_chunk(&ch);
    }
    sb_adds(body, ",\"page\":1,\"page_size\":100000}");
    duckdb_destroy_result(&res);
    return now_ms() - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Encoder only: all chunks fetched first, then `passes` encodes of them. */
static int encode_only(duckdb_connection con, int passes)
{
    duckdb_result res = stream(con, q_ours);
    size_t n = 0, cap = 64;
    duckdb_data_chunk *chunks = malloc(cap * sizeof *chunks), ch;
    while (chunks && (ch = duckdb_fetch_chunk(res))) {
        if (n == cap) {
            duckdb_data_chunk *p = realloc(chunks, 2 * cap * sizeof *chunks);
            if (!p)
                return 1;
            chunks = p;
            cap *= 2;
        }
        chunks[n++] = ch;
    }
    if (!chunks)
        return 1;
    char err[256];
    struct json_rows *enc = json_rows_create_for_result(&res, err, sizeof err);
    if (!enc) {
        fprintf(stderr, "vt-bench-json: %s\n", err);
        return 1;
    }
    struct strbuf body;
    sb_init(&body, 0);
    double best = 1e30;
    for (int p = 0; p < passes; p++) {
        sb_reset(&body);
        json_rows_restart(enc);
        double t0 = now_ms();
        for (size_t i = 0; i < n; i++)
            if (json_rows_encode_chunk(enc, chunks[i], &body) < 0) {
                fprintf(stderr, "vt-bench-json: encode failed\n");
                return 1;
            }
        double t = now_ms() - t0;
        if (t < best)
            best = t;
    }
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < body.len; i++)
        h = (h ^ (unsigned char)body.buf[i]) * 1099511628211ull;
    printf("encode only: %zu chunks, %d passes, best %.2f ms, body %zu bytes, fnv1a %016llx\n", n,
           passes, best, body.len, (unsigned long long)h);
    for (size_t i = 0; i < n; i++)
        duckdb_destroy_data_chunk(&chunks[i]);
    free(chunks);
    sb_release(&body);
    json_rows_destroy(enc);
    duckdb_destroy_result(&res);
    return 0;
}

int main(int argc, char **argv)
{
    long rows = argc > 1 ? atol(argv[1]) : 100000;
    int runs = argc > 2 ? atoi(argv[2]) : 7;
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    const char *cols = argc > 4 ? argv[4] : "*";
    snprintf(q_ours, sizeof q_ours, "SELECT %s FROM t", cols);
    snprintf(q_to_json, sizeof q_to_json, "SELECT to_json(x) FROM (SELECT %s FROM t) x", cols);
    snprintf(q_group, sizeof q_group, "SELECT json_group_array(x) FROM (SELECT %s FROM t) x", cols);
    if (rows <= 0 || runs <= 0 || runs > 100 || threads <= 0) {
        fprintf(stderr, "usage: vt-bench-json [ROWS] [RUNS] [THREADS]\n");
        return 2;
    }
    duckdb_database db;
    duckdb_connection con;
    if (duckdb_open(NULL, &db) != DuckDBSuccess || duckdb_connect(db, &con) != DuckDBSuccess)
        return 1;
    char sql[2048];
    snprintf(sql, sizeof sql, "SET threads = %d", threads);
    must(con, sql);
    must(con, "SET TimeZone = 'UTC'");
    snprintf(sql, sizeof sql,
             "CREATE TABLE t AS SELECT "
             "i AS id, "
             "CASE WHEN i %% 10 = 0 THEN NULL ELSE (hash(i) %% 1000000)::INTEGER - 500000 END AS qty, "
             "(hash(i * 3) %% 100000000)::DOUBLE / 997.0 AS price, "
             "CASE WHEN i %% 17 = 0 THEN NULL ELSE sin(i) * 1e6 END AS score, "
             "CASE WHEN i %% 7 = 0 THEN NULL WHEN i %% 50 = 1 THEN 'say \"hi\" ' || i "
             "ELSE 'customer-' || (hash(i) %% 100000)::VARCHAR || ' name' END AS name, "
             "md5(i::VARCHAR) AS tag, "
             "DATE '2000-01-01' + (hash(i * 5) %% 9000)::INTEGER AS day, "
             "TIMESTAMP '2020-01-01' + INTERVAL ((hash(i * 7) %% 100000000000)::BIGINT) MICROSECOND AS at, "
             "((hash(i * 11) %% 100000000)::BIGINT / 100.0)::DECIMAL(12,2) AS amount, "
             "i %% 3 = 0 AS flag "
             "FROM range(%ld) r(i)",
             rows);
    const char *pq = getenv("VT_BENCH_JSON_PARQUET");
    if (pq && *pq && !strchr(pq, '\'')) /* bench.py's data instead (line 6b's rows) */
        snprintf(sql, sizeof sql, "CREATE TABLE t AS SELECT * FROM read_parquet('%s') LIMIT %ld", pq,
                 rows);
    must(con, sql);
    const char *only = getenv("VT_BENCH_JSON_ENCODE");
    if (only && atoi(only) > 0) {
        int rc = encode_only(con, atoi(only));
        duckdb_disconnect(&con);
        duckdb_close(&db);
        return rc;
    }

    struct strbuf a, b, c;
    sb_init(&a, 0);
    sb_init(&b, 0);
    sb_init(&c, 0);
    double ta[100], te[100], tb[100], tc[100];
    for (int r = 0; r < runs; r++) { /* interleaved so drift hits all alike */
        ta[r] = run_ours(con, &a, &te[r]);
        tb[r] = run_to_json(con, &b);
        tc[r] = run_group_array(con, &c);
    }
    qsort(ta, runs, sizeof *ta, cmp_double);
    qsort(te, runs, sizeof *te, cmp_double);
    qsort(tb, runs, sizeof *tb, cmp_double);
    qsort(tc, runs, sizeof *tc, cmp_double);
    int med = runs / 2;
    printf("rows %ld, columns %s, DuckDB threads=%d, %d runs (CPU ms, best / median)\n", rows, cols, threads,
           runs);
    printf("  (a) vitrine json_rows, SELECT streamed   : %8.2f / %8.2f ms  body %zu bytes"
           "  (encoder alone %.2f / %.2f ms)\n",
           ta[0], ta[med], a.len, te[0], te[med]);
    printf("  (b) DuckDB to_json(row), streamed        : %8.2f / %8.2f ms  body %zu bytes\n", tb[0], tb[med],
           b.len);
    printf("  (c) DuckDB json_group_array(row)         : %8.2f / %8.2f ms  body %zu bytes\n", tc[0], tc[med],
           c.len);
    printf("  ratio to_json / ours: %.2fx (best) %.2fx (median); json_group_array / ours: %.2fx (best)\n",
           tb[0] / ta[0], tb[med] / ta[med], tc[0] / ta[0]);
    sb_release(&a);
    sb_release(&b);
    sb_release(&c);
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return 0;
}
