/*
 * The SQL gate (see sql.h): DuckDB parses the statement into its JSON tree
 * (json_serialize_sql), and this file walks the tree with what DuckDB 1.4.4
 * puts in it: query nodes (SELECT_NODE, SET_OPERATION_NODE,
 * RECURSIVE_CTE_NODE), table references (BASE_TABLE, JOIN, SUBQUERY,
 * TABLE_FUNCTION, EXPRESSION_LIST, EMPTY) and expressions (by "class").
 * Every key of a node or table reference must be known, every expression
 * class must be known: a DuckDB upgrade that adds something makes the gate
 * refuse it until this file learns it.
 *
 * With a dialect (sql.h: the PostgreSQL listener's names) the same walk
 * calls the dialect's hooks, which may map names in place; the mapped tree
 * goes back to SQL through json_deserialize_sql: the decisions are the same
 * walk's, only the names DuckDB resolves change.
 */
#include <ctype.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "sql/sql.h"
#include "util/limits.h"
#include "util/strbuf.h"

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
    const struct sql_gate_options *opts;
    const struct sql_dialect *dialect; /* opts->dialect */
    bool changed;               /* a hook mapped the tree */
    bool catalog;               /* a hook mapped a name onto the dialect's own objects */
    int collations;             /* icu_collate_* and icu_sort_key calls seen */
    uint64_t macro_mult;        /* copies of the expression being walked once macros around
                                 * it are expanded (1: none) */
    uint64_t macro_nodes;       /* expression nodes macros add to the statement */
};

/* The hooks' view of the walk (sql.h). */
bool sql_walk_in_scope(const struct sql_walk *sw, const char *name);
bool sql_walk_is_dataset(const struct sql_walk *sw, const char *name);

static enum vt_err refuse(struct walk *w, enum vt_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum vt_err refuse(struct walk *w, enum vt_err code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum vt_err rc = vt_error_setv(w->err, code, fmt, ap);
    va_end(ap);
    return rc;
}

static enum vt_err walk_node(struct walk *w, const json_t *node, int depth);
static enum vt_err walk_table(struct walk *w, const json_t *ref, int depth);
static enum vt_err walk_expr(struct walk *w, const json_t *e, int depth);
static enum vt_err walk_any(struct walk *w, const json_t *v, int depth);

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

/* Every member of object o, as walk_any. */
static enum vt_err walk_members(struct walk *w, const json_t *o, int depth)
{
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)o, k, x) {
        enum vt_err rc = walk_any(w, x, depth + 1);
        if (rc)
            return rc;
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
    /* Modifiers (ORDER, LIMIT, DISTINCT), order terms ({"type":
     * "ASCENDING", "expression": ...}), sample options, CASE checks
     * ({"when_expr", "then_expr"}), value objects of constants: walk what
     * they hold. */
    return walk_members(w, v, depth);
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
    /* DuckDB's parser names many everyday forms by their schema: EXTRACT is
     * main.date_part, trim(s) main.trim, substring main.substring, AT TIME
     * ZONE main.timezone, [..] main.list_value, {..} main.struct_pack. So
     * the schema-qualified form of an allowed function is allowed when the
     * schema is main or pg_catalog: main resolves to the same function (or to
     * the bounded wrapper engine/functions.c puts in front of it), and
     * pg_catalog holds only PostgreSQL-compatibility macros, so an allowed
     * name there is the same function or does not resolve. Any other schema,
     * and any catalog (system.main.f reaches a built-in past its wrapper),
     * stays refused. */
    bool qualified = (schema && *schema) || (catalog && *catalog);
    bool plain_schema = schema && (!strcmp(schema, "main") || !strcmp(schema, "pg_catalog"));
    if (qualified && (!plain_schema || (catalog && *catalog)))
        return refuse(w, VT_ERR_SQL_FORBIDDEN_FUNCTION,
                      "function %s: names qualified by a catalog or by a schema other than main "
                      "or pg_catalog are not allowed",
                      name);
    bool ok = table ? sql_table_function_allowed(name) : sql_function_allowed(name);
    if (!ok)
        return refuse(w, VT_ERR_SQL_FORBIDDEN_FUNCTION,
                      table ? "table function %s is not allowed (allowed: range, generate_series, "
                              "unnest, json_each, json_tree)"
                            : "function %s is not allowed",
                      name);
    return VT_ERR_OK;
}

/* ------------------------------------------------------- dialect hooks */

void *sql_walk_context(const struct sql_walk *sw)
{
    const struct walk *w = (const struct walk *)sw;
    return w->opts ? w->opts->dialect_ctx : NULL;
}

bool sql_walk_in_scope(const struct sql_walk *sw, const char *name)
{
    return in_scope((const struct walk *)sw, name);
}

bool sql_walk_is_dataset(const struct sql_walk *sw, const char *name)
{
    const struct walk *w = (const struct walk *)sw;
    return w->is_dataset(w->ctx, name);
}

void sql_walk_changed(struct sql_walk *sw, bool own)
{
    struct walk *w = (struct walk *)sw;
    w->changed = true;
    w->catalog |= own;
}

struct vt_error *sql_walk_error(struct sql_walk *sw)
{
    return ((struct walk *)sw)->err;
}

