/*
 * Sources: turning a dataset's configured source into something DuckDB reads.
 *
 * source_resolve() looks at the source now (lists files, reads a Delta log,
 * lists S3 objects and brings them to local disk) and returns a snapshot: the
 * local files to read, their partition values, the schema, and one SELECT over
 * them. source_select_sql() adds the dataset's `columns` projection; the
 * catalog wraps it in CREATE TABLE (resident) or CREATE VIEW (lazy).
 *
 * Kinds and where they are implemented (sources_internal.h has the layers):
 *   parquet, local or s3 (path, glob, directory, hive) -> parquet.c
 *   delta, local or s3                                 -> delta.c
 * over one storage interface (storage_local.c, storage_s3.c).
 *
 * A snapshot owns the local files made for it: downloads of a resident build
 * (deleted on release) and the links that pin a lazy generation's local files
 * (removed on release). source_snapshot_release() is the one way to free it.
 *
 * Failures a startup treats as "warn and skip" rather than "failed":
 *   VT_ERR_SOURCE_EMPTY (no files, zero rows, empty Delta table, no Delta log)
 *   VT_ERR_SOURCE_UNAVAILABLE with the flag out_access_denied
 */
#ifndef VT_SOURCES_SOURCE_H
#define VT_SOURCES_SOURCE_H

#include <duckdb.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "util/errors.h"
#include "util/strbuf.h"

struct arena;
struct query_request;
struct range_cache_lease;
struct source_lazy;

struct source_file {
    char *path;                 /* local path DuckDB reads */
    int64_t size;               /* bytes */
    char **partition_values;    /* n_partitions entries (NULL entry = SQL NULL), or NULL */
    uint64_t dv;                /* its deletion vector's number in the statements (dvset.c), 0:
                                 * none; registered by the snapshot, removed on release */
};

struct source_snapshot {
    enum cfg_source_kind kind;
    struct source_file *files;
    size_t n_files;
    /* Partition columns (Delta partitionColumns, hive key=value directories).
     * Types are DuckDB type names ("BIGINT", "DATE", ...). */
    char **partition_columns;
    char **partition_types;
    size_t n_partitions;
    /* Every output column in order (file columns, then partition columns for
     * Parquet; the table schema for Delta), as DuckDB column definitions. */
    char **schema_names;
    char **schema_types;
    size_t n_schema;
    int64_t total_bytes;        /* sum of data file sizes (force_lazy_above_mb) */
    char *version;              /* Delta table version or a listing digest */
    /* The complete SELECT (all columns, in schema order). */
    char *select_sql;
    /* Owned local files: temporary downloads (deleted on release) and the
     * directory of links pinning a lazy generation's files, with the files
     * kept open for links that could not be hard links. */
    char **temp_files;
    size_t n_temp_files;
    char *pin_dir;
    /* A build's helper snapshot (the Delta checkpoint reads): its pin
     * directory is <temp>/scratch-<new ULID>, never the generation's
     * lazy-<pin_name>, which its release would otherwise remove with the
     * generation's own links. Set before the first fetch into it. */
    bool scratch;
    int *pin_fds;
    size_t n_pin_fds;
    /* Each link in pin_dir and the path it stands for, so that a message
     * naming the link names the source's file (source_snapshot_name_files). */
    char **link_paths;
    char **link_sources;
    size_t n_links;
    /* Lazy snapshots: the metadata read once (footers, statistics) that plans
     * every request (lazy.c); NULL for resident ones. */
    struct source_lazy *lazy;
    /* Cached S3 ranges the build reads (footers, a first row group) held
     * until source_snapshot_settle(). */
    struct range_cache_lease *holds;
};

/* The SQL functions the snapshots' statements call (vt_dv_deleted, which
 * drops rows deletion vectors removed; vt_variant_json, which turns Delta
 * variant values into JSON text): registered once per database, before any
 * build reads a source. */
#define SOURCE_DV_FUNCTION "vt_dv_deleted"
#define SOURCE_VARIANT_FUNCTION "vt_variant_json"
enum vt_err source_functions_register(duckdb_database db, struct vt_error *err);

/* What requests may reach (policy.c): local roots, S3 endpoints, credential
 * variables, from the config. */
struct source_policy;
struct source_policy *source_policy_create(const struct vt_config *cfg);
void source_policy_destroy(struct source_policy *p);
/* A dataset block a request brings (registration, persist): its local
 * location must lie inside the roots, its s3.endpoint and s3.*_env names must
 * be allowed; VT_ERR_SOURCE_NOT_ALLOWED naming what is not. Datasets of the
 * config file are not checked: the operator wrote them. */
enum vt_err source_policy_check(const struct source_policy *p,
                                const struct vt_dataset_config *ds, struct vt_error *err);
/* The directory a config file's dataset may read besides the roots (its
 * location up to the first wildcard, as written and after links: an opaque
 * string for source_context.extra_root); NULL for S3. Caller frees. */
char *source_policy_extra_root(const char *location);
/* A dataset a config reload adds: its directory joins the roots (when
 * server.allowed_roots is empty), its s3.endpoint and s3.*_env names the
 * allowed ones. Safe while builds run. */
void source_policy_add_dataset(struct source_policy *p, const struct vt_dataset_config *ds);
/* Whether DuckDB may open `real_path` itself (inside the directories it was
 * confined to at start); a file it may not is read through a link in the
 * build's pin directory. True without a policy. */
bool source_policy_engine_reads(const struct source_policy *p, const char *real_path);

