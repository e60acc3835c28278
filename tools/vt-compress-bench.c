/*
 * vt-compress-bench: measures the response compressors of src/http/compress.c
 * (speed, ratio, memory per stream) at several levels on a real response body,
 * to choose the levels compress_create() uses. A development tool, not part of
 * the service. Usage:
 *   vt-compress-bench FILE [CHUNK_KIB [flush]]
 * FILE is fed in CHUNK_KIB pieces (default 256, about one 2048-row batch of a
 * JSON page), with compress_flush after each piece when "flush" is given (what
 * a streamed response does). Speed is input MB per CPU second of this thread,
 * so other load on the machine disturbs it little; best of several runs.
 *
 * A typical 100k-row JSON page can be made with
 *   build/vt-sql "COPY (SELECT ... FROM range(100000) t(i)) TO '/tmp/p.json' (FORMAT json, ARRAY true)"
 * and compacted to the service's {"data":[...],"page":1,"page_size":100000}.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/compress.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

struct result {
    double mbps;
    size_t out_len;
    size_t mem;
};

static int run(enum http_encoding enc, int level, const char *in, size_t n, size_t chunk,
               bool flush, struct result *res)
{
    double best = 1e30;
    int reps = 0;
    double spent = 0;
    struct strbuf out;
    sb_init(&out, 0);
    /* at least 3 runs and 1 CPU second (small inputs: many runs) */
    while (reps < 3 || (spent < 1.0 && reps < 5000)) {
        size_t before = heap_in_use();
        double t0 = cpu_now();
        struct compress *c = compress_create_level(enc, level);
        if (!c)
            return -1;
        size_t total = 0;
        for (size_t pos = 0; pos < n; pos += chunk) {
            size_t k = n - pos < chunk ? n - pos : chunk;
            if (compress_write(c, in + pos, k, &out) < 0 || (flush && compress_flush(c, &out) < 0))
                return -1;
            total += out.len;
            sb_reset(&out); /* as if sent */
        }
        if (compress_finish(c, &out) < 0)
            return -1;
        total += out.len;
        sb_reset(&out);
        double dt = cpu_now() - t0;
        /* memory held by the stream itself (the output buffer excluded) */
        size_t mem = heap_in_use() - before - out.cap;
        compress_destroy(c);
        spent += dt;
        if (dt < best)
            best = dt;
        res->out_len = total;
        res->mem = mem;
        reps++;
    }
    sb_release(&out);
    res->mbps = (double)n / 1e6 / best;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [CHUNK_KIB [flush]]\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *in = malloc((size_t)sz + 1);
    if (!in || fread(in, 1, (size_t)sz, f) != (size_t)sz) {
        fprintf(stderr, "read failed\n");
        return 1;
    }
    fclose(f);
    size_t chunk = (argc > 2 ? (size_t)atoi(argv[2]) : 256) * 1024;
    bool flush = argc > 3 && strcmp(argv[3], "flush") == 0;

    static const struct {
        enum http_encoding enc;
        int levels[12];
        int nlevels;
    } plan[] = {
        {HTTP_ENC_GZIP, {1, 2, 3, 4, 5, 6, 9}, 7},
        {HTTP_ENC_BR, {0, 1, 2, 3, 4, 5, 6, 7}, 8},
        {HTTP_ENC_ZSTD, {-5, -1, 1, 2, 3, 4, 5, 7, 9, 12}, 10},
    };
    printf("input %s: %ld bytes, chunks of %zu KiB%s\n", argv[1], sz, chunk / 1024,
           flush ? ", flush after each" : "");
    printf("| coding | level | MB/s (CPU) | ratio | output bytes | stream memory |\n");
    printf("|---|---|---|---|---|---|\n");
    for (size_t p = 0; p < sizeof plan / sizeof plan[0]; p++) {
        for (int i = 0; i < plan[p].nlevels; i++) {
            struct result r;
            int lv = plan[p].levels[i];
            if (run(plan[p].enc, lv, in, (size_t)sz, chunk, flush, &r) < 0) {
                fprintf(stderr, "%s %d failed\n", http_encoding_name(plan[p].enc), lv);
                return 1;
            }
            printf("| %s | %d%s | %.0f | %.2f | %zu | %.1f MiB |\n", http_encoding_name(plan[p].enc),
                   lv, lv == compress_default_level(plan[p].enc) ? " (default)" : "", r.mbps,
                   (double)sz / (double)r.out_len, r.out_len, (double)r.mem / (1 << 20));
            fflush(stdout);
        }
    }
    free(in);
    return 0;
}
