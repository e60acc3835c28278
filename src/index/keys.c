/*
 * Lookups on near-unique columns (index.h, "Key lookups"): the structures a
 * column gets when it has too many distinct keys for the equality index's
 * hash table.
 *
 * Frames (IX_FRAMES): an integer column without NULLs whose values never
 * decrease in table order (an id, a sequence, a timestamp-like key) is its
 * own sorted index: the rows of a key are one run. The values are cut into
 * frames of IX_FRAME_ROWS rows; a frame is stored as its bit width and the
 * packed deltas between neighbours (an id 1..N is 1 bit a row), and only
 * each frame's first key and offset stay in memory (16 bytes per 128 rows).
 * A lookup bisects the first keys, reads the one or two frames that can hold
 * the key and decodes them: exact rows, nothing to verify. A frame whose
 * values rise by exactly 1 a row (a unit frame: the common id 1..N) is
 * marked in a bitmap in memory (1 bit a frame); a key in unit frames is
 * answered from the first keys alone, without reading the store (one
 * preadv2 less a point lookup: its row block is the only read left).
 *
 * Hash buckets (IX_HASHED): any other column (strings, integers in no
 * order). 2^bits buckets (about 8 rows each) chosen by the top bits of a
 * 64-bit hash; in memory only where each bucket starts, in the store each
 * row's (position, low 32 bits of the hash) in bucket order and row order. A
 * lookup reads one bucket and keeps the entries whose fingerprint matches:
 * candidates, which the fast path verifies against the row (a fingerprint
 * collision never answers a wrong row).
 *
 * Building keeps one 64-bit value per row (the integer, or the string's
 * hash) and a NULL bitmap, then sorts into place by counting.
 */
#include "index/build_internal.h"

#include <stdlib.h>
#include <string.h>

struct ix_keys_builder {
    struct index_column *col;
    uint64_t *vals;             /* per row: raw integer bits or the string's hash */
    uint8_t *nulls;             /* bitmap, allocated at the first NULL */
    size_t n, cap;
    size_t non_null;
    bool has_null;
    bool monotone;
    uint64_t last;              /* order-preserving form of the last value */
    uint64_t str_bytes;
};

struct ix_keys_builder *ix_keys_builder_create(struct index_column *c)
{
    struct ix_keys_builder *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->col = c;
    k->monotone = c->domain != INDEX_DOMAIN_STRING;
    return k;
}

void ix_keys_builder_free(struct ix_keys_builder *k)
{
    if (!k)
        return;
    ix_big_free(k->vals);
    ix_big_free(k->nulls);
    free(k);
}

static int reserve(struct ix_keys_builder *k, size_t r)
{
    if (r < k->cap)
        return 0;
    size_t cap = k->cap ? k->cap * 2 : 65536;
    while (cap <= r)
        cap *= 2;
    uint64_t *v = ix_big_realloc(k->vals, cap * sizeof *v);
    if (!v)
        return -1;
    k->vals = v;
    if (k->nulls) {
        uint8_t *b = ix_big_realloc(k->nulls, cap / 8 + 1); /* new pages are zero */
        if (!b)
            return -1;
        k->nulls = b;
    }
    k->cap = cap;
    return 0;
}

int ix_keys_add_int(struct ix_keys_builder *k, size_t r, uint64_t v)
{
    if (reserve(k, r) != 0)
        return -1;
    k->vals[r] = v;
    k->n = r + 1;
    k->non_null++;
    uint64_t s = ix_sort_key(k->col->domain, v);
    if (k->non_null > 1 && s < k->last)
        k->monotone = false;
    k->last = s;
    return 0;
}

int ix_keys_add_str(struct ix_keys_builder *k, size_t r, const char *s, size_t len)
{
    if (reserve(k, r) != 0)
        return -1;
    k->vals[r] = ix_hash_str(s, len);
    k->n = r + 1;
    k->non_null++;
    k->str_bytes += len;
    return 0;
}

int ix_keys_add_null(struct ix_keys_builder *k, size_t r)
{
    if (reserve(k, r) != 0)
        return -1;
    if (!k->nulls && !(k->nulls = ix_big_calloc(k->cap / 8 + 1)))
        return -1;
    k->nulls[r / 8] |= (uint8_t)(1u << (r % 8));
    k->vals[r] = 0;
    k->n = r + 1;
    k->has_null = true;
    k->monotone = false;
    return 0;
}

