/*
 * vt-sql: runs SQL with the same DuckDB library vitrine uses. A development and
 * test tool (sample data, test fixtures, differential checks), not part of the
 * service. Usage:
 *   vt-sql [-d DBFILE] SQL...
 * Each argument is run in order; the rows of the last one are printed, one JSON
 * array per line, every value as DuckDB's text form (NULL as null).
 */
#include <duckdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/strbuf.h"

/* Prints every row as a JSON array of text values (the deprecated value API is
 * fine for a tool: clarity over speed). */
static void print_rows(duckdb_result *res)
{
    idx_t ncol = duckdb_column_count(res);
    idx_t nrow = duckdb_row_count(res);
    struct strbuf line;
    sb_init(&line, 0);
    for (idx_t r = 0; r < nrow; r++) {
        sb_reset(&line);
        sb_addc(&line, '[');
        for (idx_t c = 0; c < ncol; c++) {
            if (c)
                sb_addc(&line, ',');
            if (duckdb_value_is_null(res, c, r)) {
                sb_adds(&line, "null");
            } else {
                char *v = duckdb_value_varchar(res, c, r);
                if (v)
                    sb_add_json_string(&line, v, strlen(v));
                else
                    sb_adds(&line, "\"<nested>\"");
                duckdb_free(v);
            }
        }
        sb_addc(&line, ']');
        puts(line.buf);
    }
    sb_release(&line);
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "-d") == 0) {
        path = argv[2];
        first = 3;
    }
    if (first >= argc) {
        fprintf(stderr, "usage: vt-sql [-d DBFILE] SQL...\n");
        return 2;
    }
    duckdb_database db;
    duckdb_connection con;
    if (duckdb_open(path, &db) != DuckDBSuccess || duckdb_connect(db, &con) != DuckDBSuccess) {
        fprintf(stderr, "vt-sql: cannot open database\n");
        return 1;
    }
    int rc = 0;
    for (int i = first; i < argc && rc == 0; i++) {
        duckdb_result res;
        if (i == argc - 1) {
            /* Print nested values too: casting every column to VARCHAR gives
             * DuckDB's text form (the value API has none for nested types).
             * Statements that are not queries fall back to running as is. */
            struct strbuf wrapped;
            sb_init(&wrapped, 0);
            sb_addf(&wrapped, "SELECT COLUMNS(*)::VARCHAR FROM (%s)", argv[i]);
            bool ok = duckdb_query(con, wrapped.buf, &res) == DuckDBSuccess;
            sb_release(&wrapped);
            if (ok) {
                print_rows(&res);
                duckdb_destroy_result(&res);
                continue;
            }
            duckdb_destroy_result(&res);
        }
        if (duckdb_query(con, argv[i], &res) != DuckDBSuccess) {
            fprintf(stderr, "vt-sql: %s\n", duckdb_result_error(&res));
            rc = 1;
        } else if (i == argc - 1) {
            print_rows(&res);
        }
        duckdb_destroy_result(&res);
    }
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return rc;
}
