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
    /* With a dialect only (sql_gate_options.dialect): */
    bool reads_catalog;         /* a hook mapped a name onto the dialect's own objects */
    char *rewritten;            /* the statement DuckDB runs (names mapped; malloc'd), or
                                 * NULL when it runs as written */
};

/* ------------------------------------------------------------ dialect hooks
 *
 * A front end that speaks another SQL dialect (pgwire: PostgreSQL's names,
 * src/pgwire/dialect.c) plugs into the gate's walk at fixed points. A hook
 * sees one node of DuckDB's parse tree (jansson objects, as
 * json_serialize_sql writes them) and may rewrite it in place; the gate goes
 * on with what the hook left, and when anything changed the whole tree goes
 * back to SQL through DuckDB's json_deserialize_sql (sql_checked.rewritten),
 * so what runs is what was checked. The hook's answer says what the gate
 * still checks:
 *
 *   SQL_HOOK_CHECK    the node as it now is, by the usual rules
 *   SQL_HOOK_OWN      the node now reads an object of the dialect's own: a
 *                     relation or function named "vt:..." (a name no dataset
 *                     and no allowlisted function can have; the gate refuses
 *                     OWN for any other name). Its arguments are still walked.
 *                     A table function may become such a base table.
 *   SQL_HOOK_AGAIN    the node was replaced: walk it again (an expression, or
 *                     a table function now another kind of table reference)
 *   SQL_HOOK_DATASET  (base tables) the reference names the dataset in its
 *                     table_name (schema removed), never a CTE
 *   SQL_HOOK_REFUSED  refused; the hook set the error (sql_walk_error)
 *
 * Hooks run on the gate's thread, inside one check; they keep no state
 * between checks except through `before`'s return value. */

struct json_t;
struct sql_walk;                /* the walk in progress (opaque) */

enum sql_hook {
    SQL_HOOK_CHECK,
    SQL_HOOK_OWN,
    SQL_HOOK_AGAIN,
    SQL_HOOK_DATASET,
    SQL_HOOK_REFUSED,
};

struct sql_dialect {
    /* Every expression node, before the gate looks at it (a FUNCTION's
     * EXPORT_STATE is refused before the hook sees it). */
    enum sql_hook (*expr)(struct sql_walk *w, struct json_t *e);
    /* Every BASE_TABLE and TABLE_FUNCTION reference, after its AT clause
     * and sample were checked. */
    enum sql_hook (*table)(struct sql_walk *w, struct json_t *ref);
    /* Around the walk of the statement's root query node: `before` may
     * return state (e.g. the output column names as written), `after` gets it
     * back whether the walk passed (ok) or not and frees it. */
    void *(*before)(struct json_t *node);
    void (*after)(struct sql_walk *w, struct json_t *node, void *state, bool ok);
};

/* For hooks: whether `name` is a CTE visible where the walk is; whether it
 * is a dataset; that the hook changed the tree (`own`: onto its own
 * objects, sql_checked.reads_catalog); the error to set before
 * SQL_HOOK_REFUSED; the caller's sql_gate_options.dialect_ctx. */
void *sql_walk_context(const struct sql_walk *w);
bool sql_walk_in_scope(const struct sql_walk *w, const char *name);
bool sql_walk_is_dataset(const struct sql_walk *w, const char *name);
void sql_walk_changed(struct sql_walk *w, bool own);
struct vt_error *sql_walk_error(struct sql_walk *w);

struct sql_gate_options {
    bool allow_params;          /* $1 parameters, bound by the caller (extended protocol) */
    bool lookups;               /* describe equality lookups (sql_checked.lookup) */
    const struct sql_dialect *dialect; /* NULL: the plain gate of /sql, MCP, saved queries */
    void *dialect_ctx;          /* for the dialect's hooks (sql_walk_context) */
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
/* A function every check calls first and whose error it returns: the
 * service's eng_functions_wait (the SQL functions user statements may call,
 * installed while the service starts; engine.h eng_open_deferred). Set once,
 * before any check; NULL: none. */
void sql_gate_set_wait(enum vt_err (*wait)(struct vt_error *err));
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
/* The allowlisted functions that are macros (DuckDB's own and the bounded
 * wrappers of engine/functions.c) and what expanding one costs: `fanout`,
 * the most copies of one argument its body makes, and `body`, the
 * expression nodes of its body, both with the macros it calls expanded and
 * over its overloads. False for a function that is not a macro. The gate
 * limits a statement's expansion with them; test_gate recomputes them from
 * DuckDB's catalogue. */
bool sql_macro_expansion(const char *name, unsigned *fanout, unsigned *body);
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
