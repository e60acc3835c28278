/*
 * Catalog internals shared by the catalog's own files (catalog.c, derive.c,
 * and the lifecycle operations). Not for other modules.
 */
#ifndef VT_CATALOG_INTERNAL_H
#define VT_CATALOG_INTERNAL_H

#include "catalog/catalog.h"

enum cat_export_state { CAT_EXPORT_NONE, CAT_EXPORT_BUILDING, CAT_EXPORT_READY };

/* The catalog's part of a generation (allocated with it, see catalog.h). */
struct cat_generation_private {
    atomic_int refs;
    char db_name[32];           /* attached database, e.g. g_01J... */
    int64_t source_bytes;       /* bytes of the files read */
    int64_t build_ms;
    struct source_snapshot snapshot; /* lazy generations: their files (pinned, cached) */
    struct cat_catalog *catalog;
    /* The Parquet export of this generation (export.c). */
    pthread_mutex_t export_mu;
    pthread_cond_t export_cv;
    enum cat_export_state export_state;
    int export_attempts;
    struct vt_error export_error;
    char *export_path;
    uint64_t export_size;
    struct cat_fastpath *_Atomic fastpath; /* NULL until built (or never) */
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
    bool build_queued;              /* a build is queued or running */
    bool building;                  /* a build is running */
    bool registered;
    bool from_config;
    bool startup_counted;           /* counted in cat->startup_pending */
    int64_t last_refresh_at_us;
    int64_t last_refresh_duration_ms;
    enum cat_refresh_source refresh_source;
    int64_t consecutive_failures;
    char *last_error;
    int64_t next_refresh_at_us;     /* a scheduled refresh is due then; 0 = none */
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
    bool registering;               /* cat_start is still registering the config's datasets */
    const char *temp_dir;
    const char *cache_dir;
    const char *export_dir;
    struct cat_scheduler *sched;    /* refresh intervals, cascades, expiries */
    struct source_policy *policy;   /* what requests' sources may reach */
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

void cat_fastpath_free(struct cat_fastpath *fp);
/* Queues the build of the index fast path of a published generation. */
void cat_generation_start_fastpath(struct cat_catalog *cat, struct cat_generation *gen,
                                   const struct vt_dataset_config *cfg);

/* Everything computed once per generation after its relation exists (sample
 * row, index, ...). Runs on the builder's connection. */
enum vt_err cat_generation_derive(struct cat_catalog *cat, duckdb_connection con,
                                  struct cat_generation *gen,
                                  const struct vt_dataset_config *cfg, struct vt_error *err);

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

#endif
