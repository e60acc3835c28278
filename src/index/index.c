/*
 * The equality index (see index.h): building from DuckDB chunks, lookups, and
 * the AND-of-ORs matching over sorted posting lists.
 */
#include "index/index.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define EMPTY_SLOT UINT32_MAX
#define NULL_KEY UINT32_MAX

struct index_column {
    size_t col;
    enum index_domain domain;
    duckdb_type type;
    /* hash table of distinct keys: slot -> key id */
    uint32_t *slots;
    size_t n_slots;             /* power of two */
    size_t n_keys;
    size_t max_keys;            /* auto mode cardinality cap; SIZE_MAX in list mode */
    /* key id -> key */
    uint64_t *int_keys;         /* INT / UINT / BOOL bit patterns */
    uint64_t *str_off;          /* STRING: key id -> offset in str_data (n_keys + 1) */
    char *str_data;
    size_t str_len, str_cap;
    size_t keys_cap;
    /* building: key id of every row (NULL_KEY for NULL) */
    uint32_t *row_keys;
    /* finished: CSR posting lists */
    uint32_t *offsets;          /* n_keys + 1 */
    uint32_t *rows;             /* NULL for a dense column: counts only */
    bool dense;
    bool dropped;
    /* Sorted keys (see index.h): an auto-mode integer or string column past
     * max_cardinality. Building: (key, row) pairs of non-null rows; finished:
     * sorted by key then row, so a key's rows are one sorted run. Integer
     * keys are stored order-preserving (INT with its sign bit flipped);
     * string keys as the 64-bit hash of their bytes (`hashed`: a run may hold
     * other strings with the same hash, so hits are candidates the caller
     * verifies). */
    bool sorted;
    bool hashed;
    bool may_sort;              /* auto mode and an integer or string domain */
    uint64_t str_bytes;         /* STRING: bytes of the non-null values fed */
    struct key_row {
        uint64_t key;
        uint32_t row;
    } *pairs;
    size_t n_pairs, pairs_cap;
};

struct index_builder {
    size_t n_cols;
    size_t n_rows;
    size_t rows_cap;
    struct index_column **cands; /* by generation column; NULL when not a candidate */
};

bool index_type_eligible(duckdb_type t)
{
    switch (t) {
    case DUCKDB_TYPE_BOOLEAN: case DUCKDB_TYPE_TINYINT: case DUCKDB_TYPE_SMALLINT:
    case DUCKDB_TYPE_INTEGER: case DUCKDB_TYPE_BIGINT: case DUCKDB_TYPE_UTINYINT:
    case DUCKDB_TYPE_USMALLINT: case DUCKDB_TYPE_UINTEGER: case DUCKDB_TYPE_UBIGINT:
    case DUCKDB_TYPE_VARCHAR:
        return true;
    default:
        return false;
    }
}

enum index_domain index_domain_of(duckdb_type t)
{
    switch (t) {
    case DUCKDB_TYPE_BOOLEAN: return INDEX_DOMAIN_BOOL;
    case DUCKDB_TYPE_UTINYINT: case DUCKDB_TYPE_USMALLINT: case DUCKDB_TYPE_UINTEGER:
    case DUCKDB_TYPE_UBIGINT: return INDEX_DOMAIN_UINT;
    case DUCKDB_TYPE_VARCHAR: return INDEX_DOMAIN_STRING;
    default: return INDEX_DOMAIN_INT;
    }
}

