/*
 * PostgreSQL's jsonb containment, which DuckDB lacks (engine.h,
 * eng_jsonb_install): "vt:jsonb_contains"(a, b) is PostgreSQL's a @> b (and
 * b <@ a). DuckDB's json_contains answers another question: it finds the
 * needle anywhere in the haystack ('{"a": {"b": 1}}' contains '{"b": 1}'),
 * compares 1 and 1.0 as different, and finds 3 inside [1, [3]]; PostgreSQL's
 * containment is structural (jsonb docs, 8.14.3): an object contains the
 * keys of the other with contained values, an array contains each element
 * of the other in some element of its own, and at the top level only, an
 * array contains a scalar it holds. The pgwire dialect maps @>, <@ and
 * jsonb_contains/jsonb_contained onto it.
 *
 * The values are parsed with jansson (numbers as doubles: equal as
 * PostgreSQL's numerics are, up to 2^53). DuckDB cannot interrupt a call,
 * and arrays compare element by element (quadratic): the comparisons of one
 * call and of one vector, and the nesting walked, are bounded
 * (util/limits.h), past them the statement fails naming the limit.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "engine/engine.h"
#include "util/limits.h"

static bool scalar(const json_t *v)
{
    return !json_is_object(v) && !json_is_array(v);
}

static bool scalar_eq(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    if (json_typeof(a) != json_typeof(b))
        return false;
    if (json_is_string(a))
        return json_string_length(a) == json_string_length(b) &&
               !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
    return true; /* true, false, null: the type is the value */
}

/* One call's work: comparisons made (arrays compare each element of one
 * with the elements of the other: quadratic) and the nesting reached, each
 * bounded (util/limits.h) since DuckDB cannot interrupt a call. */
struct walk {
    int64_t steps, max_steps;
    int depth;
    bool over;
};

/* Whether container value a holds b (b a scalar: equal; b a container: one
 * of the same kind that contains it). */
static bool contains(struct walk *k, const json_t *a, const json_t *b);

static bool holds(struct walk *k, const json_t *a, const json_t *b)
{
    if (++k->steps > k->max_steps) {
        k->over = true;
        return false;
    }
    if (scalar(b))
        return scalar(a) && scalar_eq(a, b);
    return json_typeof(a) == json_typeof(b) && contains(k, a, b);
}

static bool contains(struct walk *k, const json_t *a, const json_t *b)
{
    if (++k->depth > VT_SQL_MAX_JSON_DEPTH) {
        k->over = true;
        return false;
    }
    bool yes = true;
    if (json_is_object(b)) {
        if (!json_is_object(a))
            yes = false;
        const char *key;
        size_t kn;
        json_t *v;
        json_object_keylen_foreach((json_t *)b, key, kn, v)
        {
            const json_t *av = yes ? json_object_getn(a, key, kn) : NULL;
            if (!av || !holds(k, av, v)) {
                yes = false;
                break;
            }
        }
    } else if (json_is_array(b)) {
        if (!json_is_array(a))
            yes = false;
        for (size_t i = 0; yes && i < json_array_size(b); i++) {
            const json_t *v = json_array_get(b, i);
            bool found = false;
            for (size_t j = 0; j < json_array_size(a) && !found && !k->over; j++)
                found = holds(k, json_array_get(a, j), v);
            yes = found;
        }
    } else {
        yes = scalar(a) && scalar_eq(a, b);
    }
    k->depth--;
    return yes && !k->over;
}

/* The top level: PostgreSQL keeps a scalar as an array of one, so an array
 * contains a scalar element of its own, and a scalar contains only an equal
 * scalar. */
static bool top_contains(struct walk *k, const json_t *a, const json_t *b)
{
    if (scalar(b) && json_is_array(a)) {
        for (size_t j = 0; j < json_array_size(a); j++)
            if (scalar(json_array_get(a, j)) && scalar_eq(json_array_get(a, j), b))
                return true;
        return false;
    }
    return contains(k, a, b);
}

