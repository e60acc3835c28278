/*
 * The native equality index of a resident generation: for each indexed column,
 * value -> the sorted positions of the rows holding it. Queries whose
 * predicates are all `eq` / `in` on indexed columns are answered from here
 * (positions -> rows from the row store, rowstore.h) without DuckDB's planner.
 *
 * Which columns (spec "Index behavior"): mode auto considers columns of
 * string, boolean and 8-to-64-bit integer types and drops a column as soon as
 * its distinct count reaches max_cardinality; mode list indexes the listed
 * columns (of those types) whatever their cardinality; mode none indexes
 * nothing. NULLs are not indexed. Lazy generations carry no index.
 *
 * Sorted keys. An integer or string column that auto mode drops at
 * max_cardinality (a unique id or token, typically) is not part of the
 * equality index the spec describes (the schema's "indexed" list leaves it
 * out), but it still gets a lookup structure, because a point lookup by key
 * is the most common request and DuckDB's own costs 0.5-20 ms (a string
 * column with random values defeats its zone maps): its (key, row) pairs
 * sorted by key, 12 bytes a row, searched by bisection. index_lookup/match/
 * count treat it like any other column; index_column_sorted() tells them
 * apart. A string column stores the 64-bit hash of each value as its key
 * (index_column_hashed): its hits are candidates that may include another
 * value with the same hash, and the caller verifies them against the row
 * (exec does, with the row store). A string column keeps sorted keys only
 * when it looks like identifiers: at most INDEX_HASHED_MAX_AVG_LEN bytes per
 * value on average and at most INDEX_HASHED_MAX_ROWS_PER_KEY rows per value
 * (free text and repetitive columns are left to DuckDB).
 *
 * Layout: per column an open-addressing hash table of distinct keys, and the
 * posting lists in one CSR array (offsets per key, positions). Building keeps
 * one key id per row per candidate column, then counting-sorts them into the
 * CSR form, so positions come out sorted without sorting.
 */
#ifndef VT_INDEX_INDEX_H
#define VT_INDEX_INDEX_H

#include <duckdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

/* A column with more rows per distinct key than this keeps counts only. */
#define INDEX_DENSE_ROWS_PER_KEY 256
/* Hashed sorted keys (strings past max_cardinality), see above. */
#define INDEX_HASHED_MAX_AVG_LEN 64
#define INDEX_HASHED_MAX_ROWS_PER_KEY 4

enum index_domain { INDEX_DOMAIN_INT, INDEX_DOMAIN_UINT, INDEX_DOMAIN_BOOL, INDEX_DOMAIN_STRING };

/* A lookup key in the column's domain (the caller converts the request value;
 * see query_index_match_terms in the query layer). */
struct index_key {
    enum index_domain domain;
    int64_t i;                  /* INT, BOOL (0/1) */
    uint64_t u;                 /* UINT */
    const char *s;              /* STRING */
    size_t len;
};

struct index_column;

struct vt_index {
    size_t n_rows;              /* rows of the generation (positions are < n_rows) */
    size_t n_cols;              /* columns of the generation */
    struct index_column **by_col; /* n_cols entries, NULL where not indexed */
    size_t bytes;               /* memory held by the index */
};

/* True when a column of this DuckDB type can be indexed. */
bool index_type_eligible(duckdb_type t);
enum index_domain index_domain_of(duckdb_type t);

struct index_builder;

/* Chooses the candidate columns per the dataset's index settings. Returns NULL
 * when nothing is to be indexed (mode none, no eligible column). Columns named
 * in list mode that do not exist or are not eligible are reported in `warn`
 * (may be empty). */
struct index_builder *index_builder_create(size_t n_cols, const char *const *names,
                                           const duckdb_type *types,
                                           const struct vt_dataset_config *cfg, char *warn,
                                           size_t warnlen);
/* Feeds the next chunk of the scan (rows are numbered in feed order). */
int index_builder_add_chunk(struct index_builder *b, duckdb_data_chunk chunk);
/* Turns what was fed into the index (NULL when every candidate was dropped);
 * frees the builder. */
struct vt_index *index_builder_finish(struct index_builder *b);
void index_builder_abort(struct index_builder *b);

void index_destroy(struct vt_index *ix);
bool index_has_column(const struct vt_index *ix, size_t col);
enum index_domain index_column_domain(const struct vt_index *ix, size_t col);
size_t index_column_keys(const struct vt_index *ix, size_t col);
/* A sorted-keys column (see above), not an equality-index one. */
bool index_column_sorted(const struct vt_index *ix, size_t col);
/* A sorted-keys string column: its hits are candidates to verify. */
bool index_column_hashed(const struct vt_index *ix, size_t col);
/* Memory held by one column's structure (0 when not indexed). */
size_t index_column_bytes(const struct vt_index *ix, size_t col);
/* A dense column (more than INDEX_DENSE_ROWS_PER_KEY rows per key on average)
 * answers counts of one term, not positions. */
bool index_column_dense(const struct vt_index *ix, size_t col);
/* Whether some indexed column keeps positions (a row store is worth having). */
bool index_has_positions(const struct vt_index *ix);

/* The sorted positions of rows whose column `col` equals `key` (borrowed from
 * the index; *out_n = 0 when none). For a dense column the positions are not
 * kept: NULL with *out_n set to the count. */
const uint32_t *index_lookup(const struct vt_index *ix, size_t col, const struct index_key *key,
                             size_t *out_n);

/* A set of sorted positions, owned or borrowed. */
struct index_rows {
    const uint32_t *rows;
    size_t n;
    uint32_t *owned;            /* non-NULL when rows must be freed */
};
void index_rows_free(struct index_rows *r);

/* One conjunct: column `col` equals any of `keys` (n_keys >= 1). */
struct index_term {
    size_t col;
    const struct index_key *keys;
    size_t n_keys;
};

#define INDEX_NEEDS_POSITIONS (-2)

/* Positions matching every term (the AND of ORs), sorted. 0 on success, -1 on
 * out of memory, INDEX_NEEDS_POSITIONS when a term is on a dense column. */
int index_match(const struct vt_index *ix, const struct index_term *terms, size_t n_terms,
                struct index_rows *out);
/* The number of rows matching every term; one term on a dense column is
 * answered from its counts. Same return codes as index_match. */
int index_count(const struct vt_index *ix, const struct index_term *terms, size_t n_terms,
                uint64_t *out_count);

#endif
