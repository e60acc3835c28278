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
 *
 * And jsonb_set and jsonb_insert (engine.h, eng_jsonb_set), which DuckDB
 * lacks too: PostgreSQL's setPath walked over the JSON text itself, so the
 * values the path does not reach keep their text (jansson would turn 1.10
 * into a double).
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "util/limits.h"
#include "util/strbuf.h"
#include "util/text.h"

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

/* Fails the call past one of this file's limits: the message carries the
 * engine's limit marker, so the statement fails as limit_exceeded (54000;
 * util/errors.h). Not functions.c's eng_fn_limit: fuzz_jsonb links this
 * file without it. */
static void limit_fail(duckdb_function_info info, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void limit_fail(duckdb_function_info info, const char *fmt, ...)
{
    char msg[360];
    int n = snprintf(msg, sizeof msg, "%s", vt_limit_marker());
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    duckdb_scalar_function_set_error(info, msg);
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
            limit_fail(info,
                       "jsonb containment: past the limit of %d levels of nesting or %d element "
                       "comparisons (%d for 2,048 rows)",
                       VT_SQL_MAX_JSON_DEPTH, VT_SQL_MAX_JSONB_CONTAINS_STEPS,
                       VT_SQL_MAX_JSONB_CONTAINS_STEPS_VECTOR);
            return;
        }
        o[i] = rc == 1;
    }
}

/* ------------------------------------------------- jsonb_set, jsonb_insert */

/* PostgreSQL's setPath (jsonfuncs.c) over JSON text: the walk follows the
 * path, each container on it is written again (minified separators), the
 * rest is copied as written (numbers keep their digits, keys their order).
 * Where PostgreSQL's jsonb would differ from the text (duplicate keys: jsonb
 * keeps the last), the last pair with the key is the one the path takes. */

static const char *jws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* The string at p (its opening quote): past its closing quote, or NULL. */
static const char *jstring(const char *p, const char *end)
{
    for (p++; p < end;) {
        unsigned char c = (unsigned char)*p++;
        if (c == '"')
            return p;
        if (c < 0x20)
            return NULL;
        if (c != '\\')
            continue;
        if (p >= end)
            return NULL;
        char e = *p++;
        if (e == 'u') {
            if (end - p < 4)
                return NULL;
            for (int i = 0; i < 4; i++)
                if (text_hexval(p[i]) < 0)
                    return NULL;
            p += 4;
        } else if (!e || !strchr("\"\\/bfnrt", e)) {
            return NULL;
        }
    }
    return NULL;
}

static const char *jdigits(const char *p, const char *end)
{
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    return p;
}

static const char *jnumber(const char *p, const char *end)
{
    if (p < end && *p == '-')
        p++;
    if (p >= end || *p < '0' || *p > '9')
        return NULL;
    p = *p == '0' ? p + 1 : jdigits(p, end);
    if (p < end && *p == '.') {
        const char *d = p + 1;
        p = jdigits(d, end);
        if (p == d)
            return NULL;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        const char *d = p;
        p = jdigits(d, end);
        if (p == d)
            return NULL;
    }
    return p;
}

static const char *jword(const char *p, const char *end, const char *w, size_t n)
{
    return (size_t)(end - p) >= n && !memcmp(p, w, n) ? p + n : NULL;
}

/* The value at p (after whitespace): past it, or NULL when it is not JSON
 * (*deep: containers nested past VT_SQL_MAX_JSON_DEPTH). */
static const char *jvalue(const char *p, const char *end, int depth, bool *deep)
{
    p = jws(p, end);
    if (p >= end)
        return NULL;
    switch (*p) {
    case '"':
        return jstring(p, end);
    case 't':
        return jword(p, end, "true", 4);
    case 'f':
        return jword(p, end, "false", 5);
    case 'n':
        return jword(p, end, "null", 4);
    case '{':
    case '[':
        break;
    default:
        return jnumber(p, end);
    }
    if (depth >= VT_SQL_MAX_JSON_DEPTH) {
        *deep = true;
        return NULL;
    }
    char close = *p == '{' ? '}' : ']';
    p = jws(p + 1, end);
    if (p < end && *p == close)
        return p + 1;
    for (;;) {
        if (close == '}') {
            if (p >= end || *p != '"' || !(p = jstring(p, end)))
                return NULL;
            p = jws(p, end);
            if (p >= end || *p != ':')
                return NULL;
            p++;
        }
        if (!(p = jvalue(p, end, depth + 1, deep)))
            return NULL;
        p = jws(p, end);
        if (p >= end)
            return NULL;
        if (*p == close)
            return p + 1;
        if (*p != ',')
            return NULL;
        p = jws(p + 1, end);
    }
}

