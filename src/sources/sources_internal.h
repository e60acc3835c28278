/*
 * Internals shared by the files of src/sources (not for other modules; tests
 * and tools may use them). Three layers under the resolvers:
 *
 *   storage   where a source's bytes live: one small ops table (list, stat,
 *             read a byte range, fetch as a local path DuckDB can read) with a
 *             local and an S3 implementation (storage_local.c, storage_s3.c).
 *             A storage is rooted at a location; names are relative to it
 *             ('/'-separated), or absolute for data a Delta log names
 *             elsewhere ("/abs/path" locally, "s3://bucket/key" on S3).
 *             Resolvers never ask which one they have.
 *   scan      the SELECT over a set of local files (scan.c): read_parquet over
 *             the paths, union_by_name, each output column an expression over
 *             a file column or a per-file partition value.
 *   duck      the resolver's DuckDB connection (scan.c): the builder's own
 *             connection when there is one, else a connection to the process
 *             database, always through the engine module, so memory_limit and
 *             temp_directory apply and a build's deadline interrupts it.
 *
 * Resolvers: parquet.c (local and S3 Parquet: paths, globs, directories,
 * hive partitions) and delta.c (Delta logs); source.c dispatches by kind.
 */
#ifndef VT_SOURCES_INTERNAL_H
#define VT_SOURCES_INTERNAL_H

#include <duckdb.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query/query.h"
#include "sources/source.h"
#include "util/arena.h"
#include "util/strbuf.h"

/* ---- storage ------------------------------------------------------------ */

struct storage_object {
    char *name;                 /* relative to the storage root ("a/b.parquet") */
    int64_t size;
    char *etag;                 /* S3 ETag as sent (quotes included); NULL locally */
};

struct storage_listing {
    struct storage_object *items;
    size_t n, cap;
};

/* What a fetched file is for. */
enum storage_use {
    STORAGE_USE_BUILD,          /* read once by a resident build: local files in place, S3
                                 * objects as temp files the snapshot deletes */
    STORAGE_USE_KEEP,           /* read by a lazy generation until it goes: local files
                                 * pinned (links), S3 objects in the range cache (lazy) */
    STORAGE_USE_BUILD_PINNED,   /* read once by a resident build from files that may be
                                 * replaced meanwhile (Parquet sources): local files
                                 * pinned (links) until the snapshot is released, S3
                                 * objects as for STORAGE_USE_BUILD. DuckDB 1.4.4 opens
                                 * a file more than once in one build (schema, then
                                 * scan): read in place, a source replaced by a rename
                                 * meanwhile was read half old, half new
                                 * ("TProtocolException: Invalid data") */
};

/* One object to make readable by DuckDB. */
struct storage_fetch {
    const char *name;           /* as listed, or absolute */
    int64_t size;               /* expected size; -1 unknown (then filled in locally) */
    const char *etag;           /* S3: sent as If-Match and part of the cache key; NULL:
                                 * the object is immutable (Delta) and keyed by size */
    char *path;                 /* out: local path (caller frees) */
    /* out, objects kept for a lazy generation whose other bytes come later
     * (S3: the sparse file at `path` holds the footer): the object's number
     * (> 0) in the storage's reader (storage_take_reader); 0 otherwise. */
    size_t kept;
};

struct storage;
struct storage_reader;