static enum vt_err hook_refused(struct walk *w)
{
    if (w->err->code == VT_ERR_OK)
        return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s", "refused by the SQL dialect");
    return w->err->code;
}

/* What a hook may call its own: "vt:" names (no dataset and no allowlisted
 * function has a colon), and unnest, which DuckDB's parser itself writes
 * for `x = ANY(array)` (a scalar use of the table function). */
static bool own_name(const char *name)
{
    return name && (!strncmp(name, "vt:", 3) || !strcmp(name, "unnest"));
}

/* An expression a hook mapped onto its own function: the name is the
 * hook's, the arguments are the user's. */
static enum vt_err walk_own(struct walk *w, const json_t *e, int depth)
{
    const char *cls = str(e, "class");
    if (!cls || strcmp(cls, "FUNCTION") != 0 || !own_name(str(e, "function_name")))
        return refuse(w, VT_ERR_INTERNAL, "%s", "a dialect hook claimed a name it may not own");
    if (!strncmp(str(e, "function_name"), "vt:", 3))
        w->changed = w->catalog = true;
    return walk_members(w, e, depth);
}

/* Whether a serialized type, or any type nested in it, has a member for
 * which match(key, value) holds. Fails closed: too deep counts as a match. */
static bool type_has(const json_t *t, bool (*match)(const char *key, const json_t *v), int depth)
{
    if (depth > MAX_DEPTH)
        return true;
    const char *k;
    const json_t *x;
    size_t i;
    if (json_is_array(t)) {
        json_array_foreach(t, i, x) {
            if (match(NULL, x) || type_has(x, match, depth + 1))
                return true;
        }
    } else if (json_is_object(t)) {
        json_object_foreach((json_t *)t, k, x) {
            if (match(k, x) || type_has(x, match, depth + 1))
                return true;
        }
    }
    return false;
}

/* An aggregate state: DuckDB 1.4.4's parser has no syntax for one, but a
 * cast target is input and the walk fails closed. */
static bool is_aggregate_state(const char *key, const json_t *v)
{
    (void)key;
    return json_is_string(v) && strstr(json_string_value(v), "AGGREGATE_STATE") != NULL;
}

/* VARIANT. DuckDB 1.4.4 converts JSON to VARIANT recursively over the
 * document: a cast of 30,000 nested '[' took the server down (stack
 * overflow, fuzz7's probe). Nothing but a cast makes a VARIANT here (no
 * dataset column is one, json_transform refuses the type), so without the
 * cast no JSON is ever converted. */
static bool is_variant(const char *key, const json_t *v)
{
    return key && !strcmp(key, "id") && json_is_string(v) &&
           !strcmp(json_string_value(v), "VARIANT");
}

/* lead/lag: DuckDB 1.4.4 negates the offset without checking it when the
 * window has no ORDER BY, and -9223372036854775808 (or an expression worth
 * it: the offset is evaluated per row) read far outside the partition and
 * took the server down (SIGSEGV; fuzz7's probe). The offset must be an
 * integer constant within VT_SQL_MAX_WINDOW_OFFSET rows, more than any
 * partition holds; absent (1) and NULL stay as they are. */
static enum vt_err check_lead_lag(struct walk *w, const json_t *e)
{
    const char *type = str(e, "type");
    if (!type || (strcmp(type, "WINDOW_LEAD") != 0 && strcmp(type, "WINDOW_LAG") != 0))
        return VT_ERR_OK;
    const json_t *off = json_object_get(e, "offset_expr");
    if (!off || json_is_null(off))
        return VT_ERR_OK;
    const char *cls = str(off, "class");
    const json_t *v = json_object_get(off, "value");
    const json_t *tid = json_object_get(json_object_get(v, "type"), "id");
    static const char *const ints[] = {"TINYINT",  "SMALLINT", "INTEGER",  "BIGINT",
                                       "UTINYINT", "USMALLINT", "UINTEGER", NULL};
    bool is_int = false;
    for (size_t i = 0; ints[i] && json_is_string(tid) && !is_int; i++)
        is_int = !strcmp(json_string_value(tid), ints[i]);
    /* the plain gate reads numbers as reals (see protect_bigints) */
    const json_t *n = json_object_get(v, "value");
    bool ok = cls && !strcmp(cls, "CONSTANT") &&
              (json_is_true(json_object_get(v, "is_null")) ||
               (is_int && json_is_number(n) &&
                json_number_value(n) >= -(double)VT_SQL_MAX_WINDOW_OFFSET &&
                json_number_value(n) <= (double)VT_SQL_MAX_WINDOW_OFFSET));
    if (ok)
        return VT_ERR_OK;
    return refuse(w, VT_ERR_LIMIT_EXCEEDED,
                  "%s: the offset must be an integer constant between -%lld and %lld "
                  "(the limit of rows a window function may look past)",
                  strcmp(type, "WINDOW_LAG") ? "lead" : "lag",
                  (long long)VT_SQL_MAX_WINDOW_OFFSET, (long long)VT_SQL_MAX_WINDOW_OFFSET);
}

/* A frame that excludes rows (EXCLUDE CURRENT ROW, GROUP or TIES): DuckDB
 * 1.4.4 never frees the strings that min, max, histogram (and min/max of
 * BLOBs, lists and structs) copy into the states it combines over such a
 * frame, so every run of one leaked about a row's text per row (fuzz8's
 * fuzz_sql_functions: 1 MB per 1,000 rows of 1,000 bytes, for good).
 * EXCLUDE NO OTHERS, the default, stays. */
