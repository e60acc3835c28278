/* The SQL functions installed while the service starts (engine.h
 * eng_open_deferred, eng_functions_wait) and the SQL gate's wait for them
 * (sql.h sql_gate_set_wait): a user statement is checked only once the
 * bounded wrappers exist, so it can never reach an unbounded built-in in the
 * first milliseconds of a start. No timing: every check is about what exists
 * once a call returned. */
#include <duckdb.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "engine/engine.h"
#include "sql/sql.h"
#include "testlib.h"

static bool no_datasets(void *ctx, const char *name)
{
    (void)ctx;
    (void)name;
    return false;
}

/* The macros of the database's own main schema (the bounded wrappers). */
static long long own_macros(duckdb_connection con)
{
    duckdb_result r;
    long long n = -1;
    if (duckdb_query(con,
                     "SELECT count(DISTINCT function_name) FROM duckdb_functions() "
                     "WHERE database_name = 'memory' AND schema_name = 'main' "
                     "AND function_type = 'macro' AND function_name IN "
                     "('levenshtein', 'lpad', 'printf', 'format', 'to_char', 'overlay')",
                     &r) == DuckDBSuccess) {
        duckdb_data_chunk chunk = duckdb_fetch_chunk(r);
        if (chunk) {
            int64_t *v = duckdb_vector_get_data(duckdb_data_chunk_get_vector(chunk, 0));
            n = v[0];
            duckdb_destroy_data_chunk(&chunk);
        }
    }
    duckdb_destroy_result(&r);
    return n;
}

static int waits_called;

static enum vt_err refusing_wait(struct vt_error *err)
{
    waits_called++;
    return vt_error_set(err, VT_ERR_INTERNAL, "the SQL functions did not install");
}

TEST(without_a_deferred_install_the_wait_returns_at_once)
{
    struct vt_error err = {0};
    CHECK_EQ_INT(eng_functions_wait(&err), VT_ERR_OK);
}

TEST(the_gate_checks_nothing_until_the_wait_returns_and_returns_its_error)
{
    duckdb_database db;
    duckdb_connection con;
    CHECK(duckdb_open(NULL, &db) == DuckDBSuccess);
    CHECK(duckdb_connect(db, &con) == DuckDBSuccess);
    sql_gate_set_wait(refusing_wait);
    struct sql_checked out;
    struct vt_error err = {0};
    CHECK_EQ_INT(sql_gate_check(con, "SELECT 1", no_datasets, NULL, &out, &err),
                 VT_ERR_INTERNAL);
    CHECK_CONTAINS(err.msg, "did not install");
    CHECK_EQ_INT(waits_called, 1);
    sql_gate_set_wait(NULL);
    memset(&err, 0, sizeof err);
    CHECK_EQ_INT(sql_gate_check(con, "SELECT 1", no_datasets, NULL, &out, &err), VT_ERR_OK);
    sql_checked_release(&out);
    sql_thread_release();
    duckdb_disconnect(&con);
    duckdb_close(&db);
}

TEST(a_gated_statement_finds_the_bounded_wrappers_of_a_deferred_install)
{
    struct vt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    duckdb_database db = NULL;
    struct vt_error err = {0};
    CHECK_EQ_INT(eng_open_deferred(&cfg, &db, &err), VT_ERR_OK);
    if (!db)
        return;
    /* A second one while the first may still install is refused. */
    duckdb_database second = NULL;
    struct vt_error err2 = {0};
    enum vt_err again = eng_open_deferred(&cfg, &second, &err2);
    if (again == VT_ERR_OK)
        eng_close(&second);
    CHECK_EQ_INT(again, VT_ERR_INTERNAL);
    duckdb_connection con;
    CHECK_EQ_INT(eng_connect(db, &con, &err), VT_ERR_OK);
    sql_gate_set_wait(eng_functions_wait);
    struct sql_checked out;
    CHECK_EQ_INT(sql_gate_check(con, "SELECT levenshtein('kitten', 'sitting') AS d", no_datasets,
                                NULL, &out, &err),
                 VT_ERR_OK);
    sql_checked_release(&out);
    /* The check returned: every wrapper is there, and bounded. */
    CHECK_EQ_INT(own_macros(con), 6);
    duckdb_result r;
    CHECK(duckdb_query(con, "SELECT levenshtein(repeat('a', 100000), repeat('b', 100000))", &r) ==
          DuckDBError);
    CHECK_CONTAINS(duckdb_result_error(&r), "levenshtein");
    duckdb_destroy_result(&r);
    sql_gate_set_wait(NULL);
    sql_thread_release();
    duckdb_disconnect(&con);
    eng_close(&db);
    /* Closed (the install joined): the next deferred open is allowed. */
    CHECK_EQ_INT(eng_open_deferred(&cfg, &db, &err), VT_ERR_OK);
    CHECK_EQ_INT(eng_functions_wait(&err), VT_ERR_OK);
    eng_close(&db);
}

int main(void)
{
    static const struct tl_case cases[] = {
        TEST_CASE(without_a_deferred_install_the_wait_returns_at_once),
        TEST_CASE(the_gate_checks_nothing_until_the_wait_returns_and_returns_its_error),
        TEST_CASE(a_gated_statement_finds_the_bounded_wrappers_of_a_deferred_install),
    };
    return tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
}
