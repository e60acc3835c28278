/*
 * POST /api/v1/datasets/{name}/query, /query/stream and /count.
 *
 * A request takes one generation for its whole life (so a reload never mixes
 * two versions into one response), validates its body with the query compiler
 * (src/query), then answers one of two ways:
 *
 *  - the index fast path, when every predicate is eq/in on indexed columns:
 *    positions from the equality index, rows from the row store, no DuckDB.
 *    Small answers (point lookups) are written right on the HTTP thread;
 *  - the SQL path on a query worker: one prepared statement with bound
 *    parameters, executed as a streaming result, encoded chunk by chunk.
 *
 * Output is buffered while small and turns into a chunked stream once it
 * passes OUT_SPILL_BYTES, so a 100,000-row page is produced with flat memory
 * and small answers keep a Content-Length.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "encode/arrow_duckdb.h"
#include "encode/json_rows.h"
#include "http/encoding.h"
#include "index/index.h"
#include "index/rowstore.h"
#include "query/query.h"
#include "util/timeutil.h"

#define ARROW_CONTENT_TYPE "application/vnd.apache.arrow.stream"
#define OUT_SPILL_BYTES (256 * 1024)
/* An index answer of at most this many rows is written on the HTTP thread. */
#define INLINE_MAX_ROWS 64
/* The row store decompresses one block of ROWSTORE_BLOCK_ROWS rows per block
 * an answer touches (~3 us each on the bench table of `make bench`), while the
 * SQL path costs ~0.8 ms plus ~1 us per row. Measured break-even: ~300 rows
 * spread over as many blocks (an eq on a 12-value column). Answers touching
 * more blocks than this go to DuckDB instead; clustered hits (few blocks for
 * many rows) stay on the fast path. */
#define FAST_MAX_BLOCKS 256

enum out_format { FORMAT_JSON, FORMAT_ARROW };

/* ------------------------------------------------------------- output */

/* Buffers the body until it is large, then streams it. */
struct out {
    struct http_request *req;
    int status;
    const char *content_type;
    bool compressible;
    struct strbuf buf;
    struct http_stream *st;
    bool failed;
};

static void out_init(struct out *o, struct http_request *req, const char *content_type,
                     bool compressible)
{
    memset(o, 0, sizeof *o);
    o->req = req;
    o->status = 200;
    o->content_type = content_type;
    o->compressible = compressible;
    sb_init(&o->buf, 0);
}

/* The buffer to append to: ours, or the stream's once streaming. */
static struct strbuf *out_buf(struct out *o)
{
    return o->st ? http_stream_buffer(o->st) : &o->buf;
}

/* Call after appending: spills to a stream past the threshold. -1 when the
 * client is gone or memory ran out (stop producing). */
static int out_commit(struct out *o)
{
    if (o->failed)
        return -1;
    if (o->st) {
        if (http_stream_commit(o->st) != 0)
            o->failed = true;
    } else if (o->buf.overflow) {
        o->failed = true;
    } else if (o->buf.len >= OUT_SPILL_BYTES && http_job_should_stop(o->req) == false) {
        o->st = http_reply_stream(o->req, o->status, o->content_type, o->compressible);
        if (!o->st) {
            o->failed = true;
        } else if (http_stream_write(o->st, o->buf.buf, o->buf.len) != 0) {
            o->failed = true;
        }
        sb_release(&o->buf);
    }
    return o->failed ? -1 : 0;
}

/* Finishes the response. With an error before anything was sent, the error
 * is the reply; after streaming started the client sees a truncated body. */
static void out_finish(struct out *o, const struct vt_error *err)
{
    bool ok = !o->failed && (!err || err->code == VT_ERR_OK);
    if (o->st) {
        http_stream_end(o->st, ok);
    } else if (!ok) {
        if (err && err->code != VT_ERR_OK)
            http_reply_vterr(o->req, err);
        else
            http_reply_error(o->req, VT_ERR_OUT_OF_MEMORY, "response too large");
    } else {
        http_reply_buffer(o->req, o->status, o->content_type, &o->buf, o->compressible);
    }
    sb_release(&o->buf);
}

/* ------------------------------------------------------ request state */

