/*
 * Range counts from sorted values (index.h, "Range counts"): a column's
 * non-NULL values, as order-preserving 64-bit keys, sorted into the fast
 * path's file, with every IX_SORTED_STEP-th key in memory. A count of the
 * rows whose value lies in [lo, hi] is two bound searches: a binary search
 * of the in-memory sample names one run of IX_SORTED_STEP keys (one 4 KiB
 * pread from the page cache), a binary search of the run gives the
 * position. DuckDB answers the same count by scanning the column (~1 ms a
 * million rows, plus planning); this costs a few microseconds.
 *
 * The keys compare as DuckDB compares the values with the bounds the query
 * layer sends (query_index.c): integers, DATE days and TIMESTAMP[TZ]
 * microseconds by value; TIMESTAMP_S and TIMESTAMP_MS as the microseconds
 * DuckDB casts them to (it compares them with a TIMESTAMP bound as
 * TIMESTAMP); TIMESTAMP_NS by nanoseconds; DOUBLE, FLOAT (widened exactly)
 * and DECIMAL (as the double DuckDB casts it to: DECIMAL against a DOUBLE
 * bound compares as DOUBLE) as doubles, -0 equal to +0 and every NaN equal
 * to every other and above +infinity. HUGEINT by value when every value
 * fits 64 bits (else the column keeps none); UHUGEINT as the double DuckDB
 * casts it to (the query layer compares it with DOUBLE values only). NULLs
 * are not kept: they never satisfy a comparison.
 */
#include "index/build_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef __int128 i128;

bool index_range_type(duckdb_type t)
{
    switch (t) {
    case DUCKDB_TYPE_TINYINT: case DUCKDB_TYPE_SMALLINT: case DUCKDB_TYPE_INTEGER:
    case DUCKDB_TYPE_BIGINT: case DUCKDB_TYPE_UTINYINT: case DUCKDB_TYPE_USMALLINT:
    case DUCKDB_TYPE_UINTEGER: case DUCKDB_TYPE_UBIGINT: case DUCKDB_TYPE_DOUBLE:
    case DUCKDB_TYPE_FLOAT: case DUCKDB_TYPE_DECIMAL: case DUCKDB_TYPE_DATE:
    case DUCKDB_TYPE_TIMESTAMP: case DUCKDB_TYPE_TIMESTAMP_TZ: case DUCKDB_TYPE_TIMESTAMP_S:
    case DUCKDB_TYPE_TIMESTAMP_MS: case DUCKDB_TYPE_TIMESTAMP_NS: case DUCKDB_TYPE_HUGEINT:
    case DUCKDB_TYPE_UHUGEINT:
        return true;
    default:
        return false;
    }
}

static bool is_unsigned(duckdb_type t)
{
    return t == DUCKDB_TYPE_UTINYINT || t == DUCKDB_TYPE_USMALLINT || t == DUCKDB_TYPE_UINTEGER ||
           t == DUCKDB_TYPE_UBIGINT;
}

/* Columns whose keys are doubles (UHUGEINT: the query layer compares it
 * with DOUBLE values only, as DECIMAL). */
static bool is_real(duckdb_type t)
{
    return t == DUCKDB_TYPE_DOUBLE || t == DUCKDB_TYPE_FLOAT || t == DUCKDB_TYPE_DECIMAL ||
           t == DUCKDB_TYPE_UHUGEINT;
}

static inline uint64_t key_of_int(int64_t v)
{
    return (uint64_t)v ^ ((uint64_t)1 << 63);
}

uint64_t ix_sorted_key_double(double d)
{
    if (isnan(d))
        return UINT64_MAX; /* every NaN: one key, above +inf */
    if (d == 0)
        d = 0; /* -0 equals +0 */
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return (b >> 63) ? ~b : b | ((uint64_t)1 << 63);
}

/* ------------------------------------------------- DuckDB's casts, mirrored
 * A DECIMAL compared with a DOUBLE is cast to DOUBLE, and DuckDB 1.4's cast
 * is not the correctly rounded quotient: an integer that a double holds
 * exactly (|v| <= 2^53) is divided by 10^scale; a larger one is cast as its
 * integer part plus its fraction over 10^scale; a 128-bit integer becomes a
 * double as its low word plus its high word times 2^64 (its own rounding).
 * Checked bit for bit against DuckDB's casts for every scale in
 * tests/unit/index (decimal_images_match_duckdb). */
static const double pow10_d[39] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11, 1e12,
    1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25,
    1e26, 1e27, 1e28, 1e29, 1e30, 1e31, 1e32, 1e33, 1e34, 1e35, 1e36, 1e37, 1e38};

#define EXACT_IN_DOUBLE ((int64_t)1 << 53)

