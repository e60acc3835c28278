/*
 * The catalog (see catalog.h): datasets, their states, and the build that
 * turns a source into a published generation.
 *
 * Locking, outermost first:
 *   cat->lock (rwlock)   the dataset list; readers look up, writers register
 *   ds->mu               one dataset's state, current generation and status
 *   cat->ddl_mu          ATTACH/DETACH of generation databases
 * Generation refcounts are atomics; the last release hands the generation to
 * the janitor pool, which detaches its database on its own connection.
 */
#include "catalog/catalog.h"

#include <errno.h>
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

/* ---------------------------------------------------------------- names */

const char *cat_state_name(enum cat_state s)
{
    switch (s) {
    case CAT_PENDING: return "pending";
    case CAT_BUILDING: return "building";
    case CAT_PUBLISHED: return "published";
    case CAT_FAILED: return "failed";
    }
    return "unknown";
}

const char *cat_refresh_source_name(enum cat_refresh_source s)
{
    switch (s) {
    case CAT_REFRESH_NONE: return NULL;
    case CAT_REFRESH_STARTUP: return "startup";
    case CAT_REFRESH_MANUAL: return "manual";
    case CAT_REFRESH_SCHEDULE: return "schedule";
    case CAT_REFRESH_CASCADE: return "cascade";
    }
    return NULL;
}

const char *cat_logical_name(enum cat_logical l)
{
    static const char *names[] = {"bool", "int", "float", "decimal", "string", "date", "time",
                                  "timestamp", "binary", "list", "struct", "other"};
    return (unsigned)l <= CAT_LOGICAL_OTHER ? names[l] : "other";
}

enum cat_logical cat_logical_of(duckdb_type t)
{
    switch (t) {
    case DUCKDB_TYPE_BOOLEAN:
        return CAT_LOGICAL_BOOL;
    case DUCKDB_TYPE_TINYINT: case DUCKDB_TYPE_SMALLINT: case DUCKDB_TYPE_INTEGER:
    case DUCKDB_TYPE_BIGINT: case DUCKDB_TYPE_UTINYINT: case DUCKDB_TYPE_USMALLINT:
    case DUCKDB_TYPE_UINTEGER: case DUCKDB_TYPE_UBIGINT: case DUCKDB_TYPE_HUGEINT:
    case DUCKDB_TYPE_UHUGEINT: case DUCKDB_TYPE_BIGNUM:
        return CAT_LOGICAL_INT;
    case DUCKDB_TYPE_FLOAT: case DUCKDB_TYPE_DOUBLE:
        return CAT_LOGICAL_FLOAT;
    case DUCKDB_TYPE_DECIMAL:
        return CAT_LOGICAL_DECIMAL;
    case DUCKDB_TYPE_VARCHAR: case DUCKDB_TYPE_ENUM: case DUCKDB_TYPE_UUID:
        return CAT_LOGICAL_STRING;
    case DUCKDB_TYPE_DATE:
        return CAT_LOGICAL_DATE;
    case DUCKDB_TYPE_TIME: case DUCKDB_TYPE_TIME_TZ: case DUCKDB_TYPE_TIME_NS:
        return CAT_LOGICAL_TIME;
    case DUCKDB_TYPE_TIMESTAMP: case DUCKDB_TYPE_TIMESTAMP_S: case DUCKDB_TYPE_TIMESTAMP_MS:
    case DUCKDB_TYPE_TIMESTAMP_NS: case DUCKDB_TYPE_TIMESTAMP_TZ:
        return CAT_LOGICAL_TIMESTAMP;
    case DUCKDB_TYPE_BLOB: case DUCKDB_TYPE_BIT:
        return CAT_LOGICAL_BINARY;
    case DUCKDB_TYPE_LIST: case DUCKDB_TYPE_ARRAY:
        return CAT_LOGICAL_LIST;
    case DUCKDB_TYPE_STRUCT: case DUCKDB_TYPE_MAP: case DUCKDB_TYPE_UNION:
        return CAT_LOGICAL_STRUCT;
    default:
        return CAT_LOGICAL_OTHER;
    }
}

/* ---------------------------------------------------------- generations */

