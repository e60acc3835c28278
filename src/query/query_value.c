/*
 * Typing of predicate values: which JSON values a column accepts, what SQL type
 * the bound parameter is cast to, and the ISO-8601 parser that turns date and
 * time strings into canonical text DuckDB's cast always accepts. Validating
 * dates here, rather than mapping DuckDB's cast errors, is what makes a
 * malformed date a 400 with a useful message instead of a failed execution.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "query/query_int.h"
#include "util/text.h"
#include "util/limits.h"
#include "util/timeutil.h"

enum query_class query_class_of(duckdb_type t)
{
    switch (t) {
    case DUCKDB_TYPE_BOOLEAN:
        return QC_BOOL;
    case DUCKDB_TYPE_TINYINT:
    case DUCKDB_TYPE_SMALLINT:
    case DUCKDB_TYPE_INTEGER:
    case DUCKDB_TYPE_BIGINT:
    case DUCKDB_TYPE_UTINYINT:
    case DUCKDB_TYPE_USMALLINT:
    case DUCKDB_TYPE_UINTEGER:
    case DUCKDB_TYPE_UBIGINT:
    case DUCKDB_TYPE_HUGEINT:
        return QC_INT;
    case DUCKDB_TYPE_UHUGEINT:
        /* UHUGEINT vs BIGINT compares as HUGEINT and fails above 2^127:
         * compare with DOUBLE values, like DECIMAL. */
        return QC_DECIMAL;
    case DUCKDB_TYPE_FLOAT:
        return QC_REAL;
    case DUCKDB_TYPE_DOUBLE:
        return QC_DOUBLE;
    case DUCKDB_TYPE_DECIMAL:
        return QC_DECIMAL;
    case DUCKDB_TYPE_VARCHAR:
        return QC_STRING;
    case DUCKDB_TYPE_ENUM:
        return QC_ENUM;
    case DUCKDB_TYPE_UUID:
        return QC_UUID;
    case DUCKDB_TYPE_DATE:
        return QC_DATE;
    case DUCKDB_TYPE_TIME:
        return QC_TIME;
    case DUCKDB_TYPE_TIME_TZ:
        return QC_TIMETZ;
    case DUCKDB_TYPE_TIMESTAMP:
    case DUCKDB_TYPE_TIMESTAMP_S:
    case DUCKDB_TYPE_TIMESTAMP_MS:
        return QC_TS;
    case DUCKDB_TYPE_TIMESTAMP_NS:
        return QC_TS_NS;
    case DUCKDB_TYPE_TIMESTAMP_TZ:
        return QC_TSTZ;
    case DUCKDB_TYPE_LIST:
    case DUCKDB_TYPE_STRUCT:
    case DUCKDB_TYPE_MAP:
    case DUCKDB_TYPE_ARRAY:
    case DUCKDB_TYPE_UNION:
        return QC_NESTED;
    default:
        return QC_OTHER;
    }
}

bool query_class_numeric(enum query_class c)
{
    return c == QC_INT || c == QC_REAL || c == QC_DOUBLE || c == QC_DECIMAL;
}

bool query_class_orderable(enum query_class c)
{
    return c != QC_NESTED;
}

bool query_class_comparable(enum query_class c)
{
    return c != QC_NESTED && c != QC_OTHER;
}

