/*
 * Parameter values of a Bind, text or binary, as the query values exec
 * binds (query.h's query_value), by the type the client declared (or DuckDB
 * inferred): integers, floats, booleans, bytea, numeric, temporal types,
 * uuid, json/jsonb, text; anything else arrives as text for DuckDB to cast.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "encode/json_format.h"
#include "pgwire/pgwire.h"
#include "query/query.h"
#include "util/arena.h"
#include "util/limits.h"

#define PG_EPOCH_DAYS 10957                    /* 2000-01-01 - 1970-01-01 */
#define PG_EPOCH_US ((int64_t)PG_EPOCH_DAYS * 86400 * 1000000)

/* Array types and their elements (types.c sends them, Bind receives them). */
static const struct {
    uint32_t elem, array;
} array_oids[] = {
    {PGW_OID_BOOL, 1000},      {PGW_OID_BYTEA, 1001},     {PGW_OID_CHAR, 1002},
    {PGW_OID_NAME, 1003},      {PGW_OID_INT2, 1005},      {PGW_OID_INT4, 1007},
    {PGW_OID_TEXT, 1009},      {PGW_OID_VARCHAR, 1015},   {PGW_OID_INT8, 1016},
    {PGW_OID_FLOAT4, 1021},    {PGW_OID_FLOAT8, 1022},    {PGW_OID_OID, 1028},
    {PGW_OID_TIMESTAMP, 1115}, {PGW_OID_DATE, 1182},      {PGW_OID_TIME, 1183},
    {PGW_OID_TIMESTAMPTZ, 1185}, {PGW_OID_INTERVAL, 1187}, {PGW_OID_NUMERIC, 1231},
    {PGW_OID_TIMETZ, 1270},    {PGW_OID_UUID, 2951},      {PGW_OID_JSON, 199},
    {PGW_OID_JSONB, 3807},     {PGW_OID_BIT, 1561},       {PGW_OID_VARBIT, 1563},
};

uint32_t pgw_array_oid(uint32_t elem_oid)
{
    for (size_t i = 0; i < sizeof array_oids / sizeof array_oids[0]; i++)
        if (array_oids[i].elem == elem_oid)
            return array_oids[i].array;
    return 0;
}

uint32_t pgw_array_elem(uint32_t oid)
{
    for (size_t i = 0; i < sizeof array_oids / sizeof array_oids[0]; i++)
        if (array_oids[i].array == oid)
            return array_oids[i].elem;
    return 0;
}

static uint64_t rd_be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static bool utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c == 0)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        int len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!len || i + (size_t)len > n)
            return false;
        uint32_t cp = c & (0x7F >> len);
        for (int k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += (size_t)len;
    }
    return true;
}

static enum vt_err text_value(const unsigned char *s, size_t n, struct arena *a,
                              struct query_value *out, struct vt_error *err)
{
    if (!utf8_valid(s, n))
        return vt_error_set(err, VT_ERR_PG_INVALID_TEXT,
                            "invalid byte sequence for encoding \"UTF8\" in a parameter");
    char *copy = arena_strndup(a, (const char *)s, n);
    if (!copy)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    out->kind = QUERY_VALUE_VARCHAR;
    out->u.s.ptr = copy;
    out->u.s.len = n;
    out->cast = "VARCHAR";
    return VT_ERR_OK;
}

static enum vt_err bad_text(struct vt_error *err, const char *type, const unsigned char *s,
                            size_t n)
{
    return vt_error_set(err, VT_ERR_PG_INVALID_TEXT, "invalid input syntax for type %s: \"%.*s\"",
                        type, (int)(n > 64 ? 64 : n), (const char *)s);
}

/* bytea input: hex (\x...) or the escape format (\\ and \ooo). */
static enum vt_err bytea_text(const unsigned char *s, size_t n, struct arena *a,
                              struct query_value *out, struct vt_error *err)
{
    unsigned char *b = arena_alloc(a, n + 1);
    if (!b)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    size_t o = 0;
    if (n >= 2 && s[0] == '\\' && s[1] == 'x') {
        for (size_t i = 2; i < n;) {
            if (isspace(s[i])) {
                i++;
                continue;
            }
            if (i + 1 >= n || !isxdigit(s[i]) || !isxdigit(s[i + 1]))
                return bad_text(err, "bytea", s, n);
            char h[3] = {(char)s[i], (char)s[i + 1], 0};
            b[o++] = (unsigned char)strtoul(h, NULL, 16);
            i += 2;
        }
    } else {
        for (size_t i = 0; i < n;) {
            if (s[i] != '\\') {
                b[o++] = s[i++];
            } else if (i + 1 < n && s[i + 1] == '\\') {
                b[o++] = '\\';
                i += 2;
            } else if (i + 3 < n + 0 && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
                       s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
                b[o++] = (unsigned char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 +
                                         (s[i + 3] - '0'));
                i += 4;
            } else {
                return bad_text(err, "bytea", s, n);
            }
        }
    }
    out->kind = QUERY_VALUE_BLOB;
    out->u.s.ptr = (const char *)b;
    out->u.s.len = o;
    out->cast = "BLOB";
    return VT_ERR_OK;
}