static void generation_free(struct cat_generation *gen)
{
    cat_fastpath_free(atomic_load(&gen->priv->fastpath));
    cat_export_discard(gen);
    pthread_mutex_destroy(&gen->priv->export_mu);
    pthread_cond_destroy(&gen->priv->export_cv);
    for (size_t i = 0; i < gen->n_cols; i++) {
        free(gen->cols[i].name);
        free(gen->cols[i].type_sql);
    }
    free(gen->cols);
    free(gen->sample_json);
    source_snapshot_release(&gen->priv->snapshot);
    /* A storage generation's files go with it, except at shutdown (the next
     * start may reuse them: materialize.reuse_on_start). */
    if (gen->priv->storage_dir && !atomic_load(&gen->priv->catalog->keep_storage)) {
        log_debug("generation %s: removing %s", gen->id, gen->priv->storage_dir);
        cat_storage_remove_dir(gen->priv->storage_dir);
    }
    free(gen->priv->storage_dir);
    free(gen->priv->source_version);
    free(gen->priv->export_remote);
    free(gen);
}

struct drop_job {
    struct eng_job job;
    struct cat_generation *gen;
};

static atomic_uint_fast64_t generations_dropped;

uint64_t cat_generations_dropped(void)
{
    return atomic_load(&generations_dropped);
}

static void drop_run(struct eng_job *job, duckdb_connection con)
{
    struct drop_job *dj = (struct drop_job *)job;
    struct cat_generation *gen = dj->gen;
    struct cat_catalog *cat = gen->priv->catalog;
    cat_detach_database(cat, con, gen->priv->db_name);
    atomic_fetch_add(&generations_dropped, 1);
    log_debug("generation %s (%s) dropped", gen->id, gen->priv->db_name);
    generation_free(gen);
}

static void drop_done(struct eng_job *job)
{
    free(job);
}

void cat_generation_release(struct cat_generation *gen)
{
    if (!gen)
        return;
    if (atomic_fetch_sub(&gen->priv->refs, 1) != 1)
        return;
    struct cat_catalog *cat = gen->priv->catalog;
    struct drop_job *dj = calloc(1, sizeof *dj);
    if (dj) {
        dj->job.run = drop_run;
        dj->job.done = drop_done;
        dj->gen = gen;
        if (eng_pool_submit(cat->janitor, &dj->job))
            return;
        free(dj);
    }
    /* The janitor is gone (shutdown): the database closes with the process. */
    generation_free(gen);
}

void cat_detach_database(struct cat_catalog *cat, duckdb_connection con, const char *db_name)
{
    struct strbuf sql;
    sb_init(&sql, 0);
    sb_adds(&sql, "DETACH DATABASE IF EXISTS ");
    sb_add_sql_ident(&sql, db_name);
    struct vt_error err = {0};
    pthread_mutex_lock(&cat->ddl_mu);
    if (eng_exec(con, sql.buf, VT_ERR_INTERNAL, &err) != VT_ERR_OK)
        log_warn("cannot detach %s: %s", db_name, vt_error_message(&err));
    pthread_mutex_unlock(&cat->ddl_mu);
    sb_release(&sql);
}

/* ------------------------------------------------------------- datasets */

struct cat_dataset *cat_dataset_new(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                                    bool from_config)
{
    struct cat_dataset *ds = calloc(1, sizeof *ds);
    if (!ds)
        return NULL;
    if (config_dataset_copy(&ds->cfg, cfg) != 0) {
        free(ds);
        return NULL;
    }
    atomic_init(&ds->refs, 1);
    ds->catalog = cat;
    ds->from_config = from_config;
    ds->state = CAT_PENDING;
    ds->last_refresh_duration_ms = -1;
    pthread_mutex_init(&ds->mu, NULL);
    pthread_cond_init(&ds->built_cv, NULL);
    return ds;
}

static void dataset_free(struct cat_dataset *ds)
{
    cat_generation_release(ds->current);
    cat_generation_release(ds->previous);
    config_dataset_free(&ds->cfg);
    free(ds->last_error);
    pthread_mutex_destroy(&ds->mu);
    pthread_cond_destroy(&ds->built_cv);
    free(ds);
}

void cat_dataset_put(struct cat_dataset *ds)
{
    if (ds && atomic_fetch_sub(&ds->refs, 1) == 1)
        dataset_free(ds);
}

const char *cat_dataset_name(const struct cat_dataset *ds)
{
    return ds->cfg.name;
}

/* Caller holds cat->lock (read or write). */
struct cat_dataset *cat_find_locked(struct cat_catalog *cat, const char *name)
{
    for (size_t i = 0; i < cat->n; i++)
        if (strcmp(cat->items[i]->cfg.name, name) == 0)
            return cat->items[i];
    return NULL;
}

uint64_t cat_names_epoch(struct cat_catalog *cat)
{
    return atomic_load(&cat->names_epoch);
}

