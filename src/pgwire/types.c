/*
 * DuckDB types as PostgreSQL sees them, and the DataRow encoder: result
 * chunks straight from DuckDB vectors to DataRow (or COPY) messages, in
 * PostgreSQL's text output format (DateStyle ISO, IntervalStyle postgres,
 * bytea hex, float shortest round-trip) or its binary send format, per
 * column as the client asked. Structs, maps, unions and nested lists have no
 * PostgreSQL type of their own here: they are json, written by the JSON
 * encoder every HTTP response uses (json_rows_encode_cells).
 *
 * Here: the mapping of DuckDB types to PostgreSQL ones, the per-column
 * encoders, the row loops (DataRow, COPY text/CSV/binary, index cells) and
 * RowDescription. The text of a single date, time, interval or float is
 * values.c; the other direction, parameter values of a Bind, is params.c.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode/dtoa.h"
#include "encode/json_format.h"
#include "encode/json_rows.h"
#include "index/index.h"
#include "pgwire/pgwire.h"
#include "query/query.h"
#include "util/arena.h"

#define PG_EPOCH_DAYS 10957                    /* 2000-01-01 - 1970-01-01 */
#define PG_EPOCH_US ((int64_t)PG_EPOCH_DAYS * 86400 * 1000000)
#define TXT_ROOM 160                           /* any fixed-size value's text */

/* ------------------------------------------------------------- the mapping */

/* How one column (or list element) is encoded. */
enum ek {
    EK_NULL, EK_BOOL, EK_I8, EK_I16, EK_I32, EK_I64, EK_U8, EK_U16, EK_U32, EK_U64, EK_I128,
    EK_U128, EK_F32, EK_F64, EK_DEC16, EK_DEC32, EK_DEC64, EK_DEC128, EK_STR, EK_BLOB, EK_DATE,
    EK_TIME, EK_TIMETZ, EK_TS, EK_TSTZ, EK_INTERVAL, EK_UUID, EK_ENUM, EK_BIT, EK_BIGNUM,
    EK_LIST, EK_ARRAY, EK_CELL, /* json text from the JSON encoder */
};

struct col {
    enum ek k;
    int16_t fmt;                    /* 0 text, 1 binary */
    bool fixed;                     /* fixed_kind(k): its text is txt_fixed's */
    struct pgw_typeinfo ti;
    uint8_t scale;                  /* decimals */
    int64_t ts_mul, ts_div;         /* timestamp units to microseconds */
    duckdb_type enum_int;           /* ENUM: the index type */
    char **enum_names;
    size_t *enum_lens;
    uint32_t n_enum;
    struct col *child;              /* LIST/ARRAY element */
    idx_t array_size;
    size_t cell;                    /* EK_CELL: index among the cell columns */
};

/* A scalar's encoding kind and PostgreSQL type; false for types that only
 * the JSON encoder writes (nested) or nobody can (INVALID). */
static bool scalar_kind(duckdb_logical_type t, struct col *c)
{
    duckdb_type id = duckdb_get_type_id(t);
    c->ti.typmod = -1;
    c->ts_mul = c->ts_div = 1;
    switch (id) {
    case DUCKDB_TYPE_BOOLEAN: c->k = EK_BOOL; c->ti.oid = PGW_OID_BOOL; c->ti.typlen = 1; break;
    case DUCKDB_TYPE_TINYINT: c->k = EK_I8; c->ti.oid = PGW_OID_INT2; c->ti.typlen = 2; break;
    case DUCKDB_TYPE_SMALLINT: c->k = EK_I16; c->ti.oid = PGW_OID_INT2; c->ti.typlen = 2; break;
    case DUCKDB_TYPE_INTEGER: c->k = EK_I32; c->ti.oid = PGW_OID_INT4; c->ti.typlen = 4; break;
    case DUCKDB_TYPE_BIGINT: c->k = EK_I64; c->ti.oid = PGW_OID_INT8; c->ti.typlen = 8; break;
    case DUCKDB_TYPE_UTINYINT: c->k = EK_U8; c->ti.oid = PGW_OID_INT2; c->ti.typlen = 2; break;
    case DUCKDB_TYPE_USMALLINT: c->k = EK_U16; c->ti.oid = PGW_OID_INT4; c->ti.typlen = 4; break;
    case DUCKDB_TYPE_UINTEGER: c->k = EK_U32; c->ti.oid = PGW_OID_INT8; c->ti.typlen = 8; break;
    case DUCKDB_TYPE_UBIGINT: c->k = EK_U64; c->ti.oid = PGW_OID_NUMERIC; c->ti.typlen = -1; break;
    case DUCKDB_TYPE_HUGEINT: c->k = EK_I128; c->ti.oid = PGW_OID_NUMERIC; c->ti.typlen = -1; break;
    case DUCKDB_TYPE_UHUGEINT: c->k = EK_U128; c->ti.oid = PGW_OID_NUMERIC; c->ti.typlen = -1; break;
    case DUCKDB_TYPE_FLOAT: c->k = EK_F32; c->ti.oid = PGW_OID_FLOAT4; c->ti.typlen = 4; break;
    case DUCKDB_TYPE_DOUBLE: c->k = EK_F64; c->ti.oid = PGW_OID_FLOAT8; c->ti.typlen = 8; break;
    case DUCKDB_TYPE_DECIMAL: {
        uint8_t w = duckdb_decimal_width(t);
        c->scale = duckdb_decimal_scale(t);
        switch (duckdb_decimal_internal_type(t)) {
        case DUCKDB_TYPE_SMALLINT: c->k = EK_DEC16; break;
        case DUCKDB_TYPE_INTEGER: c->k = EK_DEC32; break;
        case DUCKDB_TYPE_BIGINT: c->k = EK_DEC64; break;
        default: c->k = EK_DEC128; break;
        }
        c->ti.oid = PGW_OID_NUMERIC;
        c->ti.typlen = -1;
        c->ti.typmod = ((int32_t)w << 16 | c->scale) + 4;
        break;
    }
    case DUCKDB_TYPE_VARCHAR: {
        c->k = EK_STR;
        c->ti.oid = PGW_OID_TEXT;
        c->ti.typlen = -1;
        char *alias = duckdb_logical_type_get_alias(t);
        if (alias && !strcmp(alias, "JSON"))
            c->ti.oid = PGW_OID_JSON;
        duckdb_free(alias);
        break;
    }
    case DUCKDB_TYPE_BLOB: c->k = EK_BLOB; c->ti.oid = PGW_OID_BYTEA; c->ti.typlen = -1; break;
    case DUCKDB_TYPE_DATE: c->k = EK_DATE; c->ti.oid = PGW_OID_DATE; c->ti.typlen = 4; break;
    case DUCKDB_TYPE_TIME: c->k = EK_TIME; c->ti.oid = PGW_OID_TIME; c->ti.typlen = 8; break;
    case DUCKDB_TYPE_TIME_TZ: c->k = EK_TIMETZ; c->ti.oid = PGW_OID_TIMETZ; c->ti.typlen = 12; break;
    case DUCKDB_TYPE_TIMESTAMP_S: c->ts_mul = 1000000; /* fall through */
    case DUCKDB_TYPE_TIMESTAMP_MS: if (id == DUCKDB_TYPE_TIMESTAMP_MS) c->ts_mul = 1000; /* fall through */
    case DUCKDB_TYPE_TIMESTAMP_NS: if (id == DUCKDB_TYPE_TIMESTAMP_NS) c->ts_div = 1000; /* fall through */
    case DUCKDB_TYPE_TIMESTAMP:
        c->k = EK_TS;
        c->ti.oid = PGW_OID_TIMESTAMP;
        c->ti.typlen = 8;
        break;
    case DUCKDB_TYPE_TIMESTAMP_TZ:
        c->k = EK_TSTZ;
        c->ti.oid = PGW_OID_TIMESTAMPTZ;
        c->ti.typlen = 8;
        break;
    case DUCKDB_TYPE_INTERVAL: c->k = EK_INTERVAL; c->ti.oid = PGW_OID_INTERVAL; c->ti.typlen = 16; break;
    case DUCKDB_TYPE_UUID: c->k = EK_UUID; c->ti.oid = PGW_OID_UUID; c->ti.typlen = 16; break;
    case DUCKDB_TYPE_ENUM: c->k = EK_ENUM; c->ti.oid = PGW_OID_TEXT; c->ti.typlen = -1; break;
    case DUCKDB_TYPE_BIT: c->k = EK_BIT; c->ti.oid = PGW_OID_TEXT; c->ti.typlen = -1; break;
    case DUCKDB_TYPE_BIGNUM: c->k = EK_BIGNUM; c->ti.oid = PGW_OID_NUMERIC; c->ti.typlen = -1; break;
    case DUCKDB_TYPE_SQLNULL: c->k = EK_NULL; c->ti.oid = PGW_OID_TEXT; c->ti.typlen = -1; break;
    default:
        return false;
    }
    return true;
}