static uint64_t mix64(uint64_t x)
{
    /* A strong 64-bit finaliser (splitmix64) so sequential ids spread out. */
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static int cmp_pair(const void *a, const void *b)
{
    const struct key_row *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* Sorts the pairs; n_keys becomes the number of distinct keys. The pairs are
 * fed in row order, so sorting by (key, row) keeps each key's rows sorted.
 * 1: a hashed column that is not kept (too many rows per key). */
static int sorted_finish(struct index_column *c)
{
    qsort(c->pairs, c->n_pairs, sizeof *c->pairs, cmp_pair);
    size_t distinct = 0;
    for (size_t i = 0; i < c->n_pairs; i++)
        distinct += i == 0 || c->pairs[i].key != c->pairs[i - 1].key;
    c->n_keys = distinct;
    if (c->hashed && c->n_pairs > INDEX_HASHED_MAX_ROWS_PER_KEY * distinct)
        return 1; /* not near-unique: see hashed_worth_keeping */
    /* Split into keys and rows: a key's run of rows is then a posting list. */
    uint64_t *keys = malloc((c->n_pairs ? c->n_pairs : 1) * sizeof *keys);
    uint32_t *rows = malloc((c->n_pairs ? c->n_pairs : 1) * sizeof *rows);
    if (!keys || !rows) {
        free(keys);
        free(rows);
        return -1;
    }
    for (size_t i = 0; i < c->n_pairs; i++) {
        keys[i] = c->pairs[i].key;
        rows[i] = c->pairs[i].row;
    }
    free(c->pairs);
    c->pairs = NULL;
    c->int_keys = keys;
    c->rows = rows;
    return 0;
}

static void column_free(struct index_column *c)
{
    if (!c)
        return;
    free(c->pairs);
    free(c->slots);
    free(c->int_keys);
    free(c->str_off);
    free(c->str_data);
    free(c->row_keys);
    free(c->offsets);
    free(c->rows);
    free(c);
}

/* Releases everything of a candidate that stops being one. */
static void column_drop(struct index_column *c)
{
    free(c->slots);
    free(c->int_keys);
    free(c->str_off);
    free(c->str_data);
    free(c->row_keys);
    free(c->pairs);
    c->slots = NULL;
    c->int_keys = NULL;
    c->str_off = NULL;
    c->str_data = NULL;
    c->row_keys = NULL;
    c->pairs = NULL;
    c->dropped = true;
}

static bool key_equal(const struct index_column *c, uint32_t id, uint64_t ikey, const char *s,
                      size_t len)
{
    if (c->domain != INDEX_DOMAIN_STRING)
        return c->int_keys[id] == ikey;
    uint64_t off = c->str_off[id], end = c->str_off[id + 1];
    return end - off == len && (len == 0 || memcmp(c->str_data + off, s, len) == 0);
}

static uint64_t key_hash(const struct index_column *c, uint64_t ikey, const char *s, size_t len)
{
    return c->domain == INDEX_DOMAIN_STRING ? XXH3_64bits(s, len) : mix64(ikey);
}

/* Finds a key; returns its id or EMPTY_SLOT. */
static uint32_t find_key(const struct index_column *c, uint64_t ikey, const char *s, size_t len)
{
    if (!c->slots)
        return EMPTY_SLOT;
    size_t mask = c->n_slots - 1;
    size_t i = key_hash(c, ikey, s, len) & mask;
    for (;;) {
        uint32_t id = c->slots[i];
        if (id == EMPTY_SLOT)
            return EMPTY_SLOT;
        if (key_equal(c, id, ikey, s, len))
            return id;
        i = (i + 1) & mask;
    }
}

static int grow_slots(struct index_column *c)
{
    size_t n = c->n_slots ? c->n_slots * 2 : 1024;
    uint32_t *slots = malloc(n * sizeof *slots);
    if (!slots)
        return -1;
    memset(slots, 0xff, n * sizeof *slots);
    for (uint32_t id = 0; id < c->n_keys; id++) {
        uint64_t h;
        if (c->domain == INDEX_DOMAIN_STRING)
            h = XXH3_64bits(c->str_data + c->str_off[id], c->str_off[id + 1] - c->str_off[id]);
        else
            h = mix64(c->int_keys[id]);
        size_t i = h & (n - 1);
        while (slots[i] != EMPTY_SLOT)
            i = (i + 1) & (n - 1);
        slots[i] = id;
    }
    free(c->slots);
    c->slots = slots;
    c->n_slots = n;
    return 0;
}

static uint64_t sort_key(const struct index_column *c, uint64_t ikey)
{
    return c->domain == INDEX_DOMAIN_INT ? ikey ^ ((uint64_t)1 << 63) : ikey;
}

/* An auto-mode integer column reached max_cardinality: instead of dropping
 * it, keep (key, row) pairs from here on (the rows so far come from their key
 * ids); the hash table and key store go. False when memory ran out. */
static bool switch_to_sorted(struct index_column *c, size_t rows_so_far)
{
    size_t cap = rows_so_far + 65536;
    struct key_row *p = malloc(cap * sizeof *p);
    if (!p)
        return false;
    bool str = c->domain == INDEX_DOMAIN_STRING;
    size_t n = 0;
    for (size_t r = 0; r < rows_so_far; r++) {
        uint32_t id = c->row_keys[r];
        if (id == NULL_KEY)
            continue;
        uint64_t k = str ? XXH3_64bits(c->str_data + c->str_off[id],
                                       c->str_off[id + 1] - c->str_off[id])
                         : sort_key(c, c->int_keys[id]);
        p[n++] = (struct key_row){k, (uint32_t)r};
    }
    free(c->slots);
    free(c->int_keys);
    free(c->row_keys);
    free(c->str_off);
    free(c->str_data);
    c->slots = NULL;
    c->int_keys = NULL;
    c->row_keys = NULL;
    c->str_off = NULL;
    c->str_data = NULL;
    c->str_len = c->str_cap = 0;
    c->n_slots = c->n_keys = c->keys_cap = 0;
    c->pairs = p;
    c->n_pairs = n;
    c->pairs_cap = cap;
    c->sorted = true;
    c->hashed = str;
    return true;
}

/* ikey: an integer key, or for a hashed column the hash of the string. */
static int add_pair(struct index_column *c, uint64_t ikey, size_t row)
{
    if (c->n_pairs == c->pairs_cap) {
        size_t cap = c->pairs_cap * 2;
        struct key_row *p = realloc(c->pairs, cap * sizeof *p);
        if (!p)
            return -1;
        c->pairs = p;
        c->pairs_cap = cap;
    }
    c->pairs[c->n_pairs++] = (struct key_row){c->hashed ? ikey : sort_key(c, ikey), (uint32_t)row};
    return 0;
}


/* Finds or inserts a key; returns its id, NULL_KEY when the column was dropped
 * (cardinality cap reached or out of memory). */
static uint32_t intern_key(struct index_column *c, uint64_t ikey, const char *s, size_t len)
{
    if ((c->n_keys + 1) * 4 > c->n_slots * 3 && grow_slots(c) != 0) {
        column_drop(c);
        return NULL_KEY;
    }
    size_t mask = c->n_slots - 1;
    size_t i = key_hash(c, ikey, s, len) & mask;
    for (;;) {
        uint32_t id = c->slots[i];
        if (id == EMPTY_SLOT)
            break;
        if (key_equal(c, id, ikey, s, len))
            return id;
        i = (i + 1) & mask;
    }
    if (c->n_keys >= c->max_keys) {
        if (!c->may_sort)
            column_drop(c);
        return NULL_KEY; /* the caller switches a may_sort column to sorted keys */
    }
    if (c->n_keys + 1 >= c->keys_cap) {
        size_t cap = c->keys_cap ? c->keys_cap * 2 : 256;
        if (c->domain == INDEX_DOMAIN_STRING) {
            uint64_t *p = realloc(c->str_off, (cap + 1) * sizeof *p);
            if (!p) {
                column_drop(c);
                return NULL_KEY;
            }
            c->str_off = p;
        } else {
            uint64_t *p = realloc(c->int_keys, cap * sizeof *p);
            if (!p) {
                column_drop(c);
                return NULL_KEY;
            }
            c->int_keys = p;
        }
        c->keys_cap = cap;
    }
    uint32_t id = (uint32_t)c->n_keys;
    if (c->domain == INDEX_DOMAIN_STRING) {
        /* Allocated even for an empty first key: str_data is never NULL
         * once a key exists (NULL + 0 and memcpy(NULL, .., 0) are UB). */
        if (!c->str_data || c->str_len + len > c->str_cap) {
            size_t cap = c->str_cap ? c->str_cap * 2 : 4096;
            while (cap < c->str_len + len)
                cap *= 2;
            char *p = realloc(c->str_data, cap);
            if (!p) {
                column_drop(c);
                return NULL_KEY;
            }
            c->str_data = p;
            c->str_cap = cap;
        }
        if (id == 0)
            c->str_off[0] = 0;
        if (len)
            memcpy(c->str_data + c->str_len, s, len);
        c->str_len += len;
        c->str_off[id + 1] = c->str_len;
    } else {
        c->int_keys[id] = ikey;
    }
    c->slots[i] = id;
    c->n_keys++;
    return id;
}

struct index_builder *index_builder_create(size_t n_cols, const char *const *names,
                                           const duckdb_type *types,
                                           const struct vt_dataset_config *cfg, char *warn,
                                           size_t warnlen)
{
    if (warn && warnlen)
        warn[0] = '\0';
    if (cfg->lazy || cfg->index_mode == CFG_INDEX_NONE)
        return NULL;
    struct index_builder *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->n_cols = n_cols;
    b->cands = calloc(n_cols ? n_cols : 1, sizeof *b->cands);
    if (!b->cands) {
        free(b);
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < n_cols; i++) {
        bool want;
        if (cfg->index_mode == CFG_INDEX_LIST) {
            want = false;
            for (size_t k = 0; k < cfg->index_columns.len; k++)
                if (strcmp(cfg->index_columns.items[k], names[i]) == 0)
                    want = true;
            if (want && !index_type_eligible(types[i])) {
                if (warn && warnlen)
                    snprintf(warn, warnlen,
                             "index.columns: column \"%s\" has a type that cannot be indexed "
                             "(strings, booleans and 8-to-64-bit integers can)",
                             names[i]);
                want = false;
            }
        } else {
            want = index_type_eligible(types[i]);
        }
        if (!want)
            continue;
        struct index_column *c = calloc(1, sizeof *c);
        if (!c)
            continue;
        c->col = i;
        c->type = types[i];
        c->domain = index_domain_of(types[i]);
        c->max_keys = cfg->index_mode == CFG_INDEX_LIST ? (size_t)UINT32_MAX - 1
                                                    : (size_t)cfg->index_max_cardinality;
        c->may_sort = cfg->index_mode == CFG_INDEX_AUTO && c->domain != INDEX_DOMAIN_BOOL;
        b->cands[i] = c;
        n++;
    }
    if (cfg->index_mode == CFG_INDEX_LIST && warn && warnlen && !warn[0]) {
        for (size_t k = 0; k < cfg->index_columns.len; k++) {
            bool found = false;
            for (size_t i = 0; i < n_cols; i++)
                if (strcmp(cfg->index_columns.items[k], names[i]) == 0)
                    found = true;
            if (!found) {
                snprintf(warn, warnlen, "index.columns: no column named \"%s\"",
                         cfg->index_columns.items[k]);
                break;
            }
        }
    }
    if (n == 0) {
        index_builder_abort(b);
        return NULL;
    }
    return b;
}

static uint64_t int_key_of(duckdb_type t, const void *data, size_t row)
{
    switch (t) {
    case DUCKDB_TYPE_BOOLEAN: return ((const bool *)data)[row] ? 1 : 0;
    case DUCKDB_TYPE_TINYINT: return (uint64_t)(int64_t)((const int8_t *)data)[row];
    case DUCKDB_TYPE_SMALLINT: return (uint64_t)(int64_t)((const int16_t *)data)[row];
    case DUCKDB_TYPE_INTEGER: return (uint64_t)(int64_t)((const int32_t *)data)[row];
    case DUCKDB_TYPE_BIGINT: return (uint64_t)((const int64_t *)data)[row];
    case DUCKDB_TYPE_UTINYINT: return ((const uint8_t *)data)[row];
    case DUCKDB_TYPE_USMALLINT: return ((const uint16_t *)data)[row];
    case DUCKDB_TYPE_UINTEGER: return ((const uint32_t *)data)[row];
    case DUCKDB_TYPE_UBIGINT: return ((const uint64_t *)data)[row];
    default: return 0;
    }
}

/* The key of row r of a vector as add_pair takes it. */
static uint64_t pair_key(const struct index_column *c, const void *data, size_t r)
{
    if (c->hashed) {
        duckdb_string_t *s = &((duckdb_string_t *)data)[r];
        return XXH3_64bits(duckdb_string_t_data(s), duckdb_string_t_length(*s));
    }
    return int_key_of(c->type, data, r);
}

int index_builder_add_chunk(struct index_builder *b, duckdb_data_chunk chunk)
{
    size_t n = (size_t)duckdb_data_chunk_get_size(chunk);
    if (b->n_rows + n > (size_t)UINT32_MAX - 1)
        return -1; /* positions are 32-bit */
    if (b->n_rows + n > b->rows_cap) {
        size_t cap = b->rows_cap ? b->rows_cap * 2 : 65536;
        while (cap < b->n_rows + n)
            cap *= 2;
        for (size_t i = 0; i < b->n_cols; i++) {
            struct index_column *c = b->cands[i];
            if (!c || c->dropped || c->sorted)
                continue;
            uint32_t *p = realloc(c->row_keys, cap * sizeof *p);
            if (!p) {
                column_drop(c);
                continue;
            }
            c->row_keys = p;
        }
        b->rows_cap = cap;
    }
    for (size_t i = 0; i < b->n_cols; i++) {
        struct index_column *c = b->cands[i];
        if (!c || c->dropped)
            continue;
        duckdb_vector vec = duckdb_data_chunk_get_vector(chunk, (idx_t)i);
        const void *data = duckdb_vector_get_data(vec);
        uint64_t *validity = duckdb_vector_get_validity(vec);
        if (c->sorted) {
            for (size_t r = 0; r < n; r++) {
                if (validity && !duckdb_validity_row_is_valid(validity, (idx_t)r))
                    continue;
                if (c->hashed)
                    c->str_bytes += duckdb_string_t_length(((duckdb_string_t *)data)[r]);
                if (add_pair(c, pair_key(c, data, r), b->n_rows + r) != 0) {
                    column_drop(c);
                    break;
                }
            }
            continue;
        }
        uint32_t *out = c->row_keys + b->n_rows;
        for (size_t r = 0; r < n && !c->dropped; r++) {
            if (validity && !duckdb_validity_row_is_valid(validity, (idx_t)r)) {
                out[r] = NULL_KEY;
                continue;
            }
            uint32_t id;
            if (c->domain == INDEX_DOMAIN_STRING) {
                duckdb_string_t *s = &((duckdb_string_t *)data)[r];
                uint32_t len = duckdb_string_t_length(*s);
                const char *p = duckdb_string_t_data(s);
                c->str_bytes += len;
                id = intern_key(c, 0, p, len);
            } else {
                id = intern_key(c, int_key_of(c->type, data, r), NULL, 0);
            }
            if (id == NULL_KEY && c->may_sort && !c->dropped) {
                /* Past max_cardinality: sorted keys from now on. */
                if (!switch_to_sorted(c, b->n_rows + r)) {
                    column_drop(c);
                    break;
                }
                /* From row r on (switch_to_sorted took the rows before it;
                 * row r's bytes are counted already). */
                for (size_t first = r; r < n; r++) {
                    if (validity && !duckdb_validity_row_is_valid(validity, (idx_t)r))
                        continue;
                    if (c->hashed && r > first)
                        c->str_bytes += duckdb_string_t_length(((duckdb_string_t *)data)[r]);
                    if (add_pair(c, pair_key(c, data, r), b->n_rows + r) != 0) {
                        column_drop(c);
                        break;
                    }
                }
                break;
            }
            if (c->dropped) /* row_keys is gone with the column */
                break;
            out[r] = id;
        }
    }
    b->n_rows += n;
    return 0;
}

/* Counting sort of the row key ids into CSR posting lists. A dense column
 * (many rows per key) keeps the counts only: its hits are too many for the
 * row store to beat DuckDB, so positions would be memory for nothing. */
static int column_finish(struct index_column *c, size_t n_rows)
{
    if (c->sorted)
        return sorted_finish(c);
    c->offsets = calloc(c->n_keys + 1, sizeof *c->offsets);
    if (!c->offsets)
        return -1;
    size_t non_null = 0;
    for (size_t r = 0; r < n_rows; r++)
        if (c->row_keys[r] != NULL_KEY) {
            c->offsets[c->row_keys[r] + 1]++;
            non_null++;
        }
    for (size_t k = 0; k < c->n_keys; k++)
        c->offsets[k + 1] += c->offsets[k];
    if (c->n_keys && non_null / c->n_keys > INDEX_DENSE_ROWS_PER_KEY) {
        c->dense = true;
        free(c->row_keys);
        c->row_keys = NULL;
        return 0;
    }
    c->rows = malloc((non_null ? non_null : 1) * sizeof *c->rows);
    uint32_t *fill = malloc((c->n_keys ? c->n_keys : 1) * sizeof *fill);
    if (!c->rows || !fill) {
        free(fill);
        return -1;
    }
    memcpy(fill, c->offsets, c->n_keys * sizeof *fill);
    for (size_t r = 0; r < n_rows; r++) {
        uint32_t k = c->row_keys[r];
        if (k != NULL_KEY)
            c->rows[fill[k]++] = (uint32_t)r;
    }
    free(fill);
    free(c->row_keys);
    c->row_keys = NULL;
    /* Shrink the key store to what is used. */
    if (c->domain == INDEX_DOMAIN_STRING && c->str_len) {
        char *p = realloc(c->str_data, c->str_len);
        if (p)
            c->str_data = p;
    }
    return 0;
}

static size_t column_bytes(const struct index_column *c)
{
    if (c->sorted)
        return sizeof *c + c->n_pairs * (sizeof(uint64_t) + sizeof(uint32_t));
    size_t b = sizeof *c + c->n_slots * sizeof(uint32_t) + (c->n_keys + 1) * sizeof(uint32_t);
    if (!c->dense)
        b += (size_t)c->offsets[c->n_keys] * sizeof(uint32_t);
    if (c->domain == INDEX_DOMAIN_STRING)
        b += (c->keys_cap + 1) * sizeof(uint64_t) + c->str_len;
    else
        b += c->keys_cap * sizeof(uint64_t);
    return b;
}

/* Hashed keys are for identifiers (a token, a code, an email): a column of
 * long values (free text) or with many rows per value is left to DuckDB, so
 * 12 bytes a row go only where a point lookup is likely. */
static bool hashed_worth_keeping(const struct index_column *c)
{
    if (!c->hashed || c->n_pairs == 0)
        return true;
    return c->str_bytes / c->n_pairs <= INDEX_HASHED_MAX_AVG_LEN;
}

struct vt_index *index_builder_finish(struct index_builder *b)
{
    struct vt_index *ix = calloc(1, sizeof *ix);
    if (ix)
        ix->by_col = calloc(b->n_cols ? b->n_cols : 1, sizeof *ix->by_col);
    if (!ix || !ix->by_col) {
        free(ix);
        index_builder_abort(b);
        return NULL;
    }
    ix->n_rows = b->n_rows;
    ix->n_cols = b->n_cols;
    size_t kept = 0;
    for (size_t i = 0; i < b->n_cols; i++) {
        struct index_column *c = b->cands[i];
        b->cands[i] = NULL;
        if (!c)
            continue;
        if (c->dropped || !hashed_worth_keeping(c) || column_finish(c, b->n_rows) != 0) {
            column_free(c);
            continue;
        }
        ix->by_col[i] = c;
        ix->bytes += column_bytes(c);
        kept++;
    }
    free(b->cands);
    free(b);
    if (kept == 0) {
        index_destroy(ix);
        return NULL;
    }
    return ix;
}

void index_builder_abort(struct index_builder *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n_cols; i++)
        column_free(b->cands[i]);
    free(b->cands);
    free(b);
}

void index_destroy(struct vt_index *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->n_cols; i++)
        column_free(ix->by_col[i]);
    free(ix->by_col);
    free(ix);
}

