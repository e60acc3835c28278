/*
 * The row store of the fast path (index.h): every row of the generation as
 * typed cells, IX_BLOCK_ROWS rows to a block, each block compressed with
 * zstd when that saves enough (RAW_UNLESS) and appended to the fast path's
 * store; the block directory stays in memory.
 *
 * A block before compression is the offset of each row (uint32), then its
 * rows back to back; a row is a null bitmap (one bit per column) and then
 * the cells of its non-null columns by their encoding (enum ix_ck):
 * integers as (zigzag) varints, floats and 128-bit values as their bytes,
 * strings and JSON text as a varint length and the bytes. A reader keeps
 * the last block it decompressed (a cursor per thread: neighbouring rows
 * cost no second read) and decodes only the row it wants.
 *
 * Measured on the bench table (1M rows, 10 columns with md5 strings and
 * random doubles): ~83 bytes a row in the file with 16-row blocks, stored
 * as they are (RAW_UNLESS; ~79 at zstd level -1, ~70 at level 1, see
 * ZSTD_LEVEL), where the JSON text cells of the previous row store took
 * ~78 in memory.
 */
#include "index/index_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "encode/json_rows.h"

/* A negative level: zstd's fast mode without Huffman-coded literals. A
 * point lookup decompresses a whole 16-row block, and for blocks this small
 * building the literals' Huffman table cost more than the bytes: level 1
 * took ~28,000 instructions a block, -1 takes ~1,800
 * (bench/callgrind.py point_index_ids: 70,235 -> 40,063 a lookup), for a
 * store ~13% larger (the bench's 1M rows: 67.0 -> 75.7 MiB, in the file,
 * not in memory) and a faster build. */
#define ZSTD_LEVEL (-1)
/* A block starts with the offset of each of its rows (uint32, from the
 * block's start), so a reader decodes only the row it wants. */
#define BLOCK_HEADER (4 * IX_BLOCK_ROWS)
/* A block is stored compressed only when zstd saves at least 1/RAW_UNLESS
 * of it; else as it is, and a lookup reads it with no decompression. On
 * the bench table (md5 text, random doubles: bytes the fast mode cannot
 * shrink) zstd saved 4.2% (82.9 -> 79.4 MB for 1M rows) for ~1,900
 * instructions a lookup. A stored block tells which it is by its first
 * four bytes: zstd's magic number, or the first row's offset
 * (BLOCK_HEADER), which never equals it. */
#define RAW_UNLESS 8

/* ------------------------------------------------------------ columns */

static bool is_json_alias(duckdb_logical_type t)
{
    char *alias = duckdb_logical_type_get_alias(t);
    bool json = alias && strcmp(alias, "JSON") == 0;
    duckdb_free(alias);
    return json;
}

