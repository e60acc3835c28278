/*
 * query: the query request compiler. It sits between the HTTP/MCP handlers and
 * the engine: it turns the JSON body of POST /datasets/{name}/query (also
 * /query/stream, /count and the MCP query tools) into a validated, normalised
 * request (query_parse), and that request into ONE SQL statement with bound
 * parameters (query_build_sql). It is pure: no I/O, no DuckDB connection.
 *
 * Safety rule: no client text reaches SQL text. Column names are resolved
 * against the generation's schema and the schema's own spelling is quoted;
 * aliases are quoted; every predicate value is a bound parameter wrapped in an
 * explicit CAST (so DuckDB never infers a parameter's type from the column:
 * `"tiny" = ?` would make the parameter TINYINT and 1000 would fail to bind,
 * 3.5 would round). LIMIT and OFFSET are the only numbers written into the
 * text: they are int64 values computed here, and DuckDB plans Top-N only for
 * constant limits (measured: ORDER BY x LIMIT 10 over 5M rows, 32 ms with
 * literals, 800 ms with `LIMIT ?`). Bucket widths and quantiles' q are bound
 * parameters like values. A plain first page (no predicate, order,
 * grouping or DISTINCT) is the exception:
 * its limit is a bound parameter, which keeps DuckDB's late materialization
 * away from it (query_sql.c, add_limit).
 *
 * Memory: everything the request and the plan point to is allocated from the
 * caller's arena (the per-request arena) or is borrowed from the schema, which
 * must outlive them (the handler holds the generation that owns it). The JSON
 * body may be freed right after query_parse. Nothing needs a release call.
 *
 * Semantics decided here (the spec leaves them open; docs/architecture.md "Queries"):
 *  - Unknown keys at any level (top level, predicate, order_by, aggregation)
 *    are 400 unknown_field in every mode: a typo such as "predicate" must not
 *    silently return unfiltered rows. opts->extra_fields lists top-level keys
 *    to skip (the MCP tools pass "name" beside the query fields).
 *  - One parser for every mode: the same body is valid or invalid everywhere.
 *    QUERY_COUNT counts the rows matching `predicates` and ignores the other
 *    (validated) fields, limit included; QUERY_STREAM ignores page and
 *    page_size, honours limit.
 *  - A JSON null for a field means "absent" (limit: null means unlimited).
 *  - `columns` is ignored (only its shape is checked) when group_by is set.
 *    Duplicate names in columns or group_by are 400 invalid_query.
 *  - Values are typed by the column: numbers only against numeric columns,
 *    strings against string/enum/uuid/temporal columns, booleans against
 *    boolean columns; anything else is 400 invalid_value. A null `val` is 400
 *    invalid_value (use is_null / is_not_null), also inside `in` and between.
 *  - Numbers compare by value: a JSON integer (or an integral real such as 3.0)
 *    is bound as BIGINT, a fractional real as DOUBLE, so `eq 3.0` on an integer
 *    column matches 3 and `eq 3.5` matches nothing; an integral real past int64
 *    (1e19) is cast to HUGEINT on integer columns, exactly. DECIMAL columns compare
 *    with DOUBLE values (a BIGINT beside a wide DECIMAL makes DuckDB fail a
 *    cast). On a REAL (FLOAT) column the
 *    value is rounded to REAL, because REAL values are shown by their shortest
 *    REAL form (0.1) and a client copying a shown value must find the row.
 *  - Temporal columns take ISO-8601 strings, validated here (a malformed date is
 *    400 invalid_value, never a DuckDB cast error): YYYY-MM-DD, optionally
 *    followed by T|t|space HH:MM[:SS[.fraction]] and an offset Z|±HH[:MM]; TIME
 *    columns take HH:MM[:SS[.fraction]]. A value with an offset is converted to
 *    UTC; TIMESTAMP columns are taken as UTC; a TIMESTAMPTZ value without an
 *    offset is UTC (never the server's time zone). A date-time compared with a
 *    DATE column compares as a timestamp (d >= '2024-01-01T10:00' excludes that
 *    day). More than 6 fractional digits is 400 unless the column is
 *    TIMESTAMP_NS or the extra digits are zeros.
 *  - like/ilike take a string pattern; `%` and `_` are the wildcards, there is
 *    no escape character (standard SQL LIKE without ESCAPE). Only on VARCHAR and
 *    ENUM columns (else 400 invalid_operator). Patterns are matched in linear
 *    time by our own matcher (query_like.c: DuckDB's backtracks on patterns
 *    it cannot see at plan time); a pattern with more than
 *    VT_MAX_LIKE_SEGMENTS parts between `%` signs, or a part with `_` longer
 *    than VT_MAX_LIKE_WILD_SEGMENT_CHARS characters, is 400
 *    pattern_too_complex. ilike compares DuckDB's lower() of both sides.
 *  - An ENUM column compares as its label text (a label the enum lacks simply
 *    matches nothing; gt/lt compare text), while order_by and min/max use the
 *    enum's own order, as DuckDB does.
 *  - UUID columns take the 36- or 32-hex-digit form, any case. BLOB, INTERVAL,
 *    BIT, nested and other types accept only is_null / is_not_null
 *    (400 invalid_operator); nested types cannot be sorted or min/max'ed.
 *  - Column names and aliases match case-sensitively (a case-insensitive
 *    match is offered as "did you mean"); names are at most
 *    VT_MAX_COLUMN_NAME_BYTES and never contain NUL.
 *  - neq follows SQL: rows where the column is NULL do not match.
 *  - `in` with an empty list matches no rows. `between` takes [lo, hi],
 *    inclusive.
 *  - order_by: dir "asc" (default) or "desc"; NULLs sort last in both
 *    directions (DuckDB's default, written explicitly). With distinct, order_by
 *    columns must be projected (SQL requires it); with group_by, only group
 *    columns and aggregation aliases.
 *  - Grouped output: group columns, then aggregations in request order; an
 *    implicit count named "count" when group_by has no aggregations. sum/avg
 *    need a numeric column; min/max any scalar column; count with or without
 *    col. Aliases must be unique and must not equal a group column.
 *  - More aggregations (issue 28): count_distinct (non-null distinct values,
 *    any column), median and quantile (DuckDB's quantile_cont: interpolated;
 *    quantile takes "q" in [0, 1], required; integers give DOUBLE, a DATE a
 *    TIMESTAMP) over numeric, date, time and timestamp columns, and stddev
 *    (sample standard deviation) over numbers. "q" on another op is 400.
 *    Default aliases follow the rule: "{op}_{col}" (two quantiles of one
 *    column need aliases).
 *  - group_by entries are a column name or an object {"col", "bucket" |
 *    "width", "alias"}: bucket minute|hour|day|week|month|year truncates a
 *    date/timestamp (minute and hour also a TIME; TIMESTAMPTZ in the
 *    session's zone, UTC in the server) and keeps the column's type; width N
 *    (a number > 0) buckets a numeric column by its lower bound
 *    floor(v / N) * N: an exact integer for an integer column and an
 *    integral N, else a DOUBLE rounded to N's decimals (0.1 -> 0.3, not
 *    0.30000000000000004). The output column is named by "alias", else the
 *    column; having and order_by use that name. Two entries with one name
 *    are 400. Such queries GROUP BY position.
 *  - "include_total": true on a paged query asks for the number of rows the
 *    request selects across all pages (groups for group_by, distinct rows for
 *    distinct; capped by limit): query_total_request. Validated everywhere,
 *    used by QUERY_PAGED only.
 *  - Paging: offset = (page-1)*page_size; the hard `limit` caps the total, so
 *    page 3 of size 10 with limit 25 returns 5 rows and page 4 returns none.
 *    Pages partition the result: a paged group_by or distinct query is
 *    ordered after its order_by by its key (the group columns; for distinct
 *    every column), as a hash aggregate's output order changes from run to
 *    run; other queries keep DuckDB's order (insertion order, which DuckDB
 *    preserves, and its sort of that order for order_by with ties).
 *    An offset past 2^62 (DuckDB's maximum) returns no rows instead of failing.
 *
 * Errors: functions return VT_ERR_OK or a 400 code (VT_ERR_INTERNAL or
 * VT_ERR_OUT_OF_MEMORY when the arena is exhausted) and fill `err` with a
 * message naming the slot: `predicates[2].col: unknown column "prize" (did you
 * mean "price"?)`.
 */