static bool is_nested(duckdb_type id)
{
    return id == DUCKDB_TYPE_LIST || id == DUCKDB_TYPE_ARRAY || id == DUCKDB_TYPE_STRUCT ||
           id == DUCKDB_TYPE_MAP || id == DUCKDB_TYPE_UNION;
}

struct pgw_typeinfo pgw_type_of(duckdb_logical_type t)
{
    struct col c = {0};
    duckdb_type id = duckdb_get_type_id(t);
    if (id == DUCKDB_TYPE_LIST || id == DUCKDB_TYPE_ARRAY) {
        duckdb_logical_type ct = id == DUCKDB_TYPE_LIST ? duckdb_list_type_child_type(t)
                                                         : duckdb_array_type_child_type(t);
        struct col e = {0};
        bool scalar = !is_nested(duckdb_get_type_id(ct)) && scalar_kind(ct, &e);
        duckdb_destroy_logical_type(&ct);
        uint32_t arr = scalar ? pgw_array_oid(e.ti.oid) : 0;
        if (arr)
            return (struct pgw_typeinfo){arr, -1, -1};
        return (struct pgw_typeinfo){PGW_OID_JSON, -1, -1};
    }
    if (is_nested(id))
        return (struct pgw_typeinfo){PGW_OID_JSON, -1, -1};
    if (scalar_kind(t, &c))
        return c.ti;
    return (struct pgw_typeinfo){PGW_OID_TEXT, -1, -1};
}

/* ------------------------------------------------------------ the encoder */

struct pgw_rows {
    size_t ncol;
    struct col *cols;
    struct pgw_format fmt;
    /* json cells: the columns the JSON encoder writes, as a chunk of their own */
    size_t ncell;
    size_t *cell_col;               /* result column of cell column i */
    struct json_rows *cells;
    struct strbuf cell_text;        /* this chunk's cells, back to back */
    uint32_t *cell_ends;            /* per row, per cell column: end offset */
    size_t cell_rows;               /* rows in cell_ends */
    size_t cell_cap;
    struct strbuf scratch;          /* one element's text (arrays, COPY) */
    /* Every column is a fixed-size binary value or a string: rows are
     * written column by column (encode_simple). */
    bool simple;
};

/* The size of a value's binary form when fixed (fixed_binary), else 0. */
static size_t fixed_size(enum ek k)
{
    switch (k) {
    case EK_BOOL: return 1;
    case EK_I8: case EK_I16: case EK_U8: return 2;
    case EK_I32: case EK_U16: case EK_F32: case EK_DATE: return 4;
    case EK_I64: case EK_U32: case EK_F64: case EK_TIME: case EK_TS: case EK_TSTZ: return 8;
    default: return 0;
    }
}

static void col_release(struct col *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->n_enum; i++)
        duckdb_free(c->enum_names[i]);
    free(c->enum_names);
    free(c->enum_lens);
    if (c->child) {
        col_release(c->child);
        free(c->child);
    }
}

void pgw_rows_destroy(struct pgw_rows *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->ncol; i++)
        col_release(&r->cols[i]);
    free(r->cols);
    free(r->cell_col);
    json_rows_destroy(r->cells);
    sb_release(&r->cell_text);
    free(r->cell_ends);
    sb_release(&r->scratch);
    free(r);
}

size_t pgw_rows_ncol(const struct pgw_rows *r)
{
    return r->ncol;
}

static bool enum_setup(struct col *c, duckdb_logical_type t)
{
    c->enum_int = duckdb_enum_internal_type(t);
    c->n_enum = duckdb_enum_dictionary_size(t);
    c->enum_names = calloc(c->n_enum ? c->n_enum : 1, sizeof *c->enum_names);
    c->enum_lens = calloc(c->n_enum ? c->n_enum : 1, sizeof *c->enum_lens);
    if (!c->enum_names || !c->enum_lens)
        return false;
    for (uint32_t i = 0; i < c->n_enum; i++) {
        c->enum_names[i] = duckdb_enum_dictionary_value(t, i);
        if (!c->enum_names[i])
            return false;
        c->enum_lens[i] = strlen(c->enum_names[i]);
    }
    return true;
}

static bool fixed_kind(enum ek k)
{
    return k != EK_STR && k != EK_BLOB && k != EK_ENUM && k != EK_BIT && k != EK_BIGNUM &&
           k != EK_LIST && k != EK_ARRAY && k != EK_CELL && k != EK_NULL;
}

