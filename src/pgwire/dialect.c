/*
 * PostgreSQL's dialect for the SQL gate (sql.h: struct sql_dialect). The
 * gate walks DuckDB's parse tree of a statement and calls these hooks on
 * table references and expressions; they map the names PostgreSQL clients
 * write onto what stands for them on a worker's connection (catalog.c: the
 * "vt:" tables and macros) and leave everything else to the gate's rules:
 *
 *   public.X, "public"."X"       the dataset X (a qualified name never means
 *                                a CTE); public.X.col as X.col
 *   pg_catalog.X, X              catalog.c's relation for X when it has one
 *                                (unqualified: after CTEs, before datasets, as
 *                                PostgreSQL's search_path puts pg_catalog
 *                                first)
 *   information_schema.X         catalog.c's relation for it
 *   [pg_catalog.]f(...)          catalog.c's function for f when it has one,
 *                                else the allowlist decides
 *   CAST(x AS t), x::t           a call for types DuckDB lacks (regclass,
 *                                name, oid vectors ...)
 *   current_user, user, ...      keywords in PostgreSQL: calls
 *   COLLATE "default", "C"       dropped (DuckDB's default is binary)
 *   unaliased output columns     PostgreSQL's names (count, version, ?column?)
 *
 * Every other schema is unknown (42P01). Lexical spellings DuckDB's parser
 * cannot read at all (OPERATOR(pg_catalog.~) ...) are lexer.c's
 * pgw_normalize, before the gate.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pgwire/pgwire_internal.h"
#include "sql/sql.h"
#include "util/strbuf.h"

static const char *str(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void set_str(json_t *o, const char *key, const char *v)
{
    json_object_set_new(o, key, json_string(v));
}

static enum sql_hook refused(struct sql_walk *w, enum vt_err code, const char *fmt,
                             const char *what)
{
    vt_error_set(sql_walk_error(w), code, fmt, what);
    return SQL_HOOK_REFUSED;
}

/* Makes the empty object e a call of fn with one argument `arg` (or none);
 * takes the references to alias and arg. */
static void make_call(json_t *e, const char *fn, json_t *alias, json_t *arg)
{
    set_str(e, "class", "FUNCTION");
    set_str(e, "type", "FUNCTION");
    json_object_set_new(e, "alias", alias ? alias : json_string(""));
    json_object_set_new(e, "query_location", json_integer(0));
    set_str(e, "function_name", fn);
    set_str(e, "schema", "");
    json_t *kids = json_array();
    if (arg)
        json_array_append_new(kids, arg);
    json_object_set_new(e, "children", kids);
    json_object_set_new(e, "filter", json_null());
    json_t *ob = json_object();
    set_str(ob, "type", "ORDER_MODIFIER");
    json_object_set_new(ob, "orders", json_array());
    json_object_set_new(e, "order_bys", ob);
    json_object_set_new(e, "distinct", json_false());
    json_object_set_new(e, "is_operator", json_false());
    json_object_set_new(e, "export_state", json_false());
    set_str(e, "catalog", "");
}

/* Replaces node e by the contents of `with`, keeping e's alias when it has
 * one. */
static void replace_node(json_t *e, json_t *with)
{
    json_t *alias = json_incref(json_object_get(e, "alias"));
    json_t *copy = json_copy(with);
    json_object_clear(e);
    if (copy)
        json_object_update(e, copy);
    json_decref(copy);
    if (json_is_string(alias) && *json_string_value(alias))
        json_object_set(e, "alias", alias);
    json_decref(alias);
}

static json_t *const_str(const char *v, size_t n)
{
    json_t *e = json_object();
    set_str(e, "class", "CONSTANT");
    set_str(e, "type", "VALUE_CONSTANT");
    set_str(e, "alias", "");
    json_object_set_new(e, "query_location", json_integer(0));
    json_t *val = json_object(), *t = json_object();
    set_str(t, "id", v ? "VARCHAR" : "NULL");
    json_object_set_new(t, "type_info", json_null());
    json_object_set_new(val, "type", t);
    json_object_set_new(val, "is_null", json_boolean(!v));
    if (v)
        json_object_set_new(val, "value", json_stringn(v, n));
    json_object_set_new(e, "value", val);
    return e;
}

/* A new call of fn with these arguments (the array's reference taken). */
static json_t *new_call(const char *fn, json_t *args)
{
    json_t *e = json_object();
    make_call(e, fn, NULL, NULL);
    json_object_set_new(e, "children", args);
    return e;
}

/* A new CAST of child (its reference taken) to a type DuckDB names `id`. */
static json_t *new_cast(json_t *child, const char *id)
{
    json_t *e = json_object(), *t = json_object();
    set_str(e, "class", "CAST");
    set_str(e, "type", "OPERATOR_CAST");
    set_str(e, "alias", "");
    json_object_set_new(e, "query_location", json_integer(0));
    json_object_set_new(e, "child", child);
    set_str(t, "id", id);
    json_object_set_new(t, "type_info", json_null());
    json_object_set_new(e, "cast_type", t);
    json_object_set_new(e, "try_cast", json_false());
    return e;
}

/* The string value of a VARCHAR constant, or NULL. */
static const char *const_text(const json_t *e, size_t *out_n)
{
    const char *cls = json_is_object(e) ? str(e, "class") : NULL;
    const json_t *val = cls && !strcmp(cls, "CONSTANT") ? json_object_get(e, "value") : NULL;
    const json_t *t = json_is_object(val) ? json_object_get(val, "type") : NULL;
    const char *id = json_is_object(t) ? str(t, "id") : NULL;
    const json_t *v = val ? json_object_get(val, "value") : NULL;
    if (!id || (strcmp(id, "VARCHAR") != 0 && strcmp(id, "STRING_LITERAL") != 0) ||
        !json_is_string(v))
        return NULL;
    if (out_n)
        *out_n = json_string_length(v);
    return json_string_value(v);
}

/* ------------------------------------------------------------ expressions */

/* ------------------------------------------------- rewritten calls
 *
 * PostgreSQL functions whose arguments DuckDB reads differently, rewritten
 * when their format argument is a constant (as clients write it): format()
 * with %s/%I/%L becomes concat(); to_char/to_timestamp/to_date with
 * PostgreSQL's template patterns become strftime/strptime. DuckDB's own
 * format('{}', ...) and to_timestamp(epoch) are left alone. */

