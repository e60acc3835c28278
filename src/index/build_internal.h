/*
 * The builders of the lookup structures (eqindex.c, keys.c), as build.c
 * drives them. Internal to src/index.
 */
#ifndef VT_INDEX_BUILD_INTERNAL_H
#define VT_INDEX_BUILD_INTERNAL_H

#include "index/index_internal.h"

/* One key id per row, 1, 2 or 4 bytes wide (the widest value of each width
 * means NULL). */
struct ix_ids {
    union {
        uint8_t *p8;
        uint16_t *p16;
        uint32_t *p32;
    };
    unsigned width;
    size_t n, cap;
};

struct ix_eq_builder {
    struct index_column *col;
    size_t max_keys;
    size_t keys_cap, str_cap;
    uint64_t str_bytes;
    struct ix_ids ids;
};

struct ix_eq_builder *ix_eq_builder_create(struct index_column *c, size_t max_keys);
void ix_eq_builder_free(struct ix_eq_builder *e);
/* Rows [base, base + n) from the vector. When the key cap is reached at row
 * r of the vector, stops there with *out_full_at = r (rows before it are
 * taken); otherwise *out_full_at = SIZE_MAX. 0, or -1 out of memory. */
int ix_eq_builder_add(struct ix_eq_builder *e, duckdb_vector vec, size_t base, size_t n,
                      size_t *out_full_at);
/* Row r's key (false: NULL). */
bool ix_eq_row_key(const struct ix_eq_builder *e, size_t r, uint64_t *out_int, const char **out_s,
                   size_t *out_len);
void ix_eq_builder_clear(struct ix_eq_builder *e);
/* Posting lists into the store (or counts only). 0, or -1. */
int ix_eq_builder_finish(struct ix_eq_builder *e, size_t n_rows, struct ix_store *store);
uint32_t ix_eq_find(const struct index_column *c, const struct index_key *key);
enum ix_read ix_eq_lookup(const struct index_column *c, const struct ix_store *store,
                          const struct index_key *key, size_t limit, bool nowait,
                          struct ix_hits *out, bool *out_over);
uint64_t ix_int_key_at(duckdb_type t, const void *data, size_t row);

struct ix_keys_builder;
struct ix_keys_builder *ix_keys_builder_create(struct index_column *c);
void ix_keys_builder_free(struct ix_keys_builder *k);
/* Row r's value: an integer (raw bits as ix_int_key_at gives them), or a
 * string; or NULL. Rows come in order. 0, or -1 out of memory. */
int ix_keys_add_int(struct ix_keys_builder *k, size_t r, uint64_t v);
int ix_keys_add_str(struct ix_keys_builder *k, size_t r, const char *s, size_t len);
int ix_keys_add_null(struct ix_keys_builder *k, size_t r);
/* Rows [base, base + n) of a vector, from its row `from` on. */
int ix_keys_add_vector(struct ix_keys_builder *k, duckdb_vector vec, size_t base, size_t from,
                       size_t n);
/* Frames or buckets into the store. 0; 1: not worth keeping (a string
 * column that does not look like identifiers, when `picky`); -1 error. */
int ix_keys_builder_finish(struct ix_keys_builder *k, size_t n_rows, struct ix_store *store,
                           bool picky);
/* Rows of a frames column (IX_FRAMES) with keys in [lo, hi]: frames are
 * sorted values already, in table order. */
enum ix_read ix_frames_count(const struct index_column *c, const struct ix_store *store,
                             uint64_t lo, uint64_t hi, bool nowait, uint64_t *out);
enum ix_read ix_keys_lookup(const struct index_column *c, const struct ix_store *store,
                            const struct index_key *key, size_t limit, bool nowait,
                            struct ix_hits *out, bool *out_over);

/* sorted.c: range counts */
struct ix_sorted_builder;
struct ix_sorted_builder *ix_sorted_builder_create(size_t col, const struct ix_col *c);
void ix_sorted_builder_free(struct ix_sorted_builder *b);
/* The next n rows of the column (NULLs skipped). 0, or -1: out of memory, or
 * a value DuckDB cannot compare (a TIMESTAMP_S past TIMESTAMP's range). */
int ix_sorted_builder_add(struct ix_sorted_builder *b, duckdb_vector vec, size_t n);
/* Sorts, writes the keys to the store, keeps the sample: the structure
 * (owned by the caller), or NULL (out of memory; the builder still owns
 * what it had). The builder is freed by the caller either way. */
struct ix_sorted *ix_sorted_builder_finish(struct ix_sorted_builder *b, struct ix_store *store);
void ix_sorted_free(struct ix_sorted *c);
uint64_t ix_sorted_key_double(double d);
/* The terms' AND as one interval [*lo, *hi] of keys of a column of type t
 * (sorted values' keys; frames' keys for an integer column); false when no
 * value satisfies it. */
bool ix_range_keys(duckdb_type t, const struct index_range_term *terms, size_t n_terms,
                   uint64_t *lo, uint64_t *hi);
/* The first of n sorted positions of structure c whose key is >= x. */
typedef enum ix_read (*ix_lower_bound_fn)(const void *c, const struct ix_store *store, uint64_t x,
                                          bool nowait, size_t *out);
/* Positions with keys in [lo, hi]: two lower bounds. */
enum ix_read ix_count_between(ix_lower_bound_fn first_at, const void *c, size_t n,
                              const struct ix_store *store, uint64_t lo, uint64_t hi, bool nowait,
                              uint64_t *out);
/* Values with keys in [lo, hi]. */
enum ix_read ix_sorted_count(const struct ix_sorted *c, const struct ix_store *store, uint64_t lo,
                             uint64_t hi, bool nowait, uint64_t *out);

/* rowstore.c */
void ix_col_setup(struct ix_col *c, duckdb_logical_type t);
void ix_col_release(struct ix_col *c);

#endif
