/*
 * The execution path shared by every front end (see exec.h for the model and
 * the sink contract): the index fast path, the SQL path on an engine worker's
 * connection, and the per-connection state both keep.
 */
#include "exec/exec.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/engine.h"
#include "encode/json_format.h"
#include "encode/json_rows.h"
#include "index/index.h"
#include "util/json_small.h"
#include "util/log.h"
#include "util/timeutil.h"

/* Prepared statements kept per worker connection (exec_session). */
#define EXEC_PLAN_CACHE 64
/* Temporary views remembered per worker connection. */
#define EXEC_MAX_VIEWS 256

/* ------------------------------------------------ per-connection session */

/* What exec keeps per engine worker. A worker thread owns one connection for
 * life, so thread-local storage is connection-local storage; a thread that
 * never runs SQL (an HTTP thread taking the fast path) only uses `row`. */
struct exec_session {
    struct strbuf row;          /* one fast-path row as JSON (sinks without `row`) */
    /* The connection the cached statements below were prepared on. */
    duckdb_connection con;
    /* Prepared statements of this connection, keyed by their SQL text: the
     * text holds everything but the bound values (the shape, OFFSET and the
     * LIMIT of ordered requests, and the generation's relation), so the same shape with new values only
     * binds and executes. Least recently used out past EXEC_PLAN_CACHE; all
     * dropped when a generation is dropped (their relations may be gone). */
    struct cached_stmt {
        char *sql;
        uint64_t hash;
        duckdb_prepared_statement ps;
        uint64_t used;
    } cache[EXEC_PLAN_CACHE];
    size_t n_cached;
    uint64_t tick;
    uint64_t drops_seen;
    /* Temporary views of this connection (EXEC_SQL): dataset name -> the
     * relation it was last made to read, so an unchanged one is not redone. */
    struct session_view {
        char *name;
        char *relation;
    } views[EXEC_MAX_VIEWS];
    size_t n_views;
};

static atomic_uint_fast64_t cache_hits, cache_misses, cache_evictions;

void exec_plan_cache_stats(uint64_t *out_hits, uint64_t *out_misses, uint64_t *out_evictions)
{
    *out_hits = atomic_load(&cache_hits);
    *out_misses = atomic_load(&cache_misses);
    *out_evictions = atomic_load(&cache_evictions);
}

static void cache_drop(struct exec_session *s, size_t i)
{
    free(s->cache[i].sql);
    duckdb_destroy_prepare(&s->cache[i].ps);
    s->cache[i] = s->cache[--s->n_cached];
}

static void cache_clear(struct exec_session *s)
{
    while (s->n_cached)
        cache_drop(s, s->n_cached - 1);
}

static pthread_key_t session_key;
static pthread_once_t session_once = PTHREAD_ONCE_INIT;

static void views_forget(struct exec_session *s)
{
    for (size_t i = 0; i < s->n_views; i++) {
        free(s->views[i].name);
        free(s->views[i].relation);
    }
    s->n_views = 0;
}

static void session_free(void *p)
{
    struct exec_session *s = p;
    cache_clear(s);
    views_forget(s);
    sb_release(&s->row);
    free(s);
}

static void session_key_init(void)
{
    pthread_key_create(&session_key, session_free);
}

void exec_thread_release(void)
{
    index_thread_release();
    pthread_once(&session_once, session_key_init);
    struct exec_session *s = pthread_getspecific(session_key);
    if (!s)
        return;
    pthread_setspecific(session_key, NULL);
    session_free(s);
}

/* This thread's session, created on first use; NULL when out of memory. */
static struct exec_session *session(void)
{
    pthread_once(&session_once, session_key_init);
    struct exec_session *s = pthread_getspecific(session_key);
    if (s)
        return s;
    s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    sb_init(&s->row, 0);
    pthread_setspecific(session_key, s);
    return s;
}

/* ------------------------------------------------------- front-end help */

enum vt_err exec_pin(struct cat_catalog *cat, const char *name, int64_t deadline_ms,
                     struct exec_pin *out, struct vt_error *err)
{
    return exec_pin_at(cat, name, NULL, deadline_ms, out, err);
}

enum vt_err exec_pin_at(struct cat_catalog *cat, const char *name, const char *generation,
                        int64_t deadline_ms, struct exec_pin *out, struct vt_error *err)
{
    out->ds = name ? cat_dataset_get(cat, name) : NULL;
    out->gen = NULL;
    if (!out->ds)
        return cat_unknown_name(cat, name, err);
    out->gen = cat_dataset_acquire_id(out->ds, generation, deadline_ms, err);
    if (!out->gen) {
        cat_dataset_put(out->ds);
        out->ds = NULL;
        return err->code;
    }
    return VT_ERR_OK;
}

void exec_unpin(struct exec_pin *pin)
{
    if (!pin)
        return;
    cat_generation_read_release(pin->reads);
    cat_generation_release(pin->gen);
    cat_dataset_put(pin->ds);
    pin->reads = NULL;
    pin->gen = NULL;
    pin->ds = NULL;
}

/* The generation's columns as the validator's schema, in the arena. */
static const struct query_schema *schema_of(const struct cat_generation *gen,
                                            struct arena *arena)
{
    size_t n = gen->n_cols;
    struct query_column *cols = arena_alloc(arena, (n ? n : 1) * sizeof *cols);
    struct query_schema *schema = arena_alloc(arena, sizeof *schema);
    if (!cols || !schema)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        cols[i].name = gen->cols[i].name;
        cols[i].type = gen->cols[i].type;
        cols[i].type_sql = gen->cols[i].type_sql;
    }
    schema->cols = cols;
    schema->n = n;
    return schema;
}