struct query_call {
    enum query_mode mode;
    enum out_format format;
    struct cat_dataset *ds;
    struct cat_generation *gen;
    struct query_schema schema;
    struct query_request qr;
};

static void call_release(struct query_call *c)
{
    cat_generation_release(c->gen);
    cat_dataset_put(c->ds);
    c->gen = NULL;
    c->ds = NULL;
}

/* The request is gone: release what it pinned even if its job never ran. */
static void call_on_release(void *user)
{
    call_release(user);
}

static bool wants_arrow(struct http_request *req, enum out_format *out, struct vt_error *err)
{
    const char *fmt = http_req_query(req, "format");
    if (fmt) {
        if (!strcasecmp(fmt, "arrow")) {
            *out = FORMAT_ARROW;
            return true;
        }
        if (!strcasecmp(fmt, "json")) {
            *out = FORMAT_JSON;
            return true;
        }
        vt_error_set(err, VT_ERR_INVALID_QUERY, "format: expected \"json\" or \"arrow\", got \"%s\"",
                     fmt);
        return false;
    }
    /* Arrow when the client names the Arrow type with q > 0 and does not
     * prefer JSON; wildcards and everything else keep the JSON default. */
    const char *accept = http_req_header(req, "Accept");
    int q_arrow = http_accept_media_q(accept, ARROW_CONTENT_TYPE);
    int q_json = http_accept_media_q(accept, "application/json");
    *out = q_arrow > 0 && q_arrow >= q_json ? FORMAT_ARROW : FORMAT_JSON;
    return true;
}

/* Everything before execution: dataset, generation, body, validation. On
 * failure replies and returns false. `deadline` = 0 means do not wait for a
 * lazy build (the HTTP thread must not block). */
static bool call_prepare(struct http_request *req, struct query_call *c, int64_t deadline,
                         bool *out_not_ready)
{
    struct vt_error err = {0};
    *out_not_ready = false;
    if (!c->ds) {
        c->ds = api_dataset_or_404(req);
        if (!c->ds)
            return false;
    }
    if (!c->gen) {
        c->gen = cat_dataset_acquire(c->ds, deadline, &err);
        if (!c->gen) {
            if (deadline == 0 && err.code == VT_ERR_DATASET_NOT_READY) {
                *out_not_ready = true; /* retry on a worker, which may wait */
                return false;
            }
            http_reply_vterr(req, &err);
            return false;
        }
    }
    if (c->mode == QUERY_PAGED && !wants_arrow(req, &c->format, &err)) {
        http_reply_vterr(req, &err);
        return false;
    }
    if (c->mode == QUERY_STREAM)
        c->format = FORMAT_ARROW;
    json_t *body = api_json_body(req, true, &err);
    if (!body) {
        http_reply_vterr(req, &err);
        return false;
    }
    struct arena *arena = http_req_arena(req);
    struct query_column *cols = arena_alloc(arena, (c->gen->n_cols ? c->gen->n_cols : 1) * sizeof *cols);
    if (!cols) {
        json_decref(body);
        http_reply_error(req, VT_ERR_OUT_OF_MEMORY, NULL);
        return false;
    }
    for (size_t i = 0; i < c->gen->n_cols; i++) {
        cols[i].name = c->gen->cols[i].name;
        cols[i].type = c->gen->cols[i].type;
        cols[i].type_sql = c->gen->cols[i].type_sql;
    }
    c->schema.cols = cols;
    c->schema.n = c->gen->n_cols;
    struct query_options opts = {.mode = c->mode,
                                 .max_page_size = api_app(req)->cfg->server.max_page_size};
    enum vt_err rc = query_parse(body, &c->schema, &opts, arena, &c->qr, &err);
    json_decref(body);
    if (rc != VT_ERR_OK) {
        http_reply_vterr(req, &err);
        return false;
    }
    if (c->gen->published_at_us > 0) {
        char ts[32];
        time_format_rfc3339(c->gen->published_at_us, ts);
        http_add_header(req, "X-Dataset-Refreshed-At", ts);
    }
    return true;
}

static void write_page_tail(struct strbuf *sb, const struct query_request *qr)
{
    sb_addf(sb, "],\"page\":%lld,\"page_size\":%lld}", (long long)qr->page,
            (long long)qr->page_size);
}

