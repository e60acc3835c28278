/*
 * Streaming compressors (src/http/compress.c): every output is decoded with the
 * real decoders (zlib inflate in gzip mode, BrotliDecoderDecompress,
 * ZSTD_decompress) and compared byte for byte; after each flush, the bytes so
 * far must decode to exactly the input so far (what a streaming client sees).
 */
#include <brotli/decode.h>
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_getFrameHeader, to check the window */
#include <zstd.h>

#include "http/compress.h"
#include "testlib.h"

static const enum http_encoding all_encs[] = {HTTP_ENC_IDENTITY, HTTP_ENC_GZIP, HTTP_ENC_BR,
                                              HTTP_ENC_ZSTD};
#define NENC (sizeof all_encs / sizeof all_encs[0])

/* ---- inputs ---------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* JSON rows like a query page: compressible, with varying values. */
static unsigned char *json_like(size_t n)
{
    unsigned char *b = malloc(n + 256);
    size_t len = 0;
    for (unsigned i = 0; len < n; i++)
        len += (size_t)sprintf((char *)b + len,
                               "{\"id\":%u,\"name\":\"user_%llu\",\"amount\":%llu.%02u,"
                               "\"active\":%s},",
                               i, (unsigned long long)(rnd() % 100000),
                               (unsigned long long)(rnd() % 10000), (unsigned)(rnd() % 100),
                               (rnd() & 1) ? "true" : "false");
    return b;
}

static unsigned char *random_bytes(size_t n)
{
    unsigned char *b = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)rnd();
    return b;
}

/* ---- decoders ---------------------------------------------------------------- */

/* Decodes a complete stream; returns the decoded length or -1. */
static long long decode_all(enum http_encoding enc, const void *in, size_t n, unsigned char *dst,
                            size_t cap)
{
    switch (enc) {
    case HTTP_ENC_IDENTITY:
        if (n > cap)
            return -1;
        if (n)
            memcpy(dst, in, n);
        return (long long)n;
    case HTTP_ENC_GZIP: {
        z_stream z;
        memset(&z, 0, sizeof z);
        if (inflateInit2(&z, 15 + 16) != Z_OK) /* gzip wrapper only */
            return -1;
        z.next_in = (Bytef *)(uintptr_t)in;
        z.avail_in = (uInt)n;
        z.next_out = dst;
        z.avail_out = (uInt)cap;
        int rc = inflate(&z, Z_FINISH);
        long long out = (long long)z.total_out;
        bool trailing = z.avail_in != 0;
        inflateEnd(&z);
        return rc == Z_STREAM_END && !trailing ? out : -1;
    }
    case HTTP_ENC_BR: {
        size_t out = cap;
        if (BrotliDecoderDecompress(n, in, &out, dst) != BROTLI_DECODER_RESULT_SUCCESS)
            return -1;
        return (long long)out;
    }
    case HTTP_ENC_ZSTD: {
        size_t r = ZSTD_decompress(dst, cap, in, n);
        return ZSTD_isError(r) ? -1 : (long long)r;
    }
    default:
        return -1;
    }
}

/* Decodes an unfinished stream (everything up to a flush) with the streaming
 * decoders; returns the decoded length or -1 on a decoding error. */
static long long decode_prefix(enum http_encoding enc, const void *in, size_t n,
                               unsigned char *dst, size_t cap)
{
    switch (enc) {
    case HTTP_ENC_GZIP: {
        z_stream z;
        memset(&z, 0, sizeof z);
        if (inflateInit2(&z, 15 + 16) != Z_OK)
            return -1;
        z.next_in = (Bytef *)(uintptr_t)in;
        z.avail_in = (uInt)n;
        z.next_out = dst;
        z.avail_out = (uInt)cap;
        int rc = inflate(&z, Z_SYNC_FLUSH);
        long long out = (long long)z.total_out;
        bool all_in = z.avail_in == 0;
        inflateEnd(&z);
        return (rc == Z_OK || rc == Z_BUF_ERROR) && all_in ? out : -1;
    }
    case HTTP_ENC_BR: {
        BrotliDecoderState *s = BrotliDecoderCreateInstance(NULL, NULL, NULL);
        size_t avail_in = n, avail_out = cap;
        const uint8_t *next_in = in;
        uint8_t *next_out = dst;
        BrotliDecoderResult r = BrotliDecoderDecompressStream(s, &avail_in, &next_in, &avail_out,
                                                              &next_out, NULL);
        BrotliDecoderDestroyInstance(s);
        return r == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT ? (long long)(cap - avail_out) : -1;
    }
    case HTTP_ENC_ZSTD: {
        ZSTD_DCtx *d = ZSTD_createDCtx();
        ZSTD_inBuffer ib = {in, n, 0};
        ZSTD_outBuffer ob = {dst, cap, 0};
        size_t r = 0;
        while (ib.pos < ib.size && !ZSTD_isError(r) && ob.pos < ob.size)
            r = ZSTD_decompressStream(d, &ob, &ib);
        ZSTD_freeDCtx(d);
        return ZSTD_isError(r) || ib.pos != ib.size ? -1 : (long long)ob.pos;
    }
    default:
        return decode_all(enc, in, n, dst, cap);
    }
}

