/*
 * Builds (catalog.h, "the build"): turning a dataset's source into a new
 * generation on a builder worker's connection -- the source resolved to
 * files, a compressed in-memory database or a view for lazy data, the
 * schema read, rows counted, a query-kind dataset's SQL gated and bound over
 * its upstreams' pinned generations, a storage generation reused -- then
 * published (the dataset's pointer swapped) and the waiters told. The
 * catalog's registry and lifecycle are in catalog.c.
 */
#include "catalog/catalog.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog/catalog_internal.h"
#include "metrics/metrics.h"
#include "sql/sql.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

/* ---------------------------------------------------------------- build */

char *cat_error_text(const char *msg)
{
    /* last_error is capped at VT_LAST_ERROR_CHARS characters (UTF-8 aware). */
    size_t bytes = 0, chars = 0;
    while (msg[bytes] && chars < VT_LAST_ERROR_CHARS) {
        unsigned char c = (unsigned char)msg[bytes];
        size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        for (size_t k = 1; k < len; k++)
            if (!msg[bytes + k])
                len = k;
        bytes += len;
        chars++;
    }
    return strndup(msg, bytes);
}

/* Runs one statement of the build; on failure records DuckDB's message as
 * build_failed in err, frees the result and returns false. */
static bool run_build_sql(duckdb_connection con, const char *sql, duckdb_result *res,
                          struct vt_error *err)
{
    if (duckdb_query(con, sql, res) == DuckDBSuccess)
        return true;
    char text[VT_ERROR_MSG_MAX];
    vt_error_set(err, VT_ERR_BUILD_FAILED, "%s",
                 eng_error_text(duckdb_result_error(res), text, sizeof text));
    duckdb_destroy_result(res);
    return false;
}

/* Reads the schema of a generation's relation: DuckDB type ids and names
 * from a one-row query whose row is also the generation's sample (a resident
 * one; a lazy one samples its first file, cat_generation_derive) or from a
 * zero-row prepared statement (a lazy one), type text and nullability from
 * DESCRIBE. One query for the names, types and sample instead of two: the
 * statements after the CTAS are on the start's critical path. */
static enum vt_err read_schema(duckdb_connection con, struct cat_generation *gen,
                               struct vt_error *err)
{
    duckdb_prepared_statement ps = NULL;
    duckdb_result one;
    bool sampled = !gen->lazy;
    char sql[160];
    idx_t n;
    if (sampled) {
        snprintf(sql, sizeof sql, "SELECT * FROM %s LIMIT 1", gen->relation);
        if (!run_build_sql(con, sql, &one, err))
            return VT_ERR_BUILD_FAILED;
        n = duckdb_column_count(&one);
    } else {
        snprintf(sql, sizeof sql, "SELECT * FROM %s LIMIT 0", gen->relation);
        if (eng_prepare(con, sql, &ps, VT_ERR_BUILD_FAILED, err) != VT_ERR_OK)
            return VT_ERR_BUILD_FAILED;
        n = duckdb_prepared_statement_column_count(ps);
    }
    gen->cols = calloc(n ? n : 1, sizeof *gen->cols);
    if (!gen->cols) {
        if (sampled)
            duckdb_destroy_result(&one);
        else
            duckdb_destroy_prepare(&ps);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    }
    gen->n_cols = n;
    bool named = true; /* eng_type_text named every column's type */
    for (idx_t i = 0; i < n; i++) {
        duckdb_logical_type lt;
        if (sampled) {
            const char *name = duckdb_column_name(&one, i); /* the result's */
            gen->cols[i].name = strdup(name ? name : "");
            lt = duckdb_column_logical_type(&one, i);
        } else {
            /* Declared const, but DuckDB 1.4 returns a strdup'd copy that the
             * caller owns (LeakSanitizer showed it): free it with duckdb_free. */
            const char *name = duckdb_prepared_statement_column_name(ps, i);
            gen->cols[i].name = strdup(name ? name : "");
            duckdb_free((void *)name);
            lt = duckdb_prepared_statement_column_logical_type(ps, i);
        }
        gen->cols[i].type = duckdb_get_type_id(lt);
        gen->cols[i].logical = cat_logical_of(gen->cols[i].type);
        gen->cols[i].nullable = true;
        char text[64];
        if (named && eng_type_text(lt, text, sizeof text))
            gen->cols[i].type_sql = strdup(text);
        else
            named = false;
        duckdb_destroy_logical_type(&lt);
    }
    if (sampled) {
        cat_generation_sample(gen, &one);
        duckdb_destroy_result(&one);
    } else {
        duckdb_destroy_prepare(&ps);
    }

    /* The text of every type without another statement when eng_type_text
     * names them all: every relation is a CREATE TABLE|VIEW AS
     * (cat_create_relation), which declares no NOT NULL, so each column
     * stays nullable. Else type text and nullability from DESCRIBE, which
     * touches only this generation's database (information_schema would
     * open a transaction on every attached database and make a concurrent
     * CHECKPOINT fail). */
    if (named) {
        for (size_t i = 0; i < gen->n_cols; i++)
            if (!gen->cols[i].name || !gen->cols[i].type_sql)
                return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return VT_ERR_OK;
    }
    for (idx_t i = 0; i < n; i++) {
        free(gen->cols[i].type_sql);
        gen->cols[i].type_sql = NULL;
    }
    snprintf(sql, sizeof sql, "DESCRIBE %s", gen->relation);
    duckdb_result res;
    if (!run_build_sql(con, sql, &res, err))
        return VT_ERR_BUILD_FAILED;
    idx_t rows = duckdb_row_count(&res);
    for (idx_t i = 0; i < n; i++) {
        char *type_text = i < rows ? duckdb_value_varchar(&res, 1, i) : NULL;
        gen->cols[i].type_sql = strdup(type_text ? type_text : "UNKNOWN");
        duckdb_free(type_text);
        if (i < rows) {
            char *nullable = duckdb_value_varchar(&res, 2, i);
            gen->cols[i].nullable = !nullable || strcasecmp(nullable, "NO") != 0;
            duckdb_free(nullable);
        }
    }
    duckdb_destroy_result(&res);
    for (size_t i = 0; i < gen->n_cols; i++)
        if (!gen->cols[i].name || !gen->cols[i].type_sql)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    return VT_ERR_OK;
}