/* A text form DuckDB reads for the temporal and other binary inputs. */
static enum vt_err formatted(struct arena *a, const char *text, size_t n, struct query_value *out,
                             struct vt_error *err)
{
    return text_value((const unsigned char *)text, n, a, out, err);
}

/* The text of s without surrounding whitespace, NUL-terminated in buf; false
 * when empty or too long for buf. */
static bool trimmed(const unsigned char *s, size_t n, char *buf, size_t cap)
{
    size_t b = 0, e = n;
    while (b < e && isspace(s[b]))
        b++;
    while (e > b && isspace(s[e - 1]))
        e--;
    if (e - b == 0 || e - b >= cap)
        return false;
    memcpy(buf, s + b, e - b);
    buf[e - b] = '\0';
    return true;
}

static void set_null(struct query_value *out)
{
    out->kind = QUERY_VALUE_NULL;
    out->cast = "NULL";
}

/* One value in PostgreSQL's text input format. */
static enum vt_err text_scalar(const unsigned char *s, size_t n, uint32_t oid, struct arena *a,
                               struct query_value *out, struct vt_error *err)
{
    {
        switch (oid) {
        case PGW_OID_INT2: case PGW_OID_INT4: case PGW_OID_INT8: case PGW_OID_OID: {
            char buf[32];
            if (!trimmed(s, n, buf, sizeof buf))
                return bad_text(err, "integer", s, n);
            char *end;
            errno = 0;
            long long x = strtoll(buf, &end, 10);
            if (*end || errno || !(isdigit((unsigned char)buf[0]) || buf[0] == '-' || buf[0] == '+'))
                return bad_text(err, "integer", s, n);
            out->kind = QUERY_VALUE_INT64;
            out->u.i = x;
            out->cast = "BIGINT";
            return VT_ERR_OK;
        }
        case PGW_OID_FLOAT4: case PGW_OID_FLOAT8: {
            char buf[64];
            if (n == 0 || n >= sizeof buf)
                return bad_text(err, "double precision", s, n);
            memcpy(buf, s, n);
            buf[n] = '\0';
            char *end;
            double d;
            if (!strcasecmp(buf, "nan"))
                d = NAN;
            else if (!strcasecmp(buf, "infinity") || !strcasecmp(buf, "inf"))
                d = INFINITY;
            else if (!strcasecmp(buf, "-infinity") || !strcasecmp(buf, "-inf"))
                d = -INFINITY;
            else {
                d = strtod(buf, &end);
                if (end == buf || *end)
                    return bad_text(err, "double precision", s, n);
            }
            out->kind = QUERY_VALUE_DOUBLE;
            out->u.d = d;
            out->cast = "DOUBLE";
            return VT_ERR_OK;
        }
        case PGW_OID_BOOL: {
            char buf[8];
            if (!trimmed(s, n, buf, sizeof buf))
                return bad_text(err, "boolean", s, n);
            for (char *c = buf; *c; c++)
                *c = (char)tolower((unsigned char)*c);
            static const char *const yes[] = {"t", "true", "y", "yes", "on", "1", NULL};
            static const char *const no[] = {"f", "false", "n", "no", "off", "0", NULL};
            int val = -1;
            for (int i = 0; yes[i] && val < 0; i++)
                if (!strcmp(buf, yes[i]))
                    val = 1;
            for (int i = 0; no[i] && val < 0; i++)
                if (!strcmp(buf, no[i]))
                    val = 0;
            if (val < 0)
                return bad_text(err, "boolean", s, n);
            out->kind = QUERY_VALUE_BOOL;
            out->u.b = val == 1;
            out->cast = "BOOLEAN";
            return VT_ERR_OK;
        }
        case PGW_OID_BYTEA:
            return bytea_text(s, n, a, out, err);
        default:
            return text_value(s, n, a, out, err);
        }
    }
}