struct storage_ops {
    const char *scheme;         /* "file" or "s3" (messages, digests) */
    /* Objects below directory `dir` of the root ("" = the root), at most
     * `max_depth` directories down (0 = direct children only, < 0 = any depth
     * up to VT_SOURCE_MAX_DEPTH), names > start_after (NULL = all), sorted by
     * name; at most VT_SOURCE_MAX_FILES. Fails with VT_ERR_SOURCE_EMPTY when
     * `dir` does not exist. */
    enum vt_err (*list)(struct storage *st, const char *dir, int max_depth,
                        const char *start_after, struct storage_listing *out,
                        struct vt_error *err);
    /* Size (and ETag) of one object; *out_missing (VT_ERR_OK) when there is
     * none, or when `name` is a directory. */
    enum vt_err (*stat)(struct storage *st, const char *name, struct storage_object *out,
                        bool *out_missing, struct vt_error *err);
    /* Bytes [off, off + len) of an object into memory (len < 0: to the end),
     * at most `max` bytes (larger fails with VT_ERR_LIMIT_EXCEEDED).
     * *out_missing (VT_ERR_OK) when it does not exist; out_missing NULL makes
     * that an error. *out is NUL-terminated (not counted in *out_len). */
    enum vt_err (*read)(struct storage *st, const char *name, int64_t off, int64_t len,
                        size_t max, char **out, size_t *out_len, bool *out_missing,
                        struct vt_error *err);
    /* Local paths DuckDB can read for n objects (in parallel where that helps).
     * Temporary copies are added to snap->temp_files, links to snap's pins, so
     * the snapshot's release removes them. */
    enum vt_err (*fetch)(struct storage *st, struct storage_fetch *items, size_t n,
                         enum storage_use use, struct source_snapshot *snap,
                         struct vt_error *err);
    /* The reader of the objects kept so far (NULL when none was, and for
     * storages whose files are whole local files); ownership passes. May be
     * NULL. */
    struct storage_reader *(*take_reader)(struct storage *st);
    /* The key this storage's listings are cached under (listcache.c),
     * malloc'd; NULL when its listings are not cached (local files: a
     * listing is cheap and must see every change). May be NULL. */
    char *(*listing_key)(struct storage *st);
    /* The storage name (for stat/read/fetch) of an object named by an
     * absolute URI in a Delta log (file:///..., s3://..., s3a://...):
     * VT_ERR_SOURCE_UNSUPPORTED when this storage cannot reach it. */
    enum vt_err (*absolute_name)(const struct storage *st, const char *uri, char **out,
                                 struct vt_error *err);
    void (*destroy)(struct storage *st);
};

/* Kept objects' bytes, read after the build (a lazy generation's queries
 * make present what they read). It outlives the storage that kept them. */
struct range_cache_span;
struct range_cache_lease;
struct storage_reader_ops {
    /* Makes need[0..n) of object `kept` present in its local file (the
     * fetch's path), within the deadline (0 none) and until *cancel; adds
     * leases to *holds (not evicted until released). */
    enum vt_err (*ensure)(struct storage_reader *r, size_t kept,
                          const struct range_cache_span *need, size_t n, int64_t deadline_ms,
                          const atomic_bool *cancel, struct range_cache_lease **holds,
                          struct vt_error *err);
    void (*destroy)(struct storage_reader *r);
};

struct storage_reader {
    const struct storage_reader_ops *ops;
};

struct storage {
    const struct storage_ops *ops;
    const char *location;       /* as configured, for messages (borrowed) */
    const struct source_context *ctx;
    const char *owner;          /* dataset name: owner of object-cache pins */
    bool access_denied;         /* set by any operation that met an access-denied answer */
};

/* Opens the storage a location names: "s3://bucket/prefix" (s3 settings from
 * `ds`), else a local path ("file://" stripped). `root` is the part of the
 * location that becomes the root (the location itself, or its literal prefix
 * before a glob). */
enum vt_err storage_open(const struct vt_dataset_config *ds, const char *root,
                         const struct source_context *ctx, struct storage **out,
                         struct vt_error *err);
void storage_close(struct storage *st);
bool storage_is_s3(const char *location);
/* The path part of a location: the key on S3 (after the bucket), the path
 * of a file:// URL, else the location itself. */
const char *storage_location_path(const char *location);
/* The storage's take_reader, or NULL when it has none. */
struct storage_reader *storage_take_reader(struct storage *st);
/* The storage's listing_key, or NULL when it has none. */
char *storage_listing_key(struct storage *st);
void storage_reader_close(struct storage_reader *r);
/* Where S3 objects of lazy datasets are cached, and where downloads go. */
const char *storage_cache_dir(const struct source_context *ctx, char *buf, size_t cap);

void storage_listing_release(struct storage_listing *l);
void storage_object_release(struct storage_object *o);
/* Appends a copy of (name, size, etag); -1 on allocation failure. */
int storage_listing_add(struct storage_listing *l, const char *name, int64_t size,
                        const char *etag);

enum vt_err storage_local_open(const char *root, const struct source_context *ctx,
                               struct storage **out, struct vt_error *err);