/* The encoding of a column from its type (build.c calls it per column). */
void ix_col_setup(struct ix_col *c, duckdb_logical_type t)
{
    duckdb_type id = duckdb_get_type_id(t);
    c->type = id;
    c->ck = IX_CK_JSON;
    c->width = 16;
    switch (id) {
    case DUCKDB_TYPE_BOOLEAN: c->ck = IX_CK_BOOL; c->width = 1; break;
    case DUCKDB_TYPE_TINYINT: c->ck = IX_CK_SINT; c->width = 1; break;
    case DUCKDB_TYPE_SMALLINT: c->ck = IX_CK_SINT; c->width = 2; break;
    case DUCKDB_TYPE_INTEGER: c->ck = IX_CK_SINT; c->width = 4; break;
    case DUCKDB_TYPE_BIGINT: c->ck = IX_CK_SINT; c->width = 8; break;
    case DUCKDB_TYPE_UTINYINT: c->ck = IX_CK_UINT; c->width = 1; break;
    case DUCKDB_TYPE_USMALLINT: c->ck = IX_CK_UINT; c->width = 2; break;
    case DUCKDB_TYPE_UINTEGER: c->ck = IX_CK_UINT; c->width = 4; break;
    case DUCKDB_TYPE_UBIGINT: c->ck = IX_CK_UINT; c->width = 8; break;
    case DUCKDB_TYPE_HUGEINT: case DUCKDB_TYPE_UHUGEINT: case DUCKDB_TYPE_UUID:
        c->ck = IX_CK_128;
        break;
    case DUCKDB_TYPE_FLOAT: c->ck = IX_CK_F32; c->width = 4; break;
    case DUCKDB_TYPE_DOUBLE: c->ck = IX_CK_F64; c->width = 8; break;
    case DUCKDB_TYPE_DATE: c->ck = IX_CK_SINT; c->width = 4; break;
    case DUCKDB_TYPE_TIME: case DUCKDB_TYPE_TIMESTAMP: case DUCKDB_TYPE_TIMESTAMP_S:
    case DUCKDB_TYPE_TIMESTAMP_MS: case DUCKDB_TYPE_TIMESTAMP_NS: case DUCKDB_TYPE_TIMESTAMP_TZ:
        c->ck = IX_CK_SINT;
        c->width = 8;
        break;
    case DUCKDB_TYPE_TIME_TZ: c->ck = IX_CK_UINT; c->width = 8; break;
    case DUCKDB_TYPE_INTERVAL: c->ck = IX_CK_INTERVAL; break;
    case DUCKDB_TYPE_BLOB: case DUCKDB_TYPE_BIT: case DUCKDB_TYPE_BIGNUM:
        c->ck = IX_CK_BYTES;
        break;
    case DUCKDB_TYPE_VARCHAR:
        /* the JSON alias too: its raw text (cells.c writes it as the JSON
         * encoder does: verbatim when valid, else as a string) */
        c->json_alias = is_json_alias(t);
        c->ck = IX_CK_BYTES;
        break;
    case DUCKDB_TYPE_SQLNULL: c->ck = IX_CK_NULL; break;
    case DUCKDB_TYPE_DECIMAL:
        c->scale = duckdb_decimal_scale(t);
        switch (duckdb_decimal_internal_type(t)) {
        case DUCKDB_TYPE_SMALLINT: c->ck = IX_CK_SINT; c->width = 2; break;
        case DUCKDB_TYPE_INTEGER: c->ck = IX_CK_SINT; c->width = 4; break;
        case DUCKDB_TYPE_BIGINT: c->ck = IX_CK_SINT; c->width = 8; break;
        default: c->ck = IX_CK_128; break;
        }
        break;
    case DUCKDB_TYPE_ENUM: {
        duckdb_type it = duckdb_enum_internal_type(t);
        c->width = it == DUCKDB_TYPE_UTINYINT ? 1 : it == DUCKDB_TYPE_USMALLINT ? 2 : 4;
        uint32_t n = duckdb_enum_dictionary_size(t);
        c->enum_dict = calloc(n ? n : 1, sizeof *c->enum_dict);
        if (!c->enum_dict)
            break; /* JSON text through the encoder instead */
        c->enum_n = n;
        for (uint32_t i = 0; i < n; i++)
            c->enum_dict[i] = duckdb_enum_dictionary_value(t, i);
        c->ck = IX_CK_BYTES;
        break;
    }
    default:
        break;
    }
}

void ix_col_release(struct ix_col *c)
{
    for (uint32_t i = 0; i < c->enum_n; i++)
        duckdb_free(c->enum_dict[i]);
    free(c->enum_dict);
    c->enum_dict = NULL;
    c->enum_n = 0;
}

/* ------------------------------------------------------------ building */

struct ix_rowstore_builder {
    struct ix_store *store;
    size_t n_cols;
    const struct ix_col *cols;
    size_t null_bytes;
    /* the block being filled */
    unsigned char *block;
    size_t block_len, block_cap;
    size_t rows_in_block;
    size_t n_rows;
    /* the directory */
    uint64_t *block_off;
    size_t n_blocks, blocks_cap;
    size_t max_raw, max_packed;
    size_t raw_blocks;
    char *packed;
    size_t packed_cap;
    ZSTD_CCtx *cctx;
    /* JSON text columns: their encoder and one chunk's texts */
    size_t *jcols;              /* generation columns of the JSON ones */
    size_t n_j;
    duckdb_logical_type *jtypes;
    struct json_rows *jenc;
    struct strbuf jtext;
    uint32_t *jends;            /* rows * n_j end offsets */
    size_t jends_cap, jrows;
};