#ifndef VT_QUERY_QUERY_H
#define VT_QUERY_QUERY_H

#include <duckdb.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/arena.h"
#include "util/errors.h"

/* ---- input: the generation's schema ---- */

struct query_column {
    const char *name;     /* as stored; matched case-sensitively */
    duckdb_type type;     /* duckdb_column_type() / duckdb_get_type_id() */
    const char *type_sql; /* full type text for messages, e.g. "DECIMAL(18,3)"; may be NULL */
};

struct query_schema {
    const struct query_column *cols;
    size_t n;
};

enum query_mode {
    QUERY_PAGED,  /* /query: page, page_size, limit */
    QUERY_STREAM, /* /query/stream: all rows, limit honoured */
    QUERY_COUNT,  /* /count: SELECT count(*) ... WHERE predicates */
};

struct query_options {
    enum query_mode mode;
    int64_t max_page_size;           /* server.max_page_size; <= 0 means 100000 */
    const char *const *extra_fields; /* NULL-terminated top-level keys to skip, or NULL */
};

#define QUERY_DEFAULT_PAGE_SIZE 1000
#define QUERY_DEFAULT_MAX_PAGE_SIZE 100000
/* DuckDB rejects LIMIT/OFFSET values above 2^62. */
#define QUERY_MAX_SQL_ROWS ((int64_t)1 << 62)