enum vt_err exec_parse_query(const json_t *body, const struct cat_generation *gen,
                             const struct query_options *opts, struct arena *arena,
                             struct query_request *out, struct vt_error *err)
{
    const struct query_schema *schema = schema_of(gen, arena);
    if (!schema)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    return query_parse(body, schema, opts, arena, out, err);
}

enum vt_err exec_parse_small(const struct query_small *small, const struct cat_generation *gen,
                             const struct query_options *opts, struct arena *arena,
                             struct query_request *out, struct vt_error *err)
{
    const struct query_schema *schema = schema_of(gen, arena);
    if (!schema)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    if (query_small_parse(small, schema, opts, arena, out))
        return VT_ERR_OK;
    /* Declined: the general validator over the same text's tree (the scan
     * accepted only texts json_small_load loads). */
    json_t *body = json_small_load(small->text, small->len);
    if (!body)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    enum vt_err rc = query_parse(body, schema, opts, arena, out, err);
    json_decref(body);
    return rc;
}

/* ------------------------------------------------------ index fast path */

static bool stop_requested(const struct exec_plan *plan, struct vt_error *err)
{
    const struct eng_job *job = plan->job;
    if (!job)
        return false;
    if (atomic_load(&job->timed_out)) {
        vt_error_set(err, VT_ERR_TIMEOUT, "request timed out");
        return true;
    }
    if (atomic_load(&job->cancelled)) {
        vt_error_set(err, VT_ERR_CLIENT_GONE, NULL);
        return true;
    }
    return false;
}

static void sink_finish(struct exec_sink *sink, const struct vt_error *err)
{
    if (err->code == VT_ERR_OK)
        sink->ops->end(sink);
    else
        sink->ops->fail(sink, err);
}

/* The index's sink (index.h) over an exec sink. */
struct fast_ctx {
    const struct exec_plan *plan;
    struct exec_sink *sink;
    struct exec_session *s;     /* JSON rendering for sinks without `row` */
    int64_t t_rows;
};

static enum vt_err fast_begin(void *ctx, struct vt_error *err)
{
    struct fast_ctx *f = ctx;
    if (f->plan->timing)
        f->t_rows = time_mono_us();
    return f->sink->ops->begin(f->sink, NULL, err);
}

static enum vt_err fast_row(void *ctx, const struct index_row *row, struct vt_error *err)
{
    struct fast_ctx *f = ctx;
    if (f->sink->ops->row)
        return f->sink->ops->row(f->sink, row, err);
    sb_reset(&f->s->row);
    if (index_row_json(row, &f->s->row) != 0)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    return f->sink->ops->json_row(f->sink, f->s->row.buf, f->s->row.len, err);
}

static enum vt_err fast_count(void *ctx, uint64_t n, struct vt_error *err)
{
    struct fast_ctx *f = ctx;
    return f->sink->ops->count(f->sink, n, err);
}

static enum vt_err fast_stop(void *ctx, struct vt_error *err)
{
    struct fast_ctx *f = ctx;
    return stop_requested(f->plan, err) ? err->code : VT_ERR_OK;
}

/* A count of comparisons on one column with sorted values (index.h, "Range
 * counts"): two bound searches instead of DuckDB's scan. */
static enum exec_fast try_range_count(const struct exec_plan *plan,
                                      const struct index_fastpath *fp, struct exec_sink *sink)
{
    size_t col, n_terms;
    const struct index_range_term *terms;
    if (!query_index_range(plan->query, index_fastpath_index(fp), plan->arena, &col, &terms,
                           &n_terms))
        return EXEC_FAST_NO;
    struct exec_timing *tm = plan->timing;
    int64_t t0 = tm ? time_mono_us() : 0;
    uint64_t n;
    /* a thread outside an engine job must not wait for the disk */
    enum index_fast r = index_range_count(fp, col, terms, n_terms, plan->job == NULL, &n);
    if (r != INDEX_FAST_DONE)
        return r == INDEX_FAST_ELSEWHERE ? EXEC_FAST_TOO_BIG : EXEC_FAST_NO;
    if (tm)
        tm->execute_us += time_mono_us() - t0;
    struct vt_error err = {0};
    enum vt_err rc = sink->ops->count(sink, n, &err);
    if (rc != VT_ERR_OK && rc != VT_ERR_RESULT_CAPPED && err.code == VT_ERR_OK)
        err.code = rc;
    sink_finish(sink, &err);
    return EXEC_FAST_DONE;
}

/* A page whose rows may be consecutive rows of the table in table order,
 * with every column: no grouping, aggregation, DISTINCT or total, at most
 * one sort key (try_pages decides whether the predicates and the sort keep
 * table order). */
static bool table_order_page(const struct query_request *qr, const struct index_fastpath *fp)
{
    if (qr->mode != QUERY_PAGED || qr->ngroup || qr->naggs || qr->nhaving || qr->norder > 1 ||
        qr->distinct || qr->include_total || qr->count_result || qr->max_rows <= 0 ||
        qr->offset < 0 || qr->ncolumns != index_fastpath_columns(fp))
        return false;
    for (size_t i = 0; i < qr->ncolumns; i++)
        if (qr->columns[i] != i)
            return false;
    return true;
}