static void reply_count(struct http_request *req, uint64_t n)
{
    struct strbuf body;
    sb_init(&body, 0);
    sb_addf(&body, "{\"count\":%llu}", (unsigned long long)n);
    http_reply_json(req, 200, &body);
}

/* ------------------------------------------------------ index fast path */

static pthread_key_t cursor_key;
static pthread_once_t cursor_once = PTHREAD_ONCE_INIT;

static void cursor_free(void *p)
{
    rowstore_cursor_destroy(p);
}

static void cursor_key_init(void)
{
    pthread_key_create(&cursor_key, cursor_free);
}

/* This thread's row store cursor (created once per thread). */
static struct rowstore_cursor *thread_cursor(void)
{
    pthread_once(&cursor_once, cursor_key_init);
    struct rowstore_cursor *cur = pthread_getspecific(cursor_key);
    if (!cur) {
        cur = rowstore_cursor_create();
        if (cur)
            pthread_setspecific(cursor_key, cur);
    }
    return cur;
}

enum fast_result { FAST_NO, FAST_DONE, FAST_TOO_BIG };

/* Answers from the index when the request allows it. With inline_only, only
 * answers of at most INLINE_MAX_ROWS rows are produced (FAST_TOO_BIG
 * otherwise, nothing replied). FAST_NO also when the rows would touch more
 * than FAST_MAX_BLOCKS row-store blocks (DuckDB is faster then). */
static enum fast_result try_index(struct http_request *req, struct query_call *c, bool inline_only)
{
    const struct cat_fastpath *fp = cat_generation_fastpath(c->gen);
    if (!fp || !fp->index)
        return FAST_NO;
    if (c->mode == QUERY_STREAM || (c->mode == QUERY_PAGED && c->format != FORMAT_JSON))
        return FAST_NO;
    const struct index_term *terms;
    size_t n_terms;
    bool empty;
    if (!query_index_match_terms(&c->qr, fp->index, http_req_arena(req), &terms, &n_terms, &empty))
        return FAST_NO;
    if (c->mode == QUERY_COUNT) {
        uint64_t n = 0;
        if (!empty && index_count(fp->index, terms, n_terms, &n) != 0)
            return FAST_NO;
        reply_count(req, n);
        return FAST_DONE;
    }
    struct index_rows rows = {0};
    if (!fp->rows || (!empty && index_match(fp->index, terms, n_terms, &rows) != 0))
        return FAST_NO;
    /* Paging over the sorted positions (table order, as the SQL path). */
    size_t from = c->qr.offset < 0 ? 0 : (size_t)c->qr.offset;
    size_t count = from < rows.n ? rows.n - from : 0;
    if (c->qr.max_rows >= 0 && (uint64_t)c->qr.max_rows < count)
        count = (size_t)c->qr.max_rows;
    if (inline_only && count > INLINE_MAX_ROWS) {
        index_rows_free(&rows);
        return FAST_TOO_BIG;
    }
    if (count > FAST_MAX_BLOCKS) {
        size_t blocks = 0;
        uint32_t last = UINT32_MAX;
        for (size_t i = 0; i < count && blocks <= FAST_MAX_BLOCKS; i++) {
            uint32_t b = rows.rows[from + i] / ROWSTORE_BLOCK_ROWS;
            blocks += b != last;
            last = b;
        }
        if (blocks > FAST_MAX_BLOCKS) {
            index_rows_free(&rows);
            return FAST_NO;
        }
    }
    struct rowstore_cursor *cur = thread_cursor();
    struct out o;
    out_init(&o, req, "application/json", true);
    struct vt_error err = {0};
    sb_adds(out_buf(&o), "{\"data\":[");
    for (size_t i = 0; i < count; i++) {
        struct strbuf *b = out_buf(&o);
        if (i)
            sb_addc(b, ',');
        if (!cur || rowstore_write_row(fp->rows, cur, rows.rows[from + i], c->qr.columns,
                                       c->qr.ncolumns, b) != 0) {
            vt_error_set(&err, VT_ERR_INTERNAL, "row store read failed");
            break;
        }
        if ((i & 63) == 63 && out_commit(&o) != 0)
            break;
    }
    if (err.code == VT_ERR_OK)
        write_page_tail(out_buf(&o), &c->qr);
    out_finish(&o, &err);
    index_rows_free(&rows);
    return FAST_DONE;
}