struct ix_rowstore_builder *ix_rowstore_builder_create(struct ix_store *store, size_t n_cols,
                                                       const struct ix_col *cols)
{
    struct ix_rowstore_builder *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->store = store;
    b->n_cols = n_cols;
    b->cols = cols;
    b->null_bytes = (n_cols + 7) / 8;
    b->cctx = ZSTD_createCCtx();
    b->jcols = calloc(n_cols ? n_cols : 1, sizeof *b->jcols);
    b->jtypes = calloc(n_cols ? n_cols : 1, sizeof *b->jtypes);
    sb_init(&b->jtext, 0);
    if (!b->cctx || !b->jcols || !b->jtypes) {
        ix_rowstore_builder_abort(b);
        return NULL;
    }
    const char **names = calloc(n_cols ? n_cols : 1, sizeof *names);
    if (!names) {
        ix_rowstore_builder_abort(b);
        return NULL;
    }
    for (size_t i = 0; i < n_cols; i++)
        if (cols[i].ck == IX_CK_JSON) {
            b->jtypes[b->n_j] = cols[i].ltype;
            names[b->n_j] = cols[i].name;
            b->jcols[b->n_j++] = i;
        }
    if (b->n_j) {
        char ebuf[256];
        b->jenc = json_rows_create(b->n_j, names, b->jtypes, ebuf, sizeof ebuf);
    }
    free(names);
    if (b->n_j && !b->jenc) {
        ix_rowstore_builder_abort(b);
        return NULL;
    }
    return b;
}

void ix_rowstore_builder_abort(struct ix_rowstore_builder *b)
{
    if (!b)
        return;
    free(b->block);
    ix_big_free(b->block_off);
    free(b->packed);
    ZSTD_freeCCtx(b->cctx);
    free(b->jcols);
    free(b->jtypes);
    json_rows_destroy(b->jenc);
    sb_release(&b->jtext);
    free(b->jends);
    free(b);
}

static int block_reserve(struct ix_rowstore_builder *b, size_t extra)
{
    if (b->block_len + extra <= b->block_cap)
        return 0;
    size_t cap = b->block_cap ? b->block_cap * 2 : 4096;
    while (cap < b->block_len + extra)
        cap *= 2;
    unsigned char *p = realloc(b->block, cap);
    if (!p)
        return -1;
    b->block = p;
    b->block_cap = cap;
    return 0;
}

static int flush_block(struct ix_rowstore_builder *b)
{
    if (b->rows_in_block == 0)
        return 0;
    size_t bound = ZSTD_compressBound(b->block_len);
    if (bound > b->packed_cap) {
        char *p = realloc(b->packed, bound);
        if (!p)
            return -1;
        b->packed = p;
        b->packed_cap = bound;
    }
    if (b->n_blocks + 2 > b->blocks_cap) {
        size_t cap = b->blocks_cap ? b->blocks_cap * 2 : 1024;
        uint64_t *p = ix_big_realloc(b->block_off, cap * sizeof *p);
        if (!p)
            return -1;
        b->block_off = p;
        b->blocks_cap = cap;
    }
    size_t n = ZSTD_compressCCtx(b->cctx, b->packed, bound, b->block, b->block_len, ZSTD_LEVEL);
    if (ZSTD_isError(n))
        return -1;
    /* A block zstd saves little of is stored as it is (see RAW_UNLESS). */
    const char *out = b->packed;
    if (n > b->block_len - b->block_len / RAW_UNLESS) {
        out = (const char *)b->block;
        n = b->block_len;
        b->raw_blocks++;
    }
    uint64_t off = ix_store_append(b->store, out, n);
    if (off == UINT64_MAX)
        return -1;
    if (b->n_blocks == 0)
        b->block_off[0] = off;
    b->n_blocks++;
    b->block_off[b->n_blocks] = off + n;
    if (b->block_len > b->max_raw)
        b->max_raw = b->block_len;
    if (n > b->max_packed)
        b->max_packed = n;
    b->block_len = 0;
    b->rows_in_block = 0;
    return 0;
}

