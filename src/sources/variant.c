/*
 * Variant values (Delta reader features variantType, variantType-preview) as
 * JSON text. DuckDB 1.4.4 reads a Delta variant column as the Parquet group
 * it is stored in, STRUCT(value BLOB, metadata BLOB), without the VARIANT
 * annotation its own reader would convert; vitrine serves the column as JSON
 * (the schema says JSON) by decoding the Variant binary encoding (Parquet's
 * VariantEncoding.md) here, in the SQL function
 *
 *     vt_variant_json(metadata BLOB, value BLOB) -> VARCHAR
 *
 * which the Delta SELECT wraps in a CAST to JSON.
 *
 *   metadata   header (version 1, sorted flag, offset size), dictionary size,
 *              offsets, the key strings
 *   value      a header byte: primitive (null, booleans, int8..64, double,
 *              decimal4/8/16, date, timestamp(tz/ntz, micros/nanos), float,
 *              binary, string, time, uuid), short string, object (field ids
 *              into the dictionary, offsets, values), array (offsets, values)
 *
 * JSON for the primitives is the service's own (encode/json_format.h):
 * numbers exact, NaN/Inf null, dates and times as strings in RFC 3339 form,
 * binary base64, uuid text. A shredded value (typed_value) is not read: the
 * Delta resolver refuses such files naming variantShredding-preview.
 *
 * Input is untrusted: every offset is checked against its buffer, nesting is
 * bounded (VT_VARIANT_MAX_DEPTH), invalid UTF-8 becomes U+FFFD, and
 * tests/fuzz/fuzz_variant.c drives the decoder.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode/json_format.h"
#include "sources/sources_internal.h"
#include "util/limits.h"

struct vmeta {
    const uint8_t *dict;        /* the offsets */
    size_t n;                   /* dictionary size */
    unsigned osz;               /* offset size */
    const uint8_t *bytes;       /* the strings */
    size_t nbytes;
};

static uint64_t le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Room for `n` more bytes of formatted output (plus slack). */
static char *room(struct strbuf *sb, size_t n)
{
    if (sb_grow(sb, n + JSON_FMT_SLACK) < 0)
        return NULL;
    return sb->buf + sb->len;
}

static int done(struct strbuf *sb, char *end)
{
    sb->len = (size_t)(end - sb->buf);
    sb->buf[sb->len] = '\0';
    return 0;
}