struct cat_dataset *cat_dataset_get(struct cat_catalog *cat, const char *name)
{
    pthread_rwlock_rdlock(&cat->lock);
    struct cat_dataset *ds = cat_find_locked(cat, name);
    if (ds)
        atomic_fetch_add(&ds->refs, 1);
    pthread_rwlock_unlock(&cat->lock);
    return ds;
}

/* Names are unique ignoring case: "Trips" and "trips" would be one file on a
 * case-insensitive file system and one table to many SQL clients. Lookups by
 * name stay exact. Caller holds cat->lock. */
struct cat_dataset *cat_find_ci_locked(struct cat_catalog *cat, const char *name)
{
    for (size_t i = 0; i < cat->n; i++)
        if (strcasecmp(cat->items[i]->cfg.name, name) == 0)
            return cat->items[i];
    return NULL;
}

bool cat_name_taken(struct cat_catalog *cat, const char *name, char *out_existing, size_t cap)
{
    pthread_rwlock_rdlock(&cat->lock);
    struct cat_dataset *ds = cat_find_ci_locked(cat, name);
    if (ds && out_existing && cap)
        snprintf(out_existing, cap, "%s", ds->cfg.name);
    pthread_rwlock_unlock(&cat->lock);
    return ds != NULL;
}

bool cat_register(struct cat_catalog *cat, struct cat_dataset *ds)
{
    bool ok = false;
    pthread_rwlock_wrlock(&cat->lock);
    if (!cat_find_ci_locked(cat, ds->cfg.name)) {
        if (cat->n == cat->cap) {
            size_t cap = cat->cap ? cat->cap * 2 : 16;
            struct cat_dataset **p = realloc(cat->items, cap * sizeof *p);
            if (p) {
                cat->items = p;
                cat->cap = cap;
            }
        }
        if (cat->n < cat->cap) {
            cat->items[cat->n++] = ds;
            atomic_fetch_add(&ds->refs, 1);
            ds->registered = true;
            atomic_fetch_add(&cat->names_epoch, 1);
            ok = true;
        }
    }
    pthread_rwlock_unlock(&cat->lock);
    return ok;
}

bool cat_unregister_locked(struct cat_catalog *cat, struct cat_dataset *ds)
{
    for (size_t i = 0; i < cat->n; i++) {
        if (cat->items[i] == ds) {
            memmove(&cat->items[i], &cat->items[i + 1], (cat->n - i - 1) * sizeof *cat->items);
            cat->n--;
            atomic_fetch_add(&cat->names_epoch, 1);
            return true;
        }
    }
    return false;
}

void cat_unregistered(struct cat_catalog *cat, struct cat_dataset *ds)
{
    pthread_mutex_lock(&ds->mu);
    ds->registered = false;
    /* A build still running for it would only publish into nothing (and
     * hold a builder): cancel it, DuckDB interrupted. */
    if (ds->build_job) {
        atomic_store(&ds->build_job->cancelled, true);
        eng_pool_interrupt(cat->builders, ds->build_job);
    }
    pthread_mutex_unlock(&ds->mu);
    cat_scheduler_cancel(cat->sched, ds->cfg.name);
    cat_dataset_put(ds);
}

bool cat_unregister(struct cat_catalog *cat, struct cat_dataset *ds)
{
    pthread_rwlock_wrlock(&cat->lock);
    bool found = cat_unregister_locked(cat, ds);
    pthread_rwlock_unlock(&cat->lock);
    if (found)
        cat_unregistered(cat, ds);
    return found;
}

struct cat_generation *cat_dataset_acquire(struct cat_dataset *ds, int64_t deadline_ms,
                                           struct vt_error *err)
{
    struct cat_generation *gen = NULL;
    pthread_mutex_lock(&ds->mu);
    /* on_start = lazy: the first request starts the build and waits for it;
     * concurrent first requests wait for the same build. */
    if (!ds->current && ds->state == CAT_PENDING && ds->cfg.on_start == CFG_ON_START_LAZY &&
        !ds->build_queued) {
        pthread_mutex_unlock(&ds->mu);
        cat_build_async(ds->catalog, ds, CAT_REFRESH_STARTUP, NULL, false);
        pthread_mutex_lock(&ds->mu);
    }
    if (!ds->current && ds->cfg.on_start == CFG_ON_START_LAZY && deadline_ms > 0) {
        while (!ds->current && (ds->build_queued || ds->state == CAT_BUILDING))
            if (!time_cond_wait(&ds->built_cv, &ds->mu, deadline_ms))
                break;
    }
    if (ds->current) {
        gen = ds->current;
        atomic_fetch_add(&gen->priv->refs, 1);
    } else if (ds->state == CAT_FAILED) {
        vt_error_set(err, VT_ERR_DATASET_FAILED, "dataset %s failed to build: %s", ds->cfg.name,
                     ds->last_error ? ds->last_error : "unknown error");
    } else if (ds->state == CAT_PENDING && ds->cfg.on_start == CFG_ON_START_SKIP &&
               !ds->build_queued) {
        vt_error_set(err, VT_ERR_DATASET_NOT_READY,
                     "dataset %s is not built (on_start = \"skip\"); reload it to build it",
                     ds->cfg.name);
    } else {
        vt_error_set(err, VT_ERR_DATASET_NOT_READY, "dataset %s is not published yet (%s)",
                     ds->cfg.name, cat_state_name(ds->state));
    }
    pthread_mutex_unlock(&ds->mu);
    return gen;
}

