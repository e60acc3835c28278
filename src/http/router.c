/*
 * The route table and path matching (see router.h).
 *
 * Patterns are split into segments once, at start; a request path is split
 * and percent-decoded once per request (http_path_parse), so "%2F" inside a
 * segment stays part of it and can never create a route separator, and a
 * dataset name arrives decoded in its {name} capture.
 */
#include "http/router.h"

#include <stdlib.h>
#include <string.h>

#include "util/text.h"

enum seg_kind {
    SEG_LITERAL = 0,            /* sorts first: most specific */
    SEG_CAPTURE = 1,            /* {name} */
    SEG_REST = 2,               /* {*}, last segment only */
};

struct route_seg {
    char *text;                 /* literal text (NUL-terminated) */
    size_t len;
    enum seg_kind kind;
};

struct route_entry {
    struct route_seg *segs;
    size_t nseg;
    bool tail;                  /* the last segment is {*} */
    size_t order;               /* position in the caller's table (tie-break) */
    struct http_route row;      /* strings owned */
};

/* What the scan of http_router_next reads of an entry before any compare,
 * packed apart from the entries (~8 instructions an entry instead of ~20). */
struct route_key {
    size_t nseg;
    bool tail;
    bool root;
};

/* The entries a path of n segments can match, by n (below the prefix for
 * the prefixed entries, the whole path for root ones), in match order: a
 * lookup tries those and skips the other ~40 without reading them. */
#define ROUTER_BUCKETS 16
struct route_bucket {
    size_t *idx;
    size_t n;
};

struct http_router {
    struct route_entry *entries;
    struct route_key *keys;     /* keys[i] of entries[i] */
    struct route_bucket root_b[ROUTER_BUCKETS], below_b[ROUTER_BUCKETS];
    struct http_route *rows;    /* the same rows, contiguous, in match order */
    size_t n;
    struct route_seg *prefix;   /* server.prefix as literal segments */
    size_t nprefix;
};

/* Whether an entry passes the segment-count test for a path of n segments
 * (below the prefix, or whole for a root entry). */
static bool key_fits(struct route_key k, size_t n)
{
    return k.tail ? n >= k.nseg : n == k.nseg;
}

static bool buckets_fill(struct http_router *r)
{
    for (size_t n = 0; n < ROUTER_BUCKETS; n++) {
        for (int root = 0; root < 2; root++) {
            struct route_bucket *b = root ? &r->root_b[n] : &r->below_b[n];
            size_t count = 0;
            for (size_t i = 0; i < r->n; i++)
                count += r->keys[i].root == (bool)root && key_fits(r->keys[i], n);
            if (!count)
                continue;
            if (!(b->idx = calloc(count, sizeof *b->idx)))
                return false;
            for (size_t i = 0; i < r->n; i++)
                if (r->keys[i].root == (bool)root && key_fits(r->keys[i], n))
                    b->idx[b->n++] = i;
        }
    }
    return true;
}

static void entry_release(struct route_entry *e)
{
    for (size_t i = 0; i < e->nseg; i++)
        free(e->segs[i].text);
    free(e->segs);
    free((char *)e->row.pattern);
    free((char *)e->row.description);
}

