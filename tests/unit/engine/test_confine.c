/* The defence in depth under the SQL gate (eng_confine): once the database is
 * confined, no statement of any connection reads, globs or writes a file
 * outside the allowed directories, nothing can undo it, and what the
 * service itself does still works: lazy views over Parquet inside them
 * (source files, pinned links, storage generations), resident tables in
 * attached in-memory databases, temp views, COPY into the runtime directory,
 * spilling. Also times a lazy view's query with and without confinement. */
#include <duckdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "testlib.h"
#include "util/file.h"

static char root[] = "/tmp/vt-test-confine-XXXXXX";
static char inside[300], outside[300], runtime[300];

static bool run(duckdb_connection con, const char *sql, char *msg, size_t cap)
{
    duckdb_result r;
    bool ok = duckdb_query(con, sql, &r) == DuckDBSuccess;
    if (msg && cap)
        snprintf(msg, cap, "%s", ok ? "" : duckdb_result_error(&r));
    duckdb_destroy_result(&r);
    return ok;
}

static int64_t one(duckdb_connection con, const char *sql)
{
    duckdb_result r;
    int64_t v = -1;
    if (duckdb_query(con, sql, &r) == DuckDBSuccess)
        v = duckdb_value_int64(&r, 0, 0);
    duckdb_destroy_result(&r);
    return v;
}

static void fixture(void)
{
    snprintf(inside, sizeof inside, "%s/data", root);
    snprintf(outside, sizeof outside, "%s/data-other", root); /* shares a prefix */
    snprintf(runtime, sizeof runtime, "%s/run", root);
    mkdir(inside, 0755);
    mkdir(outside, 0755);
    mkdir(runtime, 0755);
    duckdb_database db;
    duckdb_connection con;
    duckdb_open(NULL, &db);
    duckdb_connect(db, &con);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "COPY (SELECT range AS id, range %% 10 AS k FROM range(200000)) TO '%s/t.parquet'",
             inside);
    run(con, sql, NULL, 0);
    snprintf(sql, sizeof sql, "COPY (SELECT 42 AS secret) TO '%s/s.parquet'", outside);
    run(con, sql, NULL, 0);
    duckdb_disconnect(&con);
    duckdb_close(&db);
    /* A link inside that points outside, like the generation pins (hard
     * links, or symlinks to /proc/self/fd/N) of lazy datasets. */
    char link_path[400], target[400];
    snprintf(link_path, sizeof link_path, "%s/pinned.parquet", runtime);
    snprintf(target, sizeof target, "%s/t.parquet", inside);
    symlink(target, link_path);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double lazy_ms(duckdb_connection con, int reps)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM v WHERE k = 3");
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < reps; i++)
        one(con, sql);
    clock_gettime(CLOCK_MONOTONIC, &b);
    return ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6) / reps;
}