static bool every_pred_eq(const struct query_request *qr)
{
    for (size_t i = 0; i < qr->npreds; i++)
        if (qr->preds[i].op != QUERY_OP_EQ)
            return false;
    return true;
}

/* The page as a byte range of the pre-rendered pages, sent by the sink.
 * Its rows are consecutive in table order when there is no predicate and no
 * sort, or when the predicates compare one column whose values never
 * decrease in table order (index_range_rows: keyset pagination by an id,
 * `id > last` page after page), sorted by nothing or by that column
 * ascending when its values are unique (ties would be DuckDB's to order). */
static enum exec_fast try_pages(const struct exec_plan *plan, const struct index_fastpath *fp,
                                struct exec_sink *sink)
{
    const struct query_request *qr = plan->query;
    struct exec_timing *tm = plan->timing;
    int64_t t0 = tm ? time_mono_us() : 0;
    bool nowait = plan->job == NULL;
    uint64_t first = 0, count = UINT64_MAX; /* the qualifying rows; all by default */
    enum index_fast r;
    if (qr->npreds) {
        size_t col, n_terms;
        const struct index_range_term *terms;
        bool unique;
        if (!query_index_range(qr, index_fastpath_index(fp), plan->arena, &col, &terms,
                               &n_terms))
            return EXEC_FAST_NO;
        r = index_range_rows(fp, col, terms, n_terms, nowait, &first, &count, &unique);
        if (r == INDEX_FAST_ELSEWHERE)
            return EXEC_FAST_TOO_BIG;
        if (r != INDEX_FAST_DONE ||
            (qr->norder && (!unique || qr->order[0].ref.idx != col || qr->order[0].ref.is_agg ||
                            qr->order[0].ref.is_group || qr->order[0].desc)))
            return EXEC_FAST_NO;
    } else if (qr->norder) {
        return EXEC_FAST_NO;
    }
    uint64_t offset = (uint64_t)qr->offset, rows = (uint64_t)qr->max_rows;
    if (count != UINT64_MAX) {
        if (offset >= count)
            return EXEC_FAST_NO; /* no rows: DuckDB's page (a short scan) */
        if (rows > count - offset)
            rows = count - offset;
    }
    struct index_pages_range range;
    r = index_pages_range(fp, first + offset, rows, nowait, &range);
    if (r == INDEX_FAST_ELSEWHERE)
        return EXEC_FAST_TOO_BIG;
    if (r != INDEX_FAST_DONE || !sink->ops->json_file(sink, &range))
        return EXEC_FAST_NO;
    if (tm)
        tm->execute_us += time_mono_us() - t0;
    struct vt_error err = {0};
    sink_finish(sink, &err);
    return EXEC_FAST_DONE;
}

enum exec_fast exec_try_fast(const struct exec_plan *plan, struct exec_sink *sink,
                             size_t max_rows)
{
    if (plan->kind == EXEC_SQL || !plan->gen)
        return EXEC_FAST_NO;
    const struct index_fastpath *fp = cat_generation_fastpath(plan->gen);
    if (!fp)
        return EXEC_FAST_NO;
    const struct query_request *qr = plan->query;
    bool rows = plan->kind == EXEC_ROWS;
    if (rows && (qr->mode == QUERY_STREAM || (!sink->ops->row && !sink->ops->json_row)))
        return EXEC_FAST_NO;
    /* Lookups (eq) go to the index's lookup first: the row store answers
     * their few rows with fewer system calls than a file range (the row
     * ends' reads, the fd's dup and close, the framing: wrk on `id eq`, 1M
     * rows, 37,000 against 54,000 req/s) and fewer instructions than the
     * bound searches that place a range. Plain and keyset pages come from
     * the pre-rendered pages first. */
    bool pages = rows && sink->ops->json_file && table_order_page(qr, fp);
    bool lookup = qr->npreds && every_pred_eq(qr);
    enum exec_fast r;
    if (pages && !lookup && (r = try_pages(plan, fp, sink)) != EXEC_FAST_NO)
        return r;
    const struct index_term *terms;
    size_t n_terms;
    bool empty;
    if (!query_index_match_terms(qr, index_fastpath_index(fp), plan->arena, &terms, &n_terms,
                                 &empty)) {
        if (pages && lookup && (r = try_pages(plan, fp, sink)) != EXEC_FAST_NO)
            return r; /* eq on a column the index keeps sorted, not for lookups */
        return rows ? EXEC_FAST_NO : try_range_count(plan, fp, sink);
    }
    struct exec_session *s = NULL;
    if (rows && !sink->ops->row && !(s = session()))
        return EXEC_FAST_NO;
    struct exec_timing *tm = plan->timing;
    int64_t t0 = tm ? time_mono_us() : 0;
    struct index_fast_query q = {
        .kind = rows ? INDEX_FAST_ROWS : INDEX_FAST_COUNT,
        .terms = terms,
        .n_terms = n_terms,
        .empty = empty,
        .cols = qr->columns,
        .n_cols = qr->ncolumns,
        .offset = qr->offset < 0 ? 0 : (uint64_t)qr->offset,
        .limit = qr->max_rows,
        .max_rows = max_rows,
        /* a thread outside an engine job must not wait for the disk */
        .nowait = plan->job == NULL,
    };
    struct fast_ctx f = {.plan = plan, .sink = sink, .s = s};
    struct index_fast_sink is = {.ctx = &f, .begin = fast_begin, .row = fast_row,
                                 .count = fast_count, .stop = fast_stop};
    struct vt_error err = {0};
    enum index_fast ir = index_fast_answer(fp, &q, &is, plan->arena, &err);
    if (s && s->row.cap > 64 * 1024)
        sb_release(&s->row); /* one huge row must not stay pinned to the thread */
    if (ir != INDEX_FAST_DONE)
        return ir == INDEX_FAST_ELSEWHERE ? EXEC_FAST_TOO_BIG : EXEC_FAST_NO;
    if (tm) {
        int64_t t1 = f.t_rows ? f.t_rows : time_mono_us();
        tm->execute_us += t1 - t0;
        tm->encode_us += time_mono_us() - t1;
    }
    sink_finish(sink, &err);
    return EXEC_FAST_DONE;
}

