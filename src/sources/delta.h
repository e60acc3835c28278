/*
 * Delta Lake tables (local directories and s3:// prefixes) and the SELECT that
 * reads a resolved snapshot. Also the pieces shared with S3 parquet sources:
 * the snapshot's prebuilt SELECT and the DuckDB probe of data-file columns.
 *
 * Reading a table (delta.c):
 *   _delta_log/_last_checkpoint (a hint; stale or missing -> full listing) ->
 *   newest complete checkpoint (classic single/multi-part Parquet, or a v2
 *   checkpoint in JSON/Parquet with sidecars) -> JSON commits after it ->
 *   replay (delta_log.c) -> protocol check -> schema (delta_schema.c) ->
 *   active files -> SELECT text (delta_sql.c).
 *
 * Supported reader features: columnMapping (mode "name"), timestampNtz,
 * v2Checkpoint, vacuumProtocolCheck, typeWidening(-preview). Anything else
 * (deletionVectors, variantType, columnMapping mode "id", unknown names) fails
 * the dataset with VT_ERR_SOURCE_UNSUPPORTED naming the feature(s).
 *
 * Type mapping (Delta -> DuckDB): string VARCHAR, long BIGINT, integer INTEGER,
 * short SMALLINT, byte TINYINT, float FLOAT, double DOUBLE, boolean BOOLEAN,
 * binary BLOB, date DATE, timestamp TIMESTAMP WITH TIME ZONE, timestamp_ntz
 * TIMESTAMP, decimal(p,s) DECIMAL(p,s), struct STRUCT(..), array T[], map
 * MAP(K, V). Casting Parquet TIMESTAMP (INT96) to TIMESTAMPTZ uses the session
 * time zone: the engine connection must run with TimeZone = 'UTC'.
 */
#ifndef VT_SOURCES_DELTA_H
#define VT_SOURCES_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sources/source.h"

/* ---- entry points for the dispatcher (source.c) ------------------------- */

/* kind = delta, location a local directory (or file:// URL) or s3://bucket/prefix. */
enum vt_err source_delta_resolve(const struct vt_dataset_config *ds,
                                 const struct source_context *ctx, struct source_snapshot *out,
                                 bool *out_access_denied, struct vt_error *err);

/* Bytes of the table's current data files (from the log; nothing is
 * downloaded), for server.force_lazy_above_mb before choosing residency. */
enum vt_err source_delta_measure(const struct vt_dataset_config *ds,
                                 const struct source_context *ctx, int64_t *out_bytes,
                                 bool *out_access_denied, struct vt_error *err);

/* The table after log replay, before any data file is touched (tests and
 * measuring use it; source_delta_resolve builds on it). */
struct delta_table;
enum vt_err delta_table_open(const struct vt_dataset_config *ds, const struct source_context *ctx,
                             struct delta_table **out, bool *out_access_denied,
                             struct vt_error *err);
void delta_table_close(struct delta_table *t);
size_t delta_table_file_count(const struct delta_table *t);
const char *delta_table_file_log_path(const struct delta_table *t, size_t i); /* as logged */
int64_t delta_table_total_bytes(const struct delta_table *t);
int64_t delta_table_version(const struct delta_table *t);

/* For snapshots whose resolver stored a complete SELECT in snap->select_sql
 * (Delta and S3 parquet): wraps it with the `columns` projection, checking the
 * names against snap->schema_names (unknown -> VT_ERR_INVALID_CONFIG). */
enum vt_err source_prebuilt_select_sql(const struct source_snapshot *snap,
                                       const struct strvec *columns, struct strbuf *out,
                                       struct vt_error *err);

/* Frees every field of a snapshot built by these resolvers (select_sql
 * included) without touching files. source_snapshot_release() must free the
 * same fields. */
void delta_snapshot_release(struct source_snapshot *snap);
/* On a failed resolve: deletes the snapshot's temp_files, then releases it. */
void delta_snapshot_discard(struct source_snapshot *snap);

/* ---- schema (delta_schema.c) ---------------------------------------------- */

enum delta_type_kind { DELTA_T_PRIMITIVE, DELTA_T_STRUCT, DELTA_T_ARRAY, DELTA_T_MAP };

struct delta_field;

struct delta_type {
    enum delta_type_kind kind;
    char *name;                 /* Delta primitive name: "long", "decimal(10,2)", ... */
    char *duck;                 /* DuckDB type of this node (full, nested included) */
    struct delta_field *fields; /* struct */
    size_t n_fields;
    struct delta_type *elem;    /* array element, map value */
    struct delta_type *key;     /* map key */
};

struct delta_field {
    char *name;                 /* logical name */
    char *physical;             /* columnMapping physical name, or NULL */
    struct delta_type *type;
};

struct delta_schema {
    struct delta_field *fields;
    size_t n;
};

/* Parses metaData.schemaString. Unknown or unsupported types fail with a
 * message naming the column and type. */
enum vt_err delta_schema_parse(const char *schema_json, size_t len, struct delta_schema *out,
                               struct vt_error *err);
void delta_schema_release(struct delta_schema *s);
/* Whether any field (nested too) carries a columnMapping physical name. */
bool delta_schema_has_physical_names(const struct delta_schema *s);

/* ---- log replay (delta_log.c) --------------------------------------------- */

struct delta_pv {               /* one partitionValues entry */
    char *key;
    char *value;                /* NULL = null partition value */
};

struct delta_add {
    char *path;                 /* as in the log (URI-encoded, relative or absolute) */
    int64_t size;
    struct delta_pv *pvs;
    size_t n_pvs;
    bool has_dv;                /* carries a deletion vector */
};