TEST(confined_database_refuses_files_outside_and_serves_inside)
{
    duckdb_database db;
    CHECK(duckdb_open(NULL, &db) == DuckDBSuccess);
    duckdb_connection con;
    duckdb_connect(db, &con);
    char sql[1024], msg[1024];
    snprintf(sql, sizeof sql, "CREATE VIEW v AS SELECT * FROM read_parquet('%s/t.parquet')", inside);
    CHECK(run(con, sql, msg, sizeof msg));
    /* The same lazy view in a database left unconfined, to compare with. */
    duckdb_database open_db;
    duckdb_connection open_con;
    duckdb_open(NULL, &open_db);
    duckdb_connect(open_db, &open_con);
    CHECK(run(open_con, sql, msg, sizeof msg));
    /* One thread each: steadier timings on a shared machine. */
    run(con, "SET threads = 1", NULL, 0);
    run(open_con, "SET threads = 1", NULL, 0);

    struct strvec dirs = {0};
    strvec_push(&dirs, inside);
    strvec_push(&dirs, runtime);
    struct vt_error err = {0};
    CHECK_EQ_INT(eng_confine(db, &dirs, true, &err), VT_ERR_OK);
    strvec_free(&dirs);
    duckdb_connection user;
    duckdb_connect(db, &user); /* a connection made after: confined too */

    /* Interleaved rounds, medians: the machine is shared. */
    enum { ROUNDS = 9, REPS = 50 };
    double open_ms[ROUNDS], confined_ms[ROUNDS];
    lazy_ms(open_con, 10);
    lazy_ms(con, 10);
    for (int r = 0; r < ROUNDS; r++) {
        open_ms[r] = lazy_ms(open_con, REPS);
        confined_ms[r] = lazy_ms(con, REPS);
    }
    qsort(open_ms, ROUNDS, sizeof open_ms[0], cmp_double);
    qsort(confined_ms, ROUNDS, sizeof confined_ms[0], cmp_double);
    printf("  lazy view (200k rows, count with a filter), median of %d x %d: %.3f ms "
           "unconfined, %.3f ms confined\n", ROUNDS, REPS, open_ms[ROUNDS / 2],
           confined_ms[ROUNDS / 2]);
    duckdb_disconnect(&open_con);
    duckdb_close(&open_db);
    CHECK_EQ_INT(one(user, "SELECT count(*) FROM v WHERE k = 3"), 20000);

    /* Refused: reads, globs, writes and the table functions that touch files
     * outside, however the path is spelled; and undoing the confinement. */
    const char *refused[] = {
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM read_parquet('%s/s.parquet')",
        "SELECT * FROM read_parquet('%s/../data-other/s.parquet')",
        "SELECT * FROM parquet_metadata('%s/s.parquet')",
        "COPY (SELECT 1) TO '%s/x.csv'",
        "ATTACH '%s/db.duckdb' AS d",
        "SET enable_external_access = true",
        "SET allowed_directories = ['/']",
        "SET allowed_paths = ['/etc/passwd']",
        "INSTALL httpfs",
        /* lock_configuration: no setting changes, global or per connection */
        "SET lock_configuration = false",
        "SET threads = 2",
        "SET disabled_optimizers = 'late_materialization'",
        "SET TimeZone = 'America/New_York'",
        "RESET memory_limit",
        NULL,
    };
    for (size_t i = 0; refused[i]; i++) {
        snprintf(sql, sizeof sql, refused[i], strstr(refused[i], "../") ? inside : outside);
        if (run(user, sql, msg, sizeof msg)) {
            fprintf(stderr, "  not refused: %s\n", sql);
            CHECK(false);
        }
    }
    /* What the service does keeps working. */
    snprintf(sql, sizeof sql, "SELECT count(*) FROM read_parquet('%s/pinned.parquet')", runtime);
    CHECK_EQ_INT(one(user, sql), 200000);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM read_parquet('%s/*.parquet')", inside);
    CHECK_EQ_INT(one(user, sql), 200000);
    CHECK(run(con, "ATTACH ':memory:' AS g (COMPRESS)", msg, sizeof msg));
    CHECK(run(con, "CREATE TABLE g.data AS SELECT * FROM v", msg, sizeof msg));
    CHECK(run(con, "CHECKPOINT g", msg, sizeof msg));
    CHECK_EQ_INT(one(user, "SELECT count(*) FROM g.data"), 200000);
    CHECK(run(user, "CREATE TEMP VIEW mine AS SELECT * FROM g.data WHERE k = 1", msg, sizeof msg));
    CHECK_EQ_INT(one(user, "SELECT count(*) FROM mine"), 20000);
    snprintf(sql, sizeof sql, "COPY (SELECT * FROM g.data ORDER BY id) TO '%s/export.parquet'",
             runtime);
    CHECK(run(con, sql, msg, sizeof msg));
    snprintf(sql, sizeof sql, "SELECT count(*) FROM '%s/export.parquet'", runtime);
    CHECK_EQ_INT(one(user, sql), 200000);
    CHECK(run(con, "DETACH g", msg, sizeof msg));
    /* A service connection made after the lock still starts in UTC. */
    duckdb_connection late;
    CHECK_EQ_INT(eng_connect(db, &late, &err), VT_ERR_OK);
    CHECK_EQ_INT(one(late, "SELECT count(*) WHERE current_setting('TimeZone') = 'UTC'"), 1);
    duckdb_disconnect(&late);
    duckdb_disconnect(&user);
    duckdb_disconnect(&con);
    duckdb_close(&db);
}

int main(void)
{
    if (!mkdtemp(root))
        return 1;
    fixture();
    struct tl_case cases[] = {TEST_CASE(confined_database_refuses_files_outside_and_serves_inside)};
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    util_remove_tree(root);
    return rc;
}