static int take_json(void *ctx, const char *cells, const uint32_t *ends)
{
    struct ix_rowstore_builder *b = ctx;
    if ((b->jrows + 1) * b->n_j > b->jends_cap) {
        size_t cap = b->jends_cap ? b->jends_cap * 2 : 2048 * b->n_j;
        uint32_t *p = realloc(b->jends, cap * sizeof *p);
        if (!p)
            return -1;
        b->jends = p;
        b->jends_cap = cap;
    }
    size_t base = b->jtext.len;
    if (sb_add(&b->jtext, cells, ends[b->n_j - 1]) != 0 || base + ends[b->n_j - 1] > UINT32_MAX)
        return -1;
    for (size_t k = 0; k < b->n_j; k++)
        b->jends[b->jrows * b->n_j + k] = (uint32_t)(base + ends[k]);
    b->jrows++;
    return 0;
}

/* The JSON text of every row's JSON columns, into jtext/jends. */
static int encode_json(struct ix_rowstore_builder *b, duckdb_data_chunk chunk)
{
    sb_reset(&b->jtext);
    b->jrows = 0;
    duckdb_data_chunk sub = duckdb_create_data_chunk(b->jtypes, b->n_j);
    if (!sub)
        return -1;
    for (size_t k = 0; k < b->n_j; k++)
        duckdb_vector_reference_vector(duckdb_data_chunk_get_vector(sub, k),
                                       duckdb_data_chunk_get_vector(chunk, b->jcols[k]));
    duckdb_data_chunk_set_size(sub, duckdb_data_chunk_get_size(chunk));
    int rc = json_rows_encode_cells(b->jenc, sub, take_json, b);
    duckdb_destroy_data_chunk(&sub);
    return rc;
}

static int64_t sint_at(const void *data, uint8_t width, idx_t r)
{
    switch (width) {
    case 1: return ((const int8_t *)data)[r];
    case 2: return ((const int16_t *)data)[r];
    case 4: return ((const int32_t *)data)[r];
    default: return ((const int64_t *)data)[r];
    }
}

static uint64_t uint_at(const void *data, uint8_t width, idx_t r)
{
    switch (width) {
    case 1: return ((const uint8_t *)data)[r];
    case 2: return ((const uint16_t *)data)[r];
    case 4: return ((const uint32_t *)data)[r];
    default: return ((const uint64_t *)data)[r];
    }
}

static int put_bytes(struct ix_rowstore_builder *b, const void *p, size_t n)
{
    if (block_reserve(b, n + 10) != 0)
        return -1;
    b->block_len += ix_put_varint(b->block + b->block_len, n);
    if (n)
        memcpy(b->block + b->block_len, p, n);
    b->block_len += n;
    return 0;
}

