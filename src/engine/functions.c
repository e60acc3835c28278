/*
 * The SQL functions vitrine defines in the process database (engine.h,
 * eng_functions_install), for every connection:
 *
 *  - Bounded wrappers. A few built-ins do work their arguments choose in one
 *    call that DuckDB can neither interrupt nor account for: edit distances
 *    are O(len(a) * len(b)) (damerau_levenshtein also in memory: 7 GB for two
 *    30k-character strings), lpad/rpad, bitstring, printf widths and the list
 *    forms of range/generate_series build their result element by element
 *    (90-450 ns each: 10-60 s for the sizes one request can ask for), and the
 *    recursive JSON functions overflow the stack on deeply nested input (a
 *    crash: json_structure of 100,000 '['). A macro in the main schema of
 *    the database shadows each of them (DuckDB looks in memory.main before
 *    the built-ins in system.main; the gate refuses the catalog-qualified
 *    system.main.f that reaches past it) and hands one argument through a
 *    checker of ours ("vt:..." names, which no user statement can call) that
 *    raises an error naming the limit when the call would exceed it
 *    (eng_fn_limit: the statement fails as limit_exceeded, 54000). The
 *    limits are in util/limits.h (VT_SQL_*). Column names do not change: they
 *    come from the statement's text, not from what binds.
 *  - PostgreSQL's to_char(timestamp, text), to_timestamp(text, text)
 *    (pg_dates.c) and OVERLAY(... PLACING ... FROM ... [FOR ...]), which
 *    DuckDB lacks.
 *
 * Memory that no single call controls (a list built over many rows, strings
 * doubled in a recursive CTE) is bounded by the allocation budget
 * (budget.cc), not here.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/functions_internal.h"
#include "util/limits.h"
#include "util/strbuf.h"
#include "util/text.h"

/* ------------------------------------------------------------- helpers */

static duckdb_logical_type ltype(duckdb_type t)
{
    return duckdb_create_logical_type(t);
}

static const char *sv_data(duckdb_string_t *s)
{
    return duckdb_string_t_data(s);
}

/* The text of a VARCHAR argument that is constant in practice (a name, a
 * format): row i of vector v, or "" when NULL. */
static void arg_text(duckdb_vector v, idx_t i, const char **out, uint32_t *len)
{
    uint64_t *valid = duckdb_vector_get_validity(v);
    if (!duckdb_validity_row_is_valid(valid, i)) {
        *out = "";
        *len = 0;
        return;
    }
    duckdb_string_t *s = (duckdb_string_t *)duckdb_vector_get_data(v) + i;
    *out = sv_data(s);
    *len = duckdb_string_t_length(*s);
}

static void fn_failv(duckdb_function_info info, const char *marker, const char *what,
                     const char *fmt, va_list ap)
{
    char msg[352];
    int n = snprintf(msg, sizeof msg, "%s%s: ", marker, what);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    duckdb_scalar_function_set_error(info, msg);
}

void eng_fn_fail(duckdb_function_info info, const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fn_failv(info, "", what, fmt, ap);
    va_end(ap);
}

void eng_fn_limit(duckdb_function_info info, const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fn_failv(info, vt_limit_marker(), what, fmt, ap);
    va_end(ap);
}

/* Copies input vector `from` row by row into `out` (same type, flat):
 * the checkers hand their checked argument through unchanged. */
static void pass_through(duckdb_vector from, duckdb_vector out, idx_t n, size_t width)
{
    uint64_t *valid = duckdb_vector_get_validity(from);
    if (valid) {
        duckdb_vector_ensure_validity_writable(out);
        uint64_t *ov = duckdb_vector_get_validity(out);
        for (idx_t i = 0; i < n; i++)
            if (!duckdb_validity_row_is_valid(valid, i))
                duckdb_validity_set_row_invalid(ov, i);
    }
    if (width)
        memcpy(duckdb_vector_get_data(out), duckdb_vector_get_data(from), n * width);
}

static void pass_strings(duckdb_vector from, duckdb_vector out, idx_t n)
{
    pass_through(from, out, n, 0);
    uint64_t *valid = duckdb_vector_get_validity(from);
    duckdb_string_t *s = duckdb_vector_get_data(from);
    for (idx_t i = 0; i < n; i++)
        if (duckdb_validity_row_is_valid(valid, i))
            duckdb_vector_assign_string_element_len(out, i, sv_data(&s[i]),
                                                    duckdb_string_t_length(s[i]));
}

/* ------------------------------------------------------------- checkers */

/* The name a checker was given (its last argument), for messages. */
static void what_of(duckdb_data_chunk in, idx_t col, idx_t row, char *out, size_t cap)
{
    const char *w;
    uint32_t wl;
    arg_text(duckdb_data_chunk_get_vector(in, col), row, &w, &wl);
    snprintf(out, cap, "%.*s", (int)wl, w);
}

/* "vt:cap"(n BIGINT, call_limit BIGINT, vector_limit BIGINT, what VARCHAR)
 * -> n, or an error when one n passes call_limit or the n of the whole
 * vector together pass vector_limit. */
static void cap_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    idx_t n = duckdb_data_chunk_get_size(in);
    duckdb_vector v = duckdb_data_chunk_get_vector(in, 0);
    int64_t *x = duckdb_vector_get_data(v);
    int64_t *lim = duckdb_vector_get_data(duckdb_data_chunk_get_vector(in, 1));
    int64_t *vlim = duckdb_vector_get_data(duckdb_data_chunk_get_vector(in, 2));
    uint64_t *valid = duckdb_vector_get_validity(v);
    double total = 0;
    for (idx_t i = 0; i < n; i++) {
        if (!duckdb_validity_row_is_valid(valid, i) || x[i] <= 0)
            continue;
        total += (double)x[i];
        if (x[i] > lim[i] || total > (double)vlim[i]) {
            char what[64];
            what_of(in, 3, i, what, sizeof what);
            if (x[i] > lim[i])
                eng_fn_limit(info, what, "%" PRId64 " is over the limit of %" PRId64, x[i], lim[i]);
            else
                eng_fn_limit(info, what, "%.0f for %llu rows together is over the limit of %" PRId64
                     " for one vector of rows", total, (unsigned long long)(i + 1), vlim[i]);
            return;
        }
    }
    pass_through(v, out, n, sizeof(int64_t));
}

/* "vt:pair"(a VARCHAR, b VARCHAR, call_limit BIGINT, vector_limit BIGINT,
 * what VARCHAR) -> b, or an error when bytes(a) * bytes(b) (the cells of an
 * edit-distance table) passes call_limit, or their sum over the vector
 * passes vector_limit. */
static void pair_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    idx_t n = duckdb_data_chunk_get_size(in);
    duckdb_vector av = duckdb_data_chunk_get_vector(in, 0);
    duckdb_vector bv = duckdb_data_chunk_get_vector(in, 1);
    int64_t *lim = duckdb_vector_get_data(duckdb_data_chunk_get_vector(in, 2));
    int64_t *vlim = duckdb_vector_get_data(duckdb_data_chunk_get_vector(in, 3));
    duckdb_string_t *a = duckdb_vector_get_data(av), *b = duckdb_vector_get_data(bv);
    uint64_t *avalid = duckdb_vector_get_validity(av), *bvalid = duckdb_vector_get_validity(bv);
    double total = 0;
    for (idx_t i = 0; i < n; i++) {
        if (!duckdb_validity_row_is_valid(avalid, i) || !duckdb_validity_row_is_valid(bvalid, i))
            continue;
        uint64_t la = duckdb_string_t_length(a[i]), lb = duckdb_string_t_length(b[i]);
        total += (double)la * (double)lb;
        if (la * lb > (uint64_t)lim[i] || total > (double)vlim[i]) {
            char what[64];
            what_of(in, 4, i, what, sizeof what);
            if (la * lb > (uint64_t)lim[i])
                eng_fn_limit(info, what,
                     "strings of %" PRIu64 " and %" PRIu64 " bytes are over the limit of %" PRId64
                     " for the product of their lengths",
                     la, lb, lim[i]);
            else
                eng_fn_limit(info, what,
                     "%llu rows compare %.0f pairs of bytes together, over the limit of %" PRId64
                     " for one vector of rows",
                     (unsigned long long)(i + 1), total, vlim[i]);
            return;
        }
    }
    pass_strings(bv, out, n);
}

