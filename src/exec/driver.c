/*
 * The driver (exec.h, "the driver"): one request of any front end from start
 * to release. Pin or snapshot, validate, fast path, queue by job class, run,
 * release, within one set of caps; the front end only parsed its protocol
 * and chose the sink.
 *
 * The caps sink. exec_run and exec_try_fast see `call->caps`, a sink of ours
 * in front of the front end's: it counts the rows that go through, cuts the
 * chunk that passes caps.max_rows (the rows beyond it are the proof that the
 * result was truncated) and turns a sink's RESULT_CAPPED into
 * call->truncated. So every front end gets the same row cap and the same
 * truncation flag, whichever path answered.
 */
#include "exec/exec.h"

#include <string.h>

#include "util/timeutil.h"

/* ---------------------------------------------------------- the caps sink */

static struct exec_call *call_of(struct exec_sink *s)
{
    return (struct exec_call *)((char *)s - offsetof(struct exec_call, caps));
}

static struct exec_sink *inner(struct exec_call *c)
{
    return c->rq.sink;
}

static enum vt_err caps_begin(struct exec_sink *s, duckdb_result *res, struct vt_error *err)
{
    struct exec_sink *k = inner(call_of(s));
    return k->ops->begin(k, res, err);
}

/* A sink's answer: RESULT_CAPPED (err untouched) is a cut result. */
static enum vt_err seen(struct exec_call *c, enum vt_err rc)
{
    if (rc == VT_ERR_RESULT_CAPPED)
        c->truncated = true;
    return rc;
}

static enum vt_err caps_chunk(struct exec_sink *s, duckdb_data_chunk chunk, struct vt_error *err)
{
    struct exec_call *c = call_of(s);
    struct exec_sink *k = inner(c);
    uint64_t n = duckdb_data_chunk_get_size(chunk);
    bool cut = false;
    if (c->rq.caps.max_rows >= 0) {
        uint64_t cap = (uint64_t)c->rq.caps.max_rows;
        uint64_t room = c->rows < cap ? cap - c->rows : 0;
        if (n > room && room == 0) {
            c->truncated = true;
            return VT_ERR_RESULT_CAPPED;
        }
        if (n > room) {
            cut = true;
            n = room;
            duckdb_data_chunk_set_size(chunk, n);
        }
    }
    enum vt_err rc = seen(c, k->ops->chunk(k, chunk, err));
    if (rc == VT_ERR_OK)
        c->rows += n;
    if (rc == VT_ERR_OK && cut) {
        c->truncated = true;
        return VT_ERR_RESULT_CAPPED;
    }
    return rc;
}

/* Whether the call already handed max_rows rows on (then it is cut). */
static bool at_row_cap(struct exec_call *c)
{
    if (c->rq.caps.max_rows >= 0 && c->rows >= (uint64_t)c->rq.caps.max_rows) {
        c->truncated = true;
        return true;
    }
    return false;
}

/* What the inner sink answered for one row, the row counted when taken. */
static enum vt_err row_taken(struct exec_call *c, enum vt_err rc)
{
    rc = seen(c, rc);
    if (rc == VT_ERR_OK)
        c->rows++;
    return rc;
}

static enum vt_err caps_json_row(struct exec_sink *s, const char *obj, size_t len,
                                 struct vt_error *err)
{
    struct exec_call *c = call_of(s);
    struct exec_sink *k = inner(c);
    if (at_row_cap(c))
        return VT_ERR_RESULT_CAPPED;
    return row_taken(c, k->ops->json_row(k, obj, len, err));
}

/* A row of typed cells (sinks with `row`; exec renders JSON for the others). */
static enum vt_err caps_row(struct exec_sink *s, const struct index_row *row,
                            struct vt_error *err)
{
    struct exec_call *c = call_of(s);
    struct exec_sink *k = inner(c);
    if (at_row_cap(c))
        return VT_ERR_RESULT_CAPPED;
    return row_taken(c, k->ops->row ? k->ops->row(k, row, err) : VT_ERR_INTERNAL);
}

/* The pre-rendered rows of a page, when the sink takes files and they fit
 * under the row cap whole (else the usual way, which cuts). */
static bool caps_json_file(struct exec_sink *s, const struct index_pages_range *range)
{
    struct exec_call *c = call_of(s);
    struct exec_sink *k = inner(c);
    if (!k->ops->json_file ||
        (c->rq.caps.max_rows >= 0 && c->rows + range->rows > (uint64_t)c->rq.caps.max_rows))
        return false;
    if (!k->ops->json_file(k, range))
        return false;
    c->rows += range->rows;
    return true;
}

static enum vt_err caps_count(struct exec_sink *s, uint64_t n, struct vt_error *err)
{
    struct exec_sink *k = inner(call_of(s));
    return k->ops->count(k, n, err);
}

