/*
 * ETag formatting and the precondition checks of RFC 9110 §13 (If-Match,
 * If-None-Match, If-Range). Pure string functions without allocation; the
 * server adapter calls them for routes that have an ETag (the Parquet export).
 */
#include "http/conditional.h"

#include <stddef.h>
#include <string.h>

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* etagc = %x21 / %x23-7E / obs-text. We accept obs-text when reading a
 * client's tag but never produce it. */
static bool is_etagc(unsigned char c)
{
    return c == 0x21 || (c >= 0x23 && c != 0x7F);
}

int http_etag_format(char out[HTTP_ETAG_MAX], const char *opaque)
{
    size_t n = opaque ? strlen(opaque) : 0;
    if (n == 0 || n > HTTP_ETAG_MAX - 3)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)opaque[i];
        if (!is_etagc(c) || c >= 0x80)
            return -1;
    }
    out[0] = '"';
    memcpy(out + 1, opaque, n);
    out[n + 1] = '"';
    out[n + 2] = '\0';
    return 0;
}

/* An entity-tag split into its parts; opaque excludes the quotes. */
struct etag {
    bool weak;
    const char *opaque;
    size_t len;
};

/* Parses one entity-tag at *pp. On success *pp is just past the closing quote. */
static bool parse_etag(const char **pp, struct etag *t)
{
    const char *p = *pp;
    t->weak = false;
    if (p[0] == 'W' && p[1] == '/') { /* %s"W/": case-sensitive (§8.8.3) */
        t->weak = true;
        p += 2;
    }
    if (*p != '"')
        return false;
    const char *o = ++p;
    while (is_etagc((unsigned char)*p))
        p++;
    if (*p != '"')
        return false;
    t->opaque = o;
    t->len = (size_t)(p - o);
    *pp = p + 1;
    return true;
}

/* Our own tag, as given by the caller. A NULL or malformed one matches nothing. */
static bool parse_ours(const char *etag, struct etag *t)
{
    if (!etag)
        return false;
    const char *p = etag;
    return parse_etag(&p, t) && *p == '\0';
}

static bool etag_equal(const struct etag *a, const struct etag *b, bool strong)
{
    if (strong && (a->weak || b->weak))
        return false;
    return a->len == b->len && memcmp(a->opaque, b->opaque, a->len) == 0;
}

/* Skips to the next comma that is not inside a quoted tag (or to the end). */
static void skip_member(const char **pp)
{
    const char *p = *pp;
    bool quoted = false;
    for (; *p; p++) {
        if (*p == '"')
            quoted = !quoted;
        else if (*p == ',' && !quoted)
            break;
    }
    *pp = p;
}

/* True when `value` is exactly "*" (OWS aside): If-Match / If-None-Match
 * allow "*" only as the whole field value. */
static bool is_star(const char *value)
{
    const char *p = value;
    while (is_ows(*p))
        p++;
    if (*p++ != '*')
        return false;
    while (is_ows(*p))
        p++;
    return *p == '\0';
}

static bool list_match(const char *value, const char *etag, bool strong)
{
    if (!value)
        return false;
    if (is_star(value))
        return true; /* our representation exists whenever we have a route */
    struct etag ours;
    if (!parse_ours(etag, &ours))
        return false;
    const char *p = value;
    for (;;) {
        while (is_ows(*p) || *p == ',')
            p++;
        if (!*p)
            return false;
        struct etag t;
        if (!parse_etag(&p, &t)) {
            skip_member(&p);
            continue;
        }
        while (is_ows(*p))
            p++;
        if (*p != ',' && *p != '\0') {
            skip_member(&p); /* e.g. "a"b: not a tag */
            continue;
        }
        if (etag_equal(&t, &ours, strong))
            return true;
    }
}

bool http_etag_list_match_weak(const char *value, const char *etag)
{
    return list_match(value, etag, false);
}

bool http_etag_list_match_strong(const char *value, const char *etag)
{
    return list_match(value, etag, true);
}

enum http_precond http_preconditions(bool get_or_head, const char *if_match,
                                     const char *if_none_match, const char *etag)
{
    if (if_match && !http_etag_list_match_strong(if_match, etag))
        return HTTP_PRECOND_FAILED;
    if (if_none_match && http_etag_list_match_weak(if_none_match, etag))
        return get_or_head ? HTTP_PRECOND_NOT_MODIFIED : HTTP_PRECOND_FAILED;
    return HTTP_PRECOND_PASS;
}

bool http_if_range_allows(const char *if_range, const char *etag)
{
    if (!if_range)
        return true;
    struct etag ours, t;
    if (!parse_ours(etag, &ours))
        return false;
    const char *p = if_range;
    while (is_ows(*p))
        p++;
    /* Anything that is not exactly one entity-tag is an HTTP-date (or junk);
     * see the header for why a date never allows the range. */
    if (!parse_etag(&p, &t))
        return false;
    while (is_ows(*p))
        p++;
    return *p == '\0' && etag_equal(&t, &ours, true);
}