/* "vt:json_depth"(j VARCHAR, what VARCHAR) -> j, or an error when j nests
 * deeper than VT_SQL_MAX_JSON_DEPTH (DuckDB's recursive JSON functions
 * overflow the stack on deep documents). */
static void json_depth_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    idx_t n = duckdb_data_chunk_get_size(in);
    duckdb_vector jv = duckdb_data_chunk_get_vector(in, 0);
    duckdb_vector wv = duckdb_data_chunk_get_vector(in, 1);
    duckdb_string_t *j = duckdb_vector_get_data(jv);
    uint64_t *valid = duckdb_vector_get_validity(jv);
    for (idx_t i = 0; i < n; i++) {
        if (!duckdb_validity_row_is_valid(valid, i))
            continue;
        size_t d = text_json_depth(sv_data(&j[i]), duckdb_string_t_length(j[i]));
        if (d > VT_SQL_MAX_JSON_DEPTH) {
            const char *w;
            uint32_t wl;
            arg_text(wv, i, &w, &wl);
            char what[64];
            snprintf(what, sizeof what, "%.*s", (int)wl, w);
            eng_fn_limit(info, what, "JSON nested %zu levels deep is over the limit of %d", d,
                 VT_SQL_MAX_JSON_DEPTH);
            return;
        }
    }
    pass_strings(jv, out, n);
}

/* "vt:range_step"(start, stop, step) -> step, or an error when the list
 * range/generate_series would build has more than VT_SQL_MAX_LIST_ELEMENTS
 * elements. BIGINT, and TIMESTAMP (WITH TIME ZONE) with an INTERVAL step,
 * whose length counts a month as 28 days (the count is never under the
 * real one). A zero step is handed on for the built-in to refuse. */
static bool range_ok(duckdb_function_info info, double count, double total, idx_t i)
{
    if (count > VT_SQL_MAX_LIST_ELEMENTS) {
        eng_fn_limit(info, "range", "a list of about %.0f elements is over the limit of %d", count,
             VT_SQL_MAX_LIST_ELEMENTS);
        return false;
    }
    if (total > VT_SQL_MAX_LIST_ELEMENTS_VECTOR) {
        eng_fn_limit(info, "range",
             "lists of about %.0f elements for %llu rows together are over the limit of %d "
             "for one vector of rows",
             total, (unsigned long long)(i + 1), VT_SQL_MAX_LIST_ELEMENTS_VECTOR);
        return false;
    }
    return true;
}

/* Both forms: the step is a BIGINT, or an INTERVAL over TIMESTAMP bounds
 * (microseconds). */
static void range_step(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out,
                       bool interval)
{
    idx_t n = duckdb_data_chunk_get_size(in);
    duckdb_vector av = duckdb_data_chunk_get_vector(in, 0);
    duckdb_vector bv = duckdb_data_chunk_get_vector(in, 1);
    duckdb_vector sv = duckdb_data_chunk_get_vector(in, 2);
    int64_t *a = duckdb_vector_get_data(av), *b = duckdb_vector_get_data(bv);
    int64_t *si = interval ? NULL : duckdb_vector_get_data(sv);
    duckdb_interval *sp = interval ? duckdb_vector_get_data(sv) : NULL;
    uint64_t *va = duckdb_vector_get_validity(av), *vb = duckdb_vector_get_validity(bv);
    uint64_t *vs = duckdb_vector_get_validity(sv);
    double total = 0;
    for (idx_t i = 0; i < n; i++) {
        if (!duckdb_validity_row_is_valid(va, i) || !duckdb_validity_row_is_valid(vb, i) ||
            !duckdb_validity_row_is_valid(vs, i))
            continue;
        double step = si ? (double)si[i]
                         : (double)sp[i].months * 28.0 * 86400e6 + (double)sp[i].days * 86400e6 +
                               (double)sp[i].micros;
        if (step == 0)
            continue;
        double count = ((double)b[i] - (double)a[i]) / step;
        if (count > 0)
            total += count;
        if (!range_ok(info, count, total, i))
            return;
    }
    pass_through(sv, out, n, interval ? sizeof(duckdb_interval) : sizeof(int64_t));
}

static void range_step_int(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    range_step(info, in, out, false);
}

static void range_step_ts(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    range_step(info, in, out, true);
}

/* "vt:repeat_n"(x ANY, n BIGINT) -> n, or an error when repeating x n
 * times would give a string (or blob) over VT_SQL_MAX_REPEAT_BYTES or a
 * list over VT_SQL_MAX_LIST_ELEMENTS elements. */
static void repeat_n_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    idx_t n = duckdb_data_chunk_get_size(in);
    duckdb_vector xv = duckdb_data_chunk_get_vector(in, 0);
    duckdb_vector nv = duckdb_data_chunk_get_vector(in, 1);
    int64_t *cnt = duckdb_vector_get_data(nv);
    uint64_t *vx = duckdb_vector_get_validity(xv), *vn = duckdb_vector_get_validity(nv);
    duckdb_logical_type t = duckdb_vector_get_column_type(xv);
    duckdb_type id = duckdb_get_type_id(t);
    duckdb_destroy_logical_type(&t);
    bool list = id == DUCKDB_TYPE_LIST;
    double limit = list ? VT_SQL_MAX_LIST_ELEMENTS : VT_SQL_MAX_REPEAT_BYTES;
    double vlimit = list ? VT_SQL_MAX_LIST_ELEMENTS_VECTOR : VT_SQL_MAX_REPEAT_BYTES_VECTOR;
    double sum = 0;
    for (idx_t i = 0; i < n; i++) {
        if (!duckdb_validity_row_is_valid(vx, i) || !duckdb_validity_row_is_valid(vn, i) ||
            cnt[i] <= 0)
            continue;
        double total;
        if (id == DUCKDB_TYPE_VARCHAR || id == DUCKDB_TYPE_BLOB) {
            duckdb_string_t *s = (duckdb_string_t *)duckdb_vector_get_data(xv) + i;
            total = (double)duckdb_string_t_length(*s) * (double)cnt[i];
        } else if (list) {
            duckdb_list_entry *e = (duckdb_list_entry *)duckdb_vector_get_data(xv) + i;
            total = (double)e->length * (double)cnt[i];
        } else {
            total = (double)cnt[i];
        }
        sum += total;
        if (total > limit || sum > vlimit) {
            if (total > limit)
                eng_fn_limit(info, "repeat", "a result of %.0f %s is over the limit of %.0f", total,
                     list ? "elements" : "bytes", limit);
            else
                eng_fn_limit(info, "repeat",
                     "results of %.0f %s for %llu rows together are over the limit of %.0f for "
                     "one vector of rows",
                     sum, list ? "elements" : "bytes", (unsigned long long)(i + 1), vlimit);
            return;
        }
    }
    pass_through(nv, out, n, sizeof(int64_t));
}