/* Sets up column c for type t; false when out of memory or unsupported. */
static bool col_setup(struct pgw_rows *r, struct col *c, duckdb_logical_type t, int16_t fmt,
                      size_t index, char *why, size_t why_len)
{
    c->fmt = fmt;
    duckdb_type id = duckdb_get_type_id(t);
    if (id == DUCKDB_TYPE_LIST || id == DUCKDB_TYPE_ARRAY) {
        duckdb_logical_type ct = id == DUCKDB_TYPE_LIST ? duckdb_list_type_child_type(t)
                                                         : duckdb_array_type_child_type(t);
        struct col e = {0};
        bool scalar = !is_nested(duckdb_get_type_id(ct)) && scalar_kind(ct, &e) &&
                      pgw_array_oid(e.ti.oid) != 0;
        if (scalar) {
            c->child = calloc(1, sizeof *c->child);
            bool ok = c->child && col_setup(r, c->child, ct, fmt, index, why, why_len);
            duckdb_destroy_logical_type(&ct);
            if (!ok)
                return false;
            c->k = id == DUCKDB_TYPE_LIST ? EK_LIST : EK_ARRAY;
            if (id == DUCKDB_TYPE_ARRAY)
                c->array_size = duckdb_array_type_array_size(t);
            c->ti = (struct pgw_typeinfo){pgw_array_oid(c->child->ti.oid), -1, -1};
            return true;
        }
        duckdb_destroy_logical_type(&ct);
    }
    if (is_nested(id)) {
        if (!json_type_supported(t)) {
            snprintf(why, why_len, "column %zu has a type this server cannot send", index + 1);
            return false;
        }
        c->k = EK_CELL;
        c->ti = (struct pgw_typeinfo){PGW_OID_JSON, -1, -1};
        c->cell = r->ncell;
        size_t *cc = realloc(r->cell_col, (r->ncell + 1) * sizeof *cc);
        if (!cc)
            return false;
        r->cell_col = cc;
        r->cell_col[r->ncell] = index;
        r->ncell++;
        return true;
    }
    if (!scalar_kind(t, c)) {
        snprintf(why, why_len, "column %zu has a type this server cannot send", index + 1);
        return false;
    }
    if (c->k == EK_ENUM && !enum_setup(c, t))
        return false;
    c->fixed = fixed_kind(c->k);
    return true;
}

struct pgw_rows *pgw_rows_create(size_t ncol, const duckdb_logical_type *types,
                                 const int16_t *formats, size_t nformats,
                                 const struct pgw_format *fmt, const bool *as_text,
                                 struct vt_error *err)
{
    struct pgw_rows *r = calloc(1, sizeof *r);
    if (!r || !(r->cols = calloc(ncol ? ncol : 1, sizeof *r->cols))) {
        free(r);
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        return NULL;
    }
    r->ncol = ncol;
    r->fmt = *fmt;
    sb_init(&r->cell_text, 0);
    sb_init(&r->scratch, 0);
    char why[128] = "out of memory";
    for (size_t i = 0; i < ncol; i++) {
        int16_t f = nformats == 0 ? 0 : nformats == 1 ? formats[0] : i < nformats ? formats[i] : 0;
        if (!col_setup(r, &r->cols[i], types[i], f, i, why, sizeof why)) {
            pgw_rows_destroy(r);
            vt_error_set(err, strcmp(why, "out of memory") ? VT_ERR_QUERY_FAILED
                                                           : VT_ERR_OUT_OF_MEMORY,
                         "%s", why);
            return NULL;
        }
        if (as_text && as_text[i]) {
            /* Described as text: the value's text form, whatever format the
             * client asked for (a text value's binary form is its text). */
            r->cols[i].fmt = 0;
            if (r->cols[i].child)
                r->cols[i].child->fmt = 0;
            r->cols[i].ti = (struct pgw_typeinfo){PGW_OID_TEXT, -1, -1};
        }
    }
    r->simple = true;
    for (size_t i = 0; i < ncol; i++) {
        const struct col *c = &r->cols[i];
        r->simple &= (c->fmt && fixed_size(c->k)) || c->k == EK_STR ||
                     (c->k == EK_BLOB && c->fmt) || c->k == EK_NULL;
    }
    if (r->ncell) {
        /* The JSON encoder over the cell columns alone (names unused: cells
         * come without keys). */
        const char **names = calloc(r->ncell, sizeof *names);
        duckdb_logical_type *tv = calloc(r->ncell, sizeof *tv);
        char ebuf[128] = "out of memory";
        if (names && tv) {
            for (size_t i = 0; i < r->ncell; i++) {
                names[i] = "c";
                tv[i] = types[r->cell_col[i]];
            }
            r->cells = json_rows_create(r->ncell, names, tv, ebuf, sizeof ebuf);
        }
        free(tv);
        free(names);
        if (!r->cells) {
            pgw_rows_destroy(r);
            vt_error_set(err, VT_ERR_QUERY_FAILED, "%s", ebuf);
            return NULL;
        }
    }
    return r;
}

/* ------------------------------------------------------ per-chunk views */

struct vv {
    void *data;
    uint64_t *valid;
    duckdb_list_entry *entries;     /* LIST */
    void *cdata;                    /* element data */
    uint64_t *cvalid;
    duckdb_vector vec;
};

static inline bool valid_at(const uint64_t *v, idx_t i)
{
    return !v || (v[i >> 6] >> (i & 63)) & 1;
}

/* Room for n more bytes (sb_grow's rules; its call only when the buffer
 * must grow: this runs for every value of a result). */
static inline char *room(struct strbuf *o, size_t n)
{
    if (o->len + n < o->cap && (!o->max || o->len + n <= o->max))
        return o->buf + o->len;
    if (sb_grow(o, n) != 0)
        return NULL;
    return o->buf + o->len;
}

static int64_t ts_us(const struct col *c, int64_t v)
{
    if (v == INT64_MAX || v == -INT64_MAX || v == INT64_MIN)
        return v;
    if (c->ts_mul != 1)
        return v * c->ts_mul; /* seconds and milliseconds always fit */
    if (c->ts_div != 1) { /* floor: a time before 1970 goes to the microsecond before */
        int64_t q = v / c->ts_div;
        return v % c->ts_div < 0 ? q - 1 : q;
    }
    return v;
}

