/*
 * Streaming compressors for response bodies: one struct over zlib (gzip
 * wrapper), brotli and zstd, writing straight into the spare room of the
 * caller's bounded strbuf (no intermediate buffer, no copy). The server
 * adapter picks the coding with encoding.h and feeds JSON batches through
 * compress_write/flush/finish as they come off the worker queue.
 *
 * Default levels, measured with tools/vt-compress-bench on 100k-row JSON pages
 * (16, 9.5 and 21 MB) and 1000-row pages (the default page_size), CPU time of
 * one core: gzip 1 (180-330 MB/s, ratio 4.0-7.0), br 2 (190-440 MB/s, 5.0-14),
 * zstd 1 (530-1100 MB/s, 5.3-17). Higher levels buy a few percent of size for
 * 2-6x the CPU (gzip 6, zlib's default, runs at 65-110 MB/s); zstd 2-4 were no
 * better than 1 on two of three pages; br 3 is 20-30% slower than br 2 for
 * 1-5% of size, br 1 loses half the ratio on data with long-range repeats.
 */
#include "http/compress.h"

#include <brotli/encode.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>
#include <zstd.h>

#define GZIP_LEVEL_DEFAULT 1
#define BROTLI_QUALITY_DEFAULT 2
#define ZSTD_LEVEL_DEFAULT 1

/* Brotli's window: 2^20 = 1 MiB instead of the default 4 MiB. Same ratio on
 * our JSON pages (measured), but 3 MiB of encoder state per response instead
 * of 9 MiB, and every concurrent compressed response holds one. */
#define BROTLI_LGWIN 20

/* RFC 9659 §3: a zstd content coding must not need a window over 8 MiB
 * (browsers refuse it). Levels up to 19 stay under that by default; higher
 * ones are capped. */
#define ZSTD_HTTP_MAX_WINDOW_LOG 23

/* How much spare room to ask for before each encoder call. Larger means fewer
 * calls; the strbuf doubles anyway, so this only matters for the first call. */
#define OUT_ROOM 32768

struct compress {
    enum http_encoding enc;
    bool finished;
    bool failed;
    union {
        z_stream z;
        BrotliEncoderState *br;
        ZSTD_CCtx *zs;
    } u;
};

int compress_default_level(enum http_encoding enc)
{
    switch (enc) {
    case HTTP_ENC_GZIP: return GZIP_LEVEL_DEFAULT;
    case HTTP_ENC_BR: return BROTLI_QUALITY_DEFAULT;
    case HTTP_ENC_ZSTD: return ZSTD_LEVEL_DEFAULT;
    default: return 0;
    }
}

static int clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

struct compress *compress_create_level(enum http_encoding enc, int level)
{
    if ((int)enc < 0 || enc >= HTTP_ENC__COUNT)
        return NULL;
    struct compress *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->enc = enc;
    switch (enc) {
    case HTTP_ENC_IDENTITY:
        break;
    case HTTP_ENC_GZIP:
        /* windowBits 15 + 16 asks zlib for the gzip wrapper (header, CRC-32,
         * ISIZE) that Content-Encoding: gzip means; memLevel 8 is zlib's
         * default (256 KiB of state per stream together with the window). */
        if (deflateInit2(&c->u.z, clamp(level, 0, 9), Z_DEFLATED, 15 + 16, 8,
                         Z_DEFAULT_STRATEGY) != Z_OK) {
            free(c);
            return NULL;
        }
        break;
    case HTTP_ENC_BR:
        c->u.br = BrotliEncoderCreateInstance(NULL, NULL, NULL);
        if (!c->u.br ||
            !BrotliEncoderSetParameter(c->u.br, BROTLI_PARAM_QUALITY,
                                       (uint32_t)clamp(level, BROTLI_MIN_QUALITY,
                                                       BROTLI_MAX_QUALITY)) ||
            !BrotliEncoderSetParameter(c->u.br, BROTLI_PARAM_LGWIN, BROTLI_LGWIN) ||
            !BrotliEncoderSetParameter(c->u.br, BROTLI_PARAM_MODE, BROTLI_MODE_TEXT)) {
            BrotliEncoderDestroyInstance(c->u.br);
            free(c);
            return NULL;
        }
        break;
    case HTTP_ENC_ZSTD: {
        c->u.zs = ZSTD_createCCtx();
        int lv = clamp(level, ZSTD_minCLevel(), ZSTD_maxCLevel());
        if (!c->u.zs || ZSTD_isError(ZSTD_CCtx_setParameter(c->u.zs, ZSTD_c_compressionLevel, lv)) ||
            (lv > 19 && ZSTD_isError(ZSTD_CCtx_setParameter(c->u.zs, ZSTD_c_windowLog,
                                                            ZSTD_HTTP_MAX_WINDOW_LOG)))) {
            ZSTD_freeCCtx(c->u.zs);
            free(c);
            return NULL;
        }
        break;
    }
    default:
        free(c);
        return NULL;
    }
    return c;
}

