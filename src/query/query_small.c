/*
 * query_small_scan / query_small_parse (query.h, "the lookup shape without
 * a JSON tree"): a point lookup's body validated straight from its text.
 * Loading the body into a jansson tree, looking its keys up while
 * validating and freeing it again was about a quarter of the instructions
 * of a whole indexed lookup over HTTP (bench/callgrind.py point_index).
 *
 * Both halves only ever decline: the scan when the text is not exactly the
 * shape (in json_small's subset), the parse when the schema or a value is
 * anything but the plain case. What they accept, query_parse would accept
 * with the same result; the rules below mirror query_parse's and
 * query_value_from_json's for that case and nothing more.
 */
#include <string.h>

#include "query/query_int.h"
#include "util/json_small.h"
#include "util/limits.h"

/* ---- the scan (no schema) ---- */

static bool str(struct json_small_cur *c, const char **s, size_t *n)
{
    json_small_ws(c);
    return json_small_string(c, s, n);
}

static bool is(const char *s, size_t n, const char *word)
{
    return n == strlen(word) && memcmp(s, word, n) == 0;
}

/* The comparison operators (query_parse's names). */
static bool comparison(const char *s, size_t n, enum query_op *op)
{
    static const struct {
        const char *name;
        enum query_op op;
    } ops[] = {
        {"eq", QUERY_OP_EQ}, {"neq", QUERY_OP_NEQ}, {"gt", QUERY_OP_GT},
        {"gte", QUERY_OP_GTE}, {"lt", QUERY_OP_LT}, {"lte", QUERY_OP_LTE},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (is(s, n, ops[i].name)) {
            *op = ops[i].op;
            return true;
        }
    return false;
}

/* {"col":"x","op":"eq","val":1}, the keys in any order, each once. */
static bool scan_pred(struct json_small_cur *c, struct query_small_pred *p)
{
    if (!json_small_punct(c, '{'))
        return false;
    unsigned seen = 0;
    for (int k = 0; k < 3; k++) {
        const char *key;
        size_t kn;
        if ((k > 0 && !json_small_punct(c, ',')) || !str(c, &key, &kn) ||
            !json_small_punct(c, ':'))
            return false;
        unsigned bit;
        if (is(key, kn, "col")) {
            bit = 1;
            if (!str(c, &p->col, &p->col_len))
                return false;
        } else if (is(key, kn, "op")) {
            bit = 2;
            const char *o;
            size_t on;
            if (!str(c, &o, &on) || !comparison(o, on, &p->op))
                return false;
        } else if (is(key, kn, "val")) {
            bit = 4;
            json_small_ws(c);
            if (c->p < c->end && *c->p == '"') {
                p->is_int = false;
                if (!json_small_string(c, &p->s, &p->s_len))
                    return false;
            } else {
                p->is_int = true;
                if (!json_small_int(c, &p->i))
                    return false;
            }
        } else {
            return false;
        }
        if (seen & bit)
            return false; /* a key twice */
        seen |= bit;
    }
    return json_small_punct(c, '}');
}

static bool pred_item(struct json_small_cur *c, struct query_small *out)
{
    if (out->npreds == QUERY_SMALL_MAX_PREDS || !scan_pred(c, &out->preds[out->npreds]))
        return false;
    out->npreds++;
    return true;
}

static bool column_item(struct json_small_cur *c, struct query_small *out)
{
    if (out->ncolumns == QUERY_SMALL_MAX_COLUMNS ||
        !str(c, &out->columns[out->ncolumns].name, &out->columns[out->ncolumns].len))
        return false;
    out->ncolumns++;
    return true;
}

/* [item, ...], at least one. */
static bool scan_list(struct json_small_cur *c, struct query_small *out,
                      bool (*item)(struct json_small_cur *, struct query_small *))
{
    if (!json_small_punct(c, '['))
        return false;
    for (;;) {
        if (!item(c, out))
            return false;
        if (json_small_punct(c, ']'))
            return true;
        if (c->p >= c->end || *c->p != ',')
            return false;
        c->p++;
    }
}

bool query_small_scan(const char *text, size_t len, struct query_small *out)
{
    struct json_small_cur c = {text, text + len};
    out->text = text;
    out->len = len;
    out->npreds = 0;
    out->ncolumns = 0;
    out->limit = -1;
    bool has_limit = false;
    if (!json_small_punct(&c, '{'))
        return false;
    for (;;) {
        const char *key;
        size_t kn;
        if (!str(&c, &key, &kn) || !json_small_punct(&c, ':'))
            return false;
        if (is(key, kn, "predicates")) {
            if (out->npreds || !scan_list(&c, out, pred_item))
                return false;
        } else if (is(key, kn, "columns")) {
            if (out->ncolumns || !scan_list(&c, out, column_item))
                return false;
        } else if (is(key, kn, "limit")) {
            json_small_ws(&c);
            if (has_limit || !json_small_int(&c, &out->limit) || out->limit < 0)
                return false;
            has_limit = true;
        } else {
            return false;
        }
        if (json_small_punct(&c, '}'))
            break;
        if (c.p >= c.end || *c.p != ',')
            return false;
        c.p++;
    }
    json_small_ws(&c);
    /* something after the object, or no predicates: query_parse's */
    return c.p == c.end && out->npreds > 0;
}

/* ---- the parse (against a schema) ---- */

/* query_parse's lookup_column for a name inside the text. */
static bool column(const struct query_schema *s, const char *name, size_t n, size_t *out)
{
    if (n == 0 || n > VT_MAX_COLUMN_NAME_BYTES)
        return false;
    for (size_t i = 0; i < s->n; i++)
        if (strncmp(s->cols[i].name, name, n) == 0 && s->cols[i].name[n] == '\0') {
            *out = i;
            return true;
        }
    return false;
}

/* query_value_from_json for the plain cases: an integer for a numeric
 * column (query_value_int, the same code), a string for a string or enum
 * column. */
static bool value(struct arena *a, enum query_class cl, const struct query_small_pred *p,
                  struct query_value *out)
{
    memset(out, 0, sizeof *out);
    if (p->is_int)
        return query_value_int(cl, p->i, out);
    if ((cl != QC_STRING && cl != QC_ENUM) || p->s_len > VT_MAX_STRING_VALUE_BYTES)
        return false;
    char *copy = arena_strndup(a, p->s, p->s_len);
    if (!copy)
        return false;
    out->kind = QUERY_VALUE_VARCHAR;
    out->u.s.ptr = copy;
    out->u.s.len = p->s_len;
    out->cast = "VARCHAR";
    return true;
}

bool query_small_parse(const struct query_small *in, const struct query_schema *schema,
                       const struct query_options *opts, struct arena *arena,
                       struct query_request *out)
{
    memset(out, 0, sizeof *out);
    out->mode = opts ? opts->mode : QUERY_PAGED;
    out->schema = schema;

    /* columns: the named ones, or all in schema order */
    size_t n = in->ncolumns ? in->ncolumns : schema->n;
    size_t *cols = arena_calloc(arena, (n ? n : 1) * sizeof *cols);
    if (!cols)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!in->ncolumns) {
            cols[i] = i;
            continue;
        }
        if (!column(schema, in->columns[i].name, in->columns[i].len, &cols[i]))
            return false;
        for (size_t j = 0; j < i; j++)
            if (cols[j] == cols[i])
                return false; /* listed twice: query_parse's error */
    }
    out->columns = cols;
    out->ncolumns = n;

    struct query_pred *preds = arena_calloc(arena, in->npreds * sizeof *preds);
    struct query_value *vals = arena_calloc(arena, in->npreds * sizeof *vals);
    if (!preds || !vals)
        return false;
    for (size_t i = 0; i < in->npreds; i++) {
        const struct query_small_pred *p = &in->preds[i];
        size_t idx;
        if (!column(schema, p->col, p->col_len, &idx))
            return false;
        enum query_class cl = query_class_of(schema->cols[idx].type);
        if (!query_class_comparable(cl) || !value(arena, cl, p, &vals[i]))
            return false;
        preds[i].ref.idx = idx;
        preds[i].op = p->op;
        preds[i].vals = &vals[i];
        preds[i].nvals = 1;
    }
    out->preds = preds;
    out->npreds = in->npreds;
    query_paging_apply(out, opts, in->limit, 1, QUERY_DEFAULT_PAGE_SIZE);
    return true;
}
