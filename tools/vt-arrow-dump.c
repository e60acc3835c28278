/*
 * vt-arrow-dump: runs SQL with DuckDB and writes the Arrow IPC stream of the
 * last statement's result with vitrine's writer (src/encode/arrow_ipc.c). A
 * development and test tool: the e2e tests decode its output with a real
 * Arrow reader, and --bench measures the writer against DuckDB's own export.
 *
 *   vt-arrow-dump [-o FILE] [--slice N] [--schema] [--export-only] SQL...
 *       Every argument but the last is run first (setup: CREATE, SET ...).
 *       Chunks go through arrow_duckdb_write_chunk as in the service (plain
 *       columns converted directly, the rest by DuckDB: arrow_duckdb.h);
 *       --export-only makes DuckDB convert every column.
 *       --slice N   re-cuts every DuckDB chunk into batches of N rows by moving
 *                   the top-level offset, so the writer sees sliced arrays.
 *       --schema    prints the Arrow C schema (format strings) instead.
 *   vt-arrow-dump --bench REPS SQL...
 *       Times, on the materialized result of the last statement, (A) DuckDB's
 *       duckdb_data_chunk_to_arrow alone, (B) the same plus IPC writing and
 *       (C) arrow_duckdb_write_chunk (the service's direct conversion + IPC),
 *       best of REPS, and prints rows, bytes and throughputs.
 */
#include <duckdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "encode/arrow_duckdb.h"
#include "encode/arrow_ipc.h"
#include "util/errors.h"
#include "util/strbuf.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int drain(FILE *f, struct strbuf *out)
{
    if (out->len && fwrite(out->buf, 1, out->len, f) != out->len)
        return -1;
    sb_reset(out);
    return 0;
}

static void print_schema(const struct ArrowSchema *s, int depth)
{
    printf("%*s%s %s%s", depth * 2, "", s->format, s->name ? s->name : "",
           (s->flags & ARROW_FLAG_NULLABLE) ? "" : " (not null)");
    if (s->dictionary)
        printf(" dictionary=%s", s->dictionary->format);
    if (s->metadata) {
        const char *p = s->metadata;
        int32_t n;
        memcpy(&n, p, 4);
        p += 4;
        for (int32_t i = 0; i < n; i++) {
            int32_t kl, vl;
            memcpy(&kl, p, 4);
            printf(" [%.*s=", kl, p + 4);
            p += 4 + kl;
            memcpy(&vl, p, 4);
            printf("%.*s]", vl, p + 4);
            p += 4 + vl;
        }
    }
    putchar('\n');
    for (int64_t i = 0; i < s->n_children; i++)
        print_schema(s->children[i], depth + 1);
}

static int run_setup(duckdb_connection con, char **sql, int n)
{
    for (int i = 0; i < n; i++) {
        duckdb_result r;
        if (duckdb_query(con, sql[i], &r) != DuckDBSuccess) {
            fprintf(stderr, "vt-arrow-dump: %s\n", duckdb_result_error(&r));
            duckdb_destroy_result(&r);
            return -1;
        }
        duckdb_destroy_result(&r);
    }
    return 0;
}