static enum vt_err check_frame_exclude(struct walk *w, const json_t *e)
{
    const char *ex = str(e, "exclude_clause");
    if (!ex || !strcmp(ex, "NO_OTHER"))
        return VT_ERR_OK;
    return refuse(w, VT_ERR_SQL_FORBIDDEN_FUNCTION,
                  "%s: window frames cannot exclude rows (EXCLUDE CURRENT ROW, GROUP or TIES)",
                  str(e, "function_name") ? str(e, "function_name") : "window");
}

/* An aggregate with ORDER BY over groups keeps, per group, a state DuckDB
 * 1.4.4 never frees when the aggregate fails while it runs (the inner
 * aggregate is updated at the end, from the sorted input): a leak per
 * failed statement of a state per group, 96 KB for 1,000 groups of
 * arg_max(x, y, NULL ORDER BY z) (fuzz_sql_functions' campaign, LeakSanitizer).
 * Refused for the aggregates that fail on their values: the top-N forms
 * (n NULL or out of range), approx_top_k, bitstring_agg (a value outside
 * its range). The others do not fail there. */
static enum vt_err check_sorted_aggregate(struct walk *w, const json_t *e)
{
    const json_t *ob = json_object_get(json_object_get(e, "order_bys"), "orders");
    const char *name = str(e, "function_name");
    if (!name || !json_is_array(ob) || json_array_size(ob) == 0)
        return VT_ERR_OK;
    static const struct {
        const char *name;
        size_t args; /* from this many arguments */
    } failing[] = {{"arg_max", 3},      {"arg_min", 3},      {"max_by", 3},     {"min_by", 3},
                   {"argmax", 3},       {"argmin", 3},       {"arg_max_null", 3},
                   {"arg_min_null", 3}, {"min", 2},          {"max", 2},        {"approx_top_k", 0},
                   {"bitstring_agg", 0}};
    size_t n = json_array_size(json_object_get(e, "children"));
    for (size_t i = 0; i < sizeof failing / sizeof failing[0]; i++)
        if (!strcmp(name, failing[i].name) && n >= failing[i].args)
            return refuse(w, VT_ERR_SQL_FORBIDDEN_FUNCTION,
                          "%s(... ORDER BY ...) is not allowed: when it fails, DuckDB 1.4.4 "
                          "keeps its state per group (a leak); order the rows in a subquery",
                          name);
    return VT_ERR_OK;
}

/* A collation's sort key is about twice its text, and ICU builds it in one
 * call DuckDB cannot interrupt: icu_collate_mn nested 54 deep ran on past
 * its deadline without end (fuzz7's fuzz_sql_functions, the deep shape;
 * 16 deep took 21 s and 900 MB). The statement may make
 * VT_SQL_MAX_COLLATE_CALLS of them, nested or not. */
static enum vt_err count_collations(struct walk *w, const char *name)
{
    if (!name || (strncmp(name, "icu_collate_", 12) != 0 && strcmp(name, "icu_sort_key") != 0))
        return VT_ERR_OK;
    if (++w->collations <= VT_SQL_MAX_COLLATE_CALLS)
        return VT_ERR_OK;
    return refuse(w, VT_ERR_LIMIT_EXCEEDED,
                  "%s: at most %d icu_collate_*/icu_sort_key calls in a statement (the limit; "
                  "each nested one doubles its text)",
                  name, VT_SQL_MAX_COLLATE_CALLS);
}

