/*
 * The SQL gate (see sql.h): DuckDB parses the statement into its JSON tree
 * (json_serialize_sql), and this file walks the tree with what DuckDB 1.4.4
 * puts in it: query nodes (SELECT_NODE, SET_OPERATION_NODE,
 * RECURSIVE_CTE_NODE), table references (BASE_TABLE, JOIN, SUBQUERY,
 * TABLE_FUNCTION, EXPRESSION_LIST, EMPTY) and expressions (by "class").
 * Every key of a node or table reference must be known, every expression
 * class must be known: a DuckDB upgrade that adds something makes the gate
 * refuse it until this file learns it.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sql/sql.h"
#include "util/limits.h"

#define MAX_DEPTH 200           /* nesting of the parsed tree we walk */
#define MAX_SCOPE 256           /* CTE names visible at once */

static const char *const table_functions[] = {"generate_series", "json_each", "json_tree",
                                              "range", "unnest", NULL};

bool sql_table_function_allowed(const char *name)
{
    for (size_t i = 0; table_functions[i]; i++)
        if (!strcmp(name, table_functions[i]))
            return true;
    return false;
}

struct walk {
    sql_is_dataset_fn is_dataset;
    void *ctx;
    struct vt_error *err;
    struct sql_checked *out;
    const char *scope[MAX_SCOPE]; /* visible CTE names, innermost last */
    size_t n_scope;
};

static enum vt_err refuse(struct walk *w, enum vt_err code, const char *fmt, const char *what)
{
    return vt_error_set(w->err, code, fmt, what);
}

static enum vt_err walk_node(struct walk *w, const json_t *node, int depth);
static enum vt_err walk_table(struct walk *w, const json_t *ref, int depth);
static enum vt_err walk_expr(struct walk *w, const json_t *e, int depth);

static const char *str(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Every key of `o` must be one of `known` (NULL-terminated). */
static enum vt_err known_keys(struct walk *w, const json_t *o, const char *const *known,
                              const char *what)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        (void)v;
        size_t i = 0;
        while (known[i] && strcmp(known[i], k) != 0)
            i++;
        if (!known[i]) {
            char m[160];
            snprintf(m, sizeof m, "%.40s (field %.60s)", what, k);
            return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "unsupported SQL construct: %s", m);
        }
    }
    return VT_ERR_OK;
}

/* Expressions anywhere below `v`: objects with a "class" are expressions,
 * query wrappers ({"node": ...}) are subqueries, arrays hold either. */
static enum vt_err walk_any(struct walk *w, const json_t *v, int depth)
{
    if (depth > MAX_DEPTH)
        return refuse(w, VT_ERR_LIMIT_EXCEEDED, "%s", "statement nested too deeply");
    if (json_is_array(v)) {
        size_t i;
        const json_t *x;
        json_array_foreach(v, i, x) {
            enum vt_err rc = walk_any(w, x, depth + 1);
            if (rc)
                return rc;
        }
        return VT_ERR_OK;
    }
    if (!json_is_object(v))
        return VT_ERR_OK;
    if (json_object_get(v, "class"))
        return walk_expr(w, v, depth + 1);
    const json_t *node = json_object_get(v, "node");
    if (json_is_object(node) && json_object_get(node, "type"))
        return walk_node(w, node, depth + 1);
    const char *type = str(v, "type");
    if (type && (!strcmp(type, "ORDER_MODIFIER") || !strcmp(type, "LIMIT_MODIFIER") ||
                 !strcmp(type, "DISTINCT_MODIFIER") || !strcmp(type, "LIMIT_PERCENT_MODIFIER"))) {
        const char *k;
        const json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            enum vt_err rc = walk_any(w, x, depth + 1);
            if (rc)
                return rc;
        }
        return VT_ERR_OK;
    }
    /* Order terms ({"type": "ASCENDING", "expression": ...}), sample
     * options, CASE checks ({"when_expr", "then_expr"}), value objects of
     * constants: walk what they hold. */
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        enum vt_err rc = walk_any(w, x, depth + 1);
        if (rc)
            return rc;
    }
    return VT_ERR_OK;
}