/* The text of a fixed-size value at p (room TXT_ROOM). */
static char *txt_fixed(const struct col *c, const void *data, idx_t i, char *p,
                       const struct pgw_format *f)
{
    switch (c->k) {
    case EK_BOOL: *p++ = ((const bool *)data)[i] ? 't' : 'f'; return p;
    case EK_I8: return json_fmt_i64(p, ((const int8_t *)data)[i]);
    case EK_I16: return json_fmt_i64(p, ((const int16_t *)data)[i]);
    case EK_I32: return json_fmt_i64(p, ((const int32_t *)data)[i]);
    case EK_I64: return json_fmt_i64(p, ((const int64_t *)data)[i]);
    case EK_U8: return json_fmt_u64(p, ((const uint8_t *)data)[i]);
    case EK_U16: return json_fmt_u64(p, ((const uint16_t *)data)[i]);
    case EK_U32: return json_fmt_u64(p, ((const uint32_t *)data)[i]);
    case EK_U64: return json_fmt_u64(p, ((const uint64_t *)data)[i]);
    case EK_I128: {
        const duckdb_hugeint *h = &((const duckdb_hugeint *)data)[i];
        return json_fmt_i128(p, h->upper, h->lower);
    }
    case EK_U128: {
        const duckdb_uhugeint *h = &((const duckdb_uhugeint *)data)[i];
        return json_fmt_u128(p, h->upper, h->lower);
    }
    case EK_F32: return p + pgw_fmt_float(p, ((const float *)data)[i], f->extra_float_digits);
    case EK_F64: return p + pgw_fmt_double(p, ((const double *)data)[i], f->extra_float_digits);
    case EK_DEC16: return json_fmt_decimal64(p, ((const int16_t *)data)[i], c->scale);
    case EK_DEC32: return json_fmt_decimal64(p, ((const int32_t *)data)[i], c->scale);
    case EK_DEC64: return json_fmt_decimal64(p, ((const int64_t *)data)[i], c->scale);
    case EK_DEC128: {
        const duckdb_hugeint *h = &((const duckdb_hugeint *)data)[i];
        return json_fmt_decimal128(p, h->upper, h->lower, c->scale);
    }
    case EK_DATE: return pgw_txt_date(p, ((const int32_t *)data)[i]);
    case EK_TIME: return pgw_txt_time(p, ((const int64_t *)data)[i]);
    case EK_TIMETZ: return pgw_txt_timetz(p, ((const uint64_t *)data)[i]);
    case EK_TS: return pgw_txt_timestamp(p, ts_us(c, ((const int64_t *)data)[i]), false);
    case EK_TSTZ: return pgw_txt_timestamp(p, ((const int64_t *)data)[i], true);
    case EK_INTERVAL: {
        const duckdb_interval *v = &((const duckdb_interval *)data)[i];
        return pgw_txt_interval(p, v->months, v->days, v->micros);
    }
    case EK_UUID: return pgw_txt_uuid(p, (const char *)data + 16 * i);
    default: return p;
    }
}

/* duckdb.h's duckdb_string_t read in place (what duckdb_string_t_length and
 * _data do, without two calls into the library per value). */
static inline void str_at(const void *data, idx_t i, const char **s, size_t *n)
{
    const duckdb_string_t *st = &((const duckdb_string_t *)data)[i];
    uint32_t len = st->value.inlined.length;
    *n = len;
    *s = len <= sizeof st->value.inlined.inlined ? st->value.inlined.inlined
                                                 : st->value.pointer.ptr;
}

static uint64_t enum_index(const struct col *c, const void *data, idx_t i)
{
    switch (c->enum_int) {
    case DUCKDB_TYPE_UTINYINT: return ((const uint8_t *)data)[i];
    case DUCKDB_TYPE_USMALLINT: return ((const uint16_t *)data)[i];
    default: return ((const uint32_t *)data)[i];
    }
}

/* Appends the text of element i (valid) of a scalar column to o. */
static int put_text_scalar(struct pgw_rows *r, const struct col *c, const void *data, idx_t i,
                           struct strbuf *o)
{
    if (fixed_kind(c->k)) {
        char *p = room(o, TXT_ROOM + JSON_FMT_SLACK);
        if (!p)
            return -1;
        o->len = (size_t)(txt_fixed(c, data, i, p, &r->fmt) - o->buf);
        return 0;
    }
    const char *s;
    size_t n;
    switch (c->k) {
    case EK_STR:
        str_at(data, i, &s, &n);
        return sb_add(o, s, n);
    case EK_BLOB: {
        str_at(data, i, &s, &n);
        char *p = room(o, 2 + 2 * n);
        if (!p)
            return -1;
        static const char hex[] = "0123456789abcdef";
        *p++ = '\\';
        *p++ = 'x';
        for (size_t k = 0; k < n; k++) {
            *p++ = hex[(unsigned char)s[k] >> 4];
            *p++ = hex[(unsigned char)s[k] & 15];
        }
        o->len = (size_t)(p - o->buf);
        return 0;
    }
    case EK_ENUM: {
        uint64_t k = enum_index(c, data, i);
        if (k >= c->n_enum)
            return sb_adds(o, "");
        return sb_add(o, c->enum_names[k], c->enum_lens[k]);
    }
    case EK_BIT: {
        str_at(data, i, &s, &n);
        char *p = room(o, 8 * n + JSON_FMT_SLACK);
        if (!p)
            return -1;
        char *e = json_fmt_bit(p, (const unsigned char *)s, n); /* quoted */
        size_t len = (size_t)(e - p);
        if (len >= 2) {
            memmove(p, p + 1, len - 2);
            o->len += len - 2;
        }
        return 0;
    }
    case EK_BIGNUM: {
        str_at(data, i, &s, &n);
        char *p = room(o, json_bignum_max(n) + JSON_FMT_SLACK);
        if (!p)
            return -1;
        char *e = json_fmt_bignum(p, (const unsigned char *)s, n);
        if (e)
            o->len = (size_t)(e - o->buf);
        return 0;
    }
    default:
        return 0;
    }
}

/* Array elements need quotes when empty, "NULL", or holding a character
 * array_out quotes: " \ { } , or white space. */
static int put_array_elem(struct strbuf *o, const char *s, size_t n)
{
    bool quote = n == 0 || (n == 4 && !strncasecmp(s, "null", 4));
    for (size_t i = 0; i < n && !quote; i++) {
        char c = s[i];
        quote = c == '"' || c == '\\' || c == '{' || c == '}' || c == ',' || c == ' ' ||
                c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
    }
    if (!quote)
        return sb_add(o, s, n);
    char *p = room(o, 2 * n + 2);
    if (!p)
        return -1;
    *p++ = '"';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\')
            *p++ = '\\';
        *p++ = s[i];
    }
    *p++ = '"';
    o->len = (size_t)(p - o->buf);
    return 0;
}

/* Element range of row i of a LIST/ARRAY column. */
static void list_range(const struct col *c, const struct vv *v, idx_t i, idx_t *from,
                       idx_t *count)
{
    if (c->k == EK_LIST) {
        *from = v->entries[i].offset;
        *count = v->entries[i].length;
    } else {
        *from = i * c->array_size;
        *count = c->array_size;
    }
}