/* Compresses `in` in one write + finish and checks the round trip. */
static void roundtrip_one(enum http_encoding enc, const unsigned char *in, size_t n)
{
    struct compress *c = compress_create(enc);
    CHECK(c != NULL);
    struct strbuf out;
    sb_init(&out, 0);
    CHECK_EQ_INT(compress_write(c, in, n, &out), 0);
    CHECK_EQ_INT(compress_finish(c, &out), 0);
    unsigned char *dec = malloc(n + 64);
    long long got = decode_all(enc, out.buf, out.len, dec, n + 64);
    if (got != (long long)n)
        fprintf(stderr, "  %s n=%zu: decoded %lld\n", http_encoding_name(enc), n, got);
    CHECK_EQ_INT(got, (long long)n);
    CHECK(n == 0 || memcmp(dec, in, n) == 0);
    if (enc == HTTP_ENC_GZIP)
        CHECK(out.len >= 2 && (unsigned char)out.buf[0] == 0x1f &&
              (unsigned char)out.buf[1] == 0x8b);
    free(dec);
    sb_release(&out);
    compress_destroy(c);
}

TEST(empty_input)
{
    for (size_t e = 0; e < NENC; e++)
        roundtrip_one(all_encs[e], (const unsigned char *)"", 0);
    /* also: finish with no write at all, and a zero-length write */
    for (size_t e = 0; e < NENC; e++) {
        struct compress *c = compress_create(all_encs[e]);
        struct strbuf out;
        sb_init(&out, 0);
        CHECK_EQ_INT(compress_write(c, "", 0, &out), 0);
        CHECK_EQ_INT(compress_finish(c, &out), 0);
        unsigned char dec[16];
        CHECK_EQ_INT(decode_all(all_encs[e], out.buf, out.len, dec, sizeof dec), 0);
        sb_release(&out);
        compress_destroy(c);
    }
}

TEST(one_byte)
{
    for (size_t e = 0; e < NENC; e++)
        roundtrip_one(all_encs[e], (const unsigned char *)"x", 1);
}

TEST(large_inputs)
{
    size_t n = 8u << 20;
    unsigned char *json = json_like(n);
    unsigned char *rand = random_bytes(1u << 20);
    for (size_t e = 0; e < NENC; e++) {
        roundtrip_one(all_encs[e], json, n);
        roundtrip_one(all_encs[e], rand, 1u << 20); /* incompressible: must still work */
    }
    free(json);
    free(rand);
}

TEST(json_compresses_well)
{
    size_t n = 1u << 20;
    unsigned char *json = json_like(n);
    for (size_t e = 1; e < NENC; e++) {
        struct compress *c = compress_create(all_encs[e]);
        struct strbuf out;
        sb_init(&out, 0);
        compress_write(c, json, n, &out);
        compress_finish(c, &out);
        if (out.len * 3 > n)
            fprintf(stderr, "  %s: %zu -> %zu\n", http_encoding_name(all_encs[e]), n, out.len);
        CHECK(out.len * 3 < n); /* at least 3:1 on JSON at the default levels */
        sb_release(&out);
        compress_destroy(c);
    }
    free(json);
}

/* Many small writes of varying size; flush every `every` writes and check that
 * what was sent so far decodes to exactly what was written so far. */
