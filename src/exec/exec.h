/*
 * exec: the one execution path. Every front end (HTTP /query, /count and
 * /query/stream today; /sql, the MCP tools and the PostgreSQL listener next)
 * parses its own protocol into a plan, pins the generations the plan reads,
 * picks a sink, and hands all three to this module. exec answers from the
 * index fast path when it can, else runs ONE prepared DuckDB statement and
 * streams its chunks to the sink. Front ends then only map the one error
 * table's codes to their form (HTTP status, JSON-RPC, SQLSTATE; errors.h).
 *
 *   front end                        exec                         sink
 *   ---------                        ----                         ----
 *   exec_pin(name)      ──► generation with one reference
 *   exec_parse_query(json, gen) ──► validated query_request
 *   exec_try_fast(plan, sink, 64)    index fast path, no DuckDB  ──► begin(NULL), row…, end
 *     (any thread; EXEC_FAST_NO/_TOO_BIG: nothing was sent)
 *   exec_run(plan, sink, con)        fast path, else SQL:         ──► begin(res), chunk…, end
 *     (an engine worker, with its own connection)                     or count(n), end
 *                                                                     or fail(err)
 *   exec_unpin()
 *
 * The sink contract. exec calls, in order, either
 *     begin, then any number of chunk (begin got the DuckDB result) or
 *     row / json_row (begin got NULL: rows of the index fast path, typed
 *     cells or JSON objects; only for sinks that set one), then end;
 *  or count, then end (EXEC_COUNT);
 *  or fail, at any point, instead of end.
 * Exactly one of end/fail is called, always (a run that cannot start still
 * calls fail). A sink op returns VT_ERR_OK to go on, VT_ERR_RESULT_CAPPED to
 * say it has all the rows it wants (exec stops fetching and calls end: a
 * capped result is a success); any other code stops the run: exec stops fetching (dropping the DuckDB result cancels the rest of the
 * query) and calls fail with the error the op set (VT_ERR_CLIENT_GONE when the
 * consumer left: nothing is reported to anyone). What fail does is the sink's
 * business: a sink that has sent nothing yet reports the error; one that
 * already streamed part of a result can only cut it short.
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
 * Memory: the plan, the query request and everything they point to belong to
 * the caller (the per-request arena); exec allocates its own temporaries from
 * plan->arena or frees them before returning.
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
    /* EXEC_COUNT: the number of matching rows. */
    enum vt_err (*count)(struct exec_sink *s, uint64_t n, struct vt_error *err);
    /* The result is complete. */
    void (*end)(struct exec_sink *s);
    /* The run failed (err->code != VT_ERR_OK) or was stopped by an op. */
    void (*fail)(struct exec_sink *s, const struct vt_error *err);
};

struct exec_sink {
    const struct exec_sink_ops *ops;
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
void exec_unpin(struct exec_pin *pin);

/* Validates a query body (JSON object; NULL = {}) against gen's schema: the
 * same rules for every front end (query.h). */
enum vt_err exec_parse_query(const json_t *body, const struct cat_generation *gen,
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
 * results): rows go into `out` as a JSON array of objects, up to max_rows rows
 * and about max_bytes bytes (whole rows only); past either cap the run is
 * stopped and `truncated` is set. A failure leaves `err` set and `out` holding
 * whatever was written. The counts path sets `count`. */
struct exec_json_sink {
    struct exec_sink sink;
    struct strbuf *out;             /* the array is appended here */
    uint64_t max_rows;              /* 0 = no row cap */
    size_t max_bytes;               /* 0 = no byte cap */
    /* results */
    uint64_t rows;
    uint64_t count;
    bool truncated;
    bool ended;
    struct vt_error err;
    /* private */
    struct json_rows *enc;
    size_t start;
};

void exec_json_sink_init(struct exec_json_sink *s, struct strbuf *out, uint64_t max_rows,
                         size_t max_bytes);
void exec_json_sink_release(struct exec_json_sink *s);

#endif