/* Whether `bytes` more for row i (of a vector that has `*sum` so far) stay
 * within VT_SQL_MAX_GROWN_BYTES and its vector limit; fails the call naming
 * `what` when not. */
static bool grown_ok(duckdb_function_info info, const char *what, double bytes, double *sum,
                     idx_t i)
{
    *sum += bytes;
    if (bytes > VT_SQL_MAX_GROWN_BYTES) {
        eng_fn_limit(info, what, "a result of %s%.0f bytes is over the limit of %d",
             bytes == VT_SQL_MAX_GROWN_BYTES + 1.0 ? "more than " : "",
             bytes == VT_SQL_MAX_GROWN_BYTES + 1.0 ? bytes - 1 : bytes, VT_SQL_MAX_GROWN_BYTES);
        return false;
    }
    if (*sum > VT_SQL_MAX_GROWN_BYTES_VECTOR) {
        eng_fn_limit(info, what,
             "results of %.0f bytes for %llu rows together are over the limit of %d for one "
             "vector of rows",
             *sum, (unsigned long long)(i + 1), VT_SQL_MAX_GROWN_BYTES_VECTOR);
        return false;
    }
    return true;
}

/* The bytes a growth checker's function makes of row i (x, column 0, not
 * NULL). */
typedef double (*grown_bytes_fn)(duckdb_data_chunk in, idx_t i, duckdb_string_t *x);

/* The loop of every growth checker: each non-NULL row of column 0 (a text,
 * blob or JSON value) within the limits, then column 0 handed on as it is
 * (by reference, not copied). The function's name for the message is
 * column what_col's text, or `name` when what_col is 0, read only when a
 * row fails (a snprintf per row was ~50 ns). */
static void grown_check(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out,
                        grown_bytes_fn bytes, idx_t what_col, const char *name)
{
    idx_t n = duckdb_data_chunk_get_size(in);
    duckdb_vector xv = duckdb_data_chunk_get_vector(in, 0);
    duckdb_string_t *x = duckdb_vector_get_data(xv);
    uint64_t *valid = duckdb_vector_get_validity(xv);
    double sum = 0;
    for (idx_t i = 0; i < n; i++) {
        if (!duckdb_validity_row_is_valid(valid, i))
            continue;
        double b = bytes(in, i, &x[i]);
        if (b <= VT_SQL_MAX_GROWN_BYTES && sum + b <= VT_SQL_MAX_GROWN_BYTES_VECTOR) {
            sum += b;
            continue;
        }
        char what[64];
        if (what_col)
            what_of(in, what_col, i, what, sizeof what);
        else
            snprintf(what, sizeof what, "%s", name);
        grown_ok(info, what, b, &sum, i); /* fails, naming the limit */
        return;
    }
    duckdb_vector_reference_vector(out, xv);
}

static double grow_bytes(duckdb_data_chunk in, idx_t i, duckdb_string_t *x)
{
    double *factor = duckdb_vector_get_data(duckdb_data_chunk_get_vector(in, 1));
    return (double)duckdb_string_t_length(*x) * factor[i];
}

/* "vt:grow"(x, factor DOUBLE, what VARCHAR) -> x, or an error when a result
 * of `factor` bytes per byte of x (text, blob or BIGNUM) would pass
 * VT_SQL_MAX_GROWN_BYTES: what bin, hex, url_encode... make of their
 * argument, in one call, and nested in one another 2^n (to_hex 29 deep over
 * 200 KB ran on past its deadline). Overloads mirror the built-in's, so an
 * argument binds to the same one; integers pass as they are (their result
 * is a few bytes). x is handed on by reference, not copied. */
static void grow_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    duckdb_vector xv = duckdb_data_chunk_get_vector(in, 0);
    duckdb_logical_type t = duckdb_vector_get_column_type(xv);
    duckdb_type id = duckdb_get_type_id(t);
    duckdb_destroy_logical_type(&t);
    if (id == DUCKDB_TYPE_VARCHAR || id == DUCKDB_TYPE_BLOB || id == DUCKDB_TYPE_BIGNUM)
        grown_check(info, in, out, grow_bytes, 2, NULL);
    else
        duckdb_vector_reference_vector(out, xv);
}

/* An upper bound of the bytes json_pretty makes of JSON text j (yyjson's
 * pretty writer, as DuckDB 1.4.4 calls it): every element of a non-empty
 * container on a line of its own, indented 4 spaces a level, the closing
 * bracket too; ": " after a key; whitespace outside strings dropped; a
 * number with a fraction or exponent rewritten (at most 24 bytes: "1e9"
 * becomes 1000000000.0). The indentation is what grows: 2 x 4 x depth^2 /2
 * for one nest, 1.6 GB of 40 KB of brackets (20,000 deep), in one call.
 * Stops counting once past `stop`. */
static double pretty_size(const char *j, size_t n, double stop)
{
    double size = 0, depth = 0;
    bool in_str = false, esc = false, opened = false, elem = false;
    for (size_t i = 0; i < n && size <= stop; i++) {
        unsigned char c = (unsigned char)j[i];
        if (in_str) {
            size++;
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            continue;
        bool closer = c == ']' || c == '}';
        if (opened && closer) { /* empty: "[]" on the line it opened */
            opened = elem = false;
            depth -= depth > 0;
            size++;
            continue;
        }
        if (elem && !closer)
            size += 1 + 4 * depth; /* newline and indentation */
        opened = elem = false;
        if (c == '"') {
            in_str = true;
            size++;
        } else if (c == '[' || c == '{') {
            depth++;
            opened = elem = true;
            size++;
        } else if (closer) {
            depth -= depth > 0;
            size += 2 + 4 * depth;
        } else if (c == ',') {
            elem = true;
            size++;
        } else if (c == ':') {
            size += 2;
        } else {
            size_t k = i;
            bool real = false;
            while (k < n && !strchr(" \t\n\r,:[]{}\"", j[k])) {
                real = real || j[k] == '.' || j[k] == 'e' || j[k] == 'E';
                k++;
            }
            size += real && k - i < 24 ? 24 : (double)(k - i);
            i = k - 1;
        }
    }
    return size;
}

/* "vt:pretty"(j JSON) -> j, or an error when json_pretty would make more
 * than VT_SQL_MAX_GROWN_BYTES of it (pretty_size). */
static double pretty_bytes(duckdb_data_chunk in, idx_t i, duckdb_string_t *j)
{
    (void)in;
    (void)i;
    double size = pretty_size(sv_data(j), duckdb_string_t_length(*j), VT_SQL_MAX_GROWN_BYTES);
    return size > VT_SQL_MAX_GROWN_BYTES ? VT_SQL_MAX_GROWN_BYTES + 1.0 /* "more than" */
                                         : size;
}

static void pretty_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    grown_check(info, in, out, pretty_bytes, 0, "json_pretty");
}

/* "vt:json_out"(j JSON, what VARCHAR) -> j, or an error when a result of
 * the JSON functions that escape strings (to_json, json_quote,
 * array_to_json, row_to_json, json_array, json_object, and DuckDB's
 * json_group_array and json_group_object macros, which call to_json) is
 * over VT_SQL_MAX_GROWN_BYTES,
 * or their vector over its limit ("vt:text_out", the same over VARCHAR:
 * regexp_replace, whose replacement names the match, \0, any number of
 * times: '\0\0' doubles its text, 2^n nested, and one call over 1 MB
 * with 1,000 of them made 1 GB). Checked after the call, as the growth
 * depends on the argument's type (a VARCHAR is escaped, a JSON value kept):
 * one call makes at most 6 times its text (a control byte becomes \u0001),
 * and the next level, over the result cast to VARCHAR, again up to twice
 * (quotes and backslashes), 2^n nested: what the check stops, before the
 * next level starts. Volatile: nested over a constant, DuckDB's folding
 * re-ran the levels below at every level above a failing one (4.3 s for 30
 * levels over a backslash, past the deadline). */
