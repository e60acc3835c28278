/*
 * Dataset blocks: the [[dataset]] tables of a config file, the JSON body of
 * POST /api/v1/datasets, and the TOML block written back by persist.
 *
 * One reader (cfg_read_dataset, driven by the "dataset" rows of the schema
 * table) serves the file and the JSON paths, so a dataset is accepted or
 * refused by the same rules whichever way it arrives. config_dataset_to_toml()
 * writes every field that differs from its default so the block parses back
 * to an equal struct (config_dataset_equal).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_internal.h"
#include "util/limits.h"
#include "util/strbuf.h"

/* ---------------------------------------------------------------- lifecycle */

void config_dataset_defaults(struct vt_dataset_config *ds)
{
    memset(ds, 0, sizeof *ds);
    cfg_apply_defaults(true, ds, NULL); /* no dataset default allocates */
}

void config_dataset_free(struct vt_dataset_config *ds)
{
    if (!ds)
        return;
    cfg_free_fields(true, ds);
    memset(ds, 0, sizeof *ds);
}

int config_dataset_copy(struct vt_dataset_config *dst, const struct vt_dataset_config *src)
{
    *dst = *src; /* scalars; every owned field is replaced by a copy */
    if (cfg_copy_fields(true, dst, src) < 0) {
        memset(dst, 0, sizeof *dst);
        return -1;
    }
    return 0;
}

bool config_dataset_equal(const struct vt_dataset_config *a, const struct vt_dataset_config *b)
{
    return cfg_equal_fields(true, a, b);
}

/* ---------------------------------------------------------------- names */

bool config_valid_dataset_name(const char *name, const char **out_reason)
{
    const char *reason = NULL;
    size_t len = name ? strlen(name) : 0;
    if (len == 0)
        reason = "must not be empty";
    else if (len > VT_MAX_DATASET_NAME_BYTES)
        reason = "is too long (at most 128 bytes)";
    else if (strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != len)
        reason = "may only contain the characters A-Z a-z 0-9 _ . -";
    else if (strcmp(name, "reload-all") == 0)
        reason = "is reserved"; /* each reason follows "it": "it is reserved" */
    else if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        reason = "would read as a step of a URL path";
    if (out_reason)
        *out_reason = reason;
    return reason == NULL;
}

/* ---------------------------------------------------------------- reading */

bool cfg_read_dataset(const struct cfg_blk *b, struct vt_dataset_config *ds)
{
    return cfg_read_block(b, "dataset", ds);
}

/* ---------------------------------------------------------------- arrays */

struct name_ref {
    const char *name;
    size_t idx;
};

static int cmp_name_ref(const void *a, const void *b)
{
    return strcmp(((const struct name_ref *)a)->name, ((const struct name_ref *)b)->name);
}