/* ---- values and parameters ---- */

/* How the engine binds a parameter (1-based index = position + 1):
 * BOOL duckdb_bind_boolean, INT64 duckdb_bind_int64, DOUBLE duckdb_bind_double,
 * VARCHAR duckdb_bind_varchar_length (never contains a NUL byte), LIST
 * duckdb_bind_value with a list value built from its items (all of one
 * non-LIST kind), NULL duckdb_bind_null, BLOB duckdb_bind_blob. query_plan_bind()
 * does exactly this.
 *
 * LIST parameters appear only in plans, for an `in` list with more than
 * QUERY_IN_ARRAY_MIN values of one type: `"c" IN (SELECT unnest(CAST(? AS
 * BIGINT[])))`. Measured on 1M rows: a 10000-value IN list of placeholders
 * takes ~300 ms to prepare and ~330 ms to run; one list parameter ~15 ms. */
enum query_value_kind {
    QUERY_VALUE_BOOL,
    QUERY_VALUE_INT64,
    QUERY_VALUE_DOUBLE,
    QUERY_VALUE_VARCHAR,
    QUERY_VALUE_LIST,
    QUERY_VALUE_NULL,   /* duckdb_bind_null (pgwire parameters) */
    QUERY_VALUE_BLOB,   /* duckdb_bind_blob of u.s (pgwire parameters) */
};

#define QUERY_IN_ARRAY_MIN 32

struct query_value {
    enum query_value_kind kind;
    union {
        bool b;
        int64_t i;
        double d;
        struct {
            const char *ptr; /* NUL-terminated too */
            size_t len;
        } s;
        struct {
            const struct query_value *items;
            size_t n;
        } list;
    } u;
    /* The SQL type the parameter is cast to, e.g. "BIGINT", "TIMESTAMPTZ",
     * "BIGINT[]" for a list. For
     * temporal values `s` holds a canonical text made here (UTC when the
     * column's type has a time zone), not the client's spelling. */
    const char *cast;
};

/* ---- the validated request ---- */

enum query_op {
    QUERY_OP_EQ,
    QUERY_OP_NEQ,
    QUERY_OP_GT,
    QUERY_OP_GTE,
    QUERY_OP_LT,
    QUERY_OP_LTE,
    QUERY_OP_LIKE,
    QUERY_OP_ILIKE,
    QUERY_OP_IN,
    QUERY_OP_IS_NULL,
    QUERY_OP_IS_NOT_NULL,
    QUERY_OP_BETWEEN,
};

const char *query_op_name(enum query_op op);

/* A reference to a column of the schema, or (having, grouped order_by) to an
 * aggregation of the request. */