/* ------------------------------------------------------------ SQL path */

/* A prepared statement for `sql` on `con`: from the session's cache, or
 * prepared now and cached. NULL with err set when DuckDB refuses it. */
static duckdb_prepared_statement cached_prepare(struct exec_session *s, duckdb_connection con,
                                                const char *sql, bool *out_cached,
                                                struct vt_error *err)
{
    *out_cached = false;
    uint64_t drops = cat_generations_dropped();
    if (s && (s->con != con || s->drops_seen != drops)) {
        cache_clear(s);
        s->con = con;
        s->drops_seen = drops;
    }
    uint64_t h = XXH3_64bits(sql, strlen(sql));
    for (size_t i = 0; s && i < s->n_cached; i++) {
        if (s->cache[i].hash == h && !strcmp(s->cache[i].sql, sql)) {
            s->cache[i].used = ++s->tick;
            atomic_fetch_add(&cache_hits, 1);
            *out_cached = true;
            duckdb_clear_bindings(s->cache[i].ps);
            return s->cache[i].ps;
        }
    }
    atomic_fetch_add(&cache_misses, 1);
    duckdb_prepared_statement ps = NULL;
    if (duckdb_prepare(con, sql, &ps) != DuckDBSuccess) {
        vt_error_set(err, VT_ERR_QUERY_FAILED, "%s", duckdb_prepare_error(ps));
        duckdb_destroy_prepare(&ps);
        return NULL;
    }
    char *key = s ? strdup(sql) : NULL;
    if (!key)
        return ps; /* not cached: the caller destroys it */
    if (s->n_cached == EXEC_PLAN_CACHE) {
        size_t lru = 0;
        for (size_t i = 1; i < s->n_cached; i++)
            if (s->cache[i].used < s->cache[lru].used)
                lru = i;
        cache_drop(s, lru);
        atomic_fetch_add(&cache_evictions, 1);
    }
    s->cache[s->n_cached++] = (struct cached_stmt){key, h, ps, ++s->tick};
    *out_cached = true;
    return ps;
}

static void cache_forget(struct exec_session *s, duckdb_prepared_statement ps)
{
    for (size_t i = 0; s && i < s->n_cached; i++)
        if (s->cache[i].ps == ps) {
            cache_drop(s, i);
            return;
        }
}

/* Drives a pending query until its result is ready (true) or it failed.
 *
 * This is duckdb_execute_prepared_streaming's own loop, with one difference.
 * The calling thread runs the query's tasks itself, and DuckDB's background
 * threads take some of them. When they hold every task that is left, DuckDB's
 * loop spins on "no tasks available" until they finish. That costs a whole
 * core for nothing. Under load, it also keeps that core from the thread that
 * holds the task. Here the thread yields the CPU instead. Under callgrind,
 * a 1000-row filtered page on the 1M-row bench table went from 5.5-5.8M
 * instructions per run to 4.3-4.4M; with threads=1 (nothing to wait for) it
 * is 4.24M. An interrupt (deadline, client gone) ends the loop with
 * DUCKDB_PENDING_ERROR like any failure. */
static bool run_pending(duckdb_pending_result pending)
{
    for (;;) {
        switch (duckdb_pending_execute_task(pending)) {
        case DUCKDB_PENDING_RESULT_READY:
            return true;
        case DUCKDB_PENDING_NO_TASKS_AVAILABLE:
            sched_yield();
            break;
        case DUCKDB_PENDING_RESULT_NOT_READY:
            break;
        default:
            return false;
        }
    }
}

/* Binds and starts `sql` as a streaming result with the statement *out_ps;
 * *out_cached tells whether the cache owns it (else the caller destroys it). */
