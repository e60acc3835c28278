/*
 * The catalog: every registered dataset, its state, and its generations.
 *
 * A generation is one published copy of a dataset: its own attached DuckDB
 * in-memory database (compressed) holding table "data" for a resident dataset,
 * or a view "data" over the files for a lazy one, plus the schema, row count
 * and everything derived per copy (index, Parquet export). Generations are
 * refcounted. A request takes one reference at its start
 * (cat_dataset_acquire) and uses only that generation until it releases it; a
 * reload builds a new generation beside the current one and swaps the pointer
 * under the dataset's lock; the old generation is detached when its last
 * reader lets go. That is the whole story of "in-flight queries finish on the
 * old copy".
 *
 * Builds run on the builder pool. DDL that creates or drops a generation's
 * database (ATTACH/DETACH) is serialised by one mutex; the long CREATE TABLE AS
 * runs inside the generation's own database and needs no lock.
 */
#ifndef VT_CATALOG_CATALOG_H
#define VT_CATALOG_CATALOG_H

#include <duckdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "engine/engine.h"
#include "sources/source.h"
#include "util/errors.h"

enum cat_state { CAT_PENDING, CAT_BUILDING, CAT_PUBLISHED, CAT_FAILED };
enum cat_refresh_source {
    CAT_REFRESH_NONE, CAT_REFRESH_STARTUP, CAT_REFRESH_MANUAL, CAT_REFRESH_SCHEDULE,
    CAT_REFRESH_CASCADE
};
/* How a dataset came to be: a saved query (POST /api/v1/queries) of kind
 * "temp" (memory only, lost on restart) or "query" (kept in
 * server.saved_queries_dir); anything else (config file, POST /datasets) is
 * CAT_SAVED_NONE and cannot be deleted. */
enum cat_saved { CAT_SAVED_NONE, CAT_SAVED_TEMP, CAT_SAVED_QUERY };

/* Coarse type families used by the schema endpoint and the query compiler. */
enum cat_logical {
    CAT_LOGICAL_BOOL, CAT_LOGICAL_INT, CAT_LOGICAL_FLOAT, CAT_LOGICAL_DECIMAL, CAT_LOGICAL_STRING,
    CAT_LOGICAL_DATE, CAT_LOGICAL_TIME, CAT_LOGICAL_TIMESTAMP, CAT_LOGICAL_BINARY, CAT_LOGICAL_LIST,
    CAT_LOGICAL_STRUCT, CAT_LOGICAL_OTHER
};

struct cat_column {
    char *name;
    char *type_sql;             /* DuckDB's type text, e.g. "DECIMAL(18,3)" */
    duckdb_type type;
    enum cat_logical logical;
    bool nullable;
};

struct cat_dataset;

/* The index fast path of a generation (src/index): built after it is
 * published (queries use DuckDB until it is ready), then immutable. */
struct index_fastpath;

/* Where a generation's fast path is (the status's "index"). */
enum cat_index_state {
    CAT_INDEX_NONE,     /* none: index.mode "none", lazy, or no column qualifies */
    CAT_INDEX_BUILDING, /* being built: queries use DuckDB meanwhile */
    CAT_INDEX_READY,
    CAT_INDEX_FAILED,   /* the build failed (out of memory, the file, the budget) */
};
const char *cat_index_state_name(enum cat_index_state s);

/* A generation as other modules see it: read-only once published. The
 * catalog's own state (refcount, database name, pinned files, export, fast
 * path) is behind `priv` (catalog_internal.h). */
struct cat_generation {
    char id[27];                /* ULID */
    char relation[48];          /* quoted relation for SQL: "g_01J..."."data" */
    bool lazy;
    int64_t rows;
    struct cat_column *cols;
    size_t n_cols;
    char *sample_json;          /* one row as a JSON object, or NULL when empty */
    int64_t published_at_us;    /* wall clock */
    struct cat_generation_private *priv;
};

