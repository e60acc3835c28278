/*
 * Arrow IPC streaming-format writer over the Arrow C Data Interface.
 *
 * A stream is: one Schema message, then per batch any DictionaryBatch
 * messages it needs followed by one RecordBatch message, then the
 * end-of-stream marker. Each message is framed as the "encapsulated message
 * format": 0xFFFFFFFF, int32 metadata length (flatbuffer + padding to 8),
 * the flatbuffer Message, then the body (buffers 8-byte aligned and padded).
 * Metadata version V5, little-endian, no body compression.
 *
 * Usage (any producer of ArrowSchema/ArrowArray; see arrow_duckdb.h for the
 * DuckDB glue):
 *
 *     struct arrow_ipc_writer *w = arrow_ipc_writer_create(&schema, &err);
 *     arrow_ipc_write_schema(w, &out, &err);
 *     for each batch:  arrow_ipc_write_batch(w, &array, &out, &err);
 *     arrow_ipc_write_eos(&out);
 *     arrow_ipc_writer_destroy(w);
 *
 * The writer analyses the schema once (layout plan and the Schema message) and
 * reuses its scratch space across batches, so a batch costs the metadata
 * flatbuffer plus one memcpy per buffer. `schema` may be released after
 * create; `array` is only read (never released) by write_batch.
 *
 * The top-level schema must be a struct ("+s"): its children are the columns,
 * and the top-level ArrowArray is a struct array whose children are the column
 * arrays (this is what duckdb_to_arrow_schema / duckdb_data_chunk_to_arrow
 * produce). Offsets (ArrowArray.offset) at any level are honoured: sliced
 * arrays are written as unsliced IPC arrays (bitmaps shifted, offsets rebased,
 * children cut to the referenced range).
 *
 * Types: null, bool, all integer widths, float16/32/64, decimal 32/64/128/256,
 * utf8, large utf8, binary, large binary, utf8/binary view, fixed-size binary,
 * date32/64, time32/64, timestamp (any unit, with or without time zone),
 * duration, interval (months, day-time, month-day-nano), list, large list,
 * list view, large list view, fixed-size list, struct, map, sparse and dense
 * union, and dictionary-encoded fields (a DictionaryBatch is sent before the
 * first batch and again only when a batch's dictionary differs from the last
 * one sent, as a replacement). Extension types pass through as their storage
 * type with their field metadata (ARROW:extension:name ...). Run-end encoded
 * arrays are rejected at create time.
 *
 * Errors: create fails with VT_ERR_INTERNAL naming an unsupported format;
 * write_batch fails with VT_ERR_INTERNAL when the array does not match the
 * schema (wrong child or buffer counts) and VT_ERR_OUT_OF_MEMORY when `out`
 * cannot grow (its cap or allocation). On failure nothing is appended to out.
 */
#ifndef VT_ENCODE_ARROW_IPC_H
#define VT_ENCODE_ARROW_IPC_H

#include <stddef.h>
#include <stdint.h>

#include "encode/arrow_c_data.h"
#include "util/errors.h"
#include "util/strbuf.h"

/* Content type of an Arrow IPC stream (IANA registration). */
#define ARROW_IPC_STREAM_CONTENT_TYPE "application/vnd.apache.arrow.stream"

/* Body buffers are aligned to this (the spec requires 8; 64 is only advice). */
#define ARROW_IPC_ALIGN 8

struct arrow_ipc_writer;

/* Counters, for tests and metrics. */
struct arrow_ipc_stats {
    uint64_t batches;       /* record batch messages written */
    uint64_t dictionaries;  /* dictionary batch messages written */
    uint64_t rows;          /* rows in record batches */
    uint64_t bytes;         /* all bytes appended to out, framing included */
};

struct arrow_ipc_writer *arrow_ipc_writer_create(const struct ArrowSchema *schema,
                                                 struct vt_error *err);
void arrow_ipc_writer_destroy(struct arrow_ipc_writer *w); /* NULL-safe */

/* Appends the Schema message. */
enum vt_err arrow_ipc_write_schema(struct arrow_ipc_writer *w, struct strbuf *out,
                                   struct vt_error *err);
/* Appends the dictionary batches this batch needs (if any) and its record batch. */
enum vt_err arrow_ipc_write_batch(struct arrow_ipc_writer *w, const struct ArrowArray *batch,
                                  struct strbuf *out, struct vt_error *err);
/* A body buffer its producer writes straight into the body instead of
 * having it copied (arrow_ipc_write_batch_fill): the data buffer of a utf8 or
 * binary array whose buffers[2] is `key`, an address of the producer's own
 * that is never read and that no other buffer of the batch starts at.
 * write(ctx, dst, len) puts the buffer's first `len` bytes (the values the
 * batch references) at dst. Saves a copy of bytes the producer lays out
 * anyway: arrow_duckdb.c's strings went to a buffer of their own, then the
 * writer copied them into the body. The array must not start at a nonzero
 * offset into its data (a slice): write_batch_fill rejects it. */
struct arrow_ipc_fill {
    const void *key;
    void (*write)(void *ctx, uint8_t *dst, size_t len);
    void *ctx;
};

/* write_batch, with `nfills` buffers written by their producers (above). */
enum vt_err arrow_ipc_write_batch_fill(struct arrow_ipc_writer *w, const struct ArrowArray *batch,
                                       const struct arrow_ipc_fill *fills, size_t nfills,
                                       struct strbuf *out, struct vt_error *err);
/* Appends the end-of-stream marker (0xFFFFFFFF 0x00000000). Returns 0, or -1
 * when out cannot grow. */
int arrow_ipc_write_eos(struct strbuf *out);

void arrow_ipc_writer_stats(const struct arrow_ipc_writer *w, struct arrow_ipc_stats *out_stats);

/* Helpers exposed for unit tests: count of zero bits (nulls) in bits
 * [bit_offset, bit_offset + n) of a validity bitmap, and a copy of those bits
 * to dst starting at bit 0 (the last byte's unused bits are zeroed). */
int64_t arrow_ipc_count_nulls(const uint8_t *bitmap, int64_t bit_offset, int64_t n);
void arrow_ipc_copy_bits(uint8_t *dst, const uint8_t *src, int64_t bit_offset, int64_t n);

#endif
