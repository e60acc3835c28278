/* Quack's read-only rule (src/quack/quack.h) is the SQL gate, run through
 * the execution layer as for /sql (issue 21 item 10): on a live catalog, one
 * read-only SELECT over the datasets passes; writes, commands, several
 * statements, files and functions off the allowlist are refused, whatever
 * their first keyword (the rule used to look at that alone). Also through
 * DuckDB: the rule registered as the scalar function quack calls. */
#include <string.h>

#include "quack/quack.h"
#include "testcat.h"
#include "testlib.h"

static struct testcat tc;
static struct quack_rule rule;

static bool allows(const char *q)
{
    return quack_read_only_allows(&rule, q, strlen(q));
}

struct verdicts {
    const char *const *queries;
    size_t n;
    bool *out;
};

static void judge(void *arg)
{
    struct verdicts *v = arg;
    for (size_t i = 0; i < v->n; i++)
        v->out[i] = allows(v->queries[i]);
}

/* The rule on a query worker, as anything else that checks SQL runs. */
static void check_all(const char *const *queries, size_t n, bool want)
{
    bool out[64];
    struct verdicts v = {queries, n, out};
    testcat_on_worker(&tc, judge, &v);
    for (size_t i = 0; i < n; i++) {
        if (out[i] != want)
            fprintf(stderr, "  %s: %s\n", want ? "refused" : "allowed", queries[i]);
        CHECK(out[i] == want);
    }
}

TEST(reads_of_the_datasets_pass)
{
    static const char *const ok[] = {
        "SELECT * FROM trips",
        "  -- a comment\n  WITH x AS (SELECT 1 AS a) SELECT * FROM x",
        "FROM trips LIMIT 3",
        "SELECT 'DROP TABLE x; INSERT'",
        "(SELECT 1) UNION ALL (SELECT 2)",
        "VALUES (1)",
        "SELECT payment, count(*) FROM trips GROUP BY payment",
        "SELECT * FROM trips t JOIN stations s ON t.station = s.id",
    };
    check_all(ok, sizeof ok / sizeof ok[0], true);
}

TEST(writes_commands_and_escapes_are_refused)
{
    static const char *const bad[] = {
        "CREATE TABLE x AS SELECT 1",
        "insert into trips values (1)",
        "UPDATE trips SET fare = 1",
        "DELETE FROM trips",
        "COPY trips TO '/tmp/x.csv'",
        "DROP VIEW trips",
        "ALTER TABLE trips ADD COLUMN z INT",
        "LOAD httpfs",
        "INSTALL httpfs",
        "ATTACH '/tmp/x.db' AS x",
        "SET enable_external_access = true",
        "CALL quack_stop('quack:localhost')",
        "PRAGMA enable_profiling",
        "EXPORT DATABASE '/tmp/x'",
        "SELECT 1; DROP TABLE trips",
        "/* hidden */ DROP TABLE trips",
        "SELECT 1; -- fine\n  truncate trips",
        "SELECT 'unterminated",
        "",
        /* what a first-keyword rule let through */
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM duckdb_settings()",
        "SELECT getenv('HOME')",
        "SELECT * FROM no_such_table",
        "WITH x AS (SELECT 1) SELECT * FROM x, glob('/*')",
        "SELECT current_setting('access_mode')",
    };
    check_all(bad, sizeof bad / sizeof bad[0], false);
}

static void through_duckdb(void *arg)
{
    bool *ok = arg;
    duckdb_connection con;
    ok[0] = ok[1] = ok[2] = false;
    if (duckdb_connect(tc.db, &con) != DuckDBSuccess)
        return;
    if (quack_rule_register(&rule, con)) {
        duckdb_result r;
        if (duckdb_query(con,
                         "SELECT vt_quack_read_only('s', 'SELECT * FROM trips'), "
                         "vt_quack_read_only('s', 'DROP TABLE trips'), "
                         "vt_quack_read_only('s', NULL)",
                         &r) == DuckDBSuccess) {
            ok[0] = duckdb_value_boolean(&r, 0, 0);
            ok[1] = !duckdb_value_boolean(&r, 1, 0);
            ok[2] = !duckdb_value_boolean(&r, 2, 0);
        } else {
            fprintf(stderr, "  %s\n", duckdb_result_error(&r));
        }
        duckdb_destroy_result(&r);
    }
    duckdb_disconnect(&con);
}

TEST(the_rule_is_the_function_quack_calls)
{
    bool ok[3];
    testcat_on_worker(&tc, through_duckdb, ok);
    CHECK(ok[0]);
    CHECK(ok[1]);
    CHECK(ok[2]);
}

int main(void)
{
    static const char *const files[] = {
        "trips", "SELECT range AS id, range % 7 AS station, 'card' AS payment, "
                 "range * 1.5 AS fare FROM range(100)",
        "stations", "SELECT range AS id, 'st' || range AS name FROM range(7)",
        NULL,
    };
    if (testcat_open(&tc, files,
                     "[[dataset]]\nname = \"trips\"\nsource.kind = \"parquet\"\n"
                     "source.location = \"%s/trips.parquet\"\n"
                     "[[dataset]]\nname = \"stations\"\nsource.kind = \"parquet\"\n"
                     "source.location = \"%s/stations.parquet\"\n") != 0) {
        fprintf(stderr, "cannot open the test catalog\n");
        return 1;
    }
    struct vt_error err = {0};
    if (quack_rule_init(&rule, tc.db, tc.cat, &err) != VT_ERR_OK) {
        fprintf(stderr, "%s\n", vt_error_message(&err));
        return 1;
    }
    static const struct tl_case cases[] = {TEST_CASE(reads_of_the_datasets_pass),
                                           TEST_CASE(writes_commands_and_escapes_are_refused),
                                           TEST_CASE(the_rule_is_the_function_quack_calls)};
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    quack_rule_release(&rule);
    testcat_close(&tc);
    return rc;
}
