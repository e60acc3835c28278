/*
 * DuckDB result -> Arrow IPC stream (see arrow_duckdb.h): asks DuckDB for the
 * Arrow C Data export of the schema and hands it to the IPC writer; per chunk,
 * the columns whose DuckDB vectors already are Arrow buffers (numbers, dates,
 * times, timestamps) go to the writer as they are, booleans and strings are
 * laid out here, and DuckDB converts the rest (arrow_duckdb.h says why and
 * when). Also maps DuckDB's error data to vt_error.
 *
 * Why not DuckDB's export for every column: duckdb_data_chunk_to_arrow copies
 * every value into freshly allocated Arrow buffers that the writer then
 * copies again into the stream; a fixed-width column needs neither copy
 * (bench/callgrind.py --only stream_arrow: see bench/PROFILES.md "Arrow stream (8a)").
 */
#include "encode/arrow_duckdb.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How a column's Arrow array is made. */
enum dkind {
    DK_DUCKDB, /* duckdb_data_chunk_to_arrow, on the sub-chunk */
    DK_FIXED,  /* the vector's values and validity as they are */
    DK_BOOL,   /* bytes packed into bits */
    DK_STR,    /* duckdb_string_t -> int32 offsets + data (utf8, binary) */
};

struct dcol {
    uint8_t kind;
    idx_t sub;                  /* DK_DUCKDB: its column in the sub-chunk */
    struct ArrowArray arr;      /* direct kinds: rebuilt per chunk */
    const void *bufs[3];
    uint8_t *bits;              /* DK_BOOL: the packed values */
    size_t bits_cap;
    int32_t *offs;              /* DK_STR: the offsets, laid out here */
    size_t offs_cap;
    const duckdb_string_t *strs; /* DK_STR: the chunk's strings, written by fill_strings;
                                  * &strs is the data buffer's fill key */
};

struct arrow_direct {
    idx_t ncols, nsub;
    struct dcol *cols;
    duckdb_data_chunk sub;      /* references the DK_DUCKDB columns; NULL when none */
    struct arrow_ipc_fill *fills; /* one per DK_STR column */
    size_t nfills;
    struct ArrowArray top;      /* the batch: a struct array of the columns */
    struct ArrowArray **children;
    const void *top_bufs[1];
};

/* DuckDB's message of `e`: the exception_message of the JSON it may come
 * as ({"exception_type":...,"exception_message":"..."}), else the text. */
static void error_text(const char *m, char *out, size_t cap)
{
    const char *k = m ? strstr(m, "\"exception_message\":\"") : NULL;
    if (!k) {
        snprintf(out, cap, "%s", m ? m : "");
        return;
    }
    k += strlen("\"exception_message\":\"");
    size_t n = 0;
    while (k[n] && k[n] != '"' && n + 1 < cap)
        n++;
    memcpy(out, k, n);
    out[n] = '\0';
}

/* Maps a duckdb_error_data to vt_error (and frees it); VT_ERR_OK when none. */
static enum vt_err take_error(duckdb_error_data e, const char *what, struct vt_error *err)
{
    if (!e)
        return VT_ERR_OK;
    enum vt_err rc = VT_ERR_OK;
    if (duckdb_error_data_has_error(e)) {
        const char *m = duckdb_error_data_message(e);
        char text[256];
        error_text(m, text, sizeof text);
        if (duckdb_error_data_error_type(e) == DUCKDB_ERROR_NOT_IMPLEMENTED ||
            (m && strstr(m, "Not implemented")))
            /* The result holds a type DuckDB cannot export to Arrow (TIME_NS
             * in 1.4): the statement's choice, not a server fault. */
            rc = vt_error_set(err, VT_ERR_QUERY_FAILED,
                              "the result has a column Arrow cannot carry (%s): CAST it to "
                              "another type (TIME, VARCHAR, ...) or ask for JSON",
                              text);
        else
            rc = vt_error_set(err, VT_ERR_INTERNAL, "arrow: %s: %s", what, text);
    }
    duckdb_destroy_error_data(&e);
    return rc;
}