struct cat_status {
    char *name;
    enum cat_state state;
    enum cfg_source_kind kind;
    bool lazy;
    bool has_generation;
    char generation_id[27];
    int64_t storage_bytes;      /* -1 = null */
    int64_t last_refresh_at_us; /* 0 = null */
    int64_t last_refresh_duration_ms; /* -1 = null */
    int64_t next_refresh_at_us; /* 0 = null */
    enum cat_refresh_source refresh_source;
    int64_t consecutive_failures;
    char *last_error;           /* NULL = null */
    int64_t rows;
    int64_t columns;
    int64_t delta_version;      /* the Delta table version served; -1 = null */
    struct strvec depends_on;
    /* For the metrics: */
    int64_t source_bytes;       /* files read by the current generation; -1 = none */
    /* its index fast path: state, memory held, bytes of its file (of which
     * the row store's, and the sorted values'); 0 = none */
    enum cat_index_state index_state;
    int64_t index_bytes;
    int64_t index_disk_bytes;
    int64_t row_store_bytes;
    int64_t sorted_bytes;
    int64_t json_pages_bytes;   /* the pre-rendered pages' own file */
    int64_t lazy_metadata_bytes; /* a lazy generation's footers and statistics; -1 = none */
    /* builds ended, by trigger (enum cat_refresh_source) and outcome (0 ok, 1 failed) */
    uint64_t builds[5][2];
};

struct jw;
/* The catalog as JSON (describe.c). One status entry object, as GET
 * /datasets lists them. */
void cat_write_status(struct jw *w, const struct cat_status *st);

struct cat_catalog;

struct cat_catalog *cat_create(const struct vt_config *cfg, duckdb_database db,
                               struct vt_error *err);
/* Where builds put downloads (temp_dir) and where lazy S3 objects are cached. */
void cat_set_dirs(struct cat_catalog *cat, const char *temp_dir, const char *cache_dir,
                  const char *export_dir);
/* Where index fast paths keep their files (created on first use; NULL: in
 * memory). */
void cat_set_index_dir(struct cat_catalog *cat, const char *dir);
/* TEST ONLY (the black-box tests; main.c's --test-build-gate, a flag --help
 * does not list and no config key, environment variable or request sets):
 * while the file `dir`/<dataset name> exists, a build of that dataset waits
 * before it reads its source, holding the dataset in "building" until the
 * test removes the file or the build's deadline passes. Lets a test see a
 * rebuild in progress with a tiny table instead of one big enough to take
 * seconds. Process-wide; call before any build starts. */
void cat_test_build_gate(const char *dir);
/* Registers the config's datasets and the saved queries restored from
 * server.saved_queries_dir (`saved`, n_saved; kind query), infers the
 * depends_on of every query dataset (one that fails the SQL gate or sits on
 * a cycle is failed, not built), sweeps the storage directory, and queues
 * the eager builds in topological order. Non-blocking. */
void cat_start(struct cat_catalog *cat, const struct vt_dataset_config *saved, size_t n_saved);
void cat_destroy(struct cat_catalog *cat);

/* Readiness per [server.startup] readiness; *out_datasets = registered count. */
bool cat_ready(struct cat_catalog *cat, int64_t *out_datasets);
/* fn(ctx) is called each time a startup build ends (published, failed or
 * skipped: whenever cat_ready's answer may have changed), on the builder's
 * thread with no catalog lock held. Set it at any time (NULL: none); a
 * listener set after the builds ended is not called, so ask cat_ready once
 * after setting it. */
void cat_set_ready_listener(struct cat_catalog *cat, void (*fn)(void *ctx), void *ctx);

/* Looks a dataset up and takes a reference on it (NULL when unknown). */
struct cat_dataset *cat_dataset_get(struct cat_catalog *cat, const char *name);
void cat_dataset_put(struct cat_dataset *ds);
const char *cat_dataset_name(const struct cat_dataset *ds);

