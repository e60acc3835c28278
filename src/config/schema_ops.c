/*
 * What the configuration layer does with the schema table (schema.c): read a
 * table of keys into a struct, apply defaults, and free, copy and compare the
 * owned fields. Nothing here names a key: every key-specific behaviour is a
 * row, a check or a rule in schema.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_internal.h"

_Static_assert(sizeof(enum cfg_source_kind) == sizeof(int), "enum fields are read as int");

bool cfg_key_in_dataset(const struct cfg_key *k)
{
    return strncmp(k->block, "dataset", 7) == 0 && (k->block[7] == '\0' || k->block[7] == '.');
}

void cfg_key_path(const struct cfg_key *k, char *out, size_t cap)
{
    if (k->block[0])
        snprintf(out, cap, "%s.%s", k->block, k->name ? k->name : "");
    else
        snprintf(out, cap, "%s", k->name ? k->name : "");
}

static void *field_of(void *base, const struct cfg_key *k)
{
    return (char *)base + k->off;
}

static const void *cfield_of(const void *base, const struct cfg_key *k)
{
    return (const char *)base + k->off;
}

static bool owns_memory(const struct cfg_key *k)
{
    return k->type == CFG_T_STR || k->type == CFG_T_PATH || k->type == CFG_T_STRVEC;
}

/* ---------------------------------------------------------------- reading */

static bool read_datasets(const struct cfg_blk *root, void *base)
{
    struct vt_config *cfg = base;
    if (!cfg_read_dataset_array(root, true, &cfg->datasets, &cfg->n_datasets))
        return false;
    for (size_t i = 0; i < cfg->n_datasets; i++)
        if (config_dataset_resolve_paths(&cfg->datasets[i], cfg->dir) < 0)
            return cfg_fail(root, "dataset", 0, VT_ERR_OUT_OF_MEMORY, "out of memory");
    return true;
}

static bool read_key(const struct cfg_blk *b, const struct cfg_key *k, void *base)
{
    void *f = field_of(base, k);
    switch (k->type) {
    case CFG_T_BOOL:
        return cfg_bool(b, k->name, f);
    case CFG_T_INT:
        if (k->size == sizeof(int))
            return cfg_int32(b, k->name, (int)k->min, (int)k->max, f);
        return cfg_int(b, k->name, k->min, k->max, f);
    case CFG_T_STR:
        if (k->names) {
            int idx = -1;
            if (!cfg_enum(b, k->name, k->names, &idx))
                return false;
            if (idx >= 0 && cfg_set_str(f, k->names[idx]) < 0)
                return cfg_fail(b, k->name, 0, VT_ERR_OUT_OF_MEMORY, "out of memory");
            return true;
        }
        return cfg_str(b, k->name, k->flags & CFG_NONEMPTY, f);
    case CFG_T_PATH:
        return cfg_path(b, k->name, f);
    case CFG_T_ENUM:
        return cfg_enum(b, k->name, k->names, f);
    case CFG_T_STRVEC: {
        struct strvec *v = f;
        if (!cfg_strvec(b, k->name, v))
            return false;
        for (size_t i = 0; (k->flags & CFG_PATHS) && cfg_has(b, k->name) && i < v->len; i++) {
            char *abs = cfg_resolve_against(b->cx->dir, v->items[i]);
            if (!abs)
                return cfg_fail(b, k->name, 0, VT_ERR_OUT_OF_MEMORY, "out of memory");
            free(v->items[i]);
            v->items[i] = abs;
        }
        return true;
    }
    case CFG_T_DURATION:
        return cfg_duration(b, k->name, k->min, f);
    default:
        return true;
    }
}

bool cfg_read_block(const struct cfg_blk *b, const char *block, void *base)
{
    /* The keys of this table, for unknown-key detection and suggestions. */
    const char *keys[64];
    size_t nk = 0;
    for (size_t i = 0; i < cfg_schema_len; i++)
        if (cfg_schema[i].name && strcmp(cfg_schema[i].block, block) == 0 && nk + 1 < 64)
            keys[nk++] = cfg_schema[i].name;
    keys[nk] = NULL;
    if (!cfg_check_keys(b, keys))
        return false;
    for (size_t i = 0; i < cfg_schema_len; i++) {
        const struct cfg_key *k = &cfg_schema[i];
        if (strcmp(k->block, block) != 0)
            continue;
        switch (k->type) {
        case CFG_T_RULE:
            if (!k->rule(b, base))
                return false;
            break;
        case CFG_T_DATASETS:
            if (!read_datasets(b, base))
                return false;
            break;
        case CFG_T_TABLE: {
            struct cfg_blk sub;
            if (!cfg_sub(b, k->name, &sub))
                return false;
            if ((k->flags & CFG_SETS) && sub.t)
                *(bool *)field_of(base, k) = true;
            char path[128];
            cfg_key_path(k, path, sizeof path);
            if (!cfg_read_block(&sub, path, base))
                return false;
            break;
        }
        default:
            if (!read_key(b, k, base))
                return false;
            if (k->check && cfg_has(b, k->name) && !k->check(b, k, field_of(base, k)))
                return false;
        }
    }
    return true;
}

/* ---------------------------------------------------------------- defaults */

/* Defaults are TOML text written by us ("8080", "\"/docs\"", "[\"RS256\"]");
 * this reads exactly the forms the table uses. */