enum vt_err arrow_duckdb_result_schema(duckdb_result *res, duckdb_arrow_options opts,
                                       struct ArrowSchema *out_schema, struct vt_error *err)
{
    idx_t n = duckdb_column_count(res);
    duckdb_logical_type *types = calloc(n ? n : 1, sizeof *types);
    const char **names = calloc(n ? n : 1, sizeof *names);
    enum vt_err rc = VT_ERR_OK;
    if (!types || !names) {
        rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "arrow: out of memory");
    } else {
        for (idx_t i = 0; i < n; i++) {
            types[i] = duckdb_column_logical_type(res, i);
            names[i] = duckdb_column_name(res, i);
        }
        memset(out_schema, 0, sizeof *out_schema);
        rc = take_error(duckdb_to_arrow_schema(opts, types, names, n, out_schema), "schema", err);
        for (idx_t i = 0; i < n; i++)
            duckdb_destroy_logical_type(&types[i]);
    }
    free(types);
    free(names);
    return rc;
}


/* The direct kind for a column of DuckDB type t whose Arrow field DuckDB made
 * as `f`; DK_DUCKDB unless the field is exactly the vector's layout. */
static enum dkind direct_kind(duckdb_type t, const struct ArrowSchema *f)
{
    if (!f || !f->format || f->dictionary || f->n_children != 0)
        return DK_DUCKDB;
    const char *fmt = f->format;
    const char *want = NULL;
    enum dkind k = DK_FIXED;
    switch (t) {
    case DUCKDB_TYPE_BOOLEAN: want = "b"; k = DK_BOOL; break;
    case DUCKDB_TYPE_TINYINT: want = "c"; break;
    case DUCKDB_TYPE_UTINYINT: want = "C"; break;
    case DUCKDB_TYPE_SMALLINT: want = "s"; break;
    case DUCKDB_TYPE_USMALLINT: want = "S"; break;
    case DUCKDB_TYPE_INTEGER: want = "i"; break;
    case DUCKDB_TYPE_UINTEGER: want = "I"; break;
    case DUCKDB_TYPE_BIGINT: want = "l"; break;
    case DUCKDB_TYPE_UBIGINT: want = "L"; break;
    case DUCKDB_TYPE_FLOAT: want = "f"; break;
    case DUCKDB_TYPE_DOUBLE: want = "g"; break;
    case DUCKDB_TYPE_DATE: want = "tdD"; break;           /* int32 days */
    case DUCKDB_TYPE_TIME: want = "ttu"; break;           /* int64 microseconds */
    case DUCKDB_TYPE_VARCHAR: want = "u"; k = DK_STR; break;
    case DUCKDB_TYPE_BLOB: want = "z"; k = DK_STR; break;
    /* int64 in the field's unit; any time zone (it is schema metadata) */
    case DUCKDB_TYPE_TIMESTAMP:
    case DUCKDB_TYPE_TIMESTAMP_TZ:
        return strncmp(fmt, "tsu:", 4) == 0 ? DK_FIXED : DK_DUCKDB;
    case DUCKDB_TYPE_TIMESTAMP_S:
        return strncmp(fmt, "tss:", 4) == 0 ? DK_FIXED : DK_DUCKDB;
    case DUCKDB_TYPE_TIMESTAMP_MS:
        return strncmp(fmt, "tsm:", 4) == 0 ? DK_FIXED : DK_DUCKDB;
    case DUCKDB_TYPE_TIMESTAMP_NS:
        return strncmp(fmt, "tsn:", 4) == 0 ? DK_FIXED : DK_DUCKDB;
    default:
        return DK_DUCKDB;
    }
    return strcmp(fmt, want) == 0 ? k : DK_DUCKDB;
}

static void fill_strings(void *ctx, uint8_t *dst, size_t len);

static void direct_free(struct arrow_direct *d)
{
    if (!d)
        return;
    for (idx_t i = 0; d->cols && i < d->ncols; i++) {
        free(d->cols[i].bits);
        free(d->cols[i].offs);
    }
    free(d->fills);
    if (d->sub)
        duckdb_destroy_data_chunk(&d->sub);
    free(d->cols);
    free(d->children);
    free(d);
}

