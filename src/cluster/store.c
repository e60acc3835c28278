/*
 * The shared storage's documents as JSON (pure, no I/O): a generation's
 * manifest and the CURRENT pointer, written by the writer and read by
 * readers and the collector. Parsing is strict about what it needs and
 * bounded (the callers cap the bytes read).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"

int64_t cluster_ulid_ms(const char *id)
{
    static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    if (!id || strlen(id) != 26)
        return -1;
    int64_t v = 0;
    for (int i = 0; i < 10; i++) {
        const char *p = strchr(alphabet, id[i]);
        if (!p || !id[i])
            return -1;
        v = v * 32 + (p - alphabet);
    }
    return v;
}

static const char *const source_names[] = {"", "startup", "manual", "schedule", "cascade"};

static enum cat_refresh_source source_of(const char *s)
{
    for (int i = 1; s && i < 5; i++)
        if (strcmp(s, source_names[i]) == 0)
            return (enum cat_refresh_source)i;
    return CAT_REFRESH_NONE;
}

char *cluster_manifest_json(const struct cluster_manifest *m)
{
    json_t *cols = json_array(), *casts = json_array(), *files = json_array();
    for (size_t i = 0; i < m->col_names.len && i < m->col_types.len; i++)
        json_array_append_new(cols, json_pack("{s:s,s:s}", "name", m->col_names.items[i], "type",
                                              m->col_types.items[i]));
    for (size_t i = 0; i < m->cast_names.len && i < m->cast_types.len; i++)
        json_array_append_new(casts, json_pack("{s:s,s:s}", "name", m->cast_names.items[i],
                                               "type", m->cast_types.items[i]));
    json_array_append_new(files, json_pack("{s:s,s:I,s:s}", "name", m->file ? m->file : "",
                                           "size", (json_int_t)m->file_size, "sha256", m->sha256));
    json_t *o = json_pack("{s:s,s:s,s:s,s:I,s:s,s:o,s:o,s:o,s:I,s:I,s:s,s:s}", "format",
                          "vitrine-generation/1", "dataset", m->dataset, "generation_id",
                          m->generation_id, "rows", (json_int_t)m->rows, "residency",
                          m->lazy ? "lazy" : "memory", "columns", cols, "casts", casts, "files",
                          files, "published_at_us", (json_int_t)m->published_at_us, "build_ms",
                          (json_int_t)m->build_ms, "refresh_source",
                          (unsigned)m->refresh_source < 5 && m->refresh_source
                              ? source_names[m->refresh_source]
                              : "startup",
                          "writer", m->writer);
    if (!o)
        return NULL;
    json_object_set_new(o, "source_version",
                        m->source_version ? json_string(m->source_version) : json_null());
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return text;
}

static bool copy_str(json_t *o, const char *key, char *out, size_t cap, bool required)
{
    const char *v = json_string_value(json_object_get(o, key));
    if (!v || strlen(v) >= cap)
        return !required && !v;
    memcpy(out, v, strlen(v) + 1);
    return true;
}

static int push_pairs(json_t *arr, struct strvec *names, struct strvec *types)
{
    size_t i;
    json_t *it;
    json_array_foreach(arr, i, it) {
        const char *n = json_string_value(json_object_get(it, "name"));
        const char *t = json_string_value(json_object_get(it, "type"));
        if (!n || !t || strvec_push(names, n) != 0 || strvec_push(types, t) != 0)
            return -1;
    }
    return 0;
}

/* A type name as it goes into SQL (CAST(x AS <type>)): letters, digits,
 * spaces, parentheses, commas, brackets and quotes of nested types only, and
 * the parentheses and brackets outside quoted identifiers balance (never
 * closing one they did not open), every quote closed: otherwise a manifest's
 * "INTEGER) AS c, <expression> AS d, CAST(NULL AS INTEGER" would close the
 * reader's CAST and add SQL of its own. */
static bool sane_type(const char *t)
{
    if (!*t || strlen(t) >= 256 ||
        strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 (),[]_\"") !=
            strlen(t))
        return false;
    int depth = 0;
    bool quoted = false;
    char open[256];
    for (; *t; t++) {
        if (*t == '"')
            quoted = !quoted; /* "" inside a quoted identifier: closes and reopens */
        else if (quoted)
            continue;
        else if (*t == '(' || *t == '[')
            open[depth++] = *t;
        else if (*t == ')' || *t == ']')
            if (depth == 0 || open[--depth] != (*t == ')' ? '(' : '['))
                return false;
    }
    return depth == 0 && !quoted;
}