static double json_out_bytes(duckdb_data_chunk in, idx_t i, duckdb_string_t *j)
{
    (void)in;
    (void)i;
    return (double)duckdb_string_t_length(*j);
}

static void json_out_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    grown_check(info, in, out, json_out_bytes, 1, NULL);
}

/* "vt:regexp_bound"(s, r, o) -> s, or an error when regexp_replace's
 * result could pass VT_SQL_MAX_GROWN_BYTES: s, plus r's literal bytes for
 * every match (with 'g' in the options o, up to one per byte of s and one
 * more, else one), plus s again for every \0-\9 in r (the matches' text,
 * which together is at most s). Before the call: a match costs ~100 ns
 * whatever it is replaced with, and one call over a 16 MiB text that a
 * nest of '\0\0' doubled to it ran 1.6 s, where nothing interrupts it
 * (the post-call check, "vt:text_out", stops the nest a level later).
 * Per call only: over a vector, what counts is what was made. */
static void regexp_bound_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    idx_t n = duckdb_data_chunk_get_size(in);
    duckdb_vector sv = duckdb_data_chunk_get_vector(in, 0);
    duckdb_vector rv = duckdb_data_chunk_get_vector(in, 1);
    duckdb_vector ov = duckdb_data_chunk_get_vector(in, 2);
    duckdb_string_t *str = duckdb_vector_get_data(sv);
    uint64_t *valid = duckdb_vector_get_validity(sv);
    for (idx_t i = 0; i < n; i++) {
        if (!duckdb_validity_row_is_valid(valid, i))
            continue;
        const char *r, *o;
        uint32_t rl, ol;
        arg_text(rv, i, &r, &rl);
        arg_text(ov, i, &o, &ol);
        double lit = 0, refs = 0;
        for (uint32_t k = 0; k < rl; k++) {
            if (r[k] == '\\' && k + 1 < rl && isdigit((unsigned char)r[k + 1])) {
                refs++;
                k++;
            } else {
                lit++;
                k += r[k] == '\\' && k + 1 < rl; /* \\: one backslash */
            }
        }
        double sl = (double)duckdb_string_t_length(str[i]);
        double matches = memchr(o, 'g', ol) ? sl + 1 : 1;
        double bound = sl + matches * lit + refs * sl;
        if (bound > VT_SQL_MAX_GROWN_BYTES) {
            eng_fn_limit(info, "regexp_replace",
                         "a result of up to %.0f bytes (%.0f of text, %.0f literal bytes in the "
                         "replacement for each of up to %.0f matches, %.0f references to a "
                         "match) is over the limit of %d",
                         bound, sl, lit, matches, refs, VT_SQL_MAX_GROWN_BYTES);
            return;
        }
    }
    duckdb_vector_reference_vector(out, sv);
}

/* "vt:strftime_arg"(x): strftime's arguments, either way round (date and
 * format, or format and date). A format (the VARCHAR one) of at most
 * VT_SQL_MAX_FORMAT_WIDTH bytes, as to_char's template: each specifier
 * writes up to ~10 times its bytes (%c: 19 for 2), for every row, from one
 * constant (DuckDB requires one) that a repeat() builds to 64 MiB. Dates
 * and timestamps pass as they are; the overloads are strftime's, so each
 * argument binds as it did. Not volatile: the format must fold. */
static void strftime_arg_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    idx_t n = duckdb_data_chunk_get_size(in);
    duckdb_vector xv = duckdb_data_chunk_get_vector(in, 0);
    duckdb_logical_type t = duckdb_vector_get_column_type(xv);
    duckdb_type id = duckdb_get_type_id(t);
    duckdb_destroy_logical_type(&t);
    if (id == DUCKDB_TYPE_VARCHAR) {
        duckdb_string_t *f = duckdb_vector_get_data(xv);
        uint64_t *valid = duckdb_vector_get_validity(xv);
        for (idx_t i = 0; i < n; i++)
            if (duckdb_validity_row_is_valid(valid, i) &&
                duckdb_string_t_length(f[i]) > VT_SQL_MAX_FORMAT_WIDTH) {
                eng_fn_limit(info, "strftime", "a format of %" PRIu32 " bytes is over the limit of %d",
                     duckdb_string_t_length(f[i]), VT_SQL_MAX_FORMAT_WIDTH);
                return;
            }
    }
    duckdb_vector_reference_vector(out, xv);
}

/* The next occurrence of f (fl > 0 bytes) in [p, end), or NULL. */
static const char *find_next(const char *p, const char *end, const char *f, size_t fl)
{
    if (fl == 1)
        return memchr(p, f[0], (size_t)(end - p));
    return memmem(p, (size_t)(end - p), f, fl);
}

/* "vt:replace"(s, from, to): DuckDB's replace (every occurrence of `from`,
 * left to right, none overlapping; an empty `from` leaves s as it is), its
 * result's size counted before it is built: replace nested in itself
 * doubles per level, and one call multiplies s by len(to). Bytes, as the
 * built-in: a match of valid UTF-8 in valid UTF-8 starts on a character. */
static void replace_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    idx_t n = duckdb_data_chunk_get_size(in);
    duckdb_vector v[3];
    duckdb_string_t *s[3];
    uint64_t *valid[3];
    for (int k = 0; k < 3; k++) {
        v[k] = duckdb_data_chunk_get_vector(in, (idx_t)k);
        s[k] = duckdb_vector_get_data(v[k]);
        valid[k] = duckdb_vector_get_validity(v[k]);
    }
    duckdb_vector_ensure_validity_writable(out);
    uint64_t *ov = duckdb_vector_get_validity(out);
    char *buf = NULL;
    size_t cap = 0;
    double sum = 0;
    for (idx_t i = 0; i < n; i++) {
        if (!duckdb_validity_row_is_valid(valid[0], i) ||
            !duckdb_validity_row_is_valid(valid[1], i) ||
            !duckdb_validity_row_is_valid(valid[2], i)) {
            duckdb_validity_set_row_invalid(ov, i);
            continue;
        }
        const char *str = sv_data(&s[0][i]), *from = sv_data(&s[1][i]), *to = sv_data(&s[2][i]);
        size_t sl = duckdb_string_t_length(s[0][i]), fl = duckdb_string_t_length(s[1][i]),
               tl = duckdb_string_t_length(s[2][i]);
        const char *end = str + sl;
        /* The result is at most s when `to` is no longer than `from`; else
         * count, stopping once past the limit. */
        double size = (double)sl;
        if (fl && tl > fl)
            for (const char *p = str; p < end;) {
                const char *m = find_next(p, end, from, fl);
                if (!m)
                    break;
                size += (double)(tl - fl);
                p = m + fl;
                if (size > VT_SQL_MAX_GROWN_BYTES) {
                    size = VT_SQL_MAX_GROWN_BYTES + 1.0; /* "more than" the limit */
                    break;
                }
            }
        if (!grown_ok(info, "replace", size, &sum, i)) {
            free(buf);
            return;
        }
        const char *m = fl ? find_next(str, end, from, fl) : NULL;
        if (!m) {
            duckdb_vector_assign_string_element_len(out, i, str, sl);
            continue;
        }
        size_t need = (size_t)size > sl ? (size_t)size : sl;
        if (need > cap) {
            char *nb = realloc(buf, need ? need : 1);
            if (!nb) {
                free(buf);
                duckdb_scalar_function_set_error(info, "replace: out of memory");
                return;
            }
            buf = nb, cap = need;
        }
        size_t len = 0;
        for (const char *p = str;;) {
            memcpy(buf + len, p, (size_t)(m - p));
            len += (size_t)(m - p);
            memcpy(buf + len, to, tl);
            len += tl;
            p = m + fl;
            m = find_next(p, end, from, fl);
            if (!m) {
                memcpy(buf + len, p, (size_t)(end - p));
                len += (size_t)(end - p);
                break;
            }
        }
        duckdb_vector_assign_string_element_len(out, i, buf, len);
    }
    free(buf);
}