/* The current generation with one reference taken, or NULL with err set:
 * DATASET_NOT_READY (pending/building, never published), DATASET_FAILED
 * (failed, never published). For on_start = lazy the first call starts the
 * build and waits for it until deadline_ms (monotonic; 0 = do not wait). */
struct cat_generation *cat_dataset_acquire(struct cat_dataset *ds, int64_t deadline_ms,
                                           struct vt_error *err);
/* Opens the generation's Parquet export, building it first if needed (once,
 * however many requests ask at the same time). Waits until deadline_ms. */
enum vt_err cat_export_open(struct cat_generation *gen, int64_t deadline_ms, int *out_fd,
                            uint64_t *out_size, struct vt_error *err);
/* The same when the export is already built: opens it (*out_fd, *out_size)
 * and returns true; false when it is not built yet (nothing is started, nothing
 * waits: the caller falls back to cat_export_open) or cannot be opened. Never
 * blocks beyond a short lock and open(2), so the HTTP loop may call it. */
bool cat_export_try_open(struct cat_generation *gen, int *out_fd, uint64_t *out_size);

/* A lazy generation's plan for a structured request (issue 17): the relation
 * over the files its predicates can match, or the count its metadata answers
 * (source_lazy_plan). For other generations out->relation stays NULL. */
enum vt_err cat_generation_plan_lazy(const struct cat_generation *gen,
                                     const struct query_request *req, struct arena *arena,
                                     const struct eng_job *job, struct source_lazy_plan *out,
                                     struct vt_error *err);
/* A lazy generation's local files changed under it (VT_ERR_SOURCE_CHANGED
 * from the plan above, issue 21 item 4): while it is still its dataset's
 * current generation, the dataset is rebuilt (at most once every couple of
 * seconds per generation; refresh_source "schedule"). Any thread. */
void cat_generation_source_changed(const struct cat_generation *gen);
/* A statement over a lazy generation failed in DuckDB (`err`, code
 * VT_ERR_QUERY_FAILED): when its files changed, err becomes
 * VT_ERR_SOURCE_CHANGED and the dataset is rebuilt; otherwise the message
 * loses file paths and SQL text (DuckDB's I/O errors name the generation's
 * internal files), which go to the log. No-op for other generations. */
void cat_generation_read_failed(const struct cat_generation *gen, struct vt_error *err);
/* Everything a statement over the whole generation reads made local (S3
 * lazy generations: every object of it through the range cache), held until
 * cat_generation_read_release(*out_holds). A no-op for other generations. */
enum vt_err cat_generation_read_all(const struct cat_generation *gen, int64_t deadline_ms,
                                    void **out_holds, struct vt_error *err);
void cat_generation_read_release(void *holds);

/* The fast path when it is ready, else NULL. */
const struct index_fastpath *cat_generation_fastpath(const struct cat_generation *gen);
/* Whether column `col` of the generation has an equality index. */
bool cat_generation_is_indexed(const struct cat_generation *gen, size_t col);
/* The schema description of a generation (describe.c), as GET /schema and
 * the MCP describe_dataset tool show it: name, rows, columns
 * [{name,type,logical,nullable}], indexed, sample. */
void cat_write_schema(struct jw *w, const char *name, const struct cat_generation *gen);
void cat_generation_release(struct cat_generation *gen);
/* How many generations have been dropped since the process started: caches
 * keyed by generation (exec's prepared statements) drop theirs when it moves. */
uint64_t cat_generations_dropped(void);

/* Status snapshots (caller frees with cat_status_free / cat_status_list_free). */
bool cat_status_of(struct cat_catalog *cat, const char *name, struct cat_status *out);
void cat_status_free(struct cat_status *st);
size_t cat_status_list(struct cat_catalog *cat, struct cat_status **out);
void cat_status_list_free(struct cat_status *list, size_t n);

/* ------------------------------------------------------------ lifecycle */

