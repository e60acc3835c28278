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

struct arrow_direct; /* arrow_duckdb.c: the columns converted here, not by DuckDB */

struct arrow_duckdb_stream {
    duckdb_arrow_options opts;
    struct arrow_ipc_writer *writer;
    struct arrow_direct *direct; /* NULL: DuckDB converts every column */
};

/* How write_chunk gets each chunk's Arrow arrays.
 *
 * ARROW_DUCKDB_DIRECT (what the service uses): columns whose DuckDB vectors
 * already have Arrow's layout are handed to the writer as they are, with no
 * conversion (fixed-width numbers, DATE, TIME, TIMESTAMP*: the vector's values
 * and its validity mask, which has Arrow's bit order); BOOLEAN is packed into
 * bits, VARCHAR/BLOB laid out as offsets here with their bytes written from the
 * vector straight into the IPC body (arrow_ipc_write_batch_fill). Only when the schema DuckDB
 * derived for the column is the one this layout matches ("l", "tsu:", "u",
 * ...: other arrow options keep DuckDB's conversion). Every other column
 * (DECIMAL, HUGEINT, UUID, INTERVAL, ENUM, nested types, ...) goes through
 * duckdb_data_chunk_to_arrow on a chunk that references just those columns.
 * The stream's bytes are the same as DuckDB's export would give but for the
 * bytes no reader may look at (values under a NULL, padding bits).
 * ARROW_DUCKDB_EXPORT_ONLY: DuckDB converts every column (make bench's floor
 * measures DuckDB's own export with this). */
enum arrow_duckdb_mode { ARROW_DUCKDB_DIRECT = 0, ARROW_DUCKDB_EXPORT_ONLY = 1 };

/* Builds the Arrow schema of `res`'s columns, the writer, and appends the
 * Schema message. On failure st holds nothing (release is still safe). */
enum vt_err arrow_duckdb_begin(struct arrow_duckdb_stream *st, duckdb_result *res,
                               struct strbuf *out, struct vt_error *err);
/* begin, choosing how chunks are converted (begin = ARROW_DUCKDB_DIRECT). */
enum vt_err arrow_duckdb_begin_mode(struct arrow_duckdb_stream *st, duckdb_result *res,
                                    enum arrow_duckdb_mode mode, struct strbuf *out,
                                    struct vt_error *err);
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