static int put_text_list(struct pgw_rows *r, const struct col *c, const struct vv *v, idx_t i,
                         struct strbuf *o)
{
    idx_t from, count;
    list_range(c, v, i, &from, &count);
    if (sb_addc(o, '{') != 0)
        return -1;
    for (idx_t k = 0; k < count; k++) {
        if (k && sb_addc(o, ',') != 0)
            return -1;
        if (!valid_at(v->cvalid, from + k)) {
            if (sb_adds(o, "NULL") != 0)
                return -1;
            continue;
        }
        sb_reset(&r->scratch);
        if (put_text_scalar(r, c->child, v->cdata, from + k, &r->scratch) != 0 ||
            put_array_elem(o, r->scratch.buf ? r->scratch.buf : "", r->scratch.len) != 0)
            return -1;
    }
    return sb_addc(o, '}');
}

/* ---------------------------------------------------------- binary output */

/* Big-endian stores as one byte swap and one store each (byte by byte,
 * the compiler kept four stores for every length of every value). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define TO_BE16(v) (v)
#define TO_BE32(v) (v)
#define TO_BE64(v) (v)
#else
#define TO_BE16(v) __builtin_bswap16(v)
#define TO_BE32(v) __builtin_bswap32(v)
#define TO_BE64(v) __builtin_bswap64(v)
#endif

static inline void be16(char *p, uint16_t v)
{
    v = TO_BE16(v);
    memcpy(p, &v, 2);
}

static inline void be32w(char *p, uint32_t v)
{
    v = TO_BE32(v);
    memcpy(p, &v, 4);
}

static inline void be64(char *p, uint64_t v)
{
    v = TO_BE64(v);
    memcpy(p, &v, 8);
}

/* The binary form of a fixed-size value into b (16 bytes of room): its
 * size, or 0 when the type has no fixed size. k is c->k, apart so that a
 * caller passing a constant gets the one case inlined (encode_simple). */
static inline __attribute__((always_inline)) size_t fixed_binary_k(enum ek k,
                                                                   const struct col *c,
                                                                   const void *data, idx_t i,
                                                                   char *b)
{
    switch (k) {
    case EK_BOOL: b[0] = ((const bool *)data)[i] ? 1 : 0; return 1;
    case EK_I8: be16(b, (uint16_t)((const int8_t *)data)[i]); return 2;
    case EK_I16: be16(b, (uint16_t)((const int16_t *)data)[i]); return 2;
    case EK_U8: be16(b, ((const uint8_t *)data)[i]); return 2;
    case EK_I32: be32w(b, (uint32_t)((const int32_t *)data)[i]); return 4;
    case EK_U16: be32w(b, ((const uint16_t *)data)[i]); return 4;
    case EK_I64: be64(b, (uint64_t)((const int64_t *)data)[i]); return 8;
    case EK_U32: be64(b, ((const uint32_t *)data)[i]); return 8;
    case EK_F32: {
        uint32_t u;
        memcpy(&u, &((const float *)data)[i], 4);
        be32w(b, u);
        return 4;
    }
    case EK_F64: {
        uint64_t u;
        memcpy(&u, &((const double *)data)[i], 8);
        be64(b, u);
        return 8;
    }
    case EK_DATE: {
        int32_t d = ((const int32_t *)data)[i];
        int32_t v = d == INT32_MAX ? INT32_MAX
                    : (d == -INT32_MAX || d == INT32_MIN) ? INT32_MIN
                                                          : d - PG_EPOCH_DAYS;
        be32w(b, (uint32_t)v);
        return 4;
    }
    case EK_TIME: be64(b, (uint64_t)((const int64_t *)data)[i]); return 8;
    case EK_TS: case EK_TSTZ: {
        int64_t v = ((const int64_t *)data)[i];
        if (k == EK_TS)
            v = ts_us(c, v);
        int64_t pg = v == INT64_MAX ? INT64_MAX
                     : (v == -INT64_MAX || v == INT64_MIN) ? INT64_MIN
                                                           : v - PG_EPOCH_US;
        be64(b, (uint64_t)pg);
        return 8;
    }
    default:
        return 0;
    }
}

static inline __attribute__((always_inline)) size_t fixed_binary(const struct col *c,
                                                                 const void *data, idx_t i,
                                                                 char *b)
{
    return fixed_binary_k(c->k, c, data, i, b);
}

static int put_binary_scalar(struct pgw_rows *r, const struct col *c, const void *data, idx_t i,
                             struct strbuf *o)
{
    char b[16];
    size_t w = fixed_binary(c, data, i, b);
    if (w)
        return sb_add(o, b, w);
    switch (c->k) { /* the fixed-size types were written above */
    case EK_U64: case EK_I128: case EK_U128: case EK_DEC16: case EK_DEC32: case EK_DEC64:
    case EK_DEC128: case EK_BIGNUM: {
        sb_reset(&r->scratch);
        if (put_text_scalar(r, c, data, i, &r->scratch) != 0)
            return -1;
        return pgw_numeric_binary(o, r->scratch.buf ? r->scratch.buf : "", r->scratch.len);
    }
    case EK_TIMETZ: {
        uint64_t bits = ((const uint64_t *)data)[i];
        int32_t offset = 57599 - (int32_t)(bits & 0xffffff);
        be64(b, bits >> 24);
        be32w(b + 8, (uint32_t)(-offset)); /* PostgreSQL counts seconds west */
        return sb_add(o, b, 12);
    }
    case EK_INTERVAL: {
        const duckdb_interval *v = &((const duckdb_interval *)data)[i];
        be64(b, (uint64_t)v->micros);
        be32w(b + 8, (uint32_t)v->days);
        be32w(b + 12, (uint32_t)v->months);
        return sb_add(o, b, 16);
    }
    case EK_UUID: {
        int64_t upper;
        uint64_t lower;
        memcpy(&lower, (const char *)data + 16 * i, 8);
        memcpy(&upper, (const char *)data + 16 * i + 8, 8);
        be64(b, (uint64_t)upper ^ (1ull << 63));
        be64(b + 8, lower);
        return sb_add(o, b, 16);
    }
    case EK_STR: case EK_BLOB: {
        const char *s;
        size_t n;
        str_at(data, i, &s, &n);
        return sb_add(o, s, n);
    }
    default: /* enum, bit: their text */
        return put_text_scalar(r, c, data, i, o);
    }
}

static int put_binary_list(struct pgw_rows *r, const struct col *c, const struct vv *v, idx_t i,
                           struct strbuf *o)
{
    idx_t from, count;
    list_range(c, v, i, &from, &count);
    bool hasnull = false;
    for (idx_t k = 0; k < count && !hasnull; k++)
        hasnull = !valid_at(v->cvalid, from + k);
    char h[20];
    be32w(h, count ? 1 : 0);
    be32w(h + 4, hasnull);
    be32w(h + 8, c->child->ti.oid);
    if (sb_add(o, h, 12) != 0)
        return -1;
    if (count) {
        be32w(h, (uint32_t)count);
        be32w(h + 4, 1);
        if (sb_add(o, h, 8) != 0)
            return -1;
    }
    for (idx_t k = 0; k < count; k++) {
        if (!valid_at(v->cvalid, from + k)) {
            be32w(h, UINT32_MAX);
            if (sb_add(o, h, 4) != 0)
                return -1;
            continue;
        }
        size_t at = o->len;
        if (sb_add(o, h, 4) != 0 || put_binary_scalar(r, c->child, v->cdata, from + k, o) != 0)
            return -1;
        be32w(o->buf + at, (uint32_t)(o->len - at - 4));
    }
    return 0;
}

