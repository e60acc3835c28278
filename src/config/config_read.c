/*
 * Typed reading of configuration blocks (see config_internal.h).
 *
 * Every value the service is configured with passes through one of these
 * getters, so type errors, ranges and unknown keys are reported the same way
 * for the config file and for JSON request bodies: the file and line when
 * there is one, then the full dotted key, then what was expected and what was
 * found.
 */
#include "config/config_internal.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"
#include "util/text.h"

static const char *type_name(const struct cfg_blk *b, const struct toml_value *v)
{
    if (!b->cx->file) { /* JSON words for JSON bodies */
        if (v->type == TOML_TABLE)
            return "an object";
        if (v->type == TOML_FLOAT)
            return "a non-integer number";
    }
    switch (v->type) {
    case TOML_STRING: return "a string";
    case TOML_INTEGER: return "an integer";
    case TOML_FLOAT: return "a float";
    case TOML_BOOL: return "a boolean";
    case TOML_ARRAY: return "an array";
    case TOML_TABLE: return "a table";
    default: return "a date/time";
    }
}

int cfg_line_of(const struct cfg_blk *b, const char *key)
{
    const struct toml_keyval *kv = key && b->t ? toml_get_keyval(b->t, key) : NULL;
    return kv && kv->line > 0 ? kv->line : b->line;
}