static enum vt_err prepare_and_execute(struct exec_session *s, duckdb_connection con,
                                       const char *sql, const struct query_plan *binds,
                                       duckdb_prepared_statement *out_ps, bool *out_cached,
                                       duckdb_result *res, struct vt_error *err,
                                       int64_t *out_bound_us)
{
    *out_ps = NULL;
    *out_cached = false;
    for (int attempt = 0;; attempt++) {
        bool cached;
        duckdb_prepared_statement ps = cached_prepare(s, con, sql, &cached, err);
        if (!ps)
            return err->code;
        *out_ps = ps;
        *out_cached = cached;
        if (query_plan_bind(binds, ps, err) != VT_ERR_OK)
            return err->code;
        if (out_bound_us)
            *out_bound_us = time_mono_us();
        duckdb_pending_result pending = NULL;
        bool have_res = false; /* res is set (even on failure) once execute_pending ran */
        if (duckdb_pending_prepared_streaming(ps, &pending) == DuckDBSuccess && run_pending(pending)) {
            have_res = true;
            if (duckdb_execute_pending(pending, res) == DuckDBSuccess) {
                duckdb_destroy_pending(&pending);
                return VT_ERR_OK;
            }
        }
        const char *msg = have_res ? duckdb_result_error(res) : duckdb_pending_error(pending);
        /* A cached plan whose catalog moved under it: prepare once afresh. */
        if (cached && attempt == 0 && msg && strstr(msg, "Catalog Error")) {
            if (have_res)
                duckdb_destroy_result(res);
            duckdb_destroy_pending(&pending);
            cache_forget(s, ps);
            continue;
        }
        vt_error_set(err, VT_ERR_QUERY_FAILED, "%s", msg ? msg : "query failed");
        if (have_res)
            duckdb_destroy_result(res);
        duckdb_destroy_pending(&pending);
        return err->code;
    }
}

/* DuckDB's message for a failed fetch, unless the run was stopped on
 * purpose: an interrupt at the deadline is a timeout, not a query error. */
static void fetch_error(const struct exec_plan *plan, duckdb_result *res, struct vt_error *err)
{
    const char *e = duckdb_result_error(res);
    if (!e || err->code != VT_ERR_OK)
        return;
    if (!stop_requested(plan, err))
        vt_error_set(err, VT_ERR_QUERY_FAILED, "%s", e);
}

static void deliver_count(const struct exec_plan *plan, duckdb_result *res,
                          struct exec_sink *sink, struct vt_error *err)
{
    int64_t t0 = plan->timing ? time_mono_us() : 0;
    duckdb_data_chunk chunk = duckdb_fetch_chunk(*res);
    if (plan->timing)
        plan->timing->execute_us += time_mono_us() - t0;
    if (!chunk) {
        fetch_error(plan, res, err);
        vt_error_set(err, VT_ERR_QUERY_FAILED, "count failed");
        return;
    }
    uint64_t n = 0;
    if (duckdb_data_chunk_get_size(chunk) > 0) {
        duckdb_vector v = duckdb_data_chunk_get_vector(chunk, 0);
        n = (uint64_t)((int64_t *)duckdb_vector_get_data(v))[0];
    }
    duckdb_destroy_data_chunk(&chunk);
    sink->ops->count(sink, n, err);
}

/* Streams the result into the sink. *out_early is set when the run stopped
 * before the result's end (a capped sink, an error, a stop). */
static void deliver_rows(const struct exec_plan *plan, duckdb_result *res,
                         struct exec_sink *sink, struct vt_error *err, bool *out_early)
{
    *out_early = true;
    struct exec_timing *tm = plan->timing;
    if (sink->ops->begin(sink, res, err) != VT_ERR_OK)
        return;
    for (;;) {
        if (stop_requested(plan, err))
            return;
        int64_t t0 = tm ? time_mono_us() : 0;
        duckdb_data_chunk chunk = duckdb_fetch_chunk(*res);
        int64_t t1 = tm ? time_mono_us() : 0;
        if (tm)
            tm->execute_us += t1 - t0;
        if (!chunk)
            break;
        enum vt_err rc = sink->ops->chunk(sink, chunk, err);
        duckdb_destroy_data_chunk(&chunk);
        if (tm)
            tm->encode_us += time_mono_us() - t1;
        if (rc == VT_ERR_RESULT_CAPPED) {
            vt_error_clear(err);
            return; /* the sink has what it wants: a complete answer */
        }
        if (rc != VT_ERR_OK)
            return;
    }
    *out_early = false;
    fetch_error(plan, res, err);
}

/* Makes each view name read its relation on `con` (CREATE OR REPLACE TEMP
 * VIEW), skipping the ones already right. */
static enum vt_err ensure_views(struct exec_session *s, duckdb_connection con,
                                const struct exec_plan *plan, struct vt_error *err)
{
    if (s && s->con != con) {
        views_forget(s);
        cache_clear(s);
        s->con = con;
    }
    for (size_t i = 0; i < plan->nviews; i++) {
        const struct exec_view *v = &plan->views[i];
        size_t k = 0;
        while (s && k < s->n_views && strcmp(s->views[k].name, v->name) != 0)
            k++;
        if (s && k < s->n_views && !strcmp(s->views[k].relation, v->relation))
            continue;
        struct strbuf sql;
        sb_init(&sql, 0);
        sb_adds(&sql, "CREATE OR REPLACE TEMPORARY VIEW ");
        sb_add_sql_ident(&sql, v->name);
        sb_addf(&sql, " AS SELECT * FROM %s", v->relation);
        enum vt_err rc = eng_exec(con, sql.buf, VT_ERR_INTERNAL, err);
        sb_release(&sql);
        if (rc != VT_ERR_OK)
            return rc;
        if (!s)
            continue;
        /* Remember it (or, out of memory or room, forget it: it is then
         * simply made again next time). */
        char *name = strdup(v->name), *rel = strdup(v->relation);
        if (k < s->n_views) {
            free(s->views[k].name);
            free(s->views[k].relation);
            s->views[k] = s->views[--s->n_views];
        }
        if (name && rel && s->n_views < EXEC_MAX_VIEWS) {
            s->views[s->n_views++] = (struct session_view){name, rel};
        } else {
            free(name);
            free(rel);
        }
    }
    return VT_ERR_OK;
}