static int cmp_name_ref_ci(const void *a, const void *b)
{
    const struct name_ref *x = a, *y = b;
    int c = strcasecmp(x->name, y->name);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static long find_name(const struct name_ref *refs, size_t n, const char *name)
{
    struct name_ref key = {name, 0};
    const struct name_ref *r = bsearch(&key, refs, n, sizeof *refs, cmp_name_ref);
    return r ? (long)r->idx : -1;
}

/* Kahn's algorithm over depends_on; on a cycle, walks it from a left-over node
 * to name every dataset on it. */
static bool check_cycles(const struct cfg_blk *root, struct vt_dataset_config *ds, size_t n,
                         const struct name_ref *refs)
{
    size_t *pending = calloc(n ? n : 1, sizeof *pending); /* unbuilt upstreams per dataset */
    size_t *queue = calloc(n ? n : 1, sizeof *queue);
    bool ok = true;
    if (!pending || !queue) {
        ok = cfg_fail(root, "dataset", 0, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    size_t qh = 0, qt = 0;
    for (size_t i = 0; i < n; i++) {
        pending[i] = ds[i].depends_on.len;
        if (!pending[i])
            queue[qt++] = i;
    }
    /* Downstream edges are found by scanning: datasets are few, files small. */
    while (qh < qt) {
        size_t done = queue[qh++];
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < ds[i].depends_on.len; k++)
                if (strcmp(ds[i].depends_on.items[k], ds[done].name) == 0 && --pending[i] == 0)
                    queue[qt++] = i;
    }
    if (qt == n)
        goto out;
    size_t start = 0;
    while (pending[start] == 0)
        start++;
    /* Follow unbuilt upstreams until one repeats: that stretch is a cycle. */
    size_t *seen_at = calloc(n, sizeof *seen_at);
    size_t *walk = calloc(n + 1, sizeof *walk);
    if (!seen_at || !walk) {
        free(seen_at);
        free(walk);
        ok = cfg_fail(root, "dataset", 0, VT_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    size_t len = 0, cur = start;
    while (!seen_at[cur]) {
        walk[len++] = cur;
        seen_at[cur] = len;
        for (size_t k = 0; k < ds[cur].depends_on.len; k++) {
            long up = find_name(refs, n, ds[cur].depends_on.items[k]);
            if (up >= 0 && pending[up]) {
                cur = (size_t)up;
                break;
            }
        }
    }
    struct strbuf sb;
    sb_init(&sb, 400);
    for (size_t i = seen_at[cur] - 1; i < len; i++)
        sb_addf(&sb, "%s -> ", ds[walk[i]].name);
    sb_adds(&sb, ds[cur].name);
    struct cfg_blk b;
    cfg_root(root->cx, NULL, "", ds[cur].line, &b);
    snprintf(b.path, sizeof b.path, "dataset[%zu]", (size_t)(&ds[cur] - ds));
    ok = cfg_fail(&b, "depends_on", ds[cur].line, VT_ERR_INVALID_CONFIG, "dependency cycle: %s%s",
                  sb.buf ? sb.buf : "", sb.overflow ? "..." : "");
    sb_release(&sb);
    free(seen_at);
    free(walk);
out:
    free(pending);
    free(queue);
    return ok;
}

bool cfg_read_dataset_array(const struct cfg_blk *root, bool deps_in_file,
                            struct vt_dataset_config **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    const struct toml_value *arr = root->t ? toml_get(root->t, "dataset") : NULL;
    if (!arr)
        return true;
    if (arr->type != TOML_ARRAY)
        return cfg_fail(root, "dataset", 0, VT_ERR_INVALID_CONFIG,
                        "expected [[dataset]] blocks (an array of tables)");
    size_t n = arr->u.array.len;
    struct vt_dataset_config *ds = calloc(n ? n : 1, sizeof *ds);
    struct name_ref *refs = calloc(n ? n : 1, sizeof *refs);
    bool ok = ds && refs;
    if (!ok)
        cfg_fail(root, "dataset", 0, VT_ERR_OUT_OF_MEMORY, "out of memory");
    size_t read = 0;
    for (size_t i = 0; ok && i < n; i++) {
        const struct toml_value *item = arr->u.array.items[i];
        struct cfg_blk b;
        cfg_root(root->cx, NULL, "", item->line, &b);
        snprintf(b.path, sizeof b.path, "dataset[%zu]", i);
        config_dataset_defaults(&ds[i]);
        read++;
        if (item->type != TOML_TABLE) {
            ok = cfg_fail(&b, NULL, cfg_line_of(root, "dataset"), VT_ERR_INVALID_CONFIG,
                          "expected a table, got %s", toml_type_name(item->type));
            break;
        }
        b.t = item;
        ds[i].line = item->line;
        ok = cfg_read_dataset(&b, &ds[i]);
        refs[i].name = ds[i].name;
        refs[i].idx = i;
    }
    if (ok) {
        /* Names are unique ignoring case (they would collide on a
         * case-insensitive file system and in SQL clients): sorted without
         * case, equal neighbours are duplicates. */
        qsort(refs, n, sizeof *refs, cmp_name_ref_ci);
        for (size_t i = 1; ok && i < n; i++) {
            if (strcasecmp(refs[i].name, refs[i - 1].name) != 0)
                continue;
            size_t first = refs[i - 1].idx < refs[i].idx ? refs[i - 1].idx : refs[i].idx;
            size_t second = refs[i - 1].idx < refs[i].idx ? refs[i].idx : refs[i - 1].idx;
            struct cfg_blk b;
            cfg_root(root->cx, arr->u.array.items[second], "", ds[second].line, &b);
            snprintf(b.path, sizeof b.path, "dataset[%zu]", second);
            if (strcmp(ds[first].name, ds[second].name) == 0)
                ok = cfg_fail(&b, "name", 0, VT_ERR_INVALID_CONFIG,
                              "duplicate dataset name \"%s\" (also dataset[%zu] at line %d)",
                              ds[second].name, first, ds[first].line);
            else
                ok = cfg_fail(&b, "name", 0, VT_ERR_INVALID_CONFIG,
                              "dataset name \"%s\" differs only in case from \"%s\" "
                              "(dataset[%zu] at line %d): names must be unique ignoring case",
                              ds[second].name, ds[first].name, first, ds[first].line);
        }
        qsort(refs, n, sizeof *refs, cmp_name_ref); /* exact order for find_name */
    }
    if (ok && deps_in_file) {
        for (size_t i = 0; ok && i < n; i++) {
            for (size_t k = 0; ok && k < ds[i].depends_on.len; k++) {
                if (find_name(refs, n, ds[i].depends_on.items[k]) >= 0)
                    continue;
                struct cfg_blk b;
                cfg_root(root->cx, arr->u.array.items[i], "", ds[i].line, &b);
                snprintf(b.path, sizeof b.path, "dataset[%zu]", i);
                char key[48];
                snprintf(key, sizeof key, "depends_on[%zu]", k);
                ok = cfg_fail(&b, key, cfg_line_of(&b, "depends_on"), VT_ERR_INVALID_CONFIG,
                              "\"%s\" is not a dataset of this file (config datasets may only "
                              "depend on datasets defined in the same file)",
                              ds[i].depends_on.items[k]);
            }
        }
        if (ok)
            ok = check_cycles(root, ds, n, refs);
    }
    free(refs);
    if (!ok) {
        for (size_t i = 0; ds && i < read; i++)
            config_dataset_free(&ds[i]);
        free(ds);
        return false;
    }
    *out = ds;
    *out_n = n;
    return true;
}

enum vt_err config_load_datasets_text(const char *text, size_t len, const char *display_name,
                                      struct vt_dataset_config **out, size_t *out_n,
                                      struct vt_error *err)
{
    static const char *const keys[] = {"dataset", NULL};
    *out = NULL;
    *out_n = 0;
    const char *file = display_name ? display_name : "(datasets)";
    if (len > VT_MAX_CONFIG_BYTES)
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "%s: larger than %d bytes", file,
                            VT_MAX_CONFIG_BYTES);
    char perr[256];
    struct toml_value *doc = toml_parse(text, len, perr, sizeof perr);
    if (!doc)
        return vt_error_set(err, VT_ERR_INVALID_CONFIG, "%s: %s", file, perr);
    struct cfg_ctx cx = {.file = file, .dir = NULL, .err = err};
    struct cfg_blk root;
    cfg_root(&cx, doc, "", 0, &root);
    bool ok = cfg_check_keys(&root, keys) && cfg_read_dataset_array(&root, false, out, out_n);
    toml_free(doc);
    return ok ? VT_ERR_OK : err->code;
}

enum vt_err config_dataset_from_json(const void *json_obj, struct vt_dataset_config *out,
                                     struct vt_error *err)
{
    config_dataset_defaults(out);
    struct toml_value *doc = cfg_json_to_toml(json_obj, err);
    if (!doc)
        return err->code ? err->code : VT_ERR_INVALID_CONFIG;
    struct cfg_ctx cx = {.file = NULL, .dir = NULL, .err = err};
    struct cfg_blk b;
    cfg_root(&cx, doc, "", 0, &b);
    bool ok = cfg_read_dataset(&b, out);
    toml_free(doc);
    if (!ok) {
        config_dataset_free(out);
        return err->code;
    }
    return VT_ERR_OK;
}

/* ---------------------------------------------------------------- writing */

void cfg_toml_quote(struct strbuf *sb, const char *s)
{
    sb_addc(sb, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': sb_adds(sb, "\\\""); break;
        case '\\': sb_adds(sb, "\\\\"); break;
        case '\n': sb_adds(sb, "\\n"); break;
        case '\t': sb_adds(sb, "\\t"); break;
        case '\r': sb_adds(sb, "\\r"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                sb_addf(sb, "\\u%04X", *p);
            else
                sb_addc(sb, (char)*p);
        }
    }
    sb_addc(sb, '"');
}

static void add_strvec(struct strbuf *sb, const struct strvec *v)
{
    sb_addc(sb, '[');
    for (size_t i = 0; i < v->len; i++) {
        if (i)
            sb_adds(sb, ", ");
        cfg_toml_quote(sb, v->items[i]);
    }
    sb_addc(sb, ']');
}

/* Appends the value of row k of `ds` as TOML, unless it is unset or (without
 * CFG_ALWAYS_WRITE) equal to its default; returns whether it wrote. */
static bool add_value(struct strbuf *sb, const struct cfg_key *k, const void *ds,
                      const void *defaults, const char *sep)
{
    const void *f = (const char *)ds + k->off, *d = (const char *)defaults + k->off;
    bool always = k->flags & CFG_ALWAYS_WRITE;
    switch (k->type) {
    case CFG_T_STR:
    case CFG_T_PATH: {
        const char *s = *(char *const *)f, *def = *(char *const *)d;
        if (!s || (!always && def && strcmp(s, def) == 0))
            return false;
        sb_adds(sb, sep);
        sb_addf(sb, "%s = ", k->name);
        cfg_toml_quote(sb, s);
        return true;
    }
    case CFG_T_STRVEC:
        if (!always && strvec_equal(f, d))
            return false;
        sb_adds(sb, sep);
        sb_addf(sb, "%s = ", k->name);
        add_strvec(sb, f);
        return true;
    case CFG_T_BOOL:
    case CFG_T_INT:
    case CFG_T_ENUM:
    case CFG_T_DURATION:
        if (!always && memcmp(f, d, k->size) == 0)
            return false;
        break;
    default:
        return false;
    }
    sb_adds(sb, sep);
    sb_addf(sb, "%s = ", k->name);
    if (k->type == CFG_T_BOOL) {
        sb_adds(sb, *(const bool *)f ? "true" : "false");
    } else if (k->type == CFG_T_INT) {
        sb_addf(sb, "%lld", k->size == sizeof(int) ? (long long)*(const int *)f
                                                   : (long long)*(const int64_t *)f);
    } else if (k->type == CFG_T_ENUM) {
        cfg_toml_quote(sb, k->names[*(const int *)f]);
    } else {
        char dur[64];
        config_format_duration(*(const int64_t *)f, dur);
        cfg_toml_quote(sb, dur);
    }
    return true;
}

char *config_dataset_to_toml(const struct vt_dataset_config *ds)
{
    struct vt_dataset_config defaults;
    config_dataset_defaults(&defaults);
    struct strbuf sb;
    sb_init(&sb, 0);
    sb_adds(&sb, "[[dataset]]\n");
    for (size_t i = 0; i < cfg_schema_len; i++) {
        const struct cfg_key *k = &cfg_schema[i];
        if (strcmp(k->block, "dataset") != 0 || !k->name)
            continue;
        if (k->type != CFG_T_TABLE) {
            if (add_value(&sb, k, ds, &defaults, ""))
                sb_addc(&sb, '\n');
            continue;
        }
        /* A sub-table as an inline table of its non-default fields; a table
         * whose presence means something (CFG_SETS) is written even empty. */
        char path[64];
        cfg_key_path(k, path, sizeof path);
        size_t mark = sb.len;
        sb_addf(&sb, "%s = {", k->name);
        size_t open = sb.len;
        bool any = false;
        for (size_t j = 0; j < cfg_schema_len; j++)
            if (strcmp(cfg_schema[j].block, path) == 0 &&
                add_value(&sb, &cfg_schema[j], ds, &defaults, any ? ", " : " "))
                any = true;
        bool given = (k->flags & CFG_SETS) && *(const bool *)((const char *)ds + k->off);
        if (!any && !given) {
            sb.len = mark; /* nothing to say */
            if (sb.buf)
                sb.buf[mark] = '\0';
            continue;
        }
        sb_adds(&sb, sb.len == open ? "}\n" : " }\n");
    }
    config_dataset_free(&defaults);
    if (sb.overflow) {
        sb_release(&sb);
        return NULL;
    }
    size_t n;
    return sb_detach(&sb, &n);
}