static enum vt_err count_rows(duckdb_connection con, struct cat_generation *gen,
                              struct vt_error *err)
{
    /* A table knows its rows from the CTAS that filled it. */
    if (gen->priv->rows_counted)
        return VT_ERR_OK;
    /* A lazy generation knows its rows from the footers it read. */
    if (gen->priv->snapshot.lazy) {
        gen->rows = source_lazy_rows(gen->priv->snapshot.lazy);
        return VT_ERR_OK;
    }
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", gen->relation);
    duckdb_result res;
    if (!run_build_sql(con, sql, &res, err))
        return VT_ERR_BUILD_FAILED;
    gen->rows = duckdb_value_int64(&res, 0, 0);
    duckdb_destroy_result(&res);
    return VT_ERR_OK;
}

/* Residency is decided before the source is resolved, because a resident
 * build of a remote source downloads files that a lazy one keeps in the
 * cache instead. The size comes from the log or listing, not a download. */
static enum vt_err decide_lazy(const struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                               const struct source_context *ctx, bool *out_lazy,
                               bool *out_access_denied, struct vt_error *err)
{
    *out_lazy = false;
    if (cfg->lazy || (cfg->materialize.set && cfg->materialize.residency == CFG_RESIDENCY_LAZY)) {
        *out_lazy = true;
        return VT_ERR_OK;
    }
    int64_t mb = cat->cfg->server.force_lazy_above_mb;
    if (mb <= 0)
        return VT_ERR_OK;
    int64_t bytes = 0;
    enum vt_err rc = source_measure(cfg, ctx, &bytes, out_access_denied, err);
    if (rc != VT_ERR_OK)
        return rc;
    if (bytes > mb * 1024 * 1024) {
        log_info("dataset %s: %lld bytes of files exceed server.force_lazy_above_mb=%lld: "
                 "serving it lazily",
                 cfg->name, (long long)bytes, (long long)mb);
        *out_lazy = true;
    }
    return VT_ERR_OK;
}

/* ------------------------------------------------- query-kind datasets */

enum vt_err cat_bind_upstreams(struct cat_catalog *cat, duckdb_connection con,
                               const struct vt_dataset_config *cfg, int64_t deadline_ms,
                               struct cat_upstreams *ups, struct vt_error *err)
{
    if (cfg->depends_on.len > sizeof ups->gens / sizeof ups->gens[0])
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "dataset %s depends on too many datasets",
                            cfg->name);
    for (size_t i = 0; i < cfg->depends_on.len; i++) {
        const char *name = cfg->depends_on.items[i];
        struct cat_dataset *up = cat_dataset_get(cat, name);
        struct vt_error uerr = {0};
        struct cat_generation *gen = up ? cat_dataset_acquire(up, deadline_ms, &uerr) : NULL;
        cat_dataset_put(up);
        if (!gen) {
            cat_unbind_upstreams(con, ups);
            if (!up)
                return vt_error_set(err, VT_ERR_DATASET_NOT_FOUND,
                                    "upstream dataset %s is not registered", name);
            return vt_error_set(err, uerr.code, "upstream %s", vt_error_message(&uerr));
        }
        ups->gens[ups->n] = gen;
        ups->names[ups->n] = strdup(name);
        ups->reads[ups->n] = NULL;
        ups->n++;
        /* The statement reads the whole view: a lazy S3 upstream's objects
         * are made local (and held) first. */
        if (cat_generation_read_all(gen, deadline_ms, &ups->reads[ups->n - 1], err) !=
            VT_ERR_OK) {
            cat_unbind_upstreams(con, ups);
            return err->code;
        }
        struct strbuf sql;
        sb_init(&sql, 0);
        sb_adds(&sql, "CREATE OR REPLACE TEMPORARY VIEW ");
        sb_add_sql_ident(&sql, name);
        sb_addf(&sql, " AS SELECT * FROM %s", gen->relation);
        enum vt_err rc = eng_exec(con, sql.buf, VT_ERR_BUILD_FAILED, err);
        sb_release(&sql);
        if (rc) {
            cat_unbind_upstreams(con, ups);
            return rc;
        }
    }
    return VT_ERR_OK;
}

void cat_unbind_upstreams(duckdb_connection con, struct cat_upstreams *ups)
{
    for (size_t i = 0; i < ups->n; i++) {
        struct strbuf sql;
        sb_init(&sql, 0);
        sb_adds(&sql, "DROP VIEW IF EXISTS temp.");
        sb_add_sql_ident(&sql, ups->names[i] ? ups->names[i] : "");
        struct vt_error ignored = {0};
        eng_exec(con, sql.buf, VT_ERR_INTERNAL, &ignored);
        sb_release(&sql);
        free(ups->names[i]);
        cat_generation_read_release(ups->reads[i]);
        ups->reads[i] = NULL;
        cat_generation_release(ups->gens[i]);
    }
    ups->n = 0;
}