static bool in_scope(const struct walk *w, const char *name)
{
    for (size_t i = w->n_scope; i-- > 0;)
        if (!strcmp(w->scope[i], name))
            return true;
    return false;
}

static enum vt_err add_dependency(struct walk *w, const char *name)
{
    struct sql_checked *o = w->out;
    for (size_t i = 0; i < o->n_depends_on; i++)
        if (!strcmp(o->depends_on[i], name))
            return VT_ERR_OK;
    char **nd = realloc(o->depends_on, (o->n_depends_on + 1) * sizeof *nd);
    if (!nd)
        return vt_error_set(w->err, VT_ERR_OUT_OF_MEMORY, NULL);
    o->depends_on = nd;
    if (!(nd[o->n_depends_on] = strdup(name)))
        return vt_error_set(w->err, VT_ERR_OUT_OF_MEMORY, NULL);
    o->n_depends_on++;
    return VT_ERR_OK;
}

static enum vt_err check_function(struct walk *w, const json_t *e, bool table)
{
    const char *name = str(e, "function_name");
    const char *schema = str(e, "schema");
    const char *catalog = str(e, "catalog");
    if (!name)
        return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s", "a function call without a name");
    /* DuckDB's parser itself writes main.list_value for [..], main.struct_pack
     * for {..}, main.map and main.row: that qualification, on those, is the
     * only one allowed. */
    bool constructor = !strcmp(name, "list_value") || !strcmp(name, "struct_pack") ||
                       !strcmp(name, "map") || !strcmp(name, "row");
    bool parser_qualified = constructor && schema && !strcmp(schema, "main") &&
                            (!catalog || !*catalog);
    if (((schema && *schema) || (catalog && *catalog)) && !parser_qualified)
        return refuse(w, VT_ERR_SQL_FORBIDDEN_FUNCTION,
                      "function %s: qualified function names are not allowed", name);
    bool ok = table ? sql_table_function_allowed(name) : sql_function_allowed(name);
    if (!ok)
        return refuse(w, VT_ERR_SQL_FORBIDDEN_FUNCTION,
                      table ? "table function %s is not allowed (allowed: range, generate_series, "
                              "unnest, json_each, json_tree)"
                            : "function %s is not allowed",
                      name);
    return VT_ERR_OK;
}

static enum vt_err walk_expr(struct walk *w, const json_t *e, int depth)
{
    if (depth > MAX_DEPTH)
        return refuse(w, VT_ERR_LIMIT_EXCEEDED, "%s", "statement nested too deeply");
    const char *cls = str(e, "class");
    if (!cls)
        return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s", "an expression without a class");
    static const char *const plain[] = {"COLUMN_REF", "CONSTANT",   "COMPARISON", "CONJUNCTION",
                                        "OPERATOR",   "CASE",       "CAST",       "BETWEEN",
                                        "STAR",       "LAMBDA",     "COLLATE",    "LAMBDA_REF",
                                        "POSITIONAL_REFERENCE",     "DEFAULT",    NULL};
    bool known = false;
    for (size_t i = 0; plain[i] && !known; i++)
        known = !strcmp(cls, plain[i]);
    if (!strcmp(cls, "FUNCTION") || !strcmp(cls, "WINDOW")) {
        enum vt_err rc = check_function(w, e, false);
        if (rc)
            return rc;
        known = true;
    } else if (!strcmp(cls, "SUBQUERY")) {
        known = true;
    } else if (!strcmp(cls, "PARAMETER")) {
        return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s",
                      "parameters ($1, ?) are not supported here; write the values");
    }
    if (!known)
        return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "unsupported SQL expression: %s", cls);
    /* Children of every known class: walk all members generically. */
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)e, k, x) {
        enum vt_err rc = walk_any(w, x, depth + 1);
        if (rc)
            return rc;
    }
    return VT_ERR_OK;
}

