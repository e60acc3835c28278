/*
 * Sources: turning a dataset's configured source into something DuckDB reads.
 *
 * source_resolve() looks at the source now (lists files, reads a Delta log,
 * lists and downloads S3 objects) and returns a snapshot: the local files to
 * read with their partition values. source_select_sql() turns a snapshot into
 * one SELECT statement over those files, which the catalog wraps in
 * CREATE TABLE (resident) or CREATE VIEW (lazy).
 *
 * Kinds and where they are implemented:
 *   parquet, local path/glob/dir  -> source_local.c
 *   delta, local or s3            -> delta.c (+ s3.c for object access)
 *   parquet on s3://              -> s3.c
 *
 * Failures a startup treats as "warn and skip" rather than "failed":
 *   VT_ERR_SOURCE_EMPTY (no files, zero rows, empty Delta table, no Delta log)
 *   VT_ERR_SOURCE_UNAVAILABLE with snapshot-independent flag out_access_denied
 */
#ifndef VT_SOURCES_SOURCE_H
#define VT_SOURCES_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "util/errors.h"
#include "util/strbuf.h"

struct source_file {
    char *path;                 /* local path DuckDB reads */
    int64_t size;               /* bytes */
    char **partition_values;    /* n_partitions entries (NULL entry = SQL NULL), or NULL */
};

struct source_snapshot {
    enum cfg_source_kind kind;
    struct source_file *files;
    size_t n_files;
    /* Explicit partition columns (Delta partitionColumns, S3 hive layouts we
     * parsed ourselves). Types are DuckDB type names ("INTEGER", "DATE", ...). */
    char **partition_columns;
    char **partition_types;
    size_t n_partitions;
    /* Local parquet: let DuckDB derive hive key=value columns from the paths. */
    bool hive_from_paths;
    /* Delta: the table schema as DuckDB column definitions in table order,
     * e.g. {"id", "BIGINT"}; the SELECT casts to these and fills missing
     * columns with NULL (schema evolution). n_schema == 0 when not known. */
    char **schema_names;
    char **schema_types;
    size_t n_schema;
    int64_t total_bytes;        /* sum of data file sizes (force_lazy_above_mb) */
    char *version;              /* Delta table version or an S3 listing digest; may be NULL */
    /* Files downloaded only for this build (resident S3): delete after the
     * CREATE TABLE finished. Cached files for lazy datasets are not listed. */
    char **temp_files;
    size_t n_temp_files;
    /* Delta and S3 parquet: the complete SELECT (all columns, in schema order)
     * built at resolve time, when the file columns were probed; NULL for local
     * parquet. source_select_sql() hands such snapshots to
     * source_prebuilt_select_sql() (delta.h), which adds the projection. */
    char *select_sql;
};

struct source_context {
    const char *cache_dir;      /* on-disk S3 object cache root (bounded, see s3.h) */
    const char *temp_dir;       /* scratch space for downloads */
    bool for_lazy;              /* the snapshot backs a lazy view (keep files) */
    int64_t cache_max_bytes;    /* S3 object cache budget; 0 = VT_S3_CACHE_DEFAULT_MAX_BYTES */
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

/* One SELECT over the snapshot's files, applying the dataset's `columns`
 * projection (NULL/empty = all). Column names are quoted, paths are SQL string
 * literals (they come from config or listings, never from query requests). */
enum vt_err source_select_sql(const struct source_snapshot *snap, const struct strvec *columns,
                              struct strbuf *out, struct vt_error *err);

void source_snapshot_release(struct source_snapshot *snap);

/* Implementations (dispatch in source.c). */
enum vt_err source_local_resolve(const struct vt_dataset_config *ds,
                                 struct source_snapshot *out, struct vt_error *err);
/* delta.h: source_delta_resolve(); s3_parquet.c: */
enum vt_err source_s3_parquet_resolve(const struct vt_dataset_config *ds,
                                      const struct source_context *ctx,
                                      struct source_snapshot *out, bool *out_access_denied,
                                      struct vt_error *err);
/* Bytes the source's objects hold now (one listing, nothing downloaded), so
 * force_lazy_above_mb can pick the residency before resolving. */
enum vt_err source_s3_parquet_measure(const struct vt_dataset_config *ds,
                                      const struct source_context *ctx, int64_t *out_bytes,
                                      bool *out_access_denied, struct vt_error *err);

#endif