/* The SELECT of a query dataset, with the dataset's `columns` projection and,
 * when sorted, materialize.sort_by. The statement is wrapped as written, on
 * lines of its own (a trailing -- comment stays a comment); trailing
 * semicolons are dropped (the gate let through one statement only). */
enum vt_err cat_query_select_sql(const struct vt_dataset_config *cfg, bool sorted,
                                 struct strbuf *sql, struct vt_error *err)
{
    if (!cfg->sql || !*cfg->sql)
        return vt_error_set(err, VT_ERR_BUILD_FAILED, "dataset %s has no sql", cfg->name);
    size_t len = strlen(cfg->sql);
    while (len && (cfg->sql[len - 1] == ';' || cfg->sql[len - 1] == ' ' ||
                   cfg->sql[len - 1] == '\n' || cfg->sql[len - 1] == '\t' ||
                   cfg->sql[len - 1] == '\r'))
        len--;
    sb_adds(sql, "SELECT ");
    if (cfg->columns.len == 0) {
        sb_adds(sql, "*");
    } else {
        for (size_t i = 0; i < cfg->columns.len; i++) {
            if (i)
                sb_adds(sql, ", ");
            sb_add_sql_ident(sql, cfg->columns.items[i]);
        }
    }
    sb_adds(sql, " FROM (\n");
    sb_add(sql, cfg->sql, len);
    sb_adds(sql, "\n) AS \"q\"");
    if (sorted && cfg->materialize.sort_by.len) {
        sb_adds(sql, " ORDER BY ");
        for (size_t i = 0; i < cfg->materialize.sort_by.len; i++) {
            if (i)
                sb_adds(sql, ", ");
            sb_add_sql_ident(sql, cfg->materialize.sort_by.items[i]);
        }
    }
    return sql->overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL) : VT_ERR_OK;
}

/* Each generation is its own in-memory database: dropping it (DETACH)
 * returns all its memory at once, and builds of different datasets do not
 * contend on one catalog. COMPRESS keeps resident tables compressed. */
enum vt_err cat_attach_generation(struct cat_catalog *cat, duckdb_connection con,
                                     struct cat_generation *gen, bool compress,
                                     struct vt_error *err)
{
    struct strbuf sql;
    sb_init(&sql, 0);
    sb_adds(&sql, "ATTACH ':memory:' AS ");
    sb_add_sql_ident(&sql, gen->priv->db_name);
    sb_adds(&sql, compress ? " (COMPRESS)" : "");
    pthread_mutex_lock(&cat->ddl_mu);
    enum vt_err rc = eng_exec(con, sql.buf, VT_ERR_BUILD_FAILED, err);
    pthread_mutex_unlock(&cat->ddl_mu);
    sb_release(&sql);
    return rc;
}

/* In-memory compression happens at checkpoint. A transaction of another
 * connection on this database (there should be none; it is new) makes it
 * fail: retry briefly rather than fail the build. */
enum vt_err cat_checkpoint_generation(duckdb_connection con, struct cat_generation *gen,
                                         struct vt_error *err)
{
    struct strbuf sql;
    sb_init(&sql, 0);
    sb_adds(&sql, "CHECKPOINT ");
    sb_add_sql_ident(&sql, gen->priv->db_name);
    enum vt_err rc;
    for (int attempt = 0;; attempt++) {
        struct vt_error cerr = {0};
        rc = eng_exec(con, sql.buf, VT_ERR_BUILD_FAILED, &cerr);
        if (!rc || attempt >= 50 || !strstr(cerr.msg, "Cannot CHECKPOINT")) {
            if (rc)
                vt_error_set(err, rc, "%s", cerr.msg);
            break;
        }
        struct timespec pause = {0, 20 * 1000000L};
        nanosleep(&pause, NULL);
    }
    sb_release(&sql);
    return rc;
}

/* The row count a CREATE TABLE AS answers with (one BIGINT "Count"), or -1. */
static int64_t ctas_count(duckdb_result *res)
{
    int64_t rows = -1;
    if (duckdb_column_count(res) != 1 || duckdb_column_type(res, 0) != DUCKDB_TYPE_BIGINT)
        return -1;
    duckdb_data_chunk ch = duckdb_fetch_chunk(*res);
    if (ch && duckdb_data_chunk_get_size(ch) == 1) {
        duckdb_vector v = duckdb_data_chunk_get_vector(ch, 0);
        uint64_t *valid = duckdb_vector_get_validity(v);
        if (!valid || duckdb_validity_row_is_valid(valid, 0))
            rows = ((const int64_t *)duckdb_vector_get_data(v))[0];
    }
    if (ch)
        duckdb_destroy_data_chunk(&ch);
    return rows;
}

/* CREATE TABLE|VIEW <relation> AS <select>. A table's rows are the CTAS's
 * own count: no count(*) after it (count_rows). */
enum vt_err cat_create_relation(duckdb_connection con, struct cat_generation *gen, bool view,
                                   const char *select, struct vt_error *err)
{
    struct strbuf sql;
    sb_init(&sql, 0);
    sb_addf(&sql, "CREATE %s %s AS %s", view ? "VIEW" : "TABLE", gen->relation, select);
    if (sql.overflow) {
        sb_release(&sql);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    }
    duckdb_result res;
    bool ok = run_build_sql(con, sql.buf, &res, err);
    sb_release(&sql);
    if (!ok)
        return VT_ERR_BUILD_FAILED;
    int64_t rows = view ? -1 : ctas_count(&res);
    duckdb_destroy_result(&res);
    if (rows >= 0) {
        gen->rows = rows;
        gen->priv->rows_counted = true;
    }
    return VT_ERR_OK;
}