/* The outcome of one build, for callers that wait for it (reload,
 * registration). Refcounted: the build holds a reference until it ends. */
struct cat_build_result {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int refs;
    bool finished;
    bool ok;
    int64_t rows;
    int64_t columns;
    int64_t elapsed_ms;
    struct vt_error err;
};

struct cat_build_result *cat_build_result_new(void);
void cat_build_result_put(struct cat_build_result *r);
/* Waits for the build until deadline_ms (monotonic; 0 = no limit). True when
 * it finished (then the fields are final). */
bool cat_build_result_wait(struct cat_build_result *r, int64_t deadline_ms);

/* Rebuilds a dataset now (refresh_source `source`). DATASET_NOT_FOUND, or BUSY
 * when a build is already queued or running. *out_result gets a reference. */
enum vt_err cat_reload(struct cat_catalog *cat, const char *name, enum cat_refresh_source source,
                       struct cat_build_result **out_result, struct vt_error *err);
/* reload-all: enqueues every reloadable dataset (in topological order of
 * depends_on, one level after the other), lists datasets already building as
 * skipped, and leaves out pending datasets with on_start lazy or skip. */
void cat_reload_all(struct cat_catalog *cat, struct strvec *out_enqueued,
                    struct strvec *out_skipped);
/* Registers a new dataset and builds it. DATASET_EXISTS when the name is taken.
 * When the build fails the dataset is removed again (see the result). */
enum vt_err cat_register_dataset(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                                 bool from_config, struct cat_build_result **out_result,
                                 struct vt_error *err);
bool cat_has_dataset(struct cat_catalog *cat, const char *name);
/* A counter that moves whenever a name is registered or unregistered: what
 * depends only on the set of names (the SQL gate's answer) may be kept while
 * it stays the same. */
uint64_t cat_names_epoch(struct cat_catalog *cat);
/* Whether `name` is taken ignoring case (registration refuses "Trips" beside
 * "trips"); the registered spelling goes to out_existing (may be NULL). */
bool cat_name_taken(struct cat_catalog *cat, const char *name, char *out_existing, size_t cap);
/* Checks that a dataset's source can be opened now, as registration's build
 * would first do (the files or Delta log exist and are readable, the S3
 * listing answers), without reading data: SOURCE_EMPTY or SOURCE_UNAVAILABLE.
 * Query datasets have no source and pass. */
enum vt_err cat_check_source(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                             struct vt_error *err);

/* ------------------------------------------------ query datasets (queries.c)
 *
 * A dataset of kind "query" reads other datasets through SQL checked by the
 * SQL gate (src/sql). Its depends_on is inferred from that SQL, never taken
 * on trust: at registration, at startup, and checked again by every build. */

/* Runs the gate over cfg->sql and sets cfg->depends_on to the datasets it
 * reads. With config_only, only datasets of the config file count (config
 * datasets cannot depend on runtime ones). A dependency cycle is
 * DEPENDENCY_CYCLE; the gate's own codes otherwise (SQL_*). `con` is any
 * connection of the process database (NULL: the calling pool worker's, or
 * a short-lived one elsewhere). */
enum vt_err cat_query_infer(struct cat_catalog *cat, duckdb_connection con,
                            struct vt_dataset_config *cfg, bool config_only, struct vt_error *err);
/* Binds cfg->sql over the current generations of cfg->depends_on (waiting
 * until deadline_ms for lazy first builds) without running it: QUERY_FAILED
 * with DuckDB's message when it does not bind, UNKNOWN_COLUMN when
 * materialize.sort_by or index.columns name a column it does not return,
 * DATASET_NOT_READY / DATASET_FAILED for an upstream that has no generation.
 * `con` NULL: the calling pool worker's connection. */
enum vt_err cat_query_describe(struct cat_catalog *cat, duckdb_connection con,
                               const struct vt_dataset_config *cfg, int64_t deadline_ms,
                               struct vt_error *err);