/* ------------------------------------------------------------ SQL path */

static enum vt_err execute(duckdb_connection con, const struct query_plan *plan,
                           duckdb_prepared_statement *ps, duckdb_result *res, struct vt_error *err)
{
    if (duckdb_prepare(con, plan->sql, ps) != DuckDBSuccess) {
        vt_error_set(err, VT_ERR_QUERY_FAILED, "%s", duckdb_prepare_error(*ps));
        return err->code;
    }
    if (query_plan_bind(plan, *ps, err) != VT_ERR_OK)
        return err->code;
    if (duckdb_execute_prepared_streaming(*ps, res) != DuckDBSuccess) {
        vt_error_set(err, VT_ERR_QUERY_FAILED, "%s", duckdb_result_error(res));
        duckdb_destroy_result(res);
        return err->code;
    }
    return VT_ERR_OK;
}

/* DuckDB 1.4.4's late materialization rewrites an unfiltered, unordered
 * `SELECT ... LIMIT n [OFFSET m]` (n > 50) into a semi-join on rowid with a
 * second scan of the table, plus a sort. On the 1M-row, 10-column table of
 * `make bench` that made a first page of 100,000 rows take 38 ms instead of
 * 7 ms, and a first page of 1,000 rows 1.3 ms instead of 0.23 ms. Deep pages
 * gain from it (1,000 rows at offset 500,000: 1.4 ms with it, 34 ms without),
 * and it is what keeps a small ORDER BY ... LIMIT cheap. So it is turned off
 * only for unordered requests that start at row 0. A query worker owns its
 * connection for life, so the setting is remembered per thread and changed
 * only when the next request needs the other one. */
static _Thread_local int late_mat_state = -1; /* -1 unknown, 0 on, 1 off */

static void choose_late_materialization(duckdb_connection con, const struct query_request *qr)
{
    int off = qr->norder == 0 && qr->offset <= 0;
    if (late_mat_state == off)
        return;
    struct vt_error err = {0};
    const char *sql = off ? "SET disabled_optimizers = 'late_materialization'"
                          : "RESET disabled_optimizers";
    /* A failure only costs speed: the query runs with the other plan. */
    late_mat_state = eng_exec(con, sql, VT_ERR_INTERNAL, &err) == VT_ERR_OK ? off : -1;
}