static enum vt_err walk_table(struct walk *w, const json_t *ref, int depth)
{
    if (depth > MAX_DEPTH)
        return refuse(w, VT_ERR_LIMIT_EXCEEDED, "%s", "statement nested too deeply");
    if (json_is_null(ref) || !ref)
        return VT_ERR_OK;
    const char *type = str(ref, "type");
    if (!type)
        return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s", "a table reference without a type");
    enum vt_err rc;
    if (!strcmp(type, "BASE_TABLE")) {
        static const char *const keys[] = {"type",        "alias",        "sample",
                                           "query_location", "schema_name", "table_name",
                                           "column_name_alias", "catalog_name", "at_clause",
                                           NULL};
        if ((rc = known_keys(w, ref, keys, "table")))
            return rc;
        const char *name = str(ref, "table_name");
        const char *schema = str(ref, "schema_name");
        const char *catalog = str(ref, "catalog_name");
        if (!name)
            return refuse(w, VT_ERR_SQL_UNKNOWN_TABLE, "%s", "a table without a name");
        if ((schema && *schema) || (catalog && *catalog))
            return refuse(w, VT_ERR_SQL_UNKNOWN_TABLE,
                          "table %s: schema- or catalog-qualified names are not allowed "
                          "(datasets are plain names)",
                          name);
        if (!json_is_null(json_object_get(ref, "at_clause")))
            return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "table %s: AT (time travel) is not supported",
                          name);
        if ((rc = walk_any(w, json_object_get(ref, "sample"), depth + 1)))
            return rc;
        if (in_scope(w, name))
            return VT_ERR_OK;
        if (!w->is_dataset(w->ctx, name))
            return refuse(w, VT_ERR_SQL_UNKNOWN_TABLE,
                          "no dataset named \"%s\" (tables are dataset names or the "
                          "statement's own CTEs; files cannot be read)",
                          name);
        return add_dependency(w, name);
    }
    if (!strcmp(type, "JOIN")) {
        static const char *const keys[] = {"type", "alias", "sample", "query_location", "left",
                                           "right", "condition", "join_type", "ref_type",
                                           "using_columns", "delim_flipped",
                                           "duplicate_eliminated_columns", NULL};
        if ((rc = known_keys(w, ref, keys, "join")) ||
            (rc = walk_table(w, json_object_get(ref, "left"), depth + 1)) ||
            (rc = walk_table(w, json_object_get(ref, "right"), depth + 1)) ||
            (rc = walk_any(w, json_object_get(ref, "condition"), depth + 1)) ||
            (rc = walk_any(w, json_object_get(ref, "duplicate_eliminated_columns"), depth + 1)))
            return rc;
        return VT_ERR_OK;
    }
    if (!strcmp(type, "SUBQUERY")) {
        static const char *const keys[] = {"type", "alias", "sample", "query_location",
                                           "subquery", "column_name_alias", NULL};
        if ((rc = known_keys(w, ref, keys, "subquery")) ||
            (rc = walk_any(w, json_object_get(ref, "sample"), depth + 1)))
            return rc;
        const json_t *sq = json_object_get(ref, "subquery");
        const json_t *node = json_is_object(sq) ? json_object_get(sq, "node") : NULL;
        if (!node)
            return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s", "a subquery without a query");
        return walk_node(w, node, depth + 1);
    }
    if (!strcmp(type, "TABLE_FUNCTION")) {
        static const char *const keys[] = {"type", "alias", "sample", "query_location",
                                           "function", "column_name_alias", "with_ordinality",
                                           NULL};
        if ((rc = known_keys(w, ref, keys, "table function")))
            return rc;
        const json_t *fn = json_object_get(ref, "function");
        const char *cls = json_is_object(fn) ? str(fn, "class") : NULL;
        if (!cls || strcmp(cls, "FUNCTION") != 0)
            return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s", "an unsupported table function call");
        if ((rc = check_function(w, fn, true)))
            return rc;
        const char *k;
        const json_t *x;
        json_object_foreach((json_t *)fn, k, x) {
            if ((rc = walk_any(w, x, depth + 1)))
                return rc;
        }
        return walk_any(w, json_object_get(ref, "sample"), depth + 1);
    }
    if (!strcmp(type, "EXPRESSION_LIST")) {
        static const char *const keys[] = {"type", "alias", "sample", "query_location",
                                           "expected_names", "expected_types", "values", NULL};
        if ((rc = known_keys(w, ref, keys, "VALUES list")))
            return rc;
        return walk_any(w, json_object_get(ref, "values"), depth + 1);
    }
    if (!strcmp(type, "EMPTY") || !strcmp(type, "EMPTY_FROM"))
        return VT_ERR_OK;
    return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "unsupported table reference: %s", type);
}

