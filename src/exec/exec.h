/*
 * exec: the one execution path. Every front end (HTTP /query, /count,
 * /query/stream and /sql, the MCP tools, the PostgreSQL listener, quack's
 * check) parses its own protocol into an exec_request, picks a sink, and
 * hands both to the driver (exec_call_*, below). The driver does the rest,
 * the same way for all of them:
 *
 *   pin          the dataset's current generation (EXEC_ROWS, EXEC_COUNT), or
 *   snapshot     the SQL gate (src/sql) on the statement, then every dataset
 *                it reads pinned at its current generation (EXEC_SQL)
 *   validate     the query body against the pinned schema (query.h)
 *   fast path    the index answers equality lookups without DuckDB
 *                (exec_try_fast; on the front end's own thread when the
 *                answer is small)
 *   queue        everything else goes to a query-pool worker, as a job of the
 *                class the plan calls for (exec_job_class)
 *   run          ONE prepared DuckDB statement, streamed chunk by chunk into
 *                the sink, within the caps (rows, bytes, deadline)
 *   release      every pin, whatever happened
 *
 * Front ends then only map the one error table's codes to their form (HTTP
 * status, JSON-RPC, SQLSTATE; errors.h), in their sink's fail op: every
 * error of a call, from a dataset that does not exist to a query DuckDB
 * refused, reaches the sink.
 *
 *   front end                              exec                       sink
 *   ---------                              ----                       ----
 *   exec_call_start(call, &request) ─► pin, validate, fast path ─► begin(NULL), row…, end
 *        (the front end's thread;           or request.queue(call, class)
 *         never blocks)
 *   [a query worker] exec_call_resume(call, job)
 *                                    ─► pin (may wait), gate+snapshot, fast path or SQL
 *                                                                   ─► begin(res), chunk…, end
 *                                                                      or count(n), end
 *                                                                      or fail(err)
 *   exec_call_release(call)          ─► unpin (always, once)
 *
 * No DuckDB connection is ever seen above exec: the driver takes the calling
 * worker's own (eng_worker_connection).
 *
 * Below the driver are the primitives it is made of (exec_pin,
 * exec_parse_query, exec_try_fast, exec_run, exec_describe, the snapshot):
 * public for the PostgreSQL listener's extended protocol (Parse, Bind,
 * Describe and Execute are separate messages) and for tests and tools.
 *
 * The sink contract. exec calls, in order, either
 *     begin, then any number of chunk (begin got the DuckDB result) or
 *     row / json_row (begin got NULL: rows of the index fast path, typed
 *     cells or JSON objects; only for sinks that set one), then end;
 *  or count, then end (EXEC_COUNT);
 *  or fail, at any point, instead of end.
 * Exactly one of end/fail is called, always (a run that cannot start still
 * calls fail; the one exception is a call whose queued job the queue dropped,
 * see exec_request.queue). A sink op returns VT_ERR_OK to go on, or
 * VT_ERR_RESULT_CAPPED, without setting err, to say the result was cut:
 * exec stops fetching and calls end (a capped result is a success; the
 * driver then sets exec_call.truncated). Any other code stops the run: exec
 * stops fetching (dropping the DuckDB result cancels the rest of the query)
 * and calls fail with the error the op set (VT_ERR_CLIENT_GONE when the
 * consumer left: nothing is reported to anyone). What fail does is the
 * sink's business: a sink that has sent nothing yet reports the error; one
 * that already streamed part of a result can only cut it short.
 *
 * Cancellation and deadlines belong to the engine job that runs the plan
 * (plan->job): the engine's watchdog interrupts the running DuckDB statement
 * when the job's deadline passes and sets job->timed_out; the owner sets
 * job->cancelled (client gone, shutdown) and interrupts it. exec checks both
 * flags between chunks and ends the run with fail(TIMEOUT) or
 * fail(CLIENT_GONE) -- never with DuckDB's "interrupted" message. A front end
 * may move the job's deadline (HTTP clears it once a stream has started).
 *
 * Per-connection state. A worker thread owns its DuckDB connection for life,
 * so exec keeps what belongs to a connection per thread (exec_session, private
 * to exec.c): the planner setting that late materialization needs per request
 * shape, the row-store cursor, scratch buffers and the cached prepared
 * statements: the same request shape with new values only binds and
 * executes). Nothing about it is visible to front ends.
 *
 * Memory: the request, the plan and everything they point to belong to the
 * caller (the per-request arena) and must outlive the call; exec allocates
 * its own temporaries from the request's arena or frees them before
 * returning.
 */