double ix_decimal_double(int64_t v, unsigned scale)
{
    if (scale == 0 || (v <= EXACT_IN_DOUBLE && v >= -EXACT_IN_DOUBLE))
        return (double)v / pow10_d[scale];
    int64_t p = 1;
    for (unsigned i = 0; i < scale; i++)
        p *= 10;
    return (double)(v / p) + (double)(v % p) / pow10_d[scale];
}

static double hugeint_double(i128 v)
{
    uint64_t lower = (uint64_t)v;
    int64_t upper = (int64_t)(v >> 64);
    if (upper == -1)
        return -(double)(UINT64_MAX - lower) - 1;
    return (double)lower + (double)upper * (double)UINT64_MAX;
}

/* A UHUGEINT as DuckDB 1.4 casts it to DOUBLE (compared with a DOUBLE
 * bound): its low word plus its high word times 2^64, each rounded. */
static double uhugeint_double(duckdb_uhugeint u)
{
    return (double)u.lower + (double)u.upper * (double)UINT64_MAX;
}

double ix_decimal128_double(duckdb_hugeint h, unsigned scale)
{
    i128 v = (i128)(((unsigned __int128)(uint64_t)h.upper << 64) | h.lower);
    if (scale == 0 || (v <= EXACT_IN_DOUBLE && v >= -EXACT_IN_DOUBLE))
        return hugeint_double(v) / pow10_d[scale];
    i128 p = 1;
    for (unsigned i = 0; i < scale; i++)
        p *= 10;
    return hugeint_double(v / p) + hugeint_double(v % p) / pow10_d[scale];
}

/* TIMESTAMP_S/MS as TIMESTAMP microseconds: DuckDB's cast keeps the
 * infinities (INT64_MAX, -INT64_MAX) and fails past the range, which fails
 * every comparison on the column: false here, and the column keeps no
 * sorted values. */
static bool micros_of(int64_t v, int64_t per, int64_t *out)
{
    if (v == INT64_MAX || v == -INT64_MAX) {
        *out = v;
        return true;
    }
    if (v > INT64_MAX / per || v < -(INT64_MAX / per))
        return false;
    *out = v * per;
    return true;
}

/* ---------------------------------------------------------------- building */

struct ix_sorted_builder {
    struct ix_sorted *col;
    uint8_t width;              /* DECIMAL: bytes of its integer (2, 4, 8, 16) */
    uint8_t scale;              /* DECIMAL */
    uint64_t *keys;             /* ix_big_alloc */
    size_t n, cap;
    size_t rows;                /* rows seen, NULLs included */
};

struct ix_sorted_builder *ix_sorted_builder_create(size_t col, const struct ix_col *c)
{
    struct ix_sorted_builder *b = calloc(1, sizeof *b);
    if (b)
        b->col = calloc(1, sizeof *b->col);
    if (!b || !b->col) {
        free(b);
        return NULL;
    }
    b->col->col = col;
    b->col->type = c->type;
    b->width = c->type == DUCKDB_TYPE_DECIMAL && c->ck == IX_CK_128 ? 16 : c->width;
    b->scale = c->scale;
    return b;
}

void ix_sorted_builder_free(struct ix_sorted_builder *b)
{
    if (!b)
        return;
    ix_big_free(b->keys);
    ix_sorted_free(b->col);
    free(b);
}

/* Row `r` of a vector's data as a key; false when DuckDB could not compare
 * it (a TIMESTAMP_S/MS past the microsecond range). */
static bool key_at(const struct ix_sorted_builder *b, const void *data, size_t r, uint64_t *out)
{
    duckdb_type t = b->col->type;
    int64_t us;
    switch (t) {
    case DUCKDB_TYPE_DOUBLE: *out = ix_sorted_key_double(((const double *)data)[r]); return true;
    case DUCKDB_TYPE_FLOAT: *out = ix_sorted_key_double(((const float *)data)[r]); return true;
    case DUCKDB_TYPE_DATE: *out = key_of_int(((const int32_t *)data)[r]); return true;
    case DUCKDB_TYPE_TIMESTAMP:
    case DUCKDB_TYPE_TIMESTAMP_TZ:
    case DUCKDB_TYPE_TIMESTAMP_NS: *out = key_of_int(((const int64_t *)data)[r]); return true;
    case DUCKDB_TYPE_TIMESTAMP_S:
    case DUCKDB_TYPE_TIMESTAMP_MS:
        if (!micros_of(((const int64_t *)data)[r], t == DUCKDB_TYPE_TIMESTAMP_S ? 1000000 : 1000,
                       &us))
            return false;
        *out = key_of_int(us);
        return true;
    case DUCKDB_TYPE_HUGEINT: {
        /* The query layer sends BIGINT bounds (a larger one is a HUGEINT
         * cast, left to DuckDB), compared exactly as HUGEINT: a value that
         * fits 64 bits keys as that integer; a column holding a larger one
         * keeps no sorted values. */
        duckdb_hugeint h = ((const duckdb_hugeint *)data)[r];
        if (!((h.upper == 0 && h.lower <= (uint64_t)INT64_MAX) ||
              (h.upper == -1 && h.lower > (uint64_t)INT64_MAX)))
            return false;
        *out = key_of_int((int64_t)h.lower);
        return true;
    }
    case DUCKDB_TYPE_UHUGEINT:
        *out = ix_sorted_key_double(uhugeint_double(((const duckdb_uhugeint *)data)[r]));
        return true;
    case DUCKDB_TYPE_DECIMAL: {
        double d;
        switch (b->width) {
        case 2: d = ix_decimal_double(((const int16_t *)data)[r], b->scale); break;
        case 4: d = ix_decimal_double(((const int32_t *)data)[r], b->scale); break;
        case 8: d = ix_decimal_double(((const int64_t *)data)[r], b->scale); break;
        default: d = ix_decimal128_double(((const duckdb_hugeint *)data)[r], b->scale); break;
        }
        *out = ix_sorted_key_double(d);
        return true;
    }
    default:
        if (is_unsigned(t))
            *out = ix_int_key_at(t, data, r);
        else
            *out = key_of_int((int64_t)ix_int_key_at(t, data, r));
        return true;
    }
}