/* One value in PostgreSQL's binary send format. */
static enum vt_err binary_scalar(const unsigned char *s, size_t n, uint32_t oid, struct arena *a,
                                 struct query_value *out, struct vt_error *err)
{
    char buf[96];
    switch (oid) {
    case PGW_OID_BOOL:
        if (n != 1)
            goto size;
        out->kind = QUERY_VALUE_BOOL;
        out->u.b = s[0] != 0;
        out->cast = "BOOLEAN";
        return VT_ERR_OK;
    case PGW_OID_INT2: case PGW_OID_INT4: case PGW_OID_INT8: case PGW_OID_OID: {
        int want = oid == PGW_OID_INT2 ? 2 : oid == PGW_OID_INT8 ? 8 : 4;
        if ((int)n != want)
            goto size;
        uint64_t u = rd_be(s, want);
        int64_t x = want == 2 ? (int16_t)u : want == 4 ? (oid == PGW_OID_OID ? (int64_t)(uint32_t)u
                                                                             : (int32_t)u)
                                           : (int64_t)u;
        out->kind = QUERY_VALUE_INT64;
        out->u.i = x;
        out->cast = "BIGINT";
        return VT_ERR_OK;
    }
    case PGW_OID_FLOAT4: case PGW_OID_FLOAT8: {
        if (n != (oid == PGW_OID_FLOAT4 ? 4u : 8u))
            goto size;
        double d;
        if (n == 4) {
            uint32_t u = (uint32_t)rd_be(s, 4);
            float f;
            memcpy(&f, &u, 4);
            d = f;
        } else {
            uint64_t u = rd_be(s, 8);
            memcpy(&d, &u, 8);
        }
        out->kind = QUERY_VALUE_DOUBLE;
        out->u.d = d;
        out->cast = "DOUBLE";
        return VT_ERR_OK;
    }
    case PGW_OID_BYTEA: {
        char *b = arena_alloc(a, n ? n : 1);
        if (!b)
            return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        memcpy(b, s, n);
        out->kind = QUERY_VALUE_BLOB;
        out->u.s.ptr = b;
        out->u.s.len = n;
        out->cast = "BLOB";
        return VT_ERR_OK;
    }
    case PGW_OID_JSONB:
        if (n < 1 || s[0] != 1)
            return vt_error_set(err, VT_ERR_PG_PROTOCOL, "unsupported jsonb version number");
        return text_value(s + 1, n - 1, a, out, err);
    case PGW_OID_DATE: {
        if (n != 4)
            goto size;
        int32_t d = (int32_t)rd_be(s, 4);
        int64_t days = d == INT32_MAX ? INT32_MAX : d == INT32_MIN ? -INT32_MAX
                                                                   : (int64_t)d + PG_EPOCH_DAYS;
        char *e = json_fmt_date(buf, (int32_t)days);
        return formatted(a, buf + 1, (size_t)(e - buf) - 2, out, err);
    }
    case PGW_OID_TIMESTAMP: case PGW_OID_TIMESTAMPTZ: {
        if (n != 8)
            goto size;
        int64_t t = (int64_t)rd_be(s, 8);
        int64_t us;
        if (t == INT64_MAX || t == INT64_MIN) /* infinity, -infinity */
            us = t == INT64_MAX ? INT64_MAX : -INT64_MAX;
        else if (__builtin_add_overflow(t, PG_EPOCH_US, &us))
            return vt_error_set(err, VT_ERR_PG_PROTOCOL, "timestamp out of range in a parameter");
        char *e = json_fmt_timestamp(buf, us, JSON_TS_US, oid == PGW_OID_TIMESTAMPTZ);
        return formatted(a, buf + 1, (size_t)(e - buf) - 2, out, err);
    }
    case PGW_OID_TIME: {
        if (n != 8)
            goto size;
        long long us = (long long)(int64_t)rd_be(s, 8);
        if (us < 0 || us > 86400LL * 1000000)
            return vt_error_set(err, VT_ERR_PG_PROTOCOL, "time out of range in a parameter");
        int len = snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld.%06lld", us / 3600000000LL,
                           us / 60000000 % 60, us / 1000000 % 60, us % 1000000);
        return formatted(a, buf, (size_t)len, out, err);
    }
    case PGW_OID_INTERVAL: {
        if (n != 16)
            goto size;
        int len = snprintf(buf, sizeof buf, "%d months %d days %lld microseconds",
                           (int32_t)rd_be(s + 12, 4), (int32_t)rd_be(s + 8, 4),
                           (long long)(int64_t)rd_be(s, 8));
        return formatted(a, buf, (size_t)len, out, err);
    }
    case PGW_OID_UUID: {
        if (n != 16)
            goto size;
        static const char hex[] = "0123456789abcdef";
        char *o = buf;
        for (int i = 0; i < 16; i++) {
            if (i == 4 || i == 6 || i == 8 || i == 10)
                *o++ = '-';
            *o++ = hex[s[i] >> 4];
            *o++ = hex[s[i] & 15];
        }
        return formatted(a, buf, (size_t)(o - buf), out, err);
    }
    case PGW_OID_NUMERIC: {
        if (n < 8)
            goto size;
        int nd = (int16_t)rd_be(s, 2), weight = (int16_t)rd_be(s + 2, 2);
        unsigned sign = (unsigned)rd_be(s + 4, 2), dscale = (unsigned)rd_be(s + 6, 2);
        if (nd < 0 || n != 8 + 2 * (size_t)nd || dscale > 16383 ||
            (sign != 0 && sign != 0x4000 && sign != 0xC000))
            return vt_error_set(err, VT_ERR_PG_PROTOCOL, "invalid numeric in a parameter");
        if (sign == 0xC000)
            return formatted(a, "NaN", 3, out, err);
        struct strbuf t;
        sb_init(&t, 0);
        if (sign == 0x4000)
            sb_addc(&t, '-');
        /* integer part: groups with weight >= 0 */
        if (weight < 0)
            sb_addc(&t, '0');
        for (int g = 0; g <= weight; g++) {
            unsigned d = g < nd ? (unsigned)rd_be(s + 8 + 2 * g, 2) : 0;
            if (d > 9999) {
                sb_release(&t);
                return vt_error_set(err, VT_ERR_PG_PROTOCOL, "invalid numeric in a parameter");
            }
            if (g == 0)
                sb_addf(&t, "%u", d);
            else
                sb_addf(&t, "%04u", d);
        }
        if (dscale) {
            sb_addc(&t, '.');
            unsigned written = 0;
            for (int g = weight + 1; written < dscale; g++) {
                unsigned d = g >= 0 && g < nd ? (unsigned)rd_be(s + 8 + 2 * g, 2) : 0;
                char gd[5];
                snprintf(gd, sizeof gd, "%04u", d > 9999 ? 0 : d);
                for (int k = 0; k < 4 && written < dscale; k++, written++)
                    sb_addc(&t, gd[k]);
            }
        }
        enum vt_err rc = t.overflow ? vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL)
                                    : formatted(a, t.buf, t.len, out, err);
        sb_release(&t);
        return rc;
    }
    case 0:
    case PGW_OID_TEXT: case PGW_OID_VARCHAR: case PGW_OID_NAME: case PGW_OID_UNKNOWN:
    case PGW_OID_JSON: case PGW_OID_CHAR: case 1042 /* bpchar */:
        return text_value(s, n, a, out, err);
    default:
        return vt_error_set(err, VT_ERR_NOT_IMPLEMENTED,
                            "binary parameters of type %u are not supported; send them as text",
                            oid);
    }