enum eng_job_class exec_job_class(const struct exec_plan *plan)
{
    if (plan->kind == EXEC_SQL || !plan->query || !plan->gen)
        return ENG_JOB_LONG;
    const struct query_request *qr = plan->query;
    if (plan->kind == EXEC_ROWS && qr->mode == QUERY_STREAM)
        return ENG_JOB_STREAM;
    if (plan->gen->lazy)
        return ENG_JOB_LONG;
    if (plan->gen->rows < EXEC_LONG_MIN_ROWS || plan->kind == EXEC_COUNT)
        return ENG_JOB_SHORT;
    if (qr->ngroup || qr->naggs || qr->norder || qr->distinct)
        return ENG_JOB_LONG;
    int64_t end = (qr->offset > 0 ? qr->offset : 0) + qr->max_rows;
    return qr->max_rows < 0 || end > EXEC_LONG_ROWS ? ENG_JOB_LONG : ENG_JOB_SHORT;
}

/* The text an EXEC_SQL statement is prepared (and cached) under: the user's
 * statement (`sql`), then a comment naming the generations its views read. A
 * cached plan is bound through the views to one generation's database; keyed
 * by the statement alone, the same text after a reload reused a plan of the
 * previous generation (its rows, or DuckDB's "requires database ... but it
 * was not attached" once that generation was dropped). The comment starts on
 * a line of its own: the gate let through one statement, with no open
 * comment. */
static const char *sql_with_generations(const struct exec_plan *plan, const char *sql)
{
    if (!plan->nviews || !plan->arena)
        return sql; /* no views (or nowhere to build the text: as written) */
    size_t n = strlen(sql) + 8;
    for (size_t i = 0; i < plan->nviews; i++)
        n += strlen(plan->views[i].relation) + 2;
    char *text = plan->arena ? arena_alloc(plan->arena, n) : NULL;
    if (!text)
        return NULL;
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_adds(&sb, sql);
    sb_adds(&sb, "\n-- ");
    for (size_t i = 0; i < plan->nviews; i++) {
        if (i)
            sb_adds(&sb, ", ");
        sb_adds(&sb, plan->views[i].relation);
    }
    bool ok = !sb.overflow && sb.len < n;
    if (ok)
        memcpy(text, sb.buf, sb.len + 1);
    sb_release(&sb);
    return ok ? text : NULL;
}

static bool ident_char(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || (unsigned char)c >= 0x80;
}

/* Where a dollar-quoted string opened at s ($tag$) ends its tag (the index
 * after the second '$'), or 0 when s opens none. */
static size_t dollar_tag(const char *s)
{
    size_t i = 1;
    while (s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
           (i > 1 && s[i] >= '0' && s[i] <= '9') || (unsigned char)s[i] >= 0x80)
        i++;
    return s[i] == '$' ? i + 1 : 0;
}

/* The length of a statement the gate let through without the ';' that may
 * end it and whatever follows that (only spaces and comments can). Strings
 * ('...', E'...', $tag$...$tag$), quoted names and comments (--, nested
 * block comments) are skipped as DuckDB's lexer reads them; text this scan
 * cannot follow to its end is left whole, for DuckDB to refuse. */