int ix_keys_add_vector(struct ix_keys_builder *k, duckdb_vector vec, size_t base, size_t from,
                       size_t n)
{
    const struct index_column *c = k->col;
    const void *data = duckdb_vector_get_data(vec);
    uint64_t *validity = duckdb_vector_get_validity(vec);
    if (reserve(k, base + n) != 0)
        return -1;
    for (size_t r = from; r < n; r++) {
        int rc;
        if (validity && !duckdb_validity_row_is_valid(validity, (idx_t)r)) {
            rc = ix_keys_add_null(k, base + r);
        } else if (c->domain == INDEX_DOMAIN_STRING) {
            duckdb_string_t *s = &((duckdb_string_t *)data)[r];
            rc = ix_keys_add_str(k, base + r, duckdb_string_t_data(s), duckdb_string_t_length(*s));
        } else {
            rc = ix_keys_add_int(k, base + r, ix_int_key_at(c->type, data, r));
        }
        if (rc != 0)
            return -1;
    }
    return 0;
}

static bool is_null(const struct ix_keys_builder *k, size_t r)
{
    return k->nulls && (k->nulls[r / 8] >> (r % 8) & 1);
}

/* ------------------------------------------------------------- frames */

static unsigned bits_of(uint64_t v)
{
    return v ? 64 - (unsigned)__builtin_clzll(v) : 0;
}

static int frames_finish(struct ix_keys_builder *k, size_t n_rows, struct ix_store *store)
{
    struct index_column *c = k->col;
    size_t nf = (n_rows + IX_FRAME_ROWS - 1) / IX_FRAME_ROWS;
    c->frame_key = malloc((nf ? nf : 1) * sizeof *c->frame_key);
    c->frame_off = malloc((nf + 1) * sizeof *c->frame_off);
    c->frame_unit = calloc((nf + 63) / 64 + 1, sizeof *c->frame_unit);
    unsigned char *buf = malloc(1 + IX_FRAME_ROWS * 8 + 8);
    if (!c->frame_key || !c->frame_off || !c->frame_unit || !buf) {
        free(buf);
        return -1;
    }
    size_t distinct = 0;
    uint64_t base_off = store->size;
    for (size_t f = 0; f < nf; f++) {
        size_t first = f * IX_FRAME_ROWS;
        size_t m = n_rows - first < IX_FRAME_ROWS ? n_rows - first : IX_FRAME_ROWS;
        const uint64_t *v = k->vals + first;
        enum index_domain d = c->domain;
        uint64_t maxd = 0;
        bool unit = true;
        for (size_t i = 1; i < m; i++) {
            uint64_t delta = ix_sort_key(d, v[i]) - ix_sort_key(d, v[i - 1]);
            if (delta > maxd)
                maxd = delta;
            distinct += delta != 0;
            unit = unit && delta == 1;
        }
        if (unit)
            c->frame_unit[f / 64] |= (uint64_t)1 << (f % 64);
        distinct += f == 0 || ix_sort_key(d, v[0]) != ix_sort_key(d, k->vals[first - 1]);
        unsigned w = bits_of(maxd);
        size_t bytes = ((m - 1) * w + 7) / 8;
        memset(buf, 0, 1 + bytes + 8);
        buf[0] = (unsigned char)w;
        uint64_t bit = 0;
        for (size_t i = 1; i < m && w; i++, bit += w) {
            uint64_t delta = ix_sort_key(d, v[i]) - ix_sort_key(d, v[i - 1]);
            for (unsigned b = 0; b < w; b++)
                if (delta >> b & 1)
                    buf[1 + (bit + b) / 8] |= (unsigned char)(1u << ((bit + b) % 8));
        }
        c->frame_key[f] = ix_sort_key(d, v[0]);
        uint64_t off = ix_store_append(store, buf, 1 + bytes);
        if (off == UINT64_MAX) {
            free(buf);
            return -1;
        }
        c->frame_off[f] = off;
    }
    c->frame_off[nf] = store->size;
    free(buf);
    c->kind = IX_FRAMES;
    c->n_frames = nf;
    c->n_values = n_rows;
    c->n_keys = distinct;
    c->memory = sizeof *c + nf * sizeof(uint64_t) + (nf + 1) * sizeof(uint64_t) +
                ((nf + 63) / 64 + 1) * sizeof(uint64_t);
    c->disk = store->size - base_off;
    return 0;
}

/* w bits at bit offset `bit` of p (LSB first); p has 16 readable bytes of
 * slack past its end. */