struct query_ref {
    bool is_agg;
    size_t idx; /* schema column index, or index into query_request.aggs */
    /* Grouped queries: the reference names group_by entry `grp` (its output
     * name: a bucketed or aliased entry is not the column itself); idx is
     * still that entry's schema column. */
    bool is_group;
    size_t grp;
};

struct query_pred {
    struct query_ref ref;
    enum query_op op;
    /* 0 values for is_null/is_not_null, 1 for comparisons and like, 2 for
     * between (lo, hi), any number for in. */
    const struct query_value *vals;
    size_t nvals;
};

struct query_order {
    struct query_ref ref;
    bool desc;
};

enum query_agg_op {
    QUERY_AGG_COUNT,
    QUERY_AGG_SUM,
    QUERY_AGG_AVG,
    QUERY_AGG_MIN,
    QUERY_AGG_MAX,
    QUERY_AGG_COUNT_DISTINCT, /* count(DISTINCT col): non-null distinct values */
    QUERY_AGG_MEDIAN,         /* median(col) = quantile_cont(col, 0.5) */
    QUERY_AGG_QUANTILE,       /* quantile_cont(col, q): interpolated, as median */
    QUERY_AGG_STDDEV,         /* stddev_samp(col) */
};

#define QUERY_NO_COLUMN SIZE_MAX

struct query_agg {
    enum query_agg_op op;
    size_t col;        /* schema index, or QUERY_NO_COLUMN for count(*) */
    const char *alias; /* explicit or default: "count", "{op}_{col}" */
    double q;          /* QUERY_AGG_QUANTILE: in [0, 1] */
};

/* A group_by entry: a column as it is, a time bucket of a temporal column
 * ({"col": "pickup_at", "bucket": "hour"}: date_trunc, the result keeps the
 * column's type) or an equal-width bucket of a numeric column ({"col": "fare",
 * "width": 5}: the bucket's lower bound, floor(v / width) * width; exact
 * integers for an integer column and an integral width, else DOUBLE). The
 * output column is named `name`: the entry's "alias", else the column name. */
enum query_bucket {
    QUERY_BUCKET_NONE,
    QUERY_BUCKET_MINUTE,
    QUERY_BUCKET_HOUR,
    QUERY_BUCKET_DAY,
    QUERY_BUCKET_WEEK,   /* ISO weeks: from Monday */
    QUERY_BUCKET_MONTH,
    QUERY_BUCKET_YEAR,
    QUERY_BUCKET_WIDTH,
};

const char *query_bucket_name(enum query_bucket b);

struct query_group {
    size_t col;                 /* schema index (== query_request.group_by[i]) */
    enum query_bucket bucket;
    struct query_value width;   /* QUERY_BUCKET_WIDTH: INT64 or DOUBLE, > 0 */
    const char *name;           /* output column name */
};

struct query_request {
    enum query_mode mode;
    const struct query_schema *schema;

    /* Projection (schema indexes): the request's columns, or every column in
     * schema order when it named none. Unused when grouped. */
    const size_t *columns;
    size_t ncolumns;
    bool distinct;

    const struct query_pred *preds;
    size_t npreds;

    /* Grouping: ngroup > 0 means a grouped query; aggs then holds at least one
     * entry (the implicit count when the request gave none). */
    const size_t *group_by;
    const struct query_group *groups; /* ngroup entries, parallel to group_by */
    size_t ngroup;
    const struct query_agg *aggs;
    size_t naggs;
    const struct query_pred *having; /* refs: group columns or aggregations */
    size_t nhaving;

    const struct query_order *order; /* refs: aggregations only when grouped */
    size_t norder;

    /* Paging, normalised. page/page_size are what the response reports. */
    int64_t limit;     /* -1 = none */
    int64_t page;      /* >= 1 (1 outside QUERY_PAGED) */
    int64_t page_size; /* [1, max_page_size] (0 outside QUERY_PAGED) */
    int64_t offset;    /* rows skipped before the first returned row */
    int64_t max_rows;  /* rows to return at most; -1 = unlimited */

    /* "include_total": true (QUERY_PAGED): the answer also says how many rows
     * the whole request selects across pages (query_total_request). */
    bool include_total;
    /* Set only by query_total_request: the statement counts the rows of the
     * grouped or DISTINCT result instead of returning them. */
    bool count_result;
};