const char *query_type_name(duckdb_type t)
{
    switch (t) {
    case DUCKDB_TYPE_BOOLEAN: return "BOOLEAN";
    case DUCKDB_TYPE_TINYINT: return "TINYINT";
    case DUCKDB_TYPE_SMALLINT: return "SMALLINT";
    case DUCKDB_TYPE_INTEGER: return "INTEGER";
    case DUCKDB_TYPE_BIGINT: return "BIGINT";
    case DUCKDB_TYPE_UTINYINT: return "UTINYINT";
    case DUCKDB_TYPE_USMALLINT: return "USMALLINT";
    case DUCKDB_TYPE_UINTEGER: return "UINTEGER";
    case DUCKDB_TYPE_UBIGINT: return "UBIGINT";
    case DUCKDB_TYPE_HUGEINT: return "HUGEINT";
    case DUCKDB_TYPE_UHUGEINT: return "UHUGEINT";
    case DUCKDB_TYPE_FLOAT: return "FLOAT";
    case DUCKDB_TYPE_DOUBLE: return "DOUBLE";
    case DUCKDB_TYPE_DECIMAL: return "DECIMAL";
    case DUCKDB_TYPE_VARCHAR: return "VARCHAR";
    case DUCKDB_TYPE_BLOB: return "BLOB";
    case DUCKDB_TYPE_ENUM: return "ENUM";
    case DUCKDB_TYPE_UUID: return "UUID";
    case DUCKDB_TYPE_DATE: return "DATE";
    case DUCKDB_TYPE_TIME: return "TIME";
    case DUCKDB_TYPE_TIME_TZ: return "TIME WITH TIME ZONE";
    case DUCKDB_TYPE_TIME_NS: return "TIME_NS";
    case DUCKDB_TYPE_TIMESTAMP: return "TIMESTAMP";
    case DUCKDB_TYPE_TIMESTAMP_S: return "TIMESTAMP_S";
    case DUCKDB_TYPE_TIMESTAMP_MS: return "TIMESTAMP_MS";
    case DUCKDB_TYPE_TIMESTAMP_NS: return "TIMESTAMP_NS";
    case DUCKDB_TYPE_TIMESTAMP_TZ: return "TIMESTAMP WITH TIME ZONE";
    case DUCKDB_TYPE_INTERVAL: return "INTERVAL";
    case DUCKDB_TYPE_LIST: return "LIST";
    case DUCKDB_TYPE_STRUCT: return "STRUCT";
    case DUCKDB_TYPE_MAP: return "MAP";
    case DUCKDB_TYPE_ARRAY: return "ARRAY";
    case DUCKDB_TYPE_UNION: return "UNION";
    case DUCKDB_TYPE_BIT: return "BIT";
    case DUCKDB_TYPE_BIGNUM: return "BIGNUM";
    default: return "OTHER";
    }
}

const char *query_column_type_label(const struct query_column *c)
{
    return c->type_sql && c->type_sql[0] ? c->type_sql : query_type_name(c->type);
}

/* ---- message helpers ---- */

struct query_shown query_show(const char *s, size_t n)
{
    struct query_shown out;
    enum { CUT = 64 };
    size_t take = n;
    bool cut = false;
    if (take > CUT) {
        take = CUT;
        /* Back off to the start of a UTF-8 sequence so the message stays
         * valid UTF-8 (it ends up in a JSON body). */
        while (take > 0 && ((unsigned char)s[take] & 0xC0) == 0x80)
            take--;
        cut = true;
    }
    /* '"' + at most CUT bytes + "..." + '"' fits out.s: no stdio needed (it
     * runs once per predicate, errors or not). */
    _Static_assert(sizeof out.s > CUT + 5, "query_shown holds a cut string");
    take = strnlen(s, take); /* as "%.*s" did: a NUL ends the text */
    char *o = out.s;
    *o++ = '"';
    memcpy(o, s, take);
    o += take;
    if (cut) {
        memcpy(o, "...", 3);
        o += 3;
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

static unsigned char lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Levenshtein distance, case-insensitive, with an early exit above `cap`.
 * Both lengths are bounded by VT_MAX_COLUMN_NAME_BYTES by the callers. */
static size_t edit_distance(const char *a, size_t na, const char *b, size_t nb, size_t cap)
{
    size_t row[VT_MAX_COLUMN_NAME_BYTES + 1];
    if (nb > VT_MAX_COLUMN_NAME_BYTES || na > VT_MAX_COLUMN_NAME_BYTES)
        return cap + 1;
    for (size_t j = 0; j <= nb; j++)
        row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0], best = i;
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j];
            size_t cost = lower((unsigned char)a[i - 1]) == lower((unsigned char)b[j - 1]) ? 0 : 1;
            size_t v = diag + cost;
            if (up + 1 < v)
                v = up + 1;
            if (row[j - 1] + 1 < v)
                v = row[j - 1] + 1;
            row[j] = v;
            diag = up;
            if (v < best)
                best = v;
        }
        if (best > cap)
            return cap + 1;
    }
    return row[nb];
}