/* Splits a pattern ("/a/{x}/{*}") into segments; false when malformed. */
static bool split_pattern(const char *pattern, struct route_seg **out_segs, size_t *out_n,
                          bool allow_params)
{
    *out_segs = NULL;
    *out_n = 0;
    if (pattern[0] != '/')
        return false;
    size_t cap = 1;
    for (const char *p = pattern; *p; p++)
        cap += *p == '/';
    struct route_seg *segs = calloc(cap, sizeof *segs);
    if (!segs)
        return false;
    size_t n = 0, nparams = 0;
    const char *p = pattern;
    while (*p == '/') {
        p++;
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        struct route_seg *s = &segs[n++];
        if (len == 3 && memcmp(p, "{*}", 3) == 0) {
            s->kind = SEG_REST;
            if (end || !allow_params || ++nparams > HTTP_MAX_PARAMS)
                goto bad; /* {*} only last */
        } else if (len >= 3 && p[0] == '{' && p[len - 1] == '}') {
            s->kind = SEG_CAPTURE;
            if (!allow_params || ++nparams > HTTP_MAX_PARAMS)
                goto bad;
        } else {
            s->kind = SEG_LITERAL;
            if (memchr(p, '{', len) || memchr(p, '}', len) || memchr(p, '%', len))
                goto bad;
        }
        s->text = strndup(p, len);
        s->len = len;
        if (!s->text)
            goto bad;
        p += len;
    }
    *out_segs = segs;
    *out_n = n;
    return true;
bad:
    for (size_t i = 0; i < n; i++)
        free(segs[i].text);
    free(segs);
    return false;
}

/* Match order: compare segment kinds left to right (literal < {x} < {*});
 * on a common prefix of equal kinds the shorter pattern first; then the
 * table's own order. */
static int entry_cmp(const void *pa, const void *pb)
{
    const struct route_entry *a = pa, *b = pb;
    size_t n = a->nseg < b->nseg ? a->nseg : b->nseg;
    for (size_t i = 0; i < n; i++)
        if (a->segs[i].kind != b->segs[i].kind)
            return (int)a->segs[i].kind - (int)b->segs[i].kind;
    if (a->nseg != b->nseg)
        return a->nseg < b->nseg ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

struct http_router *http_router_create(const struct http_route *routes, size_t n,
                                       const struct http_route *root, size_t n_root,
                                       const char *prefix, struct vt_error *err)
{
    struct http_router *r = calloc(1, sizeof *r);
    size_t total = n + n_root;
    if (!r || !(r->entries = calloc(total ? total : 1, sizeof *r->entries)) ||
        !(r->keys = calloc(total ? total : 1, sizeof *r->keys)) ||
        !(r->rows = calloc(total ? total : 1, sizeof *r->rows))) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        http_router_destroy(r);
        return NULL;
    }
    for (size_t i = 0; i < total; i++) {
        const struct http_route *src = i < n ? &routes[i] : &root[i - n];
        struct route_entry *e = &r->entries[r->n];
        e->order = i;
        e->row = *src;
        if (i >= n)
            e->row.flags |= HTTP_ROUTE_ROOT;
        e->row.pattern = NULL;
        e->row.description = NULL;
        if (!src->pattern || !split_pattern(src->pattern, &e->segs, &e->nseg, true)) {
            vt_error_set(err, VT_ERR_INTERNAL, "malformed route pattern %s",
                         src->pattern ? src->pattern : "(null)");
            http_router_destroy(r);
            return NULL;
        }
        e->tail = e->nseg && e->segs[e->nseg - 1].kind == SEG_REST;
        r->n++;
        e->row.pattern = strdup(src->pattern);
        e->row.description = src->description ? strdup(src->description) : NULL;
        if (!e->row.pattern || (src->description && !e->row.description)) {
            vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
            http_router_destroy(r);
            return NULL;
        }
    }
    qsort(r->entries, r->n, sizeof *r->entries, entry_cmp);
    for (size_t i = 0; i < r->n; i++) {
        r->rows[i] = r->entries[i].row;
        r->keys[i] = (struct route_key){r->entries[i].nseg, r->entries[i].tail,
                                        (r->entries[i].row.flags & HTTP_ROUTE_ROOT) != 0};
    }
    if (!buckets_fill(r)) {
        vt_error_set(err, VT_ERR_OUT_OF_MEMORY, NULL);
        http_router_destroy(r);
        return NULL;
    }
    if (prefix && *prefix && !split_pattern(prefix, &r->prefix, &r->nprefix, false)) {
        vt_error_set(err, VT_ERR_INVALID_CONFIG, "server.prefix %s is not a path", prefix);
        http_router_destroy(r);
        return NULL;
    }
    return r;
}