/* format('%s.%I', a, b) as concat(CAST(a AS VARCHAR), '.', quote_ident(b)). */
static bool rewrite_format(json_t *e, json_t *args)
{
    size_t n;
    const char *f = const_text(json_array_get(args, 0), &n);
    if (!f || !memchr(f, '%', n) || strstr(f, "{}"))
        return false;
    json_t *out = json_array();
    struct strbuf lit;
    sb_init(&lit, 0);
    size_t next = 1;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        if (f[i] != '%') {
            sb_addc(&lit, f[i]);
            continue;
        }
        if (++i == n) {
            ok = false;
            break;
        }
        if (f[i] == '%') {
            sb_addc(&lit, '%');
            continue;
        }
        size_t arg = next;
        if (isdigit((unsigned char)f[i])) { /* %2$s */
            size_t k = 0;
            while (i < n && isdigit((unsigned char)f[i]))
                k = k * 10 + (size_t)(f[i++] - '0');
            if (i == n || f[i] != '$' || ++i == n || k == 0) {
                ok = false;
                break;
            }
            arg = k;
        }
        char conv = f[i];
        json_t *a = json_array_get(args, arg);
        if (!a || (conv != 's' && conv != 'I' && conv != 'L')) {
            ok = false;
            break;
        }
        next = arg + 1;
        if (lit.len)
            json_array_append_new(out, const_str(lit.buf, lit.len));
        lit.len = 0;
        json_t *v = new_cast(json_incref(a), "VARCHAR");
        if (conv != 's') {
            json_t *one = json_array();
            json_array_append_new(one, v);
            v = new_call(conv == 'I' ? "quote_ident" : "quote_nullable", one);
        }
        json_array_append_new(out, v);
    }
    if (ok && lit.len)
        json_array_append_new(out, const_str(lit.buf, lit.len));
    if (ok && json_array_size(out) == 0)
        json_array_append_new(out, const_str("", 0));
    sb_release(&lit);
    if (!ok || lit.overflow) {
        json_decref(out);
        return false;
    }
    json_t *alias = json_incref(json_object_get(e, "alias"));
    json_object_clear(e);
    make_call(e, "concat", alias, NULL);
    json_object_set_new(e, "children", out);
    return true;
}

/* to_char(ts, fmt) -> strftime(ts, fmt'); to_timestamp(s, fmt) ->
 * CAST(strptime(s, fmt') AS TIMESTAMPTZ); to_date likewise AS DATE. */
static bool rewrite_datetime(struct sql_walk *w, json_t *e, const char *name, json_t *args,
                             enum sql_hook *out)
{
    size_t n;
    const char *f = json_array_size(args) == 2 ? const_text(json_array_get(args, 1), &n) : NULL;
    if (!f)
        return false;
    char conv[256];
    if (!pgw_datetime_format(f, n, conv, sizeof conv)) {
        vt_error_set(sql_walk_error(w), VT_ERR_NOT_IMPLEMENTED,
                     "%s: this format is not supported (date and time template patterns "
                     "YYYY, MM, DD, HH24, HH12, MI, SS, MS, US, AM, Mon, Month, Dy, Day, TZ)",
                     name);
        *out = SQL_HOOK_REFUSED;
        return true;
    }
    json_t *call_args = json_array();
    json_array_append(call_args, json_array_get(args, 0));
    json_array_append_new(call_args, const_str(conv, strlen(conv)));
    bool out_text = !strcmp(name, "to_char");
    json_t *call = new_call(out_text ? "strftime" : "strptime", call_args);
    json_t *alias = json_incref(json_object_get(e, "alias"));
    json_t *with = out_text ? call
                            : new_cast(call, !strcmp(name, "to_date") ? "DATE"
                                                                      : "TIMESTAMP WITH TIME ZONE");
    json_object_clear(e);
    json_object_update(e, with);
    json_decref(with);
    if (json_is_string(alias) && *json_string_value(alias))
        json_object_set(e, "alias", alias);
    json_decref(alias);
    *out = SQL_HOOK_AGAIN;
    return true;
}

/* current_setting('name' [, missing_ok]) of a known setting: its value
 * now, a constant (a table function's arguments may hold it; the macro's
 * subquery they may not: generate_series(1, array_upper(string_to_array(
 * current_setting('search_path'), ','), 1))). */
static bool fold_setting(struct sql_walk *w, json_t *e, json_t *args)
{
    const struct pgw_session *sess = sql_walk_context(w);
    size_t n = json_array_size(args);
    const char *name = n == 1 || n == 2 ? const_text(json_array_get(args, 0), NULL) : NULL;
    const char *v = sess && name ? pgw_session_setting(sess, name) : NULL;
    if (!v)
        return false;
    json_t *c = const_str(v, strlen(v));
    replace_node(e, c);
    json_decref(c);
    return true;
}

/* date_trunc(part, x) -> datetrunc(part, x) + INTERVAL '0 seconds'.
 * PostgreSQL's date_trunc keeps its argument's type (a timestamp stays a
 * timestamp, a date becomes one); DuckDB's gives a DATE for a timestamp
 * truncated to a day or coarser, so Superset's time grains and Metabase's
 * "by day" reached clients as dates. Adding a zero interval makes DuckDB's
 * DATE a TIMESTAMP and leaves timestamps, timestamptz and intervals as they
 * are. datetrunc, its other name, is not rewritten again. */
static bool rewrite_date_trunc(json_t *e, json_t *args)
{
    json_t *alias = json_incref(json_object_get(e, "alias"));
    json_t *trunc = new_call("datetrunc", json_copy(args));
    json_t *zero = new_cast(const_str("0 seconds", 9), "INTERVAL");
    json_t *sum = new_call("+", json_pack("[oo]", trunc, zero));
    json_object_set_new(sum, "is_operator", json_true());
    json_object_clear(e);
    json_object_update(e, sum);
    json_decref(sum);
    if (json_is_string(alias) && *json_string_value(alias))
        json_object_set(e, "alias", alias);
    json_decref(alias);
    return true;
}

/* PostgreSQL's set-returning functions DuckDB lacks, as the column name a
 * call in FROM gives its rows (PostgreSQL: json_array_elements' OUT
 * parameter is "value"; string_to_table's column takes the function's, or
 * the alias's, name), or NULL for any other name. */
static const char *srf_column(const char *name)
{
    if (!strcmp(name, "json_array_elements") || !strcmp(name, "jsonb_array_elements") ||
        !strcmp(name, "json_array_elements_text") || !strcmp(name, "jsonb_array_elements_text"))
        return "value";
    if (!strcmp(name, "string_to_table") || !strcmp(name, "json_object_keys") ||
        !strcmp(name, "jsonb_object_keys"))
        return name;
    return NULL;
}

/* json[b]_array_elements[_text](j) -> unnest("vt:json_elements[_text]"(j))
 * (catalog_sql.c: json_extract[_string](j, '$[*]') of an array, PostgreSQL's
 * error for an object or a scalar);
 * string_to_table(s, d [, n]) -> unnest(string_to_array(s, d [, n])), which
 * the walk then maps to catalog.c's PostgreSQL string_to_array. The gate
 * checks what they became like any call: the same bounds. */
static bool rewrite_srf(json_t *e, const char *name, json_t *args)
{
    size_t n = json_array_size(args);
    json_t *list;
    if (!strcmp(name, "string_to_table")) {
        if (n != 2 && n != 3)
            return false;
        list = new_call("string_to_array", json_deep_copy(args));
    } else if (strstr(name, "_object_keys")) {
        if (n != 1)
            return false;
        list = new_call("vt:json_keys", json_pack("[Oo]", json_array_get(args, 0),
                                                   const_str(name, strlen(name))));
    } else {
        if (n != 1)
            return false;
        bool text = strstr(name, "_text") != NULL;
        list = new_call(text ? "vt:json_elements_text" : "vt:json_elements", json_deep_copy(args));
    }
    json_t *rows = new_call("unnest", json_pack("[o]", list));
    replace_node(e, rows);
    json_decref(rows);
    return true;
}