static size_t statement_len(const char *sql)
{
    size_t n = strlen(sql), i = 0, end = n;
    while (i < n) {
        char c = sql[i];
        if (c == '\'' || c == '"') {
            bool esc = c == '\'' && i > 0 && (sql[i - 1] == 'e' || sql[i - 1] == 'E') &&
                       (i < 2 || !ident_char(sql[i - 2]));
            for (i++; i < n; i++) {
                if (esc && sql[i] == '\\' && i + 1 < n) {
                    i++;
                } else if (sql[i] == c) {
                    if (sql[i + 1] != c)
                        break;
                    i++;
                }
            }
            if (i >= n)
                return n;
            i++;
        } else if (c == '-' && sql[i + 1] == '-') {
            while (i < n && sql[i] != '\n')
                i++;
        } else if (c == '/' && sql[i + 1] == '*') {
            int depth = 0;
            do {
                if (sql[i] == '/' && sql[i + 1] == '*') {
                    depth++;
                    i += 2;
                } else if (sql[i] == '*' && sql[i + 1] == '/') {
                    depth--;
                    i += 2;
                } else {
                    i++;
                }
            } while (depth > 0 && i < n);
            if (depth > 0)
                return n;
        } else if (c == '$' && (i == 0 || !ident_char(sql[i - 1])) && dollar_tag(sql + i)) {
            size_t tag = dollar_tag(sql + i);
            const char *close = NULL;
            for (size_t k = i + tag; k + tag <= n && !close; k++)
                if (!memcmp(sql + k, sql + i, tag))
                    close = sql + k;
            if (!close)
                return n;
            i = (size_t)(close - sql) + tag;
        } else if (c == ';') {
            if (end == n)
                end = i;
            i++;
        } else {
            if (end != n && c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f')
                return n; /* something after the ';': not ours to cut */
            i++;
        }
    }
    return end;
}

/* plan->text_columns: every column of the statement's result as DuckDB's own
 * text form of its values (a cast to VARCHAR: what COPY ... (FORMAT csv)
 * writes), the statement a subquery. DuckDB keeps the column names (a
 * repeated name gets a _1 suffix, as COPY writes it) and the order of an
 * ordered statement. The statement's closing ';' goes (it cannot stand inside
 * parentheses); a line break ends a trailing line comment. */
static const char *as_text_columns(const struct exec_plan *plan, const char *sql)
{
    static const char head[] = "SELECT CAST(COLUMNS(*) AS VARCHAR) FROM (\n";
    size_t n = statement_len(sql);
    char *text = arena_alloc(plan->arena, sizeof head + n + 4);
    if (!text)
        return NULL;
    memcpy(text, head, sizeof head - 1);
    memcpy(text + sizeof head - 1, sql, n);
    memcpy(text + sizeof head - 1 + n, "\n)", 3);
    text[sizeof head - 1 + n + 3] = '\0';
    return text;
}

/* DuckDB's message quotes the statement that ran: a client may see its own
 * SQL (with the line numbers of its own text, under the text_columns head),
 * never the SQL written for it. */
static void quote_own_sql(const struct exec_plan *plan, struct vt_error *err)
{
    if (err->code != VT_ERR_QUERY_FAILED || !strstr(err->msg, "\nLINE "))
        return;
    const char *own = plan->kind == EXEC_SQL && plan->sql_as_written ? plan->sql : NULL;
    char text[VT_ERROR_MSG_MAX];
    eng_error_excerpt(err->msg, own, plan->text_columns ? 2 : 1, text, sizeof text);
    memcpy(err->msg, text, sizeof text);
}

/* The request without the predicates the lazy plan decided for every file it
 * reads (source.h, pred_decided): the same rows, no test per row. The request
 * itself when there are none; NULL when out of memory. */
static const struct query_request *without_decided(const struct exec_plan *plan,
                                                   const struct source_lazy_plan *lp)
{
    const struct query_request *req = plan->query;
    if (!lp->n_pred_decided)
        return req;
    struct query_request *q = arena_alloc(plan->arena, sizeof *q);
    struct query_pred *preds = arena_alloc(plan->arena, (req->npreds ? req->npreds : 1) *
                                                            sizeof *preds);
    if (!q || !preds)
        return NULL;
    *q = *req;
    size_t n = 0;
    for (size_t i = 0; i < req->npreds; i++)
        if (!lp->pred_decided[i])
            preds[n++] = req->preds[i];
    q->preds = preds;
    q->npreds = n;
    return q;
}

void exec_run(const struct exec_plan *plan, struct exec_sink *sink, duckdb_connection con)
{
    struct vt_error err = {0};
    struct range_cache_lease *holds = NULL; /* lazy S3 ranges the run reads */
    if (stop_requested(plan, &err)) {
        sink->ops->fail(sink, &err);
        return;
    }
    if (exec_try_fast(plan, sink, SIZE_MAX) == EXEC_FAST_DONE)
        return;

    int64_t t_plan = plan->timing ? time_mono_us() : 0;
    struct query_plan qp;
    const char *sql;
    if (plan->kind == EXEC_SQL) {
        memset(&qp, 0, sizeof qp);
        qp.params = plan->params;
        qp.nparams = plan->nparams;
        sql = plan->text_columns ? as_text_columns(plan, plan->sql) : plan->sql;
        if (sql)
            sql = sql_with_generations(plan, sql);
        if (!sql) {
            vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
            sink->ops->fail(sink, &err);
            return;
        }
        if (ensure_views(session(), con, plan, &err) != VT_ERR_OK) {
            sink->ops->fail(sink, &err);
            return;
        }
    } else {
        const char *relation = plan->gen->relation;
        const struct query_request *query = plan->query;
        if (plan->gen->lazy) {
            /* Only the files the predicates can match; a count the footers
             * answer needs no DuckDB at all. */
            struct source_lazy_plan lp;
            if (cat_generation_plan_lazy(plan->gen, plan->query, plan->arena, plan->job, &lp,
                                         &err) != VT_ERR_OK) {
                source_lazy_plan_release(&lp);
                sink->ops->fail(sink, &err);
                return;
            }
            holds = lp.holds;
            if (plan->timing && lp.files) {
                plan->timing->lazy_files = (uint32_t)lp.files;
                plan->timing->lazy_files_read = (uint32_t)lp.files_read;
                plan->timing->lazy_row_groups = (uint32_t)lp.row_groups;
                plan->timing->lazy_row_groups_read = (uint32_t)lp.row_groups_read;
            }
            if (lp.files)
                log_debug("lazy %s: %zu of %zu files, %zu of %zu row groups to read%s",
                          plan->gen->id, lp.files_read, lp.files, lp.row_groups_read,
                          lp.row_groups, lp.count_known ? " (count from statistics)" : "");
            if (lp.count_known && plan->kind == EXEC_COUNT) {
                if (plan->timing)
                    plan->timing->plan_us += time_mono_us() - t_plan;
                sink->ops->count(sink, (uint64_t)lp.count, &err);
                sink_finish(sink, &err);
                source_lazy_read_release(holds);
                return;
            }
            if (lp.relation)
                relation = lp.relation;
            query = without_decided(plan, &lp);
        }
        if (!query || query_build_sql(query, relation, plan->arena, &qp, &err) != VT_ERR_OK) {
            if (!query)
                vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
            sink->ops->fail(sink, &err);
            source_lazy_read_release(holds);
            return;
        }
        sql = plan->text_columns ? as_text_columns(plan, qp.sql) : qp.sql;
        if (!sql) {
            vt_error_set(&err, VT_ERR_OUT_OF_MEMORY, NULL);
            sink->ops->fail(sink, &err);
            source_lazy_read_release(holds);
            return;
        }
    }
    duckdb_prepared_statement ps = NULL;
    bool cached = false;
    duckdb_result res;
    /* Whole-result streams are not cached: preparing costs nothing next to
     * them. And a cached plan whose run stopped before its end is dropped
     * below: DuckDB keeps the stopped execution's buffers with the statement
     * (RSS grew ~1 MiB per client that hung up mid-stream). */
    struct exec_session *s =
        (plan->kind == EXEC_ROWS && plan->query->mode == QUERY_STREAM) || plan->one_off
            ? NULL
            : session();
    /* prepare_and_execute prepares (or finds) the statement, then starts it:
     * up to `bound` is plan time, the rest execute. */
    int64_t bound = 0;
    enum vt_err prc = prepare_and_execute(s, con, sql, &qp, &ps, &cached, &res, &err,
                                          plan->timing ? &bound : NULL);
    if (plan->timing) {
        int64_t now = time_mono_us();
        plan->timing->plan_us += (bound ? bound : now) - t_plan;
        plan->timing->execute_us += bound ? now - bound : 0;
    }
    if (prc != VT_ERR_OK) {
        if (cached)
            cache_forget(s, ps);
        else
            duckdb_destroy_prepare(&ps);
        if (err.code == VT_ERR_QUERY_FAILED) {
            /* An interrupt at the deadline surfaces as a failed execute. */
            struct vt_error why = {0};
            if (stop_requested(plan, &why))
                err = why;
        }
        /* A lazy generation's files changed under it, or DuckDB's message
         * names its internal files: the catalog says what the client sees. */
        if (plan->kind != EXEC_SQL && plan->gen)
            cat_generation_read_failed(plan->gen, &err);
        quote_own_sql(plan, &err);
        sink->ops->fail(sink, &err);
        source_lazy_read_release(holds);
        return;
    }
    bool early = false;
    if (plan->kind == EXEC_COUNT)
        deliver_count(plan, &res, sink, &err);
    else
        deliver_rows(plan, &res, sink, &err, &early);
    if (plan->kind != EXEC_SQL && plan->gen)
        cat_generation_read_failed(plan->gen, &err);
    quote_own_sql(plan, &err);
    duckdb_destroy_result(&res);
    if (!cached)
        duckdb_destroy_prepare(&ps);
    else if (err.code != VT_ERR_OK || early)
        cache_forget(s, ps);
    sink_finish(sink, &err);
    source_lazy_read_release(holds);
}

void exec_shape_release(struct exec_shape *s)
{
    for (size_t i = 0; i < s->ncols; i++) {
        free(s->names ? s->names[i] : NULL);
        if (s->types && s->types[i])
            duckdb_destroy_logical_type(&s->types[i]);
    }
    for (size_t i = 0; s->param_logical && i < s->nparams; i++)
        if (s->param_logical[i])
            duckdb_destroy_logical_type(&s->param_logical[i]);
    free(s->names);
    free(s->types);
    free(s->param_types);
    free(s->param_logical);
    memset(s, 0, sizeof *s);
}

enum vt_err exec_describe(const struct exec_plan *plan, duckdb_connection con,
                          struct exec_shape *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    if (plan->kind != EXEC_SQL)
        return vt_error_set(err, VT_ERR_INTERNAL, "only SQL plans can be described");
    struct exec_session *s = session();
    if (ensure_views(s, con, plan, err) != VT_ERR_OK)
        return err->code;
    bool cached = false;
    duckdb_prepared_statement ps = cached_prepare(s, con, plan->sql, &cached, err);
    if (!ps) {
        quote_own_sql(plan, err);
        return err->code;
    }
    out->nparams = duckdb_nparams(ps);
    out->ncols = duckdb_prepared_statement_column_count(ps);
    out->param_types = calloc(out->nparams ? out->nparams : 1, sizeof *out->param_types);
    out->param_logical = calloc(out->nparams ? out->nparams : 1, sizeof *out->param_logical);
    out->names = calloc(out->ncols ? out->ncols : 1, sizeof *out->names);
    out->types = calloc(out->ncols ? out->ncols : 1, sizeof *out->types);
    bool ok = out->param_types && out->param_logical && out->names && out->types;
    for (size_t i = 0; ok && i < out->nparams; i++) {
        out->param_types[i] = duckdb_param_type(ps, (idx_t)i + 1);
        if (out->param_types[i] != DUCKDB_TYPE_INVALID)
            out->param_logical[i] = duckdb_param_logical_type(ps, (idx_t)i + 1);
    }
    for (size_t i = 0; ok && i < out->ncols; i++) {
        char *n = (char *)duckdb_prepared_statement_column_name(ps, (idx_t)i);
        out->names[i] = strdup(n ? n : "?column?");
        duckdb_free(n); /* the C API's copy */
        out->types[i] = duckdb_prepared_statement_column_logical_type(ps, (idx_t)i);
        ok = out->names[i] && out->types[i];
    }
    if (!cached)
        duckdb_destroy_prepare(&ps);
    if (!ok) {
        exec_shape_release(out);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    }
    return VT_ERR_OK;
}