/* Validates `body` (a JSON object; NULL is taken as {}) against `schema` and
 * fills `out`. Returns VT_ERR_OK or the error code (detail in `err`). */
enum vt_err query_parse(const json_t *body, const struct query_schema *schema,
                        const struct query_options *opts, struct arena *arena,
                        struct query_request *out, struct vt_error *err);

/* ---- the lookup shape without a JSON tree ----
 *
 * A point lookup's body, {"predicates":[{"col":"id","op":"eq","val":42}]},
 * read straight from its text: query_small_scan recognises the shape (no
 * schema), query_small_parse validates it against a schema. Together they
 * are a shortcut of query_parse, never a second validator: the scan accepts
 * only texts json_small_load loads (so jansson would load them too, the same
 * tree), and the parse fills exactly the request query_parse fills for that
 * tree, or declines. It never refuses: every error, and every shape or value
 * outside the subset, is left to query_parse over the tree, which then
 * answers as it always does. tests/fuzz/fuzz_query_small.c checks both
 * promises against json_small_load + query_parse.
 *
 * The shape: one object with "predicates" (1 to QUERY_SMALL_MAX_PREDS
 * objects with exactly col, op and val; op one of eq, neq, gt, gte, lt,
 * lte; val an integer or a string, in json_small's subset), optionally
 * "columns" (1 to QUERY_SMALL_MAX_COLUMNS names) and "limit" (an integer
 * >= 0), each key once. The parse also declines a column not in the schema,
 * a column named twice in "columns", and a value whose type the column's
 * class does not take as it is (integers: integer, float and double columns;
 * strings: string and enum columns). */
#define QUERY_SMALL_MAX_PREDS 8
#define QUERY_SMALL_MAX_COLUMNS 16

struct query_small_pred {
    const char *col; /* inside the text, not NUL-terminated */
    size_t col_len;
    enum query_op op;
    bool is_int;     /* val: the integer i, else the string s/s_len */
    int64_t i;
    const char *s;
    size_t s_len;
};

struct query_small {
    const char *text; /* the body, borrowed: query_small_parse reads names in it */
    size_t len;
    struct query_small_pred preds[QUERY_SMALL_MAX_PREDS];
    size_t npreds;
    struct {
        const char *name;
        size_t len;
    } columns[QUERY_SMALL_MAX_COLUMNS];
    size_t ncolumns; /* 0: no "columns" key */
    int64_t limit;   /* -1: no "limit" key */
};

/* text[0..len) in the lookup shape: fills `out` and returns true; false
 * declines (out is then unspecified). */
bool query_small_scan(const char *text, size_t len, struct query_small *out);

/* `in` (a query_small_scan result) validated against `schema`: true with
 * `out` filled as query_parse would fill it from the same text; false
 * declines (outside the subset, or the arena is full): call query_parse
 * over the tree. */
bool query_small_parse(const struct query_small *in, const struct query_schema *schema,
                       const struct query_options *opts, struct arena *arena,
                       struct query_request *out);

/* The request that counts what `req` selects across all its pages
 * ("include_total"): without grouping or DISTINCT, a QUERY_COUNT of its
 * predicates (the index and a lazy dataset's statistics may answer it);
 * otherwise a QUERY_STREAM request whose one row {"count": n} counts the
 * groups or distinct rows, having applied (count_result). The caller caps the
 * count at req->limit (query_total_cap). `out` shares req's arrays. */
void query_total_request(const struct query_request *req, struct query_request *out);
/* n capped by req's limit: what the pages of req hold together. */
int64_t query_total_cap(const struct query_request *req, int64_t n);

/* ---- the SQL plan ---- */

struct query_plan {
    const char *sql; /* one SELECT statement, NUL-terminated */
    size_t sql_len;
    const struct query_value *params; /* params[i] binds to `?` number i+1 */
    size_t nparams;
    const char *const *out_names; /* result column names, in order */
    size_t nout;
    int64_t page, page_size, offset, max_rows; /* copied from the request */
};

/* Builds the statement for `req` over `relation`, an already-quoted relation
 * name given by the catalog (e.g. "g01ABC"."data"); it is pasted verbatim. */