/* json[b]_agg(x [ORDER BY ..] [FILTER ..]) -> to_json(list(x ..)): DuckDB's
 * json_group_array is a macro, which takes no ORDER BY, FILTER or DISTINCT;
 * list keeps them, and gives what PostgreSQL does (a NULL element is JSON
 * null, no rows give NULL). */
static bool rewrite_json_agg(json_t *e)
{
    json_t *agg = json_deep_copy(e);
    set_str(agg, "function_name", "list");
    set_str(agg, "schema", "");
    set_str(agg, "alias", "");
    json_t *call = new_call("to_json", json_pack("[o]", agg));
    replace_node(e, call);
    json_decref(call);
    return true;
}

/* json[b]_object_agg(k, v [ORDER BY ..] [FILTER ..]) ->
 * "vt:json_pairs"(list([k::VARCHAR, to_json(v)::VARCHAR] ..)) (catalog_sql.c
 * writes the object): json_group_object is a macro too. */
static bool rewrite_json_object_agg(json_t *e, json_t *args)
{
    json_t *k = new_cast(json_incref(json_array_get(args, 0)), "VARCHAR");
    json_t *v = new_cast(new_call("to_json", json_pack("[O]", json_array_get(args, 1))),
                         "VARCHAR");
    json_t *agg = json_deep_copy(e);
    set_str(agg, "function_name", "list");
    set_str(agg, "schema", "");
    set_str(agg, "alias", "");
    json_object_set_new(agg, "children", json_pack("[o]", new_call("list_value",
                                                                   json_pack("[oo]", k, v))));
    json_t *call = new_call("vt:json_pairs", json_pack("[o]", agg));
    replace_node(e, call);
    json_decref(call);
    return true;
}

static bool array_item(void *ctx, const char *s, size_t n, bool is_null)
{
    return json_array_append_new(ctx, const_str(is_null ? NULL : s, n)) == 0;
}

static json_t *args_of(json_t *e)
{
    return json_object_get(e, "children");
}

/* Whether expression e is evidently JSON before anything binds: a cast to
 * json or jsonb, a json/jsonb function, `->`, or a constant that is JSON
 * text and no PostgreSQL array literal ('{}' is both: not evident). */
static bool json_evident(const json_t *e)
{
    const char *cls = json_is_object(e) ? str(e, "class") : NULL;
    if (!cls)
        return false;
    if (!strcmp(cls, "CAST")) {
        const json_t *ct = json_object_get(e, "cast_type");
        const json_t *info = json_is_object(ct) ? json_object_get(ct, "type_info") : NULL;
        const char *t = json_is_object(info) ? str(info, "user_type_name") : NULL;
        return t && (!strcasecmp(t, "json") || !strcasecmp(t, "jsonb"));
    }
    if (!strcmp(cls, "FUNCTION")) {
        const char *fn = str(e, "function_name");
        if (!fn)
            return false;
        if (json_is_true(json_object_get(e, "is_operator")))
            return !strcmp(fn, "->") || !strcmp(fn, PGW_OP_GET) || !strcmp(fn, PGW_OP_PATH);
        return !strncmp(fn, "json", 4) || !strncmp(fn, "to_json", 7) ||
               !strcmp(fn, "row_to_json") || !strcmp(fn, "array_to_json") ||
               !strcmp(fn, "vt:jsonb") || !strcmp(fn, "vt:json_get") ||
               !strcmp(fn, "vt:json_path") || !strcmp(fn, "vt:jsonb_set") ||
               !strcmp(fn, "vt:jsonb_insert");
    }
    size_t n;
    const char *text = const_text(e, &n);
    if (!text)
        return false;
    json_t *v = json_loadb(text, n, JSON_DECODE_ANY, NULL);
    bool yes = v && !(json_is_object(v) && json_object_size(v) == 0);
    json_decref(v);
    return yes;
}

/* a @> b and a <@ b where a side is evidently JSON, and
 * jsonb_contained(a, b): jsonb containment, "vt:jsonb_contains"(a, b) or
 * (b, a) (engine/jsonb.c); else DuckDB's list containment, as for
 * PostgreSQL's arrays. */
static bool json_operator(struct sql_walk *w, json_t *e, const char *name)
{
    bool op = json_is_true(json_object_get(e, "is_operator"));
    bool contained = op ? !strcmp(name, "<@") : !strcmp(name, "jsonb_contained");
    if (op ? !contained && strcmp(name, "@>") != 0 : !contained)
        return false;
    json_t *args = args_of(e);
    if (json_array_size(args) != 2 || (op && !json_evident(json_array_get(args, 0)) &&
                                       !json_evident(json_array_get(args, 1))))
        return false;
    if (contained) {
        json_t *b = json_incref(json_array_get(args, 0));
        json_array_remove(args, 0);
        json_array_append_new(args, b);
    }
    set_str(e, "function_name", "vt:jsonb_contains");
    set_str(e, "schema", "");
    json_object_set_new(e, "is_operator", json_false());
    sql_walk_changed(w, true);
    return true;
}

/* The calls whose second argument is PostgreSQL's text[]: a path (#>, #>>,
 * jsonb_set, jsonb_insert) or keys (?|, ?&); with how many arguments. */
static bool text_array_arg(const char *name, size_t nargs)
{
    static const char *const names[] = {PGW_OP_PATH, PGW_OP_PATH_TEXT, PGW_OP_EXISTS_ANY,
                                        PGW_OP_EXISTS_ALL, "jsonb_exists_any",
                                        "jsonb_exists_all"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i]))
            return nargs == 2;
    return (!strcmp(name, "jsonb_set") || !strcmp(name, "jsonb_insert")) &&
           (nargs == 3 || nargs == 4);
}

/* The second argument, a constant '{a,b}' (PostgreSQL's array literal, of
 * type unknown: text[] here), as the list of its elements. */
static void lists_of_constants(struct sql_walk *w, json_t *args)
{
    size_t n;
    json_t *a = json_array_get(args, 1);
    const char *text = const_text(a, &n);
    if (!text)
        return;
    json_t *items = json_array();
    struct vt_error ignored = {0};
    if (pgw_array_parse(text, n, array_item, items, &ignored) != VT_ERR_OK) {
        json_decref(items); /* DuckDB reports what it cannot read */
        return;
    }
    json_t *list = new_call("list_value", items);
    set_str(list, "schema", "main");
    json_array_set_new(args, 1, list);
    sql_walk_changed(w, false);
}