bool index_has_column(const struct vt_index *ix, size_t col)
{
    return ix && col < ix->n_cols && ix->by_col[col] != NULL;
}

enum index_domain index_column_domain(const struct vt_index *ix, size_t col)
{
    return ix->by_col[col]->domain;
}

bool index_column_dense(const struct vt_index *ix, size_t col)
{
    return index_has_column(ix, col) && ix->by_col[col]->dense;
}

bool index_has_positions(const struct vt_index *ix)
{
    for (size_t i = 0; ix && i < ix->n_cols; i++)
        if (ix->by_col[i] && !ix->by_col[i]->dense)
            return true;
    return false;
}

bool index_column_sorted(const struct vt_index *ix, size_t col)
{
    return index_has_column(ix, col) && ix->by_col[col]->sorted;
}

bool index_column_hashed(const struct vt_index *ix, size_t col)
{
    return index_has_column(ix, col) && ix->by_col[col]->hashed;
}

size_t index_column_bytes(const struct vt_index *ix, size_t col)
{
    return index_has_column(ix, col) ? column_bytes(ix->by_col[col]) : 0;
}

size_t index_column_keys(const struct vt_index *ix, size_t col)
{
    return index_has_column(ix, col) ? ix->by_col[col]->n_keys : 0;
}

/* The key id of `key` in column `col`, or EMPTY_SLOT. */
static uint32_t key_id(const struct vt_index *ix, size_t col, const struct index_key *key)
{
    if (!index_has_column(ix, col))
        return EMPTY_SLOT;
    const struct index_column *c = ix->by_col[col];
    if (key->domain != c->domain)
        return EMPTY_SLOT;
    uint64_t ikey = 0;
    if (c->domain == INDEX_DOMAIN_INT || c->domain == INDEX_DOMAIN_BOOL)
        ikey = (uint64_t)key->i;
    else if (c->domain == INDEX_DOMAIN_UINT)
        ikey = key->u;
    return find_key(c, ikey, key->s, key->len);
}