void cat_set_generation_id(struct cat_generation *gen, const char *id)
{
    snprintf(gen->id, sizeof gen->id, "%s", id);
    snprintf(gen->priv->db_name, sizeof gen->priv->db_name, "g_%s", gen->id);
    snprintf(gen->relation, sizeof gen->relation, "\"%s\".\"data\"", gen->priv->db_name);
}

/* The build's job ran past its deadline (the watchdog interrupted DuckDB, or
 * is about to) or was cancelled (shutdown). */
static bool build_stopped(const struct eng_job *job)
{
    return job && (atomic_load(&job->timed_out) || atomic_load(&job->cancelled));
}

/* The test-only build gate (cat_test_build_gate); NULL in any real use. */
static const char *test_gate_dir;

void cat_test_build_gate(const char *dir)
{
    test_gate_dir = dir;
}

/* Waits while the test gate holds `dataset`'s builds, or until the build is
 * stopped (its deadline, shutdown). Returns at once unless a test set it. */
static void test_gate_wait(const char *dataset, const struct eng_job *job)
{
    if (!test_gate_dir)
        return;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", test_gate_dir, dataset);
    while (!build_stopped(job) && access(path, F_OK) == 0)
        usleep(10 * 1000);
}

/* Gate callback of a query dataset's build: the SQL may read exactly the
 * datasets of depends_on (inferred when it was registered). */
static bool in_depends_on(void *ctx, const char *name)
{
    const struct vt_dataset_config *cfg = ctx;
    return strvec_find(&cfg->depends_on, name) >= 0;
}

/* materialize.reuse_on_start: the newest complete storage generation of an
 * unchanged definition, served as it is. True when `gen` now is it. */
static bool reuse_storage(struct cat_catalog *cat, duckdb_connection con,
                          const struct vt_dataset_config *cfg, struct cat_generation *gen)
{
    struct cat_storage_write w;
    char id[27];
    int64_t created_us = 0, build_ms = 0;
    if (!cat_storage_find(cat, cfg, &w, id, &created_us, &build_ms)) {
        cat_storage_release(&w);
        return false;
    }
    cat_set_generation_id(gen, id);
    struct vt_error err = {0};
    struct strbuf read;
    sb_init(&read, 0);
    cat_storage_read_sql(&w, &read);
    enum vt_err rc = cat_attach_generation(cat, con, gen, false, &err);
    if (!rc && (rc = cat_create_relation(con, gen, true, read.buf, &err)) != VT_ERR_OK)
        cat_detach_database(cat, con, gen->priv->db_name);
    sb_release(&read);
    if (rc) {
        log_warn("dataset %s: cannot reuse storage generation %s (%s): rebuilding", cfg->name,
                 id, vt_error_message(&err));
        cat_storage_release(&w);
        char fresh[27];
        ulid_new(fresh);
        cat_set_generation_id(gen, fresh);
        return false;
    }
    gen->lazy = true;
    gen->priv->storage_dir = w.dir;
    w.dir = NULL;
    gen->priv->source_bytes = w.bytes;
    gen->published_at_us = created_us;
    gen->priv->build_ms = build_ms;
    cat_storage_release(&w);
    cat_storage_prune(cat, cfg->name, id);
    log_info("dataset %s: serving storage generation %s from disk (materialize.reuse_on_start)",
             cfg->name, id);
    return true;
}

/* The relation of a query dataset's generation: the SQL (checked by the gate
 * against depends_on) over the current generations of its upstreams, kept
 * in memory (residency "memory"), as Parquet files in the storage directory
 * ("lazy"), or by size ("auto": the rows are written as Parquet first, then
 * loaded into memory when the file is at most the threshold, else served
 * from it). Sets *out_reused when a stored generation was taken as is. */