/* The direct plan for `res`'s columns given their Arrow fields; NULL when
 * DuckDB converts every column anyway (or out of memory: DuckDB does it). */
static struct arrow_direct *direct_plan(duckdb_result *res, const struct ArrowSchema *schema)
{
    idx_t n = duckdb_column_count(res);
    if (n == 0 || schema->n_children != (int64_t)n || !schema->children)
        return NULL;
    struct arrow_direct *d = calloc(1, sizeof *d);
    duckdb_logical_type *sub_types = calloc(n, sizeof *sub_types);
    if (!d || !sub_types)
        goto fail;
    d->ncols = n;
    d->cols = calloc(n, sizeof *d->cols);
    d->children = calloc(n, sizeof *d->children);
    if (!d->cols || !d->children)
        goto fail;
    idx_t ndirect = 0;
    for (idx_t i = 0; i < n; i++) {
        struct dcol *c = &d->cols[i];
        c->kind = (uint8_t)direct_kind(duckdb_column_type(res, i), schema->children[i]);
        if (c->kind == DK_DUCKDB) {
            c->sub = d->nsub;
            sub_types[d->nsub++] = duckdb_column_logical_type(res, i);
        } else {
            ndirect++;
            d->children[i] = &c->arr;
        }
    }
    if (ndirect == 0)
        goto fail;
    d->fills = calloc(n, sizeof *d->fills);
    if (!d->fills)
        goto fail;
    for (idx_t i = 0; i < n; i++)
        if (d->cols[i].kind == DK_STR)
            d->fills[d->nfills++] =
                (struct arrow_ipc_fill){&d->cols[i].strs, fill_strings, &d->cols[i]};
    if (d->nsub) {
        d->sub = duckdb_create_data_chunk(sub_types, d->nsub);
        if (!d->sub)
            goto fail;
    }
    for (idx_t i = 0; i < d->nsub; i++)
        duckdb_destroy_logical_type(&sub_types[i]);
    free(sub_types);
    d->top.n_buffers = 1;
    d->top.buffers = d->top_bufs;
    d->top.n_children = (int64_t)n;
    d->top.children = d->children;
    return d;
fail:
    for (idx_t i = 0; sub_types && d && i < d->nsub; i++)
        duckdb_destroy_logical_type(&sub_types[i]);
    free(sub_types);
    direct_free(d);
    return NULL;
}