static void caps_end(struct exec_sink *s)
{
    struct exec_call *c = call_of(s);
    c->finished = true;
    inner(c)->ops->end(inner(c));
}

static void caps_fail(struct exec_sink *s, const struct vt_error *err)
{
    struct exec_call *c = call_of(s);
    c->finished = true;
    inner(c)->ops->fail(inner(c), err);
}

static const struct exec_sink_ops caps_ops = {
    .begin = caps_begin,
    .chunk = caps_chunk,
    .json_row = caps_json_row,
    .json_file = caps_json_file,
    .count = caps_count,
    .end = caps_end,
    .fail = caps_fail,
};

/* A sink that takes typed cells gets them (with the same caps). */
static const struct exec_sink_ops caps_ops_cells = {
    .begin = caps_begin,
    .chunk = caps_chunk,
    .row = caps_row,
    .count = caps_count,
    .end = caps_end,
    .fail = caps_fail,
};

/* Without json_row (or row) the fast path must not offer rows: the caps sink
 * has them only when the front end's sink has. */
static const struct exec_sink_ops caps_ops_chunks = {
    .begin = caps_begin,
    .chunk = caps_chunk,
    .count = caps_count,
    .end = caps_end,
    .fail = caps_fail,
};

/* ------------------------------------------------------------- the steps */

/* Fails the sink (once) and lets go of what the call holds. */
static void fail(struct exec_call *c, const struct vt_error *err)
{
    if (!c->finished)
        c->caps.ops->fail(&c->caps, err);
    exec_call_release(c);
}

/* Pins the dataset and validates the query (EXEC_ROWS, EXEC_COUNT), once.
 * deadline 0: do not wait for a lazy first build (DATASET_NOT_READY). */
static enum vt_err plan_rows(struct exec_call *c, int64_t deadline, struct vt_error *err)
{
    if (c->planned)
        return VT_ERR_OK;
    if (!c->pin.gen &&
        exec_pin_at(c->rq.catalog, c->rq.dataset, c->rq.generation, deadline, &c->pin, err) !=
            VT_ERR_OK)
        return err->code;
    c->ds = c->pin.ds;
    c->gen = c->pin.gen;
    int64_t t0 = c->rq.timing ? time_mono_us() : 0;
    enum vt_err rc =
        c->rq.small
            ? exec_parse_small(c->rq.small, c->gen, &c->rq.opts, c->rq.arena, &c->qr, err)
            : exec_parse_query(c->rq.body, c->gen, &c->rq.opts, c->rq.arena, &c->qr, err);
    if (c->rq.timing)
        c->rq.timing->plan_us += time_mono_us() - t0;
    if (rc != VT_ERR_OK)
        return rc;
    c->query = &c->qr;
    c->plan = (struct exec_plan){
        .kind = c->rq.kind,
        .query = &c->qr,
        .gen = c->gen,
        .arena = c->rq.arena,
        .timing = c->rq.timing,
        .text_columns = c->rq.text_columns,
    };
    c->planned = true;
    return c->rq.checked ? c->rq.checked(c, err) : VT_ERR_OK;
}

/* The gate and the snapshot (EXEC_SQL), on a worker. */
static enum vt_err plan_sql(struct exec_call *c, duckdb_connection con, struct vt_error *err)
{
    if (c->planned)
        return VT_ERR_OK;
    /* A front end that took its snapshot itself (exec_request.snapshot)
     * already passed the gate with it. */
    const struct exec_snapshot *snap = c->rq.snapshot;
    const char *sql = c->rq.sql;
    if (!snap) {
        if (!c->snap && !(c->snap = arena_calloc(c->rq.arena, sizeof *c->snap)))
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        int64_t t0 = c->rq.timing ? time_mono_us() : 0;
        enum vt_err rc = exec_snapshot_take_opts(c->rq.catalog, con, c->rq.sql, c->rq.gate,
                                                 c->rq.caps.deadline_ms, c->snap, err);
        if (c->rq.timing)
            c->rq.timing->plan_us += time_mono_us() - t0;
        if (rc != VT_ERR_OK)
            return rc;
        snap = c->snap;
        if (c->snap->rewritten)
            sql = c->snap->rewritten;
    }
    c->plan = (struct exec_plan){
        .kind = EXEC_SQL,
        .sql = sql,
        .params = c->rq.params,
        .nparams = c->rq.nparams,
        .views = snap->views,
        .nviews = snap->n,
        .arena = c->rq.arena,
        .timing = c->rq.timing,
        .one_off = c->rq.one_off,
        .text_columns = c->rq.text_columns,
        /* a front end's own snapshot runs its dialect's text (pgwire) */
        .sql_as_written = !c->rq.snapshot && !snap->rewritten,
    };
    c->planned = true;
    return VT_ERR_OK;
}