static enum vt_err build_query(struct cat_catalog *cat, duckdb_connection con,
                               const struct vt_dataset_config *cfg, struct cat_generation *gen,
                               bool may_reuse, const struct eng_job *job, int64_t t0,
                               bool *out_reused, struct vt_error *err)
{
    *out_reused = false;
    enum cfg_residency residency = cfg->materialize.residency;
    if (cfg->lazy)
        residency = CFG_RESIDENCY_LAZY;
    if (may_reuse && cfg->materialize.reuse_on_start) {
        if (residency != CFG_RESIDENCY_MEMORY && reuse_storage(cat, con, cfg, gen)) {
            *out_reused = true;
            return VT_ERR_OK;
        }
        /* Nothing stored matches the definition any more: what is there is
         * stale (the startup sweep kept it for this check). */
        cat_storage_prune(cat, cfg->name, NULL);
    }
    struct sql_checked chk;
    struct vt_error gerr = {0};
    if (sql_gate_check(con, cfg->sql, in_depends_on, (void *)cfg, &chk, &gerr) != VT_ERR_OK)
        return vt_error_set(err, gerr.code, "the sql of %s is refused: %s", cfg->name,
                            vt_error_message(&gerr));
    sql_checked_release(&chk);
    struct cat_upstreams ups = {0};
    enum vt_err rc = cat_bind_upstreams(cat, con, cfg, 0, &ups, err);
    if (rc)
        return rc;
    struct strbuf select;
    sb_init(&select, 0);
    rc = cat_query_select_sql(cfg, true, &select, err);
    if (!rc && build_stopped(job))
        rc = vt_error_set(err, VT_ERR_TIMEOUT, "the build ran out of time");
    if (!rc && residency == CFG_RESIDENCY_MEMORY) {
        rc = cat_attach_generation(cat, con, gen, true, err);
        if (!rc && (rc = cat_create_relation(con, gen, false, select.buf, err)) == VT_ERR_OK)
            rc = cat_checkpoint_generation(con, gen, err);
        cat_unbind_upstreams(con, &ups);
        sb_release(&select);
        return rc;
    }
    struct cat_storage_write w = {0};
    if (!rc)
        rc = cat_storage_write_tmp(cat, con, cfg, gen->id, select.buf, &w, err);
    cat_unbind_upstreams(con, &ups);
    sb_release(&select);
    if (rc) {
        cat_storage_discard(&w);
        return rc;
    }
    int64_t mb = cat->cfg->server.force_lazy_above_mb;
    int64_t threshold = mb > 0 ? mb * 1024 * 1024 : CAT_AUTO_LAZY_ABOVE_BYTES;
    bool lazy = residency == CFG_RESIDENCY_LAZY || w.bytes > threshold;
    if (lazy && residency == CFG_RESIDENCY_AUTO)
        log_info("dataset %s: %lld bytes of Parquet exceed the %lld-byte threshold of residency "
                 "\"auto\": serving it from storage",
                 cfg->name, (long long)w.bytes, (long long)threshold);
    if (lazy)
        rc = cat_storage_commit(cat, cfg, gen->id, time_mono_ms() - t0, &w, err);
    struct strbuf read;
    sb_init(&read, 0);
    if (!rc) {
        cat_storage_read_sql(&w, &read);
        rc = cat_attach_generation(cat, con, gen, !lazy, err);
    }
    if (!rc)
        rc = cat_create_relation(con, gen, lazy, read.buf, err);
    if (!rc && !lazy)
        rc = cat_checkpoint_generation(con, gen, err);
    sb_release(&read);
    if (!rc && lazy) {
        gen->lazy = true;
        gen->priv->storage_dir = w.dir; /* from now on removed with the generation */
        w.dir = NULL;
        gen->priv->source_bytes = w.bytes;
        /* The time its manifest records: a reuse at the next start reports
         * the same last_refresh_at. */
        gen->published_at_us = w.created_us;
        cat_storage_release(&w);
    } else {
        /* Loaded into memory (or failed): the files are not needed. */
        cat_storage_discard(&w);
    }
    return rc;
}

/* Builds a new generation for `cfg` on `con`, reading no further than
 * `bounds` allows (deadline, cancel flag, confinement). Returns it with one
 * reference. may_reuse: a startup build, which may serve a stored generation
 * instead (materialize.reuse_on_start). */