static json_t *parse(const char *s, size_t n)
{
    return json_loadb(s, n, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, NULL);
}

int eng_jsonb_contains(const char *a, size_t an, const char *b, size_t bn, int64_t max_steps,
                       int64_t *steps)
{
    json_t *ja = parse(a, an), *jb = ja ? parse(b, bn) : NULL;
    if (!ja || !jb) {
        json_decref(ja);
        return -1;
    }
    struct walk k = {0, max_steps, 0, false};
    bool yes = top_contains(&k, ja, jb);
    json_decref(ja);
    json_decref(jb);
    *steps += k.steps;
    return k.over ? -2 : yes;
}

/* "vt:jsonb_contains"(a VARCHAR, b VARCHAR) -> BOOLEAN: a @> b; NULL when
 * either is. */
static void contains_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    idx_t n = duckdb_data_chunk_get_size(in);
    duckdb_vector va = duckdb_data_chunk_get_vector(in, 0);
    duckdb_vector vb = duckdb_data_chunk_get_vector(in, 1);
    uint64_t *valid_a = duckdb_vector_get_validity(va);
    uint64_t *valid_b = duckdb_vector_get_validity(vb);
    duckdb_string_t *sa = duckdb_vector_get_data(va);
    duckdb_string_t *sb = duckdb_vector_get_data(vb);
    bool *o = duckdb_vector_get_data(out);
    duckdb_vector_ensure_validity_writable(out);
    uint64_t *ov = duckdb_vector_get_validity(out);
    int64_t vector_steps = 0;
    for (idx_t i = 0; i < n; i++) {
        if (!duckdb_validity_row_is_valid(valid_a, i) ||
            !duckdb_validity_row_is_valid(valid_b, i)) {
            duckdb_validity_set_row_invalid(ov, i);
            continue;
        }
        int64_t left = VT_SQL_MAX_JSONB_CONTAINS_STEPS_VECTOR - vector_steps;
        int rc = eng_jsonb_contains(
            duckdb_string_t_data(&sa[i]), duckdb_string_t_length(sa[i]),
            duckdb_string_t_data(&sb[i]), duckdb_string_t_length(sb[i]),
            left < VT_SQL_MAX_JSONB_CONTAINS_STEPS ? left : VT_SQL_MAX_JSONB_CONTAINS_STEPS,
            &vector_steps);
        if (rc == -1) {
            duckdb_scalar_function_set_error(info, "invalid input syntax for type json");
            return;
        }
        if (rc == -2) {
            char msg[200];
            snprintf(msg, sizeof msg,
                     "jsonb containment: past %d levels of nesting or %d element comparisons "
                     "(%d for 2,048 rows)",
                     VT_SQL_MAX_JSON_DEPTH, VT_SQL_MAX_JSONB_CONTAINS_STEPS,
                     VT_SQL_MAX_JSONB_CONTAINS_STEPS_VECTOR);
            duckdb_scalar_function_set_error(info, msg);
            return;
        }
        o[i] = rc == 1;
    }
}

enum vt_err eng_jsonb_install(duckdb_connection con, struct vt_error *err)
{
    duckdb_scalar_function f = duckdb_create_scalar_function();
    duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
    duckdb_logical_type boolean = duckdb_create_logical_type(DUCKDB_TYPE_BOOLEAN);
    duckdb_scalar_function_set_name(f, "vt:jsonb_contains");
    duckdb_scalar_function_add_parameter(f, varchar);
    duckdb_scalar_function_add_parameter(f, varchar);
    duckdb_scalar_function_set_return_type(f, boolean);
    duckdb_scalar_function_set_special_handling(f);
    duckdb_scalar_function_set_function(f, contains_fn);
    duckdb_state st = duckdb_register_scalar_function(con, f);
    duckdb_destroy_logical_type(&varchar);
    duckdb_destroy_logical_type(&boolean);
    duckdb_destroy_scalar_function(&f);
    if (st != DuckDBSuccess)
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot register vt:jsonb_contains");
    return VT_ERR_OK;
}