int ix_rowstore_builder_add_chunk(struct ix_rowstore_builder *b, duckdb_data_chunk chunk)
{
    idx_t n = duckdb_data_chunk_get_size(chunk);
    if (b->n_j && encode_json(b, chunk) != 0)
        return -1;
    const void *small_data[32];
    uint64_t *small_valid[32];
    const void **data = b->n_cols <= 32 ? small_data : malloc(b->n_cols * sizeof *data);
    uint64_t **valid = b->n_cols <= 32 ? small_valid : malloc(b->n_cols * sizeof *valid);
    int rc = data && valid ? 0 : -1;
    for (size_t c = 0; rc == 0 && c < b->n_cols; c++) {
        duckdb_vector v = duckdb_data_chunk_get_vector(chunk, c);
        data[c] = duckdb_vector_get_data(v);
        valid[c] = duckdb_vector_get_validity(v);
    }
    for (idx_t r = 0; r < n && rc == 0; r++) {
        if (block_reserve(b, BLOCK_HEADER + b->null_bytes + b->n_cols * 17) != 0) {
            rc = -1;
            break;
        }
        if (b->rows_in_block == 0) {
            /* the row offsets, filled as rows come */
            memset(b->block, 0, BLOCK_HEADER);
            b->block_len = BLOCK_HEADER;
        }
        size_t row_at = b->block_len;
        if (row_at > UINT32_MAX) {
            rc = -1;
            break;
        }
        uint32_t at32 = (uint32_t)row_at;
        memcpy(b->block + 4 * b->rows_in_block, &at32, 4);
        memset(b->block + row_at, 0, b->null_bytes);
        b->block_len += b->null_bytes;
        size_t jk = 0;
        for (size_t c = 0; c < b->n_cols && rc == 0; c++) {
            const struct ix_col *col = &b->cols[c];
            size_t j = col->ck == IX_CK_JSON ? jk++ : 0;
            if (col->ck == IX_CK_NULL ||
                (valid[c] && !duckdb_validity_row_is_valid(valid[c], r))) {
                b->block[row_at + c / 8] |= (unsigned char)(1u << (c % 8));
                continue;
            }
            if (block_reserve(b, 17) != 0) {
                rc = -1;
                break;
            }
            unsigned char *o = b->block + b->block_len;
            switch (col->ck) {
            case IX_CK_BOOL:
                *o = ((const bool *)data[c])[r] ? 1 : 0;
                b->block_len++;
                break;
            case IX_CK_SINT:
                b->block_len += ix_put_varint(o, ix_zigzag(sint_at(data[c], col->width, r)));
                break;
            case IX_CK_UINT:
                b->block_len += ix_put_varint(o, uint_at(data[c], col->width, r));
                break;
            case IX_CK_F32:
                memcpy(o, (const float *)data[c] + r, 4);
                b->block_len += 4;
                break;
            case IX_CK_F64:
                memcpy(o, (const double *)data[c] + r, 8);
                b->block_len += 8;
                break;
            case IX_CK_128:
                memcpy(o, (const unsigned char *)data[c] + 16 * r, 16);
                b->block_len += 16;
                break;
            case IX_CK_INTERVAL: {
                const duckdb_interval *iv = (const duckdb_interval *)data[c] + r;
                b->block_len += ix_put_varint(o, ix_zigzag(iv->months));
                b->block_len += ix_put_varint(b->block + b->block_len, ix_zigzag(iv->days));
                b->block_len += ix_put_varint(b->block + b->block_len, ix_zigzag(iv->micros));
                break;
            }
            case IX_CK_BYTES:
                if (col->enum_dict) {
                    uint64_t e = uint_at(data[c], col->width, r);
                    const char *s = e < col->enum_n && col->enum_dict[e] ? col->enum_dict[e] : "";
                    rc = put_bytes(b, s, strlen(s));
                } else {
                    duckdb_string_t *s = (duckdb_string_t *)data[c] + r;
                    rc = put_bytes(b, duckdb_string_t_data(s), duckdb_string_t_length(*s));
                }
                break;
            case IX_CK_JSON: {
                uint32_t start = (r * b->n_j + j) == 0 ? 0 : b->jends[r * b->n_j + j - 1];
                uint32_t end = b->jends[r * b->n_j + j];
                rc = put_bytes(b, b->jtext.buf + start, end - start);
                break;
            }
            case IX_CK_NULL:
                break;
            }
        }
        b->n_rows++;
        if (++b->rows_in_block == IX_BLOCK_ROWS && flush_block(b) != 0)
            rc = -1;
    }
    if (data != small_data)
        free(data);
    if (valid != small_valid)
        free(valid);
    return rc;
}

