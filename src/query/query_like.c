/*
 * LIKE matching in linear time (query.h, "like"). DuckDB's own LIKE with a
 * pattern it cannot see at plan time (ours are bound parameters) backtracks:
 * `%a%a%b` over a 1 MiB string, or `%_%_%_y` over any long string, held a
 * worker for minutes. The query compiler therefore writes
 * `vt_like(col, pattern)` (ILIKE: `vt_like(lower(col), lower(pattern))`,
 * DuckDB's own case folding, which is what its ILIKE does), a scalar function
 * registered by the engine that calls this matcher.
 *
 * A pattern is split at `%` into segments; each segment is a fixed number of
 * characters (literals and `_`, one UTF-8 character). Matching is greedy and
 * never backtracks, which is exact for such patterns: the first segment is
 * compared at the start (unless the pattern starts with `%`), the last at the
 * end (unless it ends with `%`), and every middle segment is found at its
 * leftmost place after the previous one -- a leftmost match leaves the most
 * room for the rest, so if any match exists, this one does. Finding a middle
 * segment costs O(n): memmem for literal segments, a bit-parallel Shift-And
 * over characters for segments with `_` (hence at most 64 characters). The
 * whole match is O(n x segments), and query_like_check bounds the segments.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "query/query.h"
#include "util/limits.h"

#define WILD UINT32_MAX

struct like_segment {
    const char *bytes;          /* the literal text (no `_`), for memmem */
    size_t nbytes;
    uint32_t *chars;            /* code points; WILD for `_` */
    size_t nchars;
    bool wild;                  /* has `_` */
    /* Shift-And tables (wild middle segments) */
    uint64_t ascii[128];
    uint64_t any;               /* bits of the `_` positions */
    uint32_t *other_cp;         /* non-ASCII code points of the segment ... */
    uint64_t *other_mask;       /* ... and their bits */
    size_t n_other;
};

struct query_like {
    bool exact;                 /* no `%`: the one segment is the whole string */
    bool anchored_start, anchored_end;
    struct like_segment *seg;
    size_t nseg;
    char *text;                 /* the pattern's bytes (segments point into it) */
};

/* The code point at s (n bytes left) and its length; an invalid byte is its
 * own character (DuckDB's strings are valid UTF-8; this just never loops). */
static uint32_t utf8_next(const unsigned char *s, size_t n, size_t *out_len)
{
    unsigned c = s[0];
    size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (c >= 0x80 && c < 0xC0)
        len = 1;
    if (len > n)
        len = 1;
    uint32_t cp = len == 1 ? c : c & (0xFF >> (len + 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *out_len = 1;
            return c;
        }
        cp = cp << 6 | (s[i] & 0x3F);
    }
    *out_len = len;
    return cp;
}

/* Start of the character that ends at s + end (end > 0). */
static size_t utf8_prev(const unsigned char *s, size_t end)
{
    size_t i = end - 1;
    for (int k = 0; k < 3 && i > 0 && (s[i] & 0xC0) == 0x80; k++)
        i--;
    return i;
}

enum vt_err query_like_check(const char *p, size_t len, struct vt_error *err)
{
    size_t segments = 0, chars = 0;
    bool wild = false;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || p[i] == '%') {
            if (chars) {
                segments++;
                if (wild && chars > VT_MAX_LIKE_WILD_SEGMENT_CHARS)
                    return vt_error_set(err, VT_ERR_PATTERN_TOO_COMPLEX,
                                        "a part of the pattern between %% signs that contains _ "
                                        "may have at most %d characters",
                                        VT_MAX_LIKE_WILD_SEGMENT_CHARS);
            }
            chars = 0;
            wild = false;
            continue;
        }
        wild = wild || p[i] == '_';
        if (((unsigned char)p[i] & 0xC0) != 0x80)
            chars++;
    }
    if (segments > VT_MAX_LIKE_SEGMENTS)
        return vt_error_set(err, VT_ERR_PATTERN_TOO_COMPLEX,
                            "the pattern has %zu parts between %% signs; at most %d are allowed",
                            segments, VT_MAX_LIKE_SEGMENTS);
    return VT_ERR_OK;
}

void query_like_free(struct query_like *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->nseg; i++) {
        free(l->seg[i].chars);
        free(l->seg[i].other_cp);
        free(l->seg[i].other_mask);
    }
    free(l->seg);
    free(l->text);
    free(l);
}