/* Whether name(args) was rewritten (*out: what the gate does next). */
static bool rewrite_call(struct sql_walk *w, json_t *e, const char *name, enum sql_hook *out)
{
    json_t *args = json_object_get(e, "children");
    if (!json_is_array(args) || json_is_true(json_object_get(e, "is_operator")))
        return false;
    bool done = false;
    if (!strcmp(name, "current_setting")) {
        done = fold_setting(w, e, args);
        *out = SQL_HOOK_AGAIN;
    } else if (!strcmp(name, "format") && json_array_size(args) >= 1) {
        done = rewrite_format(e, args);
        *out = SQL_HOOK_AGAIN;
    } else if (!strcmp(name, "date_trunc") && json_array_size(args) == 2) {
        done = rewrite_date_trunc(e, args);
        *out = SQL_HOOK_AGAIN;
    } else if ((!strcmp(name, "json_agg") || !strcmp(name, "jsonb_agg")) &&
               json_array_size(args) == 1) {
        done = rewrite_json_agg(e);
        *out = SQL_HOOK_AGAIN;
    } else if ((!strcmp(name, "json_object_agg") || !strcmp(name, "jsonb_object_agg")) &&
               json_array_size(args) == 2) {
        done = rewrite_json_object_agg(e, args);
        *out = SQL_HOOK_AGAIN;
    } else if (srf_column(name)) {
        done = rewrite_srf(e, name, args);
        *out = SQL_HOOK_AGAIN;
    } else if (!strcmp(name, "to_char") || !strcmp(name, "to_timestamp") ||
               !strcmp(name, "to_date")) {
        done = rewrite_datetime(w, e, name, args, out);
    }
    if (done && *out != SQL_HOOK_REFUSED)
        sql_walk_changed(w, false);
    return done;
}

/* A function call: catalog functions become the function standing for it;
 * a pg_catalog qualifier goes. */
static enum sql_hook function(struct sql_walk *w, json_t *e)
{
    const char *name = str(e, "function_name");
    const char *schema = str(e, "schema");
    const char *catalog = str(e, "catalog");
    if (!name || (catalog && *catalog))
        return SQL_HOOK_CHECK;
    bool pgq = schema && (!strcasecmp(schema, "pg_catalog") ||
                          !strcasecmp(schema, "information_schema"));
    if (schema && *schema && !pgq)
        return SQL_HOOK_CHECK;
    enum sql_hook h;
    if (rewrite_call(w, e, name, &h))
        return h;
    if (!strcmp(name, "/") && json_is_true(json_object_get(e, "is_operator"))) {
        /* PostgreSQL divides integers as integers (150000 / 100 is 1500);
         * DuckDB's `/` always gives a double, its divide() does as
         * PostgreSQL */
        set_str(e, "function_name", "divide");
        json_object_set_new(e, "is_operator", json_false());
        sql_walk_changed(w, false);
        return SQL_HOOK_CHECK;
    }
    if (json_operator(w, e, name))
        return SQL_HOOK_OWN;
    if (text_array_arg(name, json_array_size(args_of(e))))
        lists_of_constants(w, args_of(e));
    const char *fn = pgw_catalog_function(name);
    if (fn && !strcmp(fn, name) && !pgq) /* as it is (unnest of = ANY) */
        return SQL_HOOK_OWN;
    if (fn) {
        bool own = !strncmp(fn, "vt:", 3);
        set_str(e, "function_name", fn);
        set_str(e, "schema", "");
        if (own) /* `a ~* b`: a call of ours is written as a call */
            json_object_set_new(e, "is_operator", json_false());
        sql_walk_changed(w, own);
        return own ? SQL_HOOK_OWN : SQL_HOOK_CHECK;
    }
    if (pgq) {
        set_str(e, "schema", "");
        sql_walk_changed(w, false);
    }
    return SQL_HOOK_CHECK;
}

/* CAST(x AS regclass) and friends become fn(x). */
/* '{a,b}'::text[] : PostgreSQL's array literal as a list of its elements
 * (DuckDB reads '[a, b]' only), still cast to the list type. */
static enum sql_hook array_literal(struct sql_walk *w, json_t *e)
{
    size_t n;
    json_t *child = json_object_get(e, "child");
    const char *text = const_text(child, &n);
    if (!text)
        return SQL_HOOK_CHECK;
    size_t i = 0;
    while (i < n && isspace((unsigned char)text[i]))
        i++;
    if (i == n || (text[i] != '{' && text[i] != '['))
        return SQL_HOOK_CHECK;
    if (text[i] == '[' && !memchr(text, '=', n))
        return SQL_HOOK_CHECK; /* DuckDB's own list text */
    json_t *items = json_array();
    if (pgw_array_parse(text, n, array_item, items, sql_walk_error(w)) != VT_ERR_OK) {
        json_decref(items);
        return SQL_HOOK_REFUSED;
    }
    json_t *list = new_call("list_value", items);
    set_str(list, "schema", "main");
    json_object_set_new(e, "child", list);
    sql_walk_changed(w, false);
    return SQL_HOOK_CHECK;
}

/* x::regtype[] and other arrays of the types casts map: text arrays (the
 * elements stay what they are; no such array here holds anything but OIDs). */
static void list_of_mapped(struct sql_walk *w, json_t *ct)
{
    json_t *info = json_object_get(ct, "type_info");
    json_t *child = json_is_object(info) ? json_object_get(info, "child_type") : NULL;
    const char *cid = json_is_object(child) ? str(child, "id") : NULL;
    json_t *cinfo = json_is_object(child) ? json_object_get(child, "type_info") : NULL;
    const char *name = json_is_object(cinfo) ? str(cinfo, "user_type_name") : NULL;
    if (!cid || strcmp(cid, "USER") != 0 || !name || !pgw_catalog_cast(name, false))
        return;
    set_str(child, "id", "VARCHAR");
    json_object_set_new(child, "type_info", json_null());
    sql_walk_changed(w, false);
}

static enum sql_hook cast(struct sql_walk *w, json_t *e)
{
    json_t *ct = json_object_get(e, "cast_type");
    const char *id = ct ? str(ct, "id") : NULL;
    if (id && !strcmp(id, "LIST")) {
        list_of_mapped(w, ct);
        return array_literal(w, e);
    }
    const json_t *info = ct ? json_object_get(ct, "type_info") : NULL;
    const char *tname = json_is_object(info) ? str(info, "user_type_name") : NULL;
    const char *tschema = json_is_object(info) ? str(info, "schema") : NULL;
    if (!id || strcmp(id, "USER") != 0 || !tname ||
        (tschema && *tschema && strcmp(tschema, "pg_catalog") != 0))
        return SQL_HOOK_CHECK;
    const json_t *operand = json_object_get(e, "child");
    const char *ocls = json_is_object(operand) ? str(operand, "class") : NULL;
    const json_t *oval = ocls && !strcmp(ocls, "CONSTANT") ? json_object_get(operand, "value")
                                                          : NULL;
    const json_t *otype = json_is_object(oval) ? json_object_get(oval, "type") : NULL;
    const char *oid = json_is_object(otype) ? str(otype, "id") : NULL;
    bool input = (ocls && !strcmp(ocls, "PARAMETER")) ||
                 (oid && (!strcmp(oid, "VARCHAR") || !strcmp(oid, "STRING_LITERAL")));
    const char *fn = pgw_catalog_cast(tname, input);
    if (!fn)
        return SQL_HOOK_CHECK;
    json_t *child = json_incref(json_object_get(e, "child"));
    json_t *alias = json_incref(json_object_get(e, "alias"));
    json_object_clear(e);
    make_call(e, fn, alias, child);
    sql_walk_changed(w, true);
    return SQL_HOOK_OWN;
}

