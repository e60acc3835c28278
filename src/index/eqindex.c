/*
 * The spec's equality index (index.h): per column an open-addressing hash
 * table of its distinct keys (in memory), and posting lists (the sorted
 * positions of each key's rows) in the fast path's store. Building keeps one
 * key id per row, as narrow as the number of keys allows (one byte for up to
 * 255 keys), then counting-sorts the rows into the lists, so positions come
 * out sorted without sorting. A column whose keys have more than
 * INDEX_DENSE_ROWS_PER_KEY rows on average keeps the counts only.
 *
 * A column that reaches its key cap (auto mode: max_cardinality; list mode:
 * INDEX_LIST_MAX_KEYS) either goes (auto mode, booleans) or hands its rows so
 * far to the key structures of keys.c (ix_eq_take_rows).
 */
#include "index/index_internal.h"
#include "index/build_internal.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define EMPTY_SLOT UINT32_MAX
#define NULL_ID UINT32_MAX

uint64_t ix_hash_int(uint64_t x)
{
    /* splitmix64's finaliser: sequential ids spread out */
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t ix_hash_str(const char *s, size_t len)
{
    return XXH3_64bits(s, len);
}

/* ------------------------------------------------------ per-row key ids */

static uint32_t ids_get(const struct ix_ids *v, size_t r)
{
    switch (v->width) {
    case 1: return v->p8[r] == UINT8_MAX ? NULL_ID : v->p8[r];
    case 2: return v->p16[r] == UINT16_MAX ? NULL_ID : v->p16[r];
    default: return v->p32[r];
    }
}

/* Widens the ids so that `id` (or NULL_ID) fits. */
static int ids_widen(struct ix_ids *v, unsigned width)
{
    void *p = ix_big_alloc((v->cap ? v->cap : 1) * width);
    if (!p)
        return -1;
    for (size_t r = 0; r < v->n; r++) {
        uint32_t id = ids_get(v, r);
        if (width == 2)
            ((uint16_t *)p)[r] = id == NULL_ID ? UINT16_MAX : (uint16_t)id;
        else
            ((uint32_t *)p)[r] = id;
    }
    ix_big_free(v->p8);
    v->p8 = p;
    v->width = width;
    return 0;
}

static int ids_reserve(struct ix_ids *v, size_t n)
{
    if (n <= v->cap)
        return 0;
    size_t cap = v->cap ? v->cap * 2 : 65536;
    while (cap < n)
        cap *= 2;
    void *p = ix_big_realloc(v->p8, cap * (v->width ? v->width : 1));
    if (!p)
        return -1;
    v->p8 = p;
    v->cap = cap;
    return 0;
}

static int ids_set(struct ix_ids *v, size_t r, uint32_t id)
{
    if (id != NULL_ID) {
        if (v->width == 1 && id >= UINT8_MAX && ids_widen(v, 2) != 0)
            return -1;
        if (v->width == 2 && id >= UINT16_MAX && ids_widen(v, 4) != 0)
            return -1;
    }
    switch (v->width) {
    case 1: v->p8[r] = id == NULL_ID ? UINT8_MAX : (uint8_t)id; break;
    case 2: v->p16[r] = id == NULL_ID ? UINT16_MAX : (uint16_t)id; break;
    default: v->p32[r] = id; break;
    }
    return 0;
}

/* ------------------------------------------------------------ keys */

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
    return c->domain == INDEX_DOMAIN_STRING ? ix_hash_str(s, len) : ix_hash_int(ikey);
}

static uint32_t find_key(const struct index_column *c, uint64_t ikey, const char *s, size_t len)
{
    if (!c->slots)
        return EMPTY_SLOT;
    size_t mask = c->n_slots - 1;
    for (size_t i = key_hash(c, ikey, s, len) & mask;; i = (i + 1) & mask) {
        uint32_t id = c->slots[i];
        if (id == EMPTY_SLOT || key_equal(c, id, ikey, s, len))
            return id;
    }
}

static int grow_slots(struct index_column *c)
{
    size_t n = c->n_slots ? c->n_slots * 2 : 64;
    uint32_t *slots = ix_big_alloc(n * sizeof *slots);
    if (!slots)
        return -1;
    memset(slots, 0xff, n * sizeof *slots);
    for (uint32_t id = 0; id < c->n_keys; id++) {
        uint64_t h = c->domain == INDEX_DOMAIN_STRING
                         ? ix_hash_str(c->str_data + c->str_off[id],
                                       c->str_off[id + 1] - c->str_off[id])
                         : ix_hash_int(c->int_keys[id]);
        size_t i = h & (n - 1);
        while (slots[i] != EMPTY_SLOT)
            i = (i + 1) & (n - 1);
        slots[i] = id;
    }
    ix_big_free(c->slots);
    c->slots = slots;
    c->n_slots = n;
    return 0;
}

