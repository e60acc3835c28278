/*
 * Pre-rendered pages (index.h, "Pre-rendered pages"): the generation's first
 * rows as the JSON encoder writes them into a page body, `{...},{...}`, back
 * to back in table order in a file of their own, followed by where each row
 * ends. A page of a plain query (no predicate, every column, table order) is
 * then one byte range of that file: the HTTP layer sends it with sendfile,
 * framed by the document's head and trailer, and no row is fetched or
 * encoded per request.
 *
 * The bytes come from json_rows itself (json_rows_encode_chunk_ends on the
 * build's chunks, the same encoder and the same column names and types as a
 * page's result), so a range is byte for byte what the encoder would write
 * for those rows. The file holds at most the dataset's index.json_pages_mb:
 * rows past it are not kept and their pages go to DuckDB as before.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "encode/json_rows.h"
#include "index/index_internal.h"

/* The gzip level of the pre-compressed blocks and of the edges compressed per
 * request: zlib's fastest (the server's own default for gzip replies). */
#define GZ_LEVEL 1

struct ix_pages_builder {
    struct ix_pages *pages;     /* filled as rows come */
    struct json_rows *enc;
    struct strbuf text;         /* one chunk's rows */
    uint64_t *chunk_ends;       /* where each row of the chunk ends in `text` */
    size_t chunk_cap;
    uint64_t *ends;             /* every kept row's end in the file (ix_big_alloc) */
    size_t ends_cap;
    uint64_t limit;             /* bytes of row text at most */
    bool full;                  /* the limit was reached: no more rows */
    /* gzip blocks: the text not compressed yet (less than a block), the
     * compressor, and the blocks' offsets and CRCs (NULL: no gzip) */
    z_stream z;
    bool z_ok;
    char *pend;
    size_t pend_len;
    unsigned char *zout;
    size_t zout_cap;
    size_t gz_cap;
};

/* The pages' gzip part: none after (the text stays). */
static void pages_gz_free(struct ix_pages *p)
{
    ix_store_close(&p->gz);
    free(p->gz_off);
    free(p->gz_crc);
    p->gz_off = NULL;
    p->gz_crc = NULL;
    p->n_gz = 0;
}

static void gz_drop(struct ix_pages_builder *b)
{
    if (b->z_ok)
        deflateEnd(&b->z);
    b->z_ok = false;
    free(b->pend);
    b->pend = NULL;
    free(b->zout);
    b->zout = NULL;
    if (b->pages)
        pages_gz_free(b->pages);
}

/* Compresses one block (len bytes of text, a whole block or the last one)
 * into the gz store: a raw deflate stream of its own, ended by a sync flush.
 * -1: the gzip part is dropped (the pages stay). */
static int gz_block(struct ix_pages_builder *b, const char *text, size_t len)
{
    struct ix_pages *p = b->pages;
    if (p->n_gz + 2 > b->gz_cap) {
        size_t cap = b->gz_cap ? b->gz_cap * 2 : 256;
        uint64_t *o = realloc(p->gz_off, cap * sizeof *o);
        if (o)
            p->gz_off = o;
        uint32_t *c = o ? realloc(p->gz_crc, cap * sizeof *c) : NULL;
        if (!c)
            return -1;
        p->gz_crc = c;
        b->gz_cap = cap;
    }
    if (deflateReset(&b->z) != Z_OK)
        return -1;
    b->z.next_in = (unsigned char *)text;
    b->z.avail_in = (uInt)len;
    b->z.next_out = b->zout;
    b->z.avail_out = (uInt)b->zout_cap;
    if (deflate(&b->z, Z_SYNC_FLUSH) != Z_OK || b->z.avail_in != 0 || b->z.avail_out == 0)
        return -1;
    size_t n = b->zout_cap - b->z.avail_out;
    uint64_t at = ix_store_append(&p->gz, b->zout, n);
    if (at == UINT64_MAX)
        return -1;
    if (p->n_gz == 0)
        p->gz_off[0] = at;
    p->gz_crc[p->n_gz] = (uint32_t)crc32(0, (const unsigned char *)text, (uInt)len);
    p->gz_off[++p->n_gz] = at + n;
    return 0;
}