/* ------------------------------------------------------------- the rows */

/* The JSON text of every cell column of this chunk. */
struct cell_ctx {
    struct pgw_rows *r;
    size_t row;
};

static int take_cells(void *ctx, const char *cells, const uint32_t *ends)
{
    struct cell_ctx *x = ctx;
    struct pgw_rows *r = x->r;
    size_t base = r->cell_text.len;
    uint32_t len = ends[r->ncell - 1];
    if (sb_add(&r->cell_text, cells, len) != 0)
        return -1;
    for (size_t k = 0; k < r->ncell; k++)
        r->cell_ends[x->row * r->ncell + k] = (uint32_t)(base + ends[k]);
    x->row++;
    return 0;
}

static int encode_cells(struct pgw_rows *r, duckdb_data_chunk chunk)
{
    if (!r->ncell)
        return 0;
    idx_t n = duckdb_data_chunk_get_size(chunk);
    if (r->cell_cap < n * r->ncell) {
        uint32_t *e = realloc(r->cell_ends, n * r->ncell * sizeof *e);
        if (!e)
            return -1;
        r->cell_ends = e;
        r->cell_cap = n * r->ncell;
    }
    sb_reset(&r->cell_text);
    duckdb_logical_type *types = calloc(r->ncell, sizeof *types);
    if (!types)
        return -1;
    for (size_t k = 0; k < r->ncell; k++)
        types[k] = duckdb_vector_get_column_type(
            duckdb_data_chunk_get_vector(chunk, r->cell_col[k]));
    duckdb_data_chunk sub = duckdb_create_data_chunk(types, r->ncell);
    int rc = -1;
    if (sub) {
        for (size_t k = 0; k < r->ncell; k++)
            duckdb_vector_reference_vector(duckdb_data_chunk_get_vector(sub, k),
                                           duckdb_data_chunk_get_vector(chunk, r->cell_col[k]));
        duckdb_data_chunk_set_size(sub, n);
        struct cell_ctx x = {r, 0};
        rc = json_rows_encode_cells(r->cells, sub, take_cells, &x);
        r->cell_rows = x.row;
        duckdb_destroy_data_chunk(&sub);
    }
    for (size_t k = 0; k < r->ncell; k++)
        duckdb_destroy_logical_type(&types[k]);
    free(types);
    return rc;
}

static void cell_at(const struct pgw_rows *r, size_t cell, idx_t row, const char **s, size_t *n)
{
    size_t idx = row * r->ncell + cell;
    uint32_t end = r->cell_ends[idx];
    uint32_t start = idx == 0 ? 0 : r->cell_ends[idx - 1];
    *s = r->cell_text.buf + start;
    *n = end - start;
}

static void views(struct pgw_rows *r, duckdb_data_chunk chunk, struct vv *v)
{
    for (size_t c = 0; c < r->ncol; c++) {
        duckdb_vector vec = duckdb_data_chunk_get_vector(chunk, c);
        v[c].vec = vec;
        v[c].data = duckdb_vector_get_data(vec);
        v[c].valid = duckdb_vector_get_validity(vec);
        v[c].entries = NULL;
        v[c].cdata = NULL;
        v[c].cvalid = NULL;
        if (r->cols[c].k == EK_LIST || r->cols[c].k == EK_ARRAY) {
            duckdb_vector child = r->cols[c].k == EK_LIST ? duckdb_list_vector_get_child(vec)
                                                          : duckdb_array_vector_get_child(vec);
            v[c].entries = v[c].data;
            v[c].cdata = duckdb_vector_get_data(child);
            v[c].cvalid = duckdb_vector_get_validity(child);
        }
    }
}

/* The value of column c at row i (its text or binary form, no length). */
static int put_value(struct pgw_rows *r, const struct col *c, const struct vv *v, idx_t i,
                     struct strbuf *o)
{
    if (c->k == EK_CELL) {
        const char *s;
        size_t n;
        cell_at(r, c->cell, i, &s, &n);
        return sb_add(o, s, n);
    }
    if (c->k == EK_LIST || c->k == EK_ARRAY)
        return c->fmt ? put_binary_list(r, c, v, i, o) : put_text_list(r, c, v, i, o);
    return c->fmt ? put_binary_scalar(r, c, v->data, i, o) : put_text_scalar(r, c, v->data, i, o);
}

#define MAX_STACK_COLS 64
#define SIMPLE_ROWS 256

/* n bytes from s to p (no overlap), short ones without a call: most
 * strings of a result are a few to a few dozen bytes, where memcpy's call
 * and its size dispatch cost more than the copy. */
static inline __attribute__((always_inline)) void copy_short(char *p, const char *s, size_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(p, &a, 8);
        memcpy(p + n - 8, &b, 8);
    } else if (n > 16 && n <= 32) {
        char a[16], b[16];
        memcpy(a, s, 16);
        memcpy(b, s + n - 16, 16);
        memcpy(p, a, 16);
        memcpy(p + n - 16, b, 16);
    } else if (n >= 4 && n < 8) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(p, &a, 4);
        memcpy(p + n - 4, &b, 4);
    } else if (n >= 2 && n < 4) {
        uint16_t a, b;
        memcpy(&a, s, 2);
        memcpy(&b, s + n - 2, 2);
        memcpy(p, &a, 2);
        memcpy(p + n - 2, &b, 2);
    } else if (n == 1) {
        p[0] = s[0];
    } else {
        memcpy(p, s, n);
    }
}

/* One fixed-size column of kind k (a constant where called, so the value's
 * case is all that is left of fixed_binary_k) into n rows at base + pos[]. */
static inline __attribute__((always_inline)) void simple_fixed(enum ek k, const struct col *col,
                                                               const struct vv *v, idx_t from,
                                                               idx_t n, char *base, size_t *pos)
{
    for (idx_t j = 0; j < n; j++) {
        char *p = base + pos[j];
        if (!valid_at(v->valid, from + j)) {
            be32w(p, UINT32_MAX);
            pos[j] += 4;
            continue;
        }
        size_t w = fixed_binary_k(k, col, v->data, from + j, p + 4);
        be32w(p, (uint32_t)w);
        pos[j] += 4 + w;
    }
}

