/*
 * The index fast path. An equality lookup (sql_lookup: SELECT * | columns
 * FROM a dataset WHERE col = value AND ...) is what /query answers from the
 * dataset's equality index in microseconds, where DuckDB's point query costs ~0.7 ms on a 1M-row
 * table. Text results only; the index path gives rows as JSON objects (the
 * row store), turned into DataRows here. Whatever the index cannot answer
 * exactly (a column it does not cover, too many rows, a value of another
 * type, a column type whose JSON form loses what PostgreSQL shows, such as
 * NaN in a float) runs as SQL instead: nothing has been sent then.
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "pgwire/pgwire_internal.h"
#include "query/query.h"
#include "util/log.h"


enum fast_kind { FK_RAW, FK_BOOL, FK_STR, FK_DATE, FK_TS, FK_TSTZ, FK_DOUBLE, FK_FLOAT };

struct fast_col {
    enum fast_kind kind;
    struct pgw_typeinfo ti;
    const char *name;
};

/* The PostgreSQL type of a dataset column, for the types whose JSON text
 * converts exactly. */
static bool fast_column(const struct cat_column *c, struct fast_col *out)
{
    out->name = c->name;
    out->kind = FK_RAW;
    duckdb_type t = c->type;
    switch (t) {
    case DUCKDB_TYPE_BOOLEAN:
        out->kind = FK_BOOL;
        break;
    case DUCKDB_TYPE_TINYINT: case DUCKDB_TYPE_SMALLINT: case DUCKDB_TYPE_INTEGER:
    case DUCKDB_TYPE_BIGINT: case DUCKDB_TYPE_UTINYINT: case DUCKDB_TYPE_USMALLINT:
    case DUCKDB_TYPE_UINTEGER: case DUCKDB_TYPE_UBIGINT: case DUCKDB_TYPE_HUGEINT:
    case DUCKDB_TYPE_UUID:
        break;
    case DUCKDB_TYPE_DOUBLE:
        out->kind = FK_DOUBLE;
        break;
    case DUCKDB_TYPE_FLOAT:
        out->kind = FK_FLOAT;
        break;
    case DUCKDB_TYPE_VARCHAR:
        if (strcmp(c->type_sql, "VARCHAR") != 0)
            return false; /* JSON and other aliases */
        out->kind = FK_STR;
        break;
    case DUCKDB_TYPE_DATE:
        out->kind = FK_DATE;
        break;
    case DUCKDB_TYPE_TIMESTAMP:
        out->kind = FK_TS;
        break;
    case DUCKDB_TYPE_TIMESTAMP_TZ:
        out->kind = FK_TSTZ;
        break;
    case DUCKDB_TYPE_DECIMAL: {
        unsigned w, sc;
        char tail;
        /* DECIMAL(p,s): the typmod RowDescription carries */
        if (strncmp(c->type_sql, "DECIMAL(", 8) != 0)
            return false;
        char *end;
        w = (unsigned)strtoul(c->type_sql + 8, &end, 10);
        if (*end != ',')
            return false;
        sc = (unsigned)strtoul(end + 1, &end, 10);
        tail = *end;
        if (tail != ')' || w > 38 || sc > w)
            return false;
        out->ti = (struct pgw_typeinfo){PGW_OID_NUMERIC, -1, (int32_t)((w << 16) | sc) + 4};
        return true;
    }
    default:
        return false;
    }
    duckdb_logical_type lt = duckdb_create_logical_type(t);
    out->ti = pgw_type_of(lt);
    duckdb_destroy_logical_type(&lt);
    return true;
}

