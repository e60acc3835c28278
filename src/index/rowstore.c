/*
 * The row store (see rowstore.h). Block layout before compression: for each
 * row, for each column, a LEB128 length then the cell's JSON text.
 */
#include "index/rowstore.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define ZSTD_LEVEL 3

struct rowstore {
    size_t n_cols;
    size_t n_rows;
    char **keys;                /* "\"name\":" per column */
    size_t *key_lens;
    uint64_t *block_off;        /* n_blocks + 1 offsets into data */
    size_t n_blocks;
    char *data;                 /* compressed blocks, back to back */
    size_t data_len;
    size_t max_block_raw;       /* largest block before compression */
};

struct rowstore_builder {
    struct rowstore *rs;
    struct strbuf block;        /* rows of the block being filled */
    size_t rows_in_block;
    size_t blocks_cap;
    size_t data_cap;
    ZSTD_CCtx *cctx;
};

struct rowstore_cursor {
    ZSTD_DCtx *dctx;
    const struct rowstore *rs;  /* what `block` holds */
    size_t block_no;
    char *block;
    size_t block_len, block_cap;
};

static void put_varint(struct strbuf *sb, uint32_t v)
{
    unsigned char tmp[5];
    size_t n = 0;
    do {
        unsigned char byte = v & 0x7f;
        v >>= 7;
        tmp[n++] = byte | (v ? 0x80 : 0);
    } while (v);
    sb_add(sb, tmp, n);
}

static const char *get_varint(const char *p, const char *end, uint32_t *out)
{
    uint32_t v = 0;
    for (int shift = 0; p < end && shift < 35; shift += 7) {
        unsigned char byte = (unsigned char)*p++;
        v |= (uint32_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = v;
            return p;
        }
    }
    return NULL;
}

struct rowstore_builder *rowstore_builder_create(size_t n_cols, const char *const *names)
{
    struct rowstore_builder *b = calloc(1, sizeof *b);
    struct rowstore *rs = calloc(1, sizeof *rs);
    if (!b || !rs) {
        free(b);
        free(rs);
        return NULL;
    }
    b->rs = rs;
    rs->n_cols = n_cols;
    rs->keys = calloc(n_cols ? n_cols : 1, sizeof *rs->keys);
    rs->key_lens = calloc(n_cols ? n_cols : 1, sizeof *rs->key_lens);
    b->cctx = ZSTD_createCCtx();
    if (!rs->keys || !rs->key_lens || !b->cctx) {
        rowstore_builder_abort(b);
        return NULL;
    }
    for (size_t i = 0; i < n_cols; i++) {
        struct strbuf k;
        sb_init(&k, 0);
        sb_add_json_string(&k, names[i], strlen(names[i]));
        sb_addc(&k, ':');
        if (k.overflow) {
            sb_release(&k);
            rowstore_builder_abort(b);
            return NULL;
        }
        rs->keys[i] = sb_detach(&k, &rs->key_lens[i]);
    }
    sb_init(&b->block, 0);
    return b;
}

static int flush_block(struct rowstore_builder *b)
{
    struct rowstore *rs = b->rs;
    if (b->rows_in_block == 0)
        return 0;
    size_t bound = ZSTD_compressBound(b->block.len);
    if (rs->data_len + bound > b->data_cap) {
        size_t cap = b->data_cap ? b->data_cap * 2 : 1 << 20;
        while (cap < rs->data_len + bound)
            cap *= 2;
        char *p = realloc(rs->data, cap);
        if (!p)
            return -1;
        rs->data = p;
        b->data_cap = cap;
    }
    if (rs->n_blocks + 2 > b->blocks_cap) {
        size_t cap = b->blocks_cap ? b->blocks_cap * 2 : 1024;
        uint64_t *p = realloc(rs->block_off, cap * sizeof *p);
        if (!p)
            return -1;
        rs->block_off = p;
        b->blocks_cap = cap;
    }
    size_t n = ZSTD_compressCCtx(b->cctx, rs->data + rs->data_len, bound, b->block.buf,
                                 b->block.len, ZSTD_LEVEL);
    if (ZSTD_isError(n))
        return -1;
    if (rs->n_blocks == 0)
        rs->block_off[0] = 0;
    rs->data_len += n;
    rs->n_blocks++;
    rs->block_off[rs->n_blocks] = rs->data_len;
    if (b->block.len > rs->max_block_raw)
        rs->max_block_raw = b->block.len;
    sb_reset(&b->block);
    b->rows_in_block = 0;
    return 0;
}

int rowstore_builder_add_row(struct rowstore_builder *b, const char *cells, const uint32_t *ends)
{
    uint32_t start = 0;
    for (size_t i = 0; i < b->rs->n_cols; i++) {
        put_varint(&b->block, ends[i] - start);
        sb_add(&b->block, cells + start, ends[i] - start);
        start = ends[i];
    }
    if (b->block.overflow)
        return -1;
    b->rs->n_rows++;
    if (++b->rows_in_block == ROWSTORE_BLOCK_ROWS)
        return flush_block(b);
    return 0;
}

struct rowstore *rowstore_builder_finish(struct rowstore_builder *b)
{
    if (flush_block(b) != 0) {
        rowstore_builder_abort(b);
        return NULL;
    }
    struct rowstore *rs = b->rs;
    b->rs = NULL;
    if (rs->data_len) {
        char *p = realloc(rs->data, rs->data_len);
        if (p)
            rs->data = p;
    }
    sb_release(&b->block);
    ZSTD_freeCCtx(b->cctx);
    free(b);
    return rs;
}