/* WITH: each CTE sees the CTEs before it (and itself when recursive); the
 * query body sees all of them. Returns the scope size to restore. */
static enum vt_err walk_ctes(struct walk *w, const json_t *node, int depth, size_t *out_mark)
{
    *out_mark = w->n_scope;
    const json_t *cm = json_object_get(node, "cte_map");
    if (!cm || json_is_null(cm))
        return VT_ERR_OK;
    const json_t *map = json_object_get(cm, "map");
    if (!json_is_array(map))
        return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s", "an unreadable WITH clause");
    size_t i;
    const json_t *entry;
    json_array_foreach(map, i, entry) {
        const char *name = str(entry, "key");
        const json_t *value = json_object_get(entry, "value");
        const json_t *query = json_is_object(value) ? json_object_get(value, "query") : NULL;
        const json_t *body = json_is_object(query) ? json_object_get(query, "node") : NULL;
        if (!name || !body)
            return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s", "an unreadable WITH clause");
        enum vt_err rc = walk_node(w, body, depth + 1);
        if (rc)
            return rc;
        if (w->n_scope == MAX_SCOPE)
            return refuse(w, VT_ERR_LIMIT_EXCEEDED, "%s", "too many CTEs");
        w->scope[w->n_scope++] = name;
    }
    return VT_ERR_OK;
}

static enum vt_err walk_node(struct walk *w, const json_t *node, int depth)
{
    if (depth > MAX_DEPTH)
        return refuse(w, VT_ERR_LIMIT_EXCEEDED, "%s", "statement nested too deeply");
    const char *type = str(node, "type");
    if (!type)
        return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s", "a query without a type");
    size_t mark;
    enum vt_err rc = walk_ctes(w, node, depth, &mark);
    if (rc)
        return rc;
    if (!strcmp(type, "SELECT_NODE")) {
        static const char *const keys[] = {"type",          "modifiers",     "cte_map",
                                           "select_list",   "from_table",    "where_clause",
                                           "group_expressions", "group_sets", "aggregate_handling",
                                           "having",        "sample",        "qualify",
                                           NULL};
        static const char *const exprs[] = {"select_list", "where_clause", "group_expressions",
                                            "having",      "qualify",      "modifiers",
                                            "sample",      NULL};
        if ((rc = known_keys(w, node, keys, "SELECT")) ||
            (rc = walk_table(w, json_object_get(node, "from_table"), depth + 1)))
            goto out;
        for (size_t i = 0; exprs[i]; i++)
            if ((rc = walk_any(w, json_object_get(node, exprs[i]), depth + 1)))
                goto out;
    } else if (!strcmp(type, "SET_OPERATION_NODE")) {
        static const char *const keys[] = {"type", "modifiers", "cte_map", "left", "right",
                                           "children", "setop_type", "setop_all", NULL};
        if ((rc = known_keys(w, node, keys, "set operation")) ||
            (rc = walk_any(w, json_object_get(node, "modifiers"), depth + 1)))
            goto out;
        static const char *const parts[] = {"left", "right", NULL};
        for (size_t i = 0; parts[i]; i++) {
            const json_t *p = json_object_get(node, parts[i]);
            if (p && !json_is_null(p) && (rc = walk_node(w, p, depth + 1)))
                goto out;
        }
        const json_t *children = json_object_get(node, "children");
        size_t i;
        const json_t *ch;
        json_array_foreach(children, i, ch) {
            if ((rc = walk_node(w, ch, depth + 1)))
                goto out;
        }
    } else if (!strcmp(type, "RECURSIVE_CTE_NODE")) {
        static const char *const keys[] = {"type", "modifiers", "cte_map", "cte_name", "left",
                                           "right", "union_all", "aliases", "key_targets", NULL};
        if ((rc = known_keys(w, node, keys, "recursive CTE")) ||
            (rc = walk_any(w, json_object_get(node, "modifiers"), depth + 1)) ||
            (rc = walk_any(w, json_object_get(node, "key_targets"), depth + 1)) ||
            (rc = walk_node(w, json_object_get(node, "left"), depth + 1)))
            goto out;
        const char *self = str(node, "cte_name");
        if (!self || w->n_scope == MAX_SCOPE) {
            rc = refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s", "an unreadable recursive CTE");
            goto out;
        }
        w->scope[w->n_scope++] = self; /* the recursive part sees itself */
        rc = walk_node(w, json_object_get(node, "right"), depth + 1);
    } else {
        rc = refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "unsupported query: %s", type);
    }