static enum sql_hook collate(struct sql_walk *w, json_t *e)
{
    const char *c = str(e, "collation");
    static const char *const plain[] = {"default", "pg_catalog.default", "C", "POSIX",
                                        "ucs_basic", "pg_catalog.C", NULL};
    json_t *child = json_object_get(e, "child");
    for (size_t i = 0; c && plain[i] && json_is_object(child); i++)
        if (!strcmp(c, plain[i])) {
            json_incref(child);
            replace_node(e, child);
            json_decref(child);
            sql_walk_changed(w, false);
            return SQL_HOOK_AGAIN;
        }
    return SQL_HOOK_CHECK;
}

/* current_user, session_user, user, current_catalog, current_schema:
 * keywords in PostgreSQL (a column of that name needs quotes there), column
 * references that DuckDB binds to its own functions. `public.t.c` (and
 * `pg_catalog.t.c`) as `t.c`: the table goes by its plain name. */
static enum sql_hook column(struct sql_walk *w, json_t *e)
{
    json_t *names = json_object_get(e, "column_names");
    size_t n = json_array_size(names);
    const char *first = n ? json_string_value(json_array_get(names, 0)) : NULL;
    if (!first)
        return SQL_HOOK_CHECK;
    if (n >= 3 && (!strcmp(first, "public") || !strcmp(first, "pg_catalog") ||
                   !strcmp(first, "information_schema"))) {
        json_array_remove(names, 0);
        sql_walk_changed(w, false);
        return SQL_HOOK_CHECK;
    }
    if (n != 1)
        return SQL_HOOK_CHECK;
    static const char *const kw[] = {"current_user", "session_user", "user", "current_role",
                                     "current_catalog", "current_schema", NULL};
    for (size_t i = 0; kw[i]; i++)
        if (!strcmp(first, kw[i])) {
            const char *fn = pgw_catalog_function(kw[i]);
            if (!fn)
                break;
            json_t *alias = json_incref(json_object_get(e, "alias"));
            json_object_clear(e);
            make_call(e, fn, alias, NULL);
            sql_walk_changed(w, true);
            return SQL_HOOK_OWN;
        }
    return SQL_HOOK_CHECK;
}

/* x = ANY(array) and x <> ALL(array) (not a subquery: DuckDB's parser
 * makes one of `SELECT unnest(array)`) as list_contains(array, x): DuckDB
 * cannot plan such a subquery in the condition of an outer join (pgJDBC's
 * and SQLAlchemy's index queries: `LEFT JOIN pg_attribute a ON a.attnum =
 * ANY(ix.indkey)`). NULL elements: false instead of PostgreSQL's NULL, which
 * a WHERE or ON treats alike. */
static enum sql_hook any_array(struct sql_walk *w, json_t *e)
{
    const char *kind = str(e, "subquery_type");
    const char *cmp = str(e, "comparison_type");
    bool any = kind && !strcmp(kind, "ANY") && cmp && !strcmp(cmp, "COMPARE_EQUAL");
    bool all = kind && !strcmp(kind, "ALL") && cmp && !strcmp(cmp, "COMPARE_NOTEQUAL");
    if (!any && !all)
        return SQL_HOOK_CHECK;
    json_t *sq = json_object_get(e, "subquery");
    json_t *node = json_is_object(sq) ? json_object_get(sq, "node") : NULL;
    json_t *list = json_is_object(node) ? json_object_get(node, "select_list") : NULL;
    json_t *from = json_is_object(node) ? json_object_get(node, "from_table") : NULL;
    json_t *call = json_array_size(list) == 1 ? json_array_get(list, 0) : NULL;
    const char *fn = json_is_object(call) ? str(call, "function_name") : NULL;
    const char *ft = json_is_object(from) ? str(from, "type") : NULL;
    json_t *args = json_is_object(call) ? json_object_get(call, "children") : NULL;
    json_t *where = json_is_object(node) ? json_object_get(node, "where_clause") : NULL;
    json_t *cm = json_is_object(node) ? json_object_get(node, "cte_map") : NULL;
    json_t *child = json_object_get(e, "child");
    if (!fn || strcmp(fn, "unnest") != 0 || !ft || strcmp(ft, "EMPTY") != 0 ||
        json_array_size(args) != 1 || (where && !json_is_null(where)) ||
        json_array_size(json_object_get(cm, "map")) != 0 || !json_is_object(child))
        return SQL_HOOK_CHECK;
    json_t *cargs = json_array();
    json_array_append(cargs, json_array_get(args, 0));
    json_array_append(cargs, child);
    json_t *with = new_call("list_contains", cargs);
    if (all) {
        json_t *not = json_object();
        set_str(not, "class", "OPERATOR");
        set_str(not, "type", "OPERATOR_NOT");
        set_str(not, "alias", "");
        json_object_set_new(not, "query_location", json_integer(0));
        json_t *kids = json_array();
        json_array_append_new(kids, with);
        json_object_set_new(not, "children", kids);
        with = not;
    }
    replace_node(e, with);
    json_decref(with);
    sql_walk_changed(w, false);
    return SQL_HOOK_AGAIN;
}

static enum sql_hook expr(struct sql_walk *w, json_t *e)
{
    const char *cls = str(e, "class");
    if (!cls)
        return SQL_HOOK_CHECK;
    if (!strcmp(cls, "SUBQUERY"))
        return any_array(w, e);
    if (!strcmp(cls, "FUNCTION"))
        return function(w, e);
    if (!strcmp(cls, "CAST"))
        return cast(w, e);
    if (!strcmp(cls, "COLLATE"))
        return collate(w, e);
    if (!strcmp(cls, "COLUMN_REF"))
        return column(w, e);
    return SQL_HOOK_CHECK;
}

/* ----------------------------------------------------------------- tables */

