/*
 * vt-gate-bench: what the SQL gate (src/sql) costs per statement, in one
 * process, on DuckDB's CPU time per call (CLOCK_PROCESS_CPUTIME_ID, threads=1,
 * so a shared machine moves the figures little). For each statement of a
 * small catalogue (a point query, a join with a group by, CTEs with a window
 * and subqueries, a long IN list) it times, as medians over rounds of N calls:
 *   gate        sql_gate_check: DuckDB's parser through json_serialize_sql
 *               (its statement prepared once per connection), the JSON tree
 *               read by jansson, the fail-closed walk
 *   serialize   the json_serialize_sql call alone, prepared once (execute)
 *   prepare     duckdb_prepare of the statement itself (DuckDB's own parse,
 *               bind and plan, which every /sql request pays anyway)
 *   run         prepare + execute + fetch of the statement (what /sql then
 *               does), for scale
 * Usage: vt-gate-bench [CALLS] [ROUNDS]   (defaults 2000 7)
 */
#include <duckdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sql/sql.h"
#include "util/strbuf.h"

static double cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void must(duckdb_connection con, const char *sql)
{
    duckdb_result r;
    if (duckdb_query(con, sql, &r) != DuckDBSuccess) {
        fprintf(stderr, "vt-gate-bench: %s: %s\n", sql, duckdb_result_error(&r));
        exit(1);
    }
    duckdb_destroy_result(&r);
}

static bool is_dataset(void *ctx, const char *name)
{
    (void)ctx;
    return !strcmp(name, "trips") || !strcmp(name, "stations");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum what { GATE, SERIALIZE, PREPARE, RUN };

static void once(duckdb_connection con, enum what w, const char *sql)
{
    if (w == GATE) {
        struct sql_checked chk;
        struct vt_error err = {0};
        if (sql_gate_check(con, sql, is_dataset, NULL, &chk, &err) != VT_ERR_OK) {
            fprintf(stderr, "vt-gate-bench: refused: %s\n", err.msg);
            exit(1);
        }
        sql_checked_release(&chk);
        return;
    }
    static duckdb_prepared_statement ser;
    duckdb_prepared_statement ps;
    if (w == SERIALIZE) {
        if (!ser && duckdb_prepare(con, "SELECT json_serialize_sql(CAST($1 AS VARCHAR))", &ser))
            exit(1);
        ps = ser;
        duckdb_bind_varchar(ps, 1, sql);
    } else if (duckdb_prepare(con, sql, &ps) != DuckDBSuccess) {
        fprintf(stderr, "vt-gate-bench: %s\n", duckdb_prepare_error(ps));
        exit(1);
    }
    if (w != PREPARE) {
        duckdb_result r;
        if (duckdb_execute_prepared(ps, &r) != DuckDBSuccess) {
            fprintf(stderr, "vt-gate-bench: %s\n", duckdb_result_error(&r));
            exit(1);
        }
        duckdb_destroy_result(&r);
    }
    if (w != SERIALIZE)
        duckdb_destroy_prepare(&ps);
}

static double median_us(duckdb_connection con, enum what w, const char *sql, int calls,
                        int rounds)
{
    double *t = calloc((size_t)rounds, sizeof *t);
    for (int i = 0; i < calls / 10; i++)
        once(con, w, sql); /* warm-up */
    for (int r = 0; r < rounds; r++) {
        double t0 = cpu_us();
        for (int i = 0; i < calls; i++)
            once(con, w, sql);
        t[r] = (cpu_us() - t0) / calls;
    }
    qsort(t, (size_t)rounds, sizeof *t, cmp_double);
    double m = t[rounds / 2];
    free(t);
    return m;
}

int main(int argc, char **argv)
{
    int calls = argc > 1 ? atoi(argv[1]) : 2000;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    if (calls < 10 || rounds < 1) {
        fprintf(stderr, "usage: vt-gate-bench [CALLS>=10] [ROUNDS>=1]\n");
        return 2;
    }
    duckdb_database db;
    duckdb_connection con;
    duckdb_config cfg;
    duckdb_create_config(&cfg);
    duckdb_set_config(cfg, "threads", "1");
    if (duckdb_open_ext(NULL, &db, cfg, NULL) != DuckDBSuccess || duckdb_connect(db, &con))
        return 1;
    duckdb_destroy_config(&cfg);
    must(con, "CREATE TABLE trips AS SELECT range AS id, range % 50 AS station, "
              "(range % 97) * 1.5 AS fare, CASE WHEN range % 3 = 0 THEN 'card' ELSE 'cash' END "
              "AS payment, TIMESTAMP '2024-01-01' + INTERVAL (range) SECOND AS ts "
              "FROM range(1000)");
    must(con, "CREATE TABLE stations AS SELECT range AS id, 'st' || range AS name FROM range(50)");
    struct strbuf in;
    sb_init(&in, 0);
    sb_adds(&in, "SELECT id, fare FROM trips WHERE id IN (");
    for (int i = 0; i < 200; i++)
        sb_addf(&in, "%s%d", i ? ", " : "", i * 7);
    sb_adds(&in, ")");
    const struct {
        const char *name;
        const char *sql;
    } cases[] = {
        {"point", "SELECT * FROM trips WHERE id = 42"},
        {"join+group", "SELECT s.name, count(*) AS n, avg(t.fare) AS f FROM trips t JOIN stations "
                       "s ON t.station = s.id WHERE t.payment = 'card' GROUP BY s.name "
                       "ORDER BY n DESC LIMIT 10"},
        {"cte+window", "WITH daily AS (SELECT date_trunc('hour', ts) AS h, station, sum(fare) AS f "
                       "FROM trips GROUP BY ALL), ranked AS (SELECT *, row_number() OVER "
                       "(PARTITION BY h ORDER BY f DESC) AS r FROM daily) SELECT h, station, f "
                       "FROM ranked WHERE r <= 3 AND station IN (SELECT id FROM stations WHERE "
                       "name LIKE 'st1%') AND f > (SELECT avg(fare) FROM trips) ORDER BY h, r"},
        {"in-list-200", in.buf},
    };
    printf("%-12s %10s %10s %10s %10s %8s\n", "statement", "gate_us", "serial_us", "walk_us",
           "prepare_us", "run_us");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double gate = median_us(con, GATE, cases[i].sql, calls, rounds);
        double ser = median_us(con, SERIALIZE, cases[i].sql, calls, rounds);
        double prep = median_us(con, PREPARE, cases[i].sql, calls, rounds);
        double run = median_us(con, RUN, cases[i].sql, calls / 4 > 10 ? calls / 4 : 10, rounds);
        printf("%-12s %10.1f %10.1f %10.1f %10.1f %8.1f\n", cases[i].name, gate, ser,
               gate - ser, prep, run);
    }
    sb_release(&in);
    sql_thread_release();
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return 0;
}