bool cfg_fail(const struct cfg_blk *b, const char *key, int line, enum vt_err code,
              const char *fmt, ...)
{
    struct vt_error *err = b->cx->err;
    if (!err || err->code != VT_ERR_OK)
        return false;
    if (line <= 0)
        line = cfg_line_of(b, key);
    char k[160];
    text_show(key ? key : "", key ? strlen(key) : 0, k, sizeof k);
    char head[512];
    size_t n = 0;
    if (b->cx->file) {
        if (line > 0)
            n = (size_t)snprintf(head, sizeof head, "%s:%d: ", b->cx->file, line);
        else
            n = (size_t)snprintf(head, sizeof head, "%s: ", b->cx->file);
    }
    if (n >= sizeof head)
        n = sizeof head - 1;
    if (b->path[0] && k[0])
        snprintf(head + n, sizeof head - n, "%s.%s: ", b->path, k);
    else if (b->path[0] || k[0])
        snprintf(head + n, sizeof head - n, "%s: ", b->path[0] ? b->path : k);
    else
        head[n] = '\0';
    char msg[VT_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vt_error_set(err, code, "%s%s", head, msg);
    return false;
}

void cfg_root(struct cfg_ctx *cx, const struct toml_value *t, const char *path, int line,
              struct cfg_blk *out)
{
    out->cx = cx;
    out->t = t;
    snprintf(out->path, sizeof out->path, "%s", path ? path : "");
    out->line = line;
}

/* dst = a "." b (or b when a is empty), cut to fit: paths are built from our
 * own key names and stay short; a cut one would only shorten a message. */
static void path_join(char *dst, size_t cap, const char *a, const char *b)
{
    size_t n = 0;
    for (const char *p = a; *p && n + 1 < cap; p++)
        dst[n++] = *p;
    if (a[0] && n + 1 < cap)
        dst[n++] = '.';
    for (const char *p = b; *p && n + 1 < cap; p++)
        dst[n++] = *p;
    dst[n] = '\0';
}

bool cfg_sub(const struct cfg_blk *b, const char *key, struct cfg_blk *out)
{
    out->cx = b->cx;
    out->t = NULL;
    out->line = cfg_line_of(b, key);
    path_join(out->path, sizeof out->path, b->path, key);
    const struct toml_value *v = b->t ? toml_get(b->t, key) : NULL;
    if (!v)
        return true;
    if (v->type != TOML_TABLE)
        return cfg_fail(b, key, 0, VT_ERR_INVALID_CONFIG, "expected %s, got %s",
                        b->cx->file ? "a table" : "an object", type_name(b, v));
    out->t = v;
    if (v->line > 0)
        out->line = v->line;
    return true;
}

bool cfg_has(const struct cfg_blk *b, const char *key)
{
    return b->t && toml_get(b->t, key) != NULL;
}

/* Optimal string alignment distance (edits, with adjacent transpositions
 * counting one: "prot" is 1 away from "port"). Words are short config keys. */
static size_t osa_distance(const char *a, const char *b)
{
    enum { MAXW = 64 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= MAXW || lb >= MAXW)
        return SIZE_MAX;
    size_t d[MAXW + 1][MAXW + 1];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best)
                best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

const char *cfg_suggest(const char *word, const char *const *names)
{
    size_t wl = strlen(word);
    size_t limit = wl <= 3 ? 1 : wl <= 8 ? 2 : 3;
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; names[i]; i++) {
        size_t d = osa_distance(word, names[i]);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    if (best && best_d <= limit && best_d < wl)
        return best;
    /* A cut-short or overlong spelling ("client" for "client_id"). */
    for (size_t i = 0; wl >= 3 && names[i]; i++) {
        size_t nl = strlen(names[i]);
        if (strncmp(word, names[i], wl < nl ? wl : nl) == 0)
            return names[i];
    }
    return NULL;
}

bool cfg_check_keys(const struct cfg_blk *b, const char *const *allowed)
{
    if (!b->t)
        return true;
    for (size_t i = 0; i < b->t->u.table.len; i++) {
        const struct toml_keyval *kv = &b->t->u.table.items[i];
        bool known = false;
        for (size_t k = 0; allowed[k] && !known; k++)
            known = strlen(allowed[k]) == kv->key_len && memcmp(allowed[k], kv->key, kv->key_len) == 0;
        if (known)
            continue;
        char shown[160];
        text_show(kv->key, kv->key_len, shown, sizeof shown);
        const char *hint = memchr(kv->key, '\0', kv->key_len) ? NULL : cfg_suggest(kv->key, allowed);
        enum vt_err code = b->cx->file ? VT_ERR_INVALID_CONFIG : VT_ERR_UNKNOWN_FIELD;
        if (hint)
            return cfg_fail(b, shown, kv->line, code, "unknown key (did you mean \"%s\"?)", hint);
        return cfg_fail(b, shown, kv->line, code, "unknown key");
    }
    return true;
}

int cfg_set_str(char **dst, const char *src)
{
    char *copy = NULL;
    if (src && !(copy = strdup(src)))
        return -1;
    free(*dst);
    *dst = copy;
    return 0;
}

static bool oom(const struct cfg_blk *b, const char *key)
{
    return cfg_fail(b, key, 0, VT_ERR_OUT_OF_MEMORY, "out of memory");
}

bool cfg_str(const struct cfg_blk *b, const char *key, unsigned flags, char **out)
{
    const struct toml_value *v = b->t ? toml_get(b->t, key) : NULL;
    if (!v)
        return true;
    if (v->type != TOML_STRING)
        return cfg_fail(b, key, 0, VT_ERR_INVALID_CONFIG, "expected a string, got %s",
                        type_name(b, v));
    if (strlen(v->u.string.ptr) != v->u.string.len)
        return cfg_fail(b, key, 0, VT_ERR_INVALID_CONFIG, "must not contain NUL characters");
    if ((flags & CFG_NONEMPTY) && v->u.string.len == 0)
        return cfg_fail(b, key, 0, VT_ERR_INVALID_CONFIG, "must not be empty");
    return cfg_set_str(out, v->u.string.ptr) == 0 || oom(b, key);
}

bool cfg_bool(const struct cfg_blk *b, const char *key, bool *out)
{
    const struct toml_value *v = b->t ? toml_get(b->t, key) : NULL;
    if (!v)
        return true;
    if (v->type != TOML_BOOL)
        return cfg_fail(b, key, 0, VT_ERR_INVALID_CONFIG, "expected a boolean (true or false), got %s",
                        type_name(b, v));
    *out = v->u.boolean;
    return true;
}

bool cfg_int(const struct cfg_blk *b, const char *key, int64_t min, int64_t max, int64_t *out)
{
    const struct toml_value *v = b->t ? toml_get(b->t, key) : NULL;
    if (!v)
        return true;
    if (v->type != TOML_INTEGER)
        return cfg_fail(b, key, 0, VT_ERR_INVALID_CONFIG, "expected an integer, got %s",
                        type_name(b, v));
    int64_t x = v->u.integer;
    if (x < min || x > max) {
        if (max == INT64_MAX && min == 1)
            return cfg_fail(b, key, 0, VT_ERR_INVALID_CONFIG, "must be a positive integer, got %lld",
                            (long long)x);
        if (max == INT64_MAX)
            return cfg_fail(b, key, 0, VT_ERR_INVALID_CONFIG, "must be at least %lld, got %lld",
                            (long long)min, (long long)x);
        return cfg_fail(b, key, 0, VT_ERR_INVALID_CONFIG, "must be between %lld and %lld, got %lld",
                        (long long)min, (long long)max, (long long)x);
    }
    *out = x;
    return true;
}

bool cfg_int32(const struct cfg_blk *b, const char *key, int min, int max, int *out)
{
    int64_t x = *out;
    if (!cfg_int(b, key, min, max, &x))
        return false;
    *out = (int)x;
    return true;
}

bool cfg_strvec(const struct cfg_blk *b, const char *key, struct strvec *out)
{
    const struct toml_value *v = b->t ? toml_get(b->t, key) : NULL;
    if (!v)
        return true;
    if (v->type != TOML_ARRAY)
        return cfg_fail(b, key, 0, VT_ERR_INVALID_CONFIG, "expected an array of strings, got %s",
                        type_name(b, v));
    struct strvec tmp = {0};
    for (size_t i = 0; i < v->u.array.len; i++) {
        const struct toml_value *item = v->u.array.items[i];
        char ik[96];
        snprintf(ik, sizeof ik, "%s[%zu]", key, i);
        bool ok = true;
        if (item->type != TOML_STRING)
            ok = cfg_fail(b, ik, cfg_line_of(b, key), VT_ERR_INVALID_CONFIG,
                          "expected a string, got %s", type_name(b, item));
        else if (item->u.string.len == 0)
            ok = cfg_fail(b, ik, cfg_line_of(b, key), VT_ERR_INVALID_CONFIG, "must not be empty");
        else if (strlen(item->u.string.ptr) != item->u.string.len)
            ok = cfg_fail(b, ik, cfg_line_of(b, key), VT_ERR_INVALID_CONFIG,
                          "must not contain NUL characters");
        else if (strvec_push(&tmp, item->u.string.ptr) < 0)
            ok = oom(b, key);
        if (!ok) {
            strvec_free(&tmp);
            return false;
        }
    }
    strvec_free(out);
    *out = tmp;
    return true;
}

static void quote_list(struct strbuf *sb, const char *const *names)
{
    for (size_t i = 0; names[i]; i++)
        sb_addf(sb, "%s\"%s\"", i ? ", " : "", names[i]);
}

bool cfg_enum(const struct cfg_blk *b, const char *key, const char *const *names, int *out)
{
    const struct toml_value *v = b->t ? toml_get(b->t, key) : NULL;
    if (!v)
        return true;
    if (v->type == TOML_STRING) {
        for (int i = 0; names[i]; i++) {
            if (strlen(names[i]) == v->u.string.len && strcmp(names[i], v->u.string.ptr) == 0) {
                *out = i;
                return true;
            }
        }
    }
    struct strbuf sb;
    sb_init(&sb, 512);
    quote_list(&sb, names);
    char got[96];
    if (v->type == TOML_STRING) {
        char s[64];
        text_show(v->u.string.ptr, v->u.string.len, s, sizeof s);
        snprintf(got, sizeof got, "\"%s\"", s);
    } else {
        snprintf(got, sizeof got, "%s", type_name(b, v));
    }
    cfg_fail(b, key, 0, VT_ERR_INVALID_CONFIG, "expected one of %s, got %s", sb.buf ? sb.buf : "",
             got);
    sb_release(&sb);
    return false;
}

bool cfg_duration(const struct cfg_blk *b, const char *key, int64_t min_ms, int64_t *out_ms)
{
    char *s = NULL;
    if (!cfg_str(b, key, 0, &s))
        return false;
    if (!s)
        return true;
    int64_t ms = config_parse_duration_ms(s);
    bool ok = true;
    if (ms < 0) {
        char shown[64];
        text_show(s, strlen(s), shown, sizeof shown);
        ok = cfg_fail(b, key, 0, VT_ERR_INVALID_CONFIG,
                      "expected a duration such as \"30s\", \"5m\" or \"1h 30m\", got \"%s\"", shown);
    } else if (ms < min_ms) {
        char m[64];
        config_format_duration(min_ms, m);
        ok = min_ms == 1 ? cfg_fail(b, key, 0, VT_ERR_INVALID_CONFIG, "must be longer than 0s")
                         : cfg_fail(b, key, 0, VT_ERR_INVALID_CONFIG, "must be at least %s", m);
    } else {
        *out_ms = ms;
    }
    free(s);
    return ok;
}

char *cfg_resolve_against(const char *dir, const char *path)
{
    if (path[0] == '/' || !dir || !dir[0])
        return strdup(path);
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_add(&sb, dir, dl);
    if (!(dl == 1 && dir[0] == '/'))
        sb_addc(&sb, '/');
    sb_adds(&sb, path[0] ? path : ".");
    if (sb.overflow) {
        sb_release(&sb);
        return NULL;
    }
    size_t n;
    return sb_detach(&sb, &n);
}

bool cfg_path(const struct cfg_blk *b, const char *key, char **out)
{
    char *s = NULL;
    if (!cfg_str(b, key, CFG_NONEMPTY, &s))
        return false;
    if (!s)
        return true;
    char *abs = cfg_resolve_against(b->cx->dir, s);
    free(s);
    if (!abs)
        return oom(b, key);
    free(*out);
    *out = abs;
    return true;
}

/* ---------------------------------------------------------------- JSON */

#define JSON_CONV_MAX_DEPTH 32

static struct toml_value *conv(const json_t *j, int depth, struct strbuf *path,
                               struct vt_error *err);

static struct toml_value *conv_fail(struct toml_value *v, struct strbuf *path,
                                    struct vt_error *err, const char *msg)
{
    toml_free(v);
    vt_error_set(err, VT_ERR_INVALID_CONFIG, "%s%s%s", path->len ? path->buf : "",
                 path->len ? ": " : "", msg);
    return NULL;
}

static struct toml_value *conv(const json_t *j, int depth, struct strbuf *path,
                               struct vt_error *err)
{
    struct toml_value *v = calloc(1, sizeof *v);
    if (!v)
        return conv_fail(NULL, path, err, "out of memory");
    if (depth > JSON_CONV_MAX_DEPTH)
        return conv_fail(v, path, err, "nested too deeply");
    switch (json_typeof(j)) {
    case JSON_STRING: {
        size_t n = json_string_length(j);
        v->type = TOML_STRING;
        v->u.string.ptr = malloc(n + 1);
        if (!v->u.string.ptr)
            return conv_fail(v, path, err, "out of memory");
        memcpy(v->u.string.ptr, json_string_value(j), n);
        v->u.string.ptr[n] = '\0';
        v->u.string.len = n;
        return v;
    }
    case JSON_INTEGER:
        v->type = TOML_INTEGER;
        v->u.integer = json_integer_value(j);
        return v;
    case JSON_REAL:
        v->type = TOML_FLOAT;
        v->u.floating = json_real_value(j);
        return v;
    case JSON_TRUE:
    case JSON_FALSE:
        v->type = TOML_BOOL;
        v->u.boolean = json_is_true(j);
        return v;
    case JSON_ARRAY: {
        v->type = TOML_ARRAY;
        size_t n = json_array_size(j);
        if (n && !(v->u.array.items = calloc(n, sizeof *v->u.array.items)))
            return conv_fail(v, path, err, "out of memory");
        v->u.array.cap_ = n;
        for (size_t i = 0; i < n; i++) {
            size_t mark = path->len;
            sb_addf(path, "[%zu]", i);
            const json_t *item = json_array_get(j, i);
            if (json_is_null(item))
                return conv_fail(v, path, err, "null is not allowed in a list");
            struct toml_value *c = conv(item, depth + 1, path, err);
            if (!c) {
                toml_free(v);
                return NULL;
            }
            v->u.array.items[v->u.array.len++] = c;
            path->len = mark;
            path->buf[mark] = '\0';
        }
        return v;
    }
    case JSON_OBJECT: {
        v->type = TOML_TABLE;
        size_t n = json_object_size(j);
        if (n && !(v->u.table.items = calloc(n, sizeof *v->u.table.items)))
            return conv_fail(v, path, err, "out of memory");
        v->u.table.cap_ = n;
        const char *key;
        size_t key_len;
        json_t *item;
        json_object_keylen_foreach((json_t *)j, key, key_len, item)
        {
            if (json_is_null(item))
                continue; /* an explicit null means "not given" */
            size_t mark = path->len;
            if (mark)
                sb_addc(path, '.');
            char shown[96];
            text_show(key, key_len, shown, sizeof shown);
            sb_adds(path, shown);
            struct toml_value *c = conv(item, depth + 1, path, err);
            if (!c) {
                toml_free(v);
                return NULL;
            }
            struct toml_keyval *kv = &v->u.table.items[v->u.table.len];
            kv->key = malloc(key_len + 1);
            if (!kv->key) {
                toml_free(c);
                return conv_fail(v, path, err, "out of memory");
            }
            memcpy(kv->key, key, key_len);
            kv->key[key_len] = '\0';
            kv->key_len = key_len;
            kv->value = c;
            v->u.table.len++;
            path->len = mark;
            if (path->buf)
                path->buf[mark] = '\0';
        }
        return v;
    }
    default:
        return conv_fail(v, path, err, "unsupported JSON value");
    }
}

struct toml_value *cfg_json_to_toml(const void *json, struct vt_error *err)
{
    const json_t *j = json;
    if (!json_is_object(j)) {
        vt_error_set(err, VT_ERR_INVALID_CONFIG, "request body must be a JSON object");
        return NULL;
    }
    struct strbuf path;
    sb_init(&path, 4096);
    struct toml_value *v = conv(j, 0, &path, err);
    sb_release(&path);
    return v;
}
