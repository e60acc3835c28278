/*
 * Delta Lake tables (local directories and s3:// prefixes, through the storage
 * interface of sources_internal.h). source_delta_resolve() (declared there) is
 * the entry point; this header has the pieces tests reach directly.
 *
 * Reading a table (delta.c):
 *   _delta_log/_last_checkpoint (a hint; stale or missing -> full listing) ->
 *   newest complete checkpoint (classic single/multi-part Parquet, or a v2
 *   checkpoint in JSON/Parquet with sidecars) -> JSON commits after it ->
 *   replay (delta_log.c) -> protocol check -> schema (delta_schema.c) ->
 *   active files -> SELECT text (scan.c, with the conversions of delta_sql.c).
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
    int64_t id;                 /* delta.columnMapping.id (Parquet field id), -1 none */
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
/* Whether any field of the type (nested too) carries a columnMapping physical
 * name: only such types need rebuilding field by field when read. */
bool delta_type_has_physical_names(const struct delta_type *t);
/* Whether the type holds a variant (nested too): read through
 * vt_variant_json, field by field. */
bool delta_type_has_variant(const struct delta_type *t);

/* ---- log replay (delta_log.c) --------------------------------------------- */

struct delta_pv {               /* one partitionValues entry */
    char *key;
    char *value;                /* NULL = null partition value */
};

/* A deletion vector descriptor (add.deletionVector). */
struct delta_dv_desc {
    char storage;               /* 'i' inline, 'u' UUID-named file, 'p' absolute path */
    char *path_or_inline;
    int64_t offset;             /* -1: absent */
    int64_t size_in_bytes;
    int64_t cardinality;
};

struct delta_add {
    char *path;                 /* as in the log (URI-encoded, relative or absolute) */
    int64_t size;
    struct delta_pv *pvs;
    size_t n_pvs;
    struct delta_dv_desc *dv;   /* its deletion vector, or NULL */
    char *dv_id;                /* the vector's uniqueId (the file's key with path), or NULL */
    char *stats;                /* add.stats (JSON text), or NULL */
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

/* ---- deletion vectors (delta_dv.c) ------------------------------------------ */

struct delta_dv;
struct storage;
/* Z85 text (a multiple of 5 characters) -> bytes; false on a bad character,
 * a group over 2^32 or more than cap bytes. */
bool delta_z85_decode(const char *in, size_t n, unsigned char *out, size_t cap, size_t *out_n);
/* A serialized RoaringBitmapArray (magic, bucket count, buckets) holding at
 * most max_card positions (0: VT_DELTA_MAX_DV_ROWS). */
enum vt_err delta_dv_parse(const unsigned char *buf, size_t n, uint64_t max_card,
                           struct delta_dv **out, struct vt_error *err);
/* One framed vector of a vector file: big-endian size, bytes, CRC-32. */
enum vt_err delta_dv_decode_framed(const unsigned char *p, size_t n, int64_t size_in_bytes,
                                   uint64_t max_card, struct delta_dv **out,
                                   struct vt_error *err);
enum vt_err delta_dv_decode_inline(const struct delta_dv_desc *d, struct delta_dv **out,
                                   struct vt_error *err);
enum vt_err delta_dv_desc_check(const struct delta_dv_desc *d, struct vt_error *err);
/* The file a 'u' or 'p' descriptor names: relative to the table for 'u',
 * the descriptor's (URI-encoded) absolute path for 'p'. Caller frees. */
enum vt_err delta_dv_file_name(const struct delta_dv_desc *d, char **out, struct vt_error *err);
/* Reads the vector a descriptor names (inline, or from `name` of storage). */
enum vt_err delta_dv_load(struct storage *st, const char *name, const struct delta_dv_desc *d,
                          struct delta_dv **out, struct vt_error *err);
void delta_dv_free(struct delta_dv *dv);
bool delta_dv_contains(const struct delta_dv *dv, uint64_t pos);
uint64_t delta_dv_cardinality(const struct delta_dv *dv);
/* Deleted positions in [lo, hi). */
uint64_t delta_dv_range_cardinality(const struct delta_dv *dv, uint64_t lo, uint64_t hi);
size_t delta_dv_bytes(const struct delta_dv *dv);

/* ---- per-file statistics (delta_stats.c) ------------------------------------- */

/* Parses an add.stats JSON text: *num_records, and for each of the n columns
 * (keys[c]: its name in the stats, the physical one under column mapping;
 * NULL: none; types[c]: its DuckDB type) the canonical texts of its bounds
 * (mins[c], maxs[c]: malloc'd, NULL unknown; a bound a writer may have
 * truncated is unknown) and its null count (nulls[c], -1 unknown). False,
 * with everything unknown, when the text has no numRecords. */
bool delta_stats_parse(const char *text, size_t len, const char *const *keys,
                       const char *const *types, size_t n, int64_t *num_records, char **mins,
                       char **maxs, int64_t *nulls);
/* The statistics of n active files for a lazy generation (source_lazy_build):
 * rows -1 for a file whose add has no usable stats (its footer is read).
 * NULL when out of memory. */
struct source_file_stats;
struct source_file_stats *delta_stats_for_files(const struct delta_add *const *adds, size_t n,
                                                const char *const *keys,
                                                const char *const *types, size_t n_cols);
void delta_stats_free(struct source_file_stats *fs, size_t n, size_t n_cols);

/* ---- conversions for the SELECT (delta_sql.c) ------------------------------ */

struct source_probe_type;
struct strbuf;

/* source_scan_column.convert for a data column: arg is its struct delta_type. */
void delta_sql_convert(const void *arg, const char *ref, const struct source_probe_type *file_type,
                       struct strbuf *out);
/* The same for a partition column (its text from partitionValues). */
void delta_sql_convert_partition(const void *arg, const char *ref,
                                 const struct source_probe_type *file_type, struct strbuf *out);

#endif
