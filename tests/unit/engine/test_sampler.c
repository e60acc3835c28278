/* The DuckDB memory sampler (engine.c): its one prepared statement runs
 * again and again, each run's figures replacing the last (a statement that
 * answered only once would keep the first sample for ever). */
#include <duckdb.h>
#include <stdio.h>
#include <time.h>

#include "engine/engine.h"
#include "testlib.h"
#include "util/timeutil.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits (5 s at most) for a sample above `above`; returns it, or -1. */
static int64_t sample_above(struct eng_sampler *s, int64_t above)
{
    int64_t deadline = time_mono_ms() + 5000;
    while (time_mono_ms() < deadline) {
        int64_t mem = 0, tmp = 0;
        if (eng_sampler_read(s, &mem, &tmp) && mem > above)
            return mem;
        sleep_ms(5);
    }
    return -1;
}

TEST(samples_follow_duckdbs_memory)
{
    duckdb_database db;
    duckdb_connection con;
    CHECK(duckdb_open(NULL, &db) == DuckDBSuccess);
    CHECK(duckdb_connect(db, &con) == DuckDBSuccess);
    duckdb_result res;
    CHECK(duckdb_query(con, "CREATE TABLE a AS SELECT range AS x FROM range(100000)", &res) ==
          DuckDBSuccess);
    duckdb_destroy_result(&res);
    struct eng_sampler *s = eng_sampler_start(db, 10);
    CHECK(s != NULL);
    int64_t first = sample_above(s, 0);
    CHECK(first > 0);
    /* ~80 MB more in the in-memory database: a later run of the same
     * statement sees it. */
    CHECK(duckdb_query(con, "CREATE TABLE b AS SELECT range AS x FROM range(10000000)", &res) ==
          DuckDBSuccess);
    duckdb_destroy_result(&res);
    int64_t later = sample_above(s, first + 16 * 1024 * 1024);
    if (later < 0)
        fprintf(stderr, "first sample %lld, none later above it by 16 MB\n", (long long)first);
    CHECK(later > first);
    eng_sampler_stop(s);
    duckdb_disconnect(&con);
    duckdb_close(&db);
}

RUN_TESTS(TEST_CASE(samples_follow_duckdbs_memory))