int ix_sorted_builder_add(struct ix_sorted_builder *b, duckdb_vector vec, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 65536;
        while (cap < b->n + n)
            cap *= 2;
        uint64_t *p = ix_big_realloc(b->keys, cap * sizeof *p);
        if (!p)
            return -1;
        b->keys = p;
        b->cap = cap;
    }
    const void *data = duckdb_vector_get_data(vec);
    uint64_t *validity = duckdb_vector_get_validity(vec);
    b->rows += n;
    for (size_t r = 0; r < n; r++)
        if (!validity || duckdb_validity_row_is_valid(validity, (idx_t)r)) {
            if (!key_at(b, data, r, &b->keys[b->n]))
                return -1;
            b->n++;
        }
    return 0;
}

/* LSD radix sort, 16-bit digits; a digit every key shares is skipped (the
 * high digits of timestamps and small integers). */
static int radix_sort(uint64_t *keys, size_t n)
{
    if (n < 2)
        return 0;
    uint64_t *tmp = ix_big_alloc(n * sizeof *tmp);
    size_t *count = malloc(65536 * sizeof *count);
    if (!tmp || !count) {
        ix_big_free(tmp);
        free(count);
        return -1;
    }
    uint64_t *src = keys, *dst = tmp;
    uint64_t all_or = 0, all_and = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        all_or |= keys[i];
        all_and &= keys[i];
    }
    for (unsigned shift = 0; shift < 64; shift += 16) {
        if ((((all_or ^ all_and) >> shift) & 0xffff) == 0)
            continue; /* every key has the same digit here */
        memset(count, 0, 65536 * sizeof *count);
        for (size_t i = 0; i < n; i++)
            count[(src[i] >> shift) & 0xffff]++;
        size_t sum = 0;
        for (size_t d = 0; d < 65536; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & 0xffff]++] = src[i];
        uint64_t *x = src;
        src = dst;
        dst = x;
    }
    if (src != keys)
        memcpy(keys, src, n * sizeof *keys);
    ix_big_free(tmp);
    free(count);
    return 0;
}

struct ix_sorted *ix_sorted_builder_finish(struct ix_sorted_builder *b, struct ix_store *store)
{
    struct ix_sorted *c = b->col;
    /* in table order still: does the column never decrease (an id, a load
     * time), so that a range of it is a run of consecutive rows? */
    c->monotone = c->unique = b->n == b->rows;
    for (size_t i = 1; i < b->n && c->monotone; i++) {
        c->monotone = b->keys[i - 1] <= b->keys[i];
        c->unique = c->unique && b->keys[i - 1] < b->keys[i]; /* (false with monotone) */
    }
    if (radix_sort(b->keys, b->n) != 0)
        return NULL;
    c->n = b->n;
    c->n_sample = (b->n + IX_SORTED_STEP - 1) / IX_SORTED_STEP;
    c->sample = malloc((c->n_sample ? c->n_sample : 1) * sizeof *c->sample);
    if (!c->sample)
        return NULL;
    for (size_t j = 0; j < c->n_sample; j++)
        c->sample[j] = b->keys[j * IX_SORTED_STEP];
    c->off = ix_store_append(store, b->keys, b->n * sizeof *b->keys);
    if (c->off == UINT64_MAX)
        return NULL;
    c->disk = b->n * sizeof *b->keys;
    c->memory = sizeof *c + c->n_sample * sizeof *c->sample;
    b->col = NULL; /* the caller's now */
    return c;
}