out:
    w->n_scope = mark;
    return rc;
}

void sql_checked_release(struct sql_checked *c)
{
    for (size_t i = 0; i < c->n_depends_on; i++)
        free(c->depends_on[i]);
    free(c->depends_on);
    c->depends_on = NULL;
    c->n_depends_on = 0;
}

/* The statement that serializes, prepared once per connection: preparing it
 * cost more than running it (vt-gate-bench), and a worker thread keeps its
 * connection for life. One per thread, for the last connection it served. */
struct gate_cache {
    duckdb_connection con;
    duckdb_prepared_statement ps;
};

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void cache_free(void *p)
{
    struct gate_cache *c = p;
    if (c->ps)
        duckdb_destroy_prepare(&c->ps);
    free(c);
}

static void cache_key_init(void)
{
    pthread_key_create(&cache_key, cache_free);
}

static struct gate_cache *cache(void)
{
    pthread_once(&cache_once, cache_key_init);
    struct gate_cache *c = pthread_getspecific(cache_key);
    if (!c && (c = calloc(1, sizeof *c)) != NULL)
        pthread_setspecific(cache_key, c);
    return c;
}

void sql_gate_forget(duckdb_connection con)
{
    pthread_once(&cache_once, cache_key_init);
    struct gate_cache *c = pthread_getspecific(cache_key);
    if (c && c->con == con && c->ps) {
        duckdb_destroy_prepare(&c->ps);
        c->con = NULL;
    }
}

void sql_gate_thread_release(void)
{
    pthread_once(&cache_once, cache_key_init);
    struct gate_cache *c = pthread_getspecific(cache_key);
    if (c) {
        pthread_setspecific(cache_key, NULL);
        cache_free(c);
    }
}

/* DuckDB's serialization of `sql` (a malloc'd string), or NULL with err set. */
static char *serialize(duckdb_connection con, const char *sql, struct vt_error *err)
{
    struct gate_cache *c = cache();
    duckdb_prepared_statement ps = c && c->con == con ? c->ps : NULL;
    bool cached = ps != NULL;
    if (!ps) {
        if (duckdb_prepare(con, "SELECT json_serialize_sql(CAST($1 AS VARCHAR))", &ps) !=
            DuckDBSuccess) {
            vt_error_set(err, VT_ERR_INTERNAL, "json_serialize_sql: %s", duckdb_prepare_error(ps));
            duckdb_destroy_prepare(&ps);
            return NULL;
        }
        if (c) {
            if (c->ps)
                duckdb_destroy_prepare(&c->ps);
            c->con = con;
            c->ps = ps;
            cached = true;
        }
    }
    duckdb_bind_varchar(ps, 1, sql);
    duckdb_result res;
    char *out = NULL;
    if (duckdb_execute_prepared(ps, &res) == DuckDBSuccess) {
        out = duckdb_value_varchar(&res, 0, 0);
        if (!out)
            vt_error_set(err, VT_ERR_INTERNAL, "json_serialize_sql returned nothing");
    } else {
        vt_error_set(err, VT_ERR_SQL_SYNTAX, "%s", duckdb_result_error(&res));
    }
    duckdb_destroy_result(&res);
    if (!cached)
        duckdb_destroy_prepare(&ps);
    if (out) { /* duckdb's allocation -> ours */
        char *copy = strdup(out);
        duckdb_free(out);
        out = copy;
    }
    return out;
}