void http_router_destroy(struct http_router *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        entry_release(&r->entries[i]);
    for (size_t i = 0; i < r->nprefix; i++)
        free(r->prefix[i].text);
    free(r->prefix);
    for (size_t n = 0; n < ROUTER_BUCKETS; n++) {
        free(r->root_b[n].idx);
        free(r->below_b[n].idx);
    }
    free(r->entries);
    free(r->keys);
    free(r->rows);
    free(r);
}

size_t http_router_rows(const struct http_router *r, const struct http_route **out_rows)
{
    *out_rows = r->rows;
    return r->n;
}

enum vt_err http_path_parse(struct arena *a, const char *target, struct http_path *out,
                            const char **out_message)
{
    out->seg = NULL;
    out->n = 0;
    if (target[0] != '/') {
        *out_message = "the request target must be an absolute path";
        return VT_ERR_MALFORMED_REQUEST;
    }
    /* The path's end ('?' or the end) and its segments ('/'s) in one pass. */
    size_t end = 0, cap = 0;
    for (; target[end] && target[end] != '?'; end++)
        cap += target[end] == '/';
    /* One allocation for every segment's text: each takes its bytes (fewer
     * when decoded) and a NUL in place of the '/' before it, `end` in all. */
    out->seg = arena_alloc(a, cap * sizeof *out->seg);
    char *text = out->seg ? arena_alloc(a, end) : NULL;
    if (!text) {
        *out_message = "request target too long";
        return VT_ERR_URI_TOO_LONG;
    }
    size_t i = 0;
    while (i < end) {
        i++; /* the '/' */
        char *seg = text;
        for (; i < end && target[i] != '/'; i++) {
            char c = target[i];
            if (c == '%') {
                int hi = i + 2 < end && target[i + 2] != '/' ? text_hexval(target[i + 1]) : -1;
                int lo = hi >= 0 ? text_hexval(target[i + 2]) : -1;
                if (hi < 0 || lo < 0) {
                    *out_message = "malformed percent-encoding in the request path";
                    return VT_ERR_MALFORMED_REQUEST;
                }
                c = (char)(hi * 16 + lo);
                if (c == '\0') {
                    *out_message = "the request path contains a NUL byte";
                    return VT_ERR_MALFORMED_REQUEST;
                }
                i += 2;
            }
            *text++ = c;
        }
        *text++ = '\0';
        out->seg[out->n++] = seg;
    }
    return VT_ERR_OK;
}

/* Joins seg[from..n) with '/' for a {*} tail; NULL when a segment is "." or
 * "..", or contains a '/' (decoded %2F): static-asset tails must name a file
 * below the mount point. */
static const char *join_rest(struct arena *a, const struct http_path *path, size_t from)
{
    size_t len = 0;
    for (size_t i = from; i < path->n; i++) {
        const char *s = path->seg[i];
        if (!strcmp(s, ".") || !strcmp(s, "..") || strchr(s, '/'))
            return NULL;
        len += strlen(s) + 1;
    }
    char *out = arena_alloc(a, len + 1);
    if (!out)
        return NULL;
    size_t k = 0;
    for (size_t i = from; i < path->n; i++) {
        if (i > from)
            out[k++] = '/';
        size_t l = strlen(path->seg[i]);
        memcpy(out + k, path->seg[i], l);
        k += l;
    }
    out[k] = '\0';
    return out;
}