static void run_sql(struct http_request *req, struct query_call *c, duckdb_connection con)
{
    struct vt_error err = {0};
    struct query_plan plan;
    choose_late_materialization(con, &c->qr);
    if (query_build_sql(&c->qr, c->gen->relation, http_req_arena(req), &plan, &err) != VT_ERR_OK) {
        http_reply_vterr(req, &err);
        return;
    }
    duckdb_prepared_statement ps = NULL;
    duckdb_result res;
    if (execute(con, &plan, &ps, &res, &err) != VT_ERR_OK) {
        duckdb_destroy_prepare(&ps);
        http_reply_vterr(req, &err);
        return;
    }

    if (c->mode == QUERY_COUNT) {
        uint64_t n = 0;
        duckdb_data_chunk chunk = duckdb_fetch_chunk(res);
        if (chunk) {
            duckdb_vector v = duckdb_data_chunk_get_vector(chunk, 0);
            if (duckdb_data_chunk_get_size(chunk) > 0)
                n = (uint64_t)((int64_t *)duckdb_vector_get_data(v))[0];
            duckdb_destroy_data_chunk(&chunk);
            reply_count(req, n);
        } else {
            const char *e = duckdb_result_error(&res);
            vt_error_set(&err, VT_ERR_QUERY_FAILED, "%s", e ? e : "count failed");
            http_reply_vterr(req, &err);
        }
    } else if (c->format == FORMAT_JSON) {
        char ebuf[256];
        struct json_rows *enc = json_rows_create_for_result(&res, ebuf, sizeof ebuf);
        if (!enc) {
            vt_error_set(&err, VT_ERR_QUERY_FAILED, "%s", ebuf);
            http_reply_vterr(req, &err);
        } else {
            struct out o;
            out_init(&o, req, "application/json", true);
            sb_adds(out_buf(&o), "{\"data\":[");
            for (;;) {
                duckdb_data_chunk chunk = duckdb_fetch_chunk(res);
                if (!chunk)
                    break;
                int rc = json_rows_encode_chunk(enc, chunk, out_buf(&o));
                duckdb_destroy_data_chunk(&chunk);
                if (rc != 0) {
                    vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, "cannot encode the result");
                    break;
                }
                if (out_commit(&o) != 0 || http_job_should_stop(req))
                    break;
            }
            const char *e = duckdb_result_error(&res);
            if (e && err.code == VT_ERR_OK)
                vt_error_set(&err, VT_ERR_QUERY_FAILED, "%s", e);
            if (err.code == VT_ERR_OK)
                write_page_tail(out_buf(&o), &c->qr);
            out_finish(&o, &err);
            json_rows_destroy(enc);
        }
    } else {
        struct out o;
        out_init(&o, req, ARROW_CONTENT_TYPE, false);
        if (c->mode == QUERY_PAGED) {
            char n[32];
            snprintf(n, sizeof n, "%lld", (long long)c->qr.page);
            http_add_header(req, "X-Page", n);
            snprintf(n, sizeof n, "%lld", (long long)c->qr.page_size);
            http_add_header(req, "X-Page-Size", n);
        }
        struct arrow_duckdb_stream ast;
        memset(&ast, 0, sizeof ast);
        if (arrow_duckdb_begin(&ast, &res, out_buf(&o), &err) == VT_ERR_OK) {
            for (;;) {
                duckdb_data_chunk chunk = duckdb_fetch_chunk(res);
                if (!chunk)
                    break;
                enum vt_err rc = arrow_duckdb_write_chunk(&ast, chunk, out_buf(&o), &err);
                duckdb_destroy_data_chunk(&chunk);
                if (rc != VT_ERR_OK || out_commit(&o) != 0 || http_job_should_stop(req))
                    break;
            }
            const char *e = duckdb_result_error(&res);
            if (e && err.code == VT_ERR_OK)
                vt_error_set(&err, VT_ERR_QUERY_FAILED, "%s", e);
            if (err.code == VT_ERR_OK)
                arrow_duckdb_end(&ast, out_buf(&o));
        }
        arrow_duckdb_release(&ast);
        out_finish(&o, &err);
    }
    duckdb_destroy_result(&res);
    duckdb_destroy_prepare(&ps);
}

/* ------------------------------------------------------------ handlers */

static struct query_call *call_of(struct http_request *req)
{
    return http_req_user(req);
}

static void query_job(struct http_request *req, duckdb_connection con)
{
    struct query_call *c = call_of(req);
    bool not_ready;
    if (!c->gen || c->qr.schema == NULL) {
        if (!call_prepare(req, c, http_req_deadline(req), &not_ready)) {
            call_release(c);
            return;
        }
    }
    if (try_index(req, c, false) == FAST_NO)
        run_sql(req, c, con);
    call_release(c);
}

static void start(struct http_request *req, enum query_mode mode)
{
    struct query_call *c = arena_calloc(http_req_arena(req), sizeof *c);
    if (!c) {
        http_reply_error(req, VT_ERR_OUT_OF_MEMORY, NULL);
        return;
    }
    c->mode = mode;
    http_req_set_user(req, c);
    http_req_on_release(req, call_on_release);
    /* Fast path on the HTTP thread: a published generation whose index can
     * answer with a few rows needs no worker at all. */
    bool not_ready = false;
    if (!call_prepare(req, c, 0, &not_ready)) {
        if (not_ready)
            http_defer(req, api_app(req)->queries, query_job);
        else
            call_release(c);
        return;
    }
    if (try_index(req, c, true) == FAST_DONE) {
        call_release(c);
        return;
    }
    http_defer(req, api_app(req)->queries, query_job);
}

void api_dataset_query(struct http_request *req)
{
    start(req, QUERY_PAGED);
}

void api_dataset_query_stream(struct http_request *req)
{
    start(req, QUERY_STREAM);
}

void api_dataset_count(struct http_request *req)
{
    start(req, QUERY_COUNT);
}