size:
    return vt_error_set(err, VT_ERR_PG_PROTOCOL,
                        "incorrect binary data format in a parameter of type %u", oid);
}

/* ------------------------------------------------------------------ arrays */

/* The DuckDB type a list of elements of type oid binds as (query_value's
 * cast of a list: "<type>[]"). */
static const char *list_cast(uint32_t elem)
{
    switch (elem) {
    case PGW_OID_BOOL: return "BOOLEAN[]";
    case PGW_OID_INT2: case PGW_OID_INT4: case PGW_OID_INT8: case PGW_OID_OID: return "BIGINT[]";
    case PGW_OID_FLOAT4: case PGW_OID_FLOAT8: case PGW_OID_NUMERIC: return "DOUBLE[]";
    case PGW_OID_DATE: return "DATE[]";
    case PGW_OID_TIMESTAMP: return "TIMESTAMP[]";
    case PGW_OID_TIMESTAMPTZ: return "TIMESTAMPTZ[]";
    case PGW_OID_TIME: return "TIME[]";
    case PGW_OID_INTERVAL: return "INTERVAL[]";
    case PGW_OID_UUID: return "UUID[]";
    case PGW_OID_BYTEA: return "BLOB[]";
    default: return "VARCHAR[]";
    }
}

/* Numerics arrive as their text and bind as DOUBLE items. */
static enum vt_err numeric_item(struct query_value *v, struct vt_error *err)
{
    if (v->kind != QUERY_VALUE_VARCHAR)
        return VT_ERR_OK;
    char *end;
    double d = strtod(v->u.s.ptr, &end);
    if (end == v->u.s.ptr || *end)
        return vt_error_set(err, VT_ERR_PG_INVALID_TEXT,
                            "invalid input syntax for type numeric: \"%.64s\"", v->u.s.ptr);
    v->kind = QUERY_VALUE_DOUBLE;
    v->u.d = d;
    v->cast = "DOUBLE";
    return VT_ERR_OK;
}