/* A base table as PostgreSQL resolves it. */
static enum sql_hook base_table(struct sql_walk *w, json_t *ref)
{
    char name[256], schema[64];
    snprintf(name, sizeof name, "%s", str(ref, "table_name") ? str(ref, "table_name") : "");
    const char *sch = str(ref, "schema_name");
    const char *catalog = str(ref, "catalog_name");
    snprintf(schema, sizeof schema, "%s", sch ? sch : "");
    if (catalog && *catalog)
        return refused(w, VT_ERR_SQL_UNKNOWN_TABLE,
                       "table %s: database-qualified names are not supported", name);
    const char *rel = NULL;
    if (*schema) {
        if (!strcmp(schema, "pg_catalog") || !strcmp(schema, "information_schema")) {
            rel = pgw_catalog_relation(schema, name);
            if (!rel) {
                char what[330];
                snprintf(what, sizeof what, "%s.%s", schema, name);
                return refused(w, VT_ERR_SQL_UNKNOWN_TABLE,
                               "relation \"%s\" does not exist (this catalog emulates the "
                               "common tables only)",
                               what);
            }
        } else if (strcmp(schema, "public") != 0) {
            return refused(w, VT_ERR_SQL_UNKNOWN_TABLE,
                           "schema \"%s\" does not exist (datasets are tables in schema public)",
                           schema);
        }
    } else {
        if (sql_walk_in_scope(w, name))
            return SQL_HOOK_CHECK;
        rel = pgw_catalog_relation("pg_catalog", name);
    }
    if (rel) {
        set_str(ref, "table_name", rel);
        set_str(ref, "schema_name", "");
        const char *alias = str(ref, "alias");
        if (!alias || !*alias)
            set_str(ref, "alias", name);
        sql_walk_changed(w, true);
        return SQL_HOOK_OWN;
    }
    if (*schema) { /* public.X */
        set_str(ref, "schema_name", "");
        sql_walk_changed(w, false);
    }
    if (!sql_walk_is_dataset(w, name))
        return refused(w, VT_ERR_SQL_UNKNOWN_TABLE,
                       "relation \"%s\" does not exist (tables are the datasets, in schema "
                       "public)",
                       name);
    return SQL_HOOK_DATASET;
}

static json_t *column_ref(const char *name)
{
    json_t *c = json_object();
    set_str(c, "class", "COLUMN_REF");
    set_str(c, "type", "COLUMN_REF");
    set_str(c, "alias", "");
    json_object_set_new(c, "query_location", json_integer(0));
    json_object_set_new(c, "column_names", json_pack("[s]", name));
    return c;
}

/* row_number() OVER (ORDER BY col) AS alias. */
static json_t *row_number_by(const char *col, const char *alias)
{
    json_t *w = json_object();
    set_str(w, "class", "WINDOW");
    set_str(w, "type", "WINDOW_ROW_NUMBER");
    set_str(w, "alias", alias);
    json_object_set_new(w, "query_location", json_integer(0));
    set_str(w, "function_name", "row_number");
    set_str(w, "schema", "");
    set_str(w, "catalog", "");
    json_object_set_new(w, "children", json_array());
    json_object_set_new(w, "partitions", json_array());
    json_object_set_new(w, "orders", json_pack("[{s:s,s:s,s:o}]", "type", "ORDER_DEFAULT",
                                               "null_order", "ORDER_DEFAULT", "expression",
                                               column_ref(col)));
    set_str(w, "start", "UNBOUNDED_PRECEDING");
    set_str(w, "end", "CURRENT_ROW_RANGE");
    const char *nulls[] = {"start_expr", "end_expr", "offset_expr", "default_expr",
                           "filter_expr"};
    for (size_t i = 0; i < sizeof nulls / sizeof *nulls; i++)
        json_object_set_new(w, nulls[i], json_null());
    json_object_set_new(w, "ignore_nulls", json_false());
    set_str(w, "exclude_clause", "NO_OTHER");
    json_object_set_new(w, "distinct", json_false());
    json_object_set_new(w, "arg_orders", json_array());
    return w;
}

/* A SELECT node of this list from this table reference (references
 * taken). */
static json_t *select_node(json_t *list, json_t *from)
{
    json_t *node = json_object();
    set_str(node, "type", "SELECT_NODE");
    json_object_set_new(node, "modifiers", json_array());
    json_t *cm = json_object();
    json_object_set_new(cm, "map", json_array());
    json_object_set_new(node, "cte_map", cm);
    json_object_set_new(node, "select_list", list);
    json_object_set_new(node, "from_table", from);
    json_object_set_new(node, "where_clause", json_null());
    json_object_set_new(node, "group_expressions", json_array());
    json_object_set_new(node, "group_sets", json_array());
    set_str(node, "aggregate_handling", "STANDARD_HANDLING");
    json_object_set_new(node, "having", json_null());
    json_object_set_new(node, "sample", json_null());
    json_object_set_new(node, "qualify", json_null());
    return node;
}

/* Makes table reference ref `(node) AS alias(cols)` (references to node and
 * cols taken; alias copied before ref is cleared). */
static void subquery_ref(json_t *ref, json_t *node, const char *alias, json_t *cols)
{
    json_t *sq = json_object();
    json_object_set_new(sq, "node", node);
    json_object_set_new(sq, "named_param_map", json_array());
    json_t *as = json_string(alias);
    json_object_clear(ref);
    set_str(ref, "type", "SUBQUERY");
    json_object_set_new(ref, "alias", as);
    json_object_set_new(ref, "sample", json_null());
    json_object_set_new(ref, "query_location", json_integer(0));
    json_object_set_new(ref, "subquery", sq);
    json_object_set_new(ref, "column_name_alias", cols);
}

/* json[b]_each[_text](j) in FROM: PostgreSQL's two columns (key, value:
 * json, or text for _text) of an object's members, in the document's order,
 * as `(SELECT key, value FROM json_each("vt:json_object"(j, 'fn'))) AS fn`
 * over DuckDB's json_each (which has six more columns and walks arrays
 * too); anything but an object fails as in PostgreSQL. A column of an
 * earlier FROM item is a lateral reference, as PostgreSQL allows. */
static bool json_each_ref(struct sql_walk *w, json_t *ref, const char *fname,
                          const char *alias, json_t *cols)
{
    bool text;
    if (!strcmp(fname, "json_each") || !strcmp(fname, "jsonb_each"))
        text = false;
    else if (!strcmp(fname, "json_each_text") || !strcmp(fname, "jsonb_each_text"))
        text = true;
    else
        return false;
    json_t *fn = json_object_get(ref, "function");
    json_t *args = json_object_get(fn, "children");
    const json_t *a0 = json_array_get(args, 0);
    const char *inner = json_is_object(a0) ? str(a0, "function_name") : NULL;
    if (json_array_size(args) != 1 || (inner && !strcmp(inner, "vt:json_object")))
        return false; /* ours already, or DuckDB's own signature: its rules */
    /* WITH ORDINALITY: a third column, `row_number() OVER (ORDER BY id)`
     * (BIGINT from 1; DuckDB's json_each numbers its nodes in document
     * order and has no WITH ORDINALITY of its own). */
    const char *ord = str(ref, "with_ordinality");
    bool with_ord = ord && strcmp(ord, "WITHOUT_ORDINALITY") != 0;
    char name[64];
    snprintf(name, sizeof name, "%s", fname);
    json_t *obj = new_call("vt:json_object", json_pack("[Oo]", json_array_get(args, 0),
                                                       const_str(name, strlen(name))));
    json_t *tf = json_object();
    set_str(tf, "type", "TABLE_FUNCTION");
    set_str(tf, "alias", "");
    json_object_set_new(tf, "sample", json_null());
    json_object_set_new(tf, "query_location", json_integer(0));
    json_object_set_new(tf, "function", new_call("json_each", json_pack("[o]", obj)));
    json_object_set_new(tf, "column_name_alias", json_array());
    set_str(tf, "with_ordinality", "WITHOUT_ORDINALITY");
    json_t *value = column_ref("value");
    if (text) {
        value = new_call("json_extract_string", json_pack("[oo]", value, const_str("$", 1)));
        set_str(value, "alias", "value");
    }
    json_t *cna = json_is_array(cols) ? json_incref(cols) : json_array();
    char as[128];
    snprintf(as, sizeof as, "%s", alias && *alias ? alias : name);
    json_t *list = json_pack("[oo]", column_ref("key"), value);
    if (with_ord)
        json_array_append_new(list, row_number_by("id", "ordinality"));
    subquery_ref(ref, select_node(list, tf), as, cna);
    sql_walk_changed(w, false);
    return true;
}