enum vt_err storage_s3_open(const char *root, const struct s3_config *cfg,
                            const struct source_context *ctx, struct storage **out,
                            struct vt_error *err);

/* ---- confinement (policy.c) ---------------------------------------------- */

/* The real path of a local `path` if it lies inside the policy's roots (or
 * extra_root); *out_missing (VT_ERR_OK, *out_real NULL) when it does not exist
 * there. A path outside gets VT_ERR_SOURCE_NOT_ALLOWED and the same message
 * whether it exists or not. NULL policy: no roots (only resolution). */
enum vt_err source_policy_confine(const struct source_policy *p, const char *extra_root,
                                  const char *path, char **out_real, bool *out_missing,
                                  struct vt_error *err);
/* The context's deadline passed or its owner cancelled: VT_ERR_TIMEOUT with a
 * message naming `what`, else VT_ERR_OK. */
enum vt_err source_check_bounds(const struct source_context *ctx, const char *what,
                                struct vt_error *err);

/* ---- the resolver's DuckDB ------------------------------------------------ */

struct source_duck;
enum vt_err source_duck_open(const struct source_context *ctx, struct source_duck **out,
                             struct vt_error *err);
void source_duck_close(struct source_duck *d);
/* Runs sql and calls fn for each row's first column as text (NULLs skipped). */
enum vt_err source_duck_each_text(struct source_duck *d, const char *sql,
                                  enum vt_err (*fn)(void *ud, const char *text, size_t len,
                                                    struct vt_error *err),
                                  void *ud, struct vt_error *err);

/* The columns the files hold (read_parquet(paths, union_by_name) without
 * reading row data): each column's DuckDB type tree, so nested fields renamed
 * by Delta column mapping can be rebuilt field by field. */
enum source_type_kind { SOURCE_T_PRIMITIVE, SOURCE_T_STRUCT, SOURCE_T_LIST, SOURCE_T_MAP };

struct source_probe_type {
    enum source_type_kind kind;
    int duck_type_id;           /* duckdb_type of this node */
    char *text;                 /* DuckDB's type text, e.g. "STRUCT(a INTEGER)" (top level) */
    char **child_names;         /* struct */
    struct source_probe_type *children; /* struct fields; [0] = list element / map value */
    size_t n_children;
    struct source_probe_type *key;      /* map key */
};

struct source_probe_col {
    char *name;                 /* as in the files */
    struct source_probe_type type;
};

struct source_probe {
    struct source_probe_col *cols;
    size_t n;
};

enum vt_err source_duck_probe(struct source_duck *d, const char *const *paths, size_t n,
                              struct source_probe *out, struct vt_error *err);
void source_probe_release(struct source_probe *p);
/* The column named `name` (exact, else ignoring case), or NULL. */
const struct source_probe_col *source_probe_find(const struct source_probe *p, const char *name);

/* ---- the SELECT over files (scan.c) ------------------------------------- */

/* One output column: a file column (partition < 0) or partition value k. */
struct source_scan_column {
    const char *name;           /* output name */
    int partition;              /* >= 0: index into the per-file partition values */
    const struct source_probe_col *file; /* file column; NULL: in no file (a NULL) */
    const char *type;           /* DuckDB type of the output: the CAST of a partition's text
                                 * or of the NULL of an absent column; NULL keeps the file's
                                 * own type (and VARCHAR for partition text) */
    /* Optional: writes the value expression from `ref` (the quoted column
     * reference); Delta uses it for column mapping and timestamps. */
    void (*convert)(const void *arg, const char *ref, const struct source_probe_type *file_type,
                    struct strbuf *out);
    const void *arg;
};

struct source_scan {
    const char *const *paths;   /* local files DuckDB reads */
    size_t n_paths;
    const struct source_scan_column *columns;
    size_t n_columns;
    size_t n_partitions;
    /* values[i * n_partitions + k]: text of partition k for file i (NULL = SQL NULL) */
    const char *const *partition_values;
    const uint64_t *dvs;        /* per file: its deletion vector (dvset.c), 0 none; or NULL */
};

/* The files a statement reads, as relation "d"; their partition values are
 * columns "__vt_pN" of "d" (picked by file_index) or of a relation "p" (one
 * row for all, or joined by file name with per-file deletion vectors). */