static enum vt_err walk_expr(struct walk *w, const json_t *e, int depth)
{
    if (depth > MAX_DEPTH)
        return refuse(w, VT_ERR_LIMIT_EXCEEDED, "%s", "statement nested too deeply");
    const char *cls = str(e, "class");
    if (!cls)
        return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s", "an expression without a class");
    if (w->dialect && w->dialect->expr && !json_is_true(json_object_get(e, "export_state"))) {
        switch (w->dialect->expr((struct sql_walk *)w, (json_t *)e)) {
        case SQL_HOOK_CHECK:
            if (!(cls = str(e, "class")))
                return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s", "an expression without a class");
            break;
        case SQL_HOOK_AGAIN:
            return walk_expr(w, e, depth + 1);
        case SQL_HOOK_OWN:
            return walk_own(w, e, depth);
        case SQL_HOOK_REFUSED:
            return hook_refused(w);
        default:
            return refuse(w, VT_ERR_INTERNAL, "%s", "a dialect hook gave a table answer");
        }
    }
    static const char *const plain[] = {"COLUMN_REF", "CONSTANT",   "COMPARISON", "CONJUNCTION",
                                        "OPERATOR",   "CASE",       "CAST",       "BETWEEN",
                                        "STAR",       "LAMBDA",     "COLLATE",    "LAMBDA_REF",
                                        "POSITIONAL_REFERENCE",     "DEFAULT",    NULL};
    bool known = false;
    for (size_t i = 0; plain[i] && !known; i++)
        known = !strcmp(cls, plain[i]);
    if (!strcmp(cls, "FUNCTION") || !strcmp(cls, "WINDOW")) {
        /* An exported aggregate state is the aggregate's raw memory (its
         * strings are pointers): shown, it leaks addresses; cast back from
         * forged bytes, it reads or crashes the process. */
        if (json_is_true(json_object_get(e, "export_state")))
            return refuse(w, VT_ERR_SQL_FORBIDDEN_FUNCTION,
                          "%s: aggregate states cannot be exported (EXPORT_STATE)",
                          str(e, "function_name") ? str(e, "function_name") : "function");
        enum vt_err rc = check_function(w, e, false);
        if (!rc && !strcmp(cls, "FUNCTION"))
            rc = check_sorted_aggregate(w, e);
        if (!rc && !strcmp(cls, "WINDOW")) {
            rc = check_lead_lag(w, e);
            if (!rc)
                rc = check_frame_exclude(w, e);
        }
        if (!rc)
            rc = count_collations(w, str(e, "function_name"));
        if (rc)
            return rc;
        known = true;
    } else if (!strcmp(cls, "SUBQUERY")) {
        known = true;
    } else if (!strcmp(cls, "PARAMETER")) {
        if (!w->opts || !w->opts->allow_params)
            return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s",
                          "parameters ($1, ?) are not supported here; write the values");
        known = true;
    }
    if (!known)
        return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "unsupported SQL expression: %s", cls);
    /* A type's own nesting, from 0: at the expression's depth, a cast deep
     * in a statement (to_json(...)::VARCHAR 40 times) failed closed as a
     * "cast to an aggregate state" */
    const json_t *cast_type = json_object_get(e, "cast_type");
    if (!strcmp(cls, "CAST") && type_has(cast_type, is_aggregate_state, 0))
        return refuse(w, VT_ERR_SQL_FORBIDDEN_FUNCTION, "%s",
                      "casts to aggregate states are not allowed");
    if (!strcmp(cls, "CAST") && type_has(cast_type, is_variant, 0))
        return refuse(w, VT_ERR_SQL_FORBIDDEN_FUNCTION, "%s",
                      "casts to VARIANT are not allowed (DuckDB converts JSON to VARIANT "
                      "recursively: deep documents overflow its stack)");
    /* Children of every known class: walk all members generically. A
     * macro is expanded at bind, where nothing can interrupt it: each use of
     * a parameter in its body is a copy of the argument, so macros nested in
     * each other's arguments grow the statement exponentially
     * (format_pg_type uses its argument 15 times: 4 deep took 3 s to bind,
     * 6 deep half an hour; stop 41's CI). Count the nodes the expansion
     * adds (sql_macro_expansion: each macro's body and fan-out) and refuse
     * past VT_SQL_MAX_MACRO_NODES. */
    if (w->macro_mult > 1)
        w->macro_nodes += w->macro_mult;
    unsigned fanout = 0, body = 0;
    bool macro = !strcmp(cls, "FUNCTION") &&
                 sql_macro_expansion(str(e, "function_name"), &fanout, &body);
    uint64_t outer = w->macro_mult;
    if (macro) {
        w->macro_nodes += outer * body;
        if (w->macro_nodes > VT_SQL_MAX_MACRO_NODES)
            return refuse(w, VT_ERR_LIMIT_EXCEEDED,
                          "%s: the macros of this statement expand to more than %d expression "
                          "nodes (the limit; each use of a macro's parameter copies its "
                          "argument, so macros nested in one another's arguments multiply)",
                          str(e, "function_name"), VT_SQL_MAX_MACRO_NODES);
        w->macro_mult = outer * fanout;
    }
    enum vt_err rc = walk_members(w, e, depth);
    w->macro_mult = outer;
    return rc;
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
        if (!json_is_null(json_object_get(ref, "at_clause")))
            return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "table %s: AT (time travel) is not supported",
                          name);
        if ((rc = walk_any(w, json_object_get(ref, "sample"), depth + 1)))
            return rc;
        if (w->dialect && w->dialect->table) {
            switch (w->dialect->table((struct sql_walk *)w, (json_t *)ref)) {
            case SQL_HOOK_CHECK:
                break;
            case SQL_HOOK_OWN:
                if (!(name = str(ref, "table_name")) || strncmp(name, "vt:", 3) != 0 ||
                    ((schema = str(ref, "schema_name")) && *schema) ||
                    ((catalog = str(ref, "catalog_name")) && *catalog))
                    return refuse(w, VT_ERR_INTERNAL, "%s",
                                  "a dialect hook claimed a table it may not own");
                w->changed = w->catalog = true;
                return VT_ERR_OK;
            case SQL_HOOK_DATASET:
                name = str(ref, "table_name");
                if (!name || ((schema = str(ref, "schema_name")) && *schema) ||
                    ((catalog = str(ref, "catalog_name")) && *catalog) ||
                    !w->is_dataset(w->ctx, name))
                    return refuse(w, VT_ERR_INTERNAL, "%s",
                                  "a dialect hook named a table that is not a dataset");
                return add_dependency(w, name);
            case SQL_HOOK_REFUSED:
                return hook_refused(w);
            default:
                return refuse(w, VT_ERR_INTERNAL, "%s", "a dialect hook gave an expression answer");
            }
            name = str(ref, "table_name");
            schema = str(ref, "schema_name");
            catalog = str(ref, "catalog_name");
            if (!name)
                return refuse(w, VT_ERR_SQL_UNKNOWN_TABLE, "%s", "a table without a name");
        }
        if ((schema && *schema) || (catalog && *catalog))
            return refuse(w, VT_ERR_SQL_UNKNOWN_TABLE,
                          "table %s: schema- or catalog-qualified names are not allowed "
                          "(datasets are plain names)",
                          name);
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
        if (w->dialect && w->dialect->table) {
            switch (w->dialect->table((struct sql_walk *)w, (json_t *)ref)) {
            case SQL_HOOK_CHECK:
                break;
            case SQL_HOOK_AGAIN: /* now another kind of reference (a subquery) */
                if (!(type = str(ref, "type")) || !strcmp(type, "TABLE_FUNCTION"))
                    return refuse(w, VT_ERR_INTERNAL, "%s",
                                  "a dialect hook left a table function as it was");
                return walk_table(w, ref, depth + 1);
            case SQL_HOOK_OWN: { /* now a base table of the dialect's own */
                const char *t = str(ref, "table_name"), *sch = str(ref, "schema_name");
                if (!(type = str(ref, "type")) || strcmp(type, "BASE_TABLE") != 0 || !t ||
                    strncmp(t, "vt:", 3) != 0 || (sch && *sch))
                    return refuse(w, VT_ERR_INTERNAL, "%s",
                                  "a dialect hook claimed a table it may not own");
                w->changed = w->catalog = true;
                return VT_ERR_OK;
            }
            case SQL_HOOK_REFUSED:
                return hook_refused(w);
            default:
                return refuse(w, VT_ERR_INTERNAL, "%s",
                              "a dialect hook claimed a table function");
            }
        }
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
    if (!strcmp(type, "SHOW_REF")) {
        /* DESCRIBE <query or dataset> and SUMMARIZE <...>: DuckDB describes
         * (or summarizes) the query it holds, which the walk checks like any
         * other. SHOW TABLES, DESCRIBE alone and SHOW <name> name no query:
         * they would list the process's internal databases and views. */
        static const char *const keys[] = {"type", "alias", "sample", "query_location",
                                           "table_name", "query", "show_type", "catalog_name",
                                           "schema_name", NULL};
        if ((rc = known_keys(w, ref, keys, "DESCRIBE")))
            return rc;
        const char *show = str(ref, "show_type");
        const char *tname = str(ref, "table_name");
        const json_t *query = json_object_get(ref, "query");
        if (!show || (strcmp(show, "DESCRIBE") != 0 && strcmp(show, "SUMMARY") != 0) ||
            (tname && *tname) || !json_is_object(query) || !json_object_get(query, "type"))
            return refuse(w, VT_ERR_SQL_NOT_READ_ONLY, "%s",
                          "SHOW and DESCRIBE without a dataset or query are not supported "
                          "(the datasets are listed at GET /api/v1/datasets)");
        if ((rc = walk_any(w, json_object_get(ref, "sample"), depth + 1)))
            return rc;
        return walk_node(w, query, depth + 1);
    }
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
    free(c->rewritten);
    c->rewritten = NULL;
    c->reads_catalog = false;
    sql_lookup_free(c->lookup);
    c->lookup = NULL;
}