/* A function in FROM: the catalog's set-returning functions
 * (pg_get_keywords()) read its tables; a scalar function (string_to_array(...)
 * s, as PostgreSQL allows) becomes `(SELECT f(...) AS s) AS s`;
 * `generate_series(...) s` names its column s too, as PostgreSQL does for a
 * function returning one column (psql's \d reads `prattrs[s]`). */
static enum sql_hook table_function(struct sql_walk *w, json_t *ref)
{
    json_t *fn = json_object_get(ref, "function");
    const char *alias = str(ref, "alias");
    json_t *cols = json_object_get(ref, "column_name_alias");
    const char *fname = json_is_object(fn) ? str(fn, "function_name") : NULL;
    const char *schema = json_is_object(fn) ? str(fn, "schema") : NULL;
    const char *catalog = json_is_object(fn) ? str(fn, "catalog") : NULL;
    if (!fname || (catalog && *catalog))
        return SQL_HOOK_CHECK;
    if (schema && (!strcasecmp(schema, "pg_catalog") ||
                   !strcasecmp(schema, "information_schema"))) {
        set_str(fn, "schema", "");
        sql_walk_changed(w, false);
    } else if (schema && *schema) {
        return SQL_HOOK_CHECK;
    }
    const char *rel = pgw_catalog_table_function(fname);
    if (rel) {
        if (json_array_size(json_object_get(fn, "children")) != 0)
            return refused(w, VT_ERR_SQL_SYNTAX, "function %s() takes no arguments here",
                           fname);
        char name[128];
        snprintf(name, sizeof name, "%s", alias && *alias ? alias : fname);
        json_t *cna = json_incref(cols);
        json_object_clear(ref);
        set_str(ref, "type", "BASE_TABLE");
        set_str(ref, "alias", name);
        json_object_set_new(ref, "sample", json_null());
        json_object_set_new(ref, "query_location", json_integer(0));
        set_str(ref, "schema_name", "");
        set_str(ref, "table_name", rel);
        json_object_set_new(ref, "column_name_alias", json_is_array(cna) ? cna : json_array());
        set_str(ref, "catalog_name", "");
        json_object_set_new(ref, "at_clause", json_null());
        sql_walk_changed(w, true);
        return SQL_HOOK_OWN;
    }
    if (json_each_ref(w, ref, fname, alias, cols))
        return SQL_HOOK_AGAIN;
    const char *srf = srf_column(fname);
    if (srf) {
        /* unnest(<the list>) as the table function: WITH ORDINALITY and
         * column aliases stay; the column is named as PostgreSQL does. The
         * names are copied first: fn goes when the call replaces it. */
        char fnm[64], col[64];
        snprintf(fnm, sizeof fnm, "%s", fname);
        snprintf(col, sizeof col, "%s", strcmp(srf, fname) ? srf : alias && *alias ? alias : fname);
        json_t *call = json_deep_copy(fn);
        if (!rewrite_srf(call, fnm, json_object_get(call, "children"))) {
            json_decref(call);
            return refused(w, VT_ERR_SQL_SYNTAX, "function %s: wrong number of arguments", fnm);
        }
        json_object_set_new(ref, "function", call);
        if (!alias || !*alias) /* PostgreSQL's: the function's name (and a column list needs one) */
            set_str(ref, "alias", fnm);
        if (!json_is_array(cols)) {
            cols = json_array();
            json_object_set_new(ref, "column_name_alias", cols);
        }
        if (json_array_size(cols) == 0)
            json_array_append_new(cols, json_string(col));
        sql_walk_changed(w, false);
        return SQL_HOOK_CHECK; /* a table function still: unnest's rules, its arguments walked */
    }
    if (!sql_table_function_allowed(fname) &&
        (sql_function_allowed(fname) || pgw_catalog_function(fname))) {
        char name[128];
        snprintf(name, sizeof name, "%s", alias && *alias ? alias : fname);
        json_t *call = json_incref(fn);
        json_t *cna = json_incref(cols);
        set_str(call, "alias", json_array_size(cna) == 1
                                   ? json_string_value(json_array_get(cna, 0)) : name);
        json_t *list = json_array();
        json_array_append_new(list, call);
        json_t *empty = json_object();
        set_str(empty, "type", "EMPTY");
        set_str(empty, "alias", "");
        json_object_set_new(empty, "sample", json_null());
        json_object_set_new(empty, "query_location", json_integer(0));
        subquery_ref(ref, select_node(list, empty), name, json_array());
        json_decref(cna);
        sql_walk_changed(w, false);
        return SQL_HOOK_AGAIN;
    }
    if (alias && *alias && json_is_array(cols) && json_array_size(cols) == 0 &&
        (!strcmp(fname, "generate_series") || !strcmp(fname, "unnest") ||
         !strcmp(fname, "range"))) {
        json_array_append_new(cols, json_string(alias));
        sql_walk_changed(w, false);
    }
    return SQL_HOOK_CHECK;
}

static enum sql_hook table(struct sql_walk *w, json_t *ref)
{
    const char *type = str(ref, "type");
    if (type && !strcmp(type, "BASE_TABLE"))
        return base_table(w, ref);
    if (type && !strcmp(type, "TABLE_FUNCTION"))
        return table_function(w, ref);
    return SQL_HOOK_CHECK;
}

/* ------------------------------------------------- PostgreSQL's column names
 *
 * PostgreSQL names an unaliased output column after what it computes
 * (FigureColname: count(*) is "count", version() is "version", x::int is
 * "x", 1 is "?column?"); DuckDB names it after the expression's text
 * ("count_star()"). Drivers that hand rows out as dictionaries (psycopg's
 * dict_row, node pg) make that name part of the application, so the
 * outermost select list gets PostgreSQL's names as aliases. */