static int grow_to(void **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 256;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* Packs a BOOLEAN vector's bytes (0/1) into Arrow's LSB-first bits. The
 * bits no reader looks at (under a NULL, past the last row) are set, as
 * DuckDB's export leaves them, so the stream's bytes are the same as its. */
static int pack_bools(struct dcol *c, const uint8_t *v, const uint64_t *mask, idx_t n)
{
    if (grow_to((void **)&c->bits, &c->bits_cap, (n + 7) / 8 + 8) < 0)
        return -1;
    idx_t full = n / 8;
    for (idx_t j = 0; j < full; j++) {
        const uint8_t *b = v + 8 * j;
        c->bits[j] = (uint8_t)((b[0] & 1) | (b[1] & 1) << 1 | (b[2] & 1) << 2 | (b[3] & 1) << 3 |
                               (b[4] & 1) << 4 | (b[5] & 1) << 5 | (b[6] & 1) << 6 |
                               (b[7] & 1) << 7);
    }
    if (n % 8) {
        uint8_t last = 0;
        for (idx_t i = full * 8; i < n; i++)
            last |= (uint8_t)((v[i] & 1) << (i % 8));
        c->bits[full] = (uint8_t)(last | (0xFFu << (n % 8)));
    }
    if (mask) {
        const uint8_t *m = (const uint8_t *)mask; /* little-endian words: bytes in row order */
        for (idx_t j = 0; j < (n + 7) / 8; j++)
            c->bits[j] |= (uint8_t)~m[j];
    }
    return 0;
}

/* Lays a VARCHAR/BLOB vector out as int32 offsets (NULLs: empty); the data
 * goes straight into the body at write time (fill_strings). */
static enum vt_err pack_strings(struct dcol *c, const duckdb_string_t *s, const uint64_t *mask,
                                idx_t n, struct vt_error *err)
{
    if (grow_to((void **)&c->offs, &c->offs_cap, (n + 1) * sizeof(int32_t)) < 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "arrow: out of memory");
    size_t total = 0;
    c->offs[0] = 0;
    for (idx_t i = 0; i < n; i++) {
        if (!mask || (mask[i / 64] >> (i % 64)) & 1)
            total += s[i].value.inlined.length;
        if (total > INT32_MAX)
            return vt_error_set(err, VT_ERR_QUERY_FAILED,
                                "arrow: a batch's strings exceed 2 GiB");
        c->offs[i + 1] = (int32_t)total;
    }
    c->strs = s;
    return VT_ERR_OK;
}

/* The data buffer of a DK_STR column (arrow_ipc_fill): the strings of the
 * rows its offsets cover, one after the other, into the body. An inline
 * string (<= 12 bytes) goes as a fixed 12-byte copy where the buffer has
 * room after it (the bytes past its length are overwritten by the next
 * string or are the buffer's padding, which the writer zeroes after). */
static void fill_strings(void *ctx, uint8_t *dst, size_t len)
{
    const struct dcol *c = ctx;
    const duckdb_string_t *s = c->strs;
    const int32_t *offs = c->offs;
    uint8_t *end = dst + len;
    for (idx_t i = 0; (size_t)offs[i] < len; i++) {
        uint32_t l = (uint32_t)(offs[i + 1] - offs[i]);
        uint8_t *p = dst + offs[i];
        if (l == 0)
            continue;
        if (l <= 12) {
            if (end - p >= 12)
                memcpy(p, s[i].value.inlined.inlined, 12);
            else
                memcpy(p, s[i].value.inlined.inlined, l);
        } else {
            memcpy(p, s[i].value.pointer.ptr, l);
        }
    }
}

/* One chunk through the direct plan: the direct columns' arrays point into
 * the chunk (or this column's scratch), DuckDB converts the rest. */
static enum vt_err direct_write(struct arrow_duckdb_stream *st, duckdb_data_chunk chunk,
                                struct strbuf *out, struct vt_error *err)
{
    struct arrow_direct *d = st->direct;
    idx_t n = duckdb_data_chunk_get_size(chunk);
    if (duckdb_data_chunk_get_column_count(chunk) != d->ncols)
        return vt_error_set(err, VT_ERR_INTERNAL, "arrow: chunk does not match the result");
    for (idx_t i = 0; i < d->ncols; i++) {
        struct dcol *c = &d->cols[i];
        duckdb_vector v = duckdb_data_chunk_get_vector(chunk, i);
        if (c->kind == DK_DUCKDB) {
            duckdb_vector_reference_vector(duckdb_data_chunk_get_vector(d->sub, c->sub), v);
            continue;
        }
        uint64_t *mask = duckdb_vector_get_validity(v);
        int64_t nulls = mask ? arrow_ipc_count_nulls((const uint8_t *)mask, 0, (int64_t)n) : 0;
        if (nulls == 0)
            mask = NULL;
        memset(&c->arr, 0, sizeof c->arr);
        c->arr.length = (int64_t)n;
        c->arr.null_count = nulls;
        c->arr.n_buffers = 2;
        c->arr.buffers = c->bufs;
        c->bufs[0] = mask;
        void *data = duckdb_vector_get_data(v);
        switch (c->kind) {
        case DK_FIXED:
            c->bufs[1] = data;
            break;
        case DK_BOOL:
            if (pack_bools(c, data, mask, n) < 0)
                return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "arrow: out of memory");
            c->bufs[1] = c->bits;
            break;
        case DK_STR:
            if (pack_strings(c, data, mask, n, err) != VT_ERR_OK)
                return err->code;
            c->arr.n_buffers = 3;
            c->bufs[1] = c->offs;
            c->bufs[2] = &c->strs; /* the fill's key: never read */
            break;
        }
    }
    struct ArrowArray subarr;
    memset(&subarr, 0, sizeof subarr);
    enum vt_err rc = VT_ERR_OK;
    if (d->sub) {
        duckdb_data_chunk_set_size(d->sub, n);
        rc = take_error(duckdb_data_chunk_to_arrow(st->opts, d->sub, &subarr), "chunk", err);
        if (rc == VT_ERR_OK && (subarr.n_children != (int64_t)d->nsub || !subarr.children))
            rc = vt_error_set(err, VT_ERR_INTERNAL, "arrow: DuckDB's chunk has %lld columns",
                              (long long)subarr.n_children);
        for (idx_t i = 0; rc == VT_ERR_OK && i < d->ncols; i++)
            if (d->cols[i].kind == DK_DUCKDB)
                d->children[i] = subarr.children[d->cols[i].sub];
    }
    if (rc == VT_ERR_OK) {
        d->top.length = (int64_t)n;
        rc = arrow_ipc_write_batch_fill(st->writer, &d->top, d->fills, d->nfills, out, err);
    }
    if (subarr.release)
        subarr.release(&subarr);
    if (d->sub)
        duckdb_data_chunk_reset(d->sub); /* drops the references to the chunk */
    return rc;
}

