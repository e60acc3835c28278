/*
 * Catalog internals shared by the catalog's own files (catalog.c, derive.c,
 * and the lifecycle operations). Not for other modules.
 */
#ifndef VT_CATALOG_INTERNAL_H
#define VT_CATALOG_INTERNAL_H

#include "catalog/catalog.h"
#include "util/limits.h"
#include "util/strbuf.h"

enum cat_export_state { CAT_EXPORT_NONE, CAT_EXPORT_BUILDING, CAT_EXPORT_READY };

/* The catalog's part of a generation (allocated with it, see catalog.h). */
struct cat_generation_private {
    atomic_int refs;
    char db_name[32];           /* attached database, e.g. g_01J... */
    int64_t source_bytes;       /* bytes of the files read */
    int64_t delta_version;      /* the Delta table version it serves; -1: not Delta */
    int64_t build_ms;
    struct source_snapshot snapshot; /* lazy generations: their files (pinned, cached) */
    char *storage_dir;          /* a storage generation (query dataset, residency lazy):
                                 * its folder of Parquet files, <storage_dir>/<name>/<id>,
                                 * removed with the generation */
    struct cat_catalog *catalog;
    /* The Parquet export of this generation (export.c). */
    pthread_mutex_t export_mu;
    pthread_cond_t export_cv;
    enum cat_export_state export_state;
    int export_attempts;
    struct vt_error export_error;
    char *export_path;
    uint64_t export_size;
    struct index_fastpath *_Atomic fastpath; /* NULL until built (or never) */
    _Atomic int index_state;    /* enum cat_index_state */
    bool imported;              /* built by a cluster's writer, loaded here */
    enum cat_refresh_source imported_source; /* the writer's trigger of it */
    char *export_remote;        /* imported: where its Parquet bytes are (hooks.fetch_export) */
    char *source_version;       /* the source's version when built (Delta version, listing
                                 * digest), or NULL */
    char dataset[VT_MAX_DATASET_NAME_BYTES + 1]; /* its dataset's name */
    _Atomic int64_t changed_rebuild_ms; /* a lazy generation whose files changed: when its
                                 * dataset's rebuild was last asked for (0 never) */
    bool rows_counted;          /* gen->rows is the CTAS's own count (cat_create_relation) */
    bool sampled;               /* sample_json was taken with the schema (build.c) */
};

struct cat_dataset {
    atomic_int refs;
    struct cat_catalog *catalog;
    struct vt_dataset_config cfg;   /* guarded by mu */
    pthread_mutex_t mu;
    pthread_cond_t built_cv;        /* broadcast when a build finishes */
    enum cat_state state;           /* building from enqueue to publish (cat_mark_building) */
    enum cat_state state_before_build; /* restored when a queued build never runs */
    struct cat_generation *current; /* one reference held by the dataset */
    struct cat_generation *previous;/* the one it replaced, kept until previous_until_ms
                                     * (hooks.keep_previous_ms; ?generation= pins) */
    int64_t previous_until_ms;
    bool build_queued;              /* a build is queued or running */
    bool building;                  /* a build is running */
    struct eng_job *build_job;      /* the running build's job while building (mu): deleting
                                     * the dataset cancels it (cat_unregistered) */
    bool registered;
    bool from_config;
    bool startup_counted;           /* counted in cat->startup_pending */
    int64_t last_refresh_at_us;
    int64_t last_refresh_duration_ms;
    enum cat_refresh_source refresh_source;
    int64_t consecutive_failures;
    char *last_error;
    int64_t next_refresh_at_us;     /* a scheduled refresh is due then; 0 = none */
    enum cat_saved saved;           /* created through POST /api/v1/queries */
    int64_t ttl_ms;                 /* saved temp: expires this long after registration */
    bool expired;                   /* its ttl passed while others depended on it: it goes
                                     * when the last of them does */
    uint64_t builds[5][2];          /* builds ended: [refresh source][0 ok, 1 failed] */
};