static bool build_shift_and(struct like_segment *g)
{
    g->other_cp = calloc(g->nchars, sizeof *g->other_cp);
    g->other_mask = calloc(g->nchars, sizeof *g->other_mask);
    if (!g->other_cp || !g->other_mask)
        return false;
    for (size_t j = 0; j < g->nchars; j++) {
        uint64_t bit = (uint64_t)1 << j;
        uint32_t cp = g->chars[j];
        if (cp == WILD) {
            g->any |= bit;
        } else if (cp < 128) {
            g->ascii[cp] |= bit;
        } else {
            size_t k = 0;
            while (k < g->n_other && g->other_cp[k] != cp)
                k++;
            if (k == g->n_other)
                g->other_cp[g->n_other++] = cp;
            g->other_mask[k] |= bit;
        }
    }
    return true;
}

struct query_like *query_like_compile(const char *p, size_t len)
{
    struct query_like *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->text = malloc(len + 1);
    l->seg = calloc(len / 2 + 2, sizeof *l->seg);
    if (!l->text || !l->seg) {
        query_like_free(l);
        return NULL;
    }
    memcpy(l->text, p, len);
    l->text[len] = '\0';
    l->exact = memchr(p, '%', len) == NULL;
    l->anchored_start = len == 0 || p[0] != '%';
    l->anchored_end = len == 0 || p[len - 1] != '%';
    size_t i = 0;
    while (i < len || (l->exact && l->nseg == 0)) {
        while (i < len && p[i] == '%')
            i++;
        size_t start = i;
        while (i < len && p[i] != '%')
            i++;
        if (i == start && !l->exact)
            break;
        struct like_segment *g = &l->seg[l->nseg++];
        g->bytes = l->text + start;
        g->nbytes = i - start;
        g->chars = malloc((g->nbytes ? g->nbytes : 1) * sizeof *g->chars);
        if (!g->chars) {
            query_like_free(l);
            return NULL;
        }
        for (size_t k = start; k < i;) {
            size_t n;
            if (p[k] == '_') {
                g->chars[g->nchars++] = WILD;
                g->wild = true;
                k++;
                continue;
            }
            g->chars[g->nchars++] = utf8_next((const unsigned char *)p + k, i - k, &n);
            k += n;
        }
        if (g->wild && g->nchars <= 64 && !build_shift_and(g)) {
            query_like_free(l);
            return NULL;
        }
        if (l->exact)
            break;
    }
    return l;
}

/* Segment g at s[pos..]: the end of the match, or SIZE_MAX. */
static size_t match_forward(const struct like_segment *g, const unsigned char *s, size_t n,
                            size_t pos)
{
    for (size_t j = 0; j < g->nchars; j++) {
        if (pos >= n)
            return SIZE_MAX;
        size_t len;
        uint32_t cp = utf8_next(s + pos, n - pos, &len);
        if (g->chars[j] != WILD && g->chars[j] != cp)
            return SIZE_MAX;
        pos += len;
    }
    return pos;
}

/* Segment g ending exactly at s + end: where the match starts, or SIZE_MAX. */
static size_t match_backward(const struct like_segment *g, const unsigned char *s, size_t floor,
                             size_t end)
{
    for (size_t j = g->nchars; j-- > 0;) {
        if (end <= floor)
            return SIZE_MAX;
        size_t start = utf8_prev(s, end);
        if (start < floor)
            return SIZE_MAX;
        size_t len;
        uint32_t cp = utf8_next(s + start, end - start, &len);
        if (g->chars[j] != WILD && (g->chars[j] != cp || start + len != end))
            return SIZE_MAX;
        end = start;
    }
    return end;
}

/* The leftmost match of g inside s[from..limit): the end of the match, or
 * SIZE_MAX. */
static size_t find(const struct like_segment *g, const unsigned char *s, size_t from, size_t limit)
{
    if (g->nchars == 0)
        return from;
    if (!g->wild) {
        const unsigned char *hit = memmem(s + from, limit - from, g->bytes, g->nbytes);
        return hit ? (size_t)(hit - s) + g->nbytes : SIZE_MAX;
    }
    if (g->nchars > 64) {
        /* query_like_check refuses these; a direct caller still gets an
         * answer, in O(n * m). */
        for (size_t pos = from; pos < limit;) {
            size_t end = match_forward(g, s, limit, pos);
            if (end != SIZE_MAX)
                return end;
            size_t len;
            utf8_next(s + pos, limit - pos, &len);
            pos += len;
        }
        return SIZE_MAX;
    }
    uint64_t state = 0, done = (uint64_t)1 << (g->nchars - 1);
    for (size_t pos = from; pos < limit;) {
        size_t len;
        uint32_t cp = utf8_next(s + pos, limit - pos, &len);
        uint64_t mask = g->any;
        if (cp < 128) {
            mask |= g->ascii[cp];
        } else {
            for (size_t k = 0; k < g->n_other; k++)
                if (g->other_cp[k] == cp)
                    mask |= g->other_mask[k];
        }
        state = ((state << 1) | 1) & mask;
        pos += len;
        if (state & done)
            return pos;
    }
    return SIZE_MAX;
}