/* An argument a format names by its position ("%1$s", "{0}") may be named
 * once: named N times, the result holds N copies of it, and a format of
 * 256 KiB names one 65,536 times (nested printf: N^depth). Formats that take
 * their arguments in order (the other kind; DuckDB refuses a mix) use each
 * at most once already. So the result is at most the format, the arguments
 * and their widths, which the checks here bound, whatever the arguments. */
#define FORMAT_POSITIONS 64 /* a higher position counts with the last */

static bool position_once(unsigned char *seen, uint64_t pos, int shown, char *why, size_t cap)
{
    unsigned char *c = &seen[pos < FORMAT_POSITIONS ? pos : FORMAT_POSITIONS];
    if (*c) {
        snprintf(why, cap, "argument %d named twice: over the limit of once for an argument "
                           "named by its position (each copy multiplies the result)",
                 shown);
        return false;
    }
    *c = 1;
    return true;
}

/* Width and precision numbers of a printf-style format ("%-10.3f", "%5$s"):
 * true when every one is at most VT_SQL_MAX_FORMAT_WIDTH, none comes from
 * an argument ('*') and no position repeats. */
static bool printf_format_ok(const char *f, size_t n, char *why, size_t cap)
{
    unsigned char seen[FORMAT_POSITIONS + 1] = {0};
    for (size_t i = 0; i < n; i++) {
        if (f[i] != '%')
            continue;
        i++;
        if (i < n && f[i] == '%')
            continue;
        while (i < n && !isalpha((unsigned char)f[i])) {
            if (f[i] == '*') {
                snprintf(why, cap, "a width or precision taken from an argument (*): its limit "
                                   "cannot be checked");
                return false;
            }
            if (isdigit((unsigned char)f[i])) {
                uint64_t v = 0;
                while (i < n && isdigit((unsigned char)f[i])) {
                    if (v < 1000000000)
                        v = v * 10 + (uint64_t)(f[i] - '0');
                    i++;
                }
                if (i < n && f[i] == '$') { /* a position, not a width */
                    if (!position_once(seen, v, v > 1000000 ? 1000000 : (int)v, why, cap))
                        return false;
                } else if (v > VT_SQL_MAX_FORMAT_WIDTH) {
                    snprintf(why, cap, "a width or precision of %" PRIu64 ", over the limit of %d",
                             v, VT_SQL_MAX_FORMAT_WIDTH);
                    return false;
                }
                i--;
            }
            i++;
        }
    }
    return true;
}

/* The same for the fmt syntax of format(): "{:>10}", "{0:.3f}", and no
 * nested replacement field ("{:{}}": a width from an argument). */
static bool fmt_format_ok(const char *f, size_t n, char *why, size_t cap)
{
    unsigned char seen[FORMAT_POSITIONS + 1] = {0};
    for (size_t i = 0; i < n; i++) {
        if (f[i] != '{')
            continue;
        if (i + 1 < n && f[i + 1] == '{') {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < n && f[j] != '}') {
            if (f[j] == '{') {
                snprintf(why, cap, "a width or precision taken from an argument ({:{}}): its "
                                   "limit cannot be checked");
                return false;
            }
            j++;
        }
        const char *colon = memchr(f + i, ':', j - i);
        size_t id_end = colon ? (size_t)(colon - f) : j;
        if (id_end > i + 1 && isdigit((unsigned char)f[i + 1])) {
            uint64_t pos = 0;
            for (size_t k = i + 1; k < id_end && isdigit((unsigned char)f[k]); k++)
                if (pos < 1000000000)
                    pos = pos * 10 + (uint64_t)(f[k] - '0');
            if (!position_once(seen, pos, pos > 1000000 ? 1000000 : (int)pos, why, cap))
                return false;
        }
        for (size_t k = colon ? (size_t)(colon - f) : j; k < j; k++) {
            if (!isdigit((unsigned char)f[k]))
                continue;
            uint64_t v = 0;
            while (k < j && isdigit((unsigned char)f[k])) {
                if (v < 1000000000)
                    v = v * 10 + (uint64_t)(f[k] - '0');
                k++;
            }
            if (v > VT_SQL_MAX_FORMAT_WIDTH) {
                snprintf(why, cap, "a width or precision of %" PRIu64 ", over the limit of %d", v,
                         VT_SQL_MAX_FORMAT_WIDTH);
                return false;
            }
        }
        i = j;
    }
    return true;
}

static void format_check(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out,
                         bool printf_style)
{
    idx_t n = duckdb_data_chunk_get_size(in);
    duckdb_vector fv = duckdb_data_chunk_get_vector(in, 0);
    duckdb_string_t *f = duckdb_vector_get_data(fv);
    uint64_t *valid = duckdb_vector_get_validity(fv);
    for (idx_t i = 0; i < n; i++) {
        if (!duckdb_validity_row_is_valid(valid, i))
            continue;
        char why[192];
        const char *s = sv_data(&f[i]);
        size_t len = duckdb_string_t_length(f[i]);
        if (!(printf_style ? printf_format_ok(s, len, why, sizeof why)
                           : fmt_format_ok(s, len, why, sizeof why))) {
            eng_fn_limit(info, printf_style ? "printf" : "format", "the format has %s", why);
            return;
        }
    }
    pass_strings(fv, out, n);
}

static void printf_fmt_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    format_check(info, in, out, true);
}

static void format_fmt_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    format_check(info, in, out, false);
}

/* ------------------------------------------------------------ registration */

struct overload {
    duckdb_type params[5];      /* DUCKDB_TYPE_INVALID ends the list */
    duckdb_type ret;
    duckdb_scalar_function_t fn;
};

static duckdb_logical_type overload_type(duckdb_type t, bool json)
{
    duckdb_logical_type l = ltype(t);
    if (json && t == DUCKDB_TYPE_VARCHAR)
        duckdb_logical_type_set_alias(l, "JSON");
    return l;
}

/* `unfolded`: never evaluated at plan time. DuckDB folds a constant
 * expression while optimizing, each level of a nested one again when a level
 * below fails, and nothing interrupts the optimizer: to_hex 29 deep over a
 * constant 200 KB string, refused at its 9th level, took 28 s of folding
 * (each of the 20 levels above re-ran the 9 below). A volatile checker keeps
 * the work in execution, once, where the deadline reaches it. The checkers
 * of the builders whose size the call chooses (repeat, lpad/rpad, range...)
 * are volatile too, so what they build is never a constant: folding a nest
 * of any function over a constant costs depth^2 x its size (lower 40 deep
 * over repeat('a,', 5e6): 9.5 s in the optimizer; evaluated, 1.5 s and
 * interruptible; fuzz_sql_functions' campaign: format 38 deep over 1 MB,
 * still running 20 s after its interrupt). `json`: the
 * first parameter and the result are JSON (a VARCHAR alias), as the built-in
 * behind takes and gives. */