enum vt_err sql_gate_check(duckdb_connection con, const char *sql, sql_is_dataset_fn is_dataset,
                           void *ctx, struct sql_checked *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    if (!sql || !*sql)
        return vt_error_set(err, VT_ERR_SQL_SYNTAX, "empty SQL statement");
    if (strlen(sql) > VT_MAX_SQL_BYTES)
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "SQL longer than %d bytes",
                            VT_MAX_SQL_BYTES);
    char *text = serialize(con, sql, err);
    if (!text)
        return err->code;
    json_error_t jerr;
    /* Integers as reals: query_location is 2^64-1 in places, and nothing the
     * gate decides depends on an integer's exact value. */
    json_t *root = json_loads(text, JSON_DECODE_INT_AS_REAL, &jerr);
    free(text);
    if (!root)
        return vt_error_set(err, VT_ERR_INTERNAL, "unreadable parse tree: %s", jerr.text);
    enum vt_err rc = VT_ERR_OK;
    json_t *e = json_object_get(root, "error");
    const json_t *stmts = json_object_get(root, "statements");
    if (json_is_true(e)) {
        const char *type = str(root, "error_type");
        const char *msg = str(root, "error_message");
        if (type && !strcmp(type, "not implemented"))
            rc = vt_error_set(err, VT_ERR_SQL_NOT_READ_ONLY,
                              "only one read-only SELECT (or WITH ... SELECT) statement is "
                              "allowed");
        else
            rc = vt_error_set(err, VT_ERR_SQL_SYNTAX, "%s", msg ? msg : "syntax error");
    } else if (!json_is_array(stmts) || json_array_size(stmts) != 1) {
        rc = vt_error_set(err, json_array_size(stmts) > 1 ? VT_ERR_SQL_NOT_READ_ONLY
                                                          : VT_ERR_SQL_SYNTAX,
                          json_array_size(stmts) > 1
                              ? "exactly one statement is allowed, got %zu"
                              : "no statement (%zu)",
                          json_array_size(stmts));
    } else {
        const json_t *node = json_object_get(json_array_get(stmts, 0), "node");
        struct walk w = {.is_dataset = is_dataset, .ctx = ctx, .err = err, .out = out};
        rc = node ? walk_node(&w, node, 0)
                  : vt_error_set(err, VT_ERR_SQL_SYNTAX, "no statement");
    }
    json_decref(root);
    if (rc != VT_ERR_OK)
        sql_checked_release(out);
    return rc;
}

/* ---------------------------------------------------------------- cycles */

#define CYCLE_MAX_SEEN 1024

struct seen {
    const char *names[CYCLE_MAX_SEEN];
    size_t n;
};

/* Depth-first from `name`; `seen` holds every dataset already explored (a
 * dataset that did not lead back to start once never will). */
static bool visit(const char *name, const char *start, sql_deps_fn deps, void *ctx,
                  struct seen *seen, char *path, size_t cap)
{
    for (size_t i = 0; i < seen->n; i++)
        if (!strcmp(seen->names[i], name))
            return false;
    if (seen->n == CYCLE_MAX_SEEN)
        return true; /* a graph this large is refused rather than searched */
    seen->names[seen->n++] = name;
    const char *const *list;
    size_t n;
    deps(ctx, name, &list, &n);
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(list[i], start) || visit(list[i], start, deps, ctx, seen, path, cap)) {
            if (path && cap) {
                char tmp[512];
                snprintf(tmp, sizeof tmp, "%s -> %s", name, path[0] ? path : start);
                snprintf(path, cap, "%s", tmp);
            }
            return true;
        }
    }
    return false;
}

bool sql_has_cycle(const char *start, sql_deps_fn deps, void *ctx, char *out_path,
                   size_t path_cap)
{
    if (out_path && path_cap)
        out_path[0] = '\0';
    struct seen *seen = calloc(1, sizeof *seen);
    if (!seen)
        return true;
    bool cycle = visit(start, start, deps, ctx, seen, out_path, path_cap);
    free(seen);
    return cycle;
}
