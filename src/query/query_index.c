/*
 * The glue between a validated query request and the native equality index
 * (src/index): the request's eq/in predicates become index_term lists in the
 * index's key domains, so the handler can answer the query with index_match
 * and the row store instead of DuckDB. Eligibility and value normalisation
 * are query_index_terms' (query_sql.c); this file only changes the form.
 * Also the range-count form (query_index_range): comparisons on one column
 * with sorted values, their values in the column's unit.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "index/index.h"
#include "query/query_int.h"
#include "util/timeutil.h"

bool query_index_match_terms(const struct query_request *req, const struct vt_index *ix,
                             struct arena *arena, const struct index_term **out_terms,
                             size_t *out_n, bool *out_empty)
{
    const struct query_index_term *qt;
    size_t n;
    *out_terms = NULL;
    *out_n = 0;
    *out_empty = false;
    if (!ix || !query_index_terms(req, arena, &qt, &n))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!index_has_column(ix, qt[i].col))
            return false;
    struct index_term *terms = arena_alloc(arena, n * sizeof *terms);
    if (!terms)
        return false;
    for (size_t i = 0; i < n; i++) {
        enum index_domain dom = index_column_domain(ix, qt[i].col);
        struct index_key *keys = arena_calloc(arena, (qt[i].nvals ? qt[i].nvals : 1) * sizeof *keys);
        if (!keys)
            return false;
        for (size_t k = 0; k < qt[i].nvals; k++) {
            const struct query_value *v = &qt[i].vals[k];
            keys[k].domain = dom;
            switch (dom) {
            case INDEX_DOMAIN_INT:
                keys[k].i = v->u.i;
                break;
            case INDEX_DOMAIN_UINT:
                /* >= 0: out-of-range values were dropped; DOUBLE only for
                 * integral values in [2^63, 2^64) */
                keys[k].u = v->kind == QUERY_VALUE_DOUBLE ? (uint64_t)v->u.d : (uint64_t)v->u.i;
                break;
            case INDEX_DOMAIN_BOOL:
                keys[k].i = v->u.b ? 1 : 0;
                break;
            case INDEX_DOMAIN_STRING:
                keys[k].s = v->u.s.ptr;
                keys[k].len = v->u.s.len;
                break;
            }
        }
        /* index_match wants n_keys >= 1; a term that no value can satisfy
         * makes the whole conjunction empty. */
        if (qt[i].nvals == 0)
            *out_empty = true;
        terms[i] = (struct index_term){qt[i].col, keys, qt[i].nvals};
    }
    *out_terms = terms;
    *out_n = n;
    return true;
}

/* "YYYY-MM-DD HH:MM:SS[.ffffff]" (the canonical text type_temporal makes for
 * a TIMESTAMP, "+00" after it for a TIMESTAMPTZ; ".fffffffff" for a
 * TIMESTAMP_NS) as seconds since the epoch and the fraction in units of
 * 10^-digits s; "YYYY-MM-DD" (a DATE) as days. False on any other form. */
static bool canon_days(const char *s, size_t n, int64_t *out)
{
    int y, m, d;
    if (n < 10 || s[4] != '-' || s[7] != '-' || !time_digits(s, 4, &y) ||
        !time_digits(s + 5, 2, &m) || !time_digits(s + 8, 2, &d) || m < 1 || m > 12)
        return false;
    *out = time_days_from_civil(y, m, d);
    return true;
}

static bool canon_seconds(const char *s, size_t n, int digits, int64_t *secs, int *frac)
{
    int64_t days;
    int hh, mi, ss;
    *frac = 0;
    if ((n != 19 && n != 20 + (size_t)digits) || !canon_days(s, n, &days) || s[10] != ' ' ||
        s[13] != ':' || s[16] != ':' || !time_digits(s + 11, 2, &hh) ||
        !time_digits(s + 14, 2, &mi) || !time_digits(s + 17, 2, &ss))
        return false;
    if (n > 19 && (s[19] != '.' || !time_digits(s + 20, digits, frac)))
        return false;
    *secs = days * 86400 + hh * 3600 + mi * 60 + ss;
    return true;
}

static bool canon_micros(const char *s, size_t n, bool tz, int64_t *out)
{
    int64_t secs;
    int frac;
    if (tz) {
        if (n < 3 || memcmp(s + n - 3, "+00", 3) != 0)
            return false;
        n -= 3;
    }
    if (!canon_seconds(s, n, 6, &secs, &frac))
        return false;
    *out = secs * 1000000 + frac;
    return true;
}

/* TIMESTAMP_NS holds 1677-09-21 to 2262-04-11; a bound past that fails
 * DuckDB's cast (a 400 from DuckDB), so only years 1678..2261 are answered
 * here. */
static bool canon_nanos(const char *s, size_t n, int64_t *out)
{
    int64_t secs;
    int frac, year;
    if (!canon_seconds(s, n, 9, &secs, &frac) || !time_digits(s, 4, &year) || year < 1678 ||
        year > 2261)
        return false;
    *out = secs * 1000000000 + frac;
    return true;
}

/* One predicate value as a range bound on a column of type t (see
 * index_range_term: the value as DuckDB compares it with the column). */
