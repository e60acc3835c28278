/*
 * The CSV format (encode.h): RFC 4180 text/csv in UTF-8, a header row of the
 * column names, one line per row, NULL as an empty field. It writes what
 * DuckDB's own `COPY ... TO (FORMAT csv, HEADER)` writes for the same result,
 * byte for byte:
 *   - values are DuckDB's text form of each value (the execution layer casts
 *     every column to VARCHAR for this encoder: text_columns), so numbers,
 *     dates, timestamps, decimals, lists and structs read exactly as DuckDB
 *     prints them;
 *   - a field is quoted ("...", a quote inside doubled) when it is empty (so
 *     an empty string differs from NULL) or holds a comma, a double quote, a
 *     line feed, a carriage return or '#' (what DuckDB quotes: readers that
 *     treat '#' as a comment must not drop the line);
 *   - lines end with "\n", the header too, as DuckDB writes them.
 * Header names follow the same rule. Rows come from DuckDB chunks only.
 */
#include <stdlib.h>
#include <string.h>

#include "encode/encode.h"

struct csv {
    size_t ncol;
    const duckdb_string_t **data;   /* per column, of the chunk at hand */
    uint64_t **valid;
};

/* Bytes that make a field quoted. */
static const unsigned char special[256] = {
    [','] = 1, ['"'] = 1, ['\n'] = 1, ['\r'] = 1, ['#'] = 1,
};

static void field(struct strbuf *out, const char *s, size_t n)
{
    bool quote = n == 0;
    for (size_t i = 0; i < n && !quote; i++)
        quote = special[(unsigned char)s[i]];
    if (!quote) {
        sb_add(out, s, n);
        return;
    }
    sb_addc(out, '"');
    for (const char *p = s, *e = s + n; p < e;) {
        const char *q = memchr(p, '"', (size_t)(e - p));
        if (!q) {
            sb_add(out, p, (size_t)(e - p));
            break;
        }
        sb_add(out, p, (size_t)(q - p) + 1);
        sb_addc(out, '"'); /* the quote, doubled */
        p = q + 1;
    }
    sb_addc(out, '"');
}

static void csv_release(void *st)
{
    struct csv *c = st;
    if (!c)
        return;
    free(c->data);
    free(c->valid);
    free(c);
}

static void *csv_begin(duckdb_result *res, struct strbuf *out, struct vt_error *err)
{
    if (!res) {
        vt_error_set(err, VT_ERR_INTERNAL, "csv: rows must come from a result");
        return NULL;
    }
    struct csv *c = calloc(1, sizeof *c);
    if (!c) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    c->ncol = duckdb_column_count(res);
    c->data = calloc(c->ncol ? c->ncol : 1, sizeof *c->data);
    c->valid = calloc(c->ncol ? c->ncol : 1, sizeof *c->valid);
    if (!c->data || !c->valid) {
        csv_release(c);
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    for (size_t i = 0; i < c->ncol; i++) {
        if (duckdb_column_type(res, i) != DUCKDB_TYPE_VARCHAR) {
            csv_release(c);
            vt_error_set(err, VT_ERR_INTERNAL, "csv: column %zu is not text", i + 1);
            return NULL;
        }
        const char *name = duckdb_column_name(res, i);
        if (i)
            sb_addc(out, ',');
        field(out, name ? name : "", name ? strlen(name) : 0);
    }
    sb_addc(out, '\n');
    return c;
}

static enum vt_err csv_chunk(void *st, duckdb_data_chunk chunk, struct strbuf *out,
                             struct vt_error *err)
{
    struct csv *c = st;
    idx_t n = duckdb_data_chunk_get_size(chunk);
    if ((size_t)duckdb_data_chunk_get_column_count(chunk) != c->ncol)
        return vt_error_set(err, VT_ERR_INTERNAL, "csv: the chunk does not match the result");
    const duckdb_string_t **data = c->data;
    uint64_t **valid = c->valid;
    for (size_t k = 0; k < c->ncol; k++) {
        duckdb_vector v = duckdb_data_chunk_get_vector(chunk, k);
        data[k] = duckdb_vector_get_data(v);
        valid[k] = duckdb_vector_get_validity(v);
    }
    for (idx_t r = 0; r < n; r++) {
        for (size_t k = 0; k < c->ncol; k++) {
            if (k)
                sb_addc(out, ',');
            if (valid[k] && !duckdb_validity_row_is_valid(valid[k], r))
                continue; /* NULL: an empty field */
            const duckdb_string_t *s = &data[k][r];
            uint32_t len = s->value.inlined.length;
            field(out, len <= 12 ? s->value.inlined.inlined : s->value.pointer.ptr, len);
        }
        sb_addc(out, '\n');
    }
    return out->overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "response too large")
                         : VT_ERR_OK;
}

const struct enc_format enc_csv = {
    .name = "csv",
    .media_type = "text/csv",
    .content_type = "text/csv; charset=utf-8; header=present",
    .extension = "csv",
    .description = "RFC 4180 CSV in UTF-8: a header row, one line per row, NULL as an empty "
                   "field, values as DuckDB writes them (COPY ... (FORMAT csv)).",
    .compressible = true,
    .text_columns = true,
    .begin = csv_begin,
    .chunk = csv_chunk,
    .release = csv_release,
};