#ifndef VT_EXEC_EXEC_H
#define VT_EXEC_EXEC_H

#include <duckdb.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "engine/engine.h"
#include "index/index.h"
#include "query/query.h"
#include "sql/sql.h"
#include "util/arena.h"
#include "util/errors.h"
#include "util/strbuf.h"

/* ---------------------------------------------------------------- sinks */

struct exec_sink;

struct exec_sink_ops {
    /* Rows follow. `res` is the DuckDB result whose chunks follow (its
     * columns are the result schema), or NULL when rows come from the index
     * fast path through row (or json_row). */
    enum vt_err (*begin)(struct exec_sink *s, duckdb_result *res, struct vt_error *err);
    enum vt_err (*chunk)(struct exec_sink *s, duckdb_data_chunk chunk, struct vt_error *err);
    /* Optional: one row of the index fast path as typed cells (index.h:
     * the values as DuckDB vectors hold them; row->cols/n the columns to
     * show). The cells are valid during the call only. */
    enum vt_err (*row)(struct exec_sink *s, const struct index_row *row, struct vt_error *err);
    /* Optional, for sinks without `row`: the same row as a JSON object
     * `{"col":value,...}` (index_row_json: the bytes the JSON encoder writes
     * from DuckDB's chunks). A sink with neither takes only DuckDB chunks, so
     * the index fast path never answers rows for it (counts still do). */
    enum vt_err (*json_row)(struct exec_sink *s, const char *obj, size_t len,
                            struct vt_error *err);
    /* Optional, for sinks that write JSON page bodies: the page's rows are
     * range->length bytes of file range->fd (index_pages_range: the index
     * fast path's pre-rendered pages, `{...},{...}`). Called instead of
     * begin and the rows; true when the sink took them (exec then calls
     * end), false when it cannot send a file this time (nothing was sent:
     * exec answers the usual way). range->fd is borrowed for the call. */
    bool (*json_file)(struct exec_sink *s, const struct index_pages_range *range);
    /* EXEC_COUNT: the number of matching rows. */
    enum vt_err (*count)(struct exec_sink *s, uint64_t n, struct vt_error *err);
    /* The result is complete. */
    void (*end)(struct exec_sink *s);
    /* The run failed (err->code != VT_ERR_OK) or was stopped by an op. */
    void (*fail)(struct exec_sink *s, const struct vt_error *err);
};

struct exec_call;

struct exec_sink {
    const struct exec_sink_ops *ops;
    /* The driver's call this sink serves (set by exec_call_start; NULL when
     * a sink is handed to exec_run directly): a sink reads the validated
     * query, the generation and the caps from it (exec_call, below). */
    struct exec_call *call;
};

/* ---------------------------------------------------------------- plans */

/* Where a run's time went, in microseconds, accumulated by exec_run and
 * exec_try_fast when the plan points to one (HTTP's Server-Timing header):
 *   plan     building the SQL text and preparing it (a cached prepared
 *            statement costs only its lookup); a front end adds its own
 *            request validation here
 *   execute  DuckDB starting and running the statement and producing
 *            chunks, or the index lookup of the fast path
 *   encode   the sink's work on the rows (JSON/Arrow encoding, writing) */
struct exec_timing {
    int64_t plan_us;
    int64_t execute_us;
    int64_t encode_us;
    /* A lazy generation's plan: files and row groups left to read of all
     * (pruned by partition values and statistics); lazy_files 0: none. */
    uint32_t lazy_files, lazy_files_read;
    uint32_t lazy_row_groups, lazy_row_groups_read;
};

enum exec_kind {
    EXEC_ROWS,  /* a structured query (/query, /query/stream, MCP query_dataset) */
    EXEC_COUNT, /* rows matching the predicates (/count, MCP count_rows) */
    EXEC_SQL,   /* one checked SQL statement with bound parameters (/sql, pgwire) */
};

/* A dataset name as a SQL statement reads it, and the pinned generation's
 * relation it stands for (cat_generation.relation). */
struct exec_view {
    const char *name;
    const char *relation;
};