static bool range_value(duckdb_type t, const struct query_value *v, struct index_range_term *out)
{
    out->is_double = false;
    switch (t) {
    case DUCKDB_TYPE_TIMESTAMP:
    case DUCKDB_TYPE_TIMESTAMP_S:
    case DUCKDB_TYPE_TIMESTAMP_MS:
    case DUCKDB_TYPE_TIMESTAMP_TZ: {
        /* TIMESTAMP_S/MS take a TIMESTAMP bound, compared as TIMESTAMP:
         * microseconds, the column's values scaled up */
        bool tz = t == DUCKDB_TYPE_TIMESTAMP_TZ;
        if (v->kind != QUERY_VALUE_VARCHAR || strcmp(v->cast, tz ? "TIMESTAMPTZ" : "TIMESTAMP"))
            return false;
        return canon_micros(v->u.s.ptr, v->u.s.len, tz, &out->i);
    }
    case DUCKDB_TYPE_TIMESTAMP_NS:
        if (v->kind != QUERY_VALUE_VARCHAR || strcmp(v->cast, "TIMESTAMP_NS"))
            return false;
        return canon_nanos(v->u.s.ptr, v->u.s.len, &out->i);
    case DUCKDB_TYPE_DATE:
        /* a date-time against a DATE column: DuckDB casts the column to
         * TIMESTAMP (and fails on dates past its range): left to DuckDB */
        if (v->kind != QUERY_VALUE_VARCHAR || strcmp(v->cast, "DATE") || v->u.s.len != 10)
            return false;
        return canon_days(v->u.s.ptr, v->u.s.len, &out->i);
    case DUCKDB_TYPE_FLOAT:
        /* CAST(? AS FLOAT): a double past FLOAT's range fails the cast (a
         * 400 from DuckDB): left to DuckDB */
        if (strcmp(v->cast, "FLOAT"))
            return false;
        if (v->kind == QUERY_VALUE_DOUBLE) {
            if (!(fabs(v->u.d) <= FLT_MAX))
                return false;
            out->is_double = true;
            out->d = v->u.d;
            return true;
        }
        if (v->kind != QUERY_VALUE_INT64)
            return false;
        out->i = v->u.i;
        return true;
    case DUCKDB_TYPE_DOUBLE:
    case DUCKDB_TYPE_DECIMAL:
    case DUCKDB_TYPE_UHUGEINT:
        /* a DECIMAL or UHUGEINT always takes DOUBLE values
         * (query_value_from_json) */
        if (v->kind == QUERY_VALUE_DOUBLE && strcmp(v->cast, "DOUBLE") == 0) {
            out->is_double = true;
            out->d = v->u.d;
            return true;
        }
        if (t != DUCKDB_TYPE_DOUBLE || v->kind != QUERY_VALUE_INT64 || strcmp(v->cast, "BIGINT"))
            return false;
        out->i = v->u.i;
        return true;
    default:
        /* integer columns: BIGINT values (fractions and HUGEINT casts go to
         * DuckDB) */
        if (v->kind != QUERY_VALUE_INT64 || strcmp(v->cast, "BIGINT"))
            return false;
        out->i = v->u.i;
        return true;
    }
}

bool query_index_range(const struct query_request *req, const struct vt_index *ix,
                       struct arena *arena, size_t *out_col,
                       const struct index_range_term **out_terms, size_t *out_n)
{
    *out_terms = NULL;
    *out_n = 0;
    if (!ix || (req->mode != QUERY_COUNT && req->mode != QUERY_PAGED) || req->count_result ||
        req->npreds == 0)
        return false;
    size_t col = req->preds[0].ref.idx;
    if (!index_has_range(ix, col))
        return false;
    duckdb_type t = req->schema->cols[col].type;
    struct index_range_term *terms = arena_alloc(arena, 2 * req->npreds * sizeof *terms);
    if (!terms)
        return false;
    size_t n = 0;
    for (size_t i = 0; i < req->npreds; i++) {
        const struct query_pred *p = &req->preds[i];
        if (p->ref.idx != col || p->ref.is_agg || p->ref.is_group)
            return false;
        switch (p->op) {
        case QUERY_OP_EQ:
        case QUERY_OP_BETWEEN:
            if (p->nvals != (p->op == QUERY_OP_EQ ? 1u : 2u) ||
                !range_value(t, &p->vals[0], &terms[n]) ||
                !range_value(t, &p->vals[p->nvals - 1], &terms[n + 1]))
                return false;
            terms[n++].op = INDEX_RANGE_GE;
            terms[n++].op = INDEX_RANGE_LE;
            break;
        case QUERY_OP_GT:
        case QUERY_OP_GTE:
        case QUERY_OP_LT:
        case QUERY_OP_LTE:
            if (p->nvals != 1 || !range_value(t, &p->vals[0], &terms[n]))
                return false;
            terms[n++].op = p->op == QUERY_OP_GT    ? INDEX_RANGE_GT
                            : p->op == QUERY_OP_GTE ? INDEX_RANGE_GE
                            : p->op == QUERY_OP_LT  ? INDEX_RANGE_LT
                                                    : INDEX_RANGE_LE;
            break;
        default:
            return false;
        }
    }
    *out_col = col;
    *out_terms = terms;
    *out_n = n;
    return true;
}