enum vt_err query_build_sql(const struct query_request *req, const char *relation,
                            struct arena *arena, struct query_plan *out, struct vt_error *err);

/* Binds every parameter of `plan` to `stmt` (prepared from plan->sql).
 * VT_ERR_INTERNAL with DuckDB's message when a bind fails. */
enum vt_err query_plan_bind(const struct query_plan *plan, duckdb_prepared_statement stmt,
                            struct vt_error *err);

/* ---- the equality-index path ---- */

/* One ANDed term an equality index can answer: rows whose column `col` equals
 * any of `vals`. Values are normalised to the column: INT64 for integer
 * columns (out-of-range and fractional values dropped: they match nothing),
 * VARCHAR for VARCHAR columns, BOOL for BOOLEAN columns; on a UBIGINT column
 * also DOUBLE for integral values in [2^63, 2^64) (JSON integers stop at
 * int64; 1e19 is a real). nvals == 0 means the
 * term matches no row. Several terms on the same column intersect. */
struct query_index_term {
    size_t col;
    const struct query_value *vals;
    size_t nvals;
};

/* True when `req` can be answered from equality indexes: at least one
 * predicate, every predicate `eq` or `in` on a BOOLEAN, VARCHAR or 8-to-64-bit
 * integer column, and (except in QUERY_COUNT mode, which ignores them) no
 * group_by, aggregations, distinct or order_by. The
 * caller still checks that each term's column has an index, then applies
 * req->columns (projection), req->offset and req->max_rows (or counts, in
 * QUERY_COUNT mode). Rows must come back in table order to match the SQL path.
 * Terms are allocated from `arena`. */
bool query_index_terms(const struct query_request *req, struct arena *arena,
                       const struct query_index_term **out_terms, size_t *out_n);

struct vt_index;
struct index_term;

/* query_index_terms in the form of src/index: true when the request is
 * index-eligible and every predicate column is indexed in `ix`; then
 * out_terms[0..out_n) can go to index_fast_answer(). *out_empty is set when
 * some term has no key that can match (a term needs n_keys >= 1): the answer
 * is then no rows, without a lookup. Keys borrow strings from the request;
 * everything is allocated from `arena`. */
bool query_index_match_terms(const struct query_request *req, const struct vt_index *ix,
                             struct arena *arena, const struct index_term **out_terms,
                             size_t *out_n, bool *out_empty);

struct index_range_term;

/* A count (QUERY_COUNT) the index can answer from a column's sorted values,
 * or a page (QUERY_PAGED) whose rows it can place: every predicate is eq,
 * gt, gte, lt, lte or between on one column that keeps them
 * (index_has_range), with values DuckDB would compare exactly as the index
 * does (TIMESTAMP/TIMESTAMPTZ values as microseconds, DATE values given as
 * dates as days, integer columns with integer values, DOUBLE columns with
 * numbers). Then *out_col and the terms (their AND, arena-allocated) go to
 * index_range_count or index_range_rows. False for anything else (the
 * page's other fields are the caller's to check). */
bool query_index_range(const struct query_request *req, const struct vt_index *ix,
                       struct arena *arena, size_t *out_col,
                       const struct index_range_term **out_terms, size_t *out_n);

/* ---- LIKE in linear time (query_like.c) ---- */

/* The DuckDB scalar function the compiled SQL calls for like/ilike:
 * vt_like(string, pattern) -> BOOLEAN, NULL when either is NULL. */
#define QUERY_LIKE_FUNCTION "vt_like"

/* PATTERN_TOO_COMPLEX when the pattern exceeds the segment limits above. */
enum vt_err query_like_check(const char *pattern, size_t len, struct vt_error *err);

struct query_like;
/* NULL when out of memory. Any pattern compiles (the limits are the
 * checker's); matching is O(len(s) x segments). */
struct query_like *query_like_compile(const char *pattern, size_t len);
bool query_like_match(const struct query_like *l, const char *s, size_t len);
void query_like_free(struct query_like *l);
/* Registers vt_like in the database of `con` (once per database). */
enum vt_err query_like_register(duckdb_connection con, struct vt_error *err);

#endif
