/*
 * libFuzzer target for the shared storage's documents (src/cluster/store.c):
 * a generation's manifest and the CURRENT pointer, which readers parse from
 * storage they do not trust. Checked besides the sanitizers: a parsed
 * manifest or CURRENT writes back to JSON that parses to the same fields,
 * and every cast type a manifest is allowed to carry stays a type when the
 * reader puts it into its import SQL (SELECT * REPLACE (CAST(c AS <type>)
 * AS c) ...): DuckDB prepares that statement with exactly one column, or
 * refuses it; a second column means the type closed the CAST and added SQL.
 *
 *   make fuzz && build-fuzz/fuzz_cluster_store -dict=tests/fuzz/cluster_store.dict DIR
 */
#include <duckdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"

static duckdb_database db; /* static: reachable at exit, not a leak */
static duckdb_connection con;

static void check_cast_type(const char *type)
{
    if (!con) {
        if (duckdb_open(NULL, &db) != DuckDBSuccess || duckdb_connect(db, &con) != DuckDBSuccess)
            abort();
    }
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT * REPLACE (CAST(\"c\" AS %s) AS \"c\") FROM (SELECT 1 AS c)",
             type);
    duckdb_prepared_statement st;
    if (duckdb_prepare(con, sql, &st) == DuckDBSuccess &&
        duckdb_prepared_statement_column_count(st) != 1) {
        fprintf(stderr, "cast type added SQL: %s\n", sql);
        abort();
    }
    duckdb_destroy_prepare(&st);
}

static void manifest(const uint8_t *data, size_t size)
{
    struct cluster_manifest m;
    struct vt_error err = {0};
    if (cluster_manifest_parse((const char *)data, size, &m, &err) != VT_ERR_OK) {
        if (!err.msg[0])
            abort();
        return;
    }
    for (size_t i = 0; i < m.cast_types.len; i++)
        check_cast_type(m.cast_types.items[i]);
    char *text = cluster_manifest_json(&m);
    struct cluster_manifest b;
    if (text) { /* NULL: json_pack refused a string (not UTF-8) */
        if (cluster_manifest_parse(text, strlen(text), &b, &err) != VT_ERR_OK ||
            strcmp(m.dataset, b.dataset) || strcmp(m.generation_id, b.generation_id) ||
            m.rows != b.rows || m.lazy != b.lazy || strcmp(m.file, b.file) ||
            m.file_size != b.file_size || strcmp(m.sha256, b.sha256) ||
            !m.source_version != !b.source_version ||
            (m.source_version && strcmp(m.source_version, b.source_version)) ||
            m.published_at_us != b.published_at_us || m.build_ms != b.build_ms ||
            strcmp(m.writer, b.writer) || !strvec_equal(&m.col_names, &b.col_names) ||
            !strvec_equal(&m.col_types, &b.col_types) || !strvec_equal(&m.cast_names, &b.cast_names) ||
            !strvec_equal(&m.cast_types, &b.cast_types))
            abort();
        cluster_manifest_release(&b);
        free(text);
    }
    cluster_manifest_release(&m);
}

static void current(const uint8_t *data, size_t size)
{
    struct cluster_current c, b;
    struct vt_error err = {0};
    if (cluster_current_parse((const char *)data, size, &c, &err) != VT_ERR_OK)
        return;
    if (cluster_ulid_ms(c.generation_id) < 0)
        abort();
    char *text = cluster_current_json(&c);
    if (!text)
        return;
    if (cluster_current_parse(text, strlen(text), &b, &err) != VT_ERR_OK ||
        strcmp(c.generation_id, b.generation_id) || strcmp(c.previous, b.previous) ||
        c.published_at_us != b.published_at_us || strcmp(c.writer, b.writer))
        abort();
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    manifest(data, size);
    current(data, size);
    return 0;
}