struct items {
    struct query_value *v;
    size_t n, cap;
    uint32_t elem;
    struct arena *a;
    struct vt_error *err;
};

static struct query_value *next_item(struct items *it)
{
    if (it->n == it->cap) {
        size_t cap = it->cap ? it->cap * 2 : 16;
        if (cap > VT_PGWIRE_MAX_ARRAY_ITEMS)
            cap = VT_PGWIRE_MAX_ARRAY_ITEMS;
        if (it->n == cap) {
            vt_error_set(it->err, VT_ERR_LIMIT_EXCEEDED,
                         "an array parameter may hold at most %d elements",
                         VT_PGWIRE_MAX_ARRAY_ITEMS);
            return NULL;
        }
        struct query_value *nv = arena_alloc(it->a, cap * sizeof *nv);
        if (!nv) {
            vt_error_set(it->err, VT_ERR_OUT_OF_MEMORY, NULL);
            return NULL;
        }
        if (it->n)
            memcpy(nv, it->v, it->n * sizeof *nv);
        it->v = nv;
        it->cap = cap;
    }
    struct query_value *v = &it->v[it->n++];
    memset(v, 0, sizeof *v);
    return v;
}

static bool text_item(void *ctx, const char *s, size_t n, bool is_null)
{
    struct items *it = ctx;
    struct query_value *v = next_item(it);
    if (!v)
        return false;
    if (is_null) {
        set_null(v);
        return true;
    }
    if (text_scalar((const unsigned char *)s, n, it->elem, it->a, v, it->err) != VT_ERR_OK)
        return false;
    return it->elem != PGW_OID_NUMERIC || numeric_item(v, it->err) == VT_ERR_OK;
}

static void set_list(struct query_value *out, const struct items *it)
{
    out->kind = QUERY_VALUE_LIST;
    out->u.list.items = it->v;
    out->u.list.n = it->n;
    out->cast = list_cast(it->elem);
}

/* Escapes of an array element: backslash takes the next byte as it is. */
static size_t unescape(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n)
            i++;
        out[o++] = s[i];
    }
    return o;
}

enum vt_err pgw_array_parse(const char *s, size_t n, pgw_array_item_fn item, void *ctx,
                            struct vt_error *err)
{
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i]))
        i++;
    if (i < n && s[i] == '[') { /* dimension decoration: [1:3]= */
        while (i < n && s[i] != '=')
            i++;
        if (i == n)
            goto bad;
        i++;
        while (i < n && isspace((unsigned char)s[i]))
            i++;
    }
    if (i == n || s[i] != '{')
        goto bad;
    i++;
    char *buf = malloc(n + 1);
    if (!buf)
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
    enum vt_err rc = VT_ERR_OK;
    bool first = true;
    for (;;) {
        while (i < n && isspace((unsigned char)s[i]))
            i++;
        if (i < n && s[i] == '}' && first) {
            i++;
            break;
        }
        if (i == n || s[i] == '{') { /* nested: more than one dimension */
            rc = vt_error_set(err, VT_ERR_NOT_IMPLEMENTED,
                              "multidimensional arrays are not supported");
            goto out;
        }
        size_t len;
        bool null = false;
        if (s[i] == '"') {
            size_t b = ++i;
            while (i < n && s[i] != '"')
                i += s[i] == '\\' ? 2 : 1;
            if (i >= n)
                goto bad_out;
            len = unescape(s + b, i - b, buf);
            i++;
        } else {
            size_t b = i;
            while (i < n && s[i] != ',' && s[i] != '}' && s[i] != '"' && s[i] != '{')
                i += s[i] == '\\' ? 2 : 1;
            if (i > n)
                goto bad_out;
            size_t e = i;
            while (e > b && isspace((unsigned char)s[e - 1]))
                e--;
            if (e == b)
                goto bad_out;
            null = e - b == 4 && !strncasecmp(s + b, "null", 4);
            len = unescape(s + b, e - b, buf);
        }
        buf[len] = '\0';
        if (!item(ctx, buf, len, null)) {
            rc = err->code ? err->code : vt_error_set(err, VT_ERR_PG_INVALID_TEXT, "%s",
                                                      "invalid array element");
            goto out;
        }
        first = false;
        while (i < n && isspace((unsigned char)s[i]))
            i++;
        if (i < n && s[i] == ',') {
            i++;
            continue;
        }
        if (i < n && s[i] == '}') {
            i++;
            break;
        }
        goto bad_out;
    }
    while (i < n && isspace((unsigned char)s[i]))
        i++;
    if (i != n)
        goto bad_out;