struct cat_catalog {
    const struct vt_config *cfg;
    duckdb_database db;
    struct eng_pool *builders;
    struct eng_pool *janitor;
    struct eng_pool *coordinator;   /* reload-all waves: wait for levels of builds */
    pthread_rwlock_t lock;
    struct cat_dataset **items;
    size_t n, cap;
    pthread_mutex_t ddl_mu;
    pthread_mutex_t state_mu;
    int64_t startup_pending;        /* eager startup builds not finished */
    void (*ready_listener)(void *); /* cat_set_ready_listener (under state_mu) */
    void *ready_listener_ctx;
    bool registering;               /* cat_start is still registering the config's datasets */
    const char *temp_dir;
    const char *cache_dir;
    const char *export_dir;
    const char *index_dir;          /* fast path files (NULL: in memory) */
    struct cat_scheduler *sched;    /* refresh intervals, cascades, expiries */
    struct source_policy *policy;   /* what requests' sources may reach */
    _Atomic uint64_t names_epoch;   /* moves at every registration and unregistration */
    atomic_bool keep_storage;       /* shutting down: storage generations stay on disk
                                     * (materialize.reuse_on_start serves them next time) */
    struct cat_hooks hooks;         /* the cluster's (zero: standalone) */
    atomic_bool names_unknown;      /* a reader that has not read the shared catalog yet */
};

struct cat_dataset *cat_dataset_new(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                                    bool from_config);
bool cat_register(struct cat_catalog *cat, struct cat_dataset *ds);
bool cat_unregister(struct cat_catalog *cat, struct cat_dataset *ds);
/* A build of ds is queued (ds->mu held): build_queued, and state "building"
 * until it publishes, even while an older generation keeps serving. */
void cat_mark_building(struct cat_dataset *ds);
/* The queued build will not run after all (ds->mu held): back to the state
 * before it (published when a generation serves). */
void cat_unmark_building(struct cat_dataset *ds);
/* Queues a build unless one is queued; false when not queued. `result` (may
 * be NULL) gets a reference and is completed when the build ends. With
 * unregister_on_failure the dataset leaves the catalog if the build fails
 * (a registration that could not open its source). */
bool cat_build_async(struct cat_catalog *cat, struct cat_dataset *ds,
                     enum cat_refresh_source source, struct cat_build_result *result,
                     bool unregister_on_failure);
/* The same for a dataset whose build_queued was reserved by the caller
 * (cat_mark_building): queues it, or undoes the reservation and says false. */
bool cat_build_reserved(struct cat_catalog *cat, struct cat_dataset *ds,
                        enum cat_refresh_source source, struct cat_build_result *result,
                        bool unregister_on_failure);
/* Both of the above with every option: deadline_ms (monotonic; 0 = none)
 * interrupts the build then; `reserved` says the caller already marked it
 * building. */
struct cat_build_opts {
    enum cat_refresh_source source;
    struct cat_build_result *result;
    bool unregister_on_failure;
    int64_t deadline_ms;
    bool reserved;
};
bool cat_build_start(struct cat_catalog *cat, struct cat_dataset *ds,
                     const struct cat_build_opts *opts);
/* Removes ds from the list (cat->lock held for writing); the caller then
 * calls cat_unregistered(). */
bool cat_unregister_locked(struct cat_catalog *cat, struct cat_dataset *ds);
/* What follows an unregistration, outside cat->lock: timers, caches, and the
 * list's reference. */
void cat_unregistered(struct cat_catalog *cat, struct cat_dataset *ds);
/* Caller holds cat->lock. */
struct cat_dataset *cat_find_locked(struct cat_catalog *cat, const char *name);
struct cat_dataset *cat_find_ci_locked(struct cat_catalog *cat, const char *name);
/* Whether following depends_on from `name` leads back to it (the path goes
 * into `path`, "a -> b -> a"). */
bool cat_query_cycle(struct cat_catalog *cat, const char *name, char *path, size_t cap);
/* ttl expiry of a saved temp query (the scheduler's callback). */
void cat_expire(void *ctx, struct cat_dataset *ds);

/* Makes every dataset of depends_on a temporary view of `con` over its
 * current generation (waiting until deadline_ms for lazy first builds),
 * holding those generations until unbound. */