struct exec_plan {
    enum exec_kind kind;
    /* EXEC_ROWS, EXEC_COUNT: the request, validated against gen's schema
     * (exec_parse_query), and the generation it reads, pinned by the caller
     * for the whole run. */
    const struct query_request *query;
    struct cat_generation *gen;
    /* EXEC_SQL: the statement (checked by the SQL gate, src/sql) and its
     * parameters (query_plan_bind rules). The datasets it reads by name are
     * `views`: before running, exec makes each name a temporary view of the
     * worker's own connection over the relation of the generation the caller
     * pinned for it (and holds for the whole run), so one statement reads
     * one snapshot, and the SQL runs as the user wrote it. */
    const char *sql;
    const struct query_value *params;
    size_t nparams;
    const struct exec_view *views;
    size_t nviews;
    /* The engine job running the plan (its timed_out/cancelled flags stop
     * the run); NULL outside a job (exec_try_fast on a front end's thread). */
    const struct eng_job *job;
    struct arena *arena;            /* request-lifetime allocations */
    struct exec_timing *timing;     /* NULL: not measured */
    /* EXEC_SQL: a one-off text (values written into it, as PostgreSQL's
     * simple Query sends them): prepared for this run only, so it does not
     * push reusable plans out of the connection's cache. */
    bool one_off;
    /* Every column of the result as DuckDB's text form of its values (a
     * cast to VARCHAR): for sinks whose encoder reads text (CSV,
     * enc_format.text_columns). The statement runs as a subquery. */
    bool text_columns;
    /* EXEC_SQL: `sql` is the client's own text, run as written (not a
     * dialect's rewriting of it). Only then may a DuckDB error quote it
     * ("LINE n: ..." and its caret, eng_error_excerpt); otherwise errors
     * quote no SQL. */
    bool sql_as_written;
};

/* ------------------------------------------------------------ front-end help */

/* A dataset and its current generation, one reference each. */
struct exec_pin {
    struct cat_dataset *ds;
    struct cat_generation *gen;
    void *reads;                /* what cat_generation_read_all holds for it, or NULL */
};

/* Looks `name` up and takes its current generation, waiting for a lazy
 * first build until deadline_ms (0 = do not wait: DATASET_NOT_READY at once).
 * DATASET_NOT_FOUND, DATASET_NOT_READY or DATASET_FAILED otherwise. */
enum vt_err exec_pin(struct cat_catalog *cat, const char *name, int64_t deadline_ms,
                     struct exec_pin *out, struct vt_error *err);
/* Releases both references (NULL-safe, idempotent). */
/* The same, pinned at generation `generation` (a ?generation= parameter;
 * NULL = the current one): the current or the kept previous generation, else
 * GENERATION_NOT_AVAILABLE (409) or GENERATION_GONE (410). */
enum vt_err exec_pin_at(struct cat_catalog *cat, const char *name, const char *generation,
                        int64_t deadline_ms, struct exec_pin *out, struct vt_error *err);
void exec_unpin(struct exec_pin *pin);

/* Validates a query body (JSON object; NULL = {}) against gen's schema: the
 * same rules for every front end (query.h). */
enum vt_err exec_parse_query(const json_t *body, const struct cat_generation *gen,
                             const struct query_options *opts, struct arena *arena,
                             struct query_request *out, struct vt_error *err);
/* The same for a body scanned as the lookup shape (query.h): the request
 * query_small_parse fills, or, when it declines, exec_parse_query's over the
 * text's tree. */
enum vt_err exec_parse_small(const struct query_small *small, const struct cat_generation *gen,
                             const struct query_options *opts, struct arena *arena,
                             struct query_request *out, struct vt_error *err);

/* ------------------------------------------------------------------- runs */

enum exec_fast {
    EXEC_FAST_NO,      /* the index cannot answer: nothing was sent */
    EXEC_FAST_DONE,    /* answered: the sink got end or fail */
    EXEC_FAST_TOO_BIG, /* it could, with more than max_rows rows: nothing was sent */
};

/* The index fast path alone (EXEC_ROWS and EXEC_COUNT on a generation whose
 * index is built and covers every predicate; src/index does the work).
 * Never touches DuckDB, so it may run on a thread that must not block:
 * max_rows bounds the work done there (SIZE_MAX: no bound), and without a
 * job (plan->job NULL: not on an engine worker) it never waits for the disk
 * (EXEC_FAST_TOO_BIG when the index's bytes are not in the page cache). */
enum exec_fast exec_try_fast(const struct exec_plan *plan, struct exec_sink *sink,
                             size_t max_rows);