/* ------------------------------------------------------- equality lookups */

void sql_lookup_free(struct sql_lookup *l)
{
    if (!l)
        return;
    free(l->dataset);
    for (size_t i = 0; i < l->ncolumns; i++)
        free(l->columns[i]);
    free(l->columns);
    for (size_t i = 0; i < l->nterms; i++) {
        free(l->terms[i].column);
        free(l->terms[i].json);
    }
    free(l->terms);
    free(l);
}

static bool empty_array(const json_t *v)
{
    return json_is_array(v) && json_array_size(v) == 0;
}

static bool null_or_absent(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return !v || json_is_null(v);
}

/* The column a COLUMN_REF names: `c`, or `q.c` where q is the table's name
 * or alias. */
static const char *lookup_column(const json_t *e, const char *table, const char *alias)
{
    const char *cls = str(e, "class");
    const json_t *names = json_object_get(e, "column_names");
    if (!cls || strcmp(cls, "COLUMN_REF") != 0 || !json_is_array(names))
        return NULL;
    size_t n = json_array_size(names);
    if (n == 1)
        return json_string_value(json_array_get(names, 0));
    const char *q = n == 2 ? json_string_value(json_array_get(names, 0)) : NULL;
    if (q && (!strcmp(q, table) || (alias && *alias && !strcmp(q, alias))))
        return json_string_value(json_array_get(names, 1));
    return NULL;
}

