/*
 * Typed cells as JSON (index_row_json): each value through the same
 * formatter as the JSON encoder of DuckDB chunks (json_format.h), so an
 * answer from the fast path is byte for byte the answer DuckDB's path gives.
 * Rows here are few (lookups, short pages): a switch per cell is fine.
 */
#include "index/index_internal.h"

#include <string.h>

#include "encode/json_format.h"

/* Room one cell needs (plus JSON_FMT_SLACK). */
static size_t cell_room(const struct ix_col *c, const struct index_cell *cell)
{
    if (cell->null)
        return 4;
    if (c->ck == IX_CK_BYTES || c->ck == IX_CK_JSON) {
        size_t n = duckdb_string_t_length(cell->v.s);
        switch (c->type) {
        case DUCKDB_TYPE_BLOB: return json_base64_max(n);
        case DUCKDB_TYPE_BIT: return 8 * n + 2;
        case DUCKDB_TYPE_BIGNUM: return json_bignum_max(n);
        default: return c->ck == IX_CK_JSON ? n : json_string_max(n); /* JSON alias: either */
        }
    }
    return JSON_FMT_MAX_INTERVAL + 8;
}

static char *cell_json(char *o, const struct ix_col *c, const struct index_cell *cell)
{
    if (cell->null)
        return json_fmt_null(o);
    const union { int64_t i; uint64_t u; } *x = (const void *)cell->v.raw;
    switch (c->type) {
    case DUCKDB_TYPE_BOOLEAN: return json_fmt_bool(o, cell->v.b);
    case DUCKDB_TYPE_TINYINT: case DUCKDB_TYPE_SMALLINT: case DUCKDB_TYPE_INTEGER:
    case DUCKDB_TYPE_BIGINT:
        return json_fmt_i64(o, x->i);
    case DUCKDB_TYPE_UTINYINT: case DUCKDB_TYPE_USMALLINT: case DUCKDB_TYPE_UINTEGER:
    case DUCKDB_TYPE_UBIGINT:
        return json_fmt_u64(o, x->u);
    case DUCKDB_TYPE_HUGEINT: return json_fmt_i128(o, cell->v.h.upper, cell->v.h.lower);
    case DUCKDB_TYPE_UHUGEINT: return json_fmt_u128(o, cell->v.uh.upper, cell->v.uh.lower);
    case DUCKDB_TYPE_UUID: return json_fmt_uuid(o, cell->v.h.upper, cell->v.h.lower);
    case DUCKDB_TYPE_FLOAT: return json_fmt_float(o, cell->v.f);
    case DUCKDB_TYPE_DOUBLE: return json_fmt_double(o, cell->v.d);
    case DUCKDB_TYPE_DATE: return json_fmt_date(o, (int32_t)x->i);
    case DUCKDB_TYPE_TIME: return json_fmt_time(o, x->i);
    case DUCKDB_TYPE_TIME_TZ: return json_fmt_time_tz(o, x->u);
    case DUCKDB_TYPE_TIMESTAMP: return json_fmt_timestamp(o, x->i, JSON_TS_US, false);
    case DUCKDB_TYPE_TIMESTAMP_S: return json_fmt_timestamp(o, x->i, JSON_TS_S, false);
    case DUCKDB_TYPE_TIMESTAMP_MS: return json_fmt_timestamp(o, x->i, JSON_TS_MS, false);
    case DUCKDB_TYPE_TIMESTAMP_NS: return json_fmt_timestamp(o, x->i, JSON_TS_NS, false);
    case DUCKDB_TYPE_TIMESTAMP_TZ: return json_fmt_timestamp(o, x->i, JSON_TS_US, true);
    case DUCKDB_TYPE_INTERVAL:
        return json_fmt_interval(o, cell->v.iv.months, cell->v.iv.days, cell->v.iv.micros);
    case DUCKDB_TYPE_DECIMAL:
        if (c->ck == IX_CK_128)
            return json_fmt_decimal128(o, cell->v.h.upper, cell->v.h.lower, c->scale);
        return json_fmt_decimal64(o, x->i, c->scale);
    default:
        break;
    }
    duckdb_string_t s = cell->v.s;
    const char *p = duckdb_string_t_data(&s);
    size_t n = duckdb_string_t_length(s);
    if (c->ck == IX_CK_JSON || (c->json_alias && json_is_valid(p, n))) {
        if (n)
            memcpy(o, p, n);
        return o + n;
    }
    switch (c->type) {
    case DUCKDB_TYPE_BLOB: return json_fmt_base64(o, (const unsigned char *)p, n);
    case DUCKDB_TYPE_BIT: return json_fmt_bit(o, (const unsigned char *)p, n);
    case DUCKDB_TYPE_BIGNUM: {
        char *q = json_fmt_bignum(o, (const unsigned char *)p, n);
        return q ? q : json_fmt_null(o);
    }
    default: return json_fmt_string(o, p, n);
    }
}

int index_row_json(const struct index_row *row, struct strbuf *out)
{
    const struct index_fastpath *fp = row->fp;
    size_t n = row->cols ? row->n : fp->n_cols;
    if (sb_addc(out, '{') != 0)
        return -1;
    for (size_t k = 0; k < n; k++) {
        size_t c = row->cols ? row->cols[k] : k;
        const struct ix_col *col = &fp->cols[c];
        const struct index_cell *cell = &row->cells[c];
        size_t room = 1 + col->key_len + cell_room(col, cell) + JSON_FMT_SLACK;
        if (sb_grow(out, room) != 0)
            return -1;
        char *o = out->buf + out->len;
        if (k)
            *o++ = ',';
        memcpy(o, col->key, col->key_len);
        o += col->key_len;
        o = cell_json(o, col, cell);
        out->len = (size_t)(o - out->buf);
    }
    if (sb_addc(out, '}') != 0)
        return -1;
    return out->overflow ? -1 : 0;
}

size_t index_fastpath_columns(const struct index_fastpath *fp)
{
    return fp->n_cols;
}

duckdb_logical_type index_fastpath_column_type(const struct index_fastpath *fp, size_t col)
{
    return col < fp->n_cols ? fp->cols[col].ltype : NULL;
}

bool index_fastpath_column_json(const struct index_fastpath *fp, size_t col)
{
    return col < fp->n_cols && fp->cols[col].ck == IX_CK_JSON;
}
