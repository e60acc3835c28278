/*
 * The catalog (see catalog.h): the registry of datasets, their states and
 * current generations, the generations' reference counts, the catalog's
 * lifecycle (create, start, destroy, readiness) and status. The build that
 * turns a source into a published generation is build.c.
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

void cat_generation_free(struct cat_generation *gen)
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
    cat_generation_free(gen);
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
    cat_generation_free(gen);
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
    /* A cluster reader knows its datasets only once it has read the shared
     * catalog (src/cluster), also for requests before its hooks are set. */
    atomic_init(&cat->names_unknown, cfg->cluster.role == CFG_ROLE_READER);
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
            ds->last_error = cat_error_text(vt_error_message(&err));
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
            ds->last_error = cat_error_text(msg);
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
    st->delta_version = -1;
    memcpy(st->builds, ds->builds, sizeof st->builds);
    if (ds->current) {
        struct cat_generation *gen = ds->current;
        st->source_bytes = gen->priv->source_bytes;
        st->delta_version = gen->priv->delta_version;
        if (gen->priv->snapshot.lazy)
            st->lazy_metadata_bytes = (int64_t)source_lazy_bytes(gen->priv->snapshot.lazy);
        cat_generation_index_status(gen, st);
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