static enum vt_err register_set(duckdb_connection con, const char *name,
                                const struct overload *ov, size_t n, bool unfolded, bool json,
                                struct vt_error *err)
{
    duckdb_scalar_function_set set = duckdb_create_scalar_function_set(name);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        duckdb_scalar_function f = duckdb_create_scalar_function();
        duckdb_scalar_function_set_name(f, name);
        for (size_t k = 0; k < 5 && ov[i].params[k] != DUCKDB_TYPE_INVALID; k++) {
            duckdb_logical_type t = overload_type(ov[i].params[k], json && k == 0);
            duckdb_scalar_function_add_parameter(f, t);
            duckdb_destroy_logical_type(&t);
        }
        duckdb_logical_type r = overload_type(ov[i].ret, json);
        duckdb_scalar_function_set_return_type(f, r);
        duckdb_destroy_logical_type(&r);
        /* NULL in, NULL out is what the built-ins behind do; the checkers
         * hand NULLs through themselves. */
        duckdb_scalar_function_set_special_handling(f);
        if (unfolded)
            duckdb_scalar_function_set_volatile(f);
        duckdb_scalar_function_set_function(f, ov[i].fn);
        ok = duckdb_add_scalar_function_to_set(set, f) == DuckDBSuccess;
        duckdb_destroy_scalar_function(&f);
    }
    ok = ok && duckdb_register_scalar_function_set(con, set) == DuckDBSuccess;
    duckdb_destroy_scalar_function_set(&set);
    if (!ok)
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot register SQL function %s", name);
    return VT_ERR_OK;
}

#define X DUCKDB_TYPE_INVALID
#define BIGINT DUCKDB_TYPE_BIGINT
#define VARCHAR DUCKDB_TYPE_VARCHAR
#define TS DUCKDB_TYPE_TIMESTAMP
#define TSTZ DUCKDB_TYPE_TIMESTAMP_TZ
#define INTERVAL DUCKDB_TYPE_INTERVAL
#define DOUBLE DUCKDB_TYPE_DOUBLE

static const struct overload cap_ov[] = {{{BIGINT, BIGINT, BIGINT, VARCHAR, X}, BIGINT, cap_fn}};
static const struct overload pair_ov[] = {
    {{VARCHAR, VARCHAR, BIGINT, BIGINT, VARCHAR}, VARCHAR, pair_fn}};
static const struct overload json_depth_ov[] = {{{VARCHAR, VARCHAR, X, X, X}, VARCHAR, json_depth_fn}};
static const struct overload range_ov[] = {
    {{BIGINT, BIGINT, BIGINT, X, X}, BIGINT, range_step_int},
    {{TS, TS, INTERVAL, X, X}, INTERVAL, range_step_ts},
    {{TSTZ, TSTZ, INTERVAL, X, X}, INTERVAL, range_step_ts},
};
static const struct overload repeat_ov[] = {
    {{DUCKDB_TYPE_ANY, BIGINT, X, X, X}, BIGINT, repeat_n_fn}};
static const struct overload grow_ov[] = {
    {{VARCHAR, DOUBLE, VARCHAR, X, X}, VARCHAR, grow_fn},
    {{DUCKDB_TYPE_BLOB, DOUBLE, VARCHAR, X, X}, DUCKDB_TYPE_BLOB, grow_fn},
    {{DUCKDB_TYPE_BIGNUM, DOUBLE, VARCHAR, X, X}, DUCKDB_TYPE_BIGNUM, grow_fn},
    {{BIGINT, DOUBLE, VARCHAR, X, X}, BIGINT, grow_fn},
    {{DUCKDB_TYPE_UBIGINT, DOUBLE, VARCHAR, X, X}, DUCKDB_TYPE_UBIGINT, grow_fn},
    {{DUCKDB_TYPE_HUGEINT, DOUBLE, VARCHAR, X, X}, DUCKDB_TYPE_HUGEINT, grow_fn},
    {{DUCKDB_TYPE_UHUGEINT, DOUBLE, VARCHAR, X, X}, DUCKDB_TYPE_UHUGEINT, grow_fn},
};
static const struct overload json_out_ov[] = {
    {{VARCHAR, VARCHAR, X, X, X}, VARCHAR, json_out_fn}};
static const struct overload regexp_bound_ov[] = {
    {{VARCHAR, VARCHAR, VARCHAR, X, X}, VARCHAR, regexp_bound_fn}};
static const struct overload pretty_ov[] = {{{VARCHAR, X, X, X, X}, VARCHAR, pretty_fn}};
static const struct overload strftime_ov[] = {
    {{VARCHAR, X, X, X, X}, VARCHAR, strftime_arg_fn},
    {{DUCKDB_TYPE_DATE, X, X, X, X}, DUCKDB_TYPE_DATE, strftime_arg_fn},
    {{TS, X, X, X, X}, TS, strftime_arg_fn},
    {{DUCKDB_TYPE_TIMESTAMP_NS, X, X, X, X}, DUCKDB_TYPE_TIMESTAMP_NS, strftime_arg_fn},
    {{TSTZ, X, X, X, X}, TSTZ, strftime_arg_fn},
};
static const struct overload replace_ov[] = {
    {{VARCHAR, VARCHAR, VARCHAR, X, X}, VARCHAR, replace_fn}};
static const struct overload printf_ov[] = {{{VARCHAR, X, X, X, X}, VARCHAR, printf_fmt_fn}};
static const struct overload format_ov[] = {{{VARCHAR, X, X, X, X}, VARCHAR, format_fmt_fn}};
static const struct overload to_char_ov[] = {{{TS, VARCHAR, X, X, X}, VARCHAR, eng_pg_to_char}};
static const struct overload to_timestamp_ov[] = {
    {{VARCHAR, VARCHAR, X, X, X}, TSTZ, eng_pg_to_timestamp}};

#undef X
#undef BIGINT
#undef VARCHAR
#undef TS
#undef TSTZ
#undef INTERVAL
#undef DOUBLE

/* The macros, one CREATE each. @PAIR@, @PAD@, @BITS@ and @LIST@ become
 * "<limit per call>, <limit per vector>" (util/limits.h). */