void exec_call_start(struct exec_call *c, const struct exec_request *rq)
{
    memset(c, 0, sizeof *c);
    c->rq = *rq;
    if (c->rq.body)
        json_incref(c->rq.body);
    c->rq.sink->call = c;
    c->caps.ops = rq->sink->ops->row        ? &caps_ops_cells
                  : rq->sink->ops->json_row ? &caps_ops
                                            : &caps_ops_chunks;
    c->caps.call = c;
    if (!c->rq.queue) {
        exec_call_resume(c, NULL);
        return;
    }
    if (c->rq.kind == EXEC_SQL) {
        /* The gate parses with DuckDB: a worker's job. */
        c->rq.queue(c, ENG_JOB_LONG);
        return;
    }
    struct vt_error err = {0};
    if (plan_rows(c, 0, &err) != VT_ERR_OK) {
        if (err.code == VT_ERR_DATASET_NOT_READY) {
            /* A worker may wait for the first build of a lazy dataset. */
            c->rq.queue(c, c->rq.opts.mode == QUERY_STREAM ? ENG_JOB_STREAM : ENG_JOB_LONG);
            return;
        }
        fail(c, &err);
        return;
    }
    /* A published generation whose index answers with a few rows needs no
     * worker at all (unless the front end has work for one first). */
    if (!c->rq.before_run &&
        exec_try_fast(&c->plan, &c->caps, EXEC_INLINE_MAX_ROWS) == EXEC_FAST_DONE) {
        exec_call_release(c);
        return;
    }
    c->rq.queue(c, exec_job_class(&c->plan));
}

void exec_call_resume(struct exec_call *c, const struct eng_job *job)
{
    if (c->finished || c->released)
        return;
    struct vt_error err = {0};
    duckdb_connection con = eng_worker_connection();
    if (!con) {
        vt_error_set(&err, VT_ERR_INTERNAL, "the call runs outside a query worker");
        fail(c, &err);
        return;
    }
    enum vt_err rc = c->rq.kind == EXEC_SQL ? plan_sql(c, con, &err)
                                            : plan_rows(c, c->rq.caps.deadline_ms, &err);
    if (rc != VT_ERR_OK) {
        fail(c, &err);
        return;
    }
    c->plan.job = job;
    if (c->rq.before_run && c->rq.kind != EXEC_SQL && c->rq.before_run(c, job, &err) != VT_ERR_OK) {
        fail(c, &err);
        return;
    }
    exec_run(&c->plan, &c->caps, con);
    exec_call_release(c);
}

void exec_call_refuse(struct exec_call *c, const struct vt_error *err)
{
    fail(c, err);
}

/* FNV-1a over the fields of a request's shape. */
static uint64_t mix(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        h = (h ^ (v & 0xff)) * 0x100000001b3ull;
    return h;
}

static uint64_t mix_ref(uint64_t h, const struct query_ref *r)
{
    return mix(mix(h, (uint64_t)r->is_agg << 1 | r->is_group), r->is_group ? r->grp : r->idx);
}

uint64_t exec_call_flow(const struct exec_call *c)
{
    uint64_t h = mix(0xcbf29ce484222325ull, c->rq.kind);
    if (c->rq.kind == EXEC_SQL) {
        for (const char *p = c->rq.sql ? c->rq.sql : ""; *p; p++)
            h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
        return h;
    }
    const struct query_request *q = c->query;
    h = mix(h, (uint64_t)(uintptr_t)c->ds);
    if (!q)
        return h;
    h = mix(mix(mix(h, q->mode), q->distinct), q->count_result);
    for (size_t i = 0; i < q->ncolumns; i++)
        h = mix(h, q->columns[i]);
    for (size_t i = 0; i < q->npreds; i++)
        h = mix(mix_ref(h, &q->preds[i].ref), q->preds[i].op);
    for (size_t i = 0; i < q->ngroup; i++)
        h = mix(mix(h, q->groups[i].col), q->groups[i].bucket);
    for (size_t i = 0; i < q->naggs; i++)
        h = mix(mix(h, q->aggs[i].op), q->aggs[i].col);
    for (size_t i = 0; i < q->norder; i++)
        h = mix(mix_ref(h, &q->order[i].ref), q->order[i].desc);
    return mix(mix(h, (uint64_t)q->max_rows), (uint64_t)q->limit);
}

void exec_call_release(struct exec_call *c)
{
    if (!c || c->released)
        return;
    c->released = true;
    if (c->snap)
        exec_snapshot_release(c->snap);
    exec_unpin(&c->pin);
    c->ds = NULL;
    c->gen = NULL;
    if (c->rq.body)
        json_decref(c->rq.body);
    c->rq.body = NULL;
}
