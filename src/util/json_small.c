/*
 * json_small_load (json_small.h): the small plain bodies of the hot request
 * paths straight into a jansson tree. A recursive descent over the buffer
 * that declines (NULL) at the first byte outside the subset; the caller then
 * loads the text with jansson, which gives the real answer or the real
 * error. Declining is always safe, so every rule here leans that way.
 */
#include "util/json_small.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- the tokens (json_small.h: shared with other shape scanners) ---- */

void json_small_ws(struct json_small_cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t'))
        c->p++;
}

bool json_small_string(struct json_small_cur *c, const char **s, size_t *n)
{
    if (c->p >= c->end || *c->p != '"')
        return false;
    const char *p = c->p + 1;
    const char *start = p;
    while (p < c->end) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"') {
            *s = start;
            *n = (size_t)(p - start);
            c->p = p + 1;
            return true;
        }
        if (ch < 0x20 || ch > 0x7e || ch == '\\')
            return false; /* control byte, escape or non-ASCII: jansson's */
        p++;
    }
    return false;
}

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

bool json_small_int(struct json_small_cur *c, int64_t *out)
{
    const char *p = c->p;
    bool neg = false;
    if (p < c->end && *p == '-') {
        neg = true;
        p++;
    }
    if (p >= c->end || !is_digit(*p))
        return false;
    if (*p == '0') {
        p++;
        if (neg)
            return false; /* "-0" */
        if (p < c->end && (is_digit(*p) || *p == '.' || *p == 'e' || *p == 'E'))
            return false;
        c->p = p;
        *out = 0;
        return true;
    }
    int64_t v = 0;
    int digits = 0;
    while (p < c->end && is_digit(*p)) {
        if (++digits > 18)
            return false;
        v = v * 10 + (*p - '0');
        p++;
    }
    if (p < c->end && (*p == '.' || *p == 'e' || *p == 'E'))
        return false;
    c->p = p;
    *out = neg ? -v : v;
    return true;
}

bool json_small_punct(struct json_small_cur *c, char ch)
{
    json_small_ws(c);
    if (c->p >= c->end || *c->p != ch)
        return false;
    c->p++;
    return true;
}

/* ---- the tree ---- */

static json_t *scan_integer(struct json_small_cur *c)
{
    int64_t v;
    return json_small_int(c, &v) ? json_integer(v) : NULL;
}

static bool literal(struct json_small_cur *c, const char *word, size_t n)
{
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
        return false;
    c->p += n;
    return true;
}

static json_t *value(struct json_small_cur *c, int depth);

static json_t *object(struct json_small_cur *c, int depth)
{
    json_t *obj = json_object();
    if (!obj)
        return NULL;
    c->p++; /* '{' */
    json_small_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return obj;
    }
    for (;;) {
        const char *k;
        size_t kn;
        if (c->p >= c->end || *c->p != '"' || !json_small_string(c, &k, &kn))
            break;
        json_small_ws(c);
        if (c->p >= c->end || *c->p != ':')
            break;
        c->p++;
        json_t *v = value(c, depth);
        if (!v)
            break;
        /* a key twice: jansson refuses it (JSON_REJECT_DUPLICATES) */
        if (json_object_getn(obj, k, kn) || json_object_setn_new_nocheck(obj, k, kn, v) != 0) {
            json_decref(v);
            break;
        }
        json_small_ws(c);
        if (c->p >= c->end)
            break;
        if (*c->p == '}') {
            c->p++;
            return obj;
        }
        if (*c->p != ',')
            break;
        c->p++;
        json_small_ws(c);
    }
    json_decref(obj);
    return NULL;
}

static json_t *array(struct json_small_cur *c, int depth)
{
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    c->p++; /* '[' */
    json_small_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        return arr;
    }
    for (;;) {
        json_t *v = value(c, depth);
        if (!v || json_array_append_new(arr, v) != 0)
            break;
        json_small_ws(c);
        if (c->p >= c->end)
            break;
        if (*c->p == ']') {
            c->p++;
            return arr;
        }
        if (*c->p != ',')
            break;
        c->p++;
    }
    json_decref(arr);
    return NULL;
}

/* One value after optional whitespace; `depth` containers enclose it. */
static json_t *value(struct json_small_cur *c, int depth)
{
    json_small_ws(c);
    if (c->p >= c->end)
        return NULL;
    switch (*c->p) {
    case '{':
        return depth < JSON_SMALL_MAX_DEPTH ? object(c, depth + 1) : NULL;
    case '[':
        return depth < JSON_SMALL_MAX_DEPTH ? array(c, depth + 1) : NULL;
    case '"': {
        const char *s;
        size_t n;
        return json_small_string(c, &s, &n) ? json_stringn_nocheck(s, n) : NULL;
    }
    case 't': return literal(c, "true", 4) ? json_true() : NULL;
    case 'f': return literal(c, "false", 5) ? json_false() : NULL;
    case 'n': return literal(c, "null", 4) ? json_null() : NULL;
    default: return *c->p == '-' || is_digit(*c->p) ? scan_integer(c) : NULL;
    }
}

json_t *json_small_load(const char *text, size_t len)
{
    struct json_small_cur c = {text, text + len};
    json_small_ws(&c);
    if (c.p >= c.end || *c.p != '{')
        return NULL;
    json_t *root = value(&c, 0);
    if (!root)
        return NULL;
    json_small_ws(&c);
    if (c.p != c.end) { /* something after the object: jansson's to judge */
        json_decref(root);
        return NULL;
    }
    return root;
}