static inline uint64_t get_bits(const unsigned char *p, uint64_t bit, unsigned w)
{
    if (w == 0)
        return 0;
    uint64_t byte = bit >> 3, lo;
    unsigned sh = (unsigned)(bit & 7);
    memcpy(&lo, p + byte, 8);
    uint64_t v = lo >> sh;
    if (w + sh > 64)
        v |= (uint64_t)p[byte + 8] << (64 - sh);
    return w == 64 ? v : v & (((uint64_t)1 << w) - 1);
}

/* How many frames start with a key below k. */
static size_t frames_below(const struct index_column *c, uint64_t k)
{
    return ix_lower_bound(c->frame_key, 0, c->n_frames, k);
}

static bool unit_frames(const struct index_column *c, size_t f0, size_t f1)
{
    for (size_t f = f0; f < f1; f++)
        if (!(c->frame_unit[f / 64] >> (f % 64) & 1))
            return false;
    return true;
}

/* The rows of key k in frames [f0, f1), all of them unit frames: in frame
 * f, k is row k - frame_key[f] when that is below the frame's rows. */
static enum ix_read unit_lookup(const struct index_column *c, uint64_t k, size_t f0, size_t f1,
                                size_t limit, struct ix_hits *out, bool *out_over)
{
    for (size_t f = f0; f < f1; f++) {
        size_t first = f * IX_FRAME_ROWS;
        size_t m = c->n_values - first < IX_FRAME_ROWS ? c->n_values - first : IX_FRAME_ROWS;
        if (k < c->frame_key[f] || k - c->frame_key[f] >= m)
            continue;
        if (!out->rows) {
            /* at most one row a frame */
            out->rows = malloc((f1 - f) * sizeof *out->rows);
            if (!out->rows)
                return IX_READ_ERROR;
            out->owned = true;
        }
        out->rows[out->n++] = (uint32_t)(first + (k - c->frame_key[f]));
    }
    if (out->n > limit)
        *out_over = true;
    return IX_READ_OK;
}

static enum ix_read frames_lookup(const struct index_column *c, const struct ix_store *store,
                                  uint64_t k, size_t limit, bool nowait, struct ix_hits *out,
                                  bool *out_over)
{
    /* frames [first_ge, f1) start with k; the run may begin in frame first_ge - 1 */
    size_t first_ge = frames_below(c, k);
    size_t f1 = ix_upper_bound(c->frame_key, first_ge, c->n_frames, k);
    size_t f0 = first_ge > 0 ? first_ge - 1 : 0;
    if (f1 == 0)
        return IX_READ_OK; /* below the first key */
    if ((f1 - f0 - 1) * IX_FRAME_ROWS > limit) {
        out->n = (f1 - f0 - 1) * IX_FRAME_ROWS;
        *out_over = true;
        return IX_READ_OK;
    }
    if (unit_frames(c, f0, f1))
        return unit_lookup(c, k, f0, f1, limit, out, out_over);
    uint64_t off = c->frame_off[f0], len = c->frame_off[f1] - off;
    unsigned char small[1 + IX_FRAME_ROWS * 8 + 16];
    unsigned char *bytes = len + 16 <= sizeof small ? small : malloc(len + 16);
    if (!bytes)
        return IX_READ_ERROR;
    memset(bytes + len, 0, 16);
    enum ix_read rd = ix_store_read(store, off, len, bytes, nowait);
    size_t cap = 0;
    bool past = false;
    for (size_t f = f0; rd == IX_READ_OK && f < f1 && !past; f++) {
        const unsigned char *p = bytes + (c->frame_off[f] - off);
        size_t flen = c->frame_off[f + 1] - c->frame_off[f];
        size_t first = f * IX_FRAME_ROWS;
        size_t m = c->n_values - first < IX_FRAME_ROWS ? c->n_values - first : IX_FRAME_ROWS;
        unsigned w = flen ? p[0] : 65;
        if (w > 64 || flen < 1 + ((m - 1) * w + 7) / 8) {
            rd = IX_READ_ERROR;
            break;
        }
        /* values never decrease: skip to k, stop past it */
        uint64_t v = c->frame_key[f];
        for (size_t i = 0; i < m; i++) {
            if (i)
                v += get_bits(p + 1, (uint64_t)(i - 1) * w, w);
            if (v < k)
                continue;
            if (v > k) {
                past = true;
                break;
            }
            if (out->n == cap) {
                cap = cap ? cap * 2 : 4;
                uint32_t *q = realloc(out->owned ? out->rows : NULL, cap * sizeof *q);
                if (!q) {
                    rd = IX_READ_ERROR;
                    break;
                }
                out->rows = q;
                out->owned = true;
            }
            out->rows[out->n++] = (uint32_t)(first + i);
        }
    }
    if (bytes != small)
        free(bytes);
    if (rd != IX_READ_OK)
        ix_hits_free(out);
    else if (out->n > limit)
        *out_over = true;
    return rd;
}