/* Finds or adds a key: its id; NULL_ID when the cap is reached (*out_full)
 * or memory ran out. */
static uint32_t intern(struct ix_eq_builder *e, uint64_t ikey, const char *s, size_t len,
                       bool *out_full)
{
    struct index_column *c = e->col;
    if ((c->n_keys + 1) * 4 > c->n_slots * 3 && grow_slots(c) != 0)
        return NULL_ID;
    size_t mask = c->n_slots - 1, i = key_hash(c, ikey, s, len) & mask;
    for (;; i = (i + 1) & mask) {
        uint32_t id = c->slots[i];
        if (id == EMPTY_SLOT)
            break;
        if (key_equal(c, id, ikey, s, len))
            return id;
    }
    if (c->n_keys >= e->max_keys) {
        *out_full = true;
        return NULL_ID;
    }
    if (c->n_keys + 1 >= e->keys_cap) {
        size_t cap = e->keys_cap ? e->keys_cap * 2 : 64;
        if (c->domain == INDEX_DOMAIN_STRING) {
            uint64_t *p = ix_big_realloc(c->str_off, (cap + 1) * sizeof *p);
            if (!p)
                return NULL_ID;
            c->str_off = p;
        } else {
            uint64_t *p = ix_big_realloc(c->int_keys, cap * sizeof *p);
            if (!p)
                return NULL_ID;
            c->int_keys = p;
        }
        e->keys_cap = cap;
    }
    uint32_t id = (uint32_t)c->n_keys;
    if (c->domain == INDEX_DOMAIN_STRING) {
        /* allocated even for an empty first key: str_data is never NULL once
         * a key exists (memcpy(NULL, .., 0) is undefined) */
        if (!c->str_data || c->str_len + len > e->str_cap) {
            size_t cap = e->str_cap ? e->str_cap * 2 : 1024;
            while (cap < c->str_len + len)
                cap *= 2;
            char *p = ix_big_realloc(c->str_data, cap);
            if (!p)
                return NULL_ID;
            c->str_data = p;
            e->str_cap = cap;
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

/* ------------------------------------------------------------ building */

struct ix_eq_builder *ix_eq_builder_create(struct index_column *c, size_t max_keys)
{
    struct ix_eq_builder *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->col = c;
    e->max_keys = max_keys;
    e->ids.width = 1;
    c->kind = IX_EQ;
    return e;
}

void ix_eq_builder_free(struct ix_eq_builder *e)
{
    if (!e)
        return;
    ix_big_free(e->ids.p8);
    free(e);
}

uint64_t ix_int_key_at(duckdb_type t, const void *data, size_t row)
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

int ix_eq_builder_add(struct ix_eq_builder *e, duckdb_vector vec, size_t base, size_t n,
                      size_t *out_full_at)
{
    struct index_column *c = e->col;
    *out_full_at = SIZE_MAX;
    if (ids_reserve(&e->ids, base + n) != 0)
        return -1;
    const void *data = duckdb_vector_get_data(vec);
    uint64_t *validity = duckdb_vector_get_validity(vec);
    for (size_t r = 0; r < n; r++) {
        uint32_t id = NULL_ID;
        if (!validity || duckdb_validity_row_is_valid(validity, (idx_t)r)) {
            bool full = false;
            if (c->domain == INDEX_DOMAIN_STRING) {
                duckdb_string_t *s = &((duckdb_string_t *)data)[r];
                uint32_t len = duckdb_string_t_length(*s);
                e->str_bytes += len;
                id = intern(e, 0, duckdb_string_t_data(s), len, &full);
            } else {
                id = intern(e, ix_int_key_at(c->type, data, r), NULL, 0, &full);
            }
            if (full) {
                *out_full_at = r;
                e->ids.n = base + r;
                return 0;
            }
            if (id == NULL_ID)
                return -1;
        }
        if (ids_set(&e->ids, base + r, id) != 0)
            return -1;
        e->ids.n = base + r + 1;
    }
    return 0;
}

bool ix_eq_row_key(const struct ix_eq_builder *e, size_t r, uint64_t *out_int, const char **out_s,
                   size_t *out_len)
{
    uint32_t id = ids_get(&e->ids, r);
    if (id == NULL_ID)
        return false;
    const struct index_column *c = e->col;
    if (c->domain == INDEX_DOMAIN_STRING) {
        *out_s = c->str_data + c->str_off[id];
        *out_len = c->str_off[id + 1] - c->str_off[id];
    } else {
        *out_int = c->int_keys[id];
    }
    return true;
}

/* Forgets the keys (the column moved to another structure). */
void ix_eq_builder_clear(struct ix_eq_builder *e)
{
    struct index_column *c = e->col;
    ix_big_free(c->slots);
    ix_big_free(c->int_keys);
    ix_big_free(c->str_off);
    ix_big_free(c->str_data);
    c->slots = NULL;
    c->int_keys = NULL;
    c->str_off = NULL;
    c->str_data = NULL;
    c->n_slots = c->n_keys = c->str_len = 0;
    ix_big_free(e->ids.p8);
    memset(&e->ids, 0, sizeof e->ids);
}

int ix_eq_builder_finish(struct ix_eq_builder *e, size_t n_rows, struct ix_store *store)
{
    struct index_column *c = e->col;
    c->offsets = calloc(c->n_keys + 1, sizeof *c->offsets);
    if (!c->offsets)
        return -1;
    size_t non_null = 0;
    for (size_t r = 0; r < n_rows; r++) {
        uint32_t id = ids_get(&e->ids, r);
        if (id != NULL_ID) {
            c->offsets[id + 1]++;
            non_null++;
        }
    }
    for (size_t k = 0; k < c->n_keys; k++)
        c->offsets[k + 1] += c->offsets[k];
    /* Shrink the key store to what is used. */
    if (c->domain == INDEX_DOMAIN_STRING) {
        if (c->str_len) {
            char *p = ix_big_realloc(c->str_data, c->str_len);
            if (p)
                c->str_data = p;
        }
        uint64_t *q = ix_big_realloc(c->str_off, (c->n_keys + 1) * sizeof *q);
        if (q)
            c->str_off = q;
    } else if (c->n_keys) {
        uint64_t *q = ix_big_realloc(c->int_keys, c->n_keys * sizeof *q);
        if (q)
            c->int_keys = q;
    }
    if (c->n_keys && non_null / c->n_keys > INDEX_DENSE_ROWS_PER_KEY) {
        c->kind = IX_EQ_DENSE;
    } else if (non_null) {
        uint32_t *rows = ix_big_alloc(non_null * sizeof *rows);
        uint32_t *fill = ix_big_alloc((c->n_keys ? c->n_keys : 1) * sizeof *fill);
        if (!rows || !fill) {
            ix_big_free(rows);
            ix_big_free(fill);
            return -1;
        }
        memcpy(fill, c->offsets, c->n_keys * sizeof *fill);
        for (size_t r = 0; r < n_rows; r++) {
            uint32_t id = ids_get(&e->ids, r);
            if (id != NULL_ID)
                rows[fill[id]++] = (uint32_t)r;
        }
        ix_big_free(fill);
        c->lists_off = ix_store_append(store, rows, non_null * sizeof *rows);
        ix_big_free(rows);
        if (c->lists_off == UINT64_MAX)
            return -1;
        c->disk = non_null * sizeof(uint32_t);
    }
    ix_big_free(e->ids.p8);
    memset(&e->ids, 0, sizeof e->ids);
    c->memory = sizeof *c + ix_big_bytes(c->n_slots * sizeof(uint32_t)) +
                (c->n_keys + 1) * sizeof(uint32_t) +
                (c->domain == INDEX_DOMAIN_STRING
                     ? ix_big_bytes((c->n_keys + 1) * sizeof(uint64_t)) + ix_big_bytes(c->str_len)
                     : ix_big_bytes(c->n_keys * sizeof(uint64_t)));
    return 0;
}

/* ------------------------------------------------------------- lookups */

uint32_t ix_eq_find(const struct index_column *c, const struct index_key *key)
{
    if (key->domain != c->domain)
        return EMPTY_SLOT;
    uint64_t ikey = 0;
    if (c->domain == INDEX_DOMAIN_INT || c->domain == INDEX_DOMAIN_BOOL)
        ikey = (uint64_t)key->i;
    else if (c->domain == INDEX_DOMAIN_UINT)
        ikey = key->u;
    return find_key(c, ikey, key->s, key->len);
}

enum ix_read ix_eq_lookup(const struct index_column *c, const struct ix_store *store,
                          const struct index_key *key, size_t limit, bool nowait,
                          struct ix_hits *out, bool *out_over)
{
    uint32_t id = ix_eq_find(c, key);
    if (id == EMPTY_SLOT)
        return IX_READ_OK;
    size_t n = c->offsets[id + 1] - c->offsets[id];
    out->n = n;
    if (c->kind == IX_EQ_DENSE || n == 0)
        return IX_READ_OK;
    if (n > limit) {
        *out_over = true;
        return IX_READ_OK;
    }
    out->rows = malloc(n * sizeof *out->rows);
    if (!out->rows)
        return IX_READ_ERROR;
    out->owned = true;
    enum ix_read rd = ix_store_read(store, c->lists_off + (uint64_t)c->offsets[id] * sizeof(uint32_t),
                                    n * sizeof(uint32_t), out->rows, nowait);
    if (rd != IX_READ_OK)
        ix_hits_free(out);
    return rd;
}