static bool lookup_term(const json_t *e, const char *table, const char *alias,
                        struct sql_lookup_term *out)
{
    const char *cls = str(e, "class"), *type = str(e, "type");
    if (!cls || strcmp(cls, "COMPARISON") != 0 || !type || strcmp(type, "COMPARE_EQUAL") != 0)
        return false;
    const json_t *l = json_object_get(e, "left"), *r = json_object_get(e, "right");
    const char *col = lookup_column(l, table, alias);
    const json_t *v = r;
    if (!col) {
        col = lookup_column(r, table, alias);
        v = l;
    }
    const char *vcls = col ? str(v, "class") : NULL;
    if (!vcls)
        return false;
    if (!strcmp(vcls, "PARAMETER")) {
        const char *id = str(v, "identifier");
        char *end;
        long k = id ? strtol(id, &end, 10) : 0;
        if (!id || *end || k < 1 || k > 65535)
            return false;
        out->param = (int)k;
    } else if (!strcmp(vcls, "CONSTANT")) {
        const json_t *val = json_object_get(v, "value");
        const json_t *t = json_object_get(val, "type");
        const char *id = json_is_object(t) ? str(t, "id") : NULL;
        const json_t *x = json_object_get(val, "value");
        if (!id || json_is_true(json_object_get(val, "is_null")))
            return false;
        bool integer = !strcmp(id, "INTEGER") || !strcmp(id, "BIGINT") ||
                       !strcmp(id, "SMALLINT") || !strcmp(id, "TINYINT");
        if (!(integer && json_is_integer(x)) && !(!strcmp(id, "VARCHAR") && json_is_string(x)))
            return false;
        out->json = json_dumps(x, JSON_ENCODE_ANY);
        if (!out->json)
            return false;
    } else {
        return false;
    }
    out->column = strdup(col);
    return out->column != NULL;
}

/* Describes node as an equality lookup on its one dataset, or NULL. */
static struct sql_lookup *recognize_lookup(const json_t *node, const struct sql_checked *chk)
{
    static const char *const keys[] = {"type", "modifiers", "cte_map", "select_list",
                                       "from_table", "where_clause", "group_expressions",
                                       "group_sets", "aggregate_handling", "having", "sample",
                                       "qualify", NULL};
    const char *type = str(node, "type");
    if (chk->n_depends_on != 1 || !type || strcmp(type, "SELECT_NODE") != 0)
        return NULL;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)node, k, v) {
        size_t i = 0;
        while (keys[i] && strcmp(keys[i], k) != 0)
            i++;
        if (!keys[i])
            return NULL;
    }
    const json_t *cm = json_object_get(node, "cte_map");
    const char *agg = str(node, "aggregate_handling");
    if (!empty_array(json_object_get(node, "modifiers")) ||
        (cm && !json_is_null(cm) && !empty_array(json_object_get(cm, "map"))) ||
        !empty_array(json_object_get(node, "group_expressions")) ||
        !empty_array(json_object_get(node, "group_sets")) || !null_or_absent(node, "having") ||
        !null_or_absent(node, "sample") || !null_or_absent(node, "qualify") ||
        (agg && strcmp(agg, "STANDARD_HANDLING") != 0))
        return NULL;
    const json_t *from = json_object_get(node, "from_table");
    const char *ft = str(from, "type"), *table = str(from, "table_name");
    const char *schema = str(from, "schema_name"), *alias = str(from, "alias");
    if (!ft || strcmp(ft, "BASE_TABLE") != 0 || !table || (schema && *schema) ||
        strcmp(table, chk->depends_on[0]) != 0 || !null_or_absent(from, "sample") ||
        !null_or_absent(from, "at_clause") ||
        !empty_array(json_object_get(from, "column_name_alias")))
        return NULL;
    struct sql_lookup *l = calloc(1, sizeof *l);
    if (!l || !(l->dataset = strdup(table)))
        goto no;
    const json_t *list = json_object_get(node, "select_list");
    size_t n = json_array_size(list);
    if (n == 0)
        goto no;
    const json_t *first = json_array_get(list, 0);
    const char *fc = str(first, "class");
    if (n == 1 && fc && !strcmp(fc, "STAR")) {
        const char *rel = str(first, "relation_name");
        if (!empty_array(json_object_get(first, "exclude_list")) ||
            !empty_array(json_object_get(first, "replace_list")) ||
            !empty_array(json_object_get(first, "rename_list")) ||
            !empty_array(json_object_get(first, "qualified_exclude_list")) ||
            json_is_true(json_object_get(first, "columns")) || !null_or_absent(first, "expr") ||
            (rel && *rel && strcmp(rel, table) != 0 && !(alias && !strcmp(rel, alias))))
            goto no;
    } else {
        if (!(l->columns = calloc(n, sizeof *l->columns)))
            goto no;
        for (size_t i = 0; i < n; i++) {
            const json_t *e = json_array_get(list, i);
            const char *c = lookup_column(e, table, alias);
            const char *a = str(e, "alias");
            if (!c || (a && *a && strcmp(a, c) != 0) || !(l->columns[i] = strdup(c)))
                goto no;
            l->ncolumns++;
        }
    }
    const json_t *w = json_object_get(node, "where_clause");
    const char *wc = str(w, "class"), *wt = str(w, "type");
    const json_t *children = wc && !strcmp(wc, "CONJUNCTION") && wt &&
                                     !strcmp(wt, "CONJUNCTION_AND")
                                 ? json_object_get(w, "children")
                                 : NULL;
    size_t nt = children ? json_array_size(children) : (w && !json_is_null(w) ? 1 : 0);
    if (nt == 0 || nt > 16 || !(l->terms = calloc(nt, sizeof *l->terms)))
        goto no;
    for (size_t i = 0; i < nt; i++) {
        if (!lookup_term(children ? json_array_get(children, i) : w, table, alias,
                         &l->terms[i])) {
            l->nterms = i + 1; /* frees what the failed term got */
            goto no;
        }
        l->nterms = i + 1;
    }
    return l;