struct cat_saved_opts {
    enum cat_saved kind;        /* CAT_SAVED_TEMP or CAT_SAVED_QUERY */
    int64_t ttl_ms;             /* temp: unregistered this long after registration; 0 = never */
    int64_t deadline_ms;        /* the first build is interrupted then (monotonic; 0 = only
                                 * refresh.timeout bounds it) */
    bool remove_on_failure;     /* a failed first build unregisters it (synchronous create);
                                 * else it stays, failed, with last_error */
};
/* Registers a saved query (cfg: kind query, depends_on inferred) and queues
 * its first build; *out_result gets a reference. NAME_TAKEN when the name is
 * taken ignoring case; SQL_UNKNOWN_TABLE when a dependency was unregistered
 * meanwhile. */
enum vt_err cat_register_saved(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                               const struct cat_saved_opts *opts,
                               struct cat_build_result **out_result, struct vt_error *err);
/* Unregisters a saved query: DATASET_NOT_FOUND, NOT_DELETABLE (not created
 * through POST /queries), HAS_DEPENDENTS (their names go to out_dependents,
 * which may be NULL). *out_kind (may be NULL) says which kind it was, so the
 * caller removes the file of a "query". In-flight requests finish on the
 * generation they hold; its storage files go with its last reader. */
enum vt_err cat_remove_saved(struct cat_catalog *cat, const char *name,
                             struct strvec *out_dependents, enum cat_saved *out_kind,
                             struct vt_error *err);

/* One saved query as GET /api/v1/queries lists it. */
struct cat_saved_summary {
    char *name;
    enum cat_saved kind;
    enum cat_state state;
    struct strvec depends_on;
    int64_t rows;               /* of the current generation; 0 before the first publish */
};
/* Saved queries in registration order (free with cat_saved_list_free). */
size_t cat_saved_list(struct cat_catalog *cat, struct cat_saved_summary **out);
bool cat_saved_of(struct cat_catalog *cat, const char *name, struct cat_saved_summary *out);
void cat_saved_list_free(struct cat_saved_summary *list, size_t n);
const char *cat_saved_name(enum cat_saved k);

/* ------------------------------------------ cluster hooks (src/cluster)
 *
 * The catalog knows nothing of S3 or roles: the cluster module plugs in
 * here. A writer publishes every generation it builds before it serves it
 * (an error fails the build: the previous generation keeps serving, as
 * everywhere else); a reader builds no generation from a source but imports
 * what the writer published. */

/* A generation built by another process: what to load and how it was made. */
struct cat_import {
    char id[27];                /* the writer's generation id (kept as is) */
    bool lazy;                  /* served from files, not loaded into memory */
    /* Local Parquet files to load (resident), or to serve as a view (lazy
     * with casts). */
    struct strvec files;
    /* Lazy without casts: the shared files as a lazy source (kind parquet,
     * an s3:// location and its s3 block): range reads, pruning. */
    struct vt_dataset_config *lazy_source;
    /* Columns written as another type (HUGEINT as DECIMAL(38,0)) and read
     * back as their own. */
    struct strvec cast_names, cast_types;
    int64_t published_at_us;    /* the writer's publish time */
    int64_t build_ms;           /* the writer's build duration */
    enum cat_refresh_source refresh_source; /* the writer's trigger */
    /* A local file holding exactly the generation's Parquet (the writer's
     * bytes), served as its export; ownership passes to the generation. */
    char *export_file;
    /* Else where the cluster fetches those bytes from when the export is
     * first asked for (hooks.fetch_export); ownership passes too. */
    char *export_remote;
};
void cat_import_release(struct cat_import *imp);