bool query_like_match(const struct query_like *l, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    if (l->exact)
        return l->nseg == 0 ? n == 0 : match_forward(&l->seg[0], s, n, 0) == n;
    size_t first = 0, last = l->nseg, from = 0, limit = n;
    if (l->anchored_start && l->nseg) {
        from = match_forward(&l->seg[0], s, n, 0);
        if (from == SIZE_MAX)
            return false;
        first = 1;
    }
    if (l->anchored_end && last > first) {
        limit = match_backward(&l->seg[last - 1], s, from, n);
        if (limit == SIZE_MAX)
            return false;
        last--;
    }
    for (size_t i = first; i < last; i++) {
        from = find(&l->seg[i], s, from, limit);
        if (from == SIZE_MAX)
            return false;
    }
    return true;
}

/* ---- vt_like(VARCHAR, VARCHAR) -> BOOLEAN for DuckDB --------------------- */

/* DuckDB hands the function flattened vectors and leaves NULLs to it (the C
 * API bridge does not propagate them): a NULL string or pattern gives NULL,
 * as LIKE does. The pattern is compiled once per chunk while it stays the
 * same (it is one bound parameter for a whole query). */
static void vt_like_fn(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output)
{
    idx_t n = duckdb_data_chunk_get_size(input);
    duckdb_vector sv = duckdb_data_chunk_get_vector(input, 0);
    duckdb_vector pv = duckdb_data_chunk_get_vector(input, 1);
    duckdb_string_t *strs = duckdb_vector_get_data(sv);
    duckdb_string_t *pats = duckdb_vector_get_data(pv);
    uint64_t *svalid = duckdb_vector_get_validity(sv);
    uint64_t *pvalid = duckdb_vector_get_validity(pv);
    bool *out = duckdb_vector_get_data(output);
    duckdb_vector_ensure_validity_writable(output);
    uint64_t *ovalid = duckdb_vector_get_validity(output);
    struct query_like *l = NULL;
    const char *lp = NULL;
    uint32_t lplen = 0;
    for (idx_t i = 0; i < n; i++) {
        if (!duckdb_validity_row_is_valid(svalid, i) || !duckdb_validity_row_is_valid(pvalid, i)) {
            duckdb_validity_set_row_invalid(ovalid, i);
            out[i] = false;
            continue;
        }
        const char *p = duckdb_string_t_data(&pats[i]);
        uint32_t plen = duckdb_string_t_length(pats[i]);
        if (!l || plen != lplen || memcmp(p, lp, plen) != 0) {
            query_like_free(l);
            l = query_like_compile(p, plen);
            if (!l) {
                duckdb_scalar_function_set_error(info, "out of memory compiling a LIKE pattern");
                return;
            }
            lp = l->text;
            lplen = plen;
        }
        out[i] = query_like_match(l, duckdb_string_t_data(&strs[i]),
                                  duckdb_string_t_length(strs[i]));
    }
    query_like_free(l);
}

enum vt_err query_like_register(duckdb_connection con, struct vt_error *err)
{
    duckdb_scalar_function f = duckdb_create_scalar_function();
    duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
    duckdb_logical_type boolean = duckdb_create_logical_type(DUCKDB_TYPE_BOOLEAN);
    duckdb_scalar_function_set_name(f, QUERY_LIKE_FUNCTION);
    duckdb_scalar_function_add_parameter(f, varchar);
    duckdb_scalar_function_add_parameter(f, varchar);
    duckdb_scalar_function_set_return_type(f, boolean);
    duckdb_scalar_function_set_special_handling(f);
    duckdb_scalar_function_set_function(f, vt_like_fn);
    duckdb_state st = duckdb_register_scalar_function(con, f);
    duckdb_destroy_logical_type(&varchar);
    duckdb_destroy_logical_type(&boolean);
    duckdb_destroy_scalar_function(&f);
    if (st != DuckDBSuccess)
        return vt_error_set(err, VT_ERR_INTERNAL, "cannot register %s", QUERY_LIKE_FUNCTION);
    return VT_ERR_OK;
}