/* The first row whose key is >= x (n_values when none): frame f, the last
 * whose first key is below x, holds it or it is the next frame's first row.
 * A unit frame answers without a read. */
static enum ix_read frames_lower_bound(const void *col, const struct ix_store *store, uint64_t x,
                                       bool nowait, size_t *out)
{
    const struct index_column *c = col;
    size_t a = frames_below(c, x);
    if (a == 0) {
        *out = 0;
        return IX_READ_OK;
    }
    size_t f = a - 1, first = f * IX_FRAME_ROWS;
    size_t m = c->n_values - first < IX_FRAME_ROWS ? c->n_values - first : IX_FRAME_ROWS;
    if (unit_frames(c, f, f + 1)) {
        uint64_t d = x - c->frame_key[f]; /* > 0 */
        *out = first + (d < m ? d : m);
        return IX_READ_OK;
    }
    uint64_t off = c->frame_off[f], len = c->frame_off[f + 1] - off;
    unsigned char p[1 + IX_FRAME_ROWS * 8 + 16];
    if (len < 1 || len + 16 > sizeof p)
        return IX_READ_ERROR;
    memset(p + len, 0, 16);
    enum ix_read rd = ix_store_read(store, off, len, p, nowait);
    if (rd != IX_READ_OK)
        return rd;
    unsigned w = p[0];
    if (w > 64 || len < 1 + ((m - 1) * w + 7) / 8)
        return IX_READ_ERROR;
    uint64_t v = c->frame_key[f];
    for (size_t i = 1; i < m; i++) {
        v += get_bits(p + 1, (uint64_t)(i - 1) * w, w);
        if (v >= x) {
            *out = first + i;
            return IX_READ_OK;
        }
    }
    *out = first + m;
    return IX_READ_OK;
}

enum ix_read ix_frames_count(const struct index_column *c, const struct ix_store *store,
                             uint64_t lo, uint64_t hi, bool nowait, uint64_t *out)
{
    return ix_count_between(frames_lower_bound, c, c->n_values, store, lo, hi, nowait, out);
}

/* -------------------------------------------------------- hash buckets */