/* The run of rows holding `key` in a sorted-keys column. */
static const uint32_t *sorted_lookup(const struct index_column *c, const struct index_key *key,
                                     size_t *out_n)
{
    if (key->domain != c->domain)
        return NULL;
    uint64_t k = c->hashed ? XXH3_64bits(key->s, key->len)
                           : sort_key(c, c->domain == INDEX_DOMAIN_UINT ? key->u : (uint64_t)key->i);
    /* The first position with key >= k in [lo, hi) (hi when none). A few
     * interpolation steps first: keys are ids (often dense) or 64-bit hashes
     * (uniform), where the guess lands at or next to the answer, against ~20
     * cache-missing bisection steps over 1M keys (index_lookup was ~4% of a
     * point lookup's CPU). Then bisection for whatever is left. */
    const uint64_t *keys = c->int_keys;
    size_t lo = 0, hi = c->n_pairs;
    for (int round = 0; round < 4 && hi - lo > 8; round++) {
        uint64_t klo = keys[lo], khi = keys[hi - 1];
        if (k <= klo) {
            hi = lo;
            break;
        }
        if (k > khi) {
            lo = hi;
            break;
        }
        /* klo < k <= khi: pos in [lo, hi - 1] */
        size_t pos = lo + (size_t)((unsigned __int128)(k - klo) * (hi - 1 - lo) / (khi - klo));
        if (keys[pos] < k)
            lo = pos + 1;
        else
            hi = pos;
        /* Land next to the answer: check the neighbour before bisecting. */
        if (lo < hi && keys[lo] >= k)
            hi = lo;
        else if (lo < hi && hi > 0 && keys[hi - 1] < k)
            lo = hi;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < c->n_pairs && keys[end] == k)
        end++;
    *out_n = end - lo;
    return end > lo ? c->rows + lo : NULL;
}