const char *query_suggest(const char *s, const char *const *cands, size_t n)
{
    size_t ns = strlen(s);
    if (ns == 0 || ns > VT_MAX_COLUMN_NAME_BYTES)
        return NULL;
    /* A third of the name, at least 1 and at most 3 edits: "prize" -> "price",
     * not "a" -> "b". */
    size_t cap = ns / 3;
    if (cap < 1)
        cap = 1;
    if (cap > 3)
        cap = 3;
    const char *best = NULL;
    size_t best_d = cap + 1;
    for (size_t i = 0; i < n; i++) {
        size_t nc = strlen(cands[i]);
        if ((nc > ns ? nc - ns : ns - nc) > cap)
            continue;
        size_t d = edit_distance(s, ns, cands[i], nc, cap);
        if (d < best_d) {
            best_d = d;
            best = cands[i];
        }
    }
    return best;
}

/* ---- ISO-8601 ---- */

static int digits(const char *s, size_t n, size_t at, size_t count)
{
    if (at + count > n)
        return -1;
    int v = 0;
    for (size_t i = 0; i < count; i++) {
        char c = s[at + i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    return v;
}

static bool is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
    static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : dim[m - 1];
}

/* Parses HH:MM[:SS[.f{1,9}]] at s[*at]; advances *at. */
static bool parse_time(const char *s, size_t n, size_t *at, struct query_iso *out, const char **why)
{
    size_t p = *at;
    int hh = digits(s, n, p, 2), mm = digits(s, n, p + 3, 2);
    if (hh < 0 || p + 2 >= n || s[p + 2] != ':' || mm < 0) {
        *why = "expected HH:MM";
        return false;
    }
    p += 5;
    int ss = 0;
    if (p < n && s[p] == ':') {
        ss = digits(s, n, p + 1, 2);
        if (ss < 0) {
            *why = "expected seconds after HH:MM:";
            return false;
        }
        p += 3;
        if (p < n && s[p] == '.') {
            p++;
            int nd = 0;
            long frac = 0;
            while (p < n && s[p] >= '0' && s[p] <= '9') {
                if (nd == 9) {
                    *why = "more than 9 fractional digits";
                    return false;
                }
                frac = frac * 10 + (s[p] - '0');
                nd++;
                p++;
            }
            if (nd == 0) {
                *why = "expected digits after the decimal point";
                return false;
            }
            for (int k = nd; k < 9; k++)
                frac *= 10;
            out->nanos = (int)frac;
            out->frac_digits = nd;
        }
    }
    if (hh > 23) {
        *why = "hour out of range";
        return false;
    }
    if (mm > 59) {
        *why = "minute out of range";
        return false;
    }
    if (ss > 59) {
        *why = "second out of range";
        return false;
    }
    out->has_time = true;
    out->hour = hh;
    out->minute = mm;
    out->second = ss;
    *at = p;
    return true;
}

/* Parses Z | ±HH | ±HHMM | ±HH:MM at s[*at] to the end of the string. */
static bool parse_offset(const char *s, size_t n, size_t *at, struct query_iso *out,
                         const char **why)
{
    size_t p = *at;
    if (p == n)
        return true;
    if (s[p] == 'Z' || s[p] == 'z') {
        out->has_offset = true;
        out->offset_sec = 0;
        *at = p + 1;
        return true;
    }
    if (s[p] != '+' && s[p] != '-') {
        *why = "unexpected text after the time";
        return false;
    }
    int sign = s[p] == '-' ? -1 : 1;
    int hh = digits(s, n, p + 1, 2), mm = 0;
    if (hh < 0) {
        *why = "expected a UTC offset as +HH:MM";
        return false;
    }
    p += 3;
    if (p < n) {
        if (s[p] == ':')
            p++;
        mm = digits(s, n, p, 2);
        if (mm < 0) {
            *why = "expected a UTC offset as +HH:MM";
            return false;
        }
        p += 2;
    }
    if (hh > 18 || mm > 59) {
        *why = "UTC offset out of range";
        return false;
    }
    out->has_offset = true;
    out->offset_sec = sign * (hh * 3600 + mm * 60);
    *at = p;
    return true;
}

bool query_iso_parse(const char *s, size_t n, struct query_iso *out, const char **why)
{
    memset(out, 0, sizeof *out);
    size_t p = 0;
    if (n >= 3 && s[2] == ':') {
        /* A time of day. */
        if (!parse_time(s, n, &p, out, why) || !parse_offset(s, n, &p, out, why))
            return false;
    } else {
        int y = digits(s, n, 0, 4), m = digits(s, n, 5, 2), d = digits(s, n, 8, 2);
        if (y < 0 || n < 10 || s[4] != '-' || m < 0 || s[7] != '-' || d < 0) {
            *why = "expected YYYY-MM-DD";
            return false;
        }
        if (y < 1) {
            *why = "year out of range";
            return false;
        }
        if (m < 1 || m > 12) {
            *why = "month out of range";
            return false;
        }
        if (d < 1 || d > days_in_month(y, m)) {
            *why = "day out of range";
            return false;
        }
        out->has_date = true;
        out->year = y;
        out->month = m;
        out->day = d;
        p = 10;
        if (p < n) {
            if (s[p] != 'T' && s[p] != 't' && s[p] != ' ') {
                *why = "expected T or a space between date and time";
                return false;
            }
            p++;
            if (!parse_time(s, n, &p, out, why) || !parse_offset(s, n, &p, out, why))
                return false;
        }
    }
    if (p != n) {
        *why = "unexpected trailing text";
        return false;
    }
    return true;
}

/* Moves a date-time with an offset to UTC (offset 0). False when the result
 * leaves years 1..9999. */
static bool to_utc(struct query_iso *t)
{
    if (!t->has_offset || t->offset_sec == 0) {
        t->offset_sec = 0;
        return true;
    }
    int64_t secs = time_days_from_civil(t->year, t->month, t->day) * 86400 + t->hour * 3600 +
                   t->minute * 60 + t->second - t->offset_sec;
    int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
    int64_t sod = secs - days * 86400;
    int64_t year;
    time_civil_from_days(days, &year, &t->month, &t->day);
    t->year = (int)year;
    t->hour = (int)(sod / 3600);
    t->minute = (int)(sod / 60 % 60);
    t->second = (int)(sod % 60);
    t->offset_sec = 0;
    return t->year >= 1 && t->year <= 9999;
}

/* Appends HH:MM:SS[.ffffff|.fffffffff] to buf. */
static int fmt_time(char *buf, size_t cap, const struct query_iso *t, bool ns)
{
    int n = snprintf(buf, cap, "%02d:%02d:%02d", t->hour, t->minute, t->second);
    if (t->nanos) {
        if (ns)
            n += snprintf(buf + n, cap - (size_t)n, ".%09d", t->nanos);
        else
            n += snprintf(buf + n, cap - (size_t)n, ".%06d", t->nanos / 1000);
    }
    return n;
}

/* ---- typing JSON values ---- */

static enum vt_err bad(struct vt_error *err, const char *slot, const char *what,
                       const char *expected, const json_t *v)
{
    const char *got = json_is_string(v)    ? "a string"
                      : json_is_integer(v) ? "an integer"
                      : json_is_real(v)    ? "a number"
                      : json_is_boolean(v) ? "a boolean"
                      : json_is_array(v)   ? "a list"
                      : json_is_object(v)  ? "an object"
                                           : "null";
    return vt_error_set(err, VT_ERR_INVALID_VALUE, "%s: expected %s for %s, got %s", slot,
                        expected, what, got);
}

static enum vt_err set_string(struct arena *a, const char *s, size_t n, const char *cast,
                              struct query_value *out, struct vt_error *err)
{
    char *copy = arena_strndup(a, s, n);
    if (!copy)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "query request too large for memory");
    out->kind = QUERY_VALUE_VARCHAR;
    out->u.s.ptr = copy;
    out->u.s.len = n;
    out->cast = cast;
    return VT_ERR_OK;
}