static struct cat_generation *build_generation(struct cat_catalog *cat, duckdb_connection con,
                                               const struct vt_dataset_config *cfg,
                                               const struct source_context *bounds,
                                               bool may_reuse, const struct eng_job *job,
                                               bool *out_access_denied, struct vt_error *err)
{
    int64_t t0 = time_mono_ms();
    /* One allocation for both parts; cat_generation_free() frees it. */
    struct {
        struct cat_generation pub;
        struct cat_generation_private priv;
    } *both = calloc(1, sizeof *both);
    if (!both) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    struct cat_generation *gen = &both->pub;
    gen->priv = &both->priv;
    atomic_init(&gen->priv->refs, 1);
    gen->priv->delta_version = -1;
    gen->priv->catalog = cat;
    snprintf(gen->priv->dataset, sizeof gen->priv->dataset, "%s", cfg->name);
    pthread_mutex_init(&gen->priv->export_mu, NULL);
    pthread_cond_init(&gen->priv->export_cv, NULL);
    char id[27];
    ulid_new(id);
    cat_set_generation_id(gen, id);

    bool reused = false;
    enum vt_err rc;
    /* A reader imports what the writer published instead (shared.c). */
    struct cat_import imp = {0};
    bool imported = cat->hooks.import != NULL;
    if (imported) {
        if (cat->hooks.import(cat->hooks.ctx, job, cfg, &imp, err) != VT_ERR_OK) {
            cat_import_release(&imp);
            cat_generation_free(gen);
            return NULL;
        }
        cat_set_generation_id(gen, imp.id);
        if (imp.lazy_source)
            cfg = imp.lazy_source; /* the shared files, read like any lazy S3 source */
    }
    if (imported && !imp.lazy_source) {
        if (cat_import_files(cat, con, gen, &imp, err) != VT_ERR_OK) {
            cat_detach_database(cat, con, gen->priv->db_name);
            cat_import_release(&imp);
            cat_generation_free(gen);
            return NULL;
        }
    } else if (cfg->kind == CFG_SOURCE_QUERY) {
        rc = build_query(cat, con, cfg, gen, may_reuse, job, t0, &reused, err);
        if (rc) {
            cat_detach_database(cat, con, gen->priv->db_name);
            cat_generation_free(gen);
            return NULL;
        }
    } else {
        struct source_context ctx = {
            .cache_dir = cat->cache_dir,
            .temp_dir = cat->temp_dir,
            .cache_max_bytes = cat->cfg->server.s3_cache_mb * 1024 * 1024,
            .list_cache = cat->cfg->datafusion.list_files_cache,
            .list_cache_max_bytes = cat->cfg->datafusion.list_files_cache_mb * 1024 * 1024,
            .list_cache_ttl_secs = cat->cfg->datafusion.list_files_cache_ttl_secs,
            .db = cat->db,
            .con = con,
            .pin_name = gen->id,
            .policy = bounds->policy,
            .extra_root = bounds->extra_root,
            .deadline_ms = bounds->deadline_ms,
            .cancel = bounds->cancel,
        };
        if (decide_lazy(cat, cfg, &ctx, &gen->lazy, out_access_denied, err) != VT_ERR_OK) {
            cat_import_release(&imp);
            cat_generation_free(gen);
            return NULL;
        }
        ctx.for_lazy = gen->lazy;
        if (source_resolve(cfg, &ctx, &gen->priv->snapshot, out_access_denied, err)) {
            cat_import_release(&imp);
            cat_generation_free(gen);
            return NULL;
        }
        gen->priv->source_bytes = gen->priv->snapshot.total_bytes;
        if (cfg->kind == CFG_SOURCE_DELTA && gen->priv->snapshot.version)
            gen->priv->delta_version = strtoll(gen->priv->snapshot.version, NULL, 10);
        if (gen->priv->snapshot.version)
            gen->priv->source_version = strdup(gen->priv->snapshot.version);
        if (cat_attach_generation(cat, con, gen, !gen->lazy, err) != VT_ERR_OK) {
            cat_import_release(&imp);
            cat_generation_free(gen);
            return NULL;
        }
        struct strbuf sql;
        sb_init(&sql, 0);
        rc = source_select_sql(&gen->priv->snapshot, &cfg->columns, &sql, err);
        if (!rc)
            rc = cat_create_relation(con, gen, gen->lazy, sql.buf, err);
        sb_release(&sql);
        if (!rc && !gen->lazy)
            rc = cat_checkpoint_generation(con, gen, err);
        if (rc) {
            source_snapshot_name_files(&gen->priv->snapshot, err);
            cat_detach_database(cat, con, gen->priv->db_name);
            cat_import_release(&imp);
            cat_generation_free(gen);
            return NULL;
        }
    }
    rc = count_rows(con, gen, err);
    /* An empty source is a failure (the spec's startup rule); a query that
     * selects no rows is a valid, empty dataset. */
    if (!rc && gen->rows == 0 && cfg->kind != CFG_SOURCE_QUERY)
        rc = vt_error_set(err, VT_ERR_SOURCE_EMPTY, "source of %s has zero rows", cfg->name);
    if (!rc)
        rc = read_schema(con, gen, err);
    if (!rc)
        rc = cat_generation_derive(cat, con, gen, cfg, err);
    if (rc)
        source_snapshot_name_files(&gen->priv->snapshot, err);
    /* A resident generation has its rows: the snapshot and the files
     * downloaded for it go now. A lazy one keeps them (its view reads them),
     * without what only the build needed held. */
    if (!gen->lazy)
        source_snapshot_release(&gen->priv->snapshot);
    else
        source_snapshot_settle(&gen->priv->snapshot);
    if (rc) {
        cat_detach_database(cat, con, gen->priv->db_name);
        cat_import_release(&imp);
        cat_generation_free(gen);
        return NULL;
    }
    if (imported) {
        /* The writer's times and its Parquet bytes, so that every replica
         * reports and serves the same. */
        gen->priv->build_ms = imp.build_ms;
        gen->published_at_us = imp.published_at_us;
        if (imp.export_file) {
            struct stat st;
            if (stat(imp.export_file, &st) == 0)
                cat_generation_set_export(gen, imp.export_file, (uint64_t)st.st_size);
            free(imp.export_file);
            imp.export_file = NULL;
        }
        gen->priv->imported = true;
        gen->priv->imported_source = imp.refresh_source;
        gen->priv->export_remote = imp.export_remote;
        imp.export_remote = NULL;
        cat_import_release(&imp);
    } else if (!reused) {
        gen->priv->build_ms = time_mono_ms() - t0;
        if (!gen->published_at_us)
            gen->published_at_us = time_wall_us();
    }
    return gen;
}

/* Publishes `gen` as the current generation of `ds` (atomic for readers). */
static void publish(struct cat_dataset *ds, struct cat_generation *gen,
                    enum cat_refresh_source source)
{
    pthread_mutex_lock(&ds->mu);
    struct cat_generation *old = ds->current;
    ds->current = gen;
    /* The replaced generation stays readable for a while (?generation=),
     * when the cluster asks for it; the one before it goes now. */
    int64_t keep = ds->catalog->hooks.keep_previous_ms;
    if (keep > 0 && old) {
        struct cat_generation *older = ds->previous;
        ds->previous = old;
        ds->previous_until_ms = time_mono_ms() + keep;
        old = older;
    }
    ds->state = CAT_PUBLISHED;
    ds->last_refresh_at_us = gen->published_at_us;
    ds->last_refresh_duration_ms = gen->priv->build_ms;
    ds->refresh_source = gen->priv->imported ? gen->priv->imported_source : source;
    ds->consecutive_failures = 0;
    free(ds->last_error);
    ds->last_error = NULL;
    pthread_cond_broadcast(&ds->built_cv);
    pthread_mutex_unlock(&ds->mu);
    cat_generation_release(old);
}

struct cat_build_result *cat_build_result_new(void)
{
    struct cat_build_result *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    atomic_init(&r->refs, 1);
    return r;
}

