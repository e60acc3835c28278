/*
 * What is derived from a generation once its relation exists:
 *
 *  - during the build: the sample row of the schema endpoint (our JSON
 *    encoder, so it looks like every other response), taken by the
 *    schema's own one-row query for a resident generation (build.c);
 *  - after publishing, on the builder pool: the index fast path (src/index/:
 *    equality index, key structures, row store). Building it takes a full
 *    scan, so it does not delay publication; queries use DuckDB until the
 *    fast path is ready, then switch to it. Its file goes to the catalog's
 *    index directory (the runtime directory's `index/`).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog_internal.h"
#include "encode/json_rows.h"
#include "index/index.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

void cat_generation_sample(struct cat_generation *gen, duckdb_result *res)
{
    gen->priv->sampled = true;
    char ebuf[256];
    struct json_rows *enc = json_rows_create_for_result(res, ebuf, sizeof ebuf);
    duckdb_data_chunk chunk = enc ? duckdb_fetch_chunk(*res) : NULL;
    if (chunk) {
        struct strbuf sb;
        sb_init(&sb, 0);
        if (json_rows_encode_range(enc, chunk, 0, 1, &sb) == 0 && sb.len > 0)
            gen->sample_json = sb_detach(&sb, NULL);
        sb_release(&sb);
        duckdb_destroy_data_chunk(&chunk);
    }
    json_rows_destroy(enc);
}

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
    cat_generation_sample(gen, &res);
    duckdb_destroy_result(&res);
    return VT_ERR_OK;
}

enum vt_err cat_generation_derive(struct cat_catalog *cat, duckdb_connection con,
                                  struct cat_generation *gen,
                                  const struct vt_dataset_config *cfg, struct vt_error *err)
{
    (void)cat;
    (void)cfg;
    return gen->priv->sampled ? VT_ERR_OK : derive_sample(con, gen, err);
}

const struct index_fastpath *cat_generation_fastpath(const struct cat_generation *gen)
{
    return atomic_load(&gen->priv->fastpath);
}

bool cat_generation_is_indexed(const struct cat_generation *gen, size_t col)
{
    /* The spec's equality index only: the key structures of columns auto
     * mode left out for their cardinality are ours, not "indexed". */
    const struct index_fastpath *fp = cat_generation_fastpath(gen);
    return fp && index_column_spec(index_fastpath_index(fp), col);
}

void cat_fastpath_free(struct index_fastpath *fp)
{
    index_fastpath_destroy(fp);
}

const char *cat_index_state_name(enum cat_index_state s)
{
    switch (s) {
    case CAT_INDEX_BUILDING: return "building";
    case CAT_INDEX_READY: return "ready";
    case CAT_INDEX_FAILED: return "failed";
    case CAT_INDEX_NONE: break;
    }
    return "none";
}

void cat_generation_index_status(const struct cat_generation *gen, struct cat_status *st)
{
    const struct index_fastpath *fp = cat_generation_fastpath(gen);
    st->index_state = (enum cat_index_state)atomic_load(&gen->priv->index_state);
    st->index_bytes = (int64_t)index_fastpath_memory(fp);
    st->index_disk_bytes = (int64_t)index_fastpath_disk(fp);
    st->row_store_bytes = (int64_t)index_fastpath_row_store_bytes(fp);
    st->sorted_bytes = (int64_t)index_fastpath_sorted_bytes(fp);
    st->json_pages_bytes = (int64_t)index_fastpath_pages_bytes(fp);
}

void cat_set_index_dir(struct cat_catalog *cat, const char *dir)
{
    cat->index_dir = dir;
}

/* The scan that feeds the builder: streamed chunk by chunk (a materialized
 * result would hold the whole table decompressed: +120 MiB of peak RSS on
 * the 1M-row bench table). */