struct entry {
    uint32_t pos;
    uint32_t fp;
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int hashed_finish(struct ix_keys_builder *k, size_t n_rows, struct ix_store *store,
                         bool picky)
{
    struct index_column *c = k->col;
    size_t nn = k->non_null;
    if (picky && c->domain == INDEX_DOMAIN_STRING && nn &&
        k->str_bytes / nn > INDEX_HASHED_MAX_AVG_LEN)
        return 1; /* free text, not identifiers */
    unsigned bits = 0;
    while (((size_t)1 << bits) * 8 < nn && bits < 31)
        bits++;
    size_t nb = (size_t)1 << bits;
    uint32_t *off = calloc(nb + 1, sizeof *off);
    if (!off)
        return -1;
    bool str = c->domain == INDEX_DOMAIN_STRING;
    for (size_t r = 0; r < n_rows; r++) {
        if (is_null(k, r))
            continue;
        if (!str)
            k->vals[r] = ix_hash_int(k->vals[r]);
        off[(bits ? k->vals[r] >> (64 - bits) : 0) + 1]++;
    }
    for (size_t b = 0; b < nb; b++)
        off[b + 1] += off[b];
    uint64_t *eh = ix_big_alloc((nn ? nn : 1) * sizeof *eh);
    uint32_t *ep = ix_big_alloc((nn ? nn : 1) * sizeof *ep);
    uint32_t *fill = ix_big_alloc(nb * sizeof *fill);
    if (!eh || !ep || !fill) {
        ix_big_free(eh);
        ix_big_free(ep);
        ix_big_free(fill);
        free(off);
        return -1;
    }
    memcpy(fill, off, nb * sizeof *fill);
    for (size_t r = 0; r < n_rows; r++) {
        if (is_null(k, r))
            continue;
        uint64_t h = k->vals[r];
        uint32_t at = fill[bits ? h >> (64 - bits) : 0]++;
        eh[at] = h;
        ep[at] = (uint32_t)r;
    }
    ix_big_free(fill);
    ix_big_free(k->vals);
    k->vals = NULL;
    /* The entries, in bucket order (rows ascending inside a bucket). */
    int rc = 0;
    uint64_t start = store->size;
    struct entry buf[1024];
    for (size_t i = 0; i < nn && rc == 0; i += 1024) {
        size_t m = nn - i < 1024 ? nn - i : 1024;
        for (size_t j = 0; j < m; j++)
            buf[j] = (struct entry){ep[i + j], (uint32_t)eh[i + j]};
        if (ix_store_append(store, buf, m * sizeof *buf) == UINT64_MAX)
            rc = -1;
    }
    ix_big_free(ep);
    /* Distinct hashes (the key count reported; the rows-per-key rule). */
    size_t distinct = 0;
    for (size_t b = 0; b < nb && rc == 0; b++) {
        size_t m = off[b + 1] - off[b];
        if (m > 1)
            qsort(eh + off[b], m, sizeof *eh, cmp_u64);
        for (size_t j = 0; j < m; j++)
            distinct += j == 0 || eh[off[b] + j] != eh[off[b] + j - 1];
    }
    ix_big_free(eh);
    if (rc != 0) {
        free(off);
        return -1;
    }
    if (picky && str && nn > INDEX_HASHED_MAX_ROWS_PER_KEY * distinct) {
        free(off);
        return 1; /* repetitive: DuckDB does better */
    }
    c->kind = IX_HASHED;
    c->bucket_bits = bits;
    c->bucket_off = off;
    c->entries_off = start;
    c->n_entries = nn;
    c->n_keys = distinct;
    c->memory = sizeof *c + (nb + 1) * sizeof *off;
    c->disk = nn * sizeof(struct entry);
    return 0;
}

static enum ix_read hashed_lookup(const struct index_column *c, const struct ix_store *store,
                                  uint64_t h, size_t limit, bool nowait, struct ix_hits *out,
                                  bool *out_over)
{
    size_t b = c->bucket_bits ? h >> (64 - c->bucket_bits) : 0;
    size_t from = c->bucket_off[b], m = c->bucket_off[b + 1] - from;
    out->candidates = true;
    if (m == 0)
        return IX_READ_OK;
    if (m > limit + 64) {
        out->n = m;
        *out_over = true;
        return IX_READ_OK;
    }
    struct entry small[32];
    struct entry *e = m <= 32 ? small : malloc(m * sizeof *e);
    if (!e)
        return IX_READ_ERROR;
    enum ix_read rd = ix_store_read(store, c->entries_off + from * sizeof *e, m * sizeof *e, e,
                                    nowait);
    size_t hits = 0;
    for (size_t i = 0; rd == IX_READ_OK && i < m; i++)
        hits += e[i].fp == (uint32_t)h;
    if (rd == IX_READ_OK && hits) {
        out->rows = malloc(hits * sizeof *out->rows);
        if (!out->rows) {
            rd = IX_READ_ERROR;
        } else {
            out->owned = true;
            for (size_t i = 0; i < m; i++)
                if (e[i].fp == (uint32_t)h)
                    out->rows[out->n++] = e[i].pos;
        }
    }
    if (e != small)
        free(e);
    if (rd == IX_READ_OK && out->n > limit)
        *out_over = true;
    return rd;
}

/* --------------------------------------------------------------- both */

int ix_keys_builder_finish(struct ix_keys_builder *k, size_t n_rows, struct ix_store *store,
                           bool picky)
{
    /* rows after the last one fed are NULL (the column went on elsewhere) */
    for (size_t r = k->n; r < n_rows; r++)
        if (ix_keys_add_null(k, r) != 0)
            return -1;
    if (k->col->domain != INDEX_DOMAIN_STRING && k->monotone && !k->has_null && n_rows > 0)
        return frames_finish(k, n_rows, store);
    return hashed_finish(k, n_rows, store, picky);
}

enum ix_read ix_keys_lookup(const struct index_column *c, const struct ix_store *store,
                            const struct index_key *key, size_t limit, bool nowait,
                            struct ix_hits *out, bool *out_over)
{
    if (key->domain != c->domain)
        return IX_READ_OK;
    uint64_t raw = c->domain == INDEX_DOMAIN_UINT ? key->u : (uint64_t)key->i;
    if (c->kind == IX_FRAMES)
        return frames_lookup(c, store, ix_sort_key(c->domain, raw), limit, nowait, out, out_over);
    uint64_t h = c->domain == INDEX_DOMAIN_STRING ? ix_hash_str(key->s, key->len) : ix_hash_int(raw);
    return hashed_lookup(c, store, h, limit, nowait, out, out_over);
}