no:
    sql_lookup_free(l);
    return NULL;
}

/* The two statements the gate runs, prepared once per connection: preparing
 * `SELECT json_serialize_sql($1)` costs ~0.5 ms, running it ~0.07 ms
 * (measured on the development machine). A worker thread keeps one
 * connection for life (engine.h), so the cache is per thread; a thread that
 * ends frees it. */
struct gate_cache {
    duckdb_connection con;
    duckdb_prepared_statement ser, deser;
};

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static _Thread_local struct gate_cache *tls_cache; /* keeps it reachable (LeakSanitizer) */

static void cache_free(void *p)
{
    struct gate_cache *c = p;
    duckdb_destroy_prepare(&c->ser);
    duckdb_destroy_prepare(&c->deser);
    free(c);
}

static void cache_key_init(void)
{
    pthread_key_create(&cache_key, cache_free);
}

void sql_thread_release(void)
{
    pthread_once(&cache_once, cache_key_init);
    struct gate_cache *c = tls_cache;
    if (!c)
        return;
    tls_cache = NULL;
    pthread_setspecific(cache_key, NULL);
    cache_free(c);
}

/* The prepared statement `*slot` of this thread's cache for `con` (made on
 * first use), or NULL with err set. */
static duckdb_prepared_statement cached(duckdb_connection con, bool ser, struct vt_error *err)
{
    pthread_once(&cache_once, cache_key_init);
    struct gate_cache *c = tls_cache;
    if (c && c->con != con) {
        duckdb_destroy_prepare(&c->ser);
        duckdb_destroy_prepare(&c->deser);
        c->con = con;
    }
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c) {
            vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
            return NULL;
        }
        c->con = con;
        tls_cache = c;
        pthread_setspecific(cache_key, c);
    }
    duckdb_prepared_statement *slot = ser ? &c->ser : &c->deser;
    if (*slot)
        return *slot;
    const char *sql = ser ? "SELECT json_serialize_sql(CAST($1 AS VARCHAR))"
                          : "SELECT json_deserialize_sql(CAST($1 AS JSON))";
    if (duckdb_prepare(con, sql, slot) != DuckDBSuccess) {
        vt_error_set(err, VT_ERR_INTERNAL, "%s: %s", ser ? "json_serialize_sql"
                                                         : "json_deserialize_sql",
                     duckdb_prepare_error(*slot));
        duckdb_destroy_prepare(slot);
        return NULL;
    }
    return *slot;
}

void sql_gate_forget(duckdb_connection con)
{
    struct gate_cache *c = tls_cache;
    if (c && c->con == con) {
        duckdb_destroy_prepare(&c->ser);
        duckdb_destroy_prepare(&c->deser);
        c->con = NULL;
    }
}

/* DuckDB's serialization of `sql` (a malloc'd string), or NULL with err set. */
static char *serialize(duckdb_connection con, const char *sql, struct vt_error *err)
{
    duckdb_prepared_statement ps = cached(con, true, err);
    if (!ps)
        return NULL;
    duckdb_clear_bindings(ps);
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
    if (out) { /* duckdb's allocation -> ours */
        char *copy = strdup(out);
        duckdb_free(out);
        out = copy;
    }
    return out;
}

/* ------------------------------------------- exact integers for rewriting
 *
 * jansson keeps integers as int64; DuckDB's trees hold larger ones
 * (query_location is 2^64-1 where there is none, UBIGINT and HUGEINT
 * constants). The plain gate reads them as reals (nothing it decides
 * depends on their value); a tree that goes back to SQL must keep them
 * exact, so they travel as marker strings ("\u0001<nonce>:<digits>") that
 * only this call can produce, and are put back after json_dumps. */

static bool fits_int64(const char *digits, size_t n)
{
    bool neg = n && digits[0] == '-';
    size_t d = n - neg;
    if (d < 19)
        return true;
    if (d > 19)
        return false;
    return memcmp(digits + neg, neg ? "9223372036854775808" : "9223372036854775807", 19) <= 0;
}

static char *protect_bigints(const char *text, const char *nonce)
{
    size_t n = strlen(text);
    struct strbuf o;
    sb_init(&o, 0);
    bool in_str = false;
    for (size_t i = 0; i < n;) {
        char c = text[i];
        if (in_str) {
            sb_addc(&o, c);
            if (c == '\\' && i + 1 < n) {
                sb_addc(&o, text[i + 1]);
                i += 2;
                continue;
            }
            in_str = c != '"';
            i++;
            continue;
        }
        if (c == '"') {
            in_str = true;
            sb_addc(&o, c);
            i++;
            continue;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            size_t j = i + 1;
            bool integral = true;
            while (j < n && ((text[j] >= '0' && text[j] <= '9') || text[j] == '.' ||
                             text[j] == 'e' || text[j] == 'E' || text[j] == '+' || text[j] == '-')) {
                if (text[j] == '.' || text[j] == 'e' || text[j] == 'E')
                    integral = false;
                j++;
            }
            if (integral && !fits_int64(text + i, j - i))
                sb_addf(&o, "\"\\u0001%s:%.*s\"", nonce, (int)(j - i), text + i);
            else
                sb_add(&o, text + i, j - i);
            i = j;
            continue;
        }
        sb_addc(&o, c);
        i++;
    }
    if (o.overflow) {
        sb_release(&o);
        return NULL;
    }
    return sb_detach(&o, NULL);
}