static size_t utf8_put(char *b, uint32_t cp)
{
    if (cp < 0x80) {
        b[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        b[0] = (char)(0xC0 | cp >> 6);
        b[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        b[0] = (char)(0xE0 | cp >> 12);
        b[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    b[0] = (char)(0xF0 | cp >> 18);
    b[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    b[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    b[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static uint32_t hex4(const char *p)
{
    return (uint32_t)(text_hexval(p[0]) << 12 | text_hexval(p[1]) << 8 |
                      text_hexval(p[2]) << 4 | text_hexval(p[3]));
}

/* Whether the (valid) key k[0..kn), quotes and all, reads as s[0..n). */
static bool key_is(const char *k, size_t kn, const char *s, size_t n)
{
    k++;
    kn -= 2;
    if (!memchr(k, '\\', kn))
        return kn == n && !memcmp(k, s, n);
    size_t j = 0;
    for (size_t i = 0; i < kn;) {
        char b[4];
        size_t bl = 1;
        if (k[i] != '\\') {
            b[0] = k[i++];
        } else {
            char e = k[i + 1];
            i += 2;
            static const char from[] = "bfnrt", to[] = "\b\f\n\r\t";
            const char *at = strchr(from, e);
            if (e == 'u') {
                uint32_t cp = hex4(k + i);
                i += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= kn && k[i] == '\\' &&
                    k[i + 1] == 'u') {
                    uint32_t lo = hex4(k + i + 2);
                    if (lo >= 0xDC00 && lo <= 0xDFFF) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        i += 6;
                    }
                }
                bl = utf8_put(b, cp);
            } else {
                b[0] = at ? to[at - from] : e;
            }
        }
        if (j + bl > n || memcmp(s + j, b, bl) != 0)
            return false;
        j += bl;
    }
    return j == n;
}

/* s[0..n) as a JSON string. */
static void add_key(struct strbuf *out, const char *s, size_t n)
{
    sb_addc(out, '"');
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        sb_add(out, s + from, i - from);
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            sb_add(out, esc, 2);
        } else {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", c);
            sb_adds(out, esc);
        }
        from = i + 1;
    }
    sb_add(out, s + from, n - from);
    sb_addc(out, '"');
}

struct jset {
    const struct eng_jsonb_step *path;
    size_t npath;
    const char *val; /* the new value, without the whitespace around it */
    size_t vn;
    enum eng_jsonb_op op;
    int64_t walked, max;
    struct strbuf *out;
    char *err;
    size_t errcap;
};

static const char *fail(struct jset *k, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static const char *fail(struct jset *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->err, k->errcap, fmt, ap);
    va_end(ap);
    return NULL;
}

/* Past the (valid) value at p, its bytes counted against the walk's bound. */
static const char *walk(struct jset *k, const char *p, const char *end)
{
    bool deep = false;
    const char *q = jvalue(p, end, 0, &deep);
    if (!q)
        return fail(k, "invalid input syntax for type json");
    k->walked += q - p;
    if (k->walked > k->max)
        return fail(k, "jsonb_set: past the limit of %lld bytes walked (the path walks each "
                       "container on it again)",
                    (long long)k->max);
    return q;
}

static const char *set_path(struct jset *k, const char *p, const char *end, size_t level);

static void add_val(struct jset *k)
{
    sb_add(k->out, k->val, k->vn);
}

/* setPathObject: the pair with the path's key at this level (the last one
 * if the text has it twice) changes; a missing key is added at the end
 * when this is the path's last step and the call creates. */
static const char *set_object(struct jset *k, const char *p, const char *end, size_t level)
{
    const struct eng_jsonb_step *st = &k->path[level];
    bool last = level + 1 == k->npath;
    const char *match = NULL, *q = jws(p + 1, end);
    while (*q != '}') {
        const char *ke = jstring(q, end);
        if (key_is(q, (size_t)(ke - q), st->s, st->n))
            match = q;
        if (!(q = walk(k, jws(ke, end) + 1, end)))
            return NULL;
        q = jws(q, end);
        if (*q == ',')
            q = jws(q + 1, end);
    }
    const char *close = q;
    if (match && last && (k->op == ENG_JSONB_INSERT_BEFORE || k->op == ENG_JSONB_INSERT_AFTER))
        return fail(k, "cannot replace existing key");
    sb_addc(k->out, '{');
    bool first = true;
    for (q = jws(p + 1, end); q < close;) {
        const char *ke = jstring(q, end);
        const char *v = jws(jws(ke, end) + 1, end), *ve;
        if (!first)
            sb_addc(k->out, ',');
        first = false;
        sb_add(k->out, q, (size_t)(ke - q));
        sb_addc(k->out, ':');
        if (q == match && last) {
            ve = walk(k, v, end);
            add_val(k);
        } else if (q == match) {
            ve = set_path(k, v, end, level + 1);
        } else if ((ve = walk(k, v, end))) {
            sb_add(k->out, v, (size_t)(ve - v));
        }
        if (!ve)
            return NULL;
        q = jws(ve, end);
        if (*q == ',')
            q = jws(q + 1, end);
    }
    if (!match && last && k->op != ENG_JSONB_REPLACE) {
        if (!first)
            sb_addc(k->out, ',');
        add_key(k->out, st->s, st->n);
        sb_addc(k->out, ':');
        add_val(k);
    }
    sb_addc(k->out, '}');
    return close + 1;
}

/* PostgreSQL's strtoint on a path element: optional whitespace, a sign,
 * digits, nothing after, in int's range. */
static bool path_index(const struct eng_jsonb_step *st, long long *out)
{
    size_t i = 0;
    while (i < st->n && strchr(" \t\n\r\f\v", st->s[i]) && st->s[i])
        i++;
    bool neg = i < st->n && st->s[i] == '-';
    if (i < st->n && (st->s[i] == '-' || st->s[i] == '+'))
        i++;
    if (i == st->n)
        return false;
    long long v = 0;
    for (; i < st->n; i++) {
        if (st->s[i] < '0' || st->s[i] > '9')
            return false;
        v = v * 10 + (st->s[i] - '0');
        if (v > (long long)INT32_MAX + 1)
            return false;
    }
    v = neg ? -v : v;
    if (v > INT32_MAX)
        return false;
    *out = v;
    return true;
}

/* setPathArray: the element at the path's index (negative: from the end)
 * changes; at the path's last step a call that creates or inserts adds the
 * value at the start (an index before the first, or an empty array) or the
 * end (past the last). */
static const char *set_array(struct jset *k, const char *p, const char *end, size_t level)
{
    const struct eng_jsonb_step *st = &k->path[level];
    bool last = level + 1 == k->npath;
    bool create = k->op != ENG_JSONB_REPLACE;
    long long idx;
    if (!path_index(st, &idx))
        return fail(k, "path element at position %zu is not an integer: \"%.*s\"", level + 1,
                    (int)(st->n > 200 ? 200 : st->n), st->s);
    long long nelems = 0;
    const char *q = jws(p + 1, end);
    while (*q != ']') {
        if (!(q = walk(k, q, end)))
            return NULL;
        nelems++;
        q = jws(q, end);
        if (*q == ',')
            q = jws(q + 1, end);
    }
    const char *close = q;
    const long long before = -1 - (long long)INT32_MAX - 1; /* PostgreSQL's INT_MIN mark */
    if (idx < 0)
        idx = -idx > nelems ? before : nelems + idx;
    if (idx > nelems)
        idx = nelems;
    bool done = false, first = true;
    sb_addc(k->out, '[');
    if ((idx == before || nelems == 0) && last && create) {
        add_val(k);
        first = false;
        done = true;
    }
    q = jws(p + 1, end);
    for (long long i = 0; q < close; i++) {
        const char *ve;
        if (!first)
            sb_addc(k->out, ',');
        first = false;
        if (i == idx && last) {
            done = true;
            if (!(ve = walk(k, q, end)))
                return NULL;
            if (k->op == ENG_JSONB_INSERT_AFTER)
                sb_add(k->out, q, (size_t)(ve - q));
            if (k->op == ENG_JSONB_INSERT_AFTER)
                sb_addc(k->out, ',');
            add_val(k);
            if (k->op == ENG_JSONB_INSERT_BEFORE)
                sb_addc(k->out, ',');
            if (k->op == ENG_JSONB_INSERT_BEFORE)
                sb_add(k->out, q, (size_t)(ve - q));
        } else if (i == idx) {
            done = true;
            ve = set_path(k, q, end, level + 1);
        } else if ((ve = walk(k, q, end))) {
            sb_add(k->out, q, (size_t)(ve - q));
        }
        if (!ve)
            return NULL;
        q = jws(ve, end);
        if (*q == ',')
            q = jws(q + 1, end);
    }
    if (create && !done && last) {
        if (!first)
            sb_addc(k->out, ',');
        add_val(k);
    }
    sb_addc(k->out, ']');
    return close + 1;
}

/* setPath: the value at this level of the path (one the walk reached). */
static const char *set_path(struct jset *k, const char *p, const char *end, size_t level)
{
    if (!k->path[level].s)
        return fail(k, "path element at position %zu is null", level + 1);
    p = jws(p, end);
    if (*p == '{')
        return set_object(k, p, end, level);
    if (*p == '[')
        return set_array(k, p, end, level);
    const char *q = walk(k, p, end); /* a scalar: the path is not there */
    if (q)
        sb_add(k->out, p, (size_t)(q - p));
    return q;
}

int eng_jsonb_set(const char *doc, size_t dn, const struct eng_jsonb_step *path, size_t npath,
                  const char *val, size_t vn, enum eng_jsonb_op op, int64_t max_bytes,
                  int64_t *walked, struct strbuf *out, char *err, size_t errcap)
{
    struct jset k = {.path = path, .npath = npath, .op = op, .max = max_bytes, .out = out,
                     .err = err, .errcap = errcap};
    const char *end = doc + dn, *vend = val + vn;
    bool deep = false;
    const char *de = jvalue(doc, end, 0, &deep);
    const char *ve = de && jws(de, end) == end ? jvalue(val, vend, 0, &deep) : NULL;
    if (!ve || jws(ve, vend) != vend) {
        if (deep)
            fail(&k, "jsonb_set: past the limit of %d levels of nesting", VT_SQL_MAX_JSON_DEPTH);
        else
            fail(&k, "invalid input syntax for type json");
        return -1;
    }
    k.val = jws(val, vend);
    k.vn = (size_t)(ve - k.val);
    const char *p = jws(doc, end);
    if (*p != '{' && *p != '[') {
        fail(&k, "cannot set path in scalar");
        return -1;
    }
    bool empty = *jws(p + 1, end) == (*p == '{' ? '}' : ']');
    const char *q;
    if (npath == 0 || (empty && op == ENG_JSONB_REPLACE)) {
        sb_add(out, p, (size_t)(de - p));
        q = de;
    } else {
        q = set_path(&k, p, end, 0);
    }
    *walked += k.walked;
    if (q && out->overflow)
        fail(&k, "jsonb_set: out of memory");
    return q && !out->overflow ? 0 : -1;
}

/* "vt:jsonb_set"(target, path, new_value[, create_missing]) and
 * "vt:jsonb_insert"(target, path, new_value[, insert_after]): NULL when any
 * argument is (both are strict in PostgreSQL). */
static void set_rows(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out,
                     bool insert)
{
    idx_t n = duckdb_data_chunk_get_size(in);
    idx_t ncol = duckdb_data_chunk_get_column_count(in);
    duckdb_vector vd = duckdb_data_chunk_get_vector(in, 0);
    duckdb_vector vp = duckdb_data_chunk_get_vector(in, 1);
    duckdb_vector vv = duckdb_data_chunk_get_vector(in, 2);
    duckdb_vector vf = ncol > 3 ? duckdb_data_chunk_get_vector(in, 3) : NULL;
    duckdb_vector vc = duckdb_list_vector_get_child(vp);
    duckdb_string_t *sd = duckdb_vector_get_data(vd), *sv = duckdb_vector_get_data(vv);
    duckdb_string_t *sc = duckdb_vector_get_data(vc);
    duckdb_list_entry *le = duckdb_vector_get_data(vp);
    bool *fl = vf ? duckdb_vector_get_data(vf) : NULL;
    uint64_t *valid[4] = {duckdb_vector_get_validity(vd), duckdb_vector_get_validity(vp),
                          duckdb_vector_get_validity(vv), vf ? duckdb_vector_get_validity(vf)
                                                             : NULL};
    uint64_t *cvalid = duckdb_vector_get_validity(vc);
    duckdb_vector_ensure_validity_writable(out);
    uint64_t *ov = duckdb_vector_get_validity(out);
    struct eng_jsonb_step *steps = NULL;
    size_t cap = 0;
    struct strbuf res;
    sb_init(&res, 0);
    char msg[300];
    for (idx_t i = 0; i < n; i++) {
        bool null = false;
        for (int c = 0; c < 4; c++)
            null = null || !duckdb_validity_row_is_valid(valid[c], i);
        if (null) {
            duckdb_validity_set_row_invalid(ov, i);
            continue;
        }
        size_t np = (size_t)le[i].length;
        if (np > cap) {
            struct eng_jsonb_step *m = realloc(steps, np * sizeof *steps);
            if (!m) {
                duckdb_scalar_function_set_error(info, "jsonb_set: out of memory");
                goto out;
            }
            steps = m;
            cap = np;
        }
        for (size_t j = 0; j < np; j++) {
            idx_t at = le[i].offset + j;
            steps[j].s = duckdb_validity_row_is_valid(cvalid, at)
                             ? duckdb_string_t_data(&sc[at])
                             : NULL;
            steps[j].n = steps[j].s ? duckdb_string_t_length(sc[at]) : 0;
        }
        enum eng_jsonb_op op;
        if (insert)
            op = fl && fl[i] ? ENG_JSONB_INSERT_AFTER : ENG_JSONB_INSERT_BEFORE;
        else
            op = fl && !fl[i] ? ENG_JSONB_REPLACE : ENG_JSONB_CREATE;
        uint32_t dn = duckdb_string_t_length(sd[i]);
        int64_t walked = 0;
        sb_reset(&res);
        if (eng_jsonb_set(duckdb_string_t_data(&sd[i]), dn, steps, np,
                          duckdb_string_t_data(&sv[i]), duckdb_string_t_length(sv[i]), op,
                          VT_SQL_MAX_JSONB_SET_BYTES + 8 * (int64_t)dn, &walked, &res, msg,
                          sizeof msg) != 0) {
            /* its limits (our own text) fail as limits, the rest as input */
            if (!strncmp(msg, "jsonb_set: past ", 16))
                limit_fail(info, "%s", msg);
            else
                duckdb_scalar_function_set_error(info, msg);
            goto out;
        }
        duckdb_vector_assign_string_element_len(out, i, res.buf ? res.buf : "", res.len);
    }
out:
    free(steps);
    sb_release(&res);
}

static void set_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    set_rows(info, in, out, false);
}

static void insert_fn(duckdb_function_info info, duckdb_data_chunk in, duckdb_vector out)
{
    set_rows(info, in, out, true);
}

/* name(VARCHAR, VARCHAR[], VARCHAR[, BOOLEAN]) -> JSON */
static bool register_set_fn(duckdb_connection con, const char *name, duckdb_scalar_function_t fn)
{
    duckdb_scalar_function_set set = duckdb_create_scalar_function_set(name);
    duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
    duckdb_logical_type list = duckdb_create_list_type(varchar);
    duckdb_logical_type boolean = duckdb_create_logical_type(DUCKDB_TYPE_BOOLEAN);
    duckdb_logical_type json = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
    duckdb_logical_type_set_alias(json, "JSON");
    bool ok = true;
    for (int flag = 0; flag < 2; flag++) {
        duckdb_scalar_function f = duckdb_create_scalar_function();
        duckdb_scalar_function_set_name(f, name);
        duckdb_scalar_function_add_parameter(f, varchar);
        duckdb_scalar_function_add_parameter(f, list);
        duckdb_scalar_function_add_parameter(f, varchar);
        if (flag)
            duckdb_scalar_function_add_parameter(f, boolean);
        duckdb_scalar_function_set_return_type(f, json);
        duckdb_scalar_function_set_special_handling(f);
        duckdb_scalar_function_set_function(f, fn);
        ok = ok && duckdb_add_scalar_function_to_set(set, f) == DuckDBSuccess;
        duckdb_destroy_scalar_function(&f);
    }
    ok = ok && duckdb_register_scalar_function_set(con, set) == DuckDBSuccess;
    duckdb_destroy_scalar_function_set(&set);
    duckdb_destroy_logical_type(&varchar);
    duckdb_destroy_logical_type(&list);
    duckdb_destroy_logical_type(&boolean);
    duckdb_destroy_logical_type(&json);
    return ok;
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
    if (!register_set_fn(con, "vt:jsonb_set", set_fn) ||
        !register_set_fn(con, "vt:jsonb_insert", insert_fn))
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot register vt:jsonb_set");
    return VT_ERR_OK;
}
