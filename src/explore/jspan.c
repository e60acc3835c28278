/*
 * Spans of a JSON text (explore_int.h): enough to walk the rows our encoder
 * produced and copy their values unchanged. It validates structure (strings,
 * escapes, brackets, literals, number characters) but converts nothing; the
 * text it reads comes from DuckDB results, bounded by the exec sink's cap.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "explore/explore_int.h"

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

static size_t string_end(const char *s, size_t n, size_t i)
{
    /* s[i] == '"' */
    for (i++; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"')
            return i + 1;
        if (c < 0x20)
            return (size_t)-1;
        if (c == '\\') {
            if (++i >= n)
                return (size_t)-1;
            if (s[i] == 'u') {
                for (int k = 0; k < 4; k++)
                    if (++i >= n || !strchr("0123456789abcdefABCDEF", s[i]) || !s[i])
                        return (size_t)-1;
            } else if (!strchr("\"\\/bfnrt", s[i]) || !s[i]) {
                return (size_t)-1;
            }
        }
    }
    return (size_t)-1;
}

static size_t value_end(const char *s, size_t n, size_t i, int depth)
{
    i = skip_ws(s, n, i);
    if (i >= n || depth > JSPAN_MAX_DEPTH)
        return (size_t)-1;
    char c = s[i];
    if (c == '"')
        return string_end(s, n, i);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        i = skip_ws(s, n, i + 1);
        if (i < n && s[i] == close)
            return i + 1;
        for (;;) {
            if (c == '{') {
                i = skip_ws(s, n, i);
                if (i >= n || s[i] != '"')
                    return (size_t)-1;
                i = string_end(s, n, i);
                if (i == (size_t)-1)
                    return i;
                i = skip_ws(s, n, i);
                if (i >= n || s[i] != ':')
                    return (size_t)-1;
                i++;
            }
            i = value_end(s, n, i, depth + 1);
            if (i == (size_t)-1)
                return i;
            i = skip_ws(s, n, i);
            if (i >= n)
                return (size_t)-1;
            if (s[i] == close)
                return i + 1;
            if (s[i] != ',')
                return (size_t)-1;
            i++;
        }
    }
    static const char *const lits[] = {"null", "true", "false"};
    for (size_t k = 0; k < 3; k++) {
        size_t l = strlen(lits[k]);
        if (n - i >= l && memcmp(s + i, lits[k], l) == 0)
            return i + l;
    }
    size_t start = i;
    while (i < n && strchr("0123456789+-.eE", s[i]) && s[i])
        i++;
    return i > start ? i : (size_t)-1;
}

size_t jspan_value_end(const char *s, size_t n, size_t i)
{
    return value_end(s, n, i, 0);
}

bool jspan_iter_init(struct jspan_iter *it, struct jspan c)
{
    memset(it, 0, sizeof *it);
    size_t i = skip_ws(c.p, c.n, 0);
    if (i >= c.n || (c.p[i] != '{' && c.p[i] != '[')) {
        it->bad = true;
        return false;
    }
    it->s = c.p;
    it->n = c.n;
    it->i = i + 1;
    it->object = c.p[i] == '{';
    it->first = true;
    return true;
}

bool jspan_next(struct jspan_iter *it, struct jspan *key, struct jspan *value)
{
    if (it->bad || !it->s)
        return false;
    const char *s = it->s;
    size_t n = it->n, i = skip_ws(s, n, it->i);
    char close = it->object ? '}' : ']';
    if (i < n && s[i] == close) {
        it->s = NULL; /* done */
        return false;
    }
    if (!it->first) {
        if (i >= n || s[i] != ',')
            goto bad;
        i = skip_ws(s, n, i + 1);
    }
    it->first = false;
    if (it->object) {
        if (i >= n || s[i] != '"')
            goto bad;
        size_t e = string_end(s, n, i);
        if (e == (size_t)-1)
            goto bad;
        if (key)
            *key = (struct jspan){s + i, e - i};
        i = skip_ws(s, n, e);
        if (i >= n || s[i] != ':')
            goto bad;
        i = skip_ws(s, n, i + 1);
    } else if (key) {
        *key = (struct jspan){NULL, 0};
    }
    size_t e = jspan_value_end(s, n, i);
    if (e == (size_t)-1)
        goto bad;
    if (value)
        *value = (struct jspan){s + i, e - i};
    it->i = e;
    return true;
bad:
    it->bad = true;
    return false;
}

bool jspan_get(struct jspan obj, const char *key, struct jspan *out)
{
    struct jspan_iter it;
    struct jspan k, v;
    size_t kl = strlen(key);
    if (!jspan_iter_init(&it, obj) || !it.object)
        return false;
    while (jspan_next(&it, &k, &v))
        if (k.n == kl + 2 && memcmp(k.p + 1, key, kl) == 0) {
            *out = v;
            return true;
        }
    return false;
}

bool jspan_is_null(struct jspan v)
{
    return v.n == 4 && memcmp(v.p, "null", 4) == 0;
}

bool jspan_int(struct jspan v, int64_t *out)
{
    char buf[32];
    if (v.n == 0 || v.n >= sizeof buf)
        return false;
    memcpy(buf, v.p, v.n);
    buf[v.n] = '\0';
    char *end;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    if (errno || *end)
        return false;
    *out = x;
    return true;
}

bool jspan_eq(struct jspan a, struct jspan b)
{
    return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}