static bool entry_match(const struct route_entry *e, const struct http_path *path, size_t off,
                        struct arena *a, const char *params[HTTP_MAX_PARAMS])
{
    /* The literal segments first, the last one first: entries that share a
     * prefix (/api/v1/datasets/{name}/...) differ in their last segment, so
     * most of them fail at their first compare (the caller checked the
     * segment count: every index here is inside the path). */
    for (size_t i = e->nseg; i-- > 0;) {
        const struct route_seg *s = &e->segs[i];
        if (s->kind != SEG_LITERAL)
            continue;
        const char *seg = path->seg[off + i];
        if (seg[0] != s->text[0] || strcmp(seg, s->text) != 0)
            return false;
    }
    size_t np = 0;
    size_t i = 0;
    for (; i < e->nseg; i++) {
        const struct route_seg *s = &e->segs[i];
        size_t at = off + i;
        if (at >= path->n)
            return false;
        const char *seg = path->seg[at];
        switch (s->kind) {
        case SEG_LITERAL:
            break; /* compared above */
        case SEG_CAPTURE:
            if (!*seg)
                return false;
            params[np++] = seg;
            break;
        case SEG_REST: {
            const char *rest = join_rest(a, path, at);
            if (!rest)
                return false;
            params[np++] = rest;
            return true;
        }
        }
    }
    return off + i == path->n;
}

/* Entry i against the path (its count test passed): true with its
 * captures in out_params. */
static bool try_entry(const struct http_router *r, size_t i, const struct http_path *path,
                      size_t off, struct arena *a, const char *out_params[HTTP_MAX_PARAMS])
{
    /* "/prefix" alone is the root of the mounted tree, like "/prefix/". */
    static char empty[] = "";
    static char *root_seg[] = {empty};
    struct http_path at_root = {root_seg, 1};
    const struct http_path *p = path;
    size_t o = 0;
    if (!r->keys[i].root) {
        o = off;
        if (off == path->n) {
            p = &at_root;
            o = 0;
        }
    }
    const char *params[HTTP_MAX_PARAMS] = {0};
    if (!entry_match(&r->entries[i], p, o, a, params))
        return false;
    memcpy(out_params, params, sizeof params);
    return true;
}

const struct http_route *http_router_next(const struct http_router *r, const struct http_path *path,
                                          size_t *pos, struct arena *a,
                                          const char *out_params[HTTP_MAX_PARAMS])
{
    /* Offset of the path below server.prefix; SIZE_MAX when outside it. */
    size_t off = 0;
    if (r->nprefix) {
        off = SIZE_MAX;
        if (path->n >= r->nprefix) {
            size_t i = 0;
            while (i < r->nprefix && !strcmp(path->seg[i], r->prefix[i].text))
                i++;
            if (i == r->nprefix)
                off = i;
        }
    }
    /* The segments an entry's pattern meets: all of the path for a root
     * entry; below the prefix for the others (none outside it, the one
     * empty segment of "/prefix" alone at the prefix itself). */
    size_t below = off == SIZE_MAX ? 0 : off == path->n ? 1 : path->n - off;
    if (path->n < ROUTER_BUCKETS && below < ROUTER_BUCKETS) {
        /* The two buckets' entries merged in match order, from *pos. */
        static const struct route_bucket none = {NULL, 0};
        const struct route_bucket *rb = &r->root_b[path->n];
        const struct route_bucket *bb = off == SIZE_MAX ? &none : &r->below_b[below];
        size_t x = 0, y = 0;
        while (x < rb->n && rb->idx[x] < *pos)
            x++;
        while (y < bb->n && bb->idx[y] < *pos)
            y++;
        while (x < rb->n || y < bb->n) {
            size_t i;
            if (y == bb->n || (x < rb->n && rb->idx[x] < bb->idx[y]))
                i = rb->idx[x++];
            else
                i = bb->idx[y++];
            if (try_entry(r, i, path, off, a, out_params)) {
                *pos = i + 1;
                return &r->rows[i];
            }
        }
        *pos = r->n;
        return NULL;
    }
    for (size_t i = *pos; i < r->n; i++) {
        const struct route_key k = r->keys[i];
        if (!k.root && off == SIZE_MAX)
            continue;
        /* Without a {*} tail the path has exactly as many segments (with
         * one, at least as many): most entries fail here, before any compare
         * (and before their captures are cleared). */
        if (!key_fits(k, k.root ? path->n : below))
            continue;
        if (try_entry(r, i, path, off, a, out_params)) {
            *pos = i + 1;
            return &r->rows[i];
        }
    }
    *pos = r->n;
    return NULL;
}