/* ---------------------------------------------------------------- build */

static char *truncate_error(const char *msg)
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

/* Reads the schema of a generation's relation: names and type text from
 * information_schema, DuckDB type ids from a zero-row prepared statement. */
static enum vt_err read_schema(duckdb_connection con, struct cat_generation *gen,
                               struct vt_error *err)
{
    duckdb_prepared_statement ps;
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT * FROM %s LIMIT 0", gen->relation);
    if (duckdb_prepare(con, sql, &ps) != DuckDBSuccess) {
        vt_error_set(err, VT_ERR_BUILD_FAILED, "%s", duckdb_prepare_error(ps));
        duckdb_destroy_prepare(&ps);
        return VT_ERR_BUILD_FAILED;
    }
    idx_t n = duckdb_prepared_statement_column_count(ps);
    gen->cols = calloc(n ? n : 1, sizeof *gen->cols);
    if (!gen->cols) {
        duckdb_destroy_prepare(&ps);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    }
    gen->n_cols = n;
    for (idx_t i = 0; i < n; i++) {
        /* Declared const, but DuckDB 1.4 returns a strdup'd copy that the
         * caller owns (LeakSanitizer showed it): free it with duckdb_free. */
        const char *name = duckdb_prepared_statement_column_name(ps, i);
        gen->cols[i].name = strdup(name ? name : "");
        duckdb_free((void *)name);
        duckdb_logical_type lt = duckdb_prepared_statement_column_logical_type(ps, i);
        gen->cols[i].type = duckdb_get_type_id(lt);
        gen->cols[i].logical = cat_logical_of(gen->cols[i].type);
        gen->cols[i].nullable = true;
        duckdb_destroy_logical_type(&lt);
    }
    duckdb_destroy_prepare(&ps);