/* Streams the result as IPC to f; slice > 0 re-cuts batches. */
static int dump(duckdb_result *res, FILE *f, int64_t slice, enum arrow_duckdb_mode mode)
{
    struct vt_error err = {0};
    struct strbuf out;
    sb_init(&out, 0);
    struct arrow_duckdb_stream st;
    int rc = 0;
    if (arrow_duckdb_begin_mode(&st, res, mode, &out, &err) != VT_ERR_OK) {
        fprintf(stderr, "vt-arrow-dump: %s\n", vt_error_message(&err));
        sb_release(&out);
        return 1;
    }
    duckdb_data_chunk chunk;
    while (rc == 0 && (chunk = duckdb_fetch_chunk(*res)) != NULL) {
        if (slice <= 0) {
            if (arrow_duckdb_write_chunk(&st, chunk, &out, &err) != VT_ERR_OK)
                rc = 1;
        } else if (duckdb_data_chunk_get_size(chunk) > 0) {
            struct ArrowArray arr;
            memset(&arr, 0, sizeof arr);
            duckdb_error_data e = duckdb_data_chunk_to_arrow(st.opts, chunk, &arr);
            if (e && duckdb_error_data_has_error(e)) {
                vt_error_set(&err, VT_ERR_INTERNAL, "%s", duckdb_error_data_message(e));
                rc = 1;
            }
            if (e)
                duckdb_destroy_error_data(&e);
            for (int64_t off = 0; rc == 0 && off < arr.length; off += slice) {
                struct ArrowArray view = arr; /* shallow: same children, new window */
                view.offset = arr.offset + off;
                view.length = arr.length - off < slice ? arr.length - off : slice;
                view.null_count = 0;
                if (arrow_ipc_write_batch(st.writer, &view, &out, &err) != VT_ERR_OK)
                    rc = 1;
            }
            if (arr.release)
                arr.release(&arr);
        }
        duckdb_destroy_data_chunk(&chunk);
        if (rc == 0 && drain(f, &out) < 0)
            rc = 1;
    }
    if (rc == 0 && (arrow_duckdb_end(&st, &out) < 0 || drain(f, &out) < 0))
        rc = 1;
    if (rc)
        fprintf(stderr, "vt-arrow-dump: %s\n", err.code ? vt_error_message(&err) : "write failed");
    arrow_duckdb_release(&st);
    sb_release(&out);
    return rc;
}

/* One timed pass over a materialized result: pass 0 DuckDB's export alone,
 * 1 the same plus IPC, 2 arrow_duckdb_write_chunk. Returns seconds;
 * *out_bytes gets the IPC bytes. */
static double bench_pass(duckdb_connection con, const char *sql, int pass, uint64_t *out_rows,
                         uint64_t *out_bytes, double *out_ipc_s)
{
    bool ipc = pass == 1;
    duckdb_result res;
    if (duckdb_query(con, sql, &res) != DuckDBSuccess) {
        fprintf(stderr, "vt-arrow-dump: %s\n", duckdb_result_error(&res));
        exit(1);
    }
    struct vt_error err = {0};
    struct strbuf out;
    sb_init(&out, 0);
    struct arrow_duckdb_stream st;
    if (arrow_duckdb_begin(&st, &res, &out, &err) != VT_ERR_OK) {
        fprintf(stderr, "vt-arrow-dump: %s\n", vt_error_message(&err));
        exit(1);
    }
    uint64_t rows = 0, bytes = out.len;
    double ipc_s = 0;
    sb_reset(&out);
    double t0 = now_s();
    duckdb_data_chunk chunk;
    while ((chunk = duckdb_fetch_chunk(res)) != NULL) {
        if (pass == 2) {
            rows += duckdb_data_chunk_get_size(chunk);
            if (arrow_duckdb_write_chunk(&st, chunk, &out, &err) != VT_ERR_OK) {
                fprintf(stderr, "vt-arrow-dump: %s\n", vt_error_message(&err));
                exit(1);
            }
            bytes += out.len;
            sb_reset(&out);
            duckdb_destroy_data_chunk(&chunk);
            continue;
        }
        struct ArrowArray arr;
        memset(&arr, 0, sizeof arr);
        duckdb_error_data e = duckdb_data_chunk_to_arrow(st.opts, chunk, &arr);
        if (e)
            duckdb_destroy_error_data(&e);
        rows += (uint64_t)arr.length;
        if (ipc) {
            double ti = now_s();
            if (arrow_ipc_write_batch(st.writer, &arr, &out, &err) != VT_ERR_OK) {
                fprintf(stderr, "vt-arrow-dump: %s\n", vt_error_message(&err));
                exit(1);
            }
            bytes += out.len;
            sb_reset(&out); /* what the HTTP layer does after draining */
            ipc_s += now_s() - ti;
        }
        arr.release(&arr);
        duckdb_destroy_data_chunk(&chunk);
    }
    double t = now_s() - t0;
    arrow_duckdb_release(&st);
    sb_release(&out);
    duckdb_destroy_result(&res);
    *out_rows = rows;
    *out_bytes = bytes + 8;
    *out_ipc_s = ipc_s;
    return t;
}

