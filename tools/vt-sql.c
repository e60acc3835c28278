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

/* Runs `sql` and prints its rows (nested values too: casting every column to
 * VARCHAR gives DuckDB's text form, which the value API has none of;
 * statements that are not queries fall back to running as is). On failure
 * returns false with the result holding DuckDB's error; else destroys it. */
static bool run_printed(duckdb_connection con, const char *sql, duckdb_result *res)
{
    struct strbuf wrapped;
    sb_init(&wrapped, 0);
    sb_addf(&wrapped, "SELECT COLUMNS(*)::VARCHAR FROM (%s)", sql);
    bool ok = duckdb_query(con, wrapped.buf, res) == DuckDBSuccess;
    sb_release(&wrapped);
    if (!ok) {
        duckdb_destroy_result(res);
        ok = duckdb_query(con, sql, res) == DuckDBSuccess;
        if (!ok)
            return false;
    }
    print_rows(res);
    duckdb_destroy_result(res);
    return true;
}

/* --batch: the NUL-separated statements of standard input, each printed and
 * ended by a line that says how it went. */
static int run_batch(duckdb_connection con)
{
    struct strbuf in, text, line;
    sb_init(&in, 0);
    sb_init(&text, 0);
    sb_init(&line, 0);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
        sb_add(&in, buf, n);
    if (in.overflow) {
        fprintf(stderr, "vt-sql: out of memory\n");
        return 1;
    }
    for (size_t at = 0; at < in.len;) {
        const char *sql = in.buf + at;
        at += strlen(sql) + 1;
        duckdb_result res;
        if (run_printed(con, sql, &res)) {
            puts("{\"end\":true}");
            continue;
        }
        /* The message a failed run without --batch writes to stderr. */
        const char *msg = duckdb_result_error(&res);
        sb_reset(&text);
        sb_addf(&text, "vt-sql: %s", msg ? msg : "");
        sb_reset(&line);
        sb_adds(&line, "{\"error\":");
        sb_add_json_string(&line, text.buf, text.len);
        sb_addc(&line, '}');
        duckdb_destroy_result(&res);
        puts(line.buf);
    }
    sb_release(&line);
    sb_release(&text);
    sb_release(&in);
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "-d") == 0) {
        path = argv[2];
        first = 3;
    }
    bool batch = first < argc && strcmp(argv[first], "--batch") == 0;
    if (batch)
        first++;
    if (first >= argc && !batch) {
        fprintf(stderr, "usage: vt-sql [-d DBFILE] SQL...\n"
                        "       vt-sql [-d DBFILE] --batch [SQL...] < NUL-SEPARATED-STATEMENTS\n");
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
        if (i == argc - 1 && !batch) {
            if (run_printed(con, argv[i], &res))
                continue;
        } else if (duckdb_query(con, argv[i], &res) == DuckDBSuccess) {
            duckdb_destroy_result(&res);
            continue;
        }
        fprintf(stderr, "vt-sql: %s\n", duckdb_result_error(&res));
        duckdb_destroy_result(&res);
        rc = 1;
    }
    if (rc == 0 && batch)
        rc = run_batch(con);
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return rc;
}