struct delta_file_map;

struct delta_replay {
    /* protocol (last one wins) */
    bool have_protocol;
    int min_reader;
    bool have_reader_features;
    char **reader_features;
    size_t n_reader_features;
    /* metaData (last one wins) */
    bool have_metadata;
    char *schema_string;
    char **partition_columns;
    size_t n_partition_columns;
    char *column_mapping_mode;  /* configuration["delta.columnMapping.mode"] or NULL */
    char *format_provider;
    /* v2 checkpoint sidecars named by the checkpoint being read */
    char **sidecars;
    size_t n_sidecars;
    /* active files keyed by decoded path */
    struct delta_file_map *files;
    int64_t n_actions;
};

void delta_replay_init(struct delta_replay *r);
void delta_replay_release(struct delta_replay *r);
/* Applies newline-delimited JSON actions (a commit or a JSON checkpoint). In a
 * checkpoint, remove actions are tombstones and are not applied. */
enum vt_err delta_replay_text(struct delta_replay *r, const char *text, size_t len,
                              bool in_checkpoint, const char *what, struct vt_error *err);
/* One action line. */
enum vt_err delta_replay_line(struct delta_replay *r, const char *line, size_t len,
                              bool in_checkpoint, const char *what, struct vt_error *err);
/* Checks the protocol against what vitrine reads; VT_ERR_SOURCE_UNSUPPORTED
 * names every unsupported feature. */
enum vt_err delta_replay_check_protocol(const struct delta_replay *r, const char *location,
                                        struct vt_error *err);
/* The active files sorted by path (pointers into the replay; valid until the
 * next replay call or release). Caller frees the array only. */
enum vt_err delta_replay_active(const struct delta_replay *r, const struct delta_add ***out,
                                size_t *out_n, struct vt_error *err);
size_t delta_replay_active_count(const struct delta_replay *r);

/* Percent-decodes a Delta path (not '+'). false on a bad escape or NUL. */
bool delta_path_decode(const char *in, char *out, size_t cap);

/* ---- SELECT generation (delta_sql.c) ---------------------------------------- */

/* What the probe found in the data files for one top-level column: the
 * DuckDB type tree (struct fields by name) so nested column-mapped structs can
 * be rebuilt field by field. */
struct delta_probe_type {
    int kind;                   /* DELTA_T_* */
    int duck_type_id;           /* duckdb_type of this node */
    char **child_names;         /* struct */
    struct delta_probe_type *children; /* struct fields; [0] = list element / map value */
    size_t n_children;
    struct delta_probe_type *key;      /* map key */
};

struct delta_probe_col {
    char *name;                 /* as in the files */
    struct delta_probe_type type;
};

struct delta_probe {
    struct delta_probe_col *cols;
    size_t n;
};

void delta_probe_release(struct delta_probe *p);

/* A partition column of the SELECT: its values come from the per-file VALUES
 * list as text and are converted by type. */
struct delta_sql_partition {
    const char *name;           /* output column name */
    const struct delta_type *type; /* Delta type (NULL = keep VARCHAR) */
};

struct delta_sql_input {
    const char *const *paths;   /* local files DuckDB reads */
    size_t n_paths;
    /* Output columns in order. For a data column, field != NULL; for a partition
     * column, partition_index >= 0. */
    struct delta_sql_column {
        const char *name;
        const struct delta_field *field;   /* data column (Delta schema) or NULL */
        const char *duck_type;             /* data column without Delta schema: type to keep */
        int partition_index;               /* -1 for data columns */
        const struct delta_type *partition_type; /* NULL = VARCHAR text */
    } *columns;
    size_t n_columns;
    size_t n_partitions;
    /* values[i * n_partitions + k]: text of partition k for file i (NULL = SQL NULL) */
    const char *const *partition_values;
    const struct delta_probe *probe;
};

enum vt_err delta_sql_build(const struct delta_sql_input *in, struct strbuf *out,
                            struct vt_error *err);
/* The same as a malloc'd string (the snapshot's select_sql). */
enum vt_err delta_sql_build_string(const struct delta_sql_input *in, char **out,
                                   struct vt_error *err);

/* Appends a path for read_parquet's list: a SQL string literal with glob
 * metacharacters (* ? [) escaped as one-character classes, because DuckDB
 * expands every list entry as a glob. */
int delta_sql_add_path_literal(struct strbuf *sb, const char *path);

/* Opens a private in-memory DuckDB (no extension autoloading, TimeZone UTC). */
struct delta_duck;
enum vt_err delta_duck_open(struct delta_duck **out, struct vt_error *err);
void delta_duck_close(struct delta_duck *d);
/* Columns of read_parquet(paths, union_by_name) without reading row data. */
enum vt_err delta_duck_probe(struct delta_duck *d, const char *const *paths, size_t n,
                             struct delta_probe *out, struct vt_error *err);
/* Runs sql and calls fn for each row's first column as text (NULLs skipped). */
enum vt_err delta_duck_each_text(struct delta_duck *d, const char *sql,
                                 enum vt_err (*fn)(void *ud, const char *text, size_t len,
                                                   struct vt_error *err),
                                 void *ud, struct vt_error *err);
/* Top-level columns (name and DuckDB type text) of SELECT * FROM <from_sql> */
enum vt_err delta_duck_describe(struct delta_duck *d, const char *from_sql, char ***out_names,
                                char ***out_types, size_t *out_n, struct vt_error *err);

#endif