int ix_rowstore_builder_finish(struct ix_rowstore_builder *b, struct ix_rowstore *rs)
{
    if (flush_block(b) != 0)
        return -1;
    rs->store = b->store;
    rs->n_rows = b->n_rows;
    rs->n_blocks = b->n_blocks;
    rs->raw_blocks = b->raw_blocks;
    rs->max_block_raw = b->max_raw;
    rs->max_block_packed = b->max_packed;
    if (b->n_blocks == 0) {
        ix_big_free(b->block_off);
        b->block_off = ix_big_calloc(sizeof *b->block_off);
        if (!b->block_off)
            return -1;
    } else if (b->n_blocks + 1 < b->blocks_cap) {
        uint64_t *p = ix_big_realloc(b->block_off, (b->n_blocks + 1) * sizeof *p);
        if (p)
            b->block_off = p;
    }
    rs->block_off = b->block_off;
    rs->disk_bytes = b->n_blocks ? b->block_off[b->n_blocks] - b->block_off[0] : 0;
    b->block_off = NULL;
    ix_rowstore_builder_abort(b);
    return 0;
}

void ix_rowstore_release(struct ix_rowstore *rs)
{
    ix_big_free(rs->block_off);
    rs->block_off = NULL;
}

size_t ix_rowstore_memory(const struct ix_rowstore *rs)
{
    return sizeof *rs + ix_big_bytes((rs->n_blocks + 1) * sizeof(uint64_t));
}

/* ------------------------------------------------------------- reading */

static pthread_key_t cursor_key;
static pthread_once_t cursor_once = PTHREAD_ONCE_INIT;

static void cursor_free(void *p)
{
    struct ix_cursor *cur = p;
    if (!cur)
        return;
    ZSTD_freeDCtx(cur->dctx);
    free(cur->packed);
    free(cur->block);
    free(cur->cells);
    free(cur);
}

static void cursor_key_init(void)
{
    pthread_key_create(&cursor_key, cursor_free);
}

struct ix_cursor *ix_cursor_get(void)
{
    pthread_once(&cursor_once, cursor_key_init);
    struct ix_cursor *cur = pthread_getspecific(cursor_key);
    if (cur)
        return cur;
    cur = calloc(1, sizeof *cur);
    if (!cur)
        return NULL;
    cur->dctx = ZSTD_createDCtx();
    if (!cur->dctx) {
        free(cur);
        return NULL;
    }
    pthread_setspecific(cursor_key, cur);
    return cur;
}