static const char *const macros[] = {
    /* edit distances: O(len(a) * len(b)) time (and memory for damerau) */
    "levenshtein(a, b) AS "
    "system.main.levenshtein(a, \"vt:pair\"(a, b, @PAIR@, 'levenshtein'))",
    "editdist3(a, b) AS "
    "system.main.editdist3(a, \"vt:pair\"(a, b, @PAIR@, 'editdist3'))",
    "damerau_levenshtein(a, b) AS "
    "system.main.damerau_levenshtein(a, \"vt:pair\"(a, b, @PAIR@, 'damerau_levenshtein'))",
    "jaro_similarity(a, b) AS "
    "system.main.jaro_similarity(a, \"vt:pair\"(a, b, @PAIR@, 'jaro_similarity')), "
    "(a, b, c) AS "
    "system.main.jaro_similarity(a, \"vt:pair\"(a, b, @PAIR@, 'jaro_similarity'), c)",
    "jaro_winkler_similarity(a, b) AS "
    "system.main.jaro_winkler_similarity(a, \"vt:pair\"(a, b, @PAIR@, 'jaro_winkler_similarity')), "
    "(a, b, c) AS "
    "system.main.jaro_winkler_similarity(a, \"vt:pair\"(a, b, @PAIR@, 'jaro_winkler_similarity'), c)",
    /* builders that go element by element */
    "lpad(s, n, p) AS system.main.lpad(s, CAST(\"vt:cap\"(n, @PAD@, 'lpad') AS INTEGER), p)",
    "rpad(s, n, p) AS system.main.rpad(s, CAST(\"vt:cap\"(n, @PAD@, 'rpad') AS INTEGER), p)",
    "bitstring(s, n) AS "
    "system.main.bitstring(s, CAST(\"vt:cap\"(n, @BITS@, 'bitstring') AS INTEGER))",
    /* x and n once each: a macro copies an argument at every use of its
     * parameter, and a volatile one (random(), a subquery) is evaluated per
     * copy, so the checker measured one value and repeat built another. The
     * struct in a one-element list is evaluated once; the lambda reads it
     * (by struct_extract: "vt:r".x in a table function's argument binds as
     * the string 'vt:r.x'). */
    "repeat(x, n) AS list_transform([{'x': x, 'n': n}], lambda \"vt:r\": system.main.repeat("
    "struct_extract(\"vt:r\", 'x'), "
    "\"vt:repeat_n\"(struct_extract(\"vt:r\", 'x'), struct_extract(\"vt:r\", 'n'))))[1]",
    "list_resize(l, n) AS system.main.list_resize(l, \"vt:cap\"(n, @LIST@, 'list_resize')), "
    "(l, n, v) AS system.main.list_resize(l, \"vt:cap\"(n, @LIST@, 'list_resize'), v)",
    "array_resize(l, n) AS system.main.array_resize(l, \"vt:cap\"(n, @LIST@, 'array_resize')), "
    "(l, n, v) AS system.main.array_resize(l, \"vt:cap\"(n, @LIST@, 'array_resize'), v)",
    /* integer and timestamp bins past about 1,000 per unit of the range
     * loop without end (equi_width_bins(0, 10, 20000, false): fuzz7's
     * probe; its abandoned worker kept a core) */
    "equi_width_bins(a, b, n, r) AS "
    "system.main.equi_width_bins(a, b, \"vt:cap\"(n, @BINS@, 'equi_width_bins'), r)",
    "range(a) AS system.main.range(\"vt:cap\"(a, @LIST@, 'range')), "
    "(a, b) AS system.main.range(a, b, \"vt:range_step\"(a, b, 1)), "
    "(a, b, c) AS system.main.range(a, b, \"vt:range_step\"(a, b, c))",
    "generate_series(a) AS "
    "system.main.generate_series(\"vt:cap\"(a, @LIST@, 'generate_series')), "
    "(a, b) AS system.main.generate_series(a, b, \"vt:range_step\"(a, b, 1)), "
    "(a, b, c) AS system.main.generate_series(a, b, \"vt:range_step\"(a, b, c))",
    /* results a multiple of the argument, 2^n nested in one another (bin 7
     * deep over 1,000 bytes: a 2.1 GB string, 4 GB RSS). The overloads of
     * "vt:grow" are those of bin/hex (text, blob, BIGNUM, the integers),
     * "vt:grow_text"'s and "vt:grow_blob"'s the one of the others, so an
     * argument (a NULL too) binds as it did. */
    "bin(x) AS system.main.bin(\"vt:grow\"(x, 8, 'bin'))",
    "to_binary(x) AS system.main.to_binary(\"vt:grow\"(x, 8, 'to_binary'))",
    "hex(x) AS system.main.hex(\"vt:grow\"(x, 2, 'hex'))",
    "to_hex(x) AS system.main.to_hex(\"vt:grow\"(x, 2, 'to_hex'))",
    "url_encode(s) AS system.main.url_encode(\"vt:grow_text\"(s, 3, 'url_encode'))",
    "to_base64(b) AS system.main.to_base64(\"vt:grow_blob\"(b, 4.0 / 3, 'to_base64'))",
    "base64(b) AS system.main.base64(\"vt:grow_blob\"(b, 4.0 / 3, 'base64'))",
    "regexp_escape(s) AS system.main.regexp_escape(\"vt:grow_text\"(s, 2, 'regexp_escape'))",
    "replace(s, f, t) AS \"vt:replace\"(s, f, t)",
    /* 4 spaces of indentation a level for every line: 40 KB of brackets
     * made 1.6 GB */
    "json_pretty(j) AS system.main.json_pretty(\"vt:pretty\"(j))",
    /* strings escaped: up to 6x in one call, 2^n nested over ::VARCHAR.
     * array_to_json and row_to_json through a lambda: called on the
     * parameter itself, the CREATE fails (its type is unknown then, and
     * they want a LIST or a STRUCT). json_array and json_object are
     * varargs: one macro per count (@JSONBUILD@). */
    "to_json(x) AS \"vt:json_out\"(system.main.to_json(x), 'to_json')",
    "json_quote(x) AS \"vt:json_out\"(system.main.json_quote(x), 'json_quote')",
    "array_to_json(x) AS \"vt:json_out\"(list_transform([x], "
    "lambda \"vt:a\": system.main.array_to_json(\"vt:a\"))[1], 'array_to_json')",
    "row_to_json(x) AS \"vt:json_out\"(list_transform([x], "
    "lambda \"vt:a\": system.main.row_to_json(\"vt:a\"))[1], 'row_to_json')",
    /* \0 (the match) any number of times in the replacement: what the
     * result could be is bounded before the call, what it is checked after
     * (the matches are the regex's to find). s and r once each (as in
     * repeat: a parameter used twice doubles the statement at every level
     * of a nest, and a volatile r would be two values), in a list a lambda
     * reads: outside it, as a subquery or an outer query's column cannot be
     * in a lambda, and a list (not a struct: that binds the lambda when the
     * CREATE runs) so that the options bind at the call (they must be a
     * constant, which a parameter is not then). The options once too: the
     * bound takes them as 'g' (every match, the most the call can
     * replace). */
    "regexp_replace(s, p, r) AS \"vt:text_out\"(list_transform([[s, r]], lambda \"vt:x\": "
    "system.main.regexp_replace(\"vt:regexp_bound\"(\"vt:x\"[1], \"vt:x\"[2], ''), p, "
    "\"vt:x\"[2]))[1], 'regexp_replace'), "
    "(s, p, r, o) AS \"vt:text_out\"(list_transform([[s, r]], lambda \"vt:x\": "
    "system.main.regexp_replace(\"vt:regexp_bound\"(\"vt:x\"[1], \"vt:x\"[2], 'g'), p, "
    "\"vt:x\"[2], o))[1], 'regexp_replace')",
    "@JSONBUILD@",
    /* up to ~10x the format (a constant) for every row */
    "strftime(a, b) AS "
    "system.main.strftime(\"vt:strftime_arg\"(a), \"vt:strftime_arg\"(b))",
    /* recursive over the document: the stack overflows on deep nesting */
    "json_structure(j) AS system.main.json_structure(\"vt:json_depth\"(j, 'json_structure'))",
    "json_contains(a, b) AS system.main.json_contains(\"vt:json_depth\"(a, 'json_contains'), "
    "\"vt:json_depth\"(b, 'json_contains'))",
    /* the structure argument is parsed into a type recursively at bind
     * (json_transform('{}', 100,000 '[') took the server down: stop 39's
     * CI). It stays a constant through the checker, as binding requires;
     * the document is walked only as deep as the structure. */
    "json_transform(j, s) AS "
    "system.main.json_transform(j, \"vt:json_depth\"(s, 'json_transform'))",
    "json_transform_strict(j, s) AS "
    "system.main.json_transform_strict(j, \"vt:json_depth\"(s, 'json_transform_strict'))",
    "from_json(j, s) AS system.main.from_json(j, \"vt:json_depth\"(s, 'from_json'))",
    "from_json_strict(j, s) AS "
    "system.main.from_json_strict(j, \"vt:json_depth\"(s, 'from_json_strict'))",
    /* printf and format: widths, precisions and positions named once (the
     * format goes through a checker; up to 16 values) */
    "@FMT@",
    /* PostgreSQL's */
    "to_char(t, f) AS \"vt:to_char\"(CAST(t AS TIMESTAMP), f)",
    "to_timestamp(x) AS system.main.to_timestamp(x), "
    "(s, f) AS \"vt:to_timestamp\"(s, f)",
    "overlay(s, r, p) AS system.main.substring(s, 1, p - 1) || r || "
    "system.main.substring(s, p + system.main.length(r)), "
    "(s, r, p, n) AS system.main.substring(s, 1, p - 1) || r || system.main.substring(s, p + n)",
    NULL,
};

