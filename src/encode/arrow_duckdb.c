/*
 * DuckDB result -> Arrow IPC stream (see arrow_duckdb.h): asks DuckDB for the
 * Arrow C Data export of the schema and of each chunk and hands both to the
 * IPC writer. DuckDB owns the conversion of its types to Arrow; this file only
 * moves the structs around and maps DuckDB's error data to vt_error.
 */
#include "encode/arrow_duckdb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

enum vt_err arrow_duckdb_begin(struct arrow_duckdb_stream *st, duckdb_result *res,
                               struct strbuf *out, struct vt_error *err)
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
    if (st->opts)
        duckdb_destroy_arrow_options(&st->opts);
    st->opts = NULL;
}
