/*
 * The NDJSON format (encode.h): newline-delimited JSON, one row object per
 * line, each line ending with "\n" (application/x-ndjson). The objects are
 * exactly the rows of the JSON format (json_format.h values), so a client
 * can switch formats without reading values differently; no document around
 * them, so the route's trailer is not written (paging goes in headers).
 */
#include <stdlib.h>

#include "encode/encode.h"
#include "encode/json_rows.h"

static void *ndjson_begin(duckdb_result *res, struct strbuf *out, struct vt_error *err)
{
    (void)out;
    /* NULL is a valid state for rows that come as objects: a non-NULL
     * marker is needed, so the encoder is allocated even then. */
    struct json_rows **rows = calloc(1, sizeof *rows);
    if (!rows) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    if (res) {
        char ebuf[256];
        if (!(*rows = json_rows_create_for_result(res, ebuf, sizeof ebuf))) {
            free(rows);
            vt_error_set(err, VT_ERR_QUERY_FAILED, "%s", ebuf);
            return NULL;
        }
        json_rows_set_lines(*rows, true);
    }
    return rows;
}

static enum vt_err ndjson_chunk(void *st, duckdb_data_chunk chunk, struct strbuf *out,
                                struct vt_error *err)
{
    struct json_rows **rows = st;
    if (json_rows_encode_chunk(*rows, chunk, out) != 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot encode the result");
    return VT_ERR_OK;
}

static void *ndjson_fork(void *st, duckdb_result *res, struct vt_error *err)
{
    struct json_rows **rows = st, **t = calloc(1, sizeof *t);
    char ebuf[256];
    if (!t || !*rows || !res || !(*t = json_rows_create_for_result(res, ebuf, sizeof ebuf))) {
        free(t);
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot fork the NDJSON encoder");
        return NULL;
    }
    json_rows_set_lines(*t, true);
    return t;
}

static enum vt_err ndjson_range(void *st, duckdb_data_chunk chunk, uint64_t from, uint64_t count,
                                struct strbuf *out, struct vt_error *err)
{
    struct json_rows **rows = st;
    if (json_rows_encode_range(*rows, chunk, from, count, out) != 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot encode the result");
    return VT_ERR_OK;
}

static enum vt_err ndjson_row(void *st, const char *obj, size_t len, struct strbuf *out,
                              struct vt_error *err)
{
    (void)st;
    (void)err;
    sb_add(out, obj, len);
    sb_addc(out, '\n');
    return VT_ERR_OK;
}

static void ndjson_release(void *st)
{
    struct json_rows **rows = st;
    if (!rows)
        return;
    json_rows_destroy(*rows);
    free(rows);
}

const struct enc_format enc_ndjson = {
    .name = "ndjson",
    .media_type = "application/x-ndjson",
    .content_type = "application/x-ndjson",
    .extension = "ndjson",
    .description = "Newline-delimited JSON: one row object per line, as in the JSON format.",
    .compressible = true,
    .begin = ndjson_begin,
    .chunk = ndjson_chunk,
    .row = ndjson_row,
    .release = ndjson_release,
    .fork = ndjson_fork,
    .range = ndjson_range,
};