/* The engine job class a plan runs as (engine.h), from what it must read:
 * a stream is STREAM; a statement of /sql, any query of a lazy generation
 * (files are scanned) and, on a table of EXEC_LONG_MIN_ROWS rows or more, a
 * grouped, aggregated, sorted or DISTINCT query or one that returns more than
 * EXEC_LONG_ROWS rows are LONG; everything else (pages, counts, point
 * queries) is SHORT. Cheap: the front end calls it before queueing. */
#define EXEC_LONG_MIN_ROWS 100000
#define EXEC_LONG_ROWS 10000
enum eng_job_class exec_job_class(const struct exec_plan *plan);

/* Runs the plan on `con` (the calling engine worker's connection): the fast
 * path when it applies, else the SQL statement. Always ends the sink. */
void exec_run(const struct exec_plan *plan, struct exec_sink *sink, duckdb_connection con);

/* EXEC_SQL: what running the plan would take and return, without running it
 * (the PostgreSQL listener's Describe): the statement is prepared on `con`
 * over the plan's views, through the same per-connection cache exec_run then
 * finds it in. */
struct exec_shape {
    size_t nparams;
    duckdb_type *param_types;       /* DUCKDB_TYPE_INVALID: DuckDB cannot tell yet */
    duckdb_logical_type *param_logical; /* the same with children (a list's element
                                         * type); NULL where DuckDB cannot tell */
    size_t ncols;
    char **names;
    duckdb_logical_type *types;
};

enum vt_err exec_describe(const struct exec_plan *plan, duckdb_connection con,
                          struct exec_shape *out, struct vt_error *err);
void exec_shape_release(struct exec_shape *s);

/* Frees the calling thread's session (cached prepared statements, temporary
 * view names, scratch). A thread that ends frees it by itself; a thread that
 * goes on (main, in tests and tools) calls this before closing the DuckDB
 * connection it ran exec_run on. Safe to call when there is none. */
void exec_thread_release(void);

/* The prepared-statement cache of the SQL path (per worker connection; see
 * exec.c): lookups that reused a plan, that prepared one, and plans pushed
 * out by the LRU bound. */
void exec_plan_cache_stats(uint64_t *out_hits, uint64_t *out_misses, uint64_t *out_evictions);

/* ------------------------------------------------------- a bounded JSON sink
 * For front ends that answer with one bounded JSON document (MCP tool
 * results): rows go into `out` as a JSON array of objects. Under the driver,
 * the call's caps.max_rows is the driver's and caps.max_bytes this sink's:
 * whole rows only, the row that would pass about max_bytes bytes is left out
 * and the result is cut there (RESULT_CAPPED: the call says truncated). A
 * failure leaves `err` set and `out` holding whatever was written; ended
 * says end was called. The counts path sets `count`. */
struct exec_json_sink {
    struct exec_sink sink;
    struct strbuf *out;             /* the array is appended here */
    size_t max_bytes;               /* 0 = no byte cap (set from the call's caps at begin) */
    /* Optional: called once the sink has ended or failed (the result is
     * complete), with `user` for the owner. */
    void (*done)(struct exec_json_sink *s);
    void *user;
    /* results */
    uint64_t rows;
    uint64_t count;
    bool ended;
    struct vt_error err;
    /* private */
    struct json_rows *enc;
    size_t start;
};

void exec_json_sink_init(struct exec_json_sink *s, struct strbuf *out);
void exec_json_sink_release(struct exec_json_sink *s);

/* ------------------------------------------------------------- snapshots
 *
 * What the driver does with user SQL, public for the PostgreSQL listener's
 * extended protocol (its Parse, Bind and Execute are separate messages):
 * check it with the gate, then pin each dataset it reads at its current
 * generation (one snapshot for the whole statement, whatever reloads happen
 * meanwhile) and name those generations as the views exec_run makes on the
 * worker's connection (snapshot.c). */

#define EXEC_MAX_DATASETS 64    /* datasets one statement may read */

struct exec_snapshot {
    struct exec_pin pins[EXEC_MAX_DATASETS];
    struct exec_view views[EXEC_MAX_DATASETS]; /* views[i] reads pins[i] */
    size_t n;
    /* With a dialect (exec_snapshot_take_opts): see sql_checked. */
    bool reads_catalog;
    char *rewritten;
    struct sql_lookup *lookup;
};