/* Text appended to the pages: whole blocks of it are compressed. */
static void gz_feed(struct ix_pages_builder *b, const char *text, size_t len)
{
    while (b->z_ok && len) {
        size_t take = IX_GZ_BLOCK - b->pend_len;
        if (take > len)
            take = len;
        memcpy(b->pend + b->pend_len, text, take);
        b->pend_len += take;
        text += take;
        len -= take;
        if (b->pend_len == IX_GZ_BLOCK) {
            if (gz_block(b, b->pend, IX_GZ_BLOCK) != 0)
                gz_drop(b);
            b->pend_len = 0;
        }
    }
}

struct ix_pages_builder *ix_pages_builder_create(const char *dir, size_t n_cols,
                                                 const char *const *names,
                                                 const duckdb_logical_type *types,
                                                 uint64_t limit, bool gzip)
{
    if (!dir || limit == 0 || n_cols == 0)
        return NULL;
    struct ix_pages_builder *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->limit = limit;
    sb_init(&b->text, 0);
    char err[128];
    b->pages = calloc(1, sizeof *b->pages);
    if (!b->pages || !(b->enc = json_rows_create(n_cols, names, types, err, sizeof err)) ||
        ix_store_open(&b->pages->store, dir) != 0) {
        ix_pages_builder_abort(b);
        return NULL;
    }
    /* the gzip blocks: without them (memory, the file), gzip replies are
     * compressed per request as before */
    b->pages->gz.fd = -1;
    b->zout_cap = compressBound(IX_GZ_BLOCK) + 64;
    b->pend = malloc(IX_GZ_BLOCK);
    b->zout = malloc(b->zout_cap);
    b->z_ok = gzip && b->pend && b->zout &&
              deflateInit2(&b->z, GZ_LEVEL, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    if (!b->z_ok || ix_store_open(&b->pages->gz, dir) != 0)
        gz_drop(b);
    return b;
}

int ix_pages_builder_add_chunk(struct ix_pages_builder *b, duckdb_data_chunk chunk)
{
    size_t n = (size_t)duckdb_data_chunk_get_size(chunk);
    if (b->full || n == 0)
        return 0;
    if (n > b->chunk_cap) {
        uint64_t *e = realloc(b->chunk_ends, n * sizeof *e);
        if (!e)
            return -1;
        b->chunk_ends = e;
        b->chunk_cap = n;
    }
    sb_reset(&b->text);
    if (json_rows_encode_chunk_ends(b->enc, chunk, &b->text, b->chunk_ends) != 0)
        return -1;
    struct ix_pages *p = b->pages;
    /* the rows that fit under the limit, whole */
    size_t keep = n;
    while (keep && p->text_bytes + b->chunk_ends[keep - 1] > b->limit)
        keep--;
    if (keep < n)
        b->full = true;
    if (!keep)
        return 0;
    if (p->n_rows + keep > b->ends_cap) {
        size_t cap = b->ends_cap ? b->ends_cap * 2 : 65536;
        while (cap < p->n_rows + keep)
            cap *= 2;
        uint64_t *e = ix_big_realloc(b->ends, cap * sizeof *e);
        if (!e)
            return -1;
        b->ends = e;
        b->ends_cap = cap;
    }
    for (size_t i = 0; i < keep; i++)
        b->ends[p->n_rows + i] = p->text_bytes + b->chunk_ends[i];
    uint64_t len = b->chunk_ends[keep - 1];
    if (ix_store_append(&p->store, b->text.buf, (size_t)len) == UINT64_MAX)
        return -1;
    gz_feed(b, b->text.buf, (size_t)len);
    p->n_rows += keep;
    p->text_bytes += len;
    return 0;
}

struct ix_pages *ix_pages_builder_finish(struct ix_pages_builder *b)
{
    struct ix_pages *p = b->pages;
    if (p->n_rows == 0) {
        ix_pages_builder_abort(b);
        return NULL;
    }
    p->ends_off = ix_store_append(&p->store, b->ends, p->n_rows * sizeof *b->ends);
    if (p->ends_off == UINT64_MAX || ix_store_seal(&p->store) != 0) {
        ix_pages_builder_abort(b);
        return NULL;
    }
    /* (the text after the last whole block is compressed per request) */
    if (b->z_ok && (p->n_gz == 0 || ix_store_seal(&p->gz) != 0))
        gz_drop(b);
    if (b->z_ok) {
        deflateEnd(&b->z);
        b->z_ok = false;
    }
    b->pages = NULL;
    ix_pages_builder_abort(b);
    return p;
}

void ix_pages_builder_abort(struct ix_pages_builder *b)
{
    if (!b)
        return;
    gz_drop(b);
    ix_pages_free(b->pages);
    json_rows_destroy(b->enc);
    sb_release(&b->text);
    free(b->chunk_ends);
    ix_big_free(b->ends);
    free(b);
}

void ix_pages_free(struct ix_pages *p)
{
    if (!p)
        return;
    ix_store_close(&p->store);
    pages_gz_free(p);
    free(p);
}

/* Row r's end in the text. */
static enum ix_read row_end(const struct ix_pages *p, uint64_t r, bool nowait, uint64_t *out)
{
    return ix_store_read(&p->store, p->ends_off + r * sizeof *out, sizeof *out, out, nowait);
}

enum index_fast index_pages_range(const struct index_fastpath *fp, uint64_t first, uint64_t count,
                                  bool nowait, struct index_pages_range *out)
{
    const struct ix_pages *p = fp ? fp->pages : NULL;
    if (!p || count == 0 || first >= p->n_rows)
        return INDEX_FAST_NO;
    /* the last page of a table the pages hold whole: the rows there are */
    if (p->n_rows == fp->n_rows && count > p->n_rows - first)
        count = p->n_rows - first;
    if (count > p->n_rows - first)
        return INDEX_FAST_NO;
    uint64_t start = 0, end;
    enum ix_read rd = first ? row_end(p, first - 1, nowait, &start) : IX_READ_OK;
    if (rd == IX_READ_OK)
        rd = row_end(p, first + count - 1, nowait, &end);
    if (rd == IX_READ_WOULD_BLOCK)
        return INDEX_FAST_ELSEWHERE;
    if (rd != IX_READ_OK)
        return INDEX_FAST_NO;
    if (first)
        start++; /* the comma before the row */
    if (end < start || end > p->text_bytes)
        return INDEX_FAST_NO;
    out->fd = p->store.fd;
    out->offset = start;
    out->length = end - start;
    out->rows = count;
    out->nowait = nowait;
    /* the whole gzip blocks inside the range */
    uint64_t bs = (start + IX_GZ_BLOCK - 1) / IX_GZ_BLOCK, be = end / IX_GZ_BLOCK;
    out->gz_fd = -1;
    if (p->n_gz && be > p->n_gz)
        be = p->n_gz;
    if (p->n_gz && bs < be) {
        out->gz_fd = p->gz.fd;
        out->gz_offset = p->gz_off[bs];
        out->gz_length = p->gz_off[be] - p->gz_off[bs];
        out->gz_text_from = bs * IX_GZ_BLOCK;
        out->gz_text_to = be * IX_GZ_BLOCK;
        out->gz_crcs = p->gz_crc + bs; /* combined by a gzip reply only */
    }
    return INDEX_FAST_DONE;
}

uint64_t index_pages_rows(const struct index_fastpath *fp)
{
    return fp && fp->pages ? fp->pages->n_rows : 0;
}

uint64_t index_fastpath_pages_bytes(const struct index_fastpath *fp)
{
    return fp && fp->pages ? fp->pages->store.size + fp->pages->gz.size : 0;
}

/* ---------------------------------------------------------- gzip framing */

/* Compresses len bytes (more to come: a sync flush; last: the final block)
 * with z onto out. */
static int deflate_onto(z_stream *z, const void *p, size_t len, bool last, struct strbuf *out)
{
    if (len == 0 && !last)
        return 0; /* (a second flush with nothing new is Z_BUF_ERROR) */
    z->next_in = (unsigned char *)p;
    z->avail_in = (uInt)len;
    for (int rounds = 0;; rounds++) {
        if (sb_grow(out, 4096 + len / 2) < 0)
            return -1;
        z->next_out = (unsigned char *)out->buf + out->len;
        z->avail_out = (uInt)(out->cap - out->len - 1);
        size_t room = z->avail_out;
        int rc = deflate(z, last ? Z_FINISH : Z_SYNC_FLUSH);
        out->len += room - z->avail_out;
        if (rc == Z_STREAM_END || (!last && z->avail_in == 0 && z->avail_out > 0))
            return 0;
        /* every round has room for its output: one that made none is stuck */
        if ((rc != Z_OK && rc != Z_BUF_ERROR) || rounds > 64)
            return -1;
    }
}

/* Text [from, to) of the pages (an edge of a range: under two blocks). */
static int read_text(const struct index_pages_range *r, uint64_t from, uint64_t to,
                     struct strbuf *out)
{
    sb_reset(out);
    size_t n = (size_t)(to - from);
    if (sb_grow(out, n + 1) < 0)
        return -1;
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(r->fd, out->buf + got, n - got, (off_t)(from + got));
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    out->len = n;
    return 0;
}

int index_pages_gzip_frame(const struct index_pages_range *r, const char *head, size_t head_len,
                           const char *tail, size_t tail_len, struct strbuf *out_head,
                           struct strbuf *out_tail)
{
    if (r->gz_fd < 0)
        return -1;
    struct strbuf edge;
    sb_init(&edge, 0);
    z_stream z = {0};
    int rc = -1;
    if (deflateInit2(&z, GZ_LEVEL, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    /* the gzip header: deflate, no name, no time, unknown OS (RFC 1952) */
    static const unsigned char hdr[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
    uint32_t crc = (uint32_t)crc32(0, (const unsigned char *)head, (uInt)head_len);
    if (sb_add(out_head, (const char *)hdr, sizeof hdr) != 0 ||
        deflate_onto(&z, head, head_len, false, out_head) != 0 ||
        read_text(r, r->offset, r->gz_text_from, &edge) != 0 ||
        deflate_onto(&z, edge.buf, edge.len, false, out_head) != 0)
        goto out;
    crc = (uint32_t)crc32(crc, (const unsigned char *)edge.buf, (uInt)edge.len);
    for (uint64_t k = 0; k < (r->gz_text_to - r->gz_text_from) / IX_GZ_BLOCK; k++)
        crc = (uint32_t)crc32_combine(crc, r->gz_crcs[k], IX_GZ_BLOCK);
    /* after the blocks: a fresh stream state (its matches reach back only
     * into what it compressed itself), the last edge and the tail, final */
    if (deflateReset(&z) != Z_OK || read_text(r, r->gz_text_to, r->offset + r->length, &edge) != 0 ||
        deflate_onto(&z, edge.buf, edge.len, false, out_tail) != 0 ||
        deflate_onto(&z, tail, tail_len, true, out_tail) != 0)
        goto out;
    crc = (uint32_t)crc32(crc, (const unsigned char *)edge.buf, (uInt)edge.len);
    crc = (uint32_t)crc32(crc, (const unsigned char *)tail, (uInt)tail_len);
    uint32_t isize = (uint32_t)(head_len + r->length + tail_len);
    unsigned char trl[8];
    for (int i = 0; i < 4; i++) {
        trl[i] = (unsigned char)(crc >> (8 * i));
        trl[4 + i] = (unsigned char)(isize >> (8 * i));
    }
    rc = sb_add(out_tail, (const char *)trl, sizeof trl) != 0 ? -1 : 0;
out:
    deflateEnd(&z);
    sb_release(&edge);
    return rc;
}