struct cat_hooks {
    void *ctx;
    /* Writer: called on the build's thread (with its connection, bounded by
     * the build's job: deadline, cancel) after `gen` is built and before it
     * is published locally. source = the build's trigger. */
    enum vt_err (*publish)(void *ctx, duckdb_connection con, const struct eng_job *job,
                           const struct vt_dataset_config *cfg, struct cat_generation *gen,
                           enum cat_refresh_source source, struct vt_error *err);
    /* Reader: replaces reading the source. Fills *imp with the generation to
     * load for the dataset (the one the cluster last saw in CURRENT). */
    enum vt_err (*import)(void *ctx, const struct eng_job *job,
                          const struct vt_dataset_config *cfg, struct cat_import *imp,
                          struct vt_error *err);
    /* Fetches the Parquet bytes of an imported generation (its
     * cat_import.export_remote) into `path`, for its export. */
    enum vt_err (*fetch_export)(void *ctx, const char *remote, const char *path,
                                struct vt_error *err);
    /* Every status reports its generation id (not only lazy ones). */
    bool report_every_generation;
    /* A replaced generation stays readable this long (?generation= pins). */
    int64_t keep_previous_ms;
    /* No refresh timers, cascades or startup builds (readers). */
    bool no_builds;
};
/* Before cat_start. */
void cat_set_hooks(struct cat_catalog *cat, const struct cat_hooks *hooks);

/* The generation `id` of the dataset (the current one, or the previous one
 * while it is kept) with a reference; id NULL = cat_dataset_acquire. When it
 * has neither: GENERATION_NOT_AVAILABLE (409; newer than the current one:
 * not loaded here yet) or GENERATION_GONE (410; older: collected). */
struct cat_generation *cat_dataset_acquire_id(struct cat_dataset *ds, const char *id,
                                              int64_t deadline_ms, struct vt_error *err);
/* What the writer publishes of a generation beside its relation. */
const char *cat_generation_source_version(const struct cat_generation *gen);
int64_t cat_generation_build_ms(const struct cat_generation *gen);
/* Hands `path` (a file of exactly this generation's Parquet, owned by the
 * catalog from now on, removed with the generation) to the export. */
void cat_generation_set_export(struct cat_generation *gen, const char *path, uint64_t size);
/* Readers: registers a dataset the writer published, without building it
 * (a build imports it: cat_reload); replaces nothing. DATASET_EXISTS. */
enum vt_err cat_register_remote(struct cat_catalog *cat, const struct vt_dataset_config *cfg,
                                enum cat_saved saved, struct vt_error *err);
/* Readers: removes a dataset the writer no longer has (dependents or not). */
bool cat_unregister_name(struct cat_catalog *cat, const char *name);
/* The current generation id of a dataset ("" when none). */
bool cat_current_id(struct cat_catalog *cat, const char *name, char out[27]);
/* How the dataset came to be (for the shared catalog). */
enum cat_saved cat_dataset_saved(struct cat_dataset *ds);
bool cat_dataset_from_config(const struct cat_dataset *ds);
/* A copy of the dataset's configuration (free with config_dataset_free). */
int cat_dataset_config(struct cat_dataset *ds, struct vt_dataset_config *out);
/* The names of every registered dataset, in registration order. */
void cat_names(struct cat_catalog *cat, struct strvec *out);
/* Whether the set of dataset names is known: always, except on a reader
 * before it has read the shared catalog. Until then an unknown name is
 * DATASET_NOT_READY (503, retry elsewhere), not DATASET_NOT_FOUND (404). */
bool cat_names_known(struct cat_catalog *cat);
void cat_set_names_known(struct cat_catalog *cat, bool known);
/* The error for a name that is not registered: 404, or 503 while the names
 * are not known yet. Returns the code. */
enum vt_err cat_unknown_name(struct cat_catalog *cat, const char *name, struct vt_error *err);
/* Drops the previous generations kept past their time (called now and then). */
void cat_expire_previous(struct cat_catalog *cat);

const char *cat_state_name(enum cat_state s);
const char *cat_refresh_source_name(enum cat_refresh_source s);
const char *cat_logical_name(enum cat_logical l);
enum cat_logical cat_logical_of(duckdb_type t);

#endif