/* One value of a row-store JSON object as PostgreSQL text. */
static int fast_value(const struct fast_col *c, const char *v, size_t n, int efd,
                      struct strbuf *o)
{
    if (c->kind == FK_DOUBLE || c->kind == FK_FLOAT) {
        /* shortest round-trip digits in JSON: the same double (or float) */
        char num[64], *p = sb_grow(o, 40) == 0 ? o->buf + o->len : NULL;
        if (!p || n >= sizeof num)
            return -1;
        memcpy(num, v, n);
        num[n] = '\0';
        o->len += c->kind == FK_DOUBLE ? pgw_fmt_double(p, strtod(num, NULL), efd)
                                       : pgw_fmt_float(p, strtof(num, NULL), efd);
        return 0;
    }
    if (c->kind == FK_BOOL)
        return sb_addc(o, v[0] == 't' ? 't' : 'f');
    if (c->kind == FK_RAW)
        return v[0] == '"' ? sb_add(o, v + 1, n - 2) : sb_add(o, v, n);
    if (c->kind == FK_STR) {
        for (size_t i = 1; i + 1 < n; i++) {
            char ch = v[i];
            if (ch != '\\') {
                sb_addc(o, ch);
                continue;
            }
            ch = v[++i];
            if (ch == 'u' && i + 4 < n) {
                char hex[5] = {v[i + 1], v[i + 2], v[i + 3], v[i + 4], 0};
                unsigned cp = (unsigned)strtoul(hex, NULL, 16);
                i += 4;
                if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < n && v[i + 1] == '\\' &&
                    v[i + 2] == 'u') {
                    char lo[5] = {v[i + 3], v[i + 4], v[i + 5], v[i + 6], 0};
                    unsigned l2 = (unsigned)strtoul(lo, NULL, 16);
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (l2 - 0xDC00);
                    i += 6;
                }
                char u[4];
                size_t k = 0;
                if (cp < 0x80) {
                    u[k++] = (char)cp;
                } else if (cp < 0x800) {
                    u[k++] = (char)(0xC0 | cp >> 6);
                    u[k++] = (char)(0x80 | (cp & 0x3F));
                } else if (cp < 0x10000) {
                    u[k++] = (char)(0xE0 | cp >> 12);
                    u[k++] = (char)(0x80 | (cp >> 6 & 0x3F));
                    u[k++] = (char)(0x80 | (cp & 0x3F));
                } else {
                    u[k++] = (char)(0xF0 | cp >> 18);
                    u[k++] = (char)(0x80 | (cp >> 12 & 0x3F));
                    u[k++] = (char)(0x80 | (cp >> 6 & 0x3F));
                    u[k++] = (char)(0x80 | (cp & 0x3F));
                }
                sb_add(o, u, k);
                continue;
            }
            sb_addc(o, ch == 'n' ? '\n' : ch == 't' ? '\t' : ch == 'r' ? '\r'
                       : ch == 'b' ? '\b' : ch == 'f' ? '\f' : ch);
        }
        return o->overflow ? -1 : 0;
    }
    /* dates and timestamps: "YYYY-MM-DD[THH:MM:SS[.f]][Z]", astronomical
     * years ("-0043", "0000" is 1 BC), or "infinity" */
    const char *p = v + 1;
    size_t len = n - 2;
    if (len && (p[0] == 'i' || (p[0] == '-' && len > 1 && p[1] == 'i')))
        return sb_add(o, p, len);
    bool neg = p[0] == '-';
    size_t ystart = neg, yend = ystart;
    while (yend < len && p[yend] >= '0' && p[yend] <= '9')
        yend++;
    long long year = strtoll(p + ystart, NULL, 10) * (neg ? -1 : 1);
    bool bc = year <= 0;
    if (bc)
        sb_addf(o, "%04lld", 1 - year);
    else
        sb_add(o, p + ystart, yend - ystart);
    size_t rest = yend, stop = len;
    bool z = c->kind == FK_TSTZ && len && p[len - 1] == 'Z';
    if (z)
        stop--;
    for (size_t i = rest; i < stop; i++)
        sb_addc(o, p[i] == 'T' ? ' ' : p[i]);
    if (c->kind == FK_TSTZ)
        sb_adds(o, "+00");
    if (bc)
        sb_adds(o, " BC");
    return o->overflow ? -1 : 0;
}

struct fast_sink {
    struct exec_sink base;
    struct pgw_session *s;
    struct fast_col *cols;
    size_t ncols;
    bool describe;
    int efd;                        /* extra_float_digits */
    uint64_t rows;
    struct strbuf buf;              /* the answer, sent when it is certain */
    bool ambiguous;                 /* a float column's null: NULL or NaN? */
    struct vt_error err;
};

static enum vt_err fast_begin(struct exec_sink *b, duckdb_result *res, struct vt_error *err)
{
    struct fast_sink *k = (struct fast_sink *)b;
    if (res)
        return vt_error_set(err, VT_ERR_INTERNAL, "unexpected result");
    if (!k->describe)
        return VT_ERR_OK;
    struct strbuf *o = &k->buf;
    size_t m = pgw_msg_begin(o, 'T');
    pgw_put_i16(o, (int16_t)k->ncols);
    for (size_t i = 0; i < k->ncols; i++) {
        pgw_put_str(o, k->cols[i].name);
        pgw_put_i32(o, 0);
        pgw_put_i16(o, 0);
        pgw_put_i32(o, (int32_t)k->cols[i].ti.oid);
        pgw_put_i16(o, k->cols[i].ti.typlen);
        pgw_put_i32(o, k->cols[i].ti.typmod);
        pgw_put_i16(o, 0);
    }
    pgw_msg_end(o, m);
    return VT_ERR_OK;
}