static struct index_fastpath *build_fastpath(duckdb_connection con, struct cat_generation *gen,
                                             const struct vt_dataset_config *cfg,
                                             const char *dir, char *note, size_t notelen,
                                             char *why, size_t whylen)
{
    why[0] = '\0';
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT * FROM %s", gen->relation);
    duckdb_prepared_statement ps;
    if (duckdb_prepare(con, sql, &ps) != DuckDBSuccess) {
        snprintf(why, whylen, "%s", duckdb_prepare_error(ps));
        duckdb_destroy_prepare(&ps);
        return NULL;
    }
    size_t n = duckdb_prepared_statement_column_count(ps);
    const char **names = calloc(n ? n : 1, sizeof *names);
    duckdb_logical_type *types = calloc(n ? n : 1, sizeof *types);
    if (!names || !types) {
        free(names);
        free(types);
        duckdb_destroy_prepare(&ps);
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        names[i] = duckdb_prepared_statement_column_name(ps, i);
        types[i] = duckdb_prepared_statement_column_logical_type(ps, i);
    }
    /* A row store only where some type has no JSON text is impossible:
     * then lookups answer counts only. */
    bool rows = true;
    for (size_t i = 0; i < n; i++)
        rows = rows && json_type_supported(types[i]);
    char warn[256];
    struct index_build_options opt = {
        .cfg = cfg,
        .dir = dir,
        .rows = rows,
        .pages_bytes = rows ? (uint64_t)cfg->index_json_pages_mb << 20 : 0,
        .pages_gzip = cfg->index_json_pages_gzip,
    };
    struct index_builder *b = index_builder_create(n, names, types, &opt, warn, sizeof warn);
    for (size_t i = 0; i < n; i++)
        duckdb_free((void *)names[i]); /* DuckDB's copies; the builder made its own */
    free(names);
    free(types);
    if (warn[0])
        log_warn("dataset %s: %s", cfg->name, warn);
    if (!b) {
        duckdb_destroy_prepare(&ps);
        snprintf(why, whylen, "no column qualifies");
        return NULL;
    }
    duckdb_result res;
    bool ok = duckdb_execute_prepared_streaming(ps, &res) == DuckDBSuccess;
    if (!ok)
        snprintf(why, whylen, "%s", duckdb_result_error(&res));
    while (ok) {
        duckdb_data_chunk chunk = duckdb_fetch_chunk(res);
        if (!chunk)
            break;
        ok = index_builder_add_chunk(b, chunk) == 0;
        duckdb_destroy_data_chunk(&chunk);
        if (!ok)
            snprintf(why, whylen, "out of memory, too many rows, or the index file cannot be "
                                  "written");
    }
    if (ok && duckdb_result_error(&res)) {
        snprintf(why, whylen, "%s", duckdb_result_error(&res));
        ok = false;
    }
    duckdb_destroy_result(&res);
    duckdb_destroy_prepare(&ps);
    if (!ok) {
        index_builder_abort(b);
        return NULL;
    }
    return index_builder_finish(b, note, notelen, why, whylen);
}

struct fastpath_job {
    struct eng_job job;
    struct cat_generation *gen;     /* one reference */
    struct vt_dataset_config cfg;
    const char *dir;
};

static void fastpath_run(struct eng_job *job, duckdb_connection con)
{
    struct fastpath_job *fj = (struct fastpath_job *)job;
    struct cat_generation *gen = fj->gen;
    int64_t t0 = time_mono_ms();
    char why[256], note[512];
    struct index_fastpath *fp =
        build_fastpath(con, gen, &fj->cfg, fj->dir, note, sizeof note, why, sizeof why);
    /* The build's temporaries (a key id or value per row per column) are
     * freed by now; give the pages back (glibc keeps freed memory of large
     * arrays in its arenas otherwise: +100 MiB of idle RSS measured). */
    malloc_trim(0);
    if (getenv("VT_MALLOC_STATS"))
        malloc_stats();
    if (!fp) {
        atomic_store(&gen->priv->index_state,
                     strcmp(why, "no column qualifies") == 0 ? CAT_INDEX_NONE : CAT_INDEX_FAILED);
        if (why[0])
            log_info("dataset %s: no index fast path (%s)", fj->cfg.name, why);
        return;
    }
    if (note[0])
        log_warn("dataset %s: index %s", fj->cfg.name, note);
    struct strbuf cols;
    sb_init(&cols, 4096);
    index_fastpath_describe(fp, &cols);
    log_info("dataset %s: index on %s; %.1f MiB in memory, %.1f MiB in its files (row store "
             "%.1f MiB%s; pre-rendered pages %.1f MiB, %llu rows); built in %lld ms",
             fj->cfg.name, cols.buf ? cols.buf : "", index_fastpath_memory(fp) / 1048576.0,
             index_fastpath_disk(fp) / 1048576.0,
             index_fastpath_row_store_bytes(fp) / 1048576.0,
             index_fastpath_has_rows(fp) ? "" : ", none: counts only",
             index_fastpath_pages_bytes(fp) / 1048576.0,
             (unsigned long long)index_pages_rows(fp), (long long)(time_mono_ms() - t0));
    sb_release(&cols);
    atomic_store(&gen->priv->fastpath, fp);
    atomic_store(&gen->priv->index_state, CAT_INDEX_READY);
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
    fj->dir = cat->index_dir;
    atomic_fetch_add(&gen->priv->refs, 1);
    atomic_store(&gen->priv->index_state, CAT_INDEX_BUILDING);
    if (!eng_pool_submit(cat->builders, &fj->job)) {
        atomic_store(&gen->priv->index_state, CAT_INDEX_FAILED);
        fastpath_done(&fj->job);
    }
}
