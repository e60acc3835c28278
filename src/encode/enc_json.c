/*
 * The JSON format (encode.h): rows as objects in one document,
 * {"data":[{...},...]} plus the route's trailer ("page", "page_size" or
 * "max_rows", "truncated"). Rows come straight from DuckDB chunks
 * (json_rows.h) or, from the index fast path, as ready objects.
 */
#include <stdlib.h>

#include "encode/encode.h"
#include "encode/json_rows.h"

struct json_doc {
    struct json_rows *rows;     /* NULL: rows come as objects */
    uint64_t objects;           /* rows written through row() */
};

static void *json_begin(duckdb_result *res, struct strbuf *out, struct vt_error *err)
{
    struct json_doc *d = calloc(1, sizeof *d);
    if (!d) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    if (res) {
        char ebuf[256];
        if (!(d->rows = json_rows_create_for_result(res, ebuf, sizeof ebuf))) {
            free(d);
            vt_error_set(err, VT_ERR_QUERY_FAILED, "%s", ebuf);
            return NULL;
        }
    }
    sb_adds(out, "{\"data\":[");
    return d;
}

static enum vt_err json_chunk(void *st, duckdb_data_chunk chunk, struct strbuf *out,
                              struct vt_error *err)
{
    struct json_doc *d = st;
    if (json_rows_encode_chunk(d->rows, chunk, out) != 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot encode the result");
    return VT_ERR_OK;
}

static void *json_fork(void *st, duckdb_result *res, struct vt_error *err)
{
    struct json_doc *d = st, *t = calloc(1, sizeof *t);
    char ebuf[256];
    if (!t || !d->rows || !res || !(t->rows = json_rows_create_for_result(res, ebuf, sizeof ebuf))) {
        free(t);
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot fork the JSON encoder");
        return NULL;
    }
    json_rows_rewind(t->rows, 1); /* its rows follow rows of the first state */
    return t;
}

static enum vt_err json_range(void *st, duckdb_data_chunk chunk, uint64_t from, uint64_t count,
                              struct strbuf *out, struct vt_error *err)
{
    struct json_doc *d = st;
    if (json_rows_encode_range(d->rows, chunk, from, count, out) != 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot encode the result");
    return VT_ERR_OK;
}

static enum vt_err json_row(void *st, const char *obj, size_t len, struct strbuf *out,
                            struct vt_error *err)
{
    struct json_doc *d = st;
    (void)err;
    if (d->objects++)
        sb_addc(out, ',');
    sb_add(out, obj, len);
    return VT_ERR_OK;
}

static enum vt_err json_end(void *st, const char *trailer, struct strbuf *out,
                            struct vt_error *err)
{
    (void)st;
    (void)err;
    sb_addc(out, ']');
    if (trailer && *trailer) {
        sb_addc(out, ',');
        sb_adds(out, trailer);
    }
    sb_addc(out, '}');
    return VT_ERR_OK;
}

static void json_release(void *st)
{
    struct json_doc *d = st;
    if (!d)
        return;
    json_rows_destroy(d->rows);
    free(d);
}

const struct enc_format enc_json = {
    .name = "json",
    .media_type = "application/json",
    .content_type = "application/json",
    .extension = "json",
    .description = "Rows as JSON objects inside one document.",
    .compressible = true,
    .document = true,
    .begin = json_begin,
    .chunk = json_chunk,
    .row = json_row,
    .end = json_end,
    .release = json_release,
    .fork = json_fork,
    .range = json_range,
};