struct compress *compress_create(enum http_encoding enc)
{
    return compress_create_level(enc, compress_default_level(enc));
}

void compress_destroy(struct compress *c)
{
    if (!c)
        return;
    switch (c->enc) {
    case HTTP_ENC_GZIP: deflateEnd(&c->u.z); break;
    case HTTP_ENC_BR: BrotliEncoderDestroyInstance(c->u.br); break;
    case HTTP_ENC_ZSTD: ZSTD_freeCCtx(c->u.zs); break;
    default: break;
    }
    free(c);
}

/*
 * Makes spare room at the end of `out` and returns where it starts and how
 * much of it the encoder may fill: never past out->max, even though the
 * buffer's capacity may be larger after doubling. -1 when not one more byte
 * is allowed (out->overflow is then set by sb_grow).
 */
static int room(struct strbuf *out, uint8_t **out_ptr, size_t *out_avail)
{
    size_t max = out->max ? out->max : SIZE_MAX;
    size_t allowed = out->len < max ? max - out->len : 0;
    if (allowed == 0) {
        out->overflow = true;
        return -1;
    }
    size_t want = allowed < OUT_ROOM ? allowed : OUT_ROOM;
    size_t spare = out->cap > out->len ? out->cap - out->len - 1 : 0;
    if (spare < want) {
        if (sb_grow(out, want) < 0)
            return -1;
        spare = out->cap - out->len - 1;
    }
    *out_ptr = (uint8_t *)out->buf + out->len;
    *out_avail = spare < allowed ? spare : allowed;
    return 0;
}

static void commit(struct strbuf *out, size_t produced)
{
    out->len += produced;
    out->buf[out->len] = '\0'; /* keep the strbuf invariant */
}

/* ---- gzip ---------------------------------------------------------------- */

/* Runs deflate with `flush` over the pending input until `done` holds. */
static int z_run(struct compress *c, int flush, struct strbuf *out)
{
    z_stream *z = &c->u.z;
    for (;;) {
        uint8_t *dst;
        size_t avail;
        if (room(out, &dst, &avail) < 0)
            return -1;
        uInt give = avail > UINT_MAX ? UINT_MAX : (uInt)avail;
        z->next_out = dst;
        z->avail_out = give;
        int rc = deflate(z, flush);
        commit(out, give - z->avail_out);
        if (rc == Z_STREAM_END)
            return 0;
        /* Z_BUF_ERROR only says "no progress possible", e.g. a second sync
         * flush with nothing new: not an error. */
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            return -1;
        if (flush == Z_FINISH)
            continue; /* until Z_STREAM_END */
        /* all input taken and the output not full: deflate has said all it
         * will for this call */
        if (z->avail_in == 0 && z->avail_out != 0)
            return 0;
    }
}

static int z_write(struct compress *c, const uint8_t *in, size_t n, struct strbuf *out)
{
    z_stream *z = &c->u.z;
    while (n > 0) {
        uInt part = n > UINT_MAX ? UINT_MAX : (uInt)n; /* avail_in is 32-bit */
        z->next_in = (Bytef *)(uintptr_t)in;            /* zlib does not write it */
        z->avail_in = part;
        if (z_run(c, Z_NO_FLUSH, out) < 0)
            return -1;
        in += part;
        n -= part;
    }
    return 0;
}

