/*
 * The SQL gate: the one check every piece of user SQL goes through before it
 * runs (POST /api/v1/sql, saved queries, config datasets of kind "query", the
 * MCP sql tool, the PostgreSQL listener).
 *
 * A statement passes when it is exactly one read-only SELECT (or WITH ...
 * SELECT, UNION, VALUES ...) whose tables are registered datasets or the
 * statement's own CTE names, and whose functions are on an allowlist of
 * functions that read nothing but their arguments (allowlist.c) or, for table
 * functions, a short list (range, generate_series, unnest, json_each,
 * json_tree). It is parsed by DuckDB's own parser (json_serialize_sql, which
 * serializes SELECT statements only) and the tree is walked with jansson;
 * anything the walk does not know (a node type, an expression class, a key)
 * is refused: the gate fails closed. Never regexes, so comments, strings and
 * quoting cannot hide anything: what DuckDB would run is what is checked.
 *
 * Refusals are 400s with a stable code: SQL_SYNTAX (42601), SQL_NOT_READ_ONLY
 * (25006: anything but one SELECT), SQL_UNKNOWN_TABLE (42P01: a table that is
 * not a dataset or a CTE, which covers file paths and replacement scans such
 * as FROM '/etc/passwd'), SQL_FORBIDDEN_FUNCTION (42501: a function off the
 * allowlist, quoted, or qualified by a schema or catalog).
 *
 * depends_on: the datasets the statement reads, first-seen order, no
 * duplicates; a CTE named like a dataset shadows it where it is visible
 * (later CTEs of its WITH, the main query; itself when recursive), and names
 * in strings or comments are not references at all.
 *
 * The gate is pure: it knows no catalog, pins nothing and runs nothing.
 * Running a statement it passed against pinned generations is the
 * executor's job (src/exec, exec_snapshot_*: each dependency is a temporary
 * view, on the worker's own connection, over the generation pinned for the
 * request), so the statement runs as written.
 */
#ifndef VT_SQL_SQL_H
#define VT_SQL_SQL_H

#include <duckdb.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/errors.h"

/* Whether `name` is a registered dataset (exact spelling). */
typedef bool (*sql_is_dataset_fn)(void *ctx, const char *name);

/* An equality lookup: `SELECT * | c1, c2, ... FROM <dataset> [AS a] WHERE
 * x = <value> [AND y = <value> ...]` and nothing else (no ordering, limit,
 * distinct, grouping, CTE, join or other expression). A front end can answer
 * it from the dataset's equality index (exec_try_fast) as /query answers an
 * eq predicate, and run the statement as usual when the index cannot. */
struct sql_lookup_term {
    char *column;
    int param;                  /* > 0: the value is parameter $param */
    char *json;                 /* else the constant as JSON text: 5, "abc" */
};

struct sql_lookup {
    char *dataset;
    char **columns;             /* as written; none = every column (SELECT *) */
    size_t ncolumns;
    struct sql_lookup_term *terms;
    size_t nterms;
};

struct sql_checked {
    char **depends_on;          /* datasets read, first-seen order */
    size_t n_depends_on;
    /* With sql_gate_options.lookups, when the statement is one (else NULL). */
    struct sql_lookup *lookup;
    /* With sql_pg_names only: */
    bool reads_catalog;         /* names a catalog relation or calls a catalog function */
    char *rewritten;            /* the statement DuckDB runs (names mapped; malloc'd), or
                                 * NULL when it runs as written */
};

/* PostgreSQL's names, for the pgwire front end: PostgreSQL clients write
 * `public.trips`, `pg_catalog.pg_class`, `information_schema.columns`,
 * `format_type(...)`, `x::regclass`. With these the gate accepts them and
 * maps each to what stands for it on the worker's connection (pgwire's
 * catalog: temporary tables and macros named so no dataset can collide):
 *   public.X                  the dataset X (a qualified name never means a CTE)
 *   pg_catalog.X, X           relation("pg_catalog", X) when it gives one
 *                             (unqualified: after CTEs, before datasets, as
 *                             PostgreSQL's search_path puts pg_catalog first)
 *   information_schema.X      relation("information_schema", X)
 *   [pg_catalog.]f(...)       function(f) when it gives one, else the allowlist
 *   CAST(x AS t), x::t        cast(t, input) for types DuckDB lacks (regclass,
 *                             name, ...): a call of that function on x
 *   COLLATE "default", "C"    dropped (DuckDB's default collation is binary)
 * Every other schema is unknown (42P01). The mapped tree goes back to SQL
 * through DuckDB's json_deserialize_sql (sql_checked.rewritten). */
struct sql_pg_names {
    const char *(*relation)(const char *schema, const char *name);
    const char *(*function)(const char *name);
    /* input: the operand is a string constant or a parameter */
    const char *(*cast)(const char *type_name, bool input);
};

struct sql_gate_options {
    bool allow_params;          /* $1 parameters, bound by the caller (extended protocol) */
    bool lookups;               /* describe equality lookups (sql_checked.lookup) */
    const struct sql_pg_names *pg; /* NULL: the plain gate of /sql, MCP, saved queries */
};

/* Checks `sql` (parsed on `con`, any connection of the process database).
 * On VT_ERR_OK `out` lists the dependencies (release it); otherwise err says
 * what was refused and where. */
enum vt_err sql_gate_check(duckdb_connection con, const char *sql, sql_is_dataset_fn is_dataset,
                           void *ctx, struct sql_checked *out, struct vt_error *err);
/* The same with options (NULL = sql_gate_check). */
enum vt_err sql_gate_check_opts(duckdb_connection con, const char *sql,
                                const struct sql_gate_options *opts, sql_is_dataset_fn is_dataset,
                                void *ctx, struct sql_checked *out, struct vt_error *err);
void sql_checked_release(struct sql_checked *c);
void sql_lookup_free(struct sql_lookup *l);
/* The gate keeps its two DuckDB statements prepared per thread (a worker
 * owns one connection for life; they are freed when the thread ends). A
 * thread that goes on (main, in tests and tools) calls this before closing
 * the connection it checked statements on. Safe when there is nothing. */
void sql_thread_release(void);
/* Before a short-lived connection that checked statements is closed while
 * its thread goes on (builders, registration), forget it: its address may
 * be reused by the next connection. */
void sql_gate_forget(duckdb_connection con);

/* The allowlist (allowlist.c). */
bool sql_function_allowed(const char *name);
size_t sql_allowed_functions(const char *const **out);
bool sql_table_function_allowed(const char *name);

/* Dependency cycles among saved queries: `deps(ctx, name, &list, &n)` gives
 * a dataset's depends_on (n = 0 for datasets that depend on nothing). True
 * when following dependencies from `start` leads back to `start`; the path
 * of the cycle goes into out_path (may be NULL), names separated by " -> ". */
typedef void (*sql_deps_fn)(void *ctx, const char *name, const char *const **out_list,
                            size_t *out_n);
bool sql_has_cycle(const char *start, sql_deps_fn deps, void *ctx, char *out_path,
                   size_t path_cap);

#endif