struct cat_upstreams {
    struct cat_generation *gens[64];
    char *names[64];
    void *reads[64];            /* lazy S3 upstreams: their objects, held (read_all) */
    size_t n;
};
enum vt_err cat_bind_upstreams(struct cat_catalog *cat, duckdb_connection con,
                               const struct vt_dataset_config *cfg, int64_t deadline_ms,
                               struct cat_upstreams *ups, struct vt_error *err);
void cat_unbind_upstreams(duckdb_connection con, struct cat_upstreams *ups);
/* "SELECT <columns> FROM (\n<sql>\n) AS q [ORDER BY <sort_by>]" of a query dataset. */
enum vt_err cat_query_select_sql(const struct vt_dataset_config *cfg, bool sorted,
                                 struct strbuf *sql, struct vt_error *err);
void cat_build_result_complete(struct cat_build_result *r, bool ok, int64_t rows,
                               int64_t columns, int64_t elapsed_ms, const struct vt_error *err);
void cat_export_discard(struct cat_generation *gen);
/* A startup build of `ds` is over (or will not happen): readiness counts it. */
void cat_startup_done(struct cat_catalog *cat, struct cat_dataset *ds);
/* Builds `items` (an array of referenced datasets whose build_queued is
 * reserved; ownership passes) level by level in topological order of
 * depends_on, on the coordinator pool. */
void cat_start_builds(struct cat_catalog *cat, struct cat_dataset **items, size_t n,
                      enum cat_refresh_source source);
void cat_detach_database(struct cat_catalog *cat, duckdb_connection con, const char *db_name);

/* Generation building blocks (catalog.c), shared with shared.c. */
void cat_set_generation_id(struct cat_generation *gen, const char *id);
enum vt_err cat_attach_generation(struct cat_catalog *cat, duckdb_connection con,
                                  struct cat_generation *gen, bool compress, struct vt_error *err);
enum vt_err cat_checkpoint_generation(duckdb_connection con, struct cat_generation *gen,
                                      struct vt_error *err);
enum vt_err cat_create_relation(duckdb_connection con, struct cat_generation *gen, bool view,
                                const char *select, struct vt_error *err);
/* An imported generation's relation from local Parquet files (shared.c):
 * a compressed table, or a view for a lazy one. */
enum vt_err cat_import_files(struct cat_catalog *cat, duckdb_connection con,
                             struct cat_generation *gen, const struct cat_import *imp,
                             struct vt_error *err);

void cat_fastpath_free(struct index_fastpath *fp);
/* The fast path's part of a status entry. */
void cat_generation_index_status(const struct cat_generation *gen, struct cat_status *st);
/* Queues the build of the index fast path of a published generation. */
void cat_generation_start_fastpath(struct cat_catalog *cat, struct cat_generation *gen,
                                   const struct vt_dataset_config *cfg);

/* Everything computed once per generation after its relation exists (sample
 * row, index, ...). Runs on the builder's connection. The sample is taken
 * only when the schema's query did not take it (cat_generation_sample). */
enum vt_err cat_generation_derive(struct cat_catalog *cat, duckdb_connection con,
                                  struct cat_generation *gen,
                                  const struct vt_dataset_config *cfg, struct vt_error *err);
/* Sets gen->sample_json from the first row of `res` (a SELECT * of the
 * generation's relation, not yet fetched; left for the caller to destroy)
 * and marks the generation sampled. */
void cat_generation_sample(struct cat_generation *gen, duckdb_result *res);

/* ------------------------------------------------------ storage.c
 *
 * Storage generations: a query dataset with residency "lazy" (or "auto" above
 * the threshold) writes its rows as Parquet, sorted by materialize.sort_by,
 * into <server.storage_dir>/<name>/<ULID>.tmp/, syncs it, writes a manifest,
 * and renames the folder to <ULID>: a folder without ".tmp" is complete, and
 * only complete folders are ever served (a crash mid-write leaves a .tmp
 * folder that the next start removes). */

/* Above this many bytes of Parquet, residency "auto" serves a query dataset
 * from its files instead of loading it into memory (server.force_lazy_above_mb
 * replaces it when set). */
#define CAT_AUTO_LAZY_ABOVE_BYTES ((int64_t)256 * 1024 * 1024)