/* ---- brotli -------------------------------------------------------------- */

static int br_run(struct compress *c, BrotliEncoderOperation op, const uint8_t *in, size_t n,
                  struct strbuf *out)
{
    size_t avail_in = n;
    const uint8_t *next_in = in;
    /* flush and finish need at least one call even with no input; then the
     * encoder is done when the input is used up and nothing is pending */
    for (;;) {
        uint8_t *dst;
        size_t avail;
        if (room(out, &dst, &avail) < 0)
            return -1;
        size_t avail_out = avail;
        uint8_t *next_out = dst;
        if (!BrotliEncoderCompressStream(c->u.br, op, &avail_in, &next_in, &avail_out, &next_out,
                                         NULL))
            return -1;
        commit(out, avail - avail_out);
        if (avail_in > 0 || BrotliEncoderHasMoreOutput(c->u.br))
            continue;
        if (op == BROTLI_OPERATION_FINISH && !BrotliEncoderIsFinished(c->u.br))
            continue;
        return 0;
    }
}

/* ---- zstd ---------------------------------------------------------------- */

static int zs_run(struct compress *c, ZSTD_EndDirective mode, const uint8_t *in, size_t n,
                  struct strbuf *out)
{
    ZSTD_inBuffer ib = {in, n, 0};
    for (;;) {
        uint8_t *dst;
        size_t avail;
        if (room(out, &dst, &avail) < 0)
            return -1;
        ZSTD_outBuffer ob = {dst, avail, 0};
        size_t left = ZSTD_compressStream2(c->u.zs, &ob, &ib, mode);
        commit(out, ob.pos);
        if (ZSTD_isError(left))
            return -1;
        /* continue: done once all input is taken; flush/end: done when
         * ZSTD reports nothing left to write */
        if (mode == ZSTD_e_continue ? ib.pos == ib.size : left == 0)
            return 0;
    }
}

/* ---- dispatch ------------------------------------------------------------ */

int compress_write(struct compress *c, const void *in, size_t n, struct strbuf *out)
{
    if (!c || c->failed || c->finished)
        return -1;
    if (n == 0)
        return 0;
    int rc;
    switch (c->enc) {
    case HTTP_ENC_GZIP: rc = z_write(c, in, n, out); break;
    case HTTP_ENC_BR: rc = br_run(c, BROTLI_OPERATION_PROCESS, in, n, out); break;
    case HTTP_ENC_ZSTD: rc = zs_run(c, ZSTD_e_continue, in, n, out); break;
    default: rc = sb_add(out, in, n); break;
    }
    if (rc < 0)
        c->failed = true;
    return rc;
}

int compress_flush(struct compress *c, struct strbuf *out)
{
    if (!c || c->failed || c->finished)
        return -1;
    int rc;
    switch (c->enc) {
    case HTTP_ENC_GZIP: rc = z_run(c, Z_SYNC_FLUSH, out); break;
    case HTTP_ENC_BR: rc = br_run(c, BROTLI_OPERATION_FLUSH, NULL, 0, out); break;
    case HTTP_ENC_ZSTD: rc = zs_run(c, ZSTD_e_flush, NULL, 0, out); break;
    default: rc = 0; break;
    }
    if (rc < 0)
        c->failed = true;
    return rc;
}

int compress_finish(struct compress *c, struct strbuf *out)
{
    if (!c || c->failed)
        return -1;
    if (c->finished)
        return 0;
    int rc;
    switch (c->enc) {
    case HTTP_ENC_GZIP: rc = z_run(c, Z_FINISH, out); break;
    case HTTP_ENC_BR: rc = br_run(c, BROTLI_OPERATION_FINISH, NULL, 0, out); break;
    case HTTP_ENC_ZSTD: rc = zs_run(c, ZSTD_e_end, NULL, 0, out); break;
    default: rc = 0; break;
    }
    if (rc < 0)
        c->failed = true;
    else
        c->finished = true;
    return rc;
}