void rowstore_builder_abort(struct rowstore_builder *b)
{
    if (!b)
        return;
    rowstore_destroy(b->rs);
    sb_release(&b->block);
    ZSTD_freeCCtx(b->cctx);
    free(b);
}

void rowstore_destroy(struct rowstore *rs)
{
    if (!rs)
        return;
    for (size_t i = 0; i < rs->n_cols; i++)
        free(rs->keys[i]);
    free(rs->keys);
    free(rs->key_lens);
    free(rs->block_off);
    free(rs->data);
    free(rs);
}

size_t rowstore_rows(const struct rowstore *rs)
{
    return rs->n_rows;
}

size_t rowstore_bytes(const struct rowstore *rs)
{
    size_t b = sizeof *rs + rs->data_len + (rs->n_blocks + 1) * sizeof(uint64_t);
    for (size_t i = 0; i < rs->n_cols; i++)
        b += rs->key_lens[i] + 1 + sizeof(char *) + sizeof(size_t);
    return b;
}

struct rowstore_cursor *rowstore_cursor_create(void)
{
    struct rowstore_cursor *cur = calloc(1, sizeof *cur);
    if (!cur)
        return NULL;
    cur->dctx = ZSTD_createDCtx();
    if (!cur->dctx) {
        free(cur);
        return NULL;
    }
    return cur;
}

void rowstore_cursor_destroy(struct rowstore_cursor *cur)
{
    if (!cur)
        return;
    ZSTD_freeDCtx(cur->dctx);
    free(cur->block);
    free(cur);
}

static int load_block(const struct rowstore *rs, struct rowstore_cursor *cur, size_t block_no)
{
    if (cur->rs == rs && cur->block_no == block_no && cur->block)
        return 0;
    if (cur->block_cap < rs->max_block_raw) {
        char *p = realloc(cur->block, rs->max_block_raw);
        if (!p)
            return -1;
        cur->block = p;
        cur->block_cap = rs->max_block_raw;
    }
    uint64_t off = rs->block_off[block_no], end = rs->block_off[block_no + 1];
    size_t n = ZSTD_decompressDCtx(cur->dctx, cur->block, cur->block_cap, rs->data + off, end - off);
    if (ZSTD_isError(n)) {
        cur->rs = NULL;
        return -1;
    }
    cur->rs = rs;
    cur->block_no = block_no;
    cur->block_len = n;
    return 0;
}

int rowstore_cell(const struct rowstore *rs, struct rowstore_cursor *cur, uint32_t pos,
                  size_t col, const char **out_p, size_t *out_len)
{
    if (pos >= rs->n_rows || col >= rs->n_cols ||
        load_block(rs, cur, pos / ROWSTORE_BLOCK_ROWS) != 0)
        return -1;
    const char *p = cur->block, *end = cur->block + cur->block_len;
    size_t skip = (pos % ROWSTORE_BLOCK_ROWS) * rs->n_cols + col;
    for (size_t i = 0; i <= skip; i++) {
        uint32_t len;
        p = get_varint(p, end, &len);
        if (!p || (size_t)(end - p) < len)
            return -1;
        if (i == skip) {
            *out_p = p;
            *out_len = len;
            return 0;
        }
        p += len;
    }
    return -1;
}

int rowstore_write_row(const struct rowstore *rs, struct rowstore_cursor *cur, uint32_t pos,
                       const size_t *cols, size_t n_cols, struct strbuf *out)
{
    if (pos >= rs->n_rows || load_block(rs, cur, pos / ROWSTORE_BLOCK_ROWS) != 0)
        return -1;
    const char *p = cur->block, *end = cur->block + cur->block_len;
    /* Skip to the row, then note where each cell is. */
    size_t skip = (pos % ROWSTORE_BLOCK_ROWS) * rs->n_cols;
    for (size_t i = 0; i < skip; i++) {
        uint32_t len;
        p = get_varint(p, end, &len);
        if (!p || (size_t)(end - p) < len)
            return -1;
        p += len;
    }
    /* Cell positions of this row (bounded stack for common widths). */
    const char *small_ptr[64];
    uint32_t small_len[64];
    const char **cell = small_ptr;
    uint32_t *cell_len = small_len;
    if (rs->n_cols > 64) {
        cell = malloc(rs->n_cols * sizeof *cell);
        cell_len = malloc(rs->n_cols * sizeof *cell_len);
        if (!cell || !cell_len) {
            if (cell != small_ptr)
                free(cell);
            if (cell_len != small_len)
                free(cell_len);
            return -1;
        }
    }
    int rc = 0;
    for (size_t i = 0; i < rs->n_cols; i++) {
        uint32_t len;
        p = get_varint(p, end, &len);
        if (!p || (size_t)(end - p) < len) {
            rc = -1;
            break;
        }
        cell[i] = p;
        cell_len[i] = len;
        p += len;
    }
    if (rc == 0) {
        size_t n = cols ? n_cols : rs->n_cols;
        sb_addc(out, '{');
        for (size_t k = 0; k < n; k++) {
            size_t c = cols ? cols[k] : k;
            if (k)
                sb_addc(out, ',');
            sb_add(out, rs->keys[c], rs->key_lens[c]);
            sb_add(out, cell[c], cell_len[c]);
        }
        sb_addc(out, '}');
        if (out->overflow)
            rc = -1;
    }
    if (cell != small_ptr)
        free(cell);
    if (cell_len != small_len)
        free(cell_len);
    return rc;
}