struct cat_storage_write {
    char *tmp_dir;              /* <storage>/<name>/<id>.tmp */
    char *file;                 /* <tmp_dir>/data.parquet, then in the final folder */
    char *dir;                  /* <storage>/<name>/<id> once committed */
    int64_t rows;
    int64_t bytes;
    int64_t created_us;         /* wall clock written in the manifest (commit) */
    struct strvec cast_names;   /* columns written as DECIMAL(38,0) ... */
    struct strvec cast_types;   /* ... that are HUGEINT or UHUGEINT */
};
/* "SELECT * [REPLACE (CAST(..))] FROM read_parquet('<file>')": the rows of
 * the file with their original types. */
void cat_storage_read_sql(const struct cat_storage_write *w, struct strbuf *out);
/* Writes the rows of `select_sql` (bound on `con`) to the .tmp folder of
 * generation `gen_id`: HUGEINT and UHUGEINT columns as DECIMAL(38,0) (Parquet
 * has no 128-bit integers; DuckDB would write them as DOUBLE). */
enum vt_err cat_storage_write_tmp(struct cat_catalog *cat, duckdb_connection con,
                                  const struct vt_dataset_config *cfg, const char *gen_id,
                                  const char *select_sql, struct cat_storage_write *w,
                                  struct vt_error *err);
/* Syncs the files, writes the manifest, renames the folder into place. */
enum vt_err cat_storage_commit(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                               const char *gen_id, int64_t build_ms,
                               struct cat_storage_write *w, struct vt_error *err);
/* Removes what was written and frees `w`. */
void cat_storage_discard(struct cat_storage_write *w);
void cat_storage_release(struct cat_storage_write *w);
/* The newest complete generation of `cfg` on disk written from the same
 * definition (materialize.reuse_on_start): fills w (dir, file, rows, bytes,
 * casts), *out_id, *out_created_us and *out_build_ms. */
bool cat_storage_find(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                      struct cat_storage_write *w, char out_id[27], int64_t *out_created_us,
                      int64_t *out_build_ms);
/* Removes every generation folder of `name` but `keep_id` (NULL: all). */
void cat_storage_prune(struct cat_catalog *cat, const char *name, const char *keep_id);
/* At startup: removes unfinished (.tmp) folders, and the generations of
 * datasets that are gone or will not reuse them. */
void cat_storage_sweep(struct cat_catalog *cat);
/* Removes a generation's folder, and the dataset's folder when empty. */
void cat_storage_remove_dir(const char *dir);

/* ------------------------------------------------------ scheduler.c */

enum cat_timer_kind { CAT_TIMER_REFRESH, CAT_TIMER_CASCADE, CAT_TIMER_EXPIRE };
/* What a ttl expiry does (set by the owner of expiring datasets). */
typedef void (*cat_expire_fn)(void *ctx, struct cat_dataset *ds);

struct cat_scheduler;
struct cat_scheduler *cat_scheduler_create(struct cat_catalog *cat);
void cat_scheduler_destroy(struct cat_scheduler *s);
void cat_scheduler_on_expire(struct cat_scheduler *s, cat_expire_fn fn, void *ctx);
/* Sets (or moves) the one timer of this kind for the dataset. */
void cat_scheduler_arm(struct cat_scheduler *s, const char *name, enum cat_timer_kind kind,
                       int64_t delay_ms);
/* Forgets every timer of the dataset (it was unregistered). */
void cat_scheduler_cancel(struct cat_scheduler *s, const char *name);
/* A build of `ds` ended: schedules its next refresh (refresh.interval, with
 * jitter; sooner after a failure) and, when it published, the cascades of
 * the datasets that follow it (refresh.on_upstream_reload, debounced). */
void cat_scheduler_build_finished(struct cat_scheduler *s, struct cat_dataset *ds, bool ok);

/* A generation nobody holds any more, freed with its parts (catalog.c; the
 * build frees one it could not finish). */
void cat_generation_free(struct cat_generation *gen);
/* A build error as a dataset's last_error: one line, bounded (build.c;
 * malloc'd). */
char *cat_error_text(const char *msg);

#endif