struct source_context {
    const char *cache_dir;      /* the S3 range cache's directory (bounded, rangecache.h) */
    const char *temp_dir;       /* scratch space for downloads and pins */
    bool for_lazy;              /* the snapshot backs a lazy view (keep files) */
    int64_t cache_max_bytes;    /* its budget; 0 = VT_S3_CACHE_DEFAULT_MAX_BYTES */
    /* The listing cache of S3 Parquet locations (listcache.c; [datafusion]
     * list_files_cache*): off unless list_cache. */
    bool list_cache;
    int64_t list_cache_max_bytes;
    int64_t list_cache_ttl_secs; /* 0: never expires */
    const char *pin_name;       /* names the pin directory of a lazy snapshot's local files
                                 * (<temp_dir>/lazy-<pin_name>; the generation id) */
    /* DuckDB for reading checkpoints and file schemas: the builder's own
     * connection when the resolve runs on one (its deadline interrupts it),
     * else a connection to `db`. Both NULL: a database of its own, opened
     * through the engine module (tools and tests). */
    duckdb_database db;
    duckdb_connection con;
    /* Confinement: local paths must resolve inside the policy's roots or
     * extra_root (NULL policy: unconfined, for tools and tests). */
    const struct source_policy *policy;
    const char *extra_root;
    /* The build's bounds: listing, S3 requests and downloads stop at
     * deadline_ms (monotonic; 0 = none) or when *cancel turns true. */
    int64_t deadline_ms;
    const atomic_bool *cancel;
};

/* Resolves `ds` now. On failure sets err; *out_access_denied (may be NULL) is
 * set true when the failure was an access-denied answer from storage. */
enum vt_err source_resolve(const struct vt_dataset_config *ds, const struct source_context *ctx,
                           struct source_snapshot *out, bool *out_access_denied,
                           struct vt_error *err);

/* The bytes of the source's data files now, without downloading anything
 * (server.force_lazy_above_mb decides residency before resolving). */
enum vt_err source_measure(const struct vt_dataset_config *ds, const struct source_context *ctx,
                           int64_t *out_bytes, bool *out_access_denied, struct vt_error *err);

/* Where downloads go: ctx->temp_dir, else $TMPDIR, else /tmp. */
const char *source_temp_dir(const struct source_context *ctx);

/* The snapshot's SELECT with the dataset's `columns` projection (NULL/empty =
 * all), names checked against the schema (unknown -> VT_ERR_INVALID_CONFIG). */
enum vt_err source_select_sql(const struct source_snapshot *snap, const struct strvec *columns,
                              struct strbuf *out, struct vt_error *err);

/* Frees the snapshot and removes the files it owns (downloads, pins). */
void source_snapshot_release(struct source_snapshot *snap);
/* Rewrites err's message to name the source's files where it names the
 * snapshot's links to them (a DuckDB error reading a pinned file), so a
 * failed build says which file of the source is broken, not which link in
 * the temp directory. Call before the release. */
void source_snapshot_name_files(const struct source_snapshot *snap, struct vt_error *err);
/* Records that `link` (in the pin directory) stands for `source`; false out
 * of memory (the message then names the link). */
bool source_snapshot_add_link(struct source_snapshot *snap, const char *link, const char *source);
/* The build is done reading through the snapshot: what it held in the S3
 * range cache may be evicted again. */
void source_snapshot_settle(struct source_snapshot *snap);

/* A lazy generation's plan for one request (issue 17): the files its
 * predicates can match, from partition values and footer statistics read at
 * build time. */
struct source_lazy_plan {
    const char *relation;       /* the FROM item over those files (in `arena`) */
    struct range_cache_lease *holds; /* S3: the ranges fetched for it, held until
                                      * source_lazy_plan_release() */
    bool count_known;           /* a count answered from the metadata alone */
    int64_t count;
    size_t files, files_read;   /* in the generation / left after pruning */
    size_t row_groups, row_groups_read;
    /* Per predicate of the request (in `arena`; NULL when none): true when
     * it is on a partition column and every file read matches it as a whole,
     * so the statement over `relation` need not test it row by row. */
    bool *pred_decided;
    size_t n_pred_decided;
};
enum vt_err source_lazy_plan(const struct source_lazy *lz, const struct query_request *req,
                             struct arena *arena, int64_t deadline_ms, const atomic_bool *cancel,
                             struct source_lazy_plan *out, struct vt_error *err);
void source_lazy_plan_release(struct source_lazy_plan *plan);
/* Whether a local file of the generation changed since it was built
 * (rewritten in place, replaced or gone: source_lazy_plan answers such a
 * request VT_ERR_SOURCE_CHANGED): true and err set (a message without paths)
 * for the first one found. Stats every local file. */
bool source_lazy_changed(const struct source_lazy *lz, struct vt_error *err);
/* Every byte of an S3 lazy generation local (an export, a SQL statement
 * over its view), held until released; nothing to do for local files. */
enum vt_err source_lazy_read_all(const struct source_lazy *lz, int64_t deadline_ms,
                                 const atomic_bool *cancel, struct range_cache_lease **holds,
                                 struct vt_error *err);
void source_lazy_read_release(struct range_cache_lease *holds);
/* The generation's relation over its first file only (malloc'd; NULL when
 * none): what the build's sample row reads, all of it present locally. */
char *source_lazy_first_relation(const struct source_lazy *lz);
/* Rows of the generation (from the footers), and the metadata's memory. */
int64_t source_lazy_rows(const struct source_lazy *lz);
size_t source_lazy_bytes(const struct source_lazy *lz);
/* Its files, and how many of them had their Parquet footer read at build (the
 * others' rows and statistics came from the table's log: Delta add.stats). */
size_t source_lazy_file_count(const struct source_lazy *lz);
size_t source_lazy_footers_read(const struct source_lazy *lz);
/* Bytes the S3 range cache of lazy datasets holds now (all datasets). */
int64_t source_range_cache_bytes(void);

#endif