/* Gate + pins, on a query worker (`con` is its connection; deadline_ms as in
 * exec_pin: how long a lazy dataset's first build may be waited for). On
 * VT_ERR_OK the caller runs an EXEC_SQL plan with views/n and then releases
 * the snapshot; on failure nothing is held. `out` must be zeroed the first
 * time; release makes it reusable. */
enum vt_err exec_snapshot_take(struct cat_catalog *cat, duckdb_connection con, const char *sql,
                               int64_t deadline_ms, struct exec_snapshot *out,
                               struct vt_error *err);
/* The same with gate options (NULL = exec_snapshot_take). */
enum vt_err exec_snapshot_take_opts(struct cat_catalog *cat, duckdb_connection con,
                                    const char *sql, const struct sql_gate_options *opts,
                                    int64_t deadline_ms, struct exec_snapshot *out,
                                    struct vt_error *err);
/* Pins `names` (the depends_on of a statement the gate passed earlier: a
 * prepared statement bound later) into `out` as exec_snapshot_take does. */
enum vt_err exec_snapshot_pin(struct cat_catalog *cat, char *const *names, size_t n,
                              int64_t deadline_ms, struct exec_snapshot *out,
                              struct vt_error *err);
void exec_snapshot_release(struct exec_snapshot *s);
/* exec_snapshot_take (and _take_opts with NULL options) remembers, per
 * thread, the gate's answers for the statements it let through while the
 * catalog's set of names is unchanged (cat_names_epoch); a thread that goes
 * on after its work (tests, tools) frees them. */
void exec_snapshot_thread_release(void);

/* The gate alone, as the driver runs it (the plain gate of /sql, with the
 * catalog's dataset names), on `con`. For an entry point that runs the
 * statement itself (quack). */
enum vt_err exec_sql_check(struct cat_catalog *cat, duckdb_connection con, const char *sql,
                           struct vt_error *err);

/* ============================================================= the driver */

#define EXEC_NO_CAP (-1)

/* The limits of one call, decided by the front end from its configuration
 * (and the client's request, never above it). */
struct exec_caps {
    /* Rows handed to the sink at most; EXEC_NO_CAP (negative): none, and
     * explicitly so (a zeroed struct caps at 0 rows). The driver cuts the
     * chunk that passes it; a result with more rows ends there with
     * exec_call.truncated set. Paging (/query's page_size) is the query's
     * own business and not a cap. */
    int64_t max_rows;
    /* Bytes a bounded sink writes at most (0: no cap): whole rows only; the
     * sink enforces it (exec_json_sink) and the call says truncated. */
    size_t max_bytes;
    /* Monotonic ms (time_mono_ms; 0: none): how long the driver may wait
     * for what it pins (a lazy dataset's first build, S3 objects made
     * local). The statement itself is bounded by the engine job's deadline,
     * which the queue sets from the same value. */
    int64_t deadline_ms;
};

/* What a front end asks for. Every pointer must stay valid until
 * exec_call_release. */
struct exec_request {
    enum exec_kind kind;
    struct cat_catalog *catalog;
    /* EXEC_ROWS, EXEC_COUNT: the dataset and the query body (a JSON object;
     * NULL = {}), validated against the pinned generation with `opts`
     * (opts.mode QUERY_COUNT for EXEC_COUNT). The call holds a reference to
     * body until it is released. */
    const char *dataset;
    const char *generation;         /* ?generation= (NULL: the current one; exec_pin_at) */
    json_t *body;
    /* Instead of body: a body the front end scanned as the lookup shape
     * (query_small_scan; its text must outlive the call). The driver
     * validates it with query_small_parse and, when that declines, loads
     * the text into a tree (json_small_load) and validates that as it
     * would `body`. */
    const struct query_small *small;
    struct query_options opts;
    /* EXEC_SQL: the statement, checked by the gate (gate options NULL: the
     * plain gate of /sql) with every dataset it reads pinned for the run,
     * and its parameters when the gate options allow them. */
    const char *sql;
    const struct sql_gate_options *gate;
    const struct query_value *params;
    size_t nparams;
    /* EXEC_SQL, optional: the snapshot the front end took or pinned itself
     * (pgwire: the gate ran at Parse, the datasets were pinned at Bind);
     * `sql` is then the text to run as it is (already rewritten), the driver
     * neither checks nor pins, and the front end releases the snapshot. */
    const struct exec_snapshot *snapshot;
    /* EXEC_SQL: a one-off text (exec_plan.one_off). */
    bool one_off;
    /* The sink reads every column as text (exec_plan.text_columns). */
    bool text_columns;

