/*
 * Streaming response compressors: gzip (zlib), br (brotli) and zstd behind one
 * interface, plus identity as a plain copy so the caller has one code path.
 * Output is appended to a struct strbuf (src/util/strbuf.h), whose `max` bounds
 * it; the caller drains that buffer into the socket between calls.
 *
 *     struct compress *c = compress_create(enc);      // enc from encoding.h
 *     for each batch of the body:
 *         compress_write(c, batch, n, &out);          // may append nothing
 *         compress_flush(c, &out);                    // only if the client
 *                                                     // must see it now
 *         send out.buf[0..out.len), sb_reset(&out);
 *     compress_finish(c, &out); send the rest;
 *     compress_destroy(c);
 *
 * Flushing costs ratio (each flush ends a block), so flush once per streamed
 * batch, not per row (at 256 KiB batches a flush each costs under 0.1% of
 * size). Levels were measured on JSON query pages (tools/vt-compress-bench,
 * numbers in compress.c): the defaults favour throughput because the service
 * compresses on the fly on 2 cores. Encoder state per stream: gzip ~0.25 MiB,
 * br ~3 MiB, zstd ~1.2 MiB.
 *
 * Bounding: one call appends roughly its input plus what the encoder held back
 * from earlier calls (up to a block: 128 KiB for zstd, about the window for br),
 * so give `out` a max of the largest batch plus 2 MiB and drain it after every
 * call; the max is a safety net, not flow control.
 *
 * Errors: every function returns 0 or -1. -1 means the output buffer refused
 * to grow (out->overflow is set) or the encoder failed; the stream is then
 * broken (compressed bytes were lost) and every later call returns -1 too:
 * abort the response. Not thread-safe per object; one object per response.
 */
#ifndef VT_HTTP_COMPRESS_H
#define VT_HTTP_COMPRESS_H

#include <stddef.h>

#include "http/encoding.h"
#include "util/strbuf.h"

struct compress;

/* A compressor at the service's default level for `enc`; NULL on OOM or an
 * unknown coding. HTTP_ENC_IDENTITY gives a pass-through copier. */
struct compress *compress_create(enum http_encoding enc);

/* Same with an explicit level (zlib 0-9, brotli quality 0-11, zstd
 * ZSTD_minCLevel()..ZSTD_maxCLevel(); out-of-range values are clamped). For
 * benchmarks and tests; the service uses compress_create. */
struct compress *compress_create_level(enum http_encoding enc, int level);

/* The level compress_create uses for `enc` (0 for identity). */
int compress_default_level(enum http_encoding enc);

/* Compresses n bytes of `in`, appending whatever output the encoder releases
 * (often nothing: encoders buffer). n == 0 is allowed. */
int compress_write(struct compress *c, const void *in, size_t n, struct strbuf *out);

/* Appends everything needed for the client to decode all input so far
 * (zlib Z_SYNC_FLUSH, BROTLI_OPERATION_FLUSH, ZSTD_e_flush). The stream stays
 * open. */
int compress_flush(struct compress *c, struct strbuf *out);

/* Ends the stream (trailer, checksum). Afterwards only destroy is allowed;
 * a second finish is a no-op returning 0, a write returns -1. */
int compress_finish(struct compress *c, struct strbuf *out);

/* Frees the compressor; NULL-safe. Fine to call without finish (aborted
 * response). */
void compress_destroy(struct compress *c);

#endif