enum vt_err cluster_manifest_parse(const char *text, size_t len, struct cluster_manifest *out,
                                   struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    const char *why = NULL;
    if (!o || !json_is_object(o))
        why = "not a JSON object";
    else if (!json_string_value(json_object_get(o, "format")) ||
             strcmp(json_string_value(json_object_get(o, "format")), "vitrine-generation/1") != 0)
        why = "unknown format";
    else if (!copy_str(o, "dataset", out->dataset, sizeof out->dataset, true) ||
             !copy_str(o, "generation_id", out->generation_id, sizeof out->generation_id, true) ||
             cluster_ulid_ms(out->generation_id) < 0)
        why = "no dataset or generation_id";
    if (!why) {
        out->rows = json_integer_value(json_object_get(o, "rows"));
        const char *res = json_string_value(json_object_get(o, "residency"));
        out->lazy = res && strcmp(res, "lazy") == 0;
        out->published_at_us = json_integer_value(json_object_get(o, "published_at_us"));
        out->build_ms = json_integer_value(json_object_get(o, "build_ms"));
        out->refresh_source =
            source_of(json_string_value(json_object_get(o, "refresh_source")));
        copy_str(o, "writer", out->writer, sizeof out->writer, false);
        const char *sv = json_string_value(json_object_get(o, "source_version"));
        out->source_version = sv ? strdup(sv) : NULL;
        if (push_pairs(json_object_get(o, "columns"), &out->col_names, &out->col_types) != 0 ||
            push_pairs(json_object_get(o, "casts"), &out->cast_names, &out->cast_types) != 0)
            why = "bad columns or casts";
        for (size_t i = 0; !why && i < out->cast_types.len; i++)
            if (!sane_type(out->cast_types.items[i]))
                why = "bad cast type";
        json_t *files = json_object_get(o, "files");
        json_t *f = json_array_size(files) == 1 ? json_array_get(files, 0) : NULL;
        const char *fname = json_string_value(json_object_get(f, "name"));
        if (!why && (!fname || !*fname || strchr(fname, '/') || strstr(fname, "..")))
            why = "files: expected one file name";
        if (!why) {
            out->file = strdup(fname);
            out->file_size = json_integer_value(json_object_get(f, "size"));
            copy_str(f, "sha256", out->sha256, sizeof out->sha256, false);
        }
    }
    json_decref(o);
    if (why) {
        cluster_manifest_release(out);
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "manifest: %s", why);
    }
    return VT_ERR_OK;
}

void cluster_manifest_release(struct cluster_manifest *m)
{
    strvec_free(&m->col_names);
    strvec_free(&m->col_types);
    strvec_free(&m->cast_names);
    strvec_free(&m->cast_types);
    free(m->file);
    free(m->source_version);
    m->file = m->source_version = NULL;
}

char *cluster_current_json(const struct cluster_current *c)
{
    json_t *o = json_pack("{s:s,s:s,s:I,s:s}", "format", "vitrine-current/1", "generation_id",
                          c->generation_id, "published_at_us", (json_int_t)c->published_at_us,
                          "writer", c->writer);
    if (!o)
        return NULL;
    json_object_set_new(o, "previous", c->previous[0] ? json_string(c->previous) : json_null());
    char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return text;
}

enum vt_err cluster_current_parse(const char *text, size_t len, struct cluster_current *out,
                                  struct vt_error *err)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    bool ok = o && json_is_object(o) &&
              copy_str(o, "generation_id", out->generation_id, sizeof out->generation_id, true) &&
              cluster_ulid_ms(out->generation_id) >= 0 &&
              copy_str(o, "previous", out->previous, sizeof out->previous, false);
    if (ok) {
        out->published_at_us = json_integer_value(json_object_get(o, "published_at_us"));
        copy_str(o, "writer", out->writer, sizeof out->writer, false);
    }
    json_decref(o);
    if (!ok)
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "CURRENT: not a generation pointer");
    return VT_ERR_OK;
}