struct source_scan_files {
    const char *const *paths;
    size_t n;
    const char *const *pvals;   /* n * n_partitions texts (NULL = SQL NULL) */
    size_t n_partitions;
    const uint64_t *dvs;        /* per file, 0 none; NULL: no deletion vectors */
    /* A zero-row SELECT naming every column the whole set of files has
     * (typed NULLs), added by name, so a statement over some of the files
     * still finds the columns only others hold (NULL there); or NULL. */
    const char *carrier;
};

/* One SELECT (all columns, in order), malloc'd. Partition values join through the
 * files' names; paths and values are SQL string literals (they come from
 * listings and logs, never from query requests). */
enum vt_err source_scan_sql(const struct source_scan *scan, char **out, struct vt_error *err);
/* The select list alone ("expr AS \"name\", ...", malloc'd): a lazy
 * generation keeps it and writes the FROM for each query's files. */
enum vt_err source_scan_select_list(const struct source_scan *scan, char **out,
                                    struct vt_error *err);
/* The FROM item over these files with their partition values (picked by
 * file_index, a one-row cross join when they all share them, or the join by
 * file name when deletion vectors differ per file) and without the rows their
 * deletion vectors remove (NOT vt_dv_deleted(vector, file_row_number)). */
int source_scan_add_from(struct strbuf *out, const struct source_scan_files *f);
/* read_parquet([paths...], union_by_name = true, hive_partitioning = false[,
 * filename = '<filename_col>']): the FROM item of every statement here. */
int source_scan_add_read_parquet(struct strbuf *sb, const char *const *paths, size_t n,
                                 const char *filename_col);

/* ---- deleted-row sets of deletion vectors (dvset.c) ----------------------- */

struct delta_dv;
/* Registers a vector (ownership passes, also on failure: 0 = out of memory)
 * under a fresh number > 0 for vt_dv_deleted. */
uint64_t dvset_add(struct delta_dv *dv);
/* Removes and frees it (0: nothing). */
void dvset_remove(uint64_t id);
size_t dvset_count(void);
/* Positions in [lo, hi) vector `id` deletes (0 for id 0). */
uint64_t dvset_deleted_in(uint64_t id, uint64_t lo, uint64_t hi);

/* ---- variant values (variant.c) -------------------------------------------- */

/* Appends the JSON text of a Variant (metadata, value); -1 with *why set when
 * the bytes are malformed or the text would pass out's cap (out unchanged). */
int source_variant_json(const uint8_t *meta, size_t mlen, const uint8_t *val, size_t vlen,
                        struct strbuf *out, const char **why);
/* Registers vt_variant_json on con's database (source_functions_register). */
enum vt_err source_variant_register(duckdb_connection con, struct vt_error *err);

/* ---- listing cache (listcache.c) ------------------------------------------ */

/* A copy of the listing cached under `key` when younger than ttl_secs (0:
 * never expires); false when there is none. */
bool list_cache_get(const char *key, int64_t ttl_secs, struct storage_listing *out);
/* Keeps a copy of `l` under `key`, the oldest entries dropped to stay within
 * max_bytes. */
void list_cache_put(const char *key, const struct storage_listing *l, int64_t max_bytes);
size_t list_cache_bytes(void);

/* ---- statistics and verdicts of lazy generations (lazy_stats.c) ----------- */

enum lazy_class {
    LAZY_C_NONE, LAZY_C_BOOL, LAZY_C_INT, LAZY_C_FLOAT, LAZY_C_REAL, LAZY_C_DATE, LAZY_C_TS,
    LAZY_C_STR
};

/* A value in a column's domain. */
struct lazy_val {
    uint8_t kind;               /* 0 none, 1 int (i), 2 double (d), 3 string (s, n) */
    int64_t i;
    double d;
    const char *s;
    size_t n;
};

enum lazy_verdict { LAZY_SOME, LAZY_NONE, LAZY_ALL };

struct lazy_bounds {
    const struct lazy_val *min, *max;
    int64_t nulls, rows;        /* nulls -1 unknown */
};

