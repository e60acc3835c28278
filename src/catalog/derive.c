/*
 * What is derived from a generation once its relation exists:
 *
 *  - during the build: the sample row of the schema endpoint (our JSON
 *    encoder, so it looks like every other response);
 *  - after publishing, on the builder pool: the index fast path (equality
 *    index + row store, src/index/). Building it takes a full scan and JSON
 *    encoding of every cell, so it does not delay publication; queries use
 *    DuckDB until the fast path is ready, then switch to it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog_internal.h"
#include "encode/json_rows.h"
#include "index/index.h"
#include "index/rowstore.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

static enum vt_err derive_sample(duckdb_connection con, struct cat_generation *gen,
                                 struct vt_error *err)
{
    /* A lazy generation samples its first file (the one row group of it
     * the build made present), not whatever file a parallel scan reads first. */
    char *first = source_lazy_first_relation(gen->priv->snapshot.lazy);
    struct strbuf sql;
    sb_init(&sql, 0);
    sb_addf(&sql, "SELECT * FROM %s LIMIT 1", first ? first : gen->relation);
    free(first);
    duckdb_result res;
    duckdb_state qs = sql.overflow ? DuckDBError : duckdb_query(con, sql.buf, &res);
    sb_release(&sql);
    if (sql.overflow)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    if (qs != DuckDBSuccess) {
        vt_error_set(err, VT_ERR_BUILD_FAILED, "sample row: %s", duckdb_result_error(&res));
        duckdb_destroy_result(&res);
        return VT_ERR_BUILD_FAILED;
    }
    char ebuf[256];
    struct json_rows *enc = json_rows_create_for_result(&res, ebuf, sizeof ebuf);
    duckdb_data_chunk chunk = enc ? duckdb_fetch_chunk(res) : NULL;
    if (chunk) {
        struct strbuf sb;
        sb_init(&sb, 0);
        if (json_rows_encode_range(enc, chunk, 0, 1, &sb) == 0 && sb.len > 0)
            gen->sample_json = sb_detach(&sb, NULL);
        sb_release(&sb);
        duckdb_destroy_data_chunk(&chunk);
    }
    json_rows_destroy(enc);
    duckdb_destroy_result(&res);
    return VT_ERR_OK;
}

enum vt_err cat_generation_derive(struct cat_catalog *cat, duckdb_connection con,
                                  struct cat_generation *gen,
                                  const struct vt_dataset_config *cfg, struct vt_error *err)
{
    (void)cat;
    (void)cfg;
    return derive_sample(con, gen, err);
}

const struct cat_fastpath *cat_generation_fastpath(const struct cat_generation *gen)
{
    return atomic_load(&gen->priv->fastpath);
}

bool cat_generation_is_indexed(const struct cat_generation *gen, size_t col)
{
    /* The spec's equality index only: sorted-key lookups on columns auto mode
     * left out for their cardinality are ours, not "indexed". */
    const struct cat_fastpath *fp = cat_generation_fastpath(gen);
    return fp && index_has_column(fp->index, col) && !index_column_sorted(fp->index, col);
}

void cat_fastpath_free(struct cat_fastpath *fp)
{
    if (!fp)
        return;
    index_destroy(fp->index);
    rowstore_destroy(fp->rows);
    free(fp);
}

static int add_row(void *ctx, const char *cells, const uint32_t *ends)
{
    return rowstore_builder_add_row(ctx, cells, ends);
}

/* One scan of the generation, feeding each chunk to `fn`. */
static bool scan(duckdb_connection con, const struct cat_generation *gen,
                 bool (*fn)(void *ctx, duckdb_result *res, duckdb_data_chunk chunk), void *ctx,
                 char *why, size_t whylen)
{
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT * FROM %s", gen->relation);
    duckdb_result res;
    bool ok = duckdb_query(con, sql, &res) == DuckDBSuccess;
    if (!ok)
        snprintf(why, whylen, "%s", duckdb_result_error(&res));
    while (ok) {
        duckdb_data_chunk chunk = duckdb_fetch_chunk(res);
        if (!chunk)
            break;
        ok = fn(ctx, &res, chunk);
        duckdb_destroy_data_chunk(&chunk);
        if (!ok)
            snprintf(why, whylen, "out of memory, too many rows or a type without JSON text");
    }
    duckdb_destroy_result(&res);
    return ok;
}

static bool feed_index(void *ctx, duckdb_result *res, duckdb_data_chunk chunk)
{
    (void)res;
    return index_builder_add_chunk(ctx, chunk) == 0;
}

struct rows_ctx {
    struct rowstore_builder *rb;
    struct json_rows *enc;
};

static bool feed_rows(void *ctx, duckdb_result *res, duckdb_data_chunk chunk)
{
    struct rows_ctx *rc = ctx;
    if (!rc->enc) {
        char ebuf[256];
        rc->enc = json_rows_create_for_result(res, ebuf, sizeof ebuf);
        if (!rc->enc)
            return false;
    }
    return json_rows_encode_cells(rc->enc, chunk, add_row, rc->rb) == 0;
}