/* printf/format with 0..16 values, and json_merge_patch with 2..8 documents:
 * macros take a fixed number of parameters, so one overload per count. */
static void varargs_macro(struct strbuf *sql, const char *name, const char *checker, int from,
                          int to)
{
    sb_addf(sql, "CREATE OR REPLACE MACRO main.%s", name);
    for (int k = from; k <= to; k++) {
        sb_adds(sql, k == from ? "" : ", ");
        sb_adds(sql, "(f");
        for (int i = 1; i <= k; i++)
            sb_addf(sql, ", a%d", i);
        sb_addf(sql, ") AS system.main.%s(\"%s\"(f%s)", name, checker,
                strcmp(checker, "vt:json_depth") ? "" : ", 'json_merge_patch'");
        for (int i = 1; i <= k; i++) {
            if (!strcmp(checker, "vt:json_depth"))
                sb_addf(sql, ", \"%s\"(a%d, 'json_merge_patch')", checker, i);
            else
                sb_addf(sql, ", a%d", i);
        }
        sb_adds(sql, ")");
    }
}

/* json_array with 0..VT_SQL_MAX_JSON_BUILD_ARGS values and json_object
 * with as many keys and values (pairs: it refuses an odd count when the
 * CREATE binds it), the result through "vt:json_out". json_object's keys
 * go through a cast to VARCHAR: the CREATE binds the body with the
 * parameters' types unknown, and json_object refuses a key that is not a
 * VARCHAR. */
static void json_build_macros(struct strbuf *sql)
{
    static const struct {
        const char *name;
        int step;
    } fns[] = {{"json_array", 1}, {"json_object", 2}};
    for (size_t f = 0; f < 2; f++) {
        sb_addf(sql, "%sCREATE OR REPLACE MACRO main.%s ", f ? "; " : "", fns[f].name);
        for (int k = 0; k <= VT_SQL_MAX_JSON_BUILD_ARGS; k += fns[f].step) {
            sb_adds(sql, k ? ", (" : "(");
            for (int i = 1; i <= k; i++)
                sb_addf(sql, "%sa%d", i > 1 ? ", " : "", i);
            sb_addf(sql, ") AS \"vt:json_out\"(system.main.%s(", fns[f].name);
            for (int i = 1; i <= k; i++) {
                if (fns[f].step == 2 && i % 2)
                    sb_addf(sql, "%sCAST(a%d AS VARCHAR)", i > 1 ? ", " : "", i);
                else
                    sb_addf(sql, "%sa%d", i > 1 ? ", " : "", i);
            }
            sb_addf(sql, "), '%s')", fns[f].name);
        }
    }
}

static void substitute(struct strbuf *out, const char *text)
{
    static const struct {
        const char *key;
        long long call, vector;
    } limits[] = {
        {"@PAIR@", VT_SQL_MAX_EDIT_CELLS, VT_SQL_MAX_EDIT_CELLS_VECTOR},
        {"@PAD@", VT_SQL_MAX_PAD_CHARS, VT_SQL_MAX_PAD_CHARS_VECTOR},
        {"@BITS@", VT_SQL_MAX_BITS, VT_SQL_MAX_BITS_VECTOR},
        {"@LIST@", VT_SQL_MAX_LIST_ELEMENTS, VT_SQL_MAX_LIST_ELEMENTS_VECTOR},
        {"@BINS@", VT_SQL_MAX_BINS, VT_SQL_MAX_BINS_VECTOR},
    };
    for (const char *p = text; *p;) {
        bool hit = false;
        for (size_t k = 0; k < sizeof limits / sizeof limits[0] && !hit; k++) {
            size_t kl = strlen(limits[k].key);
            if (!strncmp(p, limits[k].key, kl)) {
                sb_addf(out, "%lld, %lld", limits[k].call, limits[k].vector);
                p += kl;
                hit = true;
            }
        }
        if (!hit)
            sb_addc(out, *p++);
    }
}

enum vt_err eng_functions_install(duckdb_connection con, struct vt_error *err)
{
    enum vt_err rc = VT_ERR_OK;
    static const struct {
        const char *name;
        const struct overload *ov;
        size_t n;
        bool unfolded, json;
    } sets[] = {
        {"vt:cap", cap_ov, 1, true, false},
        {"vt:pair", pair_ov, 1, false, false},
        {"vt:json_depth", json_depth_ov, 1, false, false},
        {"vt:range_step", range_ov, 3, true, false},
        {"vt:repeat_n", repeat_ov, 1, true, false},
        {"vt:grow", grow_ov, sizeof grow_ov / sizeof grow_ov[0], true, false},
        {"vt:grow_text", &grow_ov[0], 1, true, false}, /* grow's text overload alone */
        {"vt:grow_blob", &grow_ov[1], 1, true, false}, /* and its blob one */
        {"vt:replace", replace_ov, 1, true, false},
        {"vt:pretty", pretty_ov, 1, true, true},
        {"vt:json_out", json_out_ov, 1, true, true},
        {"vt:text_out", json_out_ov, 1, true, false},
        {"vt:regexp_bound", regexp_bound_ov, 1, true, false},
        {"vt:strftime_arg", strftime_ov, sizeof strftime_ov / sizeof strftime_ov[0], false, false},
        {"vt:printf_format", printf_ov, 1, false, false},
        {"vt:format_format", format_ov, 1, false, false},
        {"vt:to_char", to_char_ov, 1, false, false},
        {"vt:to_timestamp", to_timestamp_ov, 1, false, false},
    };
    for (size_t i = 0; rc == VT_ERR_OK && i < sizeof sets / sizeof sets[0]; i++)
        rc = register_set(con, sets[i].name, sets[i].ov, sets[i].n, sets[i].unfolded, sets[i].json,
                          err);
    if (rc == VT_ERR_OK)
        rc = eng_jsonb_install(con, err);
    struct strbuf sql;
    sb_init(&sql, 0);
    for (size_t i = 0; rc == VT_ERR_OK && macros[i]; i++) {
        sb_reset(&sql);
        if (!strcmp(macros[i], "@FMT@")) {
            varargs_macro(&sql, "printf", "vt:printf_format", 0, 16);
            sb_adds(&sql, "; ");
            varargs_macro(&sql, "format", "vt:format_format", 0, 16);
            sb_adds(&sql, "; ");
            varargs_macro(&sql, "json_merge_patch", "vt:json_depth", 1, 8);
        } else if (!strcmp(macros[i], "@JSONBUILD@")) {
            json_build_macros(&sql);
        } else {
            sb_adds(&sql, "CREATE OR REPLACE MACRO main.");
            substitute(&sql, macros[i]);
        }
        if (sql.overflow)
            rc = vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        else
            rc = eng_exec(con, sql.buf, VT_ERR_INTERNAL, err);
    }
    sb_release(&sql);
    return rc;
}