void index_thread_release(void)
{
    pthread_once(&cursor_once, cursor_key_init);
    struct ix_cursor *cur = pthread_getspecific(cursor_key);
    pthread_setspecific(cursor_key, NULL);
    cursor_free(cur);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static void set_string(duckdb_string_t *s, const char *p, uint32_t len)
{
    memset(s, 0, sizeof *s);
    s->value.inlined.length = len;
    if (len <= 12) {
        if (len)
            memcpy(s->value.inlined.inlined, p, len);
    } else {
        memcpy(s->value.pointer.prefix, p, 4);
        s->value.pointer.ptr = (char *)p;
    }
}

/* Decodes row `r` of the block in cur->block into cur->cells. */
static int decode_row(const struct ix_rowstore *rs, struct ix_cursor *cur, size_t r)
{
    size_t n_cols = rs->n_cols, null_bytes = (n_cols + 7) / 8;
    if (grow((void **)&cur->cells, &cur->cells_cap, n_cols ? n_cols : 1, sizeof *cur->cells) != 0)
        return -1;
    uint32_t at;
    if (cur->block_len < BLOCK_HEADER)
        return -1;
    memcpy(&at, cur->block + 4 * r, 4);
    if (at < BLOCK_HEADER || at > cur->block_len)
        return -1;
    const unsigned char *p = (const unsigned char *)cur->block + at;
    const unsigned char *end = (const unsigned char *)cur->block + cur->block_len;
    if ((size_t)(end - p) < null_bytes)
        return -1;
    const unsigned char *nulls = p;
    p += null_bytes;
    struct index_cell *row = cur->cells;
    for (size_t c = 0; c < n_cols; c++) {
        struct index_cell *cell = &row[c];
        const struct ix_col *col = &rs->cols[c];
        memset(cell, 0, sizeof *cell);
        if (nulls[c / 8] >> (c % 8) & 1) {
            cell->null = true;
            continue;
        }
        uint64_t v, len;
        switch (col->ck) {
        case IX_CK_NULL:
            cell->null = true;
            break;
        case IX_CK_BOOL:
            if (p >= end)
                return -1;
            cell->v.b = *p++ != 0;
            break;
        case IX_CK_SINT:
            if (!(p = ix_get_varint(p, end, &v)))
                return -1;
            cell->v.i = ix_unzigzag(v);
            break;
        case IX_CK_UINT:
            if (!(p = ix_get_varint(p, end, &v)))
                return -1;
            cell->v.u = v;
            break;
        case IX_CK_F32:
            if (end - p < 4)
                return -1;
            memcpy(&cell->v.f, p, 4);
            p += 4;
            break;
        case IX_CK_F64:
            if (end - p < 8)
                return -1;
            memcpy(&cell->v.d, p, 8);
            p += 8;
            break;
        case IX_CK_128:
            if (end - p < 16)
                return -1;
            memcpy(cell->v.raw, p, 16);
            p += 16;
            break;
        case IX_CK_INTERVAL: {
            uint64_t m, d, us;
            if (!(p = ix_get_varint(p, end, &m)) || !(p = ix_get_varint(p, end, &d)) ||
                !(p = ix_get_varint(p, end, &us)))
                return -1;
            cell->v.iv.months = (int32_t)ix_unzigzag(m);
            cell->v.iv.days = (int32_t)ix_unzigzag(d);
            cell->v.iv.micros = ix_unzigzag(us);
            break;
        }
        case IX_CK_BYTES:
        case IX_CK_JSON:
            if (!(p = ix_get_varint(p, end, &len)) || (uint64_t)(end - p) < len ||
                len > UINT32_MAX)
                return -1;
            set_string(&cell->v.s, (const char *)p, (uint32_t)len);
            p += len;
            break;
        }
    }
    cur->row_decoded = r;
    return 0;
}

bool ix_cursor_holds(const struct ix_cursor *cur, const struct ix_rowstore *rs, uint64_t gen,
                     uint32_t pos)
{
    return cur->rs == rs && cur->gen == gen && cur->block_no == pos / IX_BLOCK_ROWS;
}

enum ix_read ix_rowstore_row(const struct ix_rowstore *rs, uint64_t gen, struct ix_cursor *cur,
                             uint32_t pos, bool nowait, const struct index_cell **out_cells)
{
    if (pos >= rs->n_rows)
        return IX_READ_ERROR;
    size_t block_no = pos / IX_BLOCK_ROWS;
    if (!ix_cursor_holds(cur, rs, gen, pos)) {
        cur->rs = NULL;
        uint64_t off = rs->block_off[block_no], plen = rs->block_off[block_no + 1] - off;
        if (grow((void **)&cur->block, &cur->block_cap, rs->max_block_raw + 1, 1) != 0)
            return IX_READ_ERROR;
        /* Read where a raw block is used as it is; a compressed one is
         * moved to `packed` and decompressed into `block`. */
        if (plen < 4 || plen > cur->block_cap)
            return IX_READ_ERROR;
        enum ix_read rd = ix_store_read(rs->store, off, plen, cur->block, nowait);
        if (rd != IX_READ_OK)
            return rd;
        uint32_t magic;
        memcpy(&magic, cur->block, 4);
        size_t n = plen;
        if (magic == ZSTD_MAGICNUMBER) {
            if (grow((void **)&cur->packed, &cur->packed_cap, plen, 1) != 0)
                return IX_READ_ERROR;
            memcpy(cur->packed, cur->block, plen);
            n = ZSTD_decompressDCtx(cur->dctx, cur->block, cur->block_cap, cur->packed, plen);
            if (ZSTD_isError(n))
                return IX_READ_ERROR;
        }
        cur->block_len = n;
        cur->rs = rs;
        cur->gen = gen;
        cur->block_no = block_no;
        cur->row_decoded = SIZE_MAX;
    }
    size_t r = pos % IX_BLOCK_ROWS;
    if (cur->row_decoded != r && decode_row(rs, cur, r) != 0) {
        cur->rs = NULL;
        return IX_READ_ERROR;
    }
    *out_cells = cur->cells;
    return IX_READ_OK;
}