static int bench(duckdb_connection con, const char *sql, int reps)
{
    double best_a = 1e30, best_b = 1e30, best_c = 1e30, ipc = 1e30, unused;
    uint64_t rows = 0, bytes = 0, dummy;
    for (int r = 0; r < reps; r++) {
        double ipc_s;
        double a = bench_pass(con, sql, 0, &rows, &dummy, &unused);
        double b = bench_pass(con, sql, 1, &rows, &bytes, &ipc_s);
        double c = bench_pass(con, sql, 2, &rows, &dummy, &unused);
        if (a < best_a)
            best_a = a;
        if (b < best_b)
            best_b = b;
        if (c < best_c)
            best_c = c;
        if (ipc_s < ipc)
            ipc = ipc_s;
    }
    printf("rows                         %llu\n", (unsigned long long)rows);
    printf("ipc stream bytes             %llu\n", (unsigned long long)bytes);
    printf("A duckdb_data_chunk_to_arrow %.3f s  %.1f MB/s (of IPC-equivalent bytes)\n", best_a,
           (double)bytes / best_a / 1e6);
    printf("B A + arrow_ipc_write_batch  %.3f s  %.1f MB/s\n", best_b, (double)bytes / best_b / 1e6);
    printf("IPC writing alone (timed)    %.3f s  %.1f MB/s\n", ipc,
           ipc > 0 ? (double)bytes / ipc / 1e6 : 0.0);
    printf("C arrow_duckdb_write_chunk   %.3f s  %.1f MB/s\n", best_c, (double)bytes / best_c / 1e6);
    printf("throughput ratio A/B         %.3f\n", best_a / best_b);
    printf("throughput ratio C/B         %.3f\n", best_b / best_c);
    return 0;
}

int main(int argc, char **argv)
{
    const char *outpath = NULL;
    int64_t slice = 0;
    int reps = 0;
    bool schema_only = false;
    enum arrow_duckdb_mode mode = ARROW_DUCKDB_DIRECT;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "-", 1) == 0; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            outpath = argv[++i];
        else if (strcmp(argv[i], "--slice") == 0 && i + 1 < argc)
            slice = atoll(argv[++i]);
        else if (strcmp(argv[i], "--bench") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--schema") == 0)
            schema_only = true;
        else if (strcmp(argv[i], "--export-only") == 0)
            mode = ARROW_DUCKDB_EXPORT_ONLY;
        else
            break;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: vt-arrow-dump [-o FILE] [--slice N] [--schema] [--export-only] [--bench REPS] SQL...\n");
        return 2;
    }
    duckdb_database db;
    duckdb_connection con;
    if (duckdb_open(NULL, &db) != DuckDBSuccess || duckdb_connect(db, &con) != DuckDBSuccess) {
        fprintf(stderr, "vt-arrow-dump: cannot open database\n");
        return 1;
    }
    int rc = 0;
    if (run_setup(con, argv + i, argc - i - 1) < 0) {
        rc = 1;
    } else if (reps > 0) {
        rc = bench(con, argv[argc - 1], reps);
    } else {
        duckdb_result res;
        if (duckdb_query(con, argv[argc - 1], &res) != DuckDBSuccess) {
            fprintf(stderr, "vt-arrow-dump: %s\n", duckdb_result_error(&res));
            rc = 1;
        } else if (schema_only) {
            duckdb_arrow_options opts = duckdb_result_get_arrow_options(&res);
            struct ArrowSchema s;
            struct vt_error err = {0};
            if (arrow_duckdb_result_schema(&res, opts, &s, &err) != VT_ERR_OK) {
                fprintf(stderr, "vt-arrow-dump: %s\n", vt_error_message(&err));
                rc = 1;
            } else {
                print_schema(&s, 0);
                s.release(&s);
            }
            duckdb_destroy_arrow_options(&opts);
        } else {
            FILE *f = outpath ? fopen(outpath, "wb") : stdout;
            if (!f) {
                perror(outpath);
                rc = 1;
            } else {
                rc = dump(&res, f, slice, mode);
                if (outpath && fclose(f) != 0)
                    rc = 1;
            }
        }
        duckdb_destroy_result(&res);
    }
    duckdb_disconnect(&con);
    duckdb_close(&db);
    return rc;
}