void ix_sorted_free(struct ix_sorted *c)
{
    if (!c)
        return;
    free(c->sample);
    free(c);
}

/* --------------------------------------------------------------- answering */

/* A bound of the request as a key interval [*lo, *hi] on the column; false
 * when no value can satisfy it. */
static bool bound_keys(duckdb_type t, const struct index_range_term *b, uint64_t *lo, uint64_t *hi)
{
    uint64_t l = 0, h = UINT64_MAX;
    if (is_real(t)) {
        /* DuckDB compares a DOUBLE (or DECIMAL) column with a BIGINT value
         * as DOUBLE, and a FLOAT column with a value cast to FLOAT (rounded
         * to nearest, from the integer itself: not through a double) */
        double d;
        if (t == DUCKDB_TYPE_FLOAT)
            d = b->is_double ? (double)(float)b->d : (double)(float)b->i;
        else
            d = b->is_double ? b->d : (double)b->i;
        if (isnan(d))
            return false;
        uint64_t k = ix_sorted_key_double(d);
        switch (b->op) {
        case INDEX_RANGE_GE: l = k; break;
        case INDEX_RANGE_GT: l = k + 1; break;
        case INDEX_RANGE_LE: h = k; break;
        case INDEX_RANGE_LT: if (k == 0) return false; h = k - 1; break;
        }
    } else if (b->is_double) {
        return false; /* the query layer sends integers only */
    } else if (is_unsigned(t)) {
        int64_t v = b->i;
        switch (b->op) {
        case INDEX_RANGE_GE: l = v <= 0 ? 0 : (uint64_t)v; break;
        case INDEX_RANGE_GT: l = v < 0 ? 0 : (uint64_t)v + 1; break;
        case INDEX_RANGE_LE: if (v < 0) return false; h = (uint64_t)v; break;
        case INDEX_RANGE_LT: if (v <= 0) return false; h = (uint64_t)v - 1; break;
        }
    } else {
        int64_t v = b->i;
        switch (b->op) {
        case INDEX_RANGE_GE: l = key_of_int(v); break;
        case INDEX_RANGE_GT: if (v == INT64_MAX) return false; l = key_of_int(v + 1); break;
        case INDEX_RANGE_LE: h = key_of_int(v); break;
        case INDEX_RANGE_LT: if (v == INT64_MIN) return false; h = key_of_int(v - 1); break;
        }
    }
    *lo = l;
    *hi = h;
    return true;
}

/* The first position whose key is >= x. */
static enum ix_read lower_bound(const void *col, const struct ix_store *store, uint64_t x,
                                bool nowait, size_t *out)
{
    const struct ix_sorted *c = col;
    /* a: samples below x; the answer lies in ((a-1)*STEP, a*STEP] */
    size_t a = ix_lower_bound(c->sample, 0, c->n_sample, x);
    if (a == 0) {
        *out = 0;
        return IX_READ_OK;
    }
    size_t from = (a - 1) * IX_SORTED_STEP;
    size_t len = c->n - from < IX_SORTED_STEP ? c->n - from : IX_SORTED_STEP;
    uint64_t run[IX_SORTED_STEP];
    enum ix_read rd = ix_store_read(store, c->off + from * sizeof *run, len * sizeof *run, run, nowait);
    if (rd != IX_READ_OK)
        return rd;
    *out = from + ix_lower_bound(run, 1, len, x); /* run[0] < x (a sample) */
    return IX_READ_OK;
}

bool ix_range_keys(duckdb_type t, const struct index_range_term *terms, size_t n_terms,
                   uint64_t *lo, uint64_t *hi)
{
    *lo = 0;
    *hi = UINT64_MAX;
    for (size_t i = 0; i < n_terms; i++) {
        uint64_t l, h;
        if (!bound_keys(t, &terms[i], &l, &h))
            return false;
        *lo = l > *lo ? l : *lo;
        *hi = h < *hi ? h : *hi;
    }
    return *lo <= *hi;
}

enum ix_read ix_count_between(ix_lower_bound_fn first_at, const void *c, size_t n,
                              const struct ix_store *store, uint64_t lo, uint64_t hi, bool nowait,
                              uint64_t *out)
{
    *out = 0;
    if (lo > hi || n == 0)
        return IX_READ_OK;
    size_t a, z = n;
    enum ix_read rd = first_at(c, store, lo, nowait, &a);
    if (rd == IX_READ_OK && hi != UINT64_MAX)
        rd = first_at(c, store, hi + 1, nowait, &z);
    if (rd == IX_READ_OK)
        *out = z > a ? z - a : 0;
    return rd;
}

enum ix_read ix_sorted_count(const struct ix_sorted *c, const struct ix_store *store, uint64_t lo,
                             uint64_t hi, bool nowait, uint64_t *out)
{
    return ix_count_between(lower_bound, c, c->n, store, lo, hi, nowait, out);
}