static char *unquote(const char *s)
{
    size_t n = strlen(s);
    if (n >= 2 && s[0] == '"' && s[n - 1] == '"')
        return strndup(s + 1, n - 2);
    return strdup(s);
}

static int parse_list(const char *s, struct strvec *out)
{
    struct strvec v = {0};
    for (const char *p = strchr(s, '"'); p; p = strchr(p, '"')) {
        const char *end = strchr(p + 1, '"');
        if (!end)
            break;
        char *item = strndup(p + 1, (size_t)(end - p - 1));
        if (!item || strvec_push(&v, item) < 0) {
            free(item);
            strvec_free(&v);
            return -1;
        }
        free(item);
        p = end + 1;
    }
    strvec_free(out);
    *out = v;
    return 0;
}

static int apply_default(const struct cfg_key *k, void *base, const char *dir)
{
    void *f = field_of(base, k);
    const char *d = k->def;
    switch (k->type) {
    case CFG_T_BOOL:
        *(bool *)f = strcmp(d, "true") == 0;
        return 0;
    case CFG_T_INT:
        if (k->size == sizeof(int))
            *(int *)f = (int)strtol(d, NULL, 10);
        else
            *(int64_t *)f = strtoll(d, NULL, 10);
        return 0;
    case CFG_T_STR:
    case CFG_T_PATH: {
        char *s = unquote(d);
        if (!s)
            return -1;
        if (k->type == CFG_T_PATH) {
            char *abs = cfg_resolve_against(dir, s);
            free(s);
            if (!(s = abs))
                return -1;
        }
        free(*(char **)f);
        *(char **)f = s;
        return 0;
    }
    case CFG_T_ENUM: {
        char *s = unquote(d);
        if (!s)
            return -1;
        for (int i = 0; k->names[i]; i++)
            if (strcmp(k->names[i], s) == 0)
                *(int *)f = i;
        free(s);
        return 0;
    }
    case CFG_T_STRVEC:
        return parse_list(d, f);
    case CFG_T_DURATION: {
        char *s = unquote(d);
        if (!s)
            return -1;
        *(int64_t *)f = config_parse_duration_ms(s);
        free(s);
        return 0;
    }
    default:
        return 0;
    }
}

int cfg_apply_defaults(bool dataset, void *base, const char *dir)
{
    int rc = 0;
    for (size_t i = 0; i < cfg_schema_len; i++) {
        const struct cfg_key *k = &cfg_schema[i];
        if (k->def && cfg_key_in_dataset(k) == dataset && apply_default(k, base, dir) < 0)
            rc = -1;
    }
    return rc;
}

/* ------------------------------------------------------- free, copy, equal */

void cfg_free_fields(bool dataset, void *base)
{
    for (size_t i = 0; i < cfg_schema_len; i++) {
        const struct cfg_key *k = &cfg_schema[i];
        if (!owns_memory(k) || cfg_key_in_dataset(k) != dataset)
            continue;
        void *f = field_of(base, k);
        if (k->type == CFG_T_STRVEC) {
            strvec_free(f);
        } else {
            free(*(char **)f);
            *(char **)f = NULL;
        }
    }
}

int cfg_copy_fields(bool dataset, void *dst, const void *src)
{
    /* First every owned pointer of dst is cleared (dst is a shallow copy of
     * src), so a failure half-way can free dst safely. */
    for (size_t i = 0; i < cfg_schema_len; i++) {
        const struct cfg_key *k = &cfg_schema[i];
        if (owns_memory(k) && cfg_key_in_dataset(k) == dataset)
            memset(field_of(dst, k), 0, k->size);
    }
    for (size_t i = 0; i < cfg_schema_len; i++) {
        const struct cfg_key *k = &cfg_schema[i];
        if (!owns_memory(k) || cfg_key_in_dataset(k) != dataset)
            continue;
        int rc = 0;
        if (k->type == CFG_T_STRVEC) {
            rc = strvec_copy(field_of(dst, k), cfield_of(src, k));
        } else {
            const char *s = *(char *const *)cfield_of(src, k);
            rc = s && !(*(char **)field_of(dst, k) = strdup(s)) ? -1 : 0;
        }
        if (rc < 0) {
            cfg_free_fields(dataset, dst);
            return -1;
        }
    }
    return 0;
}

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

bool cfg_equal_fields(bool dataset, const void *a, const void *b)
{
    for (size_t i = 0; i < cfg_schema_len; i++) {
        const struct cfg_key *k = &cfg_schema[i];
        if (cfg_key_in_dataset(k) != dataset || !k->name)
            continue;
        const void *fa = cfield_of(a, k), *fb = cfield_of(b, k);
        bool eq = true;
        switch (k->type) {
        case CFG_T_TABLE:
            eq = !(k->flags & CFG_SETS) || *(const bool *)fa == *(const bool *)fb;
            break;
        case CFG_T_STR:
        case CFG_T_PATH:
            eq = str_eq(*(char *const *)fa, *(char *const *)fb);
            break;
        case CFG_T_STRVEC:
            eq = strvec_equal(fa, fb);
            break;
        case CFG_T_BOOL:
        case CFG_T_INT:
        case CFG_T_ENUM:
        case CFG_T_DURATION:
            eq = memcmp(fa, fb, k->size) == 0;
            break;
        default:
            break;
        }
        if (!eq)
            return false;
    }
    return true;
}