    struct exec_caps caps;
    struct exec_sink *sink;
    struct arena *arena;            /* the request's lifetime */
    struct exec_timing *timing;     /* NULL: not measured */
    /* How the call reaches a query worker when it must wait or run DuckDB.
     * The hook queues a job of class `cls` (that job runs
     * exec_call_resume(call, its eng_job)) or, when it cannot (pool full),
     * calls exec_call_refuse(call, err). A queue may also drop the job
     * (cancelled or past its deadline while queued) after answering the
     * client itself: the sink then never hears of it. NULL: the calling
     * thread is a query worker itself and may block; exec_call_start runs
     * the whole call there. */
    void (*queue)(struct exec_call *call, enum eng_job_class cls);
    void *user;                     /* the front end's, for its hook and sink */
    /* Optional hooks of EXEC_ROWS and EXEC_COUNT calls (NULL: none).
     * checked: the dataset is pinned and the query validated, nothing ran
     *   yet; on whichever thread planned it (no DuckDB: it may be the front
     *   end's). Any code but VT_ERR_OK fails the call with err (HTTP
     *   answers a GET whose ETag matches 304 this way).
     * before_run: on the query worker, right before the statement runs:
     *   more work for the same call on the worker's connection (exec_run of
     *   another plan, e.g. the total of "include_total"). A failure fails
     *   the call. Such a call is never answered inline: it is queued. */
    enum vt_err (*checked)(struct exec_call *call, struct vt_error *err);
    enum vt_err (*before_run)(struct exec_call *call, const struct eng_job *job,
                              struct vt_error *err);
};

/* One call, from start to release; the front end embeds it in its
 * per-request state (zeroed). Fields above `private` are read-only for the
 * front end and its sink, and valid once set. */
struct exec_call {
    struct exec_request rq;
    /* EXEC_ROWS, EXEC_COUNT: the pinned dataset and generation (NULL until
     * pinned) and the validated query (NULL until validated). */
    struct cat_dataset *ds;
    struct cat_generation *gen;
    const struct query_request *query;
    /* Past validation (pin or snapshot, gate, query): from here on a
     * failure is the run's, not the request's (HTTP times only runs). */
    bool planned;
    /* The result: rows handed to the sink, and whether the caps cut it. */
    uint64_t rows;
    bool truncated;
    /* private */
    struct exec_pin pin;
    struct query_request qr;
    struct exec_snapshot *snap;
    struct exec_plan plan;
    struct exec_sink caps;          /* the sink exec_run sees: the caps in front of rq.sink */
    bool finished, released;
};

/* Starts a call on the front end's thread (or, with rq->queue NULL, runs it
 * whole on this worker thread). Copies *rq into the call. Never blocks when
 * rq->queue is set: the dataset is pinned only if it is ready, the query
 * validated and the index fast path tried with at most EXEC_INLINE_MAX_ROWS
 * rows; anything else is queued. Either way the sink hears the outcome. */
#define EXEC_INLINE_MAX_ROWS 64
void exec_call_start(struct exec_call *call, const struct exec_request *rq);
/* On a query worker, from the job rq.queue submitted (job: that job, whose
 * flags stop the run; NULL when there is none): finishes the call. */
void exec_call_resume(struct exec_call *call, const struct eng_job *job);
/* The queue hook could not queue the call: the sink fails with err. */
void exec_call_refuse(struct exec_call *call, const struct vt_error *err);
/* Releases what the call holds (NULL-safe, idempotent). The driver calls it
 * itself as soon as the sink's end or fail returned (so `gen` and `query`
 * are valid inside the sink's ops, not after); the front end calls it when
 * its request is freed, for a call that never ran (a job the queue dropped). */
void exec_call_release(struct exec_call *call);
/* The fair-queuing flow of a call the driver queues (eng_job.flow), for
 * rq.queue to pass on: the shape of the request (kind, dataset, columns,
 * predicates' columns and operators, grouping, aggregations, order, paging;
 * never the values), or the text of a SQL statement. Requests of one shape
 * are one flow, so the workers' time is shared fairly between shapes. */
uint64_t exec_call_flow(const struct exec_call *call);

#endif