/* Accepts 8-4-4-4-12 hex digits (or 32 bare hex digits); writes the canonical
 * lowercase hyphenated form. */
static bool canon_uuid(const char *s, size_t n, char out[37])
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0, nd = 0;
    bool hyphens = n == 36;
    if (n != 36 && n != 32)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (hyphens && (i == 8 || i == 13 || i == 18 || i == 23)) {
            if (s[i] != '-')
                return false;
            continue;
        }
        int h = text_hexval(s[i]);
        if (h < 0)
            return false;
        if (nd == 8 || nd == 12 || nd == 16 || nd == 20)
            out[o++] = '-';
        out[o++] = hex[h];
        nd++;
    }
    out[o] = '\0';
    return nd == 32;
}

static enum vt_err type_temporal(struct arena *a, enum query_class c, const char *s, size_t n,
                                 const char *slot, const char *what, struct query_value *out,
                                 struct vt_error *err)
{
    struct query_iso t;
    const char *why = NULL;
    if (n > 64 || !query_iso_parse(s, n, &t, &why)) {
        const char *form = (c == QC_TIME || c == QC_TIMETZ) ? "an ISO-8601 time (HH:MM:SS)"
                                                            : "an ISO-8601 date or timestamp";
        return vt_error_set(err, VT_ERR_INVALID_VALUE, "%s: %s is not %s for %s (%s)", slot,
                            query_show(s, n).s, form, what, why ? why : "too long");
    }
    bool ns = c == QC_TS_NS;
    if (!ns && t.nanos % 1000 != 0)
        return vt_error_set(err, VT_ERR_INVALID_VALUE,
                            "%s: %s has more than microsecond precision, which %s cannot hold",
                            slot, query_show(s, n).s, what);
    char buf[64];
    int len = 0;
    const char *cast;
    if (c == QC_TIME || c == QC_TIMETZ) {
        if (t.has_date)
            return vt_error_set(err, VT_ERR_INVALID_VALUE,
                                "%s: %s is a date; %s takes a time of day (HH:MM:SS)", slot,
                                query_show(s, n).s, what);
        if (c == QC_TIME && t.has_offset)
            return vt_error_set(err, VT_ERR_INVALID_VALUE,
                                "%s: %s has a UTC offset; %s has no time zone", slot,
                                query_show(s, n).s, what);
        len = fmt_time(buf, sizeof buf, &t, false);
        if (c == QC_TIMETZ) {
            int off = t.offset_sec < 0 ? -t.offset_sec : t.offset_sec;
            len += snprintf(buf + len, sizeof buf - (size_t)len, "%c%02d:%02d",
                            t.offset_sec < 0 ? '-' : '+', off / 3600, off / 60 % 60);
            cast = "TIMETZ";
        } else {
            cast = "TIME";
        }
        return set_string(a, buf, (size_t)len, cast, out, err);
    }
    if (!t.has_date)
        return vt_error_set(err, VT_ERR_INVALID_VALUE,
                            "%s: %s is a time of day; %s takes a date or timestamp (YYYY-MM-DD)",
                            slot, query_show(s, n).s, what);
    if (!to_utc(&t))
        return vt_error_set(err, VT_ERR_INVALID_VALUE, "%s: %s is out of range in UTC", slot,
                            query_show(s, n).s);
    len = snprintf(buf, sizeof buf, "%04d-%02d-%02d", t.year, t.month, t.day);
    if (c == QC_DATE && !t.has_time)
        return set_string(a, buf, (size_t)len, "DATE", out, err);
    buf[len++] = ' ';
    len += fmt_time(buf + len, sizeof buf - (size_t)len, &t, ns);
    switch (c) {
    case QC_TSTZ:
        /* Explicit UTC: the session TimeZone must not change the instant. */
        len += snprintf(buf + len, sizeof buf - (size_t)len, "+00");
        cast = "TIMESTAMPTZ";
        break;
    case QC_TS_NS:
        cast = "TIMESTAMP_NS";
        break;
    default: /* QC_TS, and QC_DATE compared with a date-time */
        cast = "TIMESTAMP";
        break;
    }
    return set_string(a, buf, (size_t)len, cast, out, err);
}