/* {"a":1,"b":"x"}: the values, in the columns' order. */
static enum vt_err fast_row(struct exec_sink *b, const char *obj, size_t len,
                            struct vt_error *err)
{
    struct fast_sink *k = (struct fast_sink *)b;
    struct strbuf *o = &k->buf;
    if (k->ambiguous)
        return VT_ERR_OK;
    size_t m = pgw_msg_begin(o, 'D');
    pgw_put_i16(o, (int16_t)k->ncols);
    size_t i = 1; /* after '{' */
    for (size_t c = 0; c < k->ncols; c++) {
        /* the key */
        if (i >= len || obj[i] != '"')
            return vt_error_set(err, VT_ERR_INTERNAL, "unexpected row");
        for (i++; i < len && obj[i] != '"'; i++)
            if (obj[i] == '\\')
                i++;
        i += 2; /* '"' ':' */
        size_t vs = i;
        if (i < len && obj[i] == '"') {
            for (i++; i < len && obj[i] != '"'; i++)
                if (obj[i] == '\\')
                    i++;
            i++;
        } else {
            while (i < len && obj[i] != ',' && obj[i] != '}')
                i++;
        }
        if (i > len)
            return vt_error_set(err, VT_ERR_INTERNAL, "unexpected row");
        size_t vn = i - vs;
        i++; /* ',' or '}' */
        if (vn == 4 && !memcmp(obj + vs, "null", 4)) {
            /* JSON writes NaN and infinities as null too: DuckDB decides */
            if (k->cols[c].kind == FK_DOUBLE || k->cols[c].kind == FK_FLOAT) {
                k->ambiguous = true;
                return VT_ERR_OK;
            }
            pgw_put_i32(o, -1);
            continue;
        }
        size_t at = o->len;
        pgw_put_i32(o, 0);
        if (fast_value(&k->cols[c], obj + vs, vn, k->efd, o) != 0)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        uint32_t vl = (uint32_t)(o->len - at - 4);
        unsigned char *lp = (unsigned char *)o->buf + at;
        lp[0] = (unsigned char)(vl >> 24);
        lp[1] = (unsigned char)(vl >> 16);
        lp[2] = (unsigned char)(vl >> 8);
        lp[3] = (unsigned char)vl;
    }
    pgw_msg_end(o, m);
    k->rows++;
    if (o->overflow)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    return VT_ERR_OK;
}

static enum vt_err fast_count(struct exec_sink *b, uint64_t n, struct vt_error *err)
{
    (void)b;
    (void)n;
    return vt_error_set(err, VT_ERR_INTERNAL, "unexpected count");
}

static void fast_end(struct exec_sink *b)
{
    (void)b;
}

static void fast_fail(struct exec_sink *b, const struct vt_error *err)
{
    ((struct fast_sink *)b)->err = *err;
}

static const struct exec_sink_ops fast_ops = {
    .begin = fast_begin, .chunk = NULL, .json_row = fast_row, .count = fast_count,
    .end = fast_end, .fail = fast_fail,
};

/* A term's value as JSON (the constant, or the parameter). NULL: not one the
 * index can take. */
static bool integer_type(duckdb_type t)
{
    return t == DUCKDB_TYPE_TINYINT || t == DUCKDB_TYPE_SMALLINT || t == DUCKDB_TYPE_INTEGER ||
           t == DUCKDB_TYPE_BIGINT || t == DUCKDB_TYPE_UTINYINT || t == DUCKDB_TYPE_USMALLINT ||
           t == DUCKDB_TYPE_UINTEGER;
}

/* A term's value as JSON (the constant, or the parameter; a parameter sent
 * as text, such as pgbench's, is read as the integer column it is compared
 * with). NULL: not one the index can take. */
static json_t *term_value(const struct sql_lookup_term *t, const struct query_value *params,
                          size_t nparams, const struct cat_generation *gen)
{
    if (!t->param)
        return json_loads(t->json, JSON_DECODE_ANY, NULL);
    if ((size_t)t->param > nparams)
        return NULL;
    const struct query_value *v = &params[t->param - 1];
    switch (v->kind) {
    case QUERY_VALUE_INT64: return json_integer(v->u.i);
    case QUERY_VALUE_BOOL: return json_boolean(v->u.b);
    case QUERY_VALUE_VARCHAR: {
        for (size_t c = 0; c < gen->n_cols; c++) {
            if (strcmp(gen->cols[c].name, t->column) != 0 || !integer_type(gen->cols[c].type))
                continue;
            char *end;
            errno = 0;
            long long x = strtoll(v->u.s.ptr, &end, 10);
            bool digits = v->u.s.len > 0 && (isdigit((unsigned char)v->u.s.ptr[0]) ||
                                              v->u.s.ptr[0] == '-');
            if (!digits || *end || errno)
                return NULL;
            return json_integer(x);
        }
        return json_stringn(v->u.s.ptr, v->u.s.len);
    }
    default: return NULL;
    }
}