static char *restore_bigints(const char *text, const char *nonce)
{
    char marker[48];
    int mlen = snprintf(marker, sizeof marker, "\"\\u0001%s:", nonce);
    struct strbuf o;
    sb_init(&o, 0);
    const char *p = text;
    for (;;) {
        const char *hit = strstr(p, marker);
        if (!hit) {
            sb_adds(&o, p);
            break;
        }
        sb_add(&o, p, (size_t)(hit - p));
        const char *d = hit + mlen;
        const char *end = strchr(d, '"');
        if (!end) {
            sb_release(&o);
            return NULL;
        }
        sb_add(&o, d, (size_t)(end - d));
        p = end + 1;
    }
    if (o.overflow) {
        sb_release(&o);
        return NULL;
    }
    return sb_detach(&o, NULL);
}

/* The SQL text of a (mapped) tree, by DuckDB's own json_deserialize_sql. */
static char *deserialize(duckdb_connection con, const char *json, struct vt_error *err)
{
    duckdb_prepared_statement ps = cached(con, false, err);
    if (!ps)
        return NULL;
    duckdb_clear_bindings(ps);
    duckdb_bind_varchar(ps, 1, json);
    duckdb_result res;
    char *out = NULL;
    if (duckdb_execute_prepared(ps, &res) == DuckDBSuccess) {
        char *v = duckdb_value_varchar(&res, 0, 0);
        if (v) {
            out = strdup(v);
            duckdb_free(v);
        }
        if (!out)
            vt_error_set(err, VT_ERR_INTERNAL, "json_deserialize_sql returned nothing");
    } else {
        vt_error_set(err, VT_ERR_SQL_SYNTAX, "this statement cannot be run with the dialect's "
                     "names mapped: %s", duckdb_result_error(&res));
    }
    duckdb_destroy_result(&res);
    return out;
}

enum vt_err sql_gate_check(duckdb_connection con, const char *sql, sql_is_dataset_fn is_dataset,
                           void *ctx, struct sql_checked *out, struct vt_error *err)
{
    return sql_gate_check_opts(con, sql, NULL, is_dataset, ctx, out, err);
}

/* sql_gate_set_wait's hook: read on every check, set once before any. */
static enum vt_err (*gate_wait)(struct vt_error *err);

void sql_gate_set_wait(enum vt_err (*wait)(struct vt_error *err))
{
    gate_wait = wait;
}

enum vt_err sql_gate_check_opts(duckdb_connection con, const char *sql,
                                const struct sql_gate_options *opts, sql_is_dataset_fn is_dataset,
                                void *ctx, struct sql_checked *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    /* No user statement before the bounded wrappers it may call exist. */
    if (gate_wait && gate_wait(err) != VT_ERR_OK)
        return err->code;
    const struct sql_dialect *dialect = opts ? opts->dialect : NULL;
    if (!sql || !*sql)
        return vt_error_set(err, VT_ERR_SQL_SYNTAX, "empty SQL statement");
    if (strlen(sql) > VT_MAX_SQL_BYTES)
        return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "SQL longer than %d bytes",
                            VT_MAX_SQL_BYTES);
    char *text = serialize(con, sql, err);
    if (!text)
        return err->code;
    json_error_t jerr;
    json_t *root;
    char nonce[17] = "";
    if (dialect) {
        unsigned char rnd[8] = {0};
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
            free(text);
            return vt_error_set(err, VT_ERR_INTERNAL, "no randomness");
        }
        for (int i = 0; i < 8; i++)
            snprintf(nonce + 2 * i, 3, "%02x", rnd[i]);
        char *prot = protect_bigints(text, nonce);
        free(text);
        if (!prot)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        root = json_loads(prot, 0, &jerr);
        free(prot);
    } else {
        /* Integers as reals: query_location is 2^64-1 in places, and nothing
         * the gate decides depends on an integer's exact value. */
        root = json_loads(text, JSON_DECODE_INT_AS_REAL, &jerr);
        free(text);
    }
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
        struct walk w = {.is_dataset = is_dataset, .ctx = ctx, .err = err, .out = out,
                         .opts = opts, .dialect = dialect, .macro_mult = 1};
        void *state = dialect && dialect->before && node ? dialect->before((json_t *)node) : NULL;
        rc = node ? walk_node(&w, node, 0)
                  : vt_error_set(err, VT_ERR_SQL_SYNTAX, "no statement");
        if (dialect && dialect->after && node)
            dialect->after((struct sql_walk *)&w, (json_t *)node, state, rc == VT_ERR_OK);
        if (rc == VT_ERR_OK && opts && opts->lookups)
            out->lookup = recognize_lookup(node, out);
        out->reads_catalog = w.catalog;
        if (rc == VT_ERR_OK && w.changed) {
            char *dumped = json_dumps(root, JSON_COMPACT);
            char *restored = dumped ? restore_bigints(dumped, nonce) : NULL;
            free(dumped);
            if (!restored)
                rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
            else if (!(out->rewritten = deserialize(con, restored, err)))
                rc = err->code;
            free(restored);
        }
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