static void simple_column(const struct col *col, const struct vv *v, idx_t from, idx_t n,
                          char *base, size_t *pos)
{
    switch (col->k) {
#define FIXED(K) case K: simple_fixed(K, col, v, from, n, base, pos); return;
    FIXED(EK_BOOL) FIXED(EK_I8) FIXED(EK_I16) FIXED(EK_U8) FIXED(EK_I32) FIXED(EK_U16)
    FIXED(EK_I64) FIXED(EK_U32) FIXED(EK_F32) FIXED(EK_F64) FIXED(EK_DATE) FIXED(EK_TIME)
    FIXED(EK_TS) FIXED(EK_TSTZ)
#undef FIXED
    case EK_STR: case EK_BLOB:
        for (idx_t j = 0; j < n; j++) {
            char *p = base + pos[j];
            if (!valid_at(v->valid, from + j)) {
                be32w(p, UINT32_MAX);
                pos[j] += 4;
                continue;
            }
            const char *s;
            size_t sn;
            str_at(v->data, from + j, &s, &sn);
            be32w(p, (uint32_t)sn);
            copy_short(p + 4, s, sn);
            pos[j] += 4 + sn;
        }
        return;
    default: /* EK_NULL: the only other kind of a simple row */
        for (idx_t j = 0; j < n; j++) {
            be32w(base + pos[j], UINT32_MAX);
            pos[j] += 4;
        }
        return;
    }
}

/* encode_rows for rows of simple columns (pgw_rows.simple): the sizes of
 * the messages first, one reservation, then each column written into every
 * row, with no per-value checks. */
static int encode_simple(struct pgw_rows *r, const struct vv *v, idx_t from, idx_t count,
                         struct strbuf *out, char type)
{
    size_t pos[SIMPLE_ROWS];
    /* What every row has: its header, the lengths, the fixed-size values
     * of the columns without NULLs in this chunk. */
    size_t each = 7 + 4 * r->ncol;
    for (size_t c = 0; c < r->ncol; c++) {
        const struct col *col = &r->cols[c];
        if (col->k != EK_NULL && col->k != EK_STR && col->k != EK_BLOB && !v[c].valid)
            each += fixed_size(col->k);
    }
    while (count) {
        idx_t n = count < SIMPLE_ROWS ? count : SIMPLE_ROWS;
        size_t total = 0;
        for (idx_t k = 0; k < n; k++)
            pos[k] = each;
        for (size_t c = 0; c < r->ncol; c++) {
            const struct col *col = &r->cols[c];
            if (col->k == EK_NULL)
                continue;
            if (col->k == EK_STR || col->k == EK_BLOB) {
                const duckdb_string_t *d = v[c].data;
                for (idx_t k = 0; k < n; k++)
                    if (valid_at(v[c].valid, from + k))
                        pos[k] += d[from + k].value.inlined.length;
            } else if (v[c].valid) {
                size_t w = fixed_size(col->k);
                for (idx_t k = 0; k < n; k++)
                    pos[k] += valid_at(v[c].valid, from + k) ? w : 0;
            }
        }
        for (idx_t k = 0; k < n; k++) {
            size_t len = pos[k];
            pos[k] = total;
            total += len;
        }
        char *base = room(out, total);
        if (!base)
            return -1;
        for (idx_t k = 0; k < n; k++) {
            size_t end = k + 1 < n ? pos[k + 1] : total;
            char *p = base + pos[k];
            p[0] = type;
            be32w(p + 1, (uint32_t)(end - pos[k] - 1));
            be16(p + 5, (uint16_t)r->ncol);
            pos[k] += 7;
        }
        for (size_t c = 0; c < r->ncol; c++)
            simple_column(&r->cols[c], &v[c], from, n, base, pos);
        out->len += total;
        from += n;
        count -= n;
    }
    return 0;
}

/* Rows [from, from + count) of the chunk, one message each: DataRow ('D'),
 * or CopyData ('d') holding a COPY binary tuple (the same body: a field
 * count, then each field's length and bytes); `prefix` (may be NULL) goes
 * in front of the first row's body. */
static int encode_rows(struct pgw_rows *r, duckdb_data_chunk chunk, uint64_t from,
                       uint64_t count, struct strbuf *out, char type, const char *prefix,
                       size_t plen)
{
    idx_t n = duckdb_data_chunk_get_size(chunk);
    if (from >= n)
        return 0;
    if (count > n - from)
        count = n - from;
    if (r->ncell && encode_cells(r, chunk) != 0)
        return -1;
    struct vv stack[MAX_STACK_COLS];
    struct vv *v = r->ncol <= MAX_STACK_COLS ? stack : calloc(r->ncol, sizeof *v);
    if (!v)
        return -1;
    views(r, chunk, v);
    int rc = 0;
    if (r->simple && !prefix) {
        rc = encode_simple(r, v, from, count, out, type);
        count = 0;
    }
    for (idx_t i = from; i < from + count && rc == 0; i++) {
        size_t start = out->len;
        size_t pre = i == from && prefix ? plen : 0;
        char *p = room(out, 7 + pre);
        if (!p) {
            rc = -1;
            break;
        }
        p[0] = type;
        if (pre)
            memcpy(p + 5, prefix, pre);
        be16(p + 5 + pre, (uint16_t)r->ncol);
        out->len += 7 + pre;
        for (size_t c = 0; c < r->ncol && rc == 0; c++) {
            const struct col *col = &r->cols[c];
            char *lp = room(out, 4);
            if (!lp) {
                rc = -1;
                break;
            }
            if (col->k == EK_NULL || !valid_at(v[c].valid, i)) {
                be32w(lp, UINT32_MAX);
                out->len += 4;
                continue;
            }
            /* The common cases in place: fixed-size values, strings. */
            if (col->fmt && (lp = room(out, 4 + 16)) != NULL) {
                size_t w = fixed_binary(col, v[c].data, i, lp + 4);
                if (w) {
                    be32w(lp, (uint32_t)w);
                    out->len += 4 + w;
                    continue;
                }
            } else if (!col->fmt && col->fixed &&
                       (lp = room(out, 4 + TXT_ROOM + JSON_FMT_SLACK)) != NULL) {
                char *e = txt_fixed(col, v[c].data, i, lp + 4, &r->fmt);
                be32w(lp, (uint32_t)(e - lp - 4));
                out->len = (size_t)(e - out->buf);
                continue;
            }
            if (col->k == EK_STR || (col->k == EK_BLOB && col->fmt)) {
                const char *s;
                size_t sn;
                str_at(v[c].data, i, &s, &sn);
                if (!(lp = room(out, 4 + sn))) {
                    rc = -1;
                    break;
                }
                be32w(lp, (uint32_t)sn);
                memcpy(lp + 4, s, sn);
                out->len += 4 + sn;
                continue;
            }
            size_t at = out->len;
            out->len += 4;
            rc = put_value(r, col, &v[c], i, out);
            if (rc == 0)
                be32w(out->buf + at, (uint32_t)(out->len - at - 4));
        }
        if (rc == 0)
            be32w(out->buf + start + 1, (uint32_t)(out->len - start - 1));
    }
    if (v != stack)
        free(v);
    return out->overflow ? -1 : rc;
}