int pgw_fast_lookup(struct pgw_session *s, const struct sql_lookup *l,
                    const struct exec_snapshot *snap, const struct query_value *params,
                    size_t nparams, bool describe, const uint32_t *told, size_t ntold,
                    uint64_t *out_rows, bool *out_ok)
{
    if (!l || snap->n != 1 || strcmp(snap->views[0].name, l->dataset) != 0)
        return 0;
    struct cat_generation *gen = snap->pins[0].gen;
    const struct cat_fastpath *fp = cat_generation_fastpath(gen);
    if (!fp || !fp->index || !fp->rows)
        return 0;
    size_t ncols = l->ncolumns ? l->ncolumns : gen->n_cols;
    struct fast_col *cols = calloc(ncols ? ncols : 1, sizeof *cols);
    json_t *body = json_object();
    json_t *preds = json_array();
    int answered = 0;
    if (!cols || !body || !preds)
        goto out;
    json_t *colnames = l->ncolumns ? json_array() : NULL;
    for (size_t i = 0; i < ncols; i++) {
        size_t c = i;
        if (l->ncolumns) {
            for (c = 0; c < gen->n_cols && strcmp(gen->cols[c].name, l->columns[i]) != 0; c++)
                ;
            if (c == gen->n_cols) {
                json_decref(colnames);
                goto out;
            }
            json_array_append_new(colnames, json_string(gen->cols[c].name));
        }
        if (!fast_column(&gen->cols[c], &cols[i])) {
            json_decref(colnames);
            goto out;
        }
    }
    /* The client was told the columns (Describe): the index answers only
     * with the same types. */
    if (told && ntold != ncols) {
        json_decref(colnames);
        goto out;
    }
    for (size_t i = 0; told && i < ncols; i++)
        if (cols[i].ti.oid != told[i]) {
            json_decref(colnames);
            goto out;
        }
    if (colnames)
        json_object_set_new(body, "columns", colnames);
    for (size_t i = 0; i < l->nterms; i++) {
        json_t *val = term_value(&l->terms[i], params, nparams, gen);
        if (!val)
            goto out;
        json_t *pr = json_object();
        json_object_set_new(pr, "col", json_string(l->terms[i].column));
        json_object_set_new(pr, "op", json_string("eq"));
        json_object_set_new(pr, "val", val);
        json_array_append_new(preds, pr);
    }
    json_object_set(body, "predicates", preds);
    json_object_set_new(body, "page_size", json_integer(QUERY_DEFAULT_MAX_PAGE_SIZE));
    struct arena arena;
    arena_init(&arena, 0);
    struct query_request qr;
    struct vt_error err = {0};
    struct query_options qo = {.mode = QUERY_PAGED, .max_page_size = QUERY_DEFAULT_MAX_PAGE_SIZE};
    if (exec_parse_query(body, gen, &qo, &arena, &qr, &err) == VT_ERR_OK) {
        struct exec_plan plan = {
            .kind = EXEC_ROWS,
            .query = &qr,
            .gen = gen,
            .job = &s->conn->job,
            .arena = &arena,
        };
        struct fast_sink k = {.base.ops = &fast_ops, .s = s, .cols = cols, .ncols = ncols,
                              .describe = describe,
                              .efd = pgw_session_format(s).extra_float_digits};
        sb_init(&k.buf, 0);
        enum exec_fast r = exec_try_fast(&plan, &k.base, QUERY_DEFAULT_MAX_PAGE_SIZE - 1);
        if (r == EXEC_FAST_DONE && !k.ambiguous && k.err.code == VT_ERR_OK) {
            sb_add(s->out, k.buf.buf ? k.buf.buf : "", k.buf.len);
            if (pgw_flush_if_full(s) != 0)
                vt_error_set(&k.err, VT_ERR_CLIENT_GONE, NULL);
        }
        sb_release(&k.buf);
        if (r == EXEC_FAST_DONE && !k.ambiguous) {
            log_debug("pgwire: session %d: lookup on %s answered from the index", s->conn->pid,
                      l->dataset);
            answered = 1;
            *out_rows = k.rows;
            *out_ok = k.err.code == VT_ERR_OK;
            if (!*out_ok && pgw_stopped_error(s, &k.err))
                pgw_fail(s, &k.err);
        }
    }
    arena_release(&arena);
out:
    json_decref(preds);
    json_decref(body);
    free(cols);
    return answered;
}