/* A timestamp's text: "YYYY-MM-DD[( |T)HH:MM:SS[.f...]][Z|+HH|+HH:MM|-...]". */
struct lazy_ts {
    int64_t us;                 /* microseconds since the epoch (UTC when zoned) */
    int64_t offset_us;          /* the zone's offset (0 without one) */
    int digits;                 /* fraction digits written (6 for a date alone) */
    bool zoned;
};
bool lazy_parse_timestamp(const char *s, size_t n, struct lazy_ts *out);

/* The class of a DuckDB type name (LAZY_C_NONE: not compared). */
enum lazy_class lazy_class_of(const char *type);
/* Text of a statistic or partition value -> a value of the class (kind 0:
 * not understood). Strings point into `s`. */
struct lazy_val lazy_parse_val(enum lazy_class c, const char *s, size_t n);
/* A request value -> the column's domain (kind 0 when not comparable). */
struct lazy_val lazy_request_val(enum lazy_class c, const struct query_value *q);
/* a <=> b in the column's domain: -1, 0, 1, or 2 when not comparable. */
int lazy_cmp(enum lazy_class c, const struct lazy_val *a, const struct lazy_val *b);
/* The verdict of one predicate on values bounded by b. */
enum lazy_verdict lazy_pred_verdict(enum lazy_class c, const struct query_pred *p,
                                    const struct lazy_bounds *b);

/* ---- lazy generations (lazy.c) --------------------------------------------- */

/* What a table format's log says of one data file (Delta add.stats), in the
 * terms of the lazy generation's output columns. */
struct source_file_stats {
    int64_t rows;               /* its rows (before deletion vectors); -1: none, the
                                 * footer is read instead */
    char **mins, **maxs;        /* per output column: bound as text lazy_parse_val
                                 * reads, NULL unknown */
    int64_t *nulls;             /* per output column, -1 unknown */
};

/* Keeps what plans requests of a lazy snapshot (snap->lazy): per file its
 * rows and column statistics, from `file_stats` (n_files entries, or NULL:
 * Parquet sources) where it has rows, else from the file's footer, read once;
 * the output columns as the scan builds them, and the SELECT's column list.
 * Kept objects (S3) always have their footers read: their byte ranges are
 * what requests fetch. `reader` (ownership passes; NULL for whole local
 * files) reads more of the kept objects per request. */
enum vt_err source_lazy_build(struct source_duck *duck, struct source_snapshot *snap,
                              const struct vt_dataset_config *ds,
                              const struct source_context *ctx,
                              const struct storage_fetch *fetched, struct storage_reader *reader,
                              const struct source_scan_column *cols, size_t n_cols,
                              const struct source_file_stats *file_stats,
                              const char *select_list, struct vt_error *err);
void source_lazy_destroy(struct source_lazy *lz);
duckdb_connection source_duck_connection(struct source_duck *d);

/* ---- snapshot helpers (source.c) ----------------------------------------- */

/* Takes ownership of `path` as a temp file of the snapshot (deleted on release). */
int source_snapshot_add_temp(struct source_snapshot *snap, char *path);
/* A fresh file name in the temp directory: <temp>/vt-<tag>-<ulid>-<n>.parquet. */
char *source_temp_name(const struct source_context *ctx, const char *tag, size_t n);

/* ---- resolvers -------------------------------------------------------------- */

enum vt_err source_parquet_resolve(const struct vt_dataset_config *ds,
                                   const struct source_context *ctx,
                                   struct source_snapshot *out, bool *out_access_denied,
                                   struct vt_error *err);
enum vt_err source_parquet_measure(const struct vt_dataset_config *ds,
                                   const struct source_context *ctx, int64_t *out_bytes,
                                   bool *out_access_denied, struct vt_error *err);
/* kind = delta, location a local directory (or file:// URL) or s3://bucket/prefix. */
enum vt_err source_delta_resolve(const struct vt_dataset_config *ds,
                                 const struct source_context *ctx, struct source_snapshot *out,
                                 bool *out_access_denied, struct vt_error *err);
/* Bytes of the table's current data files (from the log; nothing is
 * downloaded), for server.force_lazy_above_mb before choosing residency. */
enum vt_err source_delta_measure(const struct vt_dataset_config *ds,
                                 const struct source_context *ctx, int64_t *out_bytes,
                                 bool *out_access_denied, struct vt_error *err);

#endif