int pgw_rows_data(struct pgw_rows *r, duckdb_data_chunk chunk, uint64_t from, uint64_t count,
                  struct strbuf *out)
{
    return encode_rows(r, chunk, from, count, out, 'D', NULL, 0);
}

int pgw_rows_copy_binary(struct pgw_rows *r, duckdb_data_chunk chunk, const char *prefix,
                         size_t plen, struct strbuf *out)
{
    return encode_rows(r, chunk, 0, duckdb_data_chunk_get_size(chunk), out, 'd', prefix, plen);
}

bool pgw_rows_cells_supported(const struct pgw_rows *r)
{
    for (size_t c = 0; c < r->ncol; c++)
        if (r->cols[c].k == EK_LIST || r->cols[c].k == EK_ARRAY)
            return false; /* the index keeps lists as JSON text, not elements */
    return true;
}

int pgw_rows_cells(struct pgw_rows *r, const struct index_cell *cells, const size_t *cols,
                   struct strbuf *out)
{
    size_t start = out->len;
    char *p = room(out, 7);
    if (!p)
        return -1;
    p[0] = 'D';
    be16(p + 5, (uint16_t)r->ncol);
    out->len += 7;
    for (size_t c = 0; c < r->ncol; c++) {
        const struct col *col = &r->cols[c];
        const struct index_cell *cell = &cells[cols ? cols[c] : c];
        char *lp = room(out, 4);
        if (!lp)
            return -1;
        if (col->k == EK_NULL || cell->null) {
            be32w(lp, UINT32_MAX);
            out->len += 4;
            continue;
        }
        size_t at = out->len;
        out->len += 4;
        int rc;
        if (col->k == EK_CELL || col->k == EK_ENUM) {
            /* JSON text of a nested value, the text of an ENUM */
            duckdb_string_t s = cell->v.s;
            rc = sb_add(out, duckdb_string_t_data(&s), duckdb_string_t_length(s));
        } else if (col->k == EK_LIST || col->k == EK_ARRAY) {
            return -1;
        } else {
            /* a cell is a one-row vector of the column's type */
            rc = col->fmt ? put_binary_scalar(r, col, cell->v.raw, 0, out)
                          : put_text_scalar(r, col, cell->v.raw, 0, out);
        }
        if (rc != 0)
            return -1;
        be32w(out->buf + at, (uint32_t)(out->len - at - 4));
    }
    be32w(out->buf + start + 1, (uint32_t)(out->len - start - 1));
    return out->overflow ? -1 : 0;
}

/* COPY text: backslash escapes for \ and control characters; CSV: quoted
 * when holding the delimiter, a quote, CR/LF, or equal to the NULL text. */
static int copy_field(struct strbuf *o, const char *s, size_t n, const struct pgw_copy_options *co)
{
    if (co->format == PGW_COPY_TEXT) {
        char *p = room(o, 2 * n);
        if (!p)
            return -1;
        for (size_t i = 0; i < n; i++) {
            char c = s[i];
            const char *e = c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                            : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f"
                            : c == '\v' ? "\\v" : NULL;
            if (c == co->delimiter && !e) {
                *p++ = '\\';
                *p++ = c;
            } else if (e) {
                *p++ = e[0];
                *p++ = e[1];
            } else {
                *p++ = c;
            }
        }
        o->len = (size_t)(p - o->buf);
        return 0;
    }
    bool quote = n == 0 ? co->null_text[0] == '\0' : (strlen(co->null_text) == n &&
                                                      !memcmp(s, co->null_text, n));
    for (size_t i = 0; i < n && !quote; i++)
        quote = s[i] == co->delimiter || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
    if (!quote)
        return sb_add(o, s, n);
    char *p = room(o, 2 * n + 2);
    if (!p)
        return -1;
    *p++ = '"';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            *p++ = '"';
        *p++ = s[i];
    }
    *p++ = '"';
    o->len = (size_t)(p - o->buf);
    return 0;
}

int pgw_rows_copy(struct pgw_rows *r, duckdb_data_chunk chunk, const struct pgw_copy_options *co,
                  struct strbuf *out)
{
    idx_t n = duckdb_data_chunk_get_size(chunk);
    if (r->ncell && encode_cells(r, chunk) != 0)
        return -1;
    struct vv stack[MAX_STACK_COLS];
    struct vv *v = r->ncol <= MAX_STACK_COLS ? stack : calloc(r->ncol, sizeof *v);
    if (!v)
        return -1;
    views(r, chunk, v);
    struct strbuf field;
    sb_init(&field, 0);
    int rc = 0;
    for (idx_t i = 0; i < n && rc == 0; i++) {
        size_t m = pgw_msg_begin(out, 'd');
        for (size_t c = 0; c < r->ncol && rc == 0; c++) {
            if (c && sb_addc(out, co->delimiter) != 0)
                rc = -1;
            const struct col *col = &r->cols[c];
            if (col->k == EK_NULL || !valid_at(v[c].valid, i)) {
                rc = sb_adds(out, co->null_text);
                continue;
            }
            struct col text = *col;
            text.fmt = 0;
            sb_reset(&field);
            rc = put_value(r, &text, &v[c], i, &field);
            if (rc == 0)
                rc = copy_field(out, field.buf ? field.buf : "", field.len, co);
        }
        if (rc == 0)
            rc = sb_addc(out, '\n');
        pgw_msg_end(out, m);
    }
    sb_release(&field);
    if (v != stack)
        free(v);
    return out->overflow ? -1 : rc;
}

void pgw_write_row_description(struct strbuf *out, size_t ncol, const char *const *names,
                               const duckdb_logical_type *types, const int16_t *formats,
                               size_t nformats)
{
    size_t m = pgw_msg_begin(out, 'T');
    pgw_put_i16(out, (int16_t)ncol);
    for (size_t i = 0; i < ncol; i++) {
        struct pgw_typeinfo ti = pgw_type_of(types[i]);
        int16_t f = nformats == 0 ? 0 : nformats == 1 ? formats[0] : i < nformats ? formats[i] : 0;
        pgw_put_str(out, names[i] ? names[i] : "?column?");
        pgw_put_i32(out, 0);
        pgw_put_i16(out, 0);
        pgw_put_i32(out, (int32_t)ti.oid);
        pgw_put_i16(out, ti.typlen);
        pgw_put_i32(out, ti.typmod);
        pgw_put_i16(out, f);
    }
    pgw_msg_end(out, m);
}