static void small_writes(enum http_encoding enc, const unsigned char *in, size_t n, int every)
{
    struct compress *c = compress_create(enc);
    struct strbuf out;
    sb_init(&out, 0);
    unsigned char *dec = malloc(n + 64);
    size_t pos = 0;
    int writes = 0, flushes = 0;
    while (pos < n) {
        size_t k = 1 + (size_t)(rnd() % 37);
        if (k > n - pos)
            k = n - pos;
        CHECK_EQ_INT(compress_write(c, in + pos, k, &out), 0);
        pos += k;
        if (++writes % every == 0) {
            CHECK_EQ_INT(compress_flush(c, &out), 0);
            long long got = decode_prefix(enc, out.buf, out.len, dec, n + 64);
            if (got != (long long)pos)
                fprintf(stderr, "  %s flush %d: decoded %lld of %zu\n", http_encoding_name(enc),
                        flushes, got, pos);
            CHECK_EQ_INT(got, (long long)pos);
            CHECK(memcmp(dec, in, pos) == 0);
            flushes++;
        }
    }
    CHECK_EQ_INT(compress_finish(c, &out), 0);
    CHECK_EQ_INT(decode_all(enc, out.buf, out.len, dec, n + 64), (long long)n);
    CHECK(memcmp(dec, in, n) == 0);
    free(dec);
    sb_release(&out);
    compress_destroy(c);
}

TEST(many_small_writes_with_flushes)
{
    size_t n = 200000;
    unsigned char *json = json_like(n);
    unsigned char *rand = random_bytes(50000);
    for (size_t e = 0; e < NENC; e++) {
        small_writes(all_encs[e], json, n, 500);
        small_writes(all_encs[e], json, 5000, 1); /* flush after every write */
        small_writes(all_encs[e], rand, 50000, 97);
        small_writes(all_encs[e], json, n, 1 << 30); /* never flushed */
    }
    free(json);
    free(rand);
}

TEST(repeated_and_empty_flushes)
{
    for (size_t e = 0; e < NENC; e++) {
        enum http_encoding enc = all_encs[e];
        struct compress *c = compress_create(enc);
        struct strbuf out;
        sb_init(&out, 0);
        unsigned char dec[64];
        CHECK_EQ_INT(compress_flush(c, &out), 0); /* before any input */
        CHECK_EQ_INT(decode_prefix(enc, out.buf, out.len, dec, sizeof dec), 0);
        CHECK_EQ_INT(compress_write(c, "hello", 5, &out), 0);
        CHECK_EQ_INT(compress_flush(c, &out), 0);
        size_t after_first = out.len;
        CHECK_EQ_INT(compress_flush(c, &out), 0); /* nothing new */
        CHECK_EQ_INT(compress_flush(c, &out), 0);
        CHECK(out.len - after_first <= 16);       /* an empty flush costs next to nothing */
        CHECK_EQ_INT(decode_prefix(enc, out.buf, out.len, dec, sizeof dec), 5);
        CHECK_EQ_INT(compress_write(c, " world", 6, &out), 0);
        CHECK_EQ_INT(compress_finish(c, &out), 0);
        CHECK_EQ_INT(decode_all(enc, out.buf, out.len, dec, sizeof dec), 11);
        CHECK(memcmp(dec, "hello world", 11) == 0);
        sb_release(&out);
        compress_destroy(c);
    }
}

TEST(lifecycle)
{
    for (size_t e = 0; e < NENC; e++) {
        struct compress *c = compress_create(all_encs[e]);
        struct strbuf out;
        sb_init(&out, 0);
        CHECK_EQ_INT(compress_finish(c, &out), 0);
        size_t len = out.len;
        CHECK_EQ_INT(compress_finish(c, &out), 0); /* second finish: no-op */
        CHECK_EQ_INT(out.len, len);
        CHECK_EQ_INT(compress_write(c, "x", 1, &out), -1);
        CHECK_EQ_INT(compress_flush(c, &out), -1);
        sb_release(&out);
        compress_destroy(c);
        /* destroy without finish (an aborted response) must not leak */
        c = compress_create(all_encs[e]);
        sb_init(&out, 0);
        CHECK_EQ_INT(compress_write(c, "abc", 3, &out), 0);
        sb_release(&out);
        compress_destroy(c);
    }
    compress_destroy(NULL);
    CHECK(compress_create((enum http_encoding)99) == NULL);
    CHECK(compress_create((enum http_encoding)-1) == NULL);
    CHECK_EQ_INT(compress_write(NULL, "x", 1, NULL), -1);
}

