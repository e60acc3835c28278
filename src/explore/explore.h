/*
 * explore: what someone exploring a dataset asks beyond rows -- how a column
 * looks (GET /datasets/{name}/summary), which values a column takes among
 * the rows a filter selects (POST /datasets/{name}/facets), and how many rows
 * a paged query selects in all ("include_total"). Front ends (src/api) call
 * these on an engine worker with its DuckDB connection; everything runs
 * through the execution layer (src/exec: one statement per run, the job's
 * deadline and cancellation, the generation pinned by the caller), never
 * DuckDB directly. Statements are generated here from the schema: identifiers
 * quoted, aliases ours, client values bound through src/query.
 *
 * Results are read from the JSON our row encoder writes and copied into the
 * answer as written (explore_int.h): a DECIMAL(10,2) min stays 42.40, a
 * HUGEINT stays exact, timestamps are RFC 3339 as in every other answer.
 *
 * Summary (one statement, two scans, computed once per generation and cached
 * here, keyed by the generation's id; EXPLORE_SUMMARY_CACHE entries, least
 * recently used out):
 *   {"name", "rows", "generation", "columns": [{"name", "type", "logical",
 *    "count" (non-null), "null_count", "approx_distinct" (HyperLogLog),
 *    "min", "max" (orderable scalars), "mean", "stddev" (numbers: sample
 *    standard deviation), "top_values": [{"value", "count"}] (the
 *    EXPLORE_TOP_VALUES most frequent, most first, ties by value text, when
 *    approx_distinct <= EXPLORE_LOW_CARDINALITY), "histogram": {"buckets":
 *    [{"lo", "hi", "count"}]} (numbers, dates, times, timestamps)}]}.
 *   A key that does not apply to a column is null. Histogram buckets have
 *   equal widths and cover [min, max] of the finite values; every bucket is
 *   [lo, hi). The width is the smallest "nice" step giving at most about
 *   EXPLORE_HIST_BUCKETS buckets (1, 2, 2.5, 5 x 10^k for numbers -- whole
 *   numbers for integers; seconds, minutes, 15 minutes, hours, days, weeks
 *   from Monday, ... for times; whole days for dates), and the first edge is
 *   min rounded down to a multiple of it, so edges read 10, 15, 20 and
 *   06:00, 12:00. Counts sum to the non-null finite values. Moments and top
 *   values leave NaN and infinities out.
 *
 * Facets (one statement: GROUPING SETS over the selected rows, one set per
 * column, ranked with window functions):
 *   request  {"predicates": [...] (the query language's), "columns": [..]
 *             (1..EXPLORE_MAX_FACET_COLUMNS distinct names), "limit": n
 *             (1..EXPLORE_MAX_FACET_LIMIT, default 10)}
 *   answer   {"rows": rows selected, "facets": [{"column", "values":
 *             [{"value", "count"}] (most first, ties by value, NULL last and
 *             counted as a value), "distinct": values in all (NULL included),
 *             "other_values": distinct - shown, "other_rows": rows holding
 *             them}]} in the request's column order.
 */
#ifndef VT_EXPLORE_EXPLORE_H
#define VT_EXPLORE_EXPLORE_H

#include <duckdb.h>
#include <jansson.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "exec/exec.h"
#include "util/arena.h"
#include "util/errors.h"
#include "util/strbuf.h"

#define EXPLORE_TOP_VALUES 10
#define EXPLORE_LOW_CARDINALITY 100
#define EXPLORE_HIST_BUCKETS 20
#define EXPLORE_SUMMARY_CACHE 64
/* Columns summarised per statement. DuckDB gives every aggregate with a
 * FILTER a chunk of all the statement's aggregate inputs, so what one
 * statement allocates grows with the square of its columns (measured, 20
 * rows: 20 columns 1.2 GB of address space, 50 columns 7 GB, 150 columns
 * 37 GB, past the allocation budget: 500 internal); in statements of 8
 * columns it grows linearly. */
#define EXPLORE_SUMMARY_COLUMNS 8
#define EXPLORE_MAX_FACET_COLUMNS 32
#define EXPLORE_MAX_FACET_LIMIT 1000
#define EXPLORE_DEFAULT_FACET_LIMIT 10
/* The rows one statement of ours may return, as JSON text (a strbuf max). */
#define EXPLORE_MAX_RESULT_BYTES (64u * 1024 * 1024)

/* What every call needs: the pinned generation (the caller holds it for the
 * call), the dataset's name (for answers), the engine job running the call
 * (deadline and cancellation; NULL outside a job), the request's arena and
 * where to add timing (may be NULL). */
struct explore_ctx {
    struct cat_generation *gen;
    const char *dataset;
    const struct eng_job *job;
    struct arena *arena;
    struct exec_timing *timing;
};

/* Runs `plan` on the calling query worker's connection (eng_worker_connection)
 * and leaves its rows in `out` as a JSON array of objects (out's max bounds
 * them: past it LIMIT_EXCEEDED), or its count in *out_count for EXEC_COUNT
 * (out_count may be NULL otherwise). DuckDB's messages lose the statement
 * text it appends. */
enum vt_err explore_run_json(const struct exec_plan *plan, struct strbuf *out,
                             uint64_t *out_count, struct vt_error *err);

/* "include_total": how many rows `plan` (a paged EXEC_ROWS plan) selects over
 * all pages (query_total_request: an index or statistics count when it can),
 * capped by the request's limit. On a query worker. */
enum vt_err explore_total(const struct exec_plan *plan, int64_t *out, struct vt_error *err);

/* GET /summary: the summary of the columns named in `columns` (NULL or "":
 * all; a comma-separated list, or a JSON array of names for names holding
 * commas), from the cache or computed now (on a query worker). Appends the
 * JSON answer to out. UNKNOWN_COLUMN / INVALID_QUERY for a bad selection. */
enum vt_err explore_summary(const struct explore_ctx *x, const char *columns, struct strbuf *out,
                            struct vt_error *err);

/* POST /facets: validates `body` (the request above; 400s with slots named
 * as the query language does) and appends the JSON answer to out (on a
 * query worker). */
enum vt_err explore_facets(const struct explore_ctx *x, const json_t *body, struct strbuf *out,
                           struct vt_error *err);

/* Validation only (no DuckDB; any thread): the same checks explore_facets
 * makes, so a front end can answer 400 before queueing a job. */
enum vt_err explore_facets_check(const struct cat_generation *gen, const json_t *body,
                                 struct arena *arena, struct vt_error *err);

/* Summaries cached, and computed since start (for tests and metrics). */
void explore_cache_stats(uint64_t *out_entries, uint64_t *out_computed);
/* Drops every cached summary (process exit, tests). */
void explore_cache_clear(void);

#endif
