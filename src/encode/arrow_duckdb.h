/*
 * DuckDB result -> Arrow IPC stream: the glue between DuckDB's Arrow C Data
 * export (duckdb_to_arrow_schema, duckdb_data_chunk_to_arrow, with the
 * result's arrow options) and the IPC writer (arrow_ipc.h). The HTTP layer
 * calls begin once, write_chunk per fetched data chunk, end once, and drains
 * `out` between calls.
 *
 *     struct arrow_duckdb_stream st;
 *     if (arrow_duckdb_begin(&st, &result, &out, &err) != VT_ERR_OK) ...;
 *     while ((chunk = duckdb_fetch_chunk(result))) {
 *         rc = arrow_duckdb_write_chunk(&st, chunk, &out, &err);
 *         duckdb_destroy_data_chunk(&chunk);
 *     }
 *     arrow_duckdb_end(&st, &out);
 *     arrow_duckdb_release(&st);
 *
 * DuckDB's arrow options come from connection settings. The defaults
 * (arrow_large_buffer_size=false, produce_arrow_string_view=false,
 * arrow_output_list_view=false, arrow_lossless_conversion=false) give the most
 * widely readable stream; every setting is still written correctly if changed.
 */
#ifndef VT_ENCODE_ARROW_DUCKDB_H
#define VT_ENCODE_ARROW_DUCKDB_H

#include <duckdb.h>

#include "encode/arrow_ipc.h"

struct arrow_duckdb_stream {
    duckdb_arrow_options opts;
    struct arrow_ipc_writer *writer;
};

/* Builds the Arrow schema of `res`'s columns, the writer, and appends the
 * Schema message. On failure st holds nothing (release is still safe). */
enum vt_err arrow_duckdb_begin(struct arrow_duckdb_stream *st, duckdb_result *res,
                               struct strbuf *out, struct vt_error *err);
/* Converts one chunk and appends its record batch (empty chunks add nothing). */
enum vt_err arrow_duckdb_write_chunk(struct arrow_duckdb_stream *st, duckdb_data_chunk chunk,
                                     struct strbuf *out, struct vt_error *err);
/* Appends the end-of-stream marker; -1 when out cannot grow. */
int arrow_duckdb_end(struct arrow_duckdb_stream *st, struct strbuf *out);
void arrow_duckdb_release(struct arrow_duckdb_stream *st);

/* The Arrow schema of a result's columns (release with schema->release). */
enum vt_err arrow_duckdb_result_schema(duckdb_result *res, duckdb_arrow_options opts,
                                       struct ArrowSchema *out_schema, struct vt_error *err);

#endif