out:
    free(buf);
    return rc;
bad_out:
    free(buf);
bad:
    return vt_error_set(err, VT_ERR_PG_INVALID_TEXT, "malformed array literal: \"%.*s\"",
                        (int)(n > 64 ? 64 : n), s);
}

/* A binary array: ndim, has-null flag, element type, then per dimension its
 * size and lower bound, then each element as a length (-1 NULL) and bytes. */
static enum vt_err binary_array(const unsigned char *s, size_t n, struct items *it,
                                struct vt_error *err)
{
    if (n < 12)
        goto bad;
    int32_t ndim = (int32_t)rd_be(s, 4);
    uint32_t elem = (uint32_t)rd_be(s + 8, 4);
    if (ndim < 0 || ndim > 6)
        goto bad;
    if (ndim > 1)
        return vt_error_set(err, VT_ERR_NOT_IMPLEMENTED,
                            "multidimensional arrays are not supported");
    if (elem && it->elem && elem != it->elem && pgw_array_oid(elem) == 0)
        goto bad;
    if (elem)
        it->elem = elem;
    size_t off = 12;
    int64_t count = 0;
    if (ndim == 1) {
        if (n < 20)
            goto bad;
        count = (int32_t)rd_be(s + 12, 4);
        off = 20;
        if (count < 0)
            goto bad;
    }
    for (int64_t k = 0; k < count; k++) {
        if (off + 4 > n)
            goto bad;
        int32_t len = (int32_t)rd_be(s + off, 4);
        off += 4;
        struct query_value *v = next_item(it);
        if (!v)
            return err->code;
        if (len < 0) {
            set_null(v);
            continue;
        }
        if ((size_t)len > n - off)
            goto bad;
        if (binary_scalar(s + off, (size_t)len, it->elem, it->a, v, err) != VT_ERR_OK)
            return err->code;
        if (it->elem == PGW_OID_NUMERIC && numeric_item(v, err) != VT_ERR_OK)
            return err->code;
        off += (size_t)len;
    }
    if (off != n)
        goto bad;
    return VT_ERR_OK;
bad:
    return vt_error_set(err, VT_ERR_PG_PROTOCOL, "incorrect binary data format in an array "
                        "parameter");
}

enum vt_err pgw_param_decode(const struct pgw_value *v, uint32_t oid, struct arena *a,
                             struct query_value *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    if (v->len < 0) {
        set_null(out);
        return VT_ERR_OK;
    }
    const unsigned char *s = v->data ? v->data : (const unsigned char *)"";
    size_t n = (size_t)v->len;
    uint32_t elem = pgw_array_elem(oid);
    if (!elem)
        return v->format == 0 ? text_scalar(s, n, oid, a, out, err)
                              : binary_scalar(s, n, oid, a, out, err);
    struct items it = {.elem = elem, .a = a, .err = err};
    if (v->format == 0) {
        if (pgw_array_parse((const char *)s, n, text_item, &it, err) != VT_ERR_OK)
            return err->code;
    } else if (binary_array(s, n, &it, err) != VT_ERR_OK) {
        return err->code;
    }
    set_list(out, &it);
    return VT_ERR_OK;
}

enum vt_err pgw_param_decode_untyped_array(const struct pgw_value *v, struct arena *a,
                                           struct query_value *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    struct items it = {.elem = PGW_OID_TEXT, .a = a, .err = err};
    if (pgw_array_parse((const char *)v->data, (size_t)v->len, text_item, &it, err) != VT_ERR_OK)
        return err->code;
    set_list(out, &it);
    if (it.n == 0) /* no item to say the type: DuckDB takes the one it needs */
        out->cast = "NULL[]";
    return VT_ERR_OK;
}
