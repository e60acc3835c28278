/*
 * The JSON row writer: query results straight from DuckDB data chunks to
 * `{"col":value,...}` objects, the body of every JSON query response (the hot
 * path of the service). Create one encoder per result from its column names
 * and types; call it per chunk. Rows are comma-separated across calls, so the
 * caller wraps them: `{"data":[` + rows + `],"page":N,"page_size":N}`.
 *
 * Value formats are those of json_format.h. Every DuckDB type the C API
 * exposes is encoded natively, nested types at any depth: LIST/ARRAY as
 * arrays, STRUCT as objects (an all-unnamed STRUCT such as ROW(1, 'a') as an
 * array), MAP with VARCHAR/ENUM keys as an object and otherwise as
 * [{"key":k,"value":v},...], UNION as {"member":value}, BIT as a "0101"
 * string, BIGNUM as an exact number, NULL as null at every level. A VARCHAR with the
 * JSON alias (DuckDB's JSON type) is written verbatim when it is valid JSON
 * and as a string otherwise. Types the C API cannot describe (VARIANT, TIME_NS
 * in DuckDB 1.4 report DUCKDB_TYPE_INVALID) are refused by json_rows_create;
 * json_type_supported() lets the query layer select `to_json(col)` for them
 * instead, which then passes through as JSON.
 *
 * The schema endpoint's sample row is json_rows_encode_range(enc, chunk, 0, 1)
 * on a fresh encoder: one `{...}` object.
 *
 * Not thread-safe: one encoder per result, used by one thread at a time. The
 * encoder keeps per-column scratch buffers between chunks (no allocation per
 * chunk after the first).
 */
#ifndef VT_ENCODE_JSON_ROWS_H
#define VT_ENCODE_JSON_ROWS_H

#include <duckdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/strbuf.h"

struct json_rows;

/* Builds an encoder for `ncol` columns: names[i] verbatim (escaped once here),
 * types[i] borrowed for the call. NULL on an unsupported type (message naming
 * the column in err) or out of memory. */
struct json_rows *json_rows_create(size_t ncol, const char *const *names,
                                   const duckdb_logical_type *types, char *err, size_t errlen);
/* The same, taking the names and types from a result. */
struct json_rows *json_rows_create_for_result(duckdb_result *res, char *err, size_t errlen);
void json_rows_destroy(struct json_rows *enc);

/* Appends every row of `chunk` (whose columns match the encoder's) to out,
 * each preceded by ',' except the encoder's first row. 0 on success; -1 when
 * out refused the bytes (out->overflow set: its `max` was reached), memory
 * ran out or the chunk does not match. Rows go out in batches of complete
 * rows: after -1, out holds whole rows only, json_rows_written() of them. */
int json_rows_encode_chunk(struct json_rows *enc, duckdb_data_chunk chunk, struct strbuf *out);
/* The same, also writing where each row ends: ends[i] = out->len just after
 * row i's closing brace (the chunk's size entries; the next row's comma is
 * at ends[i]). The pre-rendered pages of the index fast path cut page
 * bodies from these bytes (src/index/pages.c). */
int json_rows_encode_chunk_ends(struct json_rows *enc, duckdb_data_chunk chunk, struct strbuf *out,
                                uint64_t *ends);
/* Rows [from, from + count) of the chunk only (paging inside a chunk, a
 * one-row schema sample); the range is clamped to the chunk's size. */
int json_rows_encode_range(struct json_rows *enc, duckdb_data_chunk chunk, uint64_t from,
                           uint64_t count, struct strbuf *out);

/* Per-cell output (the row store of the index fast path): for every row of
 * the chunk calls fn(ctx, cells, ends) with the row's values as JSON text
 * (no keys) back to back in `cells`, value c ending at ends[c]. A non-zero
 * return from fn stops and is returned as -1. */
typedef int (*json_cells_fn)(void *ctx, const char *cells, const uint32_t *ends);
int json_rows_encode_cells(struct json_rows *enc, duckdb_data_chunk chunk, json_cells_fn fn,
                           void *ctx);

/* Newline-delimited rows (NDJSON): every row is followed by '\n' and no
 * commas are written. */
void json_rows_set_lines(struct json_rows *enc, bool lines);
/* Rows written since creation or the last restart. */
uint64_t json_rows_written(const struct json_rows *enc);
/* The next row is a first row again (no leading comma): reuse for a new body. */
void json_rows_restart(struct json_rows *enc);
/* The caller cut its output back to the first `written` rows: the next row
 * is row `written` (a leading comma unless it is 0). */
void json_rows_rewind(struct json_rows *enc, uint64_t written);

/* False for types json_rows_create refuses (also when nested inside a list,
 * struct, map or union); the query layer then selects `to_json(col)`. */
bool json_type_supported(duckdb_logical_type type);

#endif
