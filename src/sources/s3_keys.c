/*
 * S3 names as text, apart from the network client (s3.c): s3:// locations
 * parsed into bucket and key, the SigV4 URI encoding of keys and query
 * values, and glob patterns matched against keys (a source location such as
 * s3://bucket/dir/ followed by a star and ".parquet"). Pure functions: no
 * client, no I/O.
 */
#include "sources/s3.h"

#include <stdlib.h>
#include <string.h>

#include "util/limits.h"

char *s3_uri_encode(const char *s, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(n * 3 + 1), *w = out;
    if (!out)
        return NULL;
    for (const unsigned char *r = (const unsigned char *)s; *r; r++) {
        unsigned char c = *r;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
            *w++ = (char)c;
        } else {
            *w++ = '%';
            *w++ = hex[c >> 4];
            *w++ = hex[c & 15];
        }
    }
    *w = '\0';
    return out;
}

/* ---- URL parsing ---------------------------------------------------------- */

void s3_url_release(struct s3_url *u)
{
    if (!u)
        return;
    free(u->bucket);
    free(u->key);
    u->bucket = u->key = NULL;
}

enum vt_err s3_url_parse(const char *url, struct s3_url *out, struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    if (!url || strncmp(url, "s3://", 5) != 0)
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "not an s3:// location: %s",
                            url ? url : "(null)");
    const char *b = url + 5;
    const char *slash = strchr(b, '/');
    size_t blen = slash ? (size_t)(slash - b) : strlen(b);
    if (blen < 3 || blen > 63)
        return vt_error_set(err, VT_ERR_INVALID_CONFIG,
                            "invalid S3 bucket name in %s (3 to 63 characters)", url);
    for (size_t i = 0; i < blen; i++) {
        char c = b[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_'))
            return vt_error_set(err, VT_ERR_INVALID_CONFIG,
                                "invalid character in S3 bucket name in %s", url);
    }
    const char *key = slash ? slash + 1 : "";
    if (strlen(key) > VT_S3_MAX_KEY_BYTES)
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "S3 key too long in %s", url);
    out->bucket = strndup(b, blen);
    out->key = strdup(key);
    if (!out->bucket || !out->key) {
        s3_url_release(out);
        return vt_error_set(err, VT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return VT_ERR_OK;
}

/* ---- globs ----------------------------------------------------------------- */

size_t s3_glob_literal_prefix_len(const char *s)
{
    return strcspn(s, "*?[");
}

/* [...] class at p (p points after '['); returns the position after ']' or NULL
 * when the class is unterminated within the segment (then '[' is literal). */
static const char *match_class(const char *p, const char *pend, char c, bool *matched)
{
    bool neg = false;
    if (p < pend && (*p == '!' || *p == '^')) {
        neg = true;
        p++;
    }
    bool m = false;
    bool first = true;
    while (p < pend && (first || *p != ']')) {
        first = false;
        char lo = *p, hi = lo;
        if (p + 2 < pend && p[1] == '-' && p[2] != ']') {
            hi = p[2];
            p += 3;
        } else {
            p++;
        }
        if (c >= lo && c <= hi)
            m = true;
    }
    if (p >= pend || *p != ']')
        return NULL;
    *matched = neg ? !m : m;
    return p + 1;
}

/* One path segment against one pattern segment ('*', '?', classes; no '/').
 * Greedy with backtracking to the last '*' only: O(n*m) worst case, never
 * exponential. */
static bool seg_match(const char *p, const char *pend, const char *s, const char *send)
{
    const char *star_p = NULL, *star_s = NULL;
    while (s < send) {
        if (p < pend && *p == '*') {
            while (p < pend && *p == '*')
                p++;
            star_p = p;
            star_s = s;
            continue;
        }
        if (p < pend) {
            bool ok = false;
            const char *next = p + 1;
            if (*p == '?') {
                ok = true;
            } else if (*p == '[') {
                bool m = false;
                const char *after = match_class(p + 1, pend, *s, &m);
                if (after) {
                    ok = m;
                    next = after;
                } else {
                    ok = *s == '[';
                }
            } else {
                ok = *p == *s;
            }
            if (ok) {
                p = next;
                s++;
                continue;
            }
        }
        if (!star_p)
            return false;
        p = star_p;
        s = ++star_s;
    }
    while (p < pend && *p == '*')
        p++;
    return p == pend;
}

#define GLOB_MAX_SEGMENTS 512

struct seg {
    const char *b, *e;
};

static size_t split_segments(const char *s, struct seg *out, size_t max)
{
    size_t n = 0;
    const char *b = s;
    for (;;) {
        const char *e = strchr(b, '/');
        if (!e)
            e = b + strlen(b);
        if (n == max)
            return max + 1;
        out[n].b = b;
        out[n].e = e;
        n++;
        if (!*e)
            return n;
        b = e + 1;
    }
}

bool s3_glob_match(const char *pattern, const char *key)
{
    /* Segment-level dynamic programming: "**" (a whole segment) matches any
     * number of key segments, every other segment matches exactly one. */
    struct seg *ps = malloc(2 * (GLOB_MAX_SEGMENTS + 1) * sizeof *ps);
    if (!ps)
        return false;
    struct seg *ks = ps + GLOB_MAX_SEGMENTS + 1;
    size_t np = split_segments(pattern, ps, GLOB_MAX_SEGMENTS);
    size_t nk = split_segments(key, ks, GLOB_MAX_SEGMENTS);
    bool result = false;
    if (np <= GLOB_MAX_SEGMENTS && nk <= GLOB_MAX_SEGMENTS) {
        /* ok[j] = pattern segments i.. match key segments j.. (row i+1 kept in next) */
        unsigned char *cur = calloc(2 * (nk + 1), 1);
        if (cur) {
            unsigned char *next = cur + nk + 1;
            next[nk] = 1; /* empty pattern matches empty key */
            for (size_t i = np; i-- > 0;) {
                bool dstar = ps[i].e - ps[i].b == 2 && ps[i].b[0] == '*' && ps[i].b[1] == '*';
                cur[nk] = dstar ? next[nk] : 0;
                for (size_t j = nk; j-- > 0;) {
                    if (dstar)
                        cur[j] = next[j] || cur[j + 1];
                    else
                        cur[j] = next[j + 1] && seg_match(ps[i].b, ps[i].e, ks[j].b, ks[j].e);
                }
                memcpy(next, cur, nk + 1);
            }
            result = next[0];
            free(cur);
        }
    }
    free(ps);
    return result;
}
