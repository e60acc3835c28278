/*
 * The Arrow format (encode.h): one Arrow IPC stream (schema, a record batch
 * per chunk, end-of-stream) over DuckDB's Arrow C Data export
 * (arrow_duckdb.h). Chunks only: the index fast path's JSON rows are not a
 * source for it.
 */
#include <stdlib.h>

#include "encode/arrow_duckdb.h"
#include "encode/encode.h"

static void *arrow_begin(duckdb_result *res, struct strbuf *out, struct vt_error *err)
{
    struct arrow_duckdb_stream *a = calloc(1, sizeof *a);
    if (!a) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    if (!res) {
        free(a);
        vt_error_set(err, VT_ERR_INTERNAL, "arrow: rows must come from a result");
        return NULL;
    }
    if (arrow_duckdb_begin(a, res, out, err) != VT_ERR_OK) {
        free(a);
        return NULL;
    }
    return a;
}

static enum vt_err arrow_chunk(void *st, duckdb_data_chunk chunk, struct strbuf *out,
                               struct vt_error *err)
{
    return arrow_duckdb_write_chunk(st, chunk, out, err);
}

static enum vt_err arrow_end(void *st, const char *trailer, struct strbuf *out,
                             struct vt_error *err)
{
    (void)trailer;
    if (arrow_duckdb_end(st, out) != 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "response too large");
    return VT_ERR_OK;
}

static void arrow_release(void *st)
{
    if (!st)
        return;
    arrow_duckdb_release(st);
    free(st);
}

const struct enc_format enc_arrow = {
    .name = "arrow",
    .media_type = "application/vnd.apache.arrow.stream",
    .content_type = "application/vnd.apache.arrow.stream",
    .extension = "arrows",
    .description = "One Arrow IPC stream: a schema message, record batches, an end marker.",
    .begin = arrow_begin,
    .chunk = arrow_chunk,
    .end = arrow_end,
    .release = arrow_release,
};
