/* http server: how a streamed reply's producer hands its bytes to the loop.
 *
 * A fast producer (an Arrow stream writes a ~190 KB batch every ~0.25 ms)
 * handed every piece over on its own, each hand-off waking the loop; pieces
 * written back to back now go in chunks of up to STREAM_CHUNK_MAX_BYTES, at
 * most one every STREAM_COALESCE_US (http_internal.h). A slow producer's
 * pieces must still go out at once, one chunk each, and every byte arrives in
 * order either way. The client reads the chunked body and counts its chunks
 * (the loop frames each handed-over buffer as one chunk). */
#include <duckdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "engine/engine.h"
#include "http/server.h"
#include "http_testutil.h"
#include "testlib.h"

#define PIECE (100 * 1024)
#define FAST_PIECES 80
#define SLOW_PIECES 5

static struct eng_pool *pool;

/* Piece i is PIECE bytes of the letter 'a' + i % 26. */
static void produce(struct http_request *req, int pieces, long pause_ms)
{
    struct http_stream *st = http_reply_stream(req, 200, "application/octet-stream", false);
    if (!st)
        return;
    char *piece = malloc(PIECE);
    for (int i = 0; i < pieces && piece; i++) {
        memset(piece, 'a' + i % 26, PIECE);
        if (http_stream_write(st, piece, PIECE) != 0)
            break;
        if (pause_ms)
            sleep_ms(pause_ms);
    }
    free(piece);
    http_stream_end(st, true);
}

static void fast_job(struct http_request *req) { produce(req, FAST_PIECES, 0); }
static void slow_job(struct http_request *req) { produce(req, SLOW_PIECES, 20); }
static void fast_handler(struct http_request *req) { http_defer(req, pool, fast_job); }
static void slow_handler(struct http_request *req) { http_defer(req, pool, slow_job); }

/* GETs path (Connection: close) and reads the whole answer into a buffer
 * the caller frees; *len its bytes. */
static char *fetch_all(int port, const char *path, size_t *len)
{
    size_t cap = (size_t)FAST_PIECES * PIECE + 65536;
    char *buf = malloc(cap + 1);
    *len = buf ? fetch(port, path, buf, cap + 1) : 0;
    return buf;
}

/* Decodes the chunked body after the head: its data chunks (the last,
 * empty one not counted), whether it is `pieces` pieces of produce()'s bytes
 * in order, and the biggest chunk; -1 when the framing is broken. */
static int count_chunks(const char *resp, size_t len, int pieces, int *ok_bytes, size_t *biggest)
{
    *ok_bytes = 0;
    *biggest = 0;
    const char *p = strstr(resp, "\r\n\r\n");
    if (!p)
        return -1;
    p += 4;
    const char *end = resp + len;
    int chunks = 0;
    size_t at = 0; /* body offset */
    int good = 1;
    for (;;) {
        char *after;
        unsigned long n = strtoul(p, &after, 16);
        if (after == p || after + 2 > end || after[0] != '\r' || after[1] != '\n')
            return -1;
        p = after + 2;
        if (n == 0)
            break;
        if ((size_t)(end - p) < n + 2)
            return -1;
        if (n > *biggest)
            *biggest = n;
        for (unsigned long k = 0; k < n; k++, at++)
            good &= p[k] == (char)('a' + (int)(at / PIECE) % 26);
        p += n + 2;
        chunks++;
    }
    *ok_bytes = good && at == (size_t)pieces * PIECE;
    return chunks;
}

TEST(fast_pieces_are_coalesced_slow_ones_go_at_once)
{
    duckdb_database db;
    CHECK(duckdb_open(NULL, &db) == DuckDBSuccess);
    struct vt_error err = {0};
    pool = eng_pool_create(db, 1, "test", &err);
    CHECK(pool != NULL);
    struct vt_config cfg;
    config_init_defaults(&cfg);
    cfg.server.port = 0;
    static const struct http_route routes[] = {
        {HTTP_GET, "/fast", fast_handler, AUTH_PERM_PUBLIC, "pieces back to back", 0},
        {HTTP_GET, "/slow", slow_handler, AUTH_PERM_PUBLIC, "a pause after each piece", 0}};
    struct http_server_options opts = {.cfg = &cfg, .routes = routes, .n_routes = 2};
    struct http_server *srv = http_server_start(&opts, &err);
    CHECK(srv != NULL);
    if (!srv || !pool)
        return;

    size_t len, biggest = 0;
    int ok = 0;
    char *resp = fetch_all(http_server_port(srv), "/fast", &len);
    CHECK(resp != NULL);
    int fast = resp ? count_chunks(resp, len, FAST_PIECES, &ok, &biggest) : -1;
    CHECK(ok);
    /* 8 MB in 80 pieces: one chunk per piece before; ~9 of about 1 MB when
     * the producer runs unhindered, more only when it loses its CPU for
     * over a millisecond between pieces (a busy machine), never one each;
     * and a chunk stops growing at the piece that takes it past 1 MB. */
    CHECK(fast > 0 && fast < FAST_PIECES / 2);
    CHECK(biggest < 1024 * 1024 + PIECE);
    free(resp);

    resp = fetch_all(http_server_port(srv), "/slow", &len);
    CHECK(resp != NULL);
    int slow = resp ? count_chunks(resp, len, SLOW_PIECES, &ok, &biggest) : -1;
    CHECK(ok);
    /* 20 ms between pieces: each went as soon as it was written */
    CHECK_EQ_INT(slow, SLOW_PIECES);
    free(resp);

    http_server_stop(srv, 1000, pool);
    eng_pool_destroy(pool);
    duckdb_close(&db);
    config_free(&cfg);
}

RUN_TESTS(TEST_CASE(fast_pieces_are_coalesced_slow_ones_go_at_once))