void cat_build_result_put(struct cat_build_result *r)
{
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

bool cat_build_result_wait(struct cat_build_result *r, int64_t deadline_ms)
{
    pthread_mutex_lock(&r->mu);
    while (!r->finished)
        if (!time_cond_wait(&r->cv, &r->mu, deadline_ms))
            break;
    bool finished = r->finished;
    pthread_mutex_unlock(&r->mu);
    return finished;
}

void cat_build_result_complete(struct cat_build_result *r, bool ok, int64_t rows,
                               int64_t columns, int64_t elapsed_ms, const struct vt_error *err)
{
    pthread_mutex_lock(&r->mu);
    r->ok = ok;
    r->rows = rows;
    r->columns = columns;
    r->elapsed_ms = elapsed_ms;
    if (err)
        r->err = *err;
    r->finished = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

struct build_job {
    struct eng_job job;
    struct cat_catalog *cat;
    struct cat_dataset *ds;
    enum cat_refresh_source source;
    struct cat_build_result *result; /* may be NULL; one reference */
    bool unregister_on_failure;
    int64_t deadline_ms;        /* the caller's (monotonic; 0 = none) */
    char request_id[VT_MAX_REQUEST_ID_BYTES + 1]; /* the request that asked for it, or "" */
};

static void build_run(struct eng_job *job, duckdb_connection con)
{
    struct build_job *bj = (struct build_job *)job;
    struct cat_dataset *ds = bj->ds;
    struct cat_catalog *cat = bj->cat;
    bool startup = bj->source == CAT_REFRESH_STARTUP;
    /* The build's log lines carry the id of the request that asked for it
     * (reload, registration), so the request can be followed into them. */
    log_set_request_id(bj->request_id[0] ? bj->request_id : NULL);

    pthread_mutex_lock(&ds->mu);
    ds->state = CAT_BUILDING; /* already, since it was queued */
    ds->building = true;
    ds->build_job = job;
    if (!ds->registered && !startup)
        atomic_store(&job->cancelled, true); /* deleted while it was queued */
    struct vt_dataset_config cfg;
    int copied = config_dataset_copy(&cfg, &ds->cfg);
    pthread_mutex_unlock(&ds->mu);

    bool from_config = ds->from_config;
    struct vt_error err = {0};
    bool access_denied = false;
    struct cat_generation *gen = NULL;
    int64_t t0 = time_mono_ms();
    /* Every build has its own deadline: refresh.timeout (a query dataset's
     * SQL is the user's: a runaway join or recursion must end), or the
     * caller's own when that comes first (a synchronous POST /queries). The
     * watchdog interrupts its DuckDB work then; listings and S3 requests stop
     * by themselves; shutdown cancels it through job->cancelled. A dataset of
     * the config file may read its own location besides the roots. */
    int64_t timeout = copied == 0 && cfg.refresh.timeout_ms > 0 ? cfg.refresh.timeout_ms
                                                                 : VT_BUILD_DEFAULT_TIMEOUT_MS;
    int64_t deadline = t0 + timeout;
    bool by_request = bj->deadline_ms > 0 && bj->deadline_ms < deadline;
    if (by_request)
        deadline = bj->deadline_ms;
    atomic_store(&job->deadline_ms, deadline);
    if (copied == 0)
        test_gate_wait(cfg.name, job);
    if (copied != 0) {
        vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
    } else if (!build_stopped(job)) { /* still queued at the caller's deadline: stopped */
        char *extra = from_config ? source_policy_extra_root(cfg.location) : NULL;
        struct source_context bounds = {.policy = cat->policy, .extra_root = extra,
                                        .deadline_ms = deadline, .cancel = &job->cancelled};
        gen = build_generation(cat, con, &cfg, &bounds, startup, job, &access_denied, &err);
        free(extra);
    }
    /* A writer publishes the generation to the shared storage before it
     * serves it: a failure fails the build, and every replica keeps the
     * same previous generation. */
    if (gen && copied == 0 && cat->hooks.publish &&
        cat->hooks.publish(cat->hooks.ctx, con, job, &cfg, gen, bj->source, &err) != VT_ERR_OK) {
        cat_generation_release(gen);
        gen = NULL;
    }
    atomic_store(&job->deadline_ms, 0);
    if (!gen && copied == 0 && build_stopped(job)) {
        /* Whatever the interrupted step said (DuckDB says "Interrupted"),
         * the reason is the deadline or the cancellation. */
        char d[64];
        config_format_duration(timeout, d);
        vt_error_clear(&err);
        pthread_mutex_lock(&ds->mu);
        bool deleted = !ds->registered;
        pthread_mutex_unlock(&ds->mu);
        if (atomic_load(&job->cancelled) && deleted)
            vt_error_set(&err, VT_ERR_TIMEOUT, "build of %s cancelled: the dataset was deleted",
                         cfg.name);
        else if (atomic_load(&job->cancelled))
            vt_error_set(&err, VT_ERR_TIMEOUT, "build of %s cancelled (the server is stopping)",
                         cfg.name);
        else if (by_request)
            vt_error_set(&err, VT_ERR_TIMEOUT, "build of %s stopped at the request's deadline",
                         cfg.name);
        else
            vt_error_set(&err, VT_ERR_TIMEOUT,
                         "build of %s stopped at its deadline (refresh.timeout = %s)", cfg.name,
                         d);
    }
    if (copied == 0)
        config_dataset_free(&cfg);

    bool skipped = false;
    int64_t rows = 0, columns = 0;
    if (gen) {
        if (gen->priv->snapshot.lazy)
            log_info("dataset %s: lazy metadata of %zu bytes (%zu files, %zu footers read, the "
                     "others' statistics from the table's log)",
                     ds->cfg.name, source_lazy_bytes(gen->priv->snapshot.lazy),
                     source_lazy_file_count(gen->priv->snapshot.lazy),
                     source_lazy_footers_read(gen->priv->snapshot.lazy));
        log_info("dataset %s published: %lld rows, %zu columns, %s, %lld ms", ds->cfg.name,
                 (long long)gen->rows, gen->n_cols, gen->lazy ? "lazy" : "resident",
                 (long long)gen->priv->build_ms);
        rows = gen->rows;
        columns = (int64_t)gen->n_cols;
        publish(ds, gen, bj->source);
        pthread_mutex_lock(&ds->mu);
        if (ds->current == gen)
            cat_generation_start_fastpath(cat, gen, &ds->cfg);
        pthread_mutex_unlock(&ds->mu);
    } else {
        const char *msg = vt_error_message(&err);
        if (startup && !ds->current &&
            (err.code == VT_ERR_SOURCE_EMPTY || access_denied)) {
            /* The spec's startup rule: an empty source or access denied is a
             * warning and a skip, never a startup failure. */
            log_warn("dataset %s skipped: %s", ds->cfg.name, msg);
            skipped = true;
        } else {
            log_error("dataset %s: build failed: %s", ds->cfg.name, msg);
        }
        pthread_mutex_lock(&ds->mu);
        /* A failed rebuild leaves the previous generation serving: the
         * dataset is published again, with the error and the failure count
         * saying the rebuild failed. Without a generation it failed. */
        ds->state = ds->current ? CAT_PUBLISHED : CAT_FAILED;
        ds->consecutive_failures++;
        free(ds->last_error);
        ds->last_error = cat_error_text(msg);
        pthread_cond_broadcast(&ds->built_cv);
        pthread_mutex_unlock(&ds->mu);
    }
    int64_t build_ms = time_mono_ms() - t0;
    metrics_refresh_observe((int)bj->source, gen != NULL, build_ms);
    pthread_mutex_lock(&ds->mu);
    if ((unsigned)bj->source < 5)
        ds->builds[bj->source][gen ? 0 : 1]++;
    ds->building = false;
    ds->build_job = NULL;
    ds->build_queued = false;
    pthread_cond_broadcast(&ds->built_cv);
    pthread_mutex_unlock(&ds->mu);
    if (skipped || (!gen && bj->unregister_on_failure))
        cat_unregister(cat, ds);
    if (bj->result)
        cat_build_result_complete(bj->result, gen != NULL, rows, columns, build_ms, &err);
    if (bj->source == CAT_REFRESH_STARTUP)
        cat_startup_done(cat, bj->ds);
    if (!skipped && !cat->hooks.no_builds)
        cat_scheduler_build_finished(cat->sched, ds, gen != NULL);
    log_set_request_id(NULL);
}

void cat_startup_done(struct cat_catalog *cat, struct cat_dataset *ds)
{
    pthread_mutex_lock(&cat->state_mu);
    if (ds->startup_counted) {
        ds->startup_counted = false;
        cat->startup_pending--;
    }
    void (*listener)(void *) = cat->ready_listener;
    void *ctx = cat->ready_listener_ctx;
    pthread_mutex_unlock(&cat->state_mu);
    if (listener)
        listener(ctx);
}

void cat_set_ready_listener(struct cat_catalog *cat, void (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&cat->state_mu);
    cat->ready_listener = fn;
    cat->ready_listener_ctx = ctx;
    pthread_mutex_unlock(&cat->state_mu);
}

static void build_done(struct eng_job *job)
{
    struct build_job *bj = (struct build_job *)job;
    cat_build_result_put(bj->result);
    cat_dataset_put(bj->ds);
    free(bj);
}

void cat_mark_building(struct cat_dataset *ds)
{
    ds->build_queued = true;
    if (ds->state != CAT_BUILDING)
        ds->state_before_build = ds->state;
    ds->state = CAT_BUILDING;
}

void cat_unmark_building(struct cat_dataset *ds)
{
    ds->build_queued = false;
    if (!ds->building)
        ds->state = ds->current ? CAT_PUBLISHED : ds->state_before_build;
}

bool cat_build_start(struct cat_catalog *cat, struct cat_dataset *ds,
                     const struct cat_build_opts *o)
{
    if (!o->reserved) {
        pthread_mutex_lock(&ds->mu);
        if (ds->build_queued) {
            pthread_mutex_unlock(&ds->mu);
            return false;
        }
        cat_mark_building(ds);
        pthread_mutex_unlock(&ds->mu);
    }
    struct build_job *bj = calloc(1, sizeof *bj);
    if (bj) {
        bj->job.run = build_run;
        bj->job.done = build_done;
        bj->cat = cat;
        bj->ds = ds;
        bj->source = o->source;
        bj->result = o->result;
        bj->unregister_on_failure = o->unregister_on_failure;
        bj->deadline_ms = o->deadline_ms;
        const char *rid = log_request_id();
        if (rid)
            snprintf(bj->request_id, sizeof bj->request_id, "%s", rid);
        /* A build still queued at its caller's deadline starts timed out. */
        atomic_store(&bj->job.deadline_ms, o->deadline_ms);
        if (o->result)
            atomic_fetch_add(&o->result->refs, 1);
        atomic_fetch_add(&ds->refs, 1);
        if (eng_pool_submit(cat->builders, &bj->job))
            return true;
        cat_build_result_put(o->result);
        cat_dataset_put(ds);
        free(bj);
    }
    pthread_mutex_lock(&ds->mu);
    cat_unmark_building(ds);
    pthread_mutex_unlock(&ds->mu);
    return false;
}

bool cat_build_reserved(struct cat_catalog *cat, struct cat_dataset *ds,
                        enum cat_refresh_source source, struct cat_build_result *result,
                        bool unregister_on_failure)
{
    struct cat_build_opts o = {.source = source, .result = result,
                               .unregister_on_failure = unregister_on_failure, .reserved = true};
    return cat_build_start(cat, ds, &o);
}

bool cat_build_async(struct cat_catalog *cat, struct cat_dataset *ds,
                     enum cat_refresh_source source, struct cat_build_result *result,
                     bool unregister_on_failure)
{
    struct cat_build_opts o = {.source = source, .result = result,
                               .unregister_on_failure = unregister_on_failure};
    return cat_build_start(cat, ds, &o);
}