TEST(levels)
{
    /* every level of every coding round-trips; out-of-range levels clamp */
    unsigned char *json = json_like(100000);
    int lo[] = {0, 0, ZSTD_minCLevel() > -5 ? ZSTD_minCLevel() : -5};
    int hi[] = {9, 11, 19};
    enum http_encoding encs[] = {HTTP_ENC_GZIP, HTTP_ENC_BR, HTTP_ENC_ZSTD};
    for (int e = 0; e < 3; e++) {
        for (int lv = lo[e] - 1; lv <= hi[e] + 1; lv++) {
            struct compress *c = compress_create_level(encs[e], lv);
            CHECK(c != NULL);
            struct strbuf out;
            sb_init(&out, 0);
            CHECK_EQ_INT(compress_write(c, json, 100000, &out), 0);
            CHECK_EQ_INT(compress_finish(c, &out), 0);
            unsigned char *dec = malloc(100064);
            CHECK_EQ_INT(decode_all(encs[e], out.buf, out.len, dec, 100064), 100000);
            CHECK(memcmp(dec, json, 100000) == 0);
            free(dec);
            sb_release(&out);
            compress_destroy(c);
        }
    }
    /* zstd beyond 19: window capped at 8 MiB (RFC 9659) and still decodable */
    struct compress *c = compress_create_level(HTTP_ENC_ZSTD, 22);
    struct strbuf out;
    sb_init(&out, 0);
    CHECK_EQ_INT(compress_write(c, json, 100000, &out), 0);
    CHECK_EQ_INT(compress_finish(c, &out), 0);
    ZSTD_frameHeader fh;
    CHECK_EQ_INT(ZSTD_getFrameHeader(&fh, out.buf, out.len), 0);
    CHECK(fh.windowSize <= (8u << 20));
    sb_release(&out);
    compress_destroy(c);
    CHECK_EQ_INT(compress_default_level(HTTP_ENC_IDENTITY), 0);
    free(json);
}

TEST(bounded_output)
{
    unsigned char *rand = random_bytes(300000);
    for (size_t e = 0; e < NENC; e++) {
        enum http_encoding enc = all_encs[e];
        /* a cap far below the output: the call fails cleanly and the stream is dead */
        struct compress *c = compress_create(enc);
        struct strbuf out;
        sb_init(&out, 100);
        int rc = compress_write(c, rand, 300000, &out);
        if (rc == 0)
            rc = compress_finish(c, &out);
        CHECK_EQ_INT(rc, -1);
        CHECK(out.overflow);
        CHECK(out.len <= 100);
        CHECK(out.buf == NULL || out.buf[out.len] == '\0');
        CHECK_EQ_INT(compress_write(c, "x", 1, &out), -1);
        CHECK_EQ_INT(compress_finish(c, &out), -1);
        sb_release(&out);
        compress_destroy(c);

        /* a cap of batch + 2 MiB with draining after each call always suffices */
        c = compress_create(enc);
        size_t batch = 65536;
        sb_init(&out, batch + (2u << 20));
        struct strbuf all;
        sb_init(&all, 0);
        for (size_t pos = 0; pos < 300000; pos += batch) {
            size_t k = 300000 - pos < batch ? 300000 - pos : batch;
            CHECK_EQ_INT(compress_write(c, rand + pos, k, &out), 0);
            sb_add(&all, out.buf, out.len);
            sb_reset(&out);
        }
        CHECK_EQ_INT(compress_finish(c, &out), 0);
        sb_add(&all, out.buf, out.len);
        unsigned char *dec = malloc(300064);
        CHECK_EQ_INT(decode_all(enc, all.buf, all.len, dec, 300064), 300000);
        CHECK(memcmp(dec, rand, 300000) == 0);
        free(dec);
        sb_release(&all);
        sb_release(&out);
        compress_destroy(c);
    }
    free(rand);
}

TEST(appends_to_existing_content)
{
    /* the output is appended after what the strbuf already holds (e.g. chunk
     * framing written by the caller) */
    for (size_t e = 0; e < NENC; e++) {
        struct compress *c = compress_create(all_encs[e]);
        struct strbuf out;
        sb_init(&out, 0);
        sb_adds(&out, "PREFIX");
        compress_write(c, "payload", 7, &out);
        CHECK_EQ_INT(compress_finish(c, &out), 0);
        CHECK(memcmp(out.buf, "PREFIX", 6) == 0);
        unsigned char dec[32];
        CHECK_EQ_INT(decode_all(all_encs[e], out.buf + 6, out.len - 6, dec, sizeof dec), 7);
        CHECK(strlen(out.buf) <= out.len); /* NUL-terminated */
        sb_release(&out);
        compress_destroy(c);
    }
}

RUN_TESTS(TEST_CASE(empty_input), TEST_CASE(one_byte), TEST_CASE(large_inputs),
          TEST_CASE(json_compresses_well), TEST_CASE(many_small_writes_with_flushes),
          TEST_CASE(repeated_and_empty_flushes), TEST_CASE(lifecycle), TEST_CASE(levels),
          TEST_CASE(bounded_output), TEST_CASE(appends_to_existing_content))