const uint32_t *index_lookup(const struct vt_index *ix, size_t col, const struct index_key *key,
                             size_t *out_n)
{
    *out_n = 0;
    if (index_has_column(ix, col) && ix->by_col[col]->sorted)
        return sorted_lookup(ix->by_col[col], key, out_n);
    uint32_t id = key_id(ix, col, key);
    if (id == EMPTY_SLOT)
        return NULL;
    const struct index_column *c = ix->by_col[col];
    *out_n = c->offsets[id + 1] - c->offsets[id];
    return c->dense ? NULL : c->rows + c->offsets[id];
}

static bool same_key(const struct index_key *a, const struct index_key *b)
{
    return a->domain == b->domain && a->i == b->i && a->u == b->u && a->len == b->len &&
           (a->len == 0 || memcmp(a->s, b->s, a->len) == 0);
}

int index_count(const struct vt_index *ix, const struct index_term *terms, size_t n_terms,
                uint64_t *out_count)
{
    *out_count = 0;
    if (n_terms == 1) {
        /* One term: the counts of its distinct keys (no positions needed). */
        const struct index_term *t = &terms[0];
        for (size_t k = 0; k < t->n_keys; k++) {
            bool seen = false;
            for (size_t j = 0; j < k && !seen; j++)
                seen = same_key(&t->keys[j], &t->keys[k]);
            size_t n;
            if (!seen) {
                index_lookup(ix, t->col, &t->keys[k], &n);
                *out_count += n;
            }
        }
        return 0;
    }
    struct index_rows rows;
    int rc = index_match(ix, terms, n_terms, &rows);
    if (rc == 0)
        *out_count = rows.n;
    index_rows_free(&rows);
    return rc;
}