static const char *cast_type_name(const json_t *ct)
{
    static const char *const map[][2] = {
        {"INTEGER", "int4"}, {"BIGINT", "int8"}, {"SMALLINT", "int2"}, {"BOOLEAN", "bool"},
        {"DOUBLE", "float8"}, {"FLOAT", "float4"}, {"VARCHAR", "text"}, {"DATE", "date"},
        {"TIMESTAMP", "timestamp"}, {"TIMESTAMP WITH TIME ZONE", "timestamptz"},
        {"DECIMAL", "numeric"}, {"INTERVAL", "interval"}, {"BLOB", "bytea"},
        {"UUID", "uuid"}, {"TIME", "time"}, {"LIST", "array"}, {NULL, NULL},
    };
    const char *id = ct ? str(ct, "id") : NULL;
    if (!id)
        return NULL;
    if (!strcmp(id, "USER")) {
        const json_t *info = json_object_get(ct, "type_info");
        return json_is_object(info) ? str(info, "user_type_name") : NULL;
    }
    for (size_t i = 0; map[i][0]; i++)
        if (!strcmp(map[i][0], id))
            return map[i][1];
    return NULL;
}

/* PostgreSQL's name for expression e; strength as FigureColname's: 2 a
 * name from a column or function, 1 from a type, 0 none ("?column?"). */
static int figure(const json_t *e, const char **out)
{
    *out = NULL;
    const char *cls = json_is_object(e) ? str(e, "class") : NULL;
    if (!cls)
        return 0;
    if (!strcmp(cls, "COLUMN_REF")) {
        const json_t *n = json_object_get(e, "column_names");
        size_t k = json_array_size(n);
        *out = k ? json_string_value(json_array_get(n, k - 1)) : NULL;
        return *out ? 2 : 0;
    }
    if (!strcmp(cls, "FUNCTION") || !strcmp(cls, "WINDOW")) {
        const char *fn = str(e, "function_name");
        if (!fn || json_is_true(json_object_get(e, "is_operator")))
            return 0;
        if (!strcmp(fn, "count_star"))
            fn = "count";
        else if (!strcmp(fn, "list_value"))
            fn = "array";
        else if (!strcmp(fn, "row") || !strcmp(fn, "struct_pack"))
            fn = "row";
        else if (!strcmp(fn, "regexp_full_match") || !strcmp(fn, "~~") || !strcmp(fn, "!~~") ||
                 !strcmp(fn, "~~*") || !strcmp(fn, "!~~*") || !isalpha((unsigned char)fn[0]))
            return 0;
        *out = fn;
        return 2;
    }
    if (!strcmp(cls, "CAST")) {
        int st = figure(json_object_get(e, "child"), out);
        if (st >= 2)
            return st;
        *out = cast_type_name(json_object_get(e, "cast_type"));
        return *out ? 1 : 0;
    }
    if (!strcmp(cls, "CASE")) {
        *out = "case";
        return 1;
    }
    if (!strcmp(cls, "OPERATOR")) {
        const char *t = str(e, "type");
        if (t && !strcmp(t, "OPERATOR_COALESCE")) {
            *out = "coalesce";
            return 2;
        }
        return 0;
    }
    if (!strcmp(cls, "SUBQUERY")) {
        const char *t = str(e, "subquery_type");
        if (t && !strcmp(t, "EXISTS")) {
            *out = "exists";
            return 2;
        }
        return -1; /* PostgreSQL looks inside: leave DuckDB's name */
    }
    return 0;
}

/* The outermost SELECT's list: the names PostgreSQL would give. */
static json_t *outer_select_list(json_t *node)
{
    while (json_is_object(node)) {
        const char *t = str(node, "type");
        if (t && !strcmp(t, "SELECT_NODE"))
            return json_object_get(node, "select_list");
        if (t && !strcmp(t, "SET_OPERATION_NODE")) {
            json_t *l = json_object_get(node, "left");
            json_t *ch = json_object_get(node, "children");
            node = json_is_object(l) ? l : json_array_get(ch, 0);
            continue;
        }
        if (t && !strcmp(t, "RECURSIVE_CTE_NODE")) {
            node = json_object_get(node, "left");
            continue;
        }
        return NULL;
    }
    return NULL;
}

struct colnames {
    size_t n;
    char *names[];
};

/* The names, computed before the walk maps anything (version() must be
 * named "version", not after what stands for it). */
static void *colnames_before(json_t *node)
{
    json_t *list = outer_select_list(node);
    size_t n = json_array_size(list);
    if (!n)
        return NULL;
    struct colnames *c = calloc(1, sizeof *c + n * sizeof c->names[0]);
    if (!c)
        return NULL;
    c->n = n;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(list, i);
        const char *alias = str(e, "alias");
        const char *cls = str(e, "class");
        if ((alias && *alias) || !cls || !strcmp(cls, "STAR"))
            continue;
        const char *nm;
        int st = figure(e, &nm);
        if (st < 0)
            continue;
        if (!strcmp(cls, "COLUMN_REF")) {
            /* a plain column keeps its name; the keywords become calls */
            const json_t *cn = json_object_get(e, "column_names");
            if (json_array_size(cn) != 1)
                continue;
        }
        c->names[i] = strdup(st > 0 && nm ? nm : "?column?");
    }
    return c;
}

/* Sets the names as aliases where DuckDB's own name differs. */
static void colnames_after(struct sql_walk *w, json_t *node, void *state, bool ok)
{
    struct colnames *c = state;
    if (!c)
        return;
    json_t *list = ok ? outer_select_list(node) : NULL;
    for (size_t i = 0; i < c->n && i < json_array_size(list); i++) {
        if (!c->names[i])
            continue;
        json_t *e = json_array_get(list, i);
        const char *cls = str(e, "class");
        const json_t *cn = json_object_get(e, "column_names");
        if (cls && !strcmp(cls, "COLUMN_REF") && json_array_size(cn) == 1 &&
            !strcmp(json_string_value(json_array_get(cn, 0)), c->names[i]))
            continue; /* a column: DuckDB names it the same */
        set_str(e, "alias", c->names[i]);
        sql_walk_changed(w, false);
    }
    /* A bare NULL is text in PostgreSQL (an unknown-type literal resolved
     * to text); DuckDB answers INTEGER. Not under a set operation, where
     * PostgreSQL takes the other branch's type. */
    const char *t = ok ? str(node, "type") : NULL;
    for (size_t i = 0; t && !strcmp(t, "SELECT_NODE") && i < json_array_size(list); i++) {
        json_t *e = json_array_get(list, i);
        const char *cls = str(e, "class");
        const json_t *v = json_object_get(e, "value");
        if (!cls || strcmp(cls, "CONSTANT") != 0 || !json_is_true(json_object_get(v, "is_null")))
            continue;
        json_t *cast = new_cast(const_str(NULL, 0), "VARCHAR");
        replace_node(e, cast);
        json_decref(cast);
        sql_walk_changed(w, false);
    }
    for (size_t i = 0; i < c->n; i++)
        free(c->names[i]);
    free(c);
}

const struct sql_dialect pgw_dialect = {
    .expr = expr,
    .table = table,
    .before = colnames_before,
    .after = colnames_after,
};