    /* Type text and nullability from DESCRIBE, which touches only this
     * generation's database (information_schema would open a transaction on
     * every attached database and make a concurrent CHECKPOINT fail). */
    snprintf(sql, sizeof sql, "DESCRIBE %s", gen->relation);
    duckdb_result res;
    if (duckdb_query(con, sql, &res) != DuckDBSuccess) {
        char text[VT_ERROR_MSG_MAX];
        vt_error_set(err, VT_ERR_BUILD_FAILED, "%s",
                     eng_error_text(duckdb_result_error(&res), text, sizeof text));
        duckdb_destroy_result(&res);
        return VT_ERR_BUILD_FAILED;
    }
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
    /* A lazy generation knows its rows from the footers it read. */
    if (gen->priv->snapshot.lazy) {
        gen->rows = source_lazy_rows(gen->priv->snapshot.lazy);
        return VT_ERR_OK;
    }
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", gen->relation);
    duckdb_result res;
    if (duckdb_query(con, sql, &res) != DuckDBSuccess) {
        char text[VT_ERROR_MSG_MAX];
        vt_error_set(err, VT_ERR_BUILD_FAILED, "%s",
                     eng_error_text(duckdb_result_error(&res), text, sizeof text));
        duckdb_destroy_result(&res);
        return VT_ERR_BUILD_FAILED;
    }
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

/* CREATE TABLE|VIEW <relation> AS <select> */
enum vt_err cat_create_relation(duckdb_connection con, struct cat_generation *gen, bool view,
                                   const char *select, struct vt_error *err)
{
    struct strbuf sql;
    sb_init(&sql, 0);
    sb_addf(&sql, "CREATE %s %s AS %s", view ? "VIEW" : "TABLE", gen->relation, select);
    enum vt_err rc = sql.overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL)
                                  : eng_exec(con, sql.buf, VT_ERR_BUILD_FAILED, err);
    sb_release(&sql);
    return rc;
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
    /* One allocation for both parts; generation_free() frees it. */
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
            generation_free(gen);
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
            generation_free(gen);
            return NULL;
        }
    } else if (cfg->kind == CFG_SOURCE_QUERY) {
        rc = build_query(cat, con, cfg, gen, may_reuse, job, t0, &reused, err);
        if (rc) {
            cat_detach_database(cat, con, gen->priv->db_name);
            generation_free(gen);
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
            generation_free(gen);
            return NULL;
        }
        ctx.for_lazy = gen->lazy;
        if (source_resolve(cfg, &ctx, &gen->priv->snapshot, out_access_denied, err)) {
            cat_import_release(&imp);
            generation_free(gen);
            return NULL;
        }
        gen->priv->source_bytes = gen->priv->snapshot.total_bytes;
        if (gen->priv->snapshot.version)
            gen->priv->source_version = strdup(gen->priv->snapshot.version);
        if (cat_attach_generation(cat, con, gen, !gen->lazy, err) != VT_ERR_OK) {
            cat_import_release(&imp);
            generation_free(gen);
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
            cat_detach_database(cat, con, gen->priv->db_name);
            cat_import_release(&imp);
            generation_free(gen);
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
        generation_free(gen);
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
            log_info("dataset %s: lazy metadata of %zu bytes (footers and statistics)",
                     ds->cfg.name, source_lazy_bytes(gen->priv->snapshot.lazy));
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
        ds->last_error = truncate_error(msg);
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

/* ------------------------------------------------------------ lifecycle */

struct cat_catalog *cat_create(const struct vt_config *cfg, duckdb_database db,
                               struct vt_error *err)
{
    struct cat_catalog *cat = calloc(1, sizeof *cat);
    if (!cat) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    cat->cfg = cfg;
    cat->db = db;
    cat->policy = source_policy_create(cfg);
    if (!cat->policy) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        free(cat);
        return NULL;
    }
    pthread_rwlock_init(&cat->lock, NULL);
    pthread_mutex_init(&cat->ddl_mu, NULL);
    pthread_mutex_init(&cat->state_mu, NULL);
    /* Not ready until cat_start has registered and counted every dataset. */
    cat->registering = true;
    int builders = cfg->server.startup.max_concurrent > 0 ? cfg->server.startup.max_concurrent : 4;
    cat->builders = eng_pool_create(db, builders, "build", err);
    cat->janitor = cat->builders ? eng_pool_create(db, 1, "janitor", err) : NULL;
    cat->coordinator = cat->janitor ? eng_pool_create(db, 1, "waves", err) : NULL;
    cat->sched = cat->coordinator ? cat_scheduler_create(cat) : NULL;
    if (!cat->builders || !cat->janitor || !cat->coordinator || !cat->sched) {
        if (!cat->sched)
            vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot start the scheduler");
        cat_destroy(cat);
        return NULL;
    }
    cat_scheduler_on_expire(cat->sched, cat_expire, cat);
    return cat;
}

void cat_set_dirs(struct cat_catalog *cat, const char *temp_dir, const char *cache_dir,
                  const char *export_dir)
{
    cat->temp_dir = temp_dir;
    cat->cache_dir = cache_dir;
    cat->export_dir = export_dir;
}

/* Registers one dataset at startup; eager ones are reserved for the startup
 * wave (their reference moves into `eager`). */
static void start_register(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                           bool from_config, enum cat_saved saved, struct cat_dataset **eager,
                           size_t *n_eager)
{
    struct cat_dataset *ds = cat_dataset_new(cat, cfg, from_config);
    if (ds)
        ds->saved = saved;
    if (!ds || !cat_register(cat, ds)) {
        log_error("dataset %s: cannot register", cfg->name);
        cat_dataset_put(ds);
        return;
    }
    if (ds->cfg.on_start == CFG_ON_START_EAGER && eager) {
        eager[(*n_eager)++] = ds; /* keeps the reference */
        return;
    }
    cat_dataset_put(ds);
}

/* The depends_on of every query dataset, from its SQL (config datasets may
 * read config datasets only); a dataset whose SQL the gate refuses or that
 * sits on a cycle is failed with the reason and not built. */
static void start_infer(struct cat_catalog *cat, struct cat_dataset **eager, size_t *n_eager)
{
    duckdb_connection con = NULL;
    if (duckdb_connect(cat->db, &con) != DuckDBSuccess)
        con = NULL;
    pthread_rwlock_rdlock(&cat->lock);
    size_t n = cat->n;
    struct cat_dataset **all = calloc(n ? n : 1, sizeof *all);
    for (size_t i = 0; all && i < n; i++) {
        all[i] = cat->items[i];
        atomic_fetch_add(&all[i]->refs, 1);
    }
    pthread_rwlock_unlock(&cat->lock);
    for (size_t i = 0; all && i < n; i++) {
        struct cat_dataset *ds = all[i];
        if (ds->cfg.kind != CFG_SOURCE_QUERY)
            continue;
        struct vt_dataset_config cfg;
        pthread_mutex_lock(&ds->mu);
        int copied = config_dataset_copy(&cfg, &ds->cfg);
        pthread_mutex_unlock(&ds->mu);
        if (copied != 0)
            continue;
        struct vt_error err = {0};
        enum vt_err rc = con ? cat_query_infer(cat, con, &cfg, ds->from_config, &err)
                             : vt_error_set(&err, VT_ERR_INTERNAL, "no DuckDB connection");
        pthread_mutex_lock(&ds->mu);
        if (rc == VT_ERR_OK) {
            strvec_free(&ds->cfg.depends_on);
            ds->cfg.depends_on = cfg.depends_on;
            cfg.depends_on = (struct strvec){0};
        } else {
            ds->state = CAT_FAILED;
            free(ds->last_error);
            ds->last_error = truncate_error(vt_error_message(&err));
        }
        pthread_mutex_unlock(&ds->mu);
        if (rc != VT_ERR_OK)
            log_error("dataset %s: %s", cfg.name, vt_error_message(&err));
        config_dataset_free(&cfg);
    }
    /* Cycles, over the inferred edges. */
    for (size_t i = 0; all && i < n; i++) {
        struct cat_dataset *ds = all[i];
        if (ds->cfg.kind != CFG_SOURCE_QUERY || ds->state == CAT_FAILED)
            continue;
        char path[512];
        if (cat_query_cycle(cat, ds->cfg.name, path, sizeof path)) {
            pthread_mutex_lock(&ds->mu);
            ds->state = CAT_FAILED;
            free(ds->last_error);
            char msg[600];
            snprintf(msg, sizeof msg, "dependency cycle: %s", path);
            ds->last_error = truncate_error(msg);
            pthread_mutex_unlock(&ds->mu);
            log_error("dataset %s: dependency cycle: %s", ds->cfg.name, path);
        }
    }
    for (size_t i = 0; all && i < n; i++)
        cat_dataset_put(all[i]);
    free(all);
    if (con) {
        sql_gate_forget(con);
        duckdb_disconnect(&con);
    }
    /* Failed ones leave the startup wave. */
    size_t kept = 0;
    for (size_t i = 0; i < *n_eager; i++) {
        struct cat_dataset *ds = eager[i];
        if (ds->state == CAT_FAILED) {
            cat_dataset_put(ds);
            continue;
        }
        eager[kept++] = ds;
    }
    *n_eager = kept;
}

void cat_start(struct cat_catalog *cat, const struct vt_dataset_config *saved, size_t n_saved)
{
    const struct vt_config *cfg = cat->cfg;
    if (cat->hooks.no_builds) {
        /* A reader: its datasets are the writer's (the cluster registers
         * them from the shared catalog). */
        pthread_mutex_lock(&cat->state_mu);
        cat->registering = false;
        pthread_mutex_unlock(&cat->state_mu);
        return;
    }
    /* Eager datasets build in topological order of depends_on (a query
     * dataset after the datasets it reads), independent ones in parallel. */
    size_t cap = cfg->n_datasets + n_saved;
    struct cat_dataset **eager = calloc(cap ? cap : 1, sizeof *eager);
    size_t n_eager = 0;
    for (size_t i = 0; i < cfg->n_datasets; i++)
        start_register(cat, &cfg->datasets[i], true, CAT_SAVED_NONE, eager, &n_eager);
    for (size_t i = 0; i < n_saved; i++)
        start_register(cat, &saved[i], false, CAT_SAVED_QUERY, eager, &n_eager);
    start_infer(cat, eager, &n_eager);
    /* Storage left by an earlier run: unfinished writes and generations no
     * one will reuse go now. */
    cat_storage_sweep(cat);
    for (size_t i = 0; i < n_eager; i++) {
        eager[i]->startup_counted = true;
        pthread_mutex_lock(&eager[i]->mu);
        cat_mark_building(eager[i]); /* reserved for the startup wave */
        pthread_mutex_unlock(&eager[i]->mu);
    }
    pthread_mutex_lock(&cat->state_mu);
    cat->startup_pending = (int64_t)n_eager;
    cat->registering = false;
    pthread_mutex_unlock(&cat->state_mu);
    if (eager)
        cat_start_builds(cat, eager, n_eager, CAT_REFRESH_STARTUP);
}

void cat_destroy(struct cat_catalog *cat)
{
    if (!cat)
        return;
    /* The scheduler first (it queues builds), then waves (they queue builds
     * too), then builders (they publish), then drop every dataset (which
     * queues generation drops to the janitor), then the janitor runs those
     * drops. */
    cat_scheduler_destroy(cat->sched);
    cat->sched = NULL;
    /* Storage generations still current stay on disk for the next start. */
    atomic_store(&cat->keep_storage, true);
    /* Running builds stop at once: listings and S3 requests watch the cancel
     * flag, DuckDB is interrupted. */
    if (cat->builders)
        eng_pool_interrupt_all(cat->builders);
    eng_pool_destroy(cat->coordinator);
    cat->coordinator = NULL;
    eng_pool_destroy(cat->builders);
    cat->builders = NULL;
    pthread_rwlock_wrlock(&cat->lock);
    for (size_t i = 0; i < cat->n; i++)
        cat_dataset_put(cat->items[i]);
    free(cat->items);
    cat->items = NULL;
    cat->n = cat->cap = 0;
    pthread_rwlock_unlock(&cat->lock);
    eng_pool_destroy(cat->janitor);
    cat->janitor = NULL;
    pthread_rwlock_destroy(&cat->lock);
    pthread_mutex_destroy(&cat->ddl_mu);
    pthread_mutex_destroy(&cat->state_mu);
    source_policy_destroy(cat->policy);
    free(cat);
}

bool cat_ready(struct cat_catalog *cat, int64_t *out_datasets)
{
    size_t published = 0, failed = 0, total;
    pthread_rwlock_rdlock(&cat->lock);
    total = cat->n;
    for (size_t i = 0; i < cat->n; i++) {
        struct cat_dataset *ds = cat->items[i];
        pthread_mutex_lock(&ds->mu);
        if (ds->current)
            published++;
        else if (ds->state == CAT_FAILED)
            failed++;
        pthread_mutex_unlock(&ds->mu);
    }
    pthread_rwlock_unlock(&cat->lock);
    pthread_mutex_lock(&cat->state_mu);
    int64_t pending = cat->startup_pending;
    bool registering = cat->registering;
    pthread_mutex_unlock(&cat->state_mu);
    if (registering) {
        *out_datasets = 0;
        return false;
    }
    bool all_failed = total > 0 && failed == total;
    bool ready;
    if (cat->cfg->server.startup.readiness == CFG_READINESS_ANY)
        ready = published > 0 || (pending == 0 && !all_failed);
    else
        ready = pending == 0 && !all_failed;
    *out_datasets = (int64_t)total;
    return ready;
}

/* --------------------------------------------------------------- status */

static void fill_status(struct cat_dataset *ds, struct cat_status *st)
{
    memset(st, 0, sizeof *st);
    pthread_mutex_lock(&ds->mu);
    st->name = strdup(ds->cfg.name);
    st->state = ds->state;
    st->kind = ds->cfg.kind;
    st->lazy = ds->cfg.lazy;
    st->storage_bytes = -1;
    st->last_refresh_duration_ms = ds->last_refresh_duration_ms;
    st->last_refresh_at_us = ds->last_refresh_at_us;
    st->refresh_source = ds->refresh_source;
    st->consecutive_failures = ds->consecutive_failures;
    st->next_refresh_at_us = ds->next_refresh_at_us;
    st->last_error = ds->last_error ? strdup(ds->last_error) : NULL;
    st->source_bytes = -1;
    st->lazy_metadata_bytes = -1;
    memcpy(st->builds, ds->builds, sizeof st->builds);
    if (ds->current) {
        struct cat_generation *gen = ds->current;
        st->source_bytes = gen->priv->source_bytes;
        if (gen->priv->snapshot.lazy)
            st->lazy_metadata_bytes = (int64_t)source_lazy_bytes(gen->priv->snapshot.lazy);
        const struct cat_fastpath *fp = cat_generation_fastpath(gen);
        st->index_bytes = fp ? (int64_t)fp->bytes : 0;
        st->lazy = gen->lazy;
        st->rows = gen->rows;
        st->columns = (int64_t)gen->n_cols;
        /* The spec reports generation_id and storage_bytes for storage-backed
         * (lazy) generations only; resident ones are null. */
        if (gen->lazy || ds->catalog->hooks.report_every_generation) {
            st->has_generation = true;
            memcpy(st->generation_id, gen->id, sizeof st->generation_id);
            if (gen->lazy)
                st->storage_bytes = gen->priv->source_bytes;
        }
    }
    strvec_copy(&st->depends_on, &ds->cfg.depends_on);
    pthread_mutex_unlock(&ds->mu);
}

void cat_status_free(struct cat_status *st)
{
    free(st->name);
    free(st->last_error);
    strvec_free(&st->depends_on);
    memset(st, 0, sizeof *st);
}

bool cat_status_of(struct cat_catalog *cat, const char *name, struct cat_status *out)
{
    struct cat_dataset *ds = cat_dataset_get(cat, name);
    if (!ds)
        return false;
    fill_status(ds, out);
    cat_dataset_put(ds);
    return true;
}

size_t cat_status_list(struct cat_catalog *cat, struct cat_status **out)
{
    pthread_rwlock_rdlock(&cat->lock);
    size_t n = cat->n;
    struct cat_status *list = calloc(n ? n : 1, sizeof *list);
    if (list)
        for (size_t i = 0; i < n; i++)
            fill_status(cat->items[i], &list[i]);
    pthread_rwlock_unlock(&cat->lock);
    *out = list;
    return list ? n : 0;
}

void cat_status_list_free(struct cat_status *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cat_status_free(&list[i]);
    free(list);
}

enum vt_err cat_generation_plan_lazy(const struct cat_generation *gen,
                                     const struct query_request *req, struct arena *arena,
                                     const struct eng_job *job, struct source_lazy_plan *out,
                                     struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    const struct source_lazy *lz = gen->priv->snapshot.lazy;
    if (!lz)
        return VT_ERR_OK;
    enum vt_err rc = source_lazy_plan(lz, req, arena, job ? atomic_load(&job->deadline_ms) : 0,
                                      job ? &job->cancelled : NULL, out, err);
    if (rc == VT_ERR_SOURCE_CHANGED)
        cat_generation_source_changed(gen);
    return rc;
}

/* Rebuilds asked for by one changed generation, at most this often. */
#define CHANGED_REBUILD_EVERY_MS 2000

void cat_generation_source_changed(const struct cat_generation *gen)
{
    struct cat_catalog *cat = gen->priv->catalog;
    int64_t now = time_mono_ms();
    int64_t last = atomic_load(&gen->priv->changed_rebuild_ms);
    if (!cat || (last && now - last < CHANGED_REBUILD_EVERY_MS) ||
        !atomic_compare_exchange_strong(&gen->priv->changed_rebuild_ms, &last, now))
        return;
    struct cat_dataset *ds = cat_dataset_get(cat, gen->priv->dataset);
    if (!ds)
        return;
    pthread_mutex_lock(&ds->mu);
    bool current = ds->current == gen;
    pthread_mutex_unlock(&ds->mu);
    /* A newer generation is published (or building): nothing to do. */
    if (current && cat_build_async(cat, ds, CAT_REFRESH_SCHEDULE, NULL, false))
        log_warn("dataset %s: source files changed under generation %s; rebuilding",
                 gen->priv->dataset, gen->id);
    cat_dataset_put(ds);
}

void cat_generation_read_failed(const struct cat_generation *gen, struct vt_error *err)
{
    const struct source_lazy *lz = gen && gen->lazy ? gen->priv->snapshot.lazy : NULL;
    if (!lz || err->code != VT_ERR_QUERY_FAILED)
        return;
    struct vt_error why = {0};
    if (source_lazy_changed(lz, &why)) {
        *err = why;
        cat_generation_source_changed(gen);
        return;
    }
    log_warn("dataset %s: reading generation %s failed: %s", gen->priv->dataset, gen->id,
             vt_error_message(err));
    vt_error_clear(err);
    vt_error_set(err, VT_ERR_QUERY_FAILED, "reading the dataset's source files failed");
}

enum vt_err cat_generation_read_all(const struct cat_generation *gen, int64_t deadline_ms,
                                    void **out_holds, struct vt_error *err)
{
    *out_holds = NULL;
    const struct source_lazy *lz = gen->priv->snapshot.lazy;
    if (!lz)
        return VT_ERR_OK;
    struct range_cache_lease *holds = NULL;
    enum vt_err rc = source_lazy_read_all(lz, deadline_ms, NULL, &holds, err);
    *out_holds = holds;
    return rc;
}

void cat_generation_read_release(void *holds)
{
    source_lazy_read_release(holds);
}