void index_rows_free(struct index_rows *r)
{
    free(r->owned);
    r->owned = NULL;
    r->rows = NULL;
    r->n = 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The union of the posting lists of one term. */
static int term_rows(const struct vt_index *ix, const struct index_term *t, struct index_rows *out)
{
    memset(out, 0, sizeof *out);
    if (t->n_keys == 1) {
        out->rows = index_lookup(ix, t->col, &t->keys[0], &out->n);
        return 0;
    }
    size_t total = 0;
    for (size_t k = 0; k < t->n_keys; k++) {
        size_t n;
        index_lookup(ix, t->col, &t->keys[k], &n);
        total += n;
    }
    if (total == 0)
        return 0;
    uint32_t *all = malloc(total * sizeof *all);
    if (!all)
        return -1;
    size_t pos = 0;
    for (size_t k = 0; k < t->n_keys; k++) {
        size_t n;
        const uint32_t *rows = index_lookup(ix, t->col, &t->keys[k], &n);
        /* The same key listed twice in `in` must not duplicate rows. */
        bool seen = false;
        for (size_t j = 0; j < k && !seen; j++)
            seen = same_key(&t->keys[j], &t->keys[k]);
        if (seen || !rows)
            continue;
        memcpy(all + pos, rows, n * sizeof *all);
        pos += n;
    }
    /* Distinct keys have disjoint posting lists, except two strings of a
     * hashed column that share a hash: sort, then drop repeats. */
    qsort(all, pos, sizeof *all, cmp_u32);
    size_t k = 0;
    for (size_t i = 0; i < pos; i++)
        if (k == 0 || all[i] != all[k - 1])
            all[k++] = all[i];
    pos = k;
    out->rows = all;
    out->n = pos;
    out->owned = all;
    return 0;
}

int index_match(const struct vt_index *ix, const struct index_term *terms, size_t n_terms,
                struct index_rows *out)
{
    memset(out, 0, sizeof *out);
    for (size_t t = 0; t < n_terms; t++)
        if (index_column_dense(ix, terms[t].col))
            return INDEX_NEEDS_POSITIONS;
    if (n_terms == 0) {
        return 0;
    }
    struct index_rows acc;
    if (term_rows(ix, &terms[0], &acc) != 0)
        return -1;
    for (size_t t = 1; t < n_terms && acc.n > 0; t++) {
        struct index_rows next;
        if (term_rows(ix, &terms[t], &next) != 0) {
            index_rows_free(&acc);
            return -1;
        }
        /* Intersect two sorted lists; gallop-free merge is fine at these sizes. */
        size_t cap = acc.n < next.n ? acc.n : next.n;
        uint32_t *res = malloc((cap ? cap : 1) * sizeof *res);
        if (!res) {
            index_rows_free(&acc);
            index_rows_free(&next);
            return -1;
        }
        size_t i = 0, j = 0, k = 0;
        while (i < acc.n && j < next.n) {
            if (acc.rows[i] < next.rows[j])
                i++;
            else if (acc.rows[i] > next.rows[j])
                j++;
            else {
                res[k++] = acc.rows[i];
                i++;
                j++;
            }
        }
        index_rows_free(&acc);
        index_rows_free(&next);
        acc.rows = res;
        acc.n = k;
        acc.owned = res;
    }
    *out = acc;
    return 0;
}
