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

#include "encode/json_rows.h"
#include "index/index_internal.h"

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
};

struct ix_pages_builder *ix_pages_builder_create(const char *dir, size_t n_cols,
                                                 const char *const *names,
                                                 const duckdb_logical_type *types,
                                                 uint64_t limit)
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
    b->pages = NULL;
    ix_pages_builder_abort(b);
    return p;
}

void ix_pages_builder_abort(struct ix_pages_builder *b)
{
    if (!b)
        return;
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
    return INDEX_FAST_DONE;
}

uint64_t index_pages_rows(const struct index_fastpath *fp)
{
    return fp && fp->pages ? fp->pages->n_rows : 0;
}

uint64_t index_fastpath_pages_bytes(const struct index_fastpath *fp)
{
    return fp && fp->pages ? fp->pages->store.size : 0;
}