bool query_value_int(enum query_class c, int64_t i, struct query_value *out)
{
    switch (c) {
    case QC_INT:
    case QC_DOUBLE:
    case QC_REAL:
        out->kind = QUERY_VALUE_INT64;
        out->u.i = i;
        out->cast = c == QC_REAL ? "FLOAT" : "BIGINT";
        return true;
    case QC_DECIMAL: /* always DOUBLE: see query_value_from_json */
        out->kind = QUERY_VALUE_DOUBLE;
        out->u.d = (double)i;
        out->cast = "DOUBLE";
        return true;
    default:
        return false;
    }
}

enum vt_err query_value_from_json(struct arena *a, enum query_class c, const json_t *v,
                                  const char *slot, const char *what, struct query_value *out,
                                  struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    switch (c) {
    case QC_BOOL:
        if (!json_is_boolean(v))
            return bad(err, slot, what, "true or false", v);
        out->kind = QUERY_VALUE_BOOL;
        out->u.b = json_is_true(v);
        out->cast = "BOOLEAN";
        return VT_ERR_OK;
    case QC_INT:
    case QC_REAL:
    case QC_DOUBLE:
    case QC_DECIMAL: {
        const char *cast_int = c == QC_REAL ? "FLOAT" : "BIGINT";
        const char *cast_dbl = c == QC_REAL ? "FLOAT" : "DOUBLE";
        if (c == QC_DECIMAL) {
            /* Always DOUBLE: DuckDB compares DECIMAL(38,20) with BIGINT as
             * DECIMAL(38,20) and fails to cast 10^18 ("Could not cast value"),
             * and UHUGEINT with BIGINT as HUGEINT; against DOUBLE neither can
             * fail. Integers up to 2^53 stay exact. */
            if (!json_is_integer(v) && !json_is_real(v))
                return bad(err, slot, what, "a number", v);
            double d = json_is_integer(v) ? (double)json_integer_value(v) : json_real_value(v);
            if (!isfinite(d))
                return vt_error_set(err, VT_ERR_INVALID_VALUE, "%s: number out of range", slot);
            out->kind = QUERY_VALUE_DOUBLE;
            out->u.d = d;
            out->cast = "DOUBLE";
            return VT_ERR_OK;
        }
        if (json_is_integer(v)) {
            query_value_int(c, (int64_t)json_integer_value(v), out);
            return VT_ERR_OK;
        }
        if (!json_is_real(v))
            return bad(err, slot, what, "a number", v);
        double d = json_real_value(v);
        if (!isfinite(d))
            return vt_error_set(err, VT_ERR_INVALID_VALUE, "%s: number out of range", slot);
        /* An integral value compares exactly as BIGINT (3.0 matches 3 even
         * next to values a double cannot hold); a fractional one as DOUBLE,
         * never rounded to the column's type. */
        if (d == trunc(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
            out->kind = QUERY_VALUE_INT64;
            out->u.i = (int64_t)d;
            out->cast = cast_int;
        } else {
            out->kind = QUERY_VALUE_DOUBLE;
            out->u.d = d;
            out->cast = cast_dbl;
            /* An integral double past int64 (1e19) against an integer column
             * casts to HUGEINT, exactly: as DOUBLE, UBIGINT 2^64-1 would
             * round to 2^64 and equal it. */
            if (c == QC_INT && d == trunc(d) && fabs(d) < 0x1p127)
                out->cast = "HUGEINT";
        }
        return VT_ERR_OK;
    }
    case QC_STRING:
    case QC_ENUM:
    case QC_UUID:
    case QC_DATE:
    case QC_TIME:
    case QC_TIMETZ:
    case QC_TS:
    case QC_TS_NS:
    case QC_TSTZ: {
        if (!json_is_string(v))
            return bad(err, slot, what,
                       c == QC_STRING || c == QC_ENUM ? "a string"
                       : c == QC_UUID                 ? "a UUID string"
                       : c == QC_TIME || c == QC_TIMETZ
                           ? "an ISO-8601 time string"
                           : "an ISO-8601 date or timestamp string",
                       v);
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (n > VT_MAX_STRING_VALUE_BYTES)
            return vt_error_set(err, VT_ERR_LIMIT_EXCEEDED, "%s: string longer than %d bytes",
                                slot, VT_MAX_STRING_VALUE_BYTES);
        if (memchr(s, '\0', n))
            return vt_error_set(err, VT_ERR_INVALID_VALUE, "%s: string contains a NUL character",
                                slot);
        if (c == QC_STRING || c == QC_ENUM)
            return set_string(a, s, n, "VARCHAR", out, err);
        if (c == QC_UUID) {
            char u[37];
            if (!canon_uuid(s, n, u))
                return vt_error_set(err, VT_ERR_INVALID_VALUE, "%s: %s is not a UUID for %s",
                                    slot, query_show(s, n).s, what);
            return set_string(a, u, 36, "UUID", out, err);
        }
        return type_temporal(a, c, s, n, slot, what, out, err);
    }
    default:
        return vt_error_set(err, VT_ERR_INVALID_OPERATOR,
                            "%s: %s cannot be compared with a value (only is_null and "
                            "is_not_null apply)",
                            slot, what);
    }
}