/* Builds the index (one scan), then the row store (a second scan) only when
 * some indexed column keeps positions: with dense columns alone the index
 * answers counts, and rows come from DuckDB, which is faster for large hits. */
static struct cat_fastpath *build_fastpath(duckdb_connection con, struct cat_generation *gen,
                                           const struct vt_dataset_config *cfg, char *why,
                                           size_t whylen)
{
    why[0] = '\0';
    const char **names = calloc(gen->n_cols ? gen->n_cols : 1, sizeof *names);
    duckdb_type *types = calloc(gen->n_cols ? gen->n_cols : 1, sizeof *types);
    struct cat_fastpath *fp = calloc(1, sizeof *fp);
    if (!names || !types || !fp) {
        free(names);
        free(types);
        free(fp);
        return NULL;
    }
    for (size_t i = 0; i < gen->n_cols; i++) {
        names[i] = gen->cols[i].name;
        types[i] = gen->cols[i].type;
    }
    char warn[256];
    struct index_builder *ib =
        index_builder_create(gen->n_cols, names, types, cfg, warn, sizeof warn);
    if (warn[0])
        log_warn("dataset %s: %s", cfg->name, warn);
    if (ib && scan(con, gen, feed_index, ib, why, whylen))
        fp->index = index_builder_finish(ib);
    else
        index_builder_abort(ib);
    if (!fp->index) {
        if (!why[0])
            snprintf(why, whylen, "no column qualifies");
    } else if (index_has_positions(fp->index)) {
        struct rows_ctx rc = {.rb = rowstore_builder_create(gen->n_cols, names)};
        if (rc.rb && scan(con, gen, feed_rows, &rc, why, whylen))
            fp->rows = rowstore_builder_finish(rc.rb);
        else
            rowstore_builder_abort(rc.rb);
        json_rows_destroy(rc.enc);
        if (!fp->rows)
            log_warn("dataset %s: no row store (%s); the index answers counts only", cfg->name,
                     why);
    }
    free(types);
    free(names);
    if (!fp->index) {
        cat_fastpath_free(fp);
        return NULL;
    }
    fp->bytes = fp->index->bytes + (fp->rows ? rowstore_bytes(fp->rows) : 0);
    return fp;
}

struct fastpath_job {
    struct eng_job job;
    struct cat_generation *gen;     /* one reference */
    struct vt_dataset_config cfg;
};

static void fastpath_run(struct eng_job *job, duckdb_connection con)
{
    struct fastpath_job *fj = (struct fastpath_job *)job;
    struct cat_generation *gen = fj->gen;
    int64_t t0 = time_mono_ms();
    char why[256];
    struct cat_fastpath *fp = build_fastpath(con, gen, &fj->cfg, why, sizeof why);
    if (!fp) {
        if (why[0])
            log_info("dataset %s: no index fast path (%s)", fj->cfg.name, why);
        return;
    }
    struct strbuf cols;
    sb_init(&cols, 1024);
    for (size_t i = 0; i < gen->n_cols; i++)
        if (index_has_column(fp->index, i)) {
            if (cols.len)
                sb_adds(&cols, ", ");
            sb_addf(&cols, "%s (%zu keys, %s, %.1f MiB)", gen->cols[i].name,
                    index_column_keys(fp->index, i),
                    index_column_hashed(fp->index, i)  ? "sorted key hashes"
                    : index_column_sorted(fp->index, i) ? "sorted keys"
                    : index_column_dense(fp->index, i)  ? "equality index, counts only"
                                                        : "equality index",
                    index_column_bytes(fp->index, i) / 1048576.0);
        }
    log_info("dataset %s: index on %s; index %.1f MiB, row store %.1f MiB; built in %lld ms",
             fj->cfg.name, cols.buf ? cols.buf : "", fp->index->bytes / 1048576.0,
             fp->rows ? rowstore_bytes(fp->rows) / 1048576.0 : 0.0,
             (long long)(time_mono_ms() - t0));
    sb_release(&cols);
    atomic_store(&gen->priv->fastpath, fp);
}

static void fastpath_done(struct eng_job *job)
{
    struct fastpath_job *fj = (struct fastpath_job *)job;
    cat_generation_release(fj->gen);
    config_dataset_free(&fj->cfg);
    free(fj);
}

void cat_generation_start_fastpath(struct cat_catalog *cat, struct cat_generation *gen,
                                   const struct vt_dataset_config *cfg)
{
    if (gen->lazy || cfg->index_mode == CFG_INDEX_NONE)
        return;
    struct fastpath_job *fj = calloc(1, sizeof *fj);
    if (!fj)
        return;
    if (config_dataset_copy(&fj->cfg, cfg) != 0) {
        free(fj);
        return;
    }
    fj->job.run = fastpath_run;
    fj->job.done = fastpath_done;
    fj->gen = gen;
    atomic_fetch_add(&gen->priv->refs, 1);
    if (!eng_pool_submit(cat->builders, &fj->job))
        fastpath_done(&fj->job);
}