enum vt_err arrow_duckdb_begin(struct arrow_duckdb_stream *st, duckdb_result *res,
                               struct strbuf *out, struct vt_error *err)
{
    return arrow_duckdb_begin_mode(st, res, ARROW_DUCKDB_DIRECT, out, err);
}

enum vt_err arrow_duckdb_begin_mode(struct arrow_duckdb_stream *st, duckdb_result *res,
                                    enum arrow_duckdb_mode mode, struct strbuf *out,
                                    struct vt_error *err)
{
    memset(st, 0, sizeof *st);
    st->opts = duckdb_result_get_arrow_options(res);
    if (!st->opts)
        return vt_error_set(err, VT_ERR_INTERNAL, "arrow: result has no arrow options");
    struct ArrowSchema schema;
    enum vt_err rc = arrow_duckdb_result_schema(res, st->opts, &schema, err);
    if (rc != VT_ERR_OK) {
        arrow_duckdb_release(st);
        return rc;
    }
    st->writer = arrow_ipc_writer_create(&schema, err);
    if (st->writer && mode == ARROW_DUCKDB_DIRECT)
        st->direct = direct_plan(res, &schema);
    if (schema.release)
        schema.release(&schema);
    if (!st->writer) {
        arrow_duckdb_release(st);
        return err->code ? err->code : VT_ERR_INTERNAL;
    }
    rc = arrow_ipc_write_schema(st->writer, out, err);
    if (rc != VT_ERR_OK)
        arrow_duckdb_release(st);
    return rc;
}

enum vt_err arrow_duckdb_write_chunk(struct arrow_duckdb_stream *st, duckdb_data_chunk chunk,
                                     struct strbuf *out, struct vt_error *err)
{
    if (!st->writer)
        return vt_error_set(err, VT_ERR_INTERNAL, "arrow: stream not started");
    if (duckdb_data_chunk_get_size(chunk) == 0)
        return VT_ERR_OK;
    if (st->direct)
        return direct_write(st, chunk, out, err);
    struct ArrowArray arr;
    memset(&arr, 0, sizeof arr);
    enum vt_err rc = take_error(duckdb_data_chunk_to_arrow(st->opts, chunk, &arr), "chunk", err);
    if (rc == VT_ERR_OK)
        rc = arrow_ipc_write_batch(st->writer, &arr, out, err);
    if (arr.release)
        arr.release(&arr);
    return rc;
}

int arrow_duckdb_end(struct arrow_duckdb_stream *st, struct strbuf *out)
{
    (void)st;
    return arrow_ipc_write_eos(out);
}

void arrow_duckdb_release(struct arrow_duckdb_stream *st)
{
    arrow_ipc_writer_destroy(st->writer);
    st->writer = NULL;
    direct_free(st->direct);
    st->direct = NULL;
    if (st->opts)
        duckdb_destroy_arrow_options(&st->opts);
    st->opts = NULL;
}
