/*
 * The row store: the rows of an indexed generation, kept so the index fast
 * path can produce JSON without going through DuckDB (a DuckDB point query
 * costs ~1.7 ms on a 1M-row table even prepared; this costs microseconds).
 *
 * Each row is stored as its cells already encoded as JSON values (by the same
 * encoder as every other response, so both paths write identical bytes),
 * ROWSTORE_BLOCK_ROWS rows to a block, each block compressed with zstd. A
 * lookup decompresses the block holding the row (a cursor keeps the last block, so neighbouring rows
 * cost one decompression) and writes {"col":value,...} with the projection
 * asked for. Measured on a 1M-row, 6-column table with md5 strings and random
 * doubles: ~43 bytes per row with 16-row blocks; 8-row blocks cost ~10% more
 * memory and made point lookups ~8% faster (make bench, scenario 3).
 */
#ifndef VT_INDEX_ROWSTORE_H
#define VT_INDEX_ROWSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "util/strbuf.h"

#define ROWSTORE_BLOCK_ROWS 8

struct rowstore;
struct rowstore_builder;

/* names: the column names, written as keys (escaped once here). */
struct rowstore_builder *rowstore_builder_create(size_t n_cols, const char *const *names);
/* Appends one row: its n_cols cells concatenated in `cells`, cell i ending at
 * ends[i] (so cell i is cells[ends[i-1] .. ends[i])). */
int rowstore_builder_add_row(struct rowstore_builder *b, const char *cells, const uint32_t *ends);
struct rowstore *rowstore_builder_finish(struct rowstore_builder *b);
void rowstore_builder_abort(struct rowstore_builder *b);

void rowstore_destroy(struct rowstore *rs);
size_t rowstore_rows(const struct rowstore *rs);
size_t rowstore_bytes(const struct rowstore *rs);

/* Per-thread decoding state (zstd context + the last block decoded). */
struct rowstore_cursor;
struct rowstore_cursor *rowstore_cursor_create(void);
void rowstore_cursor_destroy(struct rowstore_cursor *cur);

/* Appends row `pos` as a JSON object of the columns `cols` (NULL = all, in
 * table order) to out. 0 on success, -1 on a bad position or out of memory. */
int rowstore_write_row(const struct rowstore *rs, struct rowstore_cursor *cur, uint32_t pos,
                       const size_t *cols, size_t n_cols, struct strbuf *out);

/* Cell `col` of row `pos` as stored: its JSON text (*out_p, *out_len),
 * borrowed from the cursor until its next use. 0, or -1 on a bad position. */
int rowstore_cell(const struct rowstore *rs, struct rowstore_cursor *cur, uint32_t pos,
                  size_t col, const char **out_p, size_t *out_len);

#endif
