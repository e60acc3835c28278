/* eng_type_text (src/engine/types.c) writes a type's text exactly as
 * DESCRIBE does, for every type it claims, and declines the others (nested,
 * ENUM, aliased), which the build then asks DESCRIBE for. Each expression's
 * type comes from DuckDB (a zero-row SELECT), its text from DESCRIBE of the
 * same SELECT. */
#include <duckdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "testlib.h"

static duckdb_database db;
static duckdb_connection con;

/* Column 0's text by eng_type_text (or "" when it declines) and by DESCRIBE. */
static void texts_of(const char *expr, char *ours, size_t cap, char *theirs, size_t tcap,
                     bool *claimed)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s AS c LIMIT 0", expr);
    duckdb_result r;
    ours[0] = theirs[0] = '\0';
    *claimed = false;
    if (duckdb_query(con, sql, &r) != DuckDBSuccess) {
        fprintf(stderr, "  %s: %s\n", sql, duckdb_result_error(&r));
        duckdb_destroy_result(&r);
        return;
    }
    duckdb_logical_type lt = duckdb_column_logical_type(&r, 0);
    *claimed = eng_type_text(lt, ours, cap);
    if (!*claimed)
        ours[0] = '\0';
    duckdb_destroy_logical_type(&lt);
    duckdb_destroy_result(&r);
    snprintf(sql, sizeof sql, "SELECT column_type FROM (DESCRIBE SELECT %s AS c)", expr);
    if (duckdb_query(con, sql, &r) != DuckDBSuccess) {
        duckdb_destroy_result(&r);
        return;
    }
    duckdb_data_chunk ch = duckdb_fetch_chunk(r);
    if (ch && duckdb_data_chunk_get_size(ch) == 1) {
        duckdb_string_t *s = duckdb_vector_get_data(duckdb_data_chunk_get_vector(ch, 0));
        snprintf(theirs, tcap, "%.*s", (int)duckdb_string_t_length(s[0]),
                 duckdb_string_t_data(&s[0]));
    }
    if (ch)
        duckdb_destroy_data_chunk(&ch);
    duckdb_destroy_result(&r);
}

TEST(every_type_it_names_is_named_as_describe_names_it)
{
    static const char *const exprs[] = {
        "true", "1::TINYINT", "1::SMALLINT", "1::INTEGER", "1::BIGINT", "1::HUGEINT",
        "1::UTINYINT", "1::USMALLINT", "1::UINTEGER", "1::UBIGINT", "1::UHUGEINT",
        "1::FLOAT", "1::DOUBLE", "DATE '2024-01-01'", "TIME '01:02:03'",
        "'01:02:03+01'::TIMETZ", "TIMESTAMP '2024-01-01'", "'2024-01-01'::TIMESTAMPTZ",
        "'2024-01-01'::TIMESTAMP_S", "'2024-01-01'::TIMESTAMP_MS", "'2024-01-01'::TIMESTAMP_NS",
        "INTERVAL 1 DAY", "'x'", "'x'::BLOB", "uuid()", "1.5::DECIMAL(4,1)",
        "1::DECIMAL(18,3)", "1::DECIMAL(38,10)", "1::DECIMAL(9,0)", "1::DECIMAL",
        "1.25",
    };
    for (size_t i = 0; i < sizeof exprs / sizeof exprs[0]; i++) {
        char ours[128], theirs[128];
        bool claimed;
        texts_of(exprs[i], ours, sizeof ours, theirs, sizeof theirs, &claimed);
        if (!claimed || strcmp(ours, theirs) != 0)
            fprintf(stderr, "  %s: ours \"%s\", DESCRIBE \"%s\"\n", exprs[i], ours, theirs);
        CHECK(claimed);
        CHECK_EQ_STR(ours, theirs);
    }
}

TEST(nested_enum_and_aliased_types_are_left_to_describe)
{
    static const char *const exprs[] = {
        "[1, 2]", "{'a': 1}", "MAP {'a': 1}", "[1, 2]::INTEGER[2]",
        "'a'::ENUM('a', 'b')", "union_value(k := 1)", "'1'::BIT",
    };
    for (size_t i = 0; i < sizeof exprs / sizeof exprs[0]; i++) {
        char ours[128], theirs[128];
        bool claimed;
        texts_of(exprs[i], ours, sizeof ours, theirs, sizeof theirs, &claimed);
        if (claimed)
            fprintf(stderr, "  %s: claimed as \"%s\" (DESCRIBE \"%s\")\n", exprs[i], ours,
                    theirs);
        CHECK(!claimed);
    }
    /* a user type over an integer: declined, or named as DESCRIBE names it */
    duckdb_result r;
    CHECK(duckdb_query(con, "CREATE TYPE vt_small AS INTEGER", &r) == DuckDBSuccess);
    duckdb_destroy_result(&r);
    char ours[128], theirs[128];
    bool claimed;
    texts_of("1::vt_small", ours, sizeof ours, theirs, sizeof theirs, &claimed);
    CHECK(!claimed || strcmp(ours, theirs) == 0);
    /* a buffer too small for the text is a decline, not a cut name */
    CHECK(duckdb_query(con, "SELECT 1::DECIMAL(18,3) AS c LIMIT 0", &r) == DuckDBSuccess);
    duckdb_logical_type lt = duckdb_column_logical_type(&r, 0);
    char tiny[8];
    CHECK(!eng_type_text(lt, tiny, sizeof tiny));
    duckdb_destroy_logical_type(&lt);
    duckdb_destroy_result(&r);
}

int main(void)
{
    if (duckdb_open(NULL, &db) != DuckDBSuccess || duckdb_connect(db, &con) != DuckDBSuccess) {
        fprintf(stderr, "cannot open DuckDB\n");
        return 1;
    }
    static const struct tl_case cases[] = {
        TEST_CASE(every_type_it_names_is_named_as_describe_names_it),
        TEST_CASE(nested_enum_and_aliased_types_are_left_to_describe),
    };
    int rc = tl_run(cases, sizeof cases / sizeof cases[0], __FILE__);
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return rc;
}
