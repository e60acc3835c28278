/*
 * The bounded JSON sink (exec.h): a result as one JSON array of row objects
 * in a buffer, for front ends that answer with one bounded document (the MCP
 * tools). The driver caps the rows; this sink caps the bytes, whole rows
 * only.
 */
#include "exec/exec.h"

#include <string.h>

#include "encode/json_rows.h"

static struct exec_json_sink *json_sink_of(struct exec_sink *s)
{
    return (struct exec_json_sink *)((char *)s - offsetof(struct exec_json_sink, sink));
}

/* Whole rows only: cut `out` back to the last complete row and stop. */
static enum vt_err json_sink_cap(struct exec_json_sink *j, size_t keep_len, uint64_t keep_rows)
{
    j->out->len = keep_len;
    if (j->out->buf)
        j->out->buf[keep_len] = '\0';
    j->out->overflow = false;
    j->rows = keep_rows;
    return VT_ERR_RESULT_CAPPED;
}

static enum vt_err json_sink_begin(struct exec_sink *s, duckdb_result *res, struct vt_error *err)
{
    struct exec_json_sink *j = json_sink_of(s);
    if (res) {
        char ebuf[256];
        j->enc = json_rows_create_for_result(res, ebuf, sizeof ebuf);
        if (!j->enc)
            return vt_error_set(err, VT_ERR_QUERY_FAILED, "%s", ebuf);
    }
    if (!j->max_bytes && s->call)
        j->max_bytes = s->call->rq.caps.max_bytes;
    j->start = j->out->len;
    return sb_addc(j->out, '[') == 0 ? VT_ERR_OK : vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
}

static enum vt_err json_sink_chunk(struct exec_sink *s, duckdb_data_chunk chunk,
                                   struct vt_error *err)
{
    struct exec_json_sink *j = json_sink_of(s);
    uint64_t n = duckdb_data_chunk_get_size(chunk);
    /* The whole chunk in one call (the encoder's fast loop); only a chunk
     * that crosses the byte cap is undone and redone row by row to find the
     * last whole row that fits, which happens at most once per run. */
    size_t before = j->out->len;
    if (json_rows_encode_range(j->enc, chunk, 0, n, j->out) != 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot encode the result");
    if (!j->max_bytes || j->out->len - j->start <= j->max_bytes) {
        j->rows += n;
        return VT_ERR_OK;
    }
    j->out->len = before;
    json_rows_rewind(j->enc, j->rows);
    for (uint64_t i = 0; i < n; i++) {
        size_t row_start = j->out->len;
        if (json_rows_encode_range(j->enc, chunk, i, 1, j->out) != 0)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "cannot encode the result");
        if (j->out->len - j->start > j->max_bytes)
            return json_sink_cap(j, row_start, j->rows);
        j->rows++;
    }
    return VT_ERR_OK; /* not reached: row by row crosses the cap as the chunk did */
}

static enum vt_err json_sink_row(struct exec_sink *s, const char *obj, size_t len,
                                 struct vt_error *err)
{
    struct exec_json_sink *j = json_sink_of(s);
    size_t before = j->out->len;
    if ((j->rows && sb_addc(j->out, ',') != 0) || sb_add(j->out, obj, len) != 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    if (j->max_bytes && j->out->len - j->start > j->max_bytes)
        return json_sink_cap(j, before, j->rows);
    j->rows++;
    return VT_ERR_OK;
}

static enum vt_err json_sink_count(struct exec_sink *s, uint64_t n, struct vt_error *err)
{
    (void)err;
    json_sink_of(s)->count = n;
    return VT_ERR_OK;
}

static void json_sink_end(struct exec_sink *s)
{
    struct exec_json_sink *j = json_sink_of(s);
    if (j->out->len > j->start && j->out->buf[j->start] == '[')
        sb_addc(j->out, ']');
    j->ended = true;
    if (j->done)
        j->done(j);
}

static void json_sink_fail(struct exec_sink *s, const struct vt_error *err)
{
    struct exec_json_sink *j = json_sink_of(s);
    j->err = *err;
    if (j->done)
        j->done(j);
}

static const struct exec_sink_ops json_sink_ops = {
    .begin = json_sink_begin,
    .chunk = json_sink_chunk,
    .json_row = json_sink_row,
    .count = json_sink_count,
    .end = json_sink_end,
    .fail = json_sink_fail,
};

void exec_json_sink_init(struct exec_json_sink *s, struct strbuf *out)
{
    memset(s, 0, sizeof *s);
    s->sink.ops = &json_sink_ops;
    s->out = out;
}

void exec_json_sink_release(struct exec_json_sink *s)
{
    json_rows_destroy(s->enc);
    s->enc = NULL;
}