/* The length of a valid UTF-8 sequence at s (0: invalid). */
static size_t utf8_len(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                                                          : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!len || len > n || (len == 2 && c < 0xC2))
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if (len == 3) {
        uint32_t cp = (uint32_t)(c & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
        if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
    } else if (len == 4) {
        uint32_t cp = (uint32_t)(c & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 |
                      (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
        if (cp < 0x10000 || cp > 0x10FFFF)
            return 0;
    }
    return len;
}

/* A JSON string of n bytes; invalid UTF-8 becomes U+FFFD. */
static int add_string(struct strbuf *sb, const uint8_t *s, size_t n)
{
    if (sb_addc(sb, '"') < 0)
        return -1;
    size_t i = 0;
    while (i < n) {
        size_t run = i, k;
        while (run < n && (k = utf8_len(s + run, n - run)) > 0)
            run += k;
        if (run > i) {
            char *o = room(sb, json_string_max(run - i));
            if (!o || done(sb, json_fmt_string_body(o, (const char *)s + i, run - i)) < 0)
                return -1;
            i = run;
        }
        if (i < n) {
            if (sb_adds(sb, "\xEF\xBF\xBD") < 0) /* U+FFFD */
                return -1;
            i++;
        }
    }
    return sb_addc(sb, '"');
}

static int add_value(struct strbuf *sb, const struct vmeta *m, const uint8_t *v, size_t n,
                     int depth, const char **why);

/* Primitive type ids (value header, basic type 0). */
enum { P_NULL, P_TRUE, P_FALSE, P_I8, P_I16, P_I32, P_I64, P_DOUBLE, P_DEC4, P_DEC8, P_DEC16,
       P_DATE, P_TS, P_TSNTZ, P_FLOAT, P_BINARY, P_STRING, P_TIME, P_TSNS, P_TSNTZNS, P_UUID };

static int add_primitive(struct strbuf *sb, unsigned id, const uint8_t *d, size_t n,
                         const char **why)
{
    static const unsigned char size[] = {0, 0, 0, 1, 2, 4, 8, 8, 5, 9, 17, 4, 8, 8, 4, 4, 4,
                                         8, 8, 8, 16};
    if (id > P_UUID) {
        *why = "unknown primitive type";
        return -1;
    }
    if (n < size[id]) {
        *why = "truncated primitive";
        return -1;
    }
    char *o = room(sb, JSON_FMT_MAX_INTERVAL);
    if (!o)
        return -1;
    switch (id) {
    case P_NULL: return done(sb, json_fmt_null(o));
    case P_TRUE: return done(sb, json_fmt_bool(o, true));
    case P_FALSE: return done(sb, json_fmt_bool(o, false));
    case P_I8: return done(sb, json_fmt_i64(o, (int8_t)d[0]));
    case P_I16: return done(sb, json_fmt_i64(o, (int16_t)le(d, 2)));
    case P_I32: return done(sb, json_fmt_i64(o, (int32_t)le(d, 4)));
    case P_I64: return done(sb, json_fmt_i64(o, (int64_t)le(d, 8)));
    case P_DOUBLE: {
        double x;
        uint64_t bits = le(d, 8);
        memcpy(&x, &bits, 8);
        return done(sb, json_fmt_double(o, x));
    }
    case P_FLOAT: {
        float x;
        uint32_t bits = (uint32_t)le(d, 4);
        memcpy(&x, &bits, 4);
        return done(sb, json_fmt_float(o, x));
    }
    case P_DEC4:
    case P_DEC8:
    case P_DEC16: {
        unsigned scale = d[0];
        if (scale > 38) {
            *why = "decimal scale over 38";
            return -1;
        }
        /* decimal4/8 sign-extended to 128 bits: the scale may exceed what a
         * 64-bit DuckDB decimal holds (18). */
        int64_t small = id == P_DEC4 ? (int32_t)le(d + 1, 4) : (int64_t)le(d + 1, 8);
        if (id != P_DEC16)
            return done(sb, json_fmt_decimal128(o, small < 0 ? -1 : 0, (uint64_t)small, scale));
        return done(sb, json_fmt_decimal128(o, (int64_t)le(d + 9, 8), le(d + 1, 8), scale));
    }
    case P_DATE: return done(sb, json_fmt_date(o, (int32_t)le(d, 4)));
    case P_TS: return done(sb, json_fmt_timestamp(o, (int64_t)le(d, 8), JSON_TS_US, true));
    case P_TSNTZ: return done(sb, json_fmt_timestamp(o, (int64_t)le(d, 8), JSON_TS_US, false));
    case P_TSNS: return done(sb, json_fmt_timestamp(o, (int64_t)le(d, 8), JSON_TS_NS, true));
    case P_TSNTZNS:
        return done(sb, json_fmt_timestamp(o, (int64_t)le(d, 8), JSON_TS_NS, false));
    case P_TIME: {
        int64_t us = (int64_t)le(d, 8);
        if (us < 0 || us > 86400000000LL) {
            *why = "time out of range";
            return -1;
        }
        return done(sb, json_fmt_time(o, us));
    }
    case P_UUID: {
        uint64_t hi = 0, lo = 0;
        for (int i = 0; i < 8; i++) {
            hi = hi << 8 | d[i];
            lo = lo << 8 | d[8 + i];
        }
        /* DuckDB's UUID layout flips the top bit (signed order = byte order). */
        return done(sb, json_fmt_uuid(o, (int64_t)(hi ^ (1ull << 63)), lo));
    }
    case P_BINARY:
    case P_STRING: {
        uint64_t len = le(d, 4);
        if (len > n - 4) {
            *why = "truncated string or binary";
            return -1;
        }
        if (id == P_STRING)
            return add_string(sb, d + 4, (size_t)len);
        char *b = room(sb, json_base64_max((size_t)len));
        return b ? done(sb, json_fmt_base64(b, d + 4, (size_t)len)) : -1;
    }
    }
    *why = "unknown primitive type";
    return -1;
}

/* Object or array: n_el elements, their offsets (osz bytes each, n_el + 1)
 * at `offs`, the values after them. */
static int add_container(struct strbuf *sb, const struct vmeta *m, const uint8_t *v, size_t n,
                         bool object, int depth, const char **why)
{
    uint8_t h = v[0] >> 2;
    unsigned osz = (h & 3) + 1;
    unsigned isz = object ? ((h >> 2) & 3) + 1 : 0;
    bool large = object ? (h >> 4) & 1 : (h >> 2) & 1;
    size_t pos = 1, cnt = large ? 4 : 1;
    if (n < pos + cnt) {
        *why = "truncated object or array";
        return -1;
    }
    uint64_t n_el = le(v + pos, (unsigned)cnt);
    pos += cnt;
    /* The ids and offsets must fit before anything is read. */
    if (n_el > (n - pos) / (isz + osz) || (n - pos) - n_el * (isz + osz) < osz) {
        *why = "truncated object or array";
        return -1;
    }
    const uint8_t *ids = v + pos;
    const uint8_t *offs = ids + n_el * isz;
    const uint8_t *vals = offs + (n_el + 1) * osz;
    size_t vlen = n - (size_t)(vals - v);
    if (sb_addc(sb, object ? '{' : '[') < 0)
        return -1;
    for (uint64_t i = 0; i < n_el; i++) {
        if (i && sb_addc(sb, ',') < 0)
            return -1;
        if (object) {
            uint64_t id = le(ids + i * isz, isz);
            if (id >= m->n) {
                *why = "field id outside the dictionary";
                return -1;
            }
            uint64_t a = le(m->dict + id * m->osz, m->osz), b = le(m->dict + (id + 1) * m->osz, m->osz);
            if (a > b || b > m->nbytes) {
                *why = "bad dictionary offsets";
                return -1;
            }
            if (add_string(sb, m->bytes + a, (size_t)(b - a)) < 0 || sb_addc(sb, ':') < 0)
                return -1;
        }
        uint64_t a = le(offs + i * osz, osz);
        /* Values need not be in order: each one runs to the smallest offset
         * after its own (or the end), which bounds it without trusting the
         * writer's order. */
        uint64_t end = le(offs + n_el * osz, osz);
        if (end > vlen || a >= end) {
            *why = "value offset out of range";
            return -1;
        }
        if (add_value(sb, m, vals + a, (size_t)(end - a), depth + 1, why) < 0)
            return -1;
    }
    return sb_addc(sb, object ? '}' : ']');
}

/* One value of at most n bytes at v (a value knows its own length; the
 * bytes after it are ignored). */
static int add_value(struct strbuf *sb, const struct vmeta *m, const uint8_t *v, size_t n,
                     int depth, const char **why)
{
    if (depth > VT_VARIANT_MAX_DEPTH) {
        *why = "nested too deeply";
        return -1;
    }
    if (n < 1) {
        *why = "empty value";
        return -1;
    }
    switch (v[0] & 3) {
    case 0:
        return add_primitive(sb, v[0] >> 2, v + 1, n - 1, why);
    case 1: {
        size_t len = v[0] >> 2;
        if (len > n - 1) {
            *why = "truncated short string";
            return -1;
        }
        return add_string(sb, v + 1, len);
    }
    case 2:
        return add_container(sb, m, v, n, true, depth, why);
    default:
        return add_container(sb, m, v, n, false, depth, why);
    }
}

int source_variant_json(const uint8_t *meta, size_t mlen, const uint8_t *val, size_t vlen,
                        struct strbuf *out, const char **why)
{
    *why = NULL;
    if (mlen < 1 || (meta[0] & 0x0F) != 1) {
        *why = "metadata version is not 1";
        return -1;
    }
    struct vmeta m = {.osz = (unsigned)(meta[0] >> 6) + 1};
    if (mlen < 1 + m.osz) {
        *why = "truncated metadata";
        return -1;
    }
    m.n = (size_t)le(meta + 1, m.osz);
    size_t left = mlen - 1 - m.osz;
    if (m.n >= left / m.osz) {
        *why = "truncated metadata";
        return -1;
    }
    m.dict = meta + 1 + m.osz;
    m.bytes = m.dict + (m.n + 1) * m.osz;
    m.nbytes = left - (m.n + 1) * m.osz;
    size_t before = out->len;
    int rc = add_value(out, &m, val, vlen, 0, why);
    if (rc < 0 || out->overflow) {
        if (!*why)
            *why = out->overflow ? "too large" : "malformed";
        out->len = before;
        if (out->buf)
            out->buf[before] = '\0';
        return -1;
    }
    return 0;
}

/* ---- vt_variant_json(metadata BLOB, value BLOB) -> VARCHAR for DuckDB ----- */

static void variant_json_fn(duckdb_function_info info, duckdb_data_chunk input,
                            duckdb_vector output)
{
    idx_t n = duckdb_data_chunk_get_size(input);
    duckdb_vector mv = duckdb_data_chunk_get_vector(input, 0);
    duckdb_vector vv = duckdb_data_chunk_get_vector(input, 1);
    duckdb_string_t *metas = duckdb_vector_get_data(mv);
    duckdb_string_t *vals = duckdb_vector_get_data(vv);
    uint64_t *mvalid = duckdb_vector_get_validity(mv);
    uint64_t *vvalid = duckdb_vector_get_validity(vv);
    duckdb_vector_ensure_validity_writable(output);
    uint64_t *ovalid = duckdb_vector_get_validity(output);
    struct strbuf sb;
    sb_init(&sb, VT_VARIANT_MAX_JSON_BYTES);
    for (idx_t i = 0; i < n; i++) {
        /* A NULL variant (the group absent) is SQL NULL; a present group
         * whose value is missing is a JSON null. */
        if (!duckdb_validity_row_is_valid(mvalid, i)) {
            duckdb_validity_set_row_invalid(ovalid, i);
            continue;
        }
        if (!duckdb_validity_row_is_valid(vvalid, i)) {
            duckdb_vector_assign_string_element_len(output, i, "null", 4);
            continue;
        }
        sb_reset(&sb);
        const char *why;
        if (source_variant_json((const uint8_t *)duckdb_string_t_data(&metas[i]),
                                duckdb_string_t_length(metas[i]),
                                (const uint8_t *)duckdb_string_t_data(&vals[i]),
                                duckdb_string_t_length(vals[i]), &sb, &why) < 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "a variant value is malformed: %s", why);
            duckdb_scalar_function_set_error(info, msg);
            break;
        }
        duckdb_vector_assign_string_element_len(output, i, sb.buf ? sb.buf : "", sb.len);
    }
    sb_release(&sb);
}

enum vt_err source_variant_register(duckdb_connection con, struct vt_error *err)
{
    duckdb_scalar_function f = duckdb_create_scalar_function();
    duckdb_logical_type blob = duckdb_create_logical_type(DUCKDB_TYPE_BLOB);
    duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
    duckdb_scalar_function_set_name(f, SOURCE_VARIANT_FUNCTION);
    duckdb_scalar_function_add_parameter(f, blob);
    duckdb_scalar_function_add_parameter(f, blob);
    duckdb_scalar_function_set_return_type(f, varchar);
    duckdb_scalar_function_set_special_handling(f);
    duckdb_scalar_function_set_function(f, variant_json_fn);
    duckdb_state st = duckdb_register_scalar_function(con, f);
    duckdb_destroy_logical_type(&blob);
    duckdb_destroy_logical_type(&varchar);
    duckdb_destroy_scalar_function(&f);
    if (st != DuckDBSuccess)
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot register %s", SOURCE_VARIANT_FUNCTION);
    return VT_ERR_OK;
}
