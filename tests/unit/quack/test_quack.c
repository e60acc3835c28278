/* Quack's read-only rule (src/quack/quack.h): every statement of a query
 * text is looked at (split with PostgreSQL's lexer, so comments, strings and
 * parentheses hide nothing), reads and inspections pass, writes and
 * server-changing commands are refused. */
#include <string.h>

#include "quack/quack.h"
#include "testlib.h"

static bool allows(const char *q)
{
    return quack_read_only_allows(q, strlen(q));
}

TEST(reads_and_inspections_pass)
{
    static const char *const ok[] = {
        "SELECT * FROM trips",
        "  -- a comment\n  WITH x AS (SELECT 1) SELECT * FROM x",
        "FROM trips LIMIT 3",
        "DESCRIBE trips",
        "SHOW TABLES",
        "SUMMARIZE trips",
        "EXPLAIN SELECT 1",
        "SELECT 'DROP TABLE x; INSERT'",
        "(SELECT 1) UNION ALL (SELECT 2)",
        "VALUES (1)",
        "",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        CHECK(allows(ok[i]));
}

TEST(writes_and_commands_are_refused)
{
    static const char *const bad[] = {
        "CREATE TABLE x AS SELECT 1",
        "insert into trips values (1)",
        "UPDATE trips SET a = 1",
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
        "((INSERT INTO t VALUES (1)))",
        "SELECT 1; -- fine\n  truncate trips",
        "SELECT 'unterminated",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (allows(bad[i]))
            fprintf(stderr, "  allowed: %s\n", bad[i]);
        CHECK(!allows(bad[i]));
    }
}

int main(void)
{
    static const struct tl_case cases[] = {TEST_CASE(reads_and_inspections_pass),
                                           TEST_CASE(writes_and_commands_are_refused)};
    return tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
}
